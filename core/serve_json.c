/*
 * serve_json.c — one JSON request on a client socket (DESIGN §3.3): checked
 * raw for NULs and bad UTF-8, parsed, validated, bound to the connection's
 * scope, then performed by the host-operation layer (hostop.c) on the
 * thread pool.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hostop.h"
#include "proto_json.h"
#include "server.h"

static cJSON *error_reply(const cJSON *id, int errnum, const char *error)
{
	cJSON *r = cJSON_CreateObject();

	cJSON_AddItemToObject(r, "id", id != NULL ? cJSON_Duplicate(id, 1) : cJSON_CreateNull());
	cJSON_AddFalseToObject(r, "ok");
	cJSON_AddStringToObject(r, "errno", fsb_errno_name(errnum));
	cJSON_AddStringToObject(r, "error", error);
	return r;
}

static void audit_refusal(struct fsb_conn *conn, const char *rule, const char *reason,
			  int errnum, const char *operation, const char *claimed)
{
	cJSON *rec = cJSON_CreateObject();

	cJSON_AddStringToObject(rec, "phase", "ipc-host-op");
	cJSON_AddStringToObject(rec, "session", conn->scope.session);
	if (operation != NULL)
		cJSON_AddStringToObject(rec, "op", operation);
	cJSON_AddStringToObject(rec, "decision", "deny");
	cJSON_AddStringToObject(rec, "rule", rule);
	cJSON_AddStringToObject(rec, "reason", reason);
	cJSON_AddStringToObject(rec, "errno", fsb_errno_name(errnum));
	cJSON_AddNumberToObject(rec, "pid", conn->pid);
	if (claimed != NULL)
		fsb_json_add_path(rec, "claimedSession", claimed, false);
	fsb_broker_audit(conn->srv->broker, conn->scope.session, rec);
}

/* A name ending in '/' names a directory, as in `rm q/` or `mv q/ r`. */
static bool names_a_directory(const char *path)
{
	size_t n = path != NULL ? strlen(path) : 0;

	return n > 1 && path[n - 1] == '/';
}

/* A host operation runs on the thread pool: a recursive copy or delete, or
 * a large backup, must not hold up everyone else. */
struct hostop_job {
	struct fsb_job job;
	struct fsb_hostop_req req;
	struct fsb_hostop_client who;
	cJSON *reply;
};

static void hostop_run(struct fsb_job *job)
{
	struct hostop_job *j = (struct hostop_job *)job;

	j->reply = fsb_hostop_run(job->conn->srv->broker, &j->who, &j->req);
}

static void hostop_done(struct fsb_job *job)
{
	struct hostop_job *j = (struct hostop_job *)job;

	if (job->conn != NULL)
		fsb_conn_reply_json(job->conn, j->reply);
	else
		cJSON_Delete(j->reply);
	fsb_hostop_free(&j->req);
	free(j);
}

void fsb_serve_json(struct fsb_conn *conn, char *line, size_t len)
{
	struct fsb_broker *b = conn->srv->broker;
	struct fsb_hostop_req req;
	struct hostop_job *j;
	const cJSON *cmd;
	const char *why;
	cJSON *obj, *r;

	b->stats.requests++;
	/* The parser runs fsb_json_precheck() first: no NUL, no \u0000, UTF-8. */
	if ((obj = fsb_json_parse_object(line, len, &why)) == NULL) {
		b->stats.errors++;
		conn->malformed++;
		audit_refusal(conn, "malformed request", why, EINVAL, NULL, NULL);
		fsb_conn_reply_json(conn, error_reply(NULL, EINVAL, why));
		return;
	}
	cmd = cJSON_GetObjectItemCaseSensitive(obj, "command");
	if (!cJSON_IsString(cmd) || strcmp(cmd->valuestring, "HostFileOperation") != 0) {
		b->stats.errors++;
		conn->malformed++;
		why = "unknown command: a client socket takes HostFileOperation; control "
		      "commands go to the core's control channel";
		audit_refusal(conn, "malformed request", why, EINVAL, NULL, NULL);
		fsb_conn_reply_json(conn, error_reply(cJSON_GetObjectItemCaseSensitive(obj, "id"),
						      EINVAL, why));
		cJSON_Delete(obj);
		return;
	}
	if (fsb_hostop_parse(obj, &req, &why) < 0) {
		b->stats.errors++;
		conn->malformed++;
		audit_refusal(conn, "malformed request", why, EINVAL, NULL, NULL);
		fsb_conn_reply_json(conn, error_reply(cJSON_GetObjectItemCaseSensitive(obj, "id"),
						      EINVAL, why));
		cJSON_Delete(obj);
		return;
	}
	cJSON_Delete(obj);

	if (req.tool_call != NULL && req.tool_call[0] != '\0' && !fsb_id_valid(req.tool_call)) {
		why = "toolCallId must be 1-128 characters of A-Z a-z 0-9 . _ : -";
		b->stats.errors++;
		conn->malformed++;
		audit_refusal(conn, "malformed request", why, EINVAL, NULL, NULL);
		fsb_conn_reply_json(conn, error_reply(req.id, EINVAL, why));
		fsb_hostop_free(&req);
		return;
	}
	if ((req.session != NULL && strcmp(req.session, conn->scope.session) != 0) ||
	    (req.tool_call != NULL && conn->scope.tool_call[0] != '\0' &&
	     strcmp(req.tool_call, conn->scope.tool_call) != 0)) {
		why = "the request names a session or tool call other than its connection's";
		b->stats.denied++;
		audit_refusal(conn, "foreign session", why, EACCES, fsb_hostop_name(req.op),
			      req.session);
		r = error_reply(req.id, EACCES, why);
		cJSON_AddStringToObject(r, "decision", "deny");
		fsb_conn_reply_json(conn, r);
		fsb_hostop_free(&req);
		return;
	}

	if ((j = calloc(1, sizeof(*j))) == NULL) {
		b->stats.errors++;
		fsb_conn_reply_json(conn, error_reply(req.id, ENOMEM, "out of memory; nothing "
						      "was changed"));
		fsb_hostop_free(&req);
		return;
	}
	j->req = req;
	j->who.session = conn->scope.session;
	j->who.tool_call = req.tool_call != NULL ? req.tool_call : conn->scope.tool_call;
	j->who.pid = conn->pid;
	j->who.uid = conn->uid;
	/* A run's client: its paths name files in its sandbox's view. */
	j->who.view_fd = conn->view_fd;
	/* A file named with a trailing '/' is ENOTDIR, as the kernel says. */
	if (req.op == FSB_HOSTOP_DELETE)
		j->who.must_be_dir = names_a_directory(req.path);
	else if (req.op == FSB_HOSTOP_RENAME)
		j->who.must_be_dir = names_a_directory(req.from) || names_a_directory(req.to);
	/* No deleteMode: the pack's delete.mode. A run's client deletes
	 * by unlinking, as the supervisor does for any program in the run:
	 * the sandbox's trash is the host's, read-only there, and the cycle
	 * holds what was deleted (a restore brings it back). */
	if (req.op == FSB_HOSTOP_DELETE && conn->view_fd >= 0) {
		j->req.delete_trash = false;
	} else if (req.op == FSB_HOSTOP_DELETE && !req.has_delete_mode) {
		fsb_broker_lock(b);
		j->req.delete_trash = fsb_policy_delete_trashes(b->policy);
		fsb_broker_unlock(b);
	}
	j->job.run = hostop_run;
	j->job.done = hostop_done;
	/* Alone: it judges directories and then changes them (work.h). */
	fsb_conn_offload(conn, &j->job, FSB_WORK_EXCLUSIVE);
}
