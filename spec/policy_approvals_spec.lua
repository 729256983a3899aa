-- Specs for policy.approvals, directly and through an engine: scopes,
-- exact keys, never over a deny, and surviving a reload.

local approvals = require("policy.approvals")
local packs = require("spec.helpers.packs")

local PACK = [[
return {
	name = "t",
	fsProfile = { read = { "/**" }, modify = { "/ws/**" } },
	denyRead = { "~/.ssh/**" },
	ask = { modify = { "~/**" } },
}
]]

local function engine()
	return packs.engine({ top = PACK })
end

local function write(eng, path, more)
	local req = { op = "write", path = path, exists = true, dev = 10, ino = 500, nlink = 1, session = "s1" }
	for k, v in pairs(more or {}) do
		req[k] = v
	end
	return eng:evaluate(req)
end

local function is_op(op)
	return op == "write" or op == "read" or op == "create"
end

describe("policy.approvals", function()
	describe("through an engine", function()
		it("turns an ask into an allow once, then asks again", function()
			local eng = engine()
			assert.are.equal("ask", write(eng, "/home/u/.bashrc").decision)
			assert.is_true(eng:approve({ op = "write", path = "/home/u/.bashrc", dev = 10, ino = 500, scope = "once" }))
			local v = write(eng, "/home/u/.bashrc")
			assert.are.same({ "allow", "approved:once (ask.modify ~/**)" }, { v.decision, v.rule })
			assert.is_true(v.backup)
			assert.are.equal("ask", write(eng, "/home/u/.bashrc").decision)
			assert.are.same({}, eng:approvals())
		end)

		it("names where each verdict came from in its origin", function()
			local eng = engine()
			assert.are.equal("rules", write(eng, "/home/u/.bashrc").origin)
			assert.are.equal("rules", write(eng, "/ws/a").origin)
			eng:approve({ op = "write", path = "/home/u/.bashrc", dev = 10, ino = 500, scope = "once" })
			assert.are.equal("approval-once", write(eng, "/home/u/.bashrc").origin)
			eng:approve({ op = "write", path = "/home/u/.bashrc", dev = 10, ino = 500, scope = "session" })
			assert.are.equal("approval-session", write(eng, "/home/u/.bashrc").origin)
			local hooked = packs.engine({ top = [[return { name = "h", fsProfile = { modify = { "/ws/**" } },
				decide = function(req) if req.path == "/ws/boom" then error("boom") end
					return { decision = "allow", rule = "approved:once (fake)" } end }]] })
			assert.are.same({ "allow", "rules" }, { write(hooked, "/ws/a").decision, write(hooked, "/ws/a").origin })
			assert.are.same({ "deny", "failure" }, { write(hooked, "/ws/boom").decision, write(hooked, "/ws/boom").origin })
			assert.are.equal("failure", eng:evaluate(setmetatable({}, { __index = function() error("x") end })).origin)
		end)

		it("answers a peek without using up a once approval", function()
			local eng = engine()
			assert.is_true(eng:approve({ op = "write", path = "/home/u/.bashrc", dev = 10, ino = 500, scope = "once" }))
			assert.are.equal("allow", write(eng, "/home/u/.bashrc", { peek = true }).decision)
			assert.are.equal("allow", write(eng, "/home/u/.bashrc", { peek = true }).decision)
			-- The real request still finds it, and uses it up.
			assert.are.equal("allow", write(eng, "/home/u/.bashrc").decision)
			assert.are.equal("ask", write(eng, "/home/u/.bashrc", { peek = true }).decision)
		end)

		it("keeps a session approval for every later request", function()
			local eng = engine()
			eng:approve({ op = "write", path = "/home/u/.bashrc", dev = 10, ino = 500, scope = "session" })
			for _ = 1, 3 do
				local v = write(eng, "/home/u/.bashrc")
				assert.are.same({ "allow", "approved:session (ask.modify ~/**)" }, { v.decision, v.rule })
			end
			assert.are.equal(1, #eng:approvals())
		end)

		it("never overrides a deny", function()
			local eng = engine()
			eng:approve({ op = "write", path = "/home/u/.ssh/config", dev = 10, ino = 500, scope = "session" })
			eng:approve({ op = "write", path = "/etc/hosts", dev = 10, ino = 500, scope = "session" })
			assert.are.same({ "deny", "denyRead ~/.ssh/**" },
				{ write(eng, "/home/u/.ssh/config").decision, write(eng, "/home/u/.ssh/config").rule })
			assert.are.same({ "deny", "default deny" },
				{ write(eng, "/etc/hosts").decision, write(eng, "/etc/hosts").rule })
		end)

		it("is keyed by dev and ino: another inode at the same path is not approved", function()
			local eng = engine()
			eng:approve({ op = "write", path = "/home/u/.bashrc", dev = 10, ino = 500, scope = "session" })
			assert.are.equal("ask", write(eng, "/home/u/.bashrc", { ino = 501 }).decision)
			assert.are.equal("ask", write(eng, "/home/u/.bashrc", { dev = 11 }).decision)
			assert.are.equal("allow", write(eng, "/home/u/.bashrc").decision)
		end)

		it("is keyed by op and path", function()
			local eng = engine()
			eng:approve({ op = "write", path = "/home/u/.bashrc", dev = 10, ino = 500, scope = "session" })
			assert.are.equal("ask", write(eng, "/home/u/.bashrc", { op = "delete" }).decision)
			assert.are.equal("ask", write(eng, "/home/u/.profile").decision)
		end)

		it("approves a path that does not exist yet only while it still does not exist", function()
			local eng = engine()
			eng:approve({ op = "create", path = "/home/u/new.txt", scope = "session" })
			local new = { op = "create", path = "/home/u/new.txt", exists = false, session = "s1" }
			assert.are.equal("allow", eng:evaluate(new).decision)
			local now = { op = "create", path = "/home/u/new.txt", exists = true, dev = 10, ino = 9, session = "s1" }
			assert.are.equal("ask", eng:evaluate(now).decision)
		end)

		it("treats 500 and 500.0 as the same inode", function()
			local eng = engine()
			eng:approve({ op = "write", path = "/home/u/.bashrc", dev = 10.0, ino = 500.0, scope = "once" })
			assert.are.equal("allow", write(eng, "/home/u/.bashrc").decision)
		end)

		it("approves a hard-link ask for that inode", function()
			local eng = engine()
			assert.are.equal("hardlinks ask", write(eng, "/ws/a", { nlink = 2 }).rule)
			eng:approve({ op = "write", path = "/ws/a", dev = 10, ino = 500, scope = "once" })
			assert.are.equal("approved:once (hardlinks ask)", write(eng, "/ws/a", { nlink = 2 }).rule)
		end)

		it("binds an approval to its session when one is named", function()
			local eng = engine()
			eng:approve({ op = "write", path = "/home/u/.bashrc", dev = 10, ino = 500, scope = "session", session = "s1" })
			assert.are.equal("ask", write(eng, "/home/u/.bashrc", { session = "s2" }).decision)
			assert.are.equal("allow", write(eng, "/home/u/.bashrc", { session = "s1" }).decision)
		end)

		it("refuses a malformed approval with a sentence", function()
			local eng = engine()
			local ok, err = eng:approve({ op = "write", path = "/home/u/.bashrc", scope = "forever" })
			assert.is_nil(ok)
			assert.are.equal('scope: expected "once" or "session", got forever', err)
			ok, err = eng:approve({ op = "open", path = "/x" })
			assert.is_nil(ok)
			assert.are.equal("op: expected a known op, got open", err)
			ok, err = eng:approve({ op = "write", path = "/x", ino = "abc" })
			assert.is_nil(ok)
			assert.are.equal("ino: expected a whole number, got abc", err)
		end)

		it("survive a reload through approvals() and restore_approvals()", function()
			local old = engine()
			old:approve({ op = "write", path = "/home/u/.bashrc", dev = 10, ino = 500, scope = "session" })
			old:approve({ op = "write", path = "/home/u/.profile", dev = 10, ino = 500, scope = "once" })
			local saved = old:approvals()
			assert.are.equal(2, #saved)
			for _, a in ipairs(saved) do
				assert.are.equal(nil, getmetatable(a))
			end

			local new = engine()
			assert.are.equal("ask", write(new, "/home/u/.bashrc").decision)
			local n, problems = new:restore_approvals(saved)
			assert.are.equal(2, n)
			assert.are.same({}, problems)
			assert.are.equal("allow", write(new, "/home/u/.bashrc").decision)
			assert.are.equal("allow", write(new, "/home/u/.bashrc").decision)
			assert.are.equal("allow", write(new, "/home/u/.profile").decision)
			assert.are.equal("ask", write(new, "/home/u/.profile").decision)
		end)

		it("are checked again after a reload: a pack that now denies wins", function()
			local old = engine()
			old:approve({ op = "write", path = "/home/u/.bashrc", dev = 10, ino = 500, scope = "session" })
			local stricter = packs.engine({ top = [[return { name = "t2", fsProfile = { read = { "/**" } },
				denyModify = { "~/.bashrc" }, ask = { modify = { "~/**" } } }]] })
			stricter:restore_approvals(old:approvals())
			assert.are.same({ "deny", "denyModify ~/.bashrc" },
				{ write(stricter, "/home/u/.bashrc").decision, write(stricter, "/home/u/.bashrc").rule })
		end)

		it("report entries they cannot restore", function()
			local eng = engine()
			local n, problems = eng:restore_approvals({
				{ op = "write", path = "/home/u/a", scope = "once" },
				{ op = "write", scope = "once" },
			})
			assert.are.equal(1, n)
			assert.are.same({ "approvals[2]: path: expected the absolute real path, got nil" }, problems)
		end)
	end)

	describe("the store", function()
		it("prefers a session approval and keeps a once approval for later", function()
			local store = approvals.new(is_op)
			store:add({ op = "write", path = "/a", scope = "once", session = "s1" })
			store:add({ op = "write", path = "/a", scope = "session" })
			assert.are.equal("session", store:take("write", "/a", nil, nil, "s1"))
			assert.are.equal(2, #store:list())
		end)

		it("does not upgrade a session approval into a once approval", function()
			local store = approvals.new(is_op)
			store:add({ op = "write", path = "/a", scope = "session" })
			store:add({ op = "write", path = "/a", scope = "once" })
			assert.are.equal("session", store:take("write", "/a"))
			assert.are.equal("session", store:take("write", "/a"))
		end)

		it("allows one request for a once approval given twice", function()
			local store = approvals.new(is_op)
			store:add({ op = "write", path = "/a", scope = "once" })
			store:add({ op = "write", path = "/a", scope = "once" })
			assert.are.equal("once", store:take("write", "/a"))
			assert.is_nil(store:take("write", "/a"))
			assert.are.same({}, store:list())
		end)

		it("forgets used-up approvals, so a long session does not pile them up", function()
			local store = approvals.new(is_op)
			for i = 1, 500 do
				store:add({ op = "write", path = "/a/" .. i, scope = "once" })
				assert.are.equal("once", store:take("write", "/a/" .. i))
			end
			assert.is_true(#store.order <= 130)
			assert.is_nil(next(store.by_key))
			assert.are.same({}, store:list())
		end)

		it("refuses a relative path", function()
			local ok, err = approvals.new(is_op):add({ op = "write", path = "a/b" })
			assert.is_nil(ok)
			assert.are.equal("path: expected the absolute real path, got 'a/b'", err)
		end)

		it("keys on every part: op, path, dev, ino", function()
			local a = approvals.key("write", "/a", 1, 2)
			assert.are_not.equal(a, approvals.key("read", "/a", 1, 2))
			assert.are_not.equal(a, approvals.key("write", "/b", 1, 2))
			assert.are_not.equal(a, approvals.key("write", "/a", 3, 2))
			assert.are_not.equal(a, approvals.key("write", "/a", 1, 3))
			assert.are_not.equal(a, approvals.key("write", "/a"))
			assert.are.equal(a, approvals.key("write", "/a", 1.0, 2))
		end)
	end)
end)
