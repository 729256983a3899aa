/*
 * policy.c — the C side of the Lua boundary (DESIGN §4.1): load a pack
 * through lua/policy's loader, call engine:evaluate(req) once per request,
 * and turn whatever comes back into a verdict, failing closed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <lauxlib.h>

#include "log.h"
#include "lua_host.h"
#include "pack_tests.h"
#include "policy.h"

struct fsb_policy {
	struct fsb_lua *lua;
	struct fsb_backup_settings backup;
	bool delete_unlink;	/* delete.mode = "unlink" */
	bool has_hooks;		/* the pack has decide hooks */
	/* What a name is like when the pack may judge it unlike the other
	 * names of its directory ("=lit", "^lit", "$lit", "*lit": engine.lua,
	 * name_literals); plain_names false when it cannot say. */
	bool plain_names;
	char **name_needs;
	size_t nname_needs;
	int engine_ref;		/* the engine object */
	int evaluate_ref;	/* engine.evaluate */
	char *name;
	char **files;
	size_t nfiles;
};

const char *fsb_decision_name(enum fsb_decision d)
{
	switch (d) {
	case FSB_ALLOW:
		return "allow";
	case FSB_ASK:
		return "ask";
	default:
		return "deny";
	}
}

static void set_string(lua_State *L, const char *key, const char *value)
{
	if (value == NULL)
		return;
	lua_pushstring(L, value);
	lua_setfield(L, -2, key);
}

/* tests_cache.key(extra): the code digest of everything the state loaded
 * (policy modules and pack files), with `extra` (the variables). */
static int l_tests_key(lua_State *L)
{
	struct fsb_policy *p = lua_touserdata(L, lua_upvalueindex(1));
	size_t len;
	const char *extra = luaL_checklstring(L, 1, &len);
	char hex[65];

	if (fsb_lua_code_digest(p->lua, extra, len, hex) < 0)
		return luaL_error(L, "out of memory");
	lua_pushstring(L, hex);
	return 1;
}

/* tests_cache.passed(key) and tests_cache.record(key), in the state dir
 * (the upvalue). */
static int l_tests_passed(lua_State *L)
{
	const char *key = luaL_checkstring(L, 1);
	bool passed = fsb_pack_tests_passed(lua_tostring(L, lua_upvalueindex(1)), key);

	if (passed)
		fsb_log(FSB_LOG_DEBUG, "pack self-tests: passed before for this very code "
			"(%.12s…): not run again", key);
	lua_pushboolean(L, passed);
	return 1;
}

static int l_tests_record(lua_State *L)
{
	int rc = fsb_pack_tests_record(lua_tostring(L, lua_upvalueindex(1)),
				       luaL_checkstring(L, 1));

	if (rc < 0)
		fsb_log(FSB_LOG_DEBUG, "the pack's self-tests passed, but cannot be recorded: %s",
			strerror(-rc));
	return 0;
}

static void push_tests_cache(lua_State *L, struct fsb_policy *p, const char *state_dir)
{
	lua_createtable(L, 0, 3);
	lua_pushlightuserdata(L, p);
	lua_pushcclosure(L, l_tests_key, 1);
	lua_setfield(L, -2, "key");
	lua_pushstring(L, state_dir);
	lua_pushcclosure(L, l_tests_passed, 1);
	lua_setfield(L, -2, "passed");
	lua_pushstring(L, state_dir);
	lua_pushcclosure(L, l_tests_record, 1);
	lua_setfield(L, -2, "record");
}

/* Push the options table of policy.load(). */
static void push_load_opts(lua_State *L, struct fsb_policy *p, const struct fsb_policy_opts *o)
{
	lua_createtable(L, 0, 4);
	set_string(L, "pack", o->pack);
	set_string(L, "platform", "linux");
	lua_newtable(L);
	for (int i = 0; o->rules_dirs != NULL && o->rules_dirs[i] != NULL; i++) {
		lua_pushstring(L, o->rules_dirs[i]);
		lua_rawseti(L, -2, i + 1);
	}
	lua_setfield(L, -2, "rules_dirs");
	lua_createtable(L, 0, 4);
	set_string(L, "workspace", o->workspace);
	set_string(L, "home", o->home);
	set_string(L, "tmp", o->tmp);
	set_string(L, "state", o->state);
	lua_setfield(L, -2, "vars");
	if (o->cache_tests && o->state != NULL) {
		push_tests_cache(L, p, o->state);
		lua_setfield(L, -2, "tests_cache");
	}
}

/* Copy engine.name and engine.files out of the state. stack: engine */
static int read_pack_files(struct fsb_policy *p, lua_State *L)
{
	lua_Integer n;

	lua_getfield(L, -1, "name");
	p->name = strdup(lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "?");
	lua_pop(L, 1);
	lua_getfield(L, -1, "files");
	if (lua_type(L, -1) != LUA_TTABLE) {
		lua_pop(L, 1);
		return -EINVAL;
	}
	n = luaL_len(L, -1);
	p->files = calloc((size_t)n + 1, sizeof(*p->files));
	if (p->name == NULL || p->files == NULL) {
		lua_pop(L, 1);
		return -ENOMEM;
	}
	for (lua_Integer i = 1; i <= n; i++) {
		lua_rawgeti(L, -1, i);
		if (lua_type(L, -1) == LUA_TSTRING)
			p->files[p->nfiles++] = strdup(lua_tostring(L, -1));
		lua_pop(L, 1);
	}
	lua_pop(L, 1);
	return 0;
}

uint64_t fsb_clamp_backup_mb(double mb)
{
	if (!(mb >= 1))
		mb = 1;
	if (mb > 4096)
		mb = 4096;
	return (uint64_t)mb << 20;
}

uint64_t fsb_clamp_quota_mb(double mb)
{
	/* Below 1 MiB no backup would outlive its turn; the top only keeps
	 * the shift below from overflowing. */
	if (!(mb >= 1))
		mb = 1;
	if (mb > 16777216)
		mb = 16777216;
	return (uint64_t)mb << 20;
}

/* summary.name_literals (stack top) into p->name_needs; p->plain_names
 * only once all of them are held. Raises on a shape it does not know. */
static void read_name_needs(lua_State *L, struct fsb_policy *p)
{
	size_t n;

	if (lua_type(L, -1) != LUA_TTABLE)
		return;
	n = lua_rawlen(L, -1);
	if ((p->name_needs = calloc(n + 1, sizeof(*p->name_needs))) == NULL)
		return;
	for (size_t i = 0; i < n; i++) {
		const char *need;

		lua_rawgeti(L, -1, (lua_Integer)i + 1);
		need = lua_tostring(L, -1);
		if (need == NULL || strchr("=^$*", need[0]) == NULL || need[1] == '\0')
			luaL_error(L, "summary.name_literals[%d] is not a name's need", (int)i + 1);
		p->name_needs[i] = strdup(need);
		lua_pop(L, 1);
		if (p->name_needs[i] == NULL)
			return;
		p->nname_needs = i + 1;
	}
	p->plain_names = true;
}

/* Runs protected: engine:summary().backup into p->backup, its delete_mode,
 * whether it has decide hooks and what singles names out. stack: ctx */
static int l_read_settings(lua_State *L)
{
	struct fsb_policy *p = lua_touserdata(L, 1);
	const char *on;

	lua_rawgeti(L, LUA_REGISTRYINDEX, p->engine_ref);
	lua_getfield(L, -1, "summary");
	lua_insert(L, -2);
	lua_call(L, 1, 1);
	/* stack: ctx, summary */
	if (lua_type(L, -1) != LUA_TTABLE)
		return 0;
	lua_getfield(L, -1, "delete_mode");
	on = lua_tostring(L, -1);
	p->delete_unlink = on != NULL && strcmp(on, "unlink") == 0;
	lua_pop(L, 1);
	/* Unknown counts as hooks: no verdict is cached then. */
	lua_getfield(L, -1, "has_hooks");
	p->has_hooks = lua_type(L, -1) != LUA_TBOOLEAN || lua_toboolean(L, -1);
	lua_pop(L, 1);
	lua_getfield(L, -1, "name_literals");
	read_name_needs(L, p);
	lua_pop(L, 1);
	lua_getfield(L, -1, "backup");
	if (lua_type(L, -1) != LUA_TTABLE)
		return 0;
	lua_getfield(L, -1, "maxSizeMB");
	if (lua_type(L, -1) == LUA_TNUMBER)
		p->backup.max_bytes = fsb_clamp_backup_mb(lua_tonumber(L, -1));
	lua_pop(L, 1);
	lua_getfield(L, -1, "quotaMB");
	if (lua_type(L, -1) == LUA_TNUMBER)
		p->backup.quota_bytes = fsb_clamp_quota_mb(lua_tonumber(L, -1));
	lua_pop(L, 1);
	lua_getfield(L, -1, "onTooLarge");
	on = lua_tostring(L, -1);
	if (on != NULL && strcmp(on, "allow") == 0)
		p->backup.on_too_large = FSB_ON_TOO_LARGE_ALLOW;
	else if (on != NULL && strcmp(on, "deny") == 0)
		p->backup.on_too_large = FSB_ON_TOO_LARGE_DENY;
	lua_pop(L, 1);
	lua_getfield(L, -1, "durability");
	on = lua_tostring(L, -1);
	p->backup.batched = on != NULL && strcmp(on, "batched") == 0;
	return 0;
}

bool fsb_policy_has_hooks(const struct fsb_policy *p)
{
	return p->has_hooks;
}

/* Whether `name` is like `need` (see struct fsb_policy), ASCII letters in
 * either case. */
static bool is_like(const char *name, size_t len, const char *need)
{
	const char *lit = need + 1;
	size_t n = strlen(lit);

	switch (need[0]) {
	case '=':
		return len == n && strncasecmp(name, lit, n) == 0;
	case '^':
		return len >= n && strncasecmp(name, lit, n) == 0;
	case '$':
		return len >= n && strncasecmp(name + len - n, lit, n) == 0;
	default:
		return strcasestr(name, lit) != NULL;
	}
}

bool fsb_policy_name_is_plain(const struct fsb_policy *p, const char *name)
{
	size_t len = strlen(name);

	if (!p->plain_names || p->has_hooks || len == 0 || strcmp(name, ".") == 0 ||
	    strcmp(name, "..") == 0 || strchr(name, '/') != NULL)
		return false;
	for (size_t i = 0; i < p->nname_needs; i++)
		if (is_like(name, len, p->name_needs[i]))
			return false;
	return true;
}

bool fsb_policy_delete_trashes(const struct fsb_policy *p)
{
	return !p->delete_unlink;
}

const struct fsb_backup_settings *fsb_policy_backup(const struct fsb_policy *p)
{
	return &p->backup;
}

int fsb_policy_load(const struct fsb_policy_opts *opts, struct fsb_policy **out,
		    char *err, size_t errlen)
{
	struct fsb_policy *p;
	lua_State *L;

	p = calloc(1, sizeof(*p));
	if (p == NULL || fsb_lua_new(opts->luadir, opts->limits, &p->lua) < 0) {
		snprintf(err, errlen, "out of memory creating the Lua state");
		free(p);
		return -ENOMEM;
	}
	L = fsb_lua_state(p->lua);
	/* A core keeps what it compiled; `fsbroker check` parses every file. */
	if (opts->cache_tests && opts->state != NULL) {
		char dir[PATH_MAX];

		if ((size_t)snprintf(dir, sizeof(dir), "%s/lua-chunks", opts->state) < sizeof(dir))
			fsb_lua_keep_chunks(p->lua, dir);
	}

	/* engine, err = require("policy").load(opts), all in one protected call */
	lua_getglobal(L, "require");
	lua_pushstring(L, "policy");
	if (fsb_lua_pcall(p->lua, 1, 1, FSB_LUA_BUDGET_LOAD, err, errlen) < 0)
		goto fail;
	/* stack: policy */
	lua_getfield(L, -1, "load");
	lua_remove(L, -2);
	push_load_opts(L, p, opts);
	if (fsb_lua_pcall(p->lua, 1, 2, FSB_LUA_BUDGET_LOAD, err, errlen) < 0)
		goto fail;
	/* stack: engine|nil, err|nil */
	if (lua_type(L, -2) != LUA_TTABLE) {
		snprintf(err, errlen, "%s", lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1)
			 : "the pack loader returned no engine and no error");
		lua_pop(L, 2);
		goto fail;
	}
	lua_pop(L, 1);
	/* stack: engine */
	lua_getfield(L, -1, "evaluate");
	if (lua_type(L, -1) != LUA_TFUNCTION) {
		snprintf(err, errlen, "the policy engine has no evaluate()");
		lua_pop(L, 2);
		goto fail;
	}
	p->evaluate_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	if (read_pack_files(p, L) < 0) {
		snprintf(err, errlen, "the policy engine lists no pack files");
		lua_pop(L, 1);
		goto fail;
	}
	p->engine_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	p->backup.max_bytes = fsb_clamp_backup_mb(10);
	p->backup.on_too_large = FSB_ON_TOO_LARGE_ASK;
	p->backup.quota_bytes = fsb_clamp_quota_mb(5120);
	p->has_hooks = true;	/* until the summary says otherwise */
	lua_pushcfunction(L, l_read_settings);
	lua_pushlightuserdata(L, p);
	if (fsb_lua_pcall(p->lua, 1, 0, FSB_LUA_BUDGET_CALL, err, errlen) < 0)
		goto fail;
	*out = p;
	return 0;

fail:
	fsb_policy_free(p);
	return -EINVAL;
}

void fsb_policy_free(struct fsb_policy *p)
{
	if (p == NULL)
		return;
	fsb_lua_free(p->lua);
	for (size_t i = 0; i < p->nfiles; i++)
		free(p->files[i]);
	free(p->files);
	for (size_t i = 0; i < p->nname_needs; i++)
		free(p->name_needs[i]);
	free(p->name_needs);
	free(p->name);
	free(p);
}

const char *fsb_policy_name(const struct fsb_policy *p)
{
	return p->name;
}

size_t fsb_policy_nfiles(const struct fsb_policy *p)
{
	return p->nfiles;
}

const char *fsb_policy_file(const struct fsb_policy *p, size_t i)
{
	return i < p->nfiles ? p->files[i] : NULL;
}

size_t fsb_policy_memory(const struct fsb_policy *p)
{
	return fsb_lua_memory(p->lua);
}

static void push_request(lua_State *L, const struct fsb_policy_req *r)
{
	lua_createtable(L, 0, 12);
	set_string(L, "op", fsb_op_name(r->op));
	set_string(L, "path", r->path);
	set_string(L, "requested", r->requested);
	lua_pushboolean(L, r->exists);
	lua_setfield(L, -2, "exists");
	if (r->exists) {
		lua_pushinteger(L, (lua_Integer)r->dev);
		lua_setfield(L, -2, "dev");
		lua_pushinteger(L, (lua_Integer)r->ino);
		lua_setfield(L, -2, "ino");
		lua_pushinteger(L, (lua_Integer)r->nlink);
		lua_setfield(L, -2, "nlink");
		set_string(L, "type", fsb_file_type_name(r->mode));
	}
	set_string(L, "session", r->session);
	set_string(L, "toolCall", r->tool_call);
	if (r->peek) {
		lua_pushboolean(L, 1);
		lua_setfield(L, -2, "peek");
	}
	if (r->explain) {
		lua_pushboolean(L, 1);
		lua_setfield(L, -2, "explain");
	}
	lua_createtable(L, 0, 2);
	lua_pushinteger(L, r->pid);
	lua_setfield(L, -2, "pid");
	lua_pushinteger(L, r->uid);
	lua_setfield(L, -2, "uid");
	lua_setfield(L, -2, "client");
}

static void copy_field(lua_State *L, const char *key, char *dst, size_t len)
{
	lua_getfield(L, -1, key);
	if (lua_type(L, -1) == LUA_TSTRING)
		snprintf(dst, len, "%s", lua_tostring(L, -1));
	lua_pop(L, 1);
}

static void deny_with(struct fsb_verdict *v, const char *rule, const char *reason)
{
	v->decision = FSB_DENY;
	v->origin = FSB_BY_FAILURE;
	v->backup = false;
	snprintf(v->rule, sizeof(v->rule), "%s", rule);
	snprintf(v->reason, sizeof(v->reason), "%s", reason);
}

struct evaluate_call {
	struct fsb_policy *p;
	const struct fsb_policy_req *req;
	struct fsb_verdict *v;
	const char *malformed;	/* set when the verdict has the wrong shape */
};

/* The verdict's origin field (engine.lua's finish); one the core does not
 * know counts as a failure: never cached, never an approval. */
static enum fsb_verdict_origin origin_of(lua_State *L)
{
	enum fsb_verdict_origin o = FSB_BY_FAILURE;
	const char *s;

	lua_getfield(L, -1, "origin");
	s = lua_tostring(L, -1);
	if (s != NULL && strcmp(s, "rules") == 0)
		o = FSB_BY_RULES;
	else if (s != NULL && strcmp(s, "approval-once") == 0)
		o = FSB_BY_APPROVAL_ONCE;
	else if (s != NULL && strcmp(s, "approval-session") == 0)
		o = FSB_BY_APPROVAL_SESSION;
	lua_pop(L, 1);
	return o;
}

/* Runs inside fsb_lua_pcall: building the request and reading the verdict
 * allocate, and a pack at its memory cap must make them fail, not abort. */
static int l_evaluate(lua_State *L)
{
	struct evaluate_call *c = lua_touserdata(L, 1);
	struct fsb_verdict *v = c->v;
	const char *d;

	lua_rawgeti(L, LUA_REGISTRYINDEX, c->p->evaluate_ref);
	lua_rawgeti(L, LUA_REGISTRYINDEX, c->p->engine_ref);
	push_request(L, c->req);
	lua_call(L, 2, 1);
	/* stack: ctx, verdict */
	if (lua_type(L, -1) != LUA_TTABLE) {
		c->malformed = "evaluate() returned no verdict table";
		return 0;
	}
	lua_getfield(L, -1, "decision");
	d = lua_tostring(L, -1);
	if (d != NULL && strcmp(d, "allow") == 0)
		v->decision = FSB_ALLOW;
	else if (d != NULL && strcmp(d, "ask") == 0)
		v->decision = FSB_ASK;
	else if (d != NULL && strcmp(d, "deny") == 0)
		v->decision = FSB_DENY;
	else
		c->malformed = "the verdict's decision is not allow, ask or deny";
	lua_pop(L, 1);
	lua_getfield(L, -1, "backup");
	v->backup = lua_toboolean(L, -1);
	lua_pop(L, 1);
	copy_field(L, "rule", v->rule, sizeof(v->rule));
	copy_field(L, "reason", v->reason, sizeof(v->reason));
	copy_field(L, "hint", v->hint, sizeof(v->hint));
	v->origin = origin_of(L);
	return 0;
}

void fsb_policy_evaluate(struct fsb_policy *p, const struct fsb_policy_req *req,
			 struct fsb_verdict *v)
{
	struct evaluate_call c = { .p = p, .req = req, .v = v };
	lua_State *L = fsb_lua_state(p->lua);
	char err[512];

	memset(v, 0, sizeof(*v));
	lua_pushcfunction(L, l_evaluate);
	lua_pushlightuserdata(L, &c);
	if (fsb_lua_pcall(p->lua, 1, 0, FSB_LUA_BUDGET_CALL, err, sizeof(err)) < 0) {
		/* Keep the first line: the traceback is for the log. */
		char *nl = strchr(err, '\n');

		fsb_log_limited(FSB_LOG_WARN, "policy error on %s %s: %s", fsb_op_name(req->op),
				req->path, err);
		if (nl != NULL)
			*nl = '\0';
		deny_with(v, "policy error", err);
		return;
	}
	if (c.malformed != NULL) {
		deny_with(v, "policy error", c.malformed);
		return;
	}
	if (v->rule[0] == '\0')
		snprintf(v->rule, sizeof(v->rule), "(unnamed rule)");
}

/* Call engine:<method>(args...) with the arguments on the stack top
 * (popped). Called only from inside a protected call. */
static void call_method(lua_State *L, int engine_ref, const char *method, int nargs, int nres)
{
	lua_rawgeti(L, LUA_REGISTRYINDEX, engine_ref);
	lua_getfield(L, -1, method);
	lua_insert(L, -2);
	/* stack: args..., method, engine */
	lua_rotate(L, -(nargs + 2), 2);
	/* stack: method, engine, args... */
	lua_call(L, nargs + 1, nres);
}

struct approve_call {
	struct fsb_policy *p;
	enum fsb_op op;
	const char *path, *scope, *session;
	bool exists;
	dev_t dev;
	ino_t ino;
	bool ok;
};

static int l_approve(lua_State *L)
{
	struct approve_call *c = lua_touserdata(L, 1);

	lua_createtable(L, 0, 6);
	set_string(L, "op", fsb_op_name(c->op));
	set_string(L, "path", c->path);
	set_string(L, "scope", c->scope);
	if (c->session != NULL && c->session[0] != '\0')
		set_string(L, "session", c->session);
	if (c->exists) {
		lua_pushinteger(L, (lua_Integer)c->dev);
		lua_setfield(L, -2, "dev");
		lua_pushinteger(L, (lua_Integer)c->ino);
		lua_setfield(L, -2, "ino");
	}
	call_method(L, c->p->engine_ref, "approve", 1, 1);
	c->ok = lua_toboolean(L, -1);
	return 0;
}

int fsb_policy_approve(struct fsb_policy *p, enum fsb_op op, const char *path,
		       bool exists, dev_t dev, ino_t ino, const char *scope,
		       const char *session)
{
	struct approve_call c = {
		.p = p, .op = op, .path = path, .scope = scope, .session = session,
		.exists = exists, .dev = dev, .ino = ino,
	};
	lua_State *L = fsb_lua_state(p->lua);
	char err[512];

	if (strcmp(scope, "once") != 0 && strcmp(scope, "session") != 0)
		return -EINVAL;
	lua_pushcfunction(L, l_approve);
	lua_pushlightuserdata(L, &c);
	if (fsb_lua_pcall(p->lua, 1, 0, FSB_LUA_BUDGET_CALL, err, sizeof(err)) < 0) {
		fsb_warn("policy engine approve() failed: %s", err);
		return -EINVAL;
	}
	return c.ok ? 0 : -EINVAL;
}

/* Copy the scalar fields of the table on top of `from` into a new table on
 * top of `to`. Approvals are plain data; anything else is dropped. */
static void copy_flat_table(lua_State *from, lua_State *to)
{
	lua_newtable(to);
	lua_pushnil(from);
	while (lua_next(from, -2) != 0) {
		/* from stack: table, key, value */
		if (lua_type(from, -2) == LUA_TSTRING) {
			switch (lua_type(from, -1)) {
			case LUA_TSTRING:
				lua_pushstring(to, lua_tostring(from, -1));
				break;
			case LUA_TNUMBER:
				if (lua_isinteger(from, -1))
					lua_pushinteger(to, lua_tointeger(from, -1));
				else
					lua_pushnumber(to, lua_tonumber(from, -1));
				break;
			case LUA_TBOOLEAN:
				lua_pushboolean(to, lua_toboolean(from, -1));
				break;
			default:
				lua_pop(from, 1);
				continue;
			}
			lua_setfield(to, -2, lua_tostring(from, -2));
		}
		lua_pop(from, 1);
	}
}

struct move_call {
	struct fsb_policy *from, *to;
};

/* In `from`'s state: leave engine:approvals() on the stack. */
static int l_list_approvals(lua_State *L)
{
	struct move_call *c = lua_touserdata(L, 1);

	call_method(L, c->from->engine_ref, "approvals", 0, 1);
	if (lua_type(L, -1) != LUA_TTABLE)
		return luaL_error(L, "approvals() returned no list");
	return 1;
}

/* In `to`'s state: copy the list left on `from`'s stack and restore it.
 * Reading `from` only pushes values already there: it allocates nothing. */
static int l_restore_approvals(lua_State *L)
{
	struct move_call *c = lua_touserdata(L, 1);
	lua_State *F = fsb_lua_state(c->from->lua);
	lua_Integer n = (lua_Integer)lua_rawlen(F, -1);

	lua_createtable(L, (int)n, 0);
	for (lua_Integer i = 1; i <= n; i++) {
		lua_rawgeti(F, -1, i);
		if (lua_type(F, -1) == LUA_TTABLE) {
			copy_flat_table(F, L);
			lua_rawseti(L, -2, i);
		}
		lua_pop(F, 1);
	}
	call_method(L, c->to->engine_ref, "restore_approvals", 1, 0);
	return 0;
}

int fsb_policy_move_approvals(struct fsb_policy *from, struct fsb_policy *to)
{
	struct move_call c = { .from = from, .to = to };
	lua_State *F = fsb_lua_state(from->lua), *T = fsb_lua_state(to->lua);
	char err[512];
	int rc = 0;

	lua_pushcfunction(F, l_list_approvals);
	lua_pushlightuserdata(F, &c);
	if (fsb_lua_pcall(from->lua, 1, 1, FSB_LUA_BUDGET_CALL, err, sizeof(err)) < 0) {
		fsb_warn("cannot read the approvals of the previous pack: %s", err);
		return -1;
	}
	/* F stack: list */
	lua_pushcfunction(T, l_restore_approvals);
	lua_pushlightuserdata(T, &c);
	if (fsb_lua_pcall(to->lua, 1, 0, FSB_LUA_BUDGET_CALL, err, sizeof(err)) < 0) {
		fsb_warn("the new pack refused the approvals: %s", err);
		rc = -1;
	}
	lua_pop(F, 1);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* What the mount plan needs: engine:summary() and engine:denied_read(). */

static char *dup_field(lua_State *L, int idx, const char *key)
{
	char *s = NULL;

	lua_getfield(L, idx, key);
	if (lua_type(L, -1) == LUA_TSTRING)
		s = strdup(lua_tostring(L, -1));
	lua_pop(L, 1);
	return s;
}

/* Fill `l` from summary.bases[name] and summary.rules[name]; entries are
 * stored as they are read, so a Lua error half-way leaves nothing to leak
 * that fsb_policy_summary_free() does not find. stack: summary */
static int read_glob_list(lua_State *L, const char *name, struct fsb_glob_list *l)
{
	lua_Integer n;

	lua_getfield(L, -1, "bases");
	lua_getfield(L, -2, "rules");
	/* stack: summary, bases, rules */
	if (lua_type(L, -2) != LUA_TTABLE || lua_type(L, -1) != LUA_TTABLE)
		return luaL_error(L, "engine:summary() has no bases or rules");
	lua_getfield(L, -2, name);
	lua_getfield(L, -2, name);
	/* stack: summary, bases, rules, bases[name], rules[name] */
	if (lua_type(L, -2) != LUA_TTABLE || lua_type(L, -1) != LUA_TTABLE)
		return luaL_error(L, "engine:summary() has no list %s", name);
	n = (lua_Integer)lua_rawlen(L, -2);
	l->v = calloc((size_t)n + 1, sizeof(*l->v));
	if (l->v == NULL)
		return luaL_error(L, "out of memory");
	for (lua_Integer i = 1; i <= n; i++) {
		struct fsb_glob_entry *e = &l->v[l->n++];
		const char *kind;

		lua_rawgeti(L, -2, i);
		lua_rawgeti(L, -2, i);
		/* stack: ..., bases[name], rules[name], entry, rule */
		if (lua_type(L, -2) != LUA_TTABLE || lua_type(L, -1) != LUA_TSTRING)
			return luaL_error(L, "engine:summary() %s[%d] is malformed", name, (int)i);
		e->rule = strdup(lua_tostring(L, -1));
		e->glob = dup_field(L, -2, "glob");
		e->base = dup_field(L, -2, "base");
		lua_getfield(L, -2, "kind");
		kind = lua_tostring(L, -1);
		if (kind != NULL && strcmp(kind, "exact") == 0)
			e->kind = FSB_GLOB_EXACT;
		else if (kind != NULL && strcmp(kind, "tree") == 0)
			e->kind = FSB_GLOB_TREE;
		else
			e->kind = FSB_GLOB_PATTERN;
		lua_getfield(L, -3, "except");
		e->except = lua_toboolean(L, -1);
		lua_pop(L, 4);
		if (e->rule == NULL || e->glob == NULL || e->base == NULL)
			return luaL_error(L, "out of memory");
	}
	lua_pop(L, 4);
	return 0;
}

struct summary_call {
	struct fsb_policy *p;
	struct fsb_policy_summary *s;
};

static int l_summary(lua_State *L)
{
	struct summary_call *c = lua_touserdata(L, 1);
	const char *reads, *network;

	call_method(L, c->p->engine_ref, "summary", 0, 1);
	if (lua_type(L, -1) != LUA_TTABLE)
		return luaL_error(L, "engine:summary() returned no table");
	/* stack: ctx, summary */
	read_glob_list(L, "read", &c->s->read);
	read_glob_list(L, "modify", &c->s->modify);
	read_glob_list(L, "denyRead", &c->s->deny_read);
	read_glob_list(L, "denyModify", &c->s->deny_modify);
	read_glob_list(L, "ask", &c->s->ask);
	read_glob_list(L, "ask_read", &c->s->ask_read);
	lua_getfield(L, -1, "reads");
	reads = lua_tostring(L, -1);
	c->s->reads = reads != NULL && strcmp(reads, "broker") == 0 ? FSB_READS_BROKER : FSB_READS_MASK;
	lua_pop(L, 1);
	/* pack.lua has checked it; anything else here is a bug, and a run on
	 * the host's network for it would not fail closed. */
	lua_getfield(L, -1, "network");
	network = lua_tostring(L, -1);
	if (network != NULL && strcmp(network, "none") == 0)
		c->s->network = FSB_NETWORK_NONE;
	else if (network != NULL && strcmp(network, "host") == 0)
		c->s->network = FSB_NETWORK_HOST;
	else
		return luaL_error(L, "the pack's network setting is neither \"host\" nor \"none\"");
	lua_pop(L, 1);
	/* stack: ctx, summary */
	lua_getfield(L, -1, "env_pass");
	if (lua_type(L, -1) == LUA_TTABLE) {
		size_t n = lua_rawlen(L, -1);

		c->s->env_pass = calloc(n + 1, sizeof(*c->s->env_pass));
		if (c->s->env_pass == NULL)
			return luaL_error(L, "out of memory");
		for (size_t i = 1; i <= n; i++) {
			lua_rawgeti(L, -1, (lua_Integer)i);
			if (lua_type(L, -1) == LUA_TSTRING &&
			    (c->s->env_pass[c->s->nenv_pass] = strdup(lua_tostring(L, -1))) != NULL)
				c->s->nenv_pass++;
			lua_pop(L, 1);
		}
	}
	return 0;
}

int fsb_policy_summary(struct fsb_policy *p, struct fsb_policy_summary *out,
		       char *err, size_t errlen)
{
	struct summary_call c = { .p = p, .s = out };
	lua_State *L = fsb_lua_state(p->lua);

	memset(out, 0, sizeof(*out));
	lua_pushcfunction(L, l_summary);
	lua_pushlightuserdata(L, &c);
	if (fsb_lua_pcall(p->lua, 1, 0, FSB_LUA_BUDGET_CALL, err, errlen) < 0)
		return strstr(err, "out of memory") != NULL ? -ENOMEM : -EINVAL;
	return 0;
}

static void free_glob_list(struct fsb_glob_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].glob);
		free(l->v[i].rule);
		free(l->v[i].base);
	}
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

void fsb_policy_summary_free(struct fsb_policy_summary *s)
{
	if (s == NULL)
		return;
	free_glob_list(&s->read);
	free_glob_list(&s->modify);
	free_glob_list(&s->deny_read);
	free_glob_list(&s->deny_modify);
	free_glob_list(&s->ask);
	free_glob_list(&s->ask_read);
	for (size_t i = 0; i < s->nenv_pass; i++)
		free(s->env_pass[i]);
	free(s->env_pass);
	s->env_pass = NULL;
	s->nenv_pass = 0;
}

struct denied_call {
	struct fsb_policy *p;
	const char *path;
	char *rule;
	size_t len;
	int denied;
};

static int l_denied_read(lua_State *L)
{
	struct denied_call *c = lua_touserdata(L, 1);

	lua_pushstring(L, c->path);
	call_method(L, c->p->engine_ref, "denied_read", 1, 1);
	if (lua_type(L, -1) == LUA_TSTRING) {
		snprintf(c->rule, c->len, "%s", lua_tostring(L, -1));
		c->denied = 1;
	}
	return 0;
}

int fsb_policy_denied_read(struct fsb_policy *p, const char *path, char *rule, size_t len)
{
	struct denied_call c = { .p = p, .path = path, .rule = rule, .len = len };
	lua_State *L = fsb_lua_state(p->lua);
	char err[512];

	if (len > 0)
		rule[0] = '\0';
	lua_pushcfunction(L, l_denied_read);
	lua_pushlightuserdata(L, &c);
	if (fsb_lua_pcall(p->lua, 1, 0, FSB_LUA_BUDGET_CALL, err, sizeof(err)) < 0) {
		fsb_log_limited(FSB_LOG_WARN, "policy error in denied_read(%s): %s", path, err);
		return -EINVAL;
	}
	return c.denied;
}
