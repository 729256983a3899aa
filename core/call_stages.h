/*
 * call_stages.h — where the time of one supervised call goes, stage by
 * stage, for `make bench` (docs/benchmarks.md, "Where a routed call's time
 * goes").
 *
 * Off unless FSBROKER_STAGE_TIMES names a file: then every call a
 * supervisor serves is timed from its receipt to its answer, each stretch
 * charged to the stage the serving thread was in, and when the supervisor
 * ends one JSON line per kind of call is appended to that file: how many,
 * and the median of each stage and of the whole, in nanoseconds. Off, each
 * mark is one test of a thread-local pointer.
 *
 * A stage is the thread's current one until the next switch: the serving
 * code switches as it goes (read the target, perform, answer), and the
 * parts it calls push theirs and pop back (resolve and decide inside the
 * broker, a backup inside an open, the audit line), so that a stage nested
 * in another is charged to itself only.
 */
#ifndef FSB_CALL_STAGES_H
#define FSB_CALL_STAGES_H

#include <stdbool.h>
#include <stdint.h>

enum fsb_stage {
	FSB_STAGE_RECEIVE,	/* SECCOMP_IOCTL_NOTIF_RECV and the work gate */
	FSB_STAGE_READ_TARGET,	/* arguments, path, cwd, creds, root, ID_VALID */
	FSB_STAGE_RESOLVE,	/* the path walked in the target's view */
	FSB_STAGE_DECIDE,	/* the pack and what the broker adds to it */
	FSB_STAGE_BACKUP,	/* journal records and copies */
	FSB_STAGE_PERFORM,	/* the open, rename, unlink, … itself */
	FSB_STAGE_AUDIT,	/* the audit line built and written */
	FSB_STAGE_ANSWER,	/* SECCOMP_IOCTL_NOTIF_SEND or ADDFD: the target
				 * runs once it is sent, and may take the CPU
				 * from the answering thread before the ioctl
				 * returns; not part of the total */
	FSB_STAGE_COUNT
};

enum fsb_stage_call {
	FSB_CALL_WRITE_OPEN,	/* a write-open of an existing file */
	FSB_CALL_CREATE,	/* an open that creates the file */
	FSB_CALL_READ_OPEN,	/* a brokered read */
	FSB_CALL_RENAME,
	FSB_CALL_DELETE,	/* unlink and rmdir */
	FSB_CALL_MKDIR,
	FSB_CALL_METADATA,	/* chmod, chown, utimes, truncate, … */
	FSB_CALL_OTHER,
	FSB_CALL_COUNT
};

/** Read FSBROKER_STAGE_TIMES once; true when stages are being timed. */
bool fsb_stages_enabled(void);

/** A call was just received on this thread (its receipt took since
 * fsb_stages_receiving()): start timing it, as `kind` until told better. */
void fsb_stages_begin(enum fsb_stage_call kind);

/** This thread is about to receive: the receipt's clock starts. */
void fsb_stages_receiving(void);

/** The call being timed on this thread is of `kind`. */
void fsb_stages_kind(enum fsb_stage_call kind);

/** Charge the time since the last switch to the current stage and make
 * `stage` current; returns the stage that was current. */
enum fsb_stage fsb_stage_push(enum fsb_stage stage);

/** Back to `previous` (what fsb_stage_push() returned). */
static inline void fsb_stage_pop(enum fsb_stage previous)
{
	fsb_stage_push(previous);
}

/** The call on this thread was answered: its times join its kind's. */
void fsb_stages_end(void);

/** Append one line per kind of call timed so far to the file, and start
 * again from none. Called as a supervisor ends. */
void fsb_stages_flush(void);

/** For tests: the clock in nanoseconds (NULL: CLOCK_MONOTONIC again). */
void fsb_stages_set_clock(uint64_t (*clock)(void));

#endif
