/*
 * ui_http.c — the gate of `fsbroker ui` (docs/ui.md, "Security"): HTTP is
 * libmicrohttpd's; this file binds the socket, makes the tokens and lets
 * a request through to cli_ui.c's handler only when it carries the token
 * (in the query, or in the X-FSB-Token header the page sends),
 * names our own address in Host (no DNS rebinding), comes from our own
 * origin, and, for a POST, carries the CSRF token in a header a
 * cross-site form cannot set. Everything else is answered 403.
 */
#include "ui_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ui_mhd.h"

#define BODY_MAX (64 * 1024)

/* libmicrohttpd, loaded by the first fsb_ui_listen(). */
static const struct fsb_mhd *mhd;

struct fsb_ui_server {
	struct MHD_Daemon *d;
	int fd;
	bool unix_sock;
	char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	unsigned port;
	char token[FSB_UI_TOKEN_HEX + 1], csrf[FSB_UI_TOKEN_HEX + 1];
	char host1[32], host2[32], origin1[48], origin2[48];
	char url[128];
	fsb_ui_handler h;
	void *arg;
};

/* A request's body as it arrives. */
struct upload {
	char *buf;
	size_t len;
	bool too_big;
};

static int random_hex(char out[FSB_UI_TOKEN_HEX + 1])
{
	unsigned char b[FSB_UI_TOKEN_HEX / 2];
	size_t got = 0;

	while (got < sizeof(b)) {
		ssize_t n = getrandom(b + got, sizeof(b) - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof(b); i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
	return 0;
}

/* Equal without an early exit, so the time a wrong guess takes says nothing
 * about how much of it was right. */
static bool same_secret(const char *got, const char *want)
{
	unsigned char diff = 0;

	if (got == NULL || strlen(got) != strlen(want))
		return false;
	for (size_t i = 0; want[i] != '\0'; i++)
		diff |= (unsigned char)(got[i] ^ want[i]);
	return diff == 0;
}

static enum MHD_Result answer(struct MHD_Connection *conn, unsigned status, const char *type,
			      char *body, size_t len)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = mhd->create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (r == NULL) {
		free(body);
		return MHD_NO;
	}
	mhd->add_response_header(r, "Content-Type", type);
	mhd->add_response_header(r, "Cache-Control", "no-store");
	mhd->add_response_header(r, "X-Content-Type-Options", "nosniff");
	/* The URL holds the token: never send it on as a Referer. */
	mhd->add_response_header(r, "Referrer-Policy", "no-referrer");
	mhd->add_response_header(r, "X-Frame-Options", "DENY");
	mhd->add_response_header(r, "Content-Security-Policy",
				"default-src 'none'; script-src 'unsafe-inline'; style-src "
				"'unsafe-inline'; connect-src 'self'; img-src 'self' data:; "
				"form-action 'none'; frame-ancestors 'none'; base-uri 'none'");
	ret = mhd->queue_response(conn, status, r);
	mhd->destroy_response(r);
	return ret;
}

static enum MHD_Result refuse(struct MHD_Connection *conn, unsigned status, const char *why)
{
	char *body = NULL;
	int n = asprintf(&body, "{\"error\":{\"code\":%u,\"message\":\"%s\"}}\n", status, why);

	if (n < 0)
		return MHD_NO;
	return answer(conn, status, "application/json", body, (size_t)n);
}

/* The request's own checks: NULL when it may go on, else why not. */
static const char *gate(const struct fsb_ui_server *s, struct MHD_Connection *conn, bool post)
{
	const char *host = mhd->lookup_connection_value(conn, MHD_HEADER_KIND, "Host");
	const char *origin = mhd->lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");
	const char *tok = mhd->lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "token");
	const char *hdr = mhd->lookup_connection_value(conn, MHD_HEADER_KIND, "X-FSB-Token");
	const char *csrf = mhd->lookup_connection_value(conn, MHD_HEADER_KIND, "X-FSB-CSRF");

	/* A browser reaches a Unix socket only through something the user
	 * set up; over TCP, a page of another name resolving to 127.0.0.1
	 * sends its own name here. */
	if (!s->unix_sock &&
	    (host == NULL || (strcmp(host, s->host1) != 0 && strcmp(host, s->host2) != 0)))
		return "wrong Host header";
	if (origin != NULL && strcmp(origin, s->origin1) != 0 && strcmp(origin, s->origin2) != 0)
		return "wrong Origin header";
	if (post && origin == NULL && !s->unix_sock)
		return "a POST needs an Origin header";
	/* No cookie: a browser sends cookies to every port of 127.0.0.1, so
	 * any local server the user visits would get it. The page holds the
	 * token and sends it in a header of its own. */
	if (!same_secret(tok, s->token) && !same_secret(hdr, s->token))
		return "no token, or a wrong one";
	if (post && !same_secret(csrf, s->csrf))
		return "no CSRF token, or a wrong one";
	return NULL;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size, void **con_cls)
{
	struct fsb_ui_server *s = cls;
	struct upload *up = *con_cls;
	struct fsb_ui_req rq = { .method = method, .url = url, .conn = conn };
	struct fsb_ui_resp rs = { .status = 500, .type = "application/json" };
	bool post = strcmp(method, "POST") == 0;
	const char *why;

	(void)version;
	if (up == NULL) {
		up = calloc(1, sizeof(*up));
		if (up == NULL)
			return MHD_NO;
		*con_cls = up;
		return MHD_YES;
	}
	if (*upload_data_size > 0) {
		if (up->len + *upload_data_size > BODY_MAX) {
			up->too_big = true;
		} else {
			char *nb = realloc(up->buf, up->len + *upload_data_size + 1);

			if (nb == NULL)
				return MHD_NO;
			up->buf = nb;
			memcpy(up->buf + up->len, upload_data, *upload_data_size);
			up->len += *upload_data_size;
			up->buf[up->len] = '\0';
		}
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (!post && strcmp(method, "GET") != 0)
		return refuse(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and POST");
	why = gate(s, conn, post);
	if (why != NULL)
		return refuse(conn, MHD_HTTP_FORBIDDEN, why);
	if (up->too_big)
		return refuse(conn, MHD_HTTP_CONTENT_TOO_LARGE, "the body is too large");
	rq.body = up->buf != NULL ? up->buf : "";
	rq.body_len = up->len;
	s->h(s->arg, &rq, &rs);
	if (rs.body == NULL) {
		rs.body = strdup("");
		rs.len = 0;
	}
	return answer(conn, rs.status, rs.type, rs.body, rs.len);
}

static void on_done(void *cls, struct MHD_Connection *conn, void **con_cls,
		    enum MHD_RequestTerminationCode toe)
{
	struct upload *up = *con_cls;

	(void)cls;
	(void)conn;
	(void)toe;
	if (up != NULL) {
		free(up->buf);
		free(up);
	}
	*con_cls = NULL;
}

/* Bind `spec` into s->fd (listening). 0 or -errno with `err`. */
static int bind_spec(struct fsb_ui_server *s, const char *spec, char *err, size_t errlen)
{
	int err_no;

	if (strncmp(spec, "unix:", 5) == 0) {
		struct sockaddr_un a = { .sun_family = AF_UNIX };
		mode_t old;
		int rc;

		if (spec[5] == '\0' || strlen(spec + 5) >= sizeof(a.sun_path)) {
			snprintf(err, errlen, "--listen %s: the socket path is empty or too long",
				 spec);
			return -EINVAL;
		}
		memcpy(a.sun_path, spec + 5, strlen(spec + 5) + 1);
		s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (s->fd < 0)
			goto fail;
		old = umask(077);	/* the socket is the user's alone */
		rc = bind(s->fd, (struct sockaddr *)&a, sizeof(a));
		err_no = errno;
		umask(old);
		if (rc < 0) {
			errno = err_no;
			goto fail;
		}
		s->unix_sock = true;
		snprintf(s->sock_path, sizeof(s->sock_path), "%s", a.sun_path);
	} else {
		struct sockaddr_in a = { .sin_family = AF_INET };
		socklen_t alen = sizeof(a);
		char ip[INET_ADDRSTRLEN];
		const char *colon = strrchr(spec, ':');
		char *end;
		unsigned long port;
		int one = 1;

		if (colon == NULL || (size_t)(colon - spec) >= sizeof(ip)) {
			snprintf(err, errlen, "--listen %s: not 127.0.0.1:PORT or unix:PATH", spec);
			return -EINVAL;
		}
		memcpy(ip, spec, (size_t)(colon - spec));
		ip[colon - spec] = '\0';
		errno = 0;
		port = strtoul(colon + 1, &end, 10);
		if (colon[1] == '\0' || *end != '\0' || errno != 0 || port > 65535 ||
		    inet_pton(AF_INET, ip, &a.sin_addr) != 1) {
			snprintf(err, errlen, "--listen %s: not 127.0.0.1:PORT or unix:PATH", spec);
			return -EINVAL;
		}
		/* Loopback only: the page restores files, nobody else may reach it. */
		if ((ntohl(a.sin_addr.s_addr) >> 24) != 127) {
			snprintf(err, errlen, "--listen %s: only a loopback address (127.x.x.x) "
				 "may be listened on", spec);
			return -EINVAL;
		}
		a.sin_port = htons((uint16_t)port);
		s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (s->fd < 0)
			goto fail;
		setsockopt(s->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(s->fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
		    getsockname(s->fd, (struct sockaddr *)&a, &alen) < 0)
			goto fail;
		s->port = ntohs(a.sin_port);
		snprintf(s->host1, sizeof(s->host1), "%s:%u", ip, s->port);
		snprintf(s->host2, sizeof(s->host2), "localhost:%u", s->port);
	}
	if (listen(s->fd, 16) < 0)
		goto fail;
	return 0;
fail:
	err_no = -errno;
	snprintf(err, errlen, "--listen %s: %s", spec, strerror(-err_no));
	return err_no;
}

int fsb_ui_listen(const char *spec, fsb_ui_handler h, void *arg, struct fsb_ui_server **out,
		  char *err, size_t errlen)
{
	struct fsb_ui_server *s = calloc(1, sizeof(*s));
	int rc;

	*out = NULL;
	if (s == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if ((mhd = fsb_mhd_load(err, errlen)) == NULL) {
		free(s);
		return -ENOENT;
	}
	s->fd = -1;
	s->h = h;
	s->arg = arg;
	rc = random_hex(s->token);
	if (rc == 0)
		rc = random_hex(s->csrf);
	if (rc < 0) {
		snprintf(err, errlen, "getrandom: %s", strerror(-rc));
		goto fail;
	}
	rc = bind_spec(s, spec, err, errlen);
	if (rc < 0)
		goto fail;
	if (s->unix_sock) {
		snprintf(s->origin1, sizeof(s->origin1), "http://localhost");
		snprintf(s->origin2, sizeof(s->origin2), "http://localhost");
		snprintf(s->url, sizeof(s->url), "http://localhost/?token=%s", s->token);
	} else {
		snprintf(s->origin1, sizeof(s->origin1), "http://%s", s->host1);
		snprintf(s->origin2, sizeof(s->origin2), "http://%s", s->host2);
		snprintf(s->url, sizeof(s->url), "http://%s/?token=%s", s->host1, s->token);
	}
	/* One thread: requests run one after another, so two restores never
	 * race each other over the same files. */
	s->d = mhd->start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL,
				NULL, on_request, s, MHD_OPTION_LISTEN_SOCKET, s->fd,
				MHD_OPTION_NOTIFY_COMPLETED, on_done, NULL,
				MHD_OPTION_CONNECTION_LIMIT, 32u, MHD_OPTION_CONNECTION_TIMEOUT,
				30u, MHD_OPTION_END);
	if (s->d == NULL) {
		rc = -EIO;
		snprintf(err, errlen, "--listen %s: libmicrohttpd could not start", spec);
		goto fail;
	}
	s->fd = -1;	/* the daemon's now: MHD_stop_daemon closes it */
	*out = s;
	return 0;
fail:
	fsb_ui_stop(s);
	return rc;
}

const char *fsb_ui_url(const struct fsb_ui_server *s)
{
	return s->url;
}

const char *fsb_ui_csrf(const struct fsb_ui_server *s)
{
	return s->csrf;
}

const char *fsb_ui_query(const struct fsb_ui_req *rq, const char *key)
{
	return mhd->lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, key);
}

void fsb_ui_stop(struct fsb_ui_server *s)
{
	if (s == NULL)
		return;
	if (s->d != NULL)
		mhd->stop_daemon(s->d);
	if (s->fd >= 0)
		close(s->fd);
	if (s->unix_sock)
		unlink(s->sock_path);
	free(s);
}
