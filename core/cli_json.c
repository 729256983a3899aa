/*
 * cli_json.c — the one shape of an error a command prints with --json
 * (docs/cli.md, "JSON output"; docs/schema/fsbroker.schema.json, `error`):
 * {"error": {"code": …, "message": …}} on stdout, one line, the exit
 * status left to the caller. The sentence also goes to stderr as without
 * --json, so a person reading the terminal sees it either way.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "cli.h"
#include "proto_json.h"

/* What the command printed and why it failed, for fsb_cli_json_errors. */
static bool printed;
static const char *reason_code;

void fsb_cli_json_out(const cJSON *v)
{
	char *s = fsb_json_print(v, true);

	if (s != NULL) {
		puts(s);
		printed = true;
	}
	free(s);
}

bool fsb_cli_json_printed(void)
{
	return printed;
}

void fsb_cli_json_code(const char *code)
{
	reason_code = code;
}

const char *fsb_cli_json_reason(int status)
{
	return reason_code != NULL ? reason_code : status == 2 ? "usage" : "io";
}

static void print_error(const char *code, const char *message, const char *file, long line,
			const char *field)
{
	cJSON *o = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(o, "error");
	char *text;

	cJSON_AddStringToObject(e, "code", code);
	cJSON_AddStringToObject(e, "message", message);
	if (file != NULL)
		cJSON_AddStringToObject(e, "file", file);
	if (line > 0)
		cJSON_AddNumberToObject(e, "line", (double)line);
	if (field != NULL)
		cJSON_AddStringToObject(e, "field", field);
	text = fsb_json_print(o, false);
	if (text != NULL)
		puts(text);
	else
		puts("{\"error\":{\"code\":\"io\",\"message\":\"out of memory\"}}");
	fflush(stdout);
	free(text);
	cJSON_Delete(o);
}

void fsb_cli_json_error(const char *code, const char *message)
{
	print_error(code, message, NULL, 0, NULL);
}

/*
 * A pack's error as the loader words it: "FILE:LINE: what" (Lua's own) or
 * "FILE: FIELD: what" (the pack's validation, FIELD like `fsProfile.modify[1]`),
 * else just a sentence. The file is the text up to the first ':' after
 * which a line number or a space follows.
 */
void fsb_cli_json_pack_error(const char *err)
{
	char file[4096] = "", field[256] = "";
	const char *p, *rest = err;
	long line = 0;

	for (p = strchr(err, ':'); p != NULL; p = strchr(p + 1, ':')) {
		char *end;
		long n = strtol(p + 1, &end, 10);

		if (p[1] >= '0' && p[1] <= '9' && *end == ':' && n > 0) {
			line = n;
			rest = end + 1;
		} else if (p[1] == ' ') {
			rest = p + 2;
		} else {
			continue;
		}
		snprintf(file, sizeof(file), "%.*s", (int)(p - err), err);
		break;
	}
	/* After the file: a field path ends in ": " and has no space in it. */
	if (file[0] != '\0' && line == 0) {
		const char *colon = strstr(rest, ": ");

		if (colon != NULL && (size_t)(colon - rest) < sizeof(field) &&
		    memchr(rest, ' ', (size_t)(colon - rest)) == NULL)
			snprintf(field, sizeof(field), "%.*s", (int)(colon - rest), rest);
	}
	print_error("pack", err, file[0] ? file : NULL, line, field[0] ? field : NULL);
}
