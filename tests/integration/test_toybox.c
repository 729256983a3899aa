/*
 * test_toybox.c — the brokered toybox (clients/toybox) against the real
 * core, through the shims in build/clients/bin as a shell would reach
 * them: each command's change is judged and audited, the file backed up
 * first (its journal entry names the old content), and `fsbroker backup
 * restore` brings the old bytes back. A denied write fails with the
 * command's own message and the rule; a core killed during a command fails
 * it with an I/O error and nothing is written behind its back; without a
 * broker the shims are stock toybox; an option toybox does not know is
 * handed to the system's command.
 *
 * The shims' directory: $FSBROKER_TOYBOX_BIN, else build/clients/bin.
 */
#include "client_fixture.h"

static char bin[PATH_MAX];	/* the shims, absolute */
static char start_dir[PATH_MAX];
static char system_path[PATH_MAX * 2];	/* PATH with the shims first */

/* The environment a brokered command finds under `fsbroker run`. */
static void use_core(const struct fsbt_core *c)
{
	setenv("FSBROKER_SOCKET", c->sock, 1);
	setenv("FSBROKER_SESSION_ID", c->session, 1);
	setenv("FSBROKER_TOOL_CALL_ID", FSBT_TOOL_CALL, 1);
	unsetenv("FSBROKER_TIMEOUT_MS");
	unsetenv("FSBROKER_TOYBOX");
	setenv("PATH", system_path, 1);
	setenv("LC_ALL", "C", 1);
}

static int setup(void **state)
{
	struct fsbt_core *c;

	if (fsbt_setup_core(state) != 0)
		return -1;
	c = *state;
	use_core(c);
	return chdir(c->ws);
}

static int teardown(void **state)
{
	if (chdir(start_dir) < 0)
		return -1;
	return fsbt_teardown_core(state);
}

/* Run the shim `applet` with the arguments (NULL-terminated) in the current
 * directory; its exit code (-1 when it did not exit), output in *out. */
static int run(char **out, const char *applet, ...)
{
	char shim[PATH_MAX + 64], *argv[24];
	int argc = 0, status;
	va_list ap;

	snprintf(shim, sizeof(shim), "%s/%s", bin, applet);
	argv[argc++] = shim;
	va_start(ap, applet);
	for (char *a; argc < 23 && (a = va_arg(ap, char *)) != NULL;)
		argv[argc++] = a;
	va_end(ap);
	argv[argc] = NULL;
	status = fsbt_run(argv, out);
	if (status >= 0 && WIFEXITED(status))
		return WEXITSTATUS(status);
	return -1;
}

/* run() that must succeed; prints the output otherwise. */
#define RUN_OK(...)                                                               \
	do {                                                                      \
		char *out_ = NULL;                                                \
		int rc_ = run(&out_, __VA_ARGS__, NULL);                          \
		if (rc_ != 0)                                                     \
			fail_msg("%s exited %d:\n%s", #__VA_ARGS__, rc_, out_ ? out_ : ""); \
		free(out_);                                                       \
	} while (0)

/* ------------------------------------------------------------------------ */
/* The audit log and the journal. */

static bool rename_to_match(const cJSON *j, const void *arg)
{
	return strcmp(fsbt_str(j, "phase"), "ipc-host-op") == 0 &&
	       strcmp(fsbt_str(j, "op"), "rename-from") == 0 &&
	       strcmp(fsbt_str(j, "decision"), "allow") == 0 &&
	       strcmp(fsbt_str(j, "to"), (const char *)arg) == 0;
}

/* The audit line of a host rename onto `to`, whatever it renamed. */
static cJSON *rename_audit_line(const struct fsbt_core *c, const char *to)
{
	char file[PATH_MAX * 2];
	cJSON *j;
	int seen;

	audit_file(c, file, sizeof(file));
	if ((j = find_line(file, rename_to_match, to, 0, &seen)) == NULL)
		fail_msg("no audit line of a rename onto %s", to);
	return j;
}

static void assert_prior_absent(const cJSON *line)
{
	const cJSON *prior = cJSON_GetObjectItem(line, "prior");

	assert_true(cJSON_IsFalse(cJSON_GetObjectItem(prior, "exists")));
}

/* ------------------------------------------------------------------------ */
/* Each command, brokered and undone. */

static void cp_writes_through_the_core_after_backing_up_the_target(void **state)
{
	struct fsbt_core *c = *state;
	char src[PATH_MAX], dst[PATH_MAX];
	cJSON *j;

	fsbt_write_file(in_ws(src, sizeof(src), c, "source.txt"), "the new text\n");
	fsbt_write_file(in_ws(dst, sizeof(dst), c, "file.txt"), "the old text\n");
	RUN_OK("cp", "source.txt", "file.txt");
	assert_content(dst, "the new text\n");

	/* A write request with an open-spec: backed up, then the core's fd. */
	cJSON_Delete(audit_line(c, "ipc-token-backup", "write", dst, "allow"));
	j = audit_line(c, "ipc-token", "write", dst, "allow");
	assert_string_equal(fsbt_str(j, "grant"), "fd");
	cJSON_Delete(j);
	j = journal_line(c, "write", dst);
	assert_backed_up(c, j, "the old text\n");
	cJSON_Delete(j);

	commit_and_restore(c);
	assert_content(dst, "the old text\n");
	assert_content(src, "the new text\n");
}

static void mv_is_a_host_rename_journaling_the_move_and_keeping_the_target(void **state)
{
	struct fsbt_core *c = *state;
	char src[PATH_MAX], dst[PATH_MAX];
	cJSON *j;

	fsbt_write_file(in_ws(src, sizeof(src), c, "source.txt"), "moving\n");
	fsbt_write_file(in_ws(dst, sizeof(dst), c, "file.txt"), "replaced\n");
	RUN_OK("mv", "source.txt", "file.txt");
	assert_false(exists(src));
	assert_content(dst, "moving\n");

	j = audit_line(c, "ipc-host-op", "rename-from", src, "allow");
	assert_string_equal(fsbt_str(j, "hostOp"), "rename");
	assert_string_equal(fsbt_str(j, "to"), dst);
	cJSON_Delete(j);
	/* The move itself is journaled, its content not copied (docs/
	 * backup-store.md, "Renames"); the target it replaces is kept. */
	j = journal_line(c, "rename-from", src);
	assert_string_equal(fsbt_str(j, "movedTo"), dst);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(j, "prior"), "moved")));
	cJSON_Delete(j);
	j = journal_line(c, "rename-to", dst);
	assert_backed_up(c, j, "replaced\n");
	cJSON_Delete(j);

	commit_and_restore(c);
	assert_content(src, "moving\n");
	assert_content(dst, "replaced\n");
}

static void sed_i_renames_its_temp_file_over_the_original_through_the_core(void **state)
{
	struct fsbt_core *c = *state;
	char dst[PATH_MAX], pfx[PATH_MAX + 8];
	struct fsbt_tree before, after;
	char diff[2048];
	cJSON *j;

	fsbt_write_file(in_ws(dst, sizeof(dst), c, "file.txt"), "banana\n");
	assert_int_equal(fsbt_tree_snap(c->ws, &before), 0);
	RUN_OK("sed", "-i", "s/a/b/g", "file.txt");
	assert_content(dst, "bbnbnb\n");

	/* The temp file (file.txtXXXXXX) was a brokered create, then renamed
	 * by the core over file.txt. */
	j = rename_audit_line(c, dst);
	snprintf(pfx, sizeof(pfx), "%s", dst);
	assert_true(fsbt_starts(fsbt_str(j, "path"), pfx));
	assert_int_equal(strlen(fsbt_str(j, "path")), strlen(dst) + 6);
	assert_string_equal(fsbt_str(j, "hostOp"), "rename");
	cJSON_Delete(j);
	j = journal_line(c, "rename-to", dst);
	assert_backed_up(c, j, "banana\n");
	cJSON_Delete(j);

	commit_and_restore(c);
	assert_content(dst, "banana\n");
	/* And nothing else is left: the temp file's creation is undone too. */
	assert_int_equal(fsbt_tree_snap(c->ws, &after), 0);
	if (fsbt_tree_diff(&before, &after, 0, diff, sizeof(diff)) != 0)
		fail_msg("the workspace differs after the restore:\n%s", diff);
	fsbt_tree_free(&before);
	fsbt_tree_free(&after);
}

static void truncate_is_a_write_request_backed_up(void **state)
{
	struct fsbt_core *c = *state;
	char dst[PATH_MAX];
	struct stat st;
	cJSON *j;

	fsbt_write_file(in_ws(dst, sizeof(dst), c, "file.txt"), "twelve bytes");
	RUN_OK("truncate", "-s", "0", "file.txt");
	assert_int_equal(stat(dst, &st), 0);
	assert_int_equal(st.st_size, 0);

	j = audit_line(c, "ipc-token", "write", dst, "allow");
	assert_string_equal(fsbt_str(j, "grant"), "fd");
	cJSON_Delete(j);
	j = journal_line(c, "write", dst);
	assert_backed_up(c, j, "twelve bytes");
	cJSON_Delete(j);

	commit_and_restore(c);
	assert_content(dst, "twelve bytes");
}

/* The open flags of the nth write grant of `path` in the audit log. */
static double grant_flags(const struct fsbt_core *c, const char *path, int nth)
{
	struct want w = { .phase = "ipc-token", .op = "write", .path = path, .nth = nth };
	cJSON *j = audit_find(c, &w);
	double flags;

	assert_non_null(j);
	flags = fsbt_num(j, "openFlags");
	cJSON_Delete(j);
	return flags;
}

static void dd_of_is_backed_up_before_dd_runs_and_written_through_the_core(void **state)
{
	struct fsbt_core *c = *state;
	char src[PATH_MAX], dst[PATH_MAX];
	cJSON *j;

	fsbt_write_file(in_ws(src, sizeof(src), c, "input.bin"), "0123456789");
	fsbt_write_file(in_ws(dst, sizeof(dst), c, "file.bin"), "old bytes");
	RUN_OK("dd", "if=input.bin", "of=file.bin", "status=none");
	assert_content(dst, "0123456789");

	/* Two write grants of file.bin: the dispatcher's pre-backup, which
	 * neither creates nor truncates, then dd's own open. */
	assert_int_equal(audit_count(c, "ipc-token", "write", dst), 2);
	assert_int_equal((int)grant_flags(c, dst, 0) & (O_CREAT | O_TRUNC), 0);
	assert_int_equal((int)grant_flags(c, dst, 1) & O_CREAT, O_CREAT);
	j = journal_line(c, "write", dst);
	assert_backed_up(c, j, "old bytes");
	cJSON_Delete(j);

	commit_and_restore(c);
	assert_content(dst, "old bytes");
}

/* An operand toybox's dd does not know: the system's dd writes, unbrokered,
 * but the dispatcher's pre-backup was taken first, so the restore still
 * brings the old bytes back. */
static void dd_handed_to_the_system_dd_is_still_backed_up_first(void **state)
{
	struct fsbt_core *c = *state;
	char src[PATH_MAX], dst[PATH_MAX], *out = NULL;
	cJSON *j;

	fsbt_write_file(in_ws(src, sizeof(src), c, "input.bin"), "abcdefgh");
	fsbt_write_file(in_ws(dst, sizeof(dst), c, "file.bin"), "old bytes");
	/* status=progress is GNU dd's; toybox's dd knows noxfer and none. */
	assert_int_equal(run(&out, "dd", "if=input.bin", "of=file.bin", "status=progress", NULL),
			 0);
	free(out);
	assert_content(dst, "abcdefgh");
	/* Only the pre-backup asked: the system's dd did not. */
	assert_int_equal(audit_count(c, "ipc-token", "write", dst), 1);
	j = journal_line(c, "write", dst);
	assert_backed_up(c, j, "old bytes");
	cJSON_Delete(j);

	commit_and_restore(c);
	assert_content(dst, "old bytes");
}

static void rm_is_a_host_delete_to_the_trash(void **state)
{
	struct fsbt_core *c = *state;
	char dst[PATH_MAX], dir[PATH_MAX], inner[PATH_MAX + 8];
	cJSON *j;

	fsbt_write_file(in_ws(dst, sizeof(dst), c, "file.txt"), "keep me\n");
	assert_int_equal(mkdir(in_ws(dir, sizeof(dir), c, "d"), 0755), 0);
	snprintf(inner, sizeof(inner), "%s/x", dir);
	fsbt_write_file(inner, "x\n");
	RUN_OK("rm", "file.txt");
	RUN_OK("rm", "-r", "d");
	assert_false(exists(dst));
	assert_false(exists(dir));

	j = audit_line(c, "ipc-host-op", "delete", dst, "allow");
	assert_string_equal(fsbt_str(j, "hostOp"), "delete");
	cJSON_Delete(j);
	j = journal_line(c, "delete", dst);
	assert_backed_up(c, j, "keep me\n");
	cJSON_Delete(j);
	j = journal_line(c, "delete", inner);
	assert_backed_up(c, j, "x\n");
	cJSON_Delete(j);

	commit_and_restore(c);
	assert_content(dst, "keep me\n");
	assert_content(inner, "x\n");
}

static void mkdir_ln_touch_are_host_operations_undone_by_restore(void **state)
{
	struct fsbt_core *c = *state;
	char a[PATH_MAX], ab[PATH_MAX], lnk[PATH_MAX], f[PATH_MAX], fresh[PATH_MAX];
	struct timespec old[2] = { { .tv_sec = 1000000000 }, { .tv_sec = 1000000000 } };
	struct stat st;
	char target[64];
	ssize_t n;
	cJSON *j;

	fsbt_write_file(in_ws(f, sizeof(f), c, "file.txt"), "touched\n");
	assert_int_equal(utimensat(AT_FDCWD, f, old, 0), 0);
	RUN_OK("mkdir", "-p", "a/b");
	RUN_OK("ln", "-s", "file.txt", "lnk");
	RUN_OK("touch", "file.txt", "fresh.txt");

	in_ws(a, sizeof(a), c, "a");
	in_ws(ab, sizeof(ab), c, "a/b");
	in_ws(lnk, sizeof(lnk), c, "lnk");
	in_ws(fresh, sizeof(fresh), c, "fresh.txt");
	assert_int_equal(stat(ab, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	n = readlink(lnk, target, sizeof(target) - 1);
	assert_int_equal(n, 8);
	target[n] = '\0';
	assert_string_equal(target, "file.txt");
	assert_int_equal(stat(f, &st), 0);
	assert_true(st.st_mtim.tv_sec > 1000000000);
	assert_true(exists(fresh));

	cJSON_Delete(audit_line(c, "ipc-host-op", "mkdir", a, "allow"));
	cJSON_Delete(audit_line(c, "ipc-host-op", "mkdir", ab, "allow"));
	cJSON_Delete(audit_line(c, "ipc-host-op", "symlink", lnk, "allow"));
	cJSON_Delete(audit_line(c, "ipc-host-op", "touch", f, "allow"));
	cJSON_Delete(audit_line(c, "ipc-token", "create", fresh, "allow"));
	j = journal_line(c, "mkdir", ab);
	assert_prior_absent(j);
	cJSON_Delete(j);
	j = journal_line(c, "symlink", lnk);
	assert_prior_absent(j);
	cJSON_Delete(j);
	/* A touch changes times, not bytes: its old metadata only. */
	j = journal_line(c, "touch", f);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "prior"),
						     "metadataOnly")));
	cJSON_Delete(j);

	commit_and_restore(c);
	assert_false(exists(a));
	assert_false(exists(lnk));
	assert_false(exists(fresh));
	assert_int_equal(stat(f, &st), 0);
	assert_int_equal(st.st_mtim.tv_sec, 1000000000);
	assert_content(f, "touched\n");
}

/* ------------------------------------------------------------------------ */
/* Refusals and failures. */

static void a_denied_write_fails_with_the_commands_message_and_the_rule(void **state)
{
	struct fsbt_core *c = *state;
	char src[PATH_MAX], envrc[PATH_MAX], *out = NULL;
	struct fsbt_tree before, after;
	char diff[2048];

	fsbt_write_file(in_ws(src, sizeof(src), c, "source.txt"), "export EVIL=1\n");
	fsbt_write_file(in_ws(envrc, sizeof(envrc), c, ".envrc"), "export A=1\n");
	assert_int_equal(fsbt_tree_snap(c->ws, &before), 0);

	assert_int_equal(run(&out, "cp", "source.txt", ".envrc", NULL), 1);
	/* toybox's own "cp: NAME: strerror", with the deciding rule. */
	if (strstr(out, "cp: .envrc: Permission denied (denyModify **/.envrc)") == NULL)
		fail_msg("cp said:\n%s", out);
	free(out);
	cJSON_Delete(audit_line(c, "ipc-token", "write", envrc, "deny"));

	/* sed -i: its temp file may be made, the rename over .envrc is not;
	 * the temp file is removed again. */
	assert_int_equal(run(&out, "sed", "-i", "s/A/B/", ".envrc", NULL), 1);
	if (strstr(out, "sed: ") == NULL || strstr(out, "(denyModify **/.envrc)") == NULL)
		fail_msg("sed said:\n%s", out);
	free(out);
	assert_int_equal(run(&out, "rm", ".envrc", NULL), 1);
	if (strstr(out, "Permission denied (denyModify **/.envrc)") == NULL)
		fail_msg("rm said:\n%s", out);
	free(out);

	assert_int_equal(fsbt_tree_snap(c->ws, &after), 0);
	if (fsbt_tree_diff(&before, &after, FSBT_TREE_MTIME | FSBT_TREE_NLINK, diff,
			   sizeof(diff)) != 0)
		fail_msg("a refused command changed the workspace:\n%s", diff);
	fsbt_tree_free(&before);
	fsbt_tree_free(&after);
	assert_content(envrc, "export A=1\n");
}

static void a_core_killed_during_a_command_fails_it_with_eio(void **state)
{
	struct fsbt_core *c = *state;
	char fifo[PATH_MAX], dst[PATH_MAX], fresh[PATH_MAX], shim[PATH_MAX + 8];
	char out[4096], *later = NULL;
	struct captured dd;
	int status;

	/* dd opens its input first — a FIFO, so dd waits in that open after
	 * the core allowed the read — and its output after: the core dies in
	 * between. */
	assert_int_equal(mkfifo(in_ws(fifo, sizeof(fifo), c, "in.fifo"), 0600), 0);
	fsbt_write_file(in_ws(dst, sizeof(dst), c, "file.bin"), "untouched");
	in_ws(fresh, sizeof(fresh), c, "fresh.bin");
	snprintf(shim, sizeof(shim), "%s/dd", bin);
	captured_start(&dd, (char *[]){ shim, "if=in.fifo", "of=file.bin", "status=none", NULL });
	kill_core_while_client_reads_fifo(c, &dd, fifo, "new bytes");
	status = captured_finish(&dd, out, sizeof(out));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 1 ||
	    strstr(out, "dd: file.bin: Input/output error (broker connection lost") == NULL)
		fail_msg("dd exited 0x%x and said:\n%s", (unsigned)status, out);
	assert_content(dst, "untouched");

	/* The next command finds no core: it fails without writing. */
	assert_int_equal(run(&later, "dd", "if=file.bin", "of=fresh.bin", NULL), 1);
	if (strstr(later, "Input/output error (broker unavailable") == NULL)
		fail_msg("dd said:\n%s", later);
	free(later);
	assert_false(exists(fresh));
	assert_content(dst, "untouched");
}

static void a_configured_but_unreachable_broker_fails_closed(void **state)
{
	struct fsbt_core *c = *state;
	char gone[PATH_MAX + 16], src[PATH_MAX], dst[PATH_MAX], *out = NULL;

	snprintf(gone, sizeof(gone), "%s/gone.sock", c->sockdir);
	setenv("FSBROKER_SOCKET", gone, 1);
	fsbt_write_file(in_ws(src, sizeof(src), c, "source.txt"), "text\n");
	fsbt_write_file(in_ws(dst, sizeof(dst), c, "file.txt"), "old\n");
	in_ws(dst, sizeof(dst), c, "new.txt");

	assert_int_equal(run(&out, "cp", "source.txt", "new.txt", NULL), 1);
	if (strstr(out, "Input/output error (broker unavailable") == NULL)
		fail_msg("cp said:\n%s", out);
	free(out);
	assert_false(exists(dst));
	/* Reads fail closed too: the core was not asked. */
	assert_int_equal(run(&out, "cat", "source.txt", NULL), 1);
	assert_non_null(strstr(out, "Input/output error"));
	free(out);
	assert_int_equal(run(&out, "rm", "file.txt", NULL), 1);
	free(out);
	in_ws(dst, sizeof(dst), c, "file.txt");
	assert_content(dst, "old\n");
}

static void without_a_broker_the_shims_are_stock_toybox(void **state)
{
	struct fsbt_core *c = *state;
	char src[PATH_MAX], dst[PATH_MAX], file[PATH_MAX * 2];
	char *audit_before, *audit_after;

	unsetenv("FSBROKER_SOCKET");
	fsbt_write_file(in_ws(src, sizeof(src), c, "source.txt"), "plain\n");
	snprintf(file, sizeof(file), "%s/audit/%s.jsonl", c->state, c->session);
	audit_before = fsbt_read_file(file, NULL);
	RUN_OK("cp", "source.txt", "copy.txt");
	RUN_OK("sed", "-i", "s/plain/edited/", "copy.txt");
	RUN_OK("mv", "copy.txt", "moved.txt");
	RUN_OK("rm", "source.txt");
	assert_content(in_ws(dst, sizeof(dst), c, "moved.txt"), "edited\n");
	assert_false(exists(src));
	/* The core was never asked. */
	audit_after = fsbt_read_file(file, NULL);
	assert_string_equal(audit_before ? audit_before : "", audit_after ? audit_after : "");
	free(audit_before);
	free(audit_after);
}

static void what_toybox_cannot_run_goes_to_the_system_command(void **state)
{
	struct fsbt_core *c = *state;
	char src[PATH_MAX], disp[PATH_MAX + 32], *out = NULL;

	fsbt_write_file(in_ws(src, sizeof(src), c, "source.txt"), "a1\nb\n");
	/* -P is GNU grep's: toybox does not know it. With the shims first on
	 * PATH, finding the shim again would loop: the fallback's PATH has no
	 * shims. */
	assert_int_equal(run(&out, "grep", "-P", "\\d", "source.txt", NULL), 0);
	assert_string_equal(out, "a1\n");
	free(out);
	/* An applet this toybox does not have, through the dispatcher's own
	 * name. */
	snprintf(disp, sizeof(disp), "%s/fsbroker-toybox-dispatch", bin);
	assert_int_equal(fsbt_run((char *[]){ disp, "expr", "2", "+", "3", NULL }, &out), 0);
	assert_string_equal(out, "5\n");
	free(out);
	/* A genuine error of a supported command stays toybox's. */
	assert_int_equal(run(&out, "cat", "missing.txt", NULL), 1);
	assert_non_null(strstr(out, "cat: missing.txt: No such file or directory"));
	free(out);
}

/* grep -s closes stderr and opens /dev/null in its place: the broker's
 * connection must not be what lands there (open(2) gives the lowest free
 * descriptor, and so does the brokered open). */
static void a_closed_stderr_is_reopened_on_the_file_and_modes_are_as_asked(void **state)
{
	struct fsbt_core *c = *state;
	char in[PATH_MAX], *out = NULL;
	struct stat st;

	fsbt_write_file(in_ws(in, sizeof(in), c, "input"), "hello\n");
	assert_int_equal(run(&out, "grep", "-hs", "hello", "missing", "input", NULL), 2);
	assert_string_equal(out, "hello\n");
	free(out);
	/* -m mode: as asked, whatever the core's umask. */
	RUN_OK("mkdir", "-m", "777", "open");
	assert_int_equal(stat("open", &st), 0);
	assert_int_equal(st.st_mode & 07777, 0777);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
		T(cp_writes_through_the_core_after_backing_up_the_target),
		T(mv_is_a_host_rename_journaling_the_move_and_keeping_the_target),
		T(sed_i_renames_its_temp_file_over_the_original_through_the_core),
		T(truncate_is_a_write_request_backed_up),
		T(dd_of_is_backed_up_before_dd_runs_and_written_through_the_core),
		T(dd_handed_to_the_system_dd_is_still_backed_up_first),
		T(rm_is_a_host_delete_to_the_trash),
		T(mkdir_ln_touch_are_host_operations_undone_by_restore),
		T(a_denied_write_fails_with_the_commands_message_and_the_rule),
		T(a_core_killed_during_a_command_fails_it_with_eio),
		T(a_configured_but_unreachable_broker_fails_closed),
		T(without_a_broker_the_shims_are_stock_toybox),
		T(what_toybox_cannot_run_goes_to_the_system_command),
		T(a_closed_stderr_is_reopened_on_the_file_and_modes_are_as_asked),
#undef T
	};
	static char binary[PATH_MAX];
	const char *dir = getenv("FSBROKER_TOYBOX_BIN");
	char probe[PATH_MAX + 32];

	if (dir == NULL || *dir == '\0')
		dir = "build/clients/bin";
	if (realpath(fsbt_binary(), binary) == NULL || getcwd(start_dir, sizeof(start_dir)) == NULL) {
		fprintf(stderr, "# cannot find %s: %s\n", fsbt_binary(), strerror(errno));
		return 1;
	}
	setenv("FSBROKER", binary, 1);
	if (realpath(dir, bin) == NULL) {
		fprintf(stderr, "# no shims in %s (make toybox): %s\n", dir, strerror(errno));
		return 1;
	}
	snprintf(probe, sizeof(probe), "%s/fsbroker-toybox-dispatch", bin);
	if (access(probe, X_OK) < 0) {
		fprintf(stderr, "# %s: %s (make toybox)\n", probe, strerror(errno));
		return 1;
	}
	snprintf(system_path, sizeof(system_path), "%s:/usr/local/bin:/usr/bin:/bin", bin);
	return fsbt_run_group(tests, NULL, NULL);
}
