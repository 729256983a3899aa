/*
 * test_run_approve.c — deferred approvals, the whole loop a person follows:
 * a run's write the pack answers `ask` fails with EACCES and its summary
 * names the block with the `fsbroker approve` command and the rerun
 * command; running those two (as printed, through a shell) lets the write
 * through; a once approval is then used up, so a third run asks again; a
 * session approval keeps allowing it.
 */
#include "run_fixture.h"


/* One run writing ~/notes.txt with --summary-fd: its summary. */
static cJSON *write_notes(struct fixture *f, const char *text, int *exit_status)
{
	char script[128];
	struct runproc p;
	cJSON *s;
	int st;

	snprintf(script, sizeof(script), "echo %s > ~/notes.txt", text);
	run_start((char *[]){ (char *)fsbt_binary(), "run", "--workspace", f->ws, "--state-dir",
			      f->state, "--session", "s", "--summary-fd", "5", "--", "sh", "-c",
			      script, NULL }, false, &p);
	st = run_finish(&p);
	assert_true(WIFEXITED(st));
	*exit_status = WEXITSTATUS(st);
	s = run_summary(&p);
	run_free(&p);
	return s;
}

/* The one call the summary lists as waiting; fails the test otherwise. */
static const cJSON *the_waiting(const cJSON *s)
{
	const cJSON *w = cJSON_GetObjectItemCaseSensitive(s, "waiting");

	if (cJSON_GetArraySize(w) != 1)
		fail_msg("expected one call waiting for approval: %s", cJSON_PrintUnformatted(s));
	return cJSON_GetArrayItem(w, 0);
}

static char *notes_text(struct fixture *f)
{
	char path[PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s/notes.txt", f->home);
	return fsbt_read_file(path, NULL);
}

static void approve_then_rerun_lets_the_write_through_once(void **state)
{
	struct fixture *f = *state;
	char why[512], notes[PATH_MAX + 16], approval[PATH_MAX * 2], block[64];
	char approve[PATH_MAX * 2], rerun[PATH_MAX * 4], *out = NULL, *text;
	const cJSON *w;
	cJSON *s;
	int ex, st;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	snprintf(notes, sizeof(notes), "%s/notes.txt", f->home);
	fsbt_write_file(notes, "before\n");

	/* 1. The pack asks: EACCES inside, the file unchanged, the block named. */
	s = write_notes(f, "first", &ex);
	assert_int_not_equal(ex, 0);
	text = notes_text(f);
	assert_string_equal(text, "before\n");
	free(text);
	w = the_waiting(s);
	assert_string_equal(fsbt_str(w, "path"), notes);
	assert_string_equal(fsbt_str(w, "rule"), "ask.modify ~/**");
	snprintf(block, sizeof(block), "%s", fsbt_str(w, "blockId"));
	snprintf(approve, sizeof(approve), "%s", fsbt_str(w, "approveCommand"));
	snprintf(rerun, sizeof(rerun), "%s", fsbt_str(s, "rerunCommand"));
	cJSON_Delete(s);

	/* 2. The approval, as the summary printed it. */
	st = run_printed(approve, &out);
	if (st != 0)
		fail_msg("`%s` exited 0x%x:\n%s", approve, (unsigned)st, out ? out : "");
	assert_non_null(strstr(out, block));
	free(out);
	out = NULL;
	snprintf(approval, sizeof(approval), "%s/sessions/s/approvals/%s.approval", f->state,
		 block);
	assert_int_equal(access(approval, F_OK), 0);
	/* Approving it again says so. */
	st = run_printed(approve, &out);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) != 0);
	assert_non_null(strstr(out, "approved already"));
	free(out);
	out = NULL;

	/* 3. The same run again: the write goes through, the approval is used up. */
	st = run_printed(rerun, &out);
	if (st != 0)
		fail_msg("`%s` exited 0x%x:\n%s", rerun, (unsigned)st, out ? out : "");
	free(out);
	out = NULL;
	text = notes_text(f);
	assert_string_equal(text, "first\n");
	free(text);
	assert_int_equal(access(approval, F_OK), -1);

	/* 4. A third run: once means once; it asks again. */
	s = write_notes(f, "third", &ex);
	assert_int_not_equal(ex, 0);
	text = notes_text(f);
	assert_string_equal(text, "first\n");
	free(text);
	w = the_waiting(s);
	assert_string_not_equal(fsbt_str(w, "blockId"), block);
	cJSON_Delete(s);
}

static void a_session_approval_keeps_allowing(void **state)
{
	struct fixture *f = *state;
	char why[512], notes[PATH_MAX + 16], approve[PATH_MAX * 2], *out = NULL, *text;
	cJSON *s;
	int ex, st;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	snprintf(notes, sizeof(notes), "%s/notes.txt", f->home);
	fsbt_write_file(notes, "before\n");
	s = write_notes(f, "one", &ex);
	assert_int_not_equal(ex, 0);
	snprintf(approve, sizeof(approve), "%s --scope session",
		 fsbt_str(the_waiting(s), "approveCommand"));
	cJSON_Delete(s);
	st = run_printed(approve, &out);
	if (st != 0)
		fail_msg("`%s` exited 0x%x:\n%s", approve, (unsigned)st, out ? out : "");
	free(out);
	for (int i = 0; i < 2; i++) {
		s = write_notes(f, i == 0 ? "two" : "three", &ex);
		assert_int_equal(ex, 0);
		assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(s, "waiting")),
				 0);
		cJSON_Delete(s);
	}
	text = notes_text(f);
	assert_string_equal(text, "three\n");
	free(text);
}

static void approve_refuses_what_it_cannot_find(void **state)
{
	struct fixture *f = *state;
	char *out = NULL;
	int st;

	st = fsbt_run((char *[]){ (char *)fsbt_binary(), "approve", "--session", "s",
				  "--state-dir", f->state, "blk-nothing-1", NULL }, &out);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 2);
	assert_non_null(strstr(out, "fsbroker approve: session s has no prompt block"));
	free(out);
	out = NULL;
	st = fsbt_run((char *[]){ (char *)fsbt_binary(), "approve", "--state-dir", f->state,
				  "--scope", "forever", "blk-x-1", NULL }, &out);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 2);
	assert_non_null(strstr(out, "--scope is once or session"));
	free(out);
	out = NULL;
	/* A path in place of an id reaches no file outside the state dir. */
	st = fsbt_run((char *[]){ (char *)fsbt_binary(), "approve", "--session", "s",
				  "--state-dir", f->state, "../../x", NULL }, &out);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 2);
	assert_non_null(strstr(out, "is not a block id"));
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(approve_then_rerun_lets_the_write_through_once,
						setup, teardown),
		cmocka_unit_test_setup_teardown(a_session_approval_keeps_allowing, setup, teardown),
		cmocka_unit_test_setup_teardown(approve_refuses_what_it_cannot_find, setup,
						teardown),
	};

	return fsbt_run_group(tests, NULL, NULL);
}
