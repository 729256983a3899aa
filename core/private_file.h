/*
 * private_file.h — the small files a core keeps for itself under its state
 * dir (the launch record, the compiled chunks): read only when they are
 * what the core would have written, written whole or not at all.
 */
#ifndef FSB_PRIVATE_FILE_H
#define FSB_PRIVATE_FILE_H

#include <stddef.h>

/**
 * The file at `path` whole (with a NUL after its `*len` bytes), when it is
 * a regular file of the effective user's that only they may write, not a
 * symlink, of 1 to `max` bytes. NULL otherwise. Free the result.
 */
char *fsb_private_file_read(const char *path, size_t max, size_t *len);

/**
 * Write the `n` pieces (`bufs[i]` of `lens[i]` bytes) as the file at
 * `path`, mode 0600: into a temp file beside it, then renamed over it, so
 * that a reader sees the old file or the new one whole. 0 or -errno.
 */
int fsb_private_file_write(const char *path, const void *const *bufs, const size_t *lens,
			   size_t n);

/* What fsb_private_dir_keep_newest() makes of a name in the directory. */
enum fsb_kept_kind {
	FSB_KEPT_OTHER,		/* not one of the set: left alone */
	FSB_KEPT_MEMBER,	/* one of the set, ranked by its mtime */
	FSB_KEPT_STALE,		/* one of the set that goes before any member */
};

/**
 * Remove regular files of the set `kind_of` picks out in `dir` (it returns
 * a kind for each name), oldest first (stale ones before every member),
 * until at most `keep` are left. Names of temp files (".tmp.") are never
 * members; nothing but regular files is removed. So that kept state (the
 * launch records, the scan indexes) does not pile up with every new key.
 * 0, or -errno when `dir` cannot be listed (nothing removed).
 */
int fsb_private_dir_keep_newest(const char *dir,
				enum fsb_kept_kind (*kind_of)(const char *name, void *arg),
				void *arg, size_t keep);

#endif
