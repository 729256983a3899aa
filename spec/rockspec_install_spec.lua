-- Specs for rockspec/: the policy engine installs offline with luarocks
-- against Debian's lpeg, and the installed modules load a shipped pack.

local ROCKSPEC = "rockspec/fsbroker-policy-0.9.0-1.rockspec"

local function run(cmd)
	local ok, _, code = os.execute(cmd)
	return ok == true and code == 0
end

describe("rockspec", function()
	local tree

	setup(function()
		local p = io.popen("mktemp -d /tmp/fsb-rock.XXXXXX")
		tree = p:read("*l")
		p:close()
	end)

	teardown(function()
		if tree ~= nil and tree:match("^/tmp/fsb%-rock%.") then
			os.execute("rm -rf '" .. tree .. "'")
		end
	end)

	it("installs with luarocks make --deps-mode=none into a fresh tree", function()
		assert.is_true(run("luarocks --lua-version=5.4 --tree='" .. tree .. "' make "
			.. "--deps-mode=none " .. ROCKSPEC .. " >/dev/null 2>&1"))
		local f = io.open(tree .. "/share/lua/5.4/policy/init.lua", "r")
		assert.is_not_nil(f)
		f:close()
	end)

	it("gives modules that load the shipped default pack from the installed tree", function()
		local script = [[
package.path = "]] .. tree .. [[/share/lua/5.4/?.lua;]] .. tree .. [[/share/lua/5.4/?/init.lua"
local policy = require("policy")
local here = os.getenv("PWD")
local eng, err = policy.load{ pack = here .. "/lua/rules/default.lua",
  rules_dirs = { here .. "/lua/rules" },
  vars = { workspace = "/nonexistent-ws", home = "/nonexistent-home", tmp = "/tmp", state = "/st" } }
assert(eng, err)
local v = eng:evaluate{ op = "read", path = "/nonexistent-home/.ssh/id_rsa", exists = false }
assert(v.decision == "deny", v.rule)
]]
		local f = io.open(tree .. "/check.lua", "w")
		f:write(script)
		f:close()
		assert.is_true(run("lua5.4 '" .. tree .. "/check.lua'"))
	end)
end)
