/*
 * test_run.c — `fsbroker run` with its embedded core, end to end: bubblewrap,
 * fsbroker-init and the supervisor around a shell command; the changes it
 * makes land and one restore takes them back; the pack's refusals hold;
 * CMD's exit status and fsbroker run's own (125) come out as documented;
 * chmod -R and rm -rf add no copied byte to the store.
 */
#include "run_fixture.h"

#include <dirent.h>

static void changes_land_and_one_restore_takes_them_back(void **state)
{
	struct fixture *f = *state;
	struct fsbt_tree before, after, restored;
	char why[512], diff[2048], path[PATH_MAX * 2], *out = NULL, *text;
	int st;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	assert_int_equal(fsbt_tree_snap(f->ws, &before), 0);
	st = run_sh(f, NULL, "echo new > a.txt; rm b.txt; mkdir d; mv c.txt d/", &out);
	if (st != 0)
		fail_msg("fsbroker run exited 0x%x:\n%s", (unsigned)st, out ? out : "");
	assert_non_null(strstr(out, "fsbroker run: to undo: fsbroker backup restore 1 "));
	free(out);
	snprintf(path, sizeof(path), "%s/a.txt", f->ws);
	text = fsbt_read_file(path, NULL);
	assert_non_null(text);
	assert_string_equal(text, "new\n");
	free(text);
	snprintf(path, sizeof(path), "%s/b.txt", f->ws);
	assert_int_equal(access(path, F_OK), -1);
	snprintf(path, sizeof(path), "%s/d/c.txt", f->ws);
	assert_int_equal(access(path, F_OK), 0);
	assert_int_equal(fsbt_tree_snap(f->ws, &after), 0);
	assert_true(fsbt_tree_diff(&before, &after, 0, NULL, 0) > 0);

	out = NULL;
	st = fsbt_run((char *[]){ (char *)fsbt_binary(), "backup", "restore", "--last",
				  "--state-dir", f->state, "--session", "s", NULL }, &out);
	if (st != 0)
		fail_msg("restore exited 0x%x:\n%s", (unsigned)st, out ? out : "");
	free(out);
	assert_int_equal(fsbt_tree_snap(f->ws, &restored), 0);
	if (fsbt_tree_diff(&before, &restored, FSBT_TREE_MTIME, diff, sizeof(diff)) != 0)
		fail_msg("the workspace is not as it was:\n%s", diff);
	fsbt_tree_free(&before);
	fsbt_tree_free(&after);
	fsbt_tree_free(&restored);
}

static void a_write_the_pack_denies_fails_and_the_file_stays(void **state)
{
	struct fixture *f = *state;
	char why[512], *out = NULL, *text;
	int st;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	st = run_sh(f, NULL, "echo x > ~/.ssh/id_ed25519", &out);
	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 125)
		fail_msg("fsbroker run exited %d:\n%s", WEXITSTATUS(st), out ? out : "");
	/* The summary names the refusal and the rule. */
	if (out == NULL || strstr(out, "fsbroker run: refused: ") == NULL ||
	    strstr(out, "(denyRead ~/.ssh/**)") == NULL || strstr(out, "1 refused by the pack") == NULL)
		fail_msg("the summary does not name the refusal:\n%s", out ? out : "");
	free(out);
	text = fsbt_read_file(f->key, NULL);
	assert_non_null(text);
	assert_string_equal(text, "PRIVATE KEY\n");
	free(text);
}

static void the_exit_status_is_the_commands(void **state)
{
	struct fixture *f = *state;
	char why[512], *out = NULL;
	int st;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	st = run_sh(f, NULL, "exit 7", &out);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 7)
		fail_msg("fsbroker run: wait status 0x%x:\n%s", (unsigned)st, out ? out : "");
	free(out);
	out = NULL;
	st = run_sh(f, NULL, "kill -TERM $$", &out);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 128 + 15)
		fail_msg("fsbroker run: wait status 0x%x:\n%s", (unsigned)st, out ? out : "");
	free(out);
}

static void a_bad_flag_exits_125_with_a_sentence(void **state)
{
	struct fixture *f = *state;
	char *out = NULL;
	int st;

	st = run_sh(f, "--no-such-flag", "true", &out);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 125);
	assert_non_null(strstr(out, "fsbroker run: unknown option --no-such-flag; "
			       "see fsbroker run --help"));
	free(out);
	out = NULL;
	st = run_sh(f, NULL, NULL, &out);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 125);
	assert_non_null(strstr(out, "fsbroker run: no command given"));
	free(out);
}

static void explain_prints_the_plan_and_runs_nothing(void **state)
{
	struct fixture *f = *state;
	char *out = NULL;
	int st;

	st = run_sh(f, "--explain", NULL, &out);
	if (st != 0)
		fail_msg("fsbroker run --explain exited 0x%x:\n%s", (unsigned)st, out ? out : "");
	assert_non_null(strstr(out, "mode: "));
	assert_non_null(strstr(out, "--ro-bind / /"));
	assert_non_null(strstr(out, f->ws));
	assert_non_null(strstr(out, "/.ssh"));
	free(out);
}

/* sed -i writes a new file and renames it over the old one, keeping the
 * old one's mode with fchmod and its owner with fchown: both go through
 * the core, and nothing is reported as failed. */
static void sed_in_place_keeps_the_mode_quietly(void **state)
{
	struct fixture *f = *state;
	char why[512], path[PATH_MAX + 16], *out = NULL, *text;
	struct stat st;
	int rc;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	snprintf(path, sizeof(path), "%s/a.txt", f->ws);
	assert_int_equal(chmod(path, 0640), 0);
	rc = run_sh(f, NULL, "sed -i s/old/NEW/ a.txt", &out);
	assert_true(WIFEXITED(rc));
	if (WEXITSTATUS(rc) != 0)
		fail_msg("fsbroker run exited %d:\n%s", WEXITSTATUS(rc), out ? out : "");
	if (out != NULL && strstr(out, "sed:") != NULL)
		fail_msg("sed complained:\n%s", out);
	free(out);
	text = fsbt_read_file(path, NULL);
	assert_string_equal(text, "NEW a\n");
	free(text);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
}

/* TMPDIR named a directory that did not exist yet (make demo's core): the
 * core silently took /tmp, and a home or workspace under /tmp became
 * scratch, with no asks and no backups. */
static void a_tmpdir_that_does_not_exist_is_refused_not_replaced_by_tmp(void **state)
{
	struct fixture *f = *state;
	char missing[PATH_MAX + 16], *out = NULL;
	int st;

	snprintf(missing, sizeof(missing), "%s/not-made-yet", f->root);
	setenv("TMPDIR", missing, 1);
	st = run_sh(f, NULL, "echo ran", &out);
	setenv("TMPDIR", f->tmp, 1);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 125);
	assert_non_null(strstr(out, "TMPDIR"));
	assert_non_null(strstr(out, missing));
	assert_null(strstr(out, "ran\n"));
	free(out);
}

/* Bytes of the regular files under `dir` whose inode is none of `ino[n]`:
 * what the store copied (a kept inode is a file of the workspace). */
static long long copied_bytes(const char *dir, const ino_t *ino, int n)
{
	char path[PATH_MAX * 2];
	struct dirent *de;
	long long sum = 0;
	struct stat st;
	DIR *d = opendir(dir);

	if (d == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		bool own = false;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (lstat(path, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			sum += copied_bytes(path, ino, n);
			continue;
		}
		for (int i = 0; i < n; i++)
			own = own || st.st_ino == ino[i];
		if (S_ISREG(st.st_mode) && !own)
			sum += st.st_size;
	}
	closedir(d);
	return sum;
}

/*
 * chmod -R and rm -rf under fsbroker run: the supervisor journals the old
 * modes and keeps each deleted file's inode by link (through the core's own
 * view of the workspace, not the sandbox's bind mount, which link(2) cannot
 * cross), so the store copies no byte; one restore gives the tree back,
 * modes and file times included.
 */
static void chmod_r_and_rm_rf_copy_no_content_and_restore_exactly(void **state)
{
	struct fixture *f = *state;
	enum { N = 20 };
	struct fsbt_tree before, restored;
	char why[512], diff[2048], path[PATH_MAX * 2], name[32], *out = NULL;
	ino_t ino[2 * N];
	struct stat st;
	int rc;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	for (int t = 0; t < 2; t++) {
		snprintf(path, sizeof(path), "%s/%s", f->ws, t ? "gone" : "modes");
		assert_int_equal(mkdir(path, 0755), 0);
		for (int i = 0; i < N; i++) {
			snprintf(name, sizeof(name), "%s/f%02d", t ? "gone" : "modes", i);
			fsbt_put(f->ws, name, "four kilobytes would do, these bytes are enough\n");
			snprintf(path, sizeof(path), "%s/%s", f->ws, name);
			assert_int_equal(chmod(path, 0644), 0);
			assert_int_equal(stat(path, &st), 0);
			ino[t * N + i] = st.st_ino;
		}
	}
	assert_int_equal(fsbt_tree_snap(f->ws, &before), 0);
	rc = run_sh(f, NULL, "chmod -R go-r modes && rm -rf gone", &out);
	if (rc != 0)
		fail_msg("fsbroker run exited 0x%x:\n%s", (unsigned)rc, out ? out : "");
	free(out);
	snprintf(path, sizeof(path), "%s/modes/f00", f->ws);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	snprintf(path, sizeof(path), "%s/gone", f->ws);
	assert_int_equal(access(path, F_OK), -1);
	snprintf(path, sizeof(path), "%s/sessions/s/modify_backup/objects", f->state);
	assert_int_equal(copied_bytes(path, ino, 2 * N), 0);

	out = NULL;
	rc = fsbt_run((char *[]){ (char *)fsbt_binary(), "backup", "restore", "--last",
				  "--state-dir", f->state, "--session", "s", NULL }, &out);
	if (rc != 0)
		fail_msg("restore exited 0x%x:\n%s", (unsigned)rc, out ? out : "");
	free(out);
	assert_int_equal(fsbt_tree_snap(f->ws, &restored), 0);
	if (fsbt_tree_diff(&before, &restored, FSBT_TREE_MTIME, diff, sizeof(diff)) != 0)
		fail_msg("the workspace is not as it was:\n%s", diff);
	fsbt_tree_free(&before);
	fsbt_tree_free(&restored);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(changes_land_and_one_restore_takes_them_back,
						setup, teardown),
		cmocka_unit_test_setup_teardown(a_write_the_pack_denies_fails_and_the_file_stays,
						setup, teardown),
		cmocka_unit_test_setup_teardown(the_exit_status_is_the_commands, setup, teardown),
		cmocka_unit_test_setup_teardown(sed_in_place_keeps_the_mode_quietly, setup, teardown),
		cmocka_unit_test_setup_teardown(
			chmod_r_and_rm_rf_copy_no_content_and_restore_exactly, setup, teardown),
		cmocka_unit_test_setup_teardown(a_bad_flag_exits_125_with_a_sentence, setup,
						teardown),
		cmocka_unit_test_setup_teardown(explain_prints_the_plan_and_runs_nothing, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			a_tmpdir_that_does_not_exist_is_refused_not_replaced_by_tmp, setup, teardown),
	};

	return fsbt_run_group(tests, NULL, NULL);
}
