/*
 * cli_backup.c — `fsbroker backup list|show|restore|undo|diff|prune` (DESIGN
 * §6.3, docs/restore.md): the options of each verb, and what it prints.
 * The work happens in the store's library: the cycles are read by
 * core/store/backup_read.c, restored by core/store/restore.c (which keeps
 * what a restore changes in restore_backup, so that `undo` can put it
 * back), pruned by core/store/backup_prune.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "backup_prune.h"
#include "backup_read.h"
#include "cli.h"
#include "cli_term.h"
#include "config.h"
#include "op.h"
#include "proto_json.h"
#include "restore.h"
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
#define TERM_ENV "environment: HOME, XDG_STATE_HOME, NO_COLOR, TERM, PAGER, LESS\n"

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
	"  undo      take back the last restore\n"
	"  redo      do the restore the last undo took back again\n"
	"  diff      what a cycle changed, line by line (--stat, --name-only)\n"
	"  cat       print a file as it was before a cycle\n"
	"  log       the cycles and tool calls that changed a path\n"
	"  prune     remove old sealed cycles and the objects only they name\n"
	"  du        what each cycle holds, and what pruning it would free\n"
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
	"usage: fsbroker backup list [--all] [--undo] [--json] [--color[=WHEN]]\n"
	"                            [--no-pager] [--state-dir DIR]\n"
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
	"  --color[=WHEN]            colour: auto (default: when stdout is a terminal,\n"
	"                            TERM is not dumb and NO_COLOR is unset), always\n"
	"                            (a bare --color), never\n"
	"  --no-pager                never through $PAGER (default on a terminal:\n"
	"                            less -FRX; PAGER= or PAGER=cat for none)\n"
	STORE_OPTS
	HELP_OPT
	"\n"
	"exit: 0 listed, 1 a journal could not be read, 2 usage error or no such\n"
	"  session\n"
	TERM_ENV
	"docs: docs/restore.md\n";

static const char show_usage[] =
	"usage: fsbroker backup show CYCLE|--last [--undo] [--json] [--color[=WHEN]]\n"
	"                            [--no-pager] [--state-dir DIR]\n"
	"                            [--session ID | --workspace DIR]\n"
	"\n"
	"Show what one cycle touched: each path, the tool call that changed it, what\n"
	"was kept of it (content, metadata, or that the cycle created it).\n"
	"\n"
	"options:\n"
	"  --last                    the newest cycle\n"
	UNDO_OPT
	"  --json                    one JSON object\n"
	"  --color[=WHEN]            colour: auto (default: when stdout is a terminal,\n"
	"                            TERM is not dumb and NO_COLOR is unset), always\n"
	"                            (a bare --color), never\n"
	"  --no-pager                never through $PAGER (default on a terminal:\n"
	"                            less -FRX; PAGER= or PAGER=cat for none)\n"
	STORE_OPTS
	HELP_OPT
	"\n"
	"exit: 0 shown, 1 its journal cannot be read, 2 usage error or no such session\n"
	"  or cycle\n"
	TERM_ENV
	"docs: docs/restore.md\n";

static const char restore_usage[] =
	"usage: fsbroker backup restore CYCLE|--last [PATH...] [--tool-call ID]\n"
	"                               [--to DIR] [--dry-run] [--force] [--no-undo]\n"
	"                               [--json] [-q]\n"
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
	"  --to DIR                  write the paths into DIR instead (made when missing,\n"
	"                            else it must be empty), laid out as below the\n"
	"                            workspace; nothing in place changes, no undo\n"
	"  --dry-run                 say what would be restored or removed; change\n"
	"                            nothing\n"
	"  --force                   restore paths changed since the cycle ended too\n"
	"  --no-undo                 keep no copy of what the restore changes (then\n"
	"                            nothing can undo it)\n"
	"  --json                    one JSON array, an object per path\n"
	"  -q, --quiet               no progress on a terminal (stderr), no total line\n"
	STORE_OPTS
	HELP_OPT
	"\n"
	"exit: 0 restored, 1 something was skipped or failed (a partial restore), 2\n"
	"  usage error or no such session, cycle or tool call\n"
	BACKUP_ENV
	"docs: docs/restore.md\n";

static const char undo_usage[] =
	"usage: fsbroker backup undo [PATH...] [--dry-run] [--force] [--json] [-q]\n"
	"                            [--state-dir DIR] [--session ID | --workspace DIR]\n"
	"\n"
	"Take back the last restore (or redo): put back what it changed, from the copy it\n"
	"kept in the store of the restores. It first says which restore it takes back,\n"
	"of what, and when. What it changes is kept too, so `fsbroker backup redo` can do\n"
	"the restore again. With nothing to undo (no restore yet, or the last one undone\n"
	"already) it says so and changes nothing. PATHs limit it to those paths.\n"
	"\n"
	"options:\n"
	"  --dry-run                 say what would be put back; change nothing\n"
	"  --force                   put back paths changed since the restore too\n"
	"  --json                    one JSON array, an object per path\n"
	"  -q, --quiet               no progress on a terminal (stderr), no total line\n"
	STORE_OPTS
	HELP_OPT
	"\n"
	"exit: 0 undone, 1 something was skipped or failed, 2 usage error, no such\n"
	"  session, or nothing to undo\n"
	BACKUP_ENV
	"docs: docs/restore.md (\"Undoing a restore\")\n";

static const char redo_usage[] =
	"usage: fsbroker backup redo [PATH...] [--dry-run] [--force] [--json] [-q]\n"
	"                            [--state-dir DIR] [--session ID | --workspace DIR]\n"
	"\n"
	"Do the restore that the last `fsbroker backup undo` took back again. It first\n"
	"says which undo it reverses, and when. What it changes is kept, so `fsbroker\n"
	"backup undo` can take it back once more. With nothing to redo (no undo since\n"
	"the last restore) it says so and changes nothing. PATHs limit it to those\n"
	"paths.\n"
	"\n"
	"options:\n"
	"  --dry-run                 say what would be put back; change nothing\n"
	"  --force                   put back paths changed since the undo too\n"
	"  --json                    one JSON array, an object per path\n"
	"  -q, --quiet               no progress on a terminal (stderr), no total line\n"
	STORE_OPTS
	HELP_OPT
	"\n"
	"exit: 0 redone, 1 something was skipped or failed, 2 usage error, no such\n"
	"  session, or nothing to redo\n"
	BACKUP_ENV
	"docs: docs/restore.md (\"Undoing a restore\")\n";

static const char diff_usage[] =
	"usage: fsbroker backup diff CYCLE|--last [PATH...] [--stat | --name-only]\n"
	"                            [--undo] [--json] [-q] [--color[=WHEN]] [--no-pager]\n"
	"                            [--state-dir DIR] [--session ID | --workspace DIR]\n"
	"\n"
	"Show what a cycle changed: for each path (or each PATH named), its state at\n"
	"the start of the cycle against what is there now, line by line for text\n"
	"(/usr/bin/diff -u), a sentence for binary files, modes, owners and links.\n"
	"\n"
	"options:\n"
	"  --last                    the newest cycle\n"
	"  --stat                    a line per path with the lines added and removed,\n"
	"                            and a total\n"
	"  --name-only               only the paths that differ, one per line\n"
	UNDO_OPT
	"  --json                    one JSON array, an object per path (with --stat:\n"
	"                            its added and removed lines)\n"
	"  -q, --quiet               no progress on a terminal (stderr)\n"
	"  --color[=WHEN]            colour: auto (default: when stdout is a terminal,\n"
	"                            TERM is not dumb and NO_COLOR is unset), always\n"
	"                            (a bare --color), never\n"
	"  --no-pager                never through $PAGER (default on a terminal:\n"
	"                            less -FRX; PAGER= or PAGER=cat for none)\n"
	STORE_OPTS
	HELP_OPT
	"\n"
	"exit: 0 no differences, 1 differences, 2 trouble (usage error, no such session\n"
	"  or cycle, a backup that cannot be read)\n"
	TERM_ENV
	"docs: docs/restore.md\n";

static const char cat_usage[] =
	"usage: fsbroker backup cat CYCLE|--last PATH [--undo] [--state-dir DIR]\n"
	"                           [--session ID | --workspace DIR]\n"
	"\n"
	"Print PATH as it was before the cycle changed it, byte for byte, on stdout\n"
	"(a symlink: its target), touching nothing: the old version without a\n"
	"restore.\n"
	"\n"
	"options:\n"
	"  --last                    the newest cycle\n"
	UNDO_OPT
	STORE_OPTS
	HELP_OPT
	"\n"
	"exit: 0 printed, 1 the cycle did not keep its content (it was absent, a\n"
	"  directory, changed in its metadata only, or over the size limit), 2 usage\n"
	"  error, no such session or cycle, or the cycle did not touch PATH\n"
	BACKUP_ENV
	"docs: docs/restore.md\n";

static const char log_usage[] =
	"usage: fsbroker backup log PATH [--undo] [--json] [--color[=WHEN]] [--no-pager]\n"
	"                           [--state-dir DIR]\n"
	"                           [--session ID | --workspace DIR]\n"
	"\n"
	"List the cycles that changed PATH (or anything beneath it), newest first:\n"
	"the cycle, when it was sealed, its message, the tool calls that changed\n"
	"the path and what they did.\n"
	"\n"
	"options:\n"
	UNDO_OPT
	"  --json                    one JSON array, an object per cycle\n"
	"  --color[=WHEN]            colour: auto (default: when stdout is a terminal,\n"
	"                            TERM is not dumb and NO_COLOR is unset), always\n"
	"                            (a bare --color), never\n"
	"  --no-pager                never through $PAGER (default on a terminal:\n"
	"                            less -FRX; PAGER= or PAGER=cat for none)\n"
	STORE_OPTS
	HELP_OPT
	"\n"
	"exit: 0 listed (none is no error), 1 a cycle could not be read, 2 usage error\n"
	"  or no such session\n"
	TERM_ENV
	"docs: docs/restore.md\n";

static const char du_usage[] =
	"usage: fsbroker backup du [--json] [--undo] [--state-dir DIR]\n"
	"                          [--session ID | --workspace DIR]\n"
	"\n"
	"What each cycle of the session's store holds: \"own\", its journal and the\n"
	"objects no other cycle names; \"shared\", the objects it shares with other\n"
	"cycles; \"frees\", what pruning it alone would free. Bytes as stored\n"
	"(compressed, packed). A total line: the store's cycles, objects, bytes held,\n"
	"bytes on disk, and objects no cycle names (the next prune's).\n"
	"\n"
	"options:\n"
	"  --json                    one object: {\"cycles\": [...], \"total\": {...}}\n"
	UNDO_OPT
	STORE_OPTS
	HELP_OPT
	"\n"
	"exit: 0 shown, 1 the store cannot be read, 2 usage error or no such session\n"
	BACKUP_ENV
	"docs: docs/restore.md (\"What the store holds\")\n";

static const char prune_usage[] =
	"usage: fsbroker backup prune (--keep N | --older-than DAYS | --max-size SIZE)\n"
	"                             [--dry-run] [--undo] [--json] [-q]\n"
	"                             [--state-dir DIR] [--session ID | --workspace DIR]\n"
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
	"  --json                    one JSON object: the cycles removed, the objects\n"
	"                            and bytes freed\n"
	"  -q, --quiet               no progress on a terminal (stderr)\n"
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
	const char *to;		/* restore --to DIR, else NULL */
	bool json, last, dry_run, force;
	bool stat, name_only;	/* diff --stat, --name-only */
	bool no_undo;		/* restore, undo: keep no copy of what they change */
	bool quiet;		/* -q: no progress, no total line */
	enum fsb_color color;	/* --color=auto|always|never */
	bool no_pager;		/* --no-pager */
	struct fsb_paint paint;	/* the colours of stdout ("" each without) */
	bool undo_cmd;		/* `undo`, `redo`: restore the last cycle of restore_backup */
	bool redo_cmd;		/* `redo` */
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
	fsb_cli_json_out(v);
}

/* ---- locating the store ------------------------------------------------- */

/*
 * Without --session, the session of the workspace (--workspace, else the
 * current directory), as fsb_session_find says: never another project's.
 * 0, or the exit status after saying why; with `none_ok`, NO_SESSION_YET
 * said nothing when the workspace has no session at all.
 */
#define NO_SESSION_YET 3
static int session_of_workspace(struct cli *c, bool none_ok)
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
	if (none_ok)
		return NO_SESSION_YET;
	fsb_session_for_workspace(real, own, sizeof(own));
	fsb_cli_json_code("no-session");
	fputs("fsbroker backup: no session has backups of the workspace ", stderr);
	put_safe(stderr, real);
	fprintf(stderr, " (its own would be %s) under %s/sessions; name one with --session "
		"or --workspace, or see them all with `fsbroker backup list --all`\n", own,
		c->state);
	return 2;
}

static int locate_store(struct cli *c, bool none_ok)
{
	char dir[PATH_MAX + 16];
	struct stat st;
	int rc;

	if (c->session[0] == '\0' && (rc = session_of_workspace(c, none_ok)) != 0)
		return rc;
	rc = fsb_backup_store_dir(c->state, c->session, c->store, sizeof(c->store));
	if (rc < 0) {
		fprintf(stderr, "fsbroker backup: '%s' is not a session id\n", c->session);
		return 2;
	}
	snprintf(dir, sizeof(dir), "%s/sessions/%s", c->state, c->session);
	if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		fsb_cli_json_code("no-session");
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
		fsb_cli_json_code("no-cycle");
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

	if (rc < 0) {
		fsb_cli_json_code(rc == -ENOENT ? "no-cycle" : "io");
		fprintf(stderr, "fsbroker backup: %s\n", err);
	}
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
			printf("%s%5u%s  %-9s  %-19s  %-19s  %5zu  %7zu  ", c->paint.yellow,
			       cy.number, c->paint.reset,
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
	} else if (p->rec->moved_to != NULL) {
		/* Its name went, the file lives on under moved_to: no delete. */
		if (strcmp(pr->type, "file") == 0)
			snprintf(buf, len, "renamed (%llu bytes)", (unsigned long long)pr->size);
		else
			snprintf(buf, len, "renamed %s",
				 strcmp(pr->type, "dir") == 0 ? "directory" : pr->type);
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

static cJSON *end_json(const struct fsb_end_state *e)
{
	return e == NULL ? cJSON_CreateNull() : fsb_journal_end_encode(e);
}

/* The colour of a BEFORE THE CYCLE column: what the cycle did, as git
 * colours it (created green, deleted red, renamed cyan). */
static const char *before_color(const struct fsb_paint *pt, const char *before)
{
	if (strncmp(before, "created", 7) == 0)
		return pt->green;
	if (strncmp(before, "deleted", 7) == 0)
		return pt->red;
	if (strncmp(before, "renamed", 7) == 0)
		return pt->cyan;
	return "";
}

static int cmd_show(const struct cli *c)
{
	struct fsb_cycle cy;
	struct fsb_picks picks = { 0 };
	struct fsb_moves moves = { 0 };
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
	if (fsb_cycle_pick(&cy, NULL, &picks) < 0 || fsb_cycle_moves(&cy, &moves) < 0) {
		fprintf(stderr, "fsbroker backup: out of memory\n");
		fsb_picks_free(&picks);
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
			const struct fsb_journal_rec *from;
			cJSON *e = cJSON_CreateObject(), *oa;

			fsb_json_add_path(e, "path", p->rec->resolved, false);
			cJSON_AddStringToObject(e, "op", p->rec->op);
			oa = cJSON_AddArrayToObject(e, "ops");
			for (size_t j = 0; j < p->nall; j++)
				cJSON_AddItemToArray(oa, cJSON_CreateString(p->all[j]->op));
			cJSON_AddStringToObject(e, "toolCallId", p->rec->tool_call);
			cJSON_AddNumberToObject(e, "records", (double)p->nall);
			describe_before(p, before, sizeof(before));
			from = fsb_moves_into(&moves, p);
			if (from != NULL)
				snprintf(before, sizeof(before), "renamed into");
			cJSON_AddStringToObject(e, "before", before);
			if (p->rec->moved_to != NULL)
				fsb_json_add_path(e, "movedTo", p->rec->moved_to, false);
			if (from != NULL)
				fsb_json_add_path(e, "movedFrom", from->resolved, false);
			cJSON_AddItemToObject(e, "prior", fsb_journal_prior_encode(&p->rec->prior));
			cJSON_AddItemToObject(e, "end", end_json(p->end));
			cJSON_AddItemToArray(arr, e);
		}
		print_json(o);
		cJSON_Delete(o);
		goto out;
	}
	printf("%scycle %u%s (%s%s): opened %s UTC", c->paint.yellow, cy.number, c->paint.reset,
	       fsb_cycle_state_name(cy.state),
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

		/* The new name of a rename is on its source's line. */
		if (fsb_moves_into(&moves, p) != NULL)
			continue;
		ops_of(p, ops, sizeof(ops));
		describe_before(p, before, sizeof(before));
		printf("%-*s  %-*s  %s%-32s%s  ", (int)opw, ops, (int)tcw,
		       p->rec->tool_call[0] != '\0' ? p->rec->tool_call : "-",
		       before_color(&c->paint, before), before, c->paint.reset);
		put_safe(stdout, p->rec->resolved);
		if (p->rec->moved_to != NULL) {
			fputs(" -> ", stdout);
			put_safe(stdout, p->rec->moved_to);
		}
		putchar('\n');
	}
out:
	fsb_moves_free(&moves);
	fsb_picks_free(&picks);
	fsb_cycle_free(&cy);
	return 0;
}

static void print_item(const struct fsb_restore_item *it)
{
	fputs(it->verb, stdout);
	putchar(' ');
	put_safe(stdout, it->path);
	if (it->paren)
		printf(" (%s)\n", it->detail);
	else
		printf(": %s\n", it->detail);
}

/* Each path's outcome: a line each, or with --json one array. 1 when any
 * was not restored, else 0. */
static int print_results(const struct cli *c, const struct fsb_restore *r)
{
	int status = 0;

	if (c->json) {
		cJSON *arr = cJSON_CreateArray();

		for (size_t i = 0; i < r->n + r->extra; i++) {
			cJSON *e = cJSON_CreateObject();

			fsb_json_add_path(e, "path", r->items[i].path, false);
			cJSON_AddStringToObject(e, "result", r->items[i].verb);
			cJSON_AddStringToObject(e, "detail", r->items[i].detail);
			cJSON_AddItemToArray(arr, e);
		}
		print_json(arr);
		cJSON_Delete(arr);
	}
	for (size_t i = 0; i < r->n + r->extra; i++) {
		if (!c->json)
			print_item(&r->items[i]);
		if (r->items[i].res != FSB_RES_OK)
			status = 1;
	}
	return status;
}

/* What a restore of this kind is called in sentences. */
static const char *restore_word(const struct cli *c)
{
	return c->redo_cmd ? "redo" : c->undo_cmd ? "undo" : "restore";
}

/* The last line of a restore, undo or redo: how to go back (or forth). */
static void say_way_back(const struct cli *c, int undo_cycle)
{
	/* With --json, stdout holds only the JSON. */
	FILE *f = c->json ? stderr : stdout;

	if (c->undo_cmd && !c->redo_cmd)
		fprintf(f, "`fsbroker backup redo` does the restore again (cycle %d of %s).\n",
			undo_cycle, FSB_RESTORE_BACKUP);
	else
		fprintf(f, "This %s can be undone with `fsbroker backup undo` (cycle %d of %s).\n",
			restore_word(c), undo_cycle, FSB_RESTORE_BACKUP);
}

/* The copy for an undo first ("keeping a copy 4,213/10,000"), then the
 * restore itself under the verb it was started with. */
static void restore_progress(void *arg, bool copying, size_t done, size_t total)
{
	struct fsb_progress *p = arg;

	if (copying != p->copying) {
		p->copying = copying;
		p->verb = copying ? "keeping a copy for undo," : p->verb0;
		p->last = p->start;
	}
	p->total = total;
	fsb_progress_step(p, done);
}

/*
 * The total line of a restore, undo or redo: "restore: 10,000 paths in
 * 1.2 s: 9,997 restored, 3 removed", each outcome (the verb of its lines)
 * counted in the order it first appears.
 */
static void print_total(const struct cli *c, const struct fsb_restore *r,
			const struct fsb_progress *p)
{
	FILE *f = c->json ? stderr : stdout;
	size_t n = r->n + r->extra;
	char num[32];

	fprintf(f, "%s%s%s: %s path%s in %.1f s:", c->dry_run ? "dry run of " : "", restore_word(c),
		c->to != NULL ? " --to" : "",
		fsb_term_count(n, num, sizeof(num)), n == 1 ? "" : "s", fsb_progress_seconds(p));
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;
		bool seen = false;

		for (size_t j = 0; j < i && !seen; j++)
			seen = strcmp(r->items[j].verb, r->items[i].verb) == 0;
		if (seen)
			continue;
		for (size_t j = i; j < n; j++)
			k += strcmp(r->items[j].verb, r->items[i].verb) == 0;
		fprintf(f, "%s %s %s", i > 0 ? "," : "", fsb_term_count(k, num, sizeof(num)),
			r->items[i].verb);
	}
	fputs("\n", f);
}

/* Restore (or, from restore_backup, undo or redo) the loaded cycle `cy`. */
static int restore_cycle(const struct cli *c, const struct fsb_cycle *cy)
{
	struct fsb_progress prog;
	const struct fsb_restore_opts o = {
		.store = c->store, .state = c->state, .session = c->session,
		.tool_call = c->tool_call, .paths = c->paths, .npaths = c->npaths,
		.dry_run = c->dry_run, .force = c->force, .no_undo = c->no_undo,
		.undo = c->undo_cmd, .redo = c->redo_cmd,
		.progress = restore_progress, .progress_arg = &prog,
	};
	struct fsb_restore r = { 0 };
	int rc, status = 0;

	fsb_progress_start(&prog, c->redo_cmd ? "redoing" : c->undo_cmd ? "undoing" : "restoring",
			   0, c->quiet);

	rc = fsb_restore_plan(&o, cy, &r);
	if (rc == -EBUSY) {
		fsb_cli_json_code("open-cycle");
		fprintf(stderr, "fsbroker backup: cycle %u is still open (not sealed): it has no "
			"end states, so restore cannot tell the cycle's own changes from later "
			"ones. Restore it after it is sealed, or now with --force.\n", cy->number);
		status = 1;
		goto out;
	}
	if (rc == -ENOENT) {
		fsb_cli_json_code("no-tool-call");
		fprintf(stderr, "fsbroker backup: tool call '%s' touched nothing in cycle %u (see "
			"`fsbroker backup show %u`)\n", c->tool_call, cy->number, cy->number);
		status = 2;
		goto out;
	}
	if (rc < 0) {
		if (rc == -ENOMEM)
			fprintf(stderr, "fsbroker backup: out of memory\n");
		else
			fprintf(stderr, "fsbroker backup: cannot open /: %s\n", strerror(-rc));
		status = 1;
		goto out;
	}
	/* With --json, stdout holds only the JSON: sentences go to stderr. */
	if (r.n + r.extra == 0) {
		fprintf(c->json ? stderr : stdout,
			"Cycle %u touched no paths: there is nothing to restore.\n", cy->number);
		if (c->json)
			puts("[]");
		goto out;
	}
	if (cy->state == FSB_CYCLE_OPEN)
		fprintf(c->json ? stderr : stdout, "Cycle %u is still open: restoring without "
			"checking for changes made after it (--force).\n", cy->number);
	prog.total = r.n;
	rc = fsb_restore_perform(&o, cy, &r);
	fsb_progress_clear(&prog);
	if (rc < 0) {
		fflush(stdout);
		fputs("fsbroker backup: ", stderr);
		put_safe(stderr, r.undo_err);
		fprintf(stderr, "\nNothing was %s: without that copy it could not be undone. %s",
			c->redo_cmd ? "redone" : c->undo_cmd ? "undone" : "restored",
			r.undo_rc == -EWOULDBLOCK ? "\n" : "Free some space, or go on without a way "
			"back with --no-undo.\n");
		status = 1;
		goto out;
	}
	status = print_results(c, &r);
	if (!c->quiet)
		print_total(c, &r, &prog);
	fflush(stdout);
	if (r.undo_cycle < 0) {
		fprintf(stderr, "fsbroker backup: the %s is done, but the copy that undoes it "
			"could not be sealed (%s): `fsbroker backup %s` will find it open and "
			"need --force\n", restore_word(c), r.undo_err,
			c->undo_cmd && !c->redo_cmd ? "redo" : "undo");
		status = 1;
	} else if (r.undo_cycle > 0) {
		say_way_back(c, r.undo_cycle);
	}
out:
	fsb_restore_free(&r);
	return status;
}

/*
 * The workspace the cycle's paths are laid out below for --to: the one the
 * session recorded, else --workspace or the current directory, real.
 */
static int to_base(const struct cli *c, char *out, size_t len)
{
	char real[PATH_MAX];
	const char *ws = c->workspace != NULL ? c->workspace : ".";

	if (fsb_session_workspace(c->state, c->session, out, len) == 0)
		return 0;
	if (realpath(ws, real) == NULL) {
		fprintf(stderr, "fsbroker backup: workspace %s: %s\n", ws, strerror(errno));
		return 2;
	}
	snprintf(out, len, "%s", real);
	return 0;
}

/* `restore --to DIR`: the cycle's paths written into DIR, nothing in place. */
static int restore_into(const struct cli *c, const struct fsb_cycle *cy)
{
	struct fsb_progress prog;
	const struct fsb_restore_opts o = {
		.store = c->store, .state = c->state, .session = c->session,
		.tool_call = c->tool_call, .paths = c->paths, .npaths = c->npaths,
		.dry_run = c->dry_run, .progress = restore_progress, .progress_arg = &prog,
	};
	struct fsb_restore r = { 0 };
	char base[PATH_MAX + 2];
	int rc, status = 0;

	if ((rc = to_base(c, base, sizeof(base))) != 0)
		return rc;
	fsb_progress_start(&prog, "restoring", 0, c->quiet);
	rc = fsb_restore_to(&o, cy, c->to, base, &r);
	fsb_progress_clear(&prog);
	if (rc == -ENOENT && c->tool_call != NULL) {
		fsb_cli_json_code("no-tool-call");
		fprintf(stderr, "fsbroker backup: tool call '%s' touched nothing in cycle %u (see "
			"`fsbroker backup show %u`)\n", c->tool_call, cy->number, cy->number);
		return 2;
	}
	if (rc < 0) {
		fputs("fsbroker backup: --to ", stderr);
		put_safe(stderr, c->to);
		fprintf(stderr, ": %s\n", rc == -ENOTEMPTY ? "the directory is not empty; name a "
			"new or empty one" : strerror(-rc));
		return 2;
	}
	status = print_results(c, &r);
	if (!c->quiet)
		print_total(c, &r, &prog);
	fsb_restore_free(&r);
	return status;
}

static int cmd_restore(const struct cli *c)
{
	struct fsb_cycle cy;
	unsigned num;
	int rc;

	rc = pick_cycle(c, &num);
	if (rc != 0)
		return rc;
	rc = load(c, num, &cy);
	if (rc < 0)
		return rc == -ENOENT ? 2 : 1;
	rc = c->to != NULL ? restore_into(c, &cy) : restore_cycle(c, &cy);
	fsb_cycle_free(&cy);
	return rc;
}

/* ---- diff ---------------------------------------------------------------- */

enum dstat { D_UNCHANGED, D_CHANGED, D_CREATED, D_REMOVED, D_NOBACKUP, D_RENAMED, D_ERROR };

static const char *const dstat_name[] = {
	"unchanged", "changed", "created", "removed", "no-backup", "renamed", "error",
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

/* What diff --stat counts of one path's unified diff. */
struct diff_count {
	long added, removed;
	bool binary;		/* diff said "Binary files ... differ" */
};

/* Count the lines of a unified diff read from `fd` until its end. */
static void count_lines(int fd, struct diff_count *n)
{
	FILE *f = fdopen(fd, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;

	if (f == NULL) {
		close(fd);
		return;
	}
	while ((len = getline(&line, &cap, f)) > 0) {
		if (strncmp(line, "+++ ", 4) == 0 || strncmp(line, "--- ", 4) == 0)
			continue;
		if (line[0] == '+')
			n->added++;
		else if (line[0] == '-')
			n->removed++;
		else if (strncmp(line, "Binary files ", 13) == 0)
			n->binary = true;
	}
	free(line);
	fclose(f);
}

/*
 * /usr/bin/diff -u between two open files (fd -1: /dev/null), labelled
 * "<path> (<l1>)" and "<path> (<l2>)". diff reads the very files that were
 * opened (and, for an object, verified) through /dev/fd, never a name that
 * could be swapped meanwhile. With `quiet` its output is thrown away; with
 * `count` it is counted instead of printed. Returns diff's status: 0 same,
 * 1 different, 2 trouble.
 */
static int run_diff(const char *path, int old_fd, const char *l1, int new_fd, const char *l2,
		    bool quiet, struct diff_count *count, bool color)
{
	char a[32], b[32], *sp = safe_dup(path), *lab1 = NULL, *lab2 = NULL;
	int st, status = 2, out[2] = { -1, -1 };
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
	if (count != NULL && pipe2(out, O_CLOEXEC) < 0) {
		fprintf(stderr, "fsbroker backup: cannot run diff: %s\n", strerror(errno));
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "fsbroker backup: cannot run diff: %s\n", strerror(errno));
		if (out[0] >= 0) {
			close(out[0]);
			close(out[1]);
		}
		goto out;
	}
	if (pid == 0) {
		char *argv[] = { "diff", "-u", "--label", lab1, "--label", lab2, a, b, NULL, NULL };

		/* Coloured by diff itself, only what reaches the terminal:
		 * --stat counts lines that must start with '+' and '-'. */
		if (color && count == NULL && !quiet) {
			memmove(argv + 2, argv + 1, 7 * sizeof(*argv));
			argv[1] = "--color=always";
		}

		if ((old_fd >= 0 && fcntl(old_fd, F_SETFD, 0) < 0) ||
		    (new_fd >= 0 && fcntl(new_fd, F_SETFD, 0) < 0))
			_exit(2);
		if (count != NULL && dup2(out[1], 1) < 0)
			_exit(2);
		if (quiet && count == NULL) {
			int null = open("/dev/null", O_WRONLY);

			if (null < 0 || dup2(null, 1) < 0)
				_exit(2);
		}
		execv("/usr/bin/diff", argv);
		fprintf(stderr, "fsbroker backup: cannot run /usr/bin/diff: %s\n", strerror(errno));
		_exit(2);
	}
	if (count != NULL) {
		close(out[1]);
		count_lines(out[0], count);
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

/* Whether diff prints its own sentences and diffs: not with --json,
 * --stat or --name-only, which print a line per path of their own. */
static bool diff_quiet(const struct cli *c)
{
	return c->json || c->stat || c->name_only;
}

/* "<what>: <path>\n" on stdout, unless diff_quiet(). */
static void say(const struct cli *c, const char *what, const char *path)
{
	if (diff_quiet(c))
		return;
	fputs(c->paint.bold, stdout);
	fputs(what, stdout);
	fputs(c->paint.reset, stdout);
	fputs(": ", stdout);
	put_safe(stdout, path);
	putchar('\n');
}

/* What the cycle changed at one path, compared with now. */
static enum dstat diff_one(const struct cli *c, unsigned num, const struct fsb_pick *pk,
			   char *detail, size_t dlen, struct diff_count *count)
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

	/* A rename's source: what was here lives on under its new name. */
	if (pr->exists && pk->rec->moved_to != NULL) {
		/* Back here again (restored, or renamed back): as before. */
		if (now && same_type(pr->type, st.st_mode) &&
		    (!S_ISREG(st.st_mode) ||
		     ((uint64_t)st.st_size == pr->size && pr->has_mtime &&
		      st.st_mtim.tv_sec == pr->mtime.tv_sec &&
		      st.st_mtim.tv_nsec == pr->mtime.tv_nsec)))
			return D_UNCHANGED;
		if (!diff_quiet(c)) {
			fputs("renamed ", stdout);
			put_safe(stdout, path);
			fputs(" -> ", stdout);
			put_safe(stdout, pk->rec->moved_to);
			putchar('\n');
		}
		return D_RENAMED;
	}
	if (!pr->exists) {
		if (!now)
			return D_UNCHANGED;	/* created, and gone again */
		say(c, "created by the cycle", path);
		if (!S_ISREG(st.st_mode) || (diff_quiet(c) && !c->stat))
			return D_CREATED;
		cur = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
		if (cur < 0) {
			snprintf(detail, dlen, "cannot open it: %s", strerror(errno));
			return D_ERROR;
		}
		rc = run_diff(path, -1, "absent before the cycle", cur, "now", false,
			      c->stat ? count : NULL, c->paint.reset[0] != '\0');
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
				if (!diff_quiet(c)) {
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
		rc = run_diff(path, obj, before, -1, "absent now", diff_quiet(c),
			      c->stat ? count : NULL, c->paint.reset[0] != '\0');
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
		rc = run_diff(path, obj, before, cur, "now", diff_quiet(c), c->stat ? count : NULL,
			      c->paint.reset[0] != '\0');
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

/* Whether the PATH arguments (none: every path) name record `r`. */
static bool wanted(const struct cli *c, char **args, const struct fsb_journal_rec *r)
{
	for (int a = 0; a < c->npaths; a++)
		if (fsb_restore_path_matches(args[a], r))
			return true;
	return c->npaths == 0;
}

/* One line of diff --stat. */
struct stat_line {
	char *path;		/* shown as put_safe shows it */
	enum dstat d;
	struct diff_count n;
};

/* The word --stat shows for a path whose lines it does not count. */
static const char *stat_word(const struct stat_line *l)
{
	if (l->n.binary)
		return "binary";
	switch (l->d) {
	case D_RENAMED:
		return "renamed";
	case D_NOBACKUP:
		return "no backup taken";
	default:
		return NULL;
	}
}

/*
 * diff --stat: " PATH | N ++--" per path, as git prints it (the bar
 * scaled to 40 columns for the largest), then the total.
 */
static void print_stat(const struct stat_line *v, size_t n, const struct fsb_paint *pt)
{
	size_t width = 0, files = 0;
	long most = 0, added = 0, removed = 0;

	for (size_t i = 0; i < n; i++) {
		width = strlen(v[i].path) > width ? strlen(v[i].path) : width;
		if (v[i].n.added + v[i].n.removed > most)
			most = v[i].n.added + v[i].n.removed;
	}
	if (width > 60)
		width = 60;
	for (size_t i = 0; i < n; i++) {
		const char *word = stat_word(&v[i]);
		long total = v[i].n.added + v[i].n.removed;
		long plus = v[i].n.added, minus = v[i].n.removed;

		files++;
		added += v[i].n.added;
		removed += v[i].n.removed;
		printf(" %-*s | ", (int)width, v[i].path);
		if (word != NULL) {
			printf("%s\n", word);
			continue;
		}
		if (most > 40) {
			plus = (plus * 40 + most - 1) / most;
			minus = (minus * 40 + most - 1) / most;
		}
		printf("%ld %s", total, pt->green);
		for (long k = 0; k < plus; k++)
			putchar('+');
		fputs(pt->red, stdout);
		for (long k = 0; k < minus; k++)
			putchar('-');
		printf("%s\n", pt->reset);
	}
	printf(" %zu path%s changed, %ld line%s added, %ld line%s removed\n", files,
	       files == 1 ? "" : "s", added, added == 1 ? "" : "s", removed,
	       removed == 1 ? "" : "s");
}

static int cmd_diff(const struct cli *c)
{
	struct fsb_cycle cy;
	struct fsb_picks picks = { 0 };
	struct fsb_moves moves = { 0 };
	struct stat_line *lines = NULL;
	struct fsb_progress prog = { 0 };
	size_t nlines = 0;
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
	if (fsb_cycle_pick(&cy, NULL, &picks) < 0 || fsb_cycle_moves(&cy, &moves) < 0)
		goto nomem;
	if (fsb_restore_canonical_paths(c->paths, c->npaths, &args, &arg_used) < 0)
		goto nomem;
	if (c->json)
		arr = cJSON_CreateArray();
	/* Progress only where nothing is printed until the end (--stat,
	 * --json): a line rewritten between diffs would break them up. */
	fsb_progress_start(&prog, "diffing", picks.n, c->quiet || !(c->stat || c->json));
	for (size_t i = 0; i < picks.n; i++) {
		const struct fsb_pick *pk = &picks.v[i];
		const struct fsb_journal_rec *from;
		struct fsb_pick src;
		char detail[PATH_MAX + 128];
		struct diff_count count = { 0 };
		bool want = c->npaths == 0;
		enum dstat d;

		for (int a = 0; a < c->npaths; a++) {
			for (size_t k = 0; k < pk->nall; k++) {
				if (fsb_restore_path_matches(args[a], pk->all[k])) {
					want = arg_used[a] = true;
					break;
				}
			}
		}
		if (!want)
			continue;
		/* The new name of a rename is said with its source, once: by
		 * the source's own entry when that is asked for too. */
		from = fsb_moves_into(&moves, pk);
		if (from != NULL) {
			if (wanted(c, args, from))
				continue;
			src = (struct fsb_pick){ .rec = from, .all = &from, .nall = 1 };
			pk = &src;
		}
		fsb_progress_step(&prog, i);
		d = diff_one(c, cy.number, pk, detail, sizeof(detail), &count);
		if (d == D_ERROR) {
			fsb_progress_clear(&prog);
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
			if (d == D_RENAMED)
				fsb_json_add_path(o, "movedTo", pk->rec->moved_to, false);
			if (detail[0] != '\0')
				cJSON_AddStringToObject(o, "detail", detail);
			if (c->stat && (d == D_CHANGED || d == D_CREATED || d == D_REMOVED)) {
				cJSON_AddNumberToObject(o, "added", (double)count.added);
				cJSON_AddNumberToObject(o, "removed", (double)count.removed);
				if (count.binary)
					cJSON_AddTrueToObject(o, "binary");
			}
			cJSON_AddItemToArray(arr, o);
		} else if (c->name_only && d != D_UNCHANGED && d != D_ERROR) {
			put_safe(stdout, pk->rec->resolved);
			putchar('\n');
		} else if (c->stat && d != D_UNCHANGED && d != D_ERROR) {
			struct stat_line *v = realloc(lines, (nlines + 1) * sizeof(*v));

			if (v == NULL)
				goto nomem;
			lines = v;
			lines[nlines] = (struct stat_line){ safe_dup(pk->rec->resolved), d, count };
			if (lines[nlines].path == NULL)
				goto nomem;
			nlines++;
		}
	}
	fsb_progress_step(&prog, picks.n);
	fsb_progress_clear(&prog);
	if (c->stat && !c->json)
		print_stat(lines, nlines, &c->paint);
	for (int a = 0; a < c->npaths; a++) {
		if (arg_used[a])
			continue;
		fflush(stdout);
		fsb_cli_json_code("no-path");
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
	fsb_progress_clear(&prog);
	fprintf(stderr, "fsbroker backup: out of memory\n");
	status = 2;
out:
	for (size_t i = 0; i < nlines; i++)
		free(lines[i].path);
	free(lines);
	for (int a = 0; args != NULL && a < c->npaths; a++)
		free(args[a]);
	free(args);
	free(arg_used);
	fsb_moves_free(&moves);
	fsb_picks_free(&picks);
	fsb_cycle_free(&cy);
	return status;
}

/* ---- cat ----------------------------------------------------------------- */

/* The pick of c->paths[0] in `picks`: the path, or the rename that took
 * something there; NULL when the cycle did not touch it. */
static const struct fsb_pick *pick_of(const struct fsb_picks *picks, const char *arg)
{
	for (size_t i = 0; i < picks->n; i++)
		for (size_t k = 0; k < picks->v[i].nall; k++)
			if (strcmp(picks->v[i].rec->resolved, arg) == 0 ||
			    fsb_restore_path_matches(arg, picks->v[i].all[k]))
				return &picks->v[i];
	return NULL;
}

/* The bytes of the prior state `pr` of `path` onto stdout: 0, 1 with a
 * sentence when the cycle kept none, 2 when they cannot be read. */
static int cat_prior(const struct cli *c, unsigned num, const struct fsb_journal_rec *r)
{
	const struct fsb_prior *pr = &r->prior;
	const char *why = NULL;
	int fd, rc;

	if (!pr->exists)
		why = "was absent";
	else if (strcmp(pr->type, "symlink") == 0 && pr->target != NULL)
		return fputs(pr->target, stdout) < 0 || fflush(stdout) != 0 ? 2 : 0;
	else if (strcmp(pr->type, "file") != 0)
		why = strcmp(pr->type, "dir") == 0 ? "was a directory" : "was no regular file";
	else if (pr->metadata_only)
		why = "kept no content: the cycle changed only its metadata, so its bytes are "
		      "those it had after the cycle";
	else if (pr->object[0] == '\0' && r->moved_to == NULL)
		why = "kept no content (no backup taken)";
	if (why != NULL) {
		fputs("fsbroker backup cat: ", stderr);
		put_safe(stderr, r->resolved);
		fprintf(stderr, " %s before cycle %u\n", why, num);
		return 1;
	}
	fflush(stdout);
	if (pr->object[0] != '\0') {
		/* Checked whole before a byte goes out: the copy below checks
		 * only once it has written. */
		fd = fsb_backup_object_open(c->store, pr->object);
		rc = fd < 0 ? fd : fsb_backup_object_check(fd, pr);
		if (rc == 0)
			rc = fsb_backup_object_restore(fd, pr, STDOUT_FILENO);
	} else {
		/* Moved, not copied: the bytes are under the name it went to. */
		const char *now = r->moved_now != NULL ? r->moved_now : r->moved_to;

		fd = open(now, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
		rc = fd < 0 ? -errno : fsb_backup_moved_restore(fd, pr, STDOUT_FILENO);
	}
	if (fd >= 0)
		close(fd);
	if (rc < 0) {
		fputs("fsbroker backup cat: ", stderr);
		put_safe(stderr, r->resolved);
		fprintf(stderr, ": its content before cycle %u cannot be read: %s\n", num,
			rc == -ESTALE ? "it changed after it was kept"
			: rc == -EBADMSG ? "its object does not match its SHA-256 (damaged)"
			: strerror(-rc));
		return 2;
	}
	return 0;
}

static int cmd_cat(const struct cli *c)
{
	struct fsb_picks picks = { 0 };
	const struct fsb_pick *pk;
	struct fsb_cycle cy;
	char **args = NULL;
	bool *used = NULL;
	unsigned num;
	int status;

	if (pick_cycle(c, &num) != 0 || load(c, num, &cy) < 0)
		return 2;
	if (fsb_cycle_pick(&cy, NULL, &picks) < 0 ||
	    fsb_restore_canonical_paths(c->paths, 1, &args, &used) < 0) {
		fprintf(stderr, "fsbroker backup: out of memory\n");
		status = 2;
		goto out;
	}
	pk = pick_of(&picks, args[0]);
	if (pk == NULL) {
		fsb_cli_json_code("no-path");
		fprintf(stderr, "fsbroker backup cat: cycle %u did not touch ", cy.number);
		put_safe(stderr, args[0]);
		fputc('\n', stderr);
		status = 2;
		goto out;
	}
	status = cat_prior(c, cy.number, pk->rec);
out:
	if (args != NULL)
		free(args[0]);
	free(args);
	free(used);
	fsb_picks_free(&picks);
	fsb_cycle_free(&cy);
	return status;
}

/* ---- log ----------------------------------------------------------------- */

/* What a record did to its path, in a word. */
static const char *what_it_did(const struct fsb_journal_rec *r)
{
	if (!r->prior.exists)
		return "created";
	if (r->moved_to != NULL)
		return "renamed";
	if (strcmp(r->op, "delete") == 0)
		return "deleted";
	if (r->prior.metadata_only)
		return "metadata";
	return "modified";
}

/* One cycle's lines of `backup log`, or its JSON object into `arr`; false
 * when it did not touch the path. */
static bool log_cycle(const struct cli *c, const struct fsb_cycle *cy, const char *arg,
		      cJSON *arr)
{
	cJSON *o = NULL, *changes = NULL;
	char t[32];
	bool any = false;

	for (size_t i = 0; i < cy->nrecs; i++) {
		const struct fsb_journal_rec *r = &cy->recs[i];

		if (!fsb_restore_path_matches(arg, r))
			continue;
		if (!any) {
			any = true;
			if (arr != NULL) {
				o = cJSON_CreateObject();
				cJSON_AddNumberToObject(o, "cycle", cy->number);
				cJSON_AddStringToObject(o, "state", fsb_cycle_state_name(cy->state));
				if (cy->state == FSB_CYCLE_OPEN)
					cJSON_AddNullToObject(o, "sealed");
				else
					cJSON_AddStringToObject(o, "sealed", cy->sealed);
				fsb_json_add_path(o, "message", cy->message, false);
				changes = cJSON_AddArrayToObject(o, "changes");
			} else {
				printf("%scycle %u%s  %s  ", c->paint.yellow, cy->number, c->paint.reset,
				       cy->state == FSB_CYCLE_OPEN ? "(open)"
				       : short_time(cy->sealed, t, sizeof(t)));
				put_safe(stdout, cy->message);
				putchar('\n');
			}
		}
		if (arr != NULL) {
			cJSON *ch = cJSON_CreateObject();

			fsb_json_add_path(ch, "path", r->resolved, false);
			cJSON_AddStringToObject(ch, "change", what_it_did(r));
			cJSON_AddStringToObject(ch, "toolCallId", r->tool_call ? r->tool_call : "");
			if (r->moved_to != NULL)
				fsb_json_add_path(ch, "movedTo", r->moved_to, false);
			cJSON_AddItemToArray(changes, ch);
		} else {
			const char *did = what_it_did(r);

			printf("    %s%-9s%s ", before_color(&c->paint, did), did, c->paint.reset);
			put_safe(stdout, r->resolved);
			if (r->moved_to != NULL) {
				fputs(" -> ", stdout);
				put_safe(stdout, r->moved_to);
			}
			if (r->tool_call != NULL && r->tool_call[0] != '\0') {
				fputs("  (tool call ", stdout);
				put_safe(stdout, r->tool_call);
				putchar(')');
			}
			putchar('\n');
		}
	}
	if (o != NULL)
		cJSON_AddItemToArray(arr, o);
	return any;
}

static int cmd_log(const struct cli *c)
{
	cJSON *arr = c->json ? cJSON_CreateArray() : NULL;
	char **args = NULL;
	bool *used = NULL;
	unsigned *nums = NULL;
	size_t n = 0, shown = 0;
	int rc, status = 0;

	if (fsb_restore_canonical_paths(c->paths, 1, &args, &used) < 0) {
		fprintf(stderr, "fsbroker backup: out of memory\n");
		cJSON_Delete(arr);
		return 2;
	}
	rc = fsb_cycles_list(c->store, &nums, &n);
	if (rc < 0) {
		fprintf(stderr, "fsbroker backup: cannot read %s/cycles: %s\n", c->store,
			strerror(-rc));
		status = 2;
		goto out;
	}
	for (size_t i = n; i-- > 0;) {
		struct fsb_cycle cy;

		if (load(c, nums[i], &cy) < 0) {
			status = 1;
			continue;
		}
		shown += log_cycle(c, &cy, args[0], arr);
		fsb_cycle_free(&cy);
	}
	if (c->json) {
		print_json(arr);
	} else if (shown == 0) {
		fputs("No cycle of session ", stdout);
		put_safe(stdout, c->session);
		fputs(" changed ", stdout);
		put_safe(stdout, args[0]);
		fputs(".\n", stdout);
	}
out:
	cJSON_Delete(arr);
	free(nums);
	free(args[0]);
	free(args);
	free(used);
	return status;
}

/* ---- prune --------------------------------------------------------------- */

/* What backup_prune.c says, as prune prints it: removals on stdout, the rest
 * on stderr. A sealing time comes from cycle.json: shown escaped. */
/* A prune under way: with --json, the cycles it removed go into `gone`
 * (the sentences to stderr); on a terminal, its progress over the objects. */
struct pruning {
	cJSON *gone;
	struct fsb_progress progress;
};

static void prune_cycle_gone(void *arg, unsigned cycle)
{
	struct pruning *pr = arg;

	if (pr->gone != NULL)
		cJSON_AddItemToArray(pr->gone, cJSON_CreateNumber(cycle));
}

static void prune_objects_step(void *arg, size_t done, size_t total)
{
	struct pruning *pr = arg;

	pr->progress.total = total;
	fsb_progress_step(&pr->progress, done);
}

static void prune_say(void *arg, enum fsb_prune_msg kind, const char *msg)
{
	struct pruning *pr = arg;

	if (kind == FSB_PRUNE_REMOVED && pr->gone != NULL)
		return;	/* --json: the cycle is in the list */
	fsb_progress_clear(&pr->progress);
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

/* prune --json: what it removed (or would), docs/schema's backupPrune. */
static void prune_json(const struct cli *c, const cJSON *gone, const struct fsb_prune_result *res)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddBoolToObject(o, "dryRun", c->dry_run);
	cJSON_AddItemToObject(o, "removed", gone != NULL ? cJSON_Duplicate(gone, true)
							 : cJSON_CreateArray());
	cJSON_AddNumberToObject(o, "objectsRemoved", (double)res->objects);
	cJSON_AddNumberToObject(o, "bytesFreed", (double)res->bytes);
	if (res->sized)
		cJSON_AddNumberToObject(o, "sizeAfter", (double)res->size_after);
	print_json(o);
	cJSON_Delete(o);
}

static int cmd_prune(const struct cli *c)
{
	struct pruning pr = { .gone = c->json ? cJSON_CreateArray() : NULL };
	cJSON *gone = pr.gone;
	struct fsb_prune_opts o = {
		.keep = c->keep, .older_than = c->older_than, .max_bytes = c->max_size,
		.dry_run = c->dry_run, .report = prune_say, .cycle_gone = prune_cycle_gone,
		.objects_step = prune_objects_step, .arg = &pr,
	};
	struct fsb_prune_result res;
	int rootfd, admfd, rc, status;

	rootfd = open(c->store, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (rootfd < 0) {
		if (errno == ENOENT) {
			memset(&res, 0, sizeof(res));
			if (c->json)
				prune_json(c, gone, &res);
			else
				printf("Session %s has no %s: there is nothing to prune.\n",
				       c->session,
				       c->undo_store ? "restore_backup store" : "backup store");
			cJSON_Delete(gone);
			return 0;
		}
		cJSON_Delete(gone);
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
		if (errno == EWOULDBLOCK) {
			fsb_cli_json_code("busy");
			fprintf(stderr, "fsbroker backup prune: the store is in use by a running "
				"%s; %s\n", c->undo_store ? "restore" : "fsbroker core",
				c->undo_store ? "prune it once that is done"
				: "stop it or prune later");
		} else
			fprintf(stderr, "fsbroker backup prune: cannot lock %s: %s\n", c->store,
				strerror(errno));
		if (admfd >= 0)
			close(admfd);
		close(rootfd);
		cJSON_Delete(gone);
		return 1;
	}
	fsb_progress_start(&pr.progress, c->dry_run ? "looking at objects" : "pruning objects", 0,
			   c->quiet);
	rc = fsb_backup_prune(c->store, &o, &res);
	fsb_progress_clear(&pr.progress);
	status = rc < 0 ? 1 : 0;
	if (c->json)
		prune_json(c, gone, &res);
	else if (res.cycles == 0 && res.objects == 0 && res.bytes == 0)
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
		} else if (!c->json) {
			printf("The store %s %llu bytes (at most %llu asked).\n",
			       c->dry_run ? "would hold" : "holds",
			       (unsigned long long)res.size_after, (unsigned long long)c->max_size);
		}
	}
	if (admfd >= 0)
		close(admfd);
	close(rootfd);	/* and with it the lock */
	cJSON_Delete(gone);
	return status;
}

/* ---- undo, redo ------------------------------------------------------- */

/* "cycle 3 of restore_backup (restore of cycle 2, sealed 2026-12-02
 * 05:40:01 UTC, 3 paths)": the cycle undo or redo acts on. */
static void describe_undo_cycle(FILE *f, const struct fsb_cycle *cy)
{
	char t[32];

	fprintf(f, "cycle %u of %s (", cy->number, FSB_RESTORE_BACKUP);
	put_safe(f, cy->message);
	if (cy->state == FSB_CYCLE_OPEN)
		fputs(", still open", f);
	else
		fprintf(f, ", sealed %s UTC", short_time(cy->sealed, t, sizeof(t)));
	fprintf(f, ", %zu path%s)", cy->npaths, cy->npaths == 1 ? "" : "s");
}

/*
 * `undo`: restore the newest cycle of restore_backup when it is a restore
 * (or a redo), which puts back what it changed; `redo`: restore it when it
 * is an undo. Never a toggle: each refuses the other's cycle.
 */
static int cmd_undo(const struct cli *c)
{
	FILE *f = c->json ? stderr : stdout;
	char err[PATH_MAX + 256];
	struct fsb_cycle cy;
	int rc;

	rc = fsb_undo_target(c->store, c->redo_cmd, &cy, err, sizeof(err));
	if (rc == -ENOENT) {
		fsb_cli_json_code(c->redo_cmd ? "nothing-to-redo" : "nothing-to-undo");
		fprintf(stderr, "fsbroker backup %s: nothing to %s: session %s has no restore to "
			"undo (a restore keeps what it changes in %s, unless it ran with "
			"--no-undo or --dry-run)\n", restore_word(c), restore_word(c), c->session,
			c->store);
		return 2;
	}
	if (rc == -EALREADY) {
		fsb_cli_json_code(c->redo_cmd ? "nothing-to-redo" : "nothing-to-undo");
		if (c->redo_cmd) {
			fputs("fsbroker backup redo: nothing to redo; the last restore, ", stderr);
			describe_undo_cycle(stderr, &cy);
			fputs(", has not been undone: `fsbroker backup undo` takes it back\n",
			      stderr);
		} else {
			fputs("fsbroker backup undo: nothing to undo; the last restore was undone "
			      "already by ", stderr);
			describe_undo_cycle(stderr, &cy);
			fputs(": `fsbroker backup redo` does the restore again\n", stderr);
		}
		fsb_cycle_free(&cy);
		return 2;
	}
	if (rc < 0) {
		fprintf(stderr, "fsbroker backup %s: %s\n", restore_word(c), err);
		return 1;
	}
	fputs(c->redo_cmd ? "Redoing what " : "Undoing ", f);
	describe_undo_cycle(f, &cy);
	fputs(c->redo_cmd ? " took back" : "", f);
	fputs(c->dry_run ? " (dry run).\n" : ".\n", f);
	rc = restore_cycle(c, &cy);
	fsb_cycle_free(&cy);
	return rc;
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
	{ "list", list_usage, "sSwhajuCP" },
	{ "show", show_usage, "sSwhjluCP" },
	{ "restore", restore_usage, "sSwhjltnfNqD" },
	{ "undo", undo_usage, "sSwhjnfq" },
	{ "redo", redo_usage, "sSwhjnfq" },
	{ "diff", diff_usage, "sSwhjluTOqCP" },
	{ "cat", cat_usage, "sSwhlu" },
	{ "log", log_usage, "sSwhjuCP" },
	{ "prune", prune_usage, "sSwhnukomjq" },
	{ "du", du_usage, "sSwhju" },
};

static const struct verb *find_verb(const char *name)
{
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (is(name, verbs[i].name))
			return &verbs[i];
	return NULL;
}

static int backup_main(int argc, char **argv)
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
		{ "stat", no_argument, NULL, 'T' },
		{ "name-only", no_argument, NULL, 'O' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "to", required_argument, NULL, 'D' },
		{ "color", optional_argument, NULL, 'C' },
		{ "no-pager", no_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct cli c;
	const struct verb *v;
	const char *sub;
	char prog[32];
	int opt, rc, pos, li, pager;

	memset(&c, 0, sizeof(c));
	c.keep = c.older_than = -1;
	c.max_size = FSB_PRUNE_NO_LIMIT;
	if (argc < 2) {
		fprintf(stderr, "fsbroker backup: name a verb (list, show, restore, undo, redo, diff, "
			"cat, log, prune, du); see fsbroker backup --help\n");
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
			"redo, diff, cat, log, prune, du); see fsbroker backup --help\n", sub);
		return 2;
	}
	snprintf(prog, sizeof(prog), "fsbroker backup %s", v->name);
	argc--;
	argv++;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":hq", opts, NULL)) != -1) {
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
		case 'T':
			c.stat = true;
			break;
		case 'O':
			c.name_only = true;
			break;
		case 'q':
			c.quiet = true;
			break;
		case 'D':
			c.to = optarg;
			break;
		case 'C':
			if (fsb_term_parse_color(optarg, &c.color) < 0) {
				fprintf(stderr, "%s: --color is auto, always or never, not '%s'\n",
					prog, optarg);
				return 2;
			}
			break;
		case 'P':
			c.no_pager = true;
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
	if (is(sub, "du")) {
		if (pos != argc) {
			fprintf(stderr, "fsbroker backup du: takes no cycle or path\n");
			return 2;
		}
	} else if (is(sub, "prune")) {
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
	} else if (is(sub, "log")) {
		if (pos != argc - 1) {
			fprintf(stderr, "fsbroker backup log: name one PATH; see fsbroker backup log "
				"--help\n");
			return 2;
		}
		c.paths = argv + pos;
		c.npaths = 1;
	} else if (is(sub, "undo") || is(sub, "redo")) {
		/* Always the newest cycle of restore_backup: every argument is a
		 * PATH. */
		c.undo_cmd = true;
		c.redo_cmd = is(sub, "redo");
		c.paths = argv + pos;
		c.npaths = argc - pos;
	} else {
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
		if (is(sub, "cat") && pos != argc - 1) {
			fprintf(stderr, "fsbroker backup cat: name one PATH after the cycle; see "
				"fsbroker backup cat --help\n");
			return 2;
		}
		if (c.to != NULL && (c.force || c.no_undo)) {
			fprintf(stderr, "fsbroker backup restore: --to changes nothing in place: it "
				"goes without --force and --no-undo\n");
			return 2;
		}
		if (c.stat && c.name_only) {
			fprintf(stderr, "fsbroker backup diff: --stat or --name-only, not both\n");
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
	/* Colour is for a person reading: never inside JSON. Decided before
	 * the pager takes stdout over, from what stdout is. */
	fsb_term_paint(&c.paint, !c.json && fsb_term_use_color(c.color));
	if (c.all) {
		pager = fsb_pager_start(!c.no_pager);
		rc = cmd_list_all(&c);
		fsb_pager_end(pager);
		return rc;
	}
	/* A project nothing ran in yet has no backups: an empty list. */
	rc = locate_store(&c, is(sub, "list"));
	if (rc == NO_SESSION_YET) {
		if (c.json)
			fputs("[]\n", stdout);
		else
			printf("There are no backups of this workspace yet; `fsbroker backup list "
			       "--all` shows every session's.\n");
		return 0;
	}
	if (rc != 0)
		return rc;
	if ((c.undo_store || c.undo_cmd) &&
	    fsb_undo_store_dir(c.state, c.session, c.store, sizeof(c.store)) < 0) {
		fprintf(stderr, "fsbroker backup: the state dir path %s is too long\n", c.state);
		return 2;
	}
	if (is(sub, "list") || is(sub, "show") || is(sub, "diff") || is(sub, "log")) {
		pager = fsb_pager_start(!c.no_pager);
		rc = is(sub, "list") ? cmd_list(&c) : is(sub, "show") ? cmd_show(&c)
		     : is(sub, "diff") ? cmd_diff(&c) : cmd_log(&c);
		fsb_pager_end(pager);
		return rc;
	}
	if (is(sub, "cat"))
		return cmd_cat(&c);
	if (is(sub, "prune"))
		return cmd_prune(&c);
	if (is(sub, "du"))
		return fsb_cli_backup_du(c.store, c.session, c.json);
	return c.undo_cmd ? cmd_undo(&c) : cmd_restore(&c);
}

/* `--json` among the verb's arguments. */
static bool asks_json(int argc, char **argv)
{
	for (int i = 2; i < argc; i++)
		if (is(argv[i], "--json"))
			return true;
	return false;
}

/*
 * With --json, every error is one object on stdout (docs/cli.md, "JSON
 * output"). What the verb says on stderr, wherever it is said (here, in the
 * option parser, in the store's reader), is caught in a memory file while
 * it runs and written to stderr after it; when it failed without printing
 * its JSON, that text becomes the error's message. The catch makes stderr
 * no terminal, so --json shows no progress.
 */
static int with_json_errors(int argc, char **argv)
{
	int saved = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
	int caught = memfd_create("fsbroker-backup-errors", MFD_CLOEXEC), status;
	char *text = NULL;
	struct stat st;

	if (saved < 0 || caught < 0 || dup2(caught, STDERR_FILENO) < 0) {
		if (saved >= 0)
			close(saved);
		if (caught >= 0)
			close(caught);
		return backup_main(argc, argv);
	}
	status = backup_main(argc, argv);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	if (fstat(caught, &st) == 0 && (text = calloc(1, (size_t)st.st_size + 1)) != NULL &&
	    pread(caught, text, (size_t)st.st_size, 0) == st.st_size) {
		size_t len = strlen(text);

		if (write(STDERR_FILENO, text, len) < 0)
			(void)0;	/* stderr gone: the object below still says it */
		while (len > 0 && text[len - 1] == '\n')
			text[--len] = '\0';
	}
	close(caught);
	fflush(stdout);
	if (status != 0 && !fsb_cli_json_printed())
		fsb_cli_json_error(fsb_cli_json_reason(status),
				   text != NULL && text[0] != '\0' ? text : "failed (no message)");
	free(text);
	return status;
}

int fsb_cli_backup(int argc, char **argv)
{
	return asks_json(argc, argv) ? with_json_errors(argc, argv) : backup_main(argc, argv);
}
