/*
 * run_leftovers.c — what a killed `fsbroker run` leaves, cleared by the next.
 *
 * A run killed (SIGKILL, a host's timeout) takes its sandbox with it:
 * bwrap's --die-with-parent. Not while bwrap sets the sandbox up, though:
 * its outer process dies with the run, and its inner one, pid 1 of the new
 * pid namespace, has not armed its own parent-death signal yet and waits
 * for ever on an eventfd the dead parent was to write
 * (containers/bubblewrap#633). Nothing else is left to kill it, so the
 * next run does, and removes the dead run's socket directory, which tells
 * it that a run died.
 *
 * A process is that leftover only when all of these hold: it is ours (its
 * real uid), argv[0] is a bwrap whose command line names fsbroker-init
 * where our sandboxes have it, it is pid 1 of a pid namespace of its own,
 * and its parent is no bwrap (the outer one is gone). It is reached by a
 * pidfd, so a pid reused meanwhile is never signalled.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "mount_plan.h"
#include "run_leftovers.h"

/* The pid a name `<prefix><digits>` holds, or -1. */
static pid_t pid_in_name(const char *name, const char *prefix)
{
	size_t n = strlen(prefix);
	char *end;
	long v;

	if (strncmp(name, prefix, n) != 0 || !isdigit((unsigned char)name[n]))
		return -1;
	v = strtol(name + n, &end, 10);
	return *end == '\0' && v > 0 && v <= INT_MAX ? (pid_t)v : -1;
}

/* Up to `len` - 1 bytes of /proc/<pid>/<what> into `buf`; its length, or -1. */
static ssize_t read_proc(int procfd, const char *what, char *buf, size_t len)
{
	int fd = openat(procfd, what, O_RDONLY | O_CLOEXEC);
	ssize_t n, got = 0;

	if (fd < 0)
		return -1;
	while ((size_t)got < len - 1 &&
	       ((n = read(fd, buf + got, len - 1 - (size_t)got)) > 0 || (n < 0 && errno == EINTR)))
		got += n > 0 ? n : 0;
	close(fd);
	buf[got] = '\0';
	return got;
}

/* The number after `key` ("PPid:\t") in a status text, or -1. */
static long status_field(const char *status, const char *key)
{
	const char *at = strstr(status, key);

	return at != NULL ? strtol(at + strlen(key), NULL, 10) : -1;
}

/* True when /proc/<pid>'s `status` says: real uid ours, pid 1 of its own
 * pid namespace (NSpid lists more than one pid, the last 1), and *ppid. */
static bool ours_and_init_of_a_namespace(const char *status, pid_t *ppid)
{
	const char *p = strstr(status, "\nNSpid:");
	long last = -1;
	int count = 0;

	if (status_field(status, "\nUid:\t") != (long)getuid() || p == NULL)
		return false;
	for (p += strlen("\nNSpid:"); *p != '\n' && *p != '\0'; count++) {
		char *end;

		last = strtol(p, &end, 10);
		if (end == p)
			return false;
		p = end;
	}
	*ppid = (pid_t)status_field(status, "\nPPid:\t");
	return count > 1 && last == 1 && *ppid > 0;
}

/* Whether argv `cmd` (`len` bytes, NUL-separated) is bwrap's, for one of
 * our sandboxes. */
static bool our_bwrap(const char *cmd, ssize_t len)
{
	const char *base = strrchr(cmd, '/');

	if (strcmp(base != NULL ? base + 1 : cmd, "bwrap") != 0)
		return false;
	for (const char *p = cmd; p < cmd + len; p += strlen(p) + 1)
		if (strcmp(p, FSB_MOUNT_INIT) == 0)
			return true;
	return false;
}

static bool comm_is_bwrap(pid_t pid)
{
	char path[32], comm[32];
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	n = read(fd, comm, sizeof(comm) - 1);
	close(fd);
	if (n <= 0)
		return false;
	comm[n] = '\0';
	return strcmp(comm, "bwrap\n") == 0;
}

/* Kill `pid` when it is a sandbox's inner bwrap whose outer one is gone. */
static void kill_if_stranded(pid_t pid)
{
	char path[32], status[4096], cmd[8192];
	ssize_t len;
	pid_t ppid;
	int procfd, pidfd;

	if ((pidfd = pidfd_open(pid, 0)) < 0)
		return;
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	procfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (procfd >= 0 && read_proc(procfd, "status", status, sizeof(status)) > 0 &&
	    ours_and_init_of_a_namespace(status, &ppid) &&
	    (len = read_proc(procfd, "cmdline", cmd, sizeof(cmd))) > 0 && our_bwrap(cmd, len) &&
	    !comm_is_bwrap(ppid)) {
		if (pidfd_send_signal(pidfd, SIGKILL, NULL, 0) == 0)
			fsb_info("killed pid %d: the sandbox a killed run was starting, left "
				 "waiting on its dead parent", (int)pid);
	}
	if (procfd >= 0)
		close(procfd);
	close(pidfd);
}

static void kill_stranded_sandboxes(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		pid_t pid = pid_in_name(e->d_name, "");

		if (pid > 1 && pid != getpid())
			kill_if_stranded(pid);
	}
	closedir(d);
}

/* Remove a dead run's directory: its sockets, then itself. */
static void remove_run_dir(int basefd, const char *name)
{
	int fd = openat(basefd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	struct stat st;

	if (d == NULL) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d)) != NULL)
		if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISSOCK(st.st_mode))
			unlinkat(fd, e->d_name, 0);
	closedir(d);
	if (unlinkat(basefd, name, AT_REMOVEDIR) < 0)
		fsb_debug("cannot remove the directory %s of a killed run: %s", name,
			  strerror(errno));
}

void fsb_run_clear_leftovers(const char *own)
{
	const char *slash = strrchr(own, '/');
	char base[PATH_MAX], prefix[NAME_MAX + 1];
	size_t plen;
	bool found = false;
	struct dirent *e;
	int basefd;
	DIR *d;

	if (slash == NULL || (size_t)(slash - own) >= sizeof(base))
		return;
	snprintf(base, sizeof(base), "%.*s", (int)(slash - own), own);
	snprintf(prefix, sizeof(prefix), "%s", slash + 1);
	for (plen = strlen(prefix); plen > 0 && isdigit((unsigned char)prefix[plen - 1]); plen--)
		;
	prefix[plen] = '\0';
	if ((basefd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return;
	if ((d = fdopendir(basefd)) == NULL) {
		close(basefd);
		return;
	}
	while ((e = readdir(d)) != NULL) {
		pid_t pid = pid_in_name(e->d_name, prefix);

		/* Alive, or a pid reused by another's process: not dead. */
		if (pid < 0 || pid == getpid() || kill(pid, 0) == 0 || errno != ESRCH)
			continue;
		found = true;
		remove_run_dir(dirfd(d), e->d_name);
	}
	closedir(d);
	if (found)
		kill_stranded_sandboxes();
}
