/*
 * test_backup.c — the backup store: objects (content, name, mode, dedup,
 * a damaged object replaced), journal lines and their prior states, reuse
 * within a cycle, the size limit (also for a file growing during the copy),
 * sealing, recovery after a crash, one core per store, a full disk, a
 * journal that cannot be cut back, the caller's fd offset, xattrs in
 * prior states, read back by the journal reader byte for byte, and records
 * that keep metadata alone.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/fs.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <cJSON.h>

#include "unit.h"
#include "backup.h"
#include "backup_read.h"

#define SESSION "sess-1"
#define PATHBUF 512

/*
 * The test binary's own write, ftruncate and copy_file_range take the place
 * of libc's for the store linked into it. They go straight to the kernel
 * unless a test arms them, to meet what cannot be staged otherwise: a file
 * that grows while it is copied, a short write that cannot be cut back.
 */
static struct {
	int grow_fd;		/* >= 0: the first copy_file_range appends to it */
	size_t grow_by;
	bool no_range;		/* copy_file_range fails with ENOSYS */
	bool short_journal;	/* the next write to a journal writes half */
	int fail_truncate;	/* ftruncate fails with this errno */
	int fail_journal_sync;	/* fdatasync of a journal fails with this errno */
	int fail_syncfs;	/* syncfs fails with this errno */
	/* The first fdatasync of a journal waits (5 s at most) until
	 * `hold_until` records were appended (`appended`). */
	int hold_until;
} hook = { .grow_fd = -1 };

/* fsync and fdatasync calls, counted always: on a journal, and on
 * anything else (objects, directories, cycle.json). */
static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned journal, other;
	int appended;
	unsigned fs;		/* syncfs calls (batched durability) */
} syncs = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0 };

static void hook_reset(void)
{
	memset(&hook, 0, sizeof(hook));
	hook.grow_fd = -1;
	pthread_mutex_lock(&syncs.mu);
	syncs.journal = syncs.other = 0;
	syncs.appended = 0;
	syncs.fs = 0;
	pthread_mutex_unlock(&syncs.mu);
}

static bool is_journal(int fd)
{
	char link[64], target[PATHBUF];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return false;
	target[n] = '\0';
	return n > 14 && strcmp(target + n - 14, "/journal.jsonl") == 0;
}

ssize_t write(int fd, const void *buf, size_t len)
{
	if (hook.short_journal && len > 1 && is_journal(fd)) {
		hook.short_journal = false;
		len /= 2;
	}
	return syscall(SYS_write, fd, buf, len);
}

static int counted_sync(int fd, long nr)
{
	bool j = is_journal(fd);

	pthread_mutex_lock(&syncs.mu);
	if (j && syncs.journal == 0 && hook.hold_until > 0) {
		struct timespec until;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 5;
		while (syncs.appended < hook.hold_until &&
		       pthread_cond_timedwait(&syncs.cv, &syncs.mu, &until) == 0)
			;
	}
	if (j)
		syncs.journal++;
	else
		syncs.other++;
	pthread_mutex_unlock(&syncs.mu);
	if (j && hook.fail_journal_sync != 0) {
		errno = hook.fail_journal_sync;
		return -1;
	}
	return (int)syscall(nr, fd);
}

int fsync(int fd)
{
	return counted_sync(fd, SYS_fsync);
}

int fdatasync(int fd)
{
	return counted_sync(fd, SYS_fdatasync);
}

int syncfs(int fd)
{
	pthread_mutex_lock(&syncs.mu);
	syncs.fs++;
	pthread_mutex_unlock(&syncs.mu);
	if (hook.fail_syncfs != 0) {
		errno = hook.fail_syncfs;
		return -1;
	}
	return (int)syscall(SYS_syncfs, fd);
}

static unsigned syncfs_count(void)
{
	unsigned n;

	pthread_mutex_lock(&syncs.mu);
	n = syncs.fs;
	pthread_mutex_unlock(&syncs.mu);
	return n;
}

/* Syncs since the last call: of journals, and of anything else. */
static void syncs_take(unsigned *journal, unsigned *other)
{
	pthread_mutex_lock(&syncs.mu);
	*journal = syncs.journal;
	*other = syncs.other;
	syncs.journal = syncs.other = 0;
	pthread_mutex_unlock(&syncs.mu);
}

int ftruncate(int fd, off_t len)
{
	if (hook.fail_truncate != 0) {
		errno = hook.fail_truncate;
		return -1;
	}
	return (int)syscall(SYS_ftruncate, fd, len);
}

ssize_t copy_file_range(int in, off_t *inoff, int out, off_t *outoff, size_t len,
			unsigned int flags)
{
	if (hook.grow_fd >= 0) {
		char *more = malloc(hook.grow_by);

		assert_non_null(more);
		memset(more, 'G', hook.grow_by);
		assert_int_equal(syscall(SYS_write, hook.grow_fd, more, hook.grow_by),
				 (long)hook.grow_by);
		free(more);
		hook.grow_fd = -1;
	}
	if (hook.no_range) {
		errno = ENOSYS;
		return -1;
	}
	return syscall(SYS_copy_file_range, in, inoff, out, outoff, len, flags);
}

struct fixture {
	char dir[128];		/* the test's temp dir, under $TMPDIR or /tmp */
	char state[160];	/* <dir>/state: the state dir */
	char store[224];	/* …/modify_backup */
	char mnt[160];		/* a tmpfs mounted by the test, or "" */
	char shm[64];		/* a file made in /dev/shm, or "" */
	struct fsb_store *s;
};

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	const char *tmp = getenv("TMPDIR");

	if (f == NULL)
		return -1;
	/* TMPDIR lets the suite run on a filesystem with reflinks. */
	if (tmp == NULL || tmp[0] == '\0' || strlen(tmp) > 80)
		tmp = "/tmp";
	snprintf(f->dir, sizeof(f->dir), "%s/fsb-backup-XXXXXX", tmp);
	if (mkdtemp(f->dir) == NULL) {
		free(f);
		return -1;
	}
	snprintf(f->state, sizeof(f->state), "%s/state", f->dir);
	snprintf(f->store, sizeof(f->store), "%s/sessions/" SESSION "/modify_backup", f->state);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	hook_reset();
	fsb_store_close(f->s);
	if (f->mnt[0] != '\0')
		umount2(f->mnt, MNT_DETACH);
	if (f->shm[0] != '\0')
		unlink(f->shm);
	nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

static void open_store(struct fixture *f)
{
	char err[256] = "";
	int rc = fsb_store_open(f->state, SESSION, &f->s, err, sizeof(err));

	if (rc != 0)
		fail_msg("fsb_store_open: %d %s", rc, err);
}

/* The test's own SHA-256, straight from EVP. */
static void ref_sha256(const void *data, size_t len, char out[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	assert_int_equal(EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL), 1);
	assert_int_equal(mdlen, 32);
	for (unsigned int i = 0; i < mdlen; i++)
		sprintf(out + 2 * i, "%02x", md[i]);
}

static char *slurp(const char *path, size_t *len)
{
	struct stat st;
	char *buf;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size + 1);
	assert_non_null(buf);
	n = read(fd, buf, (size_t)st.st_size);
	assert_int_equal(n, st.st_size);
	buf[n] = '\0';
	close(fd);
	*len = (size_t)n;
	return buf;
}

/* A file of `size` bytes of a pattern that differs with `seed`. */
static char *make_file(const char *path, size_t size, unsigned seed)
{
	char *buf = malloc(size + 1);
	uint32_t x = seed * 2654435761u + 1;
	int fd;

	assert_non_null(buf);
	for (size_t i = 0; i < size; i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (char)(x >> 16);
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, size), (ssize_t)size);
	close(fd);
	return buf;
}

static void src_path(const struct fixture *f, const char *name, char out[PATHBUF])
{
	snprintf(out, PATHBUF, "%s/%s", f->dir, name);
}

static void req_for(struct fsb_backup_req *r, const char *path, const struct stat *st, int fd)
{
	memset(r, 0, sizeof(*r));
	r->tool_call = "call-7";
	r->trace = "trace-9";
	r->op = "write";
	r->flags = O_RDWR;
	r->path = path;
	r->resolved = path;
	r->prior = st;
	r->fd = fd;
}

/* Open `path`, lstat it and back it up with `r` filled in by req_for. */
static int backup_path(struct fixture *f, const char *path, struct fsb_backup_result *res)
{
	struct fsb_backup_req r;
	struct stat st;
	int fd, rc;

	assert_int_equal(lstat(path, &st), 0);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	req_for(&r, path, &st, fd);
	rc = fsb_store_record(f->s, &r, res);
	close(fd);
	return rc;
}

static void object_path(const struct fixture *f, const char *hex, char out[PATHBUF])
{
	snprintf(out, PATHBUF, "%s/objects/%.2s/%s", f->store, hex, hex);
}

/* Objects under objects/<hh>/, and temporary files left in objects/. */
static int count_objects(const struct fixture *f, int *tmps)
{
	char path[PATHBUF];
	struct dirent *de, *de2;
	int n = 0;
	DIR *d, *d2;

	snprintf(path, sizeof(path), "%s/objects", f->store);
	d = opendir(path);
	assert_non_null(d);
	if (tmps != NULL)
		*tmps = 0;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.') {
			if (tmps != NULL && strncmp(de->d_name, ".tmp-", 5) == 0)
				(*tmps)++;
			continue;
		}
		snprintf(path, sizeof(path), "%s/objects/%s", f->store, de->d_name);
		d2 = opendir(path);
		assert_non_null(d2);
		while ((de2 = readdir(d2)) != NULL)
			if (de2->d_name[0] != '.')
				n++;
		closedir(d2);
	}
	closedir(d);
	return n;
}

/* The journal of cycle `n` as an array of parsed lines (NULL: no journal). */
static cJSON *journal_lines(const struct fixture *f, unsigned n, bool with_entries)
{
	char path[PATHBUF], *buf, *line, *save = NULL;
	cJSON *arr;
	size_t len;

	snprintf(path, sizeof(path), "%s/cycles/%u/journal.jsonl", f->store, n);
	if (access(path, F_OK) != 0)
		return NULL;
	buf = slurp(path, &len);
	arr = cJSON_CreateArray();
	if (len > 0)
		assert_int_equal(buf[len - 1], '\n');
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		cJSON *o = cJSON_Parse(line);

		if (o == NULL)
			fail_msg("journal line is not JSON: %s", line);
		/* The directories' own lines (op "entries") have a test of
		 * their own: here, the lines of the changes. */
		if (with_entries || !cJSON_IsString(cJSON_GetObjectItem(o, "op")) ||
		    strcmp(cJSON_GetObjectItem(o, "op")->valuestring, "entries") != 0)
			cJSON_AddItemToArray(arr, o);
		else
			cJSON_Delete(o);
	}
	free(buf);
	return arr;
}

/* The records of a loaded cycle that are changes (not a directory's own
 * "entries" line): how many, and the i-th. */
static size_t changes_in(const struct fsb_cycle *c)
{
	size_t n = 0;

	for (size_t i = 0; i < c->nrecs; i++)
		n += strcmp(c->recs[i].op, "entries") != 0;
	return n;
}

static const struct fsb_journal_rec *change_of(const struct fsb_cycle *c, size_t k)
{
	for (size_t i = 0; i < c->nrecs; i++)
		if (strcmp(c->recs[i].op, "entries") != 0 && k-- == 0)
			return &c->recs[i];
	fail_msg("the cycle has no change %zu", k);
	return NULL;
}

/* The lines of the changes in cycle `n`'s journal, in order. */
static cJSON *journal(const struct fixture *f, unsigned n)
{
	return journal_lines(f, n, false);
}

static cJSON *cycle_file(const struct fixture *f, unsigned n)
{
	char path[PATHBUF], *buf;
	cJSON *o;
	size_t len;

	snprintf(path, sizeof(path), "%s/cycles/%u/cycle.json", f->store, n);
	if (access(path, F_OK) != 0)
		return NULL;
	buf = slurp(path, &len);
	o = cJSON_Parse(buf);
	free(buf);
	assert_non_null(o);
	return o;
}

static cJSON *get(const cJSON *o, const char *name)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	if (v == NULL)
		fail_msg("field %s missing", name);
	return v;
}

static double num(const cJSON *o, const char *name)
{
	cJSON *v = get(o, name);

	assert_true(cJSON_IsNumber(v));
	return v->valuedouble;
}

static const char *str(const cJSON *o, const char *name)
{
	cJSON *v = get(o, name);

	assert_true(cJSON_IsString(v));
	return v->valuestring;
}

static void assert_pair(const cJSON *o, const char *name, const struct timespec *ts)
{
	cJSON *a = get(o, name);

	assert_true(cJSON_IsArray(a));
	assert_int_equal(cJSON_GetArraySize(a), 2);
	assert_true(cJSON_GetArrayItem(a, 0)->valuedouble == (double)ts->tv_sec);
	assert_true(cJSON_GetArrayItem(a, 1)->valuedouble == (double)ts->tv_nsec);
}

/* Whether FICLONE works on the test's filesystem. */
static bool ficlone_works(const struct fixture *f)
{
	char a[PATHBUF], b[PATHBUF];
	int fa, fb;
	bool ok;

	src_path(f, "clone-a", a);
	src_path(f, "clone-b", b);
	free(make_file(a, 4096, 1));
	fa = open(a, O_RDONLY | O_CLOEXEC);
	fb = open(b, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	assert_true(fa >= 0 && fb >= 0);
	ok = ioctl(fb, FICLONE, fa) == 0;
	close(fa);
	close(fb);
	unlink(a);
	unlink(b);
	return ok;
}

static void test_object_content_and_name(void **state)
{
	struct fixture *f = *state;
	struct fsb_backup_result res;
	char src[PATHBUF], obj[PATHBUF], want[65], *data, *copy;
	size_t size = 300 * 1024 + 17, len;
	struct stat st;

	open_store(f);
	src_path(f, "a.bin", src);
	data = make_file(src, size, 1);
	assert_int_equal(backup_path(f, src, &res), 0);

	ref_sha256(data, size, want);
	assert_string_equal(res.object, want);
	assert_int_equal(res.reflinked, ficlone_works(f));
	assert_false(res.reused);
	assert_null(res.skipped);
	object_path(f, want, obj);
	copy = slurp(obj, &len);
	assert_int_equal(len, size);
	assert_memory_equal(copy, data, size);
	assert_int_equal(lstat(obj, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0400);
	free(copy);
	free(data);
}

static void test_empty_file(void **state)
{
	struct fixture *f = *state;
	struct fsb_backup_result res;
	char src[PATHBUF], obj[PATHBUF], want[65];
	struct stat st;

	open_store(f);
	src_path(f, "empty", src);
	free(make_file(src, 0, 0));
	assert_int_equal(backup_path(f, src, &res), 0);
	ref_sha256("", 0, want);
	assert_string_equal(res.object, want);
	object_path(f, want, obj);
	assert_int_equal(lstat(obj, &st), 0);
	assert_int_equal(st.st_size, 0);
}

static void test_same_content_one_object(void **state)
{
	struct fixture *f = *state;
	struct fsb_backup_result r1, r2;
	char a[PATHBUF], b[PATHBUF];
	int tmps;

	open_store(f);
	src_path(f, "a", a);
	src_path(f, "b", b);
	free(make_file(a, 10000, 3));
	free(make_file(b, 10000, 3));
	assert_int_equal(backup_path(f, a, &r1), 0);
	assert_int_equal(backup_path(f, b, &r2), 0);
	assert_false(r2.reused);	/* another inode: copied, then dropped */
	assert_string_equal(r1.object, r2.object);
	assert_int_equal(count_objects(f, &tmps), 1);
	assert_int_equal(tmps, 0);
}

static void test_journal_fields(void **state)
{
	struct fixture *f = *state;
	struct timespec times[2] = { { 1700000000, 123456789 }, { 1700000100, 987654321 } };
	struct fsb_backup_result res;
	struct fsb_backup_req r;
	char src[PATHBUF], obj[PATHBUF];
	cJSON *j, *line, *prior;
	const char *t;
	struct stat st;
	int fd;

	open_store(f);
	src_path(f, "f.txt", src);
	free(make_file(src, 4321, 4));
	assert_int_equal(chmod(src, 0640), 0);
	assert_int_equal(utimensat(AT_FDCWD, src, times, 0), 0);
	assert_int_equal(lstat(src, &st), 0);
	fd = open(src, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	req_for(&r, "/requested/f.txt", &st, fd);
	r.resolved = src;
	assert_int_equal(fsb_store_record(f->s, &r, &res), 0);
	r.op = "delete";
	r.flags = 0;
	assert_int_equal(fsb_store_record(f->s, &r, &res), 0);
	assert_true(res.reused);
	close(fd);

	j = journal(f, 1);
	assert_non_null(j);
	assert_int_equal(cJSON_GetArraySize(j), 2);
	line = cJSON_GetArrayItem(j, 0);
	assert_true(num(line, "seq") == 1);
	t = str(line, "time");
	assert_int_equal(strlen(t), 24);	/* 2026-11-29T20:01:02.003Z */
	assert_int_equal(t[10], 'T');
	assert_int_equal(t[19], '.');
	assert_int_equal(t[23], 'Z');
	assert_string_equal(str(line, "toolCallId"), "call-7");
	assert_string_equal(str(line, "traceId"), "trace-9");
	assert_string_equal(str(line, "op"), "write");
	assert_true(num(line, "flags") == O_RDWR);
	assert_string_equal(str(line, "path"), "/requested/f.txt");
	assert_string_equal(str(line, "resolved"), src);
	assert_true(cJSON_IsTrue(get(line, "ok")));

	prior = get(line, "prior");
	assert_true(cJSON_IsTrue(get(prior, "exists")));
	assert_string_equal(str(prior, "type"), "file");
	assert_true(num(prior, "dev") == (double)st.st_dev);
	assert_true(num(prior, "ino") == (double)st.st_ino);
	assert_true(num(prior, "nlink") == 1);
	assert_true(num(prior, "mode") == 0640);
	assert_true(num(prior, "uid") == getuid());
	assert_true(num(prior, "gid") == getgid());
	assert_true(num(prior, "size") == 4321);
	assert_pair(prior, "atime", &times[0]);
	assert_pair(prior, "mtime", &times[1]);
	object_path(f, str(prior, "object"), obj);
	assert_int_equal(access(obj, F_OK), 0);
	assert_null(cJSON_GetObjectItemCaseSensitive(prior, "skipped"));
	assert_null(cJSON_GetObjectItemCaseSensitive(prior, "target"));

	line = cJSON_GetArrayItem(j, 1);
	/* Seq 2 is the directory's own line, before the delete takes a
	 * name out of it (below). */
	assert_true(num(line, "seq") == 3);
	assert_string_equal(str(line, "op"), "delete");
	assert_true(num(line, "flags") == 0);
	/* A reused object is still named in the record. */
	assert_string_equal(str(get(line, "prior"), "object"), res.object);
	cJSON_Delete(j);
	/* The delete's directory: its state first, metadata only. */
	j = journal_lines(f, 1, true);
	assert_int_equal(cJSON_GetArraySize(j), 3);
	line = cJSON_GetArrayItem(j, 1);
	assert_string_equal(str(line, "op"), "entries");
	prior = get(line, "prior");
	assert_string_equal(str(prior, "type"), "dir");
	assert_null(cJSON_GetObjectItemCaseSensitive(prior, "object"));
	assert_non_null(cJSON_GetObjectItemCaseSensitive(prior, "mtime"));
	cJSON_Delete(j);
}

static void test_absent_prior(void **state)
{
	struct fixture *f = *state;
	struct fsb_backup_result res;
	struct fsb_backup_req r;
	cJSON *j, *prior;

	open_store(f);
	req_for(&r, "/nowhere/new.txt", NULL, -1);
	r.op = "create";
	assert_int_equal(fsb_store_record(f->s, &r, &res), 0);
	assert_string_equal(res.object, "");
	j = journal(f, 1);
	prior = get(cJSON_GetArrayItem(j, 0), "prior");
	assert_true(cJSON_IsFalse(get(prior, "exists")));
	assert_int_equal(cJSON_GetArraySize(prior), 1);
	cJSON_Delete(j);
}

static void test_symlink_and_dir_prior(void **state)
{
	struct fixture *f = *state;
	struct fsb_backup_result res;
	struct fsb_backup_req r;
	char link[PATHBUF], dir[PATHBUF];
	struct stat st;
	cJSON *j, *prior;

	open_store(f);
	src_path(f, "ln", link);
	src_path(f, "d", dir);
	assert_int_equal(symlink("../some/where", link), 0);
	assert_int_equal(mkdir(dir, 0750), 0);

	assert_int_equal(lstat(link, &st), 0);
	req_for(&r, link, &st, -1);
	r.op = "delete";
	assert_int_equal(fsb_store_record(f->s, &r, &res), 0);	/* target read here */
	r.link_target = "given-target";
	assert_int_equal(fsb_store_record(f->s, &r, &res), 0);
	assert_int_equal(lstat(dir, &st), 0);
	req_for(&r, dir, &st, -1);
	r.op = "chmod";
	assert_int_equal(fsb_store_record(f->s, &r, &res), 0);

	j = journal(f, 1);
	prior = get(cJSON_GetArrayItem(j, 0), "prior");
	assert_string_equal(str(prior, "type"), "symlink");
	assert_string_equal(str(prior, "target"), "../some/where");
	assert_null(cJSON_GetObjectItemCaseSensitive(prior, "object"));
	prior = get(cJSON_GetArrayItem(j, 1), "prior");
	assert_string_equal(str(prior, "target"), "given-target");
	prior = get(cJSON_GetArrayItem(j, 2), "prior");
	assert_string_equal(str(prior, "type"), "dir");
	assert_true(num(prior, "mode") == 0750);
	assert_null(cJSON_GetObjectItemCaseSensitive(prior, "object"));
	cJSON_Delete(j);
}

static void test_reuse_and_write_grant(void **state)
{
	struct fixture *f = *state;
	struct fsb_backup_result r1, r2, r3, r4;
	char src[PATHBUF], want[65], *data;
	struct stat st;
	int fd;

	open_store(f);
	src_path(f, "r", src);
	free(make_file(src, 5000, 5));
	assert_int_equal(backup_path(f, src, &r1), 0);
	assert_false(r1.reused);
	assert_int_equal(backup_path(f, src, &r2), 0);
	assert_true(r2.reused);
	assert_string_equal(r2.object, r1.object);

	/* A writable fd goes out; the holder changes the file through it.
	 * Restore times and keep the size: only the grant tells. */
	assert_int_equal(lstat(src, &st), 0);
	fsb_store_note_write_grant(f->s, st.st_dev, st.st_ino);
	assert_int_equal(backup_path(f, src, &r3), 0);
	assert_false(r3.reused);
	assert_string_equal(r3.object, r1.object);	/* same bytes */
	/* Clean again after the copy. */
	assert_int_equal(backup_path(f, src, &r4), 0);
	assert_true(r4.reused);

	fsb_store_note_write_grant(f->s, st.st_dev, st.st_ino);
	fd = open(src, O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "CHANGED", 7, 10), 7);
	close(fd);
	data = slurp(src, &(size_t){ 0 });
	ref_sha256(data, 5000, want);
	free(data);
	assert_int_equal(backup_path(f, src, &r3), 0);
	assert_false(r3.reused);
	assert_string_equal(r3.object, want);
	assert_int_equal(count_objects(f, NULL), 2);
}

/* An inode reused by a new file, or a file changed without a grant the
 * store heard of, must not get the old copy. */
static void test_reuse_not_for_a_changed_file(void **state)
{
	struct fixture *f = *state;
	struct fsb_backup_result r1, r2;
	char src[PATHBUF], want[65], *data;
	struct timespec pause = { 0, 20 * 1000 * 1000 };

	open_store(f);
	src_path(f, "c", src);
	free(make_file(src, 3000, 6));
	assert_int_equal(backup_path(f, src, &r1), 0);
	nanosleep(&pause, NULL);
	data = make_file(src, 3000, 7);	/* same inode, new content */
	assert_int_equal(backup_path(f, src, &r2), 0);
	assert_false(r2.reused);
	ref_sha256(data, 3000, want);
	assert_string_equal(r2.object, want);
	free(data);
}

static void test_too_large_fail(void **state)
{
	struct fixture *f = *state;
	struct fsb_backup_result res;
	struct fsb_backup_req r;
	char src[PATHBUF];
	struct stat st;
	cJSON *j;
	int fd, tmps;

	open_store(f);
	if (ficlone_works(f)) {
		print_message("# skipping: FICLONE works on %s, so no size limit applies\n", f->dir);
		skip();
	}
	src_path(f, "big", src);
	free(make_file(src, 2 << 20, 8));
	assert_int_equal(lstat(src, &st), 0);
	fd = open(src, O_RDONLY | O_CLOEXEC);
	req_for(&r, src, &st, fd);
	r.max_bytes = 1 << 20;
	r.on_too_large = FSB_TOO_LARGE_FAIL;
	assert_int_equal(fsb_store_record(f->s, &r, &res), -EFBIG);
	assert_string_equal(res.object, "");
	/* At the limit exactly it is not too large. */
	r.max_bytes = 2 << 20;
	assert_int_equal(fsb_store_record(f->s, &r, &res), 0);
	assert_string_not_equal(res.object, "");
	close(fd);
	j = journal(f, 1);
	assert_int_equal(cJSON_GetArraySize(j), 1);	/* only the second */
	assert_true(num(cJSON_GetArrayItem(j, 0), "seq") == 1);
	cJSON_Delete(j);
	assert_int_equal(count_objects(f, &tmps), 1);
	assert_int_equal(tmps, 0);
}

static void test_too_large_skip(void **state)
{
	struct fixture *f = *state;
	struct fsb_backup_result res;
	struct fsb_backup_req r;
	char src[PATHBUF];
	struct stat st;
	cJSON *j, *prior;
	int fd;

	open_store(f);
	if (ficlone_works(f)) {
		print_message("# skipping: FICLONE works on %s, so no size limit applies\n", f->dir);
		skip();
	}
	src_path(f, "big", src);
	free(make_file(src, 100000, 9));
	assert_int_equal(lstat(src, &st), 0);
	fd = open(src, O_RDONLY | O_CLOEXEC);
	req_for(&r, src, &st, fd);
	r.max_bytes = 99999;
	r.on_too_large = FSB_TOO_LARGE_SKIP;
	assert_int_equal(fsb_store_record(f->s, &r, &res), 0);
	close(fd);
	assert_string_equal(res.object, "");
	assert_non_null(res.skipped);
	assert_string_equal(res.skipped, "too-large");
	j = journal(f, 1);
	prior = get(cJSON_GetArrayItem(j, 0), "prior");
	assert_string_equal(str(prior, "skipped"), "too-large");
	assert_null(cJSON_GetObjectItemCaseSensitive(prior, "object"));
	assert_true(num(prior, "size") == 100000);
	cJSON_Delete(j);
	assert_int_equal(count_objects(f, NULL), 0);
}

/* A reflink costs no space: the size limit does not apply to it. */
static void test_reflink_ignores_the_limit(void **state)
{
	struct fixture *f = *state;
	struct fsb_backup_result res;
	struct fsb_backup_req r;
	char src[PATHBUF], want[65], *data;
	struct stat st;
	int fd;

	open_store(f);
	if (!ficlone_works(f)) {
		print_message("# skipping: no FICLONE on %s (run with TMPDIR on btrfs or xfs)\n",
			      f->dir);
		skip();
	}
	src_path(f, "big", src);
	data = make_file(src, 1 << 20, 25);
	assert_int_equal(lstat(src, &st), 0);
	fd = open(src, O_RDONLY | O_CLOEXEC);
	req_for(&r, src, &st, fd);
	r.max_bytes = 4096;
	r.on_too_large = FSB_TOO_LARGE_FAIL;
	assert_int_equal(fsb_store_record(f->s, &r, &res), 0);
	close(fd);
	assert_true(res.reflinked);
	assert_null(res.skipped);
	ref_sha256(data, 1 << 20, want);
	assert_string_equal(res.object, want);
	free(data);
}

static void test_skip_rule(void **state)
{
	struct fixture *f = *state;
	struct fsb_backup_result res;
	struct fsb_backup_req r;
	char src[PATHBUF];
	struct stat st;
	cJSON *j, *prior;
	int fd;

	open_store(f);
	src_path(f, "s", src);
	free(make_file(src, 1000, 10));
	assert_int_equal(lstat(src, &st), 0);
	fd = open(src, O_RDONLY | O_CLOEXEC);
	req_for(&r, src, &st, fd);
	r.skip_content = true;
	assert_int_equal(fsb_store_record(f->s, &r, &res), 0);
	close(fd);
	assert_string_equal(res.skipped, "skip-rule");
	assert_string_equal(res.object, "");
	j = journal(f, 1);
	prior = get(cJSON_GetArrayItem(j, 0), "prior");
	assert_string_equal(str(prior, "skipped"), "skip-rule");
	assert_null(cJSON_GetObjectItemCaseSensitive(prior, "object"));
	cJSON_Delete(j);
	assert_int_equal(count_objects(f, NULL), 0);
}

static void test_seal(void **state)
{
	struct fixture *f = *state;
	struct fsb_backup_result res;
	char a[PATHBUF], b[PATHBUF], err[256] = "", path[PATHBUF];
	const char *head = "ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12";
	cJSON *c, *paths, *e;
	struct stat st;

	open_store(f);
	assert_int_equal(fsb_store_seal(f->s, "nothing", head, err, sizeof(err)), 0);
	assert_int_equal(fsb_store_cycle(f->s), 0);

	src_path(f, "kept", a);
	src_path(f, "gone", b);
	free(make_file(a, 100, 11));
	free(make_file(b, 100, 12));
	assert_int_equal(backup_path(f, a, &res), 0);
	assert_int_equal(backup_path(f, b, &res), 0);
	assert_int_equal(backup_path(f, a, &res), 0);
	assert_int_equal(fsb_store_cycle(f->s), 1);
	free(make_file(a, 250, 13));	/* the change the turn made */
	assert_int_equal(unlink(b), 0);

	assert_int_equal(fsb_store_seal(f->s, "npm install", head, err, sizeof(err)), 1);
	assert_int_equal(fsb_store_cycle(f->s), 0);
	snprintf(path, sizeof(path), "%s/cycles/1/cycle.json.tmp", f->store);
	assert_int_not_equal(access(path, F_OK), 0);

	c = cycle_file(f, 1);
	assert_non_null(c);
	assert_true(num(c, "cycle") == 1);
	assert_string_equal(str(c, "message"), "npm install");
	assert_int_equal(strlen(str(c, "opened")), 24);
	assert_int_equal(strlen(str(c, "sealed")), 24);
	assert_true(strcmp(str(c, "opened"), str(c, "sealed")) <= 0);
	assert_string_equal(str(c, "auditHead"), head);
	assert_true(cJSON_IsFalse(get(c, "recovered")));
	paths = get(c, "paths");
	assert_int_equal(cJSON_GetArraySize(paths), 2);
	assert_int_equal(lstat(a, &st), 0);
	e = get(paths, a);
	assert_true(cJSON_IsTrue(get(e, "exists")));
	assert_string_equal(str(e, "type"), "file");
	assert_true(num(e, "size") == 250);
	assert_true(num(e, "ino") == (double)st.st_ino);
	assert_pair(e, "mtime", &st.st_mtim);
	e = get(paths, b);
	assert_true(cJSON_IsFalse(get(e, "exists")));
	cJSON_Delete(c);

	/* Sealed: a second seal has nothing to do; the next cycle is 2. */
	assert_int_equal(fsb_store_seal(f->s, "again", head, err, sizeof(err)), 0);
	assert_int_equal(fsb_store_begin(f->s), 2);
	assert_int_equal(fsb_store_begin(f->s), 2);
	assert_int_equal(fsb_store_cycle(f->s), 2);
	assert_int_equal(backup_path(f, a, &res), 0);
	assert_false(res.reused);	/* a new cycle takes its own copy */
	assert_int_equal(fsb_store_seal(f->s, "two", head, err, sizeof(err)), 2);
}

static void test_recovery(void **state)
{
	struct fixture *f = *state;
	struct fsb_backup_result res;
	char a[PATHBUF], path[PATHBUF];
	cJSON *c, *paths;

	open_store(f);
	src_path(f, "x", a);
	free(make_file(a, 100, 14));
	assert_int_equal(backup_path(f, a, &res), 0);
	/* The process dies: no seal. */
	fsb_store_close(f->s);
	f->s = NULL;
	/* A torn last line, as a crash mid-write leaves it. */
	snprintf(path, sizeof(path), "%s/cycles/1/journal.jsonl", f->store);
	{
		int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);

		assert_true(fd >= 0);
		assert_int_equal(write(fd, "{\"seq\":2,\"resol", 15), 15);
		close(fd);
	}
	assert_null(cycle_file(f, 1));

	open_store(f);
	assert_int_equal(fsb_store_cycle(f->s), 0);
	c = cycle_file(f, 1);
	assert_non_null(c);
	assert_true(num(c, "cycle") == 1);
	assert_true(cJSON_IsTrue(get(c, "recovered")));
	assert_string_equal(str(c, "message"), "recovered after an unclean stop");
	assert_string_equal(str(c, "auditHead"), "");
	/* No end state is known for a recovered cycle (see below). */
	paths = get(c, "paths");
	assert_true(cJSON_IsObject(paths));
	assert_int_equal(cJSON_GetArraySize(paths), 0);
	cJSON_Delete(c);
	assert_int_equal(fsb_store_begin(f->s), 2);
}

/*
 * A user edits a file between the crash and the restart. Recovery must not
 * take that edit for the cycle's end state, or a restore without --force
 * would throw it away: the recovered cycle records no end states at all,
 * while its journal keeps every prior state.
 */
static void test_recovered_cycle_records_no_end_state(void **state)
{
	struct fixture *f = *state;
	struct fsb_backup_result res;
	char a[PATHBUF];
	cJSON *c, *j;

	open_store(f);
	src_path(f, "edited", a);
	free(make_file(a, 100, 30));
	assert_int_equal(backup_path(f, a, &res), 0);
	free(make_file(a, 120, 31));	/* the turn's change */
	fsb_store_close(f->s);		/* the crash */
	f->s = NULL;
	free(make_file(a, 140, 32));	/* the user's edit, before the restart */

	open_store(f);
	c = cycle_file(f, 1);
	assert_non_null(c);
	assert_true(cJSON_IsTrue(get(c, "recovered")));
	assert_true(cJSON_IsObject(get(c, "paths")));
	assert_int_equal(cJSON_GetArraySize(get(c, "paths")), 0);
	assert_null(cJSON_GetObjectItemCaseSensitive(get(c, "paths"), a));
	cJSON_Delete(c);
	j = journal(f, 1);
	assert_int_equal(cJSON_GetArraySize(j), 1);
	assert_string_equal(str(cJSON_GetArrayItem(j, 0), "resolved"), a);
	cJSON_Delete(j);
}

/* A cycle a crash left before its journal existed holds nothing to
 * recover: it is removed, not sealed (no cycle stands for a turn that did
 * nothing), and the next cycle is numbered as if it never was. */
static void test_recovery_of_an_empty_cycle(void **state)
{
	struct fixture *f = *state;
	char path[PATHBUF];

	open_store(f);
	fsb_store_close(f->s);
	f->s = NULL;
	snprintf(path, sizeof(path), "%s/cycles/4", f->store);
	assert_int_equal(mkdir(path, 0700), 0);

	open_store(f);
	assert_null(cycle_file(f, 4));
	assert_int_not_equal(access(path, F_OK), 0);
	assert_int_equal(fsb_store_begin(f->s), 1);
}

static void test_crash_mid_object(void **state)
{
	struct fixture *f = *state;
	char path[PATHBUF];
	int fd, tmps;

	open_store(f);
	fsb_store_close(f->s);
	f->s = NULL;

	/* A named temp a crash left, and an O_TMPFILE never linked. */
	snprintf(path, sizeof(path), "%s/objects/.tmp-0123456789abcdef", f->store);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "partial", 7), 7);
	close(fd);
	snprintf(path, sizeof(path), "%s/objects", f->store);
	fd = open(path, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0) {
		assert_int_equal(write(fd, "partial", 7), 7);
		close(fd);
	}
	assert_int_equal(count_objects(f, &tmps), 0);
	assert_int_equal(tmps, 1);

	open_store(f);
	assert_int_equal(count_objects(f, &tmps), 0);
	assert_int_equal(tmps, 0);	/* cleaned on open */
}

static void test_enospc(void **state)
{
	struct fixture *f = *state;
	struct fsb_backup_result res;
	char src[PATHBUF], path[PATHBUF];
	struct stat st;
	int tmps;

	snprintf(f->mnt, sizeof(f->mnt), "%s/state", f->dir);
	assert_int_equal(mkdir(f->mnt, 0700), 0);
	if (geteuid() != 0 || mount("tmpfs", f->mnt, "tmpfs", 0, "size=64k,mode=0700") != 0) {
		print_message("# skipping: cannot mount a small tmpfs here (%s)\n",
			      geteuid() != 0 ? "not root" : strerror(errno));
		f->mnt[0] = '\0';
		skip();
	}
	open_store(f);
	src_path(f, "mib", src);
	free(make_file(src, 1 << 20, 15));
	assert_int_equal(backup_path(f, src, &res), -ENOSPC);
	assert_string_equal(res.object, "");
	snprintf(path, sizeof(path), "%s/cycles/1/journal.jsonl", f->store);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 0);
	assert_int_equal(count_objects(f, &tmps), 0);
	assert_int_equal(tmps, 0);

	/* A small file still fits: the store keeps working. */
	free(make_file(src, 100, 16));
	assert_int_equal(backup_path(f, src, &res), 0);
	assert_int_equal(count_objects(f, NULL), 1);
}

static void test_fd_offset_unchanged(void **state)
{
	struct fixture *f = *state;
	struct fsb_backup_result res;
	struct fsb_backup_req r;
	char src[PATHBUF], want[65], *data;
	struct stat st;
	int fd;

	open_store(f);
	src_path(f, "o", src);
	data = make_file(src, 200000, 17);
	assert_int_equal(lstat(src, &st), 0);
	fd = open(src, O_RDONLY | O_CLOEXEC);
	assert_int_equal(lseek(fd, 12345, SEEK_SET), 12345);
	req_for(&r, src, &st, fd);
	assert_int_equal(fsb_store_record(f->s, &r, &res), 0);
	assert_int_equal(lseek(fd, 0, SEEK_CUR), 12345);
	close(fd);
	ref_sha256(data, 200000, want);
	assert_string_equal(res.object, want);
	free(data);
}

/* From tmpfs into the store: copy_file_range says EXDEV, read/write copies
 * (and hashes on the way). */
static void test_copy_across_filesystems(void **state)
{
	struct fixture *f = *state;
	struct fsb_backup_result res;
	char *src = f->shm, want[65], obj[PATHBUF], *data, *copy;
	struct stat a, b;
	size_t len;
	int fd;

	if (stat("/dev/shm", &a) != 0 || stat(f->dir, &b) != 0 || a.st_dev == b.st_dev) {
		print_message("# skipping: no /dev/shm on another filesystem than %s\n", f->dir);
		skip();
	}
	open_store(f);
	strcpy(src, "/dev/shm/fsb-backup-XXXXXX");
	fd = mkstemp(src);
	if (fd < 0)
		src[0] = '\0';
	assert_true(fd >= 0);
	close(fd);
	data = make_file(src, 333333, 18);
	assert_int_equal(backup_path(f, src, &res), 0);
	ref_sha256(data, 333333, want);
	assert_string_equal(res.object, want);
	object_path(f, want, obj);
	copy = slurp(obj, &len);
	assert_int_equal(len, 333333);
	assert_memory_equal(copy, data, len);
	free(copy);
	free(data);
}

static void test_non_utf8_path(void **state)
{
	struct fixture *f = *state;
	struct fsb_backup_result res;
	char src[PATHBUF];
	cJSON *j, *line, *c, *paths;

	open_store(f);
	src_path(f, "caf\xe9", src);
	free(make_file(src, 10, 19));
	assert_int_equal(backup_path(f, src, &res), 0);
	j = journal(f, 1);
	line = cJSON_GetArrayItem(j, 0);
	assert_null(cJSON_GetObjectItemCaseSensitive(line, "resolved"));
	assert_non_null(strstr(str(line, "resolvedBytes"), "caf%E9"));
	assert_non_null(strstr(str(line, "pathBytes"), "caf%E9"));
	cJSON_Delete(j);

	/* cycle.json keys it by the encoded form. */
	assert_int_equal(fsb_store_seal(f->s, "m", "", NULL, 0), 1);
	c = cycle_file(f, 1);
	paths = get(c, "paths");
	assert_int_equal(cJSON_GetArraySize(paths), 1);
	assert_non_null(strstr(paths->child->string, "caf%E9"));
	assert_string_equal(str(paths->child, "pathBytes"), paths->child->string);
	assert_true(cJSON_IsTrue(get(paths->child, "exists")));
	cJSON_Delete(c);
}

/* Whether the test's filesystem takes user.* xattrs; says why when not. */
static bool user_xattrs_work(const struct fixture *f)
{
	char p[PATHBUF];
	bool ok;
	int err;

	src_path(f, "xattr-probe", p);
	free(make_file(p, 1, 1));
	ok = setxattr(p, "user.probe", "1", 1, 0) == 0;
	err = errno;
	unlink(p);
	if (!ok)
		print_message("# skipping: %s takes no user.* xattrs (%s)\n", f->dir,
			      strerror(err));
	return ok;
}

static const struct fsb_xattr *xattr_named(const struct fsb_prior *p, const char *name)
{
	for (size_t i = 0; i < p->nxattrs; i++)
		if (strcmp(p->xattrs[i].name, name) == 0)
			return &p->xattrs[i];
	fail_msg("xattr %s not read back", name);
	return NULL;
}

/*
 * A file's user.* xattrs go into its prior state as base64 (a name that is
 * not UTF-8 percent-encoded under xattrsBytes), a directory's are read by
 * its path, and the journal reader gives back every value byte for byte:
 * a NUL, bytes that are not UTF-8, an empty value.
 */
static void test_xattrs_recorded_and_read_back(void **state)
{
	static const char bin[] = { 'a', '\0', (char)0xff, (char)0xfe };
	struct fixture *f = *state;
	struct fsb_backup_result res;
	struct fsb_backup_req r;
	const struct fsb_xattr *x;
	const struct fsb_prior *p;
	struct fsb_cycle c;
	char src[PATHBUF], dir[PATHBUF], err[256] = "";
	cJSON *j, *prior, *xa;
	struct stat st;

	if (!user_xattrs_work(f))
		skip();
	open_store(f);
	src_path(f, "x.txt", src);
	free(make_file(src, 100, 21));
	assert_int_equal(setxattr(src, "user.text", "hello", 5, 0), 0);
	assert_int_equal(setxattr(src, "user.bin", bin, sizeof(bin), 0), 0);
	assert_int_equal(setxattr(src, "user.empty", "", 0, 0), 0);
	assert_int_equal(setxattr(src, "user.n\xe9", "v", 1, 0), 0);
	assert_int_equal(backup_path(f, src, &res), 0);
	src_path(f, "xd", dir);
	assert_int_equal(mkdir(dir, 0755), 0);
	assert_int_equal(setxattr(dir, "user.d", "dir value", 9, 0), 0);
	assert_int_equal(lstat(dir, &st), 0);
	req_for(&r, dir, &st, -1);
	r.op = "delete";
	assert_int_equal(fsb_store_record(f->s, &r, &res), 0);

	j = journal(f, 1);
	prior = get(cJSON_GetArrayItem(j, 0), "prior");
	xa = get(prior, "xattrs");
	assert_int_equal(cJSON_GetArraySize(xa), 3);
	assert_string_equal(str(xa, "user.text"), "aGVsbG8=");
	assert_string_equal(str(xa, "user.bin"), "YQD//g==");
	assert_string_equal(str(xa, "user.empty"), "");
	xa = get(prior, "xattrsBytes");
	assert_int_equal(cJSON_GetArraySize(xa), 1);
	assert_string_equal(str(xa, "user.n%E9"), "dg==");
	assert_null(cJSON_GetObjectItemCaseSensitive(prior, "xattrsTruncated"));
	prior = get(cJSON_GetArrayItem(j, 1), "prior");
	assert_string_equal(str(get(prior, "xattrs"), "user.d"), "ZGlyIHZhbHVl");
	cJSON_Delete(j);

	assert_int_equal(fsb_cycle_load(f->store, 1, &c, stderr, err, sizeof(err)), 0);
	assert_int_equal(changes_in(&c), 2);
	assert_int_equal(c.malformed, 0);
	p = &change_of(&c, 0)->prior;
	assert_true(p->has_xattrs);
	assert_false(p->xattrs_truncated);
	assert_int_equal(p->nxattrs, 4);
	x = xattr_named(p, "user.text");
	assert_int_equal(x->len, 5);
	assert_memory_equal(x->value, "hello", 5);
	x = xattr_named(p, "user.bin");
	assert_int_equal(x->len, sizeof(bin));
	assert_memory_equal(x->value, bin, sizeof(bin));
	x = xattr_named(p, "user.empty");
	assert_int_equal(x->len, 0);
	assert_non_null(x->value);
	x = xattr_named(p, "user.n\xe9");
	assert_int_equal(x->len, 1);
	assert_memory_equal(x->value, "v", 1);
	p = &change_of(&c, 1)->prior;
	assert_int_equal(p->nxattrs, 1);
	assert_memory_equal(xattr_named(p, "user.d")->value, "dir value", 9);
	fsb_cycle_free(&c);
}

/* A file without xattrs records an empty set, so that a restore knows to
 * remove any added later; the reader tells it from "not recorded". */
static void test_no_xattrs_is_an_empty_set(void **state)
{
	struct fixture *f = *state;
	struct fsb_backup_result res;
	struct fsb_cycle c;
	char src[PATHBUF], err[256] = "";
	cJSON *j, *xa;

	if (!user_xattrs_work(f))
		skip();
	open_store(f);
	src_path(f, "plain.txt", src);
	free(make_file(src, 10, 22));
	assert_int_equal(backup_path(f, src, &res), 0);
	j = journal(f, 1);
	xa = get(get(cJSON_GetArrayItem(j, 0), "prior"), "xattrs");
	assert_true(cJSON_IsObject(xa));
	assert_int_equal(cJSON_GetArraySize(xa), 0);
	cJSON_Delete(j);
	assert_int_equal(fsb_cycle_load(f->store, 1, &c, stderr, err, sizeof(err)), 0);
	assert_true(c.recs[0].prior.has_xattrs);
	assert_int_equal(c.recs[0].prior.nxattrs, 0);
	fsb_cycle_free(&c);
}

/* Inode numbers beyond 2^53 are written exactly, not rounded by a double. */
static void test_big_numbers_exact(void **state)
{
	struct fixture *f = *state;
	struct fsb_backup_result res;
	struct fsb_backup_req r;
	struct stat st;
	char path[PATHBUF], *buf;
	size_t len;

	open_store(f);
	memset(&st, 0, sizeof(st));
	st.st_mode = S_IFDIR | 0755;
	st.st_ino = (ino_t)UINT64_C(18446744073709551557);
	st.st_dev = (dev_t)UINT64_C(9007199254740993);
	req_for(&r, "/x", &st, -1);
	assert_int_equal(fsb_store_record(f->s, &r, &res), 0);
	snprintf(path, sizeof(path), "%s/cycles/1/journal.jsonl", f->store);
	buf = slurp(path, &len);
	assert_non_null(strstr(buf, "\"ino\":18446744073709551557,"));
	assert_non_null(strstr(buf, "\"dev\":9007199254740993,"));
	free(buf);
}

/* The fd is not the file whose prior state is given: refuse. */
static void test_fd_of_another_file(void **state)
{
	struct fixture *f = *state;
	struct fsb_backup_result res;
	struct fsb_backup_req r;
	char a[PATHBUF], b[PATHBUF];
	struct stat st;
	cJSON *j;
	int fd;

	open_store(f);
	src_path(f, "a", a);
	src_path(f, "b", b);
	free(make_file(a, 10, 20));
	free(make_file(b, 10, 21));
	assert_int_equal(lstat(a, &st), 0);
	fd = open(b, O_RDONLY | O_CLOEXEC);
	req_for(&r, a, &st, fd);
	assert_int_equal(fsb_store_record(f->s, &r, &res), -ESTALE);
	close(fd);
	j = journal(f, 1);
	assert_int_equal(cJSON_GetArraySize(j), 0);
	cJSON_Delete(j);
}

static void test_layout_modes(void **state)
{
	struct fixture *f = *state;
	const char *dirs[] = { "", "/objects", "/cycles", "/cycles/1" };
	struct fsb_backup_result res;
	char path[PATHBUF], src[PATHBUF];
	struct stat st;

	open_store(f);
	assert_string_equal(fsb_store_dir(f->s), f->store);
	src_path(f, "m", src);
	free(make_file(src, 10, 22));
	assert_int_equal(backup_path(f, src, &res), 0);
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", f->store, dirs[i]);
		assert_int_equal(lstat(path, &st), 0);
		assert_true(S_ISDIR(st.st_mode));
		assert_int_equal(st.st_mode & 07777, 0700);
	}
	snprintf(path, sizeof(path), "%s/objects/%.2s", f->store, res.object);
	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	snprintf(path, sizeof(path), "%s/cycles/1/journal.jsonl", f->store);
	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
}

#if defined(__x86_64__)
#define TEST_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define TEST_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

#ifdef TEST_AUDIT_ARCH
/*
 * In this (child) process, make syscall `nr` fail with `err` when the low
 * word of argument `arg` has a bit of `mask` set (mask 0: always).
 */
static bool filter_syscall(long nr, unsigned arg, uint32_t mask, int err)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TEST_AUDIT_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		/* Little-endian: the low word of args[arg] comes first. */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, args) + 8 * arg),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, mask, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, mask ? SECCOMP_RET_ALLOW
					      : SECCOMP_RET_ERRNO | (uint32_t)err),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (uint32_t)err),
	};
	struct sock_fprog prog = { .len = sizeof(code) / sizeof(code[0]), .filter = code };

	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
	       prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

/* The exit status of a child that reports a -errno result (0..99). */
static int child_result(pid_t pid)
{
	int status;

	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_true(WEXITSTATUS(status) < 100);
	return -WEXITSTATUS(status);
}

static _Noreturn void exit_with(int rc)
{
	_exit(rc == 0 ? 0 : rc < 0 && rc > -100 ? -rc : 100);
}
#endif

/*
 * Back up `src` in a child whose syscall `nr` fails with `err` (see
 * filter_syscall): the way to meet a kernel or filesystem without
 * O_TMPFILE, /proc or copy_file_range. Returns the child's
 * fsb_store_record result.
 */
static int record_without(struct fixture *f, const char *src, long nr, unsigned arg,
			  uint32_t mask, int err)
{
#ifdef TEST_AUDIT_ARCH
	pid_t pid;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct fsb_backup_result res;
		struct fsb_store *s;
		struct fsb_backup_req r;
		struct stat st;
		char msg[256];
		int fd;

		if (fsb_store_open(f->state, SESSION, &s, msg, sizeof(msg)) != 0)
			_exit(101);
		if (!filter_syscall(nr, arg, mask, err))
			_exit(102);
		if (lstat(src, &st) != 0 || (fd = open(src, O_RDONLY | O_CLOEXEC)) < 0)
			_exit(103);
		req_for(&r, src, &st, fd);
		exit_with(fsb_store_record(s, &r, &res));
	}
	return child_result(pid);
#else
	(void)f;
	(void)src;
	(void)nr;
	(void)arg;
	(void)mask;
	(void)err;
	print_message("# skipping: no seccomp filter written for this architecture\n");
	skip();
	return -ENOSYS;
#endif
}

/* fsb_store_open in a child whose syscall `nr` always fails with `err`. */
static int open_without(struct fixture *f, long nr, int err)
{
#ifdef TEST_AUDIT_ARCH
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		struct fsb_store *s;
		char msg[256];

		if (!filter_syscall(nr, 0, 0, err))
			_exit(102);
		exit_with(fsb_store_open(f->state, SESSION, &s, msg, sizeof(msg)));
	}
	return child_result(pid);
#else
	(void)f;
	(void)nr;
	(void)err;
	print_message("# skipping: no seccomp filter written for this architecture\n");
	skip();
	return -ENOSYS;
#endif
}

/* The object written by a child through a fallback is whole and named
 * right, and no temporary is left. */
static void check_fallback(struct fixture *f, long nr, unsigned arg, uint32_t mask, int err)
{
	char src[PATHBUF], obj[PATHBUF], want[65], *data, *copy;
	size_t len, size = 200 * 1024 + 3;
	int tmps;

	src_path(f, "fallback", src);
	data = make_file(src, size, 23);
	assert_int_equal(record_without(f, src, nr, arg, mask, err), 0);
	ref_sha256(data, size, want);
	object_path(f, want, obj);
	copy = slurp(obj, &len);
	assert_int_equal(len, size);
	assert_memory_equal(copy, data, size);
	assert_int_equal(count_objects(f, &tmps), 1);
	assert_int_equal(tmps, 0);
	free(copy);
	free(data);
}

/* A filesystem without O_TMPFILE: an O_EXCL temp name, removed after. */
static void test_without_o_tmpfile(void **state)
{
	check_fallback(*state, __NR_openat, 2, O_TMPFILE & ~O_DIRECTORY, EOPNOTSUPP);
}

/* No /proc and no CAP_DAC_READ_SEARCH: an O_TMPFILE cannot be linked in,
 * so the copy is made again under a temp name. */
static void test_tmpfile_cannot_be_linked(void **state)
{
	check_fallback(*state, __NR_linkat, 4, AT_SYMLINK_FOLLOW | AT_EMPTY_PATH, ENOENT);
}

static void test_without_copy_file_range(void **state)
{
	check_fallback(*state, __NR_copy_file_range, 0, 0, ENOSYS);
}

/* A full disk at the journal: the change is refused; a line that could not
 * be written leaves nothing of itself behind. */
static void test_journal_write_fails(void **state)
{
	struct fixture *f = *state;
	char src[PATHBUF], path[PATHBUF];
	struct stat st;

	src_path(f, "j", src);
	free(make_file(src, 100, 24));
	assert_int_equal(record_without(f, src, __NR_fdatasync, 0, 0, ENOSPC), -ENOSPC);
	assert_int_equal(record_without(f, src, __NR_write, 0, 0, EDQUOT), -ENOSPC);
	snprintf(path, sizeof(path), "%s/cycles/2/journal.jsonl", f->store);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 0);
}

/* ---- what must be durable, and when ------------------------------------ */

/* Record `path` (an existing file, or absent when `absent`) as a grant of
 * tool call `tc` does; the syncs it cost come back in *journal, *other. */
static int grant_record(struct fixture *f, const char *path, const char *tc, bool absent,
			bool no_repeat_copy, struct fsb_backup_result *res, unsigned *journal_syncs,
			unsigned *other_syncs)
{
	struct fsb_backup_req r;
	struct stat st;
	int fd = -1, rc;

	if (!absent) {
		assert_int_equal(lstat(path, &st), 0);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		assert_true(fd >= 0);
	}
	req_for(&r, path, absent ? NULL : &st, fd);
	r.op = absent ? "create" : "write";
	r.tool_call = tc;
	r.no_repeat_copy = no_repeat_copy;
	syncs_take(&(unsigned){ 0 }, &(unsigned){ 0 });
	rc = fsb_store_record(f->s, &r, res);
	syncs_take(journal_syncs, other_syncs);
	if (fd >= 0)
		close(fd);
	return rc;
}

/* As a write grant leaves a file: the store heard of the grant, and the
 * holder changed it. */
static void granted_and_changed(struct fixture *f, const char *path, const char *text)
{
	struct stat st;
	int fd;

	assert_int_equal(lstat(path, &st), 0);
	fsb_store_note_write_grant(f->s, st.st_dev, st.st_ino);
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* Back up `path` before `op`, taking its name away (keep_inode). */
static int keep_record(struct fixture *f, const char *path, const char *op, uint64_t max_bytes,
		       struct fsb_backup_result *res)
{
	struct fsb_backup_req r;
	struct stat st;
	int fd, rc;

	assert_int_equal(lstat(path, &st), 0);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	req_for(&r, path, &st, fd);
	r.op = op;
	r.flags = 0;
	r.keep_inode = true;
	r.max_bytes = max_bytes;
	r.on_too_large = FSB_TOO_LARGE_FAIL;
	rc = fsb_store_record(f->s, &r, res);
	close(fd);
	return rc;
}

/*
 * A delete (or the target a rename replaces) of a file with one link keeps
 * its inode: linked into objects/ under a name that is not its hash, no
 * byte copied, and the size limit does not apply. After the delete the
 * reader gives the bytes back, and a kept inode written to afterwards is
 * reported, not restored. A file with two links is copied, unless it is
 * over the copy limit: then it is kept too.
 */
static void test_delete_keeps_the_inode_by_link(void **state)
{
	struct fixture *f = *state;
	struct fsb_backup_result res;
	char a[PATHBUF], b[PATHBUF], b2[PATHBUF], c[PATHBUF], obj[PATHBUF], out[PATHBUF],
	     err[256], hex[65], *data, *got;
	struct fsb_cycle cy;
	struct stat st, ost;
	unsigned js, os;
	size_t len;
	int fd, ofd;

	open_store(f);
	assert_true(fsb_store_begin(f->s) > 0);
	src_path(f, "big", a);
	src_path(f, "two", b);
	src_path(f, "two-again", b2);
	src_path(f, "later", c);
	data = make_file(a, 3 << 20, 81);
	assert_int_equal(lstat(a, &st), 0);
	syncs_take(&js, &os);

	/* Over the 1 MiB limit, yet kept: a delete never meets it. */
	assert_int_equal(keep_record(f, a, "delete", 1 << 20, &res), 0);
	assert_true(res.kept);
	ref_sha256(data, 3 << 20, hex);
	assert_string_not_equal(res.object, hex);
	object_path(f, res.object, obj);
	assert_int_equal(lstat(obj, &ost), 0);
	assert_int_equal(ost.st_ino, st.st_ino);	/* the very inode */
	assert_int_equal(ost.st_nlink, 2);
	syncs_take(&js, &os);
	assert_int_equal(js, 1);
	assert_true(os <= 2);	/* objects/<hh> when new, and its entry; no object fsync */
	assert_int_equal(unlink(a), 0);

	free(make_file(b, 5000, 82));
	assert_int_equal(link(b, b2), 0);
	assert_int_equal(keep_record(f, b, "rename-to", 0, &res), 0);
	assert_false(res.kept);		/* it lives on as two-again: copied */
	object_path(f, res.object, obj);
	assert_int_equal(lstat(obj, &ost), 0);
	assert_int_equal(lstat(b, &st), 0);
	assert_int_not_equal(ost.st_ino, st.st_ino);
	/* Over the limit a copy would not be taken at all: kept, its other
	 * name left (pnpm's big files, linked from its store). */
	src_path(f, "pair", b);
	src_path(f, "pair-again", b2);
	free(make_file(b, 5000, 84));
	assert_int_equal(link(b, b2), 0);
	assert_int_equal(keep_record(f, b, "delete", 1000, &res), 0);
	assert_true(res.kept);
	object_path(f, res.object, obj);
	assert_int_equal(lstat(obj, &ost), 0);
	assert_int_equal(lstat(b2, &st), 0);
	assert_int_equal(ost.st_ino, st.st_ino);

	free(make_file(c, 100, 83));
	assert_int_equal(keep_record(f, c, "delete", 0, &res), 0);
	assert_true(res.kept);
	/* The delete did not happen after all, and the file was written. */
	fd = open(c, O_WRONLY | O_APPEND | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "more", 4), 4);
	close(fd);

	assert_int_equal(fsb_cycle_load(f->store, 1, &cy, stderr, err, sizeof(err)), 0);
	assert_int_equal(changes_in(&cy), 4);
	assert_true(change_of(&cy, 0)->prior.kept);
	assert_false(change_of(&cy, 1)->prior.kept);
	assert_true(change_of(&cy, 2)->prior.kept);
	fd = fsb_backup_object_open(f->store, change_of(&cy, 0)->prior.object);
	assert_true(fd >= 0);
	src_path(f, "restored", out);
	ofd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(ofd >= 0);
	assert_int_equal(fsb_backup_object_restore(fd, &change_of(&cy, 0)->prior, ofd), 0);
	close(ofd);
	close(fd);
	got = slurp(out, &len);
	assert_int_equal(len, 3 << 20);
	assert_memory_equal(got, data, len);
	free(got);
	fd = fsb_backup_object_open(f->store, change_of(&cy, 3)->prior.object);
	assert_true(fd >= 0);
	assert_int_equal(fsb_backup_object_check(fd, &change_of(&cy, 3)->prior), -ESTALE);
	close(fd);
	fsb_cycle_free(&cy);
	free(data);
}

/*
 * chmod, utimes and the like change no byte: the record keeps the old
 * metadata and copies nothing (one journal sync, no object). When the same
 * tool call then writes or deletes the file, that line is the first to hold
 * its bytes: it copies them and is synced on its own, and the reader lends
 * its object to the first record, which a restore reads.
 */
static void test_metadata_only_record_copies_nothing(void **state)
{
	struct fixture *f = *state;
	struct fsb_backup_result res;
	struct fsb_backup_req r;
	struct fsb_cycle c;
	char a[PATHBUF], b[PATHBUF], err[256];
	struct stat st;
	unsigned js, os;
	int fd;
	cJSON *j, *prior;

	open_store(f);
	assert_true(fsb_store_begin(f->s) > 0);
	src_path(f, "a", a);
	src_path(f, "b", b);
	free(make_file(a, 3000, 71));
	free(make_file(b, 3000, 72));
	assert_int_equal(chmod(a, 0640), 0);
	syncs_take(&js, &os);

	assert_int_equal(lstat(a, &st), 0);
	req_for(&r, a, &st, -1);
	r.op = "chmod";
	r.flags = 0;
	r.metadata_only = true;
	r.no_repeat_copy = true;
	assert_int_equal(fsb_store_record(f->s, &r, &res), 0);
	assert_true(res.metadata_only);
	assert_string_equal(res.object, "");
	assert_null(res.skipped);
	syncs_take(&js, &os);
	assert_int_equal(js, 1);	/* the old mode is the only record of it */
	assert_int_equal(os, 0);	/* no object, no objects/<hh> */
	assert_int_equal(count_objects(f, NULL), 0);

	/* b: chmod, then nothing else in the cycle. */
	assert_int_equal(lstat(b, &st), 0);
	req_for(&r, b, &st, -1);
	r.op = "utimes";
	r.metadata_only = true;
	assert_int_equal(fsb_store_record(f->s, &r, &res), 0);

	/* The same tool call now opens a for writing: copied after all. */
	assert_int_equal(lstat(a, &st), 0);
	fd = open(a, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	req_for(&r, a, &st, fd);
	r.no_repeat_copy = true;
	syncs_take(&js, &os);
	assert_int_equal(fsb_store_record(f->s, &r, &res), 0);
	close(fd);
	assert_string_not_equal(res.object, "");
	syncs_take(&js, &os);
	assert_int_equal(js, 1);	/* the first line that holds the bytes */
	assert_int_equal(count_objects(f, NULL), 1);

	j = journal(f, 1);
	assert_int_equal(cJSON_GetArraySize(j), 3);
	prior = get(cJSON_GetArrayItem(j, 0), "prior");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(prior, "metadataOnly")));
	assert_true(num(prior, "mode") == 0640);
	assert_null(cJSON_GetObjectItemCaseSensitive(prior, "object"));
	prior = get(cJSON_GetArrayItem(j, 2), "prior");
	assert_null(cJSON_GetObjectItemCaseSensitive(prior, "metadataOnly"));
	assert_string_equal(str(prior, "object"), res.object);
	cJSON_Delete(j);

	assert_int_equal(fsb_cycle_load(f->store, 1, &c, stderr, err, sizeof(err)), 0);
	assert_int_equal(c.nrecs, 3);
	/* a's first record: its old mode, and the bytes the write saved. */
	assert_false(c.recs[0].prior.metadata_only);
	assert_string_equal(c.recs[0].prior.object, res.object);
	assert_int_equal(c.recs[0].prior.mode, 0640);
	/* b's: metadata alone, nothing lent. */
	assert_true(c.recs[1].prior.metadata_only);
	assert_string_equal(c.recs[1].prior.object, "");
	assert_int_equal(c.nobjects, 1);
	fsb_cycle_free(&c);
}

/*
 * A rename's source is journaled as moved: where it goes (movedTo), its
 * metadata, no object. The name it moves to copies its bytes at its next
 * write in the cycle, even a repeat of a grant that tool call had recorded
 * before the move (the bytes are in no object yet); the reader lends that
 * object to the move record. A moved file nothing wrote afterwards is found
 * where it last went (moved_now), through a second move too.
 */
static void test_moved_record_copies_nothing_until_its_new_name_is_written(void **state)
{
	struct fixture *f = *state;
	struct fsb_backup_result res, wrote;
	struct fsb_backup_req r;
	struct fsb_cycle c;
	char a[PATHBUF], a2[PATHBUF], b[PATHBUF], b2[PATHBUF], b3[PATHBUF], err[256];
	const struct fsb_journal_rec *ra, *rb;
	struct stat st;
	int fd;
	cJSON *j, *line;

	open_store(f);
	assert_true(fsb_store_begin(f->s) > 0);
	src_path(f, "a", a);
	src_path(f, "a2", a2);
	src_path(f, "b", b);
	src_path(f, "b2", b2);
	src_path(f, "b3", b3);
	free(make_file(a, 3000, 81));
	free(make_file(b, 2000, 82));

	/* The grant's tool call makes a2 first (a create), then a moves there. */
	req_for(&r, a2, NULL, -1);
	r.op = "create";
	assert_int_equal(fsb_store_record(f->s, &r, &res), 0);
	assert_int_equal(lstat(a, &st), 0);
	req_for(&r, a, &st, -1);
	r.op = "rename-from";
	r.flags = 0;
	r.tool_call = "";
	r.moved_to = a2;
	assert_int_equal(fsb_store_record(f->s, &r, &res), 0);
	assert_true(res.moved);
	assert_string_equal(res.object, "");
	assert_int_equal(count_objects(f, NULL), 0);
	assert_int_equal(rename(a, a2), 0);

	/* A write grant of a2 by the tool call that recorded it: copied. */
	assert_int_equal(lstat(a2, &st), 0);
	fd = open(a2, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	req_for(&r, a2, &st, fd);
	r.no_repeat_copy = true;
	assert_int_equal(fsb_store_record(f->s, &r, &wrote), 0);
	assert_string_not_equal(wrote.object, "");
	assert_null(wrote.skipped);
	/* Once copied, a repeat is a repeat again. */
	assert_int_equal(fsb_store_record(f->s, &r, &res), 0);
	assert_string_equal(res.skipped, "recorded-before");
	close(fd);

	/* b moves twice and is not written. */
	assert_int_equal(lstat(b, &st), 0);
	req_for(&r, b, &st, -1);
	r.op = "rename-from";
	r.moved_to = b2;
	assert_int_equal(fsb_store_record(f->s, &r, &res), 0);
	assert_int_equal(rename(b, b2), 0);
	assert_int_equal(lstat(b2, &st), 0);
	req_for(&r, b2, &st, -1);
	r.op = "rename-from";
	r.moved_to = b3;
	assert_int_equal(fsb_store_record(f->s, &r, &res), 0);
	assert_int_equal(rename(b2, b3), 0);
	assert_int_equal(count_objects(f, NULL), 1);

	j = journal(f, 1);
	line = NULL;
	for (int i = 0; i < cJSON_GetArraySize(j) && line == NULL; i++)
		if (strcmp(str(cJSON_GetArrayItem(j, i), "resolved"), a) == 0)
			line = cJSON_GetArrayItem(j, i);
	assert_non_null(line);
	assert_string_equal(str(line, "movedTo"), a2);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(get(line, "prior"), "moved")));
	assert_null(cJSON_GetObjectItemCaseSensitive(get(line, "prior"), "object"));
	cJSON_Delete(j);

	assert_int_equal(fsb_cycle_load(f->store, 1, &c, stderr, err, sizeof(err)), 0);
	ra = rb = NULL;
	for (size_t i = 0; i < c.nrecs; i++) {
		if (ra == NULL && strcmp(c.recs[i].resolved, a) == 0)
			ra = &c.recs[i];
		if (rb == NULL && strcmp(c.recs[i].resolved, b) == 0)
			rb = &c.recs[i];
	}
	assert_non_null(ra);
	assert_non_null(rb);
	/* a: the write's copy is lent to the move record. */
	assert_false(ra->prior.moved);
	assert_string_equal(ra->prior.object, wrote.object);
	/* b: no copy anywhere; its bytes are where it last went. */
	assert_true(rb->prior.moved);
	assert_string_equal(rb->prior.object, "");
	assert_non_null(rb->moved_now);
	assert_string_equal(rb->moved_now, b3);
	fsb_cycle_free(&c);
}

/*
 * The syncs one change costs, by kind: a created path's line none (a crash
 * could only lose the knowledge that a new file is to be removed), an
 * existing file's first backup its object's and one of the journal (its old
 * bytes must survive the change), and a later change of a path the same
 * tool call already backed up in the cycle none at all: no copy, no sync.
 * Another tool call's first change of it is synced again (a restore of
 * that tool call reads it). The seal makes every line durable.
 */
static void test_syncs_per_change_kind(void **state)
{
	struct fixture *f = *state;
	struct fsb_backup_result res, first;
	char a[PATHBUF], fresh[PATHBUF];
	unsigned js, os;
	int objects;
	cJSON *j;

	open_store(f);
	assert_true(fsb_store_begin(f->s) > 0);
	src_path(f, "a", a);
	src_path(f, "fresh", fresh);
	free(make_file(a, 3000, 61));

	assert_int_equal(grant_record(f, fresh, "tc-1", true, true, &res, &js, &os), 0);
	assert_int_equal(js, 0);
	assert_int_equal(os, 0);
	assert_int_equal(res.durable.end, 0);

	assert_int_equal(grant_record(f, a, "tc-1", false, true, &first, &js, &os), 0);
	assert_int_equal(js, 1);
	assert_true(os >= 1);		/* the object, and its directory */
	assert_string_not_equal(first.object, "");
	objects = count_objects(f, NULL);

	/* `echo y > a` again, and again. */
	for (int i = 0; i < 3; i++) {
		granted_and_changed(f, a, i % 2 ? "y\n" : "yes\n");
		assert_int_equal(grant_record(f, a, "tc-1", false, true, &res, &js, &os), 0);
		assert_int_equal(js, 0);
		assert_int_equal(os, 0);
		assert_string_equal(res.object, "");
		assert_string_equal(res.skipped, "recorded-before");
	}
	assert_int_equal(count_objects(f, NULL), objects);
	/* A path created in the cycle, changed again: nothing either. */
	free(make_file(fresh, 10, 62));
	assert_int_equal(grant_record(f, fresh, "tc-1", false, true, &res, &js, &os), 0);
	assert_int_equal(js + os, 0);

	/* Another tool call: its restore starts from this state. */
	assert_int_equal(grant_record(f, a, "tc-2", false, true, &res, &js, &os), 0);
	assert_int_equal(js, 1);
	assert_true(os >= 1);
	assert_string_not_equal(res.object, "");
	/* A host operation (no no_repeat_copy) copies a changed file again,
	 * but its line needs no sync of its own. */
	granted_and_changed(f, a, "moved away\n");
	assert_int_equal(grant_record(f, a, "tc-2", false, false, &res, &js, &os), 0);
	assert_int_equal(js, 0);
	assert_string_not_equal(res.object, "");

	/* The lines are all there, in order, and the reader takes them: the
	 * repeats of tc-1 wrote none. */
	j = journal(f, 1);
	assert_int_equal(cJSON_GetArraySize(j), 4);
	for (int i = 0; i < 4; i++) {
		const cJSON *prior = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(j, i),
								     "prior");

		assert_null(cJSON_GetObjectItemCaseSensitive(prior, "skipped"));
	}
	cJSON_Delete(j);

	/* Unsynced lines (the last one) are made durable by the seal. */
	syncs_take(&js, &os);
	assert_int_equal(fsb_store_seal(f->s, "m", "", NULL, 0), 1);
	syncs_take(&js, &os);
	assert_int_equal(js, 1);
}

/*
 * A later line of a (path, tool call) whose first line must be durable
 * waits for that line: its change must not start before the backup of the
 * path's old state is on disk, even when another thread appended it and
 * has not synced it yet. A created path's later line waits for nothing.
 */
static void test_later_line_waits_for_the_first(void **state)
{
	struct fixture *f = *state;
	struct fsb_backup_result r1, r2, r3, r4;
	struct fsb_backup_req r;
	char a[PATHBUF], n[PATHBUF];
	struct stat st;
	int fd;

	open_store(f);
	src_path(f, "a", a);
	src_path(f, "n", n);
	free(make_file(a, 100, 63));
	assert_int_equal(lstat(a, &st), 0);
	fd = open(a, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	req_for(&r, a, &st, fd);
	r.defer_sync = true;
	r.no_repeat_copy = true;
	syncs_take(&(unsigned){ 0 }, &(unsigned){ 0 });
	assert_int_equal(fsb_store_record(f->s, &r, &r1), 0);
	assert_int_equal(fsb_store_record(f->s, &r, &r2), 0);
	close(fd);
	assert_int_equal(r1.durable.cycle, 1);
	assert_true(r1.durable.end > 0);
	assert_int_equal(r2.durable.cycle, 1);
	assert_int_equal(r2.durable.end, r1.durable.end);

	req_for(&r, n, NULL, -1);
	r.op = "create";
	r.defer_sync = true;
	assert_int_equal(fsb_store_record(f->s, &r, &r3), 0);
	assert_int_equal(fsb_store_record(f->s, &r, &r4), 0);
	assert_int_equal(r3.durable.end, 0);
	assert_int_equal(r4.durable.end, 0);

	/* Nothing was synced yet; the wait of the later line syncs once. */
	unsigned js, os;

	syncs_take(&js, &os);
	assert_int_equal(js, 0);
	assert_int_equal(fsb_store_wait(f->s, &r2.durable), 0);
	assert_int_equal(fsb_store_wait(f->s, &r1.durable), 0);
	syncs_take(&js, &os);
	assert_int_equal(js, 1);
}

/*
 * A failed fdatasync: the change whose line needed it is refused, and since
 * nothing written after the last good sync is known to be on disk, the
 * cycle takes no more lines until it is sealed. A created path needs no
 * sync, so its line went in before.
 */
static void test_failed_sync_refuses_the_change_and_the_cycle(void **state)
{
	struct fixture *f = *state;
	struct fsb_backup_result res;
	char a[PATHBUF], n[PATHBUF];
	unsigned js, os;
	cJSON *j;

	open_store(f);
	src_path(f, "a", a);
	src_path(f, "n", n);
	free(make_file(a, 100, 64));
	hook.fail_journal_sync = EIO;
	assert_int_equal(grant_record(f, n, "tc-1", true, true, &res, &js, &os), 0);
	assert_int_equal(grant_record(f, a, "tc-1", false, true, &res, &js, &os), -EIO);
	assert_string_equal(res.object, "");
	assert_int_equal(grant_record(f, n, "tc-2", true, true, &res, &js, &os), -EIO);
	hook.fail_journal_sync = 0;
	assert_int_equal(grant_record(f, a, "tc-3", false, true, &res, &js, &os), -EIO);
	assert_int_equal(js, 0);

	/* The seal syncs the journal again; the next cycle works. */
	assert_int_equal(fsb_store_seal(f->s, "m", "", NULL, 0), 1);
	assert_int_equal(grant_record(f, a, "tc-1", false, true, &res, &js, &os), 0);
	assert_int_equal(js, 1);
	j = journal(f, 2);
	assert_int_equal(cJSON_GetArraySize(j), 1);
	cJSON_Delete(j);
}

/* Group commit: writers that take the store lock in turn to append, and
 * wait for their lines without it. */
struct gc_writer {
	struct fixture *f;
	pthread_mutex_t *lock;
	char path[PATHBUF];
	int rc;
};

static void *gc_writer_main(void *arg)
{
	struct gc_writer *w = arg;
	struct fsb_backup_result res;
	struct fsb_backup_req r;
	struct stat st;
	int fd = open(w->path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) < 0) {
		w->rc = -errno;
		return NULL;
	}
	req_for(&r, w->path, &st, fd);
	r.defer_sync = true;
	r.no_repeat_copy = true;
	r.caller_lock = w->lock;
	pthread_mutex_lock(w->lock);
	w->rc = fsb_store_record(w->f->s, &r, &res);
	pthread_mutex_unlock(w->lock);
	close(fd);
	pthread_mutex_lock(&syncs.mu);
	syncs.appended++;
	pthread_cond_broadcast(&syncs.cv);
	pthread_mutex_unlock(&syncs.mu);
	if (w->rc == 0)
		w->rc = fsb_store_wait(w->f->s, &res.durable);
	return NULL;
}

/*
 * Eight writers at once, the first fdatasync held until all eight lines are
 * appended: one more fdatasync covers the seven that came meanwhile, so the
 * journal is synced at most twice, not eight times; every writer's wait
 * succeeds and every line is in the journal, read back by the reader.
 */
static void test_group_commit_covers_concurrent_lines(void **state)
{
	enum { N = 8 };
	struct fixture *f = *state;
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct gc_writer w[N];
	pthread_t tid[N];
	struct fsb_cycle c;
	char err[256];
	unsigned js, os;

	open_store(f);
	assert_true(fsb_store_begin(f->s) > 0);
	for (int i = 0; i < N; i++) {
		char name[16];

		snprintf(name, sizeof(name), "w%d", i);
		w[i].f = f;
		w[i].lock = &lock;
		src_path(f, name, w[i].path);
		free(make_file(w[i].path, 64, 70 + (unsigned)i));
	}
	syncs_take(&js, &os);
	hook.hold_until = N;
	for (int i = 0; i < N; i++)
		assert_int_equal(pthread_create(&tid[i], NULL, gc_writer_main, &w[i]), 0);
	for (int i = 0; i < N; i++) {
		pthread_join(tid[i], NULL);
		assert_int_equal(w[i].rc, 0);
	}
	syncs_take(&js, &os);
	assert_true(js >= 1);
	assert_true(js <= 2);

	assert_int_equal(fsb_store_seal(f->s, "m", "", NULL, 0), 1);
	assert_int_equal(fsb_cycle_load(f->store, 1, &c, NULL, err, sizeof(err)), 0);
	assert_int_equal(c.nrecs, N);
	assert_int_equal(c.malformed, 0);
	for (int i = 0; i < N; i++) {
		bool found = false;

		for (size_t k = 0; k < c.nrecs; k++)
			found |= strcmp(c.recs[k].resolved, w[i].path) == 0 &&
				 c.recs[k].prior.object[0] != '\0';
		assert_true(found);
	}
	fsb_cycle_free(&c);
}

/* ---- regressions --------------------------------------------------------- */

/*
 * Two cores on one store (two runs of one workspace at once): the second
 * open neither seals the first one's live cycle as recovered nor removes
 * its temporaries in flight; each core gets a cycle of its own, and both
 * seal.
 */
static void test_second_core_on_one_store_is_not_refused(void **state)
{
	struct fixture *f = *state;
	struct fsb_backup_result res;
	struct fsb_store *second = NULL;
	char a[PATHBUF], b[PATHBUF], tmp[PATHBUF], err[256] = "";
	cJSON *c;
	int fd;

	open_store(f);
	src_path(f, "live", a);
	src_path(f, "other", b);
	free(make_file(a, 100, 40));
	free(make_file(b, 100, 41));
	assert_int_equal(backup_path(f, a, &res), 0);
	assert_int_equal(fsb_store_cycle(f->s), 1);
	/* An object the first core is writing right now. */
	snprintf(tmp, sizeof(tmp), "%s/objects/.tmp-00000000000000aa", f->store);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);

	assert_int_equal(fsb_store_open(f->state, SESSION, &second, err, sizeof(err)), 0);
	assert_null(cycle_file(f, 1));		/* the live cycle is not sealed */
	assert_int_equal(access(tmp, F_OK), 0);	/* nor its temporary removed */
	assert_int_equal(fsb_store_begin(second), 2);
	assert_int_equal(backup_path(f, a, &res), 0);
	assert_int_equal(fsb_store_cycle(f->s), 1);
	assert_int_equal(fsb_store_seal(second, "second", "", err, sizeof(err)), 0);
	assert_null(cycle_file(f, 2));		/* it had no line: removed */
	assert_int_equal(fsb_store_begin(second), 2);
	assert_int_equal(fsb_store_alone(second), 0);	/* the first one has it */
	{
		struct fsb_backup_req r;
		struct stat st;

		assert_int_equal(lstat(b, &st), 0);
		fd = open(b, O_RDONLY | O_CLOEXEC);
		req_for(&r, b, &st, fd);
		assert_int_equal(fsb_store_record(second, &r, &res), 0);
		close(fd);
	}
	assert_int_equal(fsb_store_seal(second, "second", "", err, sizeof(err)), 2);
	c = cycle_file(f, 2);
	assert_non_null(c);
	assert_false(cJSON_IsTrue(get(c, "recovered")));
	cJSON_Delete(c);
	assert_int_equal(fsb_store_seal(f->s, "first", "", err, sizeof(err)), 1);
	c = cycle_file(f, 1);
	assert_non_null(c);
	assert_false(cJSON_IsTrue(get(c, "recovered")));
	cJSON_Delete(c);
	fsb_store_close(second);
	/* Alone now: the store is the first core's to prune. */
	assert_int_equal(fsb_store_alone(f->s), 1);
	fsb_store_share(f->s);
}

/*
 * A core that dies with its cycle open, while another core of the same
 * store runs: the next open seals the dead one's cycle as recovered and
 * leaves the live one's open.
 */
static void test_dead_cores_cycle_is_recovered_while_another_core_runs(void **state)
{
	struct fixture *f = *state;
	struct fsb_backup_result res;
	struct fsb_store *dead = NULL, *third = NULL;
	char a[PATHBUF], err[256] = "";
	cJSON *c;

	open_store(f);
	src_path(f, "live", a);
	free(make_file(a, 100, 40));
	assert_int_equal(fsb_store_open(f->state, SESSION, &dead, err, sizeof(err)), 0);
	assert_int_equal(fsb_store_begin(dead), 1);
	assert_int_equal(backup_path(f, a, &res), 0);
	assert_int_equal(fsb_store_cycle(f->s), 2);
	fsb_store_close(dead);			/* as a SIGKILL leaves it */

	assert_int_equal(fsb_store_open(f->state, SESSION, &third, err, sizeof(err)), 0);
	c = cycle_file(f, 1);
	assert_non_null(c);
	assert_true(cJSON_IsTrue(get(c, "recovered")));
	cJSON_Delete(c);
	assert_null(cycle_file(f, 2));		/* alive: still open */
	assert_int_equal(backup_path(f, a, &res), 0);
	assert_int_equal(fsb_store_seal(f->s, "live", "", err, sizeof(err)), 2);
	fsb_store_close(third);
}

/* A turn that backed nothing up leaves no cycle behind, and the next one
 * takes the same number. */
static void test_empty_cycle_is_not_sealed(void **state)
{
	struct fixture *f = *state;
	char dir[PATHBUF], err[256] = "";

	open_store(f);
	assert_int_equal(fsb_store_begin(f->s), 1);
	assert_int_equal(fsb_store_seal(f->s, "nothing", "", err, sizeof(err)), 0);
	assert_int_equal(fsb_store_cycle(f->s), 0);
	snprintf(dir, sizeof(dir), "%s/cycles/1", f->store);
	assert_int_not_equal(access(dir, F_OK), 0);
	assert_int_equal(fsb_store_begin(f->s), 1);
}

/* The lock does not leak into a command the core runs. */
static void test_store_lock_is_not_inherited_by_exec(void **state)
{
	struct fixture *f = *state;
	struct stat want, st;
	struct dirent *de;
	char link[64];
	int seen = 0;
	DIR *d;

	open_store(f);
	assert_int_equal(stat(f->store, &want), 0);
	d = opendir("/proc/self/fd");
	assert_non_null(d);
	while ((de = readdir(d)) != NULL) {
		int fd = atoi(de->d_name);

		if (de->d_name[0] == '.' || fd == dirfd(d))
			continue;
		snprintf(link, sizeof(link), "/proc/self/fd/%s", de->d_name);
		if (stat(link, &st) != 0 || st.st_dev != want.st_dev || st.st_ino != want.st_ino)
			continue;
		assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
		seen++;
	}
	closedir(d);
	assert_int_equal(seen, 1);
}

/*
 * The size limit is checked against one fstat. A file that grows while it
 * is copied must not make the object larger than that: the object is the
 * first st_size bytes, through copy_file_range and through read/write.
 */
static void grow_during_copy(struct fixture *f, bool no_range)
{
	struct fsb_backup_result res;
	struct fsb_backup_req r;
	char src[PATHBUF], obj[PATHBUF], want[65], *data, *copy;
	size_t size = 100000, len;
	struct stat st;
	int fd, wfd;

	if (ficlone_works(f)) {
		print_message("# skipping: FICLONE works here, so nothing is copied\n");
		skip();
	}
	open_store(f);
	src_path(f, "growing", src);
	data = make_file(src, size, 41);
	assert_int_equal(lstat(src, &st), 0);
	fd = open(src, O_RDONLY | O_CLOEXEC);
	wfd = open(src, O_WRONLY | O_APPEND | O_CLOEXEC);
	assert_true(fd >= 0 && wfd >= 0);
	req_for(&r, src, &st, fd);
	r.max_bytes = size;		/* exactly at the limit when checked */
	r.on_too_large = FSB_TOO_LARGE_FAIL;
	hook.grow_fd = wfd;
	hook.grow_by = 4 << 20;		/* then 4 MiB more, during the copy */
	hook.no_range = no_range;
	assert_int_equal(fsb_store_record(f->s, &r, &res), 0);
	hook_reset();
	close(wfd);
	close(fd);
	assert_int_equal(stat(src, &st), 0);
	assert_int_equal(st.st_size, size + (4 << 20));	/* it did grow */

	ref_sha256(data, size, want);
	assert_string_equal(res.object, want);
	object_path(f, want, obj);
	copy = slurp(obj, &len);
	assert_int_equal(len, size);
	assert_memory_equal(copy, data, size);
	assert_int_equal(count_objects(f, NULL), 1);
	free(copy);
	free(data);
}

static void test_file_growing_during_copy_range_is_cut_at_checked_size(void **state)
{
	grow_during_copy(*state, false);
}

static void test_file_growing_during_read_write_copy_is_cut_at_checked_size(void **state)
{
	grow_during_copy(*state, true);
}

/* Damage the object `hex` in place: `bad` instead of its content. */
static void damage_object(const struct fixture *f, const char *hex, const char *bad)
{
	char obj[PATHBUF];
	int fd;

	object_path(f, hex, obj);
	assert_int_equal(chmod(obj, 0600), 0);
	fd = open(obj, O_WRONLY | O_TRUNC | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, bad, strlen(bad)), (ssize_t)strlen(bad));
	close(fd);
	assert_int_equal(chmod(obj, 0400), 0);
}

/* The object `hex` holds `want` and is 0400; no temporary is left. */
static void assert_object(const struct fixture *f, const char *hex, const char *want, size_t n)
{
	char obj[PATHBUF], *copy;
	struct stat st;
	size_t len;
	int tmps;

	object_path(f, hex, obj);
	assert_int_equal(lstat(obj, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0400);
	copy = slurp(obj, &len);
	assert_int_equal(len, n);
	assert_memory_equal(copy, want, n);
	free(copy);
	assert_int_equal(count_objects(f, &tmps), 1);
	assert_int_equal(tmps, 0);
}

/*
 * An object already under the name was trusted blindly: bit rot in it made
 * the fresh, good copy be dropped, and the restore that then refused the
 * damaged object lost the file. It is checked (size, then SHA-256) and
 * replaced by the fresh copy when it does not match.
 */
static void test_corrupted_object_is_replaced_by_the_fresh_copy(void **state)
{
	struct fixture *f = *state;
	struct fsb_backup_result res;
	char a[PATHBUF], b[PATHBUF], c[PATHBUF], hex[65], *data, *bad;
	size_t size = 5000;

	open_store(f);
	src_path(f, "a", a);
	src_path(f, "b", b);
	src_path(f, "c", c);
	data = make_file(a, size, 42);
	free(make_file(b, size, 42));
	free(make_file(c, size, 42));
	assert_int_equal(backup_path(f, a, &res), 0);
	memcpy(hex, res.object, sizeof(hex));

	/* Same size, one byte off: only the hash can tell. */
	bad = malloc(size + 1);
	assert_non_null(bad);
	memcpy(bad, data, size);
	bad[size] = '\0';
	for (size_t i = 0; i < size; i++)
		if (bad[i] == '\0')
			bad[i] = 1;	/* strlen must see all of it */
	bad[size / 2] ^= 0x20;
	damage_object(f, hex, bad);
	assert_int_equal(backup_path(f, b, &res), 0);
	assert_string_equal(res.object, hex);
	assert_object(f, hex, data, size);

	/* Cut short: the size tells. */
	damage_object(f, hex, "short");
	assert_int_equal(backup_path(f, c, &res), 0);
	assert_string_equal(res.object, hex);
	assert_object(f, hex, data, size);

	/* A good object is kept as it is (same inode). */
	{
		char obj[PATHBUF];
		struct stat before, after;

		object_path(f, hex, obj);
		assert_int_equal(lstat(obj, &before), 0);
		assert_int_equal(fsb_store_seal(f->s, "m", "", NULL, 0), 1);
		assert_int_equal(backup_path(f, a, &res), 0);
		assert_int_equal(lstat(obj, &after), 0);
		assert_int_equal(before.st_ino, after.st_ino);
	}
	free(bad);
	free(data);
}

/* The same through a named temporary (no O_TMPFILE): renamed over it. */
static void test_corrupted_object_is_replaced_without_o_tmpfile(void **state)
{
	struct fixture *f = *state;
	struct fsb_backup_result res;
	char a[PATHBUF], hex[65], *data;
	size_t size = 3000;

	open_store(f);
	src_path(f, "a", a);
	data = make_file(a, size, 43);
	assert_int_equal(backup_path(f, a, &res), 0);
	memcpy(hex, res.object, sizeof(hex));
	fsb_store_close(f->s);
	f->s = NULL;
	damage_object(f, hex, "rotten");
	assert_int_equal(record_without(f, a, __NR_openat, 2, O_TMPFILE & ~O_DIRECTORY,
					EOPNOTSUPP), 0);
	assert_object(f, hex, data, size);
	free(data);
}

/*
 * A journal line cut short whose rest cannot be truncated away stays at the
 * end of the journal; the next O_APPEND line would be joined to it and a
 * reader would skip both. The cycle refuses every later record instead.
 */
static void test_journal_that_cannot_be_cut_back_refuses_later_records(void **state)
{
	struct fixture *f = *state;
	struct fsb_backup_result res;
	char a[PATHBUF], b[PATHBUF], path[PATHBUF], *text;
	struct stat st;
	size_t len;
	cJSON *j;

	open_store(f);
	src_path(f, "a", a);
	src_path(f, "b", b);
	free(make_file(a, 10, 44));
	free(make_file(b, 10, 45));
	hook.short_journal = true;
	hook.fail_truncate = EIO;
	assert_int_equal(backup_path(f, a, &res), -ENOSPC);
	hook_reset();
	snprintf(path, sizeof(path), "%s/cycles/1/journal.jsonl", f->store);
	assert_int_equal(stat(path, &st), 0);
	assert_true(st.st_size > 0);		/* the half line stayed */

	assert_int_equal(backup_path(f, b, &res), -EIO);
	assert_string_equal(res.object, "");
	assert_int_equal(backup_path(f, a, &res), -EIO);
	text = slurp(path, &len);
	assert_int_equal(len, st.st_size);	/* nothing joined to it */
	assert_null(strchr(text, '\n'));
	free(text);

	/* Sealing ends the cycle; the next one has a journal of its own. */
	assert_int_equal(fsb_store_seal(f->s, "m", "", NULL, 0), 1);
	assert_int_equal(backup_path(f, b, &res), 0);
	j = journal(f, 2);
	assert_int_equal(cJSON_GetArraySize(j), 1);
	cJSON_Delete(j);
}

/*
 * A path whose end state cannot be read (here ELOOP: a symlink loop on the
 * way) is not absent: it is left out of `paths`, so a restore of it needs
 * --force. Only ENOENT and ENOTDIR mean absent.
 */
static void test_unreadable_end_state_is_left_out_not_absent(void **state)
{
	struct fixture *f = *state;
	struct fsb_backup_result res;
	struct fsb_backup_req r;
	char loop[PATHBUF], inside[PATHBUF], gone[PATHBUF], notdir[PATHBUF];
	cJSON *c, *paths;

	open_store(f);
	src_path(f, "loop", loop);
	assert_int_equal(symlink("loop", loop), 0);
	snprintf(inside, sizeof(inside), "%s/f", loop);
	src_path(f, "gone", gone);
	src_path(f, "gone/x", notdir);
	free(make_file(gone, 5, 46));

	req_for(&r, inside, NULL, -1);
	r.op = "create";
	assert_int_equal(fsb_store_record(f->s, &r, &res), 0);
	req_for(&r, notdir, NULL, -1);
	r.op = "create";
	assert_int_equal(fsb_store_record(f->s, &r, &res), 0);
	req_for(&r, loop, NULL, -1);
	r.op = "create";
	assert_int_equal(fsb_store_record(f->s, &r, &res), 0);
	assert_int_equal(fsb_store_seal(f->s, "m", "", NULL, 0), 1);

	c = cycle_file(f, 1);
	paths = get(c, "paths");
	assert_null(cJSON_GetObjectItemCaseSensitive(paths, inside));
	assert_true(cJSON_IsFalse(get(get(paths, notdir), "exists")));	/* ENOTDIR */
	assert_string_equal(str(get(paths, loop), "type"), "symlink");
	/* And the directory `loop` was made in (its "entries" line). */
	assert_int_equal(cJSON_GetArraySize(paths), 3);
	cJSON_Delete(c);
}

/* A directory the store makes is fsynced into its parent: when that
 * fails, the open fails and the directory is not left behind unsynced. */
static void test_new_store_directory_is_fsynced_into_its_parent(void **state)
{
	struct fixture *f = *state;
	char path[PATHBUF];

	assert_int_equal(mkdir(f->state, 0700), 0);
	assert_int_equal(open_without(f, __NR_fsync, EIO), -EIO);
	snprintf(path, sizeof(path), "%s/sessions", f->state);
	assert_int_not_equal(access(path, F_OK), 0);
	open_store(f);
}

/*
 * backup.durability = "batched": copies, kept inodes and lines are written
 * with no fsync or fdatasync on the record's path; the store's thread
 * makes them durable with a syncfs within FSB_STORE_BATCH_MS, without
 * another record; a seal syncfs'es whatever is left before cycle.json.
 */
static void test_batched_records_sync_nothing_on_their_path(void **state)
{
	struct fixture *f = *state;
	struct fsb_backup_result res;
	char a[PATHBUF], b[PATHBUF], err[256];
	unsigned js, os, fs;

	open_store(f);
	assert_int_equal(fsb_store_set_durability(f->s, true), 0);
	src_path(f, "copied", a);
	src_path(f, "kept", b);
	free(make_file(a, 5000, 91));
	free(make_file(b, 5000, 92));
	syncs_take(&js, &os);
	fs = syncfs_count();

	assert_int_equal(backup_path(f, a, &res), 0);
	assert_int_equal(strlen(res.object), 64);
	assert_int_equal(keep_record(f, b, "delete", 0, &res), 0);
	assert_true(res.kept);
	syncs_take(&js, &os);
	assert_int_equal(js, 0);
	assert_int_equal(os, 0);

	/* The flusher, by itself; 10 s at most on a loaded machine. */
	for (int i = 0; i < 100 && syncfs_count() == fs; i++)
		nanosleep(&(struct timespec){ .tv_nsec = 100000000L }, NULL);
	assert_true(syncfs_count() > fs);

	free(make_file(a, 6000, 93));
	assert_int_equal(backup_path(f, a, &res), 0);
	fs = syncfs_count();
	assert_true(fsb_store_seal(f->s, "batched", "", err, sizeof(err)) > 0);
	assert_true(syncfs_count() > fs);
}

/* A failed syncfs fails the cycle closed, as a failed fdatasync does: the
 * next record is refused, the seal reports it. */
static void test_batched_failed_syncfs_refuses_the_next_record(void **state)
{
	struct fixture *f = *state;
	struct fsb_backup_result res;
	char a[PATHBUF], err[256];

	open_store(f);
	assert_int_equal(fsb_store_set_durability(f->s, true), 0);
	src_path(f, "one", a);
	free(make_file(a, 100, 94));
	hook.fail_syncfs = EIO;
	assert_int_equal(backup_path(f, a, &res), 0);
	for (int i = 0; i < 100 && syncfs_count() == 0; i++)
		nanosleep(&(struct timespec){ .tv_nsec = 100000000L }, NULL);
	assert_true(syncfs_count() > 0);
	/* The flusher records its failure under the same lock a record reads. */
	for (int i = 0; i < 100 && backup_path(f, a, &res) == 0; i++)
		nanosleep(&(struct timespec){ .tv_nsec = 10000000L }, NULL);
	src_path(f, "two", a);
	free(make_file(a, 100, 95));
	assert_int_equal(backup_path(f, a, &res), -EIO);
	hook.fail_syncfs = 0;
	assert_true(fsb_store_seal(f->s, "after", "", err, sizeof(err)) > 0);
}

/* Back to strict: what batched mode wrote is made durable at once, and the
 * next record syncs its own line again. */
static void test_strict_again_after_batched_syncs_first(void **state)
{
	struct fixture *f = *state;
	struct fsb_backup_result res;
	char a[PATHBUF], b[PATHBUF];
	unsigned js, os, fs;

	open_store(f);
	assert_int_equal(fsb_store_set_durability(f->s, true), 0);
	src_path(f, "first", a);
	src_path(f, "second", b);
	free(make_file(a, 100, 96));
	free(make_file(b, 100, 97));
	assert_int_equal(backup_path(f, a, &res), 0);
	fs = syncfs_count();
	assert_int_equal(fsb_store_set_durability(f->s, false), 0);
	assert_true(syncfs_count() > fs);
	syncs_take(&js, &os);
	assert_int_equal(backup_path(f, b, &res), 0);
	syncs_take(&js, &os);
	assert_int_equal(js, 1);
	assert_true(os >= 1);	/* the object */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_object_content_and_name, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_same_content_one_object, setup, teardown),
		cmocka_unit_test_setup_teardown(test_journal_fields, setup, teardown),
		cmocka_unit_test_setup_teardown(test_absent_prior, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlink_and_dir_prior, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reuse_and_write_grant, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reuse_not_for_a_changed_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_too_large_fail, setup, teardown),
		cmocka_unit_test_setup_teardown(test_too_large_skip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reflink_ignores_the_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_skip_rule, setup, teardown),
		cmocka_unit_test_setup_teardown(test_seal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_recovery, setup, teardown),
		cmocka_unit_test_setup_teardown(test_recovery_of_an_empty_cycle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_crash_mid_object, setup, teardown),
		cmocka_unit_test_setup_teardown(test_enospc, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fd_offset_unchanged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_copy_across_filesystems, setup, teardown),
		cmocka_unit_test_setup_teardown(test_non_utf8_path, setup, teardown),
		cmocka_unit_test_setup_teardown(test_big_numbers_exact, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fd_of_another_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_layout_modes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_without_o_tmpfile, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tmpfile_cannot_be_linked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_without_copy_file_range, setup, teardown),
		cmocka_unit_test_setup_teardown(test_journal_write_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(test_syncs_per_change_kind, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_moved_record_copies_nothing_until_its_new_name_is_written, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_metadata_only_record_copies_nothing, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_delete_keeps_the_inode_by_link, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_later_line_waits_for_the_first, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_failed_sync_refuses_the_change_and_the_cycle,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_group_commit_covers_concurrent_lines, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_recovered_cycle_records_no_end_state, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_second_core_on_one_store_is_not_refused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_dead_cores_cycle_is_recovered_while_another_core_runs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_cycle_is_not_sealed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_lock_is_not_inherited_by_exec, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_file_growing_during_copy_range_is_cut_at_checked_size, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_file_growing_during_read_write_copy_is_cut_at_checked_size, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_corrupted_object_is_replaced_by_the_fresh_copy,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_corrupted_object_is_replaced_without_o_tmpfile,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_journal_that_cannot_be_cut_back_refuses_later_records, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unreadable_end_state_is_left_out_not_absent,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_new_store_directory_is_fsynced_into_its_parent,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_xattrs_recorded_and_read_back, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_no_xattrs_is_an_empty_set, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batched_records_sync_nothing_on_their_path,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_batched_failed_syncfs_refuses_the_next_record,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_strict_again_after_batched_syncs_first,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
