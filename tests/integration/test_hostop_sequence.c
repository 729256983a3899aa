/*
 * test_hostop_sequence.c — a long random turn through the real core: fd
 * grants (writes and appends) and all seven host operations on a scratch
 * tree, chosen by a seeded PRNG; then one `fsbroker backup restore --last`
 * must give back the tree exactly as it was before the turn: the same
 * paths, types, modes, contents, symlink targets and mtimes.
 *
 * FSBT_SEQ_OPS sets the number of operations per seed (default 500).
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define REPLY 8192
#define MAX_PATHS 4096

/* ------------------------------------------------------------------------ */
/* xorshift64*: the same sequence for the same seed on every machine. */

static uint64_t rng;

static uint64_t next(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545F4914F6CDD1DULL;
}

static unsigned rnd(unsigned n)
{
	return (unsigned)(next() % n);
}

/* ------------------------------------------------------------------------ */
/* The current tree: relative paths and their types, refreshed by walking. */

struct node {
	char rel[PATH_MAX];
	mode_t mode;
};

static struct node nodes[MAX_PATHS];
static size_t nnodes;

static void walk(const char *root, const char *rel)
{
	char full[PATH_MAX * 2];
	struct dirent *de;
	struct stat st;
	DIR *d;

	snprintf(full, sizeof(full), "%s%s%s", root, rel[0] ? "/" : "", rel);
	if (lstat(full, &st) < 0 || nnodes == MAX_PATHS)
		return;
	snprintf(nodes[nnodes].rel, sizeof(nodes[nnodes].rel), "%s", rel);
	nodes[nnodes++].mode = st.st_mode;
	if (!S_ISDIR(st.st_mode) || (d = opendir(full)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		char sub[PATH_MAX];

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(sub, sizeof(sub), "%s%s%s", rel, rel[0] ? "/" : "", de->d_name);
		walk(root, sub);
	}
	closedir(d);
}

/* A random node of a type `want` accepts (NULL: any but the root). */
static const struct node *pick(bool (*want)(mode_t))
{
	size_t cand[MAX_PATHS], n = 0;

	for (size_t i = 1; i < nnodes; i++)
		if (want == NULL || want(nodes[i].mode))
			cand[n++] = i;
	return n ? &nodes[cand[rnd((unsigned)n)]] : NULL;
}

static bool is_dir(mode_t m)
{
	return S_ISDIR(m);
}

static bool is_file(mode_t m)
{
	return S_ISREG(m);
}

static bool is_not_dir(mode_t m)
{
	return !S_ISDIR(m);
}

static bool is_copyable_file(mode_t m)
{
	/* A FIFO as the source of a plain copy is not specified. */
	return S_ISREG(m) || S_ISLNK(m);
}

static bool is_file_or_dir(mode_t m)
{
	return S_ISREG(m) || S_ISDIR(m);
}

/* A random directory, the root included. */
static const char *pick_dir(void)
{
	size_t cand[MAX_PATHS], n = 0;

	for (size_t i = 0; i < nnodes; i++)
		if (S_ISDIR(nodes[i].mode))
			cand[n++] = i;
	return nodes[cand[rnd((unsigned)n)]].rel;
}

static unsigned name_seq;

/* A new absolute path in a random directory: "<ws>/<dir>/n<k>". */
static void new_path(const struct fsbt_core *c, char *out, size_t size)
{
	const char *d = pick_dir();

	snprintf(out, size, "%s%s%s/n%u", c->ws, d[0] ? "/" : "", d, name_seq++);
}

static void abs_path(const struct fsbt_core *c, const struct node *n, char *out, size_t size)
{
	snprintf(out, size, "%s/%s", c->ws, n->rel);
}

/* ------------------------------------------------------------------------ */
/* The scratch tree. */

static const mode_t file_modes[] = { 0644, 0600, 0640, 0755, 0700, 0444, 0664, 0751 };
static const mode_t dir_modes[] = { 0755, 0700, 0750, 0775, 0711 };

static void random_bytes(char *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (char)(' ' + rnd(95));
}

static void random_mtime(const char *path)
{
	struct timespec ts[2];

	ts[0].tv_sec = 1500000000 + (time_t)rnd(100000000);
	ts[0].tv_nsec = (long)rnd(1000000000);
	ts[1].tv_sec = 1500000000 + (time_t)rnd(100000000);
	ts[1].tv_nsec = (long)rnd(1000000000);
	assert_int_equal(utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW), 0);
}

static void build_tree(const struct fsbt_core *c)
{
	char p[PATH_MAX * 2], data[4096];

	nnodes = 0;
	walk(c->ws, "");
	for (int i = 0; i < 8; i++) {
		const char *d = pick_dir();

		snprintf(p, sizeof(p), "%s%s%s/dir%d", c->ws, d[0] ? "/" : "", d, i);
		assert_int_equal(mkdir(p, 0755), 0);
		assert_int_equal(chmod(p, dir_modes[rnd(5)]), 0);
		nnodes = 0;
		walk(c->ws, "");
	}
	for (int i = 0; i < 30; i++) {
		const char *d = pick_dir();
		size_t len = rnd(3) == 0 ? 0 : rnd(sizeof(data));
		int fd;

		snprintf(p, sizeof(p), "%s%s%s/file%d.txt", c->ws, d[0] ? "/" : "", d, i);
		random_bytes(data, len);
		fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, data, len), (ssize_t)len);
		close(fd);
		assert_int_equal(chmod(p, file_modes[rnd(8)]), 0);
		random_mtime(p);
	}
	for (int i = 0; i < 6; i++) {
		const char *d = pick_dir();
		static const char *const targets[] = { "file1.txt", "../file2.txt", "dir0",
						       "nowhere", "../../dir1/file3.txt", "." };

		snprintf(p, sizeof(p), "%s%s%s/link%d", c->ws, d[0] ? "/" : "", d, i);
		assert_int_equal(symlink(targets[i], p), 0);
		random_mtime(p);
	}
	for (int i = 0; i < 2; i++) {
		const char *d = pick_dir();

		snprintf(p, sizeof(p), "%s%s%s/fifo%d", c->ws, d[0] ? "/" : "", d, i);
		assert_int_equal(mkfifo(p, 0644), 0);
		random_mtime(p);
	}
	nnodes = 0;
	walk(c->ws, "");
}

/* ------------------------------------------------------------------------ */
/* Operations and their counts. */

enum kind { K_WRITE, K_APPEND, K_RENAME, K_DELETE, K_COPY, K_CHMOD, K_MKDIR, K_LINK,
	    K_SYMLINK, K_TOUCH, K_N };

static const char *const kind_name[K_N] = { "write", "append", "rename", "delete", "copy",
					    "chmod", "mkdir", "link", "symlink", "touch" };

/* Relative weights of the kinds. */
static const unsigned weight[K_N] = { 16, 8, 14, 10, 10, 8, 8, 6, 6, 10 };

#define MAX_ERRNOS 16

struct counts {
	unsigned ok[K_N], failed[K_N];
	struct {
		char name[24];
		unsigned n;
	} why[K_N][MAX_ERRNOS];
};

static void count_failure(struct counts *k, enum kind kd, const char *err)
{
	for (int i = 0; i < MAX_ERRNOS; i++) {
		if (k->why[kd][i].n == 0)
			snprintf(k->why[kd][i].name, sizeof(k->why[kd][i].name), "%s", err);
		if (strcmp(k->why[kd][i].name, err) == 0) {
			k->why[kd][i].n++;
			break;
		}
	}
	k->failed[kd]++;
}

static int conn_fd = -1;

/* A write grant: truncate (or append to) a file, or create one, and write
 * random bytes into the descriptor the core passes. */
static void op_write(const struct fsbt_core *c, struct counts *k, bool append)
{
	char path[PATH_MAX * 2], line[PATH_MAX * 2 + 256], reply[REPLY], data[3000];
	enum kind kd = append ? K_APPEND : K_WRITE;
	const struct node *n = rnd(4) == 0 ? NULL : pick(is_not_dir);
	size_t len = rnd(sizeof(data));
	int got = -1;

	if (n != NULL)
		abs_path(c, n, path, sizeof(path));
	else
		new_path(c, path, sizeof(path));
	/* O_WRONLY|O_CREAT|O_TRUNC or O_WRONLY|O_CREAT|O_APPEND */
	fsbt_text_req(line, sizeof(line), FSBT_WRITE, path, c->session,
		      append ? "open=0x441:0644" : FSBT_OPEN_WRITE);
	if (fsbt_request(conn_fd, line, reply, sizeof(reply), &got) < 0)
		fail_msg("no reply to %s", line);
	if (strcmp(reply, "FD") != 0 || got < 0) {
		char err[24] = "?";

		if (got >= 0)
			close(got);
		sscanf(reply, "DENY %23s", err);
		count_failure(k, kd, err);
		return;
	}
	random_bytes(data, len);
	if (write(got, data, len) != (ssize_t)len)
		fail_msg("writing into the granted fd of %s: %s", path, strerror(errno));
	close(got);
	k->ok[kd]++;
}

static void __attribute__((format(printf, 4, 5)))
op_host(const struct fsbt_core *c, struct counts *k, enum kind kd, const char *fields, ...)
{
	char *inner = NULL, *line = NULL;
	va_list ap;
	cJSON *r;

	va_start(ap, fields);
	assert_true(vasprintf(&inner, fields, ap) > 0);
	va_end(ap);
	assert_true(asprintf(&line, "{\"command\":\"HostFileOperation\",\"sessionId\":\"%s\",%s}",
			     c->session, inner) > 0);
	r = fsbt_hostop(conn_fd, line);
	if (r == NULL)
		fail_msg("no reply to %s", line);
	if (fsbt_ok(r))
		k->ok[kd]++;
	else
		count_failure(k, kd, fsbt_str(r, "errno")[0] ? fsbt_str(r, "errno") : "?");
	if (getenv("FSBT_VERBOSE") != NULL) {
		char *s = cJSON_PrintUnformatted(r);

		fprintf(stderr, "# -> %s\n# <- %s\n", line, s);
		free(s);
	}
	cJSON_Delete(r);
	free(inner);
	free(line);
}

static const char *bool_s(bool b)
{
	return b ? "true" : "false";
}

static void one_op(const struct fsbt_core *c, struct counts *k)
{
	unsigned total = 0, w;
	char a[PATH_MAX * 2], b[PATH_MAX * 2];
	const struct node *n, *m;
	enum kind kd = K_WRITE;

	for (int i = 0; i < K_N; i++)
		total += weight[i];
	w = rnd(total);
	for (int i = 0; i < K_N; i++) {
		if (w < weight[i]) {
			kd = (enum kind)i;
			break;
		}
		w -= weight[i];
	}
	switch (kd) {
	case K_WRITE:
	case K_APPEND:
		op_write(c, k, kd == K_APPEND);
		return;
	case K_RENAME:
		if ((n = pick(NULL)) == NULL)
			break;
		abs_path(c, n, a, sizeof(a));
		/* Over an existing file a third of the time. */
		if (rnd(3) == 0 && (m = pick(is_file)) != NULL)
			abs_path(c, m, b, sizeof(b));
		else
			new_path(c, b, sizeof(b));
		op_host(c, k, kd, "\"operation\":\"rename\",\"from\":\"%s\",\"to\":\"%s\"", a, b);
		return;
	case K_DELETE:
		if ((n = pick(NULL)) == NULL)
			break;
		abs_path(c, n, a, sizeof(a));
		op_host(c, k, kd,
			"\"operation\":\"delete\",\"path\":\"%s\",\"deleteMode\":\"%s\","
			"\"recursive\":%s",
			a, rnd(2) ? "trash" : "unlink", bool_s(rnd(5) != 0));
		return;
	case K_COPY:
		if (rnd(3) == 0 && (n = pick(is_dir)) != NULL) {
			abs_path(c, n, a, sizeof(a));
			new_path(c, b, sizeof(b));
			op_host(c, k, kd,
				"\"operation\":\"copy\",\"from\":\"%s\",\"to\":\"%s\","
				"\"recursive\":true",
				a, b);
			return;
		}
		if ((n = pick(is_copyable_file)) == NULL)
			break;
		abs_path(c, n, a, sizeof(a));
		if (rnd(3) == 0 && (m = pick(is_file)) != NULL)
			abs_path(c, m, b, sizeof(b));
		else
			new_path(c, b, sizeof(b));
		op_host(c, k, kd, "\"operation\":\"copy\",\"from\":\"%s\",\"to\":\"%s\"", a, b);
		return;
	case K_CHMOD:
		if ((n = pick(is_file_or_dir)) == NULL)
			break;
		abs_path(c, n, a, sizeof(a));
		op_host(c, k, kd, "\"operation\":\"chmod\",\"path\":\"%s\",\"mode\":\"%04o\"", a,
			(unsigned)(S_ISDIR(n->mode) ? dir_modes[rnd(5)] : file_modes[rnd(8)]));
		return;
	case K_MKDIR: {
		bool deep = rnd(4) == 0;

		new_path(c, a, sizeof(a));
		if (deep)
			snprintf(a + strlen(a), sizeof(a) - strlen(a), "/n%u", name_seq++);
		op_host(c, k, kd,
			"\"operation\":\"mkdir\",\"path\":\"%s\",\"recursive\":%s,\"mode\":\"%04o\"",
			a, bool_s(deep), (unsigned)dir_modes[rnd(5)]);
		return;
	}
	case K_LINK:
		if ((n = pick(is_file)) == NULL)
			break;
		abs_path(c, n, a, sizeof(a));
		new_path(c, b, sizeof(b));
		op_host(c, k, kd, "\"operation\":\"link\",\"from\":\"%s\",\"to\":\"%s\"", a, b);
		return;
	case K_SYMLINK: {
		static const char *const targets[] = { "file1.txt", "..", "n1/x", "/etc/hostname",
						       "../dir0/file0.txt", "missing" };

		new_path(c, b, sizeof(b));
		op_host(c, k, kd,
			"\"operation\":\"link\",\"from\":\"%s\",\"to\":\"%s\",\"symbolic\":true",
			targets[rnd(6)], b);
		return;
	}
	case K_TOUCH:
		if (rnd(4) == 0 || (n = pick(NULL)) == NULL)
			new_path(c, a, sizeof(a));
		else
			abs_path(c, n, a, sizeof(a));
		op_host(c, k, kd, "\"operation\":\"touch\",\"path\":\"%s\"", a);
		return;
	case K_N:
		break;
	}
	count_failure(k, kd, "no-operand");
}

static void print_counts(uint64_t seed, const struct counts *k, unsigned nops)
{
	unsigned ok = 0;

	for (int i = 0; i < K_N; i++)
		ok += k->ok[i];
	printf("# seed %llu: %u operations, %u succeeded\n", (unsigned long long)seed, nops, ok);
	for (int i = 0; i < K_N; i++) {
		char why[512] = "";
		size_t used = 0;

		for (int j = 0; j < MAX_ERRNOS && k->why[i][j].n > 0; j++)
			used += (size_t)snprintf(why + used, sizeof(why) - used, "%s%s %u",
						 j ? ", " : "", k->why[i][j].name,
						 k->why[i][j].n);
		printf("#   %-8s %4u ok %4u failed%s%s%s\n", kind_name[i], k->ok[i], k->failed[i],
		       used ? " (" : "", why, used ? ")" : "");
	}
	fflush(stdout);
}

/* ------------------------------------------------------------------------ */
/* The test. */

static void run_seed(void **state, uint64_t seed)
{
	struct fsbt_core *c = *state;
	struct fsbt_tree before, after;
	unsigned nops = 500, ok = 0;
	const char *env = getenv("FSBT_SEQ_OPS");
	uint64_t t0 = fsbt_now_ms();
	struct counts *k = calloc(1, sizeof(*k));
	char *out = NULL, diff[8192];
	size_t ndiff;
	int status;
	cJSON *r;

	assert_non_null(k);
	if (env != NULL && atoi(env) > 0)
		nops = (unsigned)atoi(env);
	printf("# seed %llu\n", (unsigned long long)seed);
	rng = seed;
	name_seq = 0;
	build_tree(c);
	assert_int_equal(fsbt_tree_snap(c->ws, &before), 0);

	r = fsbt_control_cmd(c, "EnableModifyBackup", "\"enabled\":true");
	assert_true(fsbt_ok(r));
	cJSON_Delete(r);
	conn_fd = fsbt_connect(c);
	assert_true(conn_fd >= 0);
	for (unsigned i = 0; i < nops; i++) {
		one_op(c, k);
		nnodes = 0;
		walk(c->ws, "");
	}
	fsbt_close(conn_fd);
	conn_fd = -1;
	print_counts(seed, k, nops);
	for (int i = 0; i < K_N; i++) {
		ok += k->ok[i];
		if (k->ok[i] == 0)
			fail_msg("seed %llu: no %s succeeded: the sequence proves nothing about it",
				 (unsigned long long)seed, kind_name[i]);
	}
	if (ok * 2 < nops)
		fail_msg("seed %llu: only %u of %u operations succeeded", (unsigned long long)seed,
			 ok, nops);

	r = fsbt_control_cmd(c, "CommitModifyBackup", "\"commitMsg\":\"seed %llu\"",
			     (unsigned long long)seed);
	assert_true(fsbt_ok(r));
	assert_true(fsbt_num(r, "cycle") >= 1);
	cJSON_Delete(r);
	status = fsbt_run((char *[]){ (char *)fsbt_binary(), "backup", "restore", "--last",
				      "--state-dir", c->state, "--session", c->session, NULL },
			  &out);
	assert_int_equal(fsbt_tree_snap(c->ws, &after), 0);
	/* Directory mtimes are not compared: restore does not put back the
	 * mtime of a directory whose entries it changed. Nor are link counts:
	 * a hard link the turn made and then trashed is a second name of its
	 * file in the trash, outside the tree, and stays there. */
	ndiff = fsbt_tree_diff(&before, &after, FSBT_TREE_MTIME, diff, sizeof(diff));
	if (ndiff > 0 || status != 0) {
		fprintf(stderr, "# seed %llu: restore exited 0x%x; its output:\n%s",
			(unsigned long long)seed, (unsigned)status, out ? out : "");
		if (ndiff > 0)
			fail_msg("seed %llu: after restore %zu paths differ from before the turn; "
				 "the first:\n%s",
				 (unsigned long long)seed, ndiff, diff);
		fail_msg("seed %llu: the tree is back, but restore exited 0x%x",
			 (unsigned long long)seed, (unsigned)status);
	}
	printf("# seed %llu: %zu paths restored exactly in %llu ms\n", (unsigned long long)seed,
	       before.n, (unsigned long long)(fsbt_now_ms() - t0));
	free(out);
	free(k);
	fsbt_tree_free(&before);
	fsbt_tree_free(&after);
}

static void sequence_seed_1(void **state)
{
	run_seed(state, 1);
}

static void sequence_seed_42(void **state)
{
	run_seed(state, 42);
}

static void sequence_seed_deadbeef(void **state)
{
	run_seed(state, 0xdeadbeefULL);
}

static void sequence_seed_20261129(void **state)
{
	run_seed(state, 20261129);
}

static void sequence_seed_golden(void **state)
{
	run_seed(state, 0x9e3779b97f4a7c15ULL);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fsbt_setup_core, fsbt_teardown_core)
	const struct CMUnitTest tests[] = {
		T(sequence_seed_1),
		T(sequence_seed_42),
		T(sequence_seed_deadbeef),
		T(sequence_seed_20261129),
		T(sequence_seed_golden),
	};

	umask(022);
	return fsbt_run_group(tests, NULL, NULL);
}
