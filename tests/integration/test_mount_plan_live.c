/*
 * test_mount_plan_live.c — the mount plan of `fsbroker run` run for real:
 * `bwrap <plan> -- <this program> --inside …`, which checks from inside
 * what the plan promises (the workspace writable, the rest of the host tree
 * read-only, masks unreadable, /tmp, the state dir and /run/user empty, the
 * scoped socket reachable), as root and as an unprivileged uid.
 *
 * Only the mounts are under test: in a real run writes go through the
 * supervisor, which is not here.
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mount_plan.h"
#include "policy.h"

#define BWRAP "/usr/bin/bwrap"
#define NOBODY 65534
#define HELLO "hello from inside"

/* ------------------------------------------------------------------------ */
/* Inside the sandbox: one line per check, "ok NAME" or "FAIL NAME: why". */

static int failures;

static void check(bool ok, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void check(bool ok, const char *name, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (ok) {
		printf("ok %s\n", name);
	} else {
		printf("FAIL %s: %s\n", name, why);
		failures++;
	}
}

/* Open `path` for writing (created): 0 or the errno. */
static int try_write(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0)
		return errno;
	if (write(fd, "x\n", 2) != 2) {
		int e = errno;

		close(fd);
		return e;
	}
	close(fd);
	return 0;
}

/* Entries in `dir` other than "." and "..", or -errno. */
static int count_entries(const char *dir, char *first, size_t len)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	if (d == NULL)
		return -errno;
	while ((de = readdir(d)) != NULL) {
		/* This program itself, bound in by the test (see run_plan). */
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    strcmp(de->d_name, ".fsbt-inside") == 0)
			continue;
		if (n++ == 0)
			snprintf(first, len, "%s", de->d_name);
	}
	closedir(d);
	return n;
}

/* argv: --inside WS HOME STATE HOME_RW */
static int inside(char **argv)
{
	const char *ws = argv[2], *home = argv[3], *state = argv[4];
	bool home_rw = strcmp(argv[5], "1") == 0;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char path[4200], first[256] = "", buf[64];
	int e, n, fd;
	ssize_t got;

	snprintf(path, sizeof(path), "%s/written-inside", ws);
	e = try_write(path);
	check(e == 0, "workspace-writable", "writing %s: %s", path, strerror(e));

	snprintf(path, sizeof(path), "%s/written-inside", home);
	e = try_write(path);
	if (home_rw)
		check(e == 0, "home-writable-as-ask-tree", "writing %s: %s", path, strerror(e));
	else
		check(e == EROFS, "home-read-only", "writing %s: %s (want EROFS)", path, strerror(e));

	e = try_write("/usr/written-inside");
	check(e == EROFS, "usr-read-only", "writing /usr: %s (want EROFS)", strerror(e));

	snprintf(path, sizeof(path), "%s/.ssh/id_ed25519", home);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	check(fd < 0, "ssh-key-unreadable", "%s opened", path);
	if (fd >= 0)
		close(fd);
	snprintf(path, sizeof(path), "%s/.ssh/new-key", home);
	e = try_write(path);
	check(e == EROFS, "ssh-dir-read-only", "writing %s: %s (want EROFS)", path, strerror(e));

	/* A masked file is /dev/null on a nodev bind: no content either way. */
	snprintf(path, sizeof(path), "%s/.env", ws);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	got = fd < 0 ? 0 : read(fd, buf, sizeof(buf));
	check(got <= 0, "env-file-unreadable", "read %zd bytes of %s", got, path);
	if (fd >= 0)
		close(fd);

	n = count_entries("/tmp", first, sizeof(first));
	check(n == 0, "tmp-empty", "/tmp has %d entries (%s)", n, first);
	e = try_write("/tmp/private-marker");
	check(e == 0, "tmp-writable", "writing /tmp: %s", strerror(e));

	n = count_entries(state, first, sizeof(first));
	check(n == 0, "state-dir-empty", "%s has %d entries (%s)", state, n, first);
	snprintf(path, sizeof(path), "%s/planted", state);
	e = try_write(path);
	check(e == EROFS, "state-dir-read-only", "writing %s: %s (want EROFS)", path, strerror(e));

	n = count_entries("/run/user", first, sizeof(first));
	check(n == 0, "run-user-empty", "/run/user has %d entries (%s)", n, first);

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", FSB_MOUNT_SOCKET);
	e = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 ? 0 : errno;
	check(e == 0, "socket-connects", "connect %s: %s", FSB_MOUNT_SOCKET, strerror(e));
	if (e == 0)
		check(write(fd, HELLO, strlen(HELLO)) == (ssize_t)strlen(HELLO), "socket-writes",
		      "%s", strerror(errno));
	close(fd);

	check(getpid() <= 3, "own-pid-namespace", "pid %d", (int)getpid());
	check(unshare(CLONE_NEWUSER) < 0, "no-user-namespaces-inside", "unshare(CLONE_NEWUSER) worked");
	fflush(stdout);
	return failures == 0 ? 0 : 1;
}

/* ------------------------------------------------------------------------ */
/* Outside. */

struct live {
	char root[64];
	char home[128], ws[128], state[128], rules[128], sock[128], pack[160];
	char exe[4096];
	int listen_fd;
};

static void put(const char *path, const char *data)
{
	FILE *f = fopen(path, "we");

	assert_non_null(f);
	fputs(data, f);
	assert_int_equal(fclose(f), 0);
}

static void at(char *out, size_t len, const char *dir, const char *rel)
{
	snprintf(out, len, "%s/%s", dir, rel);
}

/* Run argv with stdout and stderr into *out, as `uid` when not 0 (and
 * different from ours). The wait status, or -1. */
static int run_as(char *const argv[], uid_t uid, char **out)
{
	size_t len = 0, cap = 4096;
	int p[2], status = -1;
	char *buf = malloc(cap);
	pid_t pid;

	if (buf == NULL || pipe2(p, O_CLOEXEC) < 0) {
		free(buf);
		return -1;
	}
	pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		if (uid != 0 && (setgroups(0, NULL) < 0 || setgid(uid) < 0 || setuid(uid) < 0))
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	for (;;) {
		struct pollfd pf = { .fd = p[0], .events = POLLIN };
		ssize_t n;

		if (poll(&pf, 1, FSBT_TIMEOUT_MS) <= 0) {
			kill(pid, SIGKILL);
			break;
		}
		if (len + 1024 > cap) {
			char *nb = realloc(buf, cap *= 2);

			if (nb == NULL)
				break;
			buf = nb;
		}
		n = read(p[0], buf + len, cap - len - 1);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	close(p[0]);
	if (pid > 0)
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
	*out = buf;
	return status;
}

/* Why bwrap cannot make a user namespace here, or NULL when it can. */
static const char *userns_missing(uid_t uid, char *why, size_t len)
{
	char *argv[] = { BWRAP, "--unshare-user", "--ro-bind", "/", "/", "/bin/true", NULL };
	char *out = NULL;
	int st;

	if (access(BWRAP, X_OK) < 0) {
		snprintf(why, len, "%s is not installed", BWRAP);
		return why;
	}
	st = run_as(argv, uid, &out);
	if (st != 0) {
		snprintf(why, len, "`bwrap --unshare-user true` fails%s%s: %s",
			 uid ? " as uid " : "", uid ? "65534" : "", out ? out : "");
		why[strcspn(why, "\n")] = '\0';
		free(out);
		return why;
	}
	free(out);
	return NULL;
}

static int live_setup(void **state)
{
	struct live *l = calloc(1, sizeof(*l));
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	static const char *const dirs[] = {
		"home", "home/.ssh", "home/.local", "home/.local/state", "home/.local/state/fsbroker",
		"ws", "rules", "sockets", NULL,
	};
	char path[512];
	ssize_t n;

	assert_non_null(l);
	/* Not under /tmp: the sandbox's /tmp is private, the fixture must show. */
	snprintf(l->root, sizeof(l->root), "/var/tmp/fsb-mpl-XXXXXX");
	assert_non_null(mkdtemp(l->root));
	assert_int_equal(chmod(l->root, 0755), 0);
	for (size_t i = 0; dirs[i] != NULL; i++) {
		at(path, sizeof(path), l->root, dirs[i]);
		assert_int_equal(mkdir(path, 0755), 0);
	}
	at(l->home, sizeof(l->home), l->root, "home");
	at(l->ws, sizeof(l->ws), l->root, "ws");
	at(l->state, sizeof(l->state), l->root, "home/.local/state/fsbroker");
	at(l->rules, sizeof(l->rules), l->root, "rules");
	/* In a directory of its own, as the core makes one: the root holds
	 * the workspace, and the core's socket dir is masked. */
	at(l->sock, sizeof(l->sock), l->root, "sockets/sock");
	at(path, sizeof(path), l->home, ".ssh/id_ed25519");
	put(path, "PRIVATE KEY\n");
	at(path, sizeof(path), l->ws, ".env");
	put(path, "API_KEY=1\n");
	at(path, sizeof(path), l->state, "audit.jsonl");
	put(path, "{}\n");
	n = readlink("/proc/self/exe", path, sizeof(path) - 1);
	assert_true(n > 0);
	path[n] = '\0';
	/* The probe runs as the fixture's uid, maybe another than ours: a
	 * copy in the fixture, since the checkout may lie where only we may
	 * enter (a 0700 home, mktemp -d). */
	fsbt_copy_program(path, l->root, "probe", l->exe, sizeof(l->exe));
	l->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	assert_true(l->listen_fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", l->sock);
	assert_int_equal(bind(l->listen_fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(l->listen_fd, 4), 0);
	*state = l;
	return 0;
}

static int live_teardown(void **state)
{
	struct live *l = *state;
	char cmd[128];

	close(l->listen_fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", l->root);
	if (getenv("FSBT_KEEP") == NULL && system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", l->root);
	free(l);
	return 0;
}

static struct fsb_policy *load_pack(struct live *l, const char *text)
{
	const char *luadir = getenv("FSBROKER_LUA_DIR");
	char shipped[4096], err[1024] = "";
	const char *dirs[] = { l->rules, shipped, NULL };
	struct fsb_policy_opts o = {
		.rules_dirs = dirs, .workspace = l->ws, .home = l->home, .tmp = "/tmp",
		.state = l->state,
	};
	struct fsb_policy *p = NULL;

	if (luadir == NULL)
		luadir = "lua";
	snprintf(shipped, sizeof(shipped), "%s/rules", luadir);
	at(l->pack, sizeof(l->pack), l->rules, "live.lua");
	put(l->pack, text);
	o.luadir = luadir;
	o.pack = l->pack;
	if (fsb_policy_load(&o, &p, err, sizeof(err)) != 0)
		fail_msg("loading the pack (FSBROKER_LUA_DIR=%s): %s", luadir, err);
	return p;
}

/* Build the plan, run the checks inside it as `uid`, then check the host. */
static void run_plan(struct live *l, struct fsb_policy *p, uid_t uid, bool home_rw)
{
	struct fsb_mount_inputs in = {
		.workspace = l->ws, .home = l->home, .tmp = "/tmp", .state_dir = l->state,
		.scoped_socket = l->sock, .uid = uid,
	};
	struct fsb_mount_plan pl;
	char **argv, *out = NULL, got[64] = "", path[512], *host;
	size_t n = 0;
	ssize_t r;
	int st, c;

	if (fsb_mount_plan_build(p, &in, &pl) != 0)
		fail_msg("plan: %s", pl.why);
	argv = calloc(pl.argc + 14, sizeof(*argv));
	assert_non_null(argv);
	argv[n++] = BWRAP;
	for (size_t i = 0; i < pl.argc; i++)
		argv[n++] = pl.argv[i];
	/* This program may live under the host's /tmp (a clone in /tmp), which
	 * the plan replaces with a private one: bind it in where it can run. */
	argv[n++] = "--ro-bind";
	argv[n++] = l->exe;
	argv[n++] = "/tmp/.fsbt-inside";
	argv[n++] = "--";
	argv[n++] = "/tmp/.fsbt-inside";
	argv[n++] = "--inside";
	argv[n++] = l->ws;
	argv[n++] = l->home;
	argv[n++] = l->state;
	argv[n++] = home_rw ? "1" : "0";
	st = run_as(argv, uid, &out);
	printf("# inside, as uid %u:\n", (unsigned)uid);
	for (char *line = strtok(out, "\n"); line != NULL; line = strtok(NULL, "\n"))
		printf("#   %s\n", line);
	if (st != 0) {
		fsb_mount_plan_explain(&pl, stdout);
		fail_msg("the checks inside the sandbox failed (wait status %d)", st);
	}
	free(out);
	free(argv);
	fsb_mount_plan_free(&pl);

	/* The listener got the connection made from inside. */
	c = accept4(l->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	assert_true(c >= 0);
	r = read(c, got, sizeof(got) - 1);
	close(c);
	assert_true(r > 0);
	assert_string_equal(got, HELLO);
	/* The workspace write reached the host; the private /tmp did not. */
	at(path, sizeof(path), l->ws, "written-inside");
	assert_int_equal(access(path, F_OK), 0);
	unlink(path);
	assert_int_equal(access("/tmp/private-marker", F_OK), -1);
	at(path, sizeof(path), l->ws, ".env");
	host = fsbt_read_file(path, NULL);
	assert_non_null(host);
	assert_string_equal(host, "API_KEY=1\n");
	free(host);
	at(path, sizeof(path), l->home, "written-inside");
	if (home_rw)
		unlink(path);
	else
		assert_int_equal(access(path, F_OK), -1);
}

static const char *const LIVE_PACK =
	"return { name = \"live\", include = { \"credentials\", \"agent-state\" },\n"
	"  fsProfile = { read = { \"/**\" }, modify = { \"${workspace}/**\", \"${tmp}/**\" } } }\n";

static void test_plan_holds_inside_bwrap(void **state)
{
	struct live *l = *state;
	struct fsb_policy *p;
	char why[512];

	if (userns_missing(0, why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	p = load_pack(l, LIVE_PACK);
	run_plan(l, p, getuid(), false);
	fsb_policy_free(p);
}

/* The default pack's ask.modify tree of home binds home read-write: the
 * masks inside it must still hold. */
static void test_masks_hold_inside_a_read_write_home(void **state)
{
	struct live *l = *state;
	struct fsb_policy *p;
	char why[512];

	if (userns_missing(0, why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	p = load_pack(l, "return { name = \"live\", include = { \"default\" } }\n");
	run_plan(l, p, getuid(), true);
	fsb_policy_free(p);
}

static void test_plan_holds_for_an_unprivileged_uid(void **state)
{
	struct live *l = *state;
	struct fsb_policy *p;
	char why[512], cmd[256];

	if (getuid() != 0)
		fsbt_skip("needs root to switch to uid %d", NOBODY);
	if (userns_missing(NOBODY, why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	snprintf(cmd, sizeof(cmd), "chown -R %d:%d '%s'", NOBODY, NOBODY, l->root);
	assert_int_equal(system(cmd), 0);
	p = load_pack(l, LIVE_PACK);
	run_plan(l, p, NOBODY, false);
	fsb_policy_free(p);
}

int main(int argc, char **argv)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, live_setup, live_teardown)
	const struct CMUnitTest tests[] = {
		T(test_plan_holds_inside_bwrap),
		T(test_masks_hold_inside_a_read_write_home),
		T(test_plan_holds_for_an_unprivileged_uid),
	};

	if (argc == 6 && strcmp(argv[1], "--inside") == 0)
		return inside(argv);
	return fsbt_run_group(tests, NULL, NULL);
}
