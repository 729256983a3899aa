/*
 * modify_backup.c — the broker's use of the backup store (see
 * modify_backup.h). Permission was checked before anything here runs:
 * nothing is backed up for a request that is denied or waits for approval.
 *
 * Every use of a session's store holds its store_lock, except the copy of
 * a file's content (the store lets go of the lock around it, for a request's
 * backup; not for carry_over, which walks s->held under it) and the wait
 * for the journal to be durable (fsb_store_wait): a line is appended under
 * the lock, which is then let go, and the threads of the pool that wait for
 * their lines at once share one fdatasync (the store's own mutex, taken
 * after store_lock and never held while taking another lock). The store
 * itself lives as long as the session. What the pack and the host set
 * (the size limit, backups on or off) is copied under the broker's lock
 * first, since a reload may replace the pack meanwhile; the broker's lock
 * is never held while store_lock is taken.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "at.h"
#include "backup_prune.h"
#include "object_pack.h"
#include "git_guard.h"
#include "holders.h"
#include "log.h"
#include "modify_backup.h"
#include "proto_json.h"
#include "session_name.h"
#include "view.h"

static struct fsb_store *store_of(struct fsb_broker *b, struct fsb_session *s,
				  char *why, size_t whylen)
{
	unsigned crashed;
	int rc;

	if (s->store != NULL)
		return s->store;
	crashed = fsb_git_guard_unsealed(b->cfg.state_dir, s->id);
	if ((rc = fsb_store_open(b->cfg.state_dir, s->id, &s->store, why, whylen)) < 0) {
		fsb_error("backup store of session %s: %s", s->id, why);
		s->store = NULL;
	} else if (crashed > 0) {
		/* Sealed as recovered just now: a crash must not keep what the
		 * guard would have undone at the seal. */
		fsb_git_guard_commit(b, s->id, fsb_store_dir(s->store), crashed);
	}
	/* Where its files live: `fsbroker backup` run inside the project
	 * finds the session, and a restore looks there for the other names
	 * of a hard-linked file. */
	if (s->store != NULL && b->cfg.workspace[0] != '\0' &&
	    (rc = fsb_session_note_workspace(b->cfg.state_dir, s->id, b->cfg.workspace)) < 0)
		fsb_warn("cannot record the workspace of session %s: %s", s->id, strerror(-rc));
	return s->store;
}

/* What a backup in session `s` obeys, taken under the broker's lock. */
struct settings {
	bool enabled;
	uint64_t max_bytes;
	enum fsb_on_too_large on_too_large;
	uint64_t quota_bytes;
	bool batched;		/* backup.durability = "batched" */
};

static void settings_of(struct fsb_broker *b, struct fsb_session *s, struct settings *out)
{
	const struct fsb_backup_settings *set;

	fsb_broker_lock(b);
	set = fsb_policy_backup(b->policy);
	out->enabled = s->backup_enabled;
	out->max_bytes = s->max_bytes_override ? s->max_bytes_override : set->max_bytes;
	out->on_too_large = set->on_too_large;
	out->quota_bytes = set->quota_bytes;
	out->batched = set->batched;
	fsb_broker_unlock(b);
}

/*
 * Whether `path`, judged in the requester's view, may be journaled under
 * that name: 1 when it is the host's object (or the requester has the
 * core's own view), 0 when only the sandbox has it (its private /tmp or
 * ${tmp}), which is neither backed up nor journaled: a restore acts on
 * host paths, and the host's object of that name is not the one changed.
 * -EIO (with `why`) when the view cannot be examined: the change must not
 * happen.
 */
static int journaled_name(struct fsb_broker *b, bool has_view, int view_fd, const char *path,
			  const struct stat *obj, char *why, size_t whylen)
{
	int rc;

	if (!has_view || view_fd < 0 || view_fd == b->rootfd)
		return 1;
	rc = obj != NULL ? fsb_view_object_is_hosts(obj, b->rootfd, path)
			 : fsb_view_is_hosts(view_fd, b->rootfd, path);
	if (rc >= 0)
		return rc;
	snprintf(why, whylen, "cannot tell whether %s is the host's or the sandbox's own (%s); "
		 "nothing was changed", path, strerror(-rc));
	return -EIO;
}

/* The pack's durability for the store's next records; the store lock is
 * held. A flusher thread that cannot start leaves the store strict: every
 * backup is then synced on its call's path, which is safe, only slower. */
static void durability(struct fsb_session *s, const struct settings *set)
{
	int rc = fsb_store_set_durability(s->store, set->batched);

	if (rc < 0)
		fsb_error("backup store of session %s stays strict: %s", s->id, strerror(-rc));
}

/* Fill in the size limit and record `r`; the store lock is held. */
static int record(struct fsb_session *s, const struct settings *set,
		  struct fsb_backup_req *r, struct fsb_backup_result *res)
{
	r->max_bytes = set->max_bytes;
	r->on_too_large = set->on_too_large == FSB_ON_TOO_LARGE_ALLOW ? FSB_TOO_LARGE_SKIP
									: FSB_TOO_LARGE_FAIL;
	durability(s, set);
	return fsb_store_record(s->store, r, res);
}

/* The sentence for a failed record; every error but the two a user can act
 * on becomes -EIO (the reason is in `why`; the client needs only "no"). */
static int explain(int rc, const struct fsb_backup_req *r, char *why, size_t whylen)
{
	switch (rc) {
	case 0:
		return 0;
	case -EFBIG:
		snprintf(why, whylen, "%s is larger than the backup limit of %llu MiB and "
			 "the pack says onTooLarge = \"%s\"; raise backup.maxSizeMB or "
			 "EnableModifyBackup.fileBackupMaxSizeMB", r->resolved,
			 (unsigned long long)(r->max_bytes >> 20),
			 "deny");
		return rc;
	case -EACCES:
		snprintf(why, whylen, "%s is larger than the backup limit of %llu MiB and the "
			 "pack says onTooLarge = \"ask\": approve the prompt block to change it "
			 "without a backup", r->resolved, (unsigned long long)(r->max_bytes >> 20));
		return rc;
	case -ENOSPC:
		snprintf(why, whylen, "no space left for the backup; nothing was changed");
		return rc;
	default:
		snprintf(why, whylen, "the backup failed (%s); nothing was changed",
			 strerror(-rc));
		return -EIO;
	}
}

int fsb_backup_approve_too_large(struct fsb_broker *b, const struct fsb_prompt *p,
				 const char *scope)
{
	struct fsb_skip_approval *v;

	if (strcmp(scope, "once") != 0 && strcmp(scope, "session") != 0)
		return -EINVAL;
	v = realloc(b->skips, (b->nskips + 1) * sizeof(*v));
	if (v == NULL)
		return -ENOMEM;
	b->skips = v;
	v = &v[b->nskips];
	memset(v, 0, sizeof(*v));
	if ((v->path = strdup(p->path)) == NULL)
		return -ENOMEM;
	snprintf(v->session, sizeof(v->session), "%s", p->session);
	v->dev = p->dev;
	v->ino = p->ino;
	v->once = strcmp(scope, "once") == 0;
	b->nskips++;
	return 0;
}

/* The approval of a too-large change of (path, dev, ino) in session `sid`,
 * or -1; the broker's lock is held. */
static long find_skip(struct fsb_broker *b, const char *sid, const char *resolved, dev_t dev,
		      ino_t ino)
{
	for (size_t i = 0; i < b->nskips; i++) {
		struct fsb_skip_approval *v = &b->skips[i];

		if (strcmp(v->session, sid) == 0 && strcmp(v->path, resolved) == 0 &&
		    v->dev == dev && v->ino == ino)
			return (long)i;
	}
	return -1;
}

static void use_skip(struct fsb_broker *b, long i)
{
	if (!b->skips[i].once)
		return;
	free(b->skips[i].path);
	b->skips[i] = b->skips[--b->nskips];
}

int fsb_backup_take_too_large(struct fsb_broker *b, const char *sid, const char *resolved,
			      dev_t dev, ino_t ino)
{
	long i;

	fsb_broker_lock(b);
	i = find_skip(b, sid, resolved, dev, ino);
	if (i >= 0)
		use_skip(b, i);
	fsb_broker_unlock(b);
	return i >= 0 ? 0 : -ENOENT;
}

/*
 * Over the size limit, and the pack says ask: an approval of this very
 * file (path and inode, in this session) lets the change go ahead without a
 * copy — used up at once when `take`, else left for the caller to take; a
 * prompt block is recorded for the host when there is none. True when
 * approved.
 */
static bool too_large_approved(struct fsb_broker *b, const char *sid, const char *op,
			       const char *requested, const char *resolved,
			       const struct stat *st, const char *tool_call, bool take,
			       struct fsb_backup_outcome *out)
{
	const struct fsb_prompt *prompt;
	enum fsb_op code = FSB_OP_WRITE;
	long i;

	fsb_broker_lock(b);
	i = find_skip(b, sid, resolved, st->st_dev, st->st_ino);
	if (i >= 0 && take)
		use_skip(b, i);
	if (i < 0) {
		fsb_op_parse(op, &code);
		prompt = fsb_prompts_record(b->prompts, code, resolved, requested, true, st->st_dev,
					    st->st_ino, FSB_TOO_LARGE_RULE, sid, tool_call);
		if (prompt != NULL)
			snprintf(out->block_id, sizeof(out->block_id), "%s", prompt->id);
	}
	fsb_broker_unlock(b);
	out->approved_too_large = i >= 0;
	return i >= 0;
}

/* Record `r` in session `s`'s store, asking (or using an approval) when it
 * is over the limit and the pack says ask. */
static int record_locked_store(struct fsb_broker *b, struct fsb_session *s, struct settings *set,
			       struct fsb_backup_req *r, struct fsb_backup_result *res, bool take,
			       struct fsb_backup_outcome *out)
{
	int rc;

	/* The store lets go of store_lock while it copies the file, so that
	 * the other requests' lines go in meanwhile. */
	r->caller_lock = &s->store_lock;
	pthread_mutex_lock(&s->store_lock);
	if (store_of(b, s, out->why, sizeof(out->why)) == NULL) {
		pthread_mutex_unlock(&s->store_lock);
		return -EIO;
	}
	rc = record(s, set, r, res);
	pthread_mutex_unlock(&s->store_lock);
	if (rc != -EFBIG || set->on_too_large != FSB_ON_TOO_LARGE_ASK || r->prior == NULL)
		return rc;
	if (!too_large_approved(b, s->id, r->op, r->path, r->resolved, r->prior, r->tool_call,
				take, out))
		return -EACCES;
	/* Approved: the change goes ahead, the journal records the skip. */
	set->on_too_large = FSB_ON_TOO_LARGE_ALLOW;
	pthread_mutex_lock(&s->store_lock);
	rc = record(s, set, r, res);
	pthread_mutex_unlock(&s->store_lock);
	return rc;
}

/* Wait, without store_lock, until the line `res` names is durable (when
 * the change needs it): threads waiting at once share one fdatasync. */
static int wait_durable(struct fsb_session *s, struct fsb_backup_result *res)
{
	int rc = fsb_store_wait(s->store, &res->durable);

	if (rc < 0)
		memset(res, 0, sizeof(*res));
	return rc;
}

int fsb_backup_file(struct fsb_broker *b, const char *sid, const struct fsb_access *acc,
		    int rdfd, const struct stat *st, int flags, const char *phase,
		    struct fsb_backup_outcome *out)
{
	struct fsb_session *s = fsb_broker_session(b, sid);
	struct fsb_backup_result res;
	struct fsb_backup_req r;
	struct settings set;
	unsigned cycle = 0;
	struct fsb_audit_line l;
	int rc;

	memset(out, 0, sizeof(*out));
	if (s == NULL) {
		snprintf(out->why, sizeof(out->why), "the session has no state to keep a backup in");
		return -EIO;
	}
	settings_of(b, s, &set);
	if (!set.enabled) {
		out->skipped = "disabled";
		return 0;
	}
	/* `rdfd` was opened in the view: `st` is the view's side. */
	rc = journaled_name(b, acc->has_view, acc->view_fd, acc->res.path, st, out->why,
			    sizeof(out->why));
	if (rc <= 0) {
		out->skipped = rc == 0 ? "private" : NULL;
		return rc;
	}
	memset(&r, 0, sizeof(r));
	memset(&res, 0, sizeof(res));
	r.tool_call = acc->tool_call;
	r.op = fsb_op_name(acc->op);
	r.flags = flags;
	r.path = acc->requested;
	r.resolved = acc->res.path;
	r.prior = st;
	r.fd = rdfd;
	r.skip_content = !acc->verdict.backup;
	r.defer_sync = true;
	r.no_repeat_copy = true;
	rc = record_locked_store(b, s, &set, &r, &res, true, out);
	/* The store could not be opened: out->why says why. */
	if (rc == -EIO && out->why[0] != '\0')
		return rc;
	if (rc == 0)
		rc = wait_durable(s, &res);
	pthread_mutex_lock(&s->store_lock);
	cycle = fsb_store_cycle(s->store);
	pthread_mutex_unlock(&s->store_lock);

	/* Nothing was taken and nothing written: the grant's own line says it all. */
	if (rc == 0 && res.skipped != NULL && strcmp(res.skipped, "recorded-before") == 0) {
		out->skipped = res.skipped;
		return 0;
	}
	fsb_access_audit_line(&l, acc, phase, acc->errnum);
	fsb_audit_line_int(&l, "cycle", cycle);
	if (res.object[0])
		fsb_audit_line_str(&l, "backupObject", res.object);
	if (res.reused)
		fsb_audit_line_bool(&l, "backupReused", true);
	if (res.skipped != NULL)
		fsb_audit_line_str(&l, "backupSkipped", res.skipped);
	if (rc < 0)
		fsb_audit_line_str(&l, "backupErrno", fsb_errno_name(-rc));
	if (out->block_id[0] && strcmp(out->block_id, acc->block_id) != 0)
		fsb_audit_line_str(&l, "blockId", out->block_id);
	/* An unaudited backup is a change nobody can trace: refuse it. */
	if (fsb_broker_audit_line(b, sid, &l) < 0 && rc == 0) {
		snprintf(out->why, sizeof(out->why), "the audit log cannot be written");
		return -EIO;
	}
	if (rc == 0)
		out->skipped = res.skipped;
	return explain(rc, &r, out->why, sizeof(out->why));
}

int fsb_backup_entry(struct fsb_broker *b, const char *sid, const struct fsb_backup_entry *e,
		     struct fsb_backup_result *res, struct fsb_backup_outcome *out)
{
	struct fsb_session *s = fsb_broker_session(b, sid);
	struct fsb_backup_req r;
	struct settings set;
	int rc;

	memset(res, 0, sizeof(*res));
	memset(out, 0, sizeof(*out));
	if (s == NULL) {
		snprintf(out->why, sizeof(out->why), "the session has no state to keep a backup in");
		return -EIO;
	}
	settings_of(b, s, &set);
	if (!set.enabled) {
		res->skipped = out->skipped = "disabled";
		return 0;
	}
	rc = journaled_name(b, e->has_view, e->view_fd, e->resolved, NULL, out->why,
			    sizeof(out->why));
	if (rc <= 0) {
		res->skipped = out->skipped = rc == 0 ? "private" : NULL;
		return rc;
	}
	memset(&r, 0, sizeof(r));
	r.tool_call = e->tool_call;
	r.trace = e->trace;
	r.op = fsb_op_name(e->op);
	r.path = e->path;
	r.resolved = e->resolved;
	r.prior = e->prior;
	r.made = e->made;
	r.fd = e->fd;
	r.link_target = e->link_target;
	r.skip_content = e->skip_content;
	r.metadata_only = e->metadata_only;
	r.keep_inode = e->keep_inode;
	r.moved_to = e->moved_to;
	r.no_repeat_copy = e->in_place;
	r.defer_sync = true;
	rc = record_locked_store(b, s, &set, &r, res, false, out);
	if (rc == -EIO && out->why[0] != '\0')
		return rc;
	if (rc == 0)
		out->skipped = res->skipped;
	return explain(rc, &r, out->why, sizeof(out->why));
}

int fsb_backup_unshare(struct fsb_broker *b, const char *sid, const char *object)
{
	struct fsb_session *s = fsb_broker_session(b, sid);
	int rc = 0;

	if (s == NULL)
		return 0;
	pthread_mutex_lock(&s->store_lock);
	if (s->store != NULL)
		rc = fsb_store_unshare(s->store, object);
	pthread_mutex_unlock(&s->store_lock);
	return rc;
}

int fsb_backup_sync(struct fsb_broker *b, const char *sid, char *why, size_t whylen)
{
	struct fsb_session *s = fsb_broker_session(b, sid);
	struct fsb_journal_mark m = { 0, 0 };
	struct fsb_store *store;
	int rc = 0;

	if (s == NULL)
		return 0;
	pthread_mutex_lock(&s->store_lock);
	store = s->store;
	if (store != NULL)
		fsb_store_pending(store, &m);
	pthread_mutex_unlock(&s->store_lock);
	if (store != NULL)
		rc = fsb_store_wait(store, &m);
	if (rc < 0)
		snprintf(why, whylen, "the backup journal cannot be synced (%s); nothing was "
			 "changed", strerror(-rc));
	return rc;
}

int fsb_backup_recover(struct fsb_broker *b, const char *sid, char *err, size_t errlen)
{
	struct fsb_session *s = fsb_broker_session(b, sid);
	struct fsb_store *store;

	if (s == NULL) {
		snprintf(err, errlen, "the state of session %s could not be opened (see above)", sid);
		return -EINVAL;
	}
	pthread_mutex_lock(&s->store_lock);
	store = store_of(b, s, err, errlen);
	pthread_mutex_unlock(&s->store_lock);
	return store != NULL ? 0 : -EIO;
}

/* Session `sid` when its backups are on; else NULL with *rc 0 (turned
 * off: nothing to journal) or -EIO (no state to journal in). */
static struct fsb_session *journaling(struct fsb_broker *b, const char *sid,
				      struct settings *set, int *rc)
{
	struct fsb_session *s = fsb_broker_session(b, sid);

	*rc = s == NULL ? -EIO : 0;
	if (s == NULL)
		return NULL;
	settings_of(b, s, set);
	return set->enabled ? s : NULL;
}

int fsb_backup_note_created(struct fsb_broker *b, const char *sid, const struct fsb_access *acc,
			    int flags, const struct stat *made)
{
	struct fsb_backup_result res;
	struct fsb_backup_req r;
	struct settings set;
	struct fsb_session *s;
	char why[256];
	int rc;

	if ((s = journaling(b, sid, &set, &rc)) == NULL)
		return rc;
	/* The object made, when the caller holds it, is the view's side. */
	if ((rc = journaled_name(b, acc->has_view, acc->view_fd, acc->res.path, made, why,
				 sizeof(why))) <= 0)
		return rc;
	memset(&r, 0, sizeof(r));
	r.tool_call = acc->tool_call;
	r.op = fsb_op_name(acc->op);
	r.flags = flags;
	r.path = acc->requested;
	r.resolved = acc->res.path;
	r.fd = -1;
	r.made = made;
	r.defer_sync = true;
	pthread_mutex_lock(&s->store_lock);
	if (store_of(b, s, why, sizeof(why)) == NULL) {
		rc = -EIO;
	} else {
		durability(s, &set);
		rc = fsb_store_record(s->store, &r, &res);
	}
	pthread_mutex_unlock(&s->store_lock);
	/* A created path's line needs no sync of its own (docs/backup-store.md,
	 * "When a line is durable"), unless an earlier line of the path does. */
	return rc == 0 ? wait_durable(s, &res) : rc;
}

int fsb_backup_note_parent(struct fsb_broker *b, const char *sid, const struct fsb_access *acc)
{
	struct settings set;
	struct fsb_session *s;
	char why[256];
	bool noted;
	int rc;

	if ((s = journaling(b, sid, &set, &rc)) == NULL)
		return rc;
	/* Journaled already (a tool call that creates many names in one
	 * directory): nothing to add, nothing to look at in the view. */
	pthread_mutex_lock(&s->store_lock);
	noted = s->store != NULL && fsb_store_parent_noted(s->store, acc->res.path, acc->tool_call);
	pthread_mutex_unlock(&s->store_lock);
	if (noted)
		return 0;
	/* The directory is the sandbox's own when the name it will hold is. */
	if ((rc = journaled_name(b, acc->has_view, acc->view_fd, acc->res.path, NULL, why,
				 sizeof(why))) <= 0)
		return rc;
	pthread_mutex_lock(&s->store_lock);
	if (store_of(b, s, why, sizeof(why)) == NULL) {
		rc = -EIO;
	} else {
		durability(s, &set);
		rc = fsb_store_note_parent(s->store, acc->res.path, acc->tool_call, NULL);
	}
	pthread_mutex_unlock(&s->store_lock);
	return rc < 0 ? -EIO : 0;
}

/* Follow the inode behind `fd` across cycles, by an O_PATH fd of our own
 * (store_lock held). The oldest is let go when the table is full. */
static void follow(struct fsb_session *s, int fd, const struct stat *st)
{
	int path;

	/* The inode is kept with the fd: a write grant compares, it does not
	 * stat every followed file again. */
	for (size_t i = 0; i < s->nheld; i++)
		if (s->held[i].dev == st->st_dev && s->held[i].ino == st->st_ino)
			return;
	if ((path = fsb_at_reopen(fd, O_PATH)) < 0)
		return;
	if (s->nheld == FSB_MAX_HELD) {
		close(s->held[0].fd);
		memmove(s->held, s->held + 1, (FSB_MAX_HELD - 1) * sizeof(s->held[0]));
		s->nheld--;
	}
	s->held[s->nheld++] = (struct fsb_held){ path, st->st_dev, st->st_ino };
}

void fsb_backup_note_write_grant(struct fsb_broker *b, const char *sid, int fd,
				 const struct stat *st)
{
	struct fsb_session *s = fsb_broker_session(b, sid);

	if (s == NULL)
		return;
	pthread_mutex_lock(&s->store_lock);
	if (s->store != NULL)
		fsb_store_note_write_grant(s->store, st->st_dev, st->st_ino);
	if (fd >= 0 && S_ISREG(st->st_mode))
		follow(s, fd, st);
	pthread_mutex_unlock(&s->store_lock);
}

/*
 * Right after a seal (store_lock held): each followed file that a process
 * still holds open for writing is backed up into the next cycle, under its
 * name now; the others are let go. Returns how many were backed up.
 */
static int carry_over(struct fsb_broker *b, struct fsb_session *s)
{
	struct fsb_inode_id ids[FSB_MAX_HELD];
	bool held[FSB_MAX_HELD];
	struct settings set;
	size_t keep = 0;
	int saved = 0;

	if (s->nheld == 0)
		return 0;
	for (size_t i = 0; i < s->nheld; i++) {
		struct stat st;

		ids[i].dev = ids[i].ino = 0;
		if (fstat(s->held[i].fd, &st) == 0 && st.st_nlink > 0) {
			ids[i].dev = st.st_dev;
			ids[i].ino = st.st_ino;
		}
	}
	fsb_holders_writable(ids, s->nheld, held);
	settings_of(b, s, &set);
	for (size_t i = 0; i < s->nheld; i++) {
		struct fsb_backup_result res;
		struct fsb_backup_req r;
		char proc[32], path[PATH_MAX];
		struct stat st, named;
		ssize_t n;
		int rd;

		if (!held[i] || ids[i].ino == 0) {
			close(s->held[i].fd);
			continue;
		}
		s->held[keep++] = s->held[i];
		/* Its name now: it may have been renamed since the grant. */
		n = readlink(fsb_at_fd_path(s->held[i].fd, proc, sizeof(proc)), path,
			     sizeof(path) - 1);
		if (n <= 0 || !set.enabled)
			continue;
		path[n] = '\0';
		if (lstat(path, &named) < 0 || named.st_dev != ids[i].dev ||
		    named.st_ino != ids[i].ino)
			continue;
		if ((rd = fsb_at_reopen(s->held[i].fd, O_RDONLY | O_NONBLOCK | O_NOCTTY)) < 0)
			continue;
		memset(&r, 0, sizeof(r));
		r.op = "held-open";
		r.path = path;
		r.resolved = path;
		r.prior = &st;
		r.fd = rd;
		if (fstat(rd, &st) == 0 && record(s, &set, &r, &res) == 0)
			saved++;
		else
			fsb_warn("%s is held open for writing, but could not be backed up into "
				 "the next cycle", path);
		close(rd);
	}
	s->nheld = keep;
	return saved;
}

static int commit(struct fsb_broker *b, const char *sid, const char *message, bool carry,
		  char *err, size_t errlen);

static void report_quota(void *arg, enum fsb_prune_msg kind, const char *msg)
{
	const char *sid = arg;

	if (kind == FSB_PRUNE_ERROR)
		fsb_error("backup quota of session %s: %s", sid, msg);
	else
		fsb_info("backup quota of session %s: %s", sid, msg);
}

int fsb_backup_commit(struct fsb_broker *b, const char *sid, const char *message,
		      char *err, size_t errlen)
{
	return commit(b, sid, message, true, err, errlen);
}

/* `carry`: follow files still held open into the next cycle (not when the
 * core stops: nobody would seal that cycle). */
/* Pack cycle `n` of the session's store just sealed; a failure is said and
 * leaves its objects loose. */
static void pack_sealed(struct fsb_session *s, unsigned n)
{
	struct fsb_objpack_stats st;
	int rc = fsb_objpack_cycle(fsb_store_dir(s->store), n, &st);

	if (rc < 0)
		fsb_error("backup store of session %s: cannot pack cycle %u (its objects "
			  "stay loose): %s", s->id, n, strerror(-rc));
	else if (st.packed > 0)
		fsb_info("backup store of session %s: cycle %u: %zu objects packed, %llu bytes "
			 "in %llu", s->id, n, st.packed, (unsigned long long)st.raw,
			 (unsigned long long)st.stored);
}

static int commit(struct fsb_broker *b, const char *sid, const char *message, bool carry,
		  char *err, size_t errlen)
{
	struct fsb_session *s = fsb_broker_session(b, sid);
	char head[FSB_SHA256_HEX_LEN + 1];
	int n, rc, carried = 0;
	cJSON *rec;

	if (s == NULL) {
		snprintf(err, errlen, "session %s has no state (no state dir, or an invalid id)", sid);
		return -EINVAL;
	}
	pthread_mutex_lock(&s->store_lock);
	if (store_of(b, s, err, errlen) == NULL) {
		n = -EIO;
		goto out;
	}
	if (fsb_store_cycle(s->store) == 0) {
		n = 0;
		goto out;
	}
	/* What git would run later goes before the seal records the end
	 * state, and its audit lines before the head. */
	fsb_git_guard_commit(b, s->id, fsb_store_dir(s->store), fsb_store_cycle(s->store));
	/* The sealed cycle names the audit chain's head: that line must be on
	 * disk before the cycle that vouches for it. */
	fsb_broker_lock(b);
	snprintf(head, sizeof(head), "%s", fsb_audit_head(s->audit));
	fsb_broker_unlock(b);
	/* Outside the lock (decisions on the loop need it): an fsync covers
	 * every line written before it, the head's included, and the log's fd
	 * stays open while the core runs. */
	rc = fsb_audit_sync(s->audit);
	if (rc < 0) {
		snprintf(err, errlen, "cannot sync the audit log: %s", strerror(-rc));
		n = rc;
		goto out;
	}
	n = fsb_store_seal(s->store, message, head, err, errlen);
	if (n > 0) {
		struct settings set;

		/* The pack's quota, oldest sealed cycles first; the turn just
		 * sealed always stays. Only with the store to itself: another
		 * core's object not yet in its journal looks unreferenced. */
		settings_of(b, s, &set);
		/* Off every change's path: the sealed cycle's objects go,
		 * compressed, into a pack before the quota counts them
		 * (docs/backup-store.md, "Object packs"). Safe beside other
		 * cores: an object is loose, packed or both at every step. */
		pack_sealed(s, (unsigned)n);
		if (fsb_store_alone(s->store) == 1) {
			fsb_backup_prune_to(fsb_store_dir(s->store), set.quota_bytes, false,
					    report_quota, s->id);
			fsb_store_share(s->store);
		}
	}
	if (n > 0 && carry)
		carried = carry_over(b, s);
out:
	pthread_mutex_unlock(&s->store_lock);
	if (n <= 0)
		return n;
	rec = cJSON_CreateObject();
	cJSON_AddStringToObject(rec, "phase", "finalization-modify-backup");
	cJSON_AddStringToObject(rec, "session", sid);
	cJSON_AddNumberToObject(rec, "cycle", n);
	cJSON_AddStringToObject(rec, "commitMsg", message);
	if (carried > 0)
		cJSON_AddNumberToObject(rec, "heldOpenBackedUp", carried);
	fsb_broker_audit(b, sid, rec);
	return n;
}

void fsb_backup_commit_all(struct fsb_broker *b, const char *message)
{
	char err[512];

	for (int i = 0; i < b->nsessions; i++) {
		struct fsb_session *s = &b->sessions[i];

		bool open;

		pthread_mutex_lock(&s->store_lock);
		open = s->store != NULL && fsb_store_cycle(s->store) != 0;
		pthread_mutex_unlock(&s->store_lock);
		if (open && commit(b, s->id, message, false, err, sizeof(err)) < 0)
			fsb_error("session %s: the open cycle was not sealed: %s", s->id, err);
	}
}
