/*
 * log.h — the core's diagnostics on stderr, one line each, prefixed with
 * "fsbroker: ". stdout belongs to the control channel. A line that stderr
 * cannot take at once is dropped and counted: a host that stops reading the
 * core's stderr must not stop the core. While held (fsb_log_hold), lines
 * are kept instead: `fsbroker run` shares stderr with CMD and must not
 * write into it while CMD runs.
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

/**
 * As fsb_log, for messages a client can cause at will (a policy error on
 * each request): at most 10 such lines a second, then one line saying how
 * many were suppressed.
 */
void fsb_log_limited(enum fsb_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/**
 * Keep the lines from now on instead of writing them (up to 64 KiB, the rest
 * counted), until fsb_log_release().
 */
void fsb_log_hold(void);

/**
 * Stop holding. The lines kept, without "fsbroker: " and the newline, in
 * `*lines` (malloc'd, each and the array; *n of them; a last line says how
 * many were left out), or, when `lines` is NULL, written to stderr now.
 */
void fsb_log_release(char ***lines, size_t *n);

/** Read FSBROKER_LOG from the environment. */
void fsb_log_init(void);

#endif
