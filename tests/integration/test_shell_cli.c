/*
 * test_shell_cli.c — `fsbroker shell` end to end: the patched zsh under an
 * embedded core, its redirections judged, backed up and audited, the cycle
 * sealed and the summary printed when zsh exits, and one restore taking the
 * change back; the environment zsh gets (the broker's variables, the shims
 * first on PATH, the workspace as its directory) and its exit status; and
 * `fsbroker run --shell zsh`, the same shell inside the Linux sandbox.
 *
 * The zsh and the shims: $FSBROKER_ZSH and $FSBROKER_CLIENTS_BIN, else
 * build/clients/zsh and build/clients/bin (set for fsbroker, which looks
 * beside itself otherwise: a sanitizer build has no clients there).
 */
#include "run_fixture.h"

/* fsbroker shell --workspace WS --state-dir ST --session s [extra] -- ARGS,
 * stdout and stderr together into *out; the wait status. */
static int shell(struct fixture *f, const char *extra, char *const *args, char **out)
{
	char *argv[24];
	int n = 0;

	argv[n++] = (char *)fsbt_binary();
	argv[n++] = "shell";
	argv[n++] = "--workspace";
	argv[n++] = f->ws;
	argv[n++] = "--state-dir";
	argv[n++] = f->state;
	argv[n++] = "--session";
	argv[n++] = "s";
	if (extra != NULL) {
		argv[n++] = (char *)extra;
		argv[n++] = "tc-9";
	}
	argv[n++] = "--";
	for (; *args != NULL && n < 23; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	return fsbt_run(argv, out);
}

static void assert_has(const char *out, const char *want)
{
	if (out == NULL || strstr(out, want) == NULL)
		fail_msg("expected \"%s\" in:\n%s", want, out ? out : "(nothing)");
}

static void assert_file(const char *dir, const char *name, const char *want)
{
	char path[PATH_MAX * 2], *text;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	text = fsbt_read_file(path, NULL);
	if (text == NULL || strcmp(text, want) != 0)
		fail_msg("%s holds \"%s\", not \"%s\"", path, text ? text : "(nothing)", want);
	free(text);
}

/* The session's audit log holds a line with all of these fragments. */
static bool audit_has(const struct fixture *f, const char *a, const char *b, const char *c)
{
	char path[PATH_MAX * 2], *text, *line, *save = NULL;
	bool found = false;

	snprintf(path, sizeof(path), "%s/audit/s.jsonl", f->state);
	if ((text = fsbt_read_file(path, NULL)) == NULL)
		return false;
	for (line = strtok_r(text, "\n", &save); line != NULL && !found;
	     line = strtok_r(NULL, "\n", &save))
		found = strstr(line, a) && strstr(line, b) && strstr(line, c);
	free(text);
	return found;
}

static void shell_c_is_brokered_and_seals_the_cycle_when_zsh_exits(void **state)
{
	struct fixture *f = *state;
	char want[PATH_MAX * 2], path[PATH_MAX * 2], *out = NULL;
	int st;

	fsbt_put(f->ws, ".envrc", "export A=1\n");
	st = shell(f, NULL,
		   (char *[]){ "-f", "-c", "echo changed > a.txt; echo x > .envrc", NULL }, &out);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 1)
		fail_msg("fsbroker shell exited 0x%x:\n%s", (unsigned)st, out ? out : "");
	assert_has(out, "zsh:1: permission denied (denyModify **/.envrc): .envrc");
	snprintf(want, sizeof(want), "fsbroker shell: refused: write of %s/.envrc "
		 "(denyModify **/.envrc)", f->ws);
	assert_has(out, want);
	assert_has(out, "fsbroker shell: cycle 1 sealed: 1 path changed, 1 object backed up; "
			"1 refused by the pack, 0 waiting for approval\n");
	assert_has(out, "fsbroker shell: to undo: fsbroker backup restore 1 ");
	free(out);
	assert_file(f->ws, "a.txt", "changed\n");
	assert_file(f->ws, ".envrc", "export A=1\n");

	/* zsh's own write request, and the seal. */
	snprintf(path, sizeof(path), "\"path\":\"%s/a.txt\"", f->ws);
	assert_true(audit_has(f, "\"phase\":\"ipc-token-backup\"", "\"op\":\"write\"", path));
	assert_true(audit_has(f, "\"phase\":\"finalization-modify-backup\"", "\"cycle\":1",
			      "fsbroker shell -f -c"));

	out = NULL;
	st = fsbt_run((char *[]){ (char *)fsbt_binary(), "backup", "restore", "1",
				  "--state-dir", f->state, "--session", "s", NULL }, &out);
	if (st != 0)
		fail_msg("restore exited 0x%x:\n%s", (unsigned)st, out ? out : "");
	free(out);
	assert_file(f->ws, "a.txt", "old a\n");
}

static void zsh_runs_in_the_workspace_with_the_brokers_environment(void **state)
{
	struct fixture *f = *state;
	char want[PATH_MAX * 3], bin[PATH_MAX], *out = NULL;
	int st;

	/* Started from elsewhere: zsh starts in the workspace. */
	assert_non_null(realpath(getenv("FSBROKER_CLIENTS_BIN"), bin));
	st = shell(f, "--tool-call",
		   (char *[]){ "-f", "-c",
			       "print -r -- $FSBROKER_SESSION_ID $FSBROKER_TOOL_CALL_ID $PWD; "
			       "whence -p cp; exit 3",
			       NULL },
		   &out);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 3)
		fail_msg("fsbroker shell exited 0x%x:\n%s", (unsigned)st, out ? out : "");
	snprintf(want, sizeof(want), "s tc-9 %s\n%s/cp\n", f->ws, bin);
	assert_has(out, want);
	assert_has(out, "fsbroker shell: no file changed; 0 refused by the pack, 0 waiting "
			"for approval\n");
	free(out);
}

static void without_the_patched_zsh_the_shell_fails_with_125(void **state)
{
	struct fixture *f = *state;
	char *saved = strdup(getenv("FSBROKER_ZSH")), *out = NULL;
	int st;

	setenv("FSBROKER_ZSH", "/nonexistent/zsh", 1);
	st = shell(f, NULL, (char *[]){ "-f", "-c", "echo x > a.txt", NULL }, &out);
	setenv("FSBROKER_ZSH", saved, 1);
	free(saved);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 125);
	assert_has(out, "fsbroker shell: no patched zsh at /nonexistent/zsh");
	free(out);
	assert_file(f->ws, "a.txt", "old a\n");
}

static void run_shell_zsh_runs_cmd_with_the_patched_zsh_in_the_sandbox(void **state)
{
	struct fixture *f = *state;
	char why[512], bin[PATH_MAX], want[PATH_MAX * 2], *out = NULL;
	int st;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	assert_non_null(realpath(getenv("FSBROKER_CLIENTS_BIN"), bin));
	st = fsbt_run((char *[]){ (char *)fsbt_binary(), "run", "--workspace", f->ws,
				  "--state-dir", f->state, "--session", "s", "--shell", "zsh",
				  "--", "echo changed > a.txt;", "whence -p cp", NULL },
		      &out);
	if (st != 0)
		fail_msg("fsbroker run --shell zsh exited 0x%x:\n%s", (unsigned)st,
			 out ? out : "");
	/* The shims, bound into the sandbox where their build tree is not seen. */
	snprintf(want, sizeof(want), "/run/fsbroker/clients/%s/cp\n", basename(bin));
	assert_has(out, want);
	free(out);
	assert_file(f->ws, "a.txt", "changed\n");
	/* Asked by zsh itself (a text request), not caught by the supervisor. */
	snprintf(want, sizeof(want), "\"path\":\"%s/a.txt\"", f->ws);
	assert_true(audit_has(f, "\"phase\":\"ipc-token\"", "\"op\":\"write\"", want));

	out = NULL;
	st = run_sh(f, "--shell=bash", "true", &out);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 125);
	assert_has(out, "--shell takes zsh");
	free(out);
}

/*
 * The shell's and the shims' requests name files as the sandbox sees them:
 * a here-document's temp file and a copy into /tmp land in the sandbox's
 * private /tmp (never the host's), and an rm through the shim unlinks (the
 * cycle holds the file; the sandbox's trash would be read-only).
 */
static void run_shell_zsh_requests_are_resolved_in_the_sandbox(void **state)
{
	struct fixture *f = *state;
	char why[512], host_tmp[PATH_MAX], *out = NULL;
	int st;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	snprintf(host_tmp, sizeof(host_tmp), "/tmp/fsbt-shell-%ld.txt", (long)getpid());
	unlink(host_tmp);
	/* ${tmp} is /tmp, which the pack lets change and the sandbox has its own of. */
	setenv("TMPDIR", "/tmp", 1);
	st = fsbt_run((char *[]){ (char *)fsbt_binary(), "run", "--workspace", f->ws,
				  "--state-dir", f->state, "--session", "s", "--shell", "zsh",
				  "--", "cat <<END > here.txt\nfrom a here-document\nEND\n",
				  "cp b.txt", host_tmp, "&& cat", host_tmp, "&& rm c.txt", NULL },
		      &out);
	setenv("TMPDIR", f->tmp, 1);
	if (st != 0)
		fail_msg("fsbroker run --shell zsh exited 0x%x:\n%s", (unsigned)st,
			 out ? out : "");
	assert_has(out, "bee\n");
	free(out);
	assert_file(f->ws, "here.txt", "from a here-document\n");
	/* The copy went to the sandbox's /tmp, gone with it. */
	assert_int_equal(access(host_tmp, F_OK), -1);
	{
		char c[PATH_MAX + 16];

		snprintf(c, sizeof(c), "%s/c.txt", f->ws);
		assert_int_equal(access(c, F_OK), -1);
	}
	st = fsbt_run((char *[]){ (char *)fsbt_binary(), "backup", "restore", "--last",
				  "--state-dir", f->state, "--session", "s", NULL }, NULL);
	assert_int_equal(st, 0);
	assert_file(f->ws, "c.txt", "cee\n");
}

/* Lines of the session's audit log holding both fragments. */
static int audit_count(const struct fixture *f, const char *a, const char *b)
{
	char path[PATH_MAX * 2], *text, *line, *save = NULL;
	int n = 0;

	snprintf(path, sizeof(path), "%s/audit/s.jsonl", f->state);
	if ((text = fsbt_read_file(path, NULL)) == NULL)
		return 0;
	for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save))
		n += strstr(line, a) != NULL && strstr(line, b) != NULL;
	free(text);
	return n;
}

/*
 * Under `fsbroker run` (reads = "mask") the clients read without asking:
 * the sandbox's masks, not a request, keep the denyRead file from being
 * read. A grep -r through the shim writes no read line, and still finds
 * nothing in the .env. Under `fsbroker shell`, where the request is the
 * only check, an inherited FSBROKER_READS changes nothing.
 */
static void run_shell_zsh_reads_unasked_and_denyread_stays_unreadable(void **state)
{
	struct fixture *f = *state;
	char why[512], *out = NULL;
	int st;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	{
		char d[PATH_MAX + 8];

		snprintf(d, sizeof(d), "%s/d", f->ws);
		assert_int_equal(mkdir(d, 0755), 0);
		fsbt_put(d, "a.txt", "needle one\n");
		fsbt_put(d, "b.txt", "needle two\n");
		fsbt_put(d, ".env", "needle-secret=1\n");
	}
	st = fsbt_run((char *[]){ (char *)fsbt_binary(), "run", "--workspace", f->ws,
				  "--state-dir", f->state, "--session", "s", "--shell", "zsh",
				  "--", "grep -r needle d; cat d/.env; echo reads=$FSBROKER_READS", NULL },
		      &out);
	if (!WIFEXITED(st))
		fail_msg("fsbroker run --shell zsh ended 0x%x:\n%s", (unsigned)st, out ? out : "");
	assert_has(out, "d/a.txt:needle one");
	assert_has(out, "d/b.txt:needle two");
	assert_has(out, "reads=sandbox");
	if (strstr(out, "needle-secret") != NULL)
		fail_msg("the denyRead file was read:\n%s", out);
	free(out);
	assert_int_equal(audit_count(f, "\"phase\":\"ipc-token\"", "\"op\":\"read\""), 0);

	/* fsbroker shell: each read is asked for, whatever the environment says. */
	out = NULL;
	setenv("FSBROKER_READS", "sandbox", 1);
	st = shell(f, NULL, (char *[]){ "-f", "-c", "grep -r needle d; echo reads=$FSBROKER_READS",
					NULL }, &out);
	unsetenv("FSBROKER_READS");
	if (!WIFEXITED(st))
		fail_msg("fsbroker shell ended 0x%x:\n%s", (unsigned)st, out ? out : "");
	assert_has(out, "d/a.txt:needle one");
	assert_has(out, "reads=\n");
	assert_has(out, "denyRead **/.env");
	if (strstr(out, "needle-secret") != NULL)
		fail_msg("the denyRead file was read under fsbroker shell:\n%s", out);
	free(out);
	assert_true(audit_count(f, "\"phase\":\"ipc-token\"", "\"op\":\"read\"") >= 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
		T(shell_c_is_brokered_and_seals_the_cycle_when_zsh_exits),
		T(zsh_runs_in_the_workspace_with_the_brokers_environment),
		T(without_the_patched_zsh_the_shell_fails_with_125),
		T(run_shell_zsh_runs_cmd_with_the_patched_zsh_in_the_sandbox),
		T(run_shell_zsh_requests_are_resolved_in_the_sandbox),
		T(run_shell_zsh_reads_unasked_and_denyread_stays_unreadable),
#undef T
	};
	char zsh[PATH_MAX], bin[PATH_MAX];
	const char *z = getenv("FSBROKER_ZSH"), *b = getenv("FSBROKER_CLIENTS_BIN");

	if (realpath(z && *z ? z : "build/clients/zsh", zsh) == NULL ||
	    realpath(b && *b ? b : "build/clients/bin", bin) == NULL) {
		fprintf(stderr, "# no patched zsh or shims in build/clients (make zsh toybox): %s\n",
			strerror(errno));
		return 1;
	}
	setenv("FSBROKER_ZSH", zsh, 1);
	setenv("FSBROKER_CLIENTS_BIN", bin, 1);
	return fsbt_run_group(tests, NULL, NULL);
}
