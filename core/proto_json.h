/*
 * proto_json.h — the JSON HostFileOperation request of the client socket
 * (DESIGN §3.3) and the checks every JSON line gets before cJSON sees it.
 */
#ifndef FSB_PROTO_JSON_H
#define FSB_PROTO_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <cJSON.h>

/**
 * Check a raw JSON line before parsing: valid UTF-8 throughout, no raw NUL,
 * no `\u0000` escape inside a string (cJSON 1.7.15 would cut the string
 * there), and no escaped surrogate that is unpaired. Returns 0 or -EINVAL
 * with *why set.
 */
int fsb_json_precheck(const char *line, size_t len, const char **why);

/**
 * Parse a checked line into a cJSON object. Returns NULL with *why set when
 * it is not valid JSON or not an object.
 */
cJSON *fsb_json_parse_object(const char *line, size_t len, const char **why);

enum fsb_hostop {
	FSB_HOSTOP_DELETE,
	FSB_HOSTOP_MKDIR,
	FSB_HOSTOP_RENAME,
	FSB_HOSTOP_COPY,
	FSB_HOSTOP_CHMOD,
	FSB_HOSTOP_LINK,
	FSB_HOSTOP_TOUCH,
};

/** A validated HostFileOperation. Strings are owned by the struct. */
struct fsb_hostop_req {
	cJSON *id;		/* a copy of the request's id (any JSON value), or NULL */
	enum fsb_hostop op;
	char *path;		/* delete, mkdir, chmod, touch: decoded bytes */
	char *from, *to;	/* rename, copy, link */
	bool path_bytes, from_bytes, to_bytes;	/* given as …Bytes: reply in that form */
	char *session, *tool_call, *trace;	/* NULL when absent */
	bool delete_trash;	/* deleteMode: "trash" or "unlink"; the pack's when absent */
	bool has_delete_mode;	/* deleteMode was given */
	bool recursive, force, symbolic;
	bool has_mode;
	mode_t mode;		/* mkdir, chmod: number, or octal string "0644" */
};

/**
 * Validate a parsed HostFileOperation: `command` is "HostFileOperation",
 * `operation` one of the seven, the path fields it needs are present (as a
 * string, or as `<field>Bytes` percent-encoded bytes; decoded bytes holding
 * a NUL are refused), absolute (the `from` of a symbolic link, which is
 * the link's content, may be relative), at most PATH_MAX, and every option
 * has its type. Returns 0, or -EINVAL with *why set to a sentence naming the field.
 */
int fsb_hostop_parse(const cJSON *obj, struct fsb_hostop_req *out,
		     const char **why);

void fsb_hostop_free(struct fsb_hostop_req *req);

const char *fsb_hostop_name(enum fsb_hostop op);

/**
 * Add `field` (a path) to a reply: as a JSON string when it is valid UTF-8
 * and `as_bytes` is false, else as `<field>Bytes` percent-encoded.
 */
void fsb_json_add_path(cJSON *reply, const char *field, const char *path,
		       bool as_bytes);

/**
 * Percent-encode `path` into `out` (room for 3 * strlen(path) + 1 bytes):
 * the unreserved bytes of RFC 3986 and '/' as they are, every other byte
 * as %XX. Returns the length written, without the NUL.
 */
size_t fsb_percent_encode(const char *path, char *out);

/** Percent-decode into a new string; NULL on a malformed escape or a NUL. */
char *fsb_percent_decode(const char *s);

/**
 * Print `item` (`formatted`: cJSON_Print, else unformatted) as valid
 * UTF-8: each byte of a string that is not part of valid UTF-8 becomes
 * U+FFFD. Every JSON text fsbroker writes goes through here. Returns a
 * malloc'd string, or NULL when out of memory.
 */
char *fsb_json_print(const cJSON *item, bool formatted);

/** Length of the well-formed UTF-8 sequence at `p` (at most `n` bytes),
 * or 0 when it is not one. */
size_t fsb_utf8_seq(const unsigned char *p, size_t n);

/** True when the NUL-terminated string is valid UTF-8. */
bool fsb_utf8_valid(const char *s, size_t len);

#endif
