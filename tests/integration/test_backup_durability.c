/*
 * test_backup_durability.c — backup.durability through the real core
 * (docs/backup-store.md, "The durability contract"): "strict" syncs the
 * journal line and object of every first record of an existing file before
 * its change; "batched" syncs nothing on a call's path and makes what it
 * wrote durable later by itself, and always at a seal. Counted with Stats'
 * "fsyncs".
 */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define REPLY 8192
#define N 40

enum { JOURNAL, OBJECT, DIRECTORY, SEAL, BATCH, KINDS };

static const char *const kinds[KINDS] = { "journal", "object", "directory", "seal", "batch" };

/* A core on the default pack with backup.durability = `mode`. */
static struct fsbt_core *core_with(const char *mode)
{
	struct fsbt_core *c = fsbt_core_new();
	char pack[PATH_MAX + 16], text[256];

	snprintf(pack, sizeof(pack), "%s/durability.lua", c->rules_dir);
	snprintf(text, sizeof(text), "return { name = \"durability\", include = { \"default\" },\n"
		 "  backup = { durability = \"%s\" } }\n", mode);
	fsbt_write_file(pack, text);
	snprintf(c->rules, sizeof(c->rules), "%s", pack);
	fsbt_core_start(c);
	return c;
}

/* The core's syncs so far, by kind. */
static void fsyncs(struct fsbt_core *c, long long out[KINDS])
{
	cJSON *r = fsbt_control_cmd(c, "Stats", NULL), *f;

	assert_true(fsbt_ok(r));
	f = cJSON_GetObjectItem(r, "fsyncs");
	assert_non_null(f);
	for (int k = 0; k < KINDS; k++) {
		assert_non_null(cJSON_GetObjectItem(f, kinds[k]));
		out[k] = (long long)fsbt_num(f, kinds[k]);
	}
	cJSON_Delete(r);
}

/* N existing files in the workspace, each then opened for writing
 * (O_TRUNC) through a grant and rewritten: N first records that copy. */
static void rewrite_existing_files(struct fsbt_core *c, const char *prefix)
{
	char path[PATH_MAX + 32], line[PATH_MAX + 256], reply[REPLY];
	int fd = fsbt_connect(c), got;

	for (int i = 0; i < N; i++) {
		snprintf(path, sizeof(path), "%s/%s-%d.txt", c->ws, prefix, i);
		snprintf(line, sizeof(line), "old content of file %d\n", i);
		fsbt_write_file(path, line);
	}
	for (int i = 0; i < N; i++) {
		snprintf(path, sizeof(path), "%s/%s-%d.txt", c->ws, prefix, i);
		fsbt_text_req(line, sizeof(line), FSBT_WRITE, path, c->session, FSBT_OPEN_WRITE);
		got = -1;
		assert_true(fsbt_request(fd, line, reply, REPLY, &got) > 0);
		assert_string_equal(reply, "FD");
		assert_int_equal(write(got, "new\n", 4), 4);
		close(got);
	}
	fsbt_close(fd);
}

static void batched_write_opens_sync_nothing_on_their_path(void **state)
{
	struct fsbt_core *c = core_with("batched");
	long long before[KINDS], after[KINDS];
	cJSON *r;

	(void)state;
	fsyncs(c, before);
	rewrite_existing_files(c, "a");
	fsyncs(c, after);
	fprintf(stderr, "# batched, %d write opens: journal %lld, object %lld, directory %lld, "
		"batch %lld\n", N, after[JOURNAL] - before[JOURNAL], after[OBJECT] - before[OBJECT],
		after[DIRECTORY] - before[DIRECTORY], after[BATCH] - before[BATCH]);
	/* Not one sync waited for by a call: the copies and lines were only
	 * written. The flusher's own syncfs may have run meanwhile. */
	assert_int_equal(after[JOURNAL] - before[JOURNAL], 0);
	assert_int_equal(after[OBJECT] - before[OBJECT], 0);
	assert_int_equal(after[DIRECTORY] - before[DIRECTORY], 0);
	assert_true(after[BATCH] - before[BATCH] < N / 4);

	/* Made durable without any further call: the flusher's timer. */
	for (int i = 0; i < 200 && after[BATCH] == before[BATCH]; i++) {
		nanosleep(&(struct timespec){ .tv_nsec = 100000000L }, NULL);
		fsyncs(c, after);
	}
	assert_true(after[BATCH] > before[BATCH]);

	/* A seal makes the cycle durable whatever the timer did. */
	rewrite_existing_files(c, "b");
	fsyncs(c, before);
	r = fsbt_control_cmd(c, "CommitModifyBackup", "\"commitMsg\":\"batched\"");
	assert_true(fsbt_ok(r));
	cJSON_Delete(r);
	fsyncs(c, after);
	assert_true(after[SEAL] - before[SEAL] >= 3);	/* syncfs, cycle.json, its dir */
	assert_int_equal(fsbt_core_stop(c), 0);
}

static void strict_write_opens_sync_each_first_record(void **state)
{
	struct fsbt_core *c = core_with("strict");
	long long before[KINDS], after[KINDS];

	(void)state;
	fsyncs(c, before);
	rewrite_existing_files(c, "a");
	fsyncs(c, after);
	fprintf(stderr, "# strict, %d write opens: journal %lld, object %lld, directory %lld, "
		"batch %lld\n", N, after[JOURNAL] - before[JOURNAL], after[OBJECT] - before[OBJECT],
		after[DIRECTORY] - before[DIRECTORY], after[BATCH] - before[BATCH]);
	/* One client, one request at a time: each waits for its own line's
	 * fdatasync and its own object's fsync. */
	assert_true(after[JOURNAL] - before[JOURNAL] >= N);
	assert_true(after[OBJECT] - before[OBJECT] >= N);
	assert_int_equal(after[BATCH] - before[BATCH], 0);
	assert_int_equal(fsbt_core_stop(c), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(batched_write_opens_sync_nothing_on_their_path),
		cmocka_unit_test(strict_write_opens_sync_each_first_record),
	};

	return fsbt_run_group(tests, NULL, NULL);
}
