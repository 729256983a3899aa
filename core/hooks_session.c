/*
 * hooks_session.c — the per-session core the hooks of one agent host
 * session share, and what every host's event handlers need from it.
 *
 * The first hook that needs the core starts `fsbroker serve` for the host
 * session (its state dir under $XDG_STATE_HOME/fsbroker/hosts/HOST-SESSION,
 * its client socket in a private directory under the runtime dir), the next
 * finds it again by its admin socket, and SessionEnd (where the host has
 * one) or the core's own idle timeout ends it. A hook that cannot reach its
 * core blocks the tool: fail closed.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
#include "config.h"
#include "hooks.h"

#define HOOK_MAX_INPUT (16u << 20)

char *fsb_hook_read_all(int fd, size_t *len_out)
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

int fsb_hook_make_dirs(const char *path, mode_t mode)
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

int fsb_hook_self_path(char *out, size_t len)
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
int fsb_hook_sh_quote(char *out, size_t len, const char *s)
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

int fsb_hook_session_init(struct fsb_hook_session *s, const struct fsb_hook_host *host,
			  const char *host_session, const char *cwd)
{
	const char *proj = host->project_env ? getenv(host->project_env) : NULL, *rt = getenv("XDG_RUNTIME_DIR");
	char state[PATH_MAX];

	if (!host_id_ok(host_session))
		return -EINVAL;
	s->host = host;
	snprintf(s->host_id, sizeof(s->host_id), "%s", host_session);
	snprintf(s->id, sizeof(s->id), "%s-%s", host->id_prefix, host_session);
	fsb_default_state_dir(state, sizeof(state));
	if (snprintf(s->state, sizeof(s->state), "%s/hosts/%s-%s", state, host->name,
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

static int admin_connect(const struct fsb_hook_session *s)
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
static int spawn_core(const struct fsb_hook_session *s, const struct fsb_hook_opts *o)
{
	char self[PATH_MAX], sock[PATH_MAX + 16], log[PATH_MAX + 16], idle[24];
	const char *argv[20];
	int n = 0, err, status;
	pid_t pid;

	if ((err = fsb_hook_self_path(self, sizeof(self))) < 0)
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
int fsb_hook_core_connect(const struct fsb_hook_session *s, const struct fsb_hook_opts *o, bool start)
{
	char lock[PATH_MAX + 16];
	struct timespec pause = { 0, 10 * 1000 * 1000 };
	int fd, lk, err;

	fd = admin_connect(s);
	if (fd >= 0 || !start || (fd != -ENOENT && fd != -ECONNREFUSED))
		return fd;
	if ((err = fsb_hook_make_dirs(s->state, 0700)) < 0 || (err = fsb_hook_make_dirs(s->sockdir, 0700)) < 0)
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
cJSON *fsb_hook_ask(int fd, cJSON *req, char *err, size_t errlen)
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


const char *fsb_hook_str(const cJSON *obj, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

int fsb_hook_block(const char *fmt, const char *arg)
{
	fprintf(stderr, "fsbroker: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	return 2;
}

void fsb_hook_tool_call_id(const char *given, const char *prefix, char *out, size_t len)
{
	struct timespec now;

	if (given != NULL && fsb_id_valid(given)) {
		snprintf(out, len, "%s", given);
		return;
	}
	/* One process per hook call: its pid and the clock make it unique
	 * among the calls of a session. */
	clock_gettime(CLOCK_REALTIME, &now);
	snprintf(out, len, "%s-%lld%09ld-%d", prefix, (long long)now.tv_sec, now.tv_nsec,
		 (int)getpid());
}

char *fsb_hook_run_line(const struct fsb_hook_session *s, const char *tc, const char *cmd)
{
	char self[PATH_MAX], *line;
	size_t len;
	int err;

	if ((err = fsb_hook_self_path(self, sizeof(self))) < 0) {
		errno = -err;
		return NULL;
	}
	len = strlen(self) * 4 + strlen(s->state) * 4 + strlen(tc) * 4 + strlen(cmd) * 4 + 256;
	if ((line = calloc(1, len)) == NULL)
		return NULL;
	fsb_hook_sh_quote(line, len, self);
	strcat(line, " run --core ");
	fsb_hook_sh_quote(line, len, s->state);
	strcat(line, " --tool-call ");
	fsb_hook_sh_quote(line, len, tc);
	/* The sandbox starts in the workspace (the mount plan's --chdir); the
	 * command must run where the host runs this line (Gemini's dir_path,
	 * Claude Code's shell after a cd), so it goes there first, and stops
	 * rather than run somewhere else when it cannot. */
	strcat(line, " -- /bin/bash -c ");
	strcat(line, "'cd -- \"$1\" || exit 1; shift; '");
	fsb_hook_sh_quote(line, len, cmd);
	strcat(line, " fsbroker-cwd \"$(pwd -P)\"");
	return line;
}

static cJSON *file_request(const char *command, const char *op, const char *path,
			   const char *tc)
{
	cJSON *req = cJSON_CreateObject();

	if (req == NULL)
		return NULL;
	cJSON_AddNumberToObject(req, "id", 1);
	cJSON_AddStringToObject(req, "command", command);
	cJSON_AddStringToObject(req, "path", path);
	if (op != NULL)
		cJSON_AddStringToObject(req, "op", op);
	cJSON_AddStringToObject(req, "toolCallId", tc);
	return req;
}

int fsb_hook_check(int fd, const char *op, const char *path, const char *tc, char *reason,
		   size_t len)
{
	const char *decision, *rule, *block_id;
	cJSON *req = file_request("CheckAccess", op, path, tc), *reply;

	if (req == NULL) {
		snprintf(reason, len, "out of memory");
		return -ENOMEM;
	}
	reply = fsb_hook_ask(fd, req, reason, len);
	cJSON_Delete(req);
	if (reply == NULL)
		return -EIO;
	decision = fsb_hook_str(reply, "decision");
	if (decision != NULL && strcmp(decision, "allow") == 0) {
		cJSON_Delete(reply);
		return 0;
	}
	rule = fsb_hook_str(reply, "rule");
	block_id = fsb_hook_str(reply, "blockId");
	/* An ask is refused too: the tool would write with no backup once the
	 * host's own prompt let it through, and nothing keeps this block for
	 * `fsbroker approve`. A shell command's ask is kept (run --core
	 * leaves it for approve). */
	snprintf(reason, len, "fsbroker: %s of %s %s (%s)%s", op, path,
		 block_id != NULL ? "needs an approval" : "is denied",
		 rule != NULL ? rule : fsb_hook_str(reply, "error") ? fsb_hook_str(reply, "error")
								    : "no rule",
		 block_id != NULL ? ", which a file tool cannot wait for; nothing was "
				    "written. Make the change with a shell command (its "
				    "summary names the fsbroker approve to run) or change "
				    "the pack" : "");
	cJSON_Delete(reply);
	return -EACCES;
}

int fsb_hook_backup(int fd, const char *path, const char *tc, char *reason, size_t len)
{
	cJSON *req = file_request("ModifyBackup", NULL, path, tc), *reply;
	int err = 0;

	if (req == NULL) {
		snprintf(reason, len, "out of memory");
		return -ENOMEM;
	}
	reply = fsb_hook_ask(fd, req, reason, len);
	cJSON_Delete(req);
	if (reply == NULL)
		return -EIO;
	if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(reply, "ok"))) {
		snprintf(reason, len, "fsbroker: no backup of %s, so no write: %s", path,
			 fsb_hook_str(reply, "error") ? fsb_hook_str(reply, "error") : "refused");
		err = -EACCES;
	}
	cJSON_Delete(reply);
	return err;
}

int fsb_hook_guard_write(const struct fsb_hook_session *s, const struct fsb_hook_opts *o,
			 const char *path, const char *tc, char *reason, size_t len)
{
	int fd = fsb_hook_core_connect(s, o, true), err;

	if (fd < 0) {
		snprintf(reason, len, "cannot start or reach the session's core (%s); see its "
			 "log in the state dir", strerror(-fd));
		return fd == -EACCES ? -EIO : fd;
	}
	err = fsb_hook_check(fd, "write", path, tc, reason, len);
	if (err == 0)
		err = fsb_hook_backup(fd, path, tc, reason, len);
	close(fd);
	return err;
}

int fsb_hook_commit(const struct fsb_hook_session *s, const struct fsb_hook_opts *o, bool end)
{
	char err[512], msg[256];
	cJSON *req, *reply;
	int fd = fsb_hook_core_connect(s, o, false);

	if (fd < 0)
		return 0;	/* no core: nothing was backed up this session */
	snprintf(msg, sizeof(msg), "%s %s (session %s)", s->host->name,
		 end ? "session end" : "turn", s->host_id);
	req = cJSON_CreateObject();
	cJSON_AddNumberToObject(req, "id", 1);
	cJSON_AddStringToObject(req, "command", "CommitModifyBackup");
	cJSON_AddStringToObject(req, "commitMsg", msg);
	reply = fsb_hook_ask(fd, req, err, sizeof(err));
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
		reply = fsb_hook_ask(fd, req, err, sizeof(err));
		cJSON_Delete(req);
		cJSON_Delete(reply);
	}
	close(fd);
	return 0;
}

int fsb_hook_pre_tool_answer(const char *decision, const char *reason, cJSON *updated)
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
