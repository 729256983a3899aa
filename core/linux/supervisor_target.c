/*
 * supervisor_target.c — reading the process whose call the supervisor
 * serves (see supervisor_call.h): its memory with process_vm_readv (never
 * /proc/<pid>/mem), its cwd and dirfds, its fds with pidfd_getfd, and
 * its root. Its umask and fsuid/fsgid: supervisor_creds.c.
 *
 * Nothing read here is trusted before the caller has checked
 * NOTIF_ID_VALID: the pid may have been reused meanwhile.
 *
 * The root cache (DESIGN §7.4). Every call needs the target's "/"; opening
 * /proc/<pid>/root costs a path walk through procfs each time. The cache
 * keeps one O_PATH fd per process, keyed by pid and held with a pidfd: an
 * entry whose pidfd reports the process exited is dropped, so a pid reused
 * by a later process never finds its predecessor's root. The sandbox
 * cannot change its root (no chroot without capabilities, pivot_root and
 * setns refused by the filter), so a live process's entry stays true.
 * The umask and fsuid/fsgid are kept by supervisor_creds.c, which says
 * when they can be.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "at.h"
#include "supervisor_call.h"

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL	/* Linux 6.9: a pidfd for a thread, which notif.pid is */
#endif

/* ---- memory ------------------------------------------------------------- */

/* process_vm_readv never splits one remote iovec across pages, so the
 * first page's rest and what follows are two. */
int fsb_sv_read_string(pid_t pid, unsigned long addr, char *buf, size_t len)
{
	size_t first = 4096 - (addr & 4095);
	struct iovec local = { buf, len - 1 };
	struct iovec remote[2];
	ssize_t n;

	if (first > len - 1)
		first = len - 1;
	remote[0] = (struct iovec){ (void *)addr, first };
	remote[1] = (struct iovec){ (void *)(addr + first), len - 1 - first };
	n = process_vm_readv(pid, &local, 1, remote, remote[1].iov_len ? 2 : 1, 0);
	if (n <= 0)
		return -EFAULT;
	buf[n] = '\0';
	return strlen(buf) == (size_t)n ? -ENAMETOOLONG : 0;
}

int fsb_sv_read_bytes(pid_t pid, unsigned long addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)addr, len };

	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

/* ---- paths -------------------------------------------------------------- */

bool fsb_sv_ends_in_slash(const char *p)
{
	size_t n = strlen(p);

	return n > 1 && p[n - 1] == '/';
}

int fsb_sv_absolute_path(pid_t pid, int dirfd, const char *rel, char *out, size_t len)
{
	char link[64], base[PATH_MAX];
	ssize_t n;

	if (rel[0] == '/') {
		snprintf(out, len, "%s", rel);
		return 0;
	}
	if (rel[0] == '\0')
		return -ENOENT;
	if (dirfd == AT_FDCWD)
		snprintf(link, sizeof(link), "/proc/%d/cwd", (int)pid);
	else
		snprintf(link, sizeof(link), "/proc/%d/fd/%d", (int)pid, dirfd);
	n = readlink(link, base, sizeof(base) - 1);
	if (n <= 0)
		return dirfd == AT_FDCWD ? -ENOENT : -EBADF;
	base[n] = '\0';
	if (base[0] != '/')
		return -ENOTDIR;	/* not a directory (a pipe, a socket) */
	/* A directory removed since: its name is not it any more, and the
	 * kernel answers ENOENT for a name beneath it. */
	if (n > 10 && strcmp(base + n - 10, " (deleted)") == 0)
		return -ENOENT;
	if ((size_t)snprintf(out, len, "%s/%s", strcmp(base, "/") == 0 ? "" : base, rel) >= len)
		return -ENAMETOOLONG;
	return 0;
}

int fsb_sv_target_path(pid_t pid, int dirfd, unsigned long addr, char *out, size_t len,
		       bool *slash)
{
	char rel[PATH_MAX];
	int err = fsb_sv_read_string(pid, addr, rel, sizeof(rel));

	if (err == 0 && slash != NULL)
		*slash = *slash || fsb_sv_ends_in_slash(rel);
	return err < 0 ? err : fsb_sv_absolute_path(pid, dirfd, rel, out, len);
}

static int own_fd_dir = -1;
static pthread_once_t own_fd_dir_once = PTHREAD_ONCE_INIT;

static void open_own_fd_dir(void)
{
	own_fd_dir = open("/proc/self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC);
}

/* The name of the core's own fd `fd`: read in a /proc/self/fd opened once
 * (the walk of "/proc/self/fd/N" costs a third of the readlink). */
static ssize_t own_fd_link(int fd, char *out, size_t len)
{
	char name[16], proc[32];

	pthread_once(&own_fd_dir_once, open_own_fd_dir);
	if (own_fd_dir < 0)
		return readlink(fsb_at_fd_path(fd, proc, sizeof(proc)), out, len);
	snprintf(name, sizeof(name), "%d", fd);
	return readlinkat(own_fd_dir, name, out, len);
}

int fsb_sv_fd_path(int fd, char *out, size_t len)
{
	ssize_t n = own_fd_link(fd, out, len - 1);

	if (n <= 0)
		return -EPERM;
	out[n] = '\0';
	if (out[0] != '/' || (n > 10 && strcmp(out + n - 10, " (deleted)") == 0))
		return -EPERM;
	return 0;
}

/* ---- fds ---------------------------------------------------------------- */

int fsb_sv_pidfd(pid_t pid)
{
	long pidfd = syscall(SYS_pidfd_open, pid, PIDFD_THREAD);

	if (pidfd < 0 && errno == EINVAL)
		pidfd = syscall(SYS_pidfd_open, pid, 0);
	return pidfd < 0 ? -errno : (int)pidfd;
}

/* ---- the root cache ----------------------------------------------------- */

#define ROOT_CACHE_SIZE 64

struct root_entry {
	pid_t pid;		/* 0: free */
	int pidfd, rootfd;
	unsigned long used;	/* for replacing the least recently used */
};

struct sv_root_cache {
	pthread_mutex_t lock;
	struct root_entry e[ROOT_CACHE_SIZE];
	unsigned long clock;
};

static void entry_drop(struct root_entry *e)
{
	if (e->pid != 0) {
		close(e->pidfd);
		close(e->rootfd);
	}
	e->pid = 0;
}

bool fsb_sv_pidfd_exited(int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };

	return poll(&p, 1, 0) != 0;
}

static int open_root(pid_t pid)
{
	char root[64];
	int fd;

	snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
	fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -EACCES : fd;
}

int fsb_sv_root(struct fsb_supervisor *sv, pid_t pid)
{
	struct sv_root_cache *c = sv->roots;
	struct root_entry *e, *victim;
	int fd = -1, pidfd, rootfd;

	if (c == NULL) {
		if ((c = calloc(1, sizeof(*c))) == NULL)
			return open_root(pid);
		pthread_mutex_init(&c->lock, NULL);
		/* Only the loop thread starts work, but two pool threads may
		 * get here at once: the first one's cache is kept. */
		if (!__atomic_compare_exchange_n(&sv->roots, &(struct sv_root_cache *){ NULL }, c,
						 false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			pthread_mutex_destroy(&c->lock);
			free(c);
			c = sv->roots;
		}
	}
	pthread_mutex_lock(&c->lock);
	victim = &c->e[0];
	for (int i = 0; i < ROOT_CACHE_SIZE; i++) {
		e = &c->e[i];
		if (e->pid == pid) {
			if (fsb_sv_pidfd_exited(e->pidfd)) {
				entry_drop(e);	/* the pid is another process's now */
				victim = e;
				break;
			}
			e->used = ++c->clock;
			fd = fcntl(e->rootfd, F_DUPFD_CLOEXEC, 0);
			pthread_mutex_unlock(&c->lock);
			return fd < 0 ? -EACCES : fd;
		}
		if (victim->pid != 0 && (e->pid == 0 || e->used < victim->used))
			victim = e;
	}
	pthread_mutex_unlock(&c->lock);

	/* Not cached: the pidfd first, so the root read after it is the root
	 * of the process the pidfd holds (or of nothing: checked by the
	 * caller with NOTIF_ID_VALID). */
	if ((pidfd = fsb_sv_pidfd(pid)) < 0)
		return open_root(pid);
	if ((rootfd = open_root(pid)) < 0) {
		close(pidfd);
		return rootfd;
	}
	if ((fd = fcntl(rootfd, F_DUPFD_CLOEXEC, 0)) < 0) {
		close(pidfd);
		return rootfd;
	}
	pthread_mutex_lock(&c->lock);
	/* Another thread may have filled it meanwhile, or taken the victim. */
	for (int i = 0; i < ROOT_CACHE_SIZE; i++)
		if (c->e[i].pid == pid)
			entry_drop(&c->e[i]);
	entry_drop(victim);
	*victim = (struct root_entry){ .pid = pid, .pidfd = pidfd, .rootfd = rootfd,
				       .used = ++c->clock };
	pthread_mutex_unlock(&c->lock);
	return fd;
}

void fsb_sv_roots_free(struct fsb_supervisor *sv)
{
	struct sv_root_cache *c = sv->roots;

	if (c == NULL)
		return;
	for (int i = 0; i < ROOT_CACHE_SIZE; i++)
		entry_drop(&c->e[i]);
	pthread_mutex_destroy(&c->lock);
	free(c);
	sv->roots = NULL;
}

/*
 * pidfd_getfd(2) through the pidfd the root cache holds for `pid`: the fd,
 * -errno, or -ESRCH when there is none or it is a thread's that is gone
 * (whose id may be another thread's now; the kernel refuses a pidfd of a
 * released thread with ESRCH). A thread that exec'd took its group
 * leader's id, and that id's pidfd reaches it.
 */
static int cached_target_fd(struct sv_root_cache *c, pid_t pid, int tfd)
{
	int rc = -ESRCH;

	if (c == NULL)
		return rc;
	pthread_mutex_lock(&c->lock);
	for (int i = 0; i < ROOT_CACHE_SIZE; i++) {
		if (c->e[i].pid == pid) {
			long fd = syscall(SYS_pidfd_getfd, c->e[i].pidfd, tfd, 0);

			rc = fd < 0 ? -errno : (int)fd;
			break;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int fsb_sv_target_fd(struct fsb_supervisor *sv, const struct seccomp_notif *req, int tfd)
{
	pid_t pid = (pid_t)req->pid;
	int pidfd, fd = cached_target_fd(__atomic_load_n(&sv->roots, __ATOMIC_ACQUIRE), pid, tfd);
	long got;

	if (fd != -ESRCH)
		return fd;
	if ((pidfd = fsb_sv_pidfd(pid)) < 0)
		return pidfd;
	got = syscall(SYS_pidfd_getfd, pidfd, tfd, 0);
	fd = got < 0 ? -errno : (int)got;
	close(pidfd);
	/* A fresh pidfd reaches whoever holds the id now: the sender only
	 * while its call is still pending (it cannot have gone and come
	 * back). */
	if (fd >= 0 && !fsb_sv_still_valid(sv, req)) {
		close(fd);
		fd = -ESRCH;
	}
	return fd;
}

/*
 * The target's own fd named as a path: /dev/stdin, /dev/stdout,
 * /dev/stderr, /dev/fd/N, /proc/self/fd/N, /proc/thread-self/fd/N. N, or
 * -1 when `path` is none of them.
 */
int fsb_sv_own_fd_name(const char *path)
{
	static const char *const prefixes[] = { "/dev/fd/", "/proc/self/fd/",
						"/proc/thread-self/fd/" };
	char *end;
	long n;

	if (strcmp(path, "/dev/stdin") == 0)
		return 0;
	if (strcmp(path, "/dev/stdout") == 0)
		return 1;
	if (strcmp(path, "/dev/stderr") == 0)
		return 2;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t len = strlen(prefixes[i]);

		if (strncmp(path, prefixes[i], len) != 0 || path[len] < '0' || path[len] > '9')
			continue;
		n = strtol(path + len, &end, 10);
		return *end == '\0' && n <= INT_MAX ? (int)n : -1;
	}
	return -1;
}
