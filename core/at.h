/*
 * at.h — reaching a judged path without following anything that appeared
 * since it was judged (DESIGN §5). Every path here is absolute, normalised
 * and symlink-free: the real path the policy judged. Whatever symlink is in
 * it now was put there after the check, so none is followed.
 */
#ifndef FSB_AT_H
#define FSB_AT_H

#include <sys/stat.h>
#include <sys/types.h>

#include "resolve.h"

/**
 * openat2 of `path` under `rootfd` (the requester's "/") with
 * RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS: a symlink
 * anywhere on the way fails with -ELOOP. `mode` is used with O_CREAT or
 * O_TMPFILE. The fd, or -errno.
 */
int fsb_at_open(int rootfd, const char *path, int flags, mode_t mode);

/**
 * Open the directory holding `path` for *at() calls on its last component,
 * which *name points at (inside `path`). O_RDONLY, or O_PATH for a directory
 * we may write into but not list. The fd, or -errno (-EINVAL for "/").
 */
int fsb_at_open_parent(int rootfd, const char *path, const char **name);

/**
 * Reach the object `res` judged with O_PATH, never through a symlink, and
 * check it is still the one judged (device and inode): -EAGAIN when it is
 * gone or was replaced, -ELOOP when the name is a symlink now. The O_PATH fd
 * (*st its stat), or -errno. Directories are reached too.
 */
int fsb_at_reach(int rootfd, const struct fsb_resolved *res, struct stat *st);

/**
 * Open the inode behind `fd` (an O_PATH fd) again with real `flags`,
 * through /proc/self/fd: the same inode, whatever its name is now.
 */
int fsb_at_reopen(int fd, int flags);

/**
 * fsb_at_reopen() that never waits: O_NONBLOCK is added for the open, so
 * that no FIFO without a peer, tty waiting for carrier or file lease held
 * by some process (an open of a leased file waits up to the lease break
 * time, 45 s, then breaks it) holds the core up; the fd is made blocking
 * again unless `flags` asked for O_NONBLOCK. A leased file answers
 * -EWOULDBLOCK at once.
 */
int fsb_at_reopen_unblocked(int fd, int flags);

/** "/proc/self/fd/<fd>" into `buf` (at least 32 bytes), for the *at() calls
 * that take no empty path. Returns `buf`. */
char *fsb_at_fd_path(int fd, char *buf, size_t len);

#endif
