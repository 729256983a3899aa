/*
 * grant.c — race-safe open for a grant (see grant.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "at.h"
#include "grant.h"

/* Linux's terminal majors: the virtual consoles and serial lines (4),
 * /dev/tty, /dev/console and /dev/ptmx (5), the pseudo-terminal slaves
 * (136-143). */
#define TTY_MAJOR 4
#define TTYAUX_MAJOR 5
#define PTS_MAJOR_FIRST 136
#define PTS_MAJOR_LAST 143

int fsb_grant_terminal_refusal(const struct stat *st)
{
	unsigned maj = major(st->st_rdev), min = minor(st->st_rdev);

	if (!S_ISCHR(st->st_mode))
		return 0;
	if (maj == TTYAUX_MAJOR && min == 0)
		return -ENXIO;
	/* /dev/ptmx makes a new terminal of the client's own: no deputy. */
	if (maj == TTYAUX_MAJOR && min == 2)
		return 0;
	if (maj == TTY_MAJOR || maj == TTYAUX_MAJOR ||
	    (maj >= PTS_MAJOR_FIRST && maj <= PTS_MAJOR_LAST))
		return -EACCES;
	return 0;
}

/* Reach the judged inode with O_PATH, never through a symlink, and check it
 * is the one judged. Returns the O_PATH fd or -errno; *st is its stat. */
static int reach_judged(int rootfd, const struct fsb_resolved *res, struct stat *st)
{
	int pathfd = fsb_at_reach(rootfd, res, st);
	int err;

	/* A directory fd would let its holder openat() anything beneath it,
	 * past every rule: no directory fd ever reaches a client. */
	if (pathfd >= 0 && S_ISDIR(st->st_mode)) {
		close(pathfd);
		return -EISDIR;
	}
	/* Nor a terminal the core would open in its own session. */
	if (pathfd >= 0 && (err = fsb_grant_terminal_refusal(st)) < 0) {
		close(pathfd);
		return err;
	}
	return pathfd;
}

static bool writable(int flags)
{
	return (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
}

static int open_existing(int rootfd, const struct fsb_resolved *res, int flags,
			 fsb_grant_backup_fn backup, void *arg)
{
	struct stat st;
	int pathfd, fd, err;

	pathfd = reach_judged(rootfd, res, &st);
	if (pathfd < 0)
		return pathfd;
	/* The backup reads the very inode about to be handed out. */
	if (backup != NULL && S_ISREG(st.st_mode) && writable(flags)) {
		int rdfd = fsb_at_reopen_unblocked(pathfd, O_RDONLY | O_CLOEXEC | O_NOCTTY);

		if (rdfd < 0) {
			err = rdfd;
			goto out;
		}
		err = backup(rdfd, &st, arg);
		close(rdfd);
		if (err < 0)
			goto out;
	}
	flags &= ~(O_CREAT | O_EXCL | O_NOFOLLOW | O_TRUNC);
	/* Opening a FIFO blocks until a peer appears, a tty may wait for
	 * carrier, a leased file for the lease's break: never on the loop. */
	fd = fsb_at_reopen_unblocked(pathfd, flags);
	err = fd;
out:
	close(pathfd);
	return err;
}

int fsb_grant_open_for_backup(int rootfd, const struct fsb_resolved *res)
{
	struct stat st;
	int pathfd, fd;

	pathfd = reach_judged(rootfd, res, &st);
	if (pathfd < 0)
		return pathfd;
	fd = S_ISREG(st.st_mode) ? fsb_at_reopen_unblocked(pathfd, O_RDONLY | O_CLOEXEC | O_NOCTTY)
				 : -EINVAL;
	close(pathfd);
	return fd;
}

int fsb_grant_open(int rootfd, const struct fsb_resolved *res, int flags, mode_t mode,
		   fsb_grant_backup_fn backup, void *arg)
{
	int want_trunc = flags & O_TRUNC;
	struct stat st;
	int fd, err;

	flags = (flags & ~O_CLOEXEC) | O_CLOEXEC | O_NOCTTY;
	/* O_CREAT|O_EXCL promises a new file (lock files, mkstemp): anything
	 * already at the name, a dangling symlink included, is EEXIST. */
	if ((flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL) && res->exists)
		return -EEXIST;
	if (res->exists)
		fd = open_existing(rootfd, res, flags, backup, arg);
	else if (flags & O_CREAT)
		fd = fsb_at_open(rootfd, res->path, (flags & ~O_TRUNC) | O_EXCL, mode);
	else
		fd = -ENOENT;
	if (fd < 0 || !want_trunc || (flags & O_ACCMODE) == O_RDONLY)
		return fd;
	if (fstat(fd, &st) < 0) {
		err = -errno;
		goto fail;
	}
	if (S_ISREG(st.st_mode) && ftruncate(fd, 0) < 0) {
		err = -errno;
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return err;
}

int fsb_grant_undo_create(int rootfd, const struct fsb_resolved *res, int fd)
{
	struct stat mine, there;
	const char *name;
	int dirfd, err = 0;

	if (fstat(fd, &mine) < 0)
		return -errno;
	dirfd = fsb_at_open_parent(rootfd, res->path, &name);
	if (dirfd < 0)
		return dirfd;
	/* Only the file we made: another one swapped in under the name stays. */
	if (fstatat(dirfd, name, &there, AT_SYMLINK_NOFOLLOW) < 0)
		err = -errno;
	else if (there.st_dev != mine.st_dev || there.st_ino != mine.st_ino)
		err = -ESTALE;
	else if (unlinkat(dirfd, name, 0) < 0)
		err = -errno;
	close(dirfd);
	return err;
}
