/*
 * test_run_sessions.c — which session `fsbroker run` and `fsbroker backup`
 * take without --session (the workspace's own), and runs at once: in two
 * workspaces or in one, each gets its own cycle and both are restorable; a
 * restore in one project never touches another's; a run that changed
 * nothing seals no cycle; a workspace under ${tmp} is backed up.
 */
#include "run_fixture.h"

#include <dirent.h>

/* `fsbroker run --workspace WS --state-dir ST [--rules PACK] -- sh -c
 * SCRIPT`, no --session, its summary on RUN_SUMMARY_FD: started. */
static void start_in(struct fixture *f, const char *ws, const char *pack, const char *script,
		     struct runproc *p)
{
	char *argv[16], fdarg[8];
	int n = 0;

	snprintf(fdarg, sizeof(fdarg), "%d", RUN_SUMMARY_FD);
	argv[n++] = (char *)fsbt_binary();
	argv[n++] = "run";
	argv[n++] = "--workspace";
	argv[n++] = (char *)ws;
	argv[n++] = "--state-dir";
	argv[n++] = f->state;
	argv[n++] = "--summary-fd";
	argv[n++] = fdarg;
	if (pack != NULL) {
		argv[n++] = "--rules";
		argv[n++] = (char *)pack;
	}
	argv[n++] = "--";
	argv[n++] = "sh";
	argv[n++] = "-c";
	argv[n++] = (char *)script;
	argv[n] = NULL;
	run_start(argv, false, p);
}

/* A run to its end: it exits 0; its summary's cycle number. */
static int finish_ok(struct runproc *p)
{
	int st = run_finish(p), cycle;
	cJSON *sum;

	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("fsbroker run exited 0x%x:\n%s", (unsigned)st, p->ebuf ? p->ebuf : "");
	sum = run_summary(p);
	cycle = cJSON_GetObjectItem(sum, "cycle")->valueint;
	cJSON_Delete(sum);
	run_free(p);
	return cycle;
}

static int run_in(struct fixture *f, const char *ws, const char *script)
{
	struct runproc p;

	start_in(f, ws, NULL, script, &p);
	return finish_ok(&p);
}

/* Wait until the started run `p` made `path`: it is running, its core up.
 * Fails the test when the run ends first. */
static void wait_for(struct runproc *p, const char *path)
{
	int status;

	while (access(path, F_OK) != 0) {
		if (waitpid(p->pid, &status, WNOHANG) == p->pid)
			fail_msg("the first run ended (0x%x) before it made %s", (unsigned)status,
				 path);
		usleep(20000);
	}
}

/* `fsbroker backup ARGS... --state-dir ST [--workspace WS]`: its exit
 * status; its stdout and stderr together into *out. */
static int backup(struct fixture *f, const char *ws, char **out, const char *a1, const char *a2,
		  const char *a3)
{
	char *argv[12];
	int n = 0;

	argv[n++] = (char *)fsbt_binary();
	argv[n++] = "backup";
	argv[n++] = (char *)a1;
	if (a2 != NULL)
		argv[n++] = (char *)a2;
	if (a3 != NULL)
		argv[n++] = (char *)a3;
	argv[n++] = "--state-dir";
	argv[n++] = f->state;
	if (ws != NULL) {
		argv[n++] = "--workspace";
		argv[n++] = (char *)ws;
	}
	argv[n] = NULL;
	*out = NULL;
	return fsbt_run(argv, out);
}

static void put_in(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX * 2];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fsbt_write_file(path, text);
}

static char *read_in(const char *dir, const char *name)
{
	char path[PATH_MAX * 2];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return fsbt_read_file(path, NULL);
}

static void assert_file(const char *dir, const char *name, const char *want)
{
	char *text = read_in(dir, name);

	if (text == NULL || strcmp(text, want) != 0)
		fail_msg("%s/%s holds '%s', not '%s'", dir, name, text ? text : "(nothing)", want);
	free(text);
}

/* The number of cycle directories in every session's store. */
static int count_cycles(struct fixture *f)
{
	char path[PATH_MAX * 2];
	struct dirent *de, *ce;
	DIR *d, *c;
	int n = 0;

	snprintf(path, sizeof(path), "%s/sessions", f->state);
	d = opendir(path);
	if (d == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/sessions/%s/modify_backup/cycles", f->state,
			 de->d_name);
		c = opendir(path);
		if (c == NULL)
			continue;
		while ((ce = readdir(c)) != NULL)
			n += ce->d_name[0] != '.';
		closedir(c);
	}
	closedir(d);
	return n;
}

/*
 * Two projects, a run in each at the same time: the second is not refused
 * (it used to exit 125, "another fsbroker core is serving session
 * default"), and each project's `backup list` sees its own run only.
 */
static void second_run_while_one_runs_in_another_workspace_is_not_refused(void **state)
{
	struct fixture *f = *state;
	char why[512], ws2[PATH_MAX + 16], ready[PATH_MAX + 32], go[PATH_MAX + 32], script[1024];
	struct runproc a;
	char *out;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	snprintf(ws2, sizeof(ws2), "%s/ws2", f->root);
	assert_int_equal(mkdir(ws2, 0755), 0);
	put_in(ws2, "x.txt", "ex\n");
	snprintf(ready, sizeof(ready), "%s/ready", f->ws);
	snprintf(go, sizeof(go), "%s/go", f->root);
	snprintf(script, sizeof(script),
		 "echo project-one > a.txt; : > ready; while [ ! -e '%s' ]; do sleep 0.05; done", go);
	start_in(f, f->ws, NULL, script, &a);
	wait_for(&a, ready);
	assert_int_equal(run_in(f, ws2, "echo project-two > x.txt"), 1);
	put_in(f->root, "go", "");
	assert_int_equal(finish_ok(&a), 1);

	assert_int_equal(backup(f, f->ws, &out, "list", NULL, NULL), 0);
	assert_non_null(strstr(out, "project-one"));
	assert_null(strstr(out, "project-two"));
	free(out);
	assert_int_equal(backup(f, ws2, &out, "list", NULL, NULL), 0);
	assert_non_null(strstr(out, "project-two"));
	assert_null(strstr(out, "project-one"));
	free(out);
	/* --all shows both, each with its workspace. */
	assert_int_equal(backup(f, NULL, &out, "list", "--all", NULL), 0);
	assert_non_null(strstr(out, "project-one"));
	assert_non_null(strstr(out, "project-two"));
	assert_non_null(strstr(out, ws2));
	free(out);
}

/*
 * Two runs at once in one workspace: both work, each seals a cycle of its
 * own in the workspace's session (none "recovered" by the other), and
 * each restores.
 */
static void second_run_while_one_runs_in_the_same_workspace_is_not_refused(void **state)
{
	struct fixture *f = *state;
	char why[512], ready[PATH_MAX + 32], go[PATH_MAX + 32], script[1024];
	struct runproc a;
	char *out;
	int first;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	snprintf(ready, sizeof(ready), "%s/ready", f->ws);
	snprintf(go, sizeof(go), "%s/go", f->root);
	snprintf(script, sizeof(script),
		 "echo first > a.txt; : > ready; while [ ! -e '%s' ]; do sleep 0.05; done", go);
	start_in(f, f->ws, NULL, script, &a);
	wait_for(&a, ready);
	assert_int_equal(run_in(f, f->ws, "echo second > b.txt"), 2);
	/* The second run's core did not take the first one's live cycle
	 * for a crash's. */
	assert_int_equal(backup(f, f->ws, &out, "list", NULL, NULL), 0);
	if (strstr(out, "    1  open") == NULL || strstr(out, "    2  sealed") == NULL)
		fail_msg("expected cycle 1 open and 2 sealed while the first run goes on:\n%s",
			 out);
	free(out);
	put_in(f->root, "go", "");
	first = finish_ok(&a);
	assert_int_equal(first, 1);

	assert_int_equal(backup(f, f->ws, &out, "list", NULL, NULL), 0);
	assert_null(strstr(out, "recovered"));
	assert_non_null(strstr(out, "echo first"));
	assert_non_null(strstr(out, "echo second"));
	free(out);
	assert_file(f->ws, "a.txt", "first\n");
	assert_file(f->ws, "b.txt", "second\n");
	if (backup(f, f->ws, &out, "restore", "2", NULL) != 0)
		fail_msg("restore 2: %s", out ? out : "");
	free(out);
	assert_file(f->ws, "b.txt", "bee\n");
	assert_file(f->ws, "a.txt", "first\n");
	if (backup(f, f->ws, &out, "restore", "1", NULL) != 0)
		fail_msg("restore 1: %s", out ? out : "");
	free(out);
	assert_file(f->ws, "a.txt", "old a\n");
	assert_int_not_equal(access(ready, F_OK), 0);
}

/*
 * A run killed (SIGKILL, its core with it) while another run of the same
 * workspace goes on: the next run's core seals the dead run's cycle as
 * recovered and leaves the live one's open; the live run then seals its
 * own as usual, and the dead run's changes can still be restored.
 */
static void killed_run_is_recovered_while_another_runs(void **state)
{
	struct fixture *f = *state;
	char why[512], ready[PATH_MAX + 32], ready2[PATH_MAX + 32], script[1024], *out;
	struct runproc a, b;
	int st;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	snprintf(ready, sizeof(ready), "%s/ready", f->ws);
	snprintf(ready2, sizeof(ready2), "%s/ready2", f->ws);
	snprintf(script, sizeof(script), "echo killed > a.txt; : > ready; while :; do sleep 1; done");
	start_in(f, f->ws, NULL, script, &a);
	wait_for(&a, ready);
	snprintf(script, sizeof(script),
		 "echo live > b.txt; : > ready2; while [ ! -e '%s/go' ]; do sleep 0.05; done",
		 f->root);
	start_in(f, f->ws, NULL, script, &b);
	wait_for(&b, ready2);
	assert_int_equal(kill(a.pid, SIGKILL), 0);
	st = run_finish(&a);
	assert_true(WIFSIGNALED(st));
	run_free(&a);

	assert_int_equal(run_in(f, f->ws, "echo third > c.txt"), 3);
	/* The live run's cycle is still open, not taken for a crash's. */
	assert_int_equal(backup(f, f->ws, &out, "list", NULL, NULL), 0);
	if (strstr(out, "    1  recovered") == NULL || strstr(out, "    2  open") == NULL)
		fail_msg("expected cycle 1 recovered and 2 open while its run goes on:\n%s", out);
	free(out);
	put_in(f->root, "go", "");
	assert_int_equal(finish_ok(&b), 2);

	assert_int_equal(backup(f, f->ws, &out, "list", NULL, NULL), 0);
	if (strstr(out, "    1  recovered") == NULL || strstr(out, "    2  sealed") == NULL ||
	    strstr(out, "    3  sealed") == NULL)
		fail_msg("expected cycle 1 recovered, 2 and 3 sealed:\n%s", out);
	free(out);
	assert_file(f->ws, "a.txt", "killed\n");
	if (backup(f, f->ws, &out, "restore", "1", "--force") != 0)
		fail_msg("restore 1 --force: %s", out ? out : "");
	free(out);
	assert_file(f->ws, "a.txt", "old a\n");
	assert_file(f->ws, "b.txt", "live\n");
}

/* `restore --last` in project A restores A's last run, and names no path
 * of project B, whose run came after it. */
static void restore_last_in_one_project_never_proposes_a_path_of_another(void **state)
{
	struct fixture *f = *state;
	char why[512], ws2[PATH_MAX + 16];
	char *out;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	snprintf(ws2, sizeof(ws2), "%s/ws2", f->root);
	assert_int_equal(mkdir(ws2, 0755), 0);
	put_in(ws2, "x.txt", "ex\n");
	assert_int_equal(run_in(f, f->ws, "echo new > a.txt"), 1);
	assert_int_equal(run_in(f, ws2, "echo new > x.txt; echo made > y.txt"), 1);

	assert_int_equal(backup(f, f->ws, &out, "restore", "--last", "--dry-run"), 0);
	assert_non_null(strstr(out, f->ws));
	assert_null(strstr(out, ws2));
	free(out);
	assert_int_equal(backup(f, f->ws, &out, "restore", "--last", NULL), 0);
	free(out);
	assert_file(f->ws, "a.txt", "old a\n");
	assert_file(ws2, "x.txt", "new\n");
	assert_file(ws2, "y.txt", "made\n");
}

/*
 * A run that tried a backup but changed nothing (its one write refused:
 * the file is over a 1 MiB limit the pack denies) seals no cycle: it
 * reports cycle 0 and no restore hint, and leaves no cycle directory.
 */
static void empty_run_reports_cycle_0_and_leaves_no_cycle(void **state)
{
	struct fixture *f = *state;
	char why[512], pack[PATH_MAX + 32], big[PATH_MAX + 32];
	struct runproc p;
	cJSON *sum;
	int st, fd;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	snprintf(pack, sizeof(pack), "%s/tiny.lua", f->rules);
	fsbt_write_file(pack, "return { name = \"tiny\", include = { \"default\" },\n"
			      "  backup = { maxSizeMB = 1, onTooLarge = \"deny\" } }\n");
	snprintf(big, sizeof(big), "%s/big.bin", f->ws);
	fd = open(big, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 2 << 20), 0);
	close(fd);

	start_in(f, f->ws, pack, "echo more >> big.bin; exit 0", &p);
	st = run_finish(&p);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	sum = run_summary(&p);
	assert_int_equal(cJSON_GetObjectItem(sum, "cycle")->valueint, 0);
	assert_false(cJSON_IsTrue(cJSON_GetObjectItem(sum, "cycleSealed")));
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(sum, "changed")), 0);
	cJSON_Delete(sum);
	assert_null(strstr(p.ebuf ? p.ebuf : "", "to undo"));
	run_free(&p);
	assert_int_equal(count_cycles(f), 0);

	/* Nor does a run that touches nothing at all. */
	start_in(f, f->ws, NULL, "true", &p);
	assert_int_equal(finish_ok(&p), 0);
	assert_int_equal(count_cycles(f), 0);
}

/* A workspace under ${tmp} (here /tmp itself, and a CI machine's layout
 * with HOME inside it too): its run backs it up, and the restore its
 * summary offers works. */
static void workspace_under_tmp_is_backed_up_and_restored(struct fixture *f, bool home_in_tmp)
{
	char why[512], root[] = "/tmp/fsbt-sessions-XXXXXX", ws[64], home[64], cmd[128];
	char *out;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	assert_non_null(mkdtemp(root));
	assert_int_equal(chmod(root, 0755), 0);
	snprintf(ws, sizeof(ws), "%s/ws", root);
	assert_int_equal(mkdir(ws, 0755), 0);
	put_in(ws, "a.txt", "old a\n");
	setenv("TMPDIR", "/tmp", 1);
	if (home_in_tmp) {
		snprintf(home, sizeof(home), "%s/home", root);
		assert_int_equal(mkdir(home, 0755), 0);
		setenv("HOME", home, 1);
	}
	assert_int_equal(run_in(f, ws, "echo new > a.txt; echo made > n.txt"), 1);
	assert_file(ws, "a.txt", "new\n");
	if (backup(f, ws, &out, "restore", "--last", NULL) != 0)
		fail_msg("restore --last: %s", out ? out : "");
	free(out);
	assert_file(ws, "a.txt", "old a\n");
	snprintf(cmd, sizeof(cmd), "%s/n.txt", ws);
	assert_int_not_equal(access(cmd, F_OK), 0);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
}

static void workspace_under_tmp_is_not_silently_left_without_backups(void **state)
{
	workspace_under_tmp_is_backed_up_and_restored(*state, false);
}

static void workspace_under_tmp_with_home_in_tmp_is_backed_up(void **state)
{
	workspace_under_tmp_is_backed_up_and_restored(*state, true);
}

/* `fsbroker approve BLOCK` without --session, in the workspace whose run
 * left the block: it finds that run's session, and the rerun goes through. */
static void approve_without_session_takes_the_workspaces(void **state)
{
	struct fixture *f = *state;
	char why[512], notes[PATH_MAX + 16], block[64], *out = NULL;
	struct runproc p;
	cJSON *sum;
	int st;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	snprintf(notes, sizeof(notes), "%s/notes.txt", f->home);
	fsbt_write_file(notes, "before\n");
	start_in(f, f->ws, NULL, "echo after > ~/notes.txt", &p);
	st = run_finish(&p);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) != 0);
	sum = run_summary(&p);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(sum, "waiting")), 1);
	snprintf(block, sizeof(block), "%s",
		 fsbt_str(cJSON_GetArrayItem(cJSON_GetObjectItem(sum, "waiting"), 0), "blockId"));
	cJSON_Delete(sum);
	run_free(&p);

	st = fsbt_run((char *[]){ (char *)fsbt_binary(), "approve", "--state-dir", f->state,
				  "--workspace", f->ws, block, NULL }, &out);
	if (st != 0)
		fail_msg("approve exited 0x%x: %s", (unsigned)st, out ? out : "");
	free(out);
	assert_int_equal(run_in(f, f->ws, "echo after > ~/notes.txt"), 1);
	assert_file(f->home, "notes.txt", "after\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			second_run_while_one_runs_in_another_workspace_is_not_refused, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			second_run_while_one_runs_in_the_same_workspace_is_not_refused, setup,
			teardown),
		cmocka_unit_test_setup_teardown(killed_run_is_recovered_while_another_runs, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			restore_last_in_one_project_never_proposes_a_path_of_another, setup, teardown),
		cmocka_unit_test_setup_teardown(empty_run_reports_cycle_0_and_leaves_no_cycle, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			workspace_under_tmp_is_not_silently_left_without_backups, setup, teardown),
		cmocka_unit_test_setup_teardown(workspace_under_tmp_with_home_in_tmp_is_backed_up,
						setup, teardown),
		cmocka_unit_test_setup_teardown(approve_without_session_takes_the_workspaces, setup,
						teardown),
	};

	return fsbt_run_group(tests, NULL, NULL);
}
