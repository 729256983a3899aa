/*
 * dispatch.c — fsbroker-toybox-dispatch, the program behind the shims
 * (build/clients/bin/cp -> fsbroker-toybox-dispatch, …).
 *
 * It takes the applet from its own name (the basename of argv[0]), runs the
 * brokered toybox with it, and hands the command line to the system's
 * command instead when toybox cannot run it: an applet this toybox does not
 * have, or an option it does not know (a usage error while toybox parses
 * the command line). Toybox says so by exiting FSBTB_UNSUPPORTED_EXIT before
 * it has touched anything, when FSBROKER_TOYBOX_FALLBACK is set (which only
 * this program sets). The system's command is looked up on PATH without
 * the shims' own directory, so it never finds a shim again.
 *
 * `dd of=FILE` gets a pre-backup first (see pre_backup_dd below).
 *
 * Also usable as `fsbroker-toybox-dispatch APPLET ARGS…`.
 *
 * Environment: FSBROKER_TOYBOX names the toybox to run (default: toybox
 * beside the directory this program is in, i.e. build/clients/toybox for
 * build/clients/bin/fsbroker-toybox-dispatch).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fsbroker_client.h"

#define SELF "fsbroker-toybox-dispatch"
/* The status toybox exits with for "not mine" (lib/fsbroker.h). */
#define UNSUPPORTED_EXIT 250

static char self_dir[PATH_MAX];	/* the real directory of this program */

static void find_self_dir(void)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n < 0) {
		self_dir[0] = '\0';
		return;
	}
	exe[n] = '\0';
	snprintf(self_dir, sizeof(self_dir), "%s", dirname(exe));
}

/* PATH without any entry that is the shims' directory (by its real path). */
static void path_without_shims(void)
{
	const char *path = getenv("PATH");
	char *copy, *save = NULL, *out;
	size_t len = 0;

	if (path == NULL || self_dir[0] == '\0')
		return;
	copy = strdup(path);
	out = calloc(1, strlen(path) + 1);
	if (copy == NULL || out == NULL) {
		free(copy);
		free(out);
		return;
	}
	for (char *e = strtok_r(copy, ":", &save); e != NULL; e = strtok_r(NULL, ":", &save)) {
		char real[PATH_MAX];

		if (realpath(*e ? e : ".", real) != NULL && strcmp(real, self_dir) == 0)
			continue;
		len += (size_t)sprintf(out + len, "%s%s", len ? ":" : "", e);
	}
	setenv("PATH", out, 1);
	free(copy);
	free(out);
}

/* Run the system's `applet` with argv; only returns on failure. */
static int run_system(const char *applet, char **argv)
{
	path_without_shims();
	argv[0] = (char *)applet;
	execvp(applet, argv);
	fprintf(stderr, "%s: %s: %s\n", SELF, applet, strerror(errno));
	return errno == ENOENT ? 127 : 126;
}

/*
 * dd of=FILE: back FILE up before dd starts.
 *
 * The protocol gives a client no "back this up" request (ModifyBackup is
 * the host's, on the control channel). What it gives is a write request
 * with an open-spec: the core judges the path, backs the file up into the
 * session's cycle and passes a descriptor. So the pre-backup is a write
 * request without O_CREAT or O_TRUNC for an existing regular file, whose
 * descriptor is closed at once; nothing is written. The brokered dd's own
 * open then records the same path again without a second copy (the first
 * record of a path in a cycle is what a restore puts back).
 *
 * What it adds: the backup exists even when dd itself does not ask — when
 * the dispatcher hands dd to the system's dd (an operand toybox does not
 * know), and for an of= the open-spec cannot express. A refusal stops dd
 * before it runs, with the reason, as dd's own open would.
 */
static int pre_backup_dd(int argc, char **argv)
{
	const char *of = NULL;
	struct stat st;
	int fd;

	for (int i = 1; i < argc; i++)
		if (strncmp(argv[i], "of=", 3) == 0)
			of = argv[i] + 3;
	if (of == NULL || *of == '\0' || !fsbc_configured())
		return 0;
	if (stat(of, &st) < 0 || !S_ISREG(st.st_mode))
		return 0;	/* nothing to back up: dd creates it, or a device */
	fd = fsbc_open(of, O_WRONLY | O_NONBLOCK | O_CLOEXEC, 0);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (errno == ENOENT)
		return 0;	/* gone since: nothing to back up */
	fsbc_print_error(stderr, "dd", "open", of, errno);
	return -1;
}

static pid_t child;

static void forward(int sig)
{
	if (child > 0)
		kill(child, sig);
}

/* Run toybox's `applet`; its wait status, or -1 when it could not run. */
static int run_toybox(const char *toybox, const char *applet, char **argv)
{
	struct sigaction fw = { .sa_handler = forward }, ign = { .sa_handler = SIG_IGN };
	struct sigaction old_int, old_quit, old_term, old_hup;
	int status;

	sigemptyset(&fw.sa_mask);
	sigemptyset(&ign.sa_mask);
	/* As system(3): the terminal's ^C and ^\ reach toybox itself, which is
	 * in the same process group; a signal sent to this pid alone is
	 * passed on. */
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGQUIT, &ign, &old_quit);
	sigaction(SIGTERM, &fw, &old_term);
	sigaction(SIGHUP, &fw, &old_hup);
	child = fork();
	if (child == 0) {
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGQUIT, &old_quit, NULL);
		sigaction(SIGTERM, &old_term, NULL);
		sigaction(SIGHUP, &old_hup, NULL);
		setenv("FSBROKER_TOYBOX_FALLBACK", "1", 1);
		argv[0] = (char *)applet;
		execv(toybox, argv);
		fprintf(stderr, "%s: cannot run %s: %s\n", SELF, toybox, strerror(errno));
		_exit(126);
	}
	if (child < 0) {
		fprintf(stderr, "%s: fork: %s\n", SELF, strerror(errno));
		return -1;
	}
	while (waitpid(child, &status, 0) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "%s: waitpid: %s\n", SELF, strerror(errno));
			return -1;
		}
	}
	child = 0;
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGQUIT, &old_quit, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGHUP, &old_hup, NULL);
	return status;
}

int main(int argc, char **argv)
{
	static char name[PATH_MAX];
	char toybox[PATH_MAX];
	const char *applet;
	int status;

	if (argc < 1)
		return 127;
	snprintf(name, sizeof(name), "%s", argv[0]);
	applet = basename(name);
	if (strcmp(applet, SELF) == 0) {
		if (argc < 2 || argv[1][0] == '-') {
			fprintf(stderr, "usage: %s APPLET [ARG...]\n"
					"  (or through a shim named after the applet)\n", SELF);
			return 2;
		}
		applet = argv[1];
		argv++;
		argc--;
	}
	find_self_dir();
	if (getenv("FSBROKER_TOYBOX") != NULL && *getenv("FSBROKER_TOYBOX") != '\0')
		snprintf(toybox, sizeof(toybox), "%s", getenv("FSBROKER_TOYBOX"));
	else
		snprintf(toybox, sizeof(toybox), "%s/../toybox", self_dir);

	if (strcmp(applet, "dd") == 0 && pre_backup_dd(argc, argv) < 0)
		return 1;
	fsbc_disconnect();

	status = run_toybox(toybox, applet, argv);
	if (status < 0)
		return 126;
	if (WIFEXITED(status) && WEXITSTATUS(status) == UNSUPPORTED_EXIT)
		return run_system(applet, argv);
	if (WIFSIGNALED(status)) {
		/* Die the way toybox died, so a shell sees the same. */
		signal(WTERMSIG(status), SIG_DFL);
		raise(WTERMSIG(status));
		return 128 + WTERMSIG(status);
	}
	return WEXITSTATUS(status);
}
