/*
 * test_backup_prune.c — pruning a backup store to a size (backup_prune.c):
 * the quota the core keeps after sealing removes the oldest sealed cycles
 * until the store is under it, with the store open and locked by the same
 * process, keeps every object a remaining cycle names, the newest sealed
 * cycle and the open one, and touches nothing under the quota or in a dry
 * run; sizes as --max-size reads them; the pack's backup.quotaMB.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unit.h"
#include "backup.h"
#include "backup_prune.h"
#include "policy.h"

#define SESSION "sess-q"
#define OBJ_SIZE 65536

struct fixture {
	char dir[128];
	char state[160];
	struct fsb_store *s;
	char hex[8][FSB_SHA256_HEX_LEN + 1];	/* the object of cycle i (1-based) */
	char log[8192];		/* what the prune reported, one line each */
	int nremoved, nnotes, nerrors;
};

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	const char *tmp = getenv("TMPDIR");

	if (f == NULL)
		return -1;
	if (tmp == NULL || tmp[0] == '\0' || strlen(tmp) > 80)
		tmp = "/tmp";
	snprintf(f->dir, sizeof(f->dir), "%s/fsb-prune-XXXXXX", tmp);
	if (mkdtemp(f->dir) == NULL) {
		free(f);
		return -1;
	}
	snprintf(f->state, sizeof(f->state), "%s/state", f->dir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	fsb_store_close(f->s);
	nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

static void report(void *arg, enum fsb_prune_msg kind, const char *msg)
{
	struct fixture *f = arg;
	size_t n = strlen(f->log);

	snprintf(f->log + n, sizeof(f->log) - n, "%s\n", msg);
	if (kind == FSB_PRUNE_REMOVED)
		f->nremoved++;
	else if (kind == FSB_PRUNE_NOTE)
		f->nnotes++;
	else
		f->nerrors++;
}

/* Back up one file of OBJ_SIZE bytes filled with `fill` in the open cycle
 * (opened when none is); its object's name goes to *hex. */
static void record_file(struct fixture *f, const char *name, char fill, char *hex)
{
	char path[256], *buf = malloc(OBJ_SIZE);
	struct fsb_backup_req r = { .op = "write", .on_too_large = FSB_TOO_LARGE_FAIL };
	struct fsb_backup_result res;
	struct stat st;
	int fd;

	assert_non_null(buf);
	memset(buf, fill, OBJ_SIZE);
	snprintf(path, sizeof(path), "%s/%s", f->dir, name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, OBJ_SIZE), OBJ_SIZE);
	free(buf);
	assert_int_equal(fstat(fd, &st), 0);
	r.path = r.resolved = path;
	r.prior = &st;
	r.fd = fd;
	assert_int_equal(fsb_store_record(f->s, &r, &res), 0);
	close(fd);
	assert_int_equal(strlen(res.object), FSB_SHA256_HEX_LEN);
	memcpy(hex, res.object, FSB_SHA256_HEX_LEN + 1);
}

/* Cycles 1..nsealed sealed, each backing up one file of its own content
 * ('a', 'b', ...), then, with `open`, cycle nsealed+1 left open. */
static void build_store(struct fixture *f, int nsealed, bool open)
{
	char err[256] = "", name[32];

	assert_int_equal(fsb_store_open(f->state, SESSION, &f->s, err, sizeof(err)), 0);
	for (int i = 1; i <= nsealed + open; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		record_file(f, name, (char)('a' + i - 1), f->hex[i]);
		if (i <= nsealed)
			assert_int_equal(fsb_store_seal(f->s, "turn", "", err, sizeof(err)), i);
	}
}

static bool cycle_exists(const struct fixture *f, int n)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/cycles/%d", fsb_store_dir(f->s), n);
	return access(path, F_OK) == 0;
}

static bool object_exists(const struct fixture *f, const char *hex)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/objects/%.2s/%s", fsb_store_dir(f->s), hex, hex);
	return access(path, F_OK) == 0;
}

/* The bytes of cycle n's own files, measured here. */
static uint64_t cycle_bytes(const struct fixture *f, int n)
{
	const char *files[] = { "journal.jsonl", "cycle.json" };
	uint64_t total = 0;
	char path[512];
	struct stat st;

	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/cycles/%d/%s", fsb_store_dir(f->s), n, files[i]);
		if (stat(path, &st) == 0)
			total += (uint64_t)st.st_size;
	}
	return total;
}

static void test_quota_removes_oldest_sealed_cycles_while_the_store_is_open(void **state)
{
	struct fixture *f = *state;
	uint64_t all = 0, quota;
	char err[256];

	build_store(f, 4, true);
	for (int i = 1; i <= 5; i++)
		all += cycle_bytes(f, i) + OBJ_SIZE;
	/* Exactly what is left without cycle 1: it (and its object) must go,
	 * and nothing else. */
	quota = all - (cycle_bytes(f, 1) + OBJ_SIZE);
	/* The store is open, so its flock is held by this very process: a
	 * prune that took the lock again would fail here. */
	assert_int_equal(fsb_backup_prune_to(fsb_store_dir(f->s), quota, false, report, f), 0);
	assert_int_equal(f->nerrors, 0);
	assert_non_null(strstr(f->log, "removed cycle 1 "));
	assert_false(cycle_exists(f, 1));
	assert_false(object_exists(f, f->hex[1]));
	for (int i = 2; i <= 5; i++) {
		assert_true(cycle_exists(f, i));
		assert_true(object_exists(f, f->hex[i]));
	}

	/* A quota nothing fits: every sealed cycle goes but the newest, and
	 * the open one stays; the store says it is still over. */
	f->log[0] = '\0';
	assert_int_equal(fsb_backup_prune_to(fsb_store_dir(f->s), 0, false, report, f), 0);
	assert_false(cycle_exists(f, 2));
	assert_false(cycle_exists(f, 3));
	assert_true(cycle_exists(f, 4));
	assert_true(cycle_exists(f, 5));
	assert_false(object_exists(f, f->hex[2]));
	assert_false(object_exists(f, f->hex[3]));
	assert_true(object_exists(f, f->hex[4]));
	assert_true(object_exists(f, f->hex[5]));
	assert_int_equal(f->nnotes, 1);
	assert_non_null(strstr(f->log, "over its quota of 0"));

	/* The store goes on working, and numbers are not reused. */
	assert_int_equal(fsb_store_seal(f->s, "turn", "", err, sizeof(err)), 5);
	record_file(f, "f6", 'z', f->hex[6]);
	assert_int_equal(fsb_store_cycle(f->s), 6);
}

static void test_quota_keeps_objects_a_remaining_cycle_names(void **state)
{
	struct fixture *f = *state;
	char err[256] = "", shared[FSB_SHA256_HEX_LEN + 1];

	build_store(f, 2, false);
	/* Cycle 3 backs up the same content as cycle 1. */
	record_file(f, "again", 'a', shared);
	assert_string_equal(shared, f->hex[1]);
	assert_int_equal(fsb_store_seal(f->s, "turn", "", err, sizeof(err)), 3);
	/* Room for cycle 3 and its object only. */
	assert_int_equal(fsb_backup_prune_to(fsb_store_dir(f->s), cycle_bytes(f, 3) + OBJ_SIZE,
					     false, report, f), 0);
	assert_false(cycle_exists(f, 1));
	assert_false(cycle_exists(f, 2));
	assert_true(cycle_exists(f, 3));
	assert_true(object_exists(f, f->hex[1]));	/* named by cycle 3 */
	assert_false(object_exists(f, f->hex[2]));
	assert_int_equal(f->nnotes, 0);
}

static void test_quota_under_the_limit_touches_nothing(void **state)
{
	struct fixture *f = *state;

	build_store(f, 3, false);
	assert_int_equal(fsb_backup_prune_to(fsb_store_dir(f->s), 5120ULL << 20, false, report,
					     f), 0);
	assert_string_equal(f->log, "");
	for (int i = 1; i <= 3; i++) {
		assert_true(cycle_exists(f, i));
		assert_true(object_exists(f, f->hex[i]));
	}
}

static void test_quota_dry_run_changes_nothing(void **state)
{
	struct fixture *f = *state;

	build_store(f, 3, false);
	assert_int_equal(fsb_backup_prune_to(fsb_store_dir(f->s), 1, true, report, f), 0);
	assert_non_null(strstr(f->log, "would remove cycle 1 "));
	assert_non_null(strstr(f->log, "would remove cycle 2 "));
	assert_null(strstr(f->log, "cycle 3 "));
	for (int i = 1; i <= 3; i++) {
		assert_true(cycle_exists(f, i));
		assert_true(object_exists(f, f->hex[i]));
	}
}

static void test_prune_result_counts_and_sizes(void **state)
{
	struct fixture *f = *state;
	struct fsb_prune_opts o = {
		.keep = -1, .older_than = -1, .max_bytes = 0, .report = report, .arg = f,
	};
	struct fsb_prune_result res;
	uint64_t c3;

	build_store(f, 3, false);
	c3 = cycle_bytes(f, 3);
	o.max_bytes = c3 + OBJ_SIZE;
	assert_int_equal(fsb_backup_prune(fsb_store_dir(f->s), &o, &res), 0);
	assert_int_equal(res.sealed, 3);
	assert_int_equal(res.cycles, 2);
	assert_int_equal(res.objects, 2);
	assert_true(res.sized);
	assert_int_equal(res.size_after, c3 + OBJ_SIZE);
	assert_true(res.size_before > res.size_after + 2 * OBJ_SIZE);
	/* Without a spared cycle, --max-size 0 takes the last sealed one too. */
	o.max_bytes = 0;
	assert_int_equal(fsb_backup_prune(fsb_store_dir(f->s), &o, &res), 0);
	assert_int_equal(res.cycles, 1);
	assert_int_equal(res.size_after, 0);
	assert_false(cycle_exists(f, 3));
}

static void test_parse_size(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(fsb_parse_size("123", &v), 0);
	assert_int_equal(v, 123);
	assert_int_equal(fsb_parse_size("1024K", &v), 0);
	assert_int_equal(v, 1024 * 1024);
	assert_int_equal(fsb_parse_size("500M", &v), 0);
	assert_int_equal(v, 500ULL << 20);
	assert_int_equal(fsb_parse_size("2g", &v), 0);
	assert_int_equal(v, 2ULL << 30);
	assert_int_equal(fsb_parse_size("3T", &v), 0);
	assert_int_equal(v, 3ULL << 40);
	assert_int_equal(fsb_parse_size("0", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(fsb_parse_size("", &v), -EINVAL);
	assert_int_equal(fsb_parse_size("-1", &v), -EINVAL);
	assert_int_equal(fsb_parse_size("1.5G", &v), -EINVAL);
	assert_int_equal(fsb_parse_size("5MB", &v), -EINVAL);
	assert_int_equal(fsb_parse_size("12Q", &v), -EINVAL);
	assert_int_equal(fsb_parse_size("99999999999999999999", &v), -ERANGE);
	assert_int_equal(fsb_parse_size("99999999999T", &v), -ERANGE);
}

/* backup.quotaMB reaches the core, clamped. */
static void load_pack_quota(struct fixture *f, const char *backup, uint64_t want)
{
	const char *dirs[] = { NULL };
	struct fsb_policy_opts o = { .luadir = LUADIR, .rules_dirs = dirs, .home = f->dir,
				     .tmp = f->dir, .state = f->state };
	struct fsb_policy *p;
	char pack[256], text[512], err[512] = "";
	FILE *fp;

	snprintf(pack, sizeof(pack), "%s/pack.lua", f->dir);
	snprintf(text, sizeof(text), "return { name = \"quota\", %s }\n", backup);
	fp = fopen(pack, "w");
	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
	o.pack = pack;
	if (fsb_policy_load(&o, &p, err, sizeof(err)) != 0)
		fail_msg("fsb_policy_load: %s", err);
	assert_int_equal(fsb_policy_backup(p)->quota_bytes, want);
	fsb_policy_free(p);
}

static void test_pack_quota_mb(void **state)
{
	struct fixture *f = *state;

	load_pack_quota(f, "", 5120ULL << 20);
	load_pack_quota(f, "backup = { quotaMB = 100 }", 100ULL << 20);
	load_pack_quota(f, "backup = { quotaMB = 0.5 }", 1ULL << 20);
	load_pack_quota(f, "backup = { quotaMB = 1e12 }", 16777216ULL << 20);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_quota_removes_oldest_sealed_cycles_while_the_store_is_open),
		T(test_quota_keeps_objects_a_remaining_cycle_names),
		T(test_quota_under_the_limit_touches_nothing),
		T(test_quota_dry_run_changes_nothing),
		T(test_prune_result_counts_and_sizes),
		T(test_parse_size),
		T(test_pack_quota_mb),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
