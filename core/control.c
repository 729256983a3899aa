/*
 * control.c — the control commands (see control.h). Each handler takes the
 * request object and fills the reply; fsb_control_handle() dispatches.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "control.h"
#include "grant.h"
#include "log.h"
#include "modify_backup.h"
#include "proto_json.h"

#define container_of_ctl(c) ((struct fsb_control *)((char *)(c) - offsetof(struct fsb_control, chan)))

static const char *get_string(const cJSON *req, const char *field)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, field);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void fail(cJSON *reply, const char *fmt, const char *arg)
{
	char msg[512];

	snprintf(msg, sizeof(msg), fmt, arg);
	cJSON_ReplaceItemInObjectCaseSensitive(reply, "ok", cJSON_CreateFalse());
	cJSON_AddStringToObject(reply, "error", msg);
}

/*
 * The object the core judged: `exists`, and for an existing one its device
 * and inode as decimal strings (a JSON number loses precision above 2^53).
 * A host that then opens the file itself compares them with an fstat of
 * what it opened, so that it never acts on another file than the one
 * judged (a name swapped in between).
 */
static void add_identity(cJSON *reply, const struct fsb_access *acc)
{
	char num[24];
	bool exists = acc->resolve_err == 0 && acc->res.exists;

	cJSON_AddBoolToObject(reply, "exists", exists);
	if (!exists)
		return;
	snprintf(num, sizeof(num), "%ju", (uintmax_t)acc->res.st.st_dev);
	cJSON_AddStringToObject(reply, "dev", num);
	snprintf(num, sizeof(num), "%ju", (uintmax_t)acc->res.st.st_ino);
	cJSON_AddStringToObject(reply, "ino", num);
}

static void cmd_check_access(struct fsb_broker *b, const char *session,
			     const cJSON *req, cJSON *reply)
{
	const char *path = get_string(req, "path"), *op = get_string(req, "op");
	struct fsb_access acc;
	struct fsb_audit_line l;

	memset(&acc, 0, sizeof(acc));
	if (path == NULL || op == NULL) {
		fail(reply, "%s", "expected 'CheckAccess {path: string, op: string}'");
		return;
	}
	if (fsb_op_parse(op, &acc.op) < 0) {
		fail(reply, "unknown op '%s' (read, write, create, delete, rename-from, "
		     "rename-to, mkdir, link, symlink, chmod, chown, utimes, xattr, touch)", op);
		return;
	}
	acc.requested = path;
	acc.strategy = fsb_strategy_for_op(acc.op);
	acc.session = session;
	acc.tool_call = get_string(req, "toolCallId");
	/* A question, not the access: it uses up no once-approval. */
	acc.peek = true;
	acc.explain = true;
	fsb_broker_decide(b, &acc);
	fsb_access_audit_line(&l, &acc, "control-check", acc.errnum);
	fsb_broker_audit_line(b, session, &l);

	cJSON_AddStringToObject(reply, "decision", fsb_decision_name(acc.verdict.decision));
	cJSON_AddStringToObject(reply, "rule", acc.verdict.rule);
	if (acc.verdict.reason[0])
		cJSON_AddStringToObject(reply, "reason", acc.verdict.reason);
	if (acc.verdict.hint[0])
		cJSON_AddStringToObject(reply, "hint", acc.verdict.hint);
	fsb_json_add_path(reply, "path", path, false);
	fsb_json_add_path(reply, "normalisedPath",
			  acc.resolve_err == 0 ? acc.res.path : acc.normalised, false);
	add_identity(reply, &acc);
	if (acc.block_id[0])
		cJSON_AddStringToObject(reply, "blockId", acc.block_id);
	if (acc.errnum != 0)
		cJSON_AddStringToObject(reply, "errno", fsb_errno_name(acc.errnum));
}

static void cmd_prompt_blocks(struct fsb_broker *b, const cJSON *req, cJSON *reply)
{
	const char *tool_call = get_string(req, "toolCallId");
	cJSON *list = cJSON_AddArrayToObject(reply, "blocks");

	fsb_broker_lock(b);
	for (size_t i = 0; i < b->prompts->n; i++) {
		const struct fsb_prompt *p = &b->prompts->v[i];

		/* Answered, its waiting calls not woken yet: not pending. */
		if (p->answer != 0)
			continue;
		if (tool_call == NULL || strcmp(tool_call, p->tool_call) == 0)
			cJSON_AddItemToArray(list, fsb_prompt_to_json(p));
	}
	fsb_broker_unlock(b);
}

static void approve_locked(struct fsb_broker *b, const char *session, const cJSON *req,
			   cJSON *reply, bool approve)
{
	const char *id = get_string(req, "blockId");
	const char *scope = get_string(req, "scope");
	const struct fsb_prompt *p;
	cJSON *rec;

	if (id == NULL) {
		fail(reply, "%s", approve ? "expected 'Approve {blockId: string, scope: \"once\"|\"session\"}'"
					  : "expected 'Deny {blockId: string}'");
		return;
	}
	if ((p = fsb_prompts_find(b->prompts, id)) == NULL) {
		fail(reply, "no pending prompt block '%s' (see PromptBlocks)", id);
		return;
	}
	if (scope == NULL)
		scope = "once";
	if (approve && strcmp(scope, "once") != 0 && strcmp(scope, "session") != 0) {
		fail(reply, "scope must be \"once\" or \"session\", not '%s'", scope);
		return;
	}
	/* The audit line first: an approval nobody can trace is not given. */
	rec = fsb_prompt_to_json(p);
	cJSON_AddStringToObject(rec, "phase", approve ? "approval" : "approval-denied");
	if (approve)
		cJSON_AddStringToObject(rec, "scope", scope);
	if (fsb_broker_audit(b, p->session[0] ? p->session : session, rec) < 0) {
		fail(reply, "%s", "the audit log cannot be written; nothing was recorded");
		return;
	}
	/* A file too large to back up: the approval is the core's, not the
	 * pack's (the pack allowed the change itself). */
	if (approve && strcmp(p->rule, FSB_TOO_LARGE_RULE) == 0) {
		if (fsb_backup_approve_too_large(b, p, scope) < 0) {
			fail(reply, "%s", "out of memory; the approval was not recorded");
			return;
		}
	} else if (approve && fsb_policy_approve(b->policy, p->op, p->path, p->exists, p->dev,
						 p->ino, scope, p->session) < 0) {
		fail(reply, "%s", "the pack refused the approval (see the core's log)");
		return;
	}
	if (approve)
		fsb_broker_verdicts_changed(b);
	cJSON_AddStringToObject(reply, "blockId", id);
	if (approve)
		cJSON_AddStringToObject(reply, "scope", scope);
	/* A call waiting on it (inline approvals) wakes and is judged again. */
	fsb_prompts_answer(b->prompts, id, approve);
}

/* The prompt found stays where it is until it is removed: under the lock. */
static void cmd_approve(struct fsb_broker *b, const char *session, const cJSON *req,
			cJSON *reply, bool approve)
{
	fsb_broker_lock(b);
	approve_locked(b, session, req, reply, approve);
	fsb_broker_unlock(b);
}

static void cmd_enable_backup(struct fsb_broker *b, const char *sid, const cJSON *req,
			      cJSON *reply)
{
	const cJSON *enabled = cJSON_GetObjectItemCaseSensitive(req, "enabled");
	const cJSON *mb = cJSON_GetObjectItemCaseSensitive(req, "fileBackupMaxSizeMB");
	struct fsb_session *s = fsb_broker_session(b, sid);

	if (!cJSON_IsBool(enabled) || (mb != NULL && !cJSON_IsNumber(mb))) {
		fail(reply, "%s", "expected 'EnableModifyBackup {enabled: boolean, "
		     "fileBackupMaxSizeMB?: number}'");
		return;
	}
	if (s == NULL) {
		fail(reply, "session %s has no state (no state dir, or too many sessions)", sid);
		return;
	}
	fsb_broker_lock(b);
	s->backup_enabled = cJSON_IsTrue(enabled);
	s->max_bytes_override = mb != NULL ? fsb_clamp_backup_mb(mb->valuedouble) : 0;
	cJSON_AddBoolToObject(reply, "enabled", s->backup_enabled);
	cJSON_AddNumberToObject(reply, "fileBackupMaxSizeMB",
				(double)((s->max_bytes_override ? s->max_bytes_override
						: fsb_policy_backup(b->policy)->max_bytes) >> 20));
	fsb_broker_unlock(b);
}

static void cmd_commit_backup(struct fsb_broker *b, const char *sid, const cJSON *req,
			      cJSON *reply)
{
	const char *msg = get_string(req, "commitMsg");
	char err[512];
	int n;

	n = fsb_backup_commit(b, sid, msg != NULL ? msg : "", err, sizeof(err));
	if (n < 0) {
		fail(reply, "the cycle was not sealed: %s", err);
		return;
	}
	/* 0: nothing was backed up since the last commit. */
	cJSON_AddNumberToObject(reply, "cycle", n);
}

/* The host's own Write/Edit tools: judge the write, back the file up. */
static void cmd_modify_backup(struct fsb_broker *b, const char *sid, const cJSON *req,
			      cJSON *reply)
{
	const char *path = get_string(req, "path");
	struct fsb_backup_outcome out = { 0 };
	struct fsb_access acc;
	struct stat st;
	int rdfd, rc;
	struct fsb_audit_line l;

	if (path == NULL) {
		fail(reply, "%s", "expected 'ModifyBackup {path: string, toolCallId?: string}'");
		return;
	}
	memset(&acc, 0, sizeof(acc));
	acc.op = FSB_OP_WRITE;
	acc.requested = path;
	acc.strategy = FSB_RESOLVE_EXISTING_OR_CREATABLE;
	acc.session = sid;
	acc.tool_call = get_string(req, "toolCallId");
	fsb_broker_decide(b, &acc);
	cJSON_AddStringToObject(reply, "decision", fsb_decision_name(acc.verdict.decision));
	cJSON_AddStringToObject(reply, "rule", acc.verdict.rule);
	if (acc.resolve_err == 0)
		fsb_json_add_path(reply, "normalisedPath", acc.res.path, false);
	add_identity(reply, &acc);
	if (acc.verdict.decision != FSB_ALLOW || acc.errnum != 0) {
		fsb_access_audit_line(&l, &acc, "host-modify-backup", acc.errnum);
		fsb_broker_audit_line(b, sid, &l);
		if (acc.block_id[0])
			cJSON_AddStringToObject(reply, "blockId", acc.block_id);
		fail(reply, "%s", acc.verdict.decision != FSB_ALLOW
				  ? "the pack does not allow this write: nothing was backed up"
				  : strerror(acc.errnum));
		return;
	}
	/* A file the host is about to create: the journal says it was absent,
	 * so a restore removes it. */
	if (!acc.res.exists) {
		fsb_access_audit_line(&l, &acc, "host-modify-backup", acc.errnum);
		fsb_broker_audit_line(b, sid, &l);
		if (fsb_backup_note_created(b, sid, &acc, 0, NULL) < 0) {
			fail(reply, "%s", "the backup journal cannot be written");
			return;
		}
		cJSON_AddBoolToObject(reply, "backedUp", false);
		cJSON_AddStringToObject(reply, "note", "the file does not exist yet");
		return;
	}
	/* Nothing to save for what is not a regular file. */
	if (!S_ISREG(acc.res.st.st_mode)) {
		fsb_access_audit_line(&l, &acc, "host-modify-backup", acc.errnum);
		fsb_broker_audit_line(b, sid, &l);
		cJSON_AddBoolToObject(reply, "backedUp", false);
		cJSON_AddStringToObject(reply, "note", "not a regular file");
		return;
	}
	rdfd = fsb_grant_open_for_backup(b->rootfd, &acc.res);
	if (rdfd < 0) {
		fsb_access_audit_line(&l, &acc, "host-modify-backup", acc.errnum);
		fsb_audit_line_str(&l, "backupErrno", fsb_errno_name(-rdfd));
		fsb_broker_audit_line(b, sid, &l);
		fail(reply, "cannot open the file to back it up: %s", strerror(-rdfd));
		return;
	}
	rc = fstat(rdfd, &st) < 0 ? -errno
		: fsb_backup_file(b, sid, &acc, rdfd, &st, 0, "host-modify-backup", &out);
	close(rdfd);
	if (rc < 0) {
		if (out.block_id[0])
			cJSON_AddStringToObject(reply, "blockId", out.block_id);
		fail(reply, "%s", out.why[0] ? out.why : strerror(-rc));
		return;
	}
	/* The host writes it next, and may write it again within the turn. */
	fsb_backup_note_write_grant(b, sid, -1, &st);
	cJSON_AddBoolToObject(reply, "backedUp", out.skipped == NULL);
	if (out.skipped != NULL)
		cJSON_AddStringToObject(reply, "skipped", out.skipped);
}

static void cmd_stats(struct fsb_broker *b, cJSON *reply)
{
	const struct fsb_stats *s = &b->stats;
	cJSON *fsyncs, *supervisors;

	fsb_broker_lock(b);
	cJSON_AddStringToObject(reply, "pack", fsb_policy_name(b->policy));
	cJSON_AddNumberToObject(reply, "requests", (double)s->requests);
	cJSON_AddNumberToObject(reply, "allowed", (double)s->allowed);
	cJSON_AddNumberToObject(reply, "denied", (double)s->denied);
	cJSON_AddNumberToObject(reply, "asked", (double)s->asked);
	cJSON_AddNumberToObject(reply, "errors", (double)s->errors);
	cJSON_AddNumberToObject(reply, "policyErrors", (double)s->policy_errors);
	cJSON_AddNumberToObject(reply, "fdsGranted", (double)s->fds_granted);
	cJSON_AddNumberToObject(reply, "connections", (double)s->connections);
	cJSON_AddNumberToObject(reply, "connectionsRefused", (double)s->connections_refused);
	cJSON_AddNumberToObject(reply, "reloads", (double)s->reloads);
	cJSON_AddNumberToObject(reply, "reloadFailures", (double)s->reload_failures);
	cJSON_AddNumberToObject(reply, "verdictCacheHits", (double)b->verdict_cache.hits);
	cJSON_AddNumberToObject(reply, "verdictCacheMisses", (double)b->verdict_cache.misses);
	cJSON_AddNumberToObject(reply, "promptBlocks", (double)b->prompts->n);
	cJSON_AddNumberToObject(reply, "policyMemoryBytes", (double)fsb_policy_memory(b->policy));
	fsb_broker_unlock(b);
	/* How the supervisors' wake-ups were set (core/linux/supervisor.c). */
	supervisors = cJSON_AddObjectToObject(reply, "supervisors");
	if (supervisors != NULL) {
		cJSON_AddNumberToObject(supervisors, "syncWakeUp",
					(double)s->supervisors_sync_wake_up);
		cJSON_AddNumberToObject(supervisors, "plainWakeUp",
					(double)s->supervisors_plain_wake_up);
	}
	/* The backup stores' syncs, by what they were for (process-wide). */
	fsyncs = cJSON_AddObjectToObject(reply, "fsyncs");
	for (int k = 0; fsyncs != NULL && k < FSB_SYNC_KINDS; k++)
		cJSON_AddNumberToObject(fsyncs, fsb_sync_kind_name(k), (double)fsb_sync_total(k));
	if (b->loop != NULL)
		cJSON_AddNumberToObject(reply, "uptimeMs", (double)(uv_now(b->loop) - b->started_ms));
}

cJSON *fsb_control_handle(struct fsb_broker *b, const char *default_session,
			  const cJSON *req, bool *shutdown)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(req, "id");
	const char *command = get_string(req, "command");
	const char *session = get_string(req, "sessionId");
	cJSON *reply = cJSON_CreateObject();
	char err[1024];

	*shutdown = false;
	cJSON_AddItemToObject(reply, "id", cJSON_IsNumber(id) || cJSON_IsString(id)
						   ? cJSON_Duplicate(id, 0) : cJSON_CreateNull());
	cJSON_AddTrueToObject(reply, "ok");
	if (!cJSON_IsNumber(id) && !cJSON_IsString(id)) {
		fail(reply, "%s", "every control request needs an \"id\" (number or string)");
		return reply;
	}
	if (command == NULL) {
		fail(reply, "%s", "expected {\"id\": ..., \"command\": \"<Name>\", ...}");
		return reply;
	}
	if (session == NULL)
		session = default_session;
	else if (!fsb_id_valid(session)) {
		fail(reply, "sessionId '%s' is not a valid id ([A-Za-z0-9._:-], at most 128)",
		     session);
		return reply;
	}

	if (strcmp(command, "CheckAccess") == 0) {
		cmd_check_access(b, session, req, reply);
	} else if (strcmp(command, "PromptBlocks") == 0) {
		cmd_prompt_blocks(b, req, reply);
	} else if (strcmp(command, "Approve") == 0) {
		cmd_approve(b, session, req, reply, true);
	} else if (strcmp(command, "Deny") == 0) {
		cmd_approve(b, session, req, reply, false);
	} else if (strcmp(command, "Reload") == 0) {
		if (fsb_broker_reload(b, "control", err, sizeof(err)) < 0)
			fail(reply, "reload failed, the previous pack keeps serving: %s", err);
		else
			cJSON_AddStringToObject(reply, "pack", fsb_policy_name(b->policy));
	} else if (strcmp(command, "Stats") == 0) {
		cmd_stats(b, reply);
	} else if (strcmp(command, "Shutdown") == 0) {
		*shutdown = true;
	} else if (strcmp(command, "EnableModifyBackup") == 0) {
		cmd_enable_backup(b, session, req, reply);
	} else if (strcmp(command, "CommitModifyBackup") == 0) {
		cmd_commit_backup(b, session, req, reply);
	} else if (strcmp(command, "ModifyBackup") == 0) {
		cmd_modify_backup(b, session, req, reply);
	} else {
		fail(reply, "unknown command '%s' (CheckAccess, PromptBlocks, Approve, Deny, "
		     "Reload, Stats, Shutdown, EnableModifyBackup, CommitModifyBackup, "
		     "ModifyBackup)", command);
	}
	return reply;
}

static void send_json(struct fsb_control *ctl, cJSON *obj)
{
	char *s = fsb_json_print(obj, false);
	size_t n;

	cJSON_Delete(obj);
	if (s == NULL)
		return;
	n = strlen(s);
	s[n] = '\n';
	fsb_chan_send(&ctl->chan, s, n + 1, -1);
	free(s);
}

void fsb_control_event(struct fsb_control *ctl, cJSON *ev)
{
	send_json(ctl, ev);
}

/* The commands that wait for a session's backup store. */
static bool served_off_loop(const cJSON *req)
{
	const char *command = get_string(req, "command");

	return command != NULL && (strcmp(command, "CommitModifyBackup") == 0 ||
				   strcmp(command, "ModifyBackup") == 0);
}

#define control_of_work(w) ((struct fsb_control *)((char *)(w) - offsetof(struct fsb_control, work)))

static void control_work(struct fsb_work *w)
{
	struct fsb_control *ctl = control_of_work(w);
	bool shutdown;

	ctl->work_reply = fsb_control_handle(ctl->broker, ctl->session, ctl->work_req, &shutdown);
}

static void control_work_done(struct fsb_work *w)
{
	struct fsb_control *ctl = control_of_work(w);

	cJSON_Delete(ctl->work_req);
	ctl->work_req = NULL;
	send_json(ctl, ctl->work_reply);
	ctl->work_reply = NULL;
	fsb_chan_resume(&ctl->chan);
}

static void on_control_line(struct fsb_chan *c, char *line, size_t len)
{
	struct fsb_control *ctl = container_of_ctl(c);
	const char *why;
	bool shutdown = false;
	cJSON *req, *reply;

	if (line == NULL) {
		static const char msg[] = "{\"id\":null,\"ok\":false,\"error\":"
					  "\"control line longer than 65536 bytes\"}\n";

		fsb_chan_send(c, msg, sizeof(msg) - 1, -1);
		fsb_chan_close_after_flush(c);
		return;
	}
	if (len == 0)
		return;
	if ((req = fsb_json_parse_object(line, len, &why)) == NULL) {
		reply = cJSON_CreateObject();
		cJSON_AddNullToObject(reply, "id");
		cJSON_AddFalseToObject(reply, "ok");
		cJSON_AddStringToObject(reply, "error", why);
		send_json(ctl, reply);
		return;
	}
	if (served_off_loop(req) && ctl->loop != NULL) {
		ctl->work_req = req;
		ctl->work.kind = FSB_WORK_SHARED;
		ctl->work.run = control_work;
		ctl->work.done = control_work_done;
		fsb_chan_hold(c);
		fsb_work_submit(&ctl->broker->work, &ctl->work);
		return;
	}
	reply = fsb_control_handle(ctl->broker, ctl->session, req, &shutdown);
	cJSON_Delete(req);
	send_json(ctl, reply);
	if (shutdown && ctl->on_shutdown != NULL)
		ctl->on_shutdown(ctl);
}

static void on_control_closed(struct fsb_chan *c)
{
	struct fsb_control *ctl = container_of_ctl(c);

	/* However the channel ended (EOF on stdin, a write error, an
	 * over-long line), nobody can approve or stop the core any more. */
	if (ctl->on_shutdown != NULL)
		ctl->on_shutdown(ctl);
}

int fsb_control_start(uv_loop_t *loop, struct fsb_control *ctl, struct fsb_broker *b,
		      const char *session, int rfd, int wfd)
{
	ctl->broker = b;
	ctl->loop = loop;
	snprintf(ctl->session, sizeof(ctl->session), "%s", session);
	return fsb_chan_start(loop, &ctl->chan, rfd, wfd, false, false, 65536,
			      on_control_line, on_control_closed);
}

void fsb_control_close(struct fsb_control *ctl)
{
	fsb_chan_close(&ctl->chan);
}
