/*
 * config.h — build the broker's configuration from the command line and the
 * environment: where the Lua engine lives, which pack file, which rules
 * directories, the workspace and the state dir.
 */
#ifndef FSB_CONFIG_H
#define FSB_CONFIG_H

#include <stddef.h>

#include "broker.h"

/**
 * Fill `cfg`. `rules` is a pack name (looked up in the shipped rules dir) or
 * a path to a .lua file; `workspace` and `state_dir` may be NULL. The Lua
 * dir is $FSBROKER_LUA_DIR, else <exe>/../lua (the build tree), else
 * <exe>/../share/fsbroker/lua (an install). Includes resolve from the
 * pack's own directory and the shipped rules dir. Returns 0, or -1 with a
 * sentence in `err`.
 */
int fsb_config_build(struct fsb_broker_config *cfg, const char *rules,
		     const char *workspace, const char *state_dir, char *err, size_t errlen);

/** $XDG_STATE_HOME/fsbroker, else ~/.local/state/fsbroker. */
void fsb_default_state_dir(char *out, size_t len);

#endif
