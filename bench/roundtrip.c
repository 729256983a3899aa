/*
 * roundtrip.c — what a brokered request costs against the physical floor:
 * median round trip of a text request to a running `fsbroker serve` (the
 * default pack, and a pack with 200 more deny globs), against the same
 * exchange with a trivial echo server on a Unix socket. Timings are printed,
 * never judged: a benchmark does not fail on a number.
 *
 *   roundtrip FSBROKER PACK200 [ITERATIONS]
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <ftw.h>
#include <limits.h>

#define BLOCK 1000		/* iterations per turn; the rows take turns */
#define WARMUP 2000
#define READY_TIMEOUT_MS 10000

static char root[PATH_MAX], ws[PATH_MAX], target[PATH_MAX];

static void die(const char *fmt, const char *arg)
{
	fprintf(stderr, "roundtrip: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n");
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void write_file(const char *path, const char *data)
{
	FILE *f = fopen(path, "we");

	if (f == NULL || fputs(data, f) < 0 || fclose(f) != 0)
		die("cannot write %s", path);
}

static void mkdir_p(const char *path)
{
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		die("cannot create %s", path);
}

/* ------------------------------------------------------------------------ */
/* The floor: an echo server that answers like the core, with no work. */

static int echo_fd_to_pass = -1;

static void *echo_conn(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char buf[16384];
	size_t len = 0;

	for (;;) {
		ssize_t n = read(fd, buf + len, sizeof(buf) - len);
		char *nl;

		if (n <= 0)
			break;
		len += (size_t)n;
		while ((nl = memchr(buf, '\n', len)) != NULL) {
			size_t line = (size_t)(nl - buf) + 1;
			bool with_fd = memmem(buf, line, "\topen=", 6) != NULL;
			const char *reply = with_fd ? "FD\n" : "SANDBOX\n";
			struct iovec iov = { .iov_base = (void *)reply, .iov_len = strlen(reply) };
			union {
				struct cmsghdr h;
				char b[CMSG_SPACE(sizeof(int))];
			} ctl;
			struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

			if (with_fd) {
				memset(&ctl, 0, sizeof(ctl));
				msg.msg_control = ctl.b;
				msg.msg_controllen = sizeof(ctl.b);
				struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
				cm->cmsg_level = SOL_SOCKET;
				cm->cmsg_type = SCM_RIGHTS;
				cm->cmsg_len = CMSG_LEN(sizeof(int));
				memcpy(CMSG_DATA(cm), &echo_fd_to_pass, sizeof(int));
			}
			if (sendmsg(fd, &msg, MSG_NOSIGNAL) < 0)
				goto out;
			memmove(buf, buf + line, len - line);
			len -= line;
		}
	}
out:
	close(fd);
	return NULL;
}

static void *echo_server(void *arg)
{
	int lfd = (int)(intptr_t)arg;

	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		pthread_t t;

		if (fd < 0)
			break;
		pthread_create(&t, NULL, echo_conn, (void *)(intptr_t)fd);
		pthread_detach(t);
	}
	return NULL;
}

static int listen_at(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 16) < 0)
		die("cannot listen on %s", path);
	return fd;
}

static int connect_to(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		die("cannot connect to %s", path);
	return fd;
}

/* ------------------------------------------------------------------------ */
/* A core under measurement. */

struct core {
	pid_t pid;
	int ctl_in, ctl_out;
	char sock[PATH_MAX];
};

/* The round trips measure the request path; what a backup costs is
 * measured on its own (bench/backup.c). Wait for the reply, so that no
 * request below runs with backups still on. */
static bool backups_off(struct core *c, uint64_t end)
{
	static const char line[] =
		"{\"id\":\"bench-off\",\"command\":\"EnableModifyBackup\",\"enabled\":false}\n";
	char buf[4096];
	size_t len = 0;

	if (write(c->ctl_in, line, sizeof(line) - 1) != (ssize_t)(sizeof(line) - 1))
		return false;
	while (len < sizeof(buf) - 1 && now_ns() < end) {
		struct pollfd p = { .fd = c->ctl_out, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 100) <= 0)
			continue;
		n = read(c->ctl_out, buf + len, sizeof(buf) - 1 - len);
		if (n <= 0)
			return false;
		len += (size_t)n;
		buf[len] = '\0';
		if (strstr(buf, "\"id\":\"bench-off\",\"ok\":true") != NULL)
			return true;
	}
	return false;
}

static void core_start(struct core *c, const char *bin, const char *name, const char *rules)
{
	char state[PATH_MAX + 32], sockdir[PATH_MAX + 32], log[PATH_MAX + 32], buf[4096];
	int in[2], out[2];
	size_t len = 0;
	uint64_t end;

	snprintf(state, sizeof(state), "%s/state-%s", root, name);
	snprintf(sockdir, sizeof(sockdir), "%s/sock-%s", root, name);
	snprintf(c->sock, sizeof(c->sock), "%s/broker.sock", sockdir);
	snprintf(log, sizeof(log), "%s/core-%s.log", root, name);
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0)
		die("pipe: %s", strerror(errno));
	c->pid = fork();
	if (c->pid == 0) {
		const char *argv[] = { bin, "serve", "--socket", c->sock, "--session", "bench",
				       "--state-dir", state, "--workspace", ws,
				       rules ? "--rules" : NULL, rules, NULL };
		int lfd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGPIPE, SIG_DFL);
		if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0 || lfd < 0 || dup2(lfd, 2) < 0)
			_exit(127);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	c->ctl_in = in[1];
	c->ctl_out = out[0];
	/* Wait for {"event":"ready"}. */
	end = now_ns() + (uint64_t)READY_TIMEOUT_MS * 1000000u;
	while (len < sizeof(buf) - 1) {
		struct pollfd p = { .fd = c->ctl_out, .events = POLLIN };
		ssize_t n;

		if (now_ns() >= end || poll(&p, 1, 100) < 0)
			break;
		if (!(p.revents & (POLLIN | POLLHUP)))
			continue;
		n = read(c->ctl_out, buf + len, sizeof(buf) - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
		buf[len] = '\0';
		if (strstr(buf, "\"event\":\"ready\"") != NULL)
			break;
	}
	if (strstr(buf, "\"event\":\"ready\"") != NULL && backups_off(c, end))
		return;
	fprintf(stderr, "roundtrip: the %s core did not start; see %s:\n", name, log);
	snprintf(buf, sizeof(buf), "cat '%s' >&2", log);
	if (system(buf) != 0)
		(void)0;
	exit(1);
}

static void core_stop(struct core *c)
{
	static const char line[] = "{\"id\":1,\"command\":\"Shutdown\"}\n";
	int status;

	if (write(c->ctl_in, line, sizeof(line) - 1) < 0)
		(void)0;	/* already gone: reaped below */
	for (int i = 0; i < 1000; i++) {
		if (waitpid(c->pid, &status, WNOHANG) == c->pid)
			goto done;
		usleep(10000);
	}
	kill(c->pid, SIGKILL);
	waitpid(c->pid, &status, 0);
done:
	close(c->ctl_in);
	close(c->ctl_out);
}

/* ------------------------------------------------------------------------ */
/* One exchange: send a request line, read one reply line and its fd. */

static void exchange(int fd, const char *line, size_t len, const char *want)
{
	char buf[4096];
	size_t got = 0;
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} ctl;

	if (write(fd, line, len) != (ssize_t)len)
		die("send: %s", strerror(errno));
	for (;;) {
		struct iovec iov = { .iov_base = buf + got, .iov_len = sizeof(buf) - 1 - got };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
				      .msg_control = ctl.b, .msg_controllen = sizeof(ctl.b) };
		ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
		struct cmsghdr *cm;

		if (n <= 0)
			die("no reply: %s", n == 0 ? "connection closed" : strerror(errno));
		cm = CMSG_FIRSTHDR(&msg);
		if (cm != NULL && cm->cmsg_type == SCM_RIGHTS) {
			int passed;

			memcpy(&passed, CMSG_DATA(cm), sizeof(int));
			close(passed);
		}
		got += (size_t)n;
		if (buf[got - 1] == '\n')
			break;
	}
	buf[got - 1] = '\0';
	if (strcmp(buf, want) != 0) {
		fprintf(stderr, "roundtrip: expected \"%s\", got \"%s\"\n", want, buf);
		exit(1);
	}
}

struct row {
	const char *name;
	int fd;
	const char *line;
	size_t len;
	const char *want;
	int baseline;		/* the row it is compared with, or -1 */
	uint64_t *ns;
	size_t n;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double pct(struct row *r, double p)
{
	size_t i = (size_t)(p * (double)(r->n - 1) + 0.5);

	return (double)r->ns[i] / 1000.0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

int main(int argc, char **argv)
{
	char p[PATH_MAX + 64], echo_sock[PATH_MAX + 64];
	char read_line[PATH_MAX + 128], write_line[PATH_MAX + 128];
	long iterations = argc > 3 ? atol(argv[3]) : 20000;
	struct core def, big;
	pthread_t echo;
	int echo_l;

	if (argc < 3) {
		fprintf(stderr, "usage: roundtrip FSBROKER PACK200 [ITERATIONS]\n");
		return 2;
	}
	if (iterations < BLOCK)
		iterations = BLOCK;
	iterations -= iterations % BLOCK;
	signal(SIGPIPE, SIG_IGN);

	/* Layout: the same as the tests use, HOME and TMPDIR included. */
	snprintf(root, sizeof(root), "/tmp/fsb-bench.XXXXXX");
	if (mkdtemp(root) == NULL)
		die("mkdtemp: %s", strerror(errno));
	snprintf(p, sizeof(p), "%s/home", root);
	mkdir_p(p);
	setenv("HOME", p, 1);
	snprintf(p, sizeof(p), "%s/tmp", root);
	mkdir_p(p);
	setenv("TMPDIR", p, 1);
	snprintf(ws, sizeof(ws), "%s/ws", root);
	mkdir_p(ws);
	snprintf(p, sizeof(p), "%s/src", ws);
	mkdir_p(p);
	snprintf(target, sizeof(target), "%s/src/main.c", ws);
	write_file(target, "int main(void) { return 0; }\n");
	snprintf(read_line, sizeof(read_line), "fsbroker.read\t%s\tbench\ttc-1\n", target);
	snprintf(write_line, sizeof(write_line), "fsbroker.read-write\t%s\tbench\ttc-1\topen=0x1:0\n",
		 target);

	snprintf(p, sizeof(p), "%s/echo", root);
	mkdir_p(p);
	snprintf(echo_sock, sizeof(echo_sock), "%s/echo/echo.sock", root);
	echo_l = listen_at(echo_sock);
	echo_fd_to_pass = open(target, O_WRONLY | O_CLOEXEC);
	pthread_create(&echo, NULL, echo_server, (void *)(intptr_t)echo_l);
	pthread_detach(echo);
	core_start(&def, argv[1], "default", NULL);
	core_start(&big, argv[1], "200", argv[2]);

#define ROW(n, sock, l, w, base) \
	{ .name = (n), .fd = connect_to(sock), .line = (l), .want = (w), .baseline = (base) }
	struct row rows[] = {
		ROW("bare Unix-socket round trip (baseline)", echo_sock, read_line, "SANDBOX", -1),
		ROW("bare round trip passing an fd (baseline)", echo_sock, write_line, "FD", -1),
		ROW("brokered read, default pack (SANDBOX)", def.sock, read_line, "SANDBOX", 0),
		ROW("brokered read, 200-rule pack (SANDBOX)", big.sock, read_line, "SANDBOX", 0),
		ROW("brokered write, default pack (FD, no backup)", def.sock, write_line, "FD", 1),
		ROW("brokered write, 200-rule pack (FD, no backup)", big.sock, write_line, "FD", 1),
	};
#undef ROW
	const size_t nrows = sizeof(rows) / sizeof(rows[0]);

	for (size_t r = 0; r < nrows; r++) {
		rows[r].len = strlen(rows[r].line);
		rows[r].ns = calloc((size_t)iterations, sizeof(uint64_t));
		if (rows[r].ns == NULL)
			die("%s", "out of memory");
		for (int i = 0; i < WARMUP; i++)
			exchange(rows[r].fd, rows[r].line, rows[r].len, rows[r].want);
	}
	/* The rows take turns, so a slow moment of the machine hits them all. */
	for (long done = 0; done < iterations; done += BLOCK) {
		for (size_t r = 0; r < nrows; r++) {
			struct row *w = &rows[r];

			for (int i = 0; i < BLOCK; i++) {
				uint64_t t0 = now_ns();

				exchange(w->fd, w->line, w->len, w->want);
				w->ns[w->n++] = now_ns() - t0;
			}
		}
	}

	printf("Round trips: %ld per row, taken in turns of %d; the request line is %zu bytes.\n\n",
	       iterations, BLOCK, strlen(read_line));
	/* "µs" and "÷" are two bytes each: the header is spelled out. */
	printf("%-44s  median µs     p99 µs   ÷ baseline\n", "");
	for (size_t r = 0; r < nrows; r++) {
		struct row *w = &rows[r];

		qsort(w->ns, w->n, sizeof(uint64_t), cmp_u64);
		printf("%-44s %10.2f %10.2f", w->name, pct(w, 0.5), pct(w, 0.99));
		if (w->baseline >= 0)
			printf(" %12.2f\n", pct(w, 0.5) / pct(&rows[w->baseline], 0.5));
		else
			printf(" %12s\n", "1.00");
	}
	printf("\n(aim: brokered ÷ baseline ≤ 1.3; printed, never enforced)\n");

	for (size_t r = 0; r < nrows; r++) {
		close(rows[r].fd);
		free(rows[r].ns);
	}
	core_stop(&def);
	core_stop(&big);
	close(echo_l);
	nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
	return 0;
}
