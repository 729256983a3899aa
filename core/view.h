/*
 * view.h — whether a path in a sandboxed process's view names the host's
 * object of that name, or one only the sandbox has (its private /tmp, a
 * private ${tmp}): only the first may be journaled under that path.
 */
#ifndef FSB_VIEW_H
#define FSB_VIEW_H

/**
 * Is `path` (absolute, resolved in view `viewfd`) the host's path of the
 * same name? Compares the object itself, or the nearest directory above it
 * that exists when the object does not exist yet (a create, the entries
 * under a directory's new name in a rename), as reached from `viewfd` and from
 * `hostfd` (the core's own "/"): the same dev/ino means the sandbox sees
 * the host's object there (a bind of the host tree); anything else (the
 * host has nothing there, or another object) means it is the sandbox's own.
 * Returns 1 (the host's), 0 (the sandbox's own), or -errno when the view
 * cannot be examined; the caller then refuses the change.
 */
int fsb_view_is_hosts(int viewfd, int hostfd, const char *path);

struct stat;

/**
 * fsb_view_is_hosts() of an object the caller holds: `obj` is the fstat of
 * an fd opened at `path` in the view (a create just made there), so its
 * dev/ino stand for the view's side and only the host's is looked up.
 */
int fsb_view_object_is_hosts(const struct stat *obj, int hostfd, const char *path);

#endif
