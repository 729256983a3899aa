/*
 * modify_backup.c — the broker's use of the backup store (see
 * modify_backup.h). Permission was checked before anything here runs:
 * nothing is backed up for a request that is denied or waits for approval.
 *
 * Every use of a session's store holds its store_lock; what the pack and
 * the host set (the size limit, backups on or off) is copied under the
 * broker's lock first, since a reload may replace the pack meanwhile.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "modify_backup.h"
#include "proto_json.h"

static struct fsb_store *store_of(struct fsb_broker *b, struct fsb_session *s,
				  char *why, size_t whylen)
{
	int rc;

	if (s->store == NULL &&
	    (rc = fsb_store_open(b->cfg.state_dir, s->id, &s->store, why, whylen)) < 0) {
		fsb_error("backup store of session %s: %s", s->id, why);
		s->store = NULL;
	}
	return s->store;
}

/* What a backup in session `s` obeys, taken under the broker's lock. */
struct settings {
	bool enabled;
	uint64_t max_bytes;
	enum fsb_on_too_large on_too_large;
};

static void settings_of(struct fsb_broker *b, struct fsb_session *s, struct settings *out)
{
	const struct fsb_backup_settings *set;

	fsb_broker_lock(b);
	set = fsb_policy_backup(b->policy);
	out->enabled = s->backup_enabled;
	out->max_bytes = s->max_bytes_override ? s->max_bytes_override : set->max_bytes;
	out->on_too_large = set->on_too_large;
	fsb_broker_unlock(b);
}

/* Fill in the size limit and record `r`; the store lock is held. */
static int record(struct fsb_session *s, const struct settings *set,
		  struct fsb_backup_req *r, struct fsb_backup_result *res)
{
	r->max_bytes = set->max_bytes;
	r->on_too_large = set->on_too_large == FSB_ON_TOO_LARGE_ALLOW ? FSB_TOO_LARGE_SKIP
									: FSB_TOO_LARGE_FAIL;
	return fsb_store_record(s->store, r, res);
}

/* The sentence for a failed record; every error but the two a user can act
 * on becomes -EIO (the reason is in `why`; the client needs only "no"). */
static int explain(int rc, const struct fsb_backup_req *r, const struct settings *set,
		   char *why, size_t whylen)
{
	switch (rc) {
	case 0:
		return 0;
	case -EFBIG:
		snprintf(why, whylen, "%s is larger than the backup limit of %llu MiB and "
			 "the pack says onTooLarge = \"%s\"; raise backup.maxSizeMB or "
			 "EnableModifyBackup.fileBackupMaxSizeMB", r->resolved,
			 (unsigned long long)(r->max_bytes >> 20),
			 set->on_too_large == FSB_ON_TOO_LARGE_DENY ? "deny" : "ask");
		return rc;
	case -ENOSPC:
		snprintf(why, whylen, "no space left for the backup; nothing was changed");
		return rc;
	default:
		snprintf(why, whylen, "the backup failed (%s); nothing was changed",
			 strerror(-rc));
		return -EIO;
	}
}

int fsb_backup_file(struct fsb_broker *b, const char *sid, const struct fsb_access *acc,
		    int rdfd, const struct stat *st, int flags, const char *phase,
		    const char **skipped, char *why, size_t whylen)
{
	struct fsb_session *s = fsb_broker_session(b, sid);
	struct fsb_backup_result res;
	struct fsb_backup_req r;
	struct settings set;
	unsigned cycle = 0;
	cJSON *rec;
	int rc;

	if (s == NULL) {
		snprintf(why, whylen, "the session has no state to keep a backup in");
		return -EIO;
	}
	if (skipped != NULL)
		*skipped = NULL;
	settings_of(b, s, &set);
	if (!set.enabled) {
		if (skipped != NULL)
			*skipped = "disabled";
		return 0;
	}
	memset(&r, 0, sizeof(r));
	memset(&res, 0, sizeof(res));
	r.tool_call = acc->tool_call;
	r.op = fsb_op_name(acc->op);
	r.flags = flags;
	r.path = acc->requested;
	r.resolved = acc->res.path;
	r.prior = st;
	r.fd = rdfd;
	r.skip_content = !acc->verdict.backup;
	pthread_mutex_lock(&s->store_lock);
	if (store_of(b, s, why, whylen) == NULL) {
		pthread_mutex_unlock(&s->store_lock);
		return -EIO;
	}
	rc = record(s, &set, &r, &res);
	cycle = fsb_store_cycle(s->store);
	pthread_mutex_unlock(&s->store_lock);

	rec = fsb_access_audit_record(acc, phase);
	cJSON_AddNumberToObject(rec, "cycle", cycle);
	if (res.object[0])
		cJSON_AddStringToObject(rec, "backupObject", res.object);
	if (res.reused)
		cJSON_AddTrueToObject(rec, "backupReused");
	if (res.skipped != NULL)
		cJSON_AddStringToObject(rec, "backupSkipped", res.skipped);
	if (rc < 0)
		cJSON_AddStringToObject(rec, "backupErrno", fsb_errno_name(-rc));
	/* An unaudited backup is a change nobody can trace: refuse it. */
	if (fsb_broker_audit(b, sid, rec) < 0 && rc == 0) {
		snprintf(why, whylen, "the audit log cannot be written");
		return -EIO;
	}
	if (rc == 0 && skipped != NULL)
		*skipped = res.skipped;
	return explain(rc, &r, &set, why, whylen);
}

int fsb_backup_entry(struct fsb_broker *b, const char *sid, const struct fsb_backup_entry *e,
		     struct fsb_backup_result *res, char *why, size_t whylen)
{
	struct fsb_session *s = fsb_broker_session(b, sid);
	struct fsb_backup_req r;
	struct settings set;
	int rc;

	memset(res, 0, sizeof(*res));
	if (s == NULL) {
		snprintf(why, whylen, "the session has no state to keep a backup in");
		return -EIO;
	}
	settings_of(b, s, &set);
	if (!set.enabled) {
		res->skipped = "disabled";
		return 0;
	}
	memset(&r, 0, sizeof(r));
	r.tool_call = e->tool_call;
	r.trace = e->trace;
	r.op = fsb_op_name(e->op);
	r.path = e->path;
	r.resolved = e->resolved;
	r.prior = e->prior;
	r.fd = e->fd;
	r.link_target = e->link_target;
	r.skip_content = e->skip_content;
	r.defer_sync = true;
	pthread_mutex_lock(&s->store_lock);
	if (store_of(b, s, why, whylen) == NULL) {
		pthread_mutex_unlock(&s->store_lock);
		return -EIO;
	}
	rc = record(s, &set, &r, res);
	pthread_mutex_unlock(&s->store_lock);
	return explain(rc, &r, &set, why, whylen);
}

int fsb_backup_sync(struct fsb_broker *b, const char *sid, char *why, size_t whylen)
{
	struct fsb_session *s = fsb_broker_session(b, sid);
	int rc = 0;

	if (s == NULL)
		return 0;
	pthread_mutex_lock(&s->store_lock);
	if (s->store != NULL)
		rc = fsb_store_sync(s->store);
	pthread_mutex_unlock(&s->store_lock);
	if (rc < 0)
		snprintf(why, whylen, "the backup journal cannot be synced (%s); nothing was "
			 "changed", strerror(-rc));
	return rc;
}

int fsb_backup_recover(struct fsb_broker *b, const char *sid, char *err, size_t errlen)
{
	struct fsb_session *s = fsb_broker_session(b, sid);
	struct fsb_store *store;

	if (s == NULL) {
		snprintf(err, errlen, "the state of session %s could not be opened (see above)", sid);
		return -EINVAL;
	}
	pthread_mutex_lock(&s->store_lock);
	store = store_of(b, s, err, errlen);
	pthread_mutex_unlock(&s->store_lock);
	return store != NULL ? 0 : -EIO;
}

int fsb_backup_note_created(struct fsb_broker *b, const char *sid, const struct fsb_access *acc,
			    int flags)
{
	struct fsb_session *s = fsb_broker_session(b, sid);
	struct fsb_backup_result res;
	struct fsb_backup_req r;
	struct settings set;
	char why[256];
	int rc;

	if (s == NULL)
		return -EIO;
	settings_of(b, s, &set);
	if (!set.enabled)
		return 0;
	memset(&r, 0, sizeof(r));
	r.tool_call = acc->tool_call;
	r.op = fsb_op_name(acc->op);
	r.flags = flags;
	r.path = acc->requested;
	r.resolved = acc->res.path;
	r.fd = -1;
	pthread_mutex_lock(&s->store_lock);
	rc = store_of(b, s, why, sizeof(why)) == NULL ? -EIO : fsb_store_record(s->store, &r, &res);
	pthread_mutex_unlock(&s->store_lock);
	return rc;
}

void fsb_backup_note_write_grant(struct fsb_broker *b, const char *sid, dev_t dev, ino_t ino)
{
	struct fsb_session *s = fsb_broker_session(b, sid);

	if (s == NULL)
		return;
	pthread_mutex_lock(&s->store_lock);
	if (s->store != NULL)
		fsb_store_note_write_grant(s->store, dev, ino);
	pthread_mutex_unlock(&s->store_lock);
}

int fsb_backup_commit(struct fsb_broker *b, const char *sid, const char *message,
		      char *err, size_t errlen)
{
	struct fsb_session *s = fsb_broker_session(b, sid);
	char head[FSB_SHA256_HEX_LEN + 1];
	cJSON *rec;
	int n, rc;

	if (s == NULL) {
		snprintf(err, errlen, "session %s has no state (no state dir, or an invalid id)", sid);
		return -EINVAL;
	}
	pthread_mutex_lock(&s->store_lock);
	if (store_of(b, s, err, errlen) == NULL) {
		n = -EIO;
		goto out;
	}
	if (fsb_store_cycle(s->store) == 0) {
		n = 0;
		goto out;
	}
	/* The sealed cycle names the audit chain's head: that line must be on
	 * disk before the cycle that vouches for it. */
	fsb_broker_lock(b);
	rc = fsb_audit_sync(s->audit);
	snprintf(head, sizeof(head), "%s", fsb_audit_head(s->audit));
	fsb_broker_unlock(b);
	if (rc < 0) {
		snprintf(err, errlen, "cannot sync the audit log: %s", strerror(-rc));
		n = rc;
		goto out;
	}
	n = fsb_store_seal(s->store, message, head, err, errlen);
out:
	pthread_mutex_unlock(&s->store_lock);
	if (n <= 0)
		return n;
	rec = cJSON_CreateObject();
	cJSON_AddStringToObject(rec, "phase", "finalization-modify-backup");
	cJSON_AddStringToObject(rec, "session", sid);
	cJSON_AddNumberToObject(rec, "cycle", n);
	cJSON_AddStringToObject(rec, "commitMsg", message);
	fsb_broker_audit(b, sid, rec);
	return n;
}

void fsb_backup_commit_all(struct fsb_broker *b, const char *message)
{
	char err[512];

	for (int i = 0; i < b->nsessions; i++) {
		struct fsb_session *s = &b->sessions[i];

		bool open;

		pthread_mutex_lock(&s->store_lock);
		open = s->store != NULL && fsb_store_cycle(s->store) != 0;
		pthread_mutex_unlock(&s->store_lock);
		if (open && fsb_backup_commit(b, s->id, message, err, sizeof(err)) < 0)
			fsb_error("session %s: the open cycle was not sealed: %s", s->id, err);
	}
}
