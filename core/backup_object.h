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
};

/**
 * Store the content of `srcfd` (a readable regular file) as an object under
 * `objfd` (the objects/ directory): a new file, reflinked or copied, hashed,
 * made 0400, fsynced and linked in as <hh>/<hex>. An object already there
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
int fsb_object_store(int objfd, int srcfd, uint64_t max_bytes, bool *tmpfile_ok,
		     struct fsb_object *out);

/** Remove temporary files a crash left in objects/ (named ".tmp-*"). */
void fsb_object_clean(int objfd);

#endif
