/*
 * lua_chunk_cache.c — compiled chunks kept by their source
 * (lua_chunk_cache.h). An entry: "FSBC1\n", the source's SHA-256, the
 * bytecode's SHA-256, the bytecode.
 */
#include "lua_chunk_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lauxlib.h>
#include <openssl/evp.h>

#define MAGIC "FSBC1\n"
#define MAGIC_LEN (sizeof(MAGIC) - 1)
#define HEADER_LEN (MAGIC_LEN + 64)

/* SHA-256 of the path, a NUL and the text, or of the bytes alone (path NULL). */
static bool sha256(const char *path, const void *bytes, size_t len, unsigned char out[32])
{
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	unsigned int n = 0;
	bool ok;

	ok = c != NULL && EVP_DigestInit_ex(c, EVP_sha256(), NULL) &&
	     (path == NULL || EVP_DigestUpdate(c, path, strlen(path) + 1)) &&
	     EVP_DigestUpdate(c, bytes, len) && EVP_DigestFinal_ex(c, out, &n) && n == 32;
	EVP_MD_CTX_free(c);
	return ok;
}

/* <dir>/<first 16 bytes of the path's SHA-256, hex>. */
static bool entry_path(const char *dir, const char *path, char *out, size_t len)
{
	unsigned char md[32];
	char hex[33];

	if (dir == NULL || dir[0] != '/' || !sha256(NULL, path, strlen(path), md))
		return false;
	for (int i = 0; i < 16; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	return (size_t)snprintf(out, len, "%s/%s", dir, hex) < len;
}

/* The entry whole, when it is one that may be used. */
static char *read_entry(const char *file, size_t *len)
{
	struct stat st;
	size_t got = 0;
	char *buf;
	int fd;

	fd = open(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022) != 0 || st.st_size <= (off_t)HEADER_LEN ||
	    (uint64_t)st.st_size > FSB_CHUNK_CACHE_MAX_BYTES ||
	    (buf = malloc((size_t)st.st_size)) == NULL) {
		close(fd);
		return NULL;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (got != (size_t)st.st_size) {
		free(buf);
		return NULL;
	}
	*len = got;
	return buf;
}

bool fsb_chunk_cache_load(lua_State *L, const char *dir, const char *path, const char *text,
			  size_t len, const char *chunkname)
{
	unsigned char src[32], code[32];
	char file[PATH_MAX], *buf;
	size_t n = 0;
	bool ok;

	if (!entry_path(dir, path, file, sizeof(file)) || (buf = read_entry(file, &n)) == NULL)
		return false;
	ok = memcmp(buf, MAGIC, MAGIC_LEN) == 0 && sha256(path, text, len, src) &&
	     memcmp(buf + MAGIC_LEN, src, 32) == 0 &&
	     sha256(NULL, buf + HEADER_LEN, n - HEADER_LEN, code) &&
	     memcmp(buf + MAGIC_LEN + 32, code, 32) == 0;
	/* A chunk of another Lua release is refused by the loader's header
	 * check: its message is dropped, and the source is compiled. */
	if (ok && luaL_loadbufferx(L, buf + HEADER_LEN, n - HEADER_LEN, chunkname, "b") != LUA_OK) {
		lua_pop(L, 1);
		ok = false;
	}
	free(buf);
	return ok;
}

struct dump {
	char *buf;
	size_t len, cap;
	bool failed;
};

static int dump_writer(lua_State *L, const void *p, size_t n, void *ud)
{
	struct dump *d = ud;

	(void)L;
	if (d->failed)
		return 1;
	if (d->len + n > d->cap) {
		size_t cap = d->cap ? d->cap : 16384;
		char *nb;

		while (cap < d->len + n)
			cap *= 2;
		if (cap > FSB_CHUNK_CACHE_MAX_BYTES || (nb = realloc(d->buf, cap)) == NULL) {
			d->failed = true;
			return 1;
		}
		d->buf = nb;
		d->cap = cap;
	}
	memcpy(d->buf + d->len, p, n);
	d->len += n;
	return 0;
}

static bool write_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n > 0) {
		ssize_t w = write(fd, c, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		c += w;
		n -= (size_t)w;
	}
	return true;
}

void fsb_chunk_cache_store(lua_State *L, const char *dir, const char *path, const char *text,
			   size_t len)
{
	struct dump d = { 0 };
	unsigned char src[32], code[32];
	char file[PATH_MAX], tmp[PATH_MAX + 32];
	struct stat st;
	bool ok;
	int fd;

	if (!entry_path(dir, path, file, sizeof(file)) ||
	    (mkdir(dir, 0700) < 0 && errno != EEXIST) || lstat(dir, &st) < 0 ||
	    !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) != 0)
		return;
	if (lua_dump(L, dump_writer, &d, 0) != 0 || d.failed || !sha256(path, text, len, src) ||
	    !sha256(NULL, d.buf, d.len, code)) {
		free(d.buf);
		return;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", file, (long)getpid());
	/* O_EXCL | O_NOFOLLOW: a name a crash left is not written through. */
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	ok = fd >= 0 && write_all(fd, MAGIC, MAGIC_LEN) && write_all(fd, src, 32) &&
	     write_all(fd, code, 32) && write_all(fd, d.buf, d.len);
	if (fd >= 0 && close(fd) < 0)
		ok = false;
	if (!ok || rename(tmp, file) < 0)
		unlink(tmp);
	free(d.buf);
}
