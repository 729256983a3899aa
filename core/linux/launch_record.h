/*
 * launch_record.h — the sandbox a run started last time, kept so that the
 * next run with the same pack, workspace and options starts bubblewrap
 * from it while its own pack loads (docs/runtime.md, "Started before the
 * pack is loaded").
 *
 * What is kept is everything of bwrap's command line that the pack and the
 * workspace decide: the mount plan's options and fsbroker-init's own (the
 * variables it keeps, reads = "broker", Landlock, ${tmp}). The run's scoped
 * socket, a new path every run, is kept as a marker and put back by
 * fsb_launch_record_load(). The record is a hint, never trusted: the
 * sandbox it starts waits on bwrap's --block-fd, and the run lets it go on
 * only when the command line it builds from the loaded pack is the same,
 * byte for byte; else it is killed before anything in it has run. And it
 * is used only while each path of the plan is of the type it was when the
 * plan was made, so that bwrap makes no mount point on the host that the
 * plan made now would not.
 *
 * A record lives in <state dir>/launch/, hidden from the sandbox, written
 * by temp file and rename; one that is not a regular file of the user's,
 * writable only by them, within FSB_LAUNCH_RECORD_MAX_BYTES, or of another
 * key or version, is not used. The FSB_LAUNCH_RECORDS_KEPT records used
 * last are kept, the older ones removed when a new one is written.
 */
#ifndef FSB_LAUNCH_RECORD_H
#define FSB_LAUNCH_RECORD_H

#include <stdbool.h>
#include <stddef.h>

#include "mount_plan.h"
#include "run.h"

#define FSB_LAUNCH_RECORD_MAX_BYTES (1u << 20)
/* Records kept, the most recently used: one per workspace and options. */
#define FSB_LAUNCH_RECORDS_KEPT 64

struct fsb_launch_record {
	char **plan;		/* the mount plan's options, NULL-terminated */
	size_t nplan;
	char **keep_env;	/* fsbroker-init's --keep-env names */
	size_t nkeep;
	bool reads_broker, landlock;
	char *tmp;		/* the pack's ${tmp} */
};

/**
 * The record kept under `state_dir` for `key` (what the run knows before
 * its pack is loaded: the caller's choice), with the marker of the scoped
 * socket replaced by `socket`, this run's. 0, or -ENOENT when there is none that
 * may be used, -ENOMEM.
 */
int fsb_launch_record_load(const char *state_dir, const char *key, const char *socket,
			   struct fsb_launch_record *out);

/**
 * Keep what `plan` and `l` hold for `key` (the scoped socket's path,
 * `socket`, as the marker), unless the record there already says the same
 * (then it is only marked used). 0 or -errno: a record not written only
 * means the next run starts after its pack loads.
 */
int fsb_launch_record_save(const char *state_dir, const char *key, const char *socket,
			   const struct fsb_mount_plan *plan, const struct fsb_run_launch *l);

void fsb_launch_record_free(struct fsb_launch_record *r);

#endif
