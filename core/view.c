/*
 * view.c — telling the host's objects from the sandbox's own (see view.h).
 *
 * bubblewrap mounts a fresh tmpfs on /tmp (and on ${tmp} when the pack's is
 * elsewhere) and binds the host's trees at their own paths, a workspace
 * under /tmp on top of that tmpfs. A bind shows the host's very inodes, a
 * private tmpfs inodes of its own, so reaching the same path from both
 * roots and comparing (dev, ino) tells them apart without the core knowing
 * the run's mount plan — which it does not, for `fsbroker run --core`.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "at.h"
#include "view.h"

/* (dev, ino) of `path` itself under `rootfd`, never following a final
 * symlink; -errno when it cannot be reached. */
static int identify(int rootfd, const char *path, struct stat *st)
{
	int fd = fsb_at_open(rootfd, path, O_PATH | O_NOFOLLOW, 0), err = 0;

	if (fd < 0)
		return fd;
	if (fstat(fd, st) < 0)
		err = -errno;
	close(fd);
	return err;
}

/* The host's side of the comparison: 1 when `path` from `hostfd` is the
 * object `in` describes, 0 when it is another or nothing, or -errno. */
static int hosts_is(int hostfd, const char *path, const struct stat *in)
{
	struct stat out;
	int rc = identify(hostfd, path, &out);

	/*
	 * Nothing of that name on the host, or not reachable without a symlink
	 * there, or not reachable at all by the core, whose uid is the
	 * sandbox's (the view got there through directories of the same
	 * permissions, so it is another directory): the sandbox's own.
	 */
	if (rc == -ENOENT || rc == -ENOTDIR || rc == -ELOOP || rc == -EXDEV || rc == -EACCES)
		return 0;
	if (rc < 0)
		return rc;
	return in->st_dev == out.st_dev && in->st_ino == out.st_ino;
}

int fsb_view_object_is_hosts(const struct stat *obj, int hostfd, const char *path)
{
	return hosts_is(hostfd, path, obj);
}

int fsb_view_is_hosts(int viewfd, int hostfd, const char *path)
{
	char dir[PATH_MAX];
	struct stat in;
	size_t len = strlen(path);
	int rc;

	if (len >= sizeof(dir))
		return -ENAMETOOLONG;
	memcpy(dir, path, len + 1);
	/*
	 * A name that does not exist yet (a create, or an entry under the new
	 * name of a directory being renamed) lies in the nearest directory
	 * above it that does: that one decides. So does a name beneath a
	 * symlink (ELOOP: an entry under the name a RENAME_EXCHANGE gives a
	 * directory, where a symlink is now): the symlink itself is the
	 * object, the host's or the sandbox's.
	 */
	while (((rc = identify(viewfd, dir, &in)) == -ENOENT || rc == -ENOTDIR || rc == -ELOOP) &&
	       strcmp(dir, "/") != 0) {
		char *slash = strrchr(dir, '/');

		if (slash == dir)
			slash[1] = '\0';
		else
			*slash = '\0';
	}
	if (rc < 0)
		return rc;
	return hosts_is(hostfd, dir, &in);
}
