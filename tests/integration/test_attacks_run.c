/*
 * test_attacks_run.c — attacks on the seccomp supervisor of `fsbroker run`
 * with hostile names and descriptors: supervised writes while a directory
 * is swapped with symlinks to the outside and to a protected directory
 * (at least 20,000 exchanges), hostile dirfds, path edge cases, magic links
 * of /proc, hard links to protected files, and directory renames across
 * the workspace's edge. The attacks run inside a real run
 * (tests/integration/progs/fsbt_hostile.c); the test checks on the host
 * that nothing outside the workspace or under a protected path changed in
 * any way, and that every change inside was backed up.
 *
 * The pack: the default one plus denyModify on ws/locked and everything
 * beneath it. docs/SECURITY.md ("Attack suite") lists what each test found.
 */
#include "run_fixture.h"
#include "attack_fixture.h"

#define RACE_EXCHANGES 20000

/* Where the helper and the pack live, below the fixture's root. */
static void paths_of(const struct fixture *f, char *pack, char *prog, char *outside, size_t len)
{
	snprintf(pack, len, "%s/attacks.lua", f->rules);
	snprintf(prog, len, "%s/progs/fsbt_hostile", f->root);
	snprintf(outside, len, "%s/outside", f->root);
}

static int setup_attacks(void **state)
{
	struct fixture *f;
	char pack[PATH_MAX * 2], prog[PATH_MAX * 2], outside[PATH_MAX * 2], exe[PATH_MAX];
	char built[PATH_MAX + 32], dir[PATH_MAX * 2];
	ssize_t n;

	setup(state);
	f = *state;
	paths_of(f, pack, prog, outside, sizeof(pack));
	fsbt_write_file(pack, "return { name = \"attacks\", include = { \"default\" },\n"
			      "  denyModify = { \"${workspace}/locked\", \"${workspace}/locked/**\" } }\n");
	snprintf(dir, sizeof(dir), "%s/locked", f->ws);
	fill_dir(dir, "locked");
	fill_dir(outside, "outside");
	/* The helper is built next to this binary, in progs/; it runs from a
	 * copy in the fixture, which the sandbox sees wherever the build is. */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	snprintf(built, sizeof(built), "%s/progs/fsbt_hostile", dirname(exe));
	snprintf(dir, sizeof(dir), "%s/progs", f->root);
	assert_int_equal(mkdir(dir, 0755), 0);
	if (access(built, X_OK) == 0)
		fsbt_copy_program(built, dir, "fsbt_hostile", prog, sizeof(prog));
	return 0;
}

static void need_sandbox(const struct fixture *f)
{
	char why[512], pack[PATH_MAX * 2], prog[PATH_MAX * 2], outside[PATH_MAX * 2];

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	paths_of(f, pack, prog, outside, sizeof(pack));
	if (access(prog, X_OK) < 0)
		fail_msg("the helper is not built (make build/tests/progs/fsbt_hostile; make test "
			 "builds it)");
}

/* fsbroker run --rules <pack> ... -- sh -c SCRIPT; CMD's output into *out
 * (malloc'd). The run's wait status. */
static int attack(struct fixture *f, const char *script, char **out)
{
	char pack[PATH_MAX * 2], prog[PATH_MAX * 2], outside[PATH_MAX * 2];
	char *argv[] = { (char *)fsbt_binary(), "run", "--rules", pack, "--workspace", f->ws,
			 "--state-dir", f->state, "--session", "s", "--", "/bin/sh", "-c",
			 (char *)script, NULL };
	struct runproc p;
	int st;

	paths_of(f, pack, prog, outside, sizeof(pack));
	run_start(argv, false, &p);
	/* 20,000 supervised exchanges take minutes under the sanitizers: ten
	 * of silence, a safety net only. */
	st = run_finish_within(&p, 600);
	if (p.ebuf != NULL && (strstr(p.ebuf, "Sanitizer") != NULL ||
			       strstr(p.ebuf, "runtime error:") != NULL))
		fail_msg("the core reported a memory error:\n%s", p.ebuf);
	*out = p.obuf != NULL ? strdup(p.obuf) : strdup("");
	if (st != 0)
		fprintf(stderr, "# fsbroker run exited 0x%x; its stderr:\n%s", (unsigned)st,
			p.ebuf ? p.ebuf : "");
	run_free(&p);
	return st;
}

/*
 * Every "<attempt>: <answer>" line of `out` must be a refusal, except the
 * attempts named in `allowed` (NULL-terminated). Returns how many lines
 * were checked; fails when none were.
 */
static int expect_all_refused(const char *out, const char *const *allowed)
{
	char bad[2048] = "";
	size_t used = 0;
	int n = 0;

	for (const char *line = out; line != NULL && *line != '\0';) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		const char *colon = memchr(line, ':', len);

		if (colon != NULL && (size_t)(colon - line) + 2 < len + 1 && colon[1] == ' ') {
			bool ok = len - (size_t)(colon - line) == 4 && strncmp(colon, ": ok", 4) == 0;
			bool exempt = false;

			for (size_t i = 0; allowed != NULL && allowed[i] != NULL; i++)
				exempt = exempt || (strlen(allowed[i]) == (size_t)(colon - line) &&
						    strncmp(line, allowed[i], (size_t)(colon - line)) == 0);
			n++;
			printf("#   %.*s\n", (int)len, line);
			if (ok && !exempt && used < sizeof(bad))
				used += (size_t)snprintf(bad + used, sizeof(bad) - used, "\n  %.*s",
							 (int)len, line);
		}
		line = eol ? eol + 1 : NULL;
	}
	if (n == 0)
		fail_msg("the attack printed no attempts:\n%s", out);
	if (used > 0)
		fail_msg("attempts that should have been refused succeeded:%s", bad);
	return n;
}

/* ------------------------------------------------------------------------ */

static void supervised_writes_during_dir_symlink_exchanges_never_escape(void **state)
{
	struct fixture *f = *state;
	char pack[PATH_MAX * 2], prog[PATH_MAX * 2], outside[PATH_MAX * 2], locked[PATH_MAX + 16];
	char d[PATH_MAX + 16], l1[PATH_MAX + 16], l2[PATH_MAX + 16], script[PATH_MAX * 8];
	char *out = NULL, *show = NULL, diff[8192];
	struct fsbt_tree before, restored;
	long exchanges = 0, ops = 0, ok = 0;
	const char *line;
	struct guard g;
	struct stat st;

	need_sandbox(f);
	paths_of(f, pack, prog, outside, sizeof(pack));
	snprintf(locked, sizeof(locked), "%s/locked", f->ws);
	snprintf(d, sizeof(d), "%s/d", f->ws);
	snprintf(l1, sizeof(l1), "%s/l-out", f->ws);
	snprintf(l2, sizeof(l2), "%s/l-locked", f->ws);
	fill_dir(d, "inside");
	assert_int_equal(symlink(outside, l1), 0);
	assert_int_equal(symlink(locked, l2), 0);
	guard_take(&g, f->ws, f->root, f->home);
	assert_int_equal(fsbt_tree_snap(f->ws, &before), 0);
	snprintf(script, sizeof(script), "'%s' race %d '%s' '%s' '%s'", prog, RACE_EXCHANGES, d, l1,
		 l2);
	attack(f, script, &out);
	line = strstr(out, "race: exchanges=");
	if (line == NULL || sscanf(line, "race: exchanges=%ld ops=%ld ok=%ld", &exchanges, &ops,
				   &ok) != 3)
		fail_msg("the race did not report:\n%s", out);
	printf("# %.*s\n", (int)strcspn(line, "\n"), line);
	guard_check(&g, out);
	if (exchanges < RACE_EXCHANGES || strstr(line, "err=none") == NULL)
		fail_msg("the race stopped early: %s", line);
	if (ok == 0)
		fail_msg("no write through ws/d succeeded: the race proves nothing (%s)", line);
	assert_int_equal(lstat(d, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	/* Every change inside had its backup: one restore gives the tree back. */
	{
		char *argv[] = { (char *)fsbt_binary(), "backup", "restore", "--last", "--state-dir",
				 f->state, "--session", "s", NULL };
		/* Thousands of journal entries: minutes under the sanitizers. */
		int rst = fsbt_run_within(argv, &show, 600 * 1000);

		assert_int_equal(fsbt_tree_snap(f->ws, &restored), 0);
		if (fsbt_tree_diff(&before, &restored, FSBT_TREE_MTIME, diff, sizeof(diff)) > 0) {
			fprintf(stderr, "# restore exited 0x%x:\n%s", (unsigned)rst, show);
			fail_msg("after the race and a restore the workspace is not as it was:\n%s",
				 diff);
		}
		/*
		 * The tree is what counts. Restore also lists, and exits 1 for,
		 * the entries the journal holds under the names the directory
		 * had while it was exchanged (ws/l-out/canary, …): those names
		 * are symlinks again, which restore does not follow.
		 */
		if (rst != 0) {
			size_t skipped = 0;

			for (const char *s = strstr(show, "\nskipped "); s != NULL;
			     s = strstr(s + 1, "\nskipped "))
				skipped++;
			printf("# restore exited 0x%x: %zu journal entries under the exchanged "
			       "names skipped\n",
			       (unsigned)rst, skipped);
		}
	}
	fsbt_tree_free(&before);
	fsbt_tree_free(&restored);
	free(show);
	free(out);
}

static void hostile_dirfds_in_supervised_calls_never_reach_protected_files(void **state)
{
	struct fixture *f = *state;
	char pack[PATH_MAX * 2], prog[PATH_MAX * 2], outside[PATH_MAX * 2], script[PATH_MAX * 8];
	char *out = NULL;
	struct guard g;
	int n;

	need_sandbox(f);
	paths_of(f, pack, prog, outside, sizeof(pack));
	guard_take(&g, f->ws, f->root, f->home);
	snprintf(script, sizeof(script), "cd '%s' && '%s' dirfds '%s' '%s'", f->ws, prog, f->ws,
		 outside);
	attack(f, script, &out);
	n = expect_all_refused(out, NULL);
	printf("# %d hostile dirfd calls refused\n", n);
	guard_check(&g, out);
	free(out);
}

static void path_edge_cases_in_supervised_calls_never_reach_protected_files(void **state)
{
	struct fixture *f = *state;
	char pack[PATH_MAX * 2], prog[PATH_MAX * 2], outside[PATH_MAX * 2], script[PATH_MAX * 8];
	char p[PATH_MAX * 2], *out = NULL;
	struct guard g;
	struct stat st;
	int n;

	need_sandbox(f);
	paths_of(f, pack, prog, outside, sizeof(pack));
	guard_take(&g, f->ws, f->root, f->home);
	snprintf(script, sizeof(script), "cd '%s' && '%s' paths '%s'", f->ws, prog, f->ws);
	attack(f, script, &out);
	n = expect_all_refused(out, NULL);
	printf("# %d path edge cases refused\n", n);
	guard_check(&g, out);
	snprintf(p, sizeof(p), "%s/free", f->ws);
	assert_int_equal(lstat(p, &st), -1);
	free(out);
}

static void magic_links_of_proc_never_reach_protected_files(void **state)
{
	struct fixture *f = *state;
	char pack[PATH_MAX * 2], prog[PATH_MAX * 2], outside[PATH_MAX * 2], script[PATH_MAX * 8];
	static const char *const reads[] = { "open locked/canary O_RDONLY", NULL };
	char *out = NULL;
	struct guard g;
	int n;

	need_sandbox(f);
	paths_of(f, pack, prog, outside, sizeof(pack));
	guard_take(&g, f->ws, f->root, f->home);
	snprintf(script, sizeof(script), "'%s' magic '%s' '%s'", prog, f->ws, f->key);
	attack(f, script, &out);
	if (strstr(out, "open locked/canary O_RDONLY: ok") == NULL)
		fail_msg("the read-only open the reopen attacks start from failed:\n%s", out);
	n = expect_all_refused(out, reads);
	printf("# %d magic-link writes refused\n", n - 1);
	guard_check(&g, out);
	free(out);
}

static void hard_links_to_protected_files_are_not_written_or_made_in_a_run(void **state)
{
	struct fixture *f = *state;
	char pack[PATH_MAX * 2], prog[PATH_MAX * 2], outside[PATH_MAX * 2], script[PATH_MAX * 12];
	char p[PATH_MAX * 2], q[PATH_MAX * 2], *out = NULL;
	struct guard g;
	int n;

	need_sandbox(f);
	paths_of(f, pack, prog, outside, sizeof(pack));
	/* Made before the run: second names, in the workspace, of a protected
	 * file, of a file outside, and of the masked key. */
	snprintf(p, sizeof(p), "%s/locked/canary", f->ws);
	snprintf(q, sizeof(q), "%s/alias-locked", f->ws);
	assert_int_equal(link(p, q), 0);
	snprintf(p, sizeof(p), "%s/canary", outside);
	snprintf(q, sizeof(q), "%s/alias-out", f->ws);
	assert_int_equal(link(p, q), 0);
	snprintf(q, sizeof(q), "%s/alias-key", f->ws);
	assert_int_equal(link(f->key, q), 0);
	guard_take(&g, f->ws, f->root, f->home);
	snprintf(script, sizeof(script),
		 "cd '%s' && for a in alias-locked alias-out alias-key; do\n"
		 "  echo \"== $a\"; '%s' write \"$a\"\n"
		 "  true > \"$a\" && echo \"truncate $a: ok\" || echo \"truncate $a: refused\"\n"
		 "done\n"
		 "'%s' link locked/victim new-alias\n"
		 "'%s' link '%s' key-alias\n",
		 f->ws, prog, prog, prog, f->key);
	attack(f, script, &out);
	n = expect_all_refused(out, NULL);
	printf("# %d writes through or links to protected files refused\n", n);
	guard_check(&g, out);
	free(out);
}

static void directory_renames_across_the_workspace_edge_are_refused_in_a_run(void **state)
{
	struct fixture *f = *state;
	char pack[PATH_MAX * 2], prog[PATH_MAX * 2], outside[PATH_MAX * 2], script[PATH_MAX * 16];
	char tree[PATH_MAX + 16], *out = NULL;
	struct fsbt_tree before, after;
	struct guard g;
	int n;

	need_sandbox(f);
	paths_of(f, pack, prog, outside, sizeof(pack));
	snprintf(tree, sizeof(tree), "%s/tree", f->ws);
	fill_dir(tree, "tree");
	guard_take(&g, f->ws, f->root, f->home);
	assert_int_equal(fsbt_tree_snap(tree, &before), 0);
	snprintf(script, sizeof(script),
		 "cd '%s' && P='%s'\n"
		 "$P rename tree '%s/tree'\n"
		 "$P rename tree '%s/tree'\n"
		 "$P rename tree locked/tree\n"
		 "$P rename locked free\n"
		 "$P rename locked/sub free-sub\n"
		 "$P rename '%s/.ssh' ssh\n"
		 "$P rename '%s' o\n"
		 "mv tree tree2 && mv tree2 tree && echo 'control: ok'\n",
		 f->ws, prog, outside, f->root, f->home, outside);
	attack(f, script, &out);
	if (strstr(out, "control: ok") == NULL)
		fail_msg("the control rename inside the workspace failed:\n%s", out);
	n = expect_all_refused(out, (const char *const[]){ "control", NULL });
	printf("# %d renames across the workspace's edge refused\n", n - 1);
	guard_check(&g, out);
	assert_int_equal(fsbt_tree_snap(tree, &after), 0);
	assert_int_equal(fsbt_tree_diff(&before, &after, 0, NULL, 0), 0);
	fsbt_tree_free(&before);
	fsbt_tree_free(&after);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			supervised_writes_during_dir_symlink_exchanges_never_escape, setup_attacks,
			teardown),
		cmocka_unit_test_setup_teardown(
			hostile_dirfds_in_supervised_calls_never_reach_protected_files,
			setup_attacks, teardown),
		cmocka_unit_test_setup_teardown(
			path_edge_cases_in_supervised_calls_never_reach_protected_files,
			setup_attacks, teardown),
		cmocka_unit_test_setup_teardown(magic_links_of_proc_never_reach_protected_files,
						setup_attacks, teardown),
		cmocka_unit_test_setup_teardown(
			hard_links_to_protected_files_are_not_written_or_made_in_a_run,
			setup_attacks, teardown),
		cmocka_unit_test_setup_teardown(
			directory_renames_across_the_workspace_edge_are_refused_in_a_run,
			setup_attacks, teardown),
	};

	return fsbt_run_group(tests, NULL, NULL);
}
