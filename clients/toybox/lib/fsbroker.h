/*
 * lib/fsbroker.h — the brokered file calls of the patched toybox.
 *
 * Copied into toybox's tree as lib/fsbroker.h; the patch includes it at the
 * end of toys.h, after every system header, so that each of toybox's calls
 * below reaches a wrapper in lib/fsbroker.c instead
 * of libc:
 *
 *   open openat creat fopen freopen mkstemp truncate   -> a brokered open
 *   rename renameat                                    -> host rename
 *   unlink unlinkat rmdir                              -> host delete
 *   mkdir mkdirat                                      -> host mkdir
 *   link linkat symlink symlinkat                      -> host link
 *   chmod fchmodat                                     -> host chmod
 *   utimensat                                          -> host touch
 *   mknod mknodat mkfifo                               -> refused (EPERM)
 *
 * Outside any broker (FSBROKER_SOCKET unset or empty) every wrapper calls
 * libc as it was asked to: the patched toybox is stock toybox. With a broker
 * configured, nothing is written without the core's answer: a failure of the
 * exchange is EIO (fail closed), a refusal the core's errno with the reason
 * kept for the error message (see fsbtb_strerror).
 *
 * lib/fsbroker.c defines FSBTB_IMPLEMENTATION before including this file:
 * it must reach libc's own functions, so it gets the prototypes only.
 */
#ifndef FSBROKER_TOYBOX_H
#define FSBROKER_TOYBOX_H

#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

int fsbtb_open(const char *path, int flags, ...);
int fsbtb_openat(int dirfd, const char *path, int flags, ...);
int fsbtb_creat(const char *path, mode_t mode);
FILE *fsbtb_fopen(const char *path, const char *mode);
FILE *fsbtb_freopen(const char *path, const char *mode, FILE *stream);
int fsbtb_mkstemp(char *template);
int fsbtb_truncate(const char *path, off_t length);
int fsbtb_rename(const char *from, const char *to);
int fsbtb_renameat(int fromfd, const char *from, int tofd, const char *to);
int fsbtb_unlink(const char *path);
int fsbtb_unlinkat(int dirfd, const char *path, int flags);
int fsbtb_rmdir(const char *path);
int fsbtb_mkdir(const char *path, mode_t mode);
int fsbtb_mkdirat(int dirfd, const char *path, mode_t mode);
int fsbtb_link(const char *from, const char *to);
int fsbtb_linkat(int fromfd, const char *from, int tofd, const char *to, int flags);
int fsbtb_symlink(const char *target, const char *linkpath);
int fsbtb_symlinkat(const char *target, int dirfd, const char *linkpath);
int fsbtb_chmod(const char *path, mode_t mode);
int fsbtb_fchmodat(int dirfd, const char *path, mode_t mode, int flags);
int fsbtb_utimensat(int dirfd, const char *path, const struct timespec times[2], int flags);
int fsbtb_mknod(const char *path, mode_t mode, dev_t dev);
int fsbtb_mknodat(int dirfd, const char *path, mode_t mode, dev_t dev);
int fsbtb_mkfifo(const char *path, mode_t mode);

/* strerror(err), with " (<the core's reason>)" when err is the errno of the
 * last brokered call's refusal: what toybox's error messages print. */
const char *fsbtb_strerror(int err);

/* The dispatcher asked for fallback (FSBROKER_TOYBOX_FALLBACK set): a usage
 * error while the command line is parsed, or an applet this toybox does not
 * have, exits with FSBTB_UNSUPPORTED_EXIT and prints nothing, so that the
 * dispatcher runs the system's command instead. Read once by
 * fsbtb_fallback_init() and removed from the environment. */
#define FSBTB_UNSUPPORTED_EXIT 250
extern int fsbtb_parsing_args;
void fsbtb_fallback_init(void);
void fsbtb_unsupported(void);

#ifndef FSBTB_IMPLEMENTATION
#define open(...) fsbtb_open(__VA_ARGS__)
#define openat(...) fsbtb_openat(__VA_ARGS__)
#define creat(p, m) fsbtb_creat(p, m)
#define fopen(p, m) fsbtb_fopen(p, m)
#define freopen(p, m, s) fsbtb_freopen(p, m, s)
#define mkstemp(t) fsbtb_mkstemp(t)
#define truncate(p, l) fsbtb_truncate(p, l)
#define rename(f, t) fsbtb_rename(f, t)
#define renameat(a, f, b, t) fsbtb_renameat(a, f, b, t)
#define unlink(p) fsbtb_unlink(p)
#define unlinkat(d, p, f) fsbtb_unlinkat(d, p, f)
#define rmdir(p) fsbtb_rmdir(p)
#define mkdir(p, m) fsbtb_mkdir(p, m)
#define mkdirat(d, p, m) fsbtb_mkdirat(d, p, m)
#define link(f, t) fsbtb_link(f, t)
#define linkat(a, f, b, t, fl) fsbtb_linkat(a, f, b, t, fl)
#define symlink(t, l) fsbtb_symlink(t, l)
#define symlinkat(t, d, l) fsbtb_symlinkat(t, d, l)
#define chmod(p, m) fsbtb_chmod(p, m)
#define fchmodat(d, p, m, f) fsbtb_fchmodat(d, p, m, f)
#define utimensat(d, p, t, f) fsbtb_utimensat(d, p, t, f)
#define mknod(p, m, d) fsbtb_mknod(p, m, d)
#define mknodat(d, p, m, v) fsbtb_mknodat(d, p, m, v)
#define mkfifo(p, m) fsbtb_mkfifo(p, m)
#endif

#endif
