/*
 * audit_line.h — one audit record's JSON text, written field by field into
 * a buffer, without a cJSON tree: the record of every supervised call and
 * every text request is built here, before fsb_audit_append() ends it with
 * "time" and "prev" and writes it (audit.h).
 *
 * The text is what fsb_json_print() would make of the same fields: a path
 * that is not UTF-8 goes as `<key>Bytes`, percent-encoded; free text gets
 * U+FFFD for each byte that is not part of valid UTF-8; control
 * characters are escaped, so no value can end the line.
 */
#ifndef FSB_AUDIT_LINE_H
#define FSB_AUDIT_LINE_H

#include <stdbool.h>
#include <stddef.h>

struct fsb_audit_line {
	char *buf;		/* "{" and the fields so far, not NUL-terminated */
	size_t len, cap;
	bool failed;		/* out of memory: the line is refused */
	bool timed;		/* it has its "time" (fsb_audit_line_of) */
	char small[1024];	/* `buf` until a line outgrows it */
};

/** An empty record: "{". */
void fsb_audit_line_init(struct fsb_audit_line *l);

/** Free what the line took beyond its own struct. */
void fsb_audit_line_free(struct fsb_audit_line *l);

/** `key` (a literal of ours, never escaped) and free text `value`. */
void fsb_audit_line_str(struct fsb_audit_line *l, const char *key, const char *value);

/** `key` and a name that must stay exact: a JSON string when it is UTF-8,
 * else `<key>Bytes`, percent-encoded. */
void fsb_audit_line_path(struct fsb_audit_line *l, const char *key, const char *path);

void fsb_audit_line_bool(struct fsb_audit_line *l, const char *key, bool value);

void fsb_audit_line_int(struct fsb_audit_line *l, const char *key, long long value);

/** Append `len` bytes as they are, with no comma (the record's end). */
void fsb_audit_line_put(struct fsb_audit_line *l, const char *s, size_t len);

/** Put `len` bytes before the text (the newline that ends a torn line). */
void fsb_audit_line_prepend(struct fsb_audit_line *l, const char *s, size_t len);

/** Add raw JSON text (the members of a printed object, without braces). */
void fsb_audit_line_raw(struct fsb_audit_line *l, const char *text, size_t len);

#endif
