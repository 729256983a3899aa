/*
 * modify_backup.h — when and how the core backs up before a change (DESIGN
 * §6.1): the store of the requester's session, the size limit of the pack
 * or of the turn, and the audit line that says what was saved.
 */
#ifndef FSB_MODIFY_BACKUP_H
#define FSB_MODIFY_BACKUP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "broker.h"

/* The rule a prompt block for a too-large backup names. */
#define FSB_TOO_LARGE_RULE "backup.onTooLarge ask"

/** What became of a backup, beyond its return value. */
struct fsb_backup_outcome {
	const char *skipped;	/* no copy taken: "too-large", "skip-rule", "disabled",
				 * "private" (only the sandbox has the path:
				 * nothing journaled); or NULL */
	bool approved_too_large;	/* an approval of an onTooLarge block let it through */
	char block_id[24];	/* -EACCES: the prompt block the change waits on */
	char why[512];		/* a sentence, when it failed */
};

/**
 * Back up the file `acc` judged, read from `rdfd` (a read-only fd on the very
 * inode about to change, `st` its stat), in session `sid`'s store, and write
 * the audit line (`phase`). `flags` are a grant's open flags, else 0.
 * Returns 0 when the change may go ahead (backed up; content already in the
 * cycle; skipped by the pack's backup.skip, by onTooLarge = "allow" or by an
 * approval of an onTooLarge = "ask" block; backups turned off for the
 * session), else -errno with a sentence in out->why: -EACCES (too large and
 * onTooLarge = "ask": out->block_id names the prompt block; once the host
 * approves it, the same change goes ahead without a copy), -EFBIG (too
 * large, onTooLarge = "deny"), -ENOSPC, -EIO (anything else: the store or
 * the audit log cannot be written).
 */
int fsb_backup_file(struct fsb_broker *b, const char *sid, const struct fsb_access *acc,
		    int rdfd, const struct stat *st, int flags, const char *phase,
		    struct fsb_backup_outcome *out);

/**
 * With the broker's lock held: the host approved prompt block `p`, which
 * fsb_backup_file recorded for a file over the size limit (its rule is
 * FSB_TOO_LARGE_RULE). The change it blocked may then go ahead without a
 * backup, once (`scope` "once") or for the rest of the session. 0 or -errno.
 */
int fsb_backup_approve_too_large(struct fsb_broker *b, const struct fsb_prompt *p,
				 const char *scope);

/** One path a host operation is about to change, as it is now. */
struct fsb_backup_entry {
	enum fsb_op op;
	const char *path;		/* as requested; an entry beneath: its real path */
	const char *resolved;		/* the real path */
	const struct stat *prior;	/* its lstat now; NULL: absent, the op creates it */
	const struct stat *made;	/* the lstat of the object the op leaves
					 * here when it is one that exists now (a
					 * rename's source, a hard link's file),
					 * else NULL */
	int fd;				/* a regular file: read-only fd on that inode, else -1 */
	const char *link_target;	/* a symlink's target, else NULL */
	bool skip_content;		/* the pack's backup.skip matched */
	bool metadata_only;		/* chmod, chown, utimes, xattrs: the
					 * content stays, only the prior
					 * metadata is journaled (`fd` unused) */
	bool keep_inode;		/* the change takes this name away for
					 * good (a delete that unlinks, the
					 * target a rename replaces): a file
					 * with one link is kept by linking its
					 * inode into the store, not copied */
	const char *moved_to;		/* a rename's source: where it goes
					 * (its content is not copied) */
	bool in_place;			/* the path stays where it is (truncate,
					 * times, owner, mode): one its tool call
					 * recorded in the cycle needs nothing more */
	const char *tool_call, *trace;
	/* The requester's "/" when it is not the core's (a sandboxed process):
	 * a path only the sandbox has is not journaled (view.h). */
	bool has_view;
	int view_fd;
};

/**
 * Journal one path a host operation changes, without an audit line of its
 * own (the operation writes one for all) and without syncing: call
 * fsb_backup_sync() after the last entry and before the change. Returns 0
 * (also when backups are off for the session: res->skipped "disabled") or
 * -EACCES, -EFBIG, -ENOSPC, -EIO with `out` filled, as fsb_backup_file().
 * An approval of a too-large block is only looked at here
 * (out->approved_too_large): the operation uses it up with
 * fsb_backup_take_too_large() once everything it touches is allowed.
 */
int fsb_backup_entry(struct fsb_broker *b, const char *sid, const struct fsb_backup_entry *e,
		     struct fsb_backup_result *res, struct fsb_backup_outcome *out);

/**
 * Use up the approval that let `resolved` (dev, ino) of session `sid` be
 * changed without its backup. 0, or -ENOENT when it is gone (another
 * request used it meanwhile).
 */
int fsb_backup_take_too_large(struct fsb_broker *b, const char *sid, const char *resolved,
			      dev_t dev, ino_t ino);

/**
 * The operation that kept `object` (res->kept of fsb_backup_entry) by link
 * failed and the file keeps its name: make the store's link a copy, so the
 * file has one link again. 0 or -errno.
 */
int fsb_backup_unshare(struct fsb_broker *b, const char *sid, const char *object);

/** Make the entries journaled so far durable. 0 or -errno with `why`. */
int fsb_backup_sync(struct fsb_broker *b, const char *sid, char *why, size_t whylen);

/**
 * Open session `sid`'s store now, which seals an open cycle a crash left
 * behind as recovered (the core does this at start). 0 or -errno with `err`.
 */
int fsb_backup_recover(struct fsb_broker *b, const char *sid, char *err, size_t errlen);

/**
 * Journal that the grant for `acc` created its file (it did not exist
 * before), so a restore removes it. Nothing is copied. `made` is the
 * fstat of the object the create made, opened in the access's view (its
 * type, dev and ino are journaled, so a restore removes that object and no
 * other, and stand for the view's side of the host-or-sandbox check), or
 * NULL when the create has not happened yet. 0 or -errno.
 */
int fsb_backup_note_created(struct fsb_broker *b, const char *sid, const struct fsb_access *acc,
			    int flags, const struct stat *made);

/**
 * Before a grant creates the file `acc` judged (O_CREAT of a name that
 * does not exist): journal the state of its directory, whose mtime the
 * create moves (fsb_store_note_parent). 0, or -EIO: the create must not
 * happen.
 */
int fsb_backup_note_parent(struct fsb_broker *b, const char *sid, const struct fsb_access *acc);

/**
 * A writable fd on the file `st` describes went to a client in session
 * `sid`: the next backup of that file in the cycle copies it again. `fd`
 * (may be -1) is that fd, `st` its fstat: a regular file is then followed
 * across cycles (see fsb_backup_commit).
 */
void fsb_backup_note_write_grant(struct fsb_broker *b, const char *sid, int fd,
				 const struct stat *st);

/**
 * Seal session `sid`'s open cycle with `message` and the audit chain's head
 * (the log fsynced first), and audit it. Then every file granted for
 * writing that some process still holds open for writing is backed up into
 * the next cycle at once (its holder may change it in the next turn without
 * asking again). Returns the sealed cycle's number, 0 when no cycle was
 * open, or -errno with `err` set.
 */
int fsb_backup_commit(struct fsb_broker *b, const char *sid, const char *message,
		      char *err, size_t errlen);

/**
 * Seal every session's open cycle with `message`: on an orderly stop, so
 * that the next start does not take the cycles for a crash's leftovers.
 */
void fsb_backup_commit_all(struct fsb_broker *b, const char *message);

#endif
