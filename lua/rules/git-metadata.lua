-- git-metadata.lua — the parts of a Git repository that run code or point
-- Git elsewhere: hooks, config, the .git entry itself. Git runs hooks and
-- config-named programs later, outside any sandbox, as the user.

return {
	name = "git-metadata",

	-- Readable (git status, log and diff work), never modifiable. Objects,
	-- refs and the index stay writable, so commits still work.
	denyModify = {
		-- The .git entry itself, file or directory: renaming it aside (to
		-- edit hooks under another name), replacing it, or writing a
		-- "gitdir:" file that points Git at a directory with hooks of its
		-- own. This also refuses `git init` and `git clone` inside.
		"**/.git",
		-- Hooks run on commit, checkout, merge, push ... ("/**" at the end
		-- also matches the directory itself: it can be neither made nor
		-- removed nor renamed).
		"**/.git/hooks/**",
		-- Config names programs (core.hooksPath, core.fsmonitor,
		-- core.sshCommand, filters, aliases).
		"**/.git/config",
		"**/.git/config.worktree",
		"**/.git/commondir",
		-- Linked worktrees keep their own config and pointer files.
		"**/.git/worktrees/*/config.worktree",
		"**/.git/worktrees/*/commondir",
		-- Submodules keep a whole Git directory each, nested at any depth.
		"**/.git/modules/**/hooks/**",
		"**/.git/modules/**/config",
		"**/.git/modules/**/config.worktree",
		-- The user's own Git config names programs too.
		"~/.gitconfig",
		"~/.config/git/config",
		"~/.config/git/attributes",
	},

	tests = {
		{ op = "write", path = "/srv/repo/.git/hooks/pre-commit", expect = "deny", rule = "denyModify **/.git/hooks/**" },
		{ op = "create", path = "/srv/repo/.git/hooks/post-checkout", expect = "deny" },
		{ op = "chmod", path = "/srv/repo/.git/hooks/pre-push", expect = "deny" },
		{ op = "mkdir", path = "/srv/repo/.git/hooks", expect = "deny", rule = "denyModify **/.git/hooks/**" },
		{ op = "delete", path = "/srv/repo/.git/hooks", expect = "deny" },
		{ op = "write", path = "/srv/repo/.git/config", expect = "deny", rule = "denyModify **/.git/config" },
		{ op = "write", path = "/srv/repo/.git/config.worktree", expect = "deny" },
		{ op = "rename-from", path = "/srv/repo/.git", expect = "deny", rule = "denyModify **/.git" },
		{ op = "create", path = "/srv/repo/sub/.git", expect = "deny" },
		{ op = "write", path = "/srv/repo/.git/modules/lib/hooks/pre-commit", expect = "deny" },
		{ op = "write", path = "/srv/repo/.git/modules/a/modules/b/hooks/post-merge", expect = "deny" },
		{ op = "write", path = "/srv/repo/.git/modules/a/modules/b/config", expect = "deny" },
		{ op = "write", path = "/srv/repo/.git/worktrees/wt/config.worktree", expect = "deny" },
		{ op = "write", path = "~/.gitconfig", expect = "deny" },
		-- Reading is left to the including pack, so alone nothing is allowed.
		{ op = "read", path = "/srv/repo/.git/config", expect = "deny", rule = "default deny" },
		-- Not metadata: a file merely named "hooks" or "config" elsewhere.
		{ op = "write", path = "/srv/repo/hooks/config", expect = "deny", rule = "default deny" },
	},
}
