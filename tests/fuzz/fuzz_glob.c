/*
 * fuzz_glob.c — fuzz harness of the glob compiler of rule packs
 * (lua/policy/glob.lua) in the core's own sandboxed Lua state
 * (core/lua_host.c, with its memory and instruction caps): arbitrary bytes
 * are compiled as a glob, with and without `nocase`, and the pattern is
 * matched against a few fixed paths, the glob's own text and a path taken
 * from the input. Input: the glob up to the first newline, the path after
 * it; an odd-sized input asks for `nocase`. A Lua error (a refused
 * glob, a cap reached) is an answer; a crash or a match that never ends
 * (libFuzzer's -timeout) is a bug.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "fuzz.h"
#include "lua_host.h"

#ifndef LUADIR
#define LUADIR "lua"
#endif

static struct fsb_lua *lua;
static int check_ref = LUA_NOREF;

/* Returns function(text, nocase, path): compile, match, expand. */
static const char check_chunk[] =
	"local glob = require('policy.glob')\n"
	"local lpeg = require('lpeg')\n"
	"local vars = { workspace = '/w', home = '/home/u', tmp = '/tmp', state = '/s' }\n"
	"local paths = { '/', '/w', '/w/', '/w/a/b.txt', '/w/.git/config', '/home/u/.ssh/id_rsa',\n"
	"  '/tmp/x', '/W/A/B.TXT', '/w/a/\\195\\169t\\195\\169', '/w/\\255\\254/x', '/s/a//b' }\n"
	"return function(text, nocase, path)\n"
	"  local g, err = glob.compile(text, vars, { nocase = nocase })\n"
	"  if g == nil then\n"
	"    assert(type(err) == 'string', 'a refused glob has a sentence')\n"
	"  else\n"
	"    assert(type(g.expanded) == 'table' and #g.expanded >= 1)\n"
	"    for i = 1, #paths do lpeg.match(g.pattern, paths[i]) end\n"
	"    lpeg.match(g.pattern, text)\n"
	"    lpeg.match(g.pattern, path)\n"
	"    for i = 1, #g.expanded do\n"
	"      -- A summary glob compiles again.\n"
	"      glob.compile(g.expanded[i], vars, { nocase = nocase })\n"
	"    end\n"
	"  end\n"
	"  glob.expand_path(text, vars)\n"
	"end\n";

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *dir = getenv("FSBROKER_LUA_DIR");
	char err[1024];
	lua_State *L;

	(void)argc;
	(void)argv;
	if (fsb_lua_new(dir != NULL && dir[0] ? dir : LUADIR, NULL, &lua) < 0) {
		fprintf(stderr, "fuzz_glob: cannot create the Lua state\n");
		abort();
	}
	L = fsb_lua_state(lua);
	if (luaL_loadbufferx(L, check_chunk, sizeof(check_chunk) - 1, "=fuzz_glob", "t") != LUA_OK ||
	    fsb_lua_pcall(lua, 0, 1, FSB_LUA_BUDGET_LOAD, err, sizeof(err)) < 0) {
		fprintf(stderr, "fuzz_glob: cannot load policy.glob: %s\n",
			lua_isstring(L, -1) ? lua_tostring(L, -1) : err);
		abort();
	}
	check_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	lua_State *L = fsb_lua_state(lua);
	const uint8_t *nl;
	size_t glen;
	char err[256];
	int nocase = (int)(size & 1);

	nl = memchr(data, '\n', size);
	glen = nl != NULL ? (size_t)(nl - data) : size;
	lua_rawgeti(L, LUA_REGISTRYINDEX, check_ref);
	lua_pushlstring(L, (const char *)data, glen);
	lua_pushboolean(L, nocase);
	if (nl != NULL)
		lua_pushlstring(L, (const char *)nl + 1, size - glen - 1);
	else
		lua_pushliteral(L, "/w/a/b.txt");
	/* An error is an answer; the state must stay usable. */
	(void)fsb_lua_pcall(lua, 3, 0, FSB_LUA_BUDGET_CALL, err, sizeof(err));
	if (lua_gettop(L) != 0)
		abort();
	return 0;
}
