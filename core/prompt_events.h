/*
 * prompt_events.h — inline approvals for `fsbroker serve --approvals
 * inline`: a call a sandboxed process makes that the pack answers `ask`
 * waits on a thread of the pool while the host is sent a `prompt` event on
 * the control channel; the host answers with Approve or Deny. The threads
 * queue the events, the loop writes them out.
 */
#ifndef FSB_PROMPT_EVENTS_H
#define FSB_PROMPT_EVENTS_H

#include <pthread.h>
#include <stdbool.h>
#include <uv.h>

#include <cJSON.h>

#include "broker.h"
#include "control.h"

struct fsb_prompt_events {
	struct fsb_broker *broker;
	struct fsb_control *ctl;	/* where the events go; NULL once it is gone */
	uv_async_t async;
	pthread_mutex_t lock;
	cJSON *queue;			/* an array of events, under lock */
	bool up;
};

/**
 * Make calls answered `ask` wait up to `timeout_s` seconds for the host's
 * answer on `ctl`. 0, or a libuv error (nothing changed then).
 */
int fsb_prompt_events_start(struct fsb_prompt_events *pe, uv_loop_t *loop,
			    struct fsb_broker *b, struct fsb_control *ctl, unsigned timeout_s);

/**
 * Nobody answers any more (the host hung up, or the core stops): every call
 * still waiting is refused, later ones are refused at once (deferred), and
 * the loop handle is closed. Safe to call twice.
 */
void fsb_prompt_events_stop(struct fsb_prompt_events *pe);

#endif
