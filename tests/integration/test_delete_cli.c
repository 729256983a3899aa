/*
 * test_delete_cli.c — `fsbroker delete` against the real core: exit 0 when
 * every path was deleted (to the trash, backed up), 1 for a refusal or an
 * error reply (the path stays), 2 when no broker can be reached (nothing
 * was asked), with the path and the reason on stderr.
 */
#include "harness.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char fsbroker[PATH_MAX];	/* fsbt_binary(), absolute */
static char start_dir[PATH_MAX];	/* where the tests started */

static int setup(void **state)
{
	return fsbt_setup_core(state);
}

/* Back where the tests started, whatever a failed test left. */
static int teardown(void **state)
{
	if (chdir(start_dir) < 0)
		return -1;
	return fsbt_teardown_core(state);
}

/* Run `fsbroker delete` with `args` (NULL-terminated, at most 12) after the
 * socket, session and tool-call options of core `c` (none when c is NULL).
 * Returns the exit status (-1 when it did not exit), its output in *out. */
static int run_delete(const struct fsbt_core *c, char **out, ...)
{
	char *argv[24];
	int argc = 0, status;
	va_list ap;

	/* Absolute: a test may run it from another directory. */
	argv[argc++] = fsbroker;
	argv[argc++] = "delete";
	if (c != NULL) {
		argv[argc++] = "--socket";
		argv[argc++] = (char *)c->sock;
		argv[argc++] = "--session";
		argv[argc++] = (char *)c->session;
		argv[argc++] = "--tool-call";
		argv[argc++] = FSBT_TOOL_CALL;
	}
	va_start(ap, out);
	for (char *a; argc < 22 && (a = va_arg(ap, char *)) != NULL;)
		argv[argc++] = a;
	va_end(ap);
	argv[argc] = NULL;
	status = fsbt_run(argv, out);
	return status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void clear_env(void)
{
	unsetenv("FSBROKER_SOCKET");
	unsetenv("FSBROKER_SESSION_ID");
	unsetenv("FSBROKER_TOOL_CALL_ID");
}

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static void deleted_paths_go_to_the_trash_and_exit_0(void **state)
{
	struct fsbt_core *c = *state;
	char a[PATH_MAX + 16], dir[PATH_MAX + 16], inner[PATH_MAX + 32], trashed[PATH_MAX + 64];
	char *out = NULL;

	clear_env();
	snprintf(a, sizeof(a), "%s/old.txt", c->ws);
	snprintf(dir, sizeof(dir), "%s/build", c->ws);
	snprintf(inner, sizeof(inner), "%s/out.o", dir);
	fsbt_write_file(a, "old\n");
	assert_int_equal(mkdir(dir, 0755), 0);
	fsbt_write_file(inner, "obj\n");

	assert_int_equal(run_delete(c, &out, "-r", a, dir, NULL), 0);
	assert_string_equal(out, "");
	free(out);
	assert_false(exists(a));
	assert_false(exists(dir));
	/* In the FreeDesktop trash of the core's home, as a desktop lists it. */
	snprintf(trashed, sizeof(trashed), "%s/.local/share/Trash/files/old.txt", c->home);
	assert_true(exists(trashed));
	snprintf(trashed, sizeof(trashed), "%s/.local/share/Trash/files/build/out.o", c->home);
	assert_true(exists(trashed));
}

static void the_environment_names_the_broker_and_relative_paths_work(void **state)
{
	struct fsbt_core *c = *state;
	char a[PATH_MAX + 16], cwd[PATH_MAX], *out = NULL;

	snprintf(a, sizeof(a), "%s/rel.txt", c->ws);
	fsbt_write_file(a, "rel\n");
	setenv("FSBROKER_SOCKET", c->sock, 1);
	setenv("FSBROKER_SESSION_ID", c->session, 1);
	setenv("FSBROKER_TOOL_CALL_ID", FSBT_TOOL_CALL, 1);
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(c->ws), 0);
	assert_int_equal(run_delete(NULL, &out, "-v", "./sub/../rel.txt", NULL), 0);
	assert_int_equal(chdir(cwd), 0);
	clear_env();
	assert_non_null(strstr(out, "trashed './sub/../rel.txt' to "));
	free(out);
	assert_false(exists(a));
}

static void a_refusal_exits_1_names_the_path_and_the_rule(void **state)
{
	struct fsbt_core *c = *state;
	char key[PATH_MAX + 32], ok[PATH_MAX + 16], want[PATH_MAX + 128], *out = NULL;

	clear_env();
	snprintf(key, sizeof(key), "%s/.ssh/id_ed25519", c->home);
	snprintf(ok, sizeof(ok), "%s/fine.txt", c->ws);
	fsbt_write_file(ok, "fine\n");
	/* The refused path stays; the others are still deleted. */
	assert_int_equal(run_delete(c, &out, key, ok, NULL), 1);
	snprintf(want, sizeof(want), "fsbroker delete: cannot delete '%s': Permission denied "
		 "(denyRead ~/.ssh/**)\n", key);
	assert_string_equal(out, want);
	free(out);
	assert_true(exists(key));
	assert_false(exists(ok));
}

static void an_error_reply_exits_1_and_force_forgives_a_missing_path(void **state)
{
	struct fsbt_core *c = *state;
	char missing[PATH_MAX + 16], dir[PATH_MAX + 16], inner[PATH_MAX + 32], *out = NULL;

	clear_env();
	snprintf(missing, sizeof(missing), "%s/missing", c->ws);
	assert_int_equal(run_delete(c, &out, missing, NULL), 1);
	assert_non_null(strstr(out, "cannot delete '"));
	assert_non_null(strstr(out, "No such file or directory"));
	free(out);
	assert_int_equal(run_delete(c, &out, "-f", missing, NULL), 0);
	free(out);

	/* A directory with entries needs -r: without it the tree stays. */
	snprintf(dir, sizeof(dir), "%s/tree", c->ws);
	snprintf(inner, sizeof(inner), "%s/leaf", dir);
	assert_int_equal(mkdir(dir, 0755), 0);
	fsbt_write_file(inner, "leaf\n");
	assert_int_equal(run_delete(c, &out, dir, NULL), 1);
	assert_non_null(strstr(out, dir));
	free(out);
	assert_true(exists(inner));
}

static void no_broker_exits_2_and_deletes_nothing(void **state)
{
	struct fsbt_core *c = *state;
	char a[PATH_MAX + 16], gone[PATH_MAX + 32], *out = NULL;

	clear_env();
	snprintf(a, sizeof(a), "%s/stays.txt", c->ws);
	fsbt_write_file(a, "stays\n");

	/* No socket configured at all. */
	assert_int_equal(run_delete(NULL, &out, a, NULL), 2);
	assert_non_null(strstr(out, "broker unavailable: no socket configured"));
	free(out);

	/* A socket nobody listens on. */
	snprintf(gone, sizeof(gone), "%s/nobody.sock", c->sockdir);
	assert_int_equal(run_delete(NULL, &out, "--socket", gone, a, NULL), 2);
	assert_non_null(strstr(out, gone));
	assert_non_null(strstr(out, a));
	free(out);
	assert_true(exists(a));
}

static void a_usage_error_exits_1_not_2(void **state)
{
	struct fsbt_core *c = *state;
	char *out = NULL;

	clear_env();
	/* 2 would send a caller to its local-trash fallback. */
	assert_int_equal(run_delete(c, &out, NULL), 1);
	assert_non_null(strstr(out, "no path given"));
	free(out);
	assert_int_equal(run_delete(c, &out, "--no-such-option", "x", NULL), 1);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(deleted_paths_go_to_the_trash_and_exit_0,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			the_environment_names_the_broker_and_relative_paths_work, setup,
			teardown),
		cmocka_unit_test_setup_teardown(a_refusal_exits_1_names_the_path_and_the_rule,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			an_error_reply_exits_1_and_force_forgives_a_missing_path, setup,
			teardown),
		cmocka_unit_test_setup_teardown(no_broker_exits_2_and_deletes_nothing,
						setup, teardown),
		cmocka_unit_test_setup_teardown(a_usage_error_exits_1_not_2, setup, teardown),
	};

	if (realpath(fsbt_binary(), fsbroker) == NULL || getcwd(start_dir, sizeof(start_dir)) == NULL) {
		fprintf(stderr, "# cannot find %s: %s\n", fsbt_binary(), strerror(errno));
		return 1;
	}
	/* The core the harness starts is found the same way. */
	setenv("FSBROKER", fsbroker, 1);
	return fsbt_run_group(tests, NULL, NULL);
}
