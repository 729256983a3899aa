/*
 * test_openflags.c — the open-spec flag filter: what a client may ask the
 * core to open with, per request class.
 */
#include <errno.h>
#include <fcntl.h>

#include "unit.h"
#include "openflags.h"

static int check(int flags, bool write_class)
{
	const char *why = NULL;
	int err = fsb_openflags_check(flags, write_class, &why);

	if (err < 0)
		assert_non_null(why);
	return err;
}

static void every_allowed_flag_passes_in_write_class(void **state)
{
	static const int allowed[] = {
		O_CREAT, O_EXCL, O_TRUNC, O_APPEND, O_NOFOLLOW, O_DIRECTORY,
		O_NONBLOCK, O_NOCTTY, O_CLOEXEC, O_SYNC, O_DSYNC, O_LARGEFILE,
	};
	(void)state;
	assert_int_equal(check(O_RDONLY, true), 0);
	assert_int_equal(check(O_WRONLY, true), 0);
	assert_int_equal(check(O_RDWR, true), 0);
	for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++) {
		assert_int_equal(check(O_WRONLY | allowed[i], true), 0);
		assert_int_equal(check(O_RDWR | allowed[i], true), 0);
	}
	assert_int_equal(check(O_RDWR | O_CREAT | O_EXCL | O_TRUNC | O_APPEND |
			       O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC |
			       O_SYNC, true), 0);
}

static void read_flags_pass_in_read_class(void **state)
{
	(void)state;
	assert_int_equal(check(O_RDONLY, false), 0);
	assert_int_equal(check(O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY |
			       O_NONBLOCK | O_DIRECTORY, false), 0);
	/* O_EXCL without O_CREAT creates nothing. */
	assert_int_equal(check(O_RDONLY | O_EXCL, false), 0);
}

static void kernel_largefile_bit_is_accepted(void **state)
{
	(void)state;
	/* glibc's O_LARGEFILE is 0 on x86_64; clients may send the kernel's. */
	assert_int_equal(check(00100000, false), 0);
	assert_int_equal(check(O_WRONLY | 00100000, true), 0);
}

/* The reason names the flag, so a client author can see what to drop. */
static void refused_with(int flags, const char *why_expected)
{
	const char *why = NULL;

	assert_int_equal(fsb_openflags_check(flags, true, &why), -EINVAL);
	assert_string_equal(why, why_expected);
}

static void o_path_is_refused(void **state)
{
	(void)state;
	refused_with(O_PATH, "O_PATH is not allowed");
	refused_with(O_PATH | O_RDONLY | O_DIRECTORY, "O_PATH is not allowed");
	assert_int_equal(check(O_PATH, true), -EINVAL);
	assert_int_equal(check(O_PATH, false), -EINVAL);
	assert_int_equal(check(O_PATH | O_NOFOLLOW | O_CLOEXEC, true), -EINVAL);
}

static void o_tmpfile_is_refused(void **state)
{
	(void)state;
	refused_with(O_TMPFILE | O_RDWR, "O_TMPFILE is not allowed");
	/* O_DIRECTORY alone is not mistaken for O_TMPFILE. */
	assert_int_equal(check(O_RDONLY | O_DIRECTORY, true), 0);
	assert_int_equal(check(O_TMPFILE | O_RDWR, true), -EINVAL);
	assert_int_equal(check(O_TMPFILE | O_WRONLY | O_EXCL, true), -EINVAL);
	/* The tmpfile bit without O_DIRECTORY is refused too. */
	assert_int_equal(check((O_TMPFILE & ~O_DIRECTORY) | O_RDWR, true),
			 -EINVAL);
}

static void unknown_bits_are_refused(void **state)
{
	(void)state;
	assert_int_equal(check(O_RDONLY | O_DIRECT, true), -EINVAL);
	assert_int_equal(check(O_RDONLY | O_NOATIME, true), -EINVAL);
	assert_int_equal(check(O_RDONLY | O_ASYNC, true), -EINVAL);
	assert_int_equal(check(O_RDONLY | 0x40000000, true), -EINVAL);
	assert_int_equal(check((int)0x80000000u, true), -EINVAL);
	refused_with(O_RDWR | O_DIRECT,
		     "open flags hold an unknown or unsupported bit");
}

static void access_mode_3_is_refused(void **state)
{
	(void)state;
	assert_int_equal(check(O_ACCMODE, true), -EINVAL);
	assert_int_equal(check(O_ACCMODE, false), -EINVAL);
}

static void rdonly_trunc_is_refused_in_any_class(void **state)
{
	(void)state;
	assert_int_equal(check(O_RDONLY | O_TRUNC, true), -EINVAL);
	assert_int_equal(check(O_RDONLY | O_TRUNC, false), -EINVAL);
	assert_int_equal(check(O_RDONLY | O_CREAT | O_TRUNC, true), -EINVAL);
}

static void read_class_refuses_write_flags(void **state)
{
	(void)state;
	assert_int_equal(check(O_WRONLY, false), -EINVAL);
	assert_int_equal(check(O_RDWR, false), -EINVAL);
	assert_int_equal(check(O_RDONLY | O_CREAT, false), -EINVAL);
	assert_int_equal(check(O_RDONLY | O_APPEND, false), -EINVAL);
	assert_int_equal(check(O_WRONLY | O_TRUNC, false), -EINVAL);
}

static void writes_names_flags_that_change_the_file(void **state)
{
	(void)state;
	assert_true(fsb_openflags_writes(O_WRONLY));
	assert_true(fsb_openflags_writes(O_RDWR));
	assert_true(fsb_openflags_writes(O_RDONLY | O_CREAT));
	assert_true(fsb_openflags_writes(O_RDONLY | O_TRUNC));
	assert_false(fsb_openflags_writes(O_RDONLY));
	assert_false(fsb_openflags_writes(O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
	assert_false(fsb_openflags_writes(O_RDONLY | O_APPEND));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_allowed_flag_passes_in_write_class),
		cmocka_unit_test(read_flags_pass_in_read_class),
		cmocka_unit_test(kernel_largefile_bit_is_accepted),
		cmocka_unit_test(o_path_is_refused),
		cmocka_unit_test(o_tmpfile_is_refused),
		cmocka_unit_test(unknown_bits_are_refused),
		cmocka_unit_test(access_mode_3_is_refused),
		cmocka_unit_test(rdonly_trunc_is_refused_in_any_class),
		cmocka_unit_test(read_class_refuses_write_flags),
		cmocka_unit_test(writes_names_flags_that_change_the_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
