/*
 * test_proto_text.c — the text token request parser: valid lines of every
 * class, the open-spec, and each way a line can be malformed.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "proto_text.h"

/* Parse a copy of `s` (the parser writes into its line); `len` may differ. */
static int parse_len(const char *s, size_t len, struct fsb_text_req *req,
		     const char **why, char **buf)
{
	*buf = malloc(len + 1);
	assert_non_null(*buf);
	memcpy(*buf, s, len);
	(*buf)[len] = '\0';
	*why = NULL;
	return fsb_text_parse(*buf, len, req, why);
}

/* Expect `s` to be refused with a reason that contains `needle`. */
static void refused(const char *s, const char *needle)
{
	struct fsb_text_req req;
	const char *why;
	char *buf;

	assert_int_equal(parse_len(s, strlen(s), &req, &why, &buf), -EINVAL);
	assert_non_null(why);
	assert_non_null(strstr(why, needle));
	assert_null(req.path);
	free(buf);
}

static void read_request_parses(void **state)
{
	struct fsb_text_req req;
	const char *why;
	char *buf;
	const char *s = "fsbroker.read\t/home/u/a.txt\tsess-1\ttc-9";

	(void)state;
	assert_int_equal(parse_len(s, strlen(s), &req, &why, &buf), 0);
	assert_false(req.write);
	assert_string_equal(req.path, "/home/u/a.txt");
	assert_string_equal(req.session, "sess-1");
	assert_string_equal(req.tool_call, "tc-9");
	assert_false(req.has_open);
	free(buf);
}

static void read_write_request_parses(void **state)
{
	struct fsb_text_req req;
	const char *why;
	char *buf;
	const char *s = "fsbroker.read-write\t/tmp/x\ts\tt";

	(void)state;
	assert_int_equal(parse_len(s, strlen(s), &req, &why, &buf), 0);
	assert_true(req.write);
	assert_string_equal(req.path, "/tmp/x");
	free(buf);
}

static void original_class_names_are_aliases(void **state)
{
	struct fsb_text_req req;
	const char *why;
	char *buf;
	const char *r = "com.workbuddy.sandbox.read\t/a\ts\tt";
	const char *w = "com.workbuddy.sandbox.read-write\t/a\ts\tt";

	(void)state;
	assert_int_equal(parse_len(r, strlen(r), &req, &why, &buf), 0);
	assert_false(req.write);
	free(buf);
	assert_int_equal(parse_len(w, strlen(w), &req, &why, &buf), 0);
	assert_true(req.write);
	free(buf);
}

static void empty_tool_call_is_accepted(void **state)
{
	struct fsb_text_req req;
	const char *why;
	char *buf;
	const char *s = "fsbroker.read\t/a\ts\t";

	(void)state;
	assert_int_equal(parse_len(s, strlen(s), &req, &why, &buf), 0);
	assert_string_equal(req.tool_call, "");
	free(buf);
}

static void path_with_spaces_and_utf8_is_kept_whole(void **state)
{
	struct fsb_text_req req;
	const char *why;
	char *buf;
	const char *s = "fsbroker.read\t/a b/\xc3\xa9t\xc3\xa9 \\x\ts\tt";

	(void)state;
	assert_int_equal(parse_len(s, strlen(s), &req, &why, &buf), 0);
	assert_string_equal(req.path, "/a b/\xc3\xa9t\xc3\xa9 \\x");
	free(buf);
}

static void open_spec_with_0x_parses(void **state)
{
	struct fsb_text_req req;
	const char *why;
	char *buf;
	const char *s = "fsbroker.read-write\t/a\ts\tt\topen=0x241:0644";

	(void)state;
	assert_int_equal(parse_len(s, strlen(s), &req, &why, &buf), 0);
	assert_true(req.has_open);
	assert_int_equal(req.open_flags, O_WRONLY | O_CREAT | O_TRUNC);
	assert_int_equal(req.open_mode, 0644);
	free(buf);
}

static void open_spec_without_0x_parses(void **state)
{
	struct fsb_text_req req;
	const char *why;
	char *buf;
	const char *s = "fsbroker.read-write\t/a\ts\tt\topen=80441:600";
	const char *u = "fsbroker.read\t/a\ts\tt\topen=0XA0000:0";

	(void)state;
	assert_int_equal(parse_len(s, strlen(s), &req, &why, &buf), 0);
	assert_int_equal(req.open_flags, 0x80441);
	assert_int_equal(req.open_mode, 0600);
	free(buf);
	assert_int_equal(parse_len(u, strlen(u), &req, &why, &buf), 0);
	assert_int_equal(req.open_flags, 0xa0000);
	assert_int_equal(req.open_mode, 0);
	free(buf);
}

static void open_spec_bits_are_not_judged_by_the_parser(void **state)
{
	struct fsb_text_req req;
	const char *why;
	char *buf;
	const char *s = "fsbroker.read\t/a\ts\tt\topen=0xffffffff:07777";

	(void)state;
	assert_int_equal(parse_len(s, strlen(s), &req, &why, &buf), 0);
	assert_int_equal((unsigned)req.open_flags, 0xffffffffu);
	assert_int_equal(req.open_mode, 07777);
	free(buf);
}

static void malformed_open_specs_are_refused(void **state)
{
	static const char *const specs[] = {
		"", "open=", "open=:0644", "open=0x:0644", "open=241",
		"open=241:", "open=0x241:0648", "open=0x241:10000",
		"open=0x1ffffffff:0644", "open=0xg:0644", "open=0x241:0644 ",
		"open=0x241:0644\r", "Open=0x241:0644", "open= 241:0644",
		"open=-1:0644", "flags=0x241:0644",
	};
	char line[128];

	(void)state;
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		strcpy(line, "fsbroker.read-write\t/a\ts\tt\t");
		strcat(line, specs[i]);
		refused(line, "malformed open-spec");
	}
}

static void unknown_class_is_refused(void **state)
{
	(void)state;
	refused("fsbroker.write\t/a\ts\tt", "unknown request class");
	refused("FSBROKER.READ\t/a\ts\tt", "unknown request class");
	refused("com.workbuddy.sandbox.read \t/a\ts\tt", "unknown request class");
	refused("", "unknown request class");
}

static void missing_fields_are_refused(void **state)
{
	(void)state;
	refused("fsbroker.read", "too few fields");
	refused("fsbroker.read\t/a", "too few fields");
	refused("fsbroker.read\t/a\ts", "too few fields");
}

static void extra_field_is_refused(void **state)
{
	(void)state;
	refused("fsbroker.read\t/a\ts\tt\topen=0:0\textra", "too many fields");
	refused("fsbroker.read\t/a\ts\tt\t\t", "too many fields");
}

static void relative_or_empty_path_is_refused(void **state)
{
	(void)state;
	refused("fsbroker.read\ta.txt\ts\tt", "path is not absolute");
	refused("fsbroker.read\t./a\ts\tt", "path is not absolute");
	refused("fsbroker.read\t~/a\ts\tt", "path is not absolute");
	refused("fsbroker.read\t\ts\tt", "path is empty");
}

static void empty_session_is_refused(void **state)
{
	(void)state;
	refused("fsbroker.read\t/a\t\tt", "session id is empty");
}

static void path_of_path_max_bytes_is_refused(void **state)
{
	static char line[PATH_MAX + 64];
	char *p;

	(void)state;
	strcpy(line, "fsbroker.read\t/");
	p = line + strlen(line);
	memset(p, 'a', PATH_MAX - 1);
	strcpy(p + PATH_MAX - 1, "\ts\tt");
	refused(line, "longer than PATH_MAX");
}

static void path_of_path_max_minus_one_bytes_parses(void **state)
{
	static char line[PATH_MAX + 64];
	struct fsb_text_req req;
	const char *why;
	char *buf, *p;

	(void)state;
	strcpy(line, "fsbroker.read\t/");
	p = line + strlen(line);
	memset(p, 'a', PATH_MAX - 2);
	strcpy(p + PATH_MAX - 2, "\ts\tt");
	assert_int_equal(parse_len(line, strlen(line), &req, &why, &buf), 0);
	assert_int_equal(strlen(req.path), PATH_MAX - 1);
	free(buf);
}

static void oversized_line_is_refused_not_overrun(void **state)
{
	/* A 64 KiB path: the framing would cut it; the parser must cope. */
	size_t n = 64 * 1024;
	char *line = malloc(n + 32);
	char *p;

	(void)state;
	assert_non_null(line);
	strcpy(line, "fsbroker.read-write\t/");
	p = line + strlen(line);
	memset(p, 'x', n);
	strcpy(p + n, "\ts\tt");
	refused(line, "longer than PATH_MAX");
	free(line);
}

static void embedded_nul_is_refused(void **state)
{
	struct fsb_text_req req;
	const char *why;
	char *buf;
	static const char s[] = "fsbroker.read\t/etc/passwd\0/home/u/ok\ts\tt";

	(void)state;
	assert_int_equal(parse_len(s, sizeof(s) - 1, &req, &why, &buf), -EINVAL);
	assert_string_equal(why, "line holds a NUL byte");
	assert_null(req.path);
	free(buf);
}

static void nul_in_last_field_is_refused(void **state)
{
	struct fsb_text_req req;
	const char *why;
	char *buf;
	static const char s[] = "fsbroker.read\t/a\ts\tt\0";

	(void)state;
	assert_int_equal(parse_len(s, sizeof(s) - 1, &req, &why, &buf), -EINVAL);
	assert_string_equal(why, "line holds a NUL byte");
	free(buf);
}

static void truncated_line_is_refused(void **state)
{
	(void)state;
	refused("fsbroker.re", "unknown request class");
	refused("fsbroker.read\t/a\ts", "too few fields");
	refused("fsbroker.read-write\t/a\ts\tt\topen=0x2", "malformed open-spec");
}

static void newline_in_line_is_refused(void **state)
{
	(void)state;
	refused("fsbroker.read\t/a\nb\ts\tt", "newline");
}

static void trailing_cr_stays_in_last_field(void **state)
{
	struct fsb_text_req req;
	const char *why;
	char *buf;
	const char *s = "fsbroker.read\t/a\ts\tt\r";

	(void)state;
	assert_int_equal(parse_len(s, strlen(s), &req, &why, &buf), 0);
	assert_string_equal(req.tool_call, "t\r");
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(read_request_parses),
		cmocka_unit_test(read_write_request_parses),
		cmocka_unit_test(original_class_names_are_aliases),
		cmocka_unit_test(empty_tool_call_is_accepted),
		cmocka_unit_test(path_with_spaces_and_utf8_is_kept_whole),
		cmocka_unit_test(open_spec_with_0x_parses),
		cmocka_unit_test(open_spec_without_0x_parses),
		cmocka_unit_test(open_spec_bits_are_not_judged_by_the_parser),
		cmocka_unit_test(malformed_open_specs_are_refused),
		cmocka_unit_test(unknown_class_is_refused),
		cmocka_unit_test(missing_fields_are_refused),
		cmocka_unit_test(extra_field_is_refused),
		cmocka_unit_test(relative_or_empty_path_is_refused),
		cmocka_unit_test(empty_session_is_refused),
		cmocka_unit_test(path_of_path_max_bytes_is_refused),
		cmocka_unit_test(path_of_path_max_minus_one_bytes_parses),
		cmocka_unit_test(oversized_line_is_refused_not_overrun),
		cmocka_unit_test(embedded_nul_is_refused),
		cmocka_unit_test(nul_in_last_field_is_refused),
		cmocka_unit_test(truncated_line_is_refused),
		cmocka_unit_test(newline_in_line_is_refused),
		cmocka_unit_test(trailing_cr_stays_in_last_field),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
