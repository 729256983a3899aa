/*
 * cli_ui.c — `fsbroker ui` (docs/ui.md): a backup browser in the web
 * browser for one session's store. This file parses the options, finds the
 * store and answers the page's requests: the timeline of cycles, one
 * cycle's changes, a path's diff and history, and restore / undo through
 * the store's restore engine (fsb_restore_plan, fsb_restore_perform), a
 * dry run first. ui_http.c lets a request in; ui_page.c is the page.
 * Only paths a cycle of this store journaled are ever read or restored.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cJSON.h>

#include "audit.h"
#include "backup_read.h"
#include "cli.h"
#include "config.h"
#include "op.h"
#include "proto_json.h"
#include "restore.h"
#include "restore_undo.h"
#include "session_name.h"
#include "ui_http.h"
#include "ui_page.h"

#define DIFF_MAX_FILE (1024 * 1024)	/* larger files are described, not diffed */
#define DIFF_MAX_OUT (4 * 1024 * 1024)
#define BINARY_PROBE 8192

static const char usage[] =
	"usage: fsbroker ui [--workspace DIR | --session S | --all] [--state-dir DIR]\n"
	"                   [--listen 127.0.0.1:PORT | --listen unix:PATH]\n"
	"\n"
	"Serve a page for the backups of one session on a loopback address and print\n"
	"its URL, which holds a random token: open it in a browser. The page shows the\n"
	"timeline of cycles, what each changed as a tree, a file's diff against the\n"
	"file now and its history, and restores a file, a tool call or a cycle after\n"
	"showing the dry run's plan; it undoes the last restore. Stop it with Ctrl-C.\n"
	"\n"
	"options:\n"
	"  --workspace DIR      the session whose backups are of DIR (default: the\n"
	"                       current directory)\n"
	"  --session S          the session S\n"
	"  --all                every session of the state directory, one at a time\n"
	"  --state-dir DIR      the state directory (default: $XDG_STATE_HOME/fsbroker)\n"
	"  --listen ADDR        127.0.0.1:PORT (default 127.0.0.1:0, a free port) or\n"
	"                       unix:PATH\n"
	"  -h, --help           show this help\n"
	"\n"
	"exit: 0 stopped by a signal, 1 cannot listen, 2 usage error or no such session\n"
	"environment: HOME, XDG_STATE_HOME (where the state directory is)\n"
	"docs: docs/ui.md\n";

struct ui {
	bool all;		/* --all: each request names its session */
	char state[PATH_MAX];
	char session[NAME_MAX + 1];
	char store[PATH_MAX];
	char undo_store[PATH_MAX];
	struct fsb_ui_server *srv;
};

/* ---- answers ------------------------------------------------------------ */

static void reply_json(struct fsb_ui_resp *rs, unsigned status, cJSON *v)
{
	char *s = v != NULL ? fsb_json_print(v, false) : NULL;

	cJSON_Delete(v);
	rs->status = s != NULL ? status : 500;
	rs->type = "application/json";
	rs->body = s != NULL ? s : strdup("{\"error\":{\"code\":500,\"message\":\"out of memory\"}}");
	rs->len = rs->body != NULL ? strlen(rs->body) : 0;
}

static void reply_error(struct fsb_ui_resp *rs, unsigned status, const char *msg)
{
	cJSON *o = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(o, "error");

	cJSON_AddNumberToObject(e, "code", status);
	fsb_json_add_path(e, "message", msg, false);
	reply_json(rs, status, o);
}

/* ---- reading the store -------------------------------------------------- */

/* A cycle number from the query or a body: 0 when it is not one. */
static unsigned cycle_num(const char *s)
{
	char *end;
	unsigned long v;

	if (s == NULL || s[0] < '1' || s[0] > '9')
		return 0;
	errno = 0;
	v = strtoul(s, &end, 10);
	return *end == '\0' && errno == 0 && v <= UINT_MAX ? (unsigned)v : 0;
}

/* What a cycle did to a path, as the timeline counts it. RENAMED_TO is the
 * other end of a rename: listed, not counted twice. */
enum kind { K_CREATED, K_MODIFIED, K_DELETED, K_RENAMED, K_METADATA, K_RENAMED_TO, K__COUNTED =
		K_RENAMED_TO };

static const char *const kind_name[] = {
	"created", "modified", "deleted", "renamed", "metadata", "renamed-to",
};

static enum kind kind_of(const struct fsb_pick *p, const struct fsb_moves *m)
{
	const struct fsb_journal_rec *r = p->rec;
	enum fsb_op op;

	if (r->prior.exists && r->moved_to != NULL)
		return K_RENAMED;
	if (fsb_moves_into(m, p) != NULL)
		return K_RENAMED_TO;
	if (!r->prior.exists)
		return K_CREATED;
	if (p->end != NULL && !p->end->exists)
		return K_DELETED;
	/* An open cycle has no end states yet: its delete records say it. */
	if (p->end == NULL && fsb_op_parse(r->op, &op) == 0 && op == FSB_OP_DELETE)
		return K_DELETED;
	if (r->prior.metadata_only)
		return K_METADATA;
	return K_MODIFIED;
}

/* `s` onto array `arr` in the form fsb_json_add_path gives a field, so
 * that bytes that are not UTF-8 still make valid JSON. */
static void add_str(cJSON *arr, const char *s)
{
	cJSON *tmp = cJSON_CreateObject();

	fsb_json_add_path(tmp, "v", s, false);
	cJSON_AddItemToArray(arr, cJSON_DetachItemFromObject(tmp, "v"));
	cJSON_Delete(tmp);
}

/* The distinct tool calls of `recs`, in the order they first appear. */
static cJSON *tool_calls_json(const struct fsb_journal_rec *const *recs, size_t n)
{
	cJSON *arr = cJSON_CreateArray();

	for (size_t i = 0; i < n; i++) {
		const char *tc = recs[i]->tool_call;
		bool seen = false;
		cJSON *it;

		if (tc[0] == '\0')
			continue;
		cJSON_ArrayForEach(it, arr) {
			if (cJSON_IsString(it) && strcmp(it->valuestring, tc) == 0)
				seen = true;
		}
		if (!seen)
			add_str(arr, tc);
	}
	return arr;
}

/* A request the pack refused, from the audit log. */
struct refusal {
	unsigned cycle;
	cJSON *line;		/* the audit line, parsed */
};

struct refusals {
	struct refusal *v;
	size_t n;
};

static void refusals_free(struct refusals *r)
{
	for (size_t i = 0; i < r->n; i++)
		cJSON_Delete(r->v[i].line);
	free(r->v);
	r->v = NULL;
	r->n = 0;
}

static bool is_str(const cJSON *o, const char *name, const char *want)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	return cJSON_IsString(v) && strcmp(v->valuestring, want) == 0;
}

/*
 * Every refusal of the session's audit log with the cycle it belongs to:
 * the audit log marks each seal with a finalization-modify-backup line that
 * names its cycle, so a refusal belongs to the cycle the next such line
 * seals. Refusals after the last seal (an open cycle's, or a run that
 * backed nothing up) are left out. 0 (also without a log) or -errno.
 */
static int load_refusals(const struct ui *u, struct refusals *out)
{
	char path[PATH_MAX * 2 + 16], *line = NULL;
	size_t cap = 0, pending = 0;
	ssize_t len;
	FILE *f;
	int err = 0;

	out->v = NULL;
	out->n = 0;
	snprintf(path, sizeof(path), "%s/audit/%s.jsonl", u->state, u->session);
	f = fopen(path, "re");
	if (f == NULL)
		return errno == ENOENT ? 0 : -errno;
	while ((len = getline(&line, &cap, f)) > 0) {
		cJSON *o = cJSON_ParseWithLength(line, (size_t)len);
		const cJSON *cy = cJSON_GetObjectItemCaseSensitive(o, "cycle");

		if (is_str(o, "phase", "finalization-modify-backup") && cJSON_IsNumber(cy)) {
			for (size_t i = out->n - pending; i < out->n; i++)
				out->v[i].cycle = (unsigned)cy->valuedouble;
			pending = 0;
		} else if (is_str(o, "decision", "deny")) {
			struct refusal *nv = realloc(out->v, (out->n + 1) * sizeof(*nv));

			if (nv == NULL) {
				cJSON_Delete(o);
				err = -ENOMEM;
				break;
			}
			out->v = nv;
			out->v[out->n++] = (struct refusal){ .cycle = 0, .line = o };
			pending++;
			continue;
		}
		cJSON_Delete(o);
	}
	free(line);
	fclose(f);
	if (err < 0)
		refusals_free(out);
	return err;
}

static unsigned refusals_of(const struct refusals *r, unsigned cycle)
{
	unsigned n = 0;

	for (size_t i = 0; i < r->n; i++)
		n += r->v[i].cycle == cycle;
	return n;
}

/* The refusals of `cycle`: [{op, path, rule, toolCall}]. */
static cJSON *refusals_json(const struct refusals *r, unsigned cycle)
{
	static const char *const keep[][2] = {
		{ "op", "op" }, { "normalisedPath", "path" }, { "rule", "rule" },
		{ "toolCallId", "toolCall" },
	};
	cJSON *arr = cJSON_CreateArray();

	for (size_t i = 0; i < r->n; i++) {
		cJSON *e;

		if (r->v[i].cycle != cycle)
			continue;
		e = cJSON_CreateObject();
		for (size_t k = 0; k < sizeof(keep) / sizeof(keep[0]); k++) {
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(r->v[i].line, keep[k][0]);

			if (v != NULL)
				cJSON_AddItemToObject(e, keep[k][1], cJSON_Duplicate(v, true));
		}
		cJSON_AddItemToArray(arr, e);
	}
	return arr;
}

/* The cycle's entry on the timeline, and with `paths` each path it touched. */
static cJSON *cycle_json(const struct fsb_cycle *cy, bool paths)
{
	const struct fsb_journal_rec **all = NULL;
	struct fsb_picks pk = { 0 };
	struct fsb_moves mv = { 0 };
	cJSON *o = cJSON_CreateObject(), *counts, *arr = NULL;
	unsigned nk[K__COUNTED] = { 0 };

	cJSON_AddNumberToObject(o, "cycle", cy->number);
	cJSON_AddStringToObject(o, "state", fsb_cycle_state_name(cy->state));
	fsb_json_add_path(o, "message", cy->message, false);
	cJSON_AddStringToObject(o, "opened", cy->opened);
	cJSON_AddStringToObject(o, "sealed", cy->sealed);
	cJSON_AddNumberToObject(o, "malformedLines", cy->malformed);
	all = calloc(cy->nrecs + 1, sizeof(*all));
	if (all == NULL || fsb_cycle_pick(cy, NULL, &pk) < 0 || fsb_cycle_moves(cy, &mv) < 0) {
		cJSON_AddStringToObject(o, "error", "out of memory");
		goto out;
	}
	for (size_t i = 0; i < cy->nrecs; i++)
		all[i] = &cy->recs[i];
	cJSON_AddItemToObject(o, "toolCalls", tool_calls_json(all, cy->nrecs));
	if (paths)
		arr = cJSON_AddArrayToObject(o, "paths");
	for (size_t i = 0; i < pk.n; i++) {
		enum kind k = kind_of(&pk.v[i], &mv);

		if (k < K__COUNTED)
			nk[k]++;
		if (arr != NULL) {
			cJSON *e = cJSON_CreateObject();

			fsb_json_add_path(e, "path", pk.v[i].rec->resolved, false);
			cJSON_AddStringToObject(e, "kind", kind_name[k]);
			cJSON_AddStringToObject(e, "type", pk.v[i].rec->prior.exists ?
						pk.v[i].rec->prior.type : pk.v[i].rec->made_type);
			if (pk.v[i].rec->moved_to != NULL)
				fsb_json_add_path(e, "movedTo", pk.v[i].rec->moved_to, false);
			cJSON_AddItemToObject(e, "toolCalls",
					      tool_calls_json(pk.v[i].all, pk.v[i].nall));
			cJSON_AddItemToArray(arr, e);
		}
	}
	counts = cJSON_AddObjectToObject(o, "counts");
	for (size_t j = 0; j < K__COUNTED; j++)
		cJSON_AddNumberToObject(counts, kind_name[j], nk[j]);
	cJSON_AddNumberToObject(o, "pathCount", (double)pk.n);
out:
	free(all);
	fsb_picks_free(&pk);
	fsb_moves_free(&mv);
	return o;
}

static void api_cycles(struct ui *u, struct fsb_ui_resp *rs)
{
	struct refusals ref = { 0 };
	bool ref_ok = true;
	unsigned *nums = NULL;
	size_t n = 0;
	cJSON *arr;
	int rc = fsb_cycles_list(u->store, &nums, &n);

	if (rc < 0) {
		reply_error(rs, 500, strerror(-rc));
		return;
	}
	if (load_refusals(u, &ref) < 0)
		ref_ok = false;
	arr = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		struct fsb_cycle cy;
		char err[PATH_MAX + 256];
		cJSON *o;

		if (fsb_cycle_load(u->store, nums[i], &cy, NULL, err, sizeof(err)) < 0) {
			cJSON *e = cJSON_CreateObject();

			cJSON_AddNumberToObject(e, "cycle", nums[i]);
			fsb_json_add_path(e, "error", err, false);
			cJSON_AddItemToArray(arr, e);
			continue;
		}
		o = cycle_json(&cy, false);
		/* null: the audit log could not be read, not "none". */
		if (ref_ok)
			cJSON_AddNumberToObject(o, "refusals", refusals_of(&ref, cy.number));
		else
			cJSON_AddNullToObject(o, "refusals");
		cJSON_AddItemToArray(arr, o);
		fsb_cycle_free(&cy);
	}
	free(nums);
	refusals_free(&ref);
	reply_json(rs, 200, arr);
}

/* Load the cycle the query's or body's `cycle` names; 0, or replied. */
static int load_cycle(struct ui *u, const char *num, struct fsb_cycle *cy, struct fsb_ui_resp *rs)
{
	char err[PATH_MAX + 256];
	unsigned n = cycle_num(num);
	int rc;

	if (n == 0) {
		reply_error(rs, 400, "cycle is not a cycle number");
		return -EINVAL;
	}
	rc = fsb_cycle_load(u->store, n, cy, NULL, err, sizeof(err));
	if (rc < 0)
		reply_error(rs, rc == -ENOENT ? 404 : 500, err);
	return rc;
}

/*
 * The state of the session's audit chain as `fsbroker audit verify --head`
 * would say it for cycle `cy`: "intact" (and it holds the head the cycle
 * sealed with), "broken" (with the report), "unreadable", or "none" when
 * the cycle recorded no head (open, or recovered after a crash).
 */
static cJSON *audit_json(const struct ui *u, const struct fsb_cycle *cy)
{
	char path[PATH_MAX * 2 + 16], *report = NULL;
	cJSON *o = cJSON_CreateObject();
	size_t rlen = 0;
	FILE *f;
	int rc;

	if (cy->audit_head[0] == '\0') {
		cJSON_AddStringToObject(o, "state", "none");
		return o;
	}
	snprintf(path, sizeof(path), "%s/audit/%s.jsonl", u->state, u->session);
	f = open_memstream(&report, &rlen);
	rc = f != NULL ? fsb_audit_verify(path, cy->audit_head, f) : -ENOMEM;
	if (f != NULL)
		fclose(f);
	cJSON_AddStringToObject(o, "state", rc == 0 ? "intact" : rc == 1 ? "broken" :
				"unreadable");
	if (rc < 0)
		cJSON_AddStringToObject(o, "report", strerror(-rc));
	else if (report != NULL && report[0] != '\0')
		fsb_json_add_path(o, "report", report, false);
	free(report);
	return o;
}

static void api_cycle(struct ui *u, const struct fsb_ui_req *rq, struct fsb_ui_resp *rs)
{
	struct refusals ref;
	struct fsb_cycle cy;
	cJSON *o;

	if (load_cycle(u, fsb_ui_query(rq, "cycle"), &cy, rs) < 0)
		return;
	o = cycle_json(&cy, true);
	cJSON_AddItemToObject(o, "audit", audit_json(u, &cy));
	if (load_refusals(u, &ref) == 0) {
		cJSON_AddItemToObject(o, "refusals", refusals_json(&ref, cy.number));
		refusals_free(&ref);
	} else {
		cJSON_AddNullToObject(o, "refusals");
	}
	reply_json(rs, 200, o);
	fsb_cycle_free(&cy);
}

/* The first record of `path` in the cycle, or NULL: the only paths the
 * page may read or restore are those a cycle journaled. */
static const struct fsb_journal_rec *record_of(const struct fsb_cycle *cy, const char *path)
{
	for (size_t i = 0; path != NULL && i < cy->nrecs; i++) {
		if (strcmp(cy->recs[i].resolved, path) == 0)
			return &cy->recs[i];
	}
	return NULL;
}

/* `fd`'s first bytes hold a NUL: a binary file, not diffed. */
static bool looks_binary(int fd)
{
	char buf[BINARY_PROBE];
	ssize_t n = pread(fd, buf, sizeof(buf), 0);

	return n > 0 && memchr(buf, '\0', (size_t)n) != NULL;
}

/*
 * diff -u of `old_fd` against `new_fd` (either -1: /dev/null) into a
 * malloc'd string. diff reads the very files opened here through /dev/fd.
 * 0 (also when they differ), or -errno.
 */
static int unified_diff(int old_fd, const char *l1, int new_fd, const char *l2, char **out)
{
	char a[32], b[32], *buf = NULL, *nb;
	size_t len = 0;
	int pfd[2], st, err;
	pid_t pid;

	*out = NULL;
	snprintf(a, sizeof(a), old_fd >= 0 ? "/dev/fd/%d" : "/dev/null", old_fd);
	snprintf(b, sizeof(b), new_fd >= 0 ? "/dev/fd/%d" : "/dev/null", new_fd);
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		err = -errno;
		close(pfd[0]);
		close(pfd[1]);
		return err;
	}
	if (pid == 0) {
		char *argv[] = { "diff", "-u", "--label", (char *)l1, "--label", (char *)l2,
				 a, b, NULL };

		if ((old_fd >= 0 && fcntl(old_fd, F_SETFD, 0) < 0) ||
		    (new_fd >= 0 && fcntl(new_fd, F_SETFD, 0) < 0) || dup2(pfd[1], 1) < 0)
			_exit(2);
		execv("/usr/bin/diff", argv);
		_exit(2);
	}
	close(pfd[1]);
	for (;;) {
		ssize_t n;

		nb = realloc(buf, len + 65536 + 1);
		if (nb == NULL)
			break;
		buf = nb;
		n = read(pfd[0], buf + len, 65536);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len > DIFF_MAX_OUT)
			break;
	}
	close(pfd[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (buf == NULL)
		return -ENOMEM;
	buf[len] = '\0';
	if (!WIFEXITED(st) || WEXITSTATUS(st) > 1) {
		free(buf);
		return -EIO;
	}
	*out = buf;
	return 0;
}

/* The path as it is now, opened without following any symlink on the way:
 * a regular file's fd, -1 when it is absent or not a regular file. */
static int open_now(const char *path, struct stat *st, bool *exists)
{
	struct open_how how = {
		.flags = O_CLOEXEC | O_NOFOLLOW | O_PATH,
		.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	char proc[64];
	int fd, rfd;

	*exists = false;
	fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
	if (fd < 0)
		return -1;
	if (fstat(fd, st) < 0) {
		close(fd);
		return -1;
	}
	*exists = true;
	if (!S_ISREG(st->st_mode)) {
		close(fd);
		return -1;
	}
	/* Reopen the very inode for reading (a FIFO was never opened). */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	rfd = open(proc, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	close(fd);
	return rfd;
}

static void api_diff(struct ui *u, const struct fsb_ui_req *rq, struct fsb_ui_resp *rs)
{
	const char *path = fsb_ui_query(rq, "path");
	const struct fsb_journal_rec *r;
	const struct fsb_prior *pr;
	struct fsb_cycle cy;
	struct stat st;
	bool exists;
	char l1[PATH_MAX + 64], l2[PATH_MAX + 16], *text = NULL;
	int obj = -1, mem = -1, cur = -1, rc;
	cJSON *o;

	if (load_cycle(u, fsb_ui_query(rq, "cycle"), &cy, rs) < 0)
		return;
	r = record_of(&cy, path);
	if (r == NULL) {
		reply_error(rs, 404, "the cycle did not touch that path");
		goto out;
	}
	pr = &r->prior;
	o = cJSON_CreateObject();
	fsb_json_add_path(o, "path", r->resolved, false);
	cJSON_AddNumberToObject(o, "cycle", cy.number);
	cur = open_now(r->resolved, &st, &exists);
	cJSON_AddBoolToObject(o, "existsNow", exists);
	cJSON_AddBoolToObject(o, "existedBefore", pr->exists);
	if (pr->exists && strcmp(pr->type, "file") != 0) {
		cJSON_AddStringToObject(o, "described", "not a regular file before the cycle");
	} else if (pr->exists && pr->object[0] == '\0') {
		cJSON_AddStringToObject(o, "described", pr->moved ?
					"renamed: its bytes live on under the new name" :
					pr->skipped[0] != '\0' ? "no copy was kept (skipped)" :
					"no copy of its content was kept");
		if (pr->skipped[0] != '\0')
			cJSON_AddStringToObject(o, "skipped", pr->skipped);
	} else if ((pr->exists && pr->size > DIFF_MAX_FILE) ||
		   (cur >= 0 && st.st_size > DIFF_MAX_FILE)) {
		cJSON_AddStringToObject(o, "described", "too large to diff here");
		cJSON_AddBoolToObject(o, "tooLarge", true);
	} else if (exists && cur < 0) {
		cJSON_AddStringToObject(o, "described", "not a regular file now");
	} else {
		if (pr->exists) {
			obj = fsb_backup_object_open(u->store, pr->object);
			mem = memfd_create("fsb-ui-old", MFD_CLOEXEC);
			rc = obj < 0 ? obj : mem < 0 ? -errno :
			     fsb_backup_object_restore(obj, pr, mem);
			if (rc < 0) {
				cJSON_AddStringToObject(o, "described", rc == -EBADMSG ?
							"the backup object is damaged" :
							"the backup object cannot be read");
				cJSON_AddStringToObject(o, "error", strerror(-rc));
				goto send;
			}
		}
		if ((mem >= 0 && looks_binary(mem)) || (cur >= 0 && looks_binary(cur))) {
			cJSON_AddStringToObject(o, "described", "binary: not shown");
			cJSON_AddBoolToObject(o, "binary", true);
			goto send;
		}
		snprintf(l1, sizeof(l1), "%s (before cycle %u)", r->resolved, cy.number);
		snprintf(l2, sizeof(l2), "%s (now)", r->resolved);
		rc = unified_diff(mem, pr->exists ? l1 : "(absent before the cycle)", cur,
				  exists ? l2 : "(absent now)", &text);
		if (rc < 0) {
			cJSON_AddStringToObject(o, "described", "diff could not run");
			goto send;
		}
		fsb_json_add_path(o, "unified", text, false);
	}
send:
	reply_json(rs, 200, o);
out:
	free(text);
	if (obj >= 0)
		close(obj);
	if (mem >= 0)
		close(mem);
	if (cur >= 0)
		close(cur);
	fsb_cycle_free(&cy);
}

static void api_history(struct ui *u, const struct fsb_ui_req *rq, struct fsb_ui_resp *rs)
{
	const char *path = fsb_ui_query(rq, "path");
	unsigned *nums = NULL;
	size_t n = 0;
	cJSON *arr;
	int rc;

	if (path == NULL) {
		reply_error(rs, 400, "history needs a path");
		return;
	}
	rc = fsb_cycles_list(u->store, &nums, &n);
	if (rc < 0) {
		reply_error(rs, 500, strerror(-rc));
		return;
	}
	arr = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		struct fsb_cycle cy;
		struct fsb_picks pk = { 0 };
		struct fsb_moves mv = { 0 };
		char err[PATH_MAX + 256];

		if (fsb_cycle_load(u->store, nums[i], &cy, NULL, err, sizeof(err)) < 0)
			continue;
		if (fsb_cycle_pick(&cy, NULL, &pk) == 0 && fsb_cycle_moves(&cy, &mv) == 0) {
			for (size_t j = 0; j < pk.n; j++) {
				cJSON *e;

				if (strcmp(pk.v[j].rec->resolved, path) != 0)
					continue;
				e = cJSON_CreateObject();
				cJSON_AddNumberToObject(e, "cycle", cy.number);
				fsb_json_add_path(e, "message", cy.message, false);
				cJSON_AddStringToObject(e, "opened", cy.opened);
				cJSON_AddStringToObject(e, "kind", kind_name[kind_of(&pk.v[j], &mv)]);
				cJSON_AddItemToObject(e, "toolCalls",
						      tool_calls_json(pk.v[j].all, pk.v[j].nall));
				cJSON_AddItemToArray(arr, e);
			}
		}
		fsb_picks_free(&pk);
		fsb_moves_free(&mv);
		fsb_cycle_free(&cy);
	}
	free(nums);
	reply_json(rs, 200, arr);
}

/* ---- restore and undo --------------------------------------------------- */

/*
 * Plan and perform (or, with dry_run, only say) the restore `o` asks of
 * cycle `cy`, and reply with what happened to each path.
 */
static void do_restore(const struct fsb_restore_opts *o, const struct fsb_cycle *cy,
		       struct fsb_ui_resp *rs)
{
	struct fsb_restore r = { 0 };
	cJSON *out, *items;
	bool ok = true;
	int rc = fsb_restore_plan(o, cy, &r);

	if (rc == -EBUSY) {
		reply_error(rs, 409, "the cycle is still open (not sealed): restore it once it "
			    "is sealed, or with `fsbroker backup restore --force`");
		goto out;
	}
	if (rc == -ENOENT) {
		reply_error(rs, 404, "that tool call touched nothing in the cycle");
		goto out;
	}
	if (rc < 0) {
		reply_error(rs, 500, strerror(-rc));
		goto out;
	}
	if (r.n + r.extra > 0 && fsb_restore_perform(o, cy, &r) < 0) {
		reply_error(rs, 500, r.undo_err);
		goto out;
	}
	out = cJSON_CreateObject();
	cJSON_AddNumberToObject(out, "cycle", cy->number);
	cJSON_AddBoolToObject(out, "dryRun", o->dry_run);
	items = cJSON_AddArrayToObject(out, "items");
	for (size_t i = 0; i < r.n + r.extra; i++) {
		cJSON *e = cJSON_CreateObject();

		fsb_json_add_path(e, "path", r.items[i].path, false);
		cJSON_AddStringToObject(e, "result", r.items[i].verb);
		fsb_json_add_path(e, "detail", r.items[i].detail, false);
		cJSON_AddItemToArray(items, e);
		if (!o->dry_run && r.items[i].res != FSB_RES_OK)
			ok = false;
	}
	cJSON_AddBoolToObject(out, "ok", ok && r.undo_cycle >= 0);
	if (!o->dry_run)
		cJSON_AddNumberToObject(out, "undoCycle", r.undo_cycle);
	reply_json(rs, 200, out);
out:
	fsb_restore_free(&r);
}

static void api_restore(struct ui *u, const struct fsb_ui_req *rq, struct fsb_ui_resp *rs)
{
	cJSON *b = cJSON_ParseWithLength(rq->body, rq->body_len);
	const cJSON *num = cJSON_GetObjectItemCaseSensitive(b, "cycle");
	const cJSON *path = cJSON_GetObjectItemCaseSensitive(b, "path");
	const cJSON *tc = cJSON_GetObjectItemCaseSensitive(b, "toolCall");
	const cJSON *dry = cJSON_GetObjectItemCaseSensitive(b, "dryRun");
	char nbuf[24], *paths[1];
	struct fsb_restore_opts o = {
		.store = u->store, .state = u->state, .session = u->session,
	};
	struct fsb_cycle cy;

	if (!cJSON_IsObject(b) || !cJSON_IsNumber(num) || !cJSON_IsBool(dry) ||
	    (path != NULL && !cJSON_IsString(path)) || (tc != NULL && !cJSON_IsString(tc)) ||
	    (path != NULL && tc != NULL)) {
		reply_error(rs, 400, "the body is {\"cycle\": N, \"dryRun\": BOOL} with at most "
			    "one of \"path\" and \"toolCall\"");
		goto out;
	}
	snprintf(nbuf, sizeof(nbuf), "%.0f", num->valuedouble);
	if (load_cycle(u, nbuf, &cy, rs) < 0)
		goto out;
	o.dry_run = cJSON_IsTrue(dry);
	if (path != NULL) {
		if (record_of(&cy, path->valuestring) == NULL) {
			reply_error(rs, 404, "the cycle did not touch that path");
			goto free_cycle;
		}
		paths[0] = path->valuestring;
		o.paths = paths;
		o.npaths = 1;
	}
	if (tc != NULL)
		o.tool_call = tc->valuestring;
	do_restore(&o, &cy, rs);
free_cycle:
	fsb_cycle_free(&cy);
out:
	cJSON_Delete(b);
}

/* The last restore kept what it changed as the newest cycle of
 * restore_backup: restoring that cycle undoes it. As `backup undo`, no
 * toggle: once undone, it is not undone again (fsb_undo_target). */
static void api_undo(struct ui *u, const struct fsb_ui_req *rq, struct fsb_ui_resp *rs)
{
	cJSON *b = cJSON_ParseWithLength(rq->body, rq->body_len);
	const cJSON *dry = cJSON_GetObjectItemCaseSensitive(b, "dryRun");
	struct fsb_restore_opts o = {
		.store = u->undo_store, .state = u->state, .session = u->session, .undo = true,
	};
	struct fsb_cycle cy;
	char err[PATH_MAX + 256];
	int rc;

	if (!cJSON_IsBool(dry)) {
		reply_error(rs, 400, "the body is {\"dryRun\": BOOL}");
		goto out;
	}
	o.dry_run = cJSON_IsTrue(dry);
	rc = fsb_undo_target(u->undo_store, false, &cy, err, sizeof(err));
	if (rc == -ENOENT) {
		reply_error(rs, 404, "there is no restore to undo");
		goto out;
	}
	if (rc == -EALREADY) {
		fsb_cycle_free(&cy);
		reply_error(rs, 409, "nothing to undo: the last restore was undone already "
			    "(`fsbroker backup redo` does it again)");
		goto out;
	}
	if (rc < 0) {
		reply_error(rs, 500, err);
		goto out;
	}
	do_restore(&o, &cy, rs);
	fsb_cycle_free(&cy);
out:
	cJSON_Delete(b);
}

/* ---- sessions ------------------------------------------------------------ */

/* Point `u` at session `name`'s stores: 0, or -ENOENT when the state dir
 * has no such session (or `name` is not a session id). */
static int use_session(struct ui *u, const char *name)
{
	char dir[PATH_MAX + NAME_MAX + 16];
	struct stat st;

	if (name == NULL || strlen(name) >= sizeof(u->session) ||
	    fsb_backup_store_dir(u->state, name, u->store, sizeof(u->store)) < 0 ||
	    fsb_undo_store_dir(u->state, name, u->undo_store, sizeof(u->undo_store)) < 0)
		return -ENOENT;
	snprintf(dir, sizeof(dir), "%s/sessions/%s", u->state, name);
	if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return -ENOENT;
	snprintf(u->session, sizeof(u->session), "%s", name);
	return 0;
}

/* The sessions the page may show: every one with --all, else its own. */
static void api_sessions(struct ui *u, struct fsb_ui_resp *rs)
{
	cJSON *o = cJSON_CreateObject(), *arr;
	char **names = NULL;
	size_t n = 0;
	int rc;

	cJSON_AddBoolToObject(o, "all", u->all);
	arr = cJSON_AddArrayToObject(o, "sessions");
	if (!u->all) {
		add_str(arr, u->session);
		reply_json(rs, 200, o);
		return;
	}
	rc = fsb_backup_sessions(u->state, &names, &n);
	if (rc < 0 && rc != -ENOENT) {
		cJSON_Delete(o);
		reply_error(rs, 500, strerror(-rc));
		return;
	}
	for (size_t i = 0; i < n; i++)
		add_str(arr, names[i]);
	fsb_backup_sessions_free(names, n);
	reply_json(rs, 200, o);
}

/* ---- the handler -------------------------------------------------------- */

/* The page, with the CSRF token where it says @CSRF@. */
static void page(struct ui *u, struct fsb_ui_resp *rs)
{
	size_t len = (size_t)fsb_ui_page_len;
	const char *mark = memmem(fsb_ui_page, len, "@CSRF@", 6);
	const char *csrf = fsb_ui_csrf(u->srv);
	size_t head = mark != NULL ? (size_t)(mark - fsb_ui_page) : len;
	char *b = malloc(len + FSB_UI_TOKEN_HEX + 1);

	if (b == NULL) {
		reply_error(rs, 500, "out of memory");
		return;
	}
	memcpy(b, fsb_ui_page, head);
	rs->len = head;
	if (mark != NULL) {
		memcpy(b + head, csrf, strlen(csrf));
		memcpy(b + head + strlen(csrf), mark + 6, len - head - 6);
		rs->len = len - 6 + strlen(csrf);
	}
	b[rs->len] = '\0';
	rs->status = 200;
	rs->type = "text/html; charset=utf-8";
	rs->body = b;
}

static void handle(void *arg, const struct fsb_ui_req *rq, struct fsb_ui_resp *rs)
{
	struct ui *u = arg;
	bool get = strcmp(rq->method, "GET") == 0;

	if (get && strcmp(rq->url, "/") == 0) {
		page(u, rs);
		return;
	}
	if (get && strcmp(rq->url, "/api/sessions") == 0) {
		api_sessions(u, rs);
		return;
	}
	/* With --all, every request names its session; never one outside
	 * the state dir (fsb_backup_store_dir refuses '/', "." and ".."). */
	if (u->all && use_session(u, fsb_ui_query(rq, "session")) < 0) {
		reply_error(rs, 404, "name a session of the state directory with ?session=ID");
		return;
	}
	if (get && strcmp(rq->url, "/api/cycles") == 0)
		api_cycles(u, rs);
	else if (get && strcmp(rq->url, "/api/cycle") == 0)
		api_cycle(u, rq, rs);
	else if (get && strcmp(rq->url, "/api/diff") == 0)
		api_diff(u, rq, rs);
	else if (get && strcmp(rq->url, "/api/history") == 0)
		api_history(u, rq, rs);
	else if (!get && strcmp(rq->url, "/api/restore") == 0)
		api_restore(u, rq, rs);
	else if (!get && strcmp(rq->url, "/api/undo") == 0)
		api_undo(u, rq, rs);
	else
		reply_error(rs, 404, "no such page");
}

/* ---- the command -------------------------------------------------------- */

/* The store of --session, else of the workspace's session. 0, or the exit
 * status after saying why. */
static int locate(struct ui *u, const char *workspace)
{
	char real[PATH_MAX], dir[PATH_MAX + 16];
	struct stat st;
	int rc;

	if (u->all) {
		snprintf(dir, sizeof(dir), "%s/sessions", u->state);
		if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
			fprintf(stderr, "fsbroker ui: there are no sessions under %s\n", u->state);
			return 2;
		}
		return 0;
	}
	if (u->session[0] == '\0') {
		if (realpath(workspace != NULL ? workspace : ".", real) == NULL) {
			fprintf(stderr, "fsbroker ui: workspace %s: %s\n",
				workspace != NULL ? workspace : ".", strerror(errno));
			return 2;
		}
		rc = fsb_session_find(u->state, real, u->session, sizeof(u->session));
		if (rc < 0) {
			fprintf(stderr, "fsbroker ui: no session has backups of the workspace %s "
				"under %s/sessions; name one with --session\n", real, u->state);
			return 2;
		}
	}
	if (fsb_backup_store_dir(u->state, u->session, u->store, sizeof(u->store)) < 0 ||
	    fsb_undo_store_dir(u->state, u->session, u->undo_store, sizeof(u->undo_store)) < 0) {
		fprintf(stderr, "fsbroker ui: '%s' is not a session id\n", u->session);
		return 2;
	}
	snprintf(dir, sizeof(dir), "%s/sessions/%s", u->state, u->session);
	if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "fsbroker ui: there is no session '%s' under %s/sessions\n",
			u->session, u->state);
		return 2;
	}
	return 0;
}

/** `fsbroker ui`: serve the backup browser until a signal stops it. */
int fsb_cli_ui(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "workspace", required_argument, NULL, 'w' },
		{ "session", required_argument, NULL, 'S' },
		{ "state-dir", required_argument, NULL, 's' },
		{ "listen", required_argument, NULL, 'l' },
		{ "all", no_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct ui u = { 0 };
	const char *workspace = NULL, *listen_at = "127.0.0.1:0";
	char err[PATH_MAX + 128];
	sigset_t set;
	int opt, sig, rc;

	fsb_default_state_dir(u.state, sizeof(u.state));
	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (opt) {
		case 'w':
			workspace = optarg;
			break;
		case 'S':
			if (strlen(optarg) >= sizeof(u.session)) {
				fprintf(stderr, "fsbroker ui: '%s' is not a session id\n", optarg);
				return 2;
			}
			snprintf(u.session, sizeof(u.session), "%s", optarg);
			break;
		case 's':
			snprintf(u.state, sizeof(u.state), "%s", optarg);
			break;
		case 'l':
			listen_at = optarg;
			break;
		case 'a':
			u.all = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			return fsb_cli_bad_option("fsbroker ui", argv, 2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "fsbroker ui: takes no arguments; see fsbroker ui --help\n");
		return 2;
	}
	if ((workspace != NULL) + (u.session[0] != '\0') + u.all > 1) {
		fprintf(stderr, "fsbroker ui: --workspace, --session and --all each say which "
			"sessions to show; give one\n");
		return 2;
	}
	rc = locate(&u, workspace);
	if (rc != 0)
		return rc;
	/* The daemon's thread inherits the mask: the signals come here. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (fsb_ui_listen(listen_at, handle, &u, &u.srv, err, sizeof(err)) < 0) {
		fprintf(stderr, "fsbroker ui: %s\n", err);
		return 1;
	}
	if (u.all)
		printf("Backups of every session under %s: open %s\n", u.state, fsb_ui_url(u.srv));
	else
		printf("Backups of session %s: open %s\n", u.session, fsb_ui_url(u.srv));
	fflush(stdout);
	while (sigwait(&set, &sig) != 0)
		;
	fsb_ui_stop(u.srv);
	return 0;
}
