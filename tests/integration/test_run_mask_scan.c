/*
 * test_run_mask_scan.c — what the reads = "mask" scan of `fsbroker run`
 * cannot look at stays unreadable (docs/runtime-mount-plan.md): a directory
 * it cannot read is masked whole, a directory beyond its depth bound too,
 * and reaching its entry bound refuses the run with a sentence. Each in both
 * read modes (with reads = "broker" the supervisor refuses the read
 * instead), as root and as an ordinary user (uid 65534) where both apply:
 * root's scan reads a 0311 directory anyway, an ordinary user's cannot.
 * Then the scan's index (core/linux/scan_index.c): a repeat run that finds
 * a directory changed since the last scan (renamed, chmod 000, a new .env
 * three levels down, on a tmpfs), a corrupt or forged index, an edited
 * pack, still masks every denyRead file, and two packs taking turns on a
 * workspace each keep their own index.
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOBODY 65534
#define SECRET "SECRET-PROD-7f3a"
/* The exit status a child gives when the build cannot be run as the uid. */
#define UNREACHABLE 120

static const char *const modes[] = { "mask", "broker" };

struct fixture {
	char root[PATH_MAX];
};

/* One run's layout: a home, a workspace, a private tmp, a state dir and a
 * pack that includes the default one with the read mode under test. */
struct layout {
	char base[PATH_MAX], home[PATH_MAX + 8], ws[PATH_MAX + 8], tmp[PATH_MAX + 8];
	char state[PATH_MAX + 8], pack[PATH_MAX + 16];
	uid_t uid;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	/* Not under /tmp: the sandbox has a private one. */
	snprintf(f->root, sizeof(f->root), "/var/tmp/fsbt-mscan-XXXXXX");
	assert_non_null(mkdtemp(f->root));
	assert_int_equal(chmod(f->root, 0755), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->root);
	if (getenv("FSBT_KEEP") == NULL && system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", f->root);
	free(f);
	return 0;
}

static void layout_make(struct fixture *f, const char *name, const char *mode, uid_t uid,
			struct layout *l)
{
	char text[256];

	memset(l, 0, sizeof(*l));
	l->uid = uid;
	snprintf(l->base, sizeof(l->base), "%s/%s-%s-%u", f->root, name, mode, (unsigned)uid);
	snprintf(l->home, sizeof(l->home), "%s/home", l->base);
	snprintf(l->ws, sizeof(l->ws), "%s/ws", l->base);
	snprintf(l->tmp, sizeof(l->tmp), "%s/tmp", l->base);
	snprintf(l->state, sizeof(l->state), "%s/state", l->base);
	snprintf(l->pack, sizeof(l->pack), "%s/pack.lua", l->base);
	assert_int_equal(mkdir(l->base, 0755), 0);
	assert_int_equal(mkdir(l->home, 0755), 0);
	assert_int_equal(mkdir(l->ws, 0755), 0);
	assert_int_equal(mkdir(l->tmp, 0700), 0);
	snprintf(text, sizeof(text), "return { name = \"scan-%s\", include = { \"default\" }, "
		 "reads = \"%s\" }\n", mode, mode);
	fsbt_write_file(l->pack, text);
}

/* Give the layout to its user, once its files are in place. */
static void layout_own(const struct layout *l)
{
	char cmd[PATH_MAX + 64];

	if (l->uid == getuid())
		return;
	snprintf(cmd, sizeof(cmd), "chown -R %u:%u '%s'", (unsigned)l->uid, (unsigned)l->uid,
		 l->base);
	assert_int_equal(system(cmd), 0);
}

/* `fsbroker run --rules PACK --workspace WS --state-dir ST --session s
 * [EXTRA...] -- sh -c SCRIPT` as the layout's user with its HOME and
 * TMPDIR; stdout, stderr and fd 3 (for --summary-fd 3) together into *out.
 * The wait status. */
static int run_as(const struct layout *l, const char *const *extra, const char *script,
		  char **out)
{
	char *argv[24], bin[PATH_MAX];
	int argc = 0;
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);
	int p[2], status = -1;
	pid_t pid;

	/* FSBROKER may be relative (make test gives build/fsbroker), and the
	 * child changes into the workspace before it execs. */
	if (realpath(fsbt_binary(), bin) == NULL)
		snprintf(bin, sizeof(bin), "%s", fsbt_binary());
	argv[argc++] = bin;
	argv[argc++] = "run";
	argv[argc++] = "--rules";
	argv[argc++] = (char *)l->pack;
	argv[argc++] = "--workspace";
	argv[argc++] = (char *)l->ws;
	argv[argc++] = "--state-dir";
	argv[argc++] = (char *)l->state;
	argv[argc++] = "--session";
	argv[argc++] = "s";
	for (; extra != NULL && *extra != NULL && argc < 18; extra++)
		argv[argc++] = (char *)*extra;
	argv[argc++] = "--";
	argv[argc++] = "sh";
	argv[argc++] = "-c";
	argv[argc++] = (char *)script;
	argv[argc] = NULL;
	assert_non_null(buf);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (dup2(p[1], 1) < 0 || dup2(p[1], 2) < 0 || dup2(p[1], 3) < 0)
			_exit(127);
		setenv("HOME", l->home, 1);
		setenv("TMPDIR", l->tmp, 1);
		unsetenv("XDG_RUNTIME_DIR");
		unsetenv("XDG_STATE_HOME");
		unsetenv("XDG_CONFIG_HOME");
		if (l->uid != getuid() &&
		    (setgroups(0, NULL) < 0 || setgid(l->uid) < 0 || setuid(l->uid) < 0))
			_exit(126);
		if (access(argv[0], X_OK) < 0)
			_exit(UNREACHABLE);
		if (chdir(l->ws) < 0)
			_exit(127);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	for (;;) {
		struct pollfd pf = { .fd = p[0], .events = POLLIN };
		ssize_t n;

		/* A hang detector, not a measure. */
		if (poll(&pf, 1, 120000) <= 0) {
			kill(pid, SIGKILL);
			break;
		}
		if (len + 1024 > cap) {
			char *nb = realloc(buf, cap *= 2);

			assert_non_null(nb);
			buf = nb;
		}
		n = read(p[0], buf + len, cap - len - 1);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	close(p[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	*out = buf;
	return status;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *s = hay; (s = strstr(s, needle)) != NULL; s += strlen(needle))
		n++;
	return n;
}

/* Why this test cannot run as `uid`, or NULL. */
static const char *cannot_run_as(uid_t uid, char *why, size_t len)
{
	if (fsbt_sandbox_unsupported(why, len) != NULL)
		return why;
	if (uid != getuid() && getuid() != 0) {
		snprintf(why, len, "needs root to run as uid %u", (unsigned)uid);
		return why;
	}
	return NULL;
}

/* Run 1 makes deploy/ 0311 and keys/ 0644 (listable, not searchable) from
 * inside a run (the pack allows it: workspace changes); run 2 reads the
 * denyRead file in deploy/ by name, and makes keys/ searchable again to
 * read the one in it. */
static void unreadable_directory_case(struct fixture *f, const char *mode, uid_t uid)
{
	struct layout l;
	char dir[PATH_MAX * 2], masked[PATH_MAX * 2 + 32], keys[PATH_MAX * 2 + 32], *out = NULL;
	int st;

	layout_make(f, "unreadable", mode, uid, &l);
	snprintf(dir, sizeof(dir), "%s/deploy", l.ws);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(dir, sizeof(dir), "%s/deploy/prod", l.ws);
	assert_int_equal(mkdir(dir, 0755), 0);
	fsbt_put(dir, ".env.production", SECRET "\n");
	snprintf(dir, sizeof(dir), "%s/keys", l.ws);
	assert_int_equal(mkdir(dir, 0755), 0);
	fsbt_put(dir, ".env", SECRET "\n");
	layout_own(&l);

	st = run_as(&l, NULL, "chmod 0311 deploy && chmod 0644 keys", &out);
	if (WIFEXITED(st) && WEXITSTATUS(st) == UNREACHABLE)
		fsbt_skip("the build is not reachable as uid %u (a checkout others cannot enter)",
			  (unsigned)uid);
	if (st != 0)
		fsbt_fail_long("run 1 (%s, uid %u) exited 0x%x:\n%s", mode, (unsigned)uid,
			       (unsigned)st, out);
	free(out);
	snprintf(dir, sizeof(dir), "%s/deploy", l.ws);
	{
		struct stat sb;

		assert_int_equal(stat(dir, &sb), 0);
		assert_int_equal(sb.st_mode & 07777, 0311);
	}

	st = run_as(&l, NULL, "cat deploy/prod/.env.production; echo \"ran $?\"; "
		    "chmod 0755 keys; cat keys/.env", &out);
	if (strstr(out, SECRET) != NULL)
		fsbt_fail_long("reads = \"%s\", uid %u: a denyRead file in the 0311 or the "
			       "0644 directory was read:\n%s", mode, (unsigned)uid, out);
	if (strstr(out, "ran 1") == NULL)
		fsbt_fail_long("reads = \"%s\", uid %u: the command did not run and fail:\n%s",
			       mode, (unsigned)uid, out);
	snprintf(masked, sizeof(masked), "%s is masked whole", dir);
	if (strcmp(mode, "broker") == 0) {
		/* The supervisor judges the open: the scan is not involved. */
		if (strstr(out, "refused: read of ") == NULL ||
		    strstr(out, "(denyRead **/.env.*)") == NULL || count(out, "masked whole") != 0)
			fsbt_fail_long("reads = \"broker\", uid %u: no refusal by the supervisor:\n%s",
				       (unsigned)uid, out);
	} else if (uid != 0) {
		/* The user's scan cannot read deploy/: the whole of it is masked,
		 * and the run says so once, naming it. */
		snprintf(keys, sizeof(keys), "%s/keys is masked whole", l.ws);
		if (count(out, masked) != 1 || count(out, keys) != 1 ||
		    strstr(out, "chmod u+rx") == NULL)
			fsbt_fail_long("reads = \"mask\", uid %u: the masked directories are not "
				       "said once each:\n%s", (unsigned)uid, out);
		/* A program reading --summary-fd finds it there, and stderr
		 * carries none of it. */
		free(out);
		st = run_as(&l, (const char *const[]){ "--summary-fd", "3", NULL },
			    "cat deploy/prod/.env.production 2>/dev/null; echo \"ran $?\"", &out);
		if (strstr(out, SECRET) != NULL || count(out, masked) != 1 ||
		    strstr(out, "\"maskWarnings\":[\"") == NULL ||
		    strstr(out, "fsbroker run: ") != NULL)
			fsbt_fail_long("reads = \"mask\", uid %u, --summary-fd: the masked "
				       "directory is not in maskWarnings alone:\n%s", (unsigned)uid, out);
	} else if (count(out, "masked whole") != 0) {
		/* Root's scan reads a 0311 directory (CAP_DAC_READ_SEARCH): the
		 * file itself is masked, nothing else. */
		fsbt_fail_long("reads = \"mask\" as root: deploy/ masked whole:\n%s", out);
	}
	free(out);
}

static void an_unreadable_directory_does_not_hide_a_denied_file_from_the_mask(void **state)
{
	uid_t uid = getuid() == 0 ? NOBODY : getuid();
	char why[512];

	if (cannot_run_as(uid, why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		unreadable_directory_case(*state, modes[i], uid);
}

static void an_unreadable_directory_does_not_hide_a_denied_file_from_the_mask_as_root(void **state)
{
	char why[512];

	if (getuid() != 0)
		fsbt_skip("needs root");
	if (cannot_run_as(0, why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		unreadable_directory_case(*state, modes[i], 0);
}

/* A literal denyRead path (no glob: masked without a scan, in both modes)
 * inside a directory run 1 made 0000; run 2 makes it searchable again and
 * reads the file. */
static void a_literal_denied_path_in_an_unsearchable_directory_stays_hidden(void **state)
{
	uid_t uid = getuid() == 0 ? NOBODY : getuid();
	char why[512], dir[PATH_MAX * 2], masked[PATH_MAX * 2 + 32], text[512], *out = NULL;
	struct layout l;
	int st;

	if (cannot_run_as(uid, why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		layout_make(*state, "literal", modes[i], uid, &l);
		snprintf(text, sizeof(text), "return { name = \"scan-literal\", include = "
			 "{ \"default\" }, reads = \"%s\", denyRead = { \"%s/locked/token\" } }\n",
			 modes[i], l.ws);
		fsbt_write_file(l.pack, text);
		snprintf(dir, sizeof(dir), "%s/locked", l.ws);
		assert_int_equal(mkdir(dir, 0755), 0);
		fsbt_put(dir, "token", SECRET "\n");
		layout_own(&l);
		st = run_as(&l, NULL, "chmod 0 locked", &out);
		if (WIFEXITED(st) && WEXITSTATUS(st) == UNREACHABLE)
			fsbt_skip("the build is not reachable as uid %u", (unsigned)uid);
		if (st != 0)
			fsbt_fail_long("run 1 (%s) exited 0x%x:\n%s", modes[i], (unsigned)st, out);
		free(out);
		st = run_as(&l, NULL, "chmod 0755 locked; cat locked/token; echo \"ran $?\"", &out);
		if (strstr(out, SECRET) != NULL || strstr(out, "ran 1") == NULL)
			fsbt_fail_long("reads = \"%s\", uid %u: the literal denyRead file was read, "
				       "or the command did not run:\n%s", modes[i], (unsigned)uid, out);
		snprintf(masked, sizeof(masked), "%s is masked whole", dir);
		if (uid != 0 && strcmp(modes[i], "mask") == 0 && count(out, masked) != 1)
			fsbt_fail_long("reads = \"mask\": the 0000 directory is not said to be "
				       "masked, once:\n%s", out);
		free(out);
	}
}

/* A .env two directories beyond the scan's depth bound (32 below the
 * workspace). */
static void a_scan_that_hits_its_bound_masks_what_it_did_not_see(void **state)
{
	char why[512], path[PATH_MAX], bound_dir[PATH_MAX], script[PATH_MAX + 64];
	char masked[PATH_MAX + 32], *out = NULL;
	struct layout l;
	size_t n, rel;
	int st;

	if (cannot_run_as(getuid(), why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		layout_make(*state, "depth", modes[i], getuid(), &l);
		n = (size_t)snprintf(path, sizeof(path), "%s", l.ws);
		rel = n + 1;
		for (int d = 1; d <= 34; d++) {
			n += (size_t)snprintf(path + n, sizeof(path) - n, "/d");
			assert_int_equal(mkdir(path, 0755), 0);
			if (d == 32)
				snprintf(bound_dir, sizeof(bound_dir), "%s", path);
		}
		fsbt_put(path, ".env", SECRET "\n");
		snprintf(script, sizeof(script), "cat %s/.env; echo \"ran $?\"", path + rel);
		st = run_as(&l, NULL, script, &out);
		if (st == -1 || strstr(out, SECRET) != NULL || strstr(out, "ran 1") == NULL)
			fsbt_fail_long("reads = \"%s\": the .env beyond the depth bound was read, or "
				       "the command did not run:\n%s", modes[i], out);
		snprintf(masked, sizeof(masked), "%s is masked whole", bound_dir);
		if (strcmp(modes[i], "mask") == 0 && count(out, masked) != 1)
			fsbt_fail_long("reads = \"mask\": the directory at the depth bound is not "
				       "said to be masked, once:\n%s", out);
		if (strcmp(modes[i], "broker") == 0 && strstr(out, "refused: read of ") == NULL)
			fsbt_fail_long("reads = \"broker\": no refusal by the supervisor:\n%s", out);
		free(out);
	}
}

/* More entries than the bound (--scan-max-entries, the knob a user raises
 * it with): with reads = "mask" the run refuses before CMD starts, with a
 * sentence saying what to do; with reads = "broker" it runs and the
 * supervisor refuses the read. */
static void a_scan_that_hits_its_entry_bound_refuses_the_run(void **state)
{
	char why[512], dir[PATH_MAX * 2], name[32], *out = NULL;
	struct layout l;
	int st;

	if (cannot_run_as(getuid(), why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		layout_make(*state, "entries", modes[i], getuid(), &l);
		for (int k = 0; k < 40; k++) {
			snprintf(name, sizeof(name), "f%02d", k);
			fsbt_put(l.ws, name, "x\n");
		}
		snprintf(dir, sizeof(dir), "%s/deploy", l.ws);
		assert_int_equal(mkdir(dir, 0755), 0);
		fsbt_put(dir, ".env.production", SECRET "\n");
		st = run_as(&l, (const char *const[]){ "--scan-max-entries", "20", NULL },
		    "cat deploy/.env.production; echo \"ran $?\"", &out);
		if (strstr(out, SECRET) != NULL)
			fsbt_fail_long("reads = \"%s\": the denyRead file was read:\n%s", modes[i], out);
		if (strcmp(modes[i], "mask") == 0) {
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 125 || strstr(out, "ran ") != NULL ||
			    count(out, "the mask scan reached its bound of 20 entries") != 1 ||
			    strstr(out, "--scan-max-entries N") == NULL)
				fsbt_fail_long("reads = \"mask\": exit 0x%x, not a refusal with the "
					       "sentence:\n%s", (unsigned)st, out);
		} else if (strstr(out, "ran 1") == NULL || strstr(out, "refused: read of ") == NULL) {
			fsbt_fail_long("reads = \"broker\": exit 0x%x, no refusal by the "
				       "supervisor:\n%s", (unsigned)st, out);
		}
		free(out);
	}
}

/* ------------------------------------------------------------------------ */
/* The scan's index. Each case builds a tree, waits until its stamps are
 * older than the index trusts (1.1 s before the scan starts), runs once to
 * write the index, checks that --explain takes directories from it, changes
 * the tree or the index, and reads the denyRead file on the repeat run. */

static void settle(void)
{
	usleep(1300 * 1000);
}

/* Run 1 writes the index; the --explain after it must have taken
 * directories from it, or the repeat run would test nothing. */
static void index_written(const struct layout *l)
{
	char *out = NULL;
	int st;

	settle();
	st = run_as(l, NULL, "true", &out);
	if (st != 0)
		fsbt_fail_long("run 1 exited 0x%x:\n%s", (unsigned)st, out);
	free(out);
	st = run_as(l, (const char *const[]){ "--explain", NULL }, "true", &out);
	if (st != 0 || strstr(out, "; 0 directories unchanged") != NULL ||
	    strstr(out, " directories unchanged since the last scan") == NULL)
		fsbt_fail_long("the repeat scan took nothing from the index (0x%x):\n%s",
			       (unsigned)st, out);
	free(out);
}

/* The repeat run: `script` must fail to read SECRET. */
static void repeat_run_hides(const struct layout *l, const char *what, const char *script)
{
	char *out = NULL;

	run_as(l, NULL, script, &out);
	if (strstr(out, SECRET) != NULL || strstr(out, "ran ") == NULL ||
	    strstr(out, "ran 0") != NULL)
		fsbt_fail_long("%s: the denyRead file was read on the repeat run, or the command "
			       "did not run:\n%s", what, out);
	free(out);
}

static void mask_pack(const struct layout *l, const char *extra)
{
	char text[PATH_MAX + 256];

	snprintf(text, sizeof(text), "return { name = \"scan-index\", include = { \"default\" }, "
		 "reads = \"mask\"%s }\n", extra);
	fsbt_write_file(l->pack, text);
}

/* deploy/ (empty) and staging/ (a key) swap names: deploy/ is a directory
 * the index knows, at the same path, with the same mtime as staging/ had,
 * another inode and a new ctime. */
static void a_renamed_directory_is_read_again(void **state)
{
	char why[512], dir[PATH_MAX * 2], extra[PATH_MAX + 64];
	struct layout l;

	if (cannot_run_as(getuid(), why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	layout_make(*state, "idx-rename", "mask", getuid(), &l);
	snprintf(extra, sizeof(extra), ", denyRead = { \"%s/deploy/*\" }", l.ws);
	mask_pack(&l, extra);
	snprintf(dir, sizeof(dir), "%s/deploy", l.ws);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(dir, sizeof(dir), "%s/staging", l.ws);
	assert_int_equal(mkdir(dir, 0755), 0);
	fsbt_put(dir, "key.pem", SECRET "\n");
	index_written(&l);
	{
		char a[PATH_MAX * 2], b[PATH_MAX * 2], t[PATH_MAX * 2];

		snprintf(a, sizeof(a), "%s/deploy", l.ws);
		snprintf(b, sizeof(b), "%s/staging", l.ws);
		snprintf(t, sizeof(t), "%s/swap", l.ws);
		assert_int_equal(rename(a, t), 0);
		assert_int_equal(rename(b, a), 0);
		assert_int_equal(rename(t, b), 0);
	}
	repeat_run_hides(&l, "after deploy/ and staging/ swapped names",
			 "cat deploy/key.pem; echo \"ran $?\"");
}

/* A chmod 000 changes the directory's ctime only: the repeat run must see
 * that it cannot read it and mask it whole, as a full scan does. */
static void a_directory_made_unreadable_is_masked_whole_on_the_repeat_run(void **state)
{
	uid_t uid = getuid() == 0 ? NOBODY : getuid();
	char why[512], dir[PATH_MAX * 2], masked[PATH_MAX * 2 + 32], *out = NULL;
	struct layout l;
	int st;

	if (cannot_run_as(uid, why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	layout_make(*state, "idx-chmod", "mask", uid, &l);
	snprintf(dir, sizeof(dir), "%s/locked", l.ws);
	assert_int_equal(mkdir(dir, 0755), 0);
	fsbt_put(dir, ".env", SECRET "\n");
	layout_own(&l);
	st = run_as(&l, NULL, "true", &out);
	if (WIFEXITED(st) && WEXITSTATUS(st) == UNREACHABLE)
		fsbt_skip("the build is not reachable as uid %u", (unsigned)uid);
	free(out);
	index_written(&l);
	assert_int_equal(chmod(dir, 0), 0);
	run_as(&l, NULL, "chmod 0755 locked; cat locked/.env; echo \"ran $?\"", &out);
	snprintf(masked, sizeof(masked), "%s is masked whole", dir);
	if (strstr(out, SECRET) != NULL || strstr(out, "ran 1") == NULL ||
	    (uid != 0 && count(out, masked) != 1))
		fsbt_fail_long("uid %u: after chmod 000 the repeat run read the file or did not "
			       "mask the directory whole, once:\n%s", (unsigned)uid, out);
	free(out);
}

/* A new .env in a/b/c/: a/ and a/b/ (and the workspace) are unchanged. */
static void new_env_under_unchanged_grandparents(const struct layout *l)
{
	char dir[PATH_MAX * 2];

	snprintf(dir, sizeof(dir), "%s/a", l->ws);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(dir, sizeof(dir), "%s/a/b", l->ws);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(dir, sizeof(dir), "%s/a/b/c", l->ws);
	assert_int_equal(mkdir(dir, 0755), 0);
	fsbt_put(dir, "main.c", "int main;\n");
	index_written(l);
	fsbt_put(dir, ".env", SECRET "\n");
	repeat_run_hides(l, "a new .env under unchanged grandparents",
			 "cat a/b/c/.env; echo \"ran $?\"");
}

static void a_new_env_under_unchanged_grandparents_is_masked(void **state)
{
	char why[512];
	struct layout l;

	if (cannot_run_as(getuid(), why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	layout_make(*state, "idx-deep", "mask", getuid(), &l);
	mask_pack(&l, "");
	new_env_under_unchanged_grandparents(&l);
}

/* The same with the workspace on a tmpfs (another file system than the
 * state dir's), in a mount namespace of the test's own. */
static void a_workspace_on_another_file_system_is_indexed_and_rescanned(void **state)
{
	char why[512];
	struct layout l;

	if (cannot_run_as(getuid(), why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	if (getuid() != 0)
		fsbt_skip("needs root to mount a tmpfs");
	layout_make(*state, "idx-tmpfs", "mask", getuid(), &l);
	mask_pack(&l, "");
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("tmpfs", l.ws, "tmpfs", 0, "mode=0755") < 0)
		fsbt_skip("cannot mount a tmpfs in a mount namespace of its own: %s", strerror(errno));
	new_env_under_unchanged_grandparents(&l);
	umount2(l.ws, MNT_DETACH);
}

static uint64_t fnv1a(const unsigned char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* The state dir's only index, read whole into *len bytes. */
static unsigned char *index_read(const struct layout *l, char *file, size_t flen, size_t *len)
{
	char cmd[PATH_MAX + 64];
	unsigned char *buf;
	FILE *p, *f;

	snprintf(cmd, sizeof(cmd), "ls %s/scan-index/*", l->state);
	assert_non_null(p = popen(cmd, "r"));
	assert_non_null(fgets(file, (int)flen, p));
	pclose(p);
	file[strcspn(file, "\n")] = '\0';
	assert_non_null(f = fopen(file, "rb"));
	assert_non_null(buf = malloc(1 << 20));
	*len = fread(buf, 1, 1 << 20, f);
	fclose(f);
	return buf;
}

static void index_write(const char *file, const unsigned char *buf, size_t len)
{
	FILE *f = fopen(file, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

/* The record of the .env renamed to "xenv" (same length): an index that
 * believed it would mask a file that is not there and leave .env
 * readable. First with the checksum left as it was (corrupt), then with
 * it made to match but the file group-writable (forged by someone else). */
static void a_corrupt_or_forged_index_is_not_trusted(void **state)
{
	char why[512], file[PATH_MAX * 2];
	struct layout l;
	unsigned char *buf, *at;
	size_t len;
	uint64_t sum;

	if (cannot_run_as(getuid(), why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	layout_make(*state, "idx-corrupt", "mask", getuid(), &l);
	mask_pack(&l, "");
	fsbt_put(l.ws, ".env", SECRET "\n");
	index_written(&l);
	buf = index_read(&l, file, sizeof(file), &len);
	at = memmem(buf, len, ".env", 5);
	assert_non_null(at);
	at[0] = 'x';
	index_write(file, buf, len);
	repeat_run_hides(&l, "a corrupt index", "cat .env; echo \"ran $?\"");

	/* The repeat run wrote a good index again: forge it anew. */
	free(buf);
	buf = index_read(&l, file, sizeof(file), &len);
	assert_non_null(at = memmem(buf, len, ".env", 5));
	at[0] = 'x';
	sum = fnv1a(buf, len - sizeof(sum));
	memcpy(buf + len - sizeof(sum), &sum, sizeof(sum));
	index_write(file, buf, len);
	assert_int_equal(chmod(file, 0620), 0);
	repeat_run_hides(&l, "a group-writable index", "cat .env; echo \"ran $?\"");
	free(buf);
}

/* The pack gains a denyRead rule: the index made under the old one does
 * not know the file matches, and must not be used. */
static void an_edited_pack_means_a_full_scan(void **state)
{
	char why[512], dir[PATH_MAX * 2];
	struct layout l;

	if (cannot_run_as(getuid(), why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	layout_make(*state, "idx-pack", "mask", getuid(), &l);
	mask_pack(&l, "");
	snprintf(dir, sizeof(dir), "%s/conf", l.ws);
	assert_int_equal(mkdir(dir, 0755), 0);
	fsbt_put(dir, "token.txt", SECRET "\n");
	index_written(&l);
	mask_pack(&l, ", denyRead = { \"**/token.txt\" }");
	repeat_run_hides(&l, "a rule added to the pack", "cat conf/token.txt; echo \"ran $?\"");
}

/* Regular files in <state>/<sub>. */
static size_t files_in(const char *state, const char *sub)
{
	char dir[PATH_MAX * 2];
	struct dirent *e;
	size_t n = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/%s", state, sub);
	assert_non_null(d = opendir(dir));
	while ((e = readdir(d)) != NULL)
		n += e->d_type == DT_REG;
	closedir(d);
	return n;
}

/* Another pack on the same workspace (here the same rules with reads =
 * "broker") keeps an index of its own: the mask pack's is still there, and
 * used, when the mask pack comes back. One index per workspace, taken over
 * by whichever pack ran last, made each of them scan everything. */
static void two_packs_taking_turns_each_keep_their_index(void **state)
{
	char why[512], dir[PATH_MAX * 2], text[256], *out = NULL;
	struct layout l;
	int st;

	if (cannot_run_as(getuid(), why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	layout_make(*state, "idx-turns", "mask", getuid(), &l);
	mask_pack(&l, "");
	snprintf(dir, sizeof(dir), "%s/src", l.ws);
	assert_int_equal(mkdir(dir, 0755), 0);
	fsbt_put(dir, "main.c", "int main(void) { return 0; }\n");
	fsbt_put(l.ws, ".env", SECRET "\n");
	index_written(&l);
	snprintf(text, sizeof(text), "return { name = \"scan-index\", include = { \"default\" }, "
		 "reads = \"broker\" }\n");
	fsbt_write_file(l.pack, text);
	st = run_as(&l, NULL, "true", &out);
	if (st != 0)
		fsbt_fail_long("the run with reads = \"broker\" exited 0x%x:\n%s", (unsigned)st, out);
	free(out);
	mask_pack(&l, "");
	st = run_as(&l, (const char *const[]){ "--explain", NULL }, "true", &out);
	if (st != 0 || strstr(out, "; 0 directories unchanged") != NULL ||
	    strstr(out, " directories unchanged since the last scan") == NULL)
		fsbt_fail_long("the mask pack's index was gone after the other pack ran "
			       "(0x%x):\n%s", (unsigned)st, out);
	free(out);
	repeat_run_hides(&l, "the mask pack back", "cat .env; echo \"ran $?\"");

	/* Six more denyRead lists, six more keys: the oldest indexes go. */
	for (int i = 0; i < 6; i++) {
		char extra[96];

		snprintf(extra, sizeof(extra), ", denyRead = { \"**/secret-%d\" }", i);
		mask_pack(&l, extra);
		st = run_as(&l, NULL, "true", &out);
		if (st != 0)
			fsbt_fail_long("run with pack %d exited 0x%x:\n%s", i, (unsigned)st, out);
		free(out);
	}
	assert_true(files_in(l.state, "scan-index") <= 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			an_unreadable_directory_does_not_hide_a_denied_file_from_the_mask, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			an_unreadable_directory_does_not_hide_a_denied_file_from_the_mask_as_root,
			setup, teardown),
		cmocka_unit_test_setup_teardown(
			a_literal_denied_path_in_an_unsearchable_directory_stays_hidden, setup,
			teardown),
		cmocka_unit_test_setup_teardown(a_scan_that_hits_its_bound_masks_what_it_did_not_see,
						setup, teardown),
		cmocka_unit_test_setup_teardown(a_scan_that_hits_its_entry_bound_refuses_the_run,
						setup, teardown),
		cmocka_unit_test_setup_teardown(a_renamed_directory_is_read_again, setup, teardown),
		cmocka_unit_test_setup_teardown(
			a_directory_made_unreadable_is_masked_whole_on_the_repeat_run, setup,
			teardown),
		cmocka_unit_test_setup_teardown(a_new_env_under_unchanged_grandparents_is_masked,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			a_workspace_on_another_file_system_is_indexed_and_rescanned, setup,
			teardown),
		cmocka_unit_test_setup_teardown(a_corrupt_or_forged_index_is_not_trusted, setup,
						teardown),
		cmocka_unit_test_setup_teardown(an_edited_pack_means_a_full_scan, setup, teardown),
		cmocka_unit_test_setup_teardown(two_packs_taking_turns_each_keep_their_index, setup,
						teardown),
	};

	return fsbt_run_group(tests, NULL, NULL);
}
