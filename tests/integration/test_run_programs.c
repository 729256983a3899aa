/*
 * test_run_programs.c — real programs under `fsbroker run`, one group a
 * test: coreutils, bash and zsh redirections, python3, a static busybox
 * (the old rename/unlink/rmdir/open calls), git and tar. For each group
 * the same four promises are checked:
 *
 *   1. every file that existed before and that the program changed is in
 *      the run's cycle (`fsbroker backup show --last --json`);
 *   2. `fsbroker backup restore --last` gives back a tree identical to the
 *      one before (paths, types, modes, contents, symlink targets, mtimes);
 *   3. a denyModify file stays untouched and the program saw EACCES
 *      ("Permission denied", or python's PermissionError) for each try;
 *   4. a denyRead file cannot be read: its content reaches neither the
 *      program's output nor any file in the workspace.
 *
 * The programs are driven by short scripts passed on the command line (the
 * sandbox's /tmp is private, so nothing is written there for them). Each
 * step of a script prints "@@ <step> rc=<status>" after its own output, and
 * the last line is "@@ end rc=0", so that a failure names the step.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* A run's safety net only: no test asserts how long anything takes. */
#define RUN_TIMEOUT_MS (300 * 1000)

#define SECRET "TOP-SECRET-7f3a9c"
#define LOCKED "locked content\n"

struct fixture {
	char root[PATH_MAX];
	char home[PATH_MAX + 8], ws[PATH_MAX + 8], tmp[PATH_MAX + 8], state[PATH_MAX + 8];
	char pack[PATH_MAX + 16];
};

/* ------------------------------------------------------------------------ */
/* The fixture: a workspace with files of each kind, a pack protecting two
 * of them. */

static void put_mode(const char *dir, const char *name, const char *text, mode_t mode)
{
	char path[PATH_MAX * 2];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fsbt_write_file(path, text);
	assert_int_equal(chmod(path, mode), 0);
}

static void make_dir(const char *dir, const char *name)
{
	char path[PATH_MAX * 2];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(mkdir(path, 0755), 0);
}

static void make_symlink(const char *dir, const char *name, const char *target)
{
	char path[PATH_MAX * 2];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(symlink(target, path), 0);
}

/*
 * The workspace every group starts from: plain files a.txt … j.txt (i.txt
 * 0640), a tree to remove, a symlink, locked.txt and locked.d/ (denyModify)
 * and secret.txt (denyRead). The pack includes the default one.
 */
static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	static const char *const plain[] = { "a.txt", "b.txt", "c.txt", "d.txt", "e.txt",
					     "f.txt", "g.txt", "h.txt", "j.txt" };
	char rules[PATH_MAX + 16];

	assert_non_null(f);
	/* Not under /tmp (private in the sandbox), and HOME not inside TMPDIR
	 * (the default pack refuses that). */
	snprintf(f->root, sizeof(f->root), "/var/tmp/fsbt-progs-XXXXXX");
	assert_non_null(mkdtemp(f->root));
	assert_int_equal(chmod(f->root, 0755), 0);
	snprintf(f->home, sizeof(f->home), "%s/home", f->root);
	snprintf(f->ws, sizeof(f->ws), "%s/ws", f->root);
	snprintf(f->tmp, sizeof(f->tmp), "%s/tmp", f->root);
	snprintf(f->state, sizeof(f->state), "%s/state", f->root);
	snprintf(rules, sizeof(rules), "%s/rules", f->root);
	snprintf(f->pack, sizeof(f->pack), "%s/rules/progs.lua", f->root);
	assert_int_equal(mkdir(f->home, 0755), 0);
	assert_int_equal(mkdir(f->ws, 0755), 0);
	assert_int_equal(mkdir(f->tmp, 0700), 0);
	assert_int_equal(mkdir(rules, 0755), 0);
	fsbt_write_file(f->pack,
			"return { name = \"progs\", include = { \"default\" },\n"
			"  denyModify = { \"${workspace}/locked.txt\", \"${workspace}/locked.d/**\" },\n"
			"  denyRead = { \"${workspace}/secret.txt\" } }\n");
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
		char text[64];

		snprintf(text, sizeof(text), "%s before\n", plain[i]);
		fsbt_put(f->ws, plain[i], text);
	}
	put_mode(f->ws, "i.txt", "i.txt before\n", 0640);
	make_dir(f->ws, "tree");
	make_dir(f->ws, "tree/sub");
	fsbt_put(f->ws, "tree/one", "one\n");
	fsbt_put(f->ws, "tree/sub/two", "two\n");
	make_symlink(f->ws, "tree/sub/to-one", "../one");
	make_symlink(f->ws, "link", "a.txt");
	fsbt_put(f->ws, "locked.txt", LOCKED);
	make_dir(f->ws, "locked.d");
	fsbt_put(f->ws, "locked.d/inside", LOCKED);
	fsbt_put(f->ws, "secret.txt", SECRET "\n");
	setenv("HOME", f->home, 1);
	setenv("TMPDIR", f->tmp, 1);
	unsetenv("XDG_RUNTIME_DIR");
	unsetenv("XDG_STATE_HOME");
	unsetenv("XDG_CONFIG_HOME");
	unsetenv("XDG_DATA_HOME");
	unsetenv("XDG_CACHE_HOME");
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->root);
	if (getenv("FSBT_KEEP") == NULL && system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", f->root);
	free(f);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Running: stdout and stderr apart (the scripts merge their own stderr into
 * stdout; fsbroker run's summary stays on stderr). */

static void drain(int fd, char **buf, size_t *len, size_t *cap, bool *open_)
{
	char chunk[4096];
	ssize_t n = read(fd, chunk, sizeof(chunk));

	if (n < 0 && errno == EINTR)
		return;
	if (n <= 0) {
		*open_ = false;
		return;
	}
	if (*len + (size_t)n + 1 > *cap) {
		size_t ncap = (*len + (size_t)n + 1) * 2;
		char *b = realloc(*buf, ncap);

		if (b == NULL) {
			*open_ = false;
			return;
		}
		*buf = b;
		*cap = ncap;
	}
	memcpy(*buf + *len, chunk, (size_t)n);
	*len += (size_t)n;
	(*buf)[*len] = '\0';
}

/*
 * Run argv (argv[0] a path) with stdin from /dev/null, its stdout into *out
 * and its stderr into *err (both malloc'd, never NULL). The wait status, or
 * -1 when it could not run or outlived RUN_TIMEOUT_MS (killed by pid).
 */
static int run_split(char *const argv[], char **out, char **err)
{
	uint64_t deadline = fsbt_now_ms() + RUN_TIMEOUT_MS;
	int po[2], pe[2], status = -1;
	size_t olen = 0, ocap = 1, elen = 0, ecap = 1;
	bool oopen = true, eopen = true, killed = false;
	pid_t pid;

	*out = calloc(1, 1);
	*err = calloc(1, 1);
	assert_non_null(*out);
	assert_non_null(*err);
	if (pipe2(po, O_CLOEXEC) < 0)
		return -1;
	if (pipe2(pe, O_CLOEXEC) < 0) {
		close(po[0]);
		close(po[1]);
		return -1;
	}
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGPIPE, SIG_DFL);
		if (null < 0 || dup2(null, 0) < 0 || dup2(po[1], 1) < 0 || dup2(pe[1], 2) < 0)
			_exit(127);
		execv(argv[0], argv);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	while (pid > 0 && (oopen || eopen)) {
		struct pollfd p[2] = { { .fd = oopen ? po[0] : -1, .events = POLLIN },
				       { .fd = eopen ? pe[0] : -1, .events = POLLIN } };
		uint64_t now = fsbt_now_ms();

		if (now >= deadline) {
			kill(pid, SIGKILL);
			killed = true;
			break;
		}
		if (poll(p, 2, (int)(deadline - now)) <= 0)
			continue;
		if (p[0].revents)
			drain(po[0], out, &olen, &ocap, &oopen);
		if (p[1].revents)
			drain(pe[0], err, &elen, &ecap, &eopen);
	}
	close(po[0]);
	close(pe[0]);
	if (pid < 0)
		return -1;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return killed ? -1 : status;
}

/* fsbroker run --rules PACK --workspace WS --state-dir ST --session s -- ARGV... */
static int fsb_run(struct fixture *f, const char *const *cmd, const char *script, char **out,
		   char **err)
{
	char *argv[32];
	int n = 0, st;

	argv[n++] = (char *)fsbt_binary();
	argv[n++] = "run";
	argv[n++] = "--rules";
	argv[n++] = f->pack;
	argv[n++] = "--workspace";
	argv[n++] = f->ws;
	argv[n++] = "--state-dir";
	argv[n++] = f->state;
	argv[n++] = "--session";
	argv[n++] = "s";
	argv[n++] = "--";
	for (size_t i = 0; cmd[i] != NULL && n < 30; i++)
		argv[n++] = (char *)cmd[i];
	argv[n++] = (char *)script;
	argv[n] = NULL;
	st = run_split(argv, out, err);
	/* A sanitizer build of the core reports on stderr. */
	if (strstr(*err, "Sanitizer") != NULL || strstr(*err, "runtime error:") != NULL)
		fsbt_fail_long("the core reported a memory error:\n%s", *err);
	return st;
}

/* fsbroker backup ARGS... --state-dir ST --session s: wait status, stdout. */
static int fsb_backup(struct fixture *f, const char *verb, const char *arg2, char **out,
		      char **err)
{
	char *argv[] = { (char *)fsbt_binary(), "backup", (char *)verb, "--last", "--state-dir",
			 f->state, "--session", "s", (char *)arg2, NULL };

	return run_split(argv, out, err);
}

/* ------------------------------------------------------------------------ */
/* The steps of a script's output. */

struct step {
	char name[64];
	int rc;
	char *text;		/* what the step printed before its marker */
};

/* Split `out` at its "@@ <name> rc=<n>" lines; the number of steps. */
static size_t parse_steps(const char *out, struct step *steps, size_t max)
{
	const char *seg = out, *p = out;
	size_t n = 0;

	while (*p != '\0' && n < max) {
		const char *eol = strchr(p, '\n');
		size_t linelen = eol ? (size_t)(eol - p) : strlen(p);
		char name[64];
		int rc;

		if (strncmp(p, "@@ ", 3) == 0 && sscanf(p + 3, "%63s rc=%d", name, &rc) == 2) {
			snprintf(steps[n].name, sizeof(steps[n].name), "%s", name);
			steps[n].rc = rc;
			steps[n].text = strndup(seg, (size_t)(p - seg));
			assert_non_null(steps[n].text);
			n++;
			seg = p + linelen + (eol ? 1 : 0);
		}
		p += linelen + (eol ? 1 : 0);
	}
	return n;
}

static void free_steps(struct step *steps, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(steps[i].text);
}

static bool saw_eacces(const char *text)
{
	return strcasestr(text, "permission denied") != NULL ||
	       strstr(text, "PermissionError") != NULL;
}

/* ------------------------------------------------------------------------ */
/* The tree: what changed, and whether a secret leaked into it. */

static const struct fsbt_entry *find_entry(const struct fsbt_tree *t, const char *path)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int c = strcmp(t->e[mid].path, path);

		if (c == 0)
			return &t->e[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* A path that existed before and is gone or different now (a directory only
 * when its type or mode changed: its mtime moves with what is inside). */
static bool changed(const struct fsbt_entry *a, const struct fsbt_entry *b)
{
	if (b == NULL || a->mode != b->mode)
		return true;
	if (S_ISDIR(a->mode))
		return false;
	return a->size != b->size || strcmp(a->sha, b->sha) != 0 ||
	       a->mtime.tv_sec != b->mtime.tv_sec || a->mtime.tv_nsec != b->mtime.tv_nsec ||
	       (a->target != NULL) != (b->target != NULL) ||
	       (a->target != NULL && strcmp(a->target, b->target) != 0);
}

/* True when `path` is one of the cycle's paths. */
static bool in_cycle(const cJSON *cycle, const char *path)
{
	const cJSON *p;

	cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(cycle, "paths")) {
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(p, "path");

		if (cJSON_IsString(name) && strcmp(name->valuestring, path) == 0)
			return true;
	}
	return false;
}

/* The first file under `root` (but `except`) holding `needle`, or NULL. */
static char *file_holding(const char *root, const char *needle, const char *except)
{
	struct fsbt_tree t;
	char *found = NULL;

	assert_int_equal(fsbt_tree_snap(root, &t), 0);
	for (size_t i = 0; i < t.n && found == NULL; i++) {
		char path[PATH_MAX * 2];
		char *text;
		size_t len;

		if (!S_ISREG(t.e[i].mode) || strcmp(t.e[i].path, except) == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", root, t.e[i].path);
		text = fsbt_read_file(path, &len);
		if (text != NULL && memmem(text, len, needle, strlen(needle)) != NULL)
			found = strdup(t.e[i].path);
		free(text);
	}
	fsbt_tree_free(&t);
	return found;
}

/* ------------------------------------------------------------------------ */
/* One program group, the four promises. */

/* What a path holds after the changes: a file's content, "<dir>", "<gone>",
 * "-> target" for a symlink, "mode NNN", or "<3 zero bytes>" at its start. */
struct expect {
	const char *path, *holds;
};

struct program_group {
	const char *const *argv;	/* the interpreter and its flag; the script follows */
	const char *changes;		/* every step must succeed */
	const struct expect *after;	/* what the changes left, ends with { NULL } */
	const char *denied;		/* every step must fail with EACCES */
	const char *reads;		/* tries to show secret.txt */
};

/* What went wrong, kept so that one test reports every broken promise of
 * its group rather than the first. */
struct report {
	char text[32768];
	size_t len;
};

static void note(struct report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void note(struct report *r, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (r->len + 2 >= sizeof(r->text))
		return;
	va_start(ap, fmt);
	n = vsnprintf(r->text + r->len, sizeof(r->text) - r->len - 1, fmt, ap);
	va_end(ap);
	if (n > 0)
		r->len = r->len + (size_t)n < sizeof(r->text) - 2 ? r->len + (size_t)n
								  : sizeof(r->text) - 2;
	r->text[r->len++] = '\n';
	r->text[r->len] = '\0';
}

static void check_expect(struct fixture *f, const struct expect *e, struct report *r)
{
	for (; e != NULL && e->path != NULL; e++) {
		char path[PATH_MAX * 2], target[PATH_MAX];
		struct stat st;
		int rc;

		snprintf(path, sizeof(path), "%s/%s", f->ws, e->path);
		rc = lstat(path, &st);
		if (strcmp(e->holds, "<gone>") == 0) {
			if (rc == 0)
				note(r, "%s should be gone after the changes", e->path);
		} else if (strcmp(e->holds, "<dir>") == 0) {
			if (rc != 0 || !S_ISDIR(st.st_mode))
				note(r, "%s should be a directory after the changes", e->path);
		} else if (strncmp(e->holds, "-> ", 3) == 0) {
			ssize_t n = readlink(path, target, sizeof(target) - 1);

			if (n < 0) {
				note(r, "%s should be a symlink after the changes", e->path);
				continue;
			}
			target[n] = '\0';
			if (strcmp(target, e->holds + 3) != 0)
				note(r, "%s points at '%s', not '%s'", e->path, target, e->holds + 3);
		} else if (strcmp(e->holds, "<3 zero bytes>") == 0) {
			size_t len = 0;
			char *text = fsbt_read_file(path, &len);

			if (text == NULL || len < 3 || memcmp(text, "\0\0\0", 3) != 0)
				note(r, "%s does not start with 3 zero bytes", e->path);
			free(text);
		} else if (strncmp(e->holds, "mode ", 5) == 0) {
			if (rc != 0 || (st.st_mode & 07777) != strtoul(e->holds + 5, NULL, 8))
				note(r, "%s has mode %o, not %s", e->path,
					 rc == 0 ? st.st_mode & 07777 : 0, e->holds + 5);
		} else {
			char *text = fsbt_read_file(path, NULL);

			if (text == NULL || strcmp(text, e->holds) != 0)
				note(r, "%s holds '%s', not '%s'", e->path, text ? text : "(nothing)",
					 e->holds);
			free(text);
		}
	}
}

/* Promise 3: each step of `denied` fails with EACCES, and neither
 * locked.txt nor locked.d changes in any way (ctime included). */
static void prove_denied(struct fixture *f, const struct program_group *g, struct report *r)
{
	struct fsbt_tree lock_before, dir_before, lock_after, dir_after;
	char path[PATH_MAX * 2], dirpath[PATH_MAX * 2], diff[2048], bad[4096] = "";
	struct step steps[64];
	char *out, *err;
	size_t n;
	unsigned what = FSBT_TREE_MTIME | FSBT_TREE_DIR_MTIME | FSBT_TREE_CTIME | FSBT_TREE_NLINK;

	snprintf(path, sizeof(path), "%s/locked.txt", f->ws);
	snprintf(dirpath, sizeof(dirpath), "%s/locked.d", f->ws);
	assert_int_equal(fsbt_tree_snap(path, &lock_before), 0);
	assert_int_equal(fsbt_tree_snap(dirpath, &dir_before), 0);
	fsb_run(f, g->argv, g->denied, &out, &err);
	n = parse_steps(out, steps, 64);
	if (n == 0 || strcmp(steps[n - 1].name, "end") != 0)
		note(r, "the denied script did not finish:\n%s\n%s", out, err);
	for (size_t i = 0; i + 1 < n; i++) {
		/* The status is the program's business (git checkout reports
		 * the error and exits 0); what it saw is not. */
		if (saw_eacces(steps[i].text))
			continue;
		snprintf(bad + strlen(bad), sizeof(bad) - strlen(bad),
			 "  step %s: rc=%d, no EACCES in its output\n", steps[i].name,
			 steps[i].rc);
	}
	assert_int_equal(fsbt_tree_snap(path, &lock_after), 0);
	assert_int_equal(fsbt_tree_snap(dirpath, &dir_after), 0);
	if (fsbt_tree_diff(&lock_before, &lock_after, what, diff, sizeof(diff)) != 0)
		note(r, "locked.txt changed:\n%s\noutput:\n%s", diff, out);
	if (fsbt_tree_diff(&dir_before, &dir_after, what, diff, sizeof(diff)) != 0)
		note(r, "locked.d changed:\n%s\noutput:\n%s", diff, out);
	if (bad[0] != '\0')
		note(r, "changes to denyModify files were not refused with EACCES:\n%s"
			 "output:\n%s\nfsbroker run:\n%s", bad, out, err);
	free_steps(steps, n);
	fsbt_tree_free(&lock_before);
	fsbt_tree_free(&lock_after);
	fsbt_tree_free(&dir_before);
	fsbt_tree_free(&dir_after);
	free(out);
	free(err);
}

/* Promise 4: the secret shows in no output and in no workspace file. */
static void prove_unreadable(struct fixture *f, const struct program_group *g, struct report *r)
{
	char *out, *err, *where;

	fsb_run(f, g->argv, g->reads, &out, &err);
	if (strstr(out, "@@ end rc=0") == NULL)
		note(r, "the read script did not finish:\n%s\n%s", out, err);
	if (strstr(out, SECRET) != NULL || strstr(err, SECRET) != NULL)
		note(r, "the denyRead file was read:\n%s", out);
	where = file_holding(f->ws, SECRET, "secret.txt");
	if (where != NULL)
		note(r, "the denyRead file's content was copied into %s", where);
	free(where);
	free(out);
	free(err);
}

/* Promises 1 and 2: the changes land, every pre-existing path they changed
 * is in the cycle, and one restore gives back the tree as it was. */
static void prove_changes_backed_up_and_restored(struct fixture *f,
						 const struct program_group *g, struct report *r)
{
	struct fsbt_tree before, after, restored;
	struct step steps[64];
	char diff[4096], missing[4096] = "", bad[4096] = "";
	char *out, *err, *show, *show_err;
	cJSON *cycle;
	size_t n;
	int st;

	assert_int_equal(fsbt_tree_snap(f->ws, &before), 0);
	st = fsb_run(f, g->argv, g->changes, &out, &err);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 125)
		fsbt_fail_long("fsbroker run could not start the command:\n%s", err);
	n = parse_steps(out, steps, 64);
	if (n == 0 || strcmp(steps[n - 1].name, "end") != 0)
		note(r, "the changes script did not finish (status 0x%x):\n%s\n%s", (unsigned)st,
			 out, err);
	for (size_t i = 0; i + 1 < n; i++)
		if (steps[i].rc != 0)
			snprintf(bad + strlen(bad), sizeof(bad) - strlen(bad),
				 "  step %s: rc=%d: %s", steps[i].name, steps[i].rc, steps[i].text);
	if (bad[0] != '\0')
		note(r, "steps failed under fsbroker run:\n%s\nfsbroker run:\n%s", bad, err);
	else if (st != 0)
		note(r, "fsbroker run exited 0x%x:\n%s\n%s", (unsigned)st, out, err);
	free_steps(steps, n);
	check_expect(f, g->after, r);

	/* 1. Every pre-existing path that changed is in the cycle. */
	assert_int_equal(fsbt_tree_snap(f->ws, &after), 0);
	st = fsb_backup(f, "show", "--json", &show, &show_err);
	if (st != 0)
		note(r, "backup show exited 0x%x:\n%s%s", (unsigned)st, show, show_err);
	cycle = cJSON_Parse(show);
	if (cycle == NULL)
		note(r, "backup show --json printed no JSON:\n%s", show);
	for (size_t i = 0; cycle != NULL && i < before.n; i++) {
		char path[PATH_MAX * 2];

		if (before.e[i].path[0] == '\0' ||
		    !changed(&before.e[i], find_entry(&after, before.e[i].path)))
			continue;
		snprintf(path, sizeof(path), "%s/%s", f->ws, before.e[i].path);
		if (!in_cycle(cycle, path))
			snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing),
				 "  %s\n", before.e[i].path);
	}
	if (missing[0] != '\0')
		note(r, "changed but not in the cycle:\n%s\ncycle:\n%s", missing, show);
	cJSON_Delete(cycle);
	free(show);
	free(show_err);

	/* 2. One restore puts the tree back. */
	st = fsb_backup(f, "restore", NULL, &show, &show_err);
	if (st != 0)
		note(r, "backup restore exited 0x%x:\n%s%s", (unsigned)st, show, show_err);
	free(show);
	free(show_err);
	assert_int_equal(fsbt_tree_snap(f->ws, &restored), 0);
	if (fsbt_tree_diff(&before, &restored, FSBT_TREE_MTIME | FSBT_TREE_DIR_MTIME, diff, sizeof(diff)) != 0)
		note(r, "the workspace is not as it was after the restore:\n%s", diff);
	fsbt_tree_free(&before);
	fsbt_tree_free(&after);
	fsbt_tree_free(&restored);
	free(out);
	free(err);
}

static void prove_group(struct fixture *f, const struct program_group *g)
{
	/* The changes first: their restore leaves the tree as it was for the
	 * refused tries (a refused git checkout still moves HEAD). */
	struct report r = { .len = 0 };

	prove_changes_backed_up_and_restored(f, g, &r);
	prove_denied(f, g, &r);
	prove_unreadable(f, g, &r);
	if (r.len > 0)
		fsbt_fail_long("%s", r.text);
}

/* Skips unless a sandbox can start and `program` is installed. */
static void need(const char *program)
{
	char why[512];

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	if (access(program, X_OK) < 0)
		fsbt_skip("%s is not installed (make deps)", program);
}

/* ------------------------------------------------------------------------ */
/* The groups. */

/* Shell steps: run a command, then its marker. */
#define STEP_FN "exec 2>&1\nstep() { n=$1; shift; \"$@\"; echo \"@@ $n rc=$?\"; }\n"

static const char *const bash_c[] = { "/bin/bash", "-c", NULL };
static const char *const zsh_c[] = { "/usr/bin/zsh", "-c", NULL };
static const char *const python_c[] = { "/usr/bin/python3", "-c", NULL };
static const char *const busybox_c[] = { "/bin/busybox", "sh", "-c", NULL };

static void coreutils_changes_are_backed_up_and_restored_and_protected_files_refused(void **state)
{
	static const struct expect after[] = {
		{ "a.txt", "b.txt before\n" },
		{ "copy.txt", "b.txt before\n" },
		{ "c.txt", "<gone>" },
		{ "d.txt", "c.txt before\n" },
		{ "tree", "<gone>" },
		{ "e.txt", "E.txt before\n" },
		{ "f.txt", "f." },
		{ "g.txt", "<3 zero bytes>" },
		{ "h.txt", "tee\n" },
		{ "link", "-> b.txt" },
		{ "new-link", "-> a.txt" },
		{ "i.txt", "mode 600" },
		{ "newdir/sub", "<dir>" },
		{ "new.txt", "" },
		{ NULL, NULL },
	};
	const struct program_group g = {
		.argv = bash_c,
		.changes = STEP_FN
			"step cp cp b.txt a.txt\n"
			"step cp-new cp b.txt copy.txt\n"
			"step mv mv c.txt d.txt\n"
			"step rm-r rm -r tree\n"
			"step sed-i sed -i s/e/E/ e.txt\n"
			"step truncate truncate -s 2 f.txt\n"
			"step dd dd if=/dev/zero of=g.txt bs=1 count=3 conv=notrunc status=none\n"
			"echo tee | tee h.txt >/dev/null; echo \"@@ tee rc=$?\"\n"
			"step ln-sf ln -sf b.txt link\n"
			"step ln-s ln -s a.txt new-link\n"
			"step chmod chmod 600 i.txt\n"
			"step mkdir mkdir -p newdir/sub\n"
			"step touch touch j.txt\n"
			"step touch-new touch new.txt\n"
			"echo '@@ end rc=0'\n",
		.after = after,
		.denied = STEP_FN
			"step cp cp b.txt locked.txt\n"
			"step mv mv b.txt locked.txt\n"
			"step mv-away mv locked.txt away.txt\n"
			"step rm rm locked.txt\n"
			"step rm-r rm -r locked.d\n"
			"step sed-i sed -i s/locked/open/ locked.txt\n"
			"step truncate truncate -s 0 locked.txt\n"
			"step dd dd if=/dev/zero of=locked.txt bs=1 count=1 status=none\n"
			"echo x | tee locked.txt >/dev/null; echo \"@@ tee rc=$?\"\n"
			"step ln-sf ln -sf b.txt locked.txt\n"
			"step chmod chmod 600 locked.txt\n"
			"step mkdir mkdir locked.d/new\n"
			"step cp-into cp b.txt locked.d/new\n"
			"step touch touch locked.txt\n"
			"echo '@@ end rc=0'\n",
		.reads = "exec 2>&1\n"
			 "cat secret.txt\n"
			 "head -c 100 secret.txt\n"
			 "dd if=secret.txt status=none\n"
			 "cp secret.txt copy-of-secret.txt\n"
			 "echo '@@ end rc=0'\n",
	};

	need("/bin/bash");
	prove_group(*state, &g);
}

/* The same redirections in bash and in zsh. */
#define REDIRECT_CHANGES                                                       \
	"exec 2>&1\n"                                                          \
	"echo gt > a.txt; echo \"@@ > rc=$?\"\n"                               \
	"echo append >> b.txt; echo \"@@ >> rc=$?\"\n"                         \
	"set -o noclobber; echo clobber >| c.txt; echo \"@@ >| rc=$?\"\n"      \
	"set +o noclobber\n"                                                   \
	"exec 4<> d.txt && echo RW >&4 && exec 4>&-; echo \"@@ <> rc=$?\"\n"   \
	"exec 3> e.txt && echo fd3 >&3 && exec 3>&-; echo \"@@ exec-3> rc=$?\"\n" \
	"echo new > new.txt; echo \"@@ >-new rc=$?\"\n"                        \
	"echo '@@ end rc=0'\n"

#define REDIRECT_DENIED                                                        \
	"exec 2>&1\n"                                                          \
	"echo x > locked.txt; echo \"@@ > rc=$?\"\n"                           \
	"echo x >> locked.txt; echo \"@@ >> rc=$?\"\n"                         \
	"echo x >| locked.txt; echo \"@@ >| rc=$?\"\n"                         \
	"( exec 4<> locked.txt ); echo \"@@ <> rc=$?\"\n"                      \
	"( exec 3> locked.txt ); echo \"@@ exec-3> rc=$?\"\n"                  \
	"echo x > locked.d/new; echo \"@@ >-in-locked-dir rc=$?\"\n"           \
	"echo '@@ end rc=0'\n"

#define REDIRECT_READS                                                         \
	"exec 2>&1\n"                                                          \
	"echo \"$(< secret.txt)\"\n"                                           \
	"while read -r line; do echo \"$line\"; done < secret.txt\n"           \
	"cat < secret.txt\n"                                                   \
	"echo '@@ end rc=0'\n"

static const struct expect redirect_after[] = {
	{ "a.txt", "gt\n" },
	{ "b.txt", "b.txt before\nappend\n" },
	{ "c.txt", "clobber\n" },
	{ "d.txt", "RW\nxt before\n" },
	{ "e.txt", "fd3\n" },
	{ "new.txt", "new\n" },
	{ NULL, NULL },
};

static void bash_redirections_are_backed_up_and_restored_and_protected_files_refused(void **state)
{
	const struct program_group g = { bash_c, REDIRECT_CHANGES, redirect_after,
					 REDIRECT_DENIED, REDIRECT_READS };

	need("/bin/bash");
	prove_group(*state, &g);
}

static void zsh_redirections_are_backed_up_and_restored_and_protected_files_refused(void **state)
{
	const struct program_group g = { zsh_c, REDIRECT_CHANGES, redirect_after,
					 REDIRECT_DENIED, REDIRECT_READS };

	need("/usr/bin/zsh");
	prove_group(*state, &g);
}

/* Python: each step a callable; an exception prints its repr. */
#define PY_STEP                                                                \
	"import os, shutil, sys, pathlib\n"                                    \
	"sys.stderr = sys.stdout\n"                                            \
	"def step(name, fn):\n"                                                \
	"    try:\n"                                                           \
	"        fn()\n"                                                       \
	"        rc = 0\n"                                                     \
	"    except Exception as e:\n"                                         \
	"        print(repr(e))\n"                                             \
	"        rc = 1\n"                                                     \
	"    print('@@ %s rc=%d' % (name, rc), flush=True)\n"                  \
	"def write(name, mode, text):\n"                                       \
	"    with open(name, mode) as f:\n"                                    \
	"        f.write(text)\n"

static void python_changes_are_backed_up_and_restored_and_protected_files_refused(void **state)
{
	static const struct expect after[] = {
		{ "a.txt", "open-w\n" },
		{ "b.txt", "b.txt before\nopen-a\n" },
		{ "c.txt", "<gone>" },
		{ "d.txt", "c.txt before\n" },
		{ "tree", "<gone>" },
		{ "e.txt", "pathlib\n" },
		{ "new.txt", "new\n" },
		{ "f.txt", "<gone>" },
		{ "g2.txt", "g.txt before\n" },
		{ "pydir", "<dir>" },
		{ "i.txt", "mode 600" },
		{ "pylink", "-> a.txt" },
		{ NULL, NULL },
	};
	const struct program_group g = {
		.argv = python_c,
		.changes = PY_STEP
			"step('open-w', lambda: write('a.txt', 'w', 'open-w\\n'))\n"
			"step('open-a', lambda: write('b.txt', 'a', 'open-a\\n'))\n"
			"step('os.replace', lambda: os.replace('c.txt', 'd.txt'))\n"
			"step('shutil.rmtree', lambda: shutil.rmtree('tree'))\n"
			"step('Path.write_text', lambda: pathlib.Path('e.txt').write_text('pathlib\\n'))\n"
			"step('Path.write_text-new', lambda: pathlib.Path('new.txt').write_text('new\\n'))\n"
			"step('os.remove', lambda: os.remove('f.txt'))\n"
			"step('os.rename', lambda: os.rename('g.txt', 'g2.txt'))\n"
			"step('os.mkdir', lambda: os.mkdir('pydir'))\n"
			"step('os.chmod', lambda: os.chmod('i.txt', 0o600))\n"
			"step('os.symlink', lambda: os.symlink('a.txt', 'pylink'))\n"
			"print('@@ end rc=0')\n",
		.after = after,
		.denied = PY_STEP
			"step('open-w', lambda: write('locked.txt', 'w', 'x'))\n"
			"step('open-a', lambda: write('locked.txt', 'a', 'x'))\n"
			"step('open-r+', lambda: write('locked.txt', 'r+', 'x'))\n"
			"step('os.replace-onto', lambda: os.replace('b.txt', 'locked.txt'))\n"
			"step('os.replace-away', lambda: os.replace('locked.txt', 'away.txt'))\n"
			"step('os.remove', lambda: os.remove('locked.txt'))\n"
			"step('shutil.rmtree', lambda: shutil.rmtree('locked.d'))\n"
			"step('Path.write_text', lambda: pathlib.Path('locked.txt').write_text('x'))\n"
			"step('Path.write_text-in', lambda: pathlib.Path('locked.d/new').write_text('x'))\n"
			"step('os.chmod', lambda: os.chmod('locked.txt', 0o600))\n"
			"step('os.mkdir', lambda: os.mkdir('locked.d/new'))\n"
			"print('@@ end rc=0')\n",
		.reads = PY_STEP
			"step('open', lambda: print(open('secret.txt').read()))\n"
			"step('Path.read_text', lambda: print(pathlib.Path('secret.txt').read_text()))\n"
			"step('Path.read_bytes', lambda: print(pathlib.Path('secret.txt').read_bytes()))\n"
			"step('copy', lambda: shutil.copyfile('secret.txt', 'copy-of-secret.txt'))\n"
			"print('@@ end rc=0')\n",
	};

	need("/usr/bin/python3");
	prove_group(*state, &g);
}

/* busybox-static: one static binary, glibc's old-style calls (rename,
 * unlink, rmdir) issued directly. */
static void static_busybox_changes_are_backed_up_and_restored_and_protected_files_refused(
	void **state)
{
	static const struct expect after[] = {
		{ "a.txt", "b.txt before\n" },
		{ "c.txt", "<gone>" },
		{ "d.txt", "c.txt before\n" },
		{ "tree", "<gone>" },
		{ "e.txt", "E.txt before\n" },
		{ "f.txt", "busybox\n" },
		{ "g.txt", "g.txt before\nmore\n" },
		{ "bbdir", "<dir>" },
		{ "link", "-> b.txt" },
		{ "i.txt", "mode 600" },
		{ NULL, NULL },
	};
	const struct program_group g = {
		.argv = busybox_c,
		.changes = STEP_FN
			"B=/bin/busybox\n"
			"step cp $B cp b.txt a.txt\n"
			"step mv $B mv c.txt d.txt\n"
			"step rm-r $B rm -r tree\n"
			"step sed-i $B sed -i s/e/E/ e.txt\n"
			"echo busybox > f.txt; echo \"@@ echo-> rc=$?\"\n"
			"echo more >> g.txt; echo \"@@ echo->> rc=$?\"\n"
			"step mkdir $B mkdir bbdir\n"
			"step ln-sf $B ln -sf b.txt link\n"
			"step chmod $B chmod 600 i.txt\n"
			"echo '@@ end rc=0'\n",
		.after = after,
		.denied = STEP_FN
			"B=/bin/busybox\n"
			"step cp $B cp b.txt locked.txt\n"
			"step mv $B mv b.txt locked.txt\n"
			"step rm $B rm locked.txt\n"
			"step rm-r $B rm -r locked.d\n"
			"step sed-i $B sed -i s/locked/open/ locked.txt\n"
			"echo x > locked.txt; echo \"@@ echo-> rc=$?\"\n"
			"echo x >> locked.txt; echo \"@@ echo->> rc=$?\"\n"
			"step chmod $B chmod 600 locked.txt\n"
			"echo '@@ end rc=0'\n",
		.reads = "exec 2>&1\n"
			 "/bin/busybox cat secret.txt\n"
			 "/bin/busybox cp secret.txt copy-of-secret.txt\n"
			 "echo '@@ end rc=0'\n",
	};

	need("/bin/busybox");
	prove_group(*state, &g);
}

/* Run a shell command on the host (outside any sandbox), in `dir`. */
static void host_sh(const char *dir, const char *script)
{
	char *out = NULL;
	int st = fsbt_run((char *[]){ "/bin/sh", "-c", (char *)script, "sh", (char *)dir, NULL },
			  &out);

	if (st != 0)
		fsbt_fail_long("host command failed (0x%x): %s\n%s", (unsigned)st, script, out ? out : "");
	free(out);
}

static void git_add_commit_checkout_are_backed_up_and_restored_and_protected_files_refused(
	void **state)
{
	struct fixture *f = *state;
	static const struct expect after[] = {
		{ "a.txt", "branch other\n" },
		{ "b.txt", "<gone>" },
		{ "n.txt", "new on other\n" },
		{ "locked.txt", LOCKED },
		{ NULL, NULL },
	};
	const struct program_group g = {
		.argv = bash_c,
		.changes = STEP_FN
			"G='git -c user.name=fsbt -c user.email=fsbt@example.invalid'\n"
			"echo change >> a.txt; echo \"@@ edit rc=$?\"\n"
			"step add git add a.txt\n"
			"step commit $G commit -q -m run\n"
			"step checkout git checkout -q other\n"
			"echo '@@ end rc=0'\n",
		.after = after,
		.denied = STEP_FN
			"step checkout-branch git checkout -q evil\n"
			"step checkout-path git checkout evil -- locked.txt\n"
			"echo '@@ end rc=0'\n",
		.reads = "exec 2>&1\n"
			 "git diff --no-index --text /dev/null secret.txt\n"
			 "git hash-object -w secret.txt\n"
			 "echo '@@ end rc=0'\n",
	};

	need("/usr/bin/git");
	/* Made outside the run: main has every file; `other` changes a.txt,
	 * removes b.txt and adds n.txt; `evil` changes locked.txt only.
	 * secret.txt stays untracked (the sandbox sees it as an empty mask). */
	host_sh(f->ws, "cd \"$1\" && exec >/dev/null 2>&1 && "
		       "G='git -c user.name=fsbt -c user.email=fsbt@example.invalid' && "
		       "git init -q -b main . && echo secret.txt >> .git/info/exclude && "
		       "git add -A && $G commit -q -m base && "
		       "git checkout -q -b other && echo 'branch other' > a.txt && "
		       "git rm -q b.txt && echo 'new on other' > n.txt && git add -A && "
		       "$G commit -q -m other && git checkout -q main && "
		       "git checkout -q -b evil && echo changed > locked.txt && "
		       "$G commit -q -am evil && git checkout -q main");
	prove_group(f, &g);
}

static void tar_extract_and_create_are_backed_up_and_restored_and_protected_files_refused(
	void **state)
{
	struct fixture *f = *state;
	static const struct expect after[] = {
		{ "a.txt", "a from tar\n" },
		{ "b.txt", "b from tar\n" },
		{ "newdir/x.txt", "x from tar\n" },
		{ "locked.txt", LOCKED },
		{ NULL, NULL },
	};
	const struct program_group g = {
		.argv = bash_c,
		.changes = STEP_FN
			"step tar-x tar xf in.tar\n"
			"step tar-c tar cf out.tar tree\n"
			"echo '@@ end rc=0'\n",
		.after = after,
		.denied = STEP_FN
			"step tar-x tar xf evil.tar\n"
			"step tar-c tar cf locked.txt tree\n"
			"step tar-x-into tar xf into.tar\n"
			"echo '@@ end rc=0'\n",
		.reads = "exec 2>&1\n"
			 "tar cf - secret.txt | tar xOf -\n"
			 "tar cf secret-copy.tar secret.txt\n"
			 "echo '@@ end rc=0'\n",
	};

	need("/bin/tar");
	/* The archives, made outside from a staging directory: in.tar
	 * replaces a.txt and b.txt and adds newdir/; evil.tar holds locked.txt;
	 * into.tar a new file under locked.d/. out.tar exists beforehand. */
	host_sh(f->root, "cd \"$1\" && mkdir -p stage/newdir stage/locked.d && "
			 "echo 'a from tar' > stage/a.txt && echo 'b from tar' > stage/b.txt && "
			 "echo 'x from tar' > stage/newdir/x.txt && echo evil > stage/locked.txt && "
			 "echo evil > stage/locked.d/new && "
			 "tar cf ws/in.tar -C stage a.txt b.txt newdir && "
			 "tar cf ws/evil.tar -C stage locked.txt && "
			 "tar cf ws/into.tar -C stage locked.d/new && "
			 "echo 'old archive' > ws/out.tar");
	prove_group(f, &g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			coreutils_changes_are_backed_up_and_restored_and_protected_files_refused,
			setup, teardown),
		cmocka_unit_test_setup_teardown(
			bash_redirections_are_backed_up_and_restored_and_protected_files_refused,
			setup, teardown),
		cmocka_unit_test_setup_teardown(
			zsh_redirections_are_backed_up_and_restored_and_protected_files_refused,
			setup, teardown),
		cmocka_unit_test_setup_teardown(
			python_changes_are_backed_up_and_restored_and_protected_files_refused,
			setup, teardown),
		cmocka_unit_test_setup_teardown(
			static_busybox_changes_are_backed_up_and_restored_and_protected_files_refused,
			setup, teardown),
		cmocka_unit_test_setup_teardown(
			git_add_commit_checkout_are_backed_up_and_restored_and_protected_files_refused,
			setup, teardown),
		cmocka_unit_test_setup_teardown(
			tar_extract_and_create_are_backed_up_and_restored_and_protected_files_refused,
			setup, teardown),
	};

	return fsbt_run_group(tests, NULL, NULL);
}
