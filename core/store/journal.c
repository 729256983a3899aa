/*
 * journal.c — the journal record of the backup store, encoded and decoded
 * here and nowhere else (see journal.h and docs/backup-store.md, "The
 * journal"): each field's name and form is spelled once, so what the core
 * writes and what restore reads cannot drift apart.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "journal.h"
#include "proto_json.h"

static const char *const types[] = {
	"file", "dir", "symlink", "fifo", "socket", "chardev", "blockdev",
};

bool fsb_journal_type_ok(const char *t)
{
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strcmp(t, types[i]) == 0)
			return true;
	return false;
}

/* ---- the fields' forms -------------------------------------------------- */

void fsb_journal_stamp(const struct timespec *ts, char buf[40])
{
	struct tm tm;
	size_t n;

	if (gmtime_r(&ts->tv_sec, &tm) == NULL ||
	    (n = strftime(buf, 40, "%Y-%m-%dT%H:%M:%S", &tm)) == 0) {
		strcpy(buf, "1970-01-01T00:00:00.000Z");
		return;
	}
	snprintf(buf + n, 40 - n, ".%03ldZ", ts->tv_nsec / 1000000);
}

/* An integer as its exact digits, a raw item: cJSON's numbers are doubles
 * (an inode or device number beyond 2^53 would be rounded), and printing
 * one costs a printf and a scanf of a double for each. */
static cJSON *raw_integer(int64_t v, bool is_signed)
{
	char buf[24];

	if (is_signed)
		snprintf(buf, sizeof(buf), "%" PRId64, v);
	else
		snprintf(buf, sizeof(buf), "%" PRIu64, (uint64_t)v);
	return cJSON_CreateRaw(buf);
}

bool fsb_journal_add_u64(cJSON *o, const char *name, uint64_t v)
{
	cJSON *item = raw_integer((int64_t)v, false);

	if (item == NULL || !cJSON_AddItemToObject(o, name, item)) {
		cJSON_Delete(item);
		return false;
	}
	return true;
}

bool fsb_journal_add_time(cJSON *o, const char *name, const struct timespec *ts)
{
	cJSON *a = cJSON_AddArrayToObject(o, name);
	cJSON *s, *ns;

	if (a == NULL)
		return false;
	s = raw_integer((int64_t)ts->tv_sec, true);
	if (s == NULL || !cJSON_AddItemToArray(a, s)) {
		cJSON_Delete(s);
		return false;
	}
	ns = raw_integer((int64_t)ts->tv_nsec, true);
	if (ns == NULL || !cJSON_AddItemToArray(a, ns)) {
		cJSON_Delete(ns);
		return false;
	}
	return true;
}

/* A string of bytes from outside (a path, a link target, an id): as is when
 * it is UTF-8, else as `<name>Bytes`, percent-encoded. */
bool fsb_journal_add_bytes(cJSON *o, const char *name, const char *s)
{
	char alt[64];

	fsb_json_add_path(o, name, s, false);
	snprintf(alt, sizeof(alt), "%sBytes", name);
	return cJSON_GetObjectItemCaseSensitive(o, name) != NULL ||
	       cJSON_GetObjectItemCaseSensitive(o, alt) != NULL;
}

static int bad(struct fsb_journal_why *w, const char *fmt, const char *field)
{
	snprintf(w->text, sizeof(w->text), fmt, field);
	return -EINVAL;
}

/* A whole, non-negative number that fits in 64 bits. */
/* A number item, or the raw digits raw_integer puts in a tree (a record
 * encoded and decoded again without being printed in between). */
static bool number_of(const cJSON *it, double *d)
{
	char *end;

	if (cJSON_IsNumber(it)) {
		*d = it->valuedouble;
		return true;
	}
	if (!cJSON_IsRaw(it) || it->valuestring == NULL)
		return false;
	errno = 0;
	*d = strtod(it->valuestring, &end);
	return errno == 0 && end != it->valuestring && *end == '\0';
}

int fsb_journal_get_u64(const cJSON *o, const char *name, const char *label, uint64_t *v,
			bool *has, struct fsb_journal_why *w)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, name);
	double d;

	if (has != NULL)
		*has = false;
	if (it == NULL)
		return 0;
	if (!number_of(it, &d))
		return bad(w, "%s is not a number", label);
	if (!(d >= 0) || d >= 18446744073709551616.0 || floor(d) != d)
		return bad(w, "%s is not a whole number of at least 0", label);
	*v = (uint64_t)d;
	if (has != NULL)
		*has = true;
	return 0;
}

/* `[seconds, nanoseconds]`. */
int fsb_journal_get_time(const cJSON *o, const char *name, const char *label,
			 struct timespec *ts, bool *has, struct fsb_journal_why *w)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, name);
	double s, ns;

	*has = false;
	if (it == NULL)
		return 0;
	if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) != 2)
		return bad(w, "%s is not [seconds, nanoseconds]", label);
	if (!number_of(cJSON_GetArrayItem(it, 0), &s) ||
	    !number_of(cJSON_GetArrayItem(it, 1), &ns) || floor(s) != s || fabs(s) > 1e15 ||
	    floor(ns) != ns || ns < 0 || ns > 999999999)
		return bad(w, "%s is not [seconds, nanoseconds]", label);
	ts->tv_sec = (time_t)s;
	ts->tv_nsec = (long)ns;
	*has = true;
	return 0;
}

/*
 * A byte-string field: `name` as a string, or `<name>Bytes` percent-encoded
 * (how fsb_journal_add_bytes writes bytes that are not UTF-8). *out stays
 * NULL when neither is there.
 */
int fsb_journal_get_bytes(const cJSON *o, const char *name, const char *label, char **out,
			  struct fsb_journal_why *w)
{
	char bname[32];
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, name);

	*out = NULL;
	if (it != NULL) {
		if (!cJSON_IsString(it))
			return bad(w, "%s is not a string", label);
		*out = strdup(it->valuestring);
		return *out == NULL ? -ENOMEM : 0;
	}
	snprintf(bname, sizeof(bname), "%sBytes", name);
	it = cJSON_GetObjectItemCaseSensitive(o, bname);
	if (it == NULL)
		return 0;
	if (!cJSON_IsString(it))
		return bad(w, "%sBytes is not a string", label);
	*out = fsb_percent_decode(it->valuestring);
	if (*out == NULL)
		return bad(w, "%sBytes is not valid percent-encoding", label);
	return 0;
}

/* The core writes ids and ops that are not UTF-8 as bytes too. */
int fsb_journal_get_str(const cJSON *o, const char *name, char **out,
			struct fsb_journal_why *w)
{
	int err = fsb_journal_get_bytes(o, name, name, out, w);

	if (err == 0 && *out == NULL)
		*out = strdup("");
	return err < 0 ? err : *out == NULL ? -ENOMEM : 0;
}

/* ---- encoding --------------------------------------------------------- */

/*
 * The prior state's xattrs: `xattrs` maps each name to its value in base64;
 * a name that is not UTF-8 goes, percent-encoded, into `xattrsBytes`
 * instead. Known xattrs always write `xattrs`, empty when there are none,
 * so a restore may remove what the path gained. False when out of memory.
 */
static bool add_xattrs(cJSON *p, const struct fsb_prior *pr)
{
	cJSON *o, *ob = NULL, *tmp = NULL;
	bool ok = true;

	if (!pr->has_xattrs)
		return true;
	o = cJSON_AddObjectToObject(p, "xattrs");
	if (o == NULL)
		return false;
	for (size_t i = 0; ok && i < pr->nxattrs; i++) {
		const struct fsb_xattr *x = &pr->xattrs[i];
		char *enc = fsb_base64_encode(x->value, x->len);
		const cJSON *key;

		if (enc == NULL)
			return false;
		if (fsb_utf8_valid(x->name, strlen(x->name))) {
			ok = cJSON_AddStringToObject(o, x->name, enc) != NULL;
		} else {
			if (ob == NULL)
				ob = cJSON_AddObjectToObject(p, "xattrsBytes");
			cJSON_Delete(tmp);
			tmp = cJSON_CreateObject();
			if (tmp != NULL)
				fsb_json_add_path(tmp, "name", x->name, true);
			key = cJSON_GetObjectItemCaseSensitive(tmp, "nameBytes");
			ok = ob != NULL && key != NULL &&
			     cJSON_AddStringToObject(ob, key->valuestring, enc) != NULL;
		}
		free(enc);
	}
	cJSON_Delete(tmp);
	if (ok && pr->xattrs_truncated)
		ok = cJSON_AddTrueToObject(p, "xattrsTruncated") != NULL;
	return ok;
}

cJSON *fsb_journal_prior_encode(const struct fsb_prior *pr)
{
	cJSON *p = cJSON_CreateObject();
	bool ok;

	if (p == NULL)
		return NULL;
	if (!pr->exists) {
		if (cJSON_AddFalseToObject(p, "exists") == NULL)
			goto fail;
		return p;
	}
	ok = cJSON_AddTrueToObject(p, "exists") != NULL &&
	     cJSON_AddStringToObject(p, "type", pr->type) != NULL &&
	     fsb_journal_add_u64(p, "dev", pr->dev) && fsb_journal_add_u64(p, "ino", pr->ino) &&
	     fsb_journal_add_u64(p, "nlink", pr->nlink);
	if (ok && pr->has_mode)
		ok = fsb_journal_add_u64(p, "mode", pr->mode & 07777);
	if (ok && pr->has_owner)
		ok = fsb_journal_add_u64(p, "uid", pr->uid) && fsb_journal_add_u64(p, "gid", pr->gid);
	if (ok && pr->has_size)
		ok = fsb_journal_add_u64(p, "size", pr->size);
	if (ok && pr->has_atime)
		ok = fsb_journal_add_time(p, "atime", &pr->atime);
	if (ok && pr->has_mtime)
		ok = fsb_journal_add_time(p, "mtime", &pr->mtime);
	if (ok && pr->object[0] != '\0')
		ok = cJSON_AddStringToObject(p, "object", pr->object) != NULL;
	if (ok && pr->skipped[0] != '\0')
		ok = cJSON_AddStringToObject(p, "skipped", pr->skipped) != NULL;
	if (ok && pr->metadata_only)
		ok = cJSON_AddTrueToObject(p, "metadataOnly") != NULL;
	if (ok && pr->moved)
		ok = cJSON_AddTrueToObject(p, "moved") != NULL;
	if (ok && pr->kept)
		ok = cJSON_AddTrueToObject(p, "kept") != NULL;
	if (ok && pr->target != NULL)
		ok = fsb_journal_add_bytes(p, "target", pr->target);
	if (!ok || !add_xattrs(p, pr))
		goto fail;
	return p;

fail:
	cJSON_Delete(p);
	return NULL;
}

cJSON *fsb_journal_encode(const struct fsb_journal_rec *r)
{
	cJSON *o = cJSON_CreateObject(), *prior, *m;
	bool ok;

	if (o == NULL)
		return NULL;
	ok = fsb_journal_add_u64(o, "seq", r->seq) &&
	     fsb_journal_add_bytes(o, "time", r->time ? r->time : "") &&
	     fsb_journal_add_bytes(o, "toolCallId", r->tool_call ? r->tool_call : "") &&
	     fsb_journal_add_bytes(o, "traceId", r->trace ? r->trace : "") &&
	     fsb_journal_add_bytes(o, "op", r->op) &&
	     cJSON_AddItemToObject(o, "flags", raw_integer(r->flags, true)) &&
	     fsb_journal_add_bytes(o, "path", r->path) &&
	     fsb_journal_add_bytes(o, "resolved", r->resolved);
	prior = ok ? fsb_journal_prior_encode(&r->prior) : NULL;
	if (prior == NULL || !cJSON_AddItemToObject(o, "prior", prior)) {
		cJSON_Delete(prior);
		goto fail;
	}
	if (r->moved_to != NULL && !fsb_journal_add_bytes(o, "movedTo", r->moved_to))
		goto fail;
	if (r->has_made) {
		m = cJSON_AddObjectToObject(o, "made");
		if (m == NULL || cJSON_AddStringToObject(m, "type", r->made_type) == NULL ||
		    !fsb_journal_add_u64(m, "dev", r->made_dev) ||
		    !fsb_journal_add_u64(m, "ino", r->made_ino))
			goto fail;
	}
	if (cJSON_AddBoolToObject(o, "ok", r->ok) == NULL)
		goto fail;
	return o;

fail:
	cJSON_Delete(o);
	return NULL;
}

/* ---- decoding --------------------------------------------------------- */

/*
 * Restore writes at `resolved`: it must be the normalised absolute path the
 * core judged. A "." or ".." component, or an empty one, would make it name
 * another file than the one the journal describes.
 */
static bool path_normalised(const char *p)
{
	if (p[0] != '/' || p[1] == '\0')
		return false;
	for (const char *c = p + 1;;) {
		const char *e = strchr(c, '/');
		size_t len = e != NULL ? (size_t)(e - c) : strlen(c);

		if (len == 0 || (len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		if (e == NULL)
			return true;
		c = e + 1;
	}
}

bool fsb_backup_object_name_ok(const char *hex)
{
	size_t i;

	for (i = 0; hex[i] != '\0'; i++)
		if (!((hex[i] >= '0' && hex[i] <= '9') || (hex[i] >= 'a' && hex[i] <= 'f')))
			return false;
	return i == FSB_SHA256_HEX_LEN;
}

/*
 * `xattrs` (name → base64 value) and `xattrsBytes` (the same with each name
 * percent-encoded, for names that are not UTF-8). Either one there means
 * the xattrs are known, so restore may remove those the path has beyond
 * them; `xattrsTruncated` says some were left out.
 */
static int get_xattrs(const cJSON *o, struct fsb_prior *p, struct fsb_journal_why *w)
{
	static const char *const field[2] = { "xattrs", "xattrsBytes" };
	const cJSON *obj[2], *e, *it;
	size_t alloc = 0;
	int err;

	for (int k = 0; k < 2; k++) {
		obj[k] = cJSON_GetObjectItemCaseSensitive(o, field[k]);
		if (obj[k] == NULL)
			continue;
		if (!cJSON_IsObject(obj[k]))
			return bad(w, "prior.%s is not an object", field[k]);
		p->has_xattrs = true;
		alloc += (size_t)cJSON_GetArraySize(obj[k]);
	}
	it = cJSON_GetObjectItemCaseSensitive(o, "xattrsTruncated");
	if (it != NULL && !cJSON_IsBool(it))
		return bad(w, "%s is not true/false", "prior.xattrsTruncated");
	/* Without the xattrs themselves, "some were left out" says nothing. */
	p->xattrs_truncated = p->has_xattrs && cJSON_IsTrue(it);
	if (alloc == 0)
		return 0;
	p->xattrs = calloc(alloc, sizeof(*p->xattrs));
	if (p->xattrs == NULL)
		return -ENOMEM;
	for (int k = 0; k < 2; k++) {
		cJSON_ArrayForEach(e, obj[k]) {
			struct fsb_xattr *x = &p->xattrs[p->nxattrs];

			if (p->nxattrs == alloc)
				break;
			x->name = k == 0 ? strdup(e->string) : fsb_percent_decode(e->string);
			if (x->name == NULL)
				return k == 0 ? -ENOMEM
				       : bad(w, "prior.%s holds a name that is not valid "
					     "percent-encoding", field[k]);
			p->nxattrs++;
			/* XATTR_NAME_MAX */
			if (x->name[0] == '\0' || strlen(x->name) > 255)
				return bad(w, "prior.%s holds a name that is empty or longer than "
					   "255 bytes", field[k]);
			if (!cJSON_IsString(e))
				return bad(w, "prior.%s holds a value that is not a string",
					   field[k]);
			err = fsb_base64_decode(e->valuestring, &x->value, &x->len);
			if (err == -EINVAL)
				return bad(w, "prior.%s holds a value that is not base64", field[k]);
			if (err < 0)
				return err;
		}
	}
	return 0;
}

static int get_flag(const cJSON *o, const char *name, const char *label, bool *v,
		    struct fsb_journal_why *w)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, name);

	if (it != NULL && !cJSON_IsBool(it))
		return bad(w, "%s is not a boolean", label);
	*v = cJSON_IsTrue(it);
	return 0;
}

static int parse_prior(const cJSON *o, struct fsb_prior *p, struct fsb_journal_why *w)
{
	const cJSON *it;
	uint64_t v;
	bool has, flag;
	int err;

	memset(p, 0, sizeof(*p));
	if (!cJSON_IsObject(o))
		return bad(w, "%s is missing or not an object", "prior");
	it = cJSON_GetObjectItemCaseSensitive(o, "exists");
	if (!cJSON_IsBool(it))
		return bad(w, "%s is missing or not true/false", "prior.exists");
	p->exists = cJSON_IsTrue(it);
	if (!p->exists)
		return 0;
	it = cJSON_GetObjectItemCaseSensitive(o, "type");
	if (!cJSON_IsString(it) || !fsb_journal_type_ok(it->valuestring))
		return bad(w, "%s is missing or not one of file, dir, symlink, fifo, socket, "
			   "chardev, blockdev", "prior.type");
	strcpy(p->type, it->valuestring);
	if ((err = fsb_journal_get_u64(o, "dev", "prior.dev", &p->dev, NULL, w)) < 0 ||
	    (err = fsb_journal_get_u64(o, "ino", "prior.ino", &p->ino, NULL, w)) < 0 ||
	    (err = fsb_journal_get_u64(o, "nlink", "prior.nlink", &p->nlink, NULL, w)) < 0 ||
	    (err = fsb_journal_get_u64(o, "size", "prior.size", &p->size, &p->has_size, w)) < 0)
		return err;
	if ((err = fsb_journal_get_u64(o, "mode", "prior.mode", &v, &p->has_mode, w)) < 0)
		return err;
	if (p->has_mode && v > 07777)
		return bad(w, "%s holds more than permission bits", "prior.mode");
	p->mode = (mode_t)v;
	if ((err = fsb_journal_get_u64(o, "uid", "prior.uid", &v, &has, w)) < 0)
		return err;
	if (has && v >= UINT32_MAX)
		return bad(w, "%s is out of range", "prior.uid");
	p->uid = (uid_t)v;
	p->has_owner = has;
	if ((err = fsb_journal_get_u64(o, "gid", "prior.gid", &v, &has, w)) < 0)
		return err;
	if (has && v >= UINT32_MAX)
		return bad(w, "%s is out of range", "prior.gid");
	p->gid = (gid_t)v;
	p->has_owner = p->has_owner && has;
	if ((err = fsb_journal_get_time(o, "atime", "prior.atime", &p->atime, &p->has_atime,
					w)) < 0 ||
	    (err = fsb_journal_get_time(o, "mtime", "prior.mtime", &p->mtime, &p->has_mtime,
					w)) < 0)
		return err;
	it = cJSON_GetObjectItemCaseSensitive(o, "object");
	if (it != NULL) {
		/* The name becomes a path under objects/: nothing but hex. */
		if (!cJSON_IsString(it) || !fsb_backup_object_name_ok(it->valuestring))
			return bad(w, "%s is not a SHA-256 in lowercase hex", "prior.object");
		strcpy(p->object, it->valuestring);
	}
	it = cJSON_GetObjectItemCaseSensitive(o, "skipped");
	if (it != NULL) {
		if (!cJSON_IsString(it) || strlen(it->valuestring) >= sizeof(p->skipped))
			return bad(w, "%s is not a short string", "prior.skipped");
		strcpy(p->skipped, it->valuestring);
	}
	if ((err = get_flag(o, "kept", "prior.kept", &flag, w)) < 0)
		return err;
	p->kept = flag && p->object[0] != '\0' && p->has_size && p->has_mtime;
	p->kept_size = p->size;
	p->kept_mtime = p->mtime;
	if ((err = get_flag(o, "metadataOnly", "prior.metadataOnly", &flag, w)) < 0)
		return err;
	p->metadata_only = flag && strcmp(p->type, "file") == 0 && p->object[0] == '\0' &&
			   p->skipped[0] == '\0';
	if ((err = get_flag(o, "moved", "prior.moved", &flag, w)) < 0)
		return err;
	p->moved = flag && strcmp(p->type, "file") == 0 && p->object[0] == '\0' &&
		   p->skipped[0] == '\0' && !p->metadata_only;
	if ((err = get_xattrs(o, p, w)) < 0)
		return err;
	return fsb_journal_get_bytes(o, "target", "prior.target", &p->target, w);
}

void fsb_journal_rec_free(struct fsb_journal_rec *r)
{
	free(r->time);
	free(r->tool_call);
	free(r->trace);
	free(r->op);
	free(r->path);
	free(r->resolved);
	free(r->moved_to);
	free(r->prior.target);
	fsb_xattr_free(r->prior.xattrs, r->prior.nxattrs);
	memset(r, 0, sizeof(*r));
}

/* `made` (optional): the type, dev and ino of the object a create made. */
static int parse_made(const cJSON *m, struct fsb_journal_rec *r, struct fsb_journal_why *w)
{
	const cJSON *t;
	bool has_dev, has_ino;
	int err;

	if (m == NULL)
		return 0;
	t = cJSON_GetObjectItemCaseSensitive(m, "type");
	if (!cJSON_IsObject(m) || !cJSON_IsString(t) || !fsb_journal_type_ok(t->valuestring))
		return bad(w, "%s is not an object with a known file type", "made");
	if ((err = fsb_journal_get_u64(m, "dev", "made.dev", &r->made_dev, &has_dev, w)) < 0 ||
	    (err = fsb_journal_get_u64(m, "ino", "made.ino", &r->made_ino, &has_ino, w)) < 0)
		return err;
	if (!has_dev || !has_ino)
		return bad(w, "%s lacks dev or ino", "made");
	strcpy(r->made_type, t->valuestring);
	r->has_made = true;
	return 0;
}

static int parse_record(const cJSON *o, struct fsb_journal_rec *r, struct fsb_journal_why *w)
{
	const cJSON *it;
	uint64_t v = 0;
	int err;

	memset(r, 0, sizeof(*r));
	if ((err = fsb_journal_get_u64(o, "seq", "seq", &r->seq, NULL, w)) < 0 ||
	    (err = fsb_journal_get_str(o, "time", &r->time, w)) < 0 ||
	    (err = fsb_journal_get_str(o, "toolCallId", &r->tool_call, w)) < 0 ||
	    (err = fsb_journal_get_str(o, "traceId", &r->trace, w)) < 0 ||
	    (err = fsb_journal_get_str(o, "op", &r->op, w)) < 0 ||
	    (err = fsb_journal_get_u64(o, "flags", "flags", &v, NULL, w)) < 0)
		goto fail;
	/* Open flags or RENAME_* flags: an int. */
	if (v > INT_MAX) {
		err = bad(w, "%s is out of range", "flags");
		goto fail;
	}
	r->flags = (long)v;
	if (r->op[0] == '\0') {
		err = bad(w, "%s is missing", "op");
		goto fail;
	}
	if ((err = fsb_journal_get_bytes(o, "path", "path", &r->path, w)) < 0 ||
	    (err = fsb_journal_get_bytes(o, "resolved", "resolved", &r->resolved, w)) < 0)
		goto fail;
	/* Older cores wrote one of the two only. */
	if (r->resolved == NULL && r->path != NULL)
		r->resolved = strdup(r->path);
	if (r->path == NULL && r->resolved != NULL)
		r->path = strdup(r->resolved);
	if (r->resolved == NULL || r->path == NULL) {
		err = r->resolved == NULL && r->path == NULL
			? bad(w, "%s is missing (and so is path)", "resolved") : -ENOMEM;
		goto fail;
	}
	if (!path_normalised(r->resolved)) {
		err = bad(w, "%s is not a normalised absolute path", "resolved");
		goto fail;
	}
	it = cJSON_GetObjectItemCaseSensitive(o, "ok");
	if (it != NULL && !cJSON_IsBool(it)) {
		err = bad(w, "%s is not true/false", "ok");
		goto fail;
	}
	r->ok = it == NULL || cJSON_IsTrue(it);
	if ((err = parse_prior(cJSON_GetObjectItemCaseSensitive(o, "prior"), &r->prior, w)) < 0 ||
	    (err = parse_made(cJSON_GetObjectItemCaseSensitive(o, "made"), r, w)) < 0 ||
	    (err = fsb_journal_get_bytes(o, "movedTo", "movedTo", &r->moved_to, w)) < 0)
		goto fail;
	if (r->moved_to != NULL && !path_normalised(r->moved_to)) {
		err = bad(w, "%s is not a normalised absolute path", "movedTo");
		goto fail;
	}
	/* Without where it went, nothing says where its bytes are. */
	if (r->moved_to == NULL)
		r->prior.moved = false;
	return 0;

fail:
	fsb_journal_rec_free(r);
	return err;
}

int fsb_journal_decode(const char *line, size_t len, struct fsb_journal_rec *out,
		       struct fsb_journal_why *w)
{
	const char *why = NULL, *end = NULL;
	cJSON *o;
	int err;

	memset(out, 0, sizeof(*out));
	w->text[0] = '\0';
	if (len == 0)
		return bad(w, "%s", "the line is empty");
	/* cJSON would cut a string at an escaped NUL and take bytes that are
	 * not UTF-8: a path read so would name another file. */
	if (fsb_json_precheck(line, len, &why) < 0)
		return bad(w, "%s", why);
	o = cJSON_ParseWithLengthOpts(line, len, &end, 0);
	if (o == NULL || !cJSON_IsObject(o) || end != line + len) {
		cJSON_Delete(o);
		return bad(w, "%s", "the line is not one JSON object (cut short?)");
	}
	err = parse_record(o, out, w);
	cJSON_Delete(o);
	return err;
}

/* ---- end states (cycle.json `paths`) ------------------------------------ */

cJSON *fsb_journal_end_encode(const struct fsb_end_state *e)
{
	cJSON *o = cJSON_CreateObject();
	bool ok;

	if (o == NULL)
		return NULL;
	ok = cJSON_AddBoolToObject(o, "exists", e->exists) != NULL;
	if (ok && e->type[0] != '\0')
		ok = cJSON_AddStringToObject(o, "type", e->type) != NULL;
	if (ok && e->has_size)
		ok = fsb_journal_add_u64(o, "size", e->size);
	if (ok && e->has_mtime)
		ok = fsb_journal_add_time(o, "mtime", &e->mtime);
	if (ok && e->has_dev)
		ok = fsb_journal_add_u64(o, "dev", e->dev);
	if (ok && e->has_ino)
		ok = fsb_journal_add_u64(o, "ino", e->ino);
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

int fsb_journal_end_decode(const char *key, const cJSON *v, struct fsb_end_state *e,
			   struct fsb_journal_why *w)
{
	const cJSON *it;
	int err;

	memset(e, 0, sizeof(*e));
	if (!cJSON_IsObject(v))
		return bad(w, "%s is not an object", "the entry");
	it = cJSON_GetObjectItemCaseSensitive(v, "exists");
	if (!cJSON_IsBool(it))
		return bad(w, "%s is missing or not true/false", "exists");
	e->exists = cJSON_IsTrue(it);
	it = cJSON_GetObjectItemCaseSensitive(v, "type");
	if (it != NULL) {
		if (!cJSON_IsString(it) || !fsb_journal_type_ok(it->valuestring))
			return bad(w, "%s is not a known file type", "type");
		strcpy(e->type, it->valuestring);
	}
	if ((err = fsb_journal_get_u64(v, "size", "size", &e->size, &e->has_size, w)) < 0 ||
	    (err = fsb_journal_get_u64(v, "ino", "ino", &e->ino, &e->has_ino, w)) < 0 ||
	    (err = fsb_journal_get_u64(v, "dev", "dev", &e->dev, &e->has_dev, w)) < 0 ||
	    (err = fsb_journal_get_time(v, "mtime", "mtime", &e->mtime, &e->has_mtime, w)) < 0)
		return err;
	/* A key holds the path; an entry may carry it as bytes instead when
	 * the path is not UTF-8, as journal lines do. */
	if ((err = fsb_journal_get_bytes(v, "path", "path", &e->path, w)) < 0)
		return err;
	if (e->path == NULL)
		e->path = strdup(key);
	return e->path == NULL ? -ENOMEM : 0;
}
