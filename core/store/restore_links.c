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

/* A file that had other names than the ones restored: its inode before the
 * cycle, the first restored name, and how to reach the inode now. */
struct lost_group {
	uint64_t dev, ino;
	size_t first;		/* index of the first restored item of it */
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

static bool same_file(const struct fsb_restore_item *a, const struct fsb_restore_item *b)
{
	return prior_of(a)->dev == prior_of(b)->dev && prior_of(a)->ino == prior_of(b)->ino;
}

/* The most names the file of item `i` had in any record of the cycle: a
 * name replaced after its other one went was recorded with one link. */
static uint64_t most_links(const struct fsb_restore_item *items, size_t n, size_t i)
{
	uint64_t most = prior_of(&items[i])->nlink;

	for (size_t j = 0; j < n; j++)
		if (restored_file(&items[j]) && same_file(&items[j], &items[i]) &&
		    prior_of(&items[j])->nlink > most)
			most = prior_of(&items[j])->nlink;
	return most;
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
	const char *name;
	int pfd = fsb_at_open_parent(root, path, &name), fd;

	if (pfd < 0)
		return -1;
	fd = openat(pfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	close(pfd);
	return fd;
}

/* Step 1: the later restored names of a file become links of the first
 * restored one. Not linked (another file system): they stay copies. */
static void relink_restored(int root, struct fsb_restore_item *items, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!restored_file(&items[i]))
			continue;
		for (size_t j = 0; j < i; j++) {
			int fd;

			if (!restored_file(&items[j]) || !same_file(&items[j], &items[i]))
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

		if (g->held < 0 && g->found == NULL && g->dev == (uint64_t)st->st_dev &&
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
		if (restored_file(&items[i]) && same_file(&items[i], &items[g->first]) &&
		    link_over(root, &items[i], fd) == 0)
			snprintf(items[i].detail + strlen(items[i].detail),
				 sizeof(items[i].detail) - strlen(items[i].detail),
				 "; a hard link of its other names again");
	close(fd);
}

/* A moved file's restore holds its inode open: the group's own. */
static int held_inode(const struct fsb_restore_item *items, size_t n, size_t i)
{
	for (size_t j = i; j < n; j++)
		if (restored_file(&items[j]) && same_file(&items[j], &items[i]) &&
		    items[j].act == FSB_ACT_MOVED && items[j].src_fd >= 0)
			return items[j].src_fd;
	return -1;
}

/* The files whose restored names are fewer than the names they had. */
static size_t lost_groups(const struct fsb_restore_item *items, size_t n, struct lost_group *v)
{
	size_t nv = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t names = 0;
		bool seen = false;

		if (!restored_file(&items[i]))
			continue;
		for (size_t j = 0; j < i && !seen; j++)
			seen = restored_file(&items[j]) && same_file(&items[j], &items[i]);
		if (seen)
			continue;
		for (size_t j = i; j < n; j++)
			names += restored_file(&items[j]) && same_file(&items[j], &items[i]);
		if (names < most_links(items, n, i))
			v[nv++] = (struct lost_group){ .dev = prior_of(&items[i])->dev,
						       .ino = prior_of(&items[i])->ino, .first = i,
						       .held = held_inode(items, n, i) };
	}
	return nv;
}

void fsb_restore_rejoin_links(int root, const char *workspace, struct fsb_restore_item *items,
			      size_t n)
{
	struct fsb_trash_place trash;
	char where[PATH_MAX + 16];
	struct lost_group *v;
	size_t nv, unheld = 0;

	relink_restored(root, items, n);
	if ((v = calloc(n + 1, sizeof(*v))) == NULL)
		return;
	nv = lost_groups(items, n, v);
	for (size_t k = 0; k < nv; k++)
		unheld += v[k].held < 0;
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
			join_survivor(root, &v[k], items, n);
		free(v[k].found);
	}
	free(v);
}
