/*
 * fsbroker_zsh.c — the wrappers behind fsbroker_zsh.h in the patched zsh:
 * the files zsh itself opens, creates or removes for the user go to the
 * fsbroker core through the client library (clients/lib) when a broker is
 * configured, and to libc unchanged when none is (FSBROKER_SOCKET unset or
 * empty).
 *
 * How each call is brokered:
 *   - fsbzsh_open: the client library's fsbc_open. A write intent (`>`,
 *     `>>`, `>|`, `<>`) makes the core judge the path, back the file up and
 *     pass the descriptor it opened; a read (`<`, `$(<f)`, a sourced file, a
 *     script) asks first and opens only what the core allowed. The create
 *     mode goes less the umask, as open(2) applies it. The result is the
 *     lowest free descriptor, as open(2) gives it.
 *   - The shell's own descriptors by name (/dev/stdin, /dev/stdout,
 *     /dev/stderr, /dev/fd/N, /proc/self/fd/N): a pipe, a terminal or a
 *     socket behind N is reopened here (no file changes); a file or a
 *     directory is asked for under its real path. The core could not
 *     resolve these names itself: /proc/self there is the core.
 *   - fsbzsh_mkstemp: here-documents' temp files, created by the core with
 *     O_EXCL; fsbzsh_unlink removes such a file outright (deleteMode
 *     unlink), and any other name with the pack's delete mode.
 *   - fsbzsh_opendir: a read request for the directory, then fdopendir on
 *     the descriptor the core allowed (glob).
 *   - fsbzsh_chdir: the same read request, then fchdir on an O_PATH
 *     descriptor (cd, pushd): search permission suffices, as for chdir(2).
 *
 * Fail closed: any failure of the exchange is -1 with EIO and nothing done;
 * no wrapper falls back to libc once a broker is configured.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "fsbroker_zsh.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsbroker_client.h"

/* ------------------------------------------------------------------------ */
/* The reason of the last failure, for zsh's error message. */

static int pending_err;
static char pending_reason[512];

/* Before each brokered call: what an earlier one said is not about it. */
static void forget_reason(void)
{
	pending_err = 0;
	pending_reason[0] = '\0';
}

/* After a failed brokered call (errno set): keep what the core said. A
 * reason that only repeats the errno's text (the core's "DENY ENOENT No
 * such file or directory" for a missing file) adds nothing to zsh's own
 * message, which already says it: `. /missing` reads as in stock zsh. */
static void keep_reason(void)
{
	const char *r = fsbc_last_reason();
	int err = errno;

	if (fsbc_last_failure() != FSBC_OK && r[0] != '\0' &&
	    strcasecmp(r, strerror(err)) != 0) {
		pending_err = err;
		snprintf(pending_reason, sizeof(pending_reason), " (%s)", r);
	}
	errno = err;
}

/* A refusal made here, not by the core. */
static int fail_local(int err, const char *reason)
{
	pending_err = err;
	snprintf(pending_reason, sizeof(pending_reason), " (%s)", reason);
	errno = err;
	return -1;
}

const char *fsbzsh_reason(int err)
{
	static char shown[sizeof(pending_reason)];

	if (err == 0 || err != pending_err || pending_reason[0] == '\0')
		return "";
	memcpy(shown, pending_reason, sizeof(shown));
	forget_reason();
	return shown;
}

/* ------------------------------------------------------------------------ */
/* Descriptors 0-2 and the lowest free descriptor (as in clients/toybox). */

/*
 * While the client library works, none of 0, 1, 2 may be free: its
 * connection would take the free one, and a redirection that closed one
 * (`2>&- >file`) would find the broker's socket there. Each free one is
 * held by an O_PATH placeholder during the call.
 */
static unsigned stdio_hold(void)
{
	unsigned held = 0;

	for (int fd = 0; fd < 3; fd++) {
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
			int p = open("/dev/null", O_PATH | O_CLOEXEC);

			if (p == fd)
				held |= 1u << fd;
			else if (p >= 0)
				close(p);
		}
	}
	return held;
}

static void stdio_release(unsigned held)
{
	int err = errno;

	for (int fd = 0; fd < 3; fd++)
		if (held & (1u << fd))
			close(fd);
	errno = err;
}

/* open(2) gives the lowest free descriptor: move the core's there. */
static int lowest_fd(int fd)
{
	for (int low = 0; low < fd; low++) {
		if (fcntl(low, F_GETFD) < 0 && errno == EBADF) {
			int cloexec = fcntl(fd, F_GETFD) & FD_CLOEXEC;

			if (dup3(fd, low, cloexec ? O_CLOEXEC : 0) != low)
				break;
			close(fd);
			return low;
		}
	}
	return fd;
}

static mode_t current_umask(void)
{
	mode_t m = umask(0);

	umask(m);
	return m;
}

/* ------------------------------------------------------------------------ */
/* Opens. */

/* fsbc_open with 0-2 held, its failure's reason kept. */
static int ask_open(const char *path, int flags, mode_t mode)
{
	unsigned held;
	int fd;

	forget_reason();
	if (flags & O_CREAT)
		mode &= ~current_umask();
	held = stdio_hold();
	fd = fsbc_open(path, flags, mode & 07777);
	stdio_release(held);
	if (fd < 0) {
		keep_reason();
		return -1;
	}
	return lowest_fd(fd);
}

/* The descriptor number `path` names as one of the shell's own
 * (/dev/stdout, /dev/fd/3, /proc/self/fd/3), or -1. */
static int own_descriptor_name(const char *path)
{
	static const char *const std[] = { "/dev/stdin", "/dev/stdout", "/dev/stderr" };
	const char *num = NULL;
	char *end;
	long n;

	for (int i = 0; i < 3; i++)
		if (strcmp(path, std[i]) == 0)
			return i;
	if (strncmp(path, "/dev/fd/", 8) == 0)
		num = path + 8;
	else if (strncmp(path, "/proc/self/fd/", 14) == 0)
		num = path + 14;
	if (num == NULL || *num < '0' || *num > '9')
		return -1;
	errno = 0;
	n = strtol(num, &end, 10);
	if (errno != 0 || *end != '\0' || n > INT_MAX)
		return -1;
	return (int)n;
}

/*
 * Open one of the shell's own descriptors by name. Not a file (a pipe, a
 * terminal, a socket): reopened here, as the kernel would, changing no
 * file. A file or a directory: asked for under the path it has.
 */
static int open_own_descriptor(int n, const char *path, int flags, mode_t mode)
{
	char link[64], real[PATH_MAX];
	struct stat st;
	ssize_t len;

	if (fstat(n, &st) < 0)
		return open(path, flags, mode);	/* not open: the kernel's ENOENT */
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return open(path, flags, mode);
	snprintf(link, sizeof(link), "/proc/self/fd/%d", n);
	len = readlink(link, real, sizeof(real) - 1);
	if (len < 0)
		return -1;
	real[len] = '\0';
	if (real[0] != '/' || (len > 10 && strcmp(real + len - 10, " (deleted)") == 0))
		return fail_local(EACCES, "the file behind this descriptor has no path to ask for");
	return ask_open(real, flags, mode);
}

int fsbzsh_open(const char *path, int flags, ...)
{
	mode_t mode = 0;
	int own;

	/* O_TMPFILE holds O_DIRECTORY's bit: only all of it takes a mode. */
	if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) {
		va_list ap;

		va_start(ap, flags);
		mode = (mode_t)va_arg(ap, int);
		va_end(ap);
	}
	if (!fsbc_configured())
		return open(path, flags, mode);
	if (path == NULL) {
		errno = EFAULT;
		return -1;
	}
	/* Inside `fsbroker run` with reads = "mask" a read is the kernel's,
	 * unasked: the sandbox hides what the pack keeps from being read
	 * (docs/clients.md). */
	if (!fsbc_open_writes(flags) && fsbc_reads_local()) {
		forget_reason();
		return open(path, flags, mode);
	}
	if ((own = own_descriptor_name(path)) >= 0)
		return open_own_descriptor(own, path, flags, mode);
	return ask_open(path, flags, mode);
}

/* ------------------------------------------------------------------------ */
/* Temp files this process made: removed outright, not trashed. */

#define OWN_TEMPS 8
static char *own_temps[OWN_TEMPS];

static void temp_remember(const char *path)
{
	for (int i = 0; i < OWN_TEMPS; i++) {
		if (own_temps[i] == NULL) {
			own_temps[i] = strdup(path);
			return;
		}
	}
}

/* True (and forgotten) when `path` is one of ours. */
static bool temp_take(const char *path)
{
	for (int i = 0; i < OWN_TEMPS; i++) {
		if (own_temps[i] != NULL && strcmp(own_temps[i], path) == 0) {
			free(own_temps[i]);
			own_temps[i] = NULL;
			return true;
		}
	}
	return false;
}

int fsbzsh_mkstemp(char *template)
{
	int fd;

	if (!fsbc_configured())
		return mkstemp(template);
	fd = fsbc_mkstemp(template, ask_open);
	if (fd >= 0)
		temp_remember(template);
	return fd;
}

int fsbzsh_unlink(const char *path)
{
	struct fsbc_hostop op = { .op = FSBC_OP_DELETE, .path = path, .mode = -1 };
	struct stat st;
	unsigned held;
	int rc;

	if (!fsbc_configured())
		return unlink(path);
	forget_reason();
	if (path == NULL) {
		errno = EFAULT;
		return -1;
	}
	if (temp_take(path)) {
		op.delete_mode = FSBC_DELETE_UNLINK;
	} else {
		/* unlink(2) never removes a directory. */
		if (lstat(path, &st) < 0)
			return -1;
		if (S_ISDIR(st.st_mode)) {
			errno = EISDIR;
			return -1;
		}
	}
	held = stdio_hold();
	rc = fsbc_host_op(&op, NULL);
	stdio_release(held);
	if (rc < 0)
		keep_reason();
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Directories: glob's reads and cd. */

DIR *fsbzsh_opendir(const char *path)
{
	DIR *d;
	int fd;

	if (!fsbc_configured())
		return opendir(path);
	fd = fsbzsh_open(path, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
	/* glob says nothing about a directory it cannot read: neither may a
	 * later, unrelated message borrow this reason. */
	forget_reason();
	if (fd < 0)
		return NULL;
	if ((d = fdopendir(fd)) == NULL) {
		int err = errno;

		close(fd);
		errno = err;
	}
	return d;
}

int fsbzsh_chdir(const char *path)
{
	int fd, rc, err;

	if (!fsbc_configured())
		return chdir(path);
	/* O_PATH: entering a directory needs search permission on it, not
	 * read permission, and fchdir checks that, as chdir(2) would. */
	fd = fsbzsh_open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	rc = fchdir(fd);
	err = errno;
	close(fd);
	errno = err;
	return rc;
}
