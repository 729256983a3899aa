/*
 * test_audit.c — the audit log's hash chain: what fsb_audit_write puts on a
 * line, reopening (also after a torn write), and what fsb_audit_verify finds
 * when lines are edited, removed, reordered or cut off; and a record
 * written field by field (core/audit_line.c), which reads back as the
 * values it was given, the same as the tree fsb_json_print() made of the
 * same fields before, and chains like any other line.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "unit.h"
#include "audit.h"
#include "audit_line.h"
#include "proto_json.h"

#define ZEROS "0000000000000000000000000000000000000000000000000000000000000000"

struct fixture {
	char dir[64];
	char log[96];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (f == NULL)
		return -1;
	strcpy(f->dir, "/tmp/fsb-audit-XXXXXX");
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
	char p[128];

	unlink(f->log);
	snprintf(p, sizeof(p), "%s/link.jsonl", f->dir);
	unlink(p);
	rmdir(f->dir);
	free(f);
	return 0;
}

/* The test's own SHA-256, straight from EVP, to check the core against. */
static void ref_sha256(const void *data, size_t len, char out[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	assert_int_equal(EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL), 1);
	assert_int_equal(mdlen, 32);
	for (unsigned int i = 0; i < mdlen; i++)
		sprintf(out + 2 * i, "%02x", md[i]);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "re");
	char *buf;
	long n;

	assert_non_null(fp);
	assert_int_equal(fseek(fp, 0, SEEK_END), 0);
	n = ftell(fp);
	assert_true(n >= 0);
	rewind(fp);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, fp), (size_t)n);
	buf[n] = '\0';
	fclose(fp);
	*len = (size_t)n;
	return buf;
}

/* Split a log into its lines (newlines dropped); returns the count. */
static int split_lines(char *buf, char **lines, int max)
{
	int n = 0;
	char *p = buf, *nl;

	while (*p != '\0' && (nl = strchr(p, '\n')) != NULL) {
		assert_true(n < max);
		*nl = '\0';
		lines[n++] = p;
		p = nl + 1;
	}
	return n;
}

/* Lines joined back with newlines, in the order given. */
static void spit_lines(const char *path, char **lines, int n)
{
	FILE *fp = fopen(path, "we");

	assert_non_null(fp);
	for (int i = 0; i < n; i++)
		fprintf(fp, "%s\n", lines[i]);
	assert_int_equal(fclose(fp), 0);
}

static void write_records(const char *path, int first, int count)
{
	struct fsb_audit *a;

	assert_int_equal(fsb_audit_open(path, &a), 0);
	for (int i = first; i < first + count; i++) {
		cJSON *rec = cJSON_CreateObject();

		cJSON_AddStringToObject(rec, "phase", "ipc-host-op");
		cJSON_AddStringToObject(rec, "op", "write");
		cJSON_AddNumberToObject(rec, "seq", i);
		assert_int_equal(fsb_audit_write(a, rec), 0);
		cJSON_Delete(rec);
	}
	fsb_audit_close(a);
}

/* Run verify and hand back its return value and report. */
static int verify(const char *path, const char *head, char **report)
{
	size_t len;
	FILE *m = open_memstream(report, &len);
	int rc;

	assert_non_null(m);
	rc = fsb_audit_verify(path, head, m);
	assert_int_equal(fclose(m), 0);
	return rc;
}

static void expect_intact(const char *path, const char *head)
{
	char *report = NULL;

	assert_int_equal(verify(path, head, &report), 0);
	assert_string_equal(report, "");
	free(report);
}

static void expect_broken(const char *path, const char *head, const char *want)
{
	char *report = NULL;

	assert_int_equal(verify(path, head, &report), 1);
	assert_string_equal(report, want);
	free(report);
}

static void test_sha256_known_vectors(void **state)
{
	char out[FSB_SHA256_HEX_LEN + 1];

	(void)state;
	fsb_sha256_hex("abc", 3, out);
	assert_string_equal(out, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	fsb_sha256_hex("", 0, out);
	assert_string_equal(out, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

static void test_lines_chain_and_fields(void **state)
{
	struct fixture *f = *state;
	char *buf, *lines[16], want[65];
	struct stat st;
	size_t len;
	int n;

	write_records(f->log, 1, 5);
	assert_int_equal(stat(f->log, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);

	buf = slurp(f->log, &len);
	assert_true(len > 0 && buf[len - 1] == '\n');
	n = split_lines(buf, lines, 16);
	assert_int_equal(n, 5);
	strcpy(want, ZEROS);
	for (int i = 0; i < n; i++) {
		cJSON *obj = cJSON_Parse(lines[i]);
		cJSON *prev, *time, *last;
		const char *t;

		assert_non_null(obj);
		assert_int_equal(cJSON_GetObjectItemCaseSensitive(obj, "seq")->valueint, i + 1);
		prev = cJSON_GetObjectItemCaseSensitive(obj, "prev");
		assert_true(cJSON_IsString(prev));
		assert_string_equal(prev->valuestring, want);
		/* prev is the last key, time comes before it. */
		for (last = obj->child; last->next != NULL; last = last->next)
			;
		assert_ptr_equal(last, prev);
		time = cJSON_GetObjectItemCaseSensitive(obj, "time");
		assert_true(cJSON_IsString(time));
		t = time->valuestring;
		/* 2024-05-01T12:34:56.789Z */
		assert_int_equal(strlen(t), 24);
		for (int k = 0; k < 24; k++) {
			if (k == 4 || k == 7)
				assert_int_equal(t[k], '-');
			else if (k == 10)
				assert_int_equal(t[k], 'T');
			else if (k == 13 || k == 16)
				assert_int_equal(t[k], ':');
			else if (k == 19)
				assert_int_equal(t[k], '.');
			else if (k == 23)
				assert_int_equal(t[k], 'Z');
			else
				assert_true(isdigit((unsigned char)t[k]));
		}
		/* Compact: no whitespace between tokens. */
		assert_null(strstr(lines[i], ", "));
		assert_null(strstr(lines[i], "\": "));
		cJSON_Delete(obj);
		ref_sha256(lines[i], strlen(lines[i]), want);
	}
	free(buf);
	expect_intact(f->log, NULL);
}

static void test_head_is_hash_of_last_line(void **state)
{
	struct fixture *f = *state;
	char *buf, *lines[8], want[65];
	struct fsb_audit *a;
	cJSON *rec;
	size_t len;

	assert_int_equal(fsb_audit_open(f->log, &a), 0);
	assert_string_equal(fsb_audit_head(a), ZEROS);
	rec = cJSON_CreateObject();
	cJSON_AddStringToObject(rec, "op", "read");
	assert_int_equal(fsb_audit_write(a, rec), 0);
	assert_int_equal(fsb_audit_sync(a), 0);

	buf = slurp(f->log, &len);
	assert_int_equal(split_lines(buf, lines, 8), 1);
	ref_sha256(lines[0], strlen(lines[0]), want);
	assert_string_equal(fsb_audit_head(a), want);
	free(buf);

	/* Writing the same object again replaces its prev, never adds one. */
	assert_int_equal(fsb_audit_write(a, rec), 0);
	buf = slurp(f->log, &len);
	assert_int_equal(split_lines(buf, lines, 8), 2);
	assert_non_null(strstr(lines[1], want));
	assert_ptr_equal(strstr(lines[1], "\"prev\""), strrchr(lines[1], ',') + 1);
	free(buf);
	cJSON_Delete(rec);
	fsb_audit_close(a);
	expect_intact(f->log, NULL);
}

static void test_time_kept_and_prev_forced(void **state)
{
	struct fixture *f = *state;
	struct fsb_audit *a;
	char *buf;
	size_t len;
	cJSON *rec;

	assert_int_equal(fsb_audit_open(f->log, &a), 0);
	rec = cJSON_Parse("{\"time\":\"2000-01-01T00:00:00.000Z\",\"prev\":\"forged\",\"op\":\"x\"}");
	assert_non_null(rec);
	assert_int_equal(fsb_audit_write(a, rec), 0);
	cJSON_Delete(rec);
	fsb_audit_close(a);

	buf = slurp(f->log, &len);
	assert_string_equal(buf, "{\"time\":\"2000-01-01T00:00:00.000Z\",\"op\":\"x\",\"prev\":\""
			    ZEROS "\"}\n");
	free(buf);
}

static void test_write_refuses_bad_records(void **state)
{
	struct fixture *f = *state;
	struct fsb_audit *a;
	char head[65];
	cJSON *rec;

	write_records(f->log, 1, 1);
	assert_int_equal(fsb_audit_open(f->log, &a), 0);
	rec = cJSON_CreateArray();
	assert_int_equal(fsb_audit_write(a, rec), -EINVAL);
	cJSON_Delete(rec);
	strcpy(head, fsb_audit_head(a));

	/* A raw item with a newline would split one record into two lines. */
	rec = cJSON_CreateObject();
	cJSON_AddRawToObject(rec, "x", "{\"prev\":\"0\"}\n{\"a\":1}");
	assert_int_equal(fsb_audit_write(a, rec), -EINVAL);
	cJSON_Delete(rec);
	assert_string_equal(fsb_audit_head(a), head);
	fsb_audit_close(a);
	expect_intact(f->log, NULL);
}

static void test_edited_middle_line(void **state)
{
	struct fixture *f = *state;
	char *buf, *lines[8], *p;
	size_t len;

	write_records(f->log, 1, 5);
	buf = slurp(f->log, &len);
	assert_int_equal(split_lines(buf, lines, 8), 5);
	p = strstr(lines[2], "\"write\"");
	assert_non_null(p);
	p[1] = 'W';	/* one byte of line 3 */
	spit_lines(f->log, lines, 5);
	free(buf);

	expect_broken(f->log, NULL,
		      "line 4: prev does not match line 3 (a line was edited, removed or reordered)\n");
}

static void test_removed_line(void **state)
{
	struct fixture *f = *state;
	char *buf, *lines[8];
	size_t len;

	write_records(f->log, 1, 5);
	buf = slurp(f->log, &len);
	assert_int_equal(split_lines(buf, lines, 8), 5);
	lines[2] = lines[3];
	lines[3] = lines[4];
	spit_lines(f->log, lines, 4);
	free(buf);

	expect_broken(f->log, NULL,
		      "line 3: prev does not match line 2 (a line was edited, removed or reordered)\n");
}

static void test_removed_first_line(void **state)
{
	struct fixture *f = *state;
	char *buf, *lines[8];
	size_t len;

	write_records(f->log, 1, 3);
	buf = slurp(f->log, &len);
	assert_int_equal(split_lines(buf, lines, 8), 3);
	spit_lines(f->log, lines + 1, 2);
	free(buf);

	expect_broken(f->log, NULL,
		      "line 1: prev is not 64 zeros (the first line was edited or lines "
		      "before it were removed)\n");
}

static void test_swapped_lines(void **state)
{
	struct fixture *f = *state;
	char *buf, *lines[8], *t;
	size_t len;

	write_records(f->log, 1, 5);
	buf = slurp(f->log, &len);
	assert_int_equal(split_lines(buf, lines, 8), 5);
	t = lines[1];
	lines[1] = lines[2];
	lines[2] = t;
	spit_lines(f->log, lines, 5);
	free(buf);

	expect_broken(f->log, NULL,
		      "line 2: prev does not match line 1 (a line was edited, removed or reordered)\n"
		      "line 3: prev does not match line 2 (a line was edited, removed or reordered)\n"
		      "line 4: prev does not match line 3 (a line was edited, removed or reordered)\n");
}

static void test_line_not_json(void **state)
{
	struct fixture *f = *state;
	char *buf, *lines[8];
	size_t len;

	write_records(f->log, 1, 3);
	buf = slurp(f->log, &len);
	assert_int_equal(split_lines(buf, lines, 8), 3);
	lines[1] = "[\"prev\"]";
	spit_lines(f->log, lines, 3);
	free(buf);

	expect_broken(f->log, NULL,
		      "line 2: not a JSON object with a string field 'prev'\n"
		      "line 3: prev does not match line 2 (a line was edited, removed or reordered)\n");

	/* A second object glued after the first is not a line of its own. */
	buf = slurp(f->log, &len);
	assert_int_equal(split_lines(buf, lines, 8), 3);
	lines[0] = "{\"prev\":\"" ZEROS "\"}{\"x\":1}";
	spit_lines(f->log, lines, 1);
	free(buf);
	expect_broken(f->log, NULL, "line 1: not a JSON object with a string field 'prev'\n");
}

static void test_reopen_continues_chain(void **state)
{
	struct fixture *f = *state;
	char *buf, *lines[8], want[65], head[65];
	struct fsb_audit *a;
	size_t len;

	write_records(f->log, 1, 3);
	assert_int_equal(fsb_audit_open(f->log, &a), 0);
	buf = slurp(f->log, &len);
	assert_int_equal(split_lines(buf, lines, 8), 3);
	ref_sha256(lines[2], strlen(lines[2]), want);
	assert_string_equal(fsb_audit_head(a), want);
	strcpy(head, want);
	fsb_audit_close(a);
	free(buf);

	write_records(f->log, 4, 2);
	buf = slurp(f->log, &len);
	assert_int_equal(split_lines(buf, lines, 8), 5);
	assert_non_null(strstr(lines[3], head));
	free(buf);
	expect_intact(f->log, NULL);
}

static void write_one(struct fsb_audit *a, int seq)
{
	cJSON *rec = cJSON_CreateObject();

	cJSON_AddStringToObject(rec, "phase", "ipc-host-op");
	cJSON_AddNumberToObject(rec, "seq", seq);
	assert_int_equal(fsb_audit_write(a, rec), 0);
	cJSON_Delete(rec);
}

/*
 * Two writers on one log at once (the cores of two runs of one session),
 * their lines interleaved: one chain, each line naming the line before it
 * whoever wrote that, and each writer's head its own last line.
 */
static void test_two_writers_keep_one_chain(void **state)
{
	struct fixture *f = *state;
	struct fsb_audit *a, *b;
	char *buf, *lines[16], want[65];
	size_t len;

	assert_int_equal(fsb_audit_open(f->log, &a), 0);
	assert_int_equal(fsb_audit_open(f->log, &b), 0);
	write_one(a, 1);
	write_one(b, 2);
	write_one(b, 3);
	write_one(a, 4);
	write_one(b, 5);
	buf = slurp(f->log, &len);
	assert_int_equal(split_lines(buf, lines, 16), 5);
	ref_sha256(lines[3], strlen(lines[3]), want);
	assert_string_equal(fsb_audit_head(a), want);
	ref_sha256(lines[4], strlen(lines[4]), want);
	assert_string_equal(fsb_audit_head(b), want);
	free(buf);
	fsb_audit_close(a);
	fsb_audit_close(b);
	expect_intact(f->log, NULL);
}

static void test_reopen_long_line(void **state)
{
	struct fixture *f = *state;
	struct fsb_audit *a;
	char head[65], *big;
	cJSON *rec;

	/* A last line longer than the chunks the tail is read in. */
	big = malloc(300001);
	assert_non_null(big);
	memset(big, 'x', 300000);
	big[300000] = '\0';
	write_records(f->log, 1, 2);
	assert_int_equal(fsb_audit_open(f->log, &a), 0);
	rec = cJSON_CreateObject();
	cJSON_AddStringToObject(rec, "path", big);
	assert_int_equal(fsb_audit_write(a, rec), 0);
	strcpy(head, fsb_audit_head(a));
	cJSON_Delete(rec);
	fsb_audit_close(a);
	free(big);

	assert_int_equal(fsb_audit_open(f->log, &a), 0);
	assert_string_equal(fsb_audit_head(a), head);
	fsb_audit_close(a);
	write_records(f->log, 4, 1);
	expect_intact(f->log, head);
}

static void test_partial_last_line_on_reopen(void **state)
{
	struct fixture *f = *state;
	char *buf, *lines[8], want[65];
	struct fsb_audit *a;
	size_t len;
	int fd;

	write_records(f->log, 1, 3);
	/* A crash in the middle of the fourth record. */
	fd = open(f->log, O_WRONLY | O_APPEND | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "{\"op\":\"wri", 10), 10);
	close(fd);

	expect_broken(f->log, NULL,
		      "line 4: not a JSON object with a string field 'prev'\n"
		      "line 4: not ended by a newline (a write was cut short)\n");

	assert_int_equal(fsb_audit_open(f->log, &a), 0);
	/* The partial line was ended, and the chain goes through it. */
	ref_sha256("{\"op\":\"wri", 10, want);
	assert_string_equal(fsb_audit_head(a), want);
	fsb_audit_close(a);
	write_records(f->log, 5, 2);

	buf = slurp(f->log, &len);
	assert_int_equal(split_lines(buf, lines, 8), 6);
	assert_string_equal(lines[3], "{\"op\":\"wri");
	assert_non_null(strstr(lines[4], "\"seq\":5,"));
	free(buf);
	expect_broken(f->log, NULL, "line 4: not a JSON object with a string field 'prev'\n");
}

static void test_expect_head(void **state)
{
	struct fixture *f = *state;
	char *buf, *lines[8], sealed[65];
	struct fsb_audit *a;
	size_t len;

	write_records(f->log, 1, 0);	/* an empty log */
	expect_intact(f->log, ZEROS);
	expect_broken(f->log, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
		      "the head hash recorded by a sealed cycle is not in the log "
		      "(the log was truncated or rewritten)\n");

	write_records(f->log, 1, 3);
	assert_int_equal(fsb_audit_open(f->log, &a), 0);
	strcpy(sealed, fsb_audit_head(a));	/* a cycle seals here */
	fsb_audit_close(a);
	write_records(f->log, 4, 2);
	expect_intact(f->log, sealed);

	/* Cut the tail back to before the sealed head: the chain left is
	 * sound, only the head shows what is gone. */
	buf = slurp(f->log, &len);
	assert_int_equal(split_lines(buf, lines, 8), 5);
	spit_lines(f->log, lines, 2);
	free(buf);
	expect_intact(f->log, NULL);
	expect_broken(f->log, sealed,
		      "the head hash recorded by a sealed cycle is not in the log "
		      "(the log was truncated or rewritten)\n");
}

static void test_short_write_keeps_lines_apart(void **state)
{
	struct fixture *f = *state;
	char *buf, *lines[8], head[65], torn[65];
	struct rlimit old, lim;
	struct fsb_audit *a;
	struct stat st;
	size_t len;
	cJSON *rec;

	write_records(f->log, 1, 2);
	assert_int_equal(fsb_audit_open(f->log, &a), 0);
	strcpy(head, fsb_audit_head(a));
	rec = cJSON_CreateObject();
	cJSON_AddStringToObject(rec, "op", "write");

	/* A file size limit makes the kernel cut the write short. */
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	assert_int_equal(stat(f->log, &st), 0);
	lim = old;
	lim.rlim_cur = (rlim_t)st.st_size + 10;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	assert_int_equal(fsb_audit_write(a, rec), -EIO);
	assert_string_equal(fsb_audit_head(a), head);

	/* Only the newline that ends the torn line fits next time. */
	lim.rlim_cur = (rlim_t)st.st_size + 11;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	assert_int_equal(fsb_audit_write(a, rec), -EIO);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_DFL);

	buf = slurp(f->log, &len);
	assert_int_equal(len, (size_t)st.st_size + 11);
	assert_int_equal(split_lines(buf, lines, 8), 3);
	assert_int_equal(strlen(lines[2]), 10);
	ref_sha256(lines[2], 10, torn);
	assert_string_equal(fsb_audit_head(a), torn);
	free(buf);

	assert_int_equal(fsb_audit_write(a, rec), 0);
	cJSON_Delete(rec);
	fsb_audit_close(a);
	expect_broken(f->log, NULL, "line 3: not a JSON object with a string field 'prev'\n");
}

static void test_short_write_then_next_record(void **state)
{
	struct fixture *f = *state;
	char *buf, *lines[8];
	struct rlimit old, lim;
	struct fsb_audit *a;
	struct stat st;
	size_t len;
	cJSON *rec;

	write_records(f->log, 1, 1);
	assert_int_equal(fsb_audit_open(f->log, &a), 0);
	rec = cJSON_CreateObject();
	cJSON_AddStringToObject(rec, "op", "write");

	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	assert_int_equal(stat(f->log, &st), 0);
	lim = old;
	lim.rlim_cur = (rlim_t)st.st_size + 5;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	assert_int_equal(fsb_audit_write(a, rec), -EIO);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_DFL);

	/* The next record starts on a line of its own. */
	assert_int_equal(fsb_audit_write(a, rec), 0);
	assert_int_equal(fsb_audit_write(a, rec), 0);
	cJSON_Delete(rec);
	fsb_audit_close(a);

	buf = slurp(f->log, &len);
	assert_int_equal(split_lines(buf, lines, 8), 4);
	assert_string_equal(lines[1], "{\"op\"");
	free(buf);
	expect_broken(f->log, NULL, "line 2: not a JSON object with a string field 'prev'\n");
}

static void test_open_refuses_symlink(void **state)
{
	struct fixture *f = *state;
	struct fsb_audit *a;
	char link[128];

	snprintf(link, sizeof(link), "%s/link.jsonl", f->dir);
	assert_int_equal(symlink(f->log, link), 0);
	assert_int_equal(fsb_audit_open(link, &a), -ELOOP);
	assert_int_equal(fsb_audit_open(f->dir, &a), -EISDIR);
}

static void test_verify_missing_file(void **state)
{
	struct fixture *f = *state;
	char *report = NULL;

	assert_int_equal(verify(f->log, NULL, &report), -ENOENT);
	free(report);
}

/* ---- records written field by field ------------------------------------ */

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
		cmocka_unit_test(test_sha256_known_vectors),
		T(test_lines_chain_and_fields),
		T(test_head_is_hash_of_last_line),
		T(test_time_kept_and_prev_forced),
		T(test_write_refuses_bad_records),
		T(test_edited_middle_line),
		T(test_removed_line),
		T(test_removed_first_line),
		T(test_swapped_lines),
		T(test_line_not_json),
		T(test_reopen_continues_chain),
		T(test_reopen_long_line),
		T(test_two_writers_keep_one_chain),
		T(test_partial_last_line_on_reopen),
		T(test_expect_head),
		T(test_short_write_keeps_lines_apart),
		T(test_short_write_then_next_record),
		T(test_open_refuses_symlink),
		T(test_verify_missing_file),
		cmocka_unit_test(test_values_read_back_as_given),
		cmocka_unit_test(test_bytes_that_are_not_utf8),
		cmocka_unit_test(test_a_line_reads_as_the_tree_of_the_same_fields),
		cmocka_unit_test(test_a_line_outgrows_its_first_buffer),
		T(test_lines_and_trees_chain_together),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
