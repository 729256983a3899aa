/*
 * test_log.c — the core's diagnostics while held (what `fsbroker run` does
 * while CMD shares its stderr): nothing reaches stderr until the release,
 * which gives the lines back in order, or writes them then; past 64 KiB the
 * rest is counted in one last line, never silently lost.
 */
#include "unit.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

static char err_path[32];
static int saved_stderr = -1;

/* stderr into a file of the test's, to read what the log wrote. */
static int setup(void **state)
{
	int fd;

	(void)state;
	snprintf(err_path, sizeof(err_path), "/tmp/fsb-log-XXXXXX");
	fd = mkstemp(err_path);
	if (fd < 0)
		return -1;
	saved_stderr = dup(STDERR_FILENO);
	if (saved_stderr < 0 || dup2(fd, STDERR_FILENO) < 0)
		return -1;
	close(fd);
	fsb_log_threshold = FSB_LOG_INFO;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	dup2(saved_stderr, STDERR_FILENO);
	close(saved_stderr);
	unlink(err_path);
	return 0;
}

static size_t stderr_size(void)
{
	struct stat st;

	assert_int_equal(stat(err_path, &st), 0);
	return (size_t)st.st_size;
}

static char *stderr_text(void)
{
	FILE *f = fopen(err_path, "r");
	char *buf = calloc(1, 4096);

	assert_non_null(f);
	assert_non_null(buf);
	assert_true(fread(buf, 1, 4095, f) < 4095);
	fclose(f);
	return buf;
}

static void free_lines(char **lines, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(lines[i]);
	free(lines);
}

static void held_lines_come_back_in_order_and_not_on_stderr(void **state)
{
	char **lines = NULL;
	size_t n = 0;

	(void)state;
	fsb_log_hold();
	fsb_warn("pack files lie in %s", "the workspace");
	fsb_info("reloaded pack %s", "default");
	fsb_debug("below the threshold: %d", 1);
	assert_int_equal(stderr_size(), 0);
	fsb_log_release(&lines, &n);
	assert_int_equal(n, 2);
	assert_string_equal(lines[0], "warning: pack files lie in the workspace");
	assert_string_equal(lines[1], "reloaded pack default");
	free_lines(lines, n);
	/* Released: lines go to stderr again, as they come. */
	fsb_info("after");
	assert_int_equal(stderr_size(), strlen("fsbroker: after\n"));
}

static void a_release_without_an_array_writes_the_lines_then(void **state)
{
	char *text;

	(void)state;
	fsb_log_hold();
	fsb_error("first");
	fsb_info("second");
	assert_int_equal(stderr_size(), 0);
	fsb_log_release(NULL, NULL);
	text = stderr_text();
	assert_string_equal(text, "fsbroker: error: first\nfsbroker: second\n");
	free(text);
}

static void past_64_kib_the_rest_is_counted_in_a_last_line(void **state)
{
	char **lines = NULL, big[1001];
	size_t n = 0;

	(void)state;
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	fsb_log_hold();
	for (int i = 0; i < 100; i++)
		fsb_info("%s", big);
	fsb_log_release(&lines, &n);
	/* 65 lines of 1001 bytes fit in 64 KiB, the other 35 are counted. */
	assert_int_equal(n, 66);
	assert_string_equal(lines[0], big);
	assert_string_equal(lines[n - 1], "warning: 35 log line(s) left out: more than 64 KiB "
					  "were held");
	free_lines(lines, n);
	assert_int_equal(stderr_size(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(held_lines_come_back_in_order_and_not_on_stderr,
						setup, teardown),
		cmocka_unit_test_setup_teardown(a_release_without_an_array_writes_the_lines_then,
						setup, teardown),
		cmocka_unit_test_setup_teardown(past_64_kib_the_rest_is_counted_in_a_last_line,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
