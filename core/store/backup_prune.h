/*
 * backup_prune.h — remove old sealed cycles of a backup store, and then the
 * objects no remaining cycle names (docs/restore.md, "Removing old cycles"):
 * by count, by age, or down to a size. `fsbroker backup prune` uses it, and
 * so does the core to keep the pack's backup.quotaMB after it seals a cycle.
 */
#ifndef FSB_BACKUP_PRUNE_H
#define FSB_BACKUP_PRUNE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* max_bytes when the store's size does not matter. */
#define FSB_PRUNE_NO_LIMIT UINT64_MAX

enum fsb_prune_msg {
	FSB_PRUNE_REMOVED,	/* a cycle, or the leftover of an interrupted prune, went
				 * (or would go, in a dry run) */
	FSB_PRUNE_NOTE,		/* something kept on purpose, said once */
	FSB_PRUNE_ERROR,	/* something could not be read or removed */
};

/* One sentence, without a trailing newline. */
typedef void fsb_prune_report_fn(void *arg, enum fsb_prune_msg kind, const char *msg);

struct fsb_prune_opts {
	long keep;		/* remove every sealed cycle but the newest `keep`; -1: not by count */
	long older_than;	/* remove sealed cycles sealed more than this many days ago; -1: not by age */
	uint64_t max_bytes;	/* then remove the oldest sealed cycles until the store holds at
				 * most this; FSB_PRUNE_NO_LIMIT: not by size */
	unsigned spare_newest;	/* never remove the newest this many sealed cycles */
	bool dry_run;		/* say what would go, change nothing */
	fsb_prune_report_fn *report;	/* may be NULL */
	/* Each cycle removed (or that would be), by number; may be NULL. */
	void (*cycle_gone)(void *arg, unsigned cycle);
	/* How far the pass over the store's objects is: `done` of `total`,
	 * at least once at the end; may be NULL. */
	void (*objects_step)(void *arg, size_t done, size_t total);
	void *arg;
};

struct fsb_prune_result {
	size_t sealed;		/* sealed (and recovered) cycles found */
	size_t cycles;		/* cycles removed, or that would be */
	size_t objects;		/* objects removed, or that would be */
	uint64_t bytes;		/* sizes of the files removed (leftovers included) */
	bool sized;		/* every journal was read: the two sizes below are known */
	uint64_t size_before;	/* the store's size: its cycles' files and the objects they name */
	uint64_t size_after;	/* the same for the cycles that stay */
};

/**
 * Prune the store at `store_dir` (…/modify_backup): first finish what an
 * interrupted prune left (cycles/.pruning-<n>), then remove the sealed
 * cycles the rules in `o` select (the open cycle never, nor a cycle that
 * cannot be loaded), each renamed to cycles/.pruning-<n> and fsynced before
 * it is deleted, then every object no remaining journal names. A remaining
 * journal that cannot be read keeps every object; by size, it stops the
 * pruning altogether, as the size is then unknown. Takes no lock: the caller
 * must hold the store's flock (the core holds it from fsb_store_open; the
 * CLI takes it first), and nothing may record into the store meanwhile.
 * Returns 0, or the first -errno after reporting every problem; `res` is
 * filled in either way.
 */
int fsb_backup_prune(const char *store_dir, const struct fsb_prune_opts *o,
		     struct fsb_prune_result *res);

/**
 * The store's quota (the pack's backup.quotaMB): when the store holds more
 * than `max_bytes`, remove its oldest sealed cycles until it holds at most
 * that, and the objects they alone named. The newest sealed cycle is always
 * kept, even when it alone is over: it is the turn that just ended, the one
 * a user undoes first, and keeping it means a cycle number is never reused.
 * Cheap when the store is under the quota (its files are only stat'ed).
 * Safe to call from the core with the store open (it takes no flock, see
 * fsb_backup_prune), under the mutex that serialises records and sealing.
 * Returns 0, or -errno after reporting what went wrong.
 */
int fsb_backup_prune_to(const char *store_dir, uint64_t max_bytes, bool dry_run,
			fsb_prune_report_fn *report, void *arg);

/* One cycle as `fsbroker backup du` shows it. */
struct fsb_du_cycle {
	unsigned number;
	bool sealed;		/* sealed or recovered */
	uint64_t files;		/* its own files: journal, cycle.json */
	uint64_t own;		/* objects only it names, their bytes in the store */
	uint64_t shared;	/* objects it names that other cycles name too */
	size_t nown, nshared;
	uint64_t frees;		/* what pruning it alone would free: files + own
				 * (0 for an open cycle, which prune keeps) */
};

struct fsb_du {
	struct fsb_du_cycle *v;	/* ascending by number */
	size_t n;
	uint64_t bytes;		/* the cycles' files and the objects they name */
	uint64_t unreferenced;	/* objects no cycle names (the next prune's) */
	size_t objects;		/* distinct objects, loose or packed */
	uint64_t disk;		/* every file under the store */
};

/**
 * What each cycle of the store at `store_dir` holds, counted as prune
 * counts (an object's bytes loose and in packs, as stored: compressed).
 * Reads only. 0 (an absent store: no cycles), -EBADMSG when a journal
 * cannot be read (sizes unknown), or -errno.
 */
int fsb_backup_du(const char *store_dir, struct fsb_du *out);

void fsb_du_free(struct fsb_du *d);

/**
 * Parse a size as --max-size takes it: bytes, or a whole number followed by
 * K, M, G or T (powers of 1024). 0, or -EINVAL / -ERANGE.
 */
int fsb_parse_size(const char *s, uint64_t *out);

#endif
