/*
 * harness.c — the integration-test harness (see harness.h): a real
 * `fsbroker serve` per test in a fresh temp dir, its control channel, buffered
 * reply reading on the client socket with fd passing, and a TAP filter that
 * reports skipped tests as skipped.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "backup_read.h"
#include "harness.h"
#include "landlock.h"
#include "seccomp_filter.h"

extern char **environ;

/* ------------------------------------------------------------------------ */
/* Small helpers. */

uint64_t fsbt_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void fsbt_sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

bool fsbt_starts(const char *s, const char *prefix)
{
	return s != NULL && strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Absolute, found once, before main: a test may chdir before it runs the
 * binary (resolve_binary below). */
const char *fsbt_binary(void)
{
	static char abs[PATH_MAX];
	const char *b = getenv("FSBROKER");

	if (b == NULL || b[0] == '\0')
		b = "build/fsbroker";
	if (abs[0] == '\0' && realpath(b, abs) == NULL)
		snprintf(abs, sizeof(abs), "%s", b);
	return abs;
}

__attribute__((constructor)) static void resolve_binary(void)
{
	fsbt_binary();
}

const char *fsbt_core_wrapper(void)
{
	const char *w = getenv("FSBROKER_CORE_WRAPPER");

	return w != NULL && w[strspn(w, " ")] != '\0' ? w : NULL;
}

unsigned fsbt_timeout_ms(void)
{
	return fsbt_core_wrapper() != NULL ? 100000 : 10000;
}

void fsbt_write_file(const char *path, const char *data)
{
	size_t len = strlen(data), off = 0;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0)
		fail_msg("cannot create %s: %s", path, strerror(errno));
	while (off < len) {
		ssize_t n = write(fd, data + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			close(fd);
			fail_msg("cannot write %s: %s", path, strerror(errno));
		}
		off += (size_t)n;
	}
	close(fd);
}

void fsbt_write_filled(const char *path, char c, size_t size)
{
	char *text = malloc(size + 1);

	if (text == NULL)
		fail_msg("out of memory");
	memset(text, c, size);
	text[size] = '\0';
	fsbt_write_file(path, text);
	free(text);
}

char *fsbt_read_object(const char *store_dir, const char *hex)
{
	char tmp[] = "/tmp/fsbt-object-XXXXXX";
	int fd = fsb_backup_object_open(store_dir, hex), out = -1;
	char *text = NULL;

	if (fd >= 0)
		out = mkstemp(tmp);
	if (out >= 0 && fsb_backup_object_copy(fd, hex, out) == 0)
		text = fsbt_read_file(tmp, NULL);
	if (out >= 0) {
		close(out);
		unlink(tmp);
	}
	if (fd >= 0)
		close(fd);
	return text;
}

char *fsbt_read_file(const char *path, size_t *lenp)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap + 1);
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || buf == NULL) {
		if (fd >= 0)
			close(fd);
		free(buf);
		return NULL;
	}
	for (;;) {
		ssize_t n;

		if (len == cap) {
			char *b = realloc(buf, cap * 2 + 1);

			if (b == NULL)
				break;
			buf = b;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	if (lenp != NULL)
		*lenp = len;
	return buf;
}

const char *fsbt_str(const cJSON *obj, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);

	return cJSON_IsString(v) ? v->valuestring : "";
}

double fsbt_num(const cJSON *obj, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);

	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

bool fsbt_ok(const cJSON *obj)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(obj, "ok"));
}

char *fsbt_text_req(char *out, size_t size, const char *cls, const char *path,
		    const char *session, const char *spec)
{
	snprintf(out, size, "%s\t%s\t%s\t%s%s%s", cls, path, session, FSBT_TOOL_CALL,
		 spec != NULL ? "\t" : "", spec != NULL ? spec : "");
	return out;
}

/* ------------------------------------------------------------------------ */
/* The temp dir. */

static void mkdir_or_fail(const char *path, mode_t mode)
{
	if (mkdir(path, mode) < 0)
		fail_msg("cannot create %s: %s", path, strerror(errno));
}

struct fsbt_core *fsbt_core_new(void)
{
	struct fsbt_core *c = calloc(1, sizeof(*c));
	char tmpl[PATH_MAX], p[PATH_MAX + 64];
	const char *base = getenv("TMPDIR");

	assert_non_null(c);
	c->ctl_in = c->ctl_out = -1;
	/* A short base keeps the socket path under sun_path's 108 bytes. */
	if (base == NULL || base[0] != '/' || strlen(base) > 40)
		base = "/tmp";
	snprintf(tmpl, sizeof(tmpl), "%s/fsbt.XXXXXX", base);
	if (mkdtemp(tmpl) == NULL)
		fail_msg("mkdtemp %s: %s", tmpl, strerror(errno));
	/* The policy judges real paths: the layout must be spelled as one. */
	if (realpath(tmpl, c->dir) == NULL)
		fail_msg("realpath %s: %s", tmpl, strerror(errno));
	snprintf(c->home, sizeof(c->home), "%s/home", c->dir);
	snprintf(c->ws, sizeof(c->ws), "%s/ws", c->dir);
	snprintf(c->state, sizeof(c->state), "%s/state", c->dir);
	snprintf(c->sockdir, sizeof(c->sockdir), "%s/sock", c->dir);
	snprintf(c->sock, sizeof(c->sock), "%s/broker.sock", c->sockdir);
	snprintf(c->tmp, sizeof(c->tmp), "%s/tmp", c->dir);
	snprintf(c->rules_dir, sizeof(c->rules_dir), "%s/rules", c->dir);
	snprintf(c->log, sizeof(c->log), "%s/core.log", c->dir);
	snprintf(c->session, sizeof(c->session), "%s", FSBT_SESSION);

	mkdir_or_fail(c->home, 0755);
	snprintf(p, sizeof(p), "%s/.ssh", c->home);
	mkdir_or_fail(p, 0700);
	snprintf(p, sizeof(p), "%s/.ssh/id_ed25519", c->home);
	fsbt_write_file(p, "-----BEGIN OPENSSH PRIVATE KEY-----\nfsbt test key\n"
			   "-----END OPENSSH PRIVATE KEY-----\n");
	chmod(p, 0600);
	snprintf(p, sizeof(p), "%s/.aws", c->home);
	mkdir_or_fail(p, 0700);
	snprintf(p, sizeof(p), "%s/.aws/credentials", c->home);
	fsbt_write_file(p, "[default]\naws_access_key_id = FSBTTEST\n");
	mkdir_or_fail(c->ws, 0755);
	mkdir_or_fail(c->tmp, 0700);
	mkdir_or_fail(c->rules_dir, 0755);
	c->next_id = 1000;
	return c;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static int chmod_dir(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)ftw;
	if (flag == FTW_D || flag == FTW_DNR)
		chmod(path, (st->st_mode & 07777) | 0700);
	return 0;
}

/* rm -rf, never following a symlink out of the tree or crossing a mount. */
static void remove_tree(const char *dir)
{
	if (dir[0] != '/' || strlen(dir) < 8)
		return;
	nftw(dir, chmod_dir, 32, FTW_PHYS | FTW_MOUNT);
	nftw(dir, rm_entry, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

char *fsbt_core_log(const struct fsbt_core *c)
{
	char *s = fsbt_read_file(c->log, NULL);

	return s != NULL ? s : strdup("(no log)");
}

/* ------------------------------------------------------------------------ */
/* The core process. */

/* The core's environment: ours, with HOME and TMPDIR in the temp dir and
 * without XDG_STATE_HOME and XDG_DATA_HOME, so that what the core derives
 * from them (the home trash, ~/.local/share/Trash) is below c->home whatever
 * the test runner has set. `home` and `tmp` hold the two strings made here
 * (free them after). */
static char **core_env(const struct fsbt_core *c, char **home, char **tmp)
{
	size_t n = 0, j = 0;
	char **env;

	while (environ[n] != NULL)
		n++;
	env = calloc(n + 3, sizeof(*env));
	if (env == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!fsbt_starts(environ[i], "HOME=") && !fsbt_starts(environ[i], "TMPDIR=") &&
		    !fsbt_starts(environ[i], "XDG_STATE_HOME=") &&
		    !fsbt_starts(environ[i], "XDG_DATA_HOME="))
			env[j++] = environ[i];
	if (asprintf(home, "HOME=%s", c->home) < 0) {
		free(env);
		return NULL;
	}
	if (asprintf(tmp, "TMPDIR=%s", c->tmp) < 0) {
		free(*home);
		free(env);
		return NULL;
	}
	env[j++] = *home;
	env[j++] = *tmp;
	return env;
}

#define FSBT_WRAPPER_WORDS 32

int fsbt_core_spawn(struct fsbt_core *c, const char *socket)
{
	const char *argv[16 + FSBT_WRAPPER_WORDS];
	int in[2] = { -1, -1 }, out[2], logfd, argc = 0, err;
	pid_t parent = getpid(), pid;
	char **env, *env_home, *env_tmp, *wrapper = NULL;

	if (socket == NULL)
		socket = c->sock;
	/* valgrind and its options first, when the core runs under them. */
	if (fsbt_core_wrapper() != NULL) {
		char *save = NULL;

		if ((wrapper = strdup(fsbt_core_wrapper())) == NULL)
			return -ENOMEM;
		for (char *w = strtok_r(wrapper, " ", &save); w != NULL && argc < FSBT_WRAPPER_WORDS;
		     w = strtok_r(NULL, " ", &save))
			argv[argc++] = w;
	}
	argv[argc++] = fsbt_binary();
	argv[argc++] = "serve";
	argv[argc++] = "--socket";
	argv[argc++] = socket;
	argv[argc++] = "--session";
	argv[argc++] = c->session;
	argv[argc++] = "--state-dir";
	argv[argc++] = c->state;
	argv[argc++] = "--workspace";
	argv[argc++] = c->ws;
	if (c->rules[0] != '\0') {
		argv[argc++] = "--rules";
		argv[argc++] = c->rules;
	}
	for (int i = 0; i < 4 && c->serve_args[i] != NULL; i++)
		argv[argc++] = c->serve_args[i];
	argv[argc] = NULL;

	if ((env = core_env(c, &env_home, &env_tmp)) == NULL) {
		free(wrapper);
		return -ENOMEM;
	}
	/* Close-on-exec everywhere: no other child may hold the core's stdin
	 * open, or EOF on it would never arrive. */
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0) {
		err = -errno;
		if (in[0] >= 0) {
			close(in[0]);
			close(in[1]);
		}
		free(env_home);
		free(env_tmp);
		free(env);
		free(wrapper);
		return err;
	}
	logfd = open(c->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	pid = fork();
	if (pid == 0) {
		sigset_t none;

		/* The core must not outlive a test program that crashed. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0 ||
		    (logfd >= 0 && dup2(logfd, 2) < 0))
			_exit(127);
		execvpe(argv[0], (char *const *)argv, env);
		fprintf(stderr, "fsbt: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	err = pid < 0 ? -errno : 0;
	close(in[0]);
	close(out[1]);
	if (logfd >= 0)
		close(logfd);
	free(env_home);
	free(env_tmp);
	free(env);
	free(wrapper);
	if (err < 0) {
		close(in[1]);
		close(out[0]);
		return err;
	}
	c->pid = pid;
	c->exit_status = -1;
	c->ctl_in = in[1];
	c->ctl_out = out[0];
	c->out_len = 0;
	return 0;
}

/* One line from the core's stdout into a malloc'd string; NULL on timeout or
 * EOF. `deadline` is in fsbt_now_ms() time. */
static char *ctl_read_line(struct fsbt_core *c, uint64_t deadline)
{
	for (;;) {
		char *nl = c->out_buf != NULL ? memchr(c->out_buf, '\n', c->out_len) : NULL;
		struct pollfd pfd = { .fd = c->ctl_out, .events = POLLIN };
		uint64_t now = fsbt_now_ms();
		ssize_t n;

		if (nl != NULL) {
			size_t len = (size_t)(nl - c->out_buf);
			char *line = strndup(c->out_buf, len);

			memmove(c->out_buf, nl + 1, c->out_len - len - 1);
			c->out_len -= len + 1;
			return line;
		}
		if (c->ctl_out < 0 || now >= deadline)
			return NULL;
		if (poll(&pfd, 1, (int)(deadline - now)) <= 0)
			continue;
		if (c->out_cap - c->out_len < 4096) {
			size_t cap = c->out_cap ? c->out_cap * 2 : 65536;
			char *b = realloc(c->out_buf, cap);

			if (b == NULL)
				return NULL;
			c->out_buf = b;
			c->out_cap = cap;
		}
		n = read(c->ctl_out, c->out_buf + c->out_len, c->out_cap - c->out_len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return NULL;
		c->out_len += (size_t)n;
	}
}

int fsbt_core_wait_ready(struct fsbt_core *c)
{
	uint64_t deadline = fsbt_now_ms() + FSBT_TIMEOUT_MS;
	char *line;

	while ((line = ctl_read_line(c, deadline)) != NULL) {
		cJSON *ev = cJSON_Parse(line);
		bool ready = ev != NULL && strcmp(fsbt_str(ev, "event"), "ready") == 0;

		cJSON_Delete(ev);
		free(line);
		if (ready)
			return 0;
	}
	return -1;
}

/* Spawn and wait for ready; on failure print the log, kill the core and
 * return -1 (the temp dir stays for the caller's teardown). */
static int core_start(struct fsbt_core *c)
{
	int rc = fsbt_core_spawn(c, NULL);
	char *log;

	if (rc < 0) {
		fprintf(stderr, "# cannot start %s: %s\n", fsbt_binary(), strerror(-rc));
		return -1;
	}
	if (fsbt_core_wait_ready(c) == 0)
		return 0;
	log = fsbt_core_log(c);
	fprintf(stderr, "# fsbroker serve did not send {\"event\":\"ready\"} within %d s; "
		"its log:\n%s\n", FSBT_TIMEOUT_MS / 1000, log);
	free(log);
	if (c->pid > 0) {
		kill(c->pid, SIGKILL);
		waitpid(c->pid, &c->exit_status, 0);
		c->pid = 0;
	}
	return -1;
}

void fsbt_core_start(struct fsbt_core *c)
{
	if (core_start(c) < 0)
		fail_msg("the core did not start (its log is above)");
}

const char *fsbt_fault_shim(void)
{
	static char shim[PATH_MAX];
	char self[PATH_MAX], *slash;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0)
		return NULL;
	self[n] = '\0';
	if ((slash = strrchr(self, '/')) == NULL)
		return NULL;
	*slash = '\0';
	snprintf(shim, sizeof(shim), "%s/faultinject/fsb_fault.so", self);
	return access(shim, R_OK) == 0 ? shim : NULL;
}

/* `name`=`value`, or unset when `value` is NULL. */
static void set_or_unset(const char *name, const char *value)
{
	if (value != NULL)
		setenv(name, value, 1);
	else
		unsetenv(name);
}

void fsbt_core_start_with_shim(struct fsbt_core *c, const char *spec, const char *arm,
			       const char *log, const char *hold)
{
	const char *shim = fsbt_fault_shim(), *asan = getenv("ASAN_OPTIONS");
	char *asan_saved = asan != NULL ? strdup(asan) : NULL, *asan_new = NULL;

	if (shim == NULL)
		fail_msg("the fault shim is not built (make builds "
			 "build/tests/faultinject/fsb_fault.so)");
	/* The environment is the test's own for the spawn only: nothing else
	 * the test runs (the CLI) gets the shim. */
	setenv("LD_PRELOAD", shim, 1);
	setenv("FSB_FAULT", spec, 1);
	set_or_unset("FSB_FAULT_ARM", arm);
	set_or_unset("FSB_FAULT_LOG", log);
	set_or_unset("FSB_FAULT_HOLD", hold);
	/* A sanitized core wants its runtime first in the library list. */
	if (asprintf(&asan_new, "%s%sverify_asan_link_order=0", asan ? asan : "",
		     asan ? ":" : "") < 0)
		fail_msg("out of memory");
	setenv("ASAN_OPTIONS", asan_new, 1);
	fsbt_core_start(c);
	unsetenv("LD_PRELOAD");
	unsetenv("FSB_FAULT");
	unsetenv("FSB_FAULT_ARM");
	unsetenv("FSB_FAULT_LOG");
	unsetenv("FSB_FAULT_HOLD");
	set_or_unset("ASAN_OPTIONS", asan_saved);
	free(asan_saved);
	free(asan_new);
}

void fsbt_core_start_holding(struct fsbt_core *c, const char *spec, char *hold, size_t len)
{
	char arm[PATH_MAX + 16], log[PATH_MAX + 16];

	snprintf(hold, len, "%s/hold", c->dir);
	snprintf(arm, sizeof(arm), "%s/arm", c->dir);
	snprintf(log, sizeof(log), "%s/held.log", c->dir);
	unlink(log);
	fsbt_write_file(hold, "");
	fsbt_core_start_with_shim(c, spec, arm, log, hold);
	/* Armed once the core is up: its start makes the store's dirs. */
	fsbt_write_file(arm, "");
}

void fsbt_core_wait_held(const struct fsbt_core *c)
{
	uint64_t deadline = fsbt_now_ms() + FSBT_TIMEOUT_MS;
	char log[PATH_MAX + 16];
	struct stat st;

	snprintf(log, sizeof(log), "%s/held.log", c->dir);
	while (stat(log, &st) != 0 || st.st_size == 0) {
		if (fsbt_now_ms() > deadline)
			fail_msg("the core never reached the call the test holds");
		fsbt_sleep_ms(10);
	}
}

struct fsbt_core *fsbt_start(void)
{
	struct fsbt_core *c = fsbt_core_new();

	fsbt_core_start(c);
	return c;
}

int fsbt_core_wait_exit(struct fsbt_core *c, int timeout_ms)
{
	uint64_t deadline = fsbt_now_ms() + (uint64_t)timeout_ms;
	int status;

	if (c->pid <= 0)
		return 0;
	for (;;) {
		pid_t r = waitpid(c->pid, &status, WNOHANG);

		if (r == c->pid) {
			c->pid = 0;
			c->exit_status = status;
			return 0;
		}
		if (r < 0 && errno != EINTR) {
			c->pid = 0;
			return 0;
		}
		if (fsbt_now_ms() >= deadline)
			return -ETIMEDOUT;
		fsbt_sleep_ms(5);
	}
}

static void dump_core_log(const struct fsbt_core *c)
{
	char *log = fsbt_core_log(c);

	for (char *line = strtok(log, "\n"); line != NULL; line = strtok(NULL, "\n"))
		fprintf(stderr, "#   %s\n", line);
	free(log);
}

int fsbt_core_stop(struct fsbt_core *c)
{
	static const char shutdown_line[] = "{\"id\":\"fsbt-stop\",\"command\":\"Shutdown\"}\n";
	bool was_running;
	int rc = 0;

	if (c == NULL)
		return 0;
	was_running = c->pid > 0;
	if (c->pid > 0) {
		if (c->ctl_in >= 0 &&
		    write(c->ctl_in, shutdown_line, sizeof(shutdown_line) - 1) < 0)
			(void)0;	/* gone already: the wait below reaps it */
		if (fsbt_core_wait_exit(c, FSBT_TIMEOUT_MS) < 0) {
			fprintf(stderr, "# core pid %d did not stop within %d s: killed\n",
				(int)c->pid, FSBT_TIMEOUT_MS / 1000);
			kill(c->pid, SIGKILL);
			waitpid(c->pid, &c->exit_status, 0);
			c->pid = 0;
		}
	}
	/* A core that stopped on Shutdown exits 0; anything else (a crash, a
	 * sanitizer report, a leak found at exit) fails the test that ran it. */
	if (was_running && !(WIFEXITED(c->exit_status) && WEXITSTATUS(c->exit_status) == 0)) {
		fprintf(stderr, "# the core did not exit cleanly (status 0x%x); its log:\n",
			(unsigned)c->exit_status);
		dump_core_log(c);
		rc = -1;
	}
	if (c->ctl_in >= 0)
		close(c->ctl_in);
	if (c->ctl_out >= 0)
		close(c->ctl_out);
	c->ctl_in = c->ctl_out = -1;
	if (getenv("FSBT_KEEP") != NULL)
		fprintf(stderr, "# kept %s\n", c->dir);
	else
		remove_tree(c->dir);
	free(c->out_buf);
	free(c);
	return rc;
}

int fsbt_setup_core(void **state)
{
	struct fsbt_core *c = fsbt_core_new();

	/* cmocka runs no teardown after a failed setup: clean up here. */
	if (core_start(c) < 0) {
		fsbt_core_stop(c);
		return -1;
	}
	*state = c;
	return 0;
}

int fsbt_teardown_core(void **state)
{
	int rc = fsbt_core_stop(*state);

	*state = NULL;
	return rc;
}

/* ------------------------------------------------------------------------ */
/* The control channel. */

/* Write all of `len` bytes to a pipe. 0 or -errno. */
static int write_all(int fd, const char *data, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, data, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

cJSON *fsbt_control(struct fsbt_core *c, const char *line)
{
	uint64_t deadline = fsbt_now_ms() + FSBT_TIMEOUT_MS;
	cJSON *req = cJSON_Parse(line), *want;
	char *reply;
	int rc;

	/* A request without an id is answered with "id": null. */
	want = req != NULL ? cJSON_GetObjectItemCaseSensitive(req, "id") : NULL;
	if ((rc = write_all(c->ctl_in, line, strlen(line))) < 0 ||
	    (rc = write_all(c->ctl_in, "\n", 1)) < 0) {
		fprintf(stderr, "# control write: %s\n", strerror(-rc));
		cJSON_Delete(req);
		return NULL;
	}
	while ((reply = ctl_read_line(c, deadline)) != NULL) {
		cJSON *r = cJSON_Parse(reply);
		const cJSON *id = r != NULL ? cJSON_GetObjectItemCaseSensitive(r, "id") : NULL;

		free(reply);
		/* Events carry "event" instead of "id"; other replies are not ours. */
		if (r != NULL && cJSON_GetObjectItemCaseSensitive(r, "event") == NULL && id != NULL &&
		    (want != NULL ? cJSON_Compare(id, want, true) : cJSON_IsNull(id))) {
			cJSON_Delete(req);
			return r;
		}
		cJSON_Delete(r);
	}
	fprintf(stderr, "# no control reply to %s within %d s\n", line, FSBT_TIMEOUT_MS / 1000);
	cJSON_Delete(req);
	return NULL;
}

cJSON *fsbt_control_event(struct fsbt_core *c, const char *name, int timeout_ms)
{
	uint64_t deadline = fsbt_now_ms() + (uint64_t)timeout_ms;
	char *line;

	while ((line = ctl_read_line(c, deadline)) != NULL) {
		cJSON *ev = cJSON_Parse(line);

		free(line);
		if (ev != NULL && strcmp(fsbt_str(ev, "event"), name) == 0)
			return ev;
		cJSON_Delete(ev);
	}
	return NULL;
}

cJSON *fsbt_controlf(struct fsbt_core *c, const char *fmt, ...)
{
	char *line;
	cJSON *r;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&line, fmt, ap) < 0)
		line = NULL;
	va_end(ap);
	if (line == NULL)
		return NULL;
	r = fsbt_control(c, line);
	free(line);
	return r;
}

cJSON *fsbt_control_cmd(struct fsbt_core *c, const char *command, const char *fields, ...)
{
	char *inner = NULL, *line = NULL;
	cJSON *r;
	va_list ap;

	if (fields != NULL) {
		va_start(ap, fields);
		if (vasprintf(&inner, fields, ap) < 0)
			inner = NULL;
		va_end(ap);
		assert_non_null(inner);
	}
	assert_true(asprintf(&line, "{\"id\":%ld,\"command\":\"%s\"%s%s}", c->next_id++, command,
			     inner != NULL ? "," : "", inner != NULL ? inner : "") > 0);
	r = fsbt_control(c, line);
	free(inner);
	if (r == NULL) {
		char *log = fsbt_core_log(c);

		fprintf(stderr, "# core log:\n%s\n", log);
		free(log);
		fail_msg("no reply to the control request %s", line);
	}
	free(line);
	return r;
}

cJSON *fsbt_check_access(struct fsbt_core *c, const char *op, const char *path)
{
	return fsbt_control_cmd(c, "CheckAccess", "\"op\":\"%s\",\"path\":\"%s\"", op, path);
}

/* ------------------------------------------------------------------------ */
/* Client connections: one buffered reader per socket fd. */

#define READER_CAP (128 * 1024)
#define READER_FDS 64
#define MAX_CONN_FD 65536

/*
 * A Unix stream recvmsg() takes the fds of at most one sendmsg and stops
 * right after that message's bytes, so an fd belongs to the reply holding
 * the last byte of the read that brought it. Each fd is kept with that
 * stream position; a line [start, end) owns the fds with start < pos <= end.
 */
struct reader {
	char buf[READER_CAP];
	size_t off, len;
	uint64_t base;		/* stream position of buf[0] */
	int fds[READER_FDS];
	uint64_t fdpos[READER_FDS];
	int nfds;
};

static struct reader *readers[MAX_CONN_FD];

static struct reader *reader_for(int fd)
{
	if (fd < 0 || fd >= MAX_CONN_FD)
		return NULL;
	if (readers[fd] == NULL)
		readers[fd] = calloc(1, sizeof(struct reader));
	return readers[fd];
}

static void reader_drop(int fd)
{
	struct reader *r;

	if (fd < 0 || fd >= MAX_CONN_FD || (r = readers[fd]) == NULL)
		return;
	for (int i = 0; i < r->nfds; i++)
		close(r->fds[i]);
	free(r);
	readers[fd] = NULL;
}

int fsbt_connect_path(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = FSBT_TIMEOUT_MS / 1000 };
	int fd, err;

	if (strlen(path) >= sizeof(addr.sun_path))
		return -ENAMETOOLONG;
	strcpy(addr.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
	    connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	/* A new connection that reuses a number starts with an empty buffer. */
	reader_drop(fd);
	if (reader_for(fd) == NULL) {
		close(fd);
		return -ENOMEM;
	}
	return fd;
}

int fsbt_connect(const struct fsbt_core *c)
{
	return fsbt_connect_path(c->sock);
}

void fsbt_close(int fd)
{
	reader_drop(fd);
	close(fd);
}

int fsbt_send(int fd, const char *line, size_t len, int pass_fd)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov[2] = {
		{ .iov_base = (void *)line, .iov_len = len },
		{ .iov_base = "\n", .iov_len = 1 },
	};
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2 };
	size_t total = len + 1, sent = 0;

	if (pass_fd >= 0) {
		memset(&ctl, 0, sizeof(ctl));
		msg.msg_control = ctl.buf;
		msg.msg_controllen = sizeof(ctl.buf);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &pass_fd, sizeof(int));
	}
	while (sent < total) {
		ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		sent += (size_t)n;
		/* A partial send: go on with the rest, without the fd. */
		msg.msg_control = NULL;
		msg.msg_controllen = 0;
		while (n > 0 && msg.msg_iovlen > 0) {
			size_t take = (size_t)n < msg.msg_iov[0].iov_len ? (size_t)n
									  : msg.msg_iov[0].iov_len;

			msg.msg_iov[0].iov_base = (char *)msg.msg_iov[0].iov_base + take;
			msg.msg_iov[0].iov_len -= take;
			n -= (ssize_t)take;
			if (msg.msg_iov[0].iov_len == 0) {
				msg.msg_iov++;
				msg.msg_iovlen--;
			}
		}
	}
	return 0;
}

/* Take the fds that came with the line [start, end): the first goes to
 * *fd_out, any other is closed (a reply carries at most one). */
static void take_fds(struct reader *r, uint64_t start, uint64_t end, int *fd_out)
{
	int j = 0;

	if (fd_out != NULL)
		*fd_out = -1;
	for (int i = 0; i < r->nfds; i++) {
		if (r->fdpos[i] <= end) {
			if (r->fdpos[i] > start && fd_out != NULL && *fd_out < 0)
				*fd_out = r->fds[i];
			else
				close(r->fds[i]);
		} else {
			r->fds[j] = r->fds[i];
			r->fdpos[j++] = r->fdpos[i];
		}
	}
	r->nfds = j;
}

ssize_t fsbt_read_reply(int fd, char *reply, size_t size, int *fd_out)
{
	struct reader *r = reader_for(fd);

	if (fd_out != NULL)
		*fd_out = -1;
	if (r == NULL)
		return -EBADF;
	for (;;) {
		char *start = r->buf + r->off;
		char *nl = memchr(start, '\n', r->len - r->off);
		union {
			struct cmsghdr h;
			char buf[CMSG_SPACE(sizeof(int) * 8)];
		} ctl;
		struct iovec iov;
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
		ssize_t n;

		if (nl != NULL) {
			size_t len = (size_t)(nl - start);
			uint64_t s = r->base + r->off, e = s + len + 1;

			take_fds(r, s, e, fd_out);
			r->off += len + 1;
			if (len >= size) {
				if (fd_out != NULL && *fd_out >= 0) {
					close(*fd_out);
					*fd_out = -1;
				}
				return -EMSGSIZE;
			}
			memcpy(reply, start, len);
			reply[len] = '\0';
			return (ssize_t)len;
		}
		/* Keep the partial line at the front and read more after it. */
		if (r->off > 0) {
			memmove(r->buf, r->buf + r->off, r->len - r->off);
			r->base += r->off;
			r->len -= r->off;
			r->off = 0;
		}
		if (r->len == sizeof(r->buf))
			return -EMSGSIZE;
		iov.iov_base = r->buf + r->len;
		iov.iov_len = sizeof(r->buf) - r->len;
		msg.msg_control = ctl.buf;
		msg.msg_controllen = sizeof(ctl.buf);
		n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EWOULDBLOCK ? -EAGAIN : -errno;
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm != NULL;
		     cm = CMSG_NXTHDR(&msg, cm)) {
			if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
				continue;
			for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
				int got;

				memcpy(&got, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
				if (r->nfds == READER_FDS) {
					close(got);
					continue;
				}
				r->fds[r->nfds] = got;
				r->fdpos[r->nfds++] = r->base + r->len + (size_t)n;
			}
		}
		if (n == 0)
			return FSBT_EOF;
		r->len += (size_t)n;
	}
}

ssize_t fsbt_request(int fd, const char *line, char *reply, size_t size, int *fd_out)
{
	int rc = fsbt_send(fd, line, strlen(line), -1);
	ssize_t n;

	if (fd_out != NULL)
		*fd_out = -1;
	if (rc < 0)
		return rc;
	n = fsbt_read_reply(fd, reply, size, fd_out);
	/* FSBT_TRACE=1 shows each exchange, for debugging a test. */
	if (getenv("FSBT_TRACE") != NULL)
		fprintf(stderr, "# -> %s\n# <- %s\n", line, n >= 0 ? reply : "(no reply)");
	return n;
}

/* ------------------------------------------------------------------------ */
/* Host operations. */

/* A reply is one line of at most 64 KiB plus what the core adds around it. */
#define HOSTOP_REPLY_MAX (96 * 1024)

cJSON *fsbt_hostop(int fd, const char *json)
{
	char *reply = malloc(HOSTOP_REPLY_MAX);
	cJSON *r = NULL;
	ssize_t n;

	if (reply == NULL)
		return NULL;
	n = fsbt_request(fd, json, reply, HOSTOP_REPLY_MAX, NULL);
	if (n < 0)
		fprintf(stderr, "# no reply to %s: %s\n", json,
			n == FSBT_EOF ? "connection closed" : strerror((int)-n));
	else if ((r = cJSON_Parse(reply)) == NULL)
		fprintf(stderr, "# reply to %s is not JSON: %s\n", json, reply);
	free(reply);
	return r;
}

cJSON *fsbt_hostopf(int fd, const char *fmt, ...)
{
	char *line;
	cJSON *r;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&line, fmt, ap) < 0)
		line = NULL;
	va_end(ap);
	if (line == NULL)
		return NULL;
	r = fsbt_hostop(fd, line);
	free(line);
	return r;
}

/* ------------------------------------------------------------------------ */
/* Tree snapshots. */

static int tree_add(struct fsbt_tree *t, const char *root, const char *rel)
{
	char full[PATH_MAX * 2];
	struct fsbt_entry *e;
	struct stat st;

	snprintf(full, sizeof(full), "%s%s%s", root, rel[0] ? "/" : "", rel);
	if (lstat(full, &st) < 0)
		return -errno;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct fsbt_entry *ne = realloc(t->e, cap * sizeof(*ne));

		if (ne == NULL)
			return -ENOMEM;
		t->e = ne;
		t->cap = cap;
	}
	e = &t->e[t->n];
	memset(e, 0, sizeof(*e));
	if ((e->path = strdup(rel)) == NULL)
		return -ENOMEM;
	t->n++;
	e->mode = st.st_mode;
	e->nlink = st.st_nlink;
	e->dev = st.st_dev;
	e->ino = st.st_ino;
	e->size = st.st_size;
	e->mtime = st.st_mtim;
	e->ctime = st.st_ctim;
	if (S_ISREG(st.st_mode)) {
		size_t len = 0;
		char *data = fsbt_read_file(full, &len);

		if (data == NULL)
			return -EIO;
		fsb_sha256_hex(data, len, e->sha);
		free(data);
	} else if (S_ISLNK(st.st_mode)) {
		char buf[PATH_MAX];
		ssize_t n = readlink(full, buf, sizeof(buf) - 1);

		if (n < 0)
			return -errno;
		buf[n] = '\0';
		if ((e->target = strdup(buf)) == NULL)
			return -ENOMEM;
	} else if (S_ISDIR(st.st_mode)) {
		DIR *d = opendir(full);
		struct dirent *de;
		int rc = 0;

		if (d == NULL)
			return -errno;
		while (rc == 0 && (de = readdir(d)) != NULL) {
			char sub[PATH_MAX * 2];

			if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
				continue;
			snprintf(sub, sizeof(sub), "%s%s%s", rel, rel[0] ? "/" : "", de->d_name);
			rc = tree_add(t, root, sub);
		}
		closedir(d);
		return rc;
	}
	return 0;
}

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct fsbt_entry *)a)->path, ((const struct fsbt_entry *)b)->path);
}

static const struct fsbt_tree *grouping;

static int by_inode(const void *a, const void *b)
{
	const struct fsbt_entry *x = &grouping->e[*(const size_t *)a];
	const struct fsbt_entry *y = &grouping->e[*(const size_t *)b];

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

/* Each entry's link_first: the first path (entries are sorted by path) of
 * the same inode. Directories are groups of one. */
static void link_groups(struct fsbt_tree *t)
{
	size_t *v = malloc((t->n + 1) * sizeof(*v)), k = 0;

	for (size_t i = 0; i < t->n; i++)
		t->e[i].link_first = i;
	if (v == NULL)
		return;
	for (size_t i = 0; i < t->n; i++)
		if (!S_ISDIR(t->e[i].mode) && t->e[i].nlink > 1)
			v[k++] = i;
	grouping = t;
	qsort(v, k, sizeof(*v), by_inode);
	for (size_t i = 1; i < k; i++)
		if (t->e[v[i]].dev == t->e[v[i - 1]].dev && t->e[v[i]].ino == t->e[v[i - 1]].ino)
			t->e[v[i]].link_first = t->e[v[i - 1]].link_first;
	free(v);
}

int fsbt_tree_snap(const char *root, struct fsbt_tree *t)
{
	int rc;

	memset(t, 0, sizeof(*t));
	rc = tree_add(t, root, "");
	if (rc < 0) {
		fsbt_tree_free(t);
		return rc;
	}
	qsort(t->e, t->n, sizeof(*t->e), entry_cmp);
	link_groups(t);
	return 0;
}

void fsbt_tree_free(struct fsbt_tree *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->e[i].path);
		free(t->e[i].target);
	}
	free(t->e);
	memset(t, 0, sizeof(*t));
}

static const char *type_name(mode_t m)
{
	return S_ISREG(m) ? "file" : S_ISDIR(m) ? "directory" : S_ISLNK(m) ? "symlink" :
	       S_ISFIFO(m) ? "fifo" : S_ISSOCK(m) ? "socket" : "device";
}

static bool ts_eq(struct timespec a, struct timespec b)
{
	return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

/* What differs between two entries of the same path, or NULL. */
static const char *entry_diff(const struct fsbt_tree *ta, const struct fsbt_entry *a,
			      const struct fsbt_tree *tb, const struct fsbt_entry *b,
			      unsigned what, char *buf, size_t size)
{
	bool dir = S_ISDIR(a->mode);

	if ((a->mode & S_IFMT) != (b->mode & S_IFMT)) {
		snprintf(buf, size, "was a %s, is a %s", type_name(a->mode), type_name(b->mode));
		return buf;
	}
	if ((a->mode & 07777) != (b->mode & 07777)) {
		snprintf(buf, size, "mode was %04o, is %04o", (unsigned)(a->mode & 07777),
			 (unsigned)(b->mode & 07777));
		return buf;
	}
	if (S_ISREG(a->mode) && (a->size != b->size || strcmp(a->sha, b->sha) != 0)) {
		snprintf(buf, size, "content differs (size was %lld, is %lld)",
			 (long long)a->size, (long long)b->size);
		return buf;
	}
	if (S_ISLNK(a->mode) && strcmp(a->target, b->target) != 0) {
		snprintf(buf, size, "target was '%s', is '%s'", a->target, b->target);
		return buf;
	}
	if (((what & FSBT_TREE_MTIME) && !dir) || ((what & FSBT_TREE_DIR_MTIME) && dir)) {
		if (!ts_eq(a->mtime, b->mtime)) {
			snprintf(buf, size, "mtime was %lld.%09ld, is %lld.%09ld",
				 (long long)a->mtime.tv_sec, a->mtime.tv_nsec,
				 (long long)b->mtime.tv_sec, b->mtime.tv_nsec);
			return buf;
		}
	}
	if ((what & FSBT_TREE_CTIME) && !ts_eq(a->ctime, b->ctime)) {
		snprintf(buf, size, "ctime was %lld.%09ld, is %lld.%09ld (its inode was changed)",
			 (long long)a->ctime.tv_sec, a->ctime.tv_nsec, (long long)b->ctime.tv_sec,
			 b->ctime.tv_nsec);
		return buf;
	}
	if ((what & FSBT_TREE_NLINK) && !dir && a->nlink != b->nlink) {
		snprintf(buf, size, "link count was %lu, is %lu", (unsigned long)a->nlink,
			 (unsigned long)b->nlink);
		return buf;
	}
	if ((what & FSBT_TREE_LINKS) &&
	    strcmp(ta->e[a->link_first].path, tb->e[b->link_first].path) != 0) {
		snprintf(buf, size, "was one file with %s, is one with %s", ta->e[a->link_first].path,
			 tb->e[b->link_first].path);
		return buf;
	}
	return NULL;
}

size_t fsbt_tree_diff(const struct fsbt_tree *before, const struct fsbt_tree *after,
		      unsigned what, char *out, size_t size)
{
	size_t i = 0, j = 0, ndiff = 0, used = 0;

	if (out != NULL && size > 0)
		out[0] = '\0';
	while (i < before->n || j < after->n) {
		const struct fsbt_entry *a = i < before->n ? &before->e[i] : NULL;
		const struct fsbt_entry *b = j < after->n ? &after->e[j] : NULL;
		int cmp = a == NULL ? 1 : b == NULL ? -1 : strcmp(a->path, b->path);
		char buf[PATH_MAX + 256];
		const char *why = NULL, *path;

		if (cmp < 0) {
			snprintf(buf, sizeof(buf), "gone (was a %s)", type_name(a->mode));
			why = buf;
			path = a->path;
			i++;
		} else if (cmp > 0) {
			snprintf(buf, sizeof(buf), "appeared (a %s)", type_name(b->mode));
			why = buf;
			path = b->path;
			j++;
		} else {
			why = entry_diff(before, a, after, b, what, buf, sizeof(buf));
			path = a->path;
			i++;
			j++;
		}
		if (why == NULL)
			continue;
		ndiff++;
		if (out != NULL && used + 1 < size) {
			int n = snprintf(out + used, size - used, "%s: %s\n",
					 path[0] ? path : ".", why);

			if (n > 0)
				used = used + (size_t)n < size ? used + (size_t)n : size - 1;
		}
	}
	return ndiff;
}

/* ------------------------------------------------------------------------ */
/* Running a command. */

int fsbt_run(char *const argv[], char **output)
{
	return fsbt_run_within(argv, output, FSBT_TIMEOUT_MS);
}

int fsbt_run_within(char *const argv[], char **output, unsigned timeout_ms)
{
	uint64_t deadline = fsbt_now_ms() + timeout_ms;
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap + 1);
	int p[2], status = -1;
	pid_t pid;

	if (buf == NULL || pipe2(p, O_CLOEXEC) < 0) {
		free(buf);
		return -1;
	}
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGPIPE, SIG_DFL);
		if (dup2(p[1], 1) < 0 || dup2(p[1], 2) < 0)
			_exit(127);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	if (pid < 0) {
		close(p[0]);
		free(buf);
		return -1;
	}
	for (;;) {
		struct pollfd pfd = { .fd = p[0], .events = POLLIN };
		uint64_t now = fsbt_now_ms();
		ssize_t n;

		if (now >= deadline) {
			kill(pid, SIGKILL);
			break;
		}
		if (poll(&pfd, 1, (int)(deadline - now)) <= 0)
			continue;
		if (len == cap) {
			char *b = realloc(buf, cap * 2 + 1);

			if (b == NULL)
				break;
			buf = b;
			cap *= 2;
		}
		n = read(p[0], buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(p[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	buf[len] = '\0';
	if (fsbt_now_ms() >= deadline)
		status = -1;
	if (output != NULL)
		*output = buf;
	else
		free(buf);
	return status;
}

/* ------------------------------------------------------------------------ */
/* TAP output with real skips. */

#define SKIP_TAG "# fsbt-skip-reason: "

void fsbt_skip_reason(const char *fmt, ...)
{
	char reason[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	for (char *p = reason; *p; p++)
		if (*p == '\n')
			*p = ' ';
	printf("%s%s\n", SKIP_TAG, reason);
	fflush(stdout);
}

/* "not ok 3 # SKIP name" or "ok 3 # SKIP name": the test number and the
 * name, else 0. */
static unsigned skip_line(const char *line, const char **name)
{
	unsigned num;
	int end = 0;

	if (sscanf(line, "not ok %u # SKIP %n", &num, &end) == 1 && end > 0) {
		*name = line + end;
		return num;
	}
	end = 0;
	if (sscanf(line, "ok %u # SKIP %n", &num, &end) == 1 && end > 0) {
		*name = line + end;
		return num;
	}
	return 0;
}

int fsbt_main(const char *group, const struct CMUnitTest *tests, size_t n,
	      CMFixtureFunction setup, CMFixtureFunction teardown)
{
	char reason[600] = "", *line = NULL;
	size_t cap = 0;
	int p[2], status;
	FILE *in;
	pid_t pid;

	signal(SIGPIPE, SIG_IGN);
	fflush(stdout);
	if (pipe2(p, O_CLOEXEC) < 0)
		return 1;
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		int rc;

		if (dup2(p[1], 1) < 0)
			_exit(1);
		close(p[0]);
		close(p[1]);
		setvbuf(stdout, NULL, _IOLBF, 0);
		rc = _cmocka_run_group_tests(group, tests, n, setup, teardown);
		fflush(stdout);
		_exit(rc != 0 ? 1 : 0);
	}
	close(p[1]);
	in = fdopen(p[0], "r");
	if (in == NULL)
		return 1;
	while (getline(&line, &cap, in) > 0) {
		const char *name;
		unsigned num;

		if (fsbt_starts(line, SKIP_TAG)) {
			snprintf(reason, sizeof(reason), "%s", line + strlen(SKIP_TAG));
			reason[strcspn(reason, "\n")] = '\0';
			continue;
		}
		if ((num = skip_line(line, &name)) > 0) {
			char nm[256];

			snprintf(nm, sizeof(nm), "%s", name);
			nm[strcspn(nm, "\n")] = '\0';
			printf("ok %u # SKIP %s: %s\n", num, nm,
			       reason[0] ? reason : "skipped without a reason");
			reason[0] = '\0';
		} else {
			fputs(line, stdout);
		}
		fflush(stdout);
	}
	free(line);
	fclose(in);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFSIGNALED(status)) {
		printf("# %s: the test program died of signal %d\n", group, WTERMSIG(status));
		return 1;
	}
	return WEXITSTATUS(status);
}

void fsbt_copy_program(const char *src, const char *dir, const char *name, char *out,
		       size_t len)
{
	char cmd[PATH_MAX * 3 + 32];

	snprintf(out, len, "%s/%s", dir, name);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && chmod 0755 '%s'", src, out, out);
	if (system(cmd) != 0)
		fail_msg("cannot copy %s to %s", src, out);
}

long fsbt_core_rss_kib(const struct fsbt_core *c)
{
	char p[64], *text, *hit;
	long kib = -1;

	snprintf(p, sizeof(p), "/proc/%d/status", (int)c->pid);
	if ((text = fsbt_read_file(p, NULL)) == NULL)
		return -1;
	if ((hit = strstr(text, "VmRSS:")) != NULL)
		kib = strtol(hit + 6, NULL, 10);
	free(text);
	return kib;
}

void fsbt_put(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX * 2];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fsbt_write_file(path, text);
}

const char *fsbt_sandbox_unsupported(char *why, size_t len)
{
	char *argv[] = { "/usr/bin/bwrap", "--unshare-user", "--ro-bind", "/", "/", "/bin/true",
			 NULL };
	char *out = NULL;

	if (access(argv[0], X_OK) < 0) {
		snprintf(why, len, "%s is not installed", argv[0]);
		return why;
	}
	if (fsbt_run(argv, &out) != 0) {
		snprintf(why, len, "`bwrap --unshare-user true` fails: %s", out ? out : "");
		why[strcspn(why, "\n")] = '\0';
		free(out);
		return why;
	}
	free(out);
	if (fsb_landlock_probe(why, len) < 1 || fsb_seccomp_probe(why, len) < 0)
		return why;
	return NULL;
}

void fsbt_diag(const char *fmt, ...)
{
	char *text = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	for (char *line = text, *next; line != NULL && *line != '\0'; line = next) {
		next = strchr(line, '\n');
		if (next != NULL)
			*next++ = '\0';
		fprintf(stderr, "# %s\n", line);
	}
	free(text);
}
