-- credentials.lua — credential stores that no brokered command may read or
-- change: SSH and GPG keys, cloud and registry tokens, browser profiles,
-- and .env files. Included by default.lua; safe to include from any pack.

return {
	name = "credentials",

	-- denyRead applies to every operation: these paths can be neither read
	-- nor written, renamed, deleted or linked.
	denyRead = {
		-- SSH: keys, agent config, known_hosts (the host list is a map of
		-- where the user logs in), all of it.
		"~/.ssh/**",
		-- GnuPG keyrings and agent sockets.
		"~/.gnupg/**",
		-- Cloud and cluster credentials.
		"~/.aws/**",
		"~/.azure/**",
		"~/.config/gcloud/**",
		"~/.kube/config",
		"~/.docker/config.json",
		-- Forge, registry and package-index tokens.
		"~/.config/gh/**",
		"~/.config/hub",
		"~/.netrc",
		"~/.git-credentials",
		"~/.config/git/credentials",
		"~/.npmrc",
		"~/.pypirc",
		"~/.gem/credentials",
		"~/.cargo/credentials",
		"~/.cargo/credentials.toml",
		"~/.terraform.d/credentials.tfrc.json",
		"~/.vault-token",
		"~/.pgpass",
		-- Password stores and desktop keyrings.
		"~/.password-store/**",
		"~/.local/share/keyrings/**",
		-- Browser profiles (cookies, saved passwords, session tokens).
		"~/.config/google-chrome/**",
		"~/.config/google-chrome-beta/**",
		"~/.config/google-chrome-unstable/**",
		"~/.config/chromium/**",
		"~/.config/BraveSoftware/**",
		"~/.mozilla/firefox/**",
		"~/snap/firefox/**",
		"~/snap/chromium/**",
		"~/.var/app/org.mozilla.firefox/**",
		"~/.var/app/com.google.Chrome/**",
		"~/.var/app/org.chromium.Chromium/**",
		-- The same on macOS (never present on Linux, so harmless there).
		"~/Library/Keychains/**",
		"/Library/Keychains/**",
		"~/Library/Application Support/Google/Chrome/**",
		"~/Library/Application Support/Chromium/**",
		"~/Library/Application Support/BraveSoftware/**",
		"~/Library/Application Support/Firefox/**",
		"~/Library/Cookies/**",
		-- Project secrets, wherever they are: ".env", ".env.local",
		-- ".env.production" ... (".env.example" too: a pack that wants it
		-- readable adds "!**/.env.example" to its own denyRead).
		"**/.env",
		"**/.env.*",
	},

	-- direnv runs .envrc in the user's shell when they next cd into the
	-- directory: readable, never writable from inside.
	denyModify = {
		"**/.envrc",
	},

	tests = {
		{ op = "read", path = "~/.ssh/id_ed25519", expect = "deny", rule = "denyRead ~/.ssh/**" },
		{ op = "read", path = "~/.ssh/known_hosts", expect = "deny" },
		{ op = "write", path = "~/.ssh/authorized_keys", expect = "deny", rule = "denyRead ~/.ssh/**" },
		{ op = "mkdir", path = "~/.ssh", expect = "deny" },
		{ op = "read", path = "~/.aws/credentials", expect = "deny" },
		{ op = "read", path = "~/.config/gh/hosts.yml", expect = "deny" },
		{ op = "read", path = "~/.gnupg/private-keys-v1.d/x.key", expect = "deny" },
		{ op = "read", path = "~/.netrc", expect = "deny" },
		{ op = "read", path = "~/.git-credentials", expect = "deny" },
		{ op = "read", path = "~/.docker/config.json", expect = "deny" },
		{ op = "read", path = "~/.kube/config", expect = "deny" },
		{ op = "read", path = "~/.npmrc", expect = "deny" },
		{ op = "read", path = "~/.pypirc", expect = "deny" },
		{ op = "read", path = "~/.cargo/credentials.toml", expect = "deny" },
		{ op = "read", path = "~/.config/google-chrome/Default/Cookies", expect = "deny" },
		{ op = "read", path = "~/.mozilla/firefox/abc.default/logins.json", expect = "deny" },
		{ op = "read", path = "~/snap/firefox/common/.mozilla/firefox/p/key4.db", expect = "deny" },
		{ op = "read", path = "/srv/app/.env", expect = "deny", rule = "denyRead **/.env" },
		{ op = "read", path = "/srv/app/config/.env.production", expect = "deny", rule = "denyRead **/.env.*" },
		{ op = "rename-to", path = "/srv/app/.env", expect = "deny" },
		{ op = "write", path = "/srv/app/.envrc", expect = "deny", rule = "denyModify **/.envrc" },
		-- Alone, this pack allows nothing: what it does not deny falls to
		-- "default deny"; an including pack's fsProfile decides those.
		{ op = "read", path = "/srv/app/.envrc", expect = "deny", rule = "default deny" },
		{ op = "read", path = "~/.docker/other.json", expect = "deny", rule = "default deny" },
	},
}
