/*
 * resolve.h — turn a requested path into the real path the policy judges
 * (DESIGN §5), in the requester's view of the filesystem.
 *
 * The view is a directory fd that stands for "/": the core's own root for a
 * client outside any sandbox, a pinned /proc/<pid>/root for one inside.
 * Resolution walks one component at a time with fstatat/readlinkat relative
 * to that root, so `..` and absolute symlink targets never escape it.
 */
#ifndef FSB_RESOLVE_H
#define FSB_RESOLVE_H

#include <limits.h>
#include <stdbool.h>
#include <sys/stat.h>

enum fsb_resolve_strategy {
	/* The real path of an existing object; -ENOENT if it does not exist
	 * (chmod, the source of a hard link). A final symlink is followed. */
	FSB_RESOLVE_EXISTING,
	/* The real path of the parent plus the final name, which may not
	 * exist and is never followed (delete, mkdir, rename and copy ends). */
	FSB_RESOLVE_THROUGH_PARENT,
	/* Existing: as FSB_RESOLVE_EXISTING. Else through the parent. A final
	 * dangling symlink is followed to the name it would create (touch,
	 * text requests). */
	FSB_RESOLVE_EXISTING_OR_CREATABLE,
};

struct fsb_resolved {
	char path[PATH_MAX];	/* absolute, no symlink, `.` or `..` in it */
	bool exists;		/* the final object exists */
	struct stat st;		/* lstat of the final object when it exists */
};

/**
 * Resolve `path` (absolute) under `rootfd` with `strategy`. Returns 0, or
 * -ENOENT (a missing component, or the object for FSB_RESOLVE_EXISTING),
 * -ENOTDIR, -ELOOP (more than 40 symlinks), -ENAMETOOLONG (input or result
 * over PATH_MAX), -EINVAL (relative or empty path, or a final `.`/`..` for
 * FSB_RESOLVE_THROUGH_PARENT), or another -errno from the kernel.
 */
int fsb_resolve(int rootfd, const char *path, enum fsb_resolve_strategy strategy,
		struct fsb_resolved *out);

/**
 * Lexical normalisation for an absolute path: collapse `//` and `/./`,
 * apply `..` (never above `/`), drop a trailing `/`. Returns 0 or
 * -ENAMETOOLONG / -EINVAL (not absolute). `out` holds PATH_MAX bytes.
 */
int fsb_path_lexical(const char *path, char *out);

/** True when `path` is `dir` or lies beneath it (both lexically normal). */
bool fsb_path_within(const char *path, const char *dir);

#endif
