/*
 * fsbc_json.c — the little JSON the client library needs, without a JSON
 * library (a patched toybox or zsh links nothing more): writing one request
 * object, and reading the top-level members of one reply object, strictly.
 * A reply that is not exactly one well-formed object is malformed, and the
 * caller fails closed.
 */
/* Built by other projects' makefiles too (toybox, zsh): ask for what it
 * uses (MSG_CMSG_CLOEXEC, asprintf, PATH_MAX) whatever they define. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsbc_internal.h"

/* ---- writing -------------------------------------------------------------- */

void fsbc__buf_add(struct fsbc_buf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->cap - b->len < n + 1) {
		size_t cap = b->cap ? b->cap : 256;
		char *p;

		while (cap - b->len < n + 1)
			cap *= 2;
		p = realloc(b->p, cap);
		if (p == NULL) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void fsbc__buf_puts(struct fsbc_buf *b, const char *s)
{
	fsbc__buf_add(b, s, strlen(s));
}

void fsbc__buf_printf(struct fsbc_buf *b, const char *fmt, ...)
{
	char small[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(small)) {
		b->oom = true;
		return;
	}
	fsbc__buf_add(b, small, (size_t)n);
}

void fsbc__json_string(struct fsbc_buf *b, const char *s)
{
	fsbc__buf_add(b, "\"", 1);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		char esc[8];

		if (*p == '"' || *p == '\\') {
			esc[0] = '\\';
			esc[1] = (char)*p;
			fsbc__buf_add(b, esc, 2);
		} else if (*p < 0x20) {
			snprintf(esc, sizeof(esc), "\\u%04x", *p);
			fsbc__buf_add(b, esc, 6);
		} else {
			fsbc__buf_add(b, (const char *)p, 1);
		}
	}
	fsbc__buf_add(b, "\"", 1);
}

bool fsbc__utf8_valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		uint32_t cp;
		int n;

		if (*p < 0x80) {
			p++;
			continue;
		}
		if ((*p & 0xe0) == 0xc0) {
			cp = *p & 0x1f;
			n = 1;
		} else if ((*p & 0xf0) == 0xe0) {
			cp = *p & 0x0f;
			n = 2;
		} else if ((*p & 0xf8) == 0xf0) {
			cp = *p & 0x07;
			n = 3;
		} else {
			return false;
		}
		for (int i = 1; i <= n; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (p[i] & 0x3f);
		}
		if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		p += n + 1;
	}
	return true;
}

void fsbc__json_path(struct fsbc_buf *b, const char *field, const char *path)
{
	static const char hex[] = "0123456789ABCDEF";

	fsbc__buf_add(b, ",\"", 2);
	fsbc__buf_puts(b, field);
	if (fsbc__utf8_valid(path)) {
		fsbc__buf_add(b, "\":", 2);
		fsbc__json_string(b, path);
		return;
	}
	/* Bytes the core would refuse in a JSON string travel percent-encoded
	 * in <field>Bytes (docs/protocol.md). */
	fsbc__buf_puts(b, "Bytes\":\"");
	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		    (*p >= '0' && *p <= '9') || strchr("-._~/", *p) != NULL) {
			fsbc__buf_add(b, (const char *)p, 1);
		} else {
			char enc[3] = { '%', hex[*p >> 4], hex[*p & 15] };

			fsbc__buf_add(b, enc, 3);
		}
	}
	fsbc__buf_add(b, "\"", 1);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int fsbc__percent_decode(const char *in, char *out, size_t size)
{
	size_t n = 0;

	for (const char *p = in; *p; p++) {
		int c = (unsigned char)*p;

		if (c == '%') {
			int hi = hexval(p[1]), lo = hi >= 0 ? hexval(p[2]) : -1;

			if (lo < 0 || (hi == 0 && lo == 0))
				return -1;
			c = hi * 16 + lo;
			p += 2;
		}
		if (n + 1 >= size)
			return -1;
		out[n++] = (char)c;
	}
	out[n] = '\0';
	return 0;
}

/* ---- reading -------------------------------------------------------------- */

struct reader {
	const char *p;
	int depth;
};

static void skip_ws(struct reader *r)
{
	while (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r')
		r->p++;
}

static void put_utf8(struct fsbc_buf *b, uint32_t cp)
{
	char u[4];

	if (cp < 0x80) {
		u[0] = (char)cp;
		fsbc__buf_add(b, u, 1);
	} else if (cp < 0x800) {
		u[0] = (char)(0xc0 | (cp >> 6));
		u[1] = (char)(0x80 | (cp & 0x3f));
		fsbc__buf_add(b, u, 2);
	} else if (cp < 0x10000) {
		u[0] = (char)(0xe0 | (cp >> 12));
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f));
		fsbc__buf_add(b, u, 3);
	} else {
		u[0] = (char)(0xf0 | (cp >> 18));
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[3] = (char)(0x80 | (cp & 0x3f));
		fsbc__buf_add(b, u, 4);
	}
}

static int hex4(const char *p, uint32_t *out)
{
	*out = 0;
	for (int i = 0; i < 4; i++) {
		int v = hexval(p[i]);

		if (v < 0)
			return -1;
		*out = (*out << 4) | (uint32_t)v;
	}
	return 0;
}

/* A string at r->p (its opening quote): decoded into a malloc'd string in
 * *out, or only checked when out is NULL. */
static int read_string(struct reader *r, char **out)
{
	struct fsbc_buf b = { 0 };

	if (*r->p != '"')
		return -1;
	r->p++;
	fsbc__buf_add(&b, "", 0);
	while (*r->p != '"') {
		unsigned char c = (unsigned char)*r->p;

		if (c == '\0' || c < 0x20)
			goto bad;
		if (c != '\\') {
			fsbc__buf_add(&b, r->p, 1);
			r->p++;
			continue;
		}
		r->p++;
		switch (*r->p) {
		case '"': case '\\': case '/':
			fsbc__buf_add(&b, r->p, 1);
			break;
		case 'b': fsbc__buf_add(&b, "\b", 1); break;
		case 'f': fsbc__buf_add(&b, "\f", 1); break;
		case 'n': fsbc__buf_add(&b, "\n", 1); break;
		case 'r': fsbc__buf_add(&b, "\r", 1); break;
		case 't': fsbc__buf_add(&b, "\t", 1); break;
		case 'u': {
			uint32_t cp, lo;

			if (hex4(r->p + 1, &cp) < 0)
				goto bad;
			r->p += 4;
			if (cp >= 0xd800 && cp <= 0xdbff) {
				if (r->p[1] != '\\' || r->p[2] != 'u' || hex4(r->p + 3, &lo) < 0 ||
				    lo < 0xdc00 || lo > 0xdfff)
					goto bad;
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				r->p += 6;
			} else if ((cp >= 0xdc00 && cp <= 0xdfff) || cp == 0) {
				/* A lone low surrogate, or a NUL that would cut
				 * the string short. */
				goto bad;
			}
			put_utf8(&b, cp);
			break;
		}
		default:
			goto bad;
		}
		r->p++;
	}
	r->p++;
	if (b.oom)
		goto bad;
	if (out != NULL)
		*out = b.p;
	else
		free(b.p);
	return 0;
bad:
	free(b.p);
	return -1;
}

static int read_number(struct reader *r)
{
	const char *start = r->p;

	if (*r->p == '-')
		r->p++;
	if (*r->p == '0')
		r->p++;
	else if (*r->p >= '1' && *r->p <= '9')
		while (*r->p >= '0' && *r->p <= '9')
			r->p++;
	else
		return -1;
	if (*r->p == '.') {
		r->p++;
		if (*r->p < '0' || *r->p > '9')
			return -1;
		while (*r->p >= '0' && *r->p <= '9')
			r->p++;
	}
	if (*r->p == 'e' || *r->p == 'E') {
		r->p++;
		if (*r->p == '+' || *r->p == '-')
			r->p++;
		if (*r->p < '0' || *r->p > '9')
			return -1;
		while (*r->p >= '0' && *r->p <= '9')
			r->p++;
	}
	return r->p > start ? 0 : -1;
}

static int read_value(struct reader *r, enum fsbc_jtype *type, char **str);

/* An object or array whose content is checked and dropped. */
static int skip_container(struct reader *r)
{
	char close = *r->p == '{' ? '}' : ']';
	bool object = close == '}';

	if (++r->depth > 64)
		return -1;
	r->p++;
	skip_ws(r);
	if (*r->p == close) {
		r->p++;
		r->depth--;
		return 0;
	}
	for (;;) {
		enum fsbc_jtype t;

		skip_ws(r);
		if (object) {
			if (read_string(r, NULL) < 0)
				return -1;
			skip_ws(r);
			if (*r->p++ != ':')
				return -1;
			skip_ws(r);
		}
		if (read_value(r, &t, NULL) < 0)
			return -1;
		skip_ws(r);
		if (*r->p == ',') {
			r->p++;
			continue;
		}
		if (*r->p++ != close)
			return -1;
		r->depth--;
		return 0;
	}
}

static int read_value(struct reader *r, enum fsbc_jtype *type, char **str)
{
	if (str != NULL)
		*str = NULL;
	switch (*r->p) {
	case '"':
		*type = FSBC_J_STRING;
		return read_string(r, str);
	case '{':
	case '[':
		*type = FSBC_J_OTHER;
		return skip_container(r);
	case 't':
		*type = FSBC_J_TRUE;
		if (strncmp(r->p, "true", 4) != 0)
			return -1;
		r->p += 4;
		return 0;
	case 'f':
		*type = FSBC_J_FALSE;
		if (strncmp(r->p, "false", 5) != 0)
			return -1;
		r->p += 5;
		return 0;
	case 'n':
		*type = FSBC_J_NULL;
		if (strncmp(r->p, "null", 4) != 0)
			return -1;
		r->p += 4;
		return 0;
	default:
		*type = FSBC_J_NUMBER;
		return read_number(r);
	}
}

void fsbc__json_free(struct fsbc_jobj *o)
{
	for (size_t i = 0; i < o->n; i++) {
		free(o->m[i].key);
		free(o->m[i].str);
	}
	free(o->m);
	o->m = NULL;
	o->n = 0;
}

const struct fsbc_jmember *fsbc__json_get(const struct fsbc_jobj *o, const char *key)
{
	for (size_t i = 0; i < o->n; i++)
		if (strcmp(o->m[i].key, key) == 0)
			return &o->m[i];
	return NULL;
}

int fsbc__json_parse(const char *text, struct fsbc_jobj *out)
{
	struct reader r = { .p = text };
	size_t cap = 0;

	out->m = NULL;
	out->n = 0;
	skip_ws(&r);
	if (*r.p++ != '{')
		return -1;
	skip_ws(&r);
	if (*r.p == '}') {
		r.p++;
		goto end;
	}
	for (;;) {
		struct fsbc_jmember m = { 0 };

		skip_ws(&r);
		if (read_string(&r, &m.key) < 0)
			goto bad;
		skip_ws(&r);
		if (*r.p++ != ':' || (skip_ws(&r), read_value(&r, &m.type, &m.str)) < 0 ||
		    fsbc__json_get(out, m.key) != NULL) {
			free(m.key);
			free(m.str);
			goto bad;
		}
		if (out->n == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			struct fsbc_jmember *nm = realloc(out->m, ncap * sizeof(*nm));

			if (nm == NULL) {
				free(m.key);
				free(m.str);
				goto bad;
			}
			out->m = nm;
			cap = ncap;
		}
		out->m[out->n++] = m;
		skip_ws(&r);
		if (*r.p == ',') {
			r.p++;
			continue;
		}
		if (*r.p++ != '}')
			goto bad;
		break;
	}
end:
	skip_ws(&r);
	if (*r.p != '\0')
		goto bad;
	return 0;
bad:
	fsbc__json_free(out);
	return -1;
}
