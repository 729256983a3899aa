-- Specs for how the engine picks the deciding entry of a list. The engine
-- skips a list at once when a path holds none of its entries' literals (a
-- quick reject built as a trie); these specs compare its answer with trying
-- every glob one by one, last match wins, on paths chosen to sit right at
-- the edges of that shortcut.

local glob = require("policy.glob")
local lpeg = require("lpeg")
local packs = require("spec.helpers.packs")

local VARS = { workspace = "/w/proj", home = "/home/u", tmp = "/tmp", state = "/st" }

local GLOBS = {
	"~/.ssh/**", "!~/.ssh/known_hosts", "~/.aws/credentials", "~/.config/{gh,hub}/**",
	"**/.env", "**/.env.*", "!**/.env.example", "**/.git/hooks/**", "**/.git/config",
	"**/.git/modules/*/hooks/**", "${workspace}/secret?.txt", "${workspace}/[a-c]*.key",
	"/etc/shadow", "/var/lib/**/private/*", "**/id_[dr]sa*",
}

local PATHS = {
	"/home/u/.ssh/id_ed25519", "/home/u/.ssh/known_hosts", "/home/u/.ssh", "/home/u/.sshx/a",
	"/home/u/.aws/credentials", "/home/u/.aws/config", "/home/u/.config/gh/hosts.yml",
	"/home/u/.config/hub", "/home/u/.config/hubx/a", "/.env", "/w/proj/.env",
	"/w/proj/.env.local", "/w/proj/.env.example", "/w/proj/.envrc", "/w/proj/a.env",
	"/w/proj/.git/hooks", "/w/proj/.git/hooks/pre-commit", "/w/proj/.git/hooksx",
	"/w/proj/.git/config", "/w/proj/.git/config.bak", "/w/proj/.git/modules/m/hooks/x",
	"/w/proj/.git/modules/m/n/hooks/x", "/w/proj/secret1.txt", "/w/proj/secret12.txt",
	"/w/proj/b.key", "/w/proj/d.key", "/w/proj/a/b.key", "/etc/shadow", "/etc/shadow-",
	"/var/lib/x/y/private/k", "/var/lib/private/k", "/var/lib/x/private/k/z",
	"/w/proj/src/id_rsa.pub", "/w/proj/src/id_ecdsa", "/w/proj/src/main.c", "/",
	"/home/u", "/home", "/tmp/x/.env",
}

-- The deciding entry by brute force: the last glob in the list that
-- matches; none when that one is an exception.
local function brute_force(path)
	local winner
	for _, text in ipairs(GLOBS) do
		local g = assert(glob.compile(text, VARS))
		if lpeg.match(g.pattern, path) then
			winner = g
		end
	end
	if winner == nil or winner.negate then
		return nil
	end
	return "denyRead " .. winner.text
end

describe("policy.engine list matching", function()
	local quoted = {}
	for i, g in ipairs(GLOBS) do
		quoted[i] = string.format("%q", g)
	end
	local eng = packs.engine({ top = "return { name = 'lists', fsProfile = { read = { '/**' } },\n"
		.. "  denyRead = { " .. table.concat(quoted, ", ") .. " } }" },
		{ vars = VARS })

	for _, path in ipairs(PATHS) do
		it("picks the same deciding entry as trying every glob for " .. path, function()
			local v = eng:evaluate({ op = "read", path = path, exists = false, session = "s" })
			local expected = brute_force(path)
			if expected == nil then
				assert.are.same({ "allow", "fsProfile.read /**" }, { v.decision, v.rule })
			else
				assert.are.same({ "deny", expected }, { v.decision, v.rule })
			end
		end)
	end

	it("denies the paths the list names, so the comparison is not vacuous", function()
		local denied = 0
		for _, path in ipairs(PATHS) do
			if brute_force(path) ~= nil then
				denied = denied + 1
			end
		end
		assert.is_true(denied >= 15)
	end)
end)
