/*
 * userns.c — probe for user namespaces, which `fsbroker run`'s sandbox is
 * built on (bubblewrap --unshare-user). The probe asks the kernel the only
 * way that covers every reason it may say no (the max_user_namespaces and
 * Debian's unprivileged_userns_clone sysctls, an LSM hook such as AppArmor's
 * restrict_unprivileged_userns, a seccomp filter around us): a short-lived
 * child tries unshare(CLONE_NEWUSER). The sysctls are read only to word the
 * refusal.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "userns.h"

/* The number in a one-line /proc/sys file, or -1. */
static long read_sysctl(const char *path)
{
	char buf[32];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return strtol(buf, NULL, 10);
}

int fsb_userns_probe(char *why, size_t why_size)
{
	int status, err;
	pid_t pid = fork();

	if (pid < 0) {
		err = errno;
		snprintf(why, why_size, "cannot start the user-namespace probe: %s",
			 strerror(err));
		return -err;
	}
	if (pid == 0) {
		/* Only async-signal-safe calls here: the parent may have threads. */
		_exit(unshare(CLONE_NEWUSER) == 0 ? 0 : (errno & 0x7f));
	}
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			err = errno;
			snprintf(why, why_size, "cannot wait for the user-namespace probe: %s",
				 strerror(err));
			return -err;
		}
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	err = WIFEXITED(status) ? WEXITSTATUS(status) : EPERM;
	if (read_sysctl("/proc/sys/user/max_user_namespaces") == 0)
		snprintf(why, why_size, "user namespaces are switched off "
			 "(sysctl user.max_user_namespaces = 0)");
	else if (read_sysctl("/proc/sys/kernel/unprivileged_userns_clone") == 0 && geteuid() != 0)
		snprintf(why, why_size, "unprivileged user namespaces are switched off "
			 "(sysctl kernel.unprivileged_userns_clone = 0)");
	else if (read_sysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == 1)
		snprintf(why, why_size, "AppArmor restricts unprivileged user namespaces "
			 "(sysctl kernel.apparmor_restrict_unprivileged_userns = 1)");
	else
		snprintf(why, why_size, "the kernel refuses a new user namespace: %s",
			 strerror(err));
	return -err;
}
