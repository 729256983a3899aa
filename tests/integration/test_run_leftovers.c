/*
 * test_run_leftovers.c — what a killed `fsbroker run` leaves, the next run
 * clears (core/linux/run_leftovers.c): the killed run's directory, and the
 * inner process of the sandbox bwrap was setting up, which waits for ever
 * once its outer bwrap died with the run (containers/bubblewrap#633). A run
 * still alive keeps both: its directory and its sandbox.
 *
 * The killed run is played by a bwrap of our own, started as our sandboxes
 * are (--die-with-parent, a pid namespace, fsbroker-init as its command)
 * and held on --block-fd, so that its inner process is certainly there and
 * certainly has not armed its parent-death signal; its directory is named
 * by its pid. Killing that bwrap leaves the inner one stranded, as the race
 * does. This process is the children's subreaper, so it sees how they end.
 */
#include "run_fixture.h"

#include "mount_plan.h"

struct fake_run {
	pid_t pid;		/* the outer bwrap, whose directory names it */
	pid_t inner;		/* its sandbox's pid 1, from --info-fd */
	int block;		/* our end of its --block-fd */
	char dir[PATH_MAX + 32];
};

/* `xdg`'s directory of a run of pid `pid`, as fsb_run_socket_dir names it. */
static void run_dir(const char *xdg, pid_t pid, char *out, size_t len)
{
	snprintf(out, len, "%s/fsbroker-run-%d", xdg, (int)pid);
}

/* The inner pid from bwrap's --info-fd ({"child-pid": N, ...}). */
static pid_t read_child_pid(int fd)
{
	char buf[512];
	size_t len = 0;
	const char *at;
	ssize_t n;

	while (len < sizeof(buf) - 1 && (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	at = strstr(buf, "\"child-pid\":");
	return at != NULL ? (pid_t)atoi(at + strlen("\"child-pid\":")) : -1;
}

static void fake_run_start(struct fake_run *r, const char *xdg)
{
	int block[2], info[2];

	assert_int_equal(pipe2(block, O_CLOEXEC), 0);
	assert_int_equal(pipe2(info, O_CLOEXEC), 0);
	r->pid = fork();
	assert_true(r->pid >= 0);
	if (r->pid == 0) {
		char dir[PATH_MAX + 32];
		/* Out of the way first: a pipe's end may be 3 or 4 already. */
		int b = fcntl(block[0], F_DUPFD_CLOEXEC, 10), i = fcntl(info[1], F_DUPFD_CLOEXEC, 10);

		run_dir(xdg, getpid(), dir, sizeof(dir));
		if (mkdir(dir, 0700) < 0 || b < 0 || i < 0 || dup2(b, 3) < 0 || dup2(i, 4) < 0)
			_exit(127);
		execl("/usr/bin/bwrap", "bwrap", "--die-with-parent", "--unshare-user",
		      "--unshare-pid", "--ro-bind", "/", "/", "--block-fd", "3", "--info-fd", "4",
		      "--", FSB_MOUNT_INIT, (char *)NULL);
		_exit(127);
	}
	close(block[0]);
	close(info[1]);
	r->block = block[1];
	r->inner = read_child_pid(info[0]);
	close(info[0]);
	run_dir(xdg, r->pid, r->dir, sizeof(r->dir));
	if (r->inner <= 0)
		fail_msg("bwrap reported no child pid");
}

/* Whether `pid`, a child of ours (or an orphan we reap), ended within 5 s. */
static bool ended(pid_t pid)
{
	for (int i = 0; i < 500; i++) {
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return true;
		usleep(10000);
	}
	return false;
}

static void run_true(struct fixture *f)
{
	char *out = NULL;
	int rc = run_sh(f, NULL, "true", &out);

	if (rc != 0)
		fsbt_fail_long("fsbroker run -- true, exit 0x%x:\n%s", (unsigned)rc, out);
	free(out);
}

static void a_killed_runs_sandbox_and_directory_go_with_the_next_run(void **state)
{
	struct fixture *f = *state;
	char why[256], xdg[PATH_MAX + 8], dead_dir[PATH_MAX + 32];
	struct fake_run r;
	pid_t dead;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	snprintf(xdg, sizeof(xdg), "%s/xdg", f->root);
	assert_int_equal(mkdir(xdg, 0700), 0);
	setenv("XDG_RUNTIME_DIR", xdg, 1);
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	fake_run_start(&r, xdg);

	/* A run that died with nothing left but its directory. */
	if ((dead = fork()) == 0)
		_exit(0);
	assert_int_equal(waitpid(dead, NULL, 0), dead);
	run_dir(xdg, dead, dead_dir, sizeof(dead_dir));
	assert_int_equal(mkdir(dead_dir, 0700), 0);
	run_true(f);
	assert_int_equal(access(dead_dir, F_OK), -1);
	/* The live run keeps its directory and its sandbox. */
	assert_int_equal(access(r.dir, F_OK), 0);
	assert_int_equal(kill(r.inner, 0), 0);

	/* Killed, it strands its sandbox's inner process... */
	assert_int_equal(kill(r.pid, SIGKILL), 0);
	assert_int_equal(waitpid(r.pid, NULL, 0), r.pid);
	usleep(100000);
	assert_int_equal(kill(r.inner, 0), 0);
	/* ...which the next run kills, with the directory. */
	run_true(f);
	if (!ended(r.inner)) {
		kill(r.inner, SIGKILL);
		fail_msg("the stranded sandbox (pid %d) is still there after the next run",
			 (int)r.inner);
	}
	assert_int_equal(access(r.dir, F_OK), -1);
	close(r.block);
	prctl(PR_SET_CHILD_SUBREAPER, 0);
	unsetenv("XDG_RUNTIME_DIR");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			a_killed_runs_sandbox_and_directory_go_with_the_next_run, setup, teardown),
	};

	return fsbt_run_group(tests, NULL, NULL);
}
