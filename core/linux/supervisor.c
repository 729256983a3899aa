/*
 * supervisor.c — serve the calls a run's seccomp filter routes to the core
 * (see supervisor.h). One notification, start to answer:
 *
 *   receive   on one of the run's receiver threads, one poll and one
 *             SECCOMP_IOCTL_NOTIF_RECV at a time (a notification whose
 *             process died meanwhile answers ENOENT, never blocks);
 *   read      the path from the target's memory with process_vm_readv, its
 *             cwd or dirfd, its root (cached per process), and for a
 *             create its umask and fsuid/fsgid (supervisor_target.c); then
 *             NOTIF_ID_VALID: the pid is still the process that trapped,
 *             so nothing read belongs to a successor;
 *   decide    in the target's view (its root), as any request;
 *   back up   and perform, as a grant or a host operation does;
 *   answer    with the fd (SECCOMP_IOCTL_NOTIF_ADDFD + ADDFD_FLAG_SEND, one
 *             ioctl that is also the reply) or with the result or an errno.
 *
 * Where the kernel has it (Linux 6.6), the listener is set to
 * SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP: the receiver is woken on the CPU the
 * call trapped on and the target on the CPU that answered, instead of
 * wherever the scheduler puts them (docs/decisions.md, "The supervisor
 * asks for synchronous wake-ups").
 *
 * The receiver that took a call serves it, opens as shared work and every
 * other call alone (work.h's gate), as host operations are: the target
 * waits for one thread switch there and one back, and the loop is not
 * involved. A few receivers serve a run, so one slow call (a large backup,
 * an approval the host is asked for) does not hold up the others. Which
 * part serves which call: supervisor_call.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "call_stages.h"
#include "keep_awake.h"
#include "log.h"
#include "supervisor.h"
#include "supervisor_call.h"
#include "work.h"

/* ---- dispatch ----------------------------------------------------------- */

/* The calls served beside others; the rest run alone (work.h). */
static bool is_open_call(int nr)
{
	return nr == __NR_open || nr == __NR_openat || nr == __NR_creat || nr == __NR_openat2;
}

/* Calls that touch no file: what they change is the process's own. */
static bool is_process_call(int nr)
{
	return nr == __NR_umask || nr == __NR_clone;
}

/* What `nr` is timed as (call_stages.h) until its server knows better. */
static enum fsb_stage_call call_kind(int nr)
{
	switch (nr) {
	case __NR_open:
	case __NR_openat:
	case __NR_creat:
	case __NR_openat2:
		return FSB_CALL_WRITE_OPEN;
	case __NR_rename:
	case __NR_renameat:
	case __NR_renameat2:
		return FSB_CALL_RENAME;
	case __NR_unlink:
	case __NR_unlinkat:
	case __NR_rmdir:
		return FSB_CALL_DELETE;
	case __NR_mkdir:
	case __NR_mkdirat:
		return FSB_CALL_MKDIR;
	case __NR_chmod:
	case __NR_fchmodat:
	case __NR_fchmod:
	case __NR_chown:
	case __NR_lchown:
	case __NR_fchown:
	case __NR_fchownat:
	case __NR_utimensat:
	case __NR_utimes:
	case __NR_utime:
	case __NR_futimesat:
	case __NR_truncate:
	case __NR_ftruncate:
		return FSB_CALL_METADATA;
	}
	return FSB_CALL_OTHER;
}

static void serve(struct fsb_supervisor *sv, const struct seccomp_notif *req)
{
	/* First: this thread's earlier umask(2), if any, has returned. */
	fsb_sv_creds_seen(sv, (pid_t)req->pid);
	if (is_process_call(req->data.nr))
		fsb_sv_serve_process(sv, req);
	else if (is_open_call(req->data.nr))
		fsb_sv_serve_open(sv, req);
	else if (!fsb_sv_serve_meta(sv, req))
		fsb_sv_serve_names(sv, req);
}

/* ---- receivers ----------------------------------------------------------- */

/*
 * The next notification into `req`: 0, or -1 once the run is over (the
 * listener hung up: every filtered process is gone; or the stop eventfd
 * was written). Receivers take turns here, so only one of them polls and
 * receives, and a poll that said "pending" is followed by a RECV that
 * either gets a call or ENOENT, never blocks.
 */
static int receive(struct fsb_supervisor *sv, struct seccomp_notif *req)
{
	int rc = -1;

	pthread_mutex_lock(&sv->recv_lock);
	while (!sv->done) {
		struct pollfd p[2] = {
			{ .fd = sv->listener, .events = POLLIN },
			{ .fd = sv->stopfd, .events = POLLIN },
		};

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			fsb_log(FSB_LOG_ERROR, "supervisor: poll: %s", strerror(errno));
			sv->done = true;
			break;
		}
		if (p[1].revents != 0 || !(p[0].revents & POLLIN)) {
			if (p[1].revents != 0 || (p[0].revents & (POLLHUP | POLLERR | POLLNVAL)))
				sv->done = true;
			continue;
		}
		memset(req, 0, sizeof(*req));
		fsb_stages_receiving();
		if (ioctl(sv->listener, SECCOMP_IOCTL_NOTIF_RECV, req) == 0) {
			rc = 0;
			break;
		}
		/* ENOENT: its process died between the poll and now. */
		if (errno != ENOENT && errno != EINTR) {
			fsb_log(FSB_LOG_ERROR, "supervisor: receive: %s", strerror(errno));
			sv->done = true;
		}
	}
	pthread_mutex_unlock(&sv->recv_lock);
	return rc;
}

static void *receiver(void *arg)
{
	struct fsb_supervisor *sv = arg;
	struct seccomp_notif req;

	while (receive(sv, &req) == 0) {
		bool burst = fsb_keep_awake_call_begins();

		/* The receipt is charged with the wait at the gate. */
		fsb_work_enter(&sv->b->work, is_open_call(req.data.nr) ||
						     is_process_call(req.data.nr)
						     ? FSB_WORK_SHARED : FSB_WORK_EXCLUSIVE);
		fsb_stages_begin(call_kind(req.data.nr));
		serve(sv, &req);
		fsb_keep_awake_call_answered(burst);
		fsb_stages_end();
		fsb_work_leave(&sv->b->work);
	}
	/* The last one out tells the loop. */
	if (__atomic_sub_fetch(&sv->running, 1, __ATOMIC_ACQ_REL) == 0)
		uv_async_send(&sv->ended);
	return NULL;
}

/* ---- lifetime ----------------------------------------------------------- */

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

/*
 * Synchronous wake-ups on `listener`, unless FSBROKER_SYNC_WAKE_UP=0 (the
 * wake-ups of Linux before 6.6, so that the suite covers both on one
 * kernel). True when set; a kernel without the ioctl (EINVAL or ENOTTY)
 * keeps its own wake-ups, which serve as well, only slower.
 */
static bool ask_sync_wake_up(int listener)
{
	const char *v = getenv("FSBROKER_SYNC_WAKE_UP");

	if (v != NULL && strcmp(v, "0") == 0)
		return false;
	return ioctl(listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS,
		     SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, 0) == 0;
}

static void on_ended_closed(uv_handle_t *h)
{
	struct fsb_supervisor *sv = h->data;

	if (sv->on_end != NULL)
		sv->on_end(sv, sv->arg);
	if (sv->listener >= 0)
		close(sv->listener);
	close(sv->stopfd);
	pthread_mutex_destroy(&sv->recv_lock);
	fsb_sv_roots_free(sv);
	fsb_sv_creds_free(sv);
	fsb_sv_made_free(sv);
	free(sv);
}

/* Every receiver returned: every notification taken is answered. */
static void on_ended(uv_async_t *h)
{
	struct fsb_supervisor *sv = h->data;

	for (int i = 0; i < sv->nreceivers; i++)
		pthread_join(sv->receivers[i], NULL);
	sv->nreceivers = 0;
	fsb_keep_awake_release();
	fsb_stages_flush();
	uv_close((uv_handle_t *)&sv->ended, on_ended_closed);
}

void fsb_supervisor_stop(struct fsb_supervisor *sv)
{
	uint64_t one = 1;

	if (sv->stopping)
		return;
	sv->stopping = true;
	/* Readable for good: each receiver sees it once its call is answered. */
	if (write(sv->stopfd, &one, sizeof(one)) != sizeof(one))
		fsb_log(FSB_LOG_ERROR, "supervisor: cannot stop the receivers: %s",
			strerror(errno));
}

void fsb_supervisor_stop_for(struct fsb_supervisor *sv)
{
	sv->on_end = NULL;
	fsb_supervisor_stop(sv);
}

int fsb_supervisor_start(struct fsb_broker *b, int listener, const struct fsb_scope *scope,
			 unsigned flags, void (*on_end)(struct fsb_supervisor *sv, void *arg),
			 void *arg, struct fsb_supervisor **out)
{
	struct fsb_supervisor *sv = calloc(1, sizeof(*sv));
	int rc;

	if (sv == NULL)
		return -ENOMEM;
	sv->b = b;
	sv->scope = *scope;
	sv->listener = listener;
	sv->uid = getuid();
	sv->euid = geteuid();
	sv->egid = getegid();
	sv->routes_umask = (flags & FSB_SUPERVISE_ROUTES_UMASK) != 0;
	if (ask_sync_wake_up(listener))
		b->stats.supervisors_sync_wake_up++;
	else
		b->stats.supervisors_plain_wake_up++;
	sv->on_end = on_end;
	sv->arg = arg;
	if ((sv->stopfd = eventfd(0, EFD_CLOEXEC)) < 0) {
		rc = -errno;
		free(sv);
		return rc;
	}
	if ((rc = uv_async_init(b->loop, &sv->ended, on_ended)) < 0) {
		close(sv->stopfd);
		free(sv);
		return rc;
	}
	sv->ended.data = sv;
	pthread_mutex_init(&sv->recv_lock, NULL);
	fsb_sv_made_init(sv);
	for (int i = 0; i < SV_RECEIVERS; i++) {
		__atomic_add_fetch(&sv->running, 1, __ATOMIC_ACQ_REL);
		if ((rc = pthread_create(&sv->receivers[i], NULL, receiver, sv)) != 0) {
			__atomic_sub_fetch(&sv->running, 1, __ATOMIC_ACQ_REL);
			break;
		}
		sv->nreceivers++;
	}
	/* Fewer receivers serve as well, only with less overlap; none, not. */
	if (sv->nreceivers == 0) {
		sv->on_end = NULL;
		sv->listener = -1;	/* the caller's again */
		uv_close((uv_handle_t *)&sv->ended, on_ended_closed);
		*out = NULL;
		return -rc;
	}
	fsb_keep_awake_hold();
	*out = sv;
	return 0;
}
