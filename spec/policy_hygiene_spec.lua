-- Specs for how the policy modules are written: each runs in the
-- environment the C host gives (no io, os only time/clock, no debug, text
-- chunks only) and follows the module layout of STYLE.md.

local packs = require("spec.helpers.packs")

local MODULES = {
	policy = "lua/policy/init.lua",
	["policy.glob"] = "lua/policy/glob.lua",
	["policy.normalize"] = "lua/policy/normalize.lua",
	["policy.pack"] = "lua/policy/pack.lua",
	["policy.engine"] = "lua/policy/engine.lua",
	["policy.approvals"] = "lua/policy/approvals.lua",
}

local function read(path)
	local f = assert(io.open(packs.root() .. "/" .. path))
	local s = f:read("a")
	f:close()
	return s
end

-- The globals the C host leaves (core/lua_host.c): the base library with
-- text-only load and loadfile and no dofile, string, table, math, utf8,
-- os.time/os.clock, and a require that serves lpeg and the policy modules.
local function host_env()
	local env = {
		assert = assert, error = error, ipairs = ipairs, next = next, pairs = pairs,
		pcall = pcall, rawequal = rawequal, rawget = rawget, rawlen = rawlen,
		rawset = rawset, select = select, setmetatable = setmetatable,
		getmetatable = getmetatable, tonumber = tonumber, tostring = tostring,
		type = type, xpcall = xpcall, _VERSION = _VERSION,
		string = string, table = table, math = math, utf8 = utf8,
		os = { time = os.time, clock = os.clock },
	}
	env.loadfile = function(path, mode, e)
		return loadfile(path, "t", e)
	end
	local loaded = { lpeg = require("lpeg") }
	env.require = function(name)
		if loaded[name] == nil then
			local file = assert(MODULES[name], "the host has no module " .. name)
			local chunk = assert(load(read(file), "@" .. file, "t", env))
			loaded[name] = chunk(name)
		end
		return loaded[name]
	end
	env._G = env
	-- As in the host, an undefined global is an error, read or written.
	return setmetatable(env, {
		__index = function(_, k)
			error("undefined global '" .. tostring(k) .. "'", 2)
		end,
		__newindex = function(_, k)
			error("assignment to undefined global '" .. tostring(k) .. "'", 2)
		end,
	})
end

describe("policy modules", function()
	it("load and judge in the C host's environment", function()
		local env = host_env()
		local policy = env.require("policy")
		local rules = packs.rules_dir()
		local eng, err = policy.load({
			pack = rules .. "/default.lua", rules_dirs = { rules },
			vars = { workspace = "/w", home = "/h", tmp = "/tmp", state = "/s" },
		})
		assert.is_nil(err)
		assert.are.equal("allow", eng:evaluate({ op = "write", path = "/w/a" }).decision)
		assert.are.equal("deny", eng:evaluate({ op = "read", path = "/h/.ssh/id_rsa" }).decision)
	end)

	for name, file in pairs(MODULES) do
		describe(name, function()
			local src = read(file)

			it("starts with a header comment", function()
				assert.is_truthy(src:match("^%-%- [^\n]+\n%-%- [^\n]+\n"), file)
			end)

			it("sets local _ENV = nil after its requires", function()
				local env_at = src:find("\nlocal _ENV = nil\n", 1, true)
				assert.is_truthy(env_at, file)
				local last_require = 0
				for pos in src:gmatch("()require%(") do
					last_require = pos
				end
				assert.is_true(last_require < env_at)
			end)

			it("uses no io, os (beyond time and clock), debug, load, dofile or package", function()
				local code = src:gsub("%-%-[^\n]*", "")
				for _, bad in ipairs({ "io%.", "debug%.", "package%.", "dofile", "loadstring", "[^%w_%.:]load%(",
					"os%.execute", "os%.getenv", "os%.remove", "os%.rename", "os%.exit", "os%.tmpname" }) do
					assert.is_nil(code:find(bad), file .. " uses " .. bad)
				end
			end)

			it("reads no global after _ENV is gone", function()
				local luac = io.popen("luac5.4 -l -p " .. packs.root() .. "/" .. file .. " 2>&1")
				local listing = luac:read("a")
				luac:close()
				-- With _ENV a nil local, a global access compiles to an index of
				-- that local or upvalue, never to GETTABUP/SETTABUP on _ENV
				-- after the header's captures; any such access raises at run time.
				local env_line = select(2, src:sub(1, src:find("\nlocal _ENV = nil\n", 1, true)):gsub("\n", "")) + 1
				for line, rest in listing:gmatch("%[(%d+)%]%s+([^\n]*)") do
					if tonumber(line) > env_line and rest:find("TABUP") and rest:find("_ENV") then
						error(file .. ":" .. line .. ": global access after local _ENV = nil: " .. rest)
					end
				end
			end)
		end)
	end
end)
