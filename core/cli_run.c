/*
 * cli_run.c — `fsbroker run` with an embedded core (DESIGN §7): start the
 * core in this process, run CMD under bubblewrap and fsbroker-init with the
 * core supervising its file changes, then seal the backup cycle, print a
 * summary on stderr and exit with CMD's status.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backup_read.h"
#include "cli.h"
#include "config.h"
#include "landlock.h"
#include "log.h"
#include "modify_backup.h"
#include "mount_plan.h"
#include "proto_json.h"
#include "seccomp_filter.h"
#include "server.h"

/* Failures of `fsbroker run` itself, as env(1) and timeout(1) use it. */
#define EXIT_RUN 125

/* The descriptor fsbroker-init finds its end of the admin connection on. */
#define INIT_SOCKET_FD 3

#define DEFAULT_SESSION "default"

static const char usage[] =
	"usage: fsbroker run [--rules PACK] [--workspace DIR] [--session ID] [--tool-call ID]\n"
	"                    [--state-dir DIR] [--explain] -- CMD [ARG]...\n"
	"\n"
	"Run CMD in a sandbox where every file change goes through an embedded core:\n"
	"judged by the pack, backed up, audited. Then seal the backup cycle, print a\n"
	"summary on stderr and exit with CMD's status (125: fsbroker run failed).\n"
	"Defaults: the workspace is the current directory, the session \"" DEFAULT_SESSION "\",\n"
	"the tool call tc-<time>-<pid>. --explain prints the sandbox's mount plan.\n";

/* Variables kept from the environment when the pack names none (the C side
 * does not read the pack's env.pass yet): the default pack's list. */
static const char *const keep_env[] = {
	"PATH", "HOME", "LANG", "LC_ALL", "TERM", "USER", "LOGNAME", "SHELL", "TZ", "TMPDIR",
	NULL,
};

struct run {
	uv_loop_t loop;
	struct fsb_broker broker;
	struct fsb_server server;
	uv_process_t proc;
	uv_signal_t sigs[3];
	int init_sock;		/* our copy of init's end, kept until CMD is gone */
	bool exited;
	int64_t exit_status;
	int term_signal;
};

static const int forwarded[3] = { SIGINT, SIGTERM, SIGHUP };

static int __attribute__((format(printf, 1, 2))) fail(const char *fmt, ...)
{
	va_list ap;

	fputs("fsbroker run: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return EXIT_RUN;
}

static void on_closed(uv_handle_t *h)
{
	(void)h;
}

/* CMD is gone (bwrap exited, and with it the sandbox's pid namespace):
 * let go of everything so the loop ends once the supervisor's work is. */
static void on_exit_cb(uv_process_t *p, int64_t status, int term_signal)
{
	struct run *r = p->data;

	r->exited = true;
	r->exit_status = status;
	r->term_signal = term_signal;
	uv_close((uv_handle_t *)p, on_closed);
	for (int i = 0; i < 3; i++)
		uv_close((uv_handle_t *)&r->sigs[i], on_closed);
	if (r->init_sock >= 0)
		close(r->init_sock);
	r->init_sock = -1;
	fsb_server_close(&r->server);
}

/* The sandbox has its own session: a signal meant for CMD goes to bwrap,
 * whose child dies with it (--die-with-parent). */
static void on_signal(uv_signal_t *h, int signum)
{
	struct run *r = h->data;

	if (!r->exited)
		uv_process_kill(&r->proc, signum);
}

/* A program on $PATH, or "" when there is none. */
static void find_on_path(const char *name, char *out, size_t len)
{
	const char *path = getenv("PATH");
	char *copy, *dir, *save = NULL;

	out[0] = '\0';
	if (path == NULL)
		path = "/usr/bin:/bin";
	copy = strdup(path);
	if (copy == NULL)
		return;
	for (dir = strtok_r(copy, ":", &save); dir != NULL; dir = strtok_r(NULL, ":", &save)) {
		if (dir[0] != '/')
			continue;
		snprintf(out, len, "%s/%s", dir, name);
		if (access(out, X_OK) == 0)
			break;
		out[0] = '\0';
	}
	free(copy);
}

/* fsbroker-init sits next to this binary (build/ or bin/). */
static int find_init(char *out, size_t len)
{
	char exe[PATH_MAX];

	if (realpath("/proc/self/exe", exe) == NULL)
		return -errno;
	snprintf(out, len, "%s/fsbroker-init", dirname(exe));
	return access(out, X_OK) == 0 ? 0 : -errno;
}

/* The private directory of this run's scoped socket: under
 * $XDG_RUNTIME_DIR when there is one, else /tmp/fsb-<uid>/ (0700, ours). */
static int make_socket_dir(char *out, size_t len)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	char base[PATH_MAX];
	struct stat st;

	if (xdg != NULL && xdg[0] == '/' && stat(xdg, &st) == 0 && S_ISDIR(st.st_mode)) {
		snprintf(out, len, "%s/fsbroker-run-%ld", xdg, (long)getpid());
		return 0;
	}
	snprintf(base, sizeof(base), "/tmp/fsb-%u", (unsigned)getuid());
	if (mkdir(base, 0700) < 0 && errno != EEXIST)
		return -errno;
	snprintf(out, len, "%s/run-%ld", base, (long)getpid());
	return 0;
}

/* The command line, for the cycle's message. */
static void join_cmd(char **cmd, char *out, size_t len)
{
	size_t n = 0;

	out[0] = '\0';
	for (; *cmd != NULL && n + 1 < len; cmd++) {
		int w = snprintf(out + n, len - n, "%s%s", n ? " " : "", *cmd);

		if (w < 0)
			break;
		n += (size_t)w;
	}
	if (n >= len && len > 4)
		strcpy(out + len - 4, "...");
}

/* The sealed cycle's counts: paths changed and objects backed up. */
static void cycle_counts(const char *state_dir, const char *session, int number,
			 size_t *paths, size_t *objects)
{
	char store[PATH_MAX], err[256];
	struct fsb_cycle cyc;

	*paths = *objects = 0;
	if (number <= 0 || fsb_backup_store_dir(state_dir, session, store, sizeof(store)) < 0)
		return;
	memset(&cyc, 0, sizeof(cyc));
	if (fsb_cycle_load(store, (unsigned)number, &cyc, NULL, err, sizeof(err)) < 0)
		return;
	*paths = cyc.npaths;
	*objects = cyc.nobjects;
	fsb_cycle_free(&cyc);
}

static int explain(struct fsb_broker *b, const struct fsb_mount_inputs *in)
{
	struct fsb_policy_summary sum;
	struct fsb_mount_plan plan;
	char why[512], err[512];
	int ll, rc;

	memset(&sum, 0, sizeof(sum));
	if (fsb_policy_summary(b->policy, &sum, err, sizeof(err)) < 0) {
		fsb_policy_summary_free(&sum);
		return fail("%s", err);
	}
	rc = fsb_mount_plan_build(b->policy, in, &plan);
	if (rc < 0) {
		rc = fail("%s", plan.why);
		fsb_mount_plan_free(&plan);
		fsb_policy_summary_free(&sum);
		return rc;
	}
	printf("mode: embedded core; bubblewrap, fsbroker-init, seccomp supervisor; reads = %s\n",
	       sum.reads == FSB_READS_BROKER ? "broker" : "mask");
	ll = fsb_landlock_probe(why, sizeof(why));
	if (ll >= 1)
		printf("landlock: ABI %d\n", ll);
	else
		printf("landlock: missing (%s): fsbroker run refuses to start\n", why);
	if (fsb_seccomp_probe(why, sizeof(why)) < 0)
		printf("seccomp user notification: missing (%s): fsbroker run refuses to start\n",
		       why);
	else
		printf("seccomp user notification: yes\n");
	printf("pack: %s (%s)\n", fsb_policy_name(b->policy), b->cfg.pack);
	printf("bwrap options:\n");
	rc = fsb_mount_plan_explain(&plan, stdout) < 0 || fflush(stdout) != 0 ? EXIT_RUN : 0;
	fsb_mount_plan_free(&plan);
	fsb_policy_summary_free(&sum);
	return rc;
}

/* As OpenScope on the admin socket audits it (serve_admin.c). */
static void audit_scope(struct fsb_broker *b, const struct fsb_scope *scope, const char *path)
{
	cJSON *rec = cJSON_CreateObject();

	cJSON_AddStringToObject(rec, "phase", "admin-scope");
	cJSON_AddStringToObject(rec, "action", "open");
	cJSON_AddStringToObject(rec, "session", scope->session);
	cJSON_AddStringToObject(rec, "toolCallId", scope->tool_call);
	fsb_json_add_path(rec, "socket", path, false);
	cJSON_AddNumberToObject(rec, "pid", getpid());
	fsb_broker_audit(b, scope->session, rec);
}

/* The pack says reads = "broker" (set by preflight). */
static bool run_reads_broker;

/* What stops a run from starting on this machine, or 0. */
static int preflight(struct fsb_broker *b, char *bwrap, size_t bwrap_len, char *init,
		     size_t init_len)
{
	struct fsb_policy_summary sum;
	char why[512], err[512];
	int rc;

	if (fsb_landlock_probe(why, sizeof(why)) < 1)
		return fail("cannot sandbox: %s", why);
	if (fsb_seccomp_probe(why, sizeof(why)) < 0)
		return fail("cannot sandbox: %s", why);
	find_on_path("bwrap", bwrap, bwrap_len);
	if (bwrap[0] == '\0')
		return fail("bubblewrap (bwrap) is not installed or not on PATH");
	if ((rc = find_init(init, init_len)) < 0)
		return fail("cannot find fsbroker-init next to fsbroker: %s", strerror(-rc));
	memset(&sum, 0, sizeof(sum));
	rc = fsb_policy_summary(b->policy, &sum, err, sizeof(err));
	/* reads = "broker": fsbroker-init's filter routes read opens too. */
	if (rc == 0)
		run_reads_broker = sum.reads == FSB_READS_BROKER;
	else if (rc < 0)
		rc = fail("%s", err);
	fsb_policy_summary_free(&sum);
	return rc;
}

/* bwrap <plan> -- fsbroker-init … -- CMD…, into a NULL-terminated vector. */
static char **build_argv(const char *bwrap, const struct fsb_mount_plan *plan,
			 const char *tmp, char **cmd, char **strs, size_t nstrs)
{
	size_t ncmd = 0, n = 0, cap;
	char **argv;

	while (cmd[ncmd] != NULL)
		ncmd++;
	cap = 1 + plan->argc + 1 + 8 + 2 * (sizeof(keep_env) / sizeof(keep_env[0])) + 6 + 1 +
	      ncmd + 1;
	argv = calloc(cap, sizeof(*argv));
	if (argv == NULL)
		return NULL;
	argv[n++] = (char *)bwrap;
	for (size_t i = 0; i < plan->argc; i++)
		argv[n++] = plan->argv[i];
	argv[n++] = "--";
	/* Bound there by the plan (in.init_binary). */
	argv[n++] = FSB_MOUNT_INIT;
	argv[n++] = "--socket-fd";
	argv[n++] = "3";
	argv[n++] = "--writable";
	argv[n++] = "/tmp";
	if (run_reads_broker)
		argv[n++] = "--reads-broker";
	if (strcmp(tmp, "/tmp") != 0) {
		argv[n++] = "--writable";
		argv[n++] = (char *)tmp;
	}
	for (size_t i = 0; keep_env[i] != NULL; i++) {
		argv[n++] = "--keep-env";
		argv[n++] = (char *)keep_env[i];
	}
	for (size_t i = 0; i < nstrs; i++) {
		argv[n++] = "--setenv";
		argv[n++] = strs[i];
	}
	argv[n++] = "--";
	for (size_t i = 0; i < ncmd; i++)
		argv[n++] = cmd[i];
	argv[n] = NULL;
	return argv;
}

/*
 * What the pack refused this run, or holds for approval: the audit lines of
 * its tool call written since `from` (the log's size when the run began),
 * one line each on stderr for the first few. Returns the two counts.
 */
static void report_refusals(const char *state_dir, const char *session, const char *tool_call,
			    off_t from, unsigned *refused, unsigned *asked)
{
	enum { SHOWN = 10 };
	char path[PATH_MAX + 64], seen[SHOWN][PATH_MAX + 32];
	unsigned nseen = 0;
	size_t cap = 0;
	char *line = NULL;
	FILE *f;

	*refused = *asked = 0;
	snprintf(path, sizeof(path), "%s/audit/%s.jsonl", state_dir, session);
	if ((f = fopen(path, "re")) == NULL || fseeko(f, from, SEEK_SET) < 0) {
		if (f != NULL)
			fclose(f);
		return;
	}
	while (getline(&line, &cap, f) > 0) {
		cJSON *o = cJSON_Parse(line);
		const cJSON *tc = cJSON_GetObjectItemCaseSensitive(o, "toolCallId");
		const cJSON *dec = cJSON_GetObjectItemCaseSensitive(o, "decision");
		const char *op, *target, *rule, *blk;
		char key[PATH_MAX + 32];
		bool ask, dup = false;

		if (!cJSON_IsString(tc) || strcmp(tc->valuestring, tool_call) != 0 ||
		    !cJSON_IsString(dec) || (strcmp(dec->valuestring, "deny") != 0 &&
					     strcmp(dec->valuestring, "ask") != 0)) {
			cJSON_Delete(o);
			continue;
		}
		ask = strcmp(dec->valuestring, "ask") == 0;
		op = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "op"));
		target = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "normalisedPath"));
		rule = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "rule"));
		blk = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "blockId"));
		/* A host operation writes two lines for one refusal: count one. */
		snprintf(key, sizeof(key), "%s %s", op ? op : "", target ? target : "");
		for (unsigned i = 0; i < nseen && !dup; i++)
			dup = strcmp(seen[i], key) == 0;
		if (!dup) {
			if (ask)
				(*asked)++;
			else
				(*refused)++;
			if (nseen < SHOWN) {
				snprintf(seen[nseen++], sizeof(seen[0]), "%s", key);
				fprintf(stderr, "fsbroker run: %s: %s of %s (%s)%s%s\n",
					ask ? "waiting for approval" : "refused", op ? op : "?",
					target ? target : "?", rule ? rule : "?",
					blk ? ", block " : "", blk ? blk : "");
			}
		}
		cJSON_Delete(o);
	}
	free(line);
	fclose(f);
}

int fsb_cli_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rules", required_argument, NULL, 'r' },
		{ "workspace", required_argument, NULL, 'w' },
		{ "session", required_argument, NULL, 'S' },
		{ "tool-call", required_argument, NULL, 't' },
		{ "state-dir", required_argument, NULL, 'd' },
		{ "explain", no_argument, NULL, 'e' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *rules = NULL, *workspace = NULL, *session = DEFAULT_SESSION;
	const char *tool_call = NULL, *state_dir = NULL;
	char tc_buf[64], state[PATH_MAX], cwd[PATH_MAX], err[2048];
	char sockdir[PATH_MAX], scoped[PATH_MAX], admin_path[PATH_MAX + 16];
	char bwrap[PATH_MAX], init[PATH_MAX], message[1024];
	char env_sock[64 + sizeof(FSB_MOUNT_SOCKET)], env_sid[160], env_tc[160];
	char *envs[3] = { env_sock, env_sid, env_tc };
	struct fsb_broker_config cfg;
	struct fsb_mount_inputs in;
	struct fsb_mount_plan plan;
	struct fsb_scope scope;
	struct fsb_conn *conn = NULL;
	uv_process_options_t po;
	uv_stdio_container_t stdio[4];
	bool do_explain = false, sockdir_made = false, plan_built = false;
	char **cmd, **bargv = NULL;
	struct run *r;
	int c, rc = EXIT_RUN, sp[2] = { -1, -1 };
	off_t audit_from = 0;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			rules = optarg;
			break;
		case 'w':
			workspace = optarg;
			break;
		case 'S':
			session = optarg;
			break;
		case 't':
			tool_call = optarg;
			break;
		case 'd':
			state_dir = optarg;
			break;
		case 'e':
			do_explain = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		case ':':
			return fail("%s needs a value (see fsbroker run --help)", argv[optind - 1]);
		default:
			return fail("unknown option '%s' (see fsbroker run --help)",
				    argv[optind - 1]);
		}
	}
	cmd = argv + optind;
	if (optind >= argc && !do_explain)
		return fail("no command given: fsbroker run [OPTIONS] -- CMD [ARG]... "
			    "(see --help)");
	if (!fsb_id_valid(session))
		return fail("session id '%s' must be 1-128 characters of A-Z a-z 0-9 . _ : - and "
			    "not start with '.'", session);
	if (tool_call == NULL) {
		snprintf(tc_buf, sizeof(tc_buf), "tc-%lld-%ld", (long long)time(NULL),
			 (long)getpid());
		tool_call = tc_buf;
	}
	if (!fsb_id_valid(tool_call))
		return fail("tool call id '%s' must be 1-128 characters of A-Z a-z 0-9 . _ : - "
			    "and not start with '.'", tool_call);
	if (workspace == NULL) {
		if (getcwd(cwd, sizeof(cwd)) == NULL)
			return fail("cannot tell the current directory: %s", strerror(errno));
		workspace = cwd;
	}
	if (state_dir == NULL) {
		fsb_default_state_dir(state, sizeof(state));
		state_dir = state;
	}
	if (fsb_config_build(&cfg, rules, workspace, state_dir, err, sizeof(err)) < 0)
		return fail("%s", err);

	prctl(PR_SET_DUMPABLE, 0);
	signal(SIGPIPE, SIG_IGN);

	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return fail("out of memory");
	r->init_sock = -1;
	uv_loop_init(&r->loop);
	if (fsb_broker_init(&r->broker, &r->loop, &cfg, err, sizeof(err)) < 0) {
		rc = fail("%s", err);
		goto out;
	}
	memset(&in, 0, sizeof(in));
	in.workspace = r->broker.cfg.workspace;
	in.home = r->broker.cfg.home;
	in.tmp = r->broker.cfg.tmp;
	in.state_dir = r->broker.cfg.state_dir;
	in.runtime_dir = getenv("XDG_RUNTIME_DIR");
	in.uid = getuid();
	if (do_explain) {
		rc = explain(&r->broker, &in);
		goto out;
	}
	if ((rc = preflight(&r->broker, bwrap, sizeof(bwrap), init, sizeof(init))) != 0)
		goto out;
	rc = EXIT_RUN;
	/* A cycle a crash left open is sealed as recovered first. */
	if (fsb_backup_recover(&r->broker, session, err, sizeof(err)) < 0) {
		rc = fail("%s", err);
		goto out;
	}
	fsb_server_init(&r->server, &r->loop, &r->broker);
	if (make_socket_dir(sockdir, sizeof(sockdir)) < 0 ||
	    fsb_server_scope_dir(&r->server, sockdir, err, sizeof(err)) < 0) {
		rc = fail("cannot make a private socket directory: %s",
			  err[0] ? err : strerror(errno));
		goto out;
	}
	sockdir_made = true;
	/* For `fsbroker run --core` of others, as `fsbroker serve` has; another
	 * core on the same state dir keeps its own. */
	snprintf(admin_path, sizeof(admin_path), "%s/admin.sock", r->broker.cfg.state_dir);
	if (fsb_server_listen_admin(&r->server, admin_path, err, sizeof(err)) < 0)
		fsb_debug("no admin socket: %s", err);

	/* The admin connection of this run: our end served by the core, the
	 * other one fsbroker-init's, for Supervise. */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0) {
		rc = fail("socketpair: %s", strerror(errno));
		goto out;
	}
	r->init_sock = sp[1];
	rc = fsb_server_adopt_admin(&r->server, sp[0], &conn);
	sp[0] = -1;
	if (rc < 0) {
		rc = fail("cannot serve the run's admin connection: %s", strerror(-rc));
		goto out;
	}
	memset(&scope, 0, sizeof(scope));
	snprintf(scope.session, sizeof(scope.session), "%s", session);
	snprintf(scope.tool_call, sizeof(scope.tool_call), "%s", tool_call);
	if (fsb_broker_session(&r->broker, session) == NULL) {
		rc = fail("cannot open session %s (its audit log or store is in use by another "
			  "core?)", session);
		goto out;
	}
	if (fsb_server_open_scope(&r->server, conn, &scope, scoped, sizeof(scoped), err,
				  sizeof(err)) < 0) {
		rc = fail("%s", err);
		goto out;
	}
	/* Supervise on this connection supervises for the run's scope. */
	conn->scope = scope;
	audit_scope(&r->broker, &scope, scoped);

	in.scoped_socket = scoped;
	in.init_binary = init;
	plan_built = true;
	if (fsb_mount_plan_build(r->broker.policy, &in, &plan) < 0) {
		rc = fail("%s", plan.why);
		goto out;
	}
	snprintf(env_sock, sizeof(env_sock), "FSBROKER_SOCKET=%s", FSB_MOUNT_SOCKET);
	snprintf(env_sid, sizeof(env_sid), "FSBROKER_SESSION_ID=%s", session);
	snprintf(env_tc, sizeof(env_tc), "FSBROKER_TOOL_CALL_ID=%s", tool_call);
	bargv = build_argv(bwrap, &plan, r->broker.cfg.tmp, cmd, envs, 3);
	if (bargv == NULL) {
		rc = fail("out of memory");
		goto out;
	}

	memset(&po, 0, sizeof(po));
	memset(stdio, 0, sizeof(stdio));
	for (int i = 0; i < 3; i++) {
		stdio[i].flags = UV_INHERIT_FD;
		stdio[i].data.fd = i;
	}
	stdio[INIT_SOCKET_FD].flags = UV_INHERIT_FD;
	stdio[INIT_SOCKET_FD].data.fd = sp[1];
	po.file = bwrap;
	po.args = bargv;
	po.stdio = stdio;
	po.stdio_count = 4;
	po.exit_cb = on_exit_cb;
	r->proc.data = r;
	rc = uv_spawn(&r->loop, &r->proc, &po);
	if (rc < 0) {
		uv_close((uv_handle_t *)&r->proc, on_closed);
		rc = fail("cannot start %s: %s", bwrap, uv_strerror(rc));
		goto out;
	}
	for (int i = 0; i < 3; i++) {
		uv_signal_init(&r->loop, &r->sigs[i]);
		r->sigs[i].data = r;
		uv_signal_start(&r->sigs[i], on_signal, forwarded[i]);
	}
	fsb_debug("running session %s tool call %s with pack %s", session, tool_call,
		 fsb_policy_name(r->broker.policy));
	{
		char log[PATH_MAX + 64];
		struct stat st;

		snprintf(log, sizeof(log), "%s/audit/%s.jsonl", r->broker.cfg.state_dir, session);
		audit_from = stat(log, &st) == 0 ? st.st_size : 0;
	}
	uv_run(&r->loop, UV_RUN_DEFAULT);

	/* Everything the supervisor did is in the cycle now: seal it. */
	join_cmd(cmd, message, sizeof(message));
	rc = fsb_backup_commit(&r->broker, session, message, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "fsbroker run: cannot seal the backup cycle: %s\n", err);
	} else {
		unsigned refused, asked;
		size_t paths, objects;

		report_refusals(r->broker.cfg.state_dir, session, tool_call, audit_from, &refused,
				&asked);
		cycle_counts(r->broker.cfg.state_dir, session, rc, &paths, &objects);
		if (rc > 0)
			fprintf(stderr, "fsbroker run: cycle %d: %zu path%s changed, %zu "
				"object%s backed up; %u refused by the pack, %u waiting for "
				"approval\n"
				"fsbroker run: to undo: fsbroker backup restore --last "
				"--state-dir %s --session %s\n", rc, paths, paths == 1 ? "" : "s",
				objects, objects == 1 ? "" : "s", refused, asked,
				r->broker.cfg.state_dir, session);
		else
			fprintf(stderr, "fsbroker run: no file changed; %u refused by the pack, %u "
				"waiting for approval\n", refused, asked);
	}
	if (r->term_signal != 0)
		rc = 128 + r->term_signal;
	else if (r->exited)
		rc = (int)r->exit_status;
	else
		rc = EXIT_RUN;
out:
	if (sp[0] >= 0)
		close(sp[0]);
	if (r->init_sock >= 0)
		close(r->init_sock);
	r->init_sock = -1;
	if (r->server.loop != NULL && !r->exited) {
		fsb_server_close(&r->server);
		uv_run(&r->loop, UV_RUN_DEFAULT);
	}
	if (plan_built)
		fsb_mount_plan_free(&plan);
	free(bargv);
	if (sockdir_made)
		rmdir(sockdir);
	fsb_broker_free(&r->broker);
	if (uv_loop_close(&r->loop) != 0)
		fsb_debug("loop closed with handles still open");
	free(r);
	return rc;
}
