/*
 * restore.h — the restore engine (DESIGN §6.3, docs/restore.md): plan the
 * restore of a cycle, a tool call or some paths to their state at the
 * start of it, then perform it (or only say what it would do), keeping what
 * it changes in restore_backup first. `fsbroker backup restore|undo` parse
 * the options and print; everything else happens here.
 */
#ifndef FSB_RESTORE_H
#define FSB_RESTORE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "backup_read.h"

/** What a restore is asked to do. */
struct fsb_restore_opts {
	const char *store;		/* the store that holds the cycle */
	const char *state, *session;	/* where restore_backup is (keep_undo) */
	const char *tool_call;		/* only the paths this tool call touched */
	char *const *paths;		/* only these paths (and what is beneath) */
	int npaths;
	bool dry_run;			/* plan and say, change nothing */
	bool force;			/* also paths changed since, open cycles */
	bool no_undo;			/* keep no copy of what the restore changes */
	bool undo;			/* `backup undo` or `redo`: the cycle is
					 * restore_backup's */
	bool redo;			/* with undo: `backup redo` */
	/* Told as fsb_restore_perform goes (NULL: nobody): `copying` while
	 * it keeps the copy for an undo, then after each path it settles. */
	void (*progress)(void *arg, bool copying, size_t done, size_t total);
	void *progress_arg;
	const char *workspace;		/* where the other names of a hard-linked
					 * file are looked for; NULL: the
					 * session's workspace, when known */
};

/* ACT_META: a file whose cycle changed only its metadata, put back in place.
 * ACT_MOVED: a file the cycle moved, its bytes taken from where it went. */
enum fsb_restore_act {
	FSB_ACT_NONE, FSB_ACT_REMOVE, FSB_ACT_FILE, FSB_ACT_META, FSB_ACT_MOVED, FSB_ACT_DIR,
	FSB_ACT_SYMLINK, FSB_ACT_FIFO, FSB_ACT_OTHER
};

enum fsb_restore_res { FSB_RES_PENDING, FSB_RES_OK, FSB_RES_SKIPPED, FSB_RES_FAILED };

/** One path of a restore: its plan, then its outcome. */
struct fsb_restore_item {
	const struct fsb_pick *pick;	/* NULL: a PATH argument the cycle did not touch */
	const char *path;
	int depth;
	enum fsb_restore_act act;
	bool exists;			/* at planning */
	int src_fd;			/* ACT_MOVED: the moved inode, opened at
					 * planning (before its new name goes) */
	struct stat now;		/* at planning, when `exists` */
	bool stands_in;		/* what is there is what an undo left in place
					 * of the cycle's end state (another inode,
					 * nothing else changed) */
	bool parent_missing;
	int parent_err;		/* why: -ENOENT, -ENOTDIR, or -ELOOP (a symlink now) */
	enum fsb_restore_res res;
	char verb[24];			/* "restored", "skipped", ... */
	char detail[400];
	char note[200];			/* "; forced: ...", appended on success */
	bool paren;			/* detail in parentheses, else after ": " */
	bool owner_set;
};

/** A planned restore, and after fsb_restore_perform its outcome. */
struct fsb_restore {
	struct fsb_restore_item *items;	/* the paths of the cycle first, then
					 * the PATH arguments it did not touch */
	size_t n, extra;
	/* After fsb_restore_perform: the restore_backup cycle that undoes
	 * this restore (> 0), 0 when none was kept, -1 when it could not be
	 * sealed (why in undo_err). */
	int undo_cycle;
	int undo_rc;			/* the copy's -errno when perform refused */
	char undo_err[PATH_MAX * 2 + 256];
	int root_fd;			/* "/", every walk's start (root_open) */
	bool root_open;
	struct fsb_picks picks;
	char **args;
	bool *arg_used;
	int nargs;
};

/**
 * Plan the restore of cycle `cy` as `o` asks: choose each path's record,
 * look at what is there now (walking from "/" without following symlinks),
 * and settle every path that will not be restored (changed since without
 * --force, not the object the cycle created, no copy of its bytes). 0;
 * -EBUSY: the cycle is open and --force was not given; -ENOENT: the tool
 * call touched nothing; -ENOMEM; another -errno (/ cannot be opened). On 0
 * the caller fsb_restore_free()s `out`, also when it holds no path.
 */
int fsb_restore_plan(const struct fsb_restore_opts *o, const struct fsb_cycle *cy,
		     struct fsb_restore *out);

/**
 * The items a restore of cycle `cy` acts on, as `o` chooses them (a tool
 * call's paths, the PATH arguments and what is beneath them, else every
 * path), into r->items: r->n of the cycle's paths (each's action still
 * FSB_ACT_NONE, its depth set), then r->extra PATH arguments the cycle did
 * not touch, settled as skipped. fsb_restore_plan and fsb_restore_to both
 * start from it. 0, -ENOENT (the tool call touched nothing) or -ENOMEM; the
 * caller fsb_restore_free()s `r` either way.
 */
int fsb_restore_select(const struct fsb_restore_opts *o, const struct fsb_cycle *cy,
		       struct fsb_restore *r);

/**
 * Perform a planned restore: keep what it will change in restore_backup
 * (unless no_undo), put each path back, removals deepest first, recreations
 * parents first, directories' modes and times once what is inside is back,
 * link groups rejoined, parents' times unstamped; then seal the copy. With
 * dry_run, only say per path what would happen. 0, or -ECANCELED when the
 * copy could not be made (nothing was changed; undo_rc and undo_err say
 * why).
 */
int fsb_restore_perform(const struct fsb_restore_opts *o, const struct fsb_cycle *cy,
			struct fsb_restore *r);

/**
 * Restore the paths `o` chooses of cycle `cy` into directory `dir` instead
 * of in place (restore_to.c): made when missing, refused unless empty; each
 * path written as `dir`/(its path below `base`, the workspace), with its
 * content, mode, times and symlink target from before the cycle, parents
 * made as needed, directories' modes and times last. Nothing in place is
 * changed, no copy for an undo is kept; `force` and `no_undo` do not apply.
 * With dry_run, only say per path what would be written. 0 (per path
 * outcomes in `r`, for fsb_restore_free), -ENOENT: the tool call touched
 * nothing; -ENOTEMPTY: `dir` holds something; -ENOMEM; another -errno
 * (`dir` cannot be made or opened).
 */
int fsb_restore_to(const struct fsb_restore_opts *o, const struct fsb_cycle *cy,
		   const char *dir, const char *base, struct fsb_restore *r);

/** How what is at a path now (`exists`, `st`) differs from the end state `e`
 * the cycle recorded, in a few words, or NULL when it does not. */
const char *fsb_restore_end_differs(const struct fsb_end_state *e, bool exists,
				    const struct stat *st);

/**
 * Make hard-link groups whole again after the items were performed: the
 * restored names of one file before the cycle become links of one of them,
 * and when the file had names the restore did not touch, a walk of
 * `workspace` (NULL: none) finds one still holding the restored bytes,
 * mode, owner and mtime, and the restored names become links of it.
 * Best effort: a name that cannot be joined keeps its restored copy.
 */
void fsb_restore_rejoin_links(int root, const char *workspace, struct fsb_restore_item *items,
			      size_t n);

/** A fresh name ".fsbroker-restore-…" for a file built beside its target. */
void fsb_restore_temp_name(char *buf, size_t len);

/** Close the moved files still held and free the plan; `r` may be zeroed. */
void fsb_restore_free(struct fsb_restore *r);

/**
 * A PATH argument in the journal's form: absolute, without "." or ".."
 * components, through the real directory when it exists. NULL when out
 * of memory or too long.
 */
char *fsb_restore_canonical_path(const char *arg);

/**
 * The `n` PATH arguments in the journal's form into a new array *args (its
 * strings too), and a "matched something" flag each in *used, all false.
 * 0, or -ENOMEM: what was made is in *args and *used, for the caller to
 * free (n strings, some NULL).
 */
int fsb_restore_canonical_paths(char *const *paths, int n, char ***args, bool **used);

/** True when journal record `r` is about `arg` (canonical) or beneath it. */
bool fsb_restore_path_matches(const char *arg, const struct fsb_journal_rec *r);

#endif
