/*
 * test_landlock.c — the sandbox's Landlock ruleset (core/linux/landlock.c).
 *
 * Landlock cannot be undone, so every check runs in a forked child that
 * applies the ruleset and reports what each call returned.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "unit.h"
#include "landlock.h"

static char tmpdir[] = "/tmp/fsbt-landlock-XXXXXX";
static char wdir[PATH_MAX], odir[PATH_MAX];

static bool unsupported(void)
{
	char why[256];

	if (fsb_landlock_probe(why, sizeof(why)) >= 1)
		return false;
	print_message("# skipped: %s\n", why);
	return true;
}

/* Results the child reports: 0 or the errno of each step. */
enum step {
	S_RESTRICT,
	S_CREATE_IN_W,
	S_MKDIR_IN_W,
	S_RENAME_IN_W,
	S_CREATE_ELSEWHERE,
	S_MKDIR_ELSEWHERE,
	S_WRITE_OPEN_ELSEWHERE,
	S_TRUNCATE_ELSEWHERE,
	S_UNLINK_ELSEWHERE,
	S_SYMLINK_ELSEWHERE,
	S_READ_ELSEWHERE,
	S_READ_ETC,
	S_EXEC_CHECK,
	S_ABSTRACT_CONNECT,
	S_SIGNAL_PARENT,
	S_ABI,
	S_SCOPED,
	S_COUNT
};

static int err_of(int r)
{
	return r < 0 ? errno : 0;
}

static int creat_at(const char *dir, const char *name)
{
	char p[PATH_MAX];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd >= 0)
		close(fd);
	return err_of(fd);
}

static void path_in(char *out, size_t n, const char *dir, const char *name)
{
	snprintf(out, n, "%s/%s", dir, name);
}

static void child(int report, const char *abstract_name)
{
	const char *writable[] = { wdir };
	struct fsb_landlock ll;
	int res[S_COUNT];
	char a[PATH_MAX], b[PATH_MAX];
	int fd, r;

	for (int i = 0; i < S_COUNT; i++)
		res[i] = -1;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		_exit(100);
	r = fsb_landlock_restrict(writable, 1, &ll);
	res[S_RESTRICT] = -r;
	res[S_ABI] = ll.abi;
	res[S_SCOPED] = ll.scoped;

	res[S_CREATE_IN_W] = creat_at(wdir, "new");
	path_in(a, sizeof(a), wdir, "sub");
	res[S_MKDIR_IN_W] = err_of(mkdir(a, 0700));
	path_in(a, sizeof(a), wdir, "new");
	path_in(b, sizeof(b), wdir, "sub/renamed");
	res[S_RENAME_IN_W] = err_of(rename(a, b));

	res[S_CREATE_ELSEWHERE] = creat_at(odir, "new");
	path_in(a, sizeof(a), odir, "sub");
	res[S_MKDIR_ELSEWHERE] = err_of(mkdir(a, 0700));
	path_in(a, sizeof(a), odir, "r");
	fd = open(a, O_WRONLY | O_CLOEXEC);
	res[S_WRITE_OPEN_ELSEWHERE] = err_of(fd);
	if (fd >= 0)
		close(fd);
	res[S_TRUNCATE_ELSEWHERE] = err_of(truncate(a, 0));
	res[S_UNLINK_ELSEWHERE] = err_of(unlink(a));
	path_in(b, sizeof(b), odir, "sym");
	res[S_SYMLINK_ELSEWHERE] = err_of(symlink("r", b));
	fd = open(a, O_RDONLY | O_CLOEXEC);
	res[S_READ_ELSEWHERE] = err_of(fd);
	if (fd >= 0)
		close(fd);
	fd = open("/etc/passwd", O_RDONLY | O_CLOEXEC);
	res[S_READ_ETC] = err_of(fd);
	if (fd >= 0)
		close(fd);
	res[S_EXEC_CHECK] = err_of(access("/bin/sh", X_OK));

	if (abstract_name) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		size_t len = strlen(abstract_name);

		memcpy(sa.sun_path + 1, abstract_name, len);
		res[S_ABSTRACT_CONNECT] =
			err_of(connect(s, (struct sockaddr *)&sa,
				       (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len)));
		close(s);
		res[S_SIGNAL_PARENT] = err_of(kill(getppid(), 0));
	}
	if (write(report, res, sizeof(res)) != (ssize_t)sizeof(res))
		_exit(101);
	_exit(0);
}

/* Fork, apply, report: fills res[] and returns the child's wait status. */
static int run(int *res, const char *abstract_name)
{
	int p[2], status;
	pid_t pid;

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		child(p[1], abstract_name);
	}
	close(p[1]);
	assert_int_equal(read(p[0], res, sizeof(int) * S_COUNT), (ssize_t)(sizeof(int) * S_COUNT));
	close(p[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

static void test_writes_only_beneath_the_writable_dir(void **state)
{
	int res[S_COUNT];
	char r[PATH_MAX];
	struct stat st;

	(void)state;
	if (unsupported())
		skip();
	assert_int_equal(run(res, NULL), 0);
	assert_int_equal(res[S_RESTRICT], 0);
	print_message("# Landlock ABI %d\n", res[S_ABI]);

	assert_int_equal(res[S_CREATE_IN_W], 0);
	assert_int_equal(res[S_MKDIR_IN_W], 0);
	assert_int_equal(res[S_RENAME_IN_W], 0);

	assert_int_equal(res[S_CREATE_ELSEWHERE], EACCES);
	assert_int_equal(res[S_MKDIR_ELSEWHERE], EACCES);
	assert_int_equal(res[S_WRITE_OPEN_ELSEWHERE], EACCES);
	if (res[S_ABI] >= 3)
		assert_int_equal(res[S_TRUNCATE_ELSEWHERE], EACCES);
	assert_int_equal(res[S_UNLINK_ELSEWHERE], EACCES);
	assert_int_equal(res[S_SYMLINK_ELSEWHERE], EACCES);

	assert_int_equal(res[S_READ_ELSEWHERE], 0);
	assert_int_equal(res[S_READ_ETC], 0);
	assert_int_equal(res[S_EXEC_CHECK], 0);

	/* Nothing outside changed. */
	path_in(r, sizeof(r), odir, "r");
	assert_int_equal(stat(r, &st), 0);
	assert_int_equal(st.st_size, 8);
	path_in(r, sizeof(r), odir, "new");
	assert_int_equal(access(r, F_OK), -1);
}

static void test_abi6_scopes_signals_and_abstract_sockets(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char name[64];
	int res[S_COUNT], ls, abi;

	(void)state;
	if (unsupported())
		skip();
	abi = fsb_landlock_probe(NULL, 0);
	if (abi < 6) {
		print_message("# skipped: Landlock ABI %d has no scoping (ABI 6, Linux 6.12)\n", abi);
		skip();
	}
	snprintf(name, sizeof(name), "fsbt-landlock-%d", (int)getpid());
	memcpy(sa.sun_path + 1, name, strlen(name));
	ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(ls >= 0);
	assert_int_equal(bind(ls, (struct sockaddr *)&sa,
			      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name))), 0);
	assert_int_equal(listen(ls, 1), 0);

	assert_int_equal(run(res, name), 0);
	close(ls);
	assert_int_equal(res[S_RESTRICT], 0);
	assert_int_equal(res[S_SCOPED], 1);
	assert_int_equal(res[S_ABSTRACT_CONNECT], EPERM);
	assert_int_equal(res[S_SIGNAL_PARENT], EPERM);
}

static void bad_path_child(int report)
{
	const char *writable[2] = { wdir, "/nonexistent/fsbt" };
	struct fsb_landlock ll;
	int res[2];

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		_exit(100);
	res[0] = fsb_landlock_restrict(writable, 2, &ll);
	res[1] = ll.failed_path == writable[1];
	if (write(report, res, sizeof(res)) != (ssize_t)sizeof(res))
		_exit(101);
	_exit(0);
}

static void test_a_missing_writable_dir_is_named(void **state)
{
	int p[2], res[2], status;
	pid_t pid;

	(void)state;
	if (unsupported())
		skip();
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		bad_path_child(p[1]);
	}
	close(p[1]);
	assert_int_equal(read(p[0], res, sizeof(res)), (ssize_t)sizeof(res));
	close(p[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(res[0], -ENOENT);
	assert_int_equal(res[1], 1);
}

static int group_setup(void **state)
{
	char path[PATH_MAX];
	int fd;

	(void)state;
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(wdir, sizeof(wdir), "%s/w", tmpdir);
	snprintf(odir, sizeof(odir), "%s/o", tmpdir);
	if (mkdir(wdir, 0700) != 0 || mkdir(odir, 0700) != 0)
		return -1;
	snprintf(path, sizeof(path), "%s/r", odir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, "content\n", 8) != 8)
		return -1;
	close(fd);
	return 0;
}

static int group_teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_writes_only_beneath_the_writable_dir),
		cmocka_unit_test(test_abi6_scopes_signals_and_abstract_sockets),
		cmocka_unit_test(test_a_missing_writable_dir_is_named),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
