/*
 * tree.c — a directory walk that follows nothing (see tree.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tree.h"

struct walk {
	fsb_tree_fn fn;
	void *arg;
	dev_t dev;		/* the top's filesystem */
	char rel[PATH_MAX];
};

int fsb_tree_open_dir(int dirfd, const char *name, const struct stat *st)
{
	struct stat now;
	int fd;

	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP || errno == ENOTDIR ? -EAGAIN : -errno;
	if (fstat(fd, &now) < 0 || now.st_dev != st->st_dev || now.st_ino != st->st_ino) {
		close(fd);
		return -EAGAIN;
	}
	return fd;
}

/* A bind mount of the same filesystem keeps st_dev: ask statx. */
static bool is_mount_root(int dirfd, const char *name)
{
	struct statx stx;

	if (statx(dirfd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, 0, &stx) < 0)
		return false;
	return (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
	       (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

/* Everything in the open directory `fd`, whose path below the top is
 * w->rel[0..len). Takes `fd` over. */
static int walk_dir(struct walk *w, int fd, size_t len, int depth)
{
	struct fsb_tree_entry e;
	struct dirent *de;
	struct stat st;
	DIR *d;
	int rc = 0, sub;

	if (depth > FSB_TREE_MAX_DEPTH) {
		close(fd);
		return -ELOOP;
	}
	d = fdopendir(fd);
	if (d == NULL) {
		rc = -errno;
		close(fd);
		return rc;
	}
	for (;;) {
		size_t nlen, elen;

		errno = 0;
		de = readdir(d);
		if (de == NULL) {
			rc = -errno;
			break;
		}
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		nlen = strlen(de->d_name);
		elen = len + (len > 0) + nlen;
		if (elen >= sizeof(w->rel)) {
			rc = -ENAMETOOLONG;
			break;
		}
		if (len > 0)
			w->rel[len] = '/';
		memcpy(w->rel + len + (len > 0), de->d_name, nlen + 1);
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			/* Gone since readdir: nothing left to act on. */
			if (errno == ENOENT)
				continue;
			rc = -errno;
			break;
		}
		e.dirfd = dirfd(d);
		e.name = de->d_name;
		e.rel = w->rel;
		e.st = &st;
		e.depth = depth;
		e.fd = -1;
		e.mount_root = false;
		if (!S_ISDIR(st.st_mode)) {
			if ((rc = w->fn(&e, false, w->arg)) != 0)
				break;
			continue;
		}
		e.mount_root = st.st_dev != w->dev || is_mount_root(dirfd(d), de->d_name);
		if (e.mount_root) {
			if ((rc = w->fn(&e, false, w->arg)) != 0)
				break;
			continue;
		}
		if ((e.fd = fsb_tree_open_dir(dirfd(d), de->d_name, &st)) < 0) {
			rc = e.fd;
			break;
		}
		if ((rc = w->fn(&e, false, w->arg)) != 0) {
			close(e.fd);
			break;
		}
		/* The walk below consumes its own fd; the callback's stays open
		 * for the post call. */
		sub = fcntl(e.fd, F_DUPFD_CLOEXEC, 0);
		rc = sub < 0 ? -errno : walk_dir(w, sub, elen, depth + 1);
		/* The recursion wrote deeper names into rel: restore ours. */
		w->rel[elen] = '\0';
		if (rc == 0)
			rc = w->fn(&e, true, w->arg);
		close(e.fd);
		if (rc != 0)
			break;
	}
	closedir(d);
	return rc;
}

int fsb_tree_walk(int dirfd, const char *name, const struct stat *top, fsb_tree_fn fn, void *arg)
{
	struct walk w = { .fn = fn, .arg = arg };
	int fd;

	w.rel[0] = '\0';
	w.dev = top->st_dev;
	fd = fsb_tree_open_dir(dirfd, name, top);
	if (fd < 0)
		return fd;
	return walk_dir(&w, fd, 0, 1);
}

bool fsb_tree_dir_is_empty(int fd)
{
	struct dirent *de;
	bool empty = true;
	DIR *d;

	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return false;
	}
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
			empty = false;
			break;
		}
	closedir(d);
	return empty;
}
