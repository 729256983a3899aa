/*
 * supervisor_answer.c — what every server of a supervised call shares
 * (see supervisor_call.h): the answer (an errno, a result, or an fd that
 * is the answer), the check that the target is still the process that
 * trapped, the access a call is judged as, and its audit line. Its own
 * file so that the servers (supervisor_open.c, _names.c, _meta.c) never
 * call back into supervisor.c, which dispatches to them.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "call_stages.h"
#include "log.h"
#include "supervisor_call.h"

#ifndef SECCOMP_ADDFD_FLAG_SEND
#define SECCOMP_ADDFD_FLAG_SEND (1UL << 1)	/* Linux 5.14; Debian 12's headers have it */
#endif

void fsb_sv_answer(struct fsb_supervisor *sv, const struct seccomp_notif *req, int err)
{
	struct seccomp_notif_resp resp = { .id = req->id, .error = err };

	fsb_stage_push(FSB_STAGE_ANSWER);
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

	fsb_stage_push(FSB_STAGE_ANSWER);
	/* On success this is the answer: the target's call returns the new fd. */
	if (ioctl(sv->listener, SECCOMP_IOCTL_NOTIF_ADDFD, &add) < 0 && errno != ENOENT)
		fsb_sv_answer(sv, req, -errno);
	close(fd);
}

void fsb_sv_answer_continue(struct fsb_supervisor *sv, const struct seccomp_notif *req)
{
	struct seccomp_notif_resp resp = { .id = req->id,
					   .flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE };

	fsb_stage_push(FSB_STAGE_ANSWER);
	if (ioctl(sv->listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0 && errno != ENOENT)
		fsb_log_limited(FSB_LOG_WARN, "cannot answer pid %d: %s", (int)req->pid,
				strerror(errno));
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
	acc->uid = sv->uid;
	acc->has_view = rootfd >= 0;
	acc->view_fd = rootfd;
}

int fsb_sv_audit(struct fsb_supervisor *sv, const struct seccomp_notif *req,
		  const struct fsb_access *acc, int err)
{
	enum fsb_stage was = fsb_stage_push(FSB_STAGE_AUDIT);
	struct fsb_audit_line l;
	int rc;

	fsb_access_audit_line(&l, acc, "supervisor", acc->errnum ? acc->errnum : -err);
	fsb_audit_line_int(&l, "pid", (int)req->pid);
	fsb_audit_line_int(&l, "syscall", req->data.nr);
	rc = fsb_broker_audit_line(sv->b, sv->scope.session, &l);
	fsb_stage_pop(was);
	return rc;
}
