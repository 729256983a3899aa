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
	bool audit_failed;		/* no line, no answer but a refusal */
	struct fsb_backup_outcome backup;	/* a backup's refusal */
	char why[512];			/* the journal's refusal */
};

/* Where the request's paths are resolved: the client's view (a run's
 * sandbox), else the core's root. */
static int root_of(const struct text_job *t)
{
	return t->acc.has_view ? t->acc.view_fd : t->conn->srv->broker->rootfd;
}

/* Called by fsb_grant_open with a read-only fd on the inode it is about to
 * hand out for writing. */
static int backup_granted_file(int rdfd, const struct stat *st, void *arg)
{
	struct text_job *t = arg;

	int rc = fsb_backup_file(t->conn->srv->broker, t->conn->scope.session, &t->acc, rdfd,
				 st, t->req.has_open ? t->req.open_flags : 0, "ipc-token-backup",
				 &t->backup);

	if (rc < 0)
		snprintf(t->why, sizeof(t->why), "%s", t->backup.why);
	return rc;
}

static int backup_before_sandbox(struct text_job *t)
{
	struct stat st;
	int rdfd, rc;

	rdfd = fsb_grant_open_for_backup(root_of(t), &t->acc.res);
	if (rdfd < 0)
		return -rdfd;
	rc = fstat(rdfd, &st) < 0 ? -errno : backup_granted_file(rdfd, &st, t);
	close(rdfd);
	return -rc;
}

/* Decide, grant, back up, audit: everything but the reply. */
static void serve(struct text_job *t)
{
	struct fsb_conn *conn = t->conn;
	struct fsb_broker *b = conn->srv->broker;
	const struct fsb_text_req *req = &t->req;
	struct fsb_access *acc = &t->acc;
	int flags = req->has_open ? req->open_flags : 0;
	struct stat st;
	cJSON *rec;

	/* Twice at most: a file that appears between the check and an O_CREAT
	 * open was judged as a create and must be judged again as a write. */
	for (int attempt = 0; attempt < 2; attempt++) {
		fsb_broker_decide(b, acc);
		if (acc->verdict.decision != FSB_ALLOW || acc->errnum != 0 || !req->has_open)
			break;
		/* A create moves its directory's mtime: journaled first. */
		if (!acc->res.exists && (req->open_flags & O_CREAT) &&
		    fsb_backup_note_parent(b, conn->scope.session, acc) < 0) {
			acc->errnum = EIO;
			break;
		}
		/* O_TRUNC waits for the audit line: a request refused for want
		 * of it must leave the file as it was. */
		t->fd = fsb_grant_open(root_of(t), &acc->res, req->open_flags & ~O_TRUNC,
				       req->open_mode, backup_granted_file, t);
		if (t->fd >= 0)
			break;
		acc->errnum = -t->fd;
		t->fd = -1;
		if (acc->errnum != EEXIST || (req->open_flags & O_EXCL) || attempt > 0)
			break;
		acc->errnum = 0;
	}
	/* The original design's clients open the file themselves after SANDBOX:
	 * the backup is taken first (with the race docs/protocol.md states). */
	if (!req->has_open && t->writes && acc->verdict.decision == FSB_ALLOW &&
	    acc->errnum == 0 && acc->res.exists && S_ISREG(acc->res.st.st_mode))
		acc->errnum = backup_before_sandbox(t);
	/* Too large to back up, and the pack says ask: the request waits for
	 * the host's approval of the block, like any ask. */
	if (acc->errnum == EACCES && t->backup.block_id[0]) {
		acc->verdict.decision = FSB_ASK;
		snprintf(acc->verdict.rule, sizeof(acc->verdict.rule), "%s", FSB_TOO_LARGE_RULE);
		snprintf(acc->verdict.reason, sizeof(acc->verdict.reason), "%s", t->backup.why);
		snprintf(acc->block_id, sizeof(acc->block_id), "%s", t->backup.block_id);
	}
	/* A file this request creates (now, or by the client after SANDBOX):
	 * the journal says it was absent, so a restore removes it. A create
	 * the journal cannot record is undone and refused. */
	if (t->writes && acc->verdict.decision == FSB_ALLOW && acc->errnum == 0 &&
	    !acc->res.exists && fsb_backup_note_created(b, conn->scope.session, acc, flags, t->fd) < 0) {
		if (t->fd >= 0) {
			fsb_grant_undo_create(root_of(t), &acc->res, t->fd);
			close(t->fd);
			t->fd = -1;
		}
		acc->errnum = EIO;
		snprintf(t->why, sizeof(t->why), "the backup journal cannot be written; "
			 "nothing was created");
	}

	rec = fsb_access_audit_record(acc, "ipc-token");
	cJSON_AddNumberToObject(rec, "pid", conn->pid);
	if (req->has_open)
		cJSON_AddNumberToObject(rec, "openFlags", req->open_flags);
	if (t->fd >= 0)
		cJSON_AddStringToObject(rec, "grant", "fd");
	/* No reply goes out whose audit line is not written: fail closed, and
	 * take back a file the grant created. */
	if (fsb_broker_audit(b, conn->scope.session, rec) < 0) {
		if (t->fd >= 0 && !acc->res.exists)
			fsb_grant_undo_create(root_of(t), &acc->res, t->fd);
		if (t->fd >= 0)
			close(t->fd);
		t->fd = -1;
		t->audit_failed = true;
		return;
	}
	if (t->fd >= 0 && (req->open_flags & O_TRUNC) && fstat(t->fd, &st) == 0 &&
	    S_ISREG(st.st_mode) && ftruncate(t->fd, 0) < 0) {
		acc->errnum = errno;
		snprintf(t->why, sizeof(t->why), "cannot truncate the file: %s",
			 strerror(errno));
		close(t->fd);
		t->fd = -1;
		/* The line above said granted; this one says it was not. */
		rec = fsb_access_audit_record(acc, "ipc-token");
		cJSON_AddStringToObject(rec, "grant", "withdrawn");
		cJSON_AddStringToObject(rec, "error", t->why);
		fsb_broker_audit(b, conn->scope.session, rec);
	}
	if (!t->writes || acc->verdict.decision != FSB_ALLOW || acc->errnum != 0)
		return;
	/* Its holder may change the file from now on: the next backup of it in
	 * this cycle copies it again. */
	/* A file the pack's backup.skip matches is not followed into the next
	 * cycle either. */
	if (t->fd >= 0 && fstat(t->fd, &st) == 0)
		fsb_backup_note_write_grant(b, conn->scope.session,
					    acc->verdict.backup ? t->fd : -1, st.st_dev, st.st_ino);
	else if (t->fd < 0 && acc->res.exists)
		fsb_backup_note_write_grant(b, conn->scope.session, -1, acc->res.st.st_dev,
					    acc->res.st.st_ino);
}

static void answer(struct text_job *t)
{
	struct fsb_conn *conn = t->conn;
	struct fsb_broker *b = conn->srv->broker;
	struct fsb_access *acc = &t->acc;
	char reason[1024];

	if (t->audit_failed) {
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
		reply_deny(conn, acc->errnum, t->why[0] ? t->why : strerror(acc->errnum));
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
