/*
 * fsbt_hostile.c — attacks on the supervisor of `fsbroker run` with
 * hostile names and descriptors, run inside it by
 * tests/integration/test_attacks_run.c. Each attempt prints one line,
 * "<attempt>: ok" or "<attempt>: <ERRNO NAME>"; whatever a write attempt
 * was granted is written to at once, so that a wrong grant shows on the
 * host, where the test checks the files itself.
 *
 *   fsbt_hostile race N DIR LINK1 LINK2
 *       a thread exchanges the directory DIR with the symlinks LINK1 and
 *       LINK2 (RENAME_EXCHANGE, in pairs, so DIR ends a directory) at least
 *       N times, while the main thread writes, creates, renames, makes
 *       directories, chmods and unlinks through DIR; prints the counts.
 *   fsbt_hostile dirfds WS OUTSIDE     hostile dirfds: a file, a closed fd, a
 *                                      directory outside the writable trees,
 *                                      O_PATH fds of WS/locked and of a file in it
 *   fsbt_hostile paths WS              `..`, `//`, trailing `/`, empty, over
 *                                      NAME_MAX and PATH_MAX, to WS/locked
 *   fsbt_hostile magic WS KEY          /proc/self/root, /proc/self/fd/N of a
 *                                      read-only fd, /proc/<pid>/cwd,
 *                                      /proc/thread-self/fd
 *   fsbt_hostile link FROM TO          link(2) and linkat(2)
 *   fsbt_hostile rename FROM TO        rename(2) and renameat2(RENAME_NOREPLACE)
 *   fsbt_hostile write PATH            open O_WRONLY|O_APPEND and write
 *
 * Exit status: 0 when it ran, 1 when the race's thread failed, 2 on bad usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static void report(const char *what, long rc)
{
	if (rc >= 0)
		printf("%s: ok\n", what);
	else
		printf("%s: %s\n", what, strerrorname_np(errno) ? strerrorname_np(errno) : "E?");
	fflush(stdout);
}

/* Report an open, and write through what it gave. */
static void opened(const char *what, long fd)
{
	report(what, fd);
	if (fd >= 0) {
		if (write((int)fd, "PWNED\n", 6) < 0)
			perror("write");
		close((int)fd);
	}
}

/* ------------------------------------------------------------------------ */

static struct {
	const char *dir, *link[2];
	long want;
	atomic_long exchanges;
	atomic_int stop;
	int err;
} race;

static void *exchange_loop(void *arg)
{
	(void)arg;
	while (!atomic_load(&race.stop)) {
		const char *l = race.link[(atomic_load(&race.exchanges) / 2) % 2];

		for (int i = 0; i < 2; i++) {
			if (renameat2(AT_FDCWD, race.dir, AT_FDCWD, l, RENAME_EXCHANGE) < 0) {
				race.err = errno;
				return NULL;
			}
			atomic_fetch_add(&race.exchanges, 1);
		}
	}
	return NULL;
}

#define MAX_PENDING 64

static int do_race(long n, const char *dir, const char *l1, const char *l2)
{
	char p[4096], q[4096];
	long ops = 0, ok = 0, pending[MAX_PENDING];
	int npending = 0;
	pthread_t th;

	race.dir = dir;
	race.link[0] = l1;
	race.link[1] = l2;
	race.want = n;
	if (pthread_create(&th, NULL, exchange_loop, NULL) != 0)
		return 1;
	while (atomic_load(&race.exchanges) < n && race.err == 0) {
		long i = ops++;
		int fd, rc = -1;

		switch (i % 7) {
		case 0:
			snprintf(p, sizeof(p), "%s/canary", dir);
			fd = open(p, O_WRONLY | O_APPEND | O_CLOEXEC);
			if (fd >= 0) {
				rc = write(fd, "w\n", 2) == 2 ? 0 : -1;
				close(fd);
			}
			break;
		case 1:
			if (npending == MAX_PENDING)
				break;
			snprintf(p, sizeof(p), "%s/new-%ld", dir, i);
			fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
			if (fd >= 0) {
				rc = write(fd, "n\n", 2) == 2 ? 0 : -1;
				close(fd);
				pending[npending++] = i;
			}
			break;
		case 2:
			snprintf(p, sizeof(p), "%s/victim", dir);
			snprintf(q, sizeof(q), "%s/v-%ld", dir, i);
			rc = rename(p, q);
			if (rc == 0)
				rc = rename(q, p);
			break;
		case 3:
			if (npending == MAX_PENDING)
				break;
			snprintf(p, sizeof(p), "%s/m-%ld", dir, i);
			rc = mkdir(p, 0755);
			if (rc == 0)
				pending[npending++] = i;
			break;
		case 4:
			snprintf(p, sizeof(p), "%s/canary", dir);
			rc = chmod(p, i % 2 ? 0600 : 0644);
			break;
		case 5:
			/* What cases 1 and 3 made goes again, or every exchange of
			 * the growing directory would cost more: an unlink that
			 * met the symlink instead is tried again later. */
			for (int k = 0; k < npending;) {
				snprintf(p, sizeof(p), "%s/%s-%ld", dir, pending[k] % 7 == 1 ? "new" : "m",
					 pending[k]);
				if (remove(p) == 0) {
					rc = 0;
					pending[k] = pending[--npending];
				} else {
					k++;
				}
			}
			break;
		default:
			snprintf(p, sizeof(p), "%s/sub/inner", dir);
			rc = truncate(p, 3);
			break;
		}
		ok += rc >= 0;
		/* A sign of life now and then: the test's runner gives up on a
		 * run that stays silent for a minute. */
		if (ops % 50 == 0) {
			printf("race: progress exchanges=%ld ops=%ld\n",
			       (long)atomic_load(&race.exchanges), ops);
			fflush(stdout);
		}
	}
	atomic_store(&race.stop, 1);
	pthread_join(th, NULL);
	printf("race: exchanges=%ld ops=%ld ok=%ld err=%s\n", (long)atomic_load(&race.exchanges),
	       ops, ok, race.err ? strerrorname_np(race.err) : "none");
	return race.err ? 1 : 0;
}

/* ------------------------------------------------------------------------ */

static int do_dirfds(const char *ws, const char *outside)
{
	char p[4096];
	int file, dir, opath, fpath;

	snprintf(p, sizeof(p), "%s/a.txt", ws);
	file = open(p, O_RDONLY | O_CLOEXEC);
	opened("openat file-dirfd", openat(file, "x", O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
	report("mkdirat file-dirfd", mkdirat(file, "x", 0755));
	close(file);
	/* A descriptor number that is closed (and one never opened). */
	opened("openat closed-dirfd", openat(file, "x", O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
	opened("openat fd-1000", openat(1000, "x", O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
	report("unlinkat fd-1000", unlinkat(1000, "x", 0));

	dir = open(outside, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	opened("openat outside-dirfd create", openat(dir, "planted", O_WRONLY | O_CREAT | O_CLOEXEC,
						     0644));
	opened("openat outside-dirfd canary", openat(dir, "canary", O_WRONLY | O_CLOEXEC));
	report("unlinkat outside-dirfd", unlinkat(dir, "victim", 0));
	report("mkdirat outside-dirfd", mkdirat(dir, "m", 0755));
	report("renameat outside-dirfd", renameat(dir, "victim", AT_FDCWD, "stolen"));
	close(dir);

	snprintf(p, sizeof(p), "%s/locked", ws);
	opath = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	opened("openat opath-locked canary", openat(opath, "canary", O_WRONLY | O_CLOEXEC));
	opened("openat opath-locked create", openat(opath, "new", O_WRONLY | O_CREAT | O_CLOEXEC,
						    0644));
	report("unlinkat opath-locked", unlinkat(opath, "victim", 0));
	report("renameat opath-locked", renameat(opath, "canary", AT_FDCWD, "stolen"));
	report("mkdirat opath-locked", mkdirat(opath, "m", 0755));
	report("fchmodat opath-locked", fchmodat(opath, "canary", 0666, 0));
	report("symlinkat opath-locked", symlinkat("/etc/passwd", opath, "sym"));

	snprintf(p, sizeof(p), "%s/locked/canary", ws);
	fpath = open(p, O_PATH | O_CLOEXEC);
	report("linkat opath-file AT_EMPTY_PATH",
	       linkat(fpath, "", AT_FDCWD, "alias-empty", AT_EMPTY_PATH));
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fpath);
	report("linkat /proc/self/fd/opath AT_SYMLINK_FOLLOW",
	       linkat(AT_FDCWD, p, AT_FDCWD, "alias-proc", AT_SYMLINK_FOLLOW));
	opened("open /proc/self/fd/opath O_WRONLY", open(p, O_WRONLY | O_CLOEXEC));
	report("utimensat opath-file AT_EMPTY_PATH", utimensat(fpath, "", NULL, AT_EMPTY_PATH));
	report("fchownat opath-file AT_EMPTY_PATH",
	       fchownat(fpath, "", getuid(), getgid(), AT_EMPTY_PATH));
	close(opath);
	close(fpath);
	return 0;
}

static int do_paths(const char *ws)
{
	char p[8192], name[300];
	size_t n;

	snprintf(p, sizeof(p), "%s/sub", ws);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/sub/../locked/canary", ws);
	opened("open sub/../locked/canary", open(p, O_WRONLY | O_CLOEXEC));
	snprintf(p, sizeof(p), "%s//locked//./canary", ws);
	opened("open //locked//./canary", open(p, O_WRONLY | O_TRUNC | O_CLOEXEC));
	snprintf(p, sizeof(p), "%s/locked/canary/", ws);
	opened("open locked/canary/", open(p, O_WRONLY | O_CLOEXEC));
	snprintf(p, sizeof(p), "%s/locked/", ws);
	report("rename locked/ free/", rename(p, "free/"));
	snprintf(p, sizeof(p), "%s/locked/new/", ws);
	report("mkdir locked/new/", mkdir(p, 0755));
	snprintf(p, sizeof(p), "%s/locked/sub/", ws);
	report("rmdir locked/sub/", rmdir(p));
	snprintf(p, sizeof(p), "%s/sub", ws);
	if (chdir(p) == 0) {
		opened("open ../locked/canary (relative)", open("../locked/canary", O_WRONLY |
								 O_CLOEXEC));
		opened("open ../../../..<ws>/locked/canary",
		       open("../../../../../../../../..//locked/canary", O_WRONLY | O_CLOEXEC));
		report("unlink ./../locked/victim", unlink("./../locked/victim"));
	}
	opened("open empty", open("", O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
	report("unlink empty", unlink(""));
	memset(name, 'n', 299);
	name[299] = '\0';
	snprintf(p, sizeof(p), "%s/%s", ws, name);
	opened("open over NAME_MAX", open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
	n = (size_t)snprintf(p, sizeof(p), "%s", ws);
	while (n < 4200)
		n += (size_t)snprintf(p + n, sizeof(p) - n, "/sub/..");
	snprintf(p + n, sizeof(p) - n, "/locked/canary");
	opened("open over PATH_MAX", open(p, O_WRONLY | O_CLOEXEC));
	return 0;
}

static int do_magic(const char *ws, const char *key)
{
	char p[4096], q[4096];
	int ro;

	snprintf(p, sizeof(p), "/proc/self/root%s/locked/canary", ws);
	opened("open /proc/self/root/…/locked/canary", open(p, O_WRONLY | O_CLOEXEC));
	snprintf(p, sizeof(p), "/proc/self/root%s", key);
	opened("open /proc/self/root/…/key", open(p, O_WRONLY | O_CLOEXEC));
	snprintf(p, sizeof(p), "/proc/self/root/../../..%s/locked/victim", ws);
	report("unlink /proc/self/root/../../…/locked/victim", unlink(p));

	snprintf(q, sizeof(q), "%s/locked/canary", ws);
	ro = open(q, O_RDONLY | O_CLOEXEC);
	report("open locked/canary O_RDONLY", ro);
	snprintf(p, sizeof(p), "/proc/self/fd/%d", ro);
	opened("reopen /proc/self/fd/N O_WRONLY", open(p, O_WRONLY | O_CLOEXEC));
	opened("reopen /proc/self/fd/N O_RDWR|O_TRUNC", open(p, O_RDWR | O_TRUNC | O_CLOEXEC));
	report("truncate /proc/self/fd/N", truncate(p, 0));
	report("chmod /proc/self/fd/N", chmod(p, 0666));
	snprintf(p, sizeof(p), "/proc/thread-self/fd/%d", ro);
	opened("reopen /proc/thread-self/fd/N O_WRONLY", open(p, O_WRONLY | O_CLOEXEC));
	snprintf(p, sizeof(p), "/proc/%d/fd/%d", (int)getpid(), ro);
	opened("reopen /proc/<pid>/fd/N O_WRONLY", open(p, O_WRONLY | O_APPEND | O_CLOEXEC));
	close(ro);

	snprintf(q, sizeof(q), "%s/locked", ws);
	if (chdir(q) == 0) {
		snprintf(p, sizeof(p), "/proc/%d/cwd/canary", (int)getpid());
		opened("open /proc/<pid>/cwd/canary", open(p, O_WRONLY | O_CLOEXEC));
		snprintf(p, sizeof(p), "/proc/%d/cwd/victim", (int)getpid());
		report("unlink /proc/<pid>/cwd/victim", unlink(p));
		opened("open /proc/self/cwd/new", open("/proc/self/cwd/new", O_WRONLY | O_CREAT |
						     O_CLOEXEC, 0644));
		opened("open /proc/thread-self/cwd/canary",
		       open("/proc/thread-self/cwd/canary", O_WRONLY | O_CLOEXEC));
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";

	if (strcmp(cmd, "race") == 0 && argc == 6)
		return do_race(atol(argv[2]), argv[3], argv[4], argv[5]);
	if (strcmp(cmd, "dirfds") == 0 && argc == 4)
		return do_dirfds(argv[2], argv[3]);
	if (strcmp(cmd, "paths") == 0 && argc == 3)
		return do_paths(argv[2]);
	if (strcmp(cmd, "magic") == 0 && argc == 4)
		return do_magic(argv[2], argv[3]);
	if (strcmp(cmd, "link") == 0 && argc == 4) {
		report("link", link(argv[2], argv[3]));
		report("linkat AT_SYMLINK_FOLLOW",
		       linkat(AT_FDCWD, argv[2], AT_FDCWD, argv[3], AT_SYMLINK_FOLLOW));
		return 0;
	}
	if (strcmp(cmd, "rename") == 0 && argc == 4) {
		report("rename", rename(argv[2], argv[3]));
		report("renameat2 RENAME_NOREPLACE",
		       renameat2(AT_FDCWD, argv[2], AT_FDCWD, argv[3], RENAME_NOREPLACE));
		return 0;
	}
	if (strcmp(cmd, "write") == 0 && argc == 3) {
		opened("write", open(argv[2], O_WRONLY | O_APPEND | O_CLOEXEC));
		return 0;
	}
	fprintf(stderr, "usage: fsbt_hostile race|dirfds|paths|magic|link|rename|write ...\n");
	return 2;
}
