/*
 * keep_awake.c — idle-class threads that spin while routed calls come in
 * quick succession (see keep_awake.h).
 *
 * A burst is calls that each come less than WINDOW_NS after the answer
 * to the one before. The receivers count the burst's calls being served
 * and note each answer's time; a keeper spins while one is served and
 * WINDOW_NS after the last answer, then sleeps on a futex, which the next
 * call of a burst wakes. A lone call (a build's few calls, a command
 * that rarely changes a file) wakes nothing. The receiver looks at
 * `sleepers` after counting its call in `busy`, a keeper at `busy` after
 * counting itself in `sleepers` (both sequentially consistent), so one of
 * them always sees the other: no keeper sleeps through a burst.
 *
 * SCHED_IDLE needs no privilege: a keeper runs only on a CPU with nothing
 * else to run and is preempted by any other thread waking there.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "keep_awake.h"
#include "log.h"

/* A call that comes within this long of the last answer is part of a
 * burst; the keepers spin while one is served and this long after its
 * answer. Longer than the gap between two calls of a command at work
 * (the target's own few µs to tens of µs between them), short enough
 * that a command that has moved on costs little. */
#define WINDOW_NS 100000ULL
/* At most this many keepers: a routed call involves two CPUs, the
 * target's and the receiver's. */
#define KEEPERS_MAX 2

static struct {
	pthread_mutex_t mu;	/* holds, the threads' start and stop */
	unsigned holds;
	int nthreads;
	pthread_t threads[KEEPERS_MAX];
	/* The fields below are atomic. */
	uint64_t last_answer_ns;	/* any call's */
	uint64_t burst_answer_ns;	/* the last call of a burst's */
	unsigned busy;		/* calls of a burst being served */
	uint32_t gen;		/* the futex word: bumped to wake sleepers */
	unsigned sleepers;	/* keepers on the futex or about to be */
	bool stopping;
	int enabled;		/* 0 unknown, 1 on, -1 off; under mu */
} ka = { .mu = PTHREAD_MUTEX_INITIALIZER };

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static bool spinning_wanted(void)
{
	return __atomic_load_n(&ka.busy, __ATOMIC_SEQ_CST) > 0 ||
	       now_ns() - __atomic_load_n(&ka.burst_answer_ns, __ATOMIC_SEQ_CST) < WINDOW_NS;
}

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

static void *keeper(void *arg)
{
	/* (glibc's thread attributes take no SCHED_IDLE: set here.) */
	struct sched_param none = { .sched_priority = 0 };

	(void)arg;
	/* A keeper that would spin beside real work is none. */
	if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &none) != 0)
		return NULL;
	while (!__atomic_load_n(&ka.stopping, __ATOMIC_SEQ_CST)) {
		uint32_t gen = __atomic_load_n(&ka.gen, __ATOMIC_SEQ_CST);

		if (spinning_wanted()) {
			for (int i = 0; i < 64; i++)
				cpu_relax();
			continue;
		}
		__atomic_add_fetch(&ka.sleepers, 1, __ATOMIC_SEQ_CST);
		if (!spinning_wanted() && !__atomic_load_n(&ka.stopping, __ATOMIC_SEQ_CST))
			syscall(SYS_futex, &ka.gen, FUTEX_WAIT_PRIVATE, gen, NULL, NULL, 0);
		__atomic_sub_fetch(&ka.sleepers, 1, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

static void wake_sleepers(void)
{
	__atomic_add_fetch(&ka.gen, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &ka.gen, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* How many keepers: one per CPU this process may run on, up to the cap. */
static int keepers_wanted(void)
{
	cpu_set_t set;
	int n;

	if (sched_getaffinity(0, sizeof(set), &set) < 0)
		return 1;
	n = CPU_COUNT(&set);
	return n < 1 ? 1 : n > KEEPERS_MAX ? KEEPERS_MAX : n;
}

void fsb_keep_awake_hold(void)
{
	const char *v;
	int n, rc;

	pthread_mutex_lock(&ka.mu);
	if (ka.enabled == 0) {
		v = getenv("FSBROKER_KEEP_AWAKE");
		ka.enabled = v != NULL && strcmp(v, "0") == 0 ? -1 : 1;
	}
	if (ka.enabled < 0 || ka.holds++ > 0) {
		pthread_mutex_unlock(&ka.mu);
		return;
	}
	__atomic_store_n(&ka.stopping, false, __ATOMIC_SEQ_CST);
	n = keepers_wanted();
	for (ka.nthreads = 0; ka.nthreads < n; ka.nthreads++) {
		if ((rc = pthread_create(&ka.threads[ka.nthreads], NULL, keeper, NULL)) != 0) {
			fsb_log(FSB_LOG_WARN, "supervisor: cannot start a thread that keeps the "
					      "CPUs awake (%s): calls are answered, only slower",
				strerror(rc));
			break;
		}
	}
	pthread_mutex_unlock(&ka.mu);
}

void fsb_keep_awake_release(void)
{
	pthread_mutex_lock(&ka.mu);
	if (ka.enabled < 0 || ka.holds == 0 || --ka.holds > 0) {
		pthread_mutex_unlock(&ka.mu);
		return;
	}
	__atomic_store_n(&ka.stopping, true, __ATOMIC_SEQ_CST);
	wake_sleepers();
	for (int i = 0; i < ka.nthreads; i++)
		pthread_join(ka.threads[i], NULL);
	ka.nthreads = 0;
	pthread_mutex_unlock(&ka.mu);
}

bool fsb_keep_awake_call_begins(void)
{
	uint64_t now = now_ns();

	if (now - __atomic_load_n(&ka.last_answer_ns, __ATOMIC_SEQ_CST) >= WINDOW_NS)
		return false;	/* a lone call: nothing to keep awake for */
	__atomic_add_fetch(&ka.busy, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&ka.sleepers, __ATOMIC_SEQ_CST) > 0)
		wake_sleepers();
	return true;
}

void fsb_keep_awake_call_answered(bool burst)
{
	uint64_t now = now_ns();

	__atomic_store_n(&ka.last_answer_ns, now, __ATOMIC_SEQ_CST);
	if (!burst)
		return;
	__atomic_store_n(&ka.burst_answer_ns, now, __ATOMIC_SEQ_CST);
	__atomic_sub_fetch(&ka.busy, 1, __ATOMIC_SEQ_CST);
}
