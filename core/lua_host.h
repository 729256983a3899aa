/*
 * lua_host.h — one sandboxed lua_State (DESIGN §4.4): a counting allocator
 * for the memory cap, an instruction hook for the time cap, allow-listed
 * libraries, text chunks only, and the one pcall wrapper every call uses.
 */
#ifndef FSB_LUA_HOST_H
#define FSB_LUA_HOST_H

#include <stddef.h>

#include <lua.h>

struct fsb_lua_limits {
	size_t mem_bytes;		/* total the state may allocate */
	unsigned long load_instructions;	/* budget for loading a pack */
	unsigned long call_instructions;	/* budget for one decision */
};

/** Defaults: 64 MiB, 200 million instructions to load, 10 million a call. */
extern const struct fsb_lua_limits fsb_lua_default_limits;

struct fsb_lua;

/**
 * Create a state whose `require` finds modules only in `luadir` (text
 * files, `a.b` -> luadir/a/b.lua or luadir/a/b/init.lua) plus a preloaded
 * lpeg. Libraries: base (with text-only load/loadfile, no dofile),
 * string, table, math, utf8, coroutine, os.time and os.clock; print goes to
 * the log. Reading or writing an undefined global is an error.
 * Returns 0 or -ENOMEM.
 */
int fsb_lua_new(const char *luadir, const struct fsb_lua_limits *limits,
		struct fsb_lua **out);

void fsb_lua_free(struct fsb_lua *lua);

lua_State *fsb_lua_state(struct fsb_lua *lua);

enum fsb_lua_budget { FSB_LUA_BUDGET_LOAD, FSB_LUA_BUDGET_CALL };

/**
 * lua_pcall with a traceback message handler and a fresh instruction budget.
 * On error the message (with traceback) is copied to `err` (of `errlen`
 * bytes, may be NULL), the stack is left as before the function and its
 * arguments, and a negative value is returned. When the instruction or
 * memory cap fired, the message says so. 0 on success, with the results on
 * the stack.
 */
int fsb_lua_pcall(struct fsb_lua *lua, int nargs, int nresults,
		  enum fsb_lua_budget budget, char *err, size_t errlen);

/**
 * Keep the compiled form of every chunk file loaded from now on in `dir`,
 * and load a file's from there when its source is the same
 * (lua_chunk_cache.h). NULL: parse every file.
 */
void fsb_lua_keep_chunks(struct fsb_lua *lua, const char *dir);

/** Bytes the state holds now. */
size_t fsb_lua_memory(const struct fsb_lua *lua);

/**
 * The SHA-256 (hex) of every chunk file the state has loaded so far, each
 * with its path and in load order (the policy modules, the pack files),
 * followed by `extra`: what names this code exactly. 0 or -ENOMEM.
 */
int fsb_lua_code_digest(struct fsb_lua *lua, const void *extra, size_t len,
			char out[65]);

#endif
