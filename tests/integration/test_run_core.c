/*
 * test_run_core.c — `fsbroker run --core STATE-DIR` against a real
 * `fsbroker serve` started here: the run attaches through the admin socket,
 * its command's changes go through that core with its pack, workspace and
 * session, the cycle stays open for the host to commit, and a core that is
 * not running is a failure of the run (125) naming the state dir. With
 * `serve --approvals inline` a call the pack asks about waits while the
 * host gets a `prompt` event on the control channel, and its answer decides.
 */
#include "run_fixture.h"

static int core_setup(void **state)
{
	struct fsbt_core *c;

	/* The layout must not lie under /tmp, which the sandbox replaces. */
	setenv("TMPDIR", "/var/tmp", 1);
	unsetenv("XDG_RUNTIME_DIR");
	c = fsbt_core_new();
	fsbt_core_start(c);
	*state = c;
	return 0;
}

static int core_setup_inline(void **state)
{
	struct fsbt_core *c;

	setenv("TMPDIR", "/var/tmp", 1);
	unsetenv("XDG_RUNTIME_DIR");
	c = fsbt_core_new();
	c->serve_args[0] = "--approvals";
	c->serve_args[1] = "inline";
	c->serve_args[2] = "--approval-timeout";
	c->serve_args[3] = "60";
	fsbt_core_start(c);
	*state = c;
	return 0;
}

static int core_teardown(void **state)
{
	return fsbt_core_stop(*state);
}

static bool has_string(const cJSON *arr, const char *want)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, arr)
		if (cJSON_IsString(it) && strcmp(it->valuestring, want) == 0)
			return true;
	return false;
}

static void a_run_attaches_and_the_host_commits(void **state)
{
	struct fsbt_core *c = *state;
	char why[512], a[PATH_MAX + 16], key[PATH_MAX + 32], sealed[PATH_MAX * 2], want[PATH_MAX];
	const cJSON *it;
	struct runproc p;
	bool key_denied = false;
	cJSON *s, *r;
	int st, cycle;
	char *text;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	snprintf(a, sizeof(a), "%s/a.txt", c->ws);
	snprintf(key, sizeof(key), "%s/.ssh/id_ed25519", c->home);
	fsbt_write_file(a, "old\n");
	run_start((char *[]){ (char *)fsbt_binary(), "run", "--core", c->state, "--tool-call",
			      "tc-core-1", "--summary-fd", "5", "--", "sh", "-c",
			      "pwd; echo new > a.txt; echo x > ~/.ssh/id_ed25519", NULL },
		  false, &p);
	st = run_finish(&p);
	/* The key's write fails inside: sh exits 2. */
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 2)
		fail_msg("wait status 0x%x; stderr:\n%s\ncore log:\n%s", (unsigned)st,
			 p.ebuf ? p.ebuf : "", fsbt_core_log(c));
	/* The core's workspace is the command's working directory. */
	snprintf(want, sizeof(want), "%s\n", c->ws);
	assert_string_equal(p.obuf, want);
	text = fsbt_read_file(a, NULL);
	assert_string_equal(text, "new\n");
	free(text);
	text = fsbt_read_file(key, NULL);
	assert_non_null(strstr(text, "fsbt test key"));
	free(text);

	s = run_summary(&p);
	assert_string_equal(fsbt_str(s, "mode"), "attached");
	/* The core's session, since the run named none. */
	assert_string_equal(fsbt_str(s, "session"), c->session);
	assert_string_equal(fsbt_str(s, "toolCall"), "tc-core-1");
	assert_true(has_string(cJSON_GetObjectItemCaseSensitive(s, "changed"), a));
	assert_true(fsbt_num(s, "backedUp") >= 1);
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(s, "denied"))
		key_denied |= strcmp(fsbt_str(it, "path"), key) == 0 &&
			      strcmp(fsbt_str(it, "rule"), "denyRead ~/.ssh/**") == 0;
	if (!key_denied)
		fail_msg("the key's refusal is not in the summary: %s", p.sbuf);
	assert_non_null(strstr(fsbt_str(s, "restoreCommand"), "--tool-call tc-core-1"));
	/* The run did not seal the cycle: the host's turn is not over. */
	cycle = (int)fsbt_num(s, "cycle");
	assert_true(cycle >= 1);
	assert_false(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s, "cycleSealed")));
	snprintf(sealed, sizeof(sealed), "%s/sessions/%s/modify_backup/cycles/%d/cycle.json",
		 c->state, c->session, cycle);
	assert_int_equal(access(sealed, F_OK), -1);
	cJSON_Delete(s);
	run_free(&p);

	/* The host commits it over its control channel. */
	r = fsbt_control_cmd(c, "CommitModifyBackup", "\"commitMsg\":\"turn 1\"");
	assert_true(fsbt_ok(r));
	assert_int_equal((int)fsbt_num(r, "cycle"), cycle);
	cJSON_Delete(r);
	assert_int_equal(access(sealed, F_OK), 0);
}

/*
 * A deferred approval with an attached run: the call the pack asks about
 * fails, the summary prints the `fsbroker approve` command, and after it the
 * same run against the same core goes through (the core reads the session's
 * approvals when the run opens its scope).
 */
static void fsbroker_approve_works_for_an_attached_run(void **state)
{
	struct fsbt_core *c = *state;
	char why[512], notes[PATH_MAX + 16];
	char *const argv[] = { (char *)fsbt_binary(), "run", "--core", c->state, "--tool-call",
			       "tc-core-ask", "--summary-fd", "5", "--", "sh", "-c",
			       "echo approved > ~/notes.txt", NULL };
	const cJSON *waiting;
	struct runproc p;
	char *out = NULL, *text;
	cJSON *s;
	int st;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	snprintf(notes, sizeof(notes), "%s/notes.txt", c->home);
	fsbt_write_file(notes, "before\n");
	run_start(argv, false, &p);
	st = run_finish(&p);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) != 0);
	s = run_summary(&p);
	waiting = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(s, "waiting"), 0);
	if (waiting == NULL)
		fail_msg("nothing waits for approval: %s", p.sbuf);
	assert_string_equal(fsbt_str(waiting, "path"), notes);
	/* As printed, run by a shell. */
	st = run_printed(fsbt_str(waiting, "approveCommand"), &out);
	if (st != 0)
		fail_msg("%s exited 0x%x:\n%s", fsbt_str(waiting, "approveCommand"), (unsigned)st,
			 out ? out : "");
	free(out);
	cJSON_Delete(s);
	run_free(&p);
	text = fsbt_read_file(notes, NULL);
	assert_string_equal(text, "before\n");
	free(text);

	run_start(argv, false, &p);
	st = run_finish(&p);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("the rerun exited 0x%x; stderr:\n%s\ncore log:\n%s", (unsigned)st,
			 p.ebuf ? p.ebuf : "", fsbt_core_log(c));
	run_free(&p);
	text = fsbt_read_file(notes, NULL);
	assert_string_equal(text, "approved\n");
	free(text);
}

/* An attached run writes ~/notes.txt (the default pack asks) under a core
 * with inline approvals; the host answers the prompt with `answer`. */
static void inline_prompt(struct fsbt_core *c, const char *answer, int want_exit,
			  const char *want_text)
{
	char why[512], notes[PATH_MAX + 16];
	struct runproc p;
	cJSON *ev, *r;
	char *text;
	int st;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	snprintf(notes, sizeof(notes), "%s/notes.txt", c->home);
	fsbt_write_file(notes, "before\n");
	run_start((char *[]){ (char *)fsbt_binary(), "run", "--core", c->state, "--tool-call",
			      "tc-inline", "--summary-fd", "5", "--", "sh", "-c",
			      "echo answered > ~/notes.txt", NULL },
		  false, &p);
	ev = fsbt_control_event(c, "prompt", 30000);
	if (ev == NULL) {
		kill(p.pid, SIGKILL);
		run_finish(&p);
		fail_msg("no prompt event from serve; run stderr:\n%s\ncore log:\n%s",
			 p.ebuf ? p.ebuf : "", fsbt_core_log(c));
	}
	assert_string_equal(fsbt_str(ev, "path"), notes);
	assert_string_equal(fsbt_str(ev, "op"), "write");
	assert_string_equal(fsbt_str(ev, "rule"), "ask.modify ~/**");
	assert_string_equal(fsbt_str(ev, "toolCallId"), "tc-inline");
	r = fsbt_control_cmd(c, answer, "\"blockId\":\"%s\"", fsbt_str(ev, "blockId"));
	assert_true(fsbt_ok(r));
	cJSON_Delete(r);
	cJSON_Delete(ev);
	st = run_finish(&p);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != want_exit)
		fail_msg("wait status 0x%x; stderr:\n%s", (unsigned)st, p.ebuf ? p.ebuf : "");
	run_free(&p);
	text = fsbt_read_file(notes, NULL);
	assert_string_equal(text, want_text);
	free(text);
}

static void serve_inline_approve_lets_the_waiting_call_through(void **state)
{
	inline_prompt(*state, "Approve", 0, "answered\n");
}

static void serve_inline_deny_refuses_the_waiting_call(void **state)
{
	/* sh cannot open the file for writing: exit 2. */
	inline_prompt(*state, "Deny", 2, "before\n");
}

static void no_core_running_exits_125_naming_the_state_dir(void **state)
{
	struct fsbt_core *c = *state;
	char other[PATH_MAX + 16];
	struct runproc p;
	int st;

	snprintf(other, sizeof(other), "%s/other-state", c->dir);
	assert_int_equal(mkdir(other, 0700), 0);
	run_start((char *[]){ (char *)fsbt_binary(), "run", "--core", other, "--", "true", NULL },
		  false, &p);
	st = run_finish(&p);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 125);
	assert_non_null(p.ebuf);
	assert_non_null(strstr(p.ebuf, "fsbroker run: no fsbroker core is running with the "
				       "state dir "));
	assert_non_null(strstr(p.ebuf, other));
	run_free(&p);
	/* --core takes the core's pack: a pack of the run's own is refused. */
	run_start((char *[]){ (char *)fsbt_binary(), "run", "--core", c->state, "--rules",
			      "default", "--", "true", NULL }, false, &p);
	st = run_finish(&p);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 125);
	assert_non_null(strstr(p.ebuf, "leave out --rules"));
	run_free(&p);
}

/*
 * Where `fsbroker serve --socket` puts the core's socket, an attached run's
 * sandbox must not see it: through the main socket a program inside would
 * be served in the host's view, through a sibling run's scoped socket as
 * that run. The test holds a second scope open (the sibling), then runs a
 * command that looks for both sockets and lists their directory, and writes
 * a file to show the sandbox still works.
 */
static void socket_hidden_at(const char *sockdir)
{
	char why[512], line[512], reply[8192], admin_sock[PATH_MAX + 16], out[PATH_MAX + 16];
	const char *sibling;
	struct fsbt_core *c;
	struct runproc p;
	cJSON *r;
	int afd, st;
	char *text;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	c = fsbt_core_new();
	if (strcmp(sockdir, "home") == 0)
		snprintf(c->sockdir, sizeof(c->sockdir), "%s/.fsbroker-sock", c->home);
	else
		snprintf(c->sockdir, sizeof(c->sockdir), "%s/.fsbroker-sock", c->ws);
	snprintf(c->sock, sizeof(c->sock), "%s/broker.sock", c->sockdir);
	fsbt_core_start(c);

	/* The sibling: a live scope of another tool call, in the same dir. */
	snprintf(admin_sock, sizeof(admin_sock), "%s/admin.sock", c->state);
	afd = fsbt_connect_path(admin_sock);
	assert_true(afd >= 0);
	snprintf(line, sizeof(line), "{\"id\":1,\"command\":\"OpenScope\",\"sessionId\":\"%s\","
		 "\"toolCallId\":\"tc-sibling\"}", c->session);
	assert_true(fsbt_request(afd, line, reply, sizeof(reply), NULL) > 0);
	r = cJSON_Parse(reply);
	assert_non_null(r);
	sibling = fsbt_str(r, "socket");
	assert_true(strncmp(sibling, c->sockdir, strlen(c->sockdir)) == 0);

	run_start((char *[]){ (char *)fsbt_binary(), "run", "--core", c->state, "--tool-call",
			      "tc-socket-probe", "--summary-fd", "5", "--", "sh", "-c",
			      "for s in \"$1\" \"$2\"; do [ -e \"$s\" ] && echo \"visible: $s\"; done; "
			      "ls -A \"$3\" 2>/dev/null | sed 's/^/listed: /'; echo ok > probe.txt",
			      "sh", c->sock, (char *)sibling, c->sockdir, NULL },
		  false, &p);
	st = run_finish(&p);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("socket dir under the %s: wait status 0x%x; stderr:\n%s\ncore log:\n%s",
			 sockdir, (unsigned)st, p.ebuf ? p.ebuf : "", fsbt_core_log(c));
	if (p.obuf != NULL && p.obuf[0] != '\0')
		fail_msg("socket dir under the %s: the sandbox sees the core's sockets:\n%s",
			 sockdir, p.obuf);
	snprintf(out, sizeof(out), "%s/probe.txt", c->ws);
	text = fsbt_read_file(out, NULL);
	assert_string_equal(text, "ok\n");
	free(text);
	run_free(&p);
	cJSON_Delete(r);
	close(afd);
	fsbt_core_stop(c);
}

static void the_core_socket_is_not_visible_inside_wherever_it_lies(void **state)
{
	(void)state;
	setenv("TMPDIR", "/var/tmp", 1);
	unsetenv("XDG_RUNTIME_DIR");
	socket_hidden_at("home");
	socket_hidden_at("workspace");
}

/* A socket dir that holds the workspace cannot be hidden without hiding
 * the workspace: the run refuses with a sentence instead of showing it. */
static void a_socket_dir_holding_the_workspace_refuses_the_run(void **state)
{
	char why[512];
	struct fsbt_core *c;
	struct runproc p;
	int st;

	(void)state;
	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	setenv("TMPDIR", "/var/tmp", 1);
	unsetenv("XDG_RUNTIME_DIR");
	c = fsbt_core_new();
	assert_int_equal(chmod(c->ws, 0700), 0);
	snprintf(c->sockdir, sizeof(c->sockdir), "%s", c->ws);
	snprintf(c->sock, sizeof(c->sock), "%s/broker.sock", c->ws);
	fsbt_core_start(c);
	run_start((char *[]){ (char *)fsbt_binary(), "run", "--core", c->state, "--", "true",
			      NULL }, false, &p);
	st = run_finish(&p);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 125);
	if (p.ebuf == NULL || strstr(p.ebuf, "holds the workspace") == NULL)
		fail_msg("no refusal naming the workspace: %s", p.ebuf ? p.ebuf : "");
	run_free(&p);
	fsbt_core_stop(c);
}

/*
 * An attached run loads the pack only for its mount plan: as the core
 * compiled and tested it. The self-tests the core passed are not run again
 * (the debug line says so), and the compiled chunks are the core's state
 * dir's: removed, they are there again after the run.
 */
static void an_attached_run_loads_the_pack_as_its_core_compiled_and_tested_it(void **state)
{
	struct fsbt_core *c = *state;
	char why[512], chunks[PATH_MAX], cmd[PATH_MAX + 64];
	struct runproc p;
	int st;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	snprintf(chunks, sizeof(chunks), "%s/lua-chunks", c->state);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", chunks);
	assert_int_equal(system(cmd), 0);
	setenv("FSBROKER_LOG", "debug", 1);
	run_start((char *[]){ (char *)fsbt_binary(), "run", "--core", c->state, "--", "true",
			      NULL },
		  false, &p);
	st = run_finish(&p);
	unsetenv("FSBROKER_LOG");
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("wait status 0x%x; stderr:\n%s", (unsigned)st, p.ebuf ? p.ebuf : "");
	if (p.ebuf == NULL || strstr(p.ebuf, "passed before for this very code") == NULL)
		fail_msg("the attached run ran the pack's self-tests again:\n%s",
			 p.ebuf ? p.ebuf : "");
	snprintf(cmd, sizeof(cmd), "test -n \"$(ls -A '%s')\"", chunks);
	if (system(cmd) != 0)
		fail_msg("the attached run kept no compiled chunk in %s", chunks);
	run_free(&p);
}

/*
 * The host may restore a turn before it commits it: the cycle is still open
 * and has no end states, so restore knows what the cycle made only by the
 * objects its lines record. Git's objects and refs (a temporary linked to
 * its name, a lock renamed over its name), `sed -i`'s temporary renamed
 * over the file, a directory moved, a hard link and a symlink are all
 * removed again, each known as the object the cycle left there, and the
 * workspace is as it was. The restore is the command the run printed, with
 * the --force its line says it needs until the host commits.
 */
static void a_restore_before_the_commit_removes_what_the_run_made(void **state)
{
	struct fsbt_core *c = *state;
	char why[512], kept[PATH_MAX + 16], diff[4096], cmd[PATH_MAX * 3];
	struct fsbt_tree before, after;
	const char *line, *end;
	struct runproc p;
	char *out = NULL;
	int st;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	if (access("/usr/bin/git", X_OK) < 0)
		fsbt_skip("%s", "git is not installed (make deps)");
	snprintf(kept, sizeof(kept), "%s/kept.txt", c->ws);
	fsbt_write_file(kept, "kept\n");
	assert_int_equal(fsbt_tree_snap(c->ws, &before), 0);
	run_start((char *[]){ (char *)fsbt_binary(), "run", "--core", c->state, "--", "sh", "-ec",
			      "git init -q g; cd g; echo a > a; git add a;"
			      " git -c user.email=x@example.invalid -c user.name=x commit -qm one;"
			      " cd ..; ln -s kept.txt sym; ln kept.txt hard; mkdir d; echo x > d/f;"
			      " echo z > d/z; mv d d2; sed -i s/x/y/ d2/f; echo n > n; mv n n2", NULL },
		  false, &p);
	st = run_finish(&p);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("wait status 0x%x; stderr:\n%s", (unsigned)st, p.ebuf ? p.ebuf : "");
	/* The command the run printed, with what the line says it takes
	 * before the host commits the turn. */
	line = p.ebuf != NULL ? strstr(p.ebuf, "fsbroker run: to undo: ") : NULL;
	end = line != NULL ? strstr(line, " (once the host commits the turn; before it, add "
				    "--force)\n") : NULL;
	if (end == NULL)
		fail_msg("no undo line that says when it works:\n%s", p.ebuf ? p.ebuf : "");
	line += strlen("fsbroker run: to undo: ");
	snprintf(cmd, sizeof(cmd), "%.*s --force", (int)(end - line), line);
	run_free(&p);
	st = run_printed(cmd, &out);
	assert_int_equal(fsbt_tree_snap(c->ws, &after), 0);
	if (st != 0 || fsbt_tree_diff(&before, &after, FSBT_TREE_MTIME | FSBT_TREE_NLINK |
				      FSBT_TREE_LINKS, diff, sizeof(diff)) > 0)
		fail_msg("restore exited 0x%x; the workspace differs:\n%s\nits output:\n%s",
			 (unsigned)st, diff, out ? out : "");
	/* Each removal was of the object the cycle's last line names, not
	 * one --force had to take on trust. */
	if (strstr(out, "forced") != NULL)
		fail_msg("restore removed an object it did not know as the cycle's:\n%s", out);
	free(out);
	fsbt_tree_free(&before);
	fsbt_tree_free(&after);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(a_run_attaches_and_the_host_commits, core_setup,
						core_teardown),
		cmocka_unit_test_setup_teardown(fsbroker_approve_works_for_an_attached_run,
						core_setup, core_teardown),
		cmocka_unit_test_setup_teardown(no_core_running_exits_125_naming_the_state_dir,
						core_setup, core_teardown),
		cmocka_unit_test_setup_teardown(serve_inline_approve_lets_the_waiting_call_through,
						core_setup_inline, core_teardown),
		cmocka_unit_test_setup_teardown(serve_inline_deny_refuses_the_waiting_call,
						core_setup_inline, core_teardown),
		cmocka_unit_test_setup_teardown(
			an_attached_run_loads_the_pack_as_its_core_compiled_and_tested_it, core_setup,
			core_teardown),
		cmocka_unit_test_setup_teardown(a_restore_before_the_commit_removes_what_the_run_made,
						core_setup, core_teardown),
		cmocka_unit_test(the_core_socket_is_not_visible_inside_wherever_it_lies),
		cmocka_unit_test(a_socket_dir_holding_the_workspace_refuses_the_run),
	};

	return fsbt_run_group(tests, NULL, NULL);
}
