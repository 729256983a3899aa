-- policy — the entry point the C core calls: load a rule pack into an
-- engine that judges each file access (DESIGN §4). A pack is loaded whole,
-- its self-tests pass, or it is refused with one error string.

local engine = require("policy.engine")
local pack = require("policy.pack")

local ipairs, pcall, tostring = ipairs, pcall, tostring

local _ENV = nil

local M = {}

M.VERSION = "0.1.0"

local function build(opts)
	local loaded, err = pack.load(opts)
	if loaded == nil then
		return nil, err
	end
	local ctx = { vars = loaded.vars, platform = loaded.platform, files = loaded.files }
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
