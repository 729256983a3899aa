/*
 * work.c — a readers-writer queue in front of libuv's thread pool (see
 * work.h). The queue runs on the loop; the gate is taken on the threads
 * that run the work.
 */
#include <stddef.h>

#include "work.h"

static void dispatch(struct fsb_work_queue *q);

/* The gate this thread holds, if any: what fsb_work_pause() gives back. */
static __thread struct fsb_work_queue *held_queue;
static __thread enum fsb_work_kind held_kind;

static void take_gate(struct fsb_work_queue *q, enum fsb_work_kind kind)
{
	if (kind == FSB_WORK_EXCLUSIVE)
		pthread_rwlock_wrlock(&q->gate);
	else
		pthread_rwlock_rdlock(&q->gate);
}

void fsb_work_enter(struct fsb_work_queue *q, enum fsb_work_kind kind)
{
	take_gate(q, kind);
	held_queue = q;
	held_kind = kind;
}

void fsb_work_leave(struct fsb_work_queue *q)
{
	held_queue = NULL;
	pthread_rwlock_unlock(&q->gate);
}

struct fsb_work_queue *fsb_work_pause(void)
{
	struct fsb_work_queue *q = held_queue;

	if (q == NULL || held_kind != FSB_WORK_SHARED)
		return NULL;
	pthread_rwlock_unlock(&q->gate);
	return q;
}

void fsb_work_resume(struct fsb_work_queue *q)
{
	if (q != NULL)
		take_gate(q, FSB_WORK_SHARED);
}

static void work_run(uv_work_t *req)
{
	struct fsb_work *w = req->data;

	fsb_work_enter(w->queue, w->kind);
	w->run(w);
	fsb_work_leave(w->queue);
}

static void work_done(uv_work_t *req, int status)
{
	struct fsb_work *w = req->data;
	struct fsb_work_queue *q = w->queue;

	(void)status;	/* never cancelled */
	if (w->kind == FSB_WORK_EXCLUSIVE)
		q->exclusive_running = false;
	else
		q->shared_running--;
	w->done(w);	/* may free w */
	dispatch(q);
}

static void start(struct fsb_work_queue *q, struct fsb_work *w)
{
	if (w->kind == FSB_WORK_EXCLUSIVE)
		q->exclusive_running = true;
	else
		q->shared_running++;
	w->queue = q;
	w->req.data = w;
	if (uv_queue_work(q->loop, &w->req, work_run, work_done) < 0) {
		/* libuv refuses only a missing callback; run it here all the same. */
		work_run(&w->req);
		work_done(&w->req, 0);
	}
}

static void dispatch(struct fsb_work_queue *q)
{
	struct fsb_work *w;

	while ((w = q->head) != NULL && !q->exclusive_running &&
	       (w->kind == FSB_WORK_SHARED || q->shared_running == 0)) {
		q->head = w->next;
		if (q->head == NULL)
			q->tail = NULL;
		start(q, w);
	}
}

void fsb_work_queue_init(struct fsb_work_queue *q, uv_loop_t *loop)
{
	pthread_rwlockattr_t attr;

	q->loop = loop;
	q->head = q->tail = NULL;
	q->shared_running = 0;
	q->exclusive_running = false;
	/* Writers first: a host operation is not starved by a stream of opens. */
	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&q->gate, &attr);
	pthread_rwlockattr_destroy(&attr);
}

void fsb_work_queue_destroy(struct fsb_work_queue *q)
{
	pthread_rwlock_destroy(&q->gate);
}

void fsb_work_submit(struct fsb_work_queue *q, struct fsb_work *w)
{
	w->next = NULL;
	if (q->tail != NULL)
		q->tail->next = w;
	else
		q->head = w;
	q->tail = w;
	dispatch(q);
}
