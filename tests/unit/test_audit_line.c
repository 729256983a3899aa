/*
 * test_audit_line.c — an audit record written field by field
 * (core/audit_line.c) reads back as the values it was given, the same as
 * the tree fsb_json_print() made of the same fields before, and chains
 * like any other line.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unit.h"
#include "audit.h"
#include "audit_line.h"
#include "proto_json.h"

struct fixture {
	char dir[64];
	char log[96];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (f == NULL)
		return -1;
	strcpy(f->dir, "/tmp/fsb-audit-line-XXXXXX");
	if (mkdtemp(f->dir) == NULL) {
		free(f);
		return -1;
	}
	snprintf(f->log, sizeof(f->log), "%s/session.jsonl", f->dir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	unlink(f->log);
	rmdir(f->dir);
	free(f);
	return 0;
}

/* The line's text, "{" ... "}", NUL-terminated, for cJSON. */
static cJSON *parse_line(struct fsb_audit_line *l)
{
	char *text = malloc(l->len + 2);
	cJSON *obj;

	assert_non_null(text);
	assert_false(l->failed);
	memcpy(text, l->buf, l->len);
	text[l->len] = '}';
	text[l->len + 1] = '\0';
	/* Whatever the values held, the record is one line of valid UTF-8. */
	assert_null(memchr(text, '\n', l->len + 1));
	assert_true(fsb_utf8_valid(text, l->len + 1));
	obj = cJSON_Parse(text);
	free(text);
	assert_non_null(obj);
	return obj;
}

static const char *field(const cJSON *obj, const char *key)
{
	const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);

	assert_true(cJSON_IsString(item));
	return item->valuestring;
}

static void test_values_read_back_as_given(void **state)
{
	struct fsb_audit_line l;
	cJSON *obj;

	(void)state;
	fsb_audit_line_init(&l);
	fsb_audit_line_str(&l, "quote", "say \"hi\" \\ back");
	fsb_audit_line_str(&l, "controls", "a\nb\tc\rd\be\ff\x01g\x1fh");
	fsb_audit_line_str(&l, "utf8", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
	fsb_audit_line_path(&l, "path", "/w/caf\xc3\xa9/a b\"c");
	fsb_audit_line_int(&l, "pid", -42);
	fsb_audit_line_int(&l, "big", 1LL << 40);
	fsb_audit_line_bool(&l, "yes", true);
	fsb_audit_line_bool(&l, "no", false);
	obj = parse_line(&l);

	assert_string_equal(field(obj, "quote"), "say \"hi\" \\ back");
	assert_string_equal(field(obj, "controls"), "a\nb\tc\rd\be\ff\x01g\x1fh");
	assert_string_equal(field(obj, "utf8"), "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
	assert_string_equal(field(obj, "path"), "/w/caf\xc3\xa9/a b\"c");
	assert_int_equal(cJSON_GetObjectItemCaseSensitive(obj, "pid")->valuedouble, -42);
	assert_true(cJSON_GetObjectItemCaseSensitive(obj, "big")->valuedouble == (double)(1LL << 40));
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(obj, "yes")));
	assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(obj, "no")));
	cJSON_Delete(obj);
	fsb_audit_line_free(&l);
}

static void test_bytes_that_are_not_utf8(void **state)
{
	struct fsb_audit_line l;
	cJSON *obj;

	(void)state;
	fsb_audit_line_init(&l);
	/* A name stays exact: percent-encoded under <key>Bytes. */
	fsb_audit_line_path(&l, "path", "/w/\xff\xfe x");
	/* Free text gets U+FFFD per byte: an overlong form, a lone
	 * continuation byte, a surrogate, a cut sequence. */
	fsb_audit_line_str(&l, "reason", "a\xc0\xaf" "b\x80" "c\xed\xa0\x80" "d\xe2\x82");
	obj = parse_line(&l);
	assert_null(cJSON_GetObjectItemCaseSensitive(obj, "path"));
	assert_string_equal(field(obj, "pathBytes"), "/w/%FF%FE%20x");
	assert_string_equal(field(obj, "reason"),
			    "a\xef\xbf\xbd\xef\xbf\xbd" "b\xef\xbf\xbd"
			    "c\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" "d\xef\xbf\xbd\xef\xbf\xbd");
	cJSON_Delete(obj);
	fsb_audit_line_free(&l);
}

/* Random bytes 1..255, `n` of them, NUL-terminated. */
static void random_bytes(char *out, size_t n, unsigned *seed)
{
	for (size_t i = 0; i < n; i++) {
		/* Mostly ASCII, with runs of high bytes and controls. */
		unsigned r = (unsigned)rand_r(seed);

		out[i] = (char)(r % 4 == 0 ? 0x80 + r / 4 % 128 : r % 8 == 1 ? 1 + r / 8 % 31
				: 0x20 + r / 8 % 95);
	}
	out[n] = '\0';
}

/*
 * 2,000 records of random names and texts: the line and the tree that
 * fsb_json_print() made before (the old audit line) parse to the same
 * fields and values.
 */
static void test_a_line_reads_as_the_tree_of_the_same_fields(void **state)
{
	unsigned seed = 20261207;
	char text[200], name[200];

	(void)state;
	for (int round = 0; round < 2000; round++) {
		struct fsb_audit_line l;
		cJSON *tree = cJSON_CreateObject(), *from_tree, *from_line;
		char *printed;

		random_bytes(text, (size_t)rand_r(&seed) % sizeof(text), &seed);
		random_bytes(name, (size_t)rand_r(&seed) % sizeof(name), &seed);
		fsb_audit_line_init(&l);
		fsb_audit_line_str(&l, "rule", text);
		fsb_audit_line_path(&l, "path", name);
		fsb_audit_line_int(&l, "seq", round);
		cJSON_AddStringToObject(tree, "rule", text);
		fsb_json_add_path(tree, "path", name, false);
		cJSON_AddNumberToObject(tree, "seq", round);

		printed = fsb_json_print(tree, false);
		assert_non_null(printed);
		from_tree = cJSON_Parse(printed);
		from_line = parse_line(&l);
		assert_non_null(from_tree);
		assert_true(cJSON_Compare(from_tree, from_line, true));
		cJSON_Delete(from_tree);
		cJSON_Delete(from_line);
		cJSON_free(printed);
		cJSON_Delete(tree);
		fsb_audit_line_free(&l);
	}
}

static void test_a_line_outgrows_its_first_buffer(void **state)
{
	struct fsb_audit_line l;
	char name[4001];
	cJSON *obj;

	(void)state;
	memset(name, '\xff', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	fsb_audit_line_init(&l);
	fsb_audit_line_str(&l, "phase", "supervisor");
	fsb_audit_line_path(&l, "path", name);
	assert_true(l.len > 3 * 4000);
	assert_true(l.buf != l.small);
	obj = parse_line(&l);
	assert_int_equal(strlen(field(obj, "pathBytes")), 3 * 4000);
	assert_string_equal(field(obj, "phase"), "supervisor");
	cJSON_Delete(obj);
	fsb_audit_line_free(&l);
}

/* Lines and trees in one log: one chain, each line with time and prev. */
static void test_lines_and_trees_chain_together(void **state)
{
	struct fixture *f = *state;
	struct fsb_audit *a;
	char *report = NULL, buf[4096];
	size_t rlen;
	FILE *m, *fp;
	int lines = 0;

	assert_int_equal(fsb_audit_open(f->log, &a), 0);
	for (int i = 0; i < 6; i++) {
		if (i % 2 == 0) {
			struct fsb_audit_line l;

			fsb_audit_line_init(&l);
			fsb_audit_line_str(&l, "op", "chmod");
			fsb_audit_line_int(&l, "seq", i);
			assert_int_equal(fsb_audit_append(a, &l), 0);
			fsb_audit_line_free(&l);
		} else {
			cJSON *rec = cJSON_CreateObject();

			cJSON_AddNumberToObject(rec, "seq", i);
			assert_int_equal(fsb_audit_write(a, rec), 0);
			cJSON_Delete(rec);
		}
	}
	fsb_audit_close(a);

	m = open_memstream(&report, &rlen);
	assert_non_null(m);
	assert_int_equal(fsb_audit_verify(f->log, NULL, m), 0);
	assert_int_equal(fclose(m), 0);
	assert_string_equal(report, "");
	free(report);

	fp = fopen(f->log, "re");
	assert_non_null(fp);
	while (fgets(buf, sizeof(buf), fp) != NULL) {
		cJSON *obj = cJSON_Parse(buf);

		assert_non_null(obj);
		assert_int_equal(cJSON_GetObjectItemCaseSensitive(obj, "seq")->valueint, lines);
		assert_int_equal(strlen(field(obj, "time")), 24);
		assert_int_equal(strlen(field(obj, "prev")), FSB_SHA256_HEX_LEN);
		cJSON_Delete(obj);
		lines++;
	}
	fclose(fp);
	assert_int_equal(lines, 6);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_values_read_back_as_given),
		cmocka_unit_test(test_bytes_that_are_not_utf8),
		cmocka_unit_test(test_a_line_reads_as_the_tree_of_the_same_fields),
		cmocka_unit_test(test_a_line_outgrows_its_first_buffer),
		T(test_lines_and_trees_chain_together),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
