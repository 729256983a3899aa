/*
 * restore_undo.c — the copy a restore keeps of what it changes (see
 * restore_undo.h): each path's state as it is just before the restore,
 * journaled into the session's restore_backup store with backup.c, the
 * cycle thrown away again when the restore goes no further.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "at.h"
#include "backup.h"
#include "backup_read.h"
#include "object_pack.h"
#include "restore_undo.h"

struct fsb_undo {
	struct fsb_store *store;
};

int fsb_undo_store_dir(const char *state_dir, const char *session, char *out, size_t len)
{
	int rc = fsb_backup_store_dir(state_dir, session, out, len);

	if (rc < 0)
		return rc;
	if (snprintf(out, len, "%s/sessions/%s/" FSB_RESTORE_BACKUP, state_dir, session) >=
	    (int)len)
		return -ENAMETOOLONG;
	return 0;
}

int fsb_undo_open(const char *state_dir, const char *session, struct fsb_undo **out,
		  char *err, size_t errlen)
{
	struct fsb_undo *u = calloc(1, sizeof(*u));
	int rc;

	if (u == NULL) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	/* Its own store, so its own lock: the core holds modify_backup's for
	 * as long as it runs, and a restore must work meanwhile. Two restores
	 * at once are refused (-EBUSY) rather than interleaved. */
	rc = fsb_store_open_at(state_dir, session, FSB_RESTORE_BACKUP, &u->store, err, errlen);
	if (rc < 0) {
		free(u);
		return rc;
	}
	*out = u;
	return 0;
}

/* Open the file to copy: without following a symlink, without blocking, and
 * without moving its access time where we may (O_NOATIME is the owner's). */
static int open_content(int pfd, const char *name)
{
	int flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
	int fd = openat(pfd, name, flags | O_NOATIME);

	if (fd < 0 && errno == EPERM)
		fd = openat(pfd, name, flags);
	return fd;
}

int fsb_undo_record(struct fsb_undo *u, int rootfd, const char *path, const char *op,
		    char *err, size_t errlen)
{
	struct fsb_backup_req r = {
		.op = op, .path = path, .resolved = path, .fd = -1,
		.on_too_large = FSB_TOO_LARGE_FAIL, .defer_sync = true,
	};
	struct fsb_backup_result res;
	char target[PATH_MAX];
	const char *name;
	struct stat st;
	bool exists = false;
	int pfd, rc = 0;

	pfd = fsb_at_open_parent(rootfd, path, &name);
	/* No parent now (or a file or a symlink in its place): the restore
	 * makes the directory again first, so the path is absent before it,
	 * and an undo removes what the restore puts there. */
	if (pfd == -ENOENT || pfd == -ENOTDIR || pfd == -ELOOP)
		goto record;
	if (pfd < 0) {
		rc = pfd;
		goto fail;
	}
	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		rc = errno == ENOENT ? 0 : -errno;
		goto out;
	}
	exists = true;
	if (S_ISREG(st.st_mode)) {
		/* The content of the very inode whose state is journaled: the
		 * store refuses an fd on another file (-ESTALE). */
		r.fd = open_content(pfd, name);
		if (r.fd < 0 || fstat(r.fd, &st) < 0) {
			rc = -errno;
			goto out;
		}
	} else if (S_ISLNK(st.st_mode)) {
		ssize_t n = readlinkat(pfd, name, target, sizeof(target) - 1);

		if (n < 0) {
			rc = -errno;
			goto out;
		}
		target[n] = '\0';
		r.link_target = target;
	}
out:
	close(pfd);
	if (rc < 0)
		goto fail;
record:
	r.prior = exists ? &st : NULL;
	rc = fsb_store_record(u->store, &r, &res);
	if (r.fd >= 0)
		close(r.fd);
	if (rc == 0)
		return 0;
fail:
	/* The open does not wait for a lease break: the holder is told, and
	 * the restore is tried again once it lets go. */
	if (rc == -EWOULDBLOCK)
		snprintf(err, errlen, "cannot keep a copy of %s: another program holds a lease on "
			 "it (it has the file open and asked to be told before anyone else opens "
			 "it); it has been told, so try again in a moment", path);
	else
		snprintf(err, errlen, "cannot keep a copy of %s in %s: %s", path,
			 fsb_store_dir(u->store), strerror(-rc));
	return rc;
}

int fsb_undo_sync(struct fsb_undo *u, char *err, size_t errlen)
{
	int rc = fsb_store_sync(u->store);

	if (rc < 0)
		snprintf(err, errlen, "cannot write the journal in %s: %s",
			 fsb_store_dir(u->store), strerror(-rc));
	return rc;
}

int fsb_undo_seal(struct fsb_undo *u, const char *message, char *err, size_t errlen)
{
	/* No audit chain vouches for a restore run by hand: no head. */
	int rc = fsb_store_seal(u->store, message, "", err, errlen);

	/* Packed as a core packs a sealed turn; a failure leaves the objects
	 * loose, which read the same. */
	if (rc > 0)
		fsb_objpack_cycle(fsb_store_dir(u->store), (unsigned)rc, NULL);
	fsb_store_close(u->store);
	free(u);
	return rc;
}

void fsb_undo_abort(struct fsb_undo *u)
{
	unsigned n = fsb_store_cycle(u->store);
	char path[PATH_MAX + 64];

	/* Removed while the lock is still held: an open cycle left behind
	 * would be sealed as recovered at the next open and taken for a
	 * restore that happened. */
	if (n != 0) {
		snprintf(path, sizeof(path), "%s/cycles/%u/journal.jsonl",
			 fsb_store_dir(u->store), n);
		unlink(path);
		snprintf(path, sizeof(path), "%s/cycles/%u/cycle.json.tmp",
			 fsb_store_dir(u->store), n);
		unlink(path);
		snprintf(path, sizeof(path), "%s/cycles/%u", fsb_store_dir(u->store), n);
		rmdir(path);
	}
	fsb_store_close(u->store);
	free(u);
}
