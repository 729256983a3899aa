/*
 * fsbt_attack.c — one-call attacks on the sandbox of `fsbroker run`, run
 * inside it by tests/integration/test_run_bypass.c. Each subcommand tries
 * one way around the supervisor and prints one line per attempt,
 * "<attempt>: ok" or "<attempt>: <ERRNO NAME>", so that the test can assert
 * what the kernel or the core answered. The test checks the files on the
 * host itself; this program only reports what it saw.
 *
 *   fsbt_attack openat2 PROTECTED          raw openat2 O_WRONLY (resolve 0 and RESOLVE_*)
 *   fsbt_attack creat PROTECTED            creat(2), which truncates
 *   fsbt_attack tmpfile-link NEWNAME       O_TMPFILE, then linkat onto a protected name
 *                                          (an ordinary new file when O_TMPFILE is refused)
 *   fsbt_attack exchange PROTECTED OTHER   renameat2 RENAME_EXCHANGE both ways
 *   fsbt_attack io-uring                   io_uring_setup
 *   fsbt_attack x32 PROTECTED              x32 numbers of openat, open, creat, unlink
 *   fsbt_attack listener                   a filter with SECCOMP_FILTER_FLAG_NEW_LISTENER
 *   fsbt_attack ptrace                     one child attaches to its sibling
 *   fsbt_attack tiocsti                    TIOCSTI on fd 0
 *   fsbt_attack tty                        open /dev/tty for writing; on success
 *                                          write a fake password prompt to it
 *   fsbt_attack lease FILE                 a write lease on FILE (through a read-only
 *                                          fd), then the lease holder's child opens
 *                                          FILE for writing
 *   fsbt_attack lease-calls FILE [read]    a write lease on FILE, then from the holder's
 *                                          child: a write open, a truncate, with `read`
 *                                          a read open (blocking: only where the pack
 *                                          routes reads), and a mkdir of FILE.d (a call
 *                                          on another file); then the lease is let go
 *                                          and the write open tried again
 *   fsbt_attack chroot DIR                 chroot(DIR), and the capabilities it holds
 *                                          ("capabilities: none" or their mask)
 *   fsbt_attack setversion FILE...         FS_IOC_SETVERSION through a read-only fd on
 *                                          each FILE (the inode generation, and ctime)
 *   fsbt_attack legacy PROTECTED DIR OTHER the old path calls (open, rename, unlink,
 *                                          truncate, chmod, chown, utimes, mknod, link,
 *                                          symlink, mkdir, rmdir) as raw syscalls on a
 *                                          protected file and in a protected directory
 *
 * Exit status: 0 when it ran (whatever the attempts gave), 2 on bad usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/fs.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#ifndef SECCOMP_FILTER_FLAG_NEW_LISTENER
#define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#endif
#ifndef SECCOMP_RET_USER_NOTIF
#define SECCOMP_RET_USER_NOTIF 0x7fc00000U
#endif
#ifndef __NR_io_uring_setup
#define __NR_io_uring_setup 425
#endif
#ifndef __NR_pidfd_open
#define __NR_pidfd_open 434
#endif
#ifndef __NR_pidfd_getfd
#define __NR_pidfd_getfd 438
#endif
#define X32_BIT 0x40000000L

/* Print "<what>: ok" when rc >= 0, else the errno's name. */
static void report(const char *what, long rc)
{
	if (rc >= 0)
		printf("%s: ok\n", what);
	else
		printf("%s: %s\n", what, strerrorname_np(errno) ? strerrorname_np(errno) : "E?");
	fflush(stdout);
}

/* A granted fd is used at once, so that a wrong grant shows on the host. */
static void write_and_close(long fd)
{
	if (fd >= 0) {
		if (write((int)fd, "PWNED\n", 6) < 0)
			perror("write");
		close((int)fd);
	}
}

static int attack_openat2(const char *protected)
{
	struct open_how how = { .flags = O_WRONLY | O_CLOEXEC };
	long fd;

	fd = syscall(SYS_openat2, AT_FDCWD, protected, &how, sizeof(how));
	report("openat2 O_WRONLY", fd);
	write_and_close(fd);
	how.flags = O_WRONLY | O_TRUNC | O_CLOEXEC;
	fd = syscall(SYS_openat2, AT_FDCWD, protected, &how, sizeof(how));
	report("openat2 O_WRONLY|O_TRUNC", fd);
	write_and_close(fd);
	how.resolve = RESOLVE_NO_SYMLINKS;
	fd = syscall(SYS_openat2, AT_FDCWD, protected, &how, sizeof(how));
	report("openat2 RESOLVE_NO_SYMLINKS", fd);
	write_and_close(fd);
	return 0;
}

static int attack_creat(const char *protected)
{
	long fd = creat(protected, 0644);

	report("creat", fd);
	write_and_close(fd);
	return 0;
}

static int attack_tmpfile_link(const char *newname)
{
	char proc[64];
	long fd = open(".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);

	report("open O_TMPFILE", fd);
	if (fd < 0) {
		/* Refused: publish an ordinary new file's fd instead, which is
		 * the same attack on the linkat side. */
		fd = open("link-source.txt", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		report("open link-source.txt", fd);
		if (fd < 0)
			return 0;
		report("link link-source.txt", link("link-source.txt", newname));
	}
	if (write((int)fd, "PLANTED\n", 8) != 8)
		perror("write");
	report("linkat AT_EMPTY_PATH", linkat((int)fd, "", AT_FDCWD, newname, AT_EMPTY_PATH));
	snprintf(proc, sizeof(proc), "/proc/self/fd/%ld", fd);
	report("linkat /proc/self/fd AT_SYMLINK_FOLLOW",
	       linkat(AT_FDCWD, proc, AT_FDCWD, newname, AT_SYMLINK_FOLLOW));
	close((int)fd);
	return 0;
}

static int attack_exchange(const char *protected, const char *other)
{
	report("renameat2 RENAME_EXCHANGE protected,other",
	       renameat2(AT_FDCWD, protected, AT_FDCWD, other, RENAME_EXCHANGE));
	report("renameat2 RENAME_EXCHANGE other,protected",
	       renameat2(AT_FDCWD, other, AT_FDCWD, protected, RENAME_EXCHANGE));
	return 0;
}

static int attack_io_uring(void)
{
	unsigned char params[120] = { 0 };	/* struct io_uring_params */
	long fd = syscall(__NR_io_uring_setup, 4, params);

	report("io_uring_setup", fd);
	if (fd >= 0)
		close((int)fd);
	return 0;
}

static int attack_x32(const char *protected)
{
	long rc;

	rc = syscall(X32_BIT | __NR_openat, AT_FDCWD, protected, O_WRONLY | O_TRUNC, 0);
	report("x32 openat", rc);
	write_and_close(rc);
	rc = syscall(X32_BIT | __NR_open, protected, O_WRONLY | O_TRUNC, 0);
	report("x32 open", rc);
	write_and_close(rc);
	rc = syscall(X32_BIT | __NR_creat, protected, 0644);
	report("x32 creat", rc);
	write_and_close(rc);
	report("x32 unlink", syscall(X32_BIT | __NR_unlink, protected));
	return 0;
}

static int attack_listener(void)
{
	/* openat goes to whoever holds the listener; the rest runs. */
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_openat, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_filter allow[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };
	struct sock_fprog plain = { .len = 1, .filter = allow };
	long fd;

	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	report("seccomp NEW_LISTENER", fd);
	if (fd >= 0)
		close((int)fd);
	/* A plain filter (no listener) is allowed: it can only restrict. */
	report("seccomp plain filter", syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &plain));
	return 0;
}

static int attack_ptrace(void)
{
	pid_t victim, attacker;
	int st;

	fflush(stdout);
	victim = fork();
	if (victim == 0) {
		for (;;)
			pause();
	}
	if (victim < 0) {
		perror("fork");
		return 1;
	}
	attacker = fork();
	if (attacker == 0) {
		char buf[8] = "PWNED";
		struct iovec local = { buf, sizeof(buf) }, remote = { buf, sizeof(buf) };
		long pidfd;

		report("ptrace PTRACE_ATTACH sibling", ptrace(PTRACE_ATTACH, victim, 0, 0));
		report("ptrace PTRACE_SEIZE sibling", ptrace(PTRACE_SEIZE, victim, 0, 0));
		report("process_vm_writev sibling", process_vm_writev(victim, &local, 1, &remote, 1, 0));
		pidfd = syscall(__NR_pidfd_open, victim, 0);
		report("pidfd_open sibling", pidfd);
		if (pidfd >= 0)
			report("pidfd_getfd sibling fd 1", syscall(__NR_pidfd_getfd, pidfd, 1, 0));
		_exit(0);
	}
	if (attacker > 0)
		waitpid(attacker, &st, 0);
	kill(victim, SIGKILL);
	waitpid(victim, &st, 0);
	return 0;
}

static int attack_tiocsti(void)
{
	char c = 'X';

	printf("fd 0 is a tty: %s\n", isatty(0) ? "yes" : "no");
	report("ioctl TIOCSTI fd 0", ioctl(0, TIOCSTI, &c));
	return 0;
}

/* Raw numbers, so that no libc turns them into the *at() calls. */
static int attack_legacy(const char *protected, const char *dir, const char *other)
{
	char in_dir[4096], sub[4096];
	struct timeval tv[2] = { { 1, 0 }, { 1, 0 } };
	long rc;

	snprintf(in_dir, sizeof(in_dir), "%s/planted", dir);
	snprintf(sub, sizeof(sub), "%s", dir);
	rc = syscall(__NR_open, protected, O_WRONLY | O_TRUNC | O_CLOEXEC, 0);
	report("open", rc);
	write_and_close(rc);
	report("rename onto", syscall(__NR_rename, other, protected));
	report("rename away", syscall(__NR_rename, protected, in_dir));
	report("unlink", syscall(__NR_unlink, protected));
	report("truncate", syscall(__NR_truncate, protected, 0L));
	report("chmod", syscall(__NR_chmod, protected, 0600));
	report("chown", syscall(__NR_chown, protected, 1, 1));
	report("lchown", syscall(__NR_lchown, protected, 1, 1));
	report("utimes", syscall(__NR_utimes, protected, tv));
	report("mknod", syscall(__NR_mknod, in_dir, S_IFREG | 0644, 0));
	report("link", syscall(__NR_link, other, in_dir));
	report("symlink", syscall(__NR_symlink, other, in_dir));
	report("mkdir", syscall(__NR_mkdir, in_dir, 0755));
	report("rmdir", syscall(__NR_rmdir, sub));
	return 0;
}

/* A file lease made the core's own open of the file wait for the lease
 * break (45 s) while it held the work gate every other call needs. */
static int attack_lease(const char *file)
{
	int fd, status;
	pid_t child;

	/* The core's open tells the holder of the break (SIGIO by default),
	 * as any open does. Ended by it, the holder would end the sandbox, its
	 * child with it, sometimes before the child could say what its open
	 * got. */
	signal(SIGIO, SIG_IGN);
	fd = open(file, O_RDONLY | O_CLOEXEC);
	report("open for the lease", fd);
	if (fd < 0)
		return 0;
	report("F_SETLEASE F_WRLCK", fcntl(fd, F_SETLEASE, F_WRLCK));
	child = fork();
	if (child == 0) {
		/* The lease holder's child: another open file description. */
		report("child open O_WRONLY", open(file, O_WRONLY | O_CLOEXEC));
		_exit(0);
	}
	waitpid(child, &status, 0);
	fcntl(fd, F_SETLEASE, F_UNLCK);
	close(fd);
	return 0;
}

/* The core opening /dev/tty for the sandbox would hand over the core's
 * controlling terminal: a command could prompt there and read the answer. */
static int attack_lease_calls(const char *file, bool read)
{
	char dir[4096];
	int fd, status;
	pid_t child;

	/* The break notice (SIGIO by default) would end the holder. */
	signal(SIGIO, SIG_IGN);
	fd = open(file, O_RDONLY | O_CLOEXEC);
	report("open for the lease", fd);
	if (fd < 0)
		return 0;
	report("F_SETLEASE F_WRLCK", fcntl(fd, F_SETLEASE, F_WRLCK));
	snprintf(dir, sizeof(dir), "%s.d", file);
	child = fork();
	if (child == 0) {
		report("child open O_WRONLY", open(file, O_WRONLY | O_CLOEXEC));
		report("child truncate", truncate(file, 0));
		if (read)
			report("child open O_RDONLY", open(file, O_RDONLY | O_CLOEXEC));
		report("child mkdir", mkdir(dir, 0755));
		_exit(0);
	}
	waitpid(child, &status, 0);
	fcntl(fd, F_SETLEASE, F_UNLCK);
	close(fd);
	report("open O_WRONLY after the lease", open(file, O_WRONLY | O_APPEND | O_CLOEXEC));
	return 0;
}

static int attack_tty(void)
{
	int fd = open("/dev/tty", O_RDWR | O_CLOEXEC);

	report("open /dev/tty", fd);
	if (fd >= 0) {
		if (write(fd, "FAKE PROMPT Password for sudo: ", 31) < 0)
			report("write /dev/tty", -1);
		close(fd);
	}
	return 0;
}

/* Root on the host is root in the sandbox: it must hold no capability, and
 * chroot must be refused, or the core judges paths in another root than
 * the one the call acts in. */
static int attack_chroot(const char *dir)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "re");

	while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
		unsigned long long eff;

		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			eff ? printf("capabilities: %llx\n", eff) : printf("capabilities: none\n");
	}
	if (f != NULL)
		fclose(f);
	report("chroot", syscall(__NR_chroot, dir));
	return 0;
}

/* Each file opened read-only, its generation read and then set to
 * another: the owner may, natively, with no write permission needed. */
static int attack_setversion(char **files, int n)
{
	for (int i = 0; i < n; i++) {
		char what[4200];
		int fd = open(files[i], O_RDONLY | O_CLOEXEC);
		int gen = 0;

		snprintf(what, sizeof(what), "open %s", files[i]);
		report(what, fd);
		if (fd < 0)
			continue;
		snprintf(what, sizeof(what), "FS_IOC_GETVERSION %s", files[i]);
		report(what, ioctl(fd, FS_IOC_GETVERSION, &gen));
		gen++;
		snprintf(what, sizeof(what), "FS_IOC_SETVERSION %s", files[i]);
		report(what, ioctl(fd, FS_IOC_SETVERSION, &gen));
		close(fd);
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(cmd, "openat2") == 0 && argc == 3)
		return attack_openat2(argv[2]);
	if (strcmp(cmd, "creat") == 0 && argc == 3)
		return attack_creat(argv[2]);
	if (strcmp(cmd, "tmpfile-link") == 0 && argc == 3)
		return attack_tmpfile_link(argv[2]);
	if (strcmp(cmd, "exchange") == 0 && argc == 4)
		return attack_exchange(argv[2], argv[3]);
	if (strcmp(cmd, "io-uring") == 0)
		return attack_io_uring();
	if (strcmp(cmd, "x32") == 0 && argc == 3)
		return attack_x32(argv[2]);
	if (strcmp(cmd, "listener") == 0)
		return attack_listener();
	if (strcmp(cmd, "ptrace") == 0)
		return attack_ptrace();
	if (strcmp(cmd, "tiocsti") == 0)
		return attack_tiocsti();
	if (strcmp(cmd, "lease") == 0 && argc == 3)
		return attack_lease(argv[2]);
	if (strcmp(cmd, "lease-calls") == 0 && (argc == 3 || (argc == 4 && !strcmp(argv[3], "read"))))
		return attack_lease_calls(argv[2], argc == 4);
	if (strcmp(cmd, "tty") == 0)
		return attack_tty();
	if (strcmp(cmd, "chroot") == 0 && argc == 3)
		return attack_chroot(argv[2]);
	if (strcmp(cmd, "setversion") == 0 && argc >= 3)
		return attack_setversion(argv + 2, argc - 2);
	if (strcmp(cmd, "legacy") == 0 && argc == 5)
		return attack_legacy(argv[2], argv[3], argv[4]);
	fprintf(stderr, "usage: fsbt_attack openat2|creat|tmpfile-link|exchange|io-uring|x32|"
			"listener|ptrace|tiocsti|lease|lease-calls|tty|chroot|setversion|legacy ARGS\n");
	return 2;
}
