/*
 * hostop_delete.c — the host operation `delete` (see hostop.h):
 * judged entry by entry, backed up, then unlinked, removed recursively or
 * moved to the trash by the FreeDesktop.org specification (trash.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hostop_internal.h"
#include "trash.h"
#include "tree.h"

static int remove_entry(const struct fsb_tree_entry *e, bool post, void *arg)
{
	struct tree_job *j = arg;
	struct hostop *h = j->h;
	bool dir = S_ISDIR(e->st->st_mode);

	if (dir && !post)
		return 0;
	if (hop_inode_set_get(&h->judged, e->st) == NULL) {
		hop_fail(h, EAGAIN, "%s/%s appeared after the check and was not backed up: it and "
			 "the directories above it were left; everything removed before it is "
			 "in the backup", j->old_top, e->rel);
		return STOPPED;
	}
	if (unlinkat(e->dirfd, e->name, dir ? AT_REMOVEDIR : 0) < 0) {
		/* Swapped for something of another type (or gone) since the walk
		 * saw it: the tree is changing; ask again. */
		if (errno == ENOTDIR || errno == EISDIR || errno == ENOENT)
			hop_fail(h, EAGAIN, "%s/%s changed while it was deleted; what was removed "
				 "before it is in the backup; ask again", j->old_top, e->rel);
		else
			hop_fail(h, errno, "cannot remove %s/%s: %s", j->old_top, e->rel,
				 strerror(errno));
		return STOPPED;
	}
	h->changed = true;
	return 0;
}

bool hop_dir_is_empty(int pfd, const char *name, const struct stat *st)
{
	int fd = fsb_tree_open_dir(pfd, name, st);

	return fd >= 0 && fsb_tree_dir_is_empty(fd);
}

struct trash_job {
	struct hostop *h;
	int pfd;
	const char *name;
	const struct stat *st;
};

/* Just before the move: the trash's two new names are journaled as paths
 * the cycle creates (and, for a directory, every entry under its name in
 * the trash), so that a restore takes the object out of the trash again. */
static int before_trash(const char *trashed, const char *info, void *arg)
{
	struct trash_job *t = arg;
	struct hostop *h = t->h;
	struct tree_job j = {
		.h = h, .old_top = h->src.res.path, .new_top = trashed,
		.new_op = FSB_OP_DELETE,
	};

	struct stat now;

	/* A file whose content is not in the backup stays in the trash on a
	 * restore (the trash is then the only copy). */
	if (!h->src_unsaved &&
	    (hop_record(h, FSB_OP_DELETE, info, info, NULL, -1, NULL, false) < 0 ||
	     hop_record(h, FSB_OP_DELETE, trashed, trashed, NULL, -1, NULL, false) < 0))
		return -h->err;
	if ((S_ISDIR(t->st->st_mode) && hop_walk(&j, t->pfd, t->name, t->st, hop_save_entry) < 0) ||
	    hop_sync_backups(h) < 0 || (!h->audited && hop_audit_before(h) < 0) ||
	    hop_still_there(h, t->pfd, t->name, &h->src, &now) < 0)
		return -h->err;
	return 0;
}

static int trash(struct hostop *h, int pfd, const char *name, const struct stat *st)
{
	struct trash_job job = { .h = h, .pfd = pfd, .name = name, .st = st };
	struct fsb_trash_place place;
	char parent[PATH_MAX], why[512];
	char *slash;
	int rc;

	if ((rc = fsb_trash_place_init(&place, h->b->cfg.home)) < 0)
		return hop_fail(h, -rc, "there is no trash to move %s to: neither XDG_DATA_HOME nor "
				"HOME is set", h->src.res.path);
	snprintf(parent, sizeof(parent), "%s", h->src.res.path);
	slash = strrchr(parent, '/');
	if (slash == parent)
		slash[1] = '\0';
	else
		*slash = '\0';
	why[0] = '\0';
	rc = fsb_trash_move(&place, pfd, parent, name, before_trash, &job, h->trashed,
			    h->trash_info, why, sizeof(why));
	if (rc < 0) {
		/* A refusal from before_trash has set the outcome already. */
		if (h->err == 0 || why[0] != '\0')
			hop_fail(h, -rc, "%s", why[0] ? why : strerror(-rc));
		return -1;
	}
	h->changed = true;
	return 0;
}

int hop_delete(struct hostop *h)
{
	const struct fsb_hostop_req *r = h->req;
	struct fsb_access *a = &h->src;
	struct tree_job j = { .h = h, .old_op = FSB_OP_DELETE, .backup_old = true };
	const char *name;
	struct stat st;
	bool dir;
	int pfd, rc = -1;

	if (hop_judge(h, a, FSB_OP_DELETE, r->path, FSB_RESOLVE_THROUGH_PARENT) < 0)
		return -1;
	if (a->errnum == ENOENT || (a->errnum == 0 && !a->res.exists))
		return r->force ? 0 : hop_fail(h, ENOENT, "%s does not exist", r->path);
	if (a->errnum != 0)
		return hop_fail(h, a->errnum, NULL);
	if ((pfd = hop_open_parent(h, a, &name)) < 0)
		return -1;
	if (hop_still_there(h, pfd, name, a, &st) < 0)
		goto out;
	dir = S_ISDIR(st.st_mode);
	if (!dir && h->who->must_be_dir) {
		hop_fail(h, ENOTDIR, "%s is not a directory", a->res.path);
		goto out;
	}
	if (dir && h->who->delete_file_only) {
		hop_fail(h, EISDIR, "%s is a directory", a->res.path);
		goto out;
	}
	if (!dir && h->who->delete_dir_only) {
		hop_fail(h, ENOTDIR, "%s is not a directory", a->res.path);
		goto out;
	}
	j.old_top = a->res.path;
	if (dir && !r->recursive && !hop_dir_is_empty(pfd, name, &st)) {
		hop_fail(h, ENOTEMPTY, "%s is a directory and not empty: delete it with "
			 "\"recursive\": true", a->res.path);
		goto out;
	}
	if (dir && hop_walk(&j, pfd, name, &st, hop_check_entry) < 0)
		goto out;
	if (hop_backup_at(h, FSB_OP_DELETE, r->path, a->res.path, pfd, name, &st,
			  !a->verdict.backup) < 0)
		goto out;
	h->src_unsaved = h->last_unsaved;
	if (dir && hop_walk(&j, pfd, name, &st, hop_save_entry) < 0)
		goto out;
	/* The trash journals its own names and audits just before its move. */
	if (r->delete_trash) {
		rc = hop_still_there(h, pfd, name, a, &st) < 0 ? -1 : trash(h, pfd, name, &st);
		goto out;
	}
	if (hop_sync_backups(h) < 0 || hop_audit_before(h) < 0)
		goto out;
	if (dir && hop_walk(&j, pfd, name, &st, remove_entry) < 0)
		goto out;
	if (hop_still_there(h, pfd, name, a, &st) < 0)
		goto out;
	if (unlinkat(pfd, name, dir ? AT_REMOVEDIR : 0) < 0) {
		hop_fail(h, errno, "cannot remove %s: %s", a->res.path, strerror(errno));
		goto out;
	}
	h->changed = true;
	rc = 0;
out:
	close(pfd);
	return rc;
}
