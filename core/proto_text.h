/*
 * proto_text.h — the text token request of the original design (DESIGN §3.2):
 *
 *   <class>\t<absolute-path>\t<session-id>\t<tool-call-id>[\t<open-spec>]\n
 *
 * Parsing is in place and allocation-free: the fields point into the line.
 */
#ifndef FSB_PROTO_TEXT_H
#define FSB_PROTO_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct fsb_text_req {
	bool write;		/* class fsbroker.read-write (or its alias) */
	const char *path;	/* absolute, no tab/newline/NUL */
	const char *session;
	const char *tool_call;
	bool has_open;		/* an open-spec was given */
	int open_flags;		/* from open=<flags-hex>:<mode-octal> */
	mode_t open_mode;
};

/**
 * Parse one request line. `line` holds `len` bytes without the trailing
 * newline and is modified (tabs become NULs); it must have a NUL at
 * line[len]. Returns 0, or -EINVAL with *why set to a static sentence that
 * names what is wrong (for the DENY reason). An embedded NUL, an unknown
 * class, a relative or empty path, a missing field, an extra field or a
 * malformed open-spec are all refused. The open-spec's flags are only
 * parsed here; fsb_openflags_check() judges them.
 */
int fsb_text_parse(char *line, size_t len, struct fsb_text_req *out,
		   const char **why);

#endif
