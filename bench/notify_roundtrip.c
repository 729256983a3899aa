/*
 * notify_roundtrip.c — the floor under every call the supervisor serves: a
 * seccomp user notification's round trip with nothing done in between (the
 * call traps, a supervisor thread receives it and answers at once), against
 * the same call native, in one process.
 *
 *   notify_roundtrip N    prints "native_ns=A notify_ns=B sync_wake_ns=C"
 *
 * getppid is the call: it does nothing the kernel must look up. sync_wake
 * is the round trip with SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (Linux 6.6),
 * which wakes the supervisor on the trapping CPU; "-" when the kernel has
 * none. Medians over N calls each.
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t median_of_calls(long n)
{
	uint64_t *ns = calloc((size_t)n, sizeof(*ns)), m;

	if (ns == NULL)
		exit(1);
	for (long i = 0; i < n; i++) {
		uint64_t t0 = now_ns();

		syscall(SYS_getppid);
		ns[i] = now_ns() - t0;
	}
	qsort(ns, (size_t)n, sizeof(*ns), cmp_u64);
	m = ns[n / 2];
	free(ns);
	return m;
}

/* The supervisor: answers every notification with 0 until the listener
 * hangs up. */
static void *answer_all(void *arg)
{
	int listener = *(int *)arg;
	struct seccomp_notif req;
	struct seccomp_notif_resp resp;

	for (;;) {
		memset(&req, 0, sizeof(req));
		if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0) {
			if (errno == EINTR || errno == ENOENT)
				continue;
			return NULL;
		}
		resp = (struct seccomp_notif_resp){ .id = req.id, .val = 1 };
		ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	}
}

struct trapped {
	long n;
	int sync_wake;		/* in: ask for it; out: 1 set, 0 refused */
	uint64_t median;
	int err;
};

/*
 * In a thread of its own (a filter binds the thread that installs it and
 * what it starts, not the supervisor started before): install a filter
 * that routes getppid to a listener, start a supervisor for it, time N
 * calls.
 */
static void *trapped_thread(void *arg)
{
	struct trapped *t = arg;
	struct sock_filter insns[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(insns) / sizeof(insns[0]), .filter = insns };
	static int listener;
	pthread_t sv;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    (listener = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
				     SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog)) < 0) {
		t->err = errno;
		return NULL;
	}
	if (t->sync_wake)
		t->sync_wake = ioctl(listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS,
				     SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, 0) == 0;
	/* Started after the filter, the supervisor would trap too: it makes
	 * no getppid call, so that does not matter. */
	if (pthread_create(&sv, NULL, answer_all, &listener) != 0) {
		t->err = EAGAIN;
		return NULL;
	}
	pthread_detach(sv);
	t->median = median_of_calls(t->n);
	return NULL;
}

static int time_trapped(long n, int sync_wake, uint64_t *median, int *had_sync)
{
	struct trapped t = { .n = n, .sync_wake = sync_wake };
	pthread_t th;

	if (pthread_create(&th, NULL, trapped_thread, &t) != 0)
		return EAGAIN;
	pthread_join(th, NULL);
	*median = t.median;
	*had_sync = t.sync_wake;
	return t.err;
}

int main(int argc, char **argv)
{
	uint64_t native, plain, sync;
	int had_sync, err;
	long n;

	if (argc != 2 || (n = strtol(argv[1], NULL, 10)) < 1 || n > 10000000) {
		fprintf(stderr, "usage: notify_roundtrip N (1 to 10000000)\n");
		return 2;
	}
	native = median_of_calls(n);
	/* Each in a thread of its own, started by this one, which has no
	 * filter: the second does not stack on the first. */
	if ((err = time_trapped(n, 0, &plain, &had_sync)) != 0) {
		fprintf(stderr, "notify_roundtrip: cannot install a filter: %s\n", strerror(err));
		return 1;
	}
	if ((err = time_trapped(n, 1, &sync, &had_sync)) != 0) {
		fprintf(stderr, "notify_roundtrip: cannot install a filter: %s\n", strerror(err));
		return 1;
	}
	printf("native_ns=%llu notify_ns=%llu ", (unsigned long long)native,
	       (unsigned long long)plain);
	if (had_sync)
		printf("sync_wake_ns=%llu\n", (unsigned long long)sync);
	else
		printf("sync_wake_ns=-\n");
	return 0;
}
