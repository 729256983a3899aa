/*
 * hostop.c — the host operations (see hostop.h). Each runs in four steps:
 *
 *   judge    every path it touches, and every entry beneath a directory it
 *            deletes, renames or copies, by the broker's decision path;
 *   back up  the state of each of those paths into the session's open
 *            cycle (a path it creates as absent), synced once;
 *   audit    one line saying what is about to happen; no line, no change;
 *   act      on a parent directory fd reached with RESOLVE_NO_SYMLINKS, by
 *            *at() calls on the final name, once the object there has been
 *            checked to be the one judged (device and inode).
 *
 * A host operation runs alone (work.h): no other request of ours — another
 * host operation, a write grant that could create an entry — comes between
 * its check of a directory and its change to it.
 *
 * This file runs an operation; the steps are in hostop_steps.c, each kind
 * in a file of its own (hostop_delete.c, hostop_mkdir.c, hostop_rename.c,
 * hostop_copy.c, hostop_meta.c), the state they share in hostop_internal.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "at.h"
#include "call_stages.h"
#include "hostop_internal.h"
#include "modify_backup.h"
#include "tree.h"


/* ---- the line after ----------------------------------------------------- */

/* The line after: what happened (or, when nothing was planned, why not). */
static void audit_after(struct hostop *h)
{
	enum fsb_stage was = fsb_stage_push(FSB_STAGE_AUDIT);
	struct fsb_audit_line l;

	hop_audit_line(h, &l, h->err);
	fsb_audit_line_str(&l, "result", h->err == 0 ? "done" : "failed");
	if (h->err != 0 && h->why[0])
		fsb_audit_line_str(&l, "error", h->why);
	fsb_audit_line_bool(&l, "changed", h->changed);
	if (h->trashed[0])
		fsb_audit_line_path(&l, "trashedTo", h->trashed);
	fsb_broker_audit_line(h->b, h->who->session, &l);
	fsb_stage_pop(was);
}

/* ---- the reply ---------------------------------------------------------- */

static cJSON *reply_of(struct hostop *h)
{
	const struct fsb_hostop_req *r = h->req;
	const struct fsb_access *a = &h->src, *t = &h->dst;
	cJSON *o = cJSON_CreateObject();
	const char *path = r->path != NULL ? r->path : r->from;
	bool bytes = r->path != NULL ? r->path_bytes : r->from_bytes;

	cJSON_AddItemToObject(o, "id", r->id != NULL ? cJSON_Duplicate(r->id, 1)
						      : cJSON_CreateNull());
	cJSON_AddBoolToObject(o, "ok", h->err == 0);
	cJSON_AddStringToObject(o, "operation", fsb_hostop_name(r->op));
	fsb_json_add_path(o, "path", path, bytes);
	if (h->src_real[0])
		fsb_json_add_path(o, "normalisedPath", h->src_real, bytes);
	else if (a->requested != NULL)
		fsb_json_add_path(o, "normalisedPath",
				  a->resolve_err == 0 && a->res.path[0] ? a->res.path
									 : a->normalised, bytes);
	if (r->to != NULL) {
		fsb_json_add_path(o, "to", r->to, r->to_bytes);
		if (t->requested != NULL)
			fsb_json_add_path(o, "normalisedTo",
					  t->resolve_err == 0 && t->res.path[0] ? t->res.path
										 : t->normalised,
					  r->to_bytes);
	}
	if (h->err == 0) {
		cJSON_AddStringToObject(o, "decision", "host-op");
		cJSON_AddBoolToObject(o, "changed", h->changed);
		if (h->trashed[0])
			fsb_json_add_path(o, "trashedTo", h->trashed, bytes);
		return o;
	}
	cJSON_AddStringToObject(o, "decision", "deny");
	cJSON_AddStringToObject(o, "errno", fsb_errno_name(h->err));
	if (h->refused != NULL) {
		const struct fsb_access *x = h->refused;

		cJSON_AddStringToObject(o, "error", x->verdict.reason[0] ? x->verdict.reason
									 : x->verdict.rule);
		cJSON_AddStringToObject(o, "rule", x->verdict.rule);
		if (x->block_id[0])
			cJSON_AddStringToObject(o, "blockId", x->block_id);
		if (h->denied[0])
			fsb_json_add_path(o, "deniedPath", h->denied, false);
	} else {
		cJSON_AddStringToObject(o, "error", h->why[0] ? h->why : strerror(h->err));
	}
	return o;
}

static void run(struct hostop *h)
{
	const struct fsb_hostop_req *req = h->req;
	struct fsb_broker *b = h->b;

	/* Before it starts: a verdict kept for a name is not taken once this
	 * may have moved or removed the name (fsb_broker_epoch). */
	if (req->op != FSB_HOSTOP_MKDIR && req->op != FSB_HOSTOP_CHMOD &&
	    req->op != FSB_HOSTOP_TOUCH)
		__atomic_add_fetch(&b->name_changes, 1, __ATOMIC_ACQ_REL);
	/* Decisions, backups and audit lines inside are charged to their own. */
	fsb_stage_push(FSB_STAGE_PERFORM);
	switch (req->op) {
	case FSB_HOSTOP_DELETE:
		hop_delete(h);
		break;
	case FSB_HOSTOP_MKDIR:
		if (req->recursive)
			hop_mkdir_parents(h);
		else
			hop_mkdir_one(h);
		break;
	case FSB_HOSTOP_RENAME:
		if (h->who->rename_exchange)
			hop_exchange(h);
		else
			hop_rename(h);
		break;
	case FSB_HOSTOP_COPY:
		hop_copy(h);
		break;
	case FSB_HOSTOP_CHMOD:
		hop_chmod(h);
		break;
	case FSB_HOSTOP_LINK:
		hop_link(h);
		break;
	case FSB_HOSTOP_TOUCH:
		hop_touch(h);
		break;
	}
	/* A refused or failed change leaves each file it kept by link with
	 * its name: a second link, shared with the store, must not stay. */
	for (size_t i = 0; h->err != 0 && i < h->nkept; i++)
		fsb_backup_unshare(b, h->who->session, h->kept[i]);
	audit_after(h);
	if (h->err == 0)
		b->stats.allowed++;
	else if (h->refused != NULL && h->refused->verdict.decision == FSB_ASK)
		b->stats.asked++;
	else
		b->stats.denied++;
}

static struct hostop *hostop_new(struct fsb_broker *b, const struct fsb_hostop_client *who,
				 const struct fsb_hostop_req *req)
{
	struct hostop *h = calloc(1, sizeof(*h));

	if (h == NULL)
		return NULL;
	h->b = b;
	h->who = who;
	h->rootfd = who->view_fd >= 0 ? who->view_fd : b->rootfd;
	h->req = req;
	return h;
}

static void hostop_free(struct hostop *h)
{
	free(h->kept);
	free(h->judged.keys);
	free(h->unsaved.keys);
	for (size_t i = 0; i < h->napproved; i++)
		free(h->approved[i].path);
	free(h->approved);
	for (size_t i = 0; i < h->ntoo_large; i++)
		free(h->too_large[i].path);
	free(h->too_large);
	free(h);
}

cJSON *fsb_hostop_run(struct fsb_broker *b, const struct fsb_hostop_client *who,
		      const struct fsb_hostop_req *req)
{
	struct hostop *h = hostop_new(b, who, req);
	cJSON *reply;

	if (h == NULL) {
		reply = cJSON_CreateObject();
		cJSON_AddFalseToObject(reply, "ok");
		cJSON_AddStringToObject(reply, "errno", "ENOMEM");
		cJSON_AddStringToObject(reply, "error", "out of memory; nothing was changed");
		return reply;
	}
	run(h);
	reply = reply_of(h);
	hostop_free(h);
	return reply;
}

int fsb_hostop_perform(struct fsb_broker *b, const struct fsb_hostop_client *who,
		       const struct fsb_hostop_req *req)
{
	struct hostop *h = hostop_new(b, who, req);
	int err;

	if (h == NULL)
		return -ENOMEM;
	run(h);
	err = h->err;
	hostop_free(h);
	return -err;
}
