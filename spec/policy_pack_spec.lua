-- Specs for policy.pack through policy.load: what a pack may hold, how
-- includes resolve and merge, and the one error string a bad pack gets.

local packs = require("spec.helpers.packs")
local policy = require("policy")

local function load_error(files, opts)
	local eng, err = packs.load(files, opts)
	assert.is_nil(eng)
	assert.is_string(err)
	return err
end

local function contains(haystack, needle)
	assert.is_truthy(haystack:find(needle, 1, true), "expected to find:\n  " .. needle .. "\nin:\n  " .. haystack)
end

describe("policy.pack", function()
	describe("syntax and runtime errors", function()
		it("carry the file and line Lua reports", function()
			local err = load_error({ top = 'return {\n  name = "x",\n  denyRead = { "~/.ssh/**" \n  reads = "mask",\n}' })
			assert.is_truthy(err:match("^/r/top%.lua:4: "), err)
		end)

		it("carry the line of a runtime error", function()
			local err = load_error({ top = 'local t = nil\nreturn { name = t.name }' })
			assert.is_truthy(err:match("^/r/top%.lua:2: attempt to index"), err)
		end)

		it("name the file for an error raised without a position", function()
			local err = load_error({ top = 'error("no pack today", 0)' })
			assert.are.equal("/r/top.lua: no pack today", err)
		end)

		it("use the real loadfile when none is given, with the file's line", function()
			local dir = packs.tmpdir()
			finally(function()
				packs.rmtree(dir)
			end)
			packs.write(dir .. "/bad.lua", 'return {\n  name = "bad"\n  reads = "mask" }\n')
			local eng, err = policy.load({ pack = dir .. "/bad.lua", rules_dirs = { dir }, vars = packs.VARS })
			assert.is_nil(eng)
			assert.is_truthy(err:find(dir .. "/bad.lua:3:", 1, true), err)
		end)

		it("refuse a pack that returns something other than a table", function()
			local err = load_error({ top = 'return "default"' })
			assert.are.equal("/r/top.lua: a pack returns a table, got string", err)
		end)

		it("refuse a precompiled (binary) chunk", function()
			local bytecode = string.dump(function()
				return { name = "x" }
			end)
			local err = load_error({ top = bytecode })
			assert.is_truthy(err:find("attempt to load a binary chunk", 1, true), err)
		end)
	end)

	describe("field checks", function()
		local CASES = {
			{ "a glob of the wrong type",
				'{ name = "t", fsProfile = { modify = { "/a/**", 42 } } }',
				"/r/top.lua: fsProfile.modify[2]: expected a string glob, got number" },
			{ "an unknown top-level field",
				'{ name = "t", denyread = { "/x" } }',
				"/r/top.lua: denyread: unknown field; a pack has name, include, fsProfile, denyRead, "
					.. "denyModify, denyWrite, ask, backup, delete, reads, network, env, decide, hardlinks, hardlinkTrees, tests" },
			{ "an unknown nested field",
				'{ name = "t", fsProfile = { write = { "/x" } } }',
				"/r/top.lua: fsProfile.write: unknown field; fsProfile has read, modify" },
			{ "a list given as a string",
				'{ name = "t", denyRead = "~/.ssh/**" }',
				"/r/top.lua: denyRead: expected a list of string globs, got string" },
			{ "a list with a named key",
				'{ name = "t", denyRead = { "/a", b = "/b" } }',
				'/r/top.lua: denyRead: unexpected key "b": a list holds only values' },
			{ "a missing name",
				'{ fsProfile = { read = { "/**" } } }',
				"/r/top.lua: name: expected the pack's name (a non-empty string), got nil" },
			{ "a wrong enum value",
				'{ name = "t", reads = "all" }',
				'/r/top.lua: reads: expected "mask" or "broker", got "all"' },
			{ "a wrong network value",
				'{ name = "t", network = "off" }',
				'/r/top.lua: network: expected "host" or "none", got "off"' },
			{ "a network that is not a string",
				'{ name = "t", network = false }',
				'/r/top.lua: network: expected "host" or "none", got boolean' },
			{ "a network allowlist, reserved for a later version",
				'{ name = "t", network = { allow = { "registry.npmjs.org:443" } } }',
				'/r/top.lua: network: a table (an allowlist of hosts) is reserved for a later version; '
					.. 'expected "host" or "none"' },
			{ "a wrong hardlinks value",
				'{ name = "t", hardlinks = true }',
				'/r/top.lua: hardlinks: expected "ask", "allow" or "deny", got boolean' },
			{ "a negative backup size",
				'{ name = "t", backup = { maxSizeMB = -1 } }',
				"/r/top.lua: backup.maxSizeMB: expected a number above 0, got -1" },
			{ "a wrong onTooLarge",
				'{ name = "t", backup = { onTooLarge = "skip" } }',
				'/r/top.lua: backup.onTooLarge: expected "ask", "allow" or "deny", got "skip"' },
			{ "a wrong durability",
				'{ name = "t", backup = { durability = "lazy" } }',
				'/r/top.lua: backup.durability: expected "strict" or "batched", got "lazy"' },
			{ "a durability that is no string",
				'{ name = "t", backup = { durability = true } }',
				'/r/top.lua: backup.durability: expected "strict" or "batched", got boolean' },
			{ "a wrong delete mode",
				'{ name = "t", delete = { mode = "shred" } }',
				'/r/top.lua: delete.mode: expected "trash" or "unlink", got "shred"' },
			{ "a bad environment variable name",
				'{ name = "t", env = { pass = { "PATH", "A=B" } } }',
				'/r/top.lua: env.pass[2]: "A=B" is not an environment variable name' },
			{ "a decide that is not a function",
				'{ name = "t", decide = "deny" }',
				"/r/top.lua: decide: expected a function(req, verdict), got string" },
			{ "an unknown variable",
				'{ name = "t", denyRead = { "/a", "${wrkspace}/x" } }',
				"/r/top.lua: denyRead[2]: unknown variable ${wrkspace}; the variables are ${workspace}, ${home}, ${tmp} and ${state}" },
			{ "a relative glob",
				'{ name = "t", ask = { modify = { "src/**" } } }',
				"/r/top.lua: ask.modify[1]: 'src/**' is not absolute: a glob starts with '/', '~/', ${var} or '**/'" },
			{ "a backup.skip glob of the wrong type",
				'{ name = "t", backup = { skip = { false } } }',
				"/r/top.lua: backup.skip[1]: expected a string glob, got boolean" },
			{ "a self-test with an unknown op",
				'{ name = "t", tests = { { op = "open", path = "/a", expect = "deny" } } }',
				'/r/top.lua: tests[1].op: expected an op (read, write, create, delete, rename-from, rename-to, '
					.. 'mkdir, link, symlink, chmod, chown, utimes, xattr, touch), got "open"' },
			{ "a self-test with an unknown field",
				'{ name = "t", tests = { { op = "read", path = "/a", expect = "deny", expected = "deny" } } }',
				"/r/top.lua: tests[1].expected: unknown field; tests[1] has op, path, expect, exists, nlink, "
					.. "dev, ino, requested, type, rule, skipUnder" },
			{ "a self-test with a wrong expect",
				'{ name = "t", tests = { { op = "read", path = "/a", expect = "no" } } }',
				'/r/top.lua: tests[1].expect: expected "allow", "deny" or "ask", got "no"' },
			{ "a list where a record belongs",
				'{ name = "t", fsProfile = { { "/**" } } }',
				"/r/top.lua: fsProfile[1]: unknown field; fsProfile has read, modify" },
			{ "a self-test with a relative path",
				'{ name = "t", tests = { { op = "read", path = "a/b", expect = "deny" } } }',
				'/r/top.lua: tests[1].path: "a/b" is not absolute' },
		}
		for _, c in ipairs(CASES) do
			it("name the field path for " .. c[1], function()
				assert.are.equal(c[3], load_error({ top = "return " .. c[2] }))
			end)
		end
	end)

	describe("variables", function()
		it("refuse ${workspace} when no workspace was given, saying --workspace is needed", function()
			local err = load_error({ top = 'return { name = "t", fsProfile = { modify = { "${workspace}/**" } } }' },
				{ vars = { home = "/home/u" } })
			assert.are.equal("/r/top.lua: fsProfile.modify[1]: uses ${workspace} but no workspace was given: "
				.. "this pack needs --workspace DIR", err)
		end)

		it("refuse ${workspace} in a self-test path when no workspace was given", function()
			local err = load_error({ top = 'return { name = "t", tests = { { op = "read", path = "${workspace}/a", expect = "deny" } } }' },
				{ vars = { home = "/home/u" } })
			contains(err, "/r/top.lua: tests[1].path: uses ${workspace}")
		end)

		it("load a pack that does not use ${workspace} without one", function()
			local eng = packs.engine({ top = 'return { name = "t", fsProfile = { read = { "/**" } } }' },
				{ vars = { home = "/home/u" } })
			assert.are.equal("allow", eng:evaluate({ op = "read", path = "/etc/hosts" }).decision)
		end)

		it("refuse an unknown variable name in vars", function()
			local err = load_error({ top = 'return { name = "t" }' }, { vars = { home = "/home/u", project = "/p" } })
			contains(err, "vars.project: unknown variable")
		end)

		local REFUSED = {
			{ "/", "the workspace '/' is refused" },
			{ "//", "the workspace '/' is refused" },
			{ "~", "the workspace '~' is refused" },
			{ "/home/u", "the workspace /home/u is refused: it is the home directory" },
			{ "/home/u/", "the workspace /home/u is refused: it is the home directory" },
			{ "/home/u/proj/..", "the workspace /home/u is refused: it is the home directory" },
			{ "/home", "the workspace /home is refused: it contains the home directory /home/u" },
			{ "proj", "the workspace 'proj' is not an absolute path" },
			{ "~/proj", "is not an absolute path (the shell did not expand '~')" },
		}
		for _, c in ipairs(REFUSED) do
			it("refuse the workspace " .. c[1], function()
				local err = load_error({ top = 'return { name = "t" }' },
					{ vars = { workspace = c[1], home = "/home/u", tmp = "/tmp" } })
				assert.is_truthy(err:find("^/r/top%.lua: "), err)
				contains(err, c[2])
			end)
		end

		it("accept a project directory in home", function()
			local eng = packs.engine({ top = 'return { name = "t", fsProfile = { modify = { "${workspace}/**" } } }' },
				{ vars = { workspace = "/home/u/proj/", home = "/home/u" } })
			assert.are.equal("allow", eng:evaluate({ op = "write", path = "/home/u/proj/a" }).decision)
			assert.are.equal("deny", eng:evaluate({ op = "write", path = "/home/u/projx" }).decision)
		end)
	end)

	describe("includes", function()
		local VALID = 'return { name = "inc" }'
		for _, bad in ipairs({ "../credentials", "sub/credentials", "/etc/passwd", "", "..", "a..b", ".hidden" }) do
			it(string.format("refuse the include name %q", bad), function()
				local err = load_error({ top = string.format('return { name = "t", include = { %q } }', bad), inc = VALID })
				assert.is_truthy(err:find('^/r/top%.lua: include%[1%]: ".*" is not a pack name'), err)
			end)
		end

		it("refuse an include that is not a string", function()
			local err = load_error({ top = 'return { name = "t", include = { 7 } }' })
			assert.are.equal("/r/top.lua: include[1]: expected a pack name (string), got number", err)
		end)

		it("resolve only from the rules directories, never next to the pack", function()
			local err = load_error({ ["/p/top.lua"] = 'return { name = "t", include = { "inc" } }', ["/p/inc.lua"] = VALID },
				{ pack = "/p/top.lua", rules_dirs = { "/r" } })
			assert.are.equal('/p/top.lua: include[1]: no pack "inc" in the rules directories (/r)', err)
		end)

		it("take the first rules directory that has the pack", function()
			local eng = packs.engine({
				["/p/top.lua"] = 'return { name = "t", include = { "inc" } }',
				["/r1/inc.lua"] = 'return { name = "first", denyRead = { "/one" } }',
				["/r2/inc.lua"] = 'return { name = "second", denyRead = { "/two" } }',
			}, { pack = "/p/top.lua", rules_dirs = { "/r1", "/r2" } })
			assert.are.same({ "/p/top.lua", "/r1/inc.lua" }, eng.files)
			assert.are.same({ "/one" }, eng:summary().denyRead)
		end)

		it("report a syntax error in an included pack with its file and line", function()
			local err = load_error({ top = 'return { name = "t", include = { "inc" } }', inc = 'return {\n name = \n}' })
			assert.is_truthy(err:match("^/r/inc%.lua:3: "), err)
		end)

		it("refuse a cycle, naming the files in it", function()
			local err = load_error({
				top = 'return { name = "t", include = { "a" } }',
				a = 'return { name = "a", include = { "b" } }',
				b = 'return { name = "b", include = { "top" } }',
			})
			assert.are.equal("/r/b.lua: include[1]: include cycle: /r/top.lua -> /r/a.lua -> /r/b.lua -> /r/top.lua", err)
		end)

		it("refuse a pack that includes itself", function()
			local err = load_error({ top = 'return { name = "t", include = { "top" } }' })
			contains(err, "include cycle: /r/top.lua -> /r/top.lua")
		end)

		it("merge a pack included twice once", function()
			local eng = packs.engine({
				top = 'return { name = "t", include = { "a", "b" } }',
				a = 'return { name = "a", include = { "d" } }',
				b = 'return { name = "b", include = { "d" } }',
				d = 'return { name = "d", denyRead = { "/secret" } }',
			})
			assert.are.same({ "/r/top.lua", "/r/a.lua", "/r/d.lua", "/r/b.lua" }, eng.files)
			assert.are.same({ "/secret" }, eng:summary().denyRead)
		end)

		it("concatenate lists, included packs first, and let the including pack win scalars", function()
			local eng = packs.engine({
				top = [[return { name = "top", include = { "a", "b" },
					denyRead = { "/top" }, reads = "broker", env = { pass = { "PATH", "TERM" } } }]],
				a = 'return { name = "a", denyRead = { "/a" }, reads = "mask", hardlinks = "deny", env = { pass = { "PATH" } } }',
				b = 'return { name = "b", denyRead = { "/b" }, hardlinks = "allow", backup = { maxSizeMB = 3 } }',
			})
			local s = eng:summary()
			assert.are.equal("top", eng.name)
			assert.are.same({ "/a", "/b", "/top" }, s.denyRead)
			assert.are.equal("broker", s.reads)
			assert.are.equal("allow", s.hardlinks)
			assert.are.equal("host", s.network)
			assert.are.equal(3, s.backup.maxSizeMB)
			assert.are.same({ "PATH", "TERM" }, s.env_pass)
		end)

		it("keep network = \"none\" from an included pack, and let the including pack set it back", function()
			local cut = packs.engine({
				top = 'return { name = "top", include = { "a" } }',
				a = 'return { name = "a", network = "none" }',
			})
			assert.are.equal("none", cut:summary().network)
			local open = packs.engine({
				top = 'return { name = "top", include = { "a" }, network = "host" }',
				a = 'return { name = "a", network = "none" }',
			})
			assert.are.equal("host", open:summary().network)
		end)
	end)

	describe("self-tests", function()
		it("refuse a pack whose test fails, naming the test, the path as written and the rule", function()
			local err = load_error({ top = [[return {
				name = "t",
				fsProfile = { read = { "/**" } },
				tests = {
					{ op = "read", path = "/etc/hosts", expect = "allow" },
					{ op = "read", path = "~/.ssh/id_rsa", expect = "deny" },
				},
			}]] })
			assert.are.equal("/r/top.lua: tests[2]: expected deny for read ~/.ssh/id_rsa, got allow (fsProfile.read /**)", err)
		end)

		it("skip a test whose path lies under its skipUnder directory, and run it elsewhere", function()
			local pack = [[return {
				name = "t",
				fsProfile = { modify = { "${tmp}/**" } },
				ask = { modify = { "~/**" } },
				tests = { { op = "write", path = "~/.bashrc", expect = "ask", skipUnder = "${tmp}" } },
			}]]
			local eng, err = packs.load({ top = pack },
				{ vars = { workspace = "/ws", home = "/tmp/ci/home", tmp = "/tmp", state = "/st" } })
			assert.is_nil(err)
			assert.is_not_nil(eng)
			-- A home that only shares a prefix with ${tmp} is not under it.
			err = load_error({ top = pack:gsub('expect = "ask"', 'expect = "allow"') },
				{ vars = { workspace = "/ws", home = "/tmpfoo/u", tmp = "/tmp", state = "/st" } })
			assert.are.equal("/r/top.lua: tests[1]: expected allow for write ~/.bashrc, got ask (ask.modify ~/**)", err)
		end)

		it("skip every test under a skipUnder of /", function()
			local eng, err = packs.load({ top = [[return { name = "t",
				tests = { { op = "read", path = "/etc/hosts", expect = "allow", skipUnder = "/" } } }]] })
			assert.is_nil(err)
			assert.is_not_nil(eng)
		end)

		it("refuse a skipUnder that is not a path", function()
			local err = load_error({ top = [[return { name = "t",
				tests = { { op = "read", path = "/a", expect = "deny", skipUnder = 3 } } }]] })
			assert.are.equal("/r/top.lua: tests[1].skipUnder: expected a string, got number", err)
		end)

		it("check the deciding rule when a test names one", function()
			local err = load_error({ top = [[return {
				name = "t",
				denyRead = { "/x/**" },
				tests = { { op = "read", path = "/x/y", expect = "deny", rule = "denyRead /x/y" } },
			}]] })
			assert.are.equal("/r/top.lua: tests[1]: expected deny by denyRead /x/y for read /x/y, got deny (denyRead /x/**)", err)
		end)

		it("run an included pack's tests against that pack, and refuse the whole load when one fails", function()
			local err = load_error({
				top = 'return { name = "t", include = { "inc" }, fsProfile = { read = { "/**" } } }',
				inc = 'return { name = "inc", tests = { { op = "read", path = "/etc/hosts", expect = "allow" } } }',
			})
			assert.are.equal("/r/inc.lua: tests[1]: expected allow for read /etc/hosts, got deny (default deny)", err)
		end)

		it("pass on the fields a test gives (exists, nlink, requested)", function()
			local eng, err = packs.load({ top = [[return {
				name = "t",
				fsProfile = { modify = { "/ws/**" } },
				denyRead = { "/secret/**" },
				tests = {
					{ op = "write", path = "/ws/a", exists = true, nlink = 2, expect = "ask", rule = "hardlinks ask" },
					{ op = "write", path = "/ws/a", requested = "/secret/a", expect = "deny" },
				},
			}]] })
			assert.is_nil(err)
			assert.are.equal("t", eng.name)
		end)
	end)

	describe("the environment a pack runs in", function()
		it("has no io", function()
			local err = load_error({ top = 'local f = io.open("/etc/passwd")\nreturn { name = "t" }' })
			assert.is_truthy(err:match("^/r/top%.lua:1: undefined global 'io'"), err)
		end)

		it("has only os.time and os.clock", function()
			local err = load_error({ top = 'os.execute("true")\nreturn { name = "t" }' })
			assert.is_truthy(err:match("^/r/top%.lua:1: attempt to call a nil value %(field 'execute'%)"), err)
			packs.engine({ top = 'local t = os.time() + os.clock()\nreturn { name = "t" }' })
		end)

		it("has no require, load, debug or setmetatable", function()
			for _, name in ipairs({ "require", "load", "dofile", "debug", "setmetatable", "rawset", "package" }) do
				local err = load_error({ top = "local x = " .. name .. "\nreturn { name = 't' }" })
				assert.is_truthy(err:find("undefined global '" .. name .. "'", 1, true), err)
			end
		end)

		it("has no string.dump", function()
			local err = load_error({ top = 'local f = string.dump(type)\nreturn { name = "t" }' })
			assert.is_truthy(err:match("^/r/top%.lua:1: attempt to call a nil value %(field 'dump'%)"), err)
		end)

		it("gives each pack copies of the libraries, so a pack cannot change them for others", function()
			local upper = string.upper
			packs.engine({ top = 'string.upper = function() error("x") end\nreturn { name = "t" }' })
			assert.are.equal(upper, string.upper)
			assert.are.equal("A", ("a"):upper())
		end)
	end)

	describe("options", function()
		it("refuse a relative pack path", function()
			local eng, err = policy.load({ pack = "rules/default.lua" })
			assert.is_nil(eng)
			assert.are.equal("policy.load: pack must be an absolute path, got 'rules/default.lua'", err)
		end)

		it("refuse an unknown platform", function()
			local err = load_error({ top = 'return { name = "t" }' }, { platform = "windows" })
			assert.are.equal('/r/top.lua: platform: expected "linux" or "macos", got windows', err)
		end)

		it("refuse options that are not a table", function()
			local eng, err = policy.load("default")
			assert.is_nil(eng)
			assert.are.equal("policy.load: expected a table of options, got string", err)
		end)

		it("report a missing top pack with its path", function()
			local err = load_error({}, { pack = "/r/none.lua" })
			assert.are.equal("/r/none.lua: cannot open /r/none.lua: No such file or directory", err)
		end)
	end)
end)
