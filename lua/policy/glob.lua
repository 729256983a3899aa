-- policy.glob — the glob language of rule packs, compiled to lpeg patterns.
-- A glob is parsed and compiled once, when its pack loads; a request only
-- runs the finished pattern, anchored to the whole path.

local lpeg = require("lpeg")

local string_byte, string_char = string.byte, string.char
local string_find, string_format = string.find, string.format
local string_gmatch = string.gmatch
local string_gsub, string_lower = string.gsub, string.lower
local string_match, string_sub = string.match, string.sub
local string_upper = string.upper
local table_concat, table_insert = table.concat, table.insert
local utf8_codepoint, utf8_charpattern = utf8.codepoint, utf8.charpattern
local ipairs, pcall, type = ipairs, pcall, type

local _ENV = nil

local P, R, S, V = lpeg.P, lpeg.R, lpeg.S, lpeg.V
local C, Cmt = lpeg.C, lpeg.Cmt

local M = {}

--- The variables a glob may name, in the order error messages list them.
M.VARIABLES = { "workspace", "home", "tmp", "state" }
local KNOWN = { workspace = true, home = true, tmp = true, state = true }

--- Most alternatives one glob may expand to through its {a,b} groups.
M.MAX_ALTERNATIVES = 256

-- Building blocks. A "character" for `?` and `[...]` is one UTF-8 encoded
-- character, or a single byte where the bytes are not valid UTF-8; it is
-- never '/'.
local CONT = R("\128\191")
local UTF8_MULTI = R("\194\223") * CONT
	+ R("\224\239") * CONT * CONT
	+ R("\240\244") * CONT * CONT * CONT
local ONE_CHAR = (UTF8_MULTI + P(1)) - P("/")
local SEG_BYTE = P(1) - P("/")
local END = -P(1)
local ANY_TAIL = (P("/") * P(1) ^ 0) ^ -1 * END
local EVERYTHING = P(1) ^ 0 * END

-- Characters with a meaning in globs; a variable's value escapes them so it
-- is matched as literal text when a summary glob is compiled again.
local META = "[%*%?%[%]{},%$]"

--- Returns `s` with every glob metacharacter written as a one-character
-- class ("[" -> "[[]"), so that the result matches `s` literally.
function M.escape(s)
	return (string_gsub(s, META, "[%0]"))
end

local function quote(s)
	return "'" .. s .. "'"
end

--- The sentence for a variable that is known but has no value.
function M.missing_variable(name)
	if name == "workspace" then
		return "uses ${workspace} but no workspace was given: this pack needs --workspace DIR"
	elseif name == "home" then
		return "uses ${home} but no home directory was given"
	elseif name == "tmp" then
		return "uses ${tmp} but no temporary directory was given"
	end
	return "uses ${state} but no state directory was given"
end

local function unknown_variable(name)
	return "unknown variable ${" .. name .. "}; the variables are ${workspace}, ${home}, ${tmp} and ${state}"
end

-- Index of the ']' closing the class that opens at `pos`, or nil. A ']'
-- right after '[' (or after '[!' / '[^') is a member, not the end.
local function class_end(text, pos)
	local i = pos + 1
	local c = string_sub(text, i, i)
	if c == "!" or c == "^" then
		i = i + 1
	end
	if string_sub(text, i, i) == "]" then
		i = i + 1
	end
	return string_find(text, "]", i, true)
end

-- Expands {a,b} groups (nested) into a list of brace-free strings. "${...}"
-- and "[...]" are atomic: a ',' or '{' inside them is not a group.
local function expand_braces(text)
	local pos, len = 1, #text
	local parse_seq

	local function product(acc, alts)
		local out = {}
		for _, a in ipairs(acc) do
			for _, b in ipairs(alts) do
				out[#out + 1] = a .. b
			end
		end
		return out
	end

	function parse_seq(depth)
		local acc = { "" }
		while pos <= len do
			local c = string_sub(text, pos, pos)
			local piece
			if c == "$" and string_sub(text, pos + 1, pos + 1) == "{" then
				local close = string_find(text, "}", pos + 2, true)
				if close == nil then
					return nil, "unclosed '${' in " .. quote(text)
				end
				piece = string_sub(text, pos, close)
				pos = close + 1
			elseif c == "[" then
				local close = class_end(text, pos)
				if close == nil then
					return nil, "unclosed '[' in " .. quote(text)
				end
				piece = string_sub(text, pos, close)
				pos = close + 1
			elseif c == "{" then
				pos = pos + 1
				local alts = {}
				while true do
					local part, err = parse_seq(depth + 1)
					if part == nil then
						return nil, err
					end
					for _, s in ipairs(part) do
						alts[#alts + 1] = s
					end
					local d = string_sub(text, pos, pos)
					if d == "," then
						pos = pos + 1
					elseif d == "}" then
						pos = pos + 1
						break
					else
						return nil, "unclosed '{' in " .. quote(text)
					end
				end
				acc = product(acc, alts)
				if #acc > M.MAX_ALTERNATIVES then
					return nil, string_format("%s expands to more than %d alternatives",
						quote(text), M.MAX_ALTERNATIVES)
				end
			elseif depth > 0 and (c == "," or c == "}") then
				return acc
			else
				-- A run of plain characters, up to the next one that may
				-- open or close something, taken whole.
				local stop = (string_find(text, "[%$%[{,}]", pos + 1) or len + 1) - 1
				piece = string_sub(text, pos, stop)
				pos = stop + 1
			end
			if piece ~= nil then
				for i = 1, #acc do
					acc[i] = acc[i] .. piece
				end
			end
		end
		return acc
	end

	return parse_seq(0)
end

-- Parses the members of a class "[...]" (the text between the brackets,
-- negation already removed) into a list of single characters and ranges.
local function parse_class_members(body, whole)
	local chars = {}
	for ch in string_gmatch(body, utf8_charpattern) do
		chars[#chars + 1] = ch
	end
	local items = {}
	local i = 1
	while i <= #chars do
		local ch = chars[i]
		if chars[i + 1] == "-" and chars[i + 2] ~= nil then
			local lo_ok, lo = pcall(utf8_codepoint, ch)
			local hi_ok, hi = pcall(utf8_codepoint, chars[i + 2])
			if not (lo_ok and hi_ok) then
				return nil, "a range in " .. quote(whole) .. " is not valid UTF-8"
			end
			if lo > hi then
				return nil, "the range " .. ch .. "-" .. chars[i + 2] .. " in " .. quote(whole) .. " is empty"
			end
			items[#items + 1] = { lo = lo, hi = hi }
			i = i + 3
		else
			items[#items + 1] = ch
			i = i + 1
		end
	end
	return items
end

-- Turns one brace-free alternative into tokens:
--   { t = "lit", text = bytes, glob = text with value parts escaped }
--   { t = "star", n = number of '*' in the run }, { t = "one" },
--   { t = "class", neg = bool, items = {...}, glob = "[...]" }
local function tokenize(alt, vars, whole)
	local tokens = {}
	local function lit(text, globtext)
		local last = tokens[#tokens]
		if last ~= nil and last.t == "lit" then
			last.text = last.text .. text
			last.glob = last.glob .. globtext
		else
			tokens[#tokens + 1] = { t = "lit", text = text, glob = globtext }
		end
	end

	local pos, len = 1, #alt
	if string_sub(alt, 1, 1) == "~" then
		local nextc = string_sub(alt, 2, 2)
		if nextc ~= "" and nextc ~= "/" then
			return nil, quote(whole) .. ": only a leading '~' or '~/' is understood (the home directory)"
		end
		local home = vars.home
		if home == nil then
			return nil, "uses '~' but no home directory was given"
		end
		lit(home, M.escape(home))
		pos = 2
	end
	while pos <= len do
		local c = string_sub(alt, pos, pos)
		if c == "$" and string_sub(alt, pos + 1, pos + 1) == "{" then
			local close = string_find(alt, "}", pos + 2, true)
			local name = string_sub(alt, pos + 2, close - 1)
			if not KNOWN[name] then
				return nil, unknown_variable(name)
			end
			local value = vars[name]
			if value == nil then
				return nil, M.missing_variable(name)
			end
			lit(value, M.escape(value))
			pos = close + 1
		elseif c == "*" then
			local stop = pos
			while string_sub(alt, stop + 1, stop + 1) == "*" do
				stop = stop + 1
			end
			tokens[#tokens + 1] = { t = "star", n = stop - pos + 1 }
			pos = stop + 1
		elseif c == "?" then
			tokens[#tokens + 1] = { t = "one" }
			pos = pos + 1
		elseif c == "[" then
			local close = class_end(alt, pos)
			local inner = string_sub(alt, pos + 1, close - 1)
			local neg = false
			local first = string_sub(inner, 1, 1)
			if first == "!" or first == "^" then
				neg = true
				inner = string_sub(inner, 2)
			end
			local items, err = parse_class_members(inner, whole)
			if items == nil then
				return nil, err
			end
			tokens[#tokens + 1] = { t = "class", neg = neg, items = items, glob = string_sub(alt, pos, close) }
			pos = close + 1
		else
			-- A run of ordinary bytes, up to the next character with a meaning.
			local stop = string_find(alt, "[%*%?%[%$]", pos + 1) or (len + 1)
			local run = string_sub(alt, pos, stop - 1)
			lit(run, run)
			pos = stop
		end
	end
	return tokens
end

local function is_lit(tok)
	return tok ~= nil and tok.t == "lit"
end

local function ends_with_slash(tok)
	return is_lit(tok) and string_sub(tok.text, -1) == "/"
end

local function starts_with_slash(tok)
	return is_lit(tok) and string_byte(tok.text, 1) == 47
end

-- Rewrites the token list into its final shape: repeated '/' collapsed, a
-- trailing '/' turned into "/**", "**" recognised where it is a whole
-- segment (elsewhere it is a plain '*'), and each "**" turned into
--   "tail" ("/**" at the end: the directory itself or anything beneath) or
--   "dirs" ("**/": zero or more whole directories) or "all" (only "**").
-- Returns nil, message for a glob that cannot match a clean absolute path.
local function shape(tokens, whole)
	for _, tok in ipairs(tokens) do
		if tok.t == "lit" then
			tok.text = string_gsub(tok.text, "//+", "/")
			tok.glob = string_gsub(tok.glob, "//+", "/")
		end
	end
	if ends_with_slash(tokens[#tokens]) then
		tokens[#tokens + 1] = { t = "star", n = 2 }
	end

	-- Which star runs are whole segments.
	for i, tok in ipairs(tokens) do
		if tok.t == "star" then
			local whole_seg = tok.n >= 2
				and (i == 1 or ends_with_slash(tokens[i - 1]))
				and (i == #tokens or starts_with_slash(tokens[i + 1]))
			tok.t = whole_seg and "globstar" or "star"
		end
	end

	-- "**/**" is "**".
	local merged = {}
	for _, tok in ipairs(tokens) do
		local n = #merged
		if tok.t == "globstar" and n >= 2 and merged[n - 1].t == "globstar"
			and merged[n].t == "lit" and merged[n].text == "/" then
			merged[n] = nil
		else
			merged[n + 1] = tok
		end
	end
	tokens = merged

	-- No "." or ".." segments: requests are matched in clean form, where
	-- they never occur, so such a glob could never match what it says.
	local shape_parts = {}
	for _, tok in ipairs(tokens) do
		shape_parts[#shape_parts + 1] = tok.t == "lit" and tok.text or "\0"
	end
	local flat = table_concat(shape_parts)
	for seg in string_gmatch(flat, "[^/]+") do
		if seg == "." or seg == ".." then
			return nil, quote(whole) .. " has a '" .. seg .. "' segment; write the path it means"
		end
	end

	local first = tokens[1]
	if first == nil then
		return nil, "empty glob"
	end
	if not (starts_with_slash(first) or first.t == "globstar") then
		return nil, quote(whole) .. " is not absolute: a glob starts with '/', '~/', ${var} or '**/'"
	end

	-- Name the kind of each "**" and take the '/' it owns off its neighbour.
	local out = {}
	local i = 1
	while i <= #tokens do
		local tok = tokens[i]
		if tok.t == "globstar" then
			if #tokens == 1 then
				out[#out + 1] = { t = "all" }
			elseif i == #tokens then
				local prev = out[#out]
				prev.text = string_sub(prev.text, 1, -2)
				prev.glob = string_sub(prev.glob, 1, -2)
				if prev.text == "" then
					out[#out] = nil
				end
				out[#out + 1] = { t = "tail" }
			else
				local nxt = tokens[i + 1]
				out[#out + 1] = { t = "dirs" }
				local rest = string_sub(nxt.text, 2)
				if rest ~= "" then
					out[#out + 1] = { t = "lit", text = rest, glob = string_sub(nxt.glob, 2) }
				end
				i = i + 1
			end
		else
			out[#out + 1] = tok
		end
		i = i + 1
	end
	return out
end

local function is_ascii_letter(b)
	return (b >= 65 and b <= 90) or (b >= 97 and b <= 122)
end

-- A pattern for literal bytes; with `nocase`, ASCII letters match either case.
local function literal(text, nocase)
	if not nocase or not string_find(text, "%a") then
		return P(text)
	end
	local pat = P(true)
	local run_start = 1
	for i = 1, #text do
		local b = string_byte(text, i)
		if is_ascii_letter(b) then
			if run_start < i then
				pat = pat * P(string_sub(text, run_start, i - 1))
			end
			local ch = string_char(b)
			pat = pat * S(string_lower(ch) .. string_upper(ch))
			run_start = i + 1
		end
	end
	if run_start <= #text then
		pat = pat * P(string_sub(text, run_start))
	end
	return pat
end

local function class_pattern(tok, nocase)
	local pat
	local function add(p)
		pat = pat and (pat + p) or p
	end
	for _, item in ipairs(tok.items) do
		if type(item) == "string" then
			add(literal(item, nocase))
		elseif item.hi < 128 then
			local set = {}
			for b = item.lo, item.hi do
				set[#set + 1] = string_char(b)
				if nocase and is_ascii_letter(b) then
					set[#set + 1] = string_char(b ~ 32)
				end
			end
			add(S(table_concat(set)))
		else
			local lo, hi = item.lo, item.hi
			add(Cmt(C(UTF8_MULTI + P(1)), function(_, _, ch)
				local ok, cp = pcall(utf8_codepoint, ch)
				return ok and cp >= lo and cp <= hi
			end))
		end
	end
	if pat == nil then
		pat = P(false)
	end
	if tok.neg then
		return ONE_CHAR - pat
	end
	-- A class never matches '/', not even through a range that spans it.
	return pat - P("/")
end

-- The literal text between the '*' at tokens[i] and the next '*' of the
-- same segment, and that star's index; nil when anything else (a '?', a
-- class, a "**/", the end) comes first.
local function literal_before_star(tokens, i)
	local j, parts = i + 1, {}
	while tokens[j] ~= nil and tokens[j].t == "lit" do
		parts[#parts + 1] = tokens[j].text
		j = j + 1
	end
	if j == i + 1 or tokens[j] == nil or tokens[j].t ~= "star" then
		return nil
	end
	local text = table_concat(parts)
	if text == "" then
		return nil
	end
	return text, j
end

-- One step of a '*' or "**/" that moves on to try the rest one place
-- further, in a glob with more than one of them. It matches nothing; calling a Lua function is what lets the Lua host's instruction
-- cap count the step. lpeg runs a pattern in C, where no instruction is
-- counted, and a glob with k such wildcards in a row can take time that
-- grows as the k-th power of the path's length ("*?*?*?*?*x" against a long
-- name): with this step the request is denied as a policy error when its
-- budget is spent, and the core goes on answering. A glob with a single
-- such wildcard tries each place once (linear time) and needs no count.
local function count_step(_, pos)
	return pos
end
local STEP = Cmt(P(true), count_step)

-- Compiles shaped tokens right to left: each token is followed by the
-- pattern for everything after it, so '*' and "**/" can try the rest at
-- each place they might stop (the backtracking a glob needs; PEG choices
-- do not backtrack by themselves).
--
-- A '*' followed by literal text and then another '*' ("*.min.*",
-- "*a*b*") stops at the first place the text occurs instead: whatever the
-- rest matches after a later occurrence, the next '*' can match after the
-- first one too (the text has a fixed width and the bytes between hold no
-- '/'). Trying every place there would make a glob with k such stars take
-- time growing as the k-th power of the name's length: a name a process
-- chooses could hold the core on one match for hours.
local function compile_tokens(tokens, nocase)
	local rests = { [#tokens + 1] = END }
	local rest = END
	-- A glob with one backtracking wildcard tries each place once: linear.
	-- With two or more, their steps are counted (STEP above).
	local wildcards = 0
	for i, tok in ipairs(tokens) do
		if tok.t == "dirs" or (tok.t == "star" and literal_before_star(tokens, i) == nil) then
			wildcards = wildcards + 1
		end
	end
	local step = wildcards >= 2 and STEP or P(true)
	for i = #tokens, 1, -1 do
		local tok = tokens[i]
		local t = tok.t
		local text, j
		if t == "star" then
			text, j = literal_before_star(tokens, i)
		end
		if t == "lit" then
			rest = literal(tok.text, nocase) * rest
		elseif t == "one" then
			rest = ONE_CHAR * rest
		elseif t == "class" then
			rest = class_pattern(tok, nocase) * rest
		elseif t == "star" and text ~= nil then
			local piece = literal(text, nocase)
			rest = (SEG_BYTE - piece) ^ 0 * piece * rests[j]
		elseif t == "star" then
			rest = P({ rest + SEG_BYTE * step * V(1) })
		elseif t == "dirs" then
			rest = P({ rest + SEG_BYTE ^ 0 * P("/") * step * V(1) })
		elseif t == "tail" then
			rest = ANY_TAIL
		else -- "all"
			rest = EVERYTHING
		end
		rests[i] = rest
	end
	return rest
end

-- The glob text of shaped tokens, with values escaped (for summaries).
local function render(tokens)
	local parts = {}
	for _, tok in ipairs(tokens) do
		local t = tok.t
		if t == "lit" then
			parts[#parts + 1] = tok.glob
		elseif t == "one" then
			parts[#parts + 1] = "?"
		elseif t == "class" then
			parts[#parts + 1] = tok.glob
		elseif t == "star" then
			parts[#parts + 1] = "*"
		elseif t == "dirs" then
			parts[#parts + 1] = "**/"
		elseif t == "tail" then
			parts[#parts + 1] = "/**"
		else
			parts[#parts + 1] = "**"
		end
	end
	return table_concat(parts)
end

-- Where the matches of shaped tokens live, for mount plans:
--   kind "exact"   — exactly the path `base`;
--   kind "tree"    — `base` and everything beneath it;
--   kind "pattern" — some paths beneath `base`.
local function base_of(tokens)
	local first = tokens[1]
	if first.t ~= "lit" then
		local whole_tree = first.t == "all" or first.t == "tail"
		return { base = "/", kind = whole_tree and "tree" or "pattern" }
	end
	if #tokens == 1 then
		return { base = first.text, kind = "exact" }
	end
	if #tokens == 2 and tokens[2].t == "tail" then
		return { base = first.text == "" and "/" or first.text, kind = "tree" }
	end
	local dir = string_match(first.text, "^(.*)/") or ""
	if tokens[2].t == "dirs" and string_sub(first.text, -1) == "/" then
		dir = string_sub(first.text, 1, -2)
	end
	return { base = dir == "" and "/" or dir, kind = "pattern" }
end

-- The longest literal run of shaped tokens: every path the glob matches
-- contains it. nil when the glob has no literal at all.
local function longest_literal(tokens)
	local best
	for _, tok in ipairs(tokens) do
		if tok.t == "lit" and tok.text ~= "" and (best == nil or #tok.text > #best) then
			best = tok.text
		end
	end
	return best
end

-- What the last name of a path must be like for shaped tokens to match the
-- path, whatever its directories are:
--   true when no name is singled out (the glob ends in "**", in "/**" past
--     the name, or its last segment is '*' with at most one '?': a name is
--     never empty);
--   "=lit" when only that name matches (the segment is a literal),
--   "^lit" / "$lit" when a name must start / end with the literal,
--   "*lit" when it must contain it (the segment's longest literal);
--   false when the segment picks names by something else (a class, or
--     '?'s that count its characters).
-- The name is what follows the path's last '/'; the tokens after a "**/"
-- or after the last '/' of a literal are what match it, as "**/" and a
-- literal's '/' always stop at a segment's start. A "/**" at the end also
-- matches nothing at all: then the segment before it names the last name.
local function last_name_need(tokens)
	local stop = #tokens
	local last = tokens[stop]
	if last.t == "all" then
		return true
	end
	if last.t == "tail" then
		stop = stop - 1
		if stop == 0 then
			return true	-- "/**": every path
		end
	end
	-- The last segment's tokens, first to last.
	local seg = {}
	for i = stop, 1, -1 do
		local tok = tokens[i]
		if tok.t == "dirs" then
			break
		end
		if tok.t == "lit" then
			local part = string_match(tok.text, "([^/]*)$")
			if part ~= "" then
				table_insert(seg, 1, { t = "lit", text = part })
			end
			if #part < #tok.text then
				break
			end
		else
			table_insert(seg, 1, tok)
		end
	end
	local first, final = seg[1], seg[#seg]
	if #seg == 1 and first.t == "lit" then
		return "=" .. first.text
	elseif first ~= nil and first.t == "lit" then
		return "^" .. first.text
	elseif final ~= nil and final.t == "lit" then
		return "$" .. final.text
	end
	local best, wild, stars, ones = nil, true, 0, 0
	for _, tok in ipairs(seg) do
		if tok.t == "lit" then
			if best == nil or #tok.text > #best then
				best = tok.text
			end
		elseif tok.t == "star" then
			stars = stars + 1
		elseif tok.t == "one" then
			ones = ones + 1
		else
			wild = false
		end
	end
	if best ~= nil then
		return "*" .. best
	end
	return wild and stars > 0 and ones <= 1
end

--- Compiles one glob.
-- `text`: the glob as written; a leading '!' marks an exception.
-- `vars`: { workspace=, home=, tmp=, state= } (absolute, clean values).
-- `opts.nocase`: ASCII letters match in either case.
-- Returns { text =, negate =, pattern = lpeg pattern (whole-path match),
--           expanded = { glob strings with variables and braces expanded },
--           bases = { { base =, kind = } ... },
--           required = { per alternative, { prefix = literal every match
--                        starts with } or { contains = literal every match
--                        holds } } or false when some alternative has
--                        neither (or with nocase) },
--           name_needs = { what a last name is like when the glob may
--                          single it out ("=lit", "^lit", "$lit", "*lit":
--                          last_name_need) } or false },
--           or nil and a sentence.
function M.compile(text, vars, opts)
	if type(text) ~= "string" then
		return nil, "expected a string glob, got " .. type(text)
	end
	vars = vars or {}
	local nocase = opts ~= nil and opts.nocase == true
	local body, negate = text, false
	if string_sub(text, 1, 1) == "!" then
		body, negate = string_sub(text, 2), true
	end
	if body == "" then
		return nil, "empty glob"
	end
	if string_find(body, "\0", 1, true) then
		return nil, "a glob cannot hold a NUL byte"
	end
	local alts, err = expand_braces(body)
	if alts == nil then
		return nil, err
	end
	local pattern
	local expanded, bases, required, name_needs = {}, {}, {}, {}
	for _, alt in ipairs(alts) do
		local tokens
		tokens, err = tokenize(alt, vars, body)
		if tokens == nil then
			return nil, err
		end
		tokens, err = shape(tokens, alt)
		if tokens == nil then
			return nil, err
		end
		local p = compile_tokens(tokens, nocase)
		pattern = pattern and (pattern + p) or p
		expanded[#expanded + 1] = render(tokens)
		bases[#bases + 1] = base_of(tokens)
		-- For a quick reject: a literal the path must start with, else one it
		-- must contain.
		local first, need = tokens[1], nil
		if nocase then
			need = nil
		elseif first.t == "lit" and first.text ~= "" then
			need = { prefix = first.text }
		else
			local lit = longest_literal(tokens)
			need = lit ~= nil and { contains = lit } or nil
		end
		if required and need then
			required[#required + 1] = need
		else
			required = false
		end
		local name_need = last_name_need(tokens)
		if name_need == false then
			name_needs = false
		elseif name_needs and name_need ~= true then
			name_needs[#name_needs + 1] = name_need
		end
	end
	return {
		text = text,
		negate = negate,
		pattern = pattern,
		expanded = expanded,
		bases = bases,
		required = required,
		name_needs = name_needs,
	}
end

--- Convenience for callers that want a predicate: returns
-- function(path) -> bool (ignoring any '!'), or nil and a sentence.
function M.matcher(text, vars, opts)
	local g, err = M.compile(text, vars, opts)
	if g == nil then
		return nil, err
	end
	local pattern = g.pattern
	return function(path)
		return lpeg.match(pattern, path) ~= nil
	end
end

--- Expands '~', '~/' and ${var} in a plain path (a self-test path): no
-- glob characters are interpreted. Returns the path or nil and a sentence.
function M.expand_path(text, vars)
	if type(text) ~= "string" then
		return nil, "expected a string path, got " .. type(text)
	end
	vars = vars or {}
	local out = text
	if string_sub(out, 1, 1) == "~" then
		local nextc = string_sub(out, 2, 2)
		if nextc ~= "" and nextc ~= "/" then
			return nil, quote(text) .. ": only a leading '~' or '~/' is understood (the home directory)"
		end
		if vars.home == nil then
			return nil, "uses '~' but no home directory was given"
		end
		out = vars.home .. string_sub(out, 2)
	end
	local failure
	out = string_gsub(out, "%${([^}]*)}", function(name)
		if failure ~= nil then
			return nil
		end
		if not KNOWN[name] then
			failure = unknown_variable(name)
			return nil
		end
		local value = vars[name]
		if value == nil then
			failure = M.missing_variable(name)
			return nil
		end
		return value
	end)
	if failure ~= nil then
		return nil, failure
	end
	return (string_gsub(out, "//+", "/"))
end

return M
