/*
 * log.c — diagnostics on stderr (see log.h).
 */
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

enum fsb_log_level fsb_log_threshold = FSB_LOG_INFO;

static const char *const level_names[] = { "error", "warning", "info", "debug" };
/* The loop and the thread pool both log: one line at a time. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long dropped;		/* lines stderr could not take */
static unsigned long suppressed;	/* limited lines over the rate */
static time_t limit_second;
static unsigned limit_count;
/* Held lines (fsb_log_hold): the messages, NUL-separated. */
#define HELD_MAX (64 * 1024)
static bool holding;
static char *held;
static size_t held_len;
static unsigned long held_lost;

void fsb_log_init(void)
{
	const char *v = getenv("FSBROKER_LOG");

	if (v == NULL)
		return;
	for (unsigned i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++)
		if (strcmp(v, level_names[i]) == 0 || (i == 1 && strcmp(v, "warn") == 0))
			fsb_log_threshold = (enum fsb_log_level)i;
}

/* One write of one whole line, only when stderr can take it now. */
static void emit(const char *line, size_t len)
{
	struct pollfd p = { .fd = STDERR_FILENO, .events = POLLOUT };

	if (poll(&p, 1, 0) != 1 || !(p.revents & POLLOUT) ||
	    write(STDERR_FILENO, line, len) != (ssize_t)len)
		dropped++;
}

/* The message as a line would say it, after "fsbroker: ". */
static void keep(enum fsb_log_level level, const char *msg)
{
	char text[2304];
	int n = snprintf(text, sizeof(text), "%s%s%s",
			 level <= FSB_LOG_WARN ? level_names[level] : "",
			 level <= FSB_LOG_WARN ? ": " : "", msg);
	size_t len = n < 0 ? 0 : (size_t)n >= sizeof(text) ? sizeof(text) - 1 : (size_t)n;
	char *grown;

	if (held_len + len + 1 > HELD_MAX || (grown = realloc(held, held_len + len + 1)) == NULL) {
		held_lost++;
		return;
	}
	held = grown;
	memcpy(held + held_len, text, len + 1);
	held_len += len + 1;
}

static void vlog(enum fsb_log_level level, const char *fmt, va_list ap)
{
	char msg[2048], line[2304];
	int n;

	if (vsnprintf(msg, sizeof(msg), fmt, ap) < 0)
		return;
	if (holding) {
		keep(level, msg);
		return;
	}
	if (dropped > 0) {
		n = snprintf(line, sizeof(line), "fsbroker: warning: %lu log line(s) dropped "
			     "while stderr was not being read\n", dropped);
		dropped = 0;
		emit(line, (size_t)n);
	}
	n = snprintf(line, sizeof(line), "fsbroker: %s%s%s\n",
		     level <= FSB_LOG_WARN ? level_names[level] : "",
		     level <= FSB_LOG_WARN ? ": " : "", msg);
	if (n >= (int)sizeof(line)) {
		n = sizeof(line) - 1;
		line[n - 1] = '\n';
	}
	emit(line, (size_t)n);
}

/* vlog() with its arguments; the caller holds log_lock. */
static void say(enum fsb_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(level, fmt, ap);
	va_end(ap);
}

void fsb_log(enum fsb_log_level level, const char *fmt, ...)
{
	va_list ap;

	if (level > fsb_log_threshold)
		return;
	va_start(ap, fmt);
	pthread_mutex_lock(&log_lock);
	vlog(level, fmt, ap);
	pthread_mutex_unlock(&log_lock);
	va_end(ap);
}

void fsb_log_limited(enum fsb_log_level level, const char *fmt, ...)
{
	time_t now = time(NULL);
	va_list ap;

	if (level > fsb_log_threshold)
		return;
	pthread_mutex_lock(&log_lock);
	if (now != limit_second) {
		unsigned long n = suppressed;

		limit_second = now;
		limit_count = 0;
		suppressed = 0;
		if (n > 0)
			say(level, "%lu similar line(s) suppressed in the last second(s)", n);
	}
	if (++limit_count <= 10) {
		va_start(ap, fmt);
		vlog(level, fmt, ap);
		va_end(ap);
	} else {
		suppressed++;
	}
	pthread_mutex_unlock(&log_lock);
}

void fsb_log_hold(void)
{
	pthread_mutex_lock(&log_lock);
	holding = true;
	pthread_mutex_unlock(&log_lock);
}

void fsb_log_release(char ***lines, size_t *n)
{
	char **v = NULL, line[2400];
	size_t count = 0, i = 0;
	int len;

	pthread_mutex_lock(&log_lock);
	holding = false;
	for (size_t off = 0; off < held_len; off += strlen(held + off) + 1)
		count++;
	if (held_lost > 0)
		count++;
	/* Out of memory for the array: the lines go to stderr after all. */
	if (lines != NULL && count > 0)
		v = calloc(count, sizeof(*v));
	for (size_t off = 0; off < held_len; off += strlen(held + off) + 1) {
		if (v != NULL) {
			if ((v[i] = strdup(held + off)) != NULL)
				i++;
		} else {
			len = snprintf(line, sizeof(line), "fsbroker: %s\n", held + off);
			emit(line, len < (int)sizeof(line) ? (size_t)len : sizeof(line) - 1);
		}
	}
	if (held_lost > 0) {
		len = snprintf(line, sizeof(line), "warning: %lu log line(s) left out: "
			       "more than %d KiB were held", held_lost, HELD_MAX / 1024);
		if (v != NULL && (v[i] = strdup(line)) != NULL)
			i++;
		else if (v == NULL)
			say(FSB_LOG_WARN, "%lu log line(s) left out: more than %d KiB were held",
			    held_lost, HELD_MAX / 1024);
	}
	free(held);
	held = NULL;
	held_len = 0;
	held_lost = 0;
	pthread_mutex_unlock(&log_lock);
	if (lines != NULL) {
		*lines = v;
		*n = v != NULL ? i : 0;
	}
}
