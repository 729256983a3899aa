/*
 * fsb_fault.c — a fault injector for the core under test, loaded with
 * LD_PRELOAD (build/tests/faultinject/fsb_fault.so). It wraps the libc
 * calls that change files and, on the Nth matching call, makes one fail
 * with a chosen errno or kills the whole process with SIGKILL.
 *
 *   FSB_FAULT=CALL:ACTION:N[:MATCH][,CALL:ACTION:N[:MATCH]...]
 *     CALL    write pwrite copy_file_range fsync fdatasync ftruncate
 *             renameat renameat2 linkat unlinkat symlinkat mkdirat, or
 *             "any" for every one of them (counted together, in order)
 *     ACTION  an errno name (EIO, ENOSPC, EDQUOT, EROFS, EMFILE): the call
 *             is not made and fails with it; KILL: SIGKILL before the
 *             call is made; KILLAFTER: SIGKILL right after it returned;
 *             HOLD: the call waits while the file FSB_FAULT_HOLD exists,
 *             then is made (a test holds a backup in progress)
 *     N       the Nth matching call (1 = the first); "N+" for the Nth and
 *             every later one
 *     MATCH   only calls whose path contains this string count (the path
 *             of the fd from /proc/self/fd, or of dirfd plus the name)
 *   FSB_FAULT_ARM=PATH   calls count only while PATH exists, so the test
 *                        arms the injector once the core is ready
 *   FSB_FAULT_LOG=PATH   each fault appends "CALL N ACTION PATH" there
 *   FSB_FAULT_HOLD=PATH  what HOLD waits on: the test removes it to let go
 *
 * Only regular files and directories count (fds 0-2, sockets and pipes
 * never do): the core's log, its control channel and its clients are left
 * alone. It is built without sanitizers and needs nothing but libc.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_SPECS 8

struct spec {
	char call[32];
	int err;		/* > 0: fail with it */
	int kill;		/* 1: before the call, 2: after it */
	bool hold;		/* wait while hold_path exists */
	long n;
	bool onward;
	char match[256];
	atomic_long seen;
};

static struct spec specs[MAX_SPECS];
static int nspecs = -1;		/* -1: not parsed yet */
static const char *arm_path, *log_path, *hold_path;
static pthread_once_t parsed = PTHREAD_ONCE_INIT;

static const struct {
	const char *name;
	int err;
} errnos[] = {
	{ "EIO", EIO }, { "ENOSPC", ENOSPC }, { "EDQUOT", EDQUOT }, { "EROFS", EROFS },
	{ "EMFILE", EMFILE }, { "ENOMEM", ENOMEM }, { "EPERM", EPERM }, { "EINTR", EINTR },
};

static void parse(void)
{
	const char *env = getenv("FSB_FAULT");
	char buf[2048], *save = NULL;

	arm_path = getenv("FSB_FAULT_ARM");
	log_path = getenv("FSB_FAULT_LOG");
	hold_path = getenv("FSB_FAULT_HOLD");
	nspecs = 0;
	if (env == NULL)
		return;
	snprintf(buf, sizeof(buf), "%s", env);
	for (char *tok = strtok_r(buf, ",", &save); tok != NULL && nspecs < MAX_SPECS;
	     tok = strtok_r(NULL, ",", &save)) {
		struct spec *s = &specs[nspecs];
		char *f[4] = { NULL }, *p = tok;
		int nf = 0;

		while (nf < 4 && p != NULL) {
			f[nf++] = p;
			p = nf < 4 ? strchr(p, ':') : NULL;
			if (p != NULL)
				*p++ = '\0';
		}
		if (nf < 3)
			continue;
		snprintf(s->call, sizeof(s->call), "%s", f[0]);
		if (strcmp(f[1], "KILL") == 0)
			s->kill = 1;
		else if (strcmp(f[1], "KILLAFTER") == 0)
			s->kill = 2;
		else if (strcmp(f[1], "HOLD") == 0)
			s->hold = true;
		for (size_t i = 0; i < sizeof(errnos) / sizeof(errnos[0]); i++)
			if (strcmp(f[1], errnos[i].name) == 0)
				s->err = errnos[i].err;
		if (s->kill == 0 && s->err == 0 && !s->hold)
			continue;
		s->n = strtol(f[2], &p, 10);
		s->onward = *p == '+';
		if (f[3] != NULL)
			snprintf(s->match, sizeof(s->match), "%s", f[3]);
		atomic_init(&s->seen, 0);
		nspecs++;
	}
}

static bool armed(void)
{
	struct stat st;

	return arm_path == NULL || stat(arm_path, &st) == 0;
}

/* The path of `fd` (-1: none), followed by "/" and `name` when given. */
static void path_of(int fd, const char *name, char *out, size_t len)
{
	char proc[64];
	ssize_t n = 0;

	out[0] = '\0';
	if (fd >= 0 || fd == AT_FDCWD) {
		if (fd == AT_FDCWD)
			snprintf(proc, sizeof(proc), "/proc/self/cwd");
		else
			snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		n = readlink(proc, out, len - 1);
		if (n < 0)
			n = 0;
		out[n] = '\0';
	}
	if (name != NULL && name[0] != '\0')
		snprintf(out + n, len - (size_t)n, "%s%s", name[0] == '/' ? "" : "/", name);
}

static bool counts_fd(int fd)
{
	struct stat st;

	return fd > 2 && fstat(fd, &st) == 0 && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode));
}

static void note(const struct spec *s, const char *call, long n, const char *path)
{
	char line[PATH_MAX + 128];
	int fd, len;

	if (log_path == NULL)
		return;
	len = snprintf(line, sizeof(line), "%s %ld %s %s\n", call, n,
		       s->kill == 1 ? "KILL" : s->kill == 2 ? "KILLAFTER" : s->hold ? "HOLD" : "errno",
		       path);
	fd = (int)syscall(SYS_openat, AT_FDCWD, log_path,
			  O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	(void)!syscall(SYS_write, fd, line, (size_t)len);
	(void)!syscall(SYS_fsync, fd);
	syscall(SYS_close, fd);
}

/*
 * Whether this call of `call` on (fd, name) is one to fault: 0 to make it,
 * > 0 an errno to fail with, -1 to make it and then die. Kills before it
 * itself.
 */
static int decide(const char *call, int fd, const char *name)
{
	char path[PATH_MAX + 256];
	bool have_path = false;
	int saved = errno, verdict = 0;

	pthread_once(&parsed, parse);
	if (nspecs == 0 || !armed())
		return 0;
	if (name == NULL && !counts_fd(fd))
		return 0;
	for (int i = 0; i < nspecs && verdict == 0; i++) {
		struct spec *s = &specs[i];
		long n;

		if (strcmp(s->call, "any") != 0 && strcmp(s->call, call) != 0)
			continue;
		if (s->match[0] != '\0') {
			if (!have_path)
				path_of(fd, name, path, sizeof(path));
			have_path = true;
			if (strstr(path, s->match) == NULL)
				continue;
		}
		n = atomic_fetch_add(&s->seen, 1) + 1;
		if (n != s->n && !(s->onward && n > s->n))
			continue;
		if (!have_path)
			path_of(fd, name, path, sizeof(path));
		have_path = true;
		note(s, call, n, path);
		if (s->kill == 1)
			syscall(SYS_kill, getpid(), SIGKILL);
		while (s->hold && hold_path != NULL && access(hold_path, F_OK) == 0)
			usleep(10000);
		verdict = s->kill == 2 ? -1 : s->err;
	}
	errno = saved;
	return verdict;
}

static void die_now(void)
{
	syscall(SYS_kill, getpid(), SIGKILL);
}

#define REAL(ret, fn, ...)                                      \
	static ret (*real)(__VA_ARGS__);                        \
	if (real == NULL)                                       \
		real = (ret (*)(__VA_ARGS__))dlsym(RTLD_NEXT, fn)

/* The wrapper body: fault, or call through (and maybe die after). */
#define WRAP(ret, failval, call, fd, name, ...)       \
	do {                                          \
		int v_ = decide(call, fd, name);      \
		ret r_;                               \
		if (v_ > 0) {                         \
			errno = v_;                   \
			return failval;               \
		}                                     \
		r_ = real(__VA_ARGS__);               \
		if (v_ < 0)                           \
			die_now();                    \
		return r_;                            \
	} while (0)

ssize_t write(int fd, const void *buf, size_t len)
{
	REAL(ssize_t, "write", int, const void *, size_t);
	WRAP(ssize_t, -1, "write", fd, NULL, fd, buf, len);
}

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{
	REAL(ssize_t, "pwrite", int, const void *, size_t, off_t);
	WRAP(ssize_t, -1, "pwrite", fd, NULL, fd, buf, len, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t len, off_t off)
{
	REAL(ssize_t, "pwrite64", int, const void *, size_t, off_t);
	WRAP(ssize_t, -1, "pwrite", fd, NULL, fd, buf, len, off);
}

ssize_t copy_file_range(int in, off_t *inoff, int out, off_t *outoff, size_t len,
			unsigned flags)
{
	REAL(ssize_t, "copy_file_range", int, off_t *, int, off_t *, size_t, unsigned);
	WRAP(ssize_t, -1, "copy_file_range", out, NULL, in, inoff, out, outoff, len, flags);
}

int fsync(int fd)
{
	REAL(int, "fsync", int);
	WRAP(int, -1, "fsync", fd, NULL, fd);
}

int fdatasync(int fd)
{
	REAL(int, "fdatasync", int);
	WRAP(int, -1, "fdatasync", fd, NULL, fd);
}

int ftruncate(int fd, off_t len)
{
	REAL(int, "ftruncate", int, off_t);
	WRAP(int, -1, "ftruncate", fd, NULL, fd, len);
}

int ftruncate64(int fd, off_t len)
{
	REAL(int, "ftruncate64", int, off_t);
	WRAP(int, -1, "ftruncate", fd, NULL, fd, len);
}

int renameat(int ofd, const char *old, int nfd, const char *new)
{
	REAL(int, "renameat", int, const char *, int, const char *);
	WRAP(int, -1, "renameat", ofd, old, ofd, old, nfd, new);
}

int renameat2(int ofd, const char *old, int nfd, const char *new, unsigned flags)
{
	REAL(int, "renameat2", int, const char *, int, const char *, unsigned);
	WRAP(int, -1, "renameat2", ofd, old, ofd, old, nfd, new, flags);
}

int linkat(int ofd, const char *old, int nfd, const char *new, int flags)
{
	REAL(int, "linkat", int, const char *, int, const char *, int);
	WRAP(int, -1, "linkat", nfd, new, ofd, old, nfd, new, flags);
}

int unlinkat(int fd, const char *name, int flags)
{
	REAL(int, "unlinkat", int, const char *, int);
	WRAP(int, -1, "unlinkat", fd, name, fd, name, flags);
}

int symlinkat(const char *target, int fd, const char *name)
{
	REAL(int, "symlinkat", const char *, int, const char *);
	WRAP(int, -1, "symlinkat", fd, name, target, fd, name);
}

int mkdirat(int fd, const char *name, mode_t mode)
{
	REAL(int, "mkdirat", int, const char *, mode_t);
	WRAP(int, -1, "mkdirat", fd, name, fd, name, mode);
}
