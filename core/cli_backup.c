/*
 * cli_backup.c — `fsbroker backup list|show|restore|undo|diff|prune` (DESIGN
 * §6.3, docs/restore.md): read a session's backup store, put the paths a
 * cycle or a tool call touched back to their state at its start (keeping
 * what the restore changes in restore_backup, so that `undo` can put it
 * back), show what a cycle changed, and remove old sealed cycles with their
 * objects.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "at.h"
#include "backup_prune.h"
#include "backup_read.h"
#include "cli.h"
#include "config.h"
#include "op.h"
#include "proto_json.h"
#include "resolve.h"
#include "restore_undo.h"
#include "session_name.h"

/*
 * One usage text per verb, and the options each verb takes (the short codes
 * of the option table in fsb_cli_backup): an option of another verb is
 * unknown to this one and said so.
 */
#define STORE_OPTS \
	"  --state-dir DIR           the state dir (default: $XDG_STATE_HOME/fsbroker)\n" \
	"  --session ID              the session (default: the session of the workspace)\n" \
	"  --workspace DIR           the workspace whose session it is (default: the\n" \
	"                            current directory; docs/runtime.md, \"Sessions\")\n"
#define HELP_OPT "  -h, --help                print this text\n"
#define UNDO_OPT \
	"  --undo                    the store of the restores (restore_backup), where\n" \
	"                            restore keeps what it changes for `backup undo`\n"
#define BACKUP_ENV "environment: HOME, XDG_STATE_HOME\n"

static const char usage[] =
	"usage: fsbroker backup VERB [OPTIONS]\n"
	"       fsbroker backup VERB --help\n"
	"\n"
	"Read a session's backup store: everything a turn of the agent changed is one\n"
	"cycle, and each verb lists, shows, restores, undoes a restore, diffs or prunes\n"
	"cycles. Run it inside the project, or name the project with --workspace.\n"
	"\n"
	"verbs:\n"
	"  list      the cycles of a session (list --all: of every session)\n"
	"  show      what one cycle touched\n"
	"  restore   put what a cycle or tool call changed back as it was\n"
	"  undo      undo the last restore (or the last undo)\n"
	"  diff      what a cycle changed, line by line\n"
	"  prune     remove old sealed cycles and the objects only they name\n"
	"\n"
	"options of every verb:\n"
	STORE_OPTS
	HELP_OPT
	"\n"
	"exit: 0 done, 1 something was skipped or failed, 2 usage error or no such\n"
	"  session, cycle or tool call; diff: 0 no differences, 1 differences, 2 trouble\n"
	BACKUP_ENV
	"docs: docs/restore.md, docs/backup-store.md\n";

static const char list_usage[] =
	"usage: fsbroker backup list [--all] [--undo] [--json] [--state-dir DIR]\n"
	"                            [--session ID | --workspace DIR]\n"
	"\n"
	"List the cycles of the session: number, state (open, sealed, recovered), when\n"
	"it was opened and sealed, how many paths and objects it holds, its message\n"
	"(the command line of a run). A session with nothing backed up says so.\n"
	"\n"
	"options:\n"
	"  --all                     every session of the state dir, with its workspace\n"
	UNDO_OPT
	"  --json                    one JSON array, an object per cycle (per session\n"
	"                            with --all)\n"
	STORE_OPTS
	HELP_OPT
	"\n"
	"exit: 0 listed, 1 a journal could not be read, 2 usage error or no such\n"
	"  session\n"
	BACKUP_ENV
	"docs: docs/restore.md\n";

static const char show_usage[] =
	"usage: fsbroker backup show CYCLE|--last [--undo] [--json] [--state-dir DIR]\n"
	"                            [--session ID | --workspace DIR]\n"
	"\n"
	"Show what one cycle touched: each path, the tool call that changed it, what\n"
	"was kept of it (content, metadata, or that the cycle created it).\n"
	"\n"
	"options:\n"
	"  --last                    the newest cycle\n"
	UNDO_OPT
	"  --json                    one JSON object\n"
	STORE_OPTS
	HELP_OPT
	"\n"
	"exit: 0 shown, 1 its journal cannot be read, 2 usage error or no such session\n"
	"  or cycle\n"
	BACKUP_ENV
	"docs: docs/restore.md\n";

static const char restore_usage[] =
	"usage: fsbroker backup restore CYCLE|--last [PATH...] [--tool-call ID]\n"
	"                               [--dry-run] [--force] [--no-undo] [--json]\n"
	"                               [--state-dir DIR]\n"
	"                               [--session ID | --workspace DIR]\n"
	"\n"
	"Put every path a cycle touched (or only the PATHs named, or what one tool call\n"
	"changed) back to its state at the start of the cycle, and remove what the\n"
	"cycle created. A path changed since the cycle ended is skipped unless --force.\n"
	"What the restore changes is kept first, so `fsbroker backup undo` can put it\n"
	"back.\n"
	"\n"
	"options:\n"
	"  --last                    the newest cycle\n"
	"  --tool-call ID            only what that tool call changed\n"
	"  --dry-run                 say what would be restored or removed; change\n"
	"                            nothing\n"
	"  --force                   restore paths changed since the cycle ended too\n"
	"  --no-undo                 keep no copy of what the restore changes (then\n"
	"                            nothing can undo it)\n"
	"  --json                    one JSON array, an object per path\n"
	STORE_OPTS
	HELP_OPT
	"\n"
	"exit: 0 restored, 1 something was skipped or failed (a partial restore), 2\n"
	"  usage error or no such session, cycle or tool call\n"
	BACKUP_ENV
	"docs: docs/restore.md\n";

static const char undo_usage[] =
	"usage: fsbroker backup undo [CYCLE|--last] [PATH...] [--dry-run] [--force]\n"
	"                            [--no-undo] [--json] [--state-dir DIR]\n"
	"                            [--session ID | --workspace DIR]\n"
	"\n"
	"Undo the last restore: put back what it changed, from the copy it kept in the\n"
	"store of the restores. An undo is itself undoable (a second undo redoes).\n"
	"CYCLE names an older cycle of that store (`backup list --undo`); PATHs limit\n"
	"it to those paths.\n"
	"\n"
	"options:\n"
	"  --last                    the newest cycle of the restores' store (default)\n"
	"  --dry-run                 say what would be put back; change nothing\n"
	"  --force                   put back paths changed since the restore too\n"
	"  --no-undo                 keep no copy of what the undo changes\n"
	"  --json                    one JSON array, an object per path\n"
	STORE_OPTS
	HELP_OPT
	"\n"
	"exit: 0 undone, 1 something was skipped or failed, 2 usage error or no such\n"
	"  session or cycle\n"
	BACKUP_ENV
	"docs: docs/restore.md (\"Undoing a restore\")\n";

static const char diff_usage[] =
	"usage: fsbroker backup diff CYCLE|--last [PATH...] [--undo] [--json]\n"
	"                            [--state-dir DIR] [--session ID | --workspace DIR]\n"
	"\n"
	"Show what a cycle changed: for each path (or each PATH named), its state at\n"
	"the start of the cycle against what is there now, line by line for text\n"
	"(/usr/bin/diff -u), a sentence for binary files, modes, owners and links.\n"
	"\n"
	"options:\n"
	"  --last                    the newest cycle\n"
	UNDO_OPT
	"  --json                    one JSON array, an object per path\n"
	STORE_OPTS
	HELP_OPT
	"\n"
	"exit: 0 no differences, 1 differences, 2 trouble (usage error, no such session\n"
	"  or cycle, a backup that cannot be read)\n"
	BACKUP_ENV
	"docs: docs/restore.md\n";

static const char prune_usage[] =
	"usage: fsbroker backup prune (--keep N | --older-than DAYS | --max-size SIZE)\n"
	"                             [--dry-run] [--undo] [--state-dir DIR]\n"
	"                             [--session ID | --workspace DIR]\n"
	"\n"
	"Remove old sealed cycles of the session, and the objects no remaining cycle\n"
	"names. The open cycle is never removed. It refuses while a core has the store\n"
	"open.\n"
	"\n"
	"options:\n"
	"  --keep N                  keep the newest N sealed cycles\n"
	"  --older-than DAYS         remove cycles sealed more than DAYS days ago\n"
	"  --max-size SIZE           remove the oldest until the store fits SIZE (bytes,\n"
	"                            or a whole number with K, M, G or T: 500M, 2G)\n"
	"  --dry-run                 say what would be removed; change nothing\n"
	UNDO_OPT
	STORE_OPTS
	HELP_OPT
	"\n"
	"exit: 0 everything meant to go was removed, 1 something could not be removed\n"
	"  or a core has the store open, 2 usage error or no such session\n"
	BACKUP_ENV
	"docs: docs/restore.md (\"Removing old cycles\")\n";

struct cli {
	char state[PATH_MAX];
	char session[NAME_MAX + 1];
	char store[PATH_MAX];
	const char *workspace;	/* --workspace DIR, else NULL: the current directory */
	bool all;		/* list --all: every session */
	const char *cycle_arg;	/* CYCLE as given, NULL with --last */
	char **paths;		/* restore: the PATH arguments */
	int npaths;
	const char *tool_call;
	bool json, last, dry_run, force;
	bool no_undo;		/* restore, undo: keep no copy of what they change */
	bool undo_cmd;		/* `undo`: restore the last cycle of restore_backup */
	bool undo_store;	/* --undo: `store` is restore_backup */
	long keep;		/* prune --keep N, else -1 */
	long older_than;	/* prune --older-than DAYS, else -1 */
	uint64_t max_size;	/* prune --max-size SIZE, else FSB_PRUNE_NO_LIMIT */
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
	char *s = fsb_json_print(v, true);

	if (s != NULL)
		puts(s);
	free(s);
}

/* ---- locating the store ------------------------------------------------- */

/*
 * Without --session, the session of the workspace (--workspace, else the
 * current directory), as fsb_session_find says: never another project's.
 * 0, or the exit status after saying why.
 */
static int session_of_workspace(struct cli *c)
{
	char real[PATH_MAX], own[FSB_SESSION_NAME_LEN] = "";
	const char *ws = c->workspace != NULL ? c->workspace : ".";
	int rc;

	if (realpath(ws, real) == NULL) {
		fprintf(stderr, "fsbroker backup: workspace %s: %s\n", ws, strerror(errno));
		return 2;
	}
	rc = fsb_session_find(c->state, real, c->session, sizeof(c->session));
	if (rc == 0)
		return 0;
	if (rc != -ENOENT) {
		fprintf(stderr, "fsbroker backup: cannot read %s/sessions: %s\n", c->state,
			strerror(-rc));
		return 2;
	}
	fsb_session_for_workspace(real, own, sizeof(own));
	fputs("fsbroker backup: no session has backups of the workspace ", stderr);
	put_safe(stderr, real);
	fprintf(stderr, " (its own would be %s) under %s/sessions; name one with --session "
		"or --workspace, or see them all with `fsbroker backup list --all`\n", own,
		c->state);
	return 2;
}

static int locate_store(struct cli *c)
{
	char dir[PATH_MAX + 16];
	struct stat st;
	int rc;

	if (c->session[0] == '\0' && (rc = session_of_workspace(c)) != 0)
		return rc;
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

/* The cycles of c->store: as a table on stdout, or into `arr` with --json.
 * 0, or 1 when some could not be read. */
static int list_cycles(const struct cli *c, cJSON *arr)
{
	unsigned *nums;
	size_t n;
	int rc, status = 0;

	rc = fsb_cycles_list(c->store, &nums, &n);
	if (rc < 0) {
		fprintf(stderr, "fsbroker backup: cannot read %s/cycles: %s\n", c->store,
			strerror(-rc));
		return 1;
	}
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
	free(nums);
	return status;
}

static int cmd_list(const struct cli *c)
{
	cJSON *arr = c->json ? cJSON_CreateArray() : NULL;
	int status = list_cycles(c, arr);

	if (c->json) {
		print_json(arr);
		cJSON_Delete(arr);
	}
	return status;
}

/* `list --all`: every session of the state dir, with the workspace it
 * recorded, and its cycles. */
static int cmd_list_all(struct cli *c)
{
	cJSON *all = c->json ? cJSON_CreateArray() : NULL;
	char ws[PATH_MAX + 2];
	char **names = NULL;
	size_t n = 0;
	int rc, status = 0;

	rc = fsb_backup_sessions(c->state, &names, &n);
	if (rc < 0 && rc != -ENOENT) {
		fprintf(stderr, "fsbroker backup: cannot read %s/sessions: %s\n", c->state,
			strerror(-rc));
		cJSON_Delete(all);
		return 1;
	}
	if (n == 0 && !c->json)
		printf("There are no sessions under %s/sessions.\n", c->state);
	for (size_t i = 0; i < n; i++) {
		bool has_ws = fsb_session_workspace(c->state, names[i], ws, sizeof(ws)) == 0;
		cJSON *o = NULL, *arr = NULL;

		snprintf(c->session, sizeof(c->session), "%s", names[i]);
		if ((c->undo_store ? fsb_undo_store_dir(c->state, c->session, c->store,
							 sizeof(c->store))
				   : fsb_backup_store_dir(c->state, c->session, c->store,
							  sizeof(c->store))) < 0) {
			status = 1;
			continue;
		}
		if (c->json) {
			o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "session", names[i]);
			if (has_ws)
				fsb_json_add_path(o, "workspace", ws, false);
			else
				cJSON_AddNullToObject(o, "workspace");
			arr = cJSON_AddArrayToObject(o, "cycles");
			cJSON_AddItemToArray(all, o);
		} else {
			printf("%sSession %s, workspace ", i ? "\n" : "", names[i]);
			if (has_ws)
				put_safe(stdout, ws);
			else
				fputs("(none recorded)", stdout);
			putchar('\n');
		}
		if (list_cycles(c, arr) != 0)
			status = 1;
	}
	if (rc == 0)
		fsb_backup_sessions_free(names, n);
	if (c->json) {
		print_json(all);
		cJSON_Delete(all);
	}
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
	if (e->has_dev)
		cJSON_AddNumberToObject(o, "dev", (double)e->dev);
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
			cJSON_AddItemToObject(e, "prior", fsb_journal_prior_encode(&p->rec->prior));
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
	return fsb_at_open_parent(root_fd, path, name);
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

/* How the path now differs from the end state the cycle recorded, or NULL. */
static const char *end_differs(const struct fsb_end_state *e, bool exists, const struct stat *st)
{
	if (e->exists && !exists)
		return "it was removed since";
	if (!e->exists && exists)
		return "it was created since";
	if (!exists)
		return NULL;
	if (e->type[0] != '\0' && strcmp(e->type, fsb_file_type_name(st->st_mode)) != 0)
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

/* ACT_META: a file whose cycle changed only its metadata, put back in place.
 * ACT_MOVED: a file the cycle moved, its bytes taken from where it went. */
enum act { ACT_NONE, ACT_REMOVE, ACT_FILE, ACT_META, ACT_MOVED, ACT_DIR, ACT_SYMLINK, ACT_FIFO,
	   ACT_OTHER };
enum res { RES_PENDING, RES_OK, RES_SKIPPED, RES_FAILED };

struct item {
	const struct fsb_pick *pick;	/* NULL: a PATH argument the cycle did not touch */
	const char *path;
	int depth;
	enum act act;
	bool exists;			/* at planning */
	int src_fd;			/* ACT_MOVED: the moved inode, opened at
					 * planning (before its new name goes) */
	struct stat now;		/* at planning, when `exists` */
	bool parent_missing;
	int parent_err;		/* why: -ENOENT, -ENOTDIR, or -ELOOP (a symlink now) */
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
		if (p->metadata_only) {
			it->act = ACT_META;
			return;
		}
		if (p->moved && it->pick->rec->moved_now != NULL) {
			it->act = ACT_MOVED;
			return;
		}
		/* A cache the pack chose not to back up: nothing was promised,
		 * so leaving it is no failure of the restore. */
		if (strcmp(p->skipped, "skip-rule") == 0) {
			settle(it, RES_OK, "left", false,
			       "not backed up (the pack's backup.skip), left as it is");
			return;
		}
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

/*
 * Is `st` the object of type `type`, (dev, ino) that the cycle created?
 * When it is not, --force still removes what a later restore or edit may
 * have put there in its place (a regular file, a symlink — unlinked, never
 * followed — a fifo, an empty directory) and notes it; never a socket or a
 * device, which no restore makes again (a socket there is some program's
 * live endpoint); otherwise `it` is settled as left.
 */
static bool is_the_object(const struct cli *c, struct item *it, const struct stat *st,
			  const char *type, uint64_t dev, uint64_t ino)
{
	const char *now = fsb_file_type_name(st->st_mode);
	bool same_type = strcmp(type, now) == 0;
	char why[160];

	/* cJSON reads numbers as doubles: compare the numbers rounded the same
	 * way (see end_differs). */
	if (same_type && (double)dev == (double)st->st_dev && (double)ino == (double)st->st_ino)
		return true;
	if (!same_type)
		snprintf(why, sizeof(why), "the cycle created a %s here and a %s is there now",
			 type, now);
	else
		snprintf(why, sizeof(why), "this %s is not the one the cycle created (its device "
			 "or inode differs)", now);
	if (c->force && (S_ISREG(st->st_mode) || S_ISLNK(st->st_mode) || S_ISFIFO(st->st_mode) ||
			 S_ISDIR(st->st_mode))) {
		append(it, "; forced, though ");
		append(it, why);
		return true;
	}
	settle(it, RES_SKIPPED, "left", false, "not removed: %s%s", why,
	       S_ISSOCK(st->st_mode) || S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode)
		       ? "" : " (use --force to remove it anyway)");
	return false;
}

/*
 * A path the cycle created is removed only when what is there now is
 * certainly the object the cycle made: never a host's file, socket, symlink
 * or tree that merely has its name. The cycle's end state names that object
 * (type, dev and ino, taken at the seal: what the cycle left, also when it
 * replaced its own file, as `sed -i` does); without one (an open cycle, or
 * one recovered after a crash) the object the create made, when its line
 * records it (`made`). With neither (a cycle sealed by an older fsbroker,
 * whose end state's type and ino may describe another object: the host's,
 * for a name in the sandbox's private /tmp; a create journaled before it
 * was made) nothing proves it, and not even --force removes more than what
 * holds nothing of value: an empty regular file with one link, or an empty
 * directory (rmdir refuses one with entries), of the kind the record made
 * and owned by the restoring user.
 * True when the removal may go ahead; otherwise `it` is settled as left.
 */
static bool removable(const struct cli *c, const struct fsb_cycle *cy, struct item *it)
{
	const struct fsb_end_state *e = it->pick->end;
	const struct fsb_journal_rec *r = it->pick->rec;
	const struct stat *st = &it->now;
	const char *type = fsb_file_type_name(st->st_mode);
	bool dir_op = strcmp(r->op, "mkdir") == 0;

	if (e != NULL && e->exists && e->has_dev && e->has_ino && e->type[0] != '\0')
		return is_the_object(c, it, st, e->type, e->dev, e->ino);
	if ((e == NULL || !e->has_dev) && r->has_made)
		return is_the_object(c, it, st, r->made_type, r->made_dev, r->made_ino);
	if (st->st_uid == geteuid() &&
	    ((dir_op && S_ISDIR(st->st_mode)) ||
	     (!dir_op && S_ISREG(st->st_mode) && st->st_size == 0 && st->st_nlink == 1)))
		return true;
	settle(it, RES_SKIPPED, "left", false,
	       "not removed: the cycle recorded no device and inode of what it created here "
	       "(%s), and a %s%s is not certainly its own",
	       cy->state == FSB_CYCLE_OPEN ? "the cycle is still open"
	       : cy->state == FSB_CYCLE_RECOVERED ? "it was recovered after a crash"
	       : "it was sealed by an fsbroker that did not record them",
	       S_ISREG(st->st_mode) && st->st_size > 0 ? "non-empty " : "", type);
	return false;
}

/*
 * ACT_MOVED: open the inode the cycle moved, where it last went, while that
 * name still exists (a restore removes it before it recreates the old one),
 * and check it is the very file: same dev/ino, same size.
 */
static void open_moved(const struct cli *c, struct item *it)
{
	const struct fsb_journal_rec *r = it->pick->rec;
	const char *name;
	struct stat st;
	int pfd, fd;
	bool same;

	pfd = open_parent(r->moved_now, &name);
	fd = pfd < 0 ? pfd : openat(pfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
				    O_CLOEXEC);
	if (pfd >= 0)
		close(pfd);
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    (uint64_t)st.st_size == r->prior.size) {
		same = (uint64_t)st.st_dev == r->prior.dev && (uint64_t)st.st_ino == r->prior.ino;
		/* Another inode there now: a later restore put the file back
		 * as a copy (or someone replaced it). Only --force takes it. */
		if (!same && c->force)
			append(it, "; forced, though the file it was moved to is not the inode "
			       "the cycle moved");
		if (same || c->force) {
			it->src_fd = fd;
			return;
		}
	}
	if (fd >= 0)
		close(fd);
	settle(it, RES_SKIPPED, "skipped", false,
	       "not restorable: the cycle moved it and kept no copy of its content, and the "
	       "file it moved is not at %s now (or its size changed)", r->moved_now);
}

static void plan_item(const struct cli *c, const struct fsb_cycle *cy, struct item *it)
{
	const struct fsb_prior *p = &it->pick->rec->prior;
	const char *name, *diff;
	int pfd, fd, rc;

	if (it->res != RES_PENDING)
		return;
	pfd = open_parent(it->path, &name);
	/* A parent that is gone, or is a file or a symlink now, may be a
	 * directory this restore makes again first (checked by the caller). */
	if (pfd == -ENOENT || pfd == -ENOTDIR || (pfd == -ELOOP && it->act != ACT_REMOVE)) {
		it->parent_missing = true;
		it->parent_err = pfd;
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
	/* Nothing to remove: no later change can be lost by doing nothing
	 * (a trash emptied since the cycle, say). */
	if (it->act == ACT_REMOVE && !it->exists) {
		settle(it, RES_OK, "unchanged", false, "already absent");
		return;
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
	if (it->act == ACT_REMOVE && !removable(c, cy, it))
		return;
	/*
	 * Only the metadata was journaled: the cycle left the bytes as they
	 * were, so the file the cycle ended with holds the content it began
	 * with. A sealed cycle's end state said above whether the file there
	 * is that one (else --force); an open cycle has none, so the inode
	 * must be the one recorded.
	 */
	if (it->act == ACT_META &&
	    (!it->exists || !S_ISREG(it->now.st_mode) ||
	     (cy->state == FSB_CYCLE_OPEN && ((uint64_t)it->now.st_dev != p->dev ||
					      (uint64_t)it->now.st_ino != p->ino)))) {
		settle(it, RES_SKIPPED, "skipped", false,
		       "not restorable: the cycle changed only its metadata and kept no copy of "
		       "its content, and the file it changed is not there now");
		return;
	}
	if (it->act == ACT_MOVED)
		open_moved(c, it);
	if (it->act == ACT_FILE) {
		/* A corrupted object is found before anything is changed, and a
		 * dry run reports it too; the copy checks the hash once more. */
		fd = fsb_backup_object_open(c->store, p->object);
		rc = fd < 0 ? fd : fsb_backup_object_check(fd, p);
		if (fd >= 0)
			close(fd);
		if (rc == -ESTALE)
			settle(it, RES_SKIPPED, "skipped", false,
			       "the inode kept as its backup (%s) was changed after it was kept "
			       "(its size or mtime differs); nothing was written", p->object);
		else if (rc == -EBADMSG)
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

/*
 * Give the restored object the prior state's xattrs: through `fd`, else
 * `path` without following it. Kept names it has beyond them are removed
 * (a new file's inherited default ACL, a name added to a directory kept in
 * place), unless the journal left some out. What could not be done goes
 * into the note. True when any was set or removed. A journal without
 * xattrs (an older core, a filesystem without them) changes none.
 */
static bool put_xattrs(struct item *it, int fd, const char *path)
{
	const struct fsb_prior *p = &it->pick->rec->prior;
	struct fsb_xattr_outcome o;
	char buf[sizeof(o.failures) + 32];

	if (!p->has_xattrs)
		return false;
	fsb_xattr_apply(fd, path, p->xattrs, p->nxattrs, !p->xattrs_truncated, &o);
	if (o.failed > 0) {
		snprintf(buf, sizeof(buf), "; xattrs not restored: %s", o.failures);
		append(it, buf);
	}
	if (p->xattrs_truncated)
		append(it, "; xattrs beyond what the journal kept (64 KiB) were left as they are");
	return o.set + o.removed > 0;
}

static void do_file(const struct cli *c, struct item *it, int pfd, const char *name)
{
	const struct fsb_prior *p = &it->pick->rec->prior;
	char tmp[64];
	struct timespec ts[2];
	struct stat st;
	int fd = -1, obj = -1, rc, tries = 0;
	const char *what;
	bool xattrs;

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
	if (it->act == ACT_MOVED) {
		rc = fsb_backup_moved_restore(it->src_fd, p, fd);
	} else {
		obj = fsb_backup_object_open(c->store, p->object);
		rc = obj < 0 ? obj : fsb_backup_object_restore(obj, p, fd);
		if (obj >= 0)
			close(obj);
	}
	if (rc == -ESTALE) {
		what = it->act == ACT_MOVED
			? "the file the cycle moved changed size since; nothing was written"
			: "the inode kept as its backup was changed after it was kept; nothing was "
			  "written";
		goto fail_msg;
	}
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
	/* After the content and the owner (a write or a chown drops
	 * security.capability), before the mode (an ACL sets the group bits,
	 * the mode then its mask). */
	xattrs = put_xattrs(it, fd, NULL);
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
	settle(it, RES_OK, "restored", true, "content, mode, times%s%s%s",
	       it->owner_set ? ", owner" : "", xattrs ? ", xattrs" : "", it->note);
	return;

fail:
	what = strerror(errno);
fail_msg:
	if (fd >= 0)
		close(fd);
	unlinkat(pfd, tmp, 0);
	settle(it, RES_FAILED, "failed", false, "%s", what);
}

/*
 * A file whose cycle changed only its metadata: owner, xattrs, mode and
 * times put back on the very inode planned for, its content left alone.
 * The inode is pinned with O_PATH (a mode of 0 cannot stop that) and
 * changed through /proc/self/fd, never through its name again.
 */
static void do_meta(struct item *it, int pfd, const char *name)
{
	const struct fsb_prior *p = &it->pick->rec->prior;
	struct timespec ts[2];
	char at[32];
	struct stat st;
	int fd, rfd = -1;
	bool xattrs = false;

	fd = openat(pfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	/* Still the file planned for (checked against the journal there). */
	if (fd < 0 || fstat(fd, &st) < 0 || st.st_dev != it->now.st_dev ||
	    st.st_ino != it->now.st_ino || !S_ISREG(st.st_mode)) {
		if (fd >= 0)
			close(fd);
		settle(it, RES_FAILED, "failed", false, "it changed while restoring; not touched");
		return;
	}
	snprintf(at, sizeof(at), "/proc/self/fd/%d", fd);
	/* Owner before mode: chown clears the set-id bits. */
	if (p->has_owner && (st.st_uid != p->uid || st.st_gid != p->gid) &&
	    fchownat(fd, "", p->uid, p->gid, AT_EMPTY_PATH) == 0)
		it->owner_set = true;
	if (p->has_xattrs) {
		/* Setting a user.* xattr takes write permission, which the
		 * mode set right after takes away again. */
		if (!(st.st_mode & S_IWUSR) || !(st.st_mode & S_IRUSR))
			chmod(at, (st.st_mode & 07777) | S_IRUSR | S_IWUSR);
		rfd = open(at, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (rfd >= 0) {
			xattrs = put_xattrs(it, rfd, NULL);
			close(rfd);
		} else {
			append(it, "; xattrs not restored: cannot open it");
		}
	}
	times_of(p, ts);
	if ((p->has_mode && chmod(at, p->mode) < 0) || utimensat(AT_FDCWD, at, ts, 0) < 0) {
		settle(it, RES_FAILED, "failed", false, "cannot set its mode and times: %s",
		       strerror(errno));
		close(fd);
		return;
	}
	close(fd);
	settle(it, RES_OK, "restored", true, "mode, times%s%s; content unchanged by the cycle%s",
	       it->owner_set ? ", owner" : "", xattrs ? ", xattrs" : "", it->note);
}

/* Symlinks and FIFOs: made under a temporary name, then renamed over. */
static void do_special(struct item *it, int pfd, const char *name)
{
	const struct fsb_prior *p = &it->pick->rec->prior;
	struct timespec ts[2];
	struct stat st, st2;
	char tmp[64], at[128];
	int rc, tries = 0, saved;
	bool xattrs;

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
	/* There is no *xattrat(): the parent is named through its fd, so
	 * the walk is not repeated, and the new name is not followed. */
	snprintf(at, sizeof(at), "/proc/self/fd/%d/%s", pfd, tmp);
	xattrs = put_xattrs(it, -1, at);
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
		settle(it, RES_OK, "restored", true, "symlink, target, times%s%s%s",
		       it->owner_set ? ", owner" : "", xattrs ? ", xattrs" : "", it->note);
	} else {
		settle(it, RES_OK, "restored", true, "fifo, mode, times%s%s%s",
		       it->owner_set ? ", owner" : "", xattrs ? ", xattrs" : "", it->note);
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
		       fsb_file_type_name(st.st_mode), strerror(errno));
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
	struct stat st;
	bool xattrs;
	int fd;

	fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		settle(it, RES_FAILED, "failed", false, "cannot open the directory: %s",
		       strerror(errno));
		return;
	}
	/* Setting a user.* xattr takes write permission; the mode set
	 * right after takes it away again when the prior state had none. */
	if (p->has_xattrs && p->has_mode && fstat(fd, &st) == 0 && !(st.st_mode & S_IWUSR))
		fchmod(fd, (st.st_mode & 07777) | S_IWUSR);
	/* Before the mode: a default or access ACL set here, the mode then
	 * sets the access ACL's mask. */
	xattrs = put_xattrs(it, fd, NULL);
	times_of(p, ts);
	if ((p->has_mode && fchmod(fd, p->mode) < 0) || futimens(fd, ts) < 0) {
		settle(it, RES_FAILED, "failed", false, "cannot set its mode and times: %s",
		       strerror(errno));
		close(fd);
		return;
	}
	close(fd);
	settle(it, RES_OK, "restored", true, "directory, mode, times%s%s%s",
	       it->owner_set ? ", owner" : "", xattrs ? ", xattrs" : "", it->note);
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
	else if (it->act == ACT_FILE || it->act == ACT_MOVED)
		do_file(c, it, pfd, name);
	else if (it->act == ACT_META)
		do_meta(it, pfd, name);
	else if (it->act == ACT_DIR)
		do_dir(it, pfd, name);
	else
		do_special(it, pfd, name);
	close(pfd);
}

/*
 * A directory the restore changes names in that no item of it restores:
 * its times before the restore touched it, put back at the end, so that a
 * restore stamps no parent with its own time (a file's content comes back
 * through a new name renamed over the old one).
 */
struct stamped {
	const char *child;	/* an item's path in it: reached as its parent */
	dev_t dev;
	ino_t ino;
	struct timespec times[2];
};

/* Note the parent of `it` (before it is acted on), once. */
static void note_parent(const struct item *items, size_t n, const struct item *it,
			struct stamped *v, size_t *nv)
{
	size_t plen = (size_t)(strrchr(it->path, '/') - it->path);
	const char *name;
	struct stat st;
	int pfd;

	for (size_t i = 0; i < n; i++)
		if (items[i].act == ACT_DIR && strlen(items[i].path) == plen &&
		    strncmp(items[i].path, it->path, plen) == 0)
			return;	/* restored as an item: finish_dir sets its times */
	if ((pfd = open_parent(it->path, &name)) < 0)
		return;
	if (fstat(pfd, &st) == 0) {
		bool seen = false;

		for (size_t i = 0; i < *nv && !seen; i++)
			seen = v[i].dev == st.st_dev && v[i].ino == st.st_ino;
		if (!seen) {
			v[*nv] = (struct stamped){ .child = it->path, .dev = st.st_dev,
						   .ino = st.st_ino,
						   .times = { st.st_atim, st.st_mtim } };
			(*nv)++;
		}
	}
	close(pfd);
}

/* Put back the times of the directories note_parent saw, when each is
 * still the directory it was. */
static void unstamp_parents(const struct stamped *v, size_t nv)
{
	for (size_t i = nv; i-- > 0;) {
		const char *name;
		struct stat st;
		int pfd = open_parent(v[i].child, &name);

		if (pfd < 0)
			continue;
		if (fstat(pfd, &st) == 0 && st.st_dev == v[i].dev && st.st_ino == v[i].ino)
			futimens(pfd, v[i].times);
		close(pfd);
	}
}

/*
 * Files that were one inode with several names before the cycle, each put
 * back as a file of its own: make the later ones links of the first again,
 * so the link group comes back (a restore of hard-linked files that a turn
 * moved, or deleted, or wrote). Only names this restore put back are
 * joined; one it did not touch keeps its own inode.
 */
static void relink_groups(struct item *items, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct fsb_prior *p = items[i].pick ? &items[i].pick->rec->prior : NULL;

		if (p == NULL || items[i].res != RES_OK || p->nlink < 2 ||
		    (items[i].act != ACT_FILE && items[i].act != ACT_MOVED))
			continue;
		for (size_t j = 0; j < i; j++) {
			const struct fsb_prior *q = items[j].pick ? &items[j].pick->rec->prior
								  : NULL;
			const char *name, *first;
			char tmp[64];
			int pfd, fpfd;

			if (q == NULL || items[j].res != RES_OK || q->dev != p->dev ||
			    q->ino != p->ino ||
			    (items[j].act != ACT_FILE && items[j].act != ACT_MOVED))
				continue;
			pfd = open_parent(items[i].path, &name);
			fpfd = pfd < 0 ? -1 : open_parent(items[j].path, &first);
			temp_name(tmp, sizeof(tmp));
			/* Not linked (another file system): it stays a copy. */
			if (fpfd >= 0 && linkat(fpfd, first, pfd, tmp, 0) == 0 &&
			    renameat(pfd, tmp, pfd, name) < 0)
				unlinkat(pfd, tmp, 0);
			if (fpfd >= 0)
				close(fpfd);
			if (pfd >= 0)
				close(pfd);
			break;
		}
	}
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
	char *last;

	if (arg[0] != '/' && getcwd(cwd, sizeof(cwd)) != NULL)
		snprintf(joined, sizeof(joined), "%s/%s", cwd, arg);
	else
		snprintf(joined, sizeof(joined), "%s", arg);
	if (fsb_path_lexical(joined, out) < 0)
		return NULL;
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

/* The PATH arguments in the journal's form, and a flag each for "matched
 * something". 0, or -1 (out of memory). */
static int canonical_args(const struct cli *c, char ***args, bool **used)
{
	if (c->npaths == 0)
		return 0;
	*args = calloc((size_t)c->npaths, sizeof(**args));
	*used = calloc((size_t)c->npaths, sizeof(**used));
	if (*args == NULL || *used == NULL)
		return -1;
	for (int i = 0; i < c->npaths; i++)
		if (((*args)[i] = canonical_arg(c->paths[i])) == NULL)
			return -1;
	return 0;
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

/* ---- restore: keeping a way back ----------------------------------------- */

/*
 * Before a restore changes anything, the state and content of every path it
 * is about to change go into the session's restore_backup store, so that
 * `fsbroker backup undo` can put them back. When that copy cannot be made
 * (a full disk, another restore holding the store), the restore changes
 * nothing: it fails closed, unless --no-undo says to go on without a way
 * back. Returns 0 with *out set (NULL when nothing is going to change), or
 * -1 after saying why.
 */
static int keep_undo(const struct cli *c, const struct item *items, size_t n,
		     struct fsb_undo **out)
{
	char err[PATH_MAX * 2 + 256];
	struct fsb_undo *u = NULL;
	bool any = false;
	int rc;

	*out = NULL;
	for (size_t i = 0; i < n && !any; i++)
		any = items[i].res == RES_PENDING;
	if (!any)
		return 0;
	rc = fsb_undo_open(c->state, c->session, &u, err, sizeof(err));
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (items[i].res == RES_PENDING)
			rc = fsb_undo_record(u, root_fd, items[i].path,
					     c->undo_cmd ? "undo" : "restore", err, sizeof(err));
	/* Durable before the first change, as the core's journal is. */
	if (rc == 0)
		rc = fsb_undo_sync(u, err, sizeof(err));
	if (rc == 0) {
		*out = u;
		return 0;
	}
	if (u != NULL)
		fsb_undo_abort(u);
	fflush(stdout);
	fputs("fsbroker backup: ", stderr);
	put_safe(stderr, err);
	fprintf(stderr, "\nNothing was %s: without that copy it could not be undone. %s",
		c->undo_cmd ? "undone" : "restored",
		rc == -EWOULDBLOCK ? "\n" : "Free some space, or go on without a way back with "
		"--no-undo.\n");
	return -1;
}

/* Seal the copy keep_undo made, now that the paths are as the restore left
 * them: those are its end states, which an undo checks. 0 or -1. */
static int seal_undo(const struct cli *c, unsigned cycle, struct fsb_undo *u)
{
	char msg[512], err[PATH_MAX + 256];
	int n;

	if (c->undo_cmd)
		snprintf(msg, sizeof(msg), "undo of cycle %u", cycle);
	else if (c->tool_call != NULL)
		snprintf(msg, sizeof(msg), "restore --tool-call %s of cycle %u", c->tool_call,
			 cycle);
	else
		snprintf(msg, sizeof(msg), "restore of cycle %u", cycle);
	n = fsb_undo_seal(u, msg, err, sizeof(err));
	fflush(stdout);
	if (n <= 0) {
		fprintf(stderr, "fsbroker backup: the %s is done, but the copy that undoes it "
			"could not be sealed (%s): `fsbroker backup undo` will find it open and "
			"need --force\n", c->undo_cmd ? "undo" : "restore", err);
		return -1;
	}
	/* With --json, stdout holds only the JSON. */
	fprintf(c->json ? stderr : stdout, "%s can be undone with `fsbroker backup undo` "
		"(cycle %d of %s).\n", c->undo_cmd ? "This undo" : "This restore", n,
		FSB_RESTORE_BACKUP);
	return 0;
}

static int cmd_restore(const struct cli *c)
{
	struct fsb_cycle cy;
	struct fsb_picks picks = { 0 };
	struct fsb_undo *undo = NULL;
	struct stamped *stamped = NULL;
	size_t nstamped = 0;
	struct item *items = NULL;
	char **args = NULL;
	bool *arg_used = NULL;
	size_t n = 0, extra = 0;
	struct rlimit nofile;
	unsigned num;
	int rc, status = 0;

	rc = pick_cycle(c, &num);
	if (rc != 0)
		return rc;
	rc = load(c, num, &cy);
	if (rc < 0)
		return rc == -ENOENT ? 2 : 1;
	/* Each file the cycle moved is held open from planning to its copy
	 * (see open_moved): as many descriptors as the system lets us. */
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur = nofile.rlim_max;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
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
	if (canonical_args(c, &args, &arg_used) < 0)
		goto nomem;
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
		items[n].src_fd = -1;
		/* Before sorting: the action decides the order. */
		choose_action(&items[n]);
		n++;
	}
	for (int a = 0; a < c->npaths; a++) {
		if (arg_used[a])
			continue;
		items[n + extra].path = args[a];
		items[n + extra].act = ACT_OTHER;
		items[n + extra].src_fd = -1;
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
			if (!ok && items[i].parent_err == -ELOOP)
				settle(&items[i], RES_SKIPPED, "skipped", false, "%s",
				       walk_error(-ELOOP));
			else if (!ok)
				settle(&items[i], RES_SKIPPED, "skipped", false,
				       "its parent directory does not exist (or is not a directory "
				       "now), and the cycle did not remove it");
		}
		if (items[i].res == RES_PENDING && items[i].pick->later_by_others)
			append(&items[i], "; later tool calls changed it too, and that is undone as "
			       "well");
	}
	if (!c->dry_run && !c->no_undo && keep_undo(c, items, n, &undo) < 0) {
		status = 1;
		goto out;
	}
	if (!c->dry_run)
		stamped = calloc(n + 1, sizeof(*stamped));
	for (size_t i = 0; i < n; i++) {
		struct item *it = &items[i];

		if (it->res != RES_PENDING)
			continue;
		if (c->dry_run) {
			const char *what = it->act == ACT_REMOVE
				? (S_ISDIR(it->now.st_mode) ? "a directory created by the cycle; "
				   "only once it is empty" : "created by the cycle")
				: it->act == ACT_FILE || it->act == ACT_MOVED ? "content, mode, times"
				: it->act == ACT_META ? "mode, times; content unchanged by the cycle"
				: it->act == ACT_DIR ? "directory, mode, times"
				: it->act == ACT_SYMLINK ? "symlink, target, times" : "fifo, mode, times";
			settle(it, RES_OK, it->act == ACT_REMOVE ? "would remove" : "would restore",
			       true, "%s%s", what, it->note);
			continue;
		}
		if (stamped != NULL)
			note_parent(items, n, it, stamped, &nstamped);
		execute(c, it, false);
	}
	/* Directories get their mode and times once what is inside is back;
	 * the others the restore changed names in, the times they had. */
	if (!c->dry_run)
		relink_groups(items, n);
	for (size_t i = n; i-- > 0;)
		if (!c->dry_run && items[i].act == ACT_DIR && items[i].res == RES_PENDING)
			execute(c, &items[i], true);
	unstamp_parents(stamped, nstamped);
	free(stamped);
	stamped = NULL;

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
	if (undo != NULL && seal_undo(c, cy.number, undo) < 0)
		status = 1;
	goto out;

nomem:
	fprintf(stderr, "fsbroker backup: out of memory\n");
	status = 1;
out:
	free(stamped);
	for (size_t i = 0; items != NULL && i < n; i++)
		if (items[i].src_fd >= 0)
			close(items[i].src_fd);
	for (int a = 0; args != NULL && a < c->npaths; a++)
		free(args[a]);
	free(args);
	free(arg_used);
	free(items);
	fsb_picks_free(&picks);
	fsb_cycle_free(&cy);
	return status;
}

/* ---- diff ---------------------------------------------------------------- */

enum dstat { D_UNCHANGED, D_CHANGED, D_CREATED, D_REMOVED, D_NOBACKUP, D_ERROR };

static const char *const dstat_name[] = {
	"unchanged", "changed", "created", "removed", "no-backup", "error",
};

/* `s` as put_safe shows it, in a malloc'd string (NULL without memory). */
static char *safe_dup(const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (f == NULL)
		return NULL;
	put_safe(f, s);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/*
 * /usr/bin/diff -u between two open files (fd -1: /dev/null), labelled
 * "<path> (<l1>)" and "<path> (<l2>)". diff reads the very files that were
 * opened (and, for an object, verified) through /dev/fd, never a name that
 * could be swapped meanwhile. With `quiet` its output is thrown away.
 * Returns diff's status: 0 same, 1 different, 2 trouble.
 */
static int run_diff(const char *path, int old_fd, const char *l1, int new_fd, const char *l2,
		    bool quiet)
{
	char a[32], b[32], *sp = safe_dup(path), *lab1 = NULL, *lab2 = NULL;
	int st, status = 2;
	pid_t pid;

	if (sp == NULL || asprintf(&lab1, "%s (%s)", sp, l1) < 0 ||
	    asprintf(&lab2, "%s (%s)", sp, l2) < 0) {
		lab2 = NULL;
		fprintf(stderr, "fsbroker backup: out of memory\n");
		goto out;
	}
	snprintf(a, sizeof(a), old_fd >= 0 ? "/dev/fd/%d" : "/dev/null", old_fd);
	snprintf(b, sizeof(b), new_fd >= 0 ? "/dev/fd/%d" : "/dev/null", new_fd);
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "fsbroker backup: cannot run diff: %s\n", strerror(errno));
		goto out;
	}
	if (pid == 0) {
		char *argv[] = { "diff", "-u", "--label", lab1, "--label", lab2, a, b, NULL };

		if ((old_fd >= 0 && fcntl(old_fd, F_SETFD, 0) < 0) ||
		    (new_fd >= 0 && fcntl(new_fd, F_SETFD, 0) < 0))
			_exit(2);
		if (quiet) {
			int null = open("/dev/null", O_WRONLY);

			if (null < 0 || dup2(null, 1) < 0)
				_exit(2);
		}
		execv("/usr/bin/diff", argv);
		fprintf(stderr, "fsbroker backup: cannot run /usr/bin/diff: %s\n", strerror(errno));
		_exit(2);
	}
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR) {
			st = 2 << 8;
			break;
		}
	}
	status = WIFEXITED(st) && WEXITSTATUS(st) <= 1 ? WEXITSTATUS(st) : 2;
out:
	free(sp);
	free(lab1);
	free(lab2);
	return status;
}

static const char *prior_type_words(const char *type)
{
	if (strcmp(type, "file") == 0)
		return "a regular file";
	if (strcmp(type, "dir") == 0)
		return "a directory";
	if (strcmp(type, "symlink") == 0)
		return "a symlink";
	if (strcmp(type, "fifo") == 0)
		return "a fifo";
	if (strcmp(type, "socket") == 0)
		return "a socket";
	return "a device";
}

static bool same_type(const char *type, mode_t m)
{
	return strcmp(type, fsb_file_type_name(m)) == 0;
}

/* "<what>: <path>\n" on stdout, unless --json. */
static void say(const struct cli *c, const char *what, const char *path)
{
	if (c->json)
		return;
	fputs(what, stdout);
	fputs(": ", stdout);
	put_safe(stdout, path);
	putchar('\n');
}

/* What the cycle changed at one path, compared with now. */
static enum dstat diff_one(const struct cli *c, unsigned num, const struct fsb_pick *pk,
			   char *detail, size_t dlen)
{
	const struct fsb_prior *pr = &pk->rec->prior;
	const char *path = pk->rec->resolved;
	char before[64], line[160];
	struct stat st;
	bool now;
	int obj = -1, cur = -1, rc;
	enum dstat res;

	detail[0] = '\0';
	snprintf(before, sizeof(before), "before cycle %u", num);
	if (lstat(path, &st) == 0) {
		now = true;
	} else if (errno == ENOENT || errno == ENOTDIR) {
		now = false;
	} else {
		snprintf(detail, dlen, "cannot look at it now: %s", strerror(errno));
		return D_ERROR;
	}

	if (!pr->exists) {
		if (!now)
			return D_UNCHANGED;	/* created, and gone again */
		say(c, "created by the cycle", path);
		if (!S_ISREG(st.st_mode) || c->json)
			return D_CREATED;
		cur = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
		if (cur < 0) {
			snprintf(detail, dlen, "cannot open it: %s", strerror(errno));
			return D_ERROR;
		}
		rc = run_diff(path, -1, "absent before the cycle", cur, "now", false);
		close(cur);
		if (rc > 1) {
			snprintf(detail, dlen, "diff failed");
			return D_ERROR;
		}
		return D_CREATED;
	}

	if (strcmp(pr->type, "file") != 0) {
		if (!now) {
			snprintf(line, sizeof(line), "removed (%s before cycle %u)",
				 prior_type_words(pr->type), num);
			say(c, line, path);
			return D_REMOVED;
		}
		if (!same_type(pr->type, st.st_mode)) {
			snprintf(line, sizeof(line), "%s before cycle %u, %s now",
				 prior_type_words(pr->type), num, fsb_file_type_name(st.st_mode));
			say(c, line, path);
			return D_CHANGED;
		}
		if (S_ISLNK(st.st_mode) && pr->target != NULL) {
			char target[PATH_MAX];
			ssize_t n = readlink(path, target, sizeof(target) - 1);

			if (n < 0) {
				snprintf(detail, dlen, "cannot read the symlink: %s", strerror(errno));
				return D_ERROR;
			}
			target[n] = '\0';
			if (strcmp(target, pr->target) != 0) {
				if (!c->json) {
					fputs("symlink target changed: ", stdout);
					put_safe(stdout, path);
					fputs(" (was '", stdout);
					put_safe(stdout, pr->target);
					fputs("', now '", stdout);
					put_safe(stdout, target);
					fputs("')\n", stdout);
				}
				return D_CHANGED;
			}
		}
		return D_UNCHANGED;
	}

	/* The cycle changed its metadata only: its bytes are as they were. */
	if (pr->metadata_only)
		return D_UNCHANGED;
	if (pr->object[0] == '\0') {
		snprintf(line, sizeof(line), "no backup taken (%s)",
			 pr->skipped[0] != '\0' ? pr->skipped : "none recorded");
		say(c, line, path);
		snprintf(detail, dlen, "%s", pr->skipped[0] != '\0' ? pr->skipped : "none recorded");
		return D_NOBACKUP;
	}
	obj = fsb_backup_object_open(c->store, pr->object);
	rc = obj < 0 ? obj : fsb_backup_object_check(obj, pr);
	if (rc < 0) {
		snprintf(detail, dlen, "its backup object %s %s", pr->object,
			 rc == -ESTALE ? "(its inode, kept) changed after it was kept"
			 : rc == -EBADMSG ? "does not match its SHA-256 (damaged)"
			 : rc == -ENXIO ? "is not a regular file"
			 : rc == -ENOENT ? "is missing" : strerror(-rc));
		res = D_ERROR;
		goto out;
	}
	if (!now) {
		rc = run_diff(path, obj, before, -1, "absent now", c->json);
		res = D_REMOVED;
	} else if (!S_ISREG(st.st_mode)) {
		snprintf(line, sizeof(line), "a regular file before cycle %u, %s now", num,
			 fsb_file_type_name(st.st_mode));
		say(c, line, path);
		res = D_CHANGED;
		goto out;
	} else {
		cur = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
		if (cur < 0) {
			snprintf(detail, dlen, "cannot open it: %s", strerror(errno));
			res = D_ERROR;
			goto out;
		}
		rc = run_diff(path, obj, before, cur, "now", c->json);
		res = rc == 0 ? D_UNCHANGED : D_CHANGED;
	}
	if (rc > 1) {
		snprintf(detail, dlen, "diff failed");
		res = D_ERROR;
	}
out:
	if (obj >= 0)
		close(obj);
	if (cur >= 0)
		close(cur);
	return res;
}

static int cmd_diff(const struct cli *c)
{
	struct fsb_cycle cy;
	struct fsb_picks picks = { 0 };
	char **args = NULL;
	bool *arg_used = NULL;
	cJSON *arr = NULL;
	unsigned num;
	int rc, status = 0;

	rc = pick_cycle(c, &num);
	if (rc != 0)
		return 2;
	if (load(c, num, &cy) < 0)
		return 2;
	if (fsb_cycle_pick(&cy, NULL, &picks) < 0)
		goto nomem;
	if (canonical_args(c, &args, &arg_used) < 0)
		goto nomem;
	if (c->json)
		arr = cJSON_CreateArray();
	for (size_t i = 0; i < picks.n; i++) {
		const struct fsb_pick *pk = &picks.v[i];
		char detail[PATH_MAX + 128];
		bool want = c->npaths == 0;
		enum dstat d;

		for (int a = 0; a < c->npaths; a++) {
			for (size_t k = 0; k < pk->nall; k++) {
				if (arg_matches(args[a], pk->all[k])) {
					want = arg_used[a] = true;
					break;
				}
			}
		}
		if (!want)
			continue;
		d = diff_one(c, cy.number, pk, detail, sizeof(detail));
		if (d == D_ERROR) {
			fflush(stdout);
			fputs("fsbroker backup diff: ", stderr);
			put_safe(stderr, pk->rec->resolved);
			fprintf(stderr, ": %s\n", detail);
			status = 2;
		} else if (d != D_UNCHANGED && status == 0) {
			status = 1;
		}
		if (c->json) {
			cJSON *o = cJSON_CreateObject();

			fsb_json_add_path(o, "path", pk->rec->resolved, false);
			cJSON_AddStringToObject(o, "status", dstat_name[d]);
			if (detail[0] != '\0')
				cJSON_AddStringToObject(o, "detail", detail);
			cJSON_AddItemToArray(arr, o);
		}
	}
	for (int a = 0; a < c->npaths; a++) {
		if (arg_used[a])
			continue;
		fflush(stdout);
		fprintf(stderr, "fsbroker backup diff: cycle %u did not touch ", cy.number);
		put_safe(stderr, args[a]);
		fputc('\n', stderr);
	}
	if (c->json) {
		print_json(arr);
		cJSON_Delete(arr);
	}
	goto out;

nomem:
	fprintf(stderr, "fsbroker backup: out of memory\n");
	status = 2;
out:
	for (int a = 0; args != NULL && a < c->npaths; a++)
		free(args[a]);
	free(args);
	free(arg_used);
	fsb_picks_free(&picks);
	fsb_cycle_free(&cy);
	return status;
}

/* ---- prune --------------------------------------------------------------- */

/* What backup_prune.c says, as prune prints it: removals on stdout, the rest
 * on stderr. A sealing time comes from cycle.json: shown escaped. */
static void prune_say(void *arg, enum fsb_prune_msg kind, const char *msg)
{
	(void)arg;
	if (kind == FSB_PRUNE_REMOVED) {
		put_safe(stdout, msg);
		putchar('\n');
		return;
	}
	fflush(stdout);
	fputs("fsbroker backup prune: ", stderr);
	put_safe(stderr, msg);
	fputc('\n', stderr);
}

static int cmd_prune(const struct cli *c)
{
	struct fsb_prune_opts o = {
		.keep = c->keep, .older_than = c->older_than, .max_bytes = c->max_size,
		.dry_run = c->dry_run, .report = prune_say,
	};
	struct fsb_prune_result res;
	int rootfd, admfd, rc, status;

	rootfd = open(c->store, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (rootfd < 0) {
		if (errno == ENOENT) {
			printf("Session %s has no %s: there is nothing to prune.\n", c->session,
			       c->undo_store ? "restore_backup store" : "backup store");
			return 0;
		}
		fprintf(stderr, "fsbroker backup prune: cannot open %s: %s\n", c->store,
			strerror(errno));
		return 1;
	}
	/* The lock a core holds while it runs (docs/backup-store.md), or a
	 * restore while it writes restore_backup: pruning under either would
	 * delete an open cycle's objects in flight. backup_prune.c takes no
	 * lock of its own; this one is held until rootfd is closed. The
	 * admin lock on cycles/ first, as the cores take it: a core that
	 * checks whether it is alone lets go of its shared lock for a moment,
	 * under that lock only. */
	admfd = openat(rootfd, "cycles", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (admfd >= 0)
		while (flock(admfd, LOCK_EX) < 0 && errno == EINTR)
			;
	if (flock(rootfd, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EWOULDBLOCK)
			fprintf(stderr, "fsbroker backup prune: the store is in use by a running "
				"%s; %s\n", c->undo_store ? "restore" : "fsbroker core",
				c->undo_store ? "prune it once that is done"
				: "stop it or prune later");
		else
			fprintf(stderr, "fsbroker backup prune: cannot lock %s: %s\n", c->store,
				strerror(errno));
		if (admfd >= 0)
			close(admfd);
		close(rootfd);
		return 1;
	}
	rc = fsb_backup_prune(c->store, &o, &res);
	status = rc < 0 ? 1 : 0;
	if (res.cycles == 0 && res.objects == 0 && res.bytes == 0)
		printf("Nothing to prune: %zu sealed cycle%s, none beyond what is kept, and no "
		       "object unreferenced.\n", res.sealed, res.sealed == 1 ? "" : "s");
	else
		printf("%s %zu cycle%s and %zu object%s that no remaining cycle names: %llu "
		       "bytes %s.\n", c->dry_run ? "Would remove" : "Removed", res.cycles,
		       res.cycles == 1 ? "" : "s", res.objects, res.objects == 1 ? "" : "s",
		       (unsigned long long)res.bytes, c->dry_run ? "would be freed" : "freed");
	if (c->max_size != FSB_PRUNE_NO_LIMIT && res.sized) {
		if (res.size_after > c->max_size) {
			fflush(stdout);
			fprintf(stderr, "fsbroker backup prune: the store %s %llu bytes, more than "
				"%llu: what is left is the open cycle and cycles that cannot be "
				"removed\n", c->dry_run ? "would still hold" : "still holds",
				(unsigned long long)res.size_after,
				(unsigned long long)c->max_size);
			status = 1;
		} else {
			printf("The store %s %llu bytes (at most %llu asked).\n",
			       c->dry_run ? "would hold" : "holds",
			       (unsigned long long)res.size_after, (unsigned long long)c->max_size);
		}
	}
	if (admfd >= 0)
		close(admfd);
	close(rootfd);	/* and with it the lock */
	return status;
}

/* ---- undo ---------------------------------------------------------------- */

/* `undo`: restore the last cycle of restore_backup, which holds what the
 * last restore (or undo) changed, as it was just before. */
static int cmd_undo(const struct cli *c)
{
	unsigned *nums;
	size_t n;
	int rc;

	rc = fsb_cycles_list(c->store, &nums, &n);
	if (rc < 0) {
		fprintf(stderr, "fsbroker backup undo: cannot read %s/cycles: %s\n", c->store,
			strerror(-rc));
		return 1;
	}
	free(nums);
	if (n == 0) {
		fprintf(stderr, "fsbroker backup undo: session %s has no restore to undo (a restore "
			"keeps what it changes in %s, unless it ran with --no-undo or --dry-run)\n",
			c->session, c->store);
		return 2;
	}
	return cmd_restore(c);
}

/* ---- the command --------------------------------------------------------- */

static bool is(const char *sub, const char *name)
{
	return strcmp(sub, name) == 0;
}

/* A verb, its usage text and the options it takes (short codes of opts). */
struct verb {
	const char *name;
	const char *usage;
	const char *accepts;
};

static const struct verb verbs[] = {
	{ "list", list_usage, "sSwhaju" },
	{ "show", show_usage, "sSwhjlu" },
	{ "restore", restore_usage, "sSwhjltnfN" },
	{ "undo", undo_usage, "sSwhjlnfN" },
	{ "diff", diff_usage, "sSwhjlu" },
	{ "prune", prune_usage, "sSwhnukom" },
};

static const struct verb *find_verb(const char *name)
{
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (is(name, verbs[i].name))
			return &verbs[i];
	return NULL;
}

int fsb_cli_backup(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "state-dir", required_argument, NULL, 's' },
		{ "session", required_argument, NULL, 'S' },
		{ "workspace", required_argument, NULL, 'w' },
		{ "all", no_argument, NULL, 'a' },
		{ "json", no_argument, NULL, 'j' },
		{ "last", no_argument, NULL, 'l' },
		{ "tool-call", required_argument, NULL, 't' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "force", no_argument, NULL, 'f' },
		{ "no-undo", no_argument, NULL, 'N' },
		{ "undo", no_argument, NULL, 'u' },
		{ "keep", required_argument, NULL, 'k' },
		{ "older-than", required_argument, NULL, 'o' },
		{ "max-size", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cli c;
	const struct verb *v;
	const char *sub;
	char prog[32];
	int opt, rc, pos, li;

	memset(&c, 0, sizeof(c));
	c.keep = c.older_than = -1;
	c.max_size = FSB_PRUNE_NO_LIMIT;
	if (argc < 2) {
		fprintf(stderr, "fsbroker backup: name a verb (list, show, restore, undo, diff, "
			"prune); see fsbroker backup --help\n");
		return 2;
	}
	sub = argv[1];
	if (is(sub, "-h") || is(sub, "--help")) {
		fputs(usage, stdout);
		return 0;
	}
	if (sub[0] == '-')
		return fsb_cli_unknown_option("fsbroker backup", sub, 2);
	v = find_verb(sub);
	if (v == NULL) {
		fprintf(stderr, "fsbroker backup: unknown subcommand '%s' (list, show, restore, undo, "
			"diff, prune); see fsbroker backup --help\n", sub);
		return 2;
	}
	snprintf(prog, sizeof(prog), "fsbroker backup %s", v->name);
	argc--;
	argv++;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		/* Another verb's option is as unknown to this one as any, also
		 * when getopt found it given a value wrongly (optopt says which). */
		int code = opt != ':' && opt != '?' ? opt :
			   strncmp(argv[optind - 1], "--", 2) == 0 ? optopt : 0;

		for (li = 0; code != 0 && opts[li].name != NULL; li++) {
			char name[40];

			if (opts[li].val != code || strchr(v->accepts, code) != NULL)
				continue;
			snprintf(name, sizeof(name), "--%s", opts[li].name);
			return fsb_cli_unknown_option(prog, name, 2);
		}
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
		case 'w':
			c.workspace = optarg;
			break;
		case 'a':
			c.all = true;
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
		case 'N':
			c.no_undo = true;
			break;
		case 'u':
			c.undo_store = true;
			break;
		case 'k':
		case 'o': {
			char *end;
			long n;

			errno = 0;
			n = strtol(optarg, &end, 10);
			if (optarg[0] < '0' || optarg[0] > '9' || *end != '\0' || errno != 0 ||
			    n > 1000000000L) {
				fprintf(stderr, "fsbroker backup: --%s needs a whole number, not '%s'\n",
					opt == 'k' ? "keep" : "older-than", optarg);
				return 2;
			}
			if (opt == 'k')
				c.keep = n;
			else
				c.older_than = n;
			break;
		}
		case 'm':
			if (fsb_parse_size(optarg, &c.max_size) < 0 ||
			    c.max_size == FSB_PRUNE_NO_LIMIT) {
				fprintf(stderr, "fsbroker backup: --max-size needs a size: bytes, or a "
					"whole number with K, M, G or T (500M, 2G), not '%s'\n", optarg);
				return 2;
			}
			break;
		case 'h':
			fputs(v->usage, stdout);
			return 0;
		case ':':
			fprintf(stderr, "%s: %s needs a value; see %s --help\n", prog,
				argv[optind - 1], prog);
			return 2;
		default:
			return fsb_cli_bad_option(prog, argv, 2);
		}
	}
	pos = optind;
	if (is(sub, "prune")) {
		if (pos != argc) {
			fprintf(stderr, "fsbroker backup prune: takes no cycle or path\n");
			return 2;
		}
		if ((c.keep >= 0) + (c.older_than >= 0) + (c.max_size != FSB_PRUNE_NO_LIMIT) != 1) {
			fprintf(stderr, "fsbroker backup prune: name one of --keep N, --older-than "
				"DAYS or --max-size SIZE; see fsbroker backup prune --help\n");
			return 2;
		}
	} else if (is(sub, "list")) {
		if (pos != argc) {
			fprintf(stderr, "fsbroker backup list: takes no cycle or path\n");
			return 2;
		}
	} else {
		/* `undo` alone undoes the last restore (or undo): the newest
		 * cycle of restore_backup. */
		if (is(sub, "undo")) {
			c.undo_cmd = true;
			c.last = c.last || pos == argc;
		}
		if (!c.last && pos == argc) {
			fprintf(stderr, "fsbroker backup %s: name a cycle, or --last; see fsbroker "
				"backup %s --help\n", sub, sub);
			return 2;
		}
		if (!c.last)
			c.cycle_arg = argv[pos++];
		if (is(sub, "show") && pos != argc) {
			fprintf(stderr, "fsbroker backup show: unexpected '%s'\n", argv[pos]);
			return 2;
		}
		c.paths = argv + pos;
		c.npaths = argc - pos;
	}
	if (c.all && (c.session[0] != '\0' || c.workspace != NULL)) {
		fprintf(stderr, "fsbroker backup list: --all goes without --session or "
			"--workspace\n");
		return 2;
	}
	if (c.state[0] == '\0')
		fsb_default_state_dir(c.state, sizeof(c.state));
	if (c.all)
		return cmd_list_all(&c);
	rc = locate_store(&c);
	if (rc != 0)
		return rc;
	if ((c.undo_store || c.undo_cmd) &&
	    fsb_undo_store_dir(c.state, c.session, c.store, sizeof(c.store)) < 0) {
		fprintf(stderr, "fsbroker backup: the state dir path %s is too long\n", c.state);
		return 2;
	}
	if (is(sub, "list"))
		return cmd_list(&c);
	if (is(sub, "show"))
		return cmd_show(&c);
	if (is(sub, "diff"))
		return cmd_diff(&c);
	if (is(sub, "prune"))
		return cmd_prune(&c);
	root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0) {
		fprintf(stderr, "fsbroker backup: cannot open /: %s\n", strerror(errno));
		return 1;
	}
	rc = c.undo_cmd ? cmd_undo(&c) : cmd_restore(&c);
	close(root_fd);
	return rc;
}
