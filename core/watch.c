/*
 * watch.c — reload triggers (see watch.h). After a reload the watched set is
 * rebuilt, since the pack may now include other files.
 */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "watch.h"

#define DEBOUNCE_MS 100

static void watch_pack_dirs(struct fsb_watch *w);

static void on_handle_closed(uv_handle_t *h)
{
	(void)h;
}

static void on_dir_closed(uv_handle_t *h)
{
	free(h);
}

/* The handles are heap-allocated: a closing one stays valid until libuv
 * calls back, while its replacement is already watching. */
static void unwatch_dirs(struct fsb_watch *w)
{
	for (int i = 0; i < w->ndirs; i++)
		uv_close((uv_handle_t *)w->dirs[i], on_dir_closed);
	w->ndirs = 0;
}

static void reload(struct fsb_watch *w, const char *trigger)
{
	char err[1024];

	fsb_broker_reload(w->broker, trigger, err, sizeof(err));
}

/* After any successful reload, the control command's included. */
static void on_reloaded(struct fsb_broker *b, void *arg)
{
	struct fsb_watch *w = arg;

	(void)b;
	if (w->closing)
		return;
	unwatch_dirs(w);
	watch_pack_dirs(w);
}

static void on_debounce(uv_timer_t *t)
{
	struct fsb_watch *w = t->data;

	reload(w, w->trigger);
}

static bool is_pack_file(struct fsb_broker *b, const char *dir, const char *name)
{
	char full[PATH_MAX * 2];

	snprintf(full, sizeof(full), "%s/%s", dir, name);
	for (size_t i = 0; i < fsb_policy_nfiles(b->policy); i++)
		if (strcmp(fsb_policy_file(b->policy, i), full) == 0)
			return true;
	return false;
}

static void on_dir_event(uv_fs_event_t *h, const char *filename, int events, int status)
{
	struct fsb_watch *w = h->data;
	char dir[PATH_MAX];
	size_t len = sizeof(dir);

	(void)events;
	if (status < 0 || filename == NULL || uv_fs_event_getpath(h, dir, &len) < 0)
		return;
	if (!is_pack_file(w->broker, dir, filename))
		return;
	w->trigger = "file change";
	uv_timer_start(&w->debounce, on_debounce, DEBOUNCE_MS, 0);
}

/*
 * Not at once: on the next turn of the loop, and once for any number of
 * SIGHUPs until then. A reload takes a while (the pack's self-tests run);
 * signals faster than that would otherwise keep the loop reloading and
 * leave every client unanswered.
 */
static void on_sighup(uv_signal_t *s, int signum)
{
	struct fsb_watch *w = s->data;

	(void)signum;
	if (uv_is_active((uv_handle_t *)&w->debounce) && strcmp(w->trigger, "SIGHUP") == 0)
		return;
	w->trigger = "SIGHUP";
	uv_timer_start(&w->debounce, on_debounce, 0, 0);
}

static void watch_pack_dirs(struct fsb_watch *w)
{
	struct fsb_broker *b = w->broker;
	char dirs[FSB_WATCH_MAX_DIRS][PATH_MAX];

	for (size_t i = 0; i < fsb_policy_nfiles(b->policy) && w->ndirs < FSB_WATCH_MAX_DIRS; i++) {
		char copy[PATH_MAX];
		const char *d;
		int seen = 0, rc;

		snprintf(copy, sizeof(copy), "%s", fsb_policy_file(b->policy, i));
		d = dirname(copy);
		for (int j = 0; j < w->ndirs; j++)
			seen |= strcmp(dirs[j], d) == 0;
		if (seen)
			continue;
		uv_fs_event_t *h = malloc(sizeof(*h));

		if (h == NULL)
			break;
		uv_fs_event_init(b->loop, h);
		h->data = w;
		rc = uv_fs_event_start(h, on_dir_event, d, 0);
		if (rc < 0) {
			fsb_warn("cannot watch %s for pack changes (%s); SIGHUP and Reload "
				 "still work", d, uv_strerror(rc));
			uv_close((uv_handle_t *)h, on_dir_closed);
			continue;
		}
		w->dirs[w->ndirs] = h;
		snprintf(dirs[w->ndirs], PATH_MAX, "%s", d);
		w->ndirs++;
	}
}

int fsb_watch_start(struct fsb_watch *w, uv_loop_t *loop, struct fsb_broker *b)
{
	int rc;

	memset(w, 0, sizeof(*w));
	w->broker = b;
	uv_timer_init(loop, &w->debounce);
	w->debounce.data = w;
	w->trigger = "file change";
	uv_signal_init(loop, &w->sighup);
	w->sighup.data = w;
	if ((rc = uv_signal_start(&w->sighup, on_sighup, SIGHUP)) < 0)
		return rc;
	watch_pack_dirs(w);
	b->on_reloaded = on_reloaded;
	b->on_reloaded_arg = w;
	return 0;
}

void fsb_watch_close(struct fsb_watch *w)
{
	if (w->closing)
		return;
	w->closing = true;
	w->broker->on_reloaded = NULL;
	unwatch_dirs(w);
	uv_close((uv_handle_t *)&w->debounce, on_handle_closed);
	uv_close((uv_handle_t *)&w->sighup, on_handle_closed);
}
