/*
 * userns.h — can this process make the user namespace bubblewrap needs?
 */
#ifndef FSB_USERNS_H
#define FSB_USERNS_H

#include <stddef.h>

/*
 * 0 when a child of this process can unshare a user namespace, or -errno
 * with a sentence in `why` naming what stops it (the sysctl that forbids
 * it, or the error the kernel gave).
 */
int fsb_userns_probe(char *why, size_t why_size);

#endif
