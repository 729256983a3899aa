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

/* --color=auto|always|never. */
enum fsb_color { FSB_COLOR_AUTO, FSB_COLOR_ALWAYS, FSB_COLOR_NEVER };

/**
 * Parse a --color value ("auto", "always", "never"; NULL, as for a bare
 * --color, is "always"). 0, or -EINVAL.
 */
int fsb_term_parse_color(const char *v, enum fsb_color *out);

/**
 * Whether to colour stdout: always, never, or (auto) when NO_COLOR is not
 * set (or empty), stdout is a terminal and TERM is set and not "dumb".
 */
bool fsb_term_use_color(enum fsb_color mode);

/* The SGR sequences the output uses; "" when colour is off. */
struct fsb_paint {
	const char *bold, *red, *green, *yellow, *cyan, *reset;
};

/** The sequences for `on` (colour) or all "" (none). */
void fsb_term_paint(struct fsb_paint *p, bool on);

/**
 * Send stdout through the pager when stdout is a terminal and `enabled`:
 * $PAGER through /bin/sh -c, `less -FRX` when PAGER is unset (LESS=FRX set
 * for a less that has no LESS of its own, so that output shorter than the
 * screen is printed and left there); none when PAGER is empty or "cat".
 * Returns the pager's pid (> 0), or 0 when there is none (also when it
 * cannot be started: the output then goes to the terminal itself).
 */
int fsb_pager_start(bool enabled);

/** Flush and close the pipe to the pager `pid` (> 0) and wait for it. */
void fsb_pager_end(int pid);

#endif
