/*
 * harness.h — what every integration test includes: start the real
 * `fsbroker serve` in a fresh temp dir on a temp socket, talk to it over its
 * control channel (stdin/stdout) and its client socket, and stop it again,
 * killing by pid what was started.
 *
 * Functions that only the test's main thread calls (start, stop, control)
 * fail the running cmocka test themselves; the socket functions may run on
 * any thread and return errors instead, since cmocka's assertions are not
 * thread-safe.
 */
#ifndef FSBT_HARNESS_H
#define FSBT_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <limits.h>
#include <sys/types.h>
#include <time.h>

#include <cmocka.h>
#include <cJSON.h>

/* Every wait in the harness gives up after this long: 10 s, ten times that
 * when the core runs under FSBROKER_CORE_WRAPPER (valgrind is that slow). */
#define FSBT_TIMEOUT_MS fsbt_timeout_ms()
unsigned fsbt_timeout_ms(void);

/* fsbt_read_reply(): the peer closed the connection before a whole line. */
#define FSBT_EOF (-10000)

/* Text request classes and the open-spec of a truncating write. */
#define FSBT_READ "fsbroker.read"
#define FSBT_WRITE "fsbroker.read-write"
#define FSBT_OPEN_WRITE "open=0x241:0644"	/* O_WRONLY|O_CREAT|O_TRUNC */

#define FSBT_SESSION "fsbt-session"
#define FSBT_TOOL_CALL "tc-1"

/* A core under test and the temp dir it lives in. */
struct fsbt_core {
	char dir[PATH_MAX];	/* mkdtemp, real path: everything below is in it */
	char home[PATH_MAX];	/* HOME of the core: .ssh/id_ed25519, .aws/credentials */
	char ws[PATH_MAX];	/* --workspace */
	char state[PATH_MAX];	/* --state-dir (created by the core) */
	char sockdir[PATH_MAX];	/* created 0700 by the core */
	char sock[PATH_MAX];	/* --socket */
	char tmp[PATH_MAX];	/* TMPDIR of the core */
	char rules_dir[PATH_MAX];	/* for packs a test writes */
	char log[PATH_MAX];	/* the core's stderr */
	char rules[PATH_MAX];	/* --rules, "" for the default pack */
	char session[129];	/* --session */
	pid_t pid;		/* the core, 0 once reaped */
	int exit_status;	/* wait status once reaped */
	int ctl_in;		/* write end of the core's stdin */
	int ctl_out;		/* read end of the core's stdout */
	char *out_buf;		/* lines read from ctl_out, not yet taken */
	size_t out_len, out_cap;
	long next_id;		/* for fsbt_control_cmd() */
	const char *serve_args[5];	/* more flags for serve, NULL-terminated */
};

/** The fsbroker binary: $FSBROKER, else build/fsbroker. */
const char *fsbt_binary(void);

/**
 * The command the core started by fsbt_core_spawn() runs under:
 * $FSBROKER_CORE_WRAPPER split on spaces (`make test-valgrind` sets
 * "valgrind --error-exitcode=99 ..."), or NULL when it is not set. A
 * wrapper that reports an error must make the core exit non-zero, which
 * fails the test that stopped it.
 */
const char *fsbt_core_wrapper(void);

/**
 * Make the temp dir layout (home with its credential files, ws, tmp, rules)
 * without starting anything. Fails the test on error.
 */
struct fsbt_core *fsbt_core_new(void);

/**
 * Start `fsbroker serve` on the layout with `socket` (NULL: c->sock) and
 * return at once. 0 or -errno.
 */
int fsbt_core_spawn(struct fsbt_core *c, const char *socket);

/** Wait for the {"event":"ready"} line: 0, or -1 (timeout or exit). */
int fsbt_core_wait_ready(struct fsbt_core *c);

/** Spawn and wait until ready; fails the test with the core's log if not. */
void fsbt_core_start(struct fsbt_core *c);

/**
 * build/tests/faultinject/fsb_fault.so, next to the test's binary (see
 * tests/faultinject/fsb_fault.c), or NULL when it is not built.
 */
const char *fsbt_fault_shim(void);

/**
 * fsbt_core_start() with the fault shim loaded into the core alone:
 * FSB_FAULT=spec, and FSB_FAULT_ARM, FSB_FAULT_LOG, FSB_FAULT_HOLD set to
 * `arm`, `log`, `hold` where not NULL. Fails the test when the shim is
 * not built.
 */
void fsbt_core_start_with_shim(struct fsbt_core *c, const char *spec, const char *arm,
			       const char *log, const char *hold);

/**
 * fsbt_core_start_with_shim() that holds the call `spec` names
 * ("CALL:HOLD:N[:MATCH]") while the file it puts at `hold` (of `len`,
 * in the core's dir) exists; counted only once the core is up. The test
 * removes `hold` to let the call go.
 */
void fsbt_core_start_holding(struct fsbt_core *c, const char *spec, char *hold, size_t len);

/**
 * Wait until the call fsbt_core_start_holding named is held (the shim has
 * logged it): the test then knows which request is the held one. Fails
 * the test after FSBT_TIMEOUT_MS.
 */
void fsbt_core_wait_held(const struct fsbt_core *c);

/** fsbt_core_new() + fsbt_core_start(). */
struct fsbt_core *fsbt_start(void);

/**
 * Wait up to `timeout_ms` for the core to exit. Returns 0 with the wait
 * status in c->exit_status, or -ETIMEDOUT.
 */
int fsbt_core_wait_exit(struct fsbt_core *c, int timeout_ms);

/**
 * Stop the core: Shutdown on the control channel, up to 10 s to exit, then
 * SIGKILL by pid; remove the temp dir (kept when FSBT_KEEP is set) and free.
 * Safe on a core that already exited or never started.
 */
int fsbt_core_stop(struct fsbt_core *c);

/** The core's log so far (malloc'd, NUL-terminated, never NULL). */
char *fsbt_core_log(const struct fsbt_core *c);

/**
 * Send one control request line (a JSON object with an "id") and return the
 * reply carrying the same id, skipping events and other replies. NULL after
 * 10 s or when the core is gone (with a diagnostic on stderr).
 */
cJSON *fsbt_control(struct fsbt_core *c, const char *line);

/** fsbt_control() with a printf format. */
cJSON *fsbt_controlf(struct fsbt_core *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/**
 * Send {"id":<next>,"command":<command>[,<fields>]}: `fields` is the
 * inside of a JSON object ("\"path\":\"/x\"") or NULL. Fails the test when
 * no reply comes.
 */
cJSON *fsbt_control_cmd(struct fsbt_core *c, const char *command, const char *fields, ...)
	__attribute__((format(printf, 3, 4)));

/**
 * The next event pushed on the control channel whose "event" is `name`
 * (other lines are dropped); NULL after `timeout_ms` or when the core is gone.
 */
cJSON *fsbt_control_event(struct fsbt_core *c, const char *name, int timeout_ms);

/** CheckAccess {path, op}; fails the test when no reply comes. */
cJSON *fsbt_check_access(struct fsbt_core *c, const char *op, const char *path);

/** The string field `name` of `obj`, or "" (never NULL). */
const char *fsbt_str(const cJSON *obj, const char *name);

/** The number field `name` of `obj`, or -1. */
double fsbt_num(const cJSON *obj, const char *name);

/** True when `obj` has "ok": true. */
bool fsbt_ok(const cJSON *obj);

/** Connect to the core's socket (c->sock): SOCK_CLOEXEC, SO_RCVTIMEO 10 s. */
int fsbt_connect(const struct fsbt_core *c);

/** Connect to any socket path; -errno on failure. */
int fsbt_connect_path(const char *path);

/** Close a connection made by fsbt_connect() and drop its read buffer. */
void fsbt_close(int fd);

/**
 * Send `len` bytes plus "\n" in one sendmsg, with `pass_fd` in SCM_RIGHTS
 * when >= 0. 0 or -errno.
 */
int fsbt_send(int fd, const char *line, size_t len, int pass_fd);

/**
 * Read exactly one reply line (without its newline, NUL-terminated) into
 * `reply`. The rest of what arrived stays buffered for the next call. An fd
 * that came with this line is stored in *fd_out (-1 when none; closed when
 * fd_out is NULL). Returns the line's length, FSBT_EOF when the peer closed
 * the connection, -EMSGSIZE for a line longer than `size`, or -errno
 * (-EAGAIN after 10 s without data).
 */
ssize_t fsbt_read_reply(int fd, char *reply, size_t size, int *fd_out);

/** fsbt_send() of a NUL-terminated `line` and fsbt_read_reply(). */
ssize_t fsbt_request(int fd, const char *line, char *reply, size_t size, int *fd_out);

/**
 * Send one JSON HostFileOperation line on a client connection and return
 * its reply parsed (the caller frees it), or NULL when no reply line came or
 * it was not JSON (with a diagnostic on stderr). Any thread may call it.
 */
cJSON *fsbt_hostop(int fd, const char *json);

/** fsbt_hostop() with a printf format. */
cJSON *fsbt_hostopf(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/**
 * Build a text request "<class>\t<path>\t<session>\t<tool-call>[\t<spec>]"
 * into `out` (`spec` NULL: none). Returns `out`.
 */
char *fsbt_text_req(char *out, size_t size, const char *cls, const char *path,
		    const char *session, const char *spec);

/** True when `s` starts with `prefix`. */
bool fsbt_starts(const char *s, const char *prefix);

/** Write `data` to `path` (created 0644, truncated). Fails the test on error. */
void fsbt_write_file(const char *path, const char *data);

/** Write `size` bytes of `c` to `path`, as fsbt_write_file(). */
void fsbt_write_filled(const char *path, char c, size_t size);

/** VmRSS of the core in KiB, -1 when unknown. */
long fsbt_core_rss_kib(const struct fsbt_core *c);

/** Write `text` to `dir`/`name`, as fsbt_write_file(). */
void fsbt_put(const char *dir, const char *name, const char *text);

/** The content of `path` (malloc'd, NUL-terminated), or NULL. */
char *fsbt_read_file(const char *path, size_t *len);

/* Backup object `hex` of the store at `store_dir` (…/modify_backup), loose
 * or packed, read through fsb_backup_object_open and checked against its
 * SHA-256 name; NUL-terminated and malloc'd, NULL when missing or damaged. */
char *fsbt_read_object(const char *store_dir, const char *hex);

/**
 * Run `argv` (argv[0] a path), stdout and stderr into *output when not NULL
 * (malloc'd). Returns the wait status, or -1 when it could not run or took
 * longer than 10 s (then it is killed).
 */
int fsbt_run(char *const argv[], char **output);

/** fsbt_run() for a command that may take longer: `timeout_ms` is only a
 * safety net against a hang, never a measure. */
int fsbt_run_within(char *const argv[], char **output, unsigned timeout_ms);

/**
 * Copy the program `src` to `dir`/`name` (mode 0755), where a sandbox sees
 * it: the build tree may sit under /tmp, which `fsbroker run` replaces with
 * a private one. The copy's path into `out`; fails the test when it cannot.
 */
void fsbt_copy_program(const char *src, const char *dir, const char *name, char *out,
		       size_t len);

/*
 * A snapshot of a tree, taken with lstat and never following a symlink:
 * one entry per path, sorted by path, for comparing a tree before and after
 * something that should have left it (or put it back) as it was.
 */
struct fsbt_entry {
	char *path;		/* relative to the root; "" for the root itself */
	mode_t mode;		/* st_mode: type and permission bits */
	nlink_t nlink;
	off_t size;
	struct timespec mtime, ctime;
	char sha[65];		/* SHA-256 of a regular file's content, else "" */
	char *target;		/* a symlink's target, else NULL */
	uint64_t dev, ino;
	size_t link_first;	/* the entry of the tree's first path (by name)
				 * that is the same inode: its link group */
};

struct fsbt_tree {
	struct fsbt_entry *e;
	size_t n, cap;
};

/* What fsbt_tree_diff() compares besides the set of paths, the type, the
 * permission bits, a file's size and content and a symlink's target. */
#define FSBT_TREE_MTIME 0x1	/* mtime of everything but directories */
#define FSBT_TREE_DIR_MTIME 0x2	/* mtime of directories */
#define FSBT_TREE_CTIME 0x4	/* ctime of everything (nothing touched it at all) */
#define FSBT_TREE_NLINK 0x8	/* link count of everything but directories */
#define FSBT_TREE_LINKS 0x10	/* link groups: the paths of the tree that are
				 * one inode (names outside the tree aside) */

/**
 * Snapshot the tree at `root` (the root included; a root that is a symlink
 * is recorded as one). 0, or -errno when a path could not be read.
 */
int fsbt_tree_snap(const char *root, struct fsbt_tree *t);

void fsbt_tree_free(struct fsbt_tree *t);

/**
 * Compare two snapshots: the number of paths that differ. The first
 * differences, one line each ("<path>: <what>"), go into `out` (may be
 * NULL).
 */
size_t fsbt_tree_diff(const struct fsbt_tree *before, const struct fsbt_tree *after,
		      unsigned what, char *out, size_t size);

/** Milliseconds of a monotonic clock. */
uint64_t fsbt_now_ms(void);

/** Sleep `ms` milliseconds. */
void fsbt_sleep_ms(unsigned ms);

/**
 * Mark the running test skipped with a reason. cmocka 1.1.5 prints a skipped
 * test as "not ok N # SKIP"; fsbt_main() rewrites that into the TAP line
 * "ok N # SKIP <name>: <reason>" so that a skip is neither a pass nor a
 * failure.
 */
void fsbt_skip_reason(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define fsbt_skip(...)                         \
	do {                                   \
		fsbt_skip_reason(__VA_ARGS__); \
		skip();                        \
	} while (0)

/**
 * Why `fsbroker run` cannot build its sandbox on this machine (bubblewrap
 * missing or refused, no Landlock, no seccomp notification), into `why`;
 * NULL when it can.
 */
const char *fsbt_sandbox_unsupported(char *why, size_t len);

/**
 * Print a long diagnostic (a program's output) as TAP comments on stderr:
 * cmocka cuts a failure message at 1024 bytes, and a cut message leaves its
 * last line unterminated, which hides the TAP line after it.
 * fsbt_fail_long() prints it and fails the test.
 */
void fsbt_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define fsbt_fail_long(...)            \
	do {                           \
		fsbt_diag(__VA_ARGS__); \
		fail();                 \
	} while (0)

/**
 * Run a cmocka group with the harness's TAP filter (see fsbt_skip); the
 * group's exit status.
 */
int fsbt_main(const char *group, const struct CMUnitTest *tests, size_t n,
	      CMFixtureFunction setup, CMFixtureFunction teardown);
#define fsbt_run_group(tests, setup, teardown) \
	fsbt_main(#tests, tests, sizeof(tests) / sizeof((tests)[0]), setup, teardown)

/** Per-test fixtures: a started core in *state, and its stop. */
int fsbt_setup_core(void **state);
int fsbt_teardown_core(void **state);

#endif
