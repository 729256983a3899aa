/*
 * cli.h — the subcommands of the one fsbroker binary. Each takes the
 * arguments after its name and returns the process exit status.
 */
#ifndef FSB_CLI_H
#define FSB_CLI_H

#include <stdbool.h>
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

/** `fsbroker backup du` of the store at STORE (cli_backup_du.c); the
 * exit status. */
int fsb_cli_backup_du(const char *store, const char *session, bool json);

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

/**
 * fsb_cli_json_error - with --json, an error as {"error": {"code": CODE,
 * "message": MESSAGE}} on one line of stdout (cli_json.c); the caller says
 * the sentence on stderr too and keeps its exit status. CODE is one of the
 * schema's (docs/schema/fsbroker.schema.json): usage, no-session, no-cycle,
 * open-cycle, no-tool-call, no-path, nothing-to-undo, nothing-to-redo, pack,
 * io, busy, refused.
 */
void fsb_cli_json_error(const char *code, const char *message);

/**
 * fsb_cli_json_pack_error - fsb_cli_json_error with code "pack" for a rule
 * pack's error as the loader words it, its file, line or field taken apart
 * ("FILE:LINE: …", "FILE: FIELD: …").
 */
void fsb_cli_json_pack_error(const char *err);

/**
 * fsb_cli_json_out - print V as a command's JSON output on stdout and
 * remember that something was printed (fsb_cli_json_printed): a command
 * that failed after printing its output adds no error object.
 */
struct cJSON;
void fsb_cli_json_out(const struct cJSON *v);
bool fsb_cli_json_printed(void);

/**
 * fsb_cli_json_code - name the error CODE of the failure being said, for the
 * error object; fsb_cli_json_reason(STATUS) gives it back, or "usage" for
 * exit status 2 and "io" for any other when none was named.
 */
void fsb_cli_json_code(const char *code);
const char *fsb_cli_json_reason(int status);

/* Where the patched zsh and the brokered toybox's shims are (cli_shell.c):
 * build/clients/zsh and build/clients/bin beside build/fsbroker, or
 * $FSBROKER_ZSH and $FSBROKER_CLIENTS_BIN. 0, or -1 with a sentence. */
int fsb_shell_clients(char *zsh, size_t zlen, char *bin, size_t blen, char *err, size_t errlen);

#endif
