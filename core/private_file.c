/*
 * private_file.c — read and write the core's own small files
 * (private_file.h).
 */
#include "private_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *fsb_private_file_read(const char *path, size_t max, size_t *len)
{
	struct stat st;
	size_t got = 0;
	char *buf;
	int fd;

	/* O_NOFOLLOW: the file itself, not wherever a link would lead. */
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022) != 0 || st.st_size <= 0 || (uint64_t)st.st_size > max ||
	    (buf = malloc((size_t)st.st_size + 1)) == NULL) {
		close(fd);
		return NULL;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (got != (size_t)st.st_size) {
		free(buf);
		return NULL;
	}
	buf[got] = '\0';
	*len = got;
	return buf;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int fsb_private_file_write(const char *path, const void *const *bufs, const size_t *lens,
			   size_t n)
{
	char tmp[4096 + 32];
	int fd, rc = 0;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= sizeof(tmp))
		return -ENAMETOOLONG;
	/* O_EXCL | O_NOFOLLOW: a name a crash left is not written through. */
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = write_all(fd, bufs[i], lens[i]);
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) < 0)
		rc = -errno;
	if (rc < 0)
		unlink(tmp);
	return rc;
}

struct kept {
	char *name;
	struct timespec mtime;
	bool stale;
};

/* Oldest first: the stale ones, then by mtime. */
static int older_first(const void *a, const void *b)
{
	const struct kept *x = a, *y = b;

	if (x->stale != y->stale)
		return x->stale ? -1 : 1;
	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

int fsb_private_dir_keep_newest(const char *dir,
				enum fsb_kept_kind (*kind_of)(const char *name, void *arg),
				void *arg, size_t keep)
{
	struct kept *set = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	int dfd, rc = 0;
	DIR *d;

	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	if ((d = fdopendir(dfd)) == NULL) {
		rc = -errno;
		close(dfd);
		return rc;
	}
	while ((e = readdir(d)) != NULL) {
		enum fsb_kept_kind kind = kind_of(e->d_name, arg);
		struct stat st;

		if (kind == FSB_KEPT_OTHER || strstr(e->d_name, ".tmp.") != NULL ||
		    fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (n == cap) {
			size_t ncap = cap ? 2 * cap : 16;
			struct kept *grown = realloc(set, ncap * sizeof(*set));

			if (grown == NULL) {
				rc = -ENOMEM;
				break;
			}
			set = grown;
			cap = ncap;
		}
		if ((set[n].name = strdup(e->d_name)) == NULL) {
			rc = -ENOMEM;
			break;
		}
		set[n].mtime = st.st_mtim;
		set[n].stale = kind == FSB_KEPT_STALE;
		n++;
	}
	/* Out of memory: nothing removed, rather than the wrong ones. */
	if (rc == 0 && n > keep) {
		qsort(set, n, sizeof(*set), older_first);
		for (size_t i = 0; i < n - keep; i++)
			unlinkat(dfd, set[i].name, 0);
	}
	for (size_t i = 0; i < n; i++)
		free(set[i].name);
	free(set);
	closedir(d);
	return rc;
}
