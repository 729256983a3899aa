/*
 * lua_chunk_cache.h — the compiled form of each chunk file the Lua host
 * loads (the policy engine's modules, the pack files), kept under
 * <state dir>/lua-chunks/ so that a core does not parse the same bytes
 * again at every start (docs/decisions.md, "Compiled chunks are kept by
 * their source").
 *
 * One entry per chunk file, named by a hash of its path: the SHA-256 of
 * the source it was compiled from, the SHA-256 of the bytecode, the
 * bytecode (lua_dump, debug information kept: errors name the same file
 * and line). It is used only for the very source bytes it was made from
 * and only when the bytecode hashes right; a file that is not a regular
 * file of the user's, writable only by them, within the bound, is not
 * used. The state dir is hidden from sandboxed commands.
 */
#ifndef FSB_LUA_CHUNK_CACHE_H
#define FSB_LUA_CHUNK_CACHE_H

#include <stdbool.h>
#include <stddef.h>

#include <lua.h>

#define FSB_CHUNK_CACHE_MAX_BYTES (16u << 20)

/**
 * Push the function compiled from `text` (`len` bytes, the whole file at
 * `path`, of which the chunk is the part from `skip` on, named
 * `chunkname`) when `dir` holds it: true. False, with nothing pushed, when
 * it does not.
 */
bool fsb_chunk_cache_load(lua_State *L, const char *dir, const char *path, const char *text,
			  size_t len, const char *chunkname);

/**
 * Keep the function on top of the stack (compiled from `text` of `path`)
 * in `dir`, made 0700 if missing. A failure only means the next start
 * parses the file again.
 */
void fsb_chunk_cache_store(lua_State *L, const char *dir, const char *path, const char *text,
			   size_t len);

#endif
