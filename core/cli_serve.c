/*
 * cli_serve.c — `fsbroker serve`: the core as a long-running process for an
 * agent host. Clients connect to --socket; the host speaks the control
 * protocol on stdin/stdout; SIGHUP and pack edits reload; SIGTERM, SIGINT,
 * Shutdown or EOF on stdin stop it. With --approvals inline a call of an
 * attached run that the pack answers `ask` waits for the host's Approve or
 * Deny after a `prompt` event (prompt_events.c).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"
#include "control.h"
#include "log.h"
#include "modify_backup.h"
#include "prompt_events.h"
#include "server.h"
#include "watch.h"

static const char usage[] =
	"usage: fsbroker serve --socket PATH --session ID [--rules PACK]\n"
	"                      [--state-dir DIR] [--workspace DIR]\n"
	"                      [--approvals deferred|inline] [--approval-timeout SECONDS]\n"
	"\n"
	"Run the core for an agent host: brokered clients connect to the socket PATH,\n"
	"the host speaks the control protocol (JSON lines) on stdin and stdout, and\n"
	"`fsbroker run --core STATE-DIR` attaches through the admin socket in the state\n"
	"dir. SIGHUP or an edit of the pack reloads it; SIGTERM, SIGINT, Shutdown or\n"
	"the end of stdin stop the core.\n"
	"\n"
	"options:\n"
	"  --socket PATH             the client socket (its directory is made 0700)\n"
	"  --session ID              the session backups and approvals go to\n"
	"  --rules PACK              the rule pack: a name under FSBROKER_LUA_DIR/rules\n"
	"                            or a file (default: default)\n"
	"  --state-dir DIR           backups, audit log, approvals and the admin socket\n"
	"                            (default: $XDG_STATE_HOME/fsbroker)\n"
	"  --workspace DIR           the project the pack's ${workspace} names\n"
	"  --approvals deferred|inline\n"
	"                            deferred (default): an ask is refused and recorded\n"
	"                            for `fsbroker approve`; inline: an attached run's\n"
	"                            ask waits for the host's Approve or Deny\n"
	"  --approval-timeout SECONDS  how long an inline ask waits, then denies (60)\n"
	"  --idle-exit SECONDS       stop once no client, run or host has connected\n"
	"                            for SECONDS and none is connected (a core kept\n"
	"                            for an agent host's session: fsbroker hooks)\n"
	"  --admin-shutdown          take Shutdown on the admin socket too (a host\n"
	"                            that reaches the core by its state dir)\n"
	"  -h, --help                print this text\n"
	"\n"
	"exit: 0 stopped cleanly, 1 the core failed while running, 2 usage error or a\n"
	"  pack, workspace or state dir it cannot use\n"
	"environment: FSBROKER_LOG (error, warning, info, debug), FSBROKER_LUA_DIR,\n"
	"  TMPDIR (the pack's ${tmp}), HOME, XDG_STATE_HOME, XDG_DATA_HOME (the trash),\n"
	"  FSBROKER_STAGE_TIMES=FILE (per-stage times of supervised calls, appended\n"
	"  to FILE as each run ends: docs/benchmarks.md), FSBROKER_SYNC_WAKE_UP=0 (the\n"
	"  kernel's own wake-ups for supervisors, not synchronous ones)\n"
	"docs: docs/protocol.md, docs/rule-packs.md, docs/backup-store.md\n";

#define PROG "fsbroker serve"

struct serve {
	uv_loop_t loop;
	uv_timer_t linger;	/* bounds how long stop waits for the host to read */
	bool linger_on;
	struct fsb_broker broker;
	struct fsb_server server;
	struct fsb_control control;
	bool control_up;
	struct fsb_prompt_events prompts;	/* --approvals inline */
	struct fsb_watch watch;
	uv_signal_t sigterm, sigint;
	uv_timer_t idle;	/* --idle-exit */
	uv_timer_t admin_stop;	/* Shutdown on the admin socket, once its reply is out */
	bool admin_stop_on;
	unsigned long idle_seconds, idle_seen;
	bool stopping;
};

static void on_closed(uv_handle_t *h)
{
	(void)h;
}

/* A host that stopped reading must not keep the core alive. */
static void end_linger(struct serve *s)
{
	if (!s->linger_on)
		return;
	s->linger_on = false;
	uv_close((uv_handle_t *)&s->linger, on_closed);
}

static void on_linger_done(uv_timer_t *t)
{
	struct serve *s = t->data;

	end_linger(s);
	fsb_chan_close(&s->control.chan);
}

static void stop(struct serve *s)
{
	if (s->stopping)
		return;
	s->stopping = true;
	fsb_info("shutting down");
	fsb_prompt_events_stop(&s->prompts);
	fsb_server_close(&s->server);
	fsb_watch_close(&s->watch);
	uv_close((uv_handle_t *)&s->sigterm, on_closed);
	uv_close((uv_handle_t *)&s->sigint, on_closed);
	if (s->idle_seconds > 0)
		uv_close((uv_handle_t *)&s->idle, on_closed);
	if (s->admin_stop_on) {
		s->admin_stop_on = false;
		uv_close((uv_handle_t *)&s->admin_stop, on_closed);
	}
	if (s->control_up && s->control.chan.handles_open > 0 && !s->control.chan.closing) {
		/* Let the last replies out, for a second at most. */
		fsb_chan_close_after_flush(&s->control.chan);
		uv_timer_init(&s->loop, &s->linger);
		s->linger.data = s;
		uv_timer_start(&s->linger, on_linger_done, 1000, 0);
		s->linger_on = true;
	}
}

/* Shutdown was asked, or the control channel ended. */
static void on_control_shutdown(struct fsb_control *ctl)
{
	struct serve *s = ctl->data;

	/* Nobody can answer a prompt any more. */
	fsb_prompt_events_stop(&s->prompts);
	if (s->stopping && ctl->chan.handles_open == 0)
		end_linger(s);
	stop(s);
}

static void on_stop_signal(uv_signal_t *h, int signum)
{
	(void)signum;
	stop(h->data);
}

static void on_admin_stop(uv_timer_t *t)
{
	struct serve *s = t->data;

	stop(s);
}

/* The reply to Shutdown is flushed when the line's callback returns: stop
 * on the next turn of the loop, not inside it. */
static void on_admin_shutdown(struct fsb_server *srv)
{
	struct serve *s = srv->data;

	if (s->admin_stop_on || s->stopping)
		return;
	uv_timer_init(&s->loop, &s->admin_stop);
	s->admin_stop.data = s;
	uv_timer_start(&s->admin_stop, on_admin_stop, 0, 0);
	s->admin_stop_on = true;
}

/* Idle: nothing connected now, and nothing accepted since the last tick. */
static void on_idle_tick(uv_timer_t *t)
{
	struct serve *s = t->data;

	if (s->server.nconns == 0 && s->server.accepted == s->idle_seen) {
		fsb_info("idle for %lu s: stopping", s->idle_seconds);
		stop(s);
		return;
	}
	s->idle_seen = s->server.accepted;
}

int fsb_cli_serve(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "session", required_argument, NULL, 'S' },
		{ "rules", required_argument, NULL, 'r' },
		{ "state-dir", required_argument, NULL, 'd' },
		{ "workspace", required_argument, NULL, 'w' },
		{ "approvals", required_argument, NULL, 'a' },
		{ "approval-timeout", required_argument, NULL, 't' },
		{ "idle-exit", required_argument, NULL, 'i' },
		{ "admin-shutdown", no_argument, NULL, 'A' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *socket_path = NULL, *session = NULL, *rules = NULL;
	const char *state_dir = NULL, *workspace = NULL;
	struct fsb_broker_config cfg;
	struct fsb_scope scope;
	char err[2048], state[PATH_MAX], admin[PATH_MAX + 16];
	struct serve *s;
	bool inline_approvals = false;
	unsigned long approval_timeout = 60, idle_exit = 0;
	bool admin_shutdown = false;
	char *end;
	int c, rc = 1;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			socket_path = optarg;
			break;
		case 'S':
			session = optarg;
			break;
		case 'r':
			rules = optarg;
			break;
		case 'd':
			state_dir = optarg;
			break;
		case 'w':
			workspace = optarg;
			break;
		case 'a':
			if (strcmp(optarg, "inline") != 0 && strcmp(optarg, "deferred") != 0) {
				fprintf(stderr, "fsbroker serve: --approvals is deferred or inline, "
					"not '%s'\n", optarg);
				return 2;
			}
			inline_approvals = strcmp(optarg, "inline") == 0;
			break;
		case 't':
			errno = 0;
			approval_timeout = strtoul(optarg, &end, 10);
			if (errno || *end || end == optarg || approval_timeout < 1 ||
			    approval_timeout > 86400) {
				fprintf(stderr, "fsbroker serve: --approval-timeout takes 1 to "
					"86400 seconds, not '%s'\n", optarg);
				return 2;
			}
			break;
		case 'i':
			errno = 0;
			idle_exit = strtoul(optarg, &end, 10);
			if (errno || *end || end == optarg || idle_exit < 1 || idle_exit > 604800) {
				fprintf(stderr, "fsbroker serve: --idle-exit takes 1 to 604800 "
					"seconds, not '%s'\n", optarg);
				return 2;
			}
			break;
		case 'A':
			admin_shutdown = true;
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
	if (socket_path == NULL || session == NULL || optind != argc) {
		fprintf(stderr, PROG ": %s; see " PROG " --help\n",
			optind != argc ? "takes no arguments" : "--socket and --session are needed");
		return 2;
	}
	if (!fsb_id_valid(session)) {
		fprintf(stderr, "fsbroker serve: session id '%s' must be 1-128 characters of "
			"A-Z a-z 0-9 . _ : - and not start with '.'\n", session);
		return 2;
	}
	if (state_dir == NULL) {
		fsb_default_state_dir(state, sizeof(state));
		state_dir = state;
	}
	if (fsb_config_build(&cfg, rules, workspace, state_dir, err, sizeof(err)) < 0) {
		fprintf(stderr, "fsbroker serve: %s\n", err);
		return 2;
	}

	/* Nobody, not even a process of the same user, may read the core's
	 * memory or take its fds through /proc. */
	prctl(PR_SET_DUMPABLE, 0);
	/* A client that hangs up mid-reply is an error on that connection. */
	signal(SIGPIPE, SIG_IGN);

	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return 1;
	uv_loop_init(&s->loop);
	if (fsb_broker_init(&s->broker, &s->loop, &cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "fsbroker serve: %s\n", err);
		goto out;
	}
	/* A cycle a crash left open is sealed as recovered before anything else
	 * happens: nothing backed up is lost. */
	if (fsb_backup_recover(&s->broker, session, err, sizeof(err)) < 0) {
		fprintf(stderr, "fsbroker serve: %s\n", err);
		goto out;
	}
	fsb_server_init(&s->server, &s->loop, &s->broker);
	s->server.data = s;
	if (admin_shutdown)
		s->server.on_admin_shutdown = on_admin_shutdown;
	memset(&scope, 0, sizeof(scope));
	snprintf(scope.session, sizeof(scope.session), "%s", session);
	if (fsb_server_listen(&s->server, socket_path, &scope, err, sizeof(err)) < 0) {
		fprintf(stderr, "fsbroker serve: %s\n", err);
		goto out;
	}
	/* The admin socket, for `fsbroker run` outside the sandboxes: in the
	 * state dir, which none of them sees. */
	snprintf(admin, sizeof(admin), "%s/admin.sock", s->broker.cfg.state_dir);
	if (fsb_server_listen_admin(&s->server, admin, err, sizeof(err)) < 0) {
		fsb_warn("no admin socket (%s): `fsbroker run --core` cannot attach to this core",
			 err);
		admin[0] = '\0';
	}
	s->control.on_shutdown = on_control_shutdown;
	s->control.data = s;
	rc = fsb_control_start(&s->loop, &s->control, &s->broker, session, STDIN_FILENO,
			       STDOUT_FILENO);
	if (rc < 0)
		fsb_warn("no control channel (stdin/stdout must be pipes, sockets or a "
			 "terminal: %s); stop the core with SIGTERM", uv_strerror(rc));
	s->control_up = rc == 0;
	if (inline_approvals && !s->control_up) {
		fprintf(stderr, "fsbroker serve: --approvals inline needs the control channel "
			"on stdin/stdout: nobody could answer a prompt\n");
		rc = 2;
		goto out;
	}
	if (inline_approvals) {
		rc = fsb_prompt_events_start(&s->prompts, &s->loop, &s->broker, &s->control,
					     (unsigned)approval_timeout);
		if (rc < 0) {
			fprintf(stderr, "fsbroker serve: inline approvals: %s\n", uv_strerror(rc));
			s->control_up = false;
			fsb_control_close(&s->control);
			rc = 1;
			goto out;
		}
	}
	fsb_watch_start(&s->watch, &s->loop, &s->broker);
	uv_signal_init(&s->loop, &s->sigterm);
	uv_signal_init(&s->loop, &s->sigint);
	s->sigterm.data = s->sigint.data = s;
	uv_signal_start(&s->sigterm, on_stop_signal, SIGTERM);
	uv_signal_start(&s->sigint, on_stop_signal, SIGINT);
	if (idle_exit > 0) {
		s->idle_seconds = idle_exit;
		uv_timer_init(&s->loop, &s->idle);
		s->idle.data = s;
		uv_timer_start(&s->idle, on_idle_tick, idle_exit * 1000, idle_exit * 1000);
	}

	fsb_info("serving session %s on %s with pack %s (%s)", session, socket_path,
		 fsb_policy_name(s->broker.policy), s->broker.cfg.pack);
	if (s->control_up) {
		cJSON *ev = cJSON_CreateObject();

		cJSON_AddStringToObject(ev, "event", "ready");
		cJSON_AddStringToObject(ev, "socket", socket_path);
		if (admin[0])
			cJSON_AddStringToObject(ev, "adminSocket", admin);
		cJSON_AddStringToObject(ev, "sessionId", session);
		cJSON_AddStringToObject(ev, "pack", fsb_policy_name(s->broker.policy));
		cJSON_AddNumberToObject(ev, "pid", getpid());
		cJSON_AddStringToObject(ev, "approvals", inline_approvals ? "inline" : "deferred");
		fsb_control_event(&s->control, ev);
	}
	uv_run(&s->loop, UV_RUN_DEFAULT);
	fsb_backup_commit_all(&s->broker, "sealed when the core stopped");
	rc = 0;
out:
	if (!s->stopping && s->server.loop != NULL) {
		fsb_server_close(&s->server);
		uv_run(&s->loop, UV_RUN_DEFAULT);
	}
	fsb_broker_free(&s->broker);
	if (uv_loop_close(&s->loop) != 0)
		fsb_debug("loop closed with handles still open");
	free(s);
	return rc;
}
