/*
 * openflags.h — which open(2) flags a client may ask the core to open with
 * (DESIGN §3.2), and what op such an open is.
 */
#ifndef FSB_OPENFLAGS_H
#define FSB_OPENFLAGS_H

#include <stdbool.h>

/**
 * Check flags from an open-spec. Allowed: the access mode, O_CREAT, O_EXCL,
 * O_TRUNC, O_APPEND, O_NOFOLLOW, O_DIRECTORY, O_NONBLOCK, O_NOCTTY,
 * O_CLOEXEC, O_SYNC, O_DSYNC, O_LARGEFILE. Refused: any other bit (O_PATH,
 * O_TMPFILE, unknown), access mode 3, O_RDONLY|O_TRUNC, and write flags
 * (a write access mode, O_CREAT, O_TRUNC, O_APPEND) when `write_class` is
 * false. Returns 0 or -EINVAL with a static sentence in *why.
 */
int fsb_openflags_check(int flags, bool write_class, const char **why);

/** True when the flags can change the file (write access, O_CREAT, O_TRUNC). */
bool fsb_openflags_writes(int flags);

#endif
