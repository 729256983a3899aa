/*
 * test_resolve.c — fsb_resolve on a real tree in a temp dir, under "/" and
 * under the temp dir standing in as a sandbox's root; fsb_path_lexical and
 * fsb_path_within.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unit.h"
#include "resolve.h"

#define EXISTING FSB_RESOLVE_EXISTING
#define PARENT FSB_RESOLVE_THROUGH_PARENT
#define CREATABLE FSB_RESOLVE_EXISTING_OR_CREATABLE

/* 25 levels of 200-byte names: deeper than PATH_MAX in all. */
#define DEEP_LEVELS 25
#define DEEP_NAME_LEN 200

static char base[PATH_MAX];	/* real path of the temp dir */
static int basefd = -1;
static int rootfd = -1;		/* "/" */
static int fakefd = -1;		/* base/root, standing in as "/" */

/* base + "/" + rel, in one of a few rotating buffers. */
static const char *B(const char *rel)
{
	static char bufs[8][PATH_MAX + 64];
	static int next;
	char *b = bufs[next++ % 8];

	snprintf(b, sizeof(bufs[0]), "%s/%s", base, rel);
	return b;
}

#define expect_ok(root, in, strategy, want, want_exists) do { \
		struct fsb_resolved r_; \
		assert_int_equal(fsb_resolve((root), (in), (strategy), &r_), 0); \
		assert_string_equal(r_.path, (want)); \
		assert_int_equal(r_.exists, (want_exists)); \
	} while (0)

#define expect_err(root, in, strategy, err) do { \
		struct fsb_resolved r_; \
		assert_int_equal(fsb_resolve((root), (in), (strategy), &r_), (err)); \
	} while (0)

static void mkfile(int dirfd, const char *rel)
{
	int fd = openat(dirfd, rel, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	close(fd);
}

static void mkdir_(int dirfd, const char *rel)
{
	assert_int_equal(mkdirat(dirfd, rel, 0755), 0);
}

static void link_(int dirfd, const char *rel, const char *target)
{
	assert_int_equal(symlinkat(target, dirfd, rel), 0);
}

static void ino_of(int dirfd, const char *rel, struct stat *st)
{
	assert_int_equal(fstatat(dirfd, rel, st, AT_SYMLINK_NOFOLLOW), 0);
}

/* Remove a tree by fd, so depth beyond PATH_MAX is no problem. */
static void rm_rf_at(int parent, const char *name)
{
	struct dirent *de;
	DIR *d;
	int fd;

	if (unlinkat(parent, name, 0) == 0)
		return;
	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (d == NULL) {
		close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			rm_rf_at(dirfd(d), de->d_name);
	}
	closedir(d);
	unlinkat(parent, name, AT_REMOVEDIR);
}

static int setup(void **state)
{
	char tmpl[] = "/tmp/fsb-resolve-XXXXXX";
	char name[32], target[PATH_MAX];
	int fd, next;

	(void)state;
	if (mkdtemp(tmpl) == NULL || realpath(tmpl, base) == NULL)
		return -1;
	basefd = open(base, O_PATH | O_DIRECTORY | O_CLOEXEC);
	rootfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (basefd < 0 || rootfd < 0)
		return -1;

	mkfile(basefd, "file");
	mkdir_(basefd, "dir");
	mkdir_(basefd, "dir/sub");
	mkfile(basefd, "dir/sub/f");
	link_(basefd, "rel", "dir/sub");
	link_(basefd, "abs", B("dir/sub/f"));
	link_(basefd, "absdir", B("dir"));
	link_(basefd, "dangling", "missing");
	link_(basefd, "dangling_deep", "nodir/x");
	link_(basefd, "loop_a", "loop_b");
	link_(basefd, "loop_b", "loop_a");

	/* chain/c1 -> c2 -> ... -> c41 -> ../file: 41 links from c1. */
	mkdir_(basefd, "chain");
	for (int i = 1; i <= 41; i++) {
		snprintf(name, sizeof(name), "chain/c%d", i);
		if (i == 41)
			snprintf(target, sizeof(target), "../file");
		else
			snprintf(target, sizeof(target), "c%d", i + 1);
		link_(basefd, name, target);
	}

	mkdir_(basefd, "denied");
	mkfile(basefd, "denied/secret");
	mkdir_(basefd, "ws");
	link_(basefd, "ws/leak", "../denied/secret");
	link_(basefd, "ws/dlink", "../denied");
	link_(basefd, "ws/adlink", B("denied"));

	/* A fake root: its absolute symlinks and `..` must stay inside. */
	mkdir_(basefd, "root");
	mkdir_(basefd, "root/etc");
	mkfile(basefd, "root/etc/passwd");
	link_(basefd, "root/abs", "/etc/passwd");
	link_(basefd, "root/up", "../../../etc");
	link_(basefd, "root/esc", "../../../../../../tmp");
	link_(basefd, "root/etc/self", "/");
	fakefd = open(B("root"), O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fakefd < 0)
		return -1;

	/* deep/n1/n2/.../n25, each name 200 bytes; deep/mid -> the first 12
	 * levels by absolute path, so a short request reaches a long path. */
	mkdir_(basefd, "deep");
	fd = openat(basefd, "deep", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	snprintf(target, sizeof(target), "%s", B("deep"));
	for (int i = 1; i <= DEEP_LEVELS; i++) {
		char n[DEEP_NAME_LEN + 1];

		memset(n, 'a' + (i % 26), DEEP_NAME_LEN);
		n[DEEP_NAME_LEN] = '\0';
		assert_int_equal(mkdirat(fd, n, 0755), 0);
		next = openat(fd, n, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		assert_true(next >= 0);
		close(fd);
		fd = next;
		if (i <= 12) {
			strcat(target, "/");
			strcat(target, n);
		}
	}
	close(fd);
	link_(basefd, "deep/mid", target);
	return 0;
}

static int teardown(void **state)
{
	char parent[PATH_MAX];
	int fd;

	(void)state;
	snprintf(parent, sizeof(parent), "%s", base);
	*strrchr(parent, '/') = '\0';
	fd = open(parent[0] ? parent : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		rm_rf_at(fd, strrchr(base, '/') + 1);
		close(fd);
	}
	close(fakefd);
	close(basefd);
	close(rootfd);
	return 0;
}

static void test_plain_file(void **state)
{
	struct fsb_resolved r;
	struct stat st;

	(void)state;
	assert_int_equal(fsb_resolve(rootfd, B("file"), EXISTING, &r), 0);
	assert_string_equal(r.path, B("file"));
	assert_true(r.exists);
	ino_of(basefd, "file", &st);
	assert_true(S_ISREG(r.st.st_mode));
	assert_int_equal(r.st.st_ino, st.st_ino);
	assert_int_equal(r.st.st_dev, st.st_dev);

	expect_ok(rootfd, B("dir/sub/f"), EXISTING, B("dir/sub/f"), true);
	expect_ok(rootfd, B("dir/sub/f"), PARENT, B("dir/sub/f"), true);
	expect_ok(rootfd, B("dir/sub/f"), CREATABLE, B("dir/sub/f"), true);
	expect_ok(rootfd, B("dir"), EXISTING, B("dir"), true);
}

static void test_root_itself(void **state)
{
	struct fsb_resolved r;

	(void)state;
	assert_int_equal(fsb_resolve(rootfd, "/", EXISTING, &r), 0);
	assert_string_equal(r.path, "/");
	assert_true(r.exists);
	assert_true(S_ISDIR(r.st.st_mode));
	expect_ok(rootfd, "/", CREATABLE, "/", true);
	expect_ok(rootfd, "///", EXISTING, "/", true);
	expect_err(rootfd, "/", PARENT, -EINVAL);
	expect_err(rootfd, "//", PARENT, -EINVAL);
}

static void test_double_slash_and_dot(void **state)
{
	char p[PATH_MAX + 64];

	(void)state;
	snprintf(p, sizeof(p), "/%s//dir/./sub//f", base);
	expect_ok(rootfd, p, EXISTING, B("dir/sub/f"), true);
	snprintf(p, sizeof(p), "%s/./././dir/.//sub/.", base);
	expect_ok(rootfd, p, EXISTING, B("dir/sub"), true);
	expect_ok(rootfd, B("dir/sub/"), EXISTING, B("dir/sub"), true);
	expect_ok(rootfd, B("dir/sub//"), CREATABLE, B("dir/sub"), true);
	expect_ok(rootfd, B("dir/./sub/../sub/f"), EXISTING, B("dir/sub/f"), true);
}

static void test_relative_symlink(void **state)
{
	(void)state;
	expect_ok(rootfd, B("rel"), EXISTING, B("dir/sub"), true);
	expect_ok(rootfd, B("rel/f"), EXISTING, B("dir/sub/f"), true);
	expect_ok(rootfd, B("rel/f"), PARENT, B("dir/sub/f"), true);
	expect_ok(rootfd, B("rel/f"), CREATABLE, B("dir/sub/f"), true);
}

static void test_absolute_symlink(void **state)
{
	struct fsb_resolved r;
	struct stat st;

	(void)state;
	assert_int_equal(fsb_resolve(rootfd, B("abs"), EXISTING, &r), 0);
	assert_string_equal(r.path, B("dir/sub/f"));
	assert_true(r.exists);
	/* st is the object's own, not the link's. */
	ino_of(basefd, "dir/sub/f", &st);
	assert_true(S_ISREG(r.st.st_mode));
	assert_int_equal(r.st.st_ino, st.st_ino);

	expect_ok(rootfd, B("absdir/sub/f"), EXISTING, B("dir/sub/f"), true);
	expect_ok(rootfd, B("absdir/sub/new"), CREATABLE, B("dir/sub/new"), false);
}

static void test_symlink_to_dir_trailing_slash(void **state)
{
	struct fsb_resolved r;

	(void)state;
	expect_ok(rootfd, B("rel/"), EXISTING, B("dir/sub"), true);
	expect_ok(rootfd, B("rel/"), CREATABLE, B("dir/sub"), true);
	/* Through the parent the final name is `rel`, and it is not followed. */
	assert_int_equal(fsb_resolve(rootfd, B("rel/"), PARENT, &r), 0);
	assert_string_equal(r.path, B("rel"));
	assert_true(r.exists);
	assert_true(S_ISLNK(r.st.st_mode));
	expect_ok(rootfd, B("dir/sub/"), PARENT, B("dir/sub"), true);
	expect_ok(rootfd, B("dir/new/"), PARENT, B("dir/new"), false);
}

static void test_dangling_symlink(void **state)
{
	struct fsb_resolved r;

	(void)state;
	expect_err(rootfd, B("dangling"), EXISTING, -ENOENT);
	assert_int_equal(fsb_resolve(rootfd, B("dangling"), PARENT, &r), 0);
	assert_string_equal(r.path, B("dangling"));
	assert_true(r.exists);
	assert_true(S_ISLNK(r.st.st_mode));
	/* Creating through a dangling link creates its target. */
	expect_ok(rootfd, B("dangling"), CREATABLE, B("missing"), false);
	/* ... which needs the target's parent. */
	expect_err(rootfd, B("dangling_deep"), CREATABLE, -ENOENT);
	expect_err(rootfd, B("dangling_deep"), EXISTING, -ENOENT);
	expect_ok(rootfd, B("dangling_deep"), PARENT, B("dangling_deep"), true);
	expect_err(rootfd, B("dangling/x"), CREATABLE, -ENOENT);
}

static void test_symlink_loop(void **state)
{
	(void)state;
	expect_err(rootfd, B("loop_a"), EXISTING, -ELOOP);
	expect_err(rootfd, B("loop_a"), CREATABLE, -ELOOP);
	expect_err(rootfd, B("loop_a/x"), PARENT, -ELOOP);
	expect_ok(rootfd, B("loop_a"), PARENT, B("loop_a"), true);
}

static void test_forty_links_ok(void **state)
{
	(void)state;
	expect_ok(rootfd, B("chain/c2"), EXISTING, B("file"), true);
	expect_ok(rootfd, B("chain/c2"), CREATABLE, B("file"), true);
}

static void test_forty_one_links_eloop(void **state)
{
	(void)state;
	expect_err(rootfd, B("chain/c1"), EXISTING, -ELOOP);
	expect_err(rootfd, B("chain/c1"), CREATABLE, -ELOOP);
	expect_ok(rootfd, B("chain/c1"), PARENT, B("chain/c1"), true);
}

static void test_symlink_into_denied_tree(void **state)
{
	(void)state;
	/* The policy judges the real path, which is in the denied tree. */
	expect_ok(rootfd, B("ws/leak"), EXISTING, B("denied/secret"), true);
	expect_ok(rootfd, B("ws/leak"), CREATABLE, B("denied/secret"), true);
	expect_ok(rootfd, B("ws/dlink/secret"), PARENT, B("denied/secret"), true);
	expect_ok(rootfd, B("ws/adlink/new"), CREATABLE, B("denied/new"), false);
	expect_ok(rootfd, B("ws/dlink/new"), PARENT, B("denied/new"), false);
}

static void test_dotdot_through_symlink(void **state)
{
	char lex[PATH_MAX];

	(void)state;
	/* Physical: rel is dir/sub, so rel/.. is dir, not base. */
	expect_ok(rootfd, B("rel/.."), EXISTING, B("dir"), true);
	expect_ok(rootfd, B("rel/../sub/f"), EXISTING, B("dir/sub/f"), true);
	expect_ok(rootfd, B("rel/../new"), PARENT, B("dir/new"), false);
	expect_ok(rootfd, B("ws/dlink/../file"), EXISTING, B("file"), true);
	/* Lexical normalisation would say otherwise. */
	assert_int_equal(fsb_path_lexical(B("rel/.."), lex), 0);
	assert_string_equal(lex, base);
}

static void test_file_as_directory(void **state)
{
	(void)state;
	expect_err(rootfd, B("file/x"), EXISTING, -ENOTDIR);
	expect_err(rootfd, B("file/x"), PARENT, -ENOTDIR);
	expect_err(rootfd, B("file/x"), CREATABLE, -ENOTDIR);
	expect_err(rootfd, B("file/.."), EXISTING, -ENOTDIR);
	expect_err(rootfd, B("file/."), CREATABLE, -ENOTDIR);
	expect_err(rootfd, B("abs/x"), EXISTING, -ENOTDIR);
	/* A trailing slash asks for a directory, as the kernel reads it. */
	expect_err(rootfd, B("file/"), EXISTING, -ENOTDIR);
	expect_err(rootfd, B("abs/"), CREATABLE, -ENOTDIR);
}

static void test_missing(void **state)
{
	struct fsb_resolved r;

	(void)state;
	expect_err(rootfd, B("nope"), EXISTING, -ENOENT);
	assert_int_equal(fsb_resolve(rootfd, B("nope"), PARENT, &r), 0);
	assert_string_equal(r.path, B("nope"));
	assert_false(r.exists);
	expect_ok(rootfd, B("nope"), CREATABLE, B("nope"), false);
	expect_ok(rootfd, B("rel/new"), CREATABLE, B("dir/sub/new"), false);
	expect_ok(rootfd, B("rel/new"), PARENT, B("dir/sub/new"), false);
	expect_ok(rootfd, B("new/"), CREATABLE, B("new"), false);
	expect_err(rootfd, B("nodir/x"), EXISTING, -ENOENT);
	expect_err(rootfd, B("nodir/x"), PARENT, -ENOENT);
	expect_err(rootfd, B("nodir/x"), CREATABLE, -ENOENT);
	expect_err(rootfd, B("nodir/.."), EXISTING, -ENOENT);
}

static void test_through_parent_final_name(void **state)
{
	struct fsb_resolved r;

	(void)state;
	/* The final symlink itself is the object (delete removes the link). */
	assert_int_equal(fsb_resolve(rootfd, B("rel"), PARENT, &r), 0);
	assert_string_equal(r.path, B("rel"));
	assert_true(S_ISLNK(r.st.st_mode));
	expect_ok(rootfd, B("ws/leak"), PARENT, B("ws/leak"), true);
	expect_err(rootfd, B("dir/."), PARENT, -EINVAL);
	expect_err(rootfd, B("dir/.."), PARENT, -EINVAL);
	expect_err(rootfd, B("dir/../"), PARENT, -EINVAL);
	expect_err(rootfd, B("dir/./"), PARENT, -EINVAL);
	expect_ok(rootfd, B("dir/../file"), PARENT, B("file"), true);
	expect_ok(rootfd, B("./dir/./sub/.//f"), PARENT, B("dir/sub/f"), true);
}

static void test_bad_input(void **state)
{
	char *p;

	(void)state;
	expect_err(rootfd, "", EXISTING, -EINVAL);
	expect_err(rootfd, "tmp", EXISTING, -EINVAL);
	expect_err(rootfd, "./tmp", CREATABLE, -EINVAL);
	expect_err(rootfd, NULL, CREATABLE, -EINVAL);

	p = malloc(PATH_MAX + 1);
	assert_non_null(p);
	/* PATH_MAX - 1 bytes is the longest path there is... */
	memset(p, '/', PATH_MAX - 1);
	p[PATH_MAX - 1] = '\0';
	expect_ok(rootfd, p, EXISTING, "/", true);
	/* ...one more is too long, before anything is looked up. */
	memset(p, '/', PATH_MAX);
	p[PATH_MAX] = '\0';
	expect_err(rootfd, p, EXISTING, -ENAMETOOLONG);
	memcpy(p, "/x/", 3);
	expect_err(rootfd, p, PARENT, -ENAMETOOLONG);
	free(p);
}

static void test_result_too_long(void **state)
{
	char in[PATH_MAX], want[PATH_MAX], n[DEEP_NAME_LEN + 2];
	struct fsb_resolved r;
	int len;

	(void)state;
	/* deep/mid/<level 13> is short to ask for but resolves long. */
	memset(n, 'a' + 13, DEEP_NAME_LEN);
	n[DEEP_NAME_LEN] = '\0';
	snprintf(in, sizeof(in), "%s/%s", B("deep/mid"), n);
	assert_int_equal(readlinkat(basefd, "deep/mid", want, sizeof(want) - 1),
			 (ssize_t)strlen(B("deep")) + 12 * (DEEP_NAME_LEN + 1));
	assert_int_equal(fsb_resolve(rootfd, in, EXISTING, &r), 0);
	assert_true(strlen(r.path) > strlen(in));
	assert_true(fsb_path_within(r.path, B("deep")));

	/* Levels 13 to 25 under mid: the input fits, the result does not. */
	len = snprintf(in, sizeof(in), "%s", B("deep/mid"));
	for (int i = 13; i <= DEEP_LEVELS; i++) {
		memset(n, 'a' + (i % 26), DEEP_NAME_LEN);
		n[DEEP_NAME_LEN] = '\0';
		len += snprintf(in + len, sizeof(in) - (size_t)len, "/%s", n);
	}
	assert_true(len < PATH_MAX);
	expect_err(rootfd, in, EXISTING, -ENAMETOOLONG);
	expect_err(rootfd, in, PARENT, -ENAMETOOLONG);
	expect_err(rootfd, in, CREATABLE, -ENAMETOOLONG);
}

static void test_fake_root_confines(void **state)
{
	struct fsb_resolved r;
	struct stat st;

	(void)state;
	ino_of(fakefd, "etc/passwd", &st);

	/* An absolute target starts at the requester's root, not ours. */
	assert_int_equal(fsb_resolve(fakefd, "/abs", EXISTING, &r), 0);
	assert_string_equal(r.path, "/etc/passwd");
	assert_int_equal(r.st.st_ino, st.st_ino);
	assert_int_equal(r.st.st_dev, st.st_dev);

	expect_ok(fakefd, "/../../x", CREATABLE, "/x", false);
	expect_ok(fakefd, "/../../x", PARENT, "/x", false);
	expect_err(fakefd, "/../../x", EXISTING, -ENOENT);
	expect_ok(fakefd, "/..", EXISTING, "/", true);
	expect_ok(fakefd, "/etc/../../../etc/passwd", EXISTING, "/etc/passwd", true);

	/* `..` in a relative target stops at the root too. */
	assert_int_equal(fsb_resolve(fakefd, "/up/passwd", EXISTING, &r), 0);
	assert_string_equal(r.path, "/etc/passwd");
	assert_int_equal(r.st.st_ino, st.st_ino);
	/* base/root/../../../../../../tmp would be the real /tmp. */
	expect_ok(fakefd, "/esc", CREATABLE, "/tmp", false);
	expect_err(fakefd, "/esc/x", CREATABLE, -ENOENT);
	expect_ok(fakefd, "/etc/self/etc/self/abs", EXISTING, "/etc/passwd", true);
	expect_ok(fakefd, "/etc/self", EXISTING, "/", true);
}

static void test_lexical(void **state)
{
	char out[PATH_MAX], *p;

	(void)state;
	assert_int_equal(fsb_path_lexical("/a//b/./c/../d/", out), 0);
	assert_string_equal(out, "/a/b/d");
	assert_int_equal(fsb_path_lexical("/", out), 0);
	assert_string_equal(out, "/");
	assert_int_equal(fsb_path_lexical("//", out), 0);
	assert_string_equal(out, "/");
	assert_int_equal(fsb_path_lexical("/..", out), 0);
	assert_string_equal(out, "/");
	assert_int_equal(fsb_path_lexical("/../../x", out), 0);
	assert_string_equal(out, "/x");
	assert_int_equal(fsb_path_lexical("/a/b/../../..", out), 0);
	assert_string_equal(out, "/");
	assert_int_equal(fsb_path_lexical("/a/.../b/..c", out), 0);
	assert_string_equal(out, "/a/.../b/..c");
	assert_int_equal(fsb_path_lexical("/ws\\evil", out), 0);
	assert_string_equal(out, "/ws\\evil");
	assert_int_equal(fsb_path_lexical("a/b", out), -EINVAL);
	assert_int_equal(fsb_path_lexical("", out), -EINVAL);

	/* In place. */
	strcpy(out, "//x/./y//../z/");
	assert_int_equal(fsb_path_lexical(out, out), 0);
	assert_string_equal(out, "/x/z");

	p = malloc(PATH_MAX + 1);
	assert_non_null(p);
	memset(p, '/', PATH_MAX);
	p[PATH_MAX] = '\0';
	assert_int_equal(fsb_path_lexical(p, out), -ENAMETOOLONG);
	free(p);
}

static void test_within(void **state)
{
	(void)state;
	assert_true(fsb_path_within("/a/b", "/a"));
	assert_true(fsb_path_within("/a/b", "/a/b"));
	assert_true(fsb_path_within("/a/b/c", "/a/b"));
	assert_false(fsb_path_within("/a/bc", "/a/b"));
	assert_false(fsb_path_within("/a", "/a/b"));
	assert_false(fsb_path_within("/b", "/a"));
	assert_true(fsb_path_within("/", "/"));
	assert_true(fsb_path_within("/anything/at/all", "/"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_file),
		cmocka_unit_test(test_root_itself),
		cmocka_unit_test(test_double_slash_and_dot),
		cmocka_unit_test(test_relative_symlink),
		cmocka_unit_test(test_absolute_symlink),
		cmocka_unit_test(test_symlink_to_dir_trailing_slash),
		cmocka_unit_test(test_dangling_symlink),
		cmocka_unit_test(test_symlink_loop),
		cmocka_unit_test(test_forty_links_ok),
		cmocka_unit_test(test_forty_one_links_eloop),
		cmocka_unit_test(test_symlink_into_denied_tree),
		cmocka_unit_test(test_dotdot_through_symlink),
		cmocka_unit_test(test_file_as_directory),
		cmocka_unit_test(test_missing),
		cmocka_unit_test(test_through_parent_final_name),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_result_too_long),
		cmocka_unit_test(test_fake_root_confines),
		cmocka_unit_test(test_lexical),
		cmocka_unit_test(test_within),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
