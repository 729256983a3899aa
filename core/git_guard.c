/*
 * git_guard.c — before a cycle seals, find every git directory it touched
 * or made, whatever its name, and undo each hook it planted and each config
 * key that makes git run a program (git_guard.h). The pack refuses what it
 * can see at the call (a new file under .git/hooks/); config content goes
 * through a granted fd after the grant, and a directory named `src` is a
 * git directory only once HEAD, objects/ and refs/ are in it, so only the
 * end of the cycle can tell.
 *
 * Everything here runs in the core's own view on the real paths the
 * journal holds, and never follows a symlink (fsb_at_*): the sandbox may
 * have planted one anywhere beneath the workspace.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>

#include "at.h"
#include "backup_read.h"
#include "broker.h"
#include "git_config.h"
#include "git_guard.h"
#include "log.h"

/* A config file bigger than this is not read: it is undone whole. */
#define CONFIG_MAX (1u << 20)
/* How deep and how wide a directory renamed in is searched for git
 * directories. */
#define SCAN_DEPTH 12
#define SCAN_ENTRIES 20000

/* What an undo did. */
enum { PUT_BACK = 1, PUT_REMOVED = 2 };

struct guard {
	const char *store;
	const struct fsb_cycle *cy;
	int root;			/* "/", O_PATH */
	char **dirs;			/* git directories to look at */
	size_t ndirs, capdirs;
	struct fsb_git_undone *out;
	size_t scanned;			/* entries seen by scan() */
};

/* ---- small helpers -------------------------------------------------------- */

static int push(char ***v, size_t *n, size_t *cap, const char *s)
{
	char *d;

	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 32;
		char **g = realloc(*v, c * sizeof(**v));

		if (g == NULL)
			return -ENOMEM;
		*v = g;
		*cap = c;
	}
	if ((d = strdup(s)) == NULL)
		return -ENOMEM;
	(*v)[(*n)++] = d;
	return 0;
}

static void report(struct guard *g, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void report(struct guard *g, const char *path, const char *fmt, ...)
{
	struct fsb_git_undone *u = g->out;
	char why[512], **p, **r;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	p = realloc(u->path, (u->n + 1) * sizeof(*p));
	if (p != NULL)
		u->path = p;
	r = realloc(u->reason, (u->n + 1) * sizeof(*r));
	if (r != NULL)
		u->reason = r;
	if (p == NULL || r == NULL)
		return;
	if ((u->path[u->n] = strdup(path)) == NULL)
		return;
	if ((u->reason[u->n] = strdup(why)) == NULL) {
		free(u->path[u->n]);
		return;
	}
	u->n++;
}

/* `a` is `p` or a directory above it. */
static bool at_or_above(const char *a, const char *p)
{
	size_t n = strlen(a);

	if (strcmp(a, "/") == 0)
		return true;
	return strncmp(a, p, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

static bool lstat_at(struct guard *g, const char *path, struct stat *st)
{
	const char *name;
	int pfd = fsb_at_open_parent(g->root, path, &name);
	bool ok;

	if (pfd < 0)
		return false;
	ok = fstatat(pfd, name, st, AT_SYMLINK_NOFOLLOW) == 0;
	close(pfd);
	return ok;
}

/* ---- what the cycle did to a path ----------------------------------------- */

enum change { UNCHANGED, CHANGED, NEW };

/*
 * What the cycle did to what is at `path` now, read back through the
 * journal: UNCHANGED (no record of it or above it: it is as it was at the
 * start), NEW (it, or a directory above it, did not exist at the start
 * under the name it had then), or CHANGED (*first: its first record, whose
 * prior state is the one at the start). A directory renamed into place
 * carries the path back to its old name.
 */
static enum change change_of(const struct guard *g, const char *path,
			     const struct fsb_journal_rec **first)
{
	char cur[PATH_MAX * 2];
	const struct fsb_cycle *cy = g->cy;

	*first = NULL;
	snprintf(cur, sizeof(cur), "%s", path);
	for (size_t j = cy->nrecs; j-- > 0;) {
		const struct fsb_journal_rec *r = &cy->recs[j];
		size_t rl = strlen(r->resolved);

		if (strcmp(r->resolved, cur) == 0) {
			*first = r;
			continue;
		}
		if (!at_or_above(r->resolved, cur))
			continue;
		/* A directory above it. */
		if (strcmp(r->op, "rename-to") == 0) {
			const struct fsb_journal_rec *from;
			char moved[PATH_MAX * 2];
			size_t k = j;

			/* The pair's rename-from, past the state of the target's
			 * directory the store journals in between ("entries"). */
			while (k > 0 && strcmp(cy->recs[k - 1].op, "entries") == 0)
				k--;
			from = k > 0 ? &cy->recs[k - 1] : NULL;
			if (from == NULL || strcmp(from->op, "rename-from") != 0 ||
			    strcmp(from->tool_call, r->tool_call) != 0)
				return NEW;
			snprintf(moved, sizeof(moved), "%s%s", from->resolved, cur + rl);
			snprintf(cur, sizeof(cur), "%s", moved);
			j = k - 1;
			continue;
		}
		/* Made in the cycle, or moved away or removed (what is there
		 * now came later). */
		if (!r->prior.exists || strcmp(r->op, "rename-from") == 0 ||
		    strcmp(r->op, "delete") == 0)
			return NEW;
	}
	if (*first == NULL)
		return UNCHANGED;
	return (*first)->prior.exists ? CHANGED : NEW;
}

/* ---- finding git directories ---------------------------------------------- */

/* As git's is_git_directory(): HEAD, and objects/ + refs/ or a commondir
 * (a linked worktree's). HEAD's content is not checked: any HEAD will do,
 * more directories are looked at, never fewer. */
static bool is_git_dir(struct guard *g, const char *dir)
{
	struct stat st;
	bool yes = false;
	int fd = fsb_at_open(g->root, dir, O_PATH | O_DIRECTORY, 0);

	if (fd < 0)
		return false;
	if (fstatat(fd, "HEAD", &st, AT_SYMLINK_NOFOLLOW) == 0) {
		struct stat o, r;

		yes = (fstatat(fd, "objects", &o, AT_SYMLINK_NOFOLLOW) == 0 &&
		       S_ISDIR(o.st_mode) && fstatat(fd, "refs", &r, AT_SYMLINK_NOFOLLOW) == 0 &&
		       S_ISDIR(r.st_mode)) ||
		      (fstatat(fd, "commondir", &o, AT_SYMLINK_NOFOLLOW) == 0 &&
		       S_ISREG(o.st_mode));
	}
	close(fd);
	return yes;
}

static int add_dir(struct guard *g, const char *dir)
{
	for (size_t i = 0; i < g->ndirs; i++)
		if (strcmp(g->dirs[i], dir) == 0)
			return 0;
	return push(&g->dirs, &g->ndirs, &g->capdirs, dir);
}

/* A `.git` file ("gitdir: <dir>") points git at a git directory: that
 * directory is looked at as well. */
static int follow_gitfile(struct guard *g, const char *path)
{
	char buf[PATH_MAX + 16], target[PATH_MAX * 2], norm[PATH_MAX];
	const char *p;
	ssize_t n;
	int fd = fsb_at_open(g->root, path, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
	struct stat st;

	if (fd < 0)
		return 0;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return 0;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if (strncmp(buf, "gitdir:", 7) != 0)
		return 0;
	p = buf + 7;
	while (*p == ' ')
		p++;
	buf[strcspn(buf, "\r\n")] = '\0';
	if (p[0] == '/') {
		snprintf(target, sizeof(target), "%s", p);
	} else {
		const char *slash = strrchr(path, '/');

		snprintf(target, sizeof(target), "%.*s/%s", (int)(slash - path), path, p);
	}
	/* Lexically: every component is then opened without following. */
	if (!fsb_git_lexical_path(target, norm, sizeof(norm)))
		return 0;
	return is_git_dir(g, norm) ? add_dir(g, norm) : 0;
}

/* Every git directory in the tree at `dir` (a directory renamed into
 * place: the journal names only its top). */
static int scan(struct guard *g, const char *dir, int depth)
{
	DIR *d;
	struct dirent *e;
	int fd, rc = 0;

	if (is_git_dir(g, dir) && (rc = add_dir(g, dir)) < 0)
		return rc;
	if (depth >= SCAN_DEPTH)
		return 0;
	if ((fd = fsb_at_open(g->root, dir, O_RDONLY | O_DIRECTORY, 0)) < 0)
		return 0;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return 0;
	}
	while (rc == 0 && (e = readdir(d)) != NULL) {
		char sub[PATH_MAX];

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (++g->scanned > SCAN_ENTRIES) {
			fsb_warn("git guard: %s holds more than %d entries; the rest was not "
				 "searched for git directories", dir, SCAN_ENTRIES);
			break;
		}
		if (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN) {
			if (e->d_type == DT_REG && strcmp(e->d_name, ".git") == 0 &&
			    snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name) < (int)sizeof(sub))
				rc = follow_gitfile(g, sub);
			continue;
		}
		if (snprintf(sub, sizeof(sub), "%s/%s", strcmp(dir, "/") ? dir : "", e->d_name) >=
		    (int)sizeof(sub))
			continue;
		rc = scan(g, sub, depth + 1);
	}
	closedir(d);
	return rc;
}

/* The paths find_dirs() has looked at: a set, open addressing, so that a
 * cycle of 100,000 paths costs a hash per path and not a scan. */
struct seen {
	char **slot;
	size_t cap, n;
};

static size_t hash(const char *s)
{
	size_t h = 14695981039346656037u;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211u;
	return h;
}

/* 1 when `p` was new (now added), 0 when seen before, or -ENOMEM. */
static int seen_add(struct seen *t, const char *p)
{
	size_t i;

	if ((t->n + 1) * 2 > t->cap) {
		struct seen g = { .cap = t->cap ? t->cap * 2 : 1024 };

		if ((g.slot = calloc(g.cap, sizeof(*g.slot))) == NULL)
			return -ENOMEM;
		for (size_t k = 0; k < t->cap; k++) {
			if (t->slot[k] == NULL)
				continue;
			for (i = hash(t->slot[k]) & (g.cap - 1); g.slot[i]; i = (i + 1) & (g.cap - 1))
				;
			g.slot[i] = t->slot[k];
		}
		g.n = t->n;
		free(t->slot);
		*t = g;
	}
	for (i = hash(p) & (t->cap - 1); t->slot[i]; i = (i + 1) & (t->cap - 1))
		if (strcmp(t->slot[i], p) == 0)
			return 0;
	if ((t->slot[i] = strdup(p)) == NULL)
		return -ENOMEM;
	t->n++;
	return 1;
}

static void seen_free(struct seen *t)
{
	for (size_t k = 0; k < t->cap; k++)
		free(t->slot[k]);
	free(t->slot);
}

/* The git directories at or above each path the cycle touched, those
 * inside each directory renamed in, and the targets of `.git` files. */
static int find_dirs(struct guard *g)
{
	struct seen seen = { 0 };
	int rc = 0;

	for (size_t i = 0; i < g->cy->nrecs && rc == 0; i++) {
		const struct fsb_journal_rec *r = &g->cy->recs[i];
		char p[PATH_MAX];
		const char *base = strrchr(r->resolved, '/');
		struct stat st;

		if (r->resolved[0] != '/' || snprintf(p, sizeof(p), "%s", r->resolved) >= (int)sizeof(p))
			continue;
		if (base != NULL && strcmp(base, "/.git") == 0 && lstat_at(g, p, &st) &&
		    S_ISREG(st.st_mode))
			rc = follow_gitfile(g, p);
		if (rc == 0 && strcmp(r->op, "rename-to") == 0 && lstat_at(g, p, &st) &&
		    S_ISDIR(st.st_mode))
			rc = scan(g, p, 0);
		/* The path itself and every directory above it, each once. */
		for (char *slash; rc == 0 && p[0] != '\0';) {
			int added = seen_add(&seen, p);

			if (added <= 0) {
				rc = added;
				break;
			}
			if (is_git_dir(g, p))
				rc = add_dir(g, p);
			if ((slash = strrchr(p, '/')) == NULL || slash == p)
				break;
			*slash = '\0';
		}
	}
	seen_free(&seen);
	return rc;
}

/* ---- undoing -------------------------------------------------------------- */

/* Remove the file at `path` (never a directory). 0 or -errno. */
static int remove_file(struct guard *g, const char *path)
{
	const char *name;
	struct stat st;
	int rc = 0, pfd = fsb_at_open_parent(g->root, path, &name);

	if (pfd < 0)
		return pfd;
	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		rc = errno == ENOENT ? 0 : -errno;
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		rc = -EISDIR;
		goto out;
	}
	if (unlinkat(pfd, name, 0) < 0)
		rc = -errno;
out:
	close(pfd);
	return rc;
}

/*
 * Replace the file at `path` with `len` bytes of `data` (or, with
 * `objfd` >= 0, the store object of `prior` on it: a copy checked against
 * its name, a kept inode against its recorded size and mtime),
 * mode `mode`, owner `uid`:`gid` where the core may set it (a core run as
 * root must not leave the user a config they cannot edit): a new file
 * beside it renamed over it, so that git never reads half of one. 0 or
 * -errno.
 */
static int replace_file(struct guard *g, const char *path, const char *data, size_t len,
			int objfd, const struct fsb_prior *prior, mode_t mode, uid_t uid, gid_t gid)
{
	char tmp[64];
	const char *name;
	int rc, fd = -1, pfd = fsb_at_open_parent(g->root, path, &name);

	if (pfd < 0)
		return pfd;
	snprintf(tmp, sizeof(tmp), ".fsb-git-guard.%d", (int)getpid());
	/* Left by an undo a crash cut short, or planted: never followed. */
	unlinkat(pfd, tmp, 0);
	fd = openat(pfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = -errno;
		goto fail;
	}
	if (objfd >= 0 && prior != NULL) {
		if ((rc = fsb_backup_object_restore(objfd, prior, fd)) < 0)
			goto fail;
	} else {
		for (size_t off = 0; off < len;) {
			ssize_t n = write(fd, data + off, len - off);

			if (n < 0) {
				rc = -errno;
				goto fail;
			}
			off += (size_t)n;
		}
	}
	if (fchown(fd, uid, gid) < 0 && errno != EPERM) {
		rc = -errno;
		goto fail;
	}
	if (fchmod(fd, mode & 07777) < 0 || fsync(fd) < 0 || renameat(pfd, tmp, pfd, name) < 0) {
		rc = -errno;
		goto fail;
	}
	close(fd);
	close(pfd);
	return 0;
fail:
	if (fd >= 0) {
		close(fd);
		unlinkat(pfd, tmp, 0);
	}
	close(pfd);
	return rc;
}

/* Removed, or -errno. */
static int removed(struct guard *g, const char *path)
{
	int rc = remove_file(g, path);

	return rc < 0 ? rc : PUT_REMOVED;
}

/* Put the start's content of a file back (its first record `first`): from
 * the store, else — no content was kept, or it cannot be read — it is
 * removed. PUT_BACK, PUT_REMOVED or -errno. */
static int put_back(struct guard *g, const char *path, const struct fsb_journal_rec *first)
{
	int objfd, rc;

	if (first == NULL || !first->prior.exists || strcmp(first->prior.type, "file") != 0 ||
	    first->prior.object[0] == '\0')
		return removed(g, path);
	if ((objfd = fsb_backup_object_open(g->store, first->prior.object)) < 0)
		return removed(g, path);
	rc = replace_file(g, path, NULL, 0, objfd, &first->prior,
			  first->prior.has_mode ? first->prior.mode : 0644,
			  first->prior.has_owner ? first->prior.uid : (uid_t)-1,
			  first->prior.has_owner ? first->prior.gid : (gid_t)-1);
	close(objfd);
	return rc < 0 ? removed(g, path) : PUT_BACK;
}

static const char *done_words(int rc)
{
	return rc < 0 ? "could not be undone"
		      : rc == PUT_REMOVED ? "removed" : "its content at the start was put back";
}

/* Read a regular file (up to CONFIG_MAX) into a malloc'd buffer. */
static int slurp_fd(int fd, char **out, size_t *len)
{
	struct stat st;
	char *b;
	size_t n = 0;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if ((uint64_t)st.st_size > CONFIG_MAX)
		return -EFBIG;
	if ((b = malloc((size_t)st.st_size + 1)) == NULL)
		return -ENOMEM;
	while (n < (size_t)st.st_size) {
		ssize_t r = pread(fd, b + n, (size_t)st.st_size - n, (off_t)n);

		if (r < 0) {
			int err = -errno;

			free(b);
			return err;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	b[n] = '\0';
	*out = b;
	*len = n;
	return 0;
}

/* The start's content of a config file, from the store (checked as
 * fsb_backup_object_restore does). 0 or -errno. */
static int prior_text(struct guard *g, const struct fsb_journal_rec *first, char **out,
		      size_t *len)
{
	int objfd, mfd, rc;

	if ((objfd = fsb_backup_object_open(g->store, first->prior.object)) < 0)
		return objfd;
	if ((mfd = memfd_create("fsb-git-config", MFD_CLOEXEC)) < 0) {
		rc = -errno;
		close(objfd);
		return rc;
	}
	rc = fsb_backup_object_restore(objfd, &first->prior, mfd);
	close(objfd);
	if (rc == 0)
		rc = slurp_fd(mfd, out, len);
	close(mfd);
	return rc;
}

static bool same_entry(const struct fsb_git_cfg_entry *a, const struct fsb_git_cfg_entry *b)
{
	return strcmp(a->section, b->section) == 0 && strcmp(a->subsection, b->subsection) == 0 &&
	       strcmp(a->key, b->key) == 0 &&
	       ((a->value == NULL && b->value == NULL) ||
		(a->value != NULL && b->value != NULL && strcmp(a->value, b->value) == 0));
}

/*
 * A config file of git directory `gitdir` that the cycle wrote: if it
 * holds a risky key that it did not hold at the start (each key, as the
 * start's content had it, may stay), undo it.
 */
static void check_config(struct guard *g, const char *gitdir, const char *path)
{
	const struct fsb_journal_rec *first;
	struct fsb_git_cfg now = { 0 }, before = { 0 };
	char *text = NULL, *old = NULL, err[256], keys[400] = "";
	size_t len = 0, oldlen = 0, nrisky = 0;
	bool have_prior, parsed;
	enum change ch = change_of(g, path, &first);
	struct stat st;
	int fd, rc;

	if (ch == UNCHANGED || !lstat_at(g, path, &st))
		return;	/* as at the start, or gone */
	have_prior = ch == CHANGED && first->prior.object[0] != '\0' &&
		     strcmp(first->prior.type, "file") == 0;
	/* Git follows a symlink where it reads config; the guard never does,
	 * so one the run made is undone whatever it points at. */
	if (!S_ISREG(st.st_mode)) {
		rc = have_prior ? put_back(g, path, first) : removed(g, path);
		report(g, path, "a git config that is not a regular file (git would read what "
		       "it points at): %s", done_words(rc));
		goto out;
	}
	if ((fd = fsb_at_open(g->root, path, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0)) < 0)
		return;	/* replaced since the lstat: the next seal looks again */
	rc = fstat(fd, &st) < 0 ? -errno : slurp_fd(fd, &text, &len);
	close(fd);
	parsed = rc == 0 && fsb_git_config_parse(text, len, &now, err, sizeof(err)) == 0;
	if (!parsed) {
		if (rc < 0)
			snprintf(err, sizeof(err), "%s", strerror(-rc));
		rc = have_prior ? put_back(g, path, first) : removed(g, path);
		report(g, path, "a git config that cannot be read (%s): %s", err, done_words(rc));
		goto out;
	}
	if (have_prior && prior_text(g, first, &old, &oldlen) == 0 &&
	    fsb_git_config_parse(old, oldlen, &before, err, sizeof(err)) < 0)
		memset(&before, 0, sizeof(before));
	for (size_t i = 0; i < now.n; i++) {
		const struct fsb_git_cfg_entry *e = &now.v[i];
		const char *why = fsb_git_config_risk(e, gitdir);
		bool kept = false;

		if (why == NULL)
			continue;
		for (size_t k = 0; k < before.n && !kept; k++)
			kept = same_entry(e, &before.v[k]);
		if (kept)
			continue;
		if (nrisky++ < 4) {
			size_t kl = strlen(keys);

			snprintf(keys + kl, sizeof(keys) - kl, "%s%s.%s%s%s (%s)", kl ? ", " : "",
				 e->section, e->subsection, e->subsection[0] ? "." : "", e->key,
				 why);
		}
	}
	if (nrisky == 0)
		goto out;
	if (have_prior) {
		rc = put_back(g, path, first);
		report(g, path, "%s%s: %s", keys, nrisky > 4 ? ", …" : "", done_words(rc));
		goto out;
	}
	/* Made in the cycle (git init, git clone): keep the file without the
	 * risky keys, so that the repository still works. */
	{
		bool *drop = calloc(now.n + 1, sizeof(*drop));
		char *kept = NULL;
		size_t kn = 0;

		for (size_t i = 0; drop != NULL && i < now.n; i++) {
			drop[i] = fsb_git_config_risk(&now.v[i], gitdir) != NULL;
			for (size_t k = 0; drop[i] && k < before.n; k++)
				drop[i] = !same_entry(&now.v[i], &before.v[k]);
		}
		if (drop != NULL)
			kept = fsb_git_config_drop(text, len, &now, drop, &kn);
		rc = kept != NULL ? replace_file(g, path, kept, kn, -1, NULL, st.st_mode, st.st_uid,
						 st.st_gid)
				  : -ENOMEM;
		if (rc < 0)
			rc = removed(g, path);
		free(kept);
		free(drop);
		report(g, path, "%s%s: %s", keys, nrisky > 4 ? ", …" : "",
		       rc < 0 || rc == PUT_REMOVED ? done_words(rc)
						   : "taken out of a config the run created");
	}
out:
	fsb_git_config_free(&now);
	fsb_git_config_free(&before);
	free(text);
	free(old);
}

/* Each hook in `gitdir`/hooks the cycle created or changed. Git runs
 * hooks/<name> only; `*.sample` never, and git init copies those. */
static void check_hooks(struct guard *g, const char *gitdir)
{
	char dir[PATH_MAX];
	DIR *d;
	struct dirent *e;
	int fd;

	if (snprintf(dir, sizeof(dir), "%s/hooks", gitdir) >= (int)sizeof(dir))
		return;
	/* A hooks "directory" that is a symlink lends git the hooks of
	 * another directory, where the pack's hook rule does not look. */
	{
		const struct fsb_journal_rec *first;
		struct stat st;
		int rc;

		if (lstat_at(g, dir, &st) && !S_ISDIR(st.st_mode) &&
		    change_of(g, dir, &first) != UNCHANGED) {
			rc = removed(g, dir);
			report(g, dir, "a hooks directory that is not a directory (git would run the "
			       "hooks where it points): %s", done_words(rc));
			return;
		}
	}
	if ((fd = fsb_at_open(g->root, dir, O_RDONLY | O_DIRECTORY, 0)) < 0)
		return;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return;
	}
	while ((e = readdir(d)) != NULL) {
		const struct fsb_journal_rec *first;
		char path[PATH_MAX + 256];
		size_t nl = strlen(e->d_name);
		enum change ch;
		struct stat st;
		int rc;

		if (e->d_name[0] == '.' || (nl > 7 && strcmp(e->d_name + nl - 7, ".sample") == 0))
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || S_ISDIR(st.st_mode))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if ((ch = change_of(g, path, &first)) == UNCHANGED)
			continue;
		rc = ch == CHANGED ? put_back(g, path, first) : removed(g, path);
		report(g, path, "%s: %s", ch == NEW ? "a hook the git directory did not have"
						   : "a hook the run changed",
		       done_words(rc));
	}
	closedir(d);
}

/* The config files of one git directory: its own, and each linked
 * worktree's (submodules under modules/ are git directories of their own). */
static void check_dir(struct guard *g, const char *gitdir)
{
	char path[PATH_MAX + 256];
	DIR *d;
	struct dirent *e;
	int fd;

	check_hooks(g, gitdir);
	snprintf(path, sizeof(path), "%s/config", gitdir);
	check_config(g, gitdir, path);
	snprintf(path, sizeof(path), "%s/config.worktree", gitdir);
	check_config(g, gitdir, path);
	snprintf(path, sizeof(path), "%s/worktrees", gitdir);
	if ((fd = fsb_at_open(g->root, path, O_RDONLY | O_DIRECTORY, 0)) < 0)
		return;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return;
	}
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/worktrees/%s/config.worktree", gitdir, e->d_name);
		check_config(g, gitdir, path);
	}
	closedir(d);
}

int fsb_git_guard_cycle(const char *store_dir, unsigned cycle, struct fsb_git_undone *out,
			char *err, size_t errlen)
{
	struct fsb_cycle cy;
	struct guard g = { .store = store_dir, .cy = &cy, .out = out };
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = fsb_cycle_load(store_dir, cycle, &cy, NULL, err, errlen)) < 0)
		return rc;
	if ((g.root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
		rc = -errno;
		snprintf(err, errlen, "cannot open /: %s", strerror(-rc));
		fsb_cycle_free(&cy);
		return rc;
	}
	rc = find_dirs(&g);
	if (rc < 0)
		snprintf(err, errlen, "out of memory while finding git directories");
	/* Even then: what was found is looked at. */
	for (size_t i = 0; i < g.ndirs; i++) {
		check_dir(&g, g.dirs[i]);
		free(g.dirs[i]);
	}
	free(g.dirs);
	close(g.root);
	fsb_cycle_free(&cy);
	return rc;
}

void fsb_git_undone_free(struct fsb_git_undone *u)
{
	for (size_t i = 0; i < u->n; i++) {
		free(u->path[i]);
		free(u->reason[i]);
	}
	free(u->path);
	free(u->reason);
	memset(u, 0, sizeof(*u));
}

void fsb_git_guard_commit(struct fsb_broker *b, const char *sid, const char *store_dir,
			  unsigned cycle)
{
	struct fsb_git_undone u;
	char err[512];

	if (fsb_git_guard_cycle(store_dir, cycle, &u, err, sizeof(err)) < 0)
		fsb_error("git guard, session %s, cycle %u: %s", sid, cycle, err);
	for (size_t i = 0; i < u.n; i++) {
		cJSON *rec = cJSON_CreateObject();

		fsb_debug("session %s, cycle %u: undone: %s: %s", sid, cycle, u.path[i],
			 u.reason[i]);
		cJSON_AddStringToObject(rec, "phase", "git-guard");
		cJSON_AddStringToObject(rec, "session", sid);
		cJSON_AddNumberToObject(rec, "cycle", cycle);
		cJSON_AddStringToObject(rec, "op", "undo");
		cJSON_AddStringToObject(rec, "path", u.path[i]);
		cJSON_AddStringToObject(rec, "normalisedPath", u.path[i]);
		cJSON_AddStringToObject(rec, "decision", "undone");
		cJSON_AddStringToObject(rec, "reason", u.reason[i]);
		if (fsb_broker_audit(b, sid, rec) < 0)
			fsb_error("session %s: the audit line of an undo was not written", sid);
	}
	fsb_git_undone_free(&u);
}

unsigned fsb_git_guard_unsealed(const char *state_dir, const char *sid)
{
	char dir[PATH_MAX], seal[PATH_MAX + 64];
	unsigned *nums = NULL, last = 0;
	size_t n = 0;
	struct stat st;

	if (state_dir == NULL || fsb_backup_store_dir(state_dir, sid, dir, sizeof(dir)) < 0 ||
	    fsb_cycles_list(dir, &nums, &n) < 0 || n == 0) {
		free(nums);
		return 0;
	}
	snprintf(seal, sizeof(seal), "%s/cycles/%u/cycle.json", dir, nums[n - 1]);
	if (lstat(seal, &st) < 0 && errno == ENOENT)
		last = nums[n - 1];
	free(nums);
	return last;
}
