/*
 * main.c — the fsbroker command: dispatch to a subcommand.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "log.h"

static const char usage[] =
	"usage: fsbroker <command> [options]\n"
	"\n"
	"commands:\n"
	"  serve --socket PATH --session ID [--rules PACK] [--state-dir DIR] [--workspace DIR]\n"
	"        run the core: client requests on PATH, control requests on stdin\n"
	"  run [--rules PACK] [--workspace DIR] [--session ID] [--tool-call ID]\n"
	"      [--state-dir DIR | --core STATE-DIR] [--summary-fd N] [--explain] -- CMD...\n"
	"        run CMD sandboxed (embedded core, or the running one with --core), exit\n"
	"        with CMD's status (125: fsbroker run failed)\n"
	"  shell [--rules PACK] [--workspace DIR] [--session ID] [--state-dir DIR] [-- ZSH-ARGS...]\n"
	"        run the patched zsh with an embedded core; seal the cycle when it exits\n"
	"  approve [--session ID] [--state-dir DIR] [--scope once|session] BLOCK-ID\n"
	"        approve a call a run left waiting; then rerun the same command\n"
	"  check --rules PACK [--workspace DIR] [--json] --op OP PATH...\n"
	"        print the verdict for each path; exit 0 allow, 1 deny, 3 ask, 2 error\n"
	"  backup list|show|restore ...   list, show and restore backup cycles (backup --help)\n"
	"  delete [--socket PATH] [--session ID] [--tool-call ID] [-r] [-f] PATH...\n"
	"        ask the core to delete each PATH (to the trash); exit 0 deleted,\n"
	"        1 refused or failed, 2 broker unavailable\n"
	"  audit verify FILE [--head HASH]\n"
	"        check an audit log's hash chain; exit 0 intact, 1 broken, 2 error\n"
	"\n"
	"docs: README.md, docs/rule-packs.md, docs/protocol.md, docs/clients.md\n";

int main(int argc, char **argv)
{
	fsb_log_init();
	if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (strcmp(argv[1], "serve") == 0)
		return fsb_cli_serve(argc - 1, argv + 1);
	if (strcmp(argv[1], "run") == 0)
		return fsb_cli_run(argc - 1, argv + 1);
	if (strcmp(argv[1], "shell") == 0)
		return fsb_cli_shell(argc - 1, argv + 1);
	if (strcmp(argv[1], "approve") == 0)
		return fsb_cli_approve(argc - 1, argv + 1);
	if (strcmp(argv[1], "check") == 0)
		return fsb_cli_check(argc - 1, argv + 1);
	if (strcmp(argv[1], "backup") == 0)
		return fsb_cli_backup(argc - 1, argv + 1);
	if (strcmp(argv[1], "delete") == 0)
		return fsb_cli_delete(argc - 1, argv + 1);
	if (strcmp(argv[1], "audit") == 0)
		return fsb_cli_audit(argc - 1, argv + 1);
	fprintf(stderr, "fsbroker: unknown command '%s'\n\n%s", argv[1], usage);
	return 2;
}
