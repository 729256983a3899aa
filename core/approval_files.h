/*
 * approval_files.h — deferred approvals kept in the session's state dir
 * (DESIGN §7.5), so that they outlive the core that asked: a run leaves
 * each prompt block it could not get answered as a small file;
 * `fsbroker approve` turns one into an approval file; the next core that
 * serves the session loads the approvals into its pack. Both are bound to
 * the block's exact key (op, real path, dev/ino), like the block itself.
 *
 *   <state>/sessions/<session>/approvals/<block-id>.block
 *   <state>/sessions/<session>/approvals/<block-id>.approval
 */
#ifndef FSB_APPROVAL_FILES_H
#define FSB_APPROVAL_FILES_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "op.h"

struct fsb_broker;
struct fsb_access;

/** One block or approval, as a file holds it. */
struct fsb_approval_rec {
	char block_id[64];
	enum fsb_op op;
	char path[PATH_MAX];		/* real */
	bool exists;
	dev_t dev;
	ino_t ino;
	char rule[512];
	char session[129], tool_call[129];
	char scope[8];			/* an approval's: "once" or "session" */
};

/** An approval file a core loaded (broker.h keeps the list). */
struct fsb_approval_file {
	struct fsb_approval_rec rec;
	bool used;			/* a once approval some request took */
};

/**
 * Leave the pending blocks of `session` and `tool_call` (NULL: every tool
 * call) that the pack asked for in the session's state dir, for
 * `fsbroker approve`. Blocks the host answers through its control channel
 * are not written. Returns how many were written, or -errno.
 */
int fsb_approvals_save_blocks(struct fsb_broker *b, const char *session, const char *tool_call);

/**
 * `fsbroker approve`: turn block `block_id` of `session` into an approval of
 * `scope` ("once" or "session"), written atomically, and remove the block
 * file. `out` gets what was approved. 0, or -errno with a sentence in `err`
 * (-ENOENT: no such block).
 */
int fsb_approvals_record(const char *state_dir, const char *session, const char *block_id,
			 const char *scope, struct fsb_approval_rec *out, char *err, size_t errlen);

/**
 * Load the approvals of `session` from its state dir into the pack, each
 * audited once ("approval-loaded"); files loaded already are skipped.
 * Returns how many were loaded, or -errno.
 */
int fsb_approvals_load(struct fsb_broker *b, const char *session);

/**
 * With the broker's lock held, after a decision: when a once approval
 * loaded from the state dir let `d` through, its file is removed, so that
 * no later core grants it again.
 */
void fsb_approvals_note_decision(struct fsb_broker *b, const struct fsb_access *d);

/** Forget the loaded files (the files stay). */
void fsb_approvals_free(struct fsb_broker *b);

#endif
