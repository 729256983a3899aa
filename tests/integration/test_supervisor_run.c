/*
 * test_supervisor_run.c — the supervisor under `fsbroker run` itself
 * (bubblewrap, fsbroker-init, the product's filter): read-only openat2,
 * the target's own fds named as paths (/dev/stderr, /proc/self/fd/N), and
 * a pack with reads = "broker". This binary is also the helper program
 * the sandbox runs (`test_supervisor_run --openat2`), for calls no shell
 * makes.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static char self_exe[PATH_MAX];

struct fixture {
	char root[PATH_MAX];
	char home[PATH_MAX + 8], ws[PATH_MAX + 8], tmp[PATH_MAX + 8], state[PATH_MAX + 8];
	char rules[PATH_MAX + 16];
};

/* Inside the sandbox: openat2 the way programs that use it do. */
static int openat2_helper(void)
{
	struct open_how dir = { .flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC };
	struct open_how file = { .flags = O_RDONLY | O_CLOEXEC };
	struct open_how path = { .flags = O_PATH | O_CLOEXEC };
	char buf[32] = { 0 };
	long fd;
	int e_dir, e_file, e_notdir, e_secret, e_path;

	fd = syscall(SYS_openat2, AT_FDCWD, ".", &dir, sizeof(dir));
	e_dir = fd < 0 ? errno : (close((int)fd), 0);
	fd = syscall(SYS_openat2, AT_FDCWD, "ok.txt", &file, sizeof(file));
	e_file = fd < 0 ? errno : 0;
	if (fd >= 0 && read((int)fd, buf, sizeof(buf) - 1) < 0)
		e_file = errno;
	if (fd >= 0)
		close((int)fd);
	fd = syscall(SYS_openat2, AT_FDCWD, "ok.txt", &dir, sizeof(dir));
	e_notdir = fd < 0 ? errno : (close((int)fd), 0);
	fd = syscall(SYS_openat2, AT_FDCWD, ".env", &file, sizeof(file));
	e_secret = fd < 0 ? errno : (close((int)fd), 0);
	fd = syscall(SYS_openat2, AT_FDCWD, "sub", &path, sizeof(path));
	e_path = fd < 0 ? errno : (close((int)fd), 0);
	printf("dir=%d file=%d content=%s notdir=%d secret=%d path=%d\n", e_dir, e_file,
	       buf[0] ? strtok(buf, "\n") : "-", e_notdir, e_secret, e_path);
	return 0;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char path[PATH_MAX * 2];

	assert_non_null(f);
	snprintf(f->root, sizeof(f->root), "/var/tmp/fsbt-svrun-XXXXXX");
	assert_non_null(mkdtemp(f->root));
	assert_int_equal(chmod(f->root, 0755), 0);
	snprintf(f->home, sizeof(f->home), "%s/home", f->root);
	snprintf(f->ws, sizeof(f->ws), "%s/ws", f->root);
	snprintf(f->tmp, sizeof(f->tmp), "%s/tmp", f->root);
	snprintf(f->state, sizeof(f->state), "%s/state", f->root);
	snprintf(f->rules, sizeof(f->rules), "%s/broker-reads.lua", f->root);
	assert_int_equal(mkdir(f->home, 0755), 0);
	assert_int_equal(mkdir(f->ws, 0755), 0);
	assert_int_equal(mkdir(f->tmp, 0700), 0);
	snprintf(path, sizeof(path), "%s/sub", f->ws);
	assert_int_equal(mkdir(path, 0755), 0);
	fsbt_put(f->ws, "ok.txt", "allowed\n");
	fsbt_put(f->ws, ".env", "SECRET=1\n");
	fsbt_put(f->ws, ".envrc", "ENVRC\n");
	fsbt_put(f->ws, "a.txt", "old a\n");
	fsbt_write_file(f->rules, "return { name = \"broker-reads\", include = { \"default\" }, "
			"reads = \"broker\" }\n");
	setenv("HOME", f->home, 1);
	setenv("TMPDIR", f->tmp, 1);
	unsetenv("XDG_RUNTIME_DIR");
	unsetenv("XDG_STATE_HOME");
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->root);
	if (getenv("FSBT_KEEP") == NULL && system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", f->root);
	free(f);
	return 0;
}

/* fsbroker run [--rules R] … -- sh -c SCRIPT, in the workspace. */
static int run_sh(struct fixture *f, const char *rules, const char *script, char **out)
{
	char *argv[20];
	int n = 0;

	argv[n++] = (char *)fsbt_binary();
	argv[n++] = "run";
	if (rules != NULL) {
		argv[n++] = "--rules";
		argv[n++] = (char *)rules;
	}
	argv[n++] = "--workspace";
	argv[n++] = f->ws;
	argv[n++] = "--state-dir";
	argv[n++] = f->state;
	argv[n++] = "--session";
	argv[n++] = "s";
	argv[n++] = "--";
	argv[n++] = "sh";
	argv[n++] = "-c";
	argv[n++] = (char *)script;
	argv[n] = NULL;
	return fsbt_run(argv, out);
}

static void read_only_openat2_is_answered_as_the_kernel_would(void **state)
{
	struct fixture *f = *state;
	char why[512], script[PATH_MAX * 3], want[128], helper[PATH_MAX + 32], *out = NULL;
	int st;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	/* A sanitizer build of the helper: LeakSanitizer cannot run in the
	 * sandbox (it needs to ptrace itself), and finds nothing there. */
	fsbt_copy_program(self_exe, f->root, "openat2-helper", helper, sizeof(helper));
	snprintf(script, sizeof(script), "cd '%s' && ASAN_OPTIONS=detect_leaks=0 '%s' --openat2",
		 f->ws, helper);
	st = run_sh(f, NULL, script, &out);
	if (st != 0)
		fail_msg("fsbroker run exited 0x%x:\n%s", (unsigned)st, out ? out : "");
	/* A directory, a file, O_DIRECTORY on a file, a denyRead file, O_PATH. */
	snprintf(want, sizeof(want), "dir=0 file=0 content=allowed notdir=%d secret=%d path=0",
		 ENOTDIR, EACCES);
	if (out == NULL || strstr(out, want) == NULL)
		fail_msg("wanted \"%s\":\n%s", want, out ? out : "");
	free(out);
}

static void the_targets_own_fds_open_by_name(void **state)
{
	struct fixture *f = *state;
	char why[512], path[PATH_MAX * 2], *out = NULL, *text;
	int st;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	/* stdout and stderr are pipes here (fsbt_run): init's, so allowed.
	 * fd 5 is a read-only fd on a workspace file: a write-open of
	 * /proc/self/fd/5 is judged by that file's name and backed up; fd 6
	 * on the denyModify .envrc is refused. */
	st = run_sh(f, NULL,
		    "echo to-stderr > /dev/stderr && echo to-stdout > /dev/stdout && "
		    "echo to-fd > /dev/fd/2 && exec 5<a.txt 6<.envrc && "
		    "echo rewritten > /proc/self/fd/5 && "
		    "{ echo nope > /dev/fd/6 && echo envrc-written || echo envrc-refused; }",
		    &out);
	if (st != 0)
		fail_msg("fsbroker run exited 0x%x:\n%s", (unsigned)st, out ? out : "");
	if (strstr(out, "to-stderr") == NULL || strstr(out, "to-stdout") == NULL ||
	    strstr(out, "to-fd") == NULL || strstr(out, "envrc-refused") == NULL)
		fail_msg("unexpected output:\n%s", out);
	free(out);
	snprintf(path, sizeof(path), "%s/a.txt", f->ws);
	text = fsbt_read_file(path, NULL);
	assert_string_equal(text, "rewritten\n");
	free(text);
	snprintf(path, sizeof(path), "%s/.envrc", f->ws);
	text = fsbt_read_file(path, NULL);
	assert_string_equal(text, "ENVRC\n");
	free(text);
	/* The write through the fd's name is in the cycle: a restore undoes it. */
	out = NULL;
	st = fsbt_run((char *[]){ (char *)fsbt_binary(), "backup", "restore", "--last",
				  "--state-dir", f->state, "--session", "s", NULL }, &out);
	if (st != 0)
		fail_msg("restore exited 0x%x:\n%s", (unsigned)st, out ? out : "");
	free(out);
	snprintf(path, sizeof(path), "%s/a.txt", f->ws);
	text = fsbt_read_file(path, NULL);
	assert_string_equal(text, "old a\n");
	free(text);
}

static void reads_broker_refuses_a_denied_read_and_serves_the_rest(void **state)
{
	struct fixture *f = *state;
	char why[512], *out = NULL;
	int st;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	st = run_sh(f, f->rules, "cat ok.txt && { cat .env || echo \"env-refused $?\"; }", &out);
	if (st != 0)
		fail_msg("fsbroker run exited 0x%x:\n%s", (unsigned)st, out ? out : "");
	if (strstr(out, "allowed") == NULL || strstr(out, "env-refused 1") == NULL ||
	    strstr(out, "SECRET") != NULL || strstr(out, "Permission denied") == NULL)
		fail_msg("unexpected output:\n%s", out);
	if (strstr(out, "refused: read of ") == NULL || strstr(out, "(denyRead **/.env)") == NULL)
		fail_msg("the summary does not name the refused read:\n%s", out);
	free(out);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(read_only_openat2_is_answered_as_the_kernel_would,
						setup, teardown),
		cmocka_unit_test_setup_teardown(the_targets_own_fds_open_by_name, setup, teardown),
		cmocka_unit_test_setup_teardown(reads_broker_refuses_a_denied_read_and_serves_the_rest,
						setup, teardown),
	};

	if (argc > 1 && strcmp(argv[1], "--openat2") == 0)
		return openat2_helper();
	if (realpath("/proc/self/exe", self_exe) == NULL)
		return 1;
	return fsbt_run_group(tests, NULL, NULL);
}
