/*
 * at.c — race-safe ways to reach a judged path (see at.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "at.h"

int fsb_at_open(int rootfd, const char *path, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (unsigned)flags | O_CLOEXEC,
		.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	const char *rel = path[0] == '/' ? path + 1 : path;
	long fd;

	if (rel[0] == '\0')
		rel = ".";
	do
		fd = syscall(SYS_openat2, rootfd, rel, &how, sizeof(how));
	while (fd < 0 && errno == EINTR);
	return fd < 0 ? -errno : (int)fd;
}

int fsb_at_open_parent(int rootfd, const char *path, const char **name)
{
	const char *slash = strrchr(path, '/');
	char parent[PATH_MAX];
	size_t len;
	int fd;

	if (slash == NULL || slash[1] == '\0')
		return -EINVAL;
	len = (size_t)(slash - path);
	if (len >= sizeof(parent))
		return -ENAMETOOLONG;
	memcpy(parent, path, len);
	parent[len] = '\0';
	*name = slash + 1;
	fd = fsb_at_open(rootfd, len == 0 ? "/" : parent, O_RDONLY | O_DIRECTORY, 0);
	if (fd == -EACCES)
		fd = fsb_at_open(rootfd, len == 0 ? "/" : parent, O_PATH | O_DIRECTORY, 0);
	return fd;
}

int fsb_at_reach(int rootfd, const struct fsb_resolved *res, struct stat *st)
{
	int fd, err;

	fd = fsb_at_open(rootfd, res->path, O_PATH | O_NOFOLLOW, 0);
	if (fd < 0)
		return fd == -ENOENT || fd == -ELOOP ? -EAGAIN : fd;
	if (fstat(fd, st) < 0) {
		err = -errno;
		goto fail;
	}
	if (st->st_dev != res->st.st_dev || st->st_ino != res->st.st_ino) {
		err = -EAGAIN;
		goto fail;
	}
	/* O_PATH|O_NOFOLLOW opens a final symlink itself. */
	if (S_ISLNK(st->st_mode)) {
		err = -ELOOP;
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return err;
}

char *fsb_at_fd_path(int fd, char *buf, size_t len)
{
	snprintf(buf, len, "/proc/self/fd/%d", fd);
	return buf;
}

int fsb_at_reopen(int fd, int flags)
{
	char proc[32];
	int rfd;

	fsb_at_fd_path(fd, proc, sizeof(proc));
	do
		rfd = open(proc, flags | O_CLOEXEC);
	while (rfd < 0 && errno == EINTR);
	return rfd < 0 ? -errno : rfd;
}

int fsb_at_reopen_unblocked(int fd, int flags)
{
	int rfd = fsb_at_reopen(fd, flags | O_NONBLOCK), fl;

	if (rfd < 0 || (flags & O_NONBLOCK))
		return rfd;
	if ((fl = fcntl(rfd, F_GETFL)) < 0 || fcntl(rfd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
		int err = -errno;

		close(rfd);
		return err;
	}
	return rfd;
}
