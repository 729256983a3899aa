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

/**
 * Back up the file `acc` judged, read from `rdfd` (a read-only fd on the very
 * inode about to change, `st` its stat), in session `sid`'s store, and write
 * the audit line (`phase`). `flags` are a grant's open flags, else 0.
 * Returns 0 when the change may go ahead (backed up; content already in the
 * cycle; skipped by the pack's backup.skip or onTooLarge = "allow"; backups
 * turned off for the session), else -errno with a sentence in `why`:
 * -EFBIG (over the size limit, and the pack says deny or ask), -ENOSPC, -EIO
 * (anything else: the store or the audit log cannot be written). *skipped
 * (may be NULL) is set to why no copy was taken: NULL when one was (or the
 * cycle had it), "too-large", "skip-rule" or "disabled".
 */
int fsb_backup_file(struct fsb_broker *b, const char *sid, const struct fsb_access *acc,
		    int rdfd, const struct stat *st, int flags, const char *phase,
		    const char **skipped, char *why, size_t whylen);

/** One path a host operation is about to change, as it is now. */
struct fsb_backup_entry {
	enum fsb_op op;
	const char *path;		/* as requested; an entry beneath: its real path */
	const char *resolved;		/* the real path */
	const struct stat *prior;	/* its lstat now; NULL: absent, the op creates it */
	int fd;				/* a regular file: read-only fd on that inode, else -1 */
	const char *link_target;	/* a symlink's target, else NULL */
	bool skip_content;		/* the pack's backup.skip matched */
	const char *tool_call, *trace;
};

/**
 * Journal one path a host operation changes, without an audit line of its
 * own (the operation writes one for all) and without syncing: call
 * fsb_backup_sync() after the last entry and before the change. Returns 0
 * (also when backups are off for the session: res->skipped "disabled") or
 * -EFBIG, -ENOSPC, -EIO with a sentence in `why`, as fsb_backup_file().
 */
int fsb_backup_entry(struct fsb_broker *b, const char *sid, const struct fsb_backup_entry *e,
		     struct fsb_backup_result *res, char *why, size_t whylen);

/** Make the entries journaled so far durable. 0 or -errno with `why`. */
int fsb_backup_sync(struct fsb_broker *b, const char *sid, char *why, size_t whylen);

/**
 * Open session `sid`'s store now, which seals an open cycle a crash left
 * behind as recovered (the core does this at start). 0 or -errno with `err`.
 */
int fsb_backup_recover(struct fsb_broker *b, const char *sid, char *err, size_t errlen);

/**
 * Journal that the grant for `acc` created its file (it did not exist
 * before), so a restore removes it. Nothing is copied. 0 or -errno.
 */
int fsb_backup_note_created(struct fsb_broker *b, const char *sid, const struct fsb_access *acc,
			    int flags);

/** A writable fd on (dev, ino) went to a client in session `sid`. */
void fsb_backup_note_write_grant(struct fsb_broker *b, const char *sid, dev_t dev, ino_t ino);

/**
 * Seal session `sid`'s open cycle with `message` and the audit chain's head
 * (the log fsynced first), and audit it. Returns the cycle's number, 0 when
 * no cycle was open, or -errno with `err` set.
 */
int fsb_backup_commit(struct fsb_broker *b, const char *sid, const char *message,
		      char *err, size_t errlen);

/**
 * Seal every session's open cycle with `message`: on an orderly stop, so
 * that the next start does not take the cycles for a crash's leftovers.
 */
void fsb_backup_commit_all(struct fsb_broker *b, const char *message);

#endif
