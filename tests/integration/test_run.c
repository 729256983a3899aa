/*
 * test_run.c — `fsbroker run` with its embedded core, end to end: bubblewrap,
 * fsbroker-init and the supervisor around a shell command; the changes it
 * makes land and one restore takes them back; the pack's refusals hold;
 * CMD's exit status and fsbroker run's own (125) come out as documented.
 */
#include "run_fixture.h"

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
	assert_non_null(strstr(out, "fsbroker run: unknown option '--no-such-flag'"));
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(changes_land_and_one_restore_takes_them_back,
						setup, teardown),
		cmocka_unit_test_setup_teardown(a_write_the_pack_denies_fails_and_the_file_stays,
						setup, teardown),
		cmocka_unit_test_setup_teardown(the_exit_status_is_the_commands, setup, teardown),
		cmocka_unit_test_setup_teardown(sed_in_place_keeps_the_mode_quietly, setup, teardown),
		cmocka_unit_test_setup_teardown(a_bad_flag_exits_125_with_a_sentence, setup,
						teardown),
		cmocka_unit_test_setup_teardown(explain_prints_the_plan_and_runs_nothing, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			a_tmpdir_that_does_not_exist_is_refused_not_replaced_by_tmp, setup, teardown),
	};

	return fsbt_run_group(tests, NULL, NULL);
}
