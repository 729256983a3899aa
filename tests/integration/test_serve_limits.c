/*
 * test_serve_limits.c — the core at the edge of its resources and with
 * clients that misbehave: out of file descriptors (a low RLIMIT_NOFILE set
 * on the running core, used up by connections), clients that stall in the
 * middle of a line, trickle one byte a second or never read their replies,
 * and 10,000 idle connections. Requests fail closed while it lasts, other
 * clients are answered, and the core serves again afterwards. Deadlines
 * here only detect a hang; nothing asserts a time.
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define REPLY 8192
#define HANG_MS 30000
#define SPARE_FDS 12

/* The number of fds the core has open with a number below `below` (0: all). */
static int core_fds_below(const struct fsbt_core *c, int below)
{
	char p[64];
	struct dirent *de;
	int n = 0;
	DIR *d;

	snprintf(p, sizeof(p), "/proc/%d/fd", (int)c->pid);
	if ((d = opendir(p)) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL)
		n += de->d_name[0] != '.' && (below == 0 || atoi(de->d_name) < below);
	closedir(d);
	return n;
}

static int core_fds(const struct fsbt_core *c)
{
	return core_fds_below(c, 0);
}

/* A plain connection to the core's socket, no harness reader (any fd). */
static int raw_connect(const struct fsbt_core *c)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = HANG_MS / 1000 };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	/* A full listen backlog blocks connect this long at most. */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", c->sock);
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

static void request(struct fsbt_core *c, int fd, const char *cls, const char *path,
		    const char *spec, char *reply, int *got)
{
	char line[PATH_MAX + 256];

	fsbt_text_req(line, sizeof(line), cls, path, c->session, spec);
	if (fsbt_request(fd, line, reply, REPLY, got) < 0)
		fail_msg("no reply to %s", line);
}

static bool same_file(const char *path, const struct stat *before, const char *bytes)
{
	struct stat st;
	char *have = fsbt_read_file(path, NULL);
	bool same = have != NULL && strcmp(have, bytes) == 0 && lstat(path, &st) == 0 &&
		    st.st_mtim.tv_nsec == before->st_mtim.tv_nsec &&
		    st.st_mtim.tv_sec == before->st_mtim.tv_sec &&
		    st.st_ctim.tv_nsec == before->st_ctim.tv_nsec &&
		    st.st_ctim.tv_sec == before->st_ctim.tv_sec;

	free(have);
	return same;
}

/* ------------------------------------------------------------------------ */

/*
 * EMFILE: the running core's RLIMIT_NOFILE is lowered to what it has open
 * plus a few, and connections use up the rest. A write grant, a create and
 * a host rename on a connection it holds are refused, nothing is touched,
 * and the core lives. With the extra connections closed it grants again.
 */
static void out_of_fds_requests_fail_closed_and_serving_resumes(void **state)
{
	struct fsbt_core *c = *state;
	char old[PATH_MAX + 16], fresh[PATH_MAX + 16], moved[PATH_MAX + 16], reply[REPLY];
	int extra[64], nextra = 0, fd, got = -1, base, refused = 0;
	struct rlimit lim, was;
	struct stat before;
	uint64_t deadline;
	cJSON *r;

	snprintf(old, sizeof(old), "%s/old.txt", c->ws);
	snprintf(fresh, sizeof(fresh), "%s/fresh.txt", c->ws);
	snprintf(moved, sizeof(moved), "%s/moved.txt", c->ws);
	fsbt_write_file(old, "old bytes\n");
	assert_int_equal(lstat(old, &before), 0);

	/* The connection that stays, accepted and known before the limit. */
	fd = fsbt_connect(c);
	assert_true(fd >= 0);
	request(c, fd, FSBT_READ, old, NULL, reply, &got);
	assert_string_equal(reply, "SANDBOX");

	base = core_fds(c);
	assert_true(base > 0);
	/* Room for a few connections; a backup alone needs more than that. */
	lim.rlim_cur = lim.rlim_max = (rlim_t)base + SPARE_FDS;
	if (prlimit(c->pid, RLIMIT_NOFILE, &lim, &was) < 0)
		fsbt_skip("cannot set the core's RLIMIT_NOFILE: %s", strerror(errno));
	printf("# the core has %d fds open; its limit is now %d\n", base, base + SPARE_FDS);

	/* Connect until the core's table is full and the rest wait in the
	 * listen backlog. */
	for (; nextra < 64; nextra++)
		assert_true((extra[nextra] = raw_connect(c)) >= 0);
	deadline = fsbt_now_ms() + HANG_MS;
	while (core_fds_below(c, base + SPARE_FDS) < base + SPARE_FDS && fsbt_now_ms() < deadline)
		fsbt_sleep_ms(20);
	assert_int_equal(core_fds_below(c, base + SPARE_FDS), base + SPARE_FDS);

	/* Everything that needs a new fd fails, closed. */
	request(c, fd, FSBT_WRITE, old, FSBT_OPEN_WRITE, reply, &got);
	printf("# write grant of an existing file: %s\n", reply);
	assert_int_equal(got, -1);
	assert_true(fsbt_starts(reply, "DENY "));
	request(c, fd, FSBT_WRITE, fresh, "open=0xc1:0644", reply, &got);
	printf("# create of a new file: %s\n", reply);
	assert_int_equal(got, -1);
	assert_true(fsbt_starts(reply, "DENY "));
	r = fsbt_hostopf(fd, "{\"id\":1,\"command\":\"HostFileOperation\",\"sessionId\":\"%s\","
			 "\"toolCallId\":\"%s\",\"operation\":\"rename\",\"from\":\"%s\","
			 "\"to\":\"%s\"}", c->session, FSBT_TOOL_CALL, old, moved);
	assert_non_null(r);
	printf("# host rename: ok:%s %s %s\n", fsbt_ok(r) ? "true" : "false",
	       fsbt_str(r, "errno"), fsbt_str(r, "error"));
	assert_false(fsbt_ok(r));
	cJSON_Delete(r);
	if (!same_file(old, &before, "old bytes\n"))
		fail_msg("%s was touched while the core had no fds", old);
	assert_int_equal(access(fresh, F_OK), -1);
	assert_int_equal(access(moved, F_OK), -1);
	assert_int_equal(fsbt_core_wait_exit(c, 0), -ETIMEDOUT);

	/* The extra connections go; the core accepts and drops what waited,
	 * and grants again (retried while the backlog drains). */
	for (int i = 0; i < nextra; i++)
		close(extra[i]);
	/* Every fd of a refused request went back: the core is down to what
	 * it had (the limit raised again so that a leak would show). */
	prlimit(c->pid, RLIMIT_NOFILE, &was, NULL);
	deadline = fsbt_now_ms() + HANG_MS;
	while (core_fds(c) > base && fsbt_now_ms() < deadline)
		fsbt_sleep_ms(20);
	printf("# after the extra connections closed the core has %d fds open\n", core_fds(c));
	assert_int_equal(core_fds(c), base);
	assert_int_equal(prlimit(c->pid, RLIMIT_NOFILE, &lim, NULL), 0);
	deadline = fsbt_now_ms() + HANG_MS;
	for (;;) {
		request(c, fd, FSBT_WRITE, old, FSBT_OPEN_WRITE, reply, &got);
		if (strcmp(reply, "FD") == 0)
			break;
		refused++;
		if (fsbt_now_ms() > deadline)
			fail_msg("the core still refuses after the connections closed: %s", reply);
		fsbt_sleep_ms(50);
	}
	assert_true(got >= 0);
	assert_int_equal(write(got, "new\n", 4), 4);
	close(got);
	printf("# granted again after %d more refusals\n", refused);
	fsbt_close(fd);
	/* A new client is served too. */
	fd = fsbt_connect(c);
	assert_true(fd >= 0);
	request(c, fd, FSBT_READ, old, NULL, reply, &got);
	assert_string_equal(reply, "SANDBOX");
	fsbt_close(fd);
	prlimit(c->pid, RLIMIT_NOFILE, &was, NULL);
}

/* ------------------------------------------------------------------------ */
/* Slow and stalled clients. */

struct slow {
	struct fsbt_core *core;
	char line[PATH_MAX + 256];
	atomic_int stop;
	int fd;
	size_t sent;
};

/* One byte a second of a request line until told to stop. */
static void *trickle(void *arg)
{
	struct slow *s = arg;

	while (!atomic_load(&s->stop) && s->sent + 1 < strlen(s->line)) {
		if (send(s->fd, s->line + s->sent, 1, MSG_NOSIGNAL) != 1)
			break;
		s->sent++;
		for (int i = 0; i < 10 && !atomic_load(&s->stop); i++)
			fsbt_sleep_ms(100);
	}
	return NULL;
}

static void slow_and_stalled_clients_do_not_hold_up_others(void **state)
{
	struct fsbt_core *c = *state;
	char p[PATH_MAX + 16], line[PATH_MAX + 256], reply[REPLY];
	struct slow drip = { .core = c };
	int half, deaf, normal, got = -1, flags;
	size_t deaf_sent = 0, deaf_lines = 0;
	pthread_t tid;
	uint64_t t0;

	snprintf(p, sizeof(p), "%s/a.txt", c->ws);
	fsbt_write_file(p, "a\n");
	fsbt_text_req(line, sizeof(line), FSBT_READ, p, c->session, NULL);

	/* Half a line, then nothing. */
	half = fsbt_connect(c);
	assert_true(half >= 0);
	assert_int_equal(send(half, line, strlen(line) / 2, MSG_NOSIGNAL),
			 (ssize_t)(strlen(line) / 2));

	/* One byte a second. */
	drip.fd = fsbt_connect(c);
	assert_true(drip.fd >= 0);
	snprintf(drip.line, sizeof(drip.line), "%s\n", line);
	atomic_init(&drip.stop, 0);
	assert_int_equal(pthread_create(&tid, NULL, trickle, &drip), 0);

	/* Never reads: requests until its socket pushes back (both buffers
	 * full, the core's reply queue at its high-water mark). */
	deaf = raw_connect(c);
	assert_true(deaf >= 0);
	flags = fcntl(deaf, F_GETFL);
	fcntl(deaf, F_SETFL, flags | O_NONBLOCK);
	{
		char batch[64 * 1024];
		size_t ll = strlen(line), n = 0;
		int idle = 0;

		while (n + ll + 1 <= sizeof(batch)) {
			memcpy(batch + n, line, ll);
			batch[n + ll] = '\n';
			n += ll + 1;
		}
		t0 = fsbt_now_ms();
		/* Until three pauses of 200 ms in a row take nothing. */
		while (idle < 3 && fsbt_now_ms() - t0 < HANG_MS) {
			ssize_t w = send(deaf, batch + deaf_sent % n, n - deaf_sent % n,
					 MSG_NOSIGNAL);

			if (w > 0) {
				deaf_sent += (size_t)w;
				idle = 0;
			} else {
				idle++;
				fsbt_sleep_ms(200);
			}
		}
		deaf_lines = deaf_sent / (ll + 1);
	}
	printf("# the client that never reads sent %zu requests (%zu KiB) before it "
	       "was pushed back\n", deaf_lines, deaf_sent / 1024);
	assert_true(deaf_lines > 0);

	/* Meanwhile a normal client is answered, every time. */
	normal = fsbt_connect(c);
	assert_true(normal >= 0);
	for (int i = 0; i < 200; i++) {
		request(c, normal, FSBT_READ, p, NULL, reply, &got);
		assert_string_equal(reply, "SANDBOX");
		if (i % 20 == 0)
			fsbt_sleep_ms(100);	/* spread over the trickle */
	}
	printf("# 200 requests of a normal client answered while the trickle had sent %zu "
	       "bytes\n", drip.sent);
	assert_true(drip.sent > 0);

	/* The trickle ends its line at once: it is answered whole. */
	atomic_store(&drip.stop, 1);
	pthread_join(tid, NULL);
	assert_int_equal(fsbt_send(drip.fd, drip.line + drip.sent,
				   strlen(drip.line) - drip.sent - 1, -1), 0);
	assert_true(fsbt_read_reply(drip.fd, reply, sizeof(reply), &got) > 0);
	assert_string_equal(reply, "SANDBOX");
	fsbt_close(drip.fd);

	/* The deaf client starts reading: every reply it asked for is there
	 * (the core paused reading it instead of dropping or hoarding). */
	fcntl(deaf, F_SETFL, flags);
	{
		struct timeval tv = { .tv_sec = HANG_MS / 1000 };
		size_t lines = 0;
		char buf[65536];

		/* A line its last send may have left half sent stays so: sending
		 * more now would block on a socket full both ways. */
		setsockopt(deaf, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		while (lines < deaf_lines) {
			ssize_t n = recv(deaf, buf, sizeof(buf), 0);

			if (n <= 0)
				fail_msg("the client that did not read got %zu of %zu replies (%s)",
					 lines, deaf_lines, n == 0 ? "closed" : strerror(errno));
			for (ssize_t i = 0; i < n; i++)
				lines += buf[i] == '\n';
		}
		printf("# it then read all %zu replies\n", lines);
	}
	close(deaf);

	/* The half line is still only half: the core neither answered nor
	 * dropped it; ended now, it is answered. */
	assert_int_equal(fsbt_send(half, line + strlen(line) / 2,
				   strlen(line) - strlen(line) / 2, -1), 0);
	assert_true(fsbt_read_reply(half, reply, sizeof(reply), &got) > 0);
	assert_string_equal(reply, "SANDBOX");
	fsbt_close(half);
	fsbt_close(normal);
	assert_int_equal(fsbt_core_wait_exit(c, 0), -ETIMEDOUT);
}

/* ------------------------------------------------------------------------ */

#define IDLE 10000

static void ten_thousand_idle_connections_and_a_new_client_is_answered(void **state)
{
	struct fsbt_core *c = *state;
	/* One fd a connection in the core, its socket, and one here. */
	struct rlimit want, mine;
	char p[PATH_MAX + 16], reply[REPLY];
	int *fds = calloc(IDLE, sizeof(int)), fd, got = -1, idle = IDLE;
	long rss0, rss1;
	uint64_t deadline;
	double accepted = 0;
	cJSON *st;

	assert_non_null(fds);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &mine), 0);
	want.rlim_cur = want.rlim_max = IDLE + 256;
	/* Without CAP_SYS_RESOURCE the hard limit is the ceiling: as many as
	 * fit, and a skip that says so at the end. */
	if (mine.rlim_max != RLIM_INFINITY && mine.rlim_max < want.rlim_max) {
		struct rlimit up = want;

		if (setrlimit(RLIMIT_NOFILE, &up) < 0) {
			want.rlim_cur = want.rlim_max = mine.rlim_max;
			idle = (int)(mine.rlim_max - 256);
		}
	}
	if (idle < 1000) {
		free(fds);
		fsbt_skip("RLIMIT_NOFILE's hard limit %lu leaves room for %d connections only",
			  (unsigned long)mine.rlim_max, idle);
	}
	if (setrlimit(RLIMIT_NOFILE, &want) < 0 || prlimit(c->pid, RLIMIT_NOFILE, &want, NULL) < 0) {
		free(fds);
		fsbt_skip("cannot raise RLIMIT_NOFILE to %lu: %s", (unsigned long)want.rlim_cur,
			  strerror(errno));
	}
	snprintf(p, sizeof(p), "%s/a.txt", c->ws);
	fsbt_write_file(p, "a\n");
	rss0 = fsbt_core_rss_kib(c);

	for (int i = 0; i < idle; i++) {
		/* The listen backlog is finite: wait for the core to catch up. */
		deadline = fsbt_now_ms() + HANG_MS;
		while ((fds[i] = raw_connect(c)) == -EAGAIN && fsbt_now_ms() < deadline)
			fsbt_sleep_ms(10);
		if (fds[i] < 0)
			fail_msg("connection %d: %s", i, strerror(-fds[i]));
	}
	deadline = fsbt_now_ms() + HANG_MS;
	while (fsbt_now_ms() < deadline) {
		st = fsbt_control_cmd(c, "Stats", NULL);
		accepted = fsbt_num(st, "connections");
		cJSON_Delete(st);
		if (accepted >= idle)
			break;
		fsbt_sleep_ms(100);
	}
	rss1 = fsbt_core_rss_kib(c);
	printf("# %.0f connections accepted, %d fds open in the core; its RSS %ld KiB before, "
	       "%ld KiB with them (%.1f KiB each)\n", accepted, core_fds(c), rss0, rss1,
	       (double)(rss1 - rss0) / idle);
	assert_true(accepted >= idle);
	/* An idle connection costs the core its socket and nothing else. */
	assert_true(core_fds(c) <= idle + 64);

	/* A new client, on a low fd number the harness can read. */
	close(fds[0]);
	fd = fsbt_connect(c);
	assert_true(fd >= 0);
	request(c, fd, FSBT_READ, p, NULL, reply, &got);
	assert_string_equal(reply, "SANDBOX");
	fsbt_close(fd);
	for (int i = 1; i < idle; i++)
		close(fds[i]);
	free(fds);
	assert_int_equal(fsbt_core_wait_exit(c, 0), -ETIMEDOUT);
	if (idle < IDLE)
		fsbt_skip("ran with %d idle connections, not %d: the hard RLIMIT_NOFILE is %lu "
			  "(raising it needs CAP_SYS_RESOURCE)", idle, IDLE,
			  (unsigned long)mine.rlim_max);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fsbt_setup_core, fsbt_teardown_core)
	const struct CMUnitTest tests[] = {
		T(out_of_fds_requests_fail_closed_and_serving_resumes),
		T(slow_and_stalled_clients_do_not_hold_up_others),
		T(ten_thousand_idle_connections_and_a_new_client_is_answered),
	};

	return fsbt_run_group(tests, NULL, NULL);
}
