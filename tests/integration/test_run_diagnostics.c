/*
 * test_run_diagnostics.c — `fsbroker run` shares stderr with CMD: the
 * core's lines (here the warning of packs under ${tmp}, and the debug line
 * said once CMD has started) never land among CMD's own bytes, and the
 * pack warning is one line however many pack files there are. With
 * --summary-fd stderr is CMD's alone and the lines are in the summary.
 */
#include "run_fixture.h"

#include <dirent.h>

#include "proto_json.h"

/* What CMD writes on its stderr, a line at a time, with file accesses the
 * core serves (and, under FSBROKER_LOG=debug, speaks of) in between. */
#define CMD_SCRIPT                                                            \
	"i=0; while [ $i -lt 40 ]; do echo \"cmd-err-$i\" >&2; echo $i > f$i.txt; " \
	"cat f$i.txt > /dev/null; i=$((i+1)); done"

/* The packs under the fixture's TMPDIR (the pack's ${tmp}): fsbroker's own
 * rules copied, so default.lua and its includes are five files. */
static void packs_under_tmp(struct fixture *f, char *pack, size_t len)
{
	char dir[PATH_MAX + 16], src[PATH_MAX], *text;
	const char *luadir = getenv("FSBROKER_LUA_DIR");
	struct dirent *e;
	DIR *d;

	if (luadir == NULL)
		luadir = "lua";	/* make exports it; by hand, from the checkout */
	snprintf(dir, sizeof(dir), "%s/packs", f->tmp);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(src, sizeof(src), "%s/rules", luadir);
	d = opendir(src);
	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		char from[PATH_MAX * 2];

		if (strstr(e->d_name, ".lua") == NULL)
			continue;
		snprintf(from, sizeof(from), "%s/%s", src, e->d_name);
		text = fsbt_read_file(from, NULL);
		assert_non_null(text);
		fsbt_put(dir, e->d_name, text);
		free(text);
	}
	closedir(d);
	snprintf(pack, len, "%s/default.lua", dir);
}

/* CMD's stderr as the script writes it. */
static void expected_cmd_err(char *buf, size_t len)
{
	buf[0] = '\0';
	for (int i = 0; i < 40; i++)
		snprintf(buf + strlen(buf), len - strlen(buf), "cmd-err-%d\n", i);
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

static void start(struct fixture *f, const char *pack, bool summary, struct runproc *p)
{
	char *argv[20];
	int n = 0;

	argv[n++] = (char *)fsbt_binary();
	argv[n++] = "run";
	argv[n++] = "--workspace";
	argv[n++] = f->ws;
	argv[n++] = "--state-dir";
	argv[n++] = f->state;
	argv[n++] = "--session";
	argv[n++] = "s";
	argv[n++] = "--rules";
	argv[n++] = (char *)pack;
	if (summary) {
		argv[n++] = "--summary-fd";
		argv[n++] = "5";
	}
	argv[n++] = "--";
	argv[n++] = "sh";
	argv[n++] = "-c";
	argv[n++] = CMD_SCRIPT;
	argv[n] = NULL;
	setenv("FSBROKER_LOG", "debug", 1);
	run_start(argv, false, p);
	unsetenv("FSBROKER_LOG");
}

static void core_lines_stay_out_of_cmds_stderr(void **state)
{
	struct fixture *f = *state;
	char why[512], pack[PATH_MAX + 32], want[1024];
	const char *at, *warn, *running;
	struct runproc p;
	int st;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	packs_under_tmp(f, pack, sizeof(pack));
	expected_cmd_err(want, sizeof(want));
	start(f, pack, false, &p);
	st = run_finish(&p);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("wait status 0x%x; stderr:\n%s", (unsigned)st, p.ebuf ? p.ebuf : "");
	assert_non_null(p.ebuf);
	/* CMD's bytes in one piece: not one core line among them. */
	at = strstr(p.ebuf, want);
	if (at == NULL)
		fail_msg("CMD's stderr is not in one piece:\n%s", p.ebuf);
	/* The pack warning: one line for the five files, before CMD starts. */
	warn = strstr(p.ebuf, "5 pack files lie in a tree sandboxed commands may modify");
	if (warn == NULL || warn > at)
		fail_msg("no pack warning before CMD's output:\n%s", p.ebuf);
	assert_int_equal(count(p.ebuf, "pack file"), 1);
	assert_non_null(strstr(warn, "/packs/credentials.lua"));
	/* Said while CMD ran, so held until it ended. */
	running = strstr(p.ebuf, "fsbroker: running session s");
	if (running == NULL || running < at + strlen(want))
		fail_msg("the core's line from while CMD ran is not after CMD's output:\n%s",
			 p.ebuf);
	run_free(&p);
}

static void with_summary_fd_stderr_is_cmds_alone(void **state)
{
	struct fixture *f = *state;
	char why[512], pack[PATH_MAX + 32], want[1024];
	const cJSON *diag, *it;
	size_t nwarn = 0, nrunning = 0;
	struct runproc p;
	cJSON *s;
	int st;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	packs_under_tmp(f, pack, sizeof(pack));
	expected_cmd_err(want, sizeof(want));
	start(f, pack, true, &p);
	st = run_finish(&p);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("wait status 0x%x; stderr:\n%s", (unsigned)st, p.ebuf ? p.ebuf : "");
	assert_non_null(p.ebuf);
	assert_string_equal(p.ebuf, want);
	s = run_summary(&p);
	diag = cJSON_GetObjectItemCaseSensitive(s, "diagnostics");
	assert_true(cJSON_IsArray(diag));
	cJSON_ArrayForEach(it, diag) {
		assert_true(cJSON_IsString(it));
		nwarn += count(it->valuestring, "pack file");
		nrunning += strncmp(it->valuestring, "running session s", 17) == 0;
	}
	assert_int_equal(nwarn, 1);
	assert_int_equal(nrunning, 1);
	cJSON_Delete(s);
	run_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(core_lines_stay_out_of_cmds_stderr, setup, teardown),
		cmocka_unit_test_setup_teardown(with_summary_fd_stderr_is_cmds_alone, setup,
						teardown),
	};

	return fsbt_run_group(tests, NULL, NULL);
}
