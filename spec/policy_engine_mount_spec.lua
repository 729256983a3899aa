-- Specs for what policy.engine gives the runtime's mount plan beyond
-- summary()'s globs: the rule names of each glob, and denied_read(), the
-- cheap check a workspace scan runs per entry.

local packs = require("spec.helpers.packs")

local PACK = [[
return {
	name = "mount",
	fsProfile = { read = { "/**" }, modify = { "${workspace}/**", "${tmp}/{a,b}/**" } },
	denyRead = { "~/.ssh/**", "!~/.ssh/known_hosts", "**/.env" },
	ask = { modify = { "~/**" } },
	decide = function(req, verdict) return verdict end,
}
]]

describe("policy.engine for the mount plan", function()
	local eng = packs.engine({ top = PACK })

	describe("summary().rules", function()
		local s = eng:summary()

		it("names each expanded glob as a verdict would, in the order of bases", function()
			assert.are.same({ "fsProfile.modify ${workspace}/**", "fsProfile.modify ${tmp}/{a,b}/**",
				"fsProfile.modify ${tmp}/{a,b}/**" }, s.rules.modify)
			assert.are.equal(#s.bases.modify, #s.rules.modify)
			assert.are.equal("/tmp/b/**", s.bases.modify[3].glob)
			assert.are.same({ "denyRead ~/.ssh/**", "denyRead !~/.ssh/known_hosts", "denyRead **/.env" },
				s.rules.denyRead)
			assert.are.same({ "ask.modify ~/**" }, s.rules.ask)
			assert.are.same({}, s.rules.ask_read)
		end)
	end)

	describe("denied_read", function()
		it("names the denyRead rule that hides a path", function()
			assert.are.equal("denyRead **/.env", eng:denied_read("/ws/sub/.env"))
			assert.are.equal("denyRead ~/.ssh/**", eng:denied_read("/home/u/.ssh"))
			assert.are.equal("denyRead ~/.ssh/**", eng:denied_read("/home/u/.ssh/id_ed25519"))
		end)

		it("honours exceptions and ignores the other lists", function()
			assert.is_nil(eng:denied_read("/home/u/.ssh/known_hosts"))
			assert.is_nil(eng:denied_read("/ws/a.c"))
			assert.is_nil(eng:denied_read("/etc/shadow"))
		end)

		it("agrees with evaluate() on reads", function()
			for _, path in ipairs({ "/ws/.env", "/home/u/.ssh/config", "/home/u/.ssh/known_hosts", "/ws/x" }) do
				local v = eng:evaluate({ op = "read", path = path, exists = false })
				local rule = eng:denied_read(path)
				if rule ~= nil then
					assert.are.same({ "deny", rule }, { v.decision, v.rule })
				else
					assert.are_not.equal("denyRead", v.rule:sub(1, 8))
				end
			end
		end)

		it("returns nil for what is not an absolute path", function()
			assert.is_nil(eng:denied_read("ws/.env"))
			assert.is_nil(eng:denied_read(nil))
			assert.is_nil(eng:denied_read("/" .. string.rep("a", 5000) .. "/.env"))
		end)
	end)
end)
