/*
 * write_grant.c — one write-open from its decision to its fd (see
 * write_grant.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "call_stages.h"
#include "write_grant.h"

struct attempt {
	struct fsb_write_grant *g;
	struct fsb_access *acc;
};

/* Called by the open with a read-only fd on the inode it is about to hand
 * out for writing (grant.h). */
static int backup_opened_file(int rdfd, const struct stat *st, void *arg)
{
	struct attempt *a = arg;
	struct fsb_write_grant *g = a->g;
	enum fsb_stage was = fsb_stage_push(FSB_STAGE_BACKUP);
	int rc = fsb_backup_file(g->b, g->session, a->acc, rdfd, st, g->no_open ? 0 : g->flags,
				 g->backup_phase, &g->backup);

	fsb_stage_pop(was);
	if (rc < 0)
		snprintf(g->why, sizeof(g->why), "%s", g->backup.why);
	return rc;
}

/* SANDBOX: no fd is made, but the client will write the file: back it up
 * now, from a read-only fd on the inode judged. 0 or an errno. */
static int backup_for_the_client(struct attempt *a)
{
	struct stat st;
	int rdfd, rc;

	rdfd = fsb_grant_open_for_backup(a->g->rootfd, &a->acc->res);
	if (rdfd < 0)
		return -rdfd;
	rc = fstat(rdfd, &st) < 0 ? -errno : backup_opened_file(rdfd, &st, a);
	close(rdfd);
	return -rc;
}

static int open_file(struct attempt *a, int flags)
{
	struct fsb_write_grant *g = a->g;
	enum fsb_stage was = fsb_stage_push(FSB_STAGE_PERFORM);
	int fd;

	if (g->open != NULL)
		fd = g->open(g->arg, a->acc, flags, g->mode, backup_opened_file, a);
	else
		fd = fsb_grant_open(g->rootfd, &a->acc->res, flags, g->mode, backup_opened_file, a);
	fsb_stage_pop(was);
	return fd;
}

/* Decide, journal the parent of a create, open: twice at most, since a file
 * that appears between the decision and an O_CREAT open was judged as a
 * create and must be judged again as a write. */
static void decide_and_open(struct attempt *a)
{
	struct fsb_write_grant *g = a->g;
	struct fsb_access *acc = a->acc;
	enum fsb_stage was;
	int rc;

	for (int attempt = 0; attempt < 2; attempt++) {
		fsb_broker_decide(g->b, acc);
		if (acc->verdict.decision != FSB_ALLOW || acc->errnum != 0)
			return;
		if (g->no_open) {
			if (acc->res.exists && S_ISREG(acc->res.st.st_mode))
				acc->errnum = backup_for_the_client(a);
			return;
		}
		/* A create moves its directory's mtime: journaled first. */
		if (!acc->res.exists && (g->flags & O_CREAT)) {
			was = fsb_stage_push(FSB_STAGE_BACKUP);
			rc = fsb_backup_note_parent(g->b, g->session, acc);
			fsb_stage_pop(was);
			if (rc < 0) {
				acc->errnum = EIO;
				snprintf(g->why, sizeof(g->why), "the backup journal cannot be "
					 "written; nothing was created");
				return;
			}
		}
		/* O_TRUNC waits for the audit line: a grant refused for want of
		 * it must leave the file as it was. */
		g->fd = open_file(a, g->flags & ~O_TRUNC);
		if (g->fd >= 0)
			return;
		acc->errnum = -g->fd;
		g->fd = -1;
		if (acc->errnum != EEXIST || (g->flags & O_EXCL))
			return;
		acc->errnum = 0;
	}
	/* Appeared, and gone again, twice: as the kernel would have it. */
	acc->errnum = EEXIST;
}

/* Too large to back up, and the pack says ask: the change waits for the
 * host's approval of the block, like any ask. */
static void too_large_is_an_ask(struct fsb_write_grant *g, struct fsb_access *acc)
{
	if (acc->errnum != EACCES || g->backup.block_id[0] == '\0')
		return;
	acc->verdict.decision = FSB_ASK;
	snprintf(acc->verdict.rule, sizeof(acc->verdict.rule), "%s", FSB_TOO_LARGE_RULE);
	snprintf(acc->verdict.reason, sizeof(acc->verdict.reason), "%s", g->backup.why);
	snprintf(acc->block_id, sizeof(acc->block_id), "%s", g->backup.block_id);
}

/* Take back the file this grant created, and the fd. */
static void take_back(struct fsb_write_grant *g, const struct fsb_access *acc)
{
	if (g->fd < 0)
		return;
	if (!acc->res.exists)
		fsb_grant_undo_create(g->rootfd, &acc->res, g->fd);
	close(g->fd);
	g->fd = -1;
}

static bool granted(const struct fsb_access *acc)
{
	return acc->verdict.decision == FSB_ALLOW && acc->errnum == 0;
}

static int audit(struct fsb_write_grant *g, const struct fsb_access *acc, const char *grant,
		 const char *error)
{
	enum fsb_stage was = fsb_stage_push(FSB_STAGE_AUDIT);
	int rc = g->audit(g->arg, acc, grant, error);

	fsb_stage_pop(was);
	return rc;
}

/* After the open: journal a create, audit, set the mode, truncate, follow. */
static void finish(struct fsb_write_grant *g, struct fsb_access *acc)
{
	enum fsb_stage was;
	struct stat st;
	int rc, st_err = 0;

	/* The file opened, once for every use below. */
	if (g->fd >= 0 && fstat(g->fd, &st) < 0)
		st_err = errno;
	else if (g->fd >= 0)
		g->st = st;
	/* A file this grant creates (now, or the client after SANDBOX): the
	 * journal says it was absent, so a restore removes it. A create the
	 * journal cannot record is undone and refused. */
	if (granted(acc) && !acc->res.exists) {
		was = fsb_stage_push(FSB_STAGE_BACKUP);
		rc = fsb_backup_note_created(g->b, g->session, acc, g->flags,
					     g->fd >= 0 && st_err == 0 ? &st : NULL);
		fsb_stage_pop(was);
		if (rc < 0) {
			take_back(g, acc);
			acc->errnum = EIO;
			snprintf(g->why, sizeof(g->why), "the backup journal cannot be written; "
				 "nothing was created");
		}
	}
	/* No grant goes out whose audit line is not written. */
	if (audit(g, acc, g->fd >= 0 ? "fd" : NULL, g->why[0] ? g->why : NULL) < 0) {
		take_back(g, acc);
		g->audit_failed = true;
		acc->errnum = EIO;
		return;
	}
	if (g->fd < 0) {
		if (granted(acc) && acc->res.exists)
			fsb_backup_note_write_grant(g->b, g->session, -1, &acc->res.st);
		return;
	}
	if (st_err != 0) {
		acc->errnum = st_err;
		snprintf(g->why, sizeof(g->why), "cannot examine the file: %s", strerror(st_err));
		take_back(g, acc);
		audit(g, acc, "withdrawn", g->why);
		return;
	}
	/* The core's umask is not the holder's: a new file gets the mode it
	 * asked for, when the open did not give it that already. */
	if (!acc->res.exists && g->exact_mode && (st.st_mode & 07777) != (g->mode & 07777))
		fchmod(g->fd, g->mode & 07777);
	if ((g->flags & O_TRUNC) && S_ISREG(st.st_mode) && ftruncate(g->fd, 0) < 0) {
		acc->errnum = errno;
		snprintf(g->why, sizeof(g->why), "cannot truncate the file: %s", strerror(errno));
		close(g->fd);
		g->fd = -1;
		/* The line above said granted; this one says it was not. */
		audit(g, acc, "withdrawn", g->why);
		return;
	}
	/* Its holder may change the file from now on: the next backup of it
	 * in this cycle copies it again; a file the pack's backup.skip
	 * matches is not followed into the next cycle either. */
	was = fsb_stage_push(FSB_STAGE_BACKUP);
	fsb_backup_note_write_grant(g->b, g->session, acc->verdict.backup ? g->fd : -1, &st);
	fsb_stage_pop(was);
}

void fsb_write_grant(struct fsb_write_grant *g, struct fsb_access *acc)
{
	struct attempt a = { g, acc };
	enum fsb_stage was;

	g->fd = -1;
	g->audit_failed = false;
	g->why[0] = '\0';
	memset(&g->backup, 0, sizeof(g->backup));
	decide_and_open(&a);
	too_large_is_an_ask(g, acc);
	/* What is left is the open's own work (its mode, its truncate), with
	 * the journal and the audit line charged to themselves. */
	was = fsb_stage_push(FSB_STAGE_PERFORM);
	finish(g, acc);
	fsb_stage_pop(was);
}
