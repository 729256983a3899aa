/*
 * backup_prune.c — prune a backup store (see backup_prune.h): choose the
 * sealed cycles that go by count, age or the store's size, remove them so
 * that a crash cannot leave half a cycle that still looks sealed, then
 * remove the objects no remaining cycle names.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backup_prune.h"
#include "backup_read.h"
#include "object_pack.h"

#define HEXLEN FSB_SHA256_HEX_LEN

struct hexset {
	char (*v)[HEXLEN + 1];
	size_t n, cap;
};

/* One object, loose in objects/<hh>/ or packed (or both, after a crash
 * while packing), and how many cycles that stay name it. */
struct obj {
	char hex[HEXLEN + 1];
	uint64_t size;		/* its bytes in the store, loose and packed; 0 for a
				 * loose name that is not a regular file */
	uint64_t loose_size;
	bool loose;		/* a file objects/<hh>/<hex> */
	unsigned refs;
};

struct cyc {
	unsigned num;
	bool sealed;		/* sealed or recovered, and loaded */
	bool drop;
	int refs_err;		/* 0: `refs` is every object its journal names */
	char *sealed_at;
	uint64_t bytes;		/* its own files: journal, cycle.json */
	size_t *refs;		/* indices into objs, each once */
	size_t nrefs;
};

struct pruner {
	const struct fsb_prune_opts *o;
	struct fsb_prune_result *res;
	const char *dir;
	int rootfd, cycfd;
	int rc;			/* the first failure */
	struct obj *objs;	/* sorted by name, each once */
	size_t nobjs, objcap;
	struct fsb_objpack *packs;	/* the packs with a valid index */
	size_t npacks;
	struct cyc *cy;		/* ascending by number */
	size_t n;
};

static void say(const struct pruner *p, enum fsb_prune_msg kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int raw_size(const char *store_dir, uint64_t *out);

static void say(const struct pruner *p, enum fsb_prune_msg kind, const char *fmt, ...)
{
	char msg[PATH_MAX + 512];
	va_list ap;

	if (p->o->report == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	p->o->report(p->o->arg, kind, msg);
}

static void failed(struct pruner *p, int rc)
{
	if (p->rc == 0)
		p->rc = rc;
}

/* Bytes of the regular files in the tree `name` under `dfd`; with `remove`
 * the tree is deleted too. Returns 0 or -errno (the first failure). */
static int tree_walk(int dfd, const char *name, bool remove, uint64_t *bytes)
{
	struct stat st;
	struct dirent *de;
	DIR *d;
	int fd, rc = 0;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode)) {
		if (S_ISREG(st.st_mode))
			*bytes += (uint64_t)st.st_size;
		if (remove && unlinkat(dfd, name, 0) < 0)
			return -errno;
		return 0;
	}
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (d == NULL) {
		rc = -errno;
		close(fd);
		return rc;
	}
	while ((de = readdir(d)) != NULL) {
		int r;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		r = tree_walk(fd, de->d_name, remove, bytes);
		if (r < 0 && rc == 0)
			rc = r;
	}
	closedir(d);
	if (remove && rc == 0 && unlinkat(dfd, name, AT_REMOVEDIR) < 0)
		rc = -errno;
	return rc;
}

static bool is_lhex(char ch)
{
	return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f');
}

/*
 * Every run of exactly 64 lowercase hex digits in `text`: a superset of the
 * objects the journal names, so that even a line that cannot be parsed
 * keeps its object.
 */
static int hexset_scan(struct hexset *h, const char *text, size_t len)
{
	size_t i = 0;

	while (i < len) {
		size_t j = i;

		while (j < len && is_lhex(text[j]))
			j++;
		if (j - i == HEXLEN) {
			if (h->n == h->cap) {
				size_t cap = h->cap ? h->cap * 2 : 64;
				void *v = realloc(h->v, cap * sizeof(*h->v));

				if (v == NULL)
					return -ENOMEM;
				h->v = v;
				h->cap = cap;
			}
			memcpy(h->v[h->n], text + i, HEXLEN);
			h->v[h->n++][HEXLEN] = '\0';
		}
		i = j > i ? j : i + 1;
	}
	return 0;
}

static int hex_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* The objects the journal of cycle `num` names, added to `h`. A cycle
 * without a journal names none. Returns 0 or -errno. */
static int cycle_refs(int cycfd, unsigned num, struct hexset *h)
{
	char name[32];
	struct stat st;
	char *buf;
	size_t len = 0;
	int fd, rc = 0;

	snprintf(name, sizeof(name), "%u/journal.jsonl", num);
	fd = openat(cycfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		rc = S_ISREG(st.st_mode) ? -errno : -ENXIO;
		close(fd);
		return rc;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (buf == NULL) {
		close(fd);
		return -ENOMEM;
	}
	while (len < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + len, (size_t)st.st_size - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			break;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (rc == 0)
		rc = hexset_scan(h, buf, len);
	free(buf);
	return rc;
}

/* RFC 3339 UTC ("2026-11-29T20:03:04.005Z") to seconds, or -1. */
static time_t parse_utc(const char *s)
{
	struct tm tm;
	const char *end;

	memset(&tm, 0, sizeof(tm));
	end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (end == NULL)
		return -1;
	if (*end == '.')
		for (end++; *end >= '0' && *end <= '9'; end++)
			;
	if (strcmp(end, "Z") != 0)
		return -1;
	return timegm(&tm);
}

static int obj_cmp(const void *a, const void *b)
{
	return strcmp(((const struct obj *)a)->hex, ((const struct obj *)b)->hex);
}

static int obj_key_cmp(const void *key, const void *b)
{
	return strcmp(key, ((const struct obj *)b)->hex);
}

/* Add every entry of every pack to p->objs, as not loose. */
static int packed_list(struct pruner *p)
{
	size_t total = p->nobjs;
	int rc = fsb_objpack_list(p->dir, &p->packs, &p->npacks);

	if (rc < 0)
		return rc;
	for (size_t i = 0; i < p->npacks; i++)
		total += p->packs[i].n;
	if (total > p->objcap) {
		void *v = realloc(p->objs, total * sizeof(*p->objs));

		if (v == NULL)
			return -ENOMEM;
		p->objs = v;
		p->objcap = total;
	}
	for (size_t i = 0; i < p->npacks; i++) {
		for (size_t k = 0; k < p->packs[i].n; k++) {
			struct obj *o = &p->objs[p->nobjs++];

			memcpy(o->hex, p->packs[i].v[k].hex, sizeof(o->hex));
			o->size = p->packs[i].v[k].len;
			o->loose_size = 0;
			o->loose = false;
			o->refs = 0;
		}
	}
	return 0;
}

/* One obj per name (sorted): the copies of an object, loose and in packs,
 * count together and go together. */
static int merge_copies(struct pruner *p)
{
	size_t w = 0;

	for (size_t i = 0; i < p->nobjs; i++) {
		if (w > 0 && strcmp(p->objs[w - 1].hex, p->objs[i].hex) == 0) {
			struct obj *o = &p->objs[w - 1];

			o->size += p->objs[i].size;
			o->loose_size += p->objs[i].loose_size;
			o->loose = o->loose || p->objs[i].loose;
			continue;
		}
		p->objs[w++] = p->objs[i];
	}
	p->nobjs = w;
	return 0;
}

/* Every object under objects/<hh>/ with its size, sorted by name. Only
 * names an object can have: a `.tmp-*` is the core's to clean. */
static int objects_list(struct pruner *p)
{
	struct dirent *de;
	DIR *d;
	int objfd, rc = 0;

	objfd = openat(p->rootfd, "objects", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (objfd < 0)
		return errno == ENOENT ? 0 : -errno;
	d = fdopendir(objfd);
	if (d == NULL) {
		rc = -errno;
		close(objfd);
		return rc;
	}
	while (rc == 0 && (de = readdir(d)) != NULL) {
		struct dirent *oe;
		DIR *sd;
		int hfd;

		if (strlen(de->d_name) != 2 || !is_lhex(de->d_name[0]) || !is_lhex(de->d_name[1]))
			continue;
		hfd = openat(objfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (hfd < 0)
			continue;
		sd = fdopendir(hfd);
		if (sd == NULL) {
			close(hfd);
			continue;
		}
		while ((oe = readdir(sd)) != NULL) {
			struct stat st;
			struct obj *o;

			if (!fsb_backup_object_name_ok(oe->d_name) ||
			    strncmp(oe->d_name, de->d_name, 2) != 0 ||
			    fstatat(hfd, oe->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			if (p->nobjs == p->objcap) {
				size_t cap = p->objcap ? 2 * p->objcap : 64;
				void *v = realloc(p->objs, cap * sizeof(*p->objs));

				if (v == NULL) {
					rc = -ENOMEM;
					break;
				}
				p->objs = v;
				p->objcap = cap;
			}
			o = &p->objs[p->nobjs++];
			memcpy(o->hex, oe->d_name, sizeof(o->hex));
			o->size = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
			o->loose_size = o->size;
			o->loose = true;
			o->refs = 0;
		}
		closedir(sd);
	}
	closedir(d);
	if (rc == 0)
		rc = packed_list(p);
	if (p->nobjs > 0)
		qsort(p->objs, p->nobjs, sizeof(*p->objs), obj_cmp);
	return rc < 0 ? rc : merge_copies(p);
}

/* The objects cycle `c` names, as indices into p->objs, each once. A name
 * with no object behind it (a missing one) takes no room and frees none. */
static int cycle_scan(struct pruner *p, struct cyc *c)
{
	struct hexset h = { 0 };
	int rc;

	rc = cycle_refs(p->cycfd, c->num, &h);
	if (rc == 0 && h.n > 0) {
		qsort(h.v, h.n, sizeof(*h.v), hex_cmp);
		c->refs = malloc(h.n * sizeof(*c->refs));
		if (c->refs == NULL)
			rc = -ENOMEM;
	}
	for (size_t i = 0; rc == 0 && i < h.n; i++) {
		const struct obj *o;

		if (i > 0 && strcmp(h.v[i], h.v[i - 1]) == 0)
			continue;
		o = p->nobjs == 0 ? NULL
		    : bsearch(h.v[i], p->objs, p->nobjs, sizeof(*p->objs), obj_key_cmp);
		if (o != NULL)
			c->refs[c->nrefs++] = (size_t)(o - p->objs);
	}
	free(h.v);
	return rc;
}

/* The store's size with the cycles not dropped: their own files and the
 * objects they name. Leaves in each object how many of them name it. */
static uint64_t store_size(struct pruner *p)
{
	uint64_t total = 0;

	for (size_t i = 0; i < p->nobjs; i++)
		p->objs[i].refs = 0;
	for (size_t i = 0; i < p->n; i++) {
		const struct cyc *c = &p->cy[i];

		if (c->drop)
			continue;
		total += c->bytes;
		for (size_t k = 0; k < c->nrefs; k++)
			if (p->objs[c->refs[k]].refs++ == 0)
				total += p->objs[c->refs[k]].size;
	}
	return total;
}

/* Every cycle's journal was read: the store's size can be known. */
static bool all_refs_known(const struct pruner *p, bool dropped_too)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->cy[i].refs_err != 0 && (dropped_too || !p->cy[i].drop))
			return false;
	return true;
}

/* Drop the oldest sealed cycles below `spare_from` until the store holds at
 * most o->max_bytes. */
static void select_by_size(struct pruner *p, size_t spare_from)
{
	uint64_t total, max = p->o->max_bytes;

	for (size_t i = 0; i < p->n; i++) {
		const struct cyc *c = &p->cy[i];

		if (c->drop || c->refs_err == 0)
			continue;
		say(p, FSB_PRUNE_ERROR, "cannot read the journal of cycle %u (%s): the store's "
		    "size is not known, so no cycle is removed to bring it down to %llu bytes",
		    c->num, strerror(-c->refs_err), (unsigned long long)max);
		failed(p, c->refs_err);
		return;
	}
	total = store_size(p);
	for (size_t i = 0; i < spare_from && total > max; i++) {
		struct cyc *c = &p->cy[i];

		if (!c->sealed || c->drop)
			continue;
		c->drop = true;
		total -= c->bytes;
		/* An object goes with the last remaining cycle that names it. */
		for (size_t k = 0; k < c->nrefs; k++)
			if (--p->objs[c->refs[k]].refs == 0)
				total -= p->objs[c->refs[k]].size;
	}
}

static void select_cycles(struct pruner *p)
{
	const struct fsb_prune_opts *o = p->o;
	size_t spare_from = p->n, nsealed = 0, ndrop = 0;
	unsigned left = o->spare_newest;

	for (size_t i = p->n; i-- > 0 && left > 0;) {
		if (p->cy[i].sealed) {
			spare_from = i;
			left--;
		}
	}
	for (size_t i = 0; i < p->n; i++)
		nsealed += p->cy[i].sealed;
	if (o->keep >= 0) {
		size_t over = nsealed > (size_t)o->keep ? nsealed - (size_t)o->keep : 0;

		for (size_t i = 0; i < spare_from && ndrop < over; i++) {
			if (p->cy[i].sealed) {
				p->cy[i].drop = true;
				ndrop++;
			}
		}
	}
	if (o->older_than >= 0) {
		time_t cutoff = time(NULL) - (time_t)o->older_than * 86400;

		for (size_t i = 0; i < spare_from; i++) {
			struct cyc *c = &p->cy[i];
			time_t t;

			if (!c->sealed || c->drop)
				continue;
			t = parse_utc(c->sealed_at);
			if (t < 0) {
				say(p, FSB_PRUNE_NOTE, "cycle %u has no readable sealing time ('%s'); "
				    "kept", c->num, c->sealed_at);
				continue;
			}
			c->drop = t < cutoff;
		}
	}
	if (o->max_bytes != FSB_PRUNE_NO_LIMIT)
		select_by_size(p, spare_from);
}

/* A prune that was interrupted: finish removing what it renamed. */
static void finish_interrupted(struct pruner *p)
{
	struct dirent *de;
	/* Its own open file: a dup would share cycfd's read position, and
	 * without O_CLOEXEC could reach a sandbox the core starts meanwhile. */
	int dfd = openat(p->cycfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;

	if (d == NULL) {
		if (dfd >= 0)
			close(dfd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		uint64_t b = 0;
		int rc;

		if (strncmp(de->d_name, ".pruning-", 9) != 0)
			continue;
		rc = tree_walk(p->cycfd, de->d_name, true, &b);
		if (rc < 0) {
			say(p, FSB_PRUNE_ERROR, "cannot remove cycles/%s: %s", de->d_name,
			    strerror(-rc));
			failed(p, rc);
			continue;
		}
		say(p, FSB_PRUNE_REMOVED, "removed cycles/%s, left by an interrupted prune "
		    "(%llu bytes)", de->d_name, (unsigned long long)b);
		p->res->bytes += b;
	}
	closedir(d);
}

static void remove_cycles(struct pruner *p)
{
	const char *would = p->o->dry_run ? "would remove" : "removed";

	for (size_t i = 0; i < p->n; i++) {
		struct cyc *c = &p->cy[i];
		char name[32], tmp[48];
		uint64_t b = 0;
		int rc;

		if (!c->drop)
			continue;
		snprintf(name, sizeof(name), "%u", c->num);
		snprintf(tmp, sizeof(tmp), ".pruning-%u", c->num);
		if (p->o->dry_run) {
			rc = tree_walk(p->cycfd, name, false, &b);
		} else if (renameat(p->cycfd, name, p->cycfd, tmp) < 0) {
			rc = -errno;
		} else {
			/* From here on the cycle is gone: a crash leaves a
			 * `.pruning-<n>` that the next prune removes, never a half
			 * cycle that still looks sealed. */
			fsync(p->cycfd);
			rc = tree_walk(p->cycfd, tmp, true, &b);
			fsync(p->cycfd);
		}
		if (rc < 0) {
			say(p, FSB_PRUNE_ERROR, "cannot remove cycle %u: %s", c->num, strerror(-rc));
			failed(p, rc);
			/* Renamed or not, its objects are kept this time. */
			if (!p->o->dry_run &&
			    faccessat(p->cycfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
				c->drop = false;
			if (!c->drop)
				continue;
		}
		say(p, FSB_PRUNE_REMOVED, "%s cycle %u (sealed %s, %llu bytes)", would, c->num,
		    c->sealed_at, (unsigned long long)b);
		if (p->o->cycle_gone != NULL)
			p->o->cycle_gone(p->o->arg, c->num);
		p->res->cycles++;
		p->res->bytes += b;
	}
}

/* The packed objects no remaining cycle names: a pack holding only such
 * goes, one holding some is rewritten with the rest (fsb_objpack_rewrite
 * writes the new pack and its index before the old ones go). */
static void remove_packed(struct pruner *p)
{
	for (size_t i = 0; i < p->npacks; i++) {
		const struct fsb_objpack *pk = &p->packs[i];
		bool *keep = calloc(pk->n + 1, sizeof(*keep));
		size_t dead = 0;
		uint64_t freed = 0, dead_bytes = 0;
		int rc;

		if (keep == NULL) {
			failed(p, -ENOMEM);
			return;
		}
		for (size_t k = 0; k < pk->n; k++) {
			const struct obj *o = bsearch(pk->v[k].hex, p->objs, p->nobjs,
						      sizeof(*p->objs), obj_key_cmp);

			keep[k] = o != NULL && o->refs > 0;
			if (!keep[k]) {
				dead++;
				dead_bytes += pk->v[k].len;
				/* Counted once: with the loose copy when it had one. */
				if (o != NULL && !o->loose)
					p->res->objects++;
			}
		}
		if (dead > 0 && p->o->dry_run) {
			p->res->bytes += dead == pk->n ? pk->bytes : dead_bytes;
		} else if (dead > 0) {
			rc = fsb_objpack_rewrite(p->dir, pk, keep, &freed);
			if (rc < 0) {
				say(p, FSB_PRUNE_ERROR, "cannot rewrite pack %s: %s", pk->id,
				    strerror(-rc));
				failed(p, rc);
			}
			p->res->bytes += freed;
		}
		free(keep);
	}
}

/* Remove (or only count) the objects no remaining cycle names. Objects go
 * only after the cycles that named them, so a crash in between leaves
 * objects no cycle names, never a cycle naming a missing object. */
static void remove_objects(struct pruner *p)
{
	int objfd;

	for (size_t i = 0; i < p->n; i++) {
		const struct cyc *c = &p->cy[i];

		if (c->drop || c->refs_err == 0)
			continue;
		say(p, FSB_PRUNE_ERROR, "cannot read the journal of cycle %u (%s): no object is "
		    "removed, as the ones it needs are not known", c->num, strerror(-c->refs_err));
		failed(p, c->refs_err);
		return;
	}
	store_size(p);
	objfd = openat(p->rootfd, "objects", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (objfd < 0)
		return;
	for (size_t i = 0; i < p->nobjs;) {
		char hh[3] = { p->objs[i].hex[0], p->objs[i].hex[1], '\0' };
		bool removed = false;
		size_t j;
		int hfd = -1;

		for (j = i; j < p->nobjs && strncmp(p->objs[j].hex, hh, 2) == 0; j++) {
			if (p->objs[j].refs > 0 || !p->objs[j].loose)
				continue;
			if (!p->o->dry_run) {
				if (hfd < 0)
					hfd = openat(objfd, hh, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
						     O_CLOEXEC);
				if (hfd < 0 || unlinkat(hfd, p->objs[j].hex, 0) < 0) {
					int rc = -errno;

					say(p, FSB_PRUNE_ERROR, "cannot remove object %s: %s",
					    p->objs[j].hex, strerror(-rc));
					failed(p, rc);
					continue;
				}
			}
			removed = true;
			p->res->objects++;
			p->res->bytes += p->objs[j].loose_size;
		}
		if (hfd >= 0) {
			if (removed)
				fsync(hfd);
			close(hfd);
			/* Fails, harmlessly, while objects are left in it. */
			if (removed)
				unlinkat(objfd, hh, AT_REMOVEDIR);
		}
		i = j;
		if (p->o->objects_step != NULL)
			p->o->objects_step(p->o->arg, i, p->nobjs);
	}
	if (!p->o->dry_run)
		fsync(objfd);
	close(objfd);
	remove_packed(p);
}

/* Load cycles `nums` into p->cy: sealed or not, when sealed, the objects
 * each names (cycle_scan) and the bytes of its own files. Only -ENOMEM
 * stops it; a cycle that cannot be loaded is reported and kept. */
static int load_cycles(struct pruner *p, const unsigned *nums, size_t n)
{
	int rc;

	p->cy = calloc(n + 1, sizeof(*p->cy));
	if (p->cy == NULL) {
		failed(p, -ENOMEM);
		return -ENOMEM;
	}
	p->n = n;
	for (size_t i = 0; i < n; i++) {
		struct cyc *c = &p->cy[i];
		char err[PATH_MAX + 256], name[16];
		struct fsb_cycle cy;

		c->num = nums[i];
		/* A cycle that cannot be loaded is kept: it is not known to be
		 * sealed. Its journal's objects are kept with it. */
		rc = fsb_cycle_load(p->dir, c->num, &cy, NULL, err, sizeof(err));
		if (rc < 0) {
			say(p, FSB_PRUNE_ERROR, "%s", err);
			failed(p, rc);
		} else {
			if (cy.state != FSB_CYCLE_OPEN) {
				c->sealed = true;
				p->res->sealed++;
				c->sealed_at = strdup(cy.sealed);
			}
			fsb_cycle_free(&cy);
			if (c->sealed && c->sealed_at == NULL) {
				failed(p, -ENOMEM);
				return -ENOMEM;
			}
		}
		c->refs_err = cycle_scan(p, c);
		snprintf(name, sizeof(name), "%u", c->num);
		tree_walk(p->cycfd, name, false, &c->bytes);
	}
	return 0;
}

/*
 * Open the store and load what prune and du judge: its cycles (finishing
 * an interrupted prune first, unless a dry run), every object with its
 * size, and which cycles name which. 1 when there is no store or no
 * cycles directory (nothing to judge), 0 when loaded, or -errno (reported).
 */
static int store_load(struct pruner *p)
{
	unsigned *nums = NULL;
	size_t n = 0;
	int rc;

	p->rootfd = open(p->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (p->rootfd < 0) {
		if (errno == ENOENT)
			return 1;
		rc = -errno;
		say(p, FSB_PRUNE_ERROR, "cannot open %s: %s", p->dir, strerror(-rc));
		return rc;
	}
	p->cycfd = openat(p->rootfd, "cycles", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (p->cycfd < 0) {
		if (errno == ENOENT)
			return 1;
		rc = -errno;
		say(p, FSB_PRUNE_ERROR, "cannot open %s/cycles: %s", p->dir, strerror(-rc));
		return rc;
	}
	if (!p->o->dry_run) {
		finish_interrupted(p);
		fsb_objpack_clean(p->dir);
	}
	rc = fsb_cycles_list(p->dir, &nums, &n);
	if (rc < 0) {
		say(p, FSB_PRUNE_ERROR, "cannot read %s/cycles: %s", p->dir, strerror(-rc));
		return rc;
	}
	rc = objects_list(p);
	if (rc < 0) {
		say(p, FSB_PRUNE_ERROR, "cannot read %s/objects: %s", p->dir, strerror(-rc));
		free(nums);
		return rc;
	}
	rc = load_cycles(p, nums, n);
	free(nums);
	return rc;
}

static void pruner_free(struct pruner *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->cy[i].sealed_at);
		free(p->cy[i].refs);
	}
	free(p->cy);
	free(p->objs);
	fsb_objpack_list_free(p->packs, p->npacks);
	if (p->cycfd >= 0)
		close(p->cycfd);
	if (p->rootfd >= 0)
		close(p->rootfd);
}

int fsb_backup_prune(const char *store_dir, const struct fsb_prune_opts *o,
		     struct fsb_prune_result *res)
{
	struct pruner p = { .o = o, .res = res, .dir = store_dir, .rootfd = -1, .cycfd = -1 };
	bool sized;
	int rc;

	memset(res, 0, sizeof(*res));
	rc = store_load(&p);
	if (rc != 0) {
		if (rc < 0)
			failed(&p, rc);
		goto out;
	}
	sized = all_refs_known(&p, true);
	if (sized)
		res->size_before = store_size(&p);
	select_cycles(&p);
	remove_cycles(&p);
	remove_objects(&p);
	if (sized) {
		res->sized = true;
		res->size_after = store_size(&p);
	}
out:
	pruner_free(&p);
	return p.rc;
}

int fsb_backup_du(const char *store_dir, struct fsb_du *out)
{
	struct fsb_prune_opts o = { .keep = -1, .older_than = -1,
				    .max_bytes = FSB_PRUNE_NO_LIMIT, .dry_run = true };
	struct fsb_prune_result res = { 0 };
	struct pruner p = { .o = &o, .res = &res, .dir = store_dir, .rootfd = -1, .cycfd = -1 };
	int rc;

	memset(out, 0, sizeof(*out));
	rc = store_load(&p);
	if (rc != 0)
		goto out;
	if (!all_refs_known(&p, true)) {
		rc = -EBADMSG;	/* a journal that cannot be read: sizes unknown */
		goto out;
	}
	out->v = calloc(p.n + 1, sizeof(*out->v));
	if (out->v == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	out->bytes = store_size(&p);	/* leaves in each object how many name it */
	for (size_t i = 0; i < p.n; i++) {
		const struct cyc *c = &p.cy[i];
		struct fsb_du_cycle *d = &out->v[out->n++];

		d->number = c->num;
		d->sealed = c->sealed;
		d->files = c->bytes;
		for (size_t k = 0; k < c->nrefs; k++) {
			const struct obj *ob = &p.objs[c->refs[k]];

			if (ob->refs == 1) {
				d->own += ob->size;
				d->nown++;
			} else {
				d->shared += ob->size;
				d->nshared++;
			}
		}
		/* What its prune frees: its own files and the objects no
		 * other cycle names; a sealed cycle only (prune keeps an
		 * open one). */
		d->frees = c->sealed ? d->files + d->own : 0;
	}
	for (size_t i = 0; i < p.nobjs; i++) {
		if (p.objs[i].refs == 0)
			out->unreferenced += p.objs[i].size;
		out->objects++;
	}
	raw_size(store_dir, &out->disk);
out:
	pruner_free(&p);
	if (rc < 0)
		fsb_du_free(out);
	return rc < 0 ? rc : 0;
}

void fsb_du_free(struct fsb_du *d)
{
	free(d->v);
	memset(d, 0, sizeof(*d));
}

/* Everything under the store: never less than what fsb_backup_prune counts. */
static int raw_size(const char *store_dir, uint64_t *out)
{
	int fd, rc = 0;

	*out = 0;
	fd = open(store_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	static const char *const parts[] = { "objects", "packs", "cycles" };

	for (size_t i = 0; i < 3 && rc == 0; i++) {
		rc = tree_walk(fd, parts[i], false, out);
		if (rc == -ENOENT)
			rc = 0;
	}
	close(fd);
	return rc;
}

int fsb_backup_prune_to(const char *store_dir, uint64_t max_bytes, bool dry_run,
			fsb_prune_report_fn *report, void *arg)
{
	struct fsb_prune_opts o = {
		.keep = -1, .older_than = -1, .max_bytes = max_bytes, .spare_newest = 1,
		.dry_run = dry_run, .report = report, .arg = arg,
	};
	struct fsb_prune_result res;
	uint64_t raw;
	int rc;

	/* Under the quota counting every file, the store is under it for sure,
	 * and no journal needs reading: the common case after a commit. */
	if (raw_size(store_dir, &raw) == 0 && raw <= max_bytes)
		return 0;
	rc = fsb_backup_prune(store_dir, &o, &res);
	if (res.sized && res.size_after > max_bytes && report != NULL) {
		char msg[256];

		snprintf(msg, sizeof(msg), "the backup store holds %llu bytes, over its quota of "
			 "%llu: the newest sealed cycle and the open one are kept",
			 (unsigned long long)res.size_after, (unsigned long long)max_bytes);
		report(arg, FSB_PRUNE_NOTE, msg);
	}
	return rc;
}

int fsb_parse_size(const char *s, uint64_t *out)
{
	uint64_t v = 0, mul = 1;
	const char *p = s;

	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	switch (*p) {
	case '\0':
		break;
	case 'K': case 'k':
		mul = UINT64_C(1) << 10;
		break;
	case 'M': case 'm':
		mul = UINT64_C(1) << 20;
		break;
	case 'G': case 'g':
		mul = UINT64_C(1) << 30;
		break;
	case 'T': case 't':
		mul = UINT64_C(1) << 40;
		break;
	default:
		return -EINVAL;
	}
	if (*p != '\0' && p[1] != '\0')
		return -EINVAL;
	if (v > UINT64_MAX / mul)
		return -ERANGE;
	*out = v * mul;
	return 0;
}
