/*
 * cli_term.h — what `fsbroker backup` does differently on a terminal:
 * progress rewritten in place on stderr (at most ten times a second), the
 * counts it shows grouped by thousands, colour when asked or when stdout is
 * a terminal, and long output through $PAGER (docs/cli.md, "On a
 * terminal").
 */
#ifndef FSB_CLI_TERM_H
#define FSB_CLI_TERM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>

/** `n` with a comma every three digits ("10,000") into `buf`; returns buf. */
const char *fsb_term_count(size_t n, char *buf, size_t len);

/** A line of progress on stderr: "restoring 4,213/10,000". */
struct fsb_progress {
	bool on;		/* stderr is a terminal and not quiet */
	bool shown;		/* a line is on the screen */
	const char *verb;	/* "restoring" */
	const char *verb0;	/* the verb it started with */
	bool copying;		/* a restore's copy for undo is being kept */
	size_t total;
	struct timespec start, last;
};

/**
 * Start progress for `total` steps: shown only when stderr is a terminal
 * and not `quiet`. The start time is taken either way, for the total line.
 */
void fsb_progress_start(struct fsb_progress *p, const char *verb, size_t total, bool quiet);

/** `done` of the total are done: the line is rewritten when 100 ms passed. */
void fsb_progress_step(struct fsb_progress *p, size_t done);

/** Take the progress line off the screen (before other output, at the end). */
void fsb_progress_clear(struct fsb_progress *p);

/** Seconds since fsb_progress_start. */
double fsb_progress_seconds(const struct fsb_progress *p);

#endif
