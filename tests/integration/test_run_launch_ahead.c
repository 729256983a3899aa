/*
 * test_run_launch_ahead.c — a repeat `fsbroker run` starts its sandbox
 * from the launch record while its pack loads (core/linux/launch_record.c,
 * docs/runtime.md "Started before the pack is loaded"), and that sandbox
 * runs nothing until the run has made the same command line itself: a
 * record edited to leave a .env unmasked is killed and the command runs
 * once, masked; a record whose paths changed since (the masked .env
 * deleted) is not used, and no .env appears on the host; a pack that no
 * longer loads kills it, and the command never runs; a record others may
 * write is not used.
 */
#include "run_fixture.h"

#include <dirent.h>

#include <cjson/cJSON.h>

#define SECRET "SECRET-AHEAD-51c9"
#define STARTED_AHEAD "sandbox started from the launch record"
#define STARTED_AGAIN "the launch record differs from this run's plan"

/* The shared layout, a .env to mask, this test's pack, and the core's
 * debug lines (they say whether the sandbox was started ahead). */
static int setup_ahead(void **state)
{
	struct fixture *f;
	char pack[PATH_MAX + 32];

	setup(state);
	f = *state;
	fsbt_put(f->ws, ".env", SECRET "\n");
	snprintf(pack, sizeof(pack), "%s/ahead.lua", f->rules);
	fsbt_write_file(pack, "return { name = \"ahead\", include = { \"default\" } }\n");
	setenv("FSBROKER_LOG", "debug", 1);
	unsetenv("FSBROKER_LAUNCH_AHEAD");
	return 0;
}

static int teardown_ahead(void **state)
{
	unsetenv("FSBROKER_LOG");
	return teardown(state);
}

static const char *pack_of(const struct fixture *f)
{
	static char pack[PATH_MAX + 32];

	snprintf(pack, sizeof(pack), "%s/ahead.lua", f->rules);
	return pack;
}

/* `fsbroker run --rules <the pack>` of `script`, in the workspace. */
static int run(struct fixture *f, const char *script, char **out)
{
	char rules[PATH_MAX + 48];

	snprintf(rules, sizeof(rules), "--rules=%s", pack_of(f));
	return run_sh(f, rules, script, out);
}

/* The one launch record under the state dir. */
static void record_path(struct fixture *l, char *out, size_t len)
{
	char dir[PATH_MAX + 16];
	struct dirent *e;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/launch", l->state);
	d = opendir(dir);
	assert_non_null(d);
	out[0] = '\0';
	while ((e = readdir(d)) != NULL)
		if (strstr(e->d_name, ".json") != NULL)
			snprintf(out, len, "%s/%s", dir, e->d_name);
	closedir(d);
	assert_true(out[0] != '\0');
}

static size_t lines_in(const char *path)
{
	char *text = fsbt_read_file(path, NULL);
	size_t n = 0;

	for (const char *p = text; p != NULL && *p; p++)
		n += *p == '\n';
	free(text);
	return n;
}

/* The first run writes the record; the .env is masked. Every test
 * begins with it: on a machine that cannot build the sandbox, it skips. */
static void first_run(struct fixture *l)
{
	char why[256], *out = NULL;
	int rc;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	rc = run(l, "cat .env; echo run >> runs", &out);

	if (rc != 0 || strstr(out, SECRET) != NULL || strstr(out, STARTED_AHEAD) != NULL)
		fsbt_fail_long("first run, exit 0x%x:\n%s", (unsigned)rc, out);
	free(out);
}

static void a_repeat_run_starts_its_sandbox_from_the_record(void **state)
{
	struct fixture *l = *state;
	char runs[PATH_MAX + 16], *out = NULL;
	int rc;

	first_run(l);
	rc = run(l, "cat .env; echo run >> runs", &out);
	if (rc != 0 || strstr(out, STARTED_AHEAD) == NULL || strstr(out, SECRET) != NULL ||
	    strstr(out, "Permission denied") == NULL)
		fsbt_fail_long("second run, exit 0x%x:\n%s", (unsigned)rc, out);
	free(out);
	snprintf(runs, sizeof(runs), "%s/runs", l->ws);
	assert_int_equal(lines_in(runs), 2);
}

/* Drop the plan's mask of the workspace's .env (and its type) from the record. */
static void unmask_env_in_record(struct fixture *l)
{
	char path[PATH_MAX + 64], env[PATH_MAX + 16], *text, *printed;
	cJSON *js, *plan, *types;
	int n, at = -1;

	record_path(l, path, sizeof(path));
	snprintf(env, sizeof(env), "%s/.env", l->ws);
	text = fsbt_read_file(path, NULL);
	assert_non_null(text);
	js = cJSON_Parse(text);
	free(text);
	plan = cJSON_GetObjectItemCaseSensitive(js, "plan");
	types = cJSON_GetObjectItemCaseSensitive(js, "types");
	n = cJSON_GetArraySize(plan);
	for (int i = 1; i + 1 < n && at < 0; i++)
		if (strcmp(cJSON_GetArrayItem(plan, i)->valuestring, "/dev/null") == 0 &&
		    strcmp(cJSON_GetArrayItem(plan, i + 1)->valuestring, env) == 0)
			at = i - 1;
	assert_true(at >= 0);
	for (int k = 0; k < 3; k++) {
		cJSON_DeleteItemFromArray(plan, at);
		cJSON_DeleteItemFromArray(types, at);
	}
	printed = cJSON_PrintUnformatted(js);
	fsbt_write_file(path, printed);
	assert_int_equal(chmod(path, 0600), 0);
	free(printed);
	cJSON_Delete(js);
}

static void a_record_unlike_the_plan_is_killed_before_anything_runs(void **state)
{
	struct fixture *l = *state;
	char runs[PATH_MAX + 16], *out = NULL;
	int rc;

	first_run(l);
	unmask_env_in_record(l);
	rc = run(l, "cat .env; echo run >> runs", &out);
	if (rc != 0 || strstr(out, SECRET) != NULL || strstr(out, "Permission denied") == NULL ||
	    strstr(out, STARTED_AHEAD) == NULL || strstr(out, STARTED_AGAIN) == NULL)
		fsbt_fail_long("run from the edited record, exit 0x%x:\n%s", (unsigned)rc, out);
	free(out);
	snprintf(runs, sizeof(runs), "%s/runs", l->ws);
	assert_int_equal(lines_in(runs), 2);
}

static void a_record_whose_paths_changed_is_not_used(void **state)
{
	struct fixture *l = *state;
	char env[PATH_MAX + 16], *out = NULL;
	struct stat st;
	int rc;

	first_run(l);
	snprintf(env, sizeof(env), "%s/.env", l->ws);
	assert_int_equal(unlink(env), 0);
	rc = run(l, "echo run >> runs", &out);
	if (rc != 0 || strstr(out, STARTED_AHEAD) != NULL)
		fsbt_fail_long("run after the .env went, exit 0x%x:\n%s", (unsigned)rc, out);
	free(out);
	/* bwrap made no mount point for the old mask through the
	 * read-write workspace. */
	assert_int_equal(lstat(env, &st), -1);
	assert_int_equal(errno, ENOENT);
}

static void a_pack_that_no_longer_loads_kills_the_sandbox_started_ahead(void **state)
{
	struct fixture *l = *state;
	char ran[PATH_MAX + 16], *out = NULL;
	int rc;

	first_run(l);
	fsbt_write_file(pack_of(l), "return { name = \"ahead\", include = { \"default\" } \n");
	rc = run(l, "echo ran > ran", &out);
	/* Nothing of bwrap's after the run: a sandbox left blocked would go
	 * on once the run's end closed its --block-fd. */
	if (!WIFEXITED(rc) || WEXITSTATUS(rc) != 125 || strstr(out, STARTED_AHEAD) == NULL ||
	    strstr(out, "bwrap:") != NULL)
		fsbt_fail_long("run with a broken pack, status 0x%x:\n%s", (unsigned)rc, out);
	free(out);
	snprintf(ran, sizeof(ran), "%s/ran", l->ws);
	assert_int_equal(access(ran, F_OK), -1);
}

static void a_record_others_may_write_is_not_used(void **state)
{
	struct fixture *l = *state;
	char path[PATH_MAX + 64], *out = NULL;
	int rc;

	first_run(l);
	record_path(l, path, sizeof(path));
	assert_int_equal(chmod(path, 0622), 0);
	rc = run(l, "cat .env; echo run >> runs", &out);
	if (rc != 0 || strstr(out, STARTED_AHEAD) != NULL || strstr(out, SECRET) != NULL)
		fsbt_fail_long("run with a group-writable record, exit 0x%x:\n%s", (unsigned)rc,
			       out);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup_ahead, teardown_ahead)
		T(a_repeat_run_starts_its_sandbox_from_the_record),
		T(a_record_unlike_the_plan_is_killed_before_anything_runs),
		T(a_record_whose_paths_changed_is_not_used),
		T(a_pack_that_no_longer_loads_kills_the_sandbox_started_ahead),
		T(a_record_others_may_write_is_not_used),
	};

	return fsbt_run_group(tests, NULL, NULL);
}
