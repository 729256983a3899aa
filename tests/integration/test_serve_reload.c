/*
 * test_serve_reload.c — hot reload of a pack in a running core (DESIGN §4.5)
 * and the safety of the Lua host (§4.4): reload on a file change, on SIGHUP
 * and on Reload; a broken pack keeps the old one serving; decide hooks that
 * loop, eat memory or raise are denied while the core keeps answering;
 * approvals survive a reload; packs in the workspace are warned of in one
 * line, not again at a reload unless the set of their files changed.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

#define REPLY_MAX 4096

/* The tiny pack every test starts from; %s is the denyRead glob, the second
 * %s more fields (a decide hook) or "". */
static const char pack_fmt[] =
	"-- a pack written by test_serve_reload\n"
	"return {\n"
	"  name = \"test\",\n"
	"  fsProfile = { read = { \"/**\" }, modify = { \"${workspace}/**\" } },\n"
	"  denyRead = { %s },\n"
	"  ask = { modify = { \"~/**\" } },\n"
	"%s"
	"}\n";

/* Replace <rules>/test.lua in one rename, as an editor that saves safely
 * does, so the core never reads half a file. */
static void write_pack_text(struct fsbt_core *c, const char *text)
{
	char tmp[PATH_MAX + 16];

	snprintf(c->rules, sizeof(c->rules), "%s/test.lua", c->rules_dir);
	snprintf(tmp, sizeof(tmp), "%s/.test.lua.new", c->rules_dir);
	fsbt_write_file(tmp, text);
	if (rename(tmp, c->rules) < 0)
		fail_msg("rename %s: %s", tmp, strerror(errno));
}

static void write_pack(struct fsbt_core *c, const char *deny_glob, const char *extra)
{
	char *text;

	assert_true(asprintf(&text, pack_fmt, deny_glob, extra) > 0);
	write_pack_text(c, text);
	free(text);
}

static int setup_layout(void **state)
{
	*state = fsbt_core_new();
	return 0;
}

/* The decision CheckAccess gives for reading `name` in the workspace. */
static char *decision_for(struct fsbt_core *c, const char *name)
{
	char p[PATH_MAX];
	cJSON *r;
	char *d;

	snprintf(p, sizeof(p), "%s/%s", c->ws, name);
	r = fsbt_check_access(c, "read", p);
	d = strdup(fsbt_str(r, "decision"));
	cJSON_Delete(r);
	return d;
}

/* Poll CheckAccess until it answers `want` for `name`, up to 5 s. */
static bool becomes(struct fsbt_core *c, const char *name, const char *want)
{
	uint64_t end = fsbt_now_ms() + 5000;

	do {
		char *d = decision_for(c, name);
		bool same = strcmp(d, want) == 0;

		free(d);
		if (same)
			return true;
		fsbt_sleep_ms(25);
	} while (fsbt_now_ms() < end);
	return false;
}

static void expect_decision(struct fsbt_core *c, const char *name, const char *want)
{
	char *d = decision_for(c, name);

	if (strcmp(d, want) != 0)
		fail_msg("read of %s: expected %s, got %s", name, want, d);
	free(d);
}

/* One text request on a connection; the reply in `reply`. */
static void request(struct fsbt_core *c, int fd, const char *cls, const char *name,
		    const char *spec, char *reply, int *got)
{
	char p[PATH_MAX], line[PATH_MAX + 256];

	snprintf(p, sizeof(p), "%s/%s", c->ws, name);
	fsbt_text_req(line, sizeof(line), cls, p, c->session, spec);
	if (fsbt_request(fd, line, reply, REPLY_MAX, got) < 0)
		fail_msg("no reply to %s", line);
}

static void file_change_reloads_the_pack(void **state)
{
	struct fsbt_core *c = *state;
	cJSON *stats;

	write_pack(c, "\"${workspace}/secret*\"", "");
	fsbt_core_start(c);
	expect_decision(c, "secret.txt", "deny");
	expect_decision(c, "other.txt", "allow");
	write_pack(c, "\"${workspace}/other*\"", "");
	assert_true(becomes(c, "secret.txt", "allow"));
	expect_decision(c, "other.txt", "deny");
	stats = fsbt_control_cmd(c, "Stats", NULL);
	assert_true(fsbt_num(stats, "reloads") >= 1);
	assert_int_equal((int)fsbt_num(stats, "reloadFailures"), 0);
	cJSON_Delete(stats);
}

/*
 * The pack's verdict depends on the clock (os.time), so it can change with
 * no file event at all: only a reload that SIGHUP asks for can show it.
 */
static void sighup_reloads_the_pack(void **state)
{
	struct fsbt_core *c = *state;
	long at = (long)time(NULL) + 2;
	char extra[64], glob[128];
	cJSON *stats;

	snprintf(extra, sizeof(extra), "  -- switches at %ld\n", at);
	snprintf(glob, sizeof(glob),
		 "os.time() >= %ld and \"${workspace}/secret*\" or \"${workspace}/other*\"", at);
	write_pack(c, glob, extra);
	fsbt_core_start(c);
	expect_decision(c, "secret.txt", "allow");
	while (time(NULL) <= at)
		fsbt_sleep_ms(50);
	/* Nothing reloaded by itself. */
	expect_decision(c, "secret.txt", "allow");
	assert_int_equal(kill(c->pid, SIGHUP), 0);
	assert_true(becomes(c, "secret.txt", "deny"));
	stats = fsbt_control_cmd(c, "Stats", NULL);
	assert_int_equal((int)fsbt_num(stats, "reloads"), 1);
	cJSON_Delete(stats);
}

static void syntax_error_is_reported_and_old_pack_keeps_serving(void **state)
{
	struct fsbt_core *c = *state;
	char want[PATH_MAX + 8];
	const char *err;
	cJSON *r;

	write_pack(c, "\"${workspace}/secret*\"", "");
	fsbt_core_start(c);
	expect_decision(c, "secret.txt", "deny");
	/* Line 3 is broken. */
	write_pack_text(c, "return {\n  name = \"test\",\n  fsProfile = = {},\n}\n");
	r = fsbt_control_cmd(c, "Reload", NULL);
	assert_false(fsbt_ok(r));
	err = fsbt_str(r, "error");
	snprintf(want, sizeof(want), "%s:3:", c->rules);
	if (strstr(err, want) == NULL)
		fail_msg("the error does not name %s: %s", want, err);
	cJSON_Delete(r);
	expect_decision(c, "secret.txt", "deny");
	expect_decision(c, "other.txt", "allow");
}

/* A decide hook that never returns: the instruction cap ends it. */
static void endless_decide_is_denied_and_core_keeps_answering(void **state)
{
	struct fsbt_core *c = *state;
	char reply[REPLY_MAX];
	int fd, got;

	write_pack(c, "\"${workspace}/secret*\"",
		   "  decide = function(req, verdict)\n"
		   "    if req.path:find(\"loop\", 1, true) then while true do end end\n"
		   "    return verdict\n"
		   "  end,\n");
	fsbt_core_start(c);
	fd = fsbt_connect(c);
	assert_true(fd >= 0);
	request(c, fd, FSBT_READ, "loop.txt", NULL, reply, &got);
	if (!fsbt_starts(reply, "DENY EACCES policy error"))
		fail_msg("expected \"DENY EACCES policy error\", got \"%s\"", reply);
	request(c, fd, FSBT_READ, "fine.txt", NULL, reply, &got);
	assert_string_equal(reply, "SANDBOX");
	fsbt_close(fd);
}

/* A decide hook that doubles a string into a table until memory runs out. */
static void memory_bomb_in_decide_is_denied_and_core_lives(void **state)
{
	struct fsbt_core *c = *state;
	char reply[REPLY_MAX];
	int fd, got;

	write_pack(c, "\"${workspace}/secret*\"",
		   "  decide = function(req, verdict)\n"
		   "    if req.path:find(\"bomb\", 1, true) then\n"
		   "      local t, s = {}, \"x\"\n"
		   "      while true do s = s .. s; t[#t + 1] = s end\n"
		   "    end\n"
		   "    return verdict\n"
		   "  end,\n");
	fsbt_core_start(c);
	fd = fsbt_connect(c);
	assert_true(fd >= 0);
	request(c, fd, FSBT_READ, "bomb.txt", NULL, reply, &got);
	if (!fsbt_starts(reply, "DENY EACCES "))
		fail_msg("expected a DENY EACCES, got \"%s\"", reply);
	request(c, fd, FSBT_READ, "fine.txt", NULL, reply, &got);
	assert_string_equal(reply, "SANDBOX");
	/* Again, on the same state: the memory was given back. */
	request(c, fd, FSBT_READ, "bomb.txt", NULL, reply, &got);
	assert_true(fsbt_starts(reply, "DENY EACCES "));
	fsbt_close(fd);
	assert_int_equal(fsbt_core_wait_exit(c, 0), -ETIMEDOUT);
}

static void raising_decide_is_denied(void **state)
{
	struct fsbt_core *c = *state;
	char reply[REPLY_MAX];
	int fd, got;

	write_pack(c, "\"${workspace}/secret*\"",
		   "  decide = function(req, verdict)\n"
		   "    if req.path:find(\"raise\", 1, true) then error(\"refused by the test\") end\n"
		   "    return verdict\n"
		   "  end,\n");
	fsbt_core_start(c);
	fd = fsbt_connect(c);
	assert_true(fd >= 0);
	request(c, fd, FSBT_READ, "raise.txt", NULL, reply, &got);
	if (!fsbt_starts(reply, "DENY EACCES ") || strstr(reply, "error") == NULL)
		fail_msg("expected a DENY EACCES naming the error, got \"%s\"", reply);
	assert_int_equal(got, -1);
	request(c, fd, FSBT_READ, "fine.txt", NULL, reply, &got);
	assert_string_equal(reply, "SANDBOX");
	fsbt_close(fd);
}

static void approval_survives_a_reload(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX], line[PATH_MAX + 256], reply[REPLY_MAX], block[24];
	int fd, got;
	cJSON *r;

	write_pack(c, "\"${workspace}/secret*\"", "");
	fsbt_core_start(c);
	snprintf(p, sizeof(p), "%s/notes.txt", c->home);
	fsbt_write_file(p, "n\n");
	fd = fsbt_connect(c);
	assert_true(fd >= 0);
	fsbt_text_req(line, sizeof(line), FSBT_WRITE, p, c->session, "open=0x1:0");
	assert_true(fsbt_request(fd, line, reply, sizeof(reply), &got) >= 0);
	if (sscanf(reply, "DENY EACCES ask %23s", block) != 1)
		fail_msg("expected an ask, got \"%s\"", reply);
	r = fsbt_control_cmd(c, "Approve", "\"blockId\":\"%s\",\"scope\":\"once\"", block);
	assert_true(fsbt_ok(r));
	cJSON_Delete(r);
	r = fsbt_control_cmd(c, "Reload", NULL);
	assert_true(fsbt_ok(r));
	cJSON_Delete(r);
	assert_true(fsbt_request(fd, line, reply, sizeof(reply), &got) >= 0);
	assert_string_equal(reply, "FD");
	assert_true(got >= 0);
	close(got);
	/* Still a once approval after the move: used up now. */
	assert_true(fsbt_request(fd, line, reply, sizeof(reply), &got) >= 0);
	assert_true(fsbt_starts(reply, "DENY EACCES ask "));
	fsbt_close(fd);
}

static size_t count_in(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

static void reload(struct fsbt_core *c)
{
	cJSON *r = fsbt_control_cmd(c, "Reload", NULL);

	assert_true(fsbt_ok(r));
	cJSON_Delete(r);
}

/* Every command used to repeat a warning per pack file, and a reload again. */
static void packs_in_the_workspace_are_one_warning_said_again_only_when_they_change(void **state)
{
	struct fsbt_core *c = *state;
	char dir[PATH_MAX + 16];
	char *log;

	snprintf(dir, sizeof(dir), "%s/packs", c->ws);
	assert_int_equal(mkdir(dir, 0755), 0);
	fsbt_put(dir, "extra.lua", "return { name = \"extra\" }\n");
	fsbt_put(dir, "more.lua", "return { name = \"more\" }\n");
	snprintf(c->rules_dir, sizeof(c->rules_dir), "%s", dir);
	write_pack(c, "\"${workspace}/secret*\"", "  include = { \"extra\" },\n");
	fsbt_core_start(c);
	reload(c);
	reload(c);
	log = fsbt_core_log(c);
	assert_int_equal(count_in(log, "pack file"), 1);
	if (strstr(log, "2 pack files lie in a tree sandboxed commands may modify") == NULL)
		fail_msg("no one line for both pack files:\n%s", log);
	free(log);
	/* A third file: the set changed, so the warning is said once more. */
	write_pack(c, "\"${workspace}/secret*\"", "  include = { \"extra\", \"more\" },\n");
	reload(c);
	log = fsbt_core_log(c);
	assert_int_equal(count_in(log, "pack file"), 2);
	assert_non_null(strstr(log, "3 pack files lie in a tree sandboxed commands may modify"));
	free(log);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup_layout, fsbt_teardown_core)
	const struct CMUnitTest tests[] = {
		T(file_change_reloads_the_pack),
		T(sighup_reloads_the_pack),
		T(syntax_error_is_reported_and_old_pack_keeps_serving),
		T(endless_decide_is_denied_and_core_keeps_answering),
		T(memory_bomb_in_decide_is_denied_and_core_lives),
		T(raising_decide_is_denied),
		T(approval_survives_a_reload),
		T(packs_in_the_workspace_are_one_warning_said_again_only_when_they_change),
	};

	return fsbt_run_group(tests, NULL, NULL);
}
