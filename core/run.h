/*
 * run.h — the parts of `fsbroker run` that cli_run.c drives: the summary of
 * what a run did (run_summary.c), attaching to a running core through its
 * admin socket (run_attach.c), and the sandbox's command line
 * (run_sandbox.c).
 */
#ifndef FSB_RUN_H
#define FSB_RUN_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include <cJSON.h>

#include "mount_plan.h"

/* Failures of `fsbroker run` itself, as env(1) and timeout(1) use it. */
#define FSB_EXIT_RUN 125

/* ---- the summary (run_summary.c) ---------------------------------------- */

/** A call the pack refused, or holds for approval (block_id set). */
struct fsb_run_refusal {
	char *op, *path, *rule;
	char *block_id;		/* NULL for a refusal */
	char *approve;		/* the command that approves it, with block_id */
};

struct fsb_run_summary {
	/* Filled by the caller. */
	const char *session, *tool_call, *state_dir;
	bool attached;		/* --core: the cycle stays open, the host commits it */
	const char *network;	/* "host" or "none"; NULL: no sandbox to say it of */
	int exit_status;	/* what fsbroker run exits with */
	int signal;		/* the signal that ended CMD, 0 when none */
	char *rerun;		/* the command line that repeats the run (malloc'd) */
	/* The mount plan's warnings (a directory masked whole because the
	 * mask scan could not look into it); not owned. */
	char *const *mask_warnings;
	size_t nmask_warnings;
	/* The core's log lines held while CMD ran (--summary-fd: from the
	 * start of the run); owned. */
	char **diagnostics;
	size_t ndiagnostics;
	/* Filled by fsb_run_summary_collect(). */
	unsigned cycle;		/* the sealed cycle (embedded), the open one (attached), or 0 */
	char **changed;		/* real paths the tool call changed, in order */
	size_t nchanged;
	size_t backed_up;	/* objects saved for them */
	struct fsb_run_refusal *denied, *waiting;
	size_t ndenied, nwaiting;
	/* Changed without a backup (over the size limit, onTooLarge =
	 * "allow"): rule says why; no block. */
	struct fsb_run_refusal *unsaved;
	size_t nunsaved;
	char *restore;		/* the command that undoes the run, or NULL */
	char **undone;		/* "<path>: <reason>": what the git guard undid */
	size_t nundone;
};

/**
 * Fill what the run did: from the store, the paths tool call `s->tool_call`
 * changed in cycle `cycle` (0: none) and the objects saved for them; from
 * the session's audit log (read from offset `audit_from`), each distinct
 * refusal and prompt block of the tool call, and what the git guard undid.
 */
void fsb_run_summary_collect(struct fsb_run_summary *s, unsigned cycle, off_t audit_from);

/** The summary for people: lines on `f`, each led by `who` ("fsbroker run"). */
void fsb_run_summary_print(const struct fsb_run_summary *s, const char *who, FILE *f);

/** Log lines as the summary's `diagnostics` array. */
cJSON *fsb_run_diagnostics_json(char *const *lines, size_t n);

/** The summary as one JSON object (docs/runtime.md has the schema). */
cJSON *fsb_run_summary_json(const struct fsb_run_summary *s);

/** Write `obj` and a newline to `fd`, whole. 0 or -errno. */
int fsb_run_write_json(int fd, const cJSON *obj);

void fsb_run_summary_free(struct fsb_run_summary *s);

/** Append `arg` to `buf` (of `len`), quoted for a POSIX shell when needed,
 * after a space unless `buf` is empty. False when it did not fit. */
bool fsb_shell_append(char *buf, size_t len, const char *arg);

/* ---- attaching to a running core (run_attach.c) ------------------------- */

/* More socket dirs than this from a core: the run refuses (it could not
 * hide the rest). */
#define FSB_RUN_MAX_SOCKET_DIRS 8

/** What a running core told the run when it opened the run's scope. */
struct fsb_run_attach {
	int fd;				/* the admin connection, O_CLOEXEC */
	char socket[PATH_MAX];		/* the scoped socket */
	char session[129];
	char pack[PATH_MAX];		/* the core's pack file */
	char workspace[PATH_MAX];	/* "" when the core has none */
	char home[PATH_MAX], tmp[PATH_MAX];
	char state_dir[PATH_MAX];
	/* Every directory the core has a socket in: the sandbox hides each. */
	char socket_dirs[FSB_RUN_MAX_SOCKET_DIRS][PATH_MAX];
	const char *socket_dir_list[FSB_RUN_MAX_SOCKET_DIRS];
	size_t nsocket_dirs;
	long next_id;
};

/**
 * Connect to `<state_dir>/admin.sock` and OpenScope for `session` (NULL:
 * the core's own) and `tool_call`. 0, or -errno with a sentence in `err`
 * (-ECONNREFUSED or -ENOENT: no core is running there).
 */
int fsb_run_attach_open(const char *state_dir, const char *session, const char *tool_call,
			struct fsb_run_attach *a, char *err, size_t errlen);

/**
 * CloseScope, once CMD is gone: the core answers once its supervisor has
 * served every call of the run, so what the run changed is on disk then.
 * Closes the connection. 0 or -errno with a sentence in `err`.
 */
int fsb_run_attach_close(struct fsb_run_attach *a, char *err, size_t errlen);

/* ---- the sandbox's command line (run_sandbox.c) ------------------------- */

/** A program on $PATH into `out`, or "" when there is none. */
void fsb_run_find_on_path(const char *name, char *out, size_t len);

/** fsbroker-init next to this binary. 0 or -errno. */
int fsb_run_find_init(char *out, size_t len);

/**
 * The private directory for this run's scoped socket: under
 * $XDG_RUNTIME_DIR when there is one, else /tmp/fsb-<uid>/. 0 or -errno.
 */
int fsb_run_socket_dir(char *out, size_t len);

/** How the sandbox is started (run_mode.h chooses). */
struct fsb_run_launch {
	const char *bwrap;		/* NULL: no namespaces, init runs directly */
	const struct fsb_mount_plan *plan;	/* with bwrap */
	const char *init;		/* fsbroker-init on the host, without bwrap */
	const char *tmp;		/* the pack's ${tmp} */
	bool reads_broker, landlock;
	char *const *keep_env;
	size_t nkeep;
	char *const *setenv_strs;
	size_t nset;
	char **cmd;
};

/**
 * `bwrap <plan> -- fsbroker-init --socket-fd 3 --writable /tmp
 * [--writable TMP] [--reads-broker] [--no-landlock] --keep-env NAME…
 * --setenv NAME=VALUE… -- CMD…`, or the same from fsbroker-init on without
 * bwrap (and without --writable), as a NULL-terminated vector (free the
 * vector only; its strings are borrowed).
 */
char **fsb_run_sandbox_argv(const struct fsb_run_launch *l);

#endif
