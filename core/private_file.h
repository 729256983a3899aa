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

#endif
