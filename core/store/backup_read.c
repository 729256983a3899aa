/*
 * backup_read.c — read a session's backup store (see backup_read.h and
 * docs/backup-store.md). The store is written by core/store/backup.c; this file
 * only reads it, for `fsbroker backup list|show|restore`.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>
#include <openssl/evp.h>

#include "backup_read.h"
#include "object_pack.h"
#include "journal.h"

/* cycle.json holds one small entry per path; this is far beyond any turn. */
#define CYCLE_JSON_MAX (512u << 20)
#define COPY_CHUNK (1u << 16)

const char *fsb_cycle_state_name(enum fsb_cycle_state s)
{
	switch (s) {
	case FSB_CYCLE_OPEN:
		return "open";
	case FSB_CYCLE_SEALED:
		return "sealed";
	case FSB_CYCLE_RECOVERED:
		return "recovered";
	}
	return "?";
}

int fsb_backup_store_dir(const char *state_dir, const char *session, char *out, size_t len)
{
	int n;

	/* The id becomes one path component: nothing may climb out of sessions/. */
	if (session[0] == '\0' || strcmp(session, ".") == 0 || strcmp(session, "..") == 0 ||
	    strchr(session, '/') != NULL)
		return -EINVAL;
	n = snprintf(out, len, "%s/sessions/%s/modify_backup", state_dir, session);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void fsb_backup_sessions_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

int fsb_backup_sessions(const char *state_dir, char ***names, size_t *n)
{
	char dir[PATH_MAX];
	char **v = NULL, **nv;
	size_t cnt = 0;
	struct dirent *de;
	struct stat st;
	DIR *d;
	int err;

	*names = NULL;
	*n = 0;
	if (snprintf(dir, sizeof(dir), "%s/sessions", state_dir) >= (int)sizeof(dir))
		return -ENAMETOOLONG;
	d = opendir(dir);
	if (d == NULL)
		return -errno;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode))
			continue;
		nv = realloc(v, (cnt + 1) * sizeof(*v));
		if (nv == NULL) {
			err = -ENOMEM;
			goto fail;
		}
		v = nv;
		v[cnt] = strdup(de->d_name);
		if (v[cnt] == NULL) {
			err = -ENOMEM;
			goto fail;
		}
		cnt++;
	}
	closedir(d);
	if (cnt > 1)
		qsort(v, cnt, sizeof(*v), cmp_str);
	*names = v;
	*n = cnt;
	return 0;

fail:
	closedir(d);
	fsb_backup_sessions_free(v, cnt);
	return err;
}

/* A cycle directory's name: a positive decimal number without leading zero. */
static bool parse_cycle_name(const char *s, unsigned *out)
{
	unsigned long v = 0;

	if (s[0] < '1' || s[0] > '9')
		return false;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9')
			return false;
		v = v * 10 + (unsigned long)(*s - '0');
		if (v > UINT_MAX)
			return false;
	}
	*out = (unsigned)v;
	return true;
}

static int cmp_unsigned(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	return x < y ? -1 : x > y;
}

int fsb_cycles_list(const char *store_dir, unsigned **nums, size_t *n)
{
	char dir[PATH_MAX];
	unsigned *v = NULL, *nv, num;
	size_t cnt = 0;
	struct dirent *de;
	DIR *d;

	*nums = NULL;
	*n = 0;
	if (snprintf(dir, sizeof(dir), "%s/cycles", store_dir) >= (int)sizeof(dir))
		return -ENAMETOOLONG;
	d = opendir(dir);
	if (d == NULL)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d)) != NULL) {
		if (!parse_cycle_name(de->d_name, &num))
			continue;
		nv = realloc(v, (cnt + 1) * sizeof(*v));
		if (nv == NULL) {
			free(v);
			closedir(d);
			return -ENOMEM;
		}
		v = nv;
		v[cnt++] = num;
	}
	closedir(d);
	if (cnt > 1)
		qsort(v, cnt, sizeof(*v), cmp_unsigned);
	*nums = v;
	*n = cnt;
	return 0;
}

/* ---- loading a cycle ------------------------------------------------ */

static int load_journal(const char *cdir, struct fsb_cycle *c, FILE *report, char *errbuf,
			size_t errlen)
{
	char path[PATH_MAX];
	char *line = NULL;
	size_t cap = 0, alloc = 0;
	ssize_t len;
	unsigned lineno = 0;
	struct fsb_journal_rec rec, *nv;
	int err = 0;
	FILE *fp;

	snprintf(path, sizeof(path), "%s/journal.jsonl", cdir);
	fp = fopen(path, "re");
	if (fp == NULL) {
		/* A cycle opened but not yet written to has no journal. */
		if (errno == ENOENT)
			return 0;
		err = -errno;
		snprintf(errbuf, errlen, "cannot read %s: %s", path, strerror(-err));
		return err;
	}
	while ((len = getline(&line, &cap, fp)) >= 0) {
		struct fsb_journal_why w;

		lineno++;
		if (len > 0 && line[len - 1] == '\n')
			line[--len] = '\0';
		err = fsb_journal_decode(line, (size_t)len, &rec, &w);
		if (err == -ENOMEM)
			goto nomem;
		if (err < 0) {
			c->malformed++;
			if (report != NULL)
				fprintf(report, "%s:%u: malformed journal line skipped: %s\n", path,
					lineno, w.text);
			continue;
		}
		rec.line = lineno;
		if (c->nrecs == alloc) {
			alloc = alloc ? alloc * 2 : 64;
			nv = realloc(c->recs, alloc * sizeof(*nv));
			if (nv == NULL) {
				fsb_journal_rec_free(&rec);
				goto nomem;
			}
			c->recs = nv;
		}
		c->recs[c->nrecs++] = rec;
	}
	if (ferror(fp)) {
		err = -EIO;
		snprintf(errbuf, errlen, "cannot read %s: %s", path, strerror(EIO));
		goto out;
	}
	err = 0;
	goto out;
nomem:
	err = -ENOMEM;
	snprintf(errbuf, errlen, "out of memory reading %s", path);
out:
	free(line);
	fclose(fp);
	return err;
}

static char *read_small_file(const char *path, size_t *len, int *err)
{
	struct stat st;
	char *buf;
	size_t got = 0;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		*err = -errno;
		return NULL;
	}
	if (fstat(fd, &st) < 0) {
		*err = -errno;
		close(fd);
		return NULL;
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > CYCLE_JSON_MAX) {
		*err = S_ISREG(st.st_mode) ? -EFBIG : -EINVAL;
		close(fd);
		return NULL;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (buf == NULL) {
		*err = -ENOMEM;
		close(fd);
		return NULL;
	}
	while (got < (size_t)st.st_size &&
	       (n = read(fd, buf + got, (size_t)st.st_size - got)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			*err = -errno;
			free(buf);
			close(fd);
			return NULL;
		}
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	*len = got;
	return buf;
}

static int cmp_end(const void *a, const void *b)
{
	return strcmp(((const struct fsb_end_state *)a)->path,
		      ((const struct fsb_end_state *)b)->path);
}

static int load_cycle_json(const char *file, struct fsb_cycle *c, FILE *report, char *errbuf,
			   size_t errlen)
{
	const cJSON *it, *paths, *ent;
	struct fsb_journal_why w = { "" };
	size_t len = 0, alloc;
	char *text;
	cJSON *o = NULL;
	int err = 0;

	text = read_small_file(file, &len, &err);
	if (text == NULL) {
		snprintf(errbuf, errlen, "cannot read %s: %s", file,
			 err == -EINVAL ? "it is not a regular file" : strerror(-err));
		return err == -ENOMEM ? err : -EBADMSG;
	}
	/* No UTF-8 precheck here, unlike journal lines: a path key that is not
	 * UTF-8 is still the right bytes, and a key cut short by an escaped NUL
	 * only matches no record, which restore treats as no end state. */
	o = cJSON_ParseWithLength(text, len);
	free(text);
	if (o == NULL || !cJSON_IsObject(o)) {
		snprintf(errbuf, errlen, "%s is not a JSON object; the cycle cannot be read", file);
		err = -EBADMSG;
		goto out;
	}
	it = cJSON_GetObjectItemCaseSensitive(o, "cycle");
	if (it != NULL && (!cJSON_IsNumber(it) || it->valuedouble != (double)c->number)) {
		snprintf(errbuf, errlen, "%s names another cycle than %u: it is not this "
			 "cycle's record", file, c->number);
		err = -EBADMSG;
		goto out;
	}
	if (it == NULL && report != NULL)
		fprintf(report, "%s: `cycle` is missing; taken as cycle %u\n", file, c->number);
	free(c->message);
	c->message = NULL;
	if (fsb_journal_get_str(o, "message", &c->message, &w) == -EINVAL)
		c->message = strdup("");
	it = cJSON_GetObjectItemCaseSensitive(o, "opened");
	free(c->opened);
	c->opened = strdup(cJSON_IsString(it) ? it->valuestring : "");
	it = cJSON_GetObjectItemCaseSensitive(o, "sealed");
	free(c->sealed);
	c->sealed = strdup(cJSON_IsString(it) ? it->valuestring : "");
	if (c->message == NULL || c->opened == NULL || c->sealed == NULL) {
		err = -ENOMEM;
		goto out;
	}
	it = cJSON_GetObjectItemCaseSensitive(o, "auditHead");
	if (cJSON_IsString(it) && strlen(it->valuestring) <= FSB_SHA256_HEX_LEN)
		strcpy(c->audit_head, it->valuestring);
	it = cJSON_GetObjectItemCaseSensitive(o, "recovered");
	c->state = cJSON_IsTrue(it) ? FSB_CYCLE_RECOVERED : FSB_CYCLE_SEALED;

	paths = cJSON_GetObjectItemCaseSensitive(o, "paths");
	if (paths != NULL && !cJSON_IsObject(paths)) {
		snprintf(errbuf, errlen, "%s: `paths` is not an object; the cycle's end states "
			 "cannot be read", file);
		err = -EBADMSG;
		goto out;
	}
	/* A recovered cycle was sealed at a restart, after whatever happened
	 * between the crash and it: whatever `paths` it holds (an older core
	 * wrote the state at the restart there) is no end state of the cycle.
	 * Its paths have none, so a restore of them needs --force. */
	alloc = c->state == FSB_CYCLE_RECOVERED ? 0 : (size_t)cJSON_GetArraySize(paths);
	if (alloc > 0) {
		c->ends = calloc(alloc, sizeof(*c->ends));
		if (c->ends == NULL) {
			err = -ENOMEM;
			goto out;
		}
	}
	cJSON_ArrayForEach(ent, paths) {
		if (alloc == 0)
			break;
		w.text[0] = '\0';
		err = fsb_journal_end_decode(ent->string, ent, &c->ends[c->nends], &w);
		if (err == -ENOMEM)
			goto out;
		if (err < 0) {
			free(c->ends[c->nends].path);
			if (report != NULL)
				fprintf(report, "%s: the end state of %s is skipped: %s\n", file,
					ent->string, w.text);
			continue;
		}
		c->nends++;
	}
	err = 0;
	if (c->nends > 1)
		qsort(c->ends, c->nends, sizeof(*c->ends), cmp_end);
out:
	if (err == -ENOMEM)
		snprintf(errbuf, errlen, "out of memory reading %s", file);
	cJSON_Delete(o);
	return err;
}

static int cmp_strp(const void *a, const void *b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;

	return strcmp(x, y);
}

/* How many distinct strings the array of `n` pointers holds (sorts it). */
static size_t count_distinct(const char **v, size_t n)
{
	size_t d = 0;

	qsort(v, n, sizeof(*v), cmp_strp);
	for (size_t i = 0; i < n; i++)
		if (i == 0 || strcmp(v[i], v[i - 1]) != 0)
			d++;
	return d;
}

static int cmp_rec_path(const void *a, const void *b)
{
	const struct fsb_journal_rec *x = *(const struct fsb_journal_rec *const *)a;
	const struct fsb_journal_rec *y = *(const struct fsb_journal_rec *const *)b;
	int d = strcmp(x->resolved, y->resolved);

	return d != 0 ? d : (x->line > y->line) - (x->line < y->line);
}

/*
 * A change of metadata leaves a file's bytes as they were, so the first
 * later record of the same path and inode that kept content (a delete, a
 * write, a rename over it) saved the very bytes the metadata-only record
 * stands for: lend them to it, and a restore from the first record brings
 * back content and metadata both. Sorted by path, then line: n log n.
 */
static int lend_content(struct fsb_cycle *c)
{
	struct fsb_journal_rec **v;
	size_t n = 0;

	for (size_t i = 0; i < c->nrecs; i++)
		n += c->recs[i].prior.metadata_only;
	if (n == 0)
		return 0;
	v = malloc(c->nrecs * sizeof(*v));
	if (v == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < c->nrecs; i++)
		v[i] = &c->recs[i];
	qsort(v, c->nrecs, sizeof(*v), cmp_rec_path);
	for (size_t i = 0; i < c->nrecs; i++) {
		struct fsb_prior *p = &v[i]->prior;

		if (!p->metadata_only)
			continue;
		for (size_t j = i + 1; j < c->nrecs && strcmp(v[j]->resolved, v[i]->resolved) == 0;
		     j++) {
			const struct fsb_prior *q = &v[j]->prior;

			if (!q->exists || q->dev != p->dev || q->ino != p->ino ||
			    (q->object[0] == '\0' && q->skipped[0] == '\0'))
				continue;
			memcpy(p->object, q->object, sizeof(p->object));
			memcpy(p->skipped, q->skipped, sizeof(p->skipped));
			p->kept = q->kept;
			p->kept_size = q->kept_size;
			p->kept_mtime = q->kept_mtime;
			p->metadata_only = false;
			break;
		}
	}
	free(v);
	return 0;
}

static int cmp_rec_inode(const void *a, const void *b)
{
	const struct fsb_journal_rec *x = *(const struct fsb_journal_rec *const *)a;
	const struct fsb_journal_rec *y = *(const struct fsb_journal_rec *const *)b;

	if (x->prior.dev != y->prior.dev)
		return x->prior.dev < y->prior.dev ? -1 : 1;
	if (x->prior.ino != y->prior.ino)
		return x->prior.ino < y->prior.ino ? -1 : 1;
	return (x->line > y->line) - (x->line < y->line);
}

/*
 * A file that moved kept its bytes under its new name, so the first later
 * record of the same inode that kept content, under any name (a write, a
 * delete, a rename over it after the move), saved the bytes the move record
 * (or a metadata-only one) stands for: lend them to it, as lend_content
 * does by path. Not lent, they are where the inode last moved to: a
 * metadata-only record followed by a move becomes a move record. Sorted by
 * inode, then line: n log n.
 */
static int lend_moved(struct fsb_cycle *c)
{
	struct fsb_journal_rec **v;
	size_t n = 0, k = 0;

	for (size_t i = 0; i < c->nrecs; i++)
		n += c->recs[i].prior.moved || c->recs[i].prior.metadata_only;
	if (n == 0)
		return 0;
	v = malloc(c->nrecs * sizeof(*v));
	if (v == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < c->nrecs; i++)
		if (c->recs[i].prior.exists && strcmp(c->recs[i].prior.type, "file") == 0)
			v[k++] = &c->recs[i];
	qsort(v, k, sizeof(*v), cmp_rec_inode);
	for (size_t i = 0; i < k; i++) {
		struct fsb_prior *p = &v[i]->prior;

		if (!p->moved && !p->metadata_only)
			continue;
		for (size_t j = i + 1; j < k && v[j]->prior.dev == p->dev &&
		     v[j]->prior.ino == p->ino; j++) {
			const struct fsb_prior *q = &v[j]->prior;

			if (q->object[0] == '\0' && q->skipped[0] == '\0')
				continue;
			memcpy(p->object, q->object, sizeof(p->object));
			memcpy(p->skipped, q->skipped, sizeof(p->skipped));
			p->kept = q->kept;
			p->kept_size = q->kept_size;
			p->kept_mtime = q->kept_mtime;
			p->moved = p->metadata_only = false;
			break;
		}
		if (!p->moved && !p->metadata_only)
			continue;
		/* Not lent: its bytes are where the inode last moved to (a
		 * file whose metadata changed before it moved, too). */
		v[i]->moved_now = p->moved ? v[i]->moved_to : NULL;
		for (size_t j = i + 1; j < k && v[j]->prior.dev == p->dev &&
		     v[j]->prior.ino == p->ino; j++)
			if (v[j]->moved_to != NULL && v[j]->prior.moved)
				v[i]->moved_now = v[j]->moved_to;
		if (p->metadata_only && v[i]->moved_now != NULL) {
			p->metadata_only = false;
			p->moved = true;
		}
	}
	free(v);
	return 0;
}

static int count_paths_and_objects(struct fsb_cycle *c)
{
	const char **v;
	size_t k = 0;

	if (c->nrecs == 0)
		return 0;
	v = malloc(c->nrecs * sizeof(*v));
	if (v == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < c->nrecs; i++)
		v[i] = c->recs[i].resolved;
	c->npaths = count_distinct(v, c->nrecs);
	for (size_t i = 0; i < c->nrecs; i++)
		if (c->recs[i].prior.object[0] != '\0')
			v[k++] = c->recs[i].prior.object;
	c->nobjects = count_distinct(v, k);
	free(v);
	return 0;
}

int fsb_cycle_load(const char *store_dir, unsigned number, struct fsb_cycle *out,
		   FILE *report, char *err, size_t errlen)
{
	char cdir[PATH_MAX], file[PATH_MAX + 16];
	struct stat st;
	int rc;

	memset(out, 0, sizeof(*out));
	out->number = number;
	out->state = FSB_CYCLE_OPEN;
	if (snprintf(cdir, sizeof(cdir), "%s/cycles/%u", store_dir, number) >= (int)sizeof(cdir)) {
		snprintf(err, errlen, "the store path %s is too long", store_dir);
		return -ENAMETOOLONG;
	}
	rc = lstat(cdir, &st) < 0 ? -errno : 0;
	if (rc < 0 && rc != -ENOENT) {
		snprintf(err, errlen, "cannot read %s: %s", cdir, strerror(-rc));
		return rc;
	}
	if (rc == -ENOENT || !S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "there is no cycle %u in %s/cycles", number, store_dir);
		return -ENOENT;
	}
	out->message = strdup("");
	out->opened = strdup("");
	out->sealed = strdup("");
	if (out->message == NULL || out->opened == NULL || out->sealed == NULL) {
		rc = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	rc = load_journal(cdir, out, report, err, errlen);
	if (rc < 0)
		goto fail;
	snprintf(file, sizeof(file), "%s/cycle.json", cdir);
	if (lstat(file, &st) == 0) {
		rc = load_cycle_json(file, out, report, err, errlen);
		if (rc < 0)
			goto fail;
	} else if (errno != ENOENT) {
		rc = -errno;
		snprintf(err, errlen, "cannot read %s: %s", file, strerror(errno));
		goto fail;
	} else if (out->nrecs > 0) {
		free(out->opened);
		out->opened = strdup(out->recs[0].time);
		if (out->opened == NULL) {
			rc = -ENOMEM;
			goto fail;
		}
	}
	rc = lend_content(out);
	if (rc == 0)
		rc = lend_moved(out);
	if (rc == 0)
		rc = count_paths_and_objects(out);
	if (rc < 0) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	return 0;

fail:
	fsb_cycle_free(out);
	return rc;
}

void fsb_cycle_free(struct fsb_cycle *c)
{
	for (size_t i = 0; i < c->nrecs; i++)
		fsb_journal_rec_free(&c->recs[i]);
	free(c->recs);
	for (size_t i = 0; i < c->nends; i++)
		free(c->ends[i].path);
	free(c->ends);
	free(c->message);
	free(c->opened);
	free(c->sealed);
	memset(c, 0, sizeof(*c));
}

const struct fsb_end_state *fsb_cycle_end_state(const struct fsb_cycle *c, const char *path)
{
	struct fsb_end_state key = { .path = (char *)path };

	if (c->nends == 0)
		return NULL;
	return bsearch(&key, c->ends, c->nends, sizeof(*c->ends), cmp_end);
}

/* ---- choosing the record to restore from ---------------------------- */

static int cmp_rec_by_path(const void *a, const void *b)
{
	const struct fsb_journal_rec *x = *(const struct fsb_journal_rec *const *)a;
	const struct fsb_journal_rec *y = *(const struct fsb_journal_rec *const *)b;
	int d = strcmp(x->resolved, y->resolved);

	return d != 0 ? d : x->line < y->line ? -1 : x->line > y->line;
}

static int cmp_pick(const void *a, const void *b)
{
	const struct fsb_pick *x = a, *y = b;

	return x->rec->line < y->rec->line ? -1 : x->rec->line > y->rec->line;
}

int fsb_cycle_pick(const struct fsb_cycle *c, const char *tool_call, struct fsb_picks *out)
{
	const struct fsb_journal_rec **o;
	size_t i, j, k;

	memset(out, 0, sizeof(*out));
	if (c->nrecs == 0)
		return 0;
	o = malloc(c->nrecs * sizeof(*o));
	out->v = calloc(c->nrecs, sizeof(*out->v));
	if (o == NULL || out->v == NULL) {
		free(o);
		free(out->v);
		out->v = NULL;
		return -ENOMEM;
	}
	for (i = 0; i < c->nrecs; i++)
		o[i] = &c->recs[i];
	/* Group the records of each path, each group in journal order. */
	qsort(o, c->nrecs, sizeof(*o), cmp_rec_by_path);
	for (i = 0; i < c->nrecs; i = j) {
		struct fsb_pick *p;

		for (j = i + 1; j < c->nrecs && strcmp(o[j]->resolved, o[i]->resolved) == 0; j++)
			;
		for (k = i; k < j && tool_call != NULL && strcmp(o[k]->tool_call, tool_call) != 0;
		     k++)
			;
		if (k == j)
			continue;	/* the tool call never touched this path */
		p = &out->v[out->n++];
		p->rec = o[k];
		p->all = &o[i];
		p->nall = j - i;
		p->end = fsb_cycle_end_state(c, o[k]->resolved);
		for (size_t m = k + 1; tool_call != NULL && m < j; m++)
			if (strcmp(o[m]->tool_call, tool_call) != 0)
				p->later_by_others = true;
	}
	qsort(out->v, out->n, sizeof(*out->v), cmp_pick);
	out->order = o;
	return 0;
}

void fsb_picks_free(struct fsb_picks *p)
{
	free(p->v);
	free(p->order);
	memset(p, 0, sizeof(*p));
}

/* ---- objects ---------------------------------------------------------- */

static int cmp_moved_to(const void *a, const void *b)
{
	return strcmp((*(const struct fsb_journal_rec *const *)a)->moved_to,
		      (*(const struct fsb_journal_rec *const *)b)->moved_to);
}

int fsb_cycle_moves(const struct fsb_cycle *c, struct fsb_moves *out)
{
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < c->nrecs; i++)
		out->n += c->recs[i].moved_to != NULL && c->recs[i].prior.exists;
	if (out->n == 0)
		return 0;
	out->v = calloc(out->n, sizeof(*out->v));
	if (out->v == NULL) {
		out->n = 0;
		return -ENOMEM;
	}
	out->n = 0;
	for (size_t i = 0; i < c->nrecs; i++)
		if (c->recs[i].moved_to != NULL && c->recs[i].prior.exists)
			out->v[out->n++] = &c->recs[i];
	qsort(out->v, out->n, sizeof(*out->v), cmp_moved_to);
	return 0;
}

const struct fsb_journal_rec *fsb_moves_into(const struct fsb_moves *m, const struct fsb_pick *p)
{
	const struct fsb_journal_rec key = { .moved_to = p->rec->resolved }, *kp = &key;
	const struct fsb_journal_rec *const *hit;

	if (m->n == 0 || p->nall != 1 || p->rec->prior.exists ||
	    strcmp(p->rec->op, "rename-to") != 0)
		return NULL;
	hit = bsearch(&kp, m->v, m->n, sizeof(*m->v), cmp_moved_to);
	return hit != NULL ? *hit : NULL;
}

void fsb_moves_free(struct fsb_moves *m)
{
	free(m->v);
	memset(m, 0, sizeof(*m));
}

int fsb_backup_object_open(const char *store_dir, const char *hex)
{
	char path[PATH_MAX];
	struct stat st;
	int fd;

	if (!fsb_backup_object_name_ok(hex))
		return -EINVAL;
	if (snprintf(path, sizeof(path), "%s/objects/%.2s/%s", store_dir, hex, hex) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	/* O_NONBLOCK: a FIFO planted under the name would block the open (and
	 * restore) forever; it opens at once and is refused below. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
	/* Not loose: packed after its cycle was sealed (or packed and its
	 * loose copy then removed while this looked). */
	if (fd < 0 && errno == ENOENT)
		return fsb_objpack_open(store_dir, hex);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return -ENXIO;
	}
	return fd;
}

static int write_full(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

int fsb_backup_object_copy(int fd, const char *hex, int out_fd)
{
	static const char digits[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	char got[FSB_SHA256_HEX_LEN + 1];
	unsigned int mdlen = 0;
	EVP_MD_CTX *ctx;
	off_t off = 0;
	char *buf;
	int err = 0;

	buf = malloc(COPY_CHUNK);
	ctx = EVP_MD_CTX_new();
	if (buf == NULL || ctx == NULL || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
		err = -ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t n = pread(fd, buf, COPY_CHUNK, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			goto out;
		}
		if (n == 0)
			break;
		off += n;
		if (!EVP_DigestUpdate(ctx, buf, (size_t)n)) {
			err = -ENOMEM;
			goto out;
		}
		if (out_fd >= 0 && (err = write_full(out_fd, buf, (size_t)n)) < 0)
			goto out;
	}
	if (!EVP_DigestFinal_ex(ctx, md, &mdlen) || mdlen != 32) {
		err = -ENOMEM;
		goto out;
	}
	for (unsigned int i = 0; i < mdlen; i++) {
		got[2 * i] = digits[md[i] >> 4];
		got[2 * i + 1] = digits[md[i] & 15];
	}
	got[FSB_SHA256_HEX_LEN] = '\0';
	err = strcmp(got, hex) == 0 ? 0 : -EBADMSG;
out:
	EVP_MD_CTX_free(ctx);
	free(buf);
	return err;
}

int fsb_backup_object_check(int fd, const struct fsb_prior *p)
{
	struct stat st;

	if (!p->kept)
		return fsb_backup_object_copy(fd, p->object, -1);
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -ENXIO;
	/* A kept inode is the file itself: had anything written to it since
	 * (a holder of an open fd), its size or mtime would tell. */
	if ((uint64_t)st.st_size != p->kept_size || st.st_mtim.tv_sec != p->kept_mtime.tv_sec ||
	    st.st_mtim.tv_nsec != p->kept_mtime.tv_nsec)
		return -ESTALE;
	return 0;
}

/* Copy `fd` from its start into `out_fd`, up to `end` bytes (-1: to its
 * end). 0 or -errno. */
static int copy_content(int fd, int out_fd, off_t end)
{
	char *buf = malloc(COPY_CHUNK);
	off_t off = 0;
	int err = 0;

	if (buf == NULL)
		return -ENOMEM;
	while (end < 0 || off < end) {
		ssize_t n = pread(fd, buf, COPY_CHUNK, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			break;
		}
		if (n == 0)
			break;
		off += n;
		if ((err = write_full(out_fd, buf, (size_t)n)) < 0)
			break;
	}
	free(buf);
	return err;
}

int fsb_backup_object_restore(int fd, const struct fsb_prior *p, int out_fd)
{
	int err;

	if (!p->kept)
		return fsb_backup_object_copy(fd, p->object, out_fd);
	if ((err = fsb_backup_object_check(fd, p)) < 0)
		return err;
	return copy_content(fd, out_fd, -1);
}

int fsb_backup_moved_restore(int fd, const struct fsb_prior *p, int out_fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -ENXIO;
	/* A write after the move would have copied the bytes first (and its
	 * record lent them): a size that differs means something else did. */
	if (p->has_size && (uint64_t)st.st_size != p->size)
		return -ESTALE;
	if (st.st_size > 0 && ioctl(out_fd, FICLONE, fd) == 0)
		return 0;
	return copy_content(fd, out_fd, st.st_size);
}
