/*
 * fsbc_conn.c — the one connection of a process to the fsbroker core: its
 * configuration, the lock around a request, sending a line and reading the
 * one reply line with the descriptor it carries, within a deadline. Any
 * failure on the way closes the connection and fails the request with EIO;
 * the request is never sent again (the core may have acted on it).
 */
/* Built by other projects' makefiles too (toybox, zsh): ask for what it
 * uses (MSG_CMSG_CLOEXEC, asprintf, PATH_MAX) whatever they define. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "fsbc_internal.h"

static pthread_mutex_t fsbc_mutex = PTHREAD_MUTEX_INITIALIZER;

static struct {
	bool loaded;		/* conf holds a configuration */
	struct fsbc_conf conf;
	int fd;			/* the connection, or -1 */
	pid_t pid;		/* the process that made it */
	dev_t dev;		/* what fd was when it was made: a program that */
	ino_t ino;		/* closed it or dup2'd over it is noticed */
} fsbc = { .fd = -1 };

/* The calling thread's last failure. */
static __thread enum fsbc_failure last_kind;
static __thread int last_errno;
static __thread char last_reason[1024];

/* ---- errors --------------------------------------------------------------- */

void fsbc__clear(void)
{
	last_kind = FSBC_OK;
	last_errno = 0;
	last_reason[0] = '\0';
}

int fsbc__fail(enum fsbc_failure kind, int err, const char *fmt, ...)
{
	va_list ap;

	last_kind = kind;
	last_errno = err;
	last_reason[0] = '\0';
	if (fmt != NULL) {
		va_start(ap, fmt);
		vsnprintf(last_reason, sizeof(last_reason), fmt, ap);
		va_end(ap);
	}
	errno = err;
	return -1;
}

enum fsbc_failure fsbc_last_failure(void)
{
	return last_kind;
}

const char *fsbc_last_reason(void)
{
	return last_reason;
}

const char *fsbc_strerror(int err, char *buf, size_t size)
{
	if (size == 0)
		return buf;
	if (last_kind != FSBC_OK && err == last_errno && last_reason[0] != '\0')
		snprintf(buf, size, "%s (%s)", strerror(err), last_reason);
	else
		snprintf(buf, size, "%s", strerror(err));
	return buf;
}

void fsbc_print_error(FILE *out, const char *prog, const char *verb, const char *path, int err)
{
	char msg[1400];

	fsbc_strerror(err, msg, sizeof(msg));
	fprintf(out != NULL ? out : stderr, "%s: cannot %s '%s': %s\n", prog, verb, path, msg);
}

/* ---- configuration -------------------------------------------------------- */

void fsbc__lock(void)
{
	pthread_mutex_lock(&fsbc_mutex);
}

void fsbc__unlock(void)
{
	pthread_mutex_unlock(&fsbc_mutex);
}

static void close_connection(void)
{
	if (fsbc.fd >= 0)
		close(fsbc.fd);
	fsbc.fd = -1;
}

static void conf_free(struct fsbc_conf *c)
{
	free(c->socket);
	free(c->session);
	free(c->tool_call);
	free(c->trace);
	memset(c, 0, sizeof(*c));
}

/* A copy of `given`, else of the environment variable `env`; NULL for
 * neither (or an empty one). -1 when memory ran out. */
static int pick(const char *given, const char *env, char **out)
{
	const char *v = given != NULL ? given : getenv(env);

	*out = NULL;
	if (v == NULL || v[0] == '\0')
		return 0;
	*out = strdup(v);
	return *out != NULL ? 0 : -1;
}

static int timeout_from_env(void)
{
	const char *v = getenv("FSBROKER_TIMEOUT_MS");
	char *end;
	long ms;

	if (v == NULL || v[0] == '\0')
		return FSBC_DEFAULT_TIMEOUT_MS;
	errno = 0;
	ms = strtol(v, &end, 10);
	if (errno != 0 || *end != '\0' || ms <= 0 || ms > INT_MAX)
		return FSBC_DEFAULT_TIMEOUT_MS;
	return (int)ms;
}

static int conf_load(const struct fsbc_config *cfg, struct fsbc_conf *c)
{
	static const struct fsbc_config none;
	const char *reads;

	if (cfg == NULL)
		cfg = &none;
	memset(c, 0, sizeof(*c));
	if (pick(cfg->socket, "FSBROKER_SOCKET", &c->socket) < 0 ||
	    pick(cfg->session, "FSBROKER_SESSION_ID", &c->session) < 0 ||
	    pick(cfg->tool_call, "FSBROKER_TOOL_CALL_ID", &c->tool_call) < 0 ||
	    pick(cfg->trace, "FSBROKER_TRACE_ID", &c->trace) < 0) {
		conf_free(c);
		return -1;
	}
	c->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : timeout_from_env();
	/* Only `fsbroker run` sets it, when its sandbox is what keeps denyRead
	 * paths from being read (docs/clients.md, "Reads inside fsbroker run"). */
	reads = getenv("FSBROKER_READS");
	c->reads_local = reads != NULL && strcmp(reads, "sandbox") == 0;
	return 0;
}

int fsbc_configure(const struct fsbc_config *cfg)
{
	struct fsbc_conf c;

	fsbc__clear();
	if (conf_load(cfg, &c) < 0)
		return fsbc__fail(FSBC_LOCAL, ENOMEM, NULL);
	fsbc__lock();
	close_connection();
	conf_free(&fsbc.conf);
	fsbc.conf = c;
	fsbc.loaded = true;
	fsbc__unlock();
	return 0;
}

const struct fsbc_conf *fsbc__conf(void)
{
	if (!fsbc.loaded) {
		if (conf_load(NULL, &fsbc.conf) < 0)
			return NULL;
		fsbc.loaded = true;
	}
	return &fsbc.conf;
}

bool fsbc_configured(void)
{
	const struct fsbc_conf *c;
	bool yes;

	fsbc__lock();
	c = fsbc__conf();
	yes = c != NULL && c->socket != NULL;
	fsbc__unlock();
	return yes;
}

bool fsbc_reads_local(void)
{
	const struct fsbc_conf *c;
	bool yes;

	fsbc__lock();
	c = fsbc__conf();
	yes = c != NULL && c->socket != NULL && c->reads_local;
	fsbc__unlock();
	return yes;
}

void fsbc_disconnect(void)
{
	fsbc__lock();
	close_connection();
	fsbc__unlock();
}

void fsbc__drop_connection(void)
{
	close_connection();
}

/* ---- the connection ------------------------------------------------------- */

/* Is fsbc.fd still the socket this process connected? A child of fork()
 * shares its parent's connection: two processes writing requests on one
 * socket would take each other's replies, so the child makes its own. A
 * program may also have closed the number or dup2'd something else onto it
 * (a shell's `exec 7>file`): writing a request there would write into that
 * file. */
static bool connection_still_ours(void)
{
	struct stat st;

	if (fsbc.fd < 0)
		return false;
	if (fsbc.pid != getpid()) {
		/* The child's copy; the parent keeps its own. */
		close_connection();
		return false;
	}
	if (fstat(fsbc.fd, &st) < 0 || !S_ISSOCK(st.st_mode) || st.st_dev != fsbc.dev ||
	    st.st_ino != fsbc.ino) {
		/* Not ours any more: forget the number, never close it. */
		fsbc.fd = -1;
		return false;
	}
	return true;
}

static int connect_broker(void)
{
	const struct fsbc_conf *c = fsbc__conf();
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct timeval tv;
	struct stat st;
	int fd, err;

	if (c == NULL)
		return fsbc__fail(FSBC_LOCAL, ENOMEM, NULL);
	if (c->socket == NULL)
		return fsbc__fail(FSBC_NO_BROKER, ENOTCONN,
				  "no broker configured: FSBROKER_SOCKET is not set");
	if (strlen(c->socket) >= sizeof(addr.sun_path))
		return fsbc__fail(FSBC_UNREACHABLE, EIO,
				  "broker unavailable: the socket path %s is too long", c->socket);
	memcpy(addr.sun_path, c->socket, strlen(c->socket) + 1);
	tv.tv_sec = c->timeout_ms / 1000;
	tv.tv_usec = (c->timeout_ms % 1000) * 1000;
	/* Close-on-exec: a command the client runs must not inherit a way to
	 * ask in its name. */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return fsbc__fail(FSBC_UNREACHABLE, EIO, "broker unavailable: socket: %s",
				  strerror(errno));
	/* Never on 0, 1 or 2: a program that closed its stderr and then opens
	 * a file expects that file there, not our socket (grep -s does). */
	if (fd <= 2) {
		int high = fcntl(fd, F_DUPFD_CLOEXEC, 3);

		err = errno;
		close(fd);
		if (high < 0)
			return fsbc__fail(FSBC_UNREACHABLE, EIO, "broker unavailable: fcntl: %s",
					  strerror(err));
		fd = high;
	}
	/* SO_SNDTIMEO also bounds connect() on a Unix socket whose backlog is
	 * full; SO_RCVTIMEO is a backstop to the poll() deadline. */
	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0) {
		err = errno;
		close(fd);
		return fsbc__fail(FSBC_UNREACHABLE, EIO, "broker unavailable: setsockopt: %s",
				  strerror(err));
	}
	while (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		err = errno;
		if (err == EINTR)
			continue;
		close(fd);
		return fsbc__fail(FSBC_UNREACHABLE, EIO, "broker unavailable: connect %s: %s",
				  c->socket, strerror(err));
	}
	if (fstat(fd, &st) < 0) {
		err = errno;
		close(fd);
		return fsbc__fail(FSBC_UNREACHABLE, EIO, "broker unavailable: fstat: %s",
				  strerror(err));
	}
	fsbc.fd = fd;
	fsbc.pid = getpid();
	fsbc.dev = st.st_dev;
	fsbc.ino = st.st_ino;
	return 0;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A failure after the request may have reached the core: close, EIO. */
static int lost(const char *fmt, const char *detail)
{
	close_connection();
	return fsbc__fail(FSBC_LOST, EIO, fmt, detail);
}

static int send_all(const char *req, size_t len, long long deadline)
{
	size_t off = 0;

	while (off < len) {
		struct pollfd pfd = { .fd = fsbc.fd, .events = POLLOUT };
		long long left = deadline - now_ms();
		ssize_t n;

		if (left <= 0)
			return lost("broker connection lost: %s", "the request could not be sent "
				    "before the deadline");
		if (poll(&pfd, 1, left > INT_MAX ? INT_MAX : (int)left) < 0 && errno != EINTR)
			return lost("broker connection lost: poll: %s", strerror(errno));
		/* MSG_NOSIGNAL: a core that went away is an error, not SIGPIPE. */
		n = send(fsbc.fd, req + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return lost("broker connection lost: %s", strerror(errno));
		off += (size_t)n;
	}
	return 0;
}

/* Keep the descriptors a message carried: the first in *fd_out, the rest
 * closed (a reply carries at most one; more is malformed). */
static int take_fds(struct msghdr *msg, int *fd_out)
{
	int extra = 0;

	for (struct cmsghdr *cm = CMSG_FIRSTHDR(msg); cm != NULL; cm = CMSG_NXTHDR(msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (*fd_out < 0) {
				*fd_out = fd;
			} else {
				close(fd);
				extra++;
			}
		}
	}
	return extra;
}

static int receive_line(char **reply, int *fd_out, long long deadline)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);
	char *nl;
	int rc;

	if (buf == NULL)
		return lost("broker connection lost: %s", "out of memory");
	for (;;) {
		union {
			struct cmsghdr h;
			char b[CMSG_SPACE(sizeof(int) * 4)];
		} ctl;
		struct iovec iov;
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
		struct pollfd pfd = { .fd = fsbc.fd, .events = POLLIN };
		long long left = deadline - now_ms();
		ssize_t n;

		if (left <= 0) {
			rc = lost("broker connection lost: %s", "no reply before the deadline");
			goto fail;
		}
		n = poll(&pfd, 1, left > INT_MAX ? INT_MAX : (int)left);
		if (n < 0 && errno != EINTR) {
			rc = lost("broker connection lost: poll: %s", strerror(errno));
			goto fail;
		}
		if (n <= 0)
			continue;
		if (cap - len < 1024) {
			char *b;

			if (cap >= FSBC_REPLY_MAX) {
				rc = lost("broker connection lost: %s", "a reply line too long");
				goto fail;
			}
			b = realloc(buf, cap * 2);
			if (b == NULL) {
				rc = lost("broker connection lost: %s", "out of memory");
				goto fail;
			}
			buf = b;
			cap *= 2;
		}
		iov.iov_base = buf + len;
		iov.iov_len = cap - len - 1;
		msg.msg_control = ctl.b;
		msg.msg_controllen = sizeof(ctl.b);
		/* MSG_CMSG_CLOEXEC: the descriptor is close-on-exec from the
		 * moment it exists; fsbc_open() clears that when asked to. */
		n = recvmsg(fsbc.fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0) {
			rc = lost("broker connection lost: %s", strerror(errno));
			goto fail;
		}
		if (take_fds(&msg, fd_out) > 0 || (msg.msg_flags & MSG_CTRUNC)) {
			rc = lost("broker connection lost: %s",
				  "a reply carried more than one descriptor");
			goto fail;
		}
		if (n == 0) {
			rc = lost("broker connection lost: %s",
				  "the broker closed the connection");
			goto fail;
		}
		len += (size_t)n;
		nl = memchr(buf, '\n', len);
		if (nl == NULL)
			continue;
		/* One request, one line: anything after it is not ours to guess. */
		if ((size_t)(nl - buf) + 1 != len) {
			rc = lost("broker connection lost: %s", "bytes after the reply line");
			goto fail;
		}
		*nl = '\0';
		if (memchr(buf, '\0', (size_t)(nl - buf)) != NULL) {
			rc = lost("broker connection lost: %s", "a NUL byte in the reply");
			goto fail;
		}
		*reply = buf;
		return 0;
	}
fail:
	free(buf);
	if (*fd_out >= 0)
		close(*fd_out);
	*fd_out = -1;
	return rc;
}

int fsbc__exchange(const char *req, size_t len, char **reply, int *fd_out)
{
	const struct fsbc_conf *c = fsbc__conf();
	long long deadline;

	*reply = NULL;
	*fd_out = -1;
	if (c == NULL)
		return fsbc__fail(FSBC_LOCAL, ENOMEM, NULL);
	if (!connection_still_ours() && connect_broker() < 0)
		return -1;
	deadline = now_ms() + c->timeout_ms;
	if (send_all(req, len, deadline) < 0)
		return -1;
	return receive_line(reply, fd_out, deadline);
}
