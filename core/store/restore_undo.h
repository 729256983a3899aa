/*
 * restore_undo.h — what a restore keeps so that it can be undone
 * (docs/restore.md, "Undoing a restore"): before it changes a path, the
 * path's state and content go into a backup store of their own,
 * <state-dir>/sessions/<id>/restore_backup, one sealed cycle per restore,
 * written by the very store code the core uses for its turns.
 */
#ifndef FSB_RESTORE_UNDO_H
#define FSB_RESTORE_UNDO_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "backup_read.h"

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

/*
 * What a cycle of restore_backup did, from the op its records carry: a
 * restore, an undo (it put back what the cycle before it changed) or a redo
 * (it put back what the undo before it took back).
 */
enum fsb_undo_kind { FSB_UNDO_KIND_RESTORE, FSB_UNDO_KIND_UNDO, FSB_UNDO_KIND_REDO };

/** The kind of restore_backup cycle `cy` (a cycle of no record: a restore). */
enum fsb_undo_kind fsb_undo_kind_of(const struct fsb_cycle *cy);

/**
 * Load into `out` the cycle of restore_backup store `undo_store` that
 * `backup undo` (redo false) or `backup redo` acts on: the newest cycle,
 * when it is a restore or a redo (undo) or an undo (redo). 0 with `out`
 * loaded; -ENOENT: the store holds no cycle; -EALREADY: the newest cycle
 * is of the other kind, so there is nothing to undo (redo), and `out` is
 * loaded all the same for the caller to name; another -errno with `err`
 * set. The caller fsb_cycle_free()s `out` after 0 and -EALREADY.
 */
int fsb_undo_target(const char *undo_store, bool redo, struct fsb_cycle *out, char *err,
		    size_t errlen);

/* The cycles of restore_backup that fsb_undo_stands_for reads, each loaded
 * once for a whole restore. */
struct fsb_undo_chain;

/**
 * Whether `now` (what is at `path`: `exists`, `st`) is what undos and
 * redos left when they put back the state `end` (a cycle's end state of
 * the path): the newest undo or redo of `path` left exactly `now`, and the
 * state it put back is `end` (or was itself left by an earlier undo or
 * redo that put back `end`). An undo writes a file anew, so its inode is
 * not the one the cycle ended with, yet nothing but the undo changed it.
 * *chain starts NULL and is loaded on the first call; false on any doubt
 * (no such undo, a store that cannot be read, out of memory).
 */
bool fsb_undo_stands_for(struct fsb_undo_chain **chain, const char *state_dir,
			 const char *session, const char *path, bool exists,
			 const struct stat *st, const struct fsb_end_state *end);

/** Free what fsb_undo_stands_for loaded; NULL is fine. */
void fsb_undo_chain_free(struct fsb_undo_chain *chain);

#endif
