/*
 * test_hostop_race.c — host operations while the path under them changes:
 * a thread swaps the directory ws/d with a symlink to a directory outside
 * every tree the policy lets a command change (renameat2 RENAME_EXCHANGE,
 * as fast as it can), another swaps the file ws/e/f with a symlink to a
 * file there, a third swaps ws/g/sub, a directory inside a tree, with a
 * symlink to the outside directory, while the test sends every host
 * operation, and write grants, on paths through ws/d, on ws/e/f and on the
 * tree ws/g. Whatever the timing, nothing outside may be created, changed
 * or removed: the core must act on what it judged or fail, and a failure
 * caused by the change says "ask again" (docs/protocol.md: operations are
 * race-safe).
 *
 * FSBT_RACE_SECONDS sets how long it runs (default 10).
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define REPLY 8192

struct swapper {
	char d[PATH_MAX + 16], s[PATH_MAX + 16];
	bool tolerant;		/* the names may be gone for a while: keep trying */
	atomic_bool stop;
	atomic_ulong swaps;
	int err;		/* errno of a failed exchange, else 0 */
};

static void *swap_loop(void *arg)
{
	struct swapper *sw = arg;

	while (!atomic_load(&sw->stop)) {
		if (renameat2(AT_FDCWD, sw->d, AT_FDCWD, sw->s, RENAME_EXCHANGE) < 0) {
			if (sw->tolerant && errno == ENOENT) {
				sched_yield();
				continue;
			}
			sw->err = errno;
			break;
		}
		atomic_fetch_add(&sw->swaps, 1);
		/* Two swappers and the core share the CPUs: let the core run. */
		sched_yield();
	}
	return NULL;
}

/* The operations sent (through ws/d; f: on ws/e/f; g: on the tree ws/g),
 * and what became of them. */
enum rop { R_TOUCH_NEW, R_TOUCH, R_MKDIR, R_MKDIR_SUB, R_MKDIR_DEEP, R_DELETE, R_DELETE_TREE,
	   R_RENAME_OUT, R_RENAME_IN, R_RENAME_DIR, R_CHMOD, R_COPY_OVER, R_COPY_NEW,
	   R_COPY_TREE, R_LINK, R_LINK_FROM, R_SYMLINK, R_WRITE,
	   R_F_CHMOD, R_F_TOUCH, R_F_COPY_OVER, R_F_LINK_FROM, R_F_WRITE,
	   R_G_DELETE, R_G_COPY, R_G_RENAME, R_G_RENAME_BACK, R_G_CHMOD, R_G_MKDIR, R_N };

static const char *const rop_name[R_N] = {
	"touch-new", "touch", "mkdir", "mkdir-sub", "mkdir-deep", "delete", "delete-tree",
	"rename-out", "rename-in", "rename-dir", "chmod", "copy-over", "copy-new",
	"copy-tree", "link", "link-from", "symlink", "write-grant",
	"f:chmod", "f:touch", "f:copy-over", "f:link-from", "f:write-grant",
	"g:delete-tree", "g:copy-tree", "g:rename", "g:rename-back", "g:chmod-sub",
	"g:mkdir-in-sub",
};

/* ws/g/{sub/{inner, deeper/x}, subl -> outside}: a tree with a directory
 * and, beside it, a symlink to the directory outside (that a thread keeps
 * swapping); made again whenever an operation removed or moved it. */
static void make_g(const char *g, const char *outside)
{
	char p[PATH_MAX * 2];
	struct stat st;

	if (lstat(g, &st) == 0)
		return;
	assert_int_equal(mkdir(g, 0755), 0);
	snprintf(p, sizeof(p), "%s/sub", g);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/sub/inner", g);
	fsbt_write_file(p, "inner inside\n");
	snprintf(p, sizeof(p), "%s/sub/deeper", g);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/sub/deeper/x", g);
	fsbt_write_file(p, "x\n");
	snprintf(p, sizeof(p), "%s/subl", g);
	assert_int_equal(symlink(outside, p), 0);
}

#define MAX_WHY 12

struct tally {
	unsigned long ok[R_N], failed[R_N];
	struct {
		char name[24];
		char sample[200];	/* the first error sentence */
		unsigned long n;
	} why[R_N][MAX_WHY];
};

static void tally_fail(struct tally *t, enum rop op, const char *err, const char *sentence)
{
	for (int i = 0; i < MAX_WHY; i++) {
		if (t->why[op][i].n == 0) {
			snprintf(t->why[op][i].name, sizeof(t->why[op][i].name), "%s", err);
			snprintf(t->why[op][i].sample, sizeof(t->why[op][i].sample), "%s",
				 sentence);
		}
		if (strcmp(t->why[op][i].name, err) == 0) {
			t->why[op][i].n++;
			break;
		}
	}
	t->failed[op]++;
}

/* True when the request succeeded. */
static bool tally_reply(struct tally *t, enum rop op, cJSON *r)
{
	bool ok;

	if (r == NULL)
		fail_msg("no reply to a %s request: the core is stuck or gone", rop_name[op]);
	ok = fsbt_ok(r);
	if (ok)
		t->ok[op]++;
	else
		tally_fail(t, op, fsbt_str(r, "errno")[0] ? fsbt_str(r, "errno") : "?",
			   fsbt_str(r, "error"));
	cJSON_Delete(r);
	return ok;
}

/* A write grant (O_WRONLY|O_APPEND) for `path`: the fd must never be of
 * the file `never` (a canary outside). Counts the fds that were. */
static void write_grant(const struct fsbt_core *c, int fd, const char *path,
			const struct stat *never, struct tally *t, enum rop op,
			unsigned long *outside_fds)
{
	char line[PATH_MAX * 2 + 256], reply[REPLY];
	struct stat st;
	int got = -1;

	fsbt_text_req(line, sizeof(line), FSBT_WRITE, path, c->session, "open=0x401:0644");
	if (fsbt_request(fd, line, reply, sizeof(reply), &got) < 0)
		fail_msg("no reply to %s", line);
	if (strcmp(reply, "FD") == 0 && got >= 0) {
		assert_int_equal(fstat(got, &st), 0);
		if (st.st_dev == never->st_dev && st.st_ino == never->st_ino)
			(*outside_fds)++;
		close(got);
		t->ok[op]++;
	} else {
		char err[24] = "?";

		if (got >= 0)
			close(got);
		sscanf(reply, "DENY %23s", err);
		tally_fail(t, op, err, reply);
	}
}

#define HOP "{\"command\":\"HostFileOperation\",\"sessionId\":\"%s\",\"operation\":"

static void race_ops_on_swapped_paths_never_reach_outside(void **state)
{
	struct fsbt_core *c = *state;
	char outside[PATH_MAX + 16], p[PATH_MAX * 2], d[PATH_MAX + 16], src[PATH_MAX + 16];
	char srcdir[PATH_MAX + 16], f[PATH_MAX + 16], diff[8192];
	const char *env = getenv("FSBT_RACE_SECONDS");
	unsigned seconds = env != NULL && atoi(env) > 0 ? (unsigned)atoi(env) : 10;
	struct fsbt_tree before, after;
	struct swapper sw = { .err = 0 }, swf = { .err = 0 }, swg = { .tolerant = true };
	char g[PATH_MAX + 16];
	struct tally *t = calloc(1, sizeof(*t));
	struct stat canary_st, canary2_st, st;
	unsigned long nops = 0, nok = 0, outside_fds = 0;
	uint64_t t0, deadline;
	pthread_t th, thf, thg;
	int fd, n = 0;

	assert_non_null(t);
	/* outside/{canary, sub/inner, victim}: the names the operations use
	 * through ws/d, so that a followed symlink would hit them. */
	snprintf(outside, sizeof(outside), "%s/outside", c->dir);
	assert_int_equal(mkdir(outside, 0755), 0);
	snprintf(p, sizeof(p), "%s/canary", outside);
	fsbt_write_file(p, "the canary outside\n");
	assert_int_equal(chmod(p, 0644), 0);
	assert_int_equal(stat(p, &canary_st), 0);
	snprintf(p, sizeof(p), "%s/sub", outside);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/sub/inner", outside);
	fsbt_write_file(p, "inner outside\n");
	snprintf(p, sizeof(p), "%s/victim", outside);
	fsbt_write_file(p, "victim outside\n");
	snprintf(p, sizeof(p), "%s/canary2", outside);
	fsbt_write_file(p, "the second canary outside\n");
	assert_int_equal(stat(p, &canary2_st), 0);

	/* ws/d: the same names; ws/s -> outside; ws/src.txt and ws/srcdir to
	 * copy and link from. */
	snprintf(d, sizeof(d), "%s/d", c->ws);
	assert_int_equal(mkdir(d, 0755), 0);
	snprintf(p, sizeof(p), "%s/canary", d);
	fsbt_write_file(p, "the canary inside\n");
	snprintf(p, sizeof(p), "%s/sub", d);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/victim", d);
	fsbt_write_file(p, "victim inside\n");
	snprintf(sw.d, sizeof(sw.d), "%s", d);
	snprintf(sw.s, sizeof(sw.s), "%s/s", c->ws);
	assert_int_equal(symlink(outside, sw.s), 0);
	snprintf(src, sizeof(src), "%s/src.txt", c->ws);
	fsbt_write_file(src, "copied in\n");
	snprintf(srcdir, sizeof(srcdir), "%s/srcdir", c->ws);
	assert_int_equal(mkdir(srcdir, 0755), 0);
	snprintf(p, sizeof(p), "%s/f", srcdir);
	fsbt_write_file(p, "f\n");

	/* ws/e/f, a file, swapped with ws/e/l -> outside/canary2. */
	snprintf(p, sizeof(p), "%s/e", c->ws);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(swf.d, sizeof(swf.d), "%s/e/f", c->ws);
	fsbt_write_file(swf.d, "f inside\n");
	snprintf(swf.s, sizeof(swf.s), "%s/e/l", c->ws);
	snprintf(p, sizeof(p), "%s/canary2", outside);
	assert_int_equal(symlink(p, swf.s), 0);
	snprintf(f, sizeof(f), "%s", swf.d);

	snprintf(g, sizeof(g), "%s/g", c->ws);
	make_g(g, outside);
	snprintf(swg.d, sizeof(swg.d), "%s/sub", g);
	snprintf(swg.s, sizeof(swg.s), "%s/subl", g);

	if (renameat2(AT_FDCWD, sw.d, AT_FDCWD, sw.s, RENAME_EXCHANGE) < 0)
		fsbt_skip("renameat2(RENAME_EXCHANGE) is not available here: %s",
			  strerror(errno));
	assert_int_equal(renameat2(AT_FDCWD, sw.d, AT_FDCWD, sw.s, RENAME_EXCHANGE), 0);
	assert_int_equal(fsbt_tree_snap(outside, &before), 0);

	fd = fsbt_connect(c);
	assert_true(fd >= 0);
	atomic_init(&sw.stop, false);
	atomic_init(&sw.swaps, 0);
	atomic_init(&swf.stop, false);
	atomic_init(&swf.swaps, 0);
	atomic_init(&swg.stop, false);
	atomic_init(&swg.swaps, 0);
	assert_int_equal(pthread_create(&th, NULL, swap_loop, &sw), 0);
	assert_int_equal(pthread_create(&thf, NULL, swap_loop, &swf), 0);
	assert_int_equal(pthread_create(&thg, NULL, swap_loop, &swg), 0);
	t0 = fsbt_now_ms();
	deadline = t0 + (uint64_t)seconds * 1000u;
	while (fsbt_now_ms() < deadline) {
		enum rop op = (enum rop)(nops % R_N);
		const char *s = c->session;
		cJSON *r = NULL;

		n++;
		switch (op) {
		case R_TOUCH_NEW:
			r = fsbt_hostopf(fd, HOP "\"touch\",\"path\":\"%s/new-%d\"}", s, d, n);
			break;
		case R_TOUCH:
			r = fsbt_hostopf(fd, HOP "\"touch\",\"path\":\"%s/canary\"}", s, d);
			break;
		case R_MKDIR:
			r = fsbt_hostopf(fd, HOP "\"mkdir\",\"path\":\"%s/dir-%d\"}", s, d, n);
			break;
		case R_MKDIR_SUB:
			r = fsbt_hostopf(fd, HOP "\"mkdir\",\"path\":\"%s/sub\"}", s, d);
			break;
		case R_MKDIR_DEEP:
			r = fsbt_hostopf(fd, HOP "\"mkdir\",\"path\":\"%s/sub/a-%d/b\","
						 "\"recursive\":true}",
					 s, d, n);
			break;
		case R_DELETE:
			r = fsbt_hostopf(fd, HOP "\"delete\",\"path\":\"%s/victim\","
						 "\"deleteMode\":\"%s\"}",
					 s, d, n % 2 ? "unlink" : "trash");
			break;
		case R_DELETE_TREE:
			r = fsbt_hostopf(fd, HOP "\"delete\",\"path\":\"%s/sub\",\"recursive\":true,"
						 "\"deleteMode\":\"%s\"}",
					 s, d, n % 2 ? "unlink" : "trash");
			break;
		case R_RENAME_OUT:
			r = fsbt_hostopf(fd, HOP "\"rename\",\"from\":\"%s/canary\","
						 "\"to\":\"%s/moved-%d\"}",
					 s, d, c->ws, n);
			break;
		case R_RENAME_IN:
			/* Put a canary (and a victim) back for the next round. */
			r = fsbt_hostopf(fd, HOP "\"copy\",\"from\":\"%s\",\"to\":\"%s/victim\"}", s,
					 src, d);
			cJSON_Delete(r);
			r = fsbt_hostopf(fd, HOP "\"rename\",\"from\":\"%s/moved-%d\","
						 "\"to\":\"%s/canary\"}",
					 s, c->ws, n - 1, d);
			break;
		case R_RENAME_DIR:
			r = fsbt_hostopf(fd, HOP "\"rename\",\"from\":\"%s/sub\","
						 "\"to\":\"%s/sub-%d\"}",
					 s, d, d, n);
			break;
		case R_CHMOD:
			r = fsbt_hostopf(fd, HOP "\"chmod\",\"path\":\"%s/canary\",\"mode\":\"%s\"}",
					 s, d, n % 2 ? "0600" : "0644");
			break;
		case R_COPY_OVER:
			r = fsbt_hostopf(fd, HOP "\"copy\",\"from\":\"%s\",\"to\":\"%s/canary\"}", s,
					 src, d);
			break;
		case R_COPY_NEW:
			r = fsbt_hostopf(fd, HOP "\"copy\",\"from\":\"%s\",\"to\":\"%s/copy-%d\"}", s,
					 src, d, n);
			break;
		case R_COPY_TREE:
			r = fsbt_hostopf(fd, HOP "\"copy\",\"from\":\"%s\",\"to\":\"%s/tree-%d\","
						 "\"recursive\":true}",
					 s, srcdir, d, n);
			break;
		case R_LINK:
			/* A file of one link each time: a second name for a file
			 * that has two already waits for approval (hardlinks). */
			snprintf(p, sizeof(p), "%s/lsrc-%d", c->ws, n);
			fsbt_write_file(p, "link source\n");
			r = fsbt_hostopf(fd, HOP "\"link\",\"from\":\"%s\",\"to\":\"%s/hard-%d\"}", s,
					 p, d, n);
			break;
		case R_LINK_FROM:
			r = fsbt_hostopf(fd, HOP "\"link\",\"from\":\"%s/canary\","
						 "\"to\":\"%s/linked-%d\"}",
					 s, d, c->ws, n);
			/* Back to one link, or every later change to the canary
			 * would wait for approval (hardlinks = "ask"). */
			if (tally_reply(t, op, r)) {
				snprintf(p, sizeof(p), "%s/linked-%d", c->ws, n);
				unlink(p);
			}
			nops++;
			continue;
		case R_SYMLINK:
			r = fsbt_hostopf(fd, HOP "\"link\",\"from\":\"canary\",\"to\":\"%s/sym-%d\","
						 "\"symbolic\":true}",
					 s, d, n);
			break;
		case R_WRITE:
			snprintf(p, sizeof(p), "%s/canary", d);
			write_grant(c, fd, p, &canary_st, t, op, &outside_fds);
			nops++;
			continue;
		case R_F_CHMOD:
			r = fsbt_hostopf(fd, HOP "\"chmod\",\"path\":\"%s\",\"mode\":\"%s\"}", s,
					 f, n % 2 ? "0600" : "0644");
			break;
		case R_F_TOUCH:
			r = fsbt_hostopf(fd, HOP "\"touch\",\"path\":\"%s\"}", s, f);
			break;
		case R_F_COPY_OVER:
			r = fsbt_hostopf(fd, HOP "\"copy\",\"from\":\"%s\",\"to\":\"%s\"}", s, src,
					 f);
			break;
		case R_F_LINK_FROM:
			r = fsbt_hostopf(fd, HOP "\"link\",\"from\":\"%s\",\"to\":\"%s/flink-%d\"}",
					 s, f, c->ws, n);
			if (tally_reply(t, op, r)) {
				snprintf(p, sizeof(p), "%s/flink-%d", c->ws, n);
				unlink(p);
			}
			nops++;
			continue;
		case R_F_WRITE:
			write_grant(c, fd, f, &canary2_st, t, op, &outside_fds);
			nops++;
			continue;
		case R_G_DELETE:
			r = fsbt_hostopf(fd, HOP "\"delete\",\"path\":\"%s\",\"recursive\":true,"
						 "\"deleteMode\":\"%s\"}",
					 s, g, n % 2 ? "unlink" : "trash");
			tally_reply(t, op, r);
			make_g(g, outside);
			nops++;
			continue;
		case R_G_COPY:
			r = fsbt_hostopf(fd, HOP "\"copy\",\"from\":\"%s\",\"to\":\"%s/gcopy-%d\","
						 "\"recursive\":true}",
					 s, g, c->ws, n);
			break;
		case R_G_RENAME:
			r = fsbt_hostopf(fd, HOP "\"rename\",\"from\":\"%s\",\"to\":\"%s/g-moved\"}",
					 s, g, c->ws);
			break;
		case R_G_RENAME_BACK:
			r = fsbt_hostopf(fd, HOP "\"rename\",\"from\":\"%s/g-moved\",\"to\":\"%s\"}",
					 s, c->ws, g);
			break;
		case R_G_CHMOD:
			r = fsbt_hostopf(fd, HOP "\"chmod\",\"path\":\"%s/sub\",\"mode\":\"%s\"}", s,
					 g, n % 2 ? "0700" : "0755");
			break;
		case R_G_MKDIR:
			r = fsbt_hostopf(fd, HOP "\"mkdir\",\"path\":\"%s/sub/made-%d\"}", s, g, n);
			break;
		case R_N:
			break;
		}
		tally_reply(t, op, r);
		nops++;
	}
	atomic_store(&sw.stop, true);
	atomic_store(&swf.stop, true);
	atomic_store(&swg.stop, true);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(pthread_join(thf, NULL), 0);
	assert_int_equal(pthread_join(thg, NULL), 0);
	fsbt_close(fd);
	/* Leave ws/d the directory again. */
	if (lstat(d, &st) == 0 && S_ISLNK(st.st_mode))
		assert_int_equal(renameat2(AT_FDCWD, sw.d, AT_FDCWD, sw.s, RENAME_EXCHANGE), 0);

	printf("# %lu swaps of ws/d, %lu of ws/e/f, %lu of ws/g/sub and %lu requests in %llu ms\n",
	       (unsigned long)atomic_load(&sw.swaps), (unsigned long)atomic_load(&swf.swaps),
	       (unsigned long)atomic_load(&swg.swaps), nops,
	       (unsigned long long)(fsbt_now_ms() - t0));
	for (int i = 0; i < R_N; i++) {
		char why[512] = "";
		size_t used = 0;

		nok += t->ok[i];
		for (int j = 0; j < MAX_WHY && t->why[i][j].n > 0; j++)
			used += (size_t)snprintf(why + used, sizeof(why) - used, "%s%s %lu",
						 j ? ", " : "", t->why[i][j].name,
						 t->why[i][j].n);
		printf("#   %-12s %5lu ok %5lu failed%s%s%s\n", rop_name[i], t->ok[i], t->failed[i],
		       used ? " (" : "", why, used ? ")" : "");
	}
	/* FSBT_VERBOSE: what each kind of failure said, the first time. */
	for (int i = 0; i < R_N && getenv("FSBT_VERBOSE") != NULL; i++)
		for (int j = 0; j < MAX_WHY && t->why[i][j].n > 0; j++)
			printf("#   %s %s: %s\n", rop_name[i], t->why[i][j].name,
			       t->why[i][j].sample);
	fflush(stdout);
	if (sw.err != 0 || swf.err != 0 || swg.err != 0)
		fail_msg("a swapping thread stopped: renameat2: %s",
			 strerror(sw.err ? sw.err : swf.err ? swf.err : swg.err));

	assert_int_equal(fsbt_tree_snap(outside, &after), 0);
	/* Everything: content, mode, times (directories too), link counts and
	 * ctime, which moves whenever anything touches an inode. */
	if (fsbt_tree_diff(&before, &after,
			   FSBT_TREE_MTIME | FSBT_TREE_DIR_MTIME | FSBT_TREE_CTIME | FSBT_TREE_NLINK,
			   diff, sizeof(diff)) > 0)
		fail_msg("operations through ws/d reached the directory outside:\n%s", diff);
	if (outside_fds > 0)
		fail_msg("%lu write grants handed out a canary outside", outside_fds);
	fsbt_tree_free(&before);
	fsbt_tree_free(&after);
	/*
	 * What a request may answer here: success, EACCES (the outside is not
	 * the policy's to change), ENOENT and EEXIST (the other operations
	 * remove and make these names), and for a path that changed under it
	 * EAGAIN or ELOOP, "ask again" (docs/protocol.md, race-safe). EINVAL
	 * would tell a client its request was malformed, ENOTDIR or EISDIR
	 * that the paths are what they are not; neither asks again.
	 */
	{
		static const char *const expected[] = { "EACCES", "EAGAIN", "ELOOP", "ENOENT",
							"EEXIST" };
		char unexpected[1024] = "";
		size_t used = 0;

		for (int i = 0; i < R_N; i++)
			for (int j = 0; j < MAX_WHY && t->why[i][j].n > 0; j++) {
				bool ok = false;

				for (size_t x = 0; x < sizeof(expected) / sizeof(expected[0]); x++)
					ok = ok || strcmp(t->why[i][j].name, expected[x]) == 0;
				if (!ok && used < sizeof(unexpected))
					used += (size_t)snprintf(unexpected + used,
								 sizeof(unexpected) - used,
								 "\n  %s: %lu x %s, e.g. \"%s\"",
								 rop_name[i], t->why[i][j].n,
								 t->why[i][j].name,
								 t->why[i][j].sample);
			}
		if (used > 0)
			fail_msg("requests whose paths changed under them were answered with an "
				 "errno that does not say \"ask again\":%s",
				 unexpected);
	}
	/* A core that refuses everything proves nothing. */
	if (atomic_load(&sw.swaps) == 0 || atomic_load(&swf.swaps) == 0 ||
	    atomic_load(&swg.swaps) == 0 || nok < 10)
		fail_msg("only %lu operations succeeded and %lu + %lu swaps ran: the race was "
			 "not exercised",
			 nok, (unsigned long)atomic_load(&sw.swaps),
			 (unsigned long)atomic_load(&swf.swaps));
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(race_ops_on_swapped_paths_never_reach_outside,
						fsbt_setup_core, fsbt_teardown_core),
	};

	return fsbt_run_group(tests, NULL, NULL);
}
