/*
 * resolve.c — the real path of a requested path in the requester's view
 * (see resolve.h): a walk of one component at a time under a root fd, with
 * symlinks read and spliced by hand so that neither `..` nor an absolute
 * target can leave that root.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "at.h"
#include "resolve.h"

/* The kernel's limit (MAXSYMLINKS): one more link is ELOOP. */
#define RESOLVE_MAX_LINKS 40

/*
 * The walk keeps two things: the resolved prefix `res` (an absolute real
 * path, "" standing for "/") and `rest`, what is left of the request. Every
 * lookup is relative to the root fd and names only the resolved prefix plus
 * one new component. The prefix holds no symlink, `.` or `..` and each of its
 * components was checked to be a directory, so the kernel never crosses a
 * symlink the walk did not see; `..` is applied to the prefix as text, which
 * keeps it at or under the root.
 *
 * This is a decision about a path, not a handle on an object: something may
 * swap a checked directory for a symlink after the walk. The host operation
 * closes that window by opening the result with RESOLVE_NO_SYMLINKS and
 * comparing dev/ino with `st`.
 */
struct walk {
	int rootfd;
	char *res;		/* PATH_MAX bytes: the caller's out->path */
	size_t rlen;
	char *rest;		/* heap, grows when symlink targets are spliced in */
	size_t cap;
	size_t pos;
	int links;
};

/* The prefix as a path relative to the root fd. */
static const char *walk_rel(const struct walk *w)
{
	return w->rlen == 0 ? "." : w->res + 1;
}

/* The prefix ends in a symlink, which ended at `after` in `rest`: drop it
 * from the prefix (back to `parent`) and put its target in front of what is
 * left to walk. */
static int walk_splice(struct walk *w, size_t parent, size_t after)
{
	char target[PATH_MAX];
	size_t tail;
	ssize_t n;

	if (++w->links > RESOLVE_MAX_LINKS)
		return -ELOOP;

	n = readlinkat(w->rootfd, walk_rel(w), target, sizeof(target));
	/* Not a symlink (EINVAL) or gone (ENOENT) since fstatat said it was:
	 * the path is changing under us; the caller asks again. */
	if (n < 0)
		return errno == EINVAL || errno == ENOENT ? -EAGAIN : -errno;
	if ((size_t)n == sizeof(target))
		return -ENAMETOOLONG;
	/* The kernel treats an empty target as a missing name. */
	if (n == 0)
		return -ENOENT;

	/* The remainder keeps its leading '/', so a trailing slash survives. */
	tail = strlen(w->rest + after);
	if ((size_t)n + tail + 1 > w->cap) {
		char *p = realloc(w->rest, (size_t)n + tail + 1);

		if (p == NULL)
			return -ENOMEM;
		w->rest = p;
		w->cap = (size_t)n + tail + 1;
	}
	memmove(w->rest + n, w->rest + after, tail + 1);
	memcpy(w->rest, target, (size_t)n);
	w->pos = 0;

	/* An absolute target starts again at the requester's root. */
	w->rlen = target[0] == '/' ? 0 : parent;
	w->res[w->rlen] = '\0';
	return 0;
}

static bool is_dot(const char *s, size_t len)
{
	return len == 1 && s[0] == '.';
}

static bool is_dotdot(const char *s, size_t len)
{
	return len == 2 && s[0] == '.' && s[1] == '.';
}

/*
 * `path` without the empty and `.` components the walk steps over, into
 * `out` (PATH_MAX bytes): its number of components, or 0 when it has a
 * `..` (which only the walk may apply) or ends in '/', `.` or nothing.
 */
static size_t plain_form(const char *path, char *out)
{
	size_t depth = 0, n = 0;
	const char *c = path, *end;

	for (;;) {
		while (*c == '/')
			c++;
		if (*c == '\0')
			break;
		end = strchrnul(c, '/');
		if (is_dotdot(c, (size_t)(end - c)))
			return 0;
		if (!is_dot(c, (size_t)(end - c))) {
			out[n++] = '/';
			memcpy(out + n, c, (size_t)(end - c));
			n += (size_t)(end - c);
			depth++;
		}
		c = end;
	}
	out[n] = '\0';
	/* The last thing named must be a name. */
	end = path + strlen(path);
	if (depth == 0 || end[-1] == '/' || (end[-1] == '.' && (end - path < 2 || end[-2] == '/')))
		return 0;
	return depth;
}

/*
 * The common case in three calls instead of one per component: a path
 * (plain_form: no `..`, no empty or `.` component) whose directories are
 * real ones, no symlink among them. openat2 with RESOLVE_NO_SYMLINKS
 * reaches its parent only then, and the path is its own real path; the
 * final name is looked at as the walk would. 1 when the walk must decide
 * (a symlink on the way or at the end, a missing or unreadable directory,
 * a kernel without openat2: its errors are the walk's to give), else 0 or
 * -ENOENT as fsb_resolve().
 */
static int resolve_direct(int rootfd, const char *path, enum fsb_resolve_strategy strategy,
			  struct fsb_resolved *out)
{
	const char *name = strrchr(path, '/') + 1;
	char parent[PATH_MAX];
	struct stat st;
	int pfd, rc;

	memcpy(parent, path, (size_t)(name - path));
	parent[name - path] = '\0';
	if ((pfd = fsb_at_open(rootfd, parent, O_PATH | O_DIRECTORY, 0)) < 0)
		return 1;
	rc = fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
	close(pfd);
	if (rc == -ENOENT && strategy == FSB_RESOLVE_EXISTING)
		return -ENOENT;
	if ((rc < 0 && rc != -ENOENT) ||
	    (rc == 0 && S_ISLNK(st.st_mode) && strategy != FSB_RESOLVE_THROUGH_PARENT))
		return 1;
	memcpy(out->path, path, strlen(path) + 1);
	out->exists = rc == 0;
	if (rc == 0)
		out->st = st;
	return 0;
}

int fsb_resolve(int rootfd, const char *path, enum fsb_resolve_strategy strategy,
		struct fsb_resolved *out)
{
	char plain[PATH_MAX];
	struct walk w;
	struct stat st;
	size_t len;
	int err;

	if (path == NULL || path[0] != '/')
		return -EINVAL;
	len = strlen(path);
	if (len >= PATH_MAX)
		return -ENAMETOOLONG;
	out->exists = false;
	memset(&out->st, 0, sizeof(out->st));
	/* Three calls pay from three components on. */
	if (plain_form(path, plain) >= 3) {
		err = resolve_direct(rootfd, plain, strategy, out);
		if (err <= 0) {
			if (err < 0)
				out->path[0] = '\0';
			return err;
		}
	}

	memset(&w, 0, sizeof(w));
	w.rootfd = rootfd;
	w.res = out->path;
	w.res[0] = '\0';
	w.cap = len + 1;
	w.rest = malloc(w.cap);
	if (w.rest == NULL)
		return -ENOMEM;
	memcpy(w.rest, path, len + 1);
	out->exists = false;
	memset(&out->st, 0, sizeof(out->st));

	for (;;) {
		const char *comp;
		size_t clen, after, next, saved;
		bool final, slash;

		while (w.rest[w.pos] == '/')
			w.pos++;

		if (w.rest[w.pos] == '\0') {
			/* Nothing named after the prefix: "/", or a final `.`
			 * or `..`, which have no name to keep. */
			if (strategy == FSB_RESOLVE_THROUGH_PARENT) {
				err = -EINVAL;
				goto fail;
			}
			if (fstatat(rootfd, walk_rel(&w), &st, AT_SYMLINK_NOFOLLOW) < 0) {
				err = -errno;
				goto fail;
			}
			out->exists = true;
			out->st = st;
			break;
		}

		comp = w.rest + w.pos;
		clen = strcspn(comp, "/");
		after = w.pos + clen;
		next = after;
		while (w.rest[next] == '/')
			next++;
		final = w.rest[next] == '\0';
		slash = final && next > after;
		w.pos = next;

		if (is_dot(comp, clen) || is_dotdot(comp, clen)) {
			if (final && strategy == FSB_RESOLVE_THROUGH_PARENT) {
				err = -EINVAL;
				goto fail;
			}
			if (is_dotdot(comp, clen)) {
				/* The prefix is physical, so its parent is the
				 * real parent; at the root `..` stays there. */
				while (w.rlen > 0 && w.res[w.rlen - 1] != '/')
					w.rlen--;
				if (w.rlen > 0)
					w.rlen--;
				w.res[w.rlen] = '\0';
			}
			continue;
		}

		saved = w.rlen;
		if (w.rlen + 1 + clen >= PATH_MAX) {
			err = -ENAMETOOLONG;
			goto fail;
		}
		w.res[w.rlen] = '/';
		memcpy(w.res + w.rlen + 1, comp, clen);
		w.rlen += 1 + clen;
		w.res[w.rlen] = '\0';

		if (fstatat(rootfd, walk_rel(&w), &st, AT_SYMLINK_NOFOLLOW) < 0) {
			err = -errno;
			if (err == -ENOENT && final && strategy != FSB_RESOLVE_EXISTING)
				break;	/* creatable: the parent is real */
			goto fail;
		}

		if (final && strategy == FSB_RESOLVE_THROUGH_PARENT) {
			out->exists = true;
			out->st = st;
			break;
		}

		if (S_ISLNK(st.st_mode)) {
			err = walk_splice(&w, saved, after);
			if (err)
				goto fail;
			continue;
		}

		if ((!final || slash) && !S_ISDIR(st.st_mode)) {
			err = -ENOTDIR;
			goto fail;
		}
		if (final) {
			out->exists = true;
			out->st = st;
			break;
		}
	}

	if (w.rlen == 0) {
		w.res[0] = '/';
		w.res[1] = '\0';
	}
	free(w.rest);
	return 0;

fail:
	free(w.rest);
	out->path[0] = '\0';
	out->exists = false;
	return err;
}

int fsb_path_lexical(const char *path, char *out)
{
	size_t len, olen = 0;
	const char *p;

	if (path == NULL || path[0] != '/')
		return -EINVAL;
	len = strlen(path);
	if (len >= PATH_MAX)
		return -ENAMETOOLONG;

	/* The output never outgrows the input, and writing never overtakes
	 * reading, so `out` may be `path`. */
	p = path;
	while (*p != '\0') {
		size_t clen;

		while (*p == '/')
			p++;
		clen = strcspn(p, "/");
		if (clen == 0 || is_dot(p, clen)) {
			/* nothing to add */
		} else if (is_dotdot(p, clen)) {
			while (olen > 0 && out[olen - 1] != '/')
				olen--;
			if (olen > 0)
				olen--;
		} else {
			out[olen++] = '/';
			memmove(out + olen, p, clen);
			olen += clen;
		}
		p += clen;
	}
	if (olen == 0)
		out[olen++] = '/';
	out[olen] = '\0';
	return 0;
}

bool fsb_path_within(const char *path, const char *dir)
{
	size_t n;

	if (strcmp(dir, "/") == 0)
		return path[0] == '/';
	n = strlen(dir);
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}
