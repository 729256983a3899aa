/*
 * fsbroker_client.h — the client library every brokered command links (the
 * patched toybox and zsh, `fsbroker delete`): it asks the fsbroker core for
 * file access over the client socket (docs/protocol.md) and fails closed.
 *
 * What it does, in short:
 *   - reads FSBROKER_SOCKET, FSBROKER_SESSION_ID, FSBROKER_TOOL_CALL_ID,
 *     FSBROKER_TRACE_ID and FSBROKER_TIMEOUT_MS (or a struct fsbc_config);
 *   - keeps one connection per process, made on first use, close-on-exec;
 *   - fsbc_open(): a write asks the core to open the file and receives the
 *     descriptor (the core backs the file up first); a read asks, and opens
 *     the file itself when the core answers SANDBOX;
 *   - fsbc_host_op() and its wrappers: delete, rename, mkdir, copy, chmod,
 *     link, touch, performed by the core on the host side;
 *   - every request has a deadline (30 s unless configured);
 *   - any failure between request and reply — EOF, timeout, a malformed
 *     reply — fails the call with EIO. Nothing is ever opened or changed
 *     without the core's answer, and a request is never sent twice.
 *
 * Errors follow open(2): -1 with errno. fsbc_last_failure() says which kind
 * of failure it was, fsbc_last_reason() what the core said.
 *
 * Threads: one connection per process, and a mutex held for the whole of
 * one request and its reply, so calls from several threads are safe and are
 * served one after the other. A child made by fork() never uses its parent's
 * connection: it notices the new pid and connects afresh. Do not fork()
 * while another thread is inside a call (the child's copy of the mutex would
 * stay locked).
 */
#ifndef FSBROKER_CLIENT_H
#define FSBROKER_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The default deadline of one request, in milliseconds. */
#define FSBC_DEFAULT_TIMEOUT_MS 30000

/* The inside of one failure: what fsbc_last_failure() returns. */
enum fsbc_failure {
	FSBC_OK = 0,		/* the last call succeeded */
	FSBC_NO_BROKER,		/* no broker configured (FSBROKER_SOCKET unset or
				   empty): errno ENOTCONN; nothing was asked */
	FSBC_UNREACHABLE,	/* configured, but no connection could be made
				   (or the session id is missing): errno EIO;
				   nothing was sent */
	FSBC_LOST,		/* the connection failed during the request: EOF,
				   timeout, a malformed reply. errno EIO; whether
				   the core acted is unknown; the connection is
				   closed and the request is not sent again */
	FSBC_REFUSED,		/* the core answered with a refusal or an error:
				   errno as the core named it (EACCES for a
				   policy denial), the reason in fsbc_last_reason() */
	FSBC_LOCAL,		/* refused before asking: an empty or too long
				   path, a name the protocol cannot carry, out of
				   memory (errno says which) */
};

/*
 * Where the broker is and who asks. A NULL (or 0) field is taken from the
 * environment: FSBROKER_SOCKET, FSBROKER_SESSION_ID, FSBROKER_TOOL_CALL_ID,
 * FSBROKER_TRACE_ID, FSBROKER_TIMEOUT_MS.
 */
struct fsbc_config {
	const char *socket;
	const char *session;
	const char *tool_call;
	const char *trace;
	int timeout_ms;		/* > 0; else the environment, else 30000 */
};

/**
 * Set the configuration (NULL: everything from the environment, which is
 * also what happens without any call). Closes the current connection, if
 * any. 0, or -1 with errno ENOMEM.
 */
int fsbc_configure(const struct fsbc_config *cfg);

/** True when a broker socket is configured (by fsbc_configure or the
 * environment). Says nothing about whether it answers. */
bool fsbc_configured(void);

/**
 * True when a broker is configured and FSBROKER_READS is "sandbox": the
 * command runs under `fsbroker run` with reads = "mask", whose sandbox
 * hides the paths denyRead names. fsbc_open() then opens a read itself, as
 * open(2) would, without a request; writes are asked for as always.
 */
bool fsbc_reads_local(void);

/** Whether open(2) with `flags` may change something: write access,
 * O_CREAT or O_TRUNC. Such an open always goes to the core. */
bool fsbc_open_writes(int flags);

/** Close the connection, if one is open; the next call connects anew. */
void fsbc_disconnect(void);

/**
 * Open `path` through the broker, as open(2) would: `flags` and `mode` as
 * for open(2). Returns a descriptor, or -1 with errno.
 *
 * A relative path is made absolute against the current directory and
 * normalised lexically (".", "..", "//") before it is sent; the core then
 * resolves the result again, symlinks included, in the requester's view.
 * So "link/../x" means "x" here, as `realpath -s` would say.
 *
 * Write intents (O_WRONLY, O_RDWR, O_CREAT or O_TRUNC) send a read-write
 * request with an open-spec: the core judges, backs up the file, opens it and
 * passes the descriptor. Anything else sends a read request: on SANDBOX the
 * library opens the normalised path itself (read-only by construction), on
 * a passed descriptor it returns that. The descriptor is close-on-exec only
 * when `flags` holds O_CLOEXEC, as with open(2); it is received with
 * MSG_CMSG_CLOEXEC either way, so no exec in another thread can inherit it
 * before that is decided.
 */
int fsbc_open(const char *path, int flags, mode_t mode);

/*
 * mkstemp(3) through the core: `template` ends in "XXXXXX", replaced by
 * random letters until `open_fn` (fsbc_open when NULL; a client's own
 * wrapper of it otherwise) creates the name with O_RDWR|O_CREAT|O_EXCL,
 * mode 0600. The descriptor, or -1 with errno (EINVAL for a bad template;
 * the template is put back).
 */
int fsbc_mkstemp(char *template, int (*open_fn)(const char *path, int flags, mode_t mode));

/* Host operations (docs/protocol.md, "JSON HostFileOperation"). */
enum fsbc_hostop_kind {
	FSBC_OP_DELETE,
	FSBC_OP_MKDIR,
	FSBC_OP_RENAME,
	FSBC_OP_COPY,
	FSBC_OP_CHMOD,
	FSBC_OP_LINK,
	FSBC_OP_TOUCH,
};

/* Delete modes: the core's default (the trash), or one named. */
enum fsbc_delete_mode {
	FSBC_DELETE_DEFAULT = 0,
	FSBC_DELETE_TRASH,
	FSBC_DELETE_UNLINK,
};

struct fsbc_hostop {
	enum fsbc_hostop_kind op;
	const char *path;	/* delete, mkdir, chmod, touch */
	const char *from;	/* rename, copy, link (a symlink's content as given) */
	const char *to;		/* rename, copy, link */
	bool recursive;		/* delete, mkdir, copy */
	bool force;		/* delete: a missing path is no error */
	bool symbolic;		/* link: a symlink instead of a hard link */
	enum fsbc_delete_mode delete_mode;
	int mode;		/* mkdir, chmod: the permission bits; -1 for none */
};

/* What a successful host operation reports. */
struct fsbc_hostop_result {
	bool changed;		/* false: nothing to do (force, mkdir -p) */
	char trashed_to[4096];	/* delete to the trash: where it went, else "" */
};

/**
 * Ask the core to perform `op`. Paths (all but a symlink's content) are made
 * absolute and normalised as for fsbc_open(). `res` may be NULL. 0, or -1
 * with errno: the name the core gave (EXDEV stays EXDEV, so `mv` can copy and
 * delete instead), EIO when the exchange itself failed.
 */
int fsbc_host_op(const struct fsbc_hostop *op, struct fsbc_hostop_result *res);

/* Flags of fsbc_delete(). */
#define FSBC_RECURSIVE 0x1
#define FSBC_FORCE 0x2

/** Delete `path` (to the trash unless the core is told otherwise). */
int fsbc_delete(const char *path, unsigned flags);
/** rename(2) through the core. */
int fsbc_rename(const char *from, const char *to);
/** mkdir(2), or mkdir -p with `parents`. */
int fsbc_mkdir(const char *path, mode_t mode, bool parents);
/** chmod(2). */
int fsbc_chmod(const char *path, mode_t mode);
/** link(2): a hard link `to` naming the file `from`. */
int fsbc_link(const char *from, const char *to);
/** symlink(2): a symlink `linkpath` holding `target` (not resolved). */
int fsbc_symlink(const char *target, const char *linkpath);
/** Copy a file, or a tree with `recursive`. */
int fsbc_copy(const char *from, const char *to, bool recursive);
/** touch: set both times to now, or create an empty file. */
int fsbc_touch(const char *path);

/** The kind of the calling thread's last failure (FSBC_OK after a success). */
enum fsbc_failure fsbc_last_failure(void);

/**
 * What the core (or the library) said about the calling thread's last
 * failure: the deciding rule for a denial ("denyModify GLOB"),
 * "ask <block-id> <rule>" when it waits for approval, or a sentence. "" when
 * there is nothing to add to strerror(errno). Valid until the thread's next
 * call.
 */
const char *fsbc_last_reason(void);

/**
 * strerror(err), followed by " (<reason>)" when `err` is the errno of the
 * calling thread's last failure and it has a reason: "Permission denied
 * (denyModify GLOB)". Written into `buf`; returns `buf`.
 */
const char *fsbc_strerror(int err, char *buf, size_t size);

/**
 * Print "<prog>: cannot <verb> '<path>': <fsbc_strerror(err)>" and a newline
 * on `out` (stderr when NULL), the way a command prints its own errors:
 *   cp: cannot create 'x': Permission denied (denyModify GLOB)
 */
void fsbc_print_error(FILE *out, const char *prog, const char *verb, const char *path, int err);

/** The errno named `name` ("EXDEV" → EXDEV), or 0 for a name it does not know. */
int fsbc_errno_from_name(const char *name);

#ifdef __cplusplus
}
#endif

#endif
