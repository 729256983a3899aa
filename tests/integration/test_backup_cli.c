/*
 * test_backup_cli.c — `fsbroker backup list|show|restore` run as a user
 * runs them, on a store written by hand exactly as docs/backup-store.md
 * lays it out and a scratch tree that a "cycle" changed: restore brings
 * back content, mode, times and owner byte for byte and removes what the
 * cycle created; --dry-run changes nothing; a path edited after the cycle
 * needs --force, and so does every path of a recovered cycle; a corrupted
 * object, or a FIFO in an object's place, is refused; a parent directory
 * replaced by a symlink is not followed. `backup diff` shows what a cycle
 * changed and exits like diff, and both say a rename is one (`renamed A ->
 * B`), not a delete and a create; `backup prune` removes old sealed cycles
 * (never the open one) and the objects no remaining cycle names, changes
 * nothing with --dry-run, and refuses while the store's lock is held;
 * `prune --max-size` removes the oldest sealed cycles until the store fits,
 * keeping objects a remaining cycle names. A restore keeps what it changes
 * in restore_backup and `backup undo` puts it back exactly (and redoes it);
 * a restore whose copy cannot be written changes nothing; dry runs of
 * restore and undo write nothing.
 * Xattrs come back exactly, and those added since are removed: on a cycle
 * a real core journaled for a write grant (the one test that starts a
 * core), and on a directory kept in place and a symlink made again.
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <pty.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cJSON.h>

#include "audit.h"

#define SESSION "s1"
#define A_BEFORE "alpha: the content before the cycle\n"
#define A_AFTER "alpha, rewritten by the cycle\n"
#define D_BEFORE "a file the cycle deleted\n"
#define OWNER_UID 12345
#define OWNER_GID 23456

struct scen {
	char root[PATH_MAX];	/* mkdtemp, real path */
	char state[PATH_MAX + 16], store[PATH_MAX * 2], ws[PATH_MAX + 16];
	char a[PATH_MAX * 2], made[PATH_MAX * 2], del[PATH_MAX * 2];
	struct stat a_before, del_before;
	char a_hex[65], del_hex[65];
	char journal[65536];
	unsigned seq;
	bool old_end_states;	/* seal as an older core did: no `dev` */
};

struct run {
	int status;
	char out[65536];	/* stdout */
	char err[65536];	/* stderr */
};

static struct scen S;

/* ---- running fsbroker --------------------------------------------------- */

static void run_fsbroker(struct run *r, const char *const *argv)
{
	const char *bin = fsbt_binary();
	char *args[40], errfile[PATH_MAX + 16];
	int pipefd[2], n = 0, st, efd;
	ssize_t got;
	size_t len = 0;
	pid_t pid;

	args[n++] = (char *)bin;
	for (int i = 0; argv[i] != NULL && n < 39; i++)
		args[n++] = (char *)argv[i];
	args[n] = NULL;
	snprintf(errfile, sizeof(errfile), "%s/stderr", S.root);
	efd = open(errfile, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(efd >= 0);
	assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(pipefd[1], 1);
		dup2(efd, 2);
		unsetenv("XDG_STATE_HOME");
		/* Kept across execv: a restore that hangs fails, not the suite. */
		alarm(60);
		execv(args[0], args);
		_exit(127);
	}
	close(pipefd[1]);
	while ((got = read(pipefd[0], r->out + len, sizeof(r->out) - 1 - len)) > 0)
		len += (size_t)got;
	r->out[len] = '\0';
	close(pipefd[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	got = pread(efd, r->err, sizeof(r->err) - 1, 0);
	r->err[got > 0 ? got : 0] = '\0';
	close(efd);
	if (getenv("FSBT_VERBOSE") != NULL)
		fprintf(stderr, "--- exit %d\n%s%s", r->status, r->out, r->err);
}

/*
 * As run_fsbroker, with stderr (and with `out_tty` stdout too) a terminal:
 * the slave of a pty of 24 rows and 80 columns, TERM=xterm, environment
 * `env` ("NAME=VALUE", NULL-ended, may be NULL) added. What the terminal
 * showed goes into r->err (with out_tty: r->out, and r->err stays empty).
 */
static void run_fsbroker_tty(struct run *r, bool out_tty, const char *const *env,
			     const char *const *argv)
{
	const char *bin = fsbt_binary();
	struct winsize ws = { .ws_row = 24, .ws_col = 80 };
	char *args[40], *term;
	int m, sl, pipefd[2], n = 0, st;
	size_t tlen = 0, plen = 0;
	bool pty_open = true, pipe_open = true;
	pid_t pid;

	args[n++] = (char *)bin;
	for (int i = 0; argv[i] != NULL && n < 39; i++)
		args[n++] = (char *)argv[i];
	args[n] = NULL;
	memset(r, 0, sizeof(*r));
	assert_int_equal(openpty(&m, &sl, NULL, NULL, &ws), 0);
	assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		setsid();
		ioctl(sl, TIOCSCTTY, 0);
		dup2(out_tty ? sl : pipefd[1], 1);
		dup2(sl, 2);
		close(m);
		close(sl);
		unsetenv("XDG_STATE_HOME");
		unsetenv("PAGER");
		unsetenv("NO_COLOR");
		unsetenv("LESS");
		setenv("TERM", "xterm", 1);
		for (int i = 0; env != NULL && env[i] != NULL; i++)
			putenv((char *)env[i]);
		alarm(60);
		execv(args[0], args);
		_exit(127);
	}
	close(sl);
	close(pipefd[1]);
	term = out_tty ? r->out : r->err;
	/* Both at once: a full pipe must not hold the child while we read
	 * the terminal. The pty reads EIO once the child is gone. */
	while (pty_open || pipe_open) {
		struct pollfd p[2] = { { pty_open ? m : -1, POLLIN, 0 },
				       { pipe_open ? pipefd[0] : -1, POLLIN, 0 } };
		ssize_t got;

		assert_true(poll(p, 2, 60000) > 0);
		if (p[0].revents != 0) {
			got = read(m, term + tlen, sizeof(r->out) - 1 - tlen);
			if (got <= 0)
				pty_open = false;
			else
				tlen += (size_t)got;
		}
		if (p[1].revents != 0) {
			got = read(pipefd[0], (out_tty ? r->err : r->out) + plen,
				   sizeof(r->out) - 1 - plen);
			if (got <= 0)
				pipe_open = false;
			else
				plen += (size_t)got;
		}
	}
	term[tlen] = '\0';
	(out_tty ? r->err : r->out)[plen] = '\0';
	close(m);
	close(pipefd[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	if (getenv("FSBT_VERBOSE") != NULL)
		fprintf(stderr, "--- exit %d\nOUT: %s\nERR: %s", r->status, r->out, r->err);
}

#define BACKUP_TTY(r, out_tty, env, ...)                                            \
	run_fsbroker_tty((r), (out_tty), (env),                                      \
			 (const char *const[]){ "backup", __VA_ARGS__, "--state-dir", S.state, \
						"--session", SESSION, NULL })

/* `fsbroker backup <args...> --state-dir S --session s1`. */
#define BACKUP(r, ...)                                                              \
	run_fsbroker((r), (const char *const[]){ "backup", __VA_ARGS__, "--state-dir", \
						 S.state, "--session", SESSION, NULL })

/* ---- building the store and the tree ------------------------------------ */

static void mkdirs(const char *path)
{
	char buf[PATH_MAX * 2];

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(buf, 0700);
		*p = '/';
	}
	mkdir(buf, 0700);
}

static void set_times(const char *path, time_t as, long ans, time_t ms, long mns)
{
	struct timespec ts[2] = { { as, ans }, { ms, mns } };

	assert_int_equal(utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW), 0);
}

static void put_object(const char *content, char hex[65])
{
	char path[PATH_MAX * 3];

	fsb_sha256_hex(content, strlen(content), hex);
	snprintf(path, sizeof(path), "%s/objects/%.2s", S.store, hex);
	mkdirs(path);
	snprintf(path, sizeof(path), "%s/objects/%.2s/%s", S.store, hex, hex);
	fsbt_write_file(path, content);
	assert_int_equal(chmod(path, 0400), 0);
}

static void object_path(const char *hex, char *out, size_t len)
{
	snprintf(out, len, "%s/objects/%.2s/%s", S.store, hex, hex);
}

/* Append one journal line: `prior` NULL for a path that did not exist (its
 * object named as `made` when it exists already);
 * `hex` an object name, a `skipped` reason, or NULL. */
static void journal_add(const char *tool_call, const char *op, const char *path,
			const struct stat *prior, const char *hex)
{
	char p[1024];
	size_t n = strlen(S.journal);

	struct stat made;
	char m[256] = "";

	/* A create journaled after it was made names the object it made, as
	 * the core's grants do. */
	if (prior == NULL && lstat(path, &made) == 0)
		snprintf(m, sizeof(m), ",\"made\":{\"type\":\"%s\",\"dev\":%llu,\"ino\":%llu}",
			 S_ISDIR(made.st_mode) ? "dir" : "file", (unsigned long long)made.st_dev,
			 (unsigned long long)made.st_ino);
	if (prior == NULL)
		snprintf(p, sizeof(p), "{\"exists\":false}");
	else
		snprintf(p, sizeof(p),
			 "{\"exists\":true,\"type\":\"%s\",\"dev\":%llu,\"ino\":%llu,"
			 "\"nlink\":%llu,\"mode\":%u,\"uid\":%u,\"gid\":%u,\"size\":%lld,"
			 "\"atime\":[%lld,%ld],\"mtime\":[%lld,%ld]%s%s%s}",
			 S_ISDIR(prior->st_mode) ? "dir" : "file",
			 (unsigned long long)prior->st_dev, (unsigned long long)prior->st_ino,
			 (unsigned long long)prior->st_nlink, prior->st_mode & 07777,
			 prior->st_uid, prior->st_gid, (long long)prior->st_size,
			 (long long)prior->st_atim.tv_sec, prior->st_atim.tv_nsec,
			 (long long)prior->st_mtim.tv_sec, prior->st_mtim.tv_nsec,
			 hex == NULL ? "" : strlen(hex) == 64 ? ",\"object\":\"" : ",\"skipped\":\"",
			 hex == NULL ? "" : hex, hex == NULL ? "" : "\"");
	S.seq++;
	snprintf(S.journal + n, sizeof(S.journal) - n,
		 "{\"seq\":%u,\"time\":\"2026-11-29T20:01:0%u.003Z\",\"toolCallId\":\"%s\","
		 "\"traceId\":\"tr-%u\",\"op\":\"%s\",\"flags\":0,\"path\":\"%s\","
		 "\"resolved\":\"%s\",\"prior\":%s%s,\"ok\":true}\n",
		 S.seq, S.seq % 10, tool_call, S.seq, op, path, path, p, m);
}

static void journal_write(void)
{
	char path[PATH_MAX * 3];

	snprintf(path, sizeof(path), "%s/cycles/1", S.store);
	mkdirs(path);
	snprintf(path, sizeof(path), "%s/cycles/1/journal.jsonl", S.store);
	fsbt_write_file(path, S.journal);
}

/* Seal cycle 1: cycle.json with the end state of every path, as they are
 * now; `recovered` as a core sealing it at a restart after a crash. */
static void seal_as(const char *const *paths, bool recovered)
{
	char text[16384], path[PATH_MAX * 3], dev[40];
	size_t n;
	struct stat st;

	n = (size_t)snprintf(text, sizeof(text),
			     "{\"cycle\": 1, \"message\": \"npm install\", \"opened\": "
			     "\"2026-11-29T20:01:02.003Z\", \"sealed\": \"2026-11-29T20:03:04.005Z\","
			     " \"auditHead\": \"%064d\", \"recovered\": %s, \"paths\": {", 0,
			     recovered ? "true" : "false");
	for (int i = 0; paths[i] != NULL; i++) {
		if (lstat(paths[i], &st) < 0) {
			n += (size_t)snprintf(text + n, sizeof(text) - n, "%s\"%s\": {\"exists\": false}",
					      i ? ", " : "", paths[i]);
			continue;
		}
		/* An older core wrote no dev. */
		snprintf(dev, sizeof(dev), "\"dev\": %llu, ", (unsigned long long)st.st_dev);
		n += (size_t)snprintf(text + n, sizeof(text) - n,
				      "%s\"%s\": {\"exists\": true, \"type\": \"%s\", "
				      "\"size\": %lld, \"mtime\": [%lld, %ld], %s"
				      "\"ino\": %llu}",
				      i ? ", " : "", paths[i],
				      S_ISDIR(st.st_mode) ? "dir" : "file",
				      (long long)st.st_size, (long long)st.st_mtim.tv_sec,
				      st.st_mtim.tv_nsec, S.old_end_states ? "" : dev,
				      (unsigned long long)st.st_ino);
	}
	snprintf(text + n, sizeof(text) - n, "}}\n");
	snprintf(path, sizeof(path), "%s/cycles/1/cycle.json", S.store);
	fsbt_write_file(path, text);
}

static void seal(const char *const *paths)
{
	seal_as(paths, false);
}

/*
 * The standard scene. Before the cycle: a.txt (mode 0640, owned by
 * 12345:23456 when we may, old times with nanoseconds) and del.txt (0600).
 * The cycle, in two tool calls: tc-1 rewrites a.txt through a new file (a
 * new inode, another mode and owner) and creates new.txt; tc-2 deletes
 * del.txt. Sealed unless `open`.
 */
static void scene(bool open)
{
	const char *paths[] = { S.a, S.made, S.del, NULL };

	fsbt_write_file(S.a, A_BEFORE);
	assert_int_equal(chmod(S.a, 0640), 0);
	if (geteuid() == 0)
		assert_int_equal(chown(S.a, OWNER_UID, OWNER_GID), 0);
	set_times(S.a, 1700000100, 5, 1700000000, 123456789);
	fsbt_write_file(S.del, D_BEFORE);
	assert_int_equal(chmod(S.del, 0600), 0);
	set_times(S.del, 1600000100, 0, 1600000000, 42);
	assert_int_equal(lstat(S.a, &S.a_before), 0);
	assert_int_equal(lstat(S.del, &S.del_before), 0);
	put_object(A_BEFORE, S.a_hex);
	put_object(D_BEFORE, S.del_hex);

	journal_add("tc-1", "write", S.a, &S.a_before, S.a_hex);
	fsbt_write_file(S.made, "made by the cycle\n");
	journal_add("tc-1", "create", S.made, NULL, NULL);
	journal_add("tc-2", "delete", S.del, &S.del_before, S.del_hex);
	journal_write();

	/* What the cycle did. */
	{
		char tmp[PATH_MAX * 2 + 8];

		snprintf(tmp, sizeof(tmp), "%s.new", S.a);
		fsbt_write_file(tmp, A_AFTER);
		assert_int_equal(chmod(tmp, 0666), 0);
		assert_int_equal(rename(tmp, S.a), 0);
	}
	fsbt_write_file(S.made, "made by the cycle\n");
	assert_int_equal(unlink(S.del), 0);
	if (!open)
		seal(paths);
}

static int setup(void **state)
{
	char tmpl[] = "/tmp/fsb-backup-cli-XXXXXX";

	(void)state;
	memset(&S, 0, sizeof(S));
	if (mkdtemp(tmpl) == NULL || realpath(tmpl, S.root) == NULL)
		return -1;
	snprintf(S.state, sizeof(S.state), "%s/state", S.root);
	snprintf(S.store, sizeof(S.store), "%s/sessions/%s/modify_backup", S.state, SESSION);
	snprintf(S.ws, sizeof(S.ws), "%s/ws", S.root);
	snprintf(S.a, sizeof(S.a), "%s/a.txt", S.ws);
	snprintf(S.made, sizeof(S.made), "%s/new.txt", S.ws);
	snprintf(S.del, sizeof(S.del), "%s/del.txt", S.ws);
	mkdirs(S.store);
	mkdirs(S.ws);
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	if (getenv("FSBT_KEEP") != NULL)
		return 0;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", S.root);
	return system(cmd) == 0 ? 0 : -1;
}

static void need_openat2(void)
{
	struct open_how how = { .flags = O_PATH, .resolve = RESOLVE_NO_SYMLINKS };
	long fd = syscall(SYS_openat2, AT_FDCWD, "/", &how, sizeof(how));

	if (fd < 0 && errno == ENOSYS)
		fsbt_skip("this kernel has no openat2 (Linux 5.6+), which restore needs");
	if (fd >= 0)
		close((int)fd);
}

static char *content(const char *path)
{
	char *s = fsbt_read_file(path, NULL);

	assert_non_null(s);
	return s;
}

static void assert_content(const char *path, const char *want)
{
	char *s = content(path);

	assert_string_equal(s, want);
	free(s);
}

/* Nothing of ours left behind in `dir`. */
static void assert_no_temp_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	assert_non_null(d);
	while ((de = readdir(d)) != NULL)
		assert_null(strstr(de->d_name, "fsbroker-restore"));
	closedir(d);
}

static bool has_line(const char *out, const char *start, const char *path, const char *rest)
{
	char want[PATH_MAX * 3];

	snprintf(want, sizeof(want), "%s %s%s", start, path, rest);
	return strstr(out, want) != NULL;
}

/* ---- tests ------------------------------------------------------------- */

static void test_restore_last_brings_back_content_mode_times(void **state)
{
	struct run r;
	struct stat st;

	(void)state;
	need_openat2();
	scene(false);
	BACKUP(&r, "restore", "--last");
	assert_int_equal(r.status, 0);
	assert_true(has_line(r.out, "restored", S.a, " (content, mode, times"));
	assert_true(has_line(r.out, "restored", S.del, " (content, mode, times"));
	assert_true(has_line(r.out, "removed", S.made, " (created by the cycle)"));

	/* Stat first: reading the file could move its atime. */
	assert_int_equal(lstat(S.a, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(st.st_size, strlen(A_BEFORE));
	assert_int_equal(st.st_mtim.tv_sec, 1700000000);
	assert_int_equal(st.st_mtim.tv_nsec, 123456789);
	assert_int_equal(st.st_atim.tv_sec, 1700000100);
	assert_int_equal(st.st_atim.tv_nsec, 5);
	if (geteuid() == 0) {
		assert_int_equal(st.st_uid, OWNER_UID);
		assert_int_equal(st.st_gid, OWNER_GID);
		assert_true(has_line(r.out, "restored", S.a, " (content, mode, times, owner"));
	}
	assert_int_equal(lstat(S.del, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_mtim.tv_sec, 1600000000);
	assert_int_equal(st.st_mtim.tv_nsec, 42);
	assert_content(S.a, A_BEFORE);
	assert_content(S.del, D_BEFORE);
	assert_int_equal(lstat(S.made, &st), -1);
	assert_int_equal(errno, ENOENT);
	assert_no_temp_files(S.ws);
}

static void test_dry_run_changes_nothing(void **state)
{
	struct run r;
	struct stat a0, a1, m;

	(void)state;
	need_openat2();
	scene(false);
	assert_int_equal(lstat(S.a, &a0), 0);
	BACKUP(&r, "restore", "--last", "--dry-run");
	assert_int_equal(r.status, 0);
	assert_true(has_line(r.out, "would restore", S.a, " (content, mode, times)"));
	assert_true(has_line(r.out, "would restore", S.del, " (content, mode, times)"));
	assert_true(has_line(r.out, "would remove", S.made, " (created by the cycle)"));
	assert_int_equal(lstat(S.a, &a1), 0);
	assert_int_equal(a1.st_ino, a0.st_ino);
	assert_int_equal(a1.st_mode, a0.st_mode);
	assert_int_equal(a1.st_mtim.tv_nsec, a0.st_mtim.tv_nsec);
	assert_int_equal(a1.st_mtim.tv_sec, a0.st_mtim.tv_sec);
	assert_content(S.a, A_AFTER);
	assert_int_equal(lstat(S.made, &m), 0);
	assert_int_equal(access(S.del, F_OK), -1);
	assert_no_temp_files(S.ws);
}

static void test_path_edited_after_the_cycle_needs_force(void **state)
{
	struct run r;
	FILE *f;

	(void)state;
	need_openat2();
	scene(false);
	/* Someone edits a.txt after the turn. */
	f = fopen(S.a, "a");
	assert_non_null(f);
	fputs("an edit made after the cycle\n", f);
	fclose(f);

	BACKUP(&r, "restore", "--last");
	assert_int_equal(r.status, 1);
	assert_true(has_line(r.out, "skipped", S.a, ": changed since the cycle ended ("));
	assert_non_null(strstr(r.out, "use --force"));
	assert_content(S.a, A_AFTER "an edit made after the cycle\n");
	/* The other paths are restored all the same. */
	assert_true(has_line(r.out, "removed", S.made, " (created by the cycle)"));
	assert_content(S.del, D_BEFORE);

	BACKUP(&r, "restore", "1", S.a, "--force");
	assert_int_equal(r.status, 0);
	assert_true(has_line(r.out, "restored", S.a, " (content, mode, times"));
	assert_non_null(strstr(r.out, "forced"));
	assert_content(S.a, A_BEFORE);
}

static void test_corrupted_object_is_refused(void **state)
{
	char obj[PATH_MAX * 3], bad[] = A_BEFORE;
	struct run r;

	(void)state;
	need_openat2();
	scene(false);
	object_path(S.a_hex, obj, sizeof(obj));
	bad[0] = 'A';	/* same size, one byte off */
	assert_int_equal(chmod(obj, 0600), 0);
	fsbt_write_file(obj, bad);

	BACKUP(&r, "restore", "--last", "--dry-run");
	assert_int_equal(r.status, 1);
	assert_true(has_line(r.out, "skipped", S.a, ": its backup object"));
	assert_non_null(strstr(r.out, "is corrupted"));

	BACKUP(&r, "restore", "--last", "--force");
	assert_int_equal(r.status, 1);
	assert_true(has_line(r.out, "skipped", S.a, ": its backup object"));
	assert_content(S.a, A_AFTER);
	assert_no_temp_files(S.ws);
	/* The good object of the other file is used. */
	assert_content(S.del, D_BEFORE);
}

static void test_symlinked_parent_is_not_followed(void **state)
{
	char sub[PATH_MAX * 2 + 8], f[PATH_MAX * 3], made[PATH_MAX * 3], moved[PATH_MAX * 3];
	char elsewhere[PATH_MAX + 16], victim[PATH_MAX * 2], victim2[PATH_MAX * 2], hex[65];
	const char *paths[3];
	struct stat before;
	struct run r;
	int n = 0;
	DIR *d;

	(void)state;
	need_openat2();
	snprintf(sub, sizeof(sub), "%s/sub", S.ws);
	snprintf(f, sizeof(f), "%s/f.txt", sub);
	snprintf(made, sizeof(made), "%s/made.txt", sub);
	mkdirs(sub);
	fsbt_write_file(f, "f before\n");
	assert_int_equal(lstat(f, &before), 0);
	put_object("f before\n", hex);
	journal_add("tc-1", "write", f, &before, hex);
	journal_add("tc-1", "create", made, NULL, NULL);
	journal_write();
	fsbt_write_file(f, "f after\n");
	fsbt_write_file(made, "made\n");
	paths[0] = f;
	paths[1] = made;
	paths[2] = NULL;
	seal(paths);

	/* After the cycle, sub/ is replaced by a symlink to another directory
	 * that holds files of the same names. */
	snprintf(moved, sizeof(moved), "%s/sub.moved", S.ws);
	assert_int_equal(rename(sub, moved), 0);
	snprintf(elsewhere, sizeof(elsewhere), "%s/elsewhere", S.root);
	mkdirs(elsewhere);
	snprintf(victim, sizeof(victim), "%s/f.txt", elsewhere);
	snprintf(victim2, sizeof(victim2), "%s/made.txt", elsewhere);
	fsbt_write_file(victim, "victim\n");
	fsbt_write_file(victim2, "victim 2\n");
	assert_int_equal(symlink(elsewhere, sub), 0);

	/* Even --force does not walk through it. */
	BACKUP(&r, "restore", "--last", "--force");
	assert_int_equal(r.status, 1);
	assert_true(has_line(r.out, "skipped", f, ": a directory on the way to it is a symlink"));
	assert_true(has_line(r.out, "skipped", made, ": a directory on the way to it is a symlink"));
	assert_content(victim, "victim\n");
	assert_content(victim2, "victim 2\n");
	d = opendir(elsewhere);
	assert_non_null(d);
	while (readdir(d) != NULL)
		n++;
	closedir(d);
	assert_int_equal(n, 4);	/* ".", "..", f.txt, made.txt: nothing written there */
	assert_int_equal(lstat(sub, &before), 0);
	assert_true(S_ISLNK(before.st_mode));
}

static void test_directories_removed_deepest_first_recreated_parents_first(void **state)
{
	char newdir[PATH_MAX * 2 + 8], newx[PATH_MAX * 3], olddir[PATH_MAX * 2 + 8];
	char oldy[PATH_MAX * 3], full[PATH_MAX * 2 + 8], fullz[PATH_MAX * 3], hex[65];
	const char *paths[6];
	struct stat dir_before, y_before, st;
	struct run r;
	char *at_newx, *at_newdir, *at_olddir, *at_oldy;

	(void)state;
	need_openat2();
	snprintf(newdir, sizeof(newdir), "%s/newdir", S.ws);
	snprintf(newx, sizeof(newx), "%s/x", newdir);
	snprintf(olddir, sizeof(olddir), "%s/olddir", S.ws);
	snprintf(oldy, sizeof(oldy), "%s/y", olddir);
	snprintf(full, sizeof(full), "%s/full", S.ws);
	snprintf(fullz, sizeof(fullz), "%s/z", full);
	mkdirs(olddir);
	fsbt_write_file(oldy, "y before\n");
	assert_int_equal(chmod(oldy, 0604), 0);
	set_times(oldy, 1500000000, 1, 1500000000, 2);
	assert_int_equal(chmod(olddir, 0750), 0);
	set_times(olddir, 1400000000, 3, 1400000000, 4);
	assert_int_equal(lstat(olddir, &dir_before), 0);
	assert_int_equal(lstat(oldy, &y_before), 0);
	put_object("y before\n", hex);

	/* The cycle: mkdir newdir, create newdir/x, rm -r olddir, mkdir full
	 * (into which someone else puts a file the journal never saw). */
	journal_add("tc-1", "mkdir", newdir, NULL, NULL);
	journal_add("tc-1", "create", newx, NULL, NULL);
	journal_add("tc-2", "delete", oldy, &y_before, hex);
	journal_add("tc-2", "delete", olddir, &dir_before, NULL);
	journal_add("tc-2", "mkdir", full, NULL, NULL);
	journal_write();
	mkdirs(newdir);
	fsbt_write_file(newx, "x\n");
	assert_int_equal(unlink(oldy), 0);
	assert_int_equal(rmdir(olddir), 0);
	mkdirs(full);
	fsbt_write_file(fullz, "z\n");
	paths[0] = newdir;
	paths[1] = newx;
	paths[2] = oldy;
	paths[3] = olddir;
	paths[4] = full;
	paths[5] = NULL;
	seal(paths);

	BACKUP(&r, "restore", "--last");
	assert_int_equal(r.status, 1);	/* full/ is not empty */
	assert_true(has_line(r.out, "skipped", full, ": a directory the cycle created, not empty"));
	assert_int_equal(access(fullz, F_OK), 0);
	assert_true(has_line(r.out, "removed", newx, " (created by the cycle)"));
	assert_true(has_line(r.out, "removed", newdir, " (a directory created by the cycle)"));
	assert_true(has_line(r.out, "restored", olddir, " (directory, mode, times"));
	assert_true(has_line(r.out, "restored", oldy, " (content, mode, times"));
	/* Deepest first for removals, parents first for the rest. */
	at_newx = strstr(r.out, newx);
	at_newdir = strstr(r.out, newdir);
	while (at_newdir != NULL && at_newdir[strlen(newdir)] == '/')
		at_newdir = strstr(at_newdir + 1, newdir);
	at_olddir = strstr(r.out, olddir);
	while (at_olddir != NULL && at_olddir[strlen(olddir)] == '/')
		at_olddir = strstr(at_olddir + 1, olddir);
	at_oldy = strstr(r.out, oldy);
	assert_non_null(at_newdir);
	assert_non_null(at_olddir);
	assert_true(at_newx < at_newdir);
	assert_true(at_olddir < at_oldy);

	assert_int_equal(access(newdir, F_OK), -1);
	assert_int_equal(lstat(olddir, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0750);
	/* Set after y was put back inside it. */
	assert_int_equal(st.st_mtim.tv_sec, 1400000000);
	assert_int_equal(st.st_mtim.tv_nsec, 4);
	assert_int_equal(lstat(oldy, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0604);
	assert_int_equal(st.st_mtim.tv_nsec, 2);
	assert_content(oldy, "y before\n");
}

static void test_file_without_backup_is_not_restorable(void **state)
{
	char big[PATH_MAX * 2 + 8];
	struct stat before;
	struct run r;
	const char *paths[2];

	(void)state;
	need_openat2();
	snprintf(big, sizeof(big), "%s/big.bin", S.ws);
	fsbt_write_file(big, "pretend this is 5 GB\n");
	assert_int_equal(lstat(big, &before), 0);
	journal_add("tc-1", "write", big, &before, "too-large");
	journal_write();
	fsbt_write_file(big, "overwritten\n");
	paths[0] = big;
	paths[1] = NULL;
	seal(paths);
	BACKUP(&r, "restore", "--last", "--force");
	assert_int_equal(r.status, 1);
	assert_true(has_line(r.out, "skipped", big,
			     ": not restorable: no backup was taken (too large)"));
	assert_content(big, "overwritten\n");
	BACKUP(&r, "show", "--last");
	assert_non_null(strstr(r.out, "skipped too-large"));
}

static void test_symlink_is_recreated_with_its_target(void **state)
{
	char link[PATH_MAX * 2 + 8], target[PATH_MAX];
	const char *paths[2];
	struct stat st;
	struct run r;
	ssize_t n;
	size_t len = strlen(S.journal);

	(void)state;
	need_openat2();
	snprintf(link, sizeof(link), "%s/link", S.ws);
	assert_int_equal(symlink("some/where\001odd", link), 0);
	assert_int_equal(lstat(link, &st), 0);
	snprintf(S.journal + len, sizeof(S.journal) - len,
		 "{\"seq\":1,\"time\":\"2026-11-29T20:01:01.000Z\",\"toolCallId\":\"tc-1\","
		 "\"traceId\":\"\",\"op\":\"delete\",\"flags\":0,\"path\":\"%s\","
		 "\"resolved\":\"%s\",\"prior\":{\"exists\":true,\"type\":\"symlink\","
		 "\"dev\":1,\"ino\":%llu,\"nlink\":1,\"mode\":511,\"uid\":%u,\"gid\":%u,"
		 "\"size\":%lld,\"atime\":[1300000000,1],\"mtime\":[1300000000,2],"
		 "\"target\":\"some/where\\u0001odd\"},\"ok\":true}\n",
		 link, link, (unsigned long long)st.st_ino, st.st_uid, st.st_gid,
		 (long long)st.st_size);
	journal_write();
	assert_int_equal(unlink(link), 0);
	paths[0] = link;
	paths[1] = NULL;
	seal(paths);

	BACKUP(&r, "restore", "--last");
	assert_int_equal(r.status, 0);
	assert_true(has_line(r.out, "restored", link, " (symlink, target, times)"));
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(st.st_mtim.tv_sec, 1300000000);
	assert_int_equal(st.st_mtim.tv_nsec, 2);
	n = readlink(link, target, sizeof(target) - 1);
	assert_true(n > 0);
	target[n] = '\0';
	assert_string_equal(target, "some/where\001odd");
	assert_no_temp_files(S.ws);
}

/* Skip, saying why, when the filesystem of `path` takes no user.* xattrs. */
static void need_user_xattrs(const char *path)
{
	if (setxattr(path, "user.fsbt-probe", "", 0, 0) == 0) {
		assert_int_equal(removexattr(path, "user.fsbt-probe"), 0);
		return;
	}
	fsbt_skip("%s takes no user.* xattrs (%s)", path, strerror(errno));
}

static void assert_xattr(const char *path, const char *name, const void *want, size_t len)
{
	char buf[256];
	ssize_t n = lgetxattr(path, name, buf, sizeof(buf));

	if (n < 0)
		fail_msg("%s of %s: %s", name, path, strerror(errno));
	assert_int_equal(n, (ssize_t)len);
	assert_memory_equal(buf, want, len);
}

static void assert_no_xattr(const char *path, const char *name)
{
	char buf[16];

	assert_int_equal(lgetxattr(path, name, buf, sizeof(buf)), -1);
	assert_int_equal(errno, ENODATA);
}

/*
 * Through the real core: a file with user.* xattrs is granted for writing;
 * its holder rewrites it, changes one xattr, removes one and adds one. The
 * cycle is sealed, and restore puts the content and every xattr back byte
 * for byte and removes the added one.
 */
static void test_restore_brings_back_xattrs_a_write_grant_changed(void **state)
{
	static const char keep[] = { 'k', '\0', (char)0xff, (char)0xc3 };
	char path[PATH_MAX + 16], line[PATH_MAX + 256], reply[4096];
	struct fsbt_core *c;
	struct run r;
	int fd, got = -1;
	cJSON *j;

	(void)state;
	need_openat2();
	c = fsbt_start();
	snprintf(path, sizeof(path), "%s/x.txt", c->ws);
	fsbt_write_file(path, "before the grant\n");
	if (setxattr(path, "user.fsbt-probe", "", 0, 0) < 0) {
		int err = errno;

		fsbt_core_stop(c);
		fsbt_skip("the core's workspace takes no user.* xattrs (%s)", strerror(err));
	}
	assert_int_equal(removexattr(path, "user.fsbt-probe"), 0);
	assert_int_equal(setxattr(path, "user.keep", keep, sizeof(keep), 0), 0);
	assert_int_equal(setxattr(path, "user.gone", "g", 1, 0), 0);
	assert_int_equal(setxattr(path, "user.empty", "", 0, 0), 0);

	fd = fsbt_connect(c);
	assert_true(fd >= 0);
	fsbt_text_req(line, sizeof(line), FSBT_WRITE, path, c->session, FSBT_OPEN_WRITE);
	assert_true(fsbt_request(fd, line, reply, sizeof(reply), &got) > 0);
	assert_string_equal(reply, "FD");
	assert_true(got >= 0);
	assert_int_equal(write(got, "after\n", 6), 6);
	assert_int_equal(fsetxattr(got, "user.keep", "changed", 7, 0), 0);
	assert_int_equal(fremovexattr(got, "user.gone"), 0);
	assert_int_equal(fsetxattr(got, "user.added", "a", 1, 0), 0);
	close(got);
	fsbt_close(fd);
	j = fsbt_control_cmd(c, "CommitModifyBackup", "\"commitMsg\":\"xattrs\"");
	assert_true(fsbt_ok(j));
	cJSON_Delete(j);

	run_fsbroker(&r, (const char *const[]){ "backup", "restore", "--last", "--state-dir",
						c->state, "--session", c->session, NULL });
	if (r.status != 0)
		fprintf(stderr, "# restore said:\n%s%s", r.out, r.err);
	assert_int_equal(r.status, 0);
	assert_true(has_line(r.out, "restored", path, " (content, mode, times"));
	assert_non_null(strstr(r.out, ", xattrs)"));
	assert_null(strstr(r.out, "xattrs not restored"));
	assert_content(path, "before the grant\n");
	assert_xattr(path, "user.keep", keep, sizeof(keep));
	assert_xattr(path, "user.gone", "g", 1);
	assert_xattr(path, "user.empty", "", 0);
	assert_no_xattr(path, "user.added");
	fsbt_core_stop(c);
}

/*
 * A directory the cycle kept (chmod, and its xattrs changed: one value,
 * one added) gets back its xattrs in place, the added one removed; as
 * root, a symlink the cycle deleted comes back with its trusted.* xattr.
 */
static void test_restore_puts_xattrs_back_on_a_kept_directory(void **state)
{
	char dir[PATH_MAX * 2 + 8], link[PATH_MAX * 2 + 8];
	const char *paths[3];
	struct stat st;
	struct run r;
	size_t len;
	bool root = geteuid() == 0;

	(void)state;
	need_openat2();
	snprintf(dir, sizeof(dir), "%s/d", S.ws);
	snprintf(link, sizeof(link), "%s/ln", S.ws);
	mkdirs(dir);
	need_user_xattrs(dir);
	assert_int_equal(chmod(dir, 0750), 0);
	assert_int_equal(lstat(dir, &st), 0);
	/* user.d is "dir\0value\xff"; the name user.\xe9 is not UTF-8. */
	len = strlen(S.journal);
	snprintf(S.journal + len, sizeof(S.journal) - len,
		 "{\"seq\":1,\"time\":\"2026-11-29T20:01:01.000Z\",\"toolCallId\":\"tc-1\","
		 "\"traceId\":\"\",\"op\":\"chmod\",\"flags\":0,\"path\":\"%s\","
		 "\"resolved\":\"%s\",\"prior\":{\"exists\":true,\"type\":\"dir\","
		 "\"dev\":1,\"ino\":%llu,\"nlink\":2,\"mode\":488,\"uid\":%u,\"gid\":%u,"
		 "\"size\":%lld,\"atime\":[1300000000,1],\"mtime\":[1300000000,2],"
		 "\"xattrs\":{\"user.d\":\"ZGlyAHZhbHVl/w==\"},"
		 "\"xattrsBytes\":{\"user.%%E9\":\"dg==\"}},\"ok\":true}\n",
		 dir, dir, (unsigned long long)st.st_ino, st.st_uid, st.st_gid,
		 (long long)st.st_size);
	if (root) {
		assert_int_equal(symlink("t", link), 0);
		assert_int_equal(lstat(link, &st), 0);
		len = strlen(S.journal);
		snprintf(S.journal + len, sizeof(S.journal) - len,
			 "{\"seq\":2,\"time\":\"2026-11-29T20:01:02.000Z\",\"toolCallId\":\"tc-1\","
			 "\"traceId\":\"\",\"op\":\"delete\",\"flags\":0,\"path\":\"%s\","
			 "\"resolved\":\"%s\",\"prior\":{\"exists\":true,\"type\":\"symlink\","
			 "\"dev\":1,\"ino\":%llu,\"nlink\":1,\"mode\":511,\"uid\":0,"
			 "\"gid\":0,\"size\":1,\"atime\":[1300000000,1],"
			 "\"mtime\":[1300000000,2],\"target\":\"t\","
			 "\"xattrs\":{\"trusted.t\":\"AAE=\"}},\"ok\":true}\n",
			 link, link, (unsigned long long)st.st_ino);
		assert_int_equal(unlink(link), 0);
	}
	journal_write();
	/* What the cycle did to the directory. */
	assert_int_equal(chmod(dir, 0700), 0);
	assert_int_equal(setxattr(dir, "user.d", "changed", 7, 0), 0);
	assert_int_equal(setxattr(dir, "user.added", "1", 1, 0), 0);
	paths[0] = dir;
	paths[1] = root ? link : NULL;
	paths[2] = NULL;
	seal(paths);

	BACKUP(&r, "restore", "--last");
	if (r.status != 0)
		fprintf(stderr, "# restore said:\n%s%s", r.out, r.err);
	assert_int_equal(r.status, 0);
	assert_true(has_line(r.out, "restored", dir, " (directory, mode, times, xattrs)"));
	assert_int_equal(lstat(dir, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0750);
	assert_xattr(dir, "user.d", "dir\0value\xff", 10);
	assert_xattr(dir, "user.\xe9", "v", 1);
	assert_no_xattr(dir, "user.added");
	if (root) {
		assert_true(has_line(r.out, "restored", link, " (symlink, target, times, xattrs)"));
		assert_xattr(link, "trusted.t", "\0\1", 2);
	}
	assert_no_temp_files(S.ws);
}

static void test_open_cycle_needs_force(void **state)
{
	struct run r;

	(void)state;
	need_openat2();
	scene(true);
	BACKUP(&r, "restore", "--last");
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "cycle 1 is still open"));
	assert_content(S.a, A_AFTER);
	assert_int_equal(access(S.made, F_OK), 0);

	BACKUP(&r, "restore", "--last", "--force");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "Cycle 1 is still open"));
	assert_content(S.a, A_BEFORE);
	assert_int_equal(access(S.made, F_OK), -1);
}

static void test_tool_call_restores_only_its_paths(void **state)
{
	struct run r;

	(void)state;
	need_openat2();
	scene(false);
	BACKUP(&r, "restore", "--last", "--tool-call", "tc-2");
	assert_int_equal(r.status, 0);
	assert_true(has_line(r.out, "restored", S.del, " (content, mode, times"));
	assert_null(strstr(r.out, S.a));
	assert_content(S.del, D_BEFORE);
	assert_content(S.a, A_AFTER);
	assert_int_equal(access(S.made, F_OK), 0);

	BACKUP(&r, "restore", "--last", "--tool-call", "tc-2", "--json");
	assert_int_equal(r.status, 1);	/* now changed since the cycle */
	{
		cJSON *arr = cJSON_Parse(r.out), *o;

		assert_non_null(arr);
		assert_int_equal(cJSON_GetArraySize(arr), 1);
		o = cJSON_GetArrayItem(arr, 0);
		assert_string_equal(fsbt_str(o, "path"), S.del);
		assert_string_equal(fsbt_str(o, "result"), "skipped");
		assert_non_null(strstr(fsbt_str(o, "detail"), "it was created since"));
		cJSON_Delete(arr);
	}

	BACKUP(&r, "restore", "--last", "--tool-call", "tc-none");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "tool call 'tc-none' touched nothing in cycle 1"));
}

static void test_named_path_only_and_unknown_path(void **state)
{
	char other[PATH_MAX * 2 + 16];
	struct run r;

	(void)state;
	need_openat2();
	scene(false);
	snprintf(other, sizeof(other), "%s/untouched.txt", S.ws);
	BACKUP(&r, "restore", "1", S.made, other);
	assert_int_equal(r.status, 1);	/* the untouched path was asked for */
	assert_true(has_line(r.out, "removed", S.made, " (created by the cycle)"));
	assert_true(has_line(r.out, "skipped", other, ": the cycle did not touch it"));
	assert_content(S.a, A_AFTER);
	assert_int_equal(access(S.del, F_OK), -1);
}

static void test_list_json_parses_and_text_lists(void **state)
{
	struct run r;
	cJSON *arr, *c;

	(void)state;
	scene(false);
	BACKUP(&r, "list", "--json");
	assert_int_equal(r.status, 0);
	arr = cJSON_Parse(r.out);
	assert_non_null(arr);
	assert_true(cJSON_IsArray(arr));
	assert_int_equal(cJSON_GetArraySize(arr), 1);
	c = cJSON_GetArrayItem(arr, 0);
	assert_int_equal(fsbt_num(c, "cycle"), 1);
	assert_string_equal(fsbt_str(c, "state"), "sealed");
	assert_string_equal(fsbt_str(c, "message"), "npm install");
	assert_string_equal(fsbt_str(c, "opened"), "2026-11-29T20:01:02.003Z");
	assert_string_equal(fsbt_str(c, "sealed"), "2026-11-29T20:03:04.005Z");
	assert_int_equal(fsbt_num(c, "paths"), 3);
	assert_int_equal(fsbt_num(c, "objects"), 2);
	cJSON_Delete(arr);

	BACKUP(&r, "list");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "CYCLE  STATE"));
	assert_non_null(strstr(r.out, "    1  sealed     2026-11-29 20:01:02  2026-11-29 20:03:04"
				      "      3        2  npm install\n"));
}

static void test_show_lists_paths_and_reports_bad_lines(void **state)
{
	char path[PATH_MAX * 3], want[PATH_MAX * 3];
	struct run r;
	FILE *f;

	(void)state;
	scene(false);
	BACKUP(&r, "show", "--last");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "cycle 1 (sealed)"));
	assert_non_null(strstr(r.out, "message: npm install"));
	snprintf(want, sizeof(want), "write   tc-1       modified (%zu bytes)", strlen(A_BEFORE));
	assert_non_null(strstr(r.out, want));
	assert_non_null(strstr(r.out, "create  tc-1       created"));
	snprintf(want, sizeof(want), "deleted (%zu bytes)", strlen(D_BEFORE));
	assert_non_null(strstr(r.out, want));

	/* A malformed line is named by file and line, and the rest still shows. */
	snprintf(path, sizeof(path), "%s/cycles/1/journal.jsonl", S.store);
	f = fopen(path, "a");
	assert_non_null(f);
	fputs("{\"seq\": 4, \"op\": \"write\"\n", f);
	fclose(f);
	BACKUP(&r, "show", "1", "--json");
	assert_int_equal(r.status, 0);
	snprintf(want, sizeof(want), "%s:4: malformed journal line skipped", path);
	assert_non_null(strstr(r.err, want));
	{
		cJSON *o = cJSON_Parse(r.out);

		assert_non_null(o);
		assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(o, "paths")), 3);
		assert_int_equal(fsbt_num(o, "malformedLines"), 1);
		cJSON_Delete(o);
	}
}

static void test_empty_and_missing_sessions_say_so(void **state)
{
	char dir[PATH_MAX * 2];
	struct run r;

	(void)state;
	/* The session exists and has a store, but no cycle yet. */
	BACKUP(&r, "list");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "Session s1 has no backup cycles yet"));
	BACKUP(&r, "list", "--json");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "[]"));
	BACKUP(&r, "restore", "--last");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "has no backup cycles yet"));

	run_fsbroker(&r, (const char *const[]){ "backup", "list", "--state-dir", S.state,
						"--session", "nosuch", NULL });
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "there is no session 'nosuch'"));

	/* The one session, recording no workspace (a serve's), is found
	 * without --session; with two, neither is taken for this directory. */
	run_fsbroker(&r, (const char *const[]){ "backup", "list", "--state-dir", S.state, NULL });
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "Session s1 has no backup cycles yet"));
	snprintf(dir, sizeof(dir), "%s/sessions/s2", S.state);
	mkdirs(dir);
	/* A list of a project nothing ran in yet is empty, not an error;
	 * any other verb there has no session to act on. */
	run_fsbroker(&r, (const char *const[]){ "backup", "list", "--state-dir", S.state, NULL });
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "There are no backups of this workspace yet"));
	assert_non_null(strstr(r.out, "`fsbroker backup list --all`"));
	run_fsbroker(&r, (const char *const[]){ "backup", "list", "--json", "--state-dir", S.state,
						NULL });
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "[]\n");
	run_fsbroker(&r, (const char *const[]){ "backup", "show", "--last", "--state-dir", S.state,
						NULL });
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "no session has backups of the workspace "));
	assert_non_null(strstr(r.err, "`fsbroker backup list --all`"));
}

/*
 * Without --session, `backup` takes the session whose recorded workspace
 * holds --workspace (or the current directory), from a subdirectory too;
 * never a session of another project; `list --all` shows each session
 * with its workspace.
 */
static void test_session_is_found_by_its_recorded_workspace(void **state)
{
	char dir[PATH_MAX * 2], proj[PATH_MAX * 2], sub[PATH_MAX * 2], other[PATH_MAX * 2];
	struct run r;
	cJSON *all;

	(void)state;
	snprintf(proj, sizeof(proj), "%s/proj", S.root);
	snprintf(sub, sizeof(sub), "%s/proj/src", S.root);
	snprintf(other, sizeof(other), "%s/other", S.root);
	mkdirs(sub);
	mkdirs(other);
	snprintf(dir, sizeof(dir), "%s/sessions/p1/modify_backup/cycles", S.state);
	mkdirs(dir);
	snprintf(dir, sizeof(dir), "%s/sessions/p1/workspace", S.state);
	{
		char text[PATH_MAX * 2 + 2];

		snprintf(text, sizeof(text), "%s\n", proj);
		fsbt_write_file(dir, text);
	}
	run_fsbroker(&r, (const char *const[]){ "backup", "list", "--state-dir", S.state,
						"--workspace", sub, NULL });
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "Session p1 has no backup cycles yet"));
	/* Another project: not p1, not s1 (there are two sessions). */
	run_fsbroker(&r, (const char *const[]){ "backup", "restore", "--last", "--state-dir",
						S.state, "--workspace", other, NULL });
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "no session has backups of the workspace "));
	assert_null(strstr(r.out, "p1"));

	run_fsbroker(&r, (const char *const[]){ "backup", "list", "--all", "--json",
						"--state-dir", S.state, NULL });
	assert_int_equal(r.status, 0);
	all = cJSON_Parse(r.out);
	assert_true(cJSON_IsArray(all));
	assert_int_equal(cJSON_GetArraySize(all), 2);
	for (int i = 0; i < 2; i++) {
		cJSON *o = cJSON_GetArrayItem(all, i), *ws = cJSON_GetObjectItem(o, "workspace");
		const char *id = cJSON_GetObjectItem(o, "session")->valuestring;

		assert_true(cJSON_IsArray(cJSON_GetObjectItem(o, "cycles")));
		if (strcmp(id, "p1") == 0)
			assert_string_equal(ws->valuestring, proj);
		else
			assert_true(strcmp(id, SESSION) == 0 && cJSON_IsNull(ws));
	}
	cJSON_Delete(all);
	run_fsbroker(&r, (const char *const[]){ "backup", "list", "--all", "--state-dir",
						S.state, NULL });
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "Session p1, workspace "));
	assert_non_null(strstr(r.out, "(none recorded)"));
	run_fsbroker(&r, (const char *const[]){ "backup", "restore", "--all", "--last",
						"--state-dir", S.state, NULL });
	assert_int_equal(r.status, 2);
}

static void test_usage_errors_exit_2(void **state)
{
	struct run r;

	(void)state;
	scene(false);
	BACKUP(&r, "restore");
	assert_int_equal(r.status, 2);
	BACKUP(&r, "show", "x1");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "'x1' is not a cycle number"));
	BACKUP(&r, "show", "7");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "there is no cycle 7"));
	BACKUP(&r, "list", "--bogus");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "fsbroker backup list: unknown option --bogus; see "
			       "fsbroker backup list --help"));
	BACKUP(&r, "list", "--force");
	assert_int_equal(r.status, 2);
	BACKUP(&r, "frobnicate");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "unknown subcommand 'frobnicate'"));
}

/*
 * A recovered cycle's end states were taken at the restart, after a user's
 * edit made between the crash and it: restore took the edit for the cycle's
 * own end state and threw it away without --force. Every path of a
 * recovered cycle has no end state now, and needs --force.
 */
static void test_recovered_cycle_needs_force_for_every_path(void **state)
{
	const char *paths[] = { S.a, S.made, S.del, NULL };
	const char *why = ": no end state was recorded (the cycle was recovered after a crash): "
			  "use --force";
	struct run r;
	FILE *f;

	(void)state;
	need_openat2();
	scene(true);		/* the cycle's changes, then the crash */
	f = fopen(S.a, "a");	/* the user's edit, before the restart */
	assert_non_null(f);
	fputs("an edit made after the crash\n", f);
	fclose(f);
	/* Sealed at the restart, with the paths as they were then (the
	 * old way): this must not pass for the cycle's end state. */
	seal_as(paths, true);

	BACKUP(&r, "restore", "--last");
	assert_int_equal(r.status, 1);
	assert_true(has_line(r.out, "skipped", S.a, why));
	assert_true(has_line(r.out, "skipped", S.made, why));
	assert_true(has_line(r.out, "skipped", S.del, why));
	assert_content(S.a, A_AFTER "an edit made after the crash\n");
	assert_int_equal(access(S.made, F_OK), 0);
	assert_int_equal(access(S.del, F_OK), -1);

	BACKUP(&r, "restore", "--last", S.a, "--force");
	assert_int_equal(r.status, 0);
	assert_true(has_line(r.out, "restored", S.a, " (content, mode, times"));
	assert_non_null(strstr(r.out, "forced, though no end state was recorded"));
	assert_content(S.a, A_BEFORE);
}

/* A FIFO in an object's place: restore neither hangs on it nor uses it. */
static void test_fifo_object_is_refused(void **state)
{
	char obj[PATH_MAX * 3];
	struct run r;

	(void)state;
	need_openat2();
	scene(false);
	object_path(S.a_hex, obj, sizeof(obj));
	assert_int_equal(unlink(obj), 0);
	assert_int_equal(mkfifo(obj, 0600), 0);
	BACKUP(&r, "restore", "--last");
	assert_int_equal(r.status, 1);
	assert_true(has_line(r.out, "skipped", S.a, ": its backup object"));
	assert_non_null(strstr(r.out, "is not a regular file; nothing was written"));
	assert_content(S.a, A_AFTER);
	assert_content(S.del, D_BEFORE);
}

/* ---- diff ---------------------------------------------------------------- */

static void test_diff_shows_old_and_new_lines_and_exits_1(void **state)
{
	char want[PATH_MAX * 3];
	struct run r;

	(void)state;
	scene(false);
	BACKUP(&r, "diff", "--last");
	assert_int_equal(r.status, 1);
	snprintf(want, sizeof(want), "--- %s (before cycle 1)\n+++ %s (now)\n", S.a, S.a);
	assert_non_null(strstr(r.out, want));
	assert_non_null(strstr(r.out, "\n-" A_BEFORE));
	assert_non_null(strstr(r.out, "\n+" A_AFTER));
	/* The deleted file: against /dev/null. */
	snprintf(want, sizeof(want), "--- %s (before cycle 1)\n+++ %s (absent now)\n", S.del,
		 S.del);
	assert_non_null(strstr(r.out, want));
	assert_non_null(strstr(r.out, "\n-" D_BEFORE));
	/* Reading is all it does. */
	assert_content(S.a, A_AFTER);
	assert_int_equal(access(S.del, F_OK), -1);
}

static void test_diff_of_untouched_file_exits_0(void **state)
{
	char other[PATH_MAX * 3];
	struct run r;

	(void)state;
	scene(false);
	/* Back as it was before the cycle: no difference left. */
	fsbt_write_file(S.a, A_BEFORE);
	BACKUP(&r, "diff", "1", S.a);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "");
	/* A file the cycle never touched. */
	snprintf(other, sizeof(other), "%s/other.txt", S.ws);
	fsbt_write_file(other, "untouched\n");
	BACKUP(&r, "diff", "--last", other);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "");
	assert_non_null(strstr(r.err, "cycle 1 did not touch"));
	/* And the changed one still differs. */
	fsbt_write_file(S.a, A_AFTER);
	BACKUP(&r, "diff", "1", S.a);
	assert_int_equal(r.status, 1);
}

static void test_diff_of_created_file(void **state)
{
	char want[PATH_MAX * 3];
	struct run r;

	(void)state;
	scene(false);
	BACKUP(&r, "diff", "--last", S.made);
	assert_int_equal(r.status, 1);
	snprintf(want, sizeof(want), "created by the cycle: %s\n", S.made);
	assert_non_null(strstr(r.out, want));
	snprintf(want, sizeof(want), "--- %s (absent before the cycle)\n+++ %s (now)\n", S.made,
		 S.made);
	assert_non_null(strstr(r.out, want));
	assert_non_null(strstr(r.out, "\n+made by the cycle\n"));
	/* Only the path asked for. */
	assert_null(strstr(r.out, A_AFTER));
}

/* " PATH<padding> | REST\n" in `out`: a line of diff --stat. */
static bool has_stat_line(const char *out, const char *path, const char *rest)
{
	char head[PATH_MAX * 2];
	const char *p;

	snprintf(head, sizeof(head), " %s ", path);
	if ((p = strstr(out, head)) == NULL)
		return false;
	p += strlen(head);
	while (*p == ' ')
		p++;
	return strncmp(p, "| ", 2) == 0 && strncmp(p + 2, rest, strlen(rest)) == 0 &&
	       p[2 + strlen(rest)] == '\n';
}

/* --stat: a line per path with its lines added and removed, and the
 * total; --name-only: the paths alone. Neither prints the diffs. */
static void test_diff_stat_and_name_only(void **state)
{
	char want[PATH_MAX * 3];
	struct run r;

	(void)state;
	scene(false);
	BACKUP(&r, "diff", "--last", "--stat");
	assert_int_equal(r.status, 1);
	assert_null(strstr(r.out, "+++ "));
	assert_true(has_stat_line(r.out, S.a, "2 +-"));
	assert_true(has_stat_line(r.out, S.made, "1 +"));
	assert_true(has_stat_line(r.out, S.del, "1 -"));
	assert_non_null(strstr(r.out, " 3 paths changed, 2 lines added, 2 lines removed\n"));

	BACKUP(&r, "diff", "--last", "--name-only");
	assert_int_equal(r.status, 1);
	snprintf(want, sizeof(want), "%s\n%s\n%s\n", S.a, S.made, S.del);
	assert_string_equal(r.out, want);

	BACKUP(&r, "diff", "--last", "--stat", "--name-only");
	assert_int_equal(r.status, 2);
}

/* cat prints the old version without restoring it; log lists the cycles
 * and tool calls that changed a path. */
static void test_cat_prints_the_old_version_and_log_the_cycles(void **state)
{
	char want[PATH_MAX * 3];
	struct run r;

	(void)state;
	scene(false);
	BACKUP(&r, "cat", "--last", S.a);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, A_BEFORE);
	assert_content(S.a, A_AFTER);
	BACKUP(&r, "cat", "1", S.del);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, D_BEFORE);
	assert_int_equal(access(S.del, F_OK), -1);
	/* Absent before: nothing to print, and it says so. */
	BACKUP(&r, "cat", "1", S.made);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.out, "");
	assert_non_null(strstr(r.err, "was absent before cycle 1"));
	BACKUP(&r, "cat", "1");
	assert_int_equal(r.status, 2);

	BACKUP(&r, "log", S.del);
	assert_int_equal(r.status, 0);
	assert_true(fsbt_starts(r.out, "cycle 1  "));
	snprintf(want, sizeof(want), "    deleted   %s  (tool call tc-2)\n", S.del);
	assert_non_null(strstr(r.out, want));
	assert_null(strstr(r.out, S.a));
	BACKUP(&r, "log", S.a, "--json");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "\"change\":\t\"modified\""));
	assert_non_null(strstr(r.out, "\"toolCallId\":\t\"tc-1\""));
}

static const char *json_status(cJSON *arr, const char *path)
{
	cJSON *o;

	cJSON_ArrayForEach(o, arr) {
		cJSON *p = cJSON_GetObjectItem(o, "path"), *s = cJSON_GetObjectItem(o, "status");

		if (cJSON_IsString(p) && strcmp(p->valuestring, path) == 0 && cJSON_IsString(s))
			return s->valuestring;
	}
	return NULL;
}

static void test_diff_json_parses(void **state)
{
	struct run r;
	cJSON *arr;

	(void)state;
	scene(false);
	BACKUP(&r, "diff", "--last", "--json");
	assert_int_equal(r.status, 1);
	arr = cJSON_Parse(r.out);
	assert_non_null(arr);
	assert_true(cJSON_IsArray(arr));
	assert_int_equal(cJSON_GetArraySize(arr), 3);
	assert_string_equal(json_status(arr, S.a), "changed");
	assert_string_equal(json_status(arr, S.made), "created");
	assert_string_equal(json_status(arr, S.del), "removed");
	assert_null(strstr(r.out, "@@"));
	cJSON_Delete(arr);

	fsbt_write_file(S.a, A_BEFORE);
	BACKUP(&r, "diff", "--last", "--json", S.a);
	assert_int_equal(r.status, 0);
	arr = cJSON_Parse(r.out);
	assert_non_null(arr);
	assert_int_equal(cJSON_GetArraySize(arr), 1);
	assert_string_equal(json_status(arr, S.a), "unchanged");
	cJSON_Delete(arr);
}

/* A rename journaled as the core journals it: the source with where it
 * went and no content (`moved`), the new name absent before. */
static void rename_scene(char from[PATH_MAX * 2], char to[PATH_MAX * 2])
{
	const char *paths[] = { from, to, NULL };
	char *end;
	struct stat st;
	char tail[PATH_MAX * 3];

	snprintf(from, PATH_MAX * 2, "%s/old-name.txt", S.ws);
	snprintf(to, PATH_MAX * 2, "%s/new-name.txt", S.ws);
	fsbt_write_file(from, "moved, not copied\n");
	assert_int_equal(lstat(from, &st), 0);
	journal_add("tc-1", "rename-from", from, &st, NULL);
	end = strstr(S.journal + strlen(S.journal) - 20, "},\"ok\":true}\n");
	assert_non_null(end);
	snprintf(tail, sizeof(tail), ",\"moved\":true},\"movedTo\":\"%s\",\"ok\":true}\n", to);
	snprintf(end, sizeof(S.journal) - (size_t)(end - S.journal), "%s", tail);
	journal_add("tc-1", "rename-to", to, NULL, NULL);
	assert_int_equal(rename(from, to), 0);
	journal_write();
	seal(paths);
}

static void test_show_and_diff_say_a_rename_is_a_rename(void **state)
{
	char from[PATH_MAX * 2], to[PATH_MAX * 2], want[PATH_MAX * 5];
	const cJSON *e, *m;
	struct run r;
	cJSON *o;
	int n = 0;

	(void)state;
	rename_scene(from, to);
	snprintf(want, sizeof(want), "%s -> %s\n", from, to);

	/* One line, the source's, naming both ends: no delete, no create. */
	BACKUP(&r, "show", "--last");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "renamed (18 bytes)"));
	assert_non_null(strstr(r.out, want));
	assert_null(strstr(r.out, "created"));
	assert_null(strstr(r.out, "deleted"));

	BACKUP(&r, "show", "--last", "--json");
	o = cJSON_Parse(r.out);
	assert_non_null(o);
	cJSON_ArrayForEach(e, cJSON_GetObjectItem(o, "paths")) {
		const char *path = cJSON_GetObjectItem(e, "path")->valuestring;

		if (strcmp(path, from) == 0) {
			m = cJSON_GetObjectItem(e, "movedTo");
			assert_true(cJSON_IsString(m));
			assert_string_equal(m->valuestring, to);
			n++;
		} else if (strcmp(path, to) == 0) {
			m = cJSON_GetObjectItem(e, "movedFrom");
			assert_true(cJSON_IsString(m));
			assert_string_equal(m->valuestring, from);
			n++;
		}
	}
	assert_int_equal(n, 2);
	cJSON_Delete(o);

	/* diff: the rename, once, and a difference (exit 1). */
	snprintf(want, sizeof(want), "renamed %s -> %s\n", from, to);
	BACKUP(&r, "diff", "--last");
	assert_int_equal(r.status, 1);
	assert_string_equal(r.out, want);
	/* Asked about the new name alone, the same line. */
	BACKUP(&r, "diff", "--last", to);
	assert_int_equal(r.status, 1);
	assert_string_equal(r.out, want);

	BACKUP(&r, "diff", "--last", "--json");
	assert_int_equal(r.status, 1);
	o = cJSON_Parse(r.out);
	assert_non_null(o);
	assert_int_equal(cJSON_GetArraySize(o), 1);
	assert_string_equal(json_status(o, from), "renamed");
	m = cJSON_GetObjectItem(cJSON_GetArrayItem(o, 0), "movedTo");
	assert_true(cJSON_IsString(m));
	assert_string_equal(m->valuestring, to);
	cJSON_Delete(o);

	/* Once restored, the rename is undone: nothing differs. */
	BACKUP(&r, "restore", "--last");
	assert_int_equal(r.status, 0);
	assert_content(from, "moved, not copied\n");
	assert_int_equal(access(to, F_OK), -1);
	BACKUP(&r, "diff", "--last");
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "");
}

static void test_diff_refuses_corrupted_object(void **state)
{
	char obj[PATH_MAX * 3];
	struct run r;

	(void)state;
	scene(false);
	object_path(S.a_hex, obj, sizeof(obj));
	assert_int_equal(chmod(obj, 0600), 0);
	fsbt_write_file(obj, "not what was backed up\n");
	BACKUP(&r, "diff", "--last", S.a);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "does not match its SHA-256"));
	assert_null(strstr(r.out, "not what was backed up"));
}

/* cat checks the object before it prints a byte: a damaged one prints
 * nothing of what is in it now. */
static void test_cat_refuses_corrupted_object(void **state)
{
	char obj[PATH_MAX * 3];
	struct run r;

	(void)state;
	scene(false);
	object_path(S.a_hex, obj, sizeof(obj));
	assert_int_equal(chmod(obj, 0600), 0);
	fsbt_write_file(obj, "not what was backed up\n");
	BACKUP(&r, "cat", "--last", S.a);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "does not match its SHA-256"));
	assert_string_equal(r.out, "");
}

/* ---- prune --------------------------------------------------------------- */

/* Cycle `n` with one `write` record per object in `hexes` (NULL-ended);
 * sealed at `sealed` (RFC 3339), or open when NULL. */
static void prune_cycle(unsigned n, const char *const *hexes, const char *sealed)
{
	char path[PATH_MAX * 3], file[PATH_MAX * 2], text[1024];
	struct stat st;

	S.journal[0] = '\0';
	S.seq = 0;
	for (int i = 0; hexes[i] != NULL; i++) {
		snprintf(file, sizeof(file), "%s/f%u-%d.txt", S.ws, n, i);
		fsbt_write_file(file, "x\n");
		assert_int_equal(lstat(file, &st), 0);
		journal_add("tc", "write", file, &st, hexes[i]);
	}
	snprintf(path, sizeof(path), "%s/cycles/%u", S.store, n);
	mkdirs(path);
	snprintf(path, sizeof(path), "%s/cycles/%u/journal.jsonl", S.store, n);
	fsbt_write_file(path, S.journal);
	if (sealed == NULL)
		return;
	snprintf(text, sizeof(text),
		 "{\"cycle\": %u, \"message\": \"turn %u\", \"opened\": \"%s\", \"sealed\": \"%s\","
		 " \"auditHead\": \"%064d\", \"recovered\": false, \"paths\": {}}\n",
		 n, n, sealed, sealed, 0);
	snprintf(path, sizeof(path), "%s/cycles/%u/cycle.json", S.store, n);
	fsbt_write_file(path, text);
}

static bool cycle_exists(unsigned n)
{
	char path[PATH_MAX * 3];

	snprintf(path, sizeof(path), "%s/cycles/%u", S.store, n);
	return access(path, F_OK) == 0;
}

static bool object_exists(const char *hex)
{
	char path[PATH_MAX * 3];

	object_path(hex, path, sizeof(path));
	return access(path, F_OK) == 0;
}

static void assert_no_pruning_dirs(void)
{
	char path[PATH_MAX * 3];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "%s/cycles", S.store);
	d = opendir(path);
	assert_non_null(d);
	while ((de = readdir(d)) != NULL)
		assert_null(strstr(de->d_name, ".pruning-"));
	closedir(d);
}

/* Objects: x only in cycle 1, y in cycles 1 and 3, z only in 2, w only in
 * 3, o only in the open cycle 4. */
static char X[65], Y[65], Z[65], W[65], O[65];

static void prune_store(bool with_open)
{
	put_object("x only in cycle 1\n", X);
	put_object("y in cycles 1 and 3\n", Y);
	put_object("z only in cycle 2\n", Z);
	put_object("w only in cycle 3\n", W);
	put_object("o in the open cycle\n", O);
	prune_cycle(1, (const char *const[]){ X, Y, NULL }, "2020-01-01T00:00:01.000Z");
	prune_cycle(2, (const char *const[]){ Z, NULL }, "2020-01-02T00:00:01.000Z");
	prune_cycle(3, (const char *const[]){ W, Y, NULL }, "2099-01-03T00:00:01.000Z");
	if (with_open)
		prune_cycle(4, (const char *const[]){ O, NULL }, NULL);
}

static void test_prune_keep_1_keeps_newest_and_its_objects(void **state)
{
	struct run r;

	(void)state;
	prune_store(false);
	BACKUP(&r, "prune", "--keep", "1");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "removed cycle 1 "));
	assert_non_null(strstr(r.out, "removed cycle 2 "));
	assert_null(strstr(r.out, "cycle 3"));
	assert_non_null(strstr(r.out, "Removed 2 cycles and 3 objects"));
	assert_non_null(strstr(r.out, "bytes freed"));
	assert_false(cycle_exists(1));
	assert_false(cycle_exists(2));
	assert_true(cycle_exists(3));
	assert_false(object_exists(X));
	assert_false(object_exists(Z));
	assert_true(object_exists(Y));	/* still named by cycle 3 */
	assert_true(object_exists(W));
	assert_false(object_exists(O));	/* named by no cycle at all */
	assert_no_pruning_dirs();
}

static void test_prune_never_removes_the_open_cycle(void **state)
{
	struct run r;

	(void)state;
	prune_store(true);
	BACKUP(&r, "prune", "--keep", "0");
	assert_int_equal(r.status, 0);
	assert_false(cycle_exists(1));
	assert_false(cycle_exists(2));
	assert_false(cycle_exists(3));
	assert_true(cycle_exists(4));
	assert_null(strstr(r.out, "cycle 4"));
	assert_true(object_exists(O));
	assert_false(object_exists(X));
	assert_false(object_exists(Y));
	assert_false(object_exists(W));
	BACKUP(&r, "list", "--json");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "\"open\""));
}

static void test_prune_older_than(void **state)
{
	struct run r;

	(void)state;
	prune_store(true);
	BACKUP(&r, "prune", "--older-than", "30");
	assert_int_equal(r.status, 0);
	assert_false(cycle_exists(1));
	assert_false(cycle_exists(2));
	assert_true(cycle_exists(3));	/* sealed "in 2099": not older */
	assert_true(cycle_exists(4));
	assert_false(object_exists(X));
	assert_true(object_exists(Y));
}

static void test_prune_dry_run_changes_nothing(void **state)
{
	struct run r;

	(void)state;
	prune_store(true);
	BACKUP(&r, "prune", "--keep", "1", "--dry-run");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "would remove cycle 1 "));
	assert_non_null(strstr(r.out, "would remove cycle 2 "));
	assert_non_null(strstr(r.out, "Would remove 2 cycles and 2 objects"));
	for (unsigned n = 1; n <= 4; n++)
		assert_true(cycle_exists(n));
	assert_true(object_exists(X));
	assert_true(object_exists(Y));
	assert_true(object_exists(Z));
	assert_true(object_exists(W));
	assert_true(object_exists(O));
	assert_no_pruning_dirs();
}

static void test_prune_refuses_while_the_store_is_locked(void **state)
{
	struct run r;
	int fd;

	(void)state;
	prune_store(false);
	fd = open(S.store, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), 0);
	BACKUP(&r, "prune", "--keep", "1");
	assert_int_not_equal(r.status, 0);
	assert_non_null(strstr(r.err, "the store is in use by a running fsbroker core; stop it "
				      "or prune later"));
	assert_true(cycle_exists(1));
	assert_true(object_exists(X));
	BACKUP(&r, "prune", "--keep", "1", "--dry-run");
	assert_int_not_equal(r.status, 0);
	close(fd);
	/* Once the lock is free it goes ahead. */
	BACKUP(&r, "prune", "--keep", "1");
	assert_int_equal(r.status, 0);
	assert_false(cycle_exists(1));
}

static void test_prune_usage_errors_exit_2(void **state)
{
	struct run r;

	(void)state;
	prune_store(false);
	BACKUP(&r, "prune");
	assert_int_equal(r.status, 2);
	BACKUP(&r, "prune", "--keep", "1", "--older-than", "3");
	assert_int_equal(r.status, 2);
	BACKUP(&r, "prune", "--keep", "-1");
	assert_int_equal(r.status, 2);
	BACKUP(&r, "list", "--keep", "1");
	assert_int_equal(r.status, 2);
	for (unsigned n = 1; n <= 3; n++)
		assert_true(cycle_exists(n));
}

/* ---- prune --max-size ---------------------------------------------------- */

/* The bytes of the regular files under `dir`, measured here. */
static unsigned long long tree_bytes(const char *dir)
{
	char path[PATH_MAX * 3];
	unsigned long long total = 0;
	struct dirent *de;
	struct stat st;
	DIR *d = opendir(dir);

	if (d == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		assert_int_equal(lstat(path, &st), 0);
		if (S_ISDIR(st.st_mode))
			total += tree_bytes(path);
		else if (S_ISREG(st.st_mode))
			total += (unsigned long long)st.st_size;
	}
	closedir(d);
	return total;
}

static unsigned long long cycle_size(unsigned n)
{
	char path[PATH_MAX * 3];

	snprintf(path, sizeof(path), "%s/cycles/%u", S.store, n);
	return tree_bytes(path);
}

static unsigned long long object_size(const char *hex)
{
	char path[PATH_MAX * 3];
	struct stat st;

	object_path(hex, path, sizeof(path));
	assert_int_equal(stat(path, &st), 0);
	return (unsigned long long)st.st_size;
}

static void test_prune_max_size_removes_oldest_cycles_until_under(void **state)
{
	unsigned long long without_1, only_3;
	char size[32], want[128];
	struct run r;

	(void)state;
	prune_store(false);
	/* The store without cycle 1: cycles 2 and 3 and the objects they
	 * name (y is named by cycle 3 too). */
	without_1 = cycle_size(2) + cycle_size(3) + object_size(Z) + object_size(W) +
		    object_size(Y);
	only_3 = cycle_size(3) + object_size(W) + object_size(Y);

	/* One byte less than that: cycles 1 and 2 would have to go. */
	snprintf(size, sizeof(size), "%llu", without_1 - 1);
	BACKUP(&r, "prune", "--max-size", size, "--dry-run");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "would remove cycle 1 "));
	assert_non_null(strstr(r.out, "would remove cycle 2 "));
	assert_null(strstr(r.out, "cycle 3"));
	for (unsigned n = 1; n <= 3; n++)
		assert_true(cycle_exists(n));
	assert_true(object_exists(X));
	assert_true(object_exists(Z));

	/* Exactly that: cycle 1 goes, and only it. */
	snprintf(size, sizeof(size), "%llu", without_1);
	BACKUP(&r, "prune", "--max-size", size);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "removed cycle 1 "));
	assert_null(strstr(r.out, "cycle 2"));
	snprintf(want, sizeof(want), "The store holds %llu bytes (at most %llu asked).",
		 without_1, without_1);
	assert_non_null(strstr(r.out, want));
	assert_false(cycle_exists(1));
	assert_true(cycle_exists(2));
	assert_true(cycle_exists(3));
	assert_false(object_exists(X));
	assert_true(object_exists(Y));	/* still named by cycle 3 */
	assert_true(object_exists(Z));
	assert_true(object_exists(W));
	assert_no_pruning_dirs();

	/* Down to cycle 3 alone. */
	snprintf(size, sizeof(size), "%llu", only_3);
	BACKUP(&r, "prune", "--max-size", size);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "removed cycle 2 "));
	assert_false(cycle_exists(2));
	assert_true(cycle_exists(3));
	assert_false(object_exists(Z));
	assert_true(object_exists(Y));
	assert_true(object_exists(W));
}

/* `backup du` on the prune store: cycle 1 owns x and shares y with cycle
 * 3, cycle 2 owns z, cycle 4 is open (prune would free nothing of it). */
static void test_du_says_what_each_cycle_holds_and_would_free(void **state)
{
	unsigned long long c1, c2, c3, c4;
	cJSON *o, *cy, *t;
	struct run r;

	(void)state;
	prune_store(true);
	c1 = cycle_size(1);
	c2 = cycle_size(2);
	c3 = cycle_size(3);
	c4 = cycle_size(4);
	BACKUP(&r, "du", "--json");
	assert_int_equal(r.status, 0);
	o = cJSON_Parse(r.out);
	assert_non_null(o);
	cy = cJSON_GetObjectItem(o, "cycles");
	assert_int_equal(cJSON_GetArraySize(cy), 4);
	t = cJSON_GetArrayItem(cy, 0);
	assert_int_equal(fsbt_num(t, "cycle"), 1);
	assert_int_equal(fsbt_num(t, "files"), c1);
	assert_int_equal(fsbt_num(t, "own"), object_size(X));
	assert_int_equal(fsbt_num(t, "shared"), object_size(Y));
	assert_int_equal(fsbt_num(t, "frees"), c1 + object_size(X));
	t = cJSON_GetArrayItem(cy, 1);
	assert_int_equal(fsbt_num(t, "own"), object_size(Z));
	assert_int_equal(fsbt_num(t, "shared"), 0);
	assert_int_equal(fsbt_num(t, "frees"), c2 + object_size(Z));
	t = cJSON_GetArrayItem(cy, 2);
	assert_int_equal(fsbt_num(t, "own"), object_size(W));
	assert_int_equal(fsbt_num(t, "shared"), object_size(Y));
	t = cJSON_GetArrayItem(cy, 3);
	assert_string_equal(fsbt_str(t, "state"), "open");
	assert_int_equal(fsbt_num(t, "own"), object_size(O));
	assert_int_equal(fsbt_num(t, "frees"), 0);
	t = cJSON_GetObjectItem(o, "total");
	assert_int_equal(fsbt_num(t, "objects"), 5);
	assert_int_equal(fsbt_num(t, "unreferenced"), 0);
	assert_int_equal(fsbt_num(t, "bytes"), c1 + c2 + c3 + c4 + object_size(X) +
			 object_size(Y) + object_size(Z) + object_size(W) + object_size(O));
	cJSON_Delete(o);

	BACKUP(&r, "du");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "total: 4 cycles, 5 objects, "));
	assert_non_null(strstr(r.out, "\n     4  open  "));
}

static void test_prune_max_size_keeps_the_open_cycle_and_says_when_over(void **state)
{
	struct run r;

	(void)state;
	prune_store(true);
	BACKUP(&r, "prune", "--max-size", "0");
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "the store still holds"));
	assert_non_null(strstr(r.err, "more than 0: what is left is the open cycle"));
	assert_false(cycle_exists(1));
	assert_false(cycle_exists(2));
	assert_false(cycle_exists(3));
	assert_true(cycle_exists(4));
	assert_true(object_exists(O));
	assert_false(object_exists(Y));
}

static void test_prune_max_size_reads_units_and_refuses_junk(void **state)
{
	struct run r;

	(void)state;
	prune_store(false);
	BACKUP(&r, "prune", "--max-size", "1G");
	assert_int_equal(r.status, 0);
	/* No cycle goes; the object no cycle names does, as with --keep. */
	assert_non_null(strstr(r.out, "Removed 0 cycles and 1 object"));
	assert_false(object_exists(O));
	assert_non_null(strstr(r.out, "(at most 1073741824 asked)"));
	BACKUP(&r, "prune", "--max-size", "12Q");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "--max-size needs a size"));
	BACKUP(&r, "prune", "--max-size", "1K", "--keep", "1");
	assert_int_equal(r.status, 2);
	BACKUP(&r, "list", "--max-size", "1K");
	assert_int_equal(r.status, 2);
	for (unsigned n = 1; n <= 3; n++)
		assert_true(cycle_exists(n));
}

/* ---- undo ---------------------------------------------------------------- */

struct snap {
	bool exists;
	struct stat st;
	char *text;
};

static void take(struct snap *s, const char *path)
{
	memset(s, 0, sizeof(*s));
	if (access(path, F_OK) == 0)
		s->text = content(path);
	/* After the read, which may have moved the atime (relatime). */
	s->exists = lstat(path, &s->st) == 0;
}

/* `path` is as `s` was: content, type, mode, owner, size, times. */
static void assert_as(const struct snap *s, const char *path)
{
	struct stat st;

	if (!s->exists) {
		assert_int_equal(lstat(path, &st), -1);
		assert_int_equal(errno, ENOENT);
		return;
	}
	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(st.st_mode, s->st.st_mode);
	assert_int_equal(st.st_uid, s->st.st_uid);
	assert_int_equal(st.st_gid, s->st.st_gid);
	assert_int_equal(st.st_size, s->st.st_size);
	assert_int_equal(st.st_mtim.tv_sec, s->st.st_mtim.tv_sec);
	assert_int_equal(st.st_mtim.tv_nsec, s->st.st_mtim.tv_nsec);
	assert_int_equal(st.st_atim.tv_sec, s->st.st_atim.tv_sec);
	assert_int_equal(st.st_atim.tv_nsec, s->st.st_atim.tv_nsec);
	assert_content(path, s->text);
}

static void snap_free(struct snap *s)
{
	free(s->text);
}

static void undo_store_path(const char *rest, char *out, size_t len)
{
	snprintf(out, len, "%s/sessions/%s/restore_backup%s", S.state, SESSION, rest);
}

static int undo_cycles(void)
{
	char path[PATH_MAX * 3];
	struct dirent *de;
	int n = 0;
	DIR *d;

	undo_store_path("/cycles", path, sizeof(path));
	d = opendir(path);
	if (d == NULL)
		return 0;
	while ((de = readdir(d)) != NULL)
		n += de->d_name[0] >= '1' && de->d_name[0] <= '9';
	closedir(d);
	return n;
}

static void test_restore_then_undo_gives_back_the_state_before_the_restore(void **state)
{
	struct snap a, made, del, a2, made2, del2;
	struct run r;
	cJSON *arr;

	(void)state;
	need_openat2();
	scene(false);
	/* Give the file the cycle left times of its own, to the nanosecond. */
	set_times(S.a, 1800000000, 7, 1800000100, 987654321);
	set_times(S.made, 1800000200, 11, 1800000300, 13);
	seal((const char *const[]){ S.a, S.made, S.del, NULL });
	take(&a, S.a);
	take(&made, S.made);
	take(&del, S.del);

	BACKUP(&r, "restore", "--last");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "This restore can be undone with `fsbroker backup undo` "
				      "(cycle 1 of restore_backup)."));
	assert_content(S.a, A_BEFORE);
	assert_int_equal(access(S.made, F_OK), -1);
	BACKUP(&r, "list", "--undo", "--json");
	assert_int_equal(r.status, 0);
	arr = cJSON_Parse(r.out);
	assert_non_null(arr);
	assert_int_equal(cJSON_GetArraySize(arr), 1);
	assert_string_equal(fsbt_str(cJSON_GetArrayItem(arr, 0), "message"), "restore of cycle 1");
	assert_string_equal(fsbt_str(cJSON_GetArrayItem(arr, 0), "state"), "sealed");
	cJSON_Delete(arr);
	take(&a2, S.a);
	take(&made2, S.made);
	take(&del2, S.del);

	/* Nothing has been undone: there is nothing to redo. */
	BACKUP(&r, "redo");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "nothing to redo; the last restore, cycle 1 of "
				      "restore_backup (restore of cycle 1, sealed "));
	assert_non_null(strstr(r.err, "`fsbroker backup undo` takes it back"));
	assert_string_equal(r.out, "");
	assert_int_equal(undo_cycles(), 1);

	BACKUP(&r, "undo");
	assert_int_equal(r.status, 0);
	/* It says first what it takes back. */
	assert_true(strncmp(r.out, "Undoing cycle 1 of restore_backup (restore of cycle 1, "
			    "sealed ", 56) == 0);
	assert_non_null(strstr(r.out, " UTC, 4 paths).\n"));
	assert_true(has_line(r.out, "restored", S.a, " (content, mode, times"));
	assert_true(has_line(r.out, "restored", S.made, " (content, mode, times"));
	assert_true(has_line(r.out, "removed", S.del, " (created by the cycle)"));
	assert_non_null(strstr(r.out, "`fsbroker backup redo` does the restore again (cycle 2 "
				      "of restore_backup)."));
	assert_as(&a, S.a);
	assert_as(&made, S.made);
	assert_as(&del, S.del);
	assert_no_temp_files(S.ws);

	/* No toggle: a second undo changes nothing and points at redo. */
	BACKUP(&r, "undo");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "nothing to undo; the last restore was undone already by "
				      "cycle 2 of restore_backup (undo of cycle 1, sealed "));
	assert_non_null(strstr(r.err, "`fsbroker backup redo` does the restore again"));
	assert_string_equal(r.out, "");
	assert_content(S.a, A_AFTER);
	assert_int_equal(undo_cycles(), 2);

	/* redo does the restore again, and can itself be undone. */
	BACKUP(&r, "redo");
	assert_int_equal(r.status, 0);
	assert_true(strncmp(r.out, "Redoing what cycle 2 of restore_backup (undo of cycle 1, "
			    "sealed ", 57) == 0);
	assert_non_null(strstr(r.out, "This redo can be undone with `fsbroker backup undo` "
				      "(cycle 3 of restore_backup)."));
	assert_as(&a2, S.a);
	assert_as(&made2, S.made);
	assert_as(&del2, S.del);
	assert_int_equal(undo_cycles(), 3);
	BACKUP(&r, "show", "2", "--undo");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "message: undo of cycle 1"));
	BACKUP(&r, "show", "3", "--undo");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "message: redo of cycle 2"));
	BACKUP(&r, "redo");
	assert_int_equal(r.status, 2);
	/* (The times are those the redo found: reading a.txt above moved its
	 * atime.) */
	BACKUP(&r, "undo");
	assert_int_equal(r.status, 0);
	assert_content(S.a, A_AFTER);
	assert_int_equal(access(S.del, F_OK), -1);
	assert_int_equal(undo_cycles(), 4);
	snap_free(&a);
	snap_free(&made);
	snap_free(&del);
	snap_free(&a2);
	snap_free(&made2);
	snap_free(&del2);
}

static void test_undo_of_a_path_changed_after_the_restore_needs_force(void **state)
{
	struct run r;

	(void)state;
	need_openat2();
	scene(false);
	BACKUP(&r, "restore", "--last");
	assert_int_equal(r.status, 0);
	fsbt_write_file(S.a, "edited after the restore\n");
	BACKUP(&r, "undo", "--dry-run");
	assert_int_equal(r.status, 1);
	assert_true(has_line(r.out, "skipped", S.a, ": changed since the cycle ended ("));
	assert_true(has_line(r.out, "would restore", S.made, " (content, mode, times"));
	assert_content(S.a, "edited after the restore\n");
	assert_int_equal(undo_cycles(), 1);
	BACKUP(&r, "undo", "--force");
	assert_int_equal(r.status, 0);
	assert_true(has_line(r.out, "restored", S.a, " (content, mode, times"));
	assert_content(S.a, A_AFTER);
	assert_content(S.made, "made by the cycle\n");
	assert_int_equal(undo_cycles(), 2);
	/* A partial undo counts as the undo: a second one is refused. */
	BACKUP(&r, "undo", "--force");
	assert_int_equal(r.status, 2);
	assert_content(S.a, A_AFTER);
}

/* Restore, undo, restore again: the undo wrote the files anew (other
 * inodes), which the second restore took for a later change and skipped
 * ("its inode differs") unless --force. */
static void test_restore_after_undo_needs_no_force(void **state)
{
	struct run r;

	(void)state;
	need_openat2();
	scene(false);
	for (int round = 0; round < 2; round++) {
		BACKUP(&r, "restore", "--last");
		assert_int_equal(r.status, 0);
		assert_content(S.a, A_BEFORE);
		assert_int_equal(access(S.made, F_OK), -1);
		assert_content(S.del, D_BEFORE);
		BACKUP(&r, "undo");
		assert_int_equal(r.status, 0);
		assert_content(S.a, A_AFTER);
		assert_content(S.made, "made by the cycle\n");
		assert_int_equal(access(S.del, F_OK), -1);
	}
	/* Twice undone: the chain of undos is followed back to the cycle. */
	BACKUP(&r, "restore", "--last");
	assert_int_equal(r.status, 0);
	assert_null(strstr(r.out, "forced"));
	assert_true(has_line(r.out, "restored", S.a, " (content, mode, times"));
	assert_true(has_line(r.out, "removed", S.made, " (created by the cycle)"));
	assert_content(S.a, A_BEFORE);
	assert_int_equal(access(S.made, F_OK), -1);
	assert_content(S.del, D_BEFORE);
}

/* What the undo left stands for the cycle's end only while nothing else
 * changed it: an edit after the undo is still a later change. */
static void test_restore_after_undo_and_an_edit_still_needs_force(void **state)
{
	struct run r;

	(void)state;
	need_openat2();
	scene(false);
	BACKUP(&r, "restore", "--last");
	assert_int_equal(r.status, 0);
	BACKUP(&r, "undo");
	assert_int_equal(r.status, 0);
	fsbt_write_file(S.a, "edited after the undo\n");
	fsbt_write_file(S.made, "edited too\n");
	BACKUP(&r, "restore", "--last");
	assert_int_equal(r.status, 1);
	assert_true(has_line(r.out, "skipped", S.a, ": changed since the cycle ended ("));
	assert_true(has_line(r.out, "skipped", S.made, ": changed since the cycle ended ("));
	assert_content(S.a, "edited after the undo\n");
	assert_content(S.made, "edited too\n");
	assert_content(S.del, D_BEFORE);	/* the rest is restored */
}

static void test_restore_refuses_when_the_undo_store_cannot_be_written(void **state)
{
	char path[PATH_MAX * 3];
	struct run r;

	(void)state;
	need_openat2();
	scene(false);
	/* A file where the restore_backup directory would go: it cannot be
	 * opened, as on a full disk or a read-only state dir. */
	undo_store_path("", path, sizeof(path));
	fsbt_write_file(path, "not a directory\n");
	BACKUP(&r, "restore", "--last");
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "Nothing was restored"));
	assert_non_null(strstr(r.err, "--no-undo"));
	assert_string_equal(r.out, "");
	assert_content(S.a, A_AFTER);
	assert_content(S.made, "made by the cycle\n");
	assert_int_equal(access(S.del, F_OK), -1);
	assert_no_temp_files(S.ws);

	/* --no-undo goes ahead without the copy. */
	BACKUP(&r, "restore", "--last", "--no-undo");
	assert_int_equal(r.status, 0);
	assert_null(strstr(r.out, "can be undone"));
	assert_content(S.a, A_BEFORE);
	assert_content(S.del, D_BEFORE);
	assert_content(path, "not a directory\n");
}

static void test_restore_refuses_when_a_copy_fails_halfway(void **state)
{
	char path[PATH_MAX * 3], hex[65];
	struct run r;

	(void)state;
	need_openat2();
	scene(false);
	/* The store opens, and the first copies may work; the copy of a.txt
	 * as the cycle left it cannot be linked in: its objects/<hh> is a
	 * file. */
	fsb_sha256_hex(A_AFTER, strlen(A_AFTER), hex);
	undo_store_path("/objects", path, sizeof(path));
	mkdirs(path);
	snprintf(path + strlen(path), sizeof(path) - strlen(path), "/%.2s", hex);
	fsbt_write_file(path, "in the way\n");
	BACKUP(&r, "restore", "--last");
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "cannot keep a copy of"));
	assert_non_null(strstr(r.err, "Nothing was restored"));
	assert_content(S.a, A_AFTER);
	assert_content(S.made, "made by the cycle\n");
	assert_int_equal(access(S.del, F_OK), -1);
	/* No cycle is left behind for an undo to take for a restore. */
	assert_int_equal(undo_cycles(), 0);
	BACKUP(&r, "undo");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "nothing to undo: session "));
	assert_non_null(strstr(r.err, "has no restore to undo"));
}

static void test_dry_runs_of_restore_and_undo_write_nothing(void **state)
{
	char path[PATH_MAX * 3];
	struct run r;

	(void)state;
	need_openat2();
	scene(false);
	BACKUP(&r, "restore", "--last", "--dry-run");
	assert_int_equal(r.status, 0);
	undo_store_path("", path, sizeof(path));
	assert_int_equal(access(path, F_OK), -1);	/* not even made */
	assert_content(S.a, A_AFTER);

	BACKUP(&r, "restore", "--last");
	assert_int_equal(r.status, 0);
	assert_int_equal(undo_cycles(), 1);
	BACKUP(&r, "undo", "--dry-run");
	assert_int_equal(r.status, 0);
	assert_true(has_line(r.out, "would restore", S.a, " (content, mode, times)"));
	assert_int_equal(undo_cycles(), 1);
	assert_content(S.a, A_BEFORE);
	assert_int_equal(access(S.made, F_OK), -1);
	assert_content(S.del, D_BEFORE);
}

/*
 * A cycle sealed by an fsbroker from before restore checked what it
 * removes: its end states carry no dev, and for a name the sandbox made in
 * its private /tmp they describe the host's object of that name. Restore,
 * even with --force, then removes only created paths that hold nothing
 * (an empty file, an empty directory) and leaves a non-empty file, naming
 * it.
 */
static void restore_of_an_old_cycle_removes_only_empty_created_paths(void **state)
{
	char empty[PATH_MAX * 2 + 16], dir[PATH_MAX * 2 + 16];
	const char *paths[] = { S.made, empty, dir, NULL };
	struct run r;

	(void)state;
	need_openat2();
	snprintf(empty, sizeof(empty), "%s/empty.txt", S.ws);
	snprintf(dir, sizeof(dir), "%s/newdir", S.ws);
	/* Journaled before they exist: no `made`, as an older core wrote. */
	journal_add("tc-1", "create", S.made, NULL, NULL);
	journal_add("tc-1", "create", empty, NULL, NULL);
	journal_add("tc-1", "mkdir", dir, NULL, NULL);
	journal_write();
	fsbt_write_file(S.made, "the host's ticket\n");
	fsbt_write_file(empty, "");
	assert_int_equal(mkdir(dir, 0755), 0);
	S.old_end_states = true;
	seal(paths);

	BACKUP(&r, "restore", "--last", "--force");
	assert_int_equal(r.status, 1);
	assert_content(S.made, "the host's ticket\n");
	assert_true(has_line(r.out, "left", S.made,
			     ": not removed: the cycle recorded no device and inode of what it "
			     "created here (it was sealed by an fsbroker that did not record them), "
			     "and a non-empty file is not certainly its own"));
	assert_int_equal(access(empty, F_OK), -1);
	assert_int_equal(access(dir, F_OK), -1);
}


/* ---- restore --to DIR ---------------------------------------------------- */

static void test_restore_to_a_directory_touches_nothing_in_place(void **state)
{
	char out[PATH_MAX * 2], f[PATH_MAX * 3], want[PATH_MAX * 4];
	struct stat st;
	struct run r;

	(void)state;
	scene(false);
	snprintf(out, sizeof(out), "%s/out", S.root);
	BACKUP(&r, "restore", "--last", "--to", out, "--workspace", S.ws, "--dry-run");
	assert_int_equal(r.status, 0);
	assert_int_equal(access(out, F_OK), -1);	/* a dry run makes nothing */
	snprintf(want, sizeof(want), " (into %s/a.txt)", out);
	assert_true(has_line(r.out, "would restore", S.a, want));

	BACKUP(&r, "restore", "--last", "--to", out, "--workspace", S.ws);
	assert_int_equal(r.status, 0);
	snprintf(want, sizeof(want), " (into %s/a.txt: content, mode, times)", out);
	assert_true(has_line(r.out, "restored", S.a, want));
	assert_true(has_line(r.out, "absent", S.made, ": the cycle created it: nothing to write"));
	assert_non_null(strstr(r.out, "restore --to: 3 paths in "));
	/* The old versions, laid out as below the workspace. */
	snprintf(f, sizeof(f), "%s/a.txt", out);
	assert_content(f, A_BEFORE);
	assert_int_equal(lstat(f, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(st.st_mtim.tv_sec, S.a_before.st_mtim.tv_sec);
	assert_int_equal(st.st_mtim.tv_nsec, S.a_before.st_mtim.tv_nsec);
	snprintf(f, sizeof(f), "%s/del.txt", out);
	assert_content(f, D_BEFORE);
	assert_int_equal(lstat(f, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	snprintf(f, sizeof(f), "%s/new.txt", out);
	assert_int_equal(access(f, F_OK), -1);
	/* In place, all as the cycle left it, and no undo was kept. */
	assert_content(S.a, A_AFTER);
	assert_content(S.made, "made by the cycle\n");
	assert_int_equal(access(S.del, F_OK), -1);
	assert_int_equal(undo_cycles(), 0);

	/* A directory that holds something is refused. */
	BACKUP(&r, "restore", "--last", "--to", out, "--workspace", S.ws);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "the directory is not empty"));
	/* One PATH only; --force and --no-undo do not go with --to. */
	snprintf(out, sizeof(out), "%s/out2", S.root);
	BACKUP(&r, "restore", "--last", S.a, "--to", out, "--workspace", S.ws);
	assert_int_equal(r.status, 0);
	snprintf(f, sizeof(f), "%s/a.txt", out);
	assert_content(f, A_BEFORE);
	snprintf(f, sizeof(f), "%s/del.txt", out);
	assert_int_equal(access(f, F_OK), -1);
	BACKUP(&r, "restore", "--last", "--to", out, "--force");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "goes without --force and --no-undo"));
}

/* A symlink the restore writes into DIR leads no later path out of DIR: the
 * walk below DIR follows no symlink, so a file journaled beneath the link's
 * name is skipped, not written where the link points. */
static void test_restore_to_follows_no_symlink_it_wrote(void **state)
{
	char out[PATH_MAX * 2], lnk[PATH_MAX * 2], evil[PATH_MAX * 3], f[PATH_MAX * 3];
	char hex[65];
	size_t n;
	struct stat st;
	struct run r;

	(void)state;
	snprintf(lnk, sizeof(lnk), "%s/lnk", S.ws);
	snprintf(evil, sizeof(evil), "%s/lnk/evil.txt", S.ws);
	put_object(A_BEFORE, hex);
	n = strlen(S.journal);
	snprintf(S.journal + n, sizeof(S.journal) - n,
		 "{\"seq\":1,\"time\":\"2026-11-29T20:01:01.003Z\",\"toolCallId\":\"tc-1\","
		 "\"traceId\":\"tr-1\",\"op\":\"delete\",\"flags\":0,\"path\":\"%s\","
		 "\"resolved\":\"%s\",\"prior\":{\"exists\":true,\"type\":\"symlink\","
		 "\"dev\":1,\"ino\":2,\"nlink\":1,\"mode\":511,\"uid\":0,\"gid\":0,"
		 "\"size\":5,\"atime\":[1,0],\"mtime\":[1,0],\"target\":\"%s\"},\"ok\":true}\n"
		 "{\"seq\":2,\"time\":\"2026-11-29T20:01:02.003Z\",\"toolCallId\":\"tc-1\","
		 "\"traceId\":\"tr-2\",\"op\":\"delete\",\"flags\":0,\"path\":\"%s\","
		 "\"resolved\":\"%s\",\"prior\":{\"exists\":true,\"type\":\"file\","
		 "\"dev\":1,\"ino\":3,\"nlink\":1,\"mode\":420,\"uid\":0,\"gid\":0,"
		 "\"size\":%zu,\"atime\":[1,0],\"mtime\":[1,0],\"object\":\"%s\"},"
		 "\"ok\":true}\n", lnk, lnk, S.root, evil, evil, strlen(A_BEFORE), hex);
	journal_write();
	seal((const char *const[]){ lnk, evil, NULL });
	snprintf(out, sizeof(out), "%s/out", S.root);
	BACKUP(&r, "restore", "--last", "--to", out, "--workspace", S.ws);
	assert_int_equal(r.status, 1);
	assert_true(has_line(r.out, "restored", lnk, " (into "));
	assert_true(has_line(r.out, "skipped", evil, ": cannot make its directory in "));
	snprintf(f, sizeof(f), "%s/lnk", out);
	assert_int_equal(lstat(f, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	/* Where the link points, nothing was written. */
	snprintf(f, sizeof(f), "%s/evil.txt", S.root);
	assert_int_equal(access(f, F_OK), -1);
}

/* ---- on a terminal ------------------------------------------------------ */

static void test_restore_progress_on_a_terminal_and_a_total_line(void **state)
{
	struct run r;

	(void)state;
	need_openat2();
	scene(false);
	BACKUP_TTY(&r, false, NULL, "restore", "--last", "--dry-run");
	assert_int_equal(r.status, 0);
	/* The last count is always shown, rewritten in place, then cleared. */
	assert_non_null(strstr(r.err, "\r\033[Krestoring 3/3"));
	assert_non_null(strstr(r.err, "restoring 3/3\r\033[K"));
	assert_non_null(strstr(r.out, "dry run of restore: 3 paths in "));
	assert_non_null(strstr(r.out, " s: 1 would remove, 2 would restore\n"));

	BACKUP_TTY(&r, false, NULL, "restore", "--last");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.err, "restoring 3/3"));
	assert_non_null(strstr(r.out, "restore: 3 paths in "));
	assert_non_null(strstr(r.out, " s: 1 removed, 2 restored\n"));
	assert_content(S.a, A_BEFORE);

	/* -q: neither progress nor total, the lines per path stay. */
	BACKUP_TTY(&r, false, NULL, "undo", "-q");
	assert_int_equal(r.status, 0);
	assert_null(strstr(r.err, "undoing"));
	assert_null(strstr(r.out, "undo: 4 paths"));
	assert_true(has_line(r.out, "restored", S.a, " (content, mode, times"));
	assert_content(S.a, A_AFTER);

	BACKUP_TTY(&r, false, NULL, "redo");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.err, "redoing 4/4"));
	assert_non_null(strstr(r.out, "redo: 4 paths in "));
}

/* A prune's pass over the objects shows progress on a terminal (stderr),
 * never into a pipe, and -q silences it. */
static void test_prune_progress_on_a_terminal_only(void **state)
{
	struct run r;

	(void)state;
	prune_store(false);
	BACKUP_TTY(&r, false, NULL, "prune", "--keep", "1", "--dry-run");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.err, "\r\033[Klooking at objects "));
	BACKUP_TTY(&r, false, NULL, "prune", "--keep", "1", "--dry-run", "-q");
	assert_int_equal(r.status, 0);
	assert_null(strstr(r.err, "looking at objects"));
	BACKUP(&r, "prune", "--keep", "1");
	assert_int_equal(r.status, 0);
	assert_null(strstr(r.err, "pruning objects"));
	assert_false(cycle_exists(1));
}

static void test_restore_without_a_terminal_prints_the_total_but_no_progress(void **state)
{
	struct run r;

	(void)state;
	need_openat2();
	scene(false);
	BACKUP(&r, "restore", "--last");
	assert_int_equal(r.status, 0);
	assert_null(strstr(r.err, "restoring"));
	assert_null(strchr(r.err, '\r'));
	assert_non_null(strstr(r.out, "restore: 3 paths in "));
	assert_non_null(strstr(r.out, " s: 1 removed, 2 restored\n"));
	/* With --json the total goes to stderr: stdout holds the JSON alone. */
	BACKUP(&r, "undo", "--json", "--dry-run");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.err, "dry run of undo: 4 paths in "));
	assert_true(r.out[0] == '[');
	BACKUP(&r, "undo", "--quiet");
	assert_int_equal(r.status, 0);
	assert_null(strstr(r.out, "undo: 4 paths"));
}

static void test_diff_stat_progress_on_a_terminal_only(void **state)
{
	struct run r;

	(void)state;
	scene(false);
	BACKUP_TTY(&r, false, NULL, "diff", "--last", "--stat");
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err, "diffing 3/3"));
	assert_non_null(strstr(r.out, " 3 paths changed"));
	BACKUP_TTY(&r, false, NULL, "diff", "--last", "--stat", "-q");
	assert_null(strstr(r.err, "diffing"));
	BACKUP(&r, "diff", "--last", "--stat");
	assert_int_equal(r.status, 1);
	assert_null(strstr(r.err, "diffing"));
}

static void test_diff_colour_on_a_terminal_and_never_into_a_pipe(void **state)
{
	struct run r;

	(void)state;
	scene(false);
	BACKUP_TTY(&r, true, ((const char *const[]){ "PAGER=cat", NULL }), "diff", "--last");
	assert_int_equal(r.status, 1);
	/* diff's own colours: added lines green, removed red. */
	assert_non_null(strstr(r.out, "\033[32m+alpha, rewritten by the cycle"));
	assert_non_null(strstr(r.out, "\033[31m-alpha: the content before the cycle"));
	BACKUP_TTY(&r, true, ((const char *const[]){ "PAGER=cat", NULL }), "list");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "\033[33m    1\033[m  sealed"));
	BACKUP_TTY(&r, true, ((const char *const[]){ "PAGER=cat", NULL }), "diff", "--last",
		   "--stat");
	assert_non_null(strstr(r.out, "\033[32m+"));
	/* NO_COLOR, TERM=dumb and --color=never turn it off on a terminal. */
	BACKUP_TTY(&r, true, ((const char *const[]){ "PAGER=cat", "NO_COLOR=1", NULL }), "diff",
		   "--last");
	assert_non_null(strstr(r.out, "+alpha, rewritten by the cycle"));
	assert_null(strchr(r.out, '\033'));
	BACKUP_TTY(&r, true, ((const char *const[]){ "PAGER=cat", "TERM=dumb", NULL }), "diff",
		   "--last");
	assert_null(strchr(r.out, '\033'));
	BACKUP_TTY(&r, true, ((const char *const[]){ "PAGER=cat", NULL }), "diff", "--last",
		   "--color=never");
	assert_null(strchr(r.out, '\033'));
	/* --color=always over NO_COLOR: the command's word is the user's. */
	BACKUP_TTY(&r, true, ((const char *const[]){ "PAGER=cat", "NO_COLOR=1", NULL }), "diff",
		   "--last", "--color=always");
	assert_non_null(strstr(r.out, "\033[32m+alpha"));
	/* Into a pipe: none by default, colour when asked. */
	BACKUP(&r, "diff", "--last");
	assert_int_equal(r.status, 1);
	assert_null(strchr(r.out, '\033'));
	BACKUP(&r, "diff", "--last", "--color");
	assert_non_null(strstr(r.out, "\033[32m+alpha"));
	BACKUP(&r, "diff", "--last", "--color=sometimes");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err, "--color is auto, always or never, not 'sometimes'"));
	/* JSON is never coloured. */
	BACKUP(&r, "list", "--json", "--color=always");
	assert_null(strchr(r.out, '\033'));
}

static void test_output_goes_through_the_pager_on_a_terminal_only(void **state)
{
	const char *const sed[] = { "PAGER=sed s/^/paged:/", NULL };
	struct run r;

	(void)state;
	scene(false);
	BACKUP_TTY(&r, true, sed, "show", "--last");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "paged:"));
	assert_non_null(strstr(r.out, "cycle 1"));
	BACKUP_TTY(&r, true, sed, "log", S.a);
	assert_non_null(strstr(r.out, "paged:"));
	BACKUP_TTY(&r, true, sed, "show", "--last", "--no-pager");
	assert_null(strstr(r.out, "paged:"));
	assert_non_null(strstr(r.out, "cycle 1"));
	BACKUP_TTY(&r, true, ((const char *const[]){ "PAGER=", NULL }), "show", "--last");
	assert_non_null(strstr(r.out, "cycle 1"));
	/* Into a pipe, never. */
	setenv("PAGER", "sed s/^/paged:/", 1);
	BACKUP(&r, "show", "--last");
	unsetenv("PAGER");
	assert_int_equal(r.status, 0);
	assert_null(strstr(r.out, "paged:"));
	/* The default, less -FRX: output shorter than the screen is printed
	 * and less quits by itself. */
	if (access("/usr/bin/less", X_OK) == 0) {
		BACKUP_TTY(&r, true, NULL, "show", "--last");
		assert_int_equal(r.status, 0);
		assert_non_null(strstr(r.out, "cycle 1"));
	} else {
		print_message("(less is not installed: the default pager is not tried)\n");
	}
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_restore_last_brings_back_content_mode_times),
		T(test_dry_run_changes_nothing),
		T(test_path_edited_after_the_cycle_needs_force),
		T(test_corrupted_object_is_refused),
		T(test_symlinked_parent_is_not_followed),
		T(test_directories_removed_deepest_first_recreated_parents_first),
		T(test_file_without_backup_is_not_restorable),
		T(test_symlink_is_recreated_with_its_target),
		T(test_open_cycle_needs_force),
		T(test_tool_call_restores_only_its_paths),
		T(test_named_path_only_and_unknown_path),
		T(test_list_json_parses_and_text_lists),
		T(test_show_lists_paths_and_reports_bad_lines),
		T(test_empty_and_missing_sessions_say_so),
		T(test_session_is_found_by_its_recorded_workspace),
		T(test_usage_errors_exit_2),
		T(test_recovered_cycle_needs_force_for_every_path),
		T(test_fifo_object_is_refused),
		T(test_diff_shows_old_and_new_lines_and_exits_1),
		T(test_diff_of_untouched_file_exits_0),
		T(test_diff_of_created_file),
		T(test_diff_stat_and_name_only),
		T(test_cat_prints_the_old_version_and_log_the_cycles),
		T(test_cat_refuses_corrupted_object),
		T(test_diff_json_parses),
		T(test_show_and_diff_say_a_rename_is_a_rename),
		T(test_diff_refuses_corrupted_object),
		T(test_prune_keep_1_keeps_newest_and_its_objects),
		T(test_prune_never_removes_the_open_cycle),
		T(test_prune_older_than),
		T(test_prune_dry_run_changes_nothing),
		T(test_prune_refuses_while_the_store_is_locked),
		T(test_prune_usage_errors_exit_2),
		T(test_prune_max_size_removes_oldest_cycles_until_under),
		T(test_du_says_what_each_cycle_holds_and_would_free),
		T(test_prune_max_size_keeps_the_open_cycle_and_says_when_over),
		T(test_prune_max_size_reads_units_and_refuses_junk),
		T(test_restore_then_undo_gives_back_the_state_before_the_restore),
		T(test_undo_of_a_path_changed_after_the_restore_needs_force),
		T(test_restore_after_undo_needs_no_force),
		T(test_restore_after_undo_and_an_edit_still_needs_force),
		T(test_restore_to_a_directory_touches_nothing_in_place),
		T(test_restore_to_follows_no_symlink_it_wrote),
		T(test_restore_progress_on_a_terminal_and_a_total_line),
		T(test_restore_without_a_terminal_prints_the_total_but_no_progress),
		T(test_prune_progress_on_a_terminal_only),
		T(test_diff_stat_progress_on_a_terminal_only),
		T(test_diff_colour_on_a_terminal_and_never_into_a_pipe),
		T(test_output_goes_through_the_pager_on_a_terminal_only),
		T(test_restore_refuses_when_the_undo_store_cannot_be_written),
		T(test_restore_refuses_when_a_copy_fails_halfway),
		T(test_dry_runs_of_restore_and_undo_write_nothing),
		T(test_restore_brings_back_xattrs_a_write_grant_changed),
		T(test_restore_puts_xattrs_back_on_a_kept_directory),
		T(restore_of_an_old_cycle_removes_only_empty_created_paths),
	};
#undef T

	return fsbt_run_group(tests, NULL, NULL);
}
