/*
 * test_pack_tests.c — the record of pack contents whose self-tests passed:
 * a recorded key is found, others are not; the newest 32 are kept; a key
 * that is not 64 hex digits is refused; a file that is not whole lines of
 * keys (torn, edited) counts only up to its first bad line.
 */
#include "unit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pack_tests.h"

static char dir[] = "/tmp/fsb-pack-tests-XXXXXX";

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) != NULL ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[64];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Key number `i`: 64 hex digits. */
static const char *key(int i)
{
	static char k[65];

	snprintf(k, sizeof(k), "%064x", i);
	return k;
}

static void test_a_recorded_key_is_found_and_no_other(void **state)
{
	(void)state;
	assert_false(fsb_pack_tests_passed(dir, key(1)));
	assert_int_equal(fsb_pack_tests_record(dir, key(1)), 0);
	assert_true(fsb_pack_tests_passed(dir, key(1)));
	assert_false(fsb_pack_tests_passed(dir, key(2)));
	/* Recording it again keeps one line. */
	assert_int_equal(fsb_pack_tests_record(dir, key(1)), 0);
	assert_int_equal(fsb_pack_tests_record(dir, key(2)), 0);
	assert_true(fsb_pack_tests_passed(dir, key(1)));
	assert_true(fsb_pack_tests_passed(dir, key(2)));
}

static void test_the_newest_are_kept(void **state)
{
	(void)state;
	for (int i = 100; i < 100 + FSB_PACK_TESTS_KEPT + 5; i++)
		assert_int_equal(fsb_pack_tests_record(dir, key(i)), 0);
	for (int i = 100; i < 105; i++)
		assert_false(fsb_pack_tests_passed(dir, key(i)));
	for (int i = 105; i < 100 + FSB_PACK_TESTS_KEPT + 5; i++)
		assert_true(fsb_pack_tests_passed(dir, key(i)));
}

static void test_a_key_that_is_not_hex_is_refused(void **state)
{
	(void)state;
	assert_int_equal(fsb_pack_tests_record(dir, "abc"), -EINVAL);
	assert_int_equal(fsb_pack_tests_record(dir, "../../../../../../../../../../../../"
						   "../../../../../../../../../etc/x"), -EINVAL);
	assert_false(fsb_pack_tests_passed(dir, "abc"));
}

static void test_a_torn_file_counts_up_to_its_first_bad_line(void **state)
{
	char path[128];
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/pack-tests", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "%s\n", key(7));
	fprintf(f, "%.40s", key(8));	/* torn */
	fclose(f);
	assert_true(fsb_pack_tests_passed(dir, key(7)));
	assert_false(fsb_pack_tests_passed(dir, key(8)));
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "not a key at all, but exactly sixty-four characters long, yes!!!\n%s\n", key(9));
	fclose(f);
	assert_false(fsb_pack_tests_passed(dir, key(9)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_recorded_key_is_found_and_no_other),
		cmocka_unit_test(test_the_newest_are_kept),
		cmocka_unit_test(test_a_key_that_is_not_hex_is_refused),
		cmocka_unit_test(test_a_torn_file_counts_up_to_its_first_bad_line),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
