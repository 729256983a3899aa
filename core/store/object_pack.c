/*
 * object_pack.c — object packs (see object_pack.h): writing a sealed
 * cycle's objects into zstd-compressed packs with their index, reading one
 * object back into a memfd, rewriting a pack a prune thinned out.
 *
 * The order of writing is what makes a crash harmless: pack, fsync, index,
 * fsync, both renamed into place, packs/ fsynced, and only then the loose
 * copies removed. A reader takes a loose copy first and a pack second, so
 * it finds every object at every step.
 */
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <zstd.h>

#include "backup_read.h"
#include "journal.h"
#include "object_pack.h"

#define CHUNK 65536
#define PACK_MAGIC "FSBPACK1"
#define IDX_MAGIC "FSBPIDX1"
#define MAGIC_LEN 8
#define IDX_HEAD (MAGIC_LEN + 8)
#define IDX_ENT 64		/* hash 32, off 8, len 8, raw 8, flags 8 */
#define IDX_TAIL 32		/* SHA-256 of everything before it */
#define FLAG_ZSTD 1u

/* ---- small helpers ----------------------------------------------------- */

static int write_full(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read exactly `len` bytes at `off`; -EBADMSG when the file ends first. */
static int pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	char *p = buf;

	while (len > 0) {
		ssize_t n = pread(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EBADMSG;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

static void to_hex(const unsigned char *md, char *hex)
{
	static const char digits[] = "0123456789abcdef";

	for (int i = 0; i < 32; i++) {
		hex[2 * i] = digits[md[i] >> 4];
		hex[2 * i + 1] = digits[md[i] & 15];
	}
	hex[64] = '\0';
}

static int from_hex(const char *hex, unsigned char *md)
{
	for (int i = 0; i < 32; i++) {
		unsigned v = 0;

		for (int k = 0; k < 2; k++) {
			char ch = hex[2 * i + k];

			v <<= 4;
			if (ch >= '0' && ch <= '9')
				v |= (unsigned)(ch - '0');
			else if (ch >= 'a' && ch <= 'f')
				v |= (unsigned)(ch - 'a' + 10);
			else
				return -EINVAL;
		}
		md[i] = (unsigned char)v;
	}
	return 0;
}

static int random_id(char *id)
{
	unsigned char r[16];
	static const char digits[] = "0123456789abcdef";

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return -EIO;
	for (int i = 0; i < 16; i++) {
		id[2 * i] = digits[r[i] >> 4];
		id[2 * i + 1] = digits[r[i] & 15];
	}
	id[32] = '\0';
	return 0;
}

static bool id_ok(const char *s, size_t len)
{
	if (len != 32)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* packs/ of the store, made (and fsynced into the store) when `create`. */
static int packs_dir(const char *store_dir, bool create)
{
	char path[PATH_MAX];
	int fd;

	if (snprintf(path, sizeof(path), "%s/packs", store_dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 || errno != ENOENT || !create)
		return fd >= 0 ? fd : -errno;
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return -errno;
	fd = open(store_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd >= 0 ? fd : -errno;
}

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct fsb_objpack_entry *)a)->hex,
		      ((const struct fsb_objpack_entry *)b)->hex);
}

static int cmp_pack(const void *a, const void *b)
{
	return strcmp(((const struct fsb_objpack *)a)->id, ((const struct fsb_objpack *)b)->id);
}

/* ---- the index --------------------------------------------------------- */

/*
 * Load <id>.idx under `dfd` into `p`. -EBADMSG when it is not a whole
 * index (its trailing SHA-256 does not match): a damaged index is never
 * half believed.
 */
static int idx_load(int dfd, const char *id, struct fsb_objpack *p)
{
	unsigned char md[32], *buf = NULL;
	char name[48];
	struct stat st, pst;
	uint64_t count;
	int fd, rc;

	memset(p, 0, sizeof(*p));
	snprintf(name, sizeof(name), "%s.idx", id);
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		goto fail;
	}
	rc = -EBADMSG;
	if (!S_ISREG(st.st_mode) || st.st_size < IDX_HEAD + IDX_TAIL ||
	    (st.st_size - IDX_HEAD - IDX_TAIL) % IDX_ENT != 0)
		goto fail;
	buf = malloc((size_t)st.st_size);
	if (buf == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	if ((rc = pread_full(fd, buf, (size_t)st.st_size, 0)) < 0)
		goto fail;
	rc = -EBADMSG;
	if (EVP_Digest(buf, (size_t)st.st_size - IDX_TAIL, md, NULL, EVP_sha256(), NULL) != 1 ||
	    memcmp(md, buf + st.st_size - IDX_TAIL, 32) != 0 ||
	    memcmp(buf, IDX_MAGIC, MAGIC_LEN) != 0)
		goto fail;
	memcpy(&count, buf + MAGIC_LEN, 8);
	count = le64toh(count);
	if (count != (uint64_t)(st.st_size - IDX_HEAD - IDX_TAIL) / IDX_ENT)
		goto fail;
	snprintf(name, sizeof(name), "%s.pack", id);
	if (fstatat(dfd, name, &pst, AT_SYMLINK_NOFOLLOW) < 0) {
		rc = -errno;
		goto fail;
	}
	p->v = calloc(count + 1, sizeof(*p->v));
	if (p->v == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	for (uint64_t i = 0; i < count; i++) {
		const unsigned char *e = buf + IDX_HEAD + i * IDX_ENT;
		struct fsb_objpack_entry *o = &p->v[i];
		uint64_t w[4];

		memcpy(w, e + 32, sizeof(w));
		to_hex(e, o->hex);
		o->off = le64toh(w[0]);
		o->len = le64toh(w[1]);
		o->raw = le64toh(w[2]);
		o->zstd = (le64toh(w[3]) & FLAG_ZSTD) != 0;
	}
	p->n = (size_t)count;
	snprintf(p->id, sizeof(p->id), "%s", id);
	p->bytes = (uint64_t)st.st_size + (uint64_t)pst.st_size;
	free(buf);
	close(fd);
	return 0;

fail:
	free(p->v);
	p->v = NULL;
	free(buf);
	close(fd);
	return rc;
}

/* Write the index of `v` (n entries, sorted) to `name` under `dfd`, fsynced. */
static int idx_write(int dfd, const char *name, const struct fsb_objpack_entry *v, size_t n)
{
	size_t len = IDX_HEAD + n * IDX_ENT + IDX_TAIL;
	unsigned char *buf = calloc(1, len);
	uint64_t count = htole64((uint64_t)n);
	int fd = -1, rc;

	if (buf == NULL)
		return -ENOMEM;
	memcpy(buf, IDX_MAGIC, MAGIC_LEN);
	memcpy(buf + MAGIC_LEN, &count, 8);
	for (size_t i = 0; i < n; i++) {
		unsigned char *e = buf + IDX_HEAD + i * IDX_ENT;
		uint64_t w[4] = { htole64(v[i].off), htole64(v[i].len), htole64(v[i].raw),
				  htole64(v[i].zstd ? FLAG_ZSTD : 0) };

		if ((rc = from_hex(v[i].hex, e)) < 0)
			goto fail;
		memcpy(e + 32, w, sizeof(w));
	}
	if (EVP_Digest(buf, len - IDX_TAIL, buf + len - IDX_TAIL, NULL, EVP_sha256(), NULL) != 1) {
		rc = -ENOMEM;
		goto fail;
	}
	fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0400);
	if (fd < 0) {
		rc = -errno;
		goto fail;
	}
	if ((rc = write_full(fd, buf, len)) < 0)
		goto fail;
	if (fsync(fd) < 0) {
		rc = -errno;
		goto fail;
	}
	close(fd);
	free(buf);
	return 0;

fail:
	if (fd >= 0) {
		close(fd);
		unlinkat(dfd, name, 0);
	}
	free(buf);
	return rc;
}

int fsb_objpack_list(const char *store_dir, struct fsb_objpack **out, size_t *n)
{
	struct fsb_objpack *v = NULL;
	size_t cnt = 0, cap = 0;
	struct dirent *de;
	DIR *d;
	int dfd, rc = 0;

	*out = NULL;
	*n = 0;
	dfd = packs_dir(store_dir, false);
	if (dfd < 0)
		return dfd == -ENOENT ? 0 : dfd;
	d = fdopendir(dfd);
	if (d == NULL) {
		rc = -errno;
		close(dfd);
		return rc;
	}
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);
		char id[33];

		if (len != 36 || strcmp(de->d_name + 32, ".idx") != 0 || !id_ok(de->d_name, 32))
			continue;
		memcpy(id, de->d_name, 32);
		id[32] = '\0';
		if (cnt == cap) {
			size_t ncap = cap ? 2 * cap : 8;
			void *nv = realloc(v, ncap * sizeof(*v));

			if (nv == NULL) {
				rc = -ENOMEM;
				break;
			}
			v = nv;
			cap = ncap;
		}
		if (idx_load(dirfd(d), id, &v[cnt]) == 0)
			cnt++;
	}
	closedir(d);
	if (rc < 0) {
		fsb_objpack_list_free(v, cnt);
		return rc;
	}
	if (cnt > 1)
		qsort(v, cnt, sizeof(*v), cmp_pack);
	*out = v;
	*n = cnt;
	return 0;
}

void fsb_objpack_list_free(struct fsb_objpack *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].v);
	free(v);
}

const struct fsb_objpack_entry *fsb_objpack_find(const struct fsb_objpack *p, const char *hex)
{
	struct fsb_objpack_entry key = { .off = 0 };

	if (p->n == 0 || strlen(hex) != 64)
		return NULL;
	memcpy(key.hex, hex, sizeof(key.hex));
	return bsearch(&key, p->v, p->n, sizeof(*p->v), cmp_entry);
}

/* ---- reading ----------------------------------------------------------- */

/*
 * The packs a reader last listed, per store: a restore of 10,000 files
 * looks up 10,000 objects, and reading every index each time would cost
 * more than the objects. Listed again when packs/ changed (its inode or
 * mtime: every new or removed pack renames or unlinks in it).
 */
static struct {
	pthread_mutex_t mu;
	char dir[PATH_MAX];
	dev_t dev;
	ino_t ino;
	struct timespec mtim;
	struct fsb_objpack *v;
	size_t n;
} cache = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* Find `hex` in the packs of `store_dir`: its pack id and entry. */
static int lookup(const char *store_dir, const char *hex, bool fresh, char *id,
		  struct fsb_objpack_entry *ent)
{
	struct stat st;
	char path[PATH_MAX];
	int rc = -ENOENT;

	if (snprintf(path, sizeof(path), "%s/packs", store_dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	if (stat(path, &st) < 0)
		return errno == ENOENT ? -ENOENT : -errno;
	pthread_mutex_lock(&cache.mu);
	if (fresh || strcmp(cache.dir, store_dir) != 0 || cache.dev != st.st_dev ||
	    cache.ino != st.st_ino || cache.mtim.tv_sec != st.st_mtim.tv_sec ||
	    cache.mtim.tv_nsec != st.st_mtim.tv_nsec) {
		struct fsb_objpack *v;
		size_t n;

		if ((rc = fsb_objpack_list(store_dir, &v, &n)) < 0)
			goto out;
		fsb_objpack_list_free(cache.v, cache.n);
		cache.v = v;
		cache.n = n;
		snprintf(cache.dir, sizeof(cache.dir), "%s", store_dir);
		cache.dev = st.st_dev;
		cache.ino = st.st_ino;
		cache.mtim = st.st_mtim;
	}
	rc = -ENOENT;
	for (size_t i = 0; i < cache.n; i++) {
		const struct fsb_objpack_entry *e = fsb_objpack_find(&cache.v[i], hex);

		if (e != NULL) {
			memcpy(id, cache.v[i].id, 33);
			*ent = *e;
			rc = 0;
			break;
		}
	}
out:
	pthread_mutex_unlock(&cache.mu);
	return rc;
}

/* The stored bytes of `e` from `packfd`, decompressed into `out`. */
static int unpack_entry(int packfd, const struct fsb_objpack_entry *e, int out)
{
	char *in = malloc(CHUNK), *buf = malloc(ZSTD_DStreamOutSize());
	ZSTD_DCtx *dctx = e->zstd ? ZSTD_createDCtx() : NULL;
	uint64_t done = 0, total = 0;
	size_t ret = 1;
	int rc = 0;

	if (in == NULL || buf == NULL || (e->zstd && dctx == NULL)) {
		rc = -ENOMEM;
		goto out;
	}
	while (done < e->len) {
		size_t n = e->len - done < CHUNK ? (size_t)(e->len - done) : CHUNK;
		ZSTD_inBuffer ib = { in, n, 0 };

		if ((rc = pread_full(packfd, in, n, e->off + done)) < 0)
			goto out;
		done += n;
		if (!e->zstd) {
			total += n;
			if ((rc = write_full(out, in, n)) < 0)
				goto out;
			continue;
		}
		while (ib.pos < ib.size) {
			ZSTD_outBuffer ob = { buf, ZSTD_DStreamOutSize(), 0 };

			ret = ZSTD_decompressStream(dctx, &ob, &ib);
			if (ZSTD_isError(ret)) {
				rc = -EBADMSG;
				goto out;
			}
			total += ob.pos;
			if (total > e->raw) {
				rc = -EBADMSG;
				goto out;
			}
			if ((rc = write_full(out, buf, ob.pos)) < 0)
				goto out;
		}
	}
	/* Flush what the frame still holds; ret 0 is its end. */
	while (e->zstd && ret != 0) {
		ZSTD_inBuffer ib = { in, 0, 0 };
		ZSTD_outBuffer ob = { buf, ZSTD_DStreamOutSize(), 0 };

		ret = ZSTD_decompressStream(dctx, &ob, &ib);
		if (ZSTD_isError(ret) || ob.pos == 0) {
			rc = -EBADMSG;
			goto out;
		}
		total += ob.pos;
		if (total > e->raw || (rc = write_full(out, buf, ob.pos)) < 0) {
			rc = rc < 0 ? rc : -EBADMSG;
			goto out;
		}
	}
	if (total != e->raw)
		rc = -EBADMSG;
out:
	ZSTD_freeDCtx(dctx);
	free(in);
	free(buf);
	return rc;
}

int fsb_objpack_open(const char *store_dir, const char *hex)
{
	struct fsb_objpack_entry e;
	char id[33], name[48];
	int dfd = -1, pfd = -1, mfd = -1, rc;

	if (!fsb_backup_object_name_ok(hex))
		return -EINVAL;
	rc = lookup(store_dir, hex, false, id, &e);
	/* packs/'s mtime may not have moved for a pack made within the same
	 * clock tick as the list: a miss looks once more, freshly. */
	if (rc == -ENOENT)
		rc = lookup(store_dir, hex, true, id, &e);
	for (int attempt = 0; rc == 0; attempt++) {
		dfd = packs_dir(store_dir, false);
		snprintf(name, sizeof(name), "%s.pack", id);
		pfd = dfd < 0 ? dfd : openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
					     O_CLOEXEC);
		if (pfd >= 0 || attempt > 0)
			break;
		/* A prune that rewrote the pack since the list was read moved
		 * the object to another: look once more, freshly. */
		if (dfd >= 0)
			close(dfd);
		dfd = -1;
		rc = lookup(store_dir, hex, true, id, &e);
	}
	if (rc < 0)
		goto fail;
	if (pfd < 0) {
		rc = pfd == -1 ? -errno : pfd;
		goto fail;
	}
	mfd = memfd_create("fsb-object", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (mfd < 0) {
		rc = -errno;
		goto fail;
	}
	if ((rc = unpack_entry(pfd, &e, mfd)) < 0)
		goto fail;
	/* Nobody writes a backup read back: sealed, like an object's 0400. */
	fcntl(mfd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL);
	lseek(mfd, 0, SEEK_SET);
	close(pfd);
	close(dfd);
	return mfd;

fail:
	if (mfd >= 0)
		close(mfd);
	if (pfd >= 0)
		close(pfd);
	if (dfd >= 0)
		close(dfd);
	return rc;
}

/* ---- writing ----------------------------------------------------------- */

struct writer {
	int dfd, fd;
	char id[33];
	char tmp_pack[48], tmp_idx[48];
	uint64_t off;
	struct fsb_objpack_entry *v;
	size_t n, cap;
	ZSTD_CCtx *cctx;
};

static int writer_begin(struct writer *w, int dfd)
{
	int rc;

	memset(w, 0, sizeof(*w));
	w->dfd = dfd;
	w->fd = -1;
	if ((rc = random_id(w->id)) < 0)
		return rc;
	snprintf(w->tmp_pack, sizeof(w->tmp_pack), ".tmp-%s.pack", w->id);
	snprintf(w->tmp_idx, sizeof(w->tmp_idx), ".tmp-%s.idx", w->id);
	w->cctx = ZSTD_createCCtx();
	if (w->cctx == NULL)
		return -ENOMEM;
	ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, FSB_OBJPACK_LEVEL);
	ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1);
	w->fd = openat(dfd, w->tmp_pack, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		       0400);
	if (w->fd < 0) {
		rc = -errno;
		ZSTD_freeCCtx(w->cctx);
		w->cctx = NULL;
		return rc;
	}
	if ((rc = write_full(w->fd, PACK_MAGIC, MAGIC_LEN)) < 0)
		return rc;
	w->off = MAGIC_LEN;
	return 0;
}

static void writer_abort(struct writer *w)
{
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
	unlinkat(w->dfd, w->tmp_pack, 0);
	unlinkat(w->dfd, w->tmp_idx, 0);
	ZSTD_freeCCtx(w->cctx);
	w->cctx = NULL;
	free(w->v);
	w->v = NULL;
}

static struct fsb_objpack_entry *writer_slot(struct writer *w)
{
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 64;
		void *v = realloc(w->v, cap * sizeof(*w->v));

		if (v == NULL)
			return NULL;
		w->v = v;
		w->cap = cap;
	}
	return &w->v[w->n];
}

/* Append stored bytes as they are (a rewrite copies entries unchanged). */
static int writer_put(struct writer *w, const struct fsb_objpack_entry *src, const void *buf)
{
	struct fsb_objpack_entry *e = writer_slot(w);
	int rc;

	if (e == NULL)
		return -ENOMEM;
	if ((rc = write_full(w->fd, buf, (size_t)src->len)) < 0)
		return rc;
	*e = *src;
	e->off = w->off;
	w->off += src->len;
	w->n++;
	return 0;
}

/* Append object `hex` of `n` raw bytes, compressed when that is smaller. */
static int writer_add(struct writer *w, const char *hex, const void *raw, size_t n,
		      uint64_t *stored)
{
	size_t bound = ZSTD_compressBound(n), c;
	void *dst = malloc(bound ? bound : 1);
	struct fsb_objpack_entry e = { .raw = n };
	int rc;

	if (dst == NULL)
		return -ENOMEM;
	memcpy(e.hex, hex, sizeof(e.hex));
	c = ZSTD_compress2(w->cctx, dst, bound, raw, n);
	if (!ZSTD_isError(c) && c < n) {
		e.len = c;
		e.zstd = true;
		rc = writer_put(w, &e, dst);
	} else {
		e.len = n;
		rc = writer_put(w, &e, raw);
	}
	if (rc == 0)
		*stored = e.len;
	free(dst);
	return rc;
}

/*
 * Append the object on `src` (`size` bytes), stream-compressed and hashed
 * as it goes. -EBADMSG when it is not `hex`, -E2BIG when it does not
 * shrink (it stays loose, which is its raw form already).
 */
static int writer_add_stream(struct writer *w, const char *hex, int src, uint64_t size)
{
	size_t outsz = ZSTD_CStreamOutSize();
	char *in = malloc(CHUNK), *out = malloc(outsz);
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	struct fsb_objpack_entry *e = writer_slot(w);
	unsigned char dig[32];
	char got[65];
	uint64_t done = 0, len = 0;
	int rc = 0;

	if (in == NULL || out == NULL || md == NULL || e == NULL ||
	    !EVP_DigestInit_ex(md, EVP_sha256(), NULL)) {
		rc = -ENOMEM;
		goto out;
	}
	ZSTD_CCtx_setPledgedSrcSize(w->cctx, size);
	for (;;) {
		size_t n = size - done < CHUNK ? (size_t)(size - done) : CHUNK;
		ZSTD_EndDirective mode = done + n == size ? ZSTD_e_end : ZSTD_e_continue;
		ZSTD_inBuffer ib = { in, n, 0 };
		bool finished = false;

		if (n > 0 && (rc = pread_full(src, in, n, done)) < 0)
			goto out;
		done += n;
		EVP_DigestUpdate(md, in, n);
		while (!finished) {
			ZSTD_outBuffer ob = { out, outsz, 0 };
			size_t left = ZSTD_compressStream2(w->cctx, &ob, &ib, mode);

			if (ZSTD_isError(left)) {
				rc = -EIO;
				goto out;
			}
			if ((rc = write_full(w->fd, out, ob.pos)) < 0)
				goto out;
			len += ob.pos;
			finished = mode == ZSTD_e_end ? left == 0 : ib.pos == ib.size;
		}
		if (mode == ZSTD_e_end)
			break;
	}
	EVP_DigestFinal_ex(md, dig, NULL);
	to_hex(dig, got);
	if (strcmp(got, hex) != 0) {
		rc = -EBADMSG;
		goto out;
	}
	if (len >= size) {
		rc = -E2BIG;
		goto out;
	}
	memcpy(e->hex, hex, sizeof(e->hex));
	e->off = w->off;
	e->len = len;
	e->raw = size;
	e->zstd = true;
	w->off += len;
	w->n++;
out:
	EVP_MD_CTX_free(md);
	free(in);
	free(out);
	return rc;
}

/*
 * Make the pack durable and visible: the pack fsynced, then its index
 * written and fsynced, both renamed into place (pack first: an index never
 * names a pack that is not there), packs/ fsynced. Always fsynced, in a
 * batched store too: the loose copies go right after, and nothing else
 * orders the pack's bytes before their removal.
 */
static int writer_finish(struct writer *w)
{
	char name[48];
	int rc;

	if (w->n > 1)
		qsort(w->v, w->n, sizeof(*w->v), cmp_entry);
	if (fsync(w->fd) < 0)
		return -errno;
	close(w->fd);
	w->fd = -1;
	if ((rc = idx_write(w->dfd, w->tmp_idx, w->v, w->n)) < 0)
		return rc;
	snprintf(name, sizeof(name), "%s.pack", w->id);
	if (renameat(w->dfd, w->tmp_pack, w->dfd, name) < 0)
		return -errno;
	snprintf(name, sizeof(name), "%s.idx", w->id);
	if (renameat(w->dfd, w->tmp_idx, w->dfd, name) < 0)
		return -errno;
	if (fsync(w->dfd) < 0)
		return -errno;
	ZSTD_freeCCtx(w->cctx);
	w->cctx = NULL;
	return 0;
}

/* ---- packing a cycle --------------------------------------------------- */

/* One loose object of the cycle, open, to be packed or dropped. */
struct loose {
	char hex[65];
	int hfd;		/* objects/<hh> */
};

static int hash_buf(const void *buf, size_t n, char *hex)
{
	unsigned char md[32];

	if (EVP_Digest(buf, n, md, NULL, EVP_sha256(), NULL) != 1)
		return -ENOMEM;
	to_hex(md, hex);
	return 0;
}

/* Does a pack of `packs` hold `hex`, and read back as it? */
static bool packed_good(const char *store_dir, const struct fsb_objpack *packs, size_t npacks,
			const char *hex)
{
	bool any = false;
	int fd, rc;

	for (size_t i = 0; i < npacks && !any; i++)
		any = fsb_objpack_find(&packs[i], hex) != NULL;
	if (!any)
		return false;
	fd = fsb_objpack_open(store_dir, hex);
	if (fd < 0)
		return false;
	rc = fsb_backup_object_copy(fd, hex, -1);
	close(fd);
	return rc == 0;
}

/* The distinct copied objects cycle `number` names. */
static int cycle_objects(const char *store_dir, unsigned number, char (**out)[65], size_t *n)
{
	struct fsb_cycle cy;
	char err[PATH_MAX + 256];
	char (*v)[65];
	size_t k = 0;
	int rc;

	*out = NULL;
	*n = 0;
	rc = fsb_cycle_load(store_dir, number, &cy, NULL, err, sizeof(err));
	if (rc < 0)
		return rc;
	v = calloc(cy.nrecs + 1, sizeof(*v));
	if (v == NULL) {
		fsb_cycle_free(&cy);
		return -ENOMEM;
	}
	for (size_t i = 0; i < cy.nrecs; i++) {
		const struct fsb_prior *p = &cy.recs[i].prior;
		bool seen = false;

		/* A kept inode is the file itself, under a name that is not
		 * its hash: it stays where it is. */
		if (p->object[0] == '\0' || p->kept || !fsb_backup_object_name_ok(p->object))
			continue;
		for (size_t j = 0; j < k && !seen; j++)
			seen = strcmp(v[j], p->object) == 0;
		if (!seen)
			snprintf(v[k++], sizeof(*v), "%s", p->object);
	}
	fsb_cycle_free(&cy);
	*out = v;
	*n = k;
	return 0;
}

int fsb_objpack_cycle(const char *store_dir, unsigned number, struct fsb_objpack_stats *out)
{
	struct fsb_objpack_stats st = { 0 };
	struct fsb_objpack *packs = NULL;
	struct writer w = { .fd = -1 };
	struct loose *done = NULL;
	char (*objs)[65] = NULL, path[PATH_MAX];
	size_t nobjs = 0, npacks = 0, ndone = 0;
	char *buf = NULL;
	int objfd = -1, dfd = -1, rc;
	bool small_open = false;

	if ((rc = cycle_objects(store_dir, number, &objs, &nobjs)) < 0 || nobjs == 0)
		goto out;
	snprintf(path, sizeof(path), "%s/objects", store_dir);
	objfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (objfd < 0) {
		rc = errno == ENOENT ? 0 : -errno;
		goto out;
	}
	if ((rc = dfd = packs_dir(store_dir, true)) < 0)
		goto out;
	if ((rc = fsb_objpack_list(store_dir, &packs, &npacks)) < 0)
		goto out;
	done = calloc(nobjs, sizeof(*done));
	buf = malloc(FSB_OBJPACK_SMALL);
	if (done == NULL || buf == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nobjs; i++) {
		char hh[3] = { objs[i][0], objs[i][1], '\0' }, got[65];
		struct writer big = { .fd = -1 };
		struct stat sb;
		uint64_t stored = 0;
		int hfd, fd;

		hfd = openat(objfd, hh, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (hfd < 0)
			continue;
		fd = openat(hfd, objs[i], O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		/* Only a plain object with one name: anything else is not a
		 * copy this store made, and is left for a restore to judge. */
		if (fd < 0 || fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_nlink != 1) {
			if (fd >= 0)
				close(fd);
			close(hfd);
			continue;
		}
		if (packed_good(store_dir, packs, npacks, objs[i])) {
			st.already++;
			rc = 0;
		} else if ((uint64_t)sb.st_size < FSB_OBJPACK_SMALL) {
			rc = pread_full(fd, buf, (size_t)sb.st_size, 0);
			if (rc == 0 && (rc = hash_buf(buf, (size_t)sb.st_size, got)) == 0 &&
			    strcmp(got, objs[i]) != 0)
				rc = -EBADMSG;
			if (rc == 0 && !small_open) {
				if ((rc = writer_begin(&w, dfd)) < 0) {
					writer_abort(&w);
					close(fd);
					close(hfd);
					goto out;
				}
				small_open = true;
			}
			if (rc == 0 && (rc = writer_add(&w, objs[i], buf, (size_t)sb.st_size,
						       &stored)) < 0) {
				close(fd);
				close(hfd);
				goto out;
			}
		} else {
			/* A large object is a pack of its own, made durable
			 * and its loose copy removed at once. */
			rc = writer_begin(&big, dfd);
			if (rc == 0)
				rc = writer_add_stream(&big, objs[i], fd, (uint64_t)sb.st_size);
			if (rc == 0)
				rc = writer_finish(&big);
			if (rc == 0) {
				stored = big.v[0].len;
				free(big.v);
				big.v = NULL;
			} else {
				writer_abort(&big);
			}
			if (rc == 0 && unlinkat(hfd, objs[i], 0) < 0)
				rc = -errno;
			if (rc == 0) {
				st.packed++;
				st.raw += (uint64_t)sb.st_size;
				st.stored += stored;
			}
			close(fd);
			close(hfd);
			continue;
		}
		close(fd);
		if (rc < 0) {
			close(hfd);	/* damaged or unreadable: left loose */
			continue;
		}
		if (stored > 0 || sb.st_size == 0) {
			st.raw += (uint64_t)sb.st_size;
			st.stored += stored;
		}
		memcpy(done[ndone].hex, objs[i], 65);
		done[ndone++].hfd = hfd;
	}
	rc = 0;
	if (small_open) {
		if ((rc = writer_finish(&w)) < 0)
			goto out;
		free(w.v);
		w.v = NULL;
		small_open = false;
	}
	/* The pack is on disk and indexed: the loose copies can go. */
	for (size_t i = 0; i < ndone; i++) {
		if (unlinkat(done[i].hfd, done[i].hex, 0) < 0 && rc == 0 && errno != ENOENT)
			rc = -errno;
	}
	st.packed += ndone - st.already;
out:
	if (small_open)
		writer_abort(&w);	/* nothing of it is named: loose copies stay */
	for (size_t i = 0; done != NULL && i < ndone; i++)
		close(done[i].hfd);
	free(done);
	free(buf);
	free(objs);
	fsb_objpack_list_free(packs, npacks);
	if (dfd >= 0)
		close(dfd);
	if (objfd >= 0)
		close(objfd);
	if (out != NULL)
		*out = st;
	return rc;
}

/* ---- rewriting and cleaning -------------------------------------------- */

int fsb_objpack_rewrite(const char *store_dir, const struct fsb_objpack *p, const bool *keep,
			uint64_t *freed)
{
	struct writer w = { .fd = -1 };
	uint64_t after = 0;
	char name[48];
	char *buf = NULL;
	size_t nkeep = 0;
	int dfd, pfd = -1, rc = 0;

	*freed = 0;
	for (size_t i = 0; i < p->n; i++)
		nkeep += keep[i];
	if (nkeep == p->n)
		return 0;
	if ((dfd = packs_dir(store_dir, false)) < 0)
		return dfd;
	if (nkeep > 0) {
		snprintf(name, sizeof(name), "%s.pack", p->id);
		pfd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (pfd < 0) {
			rc = -errno;
			goto out;
		}
		if ((rc = writer_begin(&w, dfd)) < 0)
			goto abort;
		for (size_t i = 0; i < p->n; i++) {
			if (!keep[i])
				continue;
			free(buf);
			buf = malloc(p->v[i].len ? (size_t)p->v[i].len : 1);
			if (buf == NULL) {
				rc = -ENOMEM;
				goto abort;
			}
			if ((rc = pread_full(pfd, buf, (size_t)p->v[i].len, p->v[i].off)) < 0 ||
			    (rc = writer_put(&w, &p->v[i], buf)) < 0)
				goto abort;
		}
		if ((rc = writer_finish(&w)) < 0)
			goto abort;
		after = w.off + IDX_HEAD + w.n * IDX_ENT + IDX_TAIL;
		free(w.v);
		w.v = NULL;
	}
	/* The index first: without it the pack is a leftover no reader
	 * believes, which the next clean removes. */
	snprintf(name, sizeof(name), "%s.idx", p->id);
	if (unlinkat(dfd, name, 0) < 0) {
		rc = -errno;
		goto out;
	}
	snprintf(name, sizeof(name), "%s.pack", p->id);
	if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT) {
		rc = -errno;
		goto out;
	}
	fsync(dfd);
	*freed = p->bytes > after ? p->bytes - after : 0;
	goto out;

abort:
	writer_abort(&w);
out:
	free(buf);
	if (pfd >= 0)
		close(pfd);
	close(dfd);
	return rc;
}

void fsb_objpack_clean(const char *store_dir)
{
	struct dirent *de;
	DIR *d;
	int dfd = packs_dir(store_dir, false);

	if (dfd < 0)
		return;
	d = fdopendir(dfd);
	if (d == NULL) {
		close(dfd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);
		char idx[48];

		if (strncmp(de->d_name, ".tmp-", 5) == 0) {
			unlinkat(dirfd(d), de->d_name, 0);
			continue;
		}
		if (len != 37 || strcmp(de->d_name + 32, ".pack") != 0 || !id_ok(de->d_name, 32))
			continue;
		snprintf(idx, sizeof(idx), "%.32s.idx", de->d_name);
		if (faccessat(dirfd(d), idx, F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
			unlinkat(dirfd(d), de->d_name, 0);
	}
	closedir(d);
}
