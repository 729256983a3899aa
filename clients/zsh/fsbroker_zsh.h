/*
 * fsbroker_zsh.h — the brokered file calls of the patched zsh.
 *
 * Copied into zsh's tree as Src/fsbroker_zsh.h and included at the end of
 * Src/zsh_system.h, so every zsh source file sees these prototypes. The
 * patch (zsh-fsbroker.patch) calls them at the few places where zsh itself
 * touches a file for the user: redirections, here-documents' temp files,
 * startup files and scripts, glob's directory reads and `cd`. The code is
 * in fsbroker_zsh.c, compiled by fsbroker's Makefile with its own warnings
 * and linked into zsh with build/clients/libfsbclient.a.
 *
 * Outside any broker (FSBROKER_SOCKET unset or empty) each call is the libc
 * call it replaces: the patched zsh is stock zsh. With a broker configured
 * nothing is opened, created or removed without the core's answer: a failed
 * exchange is EIO (fail closed), a refusal the core's errno, with the
 * reason kept for zsh's error message (fsbzsh_reason).
 */
#ifndef FSBROKER_ZSH_H
#define FSBROKER_ZSH_H

#include <dirent.h>
#include <sys/types.h>

/* open(2): a write intent is opened by the core (judged, backed up), a read
 * is asked and then opened here. */
int fsbzsh_open(const char *path, int flags, ...);

/* mkstemp(3) for the shell's own temp files ($TMPPREFIX): created by the
 * core, and remembered, so that fsbzsh_unlink removes it outright. */
int fsbzsh_mkstemp(char *template);

/* unlink(2): a host delete; a temp file of fsbzsh_mkstemp is unlinked, any
 * other file goes the pack's delete mode (the trash by default). */
int fsbzsh_unlink(const char *path);

/* opendir(3) of a directory the core allowed to be read (glob). */
DIR *fsbzsh_opendir(const char *path);

/* chdir(2) into a directory the core allowed to be read, through the
 * descriptor it allowed (fchdir): no name is looked up twice. */
int fsbzsh_chdir(const char *path);

/*
 * What zsh's "%e" error text appends: " (<the core's reason>)" when `err`
 * is the errno of the last brokered call's failure and the core (or the
 * library) gave a reason, else "". The reason is given once.
 */
const char *fsbzsh_reason(int err);

#endif
