/*
 * test_supervisor_calls.c — the calls of DESIGN §7.3 beyond opens and
 * name changes, under the product's own seccomp filter and the real core:
 * truncate, the utimes family, the chown family, mknod, renameat2 flags,
 * linkat of an fd and link without following, inode-flag ioctls. Each one
 * the pack allows changes the file, lands in the backup cycle, and one
 * restore undoes it; each one on a denyModify file (.envrc) fails with
 * EACCES and leaves it as it was. A metadata call on an fd of a file the
 * supervisor made takes the create's verdict only while nothing it rests
 * on changed (supervisor_made.c): a reload, a decide hook, a host
 * operation that moves it, a second name.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "seccomp_filter.h"

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif
#ifndef RENAME_WHITEOUT
#define RENAME_WHITEOUT (1 << 2)
#endif

#define OTHER_ID 4321

/* What the child saw, one errno per call (0: it worked). */
struct seen {
	int setup;
	char why[160];
	int truncate_ok, truncate_denied;
	int utimensat_ok, utimes_ok, omit_ok, futimens_ok, nofollow_ok, utime_denied;
	int chown_same, chown_other, chown_denied, lchown_ok;
	int mkfifo_ok, mknod_reg_ok, mknod_dev, mknod_denied, mkfifo_umask002;
	int exchange_ok, exchange_denied, whiteout, exchange_bad;
	int link_fd_ok, link_proc_ok, link_nofollow_ok, link_denied;
	int setflags;
};

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

#define ERR(call) ((call) == 0 ? 0 : errno)

/* Under the product's filter, supervised by the core: the calls. */
static int supervise(struct fsbt_core *c, struct seen *s)
{
	char path[PATH_MAX + 32], line[512], reply[4096];
	struct fsb_filter_opts opts = { 0 };
	int admin, listener;

	snprintf(path, sizeof(path), "%s/admin.sock", c->state);
	admin = fsbt_connect_path(path);
	snprintf(line, sizeof(line), "{\"id\":1,\"command\":\"OpenScope\",\"sessionId\":\"%s\","
		 "\"toolCallId\":\"tc-calls\"}", c->session);
	if (admin < 0 || fsbt_request(admin, line, reply, sizeof(reply), NULL) <= 0 ||
	    strstr(reply, "\"ok\":true") == NULL) {
		snprintf(s->why, sizeof(s->why), "OpenScope failed: %s", reply);
		return -1;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    fsb_seccomp_install(&opts, &listener) < 0) {
		snprintf(s->why, sizeof(s->why), "seccomp filter: %s", strerror(errno));
		return -1;
	}
	if (send_with_fd(admin, "{\"command\":\"Supervise\"}\n", listener) < 0 ||
	    fsbt_read_reply(admin, reply, sizeof(reply), NULL) <= 0 ||
	    strstr(reply, "\"ok\":true") == NULL) {
		snprintf(s->why, sizeof(s->why), "Supervise failed: %s", reply);
		return -1;
	}
	close(listener);
	return 0;
}

static void child(struct fsbt_core *c, int report)
{
	struct seen s = { 0 };
	struct timespec ts[2];
	struct timeval tv[2];
	char proc[64];
	int fd;

	if (chdir(c->ws) < 0 || supervise(c, &s) < 0) {
		s.setup = -1;
		goto out;
	}
	umask(022);
	/* 1. truncate */
	s.truncate_ok = ERR(truncate("t.txt", 4));
	s.truncate_denied = ERR(truncate(".envrc", 0));
	/* 2. times */
	ts[0] = (struct timespec){ 1000000000, 5 };
	ts[1] = (struct timespec){ 1000000100, 7 };
	s.utimensat_ok = ERR(utimensat(AT_FDCWD, "times.txt", ts, 0));
	tv[0] = (struct timeval){ 1100000000, 0 };
	tv[1] = (struct timeval){ 1100000200, 9 };
	s.utimes_ok = ERR(utimes("utimes.txt", tv));
	ts[0] = (struct timespec){ 0, UTIME_OMIT };
	ts[1] = (struct timespec){ 1200000000, 0 };
	s.omit_ok = ERR(utimensat(AT_FDCWD, "omit.txt", ts, 0));
	fd = open("fd-times.txt", O_RDONLY | O_CLOEXEC);
	ts[0] = ts[1] = (struct timespec){ 1300000000, 0 };
	s.futimens_ok = fd < 0 ? errno : ERR(futimens(fd, ts));
	if (fd >= 0)
		close(fd);
	ts[0] = ts[1] = (struct timespec){ 1400000000, 0 };
	s.nofollow_ok = ERR(utimensat(AT_FDCWD, "tlink", ts, AT_SYMLINK_NOFOLLOW));
	s.utime_denied = ERR(utimensat(AT_FDCWD, ".envrc", ts, 0));
	/* 3. owner */
	s.chown_same = ERR(chown("own.txt", getuid(), getgid()));
	s.chown_other = ERR(chown("own.txt", OTHER_ID, OTHER_ID));
	s.chown_denied = ERR(chown(".envrc", OTHER_ID, OTHER_ID));
	s.lchown_ok = ERR(lchown("tlink", OTHER_ID, -1));
	/* 4. mknod */
	s.mkfifo_ok = ERR(mkfifo("fifo", 0666));
	s.mknod_reg_ok = ERR(mknod("plain", S_IFREG | 0666, 0));
	/* The target's umask, not the core's (022), makes the mode. */
	umask(002);
	s.mkfifo_umask002 = ERR(mkfifo("fifo-g", 0666));
	umask(022);
	s.mknod_dev = ERR(mknod("null2", S_IFCHR | 0600, makedev(1, 3)));
	s.mknod_denied = ERR(mknod("sub/.envrc", S_IFIFO | 0600, 0));
	/* 5. renameat2 flags */
	s.exchange_ok = ERR(syscall(SYS_renameat2, AT_FDCWD, "x.txt", AT_FDCWD, "y.txt",
				    RENAME_EXCHANGE));
	s.exchange_denied = ERR(syscall(SYS_renameat2, AT_FDCWD, "x.txt", AT_FDCWD, ".envrc",
					RENAME_EXCHANGE));
	s.whiteout = ERR(syscall(SYS_renameat2, AT_FDCWD, "x.txt", AT_FDCWD, "w.txt",
				 RENAME_WHITEOUT));
	s.exchange_bad = ERR(syscall(SYS_renameat2, AT_FDCWD, "x.txt", AT_FDCWD, "y.txt",
				     RENAME_EXCHANGE | RENAME_NOREPLACE));
	/* 6. links */
	fd = open("src.txt", O_RDONLY | O_CLOEXEC);
	s.link_fd_ok = fd < 0 ? errno : ERR(linkat(fd, "", AT_FDCWD, "published.txt",
						   AT_EMPTY_PATH));
	/* A second name for one file asks under the default pack (hardlinks
	 * = "ask"): another file for the second way. */
	{
		int fd2 = open("src2.txt", O_RDONLY | O_CLOEXEC);

		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd2);
		s.link_proc_ok = fd2 < 0 ? errno : ERR(linkat(AT_FDCWD, proc, AT_FDCWD,
							      "via-proc.txt", AT_SYMLINK_FOLLOW));
		if (fd2 >= 0)
			close(fd2);
	}
	/* 9. inode flags */
	{
		int flags = FS_APPEND_FL;

		s.setflags = fd < 0 ? errno : ERR(ioctl(fd, FS_IOC_SETFLAGS, &flags));
	}
	if (fd >= 0)
		close(fd);
	s.link_nofollow_ok = ERR(link("tlink", "tlink2"));
	s.link_denied = ERR(link(".envrc", "envrc-link"));
out:
	if (write(report, &s, sizeof(s)) != (ssize_t)sizeof(s))
		_exit(2);
	_exit(0);
}

static void put(struct fsbt_core *c, const char *name, const char *text)
{
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/%s", c->ws, name);
	fsbt_write_file(path, text);
}

static char *ws_path(struct fsbt_core *c, const char *name)
{
	static char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/%s", c->ws, name);
	return path;
}

static void assert_text(struct fsbt_core *c, const char *name, const char *want)
{
	char *text = fsbt_read_file(ws_path(c, name), NULL);

	if (text == NULL || strcmp(text, want) != 0)
		fail_msg("%s holds \"%s\", not \"%s\"", name, text ? text : "(nothing)", want);
	free(text);
}

static void lstat_of(struct fsbt_core *c, const char *name, struct stat *st)
{
	if (lstat(ws_path(c, name), st) < 0)
		fail_msg("lstat %s: %s", name, strerror(errno));
}

static void calls_are_performed_backed_up_and_undone(void **state)
{
	struct fsbt_core *c = *state;
	struct stat st, envrc_before, tlink_before, target_before;
	struct seen s;
	int p[2], status;
	char *journal, jpath[PATH_MAX * 2], *out = NULL;
	pid_t pid;
	bool root = geteuid() == 0;

	put(c, "t.txt", "0123456789");
	put(c, ".envrc", "ENV\n");
	put(c, "times.txt", "times\n");
	put(c, "utimes.txt", "utimes\n");
	put(c, "omit.txt", "omit\n");
	put(c, "fd-times.txt", "fd\n");
	put(c, "own.txt", "own\n");
	put(c, "x.txt", "ex\n");
	put(c, "y.txt", "why\n");
	put(c, "src.txt", "source\n");
	put(c, "src2.txt", "source two\n");
	assert_int_equal(mkdir(ws_path(c, "sub"), 0755), 0);
	assert_int_equal(symlink("t.txt", ws_path(c, "tlink")), 0);
	lstat_of(c, ".envrc", &envrc_before);
	lstat_of(c, "tlink", &tlink_before);
	lstat_of(c, "t.txt", &target_before);

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		child(c, p[1]);
	}
	close(p[1]);
	memset(&s, 0, sizeof(s));
	assert_int_equal(read(p[0], &s, sizeof(s)), (ssize_t)sizeof(s));
	close(p[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (s.setup < 0) {
		if (strstr(s.why, "seccomp") != NULL)
			fsbt_skip("no seccomp user notification here: %s", s.why);
		fail_msg("%s", s.why);
	}

	/* 1. truncate */
	assert_int_equal(s.truncate_ok, 0);
	assert_text(c, "t.txt", "0123");
	assert_int_equal(s.truncate_denied, EACCES);
	/* 2. times, as given; UTIME_OMIT keeps; NOFOLLOW on the link itself */
	assert_int_equal(s.utimensat_ok, 0);
	lstat_of(c, "times.txt", &st);
	assert_int_equal(st.st_atim.tv_sec, 1000000000);
	assert_int_equal(st.st_atim.tv_nsec, 5);
	assert_int_equal(st.st_mtim.tv_sec, 1000000100);
	assert_int_equal(st.st_mtim.tv_nsec, 7);
	assert_int_equal(s.utimes_ok, 0);
	lstat_of(c, "utimes.txt", &st);
	assert_int_equal(st.st_mtim.tv_sec, 1100000200);
	assert_int_equal(st.st_mtim.tv_nsec, 9000);
	assert_int_equal(s.omit_ok, 0);
	lstat_of(c, "omit.txt", &st);
	assert_int_equal(st.st_mtim.tv_sec, 1200000000);
	assert_true(st.st_atim.tv_sec != 0);
	assert_true(st.st_atim.tv_sec > 1200000000);
	assert_int_equal(s.futimens_ok, 0);
	lstat_of(c, "fd-times.txt", &st);
	assert_int_equal(st.st_mtim.tv_sec, 1300000000);
	assert_int_equal(s.nofollow_ok, 0);
	lstat_of(c, "tlink", &st);
	assert_int_equal(st.st_mtim.tv_sec, 1400000000);
	lstat_of(c, "t.txt", &st);
	assert_true(st.st_mtim.tv_sec != 1400000000);
	assert_int_equal(s.utime_denied, EACCES);
	/* 3. owner */
	assert_int_equal(s.chown_same, 0);
	assert_int_equal(s.chown_denied, EACCES);
	if (root) {
		assert_int_equal(s.chown_other, 0);
		lstat_of(c, "own.txt", &st);
		assert_int_equal(st.st_uid, OTHER_ID);
		assert_int_equal(st.st_gid, OTHER_ID);
		assert_int_equal(s.lchown_ok, 0);
		lstat_of(c, "tlink", &st);
		assert_int_equal(st.st_uid, OTHER_ID);
		lstat_of(c, "t.txt", &st);
		assert_int_equal(st.st_uid, target_before.st_uid);
	} else {
		assert_int_equal(s.chown_other, EPERM);	/* the kernel's answer */
	}
	/* 4. mknod */
	assert_int_equal(s.mkfifo_ok, 0);
	lstat_of(c, "fifo", &st);
	assert_true(S_ISFIFO(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0644);
	assert_int_equal(s.mkfifo_umask002, 0);
	lstat_of(c, "fifo-g", &st);
	assert_int_equal(st.st_mode & 0777, 0664);
	assert_int_equal(s.mknod_reg_ok, 0);
	lstat_of(c, "plain", &st);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(s.mknod_dev, EPERM);
	assert_int_equal(access(ws_path(c, "null2"), F_OK), -1);
	assert_int_equal(s.mknod_denied, EACCES);
	assert_int_equal(access(ws_path(c, "sub/.envrc"), F_OK), -1);
	/* 5. renameat2 */
	assert_int_equal(s.exchange_ok, 0);
	assert_text(c, "x.txt", "why\n");
	assert_text(c, "y.txt", "ex\n");
	assert_int_equal(s.exchange_denied, EACCES);
	assert_int_equal(s.whiteout, EPERM);
	assert_int_equal(s.exchange_bad, EINVAL);
	/* 6. links */
	assert_int_equal(s.link_fd_ok, 0);
	assert_text(c, "published.txt", "source\n");
	assert_int_equal(s.link_proc_ok, 0);
	assert_text(c, "via-proc.txt", "source two\n");
	assert_int_equal(s.link_nofollow_ok, 0);
	lstat_of(c, "tlink2", &st);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(s.link_denied, EACCES);
	assert_int_equal(access(ws_path(c, "envrc-link"), F_OK), -1);
	/* 9. inode flags */
	assert_int_equal(s.setflags, EPERM);
	/* The denyModify file is as it was. */
	assert_text(c, ".envrc", "ENV\n");
	lstat_of(c, ".envrc", &st);
	assert_int_equal(st.st_mtim.tv_sec, envrc_before.st_mtim.tv_sec);
	assert_int_equal(st.st_mtim.tv_nsec, envrc_before.st_mtim.tv_nsec);
	assert_int_equal(st.st_uid, envrc_before.st_uid);
	assert_int_equal(st.st_ino, envrc_before.st_ino);

	/* In the cycle: each changed path. */
	snprintf(jpath, sizeof(jpath), "%s/sessions/%s/modify_backup/cycles/1/journal.jsonl",
		 c->state, c->session);
	journal = fsbt_read_file(jpath, NULL);
	assert_non_null(journal);
	for (const char *const *n = (const char *const[]){ "t.txt", "times.txt", "utimes.txt",
			"omit.txt", "fd-times.txt", "own.txt", "fifo", "plain", "x.txt", "y.txt",
			"published.txt", "via-proc.txt", "tlink2", NULL }; *n; n++) {
		char key[64];

		snprintf(key, sizeof(key), "/%s\"", *n);
		if (strstr(journal, key) == NULL)
			fail_msg("%s is not in the cycle's journal:\n%s", *n, journal);
	}
	assert_null(strstr(journal, ".envrc\""));
	free(journal);

	/* One restore undoes them all. */
	cJSON_Delete(fsbt_control_cmd(c, "CommitModifyBackup", "\"commitMsg\":\"calls\""));
	status = fsbt_run((char *[]){ (char *)fsbt_binary(), "backup", "restore", "--last",
				      "--state-dir", c->state, "--session", c->session, NULL },
			  &out);
	if (status != 0)
		fail_msg("restore exited 0x%x:\n%s", (unsigned)status, out ? out : "");
	free(out);
	assert_text(c, "t.txt", "0123456789");
	assert_text(c, "x.txt", "ex\n");
	assert_text(c, "y.txt", "why\n");
	lstat_of(c, "times.txt", &st);
	assert_true(st.st_mtim.tv_sec != 1000000100);
	lstat_of(c, "utimes.txt", &st);
	assert_true(st.st_mtim.tv_sec != 1100000200);
	lstat_of(c, "fd-times.txt", &st);
	assert_true(st.st_mtim.tv_sec != 1300000000);
	lstat_of(c, "own.txt", &st);
	assert_int_equal(st.st_uid, envrc_before.st_uid);
	assert_int_equal(st.st_gid, envrc_before.st_gid);
	lstat_of(c, "tlink", &st);
	assert_int_equal(st.st_mtim.tv_sec, tlink_before.st_mtim.tv_sec);
	for (const char *const *n = (const char *const[]){ "fifo", "plain", "published.txt",
			"via-proc.txt", "tlink2", NULL }; *n; n++)
		if (access(ws_path(c, *n), F_OK) == 0 || errno != ENOENT)
			fail_msg("%s is still there after the restore", *n);
}

/* A create under another fsuid: made as that user, as the kernel would. */
static void creates_take_the_targets_fsuid(void **state)
{
	struct fsbt_core *c = *state;
	struct { int setup, shared, closed, fifo; char why[160]; } s = { 0 };
	struct stat st;
	int p[2], status;
	pid_t pid;

	if (geteuid() != 0)
		fsbt_skip("needs root: the core must be able to take on another fsuid");
	assert_int_equal(mkdir(ws_path(c, "shared"), 0777), 0);
	assert_int_equal(chmod(ws_path(c, "shared"), 0777), 0);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct seen tmp = { 0 };
		int fd;

		close(p[0]);
		if (chdir(c->ws) < 0 || supervise(c, &tmp) < 0) {
			s.setup = -1;
			snprintf(s.why, sizeof(s.why), "%s", tmp.why);
		} else {
			umask(022);
			setfsgid(OTHER_ID);
			setfsuid(OTHER_ID);
			fd = open("shared/mine.txt", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
			s.shared = fd < 0 ? errno : 0;
			if (fd >= 0)
				close(fd);
			fd = open("not-mine.txt", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
			s.closed = fd < 0 ? errno : 0;
			if (fd >= 0)
				close(fd);
			s.fifo = ERR(mkfifo("shared/pipe", 0666));
		}
		if (write(p[1], &s, sizeof(s)) != (ssize_t)sizeof(s))
			_exit(2);
		_exit(0);
	}
	close(p[1]);
	assert_int_equal(read(p[0], &s, sizeof(s)), (ssize_t)sizeof(s));
	close(p[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (s.setup < 0) {
		if (strstr(s.why, "seccomp") != NULL)
			fsbt_skip("no seccomp user notification here: %s", s.why);
		fail_msg("%s", s.why);
	}
	assert_int_equal(s.shared, 0);
	lstat_of(c, "shared/mine.txt", &st);
	assert_int_equal(st.st_uid, OTHER_ID);
	assert_int_equal(st.st_gid, OTHER_ID);
	assert_int_equal(st.st_mode & 0777, 0644);
	/* The workspace is root's and 0755: that user may not create there. */
	assert_int_equal(s.closed, EACCES);
	assert_int_equal(access(ws_path(c, "not-mine.txt"), F_OK), -1);
	assert_int_equal(s.fifo, 0);
	lstat_of(c, "shared/pipe", &st);
	assert_int_equal(st.st_uid, OTHER_ID);
}

/* ---- metadata calls on a file the supervisor made ----------------------- */

/* What happens between the create and the second round of calls. */
enum made_step { MADE_WAIT, MADE_LINK, MADE_REOPEN };

struct made_seen {
	int setup;
	char why[160];
	int create, first, link, second, times;
};

/* Make made.txt, fchmod it, (link it), tell the parent, wait for its go,
 * then fchmod and futimens it again: one errno each. */
static void made_child(struct fsbt_core *c, int report, int ready, int go, enum made_step step)
{
	struct made_seen m = { 0 };
	struct seen s = { 0 };
	char byte = 'c';
	int fd;

	if (supervise(c, &s) < 0 || chdir(c->ws) < 0) {
		m.setup = -1;
		snprintf(m.why, sizeof(m.why), "%s", s.why[0] ? s.why : strerror(errno));
		goto out;
	}
	fd = open("made.txt", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	m.create = fd < 0 ? errno : 0;
	if (fd < 0)
		goto out;
	m.first = ERR(fchmod(fd, 0600));
	if (step == MADE_LINK)
		m.link = ERR(linkat(fd, "", AT_FDCWD, "second.txt", AT_EMPTY_PATH));
	if (step == MADE_REOPEN)
		close(fd);
	if (write(ready, &byte, 1) != 1 || read(go, &byte, 1) != 1)
		_exit(3);
	if (step == MADE_REOPEN && (fd = open("guarded.txt", O_RDONLY | O_CLOEXEC)) < 0)
		_exit(4);
	m.second = ERR(fchmod(fd, 0640));
	m.times = ERR(futimens(fd, NULL));
	close(fd);
out:
	if (write(report, &m, sizeof(m)) != (ssize_t)sizeof(m))
		_exit(2);
	_exit(0);
}

/* The pack of these tests: the workspace modifiable, `more` added. */
static void made_pack(struct fsbt_core *c, const char *more)
{
	char tmp[PATH_MAX + 16], *text;

	assert_true(asprintf(&text, "return {\n"
				    "  name = \"made\",\n"
				    "  fsProfile = { read = { \"/**\" }, modify = { \"${workspace}/**\" } },\n"
				    "%s}\n", more) > 0);
	snprintf(c->rules, sizeof(c->rules), "%s/made.lua", c->rules_dir);
	snprintf(tmp, sizeof(tmp), "%s/.made.lua.new", c->rules_dir);
	fsbt_write_file(tmp, text);
	free(text);
	if (rename(tmp, c->rules) < 0)
		fail_msg("rename %s: %s", tmp, strerror(errno));
}

/* Fork the child, run `between` once it made the file, let it go on. */
static void made_run(struct fsbt_core *c, enum made_step step,
		     void (*between)(struct fsbt_core *c), struct made_seen *m)
{
	int report[2], ready[2], go[2], status;
	char byte;
	pid_t pid;

	assert_int_equal(pipe2(report, O_CLOEXEC), 0);
	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	assert_int_equal(pipe2(go, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		made_child(c, report[1], ready[1], go[0], step);
	close(report[1]);
	close(ready[1]);
	close(go[0]);
	if (read(ready[0], &byte, 1) == 1) {
		if (between != NULL)
			between(c);
		assert_int_equal(write(go[1], "g", 1), 1);
	}
	memset(m, 0, sizeof(*m));
	assert_int_equal(read(report[0], m, sizeof(*m)), (ssize_t)sizeof(*m));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	close(report[0]);
	close(ready[0]);
	close(go[1]);
	if (m->setup < 0) {
		if (strstr(m->why, "seccomp") != NULL)
			fsbt_skip("no seccomp user notification here: %s", m->why);
		fail_msg("%s", m->why);
	}
	assert_int_equal(m->create, 0);
}

static void deny_made_and_reload(struct fsbt_core *c)
{
	cJSON *r;

	made_pack(c, "  denyModify = { \"${workspace}/made.txt\" },\n");
	r = fsbt_control_cmd(c, "Reload", NULL);
	if (!fsbt_ok(r))
		fail_msg("Reload failed: %s", fsbt_str(r, "error"));
	cJSON_Delete(r);
}

/* The create's allow answered the first fchmod; after a reload that
 * denies the file, its fd's calls are refused and change nothing. */
static void a_made_files_calls_are_judged_again_after_a_reload(void **state)
{
	struct fsbt_core *c = *state;
	struct made_seen m;
	struct stat st;

	made_pack(c, "");
	fsbt_core_start(c);
	made_run(c, MADE_WAIT, deny_made_and_reload, &m);
	assert_int_equal(m.first, 0);
	assert_int_equal(m.second, EACCES);
	assert_int_equal(m.times, EACCES);
	lstat_of(c, "made.txt", &st);
	assert_int_equal(st.st_mode & 0777, 0600);
}

/* A decide hook may judge a chmod unlike the create: with one, the fd's
 * calls are judged by the pack every time. */
static void a_decide_hook_judges_every_call_on_a_made_file(void **state)
{
	struct fsbt_core *c = *state;
	struct made_seen m;
	struct stat st;

	made_pack(c, "  decide = function(req, verdict)\n"
		     "    if req.op == \"chmod\" then return { decision = \"deny\", rule = \"no chmod\" } end\n"
		     "  end,\n");
	fsbt_core_start(c);
	made_run(c, MADE_WAIT, NULL, &m);
	assert_int_equal(m.first, EACCES);
	assert_int_equal(m.second, EACCES);
	assert_int_equal(m.times, 0);
	lstat_of(c, "made.txt", &st);
	assert_int_equal(st.st_mode & 0777, 0644);
}

static void move_made_aside(struct fsbt_core *c)
{
	int fd = fsbt_connect(c);
	cJSON *r;

	assert_true(fd >= 0);
	r = fsbt_hostopf(fd, "{\"command\":\"HostFileOperation\",\"sessionId\":\"%s\","
			 "\"operation\":\"rename\",\"from\":\"%s/made.txt\",\"to\":\"%s/moved.txt\"}",
			 c->session, c->ws, c->ws);
	if (!fsbt_ok(r))
		fail_msg("the host's rename failed: %s", fsbt_str(r, "error"));
	cJSON_Delete(r);
	fsbt_close(fd);
}

/* The path of the last audit line of op `op`, malloc'd, or NULL. */
static char *last_audited_path(struct fsbt_core *c, const char *op)
{
	char log[PATH_MAX + 64], needle[64], *text, *line, *save = NULL, *path = NULL;

	snprintf(log, sizeof(log), "%s/audit/%s.jsonl", c->state, c->session);
	snprintf(needle, sizeof(needle), "\"op\":\"%s\"", op);
	text = fsbt_read_file(log, NULL);
	assert_non_null(text);
	for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		cJSON *o;

		if (strstr(line, needle) == NULL || (o = cJSON_Parse(line)) == NULL)
			continue;
		free(path);
		path = fsbt_str(o, "path") != NULL ? strdup(fsbt_str(o, "path")) : NULL;
		cJSON_Delete(o);
	}
	free(text);
	return path;
}

/* A host operation moved the file: the fd's calls are judged, and
 * audited, by the name it has now, not the one it was made under. */
static void a_made_file_moved_by_the_host_is_judged_where_it_is(void **state)
{
	struct fsbt_core *c = *state;
	char want[PATH_MAX + 16], *path;
	struct made_seen m;
	struct stat st;

	made_pack(c, "");
	fsbt_core_start(c);
	made_run(c, MADE_WAIT, move_made_aside, &m);
	assert_int_equal(m.first, 0);
	assert_int_equal(m.second, 0);
	lstat_of(c, "moved.txt", &st);
	assert_int_equal(st.st_mode & 0777, 0640);
	snprintf(want, sizeof(want), "%s/moved.txt", c->ws);
	path = last_audited_path(c, "chmod");
	assert_non_null(path);
	assert_string_equal(path, want);
	free(path);
}

/* A second name made through the fd: the hard-link rule looks at the
 * file again, and the pack asks. */
static void a_made_file_with_a_second_name_is_judged_again(void **state)
{
	struct fsbt_core *c = *state;
	struct made_seen m;
	struct stat st;

	made_pack(c, "  hardlinks = \"ask\",\n");
	fsbt_core_start(c);
	made_run(c, MADE_LINK, NULL, &m);
	assert_int_equal(m.first, 0);
	if (m.link != 0)
		fail_msg("linkat of the made file: %s", strerror(m.link));
	lstat_of(c, "made.txt", &st);
	assert_int_equal(st.st_nlink, 2);
	assert_int_equal(m.second, EACCES);
	assert_int_equal(st.st_mode & 0777, 0600);
}

static ino_t reused_ino;

/* Behind the core's back, made.txt goes and guarded.txt comes, on the
 * inode made.txt had when the file system gives it out again. */
static void reuse_the_inode(struct fsbt_core *c)
{
	char name[32], from[PATH_MAX + 32];
	struct stat made, st;
	cJSON *r;

	/* The commit lets go of the files the cycle followed, made.txt
	 * among them: its inode can be given out again. */
	r = fsbt_control_cmd(c, "CommitModifyBackup", "\"commitMsg\":\"made\"");
	if (!fsbt_ok(r))
		fail_msg("CommitModifyBackup failed: %s", fsbt_str(r, "error"));
	cJSON_Delete(r);
	lstat_of(c, "made.txt", &made);
	assert_int_equal(unlink(ws_path(c, "made.txt")), 0);
	reused_ino = 0;
	for (int i = 0; i < 64 && reused_ino == 0; i++) {
		snprintf(name, sizeof(name), "filler-%d", i);
		put(c, name, "x\n");
		lstat_of(c, name, &st);
		snprintf(from, sizeof(from), "%s", ws_path(c, name));
		if (st.st_ino == made.st_ino && rename(from, ws_path(c, "guarded.txt")) == 0)
			reused_ino = st.st_ino;
	}
	if (reused_ino == 0)
		put(c, "guarded.txt", "x\n");
	assert_int_equal(chmod(ws_path(c, "guarded.txt"), 0644), 0);
}

/* The inode of a made file, removed and given to a protected one: an fd
 * of that one is not the made file, whatever its (dev, ino). */
static void a_reused_inode_is_not_taken_for_the_made_file(void **state)
{
	struct fsbt_core *c = *state;
	struct made_seen m;
	struct stat st;

	made_pack(c, "  denyModify = { \"${workspace}/guarded.txt\" },\n");
	fsbt_core_start(c);
	made_run(c, MADE_REOPEN, reuse_the_inode, &m);
	assert_int_equal(m.first, 0);
	lstat_of(c, "guarded.txt", &st);
	assert_int_equal(st.st_mode & 0777, 0644);
	assert_int_equal(m.second, EACCES);
	if (reused_ino == 0)
		fsbt_skip("the file system gave the removed file's inode to none of 64 new files");
}

static int made_setup(void **state)
{
	*state = fsbt_core_new();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(calls_are_performed_backed_up_and_undone,
						fsbt_setup_core, fsbt_teardown_core),
		cmocka_unit_test_setup_teardown(creates_take_the_targets_fsuid,
						fsbt_setup_core, fsbt_teardown_core),
		cmocka_unit_test_setup_teardown(a_made_files_calls_are_judged_again_after_a_reload,
						made_setup, fsbt_teardown_core),
		cmocka_unit_test_setup_teardown(a_decide_hook_judges_every_call_on_a_made_file,
						made_setup, fsbt_teardown_core),
		cmocka_unit_test_setup_teardown(a_made_file_moved_by_the_host_is_judged_where_it_is,
						made_setup, fsbt_teardown_core),
		cmocka_unit_test_setup_teardown(a_made_file_with_a_second_name_is_judged_again,
						made_setup, fsbt_teardown_core),
		cmocka_unit_test_setup_teardown(a_reused_inode_is_not_taken_for_the_made_file,
						made_setup, fsbt_teardown_core),
	};

	return fsbt_run_group(tests, NULL, NULL);
}
