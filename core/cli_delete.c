/*
 * cli_delete.c — `fsbroker delete`: the safe-delete helper (DESIGN §8). Each
 * path is deleted by the core as a host `delete` (to the trash by default,
 * backed up first), through the client library; nothing is ever removed
 * here. Exit 0 every path deleted, 1 a refusal or error (fail closed), 2 the
 * broker is unavailable (nothing was asked for that path and the ones after).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "fsbroker_client.h"

static const char usage[] =
	"usage: fsbroker delete [--socket PATH] [--session ID] [--tool-call ID]\n"
	"                       [-r|--recursive] [-f|--force] [-v|--verbose] PATH...\n"
	"\n"
	"Ask the fsbroker core to delete each PATH, as a host operation judged by its\n"
	"pack: to the trash by default, backed up first. Nothing is removed here; a\n"
	"refusal or an unreachable core leaves the path as it is.\n"
	"\n"
	"options:\n"
	"  --socket PATH             the core's client socket (default: FSBROKER_SOCKET)\n"
	"  --session ID              the session (default: FSBROKER_SESSION_ID)\n"
	"  --tool-call ID            the tool call (default: FSBROKER_TOOL_CALL_ID)\n"
	"  -r, -R, --recursive       delete directories and what they hold\n"
	"  -f, --force               a missing PATH is no error\n"
	"  -v, --verbose             say what became of each PATH\n"
	"  -h, --help                print this text\n"
	"\n"
	"exit: 0 deleted, 1 refused or failed (a usage error too), 2 broker\n"
	"  unavailable (no socket configured, no connection)\n"
	"environment: FSBROKER_SOCKET, FSBROKER_SESSION_ID, FSBROKER_TOOL_CALL_ID,\n"
	"  FSBROKER_TIMEOUT_MS (how long to wait for the core), FSBROKER_TRACE_ID (sent\n"
	"  with each request, into the audit log); FSBROKER_READS is read too, but only\n"
	"  brokered reads heed it\n"
	"docs: docs/clients.md, docs/protocol.md\n";

#define PROG "fsbroker delete"

int fsb_cli_delete(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "session", required_argument, NULL, 'S' },
		{ "tool-call", required_argument, NULL, 't' },
		{ "recursive", no_argument, NULL, 'r' },
		{ "force", no_argument, NULL, 'f' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct fsbc_config cfg = { 0 };
	bool recursive = false, force = false, verbose = false;
	int c, status = 0;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":rRfvh", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			cfg.socket = optarg;
			break;
		case 'S':
			cfg.session = optarg;
			break;
		case 't':
			cfg.tool_call = optarg;
			break;
		case 'r':
		case 'R':
			recursive = true;
			break;
		case 'f':
			force = true;
			break;
		case 'v':
			verbose = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		case ':':
			fprintf(stderr, PROG ": %s needs a value; see " PROG " --help\n",
				argv[optind - 1]);
			return 1;
		default:
			/* 1, not 2: a caller that falls back to a local trash on
			 * 2 must not do so for a command line it got wrong. */
			return fsb_cli_bad_option(PROG, argv, 1);
		}
	}
	if (optind == argc) {
		fprintf(stderr, PROG ": no path given; see " PROG " --help\n");
		return 1;
	}
	if (fsbc_configure(&cfg) < 0) {
		perror(PROG);
		return 1;
	}
	if (!fsbc_configured()) {
		fprintf(stderr, PROG ": broker unavailable: no socket configured (--socket or "
			"FSBROKER_SOCKET); nothing was deleted\n");
		return 2;
	}
	for (int i = optind; i < argc; i++) {
		struct fsbc_hostop op = { .op = FSBC_OP_DELETE, .path = argv[i],
					  .recursive = recursive, .force = force, .mode = -1 };
		struct fsbc_hostop_result res;
		int err;

		if (fsbc_host_op(&op, &res) == 0) {
			if (verbose && res.trashed_to[0])
				printf("trashed '%s' to '%s'\n", argv[i], res.trashed_to);
			else if (verbose)
				printf("%s '%s'\n", res.changed ? "deleted" : "nothing to delete at",
				       argv[i]);
			continue;
		}
		err = errno;
		switch (fsbc_last_failure()) {
		case FSBC_NO_BROKER:
		case FSBC_UNREACHABLE:
			fprintf(stderr, PROG ": %s; '%s'%s not deleted\n", fsbc_last_reason(),
				argv[i], i + 1 < argc ? " and the paths after it were" : " was");
			return 2;
		case FSBC_LOST:
			/* The core may have acted: say so, and ask nothing more. */
			fprintf(stderr, PROG ": %s; '%s' may or may not be deleted%s\n",
				fsbc_last_reason(), argv[i],
				i + 1 < argc ? ", the paths after it were not tried" : "");
			return 1;
		default:
			fsbc_print_error(stderr, PROG, "delete", argv[i], err);
			status = 1;
		}
	}
	return status;
}
