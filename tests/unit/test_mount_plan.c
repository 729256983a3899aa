/*
 * test_mount_plan.c — the bubblewrap argument vector of `fsbroker run`
 * (DESIGN §7.1) built from real packs over a temp home and workspace:
 * which flags, in which order, what is bound read-write, what is masked,
 * and which packs are refused.
 */
#include "unit.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "mount_plan.h"
#include "policy.h"

struct fixture {
	char root[64];
	char home[128], ws[128], state[160], sock[128], rules[128];
	int listen_fd;
};

static void put(const char *path, const char *data)
{
	FILE *f = fopen(path, "we");

	assert_non_null(f);
	fputs(data, f);
	assert_int_equal(fclose(f), 0);
}

static void mkdirs(const char *root, const char *const *rel)
{
	char path[512];

	for (; *rel != NULL; rel++) {
		snprintf(path, sizeof(path), "%s/%s", root, *rel);
		assert_int_equal(mkdir(path, 0755), 0);
	}
}

static int setup(void **state)
{
	static const char *const dirs[] = {
		"home", "home/.ssh", "home/.aws", "home/.local", "home/.local/state",
		"home/.local/state/fsbroker", "home/notes", "ws", "ws/src", "ws/sub", "ws/deep",
		"ws/deep/er", "rules", "sockets", NULL,
	};
	struct fixture *f = calloc(1, sizeof(*f));
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char path[512];

	assert_non_null(f);
	/* Not under /tmp: ${tmp} is /tmp, and a home inside it would make
	 * the default pack's own tests fail. */
	snprintf(f->root, sizeof(f->root), "/var/tmp/fsb-mp-XXXXXX");
	assert_non_null(mkdtemp(f->root));
	mkdirs(f->root, dirs);
	snprintf(f->home, sizeof(f->home), "%s/home", f->root);
	snprintf(f->ws, sizeof(f->ws), "%s/ws", f->root);
	snprintf(f->state, sizeof(f->state), "%s/home/.local/state/fsbroker", f->root);
	snprintf(f->rules, sizeof(f->rules), "%s/rules", f->root);
	/* A directory of its own, as the core makes one: not the root, which
	 * holds the workspace. */
	snprintf(f->sock, sizeof(f->sock), "%s/sockets/sock", f->root);
	snprintf(path, sizeof(path), "%s/.ssh/id_ed25519", f->home);
	put(path, "private key\n");
	snprintf(path, sizeof(path), "%s/.ssh/known_hosts", f->home);
	put(path, "host list\n");
	snprintf(path, sizeof(path), "%s/.aws/credentials", f->home);
	put(path, "token\n");
	snprintf(path, sizeof(path), "%s/notes/secret.txt", f->home);
	put(path, "secret\n");
	snprintf(path, sizeof(path), "%s/.env", f->ws);
	put(path, "API_KEY=1\n");
	snprintf(path, sizeof(path), "%s/src/a.c", f->ws);
	put(path, "int a;\n");
	snprintf(path, sizeof(path), "%s/deep/er/.env.local", f->ws);
	put(path, "API_KEY=2\n");
	/* A symlink named like a secret: reading it reads the target. */
	snprintf(path, sizeof(path), "%s/sub/.env", f->ws);
	assert_int_equal(symlink("../../home/notes/secret.txt", path), 0);

	f->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(f->listen_fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f->sock);
	assert_int_equal(bind(f->listen_fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	close(f->listen_fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->root);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", f->root);
	free(f);
	return 0;
}

/* Load `pack` (a shipped pack name, or a file under f->rules). */
static struct fsb_policy *load(struct fixture *f, const char *pack)
{
	const char *dirs[] = { f->rules, LUADIR "/rules", NULL };
	struct fsb_policy_opts o = {
		.luadir = LUADIR, .rules_dirs = dirs, .workspace = f->ws, .home = f->home,
		.tmp = "/tmp", .state = f->state,
	};
	struct fsb_policy *p = NULL;
	char file[512], err[1024] = "";

	if (strchr(pack, '/') == NULL)
		snprintf(file, sizeof(file), "%s/rules/%s.lua", LUADIR, pack);
	else
		snprintf(file, sizeof(file), "%s", pack);
	o.pack = file;
	if (fsb_policy_load(&o, &p, err, sizeof(err)) != 0)
		fail_msg("fsb_policy_load %s: %s", file, err);
	return p;
}

static struct fsb_policy *load_text(struct fixture *f, const char *name, const char *text)
{
	char file[512];

	snprintf(file, sizeof(file), "%s/%s.lua", f->rules, name);
	put(file, text);
	return load(f, file);
}

static struct fsb_mount_inputs inputs(const struct fixture *f)
{
	struct fsb_mount_inputs in = {
		.workspace = f->ws, .home = f->home, .tmp = "/tmp", .state_dir = f->state,
		.scoped_socket = f->sock, .runtime_dir = NULL, .uid = getuid(),
	};

	return in;
}

/* The index where the arguments a, b[, c] start in argv, or -1. */
static long find3(const struct fsb_mount_plan *pl, const char *a, const char *b, const char *c)
{
	for (size_t i = 0; i < pl->argc; i++) {
		if (strcmp(pl->argv[i], a) != 0)
			continue;
		if (b != NULL && (i + 1 >= pl->argc || strcmp(pl->argv[i + 1], b) != 0))
			continue;
		if (c != NULL && (i + 2 >= pl->argc || strcmp(pl->argv[i + 2], c) != 0))
			continue;
		return (long)i;
	}
	return -1;
}

static long find_at(const struct fsb_mount_plan *pl, const char *a, const char *dir, const char *rel)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	return find3(pl, a, strcmp(a, "--ro-bind") == 0 ? "/dev/null" : path,
		     strcmp(a, "--ro-bind") == 0 ? path : NULL);
}

static bool has_note(const struct fsb_mount_plan *pl, const char *needle)
{
	for (size_t i = 0; i < pl->nnotes; i++)
		if (strstr(pl->notes[i], needle) != NULL)
			return true;
	return false;
}

static void dump(const struct fsb_mount_plan *pl)
{
	fsb_mount_plan_explain(pl, stderr);
}

static void test_default_pack_plan_in_order(void **state)
{
	struct fixture *f = *state;
	struct fsb_policy *p = load(f, "default");
	struct fsb_mount_inputs in = inputs(f);
	struct fsb_mount_plan pl;
	long ns, base, proc, run, tmp, home, ws, ssh, aws, stat_, sock, ro_run, chdir_;
	char path[512];

	if (fsb_mount_plan_build(p, &in, &pl) != 0)
		fail_msg("plan: %s", pl.why);
	assert_non_null(pl.argv);
	assert_null(pl.argv[pl.argc]);

	/* Namespaces and process flags come first, together. */
	ns = find3(&pl, "--unshare-user", "--unshare-pid", "--die-with-parent");
	assert_int_equal(ns, 0);
	assert_int_equal(find3(&pl, "--new-session", "--disable-userns", NULL), 3);
	/* No capabilities inside, root's included; IPC of its own. */
	assert_int_equal(find3(&pl, "--cap-drop", "ALL", "--unshare-ipc"), 5);
	base = find3(&pl, "--ro-bind", "/", "/");
	proc = find3(&pl, "--proc", "/proc", NULL);
	assert_true(find3(&pl, "--dev", "/dev", NULL) > base);
	run = find3(&pl, "--tmpfs", "/run", NULL);
	assert_true(find3(&pl, "--dir", "/run/user", NULL) > run);
	assert_true(find3(&pl, "--dir", "/run/fsbroker", NULL) > run);
	/* Nothing of the host's /run/user comes back. */
	assert_int_equal(find3(&pl, "--ro-bind-try", "/run/user", NULL), -1);
	tmp = find3(&pl, "--tmpfs", "/tmp", NULL);
	/* The workspace and, for the ask.modify tree of home, home: read-write. */
	ws = find3(&pl, "--bind", f->ws, f->ws);
	home = find3(&pl, "--bind", f->home, f->home);
	/* The ${tmp} tree is the private tmp, never the host's. */
	assert_int_equal(find3(&pl, "--bind", "/tmp", "/tmp"), -1);
	assert_true(has_note(&pl, "private tmp"));
	/* Masks: ~/.ssh and ~/.aws as read-only empty dirs. */
	ssh = find_at(&pl, "--tmpfs", f->home, ".ssh");
	aws = find_at(&pl, "--tmpfs", f->home, ".aws");
	snprintf(path, sizeof(path), "%s/.ssh", f->home);
	assert_true(find3(&pl, "--remount-ro", path, NULL) == ssh + 2);
	stat_ = find3(&pl, "--tmpfs", f->state, NULL);
	assert_true(find3(&pl, "--remount-ro", f->state, NULL) == stat_ + 2);
	sock = find3(&pl, "--bind", f->sock, FSB_MOUNT_SOCKET);
	ro_run = find3(&pl, "--remount-ro", "/run", NULL);
	chdir_ = find3(&pl, "--chdir", f->ws, NULL);
	if (base < 0 || proc < 0 || run < 0 || tmp < 0 || ws < 0 || home < 0 || ssh < 0 ||
	    aws < 0 || stat_ < 0 || sock < 0 || ro_run < 0 || chdir_ < 0) {
		dump(&pl);
		fail_msg("a step is missing");
	}
	/* The order bwrap needs: later mounts cover earlier ones. */
	assert_true(ns < base && base < proc && proc < run && run < tmp);
	assert_true(tmp < home && home < ws);
	assert_true(ws < ssh && home < aws && home < stat_);
	assert_true(ssh < sock && stat_ < sock && sock < ro_run && ro_run < chdir_);
	assert_int_equal(chdir_ + 2, (long)pl.argc);
	/* Every step's arguments are accounted for. */
	assert_int_equal(pl.steps[pl.nsteps - 1].first + pl.steps[pl.nsteps - 1].count, pl.argc);
	fsb_mount_plan_free(&pl);
	fsb_policy_free(p);
}

static void test_mask_scan_finds_env_files(void **state)
{
	struct fixture *f = *state;
	struct fsb_policy *p = load(f, "default");
	struct fsb_mount_inputs in = inputs(f);
	struct fsb_mount_plan pl;
	long ws, env;

	if (fsb_mount_plan_build(p, &in, &pl) != 0)
		fail_msg("plan: %s", pl.why);
	ws = find3(&pl, "--bind", f->ws, f->ws);
	env = find_at(&pl, "--ro-bind", f->ws, ".env");
	assert_true(env > ws);
	assert_true(find_at(&pl, "--ro-bind", f->ws, "deep/er/.env.local") > ws);
	/* sub/.env is a symlink: its target is what a read would show. */
	assert_true(find_at(&pl, "--ro-bind", f->home, "notes/secret.txt") > ws);
	assert_int_equal(find_at(&pl, "--ro-bind", f->ws, "sub/.env"), -1);
	/* .envrc-like files and sources stay as they are. */
	assert_int_equal(find_at(&pl, "--ro-bind", f->ws, "src/a.c"), -1);
	assert_true(pl.scanned > 5);
	assert_false(pl.scan_truncated);
	fsb_mount_plan_free(&pl);
	fsb_policy_free(p);
}

/* reads = "mask": what the scan did not look at would be readable, so
 * reaching the entry bound refuses the run with a sentence naming it. */
static void test_scan_that_hits_its_bound_refuses_the_plan(void **state)
{
	struct fixture *f = *state;
	struct fsb_policy *p = load(f, "default");
	struct fsb_mount_inputs in = inputs(f);
	struct fsb_mount_plan pl;

	in.scan_max_entries = 3;
	assert_int_equal(fsb_mount_plan_build(p, &in, &pl), -E2BIG);
	assert_true(pl.scan_truncated);
	assert_int_equal(pl.scanned, 3);
	assert_non_null(strstr(pl.why, "bound of 3 entries"));
	assert_non_null(strstr(pl.why, "--scan-max-entries"));
	assert_non_null(strstr(pl.why, "reads = \"broker\""));
	fsb_mount_plan_free(&pl);
	fsb_policy_free(p);
}

/* The bound reached in the middle of the last directory scanned (the
 * workspace here is the only place looked at): the entries left unlooked
 * at must refuse the plan too. */
static void test_scan_stopped_in_its_last_directory_refuses(void **state)
{
	struct fixture *f = *state;
	/* One glob, found only by the workspace's scan: the last place looked. */
	struct fsb_policy *p = load_text(f, "envonly",
		"return { name = \"envonly\", denyRead = { \"**/.env\" },\n"
		"  fsProfile = { read = { \"/**\" }, modify = { \"${workspace}/**\" } } }\n");
	struct fsb_mount_inputs in = inputs(f);
	struct fsb_mount_plan pl;
	size_t all;

	assert_int_equal(fsb_mount_plan_build(p, &in, &pl), 0);
	assert_false(pl.scan_truncated);
	all = pl.scanned;
	fsb_mount_plan_free(&pl);
	/* The whole tree exactly: nothing left unseen, no refusal. */
	in.scan_max_entries = all;
	assert_int_equal(fsb_mount_plan_build(p, &in, &pl), 0);
	fsb_mount_plan_free(&pl);
	/* Wherever in the walk the bound falls (readdir's order decides
	 * which entry is last): every bound below the whole refuses. */
	for (size_t bound = 1; bound < all; bound++) {
		in.scan_max_entries = bound;
		if (fsb_mount_plan_build(p, &in, &pl) != -E2BIG)
			fail_msg("a scan bound of %zu (of %zu entries) does not refuse", bound, all);
		assert_int_equal(pl.scanned, bound);
		fsb_mount_plan_free(&pl);
	}
	fsb_policy_free(p);
}

/* reads = "broker": the supervisor judges every open, so a bound reached
 * while masking a literal tree entry by entry is only said. */
static void test_broker_reads_scan_bound_is_a_note(void **state)
{
	struct fixture *f = *state;
	struct fsb_policy *p = load_text(f, "brokerx",
		"return { name = \"brokerx\", reads = \"broker\", fsProfile = { read = { \"/**\" },\n"
		"  modify = { \"${workspace}/**\" } },\n"
		"  denyRead = { \"~/.ssh/**\", \"!~/.ssh/known_hosts\" } }\n");
	struct fsb_mount_inputs in = inputs(f);
	struct fsb_mount_plan pl;

	in.scan_max_entries = 1;
	if (fsb_mount_plan_build(p, &in, &pl) != 0)
		fail_msg("plan: %s", pl.why);
	assert_true(pl.scan_truncated);
	assert_true(has_note(&pl, "the supervisor judges every open"));
	fsb_mount_plan_free(&pl);
	fsb_policy_free(p);
}

/* A chain deeper than the depth bound: with reads = "mask" the directory
 * the scan did not go into is masked whole and the user is told; a .env at
 * the bottom stays hidden. */
static void test_scan_masks_what_lies_beyond_its_depth_bound(void **state)
{
	struct fixture *f = *state;
	struct fsb_policy *p = load(f, "default");
	struct fsb_mount_inputs in = inputs(f);
	struct fsb_mount_plan pl;
	char path[PATH_MAX], at_bound[PATH_MAX];
	size_t n;

	n = (size_t)snprintf(path, sizeof(path), "%s", f->ws);
	for (int d = 1; d <= FSB_MOUNT_SCAN_MAX_DEPTH + 2; d++) {
		n += (size_t)snprintf(path + n, sizeof(path) - n, "/d");
		assert_int_equal(mkdir(path, 0755), 0);
		if (d == FSB_MOUNT_SCAN_MAX_DEPTH)
			snprintf(at_bound, sizeof(at_bound), "%s", path);
	}
	snprintf(path + n, sizeof(path) - n, "/.env");
	put(path, "DEEP=1\n");
	if (fsb_mount_plan_build(p, &in, &pl) != 0)
		fail_msg("plan: %s", pl.why);
	assert_true(find3(&pl, "--tmpfs", at_bound, "--remount-ro") > 0);
	assert_int_equal(pl.nwarnings, 1);
	assert_non_null(strstr(pl.warnings[0], "depth bound"));
	assert_non_null(strstr(pl.warnings[0], at_bound));
	fsb_mount_plan_free(&pl);
	fsb_policy_free(p);
}

/* Seven trees beyond the depth bound: each is masked, the first five are
 * named on stderr one by one and the other two in one line. */
static void test_many_unscanned_directories_are_said_in_a_few_lines(void **state)
{
	struct fixture *f = *state;
	struct fsb_policy *p = load(f, "default");
	struct fsb_mount_inputs in = inputs(f);
	struct fsb_mount_plan pl;
	char path[PATH_MAX];
	size_t masks = 0;

	for (int t = 0; t < 7; t++) {
		size_t n = (size_t)snprintf(path, sizeof(path), "%s/t%d", f->ws, t);

		assert_int_equal(mkdir(path, 0755), 0);
		for (int d = 1; d <= FSB_MOUNT_SCAN_MAX_DEPTH; d++) {
			n += (size_t)snprintf(path + n, sizeof(path) - n, "/d");
			assert_int_equal(mkdir(path, 0755), 0);
		}
	}
	if (fsb_mount_plan_build(p, &in, &pl) != 0)
		fail_msg("plan: %s", pl.why);
	for (size_t i = 0; i < pl.nsteps; i++)
		masks += strstr(pl.steps[i].why, "could not look into") != NULL;
	assert_int_equal(masks, 7);
	assert_int_equal(pl.nwarnings, 6);
	assert_non_null(strstr(pl.warnings[5], "2 more directories"));
	fsb_mount_plan_free(&pl);
	fsb_policy_free(p);
}

static void test_broker_reads_mask_only_literal_paths(void **state)
{
	struct fixture *f = *state;
	struct fsb_policy *p = load_text(f, "broker",
		"return { name = \"broker\", include = { \"credentials\" }, reads = \"broker\",\n"
		"  fsProfile = { read = { \"/**\" }, modify = { \"${workspace}/**\" } } }\n");
	struct fsb_mount_inputs in = inputs(f);
	struct fsb_mount_plan pl;

	assert_int_equal(fsb_mount_plan_build(p, &in, &pl), 0);
	/* No scan: the supervisor judges every open instead. */
	assert_int_equal(find_at(&pl, "--ro-bind", f->ws, ".env"), -1);
	/* Literal denyRead paths are masked in both modes. */
	assert_true(find_at(&pl, "--tmpfs", f->home, ".ssh") > 0);
	/* Home is no read-write tree here: only the workspace is bound. */
	assert_int_equal(find3(&pl, "--bind", f->home, f->home), -1);
	assert_true(find3(&pl, "--bind", f->ws, f->ws) > 0);
	fsb_mount_plan_free(&pl);
	fsb_policy_free(p);
}

static void test_exception_masks_entry_by_entry(void **state)
{
	struct fixture *f = *state;
	struct fsb_policy *p = load_text(f, "except",
		"return { name = \"except\", fsProfile = { read = { \"/**\" },\n"
		"  modify = { \"${workspace}/**\" } }, ask = { modify = { \"~/**\" } },\n"
		"  denyRead = { \"~/.ssh/**\", \"!~/.ssh/known_hosts\" } }\n");
	struct fsb_mount_inputs in = inputs(f);
	struct fsb_mount_plan pl;

	if (fsb_mount_plan_build(p, &in, &pl) != 0)
		fail_msg("plan: %s", pl.why);
	assert_int_equal(find_at(&pl, "--tmpfs", f->home, ".ssh"), -1);
	assert_true(find_at(&pl, "--ro-bind", f->home, ".ssh/id_ed25519") > 0);
	assert_int_equal(find_at(&pl, "--ro-bind", f->home, ".ssh/known_hosts"), -1);
	assert_true(has_note(&pl, "entry by entry"));
	fsb_mount_plan_free(&pl);
	fsb_policy_free(p);
}

static void test_modify_inside_denyread_dir_is_refused(void **state)
{
	struct fixture *f = *state;
	struct fsb_policy *p = load_text(f, "clash",
		"return { name = \"clash\", include = { \"credentials\" },\n"
		"  fsProfile = { read = { \"/**\" },\n"
		"    modify = { \"${workspace}/**\", \"~/.ssh/known_hosts\" } } }\n");
	struct fsb_mount_inputs in = inputs(f);
	struct fsb_mount_plan pl;

	assert_int_equal(fsb_mount_plan_build(p, &in, &pl), -EPERM);
	assert_string_equal(pl.why, "fsProfile.modify ~/.ssh/known_hosts lies inside denyRead ~/.ssh/**: "
			    "the sandbox cannot write it");
	fsb_mount_plan_free(&pl);
	fsb_policy_free(p);
}

static void test_modify_inside_state_dir_is_refused(void **state)
{
	struct fixture *f = *state;
	struct fsb_policy *p = load_text(f, "state",
		"return { name = \"state\", fsProfile = { read = { \"/**\" },\n"
		"  modify = { \"${workspace}/**\" } }, ask = { modify = { \"${state}/sessions/**\" } } }\n");
	struct fsb_mount_inputs in = inputs(f);
	struct fsb_mount_plan pl;

	assert_int_equal(fsb_mount_plan_build(p, &in, &pl), -EPERM);
	assert_non_null(strstr(pl.why, "ask.modify ${state}/sessions/** lies inside the state dir"));
	fsb_mount_plan_free(&pl);
	fsb_policy_free(p);
}

static void test_bad_workspace_is_refused(void **state)
{
	struct fixture *f = *state;
	struct fsb_policy *p = load(f, "default");
	struct fsb_mount_inputs in = inputs(f);
	struct fsb_mount_plan pl;
	char missing[256];

	in.workspace = "ws";
	assert_int_equal(fsb_mount_plan_build(p, &in, &pl), -EINVAL);
	assert_string_equal(pl.why, "the workspace 'ws' is not an absolute path");
	fsb_mount_plan_free(&pl);
	snprintf(missing, sizeof(missing), "%s/nope", f->root);
	in.workspace = missing;
	assert_int_equal(fsb_mount_plan_build(p, &in, &pl), -EINVAL);
	assert_non_null(strstr(pl.why, "cannot be used: No such file or directory"));
	fsb_mount_plan_free(&pl);
	in = inputs(f);
	in.scoped_socket = f->home;
	assert_int_equal(fsb_mount_plan_build(p, &in, &pl), -EINVAL);
	assert_non_null(strstr(pl.why, "is not a socket"));
	fsb_mount_plan_free(&pl);
	fsb_policy_free(p);
}

static void test_runtime_dir_elsewhere_is_masked(void **state)
{
	struct fixture *f = *state;
	struct fsb_policy *p = load(f, "default");
	struct fsb_mount_inputs in = inputs(f);
	struct fsb_mount_plan pl;
	char xdg[256];
	long t;

	snprintf(xdg, sizeof(xdg), "%s/xdg", f->home);
	assert_int_equal(mkdir(xdg, 0700), 0);
	in.runtime_dir = xdg;
	if (fsb_mount_plan_build(p, &in, &pl) != 0)
		fail_msg("plan: %s", pl.why);
	t = find3(&pl, "--tmpfs", xdg, NULL);
	assert_true(t > find3(&pl, "--bind", f->home, f->home));
	assert_int_equal(find3(&pl, "--remount-ro", xdg, NULL), t + 2);
	fsb_mount_plan_free(&pl);
	fsb_policy_free(p);
}

static void test_paths_with_odd_characters_go_through_unchanged(void **state)
{
	struct fixture *f = *state;
	struct fsb_policy *p;
	struct fsb_mount_inputs in = inputs(f);
	struct fsb_mount_plan pl;
	char odd[256], *out = NULL;
	size_t len = 0;
	FILE *mem;

	snprintf(odd, sizeof(odd), "%s/ws/it's a [draft]*, \"x\"", f->root);
	assert_int_equal(mkdir(odd, 0755), 0);
	snprintf(f->ws, sizeof(f->ws), "%s", odd);
	p = load(f, "default");
	in.workspace = f->ws;
	if (fsb_mount_plan_build(p, &in, &pl) != 0)
		fail_msg("plan: %s", pl.why);
	assert_true(find3(&pl, "--bind", odd, odd) > 0);
	assert_true(find3(&pl, "--chdir", odd, NULL) > 0);
	mem = open_memstream(&out, &len);
	assert_non_null(mem);
	assert_int_equal(fsb_mount_plan_explain(&pl, mem), 0);
	fclose(mem);
	assert_non_null(strstr(out, "/ws/it'\\''s a [draft]*, \"x\"'"));
	if (getenv("FSBT_SHOW_PLAN") != NULL)
		fputs(out, stderr);
	assert_non_null(strstr(out, "# masked: denyRead ~/.ssh/**"));
	free(out);
	fsb_mount_plan_free(&pl);
	fsb_policy_free(p);
}

/*
 * The core's socket dirs are masked wherever they lie: the scoped socket's
 * own, and each one the core names (here one under the home and one under
 * the workspace), after the read-write trees so that none uncovers them.
 * The scoped socket is still bound, from the host's path, after them.
 */
static void test_the_core_socket_dirs_are_masked_wherever_they_lie(void **state)
{
	struct fixture *f = *state;
	struct fsb_policy *p = load(f, "default");
	struct fsb_mount_inputs in = inputs(f);
	struct fsb_mount_plan pl;
	char in_home[256], in_ws[256], own[256];
	const char *dirs[2] = { in_home, in_ws };
	long h, w, o, sock;

	snprintf(in_home, sizeof(in_home), "%s/.fsbroker-sock", f->home);
	snprintf(in_ws, sizeof(in_ws), "%s/.fsbroker-sock", f->ws);
	snprintf(own, sizeof(own), "%s/sockets", f->root);
	assert_int_equal(mkdir(in_home, 0700), 0);
	assert_int_equal(mkdir(in_ws, 0700), 0);
	in.socket_dirs = dirs;
	in.nsocket_dirs = 2;
	if (fsb_mount_plan_build(p, &in, &pl) != 0)
		fail_msg("plan: %s", pl.why);
	h = find3(&pl, "--tmpfs", in_home, NULL);
	w = find3(&pl, "--tmpfs", in_ws, NULL);
	o = find3(&pl, "--tmpfs", own, NULL);
	sock = find3(&pl, "--bind", f->sock, FSB_MOUNT_SOCKET);
	if (h < 0 || w < 0 || o < 0 || sock < 0) {
		dump(&pl);
		fail_msg("a socket dir is not masked");
	}
	assert_int_equal(find3(&pl, "--remount-ro", in_ws, NULL), w + 2);
	assert_true(h > find3(&pl, "--bind", f->home, f->home));
	assert_true(w > find3(&pl, "--bind", f->ws, f->ws));
	assert_true(h < sock && w < sock && o < sock);
	fsb_mount_plan_free(&pl);

	/* A socket dir that holds the workspace cannot be hidden: refused. */
	dirs[0] = f->root;
	in.nsocket_dirs = 1;
	assert_int_equal(fsb_mount_plan_build(p, &in, &pl), -EPERM);
	assert_non_null(strstr(pl.why, "holds the workspace"));
	fsb_mount_plan_free(&pl);
	fsb_policy_free(p);
}

/* network = "none": a network namespace of its own; "host": none. */
static void test_network_none_unshares_the_network(void **state)
{
	struct fixture *f = *state;
	struct fsb_policy *p = load(f, "default");
	struct fsb_mount_inputs in = inputs(f);
	struct fsb_mount_plan pl;

	if (fsb_mount_plan_build(p, &in, &pl) != 0)
		fail_msg("plan: %s", pl.why);
	assert_int_equal(find3(&pl, "--unshare-net", NULL, NULL), -1);
	fsb_mount_plan_free(&pl);
	in.network_none = true;
	if (fsb_mount_plan_build(p, &in, &pl) != 0)
		fail_msg("plan: %s", pl.why);
	assert_true(find3(&pl, "--unshare-net", NULL, NULL) > 0);
	assert_true(find3(&pl, "--unshare-net", NULL, NULL) < find3(&pl, "--ro-bind", "/", "/"));
	fsb_mount_plan_free(&pl);
	fsb_policy_free(p);
}

static void assert_same_argv(const struct fsb_mount_plan *a, const struct fsb_mount_plan *b)
{
	assert_int_equal(a->argc, b->argc);
	for (size_t i = 0; i < a->argc; i++)
		assert_string_equal(a->argv[i], b->argv[i]);
	assert_int_equal(a->scanned, b->scanned);
	assert_int_equal(a->nwarnings, b->nwarnings);
}

/* The scan's index (scan_index.c): a directory stamped within 1.1 s of the
 * scan that recorded it is read again (its stamps could miss a change in
 * the same tick); once the tree is older, the repeat plan takes the
 * directories from the index and is the full scan's, argument for
 * argument, also after a new .env appears three levels down. */
static void test_scan_index_repeat_plan_is_the_full_scans(void **state)
{
	struct fixture *f = *state;
	struct fsb_policy *p = load(f, "default");
	struct fsb_mount_inputs full_in = inputs(f), in = inputs(f);
	struct fsb_mount_plan full, pl;
	char dir[512];

	in.scan_index_dir = f->state;
	assert_int_equal(fsb_mount_plan_build(p, &full_in, &full), 0);
	assert_int_equal(fsb_mount_plan_build(p, &in, &pl), 0);
	assert_int_equal(pl.scan_reused, 0);
	assert_true(has_note(&pl, "there is none yet"));
	assert_same_argv(&full, &pl);
	fsb_mount_plan_free(&pl);
	/* Just made: not trusted yet. */
	assert_int_equal(fsb_mount_plan_build(p, &in, &pl), 0);
	assert_int_equal(pl.scan_reused, 0);
	fsb_mount_plan_free(&pl);
	usleep(1200 * 1000);
	assert_int_equal(fsb_mount_plan_build(p, &in, &pl), 0);
	fsb_mount_plan_free(&pl);
	assert_int_equal(fsb_mount_plan_build(p, &in, &pl), 0);
	assert_true(pl.scan_reused >= 5);
	assert_same_argv(&full, &pl);
	fsb_mount_plan_free(&pl);
	fsb_mount_plan_free(&full);

	snprintf(dir, sizeof(dir), "%s/deep/er/new", f->ws);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(dir, sizeof(dir), "%s/deep/er/new/.env", f->ws);
	put(dir, "API_KEY=3\n");
	assert_int_equal(fsb_mount_plan_build(p, &full_in, &full), 0);
	assert_int_equal(fsb_mount_plan_build(p, &in, &pl), 0);
	assert_true(find_at(&pl, "--ro-bind", f->ws, "deep/er/new/.env") > 0);
	assert_true(pl.scan_reused >= 3);
	assert_same_argv(&full, &pl);
	fsb_mount_plan_free(&pl);
	fsb_mount_plan_free(&full);
	fsb_policy_free(p);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_default_pack_plan_in_order),
		T(test_the_core_socket_dirs_are_masked_wherever_they_lie),
		T(test_network_none_unshares_the_network),
		T(test_mask_scan_finds_env_files),
		T(test_scan_index_repeat_plan_is_the_full_scans),
		T(test_scan_that_hits_its_bound_refuses_the_plan),
		T(test_scan_stopped_in_its_last_directory_refuses),
		T(test_broker_reads_scan_bound_is_a_note),
		T(test_scan_masks_what_lies_beyond_its_depth_bound),
		T(test_many_unscanned_directories_are_said_in_a_few_lines),
		T(test_broker_reads_mask_only_literal_paths),
		T(test_exception_masks_entry_by_entry),
		T(test_modify_inside_denyread_dir_is_refused),
		T(test_modify_inside_state_dir_is_refused),
		T(test_bad_workspace_is_refused),
		T(test_runtime_dir_elsewhere_is_masked),
		T(test_paths_with_odd_characters_go_through_unchanged),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
