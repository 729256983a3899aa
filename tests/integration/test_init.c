/*
 * test_init.c — build/fsbroker-init as `fsbroker run` will start it: on a
 * socketpair the test holds as the core's end. The test reads the
 * Supervise line and the listener, answers it, and then supervises like a
 * minimal core (every notification answered EACCES, or CONTINUE where a
 * test wants Landlock alone to decide), collecting the command's output and
 * exit status.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <linux/seccomp.h>

#include "landlock.h"
#include "seccomp_filter.h"

/* Where the child finds its socket and the fd it must not inherit. */
#define SOCK_FD 5
#define LEAKED_FD 9

static char dir[PATH_MAX];
static char init_bin[PATH_MAX];

enum core_reply { REPLY_OK, REPLY_REFUSE, REPLY_CLOSE };

struct init_run {
	/* in */
	const char *const *opts;	/* init options after --socket-fd, or NULL */
	const char *const *cmd;		/* after "--" */
	enum core_reply reply;
	bool answer_continue;		/* else EACCES */
	/* out */
	int status;
	bool handshake;			/* the Supervise line and a listener came */
	char line[256];			/* what init sent */
	unsigned notes;
	char out[65536];		/* stdout and stderr together */
};

static bool unsupported(void)
{
	char why[256];

	if (fsb_landlock_probe(why, sizeof(why)) < 1) {
		fsbt_skip_reason("%s", why);
		return true;
	}
	if (fsb_seccomp_probe(why, sizeof(why)) < 0) {
		fsbt_skip_reason("%s", why);
		return true;
	}
	return false;
}

static void answer(int listener, bool cont, unsigned *notes)
{
	struct seccomp_notif_sizes sz;
	struct seccomp_notif *req;
	struct seccomp_notif_resp *resp;

	assert_int_equal(syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sz), 0);
	req = calloc(1, sz.seccomp_notif > sizeof(*req) ? sz.seccomp_notif : sizeof(*req));
	resp = calloc(1, sz.seccomp_notif_resp > sizeof(*resp) ? sz.seccomp_notif_resp
								: sizeof(*resp));
	assert_non_null(req);
	assert_non_null(resp);
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, req) == 0) {
		(*notes)++;
		resp->id = req->id;
		if (cont)
			resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		else
			resp->error = -EACCES;
		/* ENOENT: the caller died meanwhile. */
		if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, resp) != 0)
			assert_int_equal(errno, ENOENT);
	}
	free(req);
	free(resp);
}

static void run_init(struct init_run *r)
{
	char *argv[64], sockfd[16];
	int sv[2], out[2], listener = -1, n = 0;
	struct timeval tv = { .tv_sec = 10 };
	size_t len = 0;
	bool out_open = true;
	uint64_t deadline;
	pid_t pid;

	snprintf(sockfd, sizeof(sockfd), "%d", SOCK_FD);
	argv[n++] = init_bin;
	argv[n++] = "--socket-fd";
	argv[n++] = sockfd;
	for (int i = 0; r->opts && r->opts[i]; i++)
		argv[n++] = (char *)r->opts[i];
	argv[n++] = "--";
	for (int i = 0; r->cmd[i]; i++)
		argv[n++] = (char *)r->cmd[i];
	argv[n] = NULL;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);

		/* dup2 leaves the copies without FD_CLOEXEC: inherited. The
		 * extra writable fd is one init has to close. */
		if (nul < 0 || dup2(nul, 0) < 0 || dup2(out[1], 1) < 0 || dup2(out[1], 2) < 0 ||
		    dup2(sv[1], SOCK_FD) < 0 || dup2(out[1], LEAKED_FD) < 0 || chdir(dir) != 0)
			_exit(99);
		setenv("FSBT_SECRET", "secret", 1);
		setenv("FSBT_ALLOWED", "kept", 1);
		setenv("LC_FSBT", "lc", 1);
		execv(init_bin, argv);
		_exit(98);
	}
	close(sv[1]);
	close(out[1]);
	assert_int_equal(setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);

	/* The handover: one line, one fd. */
	ssize_t got = fsbt_read_reply(sv[0], r->line, sizeof(r->line), &listener);

	if (got < 0)
		r->line[0] = '\0';
	r->handshake = got > 0 && listener >= 0;
	if (r->handshake) {
		if (r->reply == REPLY_OK)
			assert_int_equal(fsbt_send(sv[0], "{\"ok\":true}", 11, -1), 0);
		else if (r->reply == REPLY_REFUSE)
			assert_int_equal(fsbt_send(sv[0], "{\"ok\":false,\"error\":\"no supervisor here\"}",
						   41, -1), 0);
	}
	fsbt_close(sv[0]);

	deadline = fsbt_now_ms() + FSBT_TIMEOUT_MS;
	while (out_open || listener >= 0) {
		struct pollfd p[2] = {
			{ .fd = out_open ? out[0] : -1, .events = POLLIN },
			{ .fd = listener, .events = POLLIN },
		};

		if (fsbt_now_ms() > deadline) {
			kill(pid, SIGKILL);
			fail_msg("fsbroker-init did not finish; output so far: %.*s", (int)len, r->out);
		}
		if (poll(p, 2, 200) < 0)
			continue;
		if (p[1].revents & POLLIN)
			answer(listener, r->answer_continue, &r->notes);
		else if (p[1].revents & (POLLHUP | POLLERR)) {
			/* No task uses the filter any more. */
			close(listener);
			listener = -1;
		}
		if (p[0].revents & (POLLIN | POLLHUP)) {
			ssize_t k = read(out[0], r->out + len, sizeof(r->out) - 1 - len);

			if (k <= 0)
				out_open = false;
			else
				len += (size_t)k;
		}
	}
	r->out[len] = '\0';
	close(out[0]);
	assert_int_equal(waitpid(pid, &r->status, 0), pid);
}

static int exit_code(const struct init_run *r)
{
	return WIFEXITED(r->status) ? WEXITSTATUS(r->status) : 128 + WTERMSIG(r->status);
}

static void test_write_is_refused_and_read_runs_natively(void **state)
{
	static const char *const write_cmd[] = { "sh", "-c", "echo x > f", NULL };
	static const char *const read_cmd[] = { "cat", "/etc/passwd", NULL };
	struct init_run *r = calloc(1, sizeof(*r));
	char f[PATH_MAX + 4];
	char *passwd;

	(void)state;
	if (unsupported())
		skip();
	r->cmd = write_cmd;
	run_init(r);
	assert_true(r->handshake);
	assert_string_equal(r->line, "{\"command\":\"Supervise\",\"routesUmask\":true}");
	assert_non_null(strstr(r->out, "Permission denied"));
	assert_int_not_equal(exit_code(r), 0);
	assert_true(r->notes >= 1);
	snprintf(f, sizeof(f), "%s/f", dir);
	assert_int_equal(access(f, F_OK), -1);

	memset(r, 0, sizeof(*r));
	r->cmd = read_cmd;
	run_init(r);
	passwd = fsbt_read_file("/etc/passwd", NULL);
	assert_non_null(passwd);
	assert_int_equal(exit_code(r), 0);
	assert_string_equal(r->out, passwd);
	assert_int_equal(r->notes, 0);
	free(passwd);
	free(r);
}

static void test_missing_command_exits_127(void **state)
{
	static const char *const cmd[] = { "fsbt-no-such-command", NULL };
	struct init_run *r = calloc(1, sizeof(*r));

	(void)state;
	if (unsupported())
		skip();
	r->cmd = cmd;
	run_init(r);
	assert_int_equal(exit_code(r), 127);
	assert_non_null(strstr(r->out, "fsbroker-init: cannot run fsbt-no-such-command"));
	free(r);
}

static void test_bad_flags_exit_125(void **state)
{
	static const char *const cmd[] = { "true", NULL };
	static const char *const unknown[] = { "--no-such-flag", NULL };
	static const char *const not_socket[] = { "--socket-fd", "9", NULL };
	static const char *const relative[] = { "--writable", "tmp", NULL };
	static const char *const bad_env[] = { "--setenv", "NOEQUALS", NULL };
	struct init_run *r = calloc(1, sizeof(*r));

	(void)state;
	r->cmd = cmd;
	r->opts = unknown;
	run_init(r);
	assert_int_equal(exit_code(r), 125);
	assert_false(r->handshake);
	assert_non_null(strstr(r->out, "fsbroker-init: unknown option '--no-such-flag'"));

	memset(r, 0, sizeof(*r));
	r->cmd = cmd;
	r->opts = not_socket;	/* the later --socket-fd wins: a pipe */
	run_init(r);
	assert_int_equal(exit_code(r), 125);
	assert_non_null(strstr(r->out, "--socket-fd 9 is not a Unix stream socket"));

	memset(r, 0, sizeof(*r));
	r->cmd = cmd;
	r->opts = relative;
	run_init(r);
	assert_int_equal(exit_code(r), 125);
	assert_non_null(strstr(r->out, "--writable wants an absolute path"));

	memset(r, 0, sizeof(*r));
	r->cmd = cmd;
	r->opts = bad_env;
	run_init(r);
	assert_int_equal(exit_code(r), 125);
	assert_non_null(strstr(r->out, "--setenv wants NAME=VALUE"));
	free(r);
}

static void test_only_stdio_reaches_the_command(void **state)
{
	static const char *const cmd[] = { "ls", "/proc/self/fd", NULL };
	struct init_run *r = calloc(1, sizeof(*r));

	(void)state;
	if (unsupported())
		skip();
	r->cmd = cmd;
	run_init(r);
	assert_int_equal(exit_code(r), 0);
	/* 0-2, and 3: ls's own handle on the directory it lists. */
	assert_string_equal(r->out, "0\n1\n2\n3\n");
	free(r);
}

static void test_no_new_privs_and_the_filter_are_set(void **state)
{
	static const char *const cmd[] = { "grep", "-E", "^(NoNewPrivs|Seccomp):", "/proc/self/status",
					   NULL };
	struct init_run *r = calloc(1, sizeof(*r));

	(void)state;
	if (unsupported())
		skip();
	r->cmd = cmd;
	run_init(r);
	assert_int_equal(exit_code(r), 0);
	assert_non_null(strstr(r->out, "NoNewPrivs:\t1\n"));
	assert_non_null(strstr(r->out, "Seccomp:\t2\n"));	/* filter mode */
	free(r);
}

static void test_refusal_or_silence_from_the_core_exits_125(void **state)
{
	static const char *const cmd[] = { "echo", "the-command-ran", NULL };
	struct init_run *r = calloc(1, sizeof(*r));

	(void)state;
	if (unsupported())
		skip();
	r->cmd = cmd;
	r->reply = REPLY_REFUSE;
	run_init(r);
	assert_true(r->handshake);
	assert_int_equal(exit_code(r), 125);
	assert_non_null(strstr(r->out, "fsbroker-init: the core refused to supervise this sandbox: "
					"no supervisor here"));
	assert_null(strstr(r->out, "the-command-ran"));

	memset(r, 0, sizeof(*r));
	r->cmd = cmd;
	r->reply = REPLY_CLOSE;
	run_init(r);
	assert_true(r->handshake);
	assert_int_equal(exit_code(r), 125);
	assert_non_null(strstr(r->out, "closed the connection without answering Supervise"));
	assert_null(strstr(r->out, "the-command-ran"));
	free(r);
}

static void test_landlock_keeps_writes_to_the_writable_dir(void **state)
{
	static const char *const cmd[] = { "sh", "-c", "echo in > w/f; echo out > o/f", NULL };
	struct init_run *r = calloc(1, sizeof(*r));
	char w[PATH_MAX + 16], o[PATH_MAX + 16], arg[PATH_MAX + 16];
	const char *opts[] = { "--writable", arg, NULL };
	char *content;

	(void)state;
	if (unsupported())
		skip();
	snprintf(w, sizeof(w), "%s/w", dir);
	snprintf(o, sizeof(o), "%s/o", dir);
	snprintf(arg, sizeof(arg), "%s", w);
	assert_int_equal(mkdir(w, 0700), 0);
	assert_int_equal(mkdir(o, 0700), 0);
	/* CONTINUE: the supervisor waves everything through; Landlock alone
	 * decides. */
	r->cmd = cmd;
	r->opts = opts;
	r->answer_continue = true;
	run_init(r);
	assert_int_equal(r->notes, 2);
	assert_non_null(strstr(r->out, "Permission denied"));
	snprintf(w, sizeof(w), "%s/w/f", dir);
	snprintf(o, sizeof(o), "%s/o/f", dir);
	content = fsbt_read_file(w, NULL);
	assert_non_null(content);
	assert_string_equal(content, "in\n");
	free(content);
	assert_int_equal(access(o, F_OK), -1);
	free(r);
}

static void test_environment_is_the_allowlist(void **state)
{
	static const char *const cmd[] = { "env", NULL };
	static const char *const opts[] = {
		"--keep-env", "FSBT_ALLOWED", "--keep-env", "LC_*", "--keep-env", "PATH",
		"--setenv", "FSBROKER_SOCKET=/run/fsbroker/broker.sock",
		"--setenv", "FSBT_ALLOWED=replaced", NULL,
	};
	struct init_run *r = calloc(1, sizeof(*r));

	(void)state;
	if (unsupported())
		skip();
	r->cmd = cmd;
	r->opts = opts;
	run_init(r);
	assert_int_equal(exit_code(r), 0);
	assert_non_null(strstr(r->out, "FSBROKER_SOCKET=/run/fsbroker/broker.sock\n"));
	assert_non_null(strstr(r->out, "FSBT_ALLOWED=replaced\n"));
	assert_null(strstr(r->out, "FSBT_ALLOWED=kept"));
	assert_non_null(strstr(r->out, "LC_FSBT=lc\n"));
	assert_non_null(strstr(r->out, "PATH="));
	assert_null(strstr(r->out, "FSBT_SECRET"));
	assert_null(strstr(r->out, "HOME="));
	free(r);
}

static void test_reads_broker_sends_read_opens_to_the_core(void **state)
{
	static const char *const cmd[] = { "cat", "/etc/passwd", NULL };
	static const char *const opts[] = { "--reads-broker", NULL };
	struct init_run *r = calloc(1, sizeof(*r));

	(void)state;
	if (unsupported())
		skip();
	r->cmd = cmd;
	r->opts = opts;
	run_init(r);
	assert_int_not_equal(exit_code(r), 0);
	assert_non_null(strstr(r->out, "Permission denied"));
	assert_true(r->notes >= 1);
	free(r);
}

static int setup(void **state)
{
	const char *env = getenv("FSBROKER_INIT");
	char bin[PATH_MAX];

	(void)state;
	snprintf(dir, sizeof(dir), "%s/fsbt-init-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(dir))
		return -1;
	if (env && *env) {
		snprintf(init_bin, sizeof(init_bin), "%s", env);
	} else {
		/* Beside the fsbroker under test (build/ or build/san-*). */
		snprintf(bin, sizeof(bin), "%s", fsbt_binary());
		snprintf(init_bin, sizeof(init_bin), "%s/fsbroker-init", dirname(bin));
	}
	if (!realpath(init_bin, bin)) {
		fprintf(stderr, "# %s: %s (run make first)\n", init_bin, strerror(errno));
		return -1;
	}
	snprintf(init_bin, sizeof(init_bin), "%s", bin);
	return 0;
}

static int teardown(void **state)
{
	char *const rm[] = { "/bin/rm", "-rf", dir, NULL };

	(void)state;
	if (getenv("FSBT_KEEP"))
		return 0;
	return fsbt_run(rm, NULL) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_is_refused_and_read_runs_natively),
		cmocka_unit_test(test_missing_command_exits_127),
		cmocka_unit_test(test_bad_flags_exit_125),
		cmocka_unit_test(test_only_stdio_reaches_the_command),
		cmocka_unit_test(test_no_new_privs_and_the_filter_are_set),
		cmocka_unit_test(test_refusal_or_silence_from_the_core_exits_125),
		cmocka_unit_test(test_landlock_keeps_writes_to_the_writable_dir),
		cmocka_unit_test(test_environment_is_the_allowlist),
		cmocka_unit_test(test_reads_broker_sends_read_opens_to_the_core),
	};

	return fsbt_run_group(tests, setup, teardown);
}
