/*
 * hostop_meta.c — the host operations that change one object in place
 * or give it a name (see hostop.h): `chmod`, `link` and `touch`.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "at.h"
#include "hostop_internal.h"

int hop_chmod(struct hostop *h)
{
	const struct fsb_hostop_req *r = h->req;
	struct fsb_access *a = &h->src;
	char proc[32];
	struct stat st;
	int fd, rc = -1;

	if (hop_judge(h, a, FSB_OP_CHMOD, r->path, FSB_RESOLVE_EXISTING) < 0)
		return -1;
	if (a->errnum != 0)
		return hop_fail(h, a->errnum, a->errnum == ENOENT ? "%s does not exist" : NULL,
				r->path);
	if ((fd = hop_reach(h, a, &st)) < 0)
		return -1;
	if (hop_backup_meta(h, a, &st) < 0 || hop_sync_backups(h) < 0 ||
	    hop_audit_before(h) < 0)
		goto out;
	/* Through the O_PATH fd: exactly the inode judged, whatever its name. */
	if (fchmodat(AT_FDCWD, fsb_at_fd_path(fd, proc, sizeof(proc)), r->mode, 0) < 0) {
		hop_fail(h, errno, "cannot change the mode of %s: %s", a->res.path, strerror(errno));
		goto out;
	}
	h->changed = true;
	rc = 0;
out:
	close(fd);
	return rc;
}

/*
 * link(2) across two bind mounts of one file system fails with EXDEV in a
 * sandbox's view (its workspace and its home are bound apart), where bare
 * it works: pnpm learns from that whether its store in home can hard-link
 * into the project. Both ends were judged by their real paths. Reached
 * again in the core's own view and checked to be the very inodes judged
 * (the source) and reached (the target's directory), the link made there
 * is the one the sandbox asked for. A path the sandbox sees elsewhere than
 * the host does (its private /tmp) is another inode in the core's view:
 * it keeps its EXDEV. Returns 0 or -errno.
 */
static int link_in_host_view(struct hostop *h, const struct fsb_access *a, int tfd)
{
	struct stat want, st;
	const char *name;
	char proc[32];
	int sfd = -1, pfd = -1, err = -EXDEV;

	if (h->rootfd == h->b->rootfd || fstat(tfd, &want) < 0)
		return -EXDEV;
	if ((sfd = fsb_at_reach(h->b->rootfd, &a->res, &st)) < 0)
		goto out;
	if ((pfd = fsb_at_open_parent(h->b->rootfd, h->dst.res.path, &name)) < 0)
		goto out;
	if (fstat(pfd, &st) < 0 || st.st_dev != want.st_dev || st.st_ino != want.st_ino)
		goto out;
	err = linkat(AT_FDCWD, fsb_at_fd_path(sfd, proc, sizeof(proc)), pfd, name,
		     AT_SYMLINK_FOLLOW) < 0 ? -errno : 0;
out:
	if (sfd >= 0)
		close(sfd);
	if (pfd >= 0)
		close(pfd);
	return err;
}

/*
 * A symlink is a new object, unknown until it is made: its directory is
 * journaled, then the symlink made (symlinkat fails on a name that
 * appeared), then journaled with its device and inode so that a restore
 * knows it, and taken away again when the line or the audit cannot be
 * written — as a write grant's create (write_grant.c).
 */
static int make_symlink(struct hostop *h, const char *target, int tfd, const char *tname)
{
	const struct fsb_access *t = &h->dst;
	struct stat made;
	int err;

	/* A create moves its directory's mtime: journaled first. */
	if (hop_note_parent(h, t) < 0)
		return -1;
	if (symlinkat(target, tfd, tname) < 0) {
		err = errno;
		if (err == EEXIST)
			return hop_fail(h, EAGAIN, "%s appeared since it was checked; nothing was "
					"changed; ask again", t->res.path);
		return hop_fail(h, err, "cannot make %s: %s", t->res.path, strerror(err));
	}
	/* Not a symlink any more: something replaced it at once, and it is
	 * not ours to take away. */
	if (fstatat(tfd, tname, &made, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISLNK(made.st_mode))
		return hop_fail(h, EAGAIN, "%s changed as it was made; ask again", t->res.path);
	if (hop_record_new_name(h, t->op, h->req->to, t->res.path, &made) < 0 ||
	    hop_sync_backups(h) < 0 || hop_audit_before(h) < 0) {
		struct stat there;

		/* Only the symlink made here: one swapped in under the name stays. */
		if (fstatat(tfd, tname, &there, AT_SYMLINK_NOFOLLOW) == 0 &&
		    there.st_dev == made.st_dev && there.st_ino == made.st_ino)
			unlinkat(tfd, tname, 0);
		return -1;
	}
	h->changed = true;
	return 0;
}

int hop_link(struct hostop *h)
{
	const struct fsb_hostop_req *r = h->req;
	struct fsb_access *a = &h->src, *t = &h->dst;
	const char *tname, *sname = NULL;
	char proc[32];
	struct stat st;
	int fd = -1, tfd = -1, rc = -1;

	if (!r->symbolic) {
		/* A new name for a file is a way to write it: the modify right.
		 * link(2) links a symlink itself: judged through its parent. */
		if (hop_judge(h, a, FSB_OP_LINK, r->from, h->who->link_nofollow
			      ? FSB_RESOLVE_THROUGH_PARENT : FSB_RESOLVE_EXISTING) < 0)
			return -1;
		if (a->errnum == 0 && !a->res.exists)
			return hop_fail(h, ENOENT, "%s does not exist", r->from);
		if (a->errnum != 0)
			return hop_fail(h, a->errnum,
					a->errnum == ENOENT ? "%s does not exist" : NULL, r->from);
	}
	if (hop_judge(h, t, r->symbolic ? FSB_OP_SYMLINK : FSB_OP_LINK, r->to,
		      FSB_RESOLVE_THROUGH_PARENT) < 0)
		return -1;
	if (t->errnum != 0)
		return hop_fail(h, t->errnum, t->errnum == ENOENT ? "the parent of %s does not exist"
				: NULL, r->to);
	if (t->res.exists)
		return hop_fail(h, EEXIST, "%s exists", t->res.path);
	if (!r->symbolic && h->who->link_nofollow && S_ISLNK(a->res.st.st_mode)) {
		/* The symlink itself: pinned as its parent and name. */
		if ((fd = hop_open_parent(h, a, &sname)) < 0)
			return -1;
		if (hop_still_there(h, fd, sname, a, &st) < 0)
			goto out;
	} else if (!r->symbolic) {
		if ((fd = hop_reach(h, a, &st)) < 0)
			return -1;
		if (S_ISDIR(st.st_mode)) {
			hop_fail(h, EPERM, "%s is a directory: no hard link can be made to it",
				 a->res.path);
			goto out;
		}
	}
	if ((tfd = hop_open_parent(h, t, &tname)) < 0)
		goto out;
	if (r->symbolic) {
		rc = make_symlink(h, r->from, tfd, tname);
		goto out;
	}
	/* A hard link's new name stands for the file linked: a restore
	 * knows it by that inode. */
	if (hop_record_new_name(h, t->op, r->to, t->res.path, &st) < 0 ||
	    hop_sync_backups(h) < 0 || hop_audit_before(h) < 0)
		goto out;
	if (sname != NULL ? linkat(fd, sname, tfd, tname, 0)
	    : linkat(AT_FDCWD, fsb_at_fd_path(fd, proc, sizeof(proc)), tfd, tname,
		     AT_SYMLINK_FOLLOW)) {
		int err = errno;

		if (err == EXDEV && sname == NULL)
			err = -link_in_host_view(h, a, tfd);
		if (err != 0) {
			hop_fail(h, err, "cannot make %s: %s", t->res.path, strerror(err));
			goto out;
		}
	}
	h->changed = true;
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	if (tfd >= 0)
		close(tfd);
	return rc;
}

int hop_touch(struct hostop *h)
{
	const struct fsb_hostop_req *r = h->req;
	struct fsb_access *a = &h->src;
	char proc[32];
	struct stat st;
	int fd, rc = -1;

	if (hop_judge(h, a, FSB_OP_TOUCH, r->path, FSB_RESOLVE_EXISTING_OR_CREATABLE) < 0)
		return -1;
	if (a->errnum != 0)
		return hop_fail(h, a->errnum, a->errnum == ENOENT ? "the parent of %s does not exist"
				: NULL, r->path);
	if (!a->res.exists) {
		if (hop_record(h, FSB_OP_TOUCH, r->path, a->res.path, NULL, -1, NULL, false) < 0 ||
		    hop_sync_backups(h) < 0 || hop_audit_before(h) < 0)
			return -1;
		fd = fsb_at_open(h->rootfd, a->res.path,
				 O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY, 0666);
		if (fd < 0)
			return hop_fail(h, fd == -ELOOP || fd == -EEXIST ? EAGAIN : -fd,
					"cannot create %s: %s", a->res.path,
					fd == -EEXIST ? "it appeared since it was checked; ask again"
						      : strerror(-fd));
		close(fd);
		h->changed = true;
		return 0;
	}
	if ((fd = hop_reach(h, a, &st)) < 0)
		return -1;
	if (hop_backup_meta(h, a, &st) < 0 || hop_sync_backups(h) < 0 ||
	    hop_audit_before(h) < 0)
		goto out;
	if (utimensat(AT_FDCWD, fsb_at_fd_path(fd, proc, sizeof(proc)), NULL, 0) < 0) {
		hop_fail(h, errno, "cannot set the times of %s: %s", a->res.path, strerror(errno));
		goto out;
	}
	h->changed = true;
	rc = 0;
out:
	close(fd);
	return rc;
}
