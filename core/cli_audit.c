/*
 * cli_audit.c — `fsbroker audit verify FILE [--head HASH]`: check an audit
 * log's hash chain (and, with --head, that it still reaches the head a
 * sealed cycle recorded). `audit` has one verb today; it keeps a usage text
 * of its own so that more can join it.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "audit.h"
#include "cli.h"

static const char usage[] =
	"usage: fsbroker audit verify FILE [--head HASH]\n"
	"       fsbroker audit VERB --help\n"
	"\n"
	"Read the core's hash-chained audit log, where every decision lands.\n"
	"\n"
	"verbs:\n"
	"  verify    check a log's hash chain (fsbroker audit verify --help)\n"
	"\n"
	"options:\n"
	"  -h, --help                print this text\n"
	"\n"
	"exit: as the verb says; 2 usage error\n"
	"environment: none\n"
	"docs: docs/SECURITY.md, docs/backup-store.md\n";

static const char verify_usage[] =
	"usage: fsbroker audit verify FILE [--head HASH]\n"
	"\n"
	"Check the hash chain of the audit log FILE (STATE-DIR/audit/SESSION.jsonl):\n"
	"every line must carry the hash of the one before. With --head, the chain must\n"
	"also still hold the line HASH, the head a sealed cycle recorded (its\n"
	"auditHead in `fsbroker backup list --json`), so a log cut short is found.\n"
	"\n"
	"options:\n"
	"  --head HASH               the head the log must still reach\n"
	"  -h, --help                print this text\n"
	"\n"
	"exit: 0 intact, 1 broken (the first bad record named), 2 usage error or the\n"
	"  file cannot be read\n"
	"environment: none\n"
	"docs: docs/SECURITY.md, docs/backup-store.md\n";

#define PROG "fsbroker audit verify"

static int verify(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "head", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *head = NULL;
	int c, rc;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'H':
			head = optarg;
			break;
		case 'h':
			fputs(verify_usage, stdout);
			return 0;
		case ':':
			fprintf(stderr, PROG ": %s needs a value; see " PROG " --help\n",
				argv[optind - 1]);
			return 2;
		default:
			return fsb_cli_bad_option(PROG, argv, 2);
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, PROG ": name one audit log; see " PROG " --help\n");
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

int fsb_cli_audit(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "verify") == 0)
		return verify(argc - 1, argv + 1);
	if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		fputs(usage, stdout);
		return 0;
	}
	if (argc >= 2 && argv[1][0] == '-')
		return fsb_cli_unknown_option("fsbroker audit", argv[1], 2);
	if (argc < 2)
		fprintf(stderr, "fsbroker audit: name a verb (verify); see fsbroker audit --help\n");
	else
		fprintf(stderr, "fsbroker audit: unknown verb '%s' (verify); see fsbroker audit "
			"--help\n", argv[1]);
	return 2;
}
