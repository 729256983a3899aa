-- policy.approvals — approvals the user gave for `ask` verdicts.
-- An approval is bound to one exact key (op, real path, dev, ino) and is
-- plain data, so the core can carry it across a pack reload.

local string_byte, string_format = string.byte, string.format
local math_tointeger, math_type = math.tointeger, math.type
local ipairs, next, setmetatable = ipairs, next, setmetatable
local tostring, type = tostring, type
local os_time = os and os.time

local _ENV = nil

local M = {}

local SCOPES = { once = true, session = true }
local SLASH = 47 -- '/'

local function any_op(op)
	return type(op) == "string" and op ~= ""
end

-- dev and ino as one spelling: 5 and 5.0 are the same inode.
local function id_part(v)
	if v == nil then
		return ""
	end
	if math_type(v) == "float" then
		local i = math_tointeger(v)
		if i ~= nil then
			return tostring(i)
		end
	end
	return tostring(v)
end

--- The key an approval and a request are matched by. dev and ino are absent
-- for a path that did not exist when it was approved; such an approval
-- matches only while the path still does not exist.
function M.key(op, path, dev, ino)
	return op .. "\0" .. path .. "\0" .. id_part(dev) .. "\0" .. id_part(ino)
end

local function check_id(v, name)
	if v == nil then
		return true
	end
	if math_type(v) == "integer" or (math_type(v) == "float" and math_tointeger(v) ~= nil) then
		return true
	end
	return nil, string_format("%s: expected a whole number, got %s", name, tostring(v))
end

-- Checks one approval record; returns a clean copy or nil and a sentence.
-- `is_op` tells whether an op name is known.
local function clean(a, is_op)
	if type(a) ~= "table" then
		return nil, "expected an approval table, got " .. type(a)
	end
	if not is_op(a.op) then
		return nil, "op: expected a known op, got " .. tostring(a.op)
	end
	if type(a.path) ~= "string" or string_byte(a.path, 1) ~= SLASH then
		return nil, "path: expected the absolute real path, got "
			.. (type(a.path) == "string" and ("'" .. a.path .. "'") or type(a.path))
	end
	local ok, err = check_id(a.dev, "dev")
	if not ok then
		return nil, err
	end
	ok, err = check_id(a.ino, "ino")
	if not ok then
		return nil, err
	end
	local scope = a.scope or "once"
	if not SCOPES[scope] then
		return nil, 'scope: expected "once" or "session", got ' .. tostring(scope)
	end
	if a.session ~= nil and type(a.session) ~= "string" then
		return nil, "session: expected a string, got " .. type(a.session)
	end
	local time = a.time
	if type(time) ~= "number" then
		time = os_time and os_time() or nil
	end
	return {
		op = a.op, path = a.path, dev = a.dev, ino = a.ino,
		scope = scope, session = a.session, time = time,
	}
end

local Store = {}
Store.__index = Store

--- A new, empty approval store. `is_op(name)` validates op names (any
-- non-empty string when it is not given).
function M.new(is_op)
	return setmetatable({ by_key = {}, order = {}, dead = 0, is_op = is_op or any_op }, Store)
end

-- Records are kept per key and per session (nil session: any session).
local ANY = "\0any"

local function slot(self, key, session)
	local per = self.by_key[key]
	if per == nil then
		per = {}
		self.by_key[key] = per
	end
	return per, session or ANY
end

--- Records an approval. A session approval replaces a once approval for
-- the same key; approving the same key once twice still allows one request.
-- Returns true or nil and a sentence.
function Store:add(a)
	local rec, err = clean(a, self.is_op)
	if rec == nil then
		return nil, err
	end
	local key = M.key(rec.op, rec.path, rec.dev, rec.ino)
	local per, who = slot(self, key, rec.session)
	local old = per[who]
	if old ~= nil and old.scope == "session" then
		return true
	end
	if old ~= nil then
		old.dead = true
		self.dead = self.dead + 1
	end
	per[who] = rec
	self.order[#self.order + 1] = rec
	return true
end

--- Looks for an approval of this exact key for `session`. A session
-- approval stays; a once approval is used up, unless `peek` is true (a
-- question about the request, not the request itself). Returns the scope or
-- nil.
function Store:take(op, path, dev, ino, session, peek)
	local key = M.key(op, path, dev, ino)
	local per = self.by_key[key]
	if per == nil then
		return nil
	end
	local owners = { ANY }
	if session ~= nil then
		owners = { session, ANY }
	end
	-- First pass: a lasting approval, so that a once approval is kept for
	-- later; second pass: a once approval, which this request uses up.
	for pass = 1, 2 do
		for _, who in ipairs(owners) do
			local rec = per[who]
			if rec ~= nil and (pass == 2 or rec.scope == "session") then
				if rec.scope == "once" and not peek then
					rec.dead = true
					per[who] = nil
					if next(per) == nil then
						self.by_key[key] = nil
					end
					self.dead = self.dead + 1
					if self.dead > 64 and self.dead * 2 > #self.order then
						self:compact()
					end
				end
				return rec.scope
			end
		end
	end
	return nil
end

-- Drops used-up and replaced records from the insertion order.
function Store:compact()
	local live = {}
	for _, rec in ipairs(self.order) do
		if not rec.dead then
			live[#live + 1] = rec
		end
	end
	self.order = live
	self.dead = 0
end

--- Every live approval as plain tables, oldest first.
function Store:list()
	self:compact()
	local out = {}
	for i, rec in ipairs(self.order) do
		out[i] = {
			op = rec.op, path = rec.path, dev = rec.dev, ino = rec.ino,
			scope = rec.scope, session = rec.session, time = rec.time,
		}
	end
	return out
end

--- Adds the approvals of `list` (as list() returns them). Returns the
-- number restored and a list of sentences for the entries refused.
function Store:restore(list)
	if type(list) ~= "table" then
		return 0, { "expected a list of approvals, got " .. type(list) }
	end
	local n, problems = 0, {}
	for i, a in ipairs(list) do
		local ok, err = self:add(a)
		if ok then
			n = n + 1
		else
			problems[#problems + 1] = string_format("approvals[%d]: %s", i, err)
		end
	end
	return n, problems
end

return M
