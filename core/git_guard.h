/*
 * git_guard.h — what a cycle may not leave behind in a git directory
 * (docs/rule-packs.md, "Git metadata"): a hook the directory did not have,
 * or a config key that makes git run a program. Git reads both later, on
 * the host, as the user; the guard puts them back before the cycle seals.
 */
#ifndef FSB_GIT_GUARD_H
#define FSB_GIT_GUARD_H

#include <stddef.h>

struct fsb_broker;

/** What the guard put back: a path and the reason, a sentence each. */
struct fsb_git_undone {
	char **path, **reason;
	size_t n;
};

/**
 * Look at every git directory cycle `cycle` of the store at `store_dir`
 * touched or made (a directory holding HEAD and objects/ + refs/ or
 * commondir, whatever its name; the target of a `.git` file), and undo
 * what it may not leave: each hook it created or changed (every hook of a
 * directory that became a git directory in the cycle), and each config
 * file it wrote that holds a risky key it did not hold at the cycle's
 * start. Undone means: the file's content at the start put back from the
 * store; a created config rewritten without its risky keys; anything else
 * removed. Every undo is listed in `out` (free with fsb_git_undone_free).
 * Returns 0, or -errno when the cycle cannot be read (then nothing was
 * looked at, `err` says why).
 */
int fsb_git_guard_cycle(const char *store_dir, unsigned cycle, struct fsb_git_undone *out,
			char *err, size_t errlen);

/** Free the list fsb_git_guard_cycle() filled in. */
void fsb_git_undone_free(struct fsb_git_undone *u);

/**
 * fsb_git_guard_cycle on cycle `cycle` of session `sid` (its store at
 * `store_dir`), each undo written to the session's audit log (phase
 * "git-guard", decision "undone", path, reason), where the summary of
 * `fsbroker run` finds it (the core's log has it at debug level only: a
 * run's stderr is CMD's).
 * Before a cycle seals, so that its end state is what the guard left.
 */
void fsb_git_guard_commit(struct fsb_broker *b, const char *sid, const char *store_dir,
			  unsigned cycle);

/**
 * The number of the cycle of session `sid` under `state_dir` that a crash
 * left open (no cycle.json yet), or 0: read before the store is opened,
 * which seals that cycle as recovered, so that the guard can look at it.
 */
unsigned fsb_git_guard_unsealed(const char *state_dir, const char *sid);

#endif
