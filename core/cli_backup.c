/*
 * cli_backup.c — `fsbroker backup list|show|restore` (DESIGN §6.3,
 * docs/restore.md): read a session's backup store and put the paths a cycle
 * or a tool call touched back to their state at its start.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cJSON.h>

#include "backup_read.h"
#include "cli.h"
#include "config.h"
#include "proto_json.h"

static const char usage[] =
	"usage: fsbroker backup list [--json]\n"
	"       fsbroker backup show CYCLE|--last [--json]\n"
	"       fsbroker backup restore CYCLE|--last [PATH...] [--tool-call ID] [--dry-run]\n"
	"                               [--force] [--json]\n"
	"options that locate the store: --state-dir DIR (default $XDG_STATE_HOME/fsbroker),\n"
	"  --session ID (needed when the state dir holds more than one session)\n"
	"exit: 0 done, 1 something was skipped or failed, 2 usage error or no such\n"
	"  session, cycle or tool call\n"
	"docs: docs/restore.md\n";

struct cli {
	char state[PATH_MAX];
	char session[NAME_MAX + 1];
	char store[PATH_MAX];
	const char *cycle_arg;	/* CYCLE as given, NULL with --last */
	char **paths;		/* restore: the PATH arguments */
	int npaths;
	const char *tool_call;
	bool json, last, dry_run, force;
};

/* ---- output helpers ----------------------------------------------------- */

/*
 * Paths and messages come from the journal, i.e. from what a sandboxed
 * command named: control bytes are shown escaped so that a file name cannot
 * forge lines of this output or drive the terminal.
 */
static void put_safe(FILE *f, const char *s)
{
	/* Bytes that are not UTF-8 are shown as escapes too, so two names
	 * that differ only there cannot look the same. */
	bool utf8 = fsb_utf8_valid(s, strlen(s));

	for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
		if (*p < 0x20 || *p == 0x7f || (*p >= 0x80 && !utf8))
			fprintf(f, "\\x%02x", *p);
		else
			fputc(*p, f);
	}
}

/* "2026-11-29T20:01:02.003Z" → "2026-11-29 20:01:02"; anything else as is. */
static const char *short_time(const char *t, char *buf, size_t len)
{
	if (t[0] == '\0')
		return "-";
	if (strlen(t) >= 19 && t[10] == 'T') {
		snprintf(buf, len, "%.10s %.8s", t, t + 11);
		return buf;
	}
	return t;
}

static void print_json(cJSON *v)
{
	char *s = cJSON_Print(v);

	if (s != NULL)
		puts(s);
	free(s);
}

/* ---- locating the store ------------------------------------------------- */

static int locate_store(struct cli *c)
{
	char dir[PATH_MAX + 16];
	struct stat st;
	char **names;
	size_t n;
	int rc;

	if (c->session[0] == '\0') {
		rc = fsb_backup_sessions(c->state, &names, &n);
		if (rc < 0 && rc != -ENOENT) {
			fprintf(stderr, "fsbroker backup: cannot read %s/sessions: %s\n", c->state,
				strerror(-rc));
			return 2;
		}
		if (rc == -ENOENT || n == 0) {
			fprintf(stderr, "fsbroker backup: there are no sessions under %s/sessions "
				"(another state dir? name it with --state-dir)\n", c->state);
			if (rc == 0)
				fsb_backup_sessions_free(names, n);
			return 2;
		}
		if (n > 1) {
			fprintf(stderr, "fsbroker backup: %s/sessions holds %zu sessions; name one "
				"with --session:", c->state, n);
			for (size_t i = 0; i < n; i++) {
				fputs(i ? ", " : " ", stderr);
				put_safe(stderr, names[i]);
			}
			fputc('\n', stderr);
			fsb_backup_sessions_free(names, n);
			return 2;
		}
		snprintf(c->session, sizeof(c->session), "%s", names[0]);
		fsb_backup_sessions_free(names, n);
	}
	rc = fsb_backup_store_dir(c->state, c->session, c->store, sizeof(c->store));
	if (rc < 0) {
		fprintf(stderr, "fsbroker backup: '%s' is not a session id\n", c->session);
		return 2;
	}
	snprintf(dir, sizeof(dir), "%s/sessions/%s", c->state, c->session);
	if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "fsbroker backup: there is no session '%s' under %s/sessions\n",
			c->session, c->state);
		return 2;
	}
	return 0;
}

/*
 * The cycle CYCLE or --last names. Returns 0 with *num set, or the exit
 * status after saying why (2: no such cycle; 0 with *num 0: the store is
 * empty, which was said).
 */
static int pick_cycle(const struct cli *c, unsigned *num)
{
	unsigned *nums;
	size_t n;
	char *end;
	unsigned long v;
	int rc;

	*num = 0;
	if (!c->last) {
		errno = 0;
		v = strtoul(c->cycle_arg, &end, 10);
		if (c->cycle_arg[0] < '1' || c->cycle_arg[0] > '9' || *end != '\0' || errno != 0 ||
		    v > UINT_MAX) {
			fprintf(stderr, "fsbroker backup: '%s' is not a cycle number (see `fsbroker "
				"backup list`)\n", c->cycle_arg);
			return 2;
		}
		*num = (unsigned)v;
		return 0;
	}
	rc = fsb_cycles_list(c->store, &nums, &n);
	if (rc < 0) {
		fprintf(stderr, "fsbroker backup: cannot read %s/cycles: %s\n", c->store,
			strerror(-rc));
		return 2;
	}
	if (n == 0) {
		fprintf(stderr, "fsbroker backup: session %s has no backup cycles yet: there is "
			"no last cycle\n", c->session);
		return 2;
	}
	*num = nums[n - 1];
	free(nums);
	return 0;
}

static int load(const struct cli *c, unsigned num, struct fsb_cycle *cy)
{
	char err[PATH_MAX + 256];
	int rc = fsb_cycle_load(c->store, num, cy, stderr, err, sizeof(err));

	if (rc < 0)
		fprintf(stderr, "fsbroker backup: %s\n", err);
	return rc;
}

/* ---- list ---------------------------------------------------------------- */

static cJSON *cycle_summary_json(const struct fsb_cycle *cy)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "cycle", cy->number);
	cJSON_AddStringToObject(o, "state", fsb_cycle_state_name(cy->state));
	cJSON_AddStringToObject(o, "opened", cy->opened);
	if (cy->state == FSB_CYCLE_OPEN)
		cJSON_AddNullToObject(o, "sealed");
	else
		cJSON_AddStringToObject(o, "sealed", cy->sealed);
	cJSON_AddNumberToObject(o, "paths", (double)cy->npaths);
	cJSON_AddNumberToObject(o, "objects", (double)cy->nobjects);
	fsb_json_add_path(o, "message", cy->message, false);
	cJSON_AddStringToObject(o, "auditHead", cy->audit_head);
	cJSON_AddNumberToObject(o, "malformedLines", cy->malformed);
	return o;
}

static int cmd_list(const struct cli *c)
{
	unsigned *nums;
	size_t n;
	int rc, status = 0;
	cJSON *arr = NULL;

	rc = fsb_cycles_list(c->store, &nums, &n);
	if (rc < 0) {
		fprintf(stderr, "fsbroker backup: cannot read %s/cycles: %s\n", c->store,
			strerror(-rc));
		return 1;
	}
	if (c->json)
		arr = cJSON_CreateArray();
	if (n == 0 && !c->json)
		printf("Session %s has no backup cycles yet: nothing was backed up in it.\n",
		       c->session);
	if (n > 0 && !c->json)
		printf("CYCLE  STATE      OPENED (UTC)         SEALED (UTC)         PATHS  OBJECTS  "
		       "MESSAGE\n");
	for (size_t i = 0; i < n; i++) {
		struct fsb_cycle cy;
		char t1[32], t2[32];

		if (load(c, nums[i], &cy) < 0) {
			status = 1;
			continue;
		}
		if (c->json) {
			cJSON_AddItemToArray(arr, cycle_summary_json(&cy));
		} else {
			printf("%5u  %-9s  %-19s  %-19s  %5zu  %7zu  ", cy.number,
			       fsb_cycle_state_name(cy.state), short_time(cy.opened, t1, sizeof(t1)),
			       cy.state == FSB_CYCLE_OPEN ? "-" : short_time(cy.sealed, t2, sizeof(t2)),
			       cy.npaths, cy.nobjects);
			put_safe(stdout, cy.message);
			putchar('\n');
		}
		fsb_cycle_free(&cy);
	}
	if (c->json) {
		print_json(arr);
		cJSON_Delete(arr);
	}
	free(nums);
	return status;
}

/* ---- show ---------------------------------------------------------------- */

/* What the path was before the cycle (or tool call), in a few words. */
static void describe_before(const struct fsb_pick *p, char *buf, size_t len)
{
	const struct fsb_prior *pr = &p->rec->prior;
	bool gone = p->end != NULL && !p->end->exists;

	if (!pr->exists) {
		snprintf(buf, len, "%s", gone ? "created, gone by the end" : "created");
	} else if (strcmp(pr->type, "file") == 0) {
		if (pr->skipped[0] != '\0')
			snprintf(buf, len, "%s%s %s (%llu bytes)", gone ? "deleted, " : "",
				 "skipped", pr->skipped, (unsigned long long)pr->size);
		else if (pr->object[0] == '\0')
			snprintf(buf, len, "%s (%llu bytes, no backup)", gone ? "deleted" : "modified",
				 (unsigned long long)pr->size);
		else
			snprintf(buf, len, "%s (%llu bytes)", gone ? "deleted" : "modified",
				 (unsigned long long)pr->size);
	} else {
		snprintf(buf, len, "%s%s", gone ? "deleted " : "",
			 strcmp(pr->type, "dir") == 0 ? "directory" : pr->type);
	}
}

/* The distinct ops of a path's records, in order: "write,delete". */
static void ops_of(const struct fsb_pick *p, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < p->nall; i++) {
		bool seen = false;

		for (size_t j = 0; j < i && !seen; j++)
			seen = strcmp(p->all[j]->op, p->all[i]->op) == 0;
		if (seen)
			continue;
		if (used + strlen(p->all[i]->op) + 2 >= len)
			break;
		used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? "," : "",
					 p->all[i]->op);
	}
}

static cJSON *timespec_json(const struct timespec *ts)
{
	cJSON *a = cJSON_CreateArray();

	cJSON_AddItemToArray(a, cJSON_CreateNumber((double)ts->tv_sec));
	cJSON_AddItemToArray(a, cJSON_CreateNumber((double)ts->tv_nsec));
	return a;
}

static cJSON *prior_json(const struct fsb_prior *p)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddBoolToObject(o, "exists", p->exists);
	if (!p->exists)
		return o;
	cJSON_AddStringToObject(o, "type", p->type);
	if (p->has_mode)
		cJSON_AddNumberToObject(o, "mode", p->mode);
	if (p->has_owner) {
		cJSON_AddNumberToObject(o, "uid", p->uid);
		cJSON_AddNumberToObject(o, "gid", p->gid);
	}
	if (p->has_size)
		cJSON_AddNumberToObject(o, "size", (double)p->size);
	if (p->has_mtime)
		cJSON_AddItemToObject(o, "mtime", timespec_json(&p->mtime));
	if (p->object[0] != '\0')
		cJSON_AddStringToObject(o, "object", p->object);
	if (p->skipped[0] != '\0')
		cJSON_AddStringToObject(o, "skipped", p->skipped);
	if (p->target != NULL)
		fsb_json_add_path(o, "target", p->target, false);
	return o;
}

static cJSON *end_json(const struct fsb_end_state *e)
{
	cJSON *o;

	if (e == NULL)
		return cJSON_CreateNull();
	o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "exists", e->exists);
	if (e->type[0] != '\0')
		cJSON_AddStringToObject(o, "type", e->type);
	if (e->has_size)
		cJSON_AddNumberToObject(o, "size", (double)e->size);
	if (e->has_mtime)
		cJSON_AddItemToObject(o, "mtime", timespec_json(&e->mtime));
	if (e->has_ino)
		cJSON_AddNumberToObject(o, "ino", (double)e->ino);
	return o;
}

static int cmd_show(const struct cli *c)
{
	struct fsb_cycle cy;
	struct fsb_picks picks;
	unsigned num;
	int rc;
	size_t opw = 2, tcw = 9;
	char before[96], ops[128], t1[32], t2[32];

	rc = pick_cycle(c, &num);
	if (rc != 0)
		return rc;
	rc = load(c, num, &cy);
	if (rc < 0)
		return rc == -ENOENT ? 2 : 1;
	if (fsb_cycle_pick(&cy, NULL, &picks) < 0) {
		fprintf(stderr, "fsbroker backup: out of memory\n");
		fsb_cycle_free(&cy);
		return 1;
	}
	if (c->json) {
		cJSON *o = cycle_summary_json(&cy), *arr;

		/* Here `paths` is the list itself, not its length. */
		cJSON_DeleteItemFromObjectCaseSensitive(o, "paths");
		arr = cJSON_AddArrayToObject(o, "paths");
		for (size_t i = 0; i < picks.n; i++) {
			const struct fsb_pick *p = &picks.v[i];
			cJSON *e = cJSON_CreateObject(), *oa;

			fsb_json_add_path(e, "path", p->rec->resolved, false);
			cJSON_AddStringToObject(e, "op", p->rec->op);
			oa = cJSON_AddArrayToObject(e, "ops");
			for (size_t j = 0; j < p->nall; j++)
				cJSON_AddItemToArray(oa, cJSON_CreateString(p->all[j]->op));
			cJSON_AddStringToObject(e, "toolCallId", p->rec->tool_call);
			cJSON_AddNumberToObject(e, "records", (double)p->nall);
			describe_before(p, before, sizeof(before));
			cJSON_AddStringToObject(e, "before", before);
			cJSON_AddItemToObject(e, "prior", prior_json(&p->rec->prior));
			cJSON_AddItemToObject(e, "end", end_json(p->end));
			cJSON_AddItemToArray(arr, e);
		}
		print_json(o);
		cJSON_Delete(o);
		goto out;
	}
	printf("cycle %u (%s%s): opened %s UTC", cy.number, fsb_cycle_state_name(cy.state),
	       cy.state == FSB_CYCLE_OPEN ? ", not sealed yet" : "",
	       short_time(cy.opened, t1, sizeof(t1)));
	if (cy.state != FSB_CYCLE_OPEN)
		printf(", sealed %s UTC", short_time(cy.sealed, t2, sizeof(t2)));
	printf("\nmessage: ");
	if (cy.state == FSB_CYCLE_OPEN)
		printf("(none until the cycle is sealed)");
	else
		put_safe(stdout, cy.message);
	printf("\n%zu path%s, %zu object%s\n", cy.npaths, cy.npaths == 1 ? "" : "s",
	       cy.nobjects, cy.nobjects == 1 ? "" : "s");
	if (picks.n == 0)
		goto out;
	for (size_t i = 0; i < picks.n; i++) {
		ops_of(&picks.v[i], ops, sizeof(ops));
		if (strlen(ops) > opw)
			opw = strlen(ops);
		if (strlen(picks.v[i].rec->tool_call) > tcw)
			tcw = strlen(picks.v[i].rec->tool_call);
	}
	tcw = tcw > 40 ? 40 : tcw;
	printf("\n%-*s  %-*s  %-32s  PATH\n", (int)opw, "OP", (int)tcw, "TOOL CALL",
	       "BEFORE THE CYCLE");
	for (size_t i = 0; i < picks.n; i++) {
		const struct fsb_pick *p = &picks.v[i];

		ops_of(p, ops, sizeof(ops));
		describe_before(p, before, sizeof(before));
		printf("%-*s  %-*s  %-32s  ", (int)opw, ops, (int)tcw,
		       p->rec->tool_call[0] != '\0' ? p->rec->tool_call : "-", before);
		put_safe(stdout, p->rec->resolved);
		putchar('\n');
	}
out:
	fsb_picks_free(&picks);
	fsb_cycle_free(&cy);
	return 0;
}

/* ---- restore: walking without symlinks ----------------------------------- */

static int root_fd = -1;

/*
 * Open the directory that holds `path` (a normalised absolute path) for the
 * *at() calls that change it. The walk from "/" uses openat2 with
 * RESOLVE_NO_SYMLINKS: a directory on the way that is a symlink now (say,
 * replaced after the cycle by a link to elsewhere) fails the walk with
 * ELOOP instead of leading restore into whatever it points at. Every call
 * below then names only the last component, without following it.
 * Returns the fd or -errno; *name points at the last component.
 */
static int open_parent(const char *path, const char **name)
{
	const char *slash = strrchr(path, '/');
	struct open_how how = {
		.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	char rel[PATH_MAX];
	size_t len = (size_t)(slash - path);
	long fd;

	*name = slash + 1;
	if (len == 0) {
		strcpy(rel, ".");
	} else {
		if (len >= sizeof(rel))
			return -ENAMETOOLONG;
		memcpy(rel, path + 1, len - 1);
		rel[len - 1] = '\0';
	}
	do
		fd = syscall(SYS_openat2, root_fd, rel, &how, sizeof(how));
	while (fd < 0 && errno == EINTR);
	if (fd < 0 && errno == EACCES) {
		/* A directory we may write into but not list. */
		how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
		fd = syscall(SYS_openat2, root_fd, rel, &how, sizeof(how));
	}
	return fd < 0 ? -errno : (int)fd;
}

static const char *walk_error(int err)
{
	switch (-err) {
	case ELOOP:
		return "a directory on the way to it is a symlink now; restore does not follow "
		       "symlinks";
	case ENOTDIR:
		return "something on the way to it is not a directory now";
	case ENOENT:
		return "its parent directory does not exist";
	case ENOSYS:
		return "this kernel has no openat2 (Linux 5.6 or later), which restore needs to "
		       "walk paths without following symlinks";
	default:
		return strerror(-err);
	}
}

/* A fresh name in the parent for building the restored file before the rename. */
static void temp_name(char *buf, size_t len)
{
	unsigned char r[6] = { 0 };

	if (getrandom(r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
		unsigned long v = (unsigned long)getpid() ^ (unsigned long)random();

		memcpy(r, &v, sizeof(r) < sizeof(v) ? sizeof(r) : sizeof(v));
	}
	snprintf(buf, len, ".fsbroker-restore-%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2], r[3],
		 r[4], r[5]);
}

static const char *type_of(mode_t m)
{
	return S_ISREG(m) ? "file" : S_ISDIR(m) ? "dir" : S_ISLNK(m) ? "symlink"
	       : S_ISFIFO(m) ? "fifo" : S_ISSOCK(m) ? "socket" : S_ISCHR(m) ? "chardev"
	       : "blockdev";
}

/* How the path now differs from the end state the cycle recorded, or NULL. */
static const char *end_differs(const struct fsb_end_state *e, bool exists, const struct stat *st)
{
	if (e->exists && !exists)
		return "it was removed since";
	if (!e->exists && exists)
		return "it was created since";
	if (!exists)
		return NULL;
	if (e->type[0] != '\0' && strcmp(e->type, type_of(st->st_mode)) != 0)
		return "its type differs";
	/* cJSON reads numbers as doubles: an inode number beyond 2^53, which
	 * the store writes as exact digits, comes back rounded, so compare it
	 * rounded the same way. */
	if (e->has_ino && (double)e->ino != (double)st->st_ino)
		return "its inode differs";
	if (e->has_size && e->size != (uint64_t)st->st_size)
		return "its size differs";
	if (e->has_mtime && (e->mtime.tv_sec != st->st_mtim.tv_sec ||
			     e->mtime.tv_nsec != st->st_mtim.tv_nsec))
		return "its modification time differs";
	return NULL;
}

/* ---- restore: planning --------------------------------------------------- */

enum act { ACT_NONE, ACT_REMOVE, ACT_FILE, ACT_DIR, ACT_SYMLINK, ACT_FIFO, ACT_OTHER };
enum res { RES_PENDING, RES_OK, RES_SKIPPED, RES_FAILED };

struct item {
	const struct fsb_pick *pick;	/* NULL: a PATH argument the cycle did not touch */
	const char *path;
	int depth;
	enum act act;
	bool exists;			/* at planning */
	struct stat now;		/* at planning, when `exists` */
	bool parent_missing;
	enum res res;
	char verb[24];			/* "restored", "skipped", ... */
	char detail[400];
	char note[200];			/* "; forced: ...", appended on success */
	bool paren;			/* detail in parentheses, else after ": " */
	bool owner_set;
};

static void settle(struct item *it, enum res res, const char *verb, bool paren, const char *fmt,
		   ...) __attribute__((format(printf, 5, 6)));

static void settle(struct item *it, enum res res, const char *verb, bool paren, const char *fmt,
		   ...)
{
	va_list ap;

	it->res = res;
	it->paren = paren;
	snprintf(it->verb, sizeof(it->verb), "%s", verb);
	va_start(ap, fmt);
	vsnprintf(it->detail, sizeof(it->detail), fmt, ap);
	va_end(ap);
}

static void append(struct item *it, const char *s)
{
	size_t n = strlen(it->note);

	snprintf(it->note + n, sizeof(it->note) - n, "%s", s);
}

static int depth_of(const char *p)
{
	int d = 0;

	for (; *p != '\0'; p++)
		d += *p == '/';
	return d;
}

/* What kind of restore the prior state asks for; settles what cannot be done. */
static void choose_action(struct item *it)
{
	const struct fsb_prior *p = &it->pick->rec->prior;

	if (!p->exists) {
		it->act = ACT_REMOVE;
	} else if (strcmp(p->type, "file") == 0) {
		it->act = ACT_FILE;
		if (p->object[0] != '\0')
			return;
		settle(it, RES_SKIPPED, "skipped", false,
		       "not restorable: no backup was taken (%s)",
		       strcmp(p->skipped, "too-large") == 0 ? "too large"
		       : strcmp(p->skipped, "skip-rule") == 0 ? "skip rule"
		       : p->skipped[0] != '\0' ? p->skipped : "the journal names no object");
	} else if (strcmp(p->type, "dir") == 0) {
		it->act = ACT_DIR;
	} else if (strcmp(p->type, "symlink") == 0) {
		it->act = ACT_SYMLINK;
		if (p->target == NULL)
			settle(it, RES_SKIPPED, "skipped", false,
			       "not restorable: the journal holds no target for this symlink");
	} else if (strcmp(p->type, "fifo") == 0) {
		it->act = ACT_FIFO;
	} else {
		it->act = ACT_OTHER;
		settle(it, RES_SKIPPED, "skipped", false,
		       "not restorable: restore does not recreate a %s", p->type);
	}
}

static void plan_item(const struct cli *c, const struct fsb_cycle *cy, struct item *it)
{
	const struct fsb_prior *p = &it->pick->rec->prior;
	const char *name, *diff;
	int pfd, fd, rc;

	if (it->res != RES_PENDING)
		return;
	pfd = open_parent(it->path, &name);
	if (pfd == -ENOENT) {
		it->parent_missing = true;
	} else if (pfd < 0) {
		settle(it, RES_SKIPPED, "skipped", false, "%s", walk_error(pfd));
		return;
	} else {
		it->exists = fstatat(pfd, name, &it->now, AT_SYMLINK_NOFOLLOW) == 0;
		rc = it->exists ? 0 : -errno;
		close(pfd);
		if (rc < 0 && rc != -ENOENT) {
			settle(it, RES_SKIPPED, "skipped", false, "cannot examine it: %s",
			       strerror(-rc));
			return;
		}
	}
	/* The end state tells a path the cycle left as it was from one someone
	 * changed since: that later change would be lost, so it needs --force. */
	if (cy->state == FSB_CYCLE_RECOVERED) {
		/* Sealed at a restart: what the paths were when the crash came
		 * is not known, so any of them may hold a change made after it. */
		if (!c->force) {
			settle(it, RES_SKIPPED, "skipped", false,
			       "no end state was recorded (the cycle was recovered after a "
			       "crash): use --force");
			return;
		}
		snprintf(it->note, sizeof(it->note), "; forced, though no end state was recorded: "
			 "the cycle was recovered after a crash");
	} else if (cy->state != FSB_CYCLE_OPEN) {
		if (it->pick->end == NULL && !c->force) {
			settle(it, RES_SKIPPED, "skipped", false,
			       "the cycle recorded no end state for it, so a change made after "
			       "the cycle cannot be ruled out (use --force)");
			return;
		}
		diff = it->pick->end == NULL ? "no end state was recorded"
		       : end_differs(it->pick->end, it->exists, &it->now);
		if (diff != NULL && !c->force) {
			settle(it, RES_SKIPPED, "skipped", false,
			       "changed since the cycle ended (%s; use --force)", diff);
			return;
		}
		if (diff != NULL)
			snprintf(it->note, sizeof(it->note), "; forced, though it changed after the "
				 "cycle: %s", diff);
	}
	if (it->act == ACT_REMOVE && !it->exists) {
		settle(it, RES_OK, "unchanged", false, "already absent");
		return;
	}
	if (it->act == ACT_FILE) {
		/* A corrupted object is found before anything is changed, and a
		 * dry run reports it too; the copy checks the hash once more. */
		fd = fsb_backup_object_open(c->store, p->object);
		rc = fd < 0 ? fd : fsb_backup_object_copy(fd, p->object, -1);
		if (fd >= 0)
			close(fd);
		if (rc == -EBADMSG)
			settle(it, RES_SKIPPED, "skipped", false,
			       "its backup object %s is corrupted (its content does not match its "
			       "SHA-256 name); nothing was written", p->object);
		else if (rc == -ENOENT)
			settle(it, RES_SKIPPED, "skipped", false,
			       "its backup object %s is missing from %s/objects", p->object,
			       c->store);
		else if (rc == -ENXIO)
			settle(it, RES_SKIPPED, "skipped", false,
			       "its backup object %s is not a regular file; nothing was written",
			       p->object);
		else if (rc < 0)
			settle(it, RES_SKIPPED, "skipped", false,
			       "cannot read its backup object %s: %s", p->object, strerror(-rc));
	}
}

/* ---- restore: doing it --------------------------------------------------- */

/* Still the file that was planned for? Anything else appeared meanwhile. */
static bool same_as_planned(const struct item *it, int pfd, const char *name, struct stat *st)
{
	bool exists = fstatat(pfd, name, st, AT_SYMLINK_NOFOLLOW) == 0;

	if (!exists)
		memset(st, 0, sizeof(*st));
	if (exists != it->exists)
		return false;
	return !exists || (st->st_dev == it->now.st_dev && st->st_ino == it->now.st_ino &&
			   (st->st_mode & S_IFMT) == (it->now.st_mode & S_IFMT));
}

static void do_remove(struct item *it, int pfd, const char *name)
{
	struct stat st;
	bool dir;

	if (!same_as_planned(it, pfd, name, &st)) {
		settle(it, RES_FAILED, "failed", false, "it changed while restoring; not removed");
		return;
	}
	dir = S_ISDIR(st.st_mode);
	if (unlinkat(pfd, name, dir ? AT_REMOVEDIR : 0) < 0) {
		if (errno == ENOTEMPTY || errno == EEXIST)
			settle(it, RES_SKIPPED, "skipped", false,
			       "a directory the cycle created, not empty now: not removed");
		else
			settle(it, RES_FAILED, "failed", false, "cannot remove it: %s",
			       strerror(errno));
		return;
	}
	settle(it, RES_OK, "removed", true, "%s%s",
	       dir ? "a directory created by the cycle" : "created by the cycle", it->note);
}

/* Clear the way for a rename: an empty directory left where the prior
 * state had something else (the cycle removed a file and made a directory). */
static int clear_dir(struct item *it, int pfd, const char *name, const struct stat *st)
{
	if (!S_ISDIR(st->st_mode))
		return 0;
	if (unlinkat(pfd, name, AT_REMOVEDIR) == 0)
		return 0;
	settle(it, RES_FAILED, "failed", false, "a directory is there now%s",
	       errno == ENOTEMPTY || errno == EEXIST ? " and it is not empty: not replaced" : "");
	return -1;
}

static void set_owner_fd(struct item *it, int fd, const struct fsb_prior *p)
{
	struct stat st;

	if (!p->has_owner || fstat(fd, &st) < 0 || (st.st_uid == p->uid && st.st_gid == p->gid))
		return;
	/* Only where we may: an ordinary user cannot give a file away. */
	if (fchown(fd, p->uid, p->gid) == 0)
		it->owner_set = true;
}

static void times_of(const struct fsb_prior *p, struct timespec ts[2])
{
	ts[0] = p->atime;
	ts[1] = p->mtime;
	if (!p->has_atime)
		ts[0].tv_nsec = UTIME_OMIT;
	if (!p->has_mtime)
		ts[1].tv_nsec = UTIME_OMIT;
}

static void do_file(const struct cli *c, struct item *it, int pfd, const char *name)
{
	const struct fsb_prior *p = &it->pick->rec->prior;
	char tmp[64];
	struct timespec ts[2];
	struct stat st;
	int fd = -1, obj = -1, rc, tries = 0;
	const char *what;

	if (!same_as_planned(it, pfd, name, &st)) {
		settle(it, RES_FAILED, "failed", false, "it changed while restoring; not touched");
		return;
	}
	/* O_EXCL and O_NOFOLLOW: the temporary file is new, ours, and not
	 * something a link placed there points at. */
	do {
		temp_name(tmp, sizeof(tmp));
		fd = openat(pfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	} while (fd < 0 && errno == EEXIST && ++tries < 100);
	if (fd < 0) {
		settle(it, RES_FAILED, "failed", false, "cannot create a file beside it: %s",
		       strerror(errno));
		return;
	}
	obj = fsb_backup_object_open(c->store, p->object);
	rc = obj < 0 ? obj : fsb_backup_object_copy(obj, p->object, fd);
	if (obj >= 0)
		close(obj);
	if (rc == -EBADMSG) {
		what = "its backup object is corrupted (its content does not match its SHA-256 "
		       "name); nothing was written";
		goto fail_msg;
	}
	if (rc < 0) {
		/* rc, not errno: close(obj) may have changed errno since. */
		what = strerror(-rc);
		goto fail_msg;
	}
	if (fsync(fd) < 0)
		goto fail;
	/* Owner before mode: chown clears the set-id bits. */
	set_owner_fd(it, fd, p);
	if (p->has_mode && fchmod(fd, p->mode) < 0)
		goto fail;
	times_of(p, ts);
	if (futimens(fd, ts) < 0)
		goto fail;
	if (close(fd) < 0) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	if (clear_dir(it, pfd, name, &st) < 0) {
		unlinkat(pfd, tmp, 0);
		return;
	}
	if (renameat(pfd, tmp, pfd, name) < 0)
		goto fail;
	fsync(pfd);
	settle(it, RES_OK, "restored", true, "content, mode, times%s%s",
	       it->owner_set ? ", owner" : "", it->note);
	return;

fail:
	what = strerror(errno);
fail_msg:
	if (fd >= 0)
		close(fd);
	unlinkat(pfd, tmp, 0);
	settle(it, RES_FAILED, "failed", false, "%s", what);
}

/* Symlinks and FIFOs: made under a temporary name, then renamed over. */
static void do_special(struct item *it, int pfd, const char *name)
{
	const struct fsb_prior *p = &it->pick->rec->prior;
	struct timespec ts[2];
	struct stat st, st2;
	char tmp[64];
	int rc, tries = 0, saved;

	if (!same_as_planned(it, pfd, name, &st)) {
		settle(it, RES_FAILED, "failed", false, "it changed while restoring; not touched");
		return;
	}
	do {
		temp_name(tmp, sizeof(tmp));
		rc = it->act == ACT_SYMLINK ? symlinkat(p->target, pfd, tmp)
					    : mkfifoat(pfd, tmp, 0600);
	} while (rc < 0 && errno == EEXIST && ++tries < 100);
	if (rc < 0) {
		settle(it, RES_FAILED, "failed", false, "cannot create it beside: %s",
		       strerror(errno));
		return;
	}
	if (p->has_owner && fstatat(pfd, tmp, &st2, AT_SYMLINK_NOFOLLOW) == 0 &&
	    (st2.st_uid != p->uid || st2.st_gid != p->gid) &&
	    fchownat(pfd, tmp, p->uid, p->gid, AT_SYMLINK_NOFOLLOW) == 0)
		it->owner_set = true;
	if (it->act == ACT_FIFO && p->has_mode &&
	    fchmodat(pfd, tmp, p->mode, AT_SYMLINK_NOFOLLOW) < 0)
		goto fail;
	times_of(p, ts);
	if (utimensat(pfd, tmp, ts, AT_SYMLINK_NOFOLLOW) < 0)
		goto fail;
	if (clear_dir(it, pfd, name, &st) < 0) {
		unlinkat(pfd, tmp, 0);
		return;
	}
	if (renameat(pfd, tmp, pfd, name) < 0)
		goto fail;
	fsync(pfd);
	if (it->act == ACT_SYMLINK) {
		settle(it, RES_OK, "restored", true, "symlink, target, times%s%s",
		       it->owner_set ? ", owner" : "", it->note);
	} else {
		settle(it, RES_OK, "restored", true, "fifo, mode, times%s%s",
		       it->owner_set ? ", owner" : "", it->note);
	}
	return;

fail:
	saved = errno;
	unlinkat(pfd, tmp, 0);
	settle(it, RES_FAILED, "failed", false, "%s", strerror(saved));
}

/* A directory: made (or kept) now; its mode and times come last, once
 * everything inside it is back (see finish_dir). */
static void do_dir(struct item *it, int pfd, const char *name)
{
	const struct fsb_prior *p = &it->pick->rec->prior;
	struct stat st;
	int fd;

	if (!same_as_planned(it, pfd, name, &st)) {
		settle(it, RES_FAILED, "failed", false, "it changed while restoring; not touched");
		return;
	}
	if (it->exists && !S_ISDIR(st.st_mode) && unlinkat(pfd, name, 0) < 0) {
		settle(it, RES_FAILED, "failed", false, "cannot remove the %s there now: %s",
		       type_of(st.st_mode), strerror(errno));
		return;
	}
	if ((!it->exists || !S_ISDIR(st.st_mode)) && mkdirat(pfd, name, 0700) < 0) {
		settle(it, RES_FAILED, "failed", false, "cannot make the directory: %s",
		       strerror(errno));
		return;
	}
	fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		settle(it, RES_FAILED, "failed", false, "cannot open the directory: %s",
		       strerror(errno));
		return;
	}
	set_owner_fd(it, fd, p);
	close(fd);
}

static void finish_dir(struct item *it, int pfd, const char *name)
{
	const struct fsb_prior *p = &it->pick->rec->prior;
	struct timespec ts[2];
	int fd;

	fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		settle(it, RES_FAILED, "failed", false, "cannot open the directory: %s",
		       strerror(errno));
		return;
	}
	times_of(p, ts);
	if ((p->has_mode && fchmod(fd, p->mode) < 0) || futimens(fd, ts) < 0) {
		settle(it, RES_FAILED, "failed", false, "cannot set its mode and times: %s",
		       strerror(errno));
		close(fd);
		return;
	}
	close(fd);
	settle(it, RES_OK, "restored", true, "directory, mode, times%s%s",
	       it->owner_set ? ", owner" : "", it->note);
}

static void execute(const struct cli *c, struct item *it, bool finish)
{
	const char *name;
	int pfd = open_parent(it->path, &name);

	if (pfd < 0) {
		settle(it, RES_FAILED, "failed", false, "%s", walk_error(pfd));
		return;
	}
	if (finish)
		finish_dir(it, pfd, name);
	else if (it->act == ACT_REMOVE)
		do_remove(it, pfd, name);
	else if (it->act == ACT_FILE)
		do_file(c, it, pfd, name);
	else if (it->act == ACT_DIR)
		do_dir(it, pfd, name);
	else
		do_special(it, pfd, name);
	close(pfd);
}

/* Removals deepest first, everything else parents first. */
static int cmp_exec(const void *a, const void *b)
{
	const struct item *x = a, *y = b;
	int cx = x->act == ACT_REMOVE, cy = y->act == ACT_REMOVE;

	if (cx != cy)
		return cy - cx;
	if (x->depth != y->depth)
		return cx ? y->depth - x->depth : x->depth - y->depth;
	return strcmp(x->path, y->path);
}

/* The PATH argument as the journal spells paths: absolute, without "."
 * or ".." components, and through the real directory when it exists. */
static char *canonical_arg(const char *arg)
{
	char joined[PATH_MAX * 2], cwd[PATH_MAX], out[PATH_MAX], real[PATH_MAX];
	size_t n = 0;
	char *save = NULL, *comp, *last;

	if (arg[0] != '/' && getcwd(cwd, sizeof(cwd)) != NULL)
		snprintf(joined, sizeof(joined), "%s/%s", cwd, arg);
	else
		snprintf(joined, sizeof(joined), "%s", arg);
	out[0] = '\0';
	for (comp = strtok_r(joined, "/", &save); comp != NULL; comp = strtok_r(NULL, "/", &save)) {
		if (strcmp(comp, ".") == 0)
			continue;
		if (strcmp(comp, "..") == 0) {
			char *s = strrchr(out, '/');

			n = s != NULL ? (size_t)(s - out) : 0;
			out[n] = '\0';
			continue;
		}
		n += (size_t)snprintf(out + n, sizeof(out) - n, "/%s", comp);
		if (n >= sizeof(out))
			return NULL;
	}
	if (n == 0)
		return strdup("/");
	/* The journal holds real paths: /tmp/x named through a symlinked
	 * directory is still /private/tmp/x there. The last component is
	 * left alone, as it may be a symlink the cycle touched. */
	last = strrchr(out, '/');
	if (last != out) {
		*last = '\0';
		if (realpath(out, real) != NULL) {
			snprintf(joined, sizeof(joined), "%s/%s", strcmp(real, "/") ? real : "",
				 last + 1);
			return strdup(joined);
		}
		*last = '/';
	}
	return strdup(out);
}

static bool arg_matches(const char *arg, const struct fsb_journal_rec *r)
{
	size_t n = strlen(arg);

	if (strcmp(arg, "/") == 0 || strcmp(r->path, arg) == 0)
		return true;
	return strncmp(r->resolved, arg, n) == 0 && (r->resolved[n] == '\0' || r->resolved[n] == '/');
}

static void print_item(const struct item *it)
{
	fputs(it->verb, stdout);
	putchar(' ');
	put_safe(stdout, it->path);
	if (it->paren)
		printf(" (%s)\n", it->detail);
	else
		printf(": %s\n", it->detail);
}

static int cmd_restore(const struct cli *c)
{
	struct fsb_cycle cy;
	struct fsb_picks picks = { 0 };
	struct item *items = NULL;
	char **args = NULL;
	bool *arg_used = NULL;
	size_t n = 0, extra = 0;
	unsigned num;
	int rc, status = 0;

	rc = pick_cycle(c, &num);
	if (rc != 0)
		return rc;
	rc = load(c, num, &cy);
	if (rc < 0)
		return rc == -ENOENT ? 2 : 1;
	if (cy.state == FSB_CYCLE_OPEN && !c->force) {
		fprintf(stderr, "fsbroker backup: cycle %u is still open (not sealed): it has no "
			"end states, so restore cannot tell the cycle's own changes from later "
			"ones. Restore it after it is sealed, or now with --force.\n", cy.number);
		fsb_cycle_free(&cy);
		return 1;
	}
	if (fsb_cycle_pick(&cy, c->tool_call, &picks) < 0)
		goto nomem;
	if (c->tool_call != NULL && picks.n == 0) {
		fprintf(stderr, "fsbroker backup: tool call '%s' touched nothing in cycle %u (see "
			"`fsbroker backup show %u`)\n", c->tool_call, cy.number, cy.number);
		status = 2;
		goto out;
	}
	if (c->npaths > 0) {
		args = calloc((size_t)c->npaths, sizeof(*args));
		arg_used = calloc((size_t)c->npaths, sizeof(*arg_used));
		if (args == NULL || arg_used == NULL)
			goto nomem;
		for (int i = 0; i < c->npaths; i++)
			if ((args[i] = canonical_arg(c->paths[i])) == NULL)
				goto nomem;
	}
	items = calloc(picks.n + (size_t)c->npaths + 1, sizeof(*items));
	if (items == NULL)
		goto nomem;
	for (size_t i = 0; i < picks.n; i++) {
		bool want = c->npaths == 0;

		for (int a = 0; a < c->npaths; a++) {
			for (size_t k = 0; k < picks.v[i].nall; k++) {
				if (arg_matches(args[a], picks.v[i].all[k])) {
					want = arg_used[a] = true;
					break;
				}
			}
		}
		if (!want)
			continue;
		items[n].pick = &picks.v[i];
		items[n].path = picks.v[i].rec->resolved;
		items[n].depth = depth_of(items[n].path);
		/* Before sorting: the action decides the order. */
		choose_action(&items[n]);
		n++;
	}
	for (int a = 0; a < c->npaths; a++) {
		if (arg_used[a])
			continue;
		items[n + extra].path = args[a];
		items[n + extra].act = ACT_OTHER;
		settle(&items[n + extra], RES_SKIPPED, "skipped", false, "%s did not touch it",
		       c->tool_call != NULL ? "that tool call" : "the cycle");
		extra++;
	}
	/* With --json, stdout holds only the JSON: sentences go to stderr. */
	if (n + extra == 0) {
		fprintf(c->json ? stderr : stdout,
			"Cycle %u touched no paths: there is nothing to restore.\n", cy.number);
		if (c->json)
			puts("[]");
		goto out;
	}
	if (cy.state == FSB_CYCLE_OPEN)
		fprintf(c->json ? stderr : stdout, "Cycle %u is still open: restoring without "
			"checking for changes made after it (--force).\n", cy.number);

	qsort(items, n, sizeof(*items), cmp_exec);
	for (size_t i = 0; i < n; i++) {
		plan_item(c, &cy, &items[i]);
		/* A parent that is missing now must come back first, from a
		 * directory this restore recreates (parents are planned first). */
		if (items[i].res == RES_PENDING && items[i].parent_missing &&
		    items[i].act != ACT_REMOVE) {
			bool ok = false;
			size_t plen = (size_t)(strrchr(items[i].path, '/') - items[i].path);

			for (size_t j = 0; j < i && !ok; j++)
				ok = items[j].act == ACT_DIR && items[j].res == RES_PENDING &&
				     strlen(items[j].path) == plen &&
				     strncmp(items[j].path, items[i].path, plen) == 0;
			if (!ok)
				settle(&items[i], RES_SKIPPED, "skipped", false,
				       "its parent directory does not exist, and the cycle did not "
				       "remove it");
		}
		if (items[i].res == RES_PENDING && items[i].pick->later_by_others)
			append(&items[i], "; later tool calls changed it too, and that is undone as "
			       "well");
	}
	for (size_t i = 0; i < n; i++) {
		struct item *it = &items[i];

		if (it->res != RES_PENDING)
			continue;
		if (c->dry_run) {
			const char *what = it->act == ACT_REMOVE
				? (S_ISDIR(it->now.st_mode) ? "a directory created by the cycle; "
				   "only once it is empty" : "created by the cycle")
				: it->act == ACT_FILE ? "content, mode, times"
				: it->act == ACT_DIR ? "directory, mode, times"
				: it->act == ACT_SYMLINK ? "symlink, target, times" : "fifo, mode, times";
			settle(it, RES_OK, it->act == ACT_REMOVE ? "would remove" : "would restore",
			       true, "%s%s", what, it->note);
			continue;
		}
		execute(c, it, false);
	}
	/* Directories get their mode and times once what is inside is back. */
	for (size_t i = n; i-- > 0;)
		if (!c->dry_run && items[i].act == ACT_DIR && items[i].res == RES_PENDING)
			execute(c, &items[i], true);

	if (c->json) {
		cJSON *arr = cJSON_CreateArray();

		for (size_t i = 0; i < n + extra; i++) {
			cJSON *o = cJSON_CreateObject();

			fsb_json_add_path(o, "path", items[i].path, false);
			cJSON_AddStringToObject(o, "result", items[i].verb);
			cJSON_AddStringToObject(o, "detail", items[i].detail);
			cJSON_AddItemToArray(arr, o);
		}
		print_json(arr);
		cJSON_Delete(arr);
	}
	for (size_t i = 0; i < n + extra; i++) {
		if (!c->json)
			print_item(&items[i]);
		if (items[i].res != RES_OK)
			status = 1;
	}
	goto out;

nomem:
	fprintf(stderr, "fsbroker backup: out of memory\n");
	status = 1;
out:
	for (int a = 0; args != NULL && a < c->npaths; a++)
		free(args[a]);
	free(args);
	free(arg_used);
	free(items);
	fsb_picks_free(&picks);
	fsb_cycle_free(&cy);
	return status;
}

/* ---- the command --------------------------------------------------------- */

int fsb_cli_backup(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "state-dir", required_argument, NULL, 's' },
		{ "session", required_argument, NULL, 'S' },
		{ "json", no_argument, NULL, 'j' },
		{ "last", no_argument, NULL, 'l' },
		{ "tool-call", required_argument, NULL, 't' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cli c;
	const char *sub;
	int opt, rc, pos;

	memset(&c, 0, sizeof(c));
	if (argc < 2) {
		fputs(usage, stderr);
		return 2;
	}
	sub = argv[1];
	if (strcmp(sub, "-h") == 0 || strcmp(sub, "--help") == 0) {
		fputs(usage, stdout);
		return 0;
	}
	if (strcmp(sub, "list") != 0 && strcmp(sub, "show") != 0 && strcmp(sub, "restore") != 0) {
		fprintf(stderr, "fsbroker backup: unknown subcommand '%s' (list, show, restore)\n%s",
			sub, usage);
		return 2;
	}
	argc--;
	argv++;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			snprintf(c.state, sizeof(c.state), "%s", optarg);
			break;
		case 'S':
			if (strlen(optarg) >= sizeof(c.session)) {
				fprintf(stderr, "fsbroker backup: '%s' is not a session id\n", optarg);
				return 2;
			}
			snprintf(c.session, sizeof(c.session), "%s", optarg);
			break;
		case 'j':
			c.json = true;
			break;
		case 'l':
			c.last = true;
			break;
		case 't':
			c.tool_call = optarg;
			break;
		case 'n':
			c.dry_run = true;
			break;
		case 'f':
			c.force = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fprintf(stderr, "fsbroker backup: %s '%s'\n%s",
				opt == ':' || (optopt != 0 && strchr("sSt", optopt))
				? "this option needs a value:" : "unknown option",
				argv[optind - 1], usage);
			return 2;
		}
	}
	pos = optind;
	if (strcmp(sub, "restore") != 0 && (c.tool_call != NULL || c.dry_run || c.force)) {
		fprintf(stderr, "fsbroker backup %s: --tool-call, --dry-run and --force belong to "
			"restore\n", sub);
		return 2;
	}
	if (strcmp(sub, "list") == 0) {
		if (pos != argc || c.last) {
			fprintf(stderr, "fsbroker backup list: takes no cycle or path\n");
			return 2;
		}
	} else {
		if (!c.last && pos == argc) {
			fprintf(stderr, "fsbroker backup %s: name a cycle, or --last\n%s", sub, usage);
			return 2;
		}
		if (!c.last)
			c.cycle_arg = argv[pos++];
		if (strcmp(sub, "show") == 0 && pos != argc) {
			fprintf(stderr, "fsbroker backup show: unexpected '%s'\n", argv[pos]);
			return 2;
		}
		c.paths = argv + pos;
		c.npaths = argc - pos;
	}
	if (c.state[0] == '\0')
		fsb_default_state_dir(c.state, sizeof(c.state));
	rc = locate_store(&c);
	if (rc != 0)
		return rc;
	if (strcmp(sub, "list") == 0)
		return cmd_list(&c);
	if (strcmp(sub, "show") == 0)
		return cmd_show(&c);
	root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0) {
		fprintf(stderr, "fsbroker backup: cannot open /: %s\n", strerror(errno));
		return 1;
	}
	rc = cmd_restore(&c);
	close(root_fd);
	return rc;
}
