/*
 * hostop.c — the host operations (see hostop.h). Each runs in four steps:
 *
 *   judge    every path it touches, and every entry beneath a directory it
 *            deletes, renames or copies, by the broker's decision path;
 *   back up  the state of each of those paths into the session's open
 *            cycle (a path it creates as absent), synced once;
 *   audit    one line saying what is about to happen; no line, no change;
 *   act      on a parent directory fd reached with RESOLVE_NO_SYMLINKS, by
 *            *at() calls on the final name, once the object there has been
 *            checked to be the one judged (device and inode).
 *
 * A host operation runs alone (work.h): no other request of ours — another
 * host operation, a write grant that could create an entry — comes between
 * its check of a directory and its change to it.
 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "at.h"
#include "grant.h"
#include "hostop.h"
#include "modify_backup.h"
#include "trash.h"
#include "tree.h"

/* A callback's way to stop a tree walk once it has set the outcome; no
 * -errno is positive, so it cannot be mistaken for the walk's own error. */
#define STOPPED 1

struct inode_key {
	dev_t dev;
	ino_t ino;
	bool skip_content;	/* the pack's backup.skip matched it */
};

/* Inodes met beneath a directory. `judged`: what the judging walk allowed;
 * the walks after it act on those only, never on an entry that appeared
 * since. `unsaved`: files whose content is not in the backup (backup.skip,
 * or too large): a move of one is not undone by removing its new name. */
struct inode_set {
	struct inode_key *keys;
	size_t n, cap;
	bool sorted;
};

/* A path the policy allowed only through an approval: taken (used up) once
 * every path of the operation is allowed, not before. */
struct approved {
	enum fsb_op op;
	char *path;
	bool exists;
	struct stat st;
};

struct hostop {
	struct fsb_broker *b;
	const struct fsb_hostop_client *who;
	int rootfd;			/* the requester's "/" */
	const struct fsb_hostop_req *req;
	struct fsb_access src, dst;	/* `path` (or `from`), and `to` */
	struct fsb_access entry;	/* an entry beneath a directory, in turn */
	struct fsb_access backup_ask;	/* a file too large to back up, waiting */
	const struct fsb_access *refused;	/* the access the policy refused */
	char src_real[PATH_MAX];	/* normalisedPath of the reply, when not src's */
	int err;			/* the outcome: 0 or an errno */
	char why[768];			/* a sentence for err ("" → strerror) */
	char denied[PATH_MAX];		/* the entry beneath that was refused */
	bool audited;			/* the line before the change is written */
	bool changed;
	unsigned entries, backups;
	char trashed[PATH_MAX], trash_info[PATH_MAX];
	struct inode_set judged, unsaved;
	bool src_unsaved;		/* the source's content is not in the backup */
	bool last_unsaved;		/* the same, for the last path record()ed */
	struct approved *approved;	/* the pack's approvals to take */
	size_t napproved;
	struct approved *too_large;	/* approvals of changes without a backup */
	size_t ntoo_large;
};

/* ---- outcome ------------------------------------------------------------ */

static int fail(struct hostop *h, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Set the outcome to `err` with a sentence; returns -1 for `return fail()`. */
static int fail(struct hostop *h, int err, const char *fmt, ...)
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
		return fail(h, ENAMETOOLONG, "%s/%s is longer than PATH_MAX", top, rel);
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
			return fail(h, ENOMEM, "out of memory");
		s->keys = k;
		s->cap = cap;
	}
	s->keys[s->n++] = (struct inode_key){ st->st_dev, st->st_ino, skip_content };
	s->sorted = false;
	return 0;
}

static const struct inode_key *inode_set_get(struct inode_set *s, const struct stat *st)
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
}

/* Every path is judged as a question first (peek): an approval it rests
 * on is used up only once the whole operation is allowed, so that a retry
 * after approving one entry does not need the earlier ones approved again. */
static int note_approval(struct hostop *h, const struct fsb_access *a)
{
	struct approved *v;

	if (strncmp(a->verdict.rule, "approved:", 9) != 0)
		return 0;
	v = realloc(h->approved, (h->napproved + 1) * sizeof(*v));
	if (v == NULL)
		return fail(h, ENOMEM, "out of memory");
	h->approved = v;
	v = &v[h->napproved];
	if ((v->path = strdup(a->res.path[0] ? a->res.path : a->normalised)) == NULL)
		return fail(h, ENOMEM, "out of memory");
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
static int judge(struct hostop *h, struct fsb_access *a, enum fsb_op op, const char *path,
		 enum fsb_resolve_strategy strategy)
{
	access_init(h, a, op, path);
	a->strategy = strategy;
	a->peek = true;
	fsb_broker_decide(h->b, a);
	if (a->verdict.decision != FSB_ALLOW) {
		h->refused = a;
		return fail(h, a->errnum ? a->errnum : EACCES, NULL);
	}
	return note_approval(h, a);
}

/* Judge a real path met in a walk (`st` its lstat), or one the operation
 * will make (`st` NULL). */
static int judge_entry(struct hostop *h, enum fsb_op op, const char *real, const struct stat *st)
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
		return fail(h, a->errnum ? a->errnum : EACCES, NULL);
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
			return fail(h, EAGAIN, "the approval to change %s without a backup was "
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
			return fail(h, a->errnum ? a->errnum : EACCES, NULL);
		}
	}
	return 0;
}

/* ---- reaching what was judged ------------------------------------------ */

static int open_parent(struct hostop *h, const struct fsb_access *a, const char **name)
{
	int fd = fsb_at_open_parent(h->rootfd, a->res.path, name);

	if (fd >= 0)
		return fd;
	if (fd == -ELOOP || fd == -ENOENT || fd == -ENOTDIR)
		return fail(h, EAGAIN, "a directory on the way to %s changed since it was "
			    "checked; nothing was changed; ask again", a->res.path);
	return fail(h, -fd, "cannot open the directory of %s: %s", a->res.path, strerror(-fd));
}

/* The object at `name` is still the one `a` judged; *st is its lstat. */
static int still_there(struct hostop *h, int pfd, const char *name, const struct fsb_access *a,
		       struct stat *st)
{
	if (fstatat(pfd, name, st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    st->st_dev != a->res.st.st_dev || st->st_ino != a->res.st.st_ino)
		return fail(h, EAGAIN, "%s changed since it was checked; nothing was changed; "
			    "ask again", a->res.path);
	return 0;
}

static int reach(struct hostop *h, const struct fsb_access *a, struct stat *st)
{
	int fd = fsb_at_reach(h->rootfd, &a->res, st);

	if (fd >= 0)
		return fd;
	if (fd == -EAGAIN || fd == -ELOOP)
		return fail(h, EAGAIN, "%s changed since it was checked; nothing was changed; "
			    "ask again", a->res.path);
	return fail(h, -fd, "cannot reach %s: %s", a->res.path, strerror(-fd));
}

/* ---- backing up --------------------------------------------------------- */

/* Journal the state of `real` (`st`, NULL when the operation creates it)
 * with the content read from `rdfd` (a regular file) or its link target. */
static int record(struct hostop *h, enum fsb_op op, const char *requested, const char *real,
		  const struct stat *st, int rdfd, const char *target, bool skip_content)
{
	struct fsb_backup_result res;
	struct fsb_backup_entry e = {
		.op = op,
		.path = requested,
		.resolved = real,
		.prior = st,
		.fd = rdfd,
		.link_target = target,
		.skip_content = skip_content,
		.tool_call = h->who->tool_call,
		.trace = h->req->trace,
	};
	struct fsb_backup_outcome out;
	int rc = fsb_backup_entry(h->b, h->who->session, &e, &res, &out);

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
			return fail(h, ENOMEM, "out of memory");
		}
		h->too_large = v;
		v[h->ntoo_large].st = *st;
		h->ntoo_large++;
	}
	if (res.object[0] != '\0')
		h->backups++;
	/* A file whose content the backup does not hold (backup.skip, too
	 * large, backups off): a restore cannot bring it back. */
	h->last_unsaved = st != NULL && S_ISREG(st->st_mode) && res.object[0] == '\0';
	return 0;
}

/* Back up `name` in `pfd` (real path `real`, lstat `st`) before `op`. */
static int backup_at(struct hostop *h, enum fsb_op op, const char *requested, const char *real,
		     int pfd, const char *name, const struct stat *st, bool skip_content)
{
	char target[PATH_MAX];
	struct stat now;
	ssize_t n;
	int fd = -1, rc;

	if (S_ISREG(st->st_mode) && !skip_content) {
		fd = openat(pfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (fd < 0 && (errno == ELOOP || errno == ENOENT))
			return fail(h, EAGAIN, "%s changed since it was checked; nothing was "
				    "changed; ask again", real);
		if (fd < 0)
			return fail(h, errno, "cannot read %s to back it up: %s", real,
				    strerror(errno));
		if (fstat(fd, &now) < 0 || now.st_dev != st->st_dev || now.st_ino != st->st_ino) {
			close(fd);
			return fail(h, EAGAIN, "%s changed since it was checked; nothing was "
				    "changed; ask again", real);
		}
	} else if (S_ISLNK(st->st_mode)) {
		n = readlinkat(pfd, name, target, sizeof(target) - 1);
		/* Not a symlink any more, or gone: it changed since the walk. */
		if (n < 0 && (errno == EINVAL || errno == ENOENT))
			return fail(h, EAGAIN, "%s changed since it was checked; nothing was "
				    "changed; ask again", real);
		if (n < 0)
			return fail(h, errno, "cannot read the symlink %s: %s", real,
				    strerror(errno));
		target[n] = '\0';
	}
	rc = record(h, op, requested, real, st, fd, S_ISLNK(st->st_mode) ? target : NULL,
		    skip_content);
	if (fd >= 0)
		close(fd);
	return rc;
}

/* Back up the object reached as `pathfd` (chmod, touch). */
static int backup_reached(struct hostop *h, const struct fsb_access *a, int pathfd,
			  const struct stat *st)
{
	int fd = -1, rc;

	if (S_ISREG(st->st_mode) && a->verdict.backup) {
		fd = fsb_at_reopen(pathfd, O_RDONLY | O_NONBLOCK | O_NOCTTY);
		if (fd < 0)
			return fail(h, -fd, "cannot read %s to back it up: %s", a->res.path,
				    strerror(-fd));
	}
	rc = record(h, a->op, a->requested, a->res.path, st, fd, NULL, !a->verdict.backup);
	if (fd >= 0)
		close(fd);
	return rc;
}

static int sync_backups(struct hostop *h)
{
	int rc = fsb_backup_sync(h->b, h->who->session, h->why, sizeof(h->why));

	if (rc < 0) {
		h->err = -rc;
		return -1;
	}
	return 0;
}

/* ---- audit -------------------------------------------------------------- */

static void add_path(cJSON *o, const char *field, const char *path)
{
	fsb_json_add_path(o, field, path, false);
}

static cJSON *audit_line(struct hostop *h)
{
	const struct fsb_access *a = h->refused ? h->refused
				     : h->src.requested ? &h->src : &h->dst;
	cJSON *o = fsb_access_audit_record(a, "ipc-host-op");

	/* The outcome's errno, not the access's (a mkdir -p resolves a missing
	 * path), goes in the line after. */
	cJSON_DeleteItemFromObjectCaseSensitive(o, "errno");
	if (h->refused != NULL && h->err != 0)
		cJSON_AddStringToObject(o, "errno", fsb_errno_name(h->err));
	cJSON_AddStringToObject(o, "hostOp", fsb_hostop_name(h->req->op));
	if (h->dst.requested != NULL && a != &h->dst) {
		add_path(o, "to", h->dst.requested);
		add_path(o, "normalisedTo",
			 h->dst.resolve_err == 0 ? h->dst.res.path : h->dst.normalised);
	}
	if (h->denied[0])
		add_path(o, "deniedPath", h->denied);
	if (h->req->trace != NULL)
		cJSON_AddStringToObject(o, "traceId", h->req->trace);
	cJSON_AddNumberToObject(o, "pid", h->who->pid);
	return o;
}

/* The line before the change: no line, no change. */
static int audit_before(struct hostop *h)
{
	cJSON *o;

	if (take_approvals(h) < 0)
		return -1;
	o = audit_line(h);

	cJSON_AddStringToObject(o, "result", "planned");
	cJSON_AddNumberToObject(o, "entries", h->entries);
	cJSON_AddNumberToObject(o, "backups", h->backups);
	if (fsb_broker_audit(h->b, h->who->session, o) < 0)
		return fail(h, EIO, "the audit log cannot be written; nothing was changed");
	h->audited = true;
	return 0;
}

/* The line after: what happened (or, when nothing was planned, why not). */
static void audit_after(struct hostop *h)
{
	cJSON *o = audit_line(h);

	cJSON_AddStringToObject(o, "result", h->err == 0 ? "done" : "failed");
	if (h->err != 0) {
		if (!cJSON_HasObjectItem(o, "errno"))
			cJSON_AddStringToObject(o, "errno", fsb_errno_name(h->err));
		if (h->why[0])
			cJSON_AddStringToObject(o, "error", h->why);
	}
	cJSON_AddBoolToObject(o, "changed", h->changed);
	if (h->trashed[0])
		add_path(o, "trashedTo", h->trashed);
	fsb_broker_audit(h->b, h->who->session, o);
}

/* ---- copying content ---------------------------------------------------- */

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

/* ---- walks -------------------------------------------------------------- */

struct tree_job {
	struct hostop *h;
	const char *old_top;	/* the directory's real path */
	const char *new_top;	/* its real path after the operation, or NULL */
	enum fsb_op old_op, new_op;
	bool backup_old;	/* back up the entries under the old name */
	bool copy;		/* devices and sockets are refused */
};

/* The walk's own error (not one a callback stopped it with). */
static int walk_failed(struct hostop *h, const char *top, int rc)
{
	if (rc == STOPPED)
		return -1;
	if (rc == -EAGAIN)
		return fail(h, EAGAIN, "something beneath %s changed while it was walked; ask "
			    "again", top);
	if (rc == -ELOOP)
		return fail(h, ELOOP, "%s is more than %d directories deep", top,
			    FSB_TREE_MAX_DEPTH);
	return fail(h, -rc, "cannot walk %s: %s", top, strerror(-rc));
}

/* Judge every entry beneath, under its old name and its new one, and note
 * its inode: the walks after this one act on what was judged only. */
static int check_entry(const struct fsb_tree_entry *e, bool post, void *arg)
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
		fail(h, EBUSY, "%s/%s is a mount point: fsbroker does not %s across mounts; "
		     "nothing was changed", j->old_top, e->rel, fsb_hostop_name(h->req->op));
		return STOPPED;
	}
	if (j->copy && (S_ISCHR(m) || S_ISBLK(m) || S_ISSOCK(m))) {
		fail(h, EPERM, "%s/%s is a %s: copy makes no devices or sockets; nothing was "
		     "copied", j->old_top, e->rel, fsb_file_type_name(m));
		return STOPPED;
	}
	if (join(h, path, j->old_top, e->rel) < 0 || judge_entry(h, j->old_op, path, e->st) < 0)
		return STOPPED;
	skip = !h->entry.verdict.backup;
	if (j->new_top != NULL &&
	    (join(h, path, j->new_top, e->rel) < 0 || judge_entry(h, j->new_op, path, NULL) < 0))
		return STOPPED;
	return inode_set_add(h, &h->judged, e->st, skip) < 0 ? STOPPED : 0;
}

/* Back up every entry judged: its state under the old name, and its
 * absence under the new one — unless its content could not be saved, when
 * a restore must leave it where it went rather than remove it there. */
static int save_entry(const struct fsb_tree_entry *e, bool post, void *arg)
{
	struct tree_job *j = arg;
	struct hostop *h = j->h;
	const struct inode_key *k = inode_set_get(&h->judged, e->st);
	char path[PATH_MAX];
	bool unsaved;

	if (post || k == NULL)
		return 0;
	if (join(h, path, j->old_top, e->rel) < 0)
		return STOPPED;
	if (j->backup_old) {
		if (backup_at(h, j->old_op, path, path, e->dirfd, e->name, e->st,
			      k->skip_content) < 0)
			return STOPPED;
		if (h->last_unsaved && inode_set_add(h, &h->unsaved, e->st, true) < 0)
			return STOPPED;
	}
	unsaved = inode_set_get(&h->unsaved, e->st) != NULL;
	if (j->new_top != NULL && !unsaved &&
	    (join(h, path, j->new_top, e->rel) < 0 ||
	     record(h, j->new_op, path, path, NULL, -1, NULL, false) < 0))
		return STOPPED;
	return 0;
}

static int walk(struct tree_job *j, int pfd, const char *name, const struct stat *st,
		fsb_tree_fn fn)
{
	int rc = fsb_tree_walk(pfd, name, st, fn, j);

	return rc == 0 ? 0 : walk_failed(j->h, j->old_top, rc);
}

/* ---- delete ------------------------------------------------------------- */

static int remove_entry(const struct fsb_tree_entry *e, bool post, void *arg)
{
	struct tree_job *j = arg;
	struct hostop *h = j->h;
	bool dir = S_ISDIR(e->st->st_mode);

	if (dir && !post)
		return 0;
	if (inode_set_get(&h->judged, e->st) == NULL) {
		fail(h, EAGAIN, "%s/%s appeared after the check and was not backed up: it and "
		     "the directories above it were left; everything removed before it is "
		     "in the backup", j->old_top, e->rel);
		return STOPPED;
	}
	if (unlinkat(e->dirfd, e->name, dir ? AT_REMOVEDIR : 0) < 0) {
		/* Swapped for something of another type (or gone) since the walk
		 * saw it: the tree is changing; ask again. */
		if (errno == ENOTDIR || errno == EISDIR || errno == ENOENT)
			fail(h, EAGAIN, "%s/%s changed while it was deleted; what was removed "
			     "before it is in the backup; ask again", j->old_top, e->rel);
		else
			fail(h, errno, "cannot remove %s/%s: %s", j->old_top, e->rel,
			     strerror(errno));
		return STOPPED;
	}
	h->changed = true;
	return 0;
}

static bool dir_is_empty(int pfd, const char *name, const struct stat *st)
{
	int fd = fsb_tree_open_dir(pfd, name, st);
	struct dirent *de;
	bool empty = true;
	DIR *d;

	if (fd < 0)
		return false;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return false;
	}
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
			empty = false;
			break;
		}
	closedir(d);
	return empty;
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
	    (record(h, FSB_OP_DELETE, info, info, NULL, -1, NULL, false) < 0 ||
	     record(h, FSB_OP_DELETE, trashed, trashed, NULL, -1, NULL, false) < 0))
		return -h->err;
	if ((S_ISDIR(t->st->st_mode) && walk(&j, t->pfd, t->name, t->st, save_entry) < 0) ||
	    sync_backups(h) < 0 || (!h->audited && audit_before(h) < 0) ||
	    still_there(h, t->pfd, t->name, &h->src, &now) < 0)
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
		return fail(h, -rc, "there is no trash to move %s to: neither XDG_DATA_HOME nor "
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
			fail(h, -rc, "%s", why[0] ? why : strerror(-rc));
		return -1;
	}
	h->changed = true;
	return 0;
}

static int op_delete(struct hostop *h)
{
	const struct fsb_hostop_req *r = h->req;
	struct fsb_access *a = &h->src;
	struct tree_job j = { .h = h, .old_op = FSB_OP_DELETE, .backup_old = true };
	const char *name;
	struct stat st;
	bool dir;
	int pfd, rc = -1;

	if (judge(h, a, FSB_OP_DELETE, r->path, FSB_RESOLVE_THROUGH_PARENT) < 0)
		return -1;
	if (a->errnum == ENOENT || (a->errnum == 0 && !a->res.exists))
		return r->force ? 0 : fail(h, ENOENT, "%s does not exist", r->path);
	if (a->errnum != 0)
		return fail(h, a->errnum, NULL);
	if ((pfd = open_parent(h, a, &name)) < 0)
		return -1;
	if (still_there(h, pfd, name, a, &st) < 0)
		goto out;
	dir = S_ISDIR(st.st_mode);
	if (!dir && h->who->must_be_dir) {
		fail(h, ENOTDIR, "%s is not a directory", a->res.path);
		goto out;
	}
	if (dir && h->who->delete_file_only) {
		fail(h, EISDIR, "%s is a directory", a->res.path);
		goto out;
	}
	if (!dir && h->who->delete_dir_only) {
		fail(h, ENOTDIR, "%s is not a directory", a->res.path);
		goto out;
	}
	j.old_top = a->res.path;
	if (dir && !r->recursive && !dir_is_empty(pfd, name, &st)) {
		fail(h, ENOTEMPTY, "%s is a directory and not empty: delete it with "
		     "\"recursive\": true", a->res.path);
		goto out;
	}
	if (dir && walk(&j, pfd, name, &st, check_entry) < 0)
		goto out;
	if (backup_at(h, FSB_OP_DELETE, r->path, a->res.path, pfd, name, &st,
		      !a->verdict.backup) < 0)
		goto out;
	h->src_unsaved = h->last_unsaved;
	if (dir && walk(&j, pfd, name, &st, save_entry) < 0)
		goto out;
	/* The trash journals its own names and audits just before its move. */
	if (r->delete_trash) {
		rc = still_there(h, pfd, name, a, &st) < 0 ? -1 : trash(h, pfd, name, &st);
		goto out;
	}
	if (sync_backups(h) < 0 || audit_before(h) < 0)
		goto out;
	if (dir && walk(&j, pfd, name, &st, remove_entry) < 0)
		goto out;
	if (still_there(h, pfd, name, a, &st) < 0)
		goto out;
	if (unlinkat(pfd, name, dir ? AT_REMOVEDIR : 0) < 0) {
		fail(h, errno, "cannot remove %s: %s", a->res.path, strerror(errno));
		goto out;
	}
	h->changed = true;
	rc = 0;
out:
	close(pfd);
	return rc;
}

/* ---- mkdir -------------------------------------------------------------- */

/* "/", or a path whose last name is "." or "..": a directory that exists
 * but has no name of its own to make (resolve.c refuses such a last name). */
static bool names_an_existing_dir(const char *path)
{
	size_t n = strlen(path);

	while (n > 1 && path[n - 1] == '/')
		n--;
	if (n == 1 && path[0] == '/')
		return true;
	if (n >= 2 && strncmp(path + n - 2, "/.", 2) == 0)
		return true;
	return n >= 3 && strncmp(path + n - 3, "/..", 3) == 0;
}

static int mkdir_one(struct hostop *h)
{
	const struct fsb_hostop_req *r = h->req;
	struct fsb_access *a = &h->src;
	const char *name;
	int pfd, rc = -1;

	if (judge(h, a, FSB_OP_MKDIR, r->path, FSB_RESOLVE_THROUGH_PARENT) < 0)
		return -1;
	/* `mkdir .` (tar's "./" member): EEXIST, as the kernel says. */
	if (a->errnum == EINVAL && names_an_existing_dir(r->path))
		return fail(h, EEXIST, "%s exists", r->path);
	if (a->errnum != 0)
		return fail(h, a->errnum, a->errnum == ENOENT ? "the parent of %s does not exist"
			    : NULL, r->path);
	if (a->res.exists)
		return fail(h, EEXIST, "%s exists", a->res.path);
	if ((pfd = open_parent(h, a, &name)) < 0)
		return -1;
	if (record(h, FSB_OP_MKDIR, r->path, a->res.path, NULL, -1, NULL, false) < 0 ||
	    sync_backups(h) < 0 || audit_before(h) < 0)
		goto out;
	if (mkdirat(pfd, name, r->has_mode ? r->mode : 0777) < 0) {
		fail(h, errno, "cannot make %s: %s", a->res.path, strerror(errno));
		goto out;
	}
	h->changed = true;
	if (h->who->exact_mode) {
		int dfd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		if (dfd >= 0) {
			fchmod(dfd, r->mode & 07777);
			close(dfd);
		}
	}
	rc = 0;
out:
	close(pfd);
	return rc;
}

/* Each name of a path below `p`, in turn. */
static const char *next_name(const char *p, char name[NAME_MAX + 1], bool *last)
{
	const char *end = strchrnul(p, '/');
	size_t len = (size_t)(end - p);

	if (len > NAME_MAX)
		return NULL;
	memcpy(name, p, len);
	name[len] = '\0';
	*last = *end == '\0';
	return *last ? end : end + 1;
}

/* mkdir -p: the deepest directory that exists, then each missing one. */
static int mkdir_parents(struct hostop *h)
{
	const struct fsb_hostop_req *r = h->req;
	struct fsb_access *a = &h->src;
	struct fsb_resolved base;
	char prefix[PATH_MAX], real[PATH_MAX], name[NAME_MAX + 1];
	const char *missing, *p;
	struct stat st;
	bool last;
	int dfd = -1, nfd, rc = -1;

	if (judge(h, a, FSB_OP_MKDIR, r->path, FSB_RESOLVE_THROUGH_PARENT) < 0)
		return -1;
	if (a->errnum == 0 && a->res.exists) {
		if (!S_ISDIR(a->res.st.st_mode))
			return fail(h, EEXIST, "%s exists and is not a directory", a->res.path);
		return 0;
	}
	if (a->errnum != 0 && a->errnum != ENOENT)
		return fail(h, a->errnum, NULL);

	/* Up from the path to the deepest directory that exists. */
	snprintf(prefix, sizeof(prefix), "%s", a->normalised);
	do {
		char *slash = strrchr(prefix, '/');

		slash[slash == prefix] = '\0';	/* "/a/b" → "/a", "/a" → "/" */
		rc = fsb_resolve(h->rootfd, prefix, FSB_RESOLVE_EXISTING, &base);
	} while (rc == -ENOENT && strcmp(prefix, "/") != 0);
	if (rc < 0)
		return fail(h, -rc, "cannot resolve %s: %s", prefix, strerror(-rc));
	if (!S_ISDIR(base.st.st_mode))
		return fail(h, ENOTDIR, "%s is not a directory", base.path);
	missing = a->normalised + (strcmp(prefix, "/") == 0 ? 1 : strlen(prefix) + 1);
	rc = -1;
	if ((dfd = fsb_at_open(h->rootfd, base.path, O_RDONLY | O_DIRECTORY, 0)) < 0)
		return fail(h, dfd == -ELOOP ? EAGAIN : -dfd, "cannot open %s: %s", base.path,
			    strerror(-dfd));
	/* The first missing name may be there all the same, as a symlink whose
	 * target is missing (resolution found nothing behind it): never
	 * journal it as absent, a restore would remove it. */
	if (next_name(missing, name, &last) == NULL) {
		fail(h, ENAMETOOLONG, "a name in %s is longer than NAME_MAX", r->path);
		goto out;
	}
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		fail(h, EEXIST, "%s/%s exists and is a %s, not a directory", base.path, name,
		     fsb_file_type_name(st.st_mode));
		goto out;
	}

	/* Judge and journal every directory to make, parents first. */
	snprintf(real, sizeof(real), "%s", strcmp(base.path, "/") == 0 ? "" : base.path);
	for (p = missing; *p != '\0';) {
		size_t len = strlen(real);

		if ((p = next_name(p, name, &last)) == NULL ||
		    len + 1 + strlen(name) >= sizeof(real)) {
			fail(h, ENAMETOOLONG, "%s is too long", r->path);
			goto out;
		}
		snprintf(real + len, sizeof(real) - len, "/%s", name);
		if (judge_entry(h, FSB_OP_MKDIR, real, NULL) < 0 ||
		    record(h, FSB_OP_MKDIR, real, real, NULL, -1, NULL, false) < 0)
			goto out;
	}
	snprintf(h->src_real, sizeof(h->src_real), "%s", real);
	if (sync_backups(h) < 0 || audit_before(h) < 0)
		goto out;

	snprintf(real, sizeof(real), "%s", strcmp(base.path, "/") == 0 ? "" : base.path);
	for (p = missing; *p != '\0';) {
		size_t len = strlen(real);

		p = next_name(p, name, &last);
		snprintf(real + len, sizeof(real) - len, "/%s", name);
		/* Journaled as absent: something there now appeared since. */
		if (mkdirat(dfd, name, last && r->has_mode ? r->mode : 0777) < 0) {
			fail(h, errno == EEXIST ? EAGAIN : errno, errno == EEXIST
			     ? "%s appeared since it was checked; ask again" : "cannot make %s",
			     real);
			goto out;
		}
		h->changed = true;
		nfd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0) {
			fail(h, errno == ELOOP || errno == ENOTDIR ? EAGAIN : errno,
			     "cannot open %s: %s", real, strerror(errno));
			goto out;
		}
		close(dfd);
		dfd = nfd;
	}
	rc = 0;
out:
	if (dfd >= 0)
		close(dfd);
	return rc;
}

/* ---- rename ------------------------------------------------------------- */

static int op_rename(struct hostop *h)
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

	if (judge(h, a, FSB_OP_RENAME_FROM, r->from, FSB_RESOLVE_THROUGH_PARENT) < 0)
		return -1;
	if (a->errnum == 0 && !a->res.exists)
		return fail(h, ENOENT, "%s does not exist", r->from);
	if (a->errnum != 0)
		return fail(h, a->errnum, NULL);
	if (judge(h, t, FSB_OP_RENAME_TO, r->to, FSB_RESOLVE_THROUGH_PARENT) < 0)
		return -1;
	if (t->errnum != 0)
		return fail(h, t->errnum, t->errnum == ENOENT ? "the parent of %s does not exist"
			    : NULL, r->to);
	if (h->who->rename_noreplace && t->res.exists)
		return fail(h, EEXIST, "%s exists", t->res.path);
	if (strcmp(a->res.path, t->res.path) == 0)
		return 0;
	dir = S_ISDIR(a->res.st.st_mode);
	if (!dir && h->who->must_be_dir)
		return fail(h, ENOTDIR, "%s is not a directory", a->res.path);
	if (dir && fsb_path_within(t->res.path, a->res.path))
		return fail(h, EINVAL, "cannot move the directory %s into itself", a->res.path);
	if ((pfd = open_parent(h, a, &name)) < 0 || (tfd = open_parent(h, t, &tname)) < 0)
		goto out;
	if (still_there(h, pfd, name, a, &st) < 0 ||
	    (t->res.exists && still_there(h, tfd, tname, t, &tst) < 0))
		goto out;
	/* Two names of one inode: rename(2) leaves both as they are. */
	if (t->res.exists && tst.st_dev == st.st_dev && tst.st_ino == st.st_ino) {
		rc = 0;
		goto out;
	}
	if (fstat(tfd, &pst) == 0 && pst.st_dev != st.st_dev) {
		fail(h, EXDEV, "%s and %s are on different filesystems: rename cannot move it; "
		     "copy and delete instead", a->res.path, t->res.path);
		goto out;
	}
	/* What rename(2) would refuse is refused before anything is journaled:
	 * a failed rename must leave no entries under a name that is not a
	 * directory (a restore could not walk there). */
	if (t->res.exists && dir && !S_ISDIR(tst.st_mode)) {
		fail(h, ENOTDIR, "%s is a %s: a directory cannot replace it", t->res.path,
		     fsb_file_type_name(tst.st_mode));
		goto out;
	}
	if (t->res.exists && !dir && S_ISDIR(tst.st_mode)) {
		fail(h, EISDIR, "%s is a directory: a %s cannot replace it", t->res.path,
		     fsb_file_type_name(st.st_mode));
		goto out;
	}
	if (t->res.exists && dir && !dir_is_empty(tfd, tname, &tst)) {
		fail(h, ENOTEMPTY, "%s is a directory and not empty: rename replaces only an "
		     "empty one", t->res.path);
		goto out;
	}
	j.old_top = a->res.path;
	j.new_top = t->res.path;
	if (dir && walk(&j, pfd, name, &st, check_entry) < 0)
		goto out;
	if (backup_at(h, FSB_OP_RENAME_FROM, r->from, a->res.path, pfd, name, &st,
		      !a->verdict.backup) < 0)
		goto out;
	/* A file moved without its content in the backup stays where it went
	 * on a restore: its new name is not journaled as one to remove. */
	h->src_unsaved = h->last_unsaved;
	if ((dir && walk(&j, pfd, name, &st, save_entry) < 0) ||
	    (t->res.exists ? backup_at(h, FSB_OP_RENAME_TO, r->to, t->res.path, tfd, tname, &tst,
				       !t->verdict.backup)
	     : h->src_unsaved ? 0
			      : record(h, FSB_OP_RENAME_TO, r->to, t->res.path, NULL, -1, NULL,
				       false)) < 0 ||
	    sync_backups(h) < 0 || audit_before(h) < 0)
		goto out;
	/* Last look before the change; a target judged absent must still be
	 * absent, which RENAME_NOREPLACE makes the kernel check. */
	if (still_there(h, pfd, name, a, &st) < 0 ||
	    (t->res.exists && still_there(h, tfd, tname, t, &tst) < 0))
		goto out;
	if (renameat2(pfd, name, tfd, tname, t->res.exists ? 0 : RENAME_NOREPLACE) < 0) {
		if (errno == EEXIST)
			fail(h, EAGAIN, "%s appeared since it was checked; nothing was changed; "
			     "ask again", t->res.path);
		else
			fail(h, errno, "cannot rename %s to %s: %s", a->res.path, t->res.path,
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
 * target of the other, so each is judged as both; both are backed up with
 * everything beneath them, then swapped on their pinned parents. A restore
 * puts each name's old content back; an entry that only the other tree had
 * stays under its new name (it was never under this one).
 */
static int op_exchange(struct hostop *h)
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

	if (judge(h, a, FSB_OP_RENAME_FROM, r->from, FSB_RESOLVE_THROUGH_PARENT) < 0)
		return -1;
	if (a->errnum == 0 && !a->res.exists)
		return fail(h, ENOENT, "%s does not exist", r->from);
	if (a->errnum != 0)
		return fail(h, a->errnum, NULL);
	if (judge(h, t, FSB_OP_RENAME_FROM, r->to, FSB_RESOLVE_THROUGH_PARENT) < 0)
		return -1;
	if (t->errnum == 0 && !t->res.exists)
		return fail(h, ENOENT, "%s does not exist", r->to);
	if (t->errnum != 0)
		return fail(h, t->errnum, NULL);
	/* Each name also receives the other's object. */
	if (judge_entry(h, FSB_OP_RENAME_TO, a->res.path, &a->res.st) < 0 ||
	    judge_entry(h, FSB_OP_RENAME_TO, t->res.path, &t->res.st) < 0)
		return -1;
	if (strcmp(a->res.path, t->res.path) == 0)
		return 0;
	if ((S_ISDIR(a->res.st.st_mode) && fsb_path_within(t->res.path, a->res.path)) ||
	    (S_ISDIR(t->res.st.st_mode) && fsb_path_within(a->res.path, t->res.path)))
		return fail(h, EINVAL, "cannot exchange a directory with a name beneath it");
	if ((pfd = open_parent(h, a, &name)) < 0 || (tfd = open_parent(h, t, &tname)) < 0)
		goto out;
	if (still_there(h, pfd, name, a, &st) < 0 || still_there(h, tfd, tname, t, &tst) < 0)
		goto out;
	ja.old_top = a->res.path;
	ja.new_top = t->res.path;
	jt.old_top = t->res.path;
	jt.new_top = a->res.path;
	if ((S_ISDIR(st.st_mode) && walk(&ja, pfd, name, &st, check_entry) < 0) ||
	    (S_ISDIR(tst.st_mode) && walk(&jt, tfd, tname, &tst, check_entry) < 0))
		goto out;
	/* The old side of both first: each path's first record is its state
	 * before the swap. */
	ja.new_top = jt.new_top = NULL;
	if (backup_at(h, FSB_OP_RENAME_FROM, r->from, a->res.path, pfd, name, &st,
		      !a->verdict.backup) < 0 ||
	    backup_at(h, FSB_OP_RENAME_FROM, r->to, t->res.path, tfd, tname, &tst,
		      !t->verdict.backup) < 0 ||
	    (S_ISDIR(st.st_mode) && walk(&ja, pfd, name, &st, save_entry) < 0) ||
	    (S_ISDIR(tst.st_mode) && walk(&jt, tfd, tname, &tst, save_entry) < 0) ||
	    sync_backups(h) < 0 || audit_before(h) < 0)
		goto out;
	if (still_there(h, pfd, name, a, &st) < 0 || still_there(h, tfd, tname, t, &tst) < 0)
		goto out;
	if (renameat2(pfd, name, tfd, tname, RENAME_EXCHANGE) < 0) {
		fail(h, errno, "cannot exchange %s and %s: %s", a->res.path, t->res.path,
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
	if (inode_set_get(&h->judged, e->st) == NULL) {
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
		fail(h, -rc == EAGAIN ? EAGAIN : -rc, "cannot copy %s/%s: %s; what was copied "
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
		return fail(h, EISDIR, "%s is a directory: copy it with \"recursive\": true",
			    a->res.path);
	if (t->res.exists)
		return fail(h, EEXIST, "%s exists: a directory is copied to a new name only",
			    t->res.path);
	if (fsb_path_within(t->res.path, a->res.path))
		return fail(h, EINVAL, "cannot copy the directory %s into itself", a->res.path);
	for (size_t i = 0; i < sizeof(c.fds) / sizeof(c.fds[0]); i++)
		c.fds[i] = -1;
	c.job.old_top = a->res.path;
	c.job.new_top = t->res.path;
	if ((pfd = open_parent(h, a, &name)) < 0 || (tfd = open_parent(h, t, &tname)) < 0)
		goto out;
	if (still_there(h, pfd, name, a, &st) < 0 ||
	    walk(&c.job, pfd, name, &st, check_entry) < 0 ||
	    record(h, FSB_OP_CREATE, h->req->to, t->res.path, NULL, -1, NULL, false) < 0 ||
	    walk(&c.job, pfd, name, &st, save_entry) < 0 ||
	    sync_backups(h) < 0 || audit_before(h) < 0)
		goto out;
	if (mkdirat(tfd, tname, 0700) < 0) {
		fail(h, errno, "cannot make %s: %s", t->res.path, strerror(errno));
		goto out;
	}
	h->changed = true;
	c.fds[0] = openat(tfd, tname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (c.fds[0] < 0) {
		fail(h, errno, "cannot open %s: %s", t->res.path, strerror(errno));
		goto out;
	}
	if (fsb_tree_walk(pfd, name, &st, copy_entry, &c) != 0 && h->err == 0)
		fail(h, EAGAIN, "%s changed while it was copied; what was copied so far is left, "
		     "and a restore removes it", a->res.path);
	if (h->err == 0 && fchmod(c.fds[0], st.st_mode & 07777) < 0)
		fail(h, errno, "cannot set the mode of %s: %s", t->res.path, strerror(errno));
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

	if (record(h, h->dst.op, h->req->to, h->dst.res.path, st, rdfd, NULL,
		   !h->dst.verdict.backup) < 0 ||
	    sync_backups(h) < 0 || audit_before(h) < 0)
		return -h->err;
	return 0;
}

static int op_copy(struct hostop *h)
{
	const struct fsb_hostop_req *r = h->req;
	struct fsb_access *a = &h->src, *t = &h->dst;
	struct stat st;
	int in, out, rc;

	if (judge(h, a, FSB_OP_READ, r->from, FSB_RESOLVE_EXISTING) < 0)
		return -1;
	if (a->errnum != 0)
		return fail(h, a->errnum, a->errnum == ENOENT ? "%s does not exist" : NULL,
			    r->from);
	/* A write to a name that does not exist is judged as a create. */
	if (judge(h, t, FSB_OP_WRITE, r->to, FSB_RESOLVE_THROUGH_PARENT) < 0)
		return -1;
	if (t->errnum != 0)
		return fail(h, t->errnum, t->errnum == ENOENT ? "the parent of %s does not exist"
			    : NULL, r->to);
	if (S_ISDIR(a->res.st.st_mode))
		return copy_tree(h);
	if (!S_ISREG(a->res.st.st_mode))
		return fail(h, EINVAL, "%s is a %s: copy copies files and directories",
			    a->res.path, fsb_file_type_name(a->res.st.st_mode));
	if (t->res.exists && S_ISDIR(t->res.st.st_mode))
		return fail(h, EISDIR, "%s is a directory", t->res.path);
	if (t->res.exists && !S_ISREG(t->res.st.st_mode))
		return fail(h, EEXIST, "%s exists and is a %s: copy does not write through it",
			    t->res.path, fsb_file_type_name(t->res.st.st_mode));
	if (t->res.exists && t->res.st.st_dev == a->res.st.st_dev &&
	    t->res.st.st_ino == a->res.st.st_ino)
		return fail(h, EINVAL, "%s and %s are the same file", a->res.path, t->res.path);

	if ((in = fsb_grant_open_for_backup(h->rootfd, &a->res)) < 0)
		return fail(h, in == -EAGAIN ? EAGAIN : -in, "cannot read %s: %s", a->res.path,
			    strerror(-in));
	if (fstat(in, &st) < 0) {
		rc = fail(h, errno, "cannot read %s: %s", a->res.path, strerror(errno));
		goto out_in;
	}
	if (!t->res.exists &&
	    (record(h, FSB_OP_CREATE, r->to, t->res.path, NULL, -1, NULL, false) < 0 ||
	     sync_backups(h) < 0 || audit_before(h) < 0)) {
		rc = -1;
		goto out_in;
	}
	out = fsb_grant_open(h->rootfd, &t->res, O_WRONLY | O_CREAT | O_TRUNC, 0600,
			     backup_copy_target, h);
	if (out < 0) {
		rc = h->err != 0 ? -1 : fail(h, out == -EEXIST ? EAGAIN : -out, "cannot open %s: %s",
					     t->res.path, out == -EEXIST ? "it appeared since it "
					     "was checked; ask again" : strerror(-out));
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
		rc = fail(h, -rc, "cannot copy %s to %s: %s", a->res.path, t->res.path,
			  strerror(-rc));
out_in:
	close(in);
	return rc;
}

/* ---- chmod, link, touch -------------------------------------------------- */

static int op_chmod(struct hostop *h)
{
	const struct fsb_hostop_req *r = h->req;
	struct fsb_access *a = &h->src;
	char proc[32];
	struct stat st;
	int fd, rc = -1;

	if (judge(h, a, FSB_OP_CHMOD, r->path, FSB_RESOLVE_EXISTING) < 0)
		return -1;
	if (a->errnum != 0)
		return fail(h, a->errnum, a->errnum == ENOENT ? "%s does not exist" : NULL,
			    r->path);
	if ((fd = reach(h, a, &st)) < 0)
		return -1;
	if (backup_reached(h, a, fd, &st) < 0 || sync_backups(h) < 0 || audit_before(h) < 0)
		goto out;
	/* Through the O_PATH fd: exactly the inode judged, whatever its name. */
	if (fchmodat(AT_FDCWD, fsb_at_fd_path(fd, proc, sizeof(proc)), r->mode, 0) < 0) {
		fail(h, errno, "cannot change the mode of %s: %s", a->res.path, strerror(errno));
		goto out;
	}
	h->changed = true;
	rc = 0;
out:
	close(fd);
	return rc;
}

static int op_link(struct hostop *h)
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
		if (judge(h, a, FSB_OP_LINK, r->from, h->who->link_nofollow
			  ? FSB_RESOLVE_THROUGH_PARENT : FSB_RESOLVE_EXISTING) < 0)
			return -1;
		if (a->errnum == 0 && !a->res.exists)
			return fail(h, ENOENT, "%s does not exist", r->from);
		if (a->errnum != 0)
			return fail(h, a->errnum, a->errnum == ENOENT ? "%s does not exist" : NULL,
				    r->from);
	}
	if (judge(h, t, r->symbolic ? FSB_OP_SYMLINK : FSB_OP_LINK, r->to,
		  FSB_RESOLVE_THROUGH_PARENT) < 0)
		return -1;
	if (t->errnum != 0)
		return fail(h, t->errnum, t->errnum == ENOENT ? "the parent of %s does not exist"
			    : NULL, r->to);
	if (t->res.exists)
		return fail(h, EEXIST, "%s exists", t->res.path);
	if (!r->symbolic && h->who->link_nofollow && S_ISLNK(a->res.st.st_mode)) {
		/* The symlink itself: pinned as its parent and name. */
		if ((fd = open_parent(h, a, &sname)) < 0)
			return -1;
		if (still_there(h, fd, sname, a, &st) < 0)
			goto out;
	} else if (!r->symbolic) {
		if ((fd = reach(h, a, &st)) < 0)
			return -1;
		if (S_ISDIR(st.st_mode)) {
			fail(h, EPERM, "%s is a directory: no hard link can be made to it",
			     a->res.path);
			goto out;
		}
	}
	if ((tfd = open_parent(h, t, &tname)) < 0)
		goto out;
	if (record(h, t->op, r->to, t->res.path, NULL, -1, NULL, false) < 0 ||
	    sync_backups(h) < 0 || audit_before(h) < 0)
		goto out;
	if (r->symbolic ? symlinkat(r->from, tfd, tname)
	    : sname != NULL ? linkat(fd, sname, tfd, tname, 0)
			    : linkat(AT_FDCWD, fsb_at_fd_path(fd, proc, sizeof(proc)), tfd, tname,
				     AT_SYMLINK_FOLLOW)) {
		fail(h, errno, "cannot make %s: %s", t->res.path, strerror(errno));
		goto out;
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

static int op_touch(struct hostop *h)
{
	const struct fsb_hostop_req *r = h->req;
	struct fsb_access *a = &h->src;
	char proc[32];
	struct stat st;
	int fd, rc = -1;

	if (judge(h, a, FSB_OP_TOUCH, r->path, FSB_RESOLVE_EXISTING_OR_CREATABLE) < 0)
		return -1;
	if (a->errnum != 0)
		return fail(h, a->errnum, a->errnum == ENOENT ? "the parent of %s does not exist"
			    : NULL, r->path);
	if (!a->res.exists) {
		if (record(h, FSB_OP_TOUCH, r->path, a->res.path, NULL, -1, NULL, false) < 0 ||
		    sync_backups(h) < 0 || audit_before(h) < 0)
			return -1;
		fd = fsb_at_open(h->rootfd, a->res.path,
				 O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY, 0666);
		if (fd < 0)
			return fail(h, fd == -ELOOP || fd == -EEXIST ? EAGAIN : -fd,
				    "cannot create %s: %s", a->res.path, fd == -EEXIST
				    ? "it appeared since it was checked; ask again" : strerror(-fd));
		close(fd);
		h->changed = true;
		return 0;
	}
	if ((fd = reach(h, a, &st)) < 0)
		return -1;
	if (backup_reached(h, a, fd, &st) < 0 || sync_backups(h) < 0 || audit_before(h) < 0)
		goto out;
	if (utimensat(AT_FDCWD, fsb_at_fd_path(fd, proc, sizeof(proc)), NULL, 0) < 0) {
		fail(h, errno, "cannot set the times of %s: %s", a->res.path, strerror(errno));
		goto out;
	}
	h->changed = true;
	rc = 0;
out:
	close(fd);
	return rc;
}

/* ---- the reply ---------------------------------------------------------- */

static cJSON *reply_of(struct hostop *h)
{
	const struct fsb_hostop_req *r = h->req;
	const struct fsb_access *a = &h->src, *t = &h->dst;
	cJSON *o = cJSON_CreateObject();
	const char *path = r->path != NULL ? r->path : r->from;
	bool bytes = r->path != NULL ? r->path_bytes : r->from_bytes;

	cJSON_AddItemToObject(o, "id", r->id != NULL ? cJSON_Duplicate(r->id, 1)
						      : cJSON_CreateNull());
	cJSON_AddBoolToObject(o, "ok", h->err == 0);
	cJSON_AddStringToObject(o, "operation", fsb_hostop_name(r->op));
	fsb_json_add_path(o, "path", path, bytes);
	if (h->src_real[0])
		fsb_json_add_path(o, "normalisedPath", h->src_real, bytes);
	else if (a->requested != NULL)
		fsb_json_add_path(o, "normalisedPath",
				  a->resolve_err == 0 && a->res.path[0] ? a->res.path
									 : a->normalised, bytes);
	if (r->to != NULL) {
		fsb_json_add_path(o, "to", r->to, r->to_bytes);
		if (t->requested != NULL)
			fsb_json_add_path(o, "normalisedTo",
					  t->resolve_err == 0 && t->res.path[0] ? t->res.path
										 : t->normalised,
					  r->to_bytes);
	}
	if (h->err == 0) {
		cJSON_AddStringToObject(o, "decision", "host-op");
		cJSON_AddBoolToObject(o, "changed", h->changed);
		if (h->trashed[0])
			fsb_json_add_path(o, "trashedTo", h->trashed, bytes);
		return o;
	}
	cJSON_AddStringToObject(o, "decision", "deny");
	cJSON_AddStringToObject(o, "errno", fsb_errno_name(h->err));
	if (h->refused != NULL) {
		const struct fsb_access *x = h->refused;

		cJSON_AddStringToObject(o, "error", x->verdict.reason[0] ? x->verdict.reason
									 : x->verdict.rule);
		cJSON_AddStringToObject(o, "rule", x->verdict.rule);
		if (x->block_id[0])
			cJSON_AddStringToObject(o, "blockId", x->block_id);
		if (h->denied[0])
			fsb_json_add_path(o, "deniedPath", h->denied, false);
	} else {
		cJSON_AddStringToObject(o, "error", h->why[0] ? h->why : strerror(h->err));
	}
	return o;
}

static void run(struct hostop *h)
{
	const struct fsb_hostop_req *req = h->req;
	struct fsb_broker *b = h->b;

	switch (req->op) {
	case FSB_HOSTOP_DELETE:
		op_delete(h);
		break;
	case FSB_HOSTOP_MKDIR:
		if (req->recursive)
			mkdir_parents(h);
		else
			mkdir_one(h);
		break;
	case FSB_HOSTOP_RENAME:
		if (h->who->rename_exchange)
			op_exchange(h);
		else
			op_rename(h);
		break;
	case FSB_HOSTOP_COPY:
		op_copy(h);
		break;
	case FSB_HOSTOP_CHMOD:
		op_chmod(h);
		break;
	case FSB_HOSTOP_LINK:
		op_link(h);
		break;
	case FSB_HOSTOP_TOUCH:
		op_touch(h);
		break;
	}
	audit_after(h);
	if (h->err == 0)
		b->stats.allowed++;
	else if (h->refused != NULL && h->refused->verdict.decision == FSB_ASK)
		b->stats.asked++;
	else
		b->stats.denied++;
}

static struct hostop *hostop_new(struct fsb_broker *b, const struct fsb_hostop_client *who,
				 const struct fsb_hostop_req *req)
{
	struct hostop *h = calloc(1, sizeof(*h));

	if (h == NULL)
		return NULL;
	h->b = b;
	h->who = who;
	h->rootfd = who->view_fd >= 0 ? who->view_fd : b->rootfd;
	h->req = req;
	return h;
}

static void hostop_free(struct hostop *h)
{
	free(h->judged.keys);
	free(h->unsaved.keys);
	for (size_t i = 0; i < h->napproved; i++)
		free(h->approved[i].path);
	free(h->approved);
	for (size_t i = 0; i < h->ntoo_large; i++)
		free(h->too_large[i].path);
	free(h->too_large);
	free(h);
}

cJSON *fsb_hostop_run(struct fsb_broker *b, const struct fsb_hostop_client *who,
		      const struct fsb_hostop_req *req)
{
	struct hostop *h = hostop_new(b, who, req);
	cJSON *reply;

	if (h == NULL) {
		reply = cJSON_CreateObject();
		cJSON_AddFalseToObject(reply, "ok");
		cJSON_AddStringToObject(reply, "errno", "ENOMEM");
		cJSON_AddStringToObject(reply, "error", "out of memory; nothing was changed");
		return reply;
	}
	run(h);
	reply = reply_of(h);
	hostop_free(h);
	return reply;
}

int fsb_hostop_perform(struct fsb_broker *b, const struct fsb_hostop_client *who,
		       const struct fsb_hostop_req *req)
{
	struct hostop *h = hostop_new(b, who, req);
	int err;

	if (h == NULL)
		return -ENOMEM;
	run(h);
	err = h->err;
	hostop_free(h);
	return -err;
}
