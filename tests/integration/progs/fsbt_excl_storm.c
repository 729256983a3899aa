/*
 * fsbt_excl_storm.c — calls that must happen exactly once, made under a
 * storm of signals, run inside `fsbroker run` by
 * tests/integration/test_run_bypass.c. A timer sends SIGALRM every few
 * microseconds to a handler installed with SA_RESTART while the program
 * creates N new files with O_CREAT|O_EXCL and N new directories with mkdir
 * in DIR. Each name is new, so each call must succeed once: an EEXIST
 * means a call was performed, interrupted and performed again (the
 * restart the supervisor must not let happen after it took the call).
 *
 *   fsbt_excl_storm DIR N
 *
 * Prints "created=<n> mkdirs=<n> eexist=<n> eintr=<n> other=<n>
 * signals=<n>" and exits 0 when every call succeeded, 1 when not, 2 on
 * bad usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

static volatile sig_atomic_t signals;

static void on_alarm(int sig)
{
	(void)sig;
	signals++;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
	struct itimerval every = { { 0, 20 }, { 0, 20 } };	/* 20 µs, as fast as it goes */
	long n, created = 0, mkdirs = 0, eexist = 0, eintr = 0, other = 0;
	char path[4096];

	if (argc != 3 || (n = atol(argv[2])) <= 0) {
		fprintf(stderr, "usage: fsbt_excl_storm DIR N\n");
		return 2;
	}
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGALRM, &sa, NULL) < 0 || setitimer(ITIMER_REAL, &every, NULL) < 0) {
		perror("fsbt_excl_storm: timer");
		return 2;
	}
	for (long i = 0; i < n; i++) {
		int fd;

		snprintf(path, sizeof(path), "%s/f%ld", argv[1], i);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd >= 0) {
			created++;
			close(fd);
		} else if (errno == EEXIST) {
			eexist++;
		} else if (errno == EINTR) {
			eintr++;
		} else {
			other++;
		}
		snprintf(path, sizeof(path), "%s/d%ld", argv[1], i);
		if (mkdir(path, 0755) == 0)
			mkdirs++;
		else if (errno == EEXIST)
			eexist++;
		else if (errno == EINTR)
			eintr++;
		else
			other++;
	}
	memset(&every, 0, sizeof(every));
	setitimer(ITIMER_REAL, &every, NULL);
	printf("created=%ld mkdirs=%ld eexist=%ld eintr=%ld other=%ld signals=%ld\n", created,
	       mkdirs, eexist, eintr, other, (long)signals);
	return created == n && mkdirs == n ? 0 : 1;
}
