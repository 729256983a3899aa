/*
 * backup_object.h — one content-addressed object of the backup store
 * (docs/backup-store.md, "Objects"). Internal to backup.c.
 */
#ifndef FSB_BACKUP_OBJECT_H
#define FSB_BACKUP_OBJECT_H

#include <stdbool.h>
#include <stdint.h>

#include "audit.h"

struct fsb_object {
	char hex[FSB_SHA256_HEX_LEN + 1];	/* the object's name */
	bool reflinked;		/* FICLONE made the copy */
	bool too_large;		/* nothing stored: over max_bytes, no reflink */
	bool kept;		/* fsb_object_keep: the inode itself, under a
				 * random name that is not its hash */
	char tmp[32];		/* kept, not yet committed: its name in objects/ */
};

/**
 * Store the content of `srcfd` (a readable regular file) as an object under
 * `objfd` (the objects/ directory): a new file, reflinked or copied, hashed,
 * made 0400, fsynced and linked in as <hh>/<hex> (no fsync unless `sync`:
 * a batched store makes it durable with its next syncfs). An object already there
 * is kept and the copy dropped when its size and SHA-256 match its name;
 * otherwise (bit rot, a planted file) the new copy is renamed over it. The
 * fd's offset is not moved. The size is taken once, by fstat: when no
 * reflink is possible and it is larger than `max_bytes` (0: no limit),
 * nothing is stored and `too_large` is set; otherwise exactly that many
 * bytes are copied, however the file grows meanwhile. `tmpfile_ok` is the
 * store's memory of whether O_TMPFILE works there; it is cleared when not
 * (read and written atomically: several threads may store at once).
 * Returns 0 or -errno (-ENOSPC also for a full quota); on error no object
 * and no temporary file is left.
 */
int fsb_object_store(int objfd, int srcfd, uint64_t max_bytes, bool *tmpfile_ok, bool sync,
		     struct fsb_object *out);

/**
 * Keep the inode `srcfd` (a regular file) as an object, without copying or
 * hashing a byte: link it into objects/ under a temporary name (removed at
 * the next start after a crash) and pick its name, 64 random hex digits.
 * Meant for a file whose own name is about to go (a delete, the target a
 * rename replaces). `path` (may be NULL) names the file in the core's own
 * view, for when `srcfd` was opened through another mount (EXDEV): it is
 * linked only when it is the very inode of `srcfd`. Once a journal line
 * names it, fsb_object_keep_commit
 * moves it to objects/<hh>/<name>; fsb_object_keep_abort takes it away.
 * -EXDEV across file systems, or another -errno: the caller copies instead.
 */
int fsb_object_keep(int objfd, int srcfd, const char *path, struct fsb_object *out);

/** Move a kept inode to its name, the directory fsynced when `sync`. 0 or
 * -errno (then it is taken away, as by fsb_object_keep_abort). */
int fsb_object_keep_commit(int objfd, struct fsb_object *o, bool sync);

/** Take away a kept inode not yet committed (the file keeps one link). */
void fsb_object_keep_abort(int objfd, struct fsb_object *o);

/**
 * Object `hex` is a kept inode whose change did not happen after all (the
 * file still has its own name): put a copy of it, with the same times, in
 * its place under the same name, so that the file has one link again and
 * the backup no longer shares it. Nothing to do when the file's own name
 * is gone. 0 or -errno.
 */
int fsb_object_unshare(int objfd, const char *hex);

/** Remove temporary files a crash left in objects/ (named ".tmp-*"). */
void fsb_object_clean(int objfd);

#endif
