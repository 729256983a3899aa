/*
 * cli_audit.c — `fsbroker audit verify FILE [--head HASH]`.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "audit.h"
#include "cli.h"

int fsb_cli_audit(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "head", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *head = NULL;
	int c, rc;

	if (argc < 2 || strcmp(argv[1], "verify") != 0) {
		fprintf(stderr, "usage: fsbroker audit verify FILE [--head HASH]\n");
		return 2;
	}
	argc--;
	argv++;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'H':
			head = optarg;
			break;
		default:
			fprintf(stderr, "usage: fsbroker audit verify FILE [--head HASH]\n");
			return c == 'h' ? 0 : 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "usage: fsbroker audit verify FILE [--head HASH]\n");
		return 2;
	}
	rc = fsb_audit_verify(argv[optind], head, stdout);
	if (rc < 0) {
		fprintf(stderr, "fsbroker: cannot read %s: %s\n", argv[optind], strerror(-rc));
		return 2;
	}
	if (rc == 0)
		printf("%s: the hash chain is intact\n", argv[optind]);
	return rc == 0 ? 0 : 1;
}
