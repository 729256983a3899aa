/*
 * hostop_steps.c — the steps every host operation goes through (see
 * hostop_internal.h): the outcome, inode sets, judging a path and the
 * entries beneath it, reaching what was judged, backing up, the audit line
 * before the change, and the tree walks that judge and save. hostop.c runs
 * an operation; the kinds (hostop_delete.c, …) call these, never back into
 * hostop.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "at.h"
#include "call_stages.h"
#include "hostop_internal.h"
#include "modify_backup.h"
#include "tree.h"

/* ---- outcome ------------------------------------------------------------ */

/* Set the outcome to `err` with a sentence; returns -1 for `return hop_fail()`. */
int hop_fail(struct hostop *h, int err, const char *fmt, ...)
{
	va_list ap;

	h->err = err;
	h->why[0] = '\0';
	if (fmt != NULL) {
		va_start(ap, fmt);
		vsnprintf(h->why, sizeof(h->why), fmt, ap);
		va_end(ap);
	}
	return -1;
}

static int join(struct hostop *h, char *out, const char *top, const char *rel)
{
	if ((size_t)snprintf(out, PATH_MAX, "%s/%s", top, rel) >= PATH_MAX)
		return hop_fail(h, ENAMETOOLONG, "%s/%s is longer than PATH_MAX", top, rel);
	return 0;
}

/* ---- inode sets --------------------------------------------------------- */

static int key_cmp(const void *a, const void *b)
{
	const struct inode_key *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static int inode_set_add(struct hostop *h, struct inode_set *s, const struct stat *st,
			 bool skip_content)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct inode_key *k = realloc(s->keys, cap * sizeof(*k));

		if (k == NULL)
			return hop_fail(h, ENOMEM, "out of memory");
		s->keys = k;
		s->cap = cap;
	}
	s->keys[s->n++] = (struct inode_key){ st->st_dev, st->st_ino, skip_content };
	s->sorted = false;
	return 0;
}

const struct inode_key *hop_inode_set_get(struct inode_set *s, const struct stat *st)
{
	struct inode_key k = { st->st_dev, st->st_ino, false };

	if (s->n == 0)
		return NULL;
	if (!s->sorted) {
		qsort(s->keys, s->n, sizeof(*s->keys), key_cmp);
		s->sorted = true;
	}
	return bsearch(&k, s->keys, s->n, sizeof(*s->keys), key_cmp);
}

/* ---- judging ------------------------------------------------------------ */

static void access_init(struct hostop *h, struct fsb_access *a, enum fsb_op op,
			const char *path)
{
	memset(a, 0, sizeof(*a));
	a->op = op;
	a->requested = path;
	a->session = h->who->session;
	a->tool_call = h->who->tool_call;
	a->pid = h->who->pid;
	a->uid = h->who->uid;
	a->has_view = h->who->view_fd >= 0;
	a->view_fd = h->who->view_fd;
	a->dir_must_be_empty = h->req->op == FSB_HOSTOP_DELETE && !h->req->recursive;
	a->makes_parents = h->req->op == FSB_HOSTOP_MKDIR && h->req->recursive;
}

/* Every path is judged as a question first (peek): an approval it rests
 * on is used up only once the whole operation is allowed, so that a retry
 * after approving one entry does not need the earlier ones approved again. */
static int note_approval(struct hostop *h, const struct fsb_access *a)
{
	struct approved *v;

	if (a->verdict.origin != FSB_BY_APPROVAL_ONCE &&
	    a->verdict.origin != FSB_BY_APPROVAL_SESSION)
		return 0;
	v = realloc(h->approved, (h->napproved + 1) * sizeof(*v));
	if (v == NULL)
		return hop_fail(h, ENOMEM, "out of memory");
	h->approved = v;
	v = &v[h->napproved];
	if ((v->path = strdup(a->res.path[0] ? a->res.path : a->normalised)) == NULL)
		return hop_fail(h, ENOMEM, "out of memory");
	v->op = a->op;
	v->exists = a->res.exists;
	v->st = a->res.st;
	h->napproved++;
	return 0;
}

/*
 * Judge one requested path. Returns -1 when the policy refused it (deny,
 * or ask: the outcome names the rule and the prompt), else 0 — with
 * a->errnum telling whether resolution failed (ENOENT, ENOTDIR, …), which
 * each operation reads in its own way.
 */
int hop_judge(struct hostop *h, struct fsb_access *a, enum fsb_op op, const char *path,
	      enum fsb_resolve_strategy strategy)
{
	access_init(h, a, op, path);
	a->strategy = strategy;
	a->peek = true;
	fsb_broker_decide(h->b, a);
	/* Failing as it would bare is no refusal: the line says "kernel". */
	if (a->refused_anyway)
		return hop_fail(h, a->errnum, "%s: %s", path, strerror(a->errnum));
	if (a->verdict.decision != FSB_ALLOW) {
		h->refused = a;
		return hop_fail(h, a->errnum ? a->errnum : EACCES, NULL);
	}
	return note_approval(h, a);
}

/* Judge a real path met in a walk (`st` its lstat), or one the operation
 * will make (`st` NULL). */
int hop_judge_entry(struct hostop *h, enum fsb_op op, const char *real, const struct stat *st)
{
	struct fsb_access *a = &h->entry;

	access_init(h, a, op, real);
	a->given_resolved = true;
	a->peek = true;
	snprintf(a->res.path, sizeof(a->res.path), "%s", real);
	a->res.exists = st != NULL;
	if (st != NULL)
		a->res.st = *st;
	fsb_broker_decide(h->b, a);
	if (a->verdict.decision != FSB_ALLOW) {
		h->refused = a;
		snprintf(h->denied, sizeof(h->denied), "%s", real);
		return hop_fail(h, a->errnum ? a->errnum : EACCES, NULL);
	}
	return note_approval(h, a);
}

/* Everything is allowed: use up the approvals it rested on. One taken by
 * another request meanwhile makes this one ask again. */
static int take_approvals(struct hostop *h)
{
	struct fsb_access *a = &h->entry;

	for (size_t i = 0; i < h->ntoo_large; i++) {
		struct approved *v = &h->too_large[i];

		if (fsb_backup_take_too_large(h->b, h->who->session, v->path, v->st.st_dev,
					      v->st.st_ino) < 0)
			return hop_fail(h, EAGAIN, "the approval to change %s without a backup was "
					"used by another request meanwhile; ask again", v->path);
	}

	for (size_t i = 0; i < h->napproved; i++) {
		struct approved *v = &h->approved[i];

		access_init(h, a, v->op, v->path);
		a->given_resolved = true;
		snprintf(a->res.path, sizeof(a->res.path), "%s", v->path);
		a->res.exists = v->exists;
		a->res.st = v->st;
		fsb_broker_decide(h->b, a);
		if (a->verdict.decision != FSB_ALLOW) {
			h->refused = a;
			snprintf(h->denied, sizeof(h->denied), "%s", v->path);
			return hop_fail(h, a->errnum ? a->errnum : EACCES, NULL);
		}
	}
	return 0;
}

/* ---- reaching what was judged ------------------------------------------ */

int hop_open_parent(struct hostop *h, const struct fsb_access *a, const char **name)
{
	int fd = fsb_at_open_parent(h->rootfd, a->res.path, name);

	if (fd >= 0)
		return fd;
	if (fd == -ELOOP || fd == -ENOENT || fd == -ENOTDIR)
		return hop_fail(h, EAGAIN, "a directory on the way to %s changed since it was "
				"checked; nothing was changed; ask again", a->res.path);
	return hop_fail(h, -fd, "cannot open the directory of %s: %s", a->res.path, strerror(-fd));
}

/* The object at `name` is still the one `a` judged; *st is its lstat. */
int hop_still_there(struct hostop *h, int pfd, const char *name, const struct fsb_access *a,
		    struct stat *st)
{
	if (fstatat(pfd, name, st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    st->st_dev != a->res.st.st_dev || st->st_ino != a->res.st.st_ino)
		return hop_fail(h, EAGAIN, "%s changed since it was checked; nothing was changed; "
				"ask again", a->res.path);
	return 0;
}

int hop_reach(struct hostop *h, const struct fsb_access *a, struct stat *st)
{
	int fd = fsb_at_reach(h->rootfd, &a->res, st);

	if (fd >= 0)
		return fd;
	if (fd == -EAGAIN || fd == -ELOOP)
		return hop_fail(h, EAGAIN, "%s changed since it was checked; nothing was changed; "
				"ask again", a->res.path);
	return hop_fail(h, -fd, "cannot reach %s: %s", a->res.path, strerror(-fd));
}

/* ---- backing up --------------------------------------------------------- */

/* Journal the state of `real` (`st`, NULL when the operation creates it)
 * with the content read from `rdfd` (a regular file) or its link target;
 * with `metadata_only`, the prior metadata alone. `made`: for a name the
 * operation creates, the object that will stand there, when known. */
static int hop_record_entry(struct hostop *h, enum fsb_op op, const char *requested,
			    const char *real, const struct stat *st, int rdfd, const char *target,
			    bool skip_content, bool metadata_only, const struct stat *made)
{
	struct fsb_backup_result res;
	struct fsb_backup_entry e = {
		.op = op,
		.path = requested,
		.resolved = real,
		.prior = st,
		.made = made,
		.fd = rdfd,
		.link_target = target,
		.skip_content = skip_content,
		.metadata_only = metadata_only,
		.moved_to = op == FSB_OP_RENAME_FROM ? h->moved_to : NULL,
		/* A name that goes for good: its inode can be kept rather than
		 * copied. Not a rename's source nor a file moved to the trash,
		 * which live on (a second link would show, and a later write
		 * would change the backup) — unless it has other links already
		 * and is too large to copy (can_keep in backup.c): a pnpm
		 * package's big file, moved into place. */
		.keep_inode = (op == FSB_OP_DELETE && !h->req->delete_trash) ||
			      op == FSB_OP_RENAME_TO || (st != NULL && st->st_nlink > 1),
		.tool_call = h->who->tool_call,
		.trace = h->req->trace,
		.has_view = h->who->view_fd >= 0,
		.view_fd = h->who->view_fd,
	};
	struct fsb_backup_outcome out;
	enum fsb_stage was = fsb_stage_push(FSB_STAGE_BACKUP);
	int rc = fsb_backup_entry(h->b, h->who->session, &e, &res, &out);

	fsb_stage_pop(was);

	if (rc < 0) {
		snprintf(h->why, sizeof(h->why), "%s", out.why);
		h->err = -rc;
		/* Too large, and the pack says ask: the operation waits on the
		 * block like on any ask. */
		if (out.block_id[0]) {
			struct fsb_access *a = &h->backup_ask;

			access_init(h, a, op, requested);
			a->verdict.decision = FSB_ASK;
			snprintf(a->verdict.rule, sizeof(a->verdict.rule), "%s", FSB_TOO_LARGE_RULE);
			snprintf(a->verdict.reason, sizeof(a->verdict.reason), "%s", out.why);
			snprintf(a->block_id, sizeof(a->block_id), "%s", out.block_id);
			h->refused = a;
			snprintf(h->denied, sizeof(h->denied), "%s", real);
		}
		return -1;
	}
	if (out.approved_too_large) {
		struct approved *v = realloc(h->too_large, (h->ntoo_large + 1) * sizeof(*v));

		if (v == NULL || (v[h->ntoo_large].path = strdup(real)) == NULL) {
			if (v != NULL)
				h->too_large = v;
			return hop_fail(h, ENOMEM, "out of memory");
		}
		h->too_large = v;
		v[h->ntoo_large].st = *st;
		h->ntoo_large++;
	}
	if (res.kept) {
		void *v = realloc(h->kept, (h->nkept + 1) * sizeof(*h->kept));

		/* Without memory to remember it, the link would outlive a
		 * failed change: make it a copy now. */
		if (v == NULL) {
			fsb_backup_unshare(h->b, h->who->session, res.object);
			return hop_fail(h, ENOMEM, "out of memory");
		}
		h->kept = v;
		memcpy(h->kept[h->nkept++], res.object, sizeof(*h->kept));
	}
	if (res.object[0] != '\0')
		h->backups++;
	/* A file whose content the backup does not hold (backup.skip, too
	 * large, backups off): a restore cannot bring it back. */
	h->last_unsaved = st != NULL && S_ISREG(st->st_mode) && res.object[0] == '\0' &&
			  !res.metadata_only && !res.moved;
	return 0;
}

int hop_record(struct hostop *h, enum fsb_op op, const char *requested, const char *real,
	       const struct stat *st, int rdfd, const char *target, bool skip_content)
{
	return hop_record_entry(h, op, requested, real, st, rdfd, target, skip_content, false,
				NULL);
}

int hop_record_new_name(struct hostop *h, enum fsb_op op, const char *requested,
			const char *real, const struct stat *made)
{
	return hop_record_entry(h, op, requested, real, NULL, -1, NULL, false, false, made);
}

int hop_note_parent(struct hostop *h, const struct fsb_access *a)
{
	enum fsb_stage was = fsb_stage_push(FSB_STAGE_BACKUP);
	int rc = fsb_backup_note_parent(h->b, h->who->session, a);

	fsb_stage_pop(was);
	if (rc < 0)
		return hop_fail(h, EIO, "the backup journal cannot be written; nothing was "
				"changed");
	return 0;
}

int hop_backup_at(struct hostop *h, enum fsb_op op, const char *requested, const char *real,
		  int pfd, const char *name, const struct stat *st, bool skip_content)
{
	return hop_backup_replaced(h, op, requested, real, pfd, name, st, skip_content, NULL);
}

int hop_backup_replaced(struct hostop *h, enum fsb_op op, const char *requested,
			const char *real, int pfd, const char *name, const struct stat *st,
			bool skip_content, const struct stat *made)
{
	char target[PATH_MAX];
	struct stat now;
	ssize_t n;
	int fd = -1, rc;

	if (S_ISREG(st->st_mode) && !skip_content) {
		fd = openat(pfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (fd < 0 && (errno == ELOOP || errno == ENOENT))
			return hop_fail(h, EAGAIN, "%s changed since it was checked; nothing was "
					"changed; ask again", real);
		if (fd < 0)
			return hop_fail(h, errno, "cannot read %s to back it up: %s", real,
					strerror(errno));
		if (fstat(fd, &now) < 0 || now.st_dev != st->st_dev || now.st_ino != st->st_ino) {
			close(fd);
			return hop_fail(h, EAGAIN, "%s changed since it was checked; nothing was "
					"changed; ask again", real);
		}
	} else if (S_ISLNK(st->st_mode)) {
		n = readlinkat(pfd, name, target, sizeof(target) - 1);
		/* Not a symlink any more, or gone: it changed since the walk. */
		if (n < 0 && (errno == EINVAL || errno == ENOENT))
			return hop_fail(h, EAGAIN, "%s changed since it was checked; nothing was "
					"changed; ask again", real);
		if (n < 0)
			return hop_fail(h, errno, "cannot read the symlink %s: %s", real,
					strerror(errno));
		target[n] = '\0';
	}
	rc = hop_record_entry(h, op, requested, real, st, fd, S_ISLNK(st->st_mode) ? target : NULL,
			      skip_content, false, made);
	if (fd >= 0)
		close(fd);
	return rc;
}

int hop_backup_meta(struct hostop *h, const struct fsb_access *a, const struct stat *st)
{
	/* chmod and touch leave the content as it is: the old metadata is
	 * all a restore needs, so nothing is read or copied. */
	return hop_record_entry(h, a->op, a->requested, a->res.path, st, -1, NULL,
				!a->verdict.backup, fsb_op_metadata_only(a->op), NULL);
}

int hop_sync_backups(struct hostop *h)
{
	int rc = fsb_backup_sync(h->b, h->who->session, h->why, sizeof(h->why));

	if (rc < 0) {
		h->err = -rc;
		return -1;
	}
	return 0;
}

/* ---- audit -------------------------------------------------------------- */

void hop_audit_line(struct hostop *h, struct fsb_audit_line *l, int errnum)
{
	const struct fsb_access *a = h->refused ? h->refused
				     : h->src.requested ? &h->src : &h->dst;

	/* The outcome's errno, not the access's (a mkdir -p resolves a missing
	 * path). */
	fsb_access_audit_line(l, a, "ipc-host-op", errnum);
	fsb_audit_line_str(l, "hostOp", fsb_hostop_name(h->req->op));
	if (h->dst.requested != NULL && a != &h->dst) {
		fsb_audit_line_path(l, "to", h->dst.requested);
		fsb_audit_line_path(l, "normalisedTo",
				    h->dst.resolve_err == 0 ? h->dst.res.path : h->dst.normalised);
	}
	if (h->denied[0])
		fsb_audit_line_path(l, "deniedPath", h->denied);
	if (h->req->trace != NULL)
		fsb_audit_line_str(l, "traceId", h->req->trace);
	fsb_audit_line_int(l, "pid", h->who->pid);
}

/* The line before the change: no line, no change. */
int hop_audit_before(struct hostop *h)
{
	struct fsb_audit_line l;
	enum fsb_stage was;
	int rc;

	if (take_approvals(h) < 0)
		return -1;
	was = fsb_stage_push(FSB_STAGE_AUDIT);
	hop_audit_line(h, &l, h->refused != NULL ? h->err : 0);
	fsb_audit_line_str(&l, "result", "planned");
	fsb_audit_line_int(&l, "entries", h->entries);
	fsb_audit_line_int(&l, "backups", h->backups);
	rc = fsb_broker_audit_line(h->b, h->who->session, &l);
	fsb_stage_pop(was);
	if (rc < 0)
		return hop_fail(h, EIO, "the audit log cannot be written; nothing was changed");
	h->audited = true;
	return 0;
}

/* ---- walks -------------------------------------------------------------- */

/* The walk's own error (not one a callback stopped it with). */
static int walk_failed(struct hostop *h, const char *top, int rc)
{
	if (rc == STOPPED)
		return -1;
	if (rc == -EAGAIN)
		return hop_fail(h, EAGAIN, "something beneath %s changed while it was walked; ask "
				"again", top);
	if (rc == -ELOOP)
		return hop_fail(h, ELOOP, "%s is more than %d directories deep", top,
				FSB_TREE_MAX_DEPTH);
	return hop_fail(h, -rc, "cannot walk %s: %s", top, strerror(-rc));
}

/* Judge every entry beneath, under its old name and its new one, and note
 * its inode: the walks after this one act on what was judged only. */
int hop_check_entry(const struct fsb_tree_entry *e, bool post, void *arg)
{
	struct tree_job *j = arg;
	struct hostop *h = j->h;
	char path[PATH_MAX];
	mode_t m = e->st->st_mode;
	bool skip;

	if (post)
		return 0;
	h->entries++;
	if (e->mount_root) {
		hop_fail(h, EBUSY, "%s/%s is a mount point: fsbroker does not %s across mounts; "
			 "nothing was changed", j->old_top, e->rel, fsb_hostop_name(h->req->op));
		return STOPPED;
	}
	if (j->copy && (S_ISCHR(m) || S_ISBLK(m) || S_ISSOCK(m))) {
		hop_fail(h, EPERM, "%s/%s is a %s: copy makes no devices or sockets; nothing was "
			 "copied", j->old_top, e->rel, fsb_file_type_name(m));
		return STOPPED;
	}
	if (join(h, path, j->old_top, e->rel) < 0 || hop_judge_entry(h, j->old_op, path, e->st) < 0)
		return STOPPED;
	skip = !h->entry.verdict.backup;
	if (j->new_top != NULL &&
	    (join(h, path, j->new_top, e->rel) < 0 || hop_judge_entry(h, j->new_op, path, NULL) < 0))
		return STOPPED;
	return inode_set_add(h, &h->judged, e->st, skip) < 0 ? STOPPED : 0;
}

/* Back up every entry judged: its state under the old name, and its
 * absence under the new one — unless its content could not be saved, when
 * a restore must leave it where it went rather than remove it there. */
int hop_save_entry(const struct fsb_tree_entry *e, bool post, void *arg)
{
	struct tree_job *j = arg;
	struct hostop *h = j->h;
	const struct inode_key *k = hop_inode_set_get(&h->judged, e->st);
	char path[PATH_MAX];
	bool unsaved;
	int rc;

	if (post || k == NULL)
		return 0;
	if (join(h, path, j->old_top, e->rel) < 0)
		return STOPPED;
	if (j->backup_old) {
		char to[PATH_MAX];

		if (j->move_top != NULL && join(h, to, j->move_top, e->rel) < 0)
			return STOPPED;
		h->moved_to = j->move_top != NULL ? to : NULL;
		rc = hop_backup_at(h, j->old_op, path, path, e->dirfd, e->name, e->st,
				   k->skip_content);
		h->moved_to = NULL;
		if (rc < 0)
			return STOPPED;
		if (h->last_unsaved && inode_set_add(h, &h->unsaved, e->st, true) < 0)
			return STOPPED;
	}
	unsaved = hop_inode_set_get(&h->unsaved, e->st) != NULL;
	/* Moved, the entry is the object under its new name; copied, it is
	 * not (the copy is made after the line). */
	if (j->new_top != NULL && !unsaved &&
	    (join(h, path, j->new_top, e->rel) < 0 ||
	     hop_record_new_name(h, j->new_op, path, path, j->copy ? NULL : e->st) < 0))
		return STOPPED;
	return 0;
}

int hop_walk(struct tree_job *j, int pfd, const char *name, const struct stat *st,
	     fsb_tree_fn fn)
{
	int rc = fsb_tree_walk(pfd, name, st, fn, j);

	return rc == 0 ? 0 : walk_failed(j->h, j->old_top, rc);
}
