/*
 * hooks.h — what `fsbroker hooks` shares between its parts: the table each
 * agent host fills in (hooks_claude.c, hooks_gemini.c, hooks_codex.c), the
 * per-session core the hooks of one host session share (hooks_session.c)
 * and the settings merge and CLI (cli_hooks.c).
 */
#ifndef FSB_HOOKS_H
#define FSB_HOOKS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <cJSON.h>

/* Options of `fsbroker hooks install|run`, baked into the installed hook. */
struct fsb_hook_opts {
	const char *rules;
	unsigned long idle_exit;
	bool ask_bash;		/* answer `ask` for a rewritten shell command */
};

/* One fsbroker session per host session. */
struct fsb_hook_session {
	const struct fsb_hook_host *host;
	char host_id[128];	/* the host's session id */
	char id[160];		/* the fsbroker session: PREFIX-<host session> */
	char state[4096];	/* its state dir, admin.sock inside */
	char sockdir[4096];	/* its client socket's private directory */
	char workspace[4096];
};

/* One matcher group install adds: EVENT → [MATCHER] → our command. */
struct fsb_hook_group {
	const char *event;
	const char *matcher;	/* NULL: every occurrence of the event */
};

struct fsb_hook_host {
	const char *name;	/* on the command line: claude-code */
	const char *title;	/* in messages: Claude Code */
	const char *settings;	/* under the project or $HOME: .claude/settings.json */
	const char *hook_name;	/* the hook's "name" field, when the host has one */
	const char *id_prefix;	/* of the fsbroker session id: cc */
	const char *project_env; /* the workspace, set by the host: CLAUDE_PROJECT_DIR;
				 * NULL: the event's cwd */
	const struct fsb_hook_group *groups;
	size_t ngroups;
	/* The hook for one event; returns the hook's exit status. */
	int (*handle)(const struct fsb_hook_session *s, const struct fsb_hook_opts *o,
		      const cJSON *ev, const char *event);
};

extern const struct fsb_hook_host fsb_hooks_claude;
extern const struct fsb_hook_host fsb_hooks_gemini;
extern const struct fsb_hook_host fsb_hooks_codex;

/** fsb_hook_read_all - all of FD, NUL-terminated (16 MiB at most); NULL with errno. */
char *fsb_hook_read_all(int fd, size_t *len_out);

/** fsb_hook_make_dirs - mkdir -p PATH, MODE for what it makes; 0 or -errno. */
int fsb_hook_make_dirs(const char *path, mode_t mode);

/** fsb_hook_self_path - this binary's absolute path; 0 or -errno. */
int fsb_hook_self_path(char *out, size_t len);

/** fsb_hook_sh_quote - appends S single-quoted for sh to OUT; 0 or -ENAMETOOLONG. */
int fsb_hook_sh_quote(char *out, size_t len, const char *s);

/** fsb_hook_str - OBJ's string member NAME, or NULL. */
const char *fsb_hook_str(const cJSON *obj, const char *name);

/**
 * fsb_hook_block - says "fsbroker: FMT" (with ARG) on stderr and returns 2,
 * the exit status by which every host blocks the tool with stderr as reason.
 */
int fsb_hook_block(const char *fmt, const char *arg);

/**
 * fsb_hook_session_init - S for HOST's session HOST_SESSION (1-100 of
 * A-Z a-z 0-9 - _) with workspace the host's project variable, else CWD.
 * 0, or -EINVAL for a session id that is not a plain name.
 */
int fsb_hook_session_init(struct fsb_hook_session *s, const struct fsb_hook_host *host,
			  const char *host_session, const char *cwd);

/**
 * fsb_hook_core_connect - a connection to S's core (admin socket), which is
 * started first when START and none runs; two hooks at once start one.
 * The fd, or -errno.
 */
int fsb_hook_core_connect(const struct fsb_hook_session *s, const struct fsb_hook_opts *o,
			  bool start);

/**
 * fsb_hook_ask - sends REQ on FD and reads one reply line. The reply, or
 * NULL with a sentence in ERR.
 */
cJSON *fsb_hook_ask(int fd, cJSON *req, char *err, size_t errlen);

/**
 * fsb_hook_tool_call_id - GIVEN when it is a valid id, else one made
 * unique per hook process (time in ns and pid) with PREFIX.
 */
void fsb_hook_tool_call_id(const char *given, const char *prefix, char *out, size_t len);

/**
 * fsb_hook_run_line - the shell line that runs CMD under `fsbroker run
 * --core` of S with tool call TC, in the directory the line itself runs in
 * (`'SELF' run --core 'STATE' --tool-call 'TC' -- /bin/bash -c 'cd -- "$1"
 * || exit 1; shift; CMD' fsbroker-cwd "$(pwd -P)"`, one line, so a model can
 * copy it), malloc'd; NULL with errno.
 */
char *fsb_hook_run_line(const struct fsb_hook_session *s, const char *tc, const char *cmd);

/**
 * fsb_hook_check - CheckAccess of OP (write, create, delete, rename-from,
 * rename-to) on PATH on FD. 0 allowed; -EACCES
 * refused (a deny, or an ask a file tool cannot wait for), with the sentence
 * for the host in REASON; another -errno when the core did not answer, the
 * sentence in REASON.
 */
int fsb_hook_check(int fd, const char *op, const char *path, const char *tc, char *reason,
		   size_t len);

/**
 * fsb_hook_backup - ModifyBackup of PATH on FD, before the tool writes it.
 * 0, -EACCES (the core refused: REASON), or another -errno (no answer).
 */
int fsb_hook_backup(int fd, const char *path, const char *tc, char *reason, size_t len);

/**
 * fsb_hook_guard_write - what a file tool's hook does before the tool
 * writes PATH: connect to S's core (starting it), fsb_hook_check of a
 * write, then fsb_hook_backup. 0 (the tool may write), -EACCES (refused:
 * REASON for the model), or another -errno (blocked: REASON for stderr).
 */
int fsb_hook_guard_write(const struct fsb_hook_session *s, const struct fsb_hook_opts *o,
			 const char *path, const char *tc, char *reason, size_t len);

/**
 * fsb_hook_commit - CommitModifyBackup of S's turn (a cycle when anything
 * was backed up), then Shutdown when END. No core: nothing to do. 0, or 1
 * with a sentence on stderr when the turn was not sealed.
 */
int fsb_hook_commit(const struct fsb_hook_session *s, const struct fsb_hook_opts *o,
		    bool end);

/**
 * fsb_hook_pre_tool_answer - the PreToolUse answer of Claude Code and Codex
 * CLI (hookSpecificOutput with DECISION, REASON and UPDATED, which it takes;
 * each may be NULL) on stdout. The hook's exit status: 0, or 2 (no memory).
 */
int fsb_hook_pre_tool_answer(const char *decision, const char *reason, cJSON *updated);

#endif
