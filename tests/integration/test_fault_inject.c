/*
 * test_fault_inject.c — faults injected into the core's own calls with the
 * LD_PRELOAD shim tests/faultinject/fsb_fault.c: an errno from the Nth
 * write/pwrite/copy_file_range/fsync/fdatasync/ftruncate/renameat/linkat/
 * unlinkat..., or SIGKILL right before or right after it.
 *
 * One operation is run per core, with the fault armed once the core is
 * ready, and N is swept over every call the operation makes (the sweep
 * stops at the first N the operation no longer reaches). The stages those
 * calls are (core/store/backup_object.c, core/store/backup.c, core/hostop.c,
 * core/serve_text.c):
 *   object   the backup copy: O_TMPFILE, copy_file_range (or pwrite),
 *            fsync of the copy, linkat of it under objects/<hh>/<sha256>
 *            (renameat when a damaged object is replaced), fsync of
 *            objects/<hh> and objects/
 *   cycle    the first change of a session opens cycles/<n>: mkdirat,
 *            fsync of the cycles directory
 *   journal  one write of the journal line, fdatasync of journal.jsonl
 *   audit    the "planned" (host operation) or access line in
 *            audit/<session>.jsonl, written before the change
 *   change   renameat2 (rename), unlinkat (delete), the grant's ftruncate
 *   after    the host operation's "done" audit line
 * A delete, and a rename over a file, keep that file by linking it into the
 * store instead (linkat under objects/.tmp-*, renamed to objects/<hh>/ once
 * the journal names it); a refusal after that undoes the link.
 * A commit seals the cycle (journal, cycle.json) and then packs its
 * objects (core/store/object_pack.c: the pack, its index, their renames,
 * then the loose copies removed): killed at any of those calls, the
 * restart leaves no temporary in packs/ and the restore still finds the
 * old bytes, loose or packed.
 * Whatever fails or dies where, two things hold: a request refused left its
 * files untouched (their ctime aside, for a link that was undone), and after a restart the store reads (`fsbroker backup
 * list` and `show`, `fsbroker audit verify`, no open cycle, no temporary
 * and no damaged object) and `fsbroker backup restore --last` brings the
 * old bytes back.
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define REPLY 8192
/* More calls than any operation here makes: a sweep that gets this far
 * never stopped, which is a failure. */
#define MAX_CALLS 200

/* ------------------------------------------------------------------------ */
/* The shim. */

/* Paths of the arm and log files of core `c`. */
static void fault_paths(const struct fsbt_core *c, char *arm, char *log, size_t len)
{
	snprintf(arm, len, "%s/fault.arm", c->dir);
	snprintf(log, len, "%s/fault.log", c->dir);
}

/* Start `c` with the shim loaded and `spec` in FSB_FAULT, not armed yet. */
static void start_with_fault(struct fsbt_core *c, const char *spec)
{
	char arm[PATH_MAX + 16], log[PATH_MAX + 16];

	fault_paths(c, arm, log, sizeof(arm));
	unlink(arm);
	unlink(log);
	fsbt_core_start_with_shim(c, spec, arm, log, NULL);
}

static void arm(const struct fsbt_core *c)
{
	char a[PATH_MAX + 16], l[PATH_MAX + 16];

	fault_paths(c, a, l, sizeof(a));
	fsbt_write_file(a, "");
}

static void disarm(const struct fsbt_core *c)
{
	char a[PATH_MAX + 16], l[PATH_MAX + 16];

	fault_paths(c, a, l, sizeof(a));
	unlink(a);
}

/* What the shim did: its log ("" when it never fired; malloc'd). */
static char *fired(const struct fsbt_core *c)
{
	char a[PATH_MAX + 16], l[PATH_MAX + 16], *t;

	fault_paths(c, a, l, sizeof(a));
	t = fsbt_read_file(l, NULL);
	return t != NULL ? t : strdup("");
}

/* ------------------------------------------------------------------------ */
/* The store. */

static void store_dir(const struct fsbt_core *c, char *out, size_t len)
{
	snprintf(out, len, "%s/sessions/%s/modify_backup", c->state, c->session);
}

static int run_cli(char **out, const char *a1, const char *a2, const char *a3,
		   const struct fsbt_core *c)
{
	char *argv[12];
	int n = 0;

	argv[n++] = (char *)fsbt_binary();
	argv[n++] = (char *)a1;
	argv[n++] = (char *)a2;
	if (a3 != NULL)
		argv[n++] = (char *)a3;
	if (strcmp(a1, "backup") == 0) {
		argv[n++] = "--state-dir";
		argv[n++] = (char *)c->state;
		argv[n++] = "--session";
		argv[n++] = (char *)c->session;
	}
	argv[n] = NULL;
	return fsbt_run(argv, out);
}

/* SHA-256 of a file with the CLI's own hashing out of the way: sha256sum. */
/* Does a journal line of the store at `dir` name object `hex` as a kept
 * inode (a file linked in, whose name is not its hash)? */
static bool kept_by_a_line(const char *dir, const char *hex)
{
	char p[PATH_MAX * 2];
	bool found = false;

	for (int n = 1; n < 64 && !found; n++) {
		char *text, *line, *save = NULL;

		snprintf(p, sizeof(p), "%s/cycles/%d/journal.jsonl", dir, n);
		if ((text = fsbt_read_file(p, NULL)) == NULL)
			continue;
		for (line = strtok_r(text, "\n", &save); line != NULL && !found;
		     line = strtok_r(NULL, "\n", &save))
			found = strstr(line, hex) != NULL && strstr(line, "\"kept\":true") != NULL;
		free(text);
	}
	return found;
}

static bool object_whole(const char *dir, const char *path, const char *hex)
{
	char *out = NULL;
	int st = fsbt_run((char *[]){ "/usr/bin/sha256sum", (char *)path, NULL }, &out);
	bool ok = st == 0 && out != NULL && strncmp(out, hex, 64) == 0;

	free(out);
	return ok || kept_by_a_line(dir, hex);
}

/*
 * After a restart: no open cycle, no temporary, every object whole, and the
 * CLI reads the store and the audit log. Returns a problem or NULL.
 */
static const char *store_problem(const struct fsbt_core *c, char *why, size_t len)
{
	char dir[PATH_MAX], p[PATH_MAX * 2], *out = NULL;
	struct dirent *de;
	int st;
	DIR *d;

	store_dir(c, dir, sizeof(dir));
	snprintf(p, sizeof(p), "%s/packs", dir);
	if ((d = opendir(p)) != NULL) {
		while ((de = readdir(d)) != NULL) {
			if (!fsbt_starts(de->d_name, ".tmp-"))
				continue;
			snprintf(why, len, "a temporary packs/%s outlived the restart",
				 de->d_name);
			closedir(d);
			return why;
		}
		closedir(d);
	}
	for (int n = 1; n < 64; n++) {
		struct stat sb;

		snprintf(p, sizeof(p), "%s/cycles/%d", dir, n);
		if (stat(p, &sb) < 0)
			break;
		snprintf(p, sizeof(p), "%s/cycles/%d/cycle.json", dir, n);
		if (stat(p, &sb) < 0) {
			snprintf(why, len, "cycle %d is still open after the restart", n);
			return why;
		}
	}
	snprintf(p, sizeof(p), "%s/objects", dir);
	if ((d = opendir(p)) != NULL) {
		while ((de = readdir(d)) != NULL) {
			char sub[PATH_MAX * 3];
			struct dirent *oe;
			DIR *sd;

			if (de->d_name[0] == '.' && (de->d_name[1] == '\0' ||
						     strcmp(de->d_name, "..") == 0))
				continue;
			if (fsbt_starts(de->d_name, ".tmp-")) {
				snprintf(why, len, "a temporary objects/%s outlived the restart",
					 de->d_name);
				closedir(d);
				return why;
			}
			snprintf(sub, sizeof(sub), "%s/%s", p, de->d_name);
			if ((sd = opendir(sub)) == NULL)
				continue;
			while ((oe = readdir(sd)) != NULL) {
				char obj[PATH_MAX * 4];

				if (oe->d_name[0] == '.')
					continue;
				snprintf(obj, sizeof(obj), "%s/%s", sub, oe->d_name);
				if (strlen(oe->d_name) != 64 ||
				    !object_whole(dir, obj, oe->d_name)) {
					snprintf(why, len, "objects/%s/%s is half written or "
						 "damaged", de->d_name, oe->d_name);
					closedir(sd);
					closedir(d);
					return why;
				}
			}
			closedir(sd);
		}
		closedir(d);
	}
	if ((st = run_cli(&out, "backup", "list", NULL, c)) != 0) {
		snprintf(why, len, "fsbroker backup list: status 0x%x: %.300s", (unsigned)st,
			 out);
		free(out);
		return why;
	}
	free(out);
	out = NULL;
	st = run_cli(&out, "backup", "show", "--last", c);
	/* 2 with "no backup cycles yet": the fault came before the first. */
	if (st != 0 && !(WIFEXITED(st) && WEXITSTATUS(st) == 2 && strstr(out, "no backup") != NULL)) {
		snprintf(why, len, "fsbroker backup show --last: status 0x%x: %.300s",
			 (unsigned)st, out);
		free(out);
		return why;
	}
	free(out);
	out = NULL;
	snprintf(p, sizeof(p), "%s/audit/%s.jsonl", c->state, c->session);
	if ((st = run_cli(&out, "audit", "verify", p, c)) != 0) {
		snprintf(why, len, "fsbroker audit verify: status 0x%x: %.300s", (unsigned)st,
			 out);
		free(out);
		return why;
	}
	free(out);
	return NULL;
}

/* ------------------------------------------------------------------------ */
/* The operations under test. */

/* The answer of the last round: 1 done, 0 refused, -1 none. */
static int last_rc;

/* A file and what it must hold (NULL: must not exist). */
struct expect {
	char path[PATH_MAX + 32];
	const char *old;	/* before the operation */
	const char *done;	/* after it succeeded */
	struct stat st;		/* before: untouched means same mtime and ctime */
};

struct op {
	const char *name;
	bool links;		/* may keep a file by linking it into the store */
	struct expect e[2];
	int ne;
	/* Run on connection fd; 1 answered ok, 0 refused, -1 no answer. The
	 * refusal's errno into errbuf. */
	int (*run)(struct fsbt_core *c, struct op *o, int fd, char *errbuf, size_t len);
	/* Run before the fault is armed, when not NULL: what the operation
	 * under test needs done first. */
	int (*prepare)(struct fsbt_core *c, struct op *o, int fd, char *errbuf, size_t len);
};

static int run_write_grant(struct fsbt_core *c, struct op *o, int fd, char *errbuf,
			   size_t len)
{
	char line[PATH_MAX + 256], reply[REPLY];
	int got = -1;

	fsbt_text_req(line, sizeof(line), FSBT_WRITE, o->e[0].path, c->session,
		      FSBT_OPEN_WRITE);
	if (fsbt_request(fd, line, reply, sizeof(reply), &got) < 0)
		return -1;
	if (strcmp(reply, "FD") != 0 || got < 0) {
		snprintf(errbuf, len, "%s", reply);
		if (got >= 0)
			close(got);
		return 0;
	}
	/* The client writes through the fd it was granted, core alive or not. */
	if (write(got, o->e[0].done, strlen(o->e[0].done)) != (ssize_t)strlen(o->e[0].done))
		fail_msg("write through the granted fd: %s", strerror(errno));
	close(got);
	return 1;
}

/* The seal of the cycle the write grant opened, and the packing of its
 * objects after it (core/store/object_pack.c). */
static int run_commit(struct fsbt_core *c, struct op *o, int fd, char *errbuf, size_t len)
{
	char line[128];
	cJSON *r;
	int rc;

	(void)o;
	(void)fd;
	snprintf(line, sizeof(line), "{\"id\":%ld,\"command\":\"CommitModifyBackup\","
		 "\"commitMsg\":\"turn\"}", c->next_id++);
	if ((r = fsbt_control(c, line)) == NULL)
		return -1;
	rc = fsbt_ok(r) ? 1 : 0;
	if (rc == 0)
		snprintf(errbuf, len, "%s", fsbt_str(r, "error"));
	cJSON_Delete(r);
	return rc;
}

static int hostop_result(cJSON *r, char *errbuf, size_t len)
{
	int rc;

	if (r == NULL)
		return -1;
	rc = fsbt_ok(r) ? 1 : 0;
	if (rc == 0)
		snprintf(errbuf, len, "%s %s", fsbt_str(r, "errno"), fsbt_str(r, "error"));
	cJSON_Delete(r);
	return rc;
}

static int run_rename(struct fsbt_core *c, struct op *o, int fd, char *errbuf, size_t len)
{
	return hostop_result(fsbt_hostopf(fd, "{\"id\":1,\"command\":\"HostFileOperation\","
					  "\"sessionId\":\"%s\",\"toolCallId\":\"%s\","
					  "\"operation\":\"rename\",\"from\":\"%s\",\"to\":\"%s\"}",
					  c->session, FSBT_TOOL_CALL, o->e[0].path, o->e[1].path),
			     errbuf, len);
}

static int run_delete(struct fsbt_core *c, struct op *o, int fd, char *errbuf, size_t len)
{
	return hostop_result(fsbt_hostopf(fd, "{\"id\":1,\"command\":\"HostFileOperation\","
					  "\"sessionId\":\"%s\",\"toolCallId\":\"%s\","
					  "\"operation\":\"delete\",\"path\":\"%s\","
					  "\"deleteMode\":\"unlink\"}",
					  c->session, FSBT_TOOL_CALL, o->e[0].path),
			     errbuf, len);
}

static int run_symlink(struct fsbt_core *c, struct op *o, int fd, char *errbuf, size_t len)
{
	return hostop_result(fsbt_hostopf(fd, "{\"id\":1,\"command\":\"HostFileOperation\","
					  "\"sessionId\":\"%s\",\"toolCallId\":\"%s\","
					  "\"operation\":\"link\",\"symbolic\":true,"
					  "\"from\":\"target.txt\",\"to\":\"%s\"}",
					  c->session, FSBT_TOOL_CALL, o->e[0].path),
			     errbuf, len);
}

static void make_op(struct fsbt_core *c, const char *name, struct op *o)
{
	memset(o, 0, sizeof(*o));
	o->name = name;
	if (strcmp(name, "commit") == 0) {
		o->ne = 1;
		snprintf(o->e[0].path, sizeof(o->e[0].path), "%s/committed.txt", c->ws);
		o->e[0].old = "the old bytes of committed.txt, packed after the seal\n";
		o->e[0].done = "new\n";
		o->prepare = run_write_grant;
		o->run = run_commit;
	} else if (strcmp(name, "write grant") == 0) {
		o->ne = 1;
		snprintf(o->e[0].path, sizeof(o->e[0].path), "%s/granted.txt", c->ws);
		o->e[0].old = "the old bytes of granted.txt\n";
		o->e[0].done = "new\n";
		o->run = run_write_grant;
	} else if (strcmp(name, "rename") == 0) {
		o->links = true;	/* the target it replaces */
		o->ne = 2;
		snprintf(o->e[0].path, sizeof(o->e[0].path), "%s/from.txt", c->ws);
		snprintf(o->e[1].path, sizeof(o->e[1].path), "%s/to.txt", c->ws);
		o->e[0].old = "the old bytes of from.txt\n";
		o->e[0].done = NULL;
		o->e[1].old = "the old bytes of to.txt, replaced by the rename\n";
		o->e[1].done = o->e[0].old;
		o->run = run_rename;
	} else if (strcmp(name, "symlink") == 0) {
		/* Made first and journaled after: a refusal takes it away. */
		o->ne = 2;
		snprintf(o->e[0].path, sizeof(o->e[0].path), "%s/link", c->ws);
		snprintf(o->e[1].path, sizeof(o->e[1].path), "%s/target.txt", c->ws);
		o->e[0].old = NULL;
		o->e[1].old = o->e[1].done = "the bytes the symlink leads to\n";
		o->e[0].done = o->e[1].old;
		o->run = run_symlink;
	} else {
		o->links = true;
		o->ne = 1;
		snprintf(o->e[0].path, sizeof(o->e[0].path), "%s/deleted.txt", c->ws);
		o->e[0].old = "the old bytes of deleted.txt\n";
		o->e[0].done = NULL;
		o->run = run_delete;
	}
	for (int i = 0; i < o->ne; i++) {
		if (o->e[i].old == NULL)
			continue;	/* absent before the operation */
		fsbt_write_file(o->e[i].path, o->e[i].old);
		assert_int_equal(lstat(o->e[i].path, &o->e[i].st), 0);
	}
}

/* Whether every file holds `want` (old or done); a difference into why. */
static bool files_are(const struct op *o, bool done, bool times, char *why, size_t len)
{
	for (int i = 0; i < o->ne; i++) {
		const char *want = done ? o->e[i].done : o->e[i].old;
		char *have = fsbt_read_file(o->e[i].path, NULL);
		struct stat st;
		bool same = (want == NULL && have == NULL) ||
			    (want != NULL && have != NULL && strcmp(want, have) == 0);

		free(have);
		if (!same) {
			snprintf(why, len, "%s: %s", o->e[i].path,
				 want == NULL ? "still there" : "does not hold the expected bytes");
			return false;
		}
		/* A delete or a rename over a file keeps its inode by linking
		 * it into the store first; refused after that, the link is
		 * undone (one link again), but link(2) has moved its ctime. */
		if (times && want != NULL && lstat(o->e[i].path, &st) == 0 &&
		    (st.st_mtim.tv_sec != o->e[i].st.st_mtim.tv_sec ||
		     st.st_mtim.tv_nsec != o->e[i].st.st_mtim.tv_nsec ||
		     (!o->links && (st.st_ctim.tv_sec != o->e[i].st.st_ctim.tv_sec ||
				    st.st_ctim.tv_nsec != o->e[i].st.st_ctim.tv_nsec)) ||
		     st.st_nlink != o->e[i].st.st_nlink || st.st_ino != o->e[i].st.st_ino)) {
			snprintf(why, len, "%s: same bytes but touched (mtime, ctime, link count or "
				 "inode)",
				 o->e[i].path);
			return false;
		}
	}
	return true;
}

/* `fsbroker backup restore --last --force`, then the old bytes must be
 * back; "no backup cycles yet" is fine only when they never left. */
static void restore_brings_old_bytes_back(struct fsbt_core *c, struct op *o, const char *at)
{
	char *out = NULL, why[PATH_MAX + 128];
	int st = fsbt_run((char *[]){ (char *)fsbt_binary(), "backup", "restore", "--last",
				      "--force", "--state-dir", c->state, "--session", c->session,
				      NULL }, &out);

	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) > 2 ||
	    (WEXITSTATUS(st) == 2 && strstr(out, "no backup cycles yet") == NULL) ||
	    strstr(out, "corrupt") != NULL)
		fail_msg("%s, %s: backup restore --last --force: status 0x%x:\n%s", o->name, at,
			 (unsigned)st, out);
	free(out);
	if (!files_are(o, false, false, why, sizeof(why)))
		fail_msg("%s, %s: after the restore %s", o->name, at, why);
}

/*
 * One round: a fresh core with `spec`, the operation run once armed. Returns
 * false when the shim never fired (the sweep is past the last call).
 */
static bool one_round(const char *opname, const char *spec, bool kill_expected)
{
	struct fsbt_core *c = fsbt_core_new();
	char errbuf[512], why[PATH_MAX + 512], *log;
	const char *problem;
	struct op o;
	int fd, rc;
	bool hit;

	start_with_fault(c, spec);
	make_op(c, opname, &o);
	fd = fsbt_connect(c);
	assert_true(fd >= 0);
	if (o.prepare != NULL && o.prepare(c, &o, fd, errbuf, sizeof(errbuf)) != 1)
		fail_msg("%s: its preparation failed: %s", opname, errbuf);
	arm(c);
	errbuf[0] = '\0';
	rc = o.run(c, &o, fd, errbuf, sizeof(errbuf));
	last_rc = rc;
	disarm(c);
	log = fired(c);
	hit = log[0] != '\0';
	if (kill_expected && hit) {
		assert_int_equal(fsbt_core_wait_exit(c, FSBT_TIMEOUT_MS), 0);
		assert_true(WIFSIGNALED(c->exit_status) && WTERMSIG(c->exit_status) == SIGKILL);
		close(c->ctl_in);
		close(c->ctl_out);
		c->ctl_in = c->ctl_out = -1;
	}
	fsbt_close(fd);
	printf("#   %-11s %-26s -> %s%s%s\n", opname, spec,
	       rc == 1 ? "done" : rc == 0 ? "refused: " : "no answer", rc == 0 ? errbuf : "",
	       hit ? "" : " (not reached)");
	for (char *l = log, *nl; *l != '\0'; l = nl + 1) {
		if ((nl = strchr(l, '\n')) == NULL)
			nl = l + strlen(l) - 1;
		printf("#       at %.*s\n", (int)(nl - l), l);
	}
	fflush(stdout);

	/* A refusal leaves every file as it was, to its times and inode. */
	if (rc == 0 && !files_are(&o, false, true, why, sizeof(why)))
		fail_msg("%s under %s was refused (%s) but %s", opname, spec, errbuf, why);
	if (rc == 1 && !files_are(&o, true, false, why, sizeof(why)))
		fail_msg("%s under %s was answered ok but %s", opname, spec, why);
	if (!hit && rc != 1)
		fail_msg("%s under %s: nothing was injected, yet: %s", opname, spec, errbuf);
	if (!kill_expected && hit && rc == -1)
		fail_msg("%s under %s: no answer to a failed call (the core died?)", opname,
			 spec);

	/* The restart: recovery, then the store and the restore. */
	if (c->pid > 0) {
		cJSON *r = fsbt_control_cmd(c, "Shutdown", NULL);

		cJSON_Delete(r);
		assert_int_equal(fsbt_core_wait_exit(c, FSBT_TIMEOUT_MS), 0);
		close(c->ctl_in);
		close(c->ctl_out);
		c->ctl_in = c->ctl_out = -1;
	}
	fsbt_core_start(c);
	if ((problem = store_problem(c, why, sizeof(why))) != NULL)
		fail_msg("%s under %s, after the restart: %s", opname, spec, problem);
	/* A file kept by link whose change a kill cut short has one link
	 * again after the restart, not a second one in the store. */
	for (int i = 0; i < o.ne; i++) {
		struct stat st;

		if (lstat(o.e[i].path, &st) == 0 && st.st_nlink != 1)
			fail_msg("%s under %s, after the restart: %s has %lu links", opname, spec,
				 o.e[i].path, (unsigned long)st.st_nlink);
	}
	restore_brings_old_bytes_back(c, &o, spec);
	free(log);
	fsbt_core_stop(c);
	return hit;
}

/* Sweep N = 1.. for `call`:`action`:N[:match] until the shim is not hit. */
static void sweep(const char *opname, const char *call, const char *action, const char *match)
{
	bool kill = strncmp(action, "KILL", 4) == 0;
	int n;

	for (n = 1; n <= MAX_CALLS; n++) {
		char spec[256];

		snprintf(spec, sizeof(spec), "%s:%s:%d%s%s", call, action, n, match ? ":" : "",
			 match ? match : "");
		if (!one_round(opname, spec, kill))
			break;
	}
	if (n == 1)
		fail_msg("%s: the shim never fired on %s (not loaded?)", opname, call);
	if (n > MAX_CALLS)
		fail_msg("%s: more than %d %s calls", opname, MAX_CALLS, call);
	printf("# %s: %d %s calls, each one %s\n", opname, n - 1, call,
	       kill ? "killed at" : "failed");
}

static int setup_group(void **state)
{
	(void)state;
	if (fsbt_fault_shim() == NULL) {
		fprintf(stderr, "# the fault shim is missing next to the test (make builds "
			"build/tests/faultinject/fsb_fault.so)\n");
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Tests. */

/* EIO from each call of a write grant of an existing file (its backup):
 * the grant is refused and the file is untouched. */
static void eio_at_each_call_of_a_write_grant_refuses_it_untouched(void **state)
{
	(void)state;
	sweep("write grant", "any", "EIO", NULL);
}

/* The same for a rename over an existing file and a delete. */
static void eio_at_each_call_of_a_rename_refuses_it_untouched(void **state)
{
	(void)state;
	sweep("rename", "any", "EIO", NULL);
}

/* A symlink is made before its line: every failure after it takes it
 * away again (hostop_meta.c, make_symlink). */
static void eio_at_each_call_of_a_symlink_leaves_no_symlink(void **state)
{
	(void)state;
	sweep("symlink", "any", "EIO", NULL);
}

static void eio_at_each_call_of_a_delete_refuses_it_untouched(void **state)
{
	(void)state;
	sweep("delete", "any", "EIO", NULL);
}

/* Each named call failing on every use, one call at a time. */
static void eio_from_write_fdatasync_fsync_renameat_linkat_refuses_the_change(void **state)
{
	static const char *const calls[] = { "write", "fdatasync", "fsync", "linkat",
					     "copy_file_range", "renameat2", "unlinkat",
					     "ftruncate" };

	(void)state;
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		char spec[64];

		snprintf(spec, sizeof(spec), "%s:EIO:1+", calls[i]);
		one_round("write grant", spec, false);
		one_round("rename", spec, false);
		one_round("delete", spec, false);
	}
}

/* The audit log cannot be written (EIO, then a full disk): nothing is
 * granted or changed, and once it can, the log still verifies. */
static void audit_log_write_failure_refuses_every_change(void **state)
{
	static const char *const specs[] = { "write:EIO:1+:/audit/", "write:ENOSPC:1+:/audit/",
					     "write:EIO:1:/audit/", "write:ENOSPC:1:/audit/" };

	(void)state;
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		static const char *const ops[] = { "write grant", "rename", "delete" };

		/* one_round checks refused-means-untouched and audit verify. */
		for (size_t j = 0; j < 3; j++) {
			assert_true(one_round(ops[j], specs[i], false));
			if (last_rc != 0)
				fail_msg("%s under %s: not refused", ops[j], specs[i]);
		}
	}
}

/* SIGKILL before, and right after, each call of each operation. */
static void sigkill_at_each_stage_of_a_write_grant_and_its_backup(void **state)
{
	(void)state;
	sweep("write grant", "any", "KILL", NULL);
	sweep("write grant", "any", "KILLAFTER", NULL);
}

static void sigkill_at_each_stage_of_a_rename(void **state)
{
	(void)state;
	sweep("rename", "any", "KILL", NULL);
	sweep("rename", "any", "KILLAFTER", NULL);
}

/* The seal and the packing after it: a kill at any call, and the old
 * bytes still come back (loose, packed, or both). */
static void sigkill_at_each_stage_of_a_commit_and_its_packing(void **state)
{
	(void)state;
	sweep("commit", "any", "KILL", NULL);
	sweep("commit", "any", "KILLAFTER", NULL);
}

static void sigkill_at_each_stage_of_a_delete(void **state)
{
	(void)state;
	sweep("delete", "any", "KILL", NULL);
	sweep("delete", "any", "KILLAFTER", NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(eio_at_each_call_of_a_write_grant_refuses_it_untouched),
		cmocka_unit_test(eio_at_each_call_of_a_rename_refuses_it_untouched),
		cmocka_unit_test(eio_at_each_call_of_a_symlink_leaves_no_symlink),
		cmocka_unit_test(eio_at_each_call_of_a_delete_refuses_it_untouched),
		cmocka_unit_test(eio_from_write_fdatasync_fsync_renameat_linkat_refuses_the_change),
		cmocka_unit_test(audit_log_write_failure_refuses_every_change),
		cmocka_unit_test(sigkill_at_each_stage_of_a_write_grant_and_its_backup),
		cmocka_unit_test(sigkill_at_each_stage_of_a_rename),
		cmocka_unit_test(sigkill_at_each_stage_of_a_delete),
		cmocka_unit_test(sigkill_at_each_stage_of_a_commit_and_its_packing),
	};

	return fsbt_run_group(tests, setup_group, NULL);
}
