/*
 * run_sandbox.c — what `fsbroker run` needs to start its sandbox: bwrap and
 * fsbroker-init found on this machine, a private directory for the run's
 * scoped socket, and bwrap's command line around fsbroker-init and CMD.
 */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run.h"

void fsb_run_find_on_path(const char *name, char *out, size_t len)
{
	const char *path = getenv("PATH");
	char *copy, *dir, *save = NULL;

	out[0] = '\0';
	if (path == NULL)
		path = "/usr/bin:/bin";
	copy = strdup(path);
	if (copy == NULL)
		return;
	for (dir = strtok_r(copy, ":", &save); dir != NULL; dir = strtok_r(NULL, ":", &save)) {
		if (dir[0] != '/')
			continue;
		snprintf(out, len, "%s/%s", dir, name);
		if (access(out, X_OK) == 0)
			break;
		out[0] = '\0';
	}
	free(copy);
}

/* fsbroker-init sits next to this binary (build/ or bin/). */
int fsb_run_find_init(char *out, size_t len)
{
	char exe[PATH_MAX];

	if (realpath("/proc/self/exe", exe) == NULL)
		return -errno;
	snprintf(out, len, "%s/fsbroker-init", dirname(exe));
	return access(out, X_OK) == 0 ? 0 : -errno;
}

int fsb_run_socket_dir(char *out, size_t len)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	char base[PATH_MAX];
	struct stat st;

	if (xdg != NULL && xdg[0] == '/' && stat(xdg, &st) == 0 && S_ISDIR(st.st_mode)) {
		snprintf(out, len, "%s/fsbroker-run-%ld", xdg, (long)getpid());
		return 0;
	}
	/* The server checks the directory it makes (0700, ours) before use. */
	snprintf(base, sizeof(base), "/tmp/fsb-%u", (unsigned)getuid());
	if (mkdir(base, 0700) < 0 && errno != EEXIST)
		return -errno;
	snprintf(out, len, "%s/run-%ld", base, (long)getpid());
	return 0;
}

char **fsb_run_sandbox_argv(const char *bwrap, const struct fsb_mount_plan *plan,
			    const char *tmp, char *const *keep_env, size_t nkeep,
			    char *const *setenv_strs, size_t nset, bool reads_broker, char **cmd)
{
	size_t ncmd = 0, n = 0, cap;
	char **argv;

	while (cmd[ncmd] != NULL)
		ncmd++;
	cap = 1 + plan->argc + 1 + 8 + 2 * nkeep + 2 * nset + 1 + ncmd + 1;
	argv = calloc(cap, sizeof(*argv));
	if (argv == NULL)
		return NULL;
	argv[n++] = (char *)bwrap;
	for (size_t i = 0; i < plan->argc; i++)
		argv[n++] = plan->argv[i];
	argv[n++] = "--";
	/* Bound there by the plan (in.init_binary). */
	argv[n++] = FSB_MOUNT_INIT;
	argv[n++] = "--socket-fd";
	argv[n++] = "3";
	argv[n++] = "--writable";
	argv[n++] = "/tmp";
	/* reads = "broker": the filter routes read opens too. */
	if (reads_broker)
		argv[n++] = "--reads-broker";
	if (strcmp(tmp, "/tmp") != 0) {
		argv[n++] = "--writable";
		argv[n++] = (char *)tmp;
	}
	for (size_t i = 0; i < nkeep; i++) {
		argv[n++] = "--keep-env";
		argv[n++] = keep_env[i];
	}
	for (size_t i = 0; i < nset; i++) {
		argv[n++] = "--setenv";
		argv[n++] = setenv_strs[i];
	}
	argv[n++] = "--";
	for (size_t i = 0; i < ncmd; i++)
		argv[n++] = cmd[i];
	argv[n] = NULL;
	return argv;
}
