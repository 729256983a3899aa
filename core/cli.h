/*
 * cli.h — the subcommands of the one fsbroker binary. Each takes the
 * arguments after its name and returns the process exit status.
 */
#ifndef FSB_CLI_H
#define FSB_CLI_H

int fsb_cli_serve(int argc, char **argv);
int fsb_cli_run(int argc, char **argv);
int fsb_cli_approve(int argc, char **argv);
int fsb_cli_check(int argc, char **argv);
int fsb_cli_audit(int argc, char **argv);
int fsb_cli_backup(int argc, char **argv);
int fsb_cli_delete(int argc, char **argv);

#endif
