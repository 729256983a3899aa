/*
 * restore.c — the restore engine (see restore.h and docs/restore.md): plan
 * each path's restore from its first record in the cycle, check what is
 * there now against the cycle's end state and what it created, keep a copy
 * of what will change (restore_undo.c), then put content, type, mode,
 * owner, times, xattrs and link groups back, walking from "/" without
 * following symlinks. It prints nothing: each path's outcome is a verb and
 * a sentence the caller shows.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "at.h"
#include "op.h"
#include "resolve.h"
#include "restore.h"
#include "restore_undo.h"
#include "session_name.h"
#include "xattr.h"

/* ---- walking without symlinks ---------------------------------------------- */

/* One restore under way: what it was asked, and a descriptor of "/" that
 * every walk starts from (opened by fsb_restore_plan, closed by
 * fsb_restore_free). */
struct ctx {
	const struct fsb_restore_opts *o;
	int root;
	struct fsb_undo_chain **chain;	/* planning: what undos left (NULL after) */
};

/*
 * Open the directory that holds `path` (a normalised absolute path) for the
 * *at() calls that change it. The walk from "/" uses openat2 with
 * RESOLVE_NO_SYMLINKS: a directory on the way that is a symlink now (say,
 * replaced after the cycle by a link to elsewhere) fails the walk with
 * ELOOP instead of leading restore into whatever it points at. Every call
 * below then names only the last component, without following it.
 * Returns the fd or -errno; *name points at the last component.
 */
static int open_parent(const struct ctx *c, const char *path, const char **name)
{
	return fsb_at_open_parent(c->root, path, name);
}

static const char *walk_error(int err)
{
	switch (-err) {
	case ELOOP:
		return "a directory on the way to it is a symlink now; restore does not follow "
		       "symlinks";
	case ENOTDIR:
		return "something on the way to it is not a directory now";
	case ENOENT:
		return "its parent directory does not exist";
	case ENOSYS:
		return "this kernel has no openat2 (Linux 5.6 or later), which restore needs to "
		       "walk paths without following symlinks";
	default:
		return strerror(-err);
	}
}

/* A fresh name in the parent for building the restored file before the rename. */
void fsb_restore_temp_name(char *buf, size_t len)
{
	unsigned char r[6] = { 0 };

	if (getrandom(r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
		unsigned long v = (unsigned long)getpid() ^ (unsigned long)random();

		memcpy(r, &v, sizeof(r) < sizeof(v) ? sizeof(r) : sizeof(v));
	}
	snprintf(buf, len, ".fsbroker-restore-%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2], r[3],
		 r[4], r[5]);
}

const char *fsb_restore_end_differs(const struct fsb_end_state *e, bool exists,
				    const struct stat *st)
{
	if (e->exists && !exists)
		return "it was removed since";
	if (!e->exists && exists)
		return "it was created since";
	if (!exists)
		return NULL;
	if (e->type[0] != '\0' && strcmp(e->type, fsb_file_type_name(st->st_mode)) != 0)
		return "its type differs";
	/* cJSON reads numbers as doubles: an inode number beyond 2^53, which
	 * the store writes as exact digits, comes back rounded, so compare it
	 * rounded the same way. */
	if (e->has_ino && (double)e->ino != (double)st->st_ino)
		return "its inode differs";
	if (e->has_size && e->size != (uint64_t)st->st_size)
		return "its size differs";
	if (e->has_mtime && (e->mtime.tv_sec != st->st_mtim.tv_sec ||
			     e->mtime.tv_nsec != st->st_mtim.tv_nsec))
		return "its modification time differs";
	return NULL;
}

/* ---- planning --------------------------------------------------------------- */

static void settle(struct fsb_restore_item *it, enum fsb_restore_res res, const char *verb,
		   bool paren, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void settle(struct fsb_restore_item *it, enum fsb_restore_res res, const char *verb,
		   bool paren, const char *fmt, ...)
{
	va_list ap;

	it->res = res;
	it->paren = paren;
	snprintf(it->verb, sizeof(it->verb), "%s", verb);
	va_start(ap, fmt);
	vsnprintf(it->detail, sizeof(it->detail), fmt, ap);
	va_end(ap);
}

static void append(struct fsb_restore_item *it, const char *s)
{
	size_t n = strlen(it->note);

	snprintf(it->note + n, sizeof(it->note) - n, "%s", s);
}

static int depth_of(const char *p)
{
	int d = 0;

	for (; *p != '\0'; p++)
		d += *p == '/';
	return d;
}

/* What kind of restore the prior state asks for; settles what cannot be done. */
static void choose_action(struct fsb_restore_item *it)
{
	const struct fsb_prior *p = &it->pick->rec->prior;

	if (!p->exists) {
		it->act = FSB_ACT_REMOVE;
	} else if (strcmp(p->type, "file") == 0) {
		it->act = FSB_ACT_FILE;
		if (p->object[0] != '\0')
			return;
		if (p->metadata_only) {
			it->act = FSB_ACT_META;
			return;
		}
		if (p->moved && it->pick->rec->moved_now != NULL) {
			it->act = FSB_ACT_MOVED;
			return;
		}
		/* A cache the pack chose not to back up: nothing was promised,
		 * so leaving it is no failure of the restore. */
		if (strcmp(p->skipped, "skip-rule") == 0) {
			settle(it, FSB_RES_OK, "left", false,
			       "not backed up (the pack's backup.skip), left as it is");
			return;
		}
		settle(it, FSB_RES_SKIPPED, "skipped", false,
		       "not restorable: no backup was taken (%s)",
		       strcmp(p->skipped, "too-large") == 0 ? "too large"
		       : strcmp(p->skipped, "skip-rule") == 0 ? "skip rule"
		       : p->skipped[0] != '\0' ? p->skipped : "the journal names no object");
	} else if (strcmp(p->type, "dir") == 0) {
		it->act = FSB_ACT_DIR;
	} else if (strcmp(p->type, "symlink") == 0) {
		it->act = FSB_ACT_SYMLINK;
		if (p->target == NULL)
			settle(it, FSB_RES_SKIPPED, "skipped", false,
			       "not restorable: the journal holds no target for this symlink");
	} else if (strcmp(p->type, "fifo") == 0) {
		it->act = FSB_ACT_FIFO;
	} else {
		it->act = FSB_ACT_OTHER;
		settle(it, FSB_RES_SKIPPED, "skipped", false,
		       "not restorable: restore does not recreate a %s", p->type);
	}
}

/*
 * Is `st` the object of type `type`, (dev, ino) that the cycle created?
 * When it is not, --force still removes what a later restore or edit may
 * have put there in its place (a regular file, a symlink — unlinked, never
 * followed — a fifo, an empty directory) and notes it; never a socket or a
 * device, which no restore makes again (a socket there is some program's
 * live endpoint); otherwise `it` is settled as left.
 */
static bool is_the_object(const struct ctx *c, struct fsb_restore_item *it,
			  const struct stat *st,
			  const char *type, uint64_t dev, uint64_t ino)
{
	const char *now = fsb_file_type_name(st->st_mode);
	bool same_type = strcmp(type, now) == 0;
	char why[160];

	/* cJSON reads numbers as doubles: compare the numbers rounded the same
	 * way (see fsb_restore_end_differs). An undo that put the object back made it
	 * anew: what it left stands for the object (fsb_undo_stands_for). */
	if (same_type && (it->stands_in ||
			  ((double)dev == (double)st->st_dev && (double)ino == (double)st->st_ino)))
		return true;
	if (!same_type)
		snprintf(why, sizeof(why), "the cycle created a %s here and a %s is there now",
			 type, now);
	else
		snprintf(why, sizeof(why), "this %s is not the one the cycle created (its device "
			 "or inode differs)", now);
	if (c->o->force && (S_ISREG(st->st_mode) || S_ISLNK(st->st_mode) || S_ISFIFO(st->st_mode) ||
			 S_ISDIR(st->st_mode))) {
		append(it, "; forced, though ");
		append(it, why);
		return true;
	}
	settle(it, FSB_RES_SKIPPED, "left", false, "not removed: %s%s", why,
	       S_ISSOCK(st->st_mode) || S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode)
		       ? "" : " (use --force to remove it anyway)");
	return false;
}

/* The object the cycle's last line of the path left under it, by the
 * line's `made` (a create, a rename, a link) or, for a change in place,
 * its prior state; false when the line does not tell (a name journaled
 * before the object was made, one the cycle took away). */
static bool last_object(const struct fsb_pick *pk, const char **type, uint64_t *dev,
			uint64_t *ino)
{
	static const char *const in_place[] = {
		"write", "chmod", "chown", "utimes", "xattr", "touch", "entries", "held-open",
	};
	const struct fsb_journal_rec *r = pk->all[pk->nall - 1];
	bool kept = false;

	if (r->has_made) {
		*type = r->made_type;
		*dev = r->made_dev;
		*ino = r->made_ino;
		return true;
	}
	for (size_t i = 0; i < sizeof(in_place) / sizeof(in_place[0]); i++)
		kept = kept || strcmp(r->op, in_place[i]) == 0;
	if (!kept || !r->prior.exists)
		return false;
	*type = r->prior.type;
	*dev = r->prior.dev;
	*ino = r->prior.ino;
	return true;
}

/*
 * A path the cycle created is removed only when what is there now is
 * certainly the object the cycle made: never a host's file, socket, symlink
 * or tree that merely has its name. The cycle's end state names that object
 * (type, dev and ino, taken at the seal: what the cycle left, also when it
 * replaced its own file, as `sed -i` does); without one (an open cycle, or
 * one recovered after a crash) the object the path's last line left there
 * (last_object). With neither (a cycle sealed by an older fsbroker,
 * whose end state's type and ino may describe another object: the host's,
 * for a name in the sandbox's private /tmp; a create journaled before it
 * was made) nothing proves it, and not even --force removes more than what
 * holds nothing of value: an empty regular file with one link, or an empty
 * directory (rmdir refuses one with entries), of the kind the record made
 * and owned by the restoring user.
 * True when the removal may go ahead; otherwise `it` is settled as left.
 */
static bool removable(const struct ctx *c, const struct fsb_cycle *cy,
		      struct fsb_restore_item *it)
{
	const struct fsb_end_state *e = it->pick->end;
	const struct fsb_journal_rec *r = it->pick->all[it->pick->nall - 1];
	const struct stat *st = &it->now;
	const char *type = fsb_file_type_name(st->st_mode), *made;
	bool dir_op = strcmp(r->op, "mkdir") == 0;
	uint64_t dev, ino;

	if (e != NULL && e->exists && e->has_dev && e->has_ino && e->type[0] != '\0')
		return is_the_object(c, it, st, e->type, e->dev, e->ino);
	if ((e == NULL || !e->has_dev) && last_object(it->pick, &made, &dev, &ino))
		return is_the_object(c, it, st, made, dev, ino);
	if (st->st_uid == geteuid() &&
	    ((dir_op && S_ISDIR(st->st_mode)) ||
	     (!dir_op && S_ISREG(st->st_mode) && st->st_size == 0 && st->st_nlink == 1)))
		return true;
	settle(it, FSB_RES_SKIPPED, "left", false,
	       "not removed: the cycle recorded no device and inode of what it created here "
	       "(%s), and a %s%s is not certainly its own",
	       cy->state == FSB_CYCLE_OPEN ? "the cycle is still open"
	       : cy->state == FSB_CYCLE_RECOVERED ? "it was recovered after a crash"
	       : "it was sealed by an fsbroker that did not record them",
	       S_ISREG(st->st_mode) && st->st_size > 0 ? "non-empty " : "", type);
	return false;
}

/*
 * FSB_ACT_MOVED: open the inode the cycle moved, where it last went, while that
 * name still exists (a restore removes it before it recreates the old one),
 * and check it is the very file: same dev/ino, same size.
 */
static void open_moved(const struct ctx *c, struct fsb_restore_item *it)
{
	const struct fsb_journal_rec *r = it->pick->rec;
	const char *name;
	struct stat st;
	int pfd, fd;
	bool same;

	pfd = open_parent(c, r->moved_now, &name);
	fd = pfd < 0 ? pfd : openat(pfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
				    O_CLOEXEC);
	if (pfd >= 0)
		close(pfd);
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    (uint64_t)st.st_size == r->prior.size) {
		same = (uint64_t)st.st_dev == r->prior.dev && (uint64_t)st.st_ino == r->prior.ino;
		/* Another inode there now: a later restore put the file back
		 * as a copy (or someone replaced it). Only --force takes it. */
		if (!same && c->o->force)
			append(it, "; forced, though the file it was moved to is not the inode "
			       "the cycle moved");
		if (same || c->o->force) {
			it->src_fd = fd;
			return;
		}
	}
	if (fd >= 0)
		close(fd);
	settle(it, FSB_RES_SKIPPED, "skipped", false,
	       "not restorable: the cycle moved it and kept no copy of its content, and the "
	       "file it moved is not at %s now (or its size changed)", r->moved_now);
}

static void plan_item(const struct ctx *c, const struct fsb_cycle *cy,
		      struct fsb_restore_item *it)
{
	const struct fsb_prior *p = &it->pick->rec->prior;
	const char *name, *diff;
	int pfd, fd, rc;

	if (it->res != FSB_RES_PENDING)
		return;
	pfd = open_parent(c, it->path, &name);
	/* A parent that is gone, or is a file or a symlink now, may be a
	 * directory this restore makes again first (checked by the caller). */
	if (pfd == -ENOENT || pfd == -ENOTDIR || (pfd == -ELOOP && it->act != FSB_ACT_REMOVE)) {
		it->parent_missing = true;
		it->parent_err = pfd;
	} else if (pfd < 0) {
		settle(it, FSB_RES_SKIPPED, "skipped", false, "%s", walk_error(pfd));
		return;
	} else {
		it->exists = fstatat(pfd, name, &it->now, AT_SYMLINK_NOFOLLOW) == 0;
		rc = it->exists ? 0 : -errno;
		close(pfd);
		if (rc < 0 && rc != -ENOENT) {
			settle(it, FSB_RES_SKIPPED, "skipped", false, "cannot examine it: %s",
			       strerror(-rc));
			return;
		}
	}
	/* Nothing to remove: no later change can be lost by doing nothing
	 * (a trash emptied since the cycle, say). */
	if (it->act == FSB_ACT_REMOVE && !it->exists) {
		settle(it, FSB_RES_OK, "unchanged", false, "already absent");
		return;
	}
	/* The end state tells a path the cycle left as it was from one someone
	 * changed since: that later change would be lost, so it needs --force. */
	if (cy->state == FSB_CYCLE_RECOVERED) {
		/* Sealed at a restart: what the paths were when the crash came
		 * is not known, so any of them may hold a change made after it. */
		if (!c->o->force) {
			settle(it, FSB_RES_SKIPPED, "skipped", false,
			       "no end state was recorded (the cycle was recovered after a "
			       "crash): use --force");
			return;
		}
		snprintf(it->note, sizeof(it->note), "; forced, though no end state was recorded: "
			 "the cycle was recovered after a crash");
	} else if (cy->state != FSB_CYCLE_OPEN) {
		if (it->pick->end == NULL && !c->o->force) {
			settle(it, FSB_RES_SKIPPED, "skipped", false,
			       "the cycle recorded no end state for it, so a change made after "
			       "the cycle cannot be ruled out (use --force)");
			return;
		}
		diff = it->pick->end == NULL ? "no end state was recorded"
		       : fsb_restore_end_differs(it->pick->end, it->exists, &it->now);
		/* Restore, undo, restore again: the undo wrote the file anew
		 * (another inode), and nothing else changed it since. */
		if (diff != NULL && it->pick->end != NULL && !c->o->undo && c->chain != NULL &&
		    c->o->state != NULL && c->o->session != NULL &&
		    fsb_undo_stands_for(c->chain, c->o->state, c->o->session, it->path,
					it->exists, &it->now, it->pick->end)) {
			diff = NULL;
			it->stands_in = true;
		}
		if (diff != NULL && !c->o->force) {
			settle(it, FSB_RES_SKIPPED, "skipped", false,
			       "changed since the cycle ended (%s; use --force)", diff);
			return;
		}
		if (diff != NULL)
			snprintf(it->note, sizeof(it->note), "; forced, though it changed after the "
				 "cycle: %s", diff);
	}
	if (it->act == FSB_ACT_REMOVE && !removable(c, cy, it))
		return;
	/*
	 * Only the metadata was journaled: the cycle left the bytes as they
	 * were, so the file the cycle ended with holds the content it began
	 * with. A sealed cycle's end state said above whether the file there
	 * is that one (else --force); an open cycle has none, so the inode
	 * must be the one recorded.
	 */
	if (it->act == FSB_ACT_META &&
	    (!it->exists || !S_ISREG(it->now.st_mode) ||
	     (cy->state == FSB_CYCLE_OPEN && ((uint64_t)it->now.st_dev != p->dev ||
					      (uint64_t)it->now.st_ino != p->ino)))) {
		settle(it, FSB_RES_SKIPPED, "skipped", false,
		       "not restorable: the cycle changed only its metadata and kept no copy of "
		       "its content, and the file it changed is not there now");
		return;
	}
	if (it->act == FSB_ACT_MOVED)
		open_moved(c, it);
	if (it->act == FSB_ACT_FILE) {
		/* A corrupted object is found before anything is changed, and a
		 * dry run reports it too; the copy checks the hash once more. */
		fd = fsb_backup_object_open(c->o->store, p->object);
		rc = fd < 0 ? fd : fsb_backup_object_check(fd, p);
		if (fd >= 0)
			close(fd);
		if (rc == -ESTALE)
			settle(it, FSB_RES_SKIPPED, "skipped", false,
			       "the inode kept as its backup (%s) was changed after it was kept "
			       "(its size or mtime differs); nothing was written", p->object);
		else if (rc == -EBADMSG)
			settle(it, FSB_RES_SKIPPED, "skipped", false,
			       "its backup object %s is corrupted (its content does not match its "
			       "SHA-256 name); nothing was written", p->object);
		else if (rc == -ENOENT)
			settle(it, FSB_RES_SKIPPED, "skipped", false,
			       "its backup object %s is missing from %s/objects", p->object,
			       c->o->store);
		else if (rc == -ENXIO)
			settle(it, FSB_RES_SKIPPED, "skipped", false,
			       "its backup object %s is not a regular file; nothing was written",
			       p->object);
		else if (rc < 0)
			settle(it, FSB_RES_SKIPPED, "skipped", false,
			       "cannot read its backup object %s: %s", p->object, strerror(-rc));
	}
}

/* ---- doing it --------------------------------------------------------------- */

/* Still the file that was planned for? Anything else appeared meanwhile. */
static bool same_as_planned(const struct fsb_restore_item *it, int pfd, const char *name,
			    struct stat *st)
{
	bool exists = fstatat(pfd, name, st, AT_SYMLINK_NOFOLLOW) == 0;

	if (!exists)
		memset(st, 0, sizeof(*st));
	if (exists != it->exists)
		return false;
	return !exists || (st->st_dev == it->now.st_dev && st->st_ino == it->now.st_ino &&
			   (st->st_mode & S_IFMT) == (it->now.st_mode & S_IFMT));
}

static void do_remove(struct fsb_restore_item *it, int pfd, const char *name)
{
	struct stat st;
	bool dir;

	if (!same_as_planned(it, pfd, name, &st)) {
		settle(it, FSB_RES_FAILED, "failed", false, "it changed while restoring; not removed");
		return;
	}
	dir = S_ISDIR(st.st_mode);
	if (unlinkat(pfd, name, dir ? AT_REMOVEDIR : 0) < 0) {
		if (errno == ENOTEMPTY || errno == EEXIST)
			settle(it, FSB_RES_SKIPPED, "skipped", false,
			       "a directory the cycle created, not empty now: not removed");
		else
			settle(it, FSB_RES_FAILED, "failed", false, "cannot remove it: %s",
			       strerror(errno));
		return;
	}
	settle(it, FSB_RES_OK, "removed", true, "%s%s",
	       dir ? "a directory created by the cycle" : "created by the cycle", it->note);
}

/* Clear the way for a rename: an empty directory left where the prior
 * state had something else (the cycle removed a file and made a directory). */
static int clear_dir(struct fsb_restore_item *it, int pfd, const char *name, const struct stat *st)
{
	if (!S_ISDIR(st->st_mode))
		return 0;
	if (unlinkat(pfd, name, AT_REMOVEDIR) == 0)
		return 0;
	settle(it, FSB_RES_FAILED, "failed", false, "a directory is there now%s",
	       errno == ENOTEMPTY || errno == EEXIST ? " and it is not empty: not replaced" : "");
	return -1;
}

static void set_owner_fd(struct fsb_restore_item *it, int fd, const struct fsb_prior *p)
{
	struct stat st;

	if (!p->has_owner || fstat(fd, &st) < 0 || (st.st_uid == p->uid && st.st_gid == p->gid))
		return;
	/* Only where we may: an ordinary user cannot give a file away. */
	if (fchown(fd, p->uid, p->gid) == 0)
		it->owner_set = true;
}

static void times_of(const struct fsb_prior *p, struct timespec ts[2])
{
	ts[0] = p->atime;
	ts[1] = p->mtime;
	if (!p->has_atime)
		ts[0].tv_nsec = UTIME_OMIT;
	if (!p->has_mtime)
		ts[1].tv_nsec = UTIME_OMIT;
}

/*
 * Give the restored object the prior state's xattrs: through `fd`, else
 * `path` without following it. Kept names it has beyond them are removed
 * (a new file's inherited default ACL, a name added to a directory kept in
 * place), unless the journal left some out. What could not be done goes
 * into the note. True when any was set or removed. A journal without
 * xattrs (an older core, a filesystem without them) changes none.
 */
static bool put_xattrs(struct fsb_restore_item *it, int fd, const char *path)
{
	const struct fsb_prior *p = &it->pick->rec->prior;
	struct fsb_xattr_outcome o;
	char buf[sizeof(o.failures) + 32];

	if (!p->has_xattrs)
		return false;
	fsb_xattr_apply(fd, path, p->xattrs, p->nxattrs, !p->xattrs_truncated, &o);
	if (o.failed > 0) {
		snprintf(buf, sizeof(buf), "; xattrs not restored: %s", o.failures);
		append(it, buf);
	}
	if (p->xattrs_truncated)
		append(it, "; xattrs beyond what the journal kept (64 KiB) were left as they are");
	return o.set + o.removed > 0;
}

/*
 * Owner, xattrs, mode and times of `p` onto the restored file `fd`. Owner
 * before mode: chown clears the set-id bits. xattrs after the content and
 * the owner (a write or a chown drops security.capability), before the
 * mode (an ACL sets the group bits, the mode then its mask). 0 or -errno.
 */
static int put_file_metadata(struct fsb_restore_item *it, int fd, const struct fsb_prior *p,
			     bool *xattrs)
{
	struct timespec ts[2];

	set_owner_fd(it, fd, p);
	*xattrs = put_xattrs(it, fd, NULL);
	if (p->has_mode && fchmod(fd, p->mode) < 0)
		return -errno;
	times_of(p, ts);
	return futimens(fd, ts) < 0 ? -errno : 0;
}

/*
 * A file with other names that the cycle wrote in place (a hard-linked
 * tree the pack lets be rewritten): its bytes go back into the very inode,
 * so every name of it, recorded by the cycle or not, has them again; a new
 * file renamed over the name would leave the others with the cycle's
 * bytes. The object is checked whole before the file is truncated.
 */
static void do_file_in_place(const struct ctx *c, struct fsb_restore_item *it, int pfd,
			     const char *name, const struct stat *st)
{
	const struct fsb_prior *p = &it->pick->rec->prior;
	struct stat now;
	int fd, obj = -1, rc;
	bool xattrs;

	fd = openat(pfd, name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &now) < 0 || now.st_dev != st->st_dev || now.st_ino != st->st_ino) {
		if (fd >= 0)
			close(fd);
		settle(it, FSB_RES_FAILED, "failed", false, "it changed while restoring; not touched");
		return;
	}
	obj = fsb_backup_object_open(c->o->store, p->object);
	rc = obj < 0 ? obj : fsb_backup_object_check(obj, p);
	if (rc < 0) {
		settle(it, FSB_RES_FAILED, "failed", false, "%s; nothing was written",
		       rc == -EBADMSG ? "its backup object is corrupted (its content does not "
					"match its SHA-256 name)"
			: rc == -ESTALE ? "the inode kept as its backup was changed after it was kept"
			: strerror(-rc));
		goto out;
	}
	if (ftruncate(fd, 0) < 0 || (rc = fsb_backup_object_restore(obj, p, fd)) < 0 ||
	    fsync(fd) < 0 || (rc = put_file_metadata(it, fd, p, &xattrs)) < 0) {
		rc = rc < 0 ? rc : -errno;
		settle(it, FSB_RES_FAILED, "failed", false,
		       "%s while writing it in place (its other names share it): it may hold "
		       "part of its old bytes; `fsbroker backup undo` gives back what was there",
		       strerror(-rc));
		goto out;
	}
	settle(it, FSB_RES_OK, "restored", true,
	       "content, mode, times%s%s, in place: its other names share it%s",
	       it->owner_set ? ", owner" : "", xattrs ? ", xattrs" : "", it->note);
out:
	if (obj >= 0)
		close(obj);
	close(fd);
}

static void do_file(const struct ctx *c, struct fsb_restore_item *it, int pfd,
		    const char *name)
{
	const struct fsb_prior *p = &it->pick->rec->prior;
	char tmp[64];
	struct stat st;
	int fd = -1, obj = -1, rc, tries = 0;
	const char *what;
	bool xattrs;

	if (!same_as_planned(it, pfd, name, &st)) {
		settle(it, FSB_RES_FAILED, "failed", false, "it changed while restoring; not touched");
		return;
	}
	/* Written in place while other names shared it: put back in place. */
	if (it->act == FSB_ACT_FILE && S_ISREG(st.st_mode) && st.st_nlink > 1 && p->nlink > 1 &&
	    (uint64_t)st.st_dev == p->dev && (uint64_t)st.st_ino == p->ino) {
		do_file_in_place(c, it, pfd, name, &st);
		return;
	}
	/* O_EXCL and O_NOFOLLOW: the temporary file is new, ours, and not
	 * something a link placed there points at. */
	do {
		fsb_restore_temp_name(tmp, sizeof(tmp));
		fd = openat(pfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	} while (fd < 0 && errno == EEXIST && ++tries < 100);
	if (fd < 0) {
		settle(it, FSB_RES_FAILED, "failed", false, "cannot create a file beside it: %s",
		       strerror(errno));
		return;
	}
	if (it->act == FSB_ACT_MOVED) {
		rc = fsb_backup_moved_restore(it->src_fd, p, fd);
	} else {
		obj = fsb_backup_object_open(c->o->store, p->object);
		rc = obj < 0 ? obj : fsb_backup_object_restore(obj, p, fd);
		if (obj >= 0)
			close(obj);
	}
	if (rc == -ESTALE) {
		what = it->act == FSB_ACT_MOVED
			? "the file the cycle moved changed size since; nothing was written"
			: "the inode kept as its backup was changed after it was kept; nothing was "
			  "written";
		goto fail_msg;
	}
	if (rc == -EBADMSG) {
		what = "its backup object is corrupted (its content does not match its SHA-256 "
		       "name); nothing was written";
		goto fail_msg;
	}
	if (rc < 0) {
		/* rc, not errno: close(obj) may have changed errno since. */
		what = strerror(-rc);
		goto fail_msg;
	}
	if (fsync(fd) < 0 || (rc = put_file_metadata(it, fd, p, &xattrs)) < 0)
		goto fail;
	if (close(fd) < 0) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	if (clear_dir(it, pfd, name, &st) < 0) {
		unlinkat(pfd, tmp, 0);
		return;
	}
	if (renameat(pfd, tmp, pfd, name) < 0)
		goto fail;
	fsync(pfd);
	settle(it, FSB_RES_OK, "restored", true, "content, mode, times%s%s%s",
	       it->owner_set ? ", owner" : "", xattrs ? ", xattrs" : "", it->note);
	return;

fail:
	what = strerror(errno);
fail_msg:
	if (fd >= 0)
		close(fd);
	unlinkat(pfd, tmp, 0);
	settle(it, FSB_RES_FAILED, "failed", false, "%s", what);
}

/*
 * A file whose cycle changed only its metadata: owner, xattrs, mode and
 * times put back on the very inode planned for, its content left alone.
 * The inode is pinned with O_PATH (a mode of 0 cannot stop that) and
 * changed through /proc/self/fd, never through its name again.
 */
static void do_meta(struct fsb_restore_item *it, int pfd, const char *name)
{
	const struct fsb_prior *p = &it->pick->rec->prior;
	struct timespec ts[2];
	char at[32];
	struct stat st;
	int fd, rfd = -1;
	bool xattrs = false;

	fd = openat(pfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	/* Still the file planned for (checked against the journal there). */
	if (fd < 0 || fstat(fd, &st) < 0 || st.st_dev != it->now.st_dev ||
	    st.st_ino != it->now.st_ino || !S_ISREG(st.st_mode)) {
		if (fd >= 0)
			close(fd);
		settle(it, FSB_RES_FAILED, "failed", false, "it changed while restoring; not touched");
		return;
	}
	snprintf(at, sizeof(at), "/proc/self/fd/%d", fd);
	/* Owner before mode: chown clears the set-id bits. */
	if (p->has_owner && (st.st_uid != p->uid || st.st_gid != p->gid) &&
	    fchownat(fd, "", p->uid, p->gid, AT_EMPTY_PATH) == 0)
		it->owner_set = true;
	if (p->has_xattrs) {
		/* Setting a user.* xattr takes write permission, which the
		 * mode set right after takes away again. */
		if (!(st.st_mode & S_IWUSR) || !(st.st_mode & S_IRUSR))
			chmod(at, (st.st_mode & 07777) | S_IRUSR | S_IWUSR);
		rfd = open(at, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (rfd >= 0) {
			xattrs = put_xattrs(it, rfd, NULL);
			close(rfd);
		} else {
			append(it, "; xattrs not restored: cannot open it");
		}
	}
	times_of(p, ts);
	if ((p->has_mode && chmod(at, p->mode) < 0) || utimensat(AT_FDCWD, at, ts, 0) < 0) {
		settle(it, FSB_RES_FAILED, "failed", false, "cannot set its mode and times: %s",
		       strerror(errno));
		close(fd);
		return;
	}
	close(fd);
	settle(it, FSB_RES_OK, "restored", true, "mode, times%s%s; content unchanged by the cycle%s",
	       it->owner_set ? ", owner" : "", xattrs ? ", xattrs" : "", it->note);
}

/* Symlinks and FIFOs: made under a temporary name, then renamed over. */
static void do_special(struct fsb_restore_item *it, int pfd, const char *name)
{
	const struct fsb_prior *p = &it->pick->rec->prior;
	struct timespec ts[2];
	struct stat st, st2;
	char tmp[64], at[128];
	int rc, tries = 0, saved;
	bool xattrs;

	if (!same_as_planned(it, pfd, name, &st)) {
		settle(it, FSB_RES_FAILED, "failed", false, "it changed while restoring; not touched");
		return;
	}
	do {
		fsb_restore_temp_name(tmp, sizeof(tmp));
		rc = it->act == FSB_ACT_SYMLINK ? symlinkat(p->target, pfd, tmp)
					    : mkfifoat(pfd, tmp, 0600);
	} while (rc < 0 && errno == EEXIST && ++tries < 100);
	if (rc < 0) {
		settle(it, FSB_RES_FAILED, "failed", false, "cannot create it beside: %s",
		       strerror(errno));
		return;
	}
	if (p->has_owner && fstatat(pfd, tmp, &st2, AT_SYMLINK_NOFOLLOW) == 0 &&
	    (st2.st_uid != p->uid || st2.st_gid != p->gid) &&
	    fchownat(pfd, tmp, p->uid, p->gid, AT_SYMLINK_NOFOLLOW) == 0)
		it->owner_set = true;
	/* There is no *xattrat(): the parent is named through its fd, so
	 * the walk is not repeated, and the new name is not followed. */
	snprintf(at, sizeof(at), "/proc/self/fd/%d/%s", pfd, tmp);
	xattrs = put_xattrs(it, -1, at);
	if (it->act == FSB_ACT_FIFO && p->has_mode &&
	    fchmodat(pfd, tmp, p->mode, AT_SYMLINK_NOFOLLOW) < 0)
		goto fail;
	times_of(p, ts);
	if (utimensat(pfd, tmp, ts, AT_SYMLINK_NOFOLLOW) < 0)
		goto fail;
	if (clear_dir(it, pfd, name, &st) < 0) {
		unlinkat(pfd, tmp, 0);
		return;
	}
	if (renameat(pfd, tmp, pfd, name) < 0)
		goto fail;
	fsync(pfd);
	if (it->act == FSB_ACT_SYMLINK) {
		settle(it, FSB_RES_OK, "restored", true, "symlink, target, times%s%s%s",
		       it->owner_set ? ", owner" : "", xattrs ? ", xattrs" : "", it->note);
	} else {
		settle(it, FSB_RES_OK, "restored", true, "fifo, mode, times%s%s%s",
		       it->owner_set ? ", owner" : "", xattrs ? ", xattrs" : "", it->note);
	}
	return;

fail:
	saved = errno;
	unlinkat(pfd, tmp, 0);
	settle(it, FSB_RES_FAILED, "failed", false, "%s", strerror(saved));
}

/* A directory: made (or kept) now; its mode and times come last, once
 * everything inside it is back (see finish_dir). */
static void do_dir(struct fsb_restore_item *it, int pfd, const char *name)
{
	const struct fsb_prior *p = &it->pick->rec->prior;
	struct stat st;
	int fd;

	if (!same_as_planned(it, pfd, name, &st)) {
		settle(it, FSB_RES_FAILED, "failed", false, "it changed while restoring; not touched");
		return;
	}
	if (it->exists && !S_ISDIR(st.st_mode) && unlinkat(pfd, name, 0) < 0) {
		settle(it, FSB_RES_FAILED, "failed", false, "cannot remove the %s there now: %s",
		       fsb_file_type_name(st.st_mode), strerror(errno));
		return;
	}
	if ((!it->exists || !S_ISDIR(st.st_mode)) && mkdirat(pfd, name, 0700) < 0) {
		settle(it, FSB_RES_FAILED, "failed", false, "cannot make the directory: %s",
		       strerror(errno));
		return;
	}
	fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		settle(it, FSB_RES_FAILED, "failed", false, "cannot open the directory: %s",
		       strerror(errno));
		return;
	}
	set_owner_fd(it, fd, p);
	close(fd);
}

static void finish_dir(struct fsb_restore_item *it, int pfd, const char *name)
{
	const struct fsb_prior *p = &it->pick->rec->prior;
	struct timespec ts[2];
	struct stat st;
	bool xattrs;
	int fd;

	fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		settle(it, FSB_RES_FAILED, "failed", false, "cannot open the directory: %s",
		       strerror(errno));
		return;
	}
	/* Setting a user.* xattr takes write permission; the mode set
	 * right after takes it away again when the prior state had none. */
	if (p->has_xattrs && p->has_mode && fstat(fd, &st) == 0 && !(st.st_mode & S_IWUSR))
		fchmod(fd, (st.st_mode & 07777) | S_IWUSR);
	/* Before the mode: a default or access ACL set here, the mode then
	 * sets the access ACL's mask. */
	xattrs = put_xattrs(it, fd, NULL);
	times_of(p, ts);
	if ((p->has_mode && fchmod(fd, p->mode) < 0) || futimens(fd, ts) < 0) {
		settle(it, FSB_RES_FAILED, "failed", false, "cannot set its mode and times: %s",
		       strerror(errno));
		close(fd);
		return;
	}
	close(fd);
	settle(it, FSB_RES_OK, "restored", true, "directory, mode, times%s%s%s",
	       it->owner_set ? ", owner" : "", xattrs ? ", xattrs" : "", it->note);
}

static void execute(const struct ctx *c, struct fsb_restore_item *it, bool finish)
{
	const char *name;
	int pfd = open_parent(c, it->path, &name);

	if (pfd < 0) {
		settle(it, FSB_RES_FAILED, "failed", false, "%s", walk_error(pfd));
		return;
	}
	if (finish)
		finish_dir(it, pfd, name);
	else if (it->act == FSB_ACT_REMOVE)
		do_remove(it, pfd, name);
	else if (it->act == FSB_ACT_FILE || it->act == FSB_ACT_MOVED)
		do_file(c, it, pfd, name);
	else if (it->act == FSB_ACT_META)
		do_meta(it, pfd, name);
	else if (it->act == FSB_ACT_DIR)
		do_dir(it, pfd, name);
	else
		do_special(it, pfd, name);
	close(pfd);
}

/*
 * A directory the restore changes names in that no item of it restores:
 * its times before the restore touched it, put back at the end, so that a
 * restore stamps no parent with its own time (a file's content comes back
 * through a new name renamed over the old one).
 */
struct stamped {
	const char *child;	/* an item's path in it: reached as its parent */
	dev_t dev;
	ino_t ino;
	struct timespec times[2];
};

/* Note the parent of `it` (before it is acted on), once. */
/* The first `len` bytes of a path against a whole one, for bsearch. */
struct prefix {
	const char *p;
	size_t len;
};

static int by_prefix(const void *key, const void *elem)
{
	const struct prefix *k = key;
	const char *e = *(const char *const *)elem;
	int d = strncmp(k->p, e, k->len);

	return d != 0 ? d : e[k->len] != '\0' ? -1 : 0;
}

static int by_string(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The paths of the directories the restore puts back, sorted. NULL when
 * there is no memory: then every parent is noted. */
static const char **dir_items(const struct fsb_restore_item *items, size_t n, size_t *nd)
{
	const char **v = malloc((n + 1) * sizeof(*v));

	*nd = 0;
	if (v == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (items[i].act == FSB_ACT_DIR)
			v[(*nd)++] = items[i].path;
	qsort(v, *nd, sizeof(*v), by_string);
	return v;
}

static void note_parent(const struct ctx *c, const char **dirs, size_t ndirs,
			const struct fsb_restore_item *it,
			struct stamped *v, size_t *nv)
{
	const struct prefix parent = { it->path,
				       (size_t)(strrchr(it->path, '/') - it->path) };
	const char *name;
	struct stat st;
	int pfd;

	/* Restored as an item: finish_dir sets its times. */
	if (dirs != NULL && bsearch(&parent, dirs, ndirs, sizeof(*dirs), by_prefix) != NULL)
		return;
	if ((pfd = open_parent(c, it->path, &name)) < 0)
		return;
	if (fstat(pfd, &st) == 0) {
		bool seen = false;

		for (size_t i = 0; i < *nv && !seen; i++)
			seen = v[i].dev == st.st_dev && v[i].ino == st.st_ino;
		if (!seen) {
			v[*nv] = (struct stamped){ .child = it->path, .dev = st.st_dev,
						   .ino = st.st_ino,
						   .times = { st.st_atim, st.st_mtim } };
			(*nv)++;
		}
	}
	close(pfd);
}

/* Put back the times of the directories note_parent saw, when each is
 * still the directory it was. */
static void unstamp_parents(const struct ctx *c, const struct stamped *v, size_t nv)
{
	for (size_t i = nv; i-- > 0;) {
		const char *name;
		struct stat st;
		int pfd = open_parent(c, v[i].child, &name);

		if (pfd < 0)
			continue;
		if (fstat(pfd, &st) == 0 && st.st_dev == v[i].dev && st.st_ino == v[i].ino)
			futimens(pfd, v[i].times);
		close(pfd);
	}
}

/* Removals deepest first, everything else parents first. */
static int cmp_exec(const void *a, const void *b)
{
	const struct fsb_restore_item *x = a, *y = b;
	int cx = x->act == FSB_ACT_REMOVE, cy = y->act == FSB_ACT_REMOVE;

	if (cx != cy)
		return cy - cx;
	if (x->depth != y->depth)
		return cx ? y->depth - x->depth : x->depth - y->depth;
	return strcmp(x->path, y->path);
}

/* The PATH argument as the journal spells paths: absolute, without "."
 * or ".." components, and through the real directory when it exists. */
char *fsb_restore_canonical_path(const char *arg)
{
	char joined[PATH_MAX * 2], cwd[PATH_MAX], out[PATH_MAX], real[PATH_MAX];
	char *last;

	if (arg[0] != '/' && getcwd(cwd, sizeof(cwd)) != NULL)
		snprintf(joined, sizeof(joined), "%s/%s", cwd, arg);
	else
		snprintf(joined, sizeof(joined), "%s", arg);
	if (fsb_path_lexical(joined, out) < 0)
		return NULL;
	/* The journal holds real paths: /tmp/x named through a symlinked
	 * directory is still /private/tmp/x there. The last component is
	 * left alone, as it may be a symlink the cycle touched. */
	last = strrchr(out, '/');
	if (last != out) {
		*last = '\0';
		if (realpath(out, real) != NULL) {
			snprintf(joined, sizeof(joined), "%s/%s", strcmp(real, "/") ? real : "",
				 last + 1);
			return strdup(joined);
		}
		*last = '/';
	}
	return strdup(out);
}

int fsb_restore_canonical_paths(char *const *paths, int n, char ***args, bool **used)
{
	*args = NULL;
	*used = NULL;
	if (n == 0)
		return 0;
	*args = calloc((size_t)n, sizeof(**args));
	*used = calloc((size_t)n, sizeof(**used));
	if (*args == NULL || *used == NULL)
		return -ENOMEM;
	for (int i = 0; i < n; i++)
		if (((*args)[i] = fsb_restore_canonical_path(paths[i])) == NULL)
			return -ENOMEM;
	return 0;
}

bool fsb_restore_path_matches(const char *arg, const struct fsb_journal_rec *r)
{
	size_t n = strlen(arg);

	if (strcmp(arg, "/") == 0 || strcmp(r->path, arg) == 0)
		return true;
	return strncmp(r->resolved, arg, n) == 0 && (r->resolved[n] == '\0' || r->resolved[n] == '/');
}

/* ---- keeping a way back ------------------------------------------------ */

/*
 * Before a restore changes anything, the state and content of every path it
 * is about to change go into the session's restore_backup store, so that
 * `fsbroker backup undo` can put them back. When that copy cannot be made
 * (a full disk, another restore holding the store), the restore changes
 * nothing: it fails closed, unless --no-undo says to go on without a way
 * back. Returns 0 with *out set (NULL when nothing is going to change), or
 * the copy's -errno with r->undo_err saying why.
 */
static int keep_undo(const struct ctx *c, struct fsb_restore *r,
		     struct fsb_undo **out)
{
	struct fsb_undo *u = NULL;
	bool any = false;
	int rc;

	*out = NULL;
	for (size_t i = 0; i < r->n && !any; i++)
		any = r->items[i].res == FSB_RES_PENDING;
	if (!any)
		return 0;
	rc = fsb_undo_open(c->o->state, c->o->session, &u, r->undo_err, sizeof(r->undo_err));
	for (size_t i = 0; rc == 0 && i < r->n; i++) {
		if (c->o->progress != NULL)
			c->o->progress(c->o->progress_arg, true, i, r->n);
		if (r->items[i].res == FSB_RES_PENDING)
			rc = fsb_undo_record(u, c->root, r->items[i].path,
					     c->o->redo ? "redo" : c->o->undo ? "undo" : "restore",
					     r->undo_err,
					     sizeof(r->undo_err));
	}
	/* Durable before the first change, as the core's journal is. */
	if (rc == 0)
		rc = fsb_undo_sync(u, r->undo_err, sizeof(r->undo_err));
	if (rc == 0) {
		*out = u;
		return 0;
	}
	if (u != NULL)
		fsb_undo_abort(u);
	return rc;
}

/* Seal the copy keep_undo made, now that the paths are as the restore left
 * them: those are its end states, which an undo checks. */
static void seal_undo(const struct ctx *c, unsigned cycle, struct fsb_undo *u,
		      struct fsb_restore *r)
{
	char msg[512];
	int n;

	if (c->o->redo)
		snprintf(msg, sizeof(msg), "redo of cycle %u", cycle);
	else if (c->o->undo)
		snprintf(msg, sizeof(msg), "undo of cycle %u", cycle);
	else if (c->o->tool_call != NULL)
		snprintf(msg, sizeof(msg), "restore --tool-call %s of cycle %u", c->o->tool_call,
			 cycle);
	else
		snprintf(msg, sizeof(msg), "restore of cycle %u", cycle);
	n = fsb_undo_seal(u, msg, r->undo_err, sizeof(r->undo_err));
	r->undo_cycle = n > 0 ? n : -1;
}

int fsb_restore_select(const struct fsb_restore_opts *o, const struct fsb_cycle *cy,
		       struct fsb_restore *r)
{
	struct fsb_restore_item *items;
	size_t n = 0, extra = 0;

	if (fsb_cycle_pick(cy, o->tool_call, &r->picks) < 0)
		return -ENOMEM;
	if (o->tool_call != NULL && r->picks.n == 0)
		return -ENOENT;
	r->nargs = o->npaths;
	if (fsb_restore_canonical_paths(o->paths, o->npaths, &r->args, &r->arg_used) < 0)
		return -ENOMEM;
	items = r->items = calloc(r->picks.n + (size_t)o->npaths + 1, sizeof(*items));
	if (items == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < r->picks.n; i++) {
		const struct fsb_pick *pk = &r->picks.v[i];
		bool want = o->npaths == 0;

		for (int a = 0; a < o->npaths; a++) {
			for (size_t k = 0; k < pk->nall; k++) {
				if (fsb_restore_path_matches(r->args[a], pk->all[k])) {
					want = r->arg_used[a] = true;
					break;
				}
			}
		}
		if (!want)
			continue;
		items[n].pick = pk;
		items[n].path = pk->rec->resolved;
		items[n].depth = depth_of(items[n].path);
		items[n].src_fd = -1;
		n++;
	}
	for (int a = 0; a < o->npaths; a++) {
		if (r->arg_used[a])
			continue;
		items[n + extra].path = r->args[a];
		items[n + extra].act = FSB_ACT_OTHER;
		items[n + extra].src_fd = -1;
		settle(&items[n + extra], FSB_RES_SKIPPED, "skipped", false, "%s did not touch it",
		       o->tool_call != NULL ? "that tool call" : "the cycle");
		extra++;
	}
	r->n = n;
	r->extra = extra;
	return 0;
}

/* ---- the two steps ------------------------------------------------------ */

int fsb_restore_plan(const struct fsb_restore_opts *o, const struct fsb_cycle *cy,
		     struct fsb_restore *r)
{
	struct fsb_undo_chain *chain = NULL;
	struct ctx c0 = { .o = o, .root = -1, .chain = &chain }, *c = &c0;
	struct fsb_restore_item *items;
	struct rlimit nofile;
	size_t n = 0;
	int err;

	memset(r, 0, sizeof(*r));
	if (cy->state == FSB_CYCLE_OPEN && !o->force)
		return -EBUSY;
	/* The walks start at a descriptor of "/": no path string is trusted
	 * between the plan's look at a path and the change. */
	c0.root = r->root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (r->root_fd < 0)
		return -errno;
	r->root_open = true;
	/* Each file the cycle moved is held open from planning to its copy
	 * (see open_moved): as many descriptors as the system lets us. */
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur = nofile.rlim_max;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
	if ((err = fsb_restore_select(o, cy, r)) < 0)
		goto fail;
	items = r->items;
	n = r->n;
	/* Before sorting: the action decides the order. */
	for (size_t i = 0; i < n; i++)
		choose_action(&items[i]);

	qsort(items, n, sizeof(*items), cmp_exec);
	for (size_t i = 0; i < n; i++) {
		plan_item(c, cy, &items[i]);
		/* A parent that is missing now must come back first, from a
		 * directory this restore recreates (parents are planned first). */
		if (items[i].res == FSB_RES_PENDING && items[i].parent_missing &&
		    items[i].act != FSB_ACT_REMOVE) {
			bool ok = false;
			size_t plen = (size_t)(strrchr(items[i].path, '/') - items[i].path);

			for (size_t j = 0; j < i && !ok; j++)
				ok = items[j].act == FSB_ACT_DIR && items[j].res == FSB_RES_PENDING &&
				     strlen(items[j].path) == plen &&
				     strncmp(items[j].path, items[i].path, plen) == 0;
			if (!ok && items[i].parent_err == -ELOOP)
				settle(&items[i], FSB_RES_SKIPPED, "skipped", false, "%s",
				       walk_error(-ELOOP));
			else if (!ok)
				settle(&items[i], FSB_RES_SKIPPED, "skipped", false,
				       "its parent directory does not exist (or is not a directory "
				       "now), and the cycle did not remove it");
		}
		if (items[i].res == FSB_RES_PENDING && items[i].pick->later_by_others)
			append(&items[i], "; later tool calls changed it too, and that is undone as "
			       "well");
	}
	fsb_undo_chain_free(chain);
	return 0;

fail:
	fsb_undo_chain_free(chain);
	fsb_restore_free(r);
	return err;
}

int fsb_restore_perform(const struct fsb_restore_opts *o, const struct fsb_cycle *cy,
			struct fsb_restore *r)
{
	const struct ctx c0 = { .o = o, .root = r->root_fd }, *c = &c0;
	struct fsb_restore_item *items = r->items;
	struct fsb_undo *undo = NULL;
	struct stamped *stamped = NULL;
	size_t nstamped = 0, n = r->n, ndirs = 0;
	const char **dirs = NULL, *workspace = o->workspace;
	char ws[PATH_MAX];

	if (!o->dry_run && !o->no_undo && (r->undo_rc = keep_undo(c, r, &undo)) < 0)
		return -ECANCELED;
	if (!o->dry_run) {
		stamped = calloc(n + 1, sizeof(*stamped));
		dirs = dir_items(items, n, &ndirs);
	}
	for (size_t i = 0; i < n; i++) {
		struct fsb_restore_item *it = &items[i];

		if (o->progress != NULL)
			o->progress(o->progress_arg, false, i, n);
		if (it->res != FSB_RES_PENDING)
			continue;
		if (o->dry_run) {
			const char *what = it->act == FSB_ACT_REMOVE
				? (S_ISDIR(it->now.st_mode) ? "a directory created by the cycle; "
				   "only once it is empty" : "created by the cycle")
				: it->act == FSB_ACT_FILE || it->act == FSB_ACT_MOVED
				? "content, mode, times"
				: it->act == FSB_ACT_META ? "mode, times; content unchanged by the cycle"
				: it->act == FSB_ACT_DIR ? "directory, mode, times"
				: it->act == FSB_ACT_SYMLINK ? "symlink, target, times"
				: "fifo, mode, times";
			settle(it, FSB_RES_OK,
			       it->act == FSB_ACT_REMOVE ? "would remove" : "would restore", true,
			       "%s%s", what, it->note);
			continue;
		}
		if (stamped != NULL)
			note_parent(c, dirs, ndirs, it, stamped, &nstamped);
		execute(c, it, false);
	}
	/* Directories get their mode and times once what is inside is back;
	 * the others the restore changed names in, the times they had. */
	/* The other names of a hard-linked file are looked for in the
	 * session's workspace. */
	if (!o->dry_run && workspace == NULL && o->state != NULL && o->session != NULL &&
	    fsb_session_workspace(o->state, o->session, ws, sizeof(ws)) == 0)
		workspace = ws;
	if (!o->dry_run)
		fsb_restore_rejoin_links(c->root, workspace, items, n);
	for (size_t i = n; i-- > 0;)
		if (!o->dry_run && items[i].act == FSB_ACT_DIR && items[i].res == FSB_RES_PENDING)
			execute(c, &items[i], true);
	unstamp_parents(c, stamped, nstamped);
	free(stamped);
	free(dirs);
	if (o->progress != NULL)
		o->progress(o->progress_arg, false, n, n);
	if (undo != NULL)
		seal_undo(c, cy->number, undo, r);
	return 0;
}

void fsb_restore_free(struct fsb_restore *r)
{
	for (size_t i = 0; r->items != NULL && i < r->n; i++)
		if (r->items[i].src_fd >= 0)
			close(r->items[i].src_fd);
	for (int a = 0; r->args != NULL && a < r->nargs; a++)
		free(r->args[a]);
	free(r->args);
	free(r->arg_used);
	free(r->items);
	fsb_picks_free(&r->picks);
	if (r->root_open)
		close(r->root_fd);
	memset(r, 0, sizeof(*r));
}
