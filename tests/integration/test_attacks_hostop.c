/*
 * test_attacks_hostop.c — attacks on `fsbroker serve` through its client
 * socket: host operations and write grants while a directory is swapped
 * with symlinks to the outside and to a protected directory, path edge
 * cases in both request forms, directory renames across the workspace's
 * edge, hard links to protected files, a connected socket handed to
 * another process (and the pid that connected reused), descriptors sent
 * with requests, and glob patterns that backtrack. Each test names its
 * attack and checks on the host that nothing outside the workspace or
 * under a protected path changed in any way.
 *
 * The pack: the default one plus denyModify on ws/locked and everything
 * beneath it. docs/SECURITY.md ("Attack suite") lists what each test found.
 */
#include "attack_fixture.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define REPLY 8192

/* What the race test runs at least (docs/SECURITY.md quotes them). */
#define RACE_EXCHANGES 20000
#define RACE_OPS 2000

#define HOP "{\"command\":\"HostFileOperation\",\"sessionId\":\"%s\",\"operation\":"

static const char pack_text[] =
	"return { name = \"attacks\", include = { \"default\" },\n"
	"  denyModify = { \"${workspace}/locked\", \"${workspace}/locked/**\" } }\n";

/* The layout every test here uses: ws/locked (protected), <dir>/outside
 * (outside every tree the pack lets change); then start the core. */
static int setup(void **state)
{
	struct fsbt_core *c = fsbt_core_new();
	char p[PATH_MAX + 32];

	snprintf(c->rules, sizeof(c->rules), "%s/attacks.lua", c->rules_dir);
	fsbt_write_file(c->rules, pack_text);
	snprintf(p, sizeof(p), "%s/locked", c->ws);
	fill_dir(p, "locked");
	snprintf(p, sizeof(p), "%s/outside", c->dir);
	fill_dir(p, "outside");
	fsbt_core_start(c);
	*state = c;
	return 0;
}

static int setup_layout_only(void **state)
{
	struct fsbt_core *c = fsbt_core_new();
	char p[PATH_MAX + 32];

	snprintf(p, sizeof(p), "%s/locked", c->ws);
	fill_dir(p, "locked");
	*state = c;
	return 0;
}

static int teardown(void **state)
{
	return fsbt_teardown_core(state);
}

/* The core still answers: a read of the workspace is SANDBOX. */
static void expect_alive(const struct fsbt_core *c)
{
	char line[PATH_MAX * 2], reply[REPLY], p[PATH_MAX + 16];
	int fd = fsbt_connect(c);

	assert_true(fd >= 0);
	snprintf(p, sizeof(p), "%s/alive.txt", c->ws);
	fsbt_text_req(line, sizeof(line), FSBT_READ, p, c->session, NULL);
	if (fsbt_request(fd, line, reply, sizeof(reply), NULL) < 0 ||
	    strcmp(reply, "SANDBOX") != 0)
		fail_msg("the core no longer answers a plain read (got '%s')", reply);
	fsbt_close(fd);
}

/* A JSON reply that must be a refusal with errno `want` ("" = any). */
static void expect_refused(cJSON *r, const char *want, const char *what)
{
	if (r == NULL)
		fail_msg("%s: no reply", what);
	if (fsbt_ok(r) || (want[0] != '\0' && strcmp(fsbt_str(r, "errno"), want) != 0)) {
		char *s = cJSON_PrintUnformatted(r);

		fail_msg("%s: want a refusal with %s, got %s", what, want[0] ? want : "any errno",
			 s);
	}
	cJSON_Delete(r);
}

/* ------------------------------------------------------------------------ */
/* 1. Directory swaps during host operations and write grants. */

struct racer {
	char d[PATH_MAX + 16], l_out[PATH_MAX + 16], l_locked[PATH_MAX + 16];
	atomic_bool stop;
	atomic_ulong exchanges;
	int err;
};

/* ws/d swapped with ws/l-out (-> outside) and back, then with ws/l-locked
 * (-> ws/locked) and back; it stops only between rounds, so ws/d ends a
 * directory. */
static void *race_loop(void *arg)
{
	struct racer *r = arg;

	while (!atomic_load(&r->stop)) {
		const char *l = (atomic_load(&r->exchanges) / 2) % 2 ? r->l_locked : r->l_out;

		for (int i = 0; i < 2; i++) {
			if (renameat2(AT_FDCWD, r->d, AT_FDCWD, l, RENAME_EXCHANGE) < 0) {
				r->err = errno;
				return NULL;
			}
			atomic_fetch_add(&r->exchanges, 1);
			sched_yield();
		}
	}
	return NULL;
}

/* A write grant on `path`; what came back is written to, so that a wrong
 * grant shows on the host. True when an fd came. */
static bool write_grant(const struct fsbt_core *c, int fd, const char *path, const char *spec)
{
	char line[PATH_MAX * 2 + 128], reply[REPLY];
	int got = -1;

	fsbt_text_req(line, sizeof(line), FSBT_WRITE, path, c->session, spec);
	if (fsbt_request(fd, line, reply, sizeof(reply), &got) < 0)
		fail_msg("no reply to a write grant on %s", path);
	if (got < 0)
		return false;
	if (write(got, "w\n", 2) != 2)
		fail_msg("write through a granted fd: %s", strerror(errno));
	close(got);
	return true;
}

static void restore_last(const struct fsbt_core *c, const struct fsbt_tree *want)
{
	struct fsbt_tree now;
	char *out = NULL, diff[8192];
	int status;
	cJSON *r = fsbt_control_cmd((struct fsbt_core *)c, "CommitModifyBackup",
				    "\"commitMsg\":\"race\"");

	assert_true(fsbt_ok(r));
	assert_true(fsbt_num(r, "cycle") >= 1);
	cJSON_Delete(r);
	/* Hundreds of entries: long under the sanitizers; the limit is a
	 * safety net only. */
	status = fsbt_run_within((char *[]){ (char *)fsbt_binary(), "backup", "restore",
					     "--last", "--state-dir", (char *)c->state,
					     "--session", (char *)c->session, NULL },
				 &out, 600 * 1000);
	assert_int_equal(fsbt_tree_snap(c->ws, &now), 0);
	if (fsbt_tree_diff(want, &now, FSBT_TREE_MTIME, diff, sizeof(diff)) > 0 || status != 0) {
		fprintf(stderr, "# restore exited 0x%x:\n%s", (unsigned)status, out ? out : "");
		fail_msg("after the race and a restore the workspace is not as it was: a change "
			 "inside had no backup:\n%s",
			 diff);
	}
	free(out);
	fsbt_tree_free(&now);
}

static void dir_symlink_exchange_race_during_hostops_and_write_grants(void **state)
{
	struct fsbt_core *c = *state;
	struct racer rc = { .err = 0 };
	struct fsbt_tree ws_before;
	struct guard g;
	char p[PATH_MAX * 2], outside[PATH_MAX + 16], locked[PATH_MAX + 16];
	unsigned long ops = 0, ok = 0, grants = 0;
	pthread_t th;
	struct stat st;
	int fd;

	snprintf(outside, sizeof(outside), "%s/outside", c->dir);
	snprintf(locked, sizeof(locked), "%s/locked", c->ws);
	snprintf(rc.d, sizeof(rc.d), "%s/d", c->ws);
	fill_dir(rc.d, "inside");
	snprintf(rc.l_out, sizeof(rc.l_out), "%s/l-out", c->ws);
	snprintf(rc.l_locked, sizeof(rc.l_locked), "%s/l-locked", c->ws);
	assert_int_equal(symlink(outside, rc.l_out), 0);
	assert_int_equal(symlink(locked, rc.l_locked), 0);
	if (renameat2(AT_FDCWD, rc.d, AT_FDCWD, rc.l_out, RENAME_EXCHANGE) < 0)
		fsbt_skip("renameat2(RENAME_EXCHANGE): %s", strerror(errno));
	assert_int_equal(renameat2(AT_FDCWD, rc.d, AT_FDCWD, rc.l_out, RENAME_EXCHANGE), 0);
	guard_take(&g, c->ws, c->dir, c->home);
	assert_int_equal(fsbt_tree_snap(c->ws, &ws_before), 0);

	fd = fsbt_connect(c);
	assert_true(fd >= 0);
	atomic_init(&rc.stop, false);
	atomic_init(&rc.exchanges, 0);
	assert_int_equal(pthread_create(&th, NULL, race_loop, &rc), 0);
	while ((atomic_load(&rc.exchanges) < RACE_EXCHANGES || ops < RACE_OPS) && rc.err == 0) {
		const char *s = c->session, *d = rc.d;
		unsigned long n = ops++;
		cJSON *r = NULL;

		switch (n % 9) {
		case 0:
			r = fsbt_hostopf(fd, HOP "\"rename\",\"from\":\"%s/victim\",\"to\":\"%s/v-%lu\"}",
					 s, d, d, n);
			if (r != NULL && fsbt_ok(r)) {
				cJSON_Delete(r);
				r = fsbt_hostopf(fd, HOP "\"rename\",\"from\":\"%s/v-%lu\","
							 "\"to\":\"%s/victim\"}",
						 s, d, n, d);
			}
			break;
		case 1:
			r = fsbt_hostopf(fd, HOP "\"touch\",\"path\":\"%s/t-%lu\"}", s, d, n);
			break;
		case 2:
			r = fsbt_hostopf(fd, HOP "\"delete\",\"path\":\"%s/t-%lu\",\"deleteMode\":\"%s\"}",
					 s, d, n - 1, n % 2 ? "unlink" : "trash");
			break;
		case 3:
			snprintf(p, sizeof(p), "%s/canary", d);
			grants += write_grant(c, fd, p, "open=0x401:0644");
			ok++;
			continue;
		case 4:
			r = fsbt_hostopf(fd, HOP "\"mkdir\",\"path\":\"%s/m-%lu\"}", s, d, n);
			break;
		case 5:
			r = fsbt_hostopf(fd, HOP "\"chmod\",\"path\":\"%s/canary\",\"mode\":\"%s\"}", s,
					 d, n % 2 ? "0600" : "0644");
			break;
		case 6:
			snprintf(p, sizeof(p), "%s/new-%lu", d, n);
			grants += write_grant(c, fd, p, "open=0x241:0644");
			ok++;
			continue;
		case 7:
			r = fsbt_hostopf(fd, HOP "\"delete\",\"path\":\"%s/sub\",\"recursive\":true}",
					 s, d);
			if (r != NULL && fsbt_ok(r)) {
				cJSON_Delete(r);
				r = fsbt_hostopf(fd, HOP "\"mkdir\",\"path\":\"%s/sub\"}", s, d);
			}
			break;
		default:
			r = fsbt_hostopf(fd, HOP "\"rename\",\"from\":\"%s/sub\",\"to\":\"%s/sub2\"}",
					 s, d, d);
			if (r != NULL && fsbt_ok(r)) {
				cJSON_Delete(r);
				r = fsbt_hostopf(fd, HOP "\"rename\",\"from\":\"%s/sub2\","
							 "\"to\":\"%s/sub\"}",
						 s, d, d);
			}
			break;
		}
		if (r == NULL)
			fail_msg("no reply to operation %lu: the core is stuck or gone", n);
		ok += fsbt_ok(r);
		cJSON_Delete(r);
	}
	atomic_store(&rc.stop, true);
	assert_int_equal(pthread_join(th, NULL), 0);
	fsbt_close(fd);
	if (rc.err != 0)
		fail_msg("the racing thread stopped: renameat2: %s", strerror(rc.err));
	assert_int_equal(lstat(rc.d, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	printf("# %lu exchanges, %lu requests (%lu succeeded, %lu fds granted)\n",
	       (unsigned long)atomic_load(&rc.exchanges), ops, ok, grants);
	guard_check(&g, NULL);
	/* A core that refused everything would prove nothing. */
	if (ok < ops / 10 || grants == 0)
		fail_msg("only %lu of %lu requests succeeded: the race was not exercised", ok, ops);
	restore_last(c, &ws_before);
	fsbt_tree_free(&ws_before);
}

/* ------------------------------------------------------------------------ */
/* 2. Path edge cases, both request forms. */

/* A text request whose reply must start with DENY (no fd). */
static void text_denied(const struct fsbt_core *c, int fd, const char *line, size_t len,
			const char *want, const char *what)
{
	char reply[REPLY];
	int got = -1;

	(void)c;
	if (fsbt_send(fd, line, len, -1) < 0 || fsbt_read_reply(fd, reply, sizeof(reply), &got) < 0)
		fail_msg("%s: no reply", what);
	if (got >= 0) {
		close(got);
		fail_msg("%s: an fd was granted (%s)", what, reply);
	}
	if (!fsbt_starts(reply, want))
		fail_msg("%s: want '%s…', got '%s'", what, want, reply);
}

static void path_edge_cases_in_text_and_json_never_reach_protected_files(void **state)
{
	struct fsbt_core *c = *state;
	char line[PATH_MAX * 4], p[PATH_MAX * 3], *big;
	const char *s = c->session;
	struct guard g;
	struct stat st;
	size_t n;
	int fd;

	guard_take(&g, c->ws, c->dir, c->home);
	fd = fsbt_connect(c);
	assert_true(fd >= 0);

	/* `..` climbing out of the workspace into ~/.ssh, and into ws/locked. */
	snprintf(p, sizeof(p), "%s/../home/.ssh/id_ed25519", c->ws);
	fsbt_text_req(line, sizeof(line), FSBT_WRITE, p, s, FSBT_OPEN_WRITE);
	text_denied(c, fd, line, strlen(line), "DENY EACCES", "text write ws/../home/.ssh key");
	expect_refused(fsbt_hostopf(fd, HOP "\"delete\",\"path\":\"%s\"}", s, p), "EACCES",
		       "json delete ws/../home/.ssh key");
	snprintf(p, sizeof(p), "%s/x/../locked/canary", c->ws);
	fsbt_text_req(line, sizeof(line), FSBT_WRITE, p, s, FSBT_OPEN_WRITE);
	text_denied(c, fd, line, strlen(line), "DENY", "text write ws/x/../locked/canary");
	/* `//`, `/./` and a trailing `/` spell the protected paths too. */
	snprintf(p, sizeof(p), "%s//locked//canary", c->ws);
	fsbt_text_req(line, sizeof(line), FSBT_WRITE, p, s, FSBT_OPEN_WRITE);
	text_denied(c, fd, line, strlen(line), "DENY EACCES", "text write ws//locked//canary");
	expect_refused(fsbt_hostopf(fd, HOP "\"chmod\",\"path\":\"%s\",\"mode\":\"0777\"}", s, p),
		       "EACCES", "json chmod ws//locked//canary");
	snprintf(p, sizeof(p), "%s/./locked/./sub/", c->ws);
	expect_refused(fsbt_hostopf(fd, HOP "\"delete\",\"path\":\"%s\",\"recursive\":true}", s, p),
		       "EACCES", "json delete ws/./locked/./sub/");
	snprintf(p, sizeof(p), "%s/locked/", c->ws);
	expect_refused(fsbt_hostopf(fd, HOP "\"rename\",\"from\":\"%s\",\"to\":\"%s/freed\"}", s,
				    p, c->ws),
		       "EACCES", "json rename ws/locked/ (trailing slash)");
	snprintf(p, sizeof(p), "%s/locked/canary/", c->ws);
	fsbt_text_req(line, sizeof(line), FSBT_WRITE, p, s, FSBT_OPEN_WRITE);
	text_denied(c, fd, line, strlen(line), "DENY", "text write ws/locked/canary/");

	/* A NUL: raw in a text line, \u0000 and %00 in JSON (cJSON would cut
	 * the string at \u0000 and judge only what comes before it). */
	n = (size_t)snprintf(line, sizeof(line), "%s\t%s/ok.txt", FSBT_WRITE, c->ws);
	line[n++] = '\0';
	n += (size_t)snprintf(line + n, sizeof(line) - n, "/../locked/canary\t%s\t%s\t%s", s,
			      FSBT_TOOL_CALL, FSBT_OPEN_WRITE);
	text_denied(c, fd, line, n, "DENY EINVAL", "text line with a raw NUL");
	expect_refused(fsbt_hostopf(fd, HOP "\"delete\",\"path\":\"%s/locked\\u0000/../ok\","
					    "\"recursive\":true}",
				    s, c->ws),
		       "EINVAL", "json path with \\u0000");
	expect_refused(fsbt_hostopf(fd, HOP "\"delete\",\"pathBytes\":\"%s/locked%%00/x\","
					    "\"recursive\":true}",
				    s, c->ws),
		       "EINVAL", "json pathBytes with %00");
	/* Percent-encoding is JSON's `…Bytes` only: in a text line `%2e%2e`
	 * is a name, not `..`. */
	snprintf(p, sizeof(p), "%s/%%2e%%2e/locked/canary", c->ws);
	fsbt_text_req(line, sizeof(line), FSBT_WRITE, p, s, FSBT_OPEN_WRITE);
	text_denied(c, fd, line, strlen(line), "DENY", "text write ws/%2e%2e/locked/canary");
	/* `..` spelled in pathBytes is still `..`. */
	expect_refused(fsbt_hostopf(fd, HOP "\"chmod\",\"pathBytes\":\"%s/%%2e%%2e/home/.ssh/"
					    "id_ed25519\",\"mode\":\"0666\"}",
				    s, c->ws),
		       "EACCES", "json pathBytes %2e%2e into ~/.ssh");

	/* Empty, relative, over NAME_MAX and over PATH_MAX. */
	fsbt_text_req(line, sizeof(line), FSBT_WRITE, "", s, FSBT_OPEN_WRITE);
	text_denied(c, fd, line, strlen(line), "DENY EINVAL", "text empty path");
	expect_refused(fsbt_hostopf(fd, HOP "\"delete\",\"path\":\"\"}", s), "EINVAL",
		       "json empty path");
	expect_refused(fsbt_hostopf(fd, HOP "\"delete\",\"path\":\"locked/canary\"}", s), "EINVAL",
		       "json relative path");
	big = malloc(PATH_MAX * 2);
	assert_non_null(big);
	memset(big, 'n', 300);
	big[300] = '\0';
	snprintf(p, sizeof(p), "%s/%s", c->ws, big);
	fsbt_text_req(line, sizeof(line), FSBT_WRITE, p, s, FSBT_OPEN_WRITE);
	text_denied(c, fd, line, strlen(line), "DENY ENAMETOOLONG", "text name over NAME_MAX");
	expect_refused(fsbt_hostopf(fd, HOP "\"touch\",\"path\":\"%s\"}", s, p), "ENAMETOOLONG",
		       "json touch of a name over NAME_MAX");
	n = (size_t)snprintf(big, PATH_MAX * 2, "%s", c->ws);
	while (n < PATH_MAX + 64)
		n += (size_t)snprintf(big + n, PATH_MAX * 2 - n, "/aaaaaaaa/..");
	snprintf(big + n, PATH_MAX * 2 - n, "/locked/canary");
	fsbt_text_req(line, sizeof(line), FSBT_WRITE, big, s, FSBT_OPEN_WRITE);
	text_denied(c, fd, line, strlen(line), "DENY", "text path over PATH_MAX");
	expect_refused(fsbt_hostopf(fd, HOP "\"delete\",\"path\":\"%s\"}", s, big), "",
		       "json path over PATH_MAX");
	free(big);

	/* Magic links of the core's own /proc: its root, its cwd, its fds. */
	snprintf(p, sizeof(p), "/proc/self/root%s/locked/canary", c->ws);
	fsbt_text_req(line, sizeof(line), FSBT_WRITE, p, s, FSBT_OPEN_WRITE);
	text_denied(c, fd, line, strlen(line), "DENY", "text write /proc/self/root/…/locked");
	expect_refused(fsbt_hostopf(fd, HOP "\"delete\",\"path\":\"%s\"}", s, p), "",
		       "json delete /proc/self/root/…/locked/canary");
	snprintf(p, sizeof(p), "/proc/%d/cwd/canary", (int)c->pid);
	fsbt_text_req(line, sizeof(line), FSBT_WRITE, p, s, FSBT_OPEN_WRITE);
	text_denied(c, fd, line, strlen(line), "DENY", "text write /proc/<core>/cwd/canary");
	for (int i = 0; i < 16; i++) {
		snprintf(p, sizeof(p), "/proc/thread-self/fd/%d", i);
		fsbt_text_req(line, sizeof(line), FSBT_WRITE, p, s, "open=0x401:0");
		text_denied(c, fd, line, strlen(line), "DENY", "text write /proc/thread-self/fd/N");
	}
	fsbt_close(fd);
	guard_check(&g, NULL);
	snprintf(p, sizeof(p), "%s/freed", c->ws);
	assert_int_equal(lstat(p, &st), -1);
	expect_alive(c);
}

/* ------------------------------------------------------------------------ */
/* 4 and 5. Hard links and directory renames across the workspace's edge. */

static void hard_links_to_protected_files_are_not_written_or_made(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX + 32], q[PATH_MAX + 32], line[PATH_MAX * 2], reply[REPLY];
	const char *s = c->session;
	struct guard g;
	int fd, got;

	/* Made before the requests, outside any request: ws/alias-locked is a
	 * second name of ws/locked/canary, ws/alias-out of outside/canary. */
	snprintf(p, sizeof(p), "%s/locked/canary", c->ws);
	snprintf(q, sizeof(q), "%s/alias-locked", c->ws);
	assert_int_equal(link(p, q), 0);
	snprintf(p, sizeof(p), "%s/outside/canary", c->dir);
	snprintf(q, sizeof(q), "%s/alias-out", c->ws);
	assert_int_equal(link(p, q), 0);
	guard_take(&g, c->ws, c->dir, c->home);
	fd = fsbt_connect(c);
	assert_true(fd >= 0);
	for (int i = 0; i < 2; i++) {
		snprintf(q, sizeof(q), "%s/%s", c->ws, i ? "alias-out" : "alias-locked");
		fsbt_text_req(line, sizeof(line), FSBT_WRITE, q, s, "open=0x401:0644");
		got = -1;
		assert_true(fsbt_request(fd, line, reply, sizeof(reply), &got) >= 0);
		if (got >= 0)
			fail_msg("a write through the hard link %s was granted", q);
		if (!fsbt_starts(reply, "DENY EACCES"))
			fail_msg("write through %s: want DENY EACCES, got '%s'", q, reply);
		/* No fd, and no SANDBOX answer that lets the client open it. */
		fsbt_text_req(line, sizeof(line), FSBT_WRITE, q, s, NULL);
		assert_true(fsbt_request(fd, line, reply, sizeof(reply), NULL) >= 0);
		if (!fsbt_starts(reply, "DENY"))
			fail_msg("write (SANDBOX form) through %s: got '%s'", q, reply);
		expect_refused(fsbt_hostopf(fd, HOP "\"chmod\",\"path\":\"%s\",\"mode\":\"0666\"}",
					    s, q),
			       "EACCES", "chmod through a hard link");
		expect_refused(fsbt_hostopf(fd, HOP "\"copy\",\"from\":\"%s/alive\",\"to\":\"%s\"}",
					    s, c->ws, q),
			       "", "copy over a hard link");
	}
	/* A new hard link of a protected file into the workspace. */
	snprintf(p, sizeof(p), "%s/locked/victim", c->ws);
	expect_refused(fsbt_hostopf(fd, HOP "\"link\",\"from\":\"%s\",\"to\":\"%s/new-alias\"}", s,
				    p, c->ws),
		       "EACCES", "json link of ws/locked/victim");
	snprintf(p, sizeof(p), "%s/.ssh/id_ed25519", c->home);
	expect_refused(fsbt_hostopf(fd, HOP "\"link\",\"from\":\"%s\",\"to\":\"%s/key\"}", s, p,
				    c->ws),
		       "EACCES", "json link of ~/.ssh/id_ed25519");
	fsbt_close(fd);
	guard_check(&g, NULL);
}

static void directory_renames_across_the_workspace_edge_are_refused(void **state)
{
	struct fsbt_core *c = *state;
	char tree[PATH_MAX + 16], p[PATH_MAX + 32];
	const char *s = c->session;
	struct fsbt_tree before, after;
	struct guard g;
	int fd;

	snprintf(tree, sizeof(tree), "%s/tree", c->ws);
	fill_dir(tree, "tree");
	guard_take(&g, c->ws, c->dir, c->home);
	assert_int_equal(fsbt_tree_snap(tree, &before), 0);
	fd = fsbt_connect(c);
	assert_true(fd >= 0);
	/* An allowed subtree out of the workspace. */
	expect_refused(fsbt_hostopf(fd, HOP "\"rename\",\"from\":\"%s\",\"to\":\"%s/outside/tree\"}",
				    s, tree, c->dir),
		       "EACCES", "rename ws/tree into outside");
	expect_refused(fsbt_hostopf(fd, HOP "\"rename\",\"from\":\"%s\",\"to\":\"%s/tree\"}", s,
				    tree, c->dir),
		       "EACCES", "rename ws/tree beside the workspace");
	expect_refused(fsbt_hostopf(fd, HOP "\"rename\",\"from\":\"%s\",\"to\":\"%s/locked/tree\"}",
				    s, tree, c->ws),
		       "EACCES", "rename ws/tree under ws/locked");
	/* A protected subtree into the free part of the workspace, and ~/.ssh
	 * into it. */
	expect_refused(fsbt_hostopf(fd, HOP "\"rename\",\"from\":\"%s/locked\",\"to\":\"%s/free\"}",
				    s, c->ws, c->ws),
		       "EACCES", "rename ws/locked to ws/free");
	expect_refused(fsbt_hostopf(fd, HOP "\"rename\",\"from\":\"%s/locked/sub\","
					    "\"to\":\"%s/free-sub\"}",
				    s, c->ws, c->ws),
		       "EACCES", "rename ws/locked/sub to ws/free-sub");
	expect_refused(fsbt_hostopf(fd, HOP "\"rename\",\"from\":\"%s/.ssh\",\"to\":\"%s/ssh\"}", s,
				    c->home, c->ws),
		       "", "rename ~/.ssh into the workspace");
	expect_refused(fsbt_hostopf(fd, HOP "\"rename\",\"from\":\"%s/outside\",\"to\":\"%s/o\"}",
				    s, c->dir, c->ws),
		       "EACCES", "rename outside into the workspace");
	/* The control: a rename inside the free part works. */
	{
		cJSON *r = fsbt_hostopf(fd, HOP "\"rename\",\"from\":\"%s\",\"to\":\"%s/tree2\"}", s,
					tree, c->ws);

		assert_non_null(r);
		assert_true(fsbt_ok(r));
		cJSON_Delete(r);
		snprintf(p, sizeof(p), "%s/tree2", c->ws);
		assert_int_equal(rename(p, tree), 0);
	}
	fsbt_close(fd);
	guard_check(&g, NULL);
	assert_int_equal(fsbt_tree_snap(tree, &after), 0);
	assert_int_equal(fsbt_tree_diff(&before, &after, 0, NULL, 0), 0);
	fsbt_tree_free(&before);
	fsbt_tree_free(&after);
}

/* ------------------------------------------------------------------------ */
/* 6. A connected socket handed to another process; the pid reused. */

static cJSON *admin_req(int fd, const char *line)
{
	char reply[REPLY];

	if (fsbt_request(fd, line, reply, sizeof(reply), NULL) < 0)
		fail_msg("no reply on the admin socket to %s", line);
	return cJSON_Parse(reply);
}

/* Send `pass` over the socketpair end `sp`. */
static int send_fd(int sp, int pass)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 }, b = 'f';
	struct iovec iov = { &b, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &pass, sizeof(int));
	return sendmsg(sp, &m, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

static int recv_fd(int sp)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 }, b;
	struct iovec iov = { &b, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	int fd = -1;

	if (recvmsg(sp, &m, MSG_CMSG_CLOEXEC) != 1)
		return -1;
	cm = CMSG_FIRSTHDR(&m);
	if (cm != NULL && cm->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

/*
 * A child that chroots into `root`, connects to `sock` (a path inside
 * it), hands the connected socket over `sp` and exits. With `served` it
 * first has one request answered (`probe`, a text line), so that the core
 * has accepted the connection while the child still lived. Its pid.
 */
static pid_t connect_in_root_and_hand_over(const char *root, const char *sock, int sp,
					   const char *probe)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		char reply[REPLY];
		int fd;

		if (chroot(root) < 0 || chdir("/") < 0)
			_exit(2);
		fd = fsbt_connect_path(sock);
		if (fd < 0)
			_exit(3);
		if (probe != NULL && fsbt_request(fd, probe, reply, sizeof(reply), NULL) < 0)
			_exit(4);
		if (send_fd(sp, fd) < 0)
			_exit(5);
		_exit(0);
	}
	return pid;
}

/* A process with pid `want` (which just exited), living until killed:
 * /proc/sys/kernel/ns_last_pid set to want - 1, then fork; tried a few
 * times, since any other fork on the machine may take the pid first. */
static pid_t take_pid(pid_t want)
{
	for (int tries = 0; tries < 200; tries++) {
		FILE *f = fopen("/proc/sys/kernel/ns_last_pid", "w");
		pid_t pid;

		if (f == NULL)
			return -1;
		fprintf(f, "%d", (int)want - 1);
		if (fclose(f) != 0)
			return -1;
		pid = fork();
		if (pid == 0) {
			pause();
			_exit(0);
		}
		if (pid == want)
			return pid;
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	return -1;
}

static void forwarded_socket_and_reused_pid_are_judged_as_the_connector(void **state)
{
	struct fsbt_core *c = *state;
	char admin[PATH_MAX + 16], root[PATH_MAX + 16], link_[PATH_MAX + 32], p[PATH_MAX + 32];
	char line[PATH_MAX * 2], reply[REPLY];
	const char *sock;
	int a, sp[2], conn, got, status;
	pid_t child, twin;
	struct stat st;
	cJSON *r;

	if (geteuid() != 0)
		fsbt_skip("chroot and ns_last_pid need root");
	snprintf(admin, sizeof(admin), "%s/admin.sock", c->state);
	a = fsbt_connect_path(admin);
	assert_true(a >= 0);
	r = admin_req(a, "{\"id\":1,\"command\":\"OpenScope\",\"sessionId\":\"" FSBT_SESSION
			 "\",\"toolCallId\":\"tc-jail\"}");
	assert_true(fsbt_ok(r));
	sock = fsbt_str(r, "socket");
	/* The jail: ws/jail, with a second name of the scoped socket in it,
	 * and its own copy of the workspace's path (ws/jail/<ws>), so that a
	 * path names one file in the jail's view and another in the host's. */
	snprintf(root, sizeof(root), "%s/jail", c->ws);
	assert_int_equal(mkdir(root, 0755), 0);
	snprintf(p, sizeof(p), "mkdir -p '%s%s'", root, c->ws);
	assert_int_equal(system(p), 0);
	snprintf(link_, sizeof(link_), "%s/s.sock", root);
	assert_int_equal(link(sock, link_), 0);
	cJSON_Delete(r);

	/* The jailed client connects, hands its socket to us (another pid,
	 * another root, another session in its environment) and exits. */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
	snprintf(p, sizeof(p), "%s/probe.txt", c->ws);
	fsbt_text_req(line, sizeof(line), FSBT_READ, p, c->session, NULL);
	snprintf(line + strlen(line) - strlen(FSBT_TOOL_CALL), sizeof(line) - strlen(line),
		 "tc-jail");
	child = connect_in_root_and_hand_over(root, "/s.sock", sp[1], line);
	conn = recv_fd(sp[0]);
	assert_true(conn >= 0);
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_int_equal(status, 0);
	close(sp[0]);
	close(sp[1]);
	setenv("FSBROKER_SESSION_ID", "other-session", 1);
	/* Its pid, taken by a process whose root is the host's. */
	twin = take_pid(child);
	printf("# the connecting pid %d %s\n", (int)child,
	       twin == child ? "was reused by a process outside the jail"
			     : "could not be reused (ns_last_pid)");

	/* The request is judged as the connector's: <ws>/made.txt is the
	 * jail's. */
	snprintf(p, sizeof(p), "%s/made.txt", c->ws);
	fsbt_text_req(line, sizeof(line), FSBT_WRITE, p, c->session, FSBT_OPEN_WRITE);
	snprintf(line + strlen(line) - strlen(FSBT_TOOL_CALL "\t" FSBT_OPEN_WRITE),
		 sizeof(line) - strlen(line), "tc-jail\t%s", FSBT_OPEN_WRITE);
	got = -1;
	assert_true(fsbt_request(conn, line, reply, sizeof(reply), &got) >= 0);
	if (got >= 0)
		close(got);
	assert_int_equal(stat(p, &st), -1);
	snprintf(p, sizeof(p), "%s%s/made.txt", root, c->ws);
	if (strcmp(reply, "FD") != 0 || stat(p, &st) < 0)
		fail_msg("a write of <ws>/made.txt on the handed-over socket was not served in "
			 "the connector's root (reply '%s')",
			 reply);
	/* `..` cannot climb out of that root. */
	snprintf(p, sizeof(p), "/../../../../../..%s/locked/canary", c->ws);
	fsbt_text_req(line, sizeof(line), FSBT_WRITE, p, c->session, FSBT_OPEN_WRITE);
	snprintf(line + strlen(line) - strlen(FSBT_TOOL_CALL "\t" FSBT_OPEN_WRITE),
		 sizeof(line) - strlen(line), "tc-jail\t%s", FSBT_OPEN_WRITE);
	got = -1;
	assert_true(fsbt_request(conn, line, reply, sizeof(reply), &got) >= 0);
	if (got >= 0) {
		struct stat canary, gst;

		snprintf(p, sizeof(p), "%s/locked/canary", c->ws);
		assert_int_equal(stat(p, &canary), 0);
		assert_int_equal(fstat(got, &gst), 0);
		close(got);
		if (gst.st_ino == canary.st_ino && gst.st_dev == canary.st_dev)
			fail_msg("the jailed connection reached ws/locked/canary");
	}
	/* The holder's own session or tool call is not the socket's. */
	fsbt_text_req(line, sizeof(line), FSBT_WRITE, "/other.txt", "other-session",
		      FSBT_OPEN_WRITE);
	text_denied(c, conn, line, strlen(line), "DENY EACCES", "a foreign session on the socket");
	expect_refused(fsbt_hostopf(conn, "{\"command\":\"HostFileOperation\",\"operation\":\"touch\","
					  "\"path\":\"/t\",\"sessionId\":\"" FSBT_SESSION
					  "\",\"toolCallId\":\"tc-other\"}"),
		       "EACCES", "a foreign tool call on the socket");
	fsbt_close(conn);
	unsetenv("FSBROKER_SESSION_ID");

	/* Now the pid exits before the core accepts: the core is stopped while
	 * the jailed client connects, hands over and exits, and its pid is
	 * taken again. The connection must not be served in the host's view,
	 * nor in the root of the process that now has the pid. */
	if (twin > 0) {
		kill(twin, SIGKILL);
		waitpid(twin, NULL, 0);
	}
	assert_int_equal(kill(c->pid, SIGSTOP), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
	child = connect_in_root_and_hand_over(root, "/s.sock", sp[1], NULL);
	conn = recv_fd(sp[0]);
	assert_int_equal(waitpid(child, &status, 0), child);
	close(sp[0]);
	close(sp[1]);
	twin = take_pid(child);
	assert_int_equal(kill(c->pid, SIGCONT), 0);
	assert_true(conn >= 0);
	snprintf(p, sizeof(p), "%s/late.txt", c->ws);
	fsbt_text_req(line, sizeof(line), FSBT_WRITE, p, c->session, FSBT_OPEN_WRITE);
	snprintf(line + strlen(line) - strlen(FSBT_TOOL_CALL "\t" FSBT_OPEN_WRITE),
		 sizeof(line) - strlen(line), "tc-jail\t%s", FSBT_OPEN_WRITE);
	got = -1;
	if (fsbt_request(conn, line, reply, sizeof(reply), &got) >= 0 && got >= 0)
		close(got);
	if (twin > 0) {
		kill(twin, SIGKILL);
		waitpid(twin, NULL, 0);
	}
	/* <ws>/late.txt is what the host's view (or the root of the process
	 * that took the pid) would have made. */
	if (stat(p, &st) == 0)
		fail_msg("a connection whose client was gone before it was accepted was served "
			 "in the host's view (reply '%s')",
			 reply);
	fsbt_close(conn);
	fsbt_close(a);
	expect_alive(c);
}

/* ------------------------------------------------------------------------ */
/* 7. Descriptors sent with requests. */

static int count_fds(pid_t pid)
{
	char p[64];
	struct dirent *e;
	int n = 0;
	DIR *d;

	snprintf(p, sizeof(p), "/proc/%d/fd", (int)pid);
	d = opendir(p);
	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Send `line` with `n` descriptors attached. */
static int send_with_fds(int fd, const char *line, const int *fds, int n)
{
	char cbuf[CMSG_SPACE(sizeof(int) * 253)] = { 0 }, buf[REPLY];
	struct iovec iov = { buf, 0 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)n) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);

	iov.iov_len = (size_t)snprintf(buf, sizeof(buf), "%s\n", line);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)n);
	memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)n);
	return sendmsg(fd, &m, MSG_NOSIGNAL) == (ssize_t)iov.iov_len ? 0 : -errno;
}

static void descriptors_sent_with_requests_are_closed_unused(void **state)
{
	struct fsbt_core *c = *state;
	char line[PATH_MAX * 2], reply[REPLY], p[PATH_MAX + 16];
	int fds[253], base, now, conn, sp[2], rounds = 0;

	snprintf(p, sizeof(p), "%s/a.txt", c->ws);
	fsbt_write_file(p, "a\n");
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
	/* Many of each: a directory (the workspace's parent), a file, a socket. */
	for (int i = 0; i < 253; i++) {
		if (i % 3 == 0)
			fds[i] = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		else if (i % 3 == 1)
			fds[i] = open(p, O_RDONLY | O_CLOEXEC);
		else
			fds[i] = dup(sp[0]);
		assert_true(fds[i] >= 0);
	}
	conn = fsbt_connect(c);
	assert_true(conn >= 0);
	fsbt_text_req(line, sizeof(line), FSBT_READ, p, c->session, NULL);
	assert_true(fsbt_request(conn, line, reply, sizeof(reply), NULL) >= 0);
	base = count_fds(c->pid);
	assert_true(base > 0);
	for (int i = 0; i < 100; i++, rounds++) {
		int n = 1 + (i * 37) % 253, got = -1;

		if (i % 2 == 0)
			fsbt_text_req(line, sizeof(line), FSBT_READ, p, c->session, NULL);
		else
			snprintf(line, sizeof(line),
				 "{\"id\":%d,\"command\":\"HostFileOperation\",\"operation\":"
				 "\"touch\",\"path\":\"%s\",\"sessionId\":\"%s\"}",
				 i, p, c->session);
		assert_int_equal(send_with_fds(conn, line, fds, n), 0);
		assert_true(fsbt_read_reply(conn, reply, sizeof(reply), &got) >= 0);
		if (got >= 0)
			fail_msg("the core sent an fd back on a request that asked for none");
		if (i % 2 == 0 ? strcmp(reply, "SANDBOX") != 0 && !fsbt_starts(reply, "DENY")
			       : strstr(reply, "\"ok\"") == NULL)
			fail_msg("round %d: an unexpected reply '%s'", i, reply);
	}
	now = count_fds(c->pid);
	printf("# %d requests carried up to 253 fds each; the core holds %d fds (%d before)\n",
	       rounds, now, base);
	if (now > base + 2)
		fail_msg("the core kept the descriptors it was sent: %d fds, %d before", now, base);
	fsbt_close(conn);
	for (int i = 0; i < 253; i++)
		close(fds[i]);
	close(sp[0]);
	close(sp[1]);
	expect_alive(c);
}

/* ------------------------------------------------------------------------ */
/* 8. Hostile globs and packs. */

static void write_pack_and_start(struct fsbt_core *c, const char *text)
{
	snprintf(c->rules, sizeof(c->rules), "%s/hostile.lua", c->rules_dir);
	fsbt_write_file(c->rules, text);
	fsbt_core_start(c);
}

/* A glob whose stars backtrack, against a path the attacker chooses: where
 * the matcher cannot stop at a literal's first place, each request ends at
 * the instruction cap (a policy error: denied), and the core keeps
 * answering the others. */
static void backtracking_glob_is_capped_and_the_core_keeps_answering(void **state)
{
	struct fsbt_core *c = *state;
	char name[201], p[PATH_MAX], line[PATH_MAX * 2], reply[REPLY];
	int fd, got = -1;

	write_pack_and_start(c, "return { name = \"backtrack\", include = { \"default\" },\n"
				"  denyModify = { \"${workspace}/*a*a*a*a*a*a*a*b\",\n"
				"                 \"${workspace}/**/a/**/a/**/a/**/a/**/b\" } }\n");
	memset(name, 'a', 200);
	name[200] = '\0';
	fd = fsbt_connect(c);
	assert_true(fd >= 0);
	/*
	 * '*' then text then '*' stops at the text's first place: matched in
	 * linear time, so the answer is the right one, not a refusal for want
	 * of time. The name matches no glob (no 'b', no 'c'): an fd.
	 */
	snprintf(p, sizeof(p), "%s/%s", c->ws, name);
	fsbt_text_req(line, sizeof(line), FSBT_WRITE, p, c->session, FSBT_OPEN_WRITE);
	if (fsbt_send(fd, line, strlen(line), -1) < 0 ||
	    fsbt_read_reply(fd, reply, sizeof(reply), &got) < 0)
		fail_msg("a write of a*200 under *a*a*…*b: no reply");
	if (got >= 0)
		close(got);
	if (strcmp(reply, "FD") != 0)
		fail_msg("a write of a*200 that no glob matches: want FD, got '%s'", reply);
	/* '*' then '?' then '*' must try every place: the steps count against
	 * the instruction cap, and the request is refused when it is spent. */
	fsbt_write_file(c->rules, "return { name = \"backtrack\", include = { \"default\" },\n"
				  "  denyModify = { \"${workspace}/*a*a*a*a*a*a*a*b\",\n"
				  "                 \"${workspace}/*?*?*?*?*?*?*?*c\",\n"
				  "                 \"${workspace}/**/a/**/a/**/a/**/a/**/b\" } }\n");
	{
		cJSON *r = fsbt_control_cmd(c, "Reload", NULL);

		if (!fsbt_ok(r))
			fail_msg("reload: %s", fsbt_str(r, "error"));
		cJSON_Delete(r);
	}
	snprintf(p, sizeof(p), "%s/%s", c->ws, name);
	p[strlen(p) - 1] = 'x';
	fsbt_text_req(line, sizeof(line), FSBT_WRITE, p, c->session, FSBT_OPEN_WRITE);
	for (int i = 0; i < 2; i++)
		text_denied(c, fd, line, strlen(line), "DENY EACCES policy error",
			    "a write of a*199x under *?*?*?*?*?*?*?*c");
	{
		size_t n = (size_t)snprintf(p, sizeof(p), "%s", c->ws);

		while (n < 3000)
			n += (size_t)snprintf(p + n, sizeof(p) - n, "/a");
		fsbt_text_req(line, sizeof(line), FSBT_WRITE, p, c->session, FSBT_OPEN_WRITE);
		text_denied(c, fd, line, strlen(line), "DENY", "a write of /a/a/…/a under **/a/**/…/b");
	}
	fsbt_close(fd);
	expect_alive(c);
	/* The globs still match what they name. */
	fd = fsbt_connect(c);
	snprintf(p, sizeof(p), "%s/xaaaaaaab", c->ws);
	fsbt_text_req(line, sizeof(line), FSBT_WRITE, p, c->session, FSBT_OPEN_WRITE);
	text_denied(c, fd, line, strlen(line), "DENY EACCES denyModify", "ws/xaaaaaaab");
	snprintf(p, sizeof(p), "%s/a1b2c3d4e5f6g7hc", c->ws);
	fsbt_text_req(line, sizeof(line), FSBT_WRITE, p, c->session, FSBT_OPEN_WRITE);
	text_denied(c, fd, line, strlen(line), "DENY EACCES denyModify", "ws/a1b2c3d4e5f6g7hc");
	fsbt_close(fd);
}

/* A reload with `text` must fail (the message holding `why`) and the
 * previous pack keep serving. */
static void expect_reload_refused(struct fsbt_core *c, const char *text, const char *why)
{
	char tmp[PATH_MAX + 16];
	cJSON *r;

	snprintf(tmp, sizeof(tmp), "%s/.hostile.new", c->rules_dir);
	fsbt_write_file(tmp, text);
	assert_int_equal(rename(tmp, c->rules), 0);
	r = fsbt_control_cmd(c, "Reload", NULL);
	if (fsbt_ok(r) || strstr(fsbt_str(r, "error"), why) == NULL)
		fail_msg("a pack with %s: want a refused reload naming '%s', got ok=%d '%s'", why,
			 why, fsbt_ok(r), fsbt_str(r, "error"));
	cJSON_Delete(r);
	expect_alive(c);
	r = fsbt_control_cmd(c, "Stats", NULL);
	assert_string_equal(fsbt_str(r, "pack"), "base");
	cJSON_Delete(r);
}

static void hostile_packs_are_refused_at_load_and_the_old_pack_serves(void **state)
{
	struct fsbt_core *c = *state;

	write_pack_and_start(c, "return { name = \"base\", include = { \"default\" } }\n");
	/* Its own lpeg pattern: lpeg is not there for a pack to build one. */
	expect_reload_refused(c,
			      "local lpeg = require(\"lpeg\")\n"
			      "local p = lpeg.P({ lpeg.P(\"a\") * lpeg.V(1) * \"b\" + "
			      "lpeg.P(\"a\") * lpeg.V(1) * \"c\" + \"a\" })\n"
			      "return { name = \"lp\", include = { \"default\" },\n"
			      "  decide = function(req, v) lpeg.match(p, req.path) return v end }\n",
			      "require");
	/* Coroutines, metatables and __gc traps are not there either. */
	expect_reload_refused(c,
			      "local co = coroutine.wrap(function() while true do "
			      "coroutine.yield() end end)\n"
			      "return { name = \"co\", include = { \"default\" },\n"
			      "  decide = function(req, v) co() return v end }\n",
			      "coroutine");
	expect_reload_refused(c,
			      "setmetatable({}, { __gc = function() while true do end end })\n"
			      "return { name = \"gc\", include = { \"default\" } }\n",
			      "setmetatable");
	expect_reload_refused(c,
			      "local t = getmetatable(\"\")\n"
			      "return { name = \"mt\", include = { \"default\" } }\n",
			      "getmetatable");
	/* Memory bombs while the pack loads: string.rep and doubling. */
	expect_reload_refused(c,
			      "local s = string.rep(\"x\", 1 << 30)\n"
			      "return { name = \"rep\", include = { \"default\" } }\n",
			      "memory");
	expect_reload_refused(c,
			      "local t, s = {}, (\"y\"):rep(1 << 20)\n"
			      "while true do s = s .. s; t[#t + 1] = s end\n",
			      "memory");
	/* An endless loop at load. */
	expect_reload_refused(c, "while true do end\n", "instruction");
}

/* A decide hook that reaches for coroutine.yield, or for the string
 * metatable, when it runs: the request is denied, the next one served. */
static void decide_hooks_reaching_for_coroutines_are_denied(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX], line[PATH_MAX * 2], reply[REPLY];
	int fd;

	write_pack_and_start(c, "return { name = \"y\", include = { \"default\" },\n"
				"  decide = function(req, v)\n"
				"    if req.path:find(\"yield\", 1, true) then return coroutine.yield(v) end\n"
				"    if req.path:find(\"meta\", 1, true) then\n"
				"      local mt = (\"\").__index; mt.find = nil end\n"
				"    if req.path:find(\"rep\", 1, true) then\n"
				"      local s = (\"x\"):rep(1 << 40) end\n"
				"    return v end }\n");
	fd = fsbt_connect(c);
	assert_true(fd >= 0);
	for (int i = 0; i < 3; i++) {
		static const char *const names[] = { "yield.txt", "meta.txt", "rep.txt" };

		snprintf(p, sizeof(p), "%s/%s", c->ws, names[i]);
		fsbt_text_req(line, sizeof(line), FSBT_WRITE, p, c->session, FSBT_OPEN_WRITE);
		text_denied(c, fd, line, strlen(line), "DENY EACCES", names[i]);
	}
	/* The string library the engine uses is whole. */
	snprintf(p, sizeof(p), "%s/fine.txt", c->ws);
	fsbt_text_req(line, sizeof(line), FSBT_READ, p, c->session, NULL);
	assert_true(fsbt_request(fd, line, reply, sizeof(reply), NULL) >= 0);
	assert_string_equal(reply, "SANDBOX");
	fsbt_close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(dir_symlink_exchange_race_during_hostops_and_write_grants,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			path_edge_cases_in_text_and_json_never_reach_protected_files, setup, teardown),
		cmocka_unit_test_setup_teardown(hard_links_to_protected_files_are_not_written_or_made,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			directory_renames_across_the_workspace_edge_are_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(
			forwarded_socket_and_reused_pid_are_judged_as_the_connector, setup, teardown),
		cmocka_unit_test_setup_teardown(descriptors_sent_with_requests_are_closed_unused,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			backtracking_glob_is_capped_and_the_core_keeps_answering, setup_layout_only,
			teardown),
		cmocka_unit_test_setup_teardown(
			hostile_packs_are_refused_at_load_and_the_old_pack_serves, setup_layout_only,
			teardown),
		cmocka_unit_test_setup_teardown(decide_hooks_reaching_for_coroutines_are_denied,
						setup_layout_only, teardown),
	};

	return fsbt_run_group(tests, NULL, NULL);
}
