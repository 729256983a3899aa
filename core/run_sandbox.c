/*
 * run_sandbox.c — what `fsbroker run` needs to start its sandbox: bwrap and
 * fsbroker-init found on this machine, a private directory for the run's
 * scoped socket, and bwrap's command line around fsbroker-init and CMD.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
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

int fsb_run_find_init(char *out, size_t len)
{
	return fsb_config_find_init(out, len);
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

char **fsb_run_sandbox_argv(const struct fsb_run_launch *l)
{
	size_t ncmd = 0, n = 0, cap;
	size_t nplan = l->bwrap != NULL ? l->plan->argc : 0;
	char **argv;

	while (l->cmd[ncmd] != NULL)
		ncmd++;
	cap = 2 + nplan + 9 + 2 * l->nkeep + 2 * l->nset + 1 + ncmd + 1;
	argv = calloc(cap, sizeof(*argv));
	if (argv == NULL)
		return NULL;
	if (l->bwrap != NULL) {
		argv[n++] = (char *)l->bwrap;
		for (size_t i = 0; i < nplan; i++)
			argv[n++] = l->plan->argv[i];
		argv[n++] = "--";
		/* Bound there by the plan (in.init_binary). */
		argv[n++] = FSB_MOUNT_INIT;
	} else {
		argv[n++] = (char *)l->init;
	}
	argv[n++] = "--socket-fd";
	argv[n++] = "3";
	/*
	 * Landlock's writable trees: the sandbox's private /tmp, and ${tmp} when
	 * the pack's is another directory. Without namespaces there is no
	 * private /tmp: every write, to ${tmp} too, is a call the core performs.
	 */
	if (l->bwrap != NULL) {
		argv[n++] = "--writable";
		argv[n++] = "/tmp";
		if (strcmp(l->tmp, "/tmp") != 0) {
			argv[n++] = "--writable";
			argv[n++] = (char *)l->tmp;
		}
	}
	/* reads = "broker": the filter routes read opens too. */
	if (l->reads_broker)
		argv[n++] = "--reads-broker";
	if (!l->landlock)
		argv[n++] = "--no-landlock";
	for (size_t i = 0; i < l->nkeep; i++) {
		argv[n++] = "--keep-env";
		argv[n++] = l->keep_env[i];
	}
	for (size_t i = 0; i < l->nset; i++) {
		argv[n++] = "--setenv";
		argv[n++] = l->setenv_strs[i];
	}
	argv[n++] = "--";
	for (size_t i = 0; i < ncmd; i++)
		argv[n++] = l->cmd[i];
	argv[n] = NULL;
	return argv;
}
