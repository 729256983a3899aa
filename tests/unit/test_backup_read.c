/*
 * test_backup_read.c — reading a backup store written by hand exactly as
 * docs/backup-store.md lays it out: sessions and cycles found, a cycle's
 * journal and cycle.json loaded, malformed lines reported with file:line,
 * the first record of each path (or of a tool call) chosen, no end states
 * for a recovered cycle, objects checked against their SHA-256 names and
 * refused when they are not regular files, xattrs decoded from base64.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unit.h"
#include "audit.h"
#include "backup_read.h"

struct fx {
	char dir[64];		/* the state dir */
	char store[PATH_MAX];	/* <dir>/sessions/s1/modify_backup */
};

static void mkdirs(const char *path)
{
	char buf[PATH_MAX];

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(buf, 0700);
		*p = '/';
	}
	mkdir(buf, 0700);
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	if (f == NULL)
		return -1;
	strcpy(f->dir, "/tmp/fsb-bkread-XXXXXX");
	if (mkdtemp(f->dir) == NULL) {
		free(f);
		return -1;
	}
	snprintf(f->store, sizeof(f->store), "%s/sessions/s1/modify_backup", f->dir);
	mkdirs(f->store);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	if (system(cmd) != 0)
		return -1;
	free(f);
	return 0;
}

/* Store `content` as an object named by its SHA-256; the name into `hex`. */
static void put_object(const struct fx *f, const char *content, char hex[65])
{
	char path[PATH_MAX + 80];

	fsb_sha256_hex(content, strlen(content), hex);
	snprintf(path, sizeof(path), "%s/objects/%.2s", f->store, hex);
	mkdirs(path);
	snprintf(path, sizeof(path), "%s/objects/%.2s/%s", f->store, hex, hex);
	write_text(path, content);
	chmod(path, 0400);
}

static void cycle_file(const struct fx *f, unsigned n, const char *name, const char *text)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/cycles/%u", f->store, n);
	mkdirs(path);
	snprintf(path, sizeof(path), "%s/cycles/%u/%s", f->store, n, name);
	write_text(path, text);
}

/* One journal line as the doc has it, with a prior of a backed-up file. */
static void file_rec(char *buf, size_t len, unsigned seq, const char *tc, const char *op,
		     const char *resolved, const char *hex, unsigned size)
{
	snprintf(buf, len,
		 "{\"seq\":%u,\"time\":\"2026-11-29T20:01:0%u.003Z\",\"toolCallId\":\"%s\","
		 "\"traceId\":\"tr\",\"op\":\"%s\",\"flags\":577,\"path\":\"%s\","
		 "\"resolved\":\"%s\",\"prior\":{\"exists\":true,\"type\":\"file\",\"dev\":2049,"
		 "\"ino\":%u,\"nlink\":1,\"mode\":416,\"uid\":1000,\"gid\":100,\"size\":%u,"
		 "\"atime\":[1795982500,7],\"mtime\":[1795982584,5000000],\"object\":\"%s\"},"
		 "\"ok\":true}\n",
		 seq, seq % 10, tc, op, resolved, resolved, 100 + seq, size, hex);
}

static void absent_rec(char *buf, size_t len, unsigned seq, const char *tc, const char *op,
		       const char *resolved)
{
	snprintf(buf, len,
		 "{\"seq\":%u,\"time\":\"2026-11-29T20:02:0%u.000Z\",\"toolCallId\":\"%s\","
		 "\"traceId\":\"\",\"op\":\"%s\",\"path\":\"%s\",\"resolved\":\"%s\","
		 "\"prior\":{\"exists\":false},\"ok\":true}\n",
		 seq, seq % 10, tc, op, resolved, resolved);
}

static void test_store_dir_refuses_bad_session_ids(void **state)
{
	char out[PATH_MAX];

	(void)state;
	assert_int_equal(fsb_backup_store_dir("/s", "abc", out, sizeof(out)), 0);
	assert_string_equal(out, "/s/sessions/abc/modify_backup");
	assert_int_equal(fsb_backup_store_dir("/s", "", out, sizeof(out)), -EINVAL);
	assert_int_equal(fsb_backup_store_dir("/s", "..", out, sizeof(out)), -EINVAL);
	assert_int_equal(fsb_backup_store_dir("/s", ".", out, sizeof(out)), -EINVAL);
	assert_int_equal(fsb_backup_store_dir("/s", "a/../../x", out, sizeof(out)), -EINVAL);
	assert_int_equal(fsb_backup_store_dir("/s", "abc", out, 10), -ENAMETOOLONG);
}

static void test_sessions_are_the_directories_sorted(void **state)
{
	struct fx *f = *state;
	char path[PATH_MAX], **names;
	size_t n;

	snprintf(path, sizeof(path), "%s/sessions/a0", f->dir);
	mkdirs(path);
	snprintf(path, sizeof(path), "%s/sessions/stray-file", f->dir);
	write_text(path, "x");
	assert_int_equal(fsb_backup_sessions(f->dir, &names, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(names[0], "a0");
	assert_string_equal(names[1], "s1");
	fsb_backup_sessions_free(names, n);
	assert_int_equal(fsb_backup_sessions("/nonexistent-fsb", &names, &n), -ENOENT);
}

static void test_cycles_listed_in_numeric_order(void **state)
{
	struct fx *f = *state;
	const char *dirs[] = { "10", "2", "1", "03", "tmp", "7x", "0" };
	char path[PATH_MAX + 32];
	unsigned *nums;
	size_t n;

	assert_int_equal(fsb_cycles_list(f->store, &nums, &n), 0);
	assert_int_equal(n, 0);	/* no cycles directory yet: no cycles */
	assert_null(nums);
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/cycles/%s", f->store, dirs[i]);
		mkdirs(path);
	}
	assert_int_equal(fsb_cycles_list(f->store, &nums, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(nums[0], 1);
	assert_int_equal(nums[1], 2);
	assert_int_equal(nums[2], 10);
	free(nums);
}

static void test_sealed_cycle_loads_every_field(void **state)
{
	struct fx *f = *state;
	char hex[65], line[2048], journal[8192] = "";
	struct fsb_cycle c;
	const struct fsb_journal_rec *r;
	const struct fsb_end_state *e;
	char err[512];

	put_object(f, "alpha\n", hex);
	file_rec(line, sizeof(line), 1, "tc-1", "write", "/w/a.txt", hex, 6);
	strcat(journal, line);
	absent_rec(line, sizeof(line), 2, "tc-1", "create", "/w/new.txt");
	strcat(journal, line);
	strcat(journal, "{\"seq\":3,\"time\":\"t\",\"toolCallId\":\"tc-2\",\"traceId\":\"\","
			"\"op\":\"symlink\",\"path\":\"/w/l\",\"resolved\":\"/w/l\","
			"\"prior\":{\"exists\":true,\"type\":\"symlink\",\"mode\":511,"
			"\"target\":\"../a.txt\"},\"ok\":false}\n");
	cycle_file(f, 3, "journal.jsonl", journal);
	cycle_file(f, 3, "cycle.json",
		   "{\"cycle\": 3, \"message\": \"npm install\", \"opened\": "
		   "\"2026-11-29T20:01:02.003Z\", \"sealed\": \"2026-11-29T20:03:04.005Z\", "
		   "\"auditHead\": \"" "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
		   "\", \"recovered\": false, \"paths\": {"
		   "\"/w/new.txt\": {\"exists\": true, \"type\": \"file\", \"size\": 4, "
		   "\"mtime\": [1795982590, 1], \"ino\": 77},"
		   "\"/w/a.txt\": {\"exists\": true, \"type\": \"file\", \"size\": 812, "
		   "\"mtime\": [1795982584, 5000000], \"ino\": 1234},"
		   "\"/w/l\": {\"exists\": false}}}");

	assert_int_equal(fsb_cycle_load(f->store, 3, &c, stderr, err, sizeof(err)), 0);
	assert_int_equal(c.number, 3);
	assert_int_equal(c.state, FSB_CYCLE_SEALED);
	assert_string_equal(fsb_cycle_state_name(c.state), "sealed");
	assert_string_equal(c.message, "npm install");
	assert_string_equal(c.opened, "2026-11-29T20:01:02.003Z");
	assert_string_equal(c.sealed, "2026-11-29T20:03:04.005Z");
	assert_string_equal(c.audit_head,
			    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
	assert_int_equal(c.nrecs, 3);
	assert_int_equal(c.malformed, 0);
	assert_int_equal(c.npaths, 3);
	assert_int_equal(c.nobjects, 1);

	r = &c.recs[0];
	assert_int_equal(r->line, 1);
	assert_int_equal(r->seq, 1);
	assert_string_equal(r->tool_call, "tc-1");
	assert_string_equal(r->trace, "tr");
	assert_string_equal(r->op, "write");
	assert_int_equal(r->flags, 577);
	assert_string_equal(r->resolved, "/w/a.txt");
	assert_true(r->ok);
	assert_true(r->prior.exists);
	assert_string_equal(r->prior.type, "file");
	assert_int_equal(r->prior.dev, 2049);
	assert_int_equal(r->prior.ino, 101);
	assert_int_equal(r->prior.mode, 0640);
	assert_int_equal(r->prior.uid, 1000);
	assert_int_equal(r->prior.gid, 100);
	assert_true(r->prior.has_owner);
	assert_int_equal(r->prior.size, 6);
	assert_int_equal(r->prior.atime.tv_sec, 1795982500);
	assert_int_equal(r->prior.atime.tv_nsec, 7);
	assert_int_equal(r->prior.mtime.tv_sec, 1795982584);
	assert_int_equal(r->prior.mtime.tv_nsec, 5000000);
	assert_string_equal(r->prior.object, hex);
	assert_string_equal(r->prior.skipped, "");
	assert_false(c.recs[1].prior.exists);
	assert_false(c.recs[2].ok);
	assert_string_equal(c.recs[2].prior.target, "../a.txt");

	e = fsb_cycle_end_state(&c, "/w/a.txt");
	assert_non_null(e);
	assert_true(e->exists);
	assert_string_equal(e->type, "file");
	assert_int_equal(e->size, 812);
	assert_int_equal(e->ino, 1234);
	assert_int_equal(e->mtime.tv_sec, 1795982584);
	assert_int_equal(e->mtime.tv_nsec, 5000000);
	e = fsb_cycle_end_state(&c, "/w/l");
	assert_non_null(e);
	assert_false(e->exists);
	assert_non_null(fsb_cycle_end_state(&c, "/w/new.txt"));
	assert_null(fsb_cycle_end_state(&c, "/w/other"));
	fsb_cycle_free(&c);
}

static void test_recovered_and_open_cycles(void **state)
{
	struct fx *f = *state;
	char line[1024], err[512];
	struct fsb_cycle c;

	absent_rec(line, sizeof(line), 1, "tc", "create", "/w/x");
	cycle_file(f, 1, "journal.jsonl", line);
	cycle_file(f, 1, "cycle.json",
		   "{\"cycle\":1,\"message\":\"recovered after an unclean stop\",\"opened\":\"o\","
		   "\"sealed\":\"s\",\"auditHead\":\"\",\"recovered\":true,\"paths\":{}}");
	assert_int_equal(fsb_cycle_load(f->store, 1, &c, NULL, err, sizeof(err)), 0);
	assert_int_equal(c.state, FSB_CYCLE_RECOVERED);
	assert_string_equal(fsb_cycle_state_name(c.state), "recovered");
	assert_string_equal(c.message, "recovered after an unclean stop");
	fsb_cycle_free(&c);

	/* No cycle.json: open, opened at its first record, no end states. */
	absent_rec(line, sizeof(line), 1, "tc", "create", "/w/y");
	cycle_file(f, 2, "journal.jsonl", line);
	assert_int_equal(fsb_cycle_load(f->store, 2, &c, NULL, err, sizeof(err)), 0);
	assert_int_equal(c.state, FSB_CYCLE_OPEN);
	assert_string_equal(c.opened, "2026-11-29T20:02:01.000Z");
	assert_string_equal(c.sealed, "");
	assert_string_equal(c.message, "");
	assert_int_equal(c.nends, 0);
	assert_null(fsb_cycle_end_state(&c, "/w/y"));
	fsb_cycle_free(&c);
}

static void test_malformed_lines_reported_with_file_and_line(void **state)
{
	struct fx *f = *state;
	char hex[65], line[2048], journal[16384] = "", err[512], want[PATH_MAX + 64];
	char *report = NULL;
	size_t rlen = 0;
	FILE *rep;
	struct fsb_cycle c;

	put_object(f, "a", hex);
	file_rec(line, sizeof(line), 1, "tc", "write", "/w/a", hex, 1);
	strcat(journal, line);						/* 1: good */
	strcat(journal, "{\"seq\":2, not json\n");			/* 2 */
	absent_rec(line, sizeof(line), 3, "tc", "create", "/w/b");
	strcat(journal, line);						/* 3: good */
	strcat(journal, "{\"seq\":4,\"op\":\"write\",\"resolved\":\"/w/c\"}\n");	/* 4: no prior */
	strcat(journal, "{\"seq\":5,\"op\":\"write\",\"resolved\":\"/w/d\",\"prior\":"
			"{\"exists\":true,\"type\":\"file\",\"object\":\"../../../etc/passwd\"}}\n");
	strcat(journal, "{\"seq\":6,\"op\":\"create\",\"resolved\":\"/w/../etc/x\","
			"\"prior\":{\"exists\":false}}\n");			/* 6 */
	strcat(journal, "\n");						/* 7: empty */
	absent_rec(line, sizeof(line), 8, "tc", "create", "/w/e");
	line[strlen(line) - 10] = '\0';					/* 8: cut short */
	strcat(journal, line);
	cycle_file(f, 1, "journal.jsonl", journal);

	rep = open_memstream(&report, &rlen);
	assert_non_null(rep);
	assert_int_equal(fsb_cycle_load(f->store, 1, &c, rep, err, sizeof(err)), 0);
	fclose(rep);
	assert_int_equal(c.nrecs, 2);
	assert_int_equal(c.malformed, 6);
	assert_int_equal(c.recs[0].line, 1);
	assert_int_equal(c.recs[1].line, 3);
	assert_string_equal(c.recs[1].resolved, "/w/b");
	for (unsigned l = 2; l <= 8; l++) {
		snprintf(want, sizeof(want), "%s/cycles/1/journal.jsonl:%u: ", f->store, l);
		if (l == 3)
			assert_null(strstr(report, want));
		else
			assert_non_null(strstr(report, want));
	}
	assert_non_null(strstr(report, "prior is missing"));
	assert_non_null(strstr(report, "prior.object is not a SHA-256"));
	assert_non_null(strstr(report, "resolved is not a normalised absolute path"));
	free(report);
	fsb_cycle_free(&c);
}

static void test_first_record_of_each_path_is_chosen(void **state)
{
	struct fx *f = *state;
	char a1[65], a2[65], b[65], line[2048], journal[16384] = "", err[512];
	struct fsb_cycle c;
	struct fsb_picks p;

	put_object(f, "a before the cycle", a1);
	put_object(f, "a after the first write", a2);
	put_object(f, "b", b);
	file_rec(line, sizeof(line), 1, "tc-1", "write", "/w/a", a1, 18);
	strcat(journal, line);
	absent_rec(line, sizeof(line), 2, "tc-1", "create", "/w/c");
	strcat(journal, line);
	file_rec(line, sizeof(line), 3, "tc-1", "write", "/w/b", b, 1);
	strcat(journal, line);
	file_rec(line, sizeof(line), 4, "tc-2", "write", "/w/a", a2, 23);
	strcat(journal, line);
	file_rec(line, sizeof(line), 5, "tc-2", "delete", "/w/c", a2, 23);
	strcat(journal, line);
	cycle_file(f, 1, "journal.jsonl", journal);
	cycle_file(f, 1, "cycle.json", "{\"cycle\":1,\"paths\":{\"/w/a\":{\"exists\":true}}}");

	assert_int_equal(fsb_cycle_load(f->store, 1, &c, NULL, err, sizeof(err)), 0);
	assert_int_equal(c.nobjects, 3);
	assert_int_equal(fsb_cycle_pick(&c, NULL, &p), 0);
	assert_int_equal(p.n, 3);
	/* In the order the paths were first touched. */
	assert_string_equal(p.v[0].rec->resolved, "/w/a");
	assert_string_equal(p.v[0].rec->prior.object, a1);
	assert_int_equal(p.v[0].rec->seq, 1);
	assert_int_equal(p.v[0].nall, 2);
	assert_int_equal(p.v[0].all[1]->seq, 4);
	assert_non_null(p.v[0].end);
	assert_string_equal(p.v[1].rec->resolved, "/w/c");
	assert_false(p.v[1].rec->prior.exists);
	assert_null(p.v[1].end);
	assert_string_equal(p.v[2].rec->resolved, "/w/b");
	assert_int_equal(p.v[2].nall, 1);
	fsb_picks_free(&p);
	fsb_cycle_free(&c);
}

/*
 * A journal from before moves were journaled (rename-from with its content
 * copied) reads as it always did: the object restores it. A move record
 * (prior.moved, movedTo) has no object and names where its bytes went; one
 * that says moved without saying where is not taken for a move.
 */
static void test_old_rename_records_keep_their_object_and_moves_say_where(void **state)
{
	struct fx *f = *state;
	char a[65], line[2048], journal[16384] = "", err[512];
	struct fsb_cycle c;

	put_object(f, "a before the cycle", a);
	file_rec(line, sizeof(line), 1, "", "rename-from", "/w/a", a, 18);
	strcat(journal, line);
	absent_rec(line, sizeof(line), 2, "", "rename-to", "/w/a2");
	strcat(journal, line);
	strcat(journal, "{\"seq\":3,\"time\":\"2026-11-29T20:01:03.003Z\",\"toolCallId\":\"\","
		"\"traceId\":\"\",\"op\":\"rename-from\",\"flags\":0,\"path\":\"/w/b\","
		"\"resolved\":\"/w/b\",\"prior\":{\"exists\":true,\"type\":\"file\","
		"\"dev\":2049,\"ino\":7,\"nlink\":1,\"mode\":420,\"uid\":0,\"gid\":0,"
		"\"size\":3,\"atime\":[1,0],\"mtime\":[2,0],\"moved\":true},"
		"\"movedTo\":\"/w/b2\",\"ok\":true}\n");
	strcat(journal, "{\"seq\":4,\"time\":\"2026-11-29T20:01:04.003Z\",\"toolCallId\":\"\","
		"\"traceId\":\"\",\"op\":\"rename-from\",\"flags\":0,\"path\":\"/w/c\","
		"\"resolved\":\"/w/c\",\"prior\":{\"exists\":true,\"type\":\"file\","
		"\"dev\":2049,\"ino\":8,\"nlink\":1,\"mode\":420,\"uid\":0,\"gid\":0,"
		"\"size\":3,\"atime\":[1,0],\"mtime\":[2,0],\"moved\":true},\"ok\":true}\n");
	cycle_file(f, 1, "journal.jsonl", journal);

	assert_int_equal(fsb_cycle_load(f->store, 1, &c, NULL, err, sizeof(err)), 0);
	assert_int_equal(c.nrecs, 4);
	assert_false(c.recs[0].prior.moved);
	assert_null(c.recs[0].moved_to);
	assert_string_equal(c.recs[0].prior.object, a);
	assert_true(c.recs[2].prior.moved);
	assert_string_equal(c.recs[2].moved_to, "/w/b2");
	assert_string_equal(c.recs[2].moved_now, "/w/b2");
	assert_string_equal(c.recs[2].prior.object, "");
	assert_false(c.recs[3].prior.moved);
	assert_null(c.recs[3].moved_now);
	fsb_cycle_free(&c);
}

static void test_tool_call_selects_its_own_first_records(void **state)
{
	struct fx *f = *state;
	char a1[65], a2[65], b[65], line[2048], journal[16384] = "", err[512];
	struct fsb_cycle c;
	struct fsb_picks p;

	put_object(f, "a0", a1);
	put_object(f, "a1", a2);
	put_object(f, "b0", b);
	file_rec(line, sizeof(line), 1, "tc-1", "write", "/w/a", a1, 2);
	strcat(journal, line);
	file_rec(line, sizeof(line), 2, "tc-2", "write", "/w/a", a2, 2);
	strcat(journal, line);
	file_rec(line, sizeof(line), 3, "tc-2", "write", "/w/b", b, 2);
	strcat(journal, line);
	absent_rec(line, sizeof(line), 4, "tc-3", "create", "/w/c");
	strcat(journal, line);
	file_rec(line, sizeof(line), 5, "tc-2", "write", "/w/a", b, 2);
	strcat(journal, line);
	cycle_file(f, 1, "journal.jsonl", journal);
	assert_int_equal(fsb_cycle_load(f->store, 1, &c, NULL, err, sizeof(err)), 0);

	assert_int_equal(fsb_cycle_pick(&c, "tc-2", &p), 0);
	assert_int_equal(p.n, 2);
	assert_string_equal(p.v[0].rec->resolved, "/w/a");
	assert_int_equal(p.v[0].rec->seq, 2);		/* not seq 1 (tc-1), not 5 */
	assert_string_equal(p.v[0].rec->prior.object, a2);
	assert_false(p.v[0].later_by_others);
	assert_string_equal(p.v[1].rec->resolved, "/w/b");
	fsb_picks_free(&p);

	assert_int_equal(fsb_cycle_pick(&c, "tc-1", &p), 0);
	assert_int_equal(p.n, 1);
	assert_int_equal(p.v[0].rec->seq, 1);
	assert_true(p.v[0].later_by_others);	/* tc-2 wrote /w/a afterwards */
	fsb_picks_free(&p);

	assert_int_equal(fsb_cycle_pick(&c, "tc-9", &p), 0);
	assert_int_equal(p.n, 0);
	fsb_picks_free(&p);
	fsb_cycle_free(&c);
}

static void test_path_bytes_are_decoded(void **state)
{
	struct fx *f = *state;
	char err[512];
	struct fsb_cycle c;

	cycle_file(f, 1, "journal.jsonl",
		   "{\"seq\":1,\"op\":\"create\",\"toolCallIdBytes\":\"tc%FF\",\"pathBytes\":\"%2Fw%2Fx%FF\","
		   "\"resolvedBytes\":\"%2Fw%2Fx%FF\",\"prior\":{\"exists\":false}}\n"
		   "{\"seq\":2,\"op\":\"symlink\",\"resolved\":\"/w/l\",\"prior\":{\"exists\":true,"
		   "\"type\":\"symlink\",\"targetBytes\":\"t%FE\"}}\n");
	assert_int_equal(fsb_cycle_load(f->store, 1, &c, NULL, err, sizeof(err)), 0);
	assert_int_equal(c.nrecs, 2);
	assert_string_equal(c.recs[0].resolved, "/w/x\xff");
	assert_string_equal(c.recs[0].path, "/w/x\xff");
	assert_string_equal(c.recs[0].tool_call, "tc\xff");
	assert_string_equal(c.recs[1].prior.target, "t\xfe");
	assert_string_equal(c.recs[1].path, "/w/l");	/* `path` falls back to `resolved` */
	fsb_cycle_free(&c);

	/* cycle.json: a message and a path key that are not UTF-8. */
	cycle_file(f, 1, "cycle.json",
		   "{\"cycle\":1,\"messageBytes\":\"m%FF\",\"paths\":{\"%2Fw%2Fx%FF\":"
		   "{\"exists\":false,\"pathBytes\":\"%2Fw%2Fx%FF\"}}}");
	assert_int_equal(fsb_cycle_load(f->store, 1, &c, NULL, err, sizeof(err)), 0);
	assert_string_equal(c.message, "m\xff");
	assert_non_null(fsb_cycle_end_state(&c, "/w/x\xff"));
	fsb_cycle_free(&c);
}

static void test_bad_cycle_json_names_the_file(void **state)
{
	struct fx *f = *state;
	char err[PATH_MAX + 256], want[PATH_MAX];
	char *report = NULL;
	size_t rlen = 0;
	FILE *rep;
	struct fsb_cycle c;

	cycle_file(f, 1, "journal.jsonl", "");
	cycle_file(f, 1, "cycle.json", "{\"cycle\":1, \"paths\": {");
	snprintf(want, sizeof(want), "%s/cycles/1/cycle.json", f->store);
	assert_int_equal(fsb_cycle_load(f->store, 1, &c, NULL, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, want));

	cycle_file(f, 2, "cycle.json", "{\"cycle\":5,\"paths\":{}}");
	assert_int_equal(fsb_cycle_load(f->store, 2, &c, NULL, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "another cycle"));

	/* One bad end state is reported and skipped; the rest still loads. */
	cycle_file(f, 3, "cycle.json", "{\"cycle\":3,\"paths\":{\"/w/a\":{\"exists\":\"yes\"},"
		   "\"/w/b\":{\"exists\":false}}}");
	rep = open_memstream(&report, &rlen);
	assert_int_equal(fsb_cycle_load(f->store, 3, &c, rep, err, sizeof(err)), 0);
	fclose(rep);
	assert_int_equal(c.nends, 1);
	assert_string_equal(c.ends[0].path, "/w/b");
	assert_non_null(strstr(report, "cycle.json: the end state of /w/a is skipped"));
	free(report);
	fsb_cycle_free(&c);

	assert_int_equal(fsb_cycle_load(f->store, 9, &c, NULL, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "there is no cycle 9"));
}

static void test_objects_are_checked_against_their_names(void **state)
{
	struct fx *f = *state;
	char hex[65], bad[65], path[PATH_MAX + 80], out[PATH_MAX], buf[64];
	int fd, outfd;
	ssize_t n;

	put_object(f, "content of the object\n", hex);
	fd = fsb_backup_object_open(f->store, hex);
	assert_true(fd >= 0);
	snprintf(out, sizeof(out), "%s/copy", f->dir);
	outfd = open(out, O_RDWR | O_CREAT | O_EXCL, 0600);
	assert_true(outfd >= 0);
	assert_int_equal(fsb_backup_object_copy(fd, hex, outfd), 0);
	n = pread(outfd, buf, sizeof(buf), 0);
	assert_int_equal(n, 22);
	assert_memory_equal(buf, "content of the object\n", 22);
	close(outfd);
	/* The same bytes under another name do not pass. */
	memcpy(bad, hex, sizeof(bad));
	bad[0] = bad[0] == '0' ? '1' : '0';
	assert_int_equal(fsb_backup_object_copy(fd, bad, -1), -EBADMSG);
	close(fd);

	/* Corrupt it: one byte changed. */
	snprintf(path, sizeof(path), "%s/objects/%.2s/%s", f->store, hex, hex);
	chmod(path, 0600);
	write_text(path, "content of the objecT\n");
	fd = fsb_backup_object_open(f->store, hex);
	assert_true(fd >= 0);
	assert_int_equal(fsb_backup_object_copy(fd, hex, -1), -EBADMSG);
	close(fd);

	/* A symlink in its place is not followed. */
	unlink(path);
	assert_int_equal(symlink(out, path), 0);
	assert_int_equal(fsb_backup_object_open(f->store, hex), -ELOOP);

	assert_int_equal(fsb_backup_object_open(f->store, bad), -ENOENT);
	assert_int_equal(fsb_backup_object_open(f->store, "../../x"), -EINVAL);
	assert_false(fsb_backup_object_name_ok("ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef0123456789"));
	assert_true(fsb_backup_object_name_ok(hex));
	hex[63] = '\0';
	assert_false(fsb_backup_object_name_ok(hex));
}

/*
 * A recovered cycle was sealed at a restart: what its paths were when the
 * crash came is unknown. Even a cycle.json that holds `paths` (an older
 * core wrote the state at the restart there) gives them no end state, so a
 * restore of each needs --force.
 */
static void test_recovered_cycle_has_no_end_states(void **state)
{
	struct fx *f = *state;
	char line[1024], err[512];
	struct fsb_picks picks;
	struct fsb_cycle c;

	absent_rec(line, sizeof(line), 1, "tc", "create", "/w/x");
	cycle_file(f, 1, "journal.jsonl", line);
	cycle_file(f, 1, "cycle.json",
		   "{\"cycle\":1,\"message\":\"recovered after an unclean stop\",\"opened\":\"o\","
		   "\"sealed\":\"s\",\"auditHead\":\"\",\"recovered\":true,\"paths\":{"
		   "\"/w/x\":{\"exists\":true,\"type\":\"file\",\"size\":3}}}");
	assert_int_equal(fsb_cycle_load(f->store, 1, &c, stderr, err, sizeof(err)), 0);
	assert_int_equal(c.state, FSB_CYCLE_RECOVERED);
	assert_int_equal(c.nends, 0);
	assert_null(fsb_cycle_end_state(&c, "/w/x"));
	assert_int_equal(fsb_cycle_pick(&c, NULL, &picks), 0);
	assert_int_equal(picks.n, 1);
	assert_null(picks.v[0].end);
	fsb_picks_free(&picks);
	fsb_cycle_free(&c);
}

/*
 * A FIFO planted under an object's name would block the open, and so the
 * whole restore, for ever. It opens without blocking and is refused: only
 * a regular file is an object. (A child with an alarm: a hang fails.)
 */
static void test_fifo_object_is_refused_without_blocking(void **state)
{
	struct fx *f = *state;
	char hex[65], path[PATH_MAX + 80];
	int status;
	pid_t pid;

	put_object(f, "an object\n", hex);
	snprintf(path, sizeof(path), "%s/objects/%.2s/%s", f->store, hex, hex);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkfifo(path, 0600), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(5);
		_exit(fsb_backup_object_open(f->store, hex) == -ENXIO ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);

	/* A directory is no object either. */
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(fsb_backup_object_open(f->store, hex), -ENXIO);
}

/* One line whose prior holds `xattrs` (the inside of the prior object). */
static void xattr_rec(char *buf, size_t len, unsigned seq, const char *resolved,
		      const char *xattrs)
{
	snprintf(buf, len,
		 "{\"seq\":%u,\"op\":\"chmod\",\"resolved\":\"%s\",\"prior\":"
		 "{\"exists\":true,\"type\":\"dir\",\"mode\":493%s}}\n",
		 seq, resolved, xattrs);
}

/*
 * Xattrs are known only when the line has them; a truncated set says so;
 * a value that is not canonical base64, a name that is not a string key
 * of an object or not valid percent-encoding, makes the line malformed.
 */
static void test_xattrs_parsed_and_malformed_ones_reported(void **state)
{
	static const char *const bad[] = {
		",\"xattrs\":{\"user.a\":\"YQ\"}",
		",\"xattrs\":{\"user.a\":1}",
		",\"xattrs\":[\"user.a\"]",
		",\"xattrsBytes\":{\"user.%ZZ\":\"YQ==\"}",
		",\"xattrs\":{\"\":\"YQ==\"}",
		",\"xattrs\":{},\"xattrsTruncated\":1",
	};
	struct fx *f = *state;
	char line[1024], journal[8192] = "", err[512];
	const struct fsb_prior *p;
	struct fsb_cycle c;

	xattr_rec(line, sizeof(line), 1, "/w/none", "");
	strcat(journal, line);
	xattr_rec(line, sizeof(line), 2, "/w/some", ",\"xattrs\":{\"user.a\":\"YQ==\"},"
		  "\"xattrsBytes\":{\"user.%FF\":\"\"},\"xattrsTruncated\":true");
	strcat(journal, line);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		xattr_rec(line, sizeof(line), 3 + (unsigned)i, "/w/bad", bad[i]);
		strcat(journal, line);
	}
	cycle_file(f, 1, "journal.jsonl", journal);
	assert_int_equal(fsb_cycle_load(f->store, 1, &c, NULL, err, sizeof(err)), 0);
	assert_int_equal(c.nrecs, 2);
	assert_int_equal(c.malformed, sizeof(bad) / sizeof(bad[0]));
	p = &c.recs[0].prior;
	assert_false(p->has_xattrs);
	assert_int_equal(p->nxattrs, 0);
	p = &c.recs[1].prior;
	assert_true(p->has_xattrs);
	assert_true(p->xattrs_truncated);
	assert_int_equal(p->nxattrs, 2);
	assert_string_equal(p->xattrs[0].name, "user.a");
	assert_int_equal(p->xattrs[0].len, 1);
	assert_memory_equal(p->xattrs[0].value, "a", 1);
	assert_string_equal(p->xattrs[1].name, "user.\xff");
	assert_int_equal(p->xattrs[1].len, 0);
	fsb_cycle_free(&c);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_store_dir_refuses_bad_session_ids),
		T(test_sessions_are_the_directories_sorted),
		T(test_cycles_listed_in_numeric_order),
		T(test_sealed_cycle_loads_every_field),
		T(test_recovered_and_open_cycles),
		T(test_malformed_lines_reported_with_file_and_line),
		T(test_first_record_of_each_path_is_chosen),
		T(test_old_rename_records_keep_their_object_and_moves_say_where),
		T(test_tool_call_selects_its_own_first_records),
		T(test_path_bytes_are_decoded),
		T(test_bad_cycle_json_names_the_file),
		T(test_objects_are_checked_against_their_names),
		T(test_recovered_cycle_has_no_end_states),
		T(test_fifo_object_is_refused_without_blocking),
		T(test_xattrs_parsed_and_malformed_ones_reported),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
