/*
 * supervisor.h — the seccomp supervisor of one run (DESIGN §7.4): the
 * listener fsbroker-init handed over; every call the filter routes here is
 * decided by the policy, backed up and performed by the core in the
 * target's view, and answered with its result or its fd.
 *
 * Every call of DESIGN §7.3's list is emulated or refused with the errno
 * docs/runtime-supervisor.md names; a routed call it does not know is
 * refused with EPERM and a log line: fail closed, never CONTINUE. The
 * parts: supervisor_call.h.
 */
#ifndef FSB_SUPERVISOR_H
#define FSB_SUPERVISOR_H

#include <uv.h>

#include "broker.h"

struct fsb_supervisor;

/**
 * Start supervising `listener` (a seccomp user-notification fd, taken over)
 * for `scope`. Notifications are received and served by the supervisor's
 * own threads, in turns with the work queue's jobs (work.h). `on_end` (may
 * be NULL) is called on the loop once the listener hangs up (every filtered
 * process is gone) or fsb_supervisor_stop() was called, and every
 * notification taken is answered. `flags`: FSB_SUPERVISE_*.
 * 0 or -errno.
 */
int fsb_supervisor_start(struct fsb_broker *b, int listener, const struct fsb_scope *scope,
			 unsigned flags, void (*on_end)(struct fsb_supervisor *sv, void *arg),
			 void *arg, struct fsb_supervisor **out);

/** The filter routes umask(2) and clone(CLONE_FS without CLONE_THREAD), as
 * fsbroker-init's does: the supervisor may keep each process's umask
 * instead of reading /proc/<pid>/status for every create. A filter that
 * does not must not say so: a create would get a stale umask. */
#define FSB_SUPERVISE_ROUTES_UMASK 1u

/** Stop receiving; the supervisor frees itself once its work is done. */
void fsb_supervisor_stop(struct fsb_supervisor *sv);

/** fsb_supervisor_stop() by the one that started it: `on_end` is not
 * called any more (that owner is going away). */
void fsb_supervisor_stop_for(struct fsb_supervisor *sv);

#endif
