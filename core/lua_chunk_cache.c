/*
 * lua_chunk_cache.c — compiled chunks kept by their source
 * (lua_chunk_cache.h). An entry: "FSBC1\n", the source's SHA-256, the
 * bytecode's SHA-256, the bytecode.
 */
#include "lua_chunk_cache.h"
#include "private_file.h"

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

bool fsb_chunk_cache_load(lua_State *L, const char *dir, const char *path, const char *text,
			  size_t len, const char *chunkname)
{
	unsigned char src[32], code[32];
	char file[PATH_MAX], *buf;
	size_t n = 0;
	bool ok;

	if (!entry_path(dir, path, file, sizeof(file)) ||
	    (buf = fsb_private_file_read(file, FSB_CHUNK_CACHE_MAX_BYTES, &n)) == NULL)
		return false;
	ok = n > HEADER_LEN && memcmp(buf, MAGIC, MAGIC_LEN) == 0 && sha256(path, text, len, src) &&
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

void fsb_chunk_cache_store(lua_State *L, const char *dir, const char *path, const char *text,
			   size_t len)
{
	struct dump d = { 0 };
	unsigned char src[32], code[32];
	char file[PATH_MAX];
	struct stat st;

	if (!entry_path(dir, path, file, sizeof(file)) ||
	    (mkdir(dir, 0700) < 0 && errno != EEXIST) || lstat(dir, &st) < 0 ||
	    !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) != 0)
		return;
	if (lua_dump(L, dump_writer, &d, 0) != 0 || d.failed || !sha256(path, text, len, src) ||
	    !sha256(NULL, d.buf, d.len, code)) {
		free(d.buf);
		return;
	}
	fsb_private_file_write(file, (const void *const[]){ MAGIC, src, code, d.buf },
			       (const size_t[]){ MAGIC_LEN, 32, 32, d.len }, 4);
	free(d.buf);
}
