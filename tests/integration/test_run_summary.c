/*
 * test_run_summary.c — what `fsbroker run` tells a program about a run: one
 * JSON object on --summary-fd (parsed here with cJSON) naming the changes,
 * the refusals with their rules and the calls waiting for approval, with
 * nothing of fsbroker run's on stderr and nothing of it on CMD's stdout;
 * and CMD's environment, which is the pack's env.pass and nothing else.
 */
#include "run_fixture.h"

#include <glob.h>

#include "proto_json.h"

#define SUMMARY_FD_ARG "5"

static bool has_string(const cJSON *arr, const char *want)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, arr)
		if (cJSON_IsString(it) && strcmp(it->valuestring, want) == 0)
			return true;
	return false;
}

/* The entry of `arr` whose "path" is `path`, or NULL. */
static const cJSON *entry_for(const cJSON *arr, const char *path)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, arr)
		if (strcmp(fsbt_str(it, "path"), path) == 0)
			return it;
	return NULL;
}

static void summary_fd_gets_one_json_object(void **state)
{
	struct fixture *f = *state;
	char why[512], notes[PATH_MAX + 16], a[PATH_MAX + 16];
	struct runproc p;
	const cJSON *e;
	cJSON *s;
	int st;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	snprintf(notes, sizeof(notes), "%s/notes.txt", f->home);
	snprintf(a, sizeof(a), "%s/a.txt", f->ws);
	fsbt_write_file(notes, "notes\n");
	run_start((char *[]){ (char *)fsbt_binary(), "run", "--workspace", f->ws, "--state-dir",
			      f->state, "--session", "s", "--tool-call", "tc-sum-1",
			      "--summary-fd", SUMMARY_FD_ARG, "--", "sh", "-c",
			      "echo out-line; echo new > a.txt; echo x > ~/.ssh/id_ed25519; "
			      "echo y > ~/notes.txt; exit 3", NULL }, false, &p);
	st = run_finish(&p);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 3)
		fail_msg("wait status 0x%x; stderr:\n%s", (unsigned)st, p.ebuf ? p.ebuf : "");
	/* CMD's stdout is CMD's alone; stderr has CMD's complaints only. */
	assert_non_null(p.obuf);
	assert_string_equal(p.obuf, "out-line\n");
	if (p.ebuf != NULL && strstr(p.ebuf, "fsbroker run") != NULL)
		fail_msg("fsbroker run wrote on stderr with --summary-fd:\n%s", p.ebuf);

	s = run_summary(&p);
	assert_int_equal((int)fsbt_num(s, "exitStatus"), 3);
	assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(s, "signal")));
	assert_string_equal(fsbt_str(s, "session"), "s");
	assert_string_equal(fsbt_str(s, "toolCall"), "tc-sum-1");
	assert_string_equal(fsbt_str(s, "mode"), "embedded");
	assert_true(fsbt_num(s, "cycle") >= 1);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s, "cycleSealed")));
	assert_true(has_string(cJSON_GetObjectItemCaseSensitive(s, "changed"), a));
	assert_true(fsbt_num(s, "backedUp") >= 1);

	e = entry_for(cJSON_GetObjectItemCaseSensitive(s, "denied"), f->key);
	if (e == NULL)
		fail_msg("the key's refusal is not in denied: %s", p.sbuf);
	assert_string_equal(fsbt_str(e, "rule"), "denyRead ~/.ssh/**");
	/* Inside, the masked directory is empty: the write is a create. */
	assert_string_equal(fsbt_str(e, "op"), "create");

	e = entry_for(cJSON_GetObjectItemCaseSensitive(s, "waiting"), notes);
	if (e == NULL)
		fail_msg("the write to notes.txt is not in waiting: %s", p.sbuf);
	assert_string_equal(fsbt_str(e, "rule"), "ask.modify ~/**");
	assert_true(fsbt_starts(fsbt_str(e, "blockId"), "blk-"));
	assert_non_null(strstr(fsbt_str(e, "approveCommand"), "fsbroker approve --session s "));
	assert_non_null(strstr(fsbt_str(e, "approveCommand"), fsbt_str(e, "blockId")));

	assert_true(fsbt_starts(fsbt_str(s, "restoreCommand"), "fsbroker backup restore "));
	assert_true(fsbt_starts(fsbt_str(s, "rerunCommand"), "fsbroker run "));
	assert_non_null(strstr(fsbt_str(s, "rerunCommand"), "--session s "));
	cJSON_Delete(s);
	run_free(&p);
}

/* Each line of every file `pattern` (a glob, under `dir`) matches is valid
 * UTF-8, or the test fails naming it; at least one file matches. */
static void expect_utf8_lines(const char *dir, const char *pattern)
{
	char glob_text[PATH_MAX * 2];
	glob_t g;

	snprintf(glob_text, sizeof(glob_text), "%s/%s", dir, pattern);
	assert_int_equal(glob(glob_text, 0, NULL, &g), 0);
	for (size_t i = 0; i < g.gl_pathc; i++) {
		char *text = fsbt_read_file(g.gl_pathv[i], NULL), *line, *save = NULL;

		assert_non_null(text);
		for (line = strtok_r(text, "\n", &save); line != NULL;
		     line = strtok_r(NULL, "\n", &save))
			if (!fsb_utf8_valid(line, strlen(line)))
				fail_msg("%s holds a line that is not UTF-8: %s", g.gl_pathv[i], line);
		free(text);
	}
	globfree(&g);
}

/* A file name that is not UTF-8 made the audit line's reason and the
 * summary object carry its raw bytes, which strict JSON readers reject. */
static void a_name_that_is_not_utf8_leaves_every_json_text_valid_utf8(void **state)
{
	struct fixture *f = *state;
	char why[512], want[PATH_MAX + 64], cmd[PATH_MAX * 2], *out;
	struct runproc p;
	const cJSON *e;
	cJSON *s;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	run_start((char *[]){ (char *)fsbt_binary(), "run", "--workspace", f->ws, "--state-dir",
			      f->state, "--session", "s", "--summary-fd", SUMMARY_FD_ARG, "--", "sh",
			      "-c", "n=$(printf 'caf\\351'); echo new > \"$n.txt\"; "
			      "echo x > ~/.ssh/\"$n\"; true", NULL }, false, &p);
	assert_int_equal(run_finish(&p), 0);
	assert_non_null(p.sbuf);
	if (!fsb_utf8_valid(p.sbuf, strlen(p.sbuf)))
		fail_msg("the summary is not UTF-8: %s", p.sbuf);
	s = run_summary(&p);
	/* A refusal names its file exactly, percent-encoded. */
	e = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(s, "denied"), 0);
	assert_non_null(e);
	snprintf(want, sizeof(want), "%s/.ssh/caf%%E9", f->home);
	assert_string_equal(fsbt_str(e, "pathBytes"), want);
	/* The plain list of changes has U+FFFD for the byte. */
	snprintf(want, sizeof(want), "%s/caf\xef\xbf\xbd.txt", f->ws);
	assert_true(has_string(cJSON_GetObjectItemCaseSensitive(s, "changed"), want));
	cJSON_Delete(s);
	run_free(&p);

	/* The audit log, the journal, and the CLI's --json. */
	expect_utf8_lines(f->state, "audit/*.jsonl");
	expect_utf8_lines(f->state, "sessions/*/modify_backup/cycles/*/journal.jsonl");
	for (int i = 0; i < 2; i++) {
		/* show: 0; diff: 1, there are differences. */
		snprintf(cmd, sizeof(cmd), "'%s' backup %s --state-dir '%s' --session s --last --json",
			 fsbt_binary(), i ? "diff" : "show", f->state);
		assert_int_equal(run_printed(cmd, &out), i ? 1 << 8 : 0);
		if (!fsb_utf8_valid(out, strlen(out)))
			fail_msg("backup %s --json is not UTF-8: %s", i ? "diff" : "show", out);
		free(out);
	}
}

/* CMD killed by a signal inside the sandbox: 128+N, as a shell reports it
 * (bubblewrap passes it on as its own exit status). */
static void a_killed_command_is_128_plus_its_signal(void **state)
{
	struct fixture *f = *state;
	char why[512];
	struct runproc p;
	cJSON *s;
	int st;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	run_start((char *[]){ (char *)fsbt_binary(), "run", "--workspace", f->ws, "--state-dir",
			      f->state, "--summary-fd", SUMMARY_FD_ARG, "--", "sh", "-c",
			      "kill -TERM $$", NULL }, false, &p);
	st = run_finish(&p);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 128 + SIGTERM);
	s = run_summary(&p);
	assert_int_equal((int)fsbt_num(s, "exitStatus"), 128 + SIGTERM);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(s, "changed")), 0);
	assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(s, "restoreCommand")));
	cJSON_Delete(s);
	run_free(&p);
}

/* fsbroker run's own failure: 125, a sentence, and an object on the fd. */
static void a_failed_run_still_writes_an_object(void **state)
{
	struct fixture *f = *state;
	char missing[PATH_MAX + 16];
	struct runproc p;
	cJSON *s;
	int st;

	snprintf(missing, sizeof(missing), "%s/no-such-dir", f->root);
	run_start((char *[]){ (char *)fsbt_binary(), "run", "--workspace", missing, "--state-dir",
			      f->state, "--summary-fd", SUMMARY_FD_ARG, "--", "true", NULL },
		  false, &p);
	st = run_finish(&p);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 125);
	assert_non_null(p.ebuf);
	assert_non_null(strstr(p.ebuf, "fsbroker run: workspace "));
	s = run_summary(&p);
	assert_int_equal((int)fsbt_num(s, "exitStatus"), 125);
	assert_non_null(strstr(fsbt_str(s, "error"), "no-such-dir"));
	cJSON_Delete(s);
	run_free(&p);

	/* CMD's own descriptors cannot carry the summary. */
	run_start((char *[]){ (char *)fsbt_binary(), "run", "--summary-fd", "1", "--", "true",
			      NULL }, false, &p);
	st = run_finish(&p);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 125);
	assert_non_null(strstr(p.ebuf, "--summary-fd needs a descriptor number of 3 or more"));
	run_free(&p);
}

/* echo the two variables inside a run with `rules` (NULL: the default). */
static char *env_inside(struct fixture *f, const char *rules)
{
	char *argv[16], *text;
	struct runproc p;
	int n = 0, st;

	argv[n++] = (char *)fsbt_binary();
	argv[n++] = "run";
	argv[n++] = "--workspace";
	argv[n++] = f->ws;
	argv[n++] = "--state-dir";
	argv[n++] = f->state;
	if (rules != NULL) {
		argv[n++] = "--rules";
		argv[n++] = (char *)rules;
	}
	argv[n++] = "--";
	argv[n++] = "sh";
	argv[n++] = "-c";
	argv[n++] = "echo \"kept=$FSBT_KEPT dropped=$FSBT_DROPPED home=$HOME\"";
	argv[n] = NULL;
	run_start(argv, false, &p);
	st = run_finish(&p);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("wait status 0x%x; stderr:\n%s", (unsigned)st, p.ebuf ? p.ebuf : "");
	text = strdup(p.obuf ? p.obuf : "");
	run_free(&p);
	return text;
}

static void the_environment_is_the_packs_env_pass(void **state)
{
	struct fixture *f = *state;
	char why[512], pack[PATH_MAX + 32], want[PATH_MAX + 64], *out;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	/* The default pack's list plus one name. */
	snprintf(pack, sizeof(pack), "%s/envpack.lua", f->rules);
	fsbt_write_file(pack, "return { name = \"envpack\", include = { \"default\" },\n"
			      "  env = { pass = { \"FSBT_KEPT\" } } }\n");
	setenv("FSBT_KEPT", "yes", 1);
	setenv("FSBT_DROPPED", "no", 1);
	snprintf(want, sizeof(want), "kept=yes dropped= home=%s\n", f->home);
	out = env_inside(f, pack);
	assert_string_equal(out, want);
	free(out);
	/* The default pack does not name FSBT_KEPT: it stays outside. */
	snprintf(want, sizeof(want), "kept= dropped= home=%s\n", f->home);
	out = env_inside(f, NULL);
	assert_string_equal(out, want);
	free(out);
	unsetenv("FSBT_KEPT");
	unsetenv("FSBT_DROPPED");
}

/*
 * Which network a run had is said where a reader looks: `network` in the
 * --summary-fd object, a line of the text summary, and --explain, which
 * also names where it came from (the pack or --network). network none
 * without namespaces is refused: there is nothing to cut the network with.
 */
static void the_summary_and_explain_name_the_network(void **state)
{
	struct fixture *f = *state;
	char why[512], *out = NULL;
	struct runproc p;
	cJSON *s;
	int st;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	run_start((char *[]){ (char *)fsbt_binary(), "run", "--workspace", f->ws, "--state-dir",
			      f->state, "--session", "s", "--network", "none", "--summary-fd",
			      SUMMARY_FD_ARG, "--", "true", NULL }, false, &p);
	st = run_finish(&p);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	s = run_summary(&p);
	assert_string_equal(fsbt_str(s, "network"), "none");
	assert_non_null(strstr(fsbt_str(s, "rerunCommand"), "--network none"));
	cJSON_Delete(s);
	run_free(&p);
	run_start((char *[]){ (char *)fsbt_binary(), "run", "--workspace", f->ws, "--state-dir",
			      f->state, "--session", "s", "--summary-fd", SUMMARY_FD_ARG, "--",
			      "true", NULL }, false, &p);
	st = run_finish(&p);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	s = run_summary(&p);
	assert_string_equal(fsbt_str(s, "network"), "host");
	cJSON_Delete(s);
	run_free(&p);

	st = run_sh(f, "--network=none", "true", &out);
	assert_int_equal(st, 0);
	if (strstr(out, "fsbroker run: network: none (a namespace with only a loopback)") == NULL)
		fail_msg("the text summary does not name the network:\n%s", out);
	free(out);
	st = run_sh(f, "--explain", NULL, &out);
	assert_int_equal(st, 0);
	if (strstr(out, "network: host (the pack's network setting)") == NULL ||
	    strstr(out, "--unshare-net") != NULL)
		fail_msg("--explain of the default pack:\n%s", out);
	free(out);
	st = fsbt_run((char *[]){ (char *)fsbt_binary(), "run", "--workspace", f->ws,
				  "--state-dir", f->state, "--network", "none", "--explain", NULL },
		      &out);
	assert_int_equal(st, 0);
	if (strstr(out, "network: none (--network)") == NULL || strstr(out, "--unshare-net") == NULL)
		fail_msg("--explain --network none:\n%s", out);
	free(out);

	st = run_sh(f, "--network=off", "true", &out);
	assert_int_equal(st, 125 << 8);
	assert_non_null(strstr(out, "--network is host or none, not 'off'"));
	free(out);
	st = fsbt_run((char *[]){ (char *)fsbt_binary(), "run", "--workspace", f->ws,
				  "--state-dir", f->state, "--session", "s", "--simulate-missing",
				  "userns", "--without-namespaces", "--network", "none", "--",
				  "true", NULL }, &out);
	assert_int_equal(st, 125 << 8);
	if (strstr(out, "network none (--network) needs a network namespace") == NULL)
		fail_msg("network none without namespaces:\n%s", out);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(summary_fd_gets_one_json_object, setup, teardown),
		cmocka_unit_test_setup_teardown(a_killed_command_is_128_plus_its_signal, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_failed_run_still_writes_an_object, setup,
						teardown),
		cmocka_unit_test_setup_teardown(the_environment_is_the_packs_env_pass, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			a_name_that_is_not_utf8_leaves_every_json_text_valid_utf8, setup, teardown),
		cmocka_unit_test_setup_teardown(the_summary_and_explain_name_the_network, setup,
						teardown),
	};

	return fsbt_run_group(tests, NULL, NULL);
}
