/*
 * hostop_mkdir.c — the host operation `mkdir` (see hostop.h): one
 * directory, or each missing one down the path (`recursive`), every one
 * judged and journaled as created before it is made.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "at.h"
#include "hostop_internal.h"

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

int hop_mkdir_one(struct hostop *h)
{
	const struct fsb_hostop_req *r = h->req;
	struct fsb_access *a = &h->src;
	const char *name;
	int pfd, rc = -1;

	if (hop_judge(h, a, FSB_OP_MKDIR, r->path, FSB_RESOLVE_THROUGH_PARENT) < 0)
		return -1;
	/* `mkdir .` (tar's "./" member): EEXIST, as the kernel says. */
	if (a->errnum == EINVAL && names_an_existing_dir(r->path))
		return hop_fail(h, EEXIST, "%s exists", r->path);
	if (a->errnum != 0)
		return hop_fail(h, a->errnum, a->errnum == ENOENT ? "the parent of %s does not exist"
				: NULL, r->path);
	if (a->res.exists)
		return hop_fail(h, EEXIST, "%s exists", a->res.path);
	if ((pfd = hop_open_parent(h, a, &name)) < 0)
		return -1;
	if (hop_record(h, FSB_OP_MKDIR, r->path, a->res.path, NULL, -1, NULL, false) < 0 ||
	    hop_sync_backups(h) < 0 || hop_audit_before(h) < 0)
		goto out;
	if (mkdirat(pfd, name, r->has_mode ? r->mode : 0777) < 0) {
		hop_fail(h, errno, "cannot make %s: %s", a->res.path, strerror(errno));
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
int hop_mkdir_parents(struct hostop *h)
{
	const struct fsb_hostop_req *r = h->req;
	struct fsb_access *a = &h->src;
	struct fsb_resolved base;
	char prefix[PATH_MAX], real[PATH_MAX], name[NAME_MAX + 1];
	const char *missing, *p;
	struct stat st;
	bool last;
	int dfd = -1, nfd, rc = -1;

	if (hop_judge(h, a, FSB_OP_MKDIR, r->path, FSB_RESOLVE_THROUGH_PARENT) < 0)
		return -1;
	if (a->errnum == 0 && a->res.exists) {
		if (!S_ISDIR(a->res.st.st_mode))
			return hop_fail(h, EEXIST, "%s exists and is not a directory", a->res.path);
		return 0;
	}
	if (a->errnum != 0 && a->errnum != ENOENT)
		return hop_fail(h, a->errnum, NULL);

	/* Up from the path to the deepest directory that exists. */
	snprintf(prefix, sizeof(prefix), "%s", a->normalised);
	do {
		char *slash = strrchr(prefix, '/');

		slash[slash == prefix] = '\0';	/* "/a/b" → "/a", "/a" → "/" */
		rc = fsb_resolve(h->rootfd, prefix, FSB_RESOLVE_EXISTING, &base);
	} while (rc == -ENOENT && strcmp(prefix, "/") != 0);
	if (rc < 0)
		return hop_fail(h, -rc, "cannot resolve %s: %s", prefix, strerror(-rc));
	if (!S_ISDIR(base.st.st_mode))
		return hop_fail(h, ENOTDIR, "%s is not a directory", base.path);
	missing = a->normalised + (strcmp(prefix, "/") == 0 ? 1 : strlen(prefix) + 1);
	rc = -1;
	if ((dfd = fsb_at_open(h->rootfd, base.path, O_RDONLY | O_DIRECTORY, 0)) < 0)
		return hop_fail(h, dfd == -ELOOP ? EAGAIN : -dfd, "cannot open %s: %s", base.path,
				strerror(-dfd));
	/* The first missing name may be there all the same, as a symlink whose
	 * target is missing (resolution found nothing behind it): never
	 * journal it as absent, a restore would remove it. */
	if (next_name(missing, name, &last) == NULL) {
		hop_fail(h, ENAMETOOLONG, "a name in %s is longer than NAME_MAX", r->path);
		goto out;
	}
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		hop_fail(h, EEXIST, "%s/%s exists and is a %s, not a directory", base.path, name,
			 fsb_file_type_name(st.st_mode));
		goto out;
	}

	/* Judge and journal every directory to make, parents first. */
	snprintf(real, sizeof(real), "%s", strcmp(base.path, "/") == 0 ? "" : base.path);
	for (p = missing; *p != '\0';) {
		size_t len = strlen(real);

		if ((p = next_name(p, name, &last)) == NULL ||
		    len + 1 + strlen(name) >= sizeof(real)) {
			hop_fail(h, ENAMETOOLONG, "%s is too long", r->path);
			goto out;
		}
		snprintf(real + len, sizeof(real) - len, "/%s", name);
		if (hop_judge_entry(h, FSB_OP_MKDIR, real, NULL) < 0 ||
		    hop_record(h, FSB_OP_MKDIR, real, real, NULL, -1, NULL, false) < 0)
			goto out;
	}
	snprintf(h->src_real, sizeof(h->src_real), "%s", real);
	if (hop_sync_backups(h) < 0 || hop_audit_before(h) < 0)
		goto out;

	snprintf(real, sizeof(real), "%s", strcmp(base.path, "/") == 0 ? "" : base.path);
	for (p = missing; *p != '\0';) {
		size_t len = strlen(real);

		p = next_name(p, name, &last);
		snprintf(real + len, sizeof(real) - len, "/%s", name);
		/* Journaled as absent: something there now appeared since. */
		if (mkdirat(dfd, name, last && r->has_mode ? r->mode : 0777) < 0) {
			hop_fail(h, errno == EEXIST ? EAGAIN : errno, errno == EEXIST
				 ? "%s appeared since it was checked; ask again" : "cannot make %s",
				 real);
			goto out;
		}
		h->changed = true;
		nfd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0) {
			hop_fail(h, errno == ELOOP || errno == ENOTDIR ? EAGAIN : errno,
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
