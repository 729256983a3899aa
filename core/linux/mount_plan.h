/*
 * mount_plan.h — the bubblewrap mount plan of `fsbroker run` (DESIGN §7.1):
 * from the loaded pack's summary, the workspace, the state dir and the run's
 * scoped socket, the argument vector that builds the sandbox's view of the
 * filesystem. Only the view: every write is still judged by the supervisor.
 */
#ifndef FSB_MOUNT_PLAN_H
#define FSB_MOUNT_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "policy.h"

/* Where the scoped socket appears inside the sandbox. */
#define FSB_MOUNT_SOCKET_DIR "/run/fsbroker"
#define FSB_MOUNT_SOCKET FSB_MOUNT_SOCKET_DIR "/broker.sock"
/* Where fsbroker-init is run from inside: its build dir may lie under the
 * host's /tmp, which the sandbox replaces. */
#define FSB_MOUNT_INIT FSB_MOUNT_SOCKET_DIR "/fsbroker-init"
/* `fsbroker run --shell zsh`: the patched zsh, and the directory holding
 * the brokered toybox and its shims (bin/), for the same reason. */
#define FSB_MOUNT_SHELL FSB_MOUNT_SOCKET_DIR "/zsh"
#define FSB_MOUNT_CLIENTS FSB_MOUNT_SOCKET_DIR "/clients"

/* Bounds of the reads = "mask" scan: entries looked at (shared by the
 * literal denyRead trees, the workspace and the other glob bases) and
 * directory depth below each place the scan starts. With reads = "mask" a
 * directory beyond the depth bound is masked whole and reaching the entry
 * bound refuses the run (docs/runtime-mount-plan.md). */
#define FSB_MOUNT_SCAN_MAX_ENTRIES 200000
#define FSB_MOUNT_SCAN_MAX_DEPTH 32

struct fsb_mount_inputs {
	const char *workspace;		/* absolute, an existing directory; the cwd inside */
	const char *home;		/* $HOME: never the workspace nor inside it; may be NULL */
	const char *tmp;		/* ${tmp} ($TMPDIR or /tmp): private like /tmp; may be NULL */
	const char *state_dir;		/* hidden; may be NULL */
	const char *scoped_socket;	/* bound at FSB_MOUNT_SOCKET; NULL only for --explain */
	/* The core's socket dirs (its main socket's, the scoped sockets' of
	 * every run): masked wherever they lie. The scoped socket's own dir
	 * is masked too, without being named here. */
	const char *const *socket_dirs;
	size_t nsocket_dirs;
	bool network_none;		/* --unshare-net: only a loopback inside */
	const char *init_binary;	/* fsbroker-init, bound at FSB_MOUNT_INIT; may be NULL */
	const char *shell_binary;	/* --shell: bound at FSB_MOUNT_SHELL; may be NULL */
	const char *clients_dir;	/* --shell: bound at FSB_MOUNT_CLIENTS; may be NULL */
	const char *runtime_dir;	/* $XDG_RUNTIME_DIR; NULL: /run/user/<uid> */
	uid_t uid;
	size_t scan_max_entries;	/* 0: FSB_MOUNT_SCAN_MAX_ENTRIES (--scan-max-entries) */
	/* The state dir whose scan-index/ keeps the mask scan's index
	 * (scan_index.h), so that a repeat run reads only the directories
	 * that changed; NULL: every directory is read. */
	const char *scan_index_dir;
};

/* One group of arguments and why it is there, for the explanation. */
struct fsb_mount_step {
	size_t first, count;		/* argv[first .. first + count) */
	char *why;
};

struct fsb_mount_plan {
	char **argv;			/* NULL-terminated: bwrap's options, up to and excluding "--" */
	size_t argc;
	struct fsb_mount_step *steps;
	size_t nsteps;
	char **notes;			/* what the plan left out, and why */
	size_t nnotes;
	char **warnings;		/* what the user must hear before the run: once each */
	size_t nwarnings;
	size_t scanned;			/* entries the mask scan looked at */
	size_t scan_reused;		/* directories taken from the index, not read */
	bool scan_truncated;		/* the scan hit its entry bound */
	char why[1024];			/* after a failure: one sentence */
	/* private */
	size_t argv_cap, steps_cap, notes_cap, warnings_cap;
};

/**
 * Build the bubblewrap options for a run under `p` (argv[0] is not
 * included: callers put the bwrap path first and "--" CMD… after). Paths go
 * into the vector as they are: no shell ever sees them. Returns 0, or
 * -errno with a sentence in out->why: -EINVAL for inputs that cannot make a
 * plan (a relative or missing workspace, a scoped socket that is not a
 * socket), -EPERM when the pack lets the broker modify a path the plan must
 * hide (the sentence names both rules) or when a socket dir of the core
 * cannot be hidden without hiding the workspace; with reads = "mask", -E2BIG when the
 * scan reached its entry bound, -EACCES when neither a denyRead path nor any
 * directory above it can be looked at (a directory the scan cannot look
 * into is masked whole instead, with a warning in out->warnings).
 * Free with fsb_mount_plan_free(), also after a failure.
 */
int fsb_mount_plan_build(struct fsb_policy *p, const struct fsb_mount_inputs *in,
			 struct fsb_mount_plan *out);

void fsb_mount_plan_free(struct fsb_mount_plan *plan);

/**
 * Print the plan for people (`fsbroker run --explain`): each group of
 * arguments with why it is there, shell-quoted, then the warnings and the
 * notes. 0 or -EIO.
 */
int fsb_mount_plan_explain(const struct fsb_mount_plan *plan, FILE *f);

#endif
