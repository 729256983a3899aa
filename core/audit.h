/*
 * audit.h — the audit log (DESIGN §9): one JSON line per decision and per
 * action, each carrying `prev`, the SHA-256 (hex) of the previous line's
 * bytes (without its newline; 64 zeros for the first line).
 */
#ifndef FSB_AUDIT_H
#define FSB_AUDIT_H

#include <stddef.h>
#include <stdio.h>

#include <cJSON.h>

#define FSB_SHA256_HEX_LEN 64

struct fsb_audit;
struct fsb_audit_line;

/**
 * Open (or create, mode 0600) the log at `path` for appending, O_CLOEXEC.
 * When the file has lines, the chain continues from the hash of its last
 * complete line; a partial last line (a crash mid-write) is ended with a
 * newline first so it cannot glue onto the next record. Many writers may
 * have the log open (the cores of one session): each append, under the
 * log's flock, chains from the last line whoever wrote it. 0 or -errno.
 */
int fsb_audit_open(const char *path, struct fsb_audit **out);

/**
 * Append `record` (a JSON object; the caller keeps ownership) as one line.
 * Adds "time" (RFC 3339 UTC with milliseconds) when absent and "prev".
 * The line is written with one write(2) before the reply it explains.
 * Returns 0 or -errno; on error the chain head is unchanged.
 */
int fsb_audit_write(struct fsb_audit *a, cJSON *record);

/**
 * Append the record built in `l` (audit_line.h) as one line, with "time"
 * (unless it has one) and "prev" added; `l` is used up (the caller still
 * frees it). 0 or -errno; on error the chain head is unchanged.
 */
int fsb_audit_append(struct fsb_audit *a, struct fsb_audit_line *l);

/**
 * Start `l` with the members of `record` (a JSON object; any "prev" is
 * dropped from it, a "time" kept), for fsb_audit_append(). 0 or -errno.
 */
int fsb_audit_line_of(struct fsb_audit_line *l, cJSON *record);

/** Hex SHA-256 of the last line written (the chain head), NUL-terminated. */
const char *fsb_audit_head(const struct fsb_audit *a);

/** fsync the log (called when a cycle seals). 0 or -errno. */
int fsb_audit_sync(struct fsb_audit *a);

void fsb_audit_close(struct fsb_audit *a);

/**
 * Verify the chain of the log at `path`. Writes one sentence per problem to
 * `report` (line number and what is wrong: an edited or removed line, lines
 * out of order, a line that is not JSON or lacks `prev`). When `expect_head`
 * is not NULL, the chain must also contain a line whose hash is that head
 * (a sealed cycle's record), which finds a truncated tail.
 * Returns 0 when intact, 1 when not, -errno when the file cannot be read.
 */
int fsb_audit_verify(const char *path, const char *expect_head, FILE *report);

/** Hex SHA-256 of `len` bytes into `out` (65 bytes with the NUL). */
void fsb_sha256_hex(const void *data, size_t len, char out[FSB_SHA256_HEX_LEN + 1]);

#endif
