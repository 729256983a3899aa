/*
 * cli_run.c — `fsbroker run` (DESIGN §7): run CMD under bubblewrap and
 * fsbroker-init with a core supervising its file changes — a core embedded
 * in this process, or with --core the one `fsbroker serve` runs — then say
 * what it changed and refused (run_summary.c) and exit with CMD's status.
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
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backup_read.h"
#include "cli.h"
#include "config.h"
#include "control.h"
#include "launch_record.h"
#include "landlock.h"
#include "log.h"
#include "modify_backup.h"
#include "mount_plan.h"
#include "prompt_events.h"
#include "proto_json.h"
#include "run.h"
#include "run_leftovers.h"
#include "run_mode.h"
#include "seccomp_filter.h"
#include "server.h"
#include "session_name.h"

/* The descriptor fsbroker-init finds its end of the admin connection on. */
#define INIT_SOCKET_FD 3
/* bwrap's --block-fd and --info-fd of a sandbox started before the pack
 * is loaded. */
#define BLOCK_FD 4
#define INFO_FD 5

static const char usage[] =
	"usage: fsbroker run [OPTIONS] -- CMD [ARG]...\n"
	"       fsbroker run --core STATE-DIR [--session ID] [--tool-call ID]\n"
	"                    [--summary-fd N] [--network host|none] -- CMD [ARG]...\n"
	"\n"
	"Run CMD in a sandbox (bubblewrap, Landlock, a seccomp supervisor) where every\n"
	"file change goes through a core: judged by the rule pack, backed up, audited.\n"
	"Without --core the core is embedded and the run seals its backup cycle when\n"
	"CMD ends; with --core it attaches to a running `fsbroker serve`, whose host\n"
	"commits the turn. A summary follows on stderr, naming each refusal and its rule.\n"
	"fsbroker's own lines come before CMD starts and after it ends, never among\n"
	"CMD's stderr (with --summary-fd, in the summary's diagnostics).\n"
	"\n"
	"options:\n"
	"  --rules PACK              the rule pack: a name under FSBROKER_LUA_DIR/rules\n"
	"                            or a file (default: default)\n"
	"  --workspace DIR           the project (default: the current directory)\n"
	"  --session ID              the session (default: the workspace's own, as\n"
	"                            `fsbroker backup` finds it; the core's with --core)\n"
	"  --tool-call ID            the tool call the changes belong to\n"
	"                            (default: tc-<time>-<pid>)\n"
	"  --state-dir DIR           backups, audit log and approvals\n"
	"                            (default: $XDG_STATE_HOME/fsbroker)\n"
	"  --core STATE-DIR          attach to the `fsbroker serve --state-dir STATE-DIR`\n"
	"                            running; leave out --rules, --workspace, --state-dir\n"
	"  --summary-fd N            the summary as one JSON object on fd N, not stderr\n"
	"  --control-fd N            the host's control channel (with --approvals inline)\n"
	"  --approvals deferred|inline\n"
	"                            deferred (default): a call the pack asks about fails\n"
	"                            with EACCES, the summary names `fsbroker approve`;\n"
	"                            inline: it waits for Approve or Deny on --control-fd\n"
	"  --approval-timeout SECONDS  how long an inline ask waits, then denies (60)\n"
	"  --explain                 print the sandbox's mode and mount plan and exit;\n"
	"                            CMD, if given, is not run\n"
	"  --without-landlock        accept a machine without Landlock\n"
	"  --without-namespaces      accept a machine without user namespaces (still\n"
	"                            brokered; docs/runtime-degraded.md)\n"
	"  --simulate-missing FEATURE,...\n"
	"                            behave as if userns, landlock or seccomp-notify were\n"
	"                            missing (to try the refusals)\n"
	"  --shell zsh               run CMD's words as one command line with the patched\n"
	"                            zsh, the brokered toybox's shims first on PATH\n"
	"  --network host|none       the host's network, or a namespace with only a\n"
	"                            loopback; overrides the pack's `network`\n"
	"  --scan-max-entries N      with reads = \"mask\", refuse a workspace needing a\n"
	"                            scan of more entries than N (200000)\n"
	"  -h, --help                print this text\n"
	"\n"
	"exit: CMD's status (128 + N when a signal N ended it); 125 when fsbroker run\n"
	"  itself failed, a usage error included (like env and timeout)\n"
	"environment: FSBROKER_LOG (error, warning, info, debug), FSBROKER_LUA_DIR,\n"
	"  TMPDIR (the pack's ${tmp}), HOME, XDG_STATE_HOME, XDG_RUNTIME_DIR (hidden in\n"
	"  the sandbox), PATH (finds bwrap and CMD); with --shell zsh FSBROKER_ZSH and\n"
	"  FSBROKER_CLIENTS_BIN; FSBROKER_STAGE_TIMES=FILE appends where each kind of\n"
	"  supervised call spent its time to FILE (docs/benchmarks.md);\n"
	"  FSBROKER_LAUNCH_AHEAD=0 starts the sandbox only once the pack is loaded\n"
	"  (docs/runtime.md, \"Started before the pack is loaded\");\n"
	"  FSBROKER_SYNC_WAKE_UP=0 keeps the kernel's own wake-ups for the supervisor\n"
	"docs: docs/runtime.md (every flag), docs/runtime-degraded.md,\n"
	"  docs/runtime-mount-plan.md, docs/rule-packs.md\n";

#define DEFAULT_APPROVAL_TIMEOUT 60

struct run_opts {
	const char *rules, *workspace, *session, *tool_call, *state_dir, *core_dir;
	int summary_fd, control_fd;
	bool inline_approvals;
	unsigned approval_timeout;
	bool explain;
	int network;		/* --network: enum fsb_network_mode, or -1: the pack's */
	unsigned simulate_missing;	/* enum fsb_feature bits */
	unsigned accepted;		/* --without-landlock, --without-namespaces */
	size_t scan_max_entries;	/* --scan-max-entries; 0: the plan's default */
	char **cmd;
	char **shell_cmd;	/* --shell zsh: the shell's vector, CMD at its end */
};

struct run {
	uv_loop_t loop;
	bool attached;		/* --core: no core in this process */
	struct fsb_broker broker;
	struct fsb_server server;
	bool server_up;
	uv_process_t proc;
	uv_signal_t sigs[3];
	bool sigs_up;
	int init_sock;		/* our copy of init's end, kept until CMD is gone */
	/* An embedded core: the private directory of the run's scoped socket
	 * (made when sockdir_made), and the admin connection's end it serves. */
	char sockdir[PATH_MAX];
	bool sockdir_made;
	int admin_end;
	char scoped[PATH_MAX];	/* the scoped socket CMD's clients connect to */
	/* The host's control channel (--control-fd), and the prompt events
	 * sent on it (inline approvals). */
	struct fsb_control ctl;
	bool ctl_up;
	int ctl_wfd;		/* our dup of the control fd, for writing */
	struct fsb_prompt_events prompts;
	/* A sandbox started from the launch record while the pack loads
	 * (docs/runtime.md, "Started before the pack is loaded"): it waits on
	 * bwrap's --block-fd until `go_fd` is written, or is killed. */
	int go_fd;
	int info_fd;		/* where bwrap says its child's pid */
	struct fsb_launch_record ahead_rec;	/* what it was started from */
	struct fsb_mount_plan ahead_plan;	/* ahead_rec's options only */
	char **ahead_argv;		/* its command line, without --block-fd */
	bool discarding;	/* killed: its exit is not CMD's */
	bool proc_closed;	/* r->proc may be spawned into again */
	/* fsbroker-init's --setenv values, the same for either command line. */
	char env_sock[PATH_MAX + 32], env_sid[160], env_tc[160];
	char env_home[PATH_MAX + 8], env_tmp[PATH_MAX + 8];
	char *envs[6];
	bool exited;
	bool own_group;		/* no pid namespace: CMD leads its own process group */
	int64_t exit_status;
	int term_signal;
};

static const int forwarded[3] = { SIGINT, SIGTERM, SIGHUP };

/* The last failure's sentence, for --summary-fd. */
static char last_error[1024];

static int __attribute__((format(printf, 1, 2))) fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	fprintf(stderr, "fsbroker run: %s\n", last_error);
	return FSB_EXIT_RUN;
}

static void on_closed(uv_handle_t *h)
{
	(void)h;
}

static void on_host_gone(struct fsb_control *ctl)
{
	struct run *r = ctl->data;

	fsb_prompt_events_stop(&r->prompts);
	if (r->ctl_up) {
		r->ctl_up = false;
		fsb_control_close(&r->ctl);
	}
}

static void on_proc_closed(uv_handle_t *h)
{
	struct run *r = h->data;

	r->proc_closed = true;
}

/* CMD is gone (bwrap exited, and with it the sandbox's pid namespace):
 * let go of everything so the loop ends once the supervisor's work is. */
static void on_exit_cb(uv_process_t *p, int64_t status, int term_signal)
{
	struct run *r = p->data;

	/* The sandbox started ahead and killed on its --block-fd: nothing
	 * of CMD's ever ran. */
	if (r->discarding) {
		r->discarding = false;
		uv_close((uv_handle_t *)p, on_proc_closed);
		return;
	}
	fsb_prompt_events_stop(&r->prompts);
	if (r->ctl_up) {
		r->ctl_up = false;
		fsb_control_close(&r->ctl);
	}

	/*
	 * Without a pid namespace nothing ends what CMD left behind: end its
	 * process group. A process that left the group stays under the filter,
	 * and each file change it tries fails once the core is gone.
	 */
	if (r->own_group)
		kill(-p->pid, SIGKILL);
	r->exited = true;
	r->exit_status = status;
	r->term_signal = term_signal;
	uv_close((uv_handle_t *)p, on_closed);
	for (int i = 0; r->sigs_up && i < 3; i++)
		uv_close((uv_handle_t *)&r->sigs[i], on_closed);
	if (r->init_sock >= 0 && !r->attached)
		close(r->init_sock);
	if (!r->attached)
		r->init_sock = -1;
	if (r->server_up)
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

/* The command that repeats this run, once what it waited for is approved:
 * the same session, state and workspace (or core), a new tool call. */
static char *rerun_command(const struct run_opts *o, const char *session, const char *state_dir,
			   const char *workspace)
{
	size_t len = 4096;
	char *buf;
	bool ok = true;

	for (char **c = o->cmd; *c != NULL; c++)
		len += 4 * strlen(*c) + 3;
	if ((buf = calloc(1, len)) == NULL)
		return NULL;
	ok = fsb_shell_append(buf, len, "fsbroker") && fsb_shell_append(buf, len, "run");
	if (o->core_dir != NULL) {
		ok = ok && fsb_shell_append(buf, len, "--core") &&
		     fsb_shell_append(buf, len, state_dir);
	} else {
		ok = ok && fsb_shell_append(buf, len, "--state-dir") &&
		     fsb_shell_append(buf, len, state_dir) &&
		     fsb_shell_append(buf, len, "--workspace") &&
		     fsb_shell_append(buf, len, workspace);
		if (o->rules != NULL)
			ok = ok && fsb_shell_append(buf, len, "--rules") &&
			     fsb_shell_append(buf, len, o->rules);
	}
	if (o->network >= 0)
		ok = ok && fsb_shell_append(buf, len, "--network") &&
		     fsb_shell_append(buf, len, o->network == FSB_NETWORK_NONE ? "none" : "host");
	ok = ok && fsb_shell_append(buf, len, "--session") && fsb_shell_append(buf, len, session) &&
	     fsb_shell_append(buf, len, "--");
	for (char **c = o->cmd; *c != NULL && ok; c++)
		ok = fsb_shell_append(buf, len, *c);
	if (!ok) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* The network the run gets: --network, else the pack's. `from` says which. */
static enum fsb_network_mode run_network(const struct run_opts *o,
					 const struct fsb_policy_summary *sum, const char **from)
{
	if (o->network >= 0) {
		*from = "--network";
		return (enum fsb_network_mode)o->network;
	}
	*from = "the pack's network setting";
	return sum->network;
}

static const char *network_name(enum fsb_network_mode n)
{
	return n == FSB_NETWORK_NONE ? "none" : "host";
}

/* network = "none" is a network namespace: bwrap's, so never without it. */
static int check_network(enum fsb_network_mode net, const char *from,
			 const struct fsb_run_mode *mode)
{
	if (net == FSB_NETWORK_NONE && !mode->namespaces)
		return fail("network none (%s) needs a network namespace, which a run without "
			    "namespaces does not have: use --network host to run on the host's "
			    "network, or a machine with user namespaces", from);
	return 0;
}

static int explain(struct fsb_broker *b, const struct fsb_mount_inputs *in_,
		   const struct run_opts *o)
{
	struct fsb_mount_inputs inputs = *in_, *in = &inputs;
	enum fsb_network_mode net;
	const char *net_from;
	struct fsb_policy_summary sum;
	struct fsb_mount_plan plan;
	struct fsb_run_mode mode;
	char text[2048], err[1024];
	int rc;

	memset(&sum, 0, sizeof(sum));
	if (fsb_policy_summary(b->policy, &sum, err, sizeof(err)) < 0) {
		fsb_policy_summary_free(&sum);
		return fail("%s", err);
	}
	if (fsb_run_mode_choose(&mode, o->simulate_missing, o->accepted,
				sum.reads == FSB_READS_BROKER, err, sizeof(err)) < 0) {
		fsb_policy_summary_free(&sum);
		return fail("%s", err);
	}
	net = run_network(o, &sum, &net_from);
	if ((rc = check_network(net, net_from, &mode)) != 0) {
		fsb_policy_summary_free(&sum);
		return rc;
	}
	in->network_none = net == FSB_NETWORK_NONE;
	memset(&plan, 0, sizeof(plan));
	if (mode.namespaces && fsb_mount_plan_build(b->policy, in, &plan) < 0) {
		rc = fail("%s", plan.why);
		fsb_mount_plan_free(&plan);
		fsb_policy_summary_free(&sum);
		return rc;
	}
	fsb_run_mode_explain(&mode, text, sizeof(text));
	fputs(text, stdout);
	printf("core: embedded\n");
	printf("pack: %s (%s)\n", fsb_policy_name(b->policy), b->cfg.pack);
	printf("network: %s (%s)%s\n", network_name(net), net_from,
	       net == FSB_NETWORK_NONE ? ": a namespace of its own with only a loopback" : "");
	printf("environment kept:");
	for (size_t i = 0; i < sum.nenv_pass; i++)
		printf(" %s", sum.env_pass[i]);
	printf("%s\n", sum.nenv_pass == 0 ? " (none: the pack's env.pass is empty)" : "");
	if (mode.namespaces) {
		printf("bwrap options:\n");
		rc = fsb_mount_plan_explain(&plan, stdout) < 0 ? FSB_EXIT_RUN : 0;
		fsb_mount_plan_free(&plan);
	} else {
		printf("no bwrap: fsbroker-init runs directly, with no mount plan\n");
		rc = 0;
	}
	if (fflush(stdout) != 0)
		rc = FSB_EXIT_RUN;
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

/* Choose the mode this machine allows (or refuse), and find what it runs. */
/*
 * What the machine allows and where bwrap and fsbroker-init are: all a run
 * needs to know before its pack is loaded. mode->reads_broker says only
 * what the machine forces; the pack's `reads` is added once it is loaded.
 */
static int preflight(const struct run_opts *o, struct fsb_run_mode *mode,
		     char *bwrap, size_t bwrap_len, char *init, size_t init_len)
{
	char err[1024];
	int rc;

	rc = fsb_run_mode_choose(mode, o->simulate_missing, o->accepted, false, err, sizeof(err));
	if (rc < 0)
		return fail("%s", err);
	bwrap[0] = '\0';
	if (mode->namespaces) {
		fsb_run_find_on_path("bwrap", bwrap, bwrap_len);
		if (bwrap[0] == '\0')
			return fail("bubblewrap (bwrap) is not installed or not on PATH");
	}
	if ((rc = fsb_run_find_init(init, init_len)) < 0)
		return fail("cannot find fsbroker-init next to fsbroker or in "
			    "../libexec/fsbroker beside it: %s", strerror(-rc));
	return 0;
}

/* A descriptor given on the command line: open, not one of CMD's 0-2, and
 * kept from CMD (close-on-exec). */
static int check_fd(const char *flag, const char *arg, int *out)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(arg, &end, 10);
	if (errno != 0 || *end != '\0' || end == arg || n < 3 || n > 65535)
		return fail("%s needs a descriptor number of 3 or more (0-2 are CMD's), not '%s'",
			    flag, arg);
	if (fcntl((int)n, F_SETFD, FD_CLOEXEC) < 0)
		return fail("%s %ld: the descriptor is not open (%s)", flag, n, strerror(errno));
	*out = (int)n;
	return 0;
}

/* Indexes in zsh_cmd()'s vector of the host paths a sandbox sees elsewhere. */
#define SHELL_ARG_ZSH 0
#define SHELL_ARG_BIN 5

/*
 * --shell zsh: `ZSH -f -c SCRIPT zsh BIN CMD...`, where SCRIPT puts BIN (the
 * shims) first on PATH, keeps here-documents' temp files in $TMPDIR when
 * there is one, and evaluates CMD's words joined by spaces, as `sh -c "$*"`.
 */
static char **zsh_cmd(char **cmd)
{
	static const char script[] =
		"PATH=\"$1${PATH:+:$PATH}\"; [[ -n $TMPDIR ]] && TMPPREFIX=$TMPDIR/zsh; "
		"shift; eval \"$*\"";
	static char zsh[PATH_MAX], bin[PATH_MAX];
	char err[1024], **v;
	size_t n = 0;

	if (fsb_shell_clients(zsh, sizeof(zsh), bin, sizeof(bin), err, sizeof(err)) < 0) {
		fail("--shell zsh: %s", err);
		return NULL;
	}
	while (cmd[n] != NULL)
		n++;
	if ((v = calloc(n + 7, sizeof(*v))) == NULL) {
		fail("out of memory");
		return NULL;
	}
	v[SHELL_ARG_ZSH] = zsh;
	v[1] = "-f";
	v[2] = "-c";
	v[3] = (char *)script;
	v[4] = "zsh";
	v[SHELL_ARG_BIN] = bin;
	memcpy(v + 6, cmd, n * sizeof(*v));
	return v;
}

/*
 * Under bwrap the patched zsh and the shims' directory are bound at fixed
 * places (their build tree may lie under the host's /tmp, which the sandbox
 * replaces): point the shell's vector there.
 */
static void shell_in_sandbox(char **v, struct fsb_mount_inputs *in)
{
	static char clients[PATH_MAX], bin_inside[PATH_MAX + 32];
	char bin[PATH_MAX];

	snprintf(bin, sizeof(bin), "%s", v[SHELL_ARG_BIN]);
	snprintf(bin_inside, sizeof(bin_inside), FSB_MOUNT_CLIENTS "/%s", basename(bin));
	snprintf(clients, sizeof(clients), "%s", v[SHELL_ARG_BIN]);
	in->clients_dir = dirname(clients);
	in->shell_binary = v[SHELL_ARG_ZSH];
	v[SHELL_ARG_ZSH] = FSB_MOUNT_SHELL;
	v[SHELL_ARG_BIN] = bin_inside;
}

static int parse_opts(int argc, char **argv, struct run_opts *o, bool *help)
{
	static const struct option opts[] = {
		{ "rules", required_argument, NULL, 'r' },
		{ "workspace", required_argument, NULL, 'w' },
		{ "session", required_argument, NULL, 'S' },
		{ "tool-call", required_argument, NULL, 't' },
		{ "state-dir", required_argument, NULL, 'd' },
		{ "core", required_argument, NULL, 'c' },
		{ "summary-fd", required_argument, NULL, 'F' },
		{ "control-fd", required_argument, NULL, 'C' },
		{ "approvals", required_argument, NULL, 'a' },
		{ "approval-timeout", required_argument, NULL, 'T' },
		{ "explain", no_argument, NULL, 'e' },
		{ "without-landlock", no_argument, NULL, 'L' },
		{ "without-namespaces", no_argument, NULL, 'N' },
		{ "simulate-missing", required_argument, NULL, 'M' },
		{ "shell", required_argument, NULL, 'Z' },
		{ "network", required_argument, NULL, 'n' },
		{ "scan-max-entries", required_argument, NULL, 'X' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool shell = false;
	int c;

	memset(o, 0, sizeof(*o));
	o->summary_fd = o->control_fd = -1;
	o->network = -1;
	o->approval_timeout = DEFAULT_APPROVAL_TIMEOUT;
	*help = false;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			o->rules = optarg;
			break;
		case 'w':
			o->workspace = optarg;
			break;
		case 'S':
			o->session = optarg;
			break;
		case 't':
			o->tool_call = optarg;
			break;
		case 'd':
			o->state_dir = optarg;
			break;
		case 'c':
			o->core_dir = optarg;
			break;
		case 'F':
			if (check_fd("--summary-fd", optarg, &o->summary_fd) != 0)
				return FSB_EXIT_RUN;
			break;
		case 'C':
			if (check_fd("--control-fd", optarg, &o->control_fd) != 0)
				return FSB_EXIT_RUN;
			break;
		case 'a':
			if (strcmp(optarg, "inline") != 0 && strcmp(optarg, "deferred") != 0)
				return fail("--approvals is deferred or inline, not '%s'", optarg);
			o->inline_approvals = strcmp(optarg, "inline") == 0;
			break;
		case 'T': {
			char *end;
			long t;

			errno = 0;
			t = strtol(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || end == optarg || t < 1 || t > 86400)
				return fail("--approval-timeout needs a number of seconds from 1 to "
					    "86400, not '%s'", optarg);
			o->approval_timeout = (unsigned)t;
			break;
		}
		case 'X': {
			char *end;
			long long n;

			errno = 0;
			n = strtoll(optarg, &end, 10);
			if (errno != 0 || *end != '\0' || end == optarg || n < 1 || n > 100000000)
				return fail("--scan-max-entries needs a number of entries from 1 to "
					    "100000000, not '%s'", optarg);
			o->scan_max_entries = (size_t)n;
			break;
		}
		case 'e':
			o->explain = true;
			break;
		case 'L':
			o->accepted |= FSB_FEATURE_LANDLOCK;
			break;
		case 'N':
			o->accepted |= FSB_FEATURE_USERNS;
			break;
		case 'M': {
			unsigned mask;

			if (fsb_feature_parse(optarg, &mask) < 0)
				return fail("--simulate-missing takes userns, landlock and "
					    "seccomp-notify, comma-separated, not '%s'", optarg);
			o->simulate_missing |= mask;
			break;
		}
		case 'n':
			if (strcmp(optarg, "host") != 0 && strcmp(optarg, "none") != 0)
				return fail("--network is host or none, not '%s'", optarg);
			o->network = strcmp(optarg, "none") == 0 ? FSB_NETWORK_NONE : FSB_NETWORK_HOST;
			break;
		case 'Z':
			if (strcmp(optarg, "zsh") != 0)
				return fail("--shell takes zsh (the patched zsh), not '%s'", optarg);
			shell = true;
			break;
		case 'h':
			*help = true;
			return 0;
		case ':':
			return fail("%s needs a value; see fsbroker run --help", argv[optind - 1]);
		default: {
			char msg[256];

			fsb_cli_option_error("fsbroker run", argv, msg, sizeof(msg));
			return fail("%s", msg);
		}
		}
	}
	o->cmd = argv + optind;
	if (optind >= argc && !o->explain)
		return fail("no command given: fsbroker run [OPTIONS] -- CMD [ARG]... "
			    "(see --help)");
	if (shell && (o->cmd = o->shell_cmd = zsh_cmd(o->cmd)) == NULL)
		return FSB_EXIT_RUN;
	if (o->session != NULL && !fsb_id_valid(o->session))
		return fail("session id '%s' must be 1-128 characters of A-Z a-z 0-9 . _ : - and "
			    "not start with '.'", o->session);
	if (o->tool_call != NULL && !fsb_id_valid(o->tool_call))
		return fail("tool call id '%s' must be 1-128 characters of A-Z a-z 0-9 . _ : - "
			    "and not start with '.'", o->tool_call);
	if (o->core_dir != NULL) {
		if (o->rules != NULL || o->workspace != NULL || o->state_dir != NULL)
			return fail("--core uses the pack, workspace and state dir of the core it "
				    "attaches to: leave out --rules, --workspace and --state-dir");
		if (o->explain)
			return fail("--explain describes an embedded core; leave out --core");
		if (o->control_fd >= 0 || o->inline_approvals)
			return fail("with --core the core's agent host holds the control channel "
				    "and answers its prompts: leave out --control-fd and "
				    "--approvals inline");
	}
	if (o->inline_approvals && o->control_fd < 0)
		return fail("--approvals inline needs --control-fd N: the host answers each "
			    "prompt there");
	if (o->control_fd >= 0 && o->control_fd == o->summary_fd)
		return fail("--control-fd and --summary-fd must be two descriptors");
	return 0;
}

/* The host's control channel on --control-fd (reads there, writes on a
 * dup of it: one poll handle per descriptor), and the inline hook. */
static int start_control(struct run *r, const struct run_opts *o, const char *session)
{
	int rc;

	r->ctl_wfd = fcntl(o->control_fd, F_DUPFD_CLOEXEC, 3);
	if (r->ctl_wfd < 0)
		return fail("--control-fd %d: %s", o->control_fd, strerror(errno));
	r->ctl.on_shutdown = on_host_gone;
	r->ctl.data = r;
	rc = fsb_control_start(&r->loop, &r->ctl, &r->broker, session, o->control_fd, r->ctl_wfd);
	if (rc < 0)
		return fail("--control-fd %d: cannot serve the control channel there (%s): a "
			    "socket or a pipe is needed", o->control_fd, uv_strerror(rc));
	r->ctl_up = true;
	if (!o->inline_approvals)
		return 0;
	rc = fsb_prompt_events_start(&r->prompts, &r->loop, &r->broker, &r->ctl,
				     o->approval_timeout);
	if (rc < 0)
		return fail("--approvals inline: %s", uv_strerror(rc));
	return 0;
}

/* Spawn `bargv` with fds 0-2 and `sock` as fd 3; signals go on to it. */
/* Start bargv with init's socket on fd 3 and, when block_fd >= 0, the
 * read end of the pipe bwrap's --block-fd waits on as fd 4 and the write
 * end of its --info-fd as fd 5. */
static int spawn_sandbox(struct run *r, char **bargv, int sock, int block_fd, int info_fd)
{
	uv_process_options_t po;
	uv_stdio_container_t stdio[6];
	int rc;

	memset(&po, 0, sizeof(po));
	memset(stdio, 0, sizeof(stdio));
	for (int i = 0; i < 3; i++) {
		stdio[i].flags = UV_INHERIT_FD;
		stdio[i].data.fd = i;
	}
	stdio[INIT_SOCKET_FD].flags = UV_INHERIT_FD;
	stdio[INIT_SOCKET_FD].data.fd = sock;
	stdio[BLOCK_FD].flags = UV_INHERIT_FD;
	stdio[BLOCK_FD].data.fd = block_fd;
	stdio[INFO_FD].flags = UV_INHERIT_FD;
	stdio[INFO_FD].data.fd = info_fd;
	po.file = bargv[0];
	po.args = bargv;
	po.stdio = stdio;
	po.stdio_count = block_fd >= 0 ? 6 : 4;
	po.exit_cb = on_exit_cb;
	/* Without a pid namespace: a session and process group of its own,
	 * ended with CMD (on_exit_cb), started in the workspace as the mount
	 * plan's --chdir would. bwrap makes its own (--new-session). */
	if (r->own_group) {
		po.flags = UV_PROCESS_DETACHED;
		po.cwd = r->broker.cfg.workspace;
	}
	r->proc.data = r;
	r->proc_closed = false;
	rc = uv_spawn(&r->loop, &r->proc, &po);
	if (rc < 0) {
		uv_close((uv_handle_t *)&r->proc, on_proc_closed);
		return fail("cannot start %s: %s", bargv[0], uv_strerror(rc));
	}
	return 0;
}

/* SIGINT, SIGTERM and SIGHUP go to the sandbox from now on. */
static void forward_signals(struct run *r)
{
	for (int i = 0; i < 3; i++) {
		uv_signal_init(&r->loop, &r->sigs[i]);
		r->sigs[i].data = r;
		uv_signal_start(&r->sigs[i], on_signal, forwarded[i]);
	}
	r->sigs_up = true;
}

static off_t audit_size(const char *state_dir, const char *session)
{
	char log[PATH_MAX + 200];
	struct stat st;

	snprintf(log, sizeof(log), "%s/audit/%s.jsonl", state_dir, session);
	return stat(log, &st) == 0 ? st.st_size : 0;
}

/* The last cycle of the session's store: the open one a core attached to
 * keeps for its host's turn. 0 when there is none. */
static unsigned last_cycle(const char *state_dir, const char *session)
{
	char store[PATH_MAX];
	unsigned *nums = NULL, last = 0;
	size_t n = 0;

	if (fsb_backup_store_dir(state_dir, session, store, sizeof(store)) == 0 &&
	    fsb_cycles_list(store, &nums, &n) == 0 && n > 0)
		last = nums[n - 1];
	free(nums);
	return last;
}

/*
 * CMD is gone: end the run's part of the turn (attached: close the scope,
 * the host commits; embedded: keep the blocks still waiting for `fsbroker
 * approve`, and seal the cycle with the command line), and report it, as
 * JSON on --summary-fd or as sentences on stderr. CMD's exit status, 128 +
 * its signal, or FSB_EXIT_RUN.
 */
static int finish(struct run *r, const struct run_opts *o, const char *session,
		  const char *tool_call, struct fsb_run_attach *at, off_t audit_from,
		  struct fsb_run_summary *sum)
{
	char err[2048], message[1024];
	int rc, cycle = 0;

	sum->session = session;
	sum->tool_call = tool_call;
	sum->state_dir = r->broker.cfg.state_dir;
	sum->attached = r->attached;
	if (r->attached) {
		/* The core commits the host's turn; the run only ends its scope,
		 * once the core has served every call the sandbox made. */
		if (fsb_run_attach_close(at, err, sizeof(err)) < 0)
			fprintf(stderr, "fsbroker run: %s; the summary may miss the last "
				"changes\n", err);
		r->init_sock = -1;
		cycle = (int)last_cycle(r->broker.cfg.state_dir, session);
	} else {
		/* Calls still waiting for approval: for `fsbroker approve`. */
		fsb_approvals_save_blocks(&r->broker, session, tool_call);
		/* Everything the supervisor did is in the cycle now: seal it. */
		join_cmd(o->cmd, message, sizeof(message));
		cycle = fsb_backup_commit(&r->broker, session, message, err, sizeof(err));
		if (cycle < 0)
			fprintf(stderr, "fsbroker run: cannot seal the backup cycle: %s\n", err);
	}
	if (r->term_signal != 0)
		rc = 128 + r->term_signal;
	else if (r->exited)
		rc = (int)r->exit_status;
	else
		rc = FSB_EXIT_RUN;
	sum->exit_status = rc;
	sum->signal = r->term_signal;
	sum->rerun = rerun_command(o, session, r->broker.cfg.state_dir, r->broker.cfg.workspace);
	fsb_run_summary_collect(sum, cycle > 0 ? (unsigned)cycle : 0, audit_from);
	/* CMD is gone: what the core said meanwhile comes now, before the
	 * summary on stderr, or inside it. */
	if (o->summary_fd >= 0)
		fsb_log_release(&sum->diagnostics, &sum->ndiagnostics);
	else
		fsb_log_release(NULL, NULL);
	if (o->summary_fd >= 0) {
		cJSON *js = fsb_run_summary_json(sum);
		int wrc = fsb_run_write_json(o->summary_fd, js);

		cJSON_Delete(js);
		if (wrc < 0)
			fprintf(stderr, "fsbroker run: cannot write the summary to fd %d: %s\n",
				o->summary_fd, strerror(-wrc));
	} else {
		fsb_run_summary_print(sum, "fsbroker run", stderr);
	}
	return rc;
}

/*
 * The core of a run that has none to attach to: the session's crashed
 * cycle recovered, a server with the run's scoped socket in a private
 * directory (r->scoped), the state dir's admin socket for other runs, the
 * admin connection fsbroker-init supervises through (our end served, the
 * other in r->init_sock), the approvals `fsbroker approve` recorded, and
 * the host's control channel. 0, or the exit status after a sentence.
 */
static int start_embedded_core(struct run *r, const struct run_opts *o, bool namespaces,
			       const char *session, const char *tool_call)
{
	char err[2048], admin_path[PATH_MAX + 16];
	struct fsb_scope scope;
	struct fsb_conn *conn = NULL;
	int rc, sp[2];

	err[0] = '\0';
	/* A cycle a crash left open is sealed as recovered first. */
	if (fsb_backup_recover(&r->broker, session, err, sizeof(err)) < 0)
		return fail("%s", err);
	/* For `fsbroker backup` run inside the project, and `list --all`. */
	if ((rc = fsb_session_note_workspace(r->broker.cfg.state_dir, session,
					     r->broker.cfg.workspace)) < 0)
		fsb_warn("cannot record the workspace of session %s: %s", session, strerror(-rc));
	fsb_server_init(&r->server, &r->loop, &r->broker);
	r->server_up = true;
	if (fsb_run_socket_dir(r->sockdir, sizeof(r->sockdir)) < 0 ||
	    fsb_server_scope_dir(&r->server, r->sockdir, err, sizeof(err)) < 0)
		return fail("cannot make a private socket directory: %s",
			    err[0] ? err : strerror(errno));
	r->sockdir_made = true;
	/* For `fsbroker run --core` of others, as `fsbroker serve` has;
	 * another core on the same state dir keeps its own. */
	snprintf(admin_path, sizeof(admin_path), "%s/admin.sock", r->broker.cfg.state_dir);
	/* Without namespaces the sandbox would see it: no admin socket. */
	if (!namespaces)
		fsb_debug("no admin socket: the sandbox shares this mount namespace");
	else if (fsb_server_listen_admin(&r->server, admin_path, err, sizeof(err)) < 0)
		fsb_debug("no admin socket: %s", err);

	/* The admin connection of this run: our end served by the core,
	 * the other one fsbroker-init's, for Supervise. */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
		return fail("socketpair: %s", strerror(errno));
	r->init_sock = sp[1];
	/* Taken over by the server, closed by it on failure too. */
	rc = fsb_server_adopt_admin(&r->server, sp[0], &conn);
	if (rc < 0)
		return fail("cannot serve the run's admin connection: %s", strerror(-rc));
	memset(&scope, 0, sizeof(scope));
	snprintf(scope.session, sizeof(scope.session), "%s", session);
	snprintf(scope.tool_call, sizeof(scope.tool_call), "%s", tool_call);
	if (fsb_broker_session(&r->broker, session) == NULL)
		return fail("cannot open session %s: its audit log could not be opened "
			    "(see above)", session);
	if (fsb_server_open_scope(&r->server, conn, &scope, r->scoped, sizeof(r->scoped),
				  err, sizeof(err)) < 0)
		return fail("%s", err);
	/* Supervise on this connection supervises for the run's scope. */
	conn->scope = scope;
	audit_scope(&r->broker, &scope, r->scoped);
	if (o->control_fd >= 0)
		return start_control(r, o, session);
	return 0;
}

/*
 * bwrap's command line (or fsbroker-init's alone, without namespaces)
 * for `l`, which holds what the pack and the machine decide (bwrap, the
 * plan, init, ${tmp}, reads = "broker", Landlock, the variables kept):
 * the run's own variables and CMD are added here. NULL when out of memory.
 */
static char **sandbox_argv(struct run *r, const struct run_opts *o, const char *session,
			   const char *tool_call, struct fsb_run_launch *l)
{
	static char env_reads[] = "FSBROKER_READS=sandbox";
	size_t n = 0;

	/* Under bwrap the plan binds the scoped socket at FSB_MOUNT_SOCKET. */
	snprintf(r->env_sock, sizeof(r->env_sock), "FSBROKER_SOCKET=%s",
		 l->bwrap != NULL ? FSB_MOUNT_SOCKET : r->scoped);
	snprintf(r->env_sid, sizeof(r->env_sid), "FSBROKER_SESSION_ID=%s", session);
	snprintf(r->env_tc, sizeof(r->env_tc), "FSBROKER_TOOL_CALL_ID=%s", tool_call);
	r->envs[n++] = r->env_sock;
	r->envs[n++] = r->env_sid;
	r->envs[n++] = r->env_tc;
	/* reads = "mask" under bubblewrap: the masks hide every denyRead path
	 * from every program of the run, so the clients open reads without
	 * asking (docs/clients.md, "Reads inside fsbroker run"). Without the
	 * namespaces there are no masks, and with reads = "broker" the
	 * supervisor judges each open: there the clients keep asking. */
	if (l->bwrap != NULL && !l->reads_broker)
		r->envs[n++] = env_reads;
	/* Attached, the sandbox is the core's view: its ~ and ${tmp} are the
	 * core's, and so are HOME and TMPDIR where the pack passes them. */
	for (size_t i = 0; r->attached && i < l->nkeep; i++) {
		if (strcmp(l->keep_env[i], "HOME") == 0) {
			snprintf(r->env_home, sizeof(r->env_home), "HOME=%s", r->broker.cfg.home);
			r->envs[n++] = r->env_home;
		} else if (strcmp(l->keep_env[i], "TMPDIR") == 0) {
			snprintf(r->env_tmp, sizeof(r->env_tmp), "TMPDIR=%s", r->broker.cfg.tmp);
			r->envs[n++] = r->env_tmp;
		}
	}
	/* CMD keeps only the variables the pack's env.pass names. */
	l->setenv_strs = r->envs;
	l->nset = n;
	l->cmd = o->cmd;
	return fsb_run_sandbox_argv(l);
}

/* What decides a launch record and is known before the pack is loaded. */
static void launch_key(const struct run *r, const struct run_opts *o, char *out, size_t len)
{
	const struct fsb_broker_config *c = &r->broker.cfg;
	const char *runtime = getenv("XDG_RUNTIME_DIR");

	snprintf(out, len, "pack=%s\nlua=%s\nworkspace=%s\nhome=%s\ntmp=%s\nstate=%s\n"
		 "uid=%u\nnetwork=%d\nshell=%d\nscan-max=%zu\nsimulate=%u\naccepted=%u\n"
		 "runtime=%s\n", c->pack, c->luadir, c->workspace, c->home, c->tmp, c->state_dir,
		 (unsigned)getuid(), o->network, o->shell_cmd != NULL, o->scan_max_entries,
		 o->simulate_missing, o->accepted, runtime != NULL ? runtime : "");
}

/*
 * Start the sandbox the launch record of `key` describes, blocked on
 * bwrap's --block-fd until go_ahead() (docs/runtime.md, "Started before
 * the pack is loaded"). 0 when it started; otherwise nothing is running
 * and the run starts its sandbox once the pack is loaded.
 */
static int start_ahead(struct run *r, const struct run_opts *o, const char *session,
		       const char *tool_call, const char *key, const char *bwrap, const char *init)
{
	struct fsb_run_launch l;
	char **v = NULL;
	size_t n = 0;
	int pipefd[2], infofd[2], rc;

	if (getenv("FSBROKER_LAUNCH_AHEAD") != NULL &&
	    strcmp(getenv("FSBROKER_LAUNCH_AHEAD"), "0") == 0)
		return -ENOENT;
	if (fsb_launch_record_load(r->broker.cfg.state_dir, key, r->scoped, &r->ahead_rec) < 0)
		return -ENOENT;
	r->ahead_plan.argv = r->ahead_rec.plan;
	r->ahead_plan.argc = r->ahead_rec.nplan;
	l = (struct fsb_run_launch){ .bwrap = bwrap, .plan = &r->ahead_plan, .init = init,
				     .tmp = r->ahead_rec.tmp, .reads_broker = r->ahead_rec.reads_broker,
				     .landlock = r->ahead_rec.landlock, .keep_env = r->ahead_rec.keep_env,
				     .nkeep = r->ahead_rec.nkeep };
	r->ahead_argv = sandbox_argv(r, o, session, tool_call, &l);
	while (r->ahead_argv != NULL && r->ahead_argv[n] != NULL)
		n++;
	/* bwrap, --block-fd 4 --info-fd 5, then the same options. */
	if (r->ahead_argv == NULL || (v = calloc(n + 5, sizeof(*v))) == NULL)
		return -ENOMEM;
	v[0] = r->ahead_argv[0];
	v[1] = "--block-fd";
	v[2] = "4";
	v[3] = "--info-fd";
	v[4] = "5";
	memcpy(v + 5, r->ahead_argv + 1, n * sizeof(*v));
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		free(v);
		return -errno;
	}
	if (pipe2(infofd, O_CLOEXEC) < 0) {
		rc = -errno;
		close(pipefd[0]);
		close(pipefd[1]);
		free(v);
		return rc;
	}
	rc = spawn_sandbox(r, v, r->init_sock, pipefd[0], infofd[1]);
	close(pipefd[0]);
	close(infofd[1]);
	free(v);
	if (rc != 0) {
		close(pipefd[1]);
		close(infofd[0]);
		while (!r->proc_closed)
			uv_run(&r->loop, UV_RUN_ONCE);
		return -EIO;
	}
	r->go_fd = pipefd[1];
	r->info_fd = infofd[0];
	fsb_debug("sandbox started from the launch record while the pack loads");
	return 0;
}

/* Let the sandbox started ahead go on: bwrap reads a byte on --block-fd. */
static int go_ahead(struct run *r)
{
	ssize_t n;

	do
		n = write(r->go_fd, "g", 1);
	while (n < 0 && errno == EINTR);
	close(r->go_fd);
	r->go_fd = -1;
	close(r->info_fd);
	r->info_fd = -1;
	return n == 1 ? 0 : -EIO;
}

/*
 * The pid of the process bwrap made in the new namespaces, from what it
 * wrote on --info-fd ({"child-pid": N, ...}), or -1 when it ended first.
 * bwrap writes it as soon as that process exists; the poll's bound only
 * keeps a wedged bwrap from holding the run for ever.
 */
static pid_t ahead_child(int fd)
{
	char buf[512] = "";
	size_t len = 0;
	const char *at;

	while (len < sizeof(buf) - 1 && memchr(buf, '}', len) == NULL) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 10000) <= 0)
			return -1;
		n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		len += (size_t)n;
	}
	buf[len] = '\0';
	at = strstr(buf, "\"child-pid\":");
	return at != NULL ? (pid_t)strtol(at + strlen("\"child-pid\":"), NULL, 10) : -1;
}

/*
 * Kill the sandbox started ahead and wait until it is gone. Its --block-fd
 * stays open until then: at end of file bwrap would go on. The process
 * blocked on it is bwrap's child, pid 1 of the new pid namespace, which
 * would outlive bwrap's own death (bwrap 0.8 sets it no parent-death
 * signal before it reads --block-fd): it is what is killed, by the pid
 * bwrap reported, and once SIGKILL is sent to it, it can run nothing
 * more. bwrap reaps it and exits (a killed bwrap would leave it to init).
 * Without a pid, bwrap ended or never made it: bwrap is killed.
 */
static void discard_ahead(struct run *r)
{
	pid_t child = ahead_child(r->info_fd);

	close(r->info_fd);
	r->info_fd = -1;
	r->discarding = true;
	if (child <= 0 || kill(child, SIGKILL) < 0)
		uv_process_kill(&r->proc, SIGKILL);
	while (!r->proc_closed)
		uv_run(&r->loop, UV_RUN_ONCE);
	close(r->go_fd);
	r->go_fd = -1;
}

static bool same_argv(char **a, char **b)
{
	size_t i = 0;

	for (; a[i] != NULL && b[i] != NULL; i++)
		if (strcmp(a[i], b[i]) != 0)
			return false;
	return a[i] == NULL && b[i] == NULL;
}

int fsb_cli_run(int argc, char **argv)
{
	const char *session, *tool_call;
	char tc_buf[64], state[PATH_MAX], cwd[PATH_MAX], err[2048];
	char sess_buf[FSB_SESSION_NAME_LEN];
	char bwrap[PATH_MAX], init[PATH_MAX], key[8 * PATH_MAX];
	struct fsb_run_summary sum;
	struct fsb_policy_summary pol;
	struct fsb_run_attach at;
	struct fsb_broker_config cfg;
	struct fsb_mount_inputs in;
	struct fsb_mount_plan plan;
	struct fsb_run_mode mode;
	struct fsb_run_launch launch;
	struct run_opts o;
	bool help, plan_built = false, summary_written = false, ahead = false;
	enum fsb_network_mode net;
	const char *net_from;
	char **bargv = NULL;
	struct run *r = NULL;
	int rc;
	off_t audit_from = 0;

	memset(&sum, 0, sizeof(sum));
	memset(&pol, 0, sizeof(pol));
	memset(&at, 0, sizeof(at));
	at.fd = -1;
	last_error[0] = '\0';
	if ((rc = parse_opts(argc, argv, &o, &help)) != 0)
		goto out;
	if (help) {
		fputs(usage, stdout);
		return 0;
	}
	/* stderr is CMD's: a program reading --summary-fd gets the core's
	 * lines in the summary; without it they come before CMD starts and
	 * after it ends, never among CMD's own (docs/runtime.md). */
	if (o.summary_fd >= 0)
		fsb_log_hold();
	rc = FSB_EXIT_RUN;
	tool_call = o.tool_call;
	if (tool_call == NULL) {
		snprintf(tc_buf, sizeof(tc_buf), "tc-%lld-%ld", (long long)time(NULL),
			 (long)getpid());
		tool_call = tc_buf;
	}

	prctl(PR_SET_DUMPABLE, 0);
	signal(SIGPIPE, SIG_IGN);

	if (o.core_dir != NULL) {
		/* Attached: the core's pack, workspace, state dir and session. */
		if (realpath(o.core_dir, state) == NULL) {
			rc = fail("--core %s: no fsbroker core is running with that state dir (%s)",
				  o.core_dir, strerror(errno));
			goto out;
		}
		if (fsb_run_attach_open(state, o.session, tool_call, &at, err, sizeof(err)) < 0) {
			rc = fail("%s", err);
			goto out;
		}
		session = at.session;
		if (fsb_config_build(&cfg, at.pack, at.workspace[0] ? at.workspace : NULL,
				     at.state_dir[0] ? at.state_dir : state, err, sizeof(err)) < 0) {
			rc = fail("%s", err);
			goto out;
		}
		/* The pack's ~ and ${tmp} are the core's. */
		if (at.home[0] == '/')
			snprintf(cfg.home, sizeof(cfg.home), "%s", at.home);
		if (at.tmp[0] == '/')
			snprintf(cfg.tmp, sizeof(cfg.tmp), "%s", at.tmp);
		cfg.one_shot = true;	/* only for the plan: no state, no audit here */
		/* ...but the pack as the core compiled and tested it. */
		cfg.keep_compiled = true;
	} else {
		if (o.workspace == NULL) {
			if (getcwd(cwd, sizeof(cwd)) == NULL) {
				rc = fail("cannot tell the current directory: %s", strerror(errno));
				goto out;
			}
			o.workspace = cwd;
		}
		if (o.state_dir == NULL) {
			fsb_default_state_dir(state, sizeof(state));
			o.state_dir = state;
		}
		if (fsb_config_build(&cfg, o.rules, o.workspace, o.state_dir, err,
				     sizeof(err)) < 0) {
			rc = fail("%s", err);
			goto out;
		}
		/* Each project its own history: the session of the workspace's
		 * real path, unless one is named. */
		session = o.session;
		if (session == NULL) {
			if (fsb_session_for_workspace(cfg.workspace, sess_buf, sizeof(sess_buf)) < 0) {
				rc = fail("cannot name a session for the workspace %s", cfg.workspace);
				goto out;
			}
			session = sess_buf;
		}
	}

	r = calloc(1, sizeof(*r));
	if (r == NULL) {
		rc = fail("out of memory");
		goto out;
	}
	r->init_sock = -1;
	r->go_fd = -1;
	r->info_fd = -1;
	r->proc_closed = true;
	r->attached = o.core_dir != NULL;
	uv_loop_init(&r->loop);
	/* Embedded, the pack is loaded once the sandbox may be starting. */
	cfg.policy_later = !r->attached;
	if (fsb_broker_init(&r->broker, r->attached ? NULL : &r->loop, &cfg, err,
			    sizeof(err)) < 0) {
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
	in.scan_max_entries = o.scan_max_entries;
	/* Masked in the sandbox: no command run there can read or forge it. */
	in.scan_index_dir = r->broker.cfg.state_dir[0] ? r->broker.cfg.state_dir : NULL;
	if (o.explain) {
		if (r->broker.policy == NULL &&
		    fsb_broker_load_policy(&r->broker, err, sizeof(err)) < 0) {
			rc = fail("%s", err);
			goto out;
		}
		rc = explain(&r->broker, &in, &o);
		goto out;
	}
	if ((rc = preflight(&o, &mode, bwrap, sizeof(bwrap), init, sizeof(init))) != 0)
		goto out;
	rc = FSB_EXIT_RUN;

	/* A run killed before left its directory, and maybe a sandbox. */
	if (mode.namespaces && fsb_run_socket_dir(r->sockdir, sizeof(r->sockdir)) == 0)
		fsb_run_clear_leftovers(r->sockdir);
	if (r->attached) {
		snprintf(r->scoped, sizeof(r->scoped), "%s", at.socket);
		r->init_sock = at.fd;
		/* Its sockets are the core's: the directory only says, while
		 * it exists, that this run is alive (fsb_run_clear_leftovers). */
		r->sockdir_made = mode.namespaces && r->sockdir[0] != '\0' &&
				  mkdir(r->sockdir, 0700) == 0;
	} else {
		rc = start_embedded_core(r, &o, mode.namespaces, session, tool_call);
		if (rc != 0)
			goto out;
		rc = FSB_EXIT_RUN;
	}
	in.scoped_socket = r->scoped;
	if (r->attached) {
		in.socket_dirs = at.socket_dir_list;
		in.nsocket_dirs = at.nsocket_dirs;
	}
	in.init_binary = init;
	if (o.shell_cmd != NULL && mode.namespaces)
		shell_in_sandbox(o.shell_cmd, &in);

	/* The sandbox of the last run like this one starts now, blocked,
	 * and bwrap builds it while the pack loads. */
	launch_key(r, &o, key, sizeof(key));
	if (!r->attached && mode.namespaces && r->broker.cfg.state_dir[0])
		ahead = start_ahead(r, &o, session, tool_call, key, bwrap, init) == 0;
	if (r->broker.policy == NULL) {
		if (fsb_broker_load_policy(&r->broker, err, sizeof(err)) < 0) {
			rc = fail("%s", err);
			goto out;
		}
		/* What `fsbroker approve` recorded since an earlier run asked. */
		fsb_approvals_load(&r->broker, session);
	}
	if (fsb_policy_summary(r->broker.policy, &pol, err, sizeof(err)) < 0) {
		rc = fail("%s", err);
		goto out;
	}
	mode.reads_broker = mode.reads_broker || pol.reads == FSB_READS_BROKER;
	net = run_network(&o, &pol, &net_from);
	if ((rc = check_network(net, net_from, &mode)) != 0)
		goto out;
	rc = FSB_EXIT_RUN;
	in.network_none = net == FSB_NETWORK_NONE;
	sum.network = network_name(net);

	memset(&plan, 0, sizeof(plan));
	plan_built = true;
	if (mode.namespaces && fsb_mount_plan_build(r->broker.policy, &in, &plan) < 0) {
		rc = fail("%s", plan.why);
		goto out;
	}
	/* What the plan had to mask whole (a directory the scan could not
	 * look into): the user hears it before CMD runs, once; a program
	 * reading --summary-fd finds it there instead. */
	sum.mask_warnings = plan.warnings;
	sum.nmask_warnings = plan.nwarnings;
	for (size_t i = 0; o.summary_fd < 0 && i < plan.nwarnings; i++)
		fprintf(stderr, "fsbroker run: %s\n", plan.warnings[i]);
	launch = (struct fsb_run_launch){ .bwrap = mode.namespaces ? bwrap : NULL, .plan = &plan,
					  .init = init, .tmp = r->broker.cfg.tmp,
					  .reads_broker = mode.reads_broker, .landlock = mode.landlock,
					  .keep_env = pol.env_pass, .nkeep = pol.nenv_pass };
	bargv = sandbox_argv(r, &o, session, tool_call, &launch);
	if (bargv == NULL) {
		rc = fail("out of memory");
		goto out;
	}
	if (!r->attached && mode.namespaces && r->broker.cfg.state_dir[0]) {
		if ((rc = fsb_launch_record_save(r->broker.cfg.state_dir, key, r->scoped, &plan,
						 &launch)) < 0)
			fsb_debug("the launch record is not kept: %s", strerror(-rc));
		rc = FSB_EXIT_RUN;
	}
	audit_from = audit_size(r->broker.cfg.state_dir, session);
	r->own_group = !mode.namespaces;
	fsb_log_hold();
	/* The sandbox started ahead goes on only if it is, option for option,
	 * the one this pack and this workspace make now. */
	if (ahead && !same_argv(r->ahead_argv, bargv)) {
		fsb_debug("the launch record differs from this run's plan: started again");
		discard_ahead(r);
		ahead = false;
	}
	if (ahead && go_ahead(r) < 0) {
		discard_ahead(r);
		ahead = false;
		rc = fail("the sandbox started ahead could not be let go on (bwrap ended?)");
		goto out;
	}
	if (!ahead && (rc = spawn_sandbox(r, bargv, r->init_sock, -1, -1)) != 0)
		goto out;
	ahead = false;
	forward_signals(r);
	fsb_debug("running session %s tool call %s with pack %s", session, tool_call,
		  fsb_policy_name(r->broker.policy));
	uv_run(&r->loop, UV_RUN_DEFAULT);

	rc = finish(r, &o, session, tool_call, &at, audit_from, &sum);
	summary_written = o.summary_fd >= 0;
out:
	/* A failure while the pack loaded: the sandbox started ahead never ran
	 * anything, and never will. */
	if (ahead)
		discard_ahead(r);
	/* A program reading --summary-fd gets an object for a failed run too. */
	if (o.summary_fd >= 0 && !summary_written && rc == FSB_EXIT_RUN && last_error[0]) {
		cJSON *js = cJSON_CreateObject();
		char **lines = NULL;
		size_t nlines = 0;

		fsb_log_release(&lines, &nlines);
		cJSON_AddNumberToObject(js, "exitStatus", FSB_EXIT_RUN);
		cJSON_AddStringToObject(js, "error", last_error);
		cJSON_AddItemToObject(js, "diagnostics", fsb_run_diagnostics_json(lines, nlines));
		fsb_run_write_json(o.summary_fd, js);
		cJSON_Delete(js);
		for (size_t i = 0; i < nlines; i++)
			free(lines[i]);
		free(lines);
	}
	/* Held and not yet said (a run that failed): CMD has ended, or never
	 * started. */
	fsb_log_release(NULL, NULL);
	fsb_run_summary_free(&sum);
	fsb_policy_summary_free(&pol);
	free(o.shell_cmd);
	if (at.fd >= 0)
		close(at.fd);
	if (r == NULL)
		return rc;
	if (r->init_sock >= 0 && !r->attached)
		close(r->init_sock);
	r->init_sock = -1;
	if (!r->exited) {
		fsb_prompt_events_stop(&r->prompts);
		if (r->ctl_up)
			fsb_control_close(&r->ctl);
		r->ctl_up = false;
		if (r->server_up)
			fsb_server_close(&r->server);
		uv_run(&r->loop, UV_RUN_DEFAULT);
	}
	if (r->ctl_wfd > 0)
		close(r->ctl_wfd);
	if (plan_built)
		fsb_mount_plan_free(&plan);
	free(bargv);
	free(r->ahead_argv);
	fsb_launch_record_free(&r->ahead_rec);
	if (r->sockdir_made)
		rmdir(r->sockdir);
	fsb_broker_free(&r->broker);
	if (uv_loop_close(&r->loop) != 0)
		fsb_debug("loop closed with handles still open");
	free(r);
	return rc;
}
