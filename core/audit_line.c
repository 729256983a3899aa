/*
 * audit_line.c — an audit record's JSON text without a tree (see
 * audit_line.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit_line.h"
#include "proto_json.h"

void fsb_audit_line_init(struct fsb_audit_line *l)
{
	l->buf = l->small;
	l->cap = sizeof(l->small);
	l->small[0] = '{';
	l->len = 1;
	l->failed = false;
	l->timed = false;
}

void fsb_audit_line_free(struct fsb_audit_line *l)
{
	if (l->buf != l->small)
		free(l->buf);
	l->buf = l->small;
	l->cap = sizeof(l->small);
	l->len = 0;
}

/* Room for `more` bytes after what is there; false when out of memory. */
static bool reserve(struct fsb_audit_line *l, size_t more)
{
	size_t cap = l->cap;
	char *buf;

	if (l->failed)
		return false;
	if (l->len + more <= l->cap)
		return true;
	while (cap < l->len + more)
		cap *= 2;
	buf = l->buf == l->small ? malloc(cap) : realloc(l->buf, cap);
	if (buf == NULL) {
		l->failed = true;
		return false;
	}
	if (l->buf == l->small)
		memcpy(buf, l->small, l->len);
	l->buf = buf;
	l->cap = cap;
	return true;
}

static void put(struct fsb_audit_line *l, const char *s, size_t n)
{
	if (!reserve(l, n))
		return;
	memcpy(l->buf + l->len, s, n);
	l->len += n;
}

/* `,"key":` (no comma after the opening brace). */
static void put_key(struct fsb_audit_line *l, const char *key)
{
	if (l->len > 1)
		put(l, ",", 1);
	put(l, "\"", 1);
	put(l, key, strlen(key));
	put(l, "\":", 2);
}

/*
 * `s` as a JSON string: quotes, backslashes and control characters
 * escaped; with `replace`, each byte that is not part of valid UTF-8 as
 * U+FFFD (otherwise the caller has checked that there is none).
 */
static void put_string(struct fsb_audit_line *l, const char *s, bool replace)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);

	put(l, "\"", 1);
	for (size_t i = 0; i < n;) {
		size_t run = i, k;

		/* The bytes that go as they are, in one copy. */
		while (run < n && p[run] >= 0x20 && p[run] < 0x80 && p[run] != '"' &&
		       p[run] != '\\')
			run++;
		put(l, s + i, run - i);
		i = run;
		if (i == n)
			break;
		if (p[i] >= 0x80) {
			k = replace ? fsb_utf8_seq(p + i, n - i) : 1;
			if (k == 0)
				put(l, "\xef\xbf\xbd", 3);
			else
				put(l, s + i, k);
			i += k ? k : 1;
			continue;
		}
		switch (p[i]) {
		case '"': put(l, "\\\"", 2); break;
		case '\\': put(l, "\\\\", 2); break;
		case '\b': put(l, "\\b", 2); break;
		case '\f': put(l, "\\f", 2); break;
		case '\n': put(l, "\\n", 2); break;
		case '\r': put(l, "\\r", 2); break;
		case '\t': put(l, "\\t", 2); break;
		default: {
			char u[6] = { '\\', 'u', '0', '0', hex[p[i] >> 4], hex[p[i] & 15] };

			put(l, u, sizeof(u));
		}
		}
		i++;
	}
	put(l, "\"", 1);
}

void fsb_audit_line_str(struct fsb_audit_line *l, const char *key, const char *value)
{
	put_key(l, key);
	put_string(l, value, true);
}

void fsb_audit_line_path(struct fsb_audit_line *l, const char *key, const char *path)
{
	size_t n = strlen(path);

	if (fsb_utf8_valid(path, n)) {
		put_key(l, key);
		put_string(l, path, false);
		return;
	}
	if (l->len > 1)
		put(l, ",", 1);
	put(l, "\"", 1);
	put(l, key, strlen(key));
	put(l, "Bytes\":\"", 8);
	if (!reserve(l, 3 * n + 2))
		return;
	l->len += fsb_percent_encode(path, l->buf + l->len);
	put(l, "\"", 1);
}

void fsb_audit_line_bool(struct fsb_audit_line *l, const char *key, bool value)
{
	put_key(l, key);
	if (value)
		put(l, "true", 4);
	else
		put(l, "false", 5);
}

void fsb_audit_line_int(struct fsb_audit_line *l, const char *key, long long value)
{
	char num[24];
	int n = snprintf(num, sizeof(num), "%lld", value);

	put_key(l, key);
	put(l, num, (size_t)n);
}

void fsb_audit_line_raw(struct fsb_audit_line *l, const char *text, size_t len)
{
	if (len == 0)
		return;
	if (l->len > 1)
		put(l, ",", 1);
	put(l, text, len);
}

void fsb_audit_line_put(struct fsb_audit_line *l, const char *s, size_t len)
{
	put(l, s, len);
}

void fsb_audit_line_prepend(struct fsb_audit_line *l, const char *s, size_t len)
{
	if (!reserve(l, len))
		return;
	memmove(l->buf + len, l->buf, l->len);
	memcpy(l->buf, s, len);
	l->len += len;
}
