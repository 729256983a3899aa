/*
 * test_serve_backup.c — backups through the real core: a write grant saves
 * the file it hands out before anything can change it, a failed backup
 * leaves the file untouched, CommitModifyBackup seals the cycle, and a
 * change of metadata alone copies no content.
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "audit.h"

#define REPLY 8192

static void store_dir(const struct fsbt_core *c, char *out, size_t len)
{
	snprintf(out, len, "%s/sessions/%s/modify_backup", c->state, c->session);
}

/* The content of the object named `hex` in the core's store. */
static char *object_content(const struct fsbt_core *c, const char *hex)
{
	char dir[PATH_MAX];

	store_dir(c, dir, sizeof(dir));
	return fsbt_read_object(dir, hex);
}

/* The n-th line (1-based) of cycle `cycle`'s journal, parsed. */
static cJSON *journal_line(const struct fsbt_core *c, int cycle, int n)
{
	char dir[PATH_MAX], path[PATH_MAX * 2];
	char *text, *line, *save = NULL;
	cJSON *j = NULL;

	store_dir(c, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/cycles/%d/journal.jsonl", dir, cycle);
	text = fsbt_read_file(path, NULL);
	if (text == NULL)
		return NULL;
	/* The n-th line of a change: a directory's own "entries" lines
	 * (its state before its names change) are not counted. */
	line = strtok_r(text, "\n", &save);
	while (line != NULL && strstr(line, "\"op\":\"entries\"") != NULL)
		line = strtok_r(NULL, "\n", &save);
	for (int i = 1; line != NULL && i < n; i++) {
		line = strtok_r(NULL, "\n", &save);
		while (line != NULL && strstr(line, "\"op\":\"entries\"") != NULL)
			line = strtok_r(NULL, "\n", &save);
	}
	if (line != NULL)
		j = cJSON_Parse(line);
	free(text);
	return j;
}

static void grant(struct fsbt_core *c, int fd, const char *path, const char *spec,
		  char *reply, int *got)
{
	char line[PATH_MAX + 256];

	fsbt_text_req(line, sizeof(line), FSBT_WRITE, path, c->session, spec);
	assert_true(fsbt_request(fd, line, reply, REPLY, got) > 0);
}

static void write_grant_saves_the_file_before_truncating_it(void **state)
{
	struct fsbt_core *c = *state;
	char reply[REPLY], path[PATH_MAX + 16];
	int fd = fsbt_connect(c), got = -1;
	cJSON *j, *prior;
	char *saved, *now;

	snprintf(path, sizeof(path), "%s/notes.md", c->ws);
	fsbt_write_file(path, "the original text\n");
	grant(c, fd, path, FSBT_OPEN_WRITE, reply, &got);
	assert_string_equal(reply, "FD");
	assert_true(got >= 0);
	assert_int_equal(write(got, "new\n", 4), 4);
	close(got);
	now = fsbt_read_file(path, NULL);
	assert_string_equal(now, "new\n");
	free(now);

	j = journal_line(c, 1, 1);
	assert_non_null(j);
	assert_string_equal(fsbt_str(j, "resolved"), path);
	assert_string_equal(fsbt_str(j, "op"), "write");
	prior = cJSON_GetObjectItem(j, "prior");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(prior, "exists")));
	assert_int_equal((int)fsbt_num(prior, "size"), 18);
	saved = object_content(c, fsbt_str(prior, "object"));
	assert_non_null(saved);
	assert_string_equal(saved, "the original text\n");
	free(saved);
	cJSON_Delete(j);
	fsbt_close(fd);
}

static void creating_a_new_file_is_journaled_as_absent_before(void **state)
{
	struct fsbt_core *c = *state;
	char reply[REPLY], path[PATH_MAX + 16];
	int fd = fsbt_connect(c), got = -1;
	cJSON *j;

	snprintf(path, sizeof(path), "%s/fresh.txt", c->ws);
	grant(c, fd, path, FSBT_OPEN_WRITE, reply, &got);
	assert_string_equal(reply, "FD");
	close(got);
	/* A create changes no existing file: nothing to copy, but the journal
	 * says the path was absent, so a restore removes it. */
	j = journal_line(c, 1, 1);
	assert_non_null(j);
	assert_string_equal(fsbt_str(j, "resolved"), path);
	assert_false(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "prior"), "exists")));
	assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "prior"), "object"));
	cJSON_Delete(j);
	fsbt_close(fd);
}

static void too_large_file_waits_for_approval_and_is_left_untouched(void **state)
{
	struct fsbt_core *c = *state;
	char reply[REPLY], path[PATH_MAX + 16];
	size_t big = 2u << 20, len = 0;
	char *data = malloc(big + 1), *after;
	int fd = fsbt_connect(c), got = -1;
	cJSON *r;

	memset(data, 'z', big);
	data[big] = '\0';
	snprintf(path, sizeof(path), "%s/big.bin", c->ws);
	fsbt_write_file(path, data);
	r = fsbt_control_cmd(c, "EnableModifyBackup", "\"enabled\":true,\"fileBackupMaxSizeMB\":1");
	assert_true(fsbt_ok(r));
	cJSON_Delete(r);
	grant(c, fd, path, FSBT_OPEN_WRITE, reply, &got);
	if (fsbt_starts(reply, "FD")) {
		/* A reflink costs no space, so no limit applies (DESIGN §6.2). */
		close(got);
		free(data);
		fsbt_close(fd);
		fsbt_skip("the workspace's filesystem makes reflinks: the size limit does not apply");
	}
	/* The default pack says ask: the write waits on a block. */
	assert_int_equal(got, -1);
	assert_true(fsbt_starts(reply, "DENY EACCES ask blk-"));
	assert_non_null(strstr(reply, " backup.onTooLarge ask"));
	after = fsbt_read_file(path, &len);
	assert_int_equal(len, big);
	assert_memory_equal(after, data, big);
	free(after);

	/* Approved: the same write gets its fd, and the journal says the
	 * backup was skipped as too large. */
	{
		char blk[32];
		cJSON *j;

		sscanf(reply, "DENY EACCES ask %31s", blk);
		r = fsbt_control_cmd(c, "Approve", "\"blockId\":\"%s\"", blk);
		assert_true(fsbt_ok(r));
		cJSON_Delete(r);
		grant(c, fd, path, FSBT_OPEN_WRITE, reply, &got);
		assert_string_equal(reply, "FD");
		/* As large as before, so that the limit applies again. */
		assert_int_equal(write(got, data, big), (ssize_t)big);
		close(got);
		j = journal_line(c, 1, 1);
		assert_non_null(j);
		assert_string_equal(fsbt_str(cJSON_GetObjectItem(j, "prior"), "skipped"),
				    "too-large");
		cJSON_Delete(j);
		/* The same tool call's next write in the cycle needs no backup:
		 * the first line holds the path's state for any restore. */
		grant(c, fd, path, FSBT_OPEN_WRITE, reply, &got);
		assert_string_equal(reply, "FD");
		assert_int_equal(write(got, data, big), (ssize_t)big);
		close(got);
		/* ... and leaves no line of its own. */
		assert_null(journal_line(c, 1, 2));
		/* Used up: in the next cycle the write asks again. */
		r = fsbt_control_cmd(c, "CommitModifyBackup", "\"commitMsg\":\"turn\"");
		assert_true(fsbt_ok(r));
		cJSON_Delete(r);
		grant(c, fd, path, FSBT_OPEN_WRITE, reply, &got);
		assert_true(fsbt_starts(reply, "DENY EACCES ask "));
	}
	free(data);
	fsbt_close(fd);
}

static void disabled_backup_takes_no_copy(void **state)
{
	struct fsbt_core *c = *state;
	char reply[REPLY], path[PATH_MAX + 16];
	int fd = fsbt_connect(c), got = -1;
	cJSON *r;

	r = fsbt_control_cmd(c, "EnableModifyBackup", "\"enabled\":false");
	assert_true(fsbt_ok(r));
	cJSON_Delete(r);
	snprintf(path, sizeof(path), "%s/plain.txt", c->ws);
	fsbt_write_file(path, "x\n");
	grant(c, fd, path, FSBT_OPEN_WRITE, reply, &got);
	assert_string_equal(reply, "FD");
	close(got);
	assert_null(journal_line(c, 1, 1));
	fsbt_close(fd);
}

static void commit_seals_the_cycle_with_the_audit_head(void **state)
{
	struct fsbt_core *c = *state;
	char reply[REPLY], path[PATH_MAX + 16], dir[PATH_MAX], cyc[PATH_MAX * 2];
	char audit[PATH_MAX * 2];
	int fd = fsbt_connect(c), got = -1, status;
	cJSON *r, *sealed;
	char *text, *out = NULL;

	snprintf(path, sizeof(path), "%s/a.c", c->ws);
	fsbt_write_file(path, "int a;\n");
	grant(c, fd, path, FSBT_OPEN_WRITE, reply, &got);
	assert_string_equal(reply, "FD");
	close(got);
	r = fsbt_control_cmd(c, "CommitModifyBackup", "\"commitMsg\":\"turn one\"");
	assert_true(fsbt_ok(r));
	assert_int_equal((int)fsbt_num(r, "cycle"), 1);
	cJSON_Delete(r);

	store_dir(c, dir, sizeof(dir));
	snprintf(cyc, sizeof(cyc), "%s/cycles/1/cycle.json", dir);
	text = fsbt_read_file(cyc, NULL);
	assert_non_null(text);
	sealed = cJSON_Parse(text);
	free(text);
	assert_string_equal(fsbt_str(sealed, "message"), "turn one");
	assert_int_equal((int)strlen(fsbt_str(sealed, "auditHead")), 64);
	assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(sealed, "paths"), path));

	/* The head the cycle recorded is a line of the audit log. */
	snprintf(audit, sizeof(audit), "%s/audit/%s.jsonl", c->state, c->session);
	status = fsbt_run((char *[]){ (char *)fsbt_binary(), "audit", "verify", audit, "--head",
				      (char *)fsbt_str(sealed, "auditHead"), NULL }, &out);
	assert_int_equal(status, 0);
	free(out);
	cJSON_Delete(sealed);

	/* Nothing new since: nothing to seal. */
	r = fsbt_control_cmd(c, "CommitModifyBackup", "\"commitMsg\":\"empty\"");
	assert_true(fsbt_ok(r));
	assert_int_equal((int)fsbt_num(r, "cycle"), 0);
	cJSON_Delete(r);
	fsbt_close(fd);
}

static void host_modify_backup_saves_the_file(void **state)
{
	struct fsbt_core *c = *state;
	char path[PATH_MAX + 16];
	cJSON *r, *j;
	char *saved;

	snprintf(path, sizeof(path), "%s/edit.txt", c->ws);
	fsbt_write_file(path, "before the edit\n");
	r = fsbt_control_cmd(c, "ModifyBackup", "\"path\":\"%s\",\"toolCallId\":\"edit-1\"", path);
	assert_true(fsbt_ok(r));
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r, "backedUp")));
	cJSON_Delete(r);
	j = journal_line(c, 1, 1);
	assert_non_null(j);
	assert_string_equal(fsbt_str(j, "toolCallId"), "edit-1");
	saved = object_content(c, fsbt_str(cJSON_GetObjectItem(j, "prior"), "object"));
	assert_string_equal(saved, "before the edit\n");
	free(saved);
	cJSON_Delete(j);

	/* A denied path is not backed up, and says which rule. */
	snprintf(path, sizeof(path), "%s/.ssh/id_ed25519", c->home);
	r = fsbt_control_cmd(c, "ModifyBackup", "\"path\":\"%s\"", path);
	assert_false(fsbt_ok(r));
	assert_non_null(strstr(fsbt_str(r, "rule"), ".ssh"));
	cJSON_Delete(r);
}

static void cycle_left_open_by_a_crash_is_sealed_as_recovered(void **state)
{
	struct fsbt_core *c = *state;
	char reply[REPLY], path[PATH_MAX + 16], dir[PATH_MAX], cyc[PATH_MAX * 2];
	int fd = fsbt_connect(c), got = -1;
	cJSON *sealed;
	char *text;

	snprintf(path, sizeof(path), "%s/b.c", c->ws);
	fsbt_write_file(path, "int b;\n");
	grant(c, fd, path, FSBT_OPEN_WRITE, reply, &got);
	assert_string_equal(reply, "FD");
	close(got);
	fsbt_close(fd);
	kill(c->pid, SIGKILL);
	assert_int_equal(fsbt_core_wait_exit(c, FSBT_TIMEOUT_MS), 0);
	close(c->ctl_in);
	close(c->ctl_out);
	c->ctl_in = c->ctl_out = -1;
	fsbt_core_start(c);

	store_dir(c, dir, sizeof(dir));
	snprintf(cyc, sizeof(cyc), "%s/cycles/1/cycle.json", dir);
	text = fsbt_read_file(cyc, NULL);
	assert_non_null(text);
	sealed = cJSON_Parse(text);
	free(text);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(sealed, "recovered")));
	/* No end state is known for a recovered cycle (docs/backup-store.md). */
	assert_true(cJSON_IsObject(cJSON_GetObjectItem(sealed, "paths")));
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(sealed, "paths")), 0);
	cJSON_Delete(sealed);
}

/* The whole job: a turn overwrites, appends to and creates files through
 * the core; after the commit one command puts the workspace back. */
static void restore_after_a_turn_puts_the_workspace_back(void **state)
{
	struct fsbt_core *c = *state;
	char reply[REPLY], a[PATH_MAX + 16], b[PATH_MAX + 16], n[PATH_MAX + 16];
	int fd = fsbt_connect(c), got = -1, status;
	char *out = NULL, *text;
	struct stat st;
	cJSON *r;

	snprintf(a, sizeof(a), "%s/a.txt", c->ws);
	snprintf(b, sizeof(b), "%s/b.txt", c->ws);
	snprintf(n, sizeof(n), "%s/new.txt", c->ws);
	fsbt_write_file(a, "alpha\n");
	fsbt_write_file(b, "beta\n");
	grant(c, fd, a, FSBT_OPEN_WRITE, reply, &got);
	assert_string_equal(reply, "FD");
	assert_int_equal(write(got, "ALPHA!\n", 7), 7);
	close(got);
	grant(c, fd, b, "open=0x401:0644", reply, &got);	/* O_WRONLY|O_APPEND */
	assert_string_equal(reply, "FD");
	assert_int_equal(write(got, "more\n", 5), 5);
	close(got);
	grant(c, fd, n, FSBT_OPEN_WRITE, reply, &got);
	assert_string_equal(reply, "FD");
	close(got);
	fsbt_close(fd);
	r = fsbt_control_cmd(c, "CommitModifyBackup", "\"commitMsg\":\"the turn\"");
	assert_int_equal((int)fsbt_num(r, "cycle"), 1);
	cJSON_Delete(r);

	status = fsbt_run((char *[]){ (char *)fsbt_binary(), "backup", "restore", "--last",
				      "--state-dir", c->state, "--session", c->session, NULL }, &out);
	if (status != 0)
		fprintf(stderr, "# restore said:\n%s", out);
	assert_int_equal(status, 0);
	free(out);
	text = fsbt_read_file(a, NULL);
	assert_string_equal(text, "alpha\n");
	free(text);
	text = fsbt_read_file(b, NULL);
	assert_string_equal(text, "beta\n");
	free(text);
	assert_int_equal(lstat(n, &st), -1);
	assert_int_equal(errno, ENOENT);
}

/* A host's own tool, or a SANDBOX client, creating a file: the journal
 * says it was absent, so a restore removes it. */
static void files_created_outside_a_grant_are_journaled_as_absent(void **state)
{
	struct fsbt_core *c = *state;
	char reply[REPLY], line[PATH_MAX + 256], p1[PATH_MAX + 16], p2[PATH_MAX + 16];
	int fd = fsbt_connect(c), got = -1;
	cJSON *r, *j;

	snprintf(p1, sizeof(p1), "%s/by-host.txt", c->ws);
	snprintf(p2, sizeof(p2), "%s/by-client.txt", c->ws);
	r = fsbt_control_cmd(c, "ModifyBackup", "\"path\":\"%s\"", p1);
	assert_true(fsbt_ok(r));
	assert_false(cJSON_IsTrue(cJSON_GetObjectItem(r, "backedUp")));
	cJSON_Delete(r);
	fsbt_text_req(line, sizeof(line), FSBT_WRITE, p2, c->session, NULL);
	assert_true(fsbt_request(fd, line, reply, REPLY, &got) > 0);
	assert_string_equal(reply, "SANDBOX");
	for (int i = 1; i <= 2; i++) {
		j = journal_line(c, 1, i);
		assert_non_null(j);
		assert_string_equal(fsbt_str(j, "resolved"), i == 1 ? p1 : p2);
		assert_false(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "prior"),
							      "exists")));
		cJSON_Delete(j);
	}
	fsbt_close(fd);
}

/*
 * Two cores on one session's state (two runs of one project at once) both
 * serve: each turn gets a cycle of its own, neither is sealed as recovered
 * by the other, and the session's audit log stays one chain.
 */
static void second_core_on_the_same_session_is_not_refused(void **state)
{
	struct fsbt_core *c = *state, *c2 = fsbt_core_new();
	char reply[REPLY], a[PATH_MAX + 16], b[PATH_MAX + 16], log[PATH_MAX + 64];
	char *argv[6], *out = NULL;
	int fd, fd2, got = -1, status;
	cJSON *r, *j;

	snprintf(c2->state, sizeof(c2->state), "%s", c->state);
	snprintf(c2->session, sizeof(c2->session), "%s", c->session);
	snprintf(c2->ws, sizeof(c2->ws), "%s", c->ws);
	fsbt_core_start(c2);
	snprintf(a, sizeof(a), "%s/a.txt", c->ws);
	snprintf(b, sizeof(b), "%s/b.txt", c->ws);
	fsbt_write_file(a, "alpha\n");
	fsbt_write_file(b, "beta\n");
	fd = fsbt_connect(c);
	fd2 = fsbt_connect(c2);
	grant(c, fd, a, FSBT_OPEN_WRITE, reply, &got);
	assert_string_equal(reply, "FD");
	close(got);
	grant(c2, fd2, b, FSBT_OPEN_WRITE, reply, &got);
	assert_string_equal(reply, "FD");
	close(got);
	r = fsbt_control_cmd(c2, "CommitModifyBackup", "\"commitMsg\":\"second\"");
	assert_true(fsbt_ok(r));
	assert_int_equal(cJSON_GetObjectItem(r, "cycle")->valueint, 2);
	cJSON_Delete(r);
	r = fsbt_control_cmd(c, "CommitModifyBackup", "\"commitMsg\":\"first\"");
	assert_true(fsbt_ok(r));
	assert_int_equal(cJSON_GetObjectItem(r, "cycle")->valueint, 1);
	cJSON_Delete(r);
	j = journal_line(c, 1, 1);
	assert_non_null(j);
	assert_string_equal(fsbt_str(j, "resolved"), a);
	cJSON_Delete(j);
	assert_null(journal_line(c, 1, 2));
	j = journal_line(c, 2, 1);
	assert_non_null(j);
	assert_string_equal(fsbt_str(j, "resolved"), b);
	cJSON_Delete(j);
	fsbt_close(fd);
	fsbt_close(fd2);
	assert_int_equal(fsbt_core_stop(c2), 0);

	snprintf(log, sizeof(log), "%s/audit/%s.jsonl", c->state, c->session);
	argv[0] = (char *)fsbt_binary();
	argv[1] = "audit";
	argv[2] = "verify";
	argv[3] = log;
	argv[4] = NULL;
	status = fsbt_run(argv, &out);
	if (status != 0)
		fail_msg("audit verify: 0x%x\n%s", (unsigned)status, out ? out : "");
	free(out);
}

/*
 * A backup runs on the thread pool: while one client's grant waits for its
 * backup, another client's read, a control request and a third client's
 * small write are all answered. The backup is held up for certain, not by
 * size: the core runs with the fault shim, which holds its first
 * copy_file_range (the big file's backup copy) until the test lets go. A core
 * that backed up on its loop would answer nobody meanwhile, and the read
 * below would time out.
 */
static void a_backup_in_progress_does_not_hold_up_other_clients(void **state)
{
	/* A core of its own, with the fault shim: the fixture's has none. */
	struct fsbt_core *c = fsbt_core_new();
	char big[PATH_MAX + 16], small[PATH_MAX + 16], line[PATH_MAX + 256], reply[REPLY];
	char hold[PATH_MAX + 16];
	struct pollfd p;
	int a, b, w, got = -1;
	cJSON *r;

	(void)state;
	fsbt_core_start_holding(c, "copy_file_range:HOLD:1", hold, sizeof(hold));
	a = fsbt_connect(c);
	b = fsbt_connect(c);
	w = fsbt_connect(c);
	p = (struct pollfd){ .fd = a, .events = POLLIN };

	snprintf(big, sizeof(big), "%s/big.txt", c->ws);
	snprintf(small, sizeof(small), "%s/small.txt", c->ws);
	/* Over the 64 KiB a small file is read in: its copy is a copy_file_range. */
	fsbt_write_filled(big, 'w', 70000);
	fsbt_write_file(small, "small\n");

	fsbt_text_req(line, sizeof(line), FSBT_WRITE, big, c->session, FSBT_OPEN_WRITE);
	assert_int_equal(fsbt_send(a, line, strlen(line), -1), 0);
	/* The big file's copy is the one held, before anything else asks. */
	fsbt_core_wait_held(c);
	fsbt_text_req(line, sizeof(line), FSBT_READ, small, c->session, NULL);
	assert_true(fsbt_request(b, line, reply, REPLY, NULL) > 0);
	assert_string_equal(reply, "SANDBOX");
	r = fsbt_control_cmd(c, "Stats", NULL);
	assert_true(fsbt_ok(r));
	cJSON_Delete(r);
	fsbt_text_req(line, sizeof(line), FSBT_WRITE, small, c->session, FSBT_OPEN_WRITE);
	assert_true(fsbt_request(w, line, reply, REPLY, &got) > 0);
	assert_string_equal(reply, "FD");
	close(got);
	got = -1;
	/* The big grant is still waiting for its backup. */
	assert_int_equal(poll(&p, 1, 0), 0);

	/* Let go: the backup is taken, then the grant comes. */
	assert_int_equal(unlink(hold), 0);
	assert_true(fsbt_read_reply(a, reply, REPLY, &got) > 0);
	assert_string_equal(reply, "FD");
	assert_true(got >= 0);
	close(got);
	/* The small write was journaled first: it did not wait. */
	r = journal_line(c, 1, 1);
	assert_non_null(r);
	assert_string_equal(fsbt_str(r, "resolved"), small);
	cJSON_Delete(r);
	r = journal_line(c, 1, 2);
	assert_non_null(r);
	assert_string_equal(fsbt_str(r, "resolved"), big);
	assert_int_equal(strlen(fsbt_str(cJSON_GetObjectItem(r, "prior"), "object")), 64);
	cJSON_Delete(r);
	fsbt_close(a);
	fsbt_close(b);
	fsbt_close(w);
	assert_int_equal(fsbt_core_stop(c), 0);
}

/* One client of several at once: rewrites its existing files and creates
 * as many new ones, each through a write grant. */
struct writer {
	struct fsbt_core *c;
	int id;
	int failures;
};

enum { WRITERS = 4, FILES_EACH = 12 };

static void writer_path(const struct fsbt_core *c, int id, int i, bool fresh, char *out,
			size_t len)
{
	snprintf(out, len, "%s/%s-%d-%d.txt", c->ws, fresh ? "new" : "old", id, i);
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	char path[PATH_MAX + 32], line[PATH_MAX + 256], reply[REPLY];
	int fd = fsbt_connect(w->c);

	if (fd < 0) {
		w->failures++;
		return NULL;
	}
	for (int i = 0; i < 2 * FILES_EACH; i++) {
		int got = -1;

		writer_path(w->c, w->id, i / 2, i % 2, path, sizeof(path));
		fsbt_text_req(line, sizeof(line), FSBT_WRITE, path, w->c->session,
			      FSBT_OPEN_WRITE);
		if (fsbt_request(fd, line, reply, REPLY, &got) <= 0 || strcmp(reply, "FD") != 0 ||
		    got < 0 || write(got, "written\n", 8) != 8)
			w->failures++;
		if (got >= 0)
			close(got);
	}
	fsbt_close(fd);
	return NULL;
}

/*
 * Several clients write at once: their backups run side by side on the
 * pool and share the journal's syncs. After the commit every change is in
 * the sealed cycle's journal, once: each existing file with its original
 * content in an object, each new one as absent.
 */
static void concurrent_writers_all_have_their_lines_after_commit(void **state)
{
	struct fsbt_core *c = *state;
	struct writer w[WRITERS];
	pthread_t tid[WRITERS];
	char path[PATH_MAX + 32], dir[PATH_MAX], jpath[PATH_MAX * 2];
	char *text, *line, *save = NULL;
	int seen[WRITERS][2 * FILES_EACH] = { { 0 } }, lines = 0;
	cJSON *r;

	for (int id = 0; id < WRITERS; id++)
		for (int i = 0; i < FILES_EACH; i++) {
			char body[64];

			writer_path(c, id, i, false, path, sizeof(path));
			snprintf(body, sizeof(body), "original %d %d\n", id, i);
			fsbt_write_file(path, body);
		}
	for (int id = 0; id < WRITERS; id++) {
		w[id] = (struct writer){ c, id, 0 };
		assert_int_equal(pthread_create(&tid[id], NULL, writer_main, &w[id]), 0);
	}
	for (int id = 0; id < WRITERS; id++) {
		pthread_join(tid[id], NULL);
		assert_int_equal(w[id].failures, 0);
	}
	r = fsbt_control_cmd(c, "CommitModifyBackup", "\"commitMsg\":\"side by side\"");
	assert_true(fsbt_ok(r));
	assert_int_equal((int)fsbt_num(r, "cycle"), 1);
	cJSON_Delete(r);

	store_dir(c, dir, sizeof(dir));
	snprintf(jpath, sizeof(jpath), "%s/cycles/1/journal.jsonl", dir);
	text = fsbt_read_file(jpath, NULL);
	assert_non_null(text);
	for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		cJSON *j = cJSON_Parse(line), *prior;
		bool matched = false;

		assert_non_null(j);
		/* The writers' directory, before their first create in it. */
		if (strcmp(fsbt_str(j, "op"), "entries") == 0) {
			cJSON_Delete(j);
			continue;
		}
		lines++;
		prior = cJSON_GetObjectItem(j, "prior");
		for (int id = 0; id < WRITERS && !matched; id++)
			for (int i = 0; i < 2 * FILES_EACH && !matched; i++) {
				writer_path(c, id, i / 2, i % 2, path, sizeof(path));
				if (strcmp(fsbt_str(j, "resolved"), path) != 0)
					continue;
				matched = true;
				seen[id][i]++;
				if (i % 2) {
					assert_false(cJSON_IsTrue(cJSON_GetObjectItem(prior,
										      "exists")));
				} else {
					char body[64], *saved;

					snprintf(body, sizeof(body), "original %d %d\n", id, i / 2);
					saved = object_content(c, fsbt_str(prior, "object"));
					assert_non_null(saved);
					assert_string_equal(saved, body);
					free(saved);
				}
			}
		if (!matched)
			fail_msg("a journal line for a path no writer changed: %s", line);
		cJSON_Delete(j);
	}
	free(text);
	assert_int_equal(lines, WRITERS * 2 * FILES_EACH);
	for (int id = 0; id < WRITERS; id++)
		for (int i = 0; i < 2 * FILES_EACH; i++)
			assert_int_equal(seen[id][i], 1);
}

/*
 * A writable fd that outlives its turn: the file is backed up again into
 * the next cycle when the first is sealed, so that a write through the old
 * fd in the next turn is undone by restoring that turn. A file whose fd was
 * closed before the commit is not carried over.
 */
static void file_held_open_for_writing_is_backed_up_into_the_next_cycle(void **state)
{
	struct fsbt_core *c = *state;
	char held[PATH_MAX + 16], closed[PATH_MAX + 16], reply[REPLY], *out = NULL, *now;
	int fd = fsbt_connect(c), kept = -1, got = -1, status;
	cJSON *r, *j;

	snprintf(held, sizeof(held), "%s/held.txt", c->ws);
	snprintf(closed, sizeof(closed), "%s/closed.txt", c->ws);
	fsbt_write_file(held, "before turn 1\n");
	fsbt_write_file(closed, "closed\n");
	grant(c, fd, held, FSBT_OPEN_WRITE, reply, &kept);
	assert_string_equal(reply, "FD");
	assert_int_equal(write(kept, "end of turn 1\n", 14), 14);
	grant(c, fd, closed, FSBT_OPEN_WRITE, reply, &got);
	assert_string_equal(reply, "FD");
	close(got);
	r = fsbt_control_cmd(c, "CommitModifyBackup", "\"commitMsg\":\"turn 1\"");
	assert_int_equal((int)fsbt_num(r, "cycle"), 1);
	cJSON_Delete(r);

	/* Cycle 2 already holds held.txt as it was at the end of turn 1. */
	j = journal_line(c, 2, 1);
	assert_non_null(j);
	assert_string_equal(fsbt_str(j, "resolved"), held);
	assert_string_equal(fsbt_str(j, "op"), "held-open");
	now = object_content(c, fsbt_str(cJSON_GetObjectItem(j, "prior"), "object"));
	assert_non_null(now);
	assert_string_equal(now, "end of turn 1\n");
	free(now);
	cJSON_Delete(j);
	assert_null(journal_line(c, 2, 2));	/* closed.txt is not carried over */
	/* Turn 2 writes through the old fd, never asking; restoring turn 2
	 * undoes it. */
	assert_int_equal(write(kept, "written in turn 2\n", 18), 18);
	close(kept);
	r = fsbt_control_cmd(c, "CommitModifyBackup", "\"commitMsg\":\"turn 2\"");
	assert_int_equal((int)fsbt_num(r, "cycle"), 2);
	cJSON_Delete(r);
	status = fsbt_run((char *[]){ (char *)fsbt_binary(), "backup", "restore", "2",
				      "--state-dir", c->state, "--session", c->session, NULL },
			  &out);
	if (status != 0)
		fail_msg("restore 2 exited 0x%x:\n%s", (unsigned)status, out ? out : "");
	free(out);
	now = fsbt_read_file(held, NULL);
	assert_string_equal(now, "end of turn 1\n");
	free(now);
	{
		/* Not followed: a file the pack's backup.skip matches, though it
		 * is held open at the commit. */
		char scratch[PATH_MAX + 16];
		int s_fd = -1;

		snprintf(scratch, sizeof(scratch), "%s/scratch.log", c->tmp);
		fsbt_write_file(scratch, "scratch\n");
		grant(c, fd, scratch, FSBT_OPEN_WRITE, reply, &s_fd);
		assert_string_equal(reply, "FD");
		r = fsbt_control_cmd(c, "CommitModifyBackup", "\"commitMsg\":\"turn 3\"");
		assert_int_equal((int)fsbt_num(r, "cycle"), 3);
		cJSON_Delete(r);
		assert_null(journal_line(c, 4, 1));
		close(s_fd);
	}
	fsbt_close(fd);
}

/*
 * The pack's backup.quotaMB is kept at each commit: once the store holds
 * more, the oldest sealed cycles go (the turn just sealed always stays).
 * Three turns each back up a different 700 KiB file (that compression
 * does not shrink) under a 1 MiB quota.
 */
static void quota_removes_the_oldest_cycles_at_commit(void **state)
{
	struct fsbt_core *c = fsbt_core_new();
	char pack[PATH_MAX + 16], path[PATH_MAX + 16], dir[PATH_MAX], cyc[PATH_MAX * 2];
	char reply[REPLY], *data = malloc(700 << 10);
	struct stat st;
	int fd, got = -1;
	cJSON *r;

	(void)state;
	assert_non_null(data);
	snprintf(pack, sizeof(pack), "%s/quota.lua", c->rules_dir);
	fsbt_write_file(pack, "return { name = \"quota\", include = { \"default\" },\n"
			      "  backup = { quotaMB = 1 } }\n");
	snprintf(c->rules, sizeof(c->rules), "%s", pack);
	fsbt_core_start(c);
	fd = fsbt_connect(c);
	for (int turn = 1; turn <= 3; turn++) {
		uint32_t x = 2463534242u * (uint32_t)turn;

		/* Bytes that do not compress: the objects stay 700 KiB each. */
		for (int i = 0; i < (700 << 10) - 1; i++) {
			x ^= x << 13;
			x ^= x >> 17;
			x ^= x << 5;
			data[i] = (char)(1 + x % 255);
		}
		data[(700 << 10) - 1] = '\0';
		snprintf(path, sizeof(path), "%s/f%d.bin", c->ws, turn);
		fsbt_write_file(path, data);
		grant(c, fd, path, FSBT_OPEN_WRITE, reply, &got);
		assert_string_equal(reply, "FD");
		close(got);
		r = fsbt_control_cmd(c, "CommitModifyBackup", "\"commitMsg\":\"turn\"");
		assert_int_equal((int)fsbt_num(r, "cycle"), turn);
		cJSON_Delete(r);
	}
	store_dir(c, dir, sizeof(dir));
	/* 2.1 MiB of objects over a 1 MiB quota: only the newest stays. */
	snprintf(cyc, sizeof(cyc), "%s/cycles/1", dir);
	assert_int_equal(stat(cyc, &st), -1);
	snprintf(cyc, sizeof(cyc), "%s/cycles/2", dir);
	assert_int_equal(stat(cyc, &st), -1);
	snprintf(cyc, sizeof(cyc), "%s/cycles/3/journal.jsonl", dir);
	assert_int_equal(stat(cyc, &st), 0);
	free(data);
	fsbt_close(fd);
	fsbt_core_stop(c);
}

/* Bytes of the regular files under `dir` (the store's objects). */
static long long tree_bytes(const char *dir)
{
	char path[PATH_MAX * 2];
	struct dirent *de;
	long long n = 0;
	struct stat st;
	DIR *d = opendir(dir);

	if (d == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (lstat(path, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode))
			n += tree_bytes(path);
		else if (S_ISREG(st.st_mode))
			n += st.st_size;
	}
	closedir(d);
	return n;
}

static void op_ok(int fd, const struct fsbt_core *c, const char *fields, const char *path)
{
	cJSON *r = fsbt_hostopf(fd, "{\"id\":1,\"command\":\"HostFileOperation\",\"sessionId\":"
				"\"%s\",\"toolCallId\":\"meta-1\",%s,\"path\":\"%s\"}",
				c->session, fields, path);

	assert_non_null(r);
	if (!fsbt_ok(r))
		fail_msg("%s on %s failed: %s", fields, path, cJSON_PrintUnformatted(r));
	cJSON_Delete(r);
}

/*
 * chmod and touch change no byte: a turn that changes the mode and times
 * of many files adds no content to the store, and a restore still gives
 * every mode and mtime back (and the content, also of a file the same
 * turn deleted after its chmod: the delete keeps its bytes).
 */
static void chmod_and_touch_add_no_content_to_the_store(void **state)
{
	struct fsbt_core *c = *state;
	enum { N = 40 };
	char path[N][PATH_MAX + 16], dir[PATH_MAX], objects[PATH_MAX * 2], gone[PATH_MAX + 16];
	struct stat before[N], st;
	int fd = fsbt_connect(c), status;
	struct timespec old[2] = { { 1000000000, 123456789 }, { 1000000000, 987654321 } };
	char *out = NULL, *text;

	for (int i = 0; i < N; i++) {
		snprintf(path[i], sizeof(path[i]), "%s/m%02d.txt", c->ws, i);
		fsbt_write_file(path[i], "the same bytes before and after\n");
		assert_int_equal(chmod(path[i], 0644), 0);
		assert_int_equal(utimensat(AT_FDCWD, path[i], old, 0), 0);
		assert_int_equal(stat(path[i], &before[i]), 0);
	}
	snprintf(gone, sizeof(gone), "%s/chmod-then-delete.txt", c->ws);
	fsbt_write_file(gone, "kept by the delete\n");
	assert_int_equal(chmod(gone, 0640), 0);

	for (int i = 0; i < N; i++) {
		op_ok(fd, c, "\"operation\":\"chmod\",\"mode\":\"0600\"", path[i]);
		op_ok(fd, c, "\"operation\":\"touch\"", path[i]);
	}
	op_ok(fd, c, "\"operation\":\"chmod\",\"mode\":\"0600\"", gone);
	store_dir(c, dir, sizeof(dir));
	snprintf(objects, sizeof(objects), "%s/objects", dir);
	assert_int_equal(tree_bytes(objects), 0);
	op_ok(fd, c, "\"operation\":\"delete\",\"deleteMode\":\"unlink\"", gone);
	fsbt_close(fd);
	cJSON_Delete(fsbt_control_cmd(c, "CommitModifyBackup", "\"commitMsg\":\"chmod -R\""));

	status = fsbt_run((char *[]){ (char *)fsbt_binary(), "backup", "restore", "--last",
				      "--state-dir", c->state, "--session", c->session, NULL }, &out);
	if (status != 0)
		fprintf(stderr, "# restore said:\n%s", out);
	assert_int_equal(status, 0);
	free(out);
	for (int i = 0; i < N; i++) {
		assert_int_equal(stat(path[i], &st), 0);
		assert_int_equal(st.st_mode & 07777, 0644);
		assert_int_equal(st.st_ino, before[i].st_ino);	/* put back in place */
		assert_int_equal(st.st_mtim.tv_sec, before[i].st_mtim.tv_sec);
		assert_int_equal(st.st_mtim.tv_nsec, before[i].st_mtim.tv_nsec);
		text = fsbt_read_file(path[i], NULL);
		assert_string_equal(text, "the same bytes before and after\n");
		free(text);
	}
	assert_int_equal(stat(gone, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	text = fsbt_read_file(gone, NULL);
	assert_string_equal(text, "kept by the delete\n");
	free(text);
}


int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fsbt_setup_core, fsbt_teardown_core)
	const struct CMUnitTest tests[] = {
		T(write_grant_saves_the_file_before_truncating_it),
		T(creating_a_new_file_is_journaled_as_absent_before),
		T(too_large_file_waits_for_approval_and_is_left_untouched),
		T(disabled_backup_takes_no_copy),
		T(commit_seals_the_cycle_with_the_audit_head),
		T(host_modify_backup_saves_the_file),
		T(cycle_left_open_by_a_crash_is_sealed_as_recovered),
		T(restore_after_a_turn_puts_the_workspace_back),
		T(chmod_and_touch_add_no_content_to_the_store),
		T(files_created_outside_a_grant_are_journaled_as_absent),
		T(second_core_on_the_same_session_is_not_refused),
		T(a_backup_in_progress_does_not_hold_up_other_clients),
		T(concurrent_writers_all_have_their_lines_after_commit),
		T(file_held_open_for_writing_is_backed_up_into_the_next_cycle),
		cmocka_unit_test(quota_removes_the_oldest_cycles_at_commit),
	};

	return fsbt_run_group(tests, NULL, NULL);
}
