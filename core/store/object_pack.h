/*
 * object_pack.h — object packs of the backup store (docs/backup-store.md,
 * "Object packs"): after a cycle is sealed its copied objects move, zstd
 * compressed, out of objects/<hh>/ into packs/<id>.pack with an index
 * packs/<id>.idx; readers find an object loose or in a pack, by the same
 * SHA-256 name. Nothing here runs on a change's path.
 */
#ifndef FSB_OBJECT_PACK_H
#define FSB_OBJECT_PACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Objects smaller than this share one pack per cycle; larger ones get a
 * pack of their own (so a prune drops it whole, never rewrites it). */
#define FSB_OBJPACK_SMALL (64 * 1024)
/* The zstd level: cheap to write, most of the gain on text. */
#define FSB_OBJPACK_LEVEL 3

/* One object of a pack. */
struct fsb_objpack_entry {
	char hex[65];		/* its name: SHA-256 of the raw bytes */
	uint64_t off;		/* where its stored bytes start in the .pack */
	uint64_t len;		/* how many bytes are stored */
	uint64_t raw;		/* its size once read back */
	bool zstd;		/* stored as one zstd frame (else as it is) */
};

/* One pack: its id (the file names), its entries sorted by hex. */
struct fsb_objpack {
	char id[33];
	struct fsb_objpack_entry *v;
	size_t n;
	uint64_t bytes;		/* the sizes of its .pack and .idx files */
};

/* What fsb_objpack_cycle did. */
struct fsb_objpack_stats {
	size_t packed;		/* objects moved into packs */
	size_t already;		/* loose copies dropped: a pack held them already */
	uint64_t raw, stored;	/* their bytes before and after */
};

/**
 * Every pack of the store at `store_dir` that has a valid index, sorted by
 * id, into a malloc'd array (NULL and 0 when none, or no packs/ at all). A
 * pack whose index is damaged or whose .pack is missing is left out (its
 * objects read as missing). 0 or -errno.
 */
int fsb_objpack_list(const char *store_dir, struct fsb_objpack **out, size_t *n);

void fsb_objpack_list_free(struct fsb_objpack *v, size_t n);

/** The entry named `hex` in pack `p`, or NULL. */
const struct fsb_objpack_entry *fsb_objpack_find(const struct fsb_objpack *p, const char *hex);

/**
 * Object `hex` read back from the packs of `store_dir`: an anonymous
 * read-only-sealed file (memfd) holding its raw bytes, for the caller to
 * check against its name as any object. -ENOENT when no pack holds it,
 * -EBADMSG when a pack holds it but its bytes cannot be decompressed or
 * are not the size the index gives, or -errno. Safe from several threads.
 */
int fsb_objpack_open(const char *store_dir, const char *hex);

/**
 * Pack the objects sealed cycle `number` copied (kept inodes are left
 * alone): the small ones, compressed when that makes them smaller, into a
 * new pack; each large one that shrinks into a pack of its own; each is
 * hashed as it is read and left loose when it does not match its name. The
 * pack is written under a temporary name and fsynced, then its index, both
 * renamed into place and packs/ fsynced, and only then are the loose copies
 * removed: a crash at any point leaves every object loose, packed, or
 * both. `out` may be NULL. 0 or -errno (every object then still reads).
 */
int fsb_objpack_cycle(const char *store_dir, unsigned number, struct fsb_objpack_stats *out);

/**
 * Rewrite pack `p` of `store_dir` keeping the entries whose `keep[i]` is
 * true: their stored bytes copied as they are into a new pack (written and
 * indexed as by fsb_objpack_cycle) before the old index and pack are
 * removed; with none kept the pack is only removed. `*freed` gets the
 * bytes that went. 0 or -errno.
 */
int fsb_objpack_rewrite(const char *store_dir, const struct fsb_objpack *p, const bool *keep,
			uint64_t *freed);

/** Remove what a crash while packing left in packs/ (temporaries, a pack
 * without its index). Only for a caller that has the store to itself. */
void fsb_objpack_clean(const char *store_dir);

#endif
