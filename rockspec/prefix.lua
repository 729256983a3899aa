-- prefix.lua — the rock's build step: copies of the policy modules whose
-- requires name the installed modules (fsbroker.policy.engine), for a Lua
-- tree the rock shares with other rocks. The sources keep the names the
-- core loads them by from its own Lua dir (policy.engine): see
-- docs/decisions.md, "The rock installs the policy under fsbroker.".
--
-- lua5.4 rockspec/prefix.lua SRC_DIR OUT_DIR MODULE...

-- luarocks picks the interpreter (on Debian Lua 5.1 unless told): refuse
-- any other than 5.4 rather than install modules that would not load.
if _VERSION ~= "Lua 5.4" then
	io.stderr:write("fsbroker-policy needs Lua 5.4, and luarocks chose ", _VERSION,
		": run luarocks --lua-version 5.4 make --deps-mode=none ",
		"rockspec/fsbroker-policy-*.rockspec (or luarocks config lua_version 5.4 once)\n")
	os.exit(1)
end

local src, out = arg[1], arg[2]
assert(src and out and #arg > 2, "usage: prefix.lua SRC_DIR OUT_DIR MODULE...")
assert(os.execute("mkdir -p '" .. out .. "'"))

for i = 3, #arg do
	local name = arg[i]
	local f = assert(io.open(src .. "/" .. name .. ".lua", "rb"))
	local text = f:read("a")
	f:close()
	text = text:gsub('require%("policy([%."])', 'require("fsbroker.policy%1')
	-- A require the rewrite missed would load another rock's "policy".
	local left = text:match('require%s*%(?%s*["\']policy[%."\']')
	if left then
		io.stderr:write("prefix.lua: ", name, ".lua: a require of an unprefixed module is left: ",
			left, "\n")
		os.exit(1)
	end
	f = assert(io.open(out .. "/" .. name .. ".lua", "wb"))
	assert(f:write(text))
	assert(f:close())
end
