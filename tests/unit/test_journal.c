/*
 * test_journal.c — the journal record (core/store/journal.c): each kind of
 * record the core writes encodes to one line that decodes to the same
 * struct; a line cut short or with a field of the wrong form is refused
 * whole, never half-read; bytes that are not UTF-8 (paths, link targets,
 * xattr names) come back as they were; lines of older cores still read;
 * cycle.json's end state of a path round-trips too.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "journal.h"
#include "proto_json.h"

#define HEX_A "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* A record as the core writes it for an existing regular file. */
static struct fsb_journal_rec file_rec(const char *op, const char *path)
{
	struct fsb_journal_rec r;

	memset(&r, 0, sizeof(r));
	r.seq = 7;
	r.time = (char *)"2026-01-02T03:04:05.678Z";
	r.tool_call = (char *)"call-1";
	r.trace = (char *)"trace-1";
	r.op = (char *)op;
	r.flags = 0101;
	r.path = (char *)path;
	r.resolved = (char *)path;
	r.ok = true;
	r.prior.exists = true;
	strcpy(r.prior.type, "file");
	r.prior.dev = 2049;
	r.prior.ino = 123456789;
	r.prior.nlink = 1;
	r.prior.has_mode = r.prior.has_owner = r.prior.has_size = true;
	r.prior.has_atime = r.prior.has_mtime = true;
	r.prior.mode = 04755;
	r.prior.uid = 1000;
	r.prior.gid = 100;
	r.prior.size = 4096;
	r.prior.atime = (struct timespec){ 1700000000, 1 };
	r.prior.mtime = (struct timespec){ 1700000001, 999999999 };
	return r;
}

/* Encode `r` into one line, as the journal holds it (without the newline). */
static char *encode_line(const struct fsb_journal_rec *r)
{
	cJSON *o = fsb_journal_encode(r);
	char *line;

	assert_non_null(o);
	line = fsb_json_print(o, false);
	cJSON_Delete(o);
	assert_non_null(line);
	assert_null(strchr(line, '\n'));
	return line;
}

static void assert_str_same(const char *a, const char *b)
{
	if (a == NULL || b == NULL) {
		assert_ptr_equal(a, b);
		return;
	}
	assert_string_equal(a, b);
}

/* Every field the encoder writes came back as it was. */
static void assert_rec_same(const struct fsb_journal_rec *a, const struct fsb_journal_rec *b)
{
	const struct fsb_prior *p = &a->prior, *q = &b->prior;

	assert_int_equal(a->seq, b->seq);
	assert_string_equal(a->time, b->time);
	assert_string_equal(a->tool_call, b->tool_call);
	assert_string_equal(a->trace, b->trace);
	assert_string_equal(a->op, b->op);
	assert_int_equal(a->flags, b->flags);
	assert_string_equal(a->path, b->path);
	assert_string_equal(a->resolved, b->resolved);
	assert_str_same(a->moved_to, b->moved_to);
	assert_int_equal(a->ok, b->ok);
	assert_int_equal(a->has_made, b->has_made);
	if (a->has_made) {
		assert_string_equal(a->made_type, b->made_type);
		assert_int_equal(a->made_dev, b->made_dev);
		assert_int_equal(a->made_ino, b->made_ino);
	}
	assert_int_equal(p->exists, q->exists);
	if (!p->exists)
		return;
	assert_string_equal(p->type, q->type);
	assert_int_equal(p->dev, q->dev);
	assert_int_equal(p->ino, q->ino);
	assert_int_equal(p->nlink, q->nlink);
	assert_int_equal(p->has_mode, q->has_mode);
	assert_int_equal(p->mode, q->mode);
	assert_int_equal(p->has_owner, q->has_owner);
	assert_int_equal(p->uid, q->uid);
	assert_int_equal(p->gid, q->gid);
	assert_int_equal(p->has_size, q->has_size);
	assert_int_equal(p->size, q->size);
	assert_int_equal(p->has_atime, q->has_atime);
	assert_int_equal(p->atime.tv_sec, q->atime.tv_sec);
	assert_int_equal(p->atime.tv_nsec, q->atime.tv_nsec);
	assert_int_equal(p->has_mtime, q->has_mtime);
	assert_int_equal(p->mtime.tv_sec, q->mtime.tv_sec);
	assert_int_equal(p->mtime.tv_nsec, q->mtime.tv_nsec);
	assert_string_equal(p->object, q->object);
	assert_string_equal(p->skipped, q->skipped);
	assert_int_equal(p->kept, q->kept);
	assert_int_equal(p->metadata_only, q->metadata_only);
	assert_int_equal(p->moved, q->moved);
	assert_str_same(p->target, q->target);
	assert_int_equal(p->has_xattrs, q->has_xattrs);
	assert_int_equal(p->xattrs_truncated, q->xattrs_truncated);
	assert_int_equal(p->nxattrs, q->nxattrs);
	for (size_t i = 0; i < p->nxattrs; i++) {
		assert_string_equal(p->xattrs[i].name, q->xattrs[i].name);
		assert_int_equal(p->xattrs[i].len, q->xattrs[i].len);
		assert_memory_equal(p->xattrs[i].value, q->xattrs[i].value, p->xattrs[i].len);
	}
}

/* Encode, decode, compare; the line is returned for more checks. */
static char *round_trip(const struct fsb_journal_rec *r)
{
	struct fsb_journal_rec back;
	struct fsb_journal_why why;
	char *line = encode_line(r);

	assert_int_equal(fsb_journal_decode(line, strlen(line), &back, &why), 0);
	assert_rec_same(r, &back);
	fsb_journal_rec_free(&back);
	return line;
}

static void write_with_object_round_trips(void **state)
{
	struct fsb_journal_rec r = file_rec("write", "/w/a.txt");
	char *line;

	(void)state;
	strcpy(r.prior.object, HEX_A);
	line = round_trip(&r);
	assert_non_null(strstr(line, "\"object\":\"" HEX_A "\""));
	free(line);
}

static void too_large_skip_round_trips(void **state)
{
	struct fsb_journal_rec r = file_rec("write", "/w/big.bin");

	(void)state;
	strcpy(r.prior.skipped, "too-large");
	free(round_trip(&r));
}

static void create_with_made_round_trips(void **state)
{
	struct fsb_journal_rec r = file_rec("create", "/w/new.txt");
	char *line;

	(void)state;
	memset(&r.prior, 0, sizeof(r.prior));
	r.has_made = true;
	strcpy(r.made_type, "file");
	r.made_dev = 2049;
	r.made_ino = 99;
	line = round_trip(&r);
	assert_non_null(strstr(line, "\"prior\":{\"exists\":false}"));
	assert_non_null(strstr(line, "\"made\":{\"type\":\"file\",\"dev\":2049,\"ino\":99}"));
	free(line);
}

static void delete_kept_by_link_round_trips(void **state)
{
	struct fsb_journal_rec r = file_rec("delete", "/w/gone.txt");
	struct fsb_journal_rec back;
	struct fsb_journal_why why;
	char *line;

	(void)state;
	strcpy(r.prior.object, HEX_A);
	r.prior.kept = true;
	line = round_trip(&r);
	assert_non_null(strstr(line, "\"kept\":true"));
	/* A restore checks a kept inode against the size and mtime it had. */
	assert_int_equal(fsb_journal_decode(line, strlen(line), &back, &why), 0);
	assert_int_equal(back.prior.kept_size, 4096);
	assert_int_equal(back.prior.kept_mtime.tv_nsec, 999999999);
	fsb_journal_rec_free(&back);
	free(line);
}

static void rename_from_moved_to_round_trips(void **state)
{
	struct fsb_journal_rec r = file_rec("rename-from", "/w/old.txt");
	char *line;

	(void)state;
	r.moved_to = (char *)"/w/new.txt";
	r.prior.moved = true;
	line = round_trip(&r);
	assert_non_null(strstr(line, "\"movedTo\":\"/w/new.txt\""));
	assert_non_null(strstr(line, "\"moved\":true"));
	free(line);
}

/* `moved` without `movedTo` says nowhere where the bytes are: not moved. */
static void moved_without_moved_to_is_not_moved(void **state)
{
	struct fsb_journal_rec r = file_rec("rename-from", "/w/old.txt"), back;
	struct fsb_journal_why why;
	char *line;

	(void)state;
	r.prior.moved = true;
	line = encode_line(&r);
	assert_int_equal(fsb_journal_decode(line, strlen(line), &back, &why), 0);
	assert_false(back.prior.moved);
	fsb_journal_rec_free(&back);
	free(line);
}

static void metadata_only_round_trips(void **state)
{
	struct fsb_journal_rec r = file_rec("chmod", "/w/x.sh");
	char *line;

	(void)state;
	r.prior.metadata_only = true;
	line = round_trip(&r);
	assert_non_null(strstr(line, "\"metadataOnly\":true"));
	assert_null(strstr(line, "\"object\""));
	free(line);
}

static void xattrs_round_trip_with_names_that_are_not_utf8(void **state)
{
	struct fsb_journal_rec r = file_rec("setxattr", "/w/x");
	unsigned char bin[] = { 0, 1, 0xff, '\n', '"' };
	struct fsb_xattr x[3] = {
		{ .name = (char *)"user.plain", .value = (unsigned char *)"v", .len = 1 },
		{ .name = (char *)"user.empty", .value = (unsigned char *)"", .len = 0 },
		{ .name = (char *)"user.\xff\xfe", .value = bin, .len = sizeof(bin) },
	};
	char *line;

	(void)state;
	r.prior.metadata_only = true;
	r.prior.has_xattrs = true;
	r.prior.xattrs_truncated = true;
	r.prior.xattrs = x;
	r.prior.nxattrs = 3;
	line = round_trip(&r);
	assert_non_null(strstr(line, "\"xattrsBytes\":{\"user.%FF%FE\":"));
	assert_non_null(strstr(line, "\"xattrsTruncated\":true"));
	free(line);
}

/* Known to have none is not the same as unknown: a restore removes the
 * xattrs a path gained only when the journal knew the old ones. */
static void no_xattrs_is_known_and_unknown_is_absent(void **state)
{
	struct fsb_journal_rec r = file_rec("write", "/w/x");
	char *line;

	(void)state;
	r.prior.has_xattrs = true;
	line = round_trip(&r);
	assert_non_null(strstr(line, "\"xattrs\":{}"));
	free(line);
	r.prior.has_xattrs = false;
	line = round_trip(&r);
	assert_null(strstr(line, "xattrs"));
	free(line);
}

static void symlink_round_trips_with_a_target_that_is_not_utf8(void **state)
{
	struct fsb_journal_rec r = file_rec("delete", "/w/link");
	char *line;

	(void)state;
	strcpy(r.prior.type, "symlink");
	r.prior.target = (char *)"../t\xe9st";
	line = round_trip(&r);
	assert_non_null(strstr(line, "\"targetBytes\":"));
	free(line);
	r.prior.target = (char *)"plain/target";
	line = round_trip(&r);
	assert_non_null(strstr(line, "\"target\":\"plain/target\""));
	free(line);
}

static void dir_entries_round_trips(void **state)
{
	struct fsb_journal_rec r = file_rec("entries", "/w/sub");

	(void)state;
	strcpy(r.prior.type, "dir");
	r.prior.nlink = 3;
	r.prior.mode = 0750;
	r.prior.metadata_only = false;
	r.flags = 0;
	free(round_trip(&r));
}

static void paths_that_are_not_utf8_round_trip(void **state)
{
	struct fsb_journal_rec r = file_rec("write", "/w/caf\xe9");
	char *line;

	(void)state;
	r.resolved = (char *)"/real/caf\xe9";
	r.tool_call = (char *)"id\x80";
	r.moved_to = (char *)"/w/\xff";
	line = round_trip(&r);
	assert_non_null(strstr(line, "\"pathBytes\":\"/w/caf%E9\""));
	assert_non_null(strstr(line, "\"resolvedBytes\":"));
	assert_non_null(strstr(line, "\"toolCallIdBytes\":"));
	assert_non_null(strstr(line, "\"movedToBytes\":"));
	free(line);
}

/* Cut after any byte, the line is refused whole: no record half-read. */
static void a_line_cut_short_is_refused(void **state)
{
	struct fsb_journal_rec r = file_rec("write", "/w/a.txt"), back;
	struct fsb_journal_why why;
	char *line;
	size_t len;

	(void)state;
	strcpy(r.prior.object, HEX_A);
	line = encode_line(&r);
	len = strlen(line);
	for (size_t cut = 0; cut < len; cut++) {
		memset(&back, 0x55, sizeof(back));
		assert_int_equal(fsb_journal_decode(line, cut, &back, &why), -EINVAL);
		assert_true(why.text[0] != '\0');
		assert_null(back.op);
		assert_null(back.resolved);
		assert_null(back.prior.xattrs);
	}
	free(line);
}

static void malformed_fields_are_refused_with_a_reason(void **state)
{
	static const struct {
		const char *line, *why;
	} cases[] = {
		{ "{\"op\":\"write\",\"resolved\":\"/a\"}", "prior" },
		{ "{\"op\":\"write\",\"resolved\":\"/a/../b\",\"prior\":{\"exists\":false}}",
		  "normalised" },
		{ "{\"op\":\"write\",\"prior\":{\"exists\":false}}", "resolved" },
		{ "{\"resolved\":\"/a\",\"prior\":{\"exists\":false}}", "op" },
		{ "{\"op\":\"write\",\"resolved\":\"/a\",\"prior\":{\"exists\":true,"
		  "\"type\":\"file\",\"mode\":4096}}", "permission bits" },
		{ "{\"op\":\"write\",\"resolved\":\"/a\",\"prior\":{\"exists\":true,"
		  "\"type\":\"file\",\"object\":\"../../etc/passwd\"}}", "SHA-256" },
		{ "{\"op\":\"write\",\"resolved\":\"/a\",\"prior\":{\"exists\":true,"
		  "\"type\":\"door\"}}", "prior.type" },
		{ "{\"op\":\"write\",\"resolved\":\"/a\",\"prior\":{\"exists\":true,"
		  "\"type\":\"file\",\"mtime\":[1]}}", "prior.mtime" },
		{ "{\"op\":\"write\",\"resolved\":\"/a\",\"prior\":{\"exists\":true,"
		  "\"type\":\"file\",\"xattrs\":{\"user.a\":\"!!\"}}}", "base64" },
		{ "{\"op\":\"rename-from\",\"resolved\":\"/a\",\"movedTo\":\"b\","
		  "\"prior\":{\"exists\":false}}", "movedTo" },
		{ "{\"op\":\"create\",\"resolved\":\"/a\",\"prior\":{\"exists\":false},"
		  "\"made\":{\"type\":\"file\",\"dev\":1}}", "made" },
		{ "{\"op\":\"write\",\"resolved\":\"/a\",\"ok\":1,\"prior\":{\"exists\":false}}",
		  "ok" },
		{ "{\"op\":\"write\",\"resolved\":\"/a\",\"seq\":-1,\"prior\":{\"exists\":false}}",
		  "seq" },
		{ "{\"op\":\"write\",\"resolved\":\"/a\\u0000b\",\"prior\":{\"exists\":false}}",
		  "" },
		{ "{\"op\":\"write\",\"resolved\":\"/a\",\"flags\":4294967296,"
		  "\"prior\":{\"exists\":false}}", "flags" },
		{ "[1,2]", "JSON object" },
		{ "{\"op\":\"write\"} {}", "JSON object" },
		{ "", "empty" },
	};
	struct fsb_journal_rec back;
	struct fsb_journal_why why;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = fsb_journal_decode(cases[i].line, strlen(cases[i].line), &back, &why);

		if (rc != -EINVAL)
			fail_msg("case %zu (%s) decoded: %d", i, cases[i].line, rc);
		assert_non_null(strstr(why.text, cases[i].why));
		assert_null(back.op);
	}
}

static void a_line_that_is_not_utf8_is_refused(void **state)
{
	const char line[] = "{\"op\":\"write\",\"resolved\":\"/caf\xe9\",\"prior\":{\"exists\":false}}";
	struct fsb_journal_rec back;
	struct fsb_journal_why why;

	(void)state;
	assert_int_equal(fsb_journal_decode(line, strlen(line), &back, &why), -EINVAL);
}

/* Lines of older cores: `path` only, no `ok`, no seq or time. */
static void a_line_of_an_older_core_still_reads(void **state)
{
	const char line[] = "{\"op\":\"write\",\"path\":\"/w/a\",\"prior\":{\"exists\":true,"
			    "\"type\":\"file\",\"mode\":420,\"size\":3,\"object\":\"" HEX_A "\"}}";
	struct fsb_journal_rec back;
	struct fsb_journal_why why;

	(void)state;
	assert_int_equal(fsb_journal_decode(line, strlen(line), &back, &why), 0);
	assert_string_equal(back.resolved, "/w/a");
	assert_string_equal(back.path, "/w/a");
	assert_true(back.ok);
	assert_string_equal(back.tool_call, "");
	assert_true(back.prior.has_mode);
	assert_false(back.prior.has_owner);
	assert_false(back.prior.has_mtime);
	/* Without a size and mtime to check it by, an object is a copy. */
	assert_false(back.prior.kept);
	fsb_journal_rec_free(&back);
}

/* cycle.json's end state of a path: what a restore compares the path with. */
static void an_end_state_round_trips(void **state)
{
	struct fsb_end_state e = {
		.exists = true, .type = "file", .has_size = true, .has_mtime = true,
		.has_ino = true, .has_dev = true, .size = 12, .ino = 77, .dev = 2049,
		.mtime = { 1700000000, 5 },
	}, back, gone = { .exists = false };
	struct fsb_journal_why why;
	cJSON *o = fsb_journal_end_encode(&e);

	(void)state;
	assert_non_null(o);
	assert_int_equal(fsb_journal_end_decode("/w/x", o, &back, &why), 0);
	assert_string_equal(back.path, "/w/x");
	assert_true(back.exists);
	assert_string_equal(back.type, "file");
	assert_true(back.has_size && back.has_mtime && back.has_ino && back.has_dev);
	assert_int_equal(back.size, 12);
	assert_int_equal(back.ino, 77);
	assert_int_equal(back.dev, 2049);
	assert_int_equal(back.mtime.tv_sec, 1700000000);
	assert_int_equal(back.mtime.tv_nsec, 5);
	free(back.path);
	cJSON_Delete(o);

	/* A path that is not UTF-8 is keyed by its percent-encoding: the
	 * entry's pathBytes gives the bytes back. */
	o = fsb_journal_end_encode(&gone);
	assert_non_null(o);
	fsb_json_add_path(o, "path", "/w/caf\xe9", true);
	assert_int_equal(fsb_journal_end_decode("/w/caf%E9", o, &back, &why), 0);
	assert_string_equal(back.path, "/w/caf\xe9");
	assert_false(back.exists);
	assert_false(back.has_ino);
	free(back.path);
	cJSON_Delete(o);

	/* An entry of the wrong form is refused. */
	o = cJSON_Parse("{\"exists\":true,\"type\":\"door\"}");
	assert_int_equal(fsb_journal_end_decode("/w/x", o, &back, &why), -EINVAL);
	assert_non_null(strstr(why.text, "type"));
	free(back.path);
	cJSON_Delete(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(write_with_object_round_trips),
		cmocka_unit_test(too_large_skip_round_trips),
		cmocka_unit_test(create_with_made_round_trips),
		cmocka_unit_test(delete_kept_by_link_round_trips),
		cmocka_unit_test(rename_from_moved_to_round_trips),
		cmocka_unit_test(moved_without_moved_to_is_not_moved),
		cmocka_unit_test(metadata_only_round_trips),
		cmocka_unit_test(xattrs_round_trip_with_names_that_are_not_utf8),
		cmocka_unit_test(no_xattrs_is_known_and_unknown_is_absent),
		cmocka_unit_test(symlink_round_trips_with_a_target_that_is_not_utf8),
		cmocka_unit_test(dir_entries_round_trips),
		cmocka_unit_test(paths_that_are_not_utf8_round_trip),
		cmocka_unit_test(a_line_cut_short_is_refused),
		cmocka_unit_test(malformed_fields_are_refused_with_a_reason),
		cmocka_unit_test(a_line_that_is_not_utf8_is_refused),
		cmocka_unit_test(a_line_of_an_older_core_still_reads),
		cmocka_unit_test(an_end_state_round_trips),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
