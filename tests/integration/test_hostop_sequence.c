/*
 * test_hostop_sequence.c — long random turns through the real core: fd
 * grants (writes and appends) and all seven host operations on a scratch
 * tree with odd names, chosen by a seeded PRNG; then `fsbroker backup
 * restore` must give back the tree exactly as it was before each turn: the
 * same paths, types, modes, contents, symlink targets and mtimes.
 *
 * FSBT_SEQ_OPS sets the number of operations of the first turn per seed
 * (default 500; the second turn has half as many); FSBT_SEQ_SEED=N runs the
 * seeds N to N+4 instead of the fixed five, to look further.
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

/* A random empty directory, the root excluded. */
static const struct node *pick_empty_dir(void)
{
	size_t cand[MAX_PATHS], n = 0;

	for (size_t i = 1; i < nnodes; i++) {
		size_t len = strlen(nodes[i].rel);
		bool empty = S_ISDIR(nodes[i].mode);

		for (size_t j = 1; j < nnodes && empty; j++)
			empty = !(strncmp(nodes[j].rel, nodes[i].rel, len) == 0 &&
				  nodes[j].rel[len] == '/');
		if (empty)
			cand[n++] = i;
	}
	return n ? &nodes[cand[rnd((unsigned)n)]] : NULL;
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

/* Names a tree holds besides plain ASCII: a space, a percent sign, a
 * quote and a backslash (escaped in JSON), UTF-8, and bytes that are not
 * UTF-8 (sent as …Bytes). Never a tab or a newline: a text request cannot
 * carry them. */
static const char *const odd[] = { "sp ace", "caf\xe9", "pct%41", "q\"uote", "back\\slash",
				   "\xc3\xbc" "n\xc3\xaf" "c\xc3\xb6" "de", "\xff\xfe" };
#define N_ODD (sizeof(odd) / sizeof(odd[0]))

static unsigned name_seq;

/* A new absolute path in a random directory: "<ws>/<dir>/n<k>", a quarter
 * of the time with an odd name after it. */
static void new_path(const struct fsbt_core *c, char *out, size_t size)
{
	const char *d = pick_dir();

	snprintf(out, size, "%s%s%s/n%u%s", c->ws, d[0] ? "/" : "", d, name_seq++,
		 rnd(4) == 0 ? odd[rnd(N_ODD)] : "");
}

/*
 * A path field of a JSON request: "<field>":"<path>" when the path is
 * plain, else "<field>Bytes":"<percent-encoded>" (docs/protocol.md, Names
 * that are not UTF-8). One of four rotating buffers.
 */
static const char *jp(const char *field, const char *path)
{
	static char bufs[4][PATH_MAX * 3 + 64];
	static unsigned next_buf;
	char *out = bufs[next_buf++ % 4], *o;
	bool plain = true;

	for (const unsigned char *q = (const unsigned char *)path; *q; q++)
		if (*q < 0x20 || *q >= 0x7f || *q == '"' || *q == '\\' || *q == '%')
			plain = false;
	if (plain) {
		snprintf(out, sizeof(bufs[0]), "\"%s\":\"%s\"", field, path);
		return out;
	}
	o = out + sprintf(out, "\"%sBytes\":\"", field);
	for (const unsigned char *q = (const unsigned char *)path; *q; q++) {
		if ((*q >= 'A' && *q <= 'Z') || (*q >= 'a' && *q <= 'z') ||
		    (*q >= '0' && *q <= '9') || strchr("/._-~", *q) != NULL)
			*o++ = (char)*q;
		else
			o += sprintf(o, "%%%02X", *q);
	}
	strcpy(o, "\"");
	return out;
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
	/* Second names of some files: link groups the turns write, delete,
	 * rename over and trash through one name, and a restore rejoins. */
	nnodes = 0;
	walk(c->ws, "");
	for (int i = 0; i < 6; i++) {
		const struct node *n = pick(is_file);
		const char *d = pick_dir();
		char from[PATH_MAX * 2];

		if (n == NULL)
			break;
		snprintf(from, sizeof(from), "%s/%s", c->ws, n->rel);
		snprintf(p, sizeof(p), "%s%s%s/twin%d.txt", c->ws, d[0] ? "/" : "", d, i);
		assert_int_equal(link(from, p), 0);
	}
	for (int i = 0; i < 6; i++) {
		const char *d = pick_dir();
		static const char *const targets[] = { "file1.txt", "../file2.txt", "dir0",
						       "nowhere", "../../dir1/file3.txt", "." };

		snprintf(p, sizeof(p), "%s%s%s/link%d", c->ws, d[0] ? "/" : "", d, i);
		assert_int_equal(symlink(targets[i], p), 0);
		random_mtime(p);
	}
	for (size_t i = 0; i < N_ODD; i++) {
		const char *d = pick_dir();
		size_t len = rnd(sizeof(data));
		int fd;

		snprintf(p, sizeof(p), "%s%s%s/%s", c->ws, d[0] ? "/" : "", d, odd[i]);
		random_bytes(data, len);
		fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, data, len), (ssize_t)len);
		close(fd);
		assert_int_equal(chmod(p, file_modes[rnd(8)]), 0);
		random_mtime(p);
	}
	snprintf(p, sizeof(p), "%s/dir %s", c->ws, odd[1]);
	assert_int_equal(mkdir(p, 0755), 0);
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
	    K_SYMLINK, K_TOUCH, K_DIR_RENAME, K_DIR_OVER, K_DIR_BACK, K_N };

static const char *const kind_name[K_N] = { "write", "append", "rename", "delete", "copy",
					    "chmod", "mkdir", "link", "symlink", "touch",
					    "dir-mv", "dir-over", "dir-back" };

/* Relative weights of the kinds. A directory rename moves a tree (into
 * another directory of the tree: nested), or replaces an empty directory,
 * or goes to a new name and back again. */
static const unsigned weight[K_N] = { 16, 8, 14, 10, 10, 8, 8, 6, 6, 10, 6, 3, 3 };

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
		op_host(c, k, kd, "\"operation\":\"rename\",%s,%s", jp("from", a), jp("to", b));
		return;
	case K_DIR_RENAME:
		if ((n = pick(is_dir)) == NULL)
			break;
		abs_path(c, n, a, sizeof(a));
		new_path(c, b, sizeof(b));
		op_host(c, k, kd, "\"operation\":\"rename\",%s,%s", jp("from", a), jp("to", b));
		return;
	case K_DIR_OVER:
		if ((n = pick(is_dir)) == NULL || (m = pick_empty_dir()) == NULL || n == m)
			break;
		abs_path(c, n, a, sizeof(a));
		abs_path(c, m, b, sizeof(b));
		op_host(c, k, kd, "\"operation\":\"rename\",%s,%s", jp("from", a), jp("to", b));
		return;
	case K_DIR_BACK:
		if ((n = pick(is_dir)) == NULL)
			break;
		abs_path(c, n, a, sizeof(a));
		new_path(c, b, sizeof(b));
		op_host(c, k, kd, "\"operation\":\"rename\",%s,%s", jp("from", a), jp("to", b));
		op_host(c, k, kd, "\"operation\":\"rename\",%s,%s", jp("from", b), jp("to", a));
		return;
	case K_DELETE:
		if ((n = pick(NULL)) == NULL)
			break;
		abs_path(c, n, a, sizeof(a));
		op_host(c, k, kd, "\"operation\":\"delete\",%s,\"deleteMode\":\"%s\",\"recursive\":%s",
			jp("path", a), rnd(2) ? "trash" : "unlink", bool_s(rnd(5) != 0));
		return;
	case K_COPY:
		if (rnd(3) == 0 && (n = pick(is_dir)) != NULL) {
			abs_path(c, n, a, sizeof(a));
			new_path(c, b, sizeof(b));
			op_host(c, k, kd, "\"operation\":\"copy\",%s,%s,\"recursive\":true",
				jp("from", a), jp("to", b));
			return;
		}
		if ((n = pick(is_copyable_file)) == NULL)
			break;
		abs_path(c, n, a, sizeof(a));
		if (rnd(3) == 0 && (m = pick(is_file)) != NULL)
			abs_path(c, m, b, sizeof(b));
		else
			new_path(c, b, sizeof(b));
		op_host(c, k, kd, "\"operation\":\"copy\",%s,%s", jp("from", a), jp("to", b));
		return;
	case K_CHMOD:
		if ((n = pick(is_file_or_dir)) == NULL)
			break;
		abs_path(c, n, a, sizeof(a));
		op_host(c, k, kd, "\"operation\":\"chmod\",%s,\"mode\":\"%04o\"", jp("path", a),
			(unsigned)(S_ISDIR(n->mode) ? dir_modes[rnd(5)] : file_modes[rnd(8)]));
		return;
	case K_MKDIR: {
		bool deep = rnd(4) == 0;

		new_path(c, a, sizeof(a));
		if (deep)
			snprintf(a + strlen(a), sizeof(a) - strlen(a), "/n%u", name_seq++);
		op_host(c, k, kd, "\"operation\":\"mkdir\",%s,\"recursive\":%s,\"mode\":\"%04o\"",
			jp("path", a), bool_s(deep), (unsigned)dir_modes[rnd(5)]);
		return;
	}
	case K_LINK:
		if ((n = pick(is_file)) == NULL)
			break;
		abs_path(c, n, a, sizeof(a));
		new_path(c, b, sizeof(b));
		op_host(c, k, kd, "\"operation\":\"link\",%s,%s", jp("from", a), jp("to", b));
		return;
	case K_SYMLINK: {
		static const char *const targets[] = { "file1.txt", "..", "n1/x", "/etc/hostname",
						       "../dir0/file0.txt", "missing",
						       "caf\xe9" };

		new_path(c, b, sizeof(b));
		op_host(c, k, kd, "\"operation\":\"link\",%s,%s,\"symbolic\":true",
			jp("from", targets[rnd(7)]), jp("to", b));
		return;
	}
	case K_TOUCH:
		if (rnd(4) == 0 || (n = pick(NULL)) == NULL)
			new_path(c, a, sizeof(a));
		else
			abs_path(c, n, a, sizeof(a));
		op_host(c, k, kd, "\"operation\":\"touch\",%s", jp("path", a));
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

/* One turn: `nops` operations, then CommitModifyBackup; the cycle sealed. */
static int turn(struct fsbt_core *c, uint64_t seed, unsigned nops, const char *name)
{
	struct counts *k = calloc(1, sizeof(*k));
	unsigned ok = 0;
	int cycle;
	cJSON *r;

	assert_non_null(k);
	conn_fd = fsbt_connect(c);
	assert_true(conn_fd >= 0);
	for (unsigned i = 0; i < nops; i++) {
		one_op(c, k);
		nnodes = 0;
		walk(c->ws, "");
	}
	fsbt_close(conn_fd);
	conn_fd = -1;
	printf("# seed %llu, %s:\n", (unsigned long long)seed, name);
	print_counts(seed, k, nops);
	/* A sequence where nothing succeeds would restore trivially. */
	for (int i = 0; i < K_N; i++) {
		ok += k->ok[i];
		if (k->ok[i] == 0 && nops >= 200)
			fail_msg("seed %llu, %s: no %s succeeded: the sequence proves nothing "
				 "about it",
				 (unsigned long long)seed, name, kind_name[i]);
	}
	if (ok * 2 < nops)
		fail_msg("seed %llu, %s: only %u of %u operations succeeded",
			 (unsigned long long)seed, name, ok, nops);
	free(k);
	r = fsbt_control_cmd(c, "CommitModifyBackup", "\"commitMsg\":\"seed %llu, %s\"",
			     (unsigned long long)seed, name);
	assert_true(fsbt_ok(r));
	cycle = (int)fsbt_num(r, "cycle");
	assert_true(cycle >= 1);
	cJSON_Delete(r);
	return cycle;
}

/* `fsbroker backup restore <what> [--force]`, then the tree must equal
 * `want` and restore must have exited 0. */
static void restore_to(struct fsbt_core *c, uint64_t seed, const char *what, bool force,
		       const struct fsbt_tree *want, const char *name)
{
	struct fsbt_tree now;
	char *out = NULL, diff[8192];
	size_t ndiff;
	int status;

	status = fsbt_run((char *[]){ (char *)fsbt_binary(), "backup", "restore", (char *)what,
				      "--state-dir", c->state, "--session", c->session,
				      force ? "--force" : NULL, NULL },
			  &out);
	assert_int_equal(fsbt_tree_snap(c->ws, &now), 0);
	/* Link groups and counts too: a restore makes the names of a file
	 * one inode again, with the names it did not touch (in the workspace
	 * or, deleted by a turn, in the trash). */
	ndiff = fsbt_tree_diff(want, &now, FSBT_TREE_MTIME | FSBT_TREE_DIR_MTIME | FSBT_TREE_LINKS | FSBT_TREE_NLINK,
			       diff, sizeof(diff));
	if (ndiff > 0 || status != 0) {
		fprintf(stderr, "# seed %llu: restore %s%s exited 0x%x; its output:\n%s",
			(unsigned long long)seed, what, force ? " --force" : "", (unsigned)status,
			out ? out : "");
		if (ndiff > 0)
			fail_msg("seed %llu: after restore %s, %zu paths differ from %s; the "
				 "first:\n%s",
				 (unsigned long long)seed, what, ndiff, name, diff);
		fail_msg("seed %llu: the tree is back, but restore %s exited 0x%x",
			 (unsigned long long)seed, what, (unsigned)status);
	}
	free(out);
	fsbt_tree_free(&now);
}

/*
 * Two turns: the first of `nops` operations, the second of half as many.
 * Restoring the second turn gives back the tree between the turns;
 * restoring the first after it (forced: restore gave its files new inodes,
 * which its end states do not know) gives back the tree from before both.
 */
static void run_seed(void **state, uint64_t seed)
{
	struct fsbt_core *c = *state;
	struct fsbt_tree before, between;
	unsigned nops = 500;
	const char *env = getenv("FSBT_SEQ_OPS");
	uint64_t t0 = fsbt_now_ms();
	char first[16];
	cJSON *r;

	if (env != NULL && atoi(env) > 0)
		nops = (unsigned)atoi(env);
	if ((env = getenv("FSBT_SEQ_SEED")) != NULL) {
		static uint64_t extra;

		seed = strtoull(env, NULL, 0) + extra++;
	}
	printf("# seed %llu\n", (unsigned long long)seed);
	/* xorshift stays at 0 from 0. */
	rng = seed != 0 ? seed : 1;
	name_seq = 0;
	build_tree(c);
	assert_int_equal(fsbt_tree_snap(c->ws, &before), 0);
	r = fsbt_control_cmd(c, "EnableModifyBackup", "\"enabled\":true");
	assert_true(fsbt_ok(r));
	cJSON_Delete(r);

	snprintf(first, sizeof(first), "%d", turn(c, seed, nops, "first turn"));
	assert_int_equal(fsbt_tree_snap(c->ws, &between), 0);
	turn(c, seed, nops / 2, "second turn");
	/* The restores run as the core's user does, with its home: a name a
	 * turn deleted to the trash is found there. */
	assert_int_equal(setenv("HOME", c->home, 1), 0);
	unsetenv("XDG_DATA_HOME");
	restore_to(c, seed, "--last", false, &between, "the tree after the first turn");
	restore_to(c, seed, first, true, &before, "the tree before the first turn");
	printf("# seed %llu: %zu paths restored exactly in %llu ms\n", (unsigned long long)seed,
	       before.n, (unsigned long long)(fsbt_now_ms() - t0));
	fsbt_tree_free(&before);
	fsbt_tree_free(&between);
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
