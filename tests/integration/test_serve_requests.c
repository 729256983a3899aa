/*
 * test_serve_requests.c — client requests through the real socket of
 * `fsbroker serve` on the default pack: grants and their fds, policy
 * denials, approvals, malformed lines, JSON requests, protected paths,
 * framing, fd hygiene, socket permissions and the audit chain.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libgen.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define REPLY_MAX 8192

static char *path_in(char *out, size_t size, const char *dir, const char *name)
{
	snprintf(out, size, "%s/%s", dir, name);
	return out;
}

/* One text request on a fresh connection; the reply in `reply`. */
static void ask_core(struct fsbt_core *c, const char *cls, const char *path,
		     const char *spec, char *reply, int *fd_out)
{
	char line[PATH_MAX + 256];
	int fd = fsbt_connect(c);
	ssize_t n;

	assert_true(fd >= 0);
	fsbt_text_req(line, sizeof(line), cls, path, c->session, spec);
	n = fsbt_request(fd, line, reply, REPLY_MAX, fd_out);
	if (n < 0)
		fail_msg("no reply to %s: %zd", line, n);
	fsbt_close(fd);
}

/* The reply must be a refusal with `errname` and contain `needle`. */
static void assert_deny(const char *reply, const char *errname, const char *needle)
{
	char want[64];

	snprintf(want, sizeof(want), "DENY %s ", errname);
	if (!fsbt_starts(reply, want) || (needle != NULL && strstr(reply, needle) == NULL))
		fail_msg("expected \"%s... %s...\", got \"%s\"", want, needle ? needle : "", reply);
}

/* ------------------------------------------------------------------------ */
/* Grants. */

static void read_in_workspace_without_open_spec_gets_sandbox(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX], reply[REPLY_MAX];
	int fd;

	fsbt_write_file(path_in(p, sizeof(p), c->ws, "a.txt"), "a\n");
	ask_core(c, FSBT_READ, p, NULL, reply, &fd);
	assert_string_equal(reply, "SANDBOX");
	assert_int_equal(fd, -1);
}

static void write_with_open_spec_gets_fd_of_that_file(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX], reply[REPLY_MAX];
	struct stat st, fst;
	int fd;

	fsbt_write_file(path_in(p, sizeof(p), c->ws, "b.txt"), "old\n");
	ask_core(c, FSBT_WRITE, p, FSBT_OPEN_WRITE, reply, &fd);
	assert_string_equal(reply, "FD");
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &fst), 0);
	assert_int_equal(stat(p, &st), 0);
	assert_true(st.st_dev == fst.st_dev && st.st_ino == fst.st_ino);
	assert_int_equal(fcntl(fd, F_GETFL) & O_ACCMODE, O_WRONLY);
	close(fd);
}

static void write_through_granted_fd_reaches_the_file(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX], reply[REPLY_MAX], *content;
	int fd;

	fsbt_write_file(path_in(p, sizeof(p), c->ws, "hello.txt"), "something longer\n");
	ask_core(c, FSBT_WRITE, p, FSBT_OPEN_WRITE, reply, &fd);
	assert_string_equal(reply, "FD");
	assert_int_equal(write(fd, "hello", 5), 5);
	close(fd);
	content = fsbt_read_file(p, NULL);
	assert_non_null(content);
	assert_string_equal(content, "hello");
	free(content);
}

static void create_of_new_file_gets_fd_and_the_file_exists(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX], reply[REPLY_MAX];
	struct stat st;
	int fd;

	path_in(p, sizeof(p), c->ws, "new.txt");
	assert_int_equal(access(p, F_OK), -1);
	ask_core(c, FSBT_WRITE, p, FSBT_OPEN_WRITE, reply, &fd);
	assert_string_equal(reply, "FD");
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISREG(st.st_mode));
}

static void trunc_of_existing_file_empties_it(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX], reply[REPLY_MAX];
	struct stat st;
	int fd;

	fsbt_write_file(path_in(p, sizeof(p), c->ws, "t.txt"), "0123456789");
	ask_core(c, FSBT_WRITE, p, "open=0x201:0", reply, &fd);	/* O_WRONLY|O_TRUNC */
	assert_string_equal(reply, "FD");
	close(fd);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_size, 0);
}

/* ------------------------------------------------------------------------ */
/* Policy denials. */

static void read_of_ssh_key_is_denied_by_deny_read(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX], reply[REPLY_MAX];
	int fd;

	ask_core(c, FSBT_READ, path_in(p, sizeof(p), c->home, ".ssh/id_ed25519"), "open=0:0",
		 reply, &fd);
	assert_deny(reply, "EACCES", "denyRead ~/.ssh/**");
	assert_int_equal(fd, -1);
}

static void dotenv_in_workspace_is_denied(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX], reply[REPLY_MAX];
	int fd;

	fsbt_write_file(path_in(p, sizeof(p), c->ws, ".env"), "TOKEN=x\n");
	ask_core(c, FSBT_READ, p, "open=0:0", reply, &fd);
	assert_deny(reply, "EACCES", "denyRead **/.env");
	assert_int_equal(fd, -1);
}

/* The resolved path is judged, not only the name asked for. */
static void symlink_in_workspace_to_ssh_key_is_denied(void **state)
{
	struct fsbt_core *c = *state;
	char key[PATH_MAX], link[PATH_MAX], reply[REPLY_MAX];
	int fd;

	path_in(key, sizeof(key), c->home, ".ssh/id_ed25519");
	assert_int_equal(symlink(key, path_in(link, sizeof(link), c->ws, "innocent.txt")), 0);
	ask_core(c, FSBT_READ, link, "open=0:0", reply, &fd);
	assert_deny(reply, "EACCES", "denyRead ~/.ssh/**");
	assert_int_equal(fd, -1);
	ask_core(c, FSBT_READ, link, NULL, reply, &fd);
	assert_deny(reply, "EACCES", "denyRead ~/.ssh/**");
}

/*
 * Resolution fails with ELOOP; the pack then judges the name as asked, which
 * the default pack allows (its fsProfile.read covers every path), so the
 * resolution error is what the client hears: DENY ELOOP rather than EACCES.
 */
static void symlink_loop_is_refused_with_eloop(void **state)
{
	struct fsbt_core *c = *state;
	char a[PATH_MAX], b[PATH_MAX], reply[REPLY_MAX];
	int fd;

	path_in(a, sizeof(a), c->ws, "loop1");
	path_in(b, sizeof(b), c->ws, "loop2");
	assert_int_equal(symlink(b, a), 0);
	assert_int_equal(symlink(a, b), 0);
	ask_core(c, FSBT_READ, a, "open=0:0", reply, &fd);
	assert_deny(reply, "ELOOP", NULL);
	assert_int_equal(fd, -1);
	ask_core(c, FSBT_WRITE, a, FSBT_OPEN_WRITE, reply, &fd);
	assert_deny(reply, "ELOOP", NULL);
	assert_int_equal(fd, -1);
}

static void write_outside_every_tree_is_denied_and_creates_nothing(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX], reply[REPLY_MAX];
	int fd, exists;

	snprintf(p, sizeof(p), "/etc/fsbt-should-not-exist-%d", (int)getpid());
	ask_core(c, FSBT_WRITE, p, FSBT_OPEN_WRITE, reply, &fd);
	exists = access(p, F_OK) == 0;
	if (exists)
		unlink(p);
	if (fd >= 0)
		close(fd);
	assert_deny(reply, "EACCES", "default deny");
	assert_false(exists);
	assert_int_equal(fd, -1);
}

/* ------------------------------------------------------------------------ */
/* Ask, prompt blocks and approvals. */

/* A write to an existing file under HOME, outside the workspace: asks. The
 * block id goes to `block` (24 bytes). */
static void ask_for_home_write(struct fsbt_core *c, const char *path, char *block)
{
	char reply[REPLY_MAX], rule[256];
	int fd;

	ask_core(c, FSBT_WRITE, path, "open=0x1:0", reply, &fd);
	if (sscanf(reply, "DENY EACCES ask %23s %255[^\n]", block, rule) != 2)
		fail_msg("expected \"DENY EACCES ask blk-<n> <rule>\", got \"%s\"", reply);
	assert_true(fsbt_starts(block, "blk-"));
	assert_string_equal(rule, "ask.modify ~/**");
	assert_int_equal(fd, -1);
}

static void approve(struct fsbt_core *c, const char *block, const char *scope)
{
	cJSON *r = fsbt_control_cmd(c, "Approve", "\"blockId\":\"%s\",\"scope\":\"%s\"", block, scope);

	if (!fsbt_ok(r))
		fail_msg("Approve %s %s: %s", block, scope, fsbt_str(r, "error"));
	cJSON_Delete(r);
}

/* Is there a pending block with this id (and, if given, this path)? */
static bool block_listed(struct fsbt_core *c, const char *block, const char *path)
{
	cJSON *r = fsbt_control_cmd(c, "PromptBlocks", NULL), *b;
	bool found = false;

	assert_true(fsbt_ok(r));
	cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(r, "blocks"))
		if (strcmp(fsbt_str(b, "blockId"), block) == 0 &&
		    (path == NULL || (strcmp(fsbt_str(b, "path"), path) == 0 &&
				      strcmp(fsbt_str(b, "op"), "write") == 0)))
			found = true;
	cJSON_Delete(r);
	return found;
}

static void write_under_home_asks_with_block_id(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX], block[24];

	fsbt_write_file(path_in(p, sizeof(p), c->home, "notes.txt"), "n\n");
	ask_for_home_write(c, p, block);
}

static void prompt_blocks_lists_the_ask(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX], block[24];

	fsbt_write_file(path_in(p, sizeof(p), c->home, "notes.txt"), "n\n");
	assert_false(block_listed(c, "blk-1", NULL));
	ask_for_home_write(c, p, block);
	assert_true(block_listed(c, block, p));
}

static void approve_once_grants_exactly_one_request(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX], block[24], again[24], reply[REPLY_MAX];
	int fd;

	fsbt_write_file(path_in(p, sizeof(p), c->home, "notes.txt"), "n\n");
	ask_for_home_write(c, p, block);
	approve(c, block, "once");
	assert_false(block_listed(c, block, NULL));
	ask_core(c, FSBT_WRITE, p, "open=0x1:0", reply, &fd);
	assert_string_equal(reply, "FD");
	assert_true(fd >= 0);
	close(fd);
	/* Used up: the next one asks again. */
	ask_for_home_write(c, p, again);
}

static void approve_session_keeps_granting(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX], block[24], reply[REPLY_MAX];
	int fd;

	fsbt_write_file(path_in(p, sizeof(p), c->home, "notes.txt"), "n\n");
	ask_for_home_write(c, p, block);
	approve(c, block, "session");
	for (int i = 0; i < 3; i++) {
		ask_core(c, FSBT_WRITE, p, "open=0x1:0", reply, &fd);
		assert_string_equal(reply, "FD");
		assert_true(fd >= 0);
		close(fd);
	}
}

static void deny_removes_the_block(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX], block[24], again[24];
	cJSON *r;

	fsbt_write_file(path_in(p, sizeof(p), c->home, "notes.txt"), "n\n");
	ask_for_home_write(c, p, block);
	r = fsbt_control_cmd(c, "Deny", "\"blockId\":\"%s\"", block);
	assert_true(fsbt_ok(r));
	cJSON_Delete(r);
	assert_false(block_listed(c, block, NULL));
	/* Denying grants nothing: the request still asks. */
	ask_for_home_write(c, p, again);
}

/* ------------------------------------------------------------------------ */
/* Scope. */

static void foreign_session_is_denied_and_audited(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX], line[PATH_MAX + 256], reply[REPLY_MAX], log[PATH_MAX + 64], *audit;
	int fd = fsbt_connect(c), got;

	assert_true(fd >= 0);
	fsbt_write_file(path_in(p, sizeof(p), c->ws, "a.txt"), "a\n");
	fsbt_text_req(line, sizeof(line), FSBT_WRITE, p, "someone-else", FSBT_OPEN_WRITE);
	assert_true(fsbt_request(fd, line, reply, sizeof(reply), &got) >= 0);
	fsbt_close(fd);
	assert_deny(reply, "EACCES", "foreign session");
	assert_int_equal(got, -1);
	snprintf(log, sizeof(log), "%s/audit/%s.jsonl", c->state, c->session);
	audit = fsbt_read_file(log, NULL);
	assert_non_null(audit);
	assert_non_null(strstr(audit, "\"claimedSession\":\"someone-else\""));
	free(audit);
}

/* ------------------------------------------------------------------------ */
/* Malformed text requests. */

static void malformed_line_is_einval_and_connection_stays_open(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX], line[PATH_MAX + 256], reply[REPLY_MAX];
	int fd = fsbt_connect(c);

	assert_true(fd >= 0);
	assert_true(fsbt_request(fd, "this is not a request", reply, sizeof(reply), NULL) >= 0);
	assert_deny(reply, "EINVAL", NULL);
	fsbt_write_file(path_in(p, sizeof(p), c->ws, "a.txt"), "a\n");
	fsbt_text_req(line, sizeof(line), FSBT_READ, p, c->session, NULL);
	assert_true(fsbt_request(fd, line, reply, sizeof(reply), NULL) >= 0);
	assert_string_equal(reply, "SANDBOX");
	fsbt_close(fd);
}

static void relative_path_is_einval(void **state)
{
	struct fsbt_core *c = *state;
	char reply[REPLY_MAX];
	int fd;

	ask_core(c, FSBT_READ, "ws/a.txt", NULL, reply, &fd);
	assert_deny(reply, "EINVAL", "not absolute");
}

static void nul_inside_line_is_einval(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX], line[PATH_MAX + 256], reply[REPLY_MAX];
	int fd = fsbt_connect(c);
	size_t len;

	assert_true(fd >= 0);
	/* "<ws>/a.txt\0/../../etc/passwd": the part after the NUL must not be
	 * cut off silently. */
	fsbt_write_file(path_in(p, sizeof(p), c->ws, "a.txt"), "a\n");
	len = (size_t)snprintf(line, sizeof(line), "%s\t%s", FSBT_READ, p);
	memcpy(line + len, "\0x\t", 3);
	len += 3;
	len += (size_t)snprintf(line + len, sizeof(line) - len, "%s\t%s", c->session,
				FSBT_TOOL_CALL);
	assert_int_equal(fsbt_send(fd, line, len, -1), 0);
	assert_true(fsbt_read_reply(fd, reply, sizeof(reply), NULL) >= 0);
	assert_deny(reply, "EINVAL", "NUL");
	/* Still open. */
	fsbt_text_req(line, sizeof(line), FSBT_READ, p, c->session, NULL);
	assert_true(fsbt_request(fd, line, reply, sizeof(reply), NULL) >= 0);
	assert_string_equal(reply, "SANDBOX");
	fsbt_close(fd);
}

/*
 * 70000 bytes before the newline: one E2BIG reply, then the core closes.
 * A close with bytes of ours still unread surfaces as ECONNRESET rather than
 * a plain EOF on a Unix socket; both mean the core hung up.
 */
static void overlong_line_is_e2big_then_closed(void **state)
{
	struct fsbt_core *c = *state;
	size_t len = 70000;
	char *line = malloc(len), reply[REPLY_MAX];
	int fd = fsbt_connect(c);
	ssize_t n;

	assert_non_null(line);
	assert_true(fd >= 0);
	memset(line, 'a', len);
	memcpy(line, "fsbroker.read\t/", 15);
	assert_int_equal(fsbt_send(fd, line, len, -1), 0);
	free(line);
	n = fsbt_read_reply(fd, reply, sizeof(reply), NULL);
	assert_true(n >= 0);
	assert_deny(reply, "E2BIG", NULL);
	n = fsbt_read_reply(fd, reply, sizeof(reply), NULL);
	if (n != FSBT_EOF && n != -ECONNRESET)
		fail_msg("expected the connection closed after E2BIG, got %zd (%s)", n,
			 n >= 0 ? reply : strerror((int)-n));
	fsbt_close(fd);
}

/* The limit is 65536 bytes without the newline: a line of exactly that
 * length is a request like any other (refused here for its long path). */
static void line_of_exactly_64k_is_answered_and_connection_stays_open(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX], line[PATH_MAX + 256], reply[REPLY_MAX];
	size_t len = 65536;
	char *big = malloc(len);
	int fd = fsbt_connect(c);

	assert_non_null(big);
	assert_true(fd >= 0);
	memset(big, 'a', len);
	memcpy(big, "fsbroker.read\t/", 15);
	assert_int_equal(fsbt_send(fd, big, len, -1), 0);
	free(big);
	assert_true(fsbt_read_reply(fd, reply, sizeof(reply), NULL) >= 0);
	assert_deny(reply, "EINVAL", NULL);
	fsbt_write_file(path_in(p, sizeof(p), c->ws, "a.txt"), "a\n");
	fsbt_text_req(line, sizeof(line), FSBT_READ, p, c->session, NULL);
	assert_true(fsbt_request(fd, line, reply, sizeof(reply), NULL) >= 0);
	assert_string_equal(reply, "SANDBOX");
	fsbt_close(fd);
}

/* An over-long line that started as JSON is answered in JSON. */
static void overlong_json_line_gets_json_e2big(void **state)
{
	struct fsbt_core *c = *state;
	size_t len = 70000;
	char *line = malloc(len), reply[REPLY_MAX];
	int fd = fsbt_connect(c);
	cJSON *r;

	assert_non_null(line);
	assert_true(fd >= 0);
	memset(line, ' ', len);
	memcpy(line, "{\"id\":1,\"pad\":\"", 15);
	assert_int_equal(fsbt_send(fd, line, len, -1), 0);
	free(line);
	assert_true(fsbt_read_reply(fd, reply, sizeof(reply), NULL) >= 0);
	r = cJSON_Parse(reply);
	if (r == NULL)
		fail_msg("expected a JSON reply, got \"%s\"", reply);
	assert_false(fsbt_ok(r));
	assert_string_equal(fsbt_str(r, "errno"), "E2BIG");
	cJSON_Delete(r);
	fsbt_close(fd);
}

/* A client that sends its request and shuts down its side still gets the
 * reply before the core closes. */
static void half_closed_client_gets_its_reply(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX], line[PATH_MAX + 256], reply[REPLY_MAX];
	int fd = fsbt_connect(c);

	assert_true(fd >= 0);
	fsbt_write_file(path_in(p, sizeof(p), c->ws, "a.txt"), "a\n");
	fsbt_text_req(line, sizeof(line), FSBT_READ, p, c->session, NULL);
	assert_int_equal(fsbt_send(fd, line, strlen(line), -1), 0);
	assert_int_equal(shutdown(fd, SHUT_WR), 0);
	assert_true(fsbt_read_reply(fd, reply, sizeof(reply), NULL) >= 0);
	assert_string_equal(reply, "SANDBOX");
	assert_int_equal(fsbt_read_reply(fd, reply, sizeof(reply), NULL), FSBT_EOF);
	fsbt_close(fd);
}

static void open_flags_refused(struct fsbt_core *c, const char *cls, const char *name,
			       const char *spec)
{
	char p[PATH_MAX], reply[REPLY_MAX];
	struct stat st;
	int fd;

	fsbt_write_file(path_in(p, sizeof(p), c->ws, name), "keep me");
	ask_core(c, cls, p, spec, reply, &fd);
	assert_deny(reply, "EINVAL", NULL);
	assert_int_equal(fd, -1);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_size, 7);
}

static void rdonly_with_trunc_is_einval(void **state)
{
	open_flags_refused(*state, FSBT_WRITE, "f1", "open=0x200:0");
	open_flags_refused(*state, FSBT_READ, "f2", "open=0x200:0");
}

static void o_path_is_einval(void **state)
{
	open_flags_refused(*state, FSBT_READ, "f", "open=0x200000:0");
}

static void o_tmpfile_is_einval(void **state)
{
	struct fsbt_core *c = *state;
	char reply[REPLY_MAX];
	int fd;

	/* O_TMPFILE|O_RDWR on the workspace directory. */
	ask_core(c, FSBT_WRITE, c->ws, "open=0x410002:0600", reply, &fd);
	assert_deny(reply, "EINVAL", "O_TMPFILE");
	assert_int_equal(fd, -1);
}

static void read_class_with_write_flags_is_einval(void **state)
{
	open_flags_refused(*state, FSBT_READ, "f", "open=0x1:0");
}

/* ------------------------------------------------------------------------ */
/* JSON requests. */

static cJSON *json_request(struct fsbt_core *c, const char *line, size_t len)
{
	char reply[REPLY_MAX];
	int fd = fsbt_connect(c), got;
	cJSON *r;

	assert_true(fd >= 0);
	assert_int_equal(fsbt_send(fd, line, len, -1), 0);
	assert_true(fsbt_read_reply(fd, reply, sizeof(reply), &got) >= 0);
	assert_int_equal(got, -1);
	fsbt_close(fd);
	r = cJSON_Parse(reply);
	if (r == NULL)
		fail_msg("reply is not JSON: %s", reply);
	return r;
}

static void json_invalid_is_refused(void **state)
{
	const char *line = "{\"id\":1,\"command\":";
	cJSON *r = json_request(*state, line, strlen(line));

	assert_false(fsbt_ok(r));
	assert_string_equal(fsbt_str(r, "errno"), "EINVAL");
	assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(r, "id")));
	cJSON_Delete(r);
}

static void json_nul_escape_is_refused(void **state)
{
	struct fsbt_core *c = *state;
	char line[PATH_MAX + 256], p[PATH_MAX];
	cJSON *r;

	/* cJSON would cut the path at the NUL: ws/a.txt looks harmless. */
	fsbt_write_file(path_in(p, sizeof(p), c->ws, "a.txt"), "a\n");
	snprintf(line, sizeof(line), "{\"id\":2,\"command\":\"HostFileOperation\","
		 "\"operation\":\"delete\",\"path\":\"%s\\u0000/../../x\",\"sessionId\":\"%s\"}",
		 p, c->session);
	r = json_request(c, line, strlen(line));
	assert_false(fsbt_ok(r));
	assert_string_equal(fsbt_str(r, "errno"), "EINVAL");
	cJSON_Delete(r);
	assert_int_equal(access(p, F_OK), 0);
}

static void json_host_delete_moves_the_file_to_the_trash(void **state)
{
	struct fsbt_core *c = *state;
	char line[PATH_MAX + 256], p[PATH_MAX];
	cJSON *r;

	fsbt_write_file(path_in(p, sizeof(p), c->ws, "a.txt"), "a\n");
	snprintf(line, sizeof(line), "{\"id\":\"r3\",\"command\":\"HostFileOperation\","
		 "\"operation\":\"delete\",\"path\":\"%s\",\"sessionId\":\"%s\","
		 "\"toolCallId\":\"%s\"}", p, c->session, FSBT_TOOL_CALL);
	r = json_request(c, line, strlen(line));
	assert_true(fsbt_ok(r));
	assert_string_equal(fsbt_str(r, "id"), "r3");
	assert_string_equal(fsbt_str(r, "operation"), "delete");
	assert_string_equal(fsbt_str(r, "decision"), "host-op");
	/* Gone from the workspace, whole in the trash. */
	assert_int_equal(access(p, F_OK), -1);
	assert_true(fsbt_starts(fsbt_str(r, "trashedTo"), c->home));
	assert_int_equal(access(fsbt_str(r, "trashedTo"), F_OK), 0);
	cJSON_Delete(r);
}

static void json_host_op_for_another_session_is_eacces(void **state)
{
	struct fsbt_core *c = *state;
	char line[PATH_MAX + 256], p[PATH_MAX];
	cJSON *r;

	fsbt_write_file(path_in(p, sizeof(p), c->ws, "a.txt"), "a\n");
	snprintf(line, sizeof(line), "{\"id\":4,\"command\":\"HostFileOperation\","
		 "\"operation\":\"delete\",\"path\":\"%s\",\"sessionId\":\"someone-else\"}", p);
	r = json_request(c, line, strlen(line));
	assert_false(fsbt_ok(r));
	assert_string_equal(fsbt_str(r, "errno"), "EACCES");
	cJSON_Delete(r);
}

static void json_unknown_command_is_refused(void **state)
{
	const char *line = "{\"id\":5,\"command\":\"Approve\",\"blockId\":\"blk-1\"}";
	cJSON *r = json_request(*state, line, strlen(line));

	/* Control commands never work on a client socket. */
	assert_false(fsbt_ok(r));
	assert_string_equal(fsbt_str(r, "errno"), "EINVAL");
	assert_int_equal((int)fsbt_num(r, "id"), 5);
	cJSON_Delete(r);
}

/* ------------------------------------------------------------------------ */
/* Protected paths. */

static void write_into_state_dir_is_denied_as_protected(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX], reply[REPLY_MAX];
	int fd;

	ask_core(c, FSBT_WRITE, path_in(p, sizeof(p), c->state, "planted"), FSBT_OPEN_WRITE,
		 reply, &fd);
	assert_deny(reply, "EACCES", "protected");
	assert_int_equal(fd, -1);
	assert_int_equal(access(p, F_OK), -1);
}

/* A pack of our own that includes the default one, so that a failure here
 * could never truncate a pack file of the source tree. */
static int setup_wrapper_pack(void **state)
{
	struct fsbt_core *c = fsbt_core_new();
	char p[PATH_MAX];

	fsbt_write_file(path_in(p, sizeof(p), c->rules_dir, "wrap.lua"),
			"return { name = \"wrap\", include = { \"default\" } }\n");
	snprintf(c->rules, sizeof(c->rules), "%s", p);
	fsbt_core_start(c);
	*state = c;
	return 0;
}

static void write_to_pack_file_in_use_is_denied_as_protected(void **state)
{
	struct fsbt_core *c = *state;
	char reply[REPLY_MAX], *content;
	int fd;

	ask_core(c, FSBT_WRITE, c->rules, FSBT_OPEN_WRITE, reply, &fd);
	assert_deny(reply, "EACCES", "protected");
	assert_int_equal(fd, -1);
	content = fsbt_read_file(c->rules, NULL);
	assert_non_null(content);
	assert_non_null(strstr(content, "include"));
	free(content);
}

/* ------------------------------------------------------------------------ */
/* Framing and fds. */

#define PIPELINED 100

static void pipelined_requests_are_answered_in_order(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX], key[PATH_MAX], reply[REPLY_MAX], want[64];
	size_t cap = PIPELINED * (PATH_MAX + 128), len = 0;
	char *batch = malloc(cap);
	int fd = fsbt_connect(c);

	assert_non_null(batch);
	assert_true(fd >= 0);
	path_in(key, sizeof(key), c->home, ".ssh/id_ed25519");
	/* Even: an allowed read of file i/2 (FD); odd: the SSH key (DENY). */
	for (int i = 0; i < PIPELINED; i++) {
		char name[32];

		if (i % 2 == 0) {
			snprintf(name, sizeof(name), "p%d.txt", i / 2);
			snprintf(want, sizeof(want), "file %d", i / 2);
			fsbt_write_file(path_in(p, sizeof(p), c->ws, name), want);
		}
		len += strlen(fsbt_text_req(batch + len, cap - len, FSBT_READ, i % 2 ? key : p,
					    c->session, "open=0:0"));
		batch[len++] = '\n';
	}
	/* One send for all of them (the last newline is fsbt_send's). */
	assert_int_equal(fsbt_send(fd, batch, len - 1, -1), 0);
	free(batch);
	for (int i = 0; i < PIPELINED; i++) {
		int got;

		if (fsbt_read_reply(fd, reply, sizeof(reply), &got) < 0)
			fail_msg("reply %d of %d missing", i + 1, PIPELINED);
		if (i % 2 == 1) {
			assert_deny(reply, "EACCES", "denyRead ~/.ssh/**");
			assert_int_equal(got, -1);
			continue;
		}
		char content[64] = "";

		assert_string_equal(reply, "FD");
		assert_true(got >= 0);
		assert_true(read(got, content, sizeof(content) - 1) > 0);
		snprintf(want, sizeof(want), "file %d", i / 2);
		assert_string_equal(content, want);
		close(got);
	}
	fsbt_close(fd);
}

static void fd_sent_unasked_is_closed_by_the_core(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX], line[PATH_MAX + 256], reply[REPLY_MAX], byte;
	int fd = fsbt_connect(c), pipefd[2];
	struct pollfd pfd;

	assert_true(fd >= 0);
	assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
	fsbt_write_file(path_in(p, sizeof(p), c->ws, "a.txt"), "a\n");
	fsbt_text_req(line, sizeof(line), FSBT_READ, p, c->session, NULL);
	assert_int_equal(fsbt_send(fd, line, strlen(line), pipefd[1]), 0);
	close(pipefd[1]);
	assert_true(fsbt_read_reply(fd, reply, sizeof(reply), NULL) >= 0);
	assert_string_equal(reply, "SANDBOX");
	/* EOF on the read end: no write end is left open anywhere. */
	pfd.fd = pipefd[0];
	pfd.events = POLLIN;
	assert_int_equal(poll(&pfd, 1, FSBT_TIMEOUT_MS), 1);
	assert_int_equal(read(pipefd[0], &byte, 1), 0);
	close(pipefd[0]);
	fsbt_close(fd);
}

/* ------------------------------------------------------------------------ */
/* The socket and who may use it. */

static void socket_dir_is_0700_and_socket_0600(void **state)
{
	struct fsbt_core *c = *state;
	struct stat st;

	assert_int_equal(lstat(c->sockdir, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(lstat(c->sock, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);
}

static int setup_layout(void **state)
{
	*state = fsbt_core_new();
	return 0;
}

static void socket_in_shared_dir_is_refused(void **state)
{
	struct fsbt_core *c = *state;
	char sock[64], *log;

	snprintf(sock, sizeof(sock), "/tmp/fsbt-%d.sock", (int)getpid());
	assert_int_equal(fsbt_core_spawn(c, sock), 0);
	assert_int_equal(fsbt_core_wait_exit(c, FSBT_TIMEOUT_MS), 0);
	log = fsbt_core_log(c);
	if (access(sock, F_OK) == 0) {
		unlink(sock);
		fail_msg("the core created %s", sock);
	}
	assert_true(WIFEXITED(c->exit_status));
	assert_int_not_equal(WEXITSTATUS(c->exit_status), 0);
	if (strstr(log, "0700") == NULL)
		fail_msg("the refusal does not name 0700: %s", log);
	free(log);
}

/* What a client of another uid saw: 0 the core hung up without a reply,
 * 1 a reply came, 2 the connection stayed open, 3 connect failed. */
static int foreign_client(const char *sock, const char *line)
{
	char reply[REPLY_MAX];
	ssize_t n;
	int fd;

	if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
	    setresuid(65534, 65534, 65534) < 0)
		return 4;
	if ((fd = fsbt_connect_path(sock)) < 0)
		return 3;
	n = fsbt_send(fd, line, strlen(line), -1);
	if (n == -EPIPE || n == -ECONNRESET)
		return 0;
	n = fsbt_read_reply(fd, reply, sizeof(reply), NULL);
	if (n >= 0)
		return 1;
	return n == FSBT_EOF || n == -ECONNRESET ? 0 : 2;
}

static void client_of_another_uid_is_closed_without_reply(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX], line[PATH_MAX + 256];
	int status = -1, rc;
	cJSON *stats;
	pid_t pid;

	if (geteuid() != 0)
		fsbt_skip("needs root to connect as another uid (uid 65534)");
	fsbt_write_file(path_in(p, sizeof(p), c->ws, "a.txt"), "a\n");
	fsbt_text_req(line, sizeof(line), FSBT_READ, p, c->session, NULL);
	/* Open the first wall (the 0700 dir) so that the second one, the
	 * SO_PEERCRED check, is what gets tested. */
	assert_int_equal(chmod(c->dir, 0711), 0);
	assert_int_equal(chmod(c->sockdir, 0711), 0);
	assert_int_equal(chmod(c->sock, 0666), 0);
	pid = fork();
	if (pid == 0)
		_exit(foreign_client(c->sock, line));
	assert_true(pid > 0);
	for (uint64_t end = fsbt_now_ms() + 2 * FSBT_TIMEOUT_MS; fsbt_now_ms() < end;) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
		fsbt_sleep_ms(5);
	}
	if (waitpid(pid, &status, WNOHANG) == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	chmod(c->sock, 0600);
	chmod(c->sockdir, 0700);
	chmod(c->dir, 0700);
	assert_true(WIFEXITED(status));
	rc = WEXITSTATUS(status);
	if (rc != 0)
		fail_msg("the other uid's client: %s",
			 rc == 1 ? "got a reply" : rc == 2 ? "connection stayed open"
			 : rc == 3 ? "could not connect" : "could not change uid");
	stats = fsbt_control_cmd(c, "Stats", NULL);
	assert_true(fsbt_num(stats, "connectionsRefused") >= 1);
	assert_int_equal((int)fsbt_num(stats, "requests"), 0);
	cJSON_Delete(stats);
}

/* ------------------------------------------------------------------------ */
/* Audit. */

static int verify_audit(const char *log)
{
	char *argv[] = { (char *)fsbt_binary(), "audit", "verify", (char *)log, NULL };
	char *out = NULL;
	int status = fsbt_run(argv, &out);

	free(out);
	assert_true(status >= 0 && WIFEXITED(status));
	return WEXITSTATUS(status);
}

static void audit_log_verifies_and_an_edit_is_found(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX], key[PATH_MAX], log[PATH_MAX + 64], reply[REPLY_MAX];
	size_t len, nlines = 0, target, line = 0;
	char *audit, *at = NULL;
	int fd;

	fsbt_write_file(path_in(p, sizeof(p), c->ws, "a.txt"), "a\n");
	path_in(key, sizeof(key), c->home, ".ssh/id_ed25519");
	for (int i = 0; i < 6; i++)
		ask_core(c, FSBT_READ, i % 2 ? key : p, NULL, reply, &fd);
	snprintf(log, sizeof(log), "%s/audit/%s.jsonl", c->state, c->session);
	assert_int_equal(verify_audit(log), 0);

	/* Change one letter inside a middle line; the line stays valid JSON. */
	audit = fsbt_read_file(log, &len);
	assert_non_null(audit);
	for (size_t i = 0; i < len; i++)
		nlines += audit[i] == '\n';
	assert_true(nlines >= 3);
	target = nlines / 2;
	for (size_t i = 0; i < len && at == NULL; i++) {
		if (line == target && strncmp(audit + i, "\"decision\":\"", 12) == 0)
			at = audit + i + 12;
		if (audit[i] == '\n')
			line++;
	}
	assert_non_null(at);
	fd = open(log, O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, *at == 'x' ? "y" : "x", 1, at - audit), 1);
	close(fd);
	free(audit);
	assert_int_equal(verify_audit(log), 1);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fsbt_setup_core, fsbt_teardown_core)
	const struct CMUnitTest tests[] = {
		T(read_in_workspace_without_open_spec_gets_sandbox),
		T(write_with_open_spec_gets_fd_of_that_file),
		T(write_through_granted_fd_reaches_the_file),
		T(create_of_new_file_gets_fd_and_the_file_exists),
		T(trunc_of_existing_file_empties_it),
		T(read_of_ssh_key_is_denied_by_deny_read),
		T(dotenv_in_workspace_is_denied),
		T(symlink_in_workspace_to_ssh_key_is_denied),
		T(symlink_loop_is_refused_with_eloop),
		T(write_outside_every_tree_is_denied_and_creates_nothing),
		T(write_under_home_asks_with_block_id),
		T(prompt_blocks_lists_the_ask),
		T(approve_once_grants_exactly_one_request),
		T(approve_session_keeps_granting),
		T(deny_removes_the_block),
		T(foreign_session_is_denied_and_audited),
		T(malformed_line_is_einval_and_connection_stays_open),
		T(relative_path_is_einval),
		T(nul_inside_line_is_einval),
		T(overlong_line_is_e2big_then_closed),
		T(line_of_exactly_64k_is_answered_and_connection_stays_open),
		T(overlong_json_line_gets_json_e2big),
		T(half_closed_client_gets_its_reply),
		T(rdonly_with_trunc_is_einval),
		T(o_path_is_einval),
		T(o_tmpfile_is_einval),
		T(read_class_with_write_flags_is_einval),
		T(json_invalid_is_refused),
		T(json_nul_escape_is_refused),
		T(json_host_delete_moves_the_file_to_the_trash),
		T(json_host_op_for_another_session_is_eacces),
		T(json_unknown_command_is_refused),
		T(write_into_state_dir_is_denied_as_protected),
		cmocka_unit_test_setup_teardown(write_to_pack_file_in_use_is_denied_as_protected,
						setup_wrapper_pack, fsbt_teardown_core),
		T(pipelined_requests_are_answered_in_order),
		T(fd_sent_unasked_is_closed_by_the_core),
		T(socket_dir_is_0700_and_socket_0600),
		cmocka_unit_test_setup_teardown(socket_in_shared_dir_is_refused, setup_layout,
						fsbt_teardown_core),
		T(client_of_another_uid_is_closed_without_reply),
		T(audit_log_verifies_and_an_edit_is_found),
	};

	return fsbt_run_group(tests, NULL, NULL);
}
