/*
 * test_run_inline.c — inline approvals (`fsbroker run --approvals inline
 * --control-fd N`): a write the pack answers `ask` waits while the host,
 * here the test on the control socket, gets a `prompt` event; Approve lets
 * that very call through, Deny refuses it, and no answer within the
 * timeout refuses it too, leaving the block for `fsbroker approve`.
 */
#include "run_fixture.h"

/* One line from the control socket, parsed; NULL after 30 s or at EOF. */
static cJSON *read_event(int fd)
{
	char line[8192];
	size_t len = 0;

	while (len + 1 < sizeof(line)) {
		struct pollfd p = { fd, POLLIN, 0 };
		ssize_t n;

		if (poll(&p, 1, 30000) <= 0)
			return NULL;
		n = read(fd, line + len, 1);
		if (n <= 0)
			return NULL;
		if (line[len] == '\n') {
			line[len] = '\0';
			return cJSON_Parse(line);
		}
		len++;
	}
	return NULL;
}

static void send_line(int fd, const char *line)
{
	size_t len = strlen(line);

	assert_int_equal(write(fd, line, len), (ssize_t)len);
}

/* Approve the prompt `ev` once on the control socket (request `id`); the
 * answer must be ok. */
static void approve_once(const struct runproc *p, const cJSON *ev, int id)
{
	char line[256];
	cJSON *reply;

	snprintf(line, sizeof(line), "{\"id\":%d,\"command\":\"Approve\",\"blockId\":\"%s\","
		 "\"scope\":\"once\"}\n", id, fsbt_str(ev, "blockId"));
	send_line(p->ctl, line);
	reply = read_event(p->ctl);
	assert_non_null(reply);
	assert_int_equal((int)fsbt_num(reply, "id"), id);
	assert_true(fsbt_ok(reply));
	cJSON_Delete(reply);
}

/* run_finish() of a run that must exit 0. */
static void finish_ok(struct runproc *p)
{
	int st = run_finish(p);

	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("wait status 0x%x; stderr:\n%s", (unsigned)st, p->ebuf ? p->ebuf : "");
}

/* Start a run writing ~/notes.txt with inline approvals. */
static void start_inline(struct fixture *f, const char *timeout, struct runproc *p)
{
	run_start((char *[]){ (char *)fsbt_binary(), "run", "--workspace", f->ws, "--state-dir",
			      f->state, "--session", "s", "--tool-call", "tc-inline",
			      "--approvals", "inline", "--control-fd", "6", "--approval-timeout",
			      (char *)timeout, "--summary-fd", "5", "--", "sh", "-c",
			      "echo answered > ~/notes.txt && echo written", NULL }, true, p);
}

/* The prompt event for notes.txt; fails the test otherwise. */
static cJSON *expect_prompt(struct fixture *f, struct runproc *p)
{
	char notes[PATH_MAX + 16];
	cJSON *ev = read_event(p->ctl);

	snprintf(notes, sizeof(notes), "%s/notes.txt", f->home);
	if (ev == NULL) {
		kill(p->pid, SIGKILL);
		run_finish(p);
		fail_msg("no prompt event on the control fd; stderr:\n%s", p->ebuf ? p->ebuf : "");
	}
	assert_string_equal(fsbt_str(ev, "event"), "prompt");
	assert_string_equal(fsbt_str(ev, "path"), notes);
	assert_string_equal(fsbt_str(ev, "op"), "write");
	assert_string_equal(fsbt_str(ev, "rule"), "ask.modify ~/**");
	assert_string_equal(fsbt_str(ev, "toolCallId"), "tc-inline");
	assert_true(fsbt_starts(fsbt_str(ev, "blockId"), "blk-"));
	return ev;
}

static char *notes_text(struct fixture *f)
{
	char path[PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s/notes.txt", f->home);
	return fsbt_read_file(path, NULL);
}

static void approve_lets_the_waiting_call_through(void **state)
{
	struct fixture *f = *state;
	char why[512], notes[PATH_MAX + 16];
	struct runproc p;
	cJSON *ev, *s;
	char *text;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	snprintf(notes, sizeof(notes), "%s/notes.txt", f->home);
	fsbt_write_file(notes, "before\n");
	start_inline(f, "60", &p);
	ev = expect_prompt(f, &p);
	/* The call waits: nothing is written before the answer. */
	text = notes_text(f);
	assert_string_equal(text, "before\n");
	free(text);
	approve_once(&p, ev, 7);
	cJSON_Delete(ev);
	finish_ok(&p);
	assert_string_equal(p.obuf, "written\n");
	text = notes_text(f);
	assert_string_equal(text, "answered\n");
	free(text);
	s = run_summary(&p);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(s, "waiting")), 0);
	assert_true(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(s, "changed")) == 1);
	cJSON_Delete(s);
	run_free(&p);
}

static void deny_refuses_the_waiting_call(void **state)
{
	struct fixture *f = *state;
	char why[512], notes[PATH_MAX + 16], line[256];
	struct runproc p;
	cJSON *ev, *reply, *s;
	const cJSON *d;
	char *text;
	int st;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	snprintf(notes, sizeof(notes), "%s/notes.txt", f->home);
	fsbt_write_file(notes, "before\n");
	start_inline(f, "60", &p);
	ev = expect_prompt(f, &p);
	snprintf(line, sizeof(line), "{\"id\":8,\"command\":\"Deny\",\"blockId\":\"%s\"}\n",
		 fsbt_str(ev, "blockId"));
	send_line(p.ctl, line);
	reply = read_event(p.ctl);
	assert_non_null(reply);
	assert_true(fsbt_ok(reply));
	cJSON_Delete(reply);
	cJSON_Delete(ev);
	st = run_finish(&p);
	assert_true(WIFEXITED(st));
	assert_int_not_equal(WEXITSTATUS(st), 0);
	assert_null(p.obuf);
	assert_non_null(strstr(p.ebuf, "Permission denied"));
	text = notes_text(f);
	assert_string_equal(text, "before\n");
	free(text);
	/* Listed as refused by the host, not as waiting. */
	s = run_summary(&p);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(s, "waiting")), 0);
	d = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(s, "denied"), 0);
	assert_non_null(d);
	assert_string_equal(fsbt_str(d, "path"), notes);
	assert_non_null(strstr(fsbt_str(d, "rule"), "denied by the host"));
	cJSON_Delete(s);
	run_free(&p);
}

/* No answer: the timeout refuses the call, and the block is left for the
 * deferred flow. The test asserts the outcome, not how long it took. */
static void no_answer_within_the_timeout_refuses(void **state)
{
	struct fixture *f = *state;
	char why[512], notes[PATH_MAX + 16], block[PATH_MAX * 2];
	struct runproc p;
	cJSON *ev, *s;
	const cJSON *w;
	char *text;
	int st;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	snprintf(notes, sizeof(notes), "%s/notes.txt", f->home);
	fsbt_write_file(notes, "before\n");
	start_inline(f, "1", &p);
	ev = expect_prompt(f, &p);
	st = run_finish(&p);
	assert_true(WIFEXITED(st));
	assert_int_not_equal(WEXITSTATUS(st), 0);
	text = notes_text(f);
	assert_string_equal(text, "before\n");
	free(text);
	s = run_summary(&p);
	w = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(s, "waiting"), 0);
	assert_non_null(w);
	assert_string_equal(fsbt_str(w, "blockId"), fsbt_str(ev, "blockId"));
	snprintf(block, sizeof(block), "%s/sessions/s/approvals/%s.block", f->state,
		 fsbt_str(ev, "blockId"));
	assert_int_equal(access(block, F_OK), 0);
	cJSON_Delete(s);
	cJSON_Delete(ev);
	run_free(&p);
}

/*
 * A call the supervisor performs as a host operation (unlink) waits the
 * same way: the prompt names it, Approve lets it through, and its backup
 * is in the cycle.
 */
static void a_delete_waits_for_the_host_too(void **state)
{
	struct fixture *f = *state;
	char why[512], notes[PATH_MAX + 16];
	struct runproc p;
	cJSON *ev;
	int st;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	snprintf(notes, sizeof(notes), "%s/notes.txt", f->home);
	fsbt_write_file(notes, "keep me\n");
	run_start((char *[]){ (char *)fsbt_binary(), "run", "--workspace", f->ws, "--state-dir",
			      f->state, "--session", "s", "--tool-call", "tc-inline",
			      "--approvals", "inline", "--control-fd", "6", "--summary-fd", "5",
			      "--", "rm", "-f", notes, NULL }, true, &p);
	ev = read_event(p.ctl);
	if (ev == NULL) {
		kill(p.pid, SIGKILL);
		run_finish(&p);
		fail_msg("no prompt event; stderr:\n%s", p.ebuf ? p.ebuf : "");
	}
	assert_string_equal(fsbt_str(ev, "event"), "prompt");
	assert_string_equal(fsbt_str(ev, "path"), notes);
	assert_string_equal(fsbt_str(ev, "op"), "delete");
	/* Waiting: the file is still there. */
	assert_int_equal(access(notes, F_OK), 0);
	approve_once(&p, ev, 8);
	cJSON_Delete(ev);
	finish_ok(&p);
	assert_int_equal(access(notes, F_OK), -1);
	run_free(&p);
	/* The cycle holds it: a restore brings it back. */
	st = fsbt_run((char *[]){ (char *)fsbt_binary(), "backup", "restore", "--last",
				  "--state-dir", f->state, "--session", "s", NULL }, NULL);
	assert_int_equal(st, 0);
	{
		char *text = fsbt_read_file(notes, NULL);

		assert_string_equal(text, "keep me\n");
		free(text);
	}
}

/*
 * While a write waits for the host, the run's other calls go on: here a
 * rename, which runs alone, completes before the host answers. Before the
 * waiting open gave back its share of the work gate, the rename (and every
 * call after it) waited for the answer or the timeout.
 */
static void a_waiting_write_does_not_hold_up_a_rename(void **state)
{
	struct fixture *f = *state;
	char why[512], notes[PATH_MAX + 16], go[PATH_MAX + 16], moved[PATH_MAX + 16];
	char script[3 * PATH_MAX + 256];
	struct runproc p;
	cJSON *ev;
	bool renamed = false;
	int i;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	snprintf(notes, sizeof(notes), "%s/notes.txt", f->home);
	snprintf(go, sizeof(go), "%s/go", f->ws);
	snprintf(moved, sizeof(moved), "%s/moved-while-waiting.txt", f->ws);
	fsbt_write_file(notes, "before\n");
	snprintf(script, sizeof(script), "%s/to-move.txt", f->ws);
	fsbt_write_file(script, "a\n");
	snprintf(script, sizeof(script),
		 "echo answered > ~/notes.txt & "
		 "while [ ! -e %s ]; do sleep 0.05; done; mv %s/to-move.txt %s; wait", go, f->ws, moved);
	run_start((char *[]){ (char *)fsbt_binary(), "run", "--workspace", f->ws, "--state-dir",
			      f->state, "--session", "s", "--tool-call", "tc-inline",
			      "--approvals", "inline", "--control-fd", "6", "--summary-fd", "5",
			      "--", "sh", "-c", script, NULL }, true, &p);
	ev = expect_prompt(f, &p);
	fsbt_write_file(go, "");
	/* The write is waiting; the rename should not. 20 s only detects a hang. */
	for (i = 0; i < 400 && !renamed; i++) {
		renamed = access(moved, F_OK) == 0;
		if (!renamed)
			usleep(50 * 1000);
	}
	approve_once(&p, ev, 9);
	cJSON_Delete(ev);
	finish_ok(&p);
	run_free(&p);
	assert_true(renamed);
	{
		char *text = notes_text(f);

		/* The approved write went through after the rename. */
		assert_string_equal(text, "answered\n");
		free(text);
	}
}

static void inline_needs_a_control_fd(void **state)
{
	struct fixture *f = *state;
	char *out = NULL;
	int st;

	st = run_sh(f, "--approvals=inline", "true", &out);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 125);
	assert_non_null(strstr(out, "--approvals inline needs --control-fd N"));
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(approve_lets_the_waiting_call_through, setup,
						teardown),
		cmocka_unit_test_setup_teardown(deny_refuses_the_waiting_call, setup, teardown),
		cmocka_unit_test_setup_teardown(no_answer_within_the_timeout_refuses, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_delete_waits_for_the_host_too, setup, teardown),
		cmocka_unit_test_setup_teardown(a_waiting_write_does_not_hold_up_a_rename, setup,
						teardown),
		cmocka_unit_test_setup_teardown(inline_needs_a_control_fd, setup, teardown),
	};

	return fsbt_run_group(tests, NULL, NULL);
}
