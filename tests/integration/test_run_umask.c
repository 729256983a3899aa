/*
 * test_run_umask.c — creates under `fsbroker run` get the umask the
 * process has at that moment, though the core keeps each process's umask
 * (core/linux/supervisor_creds.c): after umask(2) in the same thread, in
 * another thread, in a forked child, and in a process sharing the
 * fs_struct (clone CLONE_FS). This binary is also the helper the sandbox
 * runs (`test_run_umask --helper`).
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static char self_exe[PATH_MAX];

static void make(const char *name)
{
	int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);

	if (fd >= 0)
		close(fd);
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int stage;

static void wait_stage(int s)
{
	pthread_mutex_lock(&lock);
	while (stage < s)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
}

static void set_stage(int s)
{
	pthread_mutex_lock(&lock);
	stage = s;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
}

/* The second thread: its umask is the whole process's. */
static void *other_thread(void *arg)
{
	(void)arg;
	umask(027);
	make("t-by-thread");	/* its own create: 0640 */
	set_stage(1);
	wait_stage(2);
	umask(077);		/* and no call after it while the main thread creates */
	set_stage(3);
	wait_stage(4);
	return NULL;
}

static int helper(void)
{
	pthread_t t;
	pid_t pid;
	int st;

	/* One thread. */
	umask(022);
	make("s-warm");
	umask(077);
	make("s-file");
	mkdir("s-dir", 0777);
	/* Two threads. */
	umask(022);
	make("t-warm");
	pthread_create(&t, NULL, other_thread, NULL);
	wait_stage(1);
	make("t-main");
	make("t-main2");
	set_stage(2);
	wait_stage(3);
	make("t-pending");
	set_stage(4);
	pthread_join(t, NULL);
	/* A child inherits; its own change is its own. */
	umask(022);
	make("c-warm");
	umask(007);
	make("c-parent");
	if ((pid = fork()) == 0) {
		make("c-child");
		umask(077);
		make("c-child2");
		_exit(0);
	}
	waitpid(pid, &st, 0);
	make("c-parent2");
	/* Another process sharing the fs_struct changes it. In a fresh
	 * process: the thread above left its group read from /proc for good
	 * (it trapped nothing after its last umask). */
	if ((pid = fork()) == 0) {
		pid_t sharer;

		umask(022);
		make("f-warm");
		make("f-warm2");	/* kept from here */
		sharer = (pid_t)syscall(SYS_clone, CLONE_FS | SIGCHLD, 0, 0, 0, 0);
		if (sharer == 0) {
			umask(077);
			_exit(0);
		}
		waitpid(sharer, &st, 0);
		make("f-after");
		_exit(0);
	}
	waitpid(pid, &st, 0);
	puts("helper-done");
	return 0;
}

static void mode_is(const char *ws, const char *name, mode_t want)
{
	char path[PATH_MAX * 2];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", ws, name);
	if (stat(path, &st) != 0)
		fail_msg("%s was not made: %s", name, strerror(errno));
	if ((st.st_mode & 0777) != want)
		fail_msg("%s has mode %03o, wanted %03o", name, (unsigned)(st.st_mode & 0777),
			 (unsigned)want);
}

static void creates_take_the_umask_of_the_moment(void **state)
{
	char root[] = "/var/tmp/fsbt-umask-XXXXXX", ws[PATH_MAX], home[PATH_MAX],
	     tmp[PATH_MAX], sdir[PATH_MAX], why[512], prog[PATH_MAX + 32], cmd[PATH_MAX * 2];
	char *out = NULL;
	int rc;

	(void)state;
	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	assert_non_null(mkdtemp(root));
	assert_int_equal(chmod(root, 0755), 0);
	snprintf(ws, sizeof(ws), "%s/ws", root);
	snprintf(home, sizeof(home), "%s/home", root);
	snprintf(tmp, sizeof(tmp), "%s/tmp", root);
	snprintf(sdir, sizeof(sdir), "%s/state", root);
	assert_int_equal(mkdir(ws, 0755), 0);
	assert_int_equal(mkdir(home, 0755), 0);
	assert_int_equal(mkdir(tmp, 0700), 0);
	setenv("HOME", home, 1);
	setenv("TMPDIR", tmp, 1);
	unsetenv("XDG_RUNTIME_DIR");
	unsetenv("XDG_STATE_HOME");
	fsbt_copy_program(self_exe, root, "umask-helper", prog, sizeof(prog));
	snprintf(cmd, sizeof(cmd), "cd '%s' && ASAN_OPTIONS=detect_leaks=0 '%s' --helper", ws, prog);
	rc = fsbt_run((char *[]){ (char *)fsbt_binary(), "run", "--workspace", ws, "--state-dir",
				  sdir, "--session", "s", "--", "sh", "-c", cmd, NULL }, &out);
	if (rc != 0 || out == NULL || strstr(out, "helper-done") == NULL)
		fsbt_fail_long("fsbroker run exited 0x%x:\n%s", (unsigned)rc, out ? out : "");
	free(out);
	mode_is(ws, "s-warm", 0644);
	mode_is(ws, "s-file", 0600);
	mode_is(ws, "s-dir", 0700);
	mode_is(ws, "t-warm", 0644);
	mode_is(ws, "t-by-thread", 0640);
	mode_is(ws, "t-main", 0640);
	mode_is(ws, "t-main2", 0640);
	mode_is(ws, "t-pending", 0600);
	mode_is(ws, "c-warm", 0644);
	mode_is(ws, "c-parent", 0660);
	mode_is(ws, "c-child", 0660);
	mode_is(ws, "c-child2", 0600);
	mode_is(ws, "c-parent2", 0660);
	mode_is(ws, "f-warm", 0644);
	mode_is(ws, "f-after", 0600);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (getenv("FSBT_KEEP") == NULL && system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", root);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(creates_take_the_umask_of_the_moment),
	};

	if (argc > 1 && strcmp(argv[1], "--helper") == 0)
		return helper();
	if (realpath("/proc/self/exe", self_exe) == NULL)
		return 1;
	return fsbt_run_group(tests, NULL, NULL);
}
