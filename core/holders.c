/*
 * holders.c — find writable fds on given inodes in /proc (see holders.h).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "holders.h"

/* The open flags of fd `name` of the process whose /proc dir is `pidfd`,
 * from its fdinfo ("flags:\t0100002"); -1 when it cannot be read. */
static long fd_flags(int pidfd, const char *name)
{
	char path[64], buf[256], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "fdinfo/%s", name);
	fd = openat(pidfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strstr(buf, "flags:");
	return p != NULL ? strtol(p + 6, NULL, 8) : -1;
}

static void scan_process(int pidfd, const struct fsb_inode_id *inodes, size_t n, bool *held)
{
	struct dirent *de;
	struct stat st;
	DIR *d;
	int fd;

	fd = openat(pidfd, "fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		long flags;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		/* Follows the magic link to the open file itself. */
		if (fstatat(dirfd(d), de->d_name, &st, 0) < 0 || !S_ISREG(st.st_mode))
			continue;
		for (size_t i = 0; i < n; i++) {
			if (held[i] || inodes[i].dev != st.st_dev || inodes[i].ino != st.st_ino)
				continue;
			flags = fd_flags(pidfd, de->d_name);
			if (flags >= 0 && (flags & O_ACCMODE) != O_RDONLY)
				held[i] = true;
		}
	}
	closedir(d);
}

int fsb_holders_writable(const struct fsb_inode_id *inodes, size_t n, bool *held)
{
	char self[16];
	struct dirent *de;
	DIR *proc;
	int pidfd;

	for (size_t i = 0; i < n; i++)
		held[i] = false;
	if (n == 0)
		return 0;
	if ((proc = opendir("/proc")) == NULL) {
		for (size_t i = 0; i < n; i++)
			held[i] = true;
		return -errno;
	}
	snprintf(self, sizeof(self), "%d", (int)getpid());
	while ((de = readdir(proc)) != NULL) {
		if (!isdigit((unsigned char)de->d_name[0]) || strcmp(de->d_name, self) == 0)
			continue;
		pidfd = openat(dirfd(proc), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (pidfd < 0)
			continue;	/* gone, or not ours to look at */
		scan_process(pidfd, inodes, n, held);
		close(pidfd);
	}
	closedir(proc);
	return 0;
}
