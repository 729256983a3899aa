-- Specs for the shipped rule packs in lua/rules: each loads from the real
-- rules directory with its self-tests passing, and gives the key verdicts.

local packs = require("spec.helpers.packs")
local policy = require("policy")

local RULES = packs.rules_dir()
local VARS = { workspace = "/home/u/proj", home = "/home/u", tmp = "/tmp", state = "/home/u/.local/state/fsbroker" }

local function load_pack(name, vars, platform)
	return policy.load({
		pack = RULES .. "/" .. name .. ".lua",
		rules_dirs = { RULES },
		vars = vars or VARS,
		platform = platform,
	})
end

local function pack_names()
	local names = {}
	local p = assert(io.popen("ls '" .. RULES .. "'"))
	for line in p:lines() do
		local name = line:match("^(.+)%.lua$")
		if name then
			names[#names + 1] = name
		end
	end
	p:close()
	table.sort(names)
	return names
end

local function decides(eng, op, path, decision, rule, more)
	local req = { op = op, path = path, exists = false, session = "s", toolCall = "t" }
	for k, v in pairs(more or {}) do
		req[k] = v
	end
	local v = eng:evaluate(req)
	if rule == nil then
		assert.are.equal(decision, v.decision, op .. " " .. path .. ": " .. v.rule)
	else
		assert.are.same({ decision, rule }, { v.decision, v.rule })
	end
end

describe("rule packs", function()
	it("ship the packs default.lua includes and an example", function()
		assert.are.same({ "agent-state", "credentials", "default", "example-strict", "git-metadata",
			"tool-caches" }, pack_names())
	end)

	for _, name in ipairs(pack_names()) do
		for _, platform in ipairs({ "linux", "macos" }) do
			it(name .. ".lua loads on " .. platform .. " with its self-tests passing", function()
				local eng, err = load_pack(name, nil, platform)
				assert.is_nil(err)
				assert.are.equal(name, eng.name)
				assert.are.equal(RULES .. "/" .. name .. ".lua", eng.files[1])
			end)
		end
	end

	describe("default", function()
		local eng = assert(load_pack("default"))

		local PLACES = {
			{ "in home", { workspace = "/home/u/proj", home = "/home/u", tmp = "/tmp", state = "/st" } },
			{ "under tmp", { workspace = "/tmp/ws", home = "/home/u", tmp = "/tmp", state = "/st" } },
			{ "outside home", { workspace = "/srv/proj", home = "/home/u", tmp = "/tmp", state = "/st" } },
			{ "holding tmp", { workspace = "/srv/proj", home = "/home/u", tmp = "/srv/proj/tmp", state = "/st" } },
			{ "for root", { workspace = "/root/proj", home = "/root", tmp = "/tmp", state = "/root/.local/state/fsbroker" } },
			-- A CI machine's home inside /tmp: writes to ~ are writes to tmp.
			{ "with home inside tmp", { workspace = "/tmp/ci/ws", home = "/tmp/ci/home", tmp = "/tmp", state = "/st" } },
		}
		for _, place in ipairs(PLACES) do
			it("passes its self-tests with the workspace " .. place[1], function()
				local e, err = load_pack("default", place[2])
				assert.is_nil(err)
				assert.are.equal("default", e.name)
			end)
		end

		it("loads its includes from the rules directory", function()
			assert.are.same({
				RULES .. "/default.lua", RULES .. "/credentials.lua",
				RULES .. "/git-metadata.lua", RULES .. "/agent-state.lua",
				RULES .. "/tool-caches.lua",
			}, eng.files)
		end)

		it("needs --workspace", function()
			local e, err = load_pack("default", { home = "/home/u", tmp = "/tmp", state = "/st" })
			assert.is_nil(e)
			assert.is_truthy(err:find("^" .. RULES:gsub("%p", "%%%0") .. "/default%.lua: fsProfile%.modify%[1%]: "), err)
			assert.is_truthy(err:find("this pack needs --workspace DIR", 1, true), err)
		end)

		it("refuses home as the workspace", function()
			local e, err = load_pack("default", { workspace = "/home/u", home = "/home/u", state = "/st" })
			assert.is_nil(e)
			assert.is_truthy(err:find("is the home directory", 1, true), err)
		end)

		it("allows changes in the workspace and tmp, with backups outside tmp", function()
			decides(eng, "write", "/home/u/proj/src/main.c", "allow", "fsProfile.modify ${workspace}/**")
			decides(eng, "write", "/tmp/build.log", "allow", "fsProfile.modify ${tmp}/**")
			assert.is_true(eng:evaluate({ op = "write", path = "/home/u/proj/a" }).backup)
			assert.is_false(eng:evaluate({ op = "write", path = "/tmp/a" }).backup)
		end)

		it("backs up a workspace under tmp: the tmp scratch skip never covers the workspace", function()
			for _, vars in ipairs({
				{ workspace = "/tmp/ws", home = "/home/u", tmp = "/tmp", state = "/st" },
				{ workspace = "/tmp/ci/ws", home = "/tmp/ci/home", tmp = "/tmp", state = "/st" },
			}) do
				local e = assert(load_pack("default", vars))
				assert.is_true(e:evaluate({ op = "write", path = vars.workspace .. "/src/a.c" }).backup)
				assert.is_true(e:evaluate({ op = "delete", path = vars.workspace .. "/b" }).backup)
				assert.is_false(e:evaluate({ op = "write", path = "/tmp/scratch.log" }).backup)
				assert.is_false(e:evaluate({ op = "write", path = "/tmp/ws2/a" }).backup)
			end
		end)

		it("allows reads of the system and denies changes to it", function()
			decides(eng, "read", "/etc/os-release", "allow", "fsProfile.read /**")
			decides(eng, "write", "/etc/os-release", "deny", "default deny")
			decides(eng, "delete", "/usr/bin/env", "deny", "default deny")
		end)

		it("asks before changing the rest of home", function()
			decides(eng, "write", "/home/u/.bashrc", "ask", "ask.modify ~/**")
			decides(eng, "write", "/home/u/.profile", "ask", "ask.modify ~/**")
		end)

		it("denies credentials for every op", function()
			decides(eng, "read", "/home/u/.ssh/id_ed25519", "deny", "denyRead ~/.ssh/**")
			decides(eng, "write", "/home/u/.ssh/authorized_keys", "deny", "denyRead ~/.ssh/**")
			decides(eng, "read", "/home/u/.aws/credentials", "deny", "denyRead ~/.aws/**")
			decides(eng, "read", "/home/u/.config/gh/hosts.yml", "deny", "denyRead ~/.config/gh/**")
			decides(eng, "read", "/home/u/.netrc", "deny", "denyRead ~/.netrc")
			decides(eng, "read", "/home/u/.cargo/credentials.toml", "deny", "denyRead ~/.cargo/credentials.toml")
			decides(eng, "read", "/home/u/.config/chromium/Default/Login Data", "deny", "denyRead ~/.config/chromium/**")
		end)

		it("denies .env files anywhere and keeps .envrc read-only", function()
			decides(eng, "read", "/home/u/proj/.env", "deny", "denyRead **/.env")
			decides(eng, "read", "/srv/other/.env.production", "deny", "denyRead **/.env.*")
			decides(eng, "rename-to", "/home/u/proj/.env", "deny", "denyRead **/.env")
			decides(eng, "read", "/home/u/proj/.envrc", "allow", "fsProfile.read /**")
			decides(eng, "write", "/home/u/proj/.envrc", "deny", "denyModify **/.envrc")
		end)

		it("refuses new Git hooks but lets init, clone and commits write the repository", function()
			decides(eng, "write", "/home/u/proj/.git/hooks/pre-commit", "deny", "denyWrite **/.git/hooks/?*")
			decides(eng, "rename-to", "/home/u/proj/.git/hooks/post-checkout", "deny", "denyWrite **/.git/hooks/?*")
			decides(eng, "write", "/home/u/proj/.git/modules/lib/hooks/post-checkout", "deny",
				"denyWrite **/.git/modules/**/hooks/?*")
			decides(eng, "write", "/home/u/.gitconfig", "deny", "denyModify ~/.gitconfig")
			decides(eng, "write", "/home/u/proj/.git/commondir", "deny", "denyModify **/.git/commondir")
			-- git init: the directory, the hooks directory and the samples.
			decides(eng, "mkdir", "/home/u/proj/.git", "allow", "fsProfile.modify ${workspace}/**")
			decides(eng, "mkdir", "/home/u/proj/.git/hooks", "allow", "fsProfile.modify ${workspace}/**")
			decides(eng, "create", "/home/u/proj/.git/hooks/pre-commit.sample", "allow",
				"fsProfile.modify ${workspace}/**")
			decides(eng, "create", "/home/u/proj/.git/modules/lib/hooks/update.sample", "allow",
				"fsProfile.modify ${workspace}/**")
			-- git config writes config.lock and renames it over config;
			-- the git guard undoes risky keys when the cycle seals.
			decides(eng, "rename-to", "/home/u/proj/.git/config", "allow", "fsProfile.modify ${workspace}/**")
			decides(eng, "write", "/home/u/proj/.git/config.worktree", "allow", "fsProfile.modify ${workspace}/**")
			decides(eng, "write", "/home/u/proj/.git/objects/12/3456", "allow", "fsProfile.modify ${workspace}/**")
			decides(eng, "write", "/home/u/proj/.git/refs/heads/main", "allow", "fsProfile.modify ${workspace}/**")
			decides(eng, "read", "/home/u/proj/.git/config", "allow", "fsProfile.read /**")
		end)

		it("hides the state dir and keeps agent state read-only", function()
			decides(eng, "read", "/home/u/.local/state/fsbroker/audit/s.jsonl", "deny", "denyRead ${state}/**")
			decides(eng, "read", "/home/u/.local/state/fsbroker", "deny", "denyRead ${state}/**")
			decides(eng, "write", "/home/u/.claude/settings.json", "deny", "denyModify ~/.claude/**")
			decides(eng, "read", "/home/u/.claude/settings.json", "allow", "fsProfile.read /**")
			decides(eng, "write", "/home/u/.config/fsbroker/rules/default.lua", "deny", "denyModify ~/.config/fsbroker/**")
		end)

		it("lets the tools write their caches without an ask and without a backup", function()
			decides(eng, "mkdir", "/home/u/.npm/_cacache/tmp", "allow", "fsProfile.modify ~/.npm/**")
			decides(eng, "write", "/home/u/.cache/pip/http/1/2/3", "allow", "fsProfile.modify ~/.cache/pip/**")
			decides(eng, "create", "/home/u/.cargo/registry/index/x", "allow", "fsProfile.modify ~/.cargo/registry/**")
			assert.is_false(eng:evaluate({ op = "write", path = "/home/u/.npm/_cacache/index-v5/ab", exists = true }).backup)
			assert.is_true(eng:evaluate({ op = "write", path = "/home/u/proj/a.c", exists = true }).backup)
		end)

		it("still asks about code a tool runs later from a cache-like place", function()
			decides(eng, "create", "/home/u/.cache/pre-commit/repo/hook.py", "ask", "ask.modify ~/**")
			decides(eng, "create", "/home/u/.cargo/bin/cargo-evil", "ask", "ask.modify ~/**")
			decides(eng, "read", "/home/u/.npmrc", "deny", "denyRead ~/.npmrc")
			decides(eng, "write", "/home/u/.npmrc", "deny", "denyRead ~/.npmrc")
		end)

		it("asks before changing a hard-linked file", function()
			decides(eng, "write", "/home/u/proj/a", "ask", "hardlinks ask", { exists = true, nlink = 2, dev = 1, ino = 2 })
		end)

		it("lets pnpm's hard-linked trees be changed and linked again", function()
			decides(eng, "write", "/home/u/proj/node_modules/.pnpm/a@1.0.0/node_modules/a/index.js", "allow",
				"fsProfile.modify ${workspace}/**", { exists = true, nlink = 3, dev = 1, ino = 2 })
			decides(eng, "link", "/home/u/.local/share/pnpm/store/v3/files/ab/cd", "allow",
				"fsProfile.modify ~/.local/share/pnpm/store/**", { exists = true, nlink = 3, dev = 1, ino = 2 })
			-- A tree of hard links elsewhere in the workspace still asks.
			decides(eng, "write", "/home/u/proj/node_modules/a/index.js", "ask", "hardlinks ask",
				{ exists = true, nlink = 2, dev = 1, ino = 3 })
		end)

		it("summarises for the mount plan", function()
			local s = eng:summary()
			assert.are.same({ "/**" }, s.read)
			-- Included packs' entries come first: the tools' caches, then
			-- the pack's own.
			assert.are.same({ "/home/u/proj/**", "/tmp/**", "/dev/null", "/dev/zero", "/dev/full",
				"/dev/tty" }, { table.unpack(s.modify, #s.modify - 5) })
			assert.are.equal("/home/u/.npm/**", s.modify[1])
			assert.are.same({ "/home/u/**" }, s.ask)
			assert.are.equal("mask", s.reads)
			assert.are.equal("trash", s.delete_mode)
			assert.are.same({ maxSizeMB = 10, onTooLarge = "ask", quotaMB = 5120, durability = "batched" },
				{ maxSizeMB = s.backup.maxSizeMB, onTooLarge = s.backup.onTooLarge, quotaMB = s.backup.quotaMB,
					durability = s.backup.durability })
			assert.are.equal("/tmp/**", s.backup.skip[#s.backup.skip])
			assert.are.equal("/home/u/.npm/**", s.backup.skip[1])
			assert.are.same({ "PATH", "HOME", "LANG", "LC_ALL", "TERM", "USER", "LOGNAME", "SHELL", "TZ", "TMPDIR",
				"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL" }, s.env_pass)
			assert.are.equal("/home/u/.ssh/**", s.denyRead[1])
		end)

		it("judges the macOS spellings on macOS", function()
			local mac = assert(load_pack("default", { workspace = "/Users/u/proj", home = "/Users/u",
				tmp = "/var/folders/xy/T", state = "/Users/u/.local/state/fsbroker" }, "macos"))
			decides(mac, "write", "/private/var/folders/xy/T/a", "allow", "fsProfile.modify ${tmp}/**")
			decides(mac, "read", "/Users/u/Library/Keychains/login.keychain-db", "deny", "denyRead ~/Library/Keychains/**")
			decides(mac, "read", "/Users/u/proj/.ENV", "deny", "denyRead **/.env")
		end)
	end)

	describe("credentials, git-metadata and agent-state alone", function()
		it("load without a workspace where they do not use one", function()
			for _, name in ipairs({ "credentials", "git-metadata" }) do
				local eng, err = load_pack(name, { home = "/home/u" })
				assert.is_nil(err)
				assert.are.equal(name, eng.name)
			end
		end)

		it("agent-state needs the state dir", function()
			local eng, err = load_pack("agent-state", { home = "/home/u" })
			assert.is_nil(eng)
			assert.is_truthy(err:find("denyRead[1]: uses ${state} but no state directory was given", 1, true), err)
		end)
	end)

	describe("example-strict", function()
		local eng = assert(load_pack("example-strict"))

		it("cuts the network (network = \"none\"), where the default pack keeps the host's", function()
			assert.are.equal("none", eng:summary().network)
			assert.are.equal("host", assert(load_pack("default")):summary().network)
		end)

		it("denies changes to lock files through its decide hook", function()
			decides(eng, "write", "/home/u/proj/Cargo.lock", "deny", "decide lock files")
			decides(eng, "read", "/home/u/proj/Cargo.lock", "allow", "fsProfile.read ${workspace}/**")
		end)

		it("keeps vendored code read-only except its README", function()
			decides(eng, "write", "/home/u/proj/vendor/x/y.c", "deny", "denyModify ${workspace}/vendor/**")
			decides(eng, "write", "/home/u/proj/vendor/README.md", "allow", "fsProfile.modify ${workspace}/**")
		end)

		it("denies reads outside the workspace and the system", function()
			decides(eng, "read", "/home/u/notes.txt", "deny", "default deny")
			decides(eng, "read", "/usr/include/stdio.h", "allow", "fsProfile.read /usr/**")
		end)

		it("still denies credentials, which the hook cannot relax", function()
			decides(eng, "read", "/home/u/proj/.env", "deny", "denyRead **/.env")
		end)
	end)
end)
