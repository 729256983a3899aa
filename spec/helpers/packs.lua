-- Helpers for the policy specs: packs held in memory (served through the
-- loadfile override, as the C host's loadfile would serve files), temporary
-- pack directories on disk, and the path of the shipped rules.

local policy = require("policy")

local M = {}

--- The variables most specs load packs with.
M.VARS = { workspace = "/ws", home = "/home/u", tmp = "/tmp", state = "/st" }

--- A loadfile that serves `files` (path -> source) and reports a missing
-- file the way Lua's own loadfile does.
function M.loader(files)
	return function(path, mode, env)
		local src = files[path]
		if src == nil then
			return nil, "cannot open " .. path .. ": No such file or directory"
		end
		return load(src, "@" .. path, mode, env)
	end
end

local function copy(t)
	local out = {}
	for k, v in pairs(t) do
		out[k] = v
	end
	return out
end

--- Loads an in-memory pack. `files` maps names under /r ("top") or
-- absolute paths to sources; the top pack is /r/top.lua unless opts.pack
-- says otherwise. opts.vars replaces M.VARS.
function M.load(files, opts)
	opts = opts or {}
	local abs = {}
	for name, src in pairs(files) do
		if name:sub(1, 1) == "/" then
			abs[name] = src
		else
			abs["/r/" .. name .. ".lua"] = src
		end
	end
	return policy.load({
		pack = opts.pack or "/r/top.lua",
		rules_dirs = opts.rules_dirs or { "/r" },
		vars = opts.vars or copy(M.VARS),
		platform = opts.platform,
		loadfile = M.loader(abs),
	})
end

--- Like M.load, but raises with the load error, for specs about verdicts.
function M.engine(files, opts)
	local eng, err = M.load(files, opts)
	if eng == nil then
		error("pack failed to load: " .. tostring(err), 2)
	end
	return eng
end

--- The repository root (specs run from it).
function M.root()
	local pwd = os.getenv("PWD")
	if pwd == nil or pwd == "" then
		local p = io.popen("pwd")
		pwd = p:read("*l")
		p:close()
	end
	return pwd
end

--- The absolute path of the shipped rule packs.
function M.rules_dir()
	return M.root() .. "/lua/rules"
end

--- Makes a fresh temporary directory and returns its path.
function M.tmpdir()
	local name = os.tmpname()
	os.remove(name)
	assert(os.execute("mkdir -m 700 '" .. name .. "'"))
	return name
end

--- Writes `content` to `path`.
function M.write(path, content)
	local f = assert(io.open(path, "w"))
	f:write(content)
	f:close()
end

--- Removes a directory made by tmpdir().
function M.rmtree(path)
	assert(path:match("^/tmp/"), "refusing to remove " .. path)
	os.execute("rm -rf '" .. path .. "'")
end

return M
