-- Specs for policy.engine: precedence, exceptions, normalisation, the
-- hard-link rule, decide hooks, the backup flag and summary().

local packs = require("spec.helpers.packs")

local ALL_OPS = {
	"read", "write", "create", "delete", "rename-from", "rename-to", "mkdir",
	"link", "symlink", "chmod", "chown", "utimes", "xattr", "touch",
}

-- A small pack shaped like default.lua, written inline so that each spec
-- says what it relies on.
local BASE = [[
return {
	name = "base",
	fsProfile = { read = { "/**" }, modify = { "${workspace}/**", "${tmp}/**" } },
	denyRead = { "~/.ssh/**", "!~/.ssh/known_hosts", "**/.env" },
	denyModify = { "**/.git/hooks/**", "**/.envrc" },
	ask = { modify = { "~/**" } },
	backup = { skip = { "${tmp}/**", "!${tmp}/keep/**" } },
	%s
}
]]

local function base(extra, opts)
	return packs.engine({ top = string.format(BASE, extra or "") }, opts)
end

local function verdict(eng, op, path, more)
	local req = { op = op, path = path, exists = false, session = "s1", toolCall = "t1" }
	for k, v in pairs(more or {}) do
		req[k] = v
	end
	return eng:evaluate(req)
end

local function decides(eng, op, path, decision, rule, more)
	local v = verdict(eng, op, path, more)
	assert.are.same({ decision, rule }, { v.decision, v.rule })
	return v
end

describe("policy.engine", function()
	describe("precedence", function()
		local eng = base()

		it("lets fsProfile.modify allow changes in the workspace", function()
			decides(eng, "write", "/ws/src/a.c", "allow", "fsProfile.modify ${workspace}/**")
		end)

		it("lets fsProfile.read allow reads anywhere", function()
			decides(eng, "read", "/etc/hosts", "allow", "fsProfile.read /**")
		end)

		it("does not let fsProfile.read allow a change", function()
			decides(eng, "write", "/etc/hosts", "deny", "default deny")
		end)

		it("lets fsProfile.modify allow reads too", function()
			local eng2 = packs.engine({ top = 'return { name = "m", fsProfile = { modify = { "/ws/**" } } }' })
			decides(eng2, "read", "/ws/a", "allow", "fsProfile.modify /ws/**")
			decides(eng2, "read", "/etc/hosts", "deny", "default deny")
		end)

		it("applies denyRead to every op, above any allow", function()
			for _, op in ipairs(ALL_OPS) do
				decides(eng, op, "/ws/app/.env", "deny", "denyRead **/.env")
			end
		end)

		it("applies denyModify to every op except read", function()
			for _, op in ipairs(ALL_OPS) do
				if op == "read" then
					decides(eng, op, "/ws/.git/hooks/pre-commit", "allow", "fsProfile.read /**")
				else
					decides(eng, op, "/ws/.git/hooks/pre-commit", "deny", "denyModify **/.git/hooks/**")
				end
			end
		end)

		it("applies denyWrite to every change except delete and rename-from", function()
			local eng2 = base('denyWrite = { "${workspace}/hooks/?*", "!${workspace}/hooks/*.sample" },',
				{ vars = { workspace = "/ws", home = "/home/u", tmp = "/tmp", state = "/st" } })
			for _, op in ipairs(ALL_OPS) do
				if op == "read" then
					decides(eng2, op, "/ws/hooks/pre-commit", "allow", "fsProfile.read /**")
				elseif op == "delete" or op == "rename-from" then
					decides(eng2, op, "/ws/hooks/pre-commit", "allow", "fsProfile.modify ${workspace}/**")
				else
					decides(eng2, op, "/ws/hooks/pre-commit", "deny", "denyWrite ${workspace}/hooks/?*")
				end
			end
			-- An exception, and final as denyModify is: a decide hook cannot lift it.
			decides(eng2, "create", "/ws/hooks/x.sample", "allow", "fsProfile.modify ${workspace}/**")
			local eng3 = base('denyWrite = { "/ws/h" }, decide = function() return "allow" end,',
				{ vars = { workspace = "/ws", home = "/home/u", tmp = "/tmp", state = "/st" } })
			decides(eng3, "write", "/ws/h", "deny", "denyWrite /ws/h")
		end)

		it("asks for a change the profile does not allow but ask names", function()
			decides(eng, "write", "/home/u/.bashrc", "ask", "ask.modify ~/**")
		end)

		it("prefers an fsProfile allow to an ask", function()
			local eng2 = base(nil, { vars = { workspace = "/home/u/proj", home = "/home/u", tmp = "/tmp", state = "/st" } })
			decides(eng2, "write", "/home/u/proj/a", "allow", "fsProfile.modify ${workspace}/**")
			decides(eng2, "write", "/home/u/other", "ask", "ask.modify ~/**")
		end)

		it("asks for reads through ask.read and ask.modify, but changes only through ask.modify", function()
			local eng2 = packs.engine({ top = [[return { name = "a",
				ask = { read = { "/r/**" }, modify = { "/m/**" } } }]] })
			decides(eng2, "read", "/r/x", "ask", "ask.read /r/**")
			decides(eng2, "write", "/r/x", "deny", "default deny")
			decides(eng2, "read", "/m/x", "ask", "ask.modify /m/**")
			decides(eng2, "write", "/m/x", "ask", "ask.modify /m/**")
		end)

		it("denies what nothing matches, saying so", function()
			local v = decides(eng, "mkdir", "/opt/new", "deny", "default deny")
			assert.is_truthy(v.reason:find("/opt/new", 1, true))
			assert.is_truthy(v.hint:find("fsProfile.modify", 1, true))
		end)

		it("works through the worked example of docs/rule-packs.md", function()
			-- write ~/.ssh/config: denyRead wins although ask.modify ~/** matches too.
			decides(eng, "write", "/home/u/.ssh/config", "deny", "denyRead ~/.ssh/**")
			-- read ~/.ssh/known_hosts: the exception lifts the deny; fsProfile.read allows.
			decides(eng, "read", "/home/u/.ssh/known_hosts", "allow", "fsProfile.read /**")
			-- write ~/.ssh/known_hosts: not denied, not in fsProfile.modify, so ask.
			decides(eng, "write", "/home/u/.ssh/known_hosts", "ask", "ask.modify ~/**")
		end)
	end)

	describe("exceptions", function()
		it("let the last matching entry of a list win", function()
			local eng = packs.engine({ top = [[return { name = "x", fsProfile = { read = { "/**" } },
				denyRead = { "!/a/keep", "/a/**", "!/a/open/**" } }]] })
			decides(eng, "read", "/a/keep", "deny", "denyRead /a/**")
			decides(eng, "read", "/a/open/x", "allow", "fsProfile.read /**")
			decides(eng, "read", "/a/other", "deny", "denyRead /a/**")
		end)

		it("carve from an included pack's list when the including pack adds them", function()
			local eng = packs.engine({
				top = [[return { name = "x", include = { "inc" }, fsProfile = { read = { "/**" } },
					denyRead = { "!/srv/**/.env.example" } }]],
				inc = 'return { name = "inc", denyRead = { "**/.env", "**/.env.*" } }',
			})
			decides(eng, "read", "/srv/app/.env.example", "allow", "fsProfile.read /**")
			decides(eng, "read", "/srv/app/.env.local", "deny", "denyRead **/.env.*")
		end)

		it("work in allow lists too", function()
			local eng = packs.engine({ top = [[return { name = "x",
				fsProfile = { modify = { "/ws/**", "!/ws/dist/**" } } }]] })
			decides(eng, "write", "/ws/src/a", "allow", "fsProfile.modify /ws/**")
			decides(eng, "write", "/ws/dist/a", "deny", "default deny")
		end)
	end)

	describe("path length", function()
		local eng = base("decide = function() return { decision = 'allow' } end,")

		it("denies a path longer than 4096 bytes before any rule, and no hook relaxes it", function()
			local long = "/ws/" .. string.rep("a", 4093)
			assert.are.equal(4097, #long)
			local v = decides(eng, "read", long, "deny", "path too long")
			assert.is_false(v.backup)
		end)

		it("judges a path of exactly 4096 bytes", function()
			local path = "/ws/" .. string.rep("a", 4092)
			assert.are.equal(4096, #path)
			decides(eng, "write", path, "allow", "fsProfile.modify ${workspace}/**")
		end)

		it("denies a requested spelling that is too long", function()
			decides(eng, "read", "/ws/a", "deny", "path too long", { requested = "/ws/" .. string.rep("b", 5000) })
		end)
	end)

	describe("resolved and requested paths", function()
		local eng = base()

		it("denies a symlink from an allowed tree into a denied one", function()
			decides(eng, "read", "/home/u/.ssh/id_rsa", "deny", "denyRead ~/.ssh/**", { requested = "/ws/key" })
		end)

		it("denies when the requested spelling is denied and the resolved one is not", function()
			decides(eng, "write", "/ws/real.txt", "deny", "denyRead **/.env", { requested = "/ws/.env" })
		end)

		it("takes an ask over an allow", function()
			decides(eng, "write", "/ws/a", "ask", "ask.modify ~/**", { requested = "/home/u/link" })
		end)

		it("judges a relative requested spelling against the deny lists only", function()
			decides(eng, "read", "/ws/real", "deny", "denyRead **/.env", { requested = ".env" })
			decides(eng, "write", "/ws/src/a.c", "allow", "fsProfile.modify ${workspace}/**", { requested = "src/a.c" })
		end)
	end)

	describe("normalisation", function()
		local eng = base()

		it("cleans '..' before matching, so it cannot climb out of an allowed tree", function()
			decides(eng, "write", "/ws/../etc/passwd", "deny", "default deny")
		end)

		it("keeps a backslash as a byte on Linux: /ws\\evil is not in /ws", function()
			decides(eng, "write", "/ws\\evil", "deny", "default deny")
		end)

		it("judges a BSD sed temp file as the file it will replace", function()
			local v = decides(eng, "write", "/ws/.!4242!.env", "deny", "denyRead **/.env")
			assert.is_truthy(v.reason:find("matched as /ws/.env", 1, true), v.reason)
			decides(eng, "write", "/ws/.!4242!main.c", "allow", "fsProfile.modify ${workspace}/**")
		end)

		it("maps /private/tmp to /tmp on macOS only", function()
			local mac = base(nil, { platform = "macos" })
			decides(mac, "write", "/private/tmp/x", "allow", "fsProfile.modify ${tmp}/**")
			decides(eng, "write", "/private/tmp/x", "deny", "default deny")
		end)

		it("matches the deny lists without regard to ASCII case on macOS only", function()
			local mac = base(nil, { platform = "macos" })
			decides(mac, "read", "/ws/.ENV", "deny", "denyRead **/.env")
			decides(eng, "read", "/ws/.ENV", "allow", "fsProfile.read /**")
		end)

		it("keeps macOS exceptions exact, so case folding only adds denies", function()
			local mac = base(nil, { platform = "macos" })
			decides(mac, "read", "/home/u/.SSH/KNOWN_HOSTS", "deny", "denyRead ~/.ssh/**")
			decides(mac, "read", "/home/u/.ssh/known_hosts", "allow", "fsProfile.read /**")
		end)

		it("also checks the /private spelling against the deny lists on macOS", function()
			local mac = packs.engine({ top = [[return { name = "x", fsProfile = { read = { "/**" } },
				denyRead = { "/private/var/db/**" } }]] }, { platform = "macos" })
			decides(mac, "read", "/private/var/db/x", "deny", "denyRead /private/var/db/**")
		end)

		it("keeps a deny-list hit on another spelling final, even where the clean form is a default deny", function()
			local mac = packs.engine({ top = [[return { name = "x",
				denyModify = { "/private/var/db/**" },
				decide = function(req, v) return { decision = "allow", rule = "hook allows" } end }]] },
				{ platform = "macos" })
			decides(mac, "write", "/private/var/db/x", "deny", "denyModify /private/var/db/**")
			decides(mac, "write", "/opt/x", "allow", "hook allows")
		end)
	end)

	describe("hard links", function()
		it("asks before changing a file with more than one link, by default", function()
			local eng = base()
			decides(eng, "write", "/ws/a", "ask", "hardlinks ask", { exists = true, nlink = 2 })
			decides(eng, "chmod", "/ws/a", "ask", "hardlinks ask", { exists = true, nlink = 3 })
		end)

		it("leaves single-link files, new files, reads, directories and name changes alone", function()
			local eng = base()
			decides(eng, "write", "/ws/a", "allow", "fsProfile.modify ${workspace}/**", { exists = true, nlink = 1 })
			decides(eng, "create", "/ws/a", "allow", "fsProfile.modify ${workspace}/**", { exists = false, nlink = 2 })
			decides(eng, "read", "/ws/a", "allow", "fsProfile.read /**", { exists = true, nlink = 2 })
			decides(eng, "chmod", "/ws/d", "allow", "fsProfile.modify ${workspace}/**",
				{ exists = true, nlink = 5, type = "dir" })
			decides(eng, "delete", "/ws/a", "allow", "fsProfile.modify ${workspace}/**", { exists = true, nlink = 2 })
			decides(eng, "rename-from", "/ws/a", "allow", "fsProfile.modify ${workspace}/**", { exists = true, nlink = 2 })
		end)

		it("denies with hardlinks = deny and allows with hardlinks = allow", function()
			decides(base('hardlinks = "deny",'), "write", "/ws/a", "deny", "hardlinks deny", { exists = true, nlink = 2 })
			decides(base('hardlinks = "allow",'), "write", "/ws/a", "allow", "fsProfile.modify ${workspace}/**",
				{ exists = true, nlink = 2 })
		end)

		it("never turns a deny into an ask", function()
			decides(base(), "write", "/etc/passwd", "deny", "default deny", { exists = true, nlink = 2 })
		end)
	end)

	describe("decide hooks", function()
		it("may tighten an allow", function()
			local eng = base([[decide = function(req, v)
				if req.path:match("%.lock$") then
					return { decision = "deny", rule = "decide lock", reason = "lock files stay" }
				end
			end,]])
			local v = decides(eng, "write", "/ws/Cargo.lock", "deny", "decide lock")
			assert.are.equal("lock files stay", v.reason)
			decides(eng, "write", "/ws/main.rs", "allow", "fsProfile.modify ${workspace}/**")
		end)

		it("cannot relax a denyRead or denyModify deny: it is applied again after the hook", function()
			local eng = base("decide = function() return { decision = 'allow', rule = 'let it be' } end,")
			local v = decides(eng, "read", "/home/u/.ssh/id_rsa", "deny", "denyRead ~/.ssh/**")
			assert.is_truthy(v.reason:find("A decide hook answered allow; the deny stands.", 1, true), v.reason)
			decides(eng, "write", "/ws/.envrc", "deny", "denyModify **/.envrc")
		end)

		it("may answer anything else, as DESIGN §4.2 allows (here: ask instead of default deny)", function()
			local eng = base([[decide = function(req, v)
				if v.rule == "default deny" and req.path:match("^/opt/") then
					return { decision = "ask" }
				end
			end,]])
			decides(eng, "write", "/opt/tool", "ask", "decide top.lua")
		end)

		it("keeps the verdict when the hook returns nil or the verdict it was given", function()
			decides(base("decide = function() return nil end,"), "write", "/ws/a", "allow", "fsProfile.modify ${workspace}/**")
			decides(base("decide = function(req, v) return v end,"), "write", "/ws/a", "allow", "fsProfile.modify ${workspace}/**")
		end)

		it("denies when the hook fails, naming the error with its file and line", function()
			local eng = base("decide = function(req) local t = nil; return t.x end,")
			local v = decides(eng, "write", "/ws/a", "deny", "decide error")
			assert.is_truthy(v.reason:find("/r/top.lua:%d+: attempt to index"), v.reason)
		end)

		it("denies when the hook returns something that is not a verdict", function()
			local RETURNS = {
				{ '"allow"', "instead of a verdict table" },
				{ '{ decision = "maybe" }', 'whose decision is maybe' },
				{ '{ decision = "allow", rule = 5 }', "whose rule is a number" },
				{ '{ decision = "allow", reason = {} }', "whose reason is a table" },
			}
			for _, r in ipairs(RETURNS) do
				local eng = base("decide = function() return " .. r[1] .. " end,")
				local v = decides(eng, "write", "/ws/a", "deny", "decide error")
				assert.is_truthy(v.reason:find(r[2], 1, true), v.reason)
			end
		end)

		it("denies, without raising, when the hook raises a table", function()
			local eng = base("decide = function() error({}) end,")
			decides(eng, "write", "/ws/a", "deny", "decide error")
		end)

		it("keeps a deny-list deny when the hook fails on it", function()
			local eng = base("decide = function() error('boom') end,")
			local v = decides(eng, "read", "/ws/.env", "deny", "denyRead **/.env")
			assert.is_truthy(v.reason:find("also failed", 1, true), v.reason)
		end)

		it("gets a copy of the request, so it cannot change what the engine judges", function()
			local eng = base("decide = function(req) req.path = '/tmp/x'; req.op = 'read' end,")
			local v = decides(eng, "write", "/ws/a", "allow", "fsProfile.modify ${workspace}/**")
			assert.is_true(v.backup)
		end)

		it("chains included packs' hooks before the including pack's", function()
			local eng = packs.engine({
				top = [[return { name = "t", include = { "inc" }, fsProfile = { modify = { "/ws/**" } },
					decide = function(req, v)
						if v.rule == "inc says ask" then return { decision = "deny", rule = "top saw " .. v.rule } end
					end }]],
				inc = [[return { name = "inc", decide = function(req, v)
					if req.path == "/ws/x" then return { decision = "ask", rule = "inc says ask" } end
				end }]],
			})
			decides(eng, "write", "/ws/x", "deny", "top saw inc says ask")
			decides(eng, "write", "/ws/y", "allow", "fsProfile.modify /ws/**")
		end)
	end)

	describe("backup flag", function()
		local eng = base()

		it("is true for a change outside backup.skip", function()
			assert.is_true(verdict(eng, "write", "/ws/a").backup)
			assert.is_true(verdict(eng, "delete", "/ws/a").backup)
		end)

		it("is false for a read", function()
			assert.is_false(verdict(eng, "read", "/ws/a").backup)
		end)

		it("is false where backup.skip matches, and true again under its exception", function()
			assert.is_false(verdict(eng, "write", "/tmp/scratch").backup)
			assert.is_true(verdict(eng, "write", "/tmp/keep/a").backup)
		end)
	end)

	describe("malformed requests", function()
		local eng = base()
		local BAD = {
			{ "not a table", "a string" },
			{ "an unknown op", { op = "open", path = "/ws/a" } },
			{ "a path that is not a string", { op = "read", path = 5 } },
			{ "a relative path", { op = "read", path = "ws/a" } },
			{ "a NUL byte", { op = "read", path = "/ws/a\0/b" } },
			{ "a requested that is not a string", { op = "read", path = "/ws/a", requested = true } },
		}
		for _, b in ipairs(BAD) do
			it("are denied, without raising, for " .. b[1], function()
				local v = eng:evaluate(b[2])
				assert.are.same({ "deny", "malformed request", false }, { v.decision, v.rule, v.backup })
				assert.is_string(v.reason)
			end)
		end

		it("include a missing request", function()
			assert.are.equal("deny", eng:evaluate(nil).decision)
		end)
	end)

	describe("verdicts", function()
		it("always carry decision, rule, backup, reason and hint", function()
			local eng = base()
			for _, path in ipairs({ "/ws/a", "/etc/x", "/home/u/x", "/ws/.env" }) do
				for _, op in ipairs(ALL_OPS) do
					local v = verdict(eng, op, path)
					assert.is_truthy(({ allow = true, deny = true, ask = true })[v.decision])
					assert.is_string(v.rule)
					assert.is_boolean(v.backup)
					assert.is_string(v.reason)
					assert.is_string(v.hint)
					if v.decision ~= "allow" then
						assert.are_not.equal("", v.reason)
					end
				end
			end
		end)

		it("explain an allow only when asked (req.explain), a deny and an ask always", function()
			local eng = base()
			local plain = eng:evaluate({ op = "write", path = "/ws/a" })
			assert.are.same({ "allow", "", "" }, { plain.decision, plain.reason, plain.hint })
			local asked = eng:evaluate({ op = "write", path = "/ws/a", explain = true })
			assert.are.equal("allow", asked.decision)
			assert.is_truthy(asked.reason:find("write of /ws/a is allowed by", 1, true), asked.reason)
			assert.are_not.equal("", asked.hint)
			local denied = eng:evaluate({ op = "write", path = "/ws/.env" })
			assert.are.equal("deny", denied.decision)
			assert.are_not.equal("", denied.reason)
		end)
	end)

	describe("summary", function()
		local eng = base('reads = "broker", env = { pass = { "PATH", "HOME", "PATH" } },')
		local s = eng:summary()

		it("lists the globs with variables and '~' expanded, exceptions kept", function()
			assert.are.same({ "/**" }, s.read)
			assert.are.same({ "/ws/**", "/tmp/**" }, s.modify)
			assert.are.same({ "/home/u/.ssh/**", "!/home/u/.ssh/known_hosts", "**/.env" }, s.denyRead)
			assert.are.same({ "**/.git/hooks/**", "**/.envrc" }, s.denyModify)
			assert.are.same({ "/home/u/**" }, s.ask)
			assert.are.same({}, s.ask_read)
		end)

		it("gives the settings, with defaults for what the pack leaves out", function()
			assert.are.equal("broker", s.reads)
			assert.are.equal("trash", s.delete_mode)
			assert.are.equal("host", s.network)
			assert.are.same({ "PATH", "HOME" }, s.env_pass)
			assert.are.same({ maxSizeMB = 10, skip = { "/tmp/**", "!/tmp/keep/**" }, onTooLarge = "ask", quotaMB = 5120,
					durability = "strict" },
				s.backup)
		end)

		it("takes backup.durability from the including pack over an included one", function()
			local eng = packs.engine({
				top = 'return { name = "x", include = { "inc" }, backup = { durability = "strict" } }',
				inc = 'return { name = "inc", backup = { durability = "batched" } }',
			})
			assert.are.equal("strict", eng:summary().backup.durability)
			eng = packs.engine({
				top = 'return { name = "x", include = { "inc" } }',
				inc = 'return { name = "inc", backup = { durability = "batched" } }',
			})
			assert.are.equal("batched", eng:summary().backup.durability)
		end)

		it("names the base directory of each glob for the mount plan", function()
			assert.are.same({ glob = "/ws/**", base = "/ws", kind = "tree", except = false }, s.bases.modify[1])
			assert.are.same({ glob = "/home/u/.ssh/known_hosts", base = "/home/u/.ssh/known_hosts", kind = "exact",
				except = true }, s.bases.denyRead[2])
		end)

		it("escapes glob characters that come from a variable's value", function()
			local odd = base(nil, { vars = { workspace = "/w/[x]", home = "/home/u", tmp = "/tmp", state = "/st" } })
			assert.are.same({ "/w/[[]x[]]/**", "/tmp/**" }, odd:summary().modify)
		end)
	end)
end)
