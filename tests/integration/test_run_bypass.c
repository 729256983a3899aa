/*
 * test_run_bypass.c — every known way around the sandbox of `fsbroker run`
 * fails closed. Each test names its attack, runs it inside a real run (the
 * helpers in tests/integration/progs/, built into tests/progs/ next to this
 * binary and run from there: the sandbox sees the host tree read-only), and
 * checks on the host that the protected files did not change in any way
 * (content, mode, mtime, ctime) and that the attack got the answer the
 * docs promise (docs/runtime.md, docs/runtime-supervisor.md).
 *
 * The pack: the default one, plus denyModify on ws/locked.txt and
 * everything under ws/locked.d, denyRead on ws/secret.txt.
 *
 * Run as root, the attacks run twice: as root, and as an ordinary user
 * (uid 65534, group "as_user: ..."), with fsbroker, fsbroker-init and the
 * Lua tree copied into the fixture so that the user can reach them from
 * any checkout. The tests that depend on what only root can set up on the
 * host (another run's socket in root's runtime dir, /run/user, root's SysV
 * segment) run as root only, and so do the three races with the core's
 * resolution, which no uid changes.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <grp.h>
#include <libgen.h>
#include <linux/fs.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

/* A run's safety net only: no test asserts how long anything takes. */
#define RUN_TIMEOUT_MS (900 * 1000)

#define LOCKED "locked content\n"
#define SECRET "TOP-SECRET-51e0"

struct fixture {
	char root[PATH_MAX];
	char home[PATH_MAX + 8], ws[PATH_MAX + 8], tmp[PATH_MAX + 8], state[PATH_MAX + 8];
	char pack[PATH_MAX + 16], progs[PATH_MAX];
	char key[PATH_MAX + 32];	/* ~/.ssh/id_ed25519, masked by the default pack */
	char host_tmp[PATH_MAX];	/* a directory in the host's /tmp, made by the test */
	char run_user[PATH_MAX];	/* a directory in the host's /run/user, made by the test */
	char fsbroker[PATH_MAX + 16];	/* the binary under test, or the user's copy of it */
	uid_t uid;			/* fsbroker run runs as this uid; 0: as the caller */
	char no_user[512];		/* why the run cannot be made as `uid`, or "" */
};

/* The ordinary user of the "as_user" group. */
#define AS_USER_UID 65534

/* ------------------------------------------------------------------------ */
/* The fixture. */

/* The attack helpers (tests/integration/progs/). */
static const char *const helpers[] = { "fsbt_attack", "fsbt_race", "fsbt_excl_storm",
				       "fsbt_reach" };

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char exe[PATH_MAX], built[PATH_MAX + 8], rules[PATH_MAX + 16];
	ssize_t n;

	assert_non_null(f);
	snprintf(f->root, sizeof(f->root), "/var/tmp/fsbt-bypass-XXXXXX");
	assert_non_null(mkdtemp(f->root));
	assert_int_equal(chmod(f->root, 0755), 0);
	snprintf(f->home, sizeof(f->home), "%s/home", f->root);
	snprintf(f->ws, sizeof(f->ws), "%s/ws", f->root);
	snprintf(f->tmp, sizeof(f->tmp), "%s/tmp", f->root);
	snprintf(f->state, sizeof(f->state), "%s/state", f->root);
	snprintf(rules, sizeof(rules), "%s/rules", f->root);
	snprintf(f->pack, sizeof(f->pack), "%s/rules/bypass.lua", f->root);
	assert_int_equal(mkdir(f->home, 0755), 0);
	assert_int_equal(mkdir(f->ws, 0755), 0);
	assert_int_equal(mkdir(f->tmp, 0700), 0);
	assert_int_equal(mkdir(rules, 0755), 0);
	fsbt_write_file(f->pack,
			"return { name = \"bypass\", include = { \"default\" },\n"
			"  denyModify = { \"${workspace}/locked.txt\", \"${workspace}/locked.d/**\" },\n"
			"  denyRead = { \"${workspace}/secret.txt\" } }\n");
	snprintf(f->key, sizeof(f->key), "%s/.ssh", f->home);
	assert_int_equal(mkdir(f->key, 0700), 0);
	snprintf(f->key, sizeof(f->key), "%s/.ssh/id_ed25519", f->home);
	fsbt_write_file(f->key, "PRIVATE KEY\n");
	fsbt_put(f->ws, "locked.txt", LOCKED);
	snprintf(exe, sizeof(exe), "%s/locked.d", f->ws);
	assert_int_equal(mkdir(exe, 0755), 0);
	fsbt_put(f->ws, "locked.d/inside", LOCKED);
	fsbt_put(f->ws, "secret.txt", SECRET "\n");
	fsbt_put(f->ws, "other.txt", "other\n");
	fsbt_put(f->ws, "victim.txt", "victim\n");
	/* The helpers are built next to this binary, in progs/; they run from
	 * a copy in the fixture, which the sandbox sees wherever the build is. */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	snprintf(built, sizeof(built), "%s/progs", dirname(exe));
	snprintf(f->progs, sizeof(f->progs), "%s/progs", f->root);
	assert_int_equal(mkdir(f->progs, 0755), 0);
	for (size_t i = 0; i < sizeof(helpers) / sizeof(helpers[0]); i++) {
		char src[PATH_MAX * 2], dst[PATH_MAX * 2];

		snprintf(src, sizeof(src), "%s/%s", built, helpers[i]);
		if (access(src, X_OK) == 0)
			fsbt_copy_program(src, f->progs, helpers[i], dst, sizeof(dst));
	}
	snprintf(f->fsbroker, sizeof(f->fsbroker), "%s", fsbt_binary());
	setenv("HOME", f->home, 1);
	setenv("TMPDIR", f->tmp, 1);
	unsetenv("XDG_RUNTIME_DIR");
	unsetenv("XDG_STATE_HOME");
	unsetenv("XDG_CONFIG_HOME");
	unsetenv("XDG_DATA_HOME");
	unsetenv("XDG_CACHE_HOME");
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[PATH_MAX * 4];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->root);
	if (getenv("FSBT_KEEP") == NULL && system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", f->root);
	if (f->host_tmp[0] != '\0') {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->host_tmp);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", f->host_tmp);
	}
	if (f->run_user[0] != '\0') {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->run_user);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", f->run_user);
	}
	unsetenv("XDG_RUNTIME_DIR");
	free(f);
	return 0;
}

/* The Lua tree the binary under test uses. */
static void lua_dir(char *out, size_t len)
{
	const char *env = getenv("FSBROKER_LUA_DIR");
	char bin[PATH_MAX];

	if (env != NULL && env[0] != '\0') {
		snprintf(out, len, "%s", env);
		return;
	}
	snprintf(bin, sizeof(bin), "%s", fsbt_binary());
	snprintf(out, len, "%s/../lua", dirname(bin));
}

/*
 * The fixture of the "as_user" group: the same, owned by AS_USER_UID, with
 * its own copy of fsbroker, fsbroker-init (next to it) and the Lua tree
 * (at ../lua, where the binary looks), since the checkout may lie where
 * that user cannot go.
 */
static int setup_as_user(void **state)
{
	char bin[PATH_MAX + 8], src[PATH_MAX + 16], dst[PATH_MAX * 2], lua[PATH_MAX];
	char cmd[PATH_MAX * 4];
	struct fixture *f;
	int st;

	setup(state);
	f = *state;
	f->uid = AS_USER_UID;
	if (geteuid() != 0) {
		snprintf(f->no_user, sizeof(f->no_user),
			 "not run as root: the other group already ran as an ordinary user");
		return 0;
	}
	snprintf(bin, sizeof(bin), "%s/bin", f->root);
	assert_int_equal(mkdir(bin, 0755), 0);
	snprintf(src, sizeof(src), "%s", fsbt_binary());
	fsbt_copy_program(src, bin, "fsbroker", f->fsbroker, sizeof(f->fsbroker));
	snprintf(src + strlen(src) - strlen("fsbroker"), sizeof(src) - strlen(src) + 8,
		 "fsbroker-init");
	fsbt_copy_program(src, bin, "fsbroker-init", dst, sizeof(dst));
	lua_dir(lua, sizeof(lua));
	snprintf(cmd, sizeof(cmd), "cp -R '%s' '%s/lua' && chown -R %d:%d '%s'", lua, f->root,
		 AS_USER_UID, AS_USER_UID, f->root);
	if (system(cmd) != 0)
		fail_msg("cannot prepare the fixture for uid %d: %s", AS_USER_UID, cmd);
	/* Whether that user can make the sandbox's user namespace here. */
	snprintf(cmd, sizeof(cmd), "setpriv --reuid=%d --regid=%d --clear-groups "
		 "/usr/bin/bwrap --unshare-user --ro-bind / / /bin/true 2>/dev/null",
		 AS_USER_UID, AS_USER_UID);
	if ((st = system(cmd)) != 0)
		snprintf(f->no_user, sizeof(f->no_user),
			 "bwrap cannot make a user namespace as uid %d here (status 0x%x)",
			 AS_USER_UID, (unsigned)st);
	return 0;
}

/* What the test makes on the host after setup belongs to the run's user. */
static void give(struct fixture *f, const char *path)
{
	if (f->uid != 0)
		assert_int_equal(lchown(path, f->uid, f->uid), 0);
}

/* Skips unless a sandbox can start and the helper programs are built. */
static void need_sandbox(struct fixture *f)
{
	char why[512], path[PATH_MAX + 32];

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	if (f->no_user[0] != '\0')
		fsbt_skip("%s", f->no_user);
	snprintf(path, sizeof(path), "%s/fsbt_attack", f->progs);
	if (access(path, X_OK) < 0)
		fsbt_fail_long("the attack helpers are not built (make build/tests/progs/fsbt_attack "
			  "and its siblings; make test builds them)");
}

/* ------------------------------------------------------------------------ */
/* Running. */

static void drain(int fd, char **buf, size_t *len, bool *open_)
{
	char chunk[4096];
	ssize_t n = read(fd, chunk, sizeof(chunk));
	char *b;

	if (n < 0 && errno == EINTR)
		return;
	if (n <= 0) {
		*open_ = false;
		return;
	}
	b = realloc(*buf, *len + (size_t)n + 1);
	if (b == NULL) {
		*open_ = false;
		return;
	}
	*buf = b;
	memcpy(*buf + *len, chunk, (size_t)n);
	*len += (size_t)n;
	(*buf)[*len] = '\0';
}

/*
 * Run argv (argv[0] a path) with stdin from `in` (-1: /dev/null), its
 * stdout into *out and its stderr into *err (malloc'd, never NULL). The
 * wait status, or -1 when it could not run or outlived RUN_TIMEOUT_MS
 * (then it is killed by pid). It runs as `uid` when that is not 0.
 */
static int run_split_as(char *const argv[], uid_t uid, int in, char **out, char **err)
{
	uint64_t deadline = fsbt_now_ms() + RUN_TIMEOUT_MS;
	int po[2], pe[2], status = -1;
	size_t olen = 0, elen = 0;
	bool oopen = true, eopen = true, killed = false;
	pid_t pid;

	*out = calloc(1, 1);
	*err = calloc(1, 1);
	assert_non_null(*out);
	assert_non_null(*err);
	if (pipe2(po, O_CLOEXEC) < 0)
		return -1;
	if (pipe2(pe, O_CLOEXEC) < 0) {
		close(po[0]);
		close(po[1]);
		return -1;
	}
	/* A pipe belongs to its maker: the user could not reopen it by name
	 * (/dev/stderr) any more than bare. */
	if (uid != 0 && (fchown(po[1], uid, uid) < 0 || fchown(pe[1], uid, uid) < 0))
		fail_msg("cannot give the output pipes to uid %d: %s", (int)uid, strerror(errno));
	pid = fork();
	if (pid == 0) {
		int fd0 = in >= 0 ? in : open("/dev/null", O_RDONLY | O_CLOEXEC);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGPIPE, SIG_DFL);
		if (fd0 < 0 || dup2(fd0, 0) < 0 || dup2(po[1], 1) < 0 || dup2(pe[1], 2) < 0)
			_exit(127);
		if (uid != 0 && (setgroups(0, NULL) < 0 || setgid(uid) < 0 || setuid(uid) < 0))
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	while (pid > 0 && (oopen || eopen)) {
		struct pollfd p[2] = { { .fd = oopen ? po[0] : -1, .events = POLLIN },
				       { .fd = eopen ? pe[0] : -1, .events = POLLIN } };
		uint64_t now = fsbt_now_ms();

		if (now >= deadline) {
			kill(pid, SIGKILL);
			killed = true;
			break;
		}
		if (poll(p, 2, (int)(deadline - now)) <= 0)
			continue;
		if (p[0].revents)
			drain(po[0], out, &olen, &oopen);
		if (p[1].revents)
			drain(pe[0], err, &elen, &eopen);
	}
	close(po[0]);
	close(pe[0]);
	if (pid < 0)
		return -1;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return killed ? -1 : status;
}

/* The argv of `fsbroker run ... --session SESSION -- CMD...` into argv[]. */
static void run_argv(struct fixture *f, const char *session, const char *const *cmd,
		     char **argv, size_t max)
{
	size_t n = 0;

	argv[n++] = f->fsbroker;
	argv[n++] = "run";
	argv[n++] = "--rules";
	argv[n++] = f->pack;
	argv[n++] = "--workspace";
	argv[n++] = f->ws;
	argv[n++] = "--state-dir";
	argv[n++] = f->state;
	argv[n++] = "--session";
	argv[n++] = (char *)session;
	argv[n++] = "--";
	for (size_t i = 0; cmd[i] != NULL && n + 1 < max; i++)
		argv[n++] = (char *)cmd[i];
	argv[n] = NULL;
}

/* fsbroker run ... -- sh -c SCRIPT, stdin from `in` (-1: /dev/null). */
static int run_sh(struct fixture *f, const char *script, int in, char **out, char **err)
{
	const char *cmd[] = { "/bin/sh", "-c", script, "sh", NULL };
	char *argv[32];

	run_argv(f, "s", cmd, argv, 32);
	return run_split_as(argv, f->uid, in, out, err);
}

/* A script with every "$P" replaced by the helpers' directory (the
 * sandbox's environment is the pack's list, so $P would not reach it). */
static char *with_progs(struct fixture *f, const char *script)
{
	size_t cap = strlen(script) + 1, len = 0;
	char *s;

	for (const char *p = strstr(script, "$P"); p != NULL; p = strstr(p + 2, "$P"))
		cap += strlen(f->progs);
	s = malloc(cap);
	assert_non_null(s);
	for (const char *p = script; *p != '\0'; p++) {
		if (p[0] == '$' && p[1] == 'P') {
			memcpy(s + len, f->progs, strlen(f->progs));
			len += strlen(f->progs);
			p++;
		} else {
			s[len++] = *p;
		}
	}
	s[len] = '\0';
	return s;
}

/* Run SCRIPT ($P: the helpers) under fsbroker run; the wait status. */
static int attack(struct fixture *f, const char *script, char **out, char **err)
{
	char *s = with_progs(f, script);
	int st = run_sh(f, s, -1, out, err);

	free(s);
	/* A sanitizer build of the core reports on stderr. */
	if (strstr(*err, "Sanitizer") != NULL || strstr(*err, "runtime error:") != NULL)
		fsbt_fail_long("the core reported a memory error:\n%s", *err);
	return st;
}

/* ------------------------------------------------------------------------ */
/* What the helpers said, and what the host shows. */

/* The value of the line "<what>: <value>" in `out` (static buffer), or
 * NULL when there is no such line. */
static const char *answer(const char *out, const char *what)
{
	static char value[256];
	size_t wl = strlen(what);

	for (const char *p = out; p != NULL && *p != '\0';) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);

		if (len > wl + 2 && strncmp(p, what, wl) == 0 && p[wl] == ':' && p[wl + 1] == ' ') {
			snprintf(value, sizeof(value), "%.*s", (int)(len - wl - 2), p + wl + 2);
			return value;
		}
		p = eol ? eol + 1 : NULL;
	}
	return NULL;
}

static void expect_answer(const char *out, const char *err, const char *what, const char *want)
{
	const char *got = answer(out, what);

	if (got == NULL || strcmp(got, want) != 0)
		fsbt_fail_long("%s: got %s, want %s\noutput:\n%s\nfsbroker run:\n%s", what,
			 got ? got : "(no answer)", want, out, err);
}

static void expect_refused(const char *out, const char *err, const char *what)
{
	const char *got = answer(out, what);

	if (got == NULL || strcmp(got, "ok") == 0)
		fsbt_fail_long("%s was not refused (%s)\noutput:\n%s\nfsbroker run:\n%s", what,
			 got ? got : "no answer", out, err);
}

/* Everything the pack protects in the workspace, as it was. */
struct guard {
	struct fsbt_tree locked, locked_dir, key;
};

static void guard_take(struct fixture *f, struct guard *g)
{
	char path[PATH_MAX * 2];

	snprintf(path, sizeof(path), "%s/locked.txt", f->ws);
	assert_int_equal(fsbt_tree_snap(path, &g->locked), 0);
	snprintf(path, sizeof(path), "%s/locked.d", f->ws);
	assert_int_equal(fsbt_tree_snap(path, &g->locked_dir), 0);
	assert_int_equal(fsbt_tree_snap(f->key, &g->key), 0);
}

/* Fails the test when anything protected changed in any way. */
static void guard_check(struct fixture *f, struct guard *g, const char *out)
{
	const unsigned what = FSBT_TREE_MTIME | FSBT_TREE_DIR_MTIME | FSBT_TREE_CTIME |
			      FSBT_TREE_NLINK;
	struct guard now;
	char diff[2048];

	guard_take(f, &now);
	if (fsbt_tree_diff(&g->locked, &now.locked, what, diff, sizeof(diff)) != 0)
		fsbt_fail_long("locked.txt changed:\n%s\noutput:\n%s", diff, out);
	if (fsbt_tree_diff(&g->locked_dir, &now.locked_dir, what, diff, sizeof(diff)) != 0)
		fsbt_fail_long("locked.d changed:\n%s\noutput:\n%s", diff, out);
	if (fsbt_tree_diff(&g->key, &now.key, what, diff, sizeof(diff)) != 0)
		fsbt_fail_long("~/.ssh/id_ed25519 changed:\n%s\noutput:\n%s", diff, out);
	fsbt_tree_free(&g->locked);
	fsbt_tree_free(&g->locked_dir);
	fsbt_tree_free(&g->key);
	fsbt_tree_free(&now.locked);
	fsbt_tree_free(&now.locked_dir);
	fsbt_tree_free(&now.key);
}

static void expect_content(const char *path, const char *want)
{
	char *text = fsbt_read_file(path, NULL);

	if (text == NULL || strcmp(text, want) != 0)
		fsbt_fail_long("%s holds '%s', not '%s'", path, text ? text : "(nothing)", want);
	free(text);
}

static void expect_absent(const char *path)
{
	struct stat st;

	if (lstat(path, &st) == 0)
		fsbt_fail_long("%s exists; it should not", path);
}

/* ------------------------------------------------------------------------ */
/* Calls that reach past the supervisor's filter. */

static void openat2_o_wronly_on_a_protected_file_is_refused(void **state)
{
	struct fixture *f = *state;
	struct guard g;
	char *out, *err;

	need_sandbox(f);
	guard_take(f, &g);
	attack(f, "$P/fsbt_attack openat2 locked.txt", &out, &err);
	/* The pack's refusal is EACCES; RESOLVE_* flags are refused (EPERM). */
	expect_answer(out, err, "openat2 O_WRONLY", "EACCES");
	expect_answer(out, err, "openat2 O_WRONLY|O_TRUNC", "EACCES");
	expect_refused(out, err, "openat2 RESOLVE_NO_SYMLINKS");
	guard_check(f, &g, out);
	free(out);
	free(err);
}

static void creat_of_a_protected_file_is_refused(void **state)
{
	struct fixture *f = *state;
	struct guard g;
	char *out, *err;

	need_sandbox(f);
	guard_take(f, &g);
	attack(f, "$P/fsbt_attack creat locked.txt", &out, &err);
	expect_answer(out, err, "creat", "EACCES");
	guard_check(f, &g, out);
	free(out);
	free(err);
}

static void o_tmpfile_linked_onto_a_protected_name_is_refused(void **state)
{
	struct fixture *f = *state;
	char path[PATH_MAX * 2];
	struct guard g;
	char *out, *err;

	need_sandbox(f);
	guard_take(f, &g);
	attack(f, "$P/fsbt_attack tmpfile-link locked.d/planted", &out, &err);
	/* O_TMPFILE itself may be refused; then an ordinary new file's fd
	 * tries the same publishing calls. None may land. */
	if (answer(out, "open O_TMPFILE") == NULL)
		fsbt_fail_long("the helper did not run:\n%s\n%s", out, err);
	expect_refused(out, err, "linkat AT_EMPTY_PATH");
	expect_refused(out, err, "linkat /proc/self/fd AT_SYMLINK_FOLLOW");
	if (answer(out, "link link-source.txt") != NULL)
		expect_refused(out, err, "link link-source.txt");
	snprintf(path, sizeof(path), "%s/locked.d/planted", f->ws);
	expect_absent(path);
	guard_check(f, &g, out);
	free(out);
	free(err);
}

static void rename_exchange_of_a_protected_file_with_a_workspace_file_is_refused(void **state)
{
	struct fixture *f = *state;
	char path[PATH_MAX * 2];
	struct guard g;
	char *out, *err;

	need_sandbox(f);
	guard_take(f, &g);
	attack(f, "$P/fsbt_attack exchange locked.txt other.txt", &out, &err);
	expect_refused(out, err, "renameat2 RENAME_EXCHANGE protected,other");
	expect_refused(out, err, "renameat2 RENAME_EXCHANGE other,protected");
	snprintf(path, sizeof(path), "%s/other.txt", f->ws);
	expect_content(path, "other\n");
	guard_check(f, &g, out);
	free(out);
	free(err);
}

/* The old path calls (no dirfd), as a static binary or an old libc makes
 * them: each is routed like its *at() twin. */
static void legacy_path_syscalls_on_protected_files_are_refused(void **state)
{
	static const char *const tries[] = { "open", "rename onto", "rename away", "unlink",
					     "truncate", "chmod", "chown", "lchown", "utimes",
					     "mknod", "link", "symlink", "mkdir", "rmdir" };
	struct fixture *f = *state;
	char path[PATH_MAX * 2];
	struct guard g;
	char *out, *err;

	need_sandbox(f);
	guard_take(f, &g);
	attack(f, "$P/fsbt_attack legacy locked.txt locked.d other.txt", &out, &err);
	for (size_t i = 0; i < sizeof(tries) / sizeof(tries[0]); i++)
		expect_refused(out, err, tries[i]);
	snprintf(path, sizeof(path), "%s/other.txt", f->ws);
	expect_content(path, "other\n");
	guard_check(f, &g, out);
	free(out);
	free(err);
}

static void io_uring_setup_is_refused_so_no_write_happens(void **state)
{
	struct fixture *f = *state;
	struct guard g;
	char *out, *err;

	need_sandbox(f);
	guard_take(f, &g);
	attack(f, "$P/fsbt_attack io-uring", &out, &err);
	expect_refused(out, err, "io_uring_setup");
	guard_check(f, &g, out);
	free(out);
	free(err);
}

static void x32_syscall_numbers_get_enosys(void **state)
{
	struct fixture *f = *state;
	struct guard g;
	char *out, *err;

	need_sandbox(f);
	guard_take(f, &g);
	attack(f, "$P/fsbt_attack x32 locked.txt", &out, &err);
	expect_answer(out, err, "x32 openat", "ENOSYS");
	expect_answer(out, err, "x32 open", "ENOSYS");
	expect_answer(out, err, "x32 creat", "ENOSYS");
	expect_answer(out, err, "x32 unlink", "ENOSYS");
	guard_check(f, &g, out);
	free(out);
	free(err);
}

static void a_child_cannot_add_its_own_seccomp_listener(void **state)
{
	struct fixture *f = *state;
	char *out, *err;

	need_sandbox(f);
	attack(f, "$P/fsbt_attack listener", &out, &err);
	expect_answer(out, err, "seccomp NEW_LISTENER", "EPERM");
	/* A filter that can only restrict stays allowed (docs/runtime.md). */
	expect_answer(out, err, "seccomp plain filter", "ok");
	free(out);
	free(err);
}

/* Refused by the filter whatever Yama says (this kernel may have none). */
static void ptrace_of_a_sibling_is_refused(void **state)
{
	struct fixture *f = *state;
	char *out, *err;

	need_sandbox(f);
	attack(f, "$P/fsbt_attack ptrace", &out, &err);
	expect_answer(out, err, "ptrace PTRACE_ATTACH sibling", "EPERM");
	expect_answer(out, err, "ptrace PTRACE_SEIZE sibling", "EPERM");
	expect_answer(out, err, "process_vm_writev sibling", "EPERM");
	if (answer(out, "pidfd_open sibling") != NULL &&
	    strcmp(answer(out, "pidfd_open sibling"), "ok") == 0)
		expect_answer(out, err, "pidfd_getfd sibling fd 1", "EPERM");
	free(out);
	free(err);
}

/* A static helper did chroot("/var") as root, and the core then judged
 * ~/.bashrc as a path under ${tmp} while writing the real one. */
static void root_in_the_sandbox_holds_no_capability_and_cannot_chroot(void **state)
{
	struct fixture *f = *state;
	char *out, *err;

	need_sandbox(f);
	attack(f, "$P/fsbt_attack chroot /var", &out, &err);
	expect_answer(out, err, "capabilities", "none");
	expect_answer(out, err, "chroot", "EPERM");
	free(out);
	free(err);
}

/*
 * /dev/tty as a confused deputy: the default pack lets a command write
 * /dev/tty, and the core, opening it itself, handed over its own
 * controlling terminal (a native open inside gets ENXIO). fsbroker run is
 * given one here by script(1); a fake password prompt must not reach it.
 */
static void dev_tty_is_not_the_cores_terminal(void **state)
{
	struct fixture *f = *state;
	char *argv[32], line[PATH_MAX * 4], *out = NULL, *err = NULL, *s;
	const char *cmd[] = { "/bin/sh", "-c", "", "sh", NULL };
	size_t n = 0;
	int st;

	need_sandbox(f);
	if (access("/usr/bin/script", X_OK) != 0)
		fsbt_skip("script(1) is not installed: no controlling terminal can be given");
	s = with_progs(f, "$P/fsbt_attack tty");
	cmd[2] = s;
	run_argv(f, "s", cmd, argv, 32);
	line[0] = '\0';
	for (n = 0; argv[n] != NULL; n++) {
		strcat(line, n ? " '" : "'");
		strcat(line, argv[n]);
		strcat(line, "'");
	}
	st = run_split_as((char *[]){ "/usr/bin/script", "-qec", line, "/dev/null", NULL }, f->uid,
			  -1, &out, &err);
	(void)st;
	free(s);
	/* The terminal ends its lines with "\r\n". */
	for (char *r = strchr(out, '\r'); r != NULL; r = strchr(r, '\r'))
		memmove(r, r + 1, strlen(r));
	expect_answer(out, err, "open /dev/tty", "ENXIO");
	if (strstr(out, "FAKE PROMPT") != NULL)
		fsbt_fail_long("the command wrote to the core's terminal:\n%s", out);
	free(out);
	free(err);
}

/*
 * A write lease taken through a read-only fd made the core's own open of
 * the file (for its backup, then the grant) wait for the lease break, 45 s
 * each, while it held the work gate that every other call of the run
 * needs. The core opens without blocking: the write is refused at once
 * with EAGAIN (a blocked open would have gone through after the break),
 * and the file is untouched.
 */
static void a_file_lease_never_holds_the_core_up(void **state)
{
	struct fixture *f = *state;
	char path[PATH_MAX + 16], *out, *err;

	need_sandbox(f);
	snprintf(path, sizeof(path), "%s/leased.txt", f->ws);
	fsbt_write_file(path, "before\n");
	give(f, path);	/* a lease is its owner's to take */
	attack(f, "$P/fsbt_attack lease leased.txt", &out, &err);
	if (answer(out, "F_SETLEASE F_WRLCK") == NULL ||
	    strcmp(answer(out, "F_SETLEASE F_WRLCK"), "ok") != 0)
		fsbt_skip("no file lease could be taken here (%s)",
			  answer(out, "F_SETLEASE F_WRLCK") ? answer(out, "F_SETLEASE F_WRLCK")
							    : "no answer");
	expect_answer(out, err, "child open O_WRONLY", "EAGAIN");
	expect_content(path, "before\n");
	free(out);
	free(err);
}

/* Hold a write lease on `path` from a child of the test (which ignores
 * the break notice) until lease_drop; its pid, or skips. */
static pid_t lease_hold(const char *path)
{
	int p[2], fd;
	char c = 0;
	pid_t pid;

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	if (pid == 0) {
		signal(SIGIO, SIG_IGN);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		c = fd >= 0 && fcntl(fd, F_SETLEASE, F_WRLCK) == 0 ? 'y' : 'n';
		if (write(p[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	if (read(p[0], &c, 1) != 1 || c != 'y') {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(p[0]);
		fsbt_skip("no file lease could be taken on %s here", path);
	}
	close(p[0]);
	return pid;
}

static void lease_drop(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/*
 * A lease on each kind of file the core opens: the file a write open is
 * granted on, the file a backup copies (the truncate's), the file a read
 * open is served from (reads = "broker"), and the file a restore keeps a
 * copy of before it puts the old one back. None may make the core wait
 * for the break (45 s by default, when the kernel would let the open go
 * through): each is refused at once (EAGAIN, or a restore that says why
 * and changes nothing), another call in the middle is served, and once the
 * lease is gone the same call works.
 */
static void a_lease_on_any_file_the_core_opens_never_holds_it_up(void **state)
{
	struct fixture *f = *state;
	char path[PATH_MAX + 16], dir[PATH_MAX + 16], pack[PATH_MAX + 32], saved[PATH_MAX + 16];
	char cmd[PATH_MAX * 4], *out, *err;
	int st;
	pid_t holder;

	need_sandbox(f);
	snprintf(path, sizeof(path), "%s/leased.txt", f->ws);
	snprintf(dir, sizeof(dir), "%s/leased.txt.d", f->ws);
	fsbt_write_file(path, "before\n");
	give(f, path);

	/* Write grant, backup source, another call: the default pack. */
	attack(f, "$P/fsbt_attack lease-calls leased.txt", &out, &err);
	if (answer(out, "F_SETLEASE F_WRLCK") == NULL ||
	    strcmp(answer(out, "F_SETLEASE F_WRLCK"), "ok") != 0)
		fsbt_skip("no file lease could be taken here (%s)",
			  answer(out, "F_SETLEASE F_WRLCK") ? answer(out, "F_SETLEASE F_WRLCK")
							    : "no answer");
	expect_answer(out, err, "child open O_WRONLY", "EAGAIN");
	expect_answer(out, err, "child truncate", "EAGAIN");
	expect_answer(out, err, "child mkdir", "ok");
	expect_answer(out, err, "open O_WRONLY after the lease", "ok");
	expect_content(path, "before\n");
	free(out);
	free(err);
	rmdir(dir);

	/* The read path: a pack that brokers reads. */
	snprintf(pack, sizeof(pack), "%s/rules/lease-reads.lua", f->root);
	fsbt_write_file(pack, "return { name = \"lease-reads\", include = { \"bypass\" },\n"
			      "  reads = \"broker\" }\n");
	give(f, pack);
	snprintf(saved, sizeof(saved), "%s", f->pack);
	snprintf(f->pack, sizeof(f->pack), "%s", pack);
	attack(f, "$P/fsbt_attack lease-calls leased.txt read", &out, &err);
	snprintf(f->pack, sizeof(f->pack), "%s", saved);
	expect_answer(out, err, "child open O_RDONLY", "EAGAIN");
	expect_answer(out, err, "child mkdir", "ok");
	free(out);
	free(err);
	rmdir(dir);

	/* The restore target: a run changes the file, the host leases it. */
	attack(f, "echo changed > leased.txt", &out, &err);
	free(out);
	free(err);
	expect_content(path, "changed\n");
	holder = lease_hold(path);
	snprintf(cmd, sizeof(cmd), "'%s' backup restore --last --state-dir '%s' --session s",
		 f->fsbroker, f->state);
	{
		char *argv[] = { "/bin/sh", "-c", cmd, NULL };

		st = run_split_as(argv, f->uid, -1, &out, &err);
	}
	lease_drop(holder);
	if (!WIFEXITED(st) || WEXITSTATUS(st) == 0 || strstr(err, "lease") == NULL)
		fsbt_fail_long("restore with a lease held: status 0x%x\n%s%s", (unsigned)st, out,
			       err);
	expect_content(path, "changed\n");
	free(out);
	free(err);
	{
		char *argv[] = { "/bin/sh", "-c", cmd, NULL };

		st = run_split_as(argv, f->uid, -1, &out, &err);
	}
	if (st != 0)
		fsbt_fail_long("restore once the lease is gone: status 0x%x\n%s%s", (unsigned)st,
			       out, err);
	expect_content(path, "before\n");
	free(out);
	free(err);
}

/* The host's IPC namespace was shared: a sandboxed program read and
 * overwrote the user's SysV shared memory. */
static void the_hosts_sysv_shared_memory_is_out_of_reach(void **state)
{
	struct fixture *f = *state;
	const key_t key = 0x46534249;	/* "FSBI" */
	char *out, *err, script[128];
	int id;

	need_sandbox(f);
	if (access("/usr/bin/ipcs", X_OK) != 0)
		fsbt_skip("ipcs(1) is not installed");
	if ((id = shmget(key, 4096, IPC_CREAT | IPC_EXCL | 0600)) < 0)
		fsbt_skip("no SysV shared memory here: %s", strerror(errno));
	snprintf(script, sizeof(script), "ipcs -m | grep -c 0x%08x || true", (unsigned)key);
	attack(f, script, &out, &err);
	shmctl(id, IPC_RMID, NULL);
	/* ipcs prints the segment's key in hex: not one line inside. */
	if (strncmp(out, "0\n", 2) != 0)
		fsbt_fail_long("the sandbox sees the host's segment:\n%s%s", out, err);
	free(out);
	free(err);
}

/* The inode generation of `path` into *gen: 0, or -errno. */
static int generation(const char *path, unsigned *gen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int err;

	if (fd < 0)
		return -errno;
	err = ioctl(fd, FS_IOC_GETVERSION, gen) < 0 ? -errno : 0;
	close(fd);
	return err;
}

/* FS_IOC_SETVERSION was not routed: through a read-only fd it changed the
 * generation and ctime of .git/config, a hook and ~/.bashrc, unaudited. */
static void fs_ioc_setversion_through_a_read_only_fd_is_refused(void **state)
{
	struct fixture *f = *state;
	const char *names[] = { "victim.txt", "locked.txt", "../home/.bashrc" };
	struct stat before[3], after[3];
	unsigned gen[3], now;
	char path[3][PATH_MAX + 32], *out, *err;
	int rc;

	need_sandbox(f);
	fsbt_put(f->home, ".bashrc", "alias ls='ls -F'\n");
	for (int i = 0; i < 3; i++) {
		snprintf(path[i], sizeof(path[i]), "%s/%s", f->ws, names[i]);
		if ((rc = generation(path[i], &gen[i])) < 0)
			fsbt_skip("this file system has no inode generation to set (%s)",
				  strerror(-rc));
		assert_int_equal(stat(path[i], &before[i]), 0);
	}
	attack(f, "$P/fsbt_attack setversion victim.txt locked.txt ../home/.bashrc", &out, &err);
	for (int i = 0; i < 3; i++) {
		char what[64];

		snprintf(what, sizeof(what), "FS_IOC_GETVERSION %s", names[i]);
		expect_answer(out, err, what, "ok");
		snprintf(what, sizeof(what), "FS_IOC_SETVERSION %s", names[i]);
		expect_answer(out, err, what, "EPERM");
		assert_int_equal(stat(path[i], &after[i]), 0);
		if (generation(path[i], &now) < 0 || now != gen[i] ||
		    after[i].st_ctim.tv_sec != before[i].st_ctim.tv_sec ||
		    after[i].st_ctim.tv_nsec != before[i].st_ctim.tv_nsec)
			fsbt_fail_long("%s: its generation or ctime changed\n%s", names[i], out);
	}
	free(out);
	free(err);
}

static void tiocsti_cannot_push_input_into_the_terminal(void **state)
{
	struct fixture *f = *state;
	struct termios raw;
	struct pollfd p;
	int master, slave;
	char *out, *err, *name;

	need_sandbox(f);
	master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0 ||
	    (name = ptsname(master)) == NULL)
		fsbt_skip("no pseudo-terminal here: %s", strerror(errno));
	slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	assert_true(slave >= 0);
	/* Raw, so that one injected byte is readable at once. */
	assert_int_equal(tcgetattr(slave, &raw), 0);
	cfmakeraw(&raw);
	assert_int_equal(tcsetattr(slave, TCSANOW, &raw), 0);
	{
		char *s = with_progs(f, "$P/fsbt_attack tiocsti");

		run_sh(f, s, slave, &out, &err);
		free(s);
	}
	expect_answer(out, err, "fd 0 is a tty", "yes");
	expect_answer(out, err, "ioctl TIOCSTI fd 0", "EPERM");
	/* Nothing waits in the terminal's input for the user's shell. */
	p = (struct pollfd){ .fd = slave, .events = POLLIN };
	if (poll(&p, 1, 0) > 0)
		fsbt_fail_long("input was pushed into the terminal");
	close(slave);
	close(master);
	free(out);
	free(err);
}

/* ------------------------------------------------------------------------ */
/* Names: symlinks, races, relative paths, /dev/std*. */

static void a_planted_absolute_symlink_cannot_write_a_masked_or_host_only_path(void **state)
{
	struct fixture *f = *state;
	char path[PATH_MAX * 2], host_file[PATH_MAX + 16], state_file[PATH_MAX + 32];
	struct guard g;
	struct stat before, after;
	char *out, *err;

	need_sandbox(f);
	/* Three targets the sandbox must not reach: the user's key (masked),
	 * a file in the state dir (masked), a file in the host's /tmp (the
	 * sandbox has its own /tmp). */
	snprintf(f->host_tmp, sizeof(f->host_tmp), "/tmp/fsbt-hostonly-XXXXXX");
	assert_non_null(mkdtemp(f->host_tmp));
	snprintf(host_file, sizeof(host_file), "%s/file", f->host_tmp);
	fsbt_write_file(host_file, "host only\n");
	assert_int_equal(mkdir(f->state, 0700), 0);
	snprintf(state_file, sizeof(state_file), "%s/host-only.txt", f->state);
	fsbt_write_file(state_file, "state\n");
	give(f, f->state);
	give(f, state_file);
	snprintf(path, sizeof(path), "%s/key", f->ws);
	assert_int_equal(symlink(f->key, path), 0);
	snprintf(path, sizeof(path), "%s/ssh-dir", f->ws);
	assert_int_equal(symlink(dirname(strdupa(f->key)), path), 0);
	snprintf(path, sizeof(path), "%s/state-file", f->ws);
	assert_int_equal(symlink(state_file, path), 0);
	snprintf(path, sizeof(path), "%s/host-tmp", f->ws);
	assert_int_equal(symlink(host_file, path), 0);
	assert_int_equal(stat(state_file, &before), 0);
	guard_take(f, &g);
	attack(f, "for l in key ssh-dir/new state-file host-tmp; do\n"
		  "  if echo PWNED > $l; then r=ok; else r=refused; fi; echo \"write $l: $r\"\n"
		  "done\n", &out, &err);
	expect_answer(out, err, "write key", "refused");
	expect_answer(out, err, "write ssh-dir/new", "refused");
	expect_answer(out, err, "write state-file", "refused");
	expect_answer(out, err, "write host-tmp", "refused");
	guard_check(f, &g, out);
	snprintf(path, sizeof(path), "%s/.ssh/new", f->home);
	expect_absent(path);
	expect_content(state_file, "state\n");
	assert_int_equal(stat(state_file, &after), 0);
	assert_true(before.st_ctim.tv_sec == after.st_ctim.tv_sec &&
		    before.st_ctim.tv_nsec == after.st_ctim.tv_nsec);
	expect_content(host_file, "host only\n");
	free(out);
	free(err);
}

static void a_symlink_swapped_during_writes_never_reaches_the_protected_file(void **state)
{
	struct fixture *f = *state;
	struct guard g;
	char *out, *err;
	int st;

	need_sandbox(f);
	guard_take(f, &g);
	st = attack(f, "$P/fsbt_race symlink 10000 link victim.txt locked.txt", &out, &err);
	guard_check(f, &g, out);
	if (st != 0 || strstr(out, " protected=0 ") == NULL)
		fsbt_fail_long("the race reached the protected file (status 0x%x):\n%s\n%s",
			 (unsigned)st, out, err);
	/* Every flip happened, and writes got through to the workspace file:
	 * the race really ran. */
	if (strstr(out, " flips=10000 flip_errors=0") == NULL || strstr(out, " granted=0 ") != NULL)
		fsbt_fail_long("the race did not run as meant:\n%s\n%s", out, err);
	free(out);
	free(err);
}

static void a_path_buffer_rewritten_after_the_call_never_reaches_the_protected_file(void **state)
{
	struct fixture *f = *state;
	struct guard g;
	char *out, *err;
	int st;

	need_sandbox(f);
	guard_take(f, &g);
	st = attack(f, "$P/fsbt_race pathbuf 10000 victim.txt locked.txt", &out, &err);
	guard_check(f, &g, out);
	if (st != 0 || strstr(out, " protected=0 ") == NULL)
		fsbt_fail_long("the race reached the protected file (status 0x%x):\n%s\n%s",
			 (unsigned)st, out, err);
	if (strstr(out, "opens=10000 ") == NULL)
		fsbt_fail_long("the race did not run as meant:\n%s\n%s", out, err);
	free(out);
	free(err);
}

static void a_write_to_dotdot_from_a_subdirectory_lands_in_the_parent(void **state)
{
	struct fixture *f = *state;
	char path[PATH_MAX * 2];
	char *out, *err;
	int st;

	need_sandbox(f);
	st = attack(f, "mkdir sub && cd sub && echo x > ../x", &out, &err);
	if (st != 0)
		fsbt_fail_long("fsbroker run exited 0x%x:\n%s\n%s", (unsigned)st, out, err);
	snprintf(path, sizeof(path), "%s/x", f->ws);
	expect_content(path, "x\n");
	snprintf(path, sizeof(path), "%s/sub/x", f->ws);
	expect_absent(path);
	snprintf(path, sizeof(path), "%s/x", f->root);
	expect_absent(path);
	free(out);
	free(err);
}

static void a_write_to_dev_stderr_reaches_stderr(void **state)
{
	struct fixture *f = *state;
	char *out, *err;
	int st;

	need_sandbox(f);
	st = attack(f, "echo to-stderr > /dev/stderr && echo to-stdout > /dev/stdout", &out, &err);
	if (st != 0 || strstr(err, "to-stderr\n") == NULL || strstr(out, "to-stdout\n") == NULL)
		fsbt_fail_long("fsbroker run exited 0x%x\nstdout:\n%s\nstderr:\n%s", (unsigned)st, out, err);
	free(out);
	free(err);
}

static void a_signal_storm_never_performs_an_o_excl_create_twice(void **state)
{
	struct fixture *f = *state;
	char *out, *err;
	int st;

	need_sandbox(f);
	st = attack(f, "mkdir storm && $P/fsbt_excl_storm storm 1000", &out, &err);
	if (st != 0 || strstr(out, "created=1000 mkdirs=1000 eexist=0 eintr=0 other=0") == NULL)
		fsbt_fail_long("a call was performed twice or failed (status 0x%x):\n%s\n%s",
			 (unsigned)st, out, err);
	/* The storm really happened. */
	if (strstr(out, " signals=0") != NULL)
		fsbt_fail_long("no signal arrived during the creates:\n%s", out);
	free(out);
	free(err);
}

/* ------------------------------------------------------------------------ */
/* Places outside the sandbox. */

static void the_state_dir_and_admin_socket_are_out_of_reach(void **state)
{
	struct fixture *f = *state;
	char script[PATH_MAX * 4], what[PATH_MAX * 2], path[PATH_MAX * 2];
	struct stat st;
	char *out, *err;
	const char *got;

	need_sandbox(f);
	snprintf(script, sizeof(script),
		 "$P/fsbt_reach list:%s open:%s/sessions list:%s/sessions/s open:%s/audit "
		 "connect:%s/admin.sock", f->state, f->state, f->state, f->state, f->state);
	attack(f, script, &out, &err);
	/* On the host the state dir is there, with the run's session in it. */
	snprintf(path, sizeof(path), "%s/sessions/s", f->state);
	assert_int_equal(stat(path, &st), 0);
	snprintf(what, sizeof(what), "list %s", f->state);
	got = answer(out, what);
	if (got == NULL || (strcmp(got, "0 entries:") != 0 && strncmp(got, "E", 1) != 0))
		fsbt_fail_long("the sandbox sees the state dir: %s\n%s\n%s", got ? got : "(no answer)",
			 out, err);
	snprintf(what, sizeof(what), "open %s/sessions", f->state);
	expect_refused(out, err, what);
	snprintf(what, sizeof(what), "list %s/sessions/s", f->state);
	expect_refused(out, err, what);
	snprintf(what, sizeof(what), "open %s/audit", f->state);
	expect_refused(out, err, what);
	snprintf(what, sizeof(what), "connect %s/admin.sock", f->state);
	expect_refused(out, err, what);
	free(out);
	free(err);
}

/* Start `fsbroker run --session SESSION -- sh -c 'wait for ws/stop'` in
 * the background, output into root/<session>.log; its pid. */
static pid_t start_waiting_run(struct fixture *f, const char *session)
{
	const char *cmd[] = { "/bin/sh", "-c", "while [ ! -e stop ]; do sleep 0.05; done", NULL };
	char *argv[32], log[PATH_MAX + 32];
	pid_t pid;

	run_argv(f, session, cmd, argv, 32);
	snprintf(log, sizeof(log), "%s/%s.log", f->root, session);
	pid = fork();
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (fd < 0 || null < 0 || dup2(null, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(127);
		execv(argv[0], argv);
		_exit(127);
	}
	assert_true(pid > 0);
	return pid;
}

/* Let the background run end (ws/stop), or kill it by pid after 10 s. */
static void stop_waiting_run(struct fixture *f, pid_t pid)
{
	char path[PATH_MAX * 2];
	uint64_t deadline = fsbt_now_ms() + FSBT_TIMEOUT_MS;
	int st;

	snprintf(path, sizeof(path), "%s/stop", f->ws);
	fsbt_write_file(path, "");
	while (waitpid(pid, &st, WNOHANG) == 0) {
		if (fsbt_now_ms() >= deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			break;
		}
		fsbt_sleep_ms(20);
	}
	unlink(path);
}

/* The socket of run `pid` under `pattern` (a glob with %ld for the pid),
 * waited for up to 10 s; "" when it never appeared. */
static void find_run_socket(const char *pattern, pid_t pid, char *out, size_t len)
{
	uint64_t deadline = fsbt_now_ms() + FSBT_TIMEOUT_MS;
	char pat[PATH_MAX * 2];

	snprintf(pat, sizeof(pat), pattern, (long)pid);
	out[0] = '\0';
	while (out[0] == '\0' && fsbt_now_ms() < deadline) {
		glob_t g;

		if (glob(pat, 0, NULL, &g) == 0 && g.gl_pathc > 0)
			snprintf(out, len, "%s", g.gl_pathv[0]);
		else
			fsbt_sleep_ms(20);
		globfree(&g);
	}
}

/* The other run's socket is tried in both places a run puts it: under the
 * host's /tmp (no XDG_RUNTIME_DIR) and under $XDG_RUNTIME_DIR. */
static void another_runs_socket_is_out_of_reach(void **state)
{
	struct fixture *f = *state;
	char xdg[PATH_MAX + 8], sock[PATH_MAX], script[PATH_MAX * 3], what[PATH_MAX + 16];
	char *out, *err;

	need_sandbox(f);
	for (int round = 0; round < 2; round++) {
		const char *pattern;
		pid_t other;
		int fd;

		if (round == 0) {
			snprintf(xdg, sizeof(xdg), "/tmp/fsb-%u/run-%%ld/*.sock", (unsigned)getuid());
			pattern = xdg;
		} else {
			snprintf(xdg, sizeof(xdg), "%s/xdg", f->root);
			assert_int_equal(mkdir(xdg, 0700), 0);
			setenv("XDG_RUNTIME_DIR", xdg, 1);
			snprintf(xdg, sizeof(xdg), "%s/xdg/fsbroker-run-%%ld/*.sock", f->root);
			pattern = xdg;
		}
		other = start_waiting_run(f, round == 0 ? "other-a" : "other-b");
		find_run_socket(pattern, other, sock, sizeof(sock));
		if (sock[0] == '\0') {
			stop_waiting_run(f, other);
			fsbt_fail_long("the other run's socket never appeared (%s)", pattern);
		}
		/* It is live on the host (once listening: the name appears at
		 * bind, a moment before listen). */
		{
			uint64_t deadline = fsbt_now_ms() + FSBT_TIMEOUT_MS;

			while ((fd = fsbt_connect_path(sock)) == -ECONNREFUSED &&
			       fsbt_now_ms() < deadline)
				fsbt_sleep_ms(20);
		}
		if (fd < 0) {
			stop_waiting_run(f, other);
			fsbt_fail_long("cannot connect to %s on the host: %s", sock, strerror(-fd));
		}
		close(fd);
		snprintf(script, sizeof(script), "$P/fsbt_reach connect:%s", sock);
		attack(f, script, &out, &err);
		stop_waiting_run(f, other);
		snprintf(what, sizeof(what), "connect %s", sock);
		expect_refused(out, err, what);
		free(out);
		free(err);
	}
}

/* /run/user holds every login session's runtime dir (keyrings, agent
 * sockets, the session bus); $XDG_RUNTIME_DIR the current one's. */
static void the_hosts_run_user_is_out_of_reach(void **state)
{
	struct fixture *f = *state;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char xdg[PATH_MAX + 8], agent[PATH_MAX + 32], probe[PATH_MAX + 8], script[PATH_MAX * 4];
	char what[PATH_MAX + 32];
	char *out, *err;
	const char *got;
	struct stat st;
	int lfd;

	need_sandbox(f);
	if (stat("/run/user", &st) < 0 || !S_ISDIR(st.st_mode))
		fsbt_skip("this host has no /run/user");
	snprintf(f->run_user, sizeof(f->run_user), "/run/user/fsbt-probe-%ld", (long)getpid());
	if (mkdir(f->run_user, 0700) < 0) {
		f->run_user[0] = '\0';
		fsbt_skip("cannot make a probe in /run/user: %s", strerror(errno));
	}
	snprintf(probe, sizeof(probe), "%s/file", f->run_user);
	fsbt_write_file(probe, "session secret\n");
	/* A live agent socket in $XDG_RUNTIME_DIR. */
	snprintf(xdg, sizeof(xdg), "%s/xdg", f->root);
	assert_int_equal(mkdir(xdg, 0700), 0);
	snprintf(agent, sizeof(agent), "%s/agent.sock", xdg);
	assert_true(strlen(agent) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, agent, strlen(agent) + 1);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 4), 0);
	setenv("XDG_RUNTIME_DIR", xdg, 1);
	snprintf(script, sizeof(script),
		 "$P/fsbt_reach list:/run/user open:%s connect:%s list:%s", probe, agent, xdg);
	attack(f, script, &out, &err);
	close(lfd);
	got = answer(out, "list /run/user");
	if (got == NULL || strstr(got, "fsbt-probe") != NULL)
		fsbt_fail_long("the sandbox sees the host's /run/user: %s\n%s\n%s",
			 got ? got : "(no answer)", out, err);
	snprintf(what, sizeof(what), "open %s", probe);
	expect_refused(out, err, what);
	snprintf(what, sizeof(what), "connect %s", agent);
	expect_refused(out, err, what);
	snprintf(what, sizeof(what), "list %s", xdg);
	got = answer(out, what);
	if (got == NULL || strstr(got, "agent.sock") != NULL)
		fsbt_fail_long("the sandbox sees $XDG_RUNTIME_DIR: %s\n%s\n%s", got ? got : "(no answer)",
			 out, err);
	free(out);
	free(err);
}

/* The attacks that apply to root and to an ordinary user alike. */
#define ATTACKS(T) \
	T(openat2_o_wronly_on_a_protected_file_is_refused) \
	T(creat_of_a_protected_file_is_refused) \
	T(o_tmpfile_linked_onto_a_protected_name_is_refused) \
	T(rename_exchange_of_a_protected_file_with_a_workspace_file_is_refused) \
	T(legacy_path_syscalls_on_protected_files_are_refused) \
	T(io_uring_setup_is_refused_so_no_write_happens) \
	T(x32_syscall_numbers_get_enosys) \
	T(a_child_cannot_add_its_own_seccomp_listener) \
	T(ptrace_of_a_sibling_is_refused) \
	T(root_in_the_sandbox_holds_no_capability_and_cannot_chroot) \
	T(dev_tty_is_not_the_cores_terminal) \
	T(a_file_lease_never_holds_the_core_up) \
	T(a_lease_on_any_file_the_core_opens_never_holds_it_up) \
	T(fs_ioc_setversion_through_a_read_only_fd_is_refused) \
	T(tiocsti_cannot_push_input_into_the_terminal) \
	T(a_planted_absolute_symlink_cannot_write_a_masked_or_host_only_path) \
	T(a_write_to_dotdot_from_a_subdirectory_lands_in_the_parent) \
	T(a_write_to_dev_stderr_reaches_stderr) \
	T(network_none_cuts_a_connect_to_the_hosts_loopback)
/* A TCP listener on the host's 127.0.0.1, port chosen by the kernel. */
static int host_loopback_listener(int *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 16), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	*port = ntohs(sa.sin_port);
	return fd;
}

/* fsbt_reach tcp:PORT under `fsbroker run --rules PACK [--network NET]`:
 * its answer ("ok" or an errno's name). */
static char *tcp_from_inside(struct fixture *f, const char *pack, const char *net, int port)
{
	char helper[PATH_MAX + 16], arg[32];
	char *argv[20], *out = NULL, *err = NULL, *answer_copy;
	const char *a;
	size_t n = 0;
	int st;

	snprintf(helper, sizeof(helper), "%s/fsbt_reach", f->progs);
	snprintf(arg, sizeof(arg), "tcp:%d", port);
	argv[n++] = f->fsbroker;
	argv[n++] = "run";
	argv[n++] = "--rules";
	argv[n++] = (char *)pack;
	argv[n++] = "--workspace";
	argv[n++] = f->ws;
	argv[n++] = "--state-dir";
	argv[n++] = f->state;
	argv[n++] = "--session";
	argv[n++] = "s";
	if (net != NULL) {
		argv[n++] = "--network";
		argv[n++] = (char *)net;
	}
	argv[n++] = "--";
	argv[n++] = helper;
	argv[n++] = arg;
	argv[n] = NULL;
	st = run_split_as(argv, f->uid, -1, &out, &err);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fsbt_fail_long("fsbroker run (%s, --network %s) exited 0x%x:\n%s%s", pack,
			       net ? net : "(the pack's)", (unsigned)st, out, err);
	snprintf(arg, sizeof(arg), "tcp %d", port);
	a = answer(out, arg);
	if (a == NULL)
		fsbt_fail_long("no answer from fsbt_reach:\n%s%s", out, err);
	answer_copy = strdup(a);
	free(out);
	free(err);
	return answer_copy;
}

/*
 * network = "none" (the pack's or --network's): a connect to a listener on
 * the host's 127.0.0.1 fails from inside, since the sandbox's loopback is
 * its own; network = "host" reaches it. The flag overrides the pack both
 * ways.
 */
static void network_none_cuts_a_connect_to_the_hosts_loopback(void **state)
{
	struct fixture *f = *state;
	char none_pack[PATH_MAX + 16];
	int lfd, port;
	char *a;

	need_sandbox(f);
	snprintf(none_pack, sizeof(none_pack), "%s/rules/offline.lua", f->root);
	fsbt_write_file(none_pack, "return { name = \"offline\", include = { \"default\" }, "
			"network = \"none\" }\n");
	give(f, none_pack);
	lfd = host_loopback_listener(&port);

	a = tcp_from_inside(f, f->pack, NULL, port);	/* the default pack's: host */
	assert_string_equal(a, "ok");
	free(a);
	a = tcp_from_inside(f, none_pack, NULL, port);
	if (strcmp(a, "ok") == 0)
		fsbt_fail_long("under network = \"none\" the host's 127.0.0.1:%d was reached", port);
	free(a);
	a = tcp_from_inside(f, f->pack, "none", port);
	if (strcmp(a, "ok") == 0)
		fsbt_fail_long("under --network none the host's 127.0.0.1:%d was reached", port);
	free(a);
	a = tcp_from_inside(f, none_pack, "host", port);
	assert_string_equal(a, "ok");
	free(a);
	close(lfd);
}

int main(void)
{
#define AS_CALLER(name) cmocka_unit_test_setup_teardown(name, setup, teardown),
#define AS_USER(name) { "as_user: " #name, name, setup_as_user, teardown, NULL },
	const struct CMUnitTest tests[] = {
		ATTACKS(AS_CALLER)
		/* Races with the core's resolution (10,000 swaps each): whose
		 * uid runs them changes nothing they test, and they are the
		 * slowest under the sanitizers. */
		AS_CALLER(a_symlink_swapped_during_writes_never_reaches_the_protected_file)
		AS_CALLER(a_path_buffer_rewritten_after_the_call_never_reaches_the_protected_file)
		AS_CALLER(a_signal_storm_never_performs_an_o_excl_create_twice)
		/* What only root sets up on the host: as the caller only. */
		AS_CALLER(the_hosts_sysv_shared_memory_is_out_of_reach)
		AS_CALLER(the_state_dir_and_admin_socket_are_out_of_reach)
		AS_CALLER(another_runs_socket_is_out_of_reach)
		AS_CALLER(the_hosts_run_user_is_out_of_reach)
	};
	const struct CMUnitTest as_user[] = { ATTACKS(AS_USER) };
#undef AS_CALLER
#undef AS_USER
	int rc = fsbt_run_group(tests, NULL, NULL);

	return fsbt_run_group(as_user, NULL, NULL) | rc;
}
