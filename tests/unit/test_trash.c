/*
 * test_trash.c — the FreeDesktop.org trash: the info file (its exact text,
 * the percent-encoded Path, the local DeletionDate), files and directories
 * moved, taken names, a missing entry, symlinks planted in the trash, a
 * failed rename, the data home from the environment, the trash of a mount
 * point's top directory, and trash-cli listing and restoring what we trashed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "unit.h"
#include "trash.h"

/*
 * The test binary's renameat2 takes the place of libc's for the trash code
 * linked into it, to fail a rename on demand. When it fails one, it first
 * saves what the info file held at that moment, which shows that the info
 * was written before the entry was moved.
 */
static struct {
	int fail_rename;	/* renameat2 fails with this errno */
	char info_path[PATH_MAX];	/* the info file to look at then */
	char info_seen[512];	/* what it held */
} hook;

int renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath,
	      unsigned int flags)
{
	if (hook.fail_rename != 0) {
		FILE *fp = fopen(hook.info_path, "re");

		if (fp != NULL) {
			size_t n = fread(hook.info_seen, 1, sizeof(hook.info_seen) - 1, fp);

			hook.info_seen[n] = '\0';
			fclose(fp);
		}
		errno = hook.fail_rename;
		return -1;
	}
	return (int)syscall(SYS_renameat2, olddirfd, oldpath, newdirfd, newpath, flags);
}

struct fixture {
	char dir[128];		/* the test's temp dir (real path): the data home */
	char work[160];		/* <dir>/w: where the files to trash are */
	char trash[160];	/* <dir>/Trash: the home trash */
	char mnt[160];		/* a tmpfs mounted by the test, or "" */
	int workfd;
	struct fsb_trash_place place;
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
	char made[128];

	if (f == NULL)
		return -1;
	if (tmp == NULL || tmp[0] == '\0' || strlen(tmp) > 80)
		tmp = "/tmp";
	snprintf(made, sizeof(made), "%s/fsb-trash-XXXXXX", tmp);
	/* The trash is told the real path of the directory; so is the test. */
	if (mkdtemp(made) == NULL || realpath(made, f->dir) == NULL ||
	    strlen(f->dir) > 100) {
		free(f);
		return -1;
	}
	snprintf(f->work, sizeof(f->work), "%s/w", f->dir);
	snprintf(f->trash, sizeof(f->trash), "%s/Trash", f->dir);
	if (mkdir(f->work, 0755) != 0)
		return -1;
	f->workfd = open(f->work, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (f->workfd < 0)
		return -1;
	snprintf(f->place.data_home, sizeof(f->place.data_home), "%s", f->dir);
	f->place.uid = getuid();
	memset(&hook, 0, sizeof(hook));
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	memset(&hook, 0, sizeof(hook));
	close(f->workfd);
	if (f->mnt[0] != '\0')
		umount2(f->mnt, MNT_DETACH);
	nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

static void put_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "we");

	assert_non_null(fp);
	assert_int_equal(fputs(text, fp) >= 0, 1);
	assert_int_equal(fclose(fp), 0);
}

/* The whole of a small file, or "" when it cannot be read. */
static void get_file(const char *path, char *buf, size_t len)
{
	FILE *fp = fopen(path, "re");
	size_t n = 0;

	if (fp != NULL) {
		n = fread(buf, 1, len - 1, fp);
		fclose(fp);
	}
	buf[n] = '\0';
}

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* Entries in a directory, "." and ".." aside; 0 when it does not exist. */
static int count_entries(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	int n = 0;

	if (d == NULL)
		return 0;
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			n++;
	closedir(d);
	return n;
}

static void assert_mode(const char *path, mode_t mode)
{
	struct stat st;

	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, mode);
	assert_int_equal(st.st_uid, getuid());
}

/*
 * The info file holds exactly the three lines, with `path` (encoded) and a
 * DeletionDate in local time within a minute of now.
 */
static void assert_info(const char *info, const char *path)
{
	char text[1024], head[1024], date[32];
	struct tm tm = { .tm_isdst = -1 };
	const char *rest;
	char *end;
	time_t when;

	get_file(info, text, sizeof(text));
	snprintf(head, sizeof(head), "[Trash Info]\nPath=%s\nDeletionDate=", path);
	assert_memory_equal(text, head, strlen(head));
	rest = text + strlen(head);
	assert_int_equal(strlen(rest), strlen("YYYY-MM-DDThh:mm:ss\n"));
	assert_int_equal(rest[strlen(rest) - 1], '\n');
	snprintf(date, sizeof(date), "%.*s", (int)strlen(rest) - 1, rest);
	end = strptime(date, "%Y-%m-%dT%H:%M:%S", &tm);
	assert_non_null(end);
	assert_int_equal(*end, '\0');
	when = mktime(&tm);
	assert_true(when > time(NULL) - 60 && when <= time(NULL));
	assert_mode(info, 0600);
}

static int trash_in(struct fixture *f, int dirfd, const char *dir_path, const char *name,
		    char *trashed, char *info, char *why)
{
	int rc = fsb_trash_move(&f->place, dirfd, dir_path, name, NULL, NULL, trashed, info,
				why, 256);

	if (rc == 0)
		assert_string_equal(why, "");
	else
		assert_string_not_equal(why, "");
	return rc;
}

static int trash(struct fixture *f, const char *name, char *trashed, char *info, char *why)
{
	return trash_in(f, f->workfd, f->work, name, trashed, info, why);
}

static void test_file_is_trashed_with_its_info(void **state)
{
	struct fixture *f = *state;
	char trashed[PATH_MAX], info[PATH_MAX], why[256], path[PATH_MAX], want[PATH_MAX];
	const char *name = "a b%c\xff.txt";

	snprintf(path, sizeof(path), "%s/%s", f->work, name);
	put_file(path, "content\n");
	assert_int_equal(trash(f, name, trashed, info, why), 0);

	snprintf(want, sizeof(want), "%s/files/%s", f->trash, name);
	assert_string_equal(trashed, want);
	snprintf(want, sizeof(want), "%s/info/%s.trashinfo", f->trash, name);
	assert_string_equal(info, want);
	assert_false(exists(path));
	get_file(trashed, want, sizeof(want));
	assert_string_equal(want, "content\n");
	/* mkdtemp names are letters and digits: the directory needs no encoding. */
	snprintf(want, sizeof(want), "%s/a%%20b%%25c%%FF.txt", f->work);
	assert_info(info, want);
	assert_mode(f->trash, 0700);
	snprintf(path, sizeof(path), "%s/files", f->trash);
	assert_mode(path, 0700);
	snprintf(path, sizeof(path), "%s/info", f->trash);
	assert_mode(path, 0700);
}

static void test_directory_is_trashed_with_its_contents(void **state)
{
	struct fixture *f = *state;
	char trashed[PATH_MAX], info[PATH_MAX], why[256], path[PATH_MAX], text[64];

	snprintf(path, sizeof(path), "%s/d", f->work);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/d/sub", f->work);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/d/sub/f", f->work);
	put_file(path, "deep\n");

	assert_int_equal(trash(f, "d", trashed, info, why), 0);
	snprintf(path, sizeof(path), "%s/d", f->work);
	assert_false(exists(path));
	snprintf(path, sizeof(path), "%s/sub/f", trashed);
	get_file(path, text, sizeof(text));
	assert_string_equal(text, "deep\n");
	snprintf(path, sizeof(path), "%s/d", f->work);
	assert_info(info, path);
}

static void test_taken_names_get_a_number(void **state)
{
	struct fixture *f = *state;
	char trashed[PATH_MAX], info[PATH_MAX], why[256], path[PATH_MAX], want[PATH_MAX];
	const char *suffix[] = { "", ".2", ".3" };

	snprintf(path, sizeof(path), "%s/x", f->work);
	for (int i = 0; i < 3; i++) {
		put_file(path, suffix[i]);
		assert_int_equal(trash(f, "x", trashed, info, why), 0);
		snprintf(want, sizeof(want), "%s/files/x%s", f->trash, suffix[i]);
		assert_string_equal(trashed, want);
		snprintf(want, sizeof(want), "%s/info/x%s.trashinfo", f->trash, suffix[i]);
		assert_string_equal(info, want);
		assert_info(info, path);
		get_file(trashed, want, sizeof(want));
		assert_string_equal(want, suffix[i]);
	}

	/* A name taken in files/ only: its info file is made, then removed again. */
	snprintf(path, sizeof(path), "%s/files/y", f->trash);
	put_file(path, "old");
	snprintf(path, sizeof(path), "%s/y", f->work);
	put_file(path, "new");
	assert_int_equal(trash(f, "y", trashed, info, why), 0);
	snprintf(want, sizeof(want), "%s/files/y.2", f->trash);
	assert_string_equal(trashed, want);
	snprintf(want, sizeof(want), "%s/info/y.trashinfo", f->trash);
	assert_false(exists(want));
	snprintf(path, sizeof(path), "%s/files/y", f->trash);
	get_file(path, want, sizeof(want));
	assert_string_equal(want, "old");

	/* A name taken in info/ only: that info file is left as it was. */
	snprintf(path, sizeof(path), "%s/info/z.trashinfo", f->trash);
	put_file(path, "stray");
	snprintf(path, sizeof(path), "%s/z", f->work);
	put_file(path, "z");
	assert_int_equal(trash(f, "z", trashed, info, why), 0);
	snprintf(want, sizeof(want), "%s/files/z.2", f->trash);
	assert_string_equal(trashed, want);
	snprintf(want, sizeof(want), "%s/files/z", f->trash);
	assert_false(exists(want));
	snprintf(path, sizeof(path), "%s/info/z.trashinfo", f->trash);
	get_file(path, want, sizeof(want));
	assert_string_equal(want, "stray");
}

static void test_missing_entry_is_enoent(void **state)
{
	struct fixture *f = *state;
	char trashed[PATH_MAX], info[PATH_MAX], why[256], path[PATH_MAX];

	assert_int_equal(trash(f, "absent", trashed, info, why), -ENOENT);
	assert_string_equal(trashed, "");
	assert_string_equal(info, "");
	snprintf(path, sizeof(path), "%s/info", f->trash);
	assert_int_equal(count_entries(path), 0);
}

struct before_seen {
	int calls;
	int answer;
	bool info_existed, entry_still_in_place;
	int workfd;
	char trashed[PATH_MAX], info[PATH_MAX];
};

static int note_before(const char *trashed, const char *info, void *arg)
{
	struct before_seen *b = arg;

	b->calls++;
	snprintf(b->trashed, sizeof(b->trashed), "%s", trashed);
	snprintf(b->info, sizeof(b->info), "%s", info);
	b->info_existed = access(info, F_OK) == 0;
	b->entry_still_in_place = faccessat(b->workfd, "doc.txt", F_OK, AT_SYMLINK_NOFOLLOW) == 0;
	return b->answer;
}

/* The host operation journals the two names before the move: the hook sees
 * them with the info file written and the entry not yet moved; a refusal
 * from it moves nothing and leaves no info file. */
static void test_before_hook_sees_the_names_and_can_stop_the_move(void **state)
{
	struct fixture *f = *state;
	struct before_seen b = { .answer = -EIO, .workfd = f->workfd };
	char trashed[PATH_MAX], info[PATH_MAX], why[256] = "", path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/doc.txt", f->work);
	put_file(path, "content\n");
	assert_int_equal(fsb_trash_move(&f->place, f->workfd, f->work, "doc.txt", note_before, &b,
					trashed, info, why, sizeof(why)), -EIO);
	assert_int_equal(b.calls, 1);
	assert_true(b.info_existed);
	assert_true(b.entry_still_in_place);
	assert_int_equal(access(b.info, F_OK), -1);
	assert_int_equal(faccessat(f->workfd, "doc.txt", F_OK, 0), 0);
	snprintf(path, sizeof(path), "%s/info", f->trash);
	assert_int_equal(count_entries(path), 0);

	b.answer = 0;
	b.calls = 0;
	assert_int_equal(fsb_trash_move(&f->place, f->workfd, f->work, "doc.txt", note_before, &b,
					trashed, info, why, sizeof(why)), 0);
	assert_int_equal(b.calls, 1);
	assert_string_equal(b.trashed, trashed);
	assert_string_equal(b.info, info);
	assert_int_equal(access(trashed, F_OK), 0);
}

static void test_bad_names_are_refused(void **state)
{
	struct fixture *f = *state;
	char trashed[PATH_MAX], info[PATH_MAX], why[256];

	assert_int_equal(trash(f, "", trashed, info, why), -EINVAL);
	assert_int_equal(trash(f, ".", trashed, info, why), -EINVAL);
	assert_int_equal(trash(f, "..", trashed, info, why), -EINVAL);
	assert_int_equal(trash(f, "a/b", trashed, info, why), -EINVAL);
	assert_int_equal(trash_in(f, f->workfd, "w", "x", trashed, info, why), -EINVAL);
	assert_false(exists(f->trash));
}

/* `x` in the work dir is refused and left alone; `elsewhere` stays empty. */
static void assert_refused_through_link(struct fixture *f, const char *elsewhere)
{
	char trashed[PATH_MAX], info[PATH_MAX], why[256], path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/x", f->work);
	put_file(path, "x");
	assert_true(trash(f, "x", trashed, info, why) < 0);
	assert_true(exists(path));
	assert_int_equal(count_entries(elsewhere), 0);
	snprintf(path, sizeof(path), "%s/info", f->trash);
	assert_int_equal(count_entries(path), 0);
}

static void test_symlink_at_trash_is_not_followed(void **state)
{
	struct fixture *f = *state;
	char elsewhere[PATH_MAX];

	snprintf(elsewhere, sizeof(elsewhere), "%s/elsewhere", f->dir);
	assert_int_equal(mkdir(elsewhere, 0700), 0);
	assert_int_equal(symlink(elsewhere, f->trash), 0);
	assert_refused_through_link(f, elsewhere);
}

static void test_symlink_at_files_is_not_followed(void **state)
{
	struct fixture *f = *state;
	char elsewhere[PATH_MAX], path[PATH_MAX];

	snprintf(elsewhere, sizeof(elsewhere), "%s/elsewhere", f->dir);
	assert_int_equal(mkdir(elsewhere, 0700), 0);
	assert_int_equal(mkdir(f->trash, 0700), 0);
	snprintf(path, sizeof(path), "%s/files", f->trash);
	assert_int_equal(symlink(elsewhere, path), 0);
	assert_refused_through_link(f, elsewhere);
}

static void test_symlink_at_info_is_not_followed(void **state)
{
	struct fixture *f = *state;
	char elsewhere[PATH_MAX], path[PATH_MAX];

	snprintf(elsewhere, sizeof(elsewhere), "%s/elsewhere", f->dir);
	assert_int_equal(mkdir(elsewhere, 0700), 0);
	assert_int_equal(mkdir(f->trash, 0700), 0);
	snprintf(path, sizeof(path), "%s/info", f->trash);
	assert_int_equal(symlink(elsewhere, path), 0);
	assert_refused_through_link(f, elsewhere);
	snprintf(path, sizeof(path), "%s/files", f->trash);
	assert_int_equal(count_entries(path), 0);
}

static void test_failed_rename_leaves_no_info(void **state)
{
	struct fixture *f = *state;
	char trashed[PATH_MAX], info[PATH_MAX], why[256], path[PATH_MAX], want[PATH_MAX];

	snprintf(path, sizeof(path), "%s/x", f->work);
	put_file(path, "x");
	hook.fail_rename = EIO;
	snprintf(hook.info_path, sizeof(hook.info_path), "%s/info/x.trashinfo", f->trash);
	assert_int_equal(trash(f, "x", trashed, info, why), -EIO);
	assert_non_null(strstr(why, "Input/output error"));
	assert_string_equal(trashed, "");
	assert_string_equal(info, "");

	/* The info file was whole when the rename was tried, and is gone now. */
	snprintf(want, sizeof(want), "[Trash Info]\nPath=%s\nDeletionDate=", path);
	assert_memory_equal(hook.info_seen, want, strlen(want));
	assert_int_equal(strlen(hook.info_seen), strlen(want) + 20);
	assert_false(exists(hook.info_path));
	assert_true(exists(path));
	snprintf(path, sizeof(path), "%s/files", f->trash);
	assert_int_equal(count_entries(path), 0);
}

/* Set or unset an environment variable; the value it had, or NULL. */
static char *swap_env(const char *name, const char *value)
{
	const char *old = getenv(name);
	char *saved = old != NULL ? strdup(old) : NULL;

	if (value != NULL)
		setenv(name, value, 1);
	else
		unsetenv(name);
	return saved;
}

static void test_place_from_environment(void **state)
{
	struct fsb_trash_place t;
	char *xdg, *home;

	(void)state;
	xdg = swap_env("XDG_DATA_HOME", "relative/share");
	home = swap_env("HOME", "/home/someone");

	/* A relative XDG_DATA_HOME is ignored. */
	assert_int_equal(fsb_trash_place_init(&t, NULL), 0);
	assert_string_equal(t.data_home, "/home/someone/.local/share");
	assert_int_equal(t.uid, getuid());
	assert_int_equal(fsb_trash_place_init(&t, "/other/"), 0);
	assert_string_equal(t.data_home, "/other/.local/share");

	setenv("XDG_DATA_HOME", "/data/home", 1);
	assert_int_equal(fsb_trash_place_init(&t, NULL), 0);
	assert_string_equal(t.data_home, "/data/home");
	assert_int_equal(fsb_trash_place_init(&t, "/other"), 0);
	assert_string_equal(t.data_home, "/data/home");

	unsetenv("XDG_DATA_HOME");
	unsetenv("HOME");
	assert_int_equal(fsb_trash_place_init(&t, NULL), -ENOENT);
	assert_int_equal(fsb_trash_place_init(&t, "relative"), -ENOENT);

	free(swap_env("XDG_DATA_HOME", xdg));
	free(swap_env("HOME", home));
	free(xdg);
	free(home);
}

/* Mount a small tmpfs at <dir>/`name` into f->mnt, or skip saying why. */
static void mount_tmpfs(struct fixture *f, const char *name)
{
	snprintf(f->mnt, sizeof(f->mnt), "%s/%s", f->dir, name);
	assert_int_equal(mkdir(f->mnt, 0755), 0);
	if (geteuid() != 0 || mount("tmpfs", f->mnt, "tmpfs", 0, "size=1m,mode=0755") != 0) {
		print_message("# skipping: cannot mount a small tmpfs here (%s)\n",
			      geteuid() != 0 ? "not root" : strerror(errno));
		f->mnt[0] = '\0';
		skip();
	}
}

/* On a tmpfs mounted at <dir>/mnt, make sub/x and trash it. */
static void trash_on_tmpfs(struct fixture *f, char *trashed, char *info)
{
	char sub[PATH_MAX], path[PATH_MAX], why[256];
	int fd;

	snprintf(sub, sizeof(sub), "%s/sub", f->mnt);
	assert_int_equal(mkdir(sub, 0755), 0);
	snprintf(path, sizeof(path), "%s/x", sub);
	put_file(path, "on tmpfs");
	fd = open(sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(trash_in(f, fd, sub, "x", trashed, info, why), 0);
	close(fd);
	assert_false(exists(path));
	get_file(trashed, path, sizeof(path));
	assert_string_equal(path, "on tmpfs");
	/* Relative to the top directory. */
	assert_info(info, "sub/x");
}

static void test_topdir_trash_is_made_per_user(void **state)
{
	struct fixture *f = *state;
	char trashed[PATH_MAX], info[PATH_MAX], path[PATH_MAX];

	mount_tmpfs(f, "mnt");
	trash_on_tmpfs(f, trashed, info);
	snprintf(path, sizeof(path), "%s/.Trash-%u/files/x", f->mnt, (unsigned)getuid());
	assert_string_equal(trashed, path);
	snprintf(path, sizeof(path), "%s/.Trash-%u", f->mnt, (unsigned)getuid());
	assert_mode(path, 0700);
	assert_false(exists(f->trash));
}

/*
 * A bind mount of the data home's own filesystem (same device, another
 * mount, as containers bind a workspace): a rename into the home trash
 * would fail with EXDEV, so the bind mount's top directory has the trash.
 */
static void test_bind_mount_of_the_home_filesystem_uses_its_own_trash(void **state)
{
	struct fixture *f = *state;
	char src[PATH_MAX], path[PATH_MAX], trashed[PATH_MAX], info[PATH_MAX], why[256];
	int fd;

	snprintf(src, sizeof(src), "%s/src", f->dir);
	assert_int_equal(mkdir(src, 0755), 0);
	snprintf(f->mnt, sizeof(f->mnt), "%s/bound", f->dir);
	assert_int_equal(mkdir(f->mnt, 0755), 0);
	if (geteuid() != 0 || mount(src, f->mnt, NULL, MS_BIND, NULL) != 0) {
		print_message("# skipping: cannot bind-mount here (%s)\n",
			      geteuid() != 0 ? "not root" : strerror(errno));
		f->mnt[0] = '\0';
		skip();
	}
	snprintf(path, sizeof(path), "%s/x", f->mnt);
	put_file(path, "bound");
	fd = open(f->mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(trash_in(f, fd, f->mnt, "x", trashed, info, why), 0);
	close(fd);
	snprintf(path, sizeof(path), "%s/.Trash-%u/files/x", f->mnt, (unsigned)getuid());
	assert_string_equal(trashed, path);
	assert_false(exists(f->trash));
}

static void test_sticky_admin_trash_is_used(void **state)
{
	struct fixture *f = *state;
	char trashed[PATH_MAX], info[PATH_MAX], path[PATH_MAX];

	mount_tmpfs(f, "mnt");
	snprintf(path, sizeof(path), "%s/.Trash", f->mnt);
	assert_int_equal(mkdir(path, 0777), 0);
	assert_int_equal(chmod(path, 01777), 0);
	trash_on_tmpfs(f, trashed, info);
	snprintf(path, sizeof(path), "%s/.Trash/%u/files/x", f->mnt, (unsigned)getuid());
	assert_string_equal(trashed, path);
	snprintf(path, sizeof(path), "%s/.Trash/%u", f->mnt, (unsigned)getuid());
	assert_mode(path, 0700);
	snprintf(path, sizeof(path), "%s/.Trash-%u", f->mnt, (unsigned)getuid());
	assert_false(exists(path));
}

static void test_non_sticky_admin_trash_is_passed_over(void **state)
{
	struct fixture *f = *state;
	char trashed[PATH_MAX], info[PATH_MAX], path[PATH_MAX];

	mount_tmpfs(f, "mnt");
	snprintf(path, sizeof(path), "%s/.Trash", f->mnt);
	assert_int_equal(mkdir(path, 0777), 0);
	assert_int_equal(chmod(path, 0777), 0);
	trash_on_tmpfs(f, trashed, info);
	snprintf(path, sizeof(path), "%s/.Trash-%u/files/x", f->mnt, (unsigned)getuid());
	assert_string_equal(trashed, path);
	snprintf(path, sizeof(path), "%s/.Trash", f->mnt);
	assert_int_equal(count_entries(path), 0);
}

static void test_admin_trash_symlink_is_passed_over(void **state)
{
	struct fixture *f = *state;
	char trashed[PATH_MAX], info[PATH_MAX], path[PATH_MAX], sticky[PATH_MAX];

	mount_tmpfs(f, "mnt");
	snprintf(sticky, sizeof(sticky), "%s/sticky", f->mnt);
	assert_int_equal(mkdir(sticky, 0777), 0);
	assert_int_equal(chmod(sticky, 01777), 0);
	snprintf(path, sizeof(path), "%s/.Trash", f->mnt);
	assert_int_equal(symlink("sticky", path), 0);
	trash_on_tmpfs(f, trashed, info);
	snprintf(path, sizeof(path), "%s/.Trash-%u/files/x", f->mnt, (unsigned)getuid());
	assert_string_equal(trashed, path);
	assert_int_equal(count_entries(sticky), 0);
}

static void test_user_trash_of_another_uid_is_refused(void **state)
{
	struct fixture *f = *state;
	char trashed[PATH_MAX], info[PATH_MAX], why[256], path[PATH_MAX], sub[PATH_MAX];
	int fd;

	mount_tmpfs(f, "mnt");
	snprintf(path, sizeof(path), "%s/.Trash-%u", f->mnt, (unsigned)getuid());
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(chown(path, getuid() + 1, (gid_t)-1), 0);
	snprintf(sub, sizeof(sub), "%s/sub", f->mnt);
	assert_int_equal(mkdir(sub, 0755), 0);
	snprintf(path, sizeof(path), "%s/x", sub);
	put_file(path, "x");
	fd = open(sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(trash_in(f, fd, sub, "x", trashed, info, why), -EACCES);
	close(fd);
	assert_true(exists(path));
	snprintf(path, sizeof(path), "%s/.Trash-%u", f->mnt, (unsigned)getuid());
	assert_int_equal(count_entries(path), 0);
}

static void test_trash_on_another_filesystem_is_exdev(void **state)
{
	struct fixture *f = *state;
	char trashed[PATH_MAX], info[PATH_MAX], why[256], path[PATH_MAX];

	/* The home trash itself a mount point: the entry cannot be renamed there. */
	mount_tmpfs(f, "Trash");
	snprintf(path, sizeof(path), "%s/x", f->work);
	put_file(path, "x");
	assert_int_equal(trash(f, "x", trashed, info, why), -EXDEV);
	assert_non_null(strstr(why, "another filesystem"));
	assert_true(exists(path));
	snprintf(path, sizeof(path), "%s/info", f->trash);
	assert_int_equal(count_entries(path), 0);
}

static void test_mount_point_is_refused(void **state)
{
	struct fixture *f = *state;
	char trashed[PATH_MAX], info[PATH_MAX], why[256];
	int fd;

	mount_tmpfs(f, "mnt");
	fd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(trash_in(f, fd, f->dir, "mnt", trashed, info, why), -EBUSY);
	close(fd);
	assert_non_null(strstr(why, "mount point"));
	assert_false(exists(f->trash));
	assert_int_equal(count_entries(f->mnt), 0);
}

/* The absolute path of `tool` on $PATH, or false. */
static bool find_tool(const char *tool, char *out, size_t len)
{
	const char *path = getenv("PATH");
	char dirs[4096], *dir, *save;

	snprintf(dirs, sizeof(dirs), "%s", path != NULL ? path : "/usr/bin:/bin");
	for (dir = strtok_r(dirs, ":", &save); dir != NULL; dir = strtok_r(NULL, ":", &save)) {
		snprintf(out, len, "%s/%s", dir, tool);
		if (access(out, X_OK) == 0)
			return true;
	}
	return false;
}

/*
 * Run `argv` with XDG_DATA_HOME set to the test's data home and `input` on
 * its stdin; its stdout into `out`. Its exit status.
 */
static int run_tool(struct fixture *f, char *const argv[], const char *input, char *out,
		    size_t len)
{
	int in[2], res[2], status;
	size_t got = 0;
	ssize_t n;
	pid_t pid;

	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	assert_int_equal(pipe2(res, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		setenv("XDG_DATA_HOME", f->dir, 1);
		if (dup2(in[0], 0) < 0 || dup2(res[1], 1) < 0)
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	close(in[0]);
	close(res[1]);
	assert_int_equal(write(in[1], input, strlen(input)), (ssize_t)strlen(input));
	close(in[1]);
	while (got + 1 < len && (n = read(res[0], out + got, len - 1 - got)) > 0)
		got += (size_t)n;
	out[got] = '\0';
	close(res[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* The tool's path, or skip the test saying it is missing. */
static void need_tool(const char *tool, char *path, size_t len)
{
	if (!find_tool(tool, path, len)) {
		print_message("# skipping: %s is not installed (Debian package trash-cli)\n", tool);
		skip();
	}
}

static void test_trash_list_lists_what_was_trashed(void **state)
{
	struct fixture *f = *state;
	char tool[PATH_MAX], trashed[PATH_MAX], info[PATH_MAX], why[256], path[PATH_MAX];
	char out[16384], want[PATH_MAX + 2];

	need_tool("trash-list", tool, sizeof(tool));
	snprintf(path, sizeof(path), "%s/a b%%c.txt", f->work);
	put_file(path, "listed");
	assert_int_equal(trash(f, "a b%c.txt", trashed, info, why), 0);
	assert_int_equal(run_tool(f, (char *const[]){ tool, NULL }, "", out, sizeof(out)), 0);
	/* "YYYY-MM-DD hh:mm:ss <original path>" on a line of its own. */
	snprintf(want, sizeof(want), " %s\n", path);
	assert_non_null(strstr(out, want));
}

static void test_trash_list_lists_a_topdir_trash(void **state)
{
	struct fixture *f = *state;
	char tool[PATH_MAX], trashed[PATH_MAX], info[PATH_MAX], out[16384], want[PATH_MAX + 2];

	need_tool("trash-list", tool, sizeof(tool));
	mount_tmpfs(f, "mnt");
	trash_on_tmpfs(f, trashed, info);
	assert_int_equal(run_tool(f, (char *const[]){ tool, NULL }, "", out, sizeof(out)), 0);
	snprintf(want, sizeof(want), " %s/sub/x\n", f->mnt);
	assert_non_null(strstr(out, want));
}

static void test_trash_restore_puts_it_back(void **state)
{
	struct fixture *f = *state;
	char tool[PATH_MAX], trashed[PATH_MAX], info[PATH_MAX], why[256], path[PATH_MAX];
	char out[16384];

	need_tool("trash-restore", tool, sizeof(tool));
	snprintf(path, sizeof(path), "%s/d", f->work);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/d/r.txt", f->work);
	put_file(path, "restored");
	assert_int_equal(trash(f, "d", trashed, info, why), 0);
	snprintf(path, sizeof(path), "%s/d", f->work);
	assert_false(exists(path));

	/* It lists what was trashed under the path given and reads the choice. */
	assert_int_equal(run_tool(f, (char *const[]){ tool, path, NULL }, "0\n", out,
				  sizeof(out)), 0);
	assert_non_null(strstr(out, "   0 "));
	snprintf(path, sizeof(path), "%s/d/r.txt", f->work);
	get_file(path, out, sizeof(out));
	assert_string_equal(out, "restored");
	assert_false(exists(trashed));
	assert_false(exists(info));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_file_is_trashed_with_its_info, setup, teardown),
		cmocka_unit_test_setup_teardown(test_directory_is_trashed_with_its_contents, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_taken_names_get_a_number, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_entry_is_enoent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_names_are_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_before_hook_sees_the_names_and_can_stop_the_move,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlink_at_trash_is_not_followed, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_symlink_at_files_is_not_followed, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_symlink_at_info_is_not_followed, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_failed_rename_leaves_no_info, setup, teardown),
		cmocka_unit_test(test_place_from_environment),
		cmocka_unit_test_setup_teardown(test_topdir_trash_is_made_per_user, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sticky_admin_trash_is_used, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bind_mount_of_the_home_filesystem_uses_its_own_trash,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_non_sticky_admin_trash_is_passed_over, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_admin_trash_symlink_is_passed_over, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_user_trash_of_another_uid_is_refused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_trash_on_another_filesystem_is_exdev, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_mount_point_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_trash_list_lists_what_was_trashed, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_trash_list_lists_a_topdir_trash, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_trash_restore_puts_it_back, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
