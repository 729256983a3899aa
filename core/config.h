/*
 * config.h — build the broker's configuration from the command line and the
 * environment: where the Lua engine lives, which pack file, which rules
 * directories, the workspace and the state dir; and where the files that
 * sit beside the binary are, in the build tree or an install.
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

/**
 * The first of `places` (paths relative to this binary's directory, such as
 * "/fsbroker-init" and "/../libexec/fsbroker/fsbroker-init") that `access`
 * allows with `mode`, into `out`: the build tree's place first, then the
 * install's. Returns 0; or the first place's -errno with that place in `out`
 * (the one a build would fill, for the message).
 */
/** fsbroker-init: next to this binary in the build tree (build/), or in
 * libexec/fsbroker/ beside bin/ once installed. 0 or -errno. */
int fsb_config_find_init(char *out, size_t len);

/** A brokered client `name` ("zsh", "toybox", "bin": the shims):
 * clients/NAME beside this binary (build/clients/NAME next to
 * build/fsbroker), or libexec/fsbroker/clients/NAME. 0 or -errno. */
int fsb_config_find_client(const char *name, char *out, size_t len);

int fsb_config_find_beside_binary(const char *const *places, size_t nplaces, int mode,
				  char *out, size_t len);

/** $XDG_STATE_HOME/fsbroker, else ~/.local/state/fsbroker. */
void fsb_default_state_dir(char *out, size_t len);

#endif
