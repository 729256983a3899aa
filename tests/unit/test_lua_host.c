/*
 * test_lua_host.c — the sandboxed Lua state: caps and restricted libraries.
 */
#include "unit.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "lua_host.h"

static struct fsb_lua *new_state(void)
{
	struct fsb_lua_limits lim = {
		.mem_bytes = 8u << 20,
		.load_instructions = 5000000,
		.call_instructions = 1000000,
	};
	struct fsb_lua *lua = NULL;

	assert_int_equal(fsb_lua_new(LUADIR, &lim, &lua), 0);
	return lua;
}

/* Run `code` as a chunk; returns 0 or -1 with the message in err. */
static int run(struct fsb_lua *lua, const char *code, char *err, size_t len)
{
	lua_State *L = fsb_lua_state(lua);

	if (luaL_loadbufferx(L, code, strlen(code), "=test", "t") != LUA_OK) {
		snprintf(err, len, "%s", lua_tostring(L, -1));
		lua_pop(L, 1);
		return -1;
	}
	return fsb_lua_pcall(lua, 0, 0, FSB_LUA_BUDGET_CALL, err, len);
}

static void test_endless_loop_hits_instruction_cap(void **state)
{
	struct fsb_lua *lua = new_state();
	char err[512];

	(void)state;
	assert_int_equal(run(lua, "while true do end", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "instruction limit"));
	/* The state is usable afterwards. */
	assert_int_equal(run(lua, "local x = 1 + 1", err, sizeof(err)), 0);
	fsb_lua_free(lua);
}

static void test_pcall_in_script_cannot_swallow_the_kill(void **state)
{
	struct fsb_lua *lua = new_state();
	char err[512];

	(void)state;
	assert_int_equal(run(lua, "for i = 1, 100 do pcall(function() while true do end end) end",
			     err, sizeof(err)), -1);
	assert_non_null(strstr(err, "instruction limit"));
	fsb_lua_free(lua);
}

static void test_memory_bomb_hits_memory_cap(void **state)
{
	struct fsb_lua *lua = new_state();
	char err[512];

	(void)state;
	assert_int_equal(run(lua, "local t = {} local s = 'x' "
			     "for i = 1, 40 do s = s .. s; t[i] = s end", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "memory limit"));
	assert_true(fsb_lua_memory(lua) < (8u << 20));
	assert_int_equal(run(lua, "local x = {1, 2, 3}", err, sizeof(err)), 0);
	fsb_lua_free(lua);
}

static void test_dangerous_libraries_are_absent(void **state)
{
	struct fsb_lua *lua = new_state();
	char err[512];

	(void)state;
	assert_int_equal(run(lua, "assert(rawget(_G, 'io') == nil)", err, sizeof(err)), 0);
	assert_int_equal(run(lua, "assert(rawget(_G, 'debug') == nil)", err, sizeof(err)), 0);
	assert_int_equal(run(lua, "assert(rawget(_G, 'dofile') == nil)", err, sizeof(err)), 0);
	assert_int_equal(run(lua, "assert(os.execute == nil and os.remove == nil and "
			     "os.getenv == nil)", err, sizeof(err)), 0);
	assert_int_equal(run(lua, "assert(type(os.time()) == 'number')", err, sizeof(err)), 0);
	assert_int_equal(run(lua, "assert(rawget(_G, 'package') == nil)", err, sizeof(err)), 0);
	/* Not through require either. */
	assert_int_equal(run(lua, "require('os')", err, sizeof(err)), -1);
	assert_int_equal(run(lua, "require('io')", err, sizeof(err)), -1);
	fsb_lua_free(lua);
}

static void test_bytecode_is_refused(void **state)
{
	struct fsb_lua *lua = new_state();
	char err[512];

	(void)state;
	/* "\27Lua" is the signature of a precompiled chunk. */
	assert_int_equal(run(lua, "local f, e = load('\\27Lua\\84\\0') "
			     "assert(f == nil and e:find('binary chunk'), e)", err, sizeof(err)), 0);
	assert_int_equal(run(lua, "local f = load('return 1 + 1') assert(f() == 2)",
			     err, sizeof(err)), 0);
	fsb_lua_free(lua);
}

static void test_undefined_globals_are_errors(void **state)
{
	struct fsb_lua *lua = new_state();
	char err[512];

	(void)state;
	assert_int_equal(run(lua, "local x = undefined_thing", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "undefined global 'undefined_thing'"));
	assert_int_equal(run(lua, "stray = 1", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "stray"));
	fsb_lua_free(lua);
}

static void test_require_finds_only_the_policy_dir_and_lpeg(void **state)
{
	struct fsb_lua *lua = new_state();
	char err[512];

	(void)state;
	assert_int_equal(run(lua, "local lpeg = require('lpeg') assert(lpeg.P)", err,
			     sizeof(err)), 0);
	assert_int_equal(run(lua, "require('socket')", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not found"));
	assert_int_equal(run(lua, "require('../etc/passwd')", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "module name"));
	assert_int_equal(run(lua, "local p = require('policy') assert(type(p.load) == 'function')",
			     err, sizeof(err)), 0);
	fsb_lua_free(lua);
}

static void test_error_carries_a_traceback(void **state)
{
	struct fsb_lua *lua = new_state();
	char err[512];

	(void)state;
	assert_int_equal(run(lua, "local function f() error('boom') end f()", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "boom"));
	assert_non_null(strstr(err, "stack traceback"));
	fsb_lua_free(lua);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_endless_loop_hits_instruction_cap),
		cmocka_unit_test(test_pcall_in_script_cannot_swallow_the_kill),
		cmocka_unit_test(test_memory_bomb_hits_memory_cap),
		cmocka_unit_test(test_dangerous_libraries_are_absent),
		cmocka_unit_test(test_bytecode_is_refused),
		cmocka_unit_test(test_undefined_globals_are_errors),
		cmocka_unit_test(test_require_finds_only_the_policy_dir_and_lpeg),
		cmocka_unit_test(test_error_carries_a_traceback),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
