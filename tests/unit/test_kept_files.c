/*
 * test_kept_files.c — what the core keeps under its state dir does not pile
 * up: fsb_private_dir_keep_newest() removes the oldest files of a set
 * (stale ones first), never another file, a temp file or anything but a
 * regular file; the launch records keep the FSB_LAUNCH_RECORDS_KEPT used
 * last, a record used again counting as new.
 */
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "launch_record.h"
#include "private_file.h"

static char dir[] = "/tmp/fsb-kept-XXXXXX";

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/fsb-kept-XXXXXX");
	return mkdtemp(dir) != NULL ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* `name` in `dir`, with its mtime `age` seconds in the past. */
static void make_file(const char *name, int age)
{
	char p[PATH_MAX];
	struct timespec t[2];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "x", 1), 1);
	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_sec -= age;
	t[1] = t[0];
	assert_int_equal(futimens(fd, t), 0);
	close(fd);
}

static bool exists(const char *name)
{
	char p[PATH_MAX];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return lstat(p, &st) == 0;
}

/* The set: names starting with "ix-", and "ix" alone as the stale one. */
static enum fsb_kept_kind index_file(const char *name, void *arg)
{
	(void)arg;
	if (strcmp(name, "ix") == 0)
		return FSB_KEPT_STALE;
	return strncmp(name, "ix-", 3) == 0 ? FSB_KEPT_MEMBER : FSB_KEPT_OTHER;
}

static void the_oldest_members_go_and_nothing_else(void **state)
{
	char p[PATH_MAX];

	(void)state;
	make_file("ix-old", 300);
	make_file("ix-older", 400);
	make_file("ix-new", 10);
	make_file("ix-newer", 5);
	make_file("ix", 1);		/* stale: first to go, however new */
	make_file("other", 1000);	/* not of the set */
	make_file("ix-x.tmp.42", 2000);	/* a temp file */
	snprintf(p, sizeof(p), "%s/ix-dir", dir);
	assert_int_equal(mkdir(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/ix-link", dir);
	assert_int_equal(symlink("/nonexistent", p), 0);

	assert_int_equal(fsb_private_dir_keep_newest(dir, index_file, NULL, 2), 0);
	assert_false(exists("ix"));
	assert_false(exists("ix-older"));
	assert_false(exists("ix-old"));
	assert_true(exists("ix-new"));
	assert_true(exists("ix-newer"));
	assert_true(exists("other"));
	assert_true(exists("ix-x.tmp.42"));
	assert_true(exists("ix-dir"));
	assert_true(exists("ix-link"));

	/* Within the bound: nothing more goes. */
	assert_int_equal(fsb_private_dir_keep_newest(dir, index_file, NULL, 2), 0);
	assert_true(exists("ix-new"));
	assert_true(exists("ix-newer"));
}

static void a_directory_that_cannot_be_listed_is_an_error(void **state)
{
	char p[PATH_MAX];

	(void)state;
	snprintf(p, sizeof(p), "%s/missing", dir);
	assert_int_equal(fsb_private_dir_keep_newest(p, index_file, NULL, 1), -ENOENT);
}

static int count_records(const char *launch)
{
	char cmd[PATH_MAX + 64], line[64];
	FILE *f;
	int n = 0;

	snprintf(cmd, sizeof(cmd), "ls '%s' | grep -c '^[0-9a-f]\\{16\\}\\.json$'", launch);
	f = popen(cmd, "r");
	assert_non_null(f);
	if (fgets(line, sizeof(line), f) != NULL)
		n = atoi(line);
	pclose(f);
	return n;
}

static int save(const char *key)
{
	char *plan_argv[] = { "--unshare-user", NULL };
	struct fsb_mount_plan plan = { .argv = plan_argv, .argc = 1 };
	struct fsb_run_launch l = { .tmp = "/tmp" };

	return fsb_launch_record_save(dir, key, "/run/sock", &plan, &l);
}

static void launch_records_keep_the_ones_used_last(void **state)
{
	char launch[PATH_MAX], key[32];
	struct fsb_launch_record rec;

	(void)state;
	snprintf(launch, sizeof(launch), "%s/launch", dir);
	assert_int_equal(save("key-0"), 0);
	/* key-0 is the oldest until it is used again, after the others. */
	for (int i = 1; i < FSB_LAUNCH_RECORDS_KEPT; i++) {
		snprintf(key, sizeof(key), "key-%d", i);
		assert_int_equal(save(key), 0);
	}
	assert_int_equal(count_records(launch), FSB_LAUNCH_RECORDS_KEPT);
	/* Unchanged: only marked used, so key-1 is now the oldest. A
	 * second's wait makes that plain on a file system with coarse times. */
	sleep(1);
	assert_int_equal(save("key-0"), 0);
	sleep(1);
	assert_int_equal(save("key-new"), 0);
	assert_int_equal(count_records(launch), FSB_LAUNCH_RECORDS_KEPT);

	assert_int_equal(fsb_launch_record_load(dir, "key-0", "/run/sock", &rec), 0);
	fsb_launch_record_free(&rec);
	assert_int_equal(fsb_launch_record_load(dir, "key-new", "/run/sock", &rec), 0);
	fsb_launch_record_free(&rec);
	assert_int_equal(fsb_launch_record_load(dir, "key-1", "/run/sock", &rec), -ENOENT);
	assert_int_equal(fsb_launch_record_load(dir, "key-2", "/run/sock", &rec), 0);
	fsb_launch_record_free(&rec);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(the_oldest_members_go_and_nothing_else, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_directory_that_cannot_be_listed_is_an_error,
						setup, teardown),
		cmocka_unit_test_setup_teardown(launch_records_keep_the_ones_used_last, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
