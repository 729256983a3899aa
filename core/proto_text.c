/*
 * proto_text.c — parser of the text token request (DESIGN §3.2): a class,
 * an absolute path, the session and tool-call ids, an optional open-spec.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "proto_text.h"

#define FIELDS_MAX 5

static const struct {
	const char *name;
	bool write;
} classes[] = {
	{ "fsbroker.read", false },
	{ "fsbroker.read-write", true },
	/* The original design's names, so its clients work unchanged. */
	{ "com.workbuddy.sandbox.read", false },
	{ "com.workbuddy.sandbox.read-write", true },
};

static int parse_class(const char *s, bool *write)
{
	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
		if (strcmp(s, classes[i].name) == 0) {
			*write = classes[i].write;
			return 0;
		}
	}
	return -EINVAL;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* open=<flags-hex>:<mode-octal>, `0x` optional; flags fit in 32 bits. */
static int parse_open_spec(const char *s, int *flags, mode_t *mode)
{
	uint32_t f = 0;
	unsigned m = 0;
	const char *p;
	int d;

	if (strncmp(s, "open=", 5) != 0)
		return -EINVAL;
	p = s + 5;
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
		p += 2;
	if (hex_digit(*p) < 0)
		return -EINVAL;
	for (; (d = hex_digit(*p)) >= 0; p++) {
		if (f > UINT32_MAX >> 4)
			return -EINVAL;
		f = f << 4 | (uint32_t)d;
	}
	if (*p++ != ':')
		return -EINVAL;
	if (*p < '0' || *p > '7')
		return -EINVAL;
	for (; *p >= '0' && *p <= '7'; p++) {
		m = m << 3 | (unsigned)(*p - '0');
		if (m > 07777)
			return -EINVAL;
	}
	if (*p != '\0')
		return -EINVAL;
	/* Bit 31 wraps to a negative int; fsb_openflags_check() refuses it. */
	*flags = (int)f;
	*mode = (mode_t)m;
	return 0;
}

int fsb_text_parse(char *line, size_t len, struct fsb_text_req *out,
		   const char **why)
{
	char *field[FIELDS_MAX];
	size_t n = 0;
	char *p;

	memset(out, 0, sizeof(*out));
	/*
	 * Everything after an embedded NUL would be invisible to the string
	 * functions below, so the path checked would not be the path sent.
	 */
	if (strlen(line) != len) {
		*why = "line holds a NUL byte";
		return -EINVAL;
	}
	if (memchr(line, '\n', len) != NULL) {
		*why = "line holds a newline";
		return -EINVAL;
	}

	field[n++] = line;
	for (p = line; (p = strchr(p, '\t')) != NULL; ) {
		*p++ = '\0';
		if (n == FIELDS_MAX) {
			*why = "request has too many fields";
			goto fail;
		}
		field[n++] = p;
	}

	if (parse_class(field[0], &out->write) < 0) {
		*why = "unknown request class";
		goto fail;
	}
	if (n < 4) {
		*why = "request has too few fields (expected class, path, "
		       "session id, tool-call id)";
		goto fail;
	}
	if (field[1][0] == '\0') {
		*why = "path is empty";
		goto fail;
	}
	/*
	 * A relative path would be resolved against the core's cwd, not the
	 * client's.
	 */
	if (field[1][0] != '/') {
		*why = "path is not absolute";
		goto fail;
	}
	if (strlen(field[1]) >= PATH_MAX) {
		*why = "path is longer than PATH_MAX";
		goto fail;
	}
	if (field[2][0] == '\0') {
		*why = "session id is empty";
		goto fail;
	}
	if (n == 5) {
		if (parse_open_spec(field[4], &out->open_flags,
				    &out->open_mode) < 0) {
			*why = "malformed open-spec (expected "
			       "open=<flags-hex>:<mode-octal>)";
			goto fail;
		}
		out->has_open = true;
	}
	out->path = field[1];
	out->session = field[2];
	out->tool_call = field[3];
	return 0;

fail:
	memset(out, 0, sizeof(*out));
	return -EINVAL;
}
