-- Specs for policy.normalize: the forms a path is matched under.

local normalize = require("policy.normalize")

local function paths(forms)
	local out = {}
	for _, f in ipairs(forms) do
		out[#out + 1] = f.path .. (f.full and "" or " (deny lists only)")
	end
	return out
end

describe("policy.normalize", function()
	describe("lexical", function()
		local CASES = {
			{ "/a//b", "/a/b" },
			{ "/a/./b", "/a/b" },
			{ "/a/b/../c", "/a/c" },
			{ "/a/b/", "/a/b" },
			{ "/", "/" },
			{ "//", "/" },
			{ "/..", "/" },
			{ "/../../etc", "/etc" },
			{ "/a/b/../../..", "/" },
			{ "a/../../b", "../b" },
			{ "./a", "a" },
			{ ".", "." },
			{ "/a\\b/../c", "/c" },
			{ "/a\\..\\b", "/a\\..\\b" },
		}
		for _, c in ipairs(CASES) do
			it(string.format("cleans %q to %q", c[1], c[2]), function()
				assert.are.equal(c[2], normalize.lexical(c[1]))
			end)
		end
	end)

	describe("platform_map", function()
		it("maps /private/var, /private/tmp and /private/etc on macOS", function()
			assert.are.equal("/var/folders/x", normalize.platform_map("/private/var/folders/x", "macos"))
			assert.are.equal("/tmp", normalize.platform_map("/private/tmp", "macos"))
			assert.are.equal("/etc/hosts", normalize.platform_map("/private/etc/hosts", "macos"))
		end)

		it("leaves a name that only starts like them alone", function()
			assert.are.equal("/private/varx", normalize.platform_map("/private/varx", "macos"))
		end)

		it("changes nothing on Linux", function()
			assert.are.equal("/private/tmp/x", normalize.platform_map("/private/tmp/x", "linux"))
		end)
	end)

	describe("strip_sed_temp", function()
		it("turns a BSD sed temp name into the name it replaces", function()
			assert.are.equal("/ws/.env", normalize.strip_sed_temp("/ws/.!12345!.env"))
			assert.are.equal("/ws/a.c", normalize.strip_sed_temp("/ws/.!1!a.c"))
		end)

		it("leaves other names alone", function()
			assert.is_nil(normalize.strip_sed_temp("/ws/.!x!.env"))
			assert.is_nil(normalize.strip_sed_temp("/ws/.!12!"))
			assert.is_nil(normalize.strip_sed_temp("/ws/.!12!/b"))
			assert.is_nil(normalize.strip_sed_temp("/ws/a.c"))
		end)
	end)

	describe("forms", function()
		it("judges a clean Linux path once", function()
			assert.are.same({ "/ws/a.c" }, paths(normalize.forms("/ws/a.c", "linux")))
		end)

		it("never rewrites a backslash on Linux", function()
			assert.are.same({ "/ws\\evil" }, paths(normalize.forms("/ws\\evil", "linux")))
		end)

		it("judges a sed temp name in full under its own name and the target's", function()
			assert.are.same({ "/ws/.!9!.env", "/ws/.env" }, paths(normalize.forms("/ws/.!9!.env", "linux")))
		end)

		it("keeps the raw spelling for the deny lists when clean-up changed it", function()
			assert.are.same({ "/etc/passwd", "/ws/../etc/passwd (deny lists only)" },
				paths(normalize.forms("/ws/../etc/passwd", "linux")))
		end)

		it("judges the macOS short form in full and the /private form against the deny lists", function()
			assert.are.same({ "/tmp/x", "/private/tmp/x (deny lists only)" },
				paths(normalize.forms("/private/tmp/x", "macos")))
		end)
	end)
end)
