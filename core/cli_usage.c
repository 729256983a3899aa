/*
 * cli_usage.c — what every subcommand says the same way: an option it does
 * not know names itself and the --help to read.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

int fsb_cli_unknown_option(const char *prog, const char *arg, int status)
{
	/* "--socket=PATH" names the option, not what was given for it; a
	 * cluster of short ones ("-Zr") the first. */
	int len = arg[0] == '-' && arg[1] != '-' && arg[1] != '\0' ? 2 : (int)strcspn(arg, "=");

	fprintf(stderr, "%s: unknown option %.*s; see %s --help\n", prog, len, arg, prog);
	return status;
}

void fsb_cli_option_error(const char *prog, char **argv, char *buf, size_t len)
{
	const char *cur = argv[optind], *last = argv[optind - 1];
	const char *opt = last;
	char name[3] = { '-', (char)optopt, '\0' };
	int n;

	/* Inside a cluster ("-Zr") getopt has not moved optind on: the word
	 * is argv[optind], and optopt alone says which letter. */
	if (optopt != 0 && cur != NULL && cur[0] == '-' && cur[1] != '-' &&
	    strchr(cur + 1, optopt) != NULL) {
		opt = name;
	} else if (strncmp(last, "--", 2) == 0) {
		/* A known long option given a value it does not take: getopt
		 * says so with its code in optopt. */
		if (optopt != 0 && strchr(last, '=') != NULL) {
			snprintf(buf, len, "%.*s takes no value; see %s --help",
				 (int)strcspn(last, "="), last, prog);
			return;
		}
	} else if (optopt != 0) {
		opt = name;
	}
	/* "--socket=PATH" names the option, not what was given for it; a
	 * cluster of short ones ("-Zr") the first. */
	n = opt[0] == '-' && opt[1] != '-' && opt[1] != '\0' ? 2 : (int)strcspn(opt, "=");
	snprintf(buf, len, "unknown option %.*s; see %s --help", n, opt, prog);
}

int fsb_cli_bad_option(const char *prog, char **argv, int status)
{
	char msg[256];

	fsb_cli_option_error(prog, argv, msg, sizeof(msg));
	fprintf(stderr, "%s: %s\n", prog, msg);
	return status;
}
