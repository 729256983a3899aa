/*
 * test_serve_hostops.c — the seven JSON host operations (delete, mkdir,
 * rename, copy, chmod, link, touch) through the real core, each with its
 * options and its errors as docs/protocol.md describes them: what changes on
 * disk, what the reply says, that a refusal changes nothing, and that
 * `fsbroker backup restore` puts back what the operations changed.
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The umask the tests set before the core starts: the core inherits it. */
#define UMASK 022

/* ------------------------------------------------------------------------ */
/* Helpers. */

static char *path_in(char *out, size_t size, const char *dir, const char *name)
{
	snprintf(out, size, "%s/%s", dir, name);
	return out;
}

/* A connection per test, opened on first use and closed by the teardown. */
static int conn_fd = -1;
static long req_id;

static int conn(const struct fsbt_core *c)
{
	if (conn_fd < 0)
		conn_fd = fsbt_connect(c);
	assert_true(conn_fd >= 0);
	return conn_fd;
}

/*
 * Send a HostFileOperation whose other fields are `fields` (the inside of a
 * JSON object) and return the reply; fails the test when none comes or it
 * does not carry the request's id.
 */
static cJSON *__attribute__((format(printf, 2, 3)))
hostop(const struct fsbt_core *c, const char *fields, ...)
{
	char *inner = NULL, *line = NULL;
	va_list ap;
	cJSON *r;
	long id = ++req_id;

	va_start(ap, fields);
	assert_true(vasprintf(&inner, fields, ap) > 0);
	va_end(ap);
	assert_true(asprintf(&line, "{\"id\":%ld,\"command\":\"HostFileOperation\","
				    "\"sessionId\":\"%s\",\"toolCallId\":\"%s\",%s}",
			     id, c->session, FSBT_TOOL_CALL, inner) > 0);
	free(inner);
	r = fsbt_hostop(conn(c), line);
	if (r == NULL)
		fail_msg("no reply to %s", line);
	if ((long)fsbt_num(r, "id") != id)
		fail_msg("the reply to %s does not carry its id", line);
	if (getenv("FSBT_VERBOSE") != NULL) {
		char *s = cJSON_PrintUnformatted(r);

		fprintf(stderr, "# -> %s\n# <- %s\n", line, s);
		free(s);
	}
	free(line);
	return r;
}

/* hostop() under another tool call of the same session. */
static cJSON *__attribute__((format(printf, 3, 4)))
hostop_tc(const struct fsbt_core *c, const char *tool_call, const char *fields, ...)
{
	char *inner = NULL, *line = NULL;
	va_list ap;
	cJSON *r;

	va_start(ap, fields);
	assert_true(vasprintf(&inner, fields, ap) > 0);
	va_end(ap);
	assert_true(asprintf(&line, "{\"command\":\"HostFileOperation\",\"sessionId\":\"%s\","
				    "\"toolCallId\":\"%s\",%s}",
			     c->session, tool_call, inner) > 0);
	free(inner);
	r = fsbt_hostop(conn(c), line);
	if (r == NULL)
		fail_msg("no reply to %s", line);
	free(line);
	return r;
}

static void expect_ok_at(cJSON *r, bool changed, int line)
{
	const cJSON *ch = cJSON_GetObjectItemCaseSensitive(r, "changed");
	char *s;

	if (fsbt_ok(r) && strcmp(fsbt_str(r, "decision"), "host-op") == 0 && cJSON_IsBool(ch) &&
	    cJSON_IsTrue(ch) == changed)
		return;
	s = cJSON_PrintUnformatted(r);
	fail_msg("line %d: expected ok:true, decision:\"host-op\", changed:%s; got %s", line,
		 changed ? "true" : "false", s);
}

/* A failure of the operation itself (not the policy): ok:false and `err`. */
static void expect_errno_at(cJSON *r, const char *err, int line)
{
	char *s;

	if (!fsbt_ok(r) && cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(r, "ok")) &&
	    strcmp(fsbt_str(r, "errno"), err) == 0 && fsbt_str(r, "error")[0] != '\0')
		return;
	s = cJSON_PrintUnformatted(r);
	fail_msg("line %d: expected ok:false, errno:\"%s\" with an error sentence; got %s", line,
		 err, s);
}

/* A refusal by the policy: EACCES, decision deny, the rule named. */
static void expect_denied_at(cJSON *r, int line)
{
	char *s;

	if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(r, "ok")) &&
	    strcmp(fsbt_str(r, "errno"), "EACCES") == 0 &&
	    strcmp(fsbt_str(r, "decision"), "deny") == 0 && fsbt_str(r, "rule")[0] != '\0')
		return;
	s = cJSON_PrintUnformatted(r);
	fail_msg("line %d: expected a policy refusal (ok:false, errno:\"EACCES\", decision:"
		 "\"deny\", a rule); got %s",
		 line, s);
}

#define expect_ok(r, changed) expect_ok_at((r), (changed), __LINE__)
#define expect_errno(r, err) expect_errno_at((r), (err), __LINE__)
#define expect_denied(r) expect_denied_at((r), __LINE__)

/* Replies are checked and dropped at once. */
#define OK(c, ...)                                        \
	do {                                              \
		cJSON *r_ = hostop((c), __VA_ARGS__);     \
		expect_ok(r_, true);                      \
		cJSON_Delete(r_);                         \
	} while (0)
#define FAILS(c, err, ...)                                \
	do {                                              \
		cJSON *r_ = hostop((c), __VA_ARGS__);     \
		expect_errno(r_, (err));                  \
		cJSON_Delete(r_);                         \
	} while (0)
#define DENIED(c, ...)                                    \
	do {                                              \
		cJSON *r_ = hostop((c), __VA_ARGS__);     \
		expect_denied(r_);                        \
		cJSON_Delete(r_);                         \
	} while (0)

static void write_mode(const char *path, const char *data, mode_t mode)
{
	fsbt_write_file(path, data);
	assert_int_equal(chmod(path, mode), 0);
}

static void mkdir_ok(const char *path)
{
	if (mkdir(path, 0755) < 0)
		fail_msg("mkdir %s: %s", path, strerror(errno));
}

static void assert_content(const char *path, const char *want)
{
	char *got = fsbt_read_file(path, NULL);

	if (got == NULL)
		fail_msg("%s: cannot read it: %s", path, strerror(errno));
	if (strcmp(got, want) != 0)
		fail_msg("%s holds '%s', expected '%s'", path, got, want);
	free(got);
}

static void assert_absent(const char *path)
{
	struct stat st;

	if (lstat(path, &st) == 0)
		fail_msg("%s exists, expected it absent", path);
	assert_int_equal(errno, ENOENT);
}

static mode_t lmode(const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		fail_msg("%s: %s", path, strerror(errno));
	return st.st_mode;
}

static void set_mtime(const char *path, time_t sec, long nsec)
{
	struct timespec ts[2] = { { sec, nsec }, { sec, nsec } };

	assert_int_equal(utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW), 0);
}

static void trash_dir(const struct fsbt_core *c, char *out, size_t size, const char *sub)
{
	snprintf(out, size, "%s/.local/share/Trash/%s", c->home, sub);
}

static void commit(struct fsbt_core *c)
{
	cJSON *r = fsbt_control_cmd(c, "CommitModifyBackup", "\"commitMsg\":\"host ops\"");

	if (!fsbt_ok(r) || fsbt_num(r, "cycle") < 1) {
		char *s = cJSON_PrintUnformatted(r);

		fail_msg("CommitModifyBackup sealed no cycle: %s", s);
	}
	cJSON_Delete(r);
}

/* `fsbroker backup restore --last` on the core's store; its exit status. */
static int restore_last(const struct fsbt_core *c)
{
	char *out = NULL;
	int status;

	status = fsbt_run((char *[]){ (char *)fsbt_binary(), "backup", "restore", "--last",
				      "--state-dir", (char *)c->state, "--session",
				      (char *)c->session, NULL },
			  &out);
	if (status != 0 || getenv("FSBT_VERBOSE") != NULL)
		fprintf(stderr, "# restore exited 0x%x:\n%s", (unsigned)status, out ? out : "");
	free(out);
	return status;
}

static int setup(void **state)
{
	conn_fd = -1;
	return fsbt_setup_core(state);
}

static int teardown(void **state)
{
	if (conn_fd >= 0)
		fsbt_close(conn_fd);
	conn_fd = -1;
	return fsbt_teardown_core(state);
}

/* ------------------------------------------------------------------------ */
/* delete */

/* "YYYY-MM-DDThh:mm:ss", local time, within a minute of now. */
static void assert_deletion_date(const char *v)
{
	struct tm tm = { .tm_isdst = -1 };
	const char *end;
	time_t t;

	if (strlen(v) != 19)
		fail_msg("DeletionDate=%s is not YYYY-MM-DDThh:mm:ss", v);
	end = strptime(v, "%Y-%m-%dT%H:%M:%S", &tm);
	if (end == NULL || *end != '\0')
		fail_msg("DeletionDate=%s is not YYYY-MM-DDThh:mm:ss", v);
	t = mktime(&tm);
	if (labs((long)(t - time(NULL))) > 60)
		fail_msg("DeletionDate=%s is not the local time of now", v);
}

/* The .trashinfo of `name`: "[Trash Info]", Path=`want_path`, a DeletionDate. */
static void assert_trashinfo(const char *info, const char *want_path)
{
	char *text = fsbt_read_file(info, NULL), *save = NULL, *line;
	bool path = false, date = false;
	int n = 0;

	if (text == NULL)
		fail_msg("no trashinfo %s", info);
	for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		if (n++ == 0 && strcmp(line, "[Trash Info]") != 0)
			fail_msg("%s: first line '%s', expected [Trash Info]", info, line);
		if (fsbt_starts(line, "Path=")) {
			if (strcmp(line + 5, want_path) != 0)
				fail_msg("%s: Path=%s, expected Path=%s", info, line + 5,
					 want_path);
			path = true;
		} else if (fsbt_starts(line, "DeletionDate=")) {
			assert_deletion_date(line + 13);
			date = true;
		}
	}
	if (!path || !date)
		fail_msg("%s lacks %s", info, path ? "DeletionDate=" : "Path=");
	free(text);
}

static void delete_trash_moves_the_file_to_the_home_trash_with_its_trashinfo(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX], files[PATH_MAX], info[PATH_MAX], want[PATH_MAX + 32];
	cJSON *r;

	write_mode(path_in(p, sizeof(p), c->ws, "notes.txt"), "keep me\n", 0640);
	/* No deleteMode: trash is the default. */
	r = hostop(c, "\"operation\":\"delete\",\"path\":\"%s\"", p);
	expect_ok(r, true);
	assert_absent(p);
	trash_dir(c, files, sizeof(files), "files/notes.txt");
	trash_dir(c, info, sizeof(info), "info/notes.txt.trashinfo");
	assert_string_equal(fsbt_str(r, "trashedTo"), files);
	assert_string_equal(fsbt_str(r, "path"), p);
	assert_content(files, "keep me\n");
	assert_int_equal(lmode(files) & 07777, 0640);
	assert_trashinfo(info, p);
	cJSON_Delete(r);

	/* Said explicitly, the same. */
	write_mode(p, "second\n", 0644);
	r = hostop(c, "\"operation\":\"delete\",\"path\":\"%s\",\"deleteMode\":\"trash\"", p);
	expect_ok(r, true);
	assert_absent(p);
	/* The name is taken in the trash: the next free number. */
	snprintf(want, sizeof(want), "%s.2", files);
	assert_string_equal(fsbt_str(r, "trashedTo"), want);
	assert_content(want, "second\n");
	assert_content(files, "keep me\n");
	trash_dir(c, info, sizeof(info), "info/notes.txt.2.trashinfo");
	assert_trashinfo(info, p);
	cJSON_Delete(r);
}

/* files/<name> taken by an entry that has no .trashinfo (left by another
 * program): never replaced; the next number is used and no .trashinfo is
 * left that would describe the entry that was there. */
static void delete_trash_never_replaces_an_orphan_in_the_trash(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX], dir[PATH_MAX], orphan[PATH_MAX], info[PATH_MAX], want[PATH_MAX + 8];
	cJSON *r;

	trash_dir(c, dir, sizeof(dir), "");
	path_in(p, sizeof(p), c->home, ".local");
	mkdir_ok(p);
	path_in(p, sizeof(p), c->home, ".local/share");
	mkdir_ok(p);
	mkdir_ok(dir);
	trash_dir(c, p, sizeof(p), "files");
	mkdir_ok(p);
	trash_dir(c, orphan, sizeof(orphan), "files/doc.txt");
	fsbt_write_file(orphan, "an orphan\n");
	fsbt_write_file(path_in(p, sizeof(p), c->ws, "doc.txt"), "mine\n");
	r = hostop(c, "\"operation\":\"delete\",\"path\":\"%s\"", p);
	expect_ok(r, true);
	snprintf(want, sizeof(want), "%s.2", orphan);
	assert_string_equal(fsbt_str(r, "trashedTo"), want);
	cJSON_Delete(r);
	assert_content(orphan, "an orphan\n");
	assert_content(want, "mine\n");
	trash_dir(c, info, sizeof(info), "info/doc.txt.trashinfo");
	assert_absent(info);
	trash_dir(c, info, sizeof(info), "info/doc.txt.2.trashinfo");
	assert_trashinfo(info, p);
}

/* The trash, or its files/, replaced by a symlink to elsewhere: not used. */
static void trash_never_goes_through_a_symlink(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX], else_dir[PATH_MAX], trash[PATH_MAX], q[PATH_MAX + 16], buf[2048];
	struct fsbt_tree before, after;

	path_in(p, sizeof(p), c->home, ".local");
	mkdir_ok(p);
	path_in(p, sizeof(p), c->home, ".local/share");
	mkdir_ok(p);
	mkdir_ok(path_in(else_dir, sizeof(else_dir), c->dir, "elsewhere"));
	mkdir_ok(path_in(q, sizeof(q), else_dir, "files"));
	mkdir_ok(path_in(q, sizeof(q), else_dir, "info"));
	assert_int_equal(fsbt_tree_snap(else_dir, &before), 0);
	trash_dir(c, trash, sizeof(trash), "");
	trash[strlen(trash) - 1] = '\0';	/* no trailing slash */
	assert_int_equal(symlink(else_dir, trash), 0);
	fsbt_write_file(path_in(p, sizeof(p), c->ws, "doc.txt"), "mine\n");
	{
		cJSON *r = hostop(c, "\"operation\":\"delete\",\"path\":\"%s\"", p);

		assert_false(fsbt_ok(r));
		cJSON_Delete(r);
	}
	assert_content(p, "mine\n");

	/* The trash a directory, but files/ and info/ symlinks. */
	assert_int_equal(unlink(trash), 0);
	mkdir_ok(trash);
	path_in(q, sizeof(q), else_dir, "files");
	trash_dir(c, buf, sizeof(buf), "files");
	assert_int_equal(symlink(q, buf), 0);
	path_in(q, sizeof(q), else_dir, "info");
	trash_dir(c, buf, sizeof(buf), "info");
	assert_int_equal(symlink(q, buf), 0);
	{
		cJSON *r = hostop(c, "\"operation\":\"delete\",\"path\":\"%s\"", p);

		assert_false(fsbt_ok(r));
		cJSON_Delete(r);
	}
	assert_content(p, "mine\n");
	assert_int_equal(fsbt_tree_snap(else_dir, &after), 0);
	if (fsbt_tree_diff(&before, &after, FSBT_TREE_MTIME | FSBT_TREE_DIR_MTIME, buf,
			   sizeof(buf)))
		fail_msg("the trash was reached through a symlink:\n%s", buf);
	fsbt_tree_free(&before);
	fsbt_tree_free(&after);
}

static void delete_unlink_removes_the_file_and_trashes_nothing(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX], files[PATH_MAX];
	cJSON *r;

	fsbt_write_file(path_in(p, sizeof(p), c->ws, "gone.txt"), "x\n");
	r = hostop(c, "\"operation\":\"delete\",\"path\":\"%s\",\"deleteMode\":\"unlink\"", p);
	expect_ok(r, true);
	assert_null(cJSON_GetObjectItemCaseSensitive(r, "trashedTo"));
	cJSON_Delete(r);
	assert_absent(p);
	trash_dir(c, files, sizeof(files), "files/gone.txt");
	assert_absent(files);
}

static void delete_empty_directory_needs_no_recursive(void **state)
{
	struct fsbt_core *c = *state;
	char d[PATH_MAX];

	mkdir_ok(path_in(d, sizeof(d), c->ws, "empty"));
	OK(c, "\"operation\":\"delete\",\"path\":\"%s\",\"deleteMode\":\"unlink\"", d);
	assert_absent(d);
}

static void delete_nonempty_directory_without_recursive_is_enotempty_and_untouched(void **state)
{
	struct fsbt_core *c = *state;
	char d[PATH_MAX], f[PATH_MAX + 16];

	mkdir_ok(path_in(d, sizeof(d), c->ws, "full"));
	fsbt_write_file(path_in(f, sizeof(f), d, "inside"), "i\n");
	FAILS(c, "ENOTEMPTY", "\"operation\":\"delete\",\"path\":\"%s\",\"deleteMode\":\"unlink\"",
	      d);
	FAILS(c, "ENOTEMPTY", "\"operation\":\"delete\",\"path\":\"%s\",\"deleteMode\":\"trash\"", d);
	FAILS(c, "ENOTEMPTY",
	      "\"operation\":\"delete\",\"path\":\"%s\",\"recursive\":false,\"force\":true", d);
	assert_content(f, "i\n");
}

/* ws/tree/{a.txt, sub/b.txt, sub/deep/c.txt, link -> a.txt, empty/} */
static void make_tree(const char *t)
{
	char p[PATH_MAX + 64];

	mkdir_ok(t);
	fsbt_write_file(path_in(p, sizeof(p), t, "a.txt"), "a\n");
	mkdir_ok(path_in(p, sizeof(p), t, "sub"));
	fsbt_write_file(path_in(p, sizeof(p), t, "sub/b.txt"), "b\n");
	mkdir_ok(path_in(p, sizeof(p), t, "sub/deep"));
	fsbt_write_file(path_in(p, sizeof(p), t, "sub/deep/c.txt"), "c\n");
	assert_int_equal(symlink("a.txt", path_in(p, sizeof(p), t, "link")), 0);
	mkdir_ok(path_in(p, sizeof(p), t, "empty"));
}

static void delete_recursive_unlink_removes_the_whole_tree(void **state)
{
	struct fsbt_core *c = *state;
	char t[PATH_MAX], files[PATH_MAX];

	make_tree(path_in(t, sizeof(t), c->ws, "tree"));
	OK(c, "\"operation\":\"delete\",\"path\":\"%s\",\"recursive\":true,\"deleteMode\":\"unlink\"",
	   t);
	assert_absent(t);
	trash_dir(c, files, sizeof(files), "files/tree");
	assert_absent(files);
}

static void delete_recursive_trash_moves_the_whole_tree(void **state)
{
	struct fsbt_core *c = *state;
	char t[PATH_MAX], files[PATH_MAX], info[PATH_MAX], buf[PATH_MAX];
	struct fsbt_tree before, after;
	cJSON *r;

	make_tree(path_in(t, sizeof(t), c->ws, "tree"));
	assert_int_equal(fsbt_tree_snap(t, &before), 0);
	r = hostop(c, "\"operation\":\"delete\",\"path\":\"%s\",\"recursive\":true", t);
	expect_ok(r, true);
	trash_dir(c, files, sizeof(files), "files/tree");
	assert_string_equal(fsbt_str(r, "trashedTo"), files);
	cJSON_Delete(r);
	assert_absent(t);
	/* The tree is in the trash as it was: moved, not copied. */
	assert_int_equal(fsbt_tree_snap(files, &after), 0);
	if (fsbt_tree_diff(&before, &after, FSBT_TREE_MTIME | FSBT_TREE_NLINK, buf, sizeof(buf)))
		fail_msg("the trashed tree differs from the tree deleted:\n%s", buf);
	fsbt_tree_free(&before);
	fsbt_tree_free(&after);
	trash_dir(c, info, sizeof(info), "info/tree.trashinfo");
	assert_trashinfo(info, t);
}

static void delete_missing_is_enoent_and_force_makes_it_a_no_change_success(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX];
	cJSON *r;

	path_in(p, sizeof(p), c->ws, "never-was");
	FAILS(c, "ENOENT", "\"operation\":\"delete\",\"path\":\"%s\"", p);
	FAILS(c, "ENOENT", "\"operation\":\"delete\",\"path\":\"%s\",\"deleteMode\":\"unlink\"", p);
	r = hostop(c, "\"operation\":\"delete\",\"path\":\"%s\",\"force\":true", p);
	expect_ok(r, false);
	cJSON_Delete(r);
	r = hostop(c, "\"operation\":\"delete\",\"path\":\"%s\",\"force\":true,\"recursive\":true,"
		      "\"deleteMode\":\"unlink\"",
		   p);
	expect_ok(r, false);
	cJSON_Delete(r);
	assert_absent(p);
}

static void delete_final_symlink_removes_the_link_not_its_target(void **state)
{
	struct fsbt_core *c = *state;
	char target[PATH_MAX], link[PATH_MAX], dlink[PATH_MAX], dir[PATH_MAX], in[PATH_MAX + 16];
	char files[PATH_MAX], got[PATH_MAX];
	ssize_t n;

	fsbt_write_file(path_in(target, sizeof(target), c->ws, "target.txt"), "target\n");
	assert_int_equal(symlink(target, path_in(link, sizeof(link), c->ws, "link")), 0);
	OK(c, "\"operation\":\"delete\",\"path\":\"%s\",\"deleteMode\":\"unlink\"", link);
	assert_absent(link);
	assert_content(target, "target\n");

	/* Trashed: the trash holds the link itself. */
	assert_int_equal(symlink(target, link), 0);
	OK(c, "\"operation\":\"delete\",\"path\":\"%s\"", link);
	assert_absent(link);
	trash_dir(c, files, sizeof(files), "files/link");
	assert_true(S_ISLNK(lmode(files)));
	n = readlink(files, got, sizeof(got) - 1);
	assert_true(n > 0);
	got[n] = '\0';
	assert_string_equal(got, target);
	assert_content(target, "target\n");

	/* A link to a directory, recursive: the link goes, the directory stays. */
	mkdir_ok(path_in(dir, sizeof(dir), c->ws, "realdir"));
	fsbt_write_file(path_in(in, sizeof(in), dir, "f"), "f\n");
	assert_int_equal(symlink(dir, path_in(dlink, sizeof(dlink), c->ws, "dirlink")), 0);
	OK(c, "\"operation\":\"delete\",\"path\":\"%s\",\"recursive\":true,\"deleteMode\":\"unlink\"",
	   dlink);
	assert_absent(dlink);
	assert_content(in, "f\n");
}

/* c->dir/outside/{keep.txt}: a directory no pack lets a command change. */
static void make_outside(const struct fsbt_core *c, char *out, size_t size)
{
	char p[PATH_MAX + 16];

	path_in(out, size, c->dir, "outside");
	mkdir_ok(out);
	fsbt_write_file(path_in(p, sizeof(p), out, "keep.txt"), "outside\n");
}

static void delete_recursive_does_not_follow_symlinks_inside_the_tree(void **state)
{
	struct fsbt_core *c = *state;
	char out[PATH_MAX], t[PATH_MAX], p[PATH_MAX + 32], buf[4096];
	struct fsbt_tree before, after;

	make_outside(c, out, sizeof(out));
	assert_int_equal(fsbt_tree_snap(out, &before), 0);
	for (int trash = 0; trash < 2; trash++) {
		make_tree(path_in(t, sizeof(t), c->ws, trash ? "ttree" : "utree"));
		assert_int_equal(symlink(out, path_in(p, sizeof(p), t, "sub/to-outside")), 0);
		assert_int_equal(symlink("../../outside/keep.txt",
					 path_in(p, sizeof(p), t, "keep-link")), 0);
		OK(c, "\"operation\":\"delete\",\"path\":\"%s\",\"recursive\":true,"
		      "\"deleteMode\":\"%s\"",
		   t, trash ? "trash" : "unlink");
		assert_absent(t);
	}
	assert_int_equal(fsbt_tree_snap(out, &after), 0);
	if (fsbt_tree_diff(&before, &after, FSBT_TREE_MTIME | FSBT_TREE_DIR_MTIME |
						    FSBT_TREE_CTIME | FSBT_TREE_NLINK,
			   buf, sizeof(buf)))
		fail_msg("a recursive delete reached through a symlink:\n%s", buf);
	fsbt_tree_free(&before);
	fsbt_tree_free(&after);
}

static void delete_directory_holding_a_denied_entry_is_refused_whole(void **state)
{
	struct fsbt_core *c = *state;
	char sub[PATH_MAX], p[PATH_MAX + 32], git[PATH_MAX + 32], cfg[PATH_MAX + 32];
	struct fsbt_tree before, after;
	char buf[4096];
	const char *denied;
	cJSON *r;

	/* ws/sub/{a.txt, .git/commondir, .envrc, z.txt}: git-metadata and
	 * credentials deny changing either, deleting included (a hook alone
	 * may be deleted: denyWrite). */
	mkdir_ok(path_in(sub, sizeof(sub), c->ws, "sub"));
	fsbt_write_file(path_in(p, sizeof(p), sub, "a.txt"), "a\n");
	fsbt_write_file(path_in(p, sizeof(p), sub, "z.txt"), "z\n");
	mkdir_ok(path_in(p, sizeof(p), sub, ".git"));
	fsbt_write_file(path_in(git, sizeof(git), sub, ".git/commondir"), "../elsewhere\n");
	fsbt_write_file(path_in(cfg, sizeof(cfg), sub, ".envrc"), "export A=1\n");
	assert_int_equal(fsbt_tree_snap(sub, &before), 0);

	for (int trash = 0; trash < 2; trash++) {
		r = hostop(c, "\"operation\":\"delete\",\"path\":\"%s\",\"recursive\":true,"
			      "\"deleteMode\":\"%s\"",
			   sub, trash ? "trash" : "unlink");
		expect_denied(r);
		denied = fsbt_str(r, "deniedPath");
		if (strcmp(denied, git) != 0 && strcmp(denied, cfg) != 0) {
			char *s = cJSON_PrintUnformatted(r);

			fail_msg("deniedPath should name %s or %s: %s", git, cfg, s);
		}
		cJSON_Delete(r);
		/* Refused before anything changed. */
		assert_int_equal(fsbt_tree_snap(sub, &after), 0);
		if (fsbt_tree_diff(&before, &after, FSBT_TREE_MTIME | FSBT_TREE_DIR_MTIME |
							    FSBT_TREE_CTIME,
				   buf, sizeof(buf)))
			fail_msg("a refused delete changed the tree:\n%s", buf);
		fsbt_tree_free(&after);
	}
	fsbt_tree_free(&before);

	/* The same with a secret deep inside: ws/proj/a/b/.env (denyRead). */
	mkdir_ok(path_in(p, sizeof(p), c->ws, "proj"));
	mkdir_ok(path_in(p, sizeof(p), c->ws, "proj/a"));
	mkdir_ok(path_in(p, sizeof(p), c->ws, "proj/a/b"));
	fsbt_write_file(path_in(p, sizeof(p), c->ws, "proj/a/b/.env"), "TOKEN=1\n");
	fsbt_write_file(path_in(p, sizeof(p), c->ws, "proj/a/0.txt"), "0\n");
	path_in(sub, sizeof(sub), c->ws, "proj");
	r = hostop(c, "\"operation\":\"delete\",\"path\":\"%s\",\"recursive\":true,"
		      "\"deleteMode\":\"unlink\"",
		   sub);
	expect_denied(r);
	path_in(p, sizeof(p), c->ws, "proj/a/b/.env");
	assert_string_equal(fsbt_str(r, "deniedPath"), p);
	cJSON_Delete(r);
	assert_content(p, "TOKEN=1\n");
	assert_content(path_in(p, sizeof(p), c->ws, "proj/a/0.txt"), "0\n");
}

static void delete_outside_policy_is_refused_and_the_file_stays(void **state)
{
	struct fsbt_core *c = *state;
	char key[PATH_MAX], files[PATH_MAX];
	struct stat before, after;
	cJSON *r;

	path_in(key, sizeof(key), c->home, ".ssh/id_ed25519");
	assert_int_equal(lstat(key, &before), 0);
	for (int i = 0; i < 2; i++) {
		r = hostop(c, "\"operation\":\"delete\",\"path\":\"%s\",\"deleteMode\":\"%s\","
			      "\"force\":true",
			   key, i ? "unlink" : "trash");
		expect_denied(r);
		assert_non_null(strstr(fsbt_str(r, "rule"), ".ssh"));
		cJSON_Delete(r);
	}
	assert_int_equal(lstat(key, &after), 0);
	assert_int_equal(before.st_ino, after.st_ino);
	assert_true(before.st_ctim.tv_sec == after.st_ctim.tv_sec &&
		    before.st_ctim.tv_nsec == after.st_ctim.tv_nsec);
	trash_dir(c, files, sizeof(files), "files/id_ed25519");
	assert_absent(files);
	/* The directory above: refused as a whole too. */
	path_in(key, sizeof(key), c->home, ".ssh");
	DENIED(c, "\"operation\":\"delete\",\"path\":\"%s\",\"recursive\":true", key);
	assert_true(S_ISDIR(lmode(key)));
}

/* ------------------------------------------------------------------------ */
/* mkdir */

static void mkdir_makes_the_directory_with_mode_minus_umask(void **state)
{
	struct fsbt_core *c = *state;
	char d[PATH_MAX];

	OK(c, "\"operation\":\"mkdir\",\"path\":\"%s\"", path_in(d, sizeof(d), c->ws, "plain"));
	assert_true(S_ISDIR(lmode(d)));
	assert_int_equal(lmode(d) & 07777, 0777 & ~UMASK);

	OK(c, "\"operation\":\"mkdir\",\"path\":\"%s\",\"mode\":\"0750\"",
	   path_in(d, sizeof(d), c->ws, "m0750"));
	assert_int_equal(lmode(d) & 07777, 0750);
	OK(c, "\"operation\":\"mkdir\",\"path\":\"%s\",\"mode\":\"711\"",
	   path_in(d, sizeof(d), c->ws, "m711"));
	assert_int_equal(lmode(d) & 07777, 0711);
	/* A number, 0777 as 511: the umask takes 022 off. */
	OK(c, "\"operation\":\"mkdir\",\"path\":\"%s\",\"mode\":511",
	   path_in(d, sizeof(d), c->ws, "m511"));
	assert_int_equal(lmode(d) & 07777, 0777 & ~UMASK);
	OK(c, "\"operation\":\"mkdir\",\"path\":\"%s\",\"mode\":448",
	   path_in(d, sizeof(d), c->ws, "m448"));
	assert_int_equal(lmode(d) & 07777, 0700);
}

static void mkdir_existing_is_eexist_unless_recursive(void **state)
{
	struct fsbt_core *c = *state;
	char d[PATH_MAX], f[PATH_MAX];
	cJSON *r;

	mkdir_ok(path_in(d, sizeof(d), c->ws, "there"));
	assert_int_equal(chmod(d, 0700), 0);
	FAILS(c, "EEXIST", "\"operation\":\"mkdir\",\"path\":\"%s\"", d);
	r = hostop(c, "\"operation\":\"mkdir\",\"path\":\"%s\",\"recursive\":true,\"mode\":\"0755\"",
		   d);
	expect_ok(r, false);
	cJSON_Delete(r);
	/* Nothing was done to it. */
	assert_int_equal(lmode(d) & 07777, 0700);
	/* A file in the way is not a directory. */
	fsbt_write_file(path_in(f, sizeof(f), c->ws, "afile"), "f\n");
	FAILS(c, "EEXIST", "\"operation\":\"mkdir\",\"path\":\"%s\"", f);
	assert_content(f, "f\n");
}

static void mkdir_recursive_makes_the_parents(void **state)
{
	struct fsbt_core *c = *state;
	char d[PATH_MAX], p[PATH_MAX];

	OK(c, "\"operation\":\"mkdir\",\"path\":\"%s\",\"recursive\":true,\"mode\":\"0750\"",
	   path_in(d, sizeof(d), c->ws, "a/b/c"));
	assert_true(S_ISDIR(lmode(path_in(p, sizeof(p), c->ws, "a"))));
	assert_true(S_ISDIR(lmode(path_in(p, sizeof(p), c->ws, "a/b"))));
	assert_true(S_ISDIR(lmode(d)));
	assert_int_equal(lmode(d) & 07777, 0750);
	/* Partly there: only the rest is made. */
	OK(c, "\"operation\":\"mkdir\",\"path\":\"%s\",\"recursive\":true",
	   path_in(d, sizeof(d), c->ws, "a/b/x/y"));
	assert_true(S_ISDIR(lmode(d)));
}

static void mkdir_missing_parent_without_recursive_is_enoent(void **state)
{
	struct fsbt_core *c = *state;
	char d[PATH_MAX], p[PATH_MAX];

	FAILS(c, "ENOENT", "\"operation\":\"mkdir\",\"path\":\"%s\"",
	      path_in(d, sizeof(d), c->ws, "nope/child"));
	FAILS(c, "ENOENT", "\"operation\":\"mkdir\",\"path\":\"%s\",\"recursive\":false",
	      path_in(d, sizeof(d), c->ws, "nope/child"));
	assert_absent(path_in(p, sizeof(p), c->ws, "nope"));
}

static void mkdir_outside_policy_is_refused(void **state)
{
	struct fsbt_core *c = *state;
	char d[PATH_MAX];

	/* Outside the workspace, tmp and home: default deny. */
	DENIED(c, "\"operation\":\"mkdir\",\"path\":\"%s\"",
	       path_in(d, sizeof(d), c->dir, "elsewhere"));
	assert_absent(d);
	DENIED(c, "\"operation\":\"mkdir\",\"path\":\"%s\",\"recursive\":true",
	       path_in(d, sizeof(d), c->dir, "elsewhere/deeper"));
	assert_absent(path_in(d, sizeof(d), c->dir, "elsewhere"));
	/* Under a secret's directory. */
	DENIED(c, "\"operation\":\"mkdir\",\"path\":\"%s\"",
	       path_in(d, sizeof(d), c->home, ".ssh/newdir"));
	assert_absent(d);
	/* A hook's name in a repository (git init may make the hooks
	 * directory itself). */
	mkdir_ok(path_in(d, sizeof(d), c->ws, ".git"));
	mkdir_ok(path_in(d, sizeof(d), c->ws, ".git/hooks"));
	DENIED(c, "\"operation\":\"mkdir\",\"path\":\"%s\"",
	       path_in(d, sizeof(d), c->ws, ".git/hooks/pre-commit"));
	assert_absent(d);
}

/* ------------------------------------------------------------------------ */
/* rename */

static void rename_moves_a_file(void **state)
{
	struct fsbt_core *c = *state;
	char a[PATH_MAX], b[PATH_MAX];
	struct stat before;
	cJSON *r;

	write_mode(path_in(a, sizeof(a), c->ws, "r1.txt"), "one\n", 0600);
	assert_int_equal(lstat(a, &before), 0);
	r = hostop(c, "\"operation\":\"rename\",\"from\":\"%s\",\"to\":\"%s\"", a,
		   path_in(b, sizeof(b), c->ws, "r2.txt"));
	expect_ok(r, true);
	assert_string_equal(fsbt_str(r, "path"), a);
	assert_string_equal(fsbt_str(r, "to"), b);
	cJSON_Delete(r);
	assert_absent(a);
	assert_content(b, "one\n");
	assert_int_equal(lmode(b) & 07777, 0600);
}

static void rename_over_a_file_backs_it_up_and_restore_brings_both_back(void **state)
{
	struct fsbt_core *c = *state;
	char a[PATH_MAX], b[PATH_MAX];

	write_mode(path_in(a, sizeof(a), c->ws, "new.txt"), "the new text\n", 0644);
	write_mode(path_in(b, sizeof(b), c->ws, "old.txt"), "the old text\n", 0600);
	OK(c, "\"operation\":\"rename\",\"from\":\"%s\",\"to\":\"%s\"", a, b);
	assert_absent(a);
	assert_content(b, "the new text\n");
	commit(c);
	assert_int_equal(restore_last(c), 0);
	assert_content(a, "the new text\n");
	assert_content(b, "the old text\n");
	assert_int_equal(lmode(b) & 07777, 0600);
}

static void rename_moves_a_directory_with_its_content(void **state)
{
	struct fsbt_core *c = *state;
	char a[PATH_MAX], b[PATH_MAX], buf[4096];
	struct fsbt_tree before, after;

	make_tree(path_in(a, sizeof(a), c->ws, "dd"));
	assert_int_equal(fsbt_tree_snap(a, &before), 0);
	OK(c, "\"operation\":\"rename\",\"from\":\"%s\",\"to\":\"%s\"", a,
	   path_in(b, sizeof(b), c->ws, "ee"));
	assert_absent(a);
	assert_int_equal(fsbt_tree_snap(b, &after), 0);
	if (fsbt_tree_diff(&before, &after, FSBT_TREE_MTIME | FSBT_TREE_NLINK, buf, sizeof(buf)))
		fail_msg("the renamed directory differs:\n%s", buf);
	fsbt_tree_free(&before);
	fsbt_tree_free(&after);

	/* Over an empty directory: replaced, as rename(2) does. */
	mkdir_ok(a);
	OK(c, "\"operation\":\"rename\",\"from\":\"%s\",\"to\":\"%s\"", b, a);
	assert_absent(b);
	assert_content(path_in(buf, sizeof(buf), a, "sub/deep/c.txt"), "c\n");
	/* Over a directory that is not empty: as the kernel says. */
	mkdir_ok(b);
	fsbt_write_file(path_in(buf, sizeof(buf), b, "stay"), "s\n");
	FAILS(c, "ENOTEMPTY", "\"operation\":\"rename\",\"from\":\"%s\",\"to\":\"%s\"", a, b);
	assert_content(path_in(buf, sizeof(buf), b, "stay"), "s\n");
	assert_content(path_in(buf, sizeof(buf), a, "a.txt"), "a\n");
}

static void rename_onto_a_git_dir_is_refused_and_away_from_one_is_not(void **state)
{
	struct fsbt_core *c = *state;
	char g[PATH_MAX], git[PATH_MAX], p[PATH_MAX + 32], g2[PATH_MAX];

	/* mv g .git: the new name is the repository's metadata. */
	mkdir_ok(path_in(g, sizeof(g), c->ws, "g"));
	mkdir_ok(path_in(p, sizeof(p), g, "hooks"));
	fsbt_write_file(path_in(p, sizeof(p), g, "hooks/x"), "#!/bin/sh\n");
	DENIED(c, "\"operation\":\"rename\",\"from\":\"%s\",\"to\":\"%s\"", g,
	       path_in(git, sizeof(git), c->ws, ".git"));
	assert_absent(git);
	assert_content(p, "#!/bin/sh\n");

	/* mv .git g2 with a hook: the hooks' old names are only taken away
	 * (rename-from), which denyWrite allows, and their new names under g2
	 * are not hook paths a name can tell (the git guard looks at g2, a git
	 * directory by its content, when the cycle is sealed). */
	mkdir_ok(git);
	mkdir_ok(path_in(p, sizeof(p), git, "hooks"));
	fsbt_write_file(path_in(p, sizeof(p), git, "hooks/pre-commit"), "#!/bin/sh\n");
	OK(c, "\"operation\":\"rename\",\"from\":\"%s\",\"to\":\"%s\"", git,
	   path_in(g2, sizeof(g2), c->ws, "g2"));
	assert_absent(git);
	assert_content(path_in(p, sizeof(p), g2, "hooks/pre-commit"), "#!/bin/sh\n");
	/* Back under the name .git: each hook's new name is a new hook. */
	DENIED(c, "\"operation\":\"rename\",\"from\":\"%s\",\"to\":\"%s\"", g2, git);
	assert_absent(git);
}

static void rename_directory_with_an_entry_denied_under_its_new_name_is_refused(void **state)
{
	struct fsbt_core *c = *state;
	char wt[PATH_MAX], to[PATH_MAX], p[PATH_MAX + 64], denied[PATH_MAX + 64];
	struct fsbt_tree before, after;
	char buf[4096];
	cJSON *r;

	/* ws/wt/{pre-commit, update.sample} -> ws/repo/.git/hooks: the
	 * directory may move there, but its pre-commit may not be made under
	 * that name (git-metadata). */
	mkdir_ok(path_in(p, sizeof(p), c->ws, "repo"));
	mkdir_ok(path_in(p, sizeof(p), c->ws, "repo/.git"));
	mkdir_ok(path_in(wt, sizeof(wt), c->ws, "wt"));
	fsbt_write_file(path_in(p, sizeof(p), wt, "pre-commit"), "#!/bin/sh\n");
	fsbt_write_file(path_in(p, sizeof(p), wt, "update.sample"), "#!/bin/sh\n");
	assert_int_equal(fsbt_tree_snap(c->ws, &before), 0);
	path_in(to, sizeof(to), c->ws, "repo/.git/hooks");
	r = hostop(c, "\"operation\":\"rename\",\"from\":\"%s\",\"to\":\"%s\"", wt, to);
	expect_denied(r);
	path_in(denied, sizeof(denied), to, "pre-commit");
	assert_string_equal(fsbt_str(r, "deniedPath"), denied);
	cJSON_Delete(r);
	assert_int_equal(fsbt_tree_snap(c->ws, &after), 0);
	if (fsbt_tree_diff(&before, &after, FSBT_TREE_MTIME | FSBT_TREE_DIR_MTIME, buf,
			   sizeof(buf)))
		fail_msg("a refused rename changed the workspace:\n%s", buf);
	fsbt_tree_free(&before);
	fsbt_tree_free(&after);

	/* A secret inside, under its old name: ws/pkg/.env cannot move. */
	mkdir_ok(path_in(p, sizeof(p), c->ws, "pkg"));
	fsbt_write_file(path_in(denied, sizeof(denied), c->ws, "pkg/.env"), "K=1\n");
	r = hostop(c, "\"operation\":\"rename\",\"from\":\"%s\",\"to\":\"%s\"", p,
		   path_in(to, sizeof(to), c->ws, "pkg2"));
	expect_denied(r);
	assert_string_equal(fsbt_str(r, "deniedPath"), denied);
	cJSON_Delete(r);
	assert_absent(to);
	assert_content(denied, "K=1\n");
}

/* rename(2) replaces a symlink at `to`, never what it points to. */
static void rename_onto_a_symlink_replaces_the_link_not_its_target(void **state)
{
	struct fsbt_core *c = *state;
	char out[PATH_MAX], keep[PATH_MAX + 16], a[PATH_MAX], l[PATH_MAX];

	make_outside(c, out, sizeof(out));
	path_in(keep, sizeof(keep), out, "keep.txt");
	fsbt_write_file(path_in(a, sizeof(a), c->ws, "mine.txt"), "mine\n");
	assert_int_equal(symlink(keep, path_in(l, sizeof(l), c->ws, "l")), 0);
	OK(c, "\"operation\":\"rename\",\"from\":\"%s\",\"to\":\"%s\"", a, l);
	assert_true(S_ISREG(lmode(l)));
	assert_content(l, "mine\n");
	assert_content(keep, "outside\n");
	assert_absent(a);
}

/*
 * rename(2) of a directory onto a symlink fails (ENOTDIR), and nothing
 * changes: the cycle must not hold paths that restore cannot handle. It
 * used to journal the directory's entries under the symlink's name
 * (t/x), which restore then skipped ("a directory on the way to it is a
 * symlink now") and exited 1 for a turn that changed nothing.
 */
static void rename_of_a_directory_onto_a_symlink_fails_and_leaves_a_clean_cycle(void **state)
{
	struct fsbt_core *c = *state;
	char d[PATH_MAX], t[PATH_MAX], x[PATH_MAX + 16], f[PATH_MAX];

	fsbt_write_file(path_in(f, sizeof(f), c->ws, "tt"), "tt\n");
	assert_int_equal(symlink("tt", path_in(t, sizeof(t), c->ws, "t")), 0);
	mkdir_ok(path_in(d, sizeof(d), c->ws, "D"));
	fsbt_write_file(path_in(x, sizeof(x), d, "x"), "x\n");
	FAILS(c, "ENOTDIR", "\"operation\":\"rename\",\"from\":\"%s\",\"to\":\"%s\"", d, t);
	assert_true(S_ISLNK(lmode(t)));
	assert_content(x, "x\n");
	/* A change elsewhere, so that the turn has a cycle to restore. */
	OK(c, "\"operation\":\"chmod\",\"path\":\"%s\",\"mode\":\"0600\"", f);
	commit(c);
	assert_int_equal(restore_last(c), 0);
	assert_int_equal(lmode(f) & 07777, 0644);
	assert_true(S_ISLNK(lmode(t)));
	assert_content(x, "x\n");
}

static void rename_missing_source_is_enoent(void **state)
{
	struct fsbt_core *c = *state;
	char a[PATH_MAX], b[PATH_MAX];

	fsbt_write_file(path_in(b, sizeof(b), c->ws, "target"), "t\n");
	FAILS(c, "ENOENT", "\"operation\":\"rename\",\"from\":\"%s\",\"to\":\"%s\"",
	      path_in(a, sizeof(a), c->ws, "missing"), b);
	assert_content(b, "t\n");
}

static void rename_of_a_symlink_moves_the_link(void **state)
{
	struct fsbt_core *c = *state;
	char t[PATH_MAX], a[PATH_MAX], b[PATH_MAX], got[PATH_MAX];
	ssize_t n;

	fsbt_write_file(path_in(t, sizeof(t), c->ws, "real.txt"), "real\n");
	assert_int_equal(symlink("real.txt", path_in(a, sizeof(a), c->ws, "sl")), 0);
	OK(c, "\"operation\":\"rename\",\"from\":\"%s\",\"to\":\"%s\"", a,
	   path_in(b, sizeof(b), c->ws, "sl2"));
	assert_absent(a);
	assert_true(S_ISLNK(lmode(b)));
	n = readlink(b, got, sizeof(got) - 1);
	assert_true(n > 0);
	got[n] = '\0';
	assert_string_equal(got, "real.txt");
	assert_content(t, "real\n");
	assert_true(S_ISREG(lmode(t)));
}

/* The mount made by the EXDEV test, unmounted by its teardown. */
static char mnt_path[PATH_MAX];

static int teardown_mount(void **state)
{
	if (mnt_path[0] != '\0')
		umount2(mnt_path, MNT_DETACH);
	mnt_path[0] = '\0';
	return teardown(state);
}

/* A tmpfs at ws/<rel> (ws/mnt when NULL), or a skip. */
static void mount_tmpfs_at(const struct fsbt_core *c, const char *rel)
{
	struct stat a, b;

	mkdir_ok(path_in(mnt_path, sizeof(mnt_path), c->ws, rel != NULL ? rel : "mnt"));
	if (mount("fsbt", mnt_path, "tmpfs", 0, "size=4m,mode=0755") < 0) {
		int err = errno;

		mnt_path[0] = '\0';
		fsbt_skip("cannot mount a tmpfs in the workspace (%s): no second filesystem "
			  "to rename across",
			  strerror(err));
	}
	assert_int_equal(stat(c->ws, &a), 0);
	assert_int_equal(stat(mnt_path, &b), 0);
	assert_true(a.st_dev != b.st_dev);
}

static void mount_tmpfs(const struct fsbt_core *c)
{
	mount_tmpfs_at(c, NULL);
}

/* A tree with another filesystem mounted inside: a recursive operation
 * does not reach into it, and refuses before changing anything. */
static void recursive_ops_stop_at_a_mount_inside_the_tree(void **state)
{
	struct fsbt_core *c = *state;
	char t[PATH_MAX], p[PATH_MAX + 32], to[PATH_MAX], buf[4096];
	struct fsbt_tree before, after;
	cJSON *r;

	make_tree(path_in(t, sizeof(t), c->ws, "tree"));
	mount_tmpfs_at(c, "tree/sub/mnt");
	fsbt_write_file(path_in(p, sizeof(p), mnt_path, "on-the-mount"), "mounted\n");
	assert_int_equal(fsbt_tree_snap(t, &before), 0);
	/* (A rename is left out: the mount would move with the directory,
	 * which the kernel allows and which destroys nothing.) */
	for (int i = 0; i < 3; i++) {
		static const char *const ops[] = {
			"\"operation\":\"delete\",\"path\":\"%s\",\"recursive\":true,"
			"\"deleteMode\":\"unlink\"",
			"\"operation\":\"delete\",\"path\":\"%s\",\"recursive\":true",
			"\"operation\":\"copy\",\"from\":\"%s\",\"to\":\"%s\",\"recursive\":true",
		};
		char fields[512];

		path_in(to, sizeof(to), c->ws, "elsewhere");
		snprintf(fields, sizeof(fields), ops[i], t, to);
		r = hostop(c, "%s", fields);
		if (fsbt_ok(r)) {
			char *s = cJSON_PrintUnformatted(r);

			fail_msg("a recursive operation on a tree holding a mount succeeded: %s", s);
		}
		cJSON_Delete(r);
		assert_absent(to);
		assert_int_equal(fsbt_tree_snap(t, &after), 0);
		if (fsbt_tree_diff(&before, &after, FSBT_TREE_MTIME | FSBT_TREE_DIR_MTIME, buf,
				   sizeof(buf)))
			fail_msg("a refused operation changed the tree:\n%s", buf);
		fsbt_tree_free(&after);
	}
	fsbt_tree_free(&before);
	assert_content(p, "mounted\n");
}

static void rename_across_filesystems_is_exdev(void **state)
{
	struct fsbt_core *c = *state;
	char a[PATH_MAX], b[PATH_MAX + 16], d[PATH_MAX];

	mount_tmpfs(c);
	fsbt_write_file(path_in(a, sizeof(a), c->ws, "here.txt"), "here\n");
	FAILS(c, "EXDEV", "\"operation\":\"rename\",\"from\":\"%s\",\"to\":\"%s\"", a,
	      path_in(b, sizeof(b), mnt_path, "there.txt"));
	assert_content(a, "here\n");
	assert_absent(b);
	make_tree(path_in(d, sizeof(d), c->ws, "dtree"));
	FAILS(c, "EXDEV", "\"operation\":\"rename\",\"from\":\"%s\",\"to\":\"%s\"", d,
	      path_in(b, sizeof(b), mnt_path, "dtree"));
	assert_content(path_in(b, sizeof(b), d, "sub/b.txt"), "b\n");
	/* A hard link cannot cross either. */
	FAILS(c, "EXDEV", "\"operation\":\"link\",\"from\":\"%s\",\"to\":\"%s\"", a,
	      path_in(b, sizeof(b), mnt_path, "hard"));
	assert_absent(b);
}

/* What mv does after EXDEV: copy, then delete. Both work across the mount,
 * and one restore undoes both. */
static void move_across_filesystems_by_copy_and_delete_is_restored(void **state)
{
	struct fsbt_core *c = *state;
	char d[PATH_MAX], b[PATH_MAX + 16], buf[4096];
	struct fsbt_tree before, moved, after;

	mount_tmpfs(c);
	make_tree(path_in(d, sizeof(d), c->ws, "dtree"));
	assert_int_equal(fsbt_tree_snap(c->ws, &before), 0);
	assert_int_equal(fsbt_tree_snap(d, &moved), 0);
	OK(c, "\"operation\":\"copy\",\"from\":\"%s\",\"to\":\"%s\",\"recursive\":true", d,
	   path_in(b, sizeof(b), mnt_path, "dtree"));
	OK(c, "\"operation\":\"delete\",\"path\":\"%s\",\"recursive\":true", d);
	assert_absent(d);
	assert_int_equal(fsbt_tree_snap(b, &after), 0);
	if (fsbt_tree_diff(&moved, &after, 0, buf, sizeof(buf)))
		fail_msg("the copy on the other filesystem differs:\n%s", buf);
	fsbt_tree_free(&after);
	commit(c);
	assert_int_equal(restore_last(c), 0);
	assert_absent(b);
	/* The mount point itself is the test's, and stays. */
	assert_int_equal(fsbt_tree_snap(c->ws, &after), 0);
	if (fsbt_tree_diff(&before, &after, FSBT_TREE_MTIME, buf, sizeof(buf)))
		fail_msg("after restore the workspace differs:\n%s", buf);
	fsbt_tree_free(&before);
	fsbt_tree_free(&moved);
	fsbt_tree_free(&after);
}

static void delete_trash_on_another_filesystem_uses_its_top_directory(void **state)
{
	struct fsbt_core *c = *state;
	char f[PATH_MAX + 16], files[PATH_MAX + 64], info[PATH_MAX + 64], home[PATH_MAX];
	cJSON *r;

	mount_tmpfs(c);
	fsbt_write_file(path_in(f, sizeof(f), mnt_path, "away.txt"), "away\n");
	r = hostop(c, "\"operation\":\"delete\",\"path\":\"%s\"", f);
	expect_ok(r, true);
	/* No sticky $topdir/.Trash: $topdir/.Trash-$uid, made 0700. */
	snprintf(files, sizeof(files), "%s/.Trash-%u/files/away.txt", mnt_path,
		 (unsigned)getuid());
	assert_string_equal(fsbt_str(r, "trashedTo"), files);
	cJSON_Delete(r);
	assert_absent(f);
	assert_content(files, "away\n");
	snprintf(info, sizeof(info), "%s/.Trash-%u", mnt_path, (unsigned)getuid());
	assert_int_equal(lmode(info) & 07777, 0700);
	/* Path= relative to the top directory. */
	snprintf(info, sizeof(info), "%s/.Trash-%u/info/away.txt.trashinfo", mnt_path,
		 (unsigned)getuid());
	assert_trashinfo(info, "away.txt");
	trash_dir(c, home, sizeof(home), "files/away.txt");
	assert_absent(home);

	/* A sticky $topdir/.Trash: the user's directory in it. */
	snprintf(info, sizeof(info), "%s/.Trash", mnt_path);
	assert_int_equal(mkdir(info, 01777), 0);
	assert_int_equal(chmod(info, 01777), 0);
	fsbt_write_file(f, "away again\n");
	r = hostop(c, "\"operation\":\"delete\",\"path\":\"%s\"", f);
	expect_ok(r, true);
	snprintf(files, sizeof(files), "%s/.Trash/%u/files/away.txt", mnt_path,
		 (unsigned)getuid());
	assert_string_equal(fsbt_str(r, "trashedTo"), files);
	cJSON_Delete(r);
	assert_content(files, "away again\n");
	snprintf(info, sizeof(info), "%s/.Trash/%u/info/away.txt.trashinfo", mnt_path,
		 (unsigned)getuid());
	assert_trashinfo(info, "away.txt");

	/* Not sticky, or a symlink: not used; $topdir/.Trash-$uid is. */
	snprintf(info, sizeof(info), "%s/.Trash", mnt_path);
	assert_int_equal(chmod(info, 0777), 0);
	fsbt_write_file(f, "third time\n");
	r = hostop(c, "\"operation\":\"delete\",\"path\":\"%s\"", f);
	expect_ok(r, true);
	snprintf(files, sizeof(files), "%s/.Trash-%u/files/away.txt.2", mnt_path,
		 (unsigned)getuid());
	assert_string_equal(fsbt_str(r, "trashedTo"), files);
	cJSON_Delete(r);
	snprintf(files, sizeof(files), "%s/.Trash/%u/files/away.txt.2", mnt_path,
		 (unsigned)getuid());
	assert_absent(files);
	/* A symlink to a sticky directory. */
	assert_int_equal(rename(info, path_in(home, sizeof(home), mnt_path, "old-trash")), 0);
	assert_int_equal(mkdir(path_in(home, sizeof(home), mnt_path, "sticky"), 01777), 0);
	assert_int_equal(chmod(home, 01777), 0);
	assert_int_equal(symlink("sticky", info), 0);
	fsbt_write_file(f, "fourth time\n");
	r = hostop(c, "\"operation\":\"delete\",\"path\":\"%s\"", f);
	expect_ok(r, true);
	snprintf(files, sizeof(files), "%s/.Trash-%u/files/away.txt.3", mnt_path,
		 (unsigned)getuid());
	assert_string_equal(fsbt_str(r, "trashedTo"), files);
	cJSON_Delete(r);
	assert_content(files, "fourth time\n");
	snprintf(files, sizeof(files), "%s/sticky/%u", mnt_path, (unsigned)getuid());
	assert_absent(files);
}

/* ------------------------------------------------------------------------ */
/* copy */

static void copy_file_copies_content_and_mode(void **state)
{
	struct fsbt_core *c = *state;
	char a[PATH_MAX], b[PATH_MAX], l[PATH_MAX];
	cJSON *r;

	write_mode(path_in(a, sizeof(a), c->ws, "src.sh"), "#!/bin/sh\necho hi\n", 0750);
	r = hostop(c, "\"operation\":\"copy\",\"from\":\"%s\",\"to\":\"%s\"", a,
		   path_in(b, sizeof(b), c->ws, "dst.sh"));
	expect_ok(r, true);
	cJSON_Delete(r);
	assert_content(b, "#!/bin/sh\necho hi\n");
	assert_int_equal(lmode(b) & 07777, 0750);
	assert_content(a, "#!/bin/sh\necho hi\n");

	/* A final symlink as `from` is followed, as cp does. */
	write_mode(a, "through the link\n", 0640);
	assert_int_equal(symlink("src.sh", path_in(l, sizeof(l), c->ws, "srclink")), 0);
	OK(c, "\"operation\":\"copy\",\"from\":\"%s\",\"to\":\"%s\"", l,
	   path_in(b, sizeof(b), c->ws, "via-link"));
	assert_true(S_ISREG(lmode(b)));
	assert_content(b, "through the link\n");
	assert_int_equal(lmode(b) & 07777, 0640);
}

static void copy_over_a_file_backs_it_up_first(void **state)
{
	struct fsbt_core *c = *state;
	char a[PATH_MAX], b[PATH_MAX];

	write_mode(path_in(a, sizeof(a), c->ws, "fresh.txt"), "fresh content\n", 0644);
	write_mode(path_in(b, sizeof(b), c->ws, "stale.txt"), "stale, but wanted back\n", 0600);
	OK(c, "\"operation\":\"copy\",\"from\":\"%s\",\"to\":\"%s\"", a, b);
	assert_content(b, "fresh content\n");
	assert_content(a, "fresh content\n");
	commit(c);
	assert_int_equal(restore_last(c), 0);
	assert_content(b, "stale, but wanted back\n");
	assert_int_equal(lmode(b) & 07777, 0600);
	assert_content(a, "fresh content\n");
}

static void copy_directory_without_recursive_is_eisdir(void **state)
{
	struct fsbt_core *c = *state;
	char t[PATH_MAX], b[PATH_MAX];

	make_tree(path_in(t, sizeof(t), c->ws, "tree"));
	FAILS(c, "EISDIR", "\"operation\":\"copy\",\"from\":\"%s\",\"to\":\"%s\"", t,
	      path_in(b, sizeof(b), c->ws, "tree2"));
	assert_absent(b);
	FAILS(c, "EISDIR", "\"operation\":\"copy\",\"from\":\"%s\",\"to\":\"%s\",\"recursive\":false",
	      t, b);
	assert_absent(b);
}

static void copy_recursive_copies_symlinks_and_fifos_as_such(void **state)
{
	struct fsbt_core *c = *state;
	char t[PATH_MAX], b[PATH_MAX], p[PATH_MAX + 32], buf[4096];
	struct fsbt_tree before, after;

	make_tree(path_in(t, sizeof(t), c->ws, "tree"));
	assert_int_equal(mkfifo(path_in(p, sizeof(p), t, "sub/fifo"), 0640), 0);
	assert_int_equal(chmod(p, 0640), 0);
	assert_int_equal(symlink("/nonexistent/dangling", path_in(p, sizeof(p), t, "dangling")),
			 0);
	write_mode(path_in(p, sizeof(p), t, "sub/secret-ish"), "mode 0600\n", 0600);
	assert_int_equal(chmod(path_in(p, sizeof(p), t, "sub/deep"), 0700), 0);
	assert_int_equal(fsbt_tree_snap(t, &before), 0);
	OK(c, "\"operation\":\"copy\",\"from\":\"%s\",\"to\":\"%s\",\"recursive\":true", t,
	   path_in(b, sizeof(b), c->ws, "copy"));
	assert_int_equal(fsbt_tree_snap(b, &after), 0);
	/* Same paths, types, modes, contents and link targets (times are
	 * the copy's own). */
	if (fsbt_tree_diff(&before, &after, 0, buf, sizeof(buf)))
		fail_msg("the copy differs from its source:\n%s", buf);
	fsbt_tree_free(&after);
	/* And the source is as it was. */
	assert_int_equal(fsbt_tree_snap(t, &after), 0);
	if (fsbt_tree_diff(&before, &after, FSBT_TREE_MTIME | FSBT_TREE_NLINK, buf, sizeof(buf)))
		fail_msg("copying changed the source:\n%s", buf);
	fsbt_tree_free(&before);
	fsbt_tree_free(&after);
	/* New files, not links to the old ones. */
	{
		struct stat s1, s2;

		assert_int_equal(lstat(path_in(p, sizeof(p), t, "a.txt"), &s1), 0);
		assert_int_equal(lstat(path_in(p, sizeof(p), b, "a.txt"), &s2), 0);
		assert_true(s1.st_ino != s2.st_ino);
	}
}

static void copy_tree_with_a_denied_entry_is_refused_and_copies_nothing(void **state)
{
	struct fsbt_core *c = *state;
	char t[PATH_MAX], b[PATH_MAX], env[PATH_MAX + 32], p[PATH_MAX + 32];
	cJSON *r;

	mkdir_ok(path_in(t, sizeof(t), c->ws, "app"));
	fsbt_write_file(path_in(p, sizeof(p), t, "main.c"), "int main;\n");
	mkdir_ok(path_in(p, sizeof(p), t, "conf"));
	fsbt_write_file(path_in(env, sizeof(env), t, "conf/.env"), "SECRET=1\n");
	r = hostop(c, "\"operation\":\"copy\",\"from\":\"%s\",\"to\":\"%s\",\"recursive\":true", t,
		   path_in(b, sizeof(b), c->ws, "app2"));
	expect_denied(r);
	assert_string_equal(fsbt_str(r, "deniedPath"), env);
	cJSON_Delete(r);
	assert_absent(b);
	/* The secret alone, as a file. */
	DENIED(c, "\"operation\":\"copy\",\"from\":\"%s\",\"to\":\"%s\"", env,
	       path_in(b, sizeof(b), c->ws, "leaked"));
	assert_absent(b);
	/* Nor onto a protected name. */
	DENIED(c, "\"operation\":\"copy\",\"from\":\"%s\",\"to\":\"%s\"", p,
	       path_in(b, sizeof(b), c->ws, ".env"));
	assert_absent(b);
}

static void copy_onto_an_existing_directory_is_eexist_and_a_file_onto_one_is_eisdir(void **state)
{
	struct fsbt_core *c = *state;
	char t[PATH_MAX], b[PATH_MAX], f[PATH_MAX], p[PATH_MAX + 32];

	make_tree(path_in(t, sizeof(t), c->ws, "tree"));
	mkdir_ok(path_in(b, sizeof(b), c->ws, "exists"));
	FAILS(c, "EEXIST", "\"operation\":\"copy\",\"from\":\"%s\",\"to\":\"%s\",\"recursive\":true",
	      t, b);
	assert_absent(path_in(p, sizeof(p), b, "a.txt"));
	assert_absent(path_in(p, sizeof(p), b, "tree"));
	fsbt_write_file(path_in(f, sizeof(f), c->ws, "plain.txt"), "plain\n");
	FAILS(c, "EISDIR", "\"operation\":\"copy\",\"from\":\"%s\",\"to\":\"%s\"", f, b);
	assert_absent(path_in(p, sizeof(p), b, "plain.txt"));
}

/* `to` is its parent's real path and the final name: a symlink there is
 * not written through to a file no pack lets a command change. */
static void copy_onto_a_symlink_never_writes_its_target(void **state)
{
	struct fsbt_core *c = *state;
	char out[PATH_MAX], keep[PATH_MAX + 16], a[PATH_MAX], l[PATH_MAX];
	struct stat before, after;
	cJSON *r;

	make_outside(c, out, sizeof(out));
	path_in(keep, sizeof(keep), out, "keep.txt");
	assert_int_equal(lstat(keep, &before), 0);
	fsbt_write_file(path_in(a, sizeof(a), c->ws, "mine.txt"), "mine\n");
	assert_int_equal(symlink(keep, path_in(l, sizeof(l), c->ws, "l")), 0);
	r = hostop(c, "\"operation\":\"copy\",\"from\":\"%s\",\"to\":\"%s\"", a, l);
	if (fsbt_ok(r)) {
		/* Done on the name: the link is replaced by the copy. */
		expect_ok(r, true);
		assert_true(S_ISREG(lmode(l)));
		assert_content(l, "mine\n");
	} else {
		assert_true(S_ISLNK(lmode(l)));
	}
	cJSON_Delete(r);
	assert_content(keep, "outside\n");
	assert_int_equal(lstat(keep, &after), 0);
	assert_true(before.st_ctim.tv_sec == after.st_ctim.tv_sec &&
		    before.st_ctim.tv_nsec == after.st_ctim.tv_nsec);
}

/* cp refuses to copy a file onto itself: truncating the target would
 * empty the source. */
static void copy_of_a_file_onto_itself_keeps_its_content(void **state)
{
	struct fsbt_core *c = *state;
	char a[PATH_MAX], l[PATH_MAX];
	cJSON *r;

	fsbt_write_file(path_in(a, sizeof(a), c->ws, "same.txt"), "keep this\n");
	assert_int_equal(symlink("same.txt", path_in(l, sizeof(l), c->ws, "same-link")), 0);
	r = hostop(c, "\"operation\":\"copy\",\"from\":\"%s\",\"to\":\"%s\"", a, a);
	assert_false(fsbt_ok(r));
	cJSON_Delete(r);
	assert_content(a, "keep this\n");
	/* The same file through a symlink. */
	r = hostop(c, "\"operation\":\"copy\",\"from\":\"%s\",\"to\":\"%s\"", l, a);
	assert_false(fsbt_ok(r));
	cJSON_Delete(r);
	assert_content(a, "keep this\n");
}

static void copy_missing_source_is_enoent(void **state)
{
	struct fsbt_core *c = *state;
	char a[PATH_MAX], b[PATH_MAX];

	FAILS(c, "ENOENT", "\"operation\":\"copy\",\"from\":\"%s\",\"to\":\"%s\"",
	      path_in(a, sizeof(a), c->ws, "missing"), path_in(b, sizeof(b), c->ws, "copy"));
	FAILS(c, "ENOENT", "\"operation\":\"copy\",\"from\":\"%s\",\"to\":\"%s\",\"recursive\":true",
	      a, b);
	assert_absent(b);
}

static void copy_tree_with_a_socket_is_eperm_and_copies_nothing(void **state)
{
	struct fsbt_core *c = *state;
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	char t[PATH_MAX], b[PATH_MAX];
	int s;

	make_tree(path_in(t, sizeof(t), c->ws, "st"));
	if (snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/sub/sock", t) >=
	    (int)sizeof(addr.sun_path))
		fsbt_skip("the workspace path is too long for a socket name");
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(s >= 0);
	assert_int_equal(bind(s, (struct sockaddr *)&addr, sizeof(addr)), 0);
	close(s);
	FAILS(c, "EPERM", "\"operation\":\"copy\",\"from\":\"%s\",\"to\":\"%s\",\"recursive\":true",
	      t, path_in(b, sizeof(b), c->ws, "st2"));
	assert_absent(b);
}

/* ------------------------------------------------------------------------ */
/* chmod */

static void chmod_sets_the_permission_bits(void **state)
{
	struct fsbt_core *c = *state;
	char f[PATH_MAX], l[PATH_MAX], d[PATH_MAX];
	cJSON *r;

	write_mode(path_in(f, sizeof(f), c->ws, "script"), "#!/bin/sh\n", 0644);
	r = hostop(c, "\"operation\":\"chmod\",\"path\":\"%s\",\"mode\":\"0755\"", f);
	expect_ok(r, true);
	cJSON_Delete(r);
	assert_int_equal(lmode(f) & 07777, 0755);
	OK(c, "\"operation\":\"chmod\",\"path\":\"%s\",\"mode\":384", f);	/* 0600 */
	assert_int_equal(lmode(f) & 07777, 0600);
	/* Not subject to the umask: chmod(2). */
	OK(c, "\"operation\":\"chmod\",\"path\":\"%s\",\"mode\":\"666\"", f);
	assert_int_equal(lmode(f) & 07777, 0666);
	assert_content(f, "#!/bin/sh\n");
	/* A final symlink is followed. */
	assert_int_equal(symlink("script", path_in(l, sizeof(l), c->ws, "script-link")), 0);
	OK(c, "\"operation\":\"chmod\",\"path\":\"%s\",\"mode\":\"0700\"", l);
	assert_int_equal(lmode(f) & 07777, 0700);
	assert_true(S_ISLNK(lmode(l)));
	/* A directory. */
	mkdir_ok(path_in(d, sizeof(d), c->ws, "dir"));
	OK(c, "\"operation\":\"chmod\",\"path\":\"%s\",\"mode\":\"0711\"", d);
	assert_int_equal(lmode(d) & 07777, 0711);
}

static void chmod_missing_is_enoent(void **state)
{
	struct fsbt_core *c = *state;
	char f[PATH_MAX];

	FAILS(c, "ENOENT", "\"operation\":\"chmod\",\"path\":\"%s\",\"mode\":\"0644\"",
	      path_in(f, sizeof(f), c->ws, "missing"));
	assert_absent(f);
}

static void chmod_outside_policy_is_refused(void **state)
{
	struct fsbt_core *c = *state;
	char key[PATH_MAX], out[PATH_MAX], l[PATH_MAX];

	path_in(key, sizeof(key), c->home, ".ssh/id_ed25519");
	DENIED(c, "\"operation\":\"chmod\",\"path\":\"%s\",\"mode\":\"0644\"", key);
	assert_int_equal(lmode(key) & 07777, 0600);
	/* Outside every allowed tree. */
	write_mode(path_in(out, sizeof(out), c->dir, "outside.txt"), "o\n", 0644);
	DENIED(c, "\"operation\":\"chmod\",\"path\":\"%s\",\"mode\":\"0777\"", out);
	assert_int_equal(lmode(out) & 07777, 0644);
	/* Through a symlink in the workspace: the real path is judged. */
	assert_int_equal(symlink(out, path_in(l, sizeof(l), c->ws, "to-outside")), 0);
	DENIED(c, "\"operation\":\"chmod\",\"path\":\"%s\",\"mode\":\"0777\"", l);
	assert_int_equal(lmode(out) & 07777, 0644);
}

/* ------------------------------------------------------------------------ */
/* link */

static void link_hard_makes_a_second_name_for_the_same_inode(void **state)
{
	struct fsbt_core *c = *state;
	char a[PATH_MAX], b[PATH_MAX];
	struct stat s1, s2;
	cJSON *r;

	fsbt_write_file(path_in(a, sizeof(a), c->ws, "orig"), "same inode\n");
	r = hostop(c, "\"operation\":\"link\",\"from\":\"%s\",\"to\":\"%s\"", a,
		   path_in(b, sizeof(b), c->ws, "second"));
	expect_ok(r, true);
	cJSON_Delete(r);
	assert_int_equal(lstat(a, &s1), 0);
	assert_int_equal(lstat(b, &s2), 0);
	assert_true(s1.st_dev == s2.st_dev && s1.st_ino == s2.st_ino);
	assert_int_equal(s1.st_nlink, 2);
	/* A third name for it waits for approval (hardlinks = "ask"). */
	r = hostop(c, "\"operation\":\"link\",\"from\":\"%s\",\"to\":\"%s\"", a,
		   path_in(b, sizeof(b), c->ws, "third"));
	expect_denied(r);
	assert_string_equal(fsbt_str(r, "rule"), "hardlinks ask");
	assert_true(fsbt_str(r, "blockId")[0] != '\0');
	cJSON_Delete(r);
	assert_absent(b);
	/* "symbolic": false is a hard link too. */
	fsbt_write_file(path_in(a, sizeof(a), c->ws, "orig2"), "another\n");
	OK(c, "\"operation\":\"link\",\"from\":\"%s\",\"to\":\"%s\",\"symbolic\":false", a,
	   path_in(b, sizeof(b), c->ws, "fourth"));
	assert_int_equal(lstat(a, &s1), 0);
	assert_int_equal(lstat(b, &s2), 0);
	assert_true(S_ISREG(s2.st_mode) && s1.st_ino == s2.st_ino);
}

static void link_symbolic_keeps_a_relative_target_as_given(void **state)
{
	struct fsbt_core *c = *state;
	char l[PATH_MAX], got[PATH_MAX], d[PATH_MAX];
	ssize_t n;

	mkdir_ok(path_in(d, sizeof(d), c->ws, "sub"));
	OK(c, "\"operation\":\"link\",\"from\":\"../x/./y//z\",\"to\":\"%s\",\"symbolic\":true",
	   path_in(l, sizeof(l), c->ws, "sub/rel"));
	assert_true(S_ISLNK(lmode(l)));
	n = readlink(l, got, sizeof(got) - 1);
	assert_true(n > 0);
	got[n] = '\0';
	assert_string_equal(got, "../x/./y//z");
	/* An absolute target, even one the policy would deny, is only text. */
	OK(c, "\"operation\":\"link\",\"from\":\"/etc/passwd\",\"to\":\"%s\",\"symbolic\":true",
	   path_in(l, sizeof(l), c->ws, "abs"));
	n = readlink(l, got, sizeof(got) - 1);
	assert_true(n > 0);
	got[n] = '\0';
	assert_string_equal(got, "/etc/passwd");
}

static void link_onto_an_existing_name_is_eexist(void **state)
{
	struct fsbt_core *c = *state;
	char a[PATH_MAX], b[PATH_MAX];

	fsbt_write_file(path_in(a, sizeof(a), c->ws, "src"), "src\n");
	fsbt_write_file(path_in(b, sizeof(b), c->ws, "taken"), "taken\n");
	FAILS(c, "EEXIST", "\"operation\":\"link\",\"from\":\"%s\",\"to\":\"%s\"", a, b);
	FAILS(c, "EEXIST", "\"operation\":\"link\",\"from\":\"src\",\"to\":\"%s\",\"symbolic\":true",
	      b);
	assert_content(b, "taken\n");
	assert_true(S_ISREG(lmode(b)));
	/* A dangling symlink is a name that exists too. */
	assert_int_equal(symlink("nowhere", path_in(b, sizeof(b), c->ws, "dangling")), 0);
	FAILS(c, "EEXIST", "\"operation\":\"link\",\"from\":\"%s\",\"to\":\"%s\"", a, b);
	assert_true(S_ISLNK(lmode(b)));
}

static void link_hard_to_a_denied_file_is_refused(void **state)
{
	struct fsbt_core *c = *state;
	char key[PATH_MAX], b[PATH_MAX], out[PATH_MAX];
	struct stat st;

	path_in(key, sizeof(key), c->home, ".ssh/id_ed25519");
	DENIED(c, "\"operation\":\"link\",\"from\":\"%s\",\"to\":\"%s\"", key,
	       path_in(b, sizeof(b), c->ws, "key"));
	assert_absent(b);
	assert_int_equal(lstat(key, &st), 0);
	assert_int_equal(st.st_nlink, 1);
	/* Readable but not modifiable: a new name is a way to write it. */
	fsbt_write_file(path_in(out, sizeof(out), c->dir, "outside.txt"), "o\n");
	DENIED(c, "\"operation\":\"link\",\"from\":\"%s\",\"to\":\"%s\"", out, b);
	assert_absent(b);
	/* A symlink named .env: the target name is judged. */
	DENIED(c, "\"operation\":\"link\",\"from\":\"x\",\"to\":\"%s\",\"symbolic\":true",
	       path_in(b, sizeof(b), c->ws, ".env"));
	assert_absent(b);
}

static void link_hard_to_a_directory_is_eperm(void **state)
{
	struct fsbt_core *c = *state;
	char d[PATH_MAX], b[PATH_MAX];

	mkdir_ok(path_in(d, sizeof(d), c->ws, "adir"));
	FAILS(c, "EPERM", "\"operation\":\"link\",\"from\":\"%s\",\"to\":\"%s\"", d,
	      path_in(b, sizeof(b), c->ws, "dirlink"));
	assert_absent(b);
}

/* ------------------------------------------------------------------------ */
/* touch */

static void touch_existing_sets_the_times_and_keeps_the_content(void **state)
{
	struct fsbt_core *c = *state;
	char f[PATH_MAX];
	struct stat st;
	time_t now = time(NULL);

	write_mode(path_in(f, sizeof(f), c->ws, "old.txt"), "old content\n", 0640);
	set_mtime(f, 946684800, 123);	/* 2000-01-01 */
	OK(c, "\"operation\":\"touch\",\"path\":\"%s\"", f);
	assert_int_equal(lstat(f, &st), 0);
	assert_true(st.st_mtim.tv_sec >= now - 5 && st.st_mtim.tv_sec <= now + 60);
	assert_true(st.st_atim.tv_sec >= now - 5 && st.st_atim.tv_sec <= now + 60);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_content(f, "old content\n");
}

static void touch_new_creates_an_empty_file(void **state)
{
	struct fsbt_core *c = *state;
	char f[PATH_MAX], d[PATH_MAX];
	struct stat st;

	OK(c, "\"operation\":\"touch\",\"path\":\"%s\"", path_in(f, sizeof(f), c->ws, "new.txt"));
	assert_int_equal(lstat(f, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_size, 0);
	assert_int_equal(st.st_mode & 07777, 0666 & ~UMASK);
	/* In a directory that does not exist: as the system call says. */
	FAILS(c, "ENOENT", "\"operation\":\"touch\",\"path\":\"%s\"",
	      path_in(d, sizeof(d), c->ws, "no-dir/new.txt"));
	/* Outside policy: nothing made. */
	DENIED(c, "\"operation\":\"touch\",\"path\":\"%s\"",
	       path_in(d, sizeof(d), c->dir, "outside-new"));
	assert_absent(d);
}

/* ------------------------------------------------------------------------ */
/* Names that are not UTF-8 */

static void non_utf8_name_is_deleted_through_path_bytes(void **state)
{
	struct fsbt_core *c = *state;
	char raw[PATH_MAX], enc[PATH_MAX];
	const cJSON *plain;
	cJSON *r;

	snprintf(raw, sizeof(raw), "%s/caf\xe9", c->ws);
	fsbt_write_file(raw, "latin-1 name\n");
	/* The workspace path holds no byte that needs encoding (mkdtemp). */
	snprintf(enc, sizeof(enc), "%s/caf%%E9", c->ws);
	r = hostop(c, "\"operation\":\"delete\",\"pathBytes\":\"%s\",\"deleteMode\":\"unlink\"",
		   enc);
	expect_ok(r, true);
	assert_string_equal(fsbt_str(r, "pathBytes"), enc);
	plain = cJSON_GetObjectItemCaseSensitive(r, "path");
	assert_null(plain);
	cJSON_Delete(r);
	assert_absent(raw);

	/* Lowercase hex is the same byte; the reply uses uppercase. */
	fsbt_write_file(raw, "again\n");
	snprintf(enc, sizeof(enc), "%s/caf%%e9", c->ws);
	r = hostop(c, "\"operation\":\"chmod\",\"pathBytes\":\"%s\",\"mode\":\"0600\"", enc);
	expect_ok(r, true);
	snprintf(enc, sizeof(enc), "%s/caf%%E9", c->ws);
	assert_string_equal(fsbt_str(r, "pathBytes"), enc);
	cJSON_Delete(r);
	assert_int_equal(lmode(raw) & 07777, 0600);
}

/* Percent-decode `s` into `out` (as the trash specification encodes). */
static void percent_decode(const char *s, char *out, size_t size)
{
	size_t n = 0;

	for (; *s != '\0' && n + 1 < size; s++) {
		unsigned v;

		if (*s == '%' && sscanf(s + 1, "%2x", &v) == 1) {
			out[n++] = (char)v;
			s += 2;
		} else {
			out[n++] = *s;
		}
	}
	out[n] = '\0';
}

static void trash_of_a_non_utf8_name_encodes_its_trashinfo_path(void **state)
{
	struct fsbt_core *c = *state;
	char raw[PATH_MAX], enc[PATH_MAX], files[PATH_MAX], info[PATH_MAX], got[PATH_MAX];
	char *text, *line;
	cJSON *r;

	snprintf(raw, sizeof(raw), "%s/caf\xe9 100%%", c->ws);
	fsbt_write_file(raw, "latin-1\n");
	snprintf(enc, sizeof(enc), "%s/caf%%E9%%20100%%25", c->ws);
	r = hostop(c, "\"operation\":\"delete\",\"pathBytes\":\"%s\"", enc);
	expect_ok(r, true);
	assert_absent(raw);
	/* The reply names the trashed path in its …Bytes form too. */
	trash_dir(c, files, sizeof(files), "files/caf\xe9 100%");
	percent_decode(fsbt_str(r, "trashedToBytes"), got, sizeof(got));
	if (strcmp(got, files) != 0) {
		char *s = cJSON_PrintUnformatted(r);

		fail_msg("trashedToBytes should decode to the trashed path: %s", s);
	}
	cJSON_Delete(r);
	assert_content(files, "latin-1\n");
	/* Path= is percent-encoded: no raw byte above 0x7f, no space, and it
	 * decodes to the path deleted. */
	trash_dir(c, info, sizeof(info), "info/caf\xe9 100%.trashinfo");
	text = fsbt_read_file(info, NULL);
	assert_non_null(text);
	line = strstr(text, "\nPath=");
	assert_non_null(line);
	line += 6;
	line[strcspn(line, "\n")] = '\0';
	for (const char *q = line; *q; q++)
		if ((unsigned char)*q > 0x7e || *q == ' ')
			fail_msg("Path=%s holds a byte that is not percent-encoded", line);
	percent_decode(line, got, sizeof(got));
	assert_string_equal(got, raw);
	free(text);
}

/* A name holding a newline cannot add a line to its .trashinfo. */
static void trash_of_a_name_with_a_newline_keeps_its_trashinfo_one_path(void **state)
{
	struct fsbt_core *c = *state;
	char raw[PATH_MAX], info[PATH_MAX], got[PATH_MAX];
	char *text, *save = NULL;
	int paths = 0;

	snprintf(raw, sizeof(raw), "%s/evil\nPath=injected", c->ws);
	fsbt_write_file(raw, "x\n");
	OK(c, "\"operation\":\"delete\",\"path\":\"%s/evil\\nPath=injected\"", c->ws);
	assert_absent(raw);
	trash_dir(c, info, sizeof(info), "info/evil\nPath=injected.trashinfo");
	text = fsbt_read_file(info, NULL);
	assert_non_null(text);
	for (char *line = strtok_r(text, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		if (!fsbt_starts(line, "Path="))
			continue;
		paths++;
		percent_decode(line + 5, got, sizeof(got));
		assert_string_equal(got, raw);
	}
	assert_int_equal(paths, 1);
	free(text);
}

/* A change elsewhere in home waits for the user (the default pack's
 * ask.modify): refused with a prompt block, done once approved. */
static void touch_in_home_waits_for_approval_and_runs_once_approved(void **state)
{
	struct fsbt_core *c = *state;
	char f[PATH_MAX], blk[64];
	cJSON *r;

	path_in(f, sizeof(f), c->home, "notes.txt");
	r = hostop(c, "\"operation\":\"touch\",\"path\":\"%s\"", f);
	expect_denied(r);
	assert_string_equal(fsbt_str(r, "rule"), "ask.modify ~/**");
	snprintf(blk, sizeof(blk), "%s", fsbt_str(r, "blockId"));
	assert_true(blk[0] != '\0');
	cJSON_Delete(r);
	assert_absent(f);
	r = fsbt_control_cmd(c, "Approve", "\"blockId\":\"%s\",\"scope\":\"once\"", blk);
	assert_true(fsbt_ok(r));
	cJSON_Delete(r);
	OK(c, "\"operation\":\"touch\",\"path\":\"%s\"", f);
	assert_true(S_ISREG(lmode(f)));
}

/* The backup of what an operation overwrites in place is over the size
 * limit, and the default pack says ask: the operation waits for the host
 * (EACCES, the block, the rule), and nothing happens until the host
 * approves; once approved, it goes ahead without a copy. A delete to the
 * trash copies too (the file lives on there), so it asks as well. */
static void operation_whose_backup_is_too_large_waits_for_approval(void **state)
{
	struct fsbt_core *c = *state;
	size_t big = 2u << 20, len = 0;
	char *data = malloc(big + 1), *after;
	char bigp[PATH_MAX], small[PATH_MAX], files[PATH_MAX], blk[32];
	cJSON *r;

	assert_non_null(data);
	memset(data, 'z', big);
	data[big] = '\0';
	fsbt_write_file(path_in(bigp, sizeof(bigp), c->ws, "big.bin"), data);
	fsbt_write_file(path_in(small, sizeof(small), c->ws, "small.txt"), "small\n");
	r = fsbt_control_cmd(c, "EnableModifyBackup", "\"enabled\":true,\"fileBackupMaxSizeMB\":1");
	assert_true(fsbt_ok(r));
	cJSON_Delete(r);

	r = hostop(c, "\"operation\":\"copy\",\"from\":\"%s\",\"to\":\"%s\"", small, bigp);
	if (fsbt_ok(r)) {
		cJSON_Delete(r);
		free(data);
		/* A reflink costs no space, so no limit applies. */
		fsbt_skip("the workspace's filesystem makes reflinks: the size limit does not apply");
	}
	expect_denied(r);
	assert_string_equal(fsbt_str(r, "rule"), "backup.onTooLarge ask");
	snprintf(blk, sizeof(blk), "%s", fsbt_str(r, "blockId"));
	assert_true(blk[0] != '\0');
	cJSON_Delete(r);
	DENIED(c, "\"operation\":\"delete\",\"path\":\"%s\",\"deleteMode\":\"trash\"", bigp);
	assert_content(small, "small\n");
	after = fsbt_read_file(bigp, &len);
	assert_int_equal(len, big);
	assert_memory_equal(after, data, big);
	free(after);
	free(data);
	trash_dir(c, files, sizeof(files), "files/big.bin");
	assert_absent(files);

	/* Approved once: the copy goes ahead, without a backup. */
	r = fsbt_control_cmd(c, "Approve", "\"blockId\":\"%s\",\"scope\":\"once\"", blk);
	assert_true(fsbt_ok(r));
	cJSON_Delete(r);
	OK(c, "\"operation\":\"copy\",\"from\":\"%s\",\"to\":\"%s\"", small, bigp);
	assert_content(bigp, "small\n");
}

/* Write `len` bytes to a new file at `path`. */
static void write_bytes(const char *path, const char *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
}

/* Bytes of the regular files under `dir` whose inode is not one of the
 * workspace's (`ino_a`, `ino_b`): what the store copied. */
static long long copied_bytes(const char *dir, ino_t ino_a, ino_t ino_b)
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
			n += copied_bytes(path, ino_a, ino_b);
		else if (S_ISREG(st.st_mode) && st.st_ino != ino_a && st.st_ino != ino_b)
			n += st.st_size;
	}
	closedir(d);
	return n;
}

/*
 * Regression: with typescript installed (tsserverlibrary.js is over 10
 * MiB), `rm -rf node_modules` and `npm ci` failed on the default pack: a
 * delete or a rename over a file bigger than maxSizeMB was refused. Those
 * keep the file's inode by link, no copy, so the limit never applies; the
 * store grows by no byte, and a restore brings both files back.
 */
static void delete_and_rename_over_an_11_mib_file_with_max_size_10_succeed_and_restore(
	void **state)
{
	struct fsbt_core *c = *state;
	size_t big = 11u << 20, len = 0;
	char *a = malloc(big), *b = malloc(big), *got, *out = NULL, diff[4096];
	char pa[PATH_MAX], pb[PATH_MAX], pn[PATH_MAX], objects[PATH_MAX * 2];
	struct fsbt_tree before, after;
	struct stat sa, sb;
	int status;
	cJSON *r;

	assert_non_null(a);
	assert_non_null(b);
	memset(a, 'a', big);
	memset(b, 'b', big);
	assert_int_equal(mkdir(path_in(pa, sizeof(pa), c->ws, "node_modules"), 0755), 0);
	write_bytes(path_in(pa, sizeof(pa), c->ws, "node_modules/tsserverlibrary.js"), a, big);
	write_bytes(path_in(pb, sizeof(pb), c->ws, "node_modules/typescript.js"), b, big);
	fsbt_write_file(path_in(pn, sizeof(pn), c->ws, "node_modules/new.js"), "new\n");
	assert_int_equal(stat(pa, &sa), 0);
	assert_int_equal(stat(pb, &sb), 0);
	r = fsbt_control_cmd(c, "EnableModifyBackup", "\"enabled\":true,\"fileBackupMaxSizeMB\":10");
	assert_true(fsbt_ok(r));
	cJSON_Delete(r);
	assert_int_equal(fsbt_tree_snap(c->ws, &before), 0);

	OK(c, "\"operation\":\"delete\",\"path\":\"%s\",\"deleteMode\":\"unlink\"", pa);
	OK(c, "\"operation\":\"rename\",\"from\":\"%s\",\"to\":\"%s\"", pn, pb);
	assert_absent(pa);
	assert_content(pb, "new\n");
	/* The two big files are kept, not copied, and the rename's source is
	 * journaled as moved (it lives on under its new name): no byte is
	 * copied into the store. */
	snprintf(objects, sizeof(objects), "%s/sessions/%s/modify_backup/objects", c->state,
		 c->session);
	assert_int_equal(copied_bytes(objects, sa.st_ino, sb.st_ino), 0);
	r = fsbt_control_cmd(c, "CommitModifyBackup", "\"commitMsg\":\"npm ci\"");
	cJSON_Delete(r);

	status = fsbt_run((char *[]){ (char *)fsbt_binary(), "backup", "restore", "--last",
				      "--state-dir", c->state, "--session", c->session, NULL }, &out);
	if (status != 0)
		fprintf(stderr, "# restore said:\n%s", out);
	assert_int_equal(status, 0);
	free(out);
	got = fsbt_read_file(pa, &len);
	assert_int_equal(len, big);
	assert_memory_equal(got, a, big);
	free(got);
	got = fsbt_read_file(pb, &len);
	assert_int_equal(len, big);
	assert_memory_equal(got, b, big);
	free(got);
	assert_int_equal(fsbt_tree_snap(c->ws, &after), 0);
	if (fsbt_tree_diff(&before, &after, FSBT_TREE_MTIME, diff, sizeof(diff)) != 0)
		fail_msg("the restored tree differs:\n%s", diff);
	fsbt_tree_free(&before);
	fsbt_tree_free(&after);
	free(a);
	free(b);
}

/* ------------------------------------------------------------------------ */
/* Restore */

/* A turn of host operations, then one restore: the workspace is back as it
 * was, contents, modes, times, and the trashed file in its place. */
static void restore_after_a_series_of_host_ops_puts_everything_back(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX], q[PATH_MAX], t[PATH_MAX], buf[8192];
	struct fsbt_tree before, after;
	struct stat st;

	write_mode(path_in(p, sizeof(p), c->ws, "trashed.txt"), "trash me\n", 0640);
	write_mode(path_in(p, sizeof(p), c->ws, "unlinked.txt"), "unlink me\n", 0600);
	write_mode(path_in(p, sizeof(p), c->ws, "mode.txt"), "mode\n", 0644);
	write_mode(path_in(p, sizeof(p), c->ws, "src.txt"), "source\n", 0644);
	write_mode(path_in(p, sizeof(p), c->ws, "dst.txt"), "destination\n", 0600);
	write_mode(path_in(p, sizeof(p), c->ws, "c-src.txt"), "copy source\n", 0644);
	write_mode(path_in(p, sizeof(p), c->ws, "c-dst.txt"), "copy destination\n", 0640);
	write_mode(path_in(p, sizeof(p), c->ws, "touched.txt"), "touched\n", 0644);
	write_mode(path_in(p, sizeof(p), c->ws, "linked.txt"), "linked\n", 0644);
	make_tree(path_in(t, sizeof(t), c->ws, "tree"));
	make_tree(path_in(t, sizeof(t), c->ws, "ttree"));
	make_tree(path_in(t, sizeof(t), c->ws, "mtree"));
	/* Times in the past, so that "put back" is distinguishable from "now". */
	set_mtime(path_in(p, sizeof(p), c->ws, "touched.txt"), 1000000000, 5);
	set_mtime(path_in(p, sizeof(p), c->ws, "trashed.txt"), 1000000001, 6);
	set_mtime(path_in(p, sizeof(p), c->ws, "dst.txt"), 1000000002, 7);
	set_mtime(path_in(p, sizeof(p), c->ws, "c-dst.txt"), 1000000003, 8);
	set_mtime(path_in(p, sizeof(p), c->ws, "tree/sub/b.txt"), 1000000004, 9);
	set_mtime(path_in(p, sizeof(p), c->ws, "tree/link"), 1000000005, 10);
	assert_int_equal(fsbt_tree_snap(c->ws, &before), 0);

	OK(c, "\"operation\":\"delete\",\"path\":\"%s\"", path_in(p, sizeof(p), c->ws, "trashed.txt"));
	OK(c, "\"operation\":\"delete\",\"path\":\"%s\",\"deleteMode\":\"unlink\"",
	   path_in(p, sizeof(p), c->ws, "unlinked.txt"));
	OK(c, "\"operation\":\"chmod\",\"path\":\"%s\",\"mode\":\"0600\"",
	   path_in(p, sizeof(p), c->ws, "mode.txt"));
	OK(c, "\"operation\":\"rename\",\"from\":\"%s\",\"to\":\"%s\"",
	   path_in(p, sizeof(p), c->ws, "src.txt"), path_in(q, sizeof(q), c->ws, "dst.txt"));
	OK(c, "\"operation\":\"copy\",\"from\":\"%s\",\"to\":\"%s\"",
	   path_in(p, sizeof(p), c->ws, "c-src.txt"), path_in(q, sizeof(q), c->ws, "c-dst.txt"));
	OK(c, "\"operation\":\"touch\",\"path\":\"%s\"", path_in(p, sizeof(p), c->ws, "touched.txt"));
	OK(c, "\"operation\":\"touch\",\"path\":\"%s\"", path_in(p, sizeof(p), c->ws, "created.txt"));
	OK(c, "\"operation\":\"mkdir\",\"path\":\"%s\",\"recursive\":true",
	   path_in(p, sizeof(p), c->ws, "made/deeper"));
	OK(c, "\"operation\":\"link\",\"from\":\"%s\",\"to\":\"%s\"",
	   path_in(p, sizeof(p), c->ws, "linked.txt"), path_in(q, sizeof(q), c->ws, "hard.txt"));
	OK(c, "\"operation\":\"link\",\"from\":\"linked.txt\",\"to\":\"%s\",\"symbolic\":true",
	   path_in(p, sizeof(p), c->ws, "soft"));
	OK(c, "\"operation\":\"delete\",\"path\":\"%s\",\"recursive\":true,\"deleteMode\":\"unlink\"",
	   path_in(p, sizeof(p), c->ws, "tree"));
	OK(c, "\"operation\":\"delete\",\"path\":\"%s\",\"recursive\":true",
	   path_in(p, sizeof(p), c->ws, "ttree"));
	OK(c, "\"operation\":\"rename\",\"from\":\"%s\",\"to\":\"%s\"",
	   path_in(p, sizeof(p), c->ws, "mtree"), path_in(q, sizeof(q), c->ws, "moved-tree"));
	OK(c, "\"operation\":\"copy\",\"from\":\"%s\",\"to\":\"%s\",\"recursive\":true",
	   path_in(p, sizeof(p), c->ws, "moved-tree"), path_in(q, sizeof(q), c->ws, "copied-tree"));
	assert_int_equal(lstat(path_in(p, sizeof(p), c->ws, "trashed.txt"), &st), -1);

	commit(c);
	assert_int_equal(restore_last(c), 0);
	assert_int_equal(fsbt_tree_snap(c->ws, &after), 0);
	/* Directory mtimes are not compared: restore does not put back the
	 * mtime of a directory whose entries it changed. */
	if (fsbt_tree_diff(&before, &after, FSBT_TREE_MTIME | FSBT_TREE_NLINK, buf, sizeof(buf)))
		fail_msg("after restore the workspace differs from before the turn:\n%s", buf);
	fsbt_tree_free(&before);
	fsbt_tree_free(&after);
}

/* restore --tool-call undoes what one tool call's host operations did and
 * leaves the others' alone. */
static void restore_of_one_tool_call_undoes_only_its_host_ops(void **state)
{
	struct fsbt_core *c = *state;
	char a[PATH_MAX], b[PATH_MAX], n[PATH_MAX], *out = NULL;
	int status;
	cJSON *r;

	write_mode(path_in(a, sizeof(a), c->ws, "a.txt"), "a before\n", 0644);
	write_mode(path_in(b, sizeof(b), c->ws, "b.txt"), "b before\n", 0644);
	r = hostop_tc(c, "tc-A", "\"operation\":\"chmod\",\"path\":\"%s\",\"mode\":\"0600\"", a);
	expect_ok(r, true);
	cJSON_Delete(r);
	r = hostop_tc(c, "tc-A", "\"operation\":\"touch\",\"path\":\"%s\"",
		      path_in(n, sizeof(n), c->ws, "made-by-A"));
	expect_ok(r, true);
	cJSON_Delete(r);
	r = hostop_tc(c, "tc-B", "\"operation\":\"delete\",\"path\":\"%s\",\"deleteMode\":\"unlink\"",
		      b);
	expect_ok(r, true);
	cJSON_Delete(r);
	commit(c);
	status = fsbt_run((char *[]){ (char *)fsbt_binary(), "backup", "restore", "--last",
				      "--tool-call", "tc-A", "--state-dir", c->state, "--session",
				      c->session, NULL },
			  &out);
	if (status != 0)
		fprintf(stderr, "# restore --tool-call tc-A said:\n%s", out);
	free(out);
	assert_int_equal(status, 0);
	assert_int_equal(lmode(a) & 07777, 0644);
	assert_absent(n);
	/* tc-B's delete stays. */
	assert_absent(b);
}

/* Host operations are audited in the session's hash-chained log, and the
 * chain still verifies after them. */
static void host_ops_keep_the_audit_chain_verifiable(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX], q[PATH_MAX], audit[PATH_MAX + 160], *log, *out = NULL;
	int status;

	fsbt_write_file(path_in(p, sizeof(p), c->ws, "x.txt"), "x\n");
	OK(c, "\"operation\":\"rename\",\"from\":\"%s\",\"to\":\"%s\"", p,
	   path_in(q, sizeof(q), c->ws, "y.txt"));
	DENIED(c, "\"operation\":\"delete\",\"path\":\"%s/.ssh/id_ed25519\"", c->home);
	FAILS(c, "ENOENT", "\"operation\":\"chmod\",\"path\":\"%s\",\"mode\":\"0600\"", p);
	snprintf(audit, sizeof(audit), "%s/audit/%s.jsonl", c->state, c->session);
	log = fsbt_read_file(audit, NULL);
	assert_non_null(log);
	assert_non_null(strstr(log, "y.txt"));
	assert_non_null(strstr(log, "id_ed25519"));
	free(log);
	status = fsbt_run((char *[]){ (char *)fsbt_binary(), "audit", "verify", audit, NULL }, &out);
	if (status != 0)
		fprintf(stderr, "# audit verify said:\n%s", out);
	free(out);
	assert_int_equal(status, 0);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
#define TM(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown_mount)
	const struct CMUnitTest tests[] = {
		T(delete_trash_moves_the_file_to_the_home_trash_with_its_trashinfo),
		T(delete_trash_never_replaces_an_orphan_in_the_trash),
		T(trash_never_goes_through_a_symlink),
		T(delete_unlink_removes_the_file_and_trashes_nothing),
		T(delete_empty_directory_needs_no_recursive),
		T(delete_nonempty_directory_without_recursive_is_enotempty_and_untouched),
		T(delete_recursive_unlink_removes_the_whole_tree),
		T(delete_recursive_trash_moves_the_whole_tree),
		T(delete_missing_is_enoent_and_force_makes_it_a_no_change_success),
		T(delete_final_symlink_removes_the_link_not_its_target),
		T(delete_recursive_does_not_follow_symlinks_inside_the_tree),
		T(delete_directory_holding_a_denied_entry_is_refused_whole),
		T(delete_outside_policy_is_refused_and_the_file_stays),
		TM(delete_trash_on_another_filesystem_uses_its_top_directory),
		T(mkdir_makes_the_directory_with_mode_minus_umask),
		T(mkdir_existing_is_eexist_unless_recursive),
		T(mkdir_recursive_makes_the_parents),
		T(mkdir_missing_parent_without_recursive_is_enoent),
		T(mkdir_outside_policy_is_refused),
		T(rename_moves_a_file),
		T(rename_over_a_file_backs_it_up_and_restore_brings_both_back),
		T(rename_moves_a_directory_with_its_content),
		T(rename_onto_a_git_dir_is_refused_and_away_from_one_is_not),
		T(rename_directory_with_an_entry_denied_under_its_new_name_is_refused),
		T(rename_onto_a_symlink_replaces_the_link_not_its_target),
		T(rename_of_a_directory_onto_a_symlink_fails_and_leaves_a_clean_cycle),
		T(rename_missing_source_is_enoent),
		TM(rename_across_filesystems_is_exdev),
		TM(move_across_filesystems_by_copy_and_delete_is_restored),
		TM(recursive_ops_stop_at_a_mount_inside_the_tree),
		T(rename_of_a_symlink_moves_the_link),
		T(copy_file_copies_content_and_mode),
		T(copy_over_a_file_backs_it_up_first),
		T(copy_directory_without_recursive_is_eisdir),
		T(copy_recursive_copies_symlinks_and_fifos_as_such),
		T(copy_tree_with_a_denied_entry_is_refused_and_copies_nothing),
		T(copy_onto_an_existing_directory_is_eexist_and_a_file_onto_one_is_eisdir),
		T(copy_onto_a_symlink_never_writes_its_target),
		T(copy_of_a_file_onto_itself_keeps_its_content),
		T(copy_missing_source_is_enoent),
		T(copy_tree_with_a_socket_is_eperm_and_copies_nothing),
		T(chmod_sets_the_permission_bits),
		T(chmod_missing_is_enoent),
		T(chmod_outside_policy_is_refused),
		T(link_hard_makes_a_second_name_for_the_same_inode),
		T(link_symbolic_keeps_a_relative_target_as_given),
		T(link_onto_an_existing_name_is_eexist),
		T(link_hard_to_a_denied_file_is_refused),
		T(link_hard_to_a_directory_is_eperm),
		T(touch_existing_sets_the_times_and_keeps_the_content),
		T(touch_new_creates_an_empty_file),
		T(non_utf8_name_is_deleted_through_path_bytes),
		T(trash_of_a_non_utf8_name_encodes_its_trashinfo_path),
		T(trash_of_a_name_with_a_newline_keeps_its_trashinfo_one_path),
		T(touch_in_home_waits_for_approval_and_runs_once_approved),
		T(operation_whose_backup_is_too_large_waits_for_approval),
		T(delete_and_rename_over_an_11_mib_file_with_max_size_10_succeed_and_restore),
		T(restore_after_a_series_of_host_ops_puts_everything_back),
		T(restore_of_one_tool_call_undoes_only_its_host_ops),
		T(host_ops_keep_the_audit_chain_verifiable),
	};

	/* The core inherits the umask; mkdir and touch results depend on it. */
	umask(UMASK);
	return fsbt_run_group(tests, NULL, NULL);
}
