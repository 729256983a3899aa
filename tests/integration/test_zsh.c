/*
 * test_zsh.c — the brokered zsh (clients/zsh) against the real core: the
 * shell's own redirections (`>`, `>>`, `>|` under noclobber, `<>`, `<`),
 * here-documents, sourced files, cd and glob ask the core. Each write is
 * judged and audited, the file backed up first (its journal entry names the
 * old content), and `fsbroker backup restore` brings the old bytes back. A
 * denied write fails with zsh's own message and the rule; a core killed
 * while zsh runs fails the next redirection with an I/O error and nothing is
 * written; without a broker it is stock zsh.
 *
 * The zsh binary: $FSBROKER_ZSH, else build/clients/zsh; the shims:
 * build/clients/bin.
 */
#include "client_fixture.h"

#include <dirent.h>

static char zsh[PATH_MAX];
static char start_dir[PATH_MAX];
static char system_path[PATH_MAX * 2];	/* PATH with the shims first */

/* The environment `fsbroker shell` gives zsh. */
static void use_core(const struct fsbt_core *c)
{
	char prefix[PATH_MAX + 8];

	setenv("FSBROKER_SOCKET", c->sock, 1);
	setenv("FSBROKER_SESSION_ID", c->session, 1);
	setenv("FSBROKER_TOOL_CALL_ID", FSBT_TOOL_CALL, 1);
	unsetenv("FSBROKER_TIMEOUT_MS");
	setenv("PATH", system_path, 1);
	setenv("LC_ALL", "C", 1);
	/* Here-documents' temp files in the core's ${tmp}, as fsbroker shell
	 * puts them. */
	snprintf(prefix, sizeof(prefix), "%s/zsh", c->tmp);
	setenv("TMPPREFIX", prefix, 1);
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

/* Run `zsh -f -c SCRIPT` in the current directory: its exit code (-1 when
 * it did not exit), stdout and stderr in *out. */
static int run_zsh(char **out, const char *script)
{
	int status = fsbt_run((char *[]){ zsh, "-f", "-c", (char *)script, NULL }, out);

	if (status >= 0 && WIFEXITED(status))
		return WEXITSTATUS(status);
	return -1;
}

#define ZSH_OK(script)                                                              \
	do {                                                                        \
		char *out_ = NULL;                                                  \
		int rc_ = run_zsh(&out_, script);                                   \
		if (rc_ != 0)                                                       \
			fail_msg("zsh -c '%s' exited %d:\n%s", script, rc_, out_ ? out_ : ""); \
		free(out_);                                                         \
	} while (0)

/* Files in `dir` whose name starts with `prefix`. */
static int count_entries(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL)
		n += fsbt_starts(e->d_name, prefix);
	closedir(d);
	return n;
}

/* ------------------------------------------------------------------------ */
/* Redirections, brokered and undone. */

static void a_truncating_redirection_is_a_write_request_backed_up_first(void **state)
{
	struct fsbt_core *c = *state;
	char file[PATH_MAX];
	cJSON *j;

	fsbt_write_file(in_ws(file, sizeof(file), c, "file.txt"), "original\n");
	ZSH_OK("echo changed > file.txt");
	assert_content(file, "changed\n");

	/* zsh's write request with an open-spec: backed up, then the core's
	 * descriptor. */
	cJSON_Delete(audit_line(c, "ipc-token-backup", "write", file, "allow"));
	j = audit_line(c, "ipc-token", "write", file, "allow");
	assert_string_equal(fsbt_str(j, "grant"), "fd");
	cJSON_Delete(j);
	j = journal_line(c, "write", file);
	assert_backed_up(c, j, "original\n");
	cJSON_Delete(j);

	commit_and_restore(c);
	assert_content(file, "original\n");
}

static void append_clobber_and_read_write_redirections_go_through_the_core(void **state)
{
	struct fsbt_core *c = *state;
	char app[PATH_MAX], keep[PATH_MAX], rw[PATH_MAX], fresh[PATH_MAX], *out = NULL;
	cJSON *j;

	fsbt_write_file(in_ws(app, sizeof(app), c, "append.txt"), "one\n");
	fsbt_write_file(in_ws(keep, sizeof(keep), c, "keep.txt"), "kept\n");
	fsbt_write_file(in_ws(rw, sizeof(rw), c, "rw.txt"), "original\n");
	in_ws(fresh, sizeof(fresh), c, "fresh.txt");

	/* >> appends through the core's descriptor. */
	ZSH_OK("echo two >> append.txt");
	assert_content(app, "one\ntwo\n");
	cJSON_Delete(audit_line(c, "ipc-token", "write", app, "allow"));

	/* noclobber: > refuses an existing file (zsh's own message, nothing
	 * written), >| overrides it. */
	assert_int_equal(run_zsh(&out, "setopt noclobber; echo no > keep.txt"), 1);
	assert_has(out, "file exists: keep.txt");
	free(out);
	assert_content(keep, "kept\n");
	ZSH_OK("setopt noclobber; echo yes >| keep.txt; echo new > fresh.txt");
	assert_content(keep, "yes\n");
	assert_content(fresh, "new\n");
	cJSON_Delete(audit_line(c, "ipc-token", "create", fresh, "allow"));

	/* <> opens for reading and writing without truncating. */
	ZSH_OK("echo hi 1<> rw.txt");
	assert_content(rw, "hi\nginal\n");

	j = journal_line(c, "write", app);
	assert_backed_up(c, j, "one\n");
	cJSON_Delete(j);
	j = journal_line(c, "write", keep);
	assert_backed_up(c, j, "kept\n");
	cJSON_Delete(j);
	j = journal_line(c, "write", rw);
	assert_backed_up(c, j, "original\n");
	cJSON_Delete(j);

	commit_and_restore(c);
	assert_content(app, "one\n");
	assert_content(keep, "kept\n");
	assert_content(rw, "original\n");
	assert_false(exists(fresh));
}

static void a_here_document_is_a_temp_file_the_core_creates_and_removes(void **state)
{
	struct fsbt_core *c = *state;
	char prefix[PATH_MAX + 8], name[PATH_MAX], *out = NULL;
	struct want w = { .phase = "ipc-token", .op = "create", .path_prefix = prefix,
			  .decision = "allow" };
	cJSON *j;

	snprintf(prefix, sizeof(prefix), "%s/zsh", c->tmp);
	/* read is a builtin: the here-document is the shell's own. */
	assert_int_equal(run_zsh(&out, "read -r line <<EOF\nfrom a here-document\nEOF\n"
				       "print -r -- \"got: $line\""), 0);
	assert_string_equal(out, "got: from a here-document\n");
	free(out);

	/* Created by the core (O_EXCL), read back, then unlinked by it. */
	if ((j = audit_find(c, &w)) == NULL)
		fail_msg("no create of a temp file under %s in the audit log", prefix);
	snprintf(name, sizeof(name), "%s", fsbt_str(j, "path"));
	cJSON_Delete(j);
	assert_int_equal(audit_count(c, "ipc-token", "read", name), 1);
	cJSON_Delete(audit_line(c, "ipc-host-op", "delete", name, "allow"));
	assert_false(exists(name));
	assert_int_equal(count_entries(c->tmp, "zsh"), 0);
}

static void input_redirections_and_sourced_files_are_read_requests(void **state)
{
	struct fsbt_core *c = *state;
	char in[PATH_MAX], script[PATH_MAX], env[PATH_MAX], *out = NULL;

	fsbt_write_file(in_ws(in, sizeof(in), c, "in.txt"), "first line\n");
	fsbt_write_file(in_ws(script, sizeof(script), c, "lib.zsh"), "greeting=sourced\n");
	fsbt_write_file(in_ws(env, sizeof(env), c, ".env"), "SECRET=1\n");
	assert_int_equal(run_zsh(&out, "read -r l < in.txt; print -r -- $l; "
				       "print -r -- $(<in.txt); . ./lib.zsh; print $greeting"), 0);
	assert_string_equal(out, "first line\nfirst line\nsourced\n");
	free(out);
	assert_int_equal(audit_count(c, "ipc-token", "read", in), 2);
	cJSON_Delete(audit_line(c, "ipc-token", "read", script, "allow"));

	/* denyRead: the shell does not read it either. */
	assert_int_equal(run_zsh(&out, "read -r l < .env; print -r -- \"[$l]\""), 0);
	assert_has(out, "permission denied (denyRead **/.env): .env");
	assert_has(out, "[]");
	free(out);
	cJSON_Delete(audit_line(c, "ipc-token", "read", env, "deny"));
}

static void cd_and_glob_read_directories_the_core_allows(void **state)
{
	struct fsbt_core *c = *state;
	char sub[PATH_MAX], ssh[PATH_MAX + 8], script[PATH_MAX * 2], *out = NULL;

	assert_int_equal(mkdir(in_ws(sub, sizeof(sub), c, "sub"), 0755), 0);
	fsbt_write_file(in_ws(script, sizeof(script), c, "sub/a.txt"), "a");
	fsbt_write_file(in_ws(script, sizeof(script), c, "sub/b.txt"), "b");
	ZSH_OK("cd sub && print -r -- *.txt > list");
	assert_content(in_ws(script, sizeof(script), c, "sub/list"), "a.txt b.txt\n");
	cJSON_Delete(audit_line(c, "ipc-token", "read", sub, "allow"));

	/* A directory the pack keeps from being read: cd fails with the rule. */
	snprintf(ssh, sizeof(ssh), "%s/.ssh", c->home);
	snprintf(script, sizeof(script), "cd %s; print -r -- $PWD", ssh);
	assert_int_equal(run_zsh(&out, script), 0);
	assert_has(out, "permission denied (denyRead ~/.ssh/**)");
	assert_has(out, c->ws);
	free(out);
}

/* ------------------------------------------------------------------------ */
/* Refusals and failures. */

static void a_denied_write_fails_with_zshs_message_and_the_rule(void **state)
{
	struct fsbt_core *c = *state;
	char envrc[PATH_MAX], diff[4096], *out = NULL;
	struct fsbt_tree before, after;

	fsbt_write_file(in_ws(envrc, sizeof(envrc), c, ".envrc"), "export A=1\n");
	assert_int_equal(fsbt_tree_snap(c->ws, &before), 0);

	assert_int_equal(run_zsh(&out, "echo x > .envrc"), 1);
	/* zsh's own "zsh:LINE: <strerror>: NAME", the core's rule after the
	 * error text. */
	assert_has(out, "zsh:1: permission denied (denyModify **/.envrc): .envrc");
	free(out);
	assert_int_equal(run_zsh(&out, "echo x >> .envrc"), 1);
	assert_has(out, "(denyModify **/.envrc)");
	free(out);
	cJSON_Delete(audit_line(c, "ipc-token", "write", envrc, "deny"));

	assert_int_equal(fsbt_tree_snap(c->ws, &after), 0);
	if (fsbt_tree_diff(&before, &after, FSBT_TREE_MTIME | FSBT_TREE_NLINK, diff,
			   sizeof(diff)) != 0)
		fail_msg("a refused redirection changed the workspace:\n%s", diff);
	fsbt_tree_free(&before);
	fsbt_tree_free(&after);
	assert_content(envrc, "export A=1\n");
}

static void a_core_killed_while_zsh_runs_fails_the_next_redirection(void **state)
{
	struct fsbt_core *c = *state;
	char fifo[PATH_MAX], file[PATH_MAX], fresh[PATH_MAX], out[4096];
	struct captured z;

	/* `read < in.fifo` is the shell's own read request; the core allows
	 * it, then zsh waits in the FIFO's open. The core dies meanwhile. */
	assert_int_equal(mkfifo(in_ws(fifo, sizeof(fifo), c, "in.fifo"), 0600), 0);
	fsbt_write_file(in_ws(file, sizeof(file), c, "file.txt"), "untouched");
	in_ws(fresh, sizeof(fresh), c, "fresh.txt");
	captured_start(&z, (char *[]){ zsh, "-f", "-c",
				       "read -r x < in.fifo; echo changed > file.txt; print rc=$?; "
				       "echo new > fresh.txt; print rc=$?", NULL });
	kill_core_while_client_reads_fifo(c, &z, fifo, "line\n");
	captured_finish(&z, out, sizeof(out));
	/* The connection died under the request: EIO, the file untouched;
	 * the next one finds no core. */
	assert_has(out, "Input/output error (broker connection lost");
	assert_has(out, "file.txt\nrc=1\n");
	assert_has(out, "Input/output error (broker unavailable");
	assert_has(out, "fresh.txt\nrc=1\n");
	assert_content(file, "untouched");
	assert_false(exists(fresh));
}

static void a_configured_but_unreachable_broker_fails_closed(void **state)
{
	struct fsbt_core *c = *state;
	char gone[PATH_MAX + 16], file[PATH_MAX], fresh[PATH_MAX], *out = NULL;

	snprintf(gone, sizeof(gone), "%s/gone.sock", c->sockdir);
	setenv("FSBROKER_SOCKET", gone, 1);
	fsbt_write_file(in_ws(file, sizeof(file), c, "file.txt"), "old\n");
	in_ws(fresh, sizeof(fresh), c, "fresh.txt");

	assert_int_equal(run_zsh(&out, "echo new > file.txt; echo new > fresh.txt; "
				       "read -r l < file.txt; print -r -- \"[$l]\""), 0);
	assert_has(out, "Input/output error (broker unavailable");
	assert_has(out, "[]");
	free(out);
	assert_content(file, "old\n");
	assert_false(exists(fresh));
	/* A here-document needs a temp file: it fails too. */
	assert_int_equal(run_zsh(&out, "read -r l <<EOF\nx\nEOF\n"), 1);
	assert_has(out, "can't create temp file for here document: Input/output error");
	free(out);
}

static void without_a_broker_it_is_stock_zsh(void **state)
{
	struct fsbt_core *c = *state;
	char file[PATH_MAX], audit[PATH_MAX * 2], *before, *after, *out = NULL;

	unsetenv("FSBROKER_SOCKET");
	fsbt_write_file(in_ws(file, sizeof(file), c, "file.txt"), "old\n");
	audit_file(c, audit, sizeof(audit));
	before = fsbt_read_file(audit, NULL);
	assert_int_equal(run_zsh(&out, "echo new > file.txt; echo more >> file.txt; "
				       "echo x > .envrc; read -r l <<EOF\nhere\nEOF\n"
				       "cd /; print -r -- $l $PWD"), 0);
	assert_string_equal(out, "here /\n");
	free(out);
	assert_content(file, "new\nmore\n");
	/* Nothing judges .envrc without a broker. */
	assert_content(in_ws(file, sizeof(file), c, ".envrc"), "x\n");
	after = fsbt_read_file(audit, NULL);
	assert_string_equal(before ? before : "", after ? after : "");
	free(before);
	free(after);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
		T(a_truncating_redirection_is_a_write_request_backed_up_first),
		T(append_clobber_and_read_write_redirections_go_through_the_core),
		T(a_here_document_is_a_temp_file_the_core_creates_and_removes),
		T(input_redirections_and_sourced_files_are_read_requests),
		T(cd_and_glob_read_directories_the_core_allows),
		T(a_denied_write_fails_with_zshs_message_and_the_rule),
		T(a_core_killed_while_zsh_runs_fails_the_next_redirection),
		T(a_configured_but_unreachable_broker_fails_closed),
		T(without_a_broker_it_is_stock_zsh),
#undef T
	};
	static char binary[PATH_MAX];
	const char *z = getenv("FSBROKER_ZSH");
	char bin[PATH_MAX];

	if (z == NULL || *z == '\0')
		z = "build/clients/zsh";
	if (realpath(fsbt_binary(), binary) == NULL || getcwd(start_dir, sizeof(start_dir)) == NULL) {
		fprintf(stderr, "# cannot find %s: %s\n", fsbt_binary(), strerror(errno));
		return 1;
	}
	setenv("FSBROKER", binary, 1);
	if (realpath(z, zsh) == NULL || access(zsh, X_OK) < 0) {
		fprintf(stderr, "# no patched zsh at %s (make zsh): %s\n", z, strerror(errno));
		return 1;
	}
	if (realpath("build/clients/bin", bin) == NULL) {
		fprintf(stderr, "# no shims in build/clients/bin (make toybox): %s\n",
			strerror(errno));
		return 1;
	}
	snprintf(system_path, sizeof(system_path), "%s:/usr/local/bin:/usr/bin:/bin", bin);
	return fsbt_run_group(tests, NULL, NULL);
}
