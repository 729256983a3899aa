/*
 * trash.c — the FreeDesktop.org trash (see trash.h): choose the trash of an
 * entry, write its .trashinfo, then rename the entry into files/.
 *
 * The specification's optional `directorysizes` cache is not kept: it only
 * speeds up showing the size of a trash, and the tools that read it fall
 * back to measuring a directory it does not list.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "trash.h"

/* How many of `name`, `name.2`, … are tried before giving up. */
#define MAX_TRIES 1000
#define INFO_SUFFIX ".trashinfo"

static int say(char *why, size_t whylen, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Put a sentence in `why` and hand back `err`. */
static int say(char *why, size_t whylen, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return err;
}

/* `dir`/`name` into `out` (no doubled slash after "/"); -ENAMETOOLONG. */
static int join(char *out, size_t len, const char *dir, const char *name)
{
	const char *sep = dir[0] != '\0' && dir[strlen(dir) - 1] == '/' ? "" : "/";

	if ((size_t)snprintf(out, len, "%s%s%s", dir, sep, name) >= len)
		return -ENAMETOOLONG;
	return 0;
}

/*
 * Open the directory `name` in `at`, making it 0700 first when `create` and
 * it is missing. With `nofollow`, a symlink in its place is refused (ELOOP
 * or ENOTDIR) rather than followed: a link planted inside a trash could
 * otherwise send the entry, or a new directory, anywhere.
 */
static int open_sub(int at, const char *name, bool create, bool nofollow)
{
	int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0);
	int fd = openat(at, name, flags);

	if (fd < 0 && errno == ENOENT && create) {
		if (mkdirat(at, name, 0700) < 0 && errno != EEXIST)
			return -errno;
		fd = openat(at, name, flags);
	}
	return fd < 0 ? -errno : fd;
}

/* Open the absolute directory `path` one level at a time from "/"; see open_sub. */
static int open_path(const char *path, bool create, bool nofollow)
{
	char buf[PATH_MAX], *comp, *save;
	int fd, next;

	if (path[0] != '/')
		return -EINVAL;
	if ((size_t)snprintf(buf, sizeof(buf), "%s", path) >= sizeof(buf))
		return -ENAMETOOLONG;
	fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (comp = strtok_r(buf, "/", &save); comp != NULL; comp = strtok_r(NULL, "/", &save)) {
		next = open_sub(fd, comp, create, nofollow);
		close(fd);
		if (next < 0)
			return next;
		fd = next;
	}
	return fd;
}

/* Cut the last component off the absolute path `p`: "/a/b" to "/a", "/a" to "/". */
static void cut_last(char *p)
{
	char *slash = strrchr(p, '/');

	if (slash == p)
		p[1] = '\0';
	else if (slash != NULL)
		*slash = '\0';
}

/*
 * Where a file lives, for "can a rename reach the trash": its mount, which
 * a bind mount of the same filesystem (same st_dev) tells apart. Kernels
 * without STATX_MNT_ID (before 5.8) leave only the device to compare.
 */
struct place {
	dev_t dev;
	uint64_t mnt;
	bool has_mnt;
};

static int place_at(int dirfd, const char *name, int flags, struct place *out)
{
	struct statx stx;

	if (statx(dirfd, name, flags | AT_NO_AUTOMOUNT, STATX_BASIC_STATS | STATX_MNT_ID, &stx) < 0)
		return -errno;
	out->dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
	out->has_mnt = (stx.stx_mask & STATX_MNT_ID) != 0;
	out->mnt = stx.stx_mnt_id;
	return 0;
}

static bool same_place(const struct place *a, const struct place *b)
{
	if (a->has_mnt && b->has_mnt)
		return a->mnt == b->mnt;
	return a->dev == b->dev;
}

/*
 * Where the data home is: its nearest existing level, since a missing data
 * home is made where that level is.
 */
static int data_home_place(const char *data_home, struct place *out)
{
	char p[PATH_MAX];
	int err;

	if ((size_t)snprintf(p, sizeof(p), "%s", data_home) >= sizeof(p))
		return -ENAMETOOLONG;
	while ((err = place_at(AT_FDCWD, p, 0, out)) < 0) {
		if (err != -ENOENT || strcmp(p, "/") == 0)
			return err;
		cut_last(p);
	}
	return 0;
}

/*
 * The top directory of the mount `where` that `dir_path` lies on: the
 * shortest prefix of it still in that mount, found walking up lexically
 * ("/" when none is).
 */
static int find_topdir(const char *dir_path, const struct place *where, char *top)
{
	size_t len = strlen(dir_path);
	struct place here;
	char p[PATH_MAX];
	int err;

	/* "/mnt/" and "/mnt" are one directory; the top one is named without
	 * the slash so that the caller can cut it off the entry's path. */
	while (len > 1 && dir_path[len - 1] == '/')
		len--;
	if (len >= sizeof(p))
		return -ENAMETOOLONG;
	memcpy(p, dir_path, len);
	p[len] = '\0';
	strcpy(top, "/");
	for (;;) {
		if ((err = place_at(AT_FDCWD, p, AT_SYMLINK_NOFOLLOW, &here)) < 0)
			return err;
		if (!same_place(&here, where))
			return 0;
		strcpy(top, p);
		if (strcmp(p, "/") == 0)
			return 0;
		cut_last(p);
	}
}

/*
 * Open the trash of the top directory `top` into `*fdp` and its path into
 * `path`. The shared `$top/.Trash` is used only when it is a sticky
 * directory (so no other user can rename or remove our `$uid` in it) and our
 * `$uid` in it is a directory we own; anything else falls back to
 * `$top/.Trash-$uid`, as the specification says. That one must be ours:
 * someone else's would let them read and take what we trash.
 */
static int open_top_trash(const char *top, uid_t uid, char *path, int *fdp,
			  char *why, size_t whylen)
{
	char own[32], uidstr[24], sub[40];
	struct stat st;
	int topfd, admin, fd, err;

	/* `top` comes from a real path: none of its levels is a symlink. */
	topfd = open_path(top, false, true);
	if (topfd < 0)
		return say(why, whylen, topfd, "cannot open the top directory %s: %s", top,
			   strerror(-topfd));
	snprintf(uidstr, sizeof(uidstr), "%u", (unsigned)uid);
	admin = open_sub(topfd, ".Trash", false, true);
	if (admin >= 0) {
		fd = -1;
		if (fstat(admin, &st) == 0 && (st.st_mode & S_ISVTX))
			fd = open_sub(admin, uidstr, true, true);
		close(admin);
		if (fd >= 0 && fstat(fd, &st) == 0 && st.st_uid == uid) {
			close(topfd);
			*fdp = fd;
			snprintf(sub, sizeof(sub), ".Trash/%s", uidstr);
			join(path, PATH_MAX, top, sub);
			return 0;
		}
		if (fd >= 0)
			close(fd);
	}

	snprintf(own, sizeof(own), ".Trash-%s", uidstr);
	join(path, PATH_MAX, top, own);
	fd = open_sub(topfd, own, true, true);
	close(topfd);
	if (fd < 0)
		return say(why, whylen, fd, "cannot open the trash %s: %s", path, strerror(-fd));
	if (fstat(fd, &st) < 0) {
		err = -errno;
		close(fd);
		return say(why, whylen, err, "cannot stat the trash %s: %s", path, strerror(-err));
	}
	if (st.st_uid != uid) {
		close(fd);
		return say(why, whylen, -EACCES, "the trash %s belongs to uid %u, not to uid %u",
			   path, (unsigned)st.st_uid, (unsigned)uid);
	}
	*fdp = fd;
	return 0;
}

/*
 * Open the home trash, `data_home`/Trash, making what is missing. The data
 * home is the user's own setting and may be reached through a symlink (a
 * /home that links elsewhere); below it, nothing is followed.
 */
static int open_home_trash(const char *data_home, char *path, int *fdp,
			   char *why, size_t whylen)
{
	int home, fd;

	join(path, PATH_MAX, data_home, "Trash");
	home = open_path(data_home, true, false);
	if (home < 0)
		return say(why, whylen, home, "cannot open the data home %s: %s", data_home,
			   strerror(-home));
	fd = open_sub(home, "Trash", true, true);
	close(home);
	if (fd < 0)
		return say(why, whylen, fd, "cannot open the trash %s: %s", path, strerror(-fd));
	*fdp = fd;
	return 0;
}

/*
 * Percent-encode `s` the way the trash tools decode it: every byte but
 * A-Z a-z 0-9 - _ . ~ and / becomes %XX.
 */
static int encode_path(char *out, size_t len, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;
		bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			     (c >= '0' && c <= '9') || strchr("-_.~/", c) != NULL;

		if (o + 4 > len)
			return -ENAMETOOLONG;
		if (plain) {
			out[o++] = (char)c;
		} else {
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = '\0';
	return 0;
}

/*
 * The n-th name tried in the trash: `name`, then `name.n`. A name too long
 * to take `.trashinfo` and the number is shortened, back to the start of a
 * UTF-8 character; restoring goes by the info file's Path, not this name.
 */
static void candidate(char *out, size_t len, const char *name, unsigned n)
{
	size_t room = NAME_MAX - strlen(INFO_SUFFIX) - strlen(".1000");
	size_t keep = strlen(name);

	if (keep > room) {
		keep = room;
		while (keep > 0 && ((unsigned char)name[keep] & 0xC0) == 0x80)
			keep--;
	}
	if (n == 1)
		snprintf(out, len, "%.*s", (int)keep, name);
	else
		snprintf(out, len, "%.*s.%u", (int)keep, name, n);
}

/*
 * Create the info file `iname` in `infofd` with O_EXCL (a taken name is
 * -EEXIST, never overwritten; O_NOFOLLOW so no link is written through),
 * write `text` whole and fsync it. A failure removes what was made.
 */
static int write_info(int infofd, const char *iname, const char *text)
{
	size_t len = strlen(text), off = 0;
	int fd, err = 0;

	fd = openat(infofd, iname, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	while (off < len) {
		ssize_t n = write(fd, text + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? -errno : -EIO;
			break;
		}
		off += (size_t)n;
	}
	if (err == 0 && fsync(fd) < 0)
		err = -errno;
	if (close(fd) < 0 && err == 0)
		err = -errno;
	if (err < 0)
		unlinkat(infofd, iname, 0);
	return err;
}

int fsb_trash_place_init(struct fsb_trash_place *t, const char *home)
{
	const char *xdg = getenv("XDG_DATA_HOME");
	int n;

	memset(t, 0, sizeof(*t));
	t->uid = getuid();
	if (xdg != NULL && xdg[0] == '/') {
		n = snprintf(t->data_home, sizeof(t->data_home), "%s", xdg);
	} else {
		if (home == NULL)
			home = getenv("HOME");
		if (home == NULL || home[0] != '/')
			return -ENOENT;
		n = snprintf(t->data_home, sizeof(t->data_home), "%s%s.local/share", home,
			     home[strlen(home) - 1] == '/' ? "" : "/");
	}
	if (n < 0 || (size_t)n >= sizeof(t->data_home)) {
		t->data_home[0] = '\0';
		return -ENAMETOOLONG;
	}
	return 0;
}

int fsb_trash_move(const struct fsb_trash_place *t, int dirfd, const char *dir_path,
		   const char *name, fsb_trash_before_fn before, void *arg,
		   char *trashed, char *info, char *why, size_t whylen)
{
	char orig[PATH_MAX], top[PATH_MAX], base[PATH_MAX], dateline[48];
	char text[3 * PATH_MAX + 64];	/* the info file; a path encoded is at most 3 times as long */
	char cand[NAME_MAX + 1], iname[NAME_MAX + 1];
	int trashfd = -1, filesfd = -1, infofd = -1, err;
	struct place entry, parent, home, trash;
	struct stat st;
	const char *rel;
	struct tm tm;
	time_t now;

	trashed[0] = info[0] = why[0] = '\0';
	if (dir_path[0] != '/' || name[0] == '\0' || strchr(name, '/') != NULL ||
	    strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return say(why, whylen, -EINVAL, "cannot trash '%s' in '%s': not a name in an "
			   "absolute directory", name, dir_path);
	if (join(orig, sizeof(orig), dir_path, name) < 0)
		return say(why, whylen, -ENAMETOOLONG, "the path %s/%s is too long", dir_path, name);
	if ((err = place_at(dirfd, name, AT_SYMLINK_NOFOLLOW, &entry)) < 0 ||
	    (err = place_at(dirfd, "", AT_EMPTY_PATH, &parent)) < 0)
		return say(why, whylen, err, "cannot stat %s: %s", orig, strerror(-err));
	if (!same_place(&entry, &parent))
		return say(why, whylen, -EBUSY, "%s is a mount point; it cannot be trashed", orig);

	/* The home trash for the data home's mount, else the top directory's. */
	err = data_home_place(t->data_home, &home);
	if (err < 0)
		return say(why, whylen, err, "cannot stat the data home %s: %s", t->data_home,
			   strerror(-err));
	if (same_place(&home, &entry)) {
		err = open_home_trash(t->data_home, base, &trashfd, why, whylen);
		rel = orig;
	} else {
		err = find_topdir(dir_path, &entry, top);
		if (err < 0)
			return say(why, whylen, err, "cannot find the top directory of %s: %s",
				   orig, strerror(-err));
		err = open_top_trash(top, t->uid, base, &trashfd, why, whylen);
		/* Relative to the top directory, as the specification asks. */
		rel = orig + strlen(top) + (strcmp(top, "/") == 0 ? 0 : 1);
	}
	if (err < 0)
		return err;

	/* A rename cannot cross filesystems, and trashing is never a copy. A
	 * files/ mounted on its own is caught by the rename itself. */
	if ((err = place_at(trashfd, "", AT_EMPTY_PATH, &trash)) < 0) {
		say(why, whylen, err, "cannot stat the trash %s: %s", base, strerror(-err));
		goto out;
	}
	if (!same_place(&trash, &entry)) {
		err = say(why, whylen, -EXDEV, "the trash %s is on another filesystem than %s; "
			  "it is not copied there", base, orig);
		goto out;
	}
	filesfd = open_sub(trashfd, "files", true, true);
	if (filesfd < 0) {
		err = say(why, whylen, filesfd, "cannot open %s/files: %s", base, strerror(-filesfd));
		goto out;
	}
	infofd = open_sub(trashfd, "info", true, true);
	if (infofd < 0) {
		err = say(why, whylen, infofd, "cannot open %s/info: %s", base, strerror(-infofd));
		goto out;
	}

	now = time(NULL);
	if (localtime_r(&now, &tm) == NULL) {
		err = say(why, whylen, -EOVERFLOW, "cannot tell the local time");
		goto out;
	}
	strftime(dateline, sizeof(dateline), "\nDeletionDate=%Y-%m-%dT%H:%M:%S\n", &tm);
	strcpy(text, "[Trash Info]\nPath=");
	err = encode_path(text + strlen(text), sizeof(text) - strlen(text) - strlen(dateline),
			  rel);
	if (err < 0) {
		say(why, whylen, err, "the path %s is too long to encode", orig);
		goto out;
	}
	strcat(text, dateline);

	for (unsigned n = 1; n <= MAX_TRIES; n++) {
		candidate(cand, sizeof(cand), name, n);
		snprintf(iname, sizeof(iname), "%s" INFO_SUFFIX, cand);
		if (join(trashed, PATH_MAX, base, "files/") < 0 ||
		    join(info, PATH_MAX, base, "info/") < 0 ||
		    strlen(trashed) + strlen(cand) >= PATH_MAX ||
		    strlen(info) + strlen(iname) >= PATH_MAX) {
			err = say(why, whylen, -ENAMETOOLONG, "the trash %s is too deep", base);
			goto out;
		}
		strcat(trashed, cand);
		strcat(info, iname);

		/* A name taken in files/ (an entry left without its info file)
		 * is passed over before anything is written or journaled. */
		if (fstatat(filesfd, cand, &st, AT_SYMLINK_NOFOLLOW) == 0)
			continue;
		/* The info file first: a crash after the rename leaves the entry
		 * restorable, one before it only a stray info file. */
		err = write_info(infofd, iname, text);
		if (err == -EEXIST)
			continue;
		if (err < 0) {
			say(why, whylen, err, "cannot write %s: %s", info, strerror(-err));
			goto out;
		}
		if (before != NULL && (err = before(trashed, info, arg)) < 0) {
			unlinkat(infofd, iname, 0);
			goto out;
		}
		if (renameat2(dirfd, name, filesfd, cand, RENAME_NOREPLACE) == 0) {
			err = 0;
			goto out;
		}
		err = -errno;
		unlinkat(infofd, iname, 0);
		if (err == -EEXIST)
			continue;
		if (err == -EINVAL)
			say(why, whylen, err, "cannot move %s to %s: the trash is inside it, or "
			    "the filesystem cannot rename without replacing", orig, trashed);
		else
			say(why, whylen, err, "cannot move %s to %s: %s", orig, trashed,
			    strerror(-err));
		goto out;
	}
	err = say(why, whylen, -EEXIST, "no free name for %s in %s/files after %d tries",
		  name, base, MAX_TRIES);
out:
	if (err < 0)
		trashed[0] = info[0] = '\0';
	if (infofd >= 0)
		close(infofd);
	if (filesfd >= 0)
		close(filesfd);
	close(trashfd);
	return err;
}
