/*
 * lua_host.c — the sandboxed Lua state every pack runs in (DESIGN §4.4).
 *
 * The caps follow Suricata's util-lua-sandbox.c and Redis' script_lua.c: a
 * counting allocator refuses to grow past the memory cap, and an instruction
 * hook raises an error once the budget is spent and then fires on every
 * instruction, so a pcall inside the pack cannot swallow the kill.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lualib.h>
#include <openssl/evp.h>

#include "log.h"
#include "lua_host.h"
#include "lua_chunk_cache.h"

/* lpeg is linked in (Debian's liblua5.4-lpeg) and preloaded by require. */
int luaopen_lpeg(lua_State *L);

#define HOOK_STEP 10000

const struct fsb_lua_limits fsb_lua_default_limits = {
	.mem_bytes = 64u << 20,
	.load_instructions = 200000000ul,
	.call_instructions = 10000000ul,
};

enum limit_hit { LIMIT_NONE, LIMIT_MEMORY, LIMIT_INSTRUCTIONS };

struct fsb_lua {
	lua_State *L;
	struct fsb_lua_limits limits;
	size_t used;
	unsigned long budget;
	enum limit_hit hit;
	char luadir[PATH_MAX];
	EVP_MD_CTX *code;	/* SHA-256 of every file loaded, in order */
	char chunk_dir[PATH_MAX];	/* compiled chunks kept here; "" for none */
};

static void *counting_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
	struct fsb_lua *lua = ud;
	void *p;

	/* For a new block Lua passes the object type in osize, not a size. */
	if (ptr == NULL)
		osize = 0;
	if (nsize == 0) {
		free(ptr);
		lua->used -= osize;
		return NULL;
	}
	if (nsize > osize && lua->used - osize + nsize > lua->limits.mem_bytes) {
		lua->hit = LIMIT_MEMORY;
		return NULL;
	}
	p = realloc(ptr, nsize);
	if (p == NULL)
		return NULL;
	lua->used = lua->used - osize + nsize;
	return p;
}

static struct fsb_lua *host_of(lua_State *L)
{
	void *ud;

	lua_getallocf(L, &ud);
	return ud;
}

static void instruction_hook(lua_State *L, lua_Debug *ar)
{
	struct fsb_lua *lua = host_of(L);

	(void)ar;
	if (lua->budget > HOOK_STEP) {
		lua->budget -= HOOK_STEP;
		return;
	}
	lua->budget = 0;
	lua->hit = LIMIT_INSTRUCTIONS;
	/* Fire on every instruction from now on: a pcall in the pack that caught
	 * this error gets the next one at once. */
	lua_sethook(L, instruction_hook, LUA_MASKCOUNT, 1);
	luaL_error(L, "instruction limit exceeded");
}

static int msghandler(lua_State *L)
{
	const char *msg = lua_tostring(L, 1);

	if (msg == NULL) {
		if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
			return 1;
		msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
	}
	luaL_traceback(L, L, msg, 1);
	return 1;
}

int fsb_lua_pcall(struct fsb_lua *lua, int nargs, int nresults,
		  enum fsb_lua_budget budget, char *err, size_t errlen)
{
	lua_State *L = lua->L;
	int base = lua_gettop(L) - nargs;	/* the function's slot */
	const char *msg;
	int rc;

	lua->hit = LIMIT_NONE;
	lua->budget = budget == FSB_LUA_BUDGET_LOAD ? lua->limits.load_instructions
						    : lua->limits.call_instructions;
	lua_sethook(L, instruction_hook, LUA_MASKCOUNT, HOOK_STEP);
	lua_pushcfunction(L, msghandler);
	lua_insert(L, base);
	rc = lua_pcall(L, nargs, nresults, base);
	lua_remove(L, base);
	lua_sethook(L, NULL, 0, 0);
	if (rc == LUA_OK)
		return 0;

	/* stack: error message */
	msg = lua_tostring(L, -1);
	if (err != NULL && errlen > 0) {
		if (lua->hit == LIMIT_INSTRUCTIONS)
			snprintf(err, errlen, "instruction limit exceeded (%lu instructions)",
				 budget == FSB_LUA_BUDGET_LOAD ? lua->limits.load_instructions
							       : lua->limits.call_instructions);
		else if (lua->hit == LIMIT_MEMORY || rc == LUA_ERRMEM)
			snprintf(err, errlen, "memory limit exceeded (%zu MiB)",
				 lua->limits.mem_bytes >> 20);
		else
			snprintf(err, errlen, "%s", msg != NULL ? msg : "unknown Lua error");
	}
	lua_pop(L, 1);
	/* A spent state may still hold the garbage of the failed call. */
	lua_gc(L, LUA_GCCOLLECT);
	return -1;
}

/* load(chunk [, chunkname [, mode [, env]]]) restricted to text chunks. */
static int l_load_text(lua_State *L)
{
	size_t len;
	const char *s = luaL_checklstring(L, 1, &len);
	const char *name = luaL_optstring(L, 2, s);
	int env = !lua_isnone(L, 4) ? 4 : 0;

	if (luaL_loadbufferx(L, s, len, name, "t") != LUA_OK) {
		luaL_pushfail(L);
		lua_insert(L, -2);
		return 2;
	}
	if (env != 0) {
		lua_pushvalue(L, env);
		if (!lua_setupvalue(L, -2, 1))
			lua_pop(L, 1);
	}
	return 1;
}

/* A chunk file is a pack or a module: far below this. */
#define MAX_CHUNK_FILE (16u << 20)

/*
 * Load the text chunk in file `path` as luaL_loadfilex() would (a UTF-8
 * byte order mark and a first line starting with '#' skipped), reading it
 * whole first so that what is hashed into the state's code digest is
 * exactly what is compiled. LUA_ERRFILE when it cannot be read.
 */
static int load_text_file(struct fsb_lua *lua, lua_State *L, const char *path)
{
	char *text = NULL, *start;
	struct stat st;
	size_t len = 0, skip = 0;
	uint64_t n;
	int fd, status;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size > MAX_CHUNK_FILE) {
		int err = fd < 0 ? errno : S_ISREG(st.st_mode) ? EFBIG : EINVAL;

		if (fd >= 0)
			close(fd);
		lua_pushfstring(L, "cannot open %s: %s", path, strerror(err));
		return LUA_ERRFILE;
	}
	text = malloc((size_t)st.st_size + 1);
	while (text != NULL && len < (size_t)st.st_size) {
		ssize_t got = read(fd, text + len, (size_t)st.st_size - len);

		if (got <= 0)
			break;
		len += (size_t)got;
	}
	close(fd);
	if (text == NULL || len != (size_t)st.st_size) {
		free(text);
		lua_pushfstring(L, "cannot read %s", path);
		return LUA_ERRFILE;
	}
	/* The digest: the path, the length, the bytes; in load order. */
	n = len;
	EVP_DigestUpdate(lua->code, path, strlen(path) + 1);
	EVP_DigestUpdate(lua->code, &n, sizeof(n));
	EVP_DigestUpdate(lua->code, text, len);
	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
		skip = 3;
	start = text + skip;
	/* A '#' line goes, its newline stays: line numbers are the file's. */
	if (skip < len && *start == '#')
		while (skip < len && text[skip] != '\n')
			skip++;
	lua_pushfstring(L, "@%s", path);
	if (lua->chunk_dir[0] &&
	    fsb_chunk_cache_load(L, lua->chunk_dir, path, text, len, lua_tostring(L, -1))) {
		status = LUA_OK;
	} else {
		status = luaL_loadbufferx(L, text + skip, len - skip, lua_tostring(L, -1), "t");
		if (status == LUA_OK && lua->chunk_dir[0])
			fsb_chunk_cache_store(L, lua->chunk_dir, path, text, len);
	}
	lua_remove(L, -2);
	free(text);
	return status;
}

/* loadfile(path [, mode [, env]]) restricted to text chunks. */
static int l_loadfile_text(lua_State *L)
{
	const char *path = luaL_checkstring(L, 1);
	int env = !lua_isnone(L, 3) ? 3 : 0;

	if (load_text_file(host_of(L), L, path) != LUA_OK) {
		luaL_pushfail(L);
		lua_insert(L, -2);
		return 2;
	}
	if (env != 0) {
		lua_pushvalue(L, env);
		if (!lua_setupvalue(L, -2, 1))
			lua_pop(L, 1);
	}
	return 1;
}

static int l_print(lua_State *L)
{
	luaL_Buffer b;
	int n = lua_gettop(L);

	luaL_buffinit(L, &b);
	for (int i = 1; i <= n; i++) {
		if (i > 1)
			luaL_addchar(&b, '\t');
		luaL_tolstring(L, i, NULL);
		luaL_addvalue(&b);
	}
	luaL_pushresult(&b);
	fsb_info("pack: %s", lua_tostring(L, -1));
	return 0;
}

static bool module_name_ok(const char *name)
{
	if (*name == '\0' || *name == '.')
		return false;
	for (const char *p = name; *p; p++) {
		if (!(*p == '.' || *p == '_' || *p == '-' || (*p >= '0' && *p <= '9') ||
		      (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
			return false;
		if (p[0] == '.' && p[1] == '.')
			return false;
	}
	return true;
}

/* require(name): the policy modules from luadir (text only) and lpeg. */
static int l_require(lua_State *L)
{
	struct fsb_lua *lua = host_of(L);
	const char *name = luaL_checkstring(L, 1);
	char rel[PATH_MAX], path[PATH_MAX];
	const char *suffixes[] = { ".lua", "/init.lua" };
	int status = LUA_ERRFILE;

	lua_settop(L, 1);
	luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
	/* stack: name, loaded */
	lua_getfield(L, 2, name);
	if (lua_toboolean(L, -1))
		return 1;
	lua_pop(L, 1);

	if (strcmp(name, "lpeg") == 0) {
		lua_pushcfunction(L, luaopen_lpeg);
		status = LUA_OK;
	} else {
		if (!module_name_ok(name) || strlen(name) >= sizeof(rel))
			return luaL_error(L, "expected 'require(string module)' with a "
					  "module name of letters, digits, '_' and '.', got '%s'", name);
		strcpy(rel, name);
		for (char *p = rel; *p; p++)
			if (*p == '.')
				*p = '/';
		for (unsigned i = 0; i < 2 && status == LUA_ERRFILE; i++) {
			if (snprintf(path, sizeof(path), "%s/%s%s", lua->luadir, rel,
				     suffixes[i]) >= (int)sizeof(path))
				return luaL_error(L, "module '%s': path too long", name);
			status = load_text_file(lua, L, path);
			if (status == LUA_ERRFILE)
				lua_pop(L, 1);
		}
		if (status == LUA_ERRFILE)
			return luaL_error(L, "module '%s' not found in %s", name, lua->luadir);
		if (status != LUA_OK)
			return lua_error(L);
	}
	/* stack: name, loaded, loader */
	lua_pushstring(L, name);
	lua_call(L, 1, 1);
	if (lua_isnil(L, -1)) {
		lua_pop(L, 1);
		lua_pushboolean(L, 1);
	}
	lua_pushvalue(L, -1);
	lua_setfield(L, 2, name);
	return 1;
}

static int l_undefined_global(lua_State *L)
{
	return luaL_error(L, "undefined global '%s'", lua_tostring(L, 2));
}

static int l_assign_global(lua_State *L)
{
	return luaL_error(L, "assignment to undefined global '%s' (declare it local)",
			  lua_tostring(L, 2));
}

static int open_restricted(lua_State *L)
{
	static const luaL_Reg libs[] = {
		{ LUA_GNAME, luaopen_base },
		{ LUA_STRLIBNAME, luaopen_string },
		{ LUA_TABLIBNAME, luaopen_table },
		{ LUA_MATHLIBNAME, luaopen_math },
		{ LUA_UTF8LIBNAME, luaopen_utf8 },
		{ LUA_COLIBNAME, luaopen_coroutine },
		{ NULL, NULL },
	};
	static const char *const removed[] = { "dofile", "collectgarbage", NULL };

	for (const luaL_Reg *lib = libs; lib->func; lib++) {
		luaL_requiref(L, lib->name, lib->func, 1);
		lua_pop(L, 1);
	}
	lua_pushglobaltable(L);
	/* stack: _G */
	for (int i = 0; removed[i]; i++) {
		lua_pushnil(L);
		lua_setfield(L, -2, removed[i]);
	}
	lua_pushcfunction(L, l_load_text);
	lua_setfield(L, -2, "load");
	lua_pushcfunction(L, l_loadfile_text);
	lua_setfield(L, -2, "loadfile");
	lua_pushcfunction(L, l_print);
	lua_setfield(L, -2, "print");
	lua_pushcfunction(L, l_require);
	lua_setfield(L, -2, "require");

	/* os: only the clocks. The full library is opened by hand and never
	 * registered as a module, so no require can reach it. */
	lua_pushcfunction(L, luaopen_os);
	lua_call(L, 0, 1);
	lua_createtable(L, 0, 2);
	lua_getfield(L, -2, "time");
	lua_setfield(L, -2, "time");
	lua_getfield(L, -2, "clock");
	lua_setfield(L, -2, "clock");
	lua_setfield(L, -3, "os");
	lua_pop(L, 1);

	/* Undefined globals are errors (Redis' script_lua.c does the same). */
	lua_createtable(L, 0, 2);
	lua_pushcfunction(L, l_undefined_global);
	lua_setfield(L, -2, "__index");
	lua_pushcfunction(L, l_assign_global);
	lua_setfield(L, -2, "__newindex");
	lua_setmetatable(L, -2);
	lua_pop(L, 1);
	return 0;
}

static int l_panic(lua_State *L)
{
	fsb_error("Lua error outside a protected call: %s", lua_tostring(L, -1));
	abort();
	return 0;
}

int fsb_lua_new(const char *luadir, const struct fsb_lua_limits *limits,
		struct fsb_lua **out)
{
	struct fsb_lua *lua;
	char err[256];

	lua = calloc(1, sizeof(*lua));
	if (lua == NULL)
		return -ENOMEM;
	lua->limits = limits != NULL ? *limits : fsb_lua_default_limits;
	snprintf(lua->luadir, sizeof(lua->luadir), "%s", luadir);
	lua->code = EVP_MD_CTX_new();
	if (lua->code == NULL || !EVP_DigestInit_ex(lua->code, EVP_sha256(), NULL)) {
		EVP_MD_CTX_free(lua->code);
		free(lua);
		return -ENOMEM;
	}
	lua->L = lua_newstate(counting_alloc, lua);
	if (lua->L == NULL) {
		EVP_MD_CTX_free(lua->code);
		free(lua);
		return -ENOMEM;
	}
	/* Every call goes through fsb_lua_pcall; reaching the panic handler
	 * means a bug in the core, and there is nothing safe left to do. */
	lua_atpanic(lua->L, l_panic);
	lua_pushcfunction(lua->L, open_restricted);
	if (fsb_lua_pcall(lua, 0, 0, FSB_LUA_BUDGET_LOAD, err, sizeof(err)) < 0) {
		fsb_error("cannot set up the Lua state: %s", err);
		fsb_lua_free(lua);
		return -ENOMEM;
	}
	*out = lua;
	return 0;
}

void fsb_lua_keep_chunks(struct fsb_lua *lua, const char *dir)
{
	snprintf(lua->chunk_dir, sizeof(lua->chunk_dir), "%s", dir != NULL ? dir : "");
}

void fsb_lua_free(struct fsb_lua *lua)
{
	if (lua == NULL)
		return;
	lua_close(lua->L);
	EVP_MD_CTX_free(lua->code);
	free(lua);
}

int fsb_lua_code_digest(struct fsb_lua *lua, const void *extra, size_t len,
			char out[65])
{
	static const char digits[] = "0123456789abcdef";
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	int ok;

	ok = c != NULL && EVP_MD_CTX_copy_ex(c, lua->code) && EVP_DigestUpdate(c, extra, len) &&
	     EVP_DigestFinal_ex(c, md, &mdlen) && mdlen == 32;
	EVP_MD_CTX_free(c);
	if (!ok)
		return -ENOMEM;
	for (unsigned i = 0; i < 32; i++) {
		out[2 * i] = digits[md[i] >> 4];
		out[2 * i + 1] = digits[md[i] & 0xf];
	}
	out[64] = '\0';
	return 0;
}

lua_State *fsb_lua_state(struct fsb_lua *lua)
{
	return lua->L;
}

size_t fsb_lua_memory(const struct fsb_lua *lua)
{
	return lua->used;
}
