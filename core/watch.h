/*
 * watch.h — what triggers a reload of the pack (DESIGN §4.5): a change to
 * any pack file in use (watched through its directory, since editors
 * replace files by rename), and SIGHUP. Changes are debounced so that one
 * save is one reload, and SIGHUPs coalesced so that a burst is one.
 */
#ifndef FSB_WATCH_H
#define FSB_WATCH_H

#include <uv.h>

#include "broker.h"

#define FSB_WATCH_MAX_DIRS 8

struct fsb_watch {
	struct fsb_broker *broker;
	uv_fs_event_t *dirs[FSB_WATCH_MAX_DIRS];	/* freed when closed */
	int ndirs;
	uv_timer_t debounce;	/* a reload to come, for `trigger` */
	const char *trigger;
	uv_signal_t sighup;
	bool closing;
};

/** Watch the broker's pack files and SIGHUP. 0 or a libuv error. */
int fsb_watch_start(struct fsb_watch *w, uv_loop_t *loop, struct fsb_broker *b);

void fsb_watch_close(struct fsb_watch *w);

#endif
