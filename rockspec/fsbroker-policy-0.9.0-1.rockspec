-- The fsbroker policy engine as a rock: the Lua modules under lua/policy.
-- Build from the repository root:
--   luarocks --lua-version=5.4 make --deps-mode=none rockspec/fsbroker-policy-0.9.0-1.rockspec
-- (--deps-mode=none uses Debian's lua-lpeg instead of building lpeg.)

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
	"lua >= 5.4",
	"lpeg >= 1.0",
}

build = {
	type = "builtin",
	modules = {
		["policy"] = "lua/policy/init.lua",
		["policy.glob"] = "lua/policy/glob.lua",
		["policy.normalize"] = "lua/policy/normalize.lua",
		["policy.pack"] = "lua/policy/pack.lua",
		["policy.engine"] = "lua/policy/engine.lua",
		["policy.approvals"] = "lua/policy/approvals.lua",
	},
	copy_directories = { "docs" },
}

test = {
	type = "busted",
	flags = { "--lua=lua5.4" },
}
