/*
 * approval_files.c — deferred approvals in the session's state dir (see
 * approval_files.h). Every file is written under a temporary name, synced
 * and renamed into place, so a reader sees a whole file or none; every
 * directory on the way is opened beneath the state dir without following a
 * symlink, and must be the user's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "approval_files.h"
#include "broker.h"
#include "log.h"
#include "modify_backup.h"
#include "proto_json.h"

#define MAX_FILE 65536

/*
 * <state>/sessions/<session>/approvals, opened for reading (and fsync).
 * With `create`, missing steps are made 0700. -ENOENT when it is missing,
 * -EPERM when a step is not the user's or others may write it.
 */
static int open_dir(const char *state_dir, const char *session, bool create)
{
	const char *steps[3] = { "sessions", session, "approvals" };
	struct stat st;
	int fd, next;

	if (!fsb_id_valid(session))
		return -EINVAL;
	fd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (int i = 0; i < 3; i++) {
		if (create && mkdirat(fd, steps[i], 0700) < 0 && errno != EEXIST) {
			next = -errno;
			close(fd);
			return next;
		}
		next = openat(fd, steps[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		if (next < 0)
			return errno == ELOOP ? -EPERM : -errno;
		fd = next;
		/* Nobody else may put an approval here. */
		if (fstat(fd, &st) < 0 || st.st_uid != getuid() || (st.st_mode & 022) != 0 ||
		    (i == 2 && (st.st_mode & 077) != 0)) {
			close(fd);
			return -EPERM;
		}
	}
	return fd;
}

static cJSON *rec_to_json(const struct fsb_approval_rec *r)
{
	cJSON *o = cJSON_CreateObject();
	char num[32];

	cJSON_AddStringToObject(o, "blockId", r->block_id);
	cJSON_AddStringToObject(o, "op", fsb_op_name(r->op));
	fsb_json_add_path(o, "path", r->path, false);
	cJSON_AddBoolToObject(o, "exists", r->exists);
	if (r->exists) {
		/* As strings: an inode number may not fit a double. */
		snprintf(num, sizeof(num), "%llu", (unsigned long long)r->dev);
		cJSON_AddStringToObject(o, "dev", num);
		snprintf(num, sizeof(num), "%llu", (unsigned long long)r->ino);
		cJSON_AddStringToObject(o, "ino", num);
	}
	cJSON_AddStringToObject(o, "rule", r->rule);
	cJSON_AddStringToObject(o, "sessionId", r->session);
	cJSON_AddStringToObject(o, "toolCallId", r->tool_call);
	if (r->scope[0])
		cJSON_AddStringToObject(o, "scope", r->scope);
	cJSON_AddNumberToObject(o, "time", (double)time(NULL));
	return o;
}

static bool get_str(const cJSON *o, const char *name, char *out, size_t len)
{
	const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, name));

	if (v == NULL || strlen(v) >= len)
		return false;
	memcpy(out, v, strlen(v) + 1);
	return true;
}

static bool get_num(const cJSON *o, const char *name, unsigned long long *out)
{
	const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, name));
	char *end;

	if (v == NULL || v[0] < '0' || v[0] > '9')
		return false;
	errno = 0;
	*out = strtoull(v, &end, 10);
	return errno == 0 && *end == '\0';
}

static int rec_from_json(const cJSON *o, struct fsb_approval_rec *r)
{
	char op[32];
	const char *bytes;
	unsigned long long dev, ino;

	memset(r, 0, sizeof(*r));
	if (!get_str(o, "blockId", r->block_id, sizeof(r->block_id)) ||
	    !get_str(o, "op", op, sizeof(op)) || fsb_op_parse(op, &r->op) < 0 ||
	    !get_str(o, "rule", r->rule, sizeof(r->rule)) ||
	    !get_str(o, "sessionId", r->session, sizeof(r->session)))
		return -EBADMSG;
	get_str(o, "toolCallId", r->tool_call, sizeof(r->tool_call));
	get_str(o, "scope", r->scope, sizeof(r->scope));
	if (!get_str(o, "path", r->path, sizeof(r->path))) {
		char *dec;

		bytes = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "pathBytes"));
		if (bytes == NULL || (dec = fsb_percent_decode(bytes)) == NULL)
			return -EBADMSG;
		if (strlen(dec) >= sizeof(r->path)) {
			free(dec);
			return -EBADMSG;
		}
		memcpy(r->path, dec, strlen(dec) + 1);
		free(dec);
	}
	if (r->path[0] != '/')
		return -EBADMSG;
	r->exists = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "exists"));
	if (r->exists) {
		if (!get_num(o, "dev", &dev) || !get_num(o, "ino", &ino))
			return -EBADMSG;
		r->dev = (dev_t)dev;
		r->ino = (ino_t)ino;
	}
	return 0;
}

/* Write `o` to `name` in `dirfd`: a temporary name, synced, renamed. */
static int write_file(int dirfd, const char *name, const cJSON *o)
{
	char tmp[128], *text = fsb_json_print(o, false);
	size_t len, off = 0;
	int fd, rc = 0;

	if (text == NULL)
		return -ENOMEM;
	snprintf(tmp, sizeof(tmp), ".%s.%ld.tmp", name, (long)getpid());
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = -errno;
		free(text);
		return rc;
	}
	len = strlen(text);
	text[len++] = '\n';
	while (off < len && rc == 0) {
		ssize_t n = write(fd, text + off, len - off);

		if (n < 0 && errno != EINTR)
			rc = -errno;
		else if (n > 0)
			off += (size_t)n;
	}
	free(text);
	if (rc == 0 && fsync(fd) < 0)
		rc = -errno;
	close(fd);
	if (rc == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
		rc = -errno;
	if (rc < 0)
		unlinkat(dirfd, tmp, 0);
	else
		fsync(dirfd);
	return rc;
}

/* Read and parse `name` in `dirfd`: a regular file of at most MAX_FILE. */
static int read_file(int dirfd, const char *name, struct fsb_approval_rec *r)
{
	char *buf;
	struct stat st;
	ssize_t n;
	cJSON *o;
	int fd, rc;

	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP ? -EPERM : -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > MAX_FILE ||
	    st.st_uid != getuid()) {
		close(fd);
		return -EPERM;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (buf == NULL) {
		close(fd);
		return -ENOMEM;
	}
	n = read(fd, buf, (size_t)st.st_size);
	close(fd);
	if (n < 0) {
		free(buf);
		return -EIO;
	}
	buf[n] = '\0';
	o = cJSON_Parse(buf);
	free(buf);
	rc = cJSON_IsObject(o) ? rec_from_json(o, r) : -EBADMSG;
	cJSON_Delete(o);
	return rc;
}

int fsb_approvals_save_blocks(struct fsb_broker *b, const char *session, const char *tool_call)
{
	struct fsb_approval_rec *recs;
	size_t n = 0;
	int dirfd, rc = 0, written = 0;

	if (!b->cfg.state_dir[0] || b->prompts == NULL)
		return 0;
	fsb_broker_lock(b);
	recs = calloc(b->prompts->n + 1, sizeof(*recs));
	for (size_t i = 0; recs != NULL && i < b->prompts->n; i++) {
		const struct fsb_prompt *p = &b->prompts->v[i];
		struct fsb_approval_rec *r = &recs[n];

		/* A too-large backup's block is kept too: approving it lets the
		 * rerun change that very file without a copy. */
		if (p->answer != 0 || strcmp(p->session, session) != 0 ||
		    (tool_call != NULL && strcmp(p->tool_call, tool_call) != 0) ||
		    strlen(p->path) >= sizeof(r->path))
			continue;
		snprintf(r->block_id, sizeof(r->block_id), "%s", p->id);
		r->op = p->op;
		snprintf(r->path, sizeof(r->path), "%s", p->path);
		r->exists = p->exists;
		r->dev = p->dev;
		r->ino = p->ino;
		snprintf(r->rule, sizeof(r->rule), "%s", p->rule);
		snprintf(r->session, sizeof(r->session), "%s", p->session);
		snprintf(r->tool_call, sizeof(r->tool_call), "%s", p->tool_call);
		n++;
	}
	fsb_broker_unlock(b);
	if (recs == NULL)
		return -ENOMEM;
	if (n == 0) {
		free(recs);
		return 0;
	}
	dirfd = open_dir(b->cfg.state_dir, session, true);
	if (dirfd < 0) {
		free(recs);
		fsb_warn("cannot keep the prompt blocks of session %s in its state dir: %s",
			 session, strerror(-dirfd));
		return dirfd;
	}
	for (size_t i = 0; i < n; i++) {
		char name[96];
		cJSON *o = rec_to_json(&recs[i]);

		snprintf(name, sizeof(name), "%s.block", recs[i].block_id);
		rc = write_file(dirfd, name, o);
		cJSON_Delete(o);
		if (rc < 0)
			fsb_warn("cannot keep prompt block %s: %s", recs[i].block_id, strerror(-rc));
		else
			written++;
	}
	close(dirfd);
	free(recs);
	return written;
}

int fsb_approvals_record(const char *state_dir, const char *session, const char *block_id,
			 const char *scope, struct fsb_approval_rec *out, char *err, size_t errlen)
{
	char block[96], approval[96];
	struct stat st;
	cJSON *o;
	int dirfd, rc;

	if (!fsb_id_valid(block_id) || strlen(block_id) > 60) {
		snprintf(err, errlen, "'%s' is not a block id (blk-...)", block_id);
		return -EINVAL;
	}
	dirfd = open_dir(state_dir, session, false);
	if (dirfd < 0) {
		if (dirfd == -ENOENT)
			snprintf(err, errlen, "session %s has no prompt block waiting in %s",
				 session, state_dir);
		else
			snprintf(err, errlen, "cannot open the approvals of session %s in %s: %s",
				 session, state_dir, dirfd == -EPERM
				 ? "a directory on the way is not yours, or others may write it"
				 : strerror(-dirfd));
		return dirfd;
	}
	snprintf(block, sizeof(block), "%s.block", block_id);
	snprintf(approval, sizeof(approval), "%s.approval", block_id);
	rc = read_file(dirfd, block, out);
	if (rc == -ENOENT) {
		if (fstatat(dirfd, approval, &st, AT_SYMLINK_NOFOLLOW) == 0)
			snprintf(err, errlen, "block %s of session %s is approved already", block_id,
				 session);
		else
			snprintf(err, errlen, "session %s has no prompt block %s waiting (see the "
				 "summary of the run that asked)", session, block_id);
		goto out;
	}
	if (rc < 0) {
		snprintf(err, errlen, "block %s of session %s cannot be read: %s", block_id,
			 session, rc == -EBADMSG ? "it is malformed" : strerror(-rc));
		goto out;
	}
	/* The file's name is the block it holds, in the session it lies in. */
	if (strcmp(out->block_id, block_id) != 0 || strcmp(out->session, session) != 0) {
		snprintf(err, errlen, "block file %s does not hold block %s of session %s", block,
			 block_id, session);
		rc = -EBADMSG;
		goto out;
	}
	snprintf(out->scope, sizeof(out->scope), "%s", scope);
	o = rec_to_json(out);
	rc = write_file(dirfd, approval, o);
	cJSON_Delete(o);
	if (rc < 0) {
		snprintf(err, errlen, "cannot write the approval: %s", strerror(-rc));
		goto out;
	}
	unlinkat(dirfd, block, 0);
	fsync(dirfd);
out:
	close(dirfd);
	return rc;
}

static bool loaded_already(const struct fsb_broker *b, const char *session, const char *id)
{
	for (size_t i = 0; i < b->napproval_files; i++)
		if (strcmp(b->approval_files[i].rec.session, session) == 0 &&
		    strcmp(b->approval_files[i].rec.block_id, id) == 0)
			return true;
	return false;
}

/*
 * An approval of a too-large backup's block: that very file (path and
 * inode) may be changed without a copy. A "once" one is used up here, as
 * it is loaded (its file removed), so that no later core grants it again;
 * the rerun the summary printed is the one it is for.
 */
static int load_too_large(struct fsb_broker *b, int dirfd, const struct fsb_approval_rec *r)
{
	struct fsb_prompt p;
	char name[96];

	memset(&p, 0, sizeof(p));
	p.path = (char *)r->path;
	p.session = (char *)r->session;
	p.exists = r->exists;
	p.dev = r->dev;
	p.ino = r->ino;
	if (!r->exists || fsb_backup_approve_too_large(b, &p, r->scope) < 0)
		return -EINVAL;
	if (strcmp(r->scope, "once") != 0)
		return 0;
	snprintf(name, sizeof(name), "%s.approval", r->block_id);
	if (unlinkat(dirfd, name, 0) < 0)
		fsb_error("once approval %s was loaded but its file cannot be removed: %s",
			  r->block_id, strerror(errno));
	fsync(dirfd);
	return 0;
}

/* One approval file into the pack (the broker's lock held). */
static int load_one(struct fsb_broker *b, int dirfd, const char *session,
		    const struct fsb_approval_rec *r)
{
	struct fsb_approval_file *grown;
	cJSON *rec;

	if (strcmp(r->session, session) != 0 ||
	    (strcmp(r->scope, "once") != 0 && strcmp(r->scope, "session") != 0))
		return -EBADMSG;
	grown = realloc(b->approval_files, (b->napproval_files + 1) * sizeof(*grown));
	if (grown == NULL)
		return -ENOMEM;
	b->approval_files = grown;
	if (strcmp(r->rule, FSB_TOO_LARGE_RULE) == 0) {
		if (load_too_large(b, dirfd, r) < 0)
			return -EINVAL;
	/* An approval only turns the pack's ask into an allow: a deny stays a
	 * deny, and a pack reloaded later judges the request first again. */
	} else if (fsb_policy_approve(b->policy, r->op, r->path, r->exists, r->dev, r->ino,
				      r->scope, r->session) < 0) {
		return -EINVAL;
	}
	fsb_broker_verdicts_changed(b);
	memset(&grown[b->napproval_files], 0, sizeof(*grown));
	grown[b->napproval_files++].rec = *r;
	rec = cJSON_CreateObject();
	cJSON_AddStringToObject(rec, "phase", "approval-loaded");
	cJSON_AddStringToObject(rec, "session", r->session);
	cJSON_AddStringToObject(rec, "toolCallId", r->tool_call);
	cJSON_AddStringToObject(rec, "blockId", r->block_id);
	cJSON_AddStringToObject(rec, "op", fsb_op_name(r->op));
	fsb_json_add_path(rec, "path", r->path, false);
	cJSON_AddStringToObject(rec, "rule", r->rule);
	cJSON_AddStringToObject(rec, "scope", r->scope);
	fsb_broker_audit(b, session, rec);
	return 0;
}

int fsb_approvals_load(struct fsb_broker *b, const char *session)
{
	struct fsb_approval_rec r;
	struct dirent *e;
	DIR *d;
	int dirfd, dupfd, loaded = 0;

	if (!b->cfg.state_dir[0] || b->cfg.one_shot)
		return 0;
	dirfd = open_dir(b->cfg.state_dir, session, false);
	if (dirfd == -ENOENT)
		return 0;
	if (dirfd < 0) {
		fsb_warn("the approvals of session %s are not loaded: %s", session,
			 dirfd == -EPERM ? "a directory on the way is not yours, or others may "
			 "write it" : strerror(-dirfd));
		return dirfd;
	}
	dupfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	if (dupfd < 0 || (d = fdopendir(dupfd)) == NULL) {
		if (dupfd >= 0)
			close(dupfd);
		close(dirfd);
		return -ENOMEM;
	}
	while ((e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);
		char id[96];
		int rc;

		if (len <= 9 || strcmp(e->d_name + len - 9, ".approval") != 0 ||
		    e->d_name[0] == '.' || len - 9 >= sizeof(id))
			continue;
		memcpy(id, e->d_name, len - 9);
		id[len - 9] = '\0';
		fsb_broker_lock(b);
		rc = loaded_already(b, session, id) ? 1 : read_file(dirfd, e->d_name, &r);
		if (rc == 0 && strcmp(r.block_id, id) != 0)
			rc = -EBADMSG;
		if (rc == 0)
			rc = load_one(b, dirfd, session, &r);
		fsb_broker_unlock(b);
		if (rc == 0)
			loaded++;
		else if (rc < 0)
			fsb_warn("approval %s of session %s not loaded: %s", e->d_name, session,
				 rc == -EBADMSG ? "malformed" : strerror(-rc));
	}
	closedir(d);
	close(dirfd);
	return loaded;
}

void fsb_approvals_note_decision(struct fsb_broker *b, const struct fsb_access *d)
{
	const char *path = d->resolve_err == 0 ? d->res.path : d->normalised;
	bool exists = d->resolve_err == 0 && d->res.exists;

	if (d->peek || b->napproval_files == 0 ||
	    d->verdict.origin != FSB_BY_APPROVAL_ONCE)
		return;
	for (size_t i = 0; i < b->napproval_files; i++) {
		struct fsb_approval_file *f = &b->approval_files[i];
		char name[96];
		int dirfd;

		if (f->used || strcmp(f->rec.scope, "once") != 0 || f->rec.op != d->op ||
		    strcmp(f->rec.session, d->session ? d->session : "") != 0 ||
		    strcmp(f->rec.path, path) != 0 || f->rec.exists != exists ||
		    (exists && (f->rec.dev != d->res.st.st_dev || f->rec.ino != d->res.st.st_ino)))
			continue;
		/* Used up: no later core may grant it again. */
		f->used = true;
		dirfd = open_dir(b->cfg.state_dir, f->rec.session, false);
		snprintf(name, sizeof(name), "%s.approval", f->rec.block_id);
		if (dirfd < 0 || unlinkat(dirfd, name, 0) < 0)
			fsb_error("once approval %s was used but its file cannot be removed: %s",
				  f->rec.block_id, strerror(dirfd < 0 ? -dirfd : errno));
		if (dirfd >= 0) {
			fsync(dirfd);
			close(dirfd);
		}
	}
}

void fsb_approvals_free(struct fsb_broker *b)
{
	free(b->approval_files);
	b->approval_files = NULL;
	b->napproval_files = 0;
}
