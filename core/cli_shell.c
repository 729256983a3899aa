/*
 * cli_shell.c — `fsbroker shell`: the brokered shell of the original
 * design on this machine. A core is embedded in this process (its libuv
 * loop, a client socket scoped to one session and tool call); the patched
 * zsh (build/clients/zsh) runs as its child with the brokered toybox's
 * shims first on PATH and FSBROKER_SOCKET, FSBROKER_SESSION_ID and
 * FSBROKER_TOOL_CALL_ID set, so its redirections, cd, glob and sourced
 * files, and the shimmed commands, ask the core. When zsh exits the backup
 * cycle is sealed and a summary printed, as `fsbroker run` does; the exit
 * status is zsh's.
 *
 * There is no sandbox: what zsh runs outside the shims (python3,
 * /usr/bin/sed) writes unasked. `fsbroker run --shell zsh` runs the same
 * shell inside the Linux sandbox instead (docs/clients.md).
 *
 * Also here: where the patched zsh and the shims are, for `fsbroker run
 * --shell zsh` (fsb_shell_clients).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "approval_files.h"
#include "cli.h"
#include "config.h"
#include "log.h"
#include "modify_backup.h"
#include "run.h"
#include "server.h"

#define DEFAULT_SESSION "default"

static const char usage[] =
	"usage: fsbroker shell [--rules PACK] [--workspace DIR] [--session ID]\n"
	"                      [--tool-call ID] [--state-dir DIR] [-- ZSH-ARGS...]\n"
	"\n"
	"Run the patched zsh (make zsh; installed in PREFIX/libexec/fsbroker/clients)\n"
	"with a core embedded in this process: its redirections, cd, globs and sourced\n"
	"files, and the brokered toybox's commands first on PATH, are judged by the\n"
	"pack, backed up and audited. There is no sandbox: other programs write\n"
	"unasked (fsbroker run --shell zsh has one). When zsh exits the backup cycle\n"
	"is sealed and a summary printed on stderr.\n"
	"\n"
	"options:\n"
	"  --rules PACK              the rule pack: a name under FSBROKER_LUA_DIR/rules\n"
	"                            or a file (default: default)\n"
	"  --workspace DIR           the project, where zsh starts (default: the current\n"
	"                            directory)\n"
	"  --session ID              the session (default: \"" DEFAULT_SESSION "\")\n"
	"  --tool-call ID            the tool call (default: sh-<time>-<pid>)\n"
	"  --state-dir DIR           backups, audit log and approvals\n"
	"                            (default: $XDG_STATE_HOME/fsbroker)\n"
	"  -h, --help                print this text\n"
	"  ZSH-ARGS                  go to zsh as given: -c 'CMD' runs one command line,\n"
	"                            -f skips the startup files\n"
	"\n"
	"exit: zsh's status; 125 when fsbroker shell itself failed, a usage error\n"
	"  included\n"
	"environment: FSBROKER_ZSH and FSBROKER_CLIENTS_BIN (another zsh and shims\n"
	"  directory), FSBROKER_LOG (error, warning, info, debug), FSBROKER_LUA_DIR,\n"
	"  TMPDIR (the pack's ${tmp}), TMPPREFIX (zsh's; default ${tmp}/zsh), HOME,\n"
	"  XDG_STATE_HOME, PATH (zsh's, after the shims)\n"
	"docs: docs/clients.md, docs/rule-packs.md\n";

#define PROG "fsbroker shell"

struct shell {
	uv_loop_t loop;
	struct fsb_broker broker;
	struct fsb_server server;
	bool server_up;
	uv_process_t proc;
	uv_signal_t sigs[4];
	bool exited;
	int64_t exit_status;
	int term_signal;
};

/* SIGINT and SIGQUIT reach zsh from the terminal itself: here they are
 * only kept from ending the core. SIGTERM and SIGHUP are passed on. */
static const int caught[4] = { SIGINT, SIGQUIT, SIGTERM, SIGHUP };

static int __attribute__((format(printf, 1, 2))) fail(const char *fmt, ...)
{
	va_list ap;

	fputs("fsbroker shell: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return FSB_EXIT_RUN;
}

static void on_closed(uv_handle_t *h)
{
	(void)h;
}

static void on_exit_cb(uv_process_t *p, int64_t status, int term_signal)
{
	struct shell *s = p->data;

	s->exited = true;
	s->exit_status = status;
	s->term_signal = term_signal;
	uv_close((uv_handle_t *)p, on_closed);
	for (int i = 0; i < 4; i++)
		uv_close((uv_handle_t *)&s->sigs[i], on_closed);
	if (s->server_up)
		fsb_server_close(&s->server);
}

static void on_signal(uv_signal_t *h, int signum)
{
	struct shell *s = h->data;

	if (!s->exited && (signum == SIGTERM || signum == SIGHUP))
		uv_process_kill(&s->proc, signum);
}

/* `name` under clients/ beside this binary (build/clients/NAME next to
 * build/fsbroker), or under libexec/fsbroker/clients/ beside bin/ once
 * installed, unless `env` names it. */
static int find_client(const char *env, const char *name, char *out, size_t len)
{
	const char *v = getenv(env);
	char exe[PATH_MAX];

	if (v != NULL && v[0] != '\0') {
		snprintf(out, len, "%s", v);
		if (realpath(v, exe) == NULL)
			return -errno;
		snprintf(out, len, "%s", exe);
		return 0;
	}
	return fsb_config_find_client(name, out, len);
}

int fsb_shell_clients(char *zsh, size_t zlen, char *bin, size_t blen, char *err, size_t errlen)
{
	int rc;

	if ((rc = find_client("FSBROKER_ZSH", "zsh", zsh, zlen)) < 0 ||
	    access(zsh, X_OK) < 0) {
		snprintf(err, errlen, "no patched zsh at %s (%s): run make zsh, or set FSBROKER_ZSH",
			 zsh, strerror(rc < 0 ? -rc : errno));
		return -1;
	}
	if ((rc = find_client("FSBROKER_CLIENTS_BIN", "bin", bin, blen)) < 0) {
		snprintf(err, errlen, "no brokered toybox shims at %s (%s): run make toybox, or "
			 "set FSBROKER_CLIENTS_BIN", bin, strerror(-rc));
		return -1;
	}
	return 0;
}

/* zsh's environment: ours, with the broker's variables, the shims first on
 * PATH and the here-documents' temp files in the pack's ${tmp}. */
static int shell_env(const char *sock, const char *session, const char *tool_call,
		     const char *bin, const char *tmp)
{
	const char *path = getenv("PATH");
	char *newpath;
	int rc = 0;

	if (asprintf(&newpath, "%s%s%s", bin, path && path[0] ? ":" : "", path ? path : "") < 0)
		return -1;
	rc |= setenv("FSBROKER_SOCKET", sock, 1);
	rc |= setenv("FSBROKER_SESSION_ID", session, 1);
	rc |= setenv("FSBROKER_TOOL_CALL_ID", tool_call, 1);
	rc |= setenv("FSBROKER_CLIENTS_BIN", bin, 1);
	/* No sandbox here: each read request is the only denyRead check, so a
	 * FSBROKER_READS inherited from a run must not turn it off. */
	rc |= unsetenv("FSBROKER_READS");
	rc |= setenv("PATH", newpath, 1);
	free(newpath);
	if (getenv("TMPPREFIX") == NULL) {
		char prefix[PATH_MAX + 8];

		snprintf(prefix, sizeof(prefix), "%s/zsh", tmp);
		rc |= setenv("TMPPREFIX", prefix, 1);
	}
	return rc;
}

static int spawn_shell(struct shell *s, char **argv, const char *cwd)
{
	uv_process_options_t po;
	uv_stdio_container_t stdio[3];
	int rc;

	memset(&po, 0, sizeof(po));
	memset(stdio, 0, sizeof(stdio));
	for (int i = 0; i < 3; i++) {
		stdio[i].flags = UV_INHERIT_FD;
		stdio[i].data.fd = i;
	}
	po.file = argv[0];
	po.args = argv;
	po.stdio = stdio;
	po.stdio_count = 3;
	po.cwd = cwd;
	po.exit_cb = on_exit_cb;
	s->proc.data = s;
	rc = uv_spawn(&s->loop, &s->proc, &po);
	if (rc < 0) {
		uv_close((uv_handle_t *)&s->proc, on_closed);
		return fail("cannot start %s: %s", argv[0], uv_strerror(rc));
	}
	for (int i = 0; i < 4; i++) {
		uv_signal_init(&s->loop, &s->sigs[i]);
		s->sigs[i].data = s;
		uv_signal_start(&s->sigs[i], on_signal, caught[i]);
	}
	return 0;
}

static off_t audit_size(const char *state_dir, const char *session)
{
	char log[PATH_MAX + 200];
	struct stat st;

	snprintf(log, sizeof(log), "%s/audit/%s.jsonl", state_dir, session);
	return stat(log, &st) == 0 ? st.st_size : 0;
}

/* The cycle's message: "fsbroker shell" and zsh's arguments. */
static void cycle_message(char **args, char *out, size_t len)
{
	size_t n = (size_t)snprintf(out, len, "fsbroker shell");

	for (; *args != NULL && n + 1 < len; args++) {
		int w = snprintf(out + n, len - n, " %s", *args);

		if (w < 0)
			break;
		n += (size_t)w;
	}
	if (n >= len && len > 4)
		strcpy(out + len - 4, "...");
}

int fsb_cli_shell(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "rules", required_argument, NULL, 'r' },
		{ "workspace", required_argument, NULL, 'w' },
		{ "session", required_argument, NULL, 'S' },
		{ "tool-call", required_argument, NULL, 't' },
		{ "state-dir", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *rules = NULL, *workspace = NULL, *session = DEFAULT_SESSION;
	const char *tool_call = NULL, *state_dir = NULL;
	char tc_buf[64], state[PATH_MAX], cwd[PATH_MAX], err[2048], message[1024];
	char zsh[PATH_MAX], bin[PATH_MAX], sockdir[PATH_MAX], sock[PATH_MAX + 16];
	struct fsb_broker_config cfg;
	struct fsb_run_summary sum;
	struct fsb_scope scope;
	struct shell *s = NULL;
	bool sockdir_made = false;
	char **zargv = NULL;
	int c, rc = FSB_EXIT_RUN, cycle;
	off_t audit_from;

	memset(&sum, 0, sizeof(sum));
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
		case 'h':
			fputs(usage, stdout);
			return 0;
		case ':':
			fprintf(stderr, PROG ": %s needs a value; see " PROG " --help\n",
				argv[optind - 1]);
			return FSB_EXIT_RUN;
		default:
			return fsb_cli_bad_option(PROG, argv, FSB_EXIT_RUN);
		}
	}
	if (!fsb_id_valid(session))
		return fail("session id '%s' must be 1-128 characters of A-Z a-z 0-9 . _ : - "
			    "and not start with '.'", session);
	if (tool_call == NULL) {
		snprintf(tc_buf, sizeof(tc_buf), "sh-%lld-%ld", (long long)time(NULL),
			 (long)getpid());
		tool_call = tc_buf;
	} else if (!fsb_id_valid(tool_call)) {
		return fail("tool call id '%s' must be 1-128 characters of A-Z a-z 0-9 . _ : - "
			    "and not start with '.'", tool_call);
	}
	if (fsb_shell_clients(zsh, sizeof(zsh), bin, sizeof(bin), err, sizeof(err)) < 0)
		return fail("%s", err);
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

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return fail("out of memory");
	uv_loop_init(&s->loop);
	if (fsb_broker_init(&s->broker, &s->loop, &cfg, err, sizeof(err)) < 0) {
		rc = fail("%s", err);
		goto out;
	}
	/* A cycle a crash left open is sealed as recovered first. */
	if (fsb_backup_recover(&s->broker, session, err, sizeof(err)) < 0) {
		rc = fail("%s", err);
		goto out;
	}
	if (fsb_broker_session(&s->broker, session) == NULL) {
		rc = fail("cannot open session %s: its audit log could not be opened (see "
			  "above)", session);
		goto out;
	}
	fsb_approvals_load(&s->broker, session);

	/* The shell's socket: scoped to its session and tool call, in a
	 * private directory of its own. */
	fsb_server_init(&s->server, &s->loop, &s->broker);
	s->server_up = true;
	if (fsb_run_socket_dir(sockdir, sizeof(sockdir)) < 0) {
		rc = fail("cannot make a private socket directory: %s", strerror(errno));
		goto out;
	}
	snprintf(sock, sizeof(sock), "%s/broker.sock", sockdir);
	memset(&scope, 0, sizeof(scope));
	snprintf(scope.session, sizeof(scope.session), "%s", session);
	snprintf(scope.tool_call, sizeof(scope.tool_call), "%s", tool_call);
	if (fsb_server_listen(&s->server, sock, &scope, err, sizeof(err)) < 0) {
		rc = fail("%s", err);
		goto out;
	}
	sockdir_made = true;

	if (shell_env(sock, session, tool_call, bin, s->broker.cfg.tmp) != 0) {
		rc = fail("cannot set zsh's environment: %s", strerror(errno));
		goto out;
	}
	if ((zargv = calloc((size_t)(argc - optind) + 2, sizeof(*zargv))) == NULL) {
		rc = fail("out of memory");
		goto out;
	}
	zargv[0] = zsh;
	for (int i = optind; i < argc; i++)
		zargv[1 + i - optind] = argv[i];

	audit_from = audit_size(s->broker.cfg.state_dir, session);
	if ((rc = spawn_shell(s, zargv, s->broker.cfg.workspace)) != 0)
		goto out;
	fsb_debug("shell for session %s tool call %s with pack %s", session, tool_call,
		  fsb_policy_name(s->broker.policy));
	uv_run(&s->loop, UV_RUN_DEFAULT);

	/* Calls still waiting for approval, for `fsbroker approve`; then
	 * everything zsh changed is in the cycle: seal it. */
	fsb_approvals_save_blocks(&s->broker, session, tool_call);
	cycle_message(argv + optind, message, sizeof(message));
	cycle = fsb_backup_commit(&s->broker, session, message, err, sizeof(err));
	if (cycle < 0)
		fprintf(stderr, "fsbroker shell: cannot seal the backup cycle: %s\n", err);
	if (s->term_signal != 0)
		rc = 128 + s->term_signal;
	else
		rc = (int)s->exit_status;
	sum.session = session;
	sum.tool_call = tool_call;
	sum.state_dir = s->broker.cfg.state_dir;
	sum.exit_status = rc;
	sum.signal = s->term_signal;
	fsb_run_summary_collect(&sum, cycle > 0 ? (unsigned)cycle : 0, audit_from);
	fsb_run_summary_print(&sum, "fsbroker shell", stderr);
out:
	fsb_run_summary_free(&sum);
	free(zargv);
	if (!s->exited) {
		if (s->server_up)
			fsb_server_close(&s->server);
		uv_run(&s->loop, UV_RUN_DEFAULT);
	}
	if (sockdir_made)
		rmdir(sockdir);
	fsb_broker_free(&s->broker);
	if (uv_loop_close(&s->loop) != 0)
		fsb_debug("loop closed with handles still open");
	free(s);
	return rc;
}
