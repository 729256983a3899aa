/*
 * fsbc_hostop.c — host operations through the broker: one JSON
 * HostFileOperation line (docs/protocol.md), the core performs it, the reply
 * says ok or names the errno. The reply must answer this request (its id)
 * and be well-formed, or the call fails closed with EIO.
 */
/* Built by other projects' makefiles too (toybox, zsh): ask for what it
 * uses (MSG_CMSG_CLOEXEC, asprintf, PATH_MAX) whatever they define. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsbc_internal.h"

static const char *const op_names[] = {
	[FSBC_OP_DELETE] = "delete", [FSBC_OP_MKDIR] = "mkdir", [FSBC_OP_RENAME] = "rename",
	[FSBC_OP_COPY] = "copy",     [FSBC_OP_CHMOD] = "chmod", [FSBC_OP_LINK] = "link",
	[FSBC_OP_TOUCH] = "touch",
};

/* Which path fields an operation takes. */
static bool takes_path(enum fsbc_hostop_kind k)
{
	return k == FSBC_OP_DELETE || k == FSBC_OP_MKDIR || k == FSBC_OP_CHMOD ||
	       k == FSBC_OP_TOUCH;
}

/* Append one path field, made absolute and normalised. */
static int add_path(struct fsbc_buf *b, const char *field, const char *path)
{
	char abs[PATH_MAX];
	int rc = fsbc__path_absolute(path, abs, sizeof(abs));

	if (rc < 0)
		return fsbc__fail(FSBC_LOCAL, -rc, NULL);
	fsbc__json_path(b, field, abs);
	return 0;
}

static void add_id(struct fsbc_buf *b, const char *field, const char *value)
{
	if (value == NULL)
		return;
	fsbc__buf_printf(b, ",\"%s\":", field);
	fsbc__json_string(b, value);
}

/* The request line for `op`, with `id`. 0, or -1 with the failure set. */
static int build(struct fsbc_buf *b, const struct fsbc_hostop *op, const struct fsbc_conf *c,
		 const char *id)
{
	fsbc__buf_puts(b, "{\"id\":");
	fsbc__json_string(b, id);
	fsbc__buf_printf(b, ",\"command\":\"HostFileOperation\",\"operation\":\"%s\"",
			 op_names[op->op]);
	if (takes_path(op->op)) {
		if (add_path(b, "path", op->path) < 0)
			return -1;
	} else if (op->op == FSBC_OP_LINK && op->symbolic) {
		/* A symlink's content is what it says, relative or not. */
		if (op->from == NULL || op->from[0] == '\0')
			return fsbc__fail(FSBC_LOCAL, ENOENT, NULL);
		fsbc__json_path(b, "from", op->from);
		if (add_path(b, "to", op->to) < 0)
			return -1;
	} else if (add_path(b, "from", op->from) < 0 || add_path(b, "to", op->to) < 0) {
		return -1;
	}
	switch (op->op) {
	case FSBC_OP_DELETE:
		if (op->delete_mode != FSBC_DELETE_DEFAULT)
			fsbc__buf_printf(b, ",\"deleteMode\":\"%s\"",
					 op->delete_mode == FSBC_DELETE_UNLINK ? "unlink" : "trash");
		fsbc__buf_printf(b, ",\"recursive\":%s,\"force\":%s",
				 op->recursive ? "true" : "false", op->force ? "true" : "false");
		break;
	case FSBC_OP_MKDIR:
		fsbc__buf_printf(b, ",\"recursive\":%s", op->recursive ? "true" : "false");
		if (op->mode >= 0)
			fsbc__buf_printf(b, ",\"mode\":%d", op->mode & 07777);
		break;
	case FSBC_OP_CHMOD:
		if (op->mode < 0)
			return fsbc__fail(FSBC_LOCAL, EINVAL, "chmod needs a mode");
		fsbc__buf_printf(b, ",\"mode\":%d", op->mode & 07777);
		break;
	case FSBC_OP_COPY:
		fsbc__buf_printf(b, ",\"recursive\":%s", op->recursive ? "true" : "false");
		break;
	case FSBC_OP_LINK:
		fsbc__buf_printf(b, ",\"symbolic\":%s", op->symbolic ? "true" : "false");
		break;
	case FSBC_OP_RENAME:
	case FSBC_OP_TOUCH:
		break;
	}
	add_id(b, "sessionId", c->session);
	add_id(b, "toolCallId", c->tool_call);
	add_id(b, "brokerTraceId", c->trace);
	fsbc__buf_puts(b, "}\n");
	if (b->oom)
		return fsbc__fail(FSBC_LOCAL, ENOMEM, NULL);
	return 0;
}

static const char *member_str(const struct fsbc_jobj *o, const char *key)
{
	const struct fsbc_jmember *m = fsbc__json_get(o, key);

	return m != NULL && m->type == FSBC_J_STRING ? m->str : NULL;
}

/* ok:false: the errno the core named, and a reason a person can act on. */
static int failed(const struct fsbc_jobj *o)
{
	const char *name = member_str(o, "errno"), *error = member_str(o, "error");
	const char *rule = member_str(o, "rule"), *block = member_str(o, "blockId");
	const char *denied = member_str(o, "deniedPath");
	char path[PATH_MAX];
	int err = fsbc_errno_from_name(name);

	/* A failure without an errno we know is still a failure. */
	if (err == 0)
		err = EIO;
	if (denied == NULL && member_str(o, "deniedPathBytes") != NULL &&
	    fsbc__percent_decode(member_str(o, "deniedPathBytes"), path, sizeof(path)) == 0)
		denied = path;
	if (rule != NULL && block != NULL)
		return fsbc__fail(FSBC_REFUSED, err, "ask %s %s%s%s", block, rule,
				  denied ? " for " : "", denied ? denied : "");
	if (rule != NULL)
		return fsbc__fail(FSBC_REFUSED, err, "%s%s%s", rule, denied ? " for " : "",
				  denied ? denied : "");
	/* The sentence, unless it only repeats strerror(). */
	if (error != NULL && strcmp(error, strerror(err)) != 0)
		return fsbc__fail(FSBC_REFUSED, err, "%s", error);
	return fsbc__fail(FSBC_REFUSED, err, NULL);
}

int fsbc_host_op(const struct fsbc_hostop *op, struct fsbc_hostop_result *res)
{
	static unsigned long seq;
	struct fsbc_buf b = { 0 };
	const struct fsbc_conf *c;
	const struct fsbc_jmember *ok, *id, *changed;
	struct fsbc_jobj reply = { 0 };
	char idbuf[64], *line = NULL;
	const char *trashed;
	int rc, fd = -1;

	fsbc__clear();
	if (res != NULL) {
		res->changed = false;
		res->trashed_to[0] = '\0';
	}
	if (op == NULL || (unsigned)op->op > FSBC_OP_TOUCH)
		return fsbc__fail(FSBC_LOCAL, EINVAL, NULL);

	fsbc__lock();
	c = fsbc__conf();
	if (c == NULL) {
		fsbc__unlock();
		return fsbc__fail(FSBC_LOCAL, ENOMEM, NULL);
	}
	if (c->socket == NULL) {
		fsbc__unlock();
		return fsbc__fail(FSBC_NO_BROKER, ENOTCONN,
				  "no broker configured: FSBROKER_SOCKET is not set");
	}
	/* Under the lock: ids are unique within the process. */
	snprintf(idbuf, sizeof(idbuf), "fsbc-%ld-%lu", (long)getpid(), ++seq);
	if (build(&b, op, c, idbuf) < 0) {
		fsbc__unlock();
		free(b.p);
		return -1;
	}
	rc = fsbc__exchange(b.p, b.len, &line, &fd);
	free(b.p);
	if (rc < 0) {
		fsbc__unlock();
		return -1;
	}
	ok = NULL;
	/* A host operation never carries a descriptor; one that came is
	 * closed, and the reply is not believed. */
	if (fd >= 0 || fsbc__json_parse(line, &reply) < 0 ||
	    (id = fsbc__json_get(&reply, "id")) == NULL || id->type != FSBC_J_STRING ||
	    strcmp(id->str, idbuf) != 0 || (ok = fsbc__json_get(&reply, "ok")) == NULL ||
	    (ok->type != FSBC_J_TRUE && ok->type != FSBC_J_FALSE)) {
		if (fd >= 0)
			close(fd);
		fsbc__drop_connection();
		fsbc__unlock();
		rc = fsbc__fail(FSBC_LOST, EIO, "broker connection lost: a malformed reply '%.64s'",
				line);
		free(line);
		fsbc__json_free(&reply);
		return rc;
	}
	fsbc__unlock();
	free(line);
	if (ok->type == FSBC_J_FALSE) {
		rc = failed(&reply);
		fsbc__json_free(&reply);
		return rc;
	}
	if (res != NULL) {
		changed = fsbc__json_get(&reply, "changed");
		res->changed = changed == NULL || changed->type != FSBC_J_FALSE;
		if ((trashed = member_str(&reply, "trashedTo")) != NULL)
			snprintf(res->trashed_to, sizeof(res->trashed_to), "%s", trashed);
		else if ((trashed = member_str(&reply, "trashedToBytes")) != NULL &&
			 fsbc__percent_decode(trashed, res->trashed_to, sizeof(res->trashed_to)) < 0)
			res->trashed_to[0] = '\0';
	}
	fsbc__json_free(&reply);
	return 0;
}

/* ---- wrappers ----------------------------------------------------------- */

int fsbc_delete(const char *path, unsigned flags)
{
	struct fsbc_hostop op = { .op = FSBC_OP_DELETE, .path = path, .mode = -1,
				  .recursive = (flags & FSBC_RECURSIVE) != 0,
				  .force = (flags & FSBC_FORCE) != 0 };

	return fsbc_host_op(&op, NULL);
}

int fsbc_rename(const char *from, const char *to)
{
	struct fsbc_hostop op = { .op = FSBC_OP_RENAME, .from = from, .to = to, .mode = -1 };

	return fsbc_host_op(&op, NULL);
}

int fsbc_mkdir(const char *path, mode_t mode, bool parents)
{
	struct fsbc_hostop op = { .op = FSBC_OP_MKDIR, .path = path, .recursive = parents,
				  .mode = (int)(mode & 07777) };

	return fsbc_host_op(&op, NULL);
}

int fsbc_chmod(const char *path, mode_t mode)
{
	struct fsbc_hostop op = { .op = FSBC_OP_CHMOD, .path = path, .mode = (int)(mode & 07777) };

	return fsbc_host_op(&op, NULL);
}

int fsbc_link(const char *from, const char *to)
{
	struct fsbc_hostop op = { .op = FSBC_OP_LINK, .from = from, .to = to, .mode = -1 };

	return fsbc_host_op(&op, NULL);
}

int fsbc_symlink(const char *target, const char *linkpath)
{
	struct fsbc_hostop op = { .op = FSBC_OP_LINK, .from = target, .to = linkpath,
				  .symbolic = true, .mode = -1 };

	return fsbc_host_op(&op, NULL);
}

int fsbc_copy(const char *from, const char *to, bool recursive)
{
	struct fsbc_hostop op = { .op = FSBC_OP_COPY, .from = from, .to = to,
				  .recursive = recursive, .mode = -1 };

	return fsbc_host_op(&op, NULL);
}

int fsbc_touch(const char *path)
{
	struct fsbc_hostop op = { .op = FSBC_OP_TOUCH, .path = path, .mode = -1 };

	return fsbc_host_op(&op, NULL);
}
