/*
 * restore_links.c — hard-link groups after a restore (see restore.h).
 *
 * A file with several names before the cycle comes back from its copy as a
 * file of its own. Two steps make its names one group again:
 *  1. the names this restore put back are made links of one of them;
 *  2. when the group had more names than the restore put back, the others
 *     lived on untouched somewhere: a walk of the workspace finds a name
 *     that is still the file's inode, and when that inode still holds the
 *     bytes, mode, owner and mtime the restore gave back, the restored names
 *     become links of it, so the link counts are as before.
 * Nothing here is needed for a restore to be correct: each step that fails
 * leaves the restored copies as they are.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "at.h"
#include "restore.h"

#define COMPARE_CHUNK 65536
/* Directories nftw keeps open at once. */
#define WALK_FDS 32

/* A file that had other names than the ones restored: its inode before the
 * cycle, where a walk found a name of it, and the first restored name. */
struct lost_group {
	uint64_t dev, ino;
	size_t first;		/* index of the first restored item of it */
	char *found;		/* a name of that inode now, or NULL */
};

static bool relinkable(const struct fsb_restore_item *it)
{
	const struct fsb_prior *p = it->pick ? &it->pick->rec->prior : NULL;

	return p != NULL && it->res == FSB_RES_OK && p->nlink > 1 &&
	       (it->act == FSB_ACT_FILE || it->act == FSB_ACT_MOVED);
}

static const struct fsb_prior *prior_of(const struct fsb_restore_item *it)
{
	return &it->pick->rec->prior;
}

/* Make the name of `it` a link of the inode open as `fd`: linked beside it
 * under a fresh name, renamed over it. 0 or -errno; on failure the name is
 * as it was. */
static int link_over(int root, const struct fsb_restore_item *it, int fd)
{
	char tmp[64], proc[32];
	const char *name;
	int pfd = fsb_at_open_parent(root, it->path, &name), err = 0;

	if (pfd < 0)
		return pfd;
	fsb_restore_temp_name(tmp, sizeof(tmp));
	/* Through /proc/self/fd: exactly the inode checked, whatever its
	 * name is by now. */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (linkat(AT_FDCWD, proc, pfd, tmp, AT_SYMLINK_FOLLOW) < 0) {
		err = -errno;
	} else if (renameat(pfd, tmp, pfd, name) < 0) {
		err = -errno;
		unlinkat(pfd, tmp, 0);
	}
	close(pfd);
	return err;
}

/* Open a restored name as it is now, without following a symlink; -1 when
 * it is not the regular file the restore left. */
static int open_restored(int root, const char *path)
{
	const char *name;
	int pfd = fsb_at_open_parent(root, path, &name), fd;

	if (pfd < 0)
		return -1;
	fd = openat(pfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	close(pfd);
	return fd;
}

/* Step 1: the later restored names of a group become links of the first
 * restored one. Not linked (another file system): they stay copies. */
static void relink_restored(int root, struct fsb_restore_item *items, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!relinkable(&items[i]))
			continue;
		for (size_t j = 0; j < i; j++) {
			int fd;

			if (!relinkable(&items[j]) || prior_of(&items[j])->dev != prior_of(&items[i])->dev ||
			    prior_of(&items[j])->ino != prior_of(&items[i])->ino)
				continue;
			if ((fd = open_restored(root, items[j].path)) >= 0) {
				link_over(root, &items[i], fd);
				close(fd);
			}
			break;
		}
	}
}

/* ---- step 2: names the restore did not touch --------------------------------- */

/* nftw has no argument for its callback. */
static __thread struct {
	struct lost_group *v;
	size_t n, left;
} walking;

static int find_names(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)ftw;
	if (type != FTW_F || !S_ISREG(st->st_mode))
		return 0;
	for (size_t i = 0; i < walking.n; i++) {
		struct lost_group *g = &walking.v[i];

		if (g->found == NULL && g->dev == (uint64_t)st->st_dev &&
		    g->ino == (uint64_t)st->st_ino) {
			g->found = strdup(path);
			if (g->found != NULL && --walking.left == 0)
				return 1;	/* all found: stop the walk */
		}
	}
	return 0;
}

/* Same bytes in both files, read from their starts. */
static bool same_bytes(int a, int b, off_t size)
{
	char *x = malloc(COMPARE_CHUNK), *y = malloc(COMPARE_CHUNK);
	off_t off = 0;
	bool same = x != NULL && y != NULL;

	while (same && off < size) {
		size_t want = size - off < COMPARE_CHUNK ? (size_t)(size - off) : COMPARE_CHUNK;
		ssize_t m = pread(a, x, want, off), k = pread(b, y, want, off);

		same = m == (ssize_t)want && k == m && memcmp(x, y, want) == 0;
		off += want;
	}
	free(x);
	free(y);
	return same;
}

/*
 * The name the walk found is still the group's inode, and holds what the
 * restore gave back: content, mode, owner and mtime. Anything written to it
 * since the cycle (through a name the cycle never touched) fails this, and
 * the restored name keeps its copy: joining would give it other bytes.
 */
static int open_survivor(const struct lost_group *g, int restored_fd, const struct fsb_prior *p)
{
	struct stat st, mine;
	int fd = open(g->found, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || fstat(restored_fd, &mine) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_dev != g->dev || (uint64_t)st.st_ino != g->ino ||
	    st.st_size != mine.st_size || (st.st_mode & 07777) != (mine.st_mode & 07777) ||
	    st.st_uid != mine.st_uid || st.st_gid != mine.st_gid ||
	    (p->has_mtime && (st.st_mtim.tv_sec != p->mtime.tv_sec ||
			      st.st_mtim.tv_nsec != p->mtime.tv_nsec)) ||
	    !same_bytes(fd, restored_fd, st.st_size)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Step 2 for one group: every restored name of it becomes a link of the
 * name that lived on. */
static void join_survivor(int root, const struct lost_group *g, struct fsb_restore_item *items,
			  size_t n)
{
	int restored = open_restored(root, items[g->first].path), fd;

	if (restored < 0)
		return;
	fd = open_survivor(g, restored, prior_of(&items[g->first]));
	close(restored);
	if (fd < 0)
		return;
	for (size_t i = g->first; i < n; i++)
		if (relinkable(&items[i]) && prior_of(&items[i])->dev == g->dev &&
		    prior_of(&items[i])->ino == g->ino && link_over(root, &items[i], fd) == 0)
			snprintf(items[i].detail + strlen(items[i].detail),
				 sizeof(items[i].detail) - strlen(items[i].detail),
				 "; a hard link of its other names again");
	close(fd);
}

/* The groups whose restored names are fewer than their links were. */
static size_t lost_groups(const struct fsb_restore_item *items, size_t n, struct lost_group *v)
{
	size_t nv = 0;

	for (size_t i = 0; i < n; i++) {
		const struct fsb_prior *p;
		uint64_t names = 0;
		bool seen = false;

		if (!relinkable(&items[i]))
			continue;
		p = prior_of(&items[i]);
		for (size_t k = 0; k < nv && !seen; k++)
			seen = v[k].dev == p->dev && v[k].ino == p->ino;
		if (seen)
			continue;
		for (size_t j = i; j < n; j++)
			names += relinkable(&items[j]) && prior_of(&items[j])->dev == p->dev &&
				 prior_of(&items[j])->ino == p->ino;
		if (names < p->nlink)
			v[nv++] = (struct lost_group){ .dev = p->dev, .ino = p->ino, .first = i };
	}
	return nv;
}

void fsb_restore_rejoin_links(int root, const char *workspace, struct fsb_restore_item *items,
			      size_t n)
{
	struct lost_group *v;
	size_t nv;

	relink_restored(root, items, n);
	if (workspace == NULL || (v = calloc(n + 1, sizeof(*v))) == NULL)
		return;
	nv = lost_groups(items, n, v);
	if (nv > 0) {
		walking.v = v;
		walking.n = walking.left = nv;
		/* FTW_PHYS: no symlink followed; FTW_MOUNT: a link never
		 * crosses a file system. Each name found is checked again
		 * through its own fd before anything is linked to it. */
		nftw(workspace, find_names, WALK_FDS, FTW_PHYS | FTW_MOUNT);
		walking.v = NULL;
	}
	for (size_t k = 0; k < nv; k++) {
		if (v[k].found != NULL)
			join_survivor(root, &v[k], items, n);
		free(v[k].found);
	}
	free(v);
}
