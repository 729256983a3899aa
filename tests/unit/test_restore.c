/*
 * test_restore.c — the restore engine (core/store/restore.c) over a real
 * store in a temp dir: each kind of record the core journals (a write with
 * its copy, a create, a delete kept by link, a rename, a metadata-only
 * change, a symlink, a directory, xattrs) is recorded before the change,
 * the change is made, the cycle sealed, and a restore must give back the
 * path's content, type, mode, times, target and its parent's mtime; a
 * dry run says what it would do and touches nothing; PATH arguments and
 * tool calls choose what is restored, and an open cycle needs --force.
 * Hard-linked files come back as one inode with the names that lived on.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "unit.h"
#include "backup.h"
#include "backup_read.h"
#include "restore.h"
#include "restore_undo.h"

#define SESSION "s1"

static const struct timespec OLD_MTIME = { 1600000000, 123456789 };
static const struct timespec OLD_ATIME = { 1500000000, 987654321 };

struct fx {
	char dir[64];			/* everything, on one file system */
	char state[PATH_MAX];		/* <dir>/state */
	char work[PATH_MAX];		/* <dir>/w: what the "command" changes */
	struct fsb_store *s;
	unsigned cycle;
	struct timespec work_mtime;	/* the work dir's before the cycle */
	const char *workspace;		/* where a restore looks for other names */
};

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p) < 0 ? 0 : 0;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	char err[256];

	if (f == NULL)
		return -1;
	strcpy(f->dir, "/tmp/fsb-restore-XXXXXX");
	if (mkdtemp(f->dir) == NULL)
		return -1;
	/* The journal holds real paths: the temp dir through no symlink. */
	if (realpath(f->dir, f->state) == NULL)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "%s", f->state);
	snprintf(f->state, sizeof(f->state), "%s/state", f->dir);
	snprintf(f->work, sizeof(f->work), "%s/w", f->dir);
	if (mkdir(f->state, 0700) < 0 || mkdir(f->work, 0755) < 0)
		return -1;
	if (fsb_store_open(f->state, SESSION, &f->s, err, sizeof(err)) < 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	if (f->s != NULL)
		fsb_store_close(f->s);
	nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

static void in_work(const struct fx *f, const char *name, char out[PATH_MAX])
{
	snprintf(out, PATH_MAX, "%s/%s", f->work, name);
}

static void put_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static void set_times(const char *path)
{
	const struct timespec ts[2] = { OLD_ATIME, OLD_MTIME };

	assert_int_equal(utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW), 0);
}

/* The work dir's mtime as it is when the cycle begins. */
static void freeze_work(struct fx *f)
{
	struct stat st;

	set_times(f->work);
	assert_int_equal(stat(f->work, &st), 0);
	f->work_mtime = st.st_mtim;
}

/* Journal the prior state of `path` for `op`, as the core does before the
 * change. */
static void record(struct fx *f, const char *op, const char *path, bool metadata_only,
		   bool keep_inode, const char *moved_to)
{
	struct fsb_backup_result res;
	struct fsb_backup_req r;
	struct stat st;
	bool exists = lstat(path, &st) == 0;
	int fd = -1;

	if (exists && S_ISREG(st.st_mode))
		fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	memset(&r, 0, sizeof(r));
	r.tool_call = "call-1";
	r.op = op;
	r.path = path;
	r.resolved = path;
	r.prior = exists ? &st : NULL;
	r.fd = fd;
	r.metadata_only = metadata_only;
	r.keep_inode = keep_inode;
	r.moved_to = moved_to;
	assert_int_equal(fsb_store_record(f->s, &r, &res), 0);
	if (fd >= 0)
		close(fd);
}

static void seal(struct fx *f)
{
	char err[256];
	int n = fsb_store_seal(f->s, "test", "", err, sizeof(err));

	if (n <= 0)
		fail_msg("seal: %d %s", n, err);
	f->cycle = (unsigned)n;
}

/* Restore the sealed cycle whole; every path must come back. */
static void restore(struct fx *f, bool dry_run, struct fsb_restore *r, struct fsb_cycle *cy)
{
	char err[256];
	struct fsb_restore_opts o = {
		.store = fsb_store_dir(f->s), .state = f->state, .session = SESSION,
		.dry_run = dry_run, .workspace = f->workspace,
	};

	assert_int_equal(fsb_cycle_load(o.store, f->cycle, cy, NULL, err, sizeof(err)), 0);
	assert_int_equal(fsb_restore_plan(&o, cy, r), 0);
	assert_int_equal(fsb_restore_perform(&o, cy, r), 0);
	for (size_t i = 0; i < r->n + r->extra; i++)
		if (r->items[i].res != FSB_RES_OK)
			fail_msg("%s: %s %s", r->items[i].path, r->items[i].verb,
				 r->items[i].detail);
}

static void restore_all(struct fx *f)
{
	struct fsb_restore r;
	struct fsb_cycle cy;

	restore(f, false, &r, &cy);
	assert_true(r.undo_cycle > 0);
	fsb_restore_free(&r);
	fsb_cycle_free(&cy);
}

static void assert_content(const char *path, const char *text)
{
	char buf[256];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	assert_true(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	assert_true(n >= 0);
	buf[n] = '\0';
	assert_string_equal(buf, text);
}

static void assert_meta(const char *path, mode_t type, mode_t mode)
{
	struct stat st;

	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(st.st_mode & S_IFMT, type);
	if (type != S_IFLNK)
		assert_int_equal(st.st_mode & 07777, mode);
	assert_int_equal(st.st_mtim.tv_sec, OLD_MTIME.tv_sec);
	assert_int_equal(st.st_mtim.tv_nsec, OLD_MTIME.tv_nsec);
}

static void assert_work_mtime(const struct fx *f)
{
	struct stat st;

	assert_int_equal(stat(f->work, &st), 0);
	assert_int_equal(st.st_mtim.tv_sec, f->work_mtime.tv_sec);
	assert_int_equal(st.st_mtim.tv_nsec, f->work_mtime.tv_nsec);
}

static void a_write_is_restored_from_its_copy(void **state)
{
	struct fx *f = *state;
	char a[PATH_MAX];

	in_work(f, "a.txt", a);
	put_file(a, "old bytes", 0640);
	set_times(a);
	freeze_work(f);
	record(f, "write", a, false, false, NULL);
	put_file(a, "new and longer bytes", 0600);
	seal(f);
	restore_all(f);
	assert_content(a, "old bytes");
	assert_meta(a, S_IFREG, 0640);
}

static void a_create_is_removed(void **state)
{
	struct fx *f = *state;
	char a[PATH_MAX];

	in_work(f, "made.txt", a);
	freeze_work(f);
	record(f, "create", a, false, false, NULL);
	put_file(a, "made by the cycle", 0644);
	seal(f);
	restore_all(f);
	assert_int_equal(access(a, F_OK), -1);
	assert_int_equal(errno, ENOENT);
	assert_work_mtime(f);
}

static void a_delete_kept_by_link_comes_back(void **state)
{
	struct fx *f = *state;
	char a[PATH_MAX];
	struct stat st;

	in_work(f, "gone.txt", a);
	put_file(a, "keep me", 0604);
	set_times(a);
	freeze_work(f);
	record(f, "delete", a, false, true, NULL);
	assert_int_equal(unlink(a), 0);
	seal(f);
	restore_all(f);
	assert_content(a, "keep me");
	assert_meta(a, S_IFREG, 0604);
	assert_int_equal(lstat(a, &st), 0);
	assert_int_equal(st.st_nlink, 1);
	assert_work_mtime(f);
}

static void a_rename_is_moved_back(void **state)
{
	struct fx *f = *state;
	char a[PATH_MAX], b[PATH_MAX];

	in_work(f, "from.txt", a);
	in_work(f, "to.txt", b);
	put_file(a, "moving", 0640);
	set_times(a);
	freeze_work(f);
	record(f, "rename-from", a, false, false, b);
	record(f, "rename-to", b, false, false, NULL);
	assert_int_equal(rename(a, b), 0);
	seal(f);
	restore_all(f);
	assert_content(a, "moving");
	assert_meta(a, S_IFREG, 0640);
	assert_int_equal(access(b, F_OK), -1);
	assert_work_mtime(f);
}

static void a_metadata_change_is_put_back_in_place(void **state)
{
	struct fx *f = *state;
	const struct timespec now[2] = { { 0, UTIME_NOW }, { 0, UTIME_NOW } };
	char a[PATH_MAX];
	struct stat before, after;

	in_work(f, "x.sh", a);
	put_file(a, "#!/bin/sh\n", 0644);
	set_times(a);
	assert_int_equal(lstat(a, &before), 0);
	record(f, "chmod", a, true, false, NULL);
	assert_int_equal(chmod(a, 0700), 0);
	assert_int_equal(utimensat(AT_FDCWD, a, now, 0), 0);
	seal(f);
	restore_all(f);
	assert_content(a, "#!/bin/sh\n");
	assert_meta(a, S_IFREG, 0644);
	/* Only metadata changed: the very inode stays, nothing is copied. */
	assert_int_equal(lstat(a, &after), 0);
	assert_int_equal(after.st_ino, before.st_ino);
}

static void a_deleted_symlink_comes_back_with_its_target(void **state)
{
	struct fx *f = *state;
	char a[PATH_MAX], target[PATH_MAX];
	ssize_t n;

	in_work(f, "link", a);
	assert_int_equal(symlink("../somewhere/else", a), 0);
	set_times(a);
	freeze_work(f);
	record(f, "delete", a, false, true, NULL);
	assert_int_equal(unlink(a), 0);
	seal(f);
	restore_all(f);
	n = readlink(a, target, sizeof(target) - 1);
	assert_true(n > 0);
	target[n] = '\0';
	assert_string_equal(target, "../somewhere/else");
	assert_meta(a, S_IFLNK, 0);
	assert_work_mtime(f);
}

static void a_removed_directory_comes_back(void **state)
{
	struct fx *f = *state;
	char d[PATH_MAX];

	in_work(f, "sub", d);
	assert_int_equal(mkdir(d, 0750), 0);
	assert_int_equal(chmod(d, 0750), 0);
	set_times(d);
	freeze_work(f);
	record(f, "delete", d, false, true, NULL);
	assert_int_equal(rmdir(d), 0);
	seal(f);
	restore_all(f);
	assert_meta(d, S_IFDIR, 0750);
	assert_work_mtime(f);
}

static void xattrs_come_back(void **state)
{
	struct fx *f = *state;
	char a[PATH_MAX], v[16];
	ssize_t n;

	in_work(f, "attrs", a);
	put_file(a, "x", 0644);
	if (setxattr(a, "user.kept", "old", 3, 0) < 0)
		skip();	/* this file system keeps no user xattrs */
	record(f, "setxattr", a, true, false, NULL);
	assert_int_equal(setxattr(a, "user.kept", "new!", 4, 0), 0);
	assert_int_equal(setxattr(a, "user.added", "1", 1, 0), 0);
	seal(f);
	restore_all(f);
	n = getxattr(a, "user.kept", v, sizeof(v));
	assert_int_equal(n, 3);
	assert_memory_equal(v, "old", 3);
	assert_int_equal(getxattr(a, "user.added", v, sizeof(v)), -1);
}

/* A dry run plans and says what it would do; the tree and the store of
 * restores stay as they are. */
static void a_dry_run_touches_nothing(void **state)
{
	struct fx *f = *state;
	char a[PATH_MAX], b[PATH_MAX], undo[PATH_MAX];
	struct fsb_restore r;
	struct fsb_cycle cy;
	bool said_write = false, said_remove = false;

	in_work(f, "a.txt", a);
	in_work(f, "new.txt", b);
	put_file(a, "old", 0644);
	record(f, "write", a, false, false, NULL);
	put_file(a, "new", 0600);
	record(f, "create", b, false, false, NULL);
	put_file(b, "made", 0644);
	seal(f);
	restore(f, true, &r, &cy);
	for (size_t i = 0; i < r.n; i++) {
		said_write |= strcmp(r.items[i].path, a) == 0 &&
			      strcmp(r.items[i].verb, "would restore") == 0;
		said_remove |= strcmp(r.items[i].path, b) == 0 &&
			       strcmp(r.items[i].verb, "would remove") == 0;
	}
	assert_true(said_write);
	assert_true(said_remove);
	assert_int_equal(r.undo_cycle, 0);
	fsb_restore_free(&r);
	fsb_cycle_free(&cy);
	assert_content(a, "new");
	assert_content(b, "made");
	assert_int_equal(fsb_undo_store_dir(f->state, SESSION, undo, sizeof(undo)), 0);
	assert_int_equal(access(undo, F_OK), -1);
}

/* A path changed after the cycle ended is reported and left alone. */
static void a_path_changed_since_is_skipped(void **state)
{
	struct fx *f = *state;
	char a[PATH_MAX], err[256];
	struct fsb_restore_opts o = { .state = f->state, .session = SESSION };
	struct fsb_restore r;
	struct fsb_cycle cy;

	in_work(f, "a.txt", a);
	put_file(a, "old", 0644);
	record(f, "write", a, false, false, NULL);
	put_file(a, "cycle", 0644);
	seal(f);
	put_file(a, "someone else, later", 0644);
	o.store = fsb_store_dir(f->s);
	assert_int_equal(fsb_cycle_load(o.store, f->cycle, &cy, NULL, err, sizeof(err)), 0);
	assert_int_equal(fsb_restore_plan(&o, &cy, &r), 0);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.items[0].res, FSB_RES_SKIPPED);
	assert_int_equal(fsb_restore_perform(&o, &cy, &r), 0);
	fsb_restore_free(&r);
	fsb_cycle_free(&cy);
	assert_content(a, "someone else, later");
}

/* PATH arguments choose what is restored; one the cycle did not touch is
 * said, and a tool call that touched nothing, or a cycle still open
 * without --force, is refused before anything is planned. */
static void paths_and_tool_calls_choose_what_is_restored(void **state)
{
	struct fx *f = *state;
	char a[PATH_MAX], b[PATH_MAX], other[PATH_MAX], err[256];
	char *args[2];
	struct fsb_restore_opts o = { .state = f->state, .session = SESSION };
	struct fsb_restore r;
	struct fsb_cycle cy;

	in_work(f, "a.txt", a);
	in_work(f, "b.txt", b);
	in_work(f, "other.txt", other);
	put_file(a, "a old", 0644);
	put_file(b, "b old", 0644);
	record(f, "write", a, false, false, NULL);
	record(f, "write", b, false, false, NULL);
	put_file(a, "a new", 0644);
	put_file(b, "b new", 0644);

	/* Open: only with --force. */
	o.store = fsb_store_dir(f->s);
	assert_int_equal(fsb_cycle_load(o.store, 1, &cy, NULL, err, sizeof(err)), 0);
	assert_int_equal(cy.state, FSB_CYCLE_OPEN);
	assert_int_equal(fsb_restore_plan(&o, &cy, &r), -EBUSY);
	fsb_restore_free(&r);
	fsb_cycle_free(&cy);

	seal(f);
	assert_int_equal(fsb_cycle_load(o.store, f->cycle, &cy, NULL, err, sizeof(err)), 0);
	o.tool_call = "no-such-call";
	assert_int_equal(fsb_restore_plan(&o, &cy, &r), -ENOENT);
	fsb_restore_free(&r);
	o.tool_call = NULL;

	args[0] = b;
	args[1] = other;
	o.paths = args;
	o.npaths = 2;
	assert_int_equal(fsb_restore_plan(&o, &cy, &r), 0);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.extra, 1);
	assert_string_equal(r.items[0].path, b);
	assert_string_equal(r.items[1].path, other);
	assert_int_equal(r.items[1].res, FSB_RES_SKIPPED);
	assert_int_equal(fsb_restore_perform(&o, &cy, &r), 0);
	assert_int_equal(r.items[0].res, FSB_RES_OK);
	fsb_restore_free(&r);
	fsb_cycle_free(&cy);
	assert_content(b, "b old");
	assert_content(a, "a new");
}

static void assert_one_inode(const char *a, const char *b, nlink_t nlink)
{
	struct stat x, y;

	assert_int_equal(lstat(a, &x), 0);
	assert_int_equal(lstat(b, &y), 0);
	assert_int_equal(x.st_ino, y.st_ino);
	assert_int_equal(x.st_nlink, nlink);
}

/* a.txt and b.txt were one file, c.txt and d.txt another: the cycle
 * deletes a.txt and renames a new file over c.txt (sed -i). The restore
 * makes each a link of the name that lived on, link counts as before. */
static void names_deleted_or_replaced_rejoin_the_names_that_lived_on(void **state)
{
	struct fx *f = *state;
	char a[PATH_MAX], b[PATH_MAX], c[PATH_MAX], d[PATH_MAX], t[PATH_MAX];

	in_work(f, "a.txt", a);
	in_work(f, "b.txt", b);
	in_work(f, "c.txt", c);
	in_work(f, "d.txt", d);
	in_work(f, "sedXYZ", t);
	put_file(a, "shared", 0644);
	put_file(c, "foo", 0640);
	set_times(a);
	set_times(c);
	assert_int_equal(link(a, b), 0);
	assert_int_equal(link(c, d), 0);
	freeze_work(f);
	f->workspace = f->work;
	record(f, "delete", a, false, true, NULL);
	assert_int_equal(unlink(a), 0);
	record(f, "create", t, false, false, NULL);
	put_file(t, "bar", 0640);
	record(f, "rename-from", t, false, false, c);
	record(f, "rename-to", c, false, true, NULL);
	assert_int_equal(rename(t, c), 0);
	seal(f);
	restore_all(f);
	assert_content(a, "shared");
	assert_one_inode(a, b, 2);
	assert_content(c, "foo");
	assert_one_inode(c, d, 2);
	assert_meta(c, S_IFREG, 0640);
	assert_work_mtime(f);
}

/* b.txt, the name that lived on, was written after the cycle: joining a.txt
 * to it would give a.txt other bytes than its backup's. It stays a copy. */
static void a_name_whose_other_name_changed_since_stays_a_copy(void **state)
{
	struct fx *f = *state;
	char a[PATH_MAX], b[PATH_MAX];
	struct stat x, y;

	in_work(f, "a.txt", a);
	in_work(f, "b.txt", b);
	put_file(a, "shared", 0644);
	set_times(a);
	assert_int_equal(link(a, b), 0);
	freeze_work(f);
	f->workspace = f->work;
	record(f, "delete", a, false, true, NULL);
	assert_int_equal(unlink(a), 0);
	seal(f);
	put_file(b, "edited", 0644);
	restore_all(f);
	assert_content(a, "shared");
	assert_content(b, "edited");
	assert_int_equal(lstat(a, &x), 0);
	assert_int_equal(lstat(b, &y), 0);
	assert_int_not_equal(x.st_ino, y.st_ino);
}

/* A file with two names written in place (a hard-linked tree the pack lets
 * be rewritten): the old bytes go back into the one inode, so the name the
 * cycle never recorded has them again too. */
static void a_file_with_other_names_written_in_place_is_restored_in_place(void **state)
{
	struct fx *f = *state;
	char a[PATH_MAX], b[PATH_MAX];

	in_work(f, "a.txt", a);
	in_work(f, "b.txt", b);
	put_file(a, "old bytes", 0644);
	set_times(a);
	assert_int_equal(link(a, b), 0);
	freeze_work(f);
	record(f, "write", a, false, false, NULL);
	put_file(a, "new bytes, longer", 0644);
	seal(f);
	restore_all(f);
	assert_content(a, "old bytes");
	assert_content(b, "old bytes");
	assert_one_inode(a, b, 2);
	assert_meta(b, S_IFREG, 0644);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(a_write_is_restored_from_its_copy, setup, teardown),
		cmocka_unit_test_setup_teardown(a_create_is_removed, setup, teardown),
		cmocka_unit_test_setup_teardown(a_delete_kept_by_link_comes_back, setup, teardown),
		cmocka_unit_test_setup_teardown(a_rename_is_moved_back, setup, teardown),
		cmocka_unit_test_setup_teardown(a_metadata_change_is_put_back_in_place, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_deleted_symlink_comes_back_with_its_target, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_removed_directory_comes_back, setup, teardown),
		cmocka_unit_test_setup_teardown(xattrs_come_back, setup, teardown),
		cmocka_unit_test_setup_teardown(a_dry_run_touches_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(a_path_changed_since_is_skipped, setup, teardown),
		cmocka_unit_test_setup_teardown(paths_and_tool_calls_choose_what_is_restored, setup,
						teardown),
		cmocka_unit_test_setup_teardown(names_deleted_or_replaced_rejoin_the_names_that_lived_on,
						setup, teardown),
		cmocka_unit_test_setup_teardown(a_name_whose_other_name_changed_since_stays_a_copy,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			a_file_with_other_names_written_in_place_is_restored_in_place, setup,
			teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
