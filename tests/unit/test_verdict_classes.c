/*
 * test_verdict_classes.c — the verdict cache keys a change by its class
 * (broker.c, verdict_class()) on a real broker: the allow of a create
 * answers the chown, chmod and times of the same file from the cache (what
 * `tar x` makes of each file), but never a change of another class whose
 * rules differ (denyWrite lets a delete through, not a write), never a
 * change of a file that has gained a second name (the hard-link rule), and
 * a deny is never answered across ops.
 *
 * And the allow of a directory's plain names (policy.h,
 * fsb_policy_name_is_plain; broker.c, any_name_key()): a change of a name
 * the pack's globs do not single out is answered as the pack allowed
 * another such name of the same directory, without the Lua engine; a name
 * a glob singles out (in either case), a name in another directory and any
 * deny are judged by the pack; a reload lets no directory's allow of the
 * old pack answer again.
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

static char root[] = "/tmp/fsb-verdict-classes-XXXXXX";
static char ws[PATH_MAX], pack[PATH_MAX + 16];
static struct fsb_broker broker;

/* The pack, with `more` added to its denyModify list. */
static const char pack_format[] =
	"return { name = \"classes\",\n"
	"  fsProfile = { read = { \"/**\" }, modify = { \"${workspace}/**\" } },\n"
	"  denyWrite = { \"${workspace}/kept\", \"**/.env\", \"${workspace}/src/*.lock\" },\n"
	"  denyModify = { \"${workspace}/locked/**\"%s },\n"
	"  hardlinks = \"ask\" }\n";

static void put(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void write_pack(const char *more)
{
	char text[sizeof(pack_format) + 128];

	snprintf(text, sizeof(text), pack_format, more);
	put(pack, text);
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
	snprintf(pack, sizeof(pack), "%s/classes.lua", root);
	mkdir(ws, 0700);
	for (const char *const *d = (const char *const[]){ "src", "lib", "locked", NULL }; *d; d++) {
		snprintf(dir, sizeof(dir), "%s/%s", ws, *d);
		mkdir(dir, 0700);
	}
	write_pack("");
	if (getenv("FSBROKER_LUA_DIR") == NULL)
		setenv("FSBROKER_LUA_DIR", LUADIR, 1);
	if (fsb_config_build(&cfg, pack, ws, state_dir, err, sizeof(err)) < 0 ||
	    fsb_broker_init(&broker, NULL, &cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "test_verdict_classes: %s\n", err);
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

/* The broker's decision on `op` of ws/`name`, and whether the cache gave it. */
static enum fsb_decision decide(enum fsb_op op, const char *name, bool *from_cache)
{
	static struct fsb_access acc;
	char path[PATH_MAX];
	unsigned long hits = broker.verdict_cache.hits;

	snprintf(path, sizeof(path), "%s/%s", ws, name);
	memset(&acc, 0, sizeof(acc));
	acc.op = op;
	acc.requested = path;
	acc.strategy = op == FSB_OP_CREATE ? FSB_RESOLVE_THROUGH_PARENT : FSB_RESOLVE_EXISTING;
	acc.session = "s";
	acc.tool_call = "";
	acc.pid = getpid();
	acc.uid = getuid();
	fsb_broker_decide(&broker, &acc);
	*from_cache = broker.verdict_cache.hits > hits;
	return acc.verdict.decision;
}

static void the_create_of_a_file_answers_its_metadata_from_the_cache(void **state)
{
	char path[PATH_MAX];
	bool cached;

	(void)state;
	assert_int_equal(decide(FSB_OP_CREATE, "made", &cached), FSB_ALLOW);
	assert_false(cached);
	snprintf(path, sizeof(path), "%s/made", ws);
	put(path, "x\n");	/* the create happened */
	for (enum fsb_op op = FSB_OP_CHOWN; op <= FSB_OP_UTIMES; op++) {
		assert_int_equal(decide(op, "made", &cached), FSB_ALLOW);
		assert_true(cached);
	}
	assert_int_equal(decide(FSB_OP_CHMOD, "made", &cached), FSB_ALLOW);
	assert_true(cached);
}

static void an_allowed_delete_never_answers_a_denied_write(void **state)
{
	char path[PATH_MAX];
	bool cached;

	(void)state;
	snprintf(path, sizeof(path), "%s/kept", ws);
	put(path, "keep\n");
	/* denyWrite lets a name be taken away ... */
	assert_int_equal(decide(FSB_OP_DELETE, "kept", &cached), FSB_ALLOW);
	assert_int_equal(decide(FSB_OP_RENAME_FROM, "kept", &cached), FSB_ALLOW);
	assert_true(cached);
	/* ... but not the file changed, however often it is asked. */
	for (int i = 0; i < 2; i++) {
		assert_int_equal(decide(FSB_OP_WRITE, "kept", &cached), FSB_DENY);
		assert_false(cached);
		assert_int_equal(decide(FSB_OP_CHMOD, "kept", &cached), FSB_DENY);
		assert_false(cached);
		assert_int_equal(decide(FSB_OP_MKDIR, "kept", &cached), FSB_DENY);
		assert_false(cached);
	}
}

static void a_file_with_a_second_name_is_judged_again_for_every_op(void **state)
{
	char path[PATH_MAX], other[PATH_MAX];
	bool cached;

	(void)state;
	snprintf(path, sizeof(path), "%s/linked", ws);
	snprintf(other, sizeof(other), "%s/other-name", root);
	put(path, "one name\n");
	assert_int_equal(decide(FSB_OP_WRITE, "linked", &cached), FSB_ALLOW);
	assert_int_equal(link(path, other), 0);
	/* hardlinks = "ask": a change through this name changes the other. */
	assert_int_equal(decide(FSB_OP_CHMOD, "linked", &cached), FSB_ASK);
	assert_false(cached);
	assert_int_equal(decide(FSB_OP_UTIMES, "linked", &cached), FSB_ASK);
	assert_false(cached);
	assert_int_equal(unlink(other), 0);
}

/* ---- plain names ---------------------------------------------------------- */

static void a_plain_name_takes_the_allow_of_another_in_its_directory(void **state)
{
	bool cached;

	(void)state;
	assert_int_equal(decide(FSB_OP_CREATE, "src/main.c", &cached), FSB_ALLOW);
	assert_false(cached);
	assert_int_equal(decide(FSB_OP_CREATE, "src/util.c", &cached), FSB_ALLOW);
	assert_true(cached);
	assert_int_equal(decide(FSB_OP_CREATE, "src/README", &cached), FSB_ALLOW);
	assert_true(cached);
	/* Another directory has an allow of its own to earn. */
	assert_int_equal(decide(FSB_OP_CREATE, "lib/a.c", &cached), FSB_ALLOW);
	assert_false(cached);
}

static void a_name_a_glob_singles_out_is_judged_by_the_pack(void **state)
{
	bool cached;

	(void)state;
	assert_int_equal(decide(FSB_OP_CREATE, "src/one.c", &cached), FSB_ALLOW);
	assert_int_equal(decide(FSB_OP_CREATE, "src/.env", &cached), FSB_DENY);
	assert_false(cached);
	assert_int_equal(decide(FSB_OP_CREATE, "src/Cargo.lock", &cached), FSB_DENY);
	assert_false(cached);
	/* Not denied (the globs are case-sensitive here), but singled out
	 * all the same: the pack judges it. */
	assert_int_equal(decide(FSB_OP_CREATE, "src/Cargo.LOCK", &cached), FSB_ALLOW);
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
		assert_int_equal(decide(FSB_OP_CREATE, name, &cached), FSB_DENY);
		assert_false(cached);
	}
}

static void a_reload_lets_no_allow_of_the_old_pack_answer(void **state)
{
	char err[2048];
	bool cached;

	(void)state;
	assert_int_equal(decide(FSB_OP_CREATE, "src/before.c", &cached), FSB_ALLOW);
	write_pack(", \"${workspace}/src/**\"");
	assert_int_equal(fsb_broker_reload(&broker, "test", err, sizeof(err)), 0);
	assert_int_equal(decide(FSB_OP_CREATE, "src/after.c", &cached), FSB_DENY);
	assert_false(cached);
	write_pack("");
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
		cmocka_unit_test(the_create_of_a_file_answers_its_metadata_from_the_cache),
		cmocka_unit_test(an_allowed_delete_never_answers_a_denied_write),
		cmocka_unit_test(a_file_with_a_second_name_is_judged_again_for_every_op),
		cmocka_unit_test(a_plain_name_takes_the_allow_of_another_in_its_directory),
		cmocka_unit_test(a_name_a_glob_singles_out_is_judged_by_the_pack),
		cmocka_unit_test(a_deny_is_never_kept_for_the_directory),
		cmocka_unit_test(a_reload_lets_no_allow_of_the_old_pack_answer),
		cmocka_unit_test(a_pack_that_picks_names_by_a_class_has_no_plain_names),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
