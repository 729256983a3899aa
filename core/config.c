/*
 * config.c — configuration from flags and environment (see config.h).
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"

static const char *home_dir(void)
{
	const char *h = getenv("HOME");
	struct passwd *pw;

	if (h != NULL && h[0] == '/')
		return h;
	pw = getpwuid(getuid());
	return pw != NULL ? pw->pw_dir : "/";
}

void fsb_default_state_dir(char *out, size_t len)
{
	const char *x = getenv("XDG_STATE_HOME");

	if (x != NULL && x[0] == '/')
		snprintf(out, len, "%s/fsbroker", x);
	else
		snprintf(out, len, "%s/.local/state/fsbroker", home_dir());
}

int fsb_config_find_beside_binary(const char *const *places, size_t nplaces, int mode,
				  char *out, size_t len)
{
	char exe[PATH_MAX];
	int err = -ENOENT;

	if (realpath("/proc/self/exe", exe) == NULL)
		return -errno;
	dirname(exe);
	for (size_t i = 0; i < nplaces; i++) {
		snprintf(out, len, "%s%s", exe, places[i]);
		if (access(out, mode) == 0)
			return 0;
		if (i == 0)
			err = -errno;
	}
	snprintf(out, len, "%s%s", exe, nplaces > 0 ? places[0] : "");
	return err;
}

int fsb_config_find_init(char *out, size_t len)
{
	static const char *const places[] = { "/fsbroker-init",
					      "/../libexec/fsbroker/fsbroker-init" };

	return fsb_config_find_beside_binary(places, 2, X_OK, out, len);
}

int fsb_config_find_client(const char *name, char *out, size_t len)
{
	char built[64], installed[80];
	const char *const places[] = { built, installed };

	snprintf(built, sizeof(built), "/clients/%s", name);
	snprintf(installed, sizeof(installed), "/../libexec/fsbroker/clients/%s", name);
	return fsb_config_find_beside_binary(places, 2, F_OK, out, len);
}

static bool is_dir(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int find_luadir(char *out, size_t len)
{
	const char *env = getenv("FSBROKER_LUA_DIR");
	const char *tails[] = { "/../lua", "/../share/fsbroker/lua" };
	char exe[PATH_MAX], cand[PATH_MAX + 32], probe[PATH_MAX + 64];

	if (env != NULL && env[0] != '\0')
		return realpath(env, out) != NULL ? 0 : -1;
	if (realpath("/proc/self/exe", exe) == NULL)
		return -1;
	dirname(exe);
	for (unsigned i = 0; i < 2; i++) {
		snprintf(cand, sizeof(cand), "%s%s", exe, tails[i]);
		snprintf(probe, sizeof(probe), "%s/policy/init.lua", cand);
		if (access(probe, R_OK) == 0 && realpath(cand, out) != NULL) {
			(void)len;
			return 0;
		}
	}
	return -1;
}

int fsb_config_build(struct fsb_broker_config *cfg, const char *rules,
		     const char *workspace, const char *state_dir, char *err, size_t errlen)
{
	char path[PATH_MAX + 64], dir[PATH_MAX];
	const char *tmp = getenv("TMPDIR");

	memset(cfg, 0, sizeof(*cfg));
	cfg->limits = fsb_lua_default_limits;
	if (find_luadir(cfg->luadir, sizeof(cfg->luadir)) < 0) {
		snprintf(err, errlen, "cannot find the policy engine (lua/policy/init.lua next "
			 "to the binary); set FSBROKER_LUA_DIR to the directory holding policy/");
		return -1;
	}
	if (rules == NULL)
		rules = "default";
	if (strchr(rules, '/') == NULL && strstr(rules, ".lua") == NULL)
		snprintf(path, sizeof(path), "%s/rules/%s.lua", cfg->luadir, rules);
	else
		snprintf(path, sizeof(path), "%s", rules);
	if (realpath(path, cfg->pack) == NULL) {
		snprintf(err, errlen, "rule pack %s: %s", path, strerror(errno));
		return -1;
	}
	snprintf(dir, sizeof(dir), "%s", cfg->pack);
	snprintf(cfg->rules_dirs[cfg->nrules_dirs++], PATH_MAX, "%s", dirname(dir));
	snprintf(path, sizeof(path), "%s/rules", cfg->luadir);
	if (strcmp(path, cfg->rules_dirs[0]) != 0)
		snprintf(cfg->rules_dirs[cfg->nrules_dirs++], PATH_MAX, "%s", path);

	snprintf(cfg->home, sizeof(cfg->home), "%s", home_dir());
	/* A TMPDIR that does not exist is refused, not replaced by /tmp: with
	 * home or the workspace under /tmp, they would silently count as
	 * scratch (no asks, no backups). */
	if (tmp != NULL && tmp[0] != '\0') {
		if (tmp[0] != '/') {
			snprintf(err, errlen, "TMPDIR %s is not an absolute path: set it to an "
				 "existing directory, or unset it", tmp);
			return -1;
		}
		if (realpath(tmp, cfg->tmp) == NULL) {
			snprintf(err, errlen, "TMPDIR %s: %s: set it to an existing directory, or "
				 "unset it", tmp, strerror(errno));
			return -1;
		}
		if (!is_dir(cfg->tmp)) {
			snprintf(err, errlen, "TMPDIR %s is not a directory: set it to an existing "
				 "directory, or unset it", tmp);
			return -1;
		}
	} else {
		snprintf(cfg->tmp, sizeof(cfg->tmp), "/tmp");
	}

	if (workspace != NULL) {
		if (realpath(workspace, cfg->workspace) == NULL) {
			snprintf(err, errlen, "workspace %s: %s", workspace, strerror(errno));
			return -1;
		}
		if (!is_dir(cfg->workspace)) {
			snprintf(err, errlen, "workspace %s is not a directory", workspace);
			return -1;
		}
	}
	if (state_dir != NULL) {
		if (state_dir[0] != '/') {
			if (getcwd(dir, sizeof(dir)) == NULL) {
				snprintf(err, errlen, "cannot read the working directory");
				return -1;
			}
			snprintf(path, sizeof(path), "%s/%s", dir, state_dir);
			state_dir = path;
		}
		if (strlen(state_dir) >= sizeof(cfg->state_dir) - 64) {
			snprintf(err, errlen, "state dir path too long");
			return -1;
		}
		snprintf(cfg->state_dir, sizeof(cfg->state_dir), "%s", state_dir);
	}
	return 0;
}
