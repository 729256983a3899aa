/*
 * serve_text.c — one text token request, start to reply (DESIGN §3.2):
 * parse → scope → open-spec → decide → grant (FD) or SANDBOX or DENY →
 * audit, written before the reply it explains.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "modify_backup.h"
#include "openflags.h"
#include "proto_json.h"
#include "proto_text.h"
#include "server.h"
#include "write_grant.h"

static void reply_deny(struct fsb_conn *conn, int errnum, const char *reason)
{
	char line[1024];

	snprintf(line, sizeof(line), "DENY %s %s\n", fsb_errno_name(errnum), reason);
	fsb_conn_reply(conn, line, -1);
}

/* A request refused before any path was decided: malformed or foreign. */
static void refuse(struct fsb_conn *conn, int errnum, const char *rule,
		   const char *reason, const char *claimed_session)
{
	struct fsb_broker *b = conn->srv->broker;
	cJSON *rec = cJSON_CreateObject();
	char line[1024];

	b->stats.denied++;
	cJSON_AddStringToObject(rec, "phase", "ipc-token");
	cJSON_AddStringToObject(rec, "session", conn->scope.session);
	cJSON_AddStringToObject(rec, "decision", "deny");
	cJSON_AddStringToObject(rec, "rule", rule);
	cJSON_AddStringToObject(rec, "reason", reason);
	cJSON_AddStringToObject(rec, "errno", fsb_errno_name(errnum));
	cJSON_AddNumberToObject(rec, "pid", conn->pid);
	if (claimed_session != NULL)
		fsb_json_add_path(rec, "claimedSession", claimed_session, false);
	fsb_broker_audit(b, conn->scope.session, rec);
	snprintf(line, sizeof(line), "%s: %s", rule, reason);
	reply_deny(conn, errnum, line);
}

/* The request must speak for the connection's own scope (DESIGN §3.0). */
static bool in_scope(struct fsb_conn *conn, const struct fsb_text_req *req)
{
	return strcmp(req->session, conn->scope.session) == 0 &&
	       (conn->scope.tool_call[0] == '\0' ||
		strcmp(req->tool_call, conn->scope.tool_call) == 0);
}

/* One text request from its decision to its reply. A write runs on the
 * thread pool (it may copy a large file into the backup store first); a read
 * is answered on the loop. */
struct text_job {
	struct fsb_job job;
	struct fsb_conn *conn;
	char *line;			/* owned: req points into it */
	struct fsb_text_req req;
	struct fsb_access acc;
	bool writes;
	int fd;				/* the grant, or -1 */
	/* The grant's course (a read uses its audit_failed and why). */
	struct fsb_write_grant grant;
};

/* Where the request's paths are resolved: the client's view (a run's
 * sandbox), else the core's root. */
static int root_of(const struct text_job *t)
{
	return t->acc.has_view ? t->acc.view_fd : t->conn->srv->broker->rootfd;
}

/* The audit line of the request (write_grant.h). */
static int audit_request(void *arg, const struct fsb_access *acc, const char *grant,
			 const char *error)
{
	struct text_job *t = arg;
	struct fsb_audit_line l;

	fsb_access_audit_line(&l, acc, "ipc-token", acc->errnum);
	fsb_audit_line_int(&l, "pid", t->conn->pid);
	if (t->req.has_open)
		fsb_audit_line_int(&l, "openFlags", t->req.open_flags);
	if (grant != NULL)
		fsb_audit_line_str(&l, "grant", grant);
	if (error != NULL && grant != NULL)
		fsb_audit_line_str(&l, "error", error);
	return fsb_broker_audit_line(t->conn->srv->broker, t->conn->scope.session, &l);
}

/* A read: decide, open, audit. */
static void serve_read(struct text_job *t)
{
	struct fsb_access *acc = &t->acc;

	fsb_broker_decide(t->conn->srv->broker, acc);
	if (acc->verdict.decision == FSB_ALLOW && acc->errnum == 0 && t->req.has_open) {
		t->fd = fsb_grant_open(root_of(t), &acc->res, t->req.open_flags, t->req.open_mode,
				       NULL, NULL);
		acc->errnum = t->fd < 0 ? -t->fd : 0;
		t->fd = t->fd < 0 ? -1 : t->fd;
	}
	/* No reply goes out whose audit line is not written. */
	if (audit_request(t, acc, t->fd >= 0 ? "fd" : NULL, NULL) < 0) {
		if (t->fd >= 0)
			close(t->fd);
		t->fd = -1;
		t->grant.audit_failed = true;
	}
}

/* Decide, grant, back up, audit: everything but the reply. */
static void serve(struct text_job *t)
{
	struct fsb_write_grant *g = &t->grant;

	if (!t->writes) {
		serve_read(t);
		return;
	}
	*g = (struct fsb_write_grant){
		.b = t->conn->srv->broker,
		.session = t->conn->scope.session,
		.rootfd = root_of(t),
		.flags = t->req.has_open ? t->req.open_flags : 0,
		.mode = t->req.open_mode,
		.no_open = !t->req.has_open,
		.backup_phase = "ipc-token-backup",
		.audit = audit_request,
		.arg = t,
	};
	fsb_write_grant(g, &t->acc);
	t->fd = g->fd;
	g->fd = -1;
}

static void answer(struct text_job *t)
{
	struct fsb_conn *conn = t->conn;
	struct fsb_broker *b = conn->srv->broker;
	struct fsb_access *acc = &t->acc;
	char reason[1024];

	if (t->grant.audit_failed) {
		b->stats.errors++;
		reply_deny(conn, EIO, "the audit log cannot be written");
		return;
	}
	switch (acc->verdict.decision) {
	case FSB_ASK:
		b->stats.asked++;
		snprintf(reason, sizeof(reason), "ask %s %s",
			 acc->block_id[0] ? acc->block_id : "-", acc->verdict.rule);
		reply_deny(conn, EACCES, reason);
		return;
	case FSB_DENY:
		b->stats.denied++;
		reply_deny(conn, acc->errnum, acc->verdict.rule);
		return;
	case FSB_ALLOW:
		break;
	}
	if (acc->errnum != 0) {
		b->stats.denied++;
		reply_deny(conn, acc->errnum, t->grant.why[0] ? t->grant.why : strerror(acc->errnum));
		return;
	}
	b->stats.allowed++;
	if (t->fd >= 0) {
		b->stats.fds_granted++;
		fsb_conn_reply(conn, "FD\n", t->fd);
		t->fd = -1;
		return;
	}
	/* The compatibility path of the original design: the client opens the
	 * file itself. Our own clients always send an open-spec instead, since
	 * a rename between this answer and their open could swap the inode. */
	fsb_conn_reply(conn, "SANDBOX\n", -1);
}

static void text_job_free(struct text_job *t)
{
	if (t->fd >= 0)
		close(t->fd);
	free(t->line);
	free(t);
}

static void job_run(struct fsb_job *job)
{
	serve((struct text_job *)job);
}

static void job_done(struct fsb_job *job)
{
	struct text_job *t = (struct text_job *)job;

	/* The client went away meanwhile: a granted fd is closed unsent. */
	if (job->conn != NULL)
		answer(t);
	text_job_free(t);
}

void fsb_serve_text(struct fsb_conn *conn, char *line, size_t len)
{
	struct fsb_broker *b = conn->srv->broker;
	struct text_job *t;
	const char *why;

	b->stats.requests++;
	t = calloc(1, sizeof(*t));
	if (t == NULL || (t->line = malloc(len + 1)) == NULL) {
		free(t);
		b->stats.errors++;
		reply_deny(conn, ENOMEM, "out of memory");
		return;
	}
	memcpy(t->line, line, len + 1);
	t->conn = conn;
	t->fd = -1;
	if (fsb_text_parse(t->line, len, &t->req, &why) < 0) {
		b->stats.errors++;
		conn->malformed++;
		refuse(conn, EINVAL, "malformed request", why, NULL);
		goto done;
	}
	if (t->req.tool_call[0] != '\0' && !fsb_id_valid(t->req.tool_call)) {
		b->stats.errors++;
		conn->malformed++;
		refuse(conn, EINVAL, "malformed request",
		       "the tool-call id must be 1-128 characters of A-Z a-z 0-9 . _ : -", NULL);
		goto done;
	}
	if (!in_scope(conn, &t->req)) {
		refuse(conn, EACCES, "foreign session",
		       "the request names a session or tool call other than its connection's",
		       t->req.session);
		goto done;
	}
	if (t->req.has_open && fsb_openflags_check(t->req.open_flags, t->req.write, &why) < 0) {
		b->stats.errors++;
		conn->malformed++;
		refuse(conn, EINVAL, "open flags refused", why, NULL);
		goto done;
	}
	t->writes = t->req.has_open ? fsb_openflags_writes(t->req.open_flags) : t->req.write;

	t->acc.op = t->writes ? FSB_OP_WRITE : FSB_OP_READ;
	t->acc.requested = t->req.path;
	/* With O_NOFOLLOW, or O_CREAT|O_EXCL, the final name itself is what
	 * gets opened (or refused): a final symlink is not followed. */
	t->acc.strategy = t->req.has_open && ((t->req.open_flags & O_NOFOLLOW) ||
					      (t->req.open_flags & (O_CREAT | O_EXCL)) ==
						      (O_CREAT | O_EXCL))
				  ? FSB_RESOLVE_THROUGH_PARENT
				  : FSB_RESOLVE_EXISTING_OR_CREATABLE;
	t->acc.session = t->req.session;
	t->acc.tool_call = t->req.tool_call;
	t->acc.pid = conn->pid;
	t->acc.uid = conn->uid;
	/* A run's client: its paths name files in its sandbox's view. */
	t->acc.has_view = conn->view_fd >= 0;
	t->acc.view_fd = conn->view_fd;

	/* A write may copy a large file into the backup store first: off the
	 * loop, so everyone else is answered meanwhile. */
	if (t->writes) {
		t->job.run = job_run;
		t->job.done = job_done;
		fsb_conn_offload(conn, &t->job, FSB_WORK_SHARED);
		return;
	}
	serve(t);
	answer(t);
done:
	text_job_free(t);
}
