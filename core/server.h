/*
 * server.h — the client sockets (DESIGN §3.0–3.1): one listening socket per
 * scope, in a private 0700 directory, mode 0600; each accepted connection is
 * checked with SO_PEERCRED and carries the scope of the socket it came in on.
 */
#ifndef FSB_SERVER_H
#define FSB_SERVER_H

#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>
#include <sys/un.h>

#include <uv.h>

#include "broker.h"
#include "grant.h"
#include "chan.h"
#include "work.h"

#define FSB_MAX_LINE 65536
/* A connection that sends this many malformed requests is closed: each
 * costs an audit line, and a well-behaved client sends none. */
#define FSB_MAX_MALFORMED 64

struct fsb_server;
struct fsb_job;
struct fsb_supervisor;

/** One client connection. */
struct fsb_conn {
	struct fsb_chan chan;
	struct fsb_scope scope;
	pid_t pid;
	uid_t uid;
	int view_fd;		/* a run's client (scoped socket): its root, where
				 * its paths are resolved (DESIGN §5); else -1 */
	unsigned malformed;	/* malformed requests so far */
	bool admin;		/* came in on the admin socket */
	unsigned long scope_id;	/* the scoped socket it came in on, or 0 */
	struct fsb_supervisor *supervisor;	/* an admin connection's run, supervised */
	/* CloseScope while the run's supervisor still serves calls: done and
	 * answered once it has ended (serve_admin.c). */
	cJSON *held_close;
	struct fsb_job *job;	/* the request being served off the loop */
	bool gone;		/* closed while a job ran: freed when it ends */
	struct fsb_server *srv;
	struct fsb_conn *prev, *next;
};

struct fsb_listener {
	uv_poll_t poll;
	uv_timer_t backoff;	/* out of fds: pause accepting for a moment */
	int handles_open;
	int fd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct fsb_scope scope;
	bool admin;		/* the admin socket (DESIGN §3.0) */
	struct fsb_conn *owner;	/* the admin connection a scoped socket is for */
	unsigned long id;	/* a scoped socket's number, else 0 */
	struct fsb_server *srv;
	struct fsb_listener *next;
};

struct fsb_server {
	uv_loop_t *loop;
	struct fsb_broker *broker;
	struct fsb_listener *listeners;
	struct fsb_conn *conns;
	unsigned long nconns;
	int pending_closes;
	char scope_dir[PATH_MAX];	/* where scoped sockets go: the first socket's dir */
	unsigned long next_scope;
	void (*on_closed)(struct fsb_server *srv);	/* everything closed */
	unsigned long accepted;	/* connections accepted so far (serve --idle-exit) */
	/* Shutdown on the admin socket; NULL refuses it (an embedded core). */
	void (*on_admin_shutdown)(struct fsb_server *srv);
	void *data;
};

void fsb_server_init(struct fsb_server *srv, uv_loop_t *loop, struct fsb_broker *b);

/**
 * Listen on `path` for `scope`. The socket's directory is created 0700 when
 * missing; an existing one must be a directory of the user's with mode 0700,
 * else the socket is refused with a sentence in `err`. A stale socket file
 * is replaced; a live one (another core) is refused. 0 or -errno.
 */
int fsb_server_listen(struct fsb_server *srv, const char *path,
		      const struct fsb_scope *scope, char *err, size_t errlen);

/**
 * Listen on the admin socket `path` (DESIGN §3.0): for `fsbroker run`
 * processes outside any sandbox, never mounted into one. Same checks as
 * fsb_server_listen. 0 or -errno with a sentence in `err`.
 */
int fsb_server_listen_admin(struct fsb_server *srv, const char *path, char *err, size_t errlen);

/**
 * Open a socket scoped to `scope` (a session and a tool call) for the
 * admin connection `owner`, in srv->scope_dir, and write its path to
 * `path`. It is closed (and unlinked) by fsb_server_close_scope or when
 * `owner` closes. 0 or -errno with a sentence in `err`.
 */
int fsb_server_open_scope(struct fsb_server *srv, struct fsb_conn *owner,
			  const struct fsb_scope *scope, char *path, size_t pathlen,
			  char *err, size_t errlen);

/**
 * Serve the connected Unix stream socket `fd` (taken over; closed on
 * failure) as an admin connection, as if accepted on the admin socket:
 * `fsbroker run` with an embedded core hands the other end to
 * fsbroker-init for Supervise. The connection goes to *out. 0 or -errno.
 */
int fsb_server_adopt_admin(struct fsb_server *srv, int fd, struct fsb_conn **out);

/**
 * Make `dir` the directory of scoped sockets without listening there
 * (an embedded core has no session socket): created 0700 when missing,
 * refused like a socket's directory otherwise, and hidden from every
 * request. 0 or -errno with a sentence in `err`.
 */
int fsb_server_scope_dir(struct fsb_server *srv, const char *dir, char *err, size_t errlen);

/** Close the scoped socket at `path` that `owner` opened. 0 or -ENOENT. */
int fsb_server_close_scope(struct fsb_server *srv, struct fsb_conn *owner, const char *path);

/** Stop listening (unlinking the sockets) and close every connection. */
void fsb_server_close(struct fsb_server *srv);

/** Request handlers, one per wire format (serve_text.c, serve_json.c). */
void fsb_serve_text(struct fsb_conn *conn, char *line, size_t len);
void fsb_serve_json(struct fsb_conn *conn, char *line, size_t len);
/** A request on the admin socket (serve_admin.c). */
void fsb_serve_admin(struct fsb_conn *conn, char *line, size_t len);

/**
 * A request served off the loop: `run` on a thread of libuv's pool, then
 * `done` on the loop, which replies and frees the job. Meanwhile the
 * connection delivers no further request, so replies keep their order.
 * In `done`, `conn` is NULL when the client went away: nothing to reply to
 * (an fd made for it must be closed).
 */
struct fsb_job {
	struct fsb_work work;
	struct fsb_conn *conn;
	void (*run)(struct fsb_job *job);
	void (*done)(struct fsb_job *job);
};

/** Queue `job` of `kind` (work.h) for the request `conn` just delivered. */
void fsb_conn_offload(struct fsb_conn *conn, struct fsb_job *job, enum fsb_work_kind kind);

/** Queue a reply on a connection (a NUL-terminated line with its '\n'). */
void fsb_conn_reply(struct fsb_conn *conn, const char *line, int fd);

/** Queue a JSON reply (takes ownership of `reply`). */
void fsb_conn_reply_json(struct fsb_conn *conn, cJSON *reply);

/** Free a closed connection: no job uses it any more (conn.c). The last
 * one to go while the server closes tells its on_closed. */
void fsb_conn_free(struct fsb_conn *conn);

#endif
