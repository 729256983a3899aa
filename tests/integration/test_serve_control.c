/*
 * test_serve_control.c — the control channel of `fsbroker serve` (JSON lines
 * on its stdin and stdout): CheckAccess verdicts, malformed requests, Stats,
 * Reload, Shutdown, and what EOF on stdin does.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static void check_access_allows_workspace_read(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX];
	cJSON *r;

	snprintf(p, sizeof(p), "%s/main.c", c->ws);
	fsbt_write_file(p, "int main;\n");
	r = fsbt_check_access(c, "read", p);
	assert_true(fsbt_ok(r));
	assert_string_equal(fsbt_str(r, "decision"), "allow");
	assert_string_equal(fsbt_str(r, "rule"), "fsProfile.read /**");
	assert_string_equal(fsbt_str(r, "normalisedPath"), p);
	cJSON_Delete(r);
}

/* The dev/ino a host compares with what it then opens itself. */
static void assert_identity(const cJSON *r, const char *path)
{
	struct stat st;
	char want[24];

	assert_int_equal(lstat(path, &st), 0);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r, "exists")));
	snprintf(want, sizeof(want), "%ju", (uintmax_t)st.st_dev);
	assert_string_equal(fsbt_str(r, "dev"), want);
	snprintf(want, sizeof(want), "%ju", (uintmax_t)st.st_ino);
	assert_string_equal(fsbt_str(r, "ino"), want);
}

/*
 * CheckAccess and ModifyBackup name the object they judged: a host that
 * reads or writes the file itself afterwards checks that it opened that
 * very object, not one swapped in under the name since.
 */
static void check_access_and_modify_backup_name_the_object_judged(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX], fresh[PATH_MAX];
	cJSON *r;

	snprintf(p, sizeof(p), "%s/judged.txt", c->ws);
	snprintf(fresh, sizeof(fresh), "%s/not-yet.txt", c->ws);
	fsbt_write_file(p, "old\n");
	r = fsbt_check_access(c, "read", p);
	assert_string_equal(fsbt_str(r, "decision"), "allow");
	assert_identity(r, p);
	cJSON_Delete(r);

	r = fsbt_control_cmd(c, "ModifyBackup", "\"path\":\"%s\"", p);
	assert_true(fsbt_ok(r));
	assert_string_equal(fsbt_str(r, "normalisedPath"), p);
	assert_identity(r, p);
	cJSON_Delete(r);

	r = fsbt_control_cmd(c, "ModifyBackup", "\"path\":\"%s\"", fresh);
	assert_true(fsbt_ok(r));
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(r, "exists")));
	assert_null(cJSON_GetObjectItem(r, "ino"));
	cJSON_Delete(r);
}

static void check_access_denies_ssh_key_naming_the_rule(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX];
	cJSON *r;

	snprintf(p, sizeof(p), "%s/.ssh/id_ed25519", c->home);
	r = fsbt_check_access(c, "read", p);
	assert_true(fsbt_ok(r));
	assert_string_equal(fsbt_str(r, "decision"), "deny");
	assert_string_equal(fsbt_str(r, "rule"), "denyRead ~/.ssh/**");
	assert_string_equal(fsbt_str(r, "errno"), "EACCES");
	assert_true(strlen(fsbt_str(r, "reason")) > 0);
	cJSON_Delete(r);
}

static void check_access_asks_for_home_write_with_block(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX];
	cJSON *r;

	snprintf(p, sizeof(p), "%s/.bashrc", c->home);
	fsbt_write_file(p, "# rc\n");
	r = fsbt_check_access(c, "write", p);
	assert_true(fsbt_ok(r));
	assert_string_equal(fsbt_str(r, "decision"), "ask");
	assert_string_equal(fsbt_str(r, "rule"), "ask.modify ~/**");
	assert_true(fsbt_starts(fsbt_str(r, "blockId"), "blk-"));
	cJSON_Delete(r);
}

static void unknown_command_is_refused_with_a_sentence(void **state)
{
	cJSON *r = fsbt_control(*state, "{\"id\":7,\"command\":\"MakeCoffee\"}");
	const char *err;

	assert_non_null(r);
	assert_false(fsbt_ok(r));
	assert_int_equal((int)fsbt_num(r, "id"), 7);
	err = fsbt_str(r, "error");
	assert_non_null(strstr(err, "MakeCoffee"));
	/* A sentence that says what would work. */
	assert_non_null(strstr(err, "CheckAccess"));
	cJSON_Delete(r);
}

static void request_without_id_is_refused(void **state)
{
	cJSON *r = fsbt_control(*state, "{\"command\":\"Stats\"}");

	assert_non_null(r);
	assert_false(fsbt_ok(r));
	assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(r, "id")));
	assert_non_null(strstr(fsbt_str(r, "error"), "id"));
	cJSON_Delete(r);
}

static void stats_counts_requests(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX], key[PATH_MAX], line[PATH_MAX + 256], reply[4096];
	cJSON *before, *after;
	int fd;

	snprintf(p, sizeof(p), "%s/a.txt", c->ws);
	snprintf(key, sizeof(key), "%s/.ssh/id_ed25519", c->home);
	fsbt_write_file(p, "a\n");
	before = fsbt_control_cmd(c, "Stats", NULL);
	assert_true(fsbt_ok(before));
	fd = fsbt_connect(c);
	assert_true(fd >= 0);
	for (int i = 0; i < 5; i++) {
		fsbt_text_req(line, sizeof(line), FSBT_READ, i < 3 ? p : key, c->session, NULL);
		assert_true(fsbt_request(fd, line, reply, sizeof(reply), NULL) >= 0);
	}
	fsbt_close(fd);
	after = fsbt_control_cmd(c, "Stats", NULL);
	assert_true(fsbt_ok(after));
	assert_int_equal(fsbt_num(after, "requests") - fsbt_num(before, "requests"), 5);
	assert_int_equal(fsbt_num(after, "allowed") - fsbt_num(before, "allowed"), 3);
	assert_int_equal(fsbt_num(after, "denied") - fsbt_num(before, "denied"), 2);
	assert_int_equal(fsbt_num(after, "connections") - fsbt_num(before, "connections"), 1);
	cJSON_Delete(before);
	cJSON_Delete(after);
}

static void reload_succeeds_and_is_counted(void **state)
{
	struct fsbt_core *c = *state;
	cJSON *r = fsbt_control_cmd(c, "Reload", NULL), *stats;

	assert_true(fsbt_ok(r));
	assert_string_equal(fsbt_str(r, "pack"), "default");
	cJSON_Delete(r);
	stats = fsbt_control_cmd(c, "Stats", NULL);
	assert_int_equal((int)fsbt_num(stats, "reloads"), 1);
	assert_int_equal((int)fsbt_num(stats, "reloadFailures"), 0);
	cJSON_Delete(stats);
}

static void shutdown_exits_zero_and_removes_the_socket(void **state)
{
	struct fsbt_core *c = *state;
	cJSON *r;

	assert_int_equal(access(c->sock, F_OK), 0);
	r = fsbt_control_cmd(c, "Shutdown", NULL);
	assert_true(fsbt_ok(r));
	cJSON_Delete(r);
	assert_int_equal(fsbt_core_wait_exit(c, FSBT_TIMEOUT_MS), 0);
	assert_true(WIFEXITED(c->exit_status));
	assert_int_equal(WEXITSTATUS(c->exit_status), 0);
	assert_int_equal(access(c->sock, F_OK), -1);
	assert_int_equal(errno, ENOENT);
}

/* The host went away: nobody could approve or stop the core any more. */
static void eof_on_stdin_stops_the_core(void **state)
{
	struct fsbt_core *c = *state;

	close(c->ctl_in);
	c->ctl_in = -1;
	assert_int_equal(fsbt_core_wait_exit(c, FSBT_TIMEOUT_MS), 0);
	assert_true(WIFEXITED(c->exit_status));
	assert_int_equal(WEXITSTATUS(c->exit_status), 0);
	assert_int_equal(access(c->sock, F_OK), -1);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fsbt_setup_core, fsbt_teardown_core)
	const struct CMUnitTest tests[] = {
		T(check_access_allows_workspace_read),
		T(check_access_and_modify_backup_name_the_object_judged),
		T(check_access_denies_ssh_key_naming_the_rule),
		T(check_access_asks_for_home_write_with_block),
		T(unknown_command_is_refused_with_a_sentence),
		T(request_without_id_is_refused),
		T(stats_counts_requests),
		T(reload_succeeds_and_is_counted),
		T(shutdown_exits_zero_and_removes_the_socket),
		T(eof_on_stdin_stops_the_core),
	};

	return fsbt_run_group(tests, NULL, NULL);
}
