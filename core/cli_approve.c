/*
 * cli_approve.c — `fsbroker approve`: approve a call a run left waiting
 * (DESIGN §7.5, deferred approvals). The run's summary names the block and
 * this command; the approval goes into the session's state dir, where the
 * next core serving the session (the rerun's) finds it.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "approval_files.h"
#include "broker.h"
#include "cli.h"
#include "config.h"
#include "session_name.h"

static const char usage[] =
	"usage: fsbroker approve [--session ID | --workspace DIR] [--state-dir DIR]\n"
	"                        [--scope once|session] BLOCK-ID\n"
	"\n"
	"Approve the call a `fsbroker run` left waiting as BLOCK-ID (its summary names\n"
	"it and this command), then rerun the same command: the rerun's core finds the\n"
	"approval in the session's state dir. An approval never lifts a deny.\n"
	"\n"
	"options:\n"
	"  --session ID              the session of the run (default: the session of\n"
	"                            the workspace, as `fsbroker backup` finds it)\n"
	"  --workspace DIR           the workspace whose session it is (default: the\n"
	"                            current directory)\n"
	"  --state-dir DIR           the state dir of the run\n"
	"                            (default: $XDG_STATE_HOME/fsbroker)\n"
	"  --scope once|session      once (default): the first request of that exact op,\n"
	"                            path and file is allowed, then the approval is used\n"
	"                            up; session: every such request of the session\n"
	"  -h, --help                print this text\n"
	"\n"
	"exit: 0 approved, 1 not recorded, 2 usage error or no such session or block\n"
	"environment: HOME, XDG_STATE_HOME\n"
	"docs: docs/runtime.md (\"Approvals\"), docs/rule-packs.md\n";

#define PROG "fsbroker approve"

int fsb_cli_approve(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "session", required_argument, NULL, 'S' },
		{ "workspace", required_argument, NULL, 'w' },
		{ "state-dir", required_argument, NULL, 'd' },
		{ "scope", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *session = NULL, *state_dir = NULL, *scope = "once", *ws = ".";
	struct fsb_approval_rec rec;
	char state[PATH_MAX], err[1024], real[PATH_MAX], found[NAME_MAX + 1];
	int c, rc;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'S':
			session = optarg;
			break;
		case 'w':
			ws = optarg;
			break;
		case 'd':
			state_dir = optarg;
			break;
		case 's':
			scope = optarg;
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
	if (optind != argc - 1) {
		fprintf(stderr, PROG ": name one block id; see " PROG " --help\n");
		return 2;
	}
	if (strcmp(scope, "once") != 0 && strcmp(scope, "session") != 0) {
		fprintf(stderr, "fsbroker approve: --scope is once or session, not '%s'\n", scope);
		return 2;
	}
	if (state_dir == NULL) {
		fsb_default_state_dir(state, sizeof(state));
		state_dir = state;
	}
	/* As `fsbroker backup` finds it: the session of the workspace the
	 * command runs in, never another project's. */
	if (session == NULL) {
		if (realpath(ws, real) == NULL) {
			fprintf(stderr, "fsbroker approve: workspace %s: %s\n", ws, strerror(errno));
			return 2;
		}
		rc = fsb_session_find(state_dir, real, found, sizeof(found));
		if (rc < 0) {
			fprintf(stderr, "fsbroker approve: no session of the workspace %s under "
				"%s/sessions%s%s; name it with --session (the command the run "
				"printed does)\n", real, state_dir, rc == -ENOENT ? "" : ": ",
				rc == -ENOENT ? "" : strerror(-rc));
			return 2;
		}
		session = found;
	}
	if (!fsb_id_valid(session)) {
		fprintf(stderr, "fsbroker approve: session id '%s' must be 1-128 characters of "
			"A-Z a-z 0-9 . _ : - and not start with '.'\n", session);
		return 2;
	}
	rc = fsb_approvals_record(state_dir, session, argv[optind], scope, &rec, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "fsbroker approve: %s\n", err);
		return rc == -ENOENT || rc == -EINVAL ? 2 : 1;
	}
	printf("approved %s (%s): %s of %s (%s); rerun the command that asked\n", rec.block_id,
	       scope, fsb_op_name(rec.op), rec.path, rec.rule);
	return 0;
}
