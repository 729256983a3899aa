/*
 * test_verdict_cache.c — the read-decision cache: a verdict put is found again
 * under exactly its key (scope, the name sent, the real path); after an
 * invalidation (a reload, an approval) every older entry is a miss; the
 * table never holds more than its bound and drops the least recently used.
 */
#include "unit.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "verdict_cache.h"

static struct fsb_verdict verdict(enum fsb_decision d, const char *rule)
{
	struct fsb_verdict v;

	memset(&v, 0, sizeof(v));
	v.decision = d;
	snprintf(v.rule, sizeof(v.rule), "%s", rule);
	snprintf(v.reason, sizeof(v.reason), "because of %s", rule);
	snprintf(v.hint, sizeof(v.hint), "change %s", rule);
	return v;
}

static const struct fsb_verdict_key key_a = { "s1", "t1", "/ws/a", "/ws/a", FSB_OP_READ };

static void test_put_then_get_gives_the_verdict_back(void **state)
{
	struct fsb_verdict_cache c;
	struct fsb_verdict in = verdict(FSB_DENY, "denyRead **/.env"), out;
	int err = 0;

	(void)state;
	assert_int_equal(fsb_verdict_cache_init(&c, 8, 1 << 20), 0);
	assert_false(fsb_verdict_cache_get(&c, &key_a, &out, &err));
	fsb_verdict_cache_put(&c, &key_a, &in, EACCES);
	assert_true(fsb_verdict_cache_get(&c, &key_a, &out, &err));
	assert_int_equal(out.decision, FSB_DENY);
	assert_string_equal(out.rule, "denyRead **/.env");
	assert_string_equal(out.reason, "because of denyRead **/.env");
	assert_string_equal(out.hint, "change denyRead **/.env");
	assert_false(out.backup);
	assert_int_equal(err, EACCES);
	assert_int_equal(c.hits, 1);
	assert_int_equal(c.misses, 1);
	fsb_verdict_cache_free(&c);
}

/* Each part of the key tells entries apart, and so does where one part
 * ends and the next begins. */
static void test_every_part_of_the_key_counts(void **state)
{
	static const struct fsb_verdict_key others[] = {
		{ "s2", "t1", "/ws/a", "/ws/a", FSB_OP_READ },		/* another session */
		{ "s1", "t2", "/ws/a", "/ws/a", FSB_OP_READ },		/* another tool call */
		{ "s1", "", "/ws/a", "/ws/a", FSB_OP_READ },			/* no tool call */
		{ "s1", "t1", "/ws/link", "/ws/a", FSB_OP_READ },		/* another name sent */
		{ "s1", "t1", "/ws/a", "/elsewhere/a", FSB_OP_READ },	/* resolved elsewhere */
		{ "s1t", "1", "/ws/a", "/ws/a", FSB_OP_READ },		/* the same bytes, split otherwise */
		{ "s1", "t1", "/ws/a", "/ws/a", FSB_OP_WRITE },	/* another op */
		{ "s1", "t1", "/ws/a", "/ws/a", FSB_VERDICT_EXISTS },	/* it exists now */
		{ "s1", "t1", "/ws/a", "/ws/a", FSB_VERDICT_EXISTS | FSB_VERDICT_LINKED },
	};
	struct fsb_verdict in = verdict(FSB_ALLOW, "fsProfile.read /**"), out;
	struct fsb_verdict_cache c;
	int err;

	(void)state;
	assert_int_equal(fsb_verdict_cache_init(&c, 64, 1 << 20), 0);
	fsb_verdict_cache_put(&c, &key_a, &in, 0);
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
		if (fsb_verdict_cache_get(&c, &others[i], &out, &err))
			fail_msg("key %zu found the entry of another key", i);
	assert_true(fsb_verdict_cache_get(&c, &key_a, &out, &err));
	fsb_verdict_cache_free(&c);
}

/* A change's verdict comes back with its backup flag, as the pack gave it. */
static void test_a_change_keeps_its_backup_flag(void **state)
{
	static const struct fsb_verdict_key write_a = { "s1", "t1", "/ws/a", "/ws/a",
							FSB_OP_WRITE | FSB_VERDICT_EXISTS };
	static const struct fsb_verdict_key write_b = { "s1", "t1", "/ws/b", "/ws/b",
							FSB_OP_WRITE | FSB_VERDICT_EXISTS };
	struct fsb_verdict in = verdict(FSB_ALLOW, "fsProfile.modify ${workspace}/**"), out;
	struct fsb_verdict_cache c;
	int err;

	(void)state;
	assert_int_equal(fsb_verdict_cache_init(&c, 64, 1 << 20), 0);
	in.backup = true;
	fsb_verdict_cache_put(&c, &write_a, &in, 0);
	in.backup = false;
	fsb_verdict_cache_put(&c, &write_b, &in, 0);
	assert_true(fsb_verdict_cache_get(&c, &write_a, &out, &err));
	assert_true(out.backup);
	assert_int_equal(out.origin, FSB_BY_RULES);
	assert_true(fsb_verdict_cache_get(&c, &write_b, &out, &err));
	assert_false(out.backup);
	fsb_verdict_cache_free(&c);
}

static void test_invalidate_makes_every_older_entry_a_miss(void **state)
{
	struct fsb_verdict allow = verdict(FSB_ALLOW, "fsProfile.read /**");
	struct fsb_verdict deny = verdict(FSB_DENY, "denyRead /ws/a");
	struct fsb_verdict_cache c;
	struct fsb_verdict out;
	int err;

	(void)state;
	assert_int_equal(fsb_verdict_cache_init(&c, 8, 1 << 20), 0);
	fsb_verdict_cache_put(&c, &key_a, &allow, 0);
	fsb_verdict_cache_invalidate(&c);
	assert_false(fsb_verdict_cache_get(&c, &key_a, &out, &err));
	/* The new generation's verdict replaces the old one. */
	fsb_verdict_cache_put(&c, &key_a, &deny, EACCES);
	assert_true(fsb_verdict_cache_get(&c, &key_a, &out, &err));
	assert_int_equal(out.decision, FSB_DENY);
	assert_string_equal(out.rule, "denyRead /ws/a");
	assert_int_equal(c.n, 1);
	fsb_verdict_cache_free(&c);
}

static void test_bound_drops_the_least_recently_used(void **state)
{
	struct fsb_verdict in = verdict(FSB_ALLOW, "fsProfile.read /**"), out;
	char paths[5][16];
	struct fsb_verdict_key k[5];
	struct fsb_verdict_cache c;
	int err;

	(void)state;
	assert_int_equal(fsb_verdict_cache_init(&c, 4, 1 << 20), 0);
	for (int i = 0; i < 5; i++) {
		snprintf(paths[i], sizeof(paths[i]), "/ws/f%d", i);
		k[i] = (struct fsb_verdict_key){ "s1", "t1", paths[i], paths[i], FSB_OP_READ };
	}
	for (int i = 0; i < 4; i++)
		fsb_verdict_cache_put(&c, &k[i], &in, 0);
	/* f0 used again: f1 is now the least recently used. */
	assert_true(fsb_verdict_cache_get(&c, &k[0], &out, &err));
	fsb_verdict_cache_put(&c, &k[4], &in, 0);
	assert_int_equal(c.n, 4);
	assert_int_equal(c.evictions, 1);
	assert_false(fsb_verdict_cache_get(&c, &k[1], &out, &err));
	assert_true(fsb_verdict_cache_get(&c, &k[0], &out, &err));
	assert_true(fsb_verdict_cache_get(&c, &k[2], &out, &err));
	assert_true(fsb_verdict_cache_get(&c, &k[3], &out, &err));
	assert_true(fsb_verdict_cache_get(&c, &k[4], &out, &err));
	/* Many more: the bound holds. */
	for (int i = 0; i < 1000; i++) {
		char p[32];
		struct fsb_verdict_key kk = { "s1", "t1", p, p, FSB_OP_READ };

		snprintf(p, sizeof(p), "/ws/many/%d", i);
		fsb_verdict_cache_put(&c, &kk, &in, 0);
		assert_true(c.n <= 4);
	}
	fsb_verdict_cache_free(&c);
}

/* Long paths: the byte bound drops entries before the count bound does. */
static void test_byte_bound_holds_whatever_the_paths(void **state)
{
	struct fsb_verdict in = verdict(FSB_ALLOW, "fsProfile.read /**"), out;
	static char paths[8][2048];
	struct fsb_verdict_cache c;
	int err;

	(void)state;
	assert_int_equal(fsb_verdict_cache_init(&c, 1000, 10000), 0);
	for (int i = 0; i < 8; i++) {
		struct fsb_verdict_key k = { "s1", "t1", paths[i], paths[i], FSB_OP_READ };

		memset(paths[i], 'a' + i, sizeof(paths[i]) - 1);
		paths[i][0] = '/';
		fsb_verdict_cache_put(&c, &k, &in, 0);
		assert_true(c.bytes <= 10000);
		assert_true(fsb_verdict_cache_get(&c, &k, &out, &err));
	}
	/* Each entry holds two 2 KiB paths: two fit, the older ones went. */
	assert_int_equal(c.n, 2);
	fsb_verdict_cache_free(&c);
}

static void test_capacity_zero_keeps_nothing(void **state)
{
	struct fsb_verdict in = verdict(FSB_ALLOW, "fsProfile.read /**"), out;
	struct fsb_verdict_cache c;
	int err;

	(void)state;
	assert_int_equal(fsb_verdict_cache_init(&c, 0, 1 << 20), 0);
	fsb_verdict_cache_put(&c, &key_a, &in, 0);
	assert_false(fsb_verdict_cache_get(&c, &key_a, &out, &err));
	fsb_verdict_cache_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put_then_get_gives_the_verdict_back),
		cmocka_unit_test(test_every_part_of_the_key_counts),
		cmocka_unit_test(test_a_change_keeps_its_backup_flag),
		cmocka_unit_test(test_invalidate_makes_every_older_entry_a_miss),
		cmocka_unit_test(test_bound_drops_the_least_recently_used),
		cmocka_unit_test(test_byte_bound_holds_whatever_the_paths),
		cmocka_unit_test(test_capacity_zero_keeps_nothing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
