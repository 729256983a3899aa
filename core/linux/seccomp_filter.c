/*
 * seccomp_filter.c — the classic-BPF program fsbroker-init loads before it
 * execs the sandboxed command (DESIGN §7.3), built from the tables below
 * with a small assembler that resolves forward jumps to named targets.
 *
 * Why raw BPF and not libseccomp: see docs/decisions.md ("The seccomp
 * filter is raw BPF"). In short, libseccomp 2.5.4 cannot load with
 * WAIT_KILLABLE_RECV, gives x32 calls the same action as foreign
 * architectures, and compares full 64-bit registers where the kernel reads
 * an int.
 *
 * Every argument test loads only the low 32 bits of the register: the
 * flags of open(2), the request of ioctl(2), the flags of seccomp(2) and
 * clone(2) are int-sized in the kernel, which ignores the upper half. A
 * 64-bit comparison could be dodged by setting a high bit the kernel then
 * throws away (flatpak's TIOCSTI filter, CVE-2019-10063).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <asm/termbits.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/fscrypt.h>
#include <linux/fsverity.h>
#include <linux/random.h>
#include <linux/seccomp.h>
#include <linux/sockios.h>

#include "seccomp_filter.h"

/* Debian 12's headers are Linux 6.1; the kernels it runs on may be newer. */
#ifndef SECCOMP_FILTER_FLAG_NEW_LISTENER
#define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#endif
#ifndef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
#define SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (1UL << 5)
#endif
#ifndef SECCOMP_RET_USER_NOTIF
#define SECCOMP_RET_USER_NOTIF 0x7fc00000U
#endif
#ifndef SECCOMP_GET_ACTION_AVAIL
#define SECCOMP_GET_ACTION_AVAIL 2
#endif

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

int fsb_seccomp_probe(char *why, size_t why_size)
{
	unsigned int action = SECCOMP_RET_USER_NOTIF;
	const char *msg = NULL;

	if (syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) != 0) {
		if (errno == EOPNOTSUPP)
			msg = "the kernel has no seccomp user notification (Linux 5.0)";
		else
			msg = "the kernel has no seccomp filters (CONFIG_SECCOMP_FILTER)";
	} else {
		/*
		 * Ask for the flags with a NULL program: the kernel checks
		 * the flags first (EINVAL when it does not know one) and
		 * only then copies the program (EFAULT). Nothing is loaded.
		 */
		long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
				 SECCOMP_FILTER_FLAG_NEW_LISTENER |
				 SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, NULL);
		if (r >= 0 || errno != EFAULT)
			msg = "the kernel has no SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (Linux 5.19)";
	}
	if (!msg)
		return 0;
	if (why && why_size)
		snprintf(why, why_size, "%s", msg);
	return -EOPNOTSUPP;
}

#if defined(__x86_64__)

#ifndef __X32_SYSCALL_BIT
#define __X32_SYSCALL_BIT 0x40000000
#endif
/* Syscalls newer than Debian 12's headers (numbers from syscall_64.tbl). */
#ifndef __NR_fchmodat2
#define __NR_fchmodat2 452
#endif
#ifndef __NR_setxattrat
#define __NR_setxattrat 463
#endif
#ifndef __NR_removexattrat
#define __NR_removexattrat 466
#endif
#ifndef __NR_open_tree_attr
#define __NR_open_tree_attr 467
#endif
#ifndef __NR_file_setattr
#define __NR_file_setattr 469
#endif

/*
 * The open flags that make an open a write: an access mode that writes
 * (O_ACCMODE 3, "check both", has both bits), creating, truncating, and
 * the tmpfile bit. O_TMPFILE is __O_TMPFILE | O_DIRECTORY; only the first
 * bit is tested, since O_DIRECTORY alone is a read.
 */
#define WRITE_OPEN_FLAGS \
	((uint32_t)(O_WRONLY | O_RDWR | O_CREAT | O_TRUNC) | ((uint32_t)O_TMPFILE & ~(uint32_t)O_DIRECTORY))

/* clone(2) flags that make namespaces, refused as unshare(2) is. */
#define CLONE_NS_FLAGS \
	((uint32_t)(CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | \
		    CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET))

/*
 * Calls that change the file system by path or by fd without needing a
 * writable fd: each waits for the supervisor, which judges, backs up and
 * performs it in the core (or refuses it). open, openat and creat are
 * added below, by their flags. openat2 always comes here: its flags live
 * in memory the filter cannot read. file_setattr and FS_IOC_FSSETXATTR
 * set the same inode flags as FS_IOC_SETFLAGS.
 */
static const int notify_nrs[] = {
	__NR_openat2, __NR_creat, __NR_truncate,
	__NR_rename, __NR_renameat, __NR_renameat2,
	__NR_unlink, __NR_unlinkat, __NR_rmdir,
	__NR_mkdir, __NR_mkdirat,
	__NR_link, __NR_linkat,
	__NR_symlink, __NR_symlinkat,
	__NR_chmod, __NR_fchmod, __NR_fchmodat, __NR_fchmodat2,
	__NR_chown, __NR_fchown, __NR_lchown, __NR_fchownat,
	__NR_utime, __NR_utimes, __NR_utimensat, __NR_futimesat,
	__NR_setxattr, __NR_lsetxattr, __NR_fsetxattr, __NR_setxattrat,
	__NR_removexattr, __NR_lremovexattr, __NR_fremovexattr, __NR_removexattrat,
	__NR_mknod, __NR_mknodat,
	__NR_file_setattr,
};

/*
 * Calls the sandbox never gets, answered EPERM:
 * - io_uring performs opens and renames in kernel workers that seccomp
 *   never sees;
 * - mounts, namespaces, pivot_root and chroot would change what a path
 *   means in the target's view, the view the supervisor resolves in (a
 *   chroot("/var") made the core judge ~/.bashrc as a path under ${tmp});
 * - ptrace, process_vm_writev and pidfd_getfd reach into another sandboxed
 *   process (its registers, its memory, its writable fds);
 * - open_by_handle_at opens by file handle, past any path the supervisor
 *   could judge.
 */
static const int deny_nrs[] = {
	__NR_io_uring_setup, __NR_io_uring_enter, __NR_io_uring_register,
	__NR_mount, __NR_umount2, __NR_mount_setattr, __NR_move_mount,
	__NR_open_tree, __NR_open_tree_attr, __NR_fsopen, __NR_fsconfig,
	__NR_fsmount, __NR_fspick, __NR_pivot_root, __NR_chroot,
	__NR_unshare, __NR_setns,
	__NR_ptrace, __NR_process_vm_writev, __NR_pidfd_getfd,
	__NR_open_by_handle_at,
};

/*
 * ioctl(2) is an allowlist: a request runs natively only when it is below.
 * Any other answers ENOTTY, as a kernel that does not know the request
 * does, so a program falls back as it would on an older kernel or another
 * file system. A denylist could not keep up: ioctls that change a file
 * through a read-only fd keep being added (FS_IOC_SETVERSION changed the
 * generation and ctime of ~/.bashrc, unaudited; btrfs makes and deletes
 * subvolumes through a directory fd), and each would be a write the
 * supervisor never sees.
 *
 * What is here reads state, or changes only the fd, the terminal's modes
 * (as any program run in a terminal does) or a file the fd already may
 * write: FICLONE and FICLONERANGE need the destination open for writing,
 * which only a granted open gives.
 */
static const uint32_t native_ioctls[] = {
	/* terminals and pseudo-terminals (tcgetattr, isatty, window size,
	 * job control, openpty); TIOCSTI and TIOCLINUX are not here */
	TCGETS, TCSETS, TCSETSW, TCSETSF, TCGETS2, TCSETS2, TCSETSW2, TCSETSF2,
	TCGETA, TCSETA, TCSETAW, TCSETAF, TCSBRK, TCSBRKP, TCXONC, TCFLSH,
	TIOCGWINSZ, TIOCSWINSZ, TIOCGPGRP, TIOCSPGRP, TIOCGSID, TIOCSCTTY, TIOCNOTTY,
	TIOCOUTQ, TIOCEXCL, TIOCNXCL, TIOCGEXCL, TIOCGETD, TIOCMGET, TIOCGDEV,
	TIOCPKT, TIOCGPKT, TIOCGPTN, TIOCSPTLCK, TIOCGPTLCK, TIOCGPTPEER, TIOCSIG,
	TIOCGLCKTRMIOS,
	/* any fd: non-blocking, close-on-exec, bytes waiting, owner */
	FIONBIO, FIOASYNC, FIOCLEX, FIONCLEX, FIONREAD, FIOQSIZE,
	FIOSETOWN, FIOGETOWN, SIOCSPGRP, SIOCGPGRP,
	/* files: flags and layout read (lsattr, cp, tar --sparse), clones
	 * into a writable fd (cp --reflink) */
	FS_IOC_GETFLAGS, FS_IOC32_GETFLAGS, FS_IOC_GETVERSION, FS_IOC32_GETVERSION,
	FS_IOC_FSGETXATTR, FS_IOC_FIEMAP, FIGETBSZ, FS_IOC_GETFSLABEL, FICLONE, FICLONERANGE,
	BLKGETSIZE, BLKGETSIZE64, BLKSSZGET, RNDGETENTCNT,
	/* sockets: queues, timestamps, and the interfaces read (getifaddrs'
	 * fallbacks, if_nametoindex) */
	SIOCATMARK, SIOCGSTAMP_OLD, SIOCGSTAMPNS_OLD, SIOCOUTQNSD,
	SIOCGIFNAME, SIOCGIFCONF, SIOCGIFFLAGS, SIOCGIFADDR, SIOCGIFDSTADDR, SIOCGIFBRDADDR,
	SIOCGIFNETMASK, SIOCGIFMETRIC, SIOCGIFMTU, SIOCGIFHWADDR, SIOCGIFINDEX, SIOCGIFTXQLEN,
};

/*
 * Requests that change the inode behind a read-only fd, refused with EPERM
 * rather than ENOTTY so that a tool says "Operation not permitted" (chattr
 * -v, fsverity enable): the version, verity (which makes the file
 * immutable), an encryption policy on an empty directory, and a dedupe
 * into a file the caller owns. The inode-flag setters are routed instead
 * (notify_ioctls): the supervisor answers them.
 */
static const uint32_t refused_ioctls[] = {
	TIOCSTI, TIOCLINUX,	/* push input into a terminal the user's shell reads */
	FS_IOC_SETVERSION, FS_IOC32_SETVERSION, FS_IOC_ENABLE_VERITY,
	FS_IOC_SET_ENCRYPTION_POLICY, FIDEDUPERANGE,
};

/* Inode flags (immutable, append-only, ...): the supervisor refuses them. */
static const uint32_t notify_ioctls[] = {
	FS_IOC_SETFLAGS, FS_IOC32_SETFLAGS, FS_IOC_FSSETXATTR,
};

/* Jump targets; T_NEXT is the next instruction. */
enum target {
	T_NEXT = -1,
	T_NOTIFY,
	T_ENOSYS,
	T_EPERM,
	T_ALLOW,
	T_KILL,
	T_OPEN_ARG1,	/* open(path, flags, mode) */
	T_OPEN_ARG2,	/* openat(dirfd, path, flags, mode) */
	T_SECCOMP,
	T_IOCTL,
	T_IOCTL_NATIVE,
	T_IOCTL_NOTIFY,
	T_IOCTL_EPERM,
	T_CLONE,
	T_CLONE_FS,
	T_COUNT
};

struct bpf_asm {
	struct sock_filter ins[FSB_SECCOMP_MAX_INSNS];
	signed char jt[FSB_SECCOMP_MAX_INSNS], jf[FSB_SECCOMP_MAX_INSNS];
	int at[T_COUNT];	/* where each target was placed, -1 if not yet */
	size_t len;
	int err;
};

static void emit(struct bpf_asm *a, uint16_t code, uint32_t k, enum target jt, enum target jf)
{
	if (a->len == ARRAY_SIZE(a->ins)) {
		a->err = -E2BIG;
		return;
	}
	a->ins[a->len] = (struct sock_filter)BPF_STMT(code, k);
	a->jt[a->len] = (signed char)jt;
	a->jf[a->len] = (signed char)jf;
	a->len++;
}

static void ld_nr(struct bpf_asm *a)
{
	emit(a, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr), T_NEXT, T_NEXT);
}

/* The low 32 bits of argument n (x86_64 is little-endian). */
static void ld_arg_lo(struct bpf_asm *a, unsigned n)
{
	emit(a, BPF_LD | BPF_W | BPF_ABS,
	     (uint32_t)(offsetof(struct seccomp_data, args) + 8 * n), T_NEXT, T_NEXT);
}

static void jeq(struct bpf_asm *a, uint32_t k, enum target t)
{
	emit(a, BPF_JMP | BPF_JEQ | BPF_K, k, t, T_NEXT);
}

static void jset(struct bpf_asm *a, uint32_t k, enum target t, enum target f)
{
	emit(a, BPF_JMP | BPF_JSET | BPF_K, k, t, f);
}

static void ret(struct bpf_asm *a, uint32_t action)
{
	emit(a, BPF_RET | BPF_K, action, T_NEXT, T_NEXT);
}

static void place(struct bpf_asm *a, enum target t)
{
	a->at[t] = (int)a->len;
}

/* Classic BPF jumps only forward, by at most 255 instructions. */
static int resolve(struct bpf_asm *a)
{
	for (size_t i = 0; i < a->len; i++) {
		if (BPF_CLASS(a->ins[i].code) != BPF_JMP)
			continue;
		for (int side = 0; side < 2; side++) {
			int t = side ? a->jf[i] : a->jt[i];
			long off = 0;

			if (t != T_NEXT) {
				if (a->at[t] < 0)
					return -EINVAL;
				off = (long)a->at[t] - (long)i - 1;
			}
			if (off < 0 || off > 255)
				return -E2BIG;
			if (side)
				a->ins[i].jf = (uint8_t)off;
			else
				a->ins[i].jt = (uint8_t)off;
		}
	}
	return 0;
}

int fsb_seccomp_build(const struct fsb_filter_opts *o, struct sock_filter *prog, size_t cap)
{
	struct bpf_asm a;
	int err;

	memset(&a, 0, sizeof(a));
	for (int t = 0; t < T_COUNT; t++)
		a.at[t] = -1;

	/*
	 * Any other audit arch (int 0x80, i386 numbers) is killed: the tables
	 * below are x86_64 numbers and would mean other calls there.
	 */
	emit(&a, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch), T_NEXT, T_NEXT);
	emit(&a, BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, T_NEXT, T_KILL);
	ld_nr(&a);
	/*
	 * x32 calls share AUDIT_ARCH_X86_64 and differ by this bit, so none
	 * of the numbers below would match them (x32's ioctl is 514). ENOSYS
	 * is what a kernel built without x32 answers.
	 */
	jset(&a, __X32_SYSCALL_BIT, T_ENOSYS, T_NEXT);

	for (size_t i = 0; i < ARRAY_SIZE(notify_nrs); i++)
		jeq(&a, (uint32_t)notify_nrs[i], T_NOTIFY);
	if (o && o->reads_broker) {
		jeq(&a, __NR_open, T_NOTIFY);
		jeq(&a, __NR_openat, T_NOTIFY);
	} else {
		jeq(&a, __NR_open, T_OPEN_ARG1);
		jeq(&a, __NR_openat, T_OPEN_ARG2);
	}
	/* glibc falls back from clone3 to clone only on ENOSYS; clone3's
	 * flags are in memory, clone's in a register the filter reads. */
	jeq(&a, __NR_clone3, T_ENOSYS);
	for (size_t i = 0; i < ARRAY_SIZE(deny_nrs); i++)
		jeq(&a, (uint32_t)deny_nrs[i], T_EPERM);
	jeq(&a, __NR_seccomp, T_SECCOMP);
	jeq(&a, __NR_ioctl, T_IOCTL);
	jeq(&a, __NR_clone, T_CLONE);
	/* The supervisor keeps each process's umask (supervisor_creds.c):
	 * it must see every change, and it answers CONTINUE. */
	jeq(&a, __NR_umask, T_NOTIFY);
	ret(&a, SECCOMP_RET_ALLOW);

	place(&a, T_OPEN_ARG1);
	ld_arg_lo(&a, 1);
	jset(&a, WRITE_OPEN_FLAGS, T_NOTIFY, T_ALLOW);

	place(&a, T_OPEN_ARG2);
	ld_arg_lo(&a, 2);
	jset(&a, WRITE_OPEN_FLAGS, T_NOTIFY, T_ALLOW);

	/*
	 * A listener of the sandbox's own would receive the notifications of
	 * every filter stacked after ours first and could answer CONTINUE to
	 * a write, past the broker. A plain filter is harmless (the strictest
	 * action wins) and browsers and other sandboxes need one.
	 */
	place(&a, T_SECCOMP);
	ld_arg_lo(&a, 1);
	jset(&a, SECCOMP_FILTER_FLAG_NEW_LISTENER, T_EPERM, T_ALLOW);

	/*
	 * A clone that shares the fs_struct (and so the umask) with another
	 * process, not a thread of its own, goes to the supervisor, which
	 * stops trusting the umasks it keeps and answers CONTINUE. Threads
	 * (CLONE_THREAD) and fork/vfork/posix_spawn run natively.
	 */
	place(&a, T_CLONE);
	ld_arg_lo(&a, 0);
	jset(&a, CLONE_NS_FLAGS, T_EPERM, T_NEXT);
	jset(&a, CLONE_THREAD, T_ALLOW, T_NEXT);
	jset(&a, CLONE_FS, T_NOTIFY, T_ALLOW);

	place(&a, T_NOTIFY);
	ret(&a, SECCOMP_RET_USER_NOTIF);
	place(&a, T_ENOSYS);
	ret(&a, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA));
	place(&a, T_EPERM);
	ret(&a, SECCOMP_RET_ERRNO | (FSB_SECCOMP_DENY_ERRNO & SECCOMP_RET_DATA));
	place(&a, T_ALLOW);
	ret(&a, SECCOMP_RET_ALLOW);
	place(&a, T_KILL);
	ret(&a, SECCOMP_RET_KILL_PROCESS);

	/*
	 * Last, with returns of its own: jumps go only forward, by at most
	 * 255, and the list is long.
	 */
	place(&a, T_IOCTL);
	ld_arg_lo(&a, 1);
	for (size_t i = 0; i < ARRAY_SIZE(native_ioctls); i++)
		jeq(&a, native_ioctls[i], T_IOCTL_NATIVE);
	for (size_t i = 0; i < ARRAY_SIZE(notify_ioctls); i++)
		jeq(&a, notify_ioctls[i], T_IOCTL_NOTIFY);
	for (size_t i = 0; i < ARRAY_SIZE(refused_ioctls); i++)
		jeq(&a, refused_ioctls[i], T_IOCTL_EPERM);
	ret(&a, SECCOMP_RET_ERRNO | (ENOTTY & SECCOMP_RET_DATA));
	place(&a, T_IOCTL_NATIVE);
	ret(&a, SECCOMP_RET_ALLOW);
	place(&a, T_IOCTL_NOTIFY);
	ret(&a, SECCOMP_RET_USER_NOTIF);
	place(&a, T_IOCTL_EPERM);
	ret(&a, SECCOMP_RET_ERRNO | (FSB_SECCOMP_DENY_ERRNO & SECCOMP_RET_DATA));

	if (a.err)
		return a.err;
	err = resolve(&a);
	if (err)
		return err;
	if (a.len > cap)
		return -E2BIG;
	memcpy(prog, a.ins, a.len * sizeof(prog[0]));
	return (int)a.len;
}

int fsb_seccomp_install(const struct fsb_filter_opts *o, int *listener)
{
	struct sock_filter ins[FSB_SECCOMP_MAX_INSNS];
	struct sock_fprog fprog;
	int n = fsb_seccomp_build(o, ins, ARRAY_SIZE(ins));
	long fd;

	if (n < 0)
		return n;
	fprog.len = (unsigned short)n;
	fprog.filter = ins;
	/*
	 * WAIT_KILLABLE_RECV: once the supervisor has received a call, only
	 * a fatal signal interrupts the wait. Without it a signal handler in
	 * the target makes the kernel restart the call after the core took
	 * it, and the core performs it twice (a spurious EEXIST for
	 * O_CREAT|O_EXCL, a second rename). The kernel creates the listener
	 * O_CLOEXEC.
	 */
	fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
		     SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV,
		     &fprog);
	if (fd < 0)
		return -errno;
	*listener = (int)fd;
	return 0;
}

#else /* !__x86_64__ */

int fsb_seccomp_build(const struct fsb_filter_opts *o, struct sock_filter *prog, size_t cap)
{
	(void)o;
	(void)prog;
	(void)cap;
	return -EOPNOTSUPP;
}

int fsb_seccomp_install(const struct fsb_filter_opts *o, int *listener)
{
	(void)o;
	(void)listener;
	return -EOPNOTSUPP;
}

#endif
