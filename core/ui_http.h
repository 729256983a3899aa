/*
 * ui_http.h — the HTTP side of `fsbroker ui` (docs/ui.md): a libmicrohttpd
 * daemon on a loopback port or a Unix socket that lets a request reach the
 * page's handler only with the session's token (query or X-FSB-Token), a Host
 * header naming the address it listens on, a same-origin Origin and, for a
 * POST, the CSRF token the page was served with. What a request may do once
 * it is let in is cli_ui.c's.
 */
#ifndef FSB_UI_HTTP_H
#define FSB_UI_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#define FSB_UI_TOKEN_HEX 32	/* 128 random bits, hex */

/** A request that passed every check. */
struct fsb_ui_req {
	const char *method;		/* "GET" or "POST" */
	const char *url;		/* the path, without the query */
	const char *body;		/* a POST's body, NUL-terminated; "" else */
	size_t body_len;
	void *conn;			/* for fsb_ui_query */
};

/** What the handler answers; `body` is malloc'd and taken over. */
struct fsb_ui_resp {
	unsigned status;
	const char *type;		/* Content-Type */
	char *body;
	size_t len;
};

typedef void (*fsb_ui_handler)(void *arg, const struct fsb_ui_req *rq, struct fsb_ui_resp *rs);

struct fsb_ui_server;

/**
 * Listen on `spec` ("127.0.0.1:PORT", PORT 0 for a free one, or
 * "unix:PATH", made mode 0600) with fresh tokens and serve `h` from a
 * thread of libmicrohttpd's. Only loopback addresses are accepted. 0, or
 * -errno with a sentence in `err`.
 */
int fsb_ui_listen(const char *spec, fsb_ui_handler h, void *arg, struct fsb_ui_server **out,
		  char *err, size_t errlen);

/** The URL to open, with the token ("http://127.0.0.1:PORT/?token=..."). */
const char *fsb_ui_url(const struct fsb_ui_server *s);

/** The CSRF token every POST must carry in X-FSB-CSRF. */
const char *fsb_ui_csrf(const struct fsb_ui_server *s);

/** The query argument `key` of the request, or NULL. */
const char *fsb_ui_query(const struct fsb_ui_req *rq, const char *key);

/** Stop serving, remove a Unix socket it made, free `s` (NULL is fine). */
void fsb_ui_stop(struct fsb_ui_server *s);

#endif
