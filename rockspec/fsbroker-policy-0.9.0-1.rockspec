-- The fsbroker policy engine as a rock: the Lua modules under lua/policy,
-- installed as fsbroker.policy, fsbroker.policy.engine, ... Build from the
-- repository root:
--   luarocks --lua-version=5.4 make --deps-mode=none rockspec/fsbroker-policy-0.9.0-1.rockspec
-- (--deps-mode=none uses Debian's lua-lpeg instead of building lpeg; a
-- luarocks that picks another Lua than 5.4 stops with a sentence saying so.)

rockspec_format = "3.0"
package = "fsbroker-policy"
version = "0.9.0-1"

source = {
	url = "git+file://.",
}

description = {
	summary = "Policy engine of fsbroker: rule packs, lpeg globs, decisions and approvals",
	detailed = [[
The Lua half of fsbroker, a file-access broker for shell commands: it loads
rule packs (Lua tables of globs, with includes and self-tests), compiles
their globs with lpeg once per load, and judges each file access as allow,
deny or ask, with the rule that decided it.
]],
	license = "MIT",
}

dependencies = {
	"lua ~> 5.4",
	"lpeg >= 1.0",
}

build = {
	-- The modules require each other by the names the core loads them by
	-- (policy.engine); the build writes copies that require fsbroker.policy.*
	-- into build/rock, after checking that luarocks chose Lua 5.4.
	type = "command",
	build_command = "$(LUA) rockspec/prefix.lua lua/policy build/rock "
		.. "init glob normalize pack engine approvals",
	install = {
		lua = {
			["fsbroker.policy"] = "build/rock/init.lua",
			["fsbroker.policy.glob"] = "build/rock/glob.lua",
			["fsbroker.policy.normalize"] = "build/rock/normalize.lua",
			["fsbroker.policy.pack"] = "build/rock/pack.lua",
			["fsbroker.policy.engine"] = "build/rock/engine.lua",
			["fsbroker.policy.approvals"] = "build/rock/approvals.lua",
		},
	},
	copy_directories = { "docs" },
}

test = {
	type = "busted",
	flags = { "--lua=lua5.4" },
}
