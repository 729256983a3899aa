/*
 * cli_check.c — `fsbroker check`: the verdict a pack gives for paths, the
 * deciding rule, and what would change it (DESIGN §4.2). The decision is the
 * core's own (fsb_broker_decide), run once with nothing created or audited.
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker.h"
#include "cli.h"
#include "config.h"
#include "proto_json.h"

static const char usage[] =
	"usage: fsbroker check [--rules PACK] [--workspace DIR] [--json] [--op OP]\n"
	"                      PATH...\n"
	"\n"
	"Print the verdict the rule pack gives for OP on each PATH (allow, deny or ask),\n"
	"the rule that decided it, the real path when a symlink leads elsewhere, and\n"
	"what would change the verdict. The decision is the core's own, made once:\n"
	"nothing is created, backed up or audited. Relative paths are taken from the\n"
	"current directory.\n"
	"\n"
	"options:\n"
	"  --rules PACK              the rule pack: a name under FSBROKER_LUA_DIR/rules\n"
	"                            or a file (default: default)\n"
	"  --workspace DIR           the project the pack's ${workspace} names\n"
	"  --op OP                   read (default), write, create, delete, rename-from,\n"
	"                            rename-to, mkdir, link, symlink, chmod, chown,\n"
	"                            utimes, xattr, touch\n"
	"  --json                    one JSON array, an object per path\n"
	"  -h, --help                print this text\n"
	"\n"
	"exit: 0 allow, 1 deny, 3 ask (the strictest over all paths), 2 usage error or\n"
	"  a pack error (with its file and line or field)\n"
	"environment: FSBROKER_LOG, FSBROKER_LUA_DIR, TMPDIR (the pack's ${tmp}), HOME,\n"
	"  XDG_STATE_HOME\n"
	"docs: docs/rule-packs.md\n";

#define PROG "fsbroker check"

static int exit_for(enum fsb_decision d)
{
	return d == FSB_DENY ? 1 : d == FSB_ASK ? 3 : 0;
}

static void print_text(const struct fsb_access *a)
{
	printf("%-5s %s %s\n", fsb_decision_name(a->verdict.decision), fsb_op_name(a->op),
	       a->requested);
	printf("      rule: %s\n", a->verdict.rule);
	if (a->resolve_err == 0 && strcmp(a->res.path, a->normalised) != 0)
		printf("      real path: %s\n", a->res.path);
	if (a->verdict.reason[0])
		printf("      why: %s\n", a->verdict.reason);
	if (a->verdict.hint[0])
		printf("      to change it: %s\n", a->verdict.hint);
}

/* A pack that cannot be loaded: said on stderr, and as the error object
 * on stdout with --json. The exit status of a usage error. */
static int pack_error(const char *err, bool json)
{
	fprintf(stderr, PROG ": %s\n", err);
	if (json)
		fsb_cli_json_pack_error(err);
	return 2;
}

static cJSON *to_json(const struct fsb_access *a)
{
	cJSON *o = cJSON_CreateObject();

	fsb_json_add_path(o, "path", a->requested, false);
	fsb_json_add_path(o, "normalisedPath", a->resolve_err == 0 ? a->res.path : a->normalised,
			  false);
	cJSON_AddStringToObject(o, "op", fsb_op_name(a->op));
	cJSON_AddStringToObject(o, "decision", fsb_decision_name(a->verdict.decision));
	cJSON_AddStringToObject(o, "rule", a->verdict.rule);
	cJSON_AddStringToObject(o, "reason", a->verdict.reason);
	cJSON_AddStringToObject(o, "hint", a->verdict.hint);
	return o;
}

int fsb_cli_check(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rules", required_argument, NULL, 'r' },
		{ "workspace", required_argument, NULL, 'w' },
		{ "op", required_argument, NULL, 'o' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *rules = NULL, *workspace = NULL, *opname = "read";
	struct fsb_broker_config cfg;
	struct fsb_broker b;
	enum fsb_op op;
	bool json = false;
	int c, status = 0;
	char err[2048], state[PATH_MAX];
	cJSON *results = NULL;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			rules = optarg;
			break;
		case 'w':
			workspace = optarg;
			break;
		case 'o':
			opname = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		case ':':
			fprintf(stderr, PROG ": %s needs a value; see " PROG " --help\n",
				argv[optind - 1]);
			return 2;
		default:
			return fsb_cli_bad_option(PROG, argv, 2);
		}
	}
	if (optind == argc) {
		fprintf(stderr, PROG ": no path given; see " PROG " --help\n");
		if (json)
			fsb_cli_json_error("usage", "no path given; see " PROG " --help");
		return 2;
	}
	if (fsb_op_parse(opname, &op) < 0) {
		snprintf(err, sizeof(err), "unknown op '%s' (read, write, create, delete, "
			 "rename-from, rename-to, mkdir, link, symlink, chmod, chown, utimes, "
			 "xattr, touch)", opname);
		fprintf(stderr, PROG ": %s\n", err);
		if (json)
			fsb_cli_json_error("usage", err);
		return 2;
	}
	fsb_default_state_dir(state, sizeof(state));
	if (fsb_config_build(&cfg, rules, workspace, state, err, sizeof(err)) < 0)
		return pack_error(err, json);
	cfg.one_shot = true;
	if (fsb_broker_init(&b, NULL, &cfg, err, sizeof(err)) < 0) {
		fsb_broker_free(&b);
		return pack_error(err, json);
	}
	if (json)
		results = cJSON_CreateArray();
	for (int i = optind; i < argc; i++) {
		char abs[PATH_MAX * 2], cwd[PATH_MAX];
		struct fsb_access a;

		/* Operators may name paths relative to where they stand. */
		if (argv[i][0] != '/' && getcwd(cwd, sizeof(cwd)) != NULL)
			snprintf(abs, sizeof(abs), "%s/%s", cwd, argv[i]);
		else
			snprintf(abs, sizeof(abs), "%s", argv[i]);
		memset(&a, 0, sizeof(a));
		a.op = op;
		a.requested = abs;
		a.strategy = fsb_strategy_for_op(op);
		a.session = "check";
		a.tool_call = "";
		a.pid = getpid();
		a.uid = getuid();
		a.explain = true;
		fsb_broker_decide(&b, &a);
		if (json)
			cJSON_AddItemToArray(results, to_json(&a));
		else
			print_text(&a);
		/* deny over ask over allow */
		if (exit_for(a.verdict.decision) == 1 || (status == 0 && exit_for(a.verdict.decision) == 3))
			status = exit_for(a.verdict.decision);
	}
	if (json) {
		char *s = fsb_json_print(results, true);

		puts(s);
		free(s);
		cJSON_Delete(results);
	}
	fsb_broker_free(&b);
	return status;
}
