/*
 * replay.c — the main a fuzz harness is linked with when it is built
 * without libFuzzer (by gcc, in `make test`): every file of the directories
 * named on the command line goes once through LLVMFuzzerTestOneInput, so
 * the seed corpus and the inputs of past crashes (tests/fuzz/regressions)
 * are checked on every run. One TAP test point per directory; an input that
 * crashes the harness ends the program, which the suite counts as a failure.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"

/* The input being replayed, named by the signal handler when it crashes. */
static char current[4096];

static void on_crash(int sig)
{
	static const char msg[] = "# the input that crashed the harness: ";

	if (write(2, msg, sizeof(msg) - 1) < 0 || write(2, current, strlen(current)) < 0 ||
	    write(2, "\n", 1) < 0) {
		/* Nothing more to say. */
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The whole file, in a buffer of exactly its size (as libFuzzer gives it). */
static uint8_t *read_input(const char *path, size_t *len)
{
	struct stat st;
	uint8_t *buf;
	size_t got = 0;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return NULL;
	}
	buf = malloc(st.st_size > 0 ? (size_t)st.st_size : 1);
	while (buf != NULL && got < (size_t)st.st_size) {
		n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	*len = got;
	return buf;
}

/* Replay every regular file of `dir`, in name order. -1 when it cannot be read. */
static int replay_dir(const char *dir, unsigned *count)
{
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	DIR *d;

	*count = 0;
	if ((d = opendir(dir)) == NULL)
		return errno == ENOENT ? 0 : -1;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			char **v = realloc(names, (cap = cap ? cap * 2 : 64) * sizeof(*v));

			if (v == NULL)
				abort();
			names = v;
		}
		if ((names[n++] = strdup(e->d_name)) == NULL)
			abort();
	}
	closedir(d);
	if (n > 0)
		qsort(names, n, sizeof(*names), cmp_names);
	for (size_t i = 0; i < n; i++) {
		uint8_t *data;
		size_t len = 0;

		snprintf(current, sizeof(current), "%s/%s", dir, names[i]);
		if ((data = read_input(current, &len)) != NULL) {
			LLVMFuzzerTestOneInput(data, len);
			free(data);
			(*count)++;
		}
		free(names[i]);
	}
	free(names);
	return 0;
}

int main(int argc, char **argv)
{
	int failed = 0;

	static const int sigs[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], on_crash);
	LLVMFuzzerInitialize(&argc, &argv);
	printf("1..%d\n", argc - 1);
	for (int i = 1; i < argc; i++) {
		unsigned count;

		if (replay_dir(argv[i], &count) < 0) {
			printf("not ok %d - %s cannot be read: %s\n", i, argv[i], strerror(errno));
			failed = 1;
			continue;
		}
		printf("ok %d - %u inputs of %s replayed without a crash\n", i, count, argv[i]);
		fflush(stdout);
	}
	return failed;
}
