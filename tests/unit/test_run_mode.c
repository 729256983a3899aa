/*
 * test_run_mode.c — the choice of sandbox mode (core/linux/run_mode.c): a missing
 * feature refuses the run with its name and the flag that accepts a weaker
 * mode; the flag gives exactly that weaker mode and never one without the
 * supervisor. Features are made missing with --simulate-missing's mask, so
 * every case runs on a full machine.
 */
#include <stdio.h>
#include <string.h>

#include "unit.h"
#include "run_mode.h"

static bool machine_is_full(void)
{
	struct fsb_run_mode m;
	char err[512];

	if (fsb_run_mode_choose(&m, 0, 0, false, err, sizeof(err)) == 0)
		return true;
	print_message("# skipped: this machine lacks a feature already: %s\n", err);
	return false;
}

static void a_full_machine_gets_the_full_mode(void **state)
{
	struct fsb_run_mode m;
	char err[512], text[1024];

	(void)state;
	if (!machine_is_full())
		skip();
	assert_int_equal(fsb_run_mode_choose(&m, 0, 0, false, err, sizeof(err)), 0);
	assert_int_equal(m.missing, 0);
	assert_true(m.namespaces && m.landlock && !m.reads_broker);
	fsb_run_mode_explain(&m, text, sizeof(text));
	assert_non_null(strstr(text, "mode: full\n"));
	assert_non_null(strstr(text, "landlock: ABI "));
	assert_non_null(strstr(text, "reads: mask"));
}

static void missing_landlock_refuses_and_names_the_flag(void **state)
{
	struct fsb_run_mode m;
	char err[512];

	(void)state;
	if (!machine_is_full())
		skip();
	assert_int_equal(fsb_run_mode_choose(&m, FSB_FEATURE_LANDLOCK, 0, false, err,
					     sizeof(err)), -1);
	assert_non_null(strstr(err, "--simulate-missing=landlock"));
	assert_non_null(strstr(err, "--without-landlock"));
	/* Accepting another feature's absence does not accept this one. */
	assert_int_equal(fsb_run_mode_choose(&m, FSB_FEATURE_LANDLOCK, FSB_FEATURE_USERNS,
					     false, err, sizeof(err)), -1);
}

static void without_landlock_keeps_namespaces_and_the_pack_reads(void **state)
{
	struct fsb_run_mode m;
	char err[512], text[1024];

	(void)state;
	if (!machine_is_full())
		skip();
	assert_int_equal(fsb_run_mode_choose(&m, FSB_FEATURE_LANDLOCK, FSB_FEATURE_LANDLOCK,
					     false, err, sizeof(err)), 0);
	assert_true(m.namespaces && !m.landlock && !m.reads_broker);
	fsb_run_mode_explain(&m, text, sizeof(text));
	assert_non_null(strstr(text, "mode: degraded\n"));
	assert_non_null(strstr(text, "landlock: no, accepted by --without-landlock"));
}

static void without_namespaces_routes_every_read_through_the_supervisor(void **state)
{
	struct fsb_run_mode m;
	char err[512], text[1024];

	(void)state;
	if (!machine_is_full())
		skip();
	assert_int_equal(fsb_run_mode_choose(&m, FSB_FEATURE_USERNS, 0, false, err,
					     sizeof(err)), -1);
	assert_non_null(strstr(err, "--without-namespaces"));
	assert_int_equal(fsb_run_mode_choose(&m, FSB_FEATURE_USERNS, FSB_FEATURE_USERNS, false,
					     err, sizeof(err)), 0);
	assert_true(!m.namespaces && m.landlock && m.reads_broker);
	fsb_run_mode_explain(&m, text, sizeof(text));
	assert_non_null(strstr(text, "reads: broker (no mount plan"));
}

static void missing_seccomp_notification_has_no_weaker_mode(void **state)
{
	struct fsb_run_mode m;
	char err[512];
	unsigned all = FSB_FEATURE_USERNS | FSB_FEATURE_LANDLOCK | FSB_FEATURE_SECCOMP_NOTIFY;

	(void)state;
	if (!machine_is_full())
		skip();
	assert_int_equal(fsb_run_mode_choose(&m, FSB_FEATURE_SECCOMP_NOTIFY, all, false, err,
					     sizeof(err)), -1);
	assert_non_null(strstr(err, "seccomp-notify"));
	assert_non_null(strstr(err, "no weaker mode"));
}

static void feature_names_parse(void **state)
{
	unsigned mask;

	(void)state;
	assert_int_equal(fsb_feature_parse("userns,landlock", &mask), 0);
	assert_int_equal(mask, FSB_FEATURE_USERNS | FSB_FEATURE_LANDLOCK);
	assert_int_equal(fsb_feature_parse("seccomp-notify", &mask), 0);
	assert_int_equal(mask, FSB_FEATURE_SECCOMP_NOTIFY);
	assert_int_equal(fsb_feature_parse("landlock,selinux", &mask), -1);
	assert_int_equal(fsb_feature_parse("land", &mask), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_full_machine_gets_the_full_mode),
		cmocka_unit_test(missing_landlock_refuses_and_names_the_flag),
		cmocka_unit_test(without_landlock_keeps_namespaces_and_the_pack_reads),
		cmocka_unit_test(without_namespaces_routes_every_read_through_the_supervisor),
		cmocka_unit_test(missing_seccomp_notification_has_no_weaker_mode),
		cmocka_unit_test(feature_names_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
