-- Specs for rockspec/: the policy engine installs offline with luarocks
-- against Debian's lpeg, for Lua 5.4 and under the fsbroker. prefix only
-- (no module named plain "policy" in a shared tree), and the installed
-- modules load a shipped pack; a luarocks that chose another Lua stops.

local ROCKSPEC = "rockspec/fsbroker-policy-0.9.0-1.rockspec"

local function run(cmd)
	local ok, _, code = os.execute(cmd)
	return ok == true and code == 0
end

local function have(prog)
	return run("command -v " .. prog .. " >/dev/null 2>&1")
end

local function exists(path)
	local f = io.open(path, "r")
	if f then
		f:close()
	end
	return f ~= nil
end

describe("rockspec", function()
	local tree

	before_each(function()
		local p = io.popen("mktemp -d /tmp/fsb-rock.XXXXXX")
		tree = p:read("*l")
		p:close()
	end)

	after_each(function()
		if tree ~= nil and tree:match("^/tmp/fsb%-rock%.") then
			os.execute("rm -rf '" .. tree .. "'")
		end
	end)

	local function make(version, log)
		return run("luarocks make --local --tree '" .. tree .. "' --lua-version " .. version
			.. " --deps-mode=none " .. ROCKSPEC .. " >'" .. log .. "' 2>&1")
	end

	-- Lua 5.4 finding only the rock's tree (and Debian's lpeg on the default cpath).
	local function lua_in_tree(script)
		local f = io.open(tree .. "/check.lua", "w")
		f:write(script)
		f:close()
		return run("LUA_PATH='" .. tree .. "/share/lua/5.4/?.lua;" .. tree
			.. "/share/lua/5.4/?/init.lua' lua5.4 '" .. tree .. "/check.lua'")
	end

	it("installs for Lua 5.4 under fsbroker.policy and nothing under a bare name", function()
		if not have("luarocks") then
			pending("skipped: luarocks is not installed (make deps installs it)")
			return
		end
		assert.is_true(make("5.4", tree .. "/make.log"))
		assert.is_true(exists(tree .. "/share/lua/5.4/fsbroker/policy.lua"))
		assert.is_true(exists(tree .. "/share/lua/5.4/fsbroker/policy/engine.lua"))
		assert.is_false(exists(tree .. "/share/lua/5.4/policy"))
		assert.is_false(exists(tree .. "/share/lua/5.4/policy.lua"))
		assert.is_true(lua_in_tree([[require("fsbroker.policy")]]))
	end)

	it("gives modules that load the shipped default pack, requiring only fsbroker.* names", function()
		if not have("luarocks") then
			pending("skipped: luarocks is not installed (make deps installs it)")
			return
		end
		assert.is_true(make("5.4", tree .. "/make.log"))
		assert.is_true(lua_in_tree([[
-- A require of a bare "policy.*" name would find nothing here, or another rock's.
table.insert(package.searchers, 2, function(name)
	if name == "policy" or name:match("^policy%.") then
		error("a module required the bare name " .. name)
	end
end)
local policy = require("fsbroker.policy")
local here = os.getenv("PWD")
local eng, err = policy.load{ pack = here .. "/lua/rules/default.lua",
  rules_dirs = { here .. "/lua/rules" },
  vars = { workspace = "/nonexistent-ws", home = "/nonexistent-home", tmp = "/tmp", state = "/st" } }
assert(eng, err)
local v = eng:evaluate{ op = "read", path = "/nonexistent-home/.ssh/id_rsa", exists = false }
assert(v.decision == "deny", v.rule)
assert(package.loaded["fsbroker.policy.engine"] ~= nil)
]]))
	end)

	it("stops with a sentence naming Lua 5.4 when luarocks chose Lua 5.1", function()
		if not have("luarocks") or not have("lua5.1") then
			pending("skipped: luarocks or lua5.1 is not installed")
			return
		end
		local log = tree .. "/make.log"
		assert.is_false(make("5.1", log))
		local f = io.open(log, "r")
		local text = f:read("a")
		f:close()
		assert.is_truthy(text:find("fsbroker-policy needs Lua 5.4", 1, true))
		assert.is_false(exists(tree .. "/share/lua/5.1/fsbroker"))
	end)
end)
