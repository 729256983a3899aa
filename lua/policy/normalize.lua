-- policy.normalize — the path forms a request is matched under.
-- Normalisation serves rule matching only (the core always opens the real
-- path) and is arranged so that it can only ever make a verdict stricter.

local string_byte, string_find, string_sub = string.byte, string.find, string.sub
local string_match = string.match
local table_concat = table.concat
local type = type

local _ENV = nil

local M = {}

local SLASH = 47 -- '/'
local DOT = 46 -- '.'

--- True when `p` is a string starting with '/'.
function M.is_absolute(p)
	return type(p) == "string" and string_byte(p, 1) == SLASH
end

--- Lexical clean-up: collapses "//", drops "." segments, resolves ".."
-- against the segment before it (never above the root) and removes a
-- trailing '/'. Relative paths stay relative ("a/../b" -> "b"; a leading
-- ".." that cannot be resolved is kept). A backslash is an ordinary byte.
function M.lexical(p)
	local absolute = string_byte(p, 1) == SLASH
	-- The common case, a path the core already resolved, is clean as it is:
	-- answer it without splitting.
	if absolute and not string_find(p, "//", 1, true) and not string_find(p, "/./", 1, true)
		and not string_find(p, "/../", 1, true) then
		local n = #p
		local last, before = string_byte(p, n), string_byte(p, n - 1)
		-- Not ending in "/", "/." or "/..".
		if n == 1 or (last ~= SLASH and not (last == DOT and (before == SLASH
			or (before == DOT and string_byte(p, n - 2) == SLASH)))) then
			return p
		end
	end
	local out, n = {}, 0
	local pos, len = 1, #p
	while pos <= len do
		local stop = string_find(p, "/", pos, true) or (len + 1)
		local seg = string_sub(p, pos, stop - 1)
		if seg == "" or seg == "." then
			-- "//" and "/./" add nothing
		elseif seg == ".." then
			if n > 0 and out[n] ~= ".." then
				out[n] = nil
				n = n - 1
			elseif not absolute then
				n = n + 1
				out[n] = ".."
			end
			-- "/.." is "/": there is nothing above the root
		else
			n = n + 1
			out[n] = seg
		end
		pos = stop + 1
	end
	local body = table_concat(out, "/")
	if absolute then
		return "/" .. body
	end
	if body == "" then
		return "."
	end
	return body
end

-- macOS links these top-level names into /private; realpath() reports the
-- /private form while packs are written with the short one.
local PRIVATE_PREFIXES = { "/private/var", "/private/tmp", "/private/etc" }

--- Maps a lexically clean absolute path to the form packs are written in
-- for `platform`: on macOS "/private/var/x" -> "/var/x" (also tmp, etc).
-- On Linux the path is returned unchanged.
function M.platform_map(p, platform)
	if platform ~= "macos" then
		return p
	end
	for i = 1, #PRIVATE_PREFIXES do
		local prefix = PRIVATE_PREFIXES[i]
		local n = #prefix
		if string_sub(p, 1, n) == prefix then
			local nextc = string_byte(p, n + 1)
			if nextc == nil or nextc == SLASH then
				return string_sub(p, 9) -- drop "/private"
			end
		end
	end
	return p
end

--- The canonical matching form of a path: lexical clean-up, then the
-- platform mapping.
function M.canonical(p, platform)
	local clean = M.lexical(p)
	if string_byte(clean, 1) == SLASH then
		return M.platform_map(clean, platform)
	end
	return clean
end

--- If the last segment is a BSD `sed -i` temporary name ".!<pid>!name",
-- returns the path with that segment replaced by "name"; else nil.
function M.strip_sed_temp(p)
	if not string_find(p, ".!", 1, true) then
		return nil
	end
	local dir, base = string_match(p, "^(.-)([^/]*)$")
	local name = string_match(base, "^%.!%d+!(.+)$")
	if name == nil then
		return nil
	end
	return dir .. name
end

--- The forms under which `p` is judged, as an array of
-- { path = string, full = bool }. The first entry is the canonical form and
-- is judged by every rule. `full = false` entries are judged against the deny
-- lists only: they are spellings of the same file that a deny rule might
-- name (the raw path before clean-up or before the macOS mapping), and they
-- may only add a deny. A BSD sed temp name is judged in full under its
-- target name as well: whatever the target would get, the temp file gets
-- no better.
function M.forms(p, platform)
	local primary = M.canonical(p, platform)
	-- The common case, a clean path that is no sed temporary, has one form
	-- (its raw and lexical spellings are the canonical one).
	if primary == p and not string_find(p, ".!", 1, true) then
		return { { path = p, full = true } }
	end
	local forms = { { path = primary, full = true } }
	local seen = { [primary] = true }
	local sed = M.strip_sed_temp(primary)
	if sed ~= nil then
		sed = M.canonical(sed, platform)
		if not seen[sed] then
			seen[sed] = true
			forms[#forms + 1] = { path = sed, full = true }
		end
	end
	-- The raw spelling and its lexical clean-up without the platform map.
	local raw = p
	if not seen[raw] then
		seen[raw] = true
		forms[#forms + 1] = { path = raw, full = false }
	end
	local clean = M.lexical(p)
	if not seen[clean] then
		seen[clean] = true
		forms[#forms + 1] = { path = clean, full = false }
	end
	return forms
end

return M
