/*
 * audit.c — the hash-chained JSON-lines audit log and its verifier (see
 * audit.h). Every line names the SHA-256 of the line before it, so an edited,
 * removed or reordered line breaks the chain at the next line.
 */
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "audit.h"
#include "audit_line.h"
#include "proto_json.h"

#define AUDIT_CHUNK 65536

static const char zero_hash[FSB_SHA256_HEX_LEN + 1] =
	"0000000000000000000000000000000000000000000000000000000000000000";

struct fsb_audit {
	int fd;
	/* Hash of the last complete line: the next record's `prev`. */
	char head[FSB_SHA256_HEX_LEN + 1];
	/* A short write left part of a line at the end of the file: the next
	 * record first ends it with a newline and chains from its hash. */
	bool torn;
	char torn_hash[FSB_SHA256_HEX_LEN + 1];
	/* The log's length after this writer's last append: another core of
	 * the same session appended when the file is longer. */
	off_t end;
};

static void hex_encode(const unsigned char *md, char out[FSB_SHA256_HEX_LEN + 1])
{
	static const char digits[] = "0123456789abcdef";

	for (int i = 0; i < FSB_SHA256_HEX_LEN / 2; i++) {
		out[2 * i] = digits[md[i] >> 4];
		out[2 * i + 1] = digits[md[i] & 0xf];
	}
	out[FSB_SHA256_HEX_LEN] = '\0';
}

static EVP_MD *fetched_sha256;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

static void fetch_sha256(void)
{
	fetched_sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
}

/* SHA-256 fetched once: EVP_sha256() looks it up again at every digest
 * (0.2 µs of the 0.6 a line costs). */
static const EVP_MD *sha256_md(void)
{
	pthread_once(&sha256_once, fetch_sha256);
	return fetched_sha256 != NULL ? fetched_sha256 : EVP_sha256();
}

static int sha256_hex(const void *data, size_t len, char out[FSB_SHA256_HEX_LEN + 1])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen;

	if (!EVP_Digest(data, len, md, &mdlen, sha256_md(), NULL))
		return -ENOMEM;
	hex_encode(md, out);
	return 0;
}

void fsb_sha256_hex(const void *data, size_t len, char out[FSB_SHA256_HEX_LEN + 1])
{
	/* On failure leave a string that can never equal a real hash rather
	 * than something a chain could be made to match. */
	if (sha256_hex(data, len, out) < 0)
		out[0] = '\0';
}

static ssize_t pread_full(int fd, void *buf, size_t len, off_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, off + (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;	/* the file shrank under us */
		done += (size_t)n;
	}
	return 0;
}

static int write_full(int fd, const void *buf, size_t len, size_t *written)
{
	ssize_t n;

	do
		n = write(fd, buf, len);
	while (n < 0 && errno == EINTR);
	*written = n < 0 ? 0 : (size_t)n;
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

/*
 * Hash the last line of the first `size` bytes of the file: the bytes after
 * the last newline before `end`, where `end` drops a final newline. Only the
 * tail is read, in chunks, so a large log costs one line's worth of I/O.
 */
static int tail_hash(int fd, off_t size, char out[FSB_SHA256_HEX_LEN + 1], bool *torn)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen;
	EVP_MD_CTX *ctx = NULL;
	char *buf;
	off_t end, start = 0, pos;
	char last;
	int err;

	buf = malloc(AUDIT_CHUNK);
	if (buf == NULL)
		return -ENOMEM;

	err = pread_full(fd, &last, 1, size - 1);
	if (err)
		goto fail;
	*torn = last != '\n';
	end = *torn ? size : size - 1;

	pos = end;
	while (pos > 0) {
		size_t n = pos < AUDIT_CHUNK ? (size_t)pos : AUDIT_CHUNK;
		char *nl;

		pos -= (off_t)n;
		err = pread_full(fd, buf, n, pos);
		if (err)
			goto fail;
		nl = memrchr(buf, '\n', n);
		if (nl != NULL) {
			start = pos + (nl - buf) + 1;
			break;
		}
	}

	ctx = EVP_MD_CTX_new();
	if (ctx == NULL || !EVP_DigestInit_ex(ctx, sha256_md(), NULL)) {
		err = -ENOMEM;
		goto fail;
	}
	for (pos = start; pos < end;) {
		size_t n = end - pos < AUDIT_CHUNK ? (size_t)(end - pos) : AUDIT_CHUNK;

		err = pread_full(fd, buf, n, pos);
		if (err)
			goto fail;
		if (!EVP_DigestUpdate(ctx, buf, n)) {
			err = -ENOMEM;
			goto fail;
		}
		pos += (off_t)n;
	}
	if (!EVP_DigestFinal_ex(ctx, md, &mdlen)) {
		err = -ENOMEM;
		goto fail;
	}
	hex_encode(md, out);
	err = 0;

fail:
	EVP_MD_CTX_free(ctx);
	free(buf);
	return err;
}

static int lock_log(int fd, int how)
{
	while (flock(fd, how) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}

/*
 * Under the log's flock: the lines another writer appended since ours (or
 * every line, at open) move the head to the file's last line. A partial
 * last line (a crash mid-write) is ended here, so the next record cannot
 * glue onto it: the chain then continues from the partial line, which
 * stays covered by the hashes, and verify reports it as the one broken line.
 */
static int catch_up(struct fsb_audit *a)
{
	bool torn = false;
	size_t written;
	off_t size;
	int err;

	/* The length by lseek, not fstat: a stat asks for the file's times,
	 * and since Linux 6.13 (multigrain timestamps) the next write then
	 * stamps the inode anew, which ext4 journals: 1.6 µs a line. */
	if ((size = lseek(a->fd, 0, SEEK_END)) < 0)
		return -errno;
	if (size == a->end)
		return 0;
	a->torn = false;
	if (size == 0) {
		memcpy(a->head, zero_hash, sizeof(a->head));
		a->end = 0;
		return 0;
	}
	err = tail_hash(a->fd, size, a->head, &torn);
	if (err)
		return err;
	a->end = size;
	if (torn) {
		err = write_full(a->fd, "\n", 1, &written);
		a->end += (off_t)written;
	}
	return err;
}

int fsb_audit_open(const char *path, struct fsb_audit **out)
{
	struct fsb_audit *a;
	struct stat st;
	int err;

	a = calloc(1, sizeof(*a));
	if (a == NULL)
		return -ENOMEM;
	memcpy(a->head, zero_hash, sizeof(a->head));

	/* O_NOFOLLOW: a symlink planted where the log belongs must not
	 * redirect the appends into some other file. */
	a->fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (a->fd < 0) {
		err = -errno;
		goto fail;
	}
	if (fstat(a->fd, &st) < 0) {
		err = -errno;
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		err = -EINVAL;
		goto fail;
	}
	/* Many writers per log (the cores of one session's runs): each
	 * append is one flocked step that first catches up with the others'
	 * lines, so the chain stays one chain. */
	if ((err = lock_log(a->fd, LOCK_EX)) < 0)
		goto fail;
	err = catch_up(a);
	flock(a->fd, LOCK_UN);
	if (err)
		goto fail;

	*out = a;
	return 0;

fail:
	if (a->fd >= 0)
		close(a->fd);
	free(a);
	return err;
}

/* RFC 3339 UTC with milliseconds; the date and time of a second are
 * formatted once per thread. 0 or -errno. */
static int format_time(char out[32])
{
	static __thread time_t last_sec = -1;
	static __thread char last[24];
	struct timespec ts;
	struct tm tm;

	if (clock_gettime(CLOCK_REALTIME, &ts) < 0)
		return -errno;
	if (ts.tv_sec != last_sec) {
		if (gmtime_r(&ts.tv_sec, &tm) == NULL ||
		    strftime(last, sizeof(last), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
			return -EOVERFLOW;
		last_sec = ts.tv_sec;
	}
	snprintf(out, 32, "%s.%03ldZ", last, ts.tv_nsec / 1000000);
	return 0;
}

/*
 * Under the log's lock: end the line with "prev" (the chain's head) and
 * its brace, hash it, and write it with one write(2) on the O_APPEND fd:
 * the record lands whole at the end or, on a short write, leaves a
 * partial line that the next record ends before it starts.
 */
static int append_locked(struct fsb_audit *a, struct fsb_audit_line *l)
{
	char hash[FSB_SHA256_HEX_LEN + 1];
	size_t off, written;
	int err;

	if ((err = catch_up(a)) < 0)
		return err;
	fsb_audit_line_str(l, "prev", a->torn ? a->torn_hash : a->head);
	fsb_audit_line_put(l, "}", 1);
	if (l->failed)
		return -ENOMEM;
	/* One record is one line: a raw item carrying a newline would let a
	 * record forge a line of its own. */
	if (memchr(l->buf, '\n', l->len) != NULL)
		return -EINVAL;
	if ((err = sha256_hex(l->buf, l->len, hash)) < 0)
		return err;
	off = a->torn ? 1 : 0;
	if (off == 1)
		fsb_audit_line_prepend(l, "\n", 1);
	fsb_audit_line_put(l, "\n", 1);
	if (l->failed)
		return -ENOMEM;

	err = write_full(a->fd, l->buf, l->len, &written);
	a->end += (off_t)written;
	if (err) {
		if (off == 1 && written >= 1) {
			/* The newline went out: the earlier partial line is now
			 * a complete line, and the chain goes through it. */
			memcpy(a->head, a->torn_hash, sizeof(a->head));
			a->torn = false;
		}
		if (written > off) {
			fsb_sha256_hex(l->buf + off, written - off, a->torn_hash);
			a->torn = true;
		}
		return err;
	}
	memcpy(a->head, hash, sizeof(a->head));
	a->torn = false;
	return 0;
}

static int append(struct fsb_audit *a, struct fsb_audit_line *l)
{
	int err;

	if ((err = lock_log(a->fd, LOCK_EX)) < 0)
		return err;
	err = append_locked(a, l);
	flock(a->fd, LOCK_UN);
	return err;
}

int fsb_audit_append(struct fsb_audit *a, struct fsb_audit_line *l)
{
	char now[32];
	int err;

	if (!l->timed) {
		if ((err = format_time(now)) < 0)
			return err;
		fsb_audit_line_str(l, "time", now);
	}
	return append(a, l);
}

int fsb_audit_line_of(struct fsb_audit_line *l, cJSON *record)
{
	char *json;
	size_t jlen;

	fsb_audit_line_init(l);
	if (!cJSON_IsObject(record))
		return -EINVAL;
	/* `prev` is the core's to set, and goes last: drop any the caller
	 * put in, under that exact name. */
	while (cJSON_GetObjectItemCaseSensitive(record, "prev") != NULL)
		cJSON_DeleteItemFromObjectCaseSensitive(record, "prev");
	l->timed = cJSON_GetObjectItemCaseSensitive(record, "time") != NULL;
	json = fsb_json_print(record, false);
	if (json == NULL)
		return -ENOMEM;
	jlen = strlen(json);
	/* The members, without the object's braces. */
	fsb_audit_line_raw(l, json + 1, jlen >= 2 ? jlen - 2 : 0);
	cJSON_free(json);
	return l->failed ? -ENOMEM : 0;
}

int fsb_audit_write(struct fsb_audit *a, cJSON *record)
{
	struct fsb_audit_line l;
	int err = fsb_audit_line_of(&l, record);

	if (err == 0)
		err = fsb_audit_append(a, &l);
	fsb_audit_line_free(&l);
	return err;
}

const char *fsb_audit_head(const struct fsb_audit *a)
{
	return a->head;
}

int fsb_audit_sync(struct fsb_audit *a)
{
	if (fsync(a->fd) < 0)
		return -errno;
	return 0;
}

void fsb_audit_close(struct fsb_audit *a)
{
	if (a == NULL)
		return;
	close(a->fd);
	free(a);
}

static void say(FILE *report, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(FILE *report, const char *fmt, ...)
{
	va_list ap;

	if (report == NULL)
		return;
	va_start(ap, fmt);
	vfprintf(report, fmt, ap);
	va_end(ap);
}

/* The `prev` string of a line, or NULL when the line is not a JSON object
 * with one. The whole line must be the object: no NUL, nothing after it. */
static cJSON *parse_line(const char *line, size_t len, const char **prev)
{
	cJSON *obj, *item;

	*prev = NULL;
	if (strlen(line) != len)
		return NULL;
	obj = cJSON_ParseWithOpts(line, NULL, 1);
	if (obj == NULL)
		return NULL;
	item = cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, "prev") : NULL;
	if (!cJSON_IsString(item)) {
		cJSON_Delete(obj);
		return NULL;
	}
	*prev = item->valuestring;
	return obj;
}

int fsb_audit_verify(const char *path, const char *expect_head, FILE *report)
{
	char last[FSB_SHA256_HEX_LEN + 1], hash[FSB_SHA256_HEX_LEN + 1];
	char *line = NULL;
	size_t cap = 0;
	unsigned long lineno = 0;
	bool bad = false, found;
	ssize_t n;
	FILE *fp;
	int err;

	fp = fopen(path, "re");
	if (fp == NULL)
		return -errno;

	memcpy(last, zero_hash, sizeof(last));
	/* A cycle sealed before the first line has the empty chain's head. */
	found = expect_head == NULL || strcasecmp(expect_head, zero_hash) == 0;

	while ((n = getline(&line, &cap, fp)) >= 0) {
		bool ended = n > 0 && line[n - 1] == '\n';
		const char *prev;
		cJSON *obj;

		lineno++;
		if (ended)
			line[--n] = '\0';

		obj = parse_line(line, (size_t)n, &prev);
		if (obj == NULL) {
			say(report, "line %lu: not a JSON object with a string field 'prev'\n",
				lineno);
			bad = true;
		} else if (strcmp(prev, last) != 0) {
			if (lineno == 1)
				say(report, "line 1: prev is not 64 zeros (the first line was "
					"edited or lines before it were removed)\n");
			else
				say(report, "line %lu: prev does not match line %lu (a line was "
					"edited, removed or reordered)\n", lineno, lineno - 1);
			bad = true;
		}
		cJSON_Delete(obj);

		if (!ended) {
			say(report, "line %lu: not ended by a newline (a write was cut short)\n",
				lineno);
			bad = true;
		}

		err = sha256_hex(line, (size_t)n, hash);
		if (err)
			goto fail;
		if (!found && strcasecmp(hash, expect_head) == 0)
			found = true;
		memcpy(last, hash, sizeof(last));
	}
	if (!feof(fp)) {
		err = errno ? -errno : -EIO;
		goto fail;
	}

	if (!found) {
		say(report, "the head hash recorded by a sealed cycle is not in the log "
			"(the log was truncated or rewritten)\n");
		bad = true;
	}
	err = bad ? 1 : 0;

fail:
	free(line);
	fclose(fp);
	return err;
}
