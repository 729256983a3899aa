/*
 * control.h — the control channel between the agent host and the core
 * (DESIGN §3.4): JSON lines on the core's stdin, replies and events on its
 * stdout. Only the process that started the core holds it, so nothing in a
 * sandbox can approve its own request.
 */
#ifndef FSB_CONTROL_H
#define FSB_CONTROL_H

#include <cJSON.h>

#include "broker.h"
#include "chan.h"
#include "work.h"

struct fsb_control {
	struct fsb_chan chan;
	uv_loop_t *loop;
	struct fsb_work work;	/* a request served on the thread pool */
	cJSON *work_req, *work_reply;
	struct fsb_broker *broker;
	char session[129];	/* the default sessionId */
	void (*on_shutdown)(struct fsb_control *ctl);	/* Shutdown, or EOF on stdin */
	void *data;
};

/** Serve control requests read from `rfd`, replying on `wfd`. 0 or a libuv error. */
int fsb_control_start(uv_loop_t *loop, struct fsb_control *ctl, struct fsb_broker *b,
		      const char *session, int rfd, int wfd);

/** Push an event ({"event": ...}) to the host; takes ownership of `ev`. */
void fsb_control_event(struct fsb_control *ctl, cJSON *ev);

/**
 * Handle one request object and return the reply object (the caller frees
 * both). *shutdown is set when the request asked the core to stop. Safe on
 * any thread; CommitModifyBackup and ModifyBackup wait for the session's
 * backup store, which a copy on the thread pool may hold for a while, so
 * the channel serves those two off the loop.
 */
cJSON *fsb_control_handle(struct fsb_broker *b, const char *default_session,
			  const cJSON *req, bool *shutdown);

void fsb_control_close(struct fsb_control *ctl);

#endif
