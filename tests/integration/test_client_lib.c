/*
 * test_client_lib.c — the client library (clients/lib) against the real
 * core: a write gets the core's descriptor after the backup, a read opens
 * what the core allowed, a refusal keeps its errno and reason, paths are
 * made absolute and normalised lexically, and every failure of the exchange
 * (a core killed, a socket that never answers, no broker at all) fails the
 * call without touching the file.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fsbroker_client.h"

/* Point the library at core `c` (through the environment, as a brokered
 * command finds it). */
static void use_core(const struct fsbt_core *c)
{
	setenv("FSBROKER_SOCKET", c->sock, 1);
	setenv("FSBROKER_SESSION_ID", c->session, 1);
	setenv("FSBROKER_TOOL_CALL_ID", FSBT_TOOL_CALL, 1);
	setenv("FSBROKER_TRACE_ID", "trace-lib", 1);
	unsetenv("FSBROKER_TIMEOUT_MS");
	unsetenv("FSBROKER_READS");
	assert_int_equal(fsbc_configure(NULL), 0);
}

static char start_dir[PATH_MAX];	/* where the tests started */

static int setup(void **state)
{
	int rc = fsbt_setup_core(state);

	if (rc == 0)
		use_core(*state);
	return rc;
}

/* Back where the tests started, whatever a failed test left. */
static int teardown(void **state)
{
	fsbc_disconnect();
	if (chdir(start_dir) < 0)
		return -1;
	return fsbt_teardown_core(state);
}

/* The n-th line (1-based) of cycle 1's journal, parsed. */
static cJSON *journal_line(const struct fsbt_core *c, int n)
{
	char path[PATH_MAX * 2], *text, *line, *save = NULL;
	cJSON *j = NULL;

	snprintf(path, sizeof(path), "%s/sessions/%s/modify_backup/cycles/1/journal.jsonl",
		 c->state, c->session);
	if ((text = fsbt_read_file(path, NULL)) == NULL)
		return NULL;
	line = strtok_r(text, "\n", &save);
	for (int i = 1; line != NULL && i < n; i++)
		line = strtok_r(NULL, "\n", &save);
	if (line != NULL)
		j = cJSON_Parse(line);
	free(text);
	return j;
}

static char *backup_object(const struct fsbt_core *c, const char *hex)
{
	char dir[PATH_MAX * 2];

	snprintf(dir, sizeof(dir), "%s/sessions/%s/modify_backup", c->state, c->session);
	return fsbt_read_object(dir, hex);
}

/* The session's audit log, whole. */
static char *audit_text(const struct fsbt_core *c)
{
	char path[PATH_MAX * 2];

	snprintf(path, sizeof(path), "%s/audit/%s.jsonl", c->state, c->session);
	return fsbt_read_file(path, NULL);
}

static void assert_file_is(const char *path, const char *want)
{
	char *now = fsbt_read_file(path, NULL);

	assert_non_null(now);
	assert_string_equal(now, want);
	free(now);
}

/* ------------------------------------------------------------------------ */

static void write_open_returns_the_core_fd_after_backing_up_the_old_content(void **state)
{
	struct fsbt_core *c = *state;
	char path[PATH_MAX + 16];
	cJSON *j, *prior;
	char *saved;
	int fd;

	snprintf(path, sizeof(path), "%s/notes.md", c->ws);
	fsbt_write_file(path, "the old text\n");
	fd = fsbc_open(path, O_WRONLY | O_TRUNC, 0);
	assert_true(fd >= 0);
	assert_int_equal(fsbc_last_failure(), FSBC_OK);
	/* open(2) without O_CLOEXEC: the descriptor survives an exec. */
	assert_int_equal(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
	assert_int_equal(write(fd, "new\n", 4), 4);
	close(fd);
	assert_file_is(path, "new\n");

	j = journal_line(c, 1);
	assert_non_null(j);
	assert_string_equal(fsbt_str(j, "resolved"), path);
	prior = cJSON_GetObjectItem(j, "prior");
	saved = backup_object(c, fsbt_str(prior, "object"));
	assert_non_null(saved);
	assert_string_equal(saved, "the old text\n");
	free(saved);
	cJSON_Delete(j);

	/* With O_CLOEXEC it is close-on-exec, as open(2) would make it. */
	fd = fsbc_open(path, O_WRONLY | O_APPEND | O_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	assert_int_equal(write(fd, "more\n", 5), 5);
	close(fd);
	assert_file_is(path, "new\nmore\n");
}

static void create_open_makes_the_file_with_the_mode(void **state)
{
	struct fsbt_core *c = *state;
	char path[PATH_MAX + 16];
	struct stat st;
	mode_t old = umask(022);
	int fd;

	snprintf(path, sizeof(path), "%s/fresh.txt", c->ws);
	fd = fsbc_open(path, O_WRONLY | O_CREAT | O_EXCL, 0640);
	umask(old);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0640);
	close(fd);
	/* O_EXCL on a name that exists: the core's EEXIST, as open(2) says. */
	assert_int_equal(fsbc_open(path, O_WRONLY | O_CREAT | O_EXCL, 0640), -1);
	assert_int_equal(errno, EEXIST);
	assert_int_equal(fsbc_last_failure(), FSBC_REFUSED);
}

static void read_open_reads_the_file_the_core_allowed(void **state)
{
	struct fsbt_core *c = *state;
	char path[PATH_MAX + 16], buf[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/readme", c->ws);
	fsbt_write_file(path, "hello\n");
	fd = fsbc_open(path, O_RDONLY | O_CLOEXEC, 0);
	assert_true(fd >= 0);
	n = read(fd, buf, sizeof(buf));
	assert_int_equal(n, 6);
	assert_memory_equal(buf, "hello\n", 6);
	/* Read-only: the library's own open never writes. */
	assert_int_equal(write(fd, "x", 1), -1);
	close(fd);
}

/* Lines of the audit log holding `needle`. */
static int audit_count(const struct fsbt_core *c, const char *needle)
{
	char *text = audit_text(c), *p;
	int n = 0;

	for (p = text; p != NULL && (p = strstr(p, needle)) != NULL; p++)
		n++;
	free(text);
	return n;
}

/* FSBROKER_READS=sandbox (set by `fsbroker run` with reads = "mask"): a read
 * opens without a request, as the kernel would; a write still asks. */
static void reads_go_unasked_when_the_sandbox_masks_them(void **state)
{
	struct fsbt_core *c = *state;
	char path[PATH_MAX + 16], buf[64];
	int fd;

	snprintf(path, sizeof(path), "%s/readme", c->ws);
	fsbt_write_file(path, "hello\n");
	setenv("FSBROKER_READS", "sandbox", 1);
	assert_int_equal(fsbc_configure(NULL), 0);
	assert_true(fsbc_reads_local());
	fd = fsbc_open(path, O_RDONLY | O_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof(buf)), 6);
	close(fd);
	/* The kernel's answers, the library's failure kind. */
	snprintf(path, sizeof(path), "%s/missing", c->ws);
	assert_int_equal(fsbc_open(path, O_RDONLY, 0), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(fsbc_last_failure(), FSBC_LOCAL);
	assert_int_equal(audit_count(c, "\"op\":\"read\""), 0);
	/* A write intent is asked for as always. */
	snprintf(path, sizeof(path), "%s/readme", c->ws);
	fd = fsbc_open(path, O_WRONLY, 0);
	assert_true(fd >= 0);
	close(fd);
	assert_true(audit_count(c, "\"op\":\"write\"") >= 1);

	/* Any other value: every read is asked for. */
	setenv("FSBROKER_READS", "broker", 1);
	assert_int_equal(fsbc_configure(NULL), 0);
	assert_false(fsbc_reads_local());
	fd = fsbc_open(path, O_RDONLY, 0);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(audit_count(c, "\"op\":\"read\""), 1);
	unsetenv("FSBROKER_READS");
}

static void a_denied_write_fails_with_eacces_and_keeps_the_rule(void **state)
{
	struct fsbt_core *c = *state;
	char path[PATH_MAX + 16], msg[512], *printed = NULL;
	size_t printed_len = 0;
	FILE *out;

	snprintf(path, sizeof(path), "%s/.envrc", c->ws);
	fsbt_write_file(path, "export A=1\n");
	assert_int_equal(fsbc_open(path, O_WRONLY | O_TRUNC, 0), -1);
	assert_int_equal(errno, EACCES);
	assert_int_equal(fsbc_last_failure(), FSBC_REFUSED);
	assert_string_equal(fsbc_last_reason(), "denyModify **/.envrc");
	assert_file_is(path, "export A=1\n");

	assert_string_equal(fsbc_strerror(EACCES, msg, sizeof(msg)),
			    "Permission denied (denyModify **/.envrc)");
	/* Another errno than the refusal's gets no reason that is not its own. */
	assert_string_equal(fsbc_strerror(ENOENT, msg, sizeof(msg)), strerror(ENOENT));
	out = open_memstream(&printed, &printed_len);
	assert_non_null(out);
	fsbc_print_error(out, "cp", "create", ".envrc", EACCES);
	fclose(out);
	assert_string_equal(printed,
			    "cp: cannot create '.envrc': Permission denied (denyModify **/.envrc)\n");
	free(printed);

	/* A read of a secret: refused with its own rule, nothing opened. */
	snprintf(path, sizeof(path), "%s/.ssh/id_ed25519", c->home);
	assert_int_equal(fsbc_open(path, O_RDONLY, 0), -1);
	assert_int_equal(errno, EACCES);
	assert_string_equal(fsbc_last_reason(), "denyRead ~/.ssh/**");

	/* A success clears the failure. */
	snprintf(path, sizeof(path), "%s/ok.txt", c->ws);
	int fd = fsbc_open(path, O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(fsbc_last_failure(), FSBC_OK);
	assert_string_equal(fsbc_last_reason(), "");
}

static void a_relative_path_is_made_absolute_and_normalised_lexically(void **state)
{
	struct fsbt_core *c = *state;
	char sub[PATH_MAX + 16], deep[PATH_MAX + 16], link[PATH_MAX + 32], want[PATH_MAX + 32];
	char cwd[PATH_MAX], other[PATH_MAX + 32], needle[PATH_MAX + 64], *audit;
	struct stat st;
	int fd;

	assert_non_null(getcwd(cwd, sizeof(cwd)));
	snprintf(sub, sizeof(sub), "%s/sub", c->ws);
	snprintf(deep, sizeof(deep), "%s/deep", c->ws);
	assert_int_equal(mkdir(sub, 0755), 0);
	assert_int_equal(mkdir(deep, 0755), 0);
	snprintf(other, sizeof(other), "%s/deep/dir", c->ws);
	assert_int_equal(mkdir(other, 0755), 0);
	/* sub/link -> ../deep/dir: the kernel would take link/.. to deep. */
	snprintf(link, sizeof(link), "%s/link", sub);
	assert_int_equal(symlink("../deep/dir", link), 0);
	assert_int_equal(chdir(sub), 0);

	fd = fsbc_open("./link/..//x.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_int_equal(chdir(cwd), 0);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "x\n", 2), 2);
	close(fd);
	/* Lexically link/.. is sub itself: the file is sub/x.txt. */
	snprintf(want, sizeof(want), "%s/x.txt", sub);
	assert_file_is(want, "x\n");
	snprintf(other, sizeof(other), "%s/x.txt", deep);
	assert_int_equal(lstat(other, &st), -1);
	/* What the core was asked about is that path, absolute. */
	audit = audit_text(c);
	assert_non_null(audit);
	snprintf(needle, sizeof(needle), "\"path\":\"%s\"", want);
	assert_non_null(strstr(audit, needle));
	assert_null(strstr(audit, "link/.."));
	free(audit);

	/* ".." never climbs above the root; an empty name is ENOENT. */
	assert_int_equal(chdir(sub), 0);
	fd = fsbc_open("../../../../../../../../..//etc/hostname", O_RDONLY, 0);
	assert_int_equal(chdir(cwd), 0);
	if (fd >= 0)
		close(fd);
	else
		assert_int_not_equal(errno, EIO);
	assert_int_equal(fsbc_open("", O_RDONLY, 0), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(fsbc_last_failure(), FSBC_LOCAL);
}

static void host_ops_delete_to_the_trash_and_keep_refusals(void **state)
{
	struct fsbt_core *c = *state;
	char path[PATH_MAX + 16], dir[PATH_MAX + 16], cwd[PATH_MAX];
	struct fsbc_hostop op = { .op = FSBC_OP_DELETE, .mode = -1 };
	struct fsbc_hostop_result res;
	struct stat st;

	snprintf(path, sizeof(path), "%s/old.txt", c->ws);
	fsbt_write_file(path, "old\n");
	op.path = path;
	assert_int_equal(fsbc_host_op(&op, &res), 0);
	assert_true(res.changed);
	assert_true(fsbt_starts(res.trashed_to, c->home));
	assert_int_equal(lstat(path, &st), -1);
	assert_file_is(res.trashed_to, "old\n");

	/* mkdir and rename with relative names, from inside the workspace. */
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(c->ws), 0);
	assert_int_equal(fsbc_mkdir("a/b/c", 0755, true), 0);
	fsbt_write_file("a/b/c/f", "f\n");
	assert_int_equal(fsbc_rename("a/b/c/f", "./a/../a/g"), 0);
	assert_int_equal(chdir(cwd), 0);
	snprintf(dir, sizeof(dir), "%s/a/g", c->ws);
	assert_file_is(dir, "f\n");

	/* A policy refusal: EACCES with the deciding rule. */
	snprintf(path, sizeof(path), "%s/.ssh/id_ed25519", c->home);
	assert_int_equal(fsbc_delete(path, 0), -1);
	assert_int_equal(errno, EACCES);
	assert_int_equal(fsbc_last_failure(), FSBC_REFUSED);
	assert_string_equal(fsbc_last_reason(), "denyRead ~/.ssh/**");
	assert_int_equal(lstat(path, &st), 0);

	/* An operation's own failure: the errno the core named. */
	snprintf(path, sizeof(path), "%s/missing", c->ws);
	assert_int_equal(fsbc_delete(path, 0), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(fsbc_delete(path, FSBC_FORCE), 0);
}

/* ------------------------------------------------------------------------ */
/* Failures of the exchange. */

static void a_core_killed_mid_session_fails_the_next_call_with_eio(void **state)
{
	struct fsbt_core *c = *state;
	char path[PATH_MAX + 16], fresh[PATH_MAX + 16];
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "%s/kept.txt", c->ws);
	snprintf(fresh, sizeof(fresh), "%s/never.txt", c->ws);
	fsbt_write_file(path, "kept\n");
	/* The connection is made and works. */
	fd = fsbc_open(path, O_RDONLY, 0);
	assert_true(fd >= 0);
	close(fd);

	assert_int_equal(kill(c->pid, SIGKILL), 0);
	assert_int_equal(fsbt_core_wait_exit(c, FSBT_TIMEOUT_MS), 0);

	/* The next call meets the dead connection: EIO, nothing opened. */
	assert_int_equal(fsbc_open(path, O_WRONLY | O_TRUNC, 0), -1);
	assert_int_equal(errno, EIO);
	assert_int_equal(fsbc_last_failure(), FSBC_LOST);
	assert_non_null(strstr(fsbc_last_reason(), "broker connection lost"));
	assert_file_is(path, "kept\n");

	/* And the one after cannot connect: EIO again, never an open of its
	 * own, for a read as for a write. */
	assert_int_equal(fsbc_open(fresh, O_WRONLY | O_CREAT, 0644), -1);
	assert_int_equal(errno, EIO);
	assert_int_equal(fsbc_last_failure(), FSBC_UNREACHABLE);
	assert_int_equal(lstat(fresh, &st), -1);
	assert_int_equal(fsbc_open(path, O_RDONLY, 0), -1);
	assert_int_equal(errno, EIO);
	assert_int_equal(fsbc_delete(path, 0), -1);
	assert_int_equal(errno, EIO);
	assert_file_is(path, "kept\n");
}

/* A listening socket that accepts (the kernel does) and never answers. */
struct silent {
	char dir[PATH_MAX];
	char sock[PATH_MAX + 16];
	int fd;
};

static void silent_listen(struct silent *s)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };

	snprintf(s->dir, sizeof(s->dir), "/tmp/fsbt-silent.XXXXXX");
	assert_non_null(mkdtemp(s->dir));
	snprintf(s->sock, sizeof(s->sock), "%s/s.sock", s->dir);
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", s->sock);
	s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(s->fd >= 0);
	assert_int_equal(bind(s->fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	assert_int_equal(listen(s->fd, 8), 0);
}

static void silent_close(struct silent *s)
{
	close(s->fd);
	unlink(s->sock);
	rmdir(s->dir);
}

static void a_broker_that_never_answers_fails_with_eio_at_the_deadline(void **state)
{
	struct fsbt_core *c = *state;
	struct fsbc_config cfg = { .session = c->session, .tool_call = FSBT_TOOL_CALL,
				   .timeout_ms = 200 };
	char path[PATH_MAX + 16];
	struct silent s;
	struct stat st;
	uint64_t t0;

	silent_listen(&s);
	cfg.socket = s.sock;
	assert_int_equal(fsbc_configure(&cfg), 0);
	snprintf(path, sizeof(path), "%s/waiting.txt", c->ws);

	t0 = fsbt_now_ms();
	assert_int_equal(fsbc_open(path, O_WRONLY | O_CREAT, 0644), -1);
	assert_int_equal(errno, EIO);
	assert_int_equal(fsbc_last_failure(), FSBC_LOST);
	assert_non_null(strstr(fsbc_last_reason(), "deadline"));
	/* Not a timing check: only that it did not hang. */
	assert_true(fsbt_now_ms() - t0 < FSBT_TIMEOUT_MS);
	assert_int_equal(lstat(path, &st), -1);

	/* A host operation the same way; and FSBROKER_TIMEOUT_MS is read
	 * when the configuration leaves the deadline open. */
	setenv("FSBROKER_TIMEOUT_MS", "150", 1);
	cfg.timeout_ms = 0;
	assert_int_equal(fsbc_configure(&cfg), 0);
	assert_int_equal(fsbc_mkdir(path, 0755, false), -1);
	assert_int_equal(errno, EIO);
	assert_int_equal(fsbc_last_failure(), FSBC_LOST);
	unsetenv("FSBROKER_TIMEOUT_MS");
	assert_int_equal(lstat(path, &st), -1);
	silent_close(&s);
	use_core(c);
}

/* A peer that answers each request line with the next of `replies`,
 * whatever it asked: to see what the library does with answers the core
 * never gives. A connection the library closes is followed by the next. */
struct scripted {
	struct silent s;
	const char *const *replies;
	int n, next;
};

static void *scripted_run(void *arg)
{
	struct scripted *sc = arg;

	while (sc->next < sc->n) {
		int cfd = accept4(sc->s.fd, NULL, NULL, SOCK_CLOEXEC);
		char buf[8192];
		ssize_t got;

		if (cfd < 0)
			return NULL;
		while (sc->next < sc->n && (got = read(cfd, buf, sizeof(buf))) > 0) {
			const char *r = sc->replies[sc->next++];

			if (memchr(buf, '\n', (size_t)got) == NULL ||
			    send(cfd, r, strlen(r), MSG_NOSIGNAL) < 0)
				break;
		}
		/* Until the library hangs up (it does after a reply it
		 * cannot act on). */
		while (read(cfd, buf, sizeof(buf)) > 0)
			;
		close(cfd);
	}
	return NULL;
}

static void replies_the_protocol_does_not_define_fail_closed(void **state)
{
	static const char *const replies[] = {
		"SANDBOX\n",			/* to a write: never opened by the library */
		"FD\n",				/* without a descriptor */
		"FD\nSANDBOX\n",		/* two lines for one request */
		"OK\n",				/* not a reply at all */
		"DENY\n",			/* a bare refusal: EACCES, connection kept */
		"DENY ENOSPC the backup store is full\n",
		"DENY EWHAT something\n",	/* an errno nobody knows: EACCES */
		"{\"id\":\"someone-else\",\"ok\":true}\n",	/* not this request's */
		"{\"ok\":true\n",		/* not JSON */
	};
	struct fsbt_core *c = *state;
	struct scripted sc = { .replies = replies, .n = 9 };
	struct fsbc_config cfg = { .session = c->session, .tool_call = FSBT_TOOL_CALL,
				   .timeout_ms = 5000 };
	char path[PATH_MAX + 16];
	struct stat st;
	pthread_t t;

	silent_listen(&sc.s);
	cfg.socket = sc.s.sock;
	assert_int_equal(fsbc_configure(&cfg), 0);
	assert_int_equal(pthread_create(&t, NULL, scripted_run, &sc), 0);
	snprintf(path, sizeof(path), "%s/never.txt", c->ws);

	for (int i = 0; i < 4; i++) {
		assert_int_equal(fsbc_open(path, O_WRONLY | O_CREAT, 0644), -1);
		assert_int_equal(errno, EIO);
		assert_int_equal(fsbc_last_failure(), FSBC_LOST);
	}
	assert_int_equal(fsbc_open(path, O_WRONLY | O_CREAT, 0644), -1);
	assert_int_equal(errno, EACCES);
	assert_int_equal(fsbc_last_failure(), FSBC_REFUSED);
	assert_string_equal(fsbc_last_reason(), "");
	assert_int_equal(fsbc_open(path, O_WRONLY | O_CREAT, 0644), -1);
	assert_int_equal(errno, ENOSPC);
	assert_string_equal(fsbc_last_reason(), "the backup store is full");
	assert_int_equal(fsbc_open(path, O_WRONLY | O_CREAT, 0644), -1);
	assert_int_equal(errno, EACCES);
	assert_string_equal(fsbc_last_reason(), "EWHAT something");
	for (int i = 0; i < 2; i++) {
		assert_int_equal(fsbc_touch(path), -1);
		assert_int_equal(errno, EIO);
		assert_int_equal(fsbc_last_failure(), FSBC_LOST);
	}
	assert_int_equal(lstat(path, &st), -1);
	fsbc_disconnect();
	pthread_join(t, NULL);
	silent_close(&sc.s);
	use_core(c);
}

static void no_broker_configured_is_its_own_result(void **state)
{
	struct fsbt_core *c = *state;
	char path[PATH_MAX + 16];
	struct stat st;

	unsetenv("FSBROKER_SOCKET");
	assert_int_equal(fsbc_configure(NULL), 0);
	assert_false(fsbc_configured());
	snprintf(path, sizeof(path), "%s/unbrokered.txt", c->ws);
	assert_int_equal(fsbc_open(path, O_WRONLY | O_CREAT, 0644), -1);
	assert_int_equal(errno, ENOTCONN);
	assert_int_equal(fsbc_last_failure(), FSBC_NO_BROKER);
	assert_int_equal(lstat(path, &st), -1);
	assert_int_equal(fsbc_touch(path), -1);
	assert_int_equal(fsbc_last_failure(), FSBC_NO_BROKER);
	assert_int_equal(lstat(path, &st), -1);
	use_core(c);
	assert_true(fsbc_configured());
}

/* ------------------------------------------------------------------------ */
/* Threads share the one connection, one request at a time. */

#define THREADS 4
#define OPENS 25

struct worker {
	const struct fsbt_core *c;
	int n;
	int failures;
};

static void *worker_run(void *arg)
{
	struct worker *w = arg;

	for (int i = 0; i < OPENS; i++) {
		char path[PATH_MAX + 32], text[64];
		int fd;

		snprintf(path, sizeof(path), "%s/t%d-%d", w->c->ws, w->n, i);
		snprintf(text, sizeof(text), "t%d-%d\n", w->n, i);
		fd = fsbc_open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
			w->failures++;
		if (fd >= 0)
			close(fd);
	}
	return NULL;
}

static void threads_each_get_the_descriptor_of_their_own_file(void **state)
{
	struct fsbt_core *c = *state;
	struct worker w[THREADS];
	pthread_t t[THREADS];

	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .c = c, .n = i };
		assert_int_equal(pthread_create(&t[i], NULL, worker_run, &w[i]), 0);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(w[i].failures, 0);
	}
	for (int i = 0; i < THREADS; i++) {
		for (int k = 0; k < OPENS; k++) {
			char path[PATH_MAX + 32], text[64];

			snprintf(path, sizeof(path), "%s/t%d-%d", c->ws, i, k);
			snprintf(text, sizeof(text), "t%d-%d\n", i, k);
			assert_file_is(path, text);
		}
	}
}

static double connections_accepted(struct fsbt_core *c)
{
	cJSON *r = fsbt_control_cmd(c, "Stats", NULL);
	double n = fsbt_num(r, "connections");

	cJSON_Delete(r);
	return n;
}

/* A forked child asks on a connection of its own (two processes on one
 * socket would take each other's replies); its parent's keeps working. */
static void a_forked_child_uses_a_connection_of_its_own(void **state)
{
	struct fsbt_core *c = *state;
	char path[PATH_MAX + 16];
	int fd, status;
	double before;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/parent.txt", c->ws);
	fd = fsbc_open(path, O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	close(fd);
	before = connections_accepted(c);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char child[PATH_MAX + 16];
		int cfd;

		snprintf(child, sizeof(child), "%s/child.txt", c->ws);
		cfd = fsbc_open(child, O_WRONLY | O_CREAT, 0644);
		/* Then hang up in the middle of nothing: the parent's
		 * connection must not notice. */
		fsbc_disconnect();
		_exit(cfd >= 0 ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_true(connections_accepted(c) == before + 1);
	fd = fsbc_open(path, O_WRONLY | O_APPEND, 0);
	assert_true(fd >= 0);
	assert_int_equal(fsbc_last_failure(), FSBC_OK);
	close(fd);
	/* The parent went on with the connection it had. */
	assert_true(connections_accepted(c) == before + 1);
}

/*
 * A program with its stderr closed (grep -s does that) opens a file: the
 * file must land on 2, the lowest free descriptor, and the library's own
 * socket, made by that first call, never on 0, 1 or 2.
 */
static void the_socket_never_takes_a_standard_descriptor(void **state)
{
	struct fsbt_core *c = *state;
	char path[PATH_MAX + 16];
	int status;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/stderr.txt", c->ws);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct stat a, b;
		int fd;

		fsbc_disconnect();	/* the child's first call connects */
		close(2);
		fd = fsbc_open(path, O_WRONLY | O_CREAT, 0644);
		if (fd != 2 || fstat(2, &a) < 0 || stat(path, &b) < 0)
			_exit(1);
		_exit(a.st_ino == b.st_ino && S_ISREG(a.st_mode) ? 0 : 2);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* ------------------------------------------------------------------------ */
/* EXDEV: a rename across two filesystems. */

static void a_rename_across_filesystems_answers_exdev(void **state)
{
	struct fsbt_core *c;
	char mnt[PATH_MAX + 16], from[PATH_MAX + 16], to[PATH_MAX + 32];
	struct stat st;

	(void)state;
	/* A mount namespace of this test process, so the tmpfs goes with it;
	 * the core started below shares it, and sees the mount made after. */
	if (unshare(CLONE_NEWNS) < 0)
		fsbt_skip("cannot make a mount namespace for a second filesystem: %s",
			  strerror(errno));
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		fsbt_skip("cannot make mounts private: %s", strerror(errno));
	c = fsbt_core_new();
	fsbt_core_start(c);
	snprintf(mnt, sizeof(mnt), "%s/mnt", c->ws);
	assert_int_equal(mkdir(mnt, 0755), 0);
	if (mount("fsbt-tmpfs", mnt, "tmpfs", 0, "size=1m,mode=0755") < 0) {
		int err = errno;

		fsbt_core_stop(c);
		fsbt_skip("cannot mount a tmpfs as a second filesystem: %s", strerror(err));
	}
	use_core(c);

	snprintf(from, sizeof(from), "%s/moving.txt", c->ws);
	snprintf(to, sizeof(to), "%s/moving.txt", mnt);
	fsbt_write_file(from, "moving\n");
	assert_int_equal(fsbc_rename(from, to), -1);
	assert_int_equal(errno, EXDEV);
	assert_int_equal(fsbc_last_failure(), FSBC_REFUSED);
	assert_file_is(from, "moving\n");
	assert_int_equal(lstat(to, &st), -1);

	fsbc_disconnect();
	/* Unmounted first: the temp dir goes with the core. */
	umount2(mnt, MNT_DETACH);
	fsbt_core_stop(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			write_open_returns_the_core_fd_after_backing_up_the_old_content, setup,
			teardown),
		cmocka_unit_test_setup_teardown(create_open_makes_the_file_with_the_mode, setup,
						teardown),
		cmocka_unit_test_setup_teardown(reads_go_unasked_when_the_sandbox_masks_them, setup,
						teardown),
		cmocka_unit_test_setup_teardown(read_open_reads_the_file_the_core_allowed, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_denied_write_fails_with_eacces_and_keeps_the_rule,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			a_relative_path_is_made_absolute_and_normalised_lexically, setup, teardown),
		cmocka_unit_test_setup_teardown(host_ops_delete_to_the_trash_and_keep_refusals,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			a_core_killed_mid_session_fails_the_next_call_with_eio, setup, teardown),
		cmocka_unit_test_setup_teardown(
			a_broker_that_never_answers_fails_with_eio_at_the_deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(replies_the_protocol_does_not_define_fail_closed,
						setup, teardown),
		cmocka_unit_test_setup_teardown(no_broker_configured_is_its_own_result, setup,
						teardown),
		cmocka_unit_test_setup_teardown(threads_each_get_the_descriptor_of_their_own_file,
						setup, teardown),
		cmocka_unit_test_setup_teardown(the_socket_never_takes_a_standard_descriptor, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_forked_child_uses_a_connection_of_its_own, setup,
						teardown),
		cmocka_unit_test(a_rename_across_filesystems_answers_exdev),
	};

	static char binary[PATH_MAX];

	/* Tests change directory: the harness must find the core anyway. */
	if (realpath(fsbt_binary(), binary) == NULL || getcwd(start_dir, sizeof(start_dir)) == NULL) {
		fprintf(stderr, "# cannot find %s: %s\n", fsbt_binary(), strerror(errno));
		return 1;
	}
	setenv("FSBROKER", binary, 1);
	return fsbt_run_group(tests, NULL, NULL);
}
