/*
 * fsbt_race.c — races against the supervisor's check-then-use, run inside
 * `fsbroker run` by tests/integration/test_run_bypass.c. Two threads: one
 * keeps writing through a name while the other keeps changing what the
 * name means. A writable fd on the protected file would be a bypass; the
 * program notices it itself (fstat against the protected file's inode),
 * writes through it so that the host sees it too, and counts it.
 *
 *   fsbt_race symlink N LINK SAFE PROTECTED
 *       one thread replaces the symlink LINK N times (symlink + rename),
 *       pointing it at SAFE and PROTECTED in turn, while the other opens
 *       LINK for writing and writes a line through it.
 *   fsbt_race pathbuf N SAFE PROTECTED
 *       SAFE and PROTECTED are names of the same length; one thread opens
 *       a shared path buffer for writing N times while the other rewrites
 *       the buffer between the two names, so that the buffer changes right
 *       after each call entered the kernel.
 *
 * Prints "opens=<n> granted=<n> refused=<n> other=<n> protected=<n>
 * flips=<n> flip_errors=<n>" and exits 0 when protected is 0, 1 when the
 * protected file was opened for writing, 2 on bad usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct {
	long n;
	const char *link, *safe, *protected;
	struct stat protected_st;
	atomic_int done;
	long flips, flip_errors;
	/* The shared path buffer of the pathbuf race: the kernel and the core
	 * read it while the flipper rewrites it, on purpose. */
	char *volatile buf;
} race;

static long opens, granted, refused, other, hit_protected;

static void use(int fd)
{
	struct stat st;

	opens++;
	if (fd < 0) {
		if (errno == EACCES || errno == EPERM)
			refused++;
		else
			other++;
		return;
	}
	granted++;
	if (fstat(fd, &st) == 0 && st.st_dev == race.protected_st.st_dev &&
	    st.st_ino == race.protected_st.st_ino)
		hit_protected++;
	if (write(fd, "RACE\n", 5) < 0)
		other++;
	close(fd);
}

static void *flip_symlink(void *arg)
{
	char tmp[4096];

	(void)arg;
	snprintf(tmp, sizeof(tmp), "%s.new", race.link);
	for (long i = 0; i < race.n; i++) {
		const char *target = (i & 1) ? race.protected : race.safe;

		if (symlink(target, tmp) < 0 || rename(tmp, race.link) < 0) {
			race.flip_errors++;
			unlink(tmp);
		}
		race.flips++;
	}
	atomic_store(&race.done, 1);
	return NULL;
}

static void *flip_buffer(void *arg)
{
	size_t len = strlen(race.safe) + 1;

	(void)arg;
	while (!atomic_load(&race.done)) {
		memcpy(race.buf, race.protected, len);
		memcpy(race.buf, race.safe, len);
		race.flips++;
	}
	return NULL;
}

static int race_symlink(void)
{
	static const int flags[] = { O_WRONLY | O_TRUNC, O_WRONLY | O_APPEND,
				     O_WRONLY | O_CREAT | O_TRUNC, O_RDWR };
	pthread_t t;
	long i = 0;

	unlink(race.link);
	if (symlink(race.safe, race.link) < 0) {
		perror("symlink");
		return 2;
	}
	if (pthread_create(&t, NULL, flip_symlink, NULL) != 0)
		return 2;
	while (!atomic_load(&race.done))
		use(open(race.link, flags[i++ % 4] | O_CLOEXEC, 0644));
	pthread_join(t, NULL);
	return 0;
}

static int race_pathbuf(void)
{
	static const int flags[] = { O_WRONLY | O_TRUNC, O_WRONLY | O_APPEND,
				     O_WRONLY | O_CREAT | O_TRUNC, O_RDWR };
	size_t len = strlen(race.safe) + 1;
	pthread_t t;

	if (strlen(race.protected) + 1 != len) {
		fprintf(stderr, "fsbt_race: the two names must have the same length\n");
		return 2;
	}
	race.buf = malloc(len);
	if (race.buf == NULL)
		return 2;
	memcpy(race.buf, race.safe, len);
	if (pthread_create(&t, NULL, flip_buffer, NULL) != 0)
		return 2;
	for (long i = 0; i < race.n; i++)
		use(open(race.buf, flags[i % 4] | O_CLOEXEC, 0644));
	atomic_store(&race.done, 1);
	pthread_join(t, NULL);
	free(race.buf);
	return 0;
}

int main(int argc, char **argv)
{
	int rc;

	if (argc == 6 && strcmp(argv[1], "symlink") == 0) {
		race.link = argv[3];
		race.safe = argv[4];
		race.protected = argv[5];
	} else if (argc == 5 && strcmp(argv[1], "pathbuf") == 0) {
		race.safe = argv[3];
		race.protected = argv[4];
	} else {
		fprintf(stderr, "usage: fsbt_race symlink N LINK SAFE PROTECTED\n"
				"       fsbt_race pathbuf N SAFE PROTECTED\n");
		return 2;
	}
	race.n = atol(argv[2]);
	if (stat(race.protected, &race.protected_st) < 0) {
		perror(race.protected);
		return 2;
	}
	rc = argv[1][0] == 's' ? race_symlink() : race_pathbuf();
	if (rc != 0)
		return rc;
	printf("opens=%ld granted=%ld refused=%ld other=%ld protected=%ld flips=%ld "
	       "flip_errors=%ld\n", opens, granted, refused, other, hit_protected, race.flips,
	       race.flip_errors);
	return hit_protected == 0 ? 0 : 1;
}
