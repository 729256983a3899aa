/*
 * run_attach.c — `fsbroker run --core STATE-DIR`: attach to the core a
 * `fsbroker serve --state-dir STATE-DIR` runs, through its admin socket
 * (DESIGN §3.0, docs/protocol.md). OpenScope gives the run a socket scoped
 * to its tool call and tells it the core's pack, workspace and session; the
 * same connection then goes to fsbroker-init for Supervise; CloseScope ends
 * the run's scope once CMD is gone.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "run.h"

/* OpenScope is answered at once; CloseScope once the supervisor has served
 * the run's last calls, which a large backup copy can make take a while. */
#define OPEN_TIMEOUT_MS 10000
#define CLOSE_TIMEOUT_MS 120000

static int send_line(int fd, const char *line)
{
	size_t len = strlen(line), off = 0;

	while (off < len) {
		ssize_t n = send(fd, line + off, len - off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		off += (size_t)n;
	}
	return 0;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * The reply to request `id`: lines are read one byte at a time, so nothing
 * after it is taken from the socket (fsbroker-init reads the next one).
 * Returns the parsed object, or NULL with *rc set (-ETIMEDOUT, -ECONNRESET
 * for an end of file, -EBADMSG for a line that is not JSON).
 */
static cJSON *read_reply(int fd, long id, int timeout_ms, int *rc)
{
	long long deadline = now_ms() + timeout_ms;
	char line[65536];
	size_t len = 0;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		long long left = deadline - now_ms();
		ssize_t n;
		cJSON *o, *rid;

		if (left <= 0) {
			*rc = -ETIMEDOUT;
			return NULL;
		}
		n = poll(&p, 1, (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			*rc = n == 0 ? -ETIMEDOUT : -errno;
			return NULL;
		}
		n = recv(fd, line + len, 1, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			*rc = n == 0 ? -ECONNRESET : -errno;
			return NULL;
		}
		if (line[len] != '\n') {
			if (++len == sizeof(line)) {
				*rc = -EBADMSG;
				return NULL;
			}
			continue;
		}
		line[len] = '\0';
		len = 0;
		if ((o = cJSON_Parse(line)) == NULL) {
			*rc = -EBADMSG;
			return NULL;
		}
		rid = cJSON_GetObjectItemCaseSensitive(o, "id");
		if (cJSON_IsNumber(rid) && (long)rid->valuedouble == id)
			return o;
		cJSON_Delete(o);
	}
}

static void copy_field(const cJSON *o, const char *name, char *out, size_t len)
{
	const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, name));

	snprintf(out, len, "%s", v != NULL ? v : "");
}

/* The core's socket dirs (an older core names none: the scoped socket's
 * own dir is hidden anyway). One the run cannot take fails it: a dir left
 * visible would let the sandbox past its scope. */
static int copy_socket_dirs(const cJSON *r, struct fsb_run_attach *a, char *err, size_t errlen)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(r, "socketDirs"), *it;

	cJSON_ArrayForEach(it, arr) {
		const char *dir = cJSON_GetStringValue(it);

		if (dir == NULL || dir[0] != '/' || strlen(dir) >= PATH_MAX ||
		    a->nsocket_dirs == FSB_RUN_MAX_SOCKET_DIRS) {
			snprintf(err, errlen, "the core named socket directories the run cannot "
				 "hide from its sandbox (more than %d, or one that is not an "
				 "absolute path)", FSB_RUN_MAX_SOCKET_DIRS);
			return -EPROTO;
		}
		snprintf(a->socket_dirs[a->nsocket_dirs], PATH_MAX, "%s", dir);
		a->socket_dir_list[a->nsocket_dirs] = a->socket_dirs[a->nsocket_dirs];
		a->nsocket_dirs++;
	}
	return 0;
}

int fsb_run_attach_open(const char *state_dir, const char *session, const char *tool_call,
			struct fsb_run_attach *a, char *err, size_t errlen)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	char line[1024];
	cJSON *req, *r = NULL;
	int rc;

	memset(a, 0, sizeof(*a));
	a->fd = -1;
	a->next_id = 1;
	if ((size_t)snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/admin.sock", state_dir) >=
	    sizeof(addr.sun_path)) {
		snprintf(err, errlen, "the state dir %s is too long a path for its admin socket",
			 state_dir);
		return -ENAMETOOLONG;
	}
	a->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (a->fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return rc;
	}
	if (connect(a->fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		rc = -errno;
		snprintf(err, errlen, "no fsbroker core is running with the state dir %s (cannot "
			 "connect to %s: %s); start `fsbroker serve --state-dir %s ...` first, "
			 "or leave out --core to embed one", state_dir, addr.sun_path,
			 strerror(errno), state_dir);
		goto fail;
	}
	req = cJSON_CreateObject();
	cJSON_AddNumberToObject(req, "id", (double)a->next_id);
	cJSON_AddStringToObject(req, "command", "OpenScope");
	if (session != NULL)
		cJSON_AddStringToObject(req, "sessionId", session);
	cJSON_AddStringToObject(req, "toolCallId", tool_call);
	if (!cJSON_PrintPreallocated(req, line, sizeof(line) - 2, false)) {
		cJSON_Delete(req);
		rc = -ENAMETOOLONG;
		snprintf(err, errlen, "OpenScope request too long");
		goto fail;
	}
	cJSON_Delete(req);
	strcat(line, "\n");
	if ((rc = send_line(a->fd, line)) < 0 ||
	    (r = read_reply(a->fd, a->next_id++, OPEN_TIMEOUT_MS, &rc)) == NULL) {
		snprintf(err, errlen, "the core at %s did not answer OpenScope: %s", state_dir,
			 strerror(-rc));
		goto fail;
	}
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "ok"))) {
		const char *why = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "error"));

		snprintf(err, errlen, "the core at %s refused the run's scope: %s", state_dir,
			 why != NULL ? why : "(no reason given)");
		rc = -EPERM;
		goto fail;
	}
	copy_field(r, "socket", a->socket, sizeof(a->socket));
	copy_field(r, "sessionId", a->session, sizeof(a->session));
	copy_field(r, "pack", a->pack, sizeof(a->pack));
	copy_field(r, "workspace", a->workspace, sizeof(a->workspace));
	copy_field(r, "home", a->home, sizeof(a->home));
	copy_field(r, "tmp", a->tmp, sizeof(a->tmp));
	copy_field(r, "stateDir", a->state_dir, sizeof(a->state_dir));
	if ((rc = copy_socket_dirs(r, a, err, errlen)) < 0)
		goto fail;
	if (a->socket[0] != '/' || a->session[0] == '\0' || a->pack[0] != '/') {
		snprintf(err, errlen, "the core at %s answered OpenScope without its socket, "
			 "session or pack: is it an older fsbroker?", state_dir);
		rc = -EPROTO;
		goto fail;
	}
	cJSON_Delete(r);
	return 0;
fail:
	cJSON_Delete(r);
	close(a->fd);
	a->fd = -1;
	return rc;
}

int fsb_run_attach_close(struct fsb_run_attach *a, char *err, size_t errlen)
{
	char line[PATH_MAX + 128];
	cJSON *req, *r = NULL;
	int rc;

	if (a->fd < 0)
		return 0;
	req = cJSON_CreateObject();
	cJSON_AddNumberToObject(req, "id", (double)a->next_id);
	cJSON_AddStringToObject(req, "command", "CloseScope");
	cJSON_AddStringToObject(req, "socket", a->socket);
	rc = cJSON_PrintPreallocated(req, line, sizeof(line) - 2, false) ? 0 : -ENAMETOOLONG;
	cJSON_Delete(req);
	if (rc == 0) {
		strcat(line, "\n");
		if ((rc = send_line(a->fd, line)) == 0)
			r = read_reply(a->fd, a->next_id++, CLOSE_TIMEOUT_MS, &rc);
	}
	if (r == NULL)
		snprintf(err, errlen, "the core did not answer CloseScope: %s", strerror(-rc));
	else if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "ok"))) {
		const char *why = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "error"));

		snprintf(err, errlen, "the core refused CloseScope: %s", why ? why : "?");
		rc = -EPROTO;
	}
	cJSON_Delete(r);
	close(a->fd);
	a->fd = -1;
	return rc;
}
