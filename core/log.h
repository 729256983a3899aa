/*
 * log.h — the core's diagnostics on stderr, one line each, prefixed with
 * "fsbroker: ". stdout belongs to the control channel.
 */
#ifndef FSB_LOG_H
#define FSB_LOG_H

enum fsb_log_level { FSB_LOG_ERROR, FSB_LOG_WARN, FSB_LOG_INFO, FSB_LOG_DEBUG };

/** Messages above this level are dropped (FSBROKER_LOG=debug|info|warn|error). */
extern enum fsb_log_level fsb_log_threshold;

void fsb_log(enum fsb_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define fsb_error(...) fsb_log(FSB_LOG_ERROR, __VA_ARGS__)
#define fsb_warn(...) fsb_log(FSB_LOG_WARN, __VA_ARGS__)
#define fsb_info(...) fsb_log(FSB_LOG_INFO, __VA_ARGS__)
#define fsb_debug(...) fsb_log(FSB_LOG_DEBUG, __VA_ARGS__)

/** Read FSBROKER_LOG from the environment. */
void fsb_log_init(void);

#endif
