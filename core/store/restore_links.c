/*
 * restore_links.c — hard-link groups after a restore (see restore.h).
 *
 * A file with several names before the cycle comes back from its copy as a
 * file of its own. Two steps make its names one group again:
 *  1. the names this restore put back are made links of one of them;
 *  2. when the group had more names than the restore put back, the others
 *     lived on untouched somewhere: the inode is the one a moved file's
 *     restore holds open, or a walk of the workspace, then of the home
 *     trash, finds a name that is still it; when that inode holds the bytes,
 *     mode, owner and mtime the restore gave back, the restored names become
 *     links of it, so the link counts are as before.
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
#include "trash.h"

#define COMPARE_CHUNK 65536
/* Directories nftw keeps open at once. */
#define WALK_FDS 32

/* A restored name by the inode it had before the cycle: sorted, the names
 * of one file are a run. */
struct member {
	uint64_t dev, ino;
	size_t i;		/* its item */
};

/* A file that had other names than the ones restored: its inode before the
 * cycle, its restored names, and how to reach the inode now. */
struct lost_group {
	uint64_t dev, ino;
	const struct member *names;	/* its restored names, the first first */
	size_t nnames;
	int held;		/* the inode itself, held open by the restore
				 * (a file the cycle moved), or -1 */
	char *found;		/* else a name of it a walk found, or NULL */
};

/* A name this restore put back as a file of its own. */
static bool restored_file(const struct fsb_restore_item *it)
{
	return it->pick != NULL && it->res == FSB_RES_OK &&
	       (it->act == FSB_ACT_FILE || it->act == FSB_ACT_MOVED);
}

static const struct fsb_prior *prior_of(const struct fsb_restore_item *it)
{
	return &it->pick->rec->prior;
}

static int by_inode(const void *x, const void *y)
{
	const struct member *a = x, *b = y;

	if (a->dev != b->dev)
		return a->dev < b->dev ? -1 : 1;
	if (a->ino != b->ino)
		return a->ino < b->ino ? -1 : 1;
	return (a->i > b->i) - (a->i < b->i);
}

/* Make the name of `it` a link of the inode open as `fd`: linked beside it
 * under a fresh name, renamed over it. 0 or -errno; on failure the name is
 * as it was. */
static int link_over(int root, const struct fsb_restore_item *it, int fd)
{
	char tmp[64], proc[32];
	struct stat now, it_is;
	const char *name;
	int pfd = fsb_at_open_parent(root, it->path, &name), err = 0;

	if (pfd < 0)
		return pfd;
	/* Already that inode: rename(2) between two names of one file does
	 * nothing, and would leave the temporary name behind. */
	if (fstatat(pfd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 && fstat(fd, &it_is) == 0 &&
	    now.st_dev == it_is.st_dev && now.st_ino == it_is.st_ino) {
		close(pfd);
		return 0;
	}
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
	struct stat st;
	const char *name;
	int pfd = fsb_at_open_parent(root, path, &name), fd;

	if (pfd < 0)
		return -1;
	fd = openat(pfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	close(pfd);
	if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Step 1: the later restored names of a file (the run v[0..n)) become
 * links of the first. Not linked (another file system): they stay copies. */
static void relink_restored(int root, struct fsb_restore_item *items, const struct member *v,
			    size_t n)
{
	int fd;

	if (n < 2 || (fd = open_restored(root, items[v[0].i].path)) < 0)
		return;
	for (size_t k = 1; k < n; k++)
		link_over(root, &items[v[k].i], fd);
	close(fd);
}

/* ---- step 2: names the restore did not touch --------------------------------- */

/* nftw has no argument for its callback. */
static __thread struct {
	struct lost_group *v;
	size_t n, left;
} walking;

static int by_group_inode(const void *key, const void *elem)
{
	const struct stat *st = key;
	const struct lost_group *g = elem;

	if ((uint64_t)st->st_dev != g->dev)
		return (uint64_t)st->st_dev < g->dev ? -1 : 1;
	if ((uint64_t)st->st_ino != g->ino)
		return (uint64_t)st->st_ino < g->ino ? -1 : 1;
	return 0;
}

/* The groups are in (dev, ino) order: one lookup per file walked. */
static int find_names(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	struct lost_group *g;

	(void)ftw;
	if (type != FTW_F || !S_ISREG(st->st_mode))
		return 0;
	g = bsearch(st, walking.v, walking.n, sizeof(*walking.v), by_group_inode);
	if (g != NULL && g->held < 0 && g->found == NULL) {
		g->found = strdup(path);
		if (g->found != NULL && --walking.left == 0)
			return 1;	/* all found: stop the walk */
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
	int fd = g->held >= 0 ? fcntl(g->held, F_DUPFD_CLOEXEC, 0)
		 : open(g->found, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	/* No name left (st_nlink 0): nothing to link to. */
	if (fstat(fd, &st) < 0 || fstat(restored_fd, &mine) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_nlink == 0 ||
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
static void join_survivor(int root, const struct lost_group *g, struct fsb_restore_item *items)
{
	struct fsb_restore_item *first = &items[g->names[0].i];
	int restored = open_restored(root, first->path), fd;

	if (restored < 0)
		return;
	fd = open_survivor(g, restored, prior_of(first));
	close(restored);
	if (fd < 0)
		return;
	for (size_t k = 0; k < g->nnames; k++) {
		struct fsb_restore_item *it = &items[g->names[k].i];

		if (link_over(root, it, fd) == 0)
			snprintf(it->detail + strlen(it->detail), sizeof(it->detail) - strlen(it->detail),
				 "; a hard link of its other names again");
	}
	close(fd);
}

/* A moved file's restore holds its inode open: the group's own. */
static int held_inode(const struct fsb_restore_item *items, const struct member *v, size_t n)
{
	for (size_t k = 0; k < n; k++)
		if (items[v[k].i].act == FSB_ACT_MOVED && items[v[k].i].src_fd >= 0)
			return items[v[k].i].src_fd;
	return -1;
}

void fsb_restore_rejoin_links(int root, const char *workspace, struct fsb_restore_item *items,
			      size_t n)
{
	struct fsb_trash_place trash;
	char where[PATH_MAX + 16];
	struct lost_group *v = NULL;
	struct member *m;
	size_t nm = 0, nv = 0, unheld = 0;

	if ((m = calloc(n + 1, sizeof(*m))) == NULL)
		return;
	for (size_t i = 0; i < n; i++)
		if (restored_file(&items[i]))
			m[nm++] = (struct member){ .dev = prior_of(&items[i])->dev,
						   .ino = prior_of(&items[i])->ino, .i = i };
	qsort(m, nm, sizeof(*m), by_inode);
	/* Each run is one file: its names joined, and when it had more names
	 * than these (in any record: a name replaced after its other one went
	 * was recorded with one link), a group to look for. */
	for (size_t a = 0, b; a < nm; a = b) {
		uint64_t most = 0;

		for (b = a; b < nm && m[b].dev == m[a].dev && m[b].ino == m[a].ino; b++)
			if (prior_of(&items[m[b].i])->nlink > most)
				most = prior_of(&items[m[b].i])->nlink;
		relink_restored(root, items, m + a, b - a);
		if (b - a >= most)
			continue;
		if (v == NULL && (v = calloc(nm + 1, sizeof(*v))) == NULL)
			break;
		v[nv] = (struct lost_group){ .dev = m[a].dev, .ino = m[a].ino, .names = m + a,
					     .nnames = b - a, .held = held_inode(items, m + a, b - a) };
		unheld += v[nv++].held < 0;
	}
	walking.v = v;
	walking.n = nv;
	walking.left = unheld;
	/* FTW_PHYS: no symlink followed; FTW_MOUNT: a link never crosses a
	 * file system. Each name found is checked again through its own fd
	 * before anything is linked to it. */
	if (walking.left > 0 && workspace != NULL)
		nftw(workspace, find_names, WALK_FDS, FTW_PHYS | FTW_MOUNT);
	/* A name a turn deleted to the trash lives on there. */
	if (walking.left > 0 && fsb_trash_place_init(&trash, NULL) == 0 &&
	    snprintf(where, sizeof(where), "%s/Trash/files", trash.data_home) < (int)sizeof(where))
		nftw(where, find_names, WALK_FDS, FTW_PHYS | FTW_MOUNT);
	walking.v = NULL;
	for (size_t k = 0; k < nv; k++) {
		if (v[k].held >= 0 || v[k].found != NULL)
			join_survivor(root, &v[k], items);
		free(v[k].found);
	}
	free(v);
	free(m);
}
