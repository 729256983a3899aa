/*
 * cli_hooks.c — `fsbroker hooks`: the integration with an agent host's own
 * hook mechanism (docs/agent-hosts.md, "Claude Code").
 *
 * `hooks install claude-code` merges into a Claude Code settings file the
 * hooks that call `fsbroker hooks run claude-code`; `hooks uninstall` takes
 * exactly those out again (the file put back byte for byte when nobody
 * edited it since). `hooks run claude-code` is the hook itself: the host
 * starts it once per event with the event's JSON on stdin. It keeps one
 * `fsbroker serve` per host session, started on first use, found again by
 * its admin socket, ended by SessionEnd or by its own idle timeout:
 *   PreToolUse Bash        the command rewritten to run under
 *                          `fsbroker run --core` with the tool call's id
 *   PreToolUse Write, Edit, MultiEdit, NotebookEdit
 *                          CheckAccess of the target (a deny or ask blocks
 *                          the tool with the rule), then ModifyBackup
 *   Stop                   CommitModifyBackup: one cycle per turn
 *   SessionEnd             the same, then Shutdown
 * A hook that cannot reach its core blocks the tool (exit 2): fail closed.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "broker.h"
#include "cli.h"
#include "config.h"

#define PROG "fsbroker hooks"
#define HOOK_MARK " hooks run claude-code"
#define HOOK_MAX_INPUT (16u << 20)

static const char usage[] =
	"usage: fsbroker hooks install claude-code [--project DIR | --user |\n"
	"                              --settings FILE] [--rules PACK]\n"
	"                              [--idle-exit SECONDS] [--ask-bash]\n"
	"       fsbroker hooks uninstall claude-code [--project DIR | --user |\n"
	"                              --settings FILE]\n"
	"       fsbroker hooks run claude-code [--rules PACK] [--idle-exit SECONDS]\n"
	"                              [--ask-bash]\n"
	"\n"
	"Wire fsbroker into Claude Code's own hooks, so that its Bash, Write, Edit,\n"
	"MultiEdit and NotebookEdit tools go through the core: a Bash command runs\n"
	"under `fsbroker run --core` with the tool call's id, a file tool's target is\n"
	"judged by the pack (a deny blocks the tool with the rule) and backed up\n"
	"before the tool writes, and the end of each turn (Stop) seals one backup\n"
	"cycle. One core per Claude Code session, started by the first hook that\n"
	"needs it, ended by SessionEnd or after SECONDS without a connection.\n"
	"\n"
	"install merges the hooks into the settings file (keeping every other key);\n"
	"uninstall removes exactly what install added, and puts the file back byte\n"
	"for byte when it was not edited since. run is the hook itself: Claude Code\n"
	"starts it with the event's JSON on stdin.\n"
	"\n"
	"options:\n"
	"  --project DIR        DIR/.claude/settings.json (the default, with DIR the\n"
	"                       current directory)\n"
	"  --user               ~/.claude/settings.json\n"
	"  --settings FILE      that settings file\n"
	"  --rules PACK         the pack the session's core judges by (default: default)\n"
	"  --idle-exit SECONDS  how long the session's core waits unused before it\n"
	"                       stops (default 3600)\n"
	"  --ask-bash           let Claude Code still ask before each Bash command\n"
	"                       (showing it rewritten); default: allowed, since it\n"
	"                       runs sandboxed\n"
	"  -h, --help           print this text\n"
	"\n"
	"A session's backups: fsbroker backup list --state-dir\n"
	"  $XDG_STATE_HOME/fsbroker/hosts/claude-code-SESSION (its log: core.log there).\n"
	"\n"
	"exit: install/uninstall: 0 done, 1 the settings file could not be read or\n"
	"  written, 2 usage error; run: 0 answered (a refusal is in the JSON on\n"
	"  stdout), 2 the tool is blocked because the core could not be reached or\n"
	"  the input is not a hook event\n"
	"environment: HOME, XDG_STATE_HOME, XDG_RUNTIME_DIR (the core's socket\n"
	"  directory, default /tmp/fsb-UID), CLAUDE_PROJECT_DIR (the workspace; else\n"
	"  the event's cwd)\n"
	"docs: docs/agent-hosts.md\n";

struct hook_opts {
	const char *rules;
	unsigned long idle_exit;
	bool ask_bash;		/* answer `ask` for a rewritten Bash, not `allow` */
};

/* ---- small file helpers ---- */

/* Reads all of `fd` into a NUL-terminated buffer; NULL with errno. */
static char *read_all(int fd, size_t *len_out)
{
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap), *nbuf;
	ssize_t n;

	if (buf == NULL)
		return NULL;
	for (;;) {
		if (len + 1 >= cap) {
			if (cap >= HOOK_MAX_INPUT) {
				free(buf);
				errno = EFBIG;
				return NULL;
			}
			if ((nbuf = realloc(buf, cap * 2)) == NULL) {
				free(buf);
				return NULL;
			}
			buf = nbuf;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = errno;

			free(buf);
			errno = err;
			return NULL;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	if (len_out != NULL)
		*len_out = len;
	return buf;
}

/* The file's bytes, or NULL with errno (ENOENT: there is none). */
static char *read_file(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	char *buf;
	int err;

	if (fd < 0)
		return NULL;
	buf = read_all(fd, len);
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

/* mkdir -p with `mode` for what it makes. */
static int make_dirs_mode(const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	size_t n = strlen(path);

	if (n == 0 || n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* The state and socket directories: nobody else's business. */
static int make_dirs(const char *path)
{
	return make_dirs_mode(path, 0700);
}

static int self_path(char *out, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", out, len - 1);

	if (n < 0)
		return -errno;
	if ((size_t)n >= len - 1)
		return -ENAMETOOLONG;
	out[n] = '\0';
	return 0;
}

/* Appends `s` single-quoted for sh to `out`. */
static int sh_quote(char *out, size_t len, const char *s)
{
	size_t o = strlen(out);

	if (o + 1 >= len)
		return -ENAMETOOLONG;
	out[o++] = '\'';
	for (; *s != '\0'; s++) {
		if (*s == '\'') {
			if (o + 4 >= len)
				return -ENAMETOOLONG;
			memcpy(out + o, "'\\''", 4);
			o += 4;
		} else {
			if (o + 1 >= len)
				return -ENAMETOOLONG;
			out[o++] = *s;
		}
	}
	if (o + 2 >= len)
		return -ENAMETOOLONG;
	out[o++] = '\'';
	out[o] = '\0';
	return 0;
}

/* ---- the settings file ---- */

static int settings_path(const char *project, bool user, const char *file, char *out, size_t len)
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
		snprintf(out, len, "%s/.claude/settings.json", home);
		return 0;
	}
	if (realpath(project != NULL ? project : ".", cwd) == NULL)
		return -errno;
	project = cwd;
	if (snprintf(out, len, "%s/.claude/settings.json", project) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

/* Where install keeps what the file was and what it wrote: in the state
 * dir, keyed by the settings file's path (FNV-1a), not beside the file. */
static void saved_path(const char *settings, const char *ext, char *out, size_t len)
{
	char state[PATH_MAX];
	uint64_t h = 1469598103934665603ull;

	for (const char *p = settings; *p != '\0'; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	fsb_default_state_dir(state, sizeof(state));
	snprintf(out, len, "%s/hosts/claude-code-settings-%016llx.%s", state,
		 (unsigned long long)h, ext);
}

static bool is_our_hook(const cJSON *h)
{
	const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(h, "command");

	return cJSON_IsString(cmd) && strstr(cmd->valuestring, HOOK_MARK) != NULL;
}

/* Takes every hook of ours out of `root`, and the groups, events and the
 * `hooks` object that are left empty by it. */
static void remove_ours(cJSON *root)
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
				if (is_our_hook(h)) {
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

static int add_group(cJSON *hooks, const char *event, const char *matcher, const char *command)
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

static int install(const char *path, const struct hook_opts *o)
{
	char self[PATH_MAX], command[PATH_MAX * 2 + 64] = "", num[32];
	char orig_path[PATH_MAX], written_path[PATH_MAX], dir[PATH_MAX], *slash;
	char *text = NULL, *out = NULL;
	size_t len = 0;
	cJSON *root = NULL, *hooks;
	int err;

	if ((err = self_path(self, sizeof(self))) < 0) {
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
	remove_ours(root);
	hooks = cJSON_GetObjectItemCaseSensitive(root, "hooks");
	if (hooks == NULL)
		hooks = cJSON_AddObjectToObject(root, "hooks");
	if (!cJSON_IsObject(hooks)) {
		fprintf(stderr, PROG ": %s has a \"hooks\" that is not an object; nothing "
			"changed\n", path);
		goto fail;
	}
	sh_quote(command, sizeof(command), self);
	strcat(command, HOOK_MARK);
	if (o->rules != NULL) {
		strcat(command, " --rules ");
		if (sh_quote(command, sizeof(command), o->rules) < 0)
			goto fail;
	}
	if (o->idle_exit != 0) {
		snprintf(num, sizeof(num), " --idle-exit %lu", o->idle_exit);
		strcat(command, num);
	}
	if (o->ask_bash)
		strcat(command, " --ask-bash");
	if (add_group(hooks, "PreToolUse", "Bash", command) < 0 ||
	    add_group(hooks, "PreToolUse", "Write|Edit|MultiEdit|NotebookEdit", command) < 0 ||
	    add_group(hooks, "Stop", NULL, command) < 0 ||
	    add_group(hooks, "SessionEnd", NULL, command) < 0)
		goto fail;
	if ((out = print_settings(root)) == NULL)
		goto fail;
	/* Keep what the file was the first time we installed: an install over
	 * an install must not make our own output the original. */
	saved_path(path, "orig", orig_path, sizeof(orig_path));
	saved_path(path, "written", written_path, sizeof(written_path));
	snprintf(dir, sizeof(dir), "%s", orig_path);
	if ((slash = strrchr(dir, '/')) != NULL)
		*slash = '\0';
	if ((err = make_dirs(dir)) < 0) {
		fprintf(stderr, PROG ": cannot make %s: %s\n", dir, strerror(-err));
		goto fail;
	}
	if (access(orig_path, F_OK) != 0 && access(written_path, F_OK) != 0) {
		char none_path[PATH_MAX];

		saved_path(path, "none", none_path, sizeof(none_path));
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
		/* A project's .claude is shared through its repository. */
		if ((err = make_dirs_mode(dir, 0755)) < 0) {
			fprintf(stderr, PROG ": cannot make %s: %s\n", dir, strerror(-err));
			goto fail;
		}
	}
	if ((err = write_file(path, out, strlen(out), 0644)) < 0 ||
	    (err = write_file(written_path, out, strlen(out), 0600)) < 0) {
		fprintf(stderr, PROG ": cannot write %s: %s\n", path, strerror(-err));
		goto fail;
	}
	printf("fsbroker hooks: installed the Claude Code hooks in %s\n", path);
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

static int uninstall(const char *path)
{
	char orig_path[PATH_MAX], written_path[PATH_MAX], none_path[PATH_MAX];
	char *text, *written, *orig = NULL, *out = NULL;
	size_t len = 0, wlen = 0, olen = 0;
	cJSON *root = NULL;
	int err = 0;

	saved_path(path, "orig", orig_path, sizeof(orig_path));
	saved_path(path, "written", written_path, sizeof(written_path));
	saved_path(path, "none", none_path, sizeof(none_path));
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
		remove_ours(root);
		if ((out = print_settings(root)) == NULL)
			goto fail;
		if ((err = write_file(path, out, strlen(out), 0644)) < 0)
			goto fail;
	}
	unlink(orig_path);
	unlink(written_path);
	unlink(none_path);
	printf("fsbroker hooks: removed the Claude Code hooks from %s\n", path);
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

/* ---- the session's core ---- */

struct session {
	char id[160];		/* the fsbroker session: cc-<host session> */
	char state[PATH_MAX];	/* its state dir, admin.sock inside */
	char sockdir[PATH_MAX];	/* its client socket's private directory */
	char workspace[PATH_MAX];
};

static bool host_id_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 100)
		return false;
	for (; *s != '\0'; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '-' || *s == '_'))
			return false;
	return true;
}

static int session_init(struct session *s, const char *host_session, const char *cwd)
{
	const char *proj = getenv("CLAUDE_PROJECT_DIR"), *rt = getenv("XDG_RUNTIME_DIR");
	char state[PATH_MAX];

	if (!host_id_ok(host_session))
		return -EINVAL;
	snprintf(s->id, sizeof(s->id), "cc-%s", host_session);
	fsb_default_state_dir(state, sizeof(state));
	if (snprintf(s->state, sizeof(s->state), "%s/hosts/claude-code-%s", state,
		     host_session) >= (int)sizeof(s->state))
		return -ENAMETOOLONG;
	if (rt != NULL && rt[0] == '/')
		snprintf(s->sockdir, sizeof(s->sockdir), "%s/fsbroker/%s", rt, s->id);
	else
		snprintf(s->sockdir, sizeof(s->sockdir), "/tmp/fsb-%u/%s", (unsigned)getuid(),
			 s->id);
	snprintf(s->workspace, sizeof(s->workspace), "%s",
		 proj != NULL && proj[0] == '/' ? proj : cwd);
	return 0;
}

static int admin_connect(const struct session *s)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = 30 };
	int fd, err;

	if (snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/admin.sock", s->state) >=
	    (int)sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	/* A core that stops answering must not hang the host's tool call. */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* Starts `fsbroker serve` for the session, detached from the hook (its own
 * session, stdin /dev/null, its log in the state dir). */
static int spawn_core(const struct session *s, const struct hook_opts *o)
{
	char self[PATH_MAX], sock[PATH_MAX + 16], log[PATH_MAX + 16], idle[24];
	const char *argv[20];
	int n = 0, err, status;
	pid_t pid;

	if ((err = self_path(self, sizeof(self))) < 0)
		return err;
	snprintf(sock, sizeof(sock), "%s/core.sock", s->sockdir);
	snprintf(log, sizeof(log), "%s/core.log", s->state);
	snprintf(idle, sizeof(idle), "%lu", o->idle_exit ? o->idle_exit : 3600);
	argv[n++] = self;
	argv[n++] = "serve";
	argv[n++] = "--socket";
	argv[n++] = sock;
	argv[n++] = "--session";
	argv[n++] = s->id;
	argv[n++] = "--state-dir";
	argv[n++] = s->state;
	argv[n++] = "--workspace";
	argv[n++] = s->workspace;
	argv[n++] = "--admin-shutdown";
	argv[n++] = "--idle-exit";
	argv[n++] = idle;
	if (o->rules != NULL) {
		argv[n++] = "--rules";
		argv[n++] = o->rules;
	}
	argv[n] = NULL;

	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int in, out;

		/* Twice forked: the core is nobody's child but init's, and the
		 * host waits on no process of ours when the hook exits. */
		setsid();
		if (fork() != 0)
			_exit(0);
		in = open("/dev/null", O_RDONLY | O_CLOEXEC);
		out = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (in < 0 || out < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
			_exit(125);
		execv(self, (char *const *)argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return 0;
}

/* A connection to the session's core, started when none runs. */
static int core_connect(const struct session *s, const struct hook_opts *o, bool start)
{
	char lock[PATH_MAX + 16];
	struct timespec pause = { 0, 10 * 1000 * 1000 };
	int fd, lk, err;

	fd = admin_connect(s);
	if (fd >= 0 || !start || (fd != -ENOENT && fd != -ECONNREFUSED))
		return fd;
	if ((err = make_dirs(s->state)) < 0 || (err = make_dirs(s->sockdir)) < 0)
		return err;
	/* Two hooks at once (parallel tool calls) start one core. */
	snprintf(lock, sizeof(lock), "%s/hooks.lock", s->state);
	lk = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (lk < 0)
		return -errno;
	if (flock(lk, LOCK_EX) < 0) {
		err = -errno;
		close(lk);
		return err;
	}
	fd = admin_connect(s);
	if (fd < 0) {
		if ((err = spawn_core(s, o)) < 0) {
			close(lk);
			return err;
		}
		/* Up to 10 s: a first start runs the pack's self-tests. */
		for (int i = 0; i < 1000 && fd < 0; i++) {
			nanosleep(&pause, NULL);
			fd = admin_connect(s);
		}
	}
	close(lk);
	return fd;
}

/* One request, one reply line. The reply, or NULL with a sentence. */
static cJSON *ask_core(int fd, cJSON *req, char *err, size_t errlen)
{
	char *line = cJSON_PrintUnformatted(req), buf[65536];
	size_t len = 0;
	cJSON *reply;

	if (line == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	len = strlen(line);
	line[len] = '\0';
	if (send(fd, line, len, MSG_NOSIGNAL) != (ssize_t)len ||
	    send(fd, "\n", 1, MSG_NOSIGNAL) != 1) {
		snprintf(err, errlen, "cannot send to the core: %s", strerror(errno));
		free(line);
		return NULL;
	}
	free(line);
	len = 0;
	while (len < sizeof(buf) - 1) {
		ssize_t n = recv(fd, buf + len, sizeof(buf) - 1 - len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			snprintf(err, errlen, "the core did not answer: %s",
				 n == 0 ? "it closed the connection" : strerror(errno));
			return NULL;
		}
		len += (size_t)n;
		if (memchr(buf, '\n', len) != NULL)
			break;
	}
	buf[len] = '\0';
	if ((reply = cJSON_Parse(buf)) == NULL)
		snprintf(err, errlen, "the core's answer is not JSON");
	return reply;
}

static const char *str_of(const cJSON *obj, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Claude Code's answer to a PreToolUse: printed on stdout, exit 0. */
static int pre_tool_answer(const char *decision, const char *reason, cJSON *updated)
{
	cJSON *out = cJSON_CreateObject(), *spec = cJSON_AddObjectToObject(out, "hookSpecificOutput");
	char *text;

	cJSON_AddStringToObject(spec, "hookEventName", "PreToolUse");
	if (decision != NULL)
		cJSON_AddStringToObject(spec, "permissionDecision", decision);
	if (reason != NULL)
		cJSON_AddStringToObject(spec, "permissionDecisionReason", reason);
	if (updated != NULL)
		cJSON_AddItemToObject(spec, "updatedInput", updated);
	text = cJSON_PrintUnformatted(out);
	cJSON_Delete(out);
	if (text == NULL)
		return 2;
	puts(text);
	free(text);
	return 0;
}

static int block(const char *fmt, const char *arg)
{
	fprintf(stderr, "fsbroker: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	return 2;
}

static void tool_call_id(const cJSON *ev, char *out, size_t len)
{
	const char *id = str_of(ev, "tool_use_id");

	if (id != NULL && fsb_id_valid(id))
		snprintf(out, len, "%s", id);
	else
		snprintf(out, len, "tc-%ld-%d", (long)time(NULL), (int)getpid());
}

static int hook_bash(const struct session *s, const struct hook_opts *o, const cJSON *ev)
{
	const cJSON *input = cJSON_GetObjectItemCaseSensitive(ev, "tool_input");
	const char *cmd = str_of(input, "command");
	char self[PATH_MAX], tc[160], *line;
	size_t len;
	cJSON *updated;
	int fd, err;

	if (cmd == NULL)
		return block("a Bash tool call without a command: %s", "blocked");
	/* The core must be up before the command runs: `run --core` attaches. */
	if ((fd = core_connect(s, o, true)) < 0)
		return block("cannot start or reach the session's core (%s); see its log in "
			     "the state dir", strerror(-fd));
	close(fd);
	if ((err = self_path(self, sizeof(self))) < 0)
		return block("cannot find its own binary: %s", strerror(-err));
	tool_call_id(ev, tc, sizeof(tc));
	len = strlen(self) * 2 + strlen(s->state) * 2 + strlen(tc) * 2 + strlen(cmd) * 4 + 128;
	if ((line = calloc(1, len)) == NULL)
		return block("%s", "out of memory");
	sh_quote(line, len, self);
	strcat(line, " run --core ");
	sh_quote(line, len, s->state);
	strcat(line, " --tool-call ");
	sh_quote(line, len, tc);
	strcat(line, " -- /bin/bash -c ");
	sh_quote(line, len, cmd);
	/* Every other field of the tool's input (timeout, description,
	 * run_in_background) stays as the model gave it. */
	updated = cJSON_Duplicate(input, 1);
	if (updated == NULL) {
		free(line);
		return block("%s", "out of memory");
	}
	cJSON_ReplaceItemInObjectCaseSensitive(updated, "command", cJSON_CreateString(line));
	free(line);
	/* allow: the command runs sandboxed, each change judged and backed up;
	 * the settings' own deny and ask rules still apply. --ask-bash keeps
	 * Claude Code's prompt, showing the rewritten command. */
	return pre_tool_answer(o->ask_bash ? "ask" : "allow", "fsbroker: runs under fsbroker run",
			       updated);
}

static int hook_file(const struct session *s, const struct hook_opts *o, const cJSON *ev)
{
	const cJSON *input = cJSON_GetObjectItemCaseSensitive(ev, "tool_input");
	const char *path = str_of(input, "file_path"), *decision, *rule;
	char tc[160], err[512], reason[2048];
	cJSON *req, *reply;
	int fd;

	if (path == NULL)
		path = str_of(input, "notebook_path");
	if (path == NULL || path[0] != '/')
		return block("a file tool call without an absolute path: %s", "blocked");
	if ((fd = core_connect(s, o, true)) < 0)
		return block("cannot start or reach the session's core (%s); see its log in "
			     "the state dir", strerror(-fd));
	tool_call_id(ev, tc, sizeof(tc));
	req = cJSON_CreateObject();
	cJSON_AddNumberToObject(req, "id", 1);
	cJSON_AddStringToObject(req, "command", "CheckAccess");
	cJSON_AddStringToObject(req, "path", path);
	cJSON_AddStringToObject(req, "op", "write");
	cJSON_AddStringToObject(req, "toolCallId", tc);
	reply = ask_core(fd, req, err, sizeof(err));
	if (reply == NULL) {
		close(fd);
		cJSON_Delete(req);
		return block("%s", err);
	}
	decision = str_of(reply, "decision");
	rule = str_of(reply, "rule");
	if (decision == NULL || strcmp(decision, "allow") != 0) {
		const char *block_id = str_of(reply, "blockId");

		/* An ask is refused too: the tool would write with no backup
		 * once Claude Code's own prompt let it through, and nothing
		 * keeps this block for `fsbroker approve`. A Bash command's
		 * ask is kept (run --core leaves it for approve). */
		snprintf(reason, sizeof(reason), "fsbroker: write of %s %s (%s)%s", path,
			 block_id != NULL ? "needs an approval" : "is denied",
			 rule != NULL ? rule : str_of(reply, "error") ? str_of(reply, "error")
								    : "no rule",
			 block_id != NULL ? ", which a file tool cannot wait for; nothing was "
					    "written. Make the change with a Bash command (its "
					    "summary names the fsbroker approve to run) or change "
					    "the pack" : "");
		close(fd);
		cJSON_Delete(req);
		cJSON_Delete(reply);
		return pre_tool_answer("deny", reason, NULL);
	}
	cJSON_Delete(reply);
	cJSON_ReplaceItemInObjectCaseSensitive(req, "id", cJSON_CreateNumber(2));
	cJSON_ReplaceItemInObjectCaseSensitive(req, "command", cJSON_CreateString("ModifyBackup"));
	cJSON_DeleteItemFromObjectCaseSensitive(req, "op");
	reply = ask_core(fd, req, err, sizeof(err));
	close(fd);
	cJSON_Delete(req);
	if (reply == NULL)
		return block("%s", err);
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "ok"))) {
		snprintf(reason, sizeof(reason), "fsbroker: no backup of %s, so no write: %s", path,
			 str_of(reply, "error") ? str_of(reply, "error") : "refused");
		cJSON_Delete(reply);
		return pre_tool_answer("deny", reason, NULL);
	}
	cJSON_Delete(reply);
	/* No decision: Claude Code's own permissions go on as without us. */
	return 0;
}

static int hook_commit(const struct session *s, const struct hook_opts *o, const cJSON *ev,
		       bool end)
{
	char err[512], msg[256];
	cJSON *req, *reply;
	int fd = core_connect(s, o, false);

	if (fd < 0)
		return 0;	/* no core: nothing was backed up this session */
	snprintf(msg, sizeof(msg), "claude-code %s (session %s)", end ? "session end" : "turn",
		 str_of(ev, "session_id"));
	req = cJSON_CreateObject();
	cJSON_AddNumberToObject(req, "id", 1);
	cJSON_AddStringToObject(req, "command", "CommitModifyBackup");
	cJSON_AddStringToObject(req, "commitMsg", msg);
	reply = ask_core(fd, req, err, sizeof(err));
	cJSON_Delete(req);
	if (reply == NULL) {
		close(fd);
		fprintf(stderr, "fsbroker: the turn was not sealed: %s\n", err);
		return 1;
	}
	cJSON_Delete(reply);
	if (end) {
		req = cJSON_CreateObject();
		cJSON_AddNumberToObject(req, "id", 2);
		cJSON_AddStringToObject(req, "command", "Shutdown");
		reply = ask_core(fd, req, err, sizeof(err));
		cJSON_Delete(req);
		cJSON_Delete(reply);
	}
	close(fd);
	return 0;
}

static int hook_run(const struct hook_opts *o)
{
	const char *event, *tool, *sid, *cwd;
	char *text;
	struct session s;
	cJSON *ev;
	int rc;

	signal(SIGPIPE, SIG_IGN);
	if ((text = read_all(STDIN_FILENO, NULL)) == NULL)
		return block("cannot read the hook's input: %s", strerror(errno));
	ev = cJSON_Parse(text);
	free(text);
	event = str_of(ev, "hook_event_name");
	sid = str_of(ev, "session_id");
	cwd = str_of(ev, "cwd");
	if (event == NULL || sid == NULL || cwd == NULL || cwd[0] != '/') {
		cJSON_Delete(ev);
		return block("%s", "the input is not a Claude Code hook event (hook_event_name, "
			     "session_id and an absolute cwd are needed)");
	}
	if (session_init(&s, sid, cwd) < 0) {
		/* sid lives in ev: said before ev goes. */
		rc = block("session id '%s' is not 1-100 characters of A-Z a-z 0-9 - _", sid);
		cJSON_Delete(ev);
		return rc;
	}
	tool = str_of(ev, "tool_name");
	if (strcmp(event, "PreToolUse") == 0 && tool != NULL && strcmp(tool, "Bash") == 0)
		rc = hook_bash(&s, o, ev);
	else if (strcmp(event, "PreToolUse") == 0 && tool != NULL &&
		 (strcmp(tool, "Write") == 0 || strcmp(tool, "Edit") == 0 ||
		  strcmp(tool, "MultiEdit") == 0 || strcmp(tool, "NotebookEdit") == 0))
		rc = hook_file(&s, o, ev);
	else if (strcmp(event, "Stop") == 0)
		rc = hook_commit(&s, o, ev, false);
	else if (strcmp(event, "SessionEnd") == 0)
		rc = hook_commit(&s, o, ev, true);
	else
		rc = 0;
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
	const char *project = NULL, *file = NULL, *verb, *host;
	struct hook_opts o = { 0 };
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
		fprintf(stderr, PROG ": expected install, uninstall or run, then claude-code; "
			"see " PROG " --help\n");
		return 2;
	}
	verb = argv[optind];
	host = argv[optind + 1];
	if (strcmp(host, "claude-code") != 0) {
		fprintf(stderr, PROG ": no hooks for '%s': claude-code only (docs/agent-hosts.md "
			"says how to set up Codex CLI and Gemini CLI)\n", host);
		return 2;
	}
	if (where > 1) {
		fprintf(stderr, PROG ": --project, --user and --settings exclude each other\n");
		return 2;
	}
	if (strcmp(verb, "run") == 0)
		return hook_run(&o);
	if (strcmp(verb, "install") != 0 && strcmp(verb, "uninstall") != 0) {
		fprintf(stderr, PROG ": unknown verb '%s'; see " PROG " --help\n", verb);
		return 2;
	}
	if ((err = settings_path(project, user, file, path, sizeof(path))) < 0) {
		fprintf(stderr, PROG ": no settings file to use: %s\n", strerror(-err));
		return 1;
	}
	return strcmp(verb, "install") == 0 ? install(path, &o) : uninstall(path);
}
