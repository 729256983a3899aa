/*
 * launch_record.c — the last sandbox's command line, as a JSON object in
 * <state dir>/launch/<FNV-1a of the key>.json (launch_record.h):
 *
 *   {"format": 1, "key": "...", "plan": [...], "types": [...],
 *    "keepEnv": [...], "readsBroker": false, "landlock": true, "tmp": "/tmp"}
 *
 * "types" says, for each option of the plan that is a path, what was
 * there when the plan was made ("f", "d", "l", "c", "b", "p", "s"; "-"
 * for nothing; "" for an option that is not a path). A record is used
 * only while every one is still the same: bwrap makes a mount point that
 * is missing, and on a tree bound read-write that would be a file or a
 * directory made on the host (a masked .env deleted since, say) by a
 * sandbox that is then killed.
 */
#include "launch_record.h"
#include "private_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#define FORMAT 1
/* Where the run's scoped socket was: never the start of a real path. */
#define SOCKET_MARK "@socket@"

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* <state_dir>/launch/<hash>.json, the directory made 0700 when `make`. */
static int record_path(const char *state_dir, const char *key, bool make, char *out, size_t len)
{
	char dir[PATH_MAX];
	struct stat st;

	if (state_dir == NULL || state_dir[0] != '/' ||
	    (size_t)snprintf(dir, sizeof(dir), "%s/launch", state_dir) >= sizeof(dir))
		return -ENAMETOOLONG;
	if (make && mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	if (lstat(dir, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) != 0)
		return -EPERM;
	if ((size_t)snprintf(out, len, "%s/%016llx.json", dir, (unsigned long long)fnv1a(key)) >=
	    len)
		return -ENAMETOOLONG;
	return 0;
}

/* What is at `path` now, as "types" spells it. */
static const char *type_at(const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return "-";
	switch (st.st_mode & S_IFMT) {
	case S_IFREG:
		return "f";
	case S_IFDIR:
		return "d";
	case S_IFLNK:
		return "l";
	case S_IFCHR:
		return "c";
	case S_IFBLK:
		return "b";
	case S_IFIFO:
		return "p";
	default:
		return "s";
	}
}

/* Whether every path of the plan is what "types" says was there. */
static bool same_types(char **plan, size_t nplan, const cJSON *types)
{
	size_t i = 0;
	const cJSON *t;

	if (!cJSON_IsArray(types) || (size_t)cJSON_GetArraySize(types) != nplan)
		return false;
	cJSON_ArrayForEach(t, types) {
		const char *want = cJSON_GetStringValue(t);

		if (want == NULL)
			return false;
		if (plan[i][0] == '/' ? strcmp(type_at(plan[i]), want) != 0 : want[0] != '\0')
			return false;
		i++;
	}
	return true;
}

static void free_strings(char **v, size_t n)
{
	for (size_t i = 0; v != NULL && i < n; i++)
		free(v[i]);
	free(v);
}

/* A JSON array of strings as a NULL-terminated vector, the marker of the
 * scoped socket replaced by `socket` (NULL: kept as it is). */
static int strings_of(const cJSON *a, const char *socket, char ***out, size_t *n)
{
	size_t i = 0;
	const cJSON *it;
	char **v;

	*out = NULL;
	*n = 0;
	if (!cJSON_IsArray(a))
		return -EINVAL;
	v = calloc((size_t)cJSON_GetArraySize(a) + 1, sizeof(*v));
	if (v == NULL)
		return -ENOMEM;
	cJSON_ArrayForEach(it, a) {
		const char *s = cJSON_GetStringValue(it);

		if (s == NULL) {
			free_strings(v, i);
			return -EINVAL;
		}
		if (socket != NULL && strcmp(s, SOCKET_MARK) == 0) {
			v[i] = strdup(socket);
		} else {
			v[i] = strdup(s);
		}
		if (v[i] == NULL) {
			free_strings(v, i);
			return -ENOMEM;
		}
		i++;
	}
	*out = v;
	*n = i;
	return 0;
}

int fsb_launch_record_load(const char *state_dir, const char *key, const char *socket,
			   struct fsb_launch_record *out)
{
	char path[PATH_MAX], *text;
	const cJSON *format, *k, *tmp, *rb, *ll;
	size_t len;
	cJSON *js;
	int rc;

	memset(out, 0, sizeof(*out));
	if (record_path(state_dir, key, false, path, sizeof(path)) < 0 ||
	    (text = fsb_private_file_read(path, FSB_LAUNCH_RECORD_MAX_BYTES, &len)) == NULL)
		return -ENOENT;
	js = cJSON_Parse(text);
	free(text);
	format = cJSON_GetObjectItemCaseSensitive(js, "format");
	k = cJSON_GetObjectItemCaseSensitive(js, "key");
	tmp = cJSON_GetObjectItemCaseSensitive(js, "tmp");
	rb = cJSON_GetObjectItemCaseSensitive(js, "readsBroker");
	ll = cJSON_GetObjectItemCaseSensitive(js, "landlock");
	rc = -ENOENT;
	if (cJSON_IsNumber(format) && format->valuedouble == FORMAT && cJSON_IsString(k) &&
	    strcmp(k->valuestring, key) == 0 && cJSON_IsString(tmp) && cJSON_IsBool(rb) &&
	    cJSON_IsBool(ll)) {
		rc = strings_of(cJSON_GetObjectItemCaseSensitive(js, "plan"), socket, &out->plan,
				&out->nplan);
		if (rc == 0 && !same_types(out->plan, out->nplan,
					   cJSON_GetObjectItemCaseSensitive(js, "types")))
			rc = -EINVAL;
		if (rc == 0)
			rc = strings_of(cJSON_GetObjectItemCaseSensitive(js, "keepEnv"), NULL,
					&out->keep_env, &out->nkeep);
		out->reads_broker = cJSON_IsTrue(rb);
		out->landlock = cJSON_IsTrue(ll);
		if (rc == 0 && (out->tmp = strdup(tmp->valuestring)) == NULL)
			rc = -ENOMEM;
		if (rc == -EINVAL)
			rc = -ENOENT;
	}
	cJSON_Delete(js);
	if (rc < 0)
		fsb_launch_record_free(out);
	return rc;
}

/* `s`, or the marker when it is the scoped socket's path `socket`. */
static cJSON *marked(const char *s, const char *socket)
{
	return cJSON_CreateString(socket[0] != '\0' && strcmp(s, socket) == 0 ? SOCKET_MARK : s);
}

static char *record_text(const char *key, const char *socket, const struct fsb_mount_plan *plan,
			 const struct fsb_run_launch *l)
{
	cJSON *js = cJSON_CreateObject(), *p = cJSON_CreateArray(), *k = cJSON_CreateArray();
	cJSON *t = cJSON_CreateArray();
	bool ok = js != NULL && p != NULL && k != NULL && t != NULL;
	char *text = NULL;

	for (size_t i = 0; ok && i < plan->argc; i++) {
		const char *a = plan->argv[i];

		ok = cJSON_AddItemToArray(p, marked(a, socket)) &&
		     cJSON_AddItemToArray(t, cJSON_CreateString(a[0] == '/' ? type_at(a) : ""));
	}
	for (size_t i = 0; ok && i < l->nkeep; i++)
		ok = cJSON_AddItemToArray(k, cJSON_CreateString(l->keep_env[i]));
	if (ok) {
		cJSON_AddNumberToObject(js, "format", FORMAT);
		cJSON_AddStringToObject(js, "key", key);
		cJSON_AddItemToObject(js, "plan", p);
		cJSON_AddItemToObject(js, "types", t);
		cJSON_AddItemToObject(js, "keepEnv", k);
		p = k = t = NULL;
		cJSON_AddBoolToObject(js, "readsBroker", l->reads_broker);
		cJSON_AddBoolToObject(js, "landlock", l->landlock);
		cJSON_AddStringToObject(js, "tmp", l->tmp);
		text = cJSON_PrintUnformatted(js);
	}
	cJSON_Delete(p);
	cJSON_Delete(k);
	cJSON_Delete(t);
	cJSON_Delete(js);
	return text;
}

/* A record's name: 16 hex digits and ".json". */
static enum fsb_kept_kind launch_record(const char *name, void *arg)
{
	(void)arg;
	return strlen(name) == 16 + 5 && strspn(name, "0123456789abcdef") == 16 &&
			       strcmp(name + 16, ".json") == 0
		       ? FSB_KEPT_MEMBER
		       : FSB_KEPT_OTHER;
}

int fsb_launch_record_save(const char *state_dir, const char *key, const char *socket,
			   const struct fsb_mount_plan *plan, const struct fsb_run_launch *l)
{
	char path[PATH_MAX], *text, *old;
	size_t len, old_len;
	int rc;

	if ((rc = record_path(state_dir, key, true, path, sizeof(path))) < 0)
		return rc;
	if ((text = record_text(key, socket, plan, l)) == NULL)
		return -ENOMEM;
	len = strlen(text);
	old = fsb_private_file_read(path, FSB_LAUNCH_RECORD_MAX_BYTES, &old_len);
	if (old != NULL && old_len == len && memcmp(old, text, len) == 0) {
		/* Used again: the newest, as far as pruning goes. */
		rc = utimensat(AT_FDCWD, path, NULL, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
	} else if ((rc = fsb_private_file_write(path, (const void *const[]){ text }, &len, 1)) ==
		   0) {
		*strrchr(path, '/') = '\0';
		fsb_private_dir_keep_newest(path, launch_record, NULL, FSB_LAUNCH_RECORDS_KEPT);
	}
	free(old);
	free(text);
	return rc;
}

void fsb_launch_record_free(struct fsb_launch_record *r)
{
	free_strings(r->plan, r->nplan);
	free_strings(r->keep_env, r->nkeep);
	free(r->tmp);
	memset(r, 0, sizeof(*r));
}
