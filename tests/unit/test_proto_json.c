/*
 * test_proto_json.c — the raw-line precheck, JSON parsing, HostFileOperation
 * validation and the percent-encoded `…Bytes` path form.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "proto_json.h"

static int precheck(const char *s)
{
	const char *why = NULL;
	int err = fsb_json_precheck(s, strlen(s), &why);

	if (err < 0)
		assert_non_null(why);
	return err;
}

/* Parse `json` as a whole request; on failure *why is returned. */
static int parse_req(const char *json, struct fsb_hostop_req *req,
		     const char **why)
{
	cJSON *obj;
	int err;

	*why = NULL;
	obj = fsb_json_parse_object(json, strlen(json), why);
	assert_non_null(obj);
	err = fsb_hostop_parse(obj, req, why);
	cJSON_Delete(obj);
	return err;
}

/* Expect `json` to parse as JSON but be refused with exactly `msg`. */
static void refused(const char *json, const char *msg)
{
	struct fsb_hostop_req req;
	const char *why;

	assert_int_equal(parse_req(json, &req, &why), -EINVAL);
	assert_string_equal(why, msg);
	assert_null(req.path);
	assert_null(req.from);
	assert_null(req.id);
}

#define HOP "{\"command\":\"HostFileOperation\","

/* ---- precheck ---------------------------------------------------------- */

static void precheck_accepts_plain_and_multibyte_utf8(void **state)
{
	(void)state;
	assert_int_equal(precheck("{\"path\":\"/a\"}"), 0);
	assert_int_equal(precheck("{\"path\":\"/caf\xc3\xa9\"}"), 0);
	assert_int_equal(precheck("{\"path\":\"/\xe2\x82\xac\"}"), 0);
	assert_int_equal(precheck("{\"path\":\"/\xf0\x9f\x98\x80\"}"), 0);
	assert_int_equal(precheck("{\"path\":\"/\xf4\x8f\xbf\xbf\"}"), 0);
	assert_int_equal(precheck("{\"path\":\"/\xed\x9f\xbf\"}"), 0);
}

static void precheck_refuses_invalid_utf8(void **state)
{
	static const char *const bad[] = {
		"{\"p\":\"\xc0\x80\"}",		/* overlong NUL */
		"{\"p\":\"\xc1\xbf\"}",		/* overlong */
		"{\"p\":\"\xe0\x80\xaf\"}",	/* overlong '/' */
		"{\"p\":\"\xf0\x80\x80\xaf\"}",	/* overlong '/' */
		"{\"p\":\"\xed\xa0\x80\"}",	/* UTF-8 encoded surrogate */
		"{\"p\":\"\xed\xbf\xbf\"}",	/* UTF-8 encoded surrogate */
		"{\"p\":\"\xf4\x90\x80\x80\"}",	/* above U+10FFFF */
		"{\"p\":\"\xf5\x80\x80\x80\"}",
		"{\"p\":\"\xff\"}",
		"{\"p\":\"\x80\"}",		/* lone continuation */
		"{\"p\":\"\xc3(\"}",		/* missing continuation */
		"{\"p\":\"\xe2\x82",		/* cut at the end */
		"{\"p\":1}\xc3",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(precheck(bad[i]), -EINVAL);
}

static void precheck_refuses_raw_nul(void **state)
{
	static const char s[] = "{\"path\":\"/etc/passwd\0/ok\"}";
	const char *why = NULL;

	(void)state;
	assert_int_equal(fsb_json_precheck(s, sizeof(s) - 1, &why), -EINVAL);
	assert_string_equal(why, "request holds a NUL byte");
}

static void precheck_refuses_u0000_escape(void **state)
{
	const char *why = NULL;
	const char *s = "{\"path\":\"/etc/passwd\\u0000/ok\"}";

	(void)state;
	assert_int_equal(fsb_json_precheck(s, strlen(s), &why), -EINVAL);
	assert_string_equal(why, "request holds a \\u0000 escape");
	assert_int_equal(precheck("{\"p\\u0000ath\":\"/a\"}"), -EINVAL);
	/* After an escaped quote the string goes on. */
	assert_int_equal(precheck("{\"p\":\"a\\\"\\u0000\"}"), -EINVAL);
	/* An escaped backslash, then a real escape. */
	assert_int_equal(precheck("{\"p\":\"\\\\\\u0000\"}"), -EINVAL);
}

static void precheck_accepts_escaped_backslash_before_u0000_text(void **state)
{
	struct fsb_hostop_req req;
	const char *why;
	const char *s = HOP "\"operation\":\"touch\",\"path\":\"/a\\\\u0000\"}";

	(void)state;
	assert_int_equal(precheck("{\"p\":\"\\\\u0000\"}"), 0);
	assert_int_equal(parse_req(s, &req, &why), 0);
	assert_string_equal(req.path, "/a\\u0000");
	fsb_hostop_free(&req);
}

static void precheck_accepts_paired_surrogate_escapes(void **state)
{
	(void)state;
	assert_int_equal(precheck("{\"p\":\"\\ud83d\\ude00\"}"), 0);
	assert_int_equal(precheck("{\"p\":\"\\uD83D\\uDE00\"}"), 0);
	assert_int_equal(precheck("{\"p\":\"\\u00e9\\u20AC\"}"), 0);
}

static void precheck_refuses_unpaired_surrogate_escapes(void **state)
{
	(void)state;
	assert_int_equal(precheck("{\"p\":\"\\ud83d\"}"), -EINVAL);
	assert_int_equal(precheck("{\"p\":\"\\ude00\"}"), -EINVAL);
	assert_int_equal(precheck("{\"p\":\"\\ude00\\ud83d\"}"), -EINVAL);
	assert_int_equal(precheck("{\"p\":\"\\ud83d\\u0041\"}"), -EINVAL);
	assert_int_equal(precheck("{\"p\":\"\\ud83d\\ud83d\"}"), -EINVAL);
	assert_int_equal(precheck("{\"p\":\"\\uDBFFx\"}"), -EINVAL);
	assert_int_equal(precheck("{\"p\":\"\\ud83d"), -EINVAL);
}

static void precheck_refuses_malformed_escapes(void **state)
{
	(void)state;
	assert_int_equal(precheck("{\"p\":\"\\u12\"}"), -EINVAL);
	assert_int_equal(precheck("{\"p\":\"\\u12g4\"}"), -EINVAL);
	assert_int_equal(precheck("{\"p\":\"\\x41\"}"), -EINVAL);
	assert_int_equal(precheck("{\"p\":\"\\"), -EINVAL);
}

/* ---- parse_object ------------------------------------------------------ */

static void parse_object_accepts_object_with_trailing_space(void **state)
{
	const char *why = NULL;
	const char *s = " {\"a\":1} \r";
	cJSON *o;

	(void)state;
	o = fsb_json_parse_object(s, strlen(s), &why);
	assert_non_null(o);
	assert_int_equal(cJSON_GetObjectItem(o, "a")->valueint, 1);
	cJSON_Delete(o);
}

static void parse_object_reads_only_len_bytes(void **state)
{
	const char *why = NULL;
	const char *s = "{\"a\":1}garbage";

	(void)state;
	cJSON *o = fsb_json_parse_object(s, 7, &why);
	assert_non_null(o);
	cJSON_Delete(o);
	assert_null(fsb_json_parse_object(s, strlen(s), &why));
	assert_string_equal(why, "request has data after the JSON value");
}

static void parse_object_refuses_non_objects_and_bad_json(void **state)
{
	const char *why = NULL;

	(void)state;
	assert_null(fsb_json_parse_object("[1,2]", 5, &why));
	assert_string_equal(why, "request is not a JSON object");
	assert_null(fsb_json_parse_object("\"x\"", 3, &why));
	assert_string_equal(why, "request is not a JSON object");
	assert_null(fsb_json_parse_object("{\"a\":", 5, &why));
	assert_string_equal(why, "request is not valid JSON");
	assert_null(fsb_json_parse_object("{\"a\" 1}", 7, &why));
	assert_string_equal(why, "request is not valid JSON");
	assert_null(fsb_json_parse_object("", 0, &why));
	assert_non_null(why);
}

static void parse_object_refuses_truncated_request(void **state)
{
	const char *why = NULL;
	const char *s = HOP "\"operation\":\"delete\",\"path\":\"/a\"}";

	(void)state;
	for (size_t n = 0; n < strlen(s); n++)
		assert_null(fsb_json_parse_object(s, n, &why));
}

static void parse_object_runs_the_precheck(void **state)
{
	const char *why = NULL;
	const char *s = "{\"path\":\"/a\\u0000b\"}";

	(void)state;
	assert_null(fsb_json_parse_object(s, strlen(s), &why));
	assert_string_equal(why, "request holds a \\u0000 escape");
}

/* ---- HostFileOperation ------------------------------------------------- */

static void delete_with_defaults_parses(void **state)
{
	struct fsb_hostop_req req;
	const char *why;

	(void)state;
	assert_int_equal(parse_req(HOP "\"operation\":\"delete\","
				   "\"path\":\"/w/a.txt\"}", &req, &why), 0);
	assert_int_equal(req.op, FSB_HOSTOP_DELETE);
	assert_string_equal(req.path, "/w/a.txt");
	assert_false(req.path_bytes);
	assert_true(req.delete_trash);
	assert_false(req.recursive);
	assert_false(req.force);
	assert_null(req.id);
	assert_null(req.session);
	assert_null(req.tool_call);
	assert_null(req.trace);
	assert_null(req.from);
	fsb_hostop_free(&req);
}

static void delete_with_every_option_parses(void **state)
{
	struct fsb_hostop_req req;
	const char *why;

	(void)state;
	assert_int_equal(parse_req(HOP "\"id\":\"req-1\",\"operation\":\"delete\","
				   "\"path\":\"/w/d\",\"deleteMode\":\"unlink\","
				   "\"recursive\":true,\"force\":true,"
				   "\"sessionId\":\"s1\",\"toolCallId\":\"t1\","
				   "\"brokerTraceId\":\"tr\"}", &req, &why), 0);
	assert_false(req.delete_trash);
	assert_true(req.recursive);
	assert_true(req.force);
	assert_true(cJSON_IsString(req.id));
	assert_string_equal(req.id->valuestring, "req-1");
	assert_string_equal(req.session, "s1");
	assert_string_equal(req.tool_call, "t1");
	assert_string_equal(req.trace, "tr");
	fsb_hostop_free(&req);
}

static void id_of_any_type_is_copied(void **state)
{
	struct fsb_hostop_req req;
	const char *why;

	(void)state;
	assert_int_equal(parse_req(HOP "\"id\":42,\"operation\":\"touch\","
				   "\"path\":\"/a\"}", &req, &why), 0);
	assert_true(cJSON_IsNumber(req.id));
	assert_int_equal(req.id->valueint, 42);
	fsb_hostop_free(&req);
	assert_int_equal(parse_req(HOP "\"id\":{\"n\":[1,2]},\"operation\":"
				   "\"touch\",\"path\":\"/a\"}", &req, &why), 0);
	assert_true(cJSON_IsObject(req.id));
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(req.id, "n")), 2);
	fsb_hostop_free(&req);
	assert_int_equal(parse_req(HOP "\"id\":null,\"operation\":\"touch\","
				   "\"path\":\"/a\"}", &req, &why), 0);
	assert_true(cJSON_IsNull(req.id));
	fsb_hostop_free(&req);
}

static void two_path_operations_parse(void **state)
{
	struct fsb_hostop_req req;
	const char *why;

	(void)state;
	assert_int_equal(parse_req(HOP "\"operation\":\"rename\",\"from\":\"/a\","
				   "\"to\":\"/b\"}", &req, &why), 0);
	assert_int_equal(req.op, FSB_HOSTOP_RENAME);
	assert_string_equal(req.from, "/a");
	assert_string_equal(req.to, "/b");
	assert_null(req.path);
	fsb_hostop_free(&req);
	assert_int_equal(parse_req(HOP "\"operation\":\"copy\",\"from\":\"/a\","
				   "\"to\":\"/b\",\"recursive\":true}", &req,
				   &why), 0);
	assert_int_equal(req.op, FSB_HOSTOP_COPY);
	assert_true(req.recursive);
	fsb_hostop_free(&req);
	assert_int_equal(parse_req(HOP "\"operation\":\"link\",\"from\":\"/a\","
				   "\"to\":\"/b\",\"symbolic\":true}", &req,
				   &why), 0);
	assert_int_equal(req.op, FSB_HOSTOP_LINK);
	assert_true(req.symbolic);
	fsb_hostop_free(&req);
	assert_int_equal(parse_req(HOP "\"operation\":\"link\",\"from\":\"/a\","
				   "\"to\":\"/b\",\"symbolic\":false}", &req,
				   &why), 0);
	assert_false(req.symbolic);
	fsb_hostop_free(&req);
}

static void mode_as_number_or_octal_string_parses(void **state)
{
	struct fsb_hostop_req req;
	const char *why;

	(void)state;
	assert_int_equal(parse_req(HOP "\"operation\":\"mkdir\",\"path\":\"/d\","
				   "\"mode\":493,\"recursive\":true}", &req,
				   &why), 0);
	assert_int_equal(req.op, FSB_HOSTOP_MKDIR);
	assert_true(req.has_mode);
	assert_int_equal(req.mode, 0755);
	assert_true(req.recursive);
	fsb_hostop_free(&req);
	assert_int_equal(parse_req(HOP "\"operation\":\"chmod\",\"path\":\"/f\","
				   "\"mode\":\"0644\"}", &req, &why), 0);
	assert_int_equal(req.op, FSB_HOSTOP_CHMOD);
	assert_int_equal(req.mode, 0644);
	fsb_hostop_free(&req);
	assert_int_equal(parse_req(HOP "\"operation\":\"chmod\",\"path\":\"/f\","
				   "\"mode\":\"7777\"}", &req, &why), 0);
	assert_int_equal(req.mode, 07777);
	fsb_hostop_free(&req);
	assert_int_equal(parse_req(HOP "\"operation\":\"mkdir\",\"path\":\"/d\"}",
				   &req, &why), 0);
	assert_false(req.has_mode);
	fsb_hostop_free(&req);
}

static void bad_modes_are_refused(void **state)
{
	static const char *const modes[] = {
		"4096", "-1", "1.5", "1e9", "\"0789\"", "\"\"", "\"10000\"",
		"\"0o644\"", "\" 644\"", "true", "null", "[420]",
	};
	char s[256];

	(void)state;
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		snprintf(s, sizeof(s), HOP "\"operation\":\"chmod\","
			 "\"path\":\"/f\",\"mode\":%s}", modes[i]);
		refused(s, "field 'mode' must be a number from 0 to 07777 or "
			"a string of octal digits");
	}
	refused(HOP "\"operation\":\"chmod\",\"path\":\"/f\"}",
		"field 'mode' is missing");
}

static void touch_parses(void **state)
{
	struct fsb_hostop_req req;
	const char *why;

	(void)state;
	assert_int_equal(parse_req(HOP "\"operation\":\"touch\",\"path\":\"/t\"}",
				   &req, &why), 0);
	assert_int_equal(req.op, FSB_HOSTOP_TOUCH);
	assert_string_equal(req.path, "/t");
	fsb_hostop_free(&req);
}

static void options_of_other_operations_are_ignored(void **state)
{
	struct fsb_hostop_req req;
	const char *why;

	(void)state;
	assert_int_equal(parse_req(HOP "\"operation\":\"rename\",\"from\":\"/a\","
				   "\"to\":\"/b\",\"recursive\":\"yes\","
				   "\"mode\":\"zzz\",\"path\":5,"
				   "\"safeDeleteReportPath\":\"/r\"}", &req,
				   &why), 0);
	assert_false(req.recursive);
	assert_false(req.has_mode);
	assert_null(req.path);
	fsb_hostop_free(&req);
}

static void command_must_be_host_file_operation(void **state)
{
	(void)state;
	refused("{\"command\":\"OpenScope\",\"operation\":\"touch\","
		"\"path\":\"/a\"}", "unknown command");
	refused("{\"command\":\"hostfileoperation\",\"operation\":\"touch\","
		"\"path\":\"/a\"}", "unknown command");
	refused("{\"operation\":\"touch\",\"path\":\"/a\"}",
		"field 'command' is missing");
	refused("{\"command\":1,\"operation\":\"touch\",\"path\":\"/a\"}",
		"field 'command' must be a string");
}

static void unknown_or_missing_operation_is_refused(void **state)
{
	(void)state;
	refused(HOP "\"operation\":\"truncate\",\"path\":\"/a\"}",
		"unknown operation");
	refused(HOP "\"operation\":\"Delete\",\"path\":\"/a\"}",
		"unknown operation");
	refused(HOP "\"path\":\"/a\"}", "field 'operation' is missing");
	refused(HOP "\"operation\":[\"delete\"],\"path\":\"/a\"}",
		"field 'operation' must be a string");
}

static void missing_path_fields_are_refused(void **state)
{
	(void)state;
	refused(HOP "\"operation\":\"delete\"}",
		"field 'path' (or 'pathBytes') is missing");
	refused(HOP "\"operation\":\"delete\",\"Path\":\"/a\"}",
		"field 'path' (or 'pathBytes') is missing");
	refused(HOP "\"operation\":\"rename\",\"from\":\"/a\"}",
		"field 'to' (or 'toBytes') is missing");
	refused(HOP "\"operation\":\"link\",\"to\":\"/a\"}",
		"field 'from' (or 'fromBytes') is missing");
	refused(HOP "\"operation\":\"copy\",\"path\":\"/a\"}",
		"field 'from' (or 'fromBytes') is missing");
}

static void bad_paths_are_refused(void **state)
{
	(void)state;
	refused(HOP "\"operation\":\"delete\",\"path\":5}",
		"field 'path' must be a string");
	refused(HOP "\"operation\":\"delete\",\"path\":\"a/b\"}",
		"field 'path' is not an absolute path");
	refused(HOP "\"operation\":\"delete\",\"path\":\"\"}",
		"field 'path' is not an absolute path");
	refused(HOP "\"operation\":\"rename\",\"from\":\"/a\",\"to\":\"b\"}",
		"field 'to' is not an absolute path");
	refused(HOP "\"operation\":\"delete\",\"pathBytes\":\"a%FF\"}",
		"field 'path' is not an absolute path");
}

static void path_length_limit_is_path_max_minus_one(void **state)
{
	struct fsb_hostop_req req;
	const char *why;
	size_t pre = strlen(HOP "\"operation\":\"touch\",\"path\":\"");
	char *s = malloc(pre + PATH_MAX + 8);

	(void)state;
	assert_non_null(s);
	strcpy(s, HOP "\"operation\":\"touch\",\"path\":\"/");
	memset(s + pre + 1, 'a', PATH_MAX - 2);
	strcpy(s + pre + PATH_MAX - 1, "\"}");
	assert_int_equal(parse_req(s, &req, &why), 0);
	assert_int_equal(strlen(req.path), PATH_MAX - 1);
	fsb_hostop_free(&req);
	memset(s + pre + 1, 'a', PATH_MAX - 1);
	strcpy(s + pre + PATH_MAX, "\"}");
	refused(s, "field 'path' is longer than PATH_MAX");
	free(s);
}

static void oversized_line_is_refused_not_overrun(void **state)
{
	size_t n = 64 * 1024;
	size_t pre = strlen(HOP "\"operation\":\"delete\",\"path\":\"/");
	char *s = malloc(pre + n + 8);

	(void)state;
	assert_non_null(s);
	strcpy(s, HOP "\"operation\":\"delete\",\"path\":\"/");
	memset(s + pre, 'x', n);
	strcpy(s + pre + n, "\"}");
	refused(s, "field 'path' is longer than PATH_MAX");
	free(s);
}

static void deep_nesting_is_refused_not_overflowed(void **state)
{
	size_t n = 60000;
	char *s = malloc(2 * n + 16);
	const char *why = NULL;

	(void)state;
	assert_non_null(s);
	strcpy(s, "{\"id\":");
	memset(s + 6, '[', n);
	memset(s + 6 + n, ']', n);
	strcpy(s + 6 + 2 * n, "}");
	assert_null(fsb_json_parse_object(s, strlen(s), &why));
	assert_string_equal(why, "request is not valid JSON");
	free(s);
}

static void wrong_option_types_name_the_field(void **state)
{
	(void)state;
	refused(HOP "\"operation\":\"delete\",\"path\":\"/a\","
		"\"recursive\":\"yes\"}", "field 'recursive' must be a boolean");
	refused(HOP "\"operation\":\"delete\",\"path\":\"/a\",\"force\":1}",
		"field 'force' must be a boolean");
	refused(HOP "\"operation\":\"link\",\"from\":\"/a\",\"to\":\"/b\","
		"\"symbolic\":null}", "field 'symbolic' must be a boolean");
	refused(HOP "\"operation\":\"copy\",\"from\":\"/a\",\"to\":\"/b\","
		"\"recursive\":0}", "field 'recursive' must be a boolean");
	refused(HOP "\"operation\":\"delete\",\"path\":\"/a\","
		"\"deleteMode\":\"shred\"}",
		"field 'deleteMode' must be \"trash\" or \"unlink\"");
	refused(HOP "\"operation\":\"delete\",\"path\":\"/a\","
		"\"deleteMode\":true}",
		"field 'deleteMode' must be \"trash\" or \"unlink\"");
	refused(HOP "\"operation\":\"touch\",\"path\":\"/a\",\"sessionId\":5}",
		"field 'sessionId' must be a string");
	refused(HOP "\"operation\":\"touch\",\"path\":\"/a\",\"toolCallId\":{}}",
		"field 'toolCallId' must be a string");
	refused(HOP "\"operation\":\"touch\",\"path\":\"/a\","
		"\"brokerTraceId\":false}",
		"field 'brokerTraceId' must be a string");
}

static void duplicate_fields_are_refused(void **state)
{
	(void)state;
	refused(HOP "\"operation\":\"delete\",\"path\":\"/tmp/x\","
		"\"path\":\"/etc/passwd\"}", "field 'path' is given twice");
	refused(HOP "\"operation\":\"touch\",\"operation\":\"delete\","
		"\"path\":\"/a\"}", "field 'operation' is given twice");
	refused(HOP "\"operation\":\"touch\",\"path\":\"/a\","
		"\"sessionId\":\"a\",\"sessionId\":\"b\"}",
		"field 'sessionId' is given twice");
}

static void failure_leaves_the_struct_zeroed(void **state)
{
	struct fsb_hostop_req req;
	const char *why;

	(void)state;
	assert_int_equal(parse_req(HOP "\"id\":7,\"operation\":\"rename\","
				   "\"from\":\"/a\",\"to\":\"/b\","
				   "\"sessionId\":\"s\",\"toolCallId\":9}",
				   &req, &why), -EINVAL);
	assert_null(req.id);
	assert_null(req.from);
	assert_null(req.to);
	assert_null(req.session);
	assert_false(req.delete_trash);
}

static void free_leaves_the_struct_zeroed(void **state)
{
	struct fsb_hostop_req req;
	const char *why;

	(void)state;
	assert_int_equal(parse_req(HOP "\"id\":\"x\",\"operation\":\"link\","
				   "\"fromBytes\":\"/%FF\",\"to\":\"/b\","
				   "\"symbolic\":true,\"sessionId\":\"s\"}",
				   &req, &why), 0);
	fsb_hostop_free(&req);
	assert_null(req.id);
	assert_null(req.from);
	assert_null(req.to);
	assert_null(req.session);
	assert_false(req.from_bytes);
	assert_false(req.symbolic);
	fsb_hostop_free(&req);
}

static void hostop_names_match_the_protocol(void **state)
{
	(void)state;
	assert_string_equal(fsb_hostop_name(FSB_HOSTOP_DELETE), "delete");
	assert_string_equal(fsb_hostop_name(FSB_HOSTOP_MKDIR), "mkdir");
	assert_string_equal(fsb_hostop_name(FSB_HOSTOP_RENAME), "rename");
	assert_string_equal(fsb_hostop_name(FSB_HOSTOP_COPY), "copy");
	assert_string_equal(fsb_hostop_name(FSB_HOSTOP_CHMOD), "chmod");
	assert_string_equal(fsb_hostop_name(FSB_HOSTOP_LINK), "link");
	assert_string_equal(fsb_hostop_name(FSB_HOSTOP_TOUCH), "touch");
	assert_string_equal(fsb_hostop_name((enum fsb_hostop)99), "?");
}

/* ---- …Bytes paths ------------------------------------------------------ */

static void path_bytes_decode_non_utf8_names(void **state)
{
	struct fsb_hostop_req req;
	const char *why;

	(void)state;
	assert_int_equal(parse_req(HOP "\"operation\":\"rename\","
				   "\"fromBytes\":\"/w/caf%E9\","
				   "\"toBytes\":\"/w/%ff%fe%20x\"}", &req,
				   &why), 0);
	assert_string_equal(req.from, "/w/caf\xe9");
	assert_string_equal(req.to, "/w/\xff\xfe x");
	assert_true(req.from_bytes);
	assert_true(req.to_bytes);
	fsb_hostop_free(&req);
}

static void path_bytes_with_nul_or_bad_escape_are_refused(void **state)
{
	static const char *const msg = "field 'pathBytes' must be a string of "
				       "percent-encoded bytes without NUL";

	(void)state;
	refused(HOP "\"operation\":\"delete\",\"pathBytes\":\"/etc/passwd%00x\"}",
		msg);
	refused(HOP "\"operation\":\"delete\",\"pathBytes\":\"/a%G1\"}", msg);
	refused(HOP "\"operation\":\"delete\",\"pathBytes\":\"/a%4\"}", msg);
	refused(HOP "\"operation\":\"delete\",\"pathBytes\":\"/a%\"}", msg);
	refused(HOP "\"operation\":\"delete\",\"pathBytes\":[47]}", msg);
}

static void path_and_path_bytes_together_are_refused(void **state)
{
	(void)state;
	refused(HOP "\"operation\":\"delete\",\"path\":\"/a\","
		"\"pathBytes\":\"/b\"}",
		"fields 'path' and 'pathBytes' are both given");
	refused(HOP "\"operation\":\"rename\",\"from\":\"/a\",\"to\":\"/b\","
		"\"toBytes\":\"/c\"}", "fields 'to' and 'toBytes' are both given");
}

static void percent_decode_handles_both_hex_cases(void **state)
{
	char *s;

	(void)state;
	s = fsb_percent_decode("/%2f%2F%41a%e2%82%ac");
	assert_non_null(s);
	assert_string_equal(s, "///Aa\xe2\x82\xac");
	free(s);
	s = fsb_percent_decode("");
	assert_non_null(s);
	assert_string_equal(s, "");
	free(s);
	assert_null(fsb_percent_decode("%00"));
	assert_null(fsb_percent_decode("%0"));
}

static void add_path_uses_a_string_for_utf8(void **state)
{
	cJSON *r = cJSON_CreateObject();

	(void)state;
	fsb_json_add_path(r, "path", "/w/caf\xc3\xa9 x", false);
	assert_string_equal(cJSON_GetObjectItem(r, "path")->valuestring,
			    "/w/caf\xc3\xa9 x");
	assert_null(cJSON_GetObjectItem(r, "pathBytes"));
	cJSON_Delete(r);
}

static void add_path_encodes_non_utf8_and_bytes_requests(void **state)
{
	cJSON *r = cJSON_CreateObject();

	(void)state;
	fsb_json_add_path(r, "normalisedPath", "/a b/%\xff-._~Z9", false);
	assert_null(cJSON_GetObjectItem(r, "normalisedPath"));
	assert_string_equal(
		cJSON_GetObjectItem(r, "normalisedPathBytes")->valuestring,
		"/a%20b/%25%FF-._~Z9");
	fsb_json_add_path(r, "to", "/ok", true);
	assert_null(cJSON_GetObjectItem(r, "to"));
	assert_string_equal(cJSON_GetObjectItem(r, "toBytes")->valuestring,
			    "/ok");
	fsb_json_add_path(r, "from", "/\xc3\xa9", true);
	assert_string_equal(cJSON_GetObjectItem(r, "fromBytes")->valuestring,
			    "/%C3%A9");
	cJSON_Delete(r);
}

static void percent_encoding_round_trips_every_byte(void **state)
{
	char path[257], *dec;
	cJSON *r = cJSON_CreateObject();

	(void)state;
	path[0] = '/';
	for (int i = 1; i < 256; i++)
		path[i] = (char)i;
	path[256] = '\0';
	assert_false(fsb_utf8_valid(path, 256));
	fsb_json_add_path(r, "path", path, false);
	dec = fsb_percent_decode(cJSON_GetObjectItem(r, "pathBytes")->valuestring);
	assert_non_null(dec);
	assert_memory_equal(dec, path, 257);
	free(dec);
	cJSON_Delete(r);
}

static void bytes_reply_parses_back_to_the_same_bytes(void **state)
{
	const char *name = "/w/\xff\xfe\x01\t\"\\%.txt";
	cJSON *r = cJSON_CreateObject();
	struct fsb_hostop_req req;
	const char *why;
	char *line;

	(void)state;
	cJSON_AddStringToObject(r, "command", "HostFileOperation");
	cJSON_AddStringToObject(r, "operation", "touch");
	fsb_json_add_path(r, "path", name, false);
	line = cJSON_PrintUnformatted(r);
	assert_int_equal(precheck(line), 0);
	assert_int_equal(parse_req(line, &req, &why), 0);
	assert_string_equal(req.path, name);
	assert_true(req.path_bytes);
	fsb_hostop_free(&req);
	free(line);
	cJSON_Delete(r);
}

static void utf8_valid_judges_len_bytes(void **state)
{
	(void)state;
	assert_true(fsb_utf8_valid("", 0));
	assert_true(fsb_utf8_valid("/a\xc3\xa9", 4));
	assert_false(fsb_utf8_valid("/a\xc3\xa9", 3));
	assert_false(fsb_utf8_valid("a\0b", 3));
	assert_false(fsb_utf8_valid("\xed\xa0\x80", 3));
	assert_false(fsb_utf8_valid("\xc0\xaf", 2));
	assert_false(fsb_utf8_valid("\xf4\x90\x80\x80", 4));
	assert_true(fsb_utf8_valid("\xf4\x8f\xbf\xbf", 4));
}

static void json_print_replaces_each_invalid_byte_with_u_fffd(void **state)
{
	cJSON *o = cJSON_CreateObject();
	char *s;

	(void)state;
	/* A lone Latin-1 byte, an overlong '/', a surrogate, a cut sequence;
	 * valid é and U+10FFFF kept as they are. */
	cJSON_AddStringToObject(o, "reason", "caf\xe9 \xc0\xaf \xed\xa0\x80 \xe2\x82 \xc3\xa9\xf4\x8f\xbf\xbf");
	s = fsb_json_print(o, false);
	assert_non_null(s);
	assert_string_equal(s, "{\"reason\":\"caf\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd "
			       "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd "
			       "\xc3\xa9\xf4\x8f\xbf\xbf\"}");
	assert_true(fsb_utf8_valid(s, strlen(s)));
	free(s);
	/* Valid text comes back as cJSON printed it. */
	cJSON_ReplaceItemInObject(o, "reason", cJSON_CreateString("plain \xc3\xa9"));
	s = fsb_json_print(o, true);
	assert_string_equal(s, "{\n\t\"reason\":\t\"plain \xc3\xa9\"\n}");
	free(s);
	cJSON_Delete(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(precheck_accepts_plain_and_multibyte_utf8),
		cmocka_unit_test(precheck_refuses_invalid_utf8),
		cmocka_unit_test(precheck_refuses_raw_nul),
		cmocka_unit_test(precheck_refuses_u0000_escape),
		cmocka_unit_test(precheck_accepts_escaped_backslash_before_u0000_text),
		cmocka_unit_test(precheck_accepts_paired_surrogate_escapes),
		cmocka_unit_test(precheck_refuses_unpaired_surrogate_escapes),
		cmocka_unit_test(precheck_refuses_malformed_escapes),
		cmocka_unit_test(parse_object_accepts_object_with_trailing_space),
		cmocka_unit_test(parse_object_reads_only_len_bytes),
		cmocka_unit_test(parse_object_refuses_non_objects_and_bad_json),
		cmocka_unit_test(parse_object_refuses_truncated_request),
		cmocka_unit_test(parse_object_runs_the_precheck),
		cmocka_unit_test(delete_with_defaults_parses),
		cmocka_unit_test(delete_with_every_option_parses),
		cmocka_unit_test(id_of_any_type_is_copied),
		cmocka_unit_test(two_path_operations_parse),
		cmocka_unit_test(mode_as_number_or_octal_string_parses),
		cmocka_unit_test(bad_modes_are_refused),
		cmocka_unit_test(touch_parses),
		cmocka_unit_test(options_of_other_operations_are_ignored),
		cmocka_unit_test(command_must_be_host_file_operation),
		cmocka_unit_test(unknown_or_missing_operation_is_refused),
		cmocka_unit_test(missing_path_fields_are_refused),
		cmocka_unit_test(bad_paths_are_refused),
		cmocka_unit_test(path_length_limit_is_path_max_minus_one),
		cmocka_unit_test(oversized_line_is_refused_not_overrun),
		cmocka_unit_test(deep_nesting_is_refused_not_overflowed),
		cmocka_unit_test(wrong_option_types_name_the_field),
		cmocka_unit_test(duplicate_fields_are_refused),
		cmocka_unit_test(failure_leaves_the_struct_zeroed),
		cmocka_unit_test(free_leaves_the_struct_zeroed),
		cmocka_unit_test(hostop_names_match_the_protocol),
		cmocka_unit_test(path_bytes_decode_non_utf8_names),
		cmocka_unit_test(path_bytes_with_nul_or_bad_escape_are_refused),
		cmocka_unit_test(path_and_path_bytes_together_are_refused),
		cmocka_unit_test(percent_decode_handles_both_hex_cases),
		cmocka_unit_test(add_path_uses_a_string_for_utf8),
		cmocka_unit_test(add_path_encodes_non_utf8_and_bytes_requests),
		cmocka_unit_test(percent_encoding_round_trips_every_byte),
		cmocka_unit_test(bytes_reply_parses_back_to_the_same_bytes),
		cmocka_unit_test(utf8_valid_judges_len_bytes),
		cmocka_unit_test(json_print_replaces_each_invalid_byte_with_u_fffd),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
