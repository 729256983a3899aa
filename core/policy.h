/*
 * policy.h — one loaded rule pack and the single entry point the core calls
 * per request (DESIGN §4.1): evaluate(req) -> verdict. The pack runs in its
 * own sandboxed lua_State (lua_host.h); every failure is a deny.
 */
#ifndef FSB_POLICY_H
#define FSB_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lua_host.h"
#include "op.h"

enum fsb_decision { FSB_ALLOW, FSB_ASK, FSB_DENY };

/* Where a verdict came from: what the core may cache, count as a failure,
 * or use up as an approval, told apart without reading the rule's text
 * (a decide hook may name its rule anything). */
enum fsb_verdict_origin {
	FSB_BY_RULES,		/* the pack's lists or a decide hook */
	FSB_BY_APPROVAL_ONCE,	/* an ask turned allow by a once-approval */
	FSB_BY_APPROVAL_SESSION,
	FSB_BY_FAILURE,		/* the engine or a hook failed: denied */
};

struct fsb_verdict {
	enum fsb_decision decision;
	enum fsb_verdict_origin origin;
	bool backup;		/* back up before the change (modify ops) */
	char rule[512];		/* the deciding rule: list name and glob */
	char reason[512];	/* a sentence */
	char hint[512];		/* what would change the verdict */
};

struct fsb_policy_req {
	enum fsb_op op;
	const char *path;	/* resolved real path */
	const char *requested;	/* as the client said it, or NULL */
	bool exists;
	mode_t mode;		/* st_mode, for the file type, when it exists */
	dev_t dev;
	ino_t ino;
	nlink_t nlink;
	const char *session;
	const char *tool_call;
	pid_t pid;
	uid_t uid;
	bool peek;		/* a question (CheckAccess): use up no approval */
	bool explain;		/* an allow's reason and hint too: only a deny and
				 * an ask are explained otherwise */
};

/** What the pack says about backups (its `backup` table). */
enum fsb_on_too_large { FSB_ON_TOO_LARGE_ASK, FSB_ON_TOO_LARGE_ALLOW, FSB_ON_TOO_LARGE_DENY };

struct fsb_backup_settings {
	uint64_t max_bytes;	/* backup.maxSizeMB, clamped to [1, 4096] MiB */
	enum fsb_on_too_large on_too_large;
	bool batched;		/* backup.durability = "batched" (else "strict") */
	uint64_t quota_bytes;	/* backup.quotaMB, clamped to [1, 16777216] MiB (16 TiB) */
};

struct fsb_policy_opts {
	const char *luadir;		/* holds policy/ (the engine) */
	const char *pack;		/* the top pack file, absolute */
	const char *const *rules_dirs;	/* NULL-terminated; includes resolve here */
	const char *workspace;		/* NULL when not given */
	const char *home, *tmp, *state;
	const struct fsb_lua_limits *limits;	/* NULL for the defaults */
	/* Skip the self-tests of contents that passed them before, as
	 * recorded in the state dir (pack_tests.h); `fsbroker check` runs
	 * them always. */
	bool cache_tests;
};

struct fsb_policy;

/**
 * Load a pack in a fresh state: run the engine's loader, which validates the
 * pack and runs its self-tests. On failure returns a negative value and
 * writes one sentence naming the file and the line or field into `err`.
 */
int fsb_policy_load(const struct fsb_policy_opts *opts, struct fsb_policy **out,
		    char *err, size_t errlen);

void fsb_policy_free(struct fsb_policy *p);

/** The pack's name, and every pack file it loaded (top first). */
const char *fsb_policy_name(const struct fsb_policy *p);
size_t fsb_policy_nfiles(const struct fsb_policy *p);
const char *fsb_policy_file(const struct fsb_policy *p, size_t i);

/**
 * Decide one request. Never fails open: a Lua error, a cap hit or a
 * malformed verdict yields FSB_DENY with rule "policy error" and the error as
 * the reason.
 */
void fsb_policy_evaluate(struct fsb_policy *p, const struct fsb_policy_req *req,
			 struct fsb_verdict *out);

/**
 * Record an approval for the exact key (op, real path, dev/ino when it
 * exists) with scope "once" or "session", for `session` only. 0 or -EINVAL.
 */
int fsb_policy_approve(struct fsb_policy *p, enum fsb_op op, const char *path,
		       bool exists, dev_t dev, ino_t ino, const char *scope,
		       const char *session);

/** Carry the approvals of `from` over to `to` (on reload). 0 or -1. */
int fsb_policy_move_approvals(struct fsb_policy *from, struct fsb_policy *to);

/** `mb` MiB in bytes, clamped to [1, 4096] MiB (DESIGN §6.2). */
uint64_t fsb_clamp_backup_mb(double mb);

/** `mb` MiB in bytes, clamped to [1 MiB, 16 TiB]: the store's quota. */
uint64_t fsb_clamp_quota_mb(double mb);

/** The pack's backup settings, read once when it loaded. */
const struct fsb_backup_settings *fsb_policy_backup(const struct fsb_policy *p);

/** Whether the pack has decide hooks (a verdict may then depend on more
 * than the request's paths: the verdict cache stays off). */
bool fsb_policy_has_hooks(const struct fsb_policy *p);

/**
 * Whether `name` (one path component) is a plain name of the pack: like
 * none of the names its globs single out (engine.lua, name_literals), so
 * that in any directory the pack judges it, for every op, as it judges
 * every other plain name there. False for a pack with decide hooks, one
 * whose globs pick names by a class, and for "", "." and "..".
 */
bool fsb_policy_name_is_plain(const struct fsb_policy *p, const char *name);

/** The pack's `delete.mode`: true for "trash" (the default), false for "unlink". */
bool fsb_policy_delete_trashes(const struct fsb_policy *p);

/** Where the paths a glob matches live (policy.glob base_of). */
enum fsb_glob_kind {
	FSB_GLOB_EXACT,		/* exactly `base` */
	FSB_GLOB_TREE,		/* `base` and everything beneath it */
	FSB_GLOB_PATTERN,	/* some paths beneath `base` */
};

struct fsb_glob_entry {
	char *glob;		/* variables, '~' and {a,b} expanded */
	char *rule;		/* as a verdict names it: "denyRead ~/.netrc" */
	char *base;		/* the longest literal prefix, a directory or the path */
	enum fsb_glob_kind kind;
	bool except;		/* a "!glob" exception */
};

struct fsb_glob_list {
	struct fsb_glob_entry *v;
	size_t n;
};

enum fsb_reads_mode { FSB_READS_MASK, FSB_READS_BROKER };

/* The pack's `network`: the host's, or a namespace with only a loopback. */
enum fsb_network_mode { FSB_NETWORK_HOST, FSB_NETWORK_NONE };

/** The pack's lists for the runtime's mount plan (engine:summary()). */
struct fsb_policy_summary {
	struct fsb_glob_list read, modify, deny_read, deny_modify, ask, ask_read;
	enum fsb_reads_mode reads;
	enum fsb_network_mode network;
	char **env_pass;	/* env.pass: the variables a sandboxed command keeps */
	size_t nenv_pass;
};

/**
 * Copy engine:summary() into `out` (freed with fsb_policy_summary_free(),
 * also after a failure). 0, or -EINVAL / -ENOMEM with a sentence in `err`.
 */
int fsb_policy_summary(struct fsb_policy *p, struct fsb_policy_summary *out,
		       char *err, size_t errlen);

void fsb_policy_summary_free(struct fsb_policy_summary *s);

/**
 * Whether denyRead hides `path` (every spelling, exceptions honoured; the
 * other lists and the decide hooks are not consulted, as none can lift a
 * denyRead deny). 1 with the rule in `rule`, 0 when not, -EINVAL when the
 * engine failed.
 */
int fsb_policy_denied_read(struct fsb_policy *p, const char *path, char *rule, size_t len);

/** "allow", "ask", "deny". */
const char *fsb_decision_name(enum fsb_decision d);

/** Bytes the pack's Lua state holds. */
size_t fsb_policy_memory(const struct fsb_policy *p);

#endif
