/*
 * test_serve_admin.c — the admin socket (DESIGN §3.0): a socket scoped to
 * one tool call, opened for an `fsbroker run` outside the sandbox, binds
 * every request on it to that tool call, and ends with its run.
 */
#include "harness.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define REPLY 8192

static void admin_path(const struct fsbt_core *c, char *out, size_t len)
{
	snprintf(out, len, "%s/admin.sock", c->state);
}

static int admin_connect(const struct fsbt_core *c)
{
	char path[PATH_MAX + 16];
	int fd;

	admin_path(c, path, sizeof(path));
	fd = fsbt_connect_path(path);
	if (fd < 0)
		fail_msg("cannot connect to the admin socket %s: %s", path, strerror(-fd));
	return fd;
}

/* One admin request, its reply parsed (never NULL). */
static cJSON *admin(int fd, const char *line)
{
	char reply[REPLY];
	cJSON *r;

	if (fsbt_request(fd, line, reply, sizeof(reply), NULL) <= 0)
		fail_msg("no reply to %s", line);
	r = cJSON_Parse(reply);
	if (r == NULL)
		fail_msg("not JSON: %s", reply);
	return r;
}

static cJSON *open_scope(const struct fsbt_core *c, int fd, const char *tool_call)
{
	char line[512];

	snprintf(line, sizeof(line), "{\"id\":1,\"command\":\"OpenScope\",\"sessionId\":\"%s\","
		 "\"toolCallId\":\"%s\"}", c->session, tool_call);
	return admin(fd, line);
}

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* Poll up to 5 s for `path` to go: the core closes it on its loop. */
static bool gone_soon(const char *path)
{
	for (int i = 0; i < 500; i++) {
		if (!exists(path))
			return true;
		fsbt_sleep_ms(10);
	}
	return false;
}

static void admin_socket_is_private_to_the_user(void **state)
{
	struct fsbt_core *c = *state;
	char path[PATH_MAX + 16];
	struct stat st;

	admin_path(c, path, sizeof(path));
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(lstat(c->state, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
}

/* Requests on a scoped socket speak for its tool call and no other. */
static void scoped_socket_binds_requests_to_its_tool_call(void **state)
{
	struct fsbt_core *c = *state;
	char file[PATH_MAX + 16], line[PATH_MAX + 256], reply[REPLY], sock[PATH_MAX];
	int a = admin_connect(c), s;
	cJSON *r;

	r = open_scope(c, a, "tc-run-1");
	assert_true(fsbt_ok(r));
	snprintf(sock, sizeof(sock), "%s", fsbt_str(r, "socket"));
	assert_string_equal(fsbt_str(r, "toolCallId"), "tc-run-1");
	cJSON_Delete(r);
	assert_true(exists(sock));

	snprintf(file, sizeof(file), "%s/a.txt", c->ws);
	fsbt_write_file(file, "a\n");
	s = fsbt_connect_path(sock);
	assert_true(s >= 0);
	snprintf(line, sizeof(line), "fsbroker.read\t%s\t%s\ttc-run-1", file, c->session);
	assert_true(fsbt_request(s, line, reply, sizeof(reply), NULL) > 0);
	assert_string_equal(reply, "SANDBOX");
	/* Another tool call, though the same session: refused. */
	snprintf(line, sizeof(line), "fsbroker.read\t%s\t%s\ttc-other", file, c->session);
	assert_true(fsbt_request(s, line, reply, sizeof(reply), NULL) > 0);
	assert_true(fsbt_starts(reply, "DENY EACCES foreign session"));
	/* And a host operation naming another tool call. */
	snprintf(line, sizeof(line), "{\"id\":3,\"command\":\"HostFileOperation\","
		 "\"operation\":\"touch\",\"path\":\"%s\",\"toolCallId\":\"tc-other\"}", file);
	r = fsbt_hostop(s, line);
	assert_non_null(r);
	assert_false(fsbt_ok(r));
	assert_string_equal(fsbt_str(r, "errno"), "EACCES");
	cJSON_Delete(r);
	fsbt_close(s);
	fsbt_close(a);
}

static void close_scope_removes_the_socket_and_ends_its_connections(void **state)
{
	struct fsbt_core *c = *state;
	char line[PATH_MAX + 256], reply[REPLY], sock[PATH_MAX];
	int a = admin_connect(c), s;
	cJSON *r;

	r = open_scope(c, a, "tc-run-2");
	assert_true(fsbt_ok(r));
	snprintf(sock, sizeof(sock), "%s", fsbt_str(r, "socket"));
	cJSON_Delete(r);
	s = fsbt_connect_path(sock);
	assert_true(s >= 0);
	snprintf(line, sizeof(line), "{\"id\":2,\"command\":\"CloseScope\",\"socket\":\"%s\"}", sock);
	r = admin(a, line);
	assert_true(fsbt_ok(r));
	cJSON_Delete(r);
	assert_false(exists(sock));
	/* The connection made through it is closed by the core (an end of
	 * file, or a reset when the close came with unread bytes). */
	{
		ssize_t n = fsbt_read_reply(s, reply, sizeof(reply), NULL);

		assert_true(n == FSBT_EOF || n == -ECONNRESET);
	}
	fsbt_close(s);
	/* Closing it again, or a path that is not ours, is an error. */
	r = admin(a, line);
	assert_false(fsbt_ok(r));
	assert_non_null(strstr(fsbt_str(r, "error"), "no scoped socket"));
	cJSON_Delete(r);
	fsbt_close(a);
}

/* The run ends (its admin connection closes): its scoped sockets go. */
static void scoped_sockets_end_with_the_admin_connection(void **state)
{
	struct fsbt_core *c = *state;
	char one[PATH_MAX], two[PATH_MAX];
	int a = admin_connect(c);
	cJSON *r;

	r = open_scope(c, a, "tc-run-3");
	snprintf(one, sizeof(one), "%s", fsbt_str(r, "socket"));
	cJSON_Delete(r);
	r = open_scope(c, a, "tc-run-4");
	snprintf(two, sizeof(two), "%s", fsbt_str(r, "socket"));
	cJSON_Delete(r);
	assert_string_not_equal(one, two);
	assert_true(exists(one) && exists(two));
	fsbt_close(a);
	assert_true(gone_soon(one));
	assert_true(gone_soon(two));
	/* The core goes on serving: the main socket still answers. */
	a = admin_connect(c);
	r = open_scope(c, a, "tc-run-5");
	assert_true(fsbt_ok(r));
	cJSON_Delete(r);
	fsbt_close(a);
}

/* A run that names no session gets the core's, and learns the core's pack
 * and workspace: it builds its sandbox's view from them. */
static void open_scope_tells_the_core_session_pack_and_workspace(void **state)
{
	struct fsbt_core *c = *state;
	int a = admin_connect(c);
	cJSON *r;

	r = admin(a, "{\"id\":1,\"command\":\"OpenScope\",\"toolCallId\":\"tc-run-6\"}");
	assert_true(fsbt_ok(r));
	assert_string_equal(fsbt_str(r, "sessionId"), c->session);
	assert_string_equal(fsbt_str(r, "workspace"), c->ws);
	assert_string_equal(fsbt_str(r, "home"), c->home);
	assert_string_equal(fsbt_str(r, "stateDir"), c->state);
	assert_non_null(strstr(fsbt_str(r, "pack"), "/default.lua"));
	cJSON_Delete(r);
	fsbt_close(a);
}

static void bad_admin_requests_get_a_sentence(void **state)
{
	struct fsbt_core *c = *state;
	int a = admin_connect(c);
	cJSON *r;

	r = admin(a, "{\"command\":\"OpenScope\"}");
	assert_false(fsbt_ok(r));
	assert_non_null(strstr(fsbt_str(r, "error"), "\"id\""));
	cJSON_Delete(r);
	r = admin(a, "{\"id\":1,\"command\":\"OpenScope\",\"sessionId\":\"s\"}");
	assert_false(fsbt_ok(r));
	assert_non_null(strstr(fsbt_str(r, "error"), "toolCallId"));
	cJSON_Delete(r);
	r = admin(a, "{\"id\":2,\"command\":\"OpenScope\",\"sessionId\":\"s\","
		     "\"toolCallId\":\"../x\"}");
	assert_false(fsbt_ok(r));
	assert_non_null(strstr(fsbt_str(r, "error"), "1-128 characters"));
	cJSON_Delete(r);
	r = admin(a, "{\"id\":3,\"command\":\"Reload\"}");
	assert_false(fsbt_ok(r));
	assert_non_null(strstr(fsbt_str(r, "error"), "unknown admin command"));
	cJSON_Delete(r);
	r = admin(a, "{\"id\":4,\"command\":\"Supervise\"}");
	assert_false(fsbt_ok(r));
	assert_non_null(strstr(fsbt_str(r, "error"), "seccomp listener"));
	cJSON_Delete(r);
	r = admin(a, "not json");
	assert_false(fsbt_ok(r));
	cJSON_Delete(r);
	/* A text request on the admin socket is not a client request. */
	r = admin(a, "fsbroker.read\t/etc/hostname\ts\ttc");
	assert_false(fsbt_ok(r));
	cJSON_Delete(r);
	fsbt_close(a);
}

/* Another user cannot reach the admin socket: the state dir is 0700 (and
 * SO_PEERCRED would refuse the connection besides). */
static void another_user_cannot_connect(void **state)
{
	struct fsbt_core *c = *state;
	char path[PATH_MAX + 16];
	int status;
	pid_t pid;

	if (geteuid() != 0)
		fsbt_skip("needs root to become another user for the test");
	admin_path(c, path, sizeof(path));
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct sockaddr_un addr = { .sun_family = AF_UNIX };
		int fd;

		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(3);
		snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		_exit(connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0 ? 1 : 0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fsbt_setup_core, fsbt_teardown_core)
	const struct CMUnitTest tests[] = {
		T(admin_socket_is_private_to_the_user),
		T(scoped_socket_binds_requests_to_its_tool_call),
		T(close_scope_removes_the_socket_and_ends_its_connections),
		T(scoped_sockets_end_with_the_admin_connection),
		T(open_scope_tells_the_core_session_pack_and_workspace),
		T(bad_admin_requests_get_a_sentence),
		T(another_user_cannot_connect),
	};

	return fsbt_run_group(tests, NULL, NULL);
}
