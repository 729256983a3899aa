/*
 * test_run_degraded.c — `fsbroker run` on a machine that lacks a sandbox
 * feature (docs/runtime-degraded.md). Each missing feature is forced with
 * --simulate-missing, so every mode runs here: the refusal names the
 * feature and the flag; the flag gives a weaker mode in which every change
 * is still judged, backed up and undone, and denyRead still holds.
 */
#include "run_fixture.h"

/* fsbroker run --workspace --state-dir --session s FLAGS... -- sh -c SCRIPT */
static int run_with(struct fixture *f, const char *const flags[], const char *script, char **out)
{
	char *argv[24];
	int n = 0;

	argv[n++] = (char *)fsbt_binary();
	argv[n++] = "run";
	argv[n++] = "--workspace";
	argv[n++] = f->ws;
	argv[n++] = "--state-dir";
	argv[n++] = f->state;
	argv[n++] = "--session";
	argv[n++] = "s";
	for (int i = 0; flags[i] != NULL; i++)
		argv[n++] = (char *)flags[i];
	argv[n++] = "--";
	argv[n++] = "sh";
	argv[n++] = "-c";
	argv[n++] = (char *)script;
	argv[n] = NULL;
	return fsbt_run(argv, out);
}

/* The text of a workspace file (free it). */
static char *ws_text(struct fixture *f, const char *name)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/%s", f->ws, name);
	return fsbt_read_file(path, NULL);
}

static void expect_refusal(struct fixture *f, const char *const flags[], const char *needle)
{
	char *out = NULL;
	int st = run_with(f, flags, "echo ran > ran.txt", &out);
	char path[PATH_MAX + 16];

	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st) != 125 || strstr(out, needle) == NULL)
		fail_msg("expected exit 125 naming '%s', got 0x%x:\n%s", needle, (unsigned)st, out);
	free(out);
	snprintf(path, sizeof(path), "%s/ran.txt", f->ws);
	assert_int_equal(access(path, F_OK), -1);
}

static void a_missing_feature_refuses_and_names_the_flag(void **state)
{
	struct fixture *f = *state;
	char why[512];

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	expect_refusal(f, (const char *[]){ "--simulate-missing=landlock", NULL },
		       "--without-landlock");
	expect_refusal(f, (const char *[]){ "--simulate-missing=userns", NULL },
		       "--without-namespaces");
	/* Accepting one feature's absence does not accept another's. */
	expect_refusal(f, (const char *[]){ "--simulate-missing=userns,landlock",
					    "--without-landlock", NULL },
		       "--without-namespaces");
}

static void no_seccomp_notification_has_no_weaker_mode(void **state)
{
	struct fixture *f = *state;
	char why[512];

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	expect_refusal(f, (const char *[]){ "--simulate-missing=seccomp-notify",
					    "--without-landlock", "--without-namespaces", NULL },
		       "no weaker mode");
}

/*
 * In a weaker mode the run still brokers: an allowed overwrite is backed up
 * and undone by restore, a write to a protected file fails with EACCES and
 * leaves it, and the key in ~/.ssh cannot be read.
 */
static void still_brokered(struct fixture *f, const char *const flags[])
{
	char *out = NULL, *text;
	int st;

	st = run_with(f, flags,
		      "echo new > a.txt; echo stolen > ~/.ssh/id_ed25519;"
		      "cat ~/.ssh/id_ed25519 && echo READ-THE-KEY; exit 0", &out);
	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st) != 0)
		fail_msg("the run exited 0x%x:\n%s", (unsigned)st, out);
	if (strstr(out, "READ-THE-KEY") != NULL || strstr(out, "PRIVATE KEY") != NULL)
		fail_msg("the sandbox read the key:\n%s", out);
	free(out);
	text = fsbt_read_file(f->key, NULL);
	assert_string_equal(text, "PRIVATE KEY\n");
	free(text);
	text = ws_text(f, "a.txt");
	assert_string_equal(text, "new\n");
	free(text);

	out = NULL;
	st = fsbt_run((char *[]){ (char *)fsbt_binary(), "backup", "restore", "--last",
				  "--state-dir", f->state, "--session", "s", NULL }, &out);
	if (st != 0)
		fail_msg("restore exited 0x%x:\n%s", (unsigned)st, out ? out : "");
	free(out);
	text = ws_text(f, "a.txt");
	assert_string_equal(text, "old a\n");
	free(text);
}

static void without_landlock_every_change_is_still_brokered(void **state)
{
	struct fixture *f = *state;
	char why[512], *out = NULL;
	int st;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	still_brokered(f, (const char *[]){ "--simulate-missing=landlock", "--without-landlock",
					    NULL });
	st = run_with(f, (const char *[]){ "--simulate-missing=landlock", "--without-landlock",
					   "--explain", NULL }, "true", &out);
	assert_int_equal(st, 0);
	assert_non_null(strstr(out, "mode: degraded"));
	assert_non_null(strstr(out, "landlock: no, accepted by --without-landlock"));
	free(out);
}

static void without_namespaces_every_change_and_read_is_still_brokered(void **state)
{
	struct fixture *f = *state;
	char why[512], *out = NULL;
	int st;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	still_brokered(f, (const char *[]){ "--simulate-missing=userns", "--without-namespaces",
					    NULL });
	st = run_with(f, (const char *[]){ "--simulate-missing=userns", "--without-namespaces",
					   "--explain", NULL }, "true", &out);
	assert_int_equal(st, 0);
	assert_non_null(strstr(out, "reads: broker (no mount plan"));
	assert_non_null(strstr(out, "no bwrap"));
	free(out);
}

/*
 * Without a pid namespace the run ends CMD's process group itself. Here the
 * sandbox shares our pid namespace, so the pid it writes down is ours too.
 */
static void without_namespaces_nothing_outlives_the_run(void **state)
{
	struct fixture *f = *state;
	char why[512], *out = NULL, *text;
	long pid;
	int st;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	st = run_with(f, (const char *[]){ "--simulate-missing=userns", "--without-namespaces",
					   NULL },
		     /* A forked shell blocked in `read` on a FIFO nobody writes:
		      * started and loaded before CMD ends, it lives until killed. */
		     "mkfifo never; (exec 3<>never; echo > ready; read x <&3) &"
		     "while [ ! -e ready ]; do :; done; echo $! > bg.pid", &out);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("the run exited 0x%x:\n%s", (unsigned)st, out);
	free(out);
	text = ws_text(f, "bg.pid");
	assert_non_null(text);
	pid = strtol(text, NULL, 10);
	free(text);
	assert_true(pid > 1);
	/* Killed, then reaped by init once its parent shell is gone. */
	for (int i = 0; i < 100 && kill((pid_t)pid, 0) == 0; i++)
		usleep(20000);
	assert_int_equal(kill((pid_t)pid, 0), -1);
	assert_int_equal(errno, ESRCH);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(a_missing_feature_refuses_and_names_the_flag, setup,
						teardown),
		cmocka_unit_test_setup_teardown(no_seccomp_notification_has_no_weaker_mode, setup,
						teardown),
		cmocka_unit_test_setup_teardown(without_landlock_every_change_is_still_brokered,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			without_namespaces_every_change_and_read_is_still_brokered, setup, teardown),
		cmocka_unit_test_setup_teardown(without_namespaces_nothing_outlives_the_run, setup,
						teardown),
	};

	return fsbt_run_group(tests, NULL, NULL);
}
