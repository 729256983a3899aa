-- policy — the entry point the C core calls: load a rule pack into an
-- engine that judges each file access (DESIGN §4). A pack is loaded whole,
-- its self-tests pass, or it is refused with one error string.

local engine = require("policy.engine")
local pack = require("policy.pack")

local ipairs, pairs, pcall, tostring = ipairs, pairs, pcall, tostring
local table_concat, table_sort = table.concat, table.sort

local _ENV = nil

local M = {}

M.VERSION = "0.1.0"

-- The key under which opts.tests_cache (the core's) remembers that the
-- self-tests of exactly this code passed: the digest of every file the
-- state loaded (engine and packs), with the variables and the platform.
local function tests_key(opts, loaded)
	local cache = opts.tests_cache
	if cache == nil then
		return nil
	end
	local names, parts = {}, { "platform=" .. tostring(loaded.platform) }
	for name in pairs(loaded.vars) do
		names[#names + 1] = name
	end
	table_sort(names)
	for _, name in ipairs(names) do
		parts[#parts + 1] = name .. "=" .. tostring(loaded.vars[name])
	end
	return cache.key(table_concat(parts, "\0"))
end

local function build(opts)
	local loaded, err = pack.load(opts)
	if loaded == nil then
		return nil, err
	end
	local ctx = { vars = loaded.vars, platform = loaded.platform, files = loaded.files }
	local key = tests_key(opts, loaded)
	if key ~= nil and opts.tests_cache.passed(key) then
		return engine.new(pack.merge(loaded.root), ctx)
	end
	-- Every pack file's own tests run against the engine built from that
	-- file and what it includes; the including pack's tests run last,
	-- against the whole.
	local eng
	for _, node in ipairs(pack.post_order(loaded.root)) do
		eng = engine.new(pack.merge(node), ctx)
		local ok, terr = engine.self_test(eng, node)
		if not ok then
			return nil, terr
		end
	end
	if key ~= nil then
		opts.tests_cache.record(key)
	end
	return eng
end

--- Loads a pack: policy.load{ pack =, rules_dirs =, vars =, platform =,
-- loadfile = (tests only) }. Returns the engine, or nil and one string that
-- names the file and the line, field path or failing self-test.
function M.load(opts)
	local ok, eng, err = pcall(build, opts)
	if not ok then
		return nil, "policy.load failed: " .. tostring(eng)
	end
	return eng, err
end

return M
