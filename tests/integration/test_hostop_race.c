/*
 * test_hostop_race.c — host operations while the path under them changes:
 * a thread swaps the directory ws/d with a symlink to a directory outside
 * every tree the policy lets a command change (renameat2 RENAME_EXCHANGE,
 * as fast as it can), while the test sends every host operation, and write
 * grants, on paths through ws/d. Whatever the timing, nothing outside may
 * be created, changed or removed: the core must act on what it judged or
 * fail (docs/protocol.md: operations are race-safe).
 *
 * FSBT_RACE_SECONDS sets how long it runs (default 10).
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define REPLY 8192

struct swapper {
	char d[PATH_MAX + 16], s[PATH_MAX + 16];
	atomic_bool stop;
	atomic_ulong swaps;
	int err;		/* errno of a failed exchange, else 0 */
};

static void *swap_loop(void *arg)
{
	struct swapper *sw = arg;

	while (!atomic_load(&sw->stop)) {
		if (renameat2(AT_FDCWD, sw->d, AT_FDCWD, sw->s, RENAME_EXCHANGE) < 0) {
			sw->err = errno;
			break;
		}
		atomic_fetch_add(&sw->swaps, 1);
	}
	return NULL;
}

/* The operations sent through ws/d, and what became of them. */
enum rop { R_TOUCH_NEW, R_TOUCH, R_MKDIR, R_MKDIR_SUB, R_MKDIR_DEEP, R_DELETE, R_DELETE_TREE,
	   R_RENAME_OUT, R_RENAME_IN, R_RENAME_DIR, R_CHMOD, R_COPY_OVER, R_COPY_NEW,
	   R_COPY_TREE, R_LINK, R_LINK_FROM, R_SYMLINK, R_WRITE, R_N };

static const char *const rop_name[R_N] = {
	"touch-new", "touch", "mkdir", "mkdir-sub", "mkdir-deep", "delete", "delete-tree",
	"rename-out", "rename-in", "rename-dir", "chmod", "copy-over", "copy-new",
	"copy-tree", "link", "link-from", "symlink", "write-grant",
};

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

static void tally_reply(struct tally *t, enum rop op, cJSON *r)
{
	if (r == NULL)
		fail_msg("no reply to a %s request: the core is stuck or gone", rop_name[op]);
	if (fsbt_ok(r))
		t->ok[op]++;
	else
		tally_fail(t, op, fsbt_str(r, "errno")[0] ? fsbt_str(r, "errno") : "?",
			   fsbt_str(r, "error"));
	cJSON_Delete(r);
}

#define HOP "{\"command\":\"HostFileOperation\",\"sessionId\":\"%s\",\"operation\":"

static void race_ops_through_a_swapped_directory_never_reach_outside(void **state)
{
	struct fsbt_core *c = *state;
	char outside[PATH_MAX + 16], p[PATH_MAX * 2], d[PATH_MAX + 16], src[PATH_MAX + 16];
	char srcdir[PATH_MAX + 16], line[PATH_MAX * 2 + 256], reply[REPLY], diff[8192];
	const char *env = getenv("FSBT_RACE_SECONDS");
	unsigned seconds = env != NULL && atoi(env) > 0 ? (unsigned)atoi(env) : 10;
	struct fsbt_tree before, after;
	struct swapper sw = { .err = 0 };
	struct tally *t = calloc(1, sizeof(*t));
	struct stat canary_st, st;
	unsigned long nops = 0, nok = 0, outside_fds = 0;
	uint64_t t0, deadline;
	pthread_t th;
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

	if (renameat2(AT_FDCWD, sw.d, AT_FDCWD, sw.s, RENAME_EXCHANGE) < 0)
		fsbt_skip("renameat2(RENAME_EXCHANGE) is not available here: %s",
			  strerror(errno));
	assert_int_equal(renameat2(AT_FDCWD, sw.d, AT_FDCWD, sw.s, RENAME_EXCHANGE), 0);
	assert_int_equal(fsbt_tree_snap(outside, &before), 0);

	fd = fsbt_connect(c);
	assert_true(fd >= 0);
	atomic_init(&sw.stop, false);
	atomic_init(&sw.swaps, 0);
	assert_int_equal(pthread_create(&th, NULL, swap_loop, &sw), 0);
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
			break;
		case R_SYMLINK:
			r = fsbt_hostopf(fd, HOP "\"link\",\"from\":\"canary\",\"to\":\"%s/sym-%d\","
						 "\"symbolic\":true}",
					 s, d, n);
			break;
		case R_WRITE: {
			int got = -1;

			snprintf(p, sizeof(p), "%s/canary", d);
			fsbt_text_req(line, sizeof(line), FSBT_WRITE, p, c->session,
				      "open=0x401:0644");	/* O_WRONLY|O_APPEND */
			if (fsbt_request(fd, line, reply, sizeof(reply), &got) < 0)
				fail_msg("no reply to %s", line);
			if (strcmp(reply, "FD") == 0 && got >= 0) {
				/* The fd must be of the file judged, never the canary. */
				assert_int_equal(fstat(got, &st), 0);
				if (st.st_dev == canary_st.st_dev && st.st_ino == canary_st.st_ino)
					outside_fds++;
				close(got);
				t->ok[op]++;
			} else {
				char err[24] = "?";

				if (got >= 0)
					close(got);
				sscanf(reply, "DENY %23s", err);
				tally_fail(t, op, err, reply);
			}
			nops++;
			continue;
		}
		case R_N:
			break;
		}
		tally_reply(t, op, r);
		nops++;
	}
	atomic_store(&sw.stop, true);
	assert_int_equal(pthread_join(th, NULL), 0);
	fsbt_close(fd);
	/* Leave ws/d the directory again. */
	if (lstat(d, &st) == 0 && S_ISLNK(st.st_mode))
		assert_int_equal(renameat2(AT_FDCWD, sw.d, AT_FDCWD, sw.s, RENAME_EXCHANGE), 0);

	printf("# %lu swaps and %lu requests in %llu ms\n", (unsigned long)atomic_load(&sw.swaps),
	       nops, (unsigned long long)(fsbt_now_ms() - t0));
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
	if (sw.err != 0)
		fail_msg("the swapping thread stopped: renameat2: %s", strerror(sw.err));

	assert_int_equal(fsbt_tree_snap(outside, &after), 0);
	/* Everything: content, mode, times (directories too), link counts and
	 * ctime, which moves whenever anything touches an inode. */
	if (fsbt_tree_diff(&before, &after,
			   FSBT_TREE_MTIME | FSBT_TREE_DIR_MTIME | FSBT_TREE_CTIME | FSBT_TREE_NLINK,
			   diff, sizeof(diff)) > 0)
		fail_msg("operations through ws/d reached the directory outside:\n%s", diff);
	if (outside_fds > 0)
		fail_msg("%lu write grants for ws/d/canary handed out the canary outside",
			 outside_fds);
	fsbt_tree_free(&before);
	fsbt_tree_free(&after);
	/* A core that refuses everything proves nothing. */
	if (atomic_load(&sw.swaps) == 0 || nok < 10)
		fail_msg("only %lu operations succeeded and %lu swaps ran: the race was not "
			 "exercised",
			 nok, (unsigned long)atomic_load(&sw.swaps));
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(race_ops_through_a_swapped_directory_never_reach_outside,
						fsbt_setup_core, fsbt_teardown_core),
	};

	return fsbt_run_group(tests, NULL, NULL);
}
