/*
 * scan_index.h — the index of the reads = "mask" scan (DESIGN §7.1): for
 * each directory the scan read, its identity and change times and what the
 * scan found among its entries, so that a repeat `fsbroker run` reads again
 * only the directories that changed. The format, the trust rules and where
 * it is kept are in scan_index.c's header comment and
 * docs/runtime-mount-plan.md ("The scan index").
 */
#ifndef FSB_SCAN_INDEX_H
#define FSB_SCAN_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "policy.h"

/* What the scan found at one entry of a directory, and what a repeat run
 * does with it without asking the pack again. Entries the pack does not
 * hide and that are not directories are only counted. */
enum fsb_scan_child_kind {
	FSB_SCAN_SUBDIR = 'd',		/* not hidden: looked beneath */
	FSB_SCAN_SUBDIR_EXCEPT = 'x',	/* hidden, but an exception lies beneath: looked beneath */
	FSB_SCAN_MATCH_FILE = 'm',	/* hidden: masked (/dev/null over it) */
	FSB_SCAN_MATCH_DIR = 'M',	/* hidden: masked whole */
	FSB_SCAN_MATCH_LINK = 'l',	/* a hidden symlink: its target resolved again each run */
};

struct fsb_scan_child {
	char kind;			/* enum fsb_scan_child_kind */
	const char *name;		/* NUL-terminated */
	const char *rule;		/* the denyRead rule, "" for the subdirectories */
};

/* One directory's record. */
struct fsb_scan_dir {
	const char *path;
	uint64_t dev, ino;
	int64_t ctime_ns, mtime_ns;
	uint64_t nentries;		/* entries other than . and .., as the scan counts them */
	const struct fsb_scan_child *children;
	size_t nchildren;
	/* private: where the record lies in the loaded file */
	size_t raw_off, raw_len;
};

struct fsb_scan_index {
	char file[4096];		/* the index file; "" when none is kept */
	char *key;			/* what the index is valid for (fsb_scan_index_key) */
	size_t key_len;
	int64_t started_ns;		/* this scan's start, on the clock inodes are stamped with */
	/* the index read at the start */
	char *buf;
	size_t len;
	int64_t trusted_before_ns;	/* records stamped at or after this are read again */
	struct fsb_scan_dir *dirs;
	size_t ndirs;
	struct fsb_scan_child *children;
	size_t *slots;			/* open addressing by path: index + 1 into dirs, 0 empty */
	size_t nslots;
	/* the index being written */
	unsigned char *out;
	size_t out_len, out_cap;
	uint64_t out_ndirs;
	uint64_t out_fresh;		/* records added by a read, not carried over */
	bool out_failed;		/* too large or out of memory: nothing is saved */
	/* the last file system judged by fsb_scan_index_fs_ok */
	uint64_t fs_dev;
	int fs_ok;			/* -1 not judged yet */
	char why_unused[512];		/* why the index read at the start was not used, or "" */
};

/**
 * What an index is valid for: the scan's bounds, the read mode, the user,
 * the workspace's path and identity and every denyRead entry of `sum`
 * (glob, base, kind, exception, rule). Any difference means a full scan.
 * A malloc'd string in *key (with its length), 0 or -ENOMEM.
 */
int fsb_scan_index_key(const struct fsb_policy_summary *sum, const char *workspace,
		       size_t max_entries, unsigned max_depth, char **key, size_t *key_len);

/**
 * Open the index of `workspace` under `state_dir` (its scan-index/ dir,
 * made 0700 if missing) for a scan valid for `key` (taken over). An index
 * that is missing, foreign-owned, group- or world-writable, not a regular
 * file, over the size bound, truncated, corrupt or made for another key is
 * not used (why_unused says which) and is replaced when the scan is saved.
 * Without a usable state dir no index is kept (file ""). 0 or -ENOMEM;
 * nothing else is an error: the scan is full instead.
 */
int fsb_scan_index_open(struct fsb_scan_index *ix, const char *state_dir, const char *workspace,
			char *key, size_t key_len);

/**
 * The record of the directory `path`, whose lstat is `st`, when it can be
 * trusted: same dev, inode, ctime and mtime, both stamps strictly older
 * than the trusted-before time of the index. NULL: read the directory.
 */
const struct fsb_scan_dir *fsb_scan_index_find(const struct fsb_scan_index *ix, const char *path,
					       const struct stat *st);

/**
 * True when directories on the file system of the open directory `fd`
 * (device `dev`) may be indexed: a local file system whose change times
 * move with every change of a directory's entries or mode.
 */
bool fsb_scan_index_fs_ok(struct fsb_scan_index *ix, int fd, uint64_t dev);

/** Carry a record found by fsb_scan_index_find() into the index being written. */
void fsb_scan_index_keep(struct fsb_scan_index *ix, const struct fsb_scan_dir *d);

/**
 * Add the record of a directory read in full: `st` its lstat taken before
 * it was read, `nentries` the entries the scan counted, `children` what it
 * found (subdirectories and matches).
 */
void fsb_scan_index_add(struct fsb_scan_index *ix, const char *path, const struct stat *st,
			uint64_t nentries, const struct fsb_scan_child *children, size_t n);

/**
 * Write the index: a temp file in scan-index/, renamed over the old one.
 * Not synced: a lost index is one full scan. 0, or -errno (the index is
 * then left as it was or missing; the plan does not depend on it).
 */
int fsb_scan_index_save(struct fsb_scan_index *ix);

void fsb_scan_index_free(struct fsb_scan_index *ix);

#endif
