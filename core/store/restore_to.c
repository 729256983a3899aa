/*
 * restore_to.c — `fsbroker backup restore --to DIR` (docs/restore.md,
 * "Restoring into another directory"): each chosen path's state at the start
 * of the cycle written under a new or empty directory, laid out as it was
 * relative to the workspace, with content, mode, times and symlink targets
 * as a restore in place gives them. Nothing in place is touched and no copy
 * for an undo is kept: what is written is new.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "at.h"
#include "op.h"
#include "restore.h"

static void say(struct fsb_restore_item *it, enum fsb_restore_res res, const char *verb,
		bool paren, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void say(struct fsb_restore_item *it, enum fsb_restore_res res, const char *verb,
		bool paren, const char *fmt, ...)
{
	va_list ap;

	it->res = res;
	it->paren = paren;
	snprintf(it->verb, sizeof(it->verb), "%s", verb);
	va_start(ap, fmt);
	vsnprintf(it->detail, sizeof(it->detail), fmt, ap);
	va_end(ap);
}

/* The path below `base` ("" for base itself), or NULL when outside it. */
static const char *below(const char *base, const char *path)
{
	size_t n = strlen(base);

	if (strcmp(base, "/") == 0)
		return path + 1;
	if (strncmp(path, base, n) != 0 || (path[n] != '\0' && path[n] != '/'))
		return NULL;
	return path[n] == '/' ? path + n + 1 : path + n;
}

/*
 * Open (making what is missing, mode 0755 before the umask) the directory
 * `rel` names under `destfd`, one component at a time and never through a
 * symlink: a symlink this restore wrote earlier cannot lead a later path out
 * of the directory. The fd, or -errno.
 */
static int open_dirs(int destfd, const char *rel, size_t len)
{
	char comp[NAME_MAX + 1];
	int fd = fcntl(destfd, F_DUPFD_CLOEXEC, 0), next;
	size_t i = 0;

	if (fd < 0)
		return -errno;
	while (i < len) {
		size_t j = i;

		while (j < len && rel[j] != '/')
			j++;
		if (j - i > NAME_MAX) {
			close(fd);
			return -ENAMETOOLONG;
		}
		memcpy(comp, rel + i, j - i);
		comp[j - i] = '\0';
		if (mkdirat(fd, comp, 0755) < 0 && errno != EEXIST) {
			next = -errno;
			close(fd);
			return next;
		}
		next = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		if (next < 0)
			return -errno;
		fd = next;
		i = j + 1;
	}
	return fd;
}

static void times_of(const struct fsb_prior *p, struct timespec ts[2])
{
	ts[0] = p->atime;
	ts[1] = p->mtime;
	if (!p->has_atime)
		ts[0].tv_nsec = UTIME_OMIT;
	if (!p->has_mtime)
		ts[1].tv_nsec = UTIME_OMIT;
}

/*
 * The bytes a file had before the cycle, onto `out`: its object, the file
 * it was moved to (the very inode, checked as a restore checks it), or for
 * a change of metadata only the file in place when the cycle's end state
 * says nothing changed it since. 0, or -errno with `why` set.
 */
static int copy_content(const struct fsb_restore_opts *o, int rootfd,
			const struct fsb_pick *pk, int out, const char **why)
{
	const struct fsb_journal_rec *r = pk->rec;
	const struct fsb_prior *p = &r->prior;
	const char *name, *src = NULL;
	struct stat st;
	int fd, pfd, rc;

	if (p->object[0] != '\0') {
		fd = fsb_backup_object_open(o->store, p->object);
		rc = fd < 0 ? fd : fsb_backup_object_check(fd, p);
		if (rc == 0)
			rc = fsb_backup_object_restore(fd, p, out);
		if (fd >= 0)
			close(fd);
		*why = rc == -EBADMSG ? "its backup object is corrupted" : "its backup object "
		       "cannot be read";
		return rc;
	}
	if (p->moved && r->moved_now != NULL)
		src = r->moved_now;
	else if (p->metadata_only)
		src = r->resolved;
	*why = "no copy of its content was kept (no backup taken)";
	if (src == NULL)
		return -ENODATA;
	pfd = fsb_at_open_parent(rootfd, src, &name);
	fd = pfd < 0 ? pfd : openat(pfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
				   O_CLOEXEC);
	if (fd < 0)
		rc = pfd < 0 ? pfd : -errno;
	if (pfd >= 0)
		close(pfd);
	if (fd < 0) {
		*why = "the file that holds its content is not there now";
		return rc;
	}
	rc = fstat(fd, &st) < 0 ? -errno : 0;
	if (rc == 0 && p->moved && ((uint64_t)st.st_dev != p->dev ||
				    (uint64_t)st.st_ino != p->ino))
		rc = -ESTALE;
	/* Only the metadata changed in the cycle: the bytes are those of the
	 * file the cycle ended with, if nothing changed it since. */
	if (rc == 0 && p->metadata_only &&
	    (pk->end == NULL || fsb_restore_end_differs(pk->end, true, &st) != NULL))
		rc = -ESTALE;
	if (rc == 0)
		rc = fsb_backup_moved_restore(fd, p, out);
	close(fd);
	*why = "the file that holds its content changed since the cycle";
	return rc;
}

/* Write one path's prior state as `name` in `dfd`. */
static void write_one(const struct fsb_restore_opts *o, int rootfd, struct fsb_restore_item *it,
		      int dfd, const char *name, const char *dest)
{
	const struct fsb_prior *p = &it->pick->rec->prior;
	const char *type = p->type, *why = NULL;
	struct timespec ts[2];
	int fd, rc;

	times_of(p, ts);
	if (strcmp(type, "dir") == 0) {
		/* Its mode and times once what is inside is written. */
		if (name[0] != '\0' && mkdirat(dfd, name, 0700) < 0 && errno != EEXIST) {
			say(it, FSB_RES_FAILED, "failed", false, "cannot make the directory: %s",
			    strerror(errno));
			return;
		}
		it->act = FSB_ACT_DIR;
		return;
	}
	if (strcmp(type, "file") == 0) {
		fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0) {
			say(it, FSB_RES_FAILED, "failed", false, "cannot create it: %s",
			    strerror(errno));
			return;
		}
		rc = copy_content(o, rootfd, it->pick, fd, &why);
		if (rc == 0 && ((p->has_mode && fchmod(fd, p->mode) < 0) || futimens(fd, ts) < 0))
			rc = -errno;
		close(fd);
		if (rc < 0) {
			/* Nothing half written is left to be taken for the file. */
			unlinkat(dfd, name, 0);
			say(it, FSB_RES_SKIPPED, "skipped", false, "not written: %s",
			    why != NULL ? why : strerror(-rc));
			return;
		}
		say(it, FSB_RES_OK, "restored", true, "into %s: content, mode, times", dest);
		return;
	}
	if (strcmp(type, "symlink") == 0 && p->target != NULL) {
		if (symlinkat(p->target, dfd, name) < 0 ||
		    utimensat(dfd, name, ts, AT_SYMLINK_NOFOLLOW) < 0) {
			say(it, FSB_RES_FAILED, "failed", false, "%s", strerror(errno));
			return;
		}
		say(it, FSB_RES_OK, "restored", true, "into %s: symlink, target, times", dest);
		return;
	}
	if (strcmp(type, "fifo") == 0) {
		if (mkfifoat(dfd, name, p->has_mode ? p->mode : 0600) < 0 ||
		    (p->has_mode && fchmodat(dfd, name, p->mode, 0) < 0) ||
		    utimensat(dfd, name, ts, AT_SYMLINK_NOFOLLOW) < 0) {
			say(it, FSB_RES_FAILED, "failed", false, "%s", strerror(errno));
			return;
		}
		say(it, FSB_RES_OK, "restored", true, "into %s: fifo, mode, times", dest);
		return;
	}
	say(it, FSB_RES_SKIPPED, "skipped", false, "not restorable: %s",
	    strcmp(type, "symlink") == 0 ? "the journal holds no target for this symlink"
	    : "restore does not make a socket or a device");
}

/* The directory's mode and times, now that what is inside is written. */
static void finish_dir(struct fsb_restore_item *it, int dfd, const char *name, const char *dest)
{
	const struct fsb_prior *p = &it->pick->rec->prior;
	struct timespec ts[2];
	int fd = name[0] == '\0' ? fcntl(dfd, F_DUPFD_CLOEXEC, 0)
		 : openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	times_of(p, ts);
	if (fd < 0 || (p->has_mode && fchmod(fd, p->mode) < 0) || futimens(fd, ts) < 0)
		say(it, FSB_RES_FAILED, "failed", false, "cannot set its mode and times: %s",
		    strerror(errno));
	else
		say(it, FSB_RES_OK, "restored", true, "into %s: directory, mode, times", dest);
	if (fd >= 0)
		close(fd);
}

static int by_depth(const void *a, const void *b)
{
	const struct fsb_restore_item *x = a, *y = b;

	return x->depth != y->depth ? x->depth - y->depth : strcmp(x->path, y->path);
}

/* `fd` is an empty directory: 0, -ENOTEMPTY, or -errno. */
static int empty_dir(int fd)
{
	int dup = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	DIR *d = dup < 0 ? NULL : fdopendir(dup);
	struct dirent *de;
	int rc = 0;

	if (d == NULL) {
		rc = -errno;
		if (dup >= 0)
			close(dup);
		return rc;
	}
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			rc = -ENOTEMPTY;
	closedir(d);
	return rc;
}

int fsb_restore_to(const struct fsb_restore_opts *o, const struct fsb_cycle *cy,
		   const char *dir, const char *base, struct fsb_restore *r)
{
	struct fsb_restore_item *items;
	char dest[PATH_MAX * 2];
	size_t n = 0;
	int destfd = -1, err;

	memset(r, 0, sizeof(*r));
	r->root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (r->root_fd < 0)
		return -errno;
	r->root_open = true;
	if ((err = fsb_restore_select(o, cy, r)) < 0)
		goto fail;
	items = r->items;
	n = r->n;
	/* Each one's state before the cycle, written as a file of its own. */
	for (size_t i = 0; i < n; i++)
		items[i].act = FSB_ACT_FILE;
	qsort(items, n, sizeof(*items), by_depth);

	/* New, or empty: what is written there is only this restore's. */
	if (!o->dry_run && mkdir(dir, 0700) < 0 && errno != EEXIST) {
		err = -errno;
		goto fail;
	}
	destfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (destfd < 0 && !(o->dry_run && errno == ENOENT)) {
		err = -errno;
		goto fail;
	}
	if (destfd >= 0 && (err = empty_dir(destfd)) < 0)
		goto fail;

	for (size_t i = 0; i < n; i++) {
		struct fsb_restore_item *it = &items[i];
		const struct fsb_prior *p = &it->pick->rec->prior;
		const char *rel = below(base, it->path), *slash;
		int dfd;

		if (o->progress != NULL)
			o->progress(o->progress_arg, false, i, n);
		if (rel == NULL) {
			say(it, FSB_RES_SKIPPED, "skipped", false, "outside the workspace %s: not "
			    "written into %s", base, dir);
			continue;
		}
		if (!p->exists) {
			say(it, FSB_RES_OK, "absent", false, "the cycle created it: nothing to "
			    "write");
			continue;
		}
		if (o->dry_run) {
			say(it, FSB_RES_OK, "would restore", true, "into %s%s%s", dir,
			    rel[0] != '\0' ? "/" : "", rel);
			continue;
		}
		slash = strrchr(rel, '/');
		dfd = open_dirs(destfd, rel, slash != NULL ? (size_t)(slash - rel) : 0);
		if (dfd < 0) {
			say(it, FSB_RES_SKIPPED, "skipped", false, "cannot make its directory in %s: "
			    "%s", dir, strerror(-dfd));
			continue;
		}
		snprintf(dest, sizeof(dest), "%s%s%s", dir, rel[0] != '\0' ? "/" : "", rel);
		write_one(o, r->root_fd, it, dfd, slash != NULL ? slash + 1 : rel, dest);
		close(dfd);
	}
	/* Deepest first, so that a directory's times are not moved by what is
	 * written inside it afterwards. */
	for (size_t i = n; !o->dry_run && i-- > 0;) {
		struct fsb_restore_item *it = &items[i];
		const char *rel = below(base, it->path), *slash;
		int dfd;

		if (it->res != FSB_RES_PENDING || it->act != FSB_ACT_DIR)
			continue;
		slash = strrchr(rel, '/');
		dfd = open_dirs(destfd, rel, slash != NULL ? (size_t)(slash - rel) : 0);
		if (dfd < 0) {
			say(it, FSB_RES_FAILED, "failed", false, "%s", strerror(-dfd));
			continue;
		}
		snprintf(dest, sizeof(dest), "%s%s%s", dir, rel[0] != '\0' ? "/" : "", rel);
		finish_dir(it, dfd, rel[0] == '\0' ? "" : slash != NULL ? slash + 1 : rel, dest);
		close(dfd);
	}
	if (o->progress != NULL)
		o->progress(o->progress_arg, false, n, n);
	if (destfd >= 0)
		close(destfd);
	return 0;

fail:
	if (destfd >= 0)
		close(destfd);
	fsb_restore_free(r);
	return err;
}
