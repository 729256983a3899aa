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
#include "op.h"
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

/* ---- undo, redo, and what they leave ------------------------------------ */

enum fsb_undo_kind fsb_undo_kind_of(const struct fsb_cycle *cy)
{
	/* The op is the one keep_undo (restore.c) journals, never a pack's
	 * text: "restore", "undo" or "redo". */
	if (cy->nrecs > 0 && strcmp(cy->recs[0].op, "undo") == 0)
		return FSB_UNDO_KIND_UNDO;
	if (cy->nrecs > 0 && strcmp(cy->recs[0].op, "redo") == 0)
		return FSB_UNDO_KIND_REDO;
	return FSB_UNDO_KIND_RESTORE;
}

int fsb_undo_target(const char *undo_store, bool redo, struct fsb_cycle *out, char *err,
		    size_t errlen)
{
	unsigned *nums = NULL;
	size_t n = 0;
	enum fsb_undo_kind k;
	int rc;

	rc = fsb_cycles_list(undo_store, &nums, &n);
	if (rc < 0) {
		snprintf(err, errlen, "cannot read %s/cycles: %s", undo_store, strerror(-rc));
		return rc;
	}
	if (n == 0)
		return -ENOENT;
	rc = fsb_cycle_load(undo_store, nums[n - 1], out, NULL, err, errlen);
	free(nums);
	if (rc < 0)
		return rc;
	k = fsb_undo_kind_of(out);
	/* No toggle: an undo is undone only by a redo, and a redo (or a
	 * restore) redone by nothing. */
	if (redo != (k == FSB_UNDO_KIND_UNDO))
		return -EALREADY;
	return 0;
}

/* What tells one state of a path from another: the fields restore's check
 * of an end state compares (restore.c end_differs). */
struct ident {
	bool exists;
	const char *type;		/* "" when not known */
	bool has_ino, has_size, has_mtime;
	uint64_t ino, size;
	struct timespec mtime;
};

static void ident_of_end(const struct fsb_end_state *e, struct ident *id)
{
	*id = (struct ident){ .exists = e->exists, .type = e->type, .has_ino = e->has_ino,
			      .has_size = e->has_size, .has_mtime = e->has_mtime,
			      .ino = e->ino, .size = e->size, .mtime = e->mtime };
}

static void ident_of_prior(const struct fsb_prior *p, struct ident *id)
{
	*id = (struct ident){ .exists = p->exists, .type = p->type, .has_ino = p->exists,
			      .has_size = p->has_size, .has_mtime = p->has_mtime,
			      .ino = p->ino, .size = p->size, .mtime = p->mtime };
}

/* Equal where both know; a regular file must show its size and mtime on
 * both sides (with_ino false: all but the inode, which an undo renews). */
static bool same_ident(const struct ident *a, const struct ident *b, bool with_ino)
{
	bool file;

	if (a->exists != b->exists)
		return false;
	if (!a->exists)
		return true;
	if (a->type[0] == '\0' || strcmp(a->type, b->type) != 0)
		return false;
	file = strcmp(a->type, "file") == 0;
	if (file && !(a->has_size && b->has_size && a->has_mtime && b->has_mtime))
		return false;
	/* cJSON reads numbers as doubles: compare inodes rounded alike. */
	if (with_ino && a->has_ino && b->has_ino && (double)a->ino != (double)b->ino)
		return false;
	if (a->has_size && b->has_size && a->size != b->size)
		return false;
	return !(a->has_mtime && b->has_mtime && (a->mtime.tv_sec != b->mtime.tv_sec ||
						  a->mtime.tv_nsec != b->mtime.tv_nsec));
}

/* One cycle of restore_backup, loaded when first needed, its records
 * indexed by path. */
struct chain_cycle {
	bool tried, ok;
	struct fsb_cycle cy;
	const struct fsb_journal_rec **by_path;	/* sorted by (resolved, line) */
};

struct fsb_undo_chain {
	char store[PATH_MAX];
	unsigned *nums;
	size_t n;
	struct chain_cycle *v;
};

/* At most this many undos and redos are followed back: a longer chain is
 * taken for a change (--force then restores). */
#define CHAIN_STEPS 32

static int cmp_by_path(const void *a, const void *b)
{
	const struct fsb_journal_rec *x = *(const struct fsb_journal_rec *const *)a;
	const struct fsb_journal_rec *y = *(const struct fsb_journal_rec *const *)b;
	int d = strcmp(x->resolved, y->resolved);

	return d != 0 ? d : x->line < y->line ? -1 : x->line > y->line;
}

static struct chain_cycle *chain_get(struct fsb_undo_chain *ch, size_t i)
{
	struct chain_cycle *cc = &ch->v[i];
	char err[PATH_MAX + 256];

	if (cc->tried)
		return cc->ok ? cc : NULL;
	cc->tried = true;
	if (fsb_cycle_load(ch->store, ch->nums[i], &cc->cy, NULL, err, sizeof(err)) < 0)
		return NULL;
	cc->by_path = calloc(cc->cy.nrecs + 1, sizeof(*cc->by_path));
	if (cc->by_path == NULL) {
		fsb_cycle_free(&cc->cy);
		return NULL;
	}
	for (size_t k = 0; k < cc->cy.nrecs; k++)
		cc->by_path[k] = &cc->cy.recs[k];
	qsort(cc->by_path, cc->cy.nrecs, sizeof(*cc->by_path), cmp_by_path);
	cc->ok = true;
	return cc;
}

/* The first record of `path` in `cc` (the state before the cycle), or NULL. */
static const struct fsb_journal_rec *first_rec(const struct chain_cycle *cc, const char *path)
{
	size_t lo = 0, hi = cc->cy.nrecs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(cc->by_path[mid]->resolved, path) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < cc->cy.nrecs && strcmp(cc->by_path[lo]->resolved, path) == 0
		? cc->by_path[lo] : NULL;
}

static struct fsb_undo_chain *chain_open(const char *state_dir, const char *session)
{
	struct fsb_undo_chain *ch = calloc(1, sizeof(*ch));

	if (ch == NULL)
		return NULL;
	if (fsb_undo_store_dir(state_dir, session, ch->store, sizeof(ch->store)) < 0 ||
	    fsb_cycles_list(ch->store, &ch->nums, &ch->n) < 0 ||
	    (ch->v = calloc(ch->n + 1, sizeof(*ch->v))) == NULL) {
		fsb_undo_chain_free(ch);
		return NULL;
	}
	return ch;
}

bool fsb_undo_stands_for(struct fsb_undo_chain **chain, const char *state_dir,
			 const char *session, const char *path, bool exists,
			 const struct stat *st, const struct fsb_end_state *end)
{
	struct fsb_undo_chain *ch = *chain;
	struct ident id, a, b, target;
	size_t i;

	if (ch == NULL && (ch = *chain = chain_open(state_dir, session)) == NULL)
		return false;
	ident_of_end(end, &target);
	id = (struct ident){ .exists = exists, .type = exists ? fsb_file_type_name(st->st_mode) : "",
			     .has_ino = exists, .has_size = exists, .has_mtime = exists,
			     .ino = exists ? (uint64_t)st->st_ino : 0,
			     .size = exists ? (uint64_t)st->st_size : 0 };
	if (exists)
		id.mtime = st->st_mtim;
	/*
	 * Newest first: cycle i (an undo or a redo) left `id` at the path
	 * and put back the state cycle i-1 found there, which is what the
	 * cycle before that left, and so on. Each step is checked both ways:
	 * i began from what i-1 left, and left what i-1 began from (but for
	 * the inode, which a file written anew does not keep).
	 */
	for (i = ch->n; i >= 2 && ch->n - i < 2 * CHAIN_STEPS; i -= 2) {
		struct chain_cycle *k = chain_get(ch, i - 1), *src;
		const struct fsb_end_state *ke, *se;
		const struct fsb_journal_rec *kr, *sr;

		if (k == NULL || k->cy.state != FSB_CYCLE_SEALED ||
		    fsb_undo_kind_of(&k->cy) == FSB_UNDO_KIND_RESTORE)
			return false;
		src = chain_get(ch, i - 2);
		ke = fsb_cycle_end_state(&k->cy, path);
		kr = first_rec(k, path);
		if (src == NULL || ke == NULL || kr == NULL)
			return false;
		se = fsb_cycle_end_state(&src->cy, path);
		sr = first_rec(src, path);
		if (se == NULL || sr == NULL)
			return false;
		ident_of_end(ke, &a);
		if (!same_ident(&a, &id, true))
			return false;
		ident_of_prior(&kr->prior, &a);
		ident_of_end(se, &b);
		if (!same_ident(&a, &b, true))
			return false;
		ident_of_prior(&sr->prior, &id);
		ident_of_end(ke, &a);
		if (!same_ident(&a, &id, false))
			return false;
		if (same_ident(&id, &target, true))
			return true;
	}
	return false;
}

void fsb_undo_chain_free(struct fsb_undo_chain *ch)
{
	if (ch == NULL)
		return;
	for (size_t i = 0; ch->v != NULL && i < ch->n; i++) {
		if (ch->v[i].ok) {
			free(ch->v[i].by_path);
			fsb_cycle_free(&ch->v[i].cy);
		}
	}
	free(ch->v);
	free(ch->nums);
	free(ch);
}
