/*
 * call_loop.c — what one call of a kind costs where it runs, timed around
 * the call alone. tools/bench-stages.sh runs it bare and under `fsbroker
 * run`, where each of these calls is a seccomp notification the supervisor
 * serves, and sets the core's FSBROKER_STAGE_TIMES beside it.
 *
 *   call_loop write-open DIR N   opens DIR/f0 O_WRONLY|O_TRUNC N times
 *                                (made first when missing, not timed)
 *   call_loop create DIR N       creates DIR/c0 … DIR/c<N-1> (O_CREAT|O_EXCL)
 *   call_loop rename DIR N       renames DIR/r<i> to DIR/s<i>, i < N; the
 *                                files must exist (call_loop make-renames)
 *   call_loop make-renames DIR N makes DIR/r0 … DIR/r<N-1>, timing nothing
 *
 * Prints "median_ns=M mean_ns=A n=N" of the timed calls (close is native
 * everywhere and not timed).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void die(const char *what, const char *path)
{
	fprintf(stderr, "call_loop: %s %s: %s\n", what, path, strerror(errno));
	exit(1);
}

static void make_file(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0 || write(fd, "x\n", 2) != 2)
		die("cannot make", path);
	close(fd);
}

/* Call `i` of `kind` on names under `dir`; returns its time. */
static uint64_t timed_call(const char *kind, const char *dir, long i)
{
	char a[4096], b[4096];
	uint64_t t0, t1;
	int fd = -1, rc = 0;

	if (strcmp(kind, "write-open") == 0) {
		snprintf(a, sizeof(a), "%s/f0", dir);
		t0 = now_ns();
		fd = open(a, O_WRONLY | O_TRUNC | O_CLOEXEC);
		t1 = now_ns();
	} else if (strcmp(kind, "create") == 0) {
		snprintf(a, sizeof(a), "%s/c%ld", dir, i);
		t0 = now_ns();
		fd = open(a, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		t1 = now_ns();
	} else {
		snprintf(a, sizeof(a), "%s/r%ld", dir, i);
		snprintf(b, sizeof(b), "%s/s%ld", dir, i);
		t0 = now_ns();
		rc = rename(a, b);
		t1 = now_ns();
	}
	if (fd < 0 && rc == 0 && strcmp(kind, "rename") != 0)
		die(kind, a);
	if (rc < 0)
		die(kind, a);
	if (fd >= 0)
		close(fd);
	return t1 - t0;
}

int main(int argc, char **argv)
{
	uint64_t *ns, sum = 0;
	char path[4096];
	long n;
	char *end;

	if (argc != 4 || (strcmp(argv[1], "write-open") && strcmp(argv[1], "create") &&
			  strcmp(argv[1], "rename") && strcmp(argv[1], "make-renames"))) {
		fprintf(stderr, "usage: call_loop write-open|create|rename|make-renames DIR N\n");
		return 2;
	}
	errno = 0;
	n = strtol(argv[3], &end, 10);
	if (errno != 0 || *end != '\0' || n < 1 || n > 10000000) {
		fprintf(stderr, "call_loop: N must be a number from 1 to 10000000\n");
		return 2;
	}
	if (strcmp(argv[1], "make-renames") == 0) {
		for (long i = 0; i < n; i++) {
			snprintf(path, sizeof(path), "%s/r%ld", argv[2], i);
			make_file(path);
		}
		return 0;
	}
	if (strcmp(argv[1], "write-open") == 0) {
		snprintf(path, sizeof(path), "%s/f0", argv[2]);
		if (access(path, F_OK) != 0)
			make_file(path);
	}
	if ((ns = calloc((size_t)n, sizeof(*ns))) == NULL) {
		fprintf(stderr, "call_loop: out of memory\n");
		return 1;
	}
	for (long i = 0; i < n; i++) {
		ns[i] = timed_call(argv[1], argv[2], i);
		sum += ns[i];
	}
	qsort(ns, (size_t)n, sizeof(*ns), cmp_u64);
	printf("median_ns=%llu mean_ns=%llu n=%ld\n", (unsigned long long)ns[n / 2],
	       (unsigned long long)(sum / (uint64_t)n), n);
	free(ns);
	return 0;
}
