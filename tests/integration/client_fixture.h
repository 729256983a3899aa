/*
 * client_fixture.h — what the tests of the brokered clients share
 * (test_toybox.c, test_zsh.c): paths in the core's workspace, the content
 * checks, the audit log and the cycle's journal read back line by line,
 * a commit followed by `fsbroker backup restore`, and a client started
 * with its output captured, for the tests that kill the core under it.
 */
#ifndef FSBT_CLIENT_FIXTURE_H
#define FSBT_CLIENT_FIXTURE_H

#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static inline char *in_ws(char *buf, size_t size, const struct fsbt_core *c, const char *name)
{
	snprintf(buf, size, "%s/%s", c->ws, name);
	return buf;
}

static inline void assert_content(const char *path, const char *want)
{
	char *now = fsbt_read_file(path, NULL);

	if (now == NULL)
		fail_msg("%s: %s", path, strerror(errno));
	if (strcmp(now, want) != 0)
		fail_msg("%s holds \"%s\", not \"%s\"", path, now, want);
	free(now);
}

static inline void assert_has(const char *out, const char *want)
{
	if (out == NULL || strstr(out, want) == NULL)
		fail_msg("expected \"%s\" in:\n%s", want, out ? out : "(nothing)");
}

static inline bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* ------------------------------------------------------------------------ */
/* The audit log and the journal. */

/* What an audit or journal line must hold. */
struct want {
	const char *phase;		/* audit: NULL for any */
	const char *op;
	const char *path;		/* audit: path; journal: resolved; NULL: any */
	const char *path_prefix;	/* or a path starting with this */
	const char *decision;		/* audit: NULL for any */
	int nth;			/* the nth match (0: first; -1: count them all) */
	int seen;			/* set by find_line(): how many matched */
};

static inline bool path_match(const char *path, const struct want *w)
{
	if (w->path != NULL)
		return strcmp(path, w->path) == 0;
	return w->path_prefix == NULL || fsbt_starts(path, w->path_prefix);
}

static inline bool audit_match(const cJSON *j, const void *arg)
{
	const struct want *w = arg;

	if (w->phase != NULL && strcmp(fsbt_str(j, "phase"), w->phase) != 0)
		return false;
	if (strcmp(fsbt_str(j, "op"), w->op) != 0 || !path_match(fsbt_str(j, "path"), w))
		return false;
	return w->decision == NULL || strcmp(fsbt_str(j, "decision"), w->decision) == 0;
}

static inline bool journal_match(const cJSON *j, const void *arg)
{
	const struct want *w = arg;

	return strcmp(fsbt_str(j, "op"), w->op) == 0 && path_match(fsbt_str(j, "resolved"), w);
}

/*
 * The `nth` line of `file` that `match` accepts (a copy, for the caller to
 * delete), or NULL; *seen counts every line it accepts.
 */
static inline cJSON *find_line(const char *file, bool (*match)(const cJSON *, const void *),
			       const void *arg, int nth, int *seen)
{
	char *text = fsbt_read_file(file, NULL), *line, *save = NULL;
	cJSON *found = NULL;

	*seen = 0;
	if (text == NULL)
		return NULL;
	for (line = strtok_r(text, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		cJSON *j = cJSON_Parse(line);

		if (j != NULL && match(j, arg) && (*seen)++ == nth && found == NULL) {
			found = j;
			continue;
		}
		cJSON_Delete(j);
	}
	free(text);
	return found;
}

static inline void audit_file(const struct fsbt_core *c, char *file, size_t size)
{
	snprintf(file, size, "%s/audit/%s.jsonl", c->state, c->session);
}

/* The w->nth audit line `w` describes, or NULL; w->seen counts them all. */
static inline cJSON *audit_find(const struct fsbt_core *c, struct want *w)
{
	char file[PATH_MAX * 2];

	audit_file(c, file, sizeof(file));
	return find_line(file, audit_match, w, w->nth, &w->seen);
}

/* The audit line with this phase, op, path and decision (fails without). */
static inline cJSON *audit_line(const struct fsbt_core *c, const char *phase, const char *op,
				const char *path, const char *decision)
{
	struct want w = { .phase = phase, .op = op, .path = path, .decision = decision };
	cJSON *j = audit_find(c, &w);

	if (j == NULL) {
		char file[PATH_MAX * 2], *log;

		audit_file(c, file, sizeof(file));
		log = fsbt_read_file(file, NULL);
		fail_msg("no audit line %s %s %s %s in:\n%s", phase ? phase : "*", op, path,
			 decision ? decision : "", log ? log : "(none)");
	}
	return j;
}

/* How many audit lines have this phase, op and path. */
static inline int audit_count(const struct fsbt_core *c, const char *phase, const char *op,
			      const char *path)
{
	struct want w = { .phase = phase, .op = op, .path = path, .nth = -1 };

	cJSON_Delete(audit_find(c, &w));
	return w.seen;
}

/* The first journal line of cycle 1 with this op and resolved path. */
static inline cJSON *journal_line(const struct fsbt_core *c, const char *op,
				  const char *resolved)
{
	char file[PATH_MAX * 2];
	struct want w = { .op = op, .path = resolved };
	cJSON *j;

	snprintf(file, sizeof(file), "%s/sessions/%s/modify_backup/cycles/1/journal.jsonl",
		 c->state, c->session);
	if ((j = find_line(file, journal_match, &w, 0, &w.seen)) == NULL) {
		char *log = fsbt_read_file(file, NULL);

		fail_msg("no journal line %s %s in:\n%s", op, resolved, log ? log : "(none)");
	}
	return j;
}

/* The backed-up content a journal line's prior state names. */
static inline void assert_backed_up(const struct fsbt_core *c, const cJSON *line,
				    const char *want)
{
	const cJSON *prior = cJSON_GetObjectItem(line, "prior");
	const char *hex = fsbt_str(prior, "object");
	char path[PATH_MAX * 2];

	if (strlen(hex) != 64)
		fail_msg("the journal line has no backup object: %s", cJSON_PrintUnformatted(line));
	snprintf(path, sizeof(path), "%s/sessions/%s/modify_backup/objects/%.2s/%s", c->state,
		 c->session, hex, hex);
	assert_content(path, want);
}

/* Seal the cycle and restore it with `fsbroker backup restore --last`. */
static inline void commit_and_restore(struct fsbt_core *c)
{
	cJSON *r = fsbt_control_cmd(c, "CommitModifyBackup", "\"commitMsg\":\"client test\"");
	char *out = NULL;
	int status;

	if (!fsbt_ok(r) || fsbt_num(r, "cycle") < 1)
		fail_msg("CommitModifyBackup sealed no cycle: %s", cJSON_PrintUnformatted(r));
	cJSON_Delete(r);
	status = fsbt_run((char *[]){ (char *)fsbt_binary(), "backup", "restore", "--last",
				      "--state-dir", c->state, "--session", c->session, NULL },
			  &out);
	if (status != 0)
		fail_msg("restore exited 0x%x:\n%s", (unsigned)status, out ? out : "");
	free(out);
}

/* ------------------------------------------------------------------------ */
/* A client the core dies under. */

/* A client started with stdout and stderr into one pipe. */
struct captured {
	pid_t pid;
	int out;	/* the pipe's read end */
};

static inline void captured_start(struct captured *cp, char *const argv[])
{
	int p[2];

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	cp->pid = fork();
	assert_true(cp->pid >= 0);
	if (cp->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(p[1], 1);
		dup2(p[1], 2);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	cp->out = p[0];
}

/* Everything it wrote, into `out` (NUL-terminated); its wait status. */
static inline int captured_finish(struct captured *cp, char *out, size_t size)
{
	size_t len = 0;
	ssize_t n;
	int status;

	while (len < size - 1 && (n = read(cp->out, out + len, size - 1 - len)) > 0)
		len += (size_t)n;
	out[len] = '\0';
	close(cp->out);
	assert_int_equal(waitpid(cp->pid, &status, 0), cp->pid);
	return status;
}

/*
 * The client reads the FIFO `fifo` first: once the core has allowed that
 * read (its audit line is written before the answer), the client is in the
 * FIFO's open, or on its way, and cannot ask for anything else before a
 * writer comes. Kill the core then, and let the client go on with `data`
 * (it may have failed and closed the FIFO already: EPIPE is fine).
 */
static inline void kill_core_while_client_reads_fifo(struct fsbt_core *c,
						      struct captured *cp,
						      const char *fifo, const char *data)
{
	int wfd = -1;

	for (int i = 0; i < 1000 && audit_count(c, "ipc-token", "read", fifo) == 0; i++)
		fsbt_sleep_ms(10);
	if (audit_count(c, "ipc-token", "read", fifo) == 0) {
		kill(cp->pid, SIGKILL);
		waitpid(cp->pid, NULL, 0);
		fail_msg("the client never asked to read %s", fifo);
	}
	assert_int_equal(kill(c->pid, SIGKILL), 0);
	assert_int_equal(fsbt_core_wait_exit(c, FSBT_TIMEOUT_MS), 0);
	for (int i = 0; i < 1000 && wfd < 0; i++) {
		wfd = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
		if (wfd < 0)
			fsbt_sleep_ms(10);
	}
	assert_true(wfd >= 0);
	if (write(wfd, data, strlen(data)) < 0)
		assert_int_equal(errno, EPIPE);
	close(wfd);
}

#endif
