/*
 * write_grant.h — one write-open from its decision to the fd the client
 * gets (DESIGN §3.2, §6.1), the same for a text request (serve_text.c) and
 * for an open the supervisor serves (supervisor_open.c):
 *
 *   decide
 *   → journal the directory of a create (its mtime moves)
 *   → open without O_TRUNC, the backup of an existing file taken on the
 *     way (grant.h); a file that appeared since the decision (EEXIST
 *     without O_EXCL) is decided again, as a write, once
 *   → a backup over the size limit with onTooLarge = "ask": an ask, with
 *     the prompt block the change waits on
 *   → journal the create, or undo it and refuse
 *   → the audit line: no line, no grant (a file just created is removed)
 *   → O_TRUNC by ftruncate, or the grant withdrawn with a second line
 *   → note the grant, so the next backup of the file copies it again
 *
 * What differs between the callers is how a file is created (the
 * supervisor takes on the target's fsuid/fsgid) and what their audit line
 * holds; both are theirs to give.
 */
#ifndef FSB_WRITE_GRANT_H
#define FSB_WRITE_GRANT_H

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "broker.h"
#include "grant.h"
#include "modify_backup.h"

struct fsb_write_grant {
	/* in */
	struct fsb_broker *b;
	const char *session;
	int rootfd;		/* where acc's path is resolved and opened */
	int flags;		/* the client's open flags, O_TRUNC included */
	mode_t mode;
	bool no_open;		/* SANDBOX: the client opens the file itself; only
				 * the backup is taken (docs/protocol.md) */
	bool exact_mode;	/* a create gets exactly `mode`, the core's own
				 * umask undone (the target's was applied) */
	const char *backup_phase;	/* the audit phase of the backup line */
	/* Opens as fsb_grant_open() does (NULL: fsb_grant_open itself). */
	int (*open)(void *arg, const struct fsb_access *acc, int flags, mode_t mode,
		    fsb_grant_backup_fn backup, void *backup_arg);
	/* Writes the caller's audit line for `acc` and returns what
	 * fsb_broker_audit() returned; `grant` is "fd", "withdrawn" or NULL,
	 * `error` a sentence or NULL. */
	int (*audit)(void *arg, const struct fsb_access *acc, const char *grant, const char *error);
	void *arg;
	/* out */
	int fd;			/* the grant, or -1 */
	struct stat st;		/* its fstat, when fd >= 0 */
	bool audit_failed;	/* refused: its audit line could not be written */
	char why[512];		/* a refusal's sentence beyond the verdict */
	struct fsb_backup_outcome backup;
};

/**
 * Decide and grant `acc` (set up by the caller, not yet decided) as `g`
 * says. The outcome is in acc->verdict and acc->errnum (0: granted; g->fd
 * is the fd, or -1 with no_open), g->audit_failed and g->why.
 */
void fsb_write_grant(struct fsb_write_grant *g, struct fsb_access *acc);

#endif
