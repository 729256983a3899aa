/*
 * work.h — the order in which slow requests run on libuv's thread pool.
 *
 * Writes (a grant with its backup, ModifyBackup, a commit) may run side by
 * side. A host operation runs alone: it judges a directory's entries and
 * then changes the directory, and no write of ours may come in between
 * (one could create an entry the operation never judged). The queue lives
 * on the loop, and a job is handed to the pool only when it may run, so no
 * pool thread ever waits on another job: a long copy holds one thread, not
 * all of them.
 *
 * Threads of the core's own (the seccomp supervisor's receivers, which
 * serve a call where they receive it) take the same turns through a gate:
 * a readers-writer lock that prefers writers, which every job also holds
 * while it runs. A pool job may wait there for such a thread, never for
 * another job.
 */
#ifndef FSB_WORK_H
#define FSB_WORK_H

#include <pthread.h>
#include <stdbool.h>

#include <uv.h>

struct fsb_work_queue;

enum fsb_work_kind {
	FSB_WORK_SHARED,	/* runs beside other shared work */
	FSB_WORK_EXCLUSIVE,	/* runs alone */
};

struct fsb_work {
	uv_work_t req;
	enum fsb_work_kind kind;
	void (*run)(struct fsb_work *w);	/* on a thread of the pool */
	void (*done)(struct fsb_work *w);	/* on the loop, afterwards; may free w */
	struct fsb_work *next;			/* in the queue */
	struct fsb_work_queue *queue;
};

struct fsb_work_queue {
	uv_loop_t *loop;
	struct fsb_work *head, *tail;	/* waiting, in the order submitted */
	unsigned shared_running;
	bool exclusive_running;
	pthread_rwlock_t gate;		/* held by every job and every fsb_work_enter() */
};

void fsb_work_queue_init(struct fsb_work_queue *q, uv_loop_t *loop);

void fsb_work_queue_destroy(struct fsb_work_queue *q);

/**
 * Run `w` once the work before it allows: in submission order, shared work
 * side by side, exclusive work alone (shared work submitted after it waits
 * for it, so it is not starved). On the loop only.
 */
void fsb_work_submit(struct fsb_work_queue *q, struct fsb_work *w);

/**
 * On a thread that is neither the loop nor the pool: wait until work of
 * `kind` may run, as a job of that kind would. Pair with fsb_work_leave().
 * Never while holding the broker lock (jobs take the gate before it).
 */
void fsb_work_enter(struct fsb_work_queue *q, enum fsb_work_kind kind);

void fsb_work_leave(struct fsb_work_queue *q);

/**
 * Give back the gate this thread holds as shared work, for a wait that
 * must not hold up the others: an approval the host is asked for. Returns
 * the queue to hand to fsb_work_resume(), or NULL when the thread holds no
 * gate or holds it alone: exclusive work has judged entries that nothing
 * may change before it acts, so it keeps the gate while it waits. Whatever
 * was judged before the pause may have changed by the resume: judge it
 * again. Like fsb_work_enter(), fsb_work_resume() is never called with the
 * broker lock held.
 *
 * Only the gate is given back: the queue on the loop still counts a paused
 * job as running, so work submitted through the queue that must run alone
 * still waits for it.
 */
struct fsb_work_queue *fsb_work_pause(void);

void fsb_work_resume(struct fsb_work_queue *q);

#endif
