/*
 * hostop_internal.h — what the host operations share (hostop.c runs them;
 * hostop_delete.c, hostop_mkdir.c, hostop_rename.c, hostop_copy.c and
 * hostop_meta.c each hold one kind): the state of one operation, and the
 * steps every kind goes through — judge, reach, back up, audit — as
 * hostop_steps.c implements them. Not for use outside the host operations.
 */
#ifndef FSB_HOSTOP_INTERNAL_H
#define FSB_HOSTOP_INTERNAL_H

#include <stdbool.h>
#include <sys/stat.h>

#include "hostop.h"
#include "tree.h"

/* A callback's way to stop a tree walk once it has set the outcome; no
 * -errno is positive, so it cannot be mistaken for the walk's own error. */
#define STOPPED 1

struct inode_key {
	dev_t dev;
	ino_t ino;
	bool skip_content;	/* the pack's backup.skip matched it */
};

/* Inodes met beneath a directory. `judged`: what the judging walk allowed;
 * the walks after it act on those only, never on an entry that appeared
 * since. `unsaved`: files whose content is not in the backup (backup.skip,
 * or too large): a move of one is not undone by removing its new name. */
struct inode_set {
	struct inode_key *keys;
	size_t n, cap;
	bool sorted;
};

/* A path the policy allowed only through an approval: taken (used up) once
 * every path of the operation is allowed, not before. */
struct approved {
	enum fsb_op op;
	char *path;
	bool exists;
	struct stat st;
};

struct hostop {
	struct fsb_broker *b;
	const struct fsb_hostop_client *who;
	int rootfd;			/* the requester's "/" */
	const struct fsb_hostop_req *req;
	struct fsb_access src, dst;	/* `path` (or `from`), and `to` */
	struct fsb_access entry;	/* an entry beneath a directory, in turn */
	struct fsb_access backup_ask;	/* a file too large to back up, waiting */
	const struct fsb_access *refused;	/* the access the policy refused */
	char src_real[PATH_MAX];	/* normalisedPath of the reply, when not src's */
	int err;			/* the outcome: 0 or an errno */
	char why[768];			/* a sentence for err ("" → strerror) */
	char denied[PATH_MAX];		/* the entry beneath that was refused */
	bool audited;			/* the line before the change is written */
	bool changed;
	unsigned entries, backups;
	char trashed[PATH_MAX], trash_info[PATH_MAX];
	struct inode_set judged, unsaved;
	bool src_unsaved;		/* the source's content is not in the backup */
	bool last_unsaved;		/* the same, for the last path hop_record()ed */
	const char *moved_to;		/* while a rename's source is recorded: the
					 * real path it moves to (journaled, so
					 * that its content need not be copied) */
	/* Objects kept by link for this operation: when it fails, each
	 * becomes a copy, and the file it still names has one link again. */
	char (*kept)[FSB_SHA256_HEX_LEN + 1];
	size_t nkept;
	struct approved *approved;	/* the pack's approvals to take */
	size_t napproved;
	struct approved *too_large;	/* approvals of changes without a backup */
	size_t ntoo_large;
};

/* A walk beneath a directory an operation deletes, renames or copies. */
struct tree_job {
	struct hostop *h;
	const char *old_top;	/* the directory's real path */
	const char *new_top;	/* its real path after the operation, or NULL */
	const char *move_top;	/* a rename's: where old_top goes, even when
				 * no line is written under the new name */
	enum fsb_op old_op, new_op;
	bool backup_old;	/* back up the entries under the old name */
	bool copy;		/* devices and sockets are refused */
};

/* ---- hostop.c: the steps ------------------------------------------------- */

/** Set the outcome to `err` with a sentence; returns -1 for `return hop_fail()`. */
int hop_fail(struct hostop *h, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/** Judge `op` of `path` into `a`; -1 with the outcome set when refused. */
int hop_judge(struct hostop *h, struct fsb_access *a, enum fsb_op op, const char *path,
	      enum fsb_resolve_strategy strategy);

/** Judge an entry beneath a directory (its real path) into h->entry. */
int hop_judge_entry(struct hostop *h, enum fsb_op op, const char *real, const struct stat *st);

/** The judged object's parent, reached without following a symlink; its
 * final name in *name. An fd, or -1 with the outcome set. */
int hop_open_parent(struct hostop *h, const struct fsb_access *a, const char **name);

/** 0 when `name` in `pfd` is still the object `a` judged (device, inode). */
int hop_still_there(struct hostop *h, int pfd, const char *name, const struct fsb_access *a,
		    struct stat *st);

/** Reach the object `a` judged: an O_PATH fd checked to be it, or -1. */
int hop_reach(struct hostop *h, const struct fsb_access *a, struct stat *st);

/** Journal the prior state of a path into the session's open cycle. */
int hop_record(struct hostop *h, enum fsb_op op, const char *requested, const char *real,
	       const struct stat *st, int rdfd, const char *target, bool skip_content);

/**
 * Journal `real`, a name the operation creates for an object that exists
 * already: `made` is its lstat (a rename's source, a hard link's file), so
 * that a restore of a cycle still open knows the object it may remove.
 */
int hop_record_new_name(struct hostop *h, enum fsb_op op, const char *requested,
			const char *real, const struct stat *made);

/** Journal the directory `a` creates a name in, before the create that
 * moves its mtime, when the operation journals the name only after it. */
int hop_note_parent(struct hostop *h, const struct fsb_access *a);

/** hop_record() of `name` in `pfd`, its content copied first. */
int hop_backup_at(struct hostop *h, enum fsb_op op, const char *requested, const char *real,
		  int pfd, const char *name, const struct stat *st, bool skip_content);

/** hop_backup_at() of a name the operation gives another object, whose
 * lstat is `made` (the source of a rename that replaces it). */
int hop_backup_replaced(struct hostop *h, enum fsb_op op, const char *requested,
			const char *real, int pfd, const char *name, const struct stat *st,
			bool skip_content, const struct stat *made);

/**
 * Journal an object already reached (lstat `st`) before a change of its
 * metadata (chmod, touch): its prior mode, owner, times and xattrs, and no
 * content.
 */
int hop_backup_meta(struct hostop *h, const struct fsb_access *a, const struct stat *st);

/** Sync the backups recorded, once, before anything changes. */
int hop_sync_backups(struct hostop *h);

/** The audit line before the change: no line, no change. */
int hop_audit_before(struct hostop *h);

/** Start `l` with the fields every audit line of `h` carries (the line
 * before and the line after: what, where, who; `errnum` as "errno" unless
 * 0); the caller adds the rest and writes it. */
void hop_audit_line(struct hostop *h, struct fsb_audit_line *l, int errnum);

/** Walk beneath `name` in `pfd` with `fn`, the walk's errors as the outcome. */
int hop_walk(struct tree_job *j, int pfd, const char *name, const struct stat *st,
	     fsb_tree_fn fn);

/** Walk callbacks: judge every entry (and note its inode), then back up
 * every entry judged. */
int hop_check_entry(const struct fsb_tree_entry *e, bool post, void *arg);
int hop_save_entry(const struct fsb_tree_entry *e, bool post, void *arg);

/** The inode `st` among those noted in `s`, or NULL. */
const struct inode_key *hop_inode_set_get(struct inode_set *s, const struct stat *st);

/* ---- one file per kind: each sets h->err and h->why, 0 or -1 ----------- */

int hop_delete(struct hostop *h);
/** True when the directory `name` in `pfd` has no entry. */
bool hop_dir_is_empty(int pfd, const char *name, const struct stat *st);
int hop_mkdir_one(struct hostop *h);
int hop_mkdir_parents(struct hostop *h);
int hop_rename(struct hostop *h);
int hop_exchange(struct hostop *h);
int hop_copy(struct hostop *h);
int hop_chmod(struct hostop *h);
int hop_link(struct hostop *h);
int hop_touch(struct hostop *h);

#endif
