/*
 * mount_plan.c — the bubblewrap arguments of `fsbroker run` (DESIGN §7.1):
 * the host tree read-only, the trees the pack lets the broker modify bound
 * read-write, denyRead paths, the state dir and the session's runtime dir
 * masked, and only this run's scoped socket bound in.
 *
 * bwrap performs its mount options in the order given, each on top of what
 * the earlier ones built, so a later mount covers an earlier one at the same
 * or a deeper path. The plan is emitted in this order:
 *
 *   1. namespaces and process flags (no mounts);
 *   2. --ro-bind / /: the base, the host tree read-only at the same paths;
 *   3. --proc /proc, --dev /dev: over the base, for the new pid namespace;
 *   4. --tmpfs /run, then every entry of the host's /run bound back
 *      read-only except user/ (every session's runtime dir: keyrings, agent
 *      and bus sockets) and fsbroker/; then --dir /run/fsbroker. /run has to
 *      be a tmpfs because the base is read-only: bwrap cannot create the
 *      socket's mount point in it;
 *   5. the private tmp dirs (--tmpfs) and the read-write trees (--bind),
 *      together, shallowest first, so that a workspace under /tmp is bound
 *      on top of the private /tmp and not hidden by it;
 *   6. the masks (denyRead paths, the state dir, the core's socket dirs,
 *      $XDG_RUNTIME_DIR), after
 *      every read-write tree so that none can uncover them; a read-write
 *      tree inside a mask cannot be placed after it without showing what it
 *      hides, so such a pack is refused. Masked dirs are made read-only
 *      (--remount-ro), masked files are /dev/null bound read-only: neither
 *      can be read or written;
 *   7. the scoped socket, last among the binds, so nothing covers it;
 *   8. --remount-ro /run: the tmpfs made in step 4 read-only again;
 *   9. --chdir to the workspace.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mount_plan.h"
#include "scan_index.h"

/* A path the plan places, with the rule or reason that put it there. */
struct mp_path {
	char *path;
	char *rule;
	bool dir;
	bool emit;		/* false: hidden by step 4, named only for refusals */
	bool tmpfs;		/* in the rw list: a private tmp dir, not a bind */
};

struct mp_list {
	struct mp_path *v;
	size_t n, cap;
};

struct builder {
	struct fsb_policy *p;
	const struct fsb_mount_inputs *in;
	struct fsb_mount_plan *out;
	struct fsb_policy_summary sum;
	struct mp_list rw;	/* read-write trees and private tmp dirs */
	struct mp_list masks;
	struct mp_list run;	/* host /run entries bound back */
	size_t budget;
	char stopped_at[PATH_MAX];	/* where the entry bound was reached */
	size_t unscanned_unsaid;	/* masked whole beyond the first UNSCANNED_SAID */
	struct fsb_scan_index ix;	/* the scan's index (scan_index.c) */
	bool use_ix;			/* false: every directory is read */
};

/* How many directories masked whole for want of a scan are named one by
 * one on stderr; the rest in one line. */
#define UNSCANNED_SAID 5

#define REMEDY_UNREADABLE "make it readable to you (chmod u+rx) or set reads = \"broker\" " \
			  "in the pack"
#define REMEDY_BEYOND "set reads = \"broker\" in the pack to have every open there judged"

/* ------------------------------------------------------------------------ */
/* Paths. */

/* True when `path` is `dir` or lies beneath it. Both lexically clean. */
static bool is_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (strcmp(dir, "/") == 0)
		return path[0] == '/';
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static size_t depth_of(const char *path)
{
	size_t d = 0;

	for (; *path; path++)
		d += *path == '/';
	return d;
}

/* A copy without trailing slashes ("/" stays "/"). */
static char *clean_dup(const char *path)
{
	char *s = strdup(path);
	size_t n;

	if (s == NULL)
		return NULL;
	n = strlen(s);
	while (n > 1 && s[n - 1] == '/')
		s[--n] = '\0';
	return s;
}

/* ------------------------------------------------------------------------ */
/* Growing arrays. */

static int grow(void **v, size_t *cap, size_t n, size_t size)
{
	size_t ncap;
	void *nv;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 16;
	nv = realloc(*v, ncap * size);
	if (nv == NULL)
		return -ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}

static int list_add(struct mp_list *l, const char *path, const char *rule, bool dir, bool emit)
{
	struct mp_path *e;

	if (grow((void **)&l->v, &l->cap, l->n, sizeof(*l->v)) < 0)
		return -ENOMEM;
	e = &l->v[l->n];
	memset(e, 0, sizeof(*e));
	e->path = clean_dup(path);
	e->rule = strdup(rule);
	if (e->path == NULL || e->rule == NULL) {
		free(e->path);
		free(e->rule);
		return -ENOMEM;
	}
	e->dir = dir;
	e->emit = emit;
	l->n++;
	return 0;
}

static void list_free(struct mp_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].path);
		free(l->v[i].rule);
	}
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static int fail(struct builder *b, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct builder *b, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(b->out->why, sizeof(b->out->why), fmt, ap);
	va_end(ap);
	return err;
}

/* Append a formatted line to a list of the plan's (its notes, its
 * warnings). 0 or -ENOMEM. */
static int add_line(char ***v, size_t *cap, size_t *n, const char *fmt, va_list ap)
{
	char *s;

	if (grow((void **)v, cap, *n, sizeof(**v)) < 0 || vasprintf(&s, fmt, ap) < 0)
		return -ENOMEM;
	(*v)[(*n)++] = s;
	return 0;
}

static int note(struct builder *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int note(struct builder *b, const char *fmt, ...)
{
	struct fsb_mount_plan *o = b->out;
	va_list ap;
	int err;

	va_start(ap, fmt);
	err = add_line(&o->notes, &o->notes_cap, &o->nnotes, fmt, ap);
	va_end(ap);
	return err;
}

static int warn(struct builder *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* What the user must know before the command runs (cli_run prints it on
 * stderr, --explain with the plan): said once, by the plan. */
static int warn(struct builder *b, const char *fmt, ...)
{
	struct fsb_mount_plan *o = b->out;
	va_list ap;
	int err;

	va_start(ap, fmt);
	err = add_line(&o->warnings, &o->warnings_cap, &o->nwarnings, fmt, ap);
	va_end(ap);
	return err;
}

/* Start a step: a group of arguments with why it is there. */
static int step_begin(struct builder *b, const char *why)
{
	struct fsb_mount_plan *o = b->out;
	struct fsb_mount_step *s;

	if (grow((void **)&o->steps, &o->steps_cap, o->nsteps, sizeof(*o->steps)) < 0)
		return -ENOMEM;
	s = &o->steps[o->nsteps];
	s->first = o->argc;
	s->count = 0;
	s->why = strdup(why);
	if (s->why == NULL)
		return -ENOMEM;
	o->nsteps++;
	return 0;
}

/* Append arguments, up to a NULL, to the step begun last. */
static int step_argv(struct builder *b, ...) __attribute__((sentinel));

static int step_argv(struct builder *b, ...)
{
	struct fsb_mount_plan *o = b->out;
	const char *arg;
	va_list ap;
	int err = 0;

	va_start(ap, b);
	while ((arg = va_arg(ap, const char *)) != NULL) {
		/* One slot more than argc for the terminating NULL. */
		if (grow((void **)&o->argv, &o->argv_cap, o->argc + 1, sizeof(*o->argv)) < 0 ||
		    (o->argv[o->argc] = strdup(arg)) == NULL) {
			err = -ENOMEM;
			break;
		}
		o->argc++;
		o->argv[o->argc] = NULL;
		o->steps[o->nsteps - 1].count++;
	}
	va_end(ap);
	return err;
}

/* The NULL that ends the list is typed: a bare NULL may be a plain 0. */
#define step_args(b, ...) step_argv((b), __VA_ARGS__, (const char *)NULL)

/* step_begin() and step_args() in one. */
#define step(b, why, ...) (step_begin((b), (why)) ?: step_args((b), __VA_ARGS__))

/* ------------------------------------------------------------------------ */
/* Masks: denyRead paths that exist, found from the literal globs and by the
 * bounded scan. */

static int walk_children(struct builder *b, const char *dir, const struct stat *dst, int parent,
			 const char *name, unsigned depth);

/* What scan_entry() found at an entry, for the directory's index record:
 * a kind (enum fsb_scan_child_kind), 0 for an entry that is only counted. */
struct seen {
	char kind;
	char rule[600];
};

/* True when an exception of denyRead ("!glob") may match something beneath
 * `dir`: masking the whole directory would hide what the pack shows. */
static bool exceptions_within(const struct builder *b, const char *dir)
{
	const struct fsb_glob_list *l = &b->sum.deny_read;

	for (size_t i = 0; i < l->n; i++) {
		const struct fsb_glob_entry *e = &l->v[i];

		if (!e->except)
			continue;
		if (is_under(e->base, dir) && strcmp(e->base, dir) != 0)
			return true;
		if (is_under(dir, e->base) && e->kind != FSB_GLOB_EXACT)
			return true;
	}
	return false;
}

/* True when an emitted mask already hides `path`. */
static bool masked(const struct builder *b, const char *path)
{
	for (size_t i = 0; i < b->masks.n; i++) {
		const struct mp_path *m = &b->masks.v[i];

		if (m->dir ? is_under(path, m->path) : strcmp(path, m->path) == 0)
			return true;
	}
	return false;
}

/* The entry bound is spent: what is left is not looked at. The first place
 * it stopped is kept for the sentence that refuses the run. */
static bool budget_spent(struct builder *b, const char *where)
{
	if (b->out->scanned < b->budget)
		return false;
	if (!b->out->scan_truncated)
		snprintf(b->stopped_at, sizeof(b->stopped_at), "%s", where);
	b->out->scan_truncated = true;
	return true;
}

/* `dir` could not be looked into: `why`, and `remedy` what the user can do
 * about it. With reads = "mask" the masks are the only check on reads, so
 * what the scan did not see is masked whole: a denyRead file in it would
 * otherwise be readable. With reads = "broker" the supervisor judges every
 * open there, so the plan only says so. The first few are said on stderr;
 * the rest are counted (the explanation lists every mask). */
static int unscanned(struct builder *b, const char *dir, const char *why, const char *remedy)
{
	char rule[PATH_MAX + 300];
	int err;

	if (b->sum.reads != FSB_READS_MASK)
		return note(b, "the mask scan could not look into %s (%s): not masked, the "
			    "supervisor judges every open there (reads = \"broker\")", dir, why);
	if (masked(b, dir))
		return 0;	/* hidden already, and said */
	snprintf(rule, sizeof(rule), "%s, a directory the mask scan could not look into (%s)",
		 dir, why);
	if ((err = list_add(&b->masks, dir, rule, true, true)) < 0)
		return err;
	if (b->out->nwarnings >= UNSCANNED_SAID) {
		b->unscanned_unsaid++;
		return 0;
	}
	return warn(b, "%s is masked whole (empty and read-only in the sandbox): the mask scan "
		    "could not look into it (%s), so a denyRead file in it would have been "
		    "readable; %s", dir, why, remedy);
}

/* A symlink whose name denyRead hides: reading through it reads its target,
 * so the target is masked (bwrap would follow the link anyway). */
static int mask_symlink_target(struct builder *b, const char *path, const char *rule)
{
	char real[PATH_MAX], why[PATH_MAX + 600];
	struct stat st;

	if (realpath(path, real) == NULL || stat(real, &st) < 0)
		return 0;	/* dangling: nothing to read through it */
	if (masked(b, real))
		return 0;
	snprintf(why, sizeof(why), "%s (through the symlink %s)", rule, path);
	return list_add(&b->masks, real, why, S_ISDIR(st.st_mode), true);
}

static int note_entry_by_entry(struct builder *b, const char *path)
{
	return note(b, "%s is masked entry by entry, not as a whole: an exception of denyRead "
		    "applies beneath it", path);
}

/* Look at `path` (`st` its lstat; `name` in the directory `parent`, or
 * parent -1 for a place the scan starts): mask it when denyRead hides it,
 * else look beneath it. What it found goes to `seen` when not NULL. */
static int scan_entry(struct builder *b, const char *path, const struct stat *st, int parent,
		      const char *name, unsigned depth, struct seen *seen)
{
	struct seen local;
	int r;

	if (seen == NULL)
		seen = &local;
	seen->kind = 0;
	b->out->scanned++;
	r = fsb_policy_denied_read(b->p, path, seen->rule, sizeof(seen->rule));
	if (r < 0)
		return fail(b, -EINVAL, "the policy engine failed while planning the masks (at %s)", path);
	if (r == 0) {
		if (!S_ISDIR(st->st_mode))
			return 0;
		seen->kind = FSB_SCAN_SUBDIR;
		seen->rule[0] = '\0';
		return walk_children(b, path, st, parent, name, depth);
	}
	if (S_ISLNK(st->st_mode)) {
		seen->kind = FSB_SCAN_MATCH_LINK;
		return mask_symlink_target(b, path, seen->rule);
	}
	if (S_ISDIR(st->st_mode) && exceptions_within(b, path)) {
		/* The directory's names stay listable; what it holds is masked
		 * entry by entry, except what the exception lets through. */
		seen->kind = FSB_SCAN_SUBDIR_EXCEPT;
		r = note_entry_by_entry(b, path);
		return r < 0 ? r : walk_children(b, path, st, parent, name, depth);
	}
	seen->kind = S_ISDIR(st->st_mode) ? FSB_SCAN_MATCH_DIR : FSB_SCAN_MATCH_FILE;
	return list_add(&b->masks, path, seen->rule, S_ISDIR(st->st_mode), true);
}

/* `dir`'s record in the index (`d`), its stamps equal to the directory's:
 * what a read of it would find, without reading it. Its subdirectories are
 * each lstat'ed and checked against their own records in turn. */
static int replay(struct builder *b, const char *dir, const struct fsb_scan_dir *d,
		  unsigned depth)
{
	int err = 0;

	b->out->scanned += d->nentries;
	b->out->scan_reused++;
	for (size_t i = 0; i < d->nchildren && err == 0; i++) {
		const struct fsb_scan_child *c = &d->children[i];
		char child[PATH_MAX];
		struct stat st;
		int n;

		n = snprintf(child, sizeof(child), "%s%s%s", dir, strcmp(dir, "/") == 0 ? "" : "/",
			     c->name);
		if (n < 0 || (size_t)n >= sizeof(child)) {
			err = unscanned(b, dir, "it holds a path longer than PATH_MAX", REMEDY_BEYOND);
			break;
		}
		if (masked(b, child))
			continue;
		switch (c->kind) {
		case FSB_SCAN_MATCH_FILE:
		case FSB_SCAN_MATCH_DIR:
			err = list_add(&b->masks, child, c->rule, c->kind == FSB_SCAN_MATCH_DIR, true);
			continue;
		case FSB_SCAN_MATCH_LINK:
			/* Where the link leads may have changed outside the tree. */
			err = mask_symlink_target(b, child, c->rule);
			continue;
		default:
			break;
		}
		if (lstat(child, &st) < 0) {
			err = -errno;
			if (err == -ENOENT) {
				err = 0;
				continue;
			}
			err = unscanned(b, dir, strerror(-err), REMEDY_UNREADABLE);
			break;
		}
		if (!S_ISDIR(st.st_mode)) {
			/* Replaced since (a mount over it): judged afresh. */
			b->out->scanned--;
			err = scan_entry(b, child, &st, -1, NULL, depth + 1, NULL);
			continue;
		}
		if (c->kind == FSB_SCAN_SUBDIR_EXCEPT && (err = note_entry_by_entry(b, child)) < 0)
			break;
		err = walk_children(b, child, &st, -1, NULL, depth + 1);
	}
	if (err == 0)
		fsb_scan_index_keep(&b->ix, d);
	return err;
}

/* The children gathered for a directory's record. */
struct child_list {
	struct fsb_scan_child *v;
	size_t n, cap;
};

static int child_add(struct child_list *l, const char *name, const struct seen *seen)
{
	struct fsb_scan_child *c;

	if (grow((void **)&l->v, &l->cap, l->n, sizeof(*l->v)) < 0)
		return -ENOMEM;
	c = &l->v[l->n];
	c->kind = seen->kind;
	c->name = strdup(name);
	c->rule = strdup(seen->rule);
	if (c->name == NULL || c->rule == NULL) {
		free((char *)c->name);
		free((char *)c->rule);
		return -ENOMEM;
	}
	l->n++;
	return 0;
}

static void child_list_free(struct child_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free((char *)l->v[i].name);
		free((char *)l->v[i].rule);
	}
	free(l->v);
}

/* The entries of the directory `dir` (`dst` its lstat), opened as `name` in
 * `parent` (or by its path when parent is -1): from the index when its
 * record still holds, else read. Anything that keeps the scan from seeing
 * all of them makes the directory unscanned(), except its vanishing; a
 * directory read in full gets a record, one read in part never does. */
static int walk_children(struct builder *b, const char *dir, const struct stat *dst, int parent,
			 const char *name, unsigned depth)
{
	const struct fsb_scan_dir *rec;
	struct child_list kids = { 0 };
	uint64_t nentries = 0;
	char why[300];
	struct dirent *de;
	struct stat fst;
	bool whole;
	DIR *d;
	int fd, err = 0;

	if (depth >= FSB_MOUNT_SCAN_MAX_DEPTH) {
		snprintf(why, sizeof(why), "it lies %d directories below where the scan started, "
			 "its depth bound", FSB_MOUNT_SCAN_MAX_DEPTH);
		return unscanned(b, dir, why, REMEDY_BEYOND);
	}
	/* Beyond the entry bound, the directory is read: the bound stops the
	 * scan at the same entry as without the index. */
	if (b->use_ix && (rec = fsb_scan_index_find(&b->ix, dir, dst)) != NULL &&
	    b->out->scanned + rec->nentries <= b->budget)
		return replay(b, dir, rec, depth);
	/* O_NOFOLLOW: the scan never leaves the tree through a symlink. */
	fd = parent < 0 ? open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
			: openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		/* Gone since it was looked at: there is nothing left to read. */
		return err == -ENOENT ? 0 : unscanned(b, dir, strerror(-err), REMEDY_UNREADABLE);
	}
	/* Recorded only when what is read is what was stat'ed, on a file
	 * system whose stamps can be trusted. */
	whole = b->use_ix && fstat(fd, &fst) == 0 && fst.st_dev == dst->st_dev &&
		fst.st_ino == dst->st_ino && fsb_scan_index_fs_ok(&b->ix, fd, (uint64_t)fst.st_dev);
	d = fdopendir(fd);
	if (d == NULL) {
		err = -errno;
		close(fd);
		return unscanned(b, dir, strerror(-err), REMEDY_UNREADABLE);
	}
	for (;;) {
		char child[PATH_MAX];
		struct seen seen;
		struct stat st;
		int n;

		errno = 0;
		if ((de = readdir(d)) == NULL) {
			err = -errno;
			if (err != 0) {
				whole = false;
				err = unscanned(b, dir, strerror(-err), REMEDY_UNREADABLE);
			}
			break;
		}
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		/* An entry left unlooked at: the entry bound is reached. */
		if (budget_spent(b, dir)) {
			whole = false;
			break;
		}
		n = snprintf(child, sizeof(child), "%s%s%s", dir,
			     strcmp(dir, "/") == 0 ? "" : "/", de->d_name);
		if (n < 0 || (size_t)n >= sizeof(child)) {
			/* bwrap could not be given a mask there either. */
			whole = false;
			err = unscanned(b, dir, "it holds a path longer than PATH_MAX", REMEDY_BEYOND);
			break;
		}
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			err = -errno;
			whole = false;
			if (err == -ENOENT) {
				err = 0;
				continue;
			}
			/* Listable but not searchable (r without x): none of its
			 * entries can be looked at. */
			err = unscanned(b, dir, strerror(-err), REMEDY_UNREADABLE);
			break;
		}
		/* Hidden by another mask (the state dir, a link's target):
		 * what the record would say depends on that mask. */
		if (masked(b, child)) {
			whole = false;
			continue;
		}
		nentries++;
		if ((err = scan_entry(b, child, &st, dirfd(d), de->d_name, depth + 1, &seen)) < 0)
			break;
		if (whole && seen.kind != 0 && child_add(&kids, de->d_name, &seen) < 0)
			whole = false;
	}
	closedir(d);
	if (err == 0 && whole)
		fsb_scan_index_add(&b->ix, dir, dst, nentries, kids.v, kids.n);
	child_list_free(&kids);
	return err;
}

/* True when the pack lets the broker change something at or above `path`
 * (its modes included): what cannot be reached now could be made so. */
static bool changeable_above(const struct builder *b, const char *path)
{
	const struct fsb_glob_list *lists[] = { &b->sum.modify, &b->sum.ask };

	for (size_t k = 0; k < 2; k++)
		for (size_t i = 0; i < lists[k]->n; i++)
			if (!lists[k]->v[i].except && is_under(path, lists[k]->v[i].base))
				return true;
	return false;
}

/* A place the scan starts (a literal denyRead path, the workspace, a glob's
 * base) that cannot be looked at for a reason other than not existing: a
 * directory above it is not searchable. The command cannot reach it either
 * (it runs as the same user, without capabilities) unless the pack lets it
 * change a directory above it (its mode, say); then, with reads = "mask",
 * the nearest directory above it that can be looked at is masked whole, as
 * one the walk cannot look into. */
static int unreachable_start(struct builder *b, const char *path, int err)
{
	char dir[PATH_MAX];
	struct stat st;
	char *slash;

	if (b->sum.reads != FSB_READS_MASK)
		return note(b, "the mask scan cannot look at %s (%s): the supervisor judges "
			    "every open there (reads = \"broker\")", path, strerror(-err));
	if (!changeable_above(b, path))
		return note(b, "the mask scan cannot look at %s (%s): not masked, the "
			    "sandbox cannot reach it either", path, strerror(-err));
	snprintf(dir, sizeof(dir), "%s", path);
	while ((slash = strrchr(dir, '/')) != NULL && slash != dir) {
		*slash = '\0';
		if (lstat(dir, &st) == 0)
			return S_ISDIR(st.st_mode) ? unscanned(b, dir, strerror(-err), REMEDY_UNREADABLE)
						   : 0;
	}
	return fail(b, -EACCES, "the mask scan cannot look at %s (%s), so a denyRead file "
		    "there could not be masked: make it reachable to you or set reads = "
		    "\"broker\" in the pack", path, strerror(-err));
}

/* A place the scan starts. */
static int mask_walk(struct builder *b, const char *path)
{
	struct stat st;
	int err;

	if (budget_spent(b, path))
		return 0;
	if (lstat(path, &st) < 0) {
		err = -errno;
		if (err == -ENOENT || err == -ENOTDIR)
			return 0;
		return unreachable_start(b, path, err);
	}
	if (masked(b, path))
		return 0;
	return scan_entry(b, path, &st, -1, NULL, 0, NULL);
}

/* The index of an earlier scan under the state dir, when one is kept. */
static int open_index(struct builder *b)
{
	const struct fsb_mount_inputs *in = b->in;
	size_t klen;
	char *key;
	int err;

	if (in->scan_index_dir == NULL)
		return 0;
	if ((err = fsb_scan_index_key(&b->sum, in->workspace, b->budget, FSB_MOUNT_SCAN_MAX_DEPTH,
				      &key, &klen)) < 0)
		return err;
	if ((err = fsb_scan_index_open(&b->ix, in->scan_index_dir, in->workspace, key, klen)) < 0)
		return err;
	b->use_ix = b->ix.file[0] != '\0';
	if (b->ix.why_unused[0] != '\0')
		return note(b, "the mask scan's index %s was not used (%s): every directory is read",
			    b->use_ix ? b->ix.file : "under the state dir", b->ix.why_unused);
	return 0;
}

/* Write the index of this scan, once it saw everything it had to. */
static int save_index(struct builder *b)
{
	int err;

	if (!b->use_ix || b->out->scan_truncated)
		return 0;
	if ((err = fsb_scan_index_save(&b->ix)) < 0)
		return note(b, "the mask scan's index %s could not be written (%s): the next run "
			    "reads every directory again", b->ix.file, strerror(-err));
	return 0;
}

/* Masks from literal denyRead globs (their base is the path), then, with
 * reads = "mask", the scan of the workspace and of the other globs' bases. */
static int plan_masks(struct builder *b)
{
	const struct fsb_glob_list *l = &b->sum.deny_read;
	int err;

	for (size_t i = 0; i < l->n; i++) {
		const struct fsb_glob_entry *e = &l->v[i];

		if (e->except || e->kind == FSB_GLOB_PATTERN)
			continue;
		if ((err = mask_walk(b, e->base)) < 0)
			return err;
	}
	if (b->sum.reads != FSB_READS_MASK)
		goto bound;
	if ((err = mask_walk(b, b->in->workspace)) < 0)
		return err;
	/* A pattern rooted below "/" ("~/.config/<star>/token"): its base is
	 * scanned too, with what is left of the budget. "**" globs rooted at
	 * "/" are found only where the scan looks (the workspace). */
	for (size_t i = 0; i < l->n; i++) {
		const struct fsb_glob_entry *e = &l->v[i];

		if (e->except || e->kind != FSB_GLOB_PATTERN || strcmp(e->base, "/") == 0 ||
		    is_under(e->base, b->in->workspace))
			continue;
		if ((err = mask_walk(b, e->base)) < 0)
			return err;
	}
bound:
	if (b->unscanned_unsaid > 0 &&
	    (err = warn(b, "%zu more directories the mask scan could not look into are masked "
			"whole too (fsbroker run --explain lists them)", b->unscanned_unsaid)) < 0)
		return err;
	if (!b->out->scan_truncated)
		return 0;
	/* Masking what lies beyond the entry bound would hide whatever
	 * readdir's order left last, a different part of the tree from run to
	 * run: a refusal the user can act on is the predictable choice. */
	if (b->sum.reads == FSB_READS_MASK)
		return fail(b, -E2BIG, "the mask scan reached its bound of %zu entries at %s "
			    "before it had looked at everything, so a denyRead file beyond it "
			    "would be readable: raise the bound (fsbroker run --scan-max-entries N) "
			    "or set reads = \"broker\" in the pack", b->budget, b->stopped_at);
	return note(b, "the mask scan stopped after %zu entries at %s: denyRead matches beyond "
		    "it are not masked, the supervisor judges every open (reads = \"broker\")",
		    b->out->scanned, b->stopped_at);
}

/* ------------------------------------------------------------------------ */
/* Read-write trees. */

static int cmp_depth(const void *a, const void *b)
{
	const struct mp_path *x = a, *y = b;
	size_t dx = depth_of(x->path), dy = depth_of(y->path);

	if (dx != dy)
		return dx < dy ? -1 : 1;
	/* A private tmp dir before a bind at the same depth. */
	if (x->tmpfs != y->tmpfs)
		return x->tmpfs ? -1 : 1;
	return strcmp(x->path, y->path);
}

static bool is_private_tmp(const struct builder *b, const char *path)
{
	for (size_t i = 0; i < b->rw.n; i++)
		if (b->rw.v[i].tmpfs && strcmp(b->rw.v[i].path, path) == 0)
			return true;
	return false;
}

/* Refuse a tree the broker may modify that lies inside something hidden. */
static int check_inside_mask(struct builder *b, const struct fsb_glob_entry *e)
{
	for (size_t i = 0; i < b->masks.n; i++) {
		const struct mp_path *m = &b->masks.v[i];

		if (m->dir ? is_under(e->base, m->path) : strcmp(e->base, m->path) == 0)
			return fail(b, -EPERM, "%s lies inside %s: the sandbox cannot write it",
				    e->rule, m->rule);
	}
	return 0;
}

static int add_rw_list(struct builder *b, const struct fsb_glob_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		const struct fsb_glob_entry *e = &l->v[i];
		struct stat st;
		bool dup = false;
		int err;

		if (e->except)
			continue;
		if ((err = check_inside_mask(b, e)) < 0)
			return err;
		if (is_private_tmp(b, e->base)) {
			err = note(b, "%s: %s is the sandbox's private tmp, not the host's", e->rule, e->base);
			if (err < 0)
				return err;
			continue;
		}
		if (stat(e->base, &st) < 0 || !S_ISDIR(st.st_mode)) {
			/* bwrap needs an existing directory to bind; a missing one
			 * could only be created through a tree above it. */
			err = note(b, "%s: %s is not bound read-write: %s", e->rule, e->base,
				   errno == ENOENT ? "it does not exist" : "it is not a directory");
			if (err < 0)
				return err;
			continue;
		}
		for (size_t j = 0; j < b->rw.n; j++)
			dup |= strcmp(b->rw.v[j].path, e->base) == 0;
		if (!dup && (err = list_add(&b->rw, e->base, e->rule, true, true)) < 0)
			return err;
	}
	return 0;
}

/* True when a bind of rw[i] adds nothing: an earlier bind covers it and no
 * private tmp dir lies between the two. */
static bool rw_redundant(const struct builder *b, size_t i)
{
	const struct mp_path *x = &b->rw.v[i];

	if (x->tmpfs)
		return false;
	for (size_t j = i; j-- > 0;) {
		const struct mp_path *y = &b->rw.v[j];

		if (is_under(x->path, y->path))
			return !y->tmpfs;
	}
	return false;
}

/* Whether the host's `path` shows in the sandbox once steps 2-5 are done:
 * the deepest of their mounts above it decides. */
static bool host_visible(const struct builder *b, const char *path)
{
	size_t best = 0;
	bool visible = true;	/* the base, "/" */

	if (is_under(path, "/run")) {
		best = 1;
		visible = false;
		for (size_t i = 0; i < b->run.n; i++)
			if (is_under(path, b->run.v[i].path))
				visible = true, best = 2;
	}
	for (size_t i = 0; i < b->rw.n; i++) {
		const struct mp_path *m = &b->rw.v[i];
		size_t d = depth_of(m->path);

		if (is_under(path, m->path) && d >= best) {
			best = d;
			visible = !m->tmpfs;
		}
	}
	return visible;
}

/* ------------------------------------------------------------------------ */
/* Steps. */

static int emit_run(struct builder *b)
{
	struct dirent *de;
	DIR *d;
	int fd, err;

	err = step(b, "a fresh /run, then the host's entries in it again, read-only, except user/ "
		   "and fsbroker/ (the base is read-only: the socket's mount point is made here)",
		   "--tmpfs", "/run");
	if (err < 0)
		return err;
	fd = open("/run", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = fd < 0 ? NULL : fdopendir(fd);
	if (d == NULL) {
		if (fd >= 0)
			close(fd);
	} else {
		while (err == 0 && (de = readdir(d)) != NULL) {
			char path[PATH_MAX], target[PATH_MAX];
			ssize_t n;

			if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
			    strcmp(de->d_name, "user") == 0 || strcmp(de->d_name, "fsbroker") == 0)
				continue;
			if ((size_t)snprintf(path, sizeof(path), "/run/%s", de->d_name) >= sizeof(path))
				continue;
			n = readlinkat(fd, de->d_name, target, sizeof(target) - 1);
			if (n >= 0) {
				target[n] = '\0';
				err = step_args(b, "--symlink", target, path);
				continue;
			}
			/* -try: an entry that goes away before the launch is no
			 * reason to fail it. */
			err = step_args(b, "--ro-bind-try", path, path);
			if (err == 0)
				err = list_add(&b->run, path, "/run", true, true);
		}
		closedir(d);
	}
	if (err == 0)
		err = step(b, "/run/user empty: no session's runtime dir (keyrings, agent and bus sockets)",
			   "--dir", "/run/user");
	if (err == 0)
		err = step(b, "the mount point of the scoped socket", "--dir", FSB_MOUNT_SOCKET_DIR);
	return err;
}

static int emit_rw(struct builder *b)
{
	int err = 0;

	for (size_t i = 0; i < b->rw.n && err == 0; i++) {
		const struct mp_path *m = &b->rw.v[i];
		char why[1200];

		if (m->tmpfs) {
			err = step(b, "a private, empty tmp", "--tmpfs", m->path);
			continue;
		}
		if (rw_redundant(b, i))
			continue;
		snprintf(why, sizeof(why), "read-write, so that the broker's writes can land (%s)", m->rule);
		err = step(b, why, "--bind", m->path, m->path);
	}
	return err;
}

static int cmp_path_depth(const void *a, const void *b)
{
	const struct mp_path *x = a, *y = b;
	size_t dx = depth_of(x->path), dy = depth_of(y->path);

	if (dx != dy)
		return dx < dy ? -1 : 1;
	return strcmp(x->path, y->path);
}

static int emit_masks(struct builder *b)
{
	int err = 0;

	qsort(b->masks.v, b->masks.n, sizeof(*b->masks.v), cmp_path_depth);
	for (size_t i = 0; i < b->masks.n && err == 0; i++) {
		const struct mp_path *m = &b->masks.v[i];
		bool covered = false;
		char why[1200];

		if (!m->emit)
			continue;
		/* Shallowest first: a mask inside an earlier masked dir adds
		 * nothing, and its mount point could not be made there. */
		for (size_t j = 0; j < i && !covered; j++)
			covered = b->masks.v[j].emit && b->masks.v[j].dir &&
				  is_under(m->path, b->masks.v[j].path);
		if (covered)
			continue;
		if (!host_visible(b, m->path)) {
			err = note(b, "%s (%s) is not masked: the sandbox does not see it anyway",
				   m->path, m->rule);
			continue;
		}
		snprintf(why, sizeof(why), "masked: %s", m->rule);
		if (m->dir)
			err = step(b, why, "--tmpfs", m->path, "--remount-ro", m->path);
		else
			err = step(b, why, "--ro-bind", "/dev/null", m->path);
	}
	return err;
}

/* ------------------------------------------------------------------------ */

static int check_inputs(struct builder *b)
{
	const struct fsb_mount_inputs *in = b->in;
	struct stat st;

	if (in->workspace == NULL || in->workspace[0] != '/')
		return fail(b, -EINVAL, "the workspace %s%s%s is not an absolute path",
			    in->workspace ? "'" : "", in->workspace ? in->workspace : "(none)",
			    in->workspace ? "'" : "");
	if (stat(in->workspace, &st) < 0)
		return fail(b, -EINVAL, "the workspace %s cannot be used: %s", in->workspace,
			    strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return fail(b, -EINVAL, "the workspace %s is not a directory", in->workspace);
	if (strcmp(in->workspace, "/") == 0)
		return fail(b, -EINVAL, "the workspace cannot be /");
	if (in->home != NULL && in->home[0] == '/' && is_under(in->home, in->workspace))
		return fail(b, -EINVAL, "the workspace %s holds the home directory %s: it cannot be "
			    "bound read-write", in->workspace, in->home);
	if (in->state_dir != NULL && in->state_dir[0] != '/')
		return fail(b, -EINVAL, "the state dir '%s' is not an absolute path", in->state_dir);
	if (in->scoped_socket != NULL) {
		if (in->scoped_socket[0] != '/')
			return fail(b, -EINVAL, "the scoped socket '%s' is not an absolute path",
				    in->scoped_socket);
		if (stat(in->scoped_socket, &st) < 0)
			return fail(b, -EINVAL, "the scoped socket %s cannot be used: %s",
				    in->scoped_socket, strerror(errno));
		if (!S_ISSOCK(st.st_mode))
			return fail(b, -EINVAL, "the scoped socket %s is not a socket", in->scoped_socket);
	}
	return 0;
}

/*
 * A directory of the core's sockets. Through its main socket a sandbox
 * would be served in the host's view, through a sibling run's scoped socket
 * as that run: hidden wherever the host put it, and with the directory
 * every socket made there later. The real path, as bwrap follows links.
 */
static int add_socket_dir(struct builder *b, const char *dir)
{
	char real[PATH_MAX], why[PATH_MAX + 100];
	struct stat st;

	if (dir[0] != '/')
		return fail(b, -EINVAL, "the core's socket dir '%s' is not an absolute path", dir);
	if (realpath(dir, real) == NULL || stat(real, &st) < 0 || !S_ISDIR(st.st_mode))
		return note(b, "the core's socket dir %s does not exist: nothing to hide", dir);
	/* A tmpfs over it would hide the workspace too; leaving it would hand
	 * the sandbox the core's sockets. */
	if (strcmp(real, "/") == 0 || is_under(b->in->workspace, real))
		return fail(b, -EPERM, "the core's socket dir %s holds the workspace %s: the "
			    "sandbox cannot be kept from the core's sockets without hiding the "
			    "workspace; give the core's socket a directory of its own outside "
			    "the workspace (fsbroker serve --socket /tmp/fsb-%u/broker.sock)",
			    real, b->in->workspace, (unsigned)b->in->uid);
	if (masked(b, real))
		return 0;
	snprintf(why, sizeof(why), "the core's socket dir %s (its socket and every run's)", real);
	return list_add(&b->masks, real, why, true, true);
}

static int add_socket_dirs(struct builder *b)
{
	const struct fsb_mount_inputs *in = b->in;
	char dir[PATH_MAX];
	int err;

	for (size_t i = 0; i < in->nsocket_dirs; i++)
		if ((err = add_socket_dir(b, in->socket_dirs[i])) < 0)
			return err;
	if (in->scoped_socket == NULL)
		return 0;
	snprintf(dir, sizeof(dir), "%s", in->scoped_socket);
	return add_socket_dir(b, dirname(dir));
}

/* What must stay hidden whatever the pack says: the state dir, the core's
 * socket dirs and the runtime dirs. Added before the denyRead masks so
 * that they name it. */
static int add_fixed_masks(struct builder *b)
{
	const struct fsb_mount_inputs *in = b->in;
	char runtime[64], why[PATH_MAX + 100];
	const char *rt = in->runtime_dir;
	struct stat st;
	int err;

	/* Not emitted: step 4 leaves /run/user empty. Named for refusals. */
	if ((err = list_add(&b->masks, "/run/user", "/run/user (every session's runtime dir)",
			    true, false)) < 0)
		return err;
	if (in->state_dir != NULL) {
		snprintf(why, sizeof(why), "the state dir %s", in->state_dir);
		if (stat(in->state_dir, &st) == 0 && S_ISDIR(st.st_mode))
			err = list_add(&b->masks, in->state_dir, why, true, true);
		else
			err = note(b, "the state dir %s does not exist yet: nothing to hide", in->state_dir);
		if (err < 0)
			return err;
	}
	if ((err = add_socket_dirs(b)) < 0)
		return err;
	if (rt == NULL || rt[0] != '/') {
		snprintf(runtime, sizeof(runtime), "/run/user/%u", (unsigned)in->uid);
		rt = runtime;
	}
	if (is_under(rt, "/run/user"))
		return 0;
	snprintf(why, sizeof(why), "$XDG_RUNTIME_DIR %s", rt);
	if (stat(rt, &st) == 0 && S_ISDIR(st.st_mode))
		return list_add(&b->masks, rt, why, true, true);
	return 0;
}

/* The private tmp dirs: /tmp, and ${tmp} when it is elsewhere. */
static int add_private_tmps(struct builder *b)
{
	const char *tmp = b->in->tmp;
	struct stat st;
	int err;

	if ((err = list_add(&b->rw, "/tmp", "private tmp", true, true)) < 0)
		return err;
	b->rw.v[b->rw.n - 1].tmpfs = true;
	if (tmp == NULL || tmp[0] != '/' || is_under(tmp, "/tmp") || strcmp(tmp, "/") == 0)
		return 0;
	if (masked(b, tmp) || stat(tmp, &st) < 0 || !S_ISDIR(st.st_mode))
		return 0;
	if ((err = list_add(&b->rw, tmp, "private tmp", true, true)) < 0)
		return err;
	b->rw.v[b->rw.n - 1].tmpfs = true;
	return 0;
}

int fsb_mount_plan_build(struct fsb_policy *p, const struct fsb_mount_inputs *in,
			 struct fsb_mount_plan *out)
{
	struct builder b = { .p = p, .in = in, .out = out };
	char err_text[512];
	int err;

	memset(out, 0, sizeof(*out));
	b.budget = in->scan_max_entries ? in->scan_max_entries : FSB_MOUNT_SCAN_MAX_ENTRIES;
	if ((err = check_inputs(&b)) < 0)
		return err;
	if ((err = fsb_policy_summary(p, &b.sum, err_text, sizeof(err_text))) < 0) {
		fail(&b, err, "cannot read the pack's summary: %s", err_text);
		goto done;
	}
	if ((err = add_fixed_masks(&b)) < 0 || (err = open_index(&b)) < 0 ||
	    (err = plan_masks(&b)) < 0 || (err = save_index(&b)) < 0)
		goto done;
	if ((err = add_private_tmps(&b)) < 0)
		goto done;
	if ((err = add_rw_list(&b, &b.sum.modify)) < 0 || (err = add_rw_list(&b, &b.sum.ask)) < 0)
		goto done;
	qsort(b.rw.v, b.rw.n, sizeof(*b.rw.v), cmp_depth);

	err = step(&b, "own user and pid namespaces, none further inside; ends with its parent; "
		   "no controlling terminal (TIOCSTI)",
		   "--unshare-user", "--unshare-pid", "--die-with-parent", "--new-session",
		   "--disable-userns");
	/* Root on the host is root inside too, and its capabilities would let
	 * it chroot, mknod or read past the modes the core relies on. */
	if (err == 0)
		err = step(&b, "no capabilities, whoever runs it (root included); an IPC "
			   "namespace of its own", "--cap-drop", "ALL", "--unshare-ipc");
	/* bwrap brings the new namespace's loopback up: 127.0.0.1 inside is
	 * the sandbox's own, not the host's. */
	if (err == 0 && in->network_none)
		err = step(&b, "network = \"none\": a network namespace of its own, with only a "
			   "loopback", "--unshare-net");
	if (err == 0)
		err = step(&b, "the host tree, read-only at the same paths", "--ro-bind", "/", "/");
	if (err == 0)
		err = step(&b, "a /proc of the sandbox's pid namespace and a minimal /dev",
			   "--proc", "/proc", "--dev", "/dev");
	if (err == 0)
		err = emit_run(&b);
	if (err == 0)
		err = emit_rw(&b);
	if (err == 0)
		err = emit_masks(&b);
	if (err == 0 && in->scoped_socket != NULL)
		err = step(&b, "this run's scoped socket, the only way to the broker",
			   "--bind", in->scoped_socket, FSB_MOUNT_SOCKET);
	if (err == 0 && in->scoped_socket == NULL)
		err = note(&b, "no scoped socket given: none is bound at " FSB_MOUNT_SOCKET);
	if (err == 0 && in->init_binary != NULL)
		err = step(&b, "fsbroker-init, run from here (its own dir may be hidden inside)",
			   "--ro-bind", in->init_binary, FSB_MOUNT_INIT);
	if (err == 0 && in->shell_binary != NULL)
		err = step(&b, "the patched zsh of --shell, run from here",
			   "--ro-bind", in->shell_binary, FSB_MOUNT_SHELL);
	if (err == 0 && in->clients_dir != NULL)
		err = step(&b, "the brokered toybox and its shims, first on --shell's PATH",
			   "--ro-bind", in->clients_dir, FSB_MOUNT_CLIENTS);
	if (err == 0)
		err = step(&b, "/run read-only again", "--remount-ro", "/run");
	if (err == 0)
		err = step(&b, "start in the workspace", "--chdir", in->workspace);
done:
	if (err < 0 && out->why[0] == '\0')
		fail(&b, err, "out of memory building the mount plan");
	fsb_policy_summary_free(&b.sum);
	fsb_scan_index_free(&b.ix);
	list_free(&b.rw);
	list_free(&b.masks);
	list_free(&b.run);
	return err;
}

void fsb_mount_plan_free(struct fsb_mount_plan *plan)
{
	if (plan == NULL)
		return;
	for (size_t i = 0; i < plan->argc; i++)
		free(plan->argv[i]);
	free(plan->argv);
	for (size_t i = 0; i < plan->nsteps; i++)
		free(plan->steps[i].why);
	free(plan->steps);
	for (size_t i = 0; i < plan->nnotes; i++)
		free(plan->notes[i]);
	free(plan->notes);
	for (size_t i = 0; i < plan->nwarnings; i++)
		free(plan->warnings[i]);
	free(plan->warnings);
	plan->argv = NULL;
	plan->steps = NULL;
	plan->notes = NULL;
	plan->warnings = NULL;
	plan->argc = plan->nsteps = plan->nnotes = plan->nwarnings = 0;
	plan->argv_cap = plan->steps_cap = plan->notes_cap = plan->warnings_cap = 0;
}

/* Print `s` so that a shell reads it back as one word. */
static void put_quoted(const char *s, FILE *f)
{
	if (s[0] != '\0' && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
				   "0123456789/._-+=:,@%") == strlen(s)) {
		fputs(s, f);
		return;
	}
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputs("'\\''", f);
		else
			fputc(*s, f);
	}
	fputc('\'', f);
}

int fsb_mount_plan_explain(const struct fsb_mount_plan *plan, FILE *f)
{
	fprintf(f, "bubblewrap mount plan, in the order bwrap applies it (later mounts cover earlier ones):\n");
	for (size_t i = 0; i < plan->nsteps; i++) {
		const struct fsb_mount_step *s = &plan->steps[i];

		fprintf(f, "  # %s\n  ", s->why);
		for (size_t j = 0; j < s->count; j++) {
			if (j > 0)
				fputc(' ', f);
			put_quoted(plan->argv[s->first + j], f);
		}
		fputc('\n', f);
	}
	fprintf(f, "mask scan: %zu entries looked at%s; %zu directories unchanged since the "
		"last scan, not read again\n", plan->scanned,
		plan->scan_truncated ? ", stopped at its bound" : "", plan->scan_reused);
	for (size_t i = 0; i < plan->nwarnings; i++)
		fprintf(f, "warning: %s\n", plan->warnings[i]);
	for (size_t i = 0; i < plan->nnotes; i++)
		fprintf(f, "note: %s\n", plan->notes[i]);
	return ferror(f) ? -EIO : 0;
}
