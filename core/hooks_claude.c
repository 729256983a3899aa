/*
 * hooks_claude.c — Claude Code's events for `fsbroker hooks run claude-code`
 * (docs/agent-hosts.md, "Claude Code"):
 *   PreToolUse Bash        the command rewritten to run under
 *                          `fsbroker run --core` with the tool call's id
 *   PreToolUse Write, Edit, MultiEdit, NotebookEdit
 *                          CheckAccess of the target (a deny or ask blocks
 *                          the tool with the rule), then ModifyBackup
 *   Stop                   CommitModifyBackup: one cycle per turn
 *   SessionEnd             the same, then Shutdown
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>

#include "hooks.h"

static int hook_bash(const struct fsb_hook_session *s, const struct fsb_hook_opts *o,
		     const cJSON *ev)
{
	const cJSON *input = cJSON_GetObjectItemCaseSensitive(ev, "tool_input");
	const char *cmd = fsb_hook_str(input, "command");
	char tc[160], *line;
	cJSON *updated;
	int fd;

	if (cmd == NULL)
		return fsb_hook_block("a Bash tool call without a command: %s", "blocked");
	/* The core must be up before the command runs: `run --core` attaches. */
	if ((fd = fsb_hook_core_connect(s, o, true)) < 0)
		return fsb_hook_block("cannot start or reach the session's core (%s); see its "
				      "log in the state dir", strerror(-fd));
	close(fd);
	fsb_hook_tool_call_id(fsb_hook_str(ev, "tool_use_id"), "tc", tc, sizeof(tc));
	if ((line = fsb_hook_run_line(s, tc, cmd)) == NULL)
		return fsb_hook_block("cannot make the command line: %s", strerror(errno));
	/* Every other field of the tool's input (timeout, description,
	 * run_in_background) stays as the model gave it. */
	updated = cJSON_Duplicate(input, 1);
	if (updated == NULL) {
		free(line);
		return fsb_hook_block("%s", "out of memory");
	}
	cJSON_ReplaceItemInObjectCaseSensitive(updated, "command", cJSON_CreateString(line));
	free(line);
	/* allow: the command runs sandboxed, each change judged and backed up;
	 * the settings' own deny and ask rules still apply. --ask-bash keeps
	 * Claude Code's prompt, showing the rewritten command. */
	return fsb_hook_pre_tool_answer(o->ask_bash ? "ask" : "allow", "fsbroker: runs under fsbroker run",
			       updated);
}

static int hook_file(const struct fsb_hook_session *s, const struct fsb_hook_opts *o,
		     const cJSON *ev)
{
	const cJSON *input = cJSON_GetObjectItemCaseSensitive(ev, "tool_input");
	const char *path = fsb_hook_str(input, "file_path");
	char tc[160], reason[2048];
	int err;

	if (path == NULL)
		path = fsb_hook_str(input, "notebook_path");
	if (path == NULL || path[0] != '/')
		return fsb_hook_block("a file tool call without an absolute path: %s", "blocked");
	fsb_hook_tool_call_id(fsb_hook_str(ev, "tool_use_id"), "tc", tc, sizeof(tc));
	err = fsb_hook_guard_write(s, o, path, tc, reason, sizeof(reason));
	if (err == -EACCES)
		return fsb_hook_pre_tool_answer("deny", reason, NULL);
	if (err < 0)
		return fsb_hook_block("%s", reason);
	/* No decision: Claude Code's own permissions go on as without us. */
	return 0;
}

static int handle(const struct fsb_hook_session *s, const struct fsb_hook_opts *o,
		  const cJSON *ev, const char *event)
{
	const char *tool = fsb_hook_str(ev, "tool_name");

	if (strcmp(event, "PreToolUse") == 0 && tool != NULL && strcmp(tool, "Bash") == 0)
		return hook_bash(s, o, ev);
	if (strcmp(event, "PreToolUse") == 0 && tool != NULL &&
	    (strcmp(tool, "Write") == 0 || strcmp(tool, "Edit") == 0 ||
	     strcmp(tool, "MultiEdit") == 0 || strcmp(tool, "NotebookEdit") == 0))
		return hook_file(s, o, ev);
	if (strcmp(event, "Stop") == 0)
		return fsb_hook_commit(s, o, false);
	if (strcmp(event, "SessionEnd") == 0)
		return fsb_hook_commit(s, o, true);
	return 0;
}

static const struct fsb_hook_group groups[] = {
	{ "PreToolUse", "Bash" },
	{ "PreToolUse", "Write|Edit|MultiEdit|NotebookEdit" },
	{ "Stop", NULL },
	{ "SessionEnd", NULL },
};

const struct fsb_hook_host fsb_hooks_claude = {
	.name = "claude-code",
	.title = "Claude Code",
	.settings = ".claude/settings.json",
	.id_prefix = "cc",
	.project_env = "CLAUDE_PROJECT_DIR",
	.groups = groups,
	.ngroups = sizeof(groups) / sizeof(groups[0]),
	.handle = handle,
};
