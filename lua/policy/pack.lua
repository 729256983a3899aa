-- policy.pack — loads a rule pack and the packs it includes, checks every
-- field, and compiles every glob. Errors name the file and the field path;
-- syntax and runtime errors keep the file:line that Lua reports.

local glob = require("policy.glob")
local normalize = require("policy.normalize")

local string_find, string_format = string.find, string.format
local string_sub = string.sub
local table_concat, table_sort = table.concat, table.sort
local math_type = math.type
local assert, error, ipairs, next, pairs = assert, error, ipairs, next, pairs
local pcall, select, setmetatable = pcall, select, setmetatable
local tostring, tonumber, type = tostring, tonumber, type
local host_loadfile = loadfile
-- The host leaves only os.time and os.clock; packs get the same two.
local os_time = os and os.time
local os_clock = os and os.clock
local lib_string, lib_table, lib_math, lib_utf8 = string, table, math, utf8

local _ENV = nil

local M = {}

--- Every op a request or a self-test may name.
M.OPS = {
	read = true, write = true, create = true, delete = true,
	["rename-from"] = true, ["rename-to"] = true, mkdir = true, link = true,
	symlink = true, chmod = true, chown = true, utimes = true, xattr = true,
	touch = true,
}

--- Defaults for the scalar settings a pack may leave out.
M.DEFAULTS = {
	maxSizeMB = 10,
	onTooLarge = "ask",
	quotaMB = 5120,
	durability = "strict",
	delete_mode = "trash",
	reads = "mask",
	hardlinks = "ask",
	network = "host",
}

--- The glob lists of a pack, by the name rules are reported under.
M.LISTS = {
	"fsProfile.read", "fsProfile.modify", "denyRead", "denyModify", "denyWrite",
	"ask.read", "ask.modify", "backup.skip", "hardlinkTrees",
}

local TOP_FIELDS = {
	"name", "include", "fsProfile", "denyRead", "denyModify", "denyWrite", "ask", "backup",
	"delete", "reads", "network", "env", "decide", "hardlinks", "hardlinkTrees", "tests",
}
local TEST_FIELDS = {
	"op", "path", "expect", "exists", "nlink", "dev", "ino", "requested",
	"type", "rule", "skipUnder",
}

-- ---------------------------------------------------------------------------
-- The environment a pack file runs in.

local function copy_table(t)
	local out = {}
	for k, v in pairs(t) do
		out[k] = v
	end
	return out
end

-- Fresh per file, so one pack cannot leave anything behind for another, and
-- library tables are copies, so a pack cannot change the functions the
-- engine itself uses. Reading an undefined global is an error.
local function pack_env()
	local str = copy_table(lib_string)
	str.dump = nil -- bytecode is useless to a pack: nothing can load it
	local env = {
		pairs = pairs, ipairs = ipairs, next = next, type = type,
		tostring = tostring, tonumber = tonumber, select = select,
		error = error, assert = assert, pcall = pcall,
		string = str, table = copy_table(lib_table),
		math = copy_table(lib_math), utf8 = copy_table(lib_utf8),
		os = { time = os_time, clock = os_clock },
	}
	return setmetatable(env, {
		__index = function(_, name)
			error("undefined global '" .. tostring(name) .. "'", 2)
		end,
	})
end

-- ---------------------------------------------------------------------------
-- Field checks. Each returns true, or nil and "field.path: sentence".

local function describe_key(k)
	if type(k) == "string" then
		return k
	end
	return "[" .. tostring(k) .. "]"
end

local function join(path, k)
	if type(k) == "number" then
		return path .. "[" .. tostring(k) .. "]"
	end
	return path == "" and k or (path .. "." .. k)
end

local function one_of(allowed)
	local names = {}
	for i, v in ipairs(allowed) do
		names[i] = '"' .. v .. '"'
	end
	return table_concat(names, ", ", 1, #names - 1) .. " or " .. names[#names]
end

local function check_enum(v, path, allowed)
	for _, a in ipairs(allowed) do
		if v == a then
			return true
		end
	end
	if type(v) ~= "string" then
		return nil, string_format("%s: expected %s, got %s", path, one_of(allowed), type(v))
	end
	return nil, string_format('%s: expected %s, got "%s"', path, one_of(allowed), v)
end

local function check_record(t, path, fields)
	if type(t) ~= "table" then
		return nil, string_format("%s: expected a table, got %s", path, type(t))
	end
	local known = {}
	for _, f in ipairs(fields) do
		known[f] = true
	end
	-- Sorted, so that the error for several unknown keys is always the same.
	local unknown = {}
	for k in pairs(t) do
		if not known[k] then
			unknown[#unknown + 1] = k
		end
	end
	if #unknown > 0 then
		table_sort(unknown, function(a, b)
			return tostring(a) < tostring(b)
		end)
		local k = unknown[1]
		local where
		if path == "" then
			where = describe_key(k)
		elseif type(k) == "string" then
			where = path .. "." .. k
		else
			where = path .. describe_key(k)
		end
		local owner = path == "" and "a pack" or path
		return nil, string_format("%s: unknown field; %s has %s", where, owner, table_concat(fields, ", "))
	end
	return true
end

-- A list: a table whose keys are exactly 1..n.
local function check_list(t, path, what)
	if type(t) ~= "table" then
		return nil, string_format("%s: expected a list of %s, got %s", path, what, type(t))
	end
	local n = #t
	for k in pairs(t) do
		if math_type(k) ~= "integer" or k < 1 or k > n then
			return nil, string_format("%s: unexpected key %s: a list holds only values",
				path, type(k) == "string" and ('"' .. k .. '"') or tostring(k))
		end
	end
	return true
end

local function check_positive(v, path)
	if type(v) ~= "number" then
		return nil, string_format("%s: expected a number, got %s", path, type(v))
	end
	if not (v > 0 and v < 1 / 0) then
		return nil, string_format("%s: expected a number above 0, got %s", path, tostring(v))
	end
	return true
end

-- Compiles a glob list into entries { text, negate, pattern, expanded,
-- bases, list, file }. On macOS the plain entries of the deny lists match
-- ASCII letters in either case (its filesystems usually ignore case); an
-- exception ('!') stays exact, so the case rule only ever adds denies.
local function compile_list(t, path, ctx, file)
	local ok, err = check_list(t, path, "string globs")
	if not ok then
		return nil, err
	end
	local deny_list = path == "denyRead" or path == "denyModify" or path == "denyWrite"
	local entries = {}
	for i, text in ipairs(t) do
		local where = join(path, i)
		if type(text) ~= "string" then
			return nil, string_format("%s: expected a string glob, got %s", where, type(text))
		end
		local nocase = deny_list and ctx.platform == "macos" and string_sub(text, 1, 1) ~= "!"
		local g, gerr = glob.compile(text, ctx.vars, { nocase = nocase })
		if g == nil then
			return nil, where .. ": " .. gerr
		end
		g.list = path
		g.file = file
		entries[i] = g
	end
	return entries
end

local function check_strings(t, path, what, pattern, sentence)
	local ok, err = check_list(t, path, what)
	if not ok then
		return nil, err
	end
	for i, v in ipairs(t) do
		if type(v) ~= "string" then
			return nil, string_format("%s: expected a string, got %s", join(path, i), type(v))
		end
		if pattern ~= nil and not string_find(v, pattern) then
			return nil, string_format('%s: "%s" %s', join(path, i), v, sentence)
		end
	end
	return true
end

-- A pack name as include lists it: bare, so that includes resolve only from
-- the rules directories and never from wherever a path points.
local function check_pack_name(v, path)
	if type(v) ~= "string" then
		return nil, string_format("%s: expected a pack name (string), got %s", path, type(v))
	end
	if v == "" or string_find(v, "/", 1, true) or string_find(v, "..", 1, true)
		or not string_find(v, "^[%w_][%w_.%-]*$") then
		return nil, string_format('%s: "%s" is not a pack name: names are bare (letters, digits, '
			.. "'-', '_', '.'), with no '/' or '..'; packs are found only in the rules directories", path, v)
	end
	return true
end

local function check_tests(t, ctx)
	local ok, err = check_list(t, "tests", "test tables")
	if not ok then
		return nil, err
	end
	local out = {}
	for i, test in ipairs(t) do
		local where = join("tests", i)
		ok, err = check_record(test, where, TEST_FIELDS)
		if not ok then
			return nil, err
		end
		if not M.OPS[test.op] then
			return nil, string_format("%s.op: expected an op (read, write, create, delete, rename-from, "
				.. "rename-to, mkdir, link, symlink, chmod, chown, utimes, xattr, touch), got %s",
				where, type(test.op) == "string" and ('"' .. test.op .. '"') or type(test.op))
		end
		ok, err = check_enum(test.expect, where .. ".expect", { "allow", "deny", "ask" })
		if not ok then
			return nil, err
		end
		local expanded, perr = glob.expand_path(test.path, ctx.vars)
		if expanded == nil then
			return nil, where .. ".path: " .. perr
		end
		if not normalize.is_absolute(expanded) then
			return nil, string_format('%s.path: "%s" is not absolute', where, test.path)
		end
		local requested
		if test.requested ~= nil then
			requested, perr = glob.expand_path(test.requested, ctx.vars)
			if requested == nil then
				return nil, where .. ".requested: " .. perr
			end
		end
		if test.exists ~= nil and type(test.exists) ~= "boolean" then
			return nil, string_format("%s.exists: expected a boolean, got %s", where, type(test.exists))
		end
		for _, f in ipairs({ "nlink", "dev", "ino" }) do
			local v = test[f]
			if v ~= nil and (math_type(v) ~= "integer" or v < 0) then
				return nil, string_format("%s.%s: expected a whole number, got %s", where, f, tostring(v))
			end
		end
		for _, f in ipairs({ "type", "rule", "skipUnder" }) do
			if test[f] ~= nil and type(test[f]) ~= "string" then
				return nil, string_format("%s.%s: expected a string, got %s", where, f, type(test[f]))
			end
		end
		-- A test that only holds where its path is not under a directory
		-- (a write to ~ asks, unless home is inside ${tmp}) names that
		-- directory; it is skipped on a machine where the path is under it.
		local skip = false
		if test.skipUnder ~= nil then
			local dir
			dir, perr = glob.expand_path(test.skipUnder, ctx.vars)
			if dir == nil then
				return nil, where .. ".skipUnder: " .. perr
			end
			dir = normalize.canonical(dir, ctx.platform)
			local p = normalize.canonical(expanded, ctx.platform)
			skip = dir == "/" or p == dir or string_sub(p, 1, #dir + 1) == dir .. "/"
		end
		out[i] = {
			index = i,
			op = test.op,
			written = test.path,
			req = {
				op = test.op, path = expanded, requested = requested,
				exists = test.exists == true, nlink = test.nlink, dev = test.dev,
				ino = test.ino, type = test.type, session = "self-test",
				toolCall = "self-test",
			},
			expect = test.expect,
			rule = test.rule,
			skip = skip,
		}
	end
	return out
end

-- Checks one pack table and compiles its globs. Returns a node:
-- { file, name, include = {names}, lists = { [list] = entries },
--   scalars = { [key] = value }, env_pass = {...}, decide = fn?, tests }.
local function check_pack(raw, file, ctx)
	local ok, err = check_record(raw, "", TOP_FIELDS)
	if not ok then
		return nil, err
	end
	local node = { file = file, lists = {}, scalars = {}, include = {}, env_pass = {}, includes = {} }

	if type(raw.name) ~= "string" or raw.name == "" then
		return nil, "name: expected the pack's name (a non-empty string), got "
			.. (raw.name == "" and '""' or type(raw.name))
	end
	node.name = raw.name

	if raw.include ~= nil then
		ok, err = check_list(raw.include, "include", "pack names")
		if not ok then
			return nil, err
		end
		for i, name in ipairs(raw.include) do
			ok, err = check_pack_name(name, join("include", i))
			if not ok then
				return nil, err
			end
			node.include[i] = name
		end
	end

	local function list(value, path)
		if value == nil then
			node.lists[path] = {}
			return true
		end
		local entries, lerr = compile_list(value, path, ctx, file)
		if entries == nil then
			return nil, lerr
		end
		node.lists[path] = entries
		return true
	end

	if raw.fsProfile ~= nil then
		ok, err = check_record(raw.fsProfile, "fsProfile", { "read", "modify" })
		if not ok then
			return nil, err
		end
	end
	local fs = raw.fsProfile or {}
	local ask = raw.ask
	if ask ~= nil then
		ok, err = check_record(ask, "ask", { "read", "modify" })
		if not ok then
			return nil, err
		end
	end
	ask = ask or {}
	local backup = raw.backup
	if backup ~= nil then
		ok, err = check_record(backup, "backup", { "maxSizeMB", "skip", "onTooLarge", "quotaMB", "durability" })
		if not ok then
			return nil, err
		end
	end
	backup = backup or {}

	for _, step in ipairs({
		{ fs.read, "fsProfile.read" }, { fs.modify, "fsProfile.modify" },
		{ raw.denyRead, "denyRead" }, { raw.denyModify, "denyModify" },
		{ raw.denyWrite, "denyWrite" },
		{ ask.read, "ask.read" }, { ask.modify, "ask.modify" },
		{ backup.skip, "backup.skip" }, { raw.hardlinkTrees, "hardlinkTrees" },
	}) do
		ok, err = list(step[1], step[2])
		if not ok then
			return nil, err
		end
	end

	-- Scalars: each optional, checked, then kept under its key.
	for _, scalar in ipairs({
		{ backup.maxSizeMB, "backup.maxSizeMB", "maxSizeMB" },
		{ backup.quotaMB, "backup.quotaMB", "quotaMB" },
		{ backup.onTooLarge, "backup.onTooLarge", "onTooLarge", { "ask", "allow", "deny" } },
		{ backup.durability, "backup.durability", "durability", { "strict", "batched" } },
		{ raw.reads, "reads", "reads", { "mask", "broker" } },
		{ raw.hardlinks, "hardlinks", "hardlinks", { "ask", "allow", "deny" } },
	}) do
		local value, where, key, allowed = scalar[1], scalar[2], scalar[3], scalar[4]
		if value ~= nil then
			if allowed ~= nil then
				ok, err = check_enum(value, where, allowed)
			else
				ok, err = check_positive(value, where)
			end
			if not ok then
				return nil, err
			end
			node.scalars[key] = value
		end
	end

	-- network: a string now; a table is kept for the allowlist of hosts a
	-- later version may take (docs/rule-packs.md, "network"), so that a
	-- pack written for it is refused here rather than read as "host".
	if raw.network ~= nil then
		if type(raw.network) == "table" then
			return nil, 'network: a table (an allowlist of hosts) is reserved for a later '
				.. 'version; expected "host" or "none"'
		end
		ok, err = check_enum(raw.network, "network", { "host", "none" })
		if not ok then
			return nil, err
		end
		node.scalars.network = raw.network
	end

	if raw.delete ~= nil then
		ok, err = check_record(raw.delete, "delete", { "mode" })
		if not ok then
			return nil, err
		end
		if raw.delete.mode ~= nil then
			ok, err = check_enum(raw.delete.mode, "delete.mode", { "trash", "unlink" })
			if not ok then
				return nil, err
			end
			node.scalars.delete_mode = raw.delete.mode
		end
	end

	if raw.env ~= nil then
		ok, err = check_record(raw.env, "env", { "pass" })
		if not ok then
			return nil, err
		end
		if raw.env.pass ~= nil then
			ok, err = check_strings(raw.env.pass, "env.pass", "variable names", "^[%a_][%w_]*$",
				"is not an environment variable name")
			if not ok then
				return nil, err
			end
			for i, v in ipairs(raw.env.pass) do
				node.env_pass[i] = v
			end
		end
	end

	if raw.decide ~= nil then
		if type(raw.decide) ~= "function" then
			return nil, "decide: expected a function(req, verdict), got " .. type(raw.decide)
		end
		node.decide = raw.decide
	end

	node.tests = {}
	if raw.tests ~= nil then
		local tests
		tests, err = check_tests(raw.tests, ctx)
		if tests == nil then
			return nil, err
		end
		node.tests = tests
	end
	return node
end

-- ---------------------------------------------------------------------------
-- Variables.

local function refuse_workspace(ws, home)
	if type(ws) ~= "string" or ws == "" then
		return "the workspace must be a directory path, got " .. (type(ws) == "string" and "an empty string" or type(ws))
	end
	if ws == "~" or string_sub(ws, 1, 2) == "~/" then
		if ws == "~" or ws == "~/" then
			return "the workspace '~' is refused: it is the home directory, which holds credentials and "
				.. "shell start-up files; pass a project directory"
		end
		return "the workspace '" .. ws .. "' is not an absolute path (the shell did not expand '~'); pass an absolute path"
	end
	if not normalize.is_absolute(ws) then
		return "the workspace '" .. ws .. "' is not an absolute path; pass an absolute path"
	end
	local clean = normalize.lexical(ws)
	if clean == "/" then
		return "the workspace '/' is refused: it would let commands modify the whole filesystem; pass a project directory"
	end
	if home ~= nil then
		if clean == home then
			return "the workspace " .. clean .. " is refused: it is the home directory, which holds credentials "
				.. "and shell start-up files; pass a project directory"
		end
		if string_sub(home, 1, #clean + 1) == clean .. "/" then
			return "the workspace " .. clean .. " is refused: it contains the home directory " .. home
				.. "; pass a project directory"
		end
	end
	return nil
end

-- Checks and cleans opts.vars. Returns the clean table or nil and a sentence.
local function prepare_vars(vars, platform)
	if vars ~= nil and type(vars) ~= "table" then
		return nil, "vars: expected a table, got " .. type(vars)
	end
	vars = vars or {}
	for k in pairs(vars) do
		if k ~= "workspace" and k ~= "home" and k ~= "tmp" and k ~= "state" then
			return nil, "vars." .. tostring(k) .. ": unknown variable; the variables are workspace, home, tmp and state"
		end
	end
	local out = {}
	for _, name in ipairs({ "home", "tmp", "state" }) do
		local v = vars[name]
		if v ~= nil then
			if type(v) ~= "string" or not normalize.is_absolute(v) then
				return nil, "vars." .. name .. ": expected an absolute path, got "
					.. (type(v) == "string" and ("'" .. v .. "'") or type(v))
			end
			out[name] = normalize.canonical(v, platform)
		end
	end
	if out.tmp == nil then
		out.tmp = "/tmp"
	end
	if vars.workspace ~= nil then
		local refusal = refuse_workspace(vars.workspace, out.home)
		if refusal ~= nil then
			return nil, refusal
		end
		out.workspace = normalize.canonical(vars.workspace, platform)
	end
	return out
end

-- ---------------------------------------------------------------------------
-- Loading files.

-- Lua says "cannot open <file>: No such file or directory" for a missing
-- file; any other failure (unreadable, syntax error) is an error to report,
-- never a reason to try the next rules directory.
local function is_missing(msg)
	return type(msg) == "string" and string_find(msg, "^cannot open ")
		and string_find(msg, "No such file or directory", 1, true) ~= nil
end

-- Makes sure a Lua error message names the file it came from.
local function with_file(msg, file)
	msg = tostring(msg)
	if string_sub(msg, 1, #file) == file then
		return msg
	end
	return file .. ": " .. msg
end

-- Runs one pack file and checks what it returns.
local function run_file(chunk, file, ctx)
	local ok, raw = pcall(chunk)
	if not ok then
		return nil, with_file(raw, file)
	end
	if type(raw) ~= "table" then
		return nil, file .. ": a pack returns a table, got " .. type(raw)
	end
	local node, err = check_pack(raw, file, ctx)
	if node == nil then
		return nil, file .. ": " .. err
	end
	return node
end

local load_node

-- Finds include `name` in the rules directories and loads it.
local function load_include(name, from, where, ctx, stack)
	local tried = {}
	for _, dir in ipairs(ctx.rules_dirs) do
		local file = normalize.lexical(dir .. "/" .. name .. ".lua")
		for i = 1, #stack do
			if stack[i] == file then
				local cycle = {}
				for j = i, #stack do
					cycle[#cycle + 1] = stack[j]
				end
				cycle[#cycle + 1] = file
				return nil, from .. ": " .. where .. ": include cycle: " .. table_concat(cycle, " -> ")
			end
		end
		if ctx.nodes[file] ~= nil then
			return ctx.nodes[file]
		end
		local chunk, err = ctx.loadfile(file, "t", pack_env())
		if chunk ~= nil then
			return load_node(chunk, file, ctx, stack)
		end
		if not is_missing(err) then
			return nil, with_file(err, file)
		end
		tried[#tried + 1] = dir
	end
	return nil, string_format('%s: %s: no pack "%s" in the rules directories (%s)',
		from, where, name, #tried > 0 and table_concat(tried, ", ") or "none given")
end

function load_node(chunk, file, ctx, stack)
	local node, err = run_file(chunk, file, ctx)
	if node == nil then
		return nil, err
	end
	ctx.nodes[file] = node
	ctx.files[#ctx.files + 1] = file
	stack[#stack + 1] = file
	for i, name in ipairs(node.include) do
		local child
		child, err = load_include(name, file, join("include", i), ctx, stack)
		if child == nil then
			return nil, err
		end
		node.includes[i] = child
	end
	stack[#stack] = nil
	return node
end

--- Loads a pack. `opts` as policy.load takes it. Returns
-- { root = node, files = {...}, vars = {...}, platform = ... } or nil and
-- one error string naming the file.
function M.load(opts)
	if type(opts) ~= "table" then
		return nil, "policy.load: expected a table of options, got " .. type(opts)
	end
	local file = opts.pack
	if type(file) ~= "string" or not normalize.is_absolute(file) then
		return nil, "policy.load: pack must be an absolute path, got "
			.. (type(file) == "string" and ("'" .. file .. "'") or type(file))
	end
	file = normalize.lexical(file)
	local platform = opts.platform or "linux"
	if platform ~= "linux" and platform ~= "macos" then
		return nil, file .. ': platform: expected "linux" or "macos", got ' .. tostring(platform)
	end
	local rules_dirs = opts.rules_dirs or {}
	if type(rules_dirs) ~= "table" then
		return nil, file .. ": rules_dirs: expected a list of directories, got " .. type(rules_dirs)
	end
	local dirs = {}
	for i, d in ipairs(rules_dirs) do
		if type(d) ~= "string" or not normalize.is_absolute(d) then
			return nil, string_format("%s: rules_dirs[%d]: expected an absolute directory path", file, i)
		end
		dirs[i] = normalize.lexical(d)
	end
	local vars, verr = prepare_vars(opts.vars, platform)
	if vars == nil then
		return nil, file .. ": " .. verr
	end
	local loader = opts.loadfile or host_loadfile
	if type(loader) ~= "function" then
		return nil, file .. ": no loadfile function is available to read packs"
	end
	local ctx = {
		vars = vars, platform = platform, rules_dirs = dirs, loadfile = loader,
		nodes = {}, files = {},
	}
	local chunk, err = loader(file, "t", pack_env())
	if chunk == nil then
		return nil, with_file(err, file)
	end
	local root
	root, err = load_node(chunk, file, ctx, {})
	if root == nil then
		return nil, err
	end
	return { root = root, files = ctx.files, vars = vars, platform = platform }
end

--- Merges a node with everything it includes: lists are concatenated
-- (included packs first, in include order, then the node's own), scalars
-- are overridden by the including pack, decide hooks are chained (included
-- packs' hooks first). A pack included twice is merged once.
function M.merge(node)
	local lists = {}
	for _, name in ipairs(M.LISTS) do
		lists[name] = {}
	end
	local cfg = { name = node.name, file = node.file, lists = lists, scalars = {}, env_pass = {}, hooks = {} }
	local seen = {}
	local function visit(n)
		if seen[n] then
			return
		end
		seen[n] = true
		for _, child in ipairs(n.includes) do
			visit(child)
		end
		for _, name in ipairs(M.LISTS) do
			local dst = lists[name]
			for _, entry in ipairs(n.lists[name]) do
				dst[#dst + 1] = entry
			end
		end
		for k, v in pairs(n.scalars) do
			cfg.scalars[k] = v
		end
		for _, v in ipairs(n.env_pass) do
			cfg.env_pass[#cfg.env_pass + 1] = v
		end
		if n.decide ~= nil then
			cfg.hooks[#cfg.hooks + 1] = { fn = n.decide, file = n.file }
		end
	end
	visit(node)
	for k, v in pairs(M.DEFAULTS) do
		if cfg.scalars[k] == nil then
			cfg.scalars[k] = v
		end
	end
	return cfg
end

--- Nodes in the order their self-tests run: every included pack before the
-- pack that includes it, each once.
function M.post_order(root)
	local out, seen = {}, {}
	local function visit(n)
		if seen[n] then
			return
		end
		seen[n] = true
		for _, child in ipairs(n.includes) do
			visit(child)
		end
		out[#out + 1] = n
	end
	visit(root)
	return out
end

return M
