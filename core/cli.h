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
/** `fsbroker hooks install|uninstall|run HOST …` (cli_hooks.c, hooks_*.c). */
int fsb_cli_hooks(int argc, char **argv);

/** `fsbroker ui …`: the backup browser (cli_ui.c). */
int fsb_cli_ui(int argc, char **argv);

/**
 * fsb_cli_unknown_option - say on stderr that PROG does not know the option
 * ARG ("fsbroker run: unknown option --frobnicate; see fsbroker run --help"),
 * without any "=VALUE" it carried. Returns STATUS, the exit status PROG gives
 * a usage error.
 */
int fsb_cli_unknown_option(const char *prog, const char *arg, int status);

/**
 * fsb_cli_bad_option - fsb_cli_unknown_option for the option getopt_long
 * (with opterr = 0) just answered '?' for, short or long. ARGV is the vector
 * getopt_long was given.
 */
int fsb_cli_bad_option(const char *prog, char **argv, int status);

/**
 * fsb_cli_option_error - the sentence fsb_cli_bad_option prints, without
 * "PROG: " and the newline, into BUF ("unknown option -Z; see PROG --help",
 * "--json takes no value; see PROG --help"), for a caller that keeps it.
 */
void fsb_cli_option_error(const char *prog, char **argv, char *buf, size_t len);

/* Where the patched zsh and the brokered toybox's shims are (cli_shell.c):
 * build/clients/zsh and build/clients/bin beside build/fsbroker, or
 * $FSBROKER_ZSH and $FSBROKER_CLIENTS_BIN. 0, or -1 with a sentence. */
int fsb_shell_clients(char *zsh, size_t zlen, char *bin, size_t blen, char *err, size_t errlen);

#endif
