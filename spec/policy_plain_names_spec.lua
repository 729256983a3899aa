-- Specs for plain names (engine.lua, name_literals): what a glob needs of
-- the last name of a path to match it, and the promise the core's
-- per-directory verdicts rest on: in any directory, every name that holds
-- none of the pack's name literals gets the verdict of every other such
-- name, for every op.

local glob = require("policy.glob")
local packs = require("spec.helpers.packs")
local policy = require("policy")

local ALL_OPS = {
	"read", "write", "create", "delete", "rename-from", "rename-to", "mkdir",
	"link", "symlink", "chmod", "chown", "utimes", "xattr", "touch",
}

local VARS = { workspace = "/home/u/proj", home = "/home/u", tmp = "/tmp", state = "/home/u/.local/state/fsbroker" }

local function needs(text)
	local g = assert(glob.compile(text, VARS))
	return g.name_needs
end

-- The core's test (policy.c, fsb_policy_name_is_plain): not empty, not
-- "." or "..", and like none of the needs, in either case.
local function plain(name, needs_of_pack)
	if name == "" or name == "." or name == ".." then
		return false
	end
	local lower = name:lower()
	for _, need in ipairs(needs_of_pack) do
		local how, lit = need:sub(1, 1), need:sub(2):lower()
		local at = lower:find(lit, 1, true)
		if (how == "=" and lower == lit) or (how == "^" and at == 1)
			or (how == "$" and lower:sub(-#lit) == lit) or (how == "*" and at ~= nil) then
			return false
		end
	end
	return true
end

local function shipped(name)
	return assert(policy.load({
		pack = packs.rules_dir() .. "/" .. name .. ".lua",
		rules_dirs = { packs.rules_dir() },
		vars = VARS,
	}))
end

describe("a glob's need of the last name", function()
	it("is nothing for a glob ending in a whole-segment wildcard", function()
		assert.are.same({}, needs("/**"))
		assert.are.same({}, needs("**/.git/hooks/?*"))
		assert.are.same({}, needs("**"))
		assert.are.same({}, needs("/home/u/proj/src/*"))
		assert.are.same({}, needs("/a/*/b/*"))
	end)

	it("is the name itself for a literal last segment", function()
		assert.are.same({ "=.env" }, needs("**/.env"))
		assert.are.same({ "=b" }, needs("/a/**/b"))
	end)

	it("is the literal a name starts or ends with, or else its longest one", function()
		assert.are.same({ "$.pem" }, needs("**/*.pem"))
		assert.are.same({ "^id_rsa" }, needs("~/.ssh/id_rsa*"))
		assert.are.same({ "*.min." }, needs("/a/*.min.*"))
		assert.are.same({ "*-x-" }, needs("/a/?-x-*"))
	end)

	it("names the segment before a closing /** (which also matches nothing)", function()
		assert.are.same({ "=proj" }, needs("${workspace}/**"))
		assert.are.same({ "=.cache" }, needs("**/node_modules/.cache/**"))
		assert.are.same({ "=.ssh" }, needs("~/.ssh/"))
	end)

	it("has a need for each brace alternative", function()
		assert.are.same({ "$.key", "$.pem" }, needs("**/*.{key,pem}"))
	end)

	it("cannot be told for a '?' or a class alone", function()
		assert.is_false(needs("/a/?"))
		assert.is_false(needs("/a/??*"))
		assert.is_false(needs("/a/[ab]*"))
		assert.is_false(needs("{/a/*.c,/b/?}"))
	end)
end)

describe("plain names", function()
	local names = {
		"a", "f1.txt", "Makefile", "index.js", "README", "x y", "caf\xc3\xa9", "a-b_c",
		"package.json", ".hidden", "..x", "env", ".env", ".env.local", "prod.pem", "id_rsa",
		"id_rsa.pub", "known_hosts", "proj", "PROJ", "hooks", "pre-commit", ".envrc", "config",
		".!12!f1.txt", "sedAbC123", "node_modules", ".git", "tmp", "cache", ".cache",
	}
	local dirs = {
		"/", "/etc", "/tmp", "/tmp/keep", "/home/u", "/home/u/.ssh", "/home/u/proj",
		"/home/u/proj/src", "/home/u/proj/.git", "/home/u/proj/.git/hooks",
		"/home/u/proj/node_modules", "/home/u/proj/node_modules/.cache",
		"/home/u/.local/state/fsbroker", "/home/u/proj/.env", "/home/u/.config",
		"/home/u/.aws", "/home/u/.claude", "/usr/lib",
	}

	-- Every plain name of `names` in each of `dirs` is judged as the first
	-- plain one there, for every op and both existence states.
	local function holds(eng)
		local literals = eng:summary().name_literals
		assert.is_table(literals)
		local compared = 0
		for _, dir in ipairs(dirs) do
			local first
			for _, name in ipairs(names) do
				if plain(name, literals) then
					local path = (dir == "/" and "" or dir) .. "/" .. name
					for _, op in ipairs(ALL_OPS) do
						for _, exists in ipairs({ false, true }) do
							local v = eng:evaluate({ op = op, path = path, exists = exists, nlink = 1, session = "s", toolCall = "t" })
							local key = op .. tostring(exists)
							first = first or {}
							if first[key] == nil then
								first[key] = v
							else
								assert.are.same({ first[key].decision, first[key].rule, first[key].backup },
									{ v.decision, v.rule, v.backup }, op .. " " .. path)
								compared = compared + 1
							end
						end
					end
				end
			end
		end
		assert.is_true(compared > 0)
	end

	it("are judged alike in every directory by the shipped default pack", function()
		holds(shipped("default"))
	end)

	it("are judged alike by a pack with every kind of list", function()
		holds(packs.engine({ top = [[return { name = "lists",
			fsProfile = { read = { "/usr/**", "~/.config/**" }, modify = { "${workspace}/**", "${tmp}/**" } },
			denyRead = { "~/.ssh/**", "!~/.ssh/known_hosts", "**/.env", "**/*.{pem,key}" },
			denyModify = { "**/.git/hooks/?*", "**/.envrc", "/home/u/proj/node_modules/.cache/**" },
			denyWrite = { "**/config" },
			ask = { modify = { "~/**" }, read = { "~/.aws/**" } },
			backup = { skip = { "${tmp}/**", "!${tmp}/keep/**", "**/node_modules/**" } },
			hardlinkTrees = { "**/node_modules/.pnpm/**" } }]] }, { vars = VARS }))
	end)

	it("leave out what the default pack singles out by name", function()
		local literals = shipped("default"):summary().name_literals
		for _, name in ipairs({ ".env", ".ENV", ".env.local", ".envrc", ".!12!f1.txt", "proj", ".ssh", "config" }) do
			assert.is_false(plain(name, literals), name)
		end
		for _, name in ipairs({ "f1.txt", "index.js", "algorithm.go", "module.mod.js", "configure", "id_rsa" }) do
			assert.is_true(plain(name, literals), name)
		end
	end)

	it("are none when a glob picks names by a class", function()
		local eng = packs.engine({ top = [[return { name = "c",
			fsProfile = { read = { "/**" }, modify = { "/ws/**" } },
			denyWrite = { "/ws/[ab]*" } }]] }, { vars = { workspace = "/ws", home = "/h", tmp = "/tmp", state = "/st" } })
		assert.is_false(eng:summary().name_literals)
	end)

	it("are none where the platform maps names (macOS: /private/var is /var)", function()
		local eng = packs.engine({ top = [[return { name = "m",
			fsProfile = { read = { "/**" }, modify = { "/private/**" } } }]] },
			{ vars = { workspace = "/ws", home = "/h", tmp = "/tmp", state = "/st" }, platform = "macos" })
		assert.is_false(eng:summary().name_literals)
	end)

	it("are none when the pack has a decide hook", function()
		assert.is_false(shipped("example-strict"):summary().name_literals)
	end)
end)
