/*
 * run_mode.h — which sandbox `fsbroker run` can build on this machine, and
 * which weaker mode the operator accepted where a part is missing
 * (DESIGN §7, "Degraded machines"; docs/runtime-degraded.md).
 */
#ifndef FSB_RUN_MODE_H
#define FSB_RUN_MODE_H

#include <stdbool.h>
#include <stddef.h>

/* The kernel features the full sandbox is built on. */
enum fsb_feature {
	FSB_FEATURE_USERNS = 1 << 0,	       /* bubblewrap's namespaces and mounts */
	FSB_FEATURE_LANDLOCK = 1 << 1,	       /* the backstop under the filter */
	FSB_FEATURE_SECCOMP_NOTIFY = 1 << 2,   /* the supervisor itself */
};

struct fsb_run_mode {
	unsigned missing;	/* features this machine lacks (or is told it lacks) */
	bool namespaces;	/* run under bubblewrap (mount plan, pid namespace) */
	bool landlock;		/* fsbroker-init applies Landlock */
	bool reads_broker;	/* every open goes through the supervisor */
	int landlock_abi;	/* when landlock */
	char why[3][256];	/* per feature: why it is missing, or "" */
};

/* The name a feature has in --simulate-missing and in messages. */
const char *fsb_feature_name(enum fsb_feature f);

/* Parse "userns,landlock" into a mask; -1 on an unknown name. */
int fsb_feature_parse(const char *list, unsigned *mask);

/*
 * Probe the machine, treat the features in `simulate_missing` as absent
 * (so each degraded mode can be shown and tested on a full machine), and
 * choose the mode. `accepted` holds the features the operator agreed to run
 * without (--without-landlock, --without-namespaces); `pack_reads_broker`
 * is the pack's reads setting. Returns 0, or -1 with a sentence in `err`
 * that names what is missing and the flag that accepts the weaker mode.
 */
int fsb_run_mode_choose(struct fsb_run_mode *m, unsigned simulate_missing, unsigned accepted,
			bool pack_reads_broker, char *err, size_t err_size);

/* One line per decision, for `fsbroker run --explain`. */
void fsb_run_mode_explain(const struct fsb_run_mode *m, char *out, size_t out_size);

#endif
