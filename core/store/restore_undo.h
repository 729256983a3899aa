/*
 * restore_undo.h — what a restore keeps so that it can be undone
 * (docs/restore.md, "Undoing a restore"): before it changes a path, the
 * path's state and content go into a backup store of their own,
 * <state-dir>/sessions/<id>/restore_backup, one sealed cycle per restore,
 * written by the very store code the core uses for its turns.
 */
#ifndef FSB_RESTORE_UNDO_H
#define FSB_RESTORE_UNDO_H

#include <stddef.h>

/* The store's directory name under sessions/<id>/. */
#define FSB_RESTORE_BACKUP "restore_backup"

struct fsb_undo;

/** <state_dir>/sessions/<session>/restore_backup into `out`: 0, or -EINVAL /
 * -ENAMETOOLONG as fsb_backup_store_dir. */
int fsb_undo_store_dir(const char *state_dir, const char *session, char *out, size_t len);

/**
 * Open (creating, mode 0700) the restore_backup store of `session` and
 * lock it: -EBUSY while another restore holds it. A cycle a crashed restore
 * left open is sealed as recovered. Returns 0, or -errno with `err` set.
 */
int fsb_undo_open(const char *state_dir, const char *session, struct fsb_undo **out,
		  char *err, size_t errlen);

/**
 * Journal `path` (absolute, normalised) as it is now, reached from `rootfd`
 * without following any symlink: its state, its content when it is a
 * regular file (whatever its size), a symlink's target; absent when it or
 * its parent directory is not there (or a symlink is on the way). `op`
 * names what is about to change it ("restore", "undo"). Not yet durable:
 * fsb_undo_sync follows the last one. 0, or -errno with `err` set.
 */
int fsb_undo_record(struct fsb_undo *u, int rootfd, const char *path, const char *op,
		    char *err, size_t errlen);

/** Make every record durable; nothing may change before it returns 0. */
int fsb_undo_sync(struct fsb_undo *u, char *err, size_t errlen);

/**
 * Seal the cycle (with the end state of every path recorded, so that an
 * undo can tell a later change from the restore's own) and close the
 * store. Returns the cycle's number, or -errno with `err` set; `u` is freed
 * either way.
 */
int fsb_undo_seal(struct fsb_undo *u, const char *message, char *err, size_t errlen);

/**
 * Throw the open cycle away, the restore having changed nothing, and close
 * the store. Objects it wrote stay until a prune of the store removes them.
 */
void fsb_undo_abort(struct fsb_undo *u);

#endif
