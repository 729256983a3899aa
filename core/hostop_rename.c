/*
 * hostop_rename.c — the host operation `rename` (see hostop.h), and
 * RENAME_EXCHANGE for the supervisor: source and target judged, with
 * everything beneath a directory under its old name and its new one, both
 * journaled (what moves as moved, nothing copied; a replaced target kept),
 * then one renameat2 on the pinned parents.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hostop_internal.h"

int hop_rename(struct hostop *h)
{
	const struct fsb_hostop_req *r = h->req;
	struct fsb_access *a = &h->src, *t = &h->dst;
	struct tree_job j = {
		.h = h, .old_op = FSB_OP_RENAME_FROM, .new_op = FSB_OP_RENAME_TO,
		.backup_old = true,
	};
	const char *name, *tname;
	struct stat st, tst, pst;
	int pfd = -1, tfd = -1, rc = -1;
	bool dir;

	if (hop_judge(h, a, FSB_OP_RENAME_FROM, r->from, FSB_RESOLVE_THROUGH_PARENT) < 0)
		return -1;
	if (a->errnum == 0 && !a->res.exists)
		return hop_fail(h, ENOENT, "%s does not exist", r->from);
	if (a->errnum != 0)
		return hop_fail(h, a->errnum, NULL);
	if (hop_judge(h, t, FSB_OP_RENAME_TO, r->to, FSB_RESOLVE_THROUGH_PARENT) < 0)
		return -1;
	if (t->errnum != 0)
		return hop_fail(h, t->errnum, t->errnum == ENOENT ? "the parent of %s does not exist"
				: NULL, r->to);
	if (h->who->rename_noreplace && t->res.exists)
		return hop_fail(h, EEXIST, "%s exists", t->res.path);
	if (strcmp(a->res.path, t->res.path) == 0)
		return 0;
	dir = S_ISDIR(a->res.st.st_mode);
	if (!dir && h->who->must_be_dir)
		return hop_fail(h, ENOTDIR, "%s is not a directory", a->res.path);
	if (dir && fsb_path_within(t->res.path, a->res.path))
		return hop_fail(h, EINVAL, "cannot move the directory %s into itself", a->res.path);
	if ((pfd = hop_open_parent(h, a, &name)) < 0 || (tfd = hop_open_parent(h, t, &tname)) < 0)
		goto out;
	if (hop_still_there(h, pfd, name, a, &st) < 0 ||
	    (t->res.exists && hop_still_there(h, tfd, tname, t, &tst) < 0))
		goto out;
	/* Two names of one inode: rename(2) leaves both as they are. */
	if (t->res.exists && tst.st_dev == st.st_dev && tst.st_ino == st.st_ino) {
		rc = 0;
		goto out;
	}
	if (fstat(tfd, &pst) == 0 && pst.st_dev != st.st_dev) {
		hop_fail(h, EXDEV, "%s and %s are on different filesystems: rename cannot move it; "
			 "copy and delete instead", a->res.path, t->res.path);
		goto out;
	}
	/* What rename(2) would refuse is refused before anything is journaled:
	 * a failed rename must leave no entries under a name that is not a
	 * directory (a restore could not walk there). */
	if (t->res.exists && dir && !S_ISDIR(tst.st_mode)) {
		hop_fail(h, ENOTDIR, "%s is a %s: a directory cannot replace it", t->res.path,
			 fsb_file_type_name(tst.st_mode));
		goto out;
	}
	if (t->res.exists && !dir && S_ISDIR(tst.st_mode)) {
		hop_fail(h, EISDIR, "%s is a directory: a %s cannot replace it", t->res.path,
			 fsb_file_type_name(st.st_mode));
		goto out;
	}
	if (t->res.exists && dir && !hop_dir_is_empty(tfd, tname, &tst)) {
		hop_fail(h, ENOTEMPTY, "%s is a directory and not empty: rename replaces only an "
			 "empty one", t->res.path);
		goto out;
	}
	j.old_top = a->res.path;
	j.new_top = j.move_top = t->res.path;
	if (dir && hop_walk(&j, pfd, name, &st, hop_check_entry) < 0)
		goto out;
	/* The source and everything beneath it are journaled with where they
	 * go and no content: they live on there, and a restore moves them
	 * back. Only a target the rename replaces is kept. */
	h->moved_to = t->res.path;
	rc = hop_backup_at(h, FSB_OP_RENAME_FROM, r->from, a->res.path, pfd, name, &st,
			   !a->verdict.backup);
	h->moved_to = NULL;
	if (rc < 0)
		goto out;
	rc = -1;
	/* A file moved without its content in the backup stays where it went
	 * on a restore: its new name is not journaled as one to remove. */
	h->src_unsaved = h->last_unsaved;
	if ((dir && hop_walk(&j, pfd, name, &st, hop_save_entry) < 0) ||
	    (t->res.exists ? hop_backup_replaced(h, FSB_OP_RENAME_TO, r->to, t->res.path, tfd,
						 tname, &tst, !t->verdict.backup, &st)
	     : h->src_unsaved ? 0
			      : hop_record_new_name(h, FSB_OP_RENAME_TO, r->to, t->res.path,
						    &st)) < 0 ||
	    hop_sync_backups(h) < 0 || hop_audit_before(h) < 0)
		goto out;
	/* Last look before the change; a target judged absent must still be
	 * absent, which RENAME_NOREPLACE makes the kernel check. */
	if (hop_still_there(h, pfd, name, a, &st) < 0 ||
	    (t->res.exists && hop_still_there(h, tfd, tname, t, &tst) < 0))
		goto out;
	if (renameat2(pfd, name, tfd, tname, t->res.exists ? 0 : RENAME_NOREPLACE) < 0) {
		if (errno == EEXIST)
			hop_fail(h, EAGAIN, "%s appeared since it was checked; nothing was changed; "
				 "ask again", t->res.path);
		else
			hop_fail(h, errno, "cannot rename %s to %s: %s", a->res.path, t->res.path,
				 strerror(errno));
		goto out;
	}
	h->changed = true;
	rc = 0;
out:
	if (pfd >= 0)
		close(pfd);
	if (tfd >= 0)
		close(tfd);
	return rc;
}

/*
 * renameat2(RENAME_EXCHANGE): each name is the source of one move and the
 * target of the other, so each is judged as both; both are journaled as
 * moved with everything beneath them (no content copied), then every entry
 * under the name it goes to, then they are swapped on their pinned
 * parents. A restore moves each name's old content back and removes what
 * only the other tree had.
 */
int hop_exchange(struct hostop *h)
{
	const struct fsb_hostop_req *r = h->req;
	struct fsb_access *a = &h->src, *t = &h->dst;
	struct tree_job ja = {
		.h = h, .old_op = FSB_OP_RENAME_FROM, .new_op = FSB_OP_RENAME_TO,
		.backup_old = true,
	};
	struct tree_job jt = ja;
	const char *name, *tname;
	struct stat st, tst;
	int pfd = -1, tfd = -1, rc = -1;

	if (hop_judge(h, a, FSB_OP_RENAME_FROM, r->from, FSB_RESOLVE_THROUGH_PARENT) < 0)
		return -1;
	if (a->errnum == 0 && !a->res.exists)
		return hop_fail(h, ENOENT, "%s does not exist", r->from);
	if (a->errnum != 0)
		return hop_fail(h, a->errnum, NULL);
	if (hop_judge(h, t, FSB_OP_RENAME_FROM, r->to, FSB_RESOLVE_THROUGH_PARENT) < 0)
		return -1;
	if (t->errnum == 0 && !t->res.exists)
		return hop_fail(h, ENOENT, "%s does not exist", r->to);
	if (t->errnum != 0)
		return hop_fail(h, t->errnum, NULL);
	/* Each name also receives the other's object. */
	if (hop_judge_entry(h, FSB_OP_RENAME_TO, a->res.path, &a->res.st) < 0 ||
	    hop_judge_entry(h, FSB_OP_RENAME_TO, t->res.path, &t->res.st) < 0)
		return -1;
	if (strcmp(a->res.path, t->res.path) == 0)
		return 0;
	if ((S_ISDIR(a->res.st.st_mode) && fsb_path_within(t->res.path, a->res.path)) ||
	    (S_ISDIR(t->res.st.st_mode) && fsb_path_within(a->res.path, t->res.path)))
		return hop_fail(h, EINVAL, "cannot exchange a directory with a name beneath it");
	if ((pfd = hop_open_parent(h, a, &name)) < 0 || (tfd = hop_open_parent(h, t, &tname)) < 0)
		goto out;
	if (hop_still_there(h, pfd, name, a, &st) < 0 || hop_still_there(h, tfd, tname, t, &tst) < 0)
		goto out;
	ja.old_top = a->res.path;
	ja.new_top = t->res.path;
	jt.old_top = t->res.path;
	jt.new_top = a->res.path;
	if ((S_ISDIR(st.st_mode) && hop_walk(&ja, pfd, name, &st, hop_check_entry) < 0) ||
	    (S_ISDIR(tst.st_mode) && hop_walk(&jt, tfd, tname, &tst, hop_check_entry) < 0))
		goto out;
	/* The old side of both first: each path's first record is its state
	 * before the swap. */
	ja.new_top = jt.new_top = NULL;
	ja.move_top = t->res.path;
	jt.move_top = a->res.path;
	h->moved_to = t->res.path;
	rc = hop_backup_at(h, FSB_OP_RENAME_FROM, r->from, a->res.path, pfd, name, &st,
			   !a->verdict.backup);
	h->moved_to = a->res.path;
	if (rc == 0)
		rc = hop_backup_at(h, FSB_OP_RENAME_FROM, r->to, t->res.path, tfd, tname, &tst,
				   !t->verdict.backup);
	h->moved_to = NULL;
	if (rc < 0)
		goto out;
	rc = -1;
	if ((S_ISDIR(st.st_mode) && hop_walk(&ja, pfd, name, &st, hop_save_entry) < 0) ||
	    (S_ISDIR(tst.st_mode) && hop_walk(&jt, tfd, tname, &tst, hop_save_entry) < 0))
		goto out;
	/* Then each tree's entries under the name it goes to, as absent
	 * where the other tree had none: a restore takes them away there. */
	ja.backup_old = jt.backup_old = false;
	ja.new_top = t->res.path;
	jt.new_top = a->res.path;
	if ((S_ISDIR(st.st_mode) && hop_walk(&ja, pfd, name, &st, hop_save_entry) < 0) ||
	    (S_ISDIR(tst.st_mode) && hop_walk(&jt, tfd, tname, &tst, hop_save_entry) < 0) ||
	    hop_sync_backups(h) < 0 || hop_audit_before(h) < 0)
		goto out;
	if (hop_still_there(h, pfd, name, a, &st) < 0 || hop_still_there(h, tfd, tname, t, &tst) < 0)
		goto out;
	if (renameat2(pfd, name, tfd, tname, RENAME_EXCHANGE) < 0) {
		hop_fail(h, errno, "cannot exchange %s and %s: %s", a->res.path, t->res.path,
			 strerror(errno));
		goto out;
	}
	h->changed = true;
	rc = 0;
out:
	if (pfd >= 0)
		close(pfd);
	if (tfd >= 0)
		close(tfd);
	return rc;
}
