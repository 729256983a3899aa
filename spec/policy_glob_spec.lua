-- Specs for policy.glob: the glob language of rule packs, case by case.

local glob = require("policy.glob")
local lpeg = require("lpeg")

-- A workspace whose name holds glob characters: they must match literally.
local VARS = { home = "/home/u", workspace = "/w/[x]*", tmp = "/tmp", state = "/st" }

-- { glob, path, expected }
local CASES = {
	-- '*': one segment, any length, never '/'
	{ "/a/*", "/a/b", true },
	{ "/a/*", "/a/b/c", false },
	{ "/a/*.c", "/a/main.c", true },
	{ "/a/*.c", "/a/main.h", false },
	{ "/a/*.c", "/a/x/main.c", false },
	{ "/a/*b*c", "/a/xxbyyc", true },
	{ "/a/*b*c", "/a/xxbyy", false },
	{ "/a*", "/abc", true },
	-- '*', text, '*': the first place the text occurs is enough
	{ "/a/*.min.*", "/a/x.min.min.js", true },
	{ "/a/*.min.*", "/a/x.min", false },
	{ "/a/*.min.*", "/a/x.min/y", false },
	{ "/a/*b*b*c", "/a/bbbc", true },
	{ "/a/*b*b*c", "/a/bbc", true },
	{ "/a/*b*b*c", "/a/bc", false },
	{ "/a/*b*b*c", "/a/xbyb/c", false },
	{ "/a/*/b*c*d", "/a/x/bcd", true },
	{ "/a*", "/a/b", false },
	-- dotfiles: '*' and '**' match names starting with '.'
	{ "/a/*", "/a/.hidden", true },
	{ "/a/**", "/a/.git/config", true },
	{ "/a/*/x", "/a/.cache/x", true },
	-- '**': any depth, zero segments included
	{ "/a/**/b", "/a/b", true },
	{ "/a/**/b", "/a/x/b", true },
	{ "/a/**/b", "/a/x/y/z/b", true },
	{ "/a/**/b", "/a/x/bb", false },
	{ "/a/**", "/a", true },
	{ "/a/**", "/a/x/y", true },
	{ "/a/**", "/ab", false },
	{ "/a/**", "/", false },
	{ "/**", "/", true },
	{ "/**", "/etc/passwd", true },
	{ "**", "/any/thing", true },
	{ "**/.env", "/.env", true },
	{ "**/.env", "/a/b/.env", true },
	{ "**/.env", "/a/b/.env.local", false },
	{ "**/.env", "/a/b/x.env", false },
	{ "**/.env.*", "/p/.env.production", true },
	{ "**/.git/hooks/**", "/r/.git/hooks", true },
	{ "**/.git/hooks/**", "/r/.git/hooks/pre-commit", true },
	{ "**/.git/hooks/**", "/r/.git/hooksx", false },
	{ "**/.git/modules/**/hooks/**", "/r/.git/modules/a/b/hooks/x", true },
	{ "/a/**/**/b", "/a/b", true },
	{ "/a/x**", "/a/xyz", true }, -- "**" inside a segment is a plain '*'
	{ "/a/x**", "/a/xy/z", false },
	-- '?': exactly one character (a UTF-8 character counts as one)
	{ "/a/?.c", "/a/x.c", true },
	{ "/a/?.c", "/a/xy.c", false },
	{ "/a/?.c", "/a/.c", false },
	{ "/a/?", "/a/é", true },
	{ "/a?b", "/a/b", false },
	-- '[...]': ranges, negation with '!' or '^', never '/'
	{ "/a/[abc]", "/a/b", true },
	{ "/a/[abc]", "/a/d", false },
	{ "/a/[a-c]x", "/a/bx", true },
	{ "/a/[!a-c]x", "/a/dx", true },
	{ "/a/[!a-c]x", "/a/bx", false },
	{ "/a/[^a-c]x", "/a/bx", false },
	{ "/a[!x]b", "/a/b", false },
	{ "/a[.-0]b", "/a/b", false }, -- the range spans '/', which still never matches
	{ "/a/[]]", "/a/]", true },
	{ "/a/[à-ü]", "/a/é", true },
	{ "/a/[à-ü]", "/a/z", false },
	-- '{a,b}': alternatives, nested, empty ones
	{ "/a/{b,c}.txt", "/a/c.txt", true },
	{ "/a/{b,c}.txt", "/a/d.txt", false },
	{ "/a/{b,c/{d,e}}", "/a/c/e", true },
	{ "/a/{b,c/{d,e}}", "/a/c/f", false },
	{ "**/.env{,.*}", "/p/.env", true },
	{ "**/.env{,.*}", "/p/.env.test", true },
	{ "{/a,/b}/**", "/b/c", true },
	-- a trailing '/': the directory and everything beneath
	{ "/a/", "/a", true },
	{ "/a/", "/a/b/c", true },
	{ "/a/", "/ab", false },
	-- '~' and variables
	{ "~", "/home/u", true },
	{ "~", "/home/u/x", false },
	{ "~/.ssh/**", "/home/u/.ssh/id_rsa", true },
	{ "~/.ssh/**", "/home/u/.sshx", false },
	{ "${home}/.aws/**", "/home/u/.aws/credentials", true },
	{ "${tmp}/**", "/tmp/x", true },
	{ "${state}/**", "/st", true },
	{ "{~/a,~/b}", "/home/u/b", true },
	-- a variable's value is literal text: "[x]*" is not a class and a star
	{ "${workspace}/**", "/w/[x]*/src/a.c", true },
	{ "${workspace}/**", "/w/x/src/a.c", false },
	{ "${workspace}/**", "/w/[x]abc/a.c", false },
	-- a backslash is an ordinary byte, never a separator or an escape
	{ "/ws\\evil", "/ws\\evil", true },
	{ "/ws/**", "/ws\\evil", false },
	{ "/a\\*", "/a\\xyz", true },
	{ "/a\\*", "/a*", false },
	-- repeated slashes in a glob are one
	{ "/a//b", "/a/b", true },
	-- anchored to the whole path
	{ "/a/b", "/a/b/c", false },
	{ "/a/b", "/x/a/b", false },
}

describe("policy.glob", function()
	it("has at least 40 cases in its table", function()
		assert.is_true(#CASES >= 40)
	end)

	for i, c in ipairs(CASES) do
		local pattern, path, expected = c[1], c[2], c[3]
		it(string.format("case %d: %s %s %s", i, pattern, expected and "matches" or "does not match", path), function()
			local m, err = glob.matcher(pattern, VARS)
			assert.is_nil(err)
			assert.are.equal(expected, m(path))
		end)
	end

	describe("compile", function()
		it("marks a leading '!' as an exception and matches the rest", function()
			local g = assert(glob.compile("!~/.ssh/known_hosts", VARS))
			assert.is_true(g.negate)
			assert.is_not_nil(lpeg.match(g.pattern, "/home/u/.ssh/known_hosts"))
			assert.are.same({ "/home/u/.ssh/known_hosts" }, g.expanded)
		end)

		it("expands braces and variables, escaping a value's glob characters", function()
			local g = assert(glob.compile("${workspace}/{a,b}/**", VARS))
			assert.are.same({ "/w/[[]x[]][*]/a/**", "/w/[[]x[]][*]/b/**" }, g.expanded)
		end)

		it("compiles an expanded glob again to the same matches", function()
			local g = assert(glob.compile("${workspace}/**", VARS))
			local again = assert(glob.matcher(g.expanded[1], {}))
			assert.is_true(again("/w/[x]*/f"))
			assert.is_false(again("/w/x/f"))
		end)

		it("reports where matches live for mount plans", function()
			local g = assert(glob.compile("${tmp}/**", VARS))
			assert.are.same({ base = "/tmp", kind = "tree" }, g.bases[1])
			g = assert(glob.compile("~/.netrc", VARS))
			assert.are.same({ base = "/home/u/.netrc", kind = "exact" }, g.bases[1])
			g = assert(glob.compile("/a/b/*.c", VARS))
			assert.are.same({ base = "/a/b", kind = "pattern" }, g.bases[1])
			g = assert(glob.compile("**/.env", VARS))
			assert.are.same({ base = "/", kind = "pattern" }, g.bases[1])
		end)

		it("matches ASCII letters in either case with nocase", function()
			local m = assert(glob.matcher("**/.env", VARS, { nocase = true }))
			assert.is_true(m("/p/.ENV"))
			assert.is_true(m("/p/.Env"))
			assert.is_false(m("/p/.envx"))
			local exact = assert(glob.matcher("**/.env", VARS))
			assert.is_false(exact("/p/.ENV"))
		end)

		it("matches a 4096-byte path with thousands of segments without running out of stack", function()
			local long = string.rep("/a", 2046) .. "/x"
			assert.is_true(assert(glob.matcher("**/x/**", VARS))(long))
			assert.is_false(assert(glob.matcher("**/a/*/*/y", VARS))(long))
			assert.is_true(assert(glob.matcher("/**", VARS))(long))
		end)
	end)

	describe("errors", function()
		local ERRORS = {
			{ "a/b", "is not absolute" },
			{ "*.c", "is not absolute" },
			{ "", "empty glob" },
			{ "!", "empty glob" },
			{ "/a/[bc", "unclosed '['" },
			{ "/a/{b,c", "unclosed '{'" },
			{ "/a/${workspace", "unclosed '${'" },
			{ "${nope}/x", "unknown variable ${nope}" },
			{ "/a/../b", "'..' segment" },
			{ "/a/./b", "'.' segment" },
			{ "~bob/x", "only a leading '~' or '~/'" },
			{ "/a/[z-a]", "is empty" },
			{ "/{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}{o,p}{q,r}", "more than 256 alternatives" },
		}
		for _, e in ipairs(ERRORS) do
			it("refuses " .. string.format("%q", e[1]), function()
				local g, err = glob.compile(e[1], VARS)
				assert.is_nil(g)
				assert.is_truthy(err:find(e[2], 1, true), err)
			end)
		end

		it("says the pack needs --workspace when ${workspace} has no value", function()
			local g, err = glob.compile("${workspace}/**", { home = "/home/u" })
			assert.is_nil(g)
			assert.is_truthy(err:find("needs --workspace", 1, true), err)
		end)

		it("says '~' needs a home directory when there is none", function()
			local g, err = glob.compile("~/.ssh/**", {})
			assert.is_nil(g)
			assert.is_truthy(err:find("no home directory", 1, true), err)
		end)

		it("refuses a glob that is not a string, naming the type", function()
			local g, err = glob.compile(42, VARS)
			assert.is_nil(g)
			assert.are.equal("expected a string glob, got number", err)
		end)
	end)

	describe("stars and long names", function()
		-- Each '*' trying every place it might stop made this glob run
		-- for hours on a 255-byte name (a name a sandboxed process may
		-- choose); found by tests/fuzz/fuzz_glob.c.
		it("matches '*a*a*...*b' against a long name of a's", function()
			local m = assert(glob.matcher("/w/*a*a*a*a*a*a*a*a*b", VARS))
			assert.is_false(m("/w/" .. string.rep("a", 255)))
			assert.is_true(m("/w/" .. string.rep("a", 254) .. "b"))
		end)
	end)

	describe("expand_path", function()
		it("expands '~' and variables without interpreting glob characters", function()
			assert.are.equal("/home/u/a*b", glob.expand_path("~/a*b", VARS))
			assert.are.equal("/w/[x]*/f", glob.expand_path("${workspace}/f", VARS))
		end)

		it("refuses an unknown variable", function()
			local p, err = glob.expand_path("${bogus}/f", VARS)
			assert.is_nil(p)
			assert.is_truthy(err:find("unknown variable ${bogus}", 1, true))
		end)
	end)
end)
