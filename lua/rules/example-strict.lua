-- example-strict.lua — an example of a tighter pack: reads limited to the
-- workspace and the system, vendored code read-only except one file, and a
-- decide hook that keeps lock files unchanged. Copy it and adapt.

return {
	name = "example-strict",
	include = { "credentials", "git-metadata", "agent-state" },

	fsProfile = {
		read = {
			"${workspace}/**",
			"/usr/**", "/lib/**", "/lib64/**", "/bin/**", "/sbin/**", "/etc/**",
			"/proc/**", "/sys/**", "/dev/**", "/opt/**",
			"${tmp}/**",
		},
		modify = { "${workspace}/**", "${tmp}/**" },
	},

	-- Vendored code is read-only, except its README, which we keep notes in.
	-- The last matching entry of a list wins, so the '!' exception must
	-- come after the glob it carves from.
	denyModify = {
		"${workspace}/vendor/**",
		"!${workspace}/vendor/README.md",
	},

	-- No ask list: anything outside the profile is simply denied.
	backup = { maxSizeMB = 50, skip = { "${tmp}/**", "${workspace}/target/**" } },
	delete = { mode = "trash" },
	reads = "broker",
	-- Nothing a command reads can leave the machine: only a loopback.
	network = "none",
	env = { pass = { "PATH", "HOME", "LANG", "TERM" } },
	hardlinks = "deny",

	-- Dependency lock files change only when a person means them to: any
	-- change to "*.lock" or "package-lock.json" is denied. A hook may
	-- tighten a verdict like this; it can never relax a denyRead or
	-- denyModify deny.
	decide = function(req, verdict)
		if req.op == "read" or verdict.decision == "deny" then
			return nil
		end
		local name = string.match(req.path, "([^/]*)$")
		if string.find(name, "%.lock$") or name == "package-lock.json" then
			return {
				decision = "deny",
				rule = "decide lock files",
				reason = req.op .. " of " .. req.path .. " is denied: lock files change only by hand.",
			}
		end
		return nil
	end,

	tests = {
		{ op = "write", path = "${workspace}/src/lib.rs", expect = "allow" },
		{ op = "read", path = "/usr/include/stdio.h", expect = "allow" },
		{ op = "read", path = "~/notes.txt", expect = "deny", rule = "default deny" },
		{ op = "write", path = "~/.bashrc", expect = "deny", rule = "default deny" },
		{ op = "write", path = "${workspace}/vendor/lib/x.c", expect = "deny", rule = "denyModify ${workspace}/vendor/**" },
		{ op = "write", path = "${workspace}/vendor/README.md", expect = "allow" },
		{ op = "read", path = "${workspace}/vendor/lib/x.c", expect = "allow" },
		{ op = "write", path = "${workspace}/Cargo.lock", expect = "deny", rule = "decide lock files" },
		{ op = "delete", path = "${workspace}/web/package-lock.json", expect = "deny" },
		{ op = "read", path = "${workspace}/Cargo.lock", expect = "allow" },
		{ op = "read", path = "${workspace}/.env", expect = "deny", rule = "denyRead **/.env" },
		{ op = "write", path = "${workspace}/a.txt", exists = true, nlink = 3, expect = "deny", rule = "hardlinks deny" },
	},
}
