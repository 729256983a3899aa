/*
 * cli_usage.c — what every subcommand says the same way: an option it does
 * not know names itself and the --help to read.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

int fsb_cli_unknown_option(const char *prog, const char *arg, int status)
{
	/* "--socket=PATH" names the option, not what was given for it. */
	fprintf(stderr, "%s: unknown option %.*s; see %s --help\n", prog,
		(int)strcspn(arg, "="), arg, prog);
	return status;
}
