/*
 * test_protected.c — paths no pack can open up.
 */
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "protected.h"

static void test_hidden_tree_denies_every_op(void **state)
{
	struct fsb_protected p = { 0 };

	(void)state;
	assert_int_equal(fsb_protected_add(&p, "/nonexistent-fsb/state", FSB_PROTECT_HIDDEN,
					   "state dir", false), 0);
	assert_non_null(fsb_protected_match(&p, "/nonexistent-fsb/state", FSB_OP_READ));
	assert_non_null(fsb_protected_match(&p, "/nonexistent-fsb/state/audit/s.jsonl", FSB_OP_READ));
	assert_non_null(fsb_protected_match(&p, "/nonexistent-fsb/state/x", FSB_OP_WRITE));
	assert_null(fsb_protected_match(&p, "/nonexistent-fsb/stateful", FSB_OP_WRITE));
	assert_null(fsb_protected_match(&p, "/nonexistent-fsb/other", FSB_OP_READ));
	fsb_protected_free(&p);
}

static void test_readonly_tree_allows_reads_only(void **state)
{
	struct fsb_protected p = { 0 };
	const struct fsb_protected_entry *e;

	(void)state;
	assert_int_equal(fsb_protected_add(&p, "/nonexistent-fsb/rules/", FSB_PROTECT_READONLY,
					   "rules dir", false), 0);
	assert_null(fsb_protected_match(&p, "/nonexistent-fsb/rules/default.lua", FSB_OP_READ));
	e = fsb_protected_match(&p, "/nonexistent-fsb/rules/default.lua", FSB_OP_WRITE);
	assert_non_null(e);
	assert_string_equal(e->what, "rules dir");
	assert_string_equal(e->path, "/nonexistent-fsb/rules");
	assert_non_null(fsb_protected_match(&p, "/nonexistent-fsb/rules/new.lua", FSB_OP_CREATE));
	assert_non_null(fsb_protected_match(&p, "/nonexistent-fsb/rules/x", FSB_OP_CHMOD));
	fsb_protected_free(&p);
}

static void test_moving_an_ancestor_is_denied(void **state)
{
	struct fsb_protected p = { 0 };

	(void)state;
	fsb_protected_add(&p, "/nonexistent-fsb/home/.local/state/fsbroker", FSB_PROTECT_HIDDEN,
			  "state dir", false);
	assert_non_null(fsb_protected_match(&p, "/nonexistent-fsb/home/.local", FSB_OP_RENAME_FROM));
	assert_non_null(fsb_protected_match(&p, "/nonexistent-fsb/home", FSB_OP_DELETE));
	/* Writing into an ancestor is not moving it. */
	assert_null(fsb_protected_match(&p, "/nonexistent-fsb/home/.local", FSB_OP_MKDIR));
	assert_null(fsb_protected_match(&p, "/nonexistent-fsb/home/notes", FSB_OP_DELETE));
	fsb_protected_free(&p);
}

static void test_symlinked_dir_is_protected_by_its_real_path(void **state)
{
	struct fsb_protected p = { 0 };
	char tmpl[] = "/tmp/fsb-prot-XXXXXX", real[256], link[256], inside[300];

	(void)state;
	assert_non_null(mkdtemp(tmpl));
	snprintf(real, sizeof(real), "%s/real", tmpl);
	snprintf(link, sizeof(link), "%s/link", tmpl);
	assert_int_equal(mkdir(real, 0700), 0);
	assert_int_equal(symlink(real, link), 0);
	fsb_protected_add(&p, link, FSB_PROTECT_HIDDEN, "state dir", false);
	snprintf(inside, sizeof(inside), "%s/audit", real);
	assert_non_null(fsb_protected_match(&p, inside, FSB_OP_READ));
	fsb_protected_free(&p);
	unlink(link);
	rmdir(real);
	rmdir(tmpl);
}

static void test_pack_entries_are_replaced_on_reload(void **state)
{
	struct fsb_protected p = { 0 };

	(void)state;
	fsb_protected_add(&p, "/nonexistent-fsb/state", FSB_PROTECT_HIDDEN, "state dir", false);
	fsb_protected_add(&p, "/nonexistent-fsb/packs/old.lua", FSB_PROTECT_READONLY, "pack file", true);
	assert_non_null(fsb_protected_match(&p, "/nonexistent-fsb/packs/old.lua", FSB_OP_WRITE));
	fsb_protected_drop_pack(&p);
	fsb_protected_add(&p, "/nonexistent-fsb/packs/new.lua", FSB_PROTECT_READONLY, "pack file", true);
	assert_null(fsb_protected_match(&p, "/nonexistent-fsb/packs/old.lua", FSB_OP_WRITE));
	assert_non_null(fsb_protected_match(&p, "/nonexistent-fsb/packs/new.lua", FSB_OP_WRITE));
	assert_non_null(fsb_protected_match(&p, "/nonexistent-fsb/state/x", FSB_OP_WRITE));
	fsb_protected_free(&p);
}

static void test_rules_dir_protects_only_its_lua_names(void **state)
{
	struct fsb_protected p = { 0 };

	(void)state;
	fsb_protected_add(&p, "/nonexistent-fsb/ws", FSB_PROTECT_PACK_NAMES, "rules dir", false);
	/* A new or changed .lua there could be picked up by an include. */
	assert_non_null(fsb_protected_match(&p, "/nonexistent-fsb/ws/credentials.lua", FSB_OP_CREATE));
	assert_non_null(fsb_protected_match(&p, "/nonexistent-fsb/ws/pack.lua", FSB_OP_WRITE));
	assert_null(fsb_protected_match(&p, "/nonexistent-fsb/ws/pack.lua", FSB_OP_READ));
	/* Everything else in the directory is the policy's business. */
	assert_null(fsb_protected_match(&p, "/nonexistent-fsb/ws/main.c", FSB_OP_WRITE));
	assert_null(fsb_protected_match(&p, "/nonexistent-fsb/ws/src/x.lua", FSB_OP_WRITE));
	assert_null(fsb_protected_match(&p, "/nonexistent-fsb/ws/.lua", FSB_OP_WRITE));
	/* Moving the directory would move the packs with it. */
	assert_non_null(fsb_protected_match(&p, "/nonexistent-fsb/ws", FSB_OP_RENAME_FROM));
	fsb_protected_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hidden_tree_denies_every_op),
		cmocka_unit_test(test_readonly_tree_allows_reads_only),
		cmocka_unit_test(test_moving_an_ancestor_is_denied),
		cmocka_unit_test(test_symlinked_dir_is_protected_by_its_real_path),
		cmocka_unit_test(test_pack_entries_are_replaced_on_reload),
		cmocka_unit_test(test_rules_dir_protects_only_its_lua_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
