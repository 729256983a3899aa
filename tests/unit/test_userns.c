/*
 * test_userns.c — the user-namespace probe (core/linux/userns.c) `fsbroker run`
 * checks before it starts bubblewrap.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unit.h"
#include "userns.h"

/* This machine makes user namespaces (bubblewrap needs them too). */
static void the_probe_finds_user_namespaces_here(void **state)
{
	char why[256] = "";
	int rc;

	(void)state;
	rc = fsb_userns_probe(why, sizeof(why));
	if (rc < 0) {
		print_message("# skipped: this machine makes no user namespace: %s\n", why);
		skip();
	}
	assert_int_equal(rc, 0);
}

/*
 * Where the kernel says no, the probe says no and why. A seccomp filter in a
 * child makes unshare(2) fail with EPERM, as an LSM hook or a sysctl would.
 */
static void a_refused_unshare_is_reported_with_the_reason(void **state)
{
	struct sock_filter insns[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_unshare, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(insns) / sizeof(insns[0]), .filter = insns };
	char why[256] = "";
	int pipefd[2], status, rc = 1;
	pid_t pid;

	(void)state;
	assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
		    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0)
			_exit(2);
		rc = fsb_userns_probe(why, sizeof(why));
		if (write(pipefd[1], &rc, sizeof(rc)) != sizeof(rc) ||
		    write(pipefd[1], why, sizeof(why)) != sizeof(why))
			_exit(3);
		_exit(0);
	}
	close(pipefd[1]);
	assert_int_equal(read(pipefd[0], &rc, sizeof(rc)), sizeof(rc));
	assert_int_equal(read(pipefd[0], why, sizeof(why)), sizeof(why));
	close(pipefd[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(rc, -EPERM);
	assert_non_null(strstr(why, "user namespace"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(the_probe_finds_user_namespaces_here),
		cmocka_unit_test(a_refused_unshare_is_reported_with_the_reason),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
