/*
 * holders.h — which files some process still holds open for writing.
 *
 * A writable fd the core granted lets its holder change the file at any
 * later time, past the end of the turn it was granted in (DESIGN §6.1). When
 * a cycle is sealed, the core asks which of the files it granted for writing
 * are still held that way, and backs those up again into the next cycle.
 */
#ifndef FSB_HOLDERS_H
#define FSB_HOLDERS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct fsb_inode_id {
	dev_t dev;
	ino_t ino;
};

/**
 * Scan the fds of every process we may look at (/proc/<pid>/fd, the same
 * user's) and set held[i] when some process other than this one has
 * inodes[i] open for writing. Processes that vanish during the scan are
 * skipped. Returns 0, or -errno when /proc cannot be read (then every
 * held[i] is set: fail towards backing up).
 */
int fsb_holders_writable(const struct fsb_inode_id *inodes, size_t n, bool *held);

#endif
