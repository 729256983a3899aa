/*
 * tree.h — walk a directory tree without following anything: every entry
 * beneath a directory, reached by name from its parent's fd with
 * O_NOFOLLOW, for the host operations that act on whole trees (delete,
 * rename, copy; DESIGN §3.3).
 */
#ifndef FSB_TREE_H
#define FSB_TREE_H

#include <limits.h>
#include <stdbool.h>
#include <sys/stat.h>

/* Deeper trees are refused (-ELOOP): each level holds one open fd. */
#define FSB_TREE_MAX_DEPTH 128

struct fsb_tree_entry {
	int dirfd;		/* the directory holding the entry */
	const char *name;	/* its name there */
	const char *rel;	/* its path below the top, "a/b/name" */
	const struct stat *st;	/* its lstat */
	int depth;		/* 1 for an entry directly in the top directory */
	int fd;			/* a directory's own fd (O_RDONLY), else -1 */
	bool mount_root;	/* a directory something is mounted on */
};

/*
 * Called for each entry before anything beneath it (post false) and, for a
 * directory, once more after its contents (post true). A non-zero return
 * stops the walk and becomes its result.
 */
typedef int (*fsb_tree_fn)(const struct fsb_tree_entry *e, bool post, void *arg);

/**
 * Walk everything beneath the directory `name` in `dirfd` (not the
 * directory itself, whose stat is `top`). A directory another filesystem
 * (or a bind mount) is mounted on is reported with mount_root set and not
 * descended into: the callback decides. A directory is descended into
 * only when the fd opened on it is the inode its lstat named: a swap in
 * between stops the walk with -EAGAIN. Returns 0, the callback's non-zero
 * result, -ELOOP beyond FSB_TREE_MAX_DEPTH, -ENAMETOOLONG for a relative
 * path over PATH_MAX, or another -errno. The callback may remove the entry
 * it is given (an entry after its post call, for a directory).
 */
int fsb_tree_walk(int dirfd, const char *name, const struct stat *top, fsb_tree_fn fn, void *arg);

/**
 * Open the directory `name` in `dirfd` with O_NOFOLLOW and check it is the
 * inode `st` describes. The fd, or -errno (-EAGAIN when it is another one).
 */
int fsb_tree_open_dir(int dirfd, const char *name, const struct stat *st);

/**
 * Whether the directory open on `fd` has no entry but "." and "..". Takes
 * `fd` over (closes it). An unreadable directory counts as not empty.
 */
bool fsb_tree_dir_is_empty(int fd);

#endif
