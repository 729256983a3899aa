/*
 * cli_term.c — progress, grouped counts, colour and the pager of `fsbroker
 * backup` (see cli_term.h). Nothing here decides what is printed, only how
 * it reaches a terminal.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli_term.h"

const char *fsb_term_count(size_t n, char *buf, size_t len)
{
	char digits[32];
	size_t nd, o = 0;

	nd = (size_t)snprintf(digits, sizeof(digits), "%zu", n);
	for (size_t i = 0; i < nd && o + 2 < len; i++) {
		if (i > 0 && (nd - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = digits[i];
	}
	buf[o] = '\0';
	return buf;
}

static double since(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

void fsb_progress_start(struct fsb_progress *p, const char *verb, size_t total, bool quiet)
{
	memset(p, 0, sizeof(*p));
	p->verb = p->verb0 = verb;
	p->total = total;
	/* Progress is for a person watching: never into a file or a pipe,
	 * where the rewritten line would be noise. */
	p->on = !quiet && isatty(STDERR_FILENO);
	clock_gettime(CLOCK_MONOTONIC, &p->start);
	p->last = p->start;
}

void fsb_progress_step(struct fsb_progress *p, size_t done)
{
	struct timespec now;
	char a[32], b[32];

	if (!p->on)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	/* At most ten lines a second: writing to a terminal costs more
	 * than a small restore step. */
	if (since(&p->last, &now) < 0.1 && done != p->total)
		return;
	p->last = now;
	fprintf(stderr, "\r\033[K%s %s/%s", p->verb, fsb_term_count(done, a, sizeof(a)),
		fsb_term_count(p->total, b, sizeof(b)));
	fflush(stderr);
	p->shown = true;
}

void fsb_progress_clear(struct fsb_progress *p)
{
	if (!p->shown)
		return;
	fputs("\r\033[K", stderr);
	fflush(stderr);
	p->shown = false;
}

double fsb_progress_seconds(const struct fsb_progress *p)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return since(&p->start, &now);
}

int fsb_term_parse_color(const char *v, enum fsb_color *out)
{
	if (v == NULL || strcmp(v, "always") == 0)
		*out = FSB_COLOR_ALWAYS;
	else if (strcmp(v, "auto") == 0)
		*out = FSB_COLOR_AUTO;
	else if (strcmp(v, "never") == 0)
		*out = FSB_COLOR_NEVER;
	else
		return -EINVAL;
	return 0;
}

bool fsb_term_use_color(enum fsb_color mode)
{
	const char *nc = getenv("NO_COLOR"), *term = getenv("TERM");

	/* An explicit --color=always is the user's word for this command,
	 * over NO_COLOR's for every program (no-color.org). */
	if (mode != FSB_COLOR_AUTO)
		return mode == FSB_COLOR_ALWAYS;
	if (nc != NULL && nc[0] != '\0')
		return false;
	return isatty(STDOUT_FILENO) && term != NULL && term[0] != '\0' &&
	       strcmp(term, "dumb") != 0;
}

void fsb_term_paint(struct fsb_paint *p, bool on)
{
	if (!on) {
		*p = (struct fsb_paint){ "", "", "", "", "", "" };
		return;
	}
	*p = (struct fsb_paint){ "\033[1m", "\033[31m", "\033[32m", "\033[33m", "\033[36m",
				 "\033[m" };
}

int fsb_pager_start(bool enabled)
{
	const char *pager = getenv("PAGER");
	int fds[2];
	pid_t pid;

	if (!enabled || !isatty(STDOUT_FILENO))
		return 0;
	if (pager == NULL)
		pager = "less -FRX";
	if (pager[0] == '\0' || strcmp(pager, "cat") == 0)
		return 0;
	if (pipe2(fds, O_CLOEXEC) < 0)
		return 0;
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return 0;
	}
	if (pid == 0) {
		if (dup2(fds[0], STDIN_FILENO) < 0)
			_exit(127);
		/* less quits at once on output shorter than the screen (-F),
		 * keeps colour (-R) and leaves the screen as it was (-X). */
		setenv("LESS", "FRX", 0);
		execl("/bin/sh", "sh", "-c", pager, (char *)NULL);
		_exit(127);
	}
	close(fds[0]);
	/* SIGPIPE is left as it is: a pager quit early ends the command at
	 * its next write, as git's does, rather than letting it diff on into
	 * a pipe nobody reads. */
	if (dup2(fds[1], STDOUT_FILENO) < 0) {
		close(fds[1]);
		return 0;
	}
	close(fds[1]);
	return (int)pid;
}

void fsb_pager_end(int pid)
{
	int st;

	if (pid <= 0)
		return;
	fflush(stdout);
	close(STDOUT_FILENO);
	while (waitpid((pid_t)pid, &st, 0) < 0 && errno == EINTR)
		;
}
