/*
 * journal.h — one line of a cycle's journal.jsonl (docs/backup-store.md,
 * "The journal"): the record as a struct, its one encoder (backup.c writes
 * lines with it) and its one decoder (backup_read.c loads cycles with it,
 * `fsbroker backup show --json` prints a prior state with it), and the
 * JSON field forms the store's files share (numbers beyond 2^53, times,
 * byte strings that are not UTF-8), and a path's end state as cycle.json
 * holds it (written by backup.c at a seal, read by backup_read.c, printed
 * by `backup show --json`).
 */
#ifndef FSB_JOURNAL_H
#define FSB_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <cJSON.h>

#include "audit.h"
#include "xattr.h"

/** The state of a path before a change: a journal record's `prior`. */
struct fsb_prior {
	bool exists;
	char type[12];		/* "file", "dir", "symlink", ...; "" when absent */
	uint64_t dev, ino, nlink;
	bool has_mode, has_owner, has_size, has_atime, has_mtime;
	mode_t mode;		/* permission bits (07777) */
	uid_t uid;
	gid_t gid;
	uint64_t size;
	struct timespec atime, mtime;
	char object[FSB_SHA256_HEX_LEN + 1];	/* "" when no content was taken */
	char skipped[24];	/* "too-large", "skip-rule", or "" */
	bool kept;		/* `object` is the file's inode, linked into the
				 * store under a random name: not its hash */
	/* A kept inode's size and mtime when it was kept (by the record
	 * that kept it): a restore checks it still has them. */
	uint64_t kept_size;
	struct timespec kept_mtime;
	bool metadata_only;	/* a file whose change left its content: only
				 * the metadata was journaled (and no later
				 * record of the inode lent it content) */
	bool moved;		/* a rename's source (or an entry beneath it):
				 * its content was not copied, it lives on
				 * under the line's moved_to (and no later
				 * record of the inode lent it content) */
	char *target;		/* a symlink's target, else NULL */
	bool has_xattrs;	/* the journal recorded the xattrs (else unknown) */
	bool xattrs_truncated;	/* some were left out: over FSB_XATTR_CAP */
	struct fsb_xattr *xattrs;	/* the kept ones, in journal order */
	size_t nxattrs;
};

/**
 * One line of cycles/<n>/journal.jsonl. A decoded record owns its strings,
 * never NULL except `moved_to` and `prior.target`; a record given to the
 * encoder only lends them.
 */
struct fsb_journal_rec {
	unsigned line;		/* line number in the journal, from 1 (not encoded) */
	uint64_t seq;
	char *time;		/* RFC 3339 UTC (fsb_journal_stamp) */
	char *tool_call, *trace;
	char *op;
	long flags;
	char *path;		/* as requested (`resolved` when the line has none) */
	char *resolved;		/* the real path the change touched: what restore acts on */
	char *moved_to;		/* a rename's source: the real path it went to, else NULL */
	/* A moved file not lent content: where its inode last moved to in
	 * the cycle (one of the records' moved_to), else NULL. Set by the
	 * cycle's loader, not encoded. */
	const char *moved_now;
	bool ok;
	struct fsb_prior prior;
	/* A created path: the object the create made, when it was journaled
	 * after the create (`made`); restore removes no other. */
	bool has_made;
	char made_type[12];
	uint64_t made_dev, made_ino;
};

/** The end state of a path as cycle.json `paths` records it. */
struct fsb_end_state {
	char *path;		/* owned when decoded; not encoded (the key) */
	bool exists;
	char type[12];
	bool has_size, has_mtime, has_ino;
	/* Written since restore checks what it removes; a cycle sealed before
	 * has none (and its type and ino may be another object's). */
	bool has_dev;
	uint64_t size, ino, dev;
	struct timespec mtime;
};

/** What a malformed line or field lacks, as a sentence fragment. */
struct fsb_journal_why {
	char text[200];
};

/**
 * The JSON object of record `r` (without a line end): every field a
 * restore reads, bytes that are not UTF-8 as `<field>Bytes`. NULL when out
 * of memory. The caller cJSON_Delete()s it.
 */
cJSON *fsb_journal_encode(const struct fsb_journal_rec *r);

/** The `prior` object of a record, as fsb_journal_encode writes it; NULL
 * when out of memory. */
cJSON *fsb_journal_prior_encode(const struct fsb_prior *p);

/**
 * Decode one journal line (`len` bytes, without its newline) into `out`.
 * A line that is empty, not UTF-8, not one whole JSON object, or whose
 * fields are missing, mistyped or out of range is refused whole: -EINVAL
 * with the reason in `why`, and `out` holds nothing to free. Lines of
 * older cores (no `resolved`, no `ok`, no xattrs) are read as they meant.
 * 0, -EINVAL or -ENOMEM.
 */
int fsb_journal_decode(const char *line, size_t len, struct fsb_journal_rec *out,
		       struct fsb_journal_why *why);

/** Free what a decoded record owns, and clear it. */
void fsb_journal_rec_free(struct fsb_journal_rec *r);

/** The object of end state `e` (its path is the key it goes under); NULL
 * when out of memory. */
cJSON *fsb_journal_end_encode(const struct fsb_end_state *e);

/**
 * Decode the cycle.json `paths` entry `v` under `key` into `e`, its path
 * from `pathBytes` when the entry has one (a path that is not UTF-8, keyed
 * by its percent-encoding), else `key`. 0, -EINVAL with `why`, or -ENOMEM;
 * on error e->path may be set, for the caller to free.
 */
int fsb_journal_end_decode(const char *key, const cJSON *v, struct fsb_end_state *e,
			   struct fsb_journal_why *why);

/** True when `hex` is 64 lowercase hex digits, the only valid object name. */
bool fsb_backup_object_name_ok(const char *hex);

/** True when `t` is a file type name the store writes (fsb_file_type_name). */
bool fsb_journal_type_ok(const char *t);

/** `ts` as RFC 3339 UTC with milliseconds, e.g. 2026-01-02T03:04:05.678Z. */
void fsb_journal_stamp(const struct timespec *ts, char buf[40]);

/**
 * Add field `name` to `o`: an unsigned number (its exact digits beyond
 * 2^53, where a double would round it), `[seconds, nanoseconds]`, or a
 * byte string (as is when UTF-8, else `<name>Bytes` percent-encoded).
 * False when out of memory.
 */
bool fsb_journal_add_u64(cJSON *o, const char *name, uint64_t v);
bool fsb_journal_add_time(cJSON *o, const char *name, const struct timespec *ts);
bool fsb_journal_add_bytes(cJSON *o, const char *name, const char *s);

/**
 * Read field `name` of `o` as written by the adders above; `label` names it
 * in `why`. An absent field leaves *has false (and *out NULL for bytes);
 * a present one of the wrong form is -EINVAL. get_str gives "" for an
 * absent field. 0, -EINVAL or -ENOMEM.
 */
int fsb_journal_get_u64(const cJSON *o, const char *name, const char *label, uint64_t *v,
			bool *has, struct fsb_journal_why *why);
int fsb_journal_get_time(const cJSON *o, const char *name, const char *label,
			 struct timespec *ts, bool *has, struct fsb_journal_why *why);
int fsb_journal_get_bytes(const cJSON *o, const char *name, const char *label, char **out,
			  struct fsb_journal_why *why);
int fsb_journal_get_str(const cJSON *o, const char *name, char **out,
			struct fsb_journal_why *why);

#endif
