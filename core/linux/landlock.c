/*
 * landlock.c — applies the sandbox's mandatory Landlock ruleset through the
 * raw syscalls (glibc has no wrappers), with the constants and the ruleset
 * attribute of kernels newer than Debian 12's 6.1 headers defined here.
 *
 * Only the write rights are handled: a right a ruleset does not handle
 * stays allowed everywhere, which is how reading and executing remain
 * possible outside the writable dirs without listing every path.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/landlock.h>

#include "landlock.h"

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)		/* ABI 2 */
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)	/* ABI 3 */
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)	/* ABI 6 */
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)		/* ABI 6 */
#endif

/* The newest ABI whose rights this file knows; newer kernels get these. */
#define KNOWN_ABI 6

/*
 * struct landlock_ruleset_attr as of ABI 6. Debian 12's header has only
 * the first field; the kernel takes the size we pass and reads no further,
 * so each ABI is given only the fields it knows.
 */
struct ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;	/* ABI 4; not restricted here */
	uint64_t scoped;		/* ABI 6 */
};

/*
 * Every right that writes, by the ABI that introduced it. Two are left
 * out on purpose: LANDLOCK_ACCESS_FS_IOCTL_DEV (ABI 5) would deny terminal
 * ioctls (tcgetattr, window size) on a tty the sandbox opens read-only,
 * and writes to a device need a writable fd, which only the broker hands
 * out; the network rights (ABI 4) are not file access.
 */
static uint64_t write_rights(int abi)
{
	uint64_t r = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |
		     LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR |
		     LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
		     LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |
		     LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM;

	/* On ABI 1 a rename or link to another directory is always denied. */
	if (abi >= 2)
		r |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		r |= LANDLOCK_ACCESS_FS_TRUNCATE;
	return r;
}

int fsb_landlock_probe(char *why, size_t why_size)
{
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	const char *msg;
	int err;

	if (abi >= 1)
		return (int)abi;
	err = abi < 0 ? -errno : -ENOSYS;
	if (err == -EOPNOTSUPP)
		msg = "Landlock is built into this kernel but not enabled (add landlock to the lsm= boot parameter)";
	else
		msg = "this kernel has no Landlock (Linux 5.13 or later with CONFIG_SECURITY_LANDLOCK)";
	if (why && why_size)
		snprintf(why, why_size, "%s", msg);
	return err == -EOPNOTSUPP ? err : -ENOSYS;
}

int fsb_landlock_restrict(const char *const *writable, size_t n, struct fsb_landlock *out)
{
	struct ruleset_attr attr;
	size_t attr_size = sizeof(attr.handled_access_fs);
	int abi, rs = -1, dir = -1, err = 0;

	memset(out, 0, sizeof(*out));
	abi = fsb_landlock_probe(NULL, 0);
	if (abi < 0)
		return abi;
	out->abi = abi;
	if (abi > KNOWN_ABI)
		abi = KNOWN_ABI;

	memset(&attr, 0, sizeof(attr));
	attr.handled_access_fs = write_rights(abi);
	if (abi >= 4)
		attr_size = offsetof(struct ruleset_attr, scoped);
	if (abi >= 6) {
		/*
		 * A sandboxed process could otherwise signal the core or
		 * the user's processes (same uid), or talk to an abstract
		 * socket outside (a session bus, an agent's helper), which
		 * no path rule covers.
		 */
		attr.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
		attr_size = sizeof(attr);
	}
	out->handled = attr.handled_access_fs;
	out->scoped = attr.scoped != 0;

	rs = (int)syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0);
	if (rs < 0)
		return -errno;

	for (size_t i = 0; i < n; i++) {
		struct landlock_path_beneath_attr pb;

		/* O_PATH: the rule needs the inode only, and a dir the
		 * sandbox may write need not be readable. */
		dir = open(writable[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (dir < 0) {
			err = -errno;
			out->failed_path = writable[i];
			goto fail;
		}
		memset(&pb, 0, sizeof(pb));
		pb.allowed_access = attr.handled_access_fs;
		pb.parent_fd = dir;
		if (syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) != 0) {
			err = -errno;
			out->failed_path = writable[i];
			goto fail;
		}
		close(dir);
		dir = -1;
	}
	if (syscall(SYS_landlock_restrict_self, rs, 0) != 0) {
		err = -errno;
		goto fail;
	}
fail:
	if (dir >= 0)
		close(dir);
	close(rs);
	return err;
}
