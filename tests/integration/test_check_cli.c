/*
 * test_check_cli.c — `fsbroker check` as an operator runs it: verdicts,
 * deciding rules, exit codes (0 allow, 1 deny, 3 ask, 2 error; the
 * strictest wins), --json, and pack errors that name file and line or field;
 * and the pack's self-tests, which a core runs once per content (check runs
 * them every time).
 */
#include "harness.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cJSON.h>

static char dir[PATH_MAX], home[PATH_MAX + 8], ws[PATH_MAX + 8], rules[PATH_MAX + 8];
static char tmp[PATH_MAX + 8];

struct run {
	int status;
	char out[65536];	/* stdout and stderr together */
};

/* Run fsbroker with argv (NULL-terminated) under HOME=<dir>/home. */
static void run_fsbroker(struct run *r, const char *const *argv)
{
	const char *bin = getenv("FSBROKER");
	char *args[32];
	int pipefd[2], n = 0, st;
	ssize_t got;
	size_t len = 0;
	pid_t pid;

	args[n++] = (char *)(bin != NULL ? bin : "build/fsbroker");
	for (int i = 0; argv[i] != NULL && n < 31; i++)
		args[n++] = (char *)argv[i];
	args[n] = NULL;
	assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(pipefd[1], 1);
		dup2(pipefd[1], 2);
		setenv("HOME", home, 1);
		/* ${tmp} of its own, so that HOME and the workspace are never
		 * inside it, wherever this test runs. */
		setenv("TMPDIR", tmp, 1);
		unsetenv("XDG_STATE_HOME");
		execv(args[0], args);
		_exit(127);
	}
	close(pipefd[1]);
	while ((got = read(pipefd[0], r->out + len, sizeof(r->out) - 1 - len)) > 0)
		len += (size_t)got;
	r->out[len] = '\0';
	close(pipefd[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	char path[PATH_MAX * 2];

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/fsb-check-test-XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(home, sizeof(home), "%s/home", dir);
	snprintf(ws, sizeof(ws), "%s/ws", dir);
	snprintf(rules, sizeof(rules), "%s/rules", dir);
	snprintf(tmp, sizeof(tmp), "%s/tmp", dir);
	mkdir(tmp, 0700);
	mkdir(home, 0700);
	mkdir(ws, 0700);
	mkdir(rules, 0700);
	snprintf(path, sizeof(path), "%s/.ssh", home);
	mkdir(path, 0700);
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_allow_exits_0_and_names_the_rule(void **state)
{
	char p[PATH_MAX * 2];
	struct run r;

	(void)state;
	snprintf(p, sizeof(p), "%s/src/main.c", ws);
	run_fsbroker(&r, (const char *[]){ "check", "--workspace", ws, "--op", "write", p, NULL });
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, "allow"));
	assert_non_null(strstr(r.out, "fsProfile.modify ${workspace}/**"));
}

static void test_credential_read_exits_1_with_its_rule(void **state)
{
	char p[PATH_MAX * 2];
	struct run r;

	(void)state;
	snprintf(p, sizeof(p), "%s/.ssh/id_ed25519", home);
	run_fsbroker(&r, (const char *[]){ "check", "--workspace", ws, "--op", "read", p, NULL });
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.out, "denyRead ~/.ssh/**"));
	assert_non_null(strstr(r.out, "to change it"));
}

static void test_home_write_exits_3_ask(void **state)
{
	char p[PATH_MAX * 2];
	struct run r;

	(void)state;
	snprintf(p, sizeof(p), "%s/notes.txt", home);
	run_fsbroker(&r, (const char *[]){ "check", "--workspace", ws, "--op", "write", p, NULL });
	assert_int_equal(r.status, 3);
	assert_non_null(strstr(r.out, "ask"));
}

static void test_strictest_verdict_sets_the_exit(void **state)
{
	char allow[PATH_MAX * 2], ask[PATH_MAX * 2], deny[PATH_MAX * 2];
	struct run r;

	(void)state;
	snprintf(allow, sizeof(allow), "%s/a.c", ws);
	snprintf(ask, sizeof(ask), "%s/notes.txt", home);
	snprintf(deny, sizeof(deny), "%s/.env", ws);
	run_fsbroker(&r, (const char *[]){ "check", "--workspace", ws, "--op", "write",
					   allow, ask, NULL });
	assert_int_equal(r.status, 3);
	run_fsbroker(&r, (const char *[]){ "check", "--workspace", ws, "--op", "write",
					   deny, allow, ask, NULL });
	assert_int_equal(r.status, 1);
	run_fsbroker(&r, (const char *[]){ "check", "--workspace", ws, "--op", "write",
					   ask, deny, NULL });
	assert_int_equal(r.status, 1);
}

static void test_json_output_lists_each_verdict(void **state)
{
	char allow[PATH_MAX * 2], deny[PATH_MAX * 2];
	cJSON *arr, *first, *second;
	struct run r;

	(void)state;
	snprintf(allow, sizeof(allow), "%s/a.c", ws);
	snprintf(deny, sizeof(deny), "%s/.aws/credentials", home);
	run_fsbroker(&r, (const char *[]){ "check", "--workspace", ws, "--json", "--op", "read",
					   allow, deny, NULL });
	assert_int_equal(r.status, 1);
	arr = cJSON_Parse(strchr(r.out, '['));
	assert_non_null(arr);
	assert_int_equal(cJSON_GetArraySize(arr), 2);
	first = cJSON_GetArrayItem(arr, 0);
	second = cJSON_GetArrayItem(arr, 1);
	assert_string_equal(cJSON_GetObjectItem(first, "decision")->valuestring, "allow");
	assert_string_equal(cJSON_GetObjectItem(second, "decision")->valuestring, "deny");
	assert_string_equal(cJSON_GetObjectItem(second, "op")->valuestring, "read");
	assert_non_null(strstr(cJSON_GetObjectItem(second, "rule")->valuestring, ".aws"));
	cJSON_Delete(arr);
}

static void test_syntax_error_exits_2_with_file_and_line(void **state)
{
	char pack[PATH_MAX * 2], expect[PATH_MAX * 2 + 8];
	struct run r;

	(void)state;
	snprintf(pack, sizeof(pack), "%s/broken.lua", rules);
	write_file(pack, "return {\n  name = \"broken\",\n  denyRead = { \"~/.ssh/**\" \n}\n");
	run_fsbroker(&r, (const char *[]){ "check", "--rules", pack, "--op", "read", "/etc/hosts",
					   NULL });
	assert_int_equal(r.status, 2);
	snprintf(expect, sizeof(expect), "broken.lua:");
	assert_non_null(strstr(r.out, expect));
}

static void test_wrong_field_type_names_the_field_path(void **state)
{
	char pack[PATH_MAX * 2];
	struct run r;

	(void)state;
	snprintf(pack, sizeof(pack), "%s/wrongtype.lua", rules);
	write_file(pack, "return { name = \"w\", fsProfile = { read = { \"/**\" }, modify = { 42 } } }\n");
	run_fsbroker(&r, (const char *[]){ "check", "--rules", pack, "--op", "read", "/etc/hosts",
					   NULL });
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.out, "wrongtype.lua"));
	assert_non_null(strstr(r.out, "fsProfile.modify[1]"));
}

static void test_failing_self_test_refuses_the_pack(void **state)
{
	char pack[PATH_MAX * 2];
	struct run r;

	(void)state;
	snprintf(pack, sizeof(pack), "%s/selftest.lua", rules);
	write_file(pack, "return { name = \"t\", fsProfile = { read = { \"/**\" } },\n"
		   "  tests = { { op = \"read\", path = \"/etc/hosts\", expect = \"deny\" } } }\n");
	run_fsbroker(&r, (const char *[]){ "check", "--rules", pack, "--op", "read", "/etc/hosts",
					   NULL });
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.out, "tests[1]"));
}

/* ---- self-tests once per content ---------------------------------------- */

#define CACHED "pack self-tests: passed before"

/* A pack whose self-test passes only while ${workspace} is the test's ws,
 * with an included pack holding `included_rule`. */
static void write_tested_pack(const char *included_rule)
{
	char top[PATH_MAX * 2], inc[PATH_MAX * 2], text[1024];

	snprintf(inc, sizeof(inc), "%s/inc.lua", rules);
	snprintf(text, sizeof(text), "return { name = \"inc\", %s }\n", included_rule);
	write_file(inc, text);
	snprintf(top, sizeof(top), "%s/tested.lua", rules);
	write_file(top, "return { name = \"tested\", include = { \"inc\" },\n"
		   "  fsProfile = { read = { \"/**\" }, modify = { \"${workspace}/**\" } },\n"
		   "  tests = { { op = \"write\", path = \"" "${workspace}/a\", expect = \"allow\" },\n"
		   "            { op = \"write\", path = \"/elsewhere/a\", expect = \"deny\" } } }\n");
}

/* `fsbroker run --explain` loads the pack as a run's core does, with the
 * state dir, and starts nothing. */
static void explain_run(struct run *r, const char *workspace)
{
	char top[PATH_MAX * 2], state_dir[PATH_MAX * 2];

	snprintf(top, sizeof(top), "%s/tested.lua", rules);
	snprintf(state_dir, sizeof(state_dir), "%s/state", dir);
	setenv("FSBROKER_LOG", "debug", 1);
	run_fsbroker(r, (const char *[]){ "run", "--rules", top, "--workspace", workspace,
					  "--state-dir", state_dir, "--explain", NULL });
	unsetenv("FSBROKER_LOG");
}

static void test_self_tests_run_once_per_content(void **state)
{
	char top[PATH_MAX * 2];
	struct run r;

	(void)state;
	write_tested_pack("denyModify = { \"${workspace}/zz\" }");
	explain_run(&r, ws);
	assert_int_equal(r.status, 0);
	assert_null(strstr(r.out, CACHED));
	explain_run(&r, ws);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out, CACHED));
	/* check is how an operator tests a pack: it runs them every time. */
	snprintf(top, sizeof(top), "%s/tested.lua", rules);
	setenv("FSBROKER_LOG", "debug", 1);
	run_fsbroker(&r, (const char *[]){ "check", "--rules", top, "--workspace", ws, "--op",
					   "read", "/etc/hosts", NULL });
	unsetenv("FSBROKER_LOG");
	assert_int_equal(r.status, 0);
	assert_null(strstr(r.out, CACHED));
}

/* The record names the exact bytes of every file: an included pack edited
 * so that the top pack's test fails is tested, and refused. */
static void test_an_edited_included_pack_is_tested_again_and_refused(void **state)
{
	struct run r;

	(void)state;
	write_tested_pack("denyModify = { \"${workspace}/zz\" }");
	explain_run(&r, ws);
	assert_int_equal(r.status, 0);
	explain_run(&r, ws);
	assert_non_null(strstr(r.out, CACHED));
	/* The same length, another meaning: the bytes count, not the size. */
	write_tested_pack("denyModify = { \"${workspace}/**\" }");
	explain_run(&r, ws);
	assert_int_equal(r.status, 125);
	assert_null(strstr(r.out, CACHED));
	assert_non_null(strstr(r.out, "tests[1]"));
}

/* The variables are part of the key: the same pack for another workspace
 * is tested again (its tests may name ${workspace}). */
static void test_the_same_pack_for_another_workspace_is_tested_again(void **state)
{
	char other[PATH_MAX * 2];
	struct run r;

	(void)state;
	write_tested_pack("denyModify = { \"${workspace}/zz\" }");
	explain_run(&r, ws);
	explain_run(&r, ws);
	assert_non_null(strstr(r.out, CACHED));
	snprintf(other, sizeof(other), "%s/other-ws", dir);
	mkdir(other, 0700);
	explain_run(&r, other);
	assert_int_equal(r.status, 0);
	assert_null(strstr(r.out, CACHED));
}

/* fsbroker-init runs first in every sandbox, the brokered clients in every
 * shell: no pack can let a command change them, even where it may write
 * everything around them (the binary's directory as the workspace). */
static void test_fsbroker_init_and_the_clients_are_protected_like_the_binary(void **state)
{
	const char *bin = getenv("FSBROKER");
	char real[PATH_MAX], dirp[PATH_MAX], init[PATH_MAX * 2], self[PATH_MAX * 2];
	char *slash;
	struct run r;

	(void)state;
	assert_non_null(realpath(bin != NULL ? bin : "build/fsbroker", real));
	snprintf(dirp, sizeof(dirp), "%s", real);
	slash = strrchr(dirp, '/');
	*slash = '\0';
	snprintf(init, sizeof(init), "%s/fsbroker-init", dirp);
	snprintf(self, sizeof(self), "%s", real);
	if (access(init, X_OK) != 0)
		skip();
	run_fsbroker(&r, (const char *[]){ "check", "--workspace", dirp, "--op", "write", init,
					   self, NULL });
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.out, "rule: protected fsbroker-init"));
	assert_non_null(strstr(r.out, "rule: protected fsbroker binary"));
	/* The clients themselves, when they were built; not what lies beside
	 * them in the build tree (toybox's own tests run there). */
	snprintf(init, sizeof(init), "%s/clients/zsh", dirp);
	snprintf(self, sizeof(self), "%s/clients/toybox-build/testdir-file", dirp);
	if (access(init, X_OK) != 0)
		return;
	run_fsbroker(&r, (const char *[]){ "check", "--workspace", dirp, "--op", "write", init,
					   NULL });
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.out, "rule: protected brokered client"));
	run_fsbroker(&r, (const char *[]){ "check", "--workspace", dirp, "--op", "write", self,
					   NULL });
	assert_int_equal(r.status, 0);
}

static void test_default_pack_without_workspace_says_so(void **state)
{
	struct run r;

	(void)state;
	run_fsbroker(&r, (const char *[]){ "check", "--op", "read", "/etc/hosts", NULL });
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.out, "--workspace"));
}

static void test_root_as_workspace_is_refused(void **state)
{
	struct run r;

	(void)state;
	run_fsbroker(&r, (const char *[]){ "check", "--workspace", "/", "--op", "read",
					   "/etc/hosts", NULL });
	assert_int_equal(r.status, 2);
	run_fsbroker(&r, (const char *[]){ "check", "--workspace", home, "--op", "read",
					   "/etc/hosts", NULL });
	assert_int_equal(r.status, 2);
}

static void test_unknown_op_is_a_usage_error(void **state)
{
	struct run r;

	(void)state;
	run_fsbroker(&r, (const char *[]){ "check", "--workspace", ws, "--op", "frobnicate",
					   "/etc/hosts", NULL });
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.out, "unknown op 'frobnicate'"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_allow_exits_0_and_names_the_rule),
		cmocka_unit_test(test_credential_read_exits_1_with_its_rule),
		cmocka_unit_test(test_home_write_exits_3_ask),
		cmocka_unit_test(test_strictest_verdict_sets_the_exit),
		cmocka_unit_test(test_json_output_lists_each_verdict),
		cmocka_unit_test(test_syntax_error_exits_2_with_file_and_line),
		cmocka_unit_test(test_wrong_field_type_names_the_field_path),
		cmocka_unit_test(test_failing_self_test_refuses_the_pack),
		cmocka_unit_test(test_self_tests_run_once_per_content),
		cmocka_unit_test(test_fsbroker_init_and_the_clients_are_protected_like_the_binary),
		cmocka_unit_test(test_an_edited_included_pack_is_tested_again_and_refused),
		cmocka_unit_test(test_the_same_pack_for_another_workspace_is_tested_again),
		cmocka_unit_test(test_default_pack_without_workspace_says_so),
		cmocka_unit_test(test_root_as_workspace_is_refused),
		cmocka_unit_test(test_unknown_op_is_a_usage_error),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
