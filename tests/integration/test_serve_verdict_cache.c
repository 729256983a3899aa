/*
 * test_serve_verdict_cache.c — the core's verdict cache seen from a
 * client (docs/benchmarks.md, "A verdict cache"): a read or a write judged
 * before is answered as before, but never across a reload (a pack that now
 * denies the path denies the next read and the next write), never for an
 * approval (a "once" approval is used up), never for a pack with a decide
 * hook, never once the file has gained another name (the hard-link rule);
 * and every request, answered from the cache or not, still writes its
 * audit line.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

#define REPLY_MAX 4096

/* fsProfile.read %s, denyRead %s, ask.read %s, more fields %s. */
static const char pack_fmt[] =
	"-- a pack written by test_serve_verdict_cache\n"
	"local calls = 0\n"
	"return {\n"
	"  name = \"verdict-cache\",\n"
	"  fsProfile = { read = { %s }, modify = { \"${workspace}/out/**\" } },\n"
	"  denyRead = { %s },\n"
	"  ask = { read = { %s } },\n"
	"%s"
	"}\n";

static void write_pack(struct fsbt_core *c, const char *read, const char *deny,
		       const char *ask, const char *extra)
{
	char tmp[PATH_MAX + 16], *text;

	assert_true(asprintf(&text, pack_fmt, read, deny, ask, extra) > 0);
	snprintf(c->rules, sizeof(c->rules), "%s/verdict-cache.lua", c->rules_dir);
	snprintf(tmp, sizeof(tmp), "%s/.verdict-cache.lua.new", c->rules_dir);
	fsbt_write_file(tmp, text);
	free(text);
	/* One rename: the core's watcher never sees half a file. */
	if (rename(tmp, c->rules) < 0)
		fail_msg("rename %s: %s", tmp, strerror(errno));
}

static int setup_layout(void **state)
{
	*state = fsbt_core_new();
	return 0;
}

/* One read request for <ws>/<name> on `fd`; the reply in `reply`. */
static void read_req(struct fsbt_core *c, int fd, const char *name, char *reply)
{
	char p[PATH_MAX], line[PATH_MAX + 256];
	int got = -1;

	snprintf(p, sizeof(p), "%s/%s", c->ws, name);
	fsbt_text_req(line, sizeof(line), FSBT_READ, p, c->session, NULL);
	if (fsbt_request(fd, line, reply, REPLY_MAX, &got) < 0)
		fail_msg("no reply to %s", line);
	if (got >= 0)
		close(got);
}

/* A write-open of ws/`name` (O_WRONLY|O_CREAT|O_TRUNC); an fd is closed. */
static void write_req(struct fsbt_core *c, int fd, const char *name, char *reply)
{
	char p[PATH_MAX], line[PATH_MAX + 256];
	int got = -1;

	snprintf(p, sizeof(p), "%s/%s", c->ws, name);
	fsbt_text_req(line, sizeof(line), FSBT_WRITE, p, c->session, FSBT_OPEN_WRITE);
	if (fsbt_request(fd, line, reply, REPLY_MAX, &got) < 0)
		fail_msg("no reply to %s", line);
	if (got >= 0)
		close(got);
}

static double stat_of(struct fsbt_core *c, const char *name)
{
	cJSON *r = fsbt_control_cmd(c, "Stats", NULL);
	double v = fsbt_num(r, name);

	cJSON_Delete(r);
	return v;
}

static void reload(struct fsbt_core *c)
{
	cJSON *r = fsbt_control_cmd(c, "Reload", NULL);

	if (!fsbt_ok(r))
		fail_msg("Reload failed: %s", fsbt_str(r, "error"));
	cJSON_Delete(r);
}

static void reload_that_denies_a_path_denies_the_next_read(void **state)
{
	struct fsbt_core *c = *state;
	char reply[REPLY_MAX];
	int fd;

	write_pack(c, "\"/**\"", "\"/nothing-here/**\"", "", "");
	fsbt_write_file(strcat(strcpy(reply, c->ws), "/secret.txt"), "s\n");
	fsbt_core_start(c);
	fd = fsbt_connect(c);
	assert_true(fd >= 0);
	read_req(c, fd, "secret.txt", reply);
	assert_string_equal(reply, "SANDBOX");
	read_req(c, fd, "secret.txt", reply);
	assert_string_equal(reply, "SANDBOX");
	/* The second answer came from the cache: what follows tests it. */
	assert_true(stat_of(c, "verdictCacheHits") >= 1);

	write_pack(c, "\"/**\"", "\"${workspace}/secret*\"", "", "");
	reload(c);
	read_req(c, fd, "secret.txt", reply);
	if (!fsbt_starts(reply, "DENY EACCES denyRead "))
		fail_msg("after the reload, expected a denyRead refusal, got \"%s\"", reply);
	/* And back: the allow is not remembered from before either. */
	write_pack(c, "\"/**\"", "\"/nothing-here/**\"", "", "");
	reload(c);
	read_req(c, fd, "secret.txt", reply);
	assert_string_equal(reply, "SANDBOX");
	fsbt_close(fd);
}

static void reload_that_denies_a_path_denies_the_next_write(void **state)
{
	struct fsbt_core *c = *state;
	char reply[REPLY_MAX], p[PATH_MAX];
	double hits;
	int fd;

	write_pack(c, "\"/**\"", "\"/nothing-here/**\"", "", "");
	snprintf(p, sizeof(p), "%s/out", c->ws);
	assert_int_equal(mkdir(p, 0700), 0);
	fsbt_core_start(c);
	fd = fsbt_connect(c);
	assert_true(fd >= 0);
	/* A create, then a write of what is there: two keys. */
	write_req(c, fd, "out/a.txt", reply);
	assert_string_equal(reply, "FD");
	write_req(c, fd, "out/a.txt", reply);
	assert_string_equal(reply, "FD");
	hits = stat_of(c, "verdictCacheHits");
	write_req(c, fd, "out/a.txt", reply);
	assert_string_equal(reply, "FD");
	assert_true(stat_of(c, "verdictCacheHits") > hits);

	write_pack(c, "\"/**\"", "\"/nothing-here/**\"", "",
		   "  denyModify = { \"${workspace}/out/a.txt\" },\n");
	reload(c);
	write_req(c, fd, "out/a.txt", reply);
	if (!fsbt_starts(reply, "DENY EACCES denyModify "))
		fail_msg("after the reload, expected a denyModify refusal, got \"%s\"", reply);
	fsbt_close(fd);
}

/* The hard-link rule looks at the link count: a file allowed while it had
 * one name is judged again once it has two (an allow remembered from
 * before would let a write through to the other name). */
static void a_file_that_gains_a_second_name_is_judged_again(void **state)
{
	struct fsbt_core *c = *state;
	char reply[REPLY_MAX], p[PATH_MAX], q[PATH_MAX];
	int fd;

	write_pack(c, "\"/**\"", "\"/nothing-here/**\"", "", "  hardlinks = \"ask\",\n");
	snprintf(p, sizeof(p), "%s/out", c->ws);
	assert_int_equal(mkdir(p, 0700), 0);
	fsbt_core_start(c);
	fd = fsbt_connect(c);
	assert_true(fd >= 0);
	write_req(c, fd, "out/b.txt", reply);
	assert_string_equal(reply, "FD");
	write_req(c, fd, "out/b.txt", reply);
	assert_string_equal(reply, "FD");
	snprintf(p, sizeof(p), "%s/out/b.txt", c->ws);
	snprintf(q, sizeof(q), "%s/out/b2.txt", c->ws);
	assert_int_equal(link(p, q), 0);
	write_req(c, fd, "out/b.txt", reply);
	if (!fsbt_starts(reply, "DENY EACCES ask "))
		fail_msg("a file with two names: expected an ask, got \"%s\"", reply);
	fsbt_close(fd);
}

/* An ask is judged each time, so the approval is what answers; a "once"
 * approval answers one read, never a second one from the cache. */
static void approval_changes_the_answer_once_and_for_the_session(void **state)
{
	struct fsbt_core *c = *state;
	char reply[REPLY_MAX], block[24];
	cJSON *r;
	int fd;

	write_pack(c, "\"${workspace}/*.txt\"", "\"/nothing-here/**\"", "\"${workspace}/asked/**\"",
		   "");
	snprintf(reply, sizeof(reply), "%s/asked", c->ws);
	assert_int_equal(mkdir(reply, 0700), 0);
	fsbt_write_file(strcat(reply, "/a.txt"), "a\n");
	fsbt_core_start(c);
	fd = fsbt_connect(c);
	assert_true(fd >= 0);

	read_req(c, fd, "asked/a.txt", reply);
	if (sscanf(reply, "DENY EACCES ask %23s", block) != 1)
		fail_msg("expected an ask, got \"%s\"", reply);
	r = fsbt_control_cmd(c, "Approve", "\"blockId\":\"%s\",\"scope\":\"once\"", block);
	assert_true(fsbt_ok(r));
	cJSON_Delete(r);
	read_req(c, fd, "asked/a.txt", reply);
	assert_string_equal(reply, "SANDBOX");
	read_req(c, fd, "asked/a.txt", reply);
	if (sscanf(reply, "DENY EACCES ask %23s", block) != 1)
		fail_msg("a once approval was used twice: got \"%s\"", reply);

	r = fsbt_control_cmd(c, "Approve", "\"blockId\":\"%s\",\"scope\":\"session\"", block);
	assert_true(fsbt_ok(r));
	cJSON_Delete(r);
	for (int i = 0; i < 3; i++) {
		read_req(c, fd, "asked/a.txt", reply);
		assert_string_equal(reply, "SANDBOX");
	}
	fsbt_close(fd);
}

/* Count the lines of the session's audit log holding `needle`. */
static int audit_lines(struct fsbt_core *c, const char *needle)
{
	char log[PATH_MAX + 64], *text, *p;
	int n = 0;

	snprintf(log, sizeof(log), "%s/audit/%s.jsonl", c->state, c->session);
	text = fsbt_read_file(log, NULL);
	assert_non_null(text);
	for (p = text; (p = strstr(p, needle)) != NULL; p++)
		n++;
	free(text);
	return n;
}

static void every_read_still_writes_its_audit_line(void **state)
{
	struct fsbt_core *c = *state;
	char reply[REPLY_MAX], p[PATH_MAX];
	int fd, allowed = 0, denied = 0;

	write_pack(c, "\"/**\"", "\"${workspace}/secret*\"", "", "");
	fsbt_write_file(strcat(strcpy(p, c->ws), "/open.txt"), "o\n");
	fsbt_write_file(strcat(strcpy(p, c->ws), "/secret.txt"), "s\n");
	fsbt_core_start(c);
	fd = fsbt_connect(c);
	assert_true(fd >= 0);
	for (int i = 0; i < 40; i++) {
		read_req(c, fd, "open.txt", reply);
		allowed += strcmp(reply, "SANDBOX") == 0;
		read_req(c, fd, "secret.txt", reply);
		denied += fsbt_starts(reply, "DENY EACCES denyRead ");
	}
	fsbt_close(fd);
	assert_int_equal(allowed, 40);
	assert_int_equal(denied, 40);
	assert_true(stat_of(c, "verdictCacheHits") >= 78);
	/* One line per request, each as full as the first: rule and reason. */
	assert_int_equal(audit_lines(c, "\"phase\":\"ipc-token\""), 80);
	assert_int_equal(audit_lines(c, "\"rule\":\"fsProfile.read /**\""), 40);
	assert_int_equal(audit_lines(c, "\"decision\":\"deny\""), 40);
	assert_int_equal(audit_lines(c, "is denied by denyRead"), 40);
}

/* A decide hook may keep state: with one, every read is judged afresh. */
static void decide_hook_verdicts_are_never_cached(void **state)
{
	struct fsbt_core *c = *state;
	char reply[REPLY_MAX], p[PATH_MAX];
	int fd, allowed = 0, denied = 0;

	write_pack(c, "\"/**\"", "\"/nothing-here/**\"", "",
		   "  decide = function(req, verdict)\n"
		   "    calls = calls + 1\n"
		   "    if calls % 2 == 0 then return { decision = \"deny\", rule = \"every other\" } end\n"
		   "  end,\n");
	fsbt_write_file(strcat(strcpy(p, c->ws), "/open.txt"), "o\n");
	fsbt_core_start(c);
	fd = fsbt_connect(c);
	assert_true(fd >= 0);
	for (int i = 0; i < 6; i++) {
		read_req(c, fd, "open.txt", reply);
		allowed += strcmp(reply, "SANDBOX") == 0;
		denied += fsbt_starts(reply, "DENY EACCES every other");
	}
	fsbt_close(fd);
	assert_int_equal(allowed, 3);
	assert_int_equal(denied, 3);
	assert_int_equal((int)stat_of(c, "verdictCacheHits"), 0);
}

/*
 * What a verdict is — a failure, an approval, cacheable — comes from the
 * engine, not from its rule's text: a hook may name its rule "policy
 * error" or "approved:once" and its allow is neither; a hook that raises
 * is a failure whatever it was called. (The core once compared rule text.)
 */
static void a_hooks_rule_named_like_a_failure_is_not_one(void **state)
{
	struct fsbt_core *c = *state;
	char reply[REPLY_MAX], p[PATH_MAX];
	int fd;

	write_pack(c, "\"/**\"", "\"/nothing-here/**\"", "",
		   "  decide = function(req, verdict)\n"
		   "    if req.path:find('raises', 1, true) then error('boom') end\n"
		   "    if req.path:find('named', 1, true) then\n"
		   "      return { decision = \"allow\", rule = \"policy error\" }\n"
		   "    end\n"
		   "  end,\n");
	fsbt_write_file(strcat(strcpy(p, c->ws), "/named.txt"), "n\n");
	fsbt_write_file(strcat(strcpy(p, c->ws), "/raises.txt"), "r\n");
	fsbt_core_start(c);
	fd = fsbt_connect(c);
	assert_true(fd >= 0);
	read_req(c, fd, "named.txt", reply);
	assert_string_equal(reply, "SANDBOX");
	assert_int_equal((int)stat_of(c, "policyErrors"), 0);
	read_req(c, fd, "raises.txt", reply);
	assert_true(fsbt_starts(reply, "DENY EACCES decide error"));
	assert_int_equal((int)stat_of(c, "policyErrors"), 1);
	fsbt_close(fd);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup_layout, fsbt_teardown_core)
	const struct CMUnitTest tests[] = {
		T(reload_that_denies_a_path_denies_the_next_read),
		T(approval_changes_the_answer_once_and_for_the_session),
		T(every_read_still_writes_its_audit_line),
		T(decide_hook_verdicts_are_never_cached),
		T(a_hooks_rule_named_like_a_failure_is_not_one),
		T(reload_that_denies_a_path_denies_the_next_write),
		T(a_file_that_gains_a_second_name_is_judged_again),
	};
#undef T

	return fsbt_run_group(tests, NULL, NULL);
}
