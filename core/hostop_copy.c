/*
 * hostop_copy.c — the host operation `copy` (see hostop.h): a file or
 * a tree copied by the core, every entry judged as a create or a write,
 * the target backed up first; content with copy_file_range, a reflink
 * where the file system has one.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "grant.h"
#include "hostop_internal.h"
#include "tree.h"


/* Copy the first `size` bytes of `in` to `out`: a reflink when the
 * filesystem makes one, else copy_file_range, else read/write. A file that
 * grows meanwhile does not make the copy longer. */
static int copy_data(int in, int out, off_t size)
{
	char buf[65536];
	off_t done = 0;
	bool kernel_copy = true;
	ssize_t n;

	if (size > 0 && ioctl(out, FICLONE, in) == 0) {
		struct stat st;

		/* A reflink takes the whole file, grown or not: cut it back. */
		if (fstat(out, &st) == 0 && st.st_size > size && ftruncate(out, size) < 0)
			return -errno;
		return 0;
	}
	while (done < size) {
		size_t want = (size_t)(size - done) < sizeof(buf) ? (size_t)(size - done)
								   : sizeof(buf);

		if (kernel_copy) {
			n = copy_file_range(in, NULL, out, NULL, (size_t)(size - done), 0);
			if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS ||
				      errno == EOPNOTSUPP)) {
				kernel_copy = false;
				continue;
			}
		} else {
			n = read(in, buf, want);
			if (n > 0) {
				ssize_t w = 0, m;

				while (w < n) {
					m = write(out, buf + w, (size_t)(n - w));
					if (m < 0 && errno == EINTR)
						continue;
					if (m < 0)
						return -errno;
					w += m;
				}
			}
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;	/* it shrank */
		done += n;
	}
	return 0;
}

/* ---- copy --------------------------------------------------------------- */

struct copier {
	struct tree_job job;
	int fds[FSB_TREE_MAX_DEPTH + 1];	/* the target directory at each depth */
};

static int copy_file_at(int sdir, const char *sname, const struct stat *st,
			int ddir, const char *dname)
{
	struct stat now;
	int in, out, rc;

	in = openat(sdir, sname, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (in < 0)
		return errno == ELOOP || errno == ENOENT ? -EAGAIN : -errno;
	if (fstat(in, &now) < 0 || now.st_dev != st->st_dev || now.st_ino != st->st_ino) {
		close(in);
		return -EAGAIN;
	}
	out = openat(ddir, dname, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0) {
		rc = -errno;
		close(in);
		return rc;
	}
	rc = copy_data(in, out, st->st_size);
	if (rc == 0 && fchmod(out, st->st_mode & 07777) < 0)
		rc = -errno;
	close(in);
	if (close(out) < 0 && rc == 0)
		rc = -errno;
	return rc;
}

static int copy_entry(const struct fsb_tree_entry *e, bool post, void *arg)
{
	struct copier *c = arg;
	struct hostop *h = c->job.h;
	mode_t m = e->st->st_mode;
	int dst = c->fds[e->depth - 1], rc = 0;
	char target[PATH_MAX];
	ssize_t n;

	if (post) {
		/* A directory's mode comes last: 0700 until its contents are in. */
		if (c->fds[e->depth] >= 0) {
			if (fchmod(c->fds[e->depth], m & 07777) < 0)
				rc = -errno;
			close(c->fds[e->depth]);
			c->fds[e->depth] = -1;
		}
		goto done;
	}
	/* Only what was judged and journaled is copied. */
	if (hop_inode_set_get(&h->judged, e->st) == NULL) {
		if (S_ISDIR(m))
			c->fds[e->depth] = -1;
		return 0;
	}
	if (S_ISDIR(m)) {
		if (mkdirat(dst, e->name, 0700) < 0) {
			rc = -errno;
		} else {
			c->fds[e->depth] = openat(dst, e->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
						  O_CLOEXEC);
			rc = c->fds[e->depth] < 0 ? -errno : 0;
		}
	} else if (S_ISREG(m)) {
		rc = copy_file_at(e->dirfd, e->name, e->st, dst, e->name);
	} else if (S_ISLNK(m)) {
		n = readlinkat(e->dirfd, e->name, target, sizeof(target) - 1);
		if (n < 0) {
			rc = errno == EINVAL || errno == ENOENT ? -EAGAIN : -errno;
		} else {
			target[n] = '\0';
			rc = symlinkat(target, dst, e->name) < 0 ? -errno : 0;
		}
	} else if (S_ISFIFO(m)) {
		rc = mkfifoat(dst, e->name, m & 07777) < 0 ? -errno : 0;
	} else {
		rc = -EPERM;
	}
	if (rc == 0)
		h->changed = true;
done:
	if (rc < 0) {
		hop_fail(h, -rc == EAGAIN ? EAGAIN : -rc, "cannot copy %s/%s: %s; what was copied "
			 "so far is left, and a restore removes it", c->job.old_top, e->rel,
			 strerror(-rc));
		return STOPPED;
	}
	return 0;
}

static int copy_tree(struct hostop *h)
{
	struct fsb_access *a = &h->src, *t = &h->dst;
	struct copier c = {
		.job = {
			.h = h, .old_op = FSB_OP_READ, .new_op = FSB_OP_CREATE,
			.copy = true,
		},
	};
	const char *name, *tname;
	struct stat st;
	int pfd = -1, tfd = -1, rc = -1;

	if (!h->req->recursive)
		return hop_fail(h, EISDIR, "%s is a directory: copy it with \"recursive\": true",
				a->res.path);
	if (t->res.exists)
		return hop_fail(h, EEXIST, "%s exists: a directory is copied to a new name only",
				t->res.path);
	if (fsb_path_within(t->res.path, a->res.path))
		return hop_fail(h, EINVAL, "cannot copy the directory %s into itself", a->res.path);
	for (size_t i = 0; i < sizeof(c.fds) / sizeof(c.fds[0]); i++)
		c.fds[i] = -1;
	c.job.old_top = a->res.path;
	c.job.new_top = t->res.path;
	if ((pfd = hop_open_parent(h, a, &name)) < 0 || (tfd = hop_open_parent(h, t, &tname)) < 0)
		goto out;
	if (hop_still_there(h, pfd, name, a, &st) < 0 ||
	    hop_walk(&c.job, pfd, name, &st, hop_check_entry) < 0 ||
	    hop_record(h, FSB_OP_CREATE, h->req->to, t->res.path, NULL, -1, NULL, false) < 0 ||
	    hop_walk(&c.job, pfd, name, &st, hop_save_entry) < 0 ||
	    hop_sync_backups(h) < 0 || hop_audit_before(h) < 0)
		goto out;
	if (mkdirat(tfd, tname, 0700) < 0) {
		hop_fail(h, errno, "cannot make %s: %s", t->res.path, strerror(errno));
		goto out;
	}
	h->changed = true;
	c.fds[0] = openat(tfd, tname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (c.fds[0] < 0) {
		hop_fail(h, errno, "cannot open %s: %s", t->res.path, strerror(errno));
		goto out;
	}
	if (fsb_tree_walk(pfd, name, &st, copy_entry, &c) != 0 && h->err == 0)
		hop_fail(h, EAGAIN, "%s changed while it was copied; what was copied so far is "
			 "left, and a restore removes it", a->res.path);
	if (h->err == 0 && fchmod(c.fds[0], st.st_mode & 07777) < 0)
		hop_fail(h, errno, "cannot set the mode of %s: %s", t->res.path, strerror(errno));
	rc = h->err == 0 ? 0 : -1;
out:
	for (size_t i = 0; i < sizeof(c.fds) / sizeof(c.fds[0]); i++)
		if (c.fds[i] >= 0)
			close(c.fds[i]);
	if (pfd >= 0)
		close(pfd);
	if (tfd >= 0)
		close(tfd);
	return rc;
}

/* fsb_grant_open calls this with the target's own inode before truncating it. */
static int backup_copy_target(int rdfd, const struct stat *st, void *arg)
{
	struct hostop *h = arg;

	if (hop_record(h, h->dst.op, h->req->to, h->dst.res.path, st, rdfd, NULL,
		       !h->dst.verdict.backup) < 0 ||
	    hop_sync_backups(h) < 0 || hop_audit_before(h) < 0)
		return -h->err;
	return 0;
}

int hop_copy(struct hostop *h)
{
	const struct fsb_hostop_req *r = h->req;
	struct fsb_access *a = &h->src, *t = &h->dst;
	struct stat st;
	int in, out, rc;

	if (hop_judge(h, a, FSB_OP_READ, r->from, FSB_RESOLVE_EXISTING) < 0)
		return -1;
	if (a->errnum != 0)
		return hop_fail(h, a->errnum, a->errnum == ENOENT ? "%s does not exist" : NULL,
				r->from);
	/* A write to a name that does not exist is judged as a create. */
	if (hop_judge(h, t, FSB_OP_WRITE, r->to, FSB_RESOLVE_THROUGH_PARENT) < 0)
		return -1;
	if (t->errnum != 0)
		return hop_fail(h, t->errnum, t->errnum == ENOENT ? "the parent of %s does not exist"
				: NULL, r->to);
	if (S_ISDIR(a->res.st.st_mode))
		return copy_tree(h);
	if (!S_ISREG(a->res.st.st_mode))
		return hop_fail(h, EINVAL, "%s is a %s: copy copies files and directories",
				a->res.path, fsb_file_type_name(a->res.st.st_mode));
	if (t->res.exists && S_ISDIR(t->res.st.st_mode))
		return hop_fail(h, EISDIR, "%s is a directory", t->res.path);
	if (t->res.exists && !S_ISREG(t->res.st.st_mode))
		return hop_fail(h, EEXIST, "%s exists and is a %s: copy does not write through it",
				t->res.path, fsb_file_type_name(t->res.st.st_mode));
	if (t->res.exists && t->res.st.st_dev == a->res.st.st_dev &&
	    t->res.st.st_ino == a->res.st.st_ino)
		return hop_fail(h, EINVAL, "%s and %s are the same file", a->res.path, t->res.path);

	if ((in = fsb_grant_open_for_backup(h->rootfd, &a->res)) < 0)
		return hop_fail(h, in == -EAGAIN ? EAGAIN : -in, "cannot read %s: %s", a->res.path,
				strerror(-in));
	if (fstat(in, &st) < 0) {
		rc = hop_fail(h, errno, "cannot read %s: %s", a->res.path, strerror(errno));
		goto out_in;
	}
	if (!t->res.exists &&
	    (hop_record(h, FSB_OP_CREATE, r->to, t->res.path, NULL, -1, NULL, false) < 0 ||
	     hop_sync_backups(h) < 0 || hop_audit_before(h) < 0)) {
		rc = -1;
		goto out_in;
	}
	out = fsb_grant_open(h->rootfd, &t->res, O_WRONLY | O_CREAT | O_TRUNC, 0600,
			     backup_copy_target, h);
	if (out < 0) {
		rc = h->err != 0 ? -1
				 : hop_fail(h, out == -EEXIST ? EAGAIN : -out, "cannot open %s: %s",
					    t->res.path, out == -EEXIST ? "it appeared since it was "
					    "checked; ask again" : strerror(-out));
		goto out_in;
	}
	h->changed = true;
	rc = copy_data(in, out, st.st_size);
	/* A new file gets the source's permission bits; an existing one keeps
	 * its own, as cp does. */
	if (rc == 0 && !t->res.exists && fchmod(out, st.st_mode & 07777) < 0)
		rc = -errno;
	if (close(out) < 0 && rc == 0)
		rc = -errno;
	if (rc < 0)
		rc = hop_fail(h, -rc, "cannot copy %s to %s: %s", a->res.path, t->res.path,
			      strerror(-rc));
out_in:
	close(in);
	return rc;
}
