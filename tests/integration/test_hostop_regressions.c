/*
 * test_hostop_regressions.c — host operations, one test per defect a
 * review found: each failed before its fix.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static void path_in(char *out, size_t size, const char *dir, const char *name)
{
	snprintf(out, size, "%s/%s", dir, name);
}

/* One host operation on a fresh connection; the reply (never NULL). */
static cJSON *__attribute__((format(printf, 2, 3)))
op(const struct fsbt_core *c, const char *fmt, ...)
{
	char *inner = NULL, *line = NULL;
	int fd = fsbt_connect(c);
	va_list ap;
	cJSON *r;

	assert_true(fd >= 0);
	va_start(ap, fmt);
	assert_true(vasprintf(&inner, fmt, ap) > 0);
	va_end(ap);
	assert_true(asprintf(&line, "{\"command\":\"HostFileOperation\",\"sessionId\":\"%s\",%s}",
			     c->session, inner) > 0);
	r = fsbt_hostop(fd, line);
	if (r == NULL)
		fail_msg("no reply to %s", line);
	free(inner);
	free(line);
	fsbt_close(fd);
	return r;
}

static void commit_and_restore(struct fsbt_core *c, int want_status)
{
	char *out = NULL;
	cJSON *r = fsbt_control_cmd(c, "CommitModifyBackup", "\"commitMsg\":\"turn\"");
	int status;

	assert_true(fsbt_ok(r));
	cJSON_Delete(r);
	status = fsbt_run((char *[]){ (char *)fsbt_binary(), "backup", "restore", "--last",
				      "--state-dir", c->state, "--session", c->session, NULL },
			  &out);
	if (status != want_status)
		fail_msg("restore exited 0x%x, expected %d:\n%s", (unsigned)status, want_status,
			 out ? out : "");
	free(out);
}

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/*
 * A file under the pack's backup.skip (${tmp}) trashed, then the turn
 * restored: restore cannot bring it back from the store, so it must not
 * take it out of the trash either — the trash holds the only copy. The pack
 * chose no backup there, so leaving it is no failure (exit 0, "left").
 */
static void restore_keeps_the_only_copy_of_a_trashed_file_without_backup(void **state)
{
	struct fsbt_core *c = *state;
	char f[PATH_MAX + 16], trashed[PATH_MAX];
	cJSON *r;

	path_in(f, sizeof(f), c->tmp, "keep.txt");
	fsbt_write_file(f, "only copy\n");
	r = op(c, "\"operation\":\"delete\",\"path\":\"%s\"", f);
	assert_true(fsbt_ok(r));
	snprintf(trashed, sizeof(trashed), "%s", fsbt_str(r, "trashedTo"));
	cJSON_Delete(r);
	assert_true(exists(trashed));
	/* Nothing it can restore: it leaves it, and removes nothing. */
	commit_and_restore(c, 0);
	assert_true(exists(trashed));
}

/* The same for a directory renamed under ${tmp}: its file stays at the new name. */
static void restore_keeps_a_moved_file_without_backup_where_it_went(void **state)
{
	struct fsbt_core *c = *state;
	char d[PATH_MAX + 16], e[PATH_MAX + 16], f[PATH_MAX + 32], moved[PATH_MAX + 32];
	cJSON *r;

	path_in(d, sizeof(d), c->tmp, "d");
	path_in(e, sizeof(e), c->tmp, "e");
	assert_int_equal(mkdir(d, 0755), 0);
	path_in(f, sizeof(f), d, "data");
	fsbt_write_file(f, "data\n");
	r = op(c, "\"operation\":\"rename\",\"from\":\"%s\",\"to\":\"%s\"", d, e);
	assert_true(fsbt_ok(r));
	cJSON_Delete(r);
	commit_and_restore(c, 1 << 8);
	path_in(moved, sizeof(moved), e, "data");
	assert_true(exists(moved) || exists(f));
}

/*
 * Entries that each need approval: approving each block once in turn and
 * sending the same request again gets through. Each retry used to use up
 * the earlier approvals and ask again, for ever.
 */
static void approving_each_entry_once_lets_a_recursive_delete_through(void **state)
{
	struct fsbt_core *c = *state;
	char d[PATH_MAX + 16], f[PATH_MAX + 32];
	int rounds = 0;
	cJSON *r;

	path_in(d, sizeof(d), c->home, "proj");
	assert_int_equal(mkdir(d, 0755), 0);
	path_in(f, sizeof(f), d, "s");
	fsbt_write_file(f, "s\n");
	path_in(f, sizeof(f), d, "t");
	fsbt_write_file(f, "t\n");
	for (;;) {
		r = op(c, "\"operation\":\"delete\",\"path\":\"%s\",\"recursive\":true,"
		       "\"deleteMode\":\"unlink\"", d);
		if (fsbt_ok(r)) {
			cJSON_Delete(r);
			break;
		}
		assert_string_equal(fsbt_str(r, "errno"), "EACCES");
		assert_true(fsbt_str(r, "blockId")[0] != '\0');
		if (++rounds > 3)
			fail_msg("still asking after approving %d blocks (three paths)", rounds);
		cJSON_Delete(fsbt_control_cmd(c, "Approve", "\"blockId\":\"%s\",\"scope\":\"once\"",
					      fsbt_str(r, "blockId")));
		cJSON_Delete(r);
	}
	assert_int_equal(rounds, 3);
	assert_false(exists(d));
}

/* mkdir -p through a symlink whose target is missing: refused, and the
 * symlink survives a restore (it was journaled as absent, and removed). */
static void mkdir_parents_through_a_dangling_symlink_leaves_it_alone(void **state)
{
	struct fsbt_core *c = *state;
	char l[PATH_MAX + 16], x[PATH_MAX + 32], other[PATH_MAX + 16];
	cJSON *r;

	path_in(l, sizeof(l), c->ws, "dang");
	assert_int_equal(symlink("missing-target", l), 0);
	snprintf(x, sizeof(x), "%s/x", l);
	r = op(c, "\"operation\":\"mkdir\",\"path\":\"%s\",\"recursive\":true", x);
	assert_false(fsbt_ok(r));
	assert_string_equal(fsbt_str(r, "errno"), "EEXIST");
	cJSON_Delete(r);
	/* Something else, so that the turn has a cycle. */
	path_in(other, sizeof(other), c->ws, "other");
	r = op(c, "\"operation\":\"touch\",\"path\":\"%s\"", other);
	assert_true(fsbt_ok(r));
	cJSON_Delete(r);
	commit_and_restore(c, 0);
	assert_true(exists(l));
	assert_false(exists(other));
}

/* A recursive delete of a tree with a mount inside: refused before
 * anything is removed, the mounted files untouched. */
static void recursive_delete_does_not_cross_a_mount_point(void **state)
{
	struct fsbt_core *c = *state;
	char d[PATH_MAX + 16], m[PATH_MAX + 32], keep[PATH_MAX + 48], mine[PATH_MAX + 32];
	cJSON *r;

	path_in(d, sizeof(d), c->ws, "d");
	assert_int_equal(mkdir(d, 0755), 0);
	path_in(mine, sizeof(mine), d, "mine");
	fsbt_write_file(mine, "mine\n");
	path_in(m, sizeof(m), d, "m");
	assert_int_equal(mkdir(m, 0755), 0);
	if (mount("fsbt", m, "tmpfs", 0, "size=64k") < 0) {
		fsbt_skip("cannot mount a tmpfs on %s: %s", m, strerror(errno));
		return;
	}
	path_in(keep, sizeof(keep), m, "keep");
	fsbt_write_file(keep, "keep\n");
	r = op(c, "\"operation\":\"delete\",\"path\":\"%s\",\"recursive\":true,"
	       "\"deleteMode\":\"unlink\"", d);
	assert_false(fsbt_ok(r));
	assert_string_equal(fsbt_str(r, "errno"), "EBUSY");
	cJSON_Delete(r);
	assert_true(exists(keep));
	assert_true(exists(mine));
	assert_int_equal(umount2(m, MNT_DETACH), 0);
}

/* An entry in Trash/files without its .trashinfo, of the name a delete
 * would take: passed over, and a restore does not remove it. */
static void restore_leaves_an_older_trash_entry_of_the_same_name(void **state)
{
	struct fsbt_core *c = *state;
	char files[PATH_MAX + 64], orphan[PATH_MAX + 80], f[PATH_MAX + 16];
	cJSON *r;

	static const char *const levels[] = { ".local", ".local/share", ".local/share/Trash",
					      ".local/share/Trash/files" };

	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		snprintf(files, sizeof(files), "%s/%s", c->home, levels[i]);
		assert_true(mkdir(files, 0700) == 0 || errno == EEXIST);
	}
	path_in(orphan, sizeof(orphan), files, "a");
	fsbt_write_file(orphan, "older\n");
	path_in(f, sizeof(f), c->ws, "a");
	fsbt_write_file(f, "mine\n");
	r = op(c, "\"operation\":\"delete\",\"path\":\"%s\"", f);
	assert_true(fsbt_ok(r));
	assert_string_not_equal(fsbt_str(r, "trashedTo"), orphan);
	cJSON_Delete(r);
	commit_and_restore(c, 0);
	assert_true(exists(orphan));
	assert_true(exists(f));
}

/* The audit lines of a successful mkdir -p carry no errno. */
static void successful_mkdir_parents_is_audited_without_an_errno(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX + 16], log[PATH_MAX + 64];
	char *text, *line, *save = NULL;
	int seen = 0;
	cJSON *r;

	snprintf(p, sizeof(p), "%s/p/q/r", c->ws);
	r = op(c, "\"operation\":\"mkdir\",\"path\":\"%s\",\"recursive\":true", p);
	assert_true(fsbt_ok(r));
	cJSON_Delete(r);
	snprintf(log, sizeof(log), "%s/audit/%s.jsonl", c->state, c->session);
	text = fsbt_read_file(log, NULL);
	assert_non_null(text);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		cJSON *o = cJSON_Parse(line);

		if (o != NULL && strcmp(fsbt_str(o, "hostOp"), "mkdir") == 0) {
			seen++;
			if (cJSON_HasObjectItem(o, "errno"))
				fail_msg("audit line of a successful mkdir has an errno: %s", line);
		}
		cJSON_Delete(o);
	}
	free(text);
	assert_int_equal(seen, 2);	/* planned, done */
}

/* Two names of one inode: rename(2) changes nothing, and says so. */
static void rename_between_two_names_of_one_file_changes_nothing(void **state)
{
	struct fsbt_core *c = *state;
	char a[PATH_MAX + 16], b[PATH_MAX + 16];
	cJSON *r;

	path_in(a, sizeof(a), c->ws, "a");
	path_in(b, sizeof(b), c->ws, "b");
	fsbt_write_file(a, "one\n");
	assert_int_equal(link(a, b), 0);
	r = op(c, "\"operation\":\"rename\",\"from\":\"%s\",\"to\":\"%s\"", a, b);
	assert_true(fsbt_ok(r));
	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(r, "changed")));
	cJSON_Delete(r);
	assert_true(exists(a));
	assert_true(exists(b));
}

/*
 * A host operation runs alone: one that would rename a directory waits while
 * a write grant in it is still being served, and runs after it. The grant is
 * held up for certain: the core runs with the fault shim, which holds its
 * first copy_file_range (the grant's backup copy) until the test lets go.
 */
static void host_operation_waits_for_a_write_in_progress(void **state)
{
	/* A core of its own, with the fault shim: the fixture's has none. */
	struct fsbt_core *c = fsbt_core_new();
	char d[PATH_MAX + 16], e[PATH_MAX + 16], f[PATH_MAX + 32], hold[PATH_MAX + 16];
	char line[PATH_MAX * 2], reply[4096];
	struct pollfd p[2];
	int w, h, got = -1;
	cJSON *r;

	(void)state;
	fsbt_core_start_holding(c, "copy_file_range:HOLD:1", hold, sizeof(hold));
	w = fsbt_connect(c);
	h = fsbt_connect(c);
	p[0] = (struct pollfd){ .fd = w, .events = POLLIN };
	p[1] = (struct pollfd){ .fd = h, .events = POLLIN };
	path_in(d, sizeof(d), c->ws, "d");
	path_in(e, sizeof(e), c->ws, "e");
	assert_int_equal(mkdir(d, 0755), 0);
	path_in(f, sizeof(f), d, "f");
	/* Over the 64 KiB a small file is read in: its copy is a copy_file_range. */
	fsbt_write_filled(f, 'h', 70000);
	fsbt_text_req(line, sizeof(line), FSBT_WRITE, f, c->session, FSBT_OPEN_WRITE);
	assert_int_equal(fsbt_send(w, line, strlen(line), -1), 0);
	fsbt_core_wait_held(c);	/* the grant's copy is the one held */
	snprintf(line, sizeof(line), "{\"command\":\"HostFileOperation\",\"sessionId\":\"%s\","
		 "\"operation\":\"rename\",\"from\":\"%s\",\"to\":\"%s\"}", c->session, d, e);
	assert_int_equal(fsbt_send(h, line, strlen(line), -1), 0);
	fsbt_sleep_ms(200);
	/* The write waits in its backup, and the rename on the write. */
	assert_int_equal(poll(p, 2, 0), 0);
	assert_true(exists(d));
	assert_int_equal(unlink(hold), 0);
	assert_true(fsbt_read_reply(w, reply, sizeof(reply), &got) > 0);
	assert_string_equal(reply, "FD");
	close(got);
	assert_true(fsbt_read_reply(h, reply, sizeof(reply), NULL) > 0);
	r = cJSON_Parse(reply);
	assert_true(fsbt_ok(r));
	cJSON_Delete(r);
	assert_false(exists(d));
	assert_true(exists(e));
	fsbt_close(w);
	fsbt_close(h);
	assert_int_equal(fsbt_core_stop(c), 0);
}

/* Two files of a tree over the size limit: approving each block once lets
 * the delete through; the first approval is not used up by the attempt
 * that stopped at the second file. To the trash, where the files live on,
 * so they are copied (a delete that unlinks keeps them by link and never
 * meets the limit). */
static void each_too_large_file_is_approved_once(void **state)
{
	struct fsbt_core *c = *state;
	char d[PATH_MAX + 16], f[PATH_MAX + 32];
	static char big[2 << 20];
	int rounds = 0;
	cJSON *r;

	memset(big, 'b', sizeof(big) - 1);
	path_in(d, sizeof(d), c->ws, "bigs");
	assert_int_equal(mkdir(d, 0755), 0);
	path_in(f, sizeof(f), d, "a");
	fsbt_write_file(f, big);
	path_in(f, sizeof(f), d, "b");
	fsbt_write_file(f, big);
	r = fsbt_control_cmd(c, "EnableModifyBackup", "\"enabled\":true,\"fileBackupMaxSizeMB\":1");
	assert_true(fsbt_ok(r));
	cJSON_Delete(r);
	for (;;) {
		r = op(c, "\"operation\":\"delete\",\"path\":\"%s\",\"recursive\":true,"
		       "\"deleteMode\":\"trash\"", d);
		if (fsbt_ok(r)) {
			cJSON_Delete(r);
			break;
		}
		if (rounds == 0 && strcmp(fsbt_str(r, "errno"), "EACCES") != 0) {
			cJSON_Delete(r);
			fsbt_skip("the workspace's filesystem makes reflinks: no size limit applies");
			return;
		}
		assert_string_equal(fsbt_str(r, "rule"), "backup.onTooLarge ask");
		if (++rounds > 2)
			fail_msg("still asking after %d approvals for two files", rounds);
		cJSON_Delete(fsbt_control_cmd(c, "Approve", "\"blockId\":\"%s\"",
					      fsbt_str(r, "blockId")));
		cJSON_Delete(r);
	}
	assert_int_equal(rounds, 2);
	assert_false(exists(d));
}

/*
 * `rm q/` on a file is ENOTDIR in the kernel; a host delete of "q/" (the
 * client library keeps the slash) removed the file. So did a rename.
 */
static void a_file_named_with_a_trailing_slash_is_not_a_directory(void **state)
{
	struct fsbt_core *c = *state;
	char f[PATH_MAX + 16], to[PATH_MAX + 16];
	cJSON *r;

	path_in(f, sizeof(f), c->ws, "q");
	path_in(to, sizeof(to), c->ws, "r");
	fsbt_write_file(f, "a file\n");
	r = op(c, "\"operation\":\"delete\",\"path\":\"%s/\"", f);
	assert_false(fsbt_ok(r));
	assert_string_equal(fsbt_str(r, "errno"), "ENOTDIR");
	cJSON_Delete(r);
	r = op(c, "\"operation\":\"rename\",\"from\":\"%s/\",\"to\":\"%s\"", f, to);
	assert_false(fsbt_ok(r));
	assert_string_equal(fsbt_str(r, "errno"), "ENOTDIR");
	cJSON_Delete(r);
	assert_true(exists(f));
	assert_false(exists(to));
}

/* The pack's delete.mode was never read: a delete without deleteMode trashed. */
static void a_delete_without_delete_mode_follows_the_pack(void **state)
{
	struct fsbt_core *c = fsbt_core_new();
	char pack[PATH_MAX + 16], f[PATH_MAX + 16], trash[PATH_MAX + 64];
	cJSON *r;

	(void)state;
	snprintf(pack, sizeof(pack), "%s/unlink.lua", c->rules_dir);
	fsbt_write_file(pack, "return { name = \"unlink\", include = { \"default\" },\n"
			      "  delete = { mode = \"unlink\" } }\n");
	snprintf(c->rules, sizeof(c->rules), "%s", pack);
	fsbt_core_start(c);
	path_in(f, sizeof(f), c->ws, "gone.txt");
	fsbt_write_file(f, "bytes\n");
	r = op(c, "\"operation\":\"delete\",\"path\":\"%s\"", f);
	assert_true(fsbt_ok(r));
	assert_null(cJSON_GetObjectItemCaseSensitive(r, "trashedTo"));
	cJSON_Delete(r);
	assert_false(exists(f));
	snprintf(trash, sizeof(trash), "%s/.local/share/Trash/files/gone.txt", c->home);
	assert_false(exists(trash));
	/* An explicit deleteMode still wins. */
	fsbt_write_file(f, "bytes\n");
	r = op(c, "\"operation\":\"delete\",\"path\":\"%s\",\"deleteMode\":\"trash\"", f);
	assert_true(fsbt_ok(r));
	assert_non_null(cJSON_GetObjectItemCaseSensitive(r, "trashedTo"));
	cJSON_Delete(r);
	assert_int_equal(fsbt_core_stop(c), 0);
}

/* `mkdir .` was EINVAL (the resolver has no last name to make); the kernel
 * says EEXIST, and tar, extracting a "./" member, stops at anything else. */
static void mkdir_of_dot_or_dotdot_is_eexist(void **state)
{
	struct fsbt_core *c = *state;
	cJSON *r;

	r = op(c, "\"operation\":\"mkdir\",\"path\":\"%s/.\"", c->ws);
	assert_false(fsbt_ok(r));
	assert_string_equal(fsbt_str(r, "errno"), "EEXIST");
	cJSON_Delete(r);
	r = op(c, "\"operation\":\"mkdir\",\"path\":\"%s/sub/..\"", c->ws);
	assert_false(fsbt_ok(r));
	/* "sub" does not exist: the kernel walks it first, ENOENT. */
	assert_string_equal(fsbt_str(r, "errno"), "ENOENT");
	cJSON_Delete(r);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fsbt_setup_core, fsbt_teardown_core)
	const struct CMUnitTest tests[] = {
		T(restore_keeps_the_only_copy_of_a_trashed_file_without_backup),
		T(restore_keeps_a_moved_file_without_backup_where_it_went),
		T(approving_each_entry_once_lets_a_recursive_delete_through),
		T(mkdir_parents_through_a_dangling_symlink_leaves_it_alone),
		T(recursive_delete_does_not_cross_a_mount_point),
		T(restore_leaves_an_older_trash_entry_of_the_same_name),
		T(successful_mkdir_parents_is_audited_without_an_errno),
		T(rename_between_two_names_of_one_file_changes_nothing),
		T(host_operation_waits_for_a_write_in_progress),
		T(each_too_large_file_is_approved_once),
		T(a_file_named_with_a_trailing_slash_is_not_a_directory),
		T(mkdir_of_dot_or_dotdot_is_eexist),
		cmocka_unit_test(a_delete_without_delete_mode_follows_the_pack),
	};

	return fsbt_run_group(tests, NULL, NULL);
}
