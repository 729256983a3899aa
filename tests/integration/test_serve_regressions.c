/*
 * test_serve_regressions.c — one test for each defect a review of the core
 * found, named for what broke, so that none comes back.
 */
#include "harness.h"
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define REPLY 8192

static struct fsbt_core *core(void **state)
{
	return *state;
}

static void request(struct fsbt_core *c, int fd, const char *cls, const char *path,
		    const char *spec, char *reply, int *fd_out)
{
	char line[PATH_MAX + 256];

	fsbt_text_req(line, sizeof(line), cls, path, c->session, spec);
	assert_true(fsbt_request(fd, line, reply, REPLY, fd_out) > 0);
}

/* A directory fd would let its holder openat() a denied file beneath it. */
static void directory_fd_is_never_granted(void **state)
{
	struct fsbt_core *c = core(state);
	char reply[REPLY];
	int fd = fsbt_connect(c), got = -1;

	request(c, fd, FSBT_READ, c->home, "open=0:0", reply, &got);
	assert_int_equal(got, -1);
	assert_true(fsbt_starts(reply, "DENY EISDIR"));
	request(c, fd, FSBT_READ, c->ws, "open=0x10000:0", reply, &got);	/* O_DIRECTORY */
	assert_int_equal(got, -1);
	assert_true(fsbt_starts(reply, "DENY EISDIR"));
	fsbt_close(fd);
}

/* O_CREAT|O_EXCL promises a new file: lock files and mkstemp rely on it. */
static void create_exclusive_on_existing_file_is_eexist(void **state)
{
	struct fsbt_core *c = core(state);
	char reply[REPLY], path[PATH_MAX + 16];
	int fd = fsbt_connect(c), got = -1;

	snprintf(path, sizeof(path), "%s/lock", c->ws);
	fsbt_write_file(path, "held\n");
	request(c, fd, FSBT_WRITE, path, "open=0xc1:0600", reply, &got);	/* WRONLY|CREAT|EXCL */
	assert_int_equal(got, -1);
	assert_true(fsbt_starts(reply, "DENY EEXIST"));
	fsbt_close(fd);
}

/* The kernel refuses O_EXCL on any symlink; so must the core, or a planted
 * dangling link makes it create the link's target. */
static void create_exclusive_through_dangling_symlink_creates_nothing(void **state)
{
	struct fsbt_core *c = core(state);
	char reply[REPLY], link[PATH_MAX + 16], target[PATH_MAX + 16];
	struct stat st;
	int fd = fsbt_connect(c), got = -1;

	snprintf(link, sizeof(link), "%s/tmpfile", c->ws);
	snprintf(target, sizeof(target), "%s/elsewhere", c->ws);
	assert_int_equal(symlink(target, link), 0);
	request(c, fd, FSBT_WRITE, link, "open=0xc1:0600", reply, &got);
	assert_int_equal(got, -1);
	assert_true(fsbt_starts(reply, "DENY EEXIST"));
	assert_int_equal(lstat(target, &st), -1);
	fsbt_close(fd);
}

/* A FIFO without a reader: the core must answer, not block its loop. */
static void fifo_without_reader_does_not_block_the_core(void **state)
{
	struct fsbt_core *c = core(state);
	char reply[REPLY], fifo[PATH_MAX + 16];
	int fd = fsbt_connect(c), got = -1;
	cJSON *r;

	snprintf(fifo, sizeof(fifo), "%s/pipe", c->ws);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	request(c, fd, FSBT_WRITE, fifo, "open=0x1:0", reply, &got);	/* O_WRONLY */
	assert_int_equal(got, -1);
	assert_true(fsbt_starts(reply, "DENY ENXIO"));
	/* The loop is free: the control channel answers. */
	r = fsbt_control_cmd(c, "Stats", NULL);
	assert_true(fsbt_ok(r));
	cJSON_Delete(r);
	fsbt_close(fd);
}

/* CheckAccess is a question: it must not use up a once-approval meant for
 * the command's own request. */
static void check_access_does_not_use_up_a_once_approval(void **state)
{
	struct fsbt_core *c = core(state);
	char reply[REPLY], path[PATH_MAX + 16], block[64];
	int fd = fsbt_connect(c), got = -1;
	cJSON *r;

	snprintf(path, sizeof(path), "%s/notes.txt", c->home);
	request(c, fd, FSBT_WRITE, path, FSBT_OPEN_WRITE, reply, &got);
	assert_true(fsbt_starts(reply, "DENY EACCES ask blk-"));
	assert_int_equal(sscanf(reply, "DENY EACCES ask %63s", block), 1);
	r = fsbt_control_cmd(c, "Approve", "\"blockId\":\"%s\",\"scope\":\"once\"", block);
	assert_true(fsbt_ok(r));
	cJSON_Delete(r);

	r = fsbt_check_access(c, "write", path);
	assert_string_equal(fsbt_str(r, "decision"), "allow");
	cJSON_Delete(r);
	request(c, fd, FSBT_WRITE, path, FSBT_OPEN_WRITE, reply, &got);
	assert_string_equal(reply, "FD");
	assert_true(got >= 0);
	close(got);
	request(c, fd, FSBT_WRITE, path, FSBT_OPEN_WRITE, reply, &got);
	assert_true(fsbt_starts(reply, "DENY EACCES ask"));
	fsbt_close(fd);
}

/* An approval belongs to the session it was given in. */
static void session_approval_does_not_reach_another_session(void **state)
{
	struct fsbt_core *c = core(state);
	char reply[REPLY], path[PATH_MAX + 16], block[64];
	int fd = fsbt_connect(c), got = -1;
	cJSON *r;

	snprintf(path, sizeof(path), "%s/notes.txt", c->home);
	request(c, fd, FSBT_WRITE, path, FSBT_OPEN_WRITE, reply, &got);
	assert_int_equal(sscanf(reply, "DENY EACCES ask %63s", block), 1);
	r = fsbt_control_cmd(c, "Approve", "\"blockId\":\"%s\",\"scope\":\"session\"", block);
	assert_true(fsbt_ok(r));
	cJSON_Delete(r);
	r = fsbt_control_cmd(c, "CheckAccess", "\"path\":\"%s\",\"op\":\"write\"", path);
	assert_string_equal(fsbt_str(r, "decision"), "allow");
	cJSON_Delete(r);
	r = fsbt_control_cmd(c, "CheckAccess", "\"path\":\"%s\",\"op\":\"write\","
			     "\"sessionId\":\"another-session\"", path);
	assert_string_equal(fsbt_str(r, "decision"), "ask");
	cJSON_Delete(r);
	fsbt_close(fd);
}

/* The reply to an over-long line follows that line's format, even when a
 * line of the other format came before it in the same read. */
static void over_long_text_line_after_json_gets_a_text_reply(void **state)
{
	struct fsbt_core *c = core(state);
	size_t jlen = 50000, tlen = 70000;
	char *buf = malloc(jlen + tlen + 2), reply[REPLY];
	ssize_t n;
	int fd = fsbt_connect(c);

	assert_non_null(buf);
	memset(buf, 'a', jlen + tlen + 2);
	buf[0] = '{';
	buf[jlen] = '\n';
	buf[jlen + 1] = 'x';
	assert_int_equal(fsbt_send(fd, buf, jlen + tlen + 1, -1), 0);
	n = fsbt_read_reply(fd, reply, sizeof(reply), NULL);
	assert_true(n > 0);
	assert_true(fsbt_starts(reply, "{"));		/* the JSON line's error */
	n = fsbt_read_reply(fd, reply, sizeof(reply), NULL);
	assert_true(n > 0);
	assert_true(fsbt_starts(reply, "DENY E2BIG"));
	free(buf);
	fsbt_close(fd);
}

/* Each malformed line costs an audit line: a connection that sends nothing
 * else is closed after a bounded number. */
static void flood_of_malformed_lines_closes_the_connection(void **state)
{
	struct fsbt_core *c = core(state);
	char reply[REPLY];
	ssize_t n = 0;
	int fd = fsbt_connect(c), answered = 0;

	for (int i = 0; i < 200; i++)
		if (fsbt_send(fd, "", 0, -1) < 0)
			break;
	while ((n = fsbt_read_reply(fd, reply, sizeof(reply), NULL)) > 0)
		answered++;
	assert_true(n == FSBT_EOF || n == -ECONNRESET);
	assert_int_equal(answered, FSB_MAX_MALFORMED);
	fsbt_close(fd);
}

/* A pack near its memory cap must make requests fail closed, never abort
 * the core (building the request table allocates too). */
static void pack_at_its_memory_cap_denies_without_crashing(void **state)
{
	struct fsbt_core *c = fsbt_core_new();
	char pack[PATH_MAX + 16], reply[REPLY], longpath[4000];
	int fd, got = -1;
	cJSON *r;

	*state = c;
	snprintf(pack, sizeof(pack), "%s/hog.lua", c->rules_dir);
	fsbt_write_file(pack,
		"local hoard = {}\n"
		"return {\n"
		"  name = \"hog\",\n"
		"  fsProfile = { read = { \"/**\" }, modify = { \"${workspace}/**\" } },\n"
		"  decide = function(req, v)\n"
		"    if req.path:find('hog', 1, true) then\n"
		"      local s = string.rep('x', 4096)\n"
		"      while true do hoard[#hoard + 1] = s .. #hoard end\n"
		"    end\n"
		"    return v\n"
		"  end,\n"
		"}\n");
	snprintf(c->rules, sizeof(c->rules), "%s", pack);
	fsbt_core_start(c);
	fd = fsbt_connect(c);
	snprintf(longpath, sizeof(longpath), "%s/hog", c->ws);
	request(c, fd, FSBT_READ, longpath, NULL, reply, &got);
	assert_true(fsbt_starts(reply, "DENY EACCES"));
	/* The hoard stays: every later request meets a full state. */
	memset(longpath, 'a', sizeof(longpath) - 1);
	longpath[0] = '/';
	longpath[sizeof(longpath) - 1] = '\0';
	for (int i = 0; i < 5; i++) {
		request(c, fd, FSBT_READ, longpath, NULL, reply, &got);
		assert_true(fsbt_starts(reply, "DENY"));
	}
	r = fsbt_control_cmd(c, "Stats", NULL);
	assert_true(fsbt_ok(r));
	cJSON_Delete(r);
	fsbt_close(fd);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fsbt_setup_core, fsbt_teardown_core)
	const struct CMUnitTest tests[] = {
		T(directory_fd_is_never_granted),
		T(create_exclusive_on_existing_file_is_eexist),
		T(create_exclusive_through_dangling_symlink_creates_nothing),
		T(fifo_without_reader_does_not_block_the_core),
		T(check_access_does_not_use_up_a_once_approval),
		T(session_approval_does_not_reach_another_session),
		T(over_long_text_line_after_json_gets_a_text_reply),
		T(flood_of_malformed_lines_closes_the_connection),
		cmocka_unit_test_teardown(pack_at_its_memory_cap_denies_without_crashing,
					  fsbt_teardown_core),
	};

	return fsbt_run_group(tests, NULL, NULL);
}
