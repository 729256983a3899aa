/*
 * fsbc_path.c — the path a client sends: absolute (joined to the current
 * directory) and normalised lexically. The core resolves it again, symlinks
 * and all, in the requester's view; this only gives it a well-formed
 * absolute path that says what the command meant.
 */
/* Built by other projects' makefiles too (toybox, zsh): ask for what it
 * uses (MSG_CMSG_CLOEXEC, asprintf, PATH_MAX) whatever they define. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsbc_internal.h"

/* The current directory as the kernel knows it (the physical path, which
 * is what a relative open would start from), in a malloc'd string. */
static char *current_dir(int *err)
{
	size_t size = PATH_MAX;

	for (;;) {
		char *buf = malloc(size);

		if (buf == NULL) {
			*err = ENOMEM;
			return NULL;
		}
		if (getcwd(buf, size) != NULL)
			return buf;
		*err = errno;
		free(buf);
		if (*err != ERANGE || size >= 16 * PATH_MAX)
			return NULL;
		size *= 2;
	}
}

int fsbc__path_absolute(const char *path, char *out, size_t size)
{
	char *cwd = NULL;
	const char *parts[2];
	size_t len = 1;
	bool want_dir = false;
	int err = 0;

	if (path == NULL || path[0] == '\0')
		return -ENOENT;
	if (size < 2)
		return -ENAMETOOLONG;
	if (path[0] != '/') {
		if ((cwd = current_dir(&err)) == NULL)
			return -err;
		/* getcwd() says "(unreachable)/..." on some libcs for a
		 * directory outside the root: no absolute path to send. */
		if (cwd[0] != '/') {
			free(cwd);
			return -ENOENT;
		}
	}
	parts[0] = cwd != NULL ? cwd : "";
	parts[1] = path;
	out[0] = '/';
	out[1] = '\0';
	for (int i = 0; i < 2; i++) {
		const char *p = parts[i];

		while (*p != '\0') {
			const char *end = strchr(p, '/');
			size_t n = end != NULL ? (size_t)(end - p) : strlen(p);

			want_dir = false;
			if (n == 0 || (n == 1 && p[0] == '.')) {
				want_dir = n == 1 && i == 1;
			} else if (n == 2 && p[0] == '.' && p[1] == '.') {
				/* Back to the previous '/': never above the root. */
				while (len > 1 && out[len - 1] != '/')
					len--;
				if (len > 1)
					len--;
				out[len] = '\0';
				want_dir = i == 1;
			} else {
				if (len + (len > 1) + n >= size) {
					free(cwd);
					return -ENAMETOOLONG;
				}
				if (len > 1)
					out[len++] = '/';
				memcpy(out + len, p, n);
				len += n;
				out[len] = '\0';
			}
			if (end == NULL)
				break;
			p = end + 1;
			/* A name followed by "/" must be a directory. */
			if (*p == '\0' && i == 1)
				want_dir = true;
		}
	}
	free(cwd);
	if (want_dir && len > 1) {
		if (len + 1 >= size)
			return -ENAMETOOLONG;
		out[len++] = '/';
		out[len] = '\0';
	}
	return 0;
}
