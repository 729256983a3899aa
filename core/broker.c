/*
 * broker.c — the core's state and the decision path every request takes
 * (see broker.h). Read top to bottom: fsb_broker_decide() is the pipeline.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "at.h"
#include "broker.h"
#include "call_stages.h"
#include "config.h"
#include "log.h"
#include "proto_json.h"
#include "tree.h"

bool fsb_id_valid(const char *id)
{
	size_t n = strlen(id);

	if (n == 0 || n > 128 || id[0] == '.')
		return false;
	for (const char *p = id; *p; p++)
		if (!(*p == '.' || *p == '_' || *p == '-' || *p == ':' ||
		      (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
		      (*p >= 'A' && *p <= 'Z')))
			return false;
	return true;
}

const char *fsb_errno_name(int errnum)
{
	const char *name = strerrorname_np(errnum);

	return name != NULL ? name : "EIO";
}

enum fsb_resolve_strategy fsb_strategy_for_op(enum fsb_op op)
{
	switch (op) {
	case FSB_OP_DELETE:
	case FSB_OP_RENAME_FROM:
	case FSB_OP_RENAME_TO:
	case FSB_OP_MKDIR:
	case FSB_OP_SYMLINK:
		return FSB_RESOLVE_THROUGH_PARENT;
	case FSB_OP_CHMOD:
	case FSB_OP_CHOWN:
	case FSB_OP_UTIMES:
	case FSB_OP_XATTR:
	case FSB_OP_LINK:
		return FSB_RESOLVE_EXISTING;
	default:
		return FSB_RESOLVE_EXISTING_OR_CREATABLE;
	}
}

/* Create `dir` 0700 if missing (its parents with 0700 too); refuse one that
 * is a symlink, not ours, or open to others: everything the core keeps
 * there is private to the user. */
static int ensure_private_dir(const char *dir, char *err, size_t errlen)
{
	char tmp[PATH_MAX];
	struct stat st;

	snprintf(tmp, sizeof(tmp), "%s", dir);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0700) < 0 && errno != EEXIST) {
			snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
			return -errno;
		}
		*p = '/';
	}
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
		return -errno;
	}
	if (lstat(dir, &st) < 0) {
		snprintf(err, errlen, "cannot inspect %s: %s", dir, strerror(errno));
		return -errno;
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 077) != 0) {
		snprintf(err, errlen, "%s must be a directory owned by you with mode 0700 "
			 "(it is %s, owner %u, mode %04o): fix it or choose another",
			 dir, S_ISDIR(st.st_mode) ? "a directory" : "not a directory",
			 (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

/* Protect the files of the loaded pack, and warn about any that a sandboxed
 * command could otherwise have rewritten. */
/* Names shown in the one warning line; the rest are counted. */
#define PACK_WARN_NAMES 5

/*
 * Protect the pack's files, and warn of those a sandboxed command could
 * replace (the workspace, ${tmp}) in one line, said once per core and again
 * only when a reload changes that set: every command used to repeat a line
 * per file.
 */
static void protect_pack_files(struct fsb_broker *b)
{
	size_t nfiles = fsb_policy_nfiles(b->policy), nexposed = 0, len = 1;
	char *all, names[2048] = "";

	fsb_protected_drop_pack(&b->protected);
	for (size_t i = 0; i < nfiles; i++)
		len += strlen(fsb_policy_file(b->policy, i)) + 2;
	all = calloc(1, len);
	for (size_t i = 0; i < nfiles; i++) {
		const char *f = fsb_policy_file(b->policy, i);

		fsb_protected_add(&b->protected, f, FSB_PROTECT_READONLY, "pack file", true);
		if (!(b->cfg.workspace[0] && fsb_path_within(f, b->cfg.workspace)) &&
		    !fsb_path_within(f, b->cfg.tmp))
			continue;
		if (all != NULL)
			snprintf(all + strlen(all), len - strlen(all), "%s%s",
				 nexposed > 0 ? ", " : "", f);
		if (nexposed < PACK_WARN_NAMES)
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
				 nexposed > 0 ? ", " : "", f);
		nexposed++;
	}
	/* Out of memory: warn as if the set were new. */
	if (nexposed > 0 && (all == NULL || b->pack_warned == NULL ||
			     strcmp(all, b->pack_warned) != 0)) {
		if (nexposed > PACK_WARN_NAMES)
			snprintf(names + strlen(names), sizeof(names) - strlen(names),
				 " and %zu more", nexposed - PACK_WARN_NAMES);
		fsb_warn("%zu pack file%s lie%s in a tree sandboxed commands may modify "
			 "(the workspace or ${tmp}): %s; the core protects %s, but keep packs "
			 "outside the workspace", nexposed, nexposed == 1 ? "" : "s",
			 nexposed == 1 ? "s" : "", names, nexposed == 1 ? "it" : "them");
	}
	free(b->pack_warned);
	b->pack_warned = nexposed > 0 ? all : NULL;
	if (nexposed == 0)
		free(all);
}

static int load_policy(struct fsb_broker *b, struct fsb_policy **out, char *err, size_t errlen)
{
	const char *dirs[FSB_MAX_RULES_DIRS + 1] = { 0 };
	struct fsb_policy_opts o = {
		.luadir = b->cfg.luadir,
		.pack = b->cfg.pack,
		.rules_dirs = dirs,
		.workspace = b->cfg.workspace[0] ? b->cfg.workspace : NULL,
		.home = b->cfg.home,
		.tmp = b->cfg.tmp,
		.state = b->cfg.state_dir[0] ? b->cfg.state_dir : NULL,
		.limits = &b->cfg.limits,
		.cache_tests = (!b->cfg.one_shot || b->cfg.keep_compiled) && b->cfg.state_dir[0] != '\0',
	};

	for (int i = 0; i < b->cfg.nrules_dirs; i++)
		dirs[i] = b->cfg.rules_dirs[i];
	return fsb_policy_load(&o, out, err, errlen);
}

int fsb_broker_init(struct fsb_broker *b, uv_loop_t *loop,
		    const struct fsb_broker_config *cfg, char *err, size_t errlen)
{
	char exe[PATH_MAX], found[PATH_MAX], audit_dir[PATH_MAX + 8];
	int rc;

	pthread_mutexattr_t attr;

	memset(b, 0, sizeof(*b));
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&b->lock, &attr);
	pthread_mutexattr_destroy(&attr);
	b->loop = loop;
	fsb_work_queue_init(&b->work, loop);
	b->cfg = *cfg;
	b->rootfd = -1;
	b->started_ms = loop != NULL ? uv_now(loop) : 0;
	b->loop_thread = pthread_self();
	b->approval_timeout_s = 60;
	fsb_link_guard_init(&b->link_guard);
	b->prompts = calloc(1, sizeof(*b->prompts));
	if (b->prompts == NULL || fsb_prompts_init(b->prompts) < 0) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	b->rootfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (b->rootfd < 0) {
		snprintf(err, errlen, "cannot open /: %s", strerror(errno));
		return -errno;
	}
	if (cfg->state_dir[0] && !cfg->one_shot) {
		if ((rc = ensure_private_dir(cfg->state_dir, err, errlen)) < 0)
			return rc;
		snprintf(audit_dir, sizeof(audit_dir), "%s/audit", cfg->state_dir);
		if ((rc = ensure_private_dir(audit_dir, err, errlen)) < 0)
			return rc;
		fsb_protected_add(&b->protected, cfg->state_dir, FSB_PROTECT_HIDDEN,
				  "state dir", false);
	}
	/* The operator's own pack may sit in a directory that holds other
	 * things (even a workspace): there only the .lua names an include could
	 * resolve to are protected, not the whole directory. */
	for (int i = 0; i < cfg->nrules_dirs; i++)
		fsb_protected_add(&b->protected, cfg->rules_dirs[i], FSB_PROTECT_PACK_NAMES,
				  "rules dir", false);
	fsb_protected_add(&b->protected, cfg->luadir, FSB_PROTECT_READONLY,
			  "policy engine dir", false);
	if (realpath("/proc/self/exe", exe) != NULL)
		fsb_protected_add(&b->protected, exe, FSB_PROTECT_READONLY,
				  "fsbroker binary", false);
	/* What runs first in every sandbox, and what the shell clients run:
	 * the core's own as much as its binary is. */
	if (fsb_config_find_init(found, sizeof(found)) == 0 && realpath(found, exe) != NULL)
		fsb_protected_add(&b->protected, exe, FSB_PROTECT_READONLY, "fsbroker-init",
				  false);
	/* The clients themselves, not the directory: in the build tree it
	 * also holds their sources and test trees. */
	for (const char *const *c = (const char *const[]){ "zsh", "toybox", "bin", NULL }; *c; c++)
		if (fsb_config_find_client(*c, found, sizeof(found)) == 0 &&
		    realpath(found, exe) != NULL)
			fsb_protected_add(&b->protected, exe, FSB_PROTECT_READONLY,
					  "brokered client", false);

	if (fsb_verdict_cache_init(&b->verdict_cache, FSB_VERDICT_CACHE_ENTRIES,
				 FSB_VERDICT_CACHE_BYTES) < 0) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return cfg->policy_later ? 0 : fsb_broker_load_policy(b, err, errlen);
}

int fsb_broker_load_policy(struct fsb_broker *b, char *err, size_t errlen)
{
	int rc;

	if ((rc = load_policy(b, &b->policy, err, errlen)) < 0)
		return rc;
	protect_pack_files(b);
	return 0;
}

void fsb_broker_free(struct fsb_broker *b)
{
	for (int i = 0; i < b->nsessions; i++) {
		fsb_audit_close(b->sessions[i].audit);
		fsb_store_close(b->sessions[i].store);
		for (size_t j = 0; j < b->sessions[i].nheld; j++)
			close(b->sessions[i].held[j].fd);
		pthread_mutex_destroy(&b->sessions[i].store_lock);
	}
	b->nsessions = 0;
	for (size_t i = 0; i < b->nskips; i++)
		free(b->skips[i].path);
	free(b->skips);
	b->skips = NULL;
	b->nskips = 0;
	fsb_approvals_free(b);
	fsb_policy_free(b->policy);
	b->policy = NULL;
	fsb_verdict_cache_free(&b->verdict_cache);
	fsb_link_guard_free(&b->link_guard);
	fsb_protected_free(&b->protected);
	free(b->pack_warned);
	b->pack_warned = NULL;
	if (b->prompts != NULL)
		fsb_prompts_free(b->prompts);
	free(b->prompts);
	b->prompts = NULL;
	if (b->rootfd >= 0)
		close(b->rootfd);
	b->rootfd = -1;
	fsb_work_queue_destroy(&b->work);
	pthread_mutex_destroy(&b->lock);
}

void fsb_broker_verdicts_changed(struct fsb_broker *b)
{
	fsb_broker_lock(b);
	fsb_verdict_cache_invalidate(&b->verdict_cache);
	fsb_broker_unlock(b);
}

/* The lock is held. */
static void epoch_locked(struct fsb_broker *b, struct fsb_broker_epoch *e)
{
	e->verdicts = b->verdict_cache.generation;
	e->names = __atomic_load_n(&b->name_changes, __ATOMIC_ACQUIRE);
}

void fsb_broker_epoch(struct fsb_broker *b, struct fsb_broker_epoch *e)
{
	fsb_broker_lock(b);
	epoch_locked(b, e);
	fsb_broker_unlock(b);
}

static bool verdict_cacheable(const struct fsb_broker *b, const struct fsb_access *d,
			      struct fsb_verdict_key *k);
static bool verdict_storable(const struct fsb_verdict *v);

bool fsb_broker_verdict_answers_class(struct fsb_broker *b, const struct fsb_access *d)
{
	struct fsb_verdict_key k;
	bool answers;

	fsb_broker_lock(b);
	answers = d->verdict.decision == FSB_ALLOW && verdict_storable(&d->verdict) &&
		  verdict_cacheable(b, d, &k);
	fsb_broker_unlock(b);
	return answers;
}

void fsb_broker_lock(struct fsb_broker *b)
{
	pthread_mutex_lock(&b->lock);
}

void fsb_broker_unlock(struct fsb_broker *b)
{
	pthread_mutex_unlock(&b->lock);
}

int fsb_broker_reload(struct fsb_broker *b, const char *trigger, char *err, size_t errlen)
{
	struct fsb_policy *fresh = NULL;
	cJSON *rec;
	int rc;

	/* Loading (and self-testing) the new pack takes the lock of no one:
	 * the old pack serves meanwhile. */
	rc = load_policy(b, &fresh, err, errlen);
	fsb_broker_lock(b);
	if (rc == 0 && fsb_policy_move_approvals(b->policy, fresh) < 0) {
		snprintf(err, errlen, "the new pack refused the approvals of the old one");
		fsb_policy_free(fresh);
		rc = -EINVAL;
	}
	rec = cJSON_CreateObject();
	cJSON_AddStringToObject(rec, "phase", "policy-reload");
	cJSON_AddStringToObject(rec, "trigger", trigger);
	cJSON_AddStringToObject(rec, "pack", b->cfg.pack);
	cJSON_AddBoolToObject(rec, "ok", rc == 0);
	if (rc < 0) {
		b->stats.reload_failures++;
		cJSON_AddStringToObject(rec, "error", err);
		fsb_error("reload (%s) failed, the previous pack keeps serving: %s", trigger, err);
	} else {
		/* Decisions hold the lock: none is using the old state now, so it
		 * can go at once. */
		fsb_policy_free(b->policy);
		b->policy = fresh;
		/* Not one verdict of the old pack is answered again. */
		fsb_verdict_cache_invalidate(&b->verdict_cache);
		fsb_link_guard_reset(&b->link_guard);
		protect_pack_files(b);
		b->stats.reloads++;
		fsb_info("reloaded pack %s (%s)", fsb_policy_name(fresh), trigger);
	}
	for (int i = 0; i < b->nsessions; i++)
		fsb_audit_write(b->sessions[i].audit, rec);
	cJSON_Delete(rec);
	if (rc == 0 && b->on_reloaded != NULL)
		b->on_reloaded(b, b->on_reloaded_arg);
	fsb_broker_unlock(b);
	return rc;
}

static void deny_protected(struct fsb_access *d, const struct fsb_protected_entry *e)
{
	struct fsb_verdict *v = &d->verdict;

	memset(v, 0, sizeof(*v));
	v->decision = FSB_DENY;
	snprintf(v->rule, sizeof(v->rule), "protected %s", e->what);
	snprintf(v->reason, sizeof(v->reason), "%s lies in fsbroker's %s %s, which no pack can open",
		 d->resolve_err == 0 ? d->res.path : d->normalised, e->what, e->path);
	snprintf(v->hint, sizeof(v->hint), "nothing in a pack changes this");
	d->errnum = EACCES;
}

static void decide(struct fsb_broker *b, struct fsb_access *d, const char *guarded);

/* Ops that change the inode a name points to (engine.lua's HARDLINK_OPS):
 * through one name of a file with several, they change every name. */
static bool changes_the_inode(enum fsb_op op)
{
	switch (op) {
	case FSB_OP_WRITE:
	case FSB_OP_CREATE:
	case FSB_OP_TOUCH:
	case FSB_OP_CHMOD:
	case FSB_OP_CHOWN:
	case FSB_OP_UTIMES:
	case FSB_OP_XATTR:
	case FSB_OP_LINK:
		return true;
	default:
		return false;
	}
}

/*
 * When `d` would change a protected file through another name of it (a
 * hard link): the rule to deny it with, in `buf`; else NULL. The first
 * call after a (re)load lists those files, without the broker's lock.
 */
static const char *linked_to_protected(struct fsb_broker *b, const struct fsb_access *d,
				       char *buf, size_t len)
{
	char path[PATH_MAX], rule[512];

	if (b->cfg.one_shot || !changes_the_inode(d->op) || d->resolve_err != 0 ||
	    !d->res.exists || !S_ISREG(d->res.st.st_mode) || d->res.st.st_nlink < 2 ||
	    !fsb_link_guard_protects(b, &d->res.st, path, sizeof(path), rule, sizeof(rule)))
		return NULL;
	snprintf(buf, len, "hardlinks: another name of %s (%s)", path, rule);
	return buf;
}

/* Whether `d` may wait for the host's answer: inline approvals are on, a
 * sandboxed process made the call, and this is a thread of the pool (the
 * loop must never wait: it serves the host's answer). */
static bool may_wait(const struct fsb_broker *b, const struct fsb_access *d)
{
	return b->on_prompt != NULL && d->block_id[0] != '\0' && d->pid > 0 &&
	       b->loop != NULL && !pthread_equal(pthread_self(), b->loop_thread);
}

/* Inline approvals: ask the host about the block `d` recorded and wait.
 * An open gives back its share of the work gate meanwhile, so that a call
 * that must run alone, and every call after that one, does not wait behind
 * it (work.h); exclusive work keeps the gate. An approval is judged again
 * by the pack, on the path resolved again (the tree may have changed
 * meanwhile), so a deny, a reload or a swapped name still wins; a timeout
 * or a deny leaves `d` as it was. Called with the broker lock held once. */
static void wait_for_host(struct fsb_broker *b, struct fsb_access *d)
{
	const struct fsb_prompt *p = fsb_prompts_find(b->prompts, d->block_id);
	char block[sizeof(d->block_id)], buf[PATH_MAX + 600];
	struct fsb_work_queue *paused;
	int rc;

	if (p == NULL)
		return;
	snprintf(block, sizeof(block), "%s", d->block_id);
	if (p->waiters == 0)
		b->on_prompt(b, p, b->on_prompt_arg);
	paused = fsb_work_pause();
	rc = fsb_prompts_wait(b->prompts, &b->lock, block, b->approval_timeout_s);
	if (paused != NULL) {
		/* The gate is taken before the broker lock, never after. */
		fsb_broker_unlock(b);
		fsb_work_resume(paused);
		fsb_broker_lock(b);
	}
	if (rc == 1) {
		if (d->resolved_early) {
			d->res.exists = false;
			d->res.path[0] = '\0';
			d->resolve_err = fsb_resolve(d->has_view ? d->view_fd : b->rootfd,
						     d->requested, d->strategy, &d->res);
		}
		decide(b, d, linked_to_protected(b, d, buf, sizeof(buf)));
		return;
	}
	if (rc == -ETIMEDOUT) {
		struct fsb_audit_line l;

		fsb_access_audit_line(&l, d, "approval-timeout", d->errnum);
		fsb_audit_line_int(&l, "timeoutSeconds", b->approval_timeout_s);
		fsb_broker_audit_line(b, d->session ? d->session : "", &l);
	}
}

void fsb_broker_decide(struct fsb_broker *b, struct fsb_access *d)
{
	char buf[PATH_MAX + 600];
	enum fsb_stage was = fsb_stage_push(FSB_STAGE_RESOLVE);
	const char *guarded;

	/* The lookups on disk need no lock (the root fd never changes); only
	 * the pack, the prompts and the protected paths do. */
	d->resolved_early = false;
	if (!d->given_resolved) {
		d->res.exists = false;
		d->res.path[0] = '\0';
		d->resolve_err = fsb_resolve(d->has_view ? d->view_fd : b->rootfd, d->requested,
					     d->strategy, &d->res);
		d->resolved_early = true;
	}
	fsb_stage_push(FSB_STAGE_DECIDE);
	guarded = linked_to_protected(b, d, buf, sizeof(buf));
	fsb_broker_lock(b);
	epoch_locked(b, &d->epoch);
	decide(b, d, guarded);
	if (d->verdict.decision == FSB_ASK && may_wait(b, d))
		wait_for_host(b, d);
	fsb_approvals_note_decision(b, d);
	fsb_broker_unlock(b);
	fsb_stage_pop(was);
}

/*
 * The ops the rules of a pack without decide hooks cannot tell apart
 * (engine.lua, judge() and the hard-link rule), each class named by one of
 * its ops: those that change a file's inode (content, mode, owner, times,
 * xattrs, a new name for it), which the hard-link rule looks at; those
 * that only take a name away, which denyWrite lets through; and those that
 * make a name (rename-to, mkdir, symlink). A read is a class of its own.
 */
static enum fsb_op verdict_class(enum fsb_op op)
{
	if (changes_the_inode(op))
		return FSB_OP_WRITE;
	switch (op) {
	case FSB_OP_DELETE:
	case FSB_OP_RENAME_FROM:
		return FSB_OP_DELETE;
	case FSB_OP_RENAME_TO:
	case FSB_OP_MKDIR:
	case FSB_OP_SYMLINK:
		return FSB_OP_RENAME_TO;
	default:
		return op;
	}
}

/*
 * Whether the pack's verdict on `d` may come from, and go to, the verdict
 * cache: an access whose path resolved, judged by a pack without decide
 * hooks. Its verdict is then a function of the two names, the op, whether
 * the file exists and has other names, and the pack alone (verdict_cache.h;
 * approvals only turn an ask into an allow, and those are never stored,
 * see below).
 *
 * A change is keyed by its class, not its op, and without the existence:
 * only allows of changes are stored (verdict_storable), an allow carries
 * no sentence naming the op, and the rules look at the existence only
 * through the hard-link rule, which LINKED holds. So `tar x`'s create of
 * a file answers its fchown, fchmod and futimens from the cache.
 */
static bool verdict_cacheable(const struct fsb_broker *b, const struct fsb_access *d,
			      struct fsb_verdict_key *k)
{
	/* An explained verdict is not what the cache holds (an allow's is
	 * stored without its sentences). */
	if (d->resolve_err != 0 || d->explain || fsb_policy_has_hooks(b->policy))
		return false;
	k->kind = (unsigned)verdict_class(d->op);
	if (d->res.exists) {
		if (d->op == FSB_OP_READ)
			k->kind |= FSB_VERDICT_EXISTS;
		if (d->res.st.st_nlink > 1 && !S_ISDIR(d->res.st.st_mode))
			k->kind |= FSB_VERDICT_LINKED;
	}
	k->session = d->session != NULL ? d->session : "";
	k->tool_call = d->tool_call != NULL ? d->tool_call : "";
	k->requested = d->requested;
	k->resolved = d->res.path;
	return true;
}

/*
 * The key of the allow every plain name of a directory gets (policy.h,
 * fsb_policy_name_is_plain): `k` with both names cut after their last '/'
 * into `requested_dir` and `resolved_dir` (PATH_MAX each), and the kind
 * marked FSB_VERDICT_ANY_NAME. False unless both names end in the same
 * plain name.
 */
static bool any_name_key(const struct fsb_broker *b, const struct fsb_verdict_key *k,
			 struct fsb_verdict_key *dk, char *requested_dir, char *resolved_dir)
{
	const char *rq = strrchr(k->requested, '/'), *rs = strrchr(k->resolved, '/');
	size_t nq, ns;

	if (rq == NULL || rs == NULL || strcmp(rq, rs) != 0 ||
	    !fsb_policy_name_is_plain(b->policy, rs + 1))
		return false;
	nq = (size_t)(rq - k->requested) + 1;
	ns = (size_t)(rs - k->resolved) + 1;
	if (nq >= PATH_MAX || ns >= PATH_MAX)
		return false;
	memcpy(requested_dir, k->requested, nq);
	requested_dir[nq] = '\0';
	memcpy(resolved_dir, k->resolved, ns);
	resolved_dir[ns] = '\0';
	*dk = *k;
	dk->requested = requested_dir;
	dk->resolved = resolved_dir;
	dk->kind |= FSB_VERDICT_ANY_NAME;
	return true;
}

/* What may be stored: an allow or a deny the rules gave. Never an ask (an
 * approval changes it, and it must record its block), an allow an approval
 * gave (a "once" one is used up), or a failure of the engine. */
static bool verdict_storable(const struct fsb_verdict *v)
{
	return v->decision != FSB_ASK && v->origin == FSB_BY_RULES;
}

/*
 * The errno the kernel answers `d` with whatever any policy says, or 0:
 * mkdir or symlink onto an existing name (EEXIST: the kernel looks the
 * name up before it checks any permission, which is why `mkdir -p` works
 * in a read-only tree), a path whose directories do not exist (ENOENT,
 * ENOTDIR), a delete or a metadata change of a name that does not exist,
 * and a delete of a directory that is not empty when only an empty one
 * may go (ENOTEMPTY).
 */
static int kernel_errno(const struct fsb_broker *b, const struct fsb_access *d)
{
	bool exists = d->resolve_err == 0 && d->res.exists;
	int fd;

	if (d->op == FSB_OP_READ || d->makes_parents)
		return 0;
	if (d->resolve_err == -ENOENT || d->resolve_err == -ENOTDIR)
		return -d->resolve_err;
	if (d->resolve_err != 0)
		return 0;
	if (exists && (d->op == FSB_OP_MKDIR || d->op == FSB_OP_SYMLINK))
		return EEXIST;
	if (!exists && (d->op == FSB_OP_DELETE || d->op == FSB_OP_RENAME_FROM))
		return ENOENT;
	if (!exists || d->op != FSB_OP_DELETE || !d->dir_must_be_empty ||
	    !S_ISDIR(d->res.st.st_mode))
		return 0;
	/* Listed in the requester's view, never through a symlink. */
	fd = fsb_at_open(d->has_view ? d->view_fd : b->rootfd, d->res.path,
			 O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
	if (fd < 0)
		return 0;
	return fsb_tree_dir_is_empty(fd) ? 0 : ENOTEMPTY;
}

/*
 * A call the pack refuses but the kernel would fail anyway gets the
 * kernel's errno, and is neither refused nor asked: `mkdir -p` of an
 * existing directory, Node's recursive mkdir and git's clean-up rmdir
 * stop on EACCES where they expect EEXIST or ENOTEMPTY. Only where the
 * answer tells the requester nothing it cannot learn itself: the pack
 * lets it read the path (look it up, list its directory). A path the pack
 * hides keeps its EACCES, so that the answer never says whether it exists.
 * Returns true when `d` is answered so (d->refused_anyway).
 */
static bool refused_anyway(struct fsb_broker *b, struct fsb_access *d,
			   const struct fsb_policy_req *asked)
{
	struct fsb_policy_req look = *asked;
	struct fsb_verdict seen;
	int e;

	if (b->cfg.one_shot || (e = kernel_errno(b, d)) == 0)
		return false;
	look.op = FSB_OP_READ;
	look.peek = true;
	fsb_policy_evaluate(b->policy, &look, &seen);
	if (seen.decision != FSB_ALLOW)
		return false;
	d->verdict.decision = FSB_DENY;
	d->errnum = e;
	d->refused_anyway = true;
	return true;
}

static void decide(struct fsb_broker *b, struct fsb_access *d, const char *guarded)
{
	const struct fsb_protected_entry *prot;
	const struct fsb_prompt *prompt;
	struct fsb_policy_req req;
	char requested_dir[PATH_MAX], resolved_dir[PATH_MAX];
	struct fsb_verdict_key key, dir_key;
	bool cacheable, any_name;
	int rc;

	memset(&d->verdict, 0, sizeof(d->verdict));
	d->block_id[0] = '\0';
	d->errnum = 0;
	d->refused_anyway = false;
	if (!d->resolved_early)
		d->resolve_err = 0;

	/* 1. The path as asked, lexically; over-long ones go no further. */
	if (strnlen(d->requested, PATH_MAX) >= PATH_MAX ||
	    (rc = fsb_path_lexical(d->requested, d->normalised)) == -ENAMETOOLONG) {
		snprintf(d->normalised, sizeof(d->normalised), "(too long)");
		d->verdict.decision = FSB_DENY;
		snprintf(d->verdict.rule, sizeof(d->verdict.rule), "path too long");
		snprintf(d->verdict.reason, sizeof(d->verdict.reason),
			 "the path is longer than PATH_MAX (%d bytes)", PATH_MAX);
		d->errnum = ENAMETOOLONG;
		return;
	}
	if (rc < 0) {
		d->verdict.decision = FSB_DENY;
		snprintf(d->verdict.rule, sizeof(d->verdict.rule), "invalid path");
		snprintf(d->verdict.reason, sizeof(d->verdict.reason), "the path must be absolute");
		d->errnum = EINVAL;
		return;
	}

	/* 2. The real path, in the requester's view. Every client today shares
	 * the core's view ("/"); a sandbox's scope will bring its own pinned
	 * root. A write to a name that does not exist yet is a create. */

	if (d->op == FSB_OP_WRITE && d->resolve_err == 0 && !d->res.exists)
		d->op = FSB_OP_CREATE;
	else if (d->op == FSB_OP_CREATE && d->resolve_err == 0 && d->res.exists)
		d->op = FSB_OP_WRITE;

	/* 3. Protected paths, on both names, before any Lua runs. */
	prot = fsb_protected_match(&b->protected, d->normalised, d->op);
	if (prot == NULL && d->resolve_err == 0)
		prot = fsb_protected_match(&b->protected, d->res.path, d->op);
	if (prot != NULL) {
		deny_protected(d, prot);
		return;
	}
	/* Changing it would change a protected file through another name: as
	 * final as a protected path. */
	if (guarded != NULL) {
		d->verdict.decision = FSB_DENY;
		snprintf(d->verdict.rule, sizeof(d->verdict.rule), "%s", guarded);
		snprintf(d->verdict.reason, sizeof(d->verdict.reason),
			 "%s is a hard link of a file the pack protects: changing it changes that "
			 "file too", d->res.path);
		d->errnum = EACCES;
		return;
	}

	/* 4. The pack. It judges the real path and the requested one; the
	 * stricter verdict wins. When resolution failed it judges what was
	 * asked, so a denied path answers EACCES whether or not it exists.
	 * What it judged before, since the last reload or approval, is
	 * answered as it was then (verdict_cache.h); a plain name, as the
	 * pack allowed another plain name of its directory. */
	cacheable = verdict_cacheable(b, d, &key);
	if (cacheable && fsb_verdict_cache_get(&b->verdict_cache, &key, &d->verdict, &d->errnum))
		return;
	any_name = cacheable && any_name_key(b, &key, &dir_key, requested_dir, resolved_dir);
	if (any_name && fsb_verdict_cache_get(&b->verdict_cache, &dir_key, &d->verdict, &d->errnum)) {
		fsb_verdict_cache_put(&b->verdict_cache, &key, &d->verdict, d->errnum);
		return;
	}
	memset(&req, 0, sizeof(req));
	req.op = d->op;
	req.path = d->resolve_err == 0 ? d->res.path : d->normalised;
	req.requested = d->requested;
	req.exists = d->resolve_err == 0 && d->res.exists;
	if (req.exists) {
		req.mode = d->res.st.st_mode;
		req.dev = d->res.st.st_dev;
		req.ino = d->res.st.st_ino;
		req.nlink = d->res.st.st_nlink;
	}
	req.session = d->session;
	req.tool_call = d->tool_call;
	req.pid = d->pid;
	req.uid = d->uid;
	req.peek = d->peek;
	req.explain = d->explain;
	fsb_policy_evaluate(b->policy, &req, &d->verdict);
	if (d->verdict.origin == FSB_BY_FAILURE)
		b->stats.policy_errors++;
	if (d->verdict.decision != FSB_ALLOW && refused_anyway(b, d, &req))
		return;

	/* 5. What to answer. */
	switch (d->verdict.decision) {
	case FSB_ALLOW:
		d->errnum = d->resolve_err < 0 ? -d->resolve_err : 0;
		break;
	case FSB_ASK:
		d->errnum = EACCES;
		prompt = b->prompts == NULL ? NULL
			 : fsb_prompts_record(b->prompts, d->op, req.path, d->requested,
					      req.exists, req.dev, req.ino, d->verdict.rule,
					      d->session, d->tool_call);
		if (prompt != NULL)
			snprintf(d->block_id, sizeof(d->block_id), "%s", prompt->id);
		break;
	default:
		d->errnum = strcmp(d->verdict.rule, "path too long") == 0 ? ENAMETOOLONG : EACCES;
	}
	/* A change's deny is left out: it may be refused_anyway() next time
	 * (the kernel's errno), which depends on more than the key. */
	if (cacheable && verdict_storable(&d->verdict) &&
	    (d->op == FSB_OP_READ || d->verdict.decision == FSB_ALLOW))
		fsb_verdict_cache_put(&b->verdict_cache, &key, &d->verdict, d->errnum);
	/* Only an allow for the directory: a deny's sentence names its path. */
	if (any_name && verdict_storable(&d->verdict) && d->verdict.decision == FSB_ALLOW)
		fsb_verdict_cache_put(&b->verdict_cache, &dir_key, &d->verdict, d->errnum);
}

void fsb_access_audit_line(struct fsb_audit_line *l, const struct fsb_access *d,
			   const char *phase, int errnum)
{
	fsb_audit_line_init(l);
	fsb_audit_line_str(l, "phase", phase);
	fsb_audit_line_str(l, "session", d->session ? d->session : "");
	fsb_audit_line_str(l, "toolCallId", d->tool_call ? d->tool_call : "");
	fsb_audit_line_str(l, "op", fsb_op_name(d->op));
	/* Names a client sent may be any bytes: not UTF-8 goes as …Bytes. */
	fsb_audit_line_path(l, "path", d->requested);
	fsb_audit_line_path(l, "normalisedPath",
			    d->resolve_err == 0 ? d->res.path : d->normalised);
	/* "kernel": the call failed as it would bare; the rule is the one
	 * that would have refused it otherwise. */
	fsb_audit_line_str(l, "decision", d->refused_anyway ? "kernel"
					  : fsb_decision_name(d->verdict.decision));
	fsb_audit_line_str(l, "rule", d->verdict.rule);
	if (d->verdict.reason[0])
		fsb_audit_line_str(l, "reason", d->verdict.reason);
	if (d->block_id[0])
		fsb_audit_line_str(l, "blockId", d->block_id);
	if (errnum != 0)
		fsb_audit_line_str(l, "errno", fsb_errno_name(errnum));
}

static struct fsb_session *session_of(struct fsb_broker *b, const char *id);

struct fsb_session *fsb_broker_session(struct fsb_broker *b, const char *id)
{
	struct fsb_session *s;

	fsb_broker_lock(b);
	s = session_of(b, id);
	fsb_broker_unlock(b);
	return s;
}

static struct fsb_session *session_of(struct fsb_broker *b, const char *id)
{
	char path[PATH_MAX + 200];
	struct fsb_session *s;
	int rc;

	for (int i = 0; i < b->nsessions; i++)
		if (strcmp(b->sessions[i].id, id) == 0)
			return &b->sessions[i];
	if (!b->cfg.state_dir[0] || b->cfg.one_shot || !fsb_id_valid(id) ||
	    b->nsessions == FSB_MAX_SESSIONS)
		return NULL;
	s = &b->sessions[b->nsessions];
	memset(s, 0, sizeof(*s));
	snprintf(path, sizeof(path), "%s/audit/%s.jsonl", b->cfg.state_dir, id);
	if ((rc = fsb_audit_open(path, &s->audit)) < 0) {
		fsb_error("cannot open the audit log %s: %s", path, strerror(-rc));
		return NULL;
	}
	snprintf(s->id, sizeof(s->id), "%s", id);
	s->backup_enabled = true;
	pthread_mutex_init(&s->store_lock, NULL);
	b->nsessions++;
	return s;
}

int fsb_broker_audit_line(struct fsb_broker *b, const char *session, struct fsb_audit_line *l)
{
	struct fsb_session *s;
	int rc;

	fsb_broker_lock(b);
	s = session_of(b, session);
	rc = s != NULL ? fsb_audit_append(s->audit, l) : -EIO;
	fsb_broker_unlock(b);

	if (rc < 0)
		fsb_error("audit line for session %s not written: %s", session, strerror(-rc));
	fsb_audit_line_free(l);
	return rc;
}

int fsb_broker_audit(struct fsb_broker *b, const char *session, cJSON *rec)
{
	struct fsb_audit_line l;
	int rc = fsb_audit_line_of(&l, rec);

	cJSON_Delete(rec);
	if (rc < 0) {
		fsb_error("audit line for session %s not written: %s", session, strerror(-rc));
		fsb_audit_line_free(&l);
		return rc;
	}
	return fsb_broker_audit_line(b, session, &l);
}
