-- git-metadata.lua — the parts of a Git repository that run code: hooks,
-- and the user's own Git config. Git runs hooks and config-named programs
-- later, outside any sandbox, as the user.
--
-- A run may make a repository (git init, git clone) and change one's
-- objects, refs, index and config. What it may not leave behind is a hook
-- the repository did not have, or a config key that makes Git run a
-- program (core.fsmonitor, core.hooksPath, filters, `!` aliases, ...), in
-- any git directory, whatever its name. This pack refuses at the call what
-- a path can tell (a new hook under a .git directory); the core's git
-- guard undoes the rest when the cycle is sealed and reports it: config
-- content arrives through a granted fd after the grant, and `src/` is a
-- git directory only once HEAD, objects/ and refs/ are in it
-- (docs/rule-packs.md, "Git metadata").

return {
	name = "git-metadata",

	-- Readable (git status, log and diff work). Objects, refs, the index
	-- and config stay writable, so init, clone and commits work.
	denyWrite = {
		-- Hooks run on commit, checkout, merge, push ... Git runs
		-- hooks/<name>, never *.sample, which `git init` copies from its
		-- templates; the hooks directory itself may be made and removed
		-- ("?*": git names it "hooks/", and "*" matches the empty name
		-- after that slash). A hook may go (rm -rf of a repository): a
		-- removed hook runs nothing. Making, writing or moving one in is
		-- refused.
		"**/.git/hooks/?*",
		"!**/.git/hooks/*.sample",
		-- Submodules keep a whole Git directory each, nested at any depth.
		"**/.git/modules/**/hooks/?*",
		"!**/.git/modules/**/hooks/*.sample",
	},
	denyModify = {
		-- The main git directory's pointer to a common directory: git
		-- never writes one there, and it would lend the repository the
		-- hooks and config of another.
		"**/.git/commondir",
		-- The user's own Git config names programs too, and no guard
		-- looks there.
		"~/.gitconfig",
		"~/.config/git/config",
		"~/.config/git/attributes",
	},

	tests = {
		{ op = "write", path = "/srv/repo/.git/hooks/pre-commit", expect = "deny", rule = "denyWrite **/.git/hooks/?*" },
		{ op = "create", path = "/srv/repo/.git/hooks/post-checkout", expect = "deny" },
		{ op = "chmod", path = "/srv/repo/.git/hooks/pre-push", expect = "deny" },
		{ op = "rename-to", path = "/srv/repo/.git/hooks/pre-commit", expect = "deny" },
		{ op = "write", path = "/srv/repo/.git/modules/lib/hooks/pre-commit", expect = "deny" },
		{ op = "write", path = "/srv/repo/.git/modules/a/modules/b/hooks/post-merge", expect = "deny" },
		-- Taking a hook away is left to the including pack (here, alone,
		-- nothing is allowed): the hooks rule does not speak.
		{ op = "delete", path = "/srv/repo/.git/hooks/pre-commit", expect = "deny", rule = "default deny" },
		{ op = "rename-from", path = "/srv/repo/.git/hooks/pre-commit", expect = "deny", rule = "default deny" },
		{ op = "write", path = "/srv/repo/.git/commondir", expect = "deny", rule = "denyModify **/.git/commondir" },
		{ op = "write", path = "~/.gitconfig", expect = "deny" },
		{ op = "write", path = "~/.config/git/config", expect = "deny" },
		-- What git init and git clone write is left to the including pack
		-- (alone, nothing is allowed): the samples, the hooks directory,
		-- the .git entry itself, config.
		{ op = "create", path = "/srv/repo/.git/hooks/pre-commit.sample", expect = "deny", rule = "default deny" },
		{ op = "mkdir", path = "/srv/repo/.git/hooks", expect = "deny", rule = "default deny" },
		{ op = "mkdir", path = "/srv/repo/.git/hooks/", expect = "deny", rule = "default deny" },
		{ op = "mkdir", path = "/srv/repo/.git", expect = "deny", rule = "default deny" },
		{ op = "write", path = "/srv/repo/.git/config", expect = "deny", rule = "default deny" },
		{ op = "read", path = "/srv/repo/.git/config", expect = "deny", rule = "default deny" },
		-- Not metadata: a file merely named "hooks" or "config" elsewhere.
		{ op = "write", path = "/srv/repo/hooks/config", expect = "deny", rule = "default deny" },
	},
}
