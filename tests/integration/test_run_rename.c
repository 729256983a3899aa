/*
 * test_run_rename.c — renames under `fsbroker run` (DESIGN §6.1, "the move
 * itself"): a mv of a tree copies nothing into the store, and a restore
 * after renames of files and directories, RENAME_EXCHANGE, chmod, utimes,
 * writes under the new names and hard links gives back the tree exactly:
 * paths, types, modes, contents, link counts and every mtime, directories'
 * included.
 */
#include "run_fixture.h"

#include <dirent.h>

/* Objects in the session's store and their bytes. */
static void store_size(const struct fixture *f, unsigned long *objects, unsigned long long *bytes)
{
	char dir[PATH_MAX * 2], sub[PATH_MAX * 3], file[PATH_MAX * 4];
	struct dirent *de, *fe;
	struct stat st;
	DIR *d, *s;

	*objects = 0;
	*bytes = 0;
	snprintf(dir, sizeof(dir), "%s/sessions/s/modify_backup/objects", f->state);
	if ((d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
		if ((s = opendir(sub)) == NULL)
			continue;
		while ((fe = readdir(s)) != NULL) {
			if (fe->d_name[0] == '.')
				continue;
			snprintf(file, sizeof(file), "%s/%s", sub, fe->d_name);
			if (lstat(file, &st) == 0) {
				(*objects)++;
				*bytes += (unsigned long long)st.st_size;
			}
		}
		closedir(s);
	}
	closedir(d);
}

static void restore_last(struct fixture *f)
{
	char *out = NULL;
	int st = fsbt_run((char *[]){ (char *)fsbt_binary(), "backup", "restore", "--last",
				      "--state-dir", f->state, "--session", "s", NULL },
			  &out);

	if (st != 0)
		fprintf(stderr, "# restore said:\n%s", out ? out : "");
	assert_int_equal(st, 0);
	free(out);
}

static void expect_same(const struct fsbt_tree *before, const char *ws)
{
	struct fsbt_tree now;
	char diff[4096];
	size_t n;

	assert_int_equal(fsbt_tree_snap(ws, &now), 0);
	n = fsbt_tree_diff(before, &now, FSBT_TREE_MTIME | FSBT_TREE_DIR_MTIME | FSBT_TREE_NLINK,
			   diff, sizeof(diff));
	if (n > 0)
		fail_msg("%zu paths differ after the restore; the first:\n%s", n, diff);
	fsbt_tree_free(&now);
}

/*
 * Regression: a mv of a directory copied every file beneath it into the
 * store before the move (16 MB and 479x bare for 3,000 files). Now the
 * store gains no object and no byte, however many files move, and the
 * restore still brings the tree back.
 */
static void mv_of_a_directory_copies_nothing_into_the_store(void **state)
{
	struct fixture *f = *state;
	unsigned long obj0, obj1;
	unsigned long long b0, b1;
	struct fsbt_tree before;
	char p[PATH_MAX * 2], data[4097];
	char *out = NULL;

	snprintf(p, sizeof(p), "%s/tree", f->ws);
	assert_int_equal(mkdir(p, 0755), 0);
	memset(data, 'x', sizeof(data) - 1);
	data[sizeof(data) - 1] = '\0';
	for (int i = 0; i < 300; i++) {
		if (i % 30 == 0) {
			snprintf(p, sizeof(p), "%s/tree/d%d", f->ws, i / 30);
			assert_int_equal(mkdir(p, 0750), 0);
		}
		snprintf(p, sizeof(p), "%s/tree/d%d/f%d", f->ws, i / 30, i);
		fsbt_write_file(p, data + (i % 4096));
	}
	/* One run that changes nothing here opens the store. */
	assert_int_equal(run_sh(f, NULL, "true", &out), 0);
	free(out);
	assert_int_equal(fsbt_tree_snap(f->ws, &before), 0);
	store_size(f, &obj0, &b0);

	assert_int_equal(run_sh(f, NULL, "mv tree moved && test -f moved/d3/f95", &out), 0);
	free(out);
	store_size(f, &obj1, &b1);
	printf("# store before the mv: %lu objects, %llu bytes; after: %lu, %llu\n", obj0, b0,
	       obj1, b1);
	assert_int_equal(obj1, obj0);
	assert_true(b1 == b0);

	restore_last(f);
	expect_same(&before, f->ws);
	fsbt_tree_free(&before);
}

/* renameat2(RENAME_EXCHANGE) of two directories, from the sandbox. */
static const char exchange_py[] =
	"/usr/bin/python3 -c 'import ctypes, os, sys\n"
	"libc = ctypes.CDLL(None, use_errno=True)\n"
	"if libc.renameat2(-100, sys.argv[1].encode(), -100, sys.argv[2].encode(), 2) != 0:\n"
	"    sys.exit(os.strerror(ctypes.get_errno()))' ";

static void renames_exchange_and_links_restore_exactly(void **state)
{
	struct fixture *f = *state;
	struct fsbt_tree before;
	char script[4096], *out = NULL;
	struct stat st;
	int rc;

	if (stat("/usr/bin/python3", &st) < 0) {
		printf("skipped: no /usr/bin/python3 to call renameat2(RENAME_EXCHANGE) with\n");
		exit(77);
	}
	/* a/ and b/ to swap, a hard-link pair, a nested tree, odd times. */
	assert_int_equal(system("cd \"$FSBT_WS\" && mkdir -p a/sub b/deep/er && "
				"echo one > a/x && echo two > a/sub/y && echo three > b/z && "
				"ln b/z b/z2 && echo four > b/deep/er/w && chmod 640 a/x && "
				"chmod 711 b/deep && "
				"touch -d 2001-02-03 a/x a/sub/y b/z b/deep/er/w a/sub b/deep/er "
				"b/deep a b"), 0);
	assert_int_equal(fsbt_tree_snap(f->ws, &before), 0);
	snprintf(script, sizeof(script),
		 "set -e\n"
		 "%s a b\n"
		 "chmod 600 b/x\n"
		 "touch -d 2011-01-01 b/sub/y\n"
		 "echo more >> b/sub/y\n"
		 "mv b/sub c\n"
		 "mv c b/sub\n"
		 "mv a a2 && mv a2 a\n"
		 "mv a/deep a/deep2\n"
		 "mkdir e && mv a/deep2/er e/er2\n"
		 "mkdir empty && mv b/sub empty\n"
		 "mv b/x b/x2 && ln b/x2 b/x3\n"
		 "echo new >> e/er2/w\n"
		 "%s a empty\n",
		 exchange_py, exchange_py);
	rc = run_sh(f, NULL, script, &out);
	if (rc != 0)
		fprintf(stderr, "# the run said:\n%s", out ? out : "");
	assert_int_equal(rc, 0);
	free(out);
	restore_last(f);
	expect_same(&before, f->ws);
	fsbt_tree_free(&before);
}

static int setup_ws(void **state)
{
	int rc = setup(state);

	setenv("FSBT_WS", ((struct fixture *)*state)->ws, 1);
	return rc;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(mv_of_a_directory_copies_nothing_into_the_store,
						setup_ws, teardown),
		cmocka_unit_test_setup_teardown(renames_exchange_and_links_restore_exactly,
						setup_ws, teardown),
	};

	return fsbt_run_group(tests, NULL, NULL);
}
