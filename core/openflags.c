/*
 * openflags.c — the filter on open(2) flags that a client's open-spec may
 * carry (DESIGN §3.2). Anything not known to be harmless is refused.
 */
#include <errno.h>
#include <fcntl.h>

#include "openflags.h"

/*
 * glibc defines O_LARGEFILE as 0 on 64-bit userspace, but a client may pass
 * the kernel's value through (the flags of an intercepted call, or a client
 * built elsewhere). The bit only lifts a size limit that 64-bit opens never
 * have, so it is accepted explicitly.
 */
#define KERNEL_O_LARGEFILE 00100000

/*
 * O_TMPFILE is __O_TMPFILE | O_DIRECTORY; only the first bit says "tmpfile"
 * (O_DIRECTORY on its own is allowed).
 */
#define TMPFILE_BIT ((unsigned)O_TMPFILE & ~(unsigned)O_DIRECTORY)

/* O_SYNC includes the O_DSYNC bit; both are listed so either works alone. */
static const unsigned allowed_flags =
	O_ACCMODE | O_CREAT | O_EXCL | O_TRUNC | O_APPEND | O_NOFOLLOW |
	O_DIRECTORY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | O_SYNC | O_DSYNC |
	O_LARGEFILE | KERNEL_O_LARGEFILE;

int fsb_openflags_check(int flags, bool write_class, const char **why)
{
	unsigned f = (unsigned)flags;
	unsigned acc = f & O_ACCMODE;

	/*
	 * An O_PATH fd can be reopened through /proc/self/fd/N with other
	 * flags than the ones judged here, and on a directory it is a dirfd
	 * for *at() calls the policy never saw.
	 */
	if (f & O_PATH) {
		*why = "O_PATH is not allowed";
		return -EINVAL;
	}
	/*
	 * O_TMPFILE creates an unnamed file that linkat() could later publish
	 * under any name, past the policy and without a backup.
	 */
	if (f & TMPFILE_BIT) {
		*why = "O_TMPFILE is not allowed";
		return -EINVAL;
	}
	if (f & ~allowed_flags) {
		*why = "open flags hold an unknown or unsupported bit";
		return -EINVAL;
	}
	if (acc == O_ACCMODE) {
		*why = "open flags hold an invalid access mode (3)";
		return -EINVAL;
	}
	/* Linux truncates on O_RDONLY|O_TRUNC: a write hidden in a read. */
	if (acc == O_RDONLY && (f & O_TRUNC)) {
		*why = "O_TRUNC without write access is refused";
		return -EINVAL;
	}
	if (!write_class && (acc != O_RDONLY || (f & (O_CREAT | O_TRUNC | O_APPEND)))) {
		*why = "a read request cannot carry write flags";
		return -EINVAL;
	}
	return 0;
}

bool fsb_openflags_writes(int flags)
{
	unsigned f = (unsigned)flags;

	return (f & O_ACCMODE) != O_RDONLY || (f & (O_CREAT | O_TRUNC));
}
