/*
 * supervisor.c — serve the calls a run's seccomp filter routes to the core
 * (see supervisor.h). One notification, start to answer:
 *
 *   receive   on the loop, one SECCOMP_IOCTL_NOTIF_RECV per wake-up (the
 *             listener is level-triggered; a notification whose process
 *             died meanwhile answers ENOENT, never blocks);
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
 * Everything after "receive" runs on the thread pool: opens as shared
 * work, every other call alone (work.h), as host operations are. Which
 * part serves which call: supervisor_call.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "supervisor.h"
#include "supervisor_call.h"
#include "work.h"

#ifndef SECCOMP_ADDFD_FLAG_SEND
#define SECCOMP_ADDFD_FLAG_SEND (1UL << 1)	/* Linux 5.14; Debian 12's headers have it */
#endif

struct notif_job {
	struct fsb_work work;
	struct fsb_supervisor *sv;
	struct seccomp_notif req;
};

/* ---- answering ---------------------------------------------------------- */

void fsb_sv_answer(struct fsb_supervisor *sv, const struct seccomp_notif *req, int err)
{
	struct seccomp_notif_resp resp = { .id = req->id, .error = err };

	/* ENOENT: the target is gone; nobody waits for the answer. */
	if (ioctl(sv->listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0 && errno != ENOENT)
		fsb_log_limited(FSB_LOG_WARN, "cannot answer pid %d: %s", (int)req->pid,
				strerror(errno));
}

void fsb_sv_answer_fd(struct fsb_supervisor *sv, const struct seccomp_notif *req, int fd,
		      int flags)
{
	struct seccomp_notif_addfd add = {
		.id = req->id,
		.flags = SECCOMP_ADDFD_FLAG_SEND,
		.srcfd = (unsigned)fd,
		.newfd_flags = (unsigned)(flags & O_CLOEXEC),
	};

	/* On success this is the answer: the target's call returns the new fd. */
	if (ioctl(sv->listener, SECCOMP_IOCTL_NOTIF_ADDFD, &add) < 0 && errno != ENOENT)
		fsb_sv_answer(sv, req, -errno);
	close(fd);
}

bool fsb_sv_still_valid(struct fsb_supervisor *sv, const struct seccomp_notif *req)
{
	return ioctl(sv->listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) == 0;
}

void fsb_sv_access_init(struct fsb_supervisor *sv, const struct seccomp_notif *req,
			struct fsb_access *acc, enum fsb_op op, const char *path, int rootfd)
{
	memset(acc, 0, sizeof(*acc));
	acc->op = op;
	acc->requested = path;
	acc->session = sv->scope.session;
	acc->tool_call = sv->scope.tool_call;
	acc->pid = (pid_t)req->pid;
	acc->uid = getuid();
	acc->has_view = rootfd >= 0;
	acc->view_fd = rootfd;
}

int fsb_sv_audit(struct fsb_supervisor *sv, const struct seccomp_notif *req,
		  const struct fsb_access *acc, int err)
{
	cJSON *rec = fsb_access_audit_record(acc, "supervisor");

	cJSON_AddNumberToObject(rec, "pid", (int)req->pid);
	cJSON_AddNumberToObject(rec, "syscall", req->data.nr);
	if (err != 0 && !cJSON_HasObjectItem(rec, "errno"))
		cJSON_AddStringToObject(rec, "errno", fsb_errno_name(-err));
	return fsb_broker_audit(sv->b, sv->scope.session, rec);
}

/* ---- dispatch ----------------------------------------------------------- */

/* The calls served beside others; the rest run alone (work.h). */
static bool is_open_call(int nr)
{
	return nr == __NR_open || nr == __NR_openat || nr == __NR_creat || nr == __NR_openat2;
}

static void serve(struct fsb_supervisor *sv, const struct seccomp_notif *req)
{
	if (is_open_call(req->data.nr))
		fsb_sv_serve_open(sv, req);
	else if (!fsb_sv_serve_meta(sv, req))
		fsb_sv_serve_names(sv, req);
}

/* ---- lifetime ----------------------------------------------------------- */

static void maybe_end(struct fsb_supervisor *sv)
{
	if (!sv->stopping || !sv->poll_closed || sv->inflight > 0)
		return;
	if (sv->on_end != NULL)
		sv->on_end(sv, sv->arg);
	close(sv->listener);
	fsb_sv_roots_free(sv);
	free(sv);
}

static void on_poll_closed(uv_handle_t *h)
{
	struct fsb_supervisor *sv = h->data;

	sv->poll_closed = true;
	maybe_end(sv);
}

void fsb_supervisor_stop(struct fsb_supervisor *sv)
{
	if (sv->stopping)
		return;
	sv->stopping = true;
	uv_close((uv_handle_t *)&sv->poll, on_poll_closed);
}

void fsb_supervisor_stop_for(struct fsb_supervisor *sv)
{
	sv->on_end = NULL;
	fsb_supervisor_stop(sv);
}

static void job_run(struct fsb_work *w)
{
	struct notif_job *j = (struct notif_job *)w;

	serve(j->sv, &j->req);
}

static void job_done(struct fsb_work *w)
{
	struct notif_job *j = (struct notif_job *)w;
	struct fsb_supervisor *sv = j->sv;

	free(j);
	sv->inflight--;
	maybe_end(sv);
}

static void on_listener(uv_poll_t *h, int status, int events)
{
	struct fsb_supervisor *sv = h->data;
	struct notif_job *j;

	struct pollfd p = { .fd = sv->listener, .events = POLLIN };

	(void)events;
	/* NOTIF_RECV blocks while nothing is pending, and libuv reports a hang
	 * up as readable: only a notification waiting (POLLIN) is received.
	 * POLLHUP without it: every filtered process is gone. */
	if (status < 0 || poll(&p, 1, 0) < 0 || !(p.revents & POLLIN)) {
		if (status < 0 || (p.revents & (POLLHUP | POLLERR | POLLNVAL)))
			fsb_supervisor_stop(sv);
		return;
	}
	if ((j = calloc(1, sizeof(*j))) == NULL)
		return;	/* level-triggered: tried again on the next turn */
	if (ioctl(sv->listener, SECCOMP_IOCTL_NOTIF_RECV, &j->req) < 0) {
		free(j);
		/* ENOENT: its process died between the wake-up and now. */
		if (errno != ENOENT && errno != EINTR)
			fsb_supervisor_stop(sv);
		return;
	}
	j->sv = sv;
	j->work.kind = is_open_call(j->req.data.nr) ? FSB_WORK_SHARED : FSB_WORK_EXCLUSIVE;
	j->work.run = job_run;
	j->work.done = job_done;
	sv->inflight++;
	fsb_work_submit(&sv->b->work, &j->work);
}

int fsb_supervisor_start(struct fsb_broker *b, int listener, const struct fsb_scope *scope,
			 void (*on_end)(struct fsb_supervisor *sv, void *arg), void *arg,
			 struct fsb_supervisor **out)
{
	struct fsb_supervisor *sv = calloc(1, sizeof(*sv));
	int rc;

	if (sv == NULL)
		return -ENOMEM;
	sv->b = b;
	sv->scope = *scope;
	sv->listener = listener;
	sv->on_end = on_end;
	sv->arg = arg;
	if ((rc = uv_poll_init(b->loop, &sv->poll, listener)) < 0) {
		free(sv);
		return rc;
	}
	sv->poll.data = sv;
	uv_poll_start(&sv->poll, UV_READABLE, on_listener);
	*out = sv;
	return 0;
}
