/*
 * backup.h — the backup store of one session (DESIGN §6.2, docs/backup-store.md):
 * content-addressed objects, cycles with a journal of prior states, sealing
 * and recovery.
 */
#ifndef FSB_BACKUP_H
#define FSB_BACKUP_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "audit.h"

struct fsb_store;

/**
 * Open (creating, mode 0700) <state_dir>/sessions/<session>/modify_backup,
 * shared with every other core that has it open (a shared flock held until
 * fsb_store_close; -EBUSY only when a process that does not share it holds
 * it exclusively). Then every open cycle left by a crash (its journal no
 * longer flocked by a live core) is sealed at once as recovered. Returns 0,
 * or -errno with a sentence in `err`.
 */
int fsb_store_open(const char *state_dir, const char *session, struct fsb_store **out,
		   char *err, size_t errlen);

/**
 * fsb_store_open of the store <state_dir>/sessions/<session>/<name> (one
 * path component): a restore keeps what it changes in "restore_backup",
 * beside the core's "modify_backup", whose lock a running core holds.
 */
int fsb_store_open_at(const char *state_dir, const char *session, const char *name,
		      struct fsb_store **out, char *err, size_t errlen);

/**
 * Close the store. In batched mode everything written is made durable
 * first (one syncfs), so a core that stops cleanly leaves nothing to the
 * page cache.
 */
void fsb_store_close(struct fsb_store *s);

/**
 * The pack's backup.durability for the records that follow (call it under
 * the caller's store lock before fsb_store_record; a reload may change it).
 * Strict: every line a restore needs, and the object it names, is synced
 * before its change. Batched: nothing is synced on a call's path; lines and
 * objects are written (so a SIGKILL of the core loses none) and made
 * durable together by one syncfs at most FSB_STORE_BATCH_MS later, by the
 * store's own thread, and always before a seal and at close
 * (docs/backup-store.md, "The durability contract"). 0 or -errno (the
 * thread could not be started: the store stays strict).
 */
int fsb_store_set_durability(struct fsb_store *s, bool batched);

/** How long a batched backup may stay in the page cache only. */
#define FSB_STORE_BATCH_MS 1000

/** What an fsync/fdatasync/syncfs of the backup stores was for. */
enum fsb_sync_kind {
	FSB_SYNC_JOURNAL,	/* a journal line before its change */
	FSB_SYNC_OBJECT,	/* an object's content */
	FSB_SYNC_DIR,		/* a directory that got an entry (objects/<hh>, a cycle) */
	FSB_SYNC_SEAL,		/* sealing a cycle (journal, cycle.json, its dir) */
	FSB_SYNC_BATCH,		/* batched mode's syncfs, by interval or at close */
	FSB_SYNC_KINDS
};

/** Count one sync of kind `k` (every store of the process; thread-safe). */
void fsb_sync_count(enum fsb_sync_kind k);

/** The syncs of kind `k` counted so far in this process (Stats "fsyncs"). */
uint64_t fsb_sync_total(enum fsb_sync_kind k);

/** The Stats name of kind `k`: "journal", "object", "directory", "seal", "batch". */
const char *fsb_sync_kind_name(enum fsb_sync_kind k);

/** Open a new cycle unless one is open. Returns its number (> 0) or -errno. */
int fsb_store_begin(struct fsb_store *s);

/**
 * Take the store for this core alone (a prune of it): 1 when no other core
 * has it open, and then it stays so until fsb_store_share; 0 when another
 * has it (nothing to undo), or -errno.
 */
int fsb_store_alone(struct fsb_store *s);

/** Share the store again after fsb_store_alone returned 1. */
void fsb_store_share(struct fsb_store *s);

/** The open cycle's number, or 0 when none is open. */
unsigned fsb_store_cycle(const struct fsb_store *s);

enum fsb_too_large {
	FSB_TOO_LARGE_FAIL,	/* return -EFBIG, record nothing */
	FSB_TOO_LARGE_SKIP,	/* record the prior state with skipped "too-large" */
};

struct fsb_backup_req {
	const char *tool_call, *trace;	/* may be NULL */
	const char *op;			/* "write", "delete", ... */
	int flags;			/* open flags of a grant, else 0 */
	const char *path;		/* as requested */
	const char *resolved;		/* the real path the change touches */
	const struct stat *prior;	/* lstat of `resolved`, NULL when absent */
	int fd;				/* readable fd on that very file to copy
					 * from (a regular file), or -1 */
	const char *link_target;	/* for a symlink, else NULL */
	uint64_t max_bytes;		/* copy limit when no reflink; 0: none */
	enum fsb_too_large on_too_large;
	bool skip_content;		/* the pack's backup.skip matched */
	bool metadata_only;		/* the change leaves the content as it is
					 * (chmod, chown, utimes, xattrs): the
					 * prior metadata is journaled, nothing
					 * is copied, `fd` is not read */
	bool keep_inode;		/* the change takes this name away (a
					 * delete, the target a rename replaces):
					 * a file with one link is kept by
					 * linking its inode into the store, no
					 * copy and no size limit */
	bool defer_sync;		/* the caller waits for res->durable itself
					 * (fsb_store_wait), or for a batch
					 * (fsb_store_sync) */
	pthread_mutex_t *caller_lock;	/* the lock the caller holds over the
					 * store, let go while content is copied
					 * (other records go on meanwhile); NULL:
					 * held throughout */
	const struct stat *made;	/* the object the change leaves under
					 * the name (a create already made, a
					 * rename's source, a hard link's file):
					 * its lstat, journaled as `made` (type,
					 * dev, ino) for a restore to know the
					 * object it may remove; NULL when not
					 * known */
	const char *moved_to;		/* a rename's source (or an entry beneath
					 * it): the real path it moves to. A
					 * regular file is journaled with
					 * `moved`, its content not copied: a
					 * restore finds it there */
	bool no_repeat_copy;		/* a path this tool call already recorded
					 * in the cycle is neither copied nor
					 * journaled again (a grant: the first
					 * record holds what a restore reads) */
};

/** How far the journal of a cycle must be on disk. */
struct fsb_journal_mark {
	unsigned cycle;		/* 0: nothing to wait for */
	uint64_t end;		/* bytes of its journal; 0: nothing */
};

struct fsb_backup_result {
	char object[FSB_SHA256_HEX_LEN + 1];	/* "" when no content was taken */
	bool reflinked;		/* FICLONE made the copy */
	bool kept;		/* the inode itself was linked in (keep_inode):
				 * `object` is a random name, not its hash */
	bool reused;		/* the cycle already held this content */
	bool metadata_only;	/* a regular file journaled without content
				 * (req.metadata_only): nothing is lost */
	bool moved;		/* a regular file journaled without content
				 * because it moves (req.moved_to) */
	const char *skipped;	/* NULL, "too-large", "skip-rule" or
				 * "recorded-before" (no_repeat_copy) */
	/* With defer_sync: what must be durable before the change may start
	 * (fsb_store_wait); { 0, 0 } when nothing. */
	struct fsb_journal_mark durable;
};

/**
 * Back up before a change, in the open cycle (opened when none is): copy the
 * content of `fd` into an object unless the cycle already holds this file
 * (same dev/ino) unchanged since (see fsb_store_note_write_grant), then
 * append one journal line with the prior state and, unless `defer_sync`,
 * wait until it is durable when the change needs that (docs/backup-store.md,
 * "When a line is durable": the line of an existing path, not that of a
 * created one nor a later line of a (path, tool call) already in the cycle).
 * Not thread-safe: the caller serialises calls on one store (a lock, which
 * it names in `caller_lock` to have it let go during a copy), but
 * fsb_store_wait may run outside that lock. Returns 0, or -EFBIG (too large
 * and FSB_TOO_LARGE_FAIL), -ENOSPC, -EIO (also for every record after a
 * failed line that could not be cut off the journal, or after a failed
 * fdatasync, until the cycle is sealed), or another -errno; on any error the
 * caller must not let the change happen.
 */
int fsb_store_record(struct fsb_store *s, const struct fsb_backup_req *r,
		     struct fsb_backup_result *res);

/**
 * The first time tool call `tool_call` creates or removes a name in a
 * directory in the open cycle, the directory's state comes first: a line
 * of op "entries" with its metadata (mode, owner, times, xattrs), so that
 * a restore gives it its pre-cycle mtime back once what is inside is back.
 * fsb_store_record does this itself before every change of names; a
 * caller that journals a create after making it (a grant's O_CREAT) calls
 * this before, with the real path `resolved` of the name it will make.
 * 0 or -errno (the journal could not be written: the change must not
 * happen).
 */
int fsb_store_note_parent(struct fsb_store *s, const char *resolved, const char *tool_call,
			  const char *trace);

/** Whether the directory of `resolved` has its "entries" line in the open
 * cycle for `tool_call` already: fsb_store_note_parent() would add none. */
bool fsb_store_parent_noted(struct fsb_store *s, const char *resolved, const char *tool_call);

/**
 * A writable fd on (dev, ino) was handed out: its content may change from
 * now on, so the next record of it copies it again.
 */
void fsb_store_note_write_grant(struct fsb_store *s, dev_t dev, ino_t ino);

/**
 * Seal the open cycle: cycle.json with the message, the times, `audit_head`
 * and the end state of every path the cycle touched, written to a temporary
 * name, fsynced and renamed into place. Returns the sealed cycle's number,
 * 0 when no cycle was open or the open one has no line (it is removed: a
 * turn that changed nothing leaves no cycle), or -errno with `err` set.
 */
int fsb_store_seal(struct fsb_store *s, const char *message, const char *audit_head,
		   char *err, size_t errlen);

/**
 * Make the journal lines recorded with `defer_sync` that must be durable so:
 * a host operation on a tree records every entry, then syncs once before
 * the change. 0 or -errno (-ENOSPC for a full disk); on an error the change
 * must not happen. fsb_store_pending + fsb_store_wait.
 */
int fsb_store_sync(struct fsb_store *s);

/** Under the caller's lock: the mark that covers every line recorded so
 * far that must be durable. */
void fsb_store_pending(const struct fsb_store *s, struct fsb_journal_mark *m);

/**
 * Wait until the journal is durable up to `m` (a record's res->durable, or
 * fsb_store_pending). Safe from several threads at once and without the
 * lock that serialises fsb_store_record: while one thread's fdatasync runs,
 * the others wait, and the next fdatasync covers every line written before
 * it (group commit). Returns at once when nothing is to be waited for, or
 * when the cycle was sealed since (a seal syncs its journal first). 0, or
 * -errno (-ENOSPC for a full quota) of a failed fdatasync: the change must
 * not happen.
 */
int fsb_store_wait(struct fsb_store *s, const struct fsb_journal_mark *m);

/**
 * The change a record kept inode `object` for (res->kept) did not happen:
 * the file keeps its name, so the store's link becomes a copy. Not
 * thread-safe (under the caller's lock). 0 or -errno.
 */
int fsb_store_unshare(struct fsb_store *s, const char *object);

/** The store's directory (…/modify_backup). */
const char *fsb_store_dir(const struct fsb_store *s);

#endif
