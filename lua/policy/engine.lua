-- policy.engine — judges one request against a loaded pack.
-- Order: path length, denyRead/denyModify, fsProfile, ask, default deny;
-- then the hard-link rule, the pack's decide hooks, and approvals.

local lpeg = require("lpeg")
local approvals = require("policy.approvals")
local normalize = require("policy.normalize")
local pack = require("policy.pack")

local string_find, string_format = string.find, string.format
local string_lower, string_match, string_sub = string.lower, string.match, string.sub
local math_type = math.type
local ipairs, pairs, pcall = ipairs, pairs, pcall
local setmetatable, tostring, type = setmetatable, tostring, type

local _ENV = nil

local M = {}

--- Longer paths are denied before any pattern runs (Linux PATH_MAX).
M.PATH_MAX = 4096

local RANK = { allow = 1, ask = 2, deny = 3 }

-- Ops that change the inode a name points to. A change through one name of
-- a file with several hard links changes every other name too, so those
-- ops take the hard-link rule. Removing or renaming a name, or making a
-- new node, leaves the other names' content alone.
local HARDLINK_OPS = {
	write = true, create = true, touch = true, chmod = true, chown = true,
	utimes = true, xattr = true, link = true,
}

-- Directories always have st_nlink >= 2; the rule is about regular files.
local DIR_TYPES = { dir = true, directory = true }

-- Per-engine state, out of the operator's sight (eng.name and eng.files are
-- the only public fields).
local state = setmetatable({}, { __mode = "k" })

-- A list matcher returns the entry that decides for `path` within one list,
-- or nil. The entries are tried last first in one lpeg ordered choice, each
-- anchored to the whole path and tagged with its index, so the last
-- matching entry wins; if it is an exception ('!glob') the list does not
-- match.
-- An lpeg pattern matching any of `words` at the current position, built as
-- a trie: strings sharing a prefix share its test, and siblings differ in
-- their first byte, which lpeg dispatches on. So the cost follows the length
-- of the input consumed, not the number of words.
local function trie_pattern(words)
	local root = {}
	for _, w in ipairs(words) do
		local node = root
		for i = 1, #w do
			local c = string_sub(w, i, i)
			node[c] = node[c] or {}
			node = node[c]
		end
		node[""] = true	-- a word ends here
	end
	-- A chain of nodes with one child each is one literal: one lpeg
	-- pattern for the run, not one per byte.
	local function build(node)
		if node[""] then
			return lpeg.P(true)	-- a shorter word already matched
		end
		local alt
		for c, child in pairs(node) do
			local run = c
			while child[""] == nil do
				local only, nkids = nil, 0
				for k in pairs(child) do
					only, nkids = k, nkids + 1
					if nkids > 1 then
						break
					end
				end
				if nkids ~= 1 then
					break
				end
				run = run .. only
				child = child[only]
			end
			local p = lpeg.P(run) * build(child)
			alt = alt and (alt + p) or p
		end
		return alt
	end
	return build(root)
end

-- A pattern that fails for a path no positive entry can match: the path
-- starts with none of the entries' literal prefixes and contains none of
-- their required literals. nil when some entry has neither (then every entry
-- must be tried). Exceptions need nothing: they only turn a match into none.
local function quick_reject(entries)
	local prefixes, inner, seen = {}, {}, {}
	for _, e in ipairs(entries) do
		if not e.negate then
			if not e.required then
				return nil
			end
			for _, need in ipairs(e.required) do
				local list = need.prefix and prefixes or inner
				local lit = need.prefix or need.contains
				if not seen[list] then
					seen[list] = {}
				end
				if not seen[list][lit] then
					seen[list][lit] = true
					list[#list + 1] = lit
				end
			end
		end
	end
	local quick
	if #prefixes > 0 then
		quick = trie_pattern(prefixes)
	end
	if #inner > 0 then
		local search = lpeg.P({ trie_pattern(inner) + 1 * lpeg.V(1) })
		quick = quick and (quick + search) or search
	end
	return quick
end

local function list_matcher(entries)
	local pattern
	for i = #entries, 1, -1 do
		local p = entries[i].pattern * lpeg.Cc(i)
		pattern = pattern and (pattern + p) or p
	end
	if pattern == nil then
		return function()
			return nil
		end
	end
	local match = lpeg.match
	local quick = quick_reject(entries)
	return function(path)
		-- Most paths can match no entry of a list: one pass over a trie of
		-- the entries' literals says so without trying each entry.
		if quick ~= nil and match(quick, path) == nil then
			return nil
		end
		local i = match(pattern, path)
		if i == nil then
			return nil
		end
		local e = entries[i]
		if e.negate then
			return nil
		end
		return e
	end
end

local function hit(decision, list, entry, form, final)
	return {
		decision = decision, rule = list .. " " .. entry.text, kind = list,
		entry = entry, form = form, final = final,
	}
end

-- The operations that only take a name away: denyWrite lets them through.
local REMOVES = { delete = true, ["rename-from"] = true }

-- Judges one spelling of the path. `full` false: only the deny lists speak
-- (returns nil when none matches).
local function judge(m, path, op, full)
	local is_read = op == "read"
	local e = m.denyRead(path)
	if e ~= nil then
		return hit("deny", "denyRead", e, path, true)
	end
	if not is_read then
		e = m.denyModify(path)
		if e ~= nil then
			return hit("deny", "denyModify", e, path, true)
		end
		if not REMOVES[op] then
			e = m.denyWrite(path)
			if e ~= nil then
				return hit("deny", "denyWrite", e, path, true)
			end
		end
	end
	if not full then
		return nil
	end
	if is_read then
		e = m["fsProfile.read"](path)
		if e ~= nil then
			return hit("allow", "fsProfile.read", e, path)
		end
	end
	e = m["fsProfile.modify"](path)
	if e ~= nil then
		return hit("allow", "fsProfile.modify", e, path)
	end
	if is_read then
		e = m["ask.read"](path)
		if e ~= nil then
			return hit("ask", "ask.read", e, path)
		end
	end
	e = m["ask.modify"](path)
	if e ~= nil then
		return hit("ask", "ask.modify", e, path)
	end
	return { decision = "deny", rule = "default deny", kind = "default", form = path }
end

-- True when verdict `a` is stricter than `b`: a higher rank, or a final
-- deny (denyRead/denyModify) over another deny, so that a deny list hit by
-- any spelling stays final for the decide hooks.
local function stricter(a, b)
	local ra, rb = RANK[a.decision], RANK[b.decision]
	return ra > rb or (ra == rb and a.final == true and b.final ~= true)
end

-- The rules' verdict for every spelling of the resolved and the requested
-- path; the strictest wins, the first found on a tie (the resolved path's).
local function judge_request(st, req)
	local best
	local function consider(v)
		if v ~= nil and (best == nil or stricter(v, best)) then
			best = v
		end
	end
	for _, f in ipairs(normalize.forms(req.path, st.platform)) do
		consider(judge(st.m, f.path, req.op, f.full))
	end
	local requested = req.requested
	if requested ~= nil and requested ~= req.path then
		-- A relative spelling cannot be placed in the tree, so it can only
		-- add a deny (through "**/" globs), never allow.
		local placed = normalize.is_absolute(requested)
		for _, f in ipairs(normalize.forms(requested, st.platform)) do
			consider(judge(st.m, f.path, req.op, placed and f.full))
		end
	end
	return best
end

local function malformed(problem)
	return { decision = "deny", rule = "malformed request", kind = "malformed", problem = problem }
end

-- Checks the shape of a request; returns nil or a verdict that denies it.
local function check_request(req)
	if type(req) ~= "table" then
		return malformed("the request is a " .. type(req) .. ", not a table")
	end
	if not pack.OPS[req.op] then
		return malformed("unknown op " .. tostring(req.op))
	end
	local path, requested = req.path, req.requested
	if type(path) ~= "string" then
		return malformed("path is a " .. type(path) .. ", not a string")
	end
	if requested ~= nil and type(requested) ~= "string" then
		return malformed("requested is a " .. type(requested) .. ", not a string")
	end
	if #path > M.PATH_MAX or (requested ~= nil and #requested > M.PATH_MAX) then
		return { decision = "deny", rule = "path too long", kind = "too-long", final = true }
	end
	if string_find(path, "\0", 1, true) or (requested ~= nil and string_find(requested, "\0", 1, true)) then
		return malformed("the path holds a NUL byte")
	end
	if not normalize.is_absolute(path) then
		return malformed("path '" .. path .. "' is not absolute")
	end
	return nil
end

local function copy_req(req)
	local out = {}
	for k, v in pairs(req) do
		out[k] = v
	end
	if type(req.client) == "table" then
		local c = {}
		for k, v in pairs(req.client) do
			c[k] = v
		end
		out.client = c
	end
	return out
end

local function basename(file)
	return string_match(file, "([^/]*)$")
end

-- Runs the pack's decide hooks in order. Each sees the verdict so far and
-- may return a new one (or nil to keep it). A hook that fails or returns
-- something that is not a verdict denies. A deny from denyRead/denyModify
-- (or "path too long") is final: it is applied again after the hooks, so
-- they can tighten anything but never relax that.
local function run_hooks(st, req, v)
	local before = v
	for _, hook in ipairs(st.hooks) do
		local seen = { decision = v.decision, rule = v.rule, reason = v.reason }
		local ok, res = pcall(hook.fn, copy_req(req), seen)
		local failure
		if not ok then
			failure = tostring(res)
		elseif res ~= nil then
			if type(res) ~= "table" then
				failure = "it returned a " .. type(res) .. " instead of a verdict table or nil"
			elseif RANK[res.decision] == nil then
				failure = "it returned a verdict whose decision is " .. tostring(res.decision)
					.. ' (expected "allow", "deny" or "ask")'
			elseif res.rule ~= nil and type(res.rule) ~= "string" then
				failure = "it returned a verdict whose rule is a " .. type(res.rule) .. ", not a string"
			elseif res.reason ~= nil and type(res.reason) ~= "string" then
				failure = "it returned a verdict whose reason is a " .. type(res.reason) .. ", not a string"
			elseif res.decision ~= v.decision or (res.rule ~= nil and res.rule ~= v.rule) then
				v = {
					decision = res.decision,
					rule = res.rule or ("decide " .. basename(hook.file)),
					kind = "hook", hook = hook, reason = res.reason, was = v,
				}
			end
		end
		if failure ~= nil then
			v = {
				decision = "deny", rule = "decide error", kind = "hook-error",
				hook = hook, problem = failure,
			}
			break
		end
	end
	if before.final and v ~= before then
		before.overruled = v
		return before
	end
	return v
end

-- ---------------------------------------------------------------------------
-- Sentences: why the verdict is what it is, and what would change it.

local function where(entry)
	return entry.file
end

local function explain(v, req)
	local op, path = req.op, req.path
	local as = ""
	if v.form ~= nil and v.form ~= path then
		as = " (matched as " .. v.form .. ")"
	end
	local kind = v.kind
	local reason, hint
	if kind == "denyRead" or kind == "denyModify" or kind == "denyWrite" then
		local what = kind == "denyRead" and "it may be neither read nor changed"
			or kind == "denyModify" and "it may be read but not changed"
			or "it may be read and removed, but not made or changed"
		reason = string_format("%s of %s is denied by %s%s in %s: %s.", op, path, v.rule, as, where(v.entry), what)
		hint = string_format("%s is final: fsProfile, ask, approvals and decide hooks cannot relax it. "
			.. "To allow this path, remove the glob %s from %s, or add an exception '!GLOB' to %s after it "
			.. "(in that pack or one that includes it: the last matching entry wins).",
			kind, v.entry.text, where(v.entry), kind)
		local over = v.overruled
		if over ~= nil and over.kind == "hook-error" then
			reason = reason .. " The decide hook in " .. over.hook.file .. " also failed: " .. over.problem
		elseif over ~= nil then
			reason = reason .. " A decide hook answered " .. over.decision .. "; the deny stands."
		end
	elseif kind == "fsProfile.read" or kind == "fsProfile.modify" then
		reason = string_format("%s of %s is allowed by %s%s in %s.", op, path, v.rule, as, where(v.entry))
		hint = "To refuse it, add a glob that matches the path to denyModify (changes) or denyRead (everything)."
	elseif kind == "ask.read" or kind == "ask.modify" then
		reason = string_format("%s of %s needs approval: it matches %s%s in %s and no fsProfile glob allows it.",
			op, path, v.rule, as, where(v.entry))
		hint = "Approving the request (once or for the session) allows it; a glob in fsProfile."
			.. (op == "read" and "read" or "modify") .. " allows it without asking; a denyModify glob refuses it."
	elseif kind == "default" then
		reason = string_format("%s of %s is denied: no fsProfile or ask glob matches it%s.", op, path, as)
		if op == "read" then
			hint = "Add a glob that matches the path to fsProfile.read to allow it, or to ask.read to be asked."
		else
			hint = "Add a glob that matches the path to fsProfile.modify to allow it, or to ask.modify to be asked."
		end
	elseif kind == "too-long" then
		reason = string_format("%s is denied: the path is longer than %d bytes (PATH_MAX).", op, M.PATH_MAX)
		hint = "No rule can allow a path this long."
	elseif kind == "hardlinks" then
		reason = string_format("%s of %s %s: the file has %s hard links, so a change through this name "
			.. "also changes the others (it was allowed by %s).", op, path,
			v.decision == "ask" and "needs approval" or "is denied", tostring(req.nlink), v.was.rule)
		hint = v.decision == "ask"
			and 'Approving the request allows it; hardlinks = "allow" in the pack turns this check off.'
			or 'hardlinks = "ask" or "allow" in the pack would let it through.'
	elseif kind == "hook" then
		reason = v.reason or string_format("%s of %s: the decide hook in %s answered %s (the rules said %s by %s).",
			op, path, v.hook.file, v.decision, v.was.decision, v.was.rule)
		hint = "This verdict comes from the decide hook in " .. v.hook.file .. "; change the hook to change it."
	elseif kind == "hook-error" then
		reason = string_format("%s of %s is denied: the decide hook in %s failed: %s", op, path, v.hook.file, v.problem)
		hint = "Fix the decide hook in " .. v.hook.file .. "; while it fails, every request it sees is denied."
	elseif kind == "approved" then
		local inner_reason = explain(v.asked, req)
		reason = string_format("%s of %s is allowed by a %s approval. Without it: %s", op, path, v.scope, inner_reason)
		hint = "The approval holds for this exact op, path and inode"
			.. (v.scope == "once" and " and has now been used up." or " for the rest of the session.")
	elseif kind == "malformed" then
		reason = "The request is denied: " .. v.problem .. "."
		hint = "The request does not have the shape the engine expects; this is a bug in the caller."
	else
		reason = "The request is denied: the policy engine failed: " .. tostring(v.problem)
		hint = "This is a bug in the policy engine; the request was denied to stay safe."
	end
	return reason, hint
end

-- `path` is `dir` or below it.
local function within(path, dir)
	return dir == "/" or path == dir or string_sub(path, 1, #dir + 1) == dir .. "/"
end

-- Whether a modify of `primary` is backed up. A ${tmp} scratch entry of
-- backup.skip never covers the workspace: a project under ${tmp} (a CI
-- checkout, a scratch clone) is backed up like any other, else its run
-- would offer a restore that has nothing to give back.
local function backed_up(st, primary)
	local e = st.m["backup.skip"](primary)
	if e ~= nil and st.workspace ~= nil and string_sub(e.text, 1, 6) == "${tmp}"
		and within(primary, st.workspace) then
		return true
	end
	return e == nil
end

-- Where the verdict came from, for the core (policy.h): what it may cache,
-- count as a failure or use up as an approval, whatever the rule is named.
local function origin_of(v)
	if v.kind == "approved" then
		return "approval-" .. v.scope
	elseif v.kind == "hook-error" then
		return "failure"
	end
	return "rules"
end

-- An allow's sentences are built only when asked for (req.explain: `fsbroker
-- check`, CheckAccess): nothing prints them otherwise, and an allow is what
-- nearly every call gets. A deny or an ask always says why.
local function finish(st, v, req, is_modify)
	local reason, hint = "", ""
	if v.decision ~= "allow" or req.explain == true then
		reason, hint = explain(v, req)
	end
	local backup = false
	if is_modify then
		local primary = normalize.canonical(req.path, st.platform)
		backup = backed_up(st, primary)
	end
	return {
		decision = v.decision, rule = v.rule, backup = backup, reason = reason, hint = hint,
		origin = origin_of(v),
	}
end

local function evaluate(st, req)
	local bad = check_request(req)
	if bad ~= nil then
		local ok_req = type(req) == "table" and type(req.path) == "string" and pack.OPS[req.op]
		local reason, hint = explain(bad, ok_req and req or { op = "request", path = "?" })
		return { decision = "deny", rule = bad.rule, backup = false, reason = reason, hint = hint, origin = "rules" }
	end
	local op = req.op
	local is_modify = op ~= "read"

	local v = judge_request(st, req)

	-- hardlinkTrees: files that are hard links by design (a pnpm store and
	-- the node_modules linked into it) are changed as any other file; the
	-- core still refuses another name of a protected file there.
	if v.decision == "allow" and HARDLINK_OPS[op] and req.exists == true
		and math_type(req.nlink) ~= nil and req.nlink > 1 and not DIR_TYPES[req.type]
		and st.m.hardlinkTrees(normalize.canonical(req.path, st.platform)) == nil then
		if st.hardlinks == "ask" then
			v = { decision = "ask", rule = "hardlinks ask", kind = "hardlinks", was = v }
		elseif st.hardlinks == "deny" then
			v = { decision = "deny", rule = "hardlinks deny", kind = "hardlinks", was = v }
		end
	end

	if #st.hooks > 0 then
		v = run_hooks(st, req, v)
	end

	-- An approval turns an ask into an allow; it never touches a deny.
	if v.decision == "ask" then
		local session = type(req.session) == "string" and req.session or nil
		local scope = st.approvals:take(op, req.path, req.dev, req.ino, session, req.peek == true)
		if scope ~= nil then
			v = {
				decision = "allow", rule = "approved:" .. scope .. " (" .. v.rule .. ")",
				kind = "approved", scope = scope, asked = v,
			}
		end
	end
	return finish(st, v, req, is_modify)
end

local Engine = {}
Engine.__index = Engine

--- Judges one request; never raises. See DESIGN §4.1 for req and verdict.
function Engine:evaluate(req)
	local st = state[self]
	local ok, verdict = pcall(evaluate, st, req)
	if ok then
		return verdict
	end
	return {
		decision = "deny", rule = "engine error", backup = false, origin = "failure",
		reason = "The request is denied: the policy engine failed: " .. tostring(verdict),
		hint = "This is a bug in the policy engine; the request was denied to stay safe.",
	}
end

--- Records an approval: { op, path, dev?, ino?, scope = "once"|"session",
-- session? }. Returns true or nil and a sentence.
function Engine:approve(a)
	return state[self].approvals:add(a)
end

--- Every live approval, as plain tables.
function Engine:approvals()
	return state[self].approvals:list()
end

--- Adds approvals taken from another engine's approvals(). Returns the
-- number restored and a list of sentences for entries that were refused.
function Engine:restore_approvals(list)
	return state[self].approvals:restore(list)
end

local function globs(entries)
	local out = {}
	for _, e in ipairs(entries) do
		for _, g in ipairs(e.expanded) do
			out[#out + 1] = (e.negate and "!" or "") .. g
		end
	end
	return out
end

local function bases(entries)
	local out = {}
	for _, e in ipairs(entries) do
		for i, g in ipairs(e.expanded) do
			local b = e.bases[i]
			out[#out + 1] = { glob = g, base = b.base, kind = b.kind, except = e.negate }
		end
	end
	return out
end

-- The rule name a verdict would give each expanded glob of `entries`, in
-- the order of bases(): "fsProfile.modify ${workspace}/**".
local function rule_names(list, entries)
	local out = {}
	for _, e in ipairs(entries) do
		for _ = 1, #e.expanded do
			out[#out + 1] = list .. " " .. e.text
		end
	end
	return out
end

--- What the pack says, for the runtime's mount plan: globs with variables,
-- '~' and {a,b} expanded (a variable's glob characters escaped as "[*]").
function Engine:summary()
	local st = state[self]
	local lists, s = st.cfg.lists, st.cfg.scalars
	local env_pass, seen = {}, {}
	for _, name in ipairs(st.cfg.env_pass) do
		if not seen[name] then
			seen[name] = true
			env_pass[#env_pass + 1] = name
		end
	end
	local files = {}
	for i, f in ipairs(st.files) do
		files[i] = f
	end
	local vars = {}
	for k, v in pairs(st.vars) do
		vars[k] = v
	end
	return {
		name = self.name,
		files = files,
		vars = vars,
		read = globs(lists["fsProfile.read"]),
		modify = globs(lists["fsProfile.modify"]),
		denyRead = globs(lists.denyRead),
		denyModify = globs(lists.denyModify),
		ask = globs(lists["ask.modify"]),
		ask_read = globs(lists["ask.read"]),
		reads = s.reads,
		network = s.network,
		env_pass = env_pass,
		backup = {
			maxSizeMB = s.maxSizeMB, skip = globs(lists["backup.skip"]),
			onTooLarge = s.onTooLarge, quotaMB = s.quotaMB,
			durability = s.durability,
		},
		delete_mode = s.delete_mode,
		hardlinks = s.hardlinks,
		-- Whether any decide hook runs: then a verdict may depend on more
		-- than the paths (the core's read-decision cache stays off).
		has_hooks = #st.hooks > 0,
		-- What a name must hold to be judged unlike the other names of its
		-- directory (name_literals), or false.
		name_literals = st.name_literals,
		bases = {
			read = bases(lists["fsProfile.read"]),
			modify = bases(lists["fsProfile.modify"]),
			denyRead = bases(lists.denyRead),
			denyModify = bases(lists.denyModify),
			ask = bases(lists["ask.modify"]),
			ask_read = bases(lists["ask.read"]),
		},
		-- rules.<list>[i] names the entry of bases.<list>[i] as a verdict
		-- would, for messages about the plan.
		rules = {
			read = rule_names("fsProfile.read", lists["fsProfile.read"]),
			modify = rule_names("fsProfile.modify", lists["fsProfile.modify"]),
			denyRead = rule_names("denyRead", lists.denyRead),
			denyModify = rule_names("denyModify", lists.denyModify),
			ask = rule_names("ask.modify", lists["ask.modify"]),
			ask_read = rule_names("ask.read", lists["ask.read"]),
		},
	}
end

--- The denyRead rule that hides `path` from reads ("denyRead **/.env"), or
-- nil. Only the deny list is consulted, for every spelling of the path, so
-- the runtime can test each entry of a workspace scan cheaply; a decide
-- hook cannot lift a denyRead deny, so this is what evaluate() would say.
function Engine:denied_read(path)
	local st = state[self]
	if type(path) ~= "string" or not normalize.is_absolute(path) or #path > M.PATH_MAX then
		return nil
	end
	for _, f in ipairs(normalize.forms(path, st.platform)) do
		local e = st.m.denyRead(f.path)
		if e ~= nil then
			return "denyRead " .. e.text
		end
	end
	return nil
end

-- What a name must be like for the pack to judge `dir/name` unlike
-- `dir/other` for some `other` ("=lit", "^lit", "$lit", "*lit": equal to,
-- starting with, ending with, holding the literal, in either case): a name
-- like none of them (a plain name) gets, in any directory, the verdict of
-- every other plain name there, whatever the op (the core keeps one allow
-- per directory for them: verdict_cache.h). Beside the globs' own needs
-- (glob.compile's name_needs): holding ".!", as a BSD sed temporary name
-- does (normalize.forms judges it under its target's name too), and the
-- workspace's last name (backed_up() tells the workspace from what is in
-- it). false when a glob picks names by a class or by counting their
-- characters, a decide hook may look at anything, or the platform maps
-- names (macOS: /private/var is judged as /var).
local function name_literals(cfg, hooks, workspace, platform)
	if #hooks > 0 or platform == "macos" then
		return false
	end
	local out, seen = {}, {}
	local function add(lit)
		local key = string_lower(lit)
		if not seen[key] then
			seen[key] = true
			out[#out + 1] = lit
		end
	end
	add("*.!")
	if workspace ~= nil and workspace ~= "/" then
		add("=" .. string_match(workspace, "([^/]+)$"))
	end
	for _, name in ipairs(pack.LISTS) do
		for _, e in ipairs(cfg.lists[name]) do
			if e.name_needs == false or e.name_needs == nil then
				return false
			end
			for _, lit in ipairs(e.name_needs) do
				add(lit)
			end
		end
	end
	return out
end

--- Builds an engine from a merged pack (policy.pack.merge) and the load
-- context { vars, platform, files }.
function M.new(cfg, ctx)
	local m = {}
	for _, name in ipairs(pack.LISTS) do
		m[name] = list_matcher(cfg.lists[name])
	end
	local eng = setmetatable({ name = cfg.name, files = ctx.files }, Engine)
	local workspace = ctx.vars.workspace ~= nil
		and normalize.canonical(ctx.vars.workspace, ctx.platform) or nil
	state[eng] = {
		cfg = cfg,
		m = m,
		hooks = cfg.hooks,
		hardlinks = cfg.scalars.hardlinks,
		platform = ctx.platform,
		vars = ctx.vars,
		workspace = workspace,
		name_literals = name_literals(cfg, cfg.hooks, workspace, ctx.platform),
		files = ctx.files,
		approvals = approvals.new(function(op)
			return pack.OPS[op] == true
		end),
	}
	return eng
end

--- Runs a pack file's self-tests against `eng`. Returns true, or nil and
-- "<file>: tests[N]: expected ... got ..." for the first that fails.
function M.self_test(eng, node)
	for _, t in ipairs(node.tests) do
		local v = not t.skip and eng:evaluate(t.req)
		if v and (v.decision ~= t.expect or (t.rule ~= nil and v.rule ~= t.rule)) then
			local expected = t.expect
			if t.rule ~= nil then
				expected = expected .. " by " .. t.rule
			end
			return nil, string_format("%s: tests[%d]: expected %s for %s %s, got %s (%s)",
				node.file, t.index, expected, t.op, t.written, v.decision, v.rule)
		end
	end
	return true
end

return M
