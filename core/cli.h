/*
 * cli.h — the subcommands of the one fsbroker binary. Each takes the
 * arguments after its name and returns the process exit status.
 */
#ifndef FSB_CLI_H
#define FSB_CLI_H

#include <stddef.h>

int fsb_cli_serve(int argc, char **argv);
int fsb_cli_run(int argc, char **argv);
int fsb_cli_approve(int argc, char **argv);
int fsb_cli_check(int argc, char **argv);
int fsb_cli_audit(int argc, char **argv);
int fsb_cli_backup(int argc, char **argv);
int fsb_cli_delete(int argc, char **argv);
int fsb_cli_shell(int argc, char **argv);

/**
 * fsb_cli_unknown_option - say on stderr that PROG does not know the option
 * ARG ("fsbroker run: unknown option --frobnicate; see fsbroker run --help"),
 * without any "=VALUE" it carried. Returns STATUS, the exit status PROG gives
 * a usage error.
 */
int fsb_cli_unknown_option(const char *prog, const char *arg, int status);

/* Where the patched zsh and the brokered toybox's shims are (cli_shell.c):
 * build/clients/zsh and build/clients/bin beside build/fsbroker, or
 * $FSBROKER_ZSH and $FSBROKER_CLIENTS_BIN. 0, or -1 with a sentence. */
int fsb_shell_clients(char *zsh, size_t zlen, char *bin, size_t blen, char *err, size_t errlen);

#endif
