/*
 * backup.c — what the backup store costs, all in one run on this machine:
 *
 *  1. a write grant (open=0x241: O_WRONLY|O_CREAT|O_TRUNC) of an existing
 *     4 KiB, 1 MiB and 64 MiB file through a running `fsbroker serve`, with
 *     the session's backups on (fileBackupMaxSizeMB 4096) against off
 *     (EnableModifyBackup on the core's stdin, switched before every grant);
 *  2. fsb_store_record of a 64 MiB file in this process against `cp` of it
 *     on the same filesystem (fork/exec of /bin/cp), with and without an
 *     fdatasync of the copy, since the store fsyncs what it writes;
 *  3. the same file recorded a second time in the cycle with no write grant
 *     in between (the store reuses its copy) against the first record;
 *  4. what one change costs the store, by kind, in microseconds and in
 *     fsync/fdatasync calls (counted by this program's own fsync and
 *     fdatasync, which stand in for libc's): the journal line of a created
 *     path, the first backup of an existing 4 KiB file, a second change of
 *     a path this tool call already backed up in the cycle (after a write
 *     grant), and first backups made by 4 threads at once, each taking the
 *     session's store lock as the core does.
 *
 * Before every timed grant or record the file gets new content, written and
 * fdatasynced outside the timing: every backup copies fresh data from a file
 * that is clean in the page cache; after it, the copy's page cache is
 * dropped (see drop_cache). Medians are printed, never judged: the benchmark
 * fails only when it cannot run, or when the core's journal does not name
 * one object per grant made with backups on (then it measured nothing).
 *
 *   backup FSBROKER [RUNS]      RUNS of the 64 MiB cases (default 7); the
 *                               1 MiB and 4 KiB grants run 3x and 5x as many
 *   backup --changes [N]        only part 4, N changes of each kind (1000)
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
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
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backup.h"

#define READY_TIMEOUT_MS 10000
#define REPLY_TIMEOUT_MS 30000
#define SESSION "bench"
#define BIG ((size_t)64 << 20)

static char root[PATH_MAX], ws[PATH_MAX];
static unsigned char *pattern;	/* BIG bytes of noise; its head is stamped */
static uint64_t stamp;		/* makes every content written unique */

/* Every fsync and fdatasync of this process, the store's included: these
 * take the place of libc's. */
static unsigned long nsyncs;

int fsync(int fd)
{
	__atomic_add_fetch(&nsyncs, 1, __ATOMIC_RELAXED);
	return (int)syscall(SYS_fsync, fd);
}

int fdatasync(int fd)
{
	__atomic_add_fetch(&nsyncs, 1, __ATOMIC_RELAXED);
	return (int)syscall(SYS_fdatasync, fd);
}

static void die(const char *fmt, const char *arg)
{
	fprintf(stderr, "backup: ");
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

static void mkdir_p(const char *path)
{
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		die("cannot create %s", path);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Median in milliseconds; sorts the samples. */
static double median_ms(uint64_t *ns, size_t n)
{
	qsort(ns, n, sizeof(*ns), cmp_u64);
	if (n % 2)
		return (double)ns[n / 2] / 1e6;
	return ((double)ns[n / 2 - 1] + (double)ns[n / 2]) / 2e6;
}

/*
 * Give `path` `size` bytes of content no earlier call wrote, and make it
 * clean (fdatasync): what a timed copy then reads is in the page cache, and
 * no writeback of it runs during the timing.
 */
static void fresh_content(const char *path, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	size_t off = 0;

	stamp++;
	memcpy(pattern, &stamp, sizeof(stamp));
	if (fd < 0)
		die("cannot open %s", path);
	while (off < size) {
		ssize_t n = pwrite(fd, pattern + off, size - off, (off_t)off);

		if (n <= 0)
			die("cannot write %s", path);
		off += (size_t)n;
	}
	if (ftruncate(fd, (off_t)size) < 0 || fdatasync(fd) < 0 || close(fd) < 0)
		die("cannot write %s", path);
}

/*
 * Drop the page cache of every object under `dir` (not timed). A copy's
 * pages are handed back after each case, the store's by this and cp's by
 * removing its copy, so every case takes its page cache from the same pool:
 * in a virtual machine, memory the guest never touched before costs a host
 * fault per page, which would otherwise land on whichever case comes next.
 */
static int drop_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	int fd;

	(void)ftw;
	if (flag != FTW_F || !S_ISREG(st->st_mode))
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		close(fd);
	}
	return 0;
}

static void drop_cache(const char *dir)
{
	nftw(dir, drop_one, 16, FTW_PHYS | FTW_MOUNT);
}

static const char *fs_name(long type)
{
	switch ((unsigned long)type & 0xffffffffu) {
	case 0xef53:
		return "ext2/3/4";
	case 0x01021994:
		return "tmpfs";
	case 0x58465342:
		return "xfs";
	case 0x9123683e:
		return "btrfs";
	case 0x794c7630:
		return "overlayfs";
	case 0x2fc12fc1:
		return "zfs";
	case 0xf2f52010:
		return "f2fs";
	case 0xca451a4e:
		return "bcachefs";
	case 0x6969:
		return "nfs";
	case 0x65735546:
		return "fuse";
	case 0x858458f6:
		return "ramfs";
	}
	return "unknown";
}

/* ------------------------------------------------------------------------ */
/* The core, as bench/roundtrip.c starts it, with a line reader on stdout. */

struct core {
	pid_t pid;
	int ctl_in, ctl_out;
	char sock[PATH_MAX + 32], state[PATH_MAX + 32], log[PATH_MAX + 32];
	char buf[8192];
	size_t len;
	int next_id;
};

/* The next line the core writes on stdout, without its newline. */
static char *core_line(struct core *c, int timeout_ms)
{
	static char line[sizeof(c->buf)];
	uint64_t end = now_ns() + (uint64_t)timeout_ms * 1000000u;

	for (;;) {
		char *nl = memchr(c->buf, '\n', c->len);
		struct pollfd p = { .fd = c->ctl_out, .events = POLLIN };
		ssize_t n;

		if (nl != NULL) {
			size_t l = (size_t)(nl - c->buf);

			memcpy(line, c->buf, l);
			line[l] = '\0';
			memmove(c->buf, nl + 1, c->len - l - 1);
			c->len -= l + 1;
			return line;
		}
		if (c->len == sizeof(c->buf))
			c->len = 0;	/* a line longer than we care for */
		if (now_ns() >= end || poll(&p, 1, 100) < 0)
			return NULL;
		if (!(p.revents & (POLLIN | POLLHUP)))
			continue;
		n = read(c->ctl_out, c->buf + c->len, sizeof(c->buf) - c->len);
		if (n <= 0)
			return NULL;
		c->len += (size_t)n;
	}
}

static void core_failed(struct core *c, const char *what)
{
	char cmd[PATH_MAX + 64];

	fprintf(stderr, "backup: the core %s; see %s:\n", what, c->log);
	snprintf(cmd, sizeof(cmd), "cat '%s' >&2", c->log);
	if (system(cmd) != 0)
		(void)0;
	exit(1);
}

static void core_start(struct core *c, const char *bin)
{
	char sockdir[PATH_MAX + 32];
	const char *l;
	int in[2], out[2];

	memset(c, 0, sizeof(*c));
	snprintf(c->state, sizeof(c->state), "%s/state-core", root);
	snprintf(sockdir, sizeof(sockdir), "%s/sock", root);
	snprintf(c->sock, sizeof(c->sock), "%s/broker.sock", sockdir);
	snprintf(c->log, sizeof(c->log), "%s/core.log", root);
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0)
		die("pipe: %s", strerror(errno));
	c->pid = fork();
	if (c->pid < 0)
		die("fork: %s", strerror(errno));
	if (c->pid == 0) {
		const char *argv[] = { bin, "serve", "--socket", c->sock, "--session", SESSION,
				       "--state-dir", c->state, "--workspace", ws, NULL };
		int lfd = open(c->log, O_WRONLY | O_CREAT | O_TRUNC, 0600);

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
	c->next_id = 1;
	while ((l = core_line(c, READY_TIMEOUT_MS)) != NULL)
		if (strstr(l, "\"event\":\"ready\"") != NULL)
			return;
	core_failed(c, "did not start");
}

/* Send one control command (`body` is what follows the id) and wait for
 * its reply, which must say ok. */
static void core_control(struct core *c, const char *body)
{
	char req[512], idkey[32];
	const char *l;
	int id = c->next_id++;
	size_t n;

	n = (size_t)snprintf(req, sizeof(req), "{\"id\":%d,%s}\n", id, body);
	snprintf(idkey, sizeof(idkey), "\"id\":%d,", id);
	if (write(c->ctl_in, req, n) != (ssize_t)n)
		core_failed(c, "does not read its control channel");
	while ((l = core_line(c, REPLY_TIMEOUT_MS)) != NULL) {
		if (strstr(l, idkey) == NULL)
			continue;	/* an event, or another reply */
		if (strstr(l, "\"ok\":true") == NULL) {
			fprintf(stderr, "backup: the core refused %s: %s\n", req, l);
			exit(1);
		}
		return;
	}
	core_failed(c, "did not answer a control command");
}

static void core_backup(struct core *c, bool on)
{
	core_control(c, on ? "\"command\":\"EnableModifyBackup\",\"enabled\":true,"
			     "\"fileBackupMaxSizeMB\":4096"
			   : "\"command\":\"EnableModifyBackup\",\"enabled\":false");
}

static void core_stop(struct core *c)
{
	static const char line[] = "{\"id\":0,\"command\":\"Shutdown\"}\n";
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

static int connect_to(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		die("cannot connect to %s", path);
	return fd;
}

/* One grant: send the request, read "FD" and the descriptor, close it. */
static void grant(int fd, const char *line)
{
	char buf[4096];
	size_t got = 0, len = strlen(line);
	bool had_fd = false;
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
			had_fd = true;
		}
		got += (size_t)n;
		if (buf[got - 1] == '\n' || got == sizeof(buf) - 1)
			break;
	}
	buf[got - 1] = '\0';
	if (strcmp(buf, "FD") != 0 || !had_fd) {
		fprintf(stderr, "backup: expected \"FD\" and a descriptor, got \"%s\"\n", buf);
		exit(1);
	}
}

/* Journal lines of the core's open cycle that name an object. */
static long backed_up_grants(const struct core *c)
{
	char path[PATH_MAX + 128], line[16384];
	long n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/sessions/%s/modify_backup/cycles/1/journal.jsonl",
		 c->state, SESSION);
	if ((f = fopen(path, "re")) == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strstr(line, "\"object\":\"") != NULL)
			n++;
	fclose(f);
	return n;
}

/* ------------------------------------------------------------------------ */
/* The table. */

static void row(const char *label, double ms, double base_ms)
{
	if (base_ms > 0)
		printf("  %-50s %10.3f %12.2f\n", label, ms, ms / base_ms);
	else
		printf("  %-50s %10.3f %12s\n", label, ms, "1.00");
}

/* ------------------------------------------------------------------------ */
/*
 * A write-open request for `path` under a tool call of its own: a grant of
 * a path its tool call already backed up in the cycle copies nothing (the
 * first record holds what a restore needs), and each timed grant must copy.
 */
static const char *grant_line(char *line, size_t len, const char *path)
{
	static unsigned long tool_call;

	snprintf(line, len, "fsbroker.read-write\t%s\t" SESSION "\ttc-%lu\topen=0x241:0644\n",
		 path, ++tool_call);
	return line;
}

/* 1. Write grants through the core, backups on and off. */

static void grants(const char *bin, int runs)
{
	static const struct {
		const char *name;
		size_t size;
		int factor;
	} sizes[] = { { "4 KiB", 4096, 5 }, { "1 MiB", (size_t)1 << 20, 3 }, { "64 MiB", BIG, 1 } };
	enum { NSIZES = sizeof(sizes) / sizeof(sizes[0]) };
	char path[NSIZES][PATH_MAX + 32], line[PATH_MAX + 128], label[96];
	char objects[PATH_MAX + 96];
	uint64_t *ns[NSIZES][2];	/* [size][backup on] */
	long with = 0, journaled;
	struct core c;
	int sock;

	for (int s = 0; s < NSIZES; s++) {
		snprintf(path[s], sizeof(path[s]), "%s/file-%d.bin", ws, s);
		fresh_content(path[s], sizes[s].size);
		for (int on = 0; on < 2; on++)
			if ((ns[s][on] = calloc((size_t)(runs * sizes[s].factor),
						sizeof(uint64_t))) == NULL)
				die("%s", "out of memory");
	}
	core_start(&c, bin);
	sock = connect_to(c.sock);
	snprintf(objects, sizeof(objects), "%s/sessions/" SESSION "/modify_backup/objects", c.state);

	/* Warm up: the first backup opens the store and its cycle. */
	for (int s = 0; s < NSIZES; s++) {
		for (int on = 0; on < 2; on++) {
			core_backup(&c, on);
			fresh_content(path[s], sizes[s].size);
			grant(sock, grant_line(line, sizeof(line), path[s]));
			with += on;
			drop_cache(objects);
		}
	}
	/* Off and on take turns, in alternating order, so a slow moment of
	 * the machine hits both. */
	for (int r = 0; r < 5 * runs; r++) {
		for (int s = 0; s < NSIZES; s++) {
			if (r >= runs * sizes[s].factor)
				continue;
			for (int k = 0; k < 2; k++) {
				int on = (r + k) % 2;
				uint64_t t0;

				core_backup(&c, on);
				fresh_content(path[s], sizes[s].size);
				grant_line(line, sizeof(line), path[s]);
				t0 = now_ns();
				grant(sock, line);
				ns[s][on][r] = now_ns() - t0;
				with += on;
				drop_cache(objects);
			}
		}
	}
	close(sock);
	core_stop(&c);

	/* Every grant with backups on, and no other, copied the file. */
	journaled = backed_up_grants(&c);
	if (journaled != with) {
		fprintf(stderr, "backup: %ld grants ran with backups on, but the journal under %s "
			"names %ld objects\n", with, c.state, journaled);
		exit(1);
	}

	printf("1. Write grant through `fsbroker serve` (open=0x241, O_TRUNC) of an existing file;\n"
	       "   EnableModifyBackup off, then on with fileBackupMaxSizeMB 4096:\n");
	for (int s = 0; s < NSIZES; s++) {
		size_t n = (size_t)(runs * sizes[s].factor);
		double off = median_ms(ns[s][0], n), on = median_ms(ns[s][1], n);

		snprintf(label, sizeof(label), "%s file, backup off, %zu runs (baseline)",
			 sizes[s].name, n);
		row(label, off, 0);
		snprintf(label, sizeof(label), "%s file, backup on", sizes[s].name);
		row(label, on, off);
		free(ns[s][0]);
		free(ns[s][1]);
	}
}

/* ------------------------------------------------------------------------ */
/* 2 and 3. The store in this process against cp. */

static uint64_t run_cp(const char *src, const char *dst, bool sync)
{
	uint64_t t0 = now_ns(), t;
	int status, fd;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		execl("/bin/cp", "cp", src, dst, (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		die("/bin/cp of %s failed", src);
	if (sync) {
		fd = open(dst, O_WRONLY | O_CLOEXEC);
		if (fd < 0 || fdatasync(fd) < 0 || close(fd) < 0)
			die("cannot fdatasync %s", dst);
	}
	t = now_ns() - t0;
	/* Not timed: the unsynced copy is written back now, not during the
	 * next case, and the next cp makes a new file. */
	fd = open(dst, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || fdatasync(fd) < 0 || close(fd) < 0 || unlink(dst) < 0)
		die("cannot sync and remove %s", dst);
	return t;
}

static uint64_t record(struct fsb_store *st, const char *path, struct fsb_backup_result *res)
{
	struct fsb_backup_req r;
	struct stat prior;
	uint64_t t0, t;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &prior) < 0)
		die("cannot open %s", path);
	memset(&r, 0, sizeof(r));
	r.tool_call = "tc-1";
	r.op = "write";
	r.flags = O_WRONLY | O_CREAT | O_TRUNC;
	r.path = path;
	r.resolved = path;
	r.prior = &prior;
	r.fd = fd;
	r.max_bytes = 0;
	r.on_too_large = FSB_TOO_LARGE_FAIL;
	t0 = now_ns();
	rc = fsb_store_record(st, &r, res);
	t = now_ns() - t0;
	if (rc < 0)
		die("fsb_store_record: %s", strerror(-rc));
	close(fd);
	return t;
}

static void store_vs_cp(int runs)
{
	char state[PATH_MAX + 32], src[PATH_MAX + 32], dst[PATH_MAX + 32], err[512];
	char objects[PATH_MAX + 96];
	uint64_t *first, *second, *cp, *cp_sync;
	struct fsb_backup_result res;
	struct fsb_store *st;
	bool reflinked = false, copied_twice = false;
	double m_first, m_second, m_cp, m_cp_sync;
	struct stat sb;
	int rc;

	snprintf(state, sizeof(state), "%s/state-inproc", root);
	snprintf(src, sizeof(src), "%s/big.bin", ws);
	snprintf(dst, sizeof(dst), "%s/big.copy", ws);
	first = calloc((size_t)runs, sizeof(uint64_t));
	second = calloc((size_t)runs, sizeof(uint64_t));
	cp = calloc((size_t)runs, sizeof(uint64_t));
	cp_sync = calloc((size_t)runs, sizeof(uint64_t));
	if (first == NULL || second == NULL || cp == NULL || cp_sync == NULL)
		die("%s", "out of memory");
	if ((rc = fsb_store_open(state, SESSION, &st, err, sizeof(err))) < 0)
		die("fsb_store_open: %s", err);
	snprintf(objects, sizeof(objects), "%s/objects", fsb_store_dir(st));

	/* Warm up: the first record opens the cycle; cp gets into the cache. */
	fresh_content(src, BIG);
	record(st, src, &res);
	drop_cache(objects);
	run_cp(src, dst, false);

	for (int r = 0; r < runs; r++) {
		/* The three cases in a turning order. */
		for (int k = 0; k < 3; k++) {
			fresh_content(src, BIG);
			switch ((r + k) % 3) {
			case 0:
				/* As after a write grant: the next record copies. */
				if (stat(src, &sb) < 0)
					die("cannot stat %s", src);
				fsb_store_note_write_grant(st, sb.st_dev, sb.st_ino);
				first[r] = record(st, src, &res);
				if (res.reused || res.object[0] == '\0')
					die("the first record of %s did not copy it", src);
				reflinked |= res.reflinked;
				second[r] = record(st, src, &res);
				if (!res.reused)
					copied_twice = true;
				drop_cache(objects);
				break;
			case 1:
				cp[r] = run_cp(src, dst, false);
				break;
			case 2:
				cp_sync[r] = run_cp(src, dst, true);
				break;
			}
		}
	}
	fsb_store_close(st);

	m_first = median_ms(first, (size_t)runs);
	m_second = median_ms(second, (size_t)runs);
	m_cp = median_ms(cp, (size_t)runs);
	m_cp_sync = median_ms(cp_sync, (size_t)runs);
	printf("\n2. Backup of a 64 MiB file in process (fsb_store_open + fsb_store_record,\n"
	       "   %s, hashed, fsynced, journaled) against fork/exec of /bin/cp\n"
	       "   to a new file on the same filesystem, %d runs:\n",
	       reflinked ? "reflinked (FICLONE)" : "copied, no reflink", runs);
	row("cp (baseline)", m_cp, 0);
	row("cp, then fdatasync of the copy (baseline)", m_cp_sync, 0);
	row("fsb_store_record vs cp", m_first, m_cp);
	row("fsb_store_record vs cp + fdatasync", m_first, m_cp_sync);
	printf("\n3. The same 64 MiB file recorded twice in one cycle, no write grant between:\n");
	row("first record (baseline)", m_first, 0);
	row(copied_twice ? "second record (NOT always reused: copied again)"
			 : "second record (the copy reused)", m_second, m_first);
	printf("  (the second record appends its journal line; by the same tool call, it\n"
	       "   needs no fdatasync: the first line holds what a restore reads)\n");
	free(first);
	free(second);
	free(cp);
	free(cp_sync);
}

/* ---- 4. one change, by kind ------------------------------------------ */

static pthread_mutex_t store_lock = PTHREAD_MUTEX_INITIALIZER;

/* Record `r` as the core does for a grant (modify_backup.c): the line under
 * the session's store lock, then, lock let go, the wait until it is durable
 * when the change needs that. */
static void core_record(struct fsb_store *st, struct fsb_backup_req *r)
{
	struct fsb_backup_result res;
	int rc;

	r->defer_sync = true;
	r->no_repeat_copy = true;
	r->caller_lock = &store_lock;
	pthread_mutex_lock(&store_lock);
	rc = fsb_store_record(st, r, &res);
	pthread_mutex_unlock(&store_lock);
	if (rc == 0)
		rc = fsb_store_wait(st, &res.durable);
	if (rc < 0)
		die("fsb_store_record: %s", strerror(-rc));
}

static void change_req(struct fsb_backup_req *r, const char *op, const char *path,
		       const struct stat *prior, int fd)
{
	memset(r, 0, sizeof(*r));
	r->tool_call = "tc-1";
	r->op = op;
	r->flags = prior ? O_WRONLY | O_TRUNC : O_WRONLY | O_CREAT | O_EXCL;
	r->path = path;
	r->resolved = path;
	r->prior = prior;
	r->fd = fd;
	r->on_too_large = FSB_TOO_LARGE_FAIL;
}

static void small_file(const char *dir, int i, char *out, size_t len)
{
	snprintf(out, len, "%s/f%d", dir, i);
	fresh_content(out, 4096);
}

/* Back up the existing file `path` (its first or a later change). */
static void backup_existing(struct fsb_store *st, const char *path)
{
	struct fsb_backup_req r;
	struct stat sb;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &sb) < 0)
		die("cannot open %s", path);
	change_req(&r, "write", path, &sb, fd);
	core_record(st, &r);
	close(fd);
}

struct writer {
	struct fsb_store *st;
	const char *dir;
	int from, to;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	char path[PATH_MAX + 32];

	for (int i = w->from; i < w->to; i++) {
		snprintf(path, sizeof(path), "%s/f%d", w->dir, i);
		backup_existing(w->st, path);
	}
	return NULL;
}

static void change_row(const char *label, uint64_t ns, unsigned long syncs, int n)
{
	printf("  %-50s %9.1f us  %6.3f syncs\n", label, (double)ns / 1e3 / n,
	       (double)syncs / n);
}

static void changes(int n)
{
	char state[PATH_MAX + 32], dir[PATH_MAX + 32], path[PATH_MAX + 64], err[512];
	enum { THREADS = 4 };
	struct writer w[THREADS];
	pthread_t tid[THREADS];
	struct fsb_backup_req r;
	struct fsb_store *st;
	unsigned long s0;
	uint64_t t0;
	struct stat sb;

	snprintf(state, sizeof(state), "%s/state-changes", root);
	snprintf(dir, sizeof(dir), "%s/changes", ws);
	mkdir_p(dir);
	if (fsb_store_open(state, SESSION, &st, err, sizeof(err)) < 0)
		die("fsb_store_open: %s", err);
	printf("\n4. One change, by kind: in-process store (fsb_store_record under a store\n"
	       "   lock, as the core calls it), %d changes of each kind, one cycle per kind:\n",
	       n);
	printf("  %-50s  us/change  fsync+fdatasync/change\n", "");

	/* The cycle is opened outside the timing (two directory fsyncs). */
	for (int kind = 0; kind < 4; kind++) {
		switch (kind) {
		case 0: /* creates */
			fsb_store_begin(st);
			s0 = nsyncs;
			t0 = now_ns();
			for (int i = 0; i < n; i++) {
				snprintf(path, sizeof(path), "%s/new%d", dir, i);
				change_req(&r, "create", path, NULL, -1);
				core_record(st, &r);
			}
			change_row("create (new path, journal line only)", now_ns() - t0,
				   nsyncs - s0, n);
			break;
		case 1: /* first backups, then second changes of the same paths */
			for (int i = 0; i < n; i++)
				small_file(dir, i, path, sizeof(path));
			fsb_store_begin(st);
			s0 = nsyncs;
			t0 = now_ns();
			for (int i = 0; i < n; i++) {
				snprintf(path, sizeof(path), "%s/f%d", dir, i);
				backup_existing(st, path);
			}
			change_row("first backup of an existing 4 KiB file", now_ns() - t0,
				   nsyncs - s0, n);
			/* Granted for writing and rewritten (untimed), as `echo y > f`
			 * does after its backup, then changed again. */
			for (int i = 0; i < n; i++) {
				snprintf(path, sizeof(path), "%s/f%d", dir, i);
				if (stat(path, &sb) < 0)
					die("cannot stat %s", path);
				fsb_store_note_write_grant(st, sb.st_dev, sb.st_ino);
				fresh_content(path, 4096);
			}
			s0 = nsyncs;
			t0 = now_ns();
			for (int i = 0; i < n; i++) {
				snprintf(path, sizeof(path), "%s/f%d", dir, i);
				backup_existing(st, path);
			}
			change_row("second change of a path backed up in the cycle",
				   now_ns() - t0, nsyncs - s0, n);
			break;
		case 2: /* first backups by THREADS threads at once */
			for (int i = 0; i < n; i++)
				small_file(dir, i, path, sizeof(path));
			fsb_store_begin(st);
			s0 = nsyncs;
			t0 = now_ns();
			for (int k = 0; k < THREADS; k++) {
				w[k] = (struct writer){ st, dir, n * k / THREADS,
							n * (k + 1) / THREADS };
				if (pthread_create(&tid[k], NULL, writer_main, &w[k]) != 0)
					die("%s", "pthread_create failed");
			}
			for (int k = 0; k < THREADS; k++)
				pthread_join(tid[k], NULL);
			change_row("first backup, 4 threads at once", now_ns() - t0,
				   nsyncs - s0, n);
			break;
		case 3: /* the seal that ends a cycle of creates */
			fsb_store_begin(st);
			for (int i = 0; i < n; i++) {
				snprintf(path, sizeof(path), "%s/late%d", dir, i);
				change_req(&r, "create", path, NULL, -1);
				core_record(st, &r);
			}
			s0 = nsyncs;
			t0 = now_ns();
			if (fsb_store_seal(st, "bench", "", err, sizeof(err)) < 0)
				die("seal: %s", err);
			printf("  %-50s %9.1f us  %6lu syncs\n", "seal of a cycle of creates (once)",
			       (double)(now_ns() - t0) / 1e3, nsyncs - s0);
			break;
		}
		if (fsb_store_cycle(st) != 0 && fsb_store_seal(st, "bench", "", err, sizeof(err)) < 0)
			die("seal: %s", err);
	}
	fsb_store_close(st);
}

int main(int argc, char **argv)
{
	const char *tmp = getenv("TMPDIR");
	int runs = argc > 2 ? atoi(argv[2]) : 7;
	uint64_t start = now_ns(), x = 0x9e3779b97f4a7c15u;
	char p[PATH_MAX + 32];
	struct statfs sfs;

	bool only_changes = argc > 1 && strcmp(argv[1], "--changes") == 0;
	int nchanges = only_changes && argc > 2 ? atoi(argv[2]) : 1000;

	if (argc < 2) {
		fprintf(stderr, "usage: backup FSBROKER [RUNS] | backup --changes [N]\n");
		return 2;
	}
	if (nchanges < 1)
		nchanges = 1000;
	if (runs < 1)
		runs = 7;
	signal(SIGPIPE, SIG_IGN);

	/* Noise, so no two contents are alike and nothing compresses. */
	if ((pattern = malloc(BIG)) == NULL)
		die("%s", "out of memory");
	for (size_t i = 0; i < BIG; i += sizeof(x)) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(pattern + i, &x, sizeof(x));
	}

	/* Layout as bench/roundtrip.c, HOME and TMPDIR included. */
	snprintf(root, sizeof(root), "%s/fsb-bench.XXXXXX", tmp != NULL && *tmp ? tmp : "/tmp");
	if (mkdtemp(root) == NULL)
		die("mkdtemp: %s", strerror(errno));
	if (realpath(root, p) == NULL)
		die("realpath: %s", strerror(errno));
	snprintf(root, sizeof(root), "%s", p);
	if (statfs(root, &sfs) < 0)
		die("statfs: %s", strerror(errno));
	snprintf(p, sizeof(p), "%s/home", root);
	mkdir_p(p);
	setenv("HOME", p, 1);
	snprintf(p, sizeof(p), "%s/tmp", root);
	mkdir_p(p);
	setenv("TMPDIR", p, 1);
	snprintf(ws, sizeof(ws), "%s/ws", root);
	mkdir_p(ws);

	printf("Backup costs: medians in ms; files, copies and the store in %s,\n"
	       "on %s (statfs f_type 0x%lx). Each file gets new content, fdatasynced,\n"
	       "before every timed case, so every backup copies fresh data; each copy's\n"
	       "page cache is dropped after its case, untimed.\n\n",
	       root, fs_name((long)sfs.f_type), (unsigned long)sfs.f_type & 0xffffffffu);
	/* "÷" is two bytes: the header is spelled out. */
	if (!only_changes) {
		printf("  %-50s  median ms   ÷ baseline\n", "");
		grants(argv[1], runs);
		store_vs_cp(runs);
	}
	changes(nchanges);
	printf("\n(%.1f s in all; printed, never enforced)\n", (double)(now_ns() - start) / 1e9);

	nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
	free(pattern);
	return 0;
}
