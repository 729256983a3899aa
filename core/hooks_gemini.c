/*
 * hooks_gemini.c — Gemini CLI's events for `fsbroker hooks run gemini-cli`
 * (docs/agent-hosts.md, "Gemini CLI"; the hook API of gemini-cli's
 * docs/hooks/reference.md):
 *   BeforeTool run_shell_command
 *                          the command rewritten (hookSpecificOutput.tool_input,
 *                          which Gemini merges over the tool's arguments) to
 *                          run under `fsbroker run --core`; dir_path is left
 *                          as it was, so it runs where Gemini meant it to
 *   BeforeTool write_file, replace
 *                          CheckAccess of file_path (a deny or ask blocks the
 *                          tool, the rule in the reason), then ModifyBackup
 *   AfterAgent             CommitModifyBackup: one cycle per turn, answered
 *                          `{}` (a deny there would make Gemini retry the turn)
 *   SessionEnd             the same, then Shutdown
 * Gemini gives a tool call no id: each gets one made unique per hook call.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>

#include "hooks.h"

/* Prints OUT (taking it) on stdout as the hook's answer, exit 0. */
static int answer(cJSON *out)
{
	char *text = out != NULL ? cJSON_PrintUnformatted(out) : NULL;

	cJSON_Delete(out);
	if (text == NULL)
		return fsb_hook_block("%s", "out of memory");
	puts(text);
	free(text);
	return 0;
}

static int deny(const char *reason)
{
	cJSON *out = cJSON_CreateObject();

	cJSON_AddStringToObject(out, "decision", "deny");
	cJSON_AddStringToObject(out, "reason", reason);
	return answer(out);
}

static int hook_shell(const struct fsb_hook_session *s, const struct fsb_hook_opts *o,
		      const cJSON *ev)
{
	const cJSON *input = cJSON_GetObjectItemCaseSensitive(ev, "tool_input");
	const char *cmd = fsb_hook_str(input, "command");
	char tc[160], *line;
	cJSON *out, *spec, *args;
	int fd;

	if (cmd == NULL)
		return fsb_hook_block("a run_shell_command without a command: %s", "blocked");
	/* The core must be up before the command runs: `run --core` attaches. */
	if ((fd = fsb_hook_core_connect(s, o, true)) < 0)
		return fsb_hook_block("cannot start or reach the session's core (%s); see its "
				      "log in the state dir", strerror(-fd));
	close(fd);
	fsb_hook_tool_call_id(NULL, "gm", tc, sizeof(tc));
	if ((line = fsb_hook_run_line(s, tc, cmd)) == NULL)
		return fsb_hook_block("cannot make the command line: %s", strerror(errno));
	out = cJSON_CreateObject();
	/* ask keeps Gemini's own confirmation; allow leaves it to Gemini's
	 * settings, as without us. */
	cJSON_AddStringToObject(out, "decision", o->ask_bash ? "ask" : "allow");
	spec = cJSON_AddObjectToObject(out, "hookSpecificOutput");
	cJSON_AddStringToObject(spec, "hookEventName", "BeforeTool");
	args = cJSON_AddObjectToObject(spec, "tool_input");
	/* Only command: Gemini merges this over the model's arguments, so
	 * dir_path, description and is_background stay as they were. */
	cJSON_AddStringToObject(args, "command", line);
	free(line);
	if (args == NULL || cJSON_GetObjectItemCaseSensitive(args, "command") == NULL) {
		cJSON_Delete(out);
		return fsb_hook_block("%s", "out of memory");
	}
	return answer(out);
}

static int hook_file(const struct fsb_hook_session *s, const struct fsb_hook_opts *o,
		     const cJSON *ev)
{
	const cJSON *input = cJSON_GetObjectItemCaseSensitive(ev, "tool_input");
	const char *given = fsb_hook_str(input, "file_path");
	char path[PATH_MAX], tc[160], reason[2048];
	int err;

	if (given == NULL || given[0] == '\0')
		return fsb_hook_block("a file tool call without a file_path: %s", "blocked");
	/* Gemini resolves a relative file_path against the workspace root. */
	if (given[0] == '/')
		err = snprintf(path, sizeof(path), "%s", given);
	else
		err = snprintf(path, sizeof(path), "%s/%s", s->workspace, given);
	if (err < 0 || (size_t)err >= sizeof(path))
		return fsb_hook_block("file_path too long: %s", "blocked");
	fsb_hook_tool_call_id(NULL, "gm", tc, sizeof(tc));
	err = fsb_hook_guard_write(s, o, path, tc, reason, sizeof(reason));
	if (err == -EACCES)
		return deny(reason);
	if (err < 0)
		return fsb_hook_block("%s", reason);
	return answer(cJSON_CreateObject());
}

static int hook_commit(const struct fsb_hook_session *s, const struct fsb_hook_opts *o,
		       bool end)
{
	/* Not exit 2 when the seal fails: for AfterAgent that is a retry of
	 * the turn. 1 is a warning Gemini shows and goes on from. */
	int rc = fsb_hook_commit(s, o, end);

	if (rc != 0)
		return rc;
	return answer(cJSON_CreateObject());
}

static int handle(const struct fsb_hook_session *s, const struct fsb_hook_opts *o,
		  const cJSON *ev, const char *event)
{
	const char *tool = fsb_hook_str(ev, "tool_name");

	if (strcmp(event, "BeforeTool") == 0 && tool != NULL &&
	    strcmp(tool, "run_shell_command") == 0)
		return hook_shell(s, o, ev);
	if (strcmp(event, "BeforeTool") == 0 && tool != NULL &&
	    (strcmp(tool, "write_file") == 0 || strcmp(tool, "replace") == 0))
		return hook_file(s, o, ev);
	if (strcmp(event, "AfterAgent") == 0)
		return hook_commit(s, o, false);
	if (strcmp(event, "SessionEnd") == 0)
		return hook_commit(s, o, true);
	return answer(cJSON_CreateObject());
}

static const struct fsb_hook_group groups[] = {
	{ "BeforeTool", "run_shell_command" },
	{ "BeforeTool", "write_file|replace" },
	{ "AfterAgent", NULL },
	{ "SessionEnd", NULL },
};

const struct fsb_hook_host fsb_hooks_gemini = {
	.name = "gemini-cli",
	.title = "Gemini CLI",
	.settings = ".gemini/settings.json",
	.hook_name = "fsbroker",
	.id_prefix = "gm",
	.project_env = "GEMINI_PROJECT_DIR",
	.groups = groups,
	.ngroups = sizeof(groups) / sizeof(groups[0]),
	.handle = handle,
};
