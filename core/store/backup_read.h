/*
 * backup_read.h — read a session's backup store (docs/backup-store.md):
 * find its cycles, load one cycle's journal (each line decoded by
 * journal.c) and cycle.json into structs, choose the record that holds each
 * path's state to restore, and read objects back, checked against their
 * SHA-256 names. Nothing here writes.
 */
#ifndef FSB_BACKUP_READ_H
#define FSB_BACKUP_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#include "audit.h"
#include "journal.h"
#include "xattr.h"

enum fsb_cycle_state { FSB_CYCLE_OPEN, FSB_CYCLE_SEALED, FSB_CYCLE_RECOVERED };

/** One cycle, loaded. Strings are owned; never NULL ("" when unknown). */
struct fsb_cycle {
	unsigned number;
	enum fsb_cycle_state state;
	char *message;
	char *opened, *sealed;	/* RFC 3339; an open cycle's `opened` is the
				 * time of its first record */
	char audit_head[FSB_SHA256_HEX_LEN + 1];
	struct fsb_journal_rec *recs;	/* in journal order */
	size_t nrecs;
	struct fsb_end_state *ends;	/* sorted by path; empty when open or
					 * recovered (no end state is known) */
	size_t nends;
	size_t npaths;		/* distinct `resolved` paths in the journal */
	size_t nobjects;	/* distinct objects the journal names */
	unsigned malformed;	/* journal lines reported and skipped */
};

/** The name of a cycle state: "open", "sealed", "recovered". */
const char *fsb_cycle_state_name(enum fsb_cycle_state s);

/**
 * <state_dir>/sessions/<session>/modify_backup into `out`. Returns 0,
 * -EINVAL for a session id that is empty, ".", ".." or holds a '/', or
 * -ENAMETOOLONG.
 */
int fsb_backup_store_dir(const char *state_dir, const char *session, char *out, size_t len);

/**
 * The directory names under <state_dir>/sessions, sorted, in a malloc'd
 * array of malloc'd strings. Returns 0 (also for none), or -errno (-ENOENT
 * when there is no sessions directory).
 */
int fsb_backup_sessions(const char *state_dir, char ***names, size_t *n);

void fsb_backup_sessions_free(char **names, size_t n);

/**
 * The numbers of the cycles under <store_dir>/cycles, ascending, in a
 * malloc'd array (NULL when none). Entries that are not a positive decimal
 * number are ignored. A store without a cycles directory has no cycles:
 * returns 0. Otherwise 0 or -errno.
 */
int fsb_cycles_list(const char *store_dir, unsigned **nums, size_t *n);

/**
 * Load cycle `number`: every well-formed journal line, and cycle.json when
 * the cycle is sealed. A file's record that kept only metadata (chmod,
 * utimes, ...) takes the object (or skip) of the first later record of the
 * same path and inode that kept content: the bytes that record saved are
 * the ones the cycle began with. A malformed journal line is reported to `report`
 * (when not NULL) as "<file>:<line>: <what is wrong>" and skipped; so is a
 * malformed entry of cycle.json `paths`. Returns 0, or -errno with a
 * sentence naming the file in `err`: -ENOENT when the cycle does not
 * exist, -EBADMSG when cycle.json cannot be used. On error `out` holds
 * nothing to free.
 */
int fsb_cycle_load(const char *store_dir, unsigned number, struct fsb_cycle *out,
		   FILE *report, char *err, size_t errlen);

void fsb_cycle_free(struct fsb_cycle *c);

/** The end state recorded for `path`, or NULL. */
const struct fsb_end_state *fsb_cycle_end_state(const struct fsb_cycle *c, const char *path);

/** One path a restore concerns, and the record that holds its state. */
struct fsb_pick {
	const struct fsb_journal_rec *rec;	/* the record to restore from */
	const struct fsb_end_state *end;	/* NULL when none is recorded */
	const struct fsb_journal_rec **all;	/* every record of the path in
						 * the cycle, in journal order */
	size_t nall;
	bool later_by_others;	/* another tool call touched the path after `rec` */
};

struct fsb_picks {
	struct fsb_pick *v;	/* in the order the paths were first touched */
	size_t n;
	const struct fsb_journal_rec **order;	/* storage behind every `all` */
};

/**
 * Choose, for every path (`resolved`) the cycle touched, its first record;
 * with `tool_call` not NULL, only the paths that tool call touched, each
 * with the first record of that tool call. Returns 0 or -ENOMEM.
 */
int fsb_cycle_pick(const struct fsb_cycle *c, const char *tool_call, struct fsb_picks *out);

void fsb_picks_free(struct fsb_picks *p);

/** The records of a cycle that moved a path (`moved_to` set), by moved_to. */
struct fsb_moves {
	const struct fsb_journal_rec **v;
	size_t n;
};

/** Index the renames of `c` (fsb_moves_into). 0 or -ENOMEM. */
int fsb_cycle_moves(const struct fsb_cycle *c, struct fsb_moves *out);

/**
 * The rename-from record that made the name of `p`, when that is all the
 * cycle did there (its one record a rename-to of an absent path): the path
 * is the other end of a rename, not a create. NULL otherwise.
 */
const struct fsb_journal_rec *fsb_moves_into(const struct fsb_moves *m, const struct fsb_pick *p);

/** Free the index (not the records it points at). */
void fsb_moves_free(struct fsb_moves *m);

/**
 * Open object `hex` of the store read-only, never through a symlink and
 * never blocking. Returns the fd, -EINVAL for a malformed name, -ENXIO when
 * it is not a regular file (a FIFO, a device, a directory), or -errno.
 */
int fsb_backup_object_open(const char *store_dir, const char *hex);

/**
 * Read the object on `fd` from its start, hash it and, when `out_fd` >= 0,
 * write every byte to `out_fd` as well. Returns 0 when its SHA-256 is
 * `hex`, -EBADMSG when it is not (the caller must throw away what it
 * wrote), or -errno.
 */
int fsb_backup_object_copy(int fd, const char *hex, int out_fd);

/**
 * Check the object of `p` on `fd` before it is read back: its SHA-256 for
 * a copy (fsb_backup_object_copy), for a kept inode (p->kept) that it is
 * still the file the record describes (a regular file of the recorded size
 * and mtime). Returns 0, -EBADMSG (damaged), -ESTALE (a kept inode changed
 * since), -ENXIO (not a regular file) or -errno.
 */
int fsb_backup_object_check(int fd, const struct fsb_prior *p);

/**
 * Copy the object of `p` on `fd` to `out_fd`: fsb_backup_object_copy for a
 * copy; a kept inode is checked with fsb_backup_object_check and copied
 * as it is. 0, or -errno as those.
 */
int fsb_backup_object_restore(int fd, const struct fsb_prior *p, int out_fd);

/**
 * Copy the bytes of a moved file (prior.moved) from `fd`, the inode at its
 * moved_now, into `out_fd` (FICLONE first). 0, -ENXIO when `fd` is not a
 * regular file, -ESTALE when its size is not the recorded one, or -errno.
 */
int fsb_backup_moved_restore(int fd, const struct fsb_prior *p, int out_fd);

#endif
