/*
 * fuzz_text.c — fuzz harness of the text token request parser
 * (core/proto_text.c, fsb_text_parse): any bytes as one request line, in a
 * buffer of exactly len + 1 bytes with the NUL the channel puts after every
 * line. A parsed request must hold what the parser promises (an absolute
 * path without tab or newline, session and tool-call set); a refusal must
 * come with its sentence.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "proto_text.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fsb_text_req req;
	const char *why = NULL;
	char *line = malloc(size + 1);

	if (line == NULL)
		return 0;
	memcpy(line, data, size);
	line[size] = '\0';
	if (fsb_text_parse(line, size, &req, &why) == 0) {
		if (req.path == NULL || req.path[0] != '/' || strpbrk(req.path, "\t\n") != NULL ||
		    req.session == NULL || req.tool_call == NULL)
			abort();
		/* Every field lies inside the line. */
		if (req.path < line || req.path >= line + size + 1 ||
		    req.session < line || req.session >= line + size + 1)
			abort();
	} else if (why == NULL) {
		abort();
	}
	free(line);
	return 0;
}
