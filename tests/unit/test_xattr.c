/*
 * test_xattr.c — extended attributes for the backup store: base64 both
 * ways (and only canonical base64 read), the kept namespaces, a read cut at
 * its cap, and apply setting what was recorded and removing the rest.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "unit.h"
#include "xattr.h"

struct fx {
	char dir[64];
	char file[96];
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	int fd;

	if (f == NULL)
		return -1;
	strcpy(f->dir, "/tmp/fsb-xattr-XXXXXX");
	if (mkdtemp(f->dir) == NULL) {
		free(f);
		return -1;
	}
	snprintf(f->file, sizeof(f->file), "%s/f", f->dir);
	fd = open(f->file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		free(f);
		return -1;
	}
	close(fd);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	unlink(f->file);
	rmdir(f->dir);
	free(f);
	return 0;
}

/* Skip, saying why, when the test's filesystem takes no user.* xattrs. */
static void need_user_xattrs(const struct fx *f)
{
	if (setxattr(f->file, "user.probe", "", 0, 0) == 0) {
		removexattr(f->file, "user.probe");
		return;
	}
	print_message("# skipping: %s takes no user.* xattrs (%s)\n", f->dir, strerror(errno));
	skip();
}

static void round_trip(const void *data, size_t len, const char *want)
{
	unsigned char *back;
	size_t blen;
	char *enc = fsb_base64_encode(data, len);

	assert_non_null(enc);
	assert_string_equal(enc, want);
	assert_int_equal(fsb_base64_decode(enc, &back, &blen), 0);
	assert_int_equal(blen, len);
	assert_non_null(back);
	assert_memory_equal(back, data, len);
	free(back);
	free(enc);
}

static void test_base64_both_ways(void **state)
{
	static const unsigned char all[] = { 0x00, 0xff, 0xfe, 0x80, 0x7f, 0x0a };

	(void)state;
	round_trip("", 0, "");
	round_trip("f", 1, "Zg==");
	round_trip("fo", 2, "Zm8=");
	round_trip("foo", 3, "Zm9v");
	round_trip("foobar", 6, "Zm9vYmFy");
	round_trip(all, sizeof(all), "AP/+gH8K");
	round_trip("a\0\xff\xfe", 4, "YQD//g==");
}

static void test_base64_refuses_what_is_not_canonical(void **state)
{
	static const char *const bad[] = {
		"Zg", "Zg=", "Z===", "Zh==", "Zm9=", "Zm 9v", "Zm9v\n", "=Zm9", "Zg==Zg==",
		"Zm-v", "Zm_v",
	};
	unsigned char *out;
	size_t len;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (fsb_base64_decode(bad[i], &out, &len) != -EINVAL)
			fail_msg("\"%s\" was taken for base64", bad[i]);
		assert_null(out);
	}
}

static void test_kept_namespaces(void **state)
{
	(void)state;
	assert_true(fsb_xattr_kept("user.a"));
	assert_true(fsb_xattr_kept("trusted.overlay.opaque"));
	assert_true(fsb_xattr_kept("security.capability"));
	assert_true(fsb_xattr_kept("system.posix_acl_access"));
	assert_true(fsb_xattr_kept("system.posix_acl_default"));
	assert_false(fsb_xattr_kept("security.selinux"));
	assert_false(fsb_xattr_kept("security.ima"));
	assert_false(fsb_xattr_kept("system.nfs4_acl"));
	assert_false(fsb_xattr_kept("user"));
	assert_false(fsb_xattr_kept("users.a"));
}

/* Past the cap a name is left out and the read says so; what fits is kept. */
static void test_read_is_cut_at_the_cap(void **state)
{
	struct fx *f = *state;
	struct fsb_xattr *v;
	bool truncated;
	size_t n;
	int fd;

	need_user_xattrs(f);
	assert_int_equal(setxattr(f->file, "user.big", "0123456789", 10, 0), 0);
	assert_int_equal(fsb_xattr_read(-1, f->file, 1000, &v, &n, &truncated), 0);
	assert_int_equal(n, 1);
	assert_false(truncated);
	assert_string_equal(v[0].name, "user.big");
	assert_int_equal(v[0].len, 10);
	fsb_xattr_free(v, n);

	/* "user.big" and its value are 18 bytes. */
	assert_int_equal(fsb_xattr_read(-1, f->file, 17, &v, &n, &truncated), 0);
	assert_int_equal(n, 0);
	assert_true(truncated);
	fsb_xattr_free(v, n);

	/* Through an fd, and through an O_PATH fd, the same. */
	fd = open(f->file, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fsb_xattr_read(fd, "/nonexistent", 1000, &v, &n, &truncated), 0);
	assert_int_equal(n, 1);
	fsb_xattr_free(v, n);
	close(fd);
	fd = open(f->file, O_PATH | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fsb_xattr_read(fd, "/nonexistent", 1000, &v, &n, &truncated), 0);
	assert_int_equal(n, 1);
	assert_memory_equal(v[0].value, "0123456789", 10);
	fsb_xattr_free(v, n);
	close(fd);
}

static void test_apply_sets_and_removes(void **state)
{
	struct fx *f = *state;
	unsigned char v1[] = { 0, 1, 2 }, v2[] = { 'x' };
	struct fsb_xattr want[] = {
		{ .name = "user.keep", .value = v1, .len = sizeof(v1) },
		{ .name = "user.new", .value = v2, .len = sizeof(v2) },
	};
	struct fsb_xattr_outcome o;
	char buf[8];

	need_user_xattrs(f);
	assert_int_equal(setxattr(f->file, "user.keep", "old", 3, 0), 0);
	assert_int_equal(setxattr(f->file, "user.extra", "e", 1, 0), 0);

	/* Without remove_others the extra one stays. */
	fsb_xattr_apply(-1, f->file, want, 2, false, &o);
	assert_int_equal(o.set, 2);
	assert_int_equal(o.removed, 0);
	assert_int_equal(o.failed, 0);
	assert_int_equal(getxattr(f->file, "user.extra", buf, sizeof(buf)), 1);

	fsb_xattr_apply(-1, f->file, want, 2, true, &o);
	assert_int_equal(o.removed, 1);
	assert_int_equal(o.failed, 0);
	assert_int_equal(getxattr(f->file, "user.extra", buf, sizeof(buf)), -1);
	assert_int_equal(errno, ENODATA);
	assert_int_equal(getxattr(f->file, "user.keep", buf, sizeof(buf)), 3);
	assert_memory_equal(buf, v1, 3);
	assert_int_equal(getxattr(f->file, "user.new", buf, sizeof(buf)), 1);
}

/* A name outside the kept namespaces is reported, never set. */
static void test_apply_refuses_other_namespaces(void **state)
{
	struct fx *f = *state;
	unsigned char v[] = { 'l' };
	struct fsb_xattr want[] = {
		{ .name = "security.selinux", .value = v, .len = 1 },
		{ .name = "user.\x1b[2J", .value = v, .len = 1 },
	};
	struct fsb_xattr_outcome o;

	need_user_xattrs(f);
	fsb_xattr_apply(-1, f->file, want, 2, false, &o);
	assert_int_equal(o.failed, 1);
	assert_int_equal(o.set, 1);
	assert_non_null(strstr(o.failures, "security.selinux (not a namespace restore sets)"));
	/* Control bytes in a name are shown, not sent to a terminal. */
	fsb_xattr_apply(-1, "/nonexistent/x", want + 1, 1, false, &o);
	assert_int_equal(o.failed, 1);
	assert_non_null(strstr(o.failures, "user.\\x1b[2J ("));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_base64_both_ways),
		cmocka_unit_test(test_base64_refuses_what_is_not_canonical),
		cmocka_unit_test(test_kept_namespaces),
		cmocka_unit_test_setup_teardown(test_read_is_cut_at_the_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_apply_sets_and_removes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_apply_refuses_other_namespaces, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
