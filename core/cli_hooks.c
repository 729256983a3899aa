/*
 * cli_hooks.c — `fsbroker hooks`: the integration with an agent host's own
 * hook mechanism (docs/agent-hosts.md), its command line and the merge of
 * its hooks into the host's settings file.
 *
 * `hooks install HOST` merges into HOST's settings file the hooks that call
 * `fsbroker hooks run HOST`; `hooks uninstall HOST` takes exactly those out
 * again (the file put back byte for byte when nobody edited it since).
 * `hooks run HOST` is the hook itself: the host starts it once per event
 * with the event's JSON on stdin, and the host's table (hooks_claude.c,
 * hooks_gemini.c, hooks_codex.c) answers it with the session's core
 * (hooks_session.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>

#include "cli.h"
#include "config.h"
#include "hooks.h"

#define PROG "fsbroker hooks"

static const struct fsb_hook_host *const hosts[] = {
	&fsb_hooks_claude,
	&fsb_hooks_gemini,
	&fsb_hooks_codex,
};

static const char usage[] =
	"usage: fsbroker hooks install HOST [--project DIR | --user | --settings FILE]\n"
	"                              [--rules PACK] [--idle-exit SECONDS] [--ask-bash]\n"
	"       fsbroker hooks uninstall HOST [--project DIR | --user | --settings FILE]\n"
	"       fsbroker hooks run HOST [--rules PACK] [--idle-exit SECONDS] [--ask-bash]\n"
	"\n"
	"Wire fsbroker into an agent host's own hooks, so that its shell and file\n"
	"tools go through the core: a shell command runs under `fsbroker run --core`\n"
	"with a tool call id, a file tool's target is judged by the pack (a deny\n"
	"blocks the tool with the rule) and backed up before the tool writes, and\n"
	"the end of each turn seals one backup cycle. One core per host session,\n"
	"started by the first hook that needs it, ended by the host's SessionEnd or\n"
	"after SECONDS without a connection.\n"
	"\n"
	"verbs:\n"
	"  install   merge the hooks into the host's settings file, keeping every\n"
	"            other key\n"
	"  uninstall remove exactly what install added; the file put back byte for\n"
	"            byte when it was not edited since\n"
	"  run       the hook itself: the host starts it with the event's JSON on stdin\n"
	"\n"
	"hosts:\n"
	"  claude-code  Claude Code: .claude/settings.json; PreToolUse Bash rewritten,\n"
	"               Write|Edit|MultiEdit|NotebookEdit judged and backed up, Stop,\n"
	"               SessionEnd\n"
	"  gemini-cli   Gemini CLI: .gemini/settings.json; BeforeTool run_shell_command\n"
	"               rewritten, write_file|replace judged and backed up, AfterAgent,\n"
	"               SessionEnd\n"
	"  codex        Codex CLI: .codex/hooks.json; PreToolUse Bash refused with the\n"
	"               `fsbroker run --core` line to run instead, apply_patch's every\n"
	"               path judged and backed up, Stop\n"
	"\n"
	"options:\n"
	"  --project DIR        DIR/.claude/settings.json, DIR/.gemini/settings.json or\n"
	"                       DIR/.codex/hooks.json (the default, with DIR the\n"
	"                       current directory)\n"
	"  --user               the same under ~ instead of DIR\n"
	"  --settings FILE      that settings file\n"
	"  --rules PACK         the pack the session's core judges by (default: default)\n"
	"  --idle-exit SECONDS  how long the session's core waits unused before it\n"
	"                       stops (default 3600)\n"
	"  --ask-bash           let the host still ask before each shell command\n"
	"                       (showing it rewritten); default: allowed, since it\n"
	"                       runs sandboxed\n"
	"  -h, --help           print this text\n"
	"\n"
	"A session's backups: fsbroker backup list --state-dir\n"
	"  $XDG_STATE_HOME/fsbroker/hosts/HOST-SESSION (its log: core.log there).\n"
	"\n"
	"exit: install/uninstall: 0 done, 1 the settings file could not be read or\n"
	"  written, 2 usage error; run: 0 answered (a refusal is in the JSON on\n"
	"  stdout), 2 the tool is blocked because the core could not be reached or\n"
	"  the input is not a hook event\n"
	"environment: HOME, XDG_STATE_HOME, XDG_RUNTIME_DIR (the core's socket\n"
	"  directory, default /tmp/fsb-UID), CLAUDE_PROJECT_DIR, GEMINI_PROJECT_DIR\n"
	"  (the workspace, set by the host; else the event's cwd)\n"
	"docs: docs/agent-hosts.md\n";

/* ---- small file helpers ---- */

/* The file's bytes, or NULL with errno (ENOENT: there is none). */
static char *read_file(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	char *buf;
	int err;

	if (fd < 0)
		return NULL;
	buf = fsb_hook_read_all(fd, len);
	err = errno;
	close(fd);
	errno = err;
	return buf;
}

/* Writes `path` whole or not at all: a temporary beside it, then rename. */
static int write_file(const char *path, const char *data, size_t len, mode_t mode)
{
	char tmp[PATH_MAX];
	size_t off = 0;
	int fd, err;

	if (snprintf(tmp, sizeof(tmp), "%s.fsbroker-%d", path, (int)getpid()) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0)
		return -errno;
	while (off < len) {
		ssize_t n = write(fd, data + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			goto fail;
		}
		off += (size_t)n;
	}
	if (fsync(fd) < 0) {
		err = -errno;
		goto fail;
	}
	close(fd);
	if (rename(tmp, path) < 0) {
		err = -errno;
		unlink(tmp);
		return err;
	}
	return 0;
fail:
	close(fd);
	unlink(tmp);
	return err;
}


/* ---- the settings file ---- */

static int settings_path(const struct fsb_hook_host *host, const char *project, bool user,
			 const char *file, char *out, size_t len)
{
	const char *home = getenv("HOME");
	char cwd[PATH_MAX];

	/* Absolute, so that the copy install keeps is found again from any
	 * directory and however the path was spelt. */
	if (file != NULL) {
		if (file[0] == '/')
			snprintf(out, len, "%s", file);
		else if (getcwd(cwd, sizeof(cwd)) == NULL)
			return -errno;
		else if (snprintf(out, len, "%s/%s", cwd, file) >= (int)len)
			return -ENAMETOOLONG;
		return 0;
	}
	if (user) {
		if (home == NULL || home[0] != '/')
			return -ENOENT;
		snprintf(out, len, "%s/%s", home, host->settings);
		return 0;
	}
	if (realpath(project != NULL ? project : ".", cwd) == NULL)
		return -errno;
	project = cwd;
	if (snprintf(out, len, "%s/%s", project, host->settings) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

/* Where install keeps what the file was and what it wrote: in the state
 * dir, keyed by the settings file's path (FNV-1a), not beside the file. */
static void saved_path(const struct fsb_hook_host *host, const char *settings, const char *ext,
		       char *out, size_t len)
{
	char state[PATH_MAX];
	uint64_t h = 1469598103934665603ull;

	for (const char *p = settings; *p != '\0'; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	fsb_default_state_dir(state, sizeof(state));
	snprintf(out, len, "%s/hosts/%s-settings-%016llx.%s", state, host->name,
		 (unsigned long long)h, ext);
}

/* Ours: a command that runs `fsbroker hooks run HOST`, the word ending
 * there or at an option. */
static bool is_our_hook(const struct fsb_hook_host *host, const cJSON *h)
{
	const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(h, "command");
	char mark[64];
	const char *at;
	size_t n;

	if (!cJSON_IsString(cmd))
		return false;
	n = (size_t)snprintf(mark, sizeof(mark), " hooks run %s", host->name);
	for (at = cmd->valuestring; (at = strstr(at, mark)) != NULL; at += n)
		if (at[n] == '\0' || at[n] == ' ')
			return true;
	return false;
}

/* Takes every hook of ours out of `root`, and the groups, events and the
 * `hooks` object that are left empty by it. */
static void remove_ours(const struct fsb_hook_host *host, cJSON *root)
{
	cJSON *hooks = cJSON_GetObjectItemCaseSensitive(root, "hooks"), *ev, *next_ev;

	if (!cJSON_IsObject(hooks))
		return;
	for (ev = hooks->child; ev != NULL; ev = next_ev) {
		cJSON *group, *next_group;
		bool touched = false;

		next_ev = ev->next;
		if (!cJSON_IsArray(ev))
			continue;
		for (group = ev->child; group != NULL; group = next_group) {
			cJSON *list = cJSON_GetObjectItemCaseSensitive(group, "hooks"), *h, *next_h;
			bool had_ours = false;

			next_group = group->next;
			if (!cJSON_IsArray(list))
				continue;
			for (h = list->child; h != NULL; h = next_h) {
				next_h = h->next;
				if (is_our_hook(host, h)) {
					cJSON_Delete(cJSON_DetachItemViaPointer(list, h));
					had_ours = true;
				}
			}
			if (had_ours && cJSON_GetArraySize(list) == 0)
				cJSON_Delete(cJSON_DetachItemViaPointer(ev, group));
			touched |= had_ours;
		}
		if (touched && cJSON_GetArraySize(ev) == 0)
			cJSON_Delete(cJSON_DetachItemViaPointer(hooks, ev));
	}
	if (hooks->child == NULL)
		cJSON_DeleteItemFromObjectCaseSensitive(root, "hooks");
}

static int add_group(cJSON *hooks, const char *event, const char *matcher, const char *name,
		     const char *command)
{
	cJSON *arr = cJSON_GetObjectItemCaseSensitive(hooks, event), *group, *list, *h;

	if (arr == NULL)
		arr = cJSON_AddArrayToObject(hooks, event);
	if (!cJSON_IsArray(arr))
		return -EINVAL;
	if ((group = cJSON_CreateObject()) == NULL)
		return -ENOMEM;
	cJSON_AddItemToArray(arr, group);
	if (matcher != NULL)
		cJSON_AddStringToObject(group, "matcher", matcher);
	list = cJSON_AddArrayToObject(group, "hooks");
	h = cJSON_CreateObject();
	if (list == NULL || h == NULL) {
		cJSON_Delete(h);
		return -ENOMEM;
	}
	cJSON_AddItemToArray(list, h);
	if (name != NULL)
		cJSON_AddStringToObject(h, "name", name);
	cJSON_AddStringToObject(h, "type", "command");
	cJSON_AddStringToObject(h, "command", command);
	return 0;
}

static cJSON *parse_settings(const char *path, const char *text)
{
	cJSON *root;

	if (text == NULL)
		return cJSON_CreateObject();
	root = cJSON_Parse(text);
	if (!cJSON_IsObject(root)) {
		fprintf(stderr, PROG ": %s is not a JSON object; nothing changed\n", path);
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

/* cJSON_Print's layout with two spaces for its tabs, as settings files are
 * usually written, and a final newline. A tab inside a string is escaped
 * (\t), so every raw tab is layout. */
static char *print_settings(const cJSON *root)
{
	char *raw = cJSON_Print(root), *out, *o;
	size_t tabs = 0;

	if (raw == NULL)
		return NULL;
	for (const char *p = raw; *p != '\0'; p++)
		tabs += *p == '\t';
	if ((out = malloc(strlen(raw) + tabs + 2)) == NULL) {
		free(raw);
		return NULL;
	}
	o = out;
	for (const char *p = raw; *p != '\0'; p++) {
		if (*p != '\t') {
			*o++ = *p;
		} else if (p > raw && p[-1] == ':') {
			*o++ = ' ';
		} else {
			*o++ = ' ';
			*o++ = ' ';
		}
	}
	*o++ = '\n';
	*o = '\0';
	free(raw);
	return out;
}

static int install(const struct fsb_hook_host *host, const char *path,
		   const struct fsb_hook_opts *o)
{
	char self[PATH_MAX], command[PATH_MAX * 2 + 64] = "", num[32];
	char orig_path[PATH_MAX], written_path[PATH_MAX], dir[PATH_MAX], *slash;
	char *text = NULL, *out = NULL;
	size_t len = 0;
	cJSON *root = NULL, *hooks;
	int err;

	if ((err = fsb_hook_self_path(self, sizeof(self))) < 0) {
		fprintf(stderr, PROG ": cannot find its own binary: %s\n", strerror(-err));
		return 1;
	}
	text = read_file(path, &len);
	if (text == NULL && errno != ENOENT) {
		err = -errno;
		fprintf(stderr, PROG ": cannot read %s: %s\n", path, strerror(-err));
		return 1;
	}
	if ((root = parse_settings(path, text)) == NULL)
		goto fail;
	remove_ours(host, root);
	hooks = cJSON_GetObjectItemCaseSensitive(root, "hooks");
	if (hooks == NULL)
		hooks = cJSON_AddObjectToObject(root, "hooks");
	if (!cJSON_IsObject(hooks)) {
		fprintf(stderr, PROG ": %s has a \"hooks\" that is not an object; nothing "
			"changed\n", path);
		goto fail;
	}
	fsb_hook_sh_quote(command, sizeof(command), self);
	strcat(command, " hooks run ");
	strcat(command, host->name);
	if (o->rules != NULL) {
		strcat(command, " --rules ");
		if (fsb_hook_sh_quote(command, sizeof(command), o->rules) < 0)
			goto fail;
	}
	if (o->idle_exit != 0) {
		snprintf(num, sizeof(num), " --idle-exit %lu", o->idle_exit);
		strcat(command, num);
	}
	if (o->ask_bash)
		strcat(command, " --ask-bash");
	for (size_t g = 0; g < host->ngroups; g++)
		if (add_group(hooks, host->groups[g].event, host->groups[g].matcher,
			      host->hook_name, command) < 0)
			goto fail;
	if ((out = print_settings(root)) == NULL)
		goto fail;
	/* Keep what the file was the first time we installed: an install over
	 * an install must not make our own output the original. */
	saved_path(host, path, "orig", orig_path, sizeof(orig_path));
	saved_path(host, path, "written", written_path, sizeof(written_path));
	snprintf(dir, sizeof(dir), "%s", orig_path);
	if ((slash = strrchr(dir, '/')) != NULL)
		*slash = '\0';
	if ((err = fsb_hook_make_dirs(dir, 0700)) < 0) {
		fprintf(stderr, PROG ": cannot make %s: %s\n", dir, strerror(-err));
		goto fail;
	}
	if (access(orig_path, F_OK) != 0 && access(written_path, F_OK) != 0) {
		char none_path[PATH_MAX];

		saved_path(host, path, "none", none_path, sizeof(none_path));
		if (text != NULL)
			err = write_file(orig_path, text, len, 0600);
		else
			err = write_file(none_path, "", 0, 0600);
		if (err < 0) {
			fprintf(stderr, PROG ": cannot keep the original in %s: %s\n", dir,
				strerror(-err));
			goto fail;
		}
	}
	snprintf(dir, sizeof(dir), "%s", path);
	if ((slash = strrchr(dir, '/')) != NULL && slash != dir) {
		*slash = '\0';
		/* A project's .claude (.gemini, .codex) is shared through its
		 * repository. */
		if ((err = fsb_hook_make_dirs(dir, 0755)) < 0) {
			fprintf(stderr, PROG ": cannot make %s: %s\n", dir, strerror(-err));
			goto fail;
		}
	}
	if ((err = write_file(path, out, strlen(out), 0644)) < 0 ||
	    (err = write_file(written_path, out, strlen(out), 0600)) < 0) {
		fprintf(stderr, PROG ": cannot write %s: %s\n", path, strerror(-err));
		goto fail;
	}
	printf("fsbroker hooks: installed the %s hooks in %s\n", host->title, path);
	free(text);
	free(out);
	cJSON_Delete(root);
	return 0;
fail:
	free(text);
	free(out);
	cJSON_Delete(root);
	return 1;
}

static int uninstall(const struct fsb_hook_host *host, const char *path)
{
	char orig_path[PATH_MAX], written_path[PATH_MAX], none_path[PATH_MAX];
	char *text, *written, *orig = NULL, *out = NULL;
	size_t len = 0, wlen = 0, olen = 0;
	cJSON *root = NULL;
	int err = 0;

	saved_path(host, path, "orig", orig_path, sizeof(orig_path));
	saved_path(host, path, "written", written_path, sizeof(written_path));
	saved_path(host, path, "none", none_path, sizeof(none_path));
	text = read_file(path, &len);
	if (text == NULL) {
		err = -errno;
		fprintf(stderr, PROG ": cannot read %s: %s\n", path, strerror(-err));
		return 1;
	}
	written = read_file(written_path, &wlen);
	if (written != NULL && wlen == len && memcmp(written, text, len) == 0) {
		/* Nobody edited it since: put back exactly what was there. */
		if (access(none_path, F_OK) == 0) {
			if (unlink(path) < 0)
				err = -errno;
		} else if ((orig = read_file(orig_path, &olen)) != NULL) {
			err = write_file(path, orig, olen, 0644);
		} else {
			err = -errno;
		}
		if (err < 0)
			goto fail;
	} else {
		if ((root = parse_settings(path, text)) == NULL)
			goto fail;
		remove_ours(host, root);
		if ((out = print_settings(root)) == NULL)
			goto fail;
		if ((err = write_file(path, out, strlen(out), 0644)) < 0)
			goto fail;
	}
	unlink(orig_path);
	unlink(written_path);
	unlink(none_path);
	printf("fsbroker hooks: removed the %s hooks from %s\n", host->title, path);
	free(text);
	free(written);
	free(orig);
	free(out);
	cJSON_Delete(root);
	return 0;
fail:
	if (err < 0)
		fprintf(stderr, PROG ": cannot restore %s: %s\n", path, strerror(-err));
	free(text);
	free(written);
	free(orig);
	free(out);
	cJSON_Delete(root);
	return 1;
}

/* ---- the hook ---- */

static int hook_run(const struct fsb_hook_host *host, const struct fsb_hook_opts *o)
{
	const char *event, *sid, *cwd;
	char *text;
	struct fsb_hook_session s;
	cJSON *ev;
	int rc;

	signal(SIGPIPE, SIG_IGN);
	if ((text = fsb_hook_read_all(STDIN_FILENO, NULL)) == NULL)
		return fsb_hook_block("cannot read the hook's input: %s", strerror(errno));
	ev = cJSON_Parse(text);
	free(text);
	event = fsb_hook_str(ev, "hook_event_name");
	sid = fsb_hook_str(ev, "session_id");
	cwd = fsb_hook_str(ev, "cwd");
	if (event == NULL || sid == NULL || cwd == NULL || cwd[0] != '/') {
		cJSON_Delete(ev);
		fprintf(stderr, "fsbroker: the input is not a %s hook event (hook_event_name, "
			"session_id and an absolute cwd are needed)\n", host->title);
		return 2;
	}
	if (fsb_hook_session_init(&s, host, sid, cwd) < 0) {
		/* sid lives in ev: said before ev goes. */
		rc = fsb_hook_block("session id '%s' is not 1-100 characters of A-Z a-z 0-9 - _",
				    sid);
		cJSON_Delete(ev);
		return rc;
	}
	rc = host->handle(&s, o, ev, event);
	cJSON_Delete(ev);
	return rc;
}

int fsb_cli_hooks(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "project", required_argument, NULL, 'p' },
		{ "user", no_argument, NULL, 'u' },
		{ "settings", required_argument, NULL, 's' },
		{ "rules", required_argument, NULL, 'r' },
		{ "idle-exit", required_argument, NULL, 'i' },
		{ "ask-bash", no_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *project = NULL, *file = NULL, *verb;
	const struct fsb_hook_host *host = NULL;
	struct fsb_hook_opts o = { 0 };
	char path[PATH_MAX], *end;
	bool user = false;
	int c, err, where = 0;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			project = optarg;
			where++;
			break;
		case 'u':
			user = true;
			where++;
			break;
		case 's':
			file = optarg;
			where++;
			break;
		case 'r':
			o.rules = optarg;
			break;
		case 'i':
			errno = 0;
			o.idle_exit = strtoul(optarg, &end, 10);
			if (errno || *end || end == optarg || o.idle_exit < 1 ||
			    o.idle_exit > 604800) {
				fprintf(stderr, PROG ": --idle-exit takes 1 to 604800 seconds, "
					"not '%s'\n", optarg);
				return 2;
			}
			break;
		case 'a':
			o.ask_bash = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		case ':':
			fprintf(stderr, PROG ": %s needs a value; see " PROG " --help\n",
				argv[optind - 1]);
			return 2;
		default:
			return fsb_cli_bad_option(PROG, argv, 2);
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, PROG ": expected install, uninstall or run, then a host; "
			"see " PROG " --help\n");
		return 2;
	}
	verb = argv[optind];
	for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]) && host == NULL; i++)
		if (strcmp(argv[optind + 1], hosts[i]->name) == 0)
			host = hosts[i];
	if (host == NULL) {
		fprintf(stderr, PROG ": no hooks for '%s'; see " PROG " --help for the hosts "
			"(docs/agent-hosts.md)\n", argv[optind + 1]);
		return 2;
	}
	if (where > 1) {
		fprintf(stderr, PROG ": --project, --user and --settings exclude each other\n");
		return 2;
	}
	if (strcmp(verb, "run") == 0)
		return hook_run(host, &o);
	if (strcmp(verb, "install") != 0 && strcmp(verb, "uninstall") != 0) {
		fprintf(stderr, PROG ": unknown verb '%s'; see " PROG " --help\n", verb);
		return 2;
	}
	if ((err = settings_path(host, project, user, file, path, sizeof(path))) < 0) {
		fprintf(stderr, PROG ": no settings file to use: %s\n", strerror(-err));
		return 1;
	}
	return strcmp(verb, "install") == 0 ? install(host, path, &o) : uninstall(host, path);
}
