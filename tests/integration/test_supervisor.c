/*
 * test_supervisor.c — the seccomp supervisor through the real core: a
 * process whose filter routes write-opens and name changes to the core
 * (handed over with Supervise on the admin socket) gets them decided by the
 * pack, backed up and performed for it, a refusal as EACCES, and one
 * restore undoes them all.
 *
 * The filter here is a minimal one of the test's own (openat with write
 * flags); the product's filter and fsbroker-init are tested on their own.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SECCOMP_FILTER_FLAG_NEW_LISTENER
#define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#endif
#ifndef SECCOMP_RET_USER_NOTIF
#define SECCOMP_RET_USER_NOTIF 0x7fc00000U
#endif

/* What the child saw, one errno per step (0: worked). */
struct seen {
	int setup;		/* -1 when it could not install the filter */
	int overwrite, create_relative, secret, read_native;
	int unlinked, renamed, made_dir, symlinked, unlink_secret, unlink_dir, rmdir_file;
	int umask_file, umask_dir, deleted_cwd, bad_flags;
	int slash_unlink, slash_create, slash_rename;
	char why[128];
};

static int install_filter(void)
{
	/* openat with write flags, and the calls that change names, go to the
	 * core; everything else runs. (A jump's offset counts from the
	 * instruction after it: ALLOW is at index 15, USER_NOTIF at 16.) */
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),	/* 0 */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_openat, 0, 2),			/* 1 */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, O_WRONLY | O_RDWR | O_CREAT | O_TRUNC,
			 12, 11),							/* 3 */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_unlink, 11, 0),		/* 4 */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_unlinkat, 10, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_rmdir, 9, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_rename, 8, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_renameat, 7, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_renameat2, 6, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mkdir, 5, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mkdirat, 4, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_symlink, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_symlinkat, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_chmod, 1, 0),		/* 14 */
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),				/* 15 */
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),			/* 16 */
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -1;
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
			    SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
}

static int send_with_fd(int sock, const char *line, int fd)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = { (void *)line, strlen(line) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &msg, 0) < 0 ? -1 : 0;
}

static int errno_of(int fd)
{
	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

static void child(struct fsbt_core *c, int report)
{
	struct seen s = { 0 };
	char path[PATH_MAX + 32], line[512], reply[4096];
	int admin, listener, fd;

	snprintf(path, sizeof(path), "%s/admin.sock", c->state);
	admin = fsbt_connect_path(path);
	snprintf(line, sizeof(line), "{\"id\":1,\"command\":\"OpenScope\",\"sessionId\":\"%s\","
		 "\"toolCallId\":\"tc-sv\"}", c->session);
	if (admin < 0 || fsbt_request(admin, line, reply, sizeof(reply), NULL) <= 0 ||
	    strstr(reply, "\"ok\":true") == NULL) {
		s.setup = -1;
		snprintf(s.why, sizeof(s.why), "OpenScope failed: %s", reply);
		goto out;
	}
	umask(022);
	if ((listener = install_filter()) < 0) {
		s.setup = -1;
		snprintf(s.why, sizeof(s.why), "seccomp NEW_LISTENER: %s", strerror(errno));
		goto out;
	}
	if (send_with_fd(admin, "{\"command\":\"Supervise\"}\n", listener) < 0 ||
	    fsbt_read_reply(admin, reply, sizeof(reply), NULL) <= 0 ||
	    strstr(reply, "\"ok\":true") == NULL) {
		s.setup = -1;
		snprintf(s.why, sizeof(s.why), "Supervise failed: %s", reply);
		goto out;
	}
	close(listener);

	snprintf(path, sizeof(path), "%s/a.txt", c->ws);
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd >= 0 && write(fd, "new\n", 4) != 4)
		fd = -1;
	s.overwrite = errno_of(fd);
	if (chdir(c->ws) == 0)
		s.create_relative = errno_of(open("made.txt", O_WRONLY | O_CREAT | O_EXCL |
						  O_CLOEXEC, 0666));
	snprintf(path, sizeof(path), "%s/.ssh/id_ed25519", c->home);
	s.secret = errno_of(open(path, O_WRONLY | O_CLOEXEC));
	snprintf(path, sizeof(path), "%s/a.txt", c->ws);
	s.read_native = errno_of(open(path, O_RDONLY | O_CLOEXEC));
	/* The calls that change names, relative to the cwd (the workspace). */
	s.unlinked = unlink("gone.txt") == 0 ? 0 : errno;
	s.renamed = rename("old-name.txt", "new-name.txt") == 0 ? 0 : errno;
	s.made_dir = mkdir("made-dir", 0777) == 0 ? 0 : errno;
	s.symlinked = symlink("new-name.txt", "link") == 0 ? 0 : errno;
	snprintf(path, sizeof(path), "%s/.ssh/id_ed25519", c->home);
	s.unlink_secret = unlink(path) == 0 ? 0 : errno;
	s.unlink_dir = unlink("made-dir") == 0 ? 0 : errno;
	s.rmdir_file = rmdir("new-name.txt") == 0 ? 0 : errno;
	/* The target's umask, and only it (the core's own is not applied). */
	umask(002);
	s.umask_file = errno_of(open("group.txt", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
	s.umask_dir = mkdir("group-dir", 0777) == 0 ? 0 : errno;
	umask(022);
	/* A name under a cwd that was removed is ENOENT, as the kernel says. */
	if (mkdir("doomed", 0755) == 0 && chdir("doomed") == 0 && rmdir("../doomed") == 0)
		s.deleted_cwd = errno_of(open("x", O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
	if (chdir(c->ws) < 0)
		s.deleted_cwd = -1;
	s.bad_flags = syscall(SYS_unlinkat, AT_FDCWD, "group.txt", 0x1) == 0 ? 0 : errno;
	/* "name/" wants a directory. */
	s.slash_unlink = unlink("group.txt/") == 0 ? 0 : errno;
	s.slash_create = errno_of(open("fresh/", O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
	s.slash_rename = rename("group.txt/", "other.txt") == 0 ? 0 : errno;
out:
	if (write(report, &s, sizeof(s)) != (ssize_t)sizeof(s))
		_exit(2);
	_exit(0);
}

/* The child's calls, made and reported; skips where there is no seccomp
 * user notification. */
static void run_child(struct fsbt_core *c, struct seen *s)
{
	int p[2], status;
	pid_t pid;

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		child(c, p[1]);
	}
	close(p[1]);
	memset(s, 0, sizeof(*s));
	assert_int_equal(read(p[0], s, sizeof(*s)), (ssize_t)sizeof(*s));
	close(p[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (s->setup < 0) {
		fprintf(stderr, "# %s\n", s->why);
		if (strstr(s->why, "seccomp") != NULL)
			fsbt_skip("no seccomp user notification here: %s", s->why);
		fail_msg("%s", s->why);
	}
}

static void calls_under_the_filter_are_decided_backed_up_and_performed_by_the_core(void **state)
{
	struct fsbt_core *c = *state;
	char path[PATH_MAX + 32], *text;
	struct seen s;
	struct stat st;

	snprintf(path, sizeof(path), "%s/gone.txt", c->ws);
	fsbt_write_file(path, "gone\n");
	snprintf(path, sizeof(path), "%s/old-name.txt", c->ws);
	fsbt_write_file(path, "renamed\n");
	snprintf(path, sizeof(path), "%s/a.txt", c->ws);
	fsbt_write_file(path, "original\n");
	run_child(c, &s);
	/* The overwrite went through the core: the file holds the new text,
	 * and the store the old. */
	assert_int_equal(s.overwrite, 0);
	text = fsbt_read_file(path, NULL);
	assert_string_equal(text, "new\n");
	free(text);
	{
		char journal[PATH_MAX * 2];

		snprintf(journal, sizeof(journal),
			 "%s/sessions/%s/modify_backup/cycles/1/journal.jsonl", c->state, c->session);
		text = fsbt_read_file(journal, NULL);
		assert_non_null(text);
		assert_non_null(strstr(text, "a.txt"));
		assert_non_null(strstr(text, "\"toolCallId\":\"tc-sv\""));
		free(text);
	}
	/* Relative to the target's cwd, with the target's umask. */
	assert_int_equal(s.create_relative, 0);
	snprintf(path, sizeof(path), "%s/made.txt", c->ws);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	/* The pack denies the credential: the call fails with EACCES. */
	assert_int_equal(s.secret, EACCES);
	/* A read is not routed to the core at all. */
	assert_int_equal(s.read_native, 0);

	/* Names changed by the core, with the system calls' own errors. */
	assert_int_equal(s.unlinked, 0);
	snprintf(path, sizeof(path), "%s/gone.txt", c->ws);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(s.renamed, 0);
	snprintf(path, sizeof(path), "%s/new-name.txt", c->ws);
	assert_int_equal(access(path, F_OK), 0);
	assert_int_equal(s.made_dir, 0);
	snprintf(path, sizeof(path), "%s/made-dir", c->ws);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0755);
	assert_int_equal(s.symlinked, 0);
	assert_int_equal(s.unlink_secret, EACCES);
	snprintf(path, sizeof(path), "%s/.ssh/id_ed25519", c->home);
	assert_int_equal(access(path, F_OK), 0);
	assert_int_equal(s.unlink_dir, EISDIR);
	assert_int_equal(s.rmdir_file, ENOTDIR);

	assert_int_equal(s.umask_file, 0);
	snprintf(path, sizeof(path), "%s/group.txt", c->ws);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0664);
	assert_int_equal(s.umask_dir, 0);
	snprintf(path, sizeof(path), "%s/group-dir", c->ws);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0775);
	assert_int_equal(s.deleted_cwd, ENOENT);
	assert_int_equal(s.bad_flags, EINVAL);
	assert_int_equal(s.slash_unlink, ENOTDIR);
	assert_int_equal(s.slash_create, EISDIR);
	assert_int_equal(s.slash_rename, ENOTDIR);
	snprintf(path, sizeof(path), "%s/group.txt", c->ws);
	assert_int_equal(access(path, F_OK), 0);

	/* And one restore puts the workspace back as it was. */
	{
		char *out = NULL;
		cJSON *r = fsbt_control_cmd(c, "CommitModifyBackup", "\"commitMsg\":\"run\"");
		int rc;

		cJSON_Delete(r);
		rc = fsbt_run((char *[]){ (char *)fsbt_binary(), "backup", "restore", "--last",
					  "--state-dir", c->state, "--session", c->session, NULL },
			      &out);
		if (rc != 0)
			fail_msg("restore exited 0x%x:\n%s", (unsigned)rc, out ? out : "");
		free(out);
		snprintf(path, sizeof(path), "%s/gone.txt", c->ws);
		text = fsbt_read_file(path, NULL);
		assert_non_null(text);
		assert_string_equal(text, "gone\n");
		free(text);
		snprintf(path, sizeof(path), "%s/a.txt", c->ws);
		text = fsbt_read_file(path, NULL);
		assert_string_equal(text, "original\n");
		free(text);
		snprintf(path, sizeof(path), "%s/new-name.txt", c->ws);
		assert_int_equal(access(path, F_OK), -1);
		snprintf(path, sizeof(path), "%s/made-dir", c->ws);
		assert_int_equal(access(path, F_OK), -1);
	}
}

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

/* Whether this kernel takes SYNC_WAKE_UP (Linux 6.6): asked of a listener
 * of a child's own, which exits at once. */
static bool kernel_has_sync_wake_up(void)
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		int listener = install_filter();

		_exit(listener >= 0 && ioctl(listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS,
					     SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, 0) == 0 ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/*
 * The supervisor asks for synchronous wake-ups where the kernel has them,
 * and FSBROKER_SYNC_WAKE_UP=0 (how `make test` runs the supervisor suites
 * a second time) keeps the old ones: Stats counts the supervisors started
 * each way.
 */
static void the_supervisor_wakes_up_synchronously_unless_told_not_to(void **state)
{
	struct fsbt_core *c = *state;
	const char *v = getenv("FSBROKER_SYNC_WAKE_UP");
	bool want_sync = !(v != NULL && strcmp(v, "0") == 0) && kernel_has_sync_wake_up();
	struct seen s;
	cJSON *r;
	double sync, plain;

	run_child(c, &s);
	assert_int_equal(s.overwrite, ENOENT);	/* no a.txt here: still served */
	r = fsbt_control_cmd(c, "Stats", NULL);
	sync = cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "supervisors"),
							 "syncWakeUp"));
	plain = cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "supervisors"),
							  "plainWakeUp"));
	cJSON_Delete(r);
	fprintf(stderr, "# SYNC_WAKE_UP %s\n", want_sync ? "expected" : "not expected");
	assert_true(sync == (want_sync ? 1 : 0));
	assert_true(plain == (want_sync ? 0 : 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(calls_under_the_filter_are_decided_backed_up_and_performed_by_the_core,
						fsbt_setup_core, fsbt_teardown_core),
		cmocka_unit_test_setup_teardown(the_supervisor_wakes_up_synchronously_unless_told_not_to,
						fsbt_setup_core, fsbt_teardown_core),
	};

	return fsbt_run_group(tests, NULL, NULL);
}
