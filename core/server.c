/*
 * server.c — listening sockets and connections (see server.h). Everything a
 * connection may do is decided by the scope of the socket it arrived on and
 * the peer credentials taken when it was accepted, never by what it claims.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "proto_json.h"
#include "server.h"
#include "supervisor.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77		/* Linux 6.5; Debian 12's headers predate it */
#endif

#define conn_of(c) ((struct fsb_conn *)((char *)(c) - offsetof(struct fsb_conn, chan)))

void fsb_server_init(struct fsb_server *srv, uv_loop_t *loop, struct fsb_broker *b)
{
	memset(srv, 0, sizeof(*srv));
	srv->loop = loop;
	srv->broker = b;
}

static void close_owned_scopes(struct fsb_server *srv, struct fsb_conn *owner);

static void on_conn_closed(struct fsb_chan *c)
{
	struct fsb_conn *conn = conn_of(c);
	struct fsb_server *srv = conn->srv;

	if (conn->prev != NULL)
		conn->prev->next = conn->next;
	else
		srv->conns = conn->next;
	if (conn->next != NULL)
		conn->next->prev = conn->prev;
	srv->nconns--;
	/* The scoped sockets an `fsbroker run` opened end with its connection. */
	if (conn->admin)
		close_owned_scopes(srv, conn);
	if (conn->supervisor != NULL)
		fsb_supervisor_stop_for(conn->supervisor);
	conn->supervisor = NULL;
	cJSON_Delete(conn->held_close);
	conn->held_close = NULL;
	/* A job on the thread pool still uses it: freed when the job ends. */
	if (conn->job != NULL) {
		conn->gone = true;
		return;
	}
	fsb_conn_free(conn);
}

static void on_conn_line(struct fsb_chan *c, char *line, size_t len)
{
	struct fsb_conn *conn = conn_of(c);

	if (line == NULL) {
		/* Over-long: answer in the format the line started in, then go. */
		conn->srv->broker->stats.errors++;
		if (c->len > 0 && c->buf[0] == '{')
			fsb_conn_reply(conn, "{\"id\":null,\"ok\":false,\"errno\":\"E2BIG\","
				       "\"error\":\"request line longer than 65536 bytes\"}\n", -1);
		else
			fsb_conn_reply(conn, "DENY E2BIG request line longer than 65536 bytes\n", -1);
		fsb_chan_close_after_flush(c);
		return;
	}
	if (conn->admin)
		fsb_serve_admin(conn, line, len);
	else if (len > 0 && line[0] == '{')
		fsb_serve_json(conn, line, len);
	else
		fsb_serve_text(conn, line, len);
	if (conn->malformed >= FSB_MAX_MALFORMED && !c->close_after_flush) {
		fsb_log_limited(FSB_LOG_WARN, "closing a connection from pid %d after %u "
				"malformed requests", (int)conn->pid, conn->malformed);
		fsb_chan_close_after_flush(c);
	}
}

static void on_listen_poll(uv_poll_t *h, int status, int events);

static void on_backoff_done(uv_timer_t *t)
{
	struct fsb_listener *l = t->data;

	uv_poll_start(&l->poll, UV_READABLE, on_listen_poll);
}

/*
 * The root of a run's client, as its sandbox sees the file system (its own
 * /tmp, masks, binds): an O_PATH fd on /proc/<pid>/root, or -1 when it
 * cannot be had. With the peer's pidfd (SO_PEERPIDFD, Linux 6.5) the open
 * is checked to be of the process that connected: that process is still
 * alive after the open, so the pid was not reused in between; a kernel
 * without SO_PEERPIDFD leaves the pid unchecked. Nothing else needs the
 * pidfd: the connection holds no fd but its socket and this root.
 */
static int peer_root(int sock, pid_t pid)
{
	char path[64];
	socklen_t len;
	int fd, pidfd;

	if (pid <= 0)
		return -1;
	len = sizeof(pidfd);
	if (getsockopt(sock, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) < 0) {
		/* ENOPROTOOPT, EINVAL: the kernel has none. Anything else (the
		 * peer is gone): no view to pin. */
		if (errno != ENOPROTOOPT && errno != EINVAL)
			return -1;
		pidfd = -1;
	}
	snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0 && pidfd >= 0 && syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) < 0) {
		close(fd);
		fd = -1;
	}
	if (pidfd >= 0)
		close(pidfd);
	return fd;
}

/*
 * Serve the connected socket `fd` (taken over: closed on failure) for the
 * peer `cred`, with the scope of where it came in. 0 or -errno.
 */
static int conn_start(struct fsb_server *srv, int fd, const struct ucred *cred,
		      const struct fsb_scope *scope, bool admin, unsigned long scope_id)
{
	struct fsb_conn *conn;
	int rc;

	conn = calloc(1, sizeof(*conn));
	if (conn == NULL) {
		close(fd);
		return -ENOMEM;
	}
	conn->scope = *scope;
	conn->admin = admin;
	conn->scope_id = scope_id;
	conn->pid = cred->pid;
	conn->uid = cred->uid;
	conn->srv = srv;
	/*
	 * A run's client resolves paths in its sandbox's view. One whose view
	 * cannot be pinned is refused, never served in the host's view: the
	 * process that connected is gone (it handed its socket on and exited
	 * before we got here), or its pid already names another process whose
	 * root we must not take for its view.
	 */
	conn->view_fd = scope_id != 0 ? peer_root(fd, cred->pid) : -1;
	if (scope_id != 0 && conn->view_fd < 0) {
		fsb_log_limited(FSB_LOG_WARN,
				"refused a connection on a run's socket: its client (pid %d) is "
				"gone or its view cannot be pinned",
				(int)cred->pid);
		srv->broker->stats.connections_refused++;
		close(fd);
		free(conn);
		return -ESRCH;
	}
	rc = fsb_chan_start(srv->loop, &conn->chan, fd, fd, true, true, FSB_MAX_LINE,
			    on_conn_line, on_conn_closed);
	/* Supervise comes with the seccomp listener in SCM_RIGHTS. */
	conn->chan.takes_fds = admin;
	if (rc < 0) {
		fsb_warn("cannot watch a connection: %s", uv_strerror(rc));
		if (conn->view_fd >= 0)
			close(conn->view_fd);
		close(fd);
		free(conn);
		return rc;
	}
	conn->next = srv->conns;
	if (srv->conns != NULL)
		srv->conns->prev = conn;
	srv->conns = conn;
	srv->nconns++;
	srv->accepted++;
	srv->pending_closes++;
	srv->broker->stats.connections++;
	return 0;
}

/* Returns false when accepting should stop for now. */
static bool accept_one(struct fsb_listener *l)
{
	struct fsb_server *srv = l->srv;
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	int fd;

	fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0) {
		if (errno == EMFILE || errno == ENFILE) {
			/* The listener stays readable while the connection waits;
			 * without a pause the loop would spin on it. */
			fsb_warn("out of file descriptors: not accepting on %s for 100 ms",
				 l->path);
			uv_poll_stop(&l->poll);
			uv_timer_start(&l->backoff, on_backoff_done, 100, 0);
		} else if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) {
			fsb_warn("accept on %s: %s", l->path, strerror(errno));
		}
		return errno == EINTR || errno == ECONNABORTED;
	}
	/* The 0700 directory keeps other users out; this is the second wall. */
	memset(&cred, 0, sizeof(cred));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0) {
		fsb_warn("refused a connection on %s: no peer credentials (%s)", l->path,
			 strerror(errno));
		srv->broker->stats.connections_refused++;
		close(fd);
		return true;
	}
	if (cred.uid != getuid()) {
		fsb_log_limited(FSB_LOG_WARN, "refused a connection on %s from uid %u", l->path,
				(unsigned)cred.uid);
		srv->broker->stats.connections_refused++;
		close(fd);
		return true;
	}
	return conn_start(srv, fd, &cred, &l->scope, l->admin, l->id) != -ENOMEM;
}

static void on_listen_poll(uv_poll_t *h, int status, int events)
{
	(void)events;
	if (status < 0)
		return;
	/* A few at a time so a connection storm cannot starve the others. */
	for (int i = 0; i < 16 && accept_one(h->data); i++)
		;
}

/* The socket's directory: ours and 0700, created if missing. */
static int check_socket_dir(const char *path, char *err, size_t errlen)
{
	char copy[PATH_MAX];
	struct stat st;
	const char *dir;

	snprintf(copy, sizeof(copy), "%s", path);
	dir = dirname(copy);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create the socket directory %s: %s", dir,
			 strerror(errno));
		return -errno;
	}
	if (lstat(dir, &st) < 0) {
		snprintf(err, errlen, "cannot inspect %s: %s", dir, strerror(errno));
		return -errno;
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 0777) != 0700) {
		snprintf(err, errlen, "refusing socket %s: its directory %s must be a "
			 "directory of your own with mode 0700 (it has owner %u, mode %04o); "
			 "put the socket in a private directory such as /tmp/fsb-%u/broker.sock",
			 path, dir, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777),
			 (unsigned)getuid());
		return -EPERM;
	}
	return 0;
}

/* A socket file left by a core that died is replaced; a live one is not. */
static int clear_stale_socket(const struct sockaddr_un *addr, char *err, size_t errlen)
{
	struct stat st;
	int fd, rc;

	if (lstat(addr->sun_path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(err, errlen, "refusing socket %s: a file that is not a socket is there",
			 addr->sun_path);
		return -EEXIST;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	rc = connect(fd, (const struct sockaddr *)addr, sizeof(*addr));
	close(fd);
	if (rc == 0) {
		snprintf(err, errlen, "refusing socket %s: another core is serving it",
			 addr->sun_path);
		return -EADDRINUSE;
	}
	unlink(addr->sun_path);
	return 0;
}

static int listen_at(struct fsb_server *srv, const char *path, const struct fsb_scope *scope,
		     bool admin, struct fsb_conn *owner, char *err, size_t errlen)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct fsb_listener *l;
	int fd, rc;

	if (path[0] != '/' || strlen(path) >= sizeof(addr.sun_path)) {
		snprintf(err, errlen, "refusing socket %s: it must be an absolute path of at "
			 "most %zu bytes", path, sizeof(addr.sun_path) - 1);
		return -EINVAL;
	}
	if ((rc = check_socket_dir(path, err, errlen)) < 0)
		return rc;
	strcpy(addr.sun_path, path);
	if ((rc = clear_stale_socket(&addr, err, errlen)) < 0)
		return rc;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		goto fail_errno;
	/* 0600 by chmod, not by a umask around bind: the umask is the whole
	 * process's, and the thread pool creates files meanwhile. Nobody else
	 * can reach the socket before: its directory is 0700. */
	rc = bind(fd, (struct sockaddr *)&addr, sizeof(addr));
	if (rc < 0 || chmod(path, 0600) < 0 || listen(fd, 512) < 0)
		goto fail_errno;
	l = calloc(1, sizeof(*l));
	if (l == NULL)
		goto fail_errno;
	l->fd = fd;
	snprintf(l->path, sizeof(l->path), "%s", path);
	l->scope = *scope;
	l->admin = admin;
	l->owner = owner;
	l->srv = srv;
	if ((rc = uv_poll_init(srv->loop, &l->poll, fd)) < 0) {
		snprintf(err, errlen, "cannot watch %s: %s", path, uv_strerror(rc));
		free(l);
		close(fd);
		unlink(path);
		return rc;
	}
	l->poll.data = l;
	uv_timer_init(srv->loop, &l->backoff);
	l->backoff.data = l;
	l->handles_open = 2;
	uv_poll_start(&l->poll, UV_READABLE, on_listen_poll);
	l->next = srv->listeners;
	srv->listeners = l;
	/* No request may reach a socket's directory (the scoped sockets share
	 * the first one's). Decisions on the pool read this list. */
	if (owner == NULL) {
		char dir[PATH_MAX];

		snprintf(dir, sizeof(dir), "%s", path);
		fsb_broker_lock(srv->broker);
		fsb_protected_add(&srv->broker->protected, dirname(dir), FSB_PROTECT_HIDDEN,
				  admin ? "state dir" : "socket dir", false);
		fsb_broker_unlock(srv->broker);
		if (!admin && srv->scope_dir[0] == '\0')
			snprintf(srv->scope_dir, sizeof(srv->scope_dir), "%s", dir);
	}
	return 0;

fail_errno:
	rc = -errno;
	snprintf(err, errlen, "cannot listen on %s: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	return rc;
}

int fsb_server_listen(struct fsb_server *srv, const char *path,
		      const struct fsb_scope *scope, char *err, size_t errlen)
{
	return listen_at(srv, path, scope, false, NULL, err, errlen);
}

int fsb_server_listen_admin(struct fsb_server *srv, const char *path, char *err, size_t errlen)
{
	struct fsb_scope none;

	memset(&none, 0, sizeof(none));
	return listen_at(srv, path, &none, true, NULL, err, errlen);
}

int fsb_server_open_scope(struct fsb_server *srv, struct fsb_conn *owner,
			  const struct fsb_scope *scope, char *path, size_t pathlen,
			  char *err, size_t errlen)
{
	int rc;

	if (srv->scope_dir[0] == '\0') {
		snprintf(err, errlen, "the core has no socket directory for scoped sockets");
		return -ENOENT;
	}
	/* A name nobody can guess or reuse: the core's pid and a counter. */
	snprintf(path, pathlen, "%s/run-%ld-%lu.sock", srv->scope_dir, (long)getpid(),
		 ++srv->next_scope);
	rc = listen_at(srv, path, scope, false, owner, err, errlen);
	if (rc == 0)
		srv->listeners->id = srv->next_scope;
	return rc;
}

static void on_listener_closed(uv_handle_t *h);

static void listener_close(struct fsb_server *srv, struct fsb_listener *l)
{
	/* What came in on a scoped socket ends with it: its run is over. */
	if (l->id != 0)
		for (struct fsb_conn *c = srv->conns; c != NULL; c = c->next)
			if (c->scope_id == l->id)
				fsb_chan_close(&c->chan);
	unlink(l->path);
	srv->pending_closes++;
	uv_close((uv_handle_t *)&l->poll, on_listener_closed);
	uv_close((uv_handle_t *)&l->backoff, on_listener_closed);
}

int fsb_server_close_scope(struct fsb_server *srv, struct fsb_conn *owner, const char *path)
{
	for (struct fsb_listener **pl = &srv->listeners; *pl != NULL; pl = &(*pl)->next) {
		struct fsb_listener *l = *pl;

		if (l->owner == owner && owner != NULL && strcmp(l->path, path) == 0) {
			*pl = l->next;
			listener_close(srv, l);
			return 0;
		}
	}
	return -ENOENT;
}

static void close_owned_scopes(struct fsb_server *srv, struct fsb_conn *owner)
{
	struct fsb_listener **pl = &srv->listeners;

	while (*pl != NULL) {
		struct fsb_listener *l = *pl;

		if (l->owner == owner) {
			*pl = l->next;
			listener_close(srv, l);
		} else {
			pl = &l->next;
		}
	}
}

static void on_listener_closed(uv_handle_t *h)
{
	struct fsb_listener *l = h->data;
	struct fsb_server *srv = l->srv;

	/* Two handles, the poll and the backoff timer: free after both. */
	if (--l->handles_open > 0)
		return;
	close(l->fd);
	free(l);
	/* A scoped socket closing while the core serves is not the end. */
	if (--srv->pending_closes == 0 && srv->listeners == NULL && srv->on_closed != NULL)
		srv->on_closed(srv);
}

void fsb_server_close(struct fsb_server *srv)
{
	struct fsb_listener *l, *next;

	for (l = srv->listeners; l != NULL; l = next) {
		next = l->next;
		listener_close(srv, l);
	}
	srv->listeners = NULL;
	for (struct fsb_conn *c = srv->conns; c != NULL; c = c->next)
		fsb_chan_close(&c->chan);
	if (srv->pending_closes == 0 && srv->on_closed != NULL)
		srv->on_closed(srv);
}

int fsb_server_adopt_admin(struct fsb_server *srv, int fd, struct fsb_conn **out)
{
	struct fsb_scope none;
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	int rc;

	memset(&none, 0, sizeof(none));
	memset(&cred, 0, sizeof(cred));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	if ((rc = conn_start(srv, fd, &cred, &none, true, 0)) < 0)
		return rc;
	*out = srv->conns;
	return 0;
}

int fsb_server_scope_dir(struct fsb_server *srv, const char *dir, char *err, size_t errlen)
{
	char probe[PATH_MAX];
	int rc;

	if (snprintf(probe, sizeof(probe), "%s/x", dir) >= (int)sizeof(probe)) {
		snprintf(err, errlen, "the socket directory %s is too long", dir);
		return -ENAMETOOLONG;
	}
	if ((rc = check_socket_dir(probe, err, errlen)) < 0)
		return rc;
	/* Hidden from every request, like a listening socket's directory. */
	fsb_broker_lock(srv->broker);
	fsb_protected_add(&srv->broker->protected, dir, FSB_PROTECT_HIDDEN, "socket dir", false);
	fsb_broker_unlock(srv->broker);
	snprintf(srv->scope_dir, sizeof(srv->scope_dir), "%s", dir);
	return 0;
}
