/*
 * test_write_grant.c — one write-open from its decision to its fd, each
 * branch of write_grant.h on a real broker (a pack of its own, a workspace
 * and a state dir in a temp dir): a grant backs up and truncates; a create
 * gets exactly its mode; a file that appears after the decision is decided
 * again as a write (without O_EXCL) or is EEXIST (with it); a failed audit
 * takes back what was created; a failed truncate is withdrawn with a
 * second line; a deny opens nothing; a file over the size limit is an ask
 * with its prompt block; SANDBOX backs up and opens nothing.
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
#include "write_grant.h"

static char root[] = "/tmp/fsb-write-grant-XXXXXX";
static char ws[PATH_MAX], state_dir[PATH_MAX];
static struct fsb_broker broker;

/* What the grant's callbacks saw. */
struct seen {
	int audits;
	char grants[4][16];	/* each line's grant: "fd", "withdrawn", "-" */
	int audit_rc;		/* what the audit answers */
	int opens;
	const char *appear;	/* the open makes this file first, then says EEXIST */
	bool read_only;		/* the open hands out a read-only fd */
};

static int fake_audit(void *arg, const struct fsb_access *acc, const char *grant,
		      const char *error)
{
	struct seen *s = arg;

	(void)acc;
	(void)error;
	if (s->audits < 4)
		snprintf(s->grants[s->audits], sizeof(s->grants[0]), "%s", grant ? grant : "-");
	s->audits++;
	return s->audit_rc;
}

static int fake_open(void *arg, const struct fsb_access *acc, int flags, mode_t mode,
		     fsb_grant_backup_fn backup, void *backup_arg)
{
	struct seen *s = arg;
	int fd;

	s->opens++;
	if (s->appear != NULL && s->opens == 1) {
		fd = open(s->appear, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, "raced\n", 6), 6);
		close(fd);
		return -EEXIST;
	}
	if (s->read_only)
		return open(acc->res.path, O_RDONLY | O_CLOEXEC);
	return fsb_grant_open(broker.rootfd, &acc->res, flags, mode, backup, backup_arg);
}

static void put(const char *path, const char *text, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	close(fd);
}

static off_t size_of(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_size : -1;
}

static const char pack_text[] =
	"return { name = \"grant\",\n"
	"  fsProfile = { read = { \"/**\" }, modify = { \"${workspace}/**\" } },\n"
	"  backup = { maxSizeMB = 1, onTooLarge = \"ask\" } }\n";

static int setup(void **state)
{
	char pack[PATH_MAX + 16], err[2048];
	struct fsb_broker_config cfg;

	(void)state;
	if (mkdtemp(root) == NULL)
		return -1;
	snprintf(ws, sizeof(ws), "%s/ws", root);
	snprintf(state_dir, sizeof(state_dir), "%s/state", root);
	snprintf(pack, sizeof(pack), "%s/grant.lua", root);
	mkdir(ws, 0700);
	put(pack, pack_text, sizeof(pack_text) - 1);
	if (getenv("FSBROKER_LUA_DIR") == NULL)
		setenv("FSBROKER_LUA_DIR", LUADIR, 1);
	if (fsb_config_build(&cfg, pack, ws, state_dir, err, sizeof(err)) < 0 ||
	    fsb_broker_init(&broker, NULL, &cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "test_write_grant: %s\n", err);
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

/* A grant of `path` with `flags` and the fakes in `s`. */
static void grant(struct fsb_write_grant *g, struct fsb_access *acc, struct seen *s,
		  const char *path, int flags, mode_t mode)
{
	memset(acc, 0, sizeof(*acc));
	acc->op = FSB_OP_WRITE;
	acc->requested = path;
	acc->strategy = (flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL)
				? FSB_RESOLVE_THROUGH_PARENT
				: FSB_RESOLVE_EXISTING_OR_CREATABLE;
	acc->session = "s";
	acc->tool_call = "";
	acc->pid = getpid();
	acc->uid = getuid();
	*g = (struct fsb_write_grant){
		.b = &broker,
		.session = "s",
		.rootfd = broker.rootfd,
		.flags = flags,
		.mode = mode,
		.exact_mode = true,
		.backup_phase = "test-backup",
		.open = fake_open,
		.audit = fake_audit,
		.arg = s,
	};
	fsb_write_grant(g, acc);
}

static void test_a_grant_backs_up_then_truncates(void **state)
{
	struct fsb_write_grant g;
	struct fsb_access acc;
	struct seen s = { 0 };
	char p[PATH_MAX + 16];

	(void)state;
	snprintf(p, sizeof(p), "%s/old.txt", ws);
	put(p, "old content\n", 12);
	grant(&g, &acc, &s, p, O_WRONLY | O_TRUNC, 0);
	assert_true(g.fd >= 0);
	assert_int_equal(acc.errnum, 0);
	assert_null(g.backup.skipped);
	assert_int_equal(size_of(p), 0);
	assert_int_equal(s.audits, 1);
	assert_string_equal(s.grants[0], "fd");
	close(g.fd);
}

static void test_a_create_gets_exactly_its_mode(void **state)
{
	struct fsb_write_grant g;
	struct fsb_access acc;
	struct seen s = { 0 };
	char p[PATH_MAX + 16];
	struct stat st;
	mode_t old = umask(077);

	(void)state;
	snprintf(p, sizeof(p), "%s/new.txt", ws);
	grant(&g, &acc, &s, p, O_WRONLY | O_CREAT, 0644);
	umask(old);
	assert_true(g.fd >= 0);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	close(g.fd);
}

static void test_a_file_appearing_after_the_decision_is_decided_again(void **state)
{
	struct fsb_write_grant g;
	struct fsb_access acc;
	char p[PATH_MAX + 16];
	struct seen s = { 0 };

	(void)state;
	snprintf(p, sizeof(p), "%s/raced.txt", ws);
	s.appear = p;
	grant(&g, &acc, &s, p, O_WRONLY | O_CREAT, 0644);
	assert_int_equal(s.opens, 2);
	assert_true(g.fd >= 0);
	/* Judged again: as a write of the file that is there now. */
	assert_true(acc.res.exists);
	assert_int_equal(acc.errnum, 0);
	close(g.fd);
}

static void test_o_excl_meeting_a_file_that_appeared_is_eexist(void **state)
{
	struct fsb_write_grant g;
	struct fsb_access acc;
	char p[PATH_MAX + 16];
	struct seen s = { 0 };

	(void)state;
	snprintf(p, sizeof(p), "%s/excl.txt", ws);
	s.appear = p;
	grant(&g, &acc, &s, p, O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_int_equal(s.opens, 1);
	assert_int_equal(g.fd, -1);
	assert_int_equal(acc.errnum, EEXIST);
	assert_int_equal(s.audits, 1);
	assert_string_equal(s.grants[0], "-");
}

static void test_a_failed_audit_takes_back_the_created_file(void **state)
{
	struct fsb_write_grant g;
	struct fsb_access acc;
	char p[PATH_MAX + 16];
	struct seen s = { .audit_rc = -EIO };

	(void)state;
	snprintf(p, sizeof(p), "%s/unaudited.txt", ws);
	grant(&g, &acc, &s, p, O_WRONLY | O_CREAT, 0644);
	assert_true(g.audit_failed);
	assert_int_equal(g.fd, -1);
	assert_int_equal(acc.errnum, EIO);
	assert_int_equal(access(p, F_OK), -1);
}

static void test_a_failed_truncate_is_withdrawn_with_a_second_line(void **state)
{
	struct fsb_write_grant g;
	struct fsb_access acc;
	char p[PATH_MAX + 16];
	struct seen s = { .read_only = true };

	(void)state;
	snprintf(p, sizeof(p), "%s/keep.txt", ws);
	put(p, "keep me\n", 8);
	grant(&g, &acc, &s, p, O_WRONLY | O_TRUNC, 0);
	assert_int_equal(g.fd, -1);
	assert_true(acc.errnum != 0);
	assert_int_equal(s.audits, 2);
	assert_string_equal(s.grants[0], "fd");
	assert_string_equal(s.grants[1], "withdrawn");
	assert_int_equal(size_of(p), 8);
}

static void test_a_deny_opens_nothing_and_is_audited(void **state)
{
	struct fsb_write_grant g;
	struct fsb_access acc;
	char p[PATH_MAX + 16];
	struct seen s = { 0 };

	(void)state;
	snprintf(p, sizeof(p), "%s/outside.txt", root);
	grant(&g, &acc, &s, p, O_WRONLY | O_CREAT, 0644);
	assert_int_equal(acc.verdict.decision, FSB_DENY);
	assert_int_equal(s.opens, 0);
	assert_int_equal(g.fd, -1);
	assert_int_equal(s.audits, 1);
	assert_int_equal(access(p, F_OK), -1);
}

static void test_a_file_over_the_limit_is_an_ask_with_its_block(void **state)
{
	static char big[(1 << 20) + 4096];
	struct fsb_write_grant g;
	struct fsb_access acc;
	char p[PATH_MAX + 16];
	struct seen s = { 0 };

	(void)state;
	memset(big, 'x', sizeof(big));
	snprintf(p, sizeof(p), "%s/big.bin", ws);
	put(p, big, sizeof(big));
	grant(&g, &acc, &s, p, O_WRONLY | O_TRUNC, 0);
	assert_int_equal(acc.verdict.decision, FSB_ASK);
	assert_string_equal(acc.verdict.rule, FSB_TOO_LARGE_RULE);
	assert_true(acc.block_id[0] != '\0');
	assert_int_equal(acc.errnum, EACCES);
	assert_int_equal(g.fd, -1);
	assert_int_equal(size_of(p), (off_t)sizeof(big));
	assert_int_equal(s.audits, 1);
}

static void test_sandbox_backs_up_and_opens_nothing(void **state)
{
	struct fsb_write_grant g;
	struct fsb_access acc;
	char p[PATH_MAX + 16];
	struct seen s = { 0 };

	(void)state;
	snprintf(p, sizeof(p), "%s/client-opens.txt", ws);
	put(p, "mine\n", 5);
	memset(&acc, 0, sizeof(acc));
	acc.op = FSB_OP_WRITE;
	acc.requested = p;
	acc.strategy = FSB_RESOLVE_EXISTING_OR_CREATABLE;
	acc.session = "s";
	acc.tool_call = "";
	g = (struct fsb_write_grant){
		.b = &broker, .session = "s", .rootfd = broker.rootfd, .no_open = true,
		.backup_phase = "test-backup", .open = fake_open, .audit = fake_audit, .arg = &s,
	};
	fsb_write_grant(&g, &acc);
	assert_int_equal(acc.errnum, 0);
	assert_int_equal(acc.verdict.decision, FSB_ALLOW);
	assert_int_equal(s.opens, 0);
	assert_int_equal(g.fd, -1);
	assert_null(g.backup.skipped);
	assert_int_equal(s.audits, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_grant_backs_up_then_truncates),
		cmocka_unit_test(test_a_create_gets_exactly_its_mode),
		cmocka_unit_test(test_a_file_appearing_after_the_decision_is_decided_again),
		cmocka_unit_test(test_o_excl_meeting_a_file_that_appeared_is_eexist),
		cmocka_unit_test(test_a_failed_audit_takes_back_the_created_file),
		cmocka_unit_test(test_a_failed_truncate_is_withdrawn_with_a_second_line),
		cmocka_unit_test(test_a_deny_opens_nothing_and_is_audited),
		cmocka_unit_test(test_a_file_over_the_limit_is_an_ask_with_its_block),
		cmocka_unit_test(test_sandbox_backs_up_and_opens_nothing),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
