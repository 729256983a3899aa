/*
 * test_run_git.c — git under `fsbroker run` on the default pack: a run may
 * make a repository (git init, git clone) and commit, but leaves no git
 * directory, whatever its name, holding a hook it did not have or a config
 * key that makes git run a program: refused at the call, or undone when
 * the cycle seals and named in the summary and the audit log.
 */
#include "run_fixture.h"

#define G "git -c user.name=fsbt -c user.email=fsbt@example.invalid"

static void need_git(void)
{
	char why[512];

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	if (access("/usr/bin/git", X_OK) < 0)
		fsbt_skip("%s", "git is not installed (make deps)");
}

/* A command on the host, as the user's shell would run it afterwards: no
 * system config, the fixture's home. Its exit status; output into *out. */
static int host_sh(const char *script, char **out)
{
	setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
	return fsbt_run((char *[]){ "/bin/sh", "-c", (char *)script, NULL }, out);
}

static void host_ok(const char *script)
{
	char *out = NULL;
	int st = host_sh(script, &out);

	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("on the host, '%s' exited 0x%x:\n%s", script, (unsigned)st, out ? out : "");
	free(out);
}

static void run_ok(struct fixture *f, const char *script, char **out)
{
	int st = run_sh(f, NULL, script, out);

	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fsbt_fail_long("fsbroker run exited 0x%x:\n%s", (unsigned)st, *out ? *out : "");
}

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static void git_init_and_commit_work_and_the_repository_is_left_intact(void **state)
{
	struct fixture *f = *state;
	char cmd[PATH_MAX * 2], path[PATH_MAX * 2], *out = NULL;

	need_git();
	run_ok(f, "git init -q -b main . && git add a.txt b.txt && " G " commit -q -m first && "
	       "git config user.name 'A U Thor'", &out);
	if (strstr(out, "undone:") != NULL || strstr(out, "refused:") != NULL)
		fsbt_fail_long("an ordinary git init and commit were interfered with:\n%s", out);
	free(out);
	snprintf(path, sizeof(path), "%s/.git/hooks/pre-commit.sample", f->ws);
	assert_true(exists(path));
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && git fsck --no-progress 2>/dev/null && test \"$(git log --format=%%s)\" = first && "
		 "test \"$(git config user.name)\" = 'A U Thor' && test -z \"$(git status "
		 "--porcelain -uno)\"", f->ws);
	host_ok(cmd);
}

/* The default pack passes the commit identity agents set: without it, a
 * commit in a home with no Git config stops at "Please tell me who you
 * are". */
static void a_commit_takes_its_identity_from_the_environment(void **state)
{
	struct fixture *f = *state;
	char cmd[PATH_MAX * 2], *out = NULL;

	need_git();
	setenv("GIT_AUTHOR_NAME", "Agent Author", 1);
	setenv("GIT_AUTHOR_EMAIL", "author@example.invalid", 1);
	setenv("GIT_COMMITTER_NAME", "Agent Committer", 1);
	setenv("GIT_COMMITTER_EMAIL", "committer@example.invalid", 1);
	run_ok(f, "git init -q -b main . && git add a.txt && git commit -q -m first", &out);
	free(out);
	unsetenv("GIT_AUTHOR_NAME");
	unsetenv("GIT_AUTHOR_EMAIL");
	unsetenv("GIT_COMMITTER_NAME");
	unsetenv("GIT_COMMITTER_EMAIL");
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && test \"$(git log --format='%%an <%%ae> %%cn <%%ce>')\" = "
		 "'Agent Author <author@example.invalid> Agent Committer <committer@example.invalid>'",
		 f->ws);
	host_ok(cmd);
}

static void git_clone_of_a_local_bare_repository_works(void **state)
{
	struct fixture *f = *state;
	char cmd[PATH_MAX * 4], *out = NULL;

	need_git();
	/* The bare repository lies outside the workspace: only read. */
	snprintf(cmd, sizeof(cmd),
		 "set -e; cd '%s' && git init -q -b main src && cd src && echo hi > hello && "
		 "git add hello && " G " commit -q -m one && git clone -q --bare . ../bare.git",
		 f->root);
	host_ok(cmd);
	snprintf(cmd, sizeof(cmd), "git clone -q '%s/bare.git' clone && cd clone && "
		 "echo more >> hello && " G " commit -q -am two", f->root);
	run_ok(f, cmd, &out);
	/* A local clone first tries to hard-link the objects of the bare
	 * repository (outside the workspace: refused), then copies them. */
	for (const char *p = strstr(out, "refused:"); p != NULL; p = strstr(p + 1, "refused:"))
		if (strncmp(p, "refused: link of ", 17) != 0)
			fsbt_fail_long("git clone was refused more than a hard link:\n%s", out);
	if (strstr(out, "undone:") != NULL)
		fsbt_fail_long("git clone was interfered with:\n%s", out);
	free(out);
	snprintf(cmd, sizeof(cmd),
		 "cd '%s/clone' && git fsck --no-progress 2>/dev/null && test \"$(git log --format=%%s | tr '\\n' ' ')\" = "
		 "'two one ' && test \"$(git config remote.origin.url)\" = '%s/bare.git' && "
		 "test \"$(git config branch.main.remote)\" = origin", f->ws, f->root);
	host_ok(cmd);
}

static void an_fsmonitor_set_by_git_config_is_undone_and_reported(void **state)
{
	struct fixture *f = *state;
	char cmd[PATH_MAX * 4], path[PATH_MAX * 2], canary[PATH_MAX * 2], audit[PATH_MAX * 2];
	char *before, *after, *out = NULL, *log;

	need_git();
	snprintf(cmd, sizeof(cmd), "cd '%s' && git init -q -b main . && git add a.txt && "
		 G " commit -q -m base", f->ws);
	host_ok(cmd);
	snprintf(path, sizeof(path), "%s/.git/config", f->ws);
	before = fsbt_read_file(path, NULL);
	assert_non_null(before);
	snprintf(canary, sizeof(canary), "%s/pwned", f->root);
	snprintf(cmd, sizeof(cmd), "git config core.fsmonitor 'touch %s' && "
		 "git config alias.st '!touch %s'", canary, canary);
	run_ok(f, cmd, &out);
	snprintf(cmd, sizeof(cmd), "fsbroker run: undone: %s: core.fsmonitor", path);
	if (strstr(out, cmd) == NULL)
		fsbt_fail_long("the summary does not name the undo ('%s'):\n%s", cmd, out);
	free(out);
	/* Its content at the start, byte for byte, and git runs nothing. */
	after = fsbt_read_file(path, NULL);
	assert_string_equal(after, before);
	snprintf(cmd, sizeof(cmd), "cd '%s' && git status -s >/dev/null", f->ws);
	host_ok(cmd);
	assert_false(exists(canary));
	snprintf(audit, sizeof(audit), "%s/audit/s.jsonl", f->state);
	log = fsbt_read_file(audit, NULL);
	assert_non_null(log);
	assert_non_null(strstr(log, "\"phase\":\"git-guard\""));
	assert_non_null(strstr(log, "\"decision\":\"undone\""));
	free(log);
	free(before);
	free(after);
}

/* In a repository the run made, the risky keys go and the rest stays. */
static void risky_keys_leave_a_config_the_run_made_and_the_rest_stays(void **state)
{
	struct fixture *f = *state;
	char cmd[PATH_MAX * 4], canary[PATH_MAX * 2], diff[2048], *out = NULL;
	struct fsbt_tree before, after;
	cJSON *sum, *undone;
	struct runproc p;
	int st;

	need_git();
	assert_int_equal(fsbt_tree_snap(f->ws, &before), 0);
	snprintf(canary, sizeof(canary), "%s/pwned", f->root);
	snprintf(cmd, sizeof(cmd), "git init -q -b main . && git config user.email a@b.invalid && "
		 "git config core.pager 'touch %s' && git config filter.x.smudge 'touch %s'",
		 canary, canary);
	run_start((char *[]){ (char *)fsbt_binary(), "run", "--workspace", f->ws, "--state-dir",
			      f->state, "--session", "s", "--summary-fd", "5", "--", "sh", "-c",
			      cmd, NULL }, false, &p);
	st = run_finish(&p);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fsbt_fail_long("fsbroker run exited 0x%x:\n%s", (unsigned)st, p.ebuf ? p.ebuf : "");
	/* With --summary-fd, stderr is CMD's own. */
	if (p.ebuf != NULL && strstr(p.ebuf, "undone") != NULL)
		fsbt_fail_long("the undo reached stderr:\n%s", p.ebuf);
	sum = run_summary(&p);
	undone = cJSON_GetObjectItemCaseSensitive(sum, "undone");
	assert_int_equal(cJSON_GetArraySize(undone), 1);
	out = cJSON_GetStringValue(cJSON_GetArrayItem(undone, 0));
	assert_non_null(strstr(out, "core.pager"));
	assert_non_null(strstr(out, "filter.x.smudge"));
	cJSON_Delete(sum);
	run_free(&p);
	out = NULL;
	snprintf(cmd, sizeof(cmd), "cd '%s' && test \"$(git config user.email)\" = a@b.invalid && "
		 "! git config core.pager && ! git config filter.x.smudge", f->ws);
	host_ok(cmd);
	assert_false(exists(canary));

	/* The guard ran before the seal recorded the end state: the cycle's
	 * restore takes the rewritten config for the run's own and removes
	 * the whole repository, as the run made it. (Only reading git
	 * commands ran above: git status may rewrite the index, a change
	 * after the cycle that restore would rightly refuse to lose.) */
	st = fsbt_run((char *[]){ (char *)fsbt_binary(), "backup", "restore", "--last",
					      "--state-dir", f->state, "--session", "s", NULL },
				  &out);
	if (st != 0)
		fsbt_fail_long("restore exited 0x%x:\n%s", (unsigned)st, out ? out : "");
	free(out);
	assert_int_equal(fsbt_tree_snap(f->ws, &after), 0);
	if (fsbt_tree_diff(&before, &after, FSBT_TREE_MTIME, diff, sizeof(diff)) != 0)
		fail_msg("the restore did not give the workspace back:\n%s", diff);
	fsbt_tree_free(&before);
	fsbt_tree_free(&after);
}

/* Issue 14, item 6: a git directory need not be called .git. */
static void a_git_directory_named_src_is_undone_so_git_status_runs_nothing(void **state)
{
	struct fixture *f = *state;
	char cmd[PATH_MAX * 4], canary[PATH_MAX * 2], hook[PATH_MAX * 2], *out = NULL;

	need_git();
	snprintf(canary, sizeof(canary), "%s/pwned", f->root);
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p src/objects src/refs/heads src/hooks && "
		 "echo 'ref: refs/heads/main' > src/HEAD && "
		 "printf '[core]\\n\\trepositoryformatversion = 0\\n\\tbare = false\\n"
		 "\\tworktree = .\\n\\tfsmonitor = \"touch %s\"\\n' > src/config && "
		 "printf '#!/bin/sh\\ntouch %s\\n' > src/hooks/post-checkout && "
		 "chmod +x src/hooks/post-checkout", canary, canary);
	run_ok(f, cmd, &out);
	snprintf(cmd, sizeof(cmd), "cd '%s/src' && git status >/dev/null 2>&1; "
		 "git checkout -q -b x >/dev/null 2>&1; true", f->ws);
	host_ok(cmd);
	if (exists(canary))
		fsbt_fail_long("git on the host ran the command the run planted in %s/src:\n%s",
			       f->ws, out);
	snprintf(hook, sizeof(hook), "%s/src/hooks/post-checkout", f->ws);
	assert_false(exists(hook));
	snprintf(cmd, sizeof(cmd), "undone: %s/src/config: core.fsmonitor", f->ws);
	if (strstr(out, cmd) == NULL)
		fsbt_fail_long("the summary does not name the undo:\n%s", out);
	free(out);
}

static void a_planted_hook_is_refused_while_the_samples_of_git_init_are_fine(void **state)
{
	struct fixture *f = *state;
	char path[PATH_MAX * 2], *out = NULL;
	int st;

	need_git();
	st = run_sh(f, NULL, "git init -q . && echo '#!/bin/sh' > .git/hooks/pre-commit; "
		    "echo status=$?", &out);
	assert_true(WIFEXITED(st));
	if (strstr(out, "Permission denied") == NULL || strstr(out, "status=0") != NULL ||
	    strstr(out, "refused: create of") == NULL)
		fsbt_fail_long("the hook was not refused with EACCES:\n%s", out);
	free(out);
	snprintf(path, sizeof(path), "%s/.git/hooks/pre-commit", f->ws);
	assert_false(exists(path));
	snprintf(path, sizeof(path), "%s/.git/hooks/pre-commit.sample", f->ws);
	assert_true(exists(path));
}

/* Every hook was denyModify: `rm -rf` of a repository that has a hook
 * failed on the hook ("Permission denied"), leaving a half-removed tree.
 * Taking a hook away runs nothing; it is backed up, and a restore brings
 * the repository back, hook and all. Planting one is still refused. */
static void rm_rf_of_a_repository_with_a_hook_works_and_restores(void **state)
{
	struct fixture *f = *state;
	char cmd[PATH_MAX * 3], path[PATH_MAX * 2], *out = NULL;

	need_git();
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && git init -q -b main repo && printf '#!/bin/sh\\nexit 0\\n' > "
		 "repo/.git/hooks/pre-commit && chmod 0755 repo/.git/hooks/pre-commit && "
		 "cd repo && echo x > x && git add x && " G " commit -q -m x", f->ws);
	host_ok(cmd);
	run_ok(f, "rm -rf repo", &out);
	if (strstr(out, "refused:") != NULL)
		fsbt_fail_long("rm -rf of the repository was refused:\n%s", out);
	snprintf(path, sizeof(path), "%s/repo", f->ws);
	assert_false(exists(path));
	snprintf(cmd, sizeof(cmd), "%s", strstr(out, "fsbroker backup restore"));
	cmd[strcspn(cmd, "\n")] = '\0';
	free(out);
	assert_int_equal(run_printed(cmd, &out), 0);
	free(out);
	snprintf(cmd, sizeof(cmd),
		 "cd '%s/repo' && test -x .git/hooks/pre-commit && git fsck --no-progress 2>/dev/null "
		 "&& test \"$(git log --format=%%s)\" = x", f->ws);
	host_ok(cmd);
	/* Moving a hook into the repository is still a new hook. */
	assert_int_equal(run_sh(f, NULL, "echo '#!/bin/sh' > h && mv h repo/.git/hooks/post-merge; "
				"echo status=$?", &out), 0);
	if (strstr(out, "status=0") != NULL || strstr(out, "denyWrite") == NULL)
		fsbt_fail_long("a hook moved into the repository was not refused:\n%s", out);
	free(out);
	snprintf(path, sizeof(path), "%s/repo/.git/hooks/post-merge", f->ws);
	assert_false(exists(path));
}

/* A hook written under another name of the git directory: the rename back
 * is refused (each entry beneath is judged), and the guard removes it where
 * it is, since the directory named `aside` is a git directory too. */
static void a_hook_planted_in_a_renamed_git_directory_is_undone(void **state)
{
	struct fixture *f = *state;
	char cmd[PATH_MAX * 2], path[PATH_MAX * 2], *out = NULL;

	need_git();
	snprintf(cmd, sizeof(cmd), "cd '%s' && git init -q -b main . && git add a.txt && "
		 G " commit -q -m base", f->ws);
	host_ok(cmd);
	run_ok(f, "mv .git aside && printf '#!/bin/sh\\nexit 0\\n' > aside/hooks/pre-commit && "
	       "chmod +x aside/hooks/pre-commit; mv aside .git; true", &out);
	snprintf(path, sizeof(path), "%s/aside/hooks/pre-commit", f->ws);
	if (exists(path))
		fsbt_fail_long("the hook stayed:\n%s", out);
	snprintf(path, sizeof(path), "%s/.git/hooks/pre-commit", f->ws);
	assert_false(exists(path));
	snprintf(cmd, sizeof(cmd), "undone: %s/aside/hooks/pre-commit: a hook the git directory "
		 "did not have", f->ws);
	if (strstr(out, cmd) == NULL)
		fsbt_fail_long("the summary does not name the undo:\n%s", out);
	free(out);
}

/* Symlinks where git follows them and the guard does not: a hooks
 * directory pointing at hooks the pack never saw as hooks, and a config
 * pointing at a file with an fsmonitor. */
static void a_hooks_directory_or_a_config_made_a_symlink_is_undone(void **state)
{
	struct fixture *f = *state;
	char cmd[PATH_MAX * 4], canary[PATH_MAX * 2], path[PATH_MAX * 2], *before, *after;
	char *out = NULL;
	struct stat st;

	need_git();
	snprintf(cmd, sizeof(cmd), "cd '%s' && git init -q -b main . && git add a.txt && "
		 G " commit -q -m base", f->ws);
	host_ok(cmd);
	snprintf(path, sizeof(path), "%s/.git/config", f->ws);
	before = fsbt_read_file(path, NULL);
	snprintf(canary, sizeof(canary), "%s/pwned", f->root);
	snprintf(cmd, sizeof(cmd),
		 "mkdir myhooks && printf '#!/bin/sh\\ntouch %s\\n' > myhooks/pre-commit && "
		 "chmod +x myhooks/pre-commit && rm -r .git/hooks && ln -s ../myhooks .git/hooks && "
		 "cp .git/config evil.cfg && printf '[core]\\n\\tfsmonitor = touch %s\\n' >> evil.cfg && "
		 "rm .git/config && ln -s ../evil.cfg .git/config", canary, canary);
	run_ok(f, cmd, &out);
	snprintf(path, sizeof(path), "%s/.git/hooks", f->ws);
	if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
		fsbt_fail_long("the hooks symlink stayed:\n%s", out);
	snprintf(path, sizeof(path), "%s/.git/config", f->ws);
	assert_int_equal(lstat(path, &st), 0);
	if (!S_ISREG(st.st_mode))
		fsbt_fail_long("the config symlink stayed:\n%s", out);
	free(out);
	after = fsbt_read_file(path, NULL);
	assert_string_equal(after, before);
	snprintf(cmd, sizeof(cmd), "cd '%s' && git status -s >/dev/null && echo x >> a.txt && "
		 G " commit -q -am two", f->ws);
	host_ok(cmd);
	assert_false(exists(canary));
	free(before);
	free(after);
}

/* A clone with a submodule: the submodule's git directory under
 * .git/modules keeps the core.worktree git writes there. */
static void a_clone_with_a_submodule_works_and_keeps_its_worktree(void **state)
{
	struct fixture *f = *state;
	char cmd[PATH_MAX * 4], *out = NULL;

	need_git();
	snprintf(cmd, sizeof(cmd),
		 "set -e; cd '%s' && git init -q -b main lib && echo l > lib/l && "
		 "git -C lib add l && " G " -C lib commit -q -m lib && "
		 "git init -q -b main super && echo s > super/s && git -C super add s && "
		 G " -C super -c protocol.file.allow=always submodule --quiet add ../lib lib && "
		 G " -C super commit -q -m super", f->root);
	host_ok(cmd);
	snprintf(cmd, sizeof(cmd), "git -c protocol.file.allow=always clone -q "
		 "--recurse-submodules '%s/super' sc", f->root);
	run_ok(f, cmd, &out);
	if (strstr(out, "undone:") != NULL)
		fsbt_fail_long("the clone was interfered with:\n%s", out);
	free(out);
	snprintf(cmd, sizeof(cmd),
		 "cd '%s/sc' && test \"$(cat lib/l)\" = l && "
		 "test \"$(git config -f .git/modules/lib/config core.worktree)\" = ../../../lib && "
		 "test -z \"$(git -C lib status --porcelain)\"", f->ws);
	host_ok(cmd);
}

/* A linked worktree's own config (extensions.worktreeConfig). */
static void an_fsmonitor_in_a_linked_worktrees_config_is_undone(void **state)
{
	struct fixture *f = *state;
	char cmd[PATH_MAX * 4], canary[PATH_MAX * 2], *out = NULL;

	need_git();
	snprintf(cmd, sizeof(cmd), "cd '%s' && git init -q -b main . && git add a.txt && "
		 G " commit -q -m base && git worktree add -q wt2 -b side", f->ws);
	host_ok(cmd);
	snprintf(canary, sizeof(canary), "%s/pwned", f->root);
	snprintf(cmd, sizeof(cmd), "git config extensions.worktreeConfig true && "
		 "git -C wt2 config --worktree core.fsmonitor 'touch %s'", canary);
	run_ok(f, cmd, &out);
	snprintf(cmd, sizeof(cmd), "undone: %s/.git/worktrees/wt2/config.worktree: core.fsmonitor",
		 f->ws);
	if (strstr(out, cmd) == NULL)
		fsbt_fail_long("the summary does not name the undo ('%s'):\n%s", cmd, out);
	free(out);
	snprintf(cmd, sizeof(cmd), "cd '%s/wt2' && git status -s >/dev/null && "
		 "! git config --worktree core.fsmonitor && git config extensions.worktreeConfig",
		 f->ws);
	host_ok(cmd);
	assert_false(exists(canary));
}

/* The run's core killed before it could seal: the next start seals the
 * cycle as recovered, and the guard undoes it then. */
static void a_cycle_a_killed_run_left_open_is_guarded_when_it_is_recovered(void **state)
{
	struct fixture *f = *state;
	char cmd[PATH_MAX * 4], path[PATH_MAX * 2], ready[PATH_MAX * 2], canary[PATH_MAX * 2];
	char *text, *out = NULL;
	struct runproc p;

	need_git();
	snprintf(cmd, sizeof(cmd), "cd '%s' && git init -q -b main . && git add a.txt && "
		 G " commit -q -m base", f->ws);
	host_ok(cmd);
	snprintf(canary, sizeof(canary), "%s/pwned", f->root);
	snprintf(ready, sizeof(ready), "%s/ready", f->ws);
	snprintf(cmd, sizeof(cmd), "git config core.fsmonitor 'touch %s' && touch ready && "
		 "exec sleep 30", canary);
	run_start((char *[]){ (char *)fsbt_binary(), "run", "--workspace", f->ws, "--state-dir",
			      f->state, "--session", "s", "--", "sh", "-c", cmd, NULL }, false, &p);
	/* A hang detector, not a measure: the config is written well before. */
	for (int i = 0; i < 600 && !exists(ready); i++)
		usleep(50 * 1000);
	if (!exists(ready)) {
		kill(p.pid, SIGKILL);
		run_finish_within(&p, 45);
		fsbt_fail_long("the run never got to its sleep:\n%s", p.ebuf ? p.ebuf : "");
	}
	assert_int_equal(kill(p.pid, SIGKILL), 0);
	run_finish_within(&p, 45);
	run_free(&p);
	snprintf(path, sizeof(path), "%s/.git/config", f->ws);
	text = fsbt_read_file(path, NULL);
	assert_non_null(strstr(text, "fsmonitor"));	/* nobody sealed: still there */
	free(text);

	run_ok(f, "true", &out);
	free(out);
	text = fsbt_read_file(path, NULL);
	if (strstr(text, "fsmonitor") != NULL)
		fail_msg("the recovered cycle kept core.fsmonitor:\n%s", text);
	free(text);
	snprintf(path, sizeof(path), "%s/audit/s.jsonl", f->state);
	text = fsbt_read_file(path, NULL);
	assert_non_null(strstr(text, "\"phase\":\"git-guard\""));
	free(text);
	snprintf(cmd, sizeof(cmd), "cd '%s' && git status -s >/dev/null", f->ws);
	host_ok(cmd);
	assert_false(exists(canary));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			git_init_and_commit_work_and_the_repository_is_left_intact, setup, teardown),
		cmocka_unit_test_setup_teardown(git_clone_of_a_local_bare_repository_works, setup,
						teardown),
		cmocka_unit_test_setup_teardown(an_fsmonitor_set_by_git_config_is_undone_and_reported,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			risky_keys_leave_a_config_the_run_made_and_the_rest_stays, setup, teardown),
		cmocka_unit_test_setup_teardown(
			a_git_directory_named_src_is_undone_so_git_status_runs_nothing, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			a_planted_hook_is_refused_while_the_samples_of_git_init_are_fine, setup,
			teardown),
		cmocka_unit_test_setup_teardown(a_commit_takes_its_identity_from_the_environment, setup,
						teardown),
		cmocka_unit_test_setup_teardown(rm_rf_of_a_repository_with_a_hook_works_and_restores,
						setup, teardown),
		cmocka_unit_test_setup_teardown(a_hook_planted_in_a_renamed_git_directory_is_undone,
						setup, teardown),
		cmocka_unit_test_setup_teardown(a_hooks_directory_or_a_config_made_a_symlink_is_undone,
						setup, teardown),
		cmocka_unit_test_setup_teardown(a_clone_with_a_submodule_works_and_keeps_its_worktree,
						setup, teardown),
		cmocka_unit_test_setup_teardown(an_fsmonitor_in_a_linked_worktrees_config_is_undone,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			a_cycle_a_killed_run_left_open_is_guarded_when_it_is_recovered, setup,
			teardown),
	};

	return fsbt_run_group(tests, NULL, NULL);
}
