/*
 * open_loop.c — what one write-open costs where it runs: opens an existing
 * file O_WRONLY|O_TRUNC, closes it, N times, and prints the first open and
 * the median and mean of the rest in nanoseconds. tools/bench-runtime.sh runs
 * it bare and under `fsbroker run`, where every such open is a seccomp
 * notification the supervisor answers with an fd: the first one of a cycle
 * also backs the file up, the rest are the steady state.
 *
 *   open_loop FILE N        prints "first_ns=F median_ns=M mean_ns=A n=N"
 *
 * Only the open(2) is timed (close is native everywhere). The file must exist:
 * the loop never creates it, so what it measures is an open, not a create.
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

/* One timed open and close of `path`; exits on any failure. */
static uint64_t timed_open(const char *path)
{
	uint64_t t0, t1;
	int fd;

	t0 = now_ns();
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	t1 = now_ns();
	if (fd < 0) {
		fprintf(stderr, "open_loop: cannot open %s for writing: %s\n", path,
			strerror(errno));
		exit(1);
	}
	close(fd);
	return t1 - t0;
}

int main(int argc, char **argv)
{
	uint64_t first, *ns, sum = 0;
	long n;
	char *end;

	if (argc != 3) {
		fprintf(stderr, "usage: open_loop FILE N\n");
		return 2;
	}
	errno = 0;
	n = strtol(argv[2], &end, 10);
	if (errno != 0 || *end != '\0' || n < 2 || n > 10000000) {
		fprintf(stderr, "open_loop: N must be a number from 2 to 10000000\n");
		return 2;
	}
	ns = calloc((size_t)n - 1, sizeof(*ns));
	if (ns == NULL) {
		fprintf(stderr, "open_loop: out of memory\n");
		return 1;
	}
	first = timed_open(argv[1]);
	for (long i = 0; i < n - 1; i++) {
		ns[i] = timed_open(argv[1]);
		sum += ns[i];
	}
	qsort(ns, (size_t)n - 1, sizeof(*ns), cmp_u64);
	printf("first_ns=%llu median_ns=%llu mean_ns=%llu n=%ld\n", (unsigned long long)first,
	       (unsigned long long)ns[(n - 1) / 2], (unsigned long long)(sum / (uint64_t)(n - 1)), n);
	free(ns);
	return 0;
}
