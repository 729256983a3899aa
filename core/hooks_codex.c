/*
 * hooks_codex.c — Codex CLI's events for `fsbroker hooks run codex`
 * (docs/agent-hosts.md, "Codex CLI"; developers.openai.com/codex/hooks):
 *   PreToolUse Bash        a command that is not yet the session's
 *                          `fsbroker run --core` line is denied, the reason
 *                          giving the exact line to run instead; that line,
 *                          run again by the model, is allowed
 *   PreToolUse apply_patch every path the patch adds, updates, moves or
 *                          deletes judged with CheckAccess (one refusal
 *                          blocks the whole patch, naming the path and the
 *                          rule), then each backed up with ModifyBackup; a
 *                          patch that does not parse is blocked
 *   Stop                   CommitModifyBackup: one cycle per turn
 * Codex has no SessionEnd: the core ends by its idle timeout.
 *
 * Why Bash is denied rather than rewritten: whether Codex runs a Bash
 * command as a hook's updatedInput rewrote it is not established from its
 * documentation, and if it did not, the command would run unsandboxed
 * while the hook believed it sandboxed (docs/decisions.md).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>

#include "broker.h"
#include "hooks.h"

#define PATCH_MAX_PATHS 256

struct patch_path {
	const char *op;		/* CheckAccess's op */
	char path[PATH_MAX];
};

/* The session's run line for this very command, when CMD is one: its tool
 * call id read back, and the whole line made again and compared, so that
 * nothing before, after or inside it differs. */
static bool is_our_line(const struct fsb_hook_session *s, const char *cmd)
{
	static const char tc_opt[] = " --tool-call '";
	static const char tail[] = " -- /bin/bash -c 'cd -- \"$1\" || exit 1; shift; '";
	const char *at = strstr(cmd, tc_opt), *end, *q;
	char tc[160], *inner, *o, *line;
	size_t n;
	bool same;

	if (at == NULL)
		return false;
	at += sizeof(tc_opt) - 1;
	if ((end = strchr(at, '\'')) == NULL || (size_t)(end - at) >= sizeof(tc))
		return false;
	memcpy(tc, at, (size_t)(end - at));
	tc[end - at] = '\0';
	if (!fsb_id_valid(tc) || strncmp(end + 1, tail, sizeof(tail) - 1) != 0)
		return false;
	/* From the command's opening quote: undo what fsb_hook_sh_quote did. */
	q = end + 1 + sizeof(tail) - 1;
	n = strlen(q);
	if ((inner = malloc(n + 1)) == NULL)
		return false;
	o = inner;
	if (*q++ != '\'') {
		free(inner);
		return false;
	}
	for (;;) {
		if (*q == '\0') {
			free(inner);
			return false;
		}
		if (*q != '\'') {
			*o++ = *q++;
			continue;
		}
		if (strncmp(q, "'\\''", 4) == 0) {
			*o++ = '\'';
			q += 4;
			continue;
		}
		break;	/* the closing quote */
	}
	*o = '\0';
	line = fsb_hook_run_line(s, tc, inner);
	free(inner);
	same = line != NULL && strcmp(line, cmd) == 0;
	free(line);
	return same;
}

static int hook_bash(const struct fsb_hook_session *s, const struct fsb_hook_opts *o,
		     const cJSON *ev)
{
	const cJSON *input = cJSON_GetObjectItemCaseSensitive(ev, "tool_input");
	const char *cmd = fsb_hook_str(input, "command");
	char tc[160], *line, *reason;
	size_t len;
	int fd, rc;

	if (cmd == NULL)
		return fsb_hook_block("a Bash tool call without a command string: %s", "blocked");
	/* The core must be up before the command runs: `run --core` attaches. */
	if ((fd = fsb_hook_core_connect(s, o, true)) < 0)
		return fsb_hook_block("cannot start or reach the session's core (%s); see its "
				      "log in the state dir", strerror(-fd));
	close(fd);
	if (is_our_line(s, cmd))
		return fsb_hook_pre_tool_answer(o->ask_bash ? "ask" : "allow",
						"fsbroker: runs under fsbroker run", NULL);
	fsb_hook_tool_call_id(fsb_hook_str(ev, "tool_use_id"), "cx", tc, sizeof(tc));
	if ((line = fsb_hook_run_line(s, tc, cmd)) == NULL)
		return fsb_hook_block("cannot make the command line: %s", strerror(errno));
	len = strlen(line) + 512;
	if ((reason = malloc(len)) == NULL) {
		free(line);
		return fsb_hook_block("%s", "out of memory");
	}
	snprintf(reason, len, "fsbroker: shell commands in this session run sandboxed under "
		 "fsbroker, each change backed up. Nothing ran. Run exactly this command "
		 "instead, unchanged (it runs yours, in the same directory):\n%s", line);
	free(line);
	rc = fsb_hook_pre_tool_answer("deny", reason, NULL);
	free(reason);
	return rc;
}

/* Strips the line's trailing blanks and CR in place. */
static void rstrip(char *line)
{
	size_t n = strlen(line);

	while (n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\t' || line[n - 1] == '\r'))
		line[--n] = '\0';
}

/* CWD/P made absolute, `.` and `..` taken out by name. A `..` after a
 * symlink is refused (-EINVAL): taken out by name it would judge another
 * file than the one Codex writes. 0, or -EINVAL. */
static int patch_abs(const char *cwd, const char *p, char *out, size_t len)
{
	char buf[PATH_MAX * 2];
	size_t o = 0;
	char *save = NULL, *part;

	if (p[0] == '\0')
		return -EINVAL;
	if (snprintf(buf, sizeof(buf), "%s/%s", p[0] == '/' ? "" : cwd, p) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (part = strtok_r(buf, "/", &save); part != NULL; part = strtok_r(NULL, "/", &save)) {
		if (strcmp(part, ".") == 0)
			continue;
		if (strcmp(part, "..") == 0) {
			struct stat st;

			out[o] = '\0';
			if (o > 0 && lstat(out, &st) == 0 && S_ISLNK(st.st_mode))
				return -EINVAL;
			while (o > 0 && out[--o] != '/')
				;
			continue;
		}
		if (o + strlen(part) + 2 > len)
			return -ENAMETOOLONG;
		out[o++] = '/';
		memcpy(out + o, part, strlen(part));
		o += strlen(part);
	}
	if (o == 0)
		return -EINVAL;	/* the root itself is no file */
	out[o] = '\0';
	return 0;
}

/*
 * The paths PATCH names, in PATHS (at most PATCH_MAX_PATHS). The format:
 *   *** Begin Patch
 *   *** Add File: P      then + lines
 *   *** Update File: P   optionally *** Move to: Q, then @@ hunks of
 *                        ' ', '+' and '-' lines, maybe *** End of File
 *   *** Delete File: P
 *   *** End Patch
 * Anything else — no Begin or End, an unknown *** line, a line outside a
 * file, a Move to not right after its Update, no file at all — is -EINVAL
 * with the line in WHY: what the hook cannot read it does not let through.
 */
static int patch_paths(const char *patch, const char *cwd, struct patch_path *paths, int *count,
		       char *why, size_t whylen)
{
	char *text = strdup(patch), *save = NULL, *line;
	bool begun = false, ended = false, in_file = false, after_update = false;
	int n = 0, err = 0;

	if (text == NULL)
		return -ENOMEM;
	for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		const char *op = NULL, *p = NULL;

		rstrip(line);
		if (!begun) {
			/* Text before the patch: an `apply_patch <<'EOF'` wrapper. */
			begun = strcmp(line, "*** Begin Patch") == 0;
			continue;
		}
		if (ended) {
			/* After the end only a wrapper's EOF: a second patch
			 * there would be applied without being judged. */
			if (strncmp(line, "***", 3) == 0) {
				snprintf(why, whylen, "a line after *** End Patch: %.200s", line);
				err = -EINVAL;
				break;
			}
			continue;
		}
		if (strcmp(line, "*** End Patch") == 0) {
			ended = true;
			continue;
		}
		if (strncmp(line, "*** Add File: ", 14) == 0) {
			op = "create", p = line + 14;
		} else if (strncmp(line, "*** Update File: ", 17) == 0) {
			op = "write", p = line + 17;
		} else if (strncmp(line, "*** Delete File: ", 17) == 0) {
			op = "delete", p = line + 17;
		} else if (strncmp(line, "*** Move to: ", 13) == 0) {
			if (!after_update || n == 0) {
				snprintf(why, whylen, "a Move to that follows no Update File: %s", line);
				err = -EINVAL;
				break;
			}
			paths[n - 1].op = "rename-from";
			op = "rename-to", p = line + 13;
		} else if (strcmp(line, "*** End of File") == 0) {
			after_update = false;
			continue;
		} else if (strncmp(line, "***", 3) == 0 || !in_file) {
			if (!in_file && line[0] == '\0')
				continue;
			snprintf(why, whylen, "a line the patch format does not have: %.200s", line);
			err = -EINVAL;
			break;
		} else {
			after_update = false;	/* hunk content */
			continue;
		}
		if (n == PATCH_MAX_PATHS) {
			snprintf(why, whylen, "more than %d files in one patch", PATCH_MAX_PATHS);
			err = -E2BIG;
			break;
		}
		if ((err = patch_abs(cwd, p, paths[n].path, sizeof(paths[n].path))) < 0) {
			snprintf(why, whylen, "not a file path: '%.200s'", p);
			break;
		}
		paths[n++].op = op;
		in_file = true;
		after_update = strcmp(op, "write") == 0;
	}
	free(text);
	if (err == 0 && (!begun || !ended)) {
		snprintf(why, whylen, "no *** Begin Patch ... *** End Patch");
		err = -EINVAL;
	} else if (err == 0 && n == 0) {
		snprintf(why, whylen, "a patch that names no file");
		err = -EINVAL;
	}
	*count = n;
	return err;
}

static int hook_patch(const struct fsb_hook_session *s, const struct fsb_hook_opts *o,
		      const cJSON *ev)
{
	const cJSON *input = cJSON_GetObjectItemCaseSensitive(ev, "tool_input");
	const char *patch = fsb_hook_str(input, "command"), *cwd = fsb_hook_str(ev, "cwd");
	char tc[160], why[512], reason[2048];
	struct patch_path *paths;
	int n = 0, fd, err = 0;

	if (patch == NULL)
		patch = fsb_hook_str(input, "patch");
	if (patch == NULL)
		return fsb_hook_block("an apply_patch without its patch text: %s", "blocked");
	if ((paths = calloc(PATCH_MAX_PATHS, sizeof(*paths))) == NULL)
		return fsb_hook_block("%s", "out of memory");
	if ((err = patch_paths(patch, cwd, paths, &n, why, sizeof(why))) < 0) {
		free(paths);
		snprintf(reason, sizeof(reason), "fsbroker: the patch was not applied: %s", why);
		return fsb_hook_pre_tool_answer("deny", reason, NULL);
	}
	if ((fd = fsb_hook_core_connect(s, o, true)) < 0) {
		free(paths);
		return fsb_hook_block("cannot start or reach the session's core (%s); see its "
				      "log in the state dir", strerror(-fd));
	}
	fsb_hook_tool_call_id(fsb_hook_str(ev, "tool_use_id"), "cx", tc, sizeof(tc));
	/* Every path judged before any is backed up: a patch is applied whole
	 * or not at all, so one refusal blocks it all. */
	for (int i = 0; i < n && err == 0; i++)
		err = fsb_hook_check(fd, paths[i].op, paths[i].path, tc, reason, sizeof(reason));
	for (int i = 0; i < n && err == 0; i++)
		if (strcmp(paths[i].op, "rename-to") != 0 || access(paths[i].path, F_OK) == 0)
			err = fsb_hook_backup(fd, paths[i].path, tc, reason, sizeof(reason));
	close(fd);
	free(paths);
	if (err == -EACCES) {
		size_t l = strlen(reason);

		snprintf(reason + l, sizeof(reason) - l, "; the whole patch was refused, "
			 "nothing was changed");
		return fsb_hook_pre_tool_answer("deny", reason, NULL);
	}
	if (err < 0)
		return fsb_hook_block("%s", reason);
	/* No decision: Codex's own approval policy goes on as without us. */
	return 0;
}

static int handle(const struct fsb_hook_session *s, const struct fsb_hook_opts *o,
		  const cJSON *ev, const char *event)
{
	const char *tool = fsb_hook_str(ev, "tool_name");

	if (strcmp(event, "PreToolUse") == 0 && tool != NULL && strcmp(tool, "Bash") == 0)
		return hook_bash(s, o, ev);
	if (strcmp(event, "PreToolUse") == 0 && tool != NULL && strcmp(tool, "apply_patch") == 0)
		return hook_patch(s, o, ev);
	if (strcmp(event, "Stop") == 0)
		return fsb_hook_commit(s, o, false);
	return 0;
}

static const struct fsb_hook_group groups[] = {
	{ "PreToolUse", "Bash" },
	{ "PreToolUse", "apply_patch" },
	{ "Stop", NULL },
};

const struct fsb_hook_host fsb_hooks_codex = {
	.name = "codex",
	.title = "Codex CLI",
	.settings = ".codex/hooks.json",
	.id_prefix = "cx",
	.project_env = NULL,	/* none documented: the event's cwd */
	.groups = groups,
	.ngroups = sizeof(groups) / sizeof(groups[0]),
	.handle = handle,
};
