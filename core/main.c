/*
 * main.c — the fsbroker command: dispatch to a subcommand, and the three
 * commands that belong to no other file: --version / version, and help.
 * Every subcommand keeps its own usage text next to its option parser;
 * `fsbroker help CMD [VERB]` asks that parser for it (CMD [VERB] --help),
 * so there is one text per subcommand.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "log.h"

#ifndef FSB_VERSION
#error "FSB_VERSION comes from the VERSION file (the Makefile passes it)"
#endif

static const char usage[] =
	"usage: fsbroker <command> [options]\n"
	"       fsbroker --version [--json]\n"
	"       fsbroker help [COMMAND [VERB]]\n"
	"\n"
	"Judge, back up and audit every file access of the commands an agent runs.\n"
	"`fsbroker COMMAND --help` (or `fsbroker help COMMAND`) describes each one.\n"
	"\n"
	"commands:\n"
	"  run       run a command sandboxed, every file change judged and backed up\n"
	"  serve     run the core for an agent host (client socket, control on stdin)\n"
	"  shell     run the patched zsh against a core embedded in this process\n"
	"  check     print the verdict a rule pack gives for paths\n"
	"  approve   approve a call a run left waiting, then rerun the command\n"
	"  backup    list, show, restore, undo, diff and prune backup cycles\n"
	"  ui        browse and restore backups in a web browser (a local page)\n"
	"  delete    ask the core to delete paths (to the trash, backed up first)\n"
	"  audit     verify an audit log's hash chain\n"
	"  hooks     install, remove and run an agent host's hooks (Claude Code,\n"
	"            Gemini CLI, Codex CLI)\n"
	"  version   print the version\n"
	"  help      print this text, or a command's\n"
	"\n"
	"options:\n"
	"  -h, --help      print this text\n"
	"  --version       print `fsbroker VERSION`; with --json {\"version\": \"...\"}\n"
	"\n"
	"exit: 0 done; 2 usage error (unknown command or option); each command\n"
	"  documents its own statuses\n"
	"environment: FSBROKER_LOG (error, warning, info, debug: how much the core logs\n"
	"  on stderr), FSBROKER_LUA_DIR (the directory holding policy/ and rules/),\n"
	"  FSBROKER_ZSH, FSBROKER_CLIENTS_BIN, FSBROKER_TOYBOX, FSBROKER_SOCKET,\n"
	"  FSBROKER_SESSION_ID, FSBROKER_TOOL_CALL_ID, FSBROKER_TIMEOUT_MS,\n"
	"  FSBROKER_TRACE_ID, FSBROKER_READS, FSBROKER_STAGE_TIMES,\n"
	"  FSBROKER_LAUNCH_AHEAD, FSBROKER_SYNC_WAKE_UP, FSBROKER_KEEP_AWAKE,\n"
	"  TMPDIR, TMPPREFIX, HOME, PATH, XDG_STATE_HOME, XDG_RUNTIME_DIR, XDG_DATA_HOME,\n"
	"  CLAUDE_PROJECT_DIR, GEMINI_PROJECT_DIR, NO_COLOR, TERM, PAGER; `fsbroker\n"
	"  help environment` says what each does, and each command which it reads\n"
	"docs: README.md, docs/cli.md, docs/runtime.md, docs/rule-packs.md,\n"
	"  docs/restore.md, docs/protocol.md, docs/clients.md\n";

static const char version_usage[] =
	"usage: fsbroker version [--json]\n"
	"       fsbroker --version [--json]\n"
	"\n"
	"Print the version of fsbroker: `fsbroker 0.9.0`, or with --json one JSON\n"
	"object, {\"version\": \"0.9.0\"}, for programs. The npm package and the\n"
	"rockspec carry the same version (the VERSION file of the source tree).\n"
	"\n"
	"options:\n"
	"  --json          print one JSON object\n"
	"  -h, --help      print this text\n"
	"\n"
	"exit: 0 printed, 2 usage error\n"
	"environment: none\n"
	"docs: CHANGELOG.md\n";

/* Every variable fsbroker, fsbroker-init, the client library and the
 * toybox dispatcher read, in one place: the ENVIRONMENT of fsbroker(1) is
 * this text (tools/man-fsbroker.sh), and tests/cli/man.sh checks it against
 * the getenv calls of the source. */
static const char environment_text[] =
	"usage: fsbroker help environment\n"
	"\n"
	"The environment variables fsbroker reads. Each command's --help names the\n"
	"ones that command reads.\n"
	"\n"
	"variables:\n"
	"  FSBROKER_LOG          how much the core logs on stderr: error, warning (or\n"
	"                        warn), info (the default) or debug\n"
	"  FSBROKER_LUA_DIR      the directory holding policy/ and rules/ (default:\n"
	"                        ../lua or ../share/fsbroker/lua beside the binary)\n"
	"  FSBROKER_ZSH          the patched zsh of `shell` and `run --shell zsh`\n"
	"                        (default: clients/zsh beside the binary, or\n"
	"                        ../libexec/fsbroker/clients/zsh)\n"
	"  FSBROKER_CLIENTS_BIN  the brokered toybox's shims put first on zsh's PATH\n"
	"                        (default: clients/bin beside the binary, or\n"
	"                        ../libexec/fsbroker/clients/bin)\n"
	"  FSBROKER_TOYBOX       the toybox the shims run (default: ../toybox beside\n"
	"                        the shims)\n"
	"  FSBROKER_SOCKET       the core's client socket, for `delete` and the\n"
	"                        brokered clients (set inside a sandbox)\n"
	"  FSBROKER_SESSION_ID   the session a client's requests belong to\n"
	"  FSBROKER_TOOL_CALL_ID the tool call a client's requests belong to\n"
	"  FSBROKER_TIMEOUT_MS   how long a client waits for the core (30000)\n"
	"  FSBROKER_TRACE_ID     sent with each client request, into the audit log\n"
	"  FSBROKER_READS        `sandbox`: brokered clients read files themselves\n"
	"                        instead of asking the core\n"
	"  FSBROKER_STAGE_TIMES  a file: each run's supervised calls append where\n"
	"                        their time went, stage by stage (docs/benchmarks.md)\n"
	"  FSBROKER_LAUNCH_AHEAD `0`: `fsbroker run` starts its sandbox only once\n"
	"                        the pack is loaded, not from the launch record\n"
	"                        while it loads (docs/runtime.md)\n"
	"  FSBROKER_SYNC_WAKE_UP `0`: supervisors keep the kernel's own wake-ups\n"
	"                        instead of asking for synchronous ones (Linux 6.6;\n"
	"                        docs/decisions.md)\n"
	"  FSBROKER_KEEP_AWAKE   `0`: no idle-class threads keep the CPUs awake\n"
	"                        during a burst of supervised calls\n"
	"                        (docs/decisions.md)\n"
	"  TMPDIR                the pack's ${tmp} (default: /tmp)\n"
	"  TMPPREFIX             zsh's here-document files (default: ${tmp}/zsh)\n"
	"  HOME                  the pack's ~ and the default state dir's base\n"
	"  PATH                  finds bwrap and CMD; zsh's PATH after the shims\n"
	"  XDG_STATE_HOME        the default state dir, $XDG_STATE_HOME/fsbroker\n"
	"                        (default: ~/.local/state/fsbroker)\n"
	"  XDG_RUNTIME_DIR       where a run's private socket directory is made\n"
	"                        (default: /tmp/fsb-UID); hidden in the sandbox\n"
	"  XDG_DATA_HOME         the home trash of `delete` and host deletes,\n"
	"                        $XDG_DATA_HOME/Trash (default: ~/.local/share/Trash)\n"
	"  CLAUDE_PROJECT_DIR    set by Claude Code for its hooks: the workspace of\n"
	"                        the session's core (`hooks run`; else the event's cwd)\n"
	"  GEMINI_PROJECT_DIR    the same, set by Gemini CLI for its hooks\n"
	"  NO_COLOR              set and not empty: `backup` colours nothing unless\n"
	"                        --color=always says to\n"
	"  TERM                  `dumb` (or unset): `backup` colours nothing by default\n"
	"  PAGER                 what long `backup list|show|diff|log` output goes\n"
	"                        through on a terminal (default: less -FRX; empty or\n"
	"                        `cat`: none)\n"
	"\n"
	"exit: 0 printed\n"
	"environment: none\n"
	"docs: docs/cli.md, docs/runtime.md, docs/clients.md\n";

static const char help_usage[] =
	"usage: fsbroker help [COMMAND [VERB]]\n"
	"       fsbroker help environment\n"
	"\n"
	"Print the usage text of COMMAND (of its VERB, for backup and audit) on\n"
	"stdout, the same text `fsbroker COMMAND [VERB] --help` prints; without a\n"
	"COMMAND the list of commands; `help environment` every environment\n"
	"variable fsbroker reads and what it does.\n"
	"\n"
	"options:\n"
	"  -h, --help      print this text\n"
	"\n"
	"exit: 0 printed, 2 no such command or verb\n"
	"environment: none\n"
	"docs: docs/cli.md\n";

/* A command name and the function that runs it. */
struct command {
	const char *name;
	int (*run)(int argc, char **argv);
};

static int cli_version(int argc, char **argv);
static int cli_help(int argc, char **argv);

static const struct command commands[] = {
	{ "serve", fsb_cli_serve },
	{ "run", fsb_cli_run },
	{ "shell", fsb_cli_shell },
	{ "approve", fsb_cli_approve },
	{ "check", fsb_cli_check },
	{ "backup", fsb_cli_backup },
	{ "ui", fsb_cli_ui },
	{ "delete", fsb_cli_delete },
	{ "audit", fsb_cli_audit },
	{ "hooks", fsb_cli_hooks },
	{ "version", cli_version },
	{ "help", cli_help },
};

static const struct command *find(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

static int cli_version(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, json = 0;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 'V':
			/* `fsbroker --version` arrives here as its own name. */
			break;
		case 'h':
			fputs(version_usage, stdout);
			return 0;
		default:
			return fsb_cli_bad_option("fsbroker version", argv, 2);
		}
	}
	if (optind != argc) {
		fprintf(stderr, "fsbroker version: takes no argument ('%s'); see fsbroker "
			"version --help\n", argv[optind]);
		return 2;
	}
	/* The version is digits and dots: nothing in it to escape. */
	if (json)
		printf("{\"version\": \"%s\"}\n", FSB_VERSION);
	else
		printf("fsbroker %s\n", FSB_VERSION);
	return 0;
}

static int cli_help(int argc, char **argv)
{
	const struct command *cmd;
	char help[] = "--help";
	char *sub[4];
	int n = 0;

	if (argc < 2) {
		fputs(usage, stdout);
		return 0;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		fputs(help_usage, stdout);
		return 0;
	}
	if (argv[1][0] == '-')
		return fsb_cli_unknown_option("fsbroker help", argv[1], 2);
	if (argc == 2 && strcmp(argv[1], "environment") == 0) {
		fputs(environment_text, stdout);
		return 0;
	}
	if ((cmd = find(argv[1])) == NULL) {
		fprintf(stderr, "fsbroker help: no command '%s'; see fsbroker help\n", argv[1]);
		return 2;
	}
	/* Only backup and audit have verbs: `help run ls` must not become
	 * `run ls --help`, a command run sandboxed. */
	if (argc > 3 || (argc == 3 && strcmp(argv[1], "backup") != 0 &&
			 strcmp(argv[1], "audit") != 0)) {
		fprintf(stderr, "fsbroker help: takes COMMAND [VERB] (a verb for backup and "
			"audit only), not '%s'; see fsbroker help --help\n", argv[argc - 1]);
		return 2;
	}
	sub[n++] = argv[1];
	if (argc == 3)
		sub[n++] = argv[2];
	sub[n++] = help;
	sub[n] = NULL;
	return cmd->run(n, sub);
}

int main(int argc, char **argv)
{
	const struct command *cmd;

	fsb_log_init();
	if (argc < 2) {
		fputs(usage, stderr);
		return 2;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		fputs(usage, stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0)
		return cli_version(argc, argv);
	cmd = find(argv[1]);
	if (cmd != NULL)
		return cmd->run(argc - 1, argv + 1);
	if (argv[1][0] == '-')
		return fsb_cli_unknown_option("fsbroker", argv[1], 2);
	fprintf(stderr, "fsbroker: unknown command '%s'; see fsbroker --help\n", argv[1]);
	return 2;
}
