/*
 * notify_roundtrip.c — the floor under every call the supervisor serves: a
 * seccomp user notification's round trip with nothing done in between (the
 * call traps, a supervisor thread receives it and answers at once), against
 * the same call native, in one process.
 *
 *   notify_roundtrip N    prints "native_ns=A notify_ns=B sync_wake_ns=C
 *                         open_native_ns=D open_addfd_ns=E open_sync_wake_ns=F"
 *
 * getppid is the call: it does nothing the kernel must look up. sync_wake
 * is the round trip with SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (Linux 6.6),
 * which wakes the supervisor on the trapping CPU; "-" when the kernel has
 * none. open_addfd is the floor under an emulated open: an openat traps,
 * the supervisor opens the same file itself and answers with the fd
 * (SECCOMP_IOCTL_NOTIF_ADDFD with ADDFD_FLAG_SEND), against open_native,
 * the same openat untrapped, and open_sync_wake the emulated open with
 * SYNC_WAKE_UP; close is native and not timed. Medians over N calls each.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stdbool.h>
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
#ifndef SECCOMP_ADDFD_FLAG_SEND
#define SECCOMP_ADDFD_FLAG_SEND (1UL << 1)
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

/* The file the open floor opens: made by main, removed at its end. */
static char open_path[64];

static uint64_t median_of_calls(long n, int nr)
{
	uint64_t *ns = calloc((size_t)n, sizeof(*ns)), m;

	if (ns == NULL)
		exit(1);
	for (long i = 0; i < n; i++) {
		uint64_t t0 = now_ns();
		int fd;

		if (nr == SYS_getppid) {
			syscall(SYS_getppid);
			ns[i] = now_ns() - t0;
			continue;
		}
		fd = openat(AT_FDCWD, open_path, O_WRONLY | O_CLOEXEC);
		ns[i] = now_ns() - t0;
		if (fd < 0) {
			perror("notify_roundtrip: openat");
			exit(1);
		}
		close(fd);
	}
	qsort(ns, (size_t)n, sizeof(*ns), cmp_u64);
	m = ns[n / 2];
	free(ns);
	return m;
}

struct trapped {
	long n;
	int nr;			/* the call that traps: getppid or openat */
	int sync_wake;		/* in: ask for it; out: 1 set, 0 refused */
	int listener;
	uint64_t median;
	int err;
	pthread_mutex_t lock;	/* ready: the listener is made, or err set */
	pthread_cond_t cond;
	bool ready;
};

/* Answers an openat with an fd of its own for the same file, installed
 * in the target as the call's result. */
static void answer_with_fd(int listener, const struct seccomp_notif *req)
{
	int fd = open(open_path, O_WRONLY | O_CLOEXEC);
	struct seccomp_notif_addfd addfd = {
		.id = req->id, .flags = SECCOMP_ADDFD_FLAG_SEND, .srcfd = (unsigned)fd,
	};
	struct seccomp_notif_resp resp = { .id = req->id, .error = -EIO };

	if (fd < 0 || ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &addfd) < 0)
		ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	if (fd >= 0)
		close(fd);
}

/* The supervisor: answers every notification until the listener hangs
 * up, a getppid with 1, an openat with an fd. */
static void *answer_all(void *arg)
{
	const struct trapped *t = arg;
	struct seccomp_notif req;
	struct seccomp_notif_resp resp;

	for (;;) {
		memset(&req, 0, sizeof(req));
		if (ioctl(t->listener, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0) {
			if (errno == EINTR || errno == ENOENT)
				continue;
			return NULL;
		}
		if (req.data.nr == SYS_openat) {
			answer_with_fd(t->listener, &req);
			continue;
		}
		resp = (struct seccomp_notif_resp){ .id = req.id, .val = 1 };
		ioctl(t->listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
	}
}

/*
 * In a thread of its own (a filter binds the thread that installs it and
 * what it starts, not the supervisor started before): install a filter
 * that routes the call to a listener, hand the listener to the supervisor,
 * time N calls.
 */
static void *trapped_thread(void *arg)
{
	struct trapped *t = arg;
	struct sock_filter insns[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)t->nr, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(insns) / sizeof(insns[0]), .filter = insns };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    (t->listener = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
					SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog)) < 0)
		t->err = errno;
	else if (t->sync_wake)
		t->sync_wake = ioctl(t->listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS,
				     SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, 0) == 0;
	pthread_mutex_lock(&t->lock);
	t->ready = true;
	pthread_cond_signal(&t->cond);
	pthread_mutex_unlock(&t->lock);
	if (t->err == 0)
		t->median = median_of_calls(t->n, t->nr);
	return NULL;
}

/* The supervisor, started before the filter so that its own opens do not
 * trap: waits for the listener, then answers. */
static void *supervisor_thread(void *arg)
{
	struct trapped *t = arg;

	pthread_mutex_lock(&t->lock);
	while (!t->ready)
		pthread_cond_wait(&t->cond, &t->lock);
	pthread_mutex_unlock(&t->lock);
	if (t->err == 0)
		answer_all(t);
	return NULL;
}

/*
 * One configuration, in threads of their own started by the caller, which
 * has no filter: one does not stack on another. The supervisor is left
 * blocked in its receive (on Linux before 6.6 a receive does not return
 * when the listener hangs up), with its state: the process's exit ends it.
 */
static int time_trapped(long n, int nr, int sync_wake, uint64_t *median, int *had_sync)
{
	struct trapped *t = calloc(1, sizeof(*t));
	pthread_t th, sv;

	if (t == NULL)
		return ENOMEM;
	*t = (struct trapped){ .n = n, .nr = nr, .sync_wake = sync_wake, .listener = -1,
			       .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	if (pthread_create(&sv, NULL, supervisor_thread, t) != 0)
		return EAGAIN;
	pthread_detach(sv);
	if (pthread_create(&th, NULL, trapped_thread, t) != 0)
		return EAGAIN;
	pthread_join(th, NULL);
	*median = t->median;
	*had_sync = t->sync_wake;
	return t->err;
}

int main(int argc, char **argv)
{
	uint64_t native, plain, sync, open_native, open_addfd, open_sync;
	int had_sync, unused, err, fd;
	long n;

	if (argc != 2 || (n = strtol(argv[1], NULL, 10)) < 1 || n > 10000000) {
		fprintf(stderr, "usage: notify_roundtrip N (1 to 10000000)\n");
		return 2;
	}
	snprintf(open_path, sizeof(open_path), "/tmp/notify_roundtrip.%ld", (long)getpid());
	if ((fd = open(open_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0) {
		perror("notify_roundtrip: cannot make the file to open");
		return 1;
	}
	close(fd);
	native = median_of_calls(n, SYS_getppid);
	open_native = median_of_calls(n, SYS_openat);
	if ((err = time_trapped(n, SYS_getppid, 0, &plain, &had_sync)) != 0 ||
	    (err = time_trapped(n, SYS_getppid, 1, &sync, &had_sync)) != 0 ||
	    (err = time_trapped(n, SYS_openat, 0, &open_addfd, &unused)) != 0 ||
	    (err = time_trapped(n, SYS_openat, 1, &open_sync, &unused)) != 0) {
		fprintf(stderr, "notify_roundtrip: cannot install a filter: %s\n", strerror(err));
		unlink(open_path);
		return 1;
	}
	unlink(open_path);
	printf("native_ns=%llu notify_ns=%llu ", (unsigned long long)native,
	       (unsigned long long)plain);
	if (had_sync)
		printf("sync_wake_ns=%llu", (unsigned long long)sync);
	else
		printf("sync_wake_ns=-");
	printf(" open_native_ns=%llu open_addfd_ns=%llu", (unsigned long long)open_native,
	       (unsigned long long)open_addfd);
	if (had_sync)
		printf(" open_sync_wake_ns=%llu\n", (unsigned long long)open_sync);
	else
		printf(" open_sync_wake_ns=-\n");
	return 0;
}
