-- default.lua — the pack `fsbroker run` and `fsbroker serve` use unless
-- told otherwise: read anything that is not a secret, change the workspace
-- and the temporary directory, ask before changing anything else in home.

return {
	name = "default",
	include = { "credentials", "git-metadata", "agent-state", "tool-caches" },

	fsProfile = {
		read = { "/**" },
		-- The devices every shell redirects to (`2>/dev/null`): writing
		-- them changes no file.
		modify = { "${workspace}/**", "${tmp}/**", "/dev/null", "/dev/zero", "/dev/full",
			"/dev/tty" },
	},

	-- Changes elsewhere in home (dotfiles, other projects) wait for the
	-- user's approval; everything outside home and the trees above is denied.
	ask = {
		modify = { "~/**" },
	},

	backup = {
		maxSizeMB = 10,
		skip = { "${tmp}/**" },
		onTooLarge = "ask",
		quotaMB = 5120,
		-- Backups are written before each change and made durable
		-- together once a second, not one fsync per change: a SIGKILL
		-- of the core loses none, a power loss at most the last
		-- second's (docs/backup-store.md, "The durability contract").
		durability = "batched",
	},
	delete = { mode = "trash" },
	reads = "mask",
	-- The host's network, on purpose: installs and fetches (npm, pip,
	-- cargo, go, git clone) are everyday commands here, and denyRead keeps
	-- the secrets from being read to send anywhere. `fsbroker run
	-- --network none`, or a pack of your own with network = "none", cuts
	-- it (docs/rule-packs.md, "network").
	network = "host",
	env = {
		-- What programs need to behave as in the user's shell, and the
		-- commit identity agents set for git (names and addresses, no
		-- secrets). Tokens and keys stay outside.
		pass = { "PATH", "HOME", "LANG", "LC_ALL", "TERM", "USER", "LOGNAME", "SHELL", "TZ", "TMPDIR",
			"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL" },
	},
	-- A change to a file with several names changes them all: asked about,
	-- except in the trees that are hard links by design (tool-caches.lua's
	-- hardlinkTrees: pnpm). Another name of a file the pack protects is
	-- refused by the core in any case (docs/rule-packs.md, "Hard links").
	hardlinks = "ask",

	-- These hold wherever the workspace is (in home, under ${tmp}, elsewhere),
	-- so a test names its deciding rule only where no other entry can match.
	tests = {
		{ op = "write", path = "${workspace}/src/main.c", expect = "allow" },
		{ op = "create", path = "${workspace}/build/out.o", expect = "allow" },
		{ op = "delete", path = "${workspace}/old.txt", expect = "allow" },
		{ op = "write", path = "${workspace}/.git/objects/ab/cdef", expect = "allow" },
		{ op = "write", path = "${workspace}/.git/index", expect = "allow" },
		{ op = "write", path = "${tmp}/scratch", expect = "allow", rule = "fsProfile.modify ${tmp}/**" },
		{ op = "read", path = "/etc/hostname", expect = "allow", rule = "fsProfile.read /**" },
		{ op = "read", path = "~/notes.txt", expect = "allow" },
		{ op = "write", path = "/etc/hostname", expect = "deny", rule = "default deny" },
		{ op = "write", path = "/dev/null", expect = "allow", rule = "fsProfile.modify /dev/null" },
		{ op = "write", path = "/dev/sda", expect = "deny", rule = "default deny" },
		{ op = "write", path = "/usr/bin/ls", expect = "deny" },
		-- A home inside ${tmp} (a CI machine's) is a temporary tree itself.
		{ op = "write", path = "~/.bashrc", expect = "ask", rule = "ask.modify ~/**", skipUnder = "${tmp}" },
		{ op = "create", path = "~/.profile", expect = "ask", skipUnder = "${tmp}" },
		{ op = "read", path = "~/.ssh/id_ed25519", expect = "deny", rule = "denyRead ~/.ssh/**" },
		{ op = "read", path = "~/.aws/credentials", expect = "deny" },
		{ op = "read", path = "${workspace}/.env", expect = "deny", rule = "denyRead **/.env" },
		{ op = "write", path = "${workspace}/.env.local", expect = "deny" },
		{ op = "read", path = "${workspace}/.envrc", expect = "allow" },
		{ op = "write", path = "${workspace}/.envrc", expect = "deny", rule = "denyModify **/.envrc" },
		{ op = "read", path = "${workspace}/.git/hooks/pre-commit", expect = "allow" },
		{ op = "write", path = "${workspace}/.git/hooks/pre-commit", expect = "deny", rule = "denyWrite **/.git/hooks/?*" },
		-- rm -rf of a repository takes its hooks along.
		{ op = "delete", path = "${workspace}/.git/hooks/pre-commit", expect = "allow" },
		-- git init and git clone: the repository, its config and the
		-- template's samples (the git guard undoes risky config keys).
		{ op = "mkdir", path = "${workspace}/.git", expect = "allow" },
		{ op = "mkdir", path = "${workspace}/.git/hooks", expect = "allow" },
		{ op = "mkdir", path = "${workspace}/.git/hooks/", expect = "allow" },
		{ op = "create", path = "${workspace}/.git/hooks/pre-commit.sample", expect = "allow" },
		{ op = "write", path = "${workspace}/.git/config", expect = "allow" },
		{ op = "rename-to", path = "${workspace}/.git/config", expect = "allow" },
		{ op = "write", path = "~/.gitconfig", expect = "deny", rule = "denyModify ~/.gitconfig" },
		{ op = "read", path = "${state}/audit/s.jsonl", expect = "deny" },
		{ op = "write", path = "~/.claude/settings.json", expect = "deny" },
		-- The tools' caches: written without an ask and without a backup.
		{ op = "mkdir", path = "~/.npm/_cacache/tmp", expect = "allow", skipUnder = "${tmp}" },
		{ op = "write", path = "~/.cache/go-build/00/x-d", expect = "allow", skipUnder = "${tmp}" },
		{ op = "write", path = "~/.cache/pre-commit/x/hook", expect = "ask", skipUnder = "${tmp}" },
		{ op = "read", path = "~/.npmrc", expect = "deny", rule = "denyRead ~/.npmrc" },
		-- A second name for the same inode: changing it changes the other.
		{ op = "write", path = "${workspace}/linked.txt", exists = true, nlink = 2, expect = "ask", rule = "hardlinks ask" },
		-- Except in pnpm's layout, where every file is one.
		{ op = "write", path = "${workspace}/node_modules/.pnpm/a@1/node_modules/a/index.js", exists = true, nlink = 3, expect = "allow" },
		-- A symlink in the workspace pointing at a secret: the resolved path decides.
		{ op = "read", path = "~/.ssh/id_rsa", requested = "${workspace}/key", expect = "deny" },
		-- BSD sed -i writes ".!<pid>!name" first: judged as the name too.
		{ op = "write", path = "${workspace}/.!4242!.env", expect = "deny" },
	},
}
