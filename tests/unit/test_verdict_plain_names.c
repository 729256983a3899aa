/*
 * test_verdict_plain_names.c — the allow of a directory's plain names
 * (policy.h, fsb_policy_name_is_plain; broker.c, any_name_key()) on a real
 * broker: a change of a name the pack's globs do not single out is answered
 * as the pack allowed another such name of the same directory, without the
 * Lua engine; a name a glob singles out (in either case), a name in another
 * directory and any deny are judged by the pack; a reload lets no
 * directory's allow of the old pack answer again.
 */
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"

static char root[] = "/tmp/fsb-plain-names-XXXXXX";
static char ws[PATH_MAX], pack[PATH_MAX + 16];
static struct fsb_broker broker;

static const char pack_text[] =
	"return { name = \"plain\",\n"
	"  fsProfile = { read = { \"/**\" }, modify = { \"${workspace}/**\" } },\n"
	"  denyWrite = { \"**/.env\", \"${workspace}/src/*.lock\" },\n"
	"  denyModify = { \"${workspace}/locked/**\" } }\n";

/* The same pack, with src/ no longer the command's to change. */
static const char pack_text_src_denied[] =
	"return { name = \"plain\",\n"
	"  fsProfile = { read = { \"/**\" }, modify = { \"${workspace}/**\" } },\n"
	"  denyWrite = { \"**/.env\", \"${workspace}/src/*.lock\" },\n"
	"  denyModify = { \"${workspace}/locked/**\", \"${workspace}/src/**\" } }\n";

static void put(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static int setup(void **state)
{
	char dir[PATH_MAX + 16], state_dir[PATH_MAX], err[2048];
	struct fsb_broker_config cfg;

	(void)state;
	if (mkdtemp(root) == NULL)
		return -1;
	snprintf(ws, sizeof(ws), "%s/ws", root);
	snprintf(state_dir, sizeof(state_dir), "%s/state", root);
	snprintf(pack, sizeof(pack), "%s/plain.lua", root);
	mkdir(ws, 0700);
	for (const char *const *d = (const char *const[]){ "src", "lib", "locked", NULL }; *d; d++) {
		snprintf(dir, sizeof(dir), "%s/%s", ws, *d);
		mkdir(dir, 0700);
	}
	put(pack, pack_text);
	if (getenv("FSBROKER_LUA_DIR") == NULL)
		setenv("FSBROKER_LUA_DIR", LUADIR, 1);
	if (fsb_config_build(&cfg, pack, ws, state_dir, err, sizeof(err)) < 0 ||
	    fsb_broker_init(&broker, NULL, &cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "test_verdict_plain_names: %s\n", err);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	fsb_broker_free(&broker);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

/* The broker's decision on a create of ws/`name`, and whether the cache
 * gave it. */
static enum fsb_decision create(const char *name, bool *from_cache)
{
	static struct fsb_access acc;
	char path[PATH_MAX];
	unsigned long hits = broker.verdict_cache.hits;

	snprintf(path, sizeof(path), "%s/%s", ws, name);
	memset(&acc, 0, sizeof(acc));
	acc.op = FSB_OP_CREATE;
	acc.requested = path;
	acc.strategy = FSB_RESOLVE_THROUGH_PARENT;
	acc.session = "s";
	acc.tool_call = "";
	acc.pid = getpid();
	acc.uid = getuid();
	fsb_broker_decide(&broker, &acc);
	*from_cache = broker.verdict_cache.hits > hits;
	return acc.verdict.decision;
}

static void a_plain_name_takes_the_allow_of_another_in_its_directory(void **state)
{
	bool cached;

	(void)state;
	assert_int_equal(create("src/main.c", &cached), FSB_ALLOW);
	assert_false(cached);
	assert_int_equal(create("src/util.c", &cached), FSB_ALLOW);
	assert_true(cached);
	assert_int_equal(create("src/README", &cached), FSB_ALLOW);
	assert_true(cached);
	/* Another directory has an allow of its own to earn. */
	assert_int_equal(create("lib/a.c", &cached), FSB_ALLOW);
	assert_false(cached);
}

static void a_name_a_glob_singles_out_is_judged_by_the_pack(void **state)
{
	bool cached;

	(void)state;
	assert_int_equal(create("src/one.c", &cached), FSB_ALLOW);
	assert_int_equal(create("src/.env", &cached), FSB_DENY);
	assert_false(cached);
	assert_int_equal(create("src/Cargo.lock", &cached), FSB_DENY);
	assert_false(cached);
	/* Not denied (the globs are case-sensitive here), but singled out
	 * all the same: the pack judges it. */
	assert_int_equal(create("src/Cargo.LOCK", &cached), FSB_ALLOW);
	assert_false(cached);
	/* The workspace's own name is one the pack's globs name. */
	assert_false(fsb_policy_name_is_plain(broker.policy, "ws"));
	assert_false(fsb_policy_name_is_plain(broker.policy, "."));
	assert_false(fsb_policy_name_is_plain(broker.policy, ".."));
	assert_false(fsb_policy_name_is_plain(broker.policy, ""));
	assert_true(fsb_policy_name_is_plain(broker.policy, "lock"));
}

static void a_deny_is_never_kept_for_the_directory(void **state)
{
	bool cached;

	(void)state;
	for (int i = 0; i < 3; i++) {
		char name[32];

		snprintf(name, sizeof(name), "locked/f%d", i);
		assert_int_equal(create(name, &cached), FSB_DENY);
		assert_false(cached);
	}
}

static void a_reload_lets_no_allow_of_the_old_pack_answer(void **state)
{
	char err[2048];
	bool cached;

	(void)state;
	assert_int_equal(create("src/before.c", &cached), FSB_ALLOW);
	put(pack, pack_text_src_denied);
	assert_int_equal(fsb_broker_reload(&broker, "test", err, sizeof(err)), 0);
	assert_int_equal(create("src/after.c", &cached), FSB_DENY);
	assert_false(cached);
	put(pack, pack_text);
	assert_int_equal(fsb_broker_reload(&broker, "test", err, sizeof(err)), 0);
}

static void a_pack_that_picks_names_by_a_class_has_no_plain_names(void **state)
{
	char path[PATH_MAX + 16], state_dir[PATH_MAX + 16], err[2048];
	struct fsb_broker_config cfg;
	struct fsb_broker other;

	(void)state;
	snprintf(path, sizeof(path), "%s/class.lua", root);
	put(path, "return { name = \"class\",\n"
		  "  fsProfile = { read = { \"/**\" }, modify = { \"${workspace}/**\" } },\n"
		  "  denyWrite = { \"${workspace}/src/[ab]*\" } }\n");
	snprintf(state_dir, sizeof(state_dir), "%s/state-class", root);
	assert_int_equal(fsb_config_build(&cfg, path, ws, state_dir, err, sizeof(err)), 0);
	assert_int_equal(fsb_broker_init(&other, NULL, &cfg, err, sizeof(err)), 0);
	assert_false(fsb_policy_name_is_plain(other.policy, "main.c"));
	fsb_broker_free(&other);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_plain_name_takes_the_allow_of_another_in_its_directory),
		cmocka_unit_test(a_name_a_glob_singles_out_is_judged_by_the_pack),
		cmocka_unit_test(a_deny_is_never_kept_for_the_directory),
		cmocka_unit_test(a_reload_lets_no_allow_of_the_old_pack_answer),
		cmocka_unit_test(a_pack_that_picks_names_by_a_class_has_no_plain_names),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
