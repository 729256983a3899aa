/*
 * cli_term.c — progress, grouped counts, colour and the pager of `fsbroker
 * backup` (see cli_term.h). Nothing here decides what is printed, only how
 * it reaches a terminal.
 */
#include <stdio.h>
#include <string.h>
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
