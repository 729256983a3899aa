-- agent-state.lua — places where a brokered command could leave something
-- that outlives its session: fsbroker's own state and configuration, and
-- the state directories of coding agents (their settings can add tools,
-- hooks and servers that run with the user's rights next time).

return {
	name = "agent-state",

	-- fsbroker's state dir holds backups, the audit log, approvals and the
	-- admin socket: hidden entirely. Agent login tokens are secrets.
	denyRead = {
		"${state}/**",
		"~/.claude/.credentials.json",
		"~/.codex/auth.json",
		"~/.gemini/oauth_creds.json",
	},

	-- Readable, never modifiable from inside a brokered command ("/**" at
	-- the end covers the directory itself too).
	denyModify = {
		"~/.config/fsbroker/**",
		"~/.claude/**",
		"~/.claude.json",
		"~/.codex/**",
		"~/.gemini/**",
		"~/.grok/**",
		"~/.copilot/**",
		"~/.config/github-copilot/**",
	},

	tests = {
		{ op = "read", path = "${state}/audit/s1.jsonl", expect = "deny", rule = "denyRead ${state}/**" },
		{ op = "write", path = "${state}/sessions/s1/approvals.json", expect = "deny" },
		{ op = "delete", path = "${state}", expect = "deny", rule = "denyRead ${state}/**" },
		{ op = "write", path = "~/.config/fsbroker/rules/default.lua", expect = "deny" },
		{ op = "write", path = "~/.claude/settings.json", expect = "deny", rule = "denyModify ~/.claude/**" },
		{ op = "write", path = "~/.claude.json", expect = "deny" },
		{ op = "rename-from", path = "~/.codex", expect = "deny", rule = "denyModify ~/.codex/**" },
		{ op = "create", path = "~/.gemini/settings.json", expect = "deny" },
		{ op = "read", path = "~/.claude/.credentials.json", expect = "deny", rule = "denyRead ~/.claude/.credentials.json" },
		{ op = "read", path = "~/.codex/auth.json", expect = "deny" },
		-- Reading settings is left to the including pack.
		{ op = "read", path = "~/.claude/settings.json", expect = "deny", rule = "default deny" },
	},
}
