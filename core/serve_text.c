/*
 * serve_text.c — one text token request, start to reply (DESIGN §3.2):
 * parse → scope → open-spec → decide → grant (FD) or SANDBOX or DENY →
 * audit, written before the reply it explains.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
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

/* What the backup hook of a grant needs, and what it says when it fails. */
struct backup_ctx {
	struct fsb_conn *conn;
	const struct fsb_access *acc;
	int flags;
	char why[512];
};

/* Called by fsb_grant_open with a read-only fd on the inode it is about to
 * hand out for writing. */
static int backup_granted_file(int rdfd, const struct stat *st, void *arg)
{
	struct backup_ctx *c = arg;

	return fsb_backup_file(c->conn->srv->broker, c->conn->scope.session, c->acc, rdfd, st,
			       c->flags, "ipc-token-backup", NULL, c->why, sizeof(c->why));
}

static int backup_before_sandbox(struct fsb_conn *conn, struct backup_ctx *c)
{
	struct fsb_broker *b = conn->srv->broker;
	struct stat st;
	int rdfd, rc;

	rdfd = fsb_grant_open_for_backup(b->rootfd, &c->acc->res);
	if (rdfd < 0)
		return -rdfd;
	rc = fstat(rdfd, &st) < 0 ? -errno : backup_granted_file(rdfd, &st, c);
	close(rdfd);
	return -rc;
}

void fsb_serve_text(struct fsb_conn *conn, char *line, size_t len)
{
	struct fsb_broker *b = conn->srv->broker;
	struct backup_ctx bctx;
	struct fsb_text_req req;
	struct fsb_access acc;
	const char *why;
	char reason[1024];
	bool writes;
	int fd = -1;
	cJSON *rec;

	b->stats.requests++;
	if (fsb_text_parse(line, len, &req, &why) < 0) {
		b->stats.errors++;
		conn->malformed++;
		refuse(conn, EINVAL, "malformed request", why, NULL);
		return;
	}
	if (req.tool_call[0] != '\0' && !fsb_id_valid(req.tool_call)) {
		b->stats.errors++;
		conn->malformed++;
		refuse(conn, EINVAL, "malformed request",
		       "the tool-call id must be 1-128 characters of A-Z a-z 0-9 . _ : -", NULL);
		return;
	}
	if (!in_scope(conn, &req)) {
		refuse(conn, EACCES, "foreign session",
		       "the request names a session or tool call other than its connection's",
		       req.session);
		return;
	}
	if (req.has_open && fsb_openflags_check(req.open_flags, req.write, &why) < 0) {
		b->stats.errors++;
		conn->malformed++;
		refuse(conn, EINVAL, "open flags refused", why, NULL);
		return;
	}
	writes = req.has_open ? fsb_openflags_writes(req.open_flags) : req.write;

	memset(&acc, 0, sizeof(acc));
	acc.op = writes ? FSB_OP_WRITE : FSB_OP_READ;
	acc.requested = req.path;
	/* With O_NOFOLLOW, or O_CREAT|O_EXCL, the final name itself is what
	 * gets opened (or refused): a final symlink is not followed. */
	acc.strategy = req.has_open && ((req.open_flags & O_NOFOLLOW) ||
					(req.open_flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL))
			       ? FSB_RESOLVE_THROUGH_PARENT
			       : FSB_RESOLVE_EXISTING_OR_CREATABLE;
	acc.session = req.session;
	acc.tool_call = req.tool_call;
	acc.pid = conn->pid;
	acc.uid = conn->uid;

	bctx.conn = conn;
	bctx.acc = &acc;
	bctx.flags = req.has_open ? req.open_flags : 0;
	bctx.why[0] = '\0';

	/* Twice at most: a file that appears between the check and an O_CREAT
	 * open was judged as a create and must be judged again as a write. */
	for (int attempt = 0; attempt < 2; attempt++) {
		fsb_broker_decide(b, &acc);
		if (acc.verdict.decision != FSB_ALLOW || acc.errnum != 0 || !req.has_open)
			break;
		fd = fsb_grant_open(b->rootfd, &acc.res, req.open_flags, req.open_mode,
				    backup_granted_file, &bctx);
		if (fd >= 0)
			break;
		acc.errnum = -fd;
		if (fd != -EEXIST || (req.open_flags & O_EXCL) || attempt > 0)
			break;
		acc.errnum = 0;
	}
	/* The original design's clients open the file themselves after SANDBOX:
	 * the backup is taken first (with the race docs/protocol.md states). */
	if (!req.has_open && writes && acc.verdict.decision == FSB_ALLOW && acc.errnum == 0 &&
	    acc.res.exists && S_ISREG(acc.res.st.st_mode))
		acc.errnum = backup_before_sandbox(conn, &bctx);
	/* A file this request creates (now, or by the client after SANDBOX):
	 * the journal says it was absent, so a restore removes it. A create
	 * the journal cannot record is undone and refused. */
	if (writes && acc.verdict.decision == FSB_ALLOW && acc.errnum == 0 && !acc.res.exists &&
	    fsb_backup_note_created(b, conn->scope.session, &acc, bctx.flags) < 0) {
		if (fd >= 0) {
			fsb_grant_undo_create(b->rootfd, &acc.res, fd);
			close(fd);
			fd = -1;
		}
		acc.errnum = EIO;
		snprintf(bctx.why, sizeof(bctx.why), "the backup journal cannot be written; "
			 "nothing was created");
	}

	rec = fsb_access_audit_record(&acc, "ipc-token");
	cJSON_AddNumberToObject(rec, "pid", conn->pid);
	if (req.has_open)
		cJSON_AddNumberToObject(rec, "openFlags", req.open_flags);
	if (fd >= 0)
		cJSON_AddStringToObject(rec, "grant", "fd");
	/* No reply goes out whose audit line is not written: fail closed. */
	if (fsb_broker_audit(b, conn->scope.session, rec) < 0) {
		if (fd >= 0)
			close(fd);
		b->stats.errors++;
		reply_deny(conn, EIO, "the audit log cannot be written");
		return;
	}

	switch (acc.verdict.decision) {
	case FSB_ASK:
		b->stats.asked++;
		snprintf(reason, sizeof(reason), "ask %s %s",
			 acc.prompt != NULL ? acc.prompt->id : "-", acc.verdict.rule);
		reply_deny(conn, EACCES, reason);
		return;
	case FSB_DENY:
		b->stats.denied++;
		reply_deny(conn, acc.errnum, acc.verdict.rule);
		return;
	case FSB_ALLOW:
		break;
	}
	if (acc.errnum != 0) {
		b->stats.denied++;
		reply_deny(conn, acc.errnum, bctx.why[0] ? bctx.why : strerror(acc.errnum));
		return;
	}
	b->stats.allowed++;
	if (fd >= 0) {
		struct stat st;

		/* Its holder may change the file from now on: the next backup of
		 * it in this cycle copies it again. */
		if (writes && fstat(fd, &st) == 0)
			fsb_backup_note_write_grant(b, conn->scope.session, st.st_dev, st.st_ino);
		b->stats.fds_granted++;
		fsb_conn_reply(conn, "FD\n", fd);
		return;
	}
	if (writes && acc.res.exists)
		fsb_backup_note_write_grant(b, conn->scope.session, acc.res.st.st_dev,
					    acc.res.st.st_ino);
	/* The compatibility path of the original design: the client opens the
	 * file itself. Our own clients always send an open-spec instead, since
	 * a rename between this answer and their open could swap the inode. */
	fsb_conn_reply(conn, "SANDBOX\n", -1);
}
