/*
 * log.c — diagnostics on stderr (see log.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

enum fsb_log_level fsb_log_threshold = FSB_LOG_INFO;

static const char *const level_names[] = { "error", "warning", "info", "debug" };

void fsb_log_init(void)
{
	const char *v = getenv("FSBROKER_LOG");

	if (v == NULL)
		return;
	for (unsigned i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++)
		if (strcmp(v, level_names[i]) == 0 || (i == 1 && strcmp(v, "warn") == 0))
			fsb_log_threshold = (enum fsb_log_level)i;
}

void fsb_log(enum fsb_log_level level, const char *fmt, ...)
{
	char buf[2048];
	va_list ap;
	int n;

	if (level > fsb_log_threshold)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	/* One fprintf per message so concurrent writers do not interleave lines. */
	fprintf(stderr, "fsbroker: %s%s%s\n", level <= FSB_LOG_WARN ? level_names[level] : "",
		level <= FSB_LOG_WARN ? ": " : "", buf);
}
