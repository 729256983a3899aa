/*
 * grant.h — open the file a grant was decided for, and only that file
 * (DESIGN §3.2, §5, §6.1).
 */
#ifndef FSB_GRANT_H
#define FSB_GRANT_H

#include <sys/types.h>

#include "resolve.h"

/**
 * Open `res->path` under `rootfd` with the client's `flags` and `mode`.
 *
 * An existing object is first reached with O_PATH and RESOLVE_NO_SYMLINKS,
 * so a symlink swapped into the path since resolution makes the open fail
 * rather than reach another file; its dev/ino must be the ones the policy
 * judged. It is then reopened through /proc/self/fd with the real flags:
 * the same inode, and a FIFO or device opened non-blocking so no client can
 * stall the loop. A directory is refused (-EISDIR): its fd would reach
 * everything beneath it unchecked. O_CREAT|O_EXCL on an existing name (a
 * dangling symlink included) is -EEXIST. A missing one is created with O_EXCL added: if something appeared
 * since the check, the caller gets -EEXIST and decides again.
 *
 * Before a writable fd on an existing regular file is made, `backup` (may
 * be NULL) is called with a read-only fd on that same inode and its stat;
 * when it fails, nothing is opened for writing and its -errno is returned.
 * O_TRUNC is not passed to open: the file is truncated with ftruncate on the
 * granted fd, after the backup. O_CLOEXEC and O_NOCTTY are always added.
 * Returns the fd, or -EAGAIN when the file changed since it was judged, or
 * another -errno.
 */
typedef int (*fsb_grant_backup_fn)(int rdfd, const struct stat *st, void *arg);

int fsb_grant_open(int rootfd, const struct fsb_resolved *res, int flags, mode_t mode,
		   fsb_grant_backup_fn backup, void *arg);

/**
 * Undo a create: remove the file `fd` is open on, which fsb_grant_open just
 * created at `res->path`, if that name still holds it. 0 or -errno.
 */
int fsb_grant_undo_create(int rootfd, const struct fsb_resolved *res, int fd);

/**
 * Open the existing file judged in `res` read-only, race-safe as above (for
 * a backup when no grant is made). The fd, or -errno.
 */
int fsb_grant_open_for_backup(int rootfd, const struct fsb_resolved *res);

/**
 * 0 when the core may open the object `st` describes for a client, or the
 * errno a client gets instead: -ENXIO for /dev/tty, -EACCES for any other
 * terminal. The core opens a device in its own session, so /dev/tty would
 * be the core's controlling terminal (a command could prompt for a
 * password on it and read the answer), and another terminal someone
 * else's; a sandboxed process has no controlling terminal of its own, so
 * its native open of /dev/tty fails with ENXIO too.
 */
int fsb_grant_terminal_refusal(const struct stat *st);

#endif
