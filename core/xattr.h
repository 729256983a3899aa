/*
 * xattr.h — the extended attributes of one file as the backup store keeps
 * them (docs/backup-store.md): which names are kept, reading them within a
 * size cap, putting them back on a restored file, and the base64 in which a
 * journal line holds their values.
 */
#ifndef FSB_XATTR_H
#define FSB_XATTR_H

#include <stdbool.h>
#include <stddef.h>

/* At most this many bytes of names and values are recorded per path. */
#define FSB_XATTR_CAP (64u << 10)

/** One extended attribute: a name and a value of any bytes. */
struct fsb_xattr {
	char *name;
	unsigned char *value;	/* never NULL, also for an empty value */
	size_t len;
};

/**
 * True for the names the store records and restore sets: `user.*`,
 * `trusted.*`, `security.capability`, `system.posix_acl_access` and
 * `system.posix_acl_default`. Other `security.*` names (SELinux, Smack,
 * IMA labels) belong to the system's policy and are left to it.
 */
bool fsb_xattr_kept(const char *name);

/**
 * Read the kept xattrs of a file: through `fd` when it is >= 0, else of
 * `path` without following a symlink there. Names and values together are
 * taken up to `cap` bytes; a name that would pass it is left out and
 * *truncated set. Returns 0 with a malloc'd array in *out (NULL when there
 * are none), -ENOTSUP when the filesystem has no xattrs, or -errno.
 */
int fsb_xattr_read(int fd, const char *path, size_t cap, struct fsb_xattr **out, size_t *n,
		   bool *truncated);

void fsb_xattr_free(struct fsb_xattr *v, size_t n);

/** What fsb_xattr_apply did. */
struct fsb_xattr_outcome {
	unsigned set, removed, failed;
	/* The names that could not be set or removed, each with why, e.g.
	 * "trusted.a (Operation not permitted)"; bytes that are not printable
	 * ASCII are shown as \xNN. Cut short with "…" when long. */
	char failures[160];
};

/**
 * Make the kept xattrs of a file (`fd` >= 0, else `path` without following
 * a symlink) those of `v`: set each, and with `remove_others` remove the
 * kept names the file has beyond them. Names outside the kept namespaces
 * are not set and count as failed. Does as much as it can; *o says what.
 */
void fsb_xattr_apply(int fd, const char *path, const struct fsb_xattr *v, size_t n,
		     bool remove_others, struct fsb_xattr_outcome *o);

/** Standard base64 (RFC 4648, padded) of `len` bytes; malloc'd, NULL without memory. */
char *fsb_base64_encode(const unsigned char *data, size_t len);

/**
 * Decode standard padded base64 into a malloc'd buffer (never NULL on
 * success, also for ""). Returns 0, -EINVAL for anything that is not
 * canonical base64, or -ENOMEM.
 */
int fsb_base64_decode(const char *s, unsigned char **out, size_t *len);

#endif
