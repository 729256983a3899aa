/*
 * run_fixture.h — what the `fsbroker run` tests share (test_run*.c): a
 * temp layout with a home holding a key, a workspace, a private tmp and a
 * state dir; whether this machine can sandbox at all; and a runner that
 * keeps CMD's stdout, fsbroker run's stderr, the --summary-fd stream and a
 * --control-fd socket apart, killing by pid what it started.
 */
#ifndef FSBT_RUN_FIXTURE_H
#define FSBT_RUN_FIXTURE_H

#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The descriptors the runner gives fsbroker run for --summary-fd and
 * --control-fd. */
#define RUN_SUMMARY_FD 5
#define RUN_CONTROL_FD 6

struct fixture {
	char root[PATH_MAX];
	char home[PATH_MAX + 8], ws[PATH_MAX + 8], tmp[PATH_MAX + 8], state[PATH_MAX + 8];
	char rules[PATH_MAX + 8];
	char key[PATH_MAX + 32];
};

static inline int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	/* Not under /tmp (private in the sandbox), and HOME not inside TMPDIR
	 * (the default pack refuses that). */
	snprintf(f->root, sizeof(f->root), "/var/tmp/fsbt-run-XXXXXX");
	assert_non_null(mkdtemp(f->root));
	assert_int_equal(chmod(f->root, 0755), 0);
	snprintf(f->home, sizeof(f->home), "%s/home", f->root);
	snprintf(f->ws, sizeof(f->ws), "%s/ws", f->root);
	snprintf(f->tmp, sizeof(f->tmp), "%s/tmp", f->root);
	snprintf(f->state, sizeof(f->state), "%s/state", f->root);
	snprintf(f->rules, sizeof(f->rules), "%s/rules", f->root);
	assert_int_equal(mkdir(f->home, 0755), 0);
	assert_int_equal(mkdir(f->ws, 0755), 0);
	assert_int_equal(mkdir(f->tmp, 0700), 0);
	assert_int_equal(mkdir(f->rules, 0755), 0);
	snprintf(f->key, sizeof(f->key), "%s/.ssh", f->home);
	assert_int_equal(mkdir(f->key, 0700), 0);
	snprintf(f->key, sizeof(f->key), "%s/.ssh/id_ed25519", f->home);
	fsbt_write_file(f->key, "PRIVATE KEY\n");
	fsbt_put(f->ws, "a.txt", "old a\n");
	fsbt_put(f->ws, "b.txt", "bee\n");
	fsbt_put(f->ws, "c.txt", "cee\n");
	/* fsbroker run and what it starts see this home and tmp. */
	setenv("HOME", f->home, 1);
	setenv("TMPDIR", f->tmp, 1);
	unsetenv("XDG_RUNTIME_DIR");
	unsetenv("XDG_STATE_HOME");
	unsetenv("XDG_CONFIG_HOME");
	unsetenv("XDG_DATA_HOME");
	unsetenv("XDG_CACHE_HOME");
	*state = f;
	return 0;
}

static inline int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->root);
	if (getenv("FSBT_KEEP") == NULL && system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", f->root);
	free(f);
	return 0;
}

/* fsbroker run --workspace WS --state-dir ST --session s [extra] -- sh -c SCRIPT,
 * stdout and stderr together into *out. */
static inline int run_sh(struct fixture *f, const char *extra, const char *script, char **out)
{
	char *argv[16];
	int n = 0;

	argv[n++] = (char *)fsbt_binary();
	argv[n++] = "run";
	argv[n++] = "--workspace";
	argv[n++] = f->ws;
	argv[n++] = "--state-dir";
	argv[n++] = f->state;
	argv[n++] = "--session";
	argv[n++] = "s";
	if (extra != NULL)
		argv[n++] = (char *)extra;
	if (script != NULL) {
		argv[n++] = "--";
		argv[n++] = "sh";
		argv[n++] = "-c";
		argv[n++] = (char *)script;
	}
	argv[n] = NULL;
	return fsbt_run(argv, out);
}

/* Run `cmd` (a command line a summary printed) through sh, with the
 * fsbroker under test first on PATH. Its output into *out. */
static inline int run_printed(const char *cmd, char **out)
{
	char bin[PATH_MAX], path[PATH_MAX * 2 + 16], saved[PATH_MAX * 2], *dir;
	const char *old = getenv("PATH");
	int st;

	snprintf(bin, sizeof(bin), "%s", fsbt_binary());
	dir = dirname(bin);
	snprintf(saved, sizeof(saved), "%s", old != NULL ? old : "/usr/bin:/bin");
	snprintf(path, sizeof(path), "%s:%s", dir, saved);
	setenv("PATH", path, 1);
	st = fsbt_run((char *[]){ "/bin/sh", "-c", (char *)cmd, NULL }, out);
	setenv("PATH", saved, 1);
	return st;
}

/* A started `fsbroker run`: its output streams, kept apart. */
struct runproc {
	pid_t pid;
	int out, err, sum;	/* read ends; -1 once at EOF */
	int ctl;		/* our end of --control-fd, or -1 */
	char *obuf, *ebuf, *sbuf;
	size_t olen, elen, slen;
};

/* Start argv (argv[0] a path) with stdout, stderr and fd RUN_SUMMARY_FD on
 * pipes, and RUN_CONTROL_FD on a socket when `control`. */
static inline void run_start(char *const argv[], bool control, struct runproc *p)
{
	int o[2], e[2], s[2], c[2] = { -1, -1 };
	pid_t parent = getpid();

	memset(p, 0, sizeof(*p));
	assert_int_equal(pipe2(o, O_CLOEXEC), 0);
	assert_int_equal(pipe2(e, O_CLOEXEC), 0);
	assert_int_equal(pipe2(s, O_CLOEXEC), 0);
	if (control)
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, c), 0);
	p->pid = fork();
	assert_true(p->pid >= 0);
	if (p->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		if (dup2(o[1], 1) < 0 || dup2(e[1], 2) < 0 || dup2(s[1], RUN_SUMMARY_FD) < 0 ||
		    (control && dup2(c[1], RUN_CONTROL_FD) < 0))
			_exit(127);
		execv(argv[0], argv);
		_exit(127);
	}
	close(o[1]);
	close(e[1]);
	close(s[1]);
	if (control)
		close(c[1]);
	p->out = o[0];
	p->err = e[0];
	p->sum = s[0];
	p->ctl = c[0];
}

static inline void drain(int *fd, char **buf, size_t *len)
{
	char chunk[4096];
	ssize_t n = read(*fd, chunk, sizeof(chunk));
	char *grown;

	if (n <= 0) {
		close(*fd);
		*fd = -1;
		return;
	}
	grown = realloc(*buf, *len + (size_t)n + 1);
	assert_non_null(grown);
	*buf = grown;
	memcpy(*buf + *len, chunk, (size_t)n);
	*len += (size_t)n;
	(*buf)[*len] = '\0';
}

/* Read every stream to its end and reap the run: its wait status. After
 * `silent_s` seconds without a byte on any stream the run is killed and the
 * test fails (a hang detector, never a measure); run_finish(): 60 s. */
static inline int run_finish_within(struct runproc *p, int silent_s)
{
	int status;

	for (int waited = 0; p->out >= 0 || p->err >= 0 || p->sum >= 0;) {
		struct pollfd fds[3] = { { p->out, POLLIN, 0 }, { p->err, POLLIN, 0 },
					 { p->sum, POLLIN, 0 } };
		int n = poll(fds, 3, 1000);

		if (n == 0 && ++waited >= silent_s) {
			kill(p->pid, SIGKILL);
			waitpid(p->pid, &status, 0);
			fail_msg("fsbroker run wrote nothing for %d s: killed; stderr so far:\n%s",
				 silent_s, p->ebuf ? p->ebuf : "");
		}
		if (n <= 0)
			continue;
		waited = 0;
		if (fds[0].revents)
			drain(&p->out, &p->obuf, &p->olen);
		if (fds[1].revents)
			drain(&p->err, &p->ebuf, &p->elen);
		if (fds[2].revents)
			drain(&p->sum, &p->sbuf, &p->slen);
	}
	assert_int_equal(waitpid(p->pid, &status, 0), p->pid);
	if (p->ctl >= 0)
		close(p->ctl);
	p->ctl = -1;
	return status;
}

static inline int run_finish(struct runproc *p)
{
	return run_finish_within(p, 60);
}

static inline void run_free(struct runproc *p)
{
	free(p->obuf);
	free(p->ebuf);
	free(p->sbuf);
	memset(p, 0, sizeof(*p));
}

/* The one JSON object on the summary stream; fails the test otherwise. */
static inline cJSON *run_summary(const struct runproc *p)
{
	cJSON *o;

	if (p->sbuf == NULL || p->slen == 0 || p->sbuf[p->slen - 1] != '\n' ||
	    memchr(p->sbuf, '\n', p->slen) != p->sbuf + p->slen - 1)
		fail_msg("the summary fd did not get exactly one line: '%s'\nstderr:\n%s",
			 p->sbuf ? p->sbuf : "", p->ebuf ? p->ebuf : "");
	o = cJSON_Parse(p->sbuf);
	if (!cJSON_IsObject(o))
		fail_msg("the summary is not a JSON object: %s", p->sbuf);
	return o;
}

#endif
