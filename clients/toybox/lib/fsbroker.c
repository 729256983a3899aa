/*
 * lib/fsbroker.c — the wrappers behind lib/fsbroker.h in the patched
 * toybox: every file-changing call toybox makes goes to the fsbroker core
 * through the client library (clients/lib) when a broker is configured, and
 * to libc unchanged when none is (FSBROKER_SOCKET unset or empty).
 *
 * Copied into toybox's tree as lib/fsbroker.c, so toybox's own build
 * compiles it with the rest of lib/; the binary links
 * build/clients/libfsbclient.a.
 *
 * How each call is brokered:
 *   - opens (open, openat, creat, fopen, freopen, mkstemp, truncate): the
 *     client library's fsbc_open. A write intent makes the core judge the
 *     path, back the file up and pass the descriptor it opened; a read asks
 *     first and opens only what the core allowed. The create mode is given
 *     less the umask, as open(2) would apply it.
 *   - rename/renameat: a host rename (EXDEV stays EXDEV: mv copies and
 *     deletes instead).
 *   - unlink/unlinkat/rmdir: a host delete (the pack's delete mode, the
 *     trash by default). A temp file this process made itself with mkstemp
 *     is removed outright. rmdir sends the name with a trailing '/', so the
 *     core refuses a file with ENOTDIR; unlink refuses a directory with
 *     EISDIR itself, as unlink(2) does.
 *   - mkdir/mkdirat, link/linkat, symlink/symlinkat, chmod/fchmodat: the
 *     host operations of the same name. mkdir of a name that exists answers
 *     EEXIST without asking (mkdir -p walks over existing parents outside
 *     the workspace).
 *   - utimensat: a host touch (judged, backed up, audited); explicit times
 *     are then set through a descriptor the core allowed to be opened.
 *   - mknod/mknodat/mkfifo: the protocol has no such operation: EPERM.
 *
 * A name relative to a directory descriptor (the *at calls toybox's tree
 * walks use) is sent as that directory's path, read from /proc/self/fd, and
 * the name: the core resolves the result again in any case.
 *
 * Fail closed: any failure of the exchange is -1 with EIO and nothing done;
 * no wrapper falls back to libc once a broker is configured.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define FSBTB_IMPLEMENTATION
#include "fsbroker.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsbroker_client.h"

/* ------------------------------------------------------------------------ */
/* Error text. */

/* A refusal made here, not by the core (mknod), with its reason. */
static int local_errno;
static const char *local_reason;

static int fail_local(int err, const char *reason)
{
	local_errno = err;
	local_reason = reason;
	errno = err;
	return -1;
}

const char *fsbtb_strerror(int err)
{
	static char buf[768];

	if (!fsbc_configured())
		return strerror(err);
	if (local_reason != NULL && err == local_errno) {
		snprintf(buf, sizeof(buf), "%s (%s)", strerror(err), local_reason);
		return buf;
	}
	return fsbc_strerror(err, buf, sizeof(buf));
}

/* Before each brokered call: a reason from an earlier local refusal does
 * not belong to what follows. */
static void clear_local(void)
{
	local_reason = NULL;
	local_errno = 0;
}

/* ------------------------------------------------------------------------ */
/* Fallback to the system's command, for the dispatcher. */

int fsbtb_parsing_args;
static bool fallback_wanted;

void fsbtb_fallback_init(void)
{
	const char *v = getenv("FSBROKER_TOYBOX_FALLBACK");

	fallback_wanted = v != NULL && *v != '\0';
	/* Not for the commands this one runs (find -exec, xargs). */
	unsetenv("FSBROKER_TOYBOX_FALLBACK");
}

void fsbtb_unsupported(void)
{
	if (fallback_wanted)
		_exit(FSBTB_UNSUPPORTED_EXIT);
}

/* ------------------------------------------------------------------------ */
/* Descriptors 0-2 and the lowest free descriptor. */

/*
 * While the client library works, none of 0, 1, 2 may be free: its
 * connection would take the free one, and a program that closed stderr to
 * open /dev/null in its place (grep -s) would find the broker's socket
 * there. Each free one is held by an O_PATH placeholder during the call.
 */
static unsigned stdio_hold(void)
{
	unsigned held = 0;

	for (int fd = 0; fd < 3; fd++) {
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
			/* The lowest free descriptor: this one. */
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

/* A library call made with 0-2 held. */
#define GUARDED(call)                                 \
	__extension__({                               \
		unsigned held_ = stdio_hold();        \
		int rc_ = (call);                     \
		stdio_release(held_);                 \
		rc_;                                  \
	})

/* open(2) gives the lowest free descriptor (close(2); open() is how a
 * program puts a file on stderr): move the core's descriptor there. */
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

/* ------------------------------------------------------------------------ */
/* Paths. */

static mode_t current_umask(void)
{
	mode_t m = umask(0);

	umask(m);
	return m;
}

/*
 * The path `name` means relative to `dirfd`, into `out`: the name itself
 * when it is absolute or dirfd is AT_FDCWD (the client library makes it
 * absolute), else the directory's path and the name. 0, or -1 with errno.
 */
static int at_path(int dirfd, const char *name, char *out, size_t size)
{
	char link[64], dir[PATH_MAX];
	ssize_t n;

	if (name == NULL) {
		errno = EFAULT;
		return -1;
	}
	if (name[0] == '/' || dirfd == AT_FDCWD) {
		if (strlen(name) >= size) {
			errno = ENAMETOOLONG;
			return -1;
		}
		strcpy(out, name);
		return 0;
	}
	if (name[0] == '\0') {
		errno = ENOENT;
		return -1;
	}
	snprintf(link, sizeof(link), "/proc/self/fd/%d", dirfd);
	n = readlink(link, dir, sizeof(dir) - 1);
	if (n < 0) {
		if (errno == ENOENT)
			errno = EBADF;
		return -1;
	}
	dir[n] = '\0';
	/* A pipe, a socket, a deleted directory: no path to send. */
	if (dir[0] != '/' || (n > 10 && strcmp(dir + n - 10, " (deleted)") == 0)) {
		errno = ENOTDIR;
		return -1;
	}
	if ((size_t)snprintf(out, size, "%s/%s", strcmp(dir, "/") == 0 ? "" : dir, name) >=
	    size) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/* The last component of `path`, ignoring trailing slashes, is "." or "..". */
static bool ends_in_dot(const char *path, bool *dotdot)
{
	size_t n = strlen(path);
	size_t end, start;

	while (n > 1 && path[n - 1] == '/')
		n--;
	end = n;
	start = end;
	while (start > 0 && path[start - 1] != '/')
		start--;
	*dotdot = end - start == 2 && strncmp(path + start, "..", 2) == 0;
	return (end - start == 1 && path[start] == '.') || *dotdot;
}

/* ------------------------------------------------------------------------ */
/* Temp files this process made (mkstemp): removed outright, not trashed. */

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

/* ------------------------------------------------------------------------ */
/* Opens. */

static int brokered_open(const char *path, int flags, mode_t mode)
{
	clear_local();
	if (path == NULL) {
		errno = EFAULT;
		return -1;
	}
	if (flags & O_CREAT)
		mode &= ~current_umask();
	return lowest_fd(GUARDED(fsbc_open(path, flags, mode & 07777)));
}

/* A read inside `fsbroker run` with reads = "mask": the sandbox hides what
 * the pack keeps from being read, so the open is the kernel's, unasked, as
 * for every other program there (docs/clients.md). */
static bool read_unasked(int flags)
{
	if (fsbc_open_writes(flags) || !fsbc_reads_local())
		return false;
	clear_local();
	return true;
}

static mode_t va_mode(int flags, va_list ap)
{
	/* O_TMPFILE holds O_DIRECTORY's bit: test all of its bits, or a plain
	 * O_DIRECTORY open would read a mode nobody passed. */
	if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE)
		return (mode_t)va_arg(ap, int);
	return 0;
}

int fsbtb_open(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = va_mode(flags, ap);
	va_end(ap);
	if (!fsbc_configured() || read_unasked(flags))
		return open(path, flags, mode);
	return brokered_open(path, flags, mode);
}

int fsbtb_openat(int dirfd, const char *path, int flags, ...)
{
	char full[PATH_MAX];
	va_list ap;
	mode_t mode;

	va_start(ap, flags);
	mode = va_mode(flags, ap);
	va_end(ap);
	if (!fsbc_configured() || read_unasked(flags))
		return openat(dirfd, path, flags, mode);
	if (at_path(dirfd, path, full, sizeof(full)) < 0)
		return -1;
	return brokered_open(full, flags, mode);
}

int fsbtb_creat(const char *path, mode_t mode)
{
	return fsbtb_open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
}

/* fopen's mode string as open(2) flags; -1 when it is not one. */
static int fopen_flags(const char *mode)
{
	int flags;

	switch (mode[0]) {
	case 'r':
		flags = O_RDONLY;
		break;
	case 'w':
		flags = O_WRONLY | O_CREAT | O_TRUNC;
		break;
	case 'a':
		flags = O_WRONLY | O_CREAT | O_APPEND;
		break;
	default:
		return -1;
	}
	for (const char *m = mode + 1; *m != '\0' && *m != ','; m++) {
		if (*m == '+')
			flags = (flags & ~O_ACCMODE) | O_RDWR;
		else if (*m == 'e')
			flags |= O_CLOEXEC;
		else if (*m == 'x')
			flags |= O_EXCL;
	}
	return flags;
}

FILE *fsbtb_fopen(const char *path, const char *mode)
{
	FILE *f;
	int flags, fd;

	if (!fsbc_configured())
		return fopen(path, mode);
	if ((flags = fopen_flags(mode)) < 0) {
		errno = EINVAL;
		return NULL;
	}
	if (read_unasked(flags))
		return fopen(path, mode);
	if ((fd = brokered_open(path, flags, 0666)) < 0)
		return NULL;
	if ((f = fdopen(fd, mode)) == NULL) {
		int err = errno;

		close(fd);
		errno = err;
	}
	return f;
}

/* The stream keeps its FILE and its descriptor number; the file behind the
 * number is the one the core opened. */
FILE *fsbtb_freopen(const char *path, const char *mode, FILE *stream)
{
	int flags, fd, target;

	if (!fsbc_configured() || path == NULL)
		return freopen(path, mode, stream);
	if ((flags = fopen_flags(mode)) < 0) {
		errno = EINVAL;
		return NULL;
	}
	if ((target = fileno(stream)) < 0)
		return NULL;
	if ((fd = brokered_open(path, flags, 0666)) < 0)
		return NULL;
	fflush(stream);
	if (fd != target && dup3(fd, target, flags & O_CLOEXEC) < 0) {
		int err = errno;

		close(fd);
		errno = err;
		return NULL;
	}
	if (fd != target)
		close(fd);
	clearerr(stream);
	return stream;
}

int fsbtb_mkstemp(char *template)
{
	int fd;

	if (!fsbc_configured())
		return mkstemp(template);
	fd = fsbc_mkstemp(template, brokered_open);
	if (fd >= 0)
		temp_remember(template);
	return fd;
}

int fsbtb_truncate(const char *path, off_t length)
{
	int fd, rc, err;

	if (!fsbc_configured())
		return truncate(path, length);
	if ((fd = brokered_open(path, O_WRONLY | O_CLOEXEC, 0)) < 0)
		return -1;
	rc = ftruncate(fd, length);
	err = errno;
	close(fd);
	errno = err;
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Names: rename, delete, mkdir, links, chmod, times. */

int fsbtb_rename(const char *from, const char *to)
{
	if (!fsbc_configured())
		return rename(from, to);
	clear_local();
	if (GUARDED(fsbc_rename(from, to)) < 0)
		return -1;
	temp_take(from);
	return 0;
}

int fsbtb_renameat(int fromfd, const char *from, int tofd, const char *to)
{
	char f[PATH_MAX], t[PATH_MAX];

	if (!fsbc_configured())
		return renameat(fromfd, from, tofd, to);
	if (at_path(fromfd, from, f, sizeof(f)) < 0 || at_path(tofd, to, t, sizeof(t)) < 0)
		return -1;
	return fsbtb_rename(f, t);
}

static int host_delete(const char *path)
{
	struct fsbc_hostop op = { .op = FSBC_OP_DELETE, .path = path, .mode = -1 };

	clear_local();
	if (temp_take(path))
		op.delete_mode = FSBC_DELETE_UNLINK;
	return GUARDED(fsbc_host_op(&op, NULL));
}

/* unlink(2) of a brokered path: never a directory. */
static int delete_nondir(const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return -1;
	if (S_ISDIR(st.st_mode)) {
		errno = EISDIR;
		return -1;
	}
	return host_delete(path);
}

/* rmdir(2) of a brokered path: only a directory, only an empty one. */
static int delete_dir(const char *path)
{
	char slashed[PATH_MAX + 1];
	size_t n = strlen(path);
	bool dotdot;

	if (n == 0) {
		errno = ENOENT;
		return -1;
	}
	if (ends_in_dot(path, &dotdot)) {
		errno = dotdot ? ENOTEMPTY : EINVAL;
		return -1;
	}
	if (n >= sizeof(slashed) - 1) {
		errno = ENAMETOOLONG;
		return -1;
	}
	/* The trailing '/' says "a directory": a file is ENOTDIR. */
	memcpy(slashed, path, n);
	if (path[n - 1] != '/')
		slashed[n++] = '/';
	slashed[n] = '\0';
	return host_delete(slashed);
}

int fsbtb_unlink(const char *path)
{
	if (!fsbc_configured())
		return unlink(path);
	return delete_nondir(path);
}

int fsbtb_rmdir(const char *path)
{
	if (!fsbc_configured())
		return rmdir(path);
	return delete_dir(path);
}

int fsbtb_unlinkat(int dirfd, const char *path, int flags)
{
	char full[PATH_MAX];

	if (!fsbc_configured())
		return unlinkat(dirfd, path, flags);
	if (at_path(dirfd, path, full, sizeof(full)) < 0)
		return -1;
	return (flags & AT_REMOVEDIR) ? delete_dir(full) : delete_nondir(full);
}

int fsbtb_mkdir(const char *path, mode_t mode)
{
	struct stat st;
	mode_t want;

	if (!fsbc_configured())
		return mkdir(path, mode);
	clear_local();
	/* As the kernel: a name that exists is EEXIST, whoever may write the
	 * directory it is in (mkdir -p passes every parent). */
	if (path != NULL && lstat(path, &st) == 0) {
		errno = EEXIST;
		return -1;
	}
	want = mode & ~current_umask() & 07777;
	if (GUARDED(fsbc_mkdir(path, want, false)) < 0)
		return -1;
	/* The core made it with its own umask too: the bits asked for, as
	 * mkdir(2) would give them (a setgid inherited from the parent stays). */
	if (stat(path, &st) == 0 && (st.st_mode & 01777) != (want & 01777) &&
	    GUARDED(fsbc_chmod(path, (st.st_mode & 06000) | (want & 01777))) < 0)
		return -1;
	return 0;
}

int fsbtb_mkdirat(int dirfd, const char *path, mode_t mode)
{
	char full[PATH_MAX];

	if (!fsbc_configured())
		return mkdirat(dirfd, path, mode);
	if (at_path(dirfd, path, full, sizeof(full)) < 0)
		return -1;
	return fsbtb_mkdir(full, mode);
}

int fsbtb_link(const char *from, const char *to)
{
	if (!fsbc_configured())
		return link(from, to);
	clear_local();
	return GUARDED(fsbc_link(from, to));
}

int fsbtb_linkat(int fromfd, const char *from, int tofd, const char *to, int flags)
{
	char f[PATH_MAX], t[PATH_MAX];

	if (!fsbc_configured())
		return linkat(fromfd, from, tofd, to, flags);
	if (flags & AT_EMPTY_PATH)
		return fail_local(EOPNOTSUPP, "a link of a descriptor is not brokered");
	if (at_path(fromfd, from, f, sizeof(f)) < 0 || at_path(tofd, to, t, sizeof(t)) < 0)
		return -1;
	return fsbtb_link(f, t);
}

int fsbtb_symlink(const char *target, const char *linkpath)
{
	if (!fsbc_configured())
		return symlink(target, linkpath);
	clear_local();
	return GUARDED(fsbc_symlink(target, linkpath));
}

int fsbtb_symlinkat(const char *target, int dirfd, const char *linkpath)
{
	char full[PATH_MAX];

	if (!fsbc_configured())
		return symlinkat(target, dirfd, linkpath);
	if (at_path(dirfd, linkpath, full, sizeof(full)) < 0)
		return -1;
	return fsbtb_symlink(target, full);
}

int fsbtb_chmod(const char *path, mode_t mode)
{
	if (!fsbc_configured())
		return chmod(path, mode);
	clear_local();
	return GUARDED(fsbc_chmod(path, mode & 07777));
}

int fsbtb_fchmodat(int dirfd, const char *path, mode_t mode, int flags)
{
	char full[PATH_MAX];

	if (!fsbc_configured())
		return fchmodat(dirfd, path, mode, flags);
	if (flags & AT_SYMLINK_NOFOLLOW)
		return fail_local(EOPNOTSUPP, "the mode of a symlink itself is not brokered");
	if (at_path(dirfd, path, full, sizeof(full)) < 0)
		return -1;
	return fsbtb_chmod(full, mode);
}

static bool both_now(const struct timespec t[2])
{
	return t == NULL || (t[0].tv_nsec == UTIME_NOW && t[1].tv_nsec == UTIME_NOW);
}

int fsbtb_utimensat(int dirfd, const char *path, const struct timespec times[2], int flags)
{
	char full[PATH_MAX];
	struct timespec want[2];
	struct stat st;
	int fd, rc, err;

	/* No path: the times of dirfd itself, a descriptor already granted. */
	if (!fsbc_configured() || path == NULL)
		return utimensat(dirfd, path, times, flags);
	if (at_path(dirfd, path, full, sizeof(full)) < 0)
		return -1;
	/* utimensat(2) never creates: a missing name is ENOENT, not a touch. */
	if (fstatat(AT_FDCWD, full, &st, flags & AT_SYMLINK_NOFOLLOW) < 0)
		return -1;
	/* A symlink's own times (cp -a, touch -h): the core's touch would
	 * follow it. The link's times change no file: set them here. */
	if (S_ISLNK(st.st_mode))
		return utimensat(AT_FDCWD, full, times, flags);
	clear_local();
	if (GUARDED(fsbc_touch(full)) < 0)
		return -1;
	if (both_now(times))
		return 0;
	/* Explicit times (touch -d, cp -p): both are now after the touch;
	 * put the ones asked for, and back the omitted ones as they were. */
	want[0] = times[0].tv_nsec == UTIME_OMIT ? st.st_atim : times[0];
	want[1] = times[1].tv_nsec == UTIME_OMIT ? st.st_mtim : times[1];
	if ((fd = GUARDED(fsbc_open(full, O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0))) < 0)
		return -1;
	rc = futimens(fd, want);
	err = errno;
	close(fd);
	errno = err;
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Special files: no host operation makes them. */

static const char no_mknod[] = "device nodes and FIFOs are not made through the broker";

int fsbtb_mknod(const char *path, mode_t mode, dev_t dev)
{
	if (!fsbc_configured())
		return mknod(path, mode, dev);
	return fail_local(EPERM, no_mknod);
}

int fsbtb_mknodat(int dirfd, const char *path, mode_t mode, dev_t dev)
{
	if (!fsbc_configured())
		return mknodat(dirfd, path, mode, dev);
	return fail_local(EPERM, no_mknod);
}

int fsbtb_mkfifo(const char *path, mode_t mode)
{
	if (!fsbc_configured())
		return mkfifo(path, mode);
	return fail_local(EPERM, no_mknod);
}
