/*
 * session_name.h — the session of a workspace when no --session names one,
 * and the workspace a session records (see session_name.c).
 */
#ifndef FSB_SESSION_NAME_H
#define FSB_SESSION_NAME_H

#include <stdbool.h>
#include <stddef.h>

/** Room for a derived id, its NUL included. */
#define FSB_SESSION_NAME_LEN 64

/**
 * The session id of the workspace whose real path is `real`: its last
 * component with every byte outside [A-Za-z0-9._-] as '_', a leading '.'
 * as '_' and cut at 48 bytes ("root" for /), then '-' and the first 12 hex
 * digits of the SHA-256 of `real`, e.g. "my-app-3f2a9c01b7de". `len` must
 * be at least FSB_SESSION_NAME_LEN. 0 or -errno.
 */
int fsb_session_for_workspace(const char *real, char *out, size_t len);

/**
 * Record `ws` (a real path) as the workspace of `session` in
 * <state_dir>/sessions/<session>/workspace, which must exist; nothing is
 * written when it already says so. 0 or -errno.
 */
int fsb_session_note_workspace(const char *state_dir, const char *session, const char *ws);

/**
 * The workspace `session` recorded, into `out`. 0, -ENOENT when it
 * recorded none, or -errno.
 */
int fsb_session_workspace(const char *state_dir, const char *session, char *out, size_t len);

/**
 * The session a command run in the workspace whose real path is `real`
 * means when no --session names one: the one `real` names
 * (fsb_session_for_workspace) when <state_dir>/sessions has it; else the
 * session whose recorded workspace is `real` or holds it, the deepest;
 * else the state dir's only session when it records no workspace. Never a
 * session of another workspace. Into `out` (at least 129 bytes): 0,
 * -ENOENT when there is none, or -errno.
 */
int fsb_session_find(const char *state_dir, const char *real, char *out, size_t len);

#endif
