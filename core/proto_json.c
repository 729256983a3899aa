/*
 * proto_json.c — the JSON HostFileOperation request (DESIGN §3.3): the raw
 * byte checks cJSON needs in front of it, validation into a struct, and the
 * percent-encoded `…Bytes` form of paths that are not UTF-8.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "proto_json.h"

/*
 * Overlong forms, UTF-16 surrogates (U+D800..U+DFFF) and code points above
 * U+10FFFF are ill-formed (RFC 3629); NUL is refused by the callers.
 */
size_t fsb_utf8_seq(const unsigned char *p, size_t n)
{
	unsigned char c = p[0];
	unsigned char lo = 0x80, hi = 0xbf;
	size_t len;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
	} else {
		return 0;
	}
	if (n < len || p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++) {
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	}
	return len;
}

bool fsb_utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (i < len) {
		size_t k;

		if (p[i] == '\0')
			return false;
		k = fsb_utf8_seq(p + i, len - i);
		if (k == 0)
			return false;
		i += k;
	}
	return true;
}

/*
 * Every JSON text fsbroker writes is valid UTF-8, whatever bytes a file
 * name held (docs/protocol.md, "Names that are not UTF-8"). A name that
 * must stay exact goes as `<field>Bytes` (fsb_json_add_path); anything
 * else that still holds such bytes -- a reason quoting a path, a plain list
 * of paths -- gets U+FFFD for each byte that is not part of valid UTF-8,
 * here, after cJSON, which copies bytes >= 0x80 through as they are.
 */
static char *utf8_replace_invalid(char *s)
{
	static const char fffd[] = "\xef\xbf\xbd";
	size_t len = strlen(s), bad = 0, o = 0;
	char *out;

	for (size_t i = 0; i < len;) {
		size_t k = fsb_utf8_seq((const unsigned char *)s + i, len - i);

		bad += k == 0;
		i += k ? k : 1;
	}
	if (bad == 0)
		return s;
	out = malloc(len + bad * 2 + 1);
	if (out != NULL) {
		for (size_t i = 0; i < len;) {
			size_t k = fsb_utf8_seq((const unsigned char *)s + i, len - i);

			if (k == 0) {
				memcpy(out + o, fffd, 3);
				o += 3;
				i++;
			} else {
				memcpy(out + o, s + i, k);
				o += k;
				i += k;
			}
		}
		out[o] = '\0';
	}
	free(s);
	return out;
}

char *fsb_json_print(const cJSON *item, bool formatted)
{
	char *s = formatted ? cJSON_Print(item) : cJSON_PrintUnformatted(item);

	return s != NULL ? utf8_replace_invalid(s) : NULL;
}

static int hex_value(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The code unit of a `\uXXXX` escape whose `\` is at p[0], or -1. */
static long u_escape(const unsigned char *p, size_t n)
{
	long v = 0;

	if (n < 6 || p[0] != '\\' || p[1] != 'u')
		return -1;
	for (int i = 2; i < 6; i++) {
		int d = hex_value(p[i]);

		if (d < 0)
			return -1;
		v = v << 4 | d;
	}
	return v;
}

int fsb_json_precheck(const char *line, size_t len, const char **why)
{
	const unsigned char *p = (const unsigned char *)line;
	bool in_string = false;
	size_t i = 0, k;
	long u, u2;

	while (i < len) {
		if (p[i] == '\0') {
			*why = "request holds a NUL byte";
			return -EINVAL;
		}
		if (p[i] >= 0x80) {
			if ((k = fsb_utf8_seq(p + i, len - i)) == 0) {
				*why = "request is not valid UTF-8";
				return -EINVAL;
			}
			i += k;
			continue;
		}
		if (!in_string) {
			if (p[i] == '"')
				in_string = true;
			i++;
			continue;
		}
		if (p[i] == '"') {
			in_string = false;
			i++;
			continue;
		}
		if (p[i] != '\\') {
			i++;
			continue;
		}
		/* An escape: `\\` and `\"` are skipped whole, so `\\u0000` is text. */
		if (i + 1 >= len || strchr("\"\\/bfnrtu", p[i + 1]) == NULL) {
			*why = "request holds a malformed escape in a string";
			return -EINVAL;
		}
		if (p[i + 1] != 'u') {
			i += 2;
			continue;
		}
		if ((u = u_escape(p + i, len - i)) < 0) {
			*why = "request holds a malformed \\u escape";
			return -EINVAL;
		}
		/* cJSON 1.7.15 ends the C string at a decoded U+0000. */
		if (u == 0) {
			*why = "request holds a \\u0000 escape";
			return -EINVAL;
		}
		if (u >= 0xdc00 && u <= 0xdfff) {
			*why = "request holds an unpaired surrogate escape";
			return -EINVAL;
		}
		if (u >= 0xd800 && u <= 0xdbff) {
			u2 = u_escape(p + i + 6, len - i - 6);
			if (u2 < 0xdc00 || u2 > 0xdfff) {
				*why = "request holds an unpaired surrogate escape";
				return -EINVAL;
			}
			i += 12;
			continue;
		}
		i += 6;
	}
	return 0;
}

cJSON *fsb_json_parse_object(const char *line, size_t len, const char **why)
{
	const char *end = NULL;
	cJSON *obj;

	/* Cheap, and a caller that forgot it would get cut strings. */
	if (fsb_json_precheck(line, len, why) < 0)
		return NULL;
	obj = cJSON_ParseWithLengthOpts(line, len, &end, 0);
	if (obj == NULL) {
		*why = "request is not valid JSON";
		return NULL;
	}
	for (; end < line + len; end++) {
		if (*end != ' ' && *end != '\t' && *end != '\r' && *end != '\n') {
			cJSON_Delete(obj);
			*why = "request has data after the JSON value";
			return NULL;
		}
	}
	if (!cJSON_IsObject(obj)) {
		cJSON_Delete(obj);
		*why = "request is not a JSON object";
		return NULL;
	}
	return obj;
}

static const char *const hostop_names[] = {
	[FSB_HOSTOP_DELETE] = "delete",
	[FSB_HOSTOP_MKDIR] = "mkdir",
	[FSB_HOSTOP_RENAME] = "rename",
	[FSB_HOSTOP_COPY] = "copy",
	[FSB_HOSTOP_CHMOD] = "chmod",
	[FSB_HOSTOP_LINK] = "link",
	[FSB_HOSTOP_TOUCH] = "touch",
};

#define HOSTOP_COUNT (sizeof(hostop_names) / sizeof(hostop_names[0]))

const char *fsb_hostop_name(enum fsb_hostop op)
{
	if ((unsigned)op >= HOSTOP_COUNT)
		return "?";
	return hostop_names[op];
}

/*
 * A field of the request with the sentences that name it. `why` strings
 * must be static, so each field carries its own.
 */
struct field {
	const char *name;
	const char *twice;
	const char *missing;
	const char *wrong;	/* wrong type or value */
};

#define FIELD(var, n, wrong_) \
	static const struct field var = { n, \
		"field '" n "' is given twice", \
		"field '" n "' is missing", \
		"field '" n "' " wrong_ }

FIELD(f_id, "id", "is invalid");
FIELD(f_command, "command", "must be a string");
FIELD(f_operation, "operation", "must be a string");
FIELD(f_session, "sessionId", "must be a string");
FIELD(f_tool_call, "toolCallId", "must be a string");
FIELD(f_trace, "brokerTraceId", "must be a string");
FIELD(f_delete_mode, "deleteMode", "must be \"trash\" or \"unlink\"");
FIELD(f_recursive, "recursive", "must be a boolean");
FIELD(f_force, "force", "must be a boolean");
FIELD(f_symbolic, "symbolic", "must be a boolean");
FIELD(f_mode, "mode", "must be a number from 0 to 07777 or a string of "
      "octal digits");

/* A path field, given as `<name>` (a string) or `<name>Bytes`. */
struct path_field {
	struct field str, bytes;
	const char *both;
	const char *missing;
	const char *relative;
	const char *too_long;
};

#define PATH_FIELD(var, n) \
	static const struct path_field var = { \
		{ n, "field '" n "' is given twice", NULL, \
		  "field '" n "' must be a string" }, \
		{ n "Bytes", "field '" n "Bytes' is given twice", NULL, \
		  "field '" n "Bytes' must be a string of percent-encoded " \
		  "bytes without NUL" }, \
		"fields '" n "' and '" n "Bytes' are both given", \
		"field '" n "' (or '" n "Bytes') is missing", \
		"field '" n "' is not an absolute path", \
		"field '" n "' is longer than PATH_MAX" }

PATH_FIELD(f_path, "path");
PATH_FIELD(f_from, "from");
PATH_FIELD(f_to, "to");

/*
 * Look a field up by its exact name. cJSON returns the first of duplicate
 * keys where other parsers take the last, so a request naming a field twice
 * is refused rather than read one way here and another way in a log.
 */
static int get(const cJSON *obj, const struct field *f, const cJSON **item,
	       const char **why)
{
	const cJSON *c, *found = NULL;

	for (c = obj->child; c != NULL; c = c->next) {
		if (c->string == NULL || strcmp(c->string, f->name) != 0)
			continue;
		if (found != NULL) {
			*why = f->twice;
			return -EINVAL;
		}
		found = c;
	}
	*item = found;
	return 0;
}

static int get_string(const cJSON *obj, const struct field *f, char **dst,
		      const char **why)
{
	const cJSON *item;

	if (get(obj, f, &item, why) < 0)
		return -EINVAL;
	if (item == NULL)
		return 0;
	if (!cJSON_IsString(item)) {
		*why = f->wrong;
		return -EINVAL;
	}
	if ((*dst = strdup(item->valuestring)) == NULL) {
		*why = "out of memory";
		return -ENOMEM;
	}
	return 0;
}

static int get_bool(const cJSON *obj, const struct field *f, bool *dst,
		    const char **why)
{
	const cJSON *item;

	if (get(obj, f, &item, why) < 0)
		return -EINVAL;
	if (item == NULL)
		return 0;
	if (!cJSON_IsBool(item)) {
		*why = f->wrong;
		return -EINVAL;
	}
	*dst = cJSON_IsTrue(item);
	return 0;
}

static int parse_mode(const cJSON *item, mode_t *mode)
{
	const char *s;
	unsigned m = 0;

	if (cJSON_IsNumber(item)) {
		double d = item->valuedouble;

		if (!(d >= 0 && d <= 07777) || d != (double)(unsigned)d)
			return -EINVAL;
		*mode = (mode_t)d;
		return 0;
	}
	if (!cJSON_IsString(item))
		return -EINVAL;
	s = item->valuestring;
	if (*s == '\0')
		return -EINVAL;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '7')
			return -EINVAL;
		m = m << 3 | (unsigned)(*s - '0');
		if (m > 07777)
			return -EINVAL;
	}
	*mode = (mode_t)m;
	return 0;
}

/* `relative_ok`: the field is not a path to look up but the content of a
 * symlink to make, which may be relative (not empty). */
static int get_path(const cJSON *obj, const struct path_field *f, bool relative_ok,
		    char **dst, bool *as_bytes, const char **why)
{
	const cJSON *str, *bytes;
	char *path;

	if (get(obj, &f->str, &str, why) < 0 ||
	    get(obj, &f->bytes, &bytes, why) < 0)
		return -EINVAL;
	if (str != NULL && bytes != NULL) {
		*why = f->both;
		return -EINVAL;
	}
	if (str == NULL && bytes == NULL) {
		*why = f->missing;
		return -EINVAL;
	}
	if (str != NULL) {
		if (!cJSON_IsString(str)) {
			*why = f->str.wrong;
			return -EINVAL;
		}
		path = strdup(str->valuestring);
		if (path == NULL) {
			*why = "out of memory";
			return -ENOMEM;
		}
	} else {
		if (!cJSON_IsString(bytes) ||
		    (path = fsb_percent_decode(bytes->valuestring)) == NULL) {
			*why = f->bytes.wrong;
			return -EINVAL;
		}
		*as_bytes = true;
	}
	*dst = path;
	/* Relative paths would resolve against the core's cwd. */
	if (path[0] != '/' && (!relative_ok || path[0] == '\0')) {
		*why = f->relative;
		return -EINVAL;
	}
	if (strlen(path) >= PATH_MAX) {
		*why = f->too_long;
		return -EINVAL;
	}
	return 0;
}

static int parse_operation(const cJSON *obj, enum fsb_hostop *op,
			   const char **why)
{
	const cJSON *item;

	if (get(obj, &f_operation, &item, why) < 0)
		return -EINVAL;
	if (item == NULL) {
		*why = f_operation.missing;
		return -EINVAL;
	}
	if (!cJSON_IsString(item)) {
		*why = f_operation.wrong;
		return -EINVAL;
	}
	for (size_t i = 0; i < HOSTOP_COUNT; i++) {
		if (strcmp(item->valuestring, hostop_names[i]) == 0) {
			*op = (enum fsb_hostop)i;
			return 0;
		}
	}
	*why = "unknown operation";
	return -EINVAL;
}

static int get_mode(const cJSON *obj, struct fsb_hostop_req *out,
		    bool required, const char **why)
{
	const cJSON *item;

	if (get(obj, &f_mode, &item, why) < 0)
		return -EINVAL;
	if (item == NULL) {
		if (required) {
			*why = f_mode.missing;
			return -EINVAL;
		}
		return 0;
	}
	if (parse_mode(item, &out->mode) < 0) {
		*why = f_mode.wrong;
		return -EINVAL;
	}
	out->has_mode = true;
	return 0;
}

static int get_delete_mode(const cJSON *obj, struct fsb_hostop_req *out, const char **why)
{
	const cJSON *item;

	if (get(obj, &f_delete_mode, &item, why) < 0)
		return -EINVAL;
	if (item == NULL)
		return 0;
	out->has_delete_mode = true;
	if (cJSON_IsString(item) && strcmp(item->valuestring, "trash") == 0) {
		out->delete_trash = true;
	} else if (cJSON_IsString(item) &&
		   strcmp(item->valuestring, "unlink") == 0) {
		out->delete_trash = false;
	} else {
		*why = f_delete_mode.wrong;
		return -EINVAL;
	}
	return 0;
}

/* Options that do not belong to the operation are ignored, unchecked. */
static int parse_options(const cJSON *obj, struct fsb_hostop_req *out,
			 const char **why)
{
	int err;

	switch (out->op) {
	case FSB_HOSTOP_DELETE:
		if ((err = get_delete_mode(obj, out, why)) < 0 ||
		    (err = get_bool(obj, &f_recursive, &out->recursive, why)) < 0)
			return err;
		return get_bool(obj, &f_force, &out->force, why);
	case FSB_HOSTOP_MKDIR:
		if ((err = get_bool(obj, &f_recursive, &out->recursive, why)) < 0)
			return err;
		return get_mode(obj, out, false, why);
	case FSB_HOSTOP_CHMOD:
		/* chmod without a mode has nothing to do. */
		return get_mode(obj, out, true, why);
	case FSB_HOSTOP_COPY:
		return get_bool(obj, &f_recursive, &out->recursive, why);
	case FSB_HOSTOP_LINK:
		return get_bool(obj, &f_symbolic, &out->symbolic, why);
	case FSB_HOSTOP_RENAME:
	case FSB_HOSTOP_TOUCH:
		break;
	}
	return 0;
}

int fsb_hostop_parse(const cJSON *obj, struct fsb_hostop_req *out,
		     const char **why)
{
	const cJSON *item;
	int err = -EINVAL;

	memset(out, 0, sizeof(*out));
	out->delete_trash = true;
	if (!cJSON_IsObject(obj)) {
		*why = "request is not a JSON object";
		goto fail;
	}

	if (get(obj, &f_command, &item, why) < 0)
		goto fail;
	if (item == NULL) {
		*why = f_command.missing;
		goto fail;
	}
	if (!cJSON_IsString(item)) {
		*why = f_command.wrong;
		goto fail;
	}
	if (strcmp(item->valuestring, "HostFileOperation") != 0) {
		*why = "unknown command";
		goto fail;
	}
	if ((err = get(obj, &f_id, &item, why)) < 0)
		goto fail;
	if (item != NULL && (out->id = cJSON_Duplicate(item, 1)) == NULL) {
		*why = "out of memory";
		err = -ENOMEM;
		goto fail;
	}
	if ((err = parse_operation(obj, &out->op, why)) < 0)
		goto fail;

	if ((err = parse_options(obj, out, why)) < 0)
		goto fail;
	switch (out->op) {
	case FSB_HOSTOP_DELETE:
	case FSB_HOSTOP_MKDIR:
	case FSB_HOSTOP_CHMOD:
	case FSB_HOSTOP_TOUCH:
		err = get_path(obj, &f_path, false, &out->path, &out->path_bytes, why);
		break;
	case FSB_HOSTOP_RENAME:
	case FSB_HOSTOP_COPY:
	case FSB_HOSTOP_LINK:
		/* A symlink's content is written as given, never looked up. */
		err = get_path(obj, &f_from, out->op == FSB_HOSTOP_LINK && out->symbolic,
			       &out->from, &out->from_bytes, why);
		if (err == 0)
			err = get_path(obj, &f_to, false, &out->to, &out->to_bytes, why);
		break;
	}
	if (err < 0)
		goto fail;
	if ((err = get_string(obj, &f_session, &out->session, why)) < 0 ||
	    (err = get_string(obj, &f_tool_call, &out->tool_call, why)) < 0 ||
	    (err = get_string(obj, &f_trace, &out->trace, why)) < 0)
		goto fail;
	return 0;

fail:
	fsb_hostop_free(out);
	return err;
}

void fsb_hostop_free(struct fsb_hostop_req *req)
{
	cJSON_Delete(req->id);
	free(req->path);
	free(req->from);
	free(req->to);
	free(req->session);
	free(req->tool_call);
	free(req->trace);
	memset(req, 0, sizeof(*req));
}

char *fsb_percent_decode(const char *s)
{
	size_t n = strlen(s);
	char *out = malloc(n + 1), *o = out;
	int hi, lo;

	if (out == NULL)
		return NULL;
	for (; *s != '\0'; s++) {
		if (*s != '%') {
			*o++ = *s;
			continue;
		}
		hi = hex_value((unsigned char)s[1]);
		lo = hi < 0 ? -1 : hex_value((unsigned char)s[2]);
		/* A decoded NUL would cut the path the policy checks. */
		if (lo < 0 || (hi | lo) == 0) {
			free(out);
			return NULL;
		}
		*o++ = (char)(hi << 4 | lo);
		s += 2;
	}
	*o = '\0';
	return out;
}

static bool unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
	       c == '~' || c == '/';
}

size_t fsb_percent_encode(const char *path, char *out)
{
	static const char hex[] = "0123456789ABCDEF";
	char *o = out;

	for (const unsigned char *p = (const unsigned char *)path; *p != '\0'; p++) {
		if (unreserved(*p)) {
			*o++ = (char)*p;
		} else {
			*o++ = '%';
			*o++ = hex[*p >> 4];
			*o++ = hex[*p & 15];
		}
	}
	*o = '\0';
	return (size_t)(o - out);
}

void fsb_json_add_path(cJSON *reply, const char *field, const char *path,
		       bool as_bytes)
{
	size_t flen = strlen(field);
	char *name, *enc;

	if (!as_bytes && fsb_utf8_valid(path, strlen(path))) {
		cJSON_AddStringToObject(reply, field, path);
		return;
	}
	name = malloc(flen + sizeof("Bytes"));
	enc = malloc(strlen(path) * 3 + 1);
	if (name == NULL || enc == NULL)
		goto out;
	memcpy(name, field, flen);
	memcpy(name + flen, "Bytes", sizeof("Bytes"));
	fsb_percent_encode(path, enc);
	cJSON_AddStringToObject(reply, name, enc);
out:
	free(name);
	free(enc);
}
