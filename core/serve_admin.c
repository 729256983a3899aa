/*
 * serve_admin.c — the admin socket (DESIGN §3.0): `fsbroker run` processes,
 * outside any sandbox, ask here for a socket scoped to their session and
 * tool call, which is the only one they mount into the sandbox. The socket
 * lives in the state dir, which no sandbox sees and no request may reach.
 *
 * One JSON object per line, as on the control channel:
 *   -> {"id":1,"command":"OpenScope","sessionId":"s1","toolCallId":"tc-7"}
 *   <- {"id":1,"ok":true,"socket":"/tmp/fsb-1000/run-4242-1.sock",
 *       "sessionId":"s1","pack":"...","workspace":"...",...,
 *       "socketDirs":["/tmp/fsb-1000","..."]}
 *   -> {"command":"Supervise"} + the seccomp listener in SCM_RIGHTS
 *   -> {"id":2,"command":"CloseScope","socket":"..."}
 * A scoped socket ends with CloseScope or with the admin connection that
 * opened it (the run is over), and so do the connections made through it.
 * CloseScope is answered once the run's supervisor has served its last
 * call, so that what the run changed is on disk when the run reads it.
 *
 * The host's own file commands are taken here too (CheckAccess,
 * ModifyBackup, EnableModifyBackup, CommitModifyBackup, and Shutdown where
 * the core allows it), for hosts that reach the core by its state dir
 * rather than by its stdin: `fsbroker hooks run`, which a host starts once
 * per tool call. Approvals are not among them: an approval stays with the
 * control channel and `fsbroker approve`.
 */
#include <errno.h>
#include <stdlib.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "control.h"
#include "proto_json.h"
#include "server.h"
#include "supervisor.h"

static const char *get_string(const cJSON *req, const char *field)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(req, field);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void refuse(cJSON *reply, const char *why)
{
	cJSON_ReplaceItemInObjectCaseSensitive(reply, "ok", cJSON_CreateFalse());
	cJSON_AddStringToObject(reply, "error", why);
}

static void audit_scope(struct fsb_conn *conn, const char *what, const struct fsb_scope *scope,
			const char *path)
{
	cJSON *rec = cJSON_CreateObject();

	cJSON_AddStringToObject(rec, "phase", "admin-scope");
	cJSON_AddStringToObject(rec, "action", what);
	cJSON_AddStringToObject(rec, "session", scope->session);
	cJSON_AddStringToObject(rec, "toolCallId", scope->tool_call);
	fsb_json_add_path(rec, "socket", path, false);
	cJSON_AddNumberToObject(rec, "pid", conn->pid);
	fsb_broker_audit(conn->srv->broker, scope->session, rec);
}

/* The session of the core's own socket (`fsbroker serve --session`), or
 * NULL when it has none (an embedded core). */
static const char *core_session(const struct fsb_server *srv)
{
	for (const struct fsb_listener *l = srv->listeners; l != NULL; l = l->next)
		if (!l->admin && l->id == 0 && l->scope.session[0] != '\0')
			return l->scope.session;
	return NULL;
}

static void add_dir_once(cJSON *arr, const char *path)
{
	char dir[PATH_MAX];
	const cJSON *it;

	snprintf(dir, sizeof(dir), "%s", path);
	dirname(dir);
	cJSON_ArrayForEach(it, arr)
		if (cJSON_IsString(it) && strcmp(it->valuestring, dir) == 0)
			return;
	cJSON_AddItemToArray(arr, cJSON_CreateString(dir));
}

/* Every directory the core has a socket in (the main socket's, which the
 * scoped ones share, and the admin socket's): the run hides each from its
 * sandbox, or a program inside could connect past its scope. */
static void add_socket_dirs(const struct fsb_server *srv, cJSON *reply)
{
	cJSON *arr = cJSON_AddArrayToObject(reply, "socketDirs");
	char probe[PATH_MAX + 2];

	if (arr == NULL)
		return;
	for (const struct fsb_listener *l = srv->listeners; l != NULL; l = l->next)
		if (l->owner == NULL)
			add_dir_once(arr, l->path);
	if (srv->scope_dir[0] != '\0') {
		snprintf(probe, sizeof(probe), "%s/x", srv->scope_dir);
		add_dir_once(arr, probe);
	}
}

static void open_scope(struct fsb_conn *conn, const cJSON *req, cJSON *reply)
{
	const struct fsb_broker_config *cfg = &conn->srv->broker->cfg;
	const char *session = get_string(req, "sessionId");
	const char *tool_call = get_string(req, "toolCallId");
	struct fsb_scope scope;
	char path[PATH_MAX], err[1024];

	if (session == NULL && cJSON_GetObjectItemCaseSensitive(req, "sessionId") == NULL)
		session = core_session(conn->srv);
	if (session == NULL || tool_call == NULL) {
		refuse(reply, "expected 'OpenScope {sessionId: string, toolCallId: string}'");
		return;
	}
	if (!fsb_id_valid(session) || !fsb_id_valid(tool_call)) {
		refuse(reply, "sessionId and toolCallId must be 1-128 characters of A-Z a-z 0-9 "
		       ". _ : - and not start with '.'");
		return;
	}
	if (fsb_broker_session(conn->srv->broker, session) == NULL) {
		refuse(reply, "the core cannot keep another session (at most 16), or cannot open "
		       "its audit log (see the core's log)");
		return;
	}
	memset(&scope, 0, sizeof(scope));
	snprintf(scope.session, sizeof(scope.session), "%s", session);
	snprintf(scope.tool_call, sizeof(scope.tool_call), "%s", tool_call);
	if (fsb_server_open_scope(conn->srv, conn, &scope, path, sizeof(path), err,
				  sizeof(err)) < 0) {
		refuse(reply, err);
		return;
	}
	audit_scope(conn, "open", &scope, path);
	/* The run's scope: Supervise on this connection supervises for it. */
	conn->scope = scope;
	/* Approvals `fsbroker approve` recorded since a run asked: the rerun
	 * finds them. */
	fsb_approvals_load(conn->srv->broker, session);
	cJSON_AddStringToObject(reply, "socket", path);
	cJSON_AddStringToObject(reply, "sessionId", session);
	cJSON_AddStringToObject(reply, "toolCallId", tool_call);
	/* What the run needs to build the same sandbox view the pack judges:
	 * the pack's file, and the paths its variables stand for. */
	cJSON_AddStringToObject(reply, "pack", cfg->pack);
	cJSON_AddStringToObject(reply, "workspace", cfg->workspace);
	cJSON_AddStringToObject(reply, "home", cfg->home);
	cJSON_AddStringToObject(reply, "tmp", cfg->tmp);
	cJSON_AddStringToObject(reply, "stateDir", cfg->state_dir);
	add_socket_dirs(conn->srv, reply);
}

static void close_scope_now(struct fsb_conn *conn, cJSON *reply);

static void supervisor_ended(struct fsb_supervisor *sv, void *arg)
{
	struct fsb_conn *conn = arg;
	cJSON *reply = conn->held_close;

	(void)sv;
	conn->supervisor = NULL;
	if (reply == NULL)
		return;
	conn->held_close = NULL;
	close_scope_now(conn, reply);
	fsb_conn_reply_json(conn, reply);
	fsb_chan_resume(&conn->chan);
}

/* The seccomp listener of the run, in SCM_RIGHTS with this line.
 * "routesUmask": true says the filter routes umask(2) and CLONE_FS clones
 * (fsbroker-init's does), so umasks may be kept per process; a client's
 * filter that does not just leaves it out. */
static void supervise(struct fsb_conn *conn, cJSON *req, cJSON *reply)
{
	int fd = fsb_chan_take_fd(&conn->chan), rc;
	unsigned flags = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "routesUmask"))
				 ? FSB_SUPERVISE_ROUTES_UMASK : 0;

	if (fd < 0) {
		refuse(reply, "Supervise comes with the seccomp listener fd in SCM_RIGHTS");
		return;
	}
	if (conn->scope.session[0] == '\0') {
		close(fd);
		refuse(reply, "no scope on this connection: OpenScope first");
		return;
	}
	if (conn->supervisor != NULL) {
		close(fd);
		refuse(reply, "this run is supervised already");
		return;
	}
	rc = fsb_supervisor_start(conn->srv->broker, fd, &conn->scope, flags, supervisor_ended,
				  conn, &conn->supervisor);
	if (rc < 0) {
		close(fd);
		refuse(reply, "cannot watch the seccomp listener");
		return;
	}
	audit_scope(conn, "supervise", &conn->scope, "");
}

/* `reply` holds the socket to close. */
static void close_scope_now(struct fsb_conn *conn, cJSON *reply)
{
	const char *path = get_string(reply, "socket");

	if (fsb_server_close_scope(conn->srv, conn, path) < 0) {
		refuse(reply, "no scoped socket of this connection has that path");
		return;
	}
	/* The run is over: what it still waits on is left for
	 * `fsbroker approve`, as an embedded core leaves it. */
	if (conn->scope.session[0] != '\0')
		fsb_approvals_save_blocks(conn->srv->broker, conn->scope.session,
					  conn->scope.tool_call);
}

/* True when the reply waits for the run's supervisor (see supervisor_ended). */
static bool close_scope(struct fsb_conn *conn, const cJSON *req, cJSON *reply)
{
	const char *path = get_string(req, "socket");

	if (path == NULL) {
		refuse(reply, "expected 'CloseScope {socket: string}'");
		return false;
	}
	cJSON_AddStringToObject(reply, "socket", path);
	if (conn->supervisor != NULL) {
		/* The sandbox is gone but calls it made may still be served:
		 * the next lines wait too, so replies keep their order. */
		conn->held_close = reply;
		fsb_chan_hold(&conn->chan);
		return true;
	}
	close_scope_now(conn, reply);
	return false;
}

/* The host's file commands on the pool: ModifyBackup and a commit wait for
 * the session's store, which a copy may hold for a while. */
struct host_job {
	struct fsb_job job;
	cJSON *req, *reply;
	char session[129];
};

static void host_run(struct fsb_job *job)
{
	struct host_job *j = (struct host_job *)job;
	bool shutdown = false;

	j->reply = fsb_control_handle(job->conn->srv->broker, j->session, j->req, &shutdown);
}

static void host_done(struct fsb_job *job)
{
	struct host_job *j = (struct host_job *)job;

	cJSON_Delete(j->req);
	if (job->conn != NULL && j->reply != NULL)
		fsb_conn_reply_json(job->conn, j->reply);
	else
		cJSON_Delete(j->reply);
	free(j);
}

static bool host_command(const char *name)
{
	static const char *const names[] = { "CheckAccess", "ModifyBackup", "EnableModifyBackup",
					     "CommitModifyBackup" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(name, names[i]) == 0)
			return true;
	return false;
}

/* True when the request went to the pool (it replies from there). */
static bool host_request(struct fsb_conn *conn, cJSON *req, cJSON *reply)
{
	const char *session = core_session(conn->srv);
	struct host_job *j;

	if (session == NULL) {
		refuse(reply, "this core has no session of its own for host commands");
		return false;
	}
	if ((j = calloc(1, sizeof(*j))) == NULL) {
		refuse(reply, "out of memory");
		return false;
	}
	j->req = req;
	snprintf(j->session, sizeof(j->session), "%s", session);
	j->job.run = host_run;
	j->job.done = host_done;
	cJSON_Delete(reply);
	fsb_conn_offload(conn, &j->job, FSB_WORK_SHARED);
	return true;
}

void fsb_serve_admin(struct fsb_conn *conn, char *line, size_t len)
{
	const cJSON *id, *cmd;
	const char *why;
	cJSON *req, *reply = cJSON_CreateObject();

	cJSON_AddTrueToObject(reply, "ok");
	if (len == 0) {
		cJSON_Delete(reply);
		return;
	}
	if ((req = fsb_json_parse_object(line, len, &why)) == NULL) {
		cJSON_AddNullToObject(reply, "id");
		refuse(reply, why);
		fsb_conn_reply_json(conn, reply);
		conn->malformed++;
		return;
	}
	id = cJSON_GetObjectItemCaseSensitive(req, "id");
	cmd = cJSON_GetObjectItemCaseSensitive(req, "command");
	cJSON_AddItemToObject(reply, "id", cJSON_IsNumber(id) || cJSON_IsString(id)
						   ? cJSON_Duplicate(id, 0) : cJSON_CreateNull());
	/* fsbroker-init sends Supervise without an id. */
	if (cJSON_IsString(cmd) && strcmp(cmd->valuestring, "Supervise") == 0) {
		supervise(conn, req, reply);
	} else if (!cJSON_IsNumber(id) && !cJSON_IsString(id)) {
		refuse(reply, "every admin request needs an \"id\" (number or string)");
		conn->malformed++;
	} else if (!cJSON_IsString(cmd)) {
		refuse(reply, "expected {\"id\": ..., \"command\": \"<Name>\", ...}");
		conn->malformed++;
	} else if (strcmp(cmd->valuestring, "OpenScope") == 0) {
		open_scope(conn, req, reply);
	} else if (strcmp(cmd->valuestring, "CloseScope") == 0) {
		if (close_scope(conn, req, reply)) {
			cJSON_Delete(req);
			return;
		}
	} else if (host_command(cmd->valuestring)) {
		if (host_request(conn, req, reply))
			return;
	} else if (strcmp(cmd->valuestring, "Shutdown") == 0 &&
		   conn->srv->on_admin_shutdown != NULL) {
		cJSON_Delete(req);
		fsb_conn_reply_json(conn, reply);
		conn->srv->on_admin_shutdown(conn->srv);
		return;
	} else {
		refuse(reply, "unknown admin command (OpenScope, CloseScope, Supervise, "
		       "CheckAccess, ModifyBackup, EnableModifyBackup, CommitModifyBackup, "
		       "Shutdown)");
		conn->malformed++;
	}
	cJSON_Delete(req);
	fsb_conn_reply_json(conn, reply);
	if (conn->malformed >= FSB_MAX_MALFORMED)
		fsb_chan_close_after_flush(&conn->chan);
}
