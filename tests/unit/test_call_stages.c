/*
 * test_call_stages.c — the stage account of supervised calls: each stretch
 * is charged to the stage current at the time, a nested stage to itself
 * only, the total ends where the answer starts; one line per kind of call
 * is appended to FSBROKER_STAGE_TIMES with medians, and the account starts
 * again empty. The clock is the test's, so nothing depends on timing.
 */
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "call_stages.h"

static uint64_t fake_now;

static uint64_t fake_clock(void)
{
	return fake_now;
}

static char out_path[] = "/tmp/fsb-stages-XXXXXX";

static int setup(void **state)
{
	int fd = mkstemp(out_path);

	(void)state;
	if (fd < 0)
		return -1;
	close(fd);
	unlink(out_path);
	setenv("FSBROKER_STAGE_TIMES", out_path, 1);
	fsb_stages_set_clock(fake_clock);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(out_path);
	fsb_stages_set_clock(NULL);
	return 0;
}

/* One call: receipt 1 µs, target read 2 µs, resolve 3, decide 4 with a
 * backup of 10 nested in it, perform 5, audit 6, answer 100. */
static void one_call(enum fsb_stage_call kind, uint64_t scale)
{
	enum fsb_stage was, inner;

	fake_now = 1000000;
	fsb_stages_receiving();
	fake_now += 1000 * scale;
	fsb_stages_begin(FSB_CALL_OTHER);
	fsb_stages_kind(kind);
	fake_now += 2000 * scale;
	was = fsb_stage_push(FSB_STAGE_RESOLVE);
	fake_now += 3000 * scale;
	fsb_stage_push(FSB_STAGE_DECIDE);
	fake_now += 2000 * scale;
	inner = fsb_stage_push(FSB_STAGE_BACKUP);
	fake_now += 10000 * scale;
	fsb_stage_pop(inner);
	fake_now += 2000 * scale;
	fsb_stage_pop(was);
	fsb_stage_push(FSB_STAGE_PERFORM);
	fake_now += 5000 * scale;
	was = fsb_stage_push(FSB_STAGE_AUDIT);
	fake_now += 6000 * scale;
	fsb_stage_pop(was);
	fsb_stage_push(FSB_STAGE_ANSWER);
	fake_now += 100000 * scale;
	fsb_stages_end();
}

static char *read_all(const char *path)
{
	static char buf[8192];
	FILE *f = fopen(path, "r");
	size_t n;

	if (f == NULL)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void test_each_stretch_is_charged_to_its_stage_and_nesting_to_the_inner(void **state)
{
	const char *text;

	(void)state;
	assert_true(fsb_stages_enabled());
	one_call(FSB_CALL_CREATE, 1);
	fsb_stages_flush();
	text = read_all(out_path);
	assert_non_null(text);
	assert_non_null(strstr(text, "{\"call\":\"create\",\"n\":1,\"totalMedianNs\":31000,"));
	assert_non_null(strstr(text, "\"receive\":1000,\"readTarget\":2000,\"resolve\":3000,"
				     "\"decide\":4000,\"backup\":10000,\"perform\":5000,"
				     "\"audit\":6000,\"answer\":100000}}\n"));
	/* One kind, one line. */
	assert_null(strchr(strchr(text, '\n') + 1, '{'));
}

static void test_medians_per_kind_and_a_flush_starts_again(void **state)
{
	const char *text;

	(void)state;
	unlink(out_path);
	one_call(FSB_CALL_RENAME, 1);
	one_call(FSB_CALL_RENAME, 3);
	one_call(FSB_CALL_RENAME, 2);
	one_call(FSB_CALL_WRITE_OPEN, 1);
	fsb_stages_flush();
	text = read_all(out_path);
	assert_non_null(strstr(text, "{\"call\":\"write-open\",\"n\":1,\"totalMedianNs\":31000,"));
	assert_non_null(strstr(text, "{\"call\":\"rename\",\"n\":3,\"totalMedianNs\":62000,"));
	assert_non_null(strstr(text, "\"backup\":20000,"));
	/* Nothing since the flush: the next one writes nothing. */
	unlink(out_path);
	fsb_stages_flush();
	assert_null(read_all(out_path));
}

static void test_a_mark_outside_a_call_charges_nothing(void **state)
{
	(void)state;
	unlink(out_path);
	fsb_stage_push(FSB_STAGE_DECIDE);
	fsb_stages_kind(FSB_CALL_CREATE);
	fsb_stages_end();
	fsb_stages_flush();
	assert_null(read_all(out_path));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_stretch_is_charged_to_its_stage_and_nesting_to_the_inner),
		cmocka_unit_test(test_medians_per_kind_and_a_flush_starts_again),
		cmocka_unit_test(test_a_mark_outside_a_call_charges_nothing),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
