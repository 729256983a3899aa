/*
 * xattr.c — extended attributes for the backup store and restore (see
 * xattr.h and docs/backup-store.md): the namespaces kept, reading them
 * within a cap, setting them back, and base64 for the journal.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

#include "xattr.h"

/* The largest value the kernel allows (XATTR_SIZE_MAX). */
#define VALUE_MAX (64u << 10)

/*
 * Where the calls go: an fd, or a path. An O_PATH fd cannot take the
 * f*xattr calls (EBADF); its /proc/self/fd link, followed, names the very
 * inode it holds, whatever is at its name now.
 */
struct target {
	int fd;
	const char *path;
	bool follow;
	char proc[40];
};

static void target_init(struct target *t, int fd, const char *path)
{
	t->fd = fd;
	t->path = path;
	t->follow = false;
	if (fd >= 0 && flistxattr(fd, NULL, 0) < 0 && errno == EBADF) {
		snprintf(t->proc, sizeof(t->proc), "/proc/self/fd/%d", fd);
		t->fd = -1;
		t->path = t->proc;
		t->follow = true;
	}
}

static ssize_t t_list(const struct target *t, char *buf, size_t size)
{
	if (t->fd >= 0)
		return flistxattr(t->fd, buf, size);
	return t->follow ? listxattr(t->path, buf, size) : llistxattr(t->path, buf, size);
}

static ssize_t t_get(const struct target *t, const char *name, void *buf, size_t size)
{
	if (t->fd >= 0)
		return fgetxattr(t->fd, name, buf, size);
	return t->follow ? getxattr(t->path, name, buf, size)
			 : lgetxattr(t->path, name, buf, size);
}

static int t_set(const struct target *t, const char *name, const void *v, size_t len)
{
	if (t->fd >= 0)
		return fsetxattr(t->fd, name, v, len, 0);
	return t->follow ? setxattr(t->path, name, v, len, 0)
			 : lsetxattr(t->path, name, v, len, 0);
}

static int t_remove(const struct target *t, const char *name)
{
	if (t->fd >= 0)
		return fremovexattr(t->fd, name);
	return t->follow ? removexattr(t->path, name) : lremovexattr(t->path, name);
}

bool fsb_xattr_kept(const char *name)
{
	return strncmp(name, "user.", 5) == 0 || strncmp(name, "trusted.", 8) == 0 ||
	       strcmp(name, "security.capability") == 0 ||
	       strcmp(name, "system.posix_acl_access") == 0 ||
	       strcmp(name, "system.posix_acl_default") == 0;
}

/* The NUL-separated names of the file, malloc'd in *out (NULL, 0: none). */
static int list_names(const struct target *t, char **out, size_t *len)
{
	char *buf = NULL;
	ssize_t n;

	*out = NULL;
	*len = 0;
	/* Names added between the two calls make the second one fail with
	 * ERANGE: ask again, a few times. */
	for (int tries = 0; tries < 8; tries++) {
		n = t_list(t, NULL, 0);
		if (n < 0)
			return errno == EOPNOTSUPP ? -ENOTSUP : -errno;
		if (n == 0)
			return 0;
		buf = malloc((size_t)n);
		if (buf == NULL)
			return -ENOMEM;
		n = t_list(t, buf, (size_t)n);
		if (n >= 0) {
			*out = buf;
			*len = (size_t)n;
			return 0;
		}
		free(buf);
		buf = NULL;
		if (errno != ERANGE)
			return -errno;
	}
	return -EAGAIN;
}

void fsb_xattr_free(struct fsb_xattr *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].name);
		free(v[i].value);
	}
	free(v);
}

int fsb_xattr_read(int fd, const char *path, size_t cap, struct fsb_xattr **out, size_t *n,
		   bool *truncated)
{
	struct fsb_xattr *v = NULL;
	unsigned char *value = NULL;
	size_t len, cnt = 0, alloc = 0, total = 0;
	struct target t;
	char *names;
	int err;

	*out = NULL;
	*n = 0;
	*truncated = false;
	target_init(&t, fd, path);
	err = list_names(&t, &names, &len);
	if (err < 0 || len == 0)
		return err;
	value = malloc(VALUE_MAX);
	if (value == NULL) {
		err = -ENOMEM;
		goto fail;
	}
	for (size_t off = 0; off < len; off += strlen(names + off) + 1) {
		const char *name = names + off;
		size_t nlen = strlen(name);
		struct fsb_xattr *e;
		ssize_t got;

		if (!fsb_xattr_kept(name))
			continue;
		got = t_get(&t, name, value, VALUE_MAX);
		if (got < 0) {
			if (errno == ENODATA)
				continue;	/* removed since it was listed */
			err = -errno;
			goto fail;
		}
		if (total + nlen + (size_t)got > cap) {
			*truncated = true;
			continue;
		}
		total += nlen + (size_t)got;
		if (cnt == alloc) {
			size_t na = alloc ? 2 * alloc : 8;
			struct fsb_xattr *nv = realloc(v, na * sizeof(*nv));

			if (nv == NULL) {
				err = -ENOMEM;
				goto fail;
			}
			v = nv;
			alloc = na;
		}
		e = &v[cnt];
		e->name = strdup(name);
		/* One byte more, so that an empty value has a buffer too. */
		e->value = malloc((size_t)got + 1);
		if (e->name == NULL || e->value == NULL) {
			free(e->name);
			free(e->value);
			err = -ENOMEM;
			goto fail;
		}
		memcpy(e->value, value, (size_t)got);
		e->len = (size_t)got;
		cnt++;
	}
	free(value);
	free(names);
	*out = v;
	*n = cnt;
	return 0;

fail:
	free(value);
	free(names);
	fsb_xattr_free(v, cnt);
	*truncated = false;
	return err;
}

/* Add "name (why)" to the list of failures, printable and cut to fit. */
static void note_failure(struct fsb_xattr_outcome *o, const char *name, const char *why)
{
	char buf[sizeof(o->failures)];
	size_t n = 0, have = strlen(o->failures);

	o->failed++;
	for (const unsigned char *p = (const unsigned char *)name; *p != '\0' && n < 120; p++) {
		if (*p >= 0x20 && *p < 0x7f)
			buf[n++] = (char)*p;
		else
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "\\x%02x", *p);
	}
	snprintf(buf + n, sizeof(buf) - n, " (%s)", why);
	if (have >= 3 && strcmp(o->failures + have - 3, "\xe2\x80\xa6") == 0)
		return;		/* already cut short */
	if (have + (have ? 2 : 0) + strlen(buf) + 4 > sizeof(o->failures)) {
		snprintf(o->failures + have, sizeof(o->failures) - have, "%s\xe2\x80\xa6",
			 have ? ", " : "");
		return;
	}
	snprintf(o->failures + have, sizeof(o->failures) - have, "%s%s", have ? ", " : "", buf);
}

static bool listed(const struct fsb_xattr *v, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].name, name) == 0)
			return true;
	return false;
}

void fsb_xattr_apply(int fd, const char *path, const struct fsb_xattr *v, size_t n,
		     bool remove_others, struct fsb_xattr_outcome *o)
{
	struct target t;
	char *names = NULL;
	size_t len = 0;
	int err = 0;

	memset(o, 0, sizeof(*o));
	target_init(&t, fd, path);
	if (remove_others) {
		err = list_names(&t, &names, &len);
		/* No xattrs on this filesystem: none to remove either. */
		if (err < 0 && err != -ENOTSUP)
			note_failure(o, "(the list of names)", strerror(-err));
	}
	for (size_t off = 0; off < len; off += strlen(names + off) + 1) {
		const char *name = names + off;

		if (!fsb_xattr_kept(name) || listed(v, n, name))
			continue;
		if (t_remove(&t, name) == 0)
			o->removed++;
		else if (errno != ENODATA)
			note_failure(o, name, strerror(errno));
	}
	free(names);
	for (size_t i = 0; i < n; i++) {
		if (!fsb_xattr_kept(v[i].name)) {
			note_failure(o, v[i].name, "not a namespace restore sets");
			continue;
		}
		if (t_set(&t, v[i].name, v[i].value, v[i].len) == 0)
			o->set++;
		else if (errno == EOPNOTSUPP)
			note_failure(o, v[i].name, "the filesystem does not support it");
		else
			note_failure(o, v[i].name, strerror(errno));
	}
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *fsb_base64_encode(const unsigned char *data, size_t len)
{
	char *out = malloc((len + 2) / 3 * 4 + 1), *o = out;
	size_t i;

	if (out == NULL)
		return NULL;
	for (i = 0; i + 3 <= len; i += 3) {
		uint32_t v = (uint32_t)data[i] << 16 | (uint32_t)data[i + 1] << 8 | data[i + 2];

		*o++ = b64[v >> 18];
		*o++ = b64[(v >> 12) & 63];
		*o++ = b64[(v >> 6) & 63];
		*o++ = b64[v & 63];
	}
	if (len - i == 1) {
		*o++ = b64[data[i] >> 2];
		*o++ = b64[(data[i] & 3) << 4];
		*o++ = '=';
		*o++ = '=';
	} else if (len - i == 2) {
		uint32_t v = (uint32_t)data[i] << 8 | data[i + 1];

		*o++ = b64[v >> 10];
		*o++ = b64[(v >> 4) & 63];
		*o++ = b64[(v << 2) & 63];
		*o++ = '=';
	}
	*o = '\0';
	return out;
}

static int b64_value(char c)
{
	const char *p = c != '\0' ? strchr(b64, c) : NULL;

	return p != NULL ? (int)(p - b64) : -1;
}

int fsb_base64_decode(const char *s, unsigned char **out, size_t *len)
{
	size_t slen = strlen(s), pad = 0, n = 0;
	unsigned char *buf;

	*out = NULL;
	*len = 0;
	if (slen % 4 != 0)
		return -EINVAL;
	if (slen > 0 && s[slen - 1] == '=')
		pad = slen > 1 && s[slen - 2] == '=' ? 2 : 1;
	buf = malloc(slen / 4 * 3 + 1);
	if (buf == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < slen; i += 4) {
		bool last = i + 4 == slen;
		int a = b64_value(s[i]), b = b64_value(s[i + 1]);
		int c = last && pad == 2 ? 0 : b64_value(s[i + 2]);
		int d = last && pad >= 1 ? 0 : b64_value(s[i + 3]);
		uint32_t v;

		if (a < 0 || b < 0 || c < 0 || d < 0)
			goto bad;
		v = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6 | (uint32_t)d;
		buf[n++] = (unsigned char)(v >> 16);
		if (last && pad == 2) {
			/* Canonical: the bits the padding stands for are zero. */
			if ((v & 0xffff) != 0)
				goto bad;
			break;
		}
		buf[n++] = (unsigned char)(v >> 8);
		if (last && pad == 1) {
			if ((v & 0xff) != 0)
				goto bad;
			break;
		}
		buf[n++] = (unsigned char)v;
	}
	*out = buf;
	*len = n;
	return 0;

bad:
	free(buf);
	return -EINVAL;
}
