/*
 * fsbc_internal.h — what the files of the client library share and no
 * client sees: the connection and its lock (fsbc_conn.c), the per-thread
 * error state, paths (fsbc_path.c) and the little JSON the host operations
 * need (fsbc_json.c).
 */
#ifndef FSBC_INTERNAL_H
#define FSBC_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "fsbroker_client.h"

/* A reply line longer than this is malformed (a request is at most 64 KiB;
 * a reply repeats its paths, resolved, with room to spare). */
#define FSBC_REPLY_MAX (1024 * 1024)

/* The configuration in force, valid while the lock is held. */
struct fsbc_conf {
	char *socket;		/* NULL: no broker configured */
	char *session;		/* NULL or "" when not given */
	char *tool_call;
	char *trace;
	int timeout_ms;
	/* FSBROKER_READS=sandbox: reads are opened without a request. */
	bool reads_local;
};

/* ---- fsbc_conn.c -------------------------------------------------------- */

/** Take and release the one lock around a request and its reply. */
void fsbc__lock(void);
void fsbc__unlock(void);

/** The configuration (read from the environment on first use). Lock held.
 * NULL only when memory ran out. */
const struct fsbc_conf *fsbc__conf(void);

/**
 * Send `len` bytes of `req` (one line, its newline included) and read the
 * one reply line. Lock held. On success 0, *reply malloc'd and NUL-terminated
 * without its newline, *fd_out the descriptor that came with it or -1 (it
 * was received close-on-exec). On failure -1 with errno and the thread's
 * failure state set (FSBC_NO_BROKER, FSBC_UNREACHABLE, FSBC_LOST); after a
 * FSBC_LOST the connection is closed.
 */
int fsbc__exchange(const char *req, size_t len, char **reply, int *fd_out);

/** Close the connection after a reply that made no sense: the next request
 * starts on a fresh one. Lock held. */
void fsbc__drop_connection(void);

/* ---- the calling thread's last failure (fsbc_conn.c) -------------------- */

/** Forget the last failure: the call about to run has not failed. */
void fsbc__clear(void);

/** Record a failure of `kind` with errno `err` and a reason (printf). Sets
 * errno to `err` and returns -1, for `return fsbc__fail(...)`. */
int fsbc__fail(enum fsbc_failure kind, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ---- fsbc_path.c -------------------------------------------------------- */

/**
 * Make `path` absolute against the current directory and normalise it
 * lexically: "." and empty components dropped, ".." takes the previous one
 * away (never above "/"), a trailing "/" (or "/." or "/..") kept as "/" so a
 * name that must be a directory still says so. `out` holds PATH_MAX bytes.
 * 0, or -errno: ENOENT for "", ENAMETOOLONG, what getcwd() says.
 */
int fsbc__path_absolute(const char *path, char *out, size_t size);

/* ---- fsbc_json.c -------------------------------------------------------- */

/* A growing text buffer; `oom` once an append failed. */
struct fsbc_buf {
	char *p;
	size_t len, cap;
	bool oom;
};

void fsbc__buf_add(struct fsbc_buf *b, const char *s, size_t n);
void fsbc__buf_puts(struct fsbc_buf *b, const char *s);
void fsbc__buf_printf(struct fsbc_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/** Append `s` as a JSON string, quotes included. */
void fsbc__json_string(struct fsbc_buf *b, const char *s);

/**
 * Append `,"<field>":"<path>"`, or `,"<field>Bytes":"<percent-encoded>"`
 * when `path` is not valid UTF-8 (the core refuses such bytes in a JSON
 * string).
 */
void fsbc__json_path(struct fsbc_buf *b, const char *field, const char *path);

/** True when `s` is valid UTF-8 as the core checks it: no overlong forms,
 * no surrogates, nothing above U+10FFFF. */
bool fsbc__utf8_valid(const char *s);

/* One member of a reply object. Only the top level is kept: values that are
 * objects or arrays are checked and skipped (FSBC_J_OTHER). */
enum fsbc_jtype { FSBC_J_STRING, FSBC_J_TRUE, FSBC_J_FALSE, FSBC_J_NULL, FSBC_J_NUMBER,
		  FSBC_J_OTHER };

struct fsbc_jmember {
	char *key;
	enum fsbc_jtype type;
	char *str;		/* FSBC_J_STRING: the decoded bytes */
};

struct fsbc_jobj {
	struct fsbc_jmember *m;
	size_t n;
};

/** Parse `text` as exactly one JSON object. 0, or -1 when it is not one
 * (or repeats a key, or memory ran out). */
int fsbc__json_parse(const char *text, struct fsbc_jobj *out);

/** The member named `key`, or NULL. */
const struct fsbc_jmember *fsbc__json_get(const struct fsbc_jobj *o, const char *key);

void fsbc__json_free(struct fsbc_jobj *o);

/** Decode a percent-encoded path (a `…Bytes` field) into `out`. 0, or -1
 * when it is malformed, holds %00 or does not fit. */
int fsbc__percent_decode(const char *in, char *out, size_t size);

#endif
