/*
 * test_ui.c — `fsbroker ui` over plain HTTP (curl), on a store of three
 * cycles that `fsbroker run` made: the timeline JSON lists them with their
 * counts and refusals, a cycle says whether the audit chain is intact and
 * what the pack refused in it, a diff shows the old bytes against the file now, a restore from
 * the page's API puts the old bytes on disk after a dry run that changed
 * nothing, and an undo brings the restored-over bytes back. A request
 * without the token, with a wrong Host, with a wrong Origin, a cross-site
 * form POST (no CSRF token) and a path no cycle touched are refused, and
 * the file stays as it was. --listen takes a Unix socket (mode 0600) and
 * refuses an address that is not loopback. A binary file and one over
 * 1 MiB are described, not diffed. With --all every request names
 * its session, and a name that is not one of the state dir's is refused.
 */
#include "run_fixture.h"

#include <cJSON.h>

struct ui {
	pid_t pid;
	char url[256], base[128], token[64];
	char tokhdr[96];		/* "X-FSB-Token: <token>", as the page sends it */
	char csrf[64];
	char a[PATH_MAX + 16];		/* ws/a.txt */
};

/* Three cycles: a.txt rewritten, d.txt created, b.txt deleted (and a write
 * to the home's key refused). */
static void make_cycles(struct fixture *f)
{
	static const char *const scripts[] = {
		"echo 'new a' > a.txt", "echo made > d.txt",
		"echo stolen > ~/.ssh/id_ed25519; rm b.txt",
	};
	char why[256], *out = NULL;

	if (fsbt_sandbox_unsupported(why, sizeof(why)) != NULL)
		fsbt_skip("%s", why);
	assert_int_equal(chdir(f->ws), 0);
	for (size_t i = 0; i < 3; i++) {
		int st = run_sh(f, NULL, scripts[i], &out);

		if (st != 0)
			fsbt_fail_long("fsbroker run %s: status %d\n%s", scripts[i], st, out);
		free(out);
	}
}

/* Start `fsbroker ui --state-dir ST SEL` (SEL: "--session s" or "--all")
 * on a free port and read the URL it prints. */
static void ui_start_with(struct fixture *f, struct ui *u, const char *sel, const char *sel_arg)
{
	int pfd[2];
	char line[512];
	size_t len = 0;
	char *tok;

	memset(u, 0, sizeof(*u));
	snprintf(u->a, sizeof(u->a), "%s/a.txt", f->ws);
	assert_int_equal(pipe2(pfd, O_CLOEXEC), 0);
	u->pid = fork();
	assert_true(u->pid >= 0);
	if (u->pid == 0) {
		dup2(pfd[1], 1);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl(fsbt_binary(), "fsbroker", "ui", "--state-dir", f->state, sel, sel_arg,
		      (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	while (len < sizeof(line) - 1 && memchr(line, '\n', len) == NULL) {
		struct pollfd p = { .fd = pfd[0], .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, (int)FSBT_TIMEOUT_MS) <= 0)
			break;
		n = read(pfd[0], line + len, sizeof(line) - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(pfd[0]);
	line[len] = '\0';
	tok = strstr(line, "http://");
	if (tok == NULL)
		fsbt_fail_long("fsbroker ui printed no URL: '%s'", line);
	sscanf(tok, "%255s", u->url);
	tok = strstr(u->url, "/?token=");
	assert_non_null(tok);
	snprintf(u->base, sizeof(u->base), "%.*s", (int)(tok - u->url), u->url);
	snprintf(u->token, sizeof(u->token), "%s", tok + 8);
	assert_int_equal(strlen(u->token), 32);
	snprintf(u->tokhdr, sizeof(u->tokhdr), "X-FSB-Token: %s", u->token);
}

static void ui_start(struct fixture *f, struct ui *u)
{
	ui_start_with(f, u, "--session", "s");
}

static void ui_stop(struct ui *u)
{
	int st;

	kill(u->pid, SIGTERM);
	assert_int_equal(waitpid(u->pid, &st, 0), u->pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/*
 * curl with `args` (NULL-terminated, after the URL), the body into *body;
 * returns the HTTP status.
 */
static int http(const char *url, char **body, const char *const *args)
{
	char *argv[32], *out = NULL, *nl;
	int n = 0, st, code;

	argv[n++] = "/usr/bin/curl";
	argv[n++] = "-sS";
	argv[n++] = "-w";
	argv[n++] = "\n%{http_code}";
	for (; args != NULL && *args != NULL; args++)
		argv[n++] = (char *)*args;
	argv[n++] = (char *)url;
	argv[n] = NULL;
	st = fsbt_run(argv, &out);
	assert_int_equal(st, 0);
	nl = strrchr(out, '\n');
	assert_non_null(nl);
	code = atoi(nl + 1);
	*nl = '\0';
	if (body != NULL)
		*body = out;
	else
		free(out);
	return code;
}

static cJSON *get_json(const struct ui *u, const char *path_query)
{
	char url[PATH_MAX * 2], *body;
	cJSON *j;

	snprintf(url, sizeof(url), "%s%s%stoken=%s", u->base, path_query,
		 strchr(path_query, '?') != NULL ? "&" : "?", u->token);
	if (http(url, &body, NULL) != 200)
		fsbt_fail_long("GET %s: %s", path_query, body);
	j = cJSON_Parse(body);
	if (j == NULL)
		fsbt_fail_long("GET %s: not JSON: %s", path_query, body);
	free(body);
	return j;
}

/* Load the page as a browser would: its CSRF token, and no cookie. */
static void open_page(struct ui *u)
{
	const char *const args[] = { "-D", "-", NULL };
	char *body, *m;

	assert_int_equal(http(u->url, &body, args), 200);
	assert_non_null(strstr(body, "fsbroker backups"));
	assert_null(strstr(body, "@CSRF@"));
	/* A cookie would go to every port of 127.0.0.1. */
	assert_null(strcasestr(body, "Set-Cookie"));
	m = strstr(body, "name=\"csrf\" content=\"");
	assert_non_null(m);
	snprintf(u->csrf, sizeof(u->csrf), "%.32s", m + 21);
	free(body);
}

/* POST `json` to `path` as the page does: token, our Origin, CSRF token. */
static int post(const struct ui *u, const char *path, const char *json, char **body)
{
	char url[256], origin[192], csrf[96];
	const char *const args[] = { "-H", u->tokhdr, "-H", origin, "-H", csrf, "-H",
				     "Content-Type: application/json", "--data-binary", json,
				     NULL };

	snprintf(url, sizeof(url), "%s%s", u->base, path);
	snprintf(origin, sizeof(origin), "Origin: %s", u->base);
	snprintf(csrf, sizeof(csrf), "X-FSB-CSRF: %s", u->csrf);
	return http(url, body, args);
}

static void assert_file(const char *path, const char *want)
{
	char *got = fsbt_read_file(path, NULL);

	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
}

static const cJSON *counts_of(const cJSON *cycles, int i)
{
	return cJSON_GetObjectItem(cJSON_GetArrayItem(cycles, i), "counts");
}

static void test_timeline_lists_three_cycles_with_their_counts(void **state)
{
	struct fixture *f = *state;
	struct ui u;
	cJSON *cycles;

	make_cycles(f);
	ui_start(f, &u);
	cycles = get_json(&u, "/api/cycles");
	assert_int_equal(cJSON_GetArraySize(cycles), 3);
	assert_int_equal(fsbt_num(cJSON_GetArrayItem(cycles, 0), "cycle"), 1);
	assert_non_null(strstr(fsbt_str(cJSON_GetArrayItem(cycles, 0), "message"), "new a"));
	assert_int_equal(fsbt_num(counts_of(cycles, 0), "modified"), 1);
	assert_int_equal(fsbt_num(counts_of(cycles, 1), "created"), 1);
	assert_int_equal(fsbt_num(counts_of(cycles, 2), "deleted"), 1);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetArrayItem(cycles, 0),
								"toolCalls")), 1);
	assert_int_equal(fsbt_num(cJSON_GetArrayItem(cycles, 0), "refusals"), 0);
	assert_int_equal(fsbt_num(cJSON_GetArrayItem(cycles, 2), "refusals"), 1);
	cJSON_Delete(cycles);
	ui_stop(&u);
}

static void test_diff_and_audit_state_of_a_cycle(void **state)
{
	struct fixture *f = *state;
	char q[PATH_MAX * 2], *log, *edit;
	struct ui u;
	cJSON *d, *c, *paths, *it;
	bool seen = false;

	make_cycles(f);
	ui_start(f, &u);
	snprintf(q, sizeof(q), "/api/diff?cycle=1&path=%s", u.a);
	d = get_json(&u, q);
	assert_non_null(strstr(fsbt_str(d, "unified"), "\n-old a\n+new a\n"));
	cJSON_Delete(d);
	c = get_json(&u, "/api/cycle?cycle=3");
	assert_string_equal(fsbt_str(cJSON_GetObjectItem(c, "audit"), "state"), "intact");
	it = cJSON_GetArrayItem(cJSON_GetObjectItem(c, "refusals"), 0);
	assert_non_null(it);
	assert_non_null(strstr(fsbt_str(it, "path"), "/.ssh/id_ed25519"));
	assert_true(strlen(fsbt_str(it, "rule")) > 0);
	paths = cJSON_GetObjectItem(c, "paths");
	cJSON_ArrayForEach(it, paths) {
		if (strstr(fsbt_str(it, "path"), "/b.txt") != NULL) {
			assert_string_equal(fsbt_str(it, "kind"), "deleted");
			seen = true;
		}
	}
	assert_true(seen);
	cJSON_Delete(c);

	/* An edited audit line: the cycle's page says the chain is broken. */
	snprintf(q, sizeof(q), "%s/audit/s.jsonl", f->state);
	log = fsbt_read_file(q, NULL);
	assert_non_null(log);
	edit = strstr(log, "\"op\"");
	assert_non_null(edit);
	edit[2] = 'q';
	fsbt_write_file(q, log);
	free(log);
	c = get_json(&u, "/api/cycle?cycle=3");
	assert_string_equal(fsbt_str(cJSON_GetObjectItem(c, "audit"), "state"), "broken");
	cJSON_Delete(c);
	ui_stop(&u);
}

static void test_restore_from_the_page_then_undo(void **state)
{
	struct fixture *f = *state;
	char json[PATH_MAX + 64], *body;
	struct ui u;
	cJSON *r;

	make_cycles(f);
	ui_start(f, &u);
	open_page(&u);
	snprintf(json, sizeof(json), "{\"cycle\":1,\"path\":\"%s\",\"dryRun\":true}", u.a);
	assert_int_equal(post(&u, "/api/restore", json, &body), 200);
	r = cJSON_Parse(body);
	assert_string_equal(fsbt_str(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "items"), 0),
				     "result"), "would restore");
	cJSON_Delete(r);
	free(body);
	assert_file(u.a, "new a\n");	/* the plan changed nothing */

	snprintf(json, sizeof(json), "{\"cycle\":1,\"path\":\"%s\",\"dryRun\":false}", u.a);
	assert_int_equal(post(&u, "/api/restore", json, &body), 200);
	r = cJSON_Parse(body);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r, "ok")));
	assert_true(fsbt_num(r, "undoCycle") > 0);
	cJSON_Delete(r);
	free(body);
	assert_file(u.a, "old a\n");

	assert_int_equal(post(&u, "/api/undo", "{\"dryRun\":false}", &body), 200);
	free(body);
	assert_file(u.a, "new a\n");
	ui_stop(&u);
}

static void test_requests_without_token_host_origin_or_csrf_are_refused(void **state)
{
	struct fixture *f = *state;
	char url[PATH_MAX * 2], json[PATH_MAX + 64], host[64], origin[160], csrf[96];
	struct ui u;

	make_cycles(f);
	ui_start(f, &u);
	open_page(&u);
	snprintf(url, sizeof(url), "%s/api/cycles", u.base);
	assert_int_equal(http(url, NULL, NULL), 403);
	snprintf(url, sizeof(url), "%s/api/cycles?token=%032d", u.base, 0);
	assert_int_equal(http(url, NULL, NULL), 403);
	/* A page of another name that resolves to 127.0.0.1 (DNS rebinding). */
	snprintf(url, sizeof(url), "%s/api/cycles?token=%s", u.base, u.token);
	assert_int_equal(http(url, NULL, (const char *const[]){ "-H", "Host: evil.example:80",
								   NULL }), 403);
	assert_int_equal(http(url, NULL, NULL), 200);

	snprintf(json, sizeof(json), "{\"cycle\":1,\"path\":\"%s\",\"dryRun\":false}", u.a);
	snprintf(url, sizeof(url), "%s/api/restore", u.base);
	snprintf(origin, sizeof(origin), "Origin: %s", u.base);
	snprintf(csrf, sizeof(csrf), "X-FSB-CSRF: %s", u.csrf);
	snprintf(host, sizeof(host), "Origin: http://evil.example");
	/* Everything right but the Origin. */
	assert_int_equal(http(url, NULL, (const char *const[]){ "-H", u.tokhdr, "-H", host,
								   "-H", csrf, "--data-binary", json,
								   NULL }), 403);
	/* A cross-site form: it cannot add a header, so neither token comes. */
	assert_int_equal(http(url, NULL, (const char *const[]){ "-H", host, "--data-urlencode",
								   json, NULL }), 403);
	/* Same origin, but no CSRF token. */
	assert_int_equal(http(url, NULL, (const char *const[]){ "-H", u.tokhdr, "-H", origin,
								   "--data-binary", json, NULL }),
			 403);
	/* No Origin at all on a POST. */
	assert_int_equal(http(url, NULL, (const char *const[]){ "-H", u.tokhdr, "-H", csrf,
								   "--data-binary", json, NULL }),
			 403);
	assert_file(u.a, "new a\n");
	/* Let in, but only for paths the store journaled. */
	assert_int_equal(post(&u, "/api/restore",
			      "{\"cycle\":1,\"path\":\"/etc/passwd\",\"dryRun\":true}", NULL), 404);
	snprintf(url, sizeof(url), "%s/api/diff?cycle=1&path=/etc/passwd&token=%s", u.base,
		 u.token);
	assert_int_equal(http(url, NULL, NULL), 404);
	ui_stop(&u);
}

static void test_listen_on_a_unix_socket_and_only_on_loopback(void **state)
{
	struct fixture *f = *state;
	char sock[PATH_MAX + 16], listen_at[PATH_MAX + 32], printed[PATH_MAX + 16], url[128];
	char *out = NULL, *body, *tok;
	struct stat st;
	pid_t pid;
	int status;

	make_cycles(f);
	snprintf(sock, sizeof(sock), "%s/ui.sock", f->root);
	snprintf(listen_at, sizeof(listen_at), "unix:%s", sock);
	snprintf(printed, sizeof(printed), "%s/ui.out", f->root);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(printed, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		dup2(fd, 1);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl(fsbt_binary(), "fsbroker", "ui", "--state-dir", f->state, "--session", "s",
		      "--listen", listen_at, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 200 && stat(sock, &st) != 0; i++)
		fsbt_sleep_ms(10);
	assert_int_equal(stat(sock, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 077, 0);
	snprintf(url, sizeof(url), "http://localhost/api/cycles");
	assert_int_equal(http(url, &body, (const char *const[]){ "--unix-socket", sock, NULL }),
			 403);
	free(body);
	for (int i = 0; i < 200 && (out = fsbt_read_file(printed, NULL)) != NULL &&
			strchr(out, '\n') == NULL; i++) {
		free(out);
		out = NULL;
		fsbt_sleep_ms(10);
	}
	assert_non_null(out);
	tok = strstr(out, "?token=");
	assert_non_null(tok);
	snprintf(url, sizeof(url), "http://localhost/api/cycles?token=%.32s", tok + 7);
	free(out);
	assert_int_equal(http(url, &body, (const char *const[]){ "--unix-socket", sock, NULL }),
			 200);
	assert_non_null(strstr(body, "\"cycle\":3"));
	free(body);
	kill(pid, SIGTERM);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_not_equal(stat(sock, &st), 0);	/* removed at exit */

	status = fsbt_run((char *[]){ (char *)fsbt_binary(), "ui", "--state-dir", f->state,
				      "--session", "s", "--listen", "0.0.0.0:0", NULL }, &out);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
	assert_non_null(strstr(out, "only a loopback address"));
	free(out);
}

static void test_all_serves_each_session_it_is_asked_for(void **state)
{
	struct fixture *f = *state;
	char url[PATH_MAX], *out = NULL, *body;
	struct ui u;
	cJSON *j;
	int st;

	make_cycles(f);
	st = fsbt_run((char *[]){ (char *)fsbt_binary(), "run", "--workspace", f->ws,
				  "--state-dir", f->state, "--session", "t", "--", "sh", "-c",
				  "echo t > t.txt", NULL }, &out);
	if (st != 0)
		fsbt_fail_long("fsbroker run --session t: %d\n%s", st, out);
	free(out);
	ui_start_with(f, &u, "--all", NULL);
	j = get_json(&u, "/api/sessions");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "all")));
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "sessions")), 2);
	cJSON_Delete(j);
	j = get_json(&u, "/api/cycles?session=s");
	assert_int_equal(cJSON_GetArraySize(j), 3);
	cJSON_Delete(j);
	j = get_json(&u, "/api/cycles?session=t");
	assert_int_equal(cJSON_GetArraySize(j), 1);
	assert_non_null(strstr(fsbt_str(cJSON_GetArrayItem(j, 0), "message"), "t.txt"));
	cJSON_Delete(j);
	snprintf(url, sizeof(url), "%s/api/cycles?token=%s", u.base, u.token);
	assert_int_equal(http(url, NULL, NULL), 404);
	snprintf(url, sizeof(url), "%s/api/cycles?session=..&token=%s", u.base, u.token);
	assert_int_equal(http(url, &body, NULL), 404);
	free(body);
	ui_stop(&u);
}

static void test_binary_and_large_files_are_described_not_dumped(void **state)
{
	struct fixture *f = *state;
	char q[PATH_MAX * 2], big[PATH_MAX + 16], bin[PATH_MAX + 16], *out = NULL;
	struct ui u;
	cJSON *d;
	FILE *fp;
	int st;

	make_cycles(f);
	snprintf(bin, sizeof(bin), "%s/bin.dat", f->ws);
	fp = fopen(bin, "we");
	assert_non_null(fp);
	fwrite("\x7f" "ELF\0\0\0binary", 1, 13, fp);
	fclose(fp);
	snprintf(big, sizeof(big), "%s/big.txt", f->ws);
	fp = fopen(big, "we");
	assert_non_null(fp);
	for (int i = 0; i < 40000; i++)
		fputs("a line of a file larger than a mebibyte\n", fp);
	fclose(fp);
	st = run_sh(f, NULL, "echo more >> bin.dat; echo more >> big.txt", &out);
	if (st != 0)
		fsbt_fail_long("fsbroker run: %d\n%s", st, out);
	free(out);
	ui_start(f, &u);
	snprintf(q, sizeof(q), "/api/diff?cycle=4&path=%s", bin);
	d = get_json(&u, q);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(d, "binary")));
	assert_null(cJSON_GetObjectItem(d, "unified"));
	cJSON_Delete(d);
	snprintf(q, sizeof(q), "/api/diff?cycle=4&path=%s", big);
	d = get_json(&u, q);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(d, "tooLarge")));
	assert_null(cJSON_GetObjectItem(d, "unified"));
	cJSON_Delete(d);
	ui_stop(&u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_timeline_lists_three_cycles_with_their_counts,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_diff_and_audit_state_of_a_cycle, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_restore_from_the_page_then_undo, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_requests_without_token_host_origin_or_csrf_are_refused, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_listen_on_a_unix_socket_and_only_on_loopback,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_all_serves_each_session_it_is_asked_for, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_binary_and_large_files_are_described_not_dumped,
						setup, teardown),
	};

	return fsbt_run_group(tests, NULL, NULL);
}
