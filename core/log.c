/*
 * log.c — diagnostics on stderr (see log.h).
 */
#include <poll.h>
#include <pthread.h>
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

static void vlog(enum fsb_log_level level, const char *fmt, va_list ap)
{
	char msg[2048], line[2304];
	int n;

	if (vsnprintf(msg, sizeof(msg), fmt, ap) < 0)
		return;
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
