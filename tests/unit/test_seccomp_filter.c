/*
 * test_seccomp_filter.c — the sandbox's seccomp filter (core/linux/seccomp_filter.c).
 *
 * Two halves. The program is run through a small classic-BPF interpreter
 * against every x86_64 syscall number and the argument values that matter,
 * and compared with the table of DESIGN §7.3 written out again here. Then a
 * forked child loads the real filter and sends its listener to the test,
 * which acts as a minimal supervisor: it records what it was asked and
 * answers with an errno no file call produces (EDOM), or CONTINUE.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/audit.h>
#include <linux/btrfs.h>
#include <linux/fs.h>
#include <linux/nsfs.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>

#include "unit.h"
#include "seccomp_filter.h"

#ifndef SECCOMP_FILTER_FLAG_NEW_LISTENER
#define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#endif
#ifndef __X32_SYSCALL_BIT
#define __X32_SYSCALL_BIT 0x40000000
#endif
#define NR_fchmodat2 452
#define NR_setxattrat 463
#define NR_removexattrat 466
#define NR_open_tree_attr 467
#define NR_file_setattr 469
#define TMPFILE_BIT ((unsigned)O_TMPFILE & ~(unsigned)O_DIRECTORY)

/* What the supervisor answers: an errno no file call gives. */
#define ANSWER EDOM

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static char tmpdir[] = "/tmp/fsbt-seccomp-XXXXXX";

static bool unsupported(void)
{
	char why[256];

	if (fsb_seccomp_probe(why, sizeof(why)) == 0)
		return false;
	print_message("# skipped: %s\n", why);
	return true;
}

/* ---- the program, interpreted ---- */

static uint32_t run_bpf(const struct sock_filter *p, int len, const struct seccomp_data *d)
{
	uint32_t A = 0;

	for (int pc = 0; pc < len; pc++) {
		const struct sock_filter *f = &p[pc];

		switch (f->code) {
		case BPF_LD | BPF_W | BPF_ABS:
			assert_true(f->k + 4 <= sizeof(*d));
			memcpy(&A, (const char *)d + f->k, 4);
			break;
		case BPF_JMP | BPF_JEQ | BPF_K:
			pc += A == f->k ? f->jt : f->jf;
			break;
		case BPF_JMP | BPF_JSET | BPF_K:
			pc += (A & f->k) ? f->jt : f->jf;
			break;
		case BPF_RET | BPF_K:
			return f->k;
		default:
			fail_msg("instruction %d: unexpected code 0x%x", pc, f->code);
		}
	}
	fail_msg("the program ran off its end");
	return 0;
}

#define NOTIFY SECCOMP_RET_USER_NOTIF
#define ALLOW SECCOMP_RET_ALLOW
#define KILL SECCOMP_RET_KILL_PROCESS
#define ERR(e) (SECCOMP_RET_ERRNO | (e))

/* DESIGN §7.3, written out independently of the filter's own tables. */
static uint32_t expected(int nr, const __u64 *args, bool reads_broker)
{
	static const int notify[] = {
		__NR_openat2, __NR_creat, __NR_truncate, __NR_rename, __NR_renameat,
		__NR_renameat2, __NR_unlink, __NR_unlinkat, __NR_rmdir, __NR_mkdir,
		__NR_mkdirat, __NR_link, __NR_linkat, __NR_symlink, __NR_symlinkat,
		__NR_chmod, __NR_fchmod, __NR_fchmodat, NR_fchmodat2, __NR_chown,
		__NR_fchown, __NR_lchown, __NR_fchownat, __NR_utime, __NR_utimes,
		__NR_utimensat, __NR_futimesat, __NR_setxattr, __NR_lsetxattr,
		__NR_fsetxattr, NR_setxattrat, __NR_removexattr, __NR_lremovexattr,
		__NR_fremovexattr, NR_removexattrat, __NR_mknod, __NR_mknodat,
		NR_file_setattr,
	};
	static const int eperm[] = {
		__NR_io_uring_setup, __NR_io_uring_enter, __NR_io_uring_register,
		__NR_mount, __NR_umount2, __NR_mount_setattr, __NR_move_mount,
		__NR_open_tree, NR_open_tree_attr, __NR_fsopen, __NR_fsconfig,
		__NR_fsmount, __NR_fspick, __NR_pivot_root, __NR_chroot, __NR_unshare,
		__NR_setns, __NR_ptrace, __NR_process_vm_writev, __NR_pidfd_getfd,
		__NR_open_by_handle_at,
	};
	const uint32_t wflags = O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | TMPFILE_BIT;

	for (size_t i = 0; i < ARRAY_SIZE(notify); i++)
		if (nr == notify[i])
			return NOTIFY;
	for (size_t i = 0; i < ARRAY_SIZE(eperm); i++)
		if (nr == eperm[i])
			return ERR(EPERM);
	switch (nr) {
	case __NR_open:
		return reads_broker || ((uint32_t)args[1] & wflags) ? NOTIFY : ALLOW;
	case __NR_openat:
		return reads_broker || ((uint32_t)args[2] & wflags) ? NOTIFY : ALLOW;
	case __NR_clone3:
		return ERR(ENOSYS);
	case __NR_seccomp:
		return ((uint32_t)args[1] & SECCOMP_FILTER_FLAG_NEW_LISTENER) ? ERR(EPERM) : ALLOW;
	case __NR_ioctl:
		switch ((uint32_t)args[1]) {
		case FS_IOC_SETFLAGS:
		case FS_IOC32_SETFLAGS:
		case FS_IOC_FSSETXATTR:
			return NOTIFY;
		case TIOCSTI:
		case TIOCLINUX:
		case FS_IOC_SETVERSION:
		case FIDEDUPERANGE:
			return ERR(EPERM);
		case TCGETS:
		case TIOCGWINSZ:
		case FIONREAD:
		case FS_IOC_GETFLAGS:
		case FICLONE:
		case FIGETBSZ:	/* 2, which O_RDWR also is */
			return ALLOW;
		}
		/* Anything the allowlist does not name, as an unknown request. */
		return ERR(ENOTTY);
	case __NR_clone:
		if ((uint32_t)args[0] & (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS |
					 CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET))
			return ERR(EPERM);
		/* Another process sharing the umask: the supervisor must know. */
		return ((uint32_t)args[0] & (CLONE_FS | CLONE_THREAD)) == CLONE_FS ? NOTIFY : ALLOW;
	case __NR_umask:
		return NOTIFY;
	}
	return ALLOW;
}

static void test_program_matches_the_table(void **state)
{
	/* Argument values that each test one branch; the high words check
	 * that only the low 32 bits (what the kernel uses) count. */
	static const uint64_t values[] = {
		0, O_RDONLY, O_WRONLY, O_RDWR, O_ACCMODE, O_CREAT, O_TRUNC, O_TMPFILE | O_RDWR,
		O_DIRECTORY, O_RDONLY | O_CLOEXEC | O_NOFOLLOW, O_APPEND, O_PATH,
		1ULL << 32, (1ULL << 32) | O_WRONLY, 0xffffffff00000000ULL,
		FS_IOC_SETFLAGS, FS_IOC32_SETFLAGS, FS_IOC_FSSETXATTR, FS_IOC_GETFLAGS,
		TIOCSTI, (1ULL << 32) | TIOCSTI, TIOCLINUX, TCGETS, FIONREAD, TIOCGWINSZ, FICLONE,
		FS_IOC_SETVERSION, (1ULL << 32) | FS_IOC_SETVERSION, FIDEDUPERANGE,
		NS_GET_USERNS, BTRFS_IOC_SNAP_CREATE,
		SECCOMP_FILTER_FLAG_NEW_LISTENER, SECCOMP_FILTER_FLAG_NEW_LISTENER | 1,
		(1ULL << 32) | SECCOMP_FILTER_FLAG_NEW_LISTENER, 1,
		CLONE_NEWUSER, CLONE_NEWNS | SIGCHLD, CLONE_NEWNET, CLONE_VM | CLONE_VFORK | SIGCHLD,
		CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD,
		CLONE_FS | SIGCHLD, CLONE_VM | CLONE_FS | CLONE_VFORK, (1ULL << 32) | CLONE_FS,
	};
	struct sock_filter prog[FSB_SECCOMP_MAX_INSNS];
	unsigned checked = 0;

	(void)state;
	for (int rb = 0; rb < 2; rb++) {
		struct fsb_filter_opts o = { .reads_broker = rb };
		int len = fsb_seccomp_build(&o, prog, ARRAY_SIZE(prog));

		assert_true(len > 0);
		assert_int_equal(fsb_seccomp_build(&o, prog, (size_t)len - 1), -E2BIG);
		for (int nr = 0; nr < 600; nr++) {
			for (size_t v = 0; v < ARRAY_SIZE(values); v++) {
				struct seccomp_data d = { .nr = nr, .arch = AUDIT_ARCH_X86_64 };
				uint32_t got, want;

				for (int i = 0; i < 6; i++)
					d.args[i] = values[v];
				got = run_bpf(prog, len, &d);
				want = expected(nr, d.args, rb);
				if (got != want)
					fail_msg("nr %d args 0x%llx reads_broker %d: 0x%x, want 0x%x", nr,
						 (unsigned long long)values[v], rb, got, want);
				checked++;

				/* The same number as an x32 call. */
				d.nr = nr | __X32_SYSCALL_BIT;
				assert_int_equal(run_bpf(prog, len, &d), ERR(ENOSYS));
				/* Or through int 0x80, or any other arch. */
				d.nr = nr;
				d.arch = AUDIT_ARCH_I386;
				assert_int_equal(run_bpf(prog, len, &d), KILL);
				d.arch = AUDIT_ARCH_AARCH64;
				assert_int_equal(run_bpf(prog, len, &d), KILL);
			}
		}
		/* A negative number (what ptrace can leave) is no exception. */
		struct seccomp_data neg = { .nr = -1, .arch = AUDIT_ARCH_X86_64 };

		assert_int_equal(run_bpf(prog, len, &neg), ERR(ENOSYS));
	}
	print_message("# %u syscall/argument combinations checked\n", checked);
}

/* ---- the filter, loaded in a child ---- */

/* What the test's supervisor saw and how it answers. */
struct sup {
	int answer;		/* errno, or 0 for CONTINUE */
	unsigned n;
	struct {
		int nr;
		uint32_t arch;
		uint64_t args[6];
	} note[8];
};

/* What the child reports back. */
struct outcome {
	long ret;
	int err;
	int extra;		/* action-specific */
};

typedef void (*action_fn)(const void *arg, struct outcome *out);

/* A read-only fd on "f", opened by the child before it loads the filter. */
static int child_fd = -1;

static int send_fd(int sock, int err, int fd)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = { .iov_base = &err, .iov_len = sizeof(err) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (fd >= 0) {
		struct cmsghdr *cm;

		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = sizeof(ctl.buf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	return sendmsg(sock, &mh, 0) == (ssize_t)sizeof(err) ? 0 : -1;
}

static int recv_fd(int sock, int *err)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = { .iov_base = err, .iov_len = sizeof(*err) };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf),
	};
	struct cmsghdr *cm;
	int fd = -1;

	if (recvmsg(sock, &mh, MSG_CMSG_CLOEXEC) != (ssize_t)sizeof(*err))
		return -1;
	cm = CMSG_FIRSTHDR(&mh);
	if (cm && cm->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

/* Receive one notification, record it, answer it. */
static int supervise_one(int listener, struct sup *s, uint64_t *id_out, bool answer)
{
	struct seccomp_notif_sizes sz;
	struct seccomp_notif *req;
	struct seccomp_notif_resp *resp;
	int err = 0;

	assert_int_equal(syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sz), 0);
	/* The kernel's structs may be larger than our headers' ones. */
	req = calloc(1, sz.seccomp_notif > sizeof(*req) ? sz.seccomp_notif : sizeof(*req));
	resp = calloc(1, sz.seccomp_notif_resp > sizeof(*resp) ? sz.seccomp_notif_resp
								: sizeof(*resp));
	assert_non_null(req);
	assert_non_null(resp);
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, req) != 0) {
		err = -errno;
		goto out;
	}
	if (s->n < ARRAY_SIZE(s->note)) {
		s->note[s->n].nr = req->data.nr;
		s->note[s->n].arch = req->data.arch;
		memcpy(s->note[s->n].args, req->data.args, sizeof(s->note[s->n].args));
	}
	s->n++;
	if (id_out)
		*id_out = req->id;
	if (answer) {
		resp->id = req->id;
		if (s->answer)
			resp->error = -s->answer;
		else
			resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, resp) != 0 && errno != ENOENT)
			err = -errno;
	}
out:
	free(req);
	free(resp);
	return err;
}

/*
 * Fork a child in tmpdir that loads the filter with `o`, sends the
 * listener, runs `fn` and reports its outcome. The parent supervises until
 * the outcome arrives. Returns the child's wait status.
 */
static int run_child(const struct fsb_filter_opts *o, action_fn fn, const void *arg,
		     struct sup *s, struct outcome *out)
{
	int sp[2], listener, err = 0, status;
	bool done = false;
	pid_t pid;

	memset(out, 0, sizeof(*out));
	out->ret = -12345;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit no_core = { 0, 0 };
		int lfd = -1, r;

		close(sp[0]);
		setrlimit(RLIMIT_CORE, &no_core);
		if (chdir(tmpdir) != 0)
			_exit(100);
		child_fd = open("f", O_RDONLY | O_CLOEXEC);
		r = prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ? -errno : 0;
		if (!r)
			r = fsb_seccomp_install(o, &lfd);
		if (send_fd(sp[1], r, lfd) != 0)
			_exit(101);
		if (r)
			_exit(102);
		out->extra = fcntl(lfd, F_GETFD);
		close(lfd);
		fn(arg, out);
		if (write(sp[1], out, sizeof(*out)) != (ssize_t)sizeof(*out))
			_exit(103);
		_exit(0);
	}
	close(sp[1]);
	listener = recv_fd(sp[0], &err);
	assert_int_equal(err, 0);
	assert_true(listener >= 0);

	for (int rounds = 0; !done && rounds < 1000; rounds++) {
		struct pollfd p[2] = {
			{ .fd = listener, .events = POLLIN },
			{ .fd = sp[0], .events = POLLIN },
		};

		if (poll(p, 2, 10000) <= 0)
			break;
		if (p[0].revents & POLLIN)
			assert_int_equal(supervise_one(listener, s, NULL, true), 0);
		if (p[1].revents & (POLLIN | POLLHUP)) {
			ssize_t n = read(sp[0], out, sizeof(*out));

			if (n != (ssize_t)sizeof(*out))
				out->ret = -12345;	/* died before reporting */
			done = true;
		}
	}
	if (!done)
		kill(pid, SIGKILL);
	close(listener);
	close(sp[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

/* A syscall with placeholders for the child's paths, fd and buffer. */
#define P_F (-1001L)		/* "f", an existing file */
#define P_G (-1002L)		/* "g", which does not exist */
#define P_FD (-1003L)		/* a read-only fd on "f" */
#define P_BUF (-1004L)		/* 256 zeroed bytes */
#define P_XNAME (-1005L)	/* "user.fsbt" */
#define P_DOT (-1006L)		/* "." */
#define P_HOW (-1007L)		/* struct open_how, O_RDONLY */

struct call {
	const char *name;
	long nr;
	long a[6];
	int want_errno;		/* for refused calls */
};

static void do_call(const void *arg, struct outcome *out)
{
	const struct call *c = arg;
	static char buf[256];
	static struct open_how how = { .flags = O_RDONLY };
	long a[6];

	for (int i = 0; i < 6; i++) {
		switch (c->a[i]) {
		case P_F: a[i] = (long)"f"; break;
		case P_G: a[i] = (long)"g"; break;
		case P_FD: a[i] = child_fd; break;
		case P_BUF: a[i] = (long)buf; break;
		case P_XNAME: a[i] = (long)"user.fsbt"; break;
		case P_DOT: a[i] = (long)"."; break;
		case P_HOW: a[i] = (long)&how; break;
		default: a[i] = c->a[i];
		}
	}
	out->ret = syscall(c->nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	out->err = out->ret < 0 ? errno : 0;
	/* clone without the namespace check would have made a child. */
	if (c->nr == __NR_clone && out->ret == 0)
		_exit(0);
}

#define AT AT_FDCWD

static const struct call notified[] = {
	{ "open O_WRONLY", __NR_open, { P_F, O_WRONLY }, 0 },
	{ "open O_RDWR", __NR_open, { P_F, O_RDWR }, 0 },
	{ "open O_RDONLY|O_TRUNC", __NR_open, { P_F, O_RDONLY | O_TRUNC }, 0 },
	{ "open O_CREAT", __NR_open, { P_G, O_RDONLY | O_CREAT, 0644 }, 0 },
	{ "openat O_WRONLY|O_CREAT", __NR_openat, { AT, P_G, O_WRONLY | O_CREAT, 0644 }, 0 },
	{ "openat O_ACCMODE", __NR_openat, { AT, P_F, O_ACCMODE }, 0 },
	{ "openat O_TMPFILE", __NR_openat, { AT, P_DOT, O_TMPFILE | O_RDWR, 0600 }, 0 },
	{ "creat", __NR_creat, { P_G, 0644 }, 0 },
	{ "openat2 O_RDONLY", __NR_openat2, { AT, P_F, P_HOW, sizeof(struct open_how) }, 0 },
	{ "truncate", __NR_truncate, { P_F, 0 }, 0 },
	{ "rename", __NR_rename, { P_F, P_G }, 0 },
	{ "renameat", __NR_renameat, { AT, P_F, AT, P_G }, 0 },
	{ "renameat2 RENAME_EXCHANGE", __NR_renameat2, { AT, P_F, AT, P_DOT, 2 }, 0 },
	{ "unlink", __NR_unlink, { P_F }, 0 },
	{ "unlinkat", __NR_unlinkat, { AT, P_F, 0 }, 0 },
	{ "unlinkat AT_REMOVEDIR", __NR_unlinkat, { AT, P_G, AT_REMOVEDIR }, 0 },
	{ "rmdir", __NR_rmdir, { P_G }, 0 },
	{ "mkdir", __NR_mkdir, { P_G, 0755 }, 0 },
	{ "mkdirat", __NR_mkdirat, { AT, P_G, 0755 }, 0 },
	{ "link", __NR_link, { P_F, P_G }, 0 },
	{ "linkat", __NR_linkat, { AT, P_F, AT, P_G, 0 }, 0 },
	{ "linkat AT_EMPTY_PATH", __NR_linkat, { P_FD, (long)"", AT, P_G, AT_EMPTY_PATH }, 0 },
	{ "symlink", __NR_symlink, { P_F, P_G }, 0 },
	{ "symlinkat", __NR_symlinkat, { P_F, AT, P_G }, 0 },
	{ "chmod", __NR_chmod, { P_F, 0600 }, 0 },
	{ "fchmod", __NR_fchmod, { P_FD, 0600 }, 0 },
	{ "fchmodat", __NR_fchmodat, { AT, P_F, 0600 }, 0 },
	{ "fchmodat2", NR_fchmodat2, { AT, P_F, 0600, 0 }, 0 },
	{ "chown", __NR_chown, { P_F, 0, 0 }, 0 },
	{ "fchown", __NR_fchown, { P_FD, 0, 0 }, 0 },
	{ "lchown", __NR_lchown, { P_F, 0, 0 }, 0 },
	{ "fchownat", __NR_fchownat, { AT, P_F, 0, 0, 0 }, 0 },
	{ "utime", __NR_utime, { P_F, 0 }, 0 },
	{ "utimes", __NR_utimes, { P_F, 0 }, 0 },
	{ "utimensat", __NR_utimensat, { AT, P_F, 0, 0 }, 0 },
	{ "futimesat", __NR_futimesat, { AT, P_F, 0 }, 0 },
	{ "setxattr", __NR_setxattr, { P_F, P_XNAME, P_BUF, 1, 0 }, 0 },
	{ "lsetxattr", __NR_lsetxattr, { P_F, P_XNAME, P_BUF, 1, 0 }, 0 },
	{ "fsetxattr", __NR_fsetxattr, { P_FD, P_XNAME, P_BUF, 1, 0 }, 0 },
	{ "setxattrat", NR_setxattrat, { AT, P_F, 0, P_XNAME, P_BUF, 32 }, 0 },
	{ "removexattr", __NR_removexattr, { P_F, P_XNAME }, 0 },
	{ "lremovexattr", __NR_lremovexattr, { P_F, P_XNAME }, 0 },
	{ "fremovexattr", __NR_fremovexattr, { P_FD, P_XNAME }, 0 },
	{ "removexattrat", NR_removexattrat, { AT, P_F, 0, P_XNAME }, 0 },
	{ "mknod", __NR_mknod, { P_G, S_IFIFO | 0600, 0 }, 0 },
	{ "mknodat", __NR_mknodat, { AT, P_G, S_IFIFO | 0600, 0 }, 0 },
	{ "ioctl FS_IOC_SETFLAGS", __NR_ioctl, { P_FD, FS_IOC_SETFLAGS, P_BUF }, 0 },
	{ "ioctl FS_IOC_FSSETXATTR", __NR_ioctl, { P_FD, FS_IOC_FSSETXATTR, P_BUF }, 0 },
	{ "file_setattr", NR_file_setattr, { AT, P_F, P_BUF, 24, 0 }, 0 },
};

static void test_changing_calls_are_notified(void **state)
{
	struct fsb_filter_opts o = { 0 };
	struct stat before, after;

	(void)state;
	if (unsupported())
		skip();
	for (size_t i = 0; i < ARRAY_SIZE(notified); i++) {
		const struct call *c = &notified[i];
		struct sup s = { .answer = ANSWER };
		struct outcome out;
		int status;
		char f[PATH_MAX];

		snprintf(f, sizeof(f), "%s/f", tmpdir);
		assert_int_equal(stat(f, &before), 0);
		status = run_child(&o, do_call, c, &s, &out);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			fail_msg("%s: child status 0x%x", c->name, status);
		if (s.n != 1 || s.note[0].nr != c->nr || s.note[0].arch != AUDIT_ARCH_X86_64)
			fail_msg("%s: %u notifications (first nr %d), want 1 of nr %ld", c->name,
				 s.n, s.n ? s.note[0].nr : -1, c->nr);
		if (out.ret != -1 || out.err != ANSWER)
			fail_msg("%s: returned %ld errno %d, want the supervisor's EDOM", c->name,
				 out.ret, out.err);
		/* Refused by the supervisor: nothing happened. */
		assert_int_equal(stat(f, &after), 0);
		assert_int_equal(before.st_ino, after.st_ino);
		assert_int_equal(before.st_mode, after.st_mode);
		assert_int_equal(before.st_size, after.st_size);
		snprintf(f, sizeof(f), "%s/g", tmpdir);
		assert_int_equal(access(f, F_OK), -1);
	}
}

static void test_write_open_carries_its_flags(void **state)
{
	static const struct call c = { "openat", __NR_openat,
				       { AT, P_G, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640 }, 0 };
	struct fsb_filter_opts o = { 0 };
	struct sup s = { .answer = ANSWER };
	struct outcome out;

	(void)state;
	if (unsupported())
		skip();
	assert_int_equal(run_child(&o, do_call, &c, &s, &out), 0);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.note[0].nr, __NR_openat);
	assert_int_equal((int)s.note[0].args[0], AT_FDCWD);
	assert_int_equal((int)s.note[0].args[2], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC);
	assert_int_equal(s.note[0].args[3], 0640);
	assert_int_equal(out.err, ANSWER);
	/* The listener arrived O_CLOEXEC (the child checked its copy). */
	assert_true(out.extra >= 0 && (out.extra & FD_CLOEXEC));
}

static const struct call native[] = {
	{ "open O_RDONLY", __NR_open, { P_F, O_RDONLY }, 0 },
	{ "openat O_RDONLY|O_CLOEXEC", __NR_openat, { AT, P_F, O_RDONLY | O_CLOEXEC }, 0 },
	{ "openat O_DIRECTORY", __NR_openat, { AT, P_DOT, O_RDONLY | O_DIRECTORY }, 0 },
	{ "openat high word set", __NR_openat, { AT, P_F, (long)(1UL << 32) | O_RDONLY }, 0 },
	{ "ioctl FIONREAD", __NR_ioctl, { P_FD, FIONREAD, P_BUF }, 0 },
	{ "ioctl FIOCLEX", __NR_ioctl, { P_FD, FIOCLEX, 0 }, 0 },
	{ "getpid", __NR_getpid, { 0 }, 0 },
	{ "clone without namespaces", __NR_clone, { SIGCHLD, 0, 0, 0, 0 }, 0 },
};

static void test_reads_run_natively(void **state)
{
	struct fsb_filter_opts o = { 0 };

	(void)state;
	if (unsupported())
		skip();
	for (size_t i = 0; i < ARRAY_SIZE(native); i++) {
		struct sup s = { .answer = ANSWER };
		struct outcome out;

		assert_int_equal(run_child(&o, do_call, &native[i], &s, &out), 0);
		if (s.n != 0 || out.ret < 0)
			fail_msg("%s: %u notifications, returned %ld errno %d", native[i].name, s.n,
				 out.ret, out.err);
	}
}

static void test_reads_broker_notifies_read_opens(void **state)
{
	struct fsb_filter_opts o = { .reads_broker = true };

	(void)state;
	if (unsupported())
		skip();
	for (size_t i = 0; i < 3; i++) {
		struct sup s = { .answer = ANSWER };
		struct outcome out;

		assert_int_equal(run_child(&o, do_call, &native[i], &s, &out), 0);
		if (s.n != 1 || s.note[0].nr != native[i].nr || out.err != ANSWER)
			fail_msg("%s: %u notifications, errno %d", native[i].name, s.n, out.err);
	}
}

static const struct call refused[] = {
	{ "clone3", __NR_clone3, { 0, 0 }, ENOSYS },
	{ "x32 getpid", __X32_SYSCALL_BIT | __NR_getpid, { 0 }, ENOSYS },
	{ "x32 open", __X32_SYSCALL_BIT | __NR_open, { P_F, O_WRONLY }, ENOSYS },
	{ "io_uring_setup", __NR_io_uring_setup, { 1, P_BUF }, EPERM },
	{ "io_uring_enter", __NR_io_uring_enter, { -1, 0, 0, 0, 0, 0 }, EPERM },
	{ "io_uring_register", __NR_io_uring_register, { -1, 0, 0, 0 }, EPERM },
	{ "mount", __NR_mount, { (long)"none", P_G, (long)"tmpfs", 0, 0 }, EPERM },
	{ "umount2", __NR_umount2, { P_G, 0 }, EPERM },
	{ "fsopen", __NR_fsopen, { (long)"tmpfs", 0 }, EPERM },
	{ "open_tree", __NR_open_tree, { AT, P_DOT, 0 }, EPERM },
	{ "pivot_root", __NR_pivot_root, { P_DOT, P_DOT }, EPERM },
	{ "chroot", __NR_chroot, { P_DOT }, EPERM },
	{ "unshare(0)", __NR_unshare, { 0 }, EPERM },
	{ "unshare(CLONE_NEWUSER)", __NR_unshare, { CLONE_NEWUSER }, EPERM },
	{ "clone(CLONE_NEWUSER)", __NR_clone, { CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0 }, EPERM },
	{ "setns", __NR_setns, { -1, 0 }, EPERM },
	{ "ptrace", __NR_ptrace, { 0 /* PTRACE_TRACEME */ }, EPERM },
	{ "process_vm_writev", __NR_process_vm_writev, { 0, 0, 0, 0, 0, 0 }, EPERM },
	{ "pidfd_getfd", __NR_pidfd_getfd, { -1, 0, 0 }, EPERM },
	{ "open_by_handle_at", __NR_open_by_handle_at, { -1, 0, 0 }, EPERM },
	{ "seccomp NEW_LISTENER", __NR_seccomp,
	  { SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, P_BUF }, EPERM },
	{ "ioctl TIOCSTI", __NR_ioctl, { P_FD, TIOCSTI, P_BUF }, EPERM },
	{ "ioctl TIOCSTI, high word set", __NR_ioctl, { P_FD, (long)(1UL << 32) | TIOCSTI, P_BUF },
	  EPERM },
	{ "ioctl TIOCLINUX", __NR_ioctl, { P_FD, TIOCLINUX, P_BUF }, EPERM },
	{ "ioctl FS_IOC_SETVERSION", __NR_ioctl, { P_FD, FS_IOC_SETVERSION, P_BUF }, EPERM },
	{ "ioctl FS_IOC_SETVERSION, high word set", __NR_ioctl,
	  { P_FD, (long)(1UL << 32) | FS_IOC_SETVERSION, P_BUF }, EPERM },
	{ "ioctl FIDEDUPERANGE", __NR_ioctl, { P_FD, FIDEDUPERANGE, P_BUF }, EPERM },
	{ "ioctl BTRFS_IOC_SNAP_CREATE (not on the allowlist)", __NR_ioctl,
	  { P_FD, BTRFS_IOC_SNAP_CREATE, P_BUF }, ENOTTY },
};

static void test_forbidden_calls_are_refused(void **state)
{
	struct fsb_filter_opts o = { 0 };

	(void)state;
	if (unsupported())
		skip();
	for (size_t i = 0; i < ARRAY_SIZE(refused); i++) {
		const struct call *c = &refused[i];
		struct sup s = { .answer = ANSWER };
		struct outcome out;

		assert_int_equal(run_child(&o, do_call, c, &s, &out), 0);
		if (s.n != 0 || out.ret != -1 || out.err != c->want_errno)
			fail_msg("%s: %u notifications, returned %ld errno %d (%s), want %s",
				 c->name, s.n, out.ret, out.err, strerror(out.err),
				 strerror(c->want_errno));
	}
}

static void load_plain_filter(const void *arg, struct outcome *out)
{
	struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	struct sock_fprog prog = { .len = 1, .filter = &allow };

	(void)arg;
	out->ret = syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
	out->err = out->ret < 0 ? errno : 0;
	/* Ours still holds beneath it. */
	out->extra = open("g", O_WRONLY | O_CREAT, 0600) < 0 ? errno : 0;
}

static void test_plain_seccomp_filter_is_allowed(void **state)
{
	struct fsb_filter_opts o = { 0 };
	struct sup s = { .answer = ANSWER };
	struct outcome out;

	(void)state;
	if (unsupported())
		skip();
	assert_int_equal(run_child(&o, load_plain_filter, NULL, &s, &out), 0);
	assert_int_equal(out.ret, 0);
	assert_int_equal(out.extra, ANSWER);
	assert_int_equal(s.n, 1);
}

static void create_file(const void *arg, struct outcome *out)
{
	int fd = open(arg, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

	out->ret = fd;
	out->err = fd < 0 ? errno : 0;
}

static void test_continue_lets_the_call_run(void **state)
{
	struct fsb_filter_opts o = { 0 };
	struct sup s = { .answer = 0 };
	struct outcome out;
	char path[PATH_MAX];

	(void)state;
	if (unsupported())
		skip();
	assert_int_equal(run_child(&o, create_file, "made", &s, &out), 0);
	assert_int_equal(s.n, 1);
	assert_true(out.ret >= 0);
	snprintf(path, sizeof(path), "%s/made", tmpdir);
	assert_int_equal(unlink(path), 0);
}

static void int80_getpid(const void *arg, struct outcome *out)
{
	long r = 20;	/* getpid in the i386 table */

	(void)arg;
	__asm__ volatile("int $0x80" : "+a"(r) : : "memory", "r8", "r9", "r10", "r11");
	out->ret = r;
}

static void test_other_arch_is_killed(void **state)
{
	struct fsb_filter_opts o = { 0 };
	struct sup s = { .answer = ANSWER };
	struct outcome out;
	int status;

	(void)state;
	if (unsupported())
		skip();
	status = run_child(&o, int80_getpid, NULL, &s, &out);
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV) {
		print_message("# skipped: this kernel runs no i386 code (ia32_emulation off)\n");
		skip();
	}
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGSYS);
	assert_int_equal(s.n, 0);
}

/* ---- WAIT_KILLABLE_RECV ---- */

static volatile sig_atomic_t handled;

static void on_usr1(int sig)
{
	(void)sig;
	handled++;
}

static void test_signal_after_recv_does_not_restart_the_call(void **state)
{
	struct fsb_filter_opts o = { 0 };
	struct sup s = { .answer = ANSWER };
	struct outcome out;
	int sp[2], listener, err = 0, status;
	uint64_t id = 0;
	pid_t pid;

	(void)state;
	if (unsupported())
		skip();
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
		int lfd = -1, r;

		close(sp[0]);
		if (chdir(tmpdir) != 0 || sigaction(SIGUSR1, &sa, NULL) != 0)
			_exit(100);
		r = prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ? -errno : 0;
		if (!r)
			r = fsb_seccomp_install(&o, &lfd);
		if (send_fd(sp[1], r, lfd) != 0 || r)
			_exit(101);
		close(lfd);
		memset(&out, 0, sizeof(out));
		out.ret = open("k", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		out.err = out.ret < 0 ? errno : 0;
		out.extra = handled;
		if (write(sp[1], &out, sizeof(out)) != (ssize_t)sizeof(out))
			_exit(102);
		_exit(0);
	}
	close(sp[1]);
	listener = recv_fd(sp[0], &err);
	assert_int_equal(err, 0);
	assert_true(listener >= 0);

	/* Take the call, then signal the caller while it waits. */
	assert_int_equal(supervise_one(listener, &s, &id, false), 0);
	assert_int_equal(kill(pid, SIGUSR1), 0);
	usleep(100 * 1000);
	/* Still the same call, not interrupted and restarted as a new one. */
	assert_int_equal(ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id), 0);
	struct pollfd p = { .fd = listener, .events = POLLIN };

	assert_int_equal(poll(&p, 1, 0), 0);

	struct seccomp_notif_resp resp = { .id = id, .error = -ANSWER };

	assert_int_equal(ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp), 0);
	assert_int_equal(read(sp[0], &out, sizeof(out)), (ssize_t)sizeof(out));
	assert_int_equal(out.ret, -1);
	assert_int_equal(out.err, ANSWER);
	assert_int_equal(out.extra, 1);	/* the handler ran once the call was answered */
	assert_int_equal(s.n, 1);
	close(listener);
	close(sp[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(status, 0);
}

static int group_setup(void **state)
{
	char path[PATH_MAX];
	int fd;

	(void)state;
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(path, sizeof(path), "%s/f", tmpdir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, "content\n", 8) != 8)
		return -1;
	close(fd);
	return 0;
}

static int group_teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_program_matches_the_table),
		cmocka_unit_test(test_changing_calls_are_notified),
		cmocka_unit_test(test_write_open_carries_its_flags),
		cmocka_unit_test(test_reads_run_natively),
		cmocka_unit_test(test_reads_broker_notifies_read_opens),
		cmocka_unit_test(test_forbidden_calls_are_refused),
		cmocka_unit_test(test_plain_seccomp_filter_is_allowed),
		cmocka_unit_test(test_continue_lets_the_call_run),
		cmocka_unit_test(test_other_arch_is_killed),
		cmocka_unit_test(test_signal_after_recv_does_not_restart_the_call),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
