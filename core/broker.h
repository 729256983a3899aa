/*
 * broker.h — the core's state and its one decision path (DESIGN §1):
 * requested path → resolve → protected paths → Lua policy → approvals and
 * prompt blocks → audit. The socket front ends (serve_text.c, serve_json.c),
 * the control channel and `fsbroker check` all decide through here.
 */
#ifndef FSB_BROKER_H
#define FSB_BROKER_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>

#include <cJSON.h>
#include <uv.h>

#include "approval_files.h"
#include "audit.h"
#include "audit_line.h"
#include "backup.h"
#include "link_guard.h"
#include "op.h"
#include "policy.h"
#include "prompts.h"
#include "protected.h"
#include "verdict_cache.h"
#include "resolve.h"
#include "work.h"

#define FSB_MAX_RULES_DIRS 4

struct fsb_broker_config {
	char luadir[PATH_MAX];		/* holds policy/ and rules/ */
	char pack[PATH_MAX];		/* the top pack file, real */
	char rules_dirs[FSB_MAX_RULES_DIRS][PATH_MAX];
	int nrules_dirs;
	char workspace[PATH_MAX];	/* "" when not given */
	char home[PATH_MAX], tmp[PATH_MAX];
	char state_dir[PATH_MAX];
	bool one_shot;			/* `fsbroker check`: create nothing, audit nothing */
	/* With one_shot, still load the pack's compiled chunks and skip the
	 * self-tests that passed before (<state_dir>/lua-chunks, pack-tests),
	 * as the core of that state dir does: an attached `fsbroker run`
	 * loads the pack only for its mount plan. */
	bool keep_compiled;
	/* The pack is loaded later, by fsb_broker_load_policy(): `fsbroker
	 * run` starts its sandbox meanwhile (docs/runtime.md, "Started
	 * before the pack is loaded"). Nothing is judged until then. */
	bool policy_later;
	struct fsb_lua_limits limits;
};

/** Who a connection speaks for (DESIGN §3.0), fixed when it is accepted. */
struct fsb_scope {
	char session[129];
	char tool_call[129];	/* "" = any tool call of the session */
};

/* Counted from the loop and from the thread pool alike. */
struct fsb_stats {
	_Atomic unsigned long requests, allowed, denied, asked, errors;
	_Atomic unsigned long fds_granted, connections, connections_refused;
	_Atomic unsigned long reloads, reload_failures, policy_errors;
	/* Supervisors started with and without SYNC_WAKE_UP (supervisor.c). */
	_Atomic unsigned long supervisors_sync_wake_up, supervisors_plain_wake_up;
};

#define FSB_MAX_HELD 64

/* The host approved changing this file without a backup (its pack says
 * backup.onTooLarge = "ask" and it is over the limit; modify_backup.c). */
struct fsb_skip_approval {
	char session[129];
	char *path;
	dev_t dev;
	ino_t ino;
	bool once;
};

/** What the core keeps per session: its audit log and its backup store. */
struct fsb_session {
	char id[129];
	struct fsb_audit *audit;
	/* Held around every use of `store`, which only the thread pool makes
	 * while serving (a copy can take seconds); never taken with the
	 * broker's lock held (the order is store_lock, then lock). */
	pthread_mutex_t store_lock;
	struct fsb_store *store;	/* opened on first backup */
	/* Files granted for writing (O_PATH fds, guarded by store_lock): at a
	 * commit, those some process still holds open for writing are backed
	 * up again into the next cycle (modify_backup.c). */
	struct fsb_held {
		int fd;		/* O_PATH */
		dev_t dev;
		ino_t ino;
	} held[FSB_MAX_HELD];
	size_t nheld;
	bool backup_enabled;		/* EnableModifyBackup; on unless turned off */
	uint64_t max_bytes_override;	/* fileBackupMaxSizeMB for the turn, 0: the pack's */
};

#define FSB_MAX_SESSIONS 16

/*
 * Threads: the loop serves every request it can answer at once; requests
 * that back up or change files run on libuv's thread pool, in the order
 * `work` lets them (work.h: writes side by side, a host operation alone).
 * What they share is guarded by `lock` — the pack (its Lua state), the
 * prompts, the sessions table, the audit logs — held only for a decision or
 * an audit line.
 */
struct fsb_broker {
	pthread_mutex_t lock;		/* recursive */
	struct fsb_work_queue work;	/* on the loop */
	uv_loop_t *loop;
	struct fsb_broker_config cfg;
	struct fsb_policy *policy;
	/* Read verdicts of `policy` (verdict_cache.h), under lock; invalidated by
	 * every reload and every approval given. */
	struct fsb_verdict_cache verdict_cache;
	struct fsb_protected protected;
	/* Protected files that have other names (link_guard.h). */
	struct fsb_link_guard link_guard;
	struct fsb_prompts *prompts;
	struct fsb_skip_approval *skips;	/* under lock */
	size_t nskips;
	/* Approvals loaded from the sessions' state dirs (approval_files.c),
	 * under lock. */
	struct fsb_approval_file *approval_files;
	size_t napproval_files;
	/* Inline approvals (`fsbroker run --approvals=inline`): a call a
	 * sandboxed process made that the pack answers `ask` waits, on its
	 * thread of the pool, until the host answers its block or
	 * approval_timeout_s passes. on_prompt (under lock, quick) tells the
	 * host; NULL: blocks answer EACCES at once (deferred). */
	void (*on_prompt)(struct fsb_broker *b, const struct fsb_prompt *p, void *arg);
	void *on_prompt_arg;
	unsigned approval_timeout_s;
	pthread_t loop_thread;		/* the loop's: it never waits */
	struct fsb_session sessions[FSB_MAX_SESSIONS];
	int nsessions;
	int rootfd;		/* "/" of the core's own view */
	struct fsb_stats stats;
	uint64_t started_ms;
	/* Called after a successful reload, whatever triggered it (the pack's
	 * file set may have changed). */
	void (*on_reloaded)(struct fsb_broker *b, void *arg);
	void *on_reloaded_arg;
	/* The pack files last warned of as lying in a tree sandboxed commands
	 * may modify, ", "-joined (malloc'd): a reload warns again only when
	 * that set changes. */
	char *pack_warned;
	/* Host operations begun (atomic): one that renames, removes or links
	 * may have changed the name any file has (fsb_broker_epoch). */
	uint64_t name_changes;
};

/*
 * What a verdict kept outside the cache rests on: the pack's verdicts (a
 * reload or an approval changes them) and every file's names (a host
 * operation may change them). Two epochs that are equal mean neither
 * changed in between.
 */
struct fsb_broker_epoch {
	uint64_t verdicts, names;
};

/** One access to decide, and what was decided. */
struct fsb_access {
	/* in */
	enum fsb_op op;
	const char *requested;
	enum fsb_resolve_strategy strategy;
	const char *session, *tool_call;
	pid_t pid;
	uid_t uid;
	bool peek;		/* a question: use up no approval */
	bool explain;		/* an allow's reason and hint too (who prints them) */
	/* The caller resolved the path itself and filled `res` (an entry met
	 * while walking a real directory tree, or the name it will have after
	 * a rename): `requested` is that real path, and no lookup is made. */
	bool given_resolved;
	bool resolved_early;	/* internal to fsb_broker_decide */
	/* The requester's "/" when it is not the core's (a sandboxed process:
	 * its /proc/<pid>/root), used when has_view is set (DESIGN §5). */
	bool has_view;
	int view_fd;
	/* A delete that removes a directory only when it is empty (rmdir, a
	 * host delete without "recursive"): the kernel's ENOTEMPTY comes first. */
	bool dir_must_be_empty;
	/* A mkdir that makes the missing directories on the way (a host mkdir
	 * with "recursive"): none of the kernel's answers above applies. */
	bool makes_parents;
	/* out */
	char normalised[PATH_MAX];	/* lexical form of `requested` */
	struct fsb_resolved res;	/* valid when resolve_err == 0; in with given_resolved */
	int resolve_err;		/* -errno from resolution, or 0 */
	struct fsb_verdict verdict;
	struct fsb_broker_epoch epoch;	/* what the verdict rested on */
	/* The prompt block an ask recorded ("" otherwise), copied: the prompts
	 * may change as soon as the broker's lock is let go. */
	char block_id[sizeof(((struct fsb_prompt *)0)->id)];
	int errnum;		/* errno to answer a deny with */
	/* The call fails whatever the pack says, as it would bare (errnum:
	 * EEXIST, ENOENT, ENOTDIR, ENOTEMPTY), and the sandbox could see that
	 * for itself: the verdict stays a deny, but nothing was refused or
	 * asked, and no prompt block was recorded (see refused_anyway()). */
	bool refused_anyway;
};

/** True for a usable session or tool-call id: [A-Za-z0-9._:-]{1,128}, no leading '.'. */
bool fsb_id_valid(const char *id);

/**
 * Set up: the state dir (created 0700, refused if it is not the user's and
 * 0700), the protected paths, and the first pack. `loop` may be NULL for a
 * one-shot use such as `fsbroker check`, which also has no state dir.
 * Returns 0, or a negative value with a sentence in `err`.
 */
int fsb_broker_init(struct fsb_broker *b, uv_loop_t *loop,
		    const struct fsb_broker_config *cfg, char *err, size_t errlen);

/**
 * Load the first pack of a broker set up with cfg.policy_later (and
 * protect its files): what fsb_broker_init() does last otherwise. 0, or a
 * negative value with a sentence in `err`.
 */
int fsb_broker_load_policy(struct fsb_broker *b, char *err, size_t errlen);

void fsb_broker_free(struct fsb_broker *b);

/**
 * Load the pack again. On success the new pack serves from the next request
 * on, with the approvals carried over; on failure the old one keeps serving
 * and `err` says why (file and line or field). Audited either way.
 */
int fsb_broker_reload(struct fsb_broker *b, const char *trigger, char *err, size_t errlen);

/**
 * The pack's answers may have changed (an approval given, a session's
 * state): no read verdict cached until now is used again. Takes the lock.
 */
void fsb_broker_verdicts_changed(struct fsb_broker *b);

/** The broker's epoch now (an access gets the one it was decided in). */
void fsb_broker_epoch(struct fsb_broker *b, struct fsb_broker_epoch *e);

/**
 * Whether the pack's verdict on `d`, just decided, answers every op of its
 * class (verdict_cache.h) on the same names while the epoch holds: an
 * allow the rules gave, a pack without decide hooks, a path that resolved.
 * It is what the verdict cache would answer them with.
 */
bool fsb_broker_verdict_answers_class(struct fsb_broker *b, const struct fsb_access *d);

/** Take and release the broker's lock (see struct fsb_broker). */
void fsb_broker_lock(struct fsb_broker *b);
void fsb_broker_unlock(struct fsb_broker *b);

/** Decide one access (fills the out fields of `d`). Never fails open. */
void fsb_broker_decide(struct fsb_broker *b, struct fsb_access *d);

/**
 * Start the audit record of `d` in `l`: phase, session, toolCallId, op,
 * path, normalisedPath, decision, rule, reason, blockId, and `errnum` (a
 * positive errno, or 0 for none) as "errno". The caller adds its fields
 * (audit_line.h) and writes it with fsb_broker_audit_line().
 */
void fsb_access_audit_line(struct fsb_audit_line *l, const struct fsb_access *d,
			   const char *phase, int errnum);

/**
 * The state of session `id` (its audit log opened), or NULL for an invalid
 * id, a core without a state dir, or too many sessions.
 */
struct fsb_session *fsb_broker_session(struct fsb_broker *b, const char *id);

/**
 * Append a record to the session's audit log (takes ownership of `rec`).
 * 0 or -errno; a request whose line could not be written is refused.
 */
int fsb_broker_audit(struct fsb_broker *b, const char *session, cJSON *rec);

/** The same for a record built as a line (frees `l`). */
int fsb_broker_audit_line(struct fsb_broker *b, const char *session, struct fsb_audit_line *l);

/** How an op's path is resolved (DESIGN §5). */
enum fsb_resolve_strategy fsb_strategy_for_op(enum fsb_op op);

/** The errno name for a reply ("EACCES"). */
const char *fsb_errno_name(int errnum);

#endif
