/*
 * backup.c — the backup store of one session (see backup.h and
 * docs/backup-store.md): cycles, their journal of prior states, sealing with
 * the end state of every touched path, and recovery of a cycle a crash left
 * open; which journal lines are synced before their change, and one
 * fdatasync shared by the threads that wait at once (group commit); in
 * batched mode, no sync on a call's path: one syncfs by the store's own
 * thread at most FSB_STORE_BATCH_MS after a write, and at a seal and close.
 * Objects are written by backup_object.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <search.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "backup.h"
#include "op.h"
#include "backup_object.h"
#include "object_pack.h"
#include "journal.h"
#include "proto_json.h"
#include "xattr.h"

#define RECOVERED_MSG "recovered after an unclean stop"

/* What the open cycle knows of a file it backed up, by (dev, ino). */
struct inode_ent {
	dev_t dev;
	ino_t ino;
	bool dirty;		/* granted for writing since the copy */
	bool has_object;
	char hex[FSB_SHA256_HEX_LEN + 1];
	/* The file as it was copied: a file that changed since by any other
	 * way (or an inode number reused by a new file) is copied again. */
	struct timespec ctime;
	off_t size;
};

/* A (path, tool call) pair with a line in the open cycle: the first line of
 * the pair holds every state a restore of the path (whole cycle, or that
 * tool call) reads, so a later line of the pair needs no sync of its own. */
struct recorded {
	const char *path;	/* one of cycle.paths */
	char *tool_call;
	/* Where the journal must be durable up to before a later change of
	 * the pair: the end of its first line when that line had to be
	 * durable (an existing path), 0 when it did not (a created path). */
	off_t durable_end;
	/* The first line kept only metadata (chmod, utimes, ...): the first
	 * later line of the pair that keeps content becomes the one that
	 * must be durable, and a write grant is copied after all. */
	bool metadata_only;
};

struct cycle {
	unsigned n;		/* 0: none open */
	int dirfd;		/* cycles/<n> */
	int journal;		/* -1 for a cycle being recovered */
	off_t jsize;		/* the journal's length: where a failed line is cut off */
	off_t need_sync_to;	/* end of the last line that must be durable */
	bool broken;		/* a failed line could not be cut off: no more lines */
	uint64_t seq;
	struct timespec opened;
	/* The resolved paths touched, in first-touch order, and a tree over
	 * the same strings to find them. */
	char **paths;
	size_t npaths, pathcap;
	void *path_tree;
	void *recorded;		/* tree of struct recorded */
	void *inodes;		/* tree of struct inode_ent */
	/* Paths a file moved to (one of `paths`), whatever the tool call:
	 * its bytes are in no object, so the next line of such a path that
	 * would change them copies them, even a grant's repeat. */
	void *moved_in;
};

/*
 * Group commit of the journal (docs/backup-store.md, "When a line is
 * durable"). Lines are appended under the caller's store lock; making them
 * durable need not be: a thread that needs its line on disk waits here,
 * the core without its store lock. When no fdatasync runs, it becomes the
 * leader and syncs everything appended so far, mutex released; the threads
 * that came meanwhile wait, and one fdatasync after it covers them all.
 * The mutex is taken after the store lock, never the other way round; the
 * leader needs no lock to finish, so a waiter that holds the store lock (a
 * seal, a batch's sync) cannot block it.
 */
struct journal_sync {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned cycle;		/* the cycle of `fd`; 0 when none is open */
	int fd;			/* its journal, -1 */
	off_t written;		/* bytes appended to it */
	off_t synced;		/* of those, known to be durable */
	bool syncing;		/* a leader's fdatasync (or a syncfs) is running */
	int failed;		/* -errno of a failed fdatasync, else 0: what
				 * was written since `synced` may be lost */
	/* Batched mode (fsb_store_set_durability): written since the last
	 * syncfs began, lines or objects; the flusher thread waits on `tick`
	 * for that, then for the interval, and syncs. */
	bool pending;
	bool stop;		/* the flusher is to end (fsb_store_close) */
	bool flusher;		/* it was started */
	pthread_t thread;
	pthread_cond_t tick;
};

struct fsb_store {
	char *dir;		/* …/modify_backup */
	int rootfd;		/* …/modify_backup, flock(LOCK_SH) held while open */
	int objfd, cycfd;	/* cycfd's flock(LOCK_EX): the store's short admin lock */
	bool tmpfile_ok;	/* O_TMPFILE works in objects/ (until it does not) */
	bool batched;		/* backup.durability = "batched" (atomic: read
				 * by waiters without the caller's lock) */
	bool ever_batched;	/* since open: then a seal and close syncfs */
	unsigned long grants;	/* fsb_store_note_write_grant calls so far */
	struct cycle c;
	struct journal_sync js;
};

static int nospace(int err)
{
	return err == -EDQUOT ? -ENOSPC : err;
}

static uint64_t sync_counts[FSB_SYNC_KINDS];

void fsb_sync_count(enum fsb_sync_kind k)
{
	__atomic_add_fetch(&sync_counts[k], 1, __ATOMIC_RELAXED);
}

uint64_t fsb_sync_total(enum fsb_sync_kind k)
{
	return __atomic_load_n(&sync_counts[k], __ATOMIC_RELAXED);
}

const char *fsb_sync_kind_name(enum fsb_sync_kind k)
{
	static const char *const names[FSB_SYNC_KINDS] = {
		"journal", "object", "directory", "seal", "batch",
	};

	return k < FSB_SYNC_KINDS ? names[k] : "?";
}

/* fsync(2) of `fd`, counted as `k`. 0 or -errno. */
static int fsync_counted(int fd, enum fsb_sync_kind k)
{
	fsb_sync_count(k);
	return fsync(fd) < 0 ? -errno : 0;
}

static bool is_batched(const struct fsb_store *s)
{
	return __atomic_load_n(&s->batched, __ATOMIC_ACQUIRE);
}

static int cmp_path(const void *a, const void *b)
{
	return strcmp(a, b);
}

static int cmp_inode(const void *a, const void *b)
{
	const struct inode_ent *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return 0;
}

static void no_free(void *p)
{
	(void)p;
}

static int cmp_recorded(const void *a, const void *b)
{
	const struct recorded *x = a, *y = b;
	int d = strcmp(x->path, y->path);

	return d != 0 ? d : strcmp(x->tool_call, y->tool_call);
}

static void free_recorded(void *p)
{
	struct recorded *e = p;

	free(e->tool_call);
	free(e);
}

/* Point the group commit at the open cycle's journal, or at none. A
 * leader's fdatasync in flight on the old one ends first: its fd is about
 * to be closed. */
static void journal_attach(struct fsb_store *s)
{
	struct journal_sync *js = &s->js;

	pthread_mutex_lock(&js->mu);
	while (js->syncing)
		pthread_cond_wait(&js->cv, &js->mu);
	js->cycle = s->c.journal >= 0 ? s->c.n : 0;
	js->fd = s->c.journal;
	js->written = js->synced = s->c.jsize;
	js->failed = 0;
	/* Waiters of the old cycle find it gone: it was sealed, its journal
	 * synced first. */
	pthread_cond_broadcast(&js->cv);
	pthread_mutex_unlock(&js->mu);
}

static void cycle_reset(struct fsb_store *s)
{
	struct cycle *c = &s->c;
	int journal = c->journal;

	/* Detached first: no fdatasync may run on a closed fd. */
	c->journal = -1;
	journal_attach(s);
	if (journal >= 0)
		close(journal);
	if (c->dirfd >= 0)
		close(c->dirfd);
	tdestroy(c->recorded, free_recorded);
	tdestroy(c->path_tree, no_free);
	for (size_t i = 0; i < c->npaths; i++)
		free(c->paths[i]);
	free(c->paths);
	tdestroy(c->inodes, free);
	tdestroy(c->moved_in, no_free);
	memset(c, 0, sizeof(*c));
	c->dirfd = -1;
	c->journal = -1;
}

static int touch_path(struct cycle *c, const char *path, const char **stored);

/* `path` receives a file that moved (see cycle.moved_in). */
static int note_moved_in(struct cycle *c, const char *path)
{
	const char *stored;
	int rc = touch_path(c, path, &stored);

	if (rc == 0 && tsearch(stored, &c->moved_in, cmp_path) == NULL)
		rc = -ENOMEM;
	return rc;
}

/* Remember a touched path (once); *stored is the cycle's copy of it. */
static int touch_path(struct cycle *c, const char *path, const char **stored)
{
	void **node;
	char *copy;

	node = tfind(path, &c->path_tree, cmp_path);
	if (node != NULL) {
		*stored = *node;
		return 0;
	}
	if (c->npaths == c->pathcap) {
		size_t cap = c->pathcap ? 2 * c->pathcap : 16;
		char **p = realloc(c->paths, cap * sizeof(*p));

		if (p == NULL)
			return -ENOMEM;
		c->paths = p;
		c->pathcap = cap;
	}
	copy = strdup(path);
	if (copy == NULL)
		return -ENOMEM;
	node = tsearch(copy, &c->path_tree, cmp_path);
	if (node == NULL) {
		free(copy);
		return -ENOMEM;
	}
	c->paths[c->npaths++] = copy;
	*stored = copy;
	return 0;
}

/* The first line of (path, tool call) in the cycle, or NULL. */
static struct recorded *recorded_find(struct cycle *c, const char *path, const char *tool_call)
{
	struct recorded key = { .path = path, .tool_call = (char *)tool_call };
	void **node = tfind(&key, &c->recorded, cmp_recorded);

	return node != NULL ? *node : NULL;
}

/* Remember the first line of (path, tool call). Without memory for it a
 * later line of the pair is simply treated as a first one: synced, and
 * copied when it needs a copy. */
static void recorded_add(struct cycle *c, const char *stored_path, const char *tool_call,
			 off_t durable_end, bool metadata_only)
{
	struct recorded *e = calloc(1, sizeof(*e));
	void **node;

	if (e == NULL || (e->tool_call = strdup(tool_call)) == NULL) {
		free(e);
		return;
	}
	e->path = stored_path;
	e->durable_end = durable_end;
	e->metadata_only = metadata_only;
	node = tsearch(e, &c->recorded, cmp_recorded);
	if (node == NULL || *node != e)
		free_recorded(e);
}

static struct inode_ent *inode_get(struct cycle *c, dev_t dev, ino_t ino, bool create)
{
	struct inode_ent key = { .dev = dev, .ino = ino }, *e;
	void **node;

	node = tfind(&key, &c->inodes, cmp_inode);
	if (node != NULL)
		return *node;
	if (!create)
		return NULL;
	e = calloc(1, sizeof(*e));
	if (e == NULL)
		return NULL;
	e->dev = dev;
	e->ino = ino;
	node = tsearch(e, &c->inodes, cmp_inode);
	if (node == NULL) {
		free(e);
		return NULL;
	}
	return e;
}

static struct timespec now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts;
}

/*
 * The prior state's xattrs (docs/backup-store.md): a regular file's are
 * read from the fd being backed up, the very inode whose content is taken.
 * Anything else is read by its path, without following a symlink there: a
 * rename racing with it can pair the path with another file's xattrs, as
 * it can its mode, but never with another file's content. Nothing is
 * recorded where the filesystem has no xattrs or they cannot be read:
 * restore then leaves them as they are. -ENOMEM, or 0.
 */
static int read_xattrs(const struct fsb_backup_req *r, struct fsb_prior *p)
{
	const struct stat *st = r->prior;
	struct stat fst;
	int fd = -1, rc;

	if (S_ISREG(st->st_mode) && r->fd >= 0 && fstat(r->fd, &fst) == 0 &&
	    fst.st_dev == st->st_dev && fst.st_ino == st->st_ino)
		fd = r->fd;
	rc = fsb_xattr_read(fd, r->resolved, FSB_XATTR_CAP, &p->xattrs, &p->nxattrs,
			    &p->xattrs_truncated);
	if (rc < 0) {
		p->xattrs = NULL;
		p->nxattrs = 0;
		p->xattrs_truncated = false;
		return rc == -ENOMEM ? rc : 0;
	}
	p->has_xattrs = true;
	return 0;
}

/* The prior state of `r->prior` and what was taken of it (`res`); a
 * symlink's target goes into `target`. -ENOMEM, or 0. */
static int prior_of(const struct fsb_backup_req *r, const struct fsb_backup_result *res,
		    struct fsb_prior *p, char target[PATH_MAX])
{
	const struct stat *st = r->prior;

	p->exists = true;
	snprintf(p->type, sizeof(p->type), "%s", fsb_file_type_name(st->st_mode));
	p->dev = st->st_dev;
	p->ino = st->st_ino;
	p->nlink = st->st_nlink;
	p->has_mode = p->has_owner = p->has_size = p->has_atime = p->has_mtime = true;
	p->mode = st->st_mode & 07777;
	p->uid = st->st_uid;
	p->gid = st->st_gid;
	p->size = (uint64_t)st->st_size;
	p->atime = st->st_atim;
	p->mtime = st->st_mtim;
	snprintf(p->object, sizeof(p->object), "%s", res->object);
	snprintf(p->skipped, sizeof(p->skipped), "%s", res->skipped ? res->skipped : "");
	p->metadata_only = res->metadata_only;
	p->moved = res->moved;
	p->kept = res->kept;
	if (S_ISLNK(st->st_mode)) {
		ssize_t n;

		if (r->link_target != NULL) {
			snprintf(target, PATH_MAX, "%s", r->link_target);
			p->target = target;
		} else if ((n = readlink(r->resolved, target, PATH_MAX - 1)) >= 0) {
			target[n] = '\0';
			p->target = target;
		}
	}
	return read_xattrs(r, p);
}

/* The line of request `r`, encoded by journal.c. The record only lends
 * the request's strings to the encoder, which reads them. */
static cJSON *journal_line(const struct cycle *c, const struct fsb_backup_req *r,
			   const struct fsb_backup_result *res)
{
	struct timespec ts = now();
	struct fsb_journal_rec rec;
	char stamp[40], target[PATH_MAX];
	cJSON *o = NULL;

	memset(&rec, 0, sizeof(rec));
	fsb_journal_stamp(&ts, stamp);
	rec.seq = c->seq + 1;
	rec.time = stamp;
	rec.tool_call = (char *)(r->tool_call ? r->tool_call : "");
	rec.trace = (char *)(r->trace ? r->trace : "");
	rec.op = (char *)r->op;
	rec.flags = r->flags;
	rec.path = (char *)r->path;
	rec.resolved = (char *)r->resolved;
	rec.moved_to = (char *)r->moved_to;
	/* The line is written before the change, for a request the policy
	 * allowed: `ok` says the backup was taken (or its skip recorded).
	 * A failure to write it stops the change; the change may still fail
	 * after it (the grant's own open or truncate). */
	rec.ok = true;
	if (r->prior != NULL && prior_of(r, res, &rec.prior, target) < 0)
		goto out;
	if (r->made != NULL) {
		rec.has_made = true;
		snprintf(rec.made_type, sizeof(rec.made_type), "%s",
			 fsb_file_type_name(r->made->st_mode));
		rec.made_dev = r->made->st_dev;
		rec.made_ino = r->made->st_ino;
	}
	o = fsb_journal_encode(&rec);
out:
	fsb_xattr_free(rec.prior.xattrs, rec.prior.nxattrs);
	return o;
}

/*
 * Append one line with one write(2); whether and when it is made durable is
 * up to the caller (fsb_store_record, journal_wait). On a failed write the
 * journal is cut back to where it was, so the line does not exist. When
 * part of a line was written and cannot be cut back, the journal is broken:
 * the next O_APPEND line would join the partial one and a reader would
 * skip both, so the cycle takes no more lines (fsb_store_record fails with
 * -EIO until it is sealed).
 */
static int journal_append(struct fsb_store *s, cJSON *line)
{
	struct cycle *c = &s->c;
	char *json = fsb_json_print(line, false);
	size_t len;
	ssize_t n;
	int err = 0;

	if (json == NULL)
		return -ENOMEM;
	len = strlen(json);
	json[len] = '\n';	/* cJSON's buffer holds the NUL we overwrite */
	do
		n = write(c->journal, json, len + 1);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		err = -errno;
	else if ((size_t)n != len + 1)
		err = -ENOSPC;	/* a short write on a regular file: out of room */
	if (err == 0) {
		c->jsize += (off_t)(len + 1);
		pthread_mutex_lock(&s->js.mu);
		s->js.written = c->jsize;
		pthread_mutex_unlock(&s->js.mu);
	} else if (n > 0 && ftruncate(c->journal, c->jsize) < 0) {
		c->broken = true;
	}
	cJSON_free(json);
	return nospace(err);
}

/*
 * Wait until the journal of cycle `cycle` is durable up to byte `end` (0:
 * nothing to wait for), syncing it when no other thread does (see struct
 * journal_sync). Needs no lock of the caller's; may be called with it held.
 * 0, or the -errno of a failed fdatasync (-ENOSPC for a full quota): then
 * the lines written since the last good one may be lost, and the cycle
 * takes no more lines until it is sealed.
 */
static int journal_wait(struct fsb_store *s, unsigned cycle, off_t end)
{
	struct journal_sync *js = &s->js;
	int rc;

	if (end <= 0)
		return 0;
	pthread_mutex_lock(&js->mu);
	/* Batched: the line was written, the flusher makes it durable; only
	 * a sync that already failed stops the change. */
	if (is_batched(s)) {
		rc = js->failed;
		pthread_mutex_unlock(&js->mu);
		return rc;
	}
	for (;;) {
		/* Sealed meanwhile: the seal synced the journal first. */
		if (js->cycle != cycle || js->synced >= end) {
			rc = 0;
			break;
		}
		if (js->failed != 0) {
			rc = js->failed;
			break;
		}
		if (js->syncing) {
			pthread_cond_wait(&js->cv, &js->mu);
			continue;
		}
		/* Leader: one fdatasync for everything written so far. */
		off_t upto = js->written;
		int fd = js->fd;

		js->syncing = true;
		pthread_mutex_unlock(&js->mu);
		fsb_sync_count(FSB_SYNC_JOURNAL);
		rc = fdatasync(fd) < 0 ? nospace(-errno) : 0;
		pthread_mutex_lock(&js->mu);
		js->syncing = false;
		if (rc == 0 && upto > js->synced)
			js->synced = upto;
		else if (rc < 0)
			js->failed = rc;
		pthread_cond_broadcast(&js->cv);
	}
	pthread_mutex_unlock(&js->mu);
	return rc;
}

/*
 * Every line of the open cycle durable, lazy ones included: before it is
 * sealed (the caller's store lock held, so nothing is appended meanwhile).
 * Tried even after a failed fdatasync: the lines that may be lost then are
 * those of changes that were refused, and lazy ones. 0 or -errno.
 */
static int journal_sync_all(struct fsb_store *s)
{
	struct journal_sync *js = &s->js;
	int rc = 0;

	pthread_mutex_lock(&js->mu);
	while (js->syncing)
		pthread_cond_wait(&js->cv, &js->mu);
	if (js->fd >= 0 && (js->written > js->synced || js->failed != 0)) {
		fsb_sync_count(FSB_SYNC_SEAL);
		rc = fdatasync(js->fd) < 0 ? nospace(-errno) : 0;
		if (rc == 0)
			js->synced = js->written;
		else
			js->failed = rc;
		pthread_cond_broadcast(&js->cv);
	}
	pthread_mutex_unlock(&js->mu);
	return rc;
}

/*
 * Batched mode: one syncfs of the store's file system makes every line,
 * object and directory entry written so far durable at once (cheaper than
 * an fdatasync of the journal plus an fsync per object and directory:
 * docs/benchmarks.md). Called with js->mu held; let go during the syncfs,
 * which runs as a leader's fdatasync does (`syncing`), so a waiter or a
 * journal_attach never sees it half done. A failure is kept in `failed`:
 * the cycle takes no more lines, its changes are refused. 0 or -errno.
 */
static int batch_sync_locked(struct fsb_store *s, enum fsb_sync_kind kind)
{
	struct journal_sync *js = &s->js;
	off_t upto;
	int rc;

	while (js->syncing)
		pthread_cond_wait(&js->cv, &js->mu);
	/* After a failure it is tried again (a seal's): what may be lost then
	 * is what was written since the last good one. */
	if (!js->pending && js->written <= js->synced && js->failed == 0)
		return 0;
	upto = js->written;
	js->pending = false;
	js->syncing = true;
	pthread_mutex_unlock(&js->mu);
	fsb_sync_count(kind);
	rc = syncfs(s->objfd) < 0 ? nospace(-errno) : 0;
	pthread_mutex_lock(&js->mu);
	js->syncing = false;
	if (rc == 0 && upto > js->synced)
		js->synced = upto;
	else if (rc < 0)
		js->failed = rc;
	pthread_cond_broadcast(&js->cv);
	return rc;
}

/* Batched mode: something was written that the next syncfs must cover. */
static void batch_note(struct fsb_store *s)
{
	struct journal_sync *js = &s->js;

	pthread_mutex_lock(&js->mu);
	if (!js->pending) {
		js->pending = true;
		pthread_cond_signal(&js->tick);
	}
	pthread_mutex_unlock(&js->mu);
}

/* The flusher: FSB_STORE_BATCH_MS after the first write since the last
 * syncfs, the next one. Its own thread, never the core's loop: a syncfs
 * can block for as long as the disk takes. */
static void *flusher_main(void *arg)
{
	struct fsb_store *s = arg;
	struct journal_sync *js = &s->js;
	struct timespec at;

	pthread_mutex_lock(&js->mu);
	while (!js->stop) {
		if (!js->pending) {
			pthread_cond_wait(&js->tick, &js->mu);
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &at);
		at.tv_sec += FSB_STORE_BATCH_MS / 1000;
		at.tv_nsec += (long)(FSB_STORE_BATCH_MS % 1000) * 1000000L;
		if (at.tv_nsec >= 1000000000L) {
			at.tv_sec++;
			at.tv_nsec -= 1000000000L;
		}
		while (!js->stop && pthread_cond_timedwait(&js->tick, &js->mu, &at) != ETIMEDOUT)
			;
		if (!js->stop)
			batch_sync_locked(s, FSB_SYNC_BATCH);
	}
	pthread_mutex_unlock(&js->mu);
	return NULL;
}

static int flusher_start(struct fsb_store *s)
{
	struct journal_sync *js = &s->js;
	sigset_t all, old;
	int rc;

	/* Signals stay with the core's loop thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = -pthread_create(&js->thread, NULL, flusher_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc == 0)
		js->flusher = true;
	return rc;
}

static void flusher_stop(struct fsb_store *s)
{
	struct journal_sync *js = &s->js;

	if (!js->flusher)
		return;
	pthread_mutex_lock(&js->mu);
	js->stop = true;
	pthread_cond_signal(&js->tick);
	pthread_mutex_unlock(&js->mu);
	pthread_join(js->thread, NULL);
	js->flusher = false;
}

int fsb_store_set_durability(struct fsb_store *s, bool batched)
{
	int rc;

	if (batched == is_batched(s))
		return 0;
	if (batched) {
		if (!s->js.flusher && (rc = flusher_start(s)) < 0)
			return rc;
		s->ever_batched = true;
	} else {
		/* Strict from here: what batched mode left to the page cache
		 * (a new objects/<hh> a strict object is linked into, say)
		 * is made durable first. */
		pthread_mutex_lock(&s->js.mu);
		rc = batch_sync_locked(s, FSB_SYNC_BATCH);
		pthread_mutex_unlock(&s->js.mu);
		if (rc < 0)
			return rc;
	}
	__atomic_store_n(&s->batched, batched, __ATOMIC_RELEASE);
	return 0;
}

/* The highest cycle number in cycles/, 0 when there is none. */
static int highest_cycle(int cycfd, unsigned *out)
{
	struct dirent *de;
	DIR *d;
	int fd;

	*out = 0;
	fd = openat(cycfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (d == NULL) {
		close(fd);
		return -ENOMEM;
	}
	errno = 0;
	while ((de = readdir(d)) != NULL) {
		const char *p = de->d_name;
		unsigned long v;
		char *end;

		if (*p < '1' || *p > '9')
			continue;
		v = strtoul(p, &end, 10);
		if (*end != '\0' || v > INT_MAX)
			continue;
		if (v > *out)
			*out = (unsigned)v;
	}
	closedir(d);
	return 0;
}

/*
 * mkdir + open of one directory below `at`, never through a symlink. A new
 * directory's entry is fsynced into `at` at once; when that fails the
 * directory is taken away again, so a later open makes (and fsyncs) it anew.
 */
static int open_subdir(int at, const char *name, bool create)
{
	int fd, err;

	if (create) {
		if (mkdirat(at, name, 0700) == 0) {
			if ((err = fsync_counted(at, FSB_SYNC_DIR)) < 0) {
				unlinkat(at, name, AT_REMOVEDIR);
				return err;
			}
		} else if (errno != EEXIST) {
			return -errno;
		}
	}
	fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* mkdir -p of the state dir itself, each new level 0700. */
static int mkdir_p(const char *path)
{
	char *p = strdup(path), *q;
	int err = 0;

	if (p == NULL)
		return -ENOMEM;
	for (q = p + 1; err == 0; q++) {
		char c = *q;

		if (c != '/' && c != '\0')
			continue;
		*q = '\0';
		if (mkdir(p, 0700) < 0 && errno != EEXIST)
			err = -errno;
		*q = c;
		if (c == '\0')
			break;
	}
	free(p);
	return err;
}

/*
 * The end state of `path` for cycle.json: also what a restore compares a
 * path the cycle created with before it removes it (type, dev and ino: the
 * very object the cycle left there). Only ENOENT and ENOTDIR mean it
 * is absent; any other lstat error leaves its state unknown, *unknown is set
 * and NULL returned: the path is left out of `paths`, so a restore of it
 * needs --force. NULL without *unknown is out of memory.
 */
static cJSON *end_state(const char *path, bool *unknown)
{
	struct fsb_end_state e;
	struct stat st;
	bool exists = lstat(path, &st) == 0;

	*unknown = !exists && errno != ENOENT && errno != ENOTDIR;
	if (*unknown)
		return NULL;
	memset(&e, 0, sizeof(e));
	e.exists = exists;
	if (exists) {
		snprintf(e.type, sizeof(e.type), "%s", fsb_file_type_name(st.st_mode));
		e.has_size = e.has_mtime = e.has_dev = e.has_ino = true;
		e.size = (uint64_t)st.st_size;
		e.mtime = st.st_mtim;
		e.dev = st.st_dev;
		e.ino = st.st_ino;
	}
	return fsb_journal_end_encode(&e);
}

/*
 * cycle.json of the open cycle. A path that is not UTF-8 is keyed by its
 * percent-encoding and its entry says so with `pathBytes`, as journal lines
 * do: the key alone could also be a UTF-8 path spelled with `%`.
 */
static cJSON *cycle_json(const struct cycle *c, const char *message, const char *head,
			 bool recovered)
{
	struct timespec sealed = now();
	cJSON *o = cJSON_CreateObject(), *paths = NULL;
	char opened[40], sealed_s[40];
	bool ok;

	if (o == NULL)
		return NULL;
	fsb_journal_stamp(&c->opened, opened);
	fsb_journal_stamp(&sealed, sealed_s);
	ok = cJSON_AddNumberToObject(o, "cycle", c->n) != NULL &&
	     fsb_journal_add_bytes(o, "message", message ? message : "") &&
	     cJSON_AddStringToObject(o, "opened", opened) != NULL &&
	     cJSON_AddStringToObject(o, "sealed", sealed_s) != NULL &&
	     fsb_journal_add_bytes(o, "auditHead", head ? head : "") &&
	     cJSON_AddBoolToObject(o, "recovered", recovered) != NULL &&
	     (paths = cJSON_AddObjectToObject(o, "paths")) != NULL;
	/* A recovered cycle's end state is unknown: the paths are as they are
	 * at the restart, after whatever happened between the crash and it
	 * (a user's edit, say), which restore must not take for the cycle's
	 * own. So it records none, and restore asks for --force. */
	for (size_t i = 0; ok && !recovered && i < c->npaths; i++) {
		const char *p = c->paths[i], *key = p;
		bool unknown;
		cJSON *st = end_state(p, &unknown), *enc;

		if (unknown)
			continue;
		if (st != NULL && !fsb_utf8_valid(p, strlen(p))) {
			fsb_json_add_path(st, "path", p, true);
			enc = cJSON_GetObjectItemCaseSensitive(st, "pathBytes");
			key = enc != NULL ? enc->valuestring : NULL;
		}
		/* The key is copied before `st` (which may hold it) is added. */
		if (st == NULL || key == NULL || !cJSON_AddItemToObject(paths, key, st)) {
			cJSON_Delete(st);
			ok = false;
		}
	}
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * Seal the cycle in s->c: cycle.json written to a temporary name, fsynced,
 * renamed into place and the directory fsynced, so the cycle is either open
 * or sealed. Afterwards no cycle is open.
 */
static int seal_cycle(struct fsb_store *s, const char *message, const char *head,
		      bool recovered, char *err, size_t errlen)
{
	struct cycle *c = &s->c;
	unsigned n = c->n;
	cJSON *o;
	char *json = NULL;
	int fd = -1, rc;

	/* A sealed cycle's journal is whole: the lines that were never synced
	 * on their own (created paths), and in batched mode every line and
	 * object, are made durable now. */
	if (s->ever_batched) {
		pthread_mutex_lock(&s->js.mu);
		rc = batch_sync_locked(s, FSB_SYNC_SEAL);
		pthread_mutex_unlock(&s->js.mu);
		if (rc < 0)
			goto fail;
	}
	if ((rc = journal_sync_all(s)) < 0) {
		json = NULL;
		goto fail;
	}
	o = cycle_json(c, message, head, recovered);
	json = o ? fsb_json_print(o, false) : NULL;
	cJSON_Delete(o);
	if (json == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	fd = openat(c->dirfd, "cycle.json.tmp",
		    O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = -errno;
		goto fail;
	}
	rc = write_all(fd, json, strlen(json));
	if (rc == 0)
		rc = write_all(fd, "\n", 1);
	if (rc == 0)
		rc = fsync_counted(fd, FSB_SYNC_SEAL);
	if (rc)
		goto fail;
	close(fd);
	fd = -1;
	if (renameat(c->dirfd, "cycle.json.tmp", c->dirfd, "cycle.json") < 0) {
		rc = -errno;
		goto fail;
	}
	if ((rc = fsync_counted(c->dirfd, FSB_SYNC_SEAL)) < 0)
		goto fail;
	cJSON_free(json);
	cycle_reset(s);
	return (int)n;

fail:
	if (fd >= 0)
		close(fd);
	unlinkat(c->dirfd, "cycle.json.tmp", 0);
	cJSON_free(json);
	rc = nospace(rc);
	if (err != NULL && errlen > 0)
		snprintf(err, errlen, "cannot seal backup cycle %u in %s/cycles/%u: %s", n,
			 s->dir, n, strerror(-rc));
	return rc;
}

/*
 * flock that retries on EINTR: the admin lock and the shared lock are
 * taken blocking, and a signal to the core must not make that fail.
 */
static int lock_fd(int fd, int how)
{
	while (flock(fd, how) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}

/*
 * A crash between a kept inode's commit and its change (a delete, a
 * rename over the file) leaves the file with its name and a second link in
 * the store: each kept object the open cycle's journal names becomes a
 * copy when the file still has another link (fsb_object_unshare does
 * nothing otherwise). Best effort: what cannot be read is left as it is.
 */
static void unshare_kept(struct fsb_store *s)
{
	char *text = NULL, *line, *save = NULL;
	struct stat st;
	int fd;

	fd = openat(s->c.dirfd, "journal.jsonl", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (text = malloc(st.st_size + 1)) != NULL) {
		ssize_t n = pread(fd, text, st.st_size, 0);

		text[n > 0 ? n : 0] = '\0';
	}
	close(fd);
	for (line = text ? strtok_r(text, "\n", &save) : NULL; line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		cJSON *j, *p, *o;

		if (strstr(line, "\"kept\":true") == NULL || (j = cJSON_Parse(line)) == NULL)
			continue;
		p = cJSON_GetObjectItemCaseSensitive(j, "prior");
		o = cJSON_GetObjectItemCaseSensitive(p, "object");
		/* The name becomes a path under objects/: nothing but hex. */
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "kept")) && cJSON_IsString(o) &&
		    strlen(o->valuestring) == FSB_SHA256_HEX_LEN &&
		    strspn(o->valuestring, "0123456789abcdef") == FSB_SHA256_HEX_LEN)
			fsb_object_unshare(s->objfd, o->valuestring);
		cJSON_Delete(j);
	}
	free(text);
}

/*
 * Cycle `n` has no cycle.json: a crash left it open, or a core that is
 * still running writes it (it holds its journal's flock until the seal).
 * Seal it as recovered only in the first case. Called with the admin lock
 * held, so no core is between making a cycle and locking its journal.
 */
static int recover_one(struct fsb_store *s, unsigned n, char *err, size_t errlen)
{
	struct stat st;
	char name[16];
	int rc, jfd;

	snprintf(name, sizeof(name), "%u", n);
	rc = open_subdir(s->cycfd, name, false);
	if (rc == -ENOTDIR || rc == -ENOENT)
		return 0;	/* not a cycle, or a failed restore's, just removed */
	if (rc < 0)
		goto fail;
	s->c.dirfd = rc;
	if (fstatat(s->c.dirfd, "cycle.json", &st, AT_SYMLINK_NOFOLLOW) == 0) {
		cycle_reset(s);
		return 0;
	}
	if (errno != ENOENT) {
		rc = -errno;
		goto fail;
	}
	jfd = openat(s->c.dirfd, "journal.jsonl", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (jfd < 0 && errno == ENOENT) {
		/* No journal, nothing to recover: a crash between the mkdir
		 * and the journal's create, or a restore that removes its
		 * failed cycle right now. Taken away when empty, never sealed:
		 * a sealed cycle would stand for a turn that did nothing. */
		cycle_reset(s);
		unlinkat(s->cycfd, name, AT_REMOVEDIR);
		return 0;
	}
	if (jfd >= 0 && flock(jfd, LOCK_EX | LOCK_NB) < 0) {
		rc = errno == EWOULDBLOCK ? 0 : -errno;
		close(jfd);
		if (rc == 0) {
			cycle_reset(s);
			return 0;	/* the cycle of a live core */
		}
		goto fail;
	}
	s->c.n = n;
	/* The cycle's directory changed last when its journal was created,
	 * right after it: the best record of when the cycle opened. */
	if (fstat(s->c.dirfd, &st) == 0)
		s->c.opened = st.st_mtim;
	unshare_kept(s);
	/* Sealed with no end states (see cycle_json): the journal keeps
	 * every path and prior state, so nothing backed up is lost. */
	rc = seal_cycle(s, RECOVERED_MSG, "", true, err, errlen);
	if (jfd >= 0)
		close(jfd);
	return rc < 0 ? rc : 0;

fail:
	snprintf(err, errlen, "cannot recover the open backup cycle %u in %s/cycles: %s", n,
		 s->dir, strerror(-rc));
	cycle_reset(s);
	return rc;
}

/* The numbers of the cycles in cycles/, in no order. */
static int cycle_numbers(int cycfd, unsigned **nums, size_t *count)
{
	size_t cap = 0;
	struct dirent *de;
	DIR *d;
	int fd, rc = 0;

	*nums = NULL;
	*count = 0;
	fd = openat(cycfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (d == NULL) {
		close(fd);
		return -ENOMEM;
	}
	while (rc == 0 && (de = readdir(d)) != NULL) {
		unsigned long v;
		char *end;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		v = strtoul(de->d_name, &end, 10);
		if (*end != '\0' || v > INT_MAX)
			continue;
		if (*count == cap) {
			unsigned *g = realloc(*nums, (cap ? cap * 2 : 16) * sizeof(*g));

			if (g == NULL) {
				rc = -ENOMEM;
				break;
			}
			*nums = g;
			cap = cap ? cap * 2 : 16;
		}
		(*nums)[(*count)++] = (unsigned)v;
	}
	closedir(d);
	return rc;
}

/* On open: every unsealed cycle whose core is gone was left by a crash;
 * seal each now. Called with the admin lock held. */
static int recover(struct fsb_store *s, char *err, size_t errlen)
{
	unsigned *nums = NULL;
	size_t count = 0;
	int rc;

	rc = cycle_numbers(s->cycfd, &nums, &count);
	if (rc < 0)
		snprintf(err, errlen, "cannot recover the open backup cycles in %s/cycles: %s",
			 s->dir, strerror(-rc));
	for (size_t i = 0; rc == 0 && i < count; i++)
		rc = recover_one(s, nums[i], err, errlen);
	free(nums);
	cycle_reset(s);
	return rc < 0 ? rc : 0;
}

int fsb_store_open(const char *state_dir, const char *session, struct fsb_store **out,
		   char *err, size_t errlen)
{
	return fsb_store_open_at(state_dir, session, "modify_backup", out, err, errlen);
}

int fsb_store_open_at(const char *state_dir, const char *session, const char *name,
		      struct fsb_store **out, char *err, size_t errlen)
{
	pthread_condattr_t ca;
	struct fsb_store *s;
	int fd = -1, sess = -1, rc;
	size_t len;

	if (state_dir == NULL || state_dir[0] == '\0' || session == NULL ||
	    session[0] == '\0' || strchr(session, '/') != NULL ||
	    strcmp(session, ".") == 0 || strcmp(session, "..") == 0 ||
	    name == NULL || name[0] == '\0' || strchr(name, '/') != NULL ||
	    strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
		snprintf(err, errlen, "invalid state dir or session id for the backup store");
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL) {
		snprintf(err, errlen, "out of memory opening the backup store");
		return -ENOMEM;
	}
	s->rootfd = s->objfd = s->cycfd = -1;
	s->c.dirfd = s->c.journal = -1;
	s->js.fd = -1;
	pthread_mutex_init(&s->js.mu, NULL);
	pthread_cond_init(&s->js.cv, NULL);
	/* The flusher's interval is measured on the monotonic clock. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->js.tick, &ca);
	pthread_condattr_destroy(&ca);
	s->tmpfile_ok = true;
	len = strlen(state_dir) + strlen(session) + strlen(name) + sizeof("/sessions//");
	s->dir = malloc(len);
	if (s->dir == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	snprintf(s->dir, len, "%s/sessions/%s/%s", state_dir, session, name);

	rc = mkdir_p(state_dir);
	if (rc < 0)
		goto fail;
	fd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		goto fail;
	}
	/* Below the state dir nothing is followed: a symlink planted in the
	 * store must not send backups elsewhere. */
	if ((rc = open_subdir(fd, "sessions", true)) < 0)
		goto fail;
	close(fd);
	fd = rc;
	if ((rc = open_subdir(fd, session, true)) < 0)
		goto fail;
	sess = rc;
	if ((rc = open_subdir(sess, name, true)) < 0)
		goto fail;
	s->rootfd = rc;
	if ((rc = open_subdir(s->rootfd, "objects", true)) < 0)
		goto fail;
	s->objfd = rc;
	if ((rc = open_subdir(s->rootfd, "cycles", true)) < 0)
		goto fail;
	s->cycfd = rc;
	close(fd);
	close(sess);
	fd = sess = -1;

	/*
	 * Many cores share a store (docs/decisions.md, "Two runs at once"):
	 * each holds a shared flock on it while open, and each open cycle's
	 * journal is flocked by its core. What needs the store to itself
	 * (making a cycle, recovery, removing temporaries, pruning) runs under
	 * the admin lock on cycles/, held only that long. Both locks live as
	 * long as their fds (O_CLOEXEC: no command inherits them).
	 */
	if ((rc = lock_fd(s->cycfd, LOCK_EX)) < 0)
		goto fail;
	/* Alone on the store: no other core has a temporary in flight. */
	if (flock(s->rootfd, LOCK_EX | LOCK_NB) == 0) {
		fsb_object_clean(s->objfd);
		/* A pack half written (no index yet) by a core killed while
		 * packing: its objects are still loose. */
		fsb_objpack_clean(s->dir);
	}
	/* Whoever holds the store exclusively takes the admin lock first
	 * and lets go of both at once: here only one that does not (an
	 * older fsbroker) can. Never wait for it with the admin lock held. */
	if (flock(s->rootfd, LOCK_SH | LOCK_NB) < 0) {
		rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
		flock(s->cycfd, LOCK_UN);
		if (rc != -EBUSY)
			goto fail;
		snprintf(err, errlen, "the %s store of session %s is locked by another "
			 "fsbroker process that does not share it", name, session);
		fsb_store_close(s);
		return rc;
	}
	rc = recover(s, err, errlen);
	flock(s->cycfd, LOCK_UN);
	if (rc < 0) {
		fsb_store_close(s);
		return rc;
	}
	*out = s;
	return 0;

fail:
	rc = nospace(rc);
	snprintf(err, errlen, "cannot open the backup store %s: %s",
		 s->dir ? s->dir : state_dir, strerror(-rc));
	if (fd >= 0)
		close(fd);
	if (sess >= 0)
		close(sess);
	fsb_store_close(s);
	return rc;
}

void fsb_store_close(struct fsb_store *s)
{
	if (s == NULL)
		return;
	/* A clean stop leaves nothing to the page cache. */
	flusher_stop(s);
	if (s->ever_batched && s->objfd >= 0) {
		pthread_mutex_lock(&s->js.mu);
		batch_sync_locked(s, FSB_SYNC_BATCH);
		pthread_mutex_unlock(&s->js.mu);
	}
	/* An open cycle stays open on disk: the next open seals it. */
	cycle_reset(s);
	if (s->objfd >= 0)
		close(s->objfd);
	if (s->cycfd >= 0)
		close(s->cycfd);
	if (s->rootfd >= 0)
		close(s->rootfd);
	pthread_cond_destroy(&s->js.tick);
	pthread_cond_destroy(&s->js.cv);
	pthread_mutex_destroy(&s->js.mu);
	free(s->dir);
	free(s);
}

int fsb_store_begin(struct fsb_store *s)
{
	struct cycle *c = &s->c;
	bool made = false;
	char name[16];
	unsigned n;
	int rc;

	if (c->n != 0)
		return (int)c->n;
	/* Under the admin lock from the new number to its journal's flock:
	 * another core's recovery never finds this cycle open and unlocked. */
	if ((rc = lock_fd(s->cycfd, LOCK_EX)) < 0)
		return rc;
	rc = highest_cycle(s->cycfd, &n);
	if (rc < 0)
		goto fail;
	for (int tries = 0; !made; tries++) {
		if (n >= INT_MAX) {
			rc = -EOVERFLOW;
			goto fail;
		}
		n++;
		snprintf(name, sizeof(name), "%u", n);
		made = mkdirat(s->cycfd, name, 0700) == 0;
		rc = made ? 0 : -errno;
		if (!made && (rc != -EEXIST || tries == 16))
			goto fail;
	}
	c->opened = now();
	rc = open_subdir(s->cycfd, name, false);
	if (rc < 0)
		goto fail;
	c->dirfd = rc;
	c->journal = openat(c->dirfd, "journal.jsonl",
			    O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (c->journal < 0 || flock(c->journal, LOCK_EX | LOCK_NB) < 0) {
		rc = -errno;
		goto fail;
	}
	/* Batched: the new cycle's entries ride along with its first syncfs. */
	if (!is_batched(s) && ((rc = fsync_counted(c->dirfd, FSB_SYNC_DIR)) < 0 ||
			       (rc = fsync_counted(s->cycfd, FSB_SYNC_DIR)) < 0))
		goto fail;
	flock(s->cycfd, LOCK_UN);
	c->n = n;
	c->jsize = 0;
	c->need_sync_to = 0;
	c->seq = 0;
	journal_attach(s);
	return (int)n;

fail:
	/* Leave no empty cycle behind for the next start to "recover". */
	if (made) {
		if (c->dirfd >= 0)
			unlinkat(c->dirfd, "journal.jsonl", 0);
		unlinkat(s->cycfd, name, AT_REMOVEDIR);
		cycle_reset(s);
	}
	flock(s->cycfd, LOCK_UN);
	return nospace(rc);
}

unsigned fsb_store_cycle(const struct fsb_store *s)
{
	return s->c.n;
}

static bool same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/*
 * May the inode `st` be kept by linking it into the store, rather than
 * copied? When the name about to go is its only one, or when it has others
 * but is over the copy limit `max_bytes` (0: none), where no copy would be
 * taken at all (a pnpm store's big file, linked into node_modules): with
 * another name the file lives on and may change through it, which a
 * restore notices (size, mtime) and reports. And only when nobody was
 * handed it for writing in this cycle (a holder could change it after the
 * keep), and a restore run as the core's user can read it back.
 */
static bool can_keep(const struct stat *st, const struct inode_ent *e, uint64_t max_bytes)
{
	bool over = max_bytes > 0 && (uint64_t)st->st_size > max_bytes;
	uid_t me = geteuid();

	if ((st->st_nlink != 1 && !over) || (e != NULL && e->dirty))
		return false;
	return me == 0 || (st->st_uid == me && (st->st_mode & S_IRUSR));
}

/* Put the content of r->fd into the store (or find it already there) and
 * say so in res. Returns 0, -EFBIG or -errno. */
static int take_content(struct fsb_store *s, const struct fsb_backup_req *r,
			struct fsb_backup_result *res, struct fsb_object *kept)
{
	struct fsb_object obj;
	struct inode_ent *e;
	unsigned long grants;
	struct stat st;
	int rc;

	if (fstat(r->fd, &st) < 0)
		return -errno;
	/* The fd must be the file whose prior state is journaled, or a
	 * restore would pair one file's metadata with another's content. */
	if (!S_ISREG(st.st_mode) || st.st_dev != r->prior->st_dev ||
	    st.st_ino != r->prior->st_ino)
		return -ESTALE;

	e = inode_get(&s->c, st.st_dev, st.st_ino, false);
	if (e != NULL && e->has_object && !e->dirty && same_time(&e->ctime, &st.st_ctim) &&
	    e->size == st.st_size) {
		memcpy(res->object, e->hex, sizeof(res->object));
		res->reused = true;
		return 0;
	}
	if (r->keep_inode && can_keep(&st, e, r->max_bytes)) {
		if (r->caller_lock != NULL)
			pthread_mutex_unlock(r->caller_lock);
		rc = fsb_object_keep(s->objfd, r->fd, r->resolved, kept);
		if (r->caller_lock != NULL)
			pthread_mutex_lock(r->caller_lock);
		if (rc == 0) {
			memcpy(res->object, kept->hex, sizeof(res->object));
			res->kept = true;
			return 0;
		}
		if (rc == -ENOSPC)
			return rc;
		/* Another file system (EXDEV), links not allowed there: copy. */
	}
	/* The copy, its fsync included, runs without the caller's lock: the
	 * other requests append their lines and share a journal sync
	 * meanwhile. The store's state is looked at again after it. */
	grants = s->grants;
	if (r->caller_lock != NULL)
		pthread_mutex_unlock(r->caller_lock);
	rc = fsb_object_store(s->objfd, r->fd, r->max_bytes, &s->tmpfile_ok, !is_batched(s), &obj);
	if (r->caller_lock != NULL)
		pthread_mutex_lock(r->caller_lock);
	if (rc < 0)
		return rc;
	if (obj.too_large) {
		if (r->on_too_large == FSB_TOO_LARGE_FAIL)
			return -EFBIG;
		res->skipped = "too-large";
		return 0;
	}
	memcpy(res->object, obj.hex, sizeof(res->object));
	res->reflinked = obj.reflinked;

	/* Remember the copy (in the cycle open now: the line goes there).
	 * Without memory for it the next record simply copies again, so that
	 * is no error. A write grant noted during the copy may have been of
	 * this file: then its mark stays. */
	e = inode_get(&s->c, st.st_dev, st.st_ino, true);
	if (e != NULL) {
		e->has_object = true;
		if (s->grants == grants)
			e->dirty = false;
		memcpy(e->hex, obj.hex, sizeof(e->hex));
		/* As before the copy: a change during it means a new copy
		 * next time. */
		e->ctime = st.st_ctim;
		e->size = st.st_size;
	}
	return 0;
}

/* The journal failed to sync in the open cycle: nothing it holds since is
 * known to be on disk. */
static bool journal_failed(struct fsb_store *s)
{
	bool failed;

	pthread_mutex_lock(&s->js.mu);
	failed = s->js.failed != 0;
	pthread_mutex_unlock(&s->js.mu);
	return failed;
}

/* Ops that create or remove a name in a directory, and so move its mtime. */
static bool changes_entries(const char *op)
{
	static const char *const ops[] = {
		"create", "mkdir", "symlink", "link", "delete", "rename-from", "rename-to",
	};

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (strcmp(op, ops[i]) == 0)
			return true;
	return false;
}

/* See backup.h. Best effort: a directory that cannot be looked at is left
 * out, never the change. Its line rides along with the change's own sync
 * (or the next one). */
/* The directory `resolved` lies in, into `parent`; false for "/x" or a
 * name too long. */
static bool parent_of(const char *resolved, char parent[PATH_MAX])
{
	const char *slash = strrchr(resolved, '/');
	size_t len;

	if (slash == NULL || slash == resolved || (len = (size_t)(slash - resolved)) >= PATH_MAX)
		return false;
	memcpy(parent, resolved, len);
	parent[len] = '\0';
	return true;
}

bool fsb_store_parent_noted(struct fsb_store *s, const char *resolved, const char *tool_call)
{
	char parent[PATH_MAX];

	return parent_of(resolved, parent) && s->c.n != 0 &&
	       recorded_find(&s->c, parent, tool_call ? tool_call : "") != NULL;
}

int fsb_store_note_parent(struct fsb_store *s, const char *resolved, const char *tool_call,
			  const char *trace)
{
	struct fsb_backup_result res;
	struct fsb_backup_req p;
	char parent[PATH_MAX];
	struct stat st;

	if (!parent_of(resolved, parent))
		return 0;
	if (s->c.n != 0 && recorded_find(&s->c, parent, tool_call ? tool_call : "") != NULL)
		return 0;
	if (lstat(parent, &st) < 0 || !S_ISDIR(st.st_mode))
		return 0;
	memset(&p, 0, sizeof(p));
	p.tool_call = tool_call;
	p.trace = trace;
	p.op = "entries";
	p.path = parent;
	p.resolved = parent;
	p.prior = &st;
	p.fd = -1;
	p.metadata_only = true;
	p.defer_sync = true;
	return fsb_store_record(s, &p, &res);
}

int fsb_store_record(struct fsb_store *s, const struct fsb_backup_req *r,
		     struct fsb_backup_result *res)
{
	const char *tool_call = r->tool_call ? r->tool_call : "", *stored;
	struct fsb_object kept = { .kept = false };
	struct recorded *first;
	bool takes_content, moved_in, appended = false;
	off_t durable_end;
	cJSON *line;
	int rc;

	memset(res, 0, sizeof(*res));
	if (r->op == NULL || r->path == NULL || r->resolved == NULL)
		return -EINVAL;
	/* A partial line stays at the journal's end: anything appended now
	 * would be joined to it and lost to a reader. After a failed sync,
	 * nothing written since is known to be on disk. Fail closed. */
	if (s->c.n != 0 && (s->c.broken || journal_failed(s)))
		return -EIO;
	if (s->c.n == 0 && (rc = fsb_store_begin(s)) < 0)
		return rc;
	/* A name made (whatever the op: a touch, a copy) or taken away. */
	if ((r->prior == NULL || changes_entries(r->op)) &&
	    (rc = fsb_store_note_parent(s, r->resolved, r->tool_call, r->trace)) < 0)
		return rc;

	first = recorded_find(&s->c, r->resolved, tool_call);
	/*
	 * A write grant of a path its tool call recorded in this cycle: what a
	 * restore needs is in that first line. No copy, no line: only the wait
	 * for that line to be durable. Unless a file moved there since: its
	 * bytes are in no object yet.
	 */
	takes_content = r->prior != NULL && S_ISREG(r->prior->st_mode) && !r->metadata_only &&
			r->moved_to == NULL;
	/* (A rename's target line keeps what it replaces, written after the
	 * source's line that named the path as where it goes.) */
	moved_in = takes_content && strcmp(r->op, "rename-to") != 0 &&
		   tfind(r->resolved, &s->c.moved_in, cmp_path) != NULL;
	if (first != NULL && r->no_repeat_copy && !(first->metadata_only && takes_content) &&
	    !moved_in) {
		res->skipped = "recorded-before";
		res->durable.cycle = s->c.n;
		res->durable.end = (uint64_t)first->durable_end;
		return r->defer_sync ? 0 : journal_wait(s, s->c.n, first->durable_end);
	}
	if (r->prior != NULL && S_ISREG(r->prior->st_mode)) {
		if (r->metadata_only) {
			res->metadata_only = true;
		} else if (r->moved_to != NULL && !r->skip_content) {
			/* It lives on under its new name, bytes and inode: a
			 * restore moves those back (docs/backup-store.md,
			 * "Renames"), nothing is copied. */
			res->moved = true;
		} else if (r->skip_content) {
			res->skipped = "skip-rule";
		} else if (r->fd >= 0) {
			rc = take_content(s, r, res, &kept);
			if (rc < 0)
				goto fail;
		}
	}
	/* The caller's lock was let go during a copy: the cycle may have
	 * been sealed (the line goes into the next one), the journal may
	 * have failed, another line of the pair may have come first. */
	if (r->caller_lock != NULL) {
		if (s->c.n == 0 && (rc = fsb_store_begin(s)) < 0)
			goto fail;
		if (s->c.broken || journal_failed(s)) {
			rc = -EIO;
			goto fail;
		}
		first = recorded_find(&s->c, r->resolved, tool_call);
	}

	/* Noted before the line is written: a path in the set whose line
	 * then failed only gets an end state it did not need. */
	rc = touch_path(&s->c, r->resolved, &stored);
	if (rc == 0 && r->moved_to != NULL)
		rc = note_moved_in(&s->c, r->moved_to);
	if (rc < 0)
		goto fail;
	line = journal_line(&s->c, r, res);
	if (line == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	rc = journal_append(s, line);
	cJSON_Delete(line);
	if (rc < 0)
		goto fail;
	appended = true;
	s->c.seq++;
	/* Named by a line now: the kept inode may take its name. */
	if (kept.kept && (rc = fsb_object_keep_commit(s->objfd, &kept, !is_batched(s))) < 0)
		goto fail;
	if (is_batched(s))
		batch_note(s);

	/*
	 * What must be on disk before the change (docs/backup-store.md, "When
	 * a line is durable"): the line of an existing path, which a restore
	 * needs to bring its bytes or metadata back. A created path's line
	 * only tells a restore to remove what the change makes: it rides
	 * along with the next sync, or the seal's. A later line of a pair
	 * whose first line is in the journal adds nothing a restore reads:
	 * it waits only for that first line.
	 */
	if (moved_in && res->object[0] != '\0')
		tdelete(r->resolved, &s->c.moved_in, cmp_path);
	if (first != NULL && !(first->metadata_only && takes_content) && !moved_in) {
		durable_end = first->durable_end;
	} else if (first != NULL) {
		/* The first line of the pair kept only metadata: this one is
		 * the only record of the bytes, so it is synced on its own. */
		durable_end = s->c.jsize;
		first->durable_end = durable_end;
		first->metadata_only = false;
		s->c.need_sync_to = durable_end;
	} else {
		/* A directory's "entries" line holds only its old times: it
		 * rides along with the next sync, as a created path's does. */
		durable_end = r->prior != NULL && strcmp(r->op, "entries") != 0 ? s->c.jsize : 0;
		recorded_add(&s->c, stored, tool_call, durable_end, res->metadata_only);
		if (durable_end > 0)
			s->c.need_sync_to = durable_end;
	}
	if (r->defer_sync) {
		res->durable.cycle = s->c.n;
		res->durable.end = (uint64_t)durable_end;
		return 0;
	}
	/* The line stays in the journal when its sync fails: the cycle then
	 * takes no more lines, and this change is refused. */
	rc = journal_wait(s, s->c.n, durable_end);
	if (rc < 0)
		goto fail;
	return 0;

fail:
	/* The change will not happen: a file kept by link keeps its name and
	 * must not share its inode with the store. Not yet committed, the
	 * link just goes; committed, the line names it: a copy takes its
	 * place. */
	if (kept.kept && kept.tmp[0] != '\0')
		fsb_object_keep_abort(s->objfd, &kept);
	else if (kept.kept && appended)
		fsb_object_unshare(s->objfd, res->object);
	memset(res, 0, sizeof(*res));
	return rc;
}

void fsb_store_note_write_grant(struct fsb_store *s, dev_t dev, ino_t ino)
{
	struct inode_ent *e = inode_get(&s->c, dev, ino, true);

	s->grants++;
	/* No entry (no memory for one) means no copy to reuse: the next
	 * record copies the file either way. */
	if (e != NULL)
		e->dirty = true;
}

/* A cycle without a line restores nothing: it goes, under the admin lock
 * (a recovery must not find it without its journal and seal it). */
static int discard_cycle(struct fsb_store *s, char *err, size_t errlen)
{
	unsigned n = s->c.n;
	char name[16];
	int rc;

	snprintf(name, sizeof(name), "%u", n);
	if ((rc = lock_fd(s->cycfd, LOCK_EX)) < 0)
		goto fail;
	if (unlinkat(s->c.dirfd, "journal.jsonl", 0) < 0 ||
	    unlinkat(s->cycfd, name, AT_REMOVEDIR) < 0) {
		rc = -errno;
		flock(s->cycfd, LOCK_UN);
		goto fail;
	}
	flock(s->cycfd, LOCK_UN);
	cycle_reset(s);
	return 0;

fail:
	if (err != NULL && errlen > 0)
		snprintf(err, errlen, "cannot remove the empty backup cycle %s/cycles/%u: %s",
			 s->dir, n, strerror(-rc));
	return rc;
}

int fsb_store_seal(struct fsb_store *s, const char *message, const char *audit_head,
		   char *err, size_t errlen)
{
	if (s->c.n == 0)
		return 0;
	if (s->c.jsize == 0 && !s->c.broken)
		return discard_cycle(s, err, errlen);
	return seal_cycle(s, message, audit_head, false, err, errlen);
}

int fsb_store_alone(struct fsb_store *s)
{
	int rc;

	if ((rc = lock_fd(s->cycfd, LOCK_EX)) < 0)
		return rc;
	/* flock converts by letting go first: a failed try has dropped the
	 * shared lock, taken again before the admin lock is let go (nobody
	 * can hold the store exclusively meanwhile: that needs the admin
	 * lock, so the retry cannot fail for want of it). */
	if (flock(s->rootfd, LOCK_EX | LOCK_NB) == 0)
		return 1;
	rc = errno == EWOULDBLOCK ? 0 : -errno;
	if (flock(s->rootfd, LOCK_SH | LOCK_NB) < 0 && rc == 0)
		rc = -errno;
	flock(s->cycfd, LOCK_UN);
	return rc;
}

void fsb_store_share(struct fsb_store *s)
{
	flock(s->rootfd, LOCK_SH | LOCK_NB);
	flock(s->cycfd, LOCK_UN);
}

int fsb_store_sync(struct fsb_store *s)
{
	struct fsb_journal_mark m;

	fsb_store_pending(s, &m);
	return fsb_store_wait(s, &m);
}

void fsb_store_pending(const struct fsb_store *s, struct fsb_journal_mark *m)
{
	m->cycle = s->c.n;
	m->end = s->c.n != 0 ? (uint64_t)s->c.need_sync_to : 0;
}

int fsb_store_wait(struct fsb_store *s, const struct fsb_journal_mark *m)
{
	if (m->cycle == 0 || m->end == 0)
		return 0;
	return journal_wait(s, m->cycle, (off_t)m->end);
}

int fsb_store_unshare(struct fsb_store *s, const char *object)
{
	return fsb_object_unshare(s->objfd, object);
}

const char *fsb_store_dir(const struct fsb_store *s)
{
	return s->dir;
}
