/*
 * supervisor_call.h — what the parts of the seccomp supervisor share
 * (internal to supervisor*.c; the public face is supervisor.h):
 *
 *   supervisor.c          lifetime, receiving, dispatch;
 *   supervisor_answer.c   what every server shares: answering, the
 *                         target's validity, the access, the audit line;
 *   supervisor_target.c   reading the target: its memory, cwd, dirfds,
 *                         fds, its root (cached);
 *   supervisor_creds.c    its umask and fsuid/fsgid, kept per process,
 *                         and the umask(2) and clone(CLONE_FS) calls that
 *                         make a kept umask stale;
 *   supervisor_open.c     the open family, writes and brokered reads,
 *                         and the target's own fds named as paths;
 *   supervisor_names.c    calls that change names, as host operations;
 *   supervisor_meta.c     calls that change a file in place: truncate,
 *                         times, owner, mode on an fd, mknod, inode flags.
 */
#ifndef FSB_SUPERVISOR_CALL_H
#define FSB_SUPERVISOR_CALL_H

#include <linux/seccomp.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <uv.h>

#include "broker.h"

struct sv_root_cache;
struct sv_creds_cache;

/* Threads that receive and serve notifications (supervisor.c). */
#define SV_RECEIVERS 2

struct fsb_supervisor {
	struct fsb_broker *b;
	struct fsb_scope scope;
	int listener;
	int stopfd;		/* an eventfd: readable once the run is over */
	pthread_t receivers[SV_RECEIVERS];
	int nreceivers;
	pthread_mutex_t recv_lock;	/* one receiver polls and receives at a time */
	bool done;		/* under recv_lock: no receiver takes another call */
	int running;		/* receivers not yet returned (atomic) */
	uv_async_t ended;	/* the last receiver returned */
	bool stopping;		/* on the loop: fsb_supervisor_stop() was called */
	void (*on_end)(struct fsb_supervisor *sv, void *arg);
	void *arg;
	struct sv_root_cache *roots;	/* supervisor_target.c */
	struct sv_creds_cache *creds;	/* supervisor_creds.c */
	struct sv_made_files *made;	/* supervisor_made.c */
	bool routes_umask;	/* FSB_SUPERVISE_ROUTES_UMASK: umasks may be kept */
	uid_t uid;		/* the core's: the requester's uid in each access */
	uid_t euid;		/* the core's effective ids: a create for a */
	gid_t egid;		/* target with other fs ids switches to those */
};

/* ---- supervisor_answer.c ------------------------------------------------- */

/** Answer `req` with `err` (0 or -errno). */
void fsb_sv_answer(struct fsb_supervisor *sv, const struct seccomp_notif *req, int err);

/** Answer `req` with `fd` installed in the target (O_CLOEXEC from `flags`);
 * `fd` is closed. */
void fsb_sv_answer_fd(struct fsb_supervisor *sv, const struct seccomp_notif *req, int fd,
		      int flags);

/** Answer `req` with CONTINUE: the kernel performs the call as asked. Only
 * for calls that touch no file and whose outcome is not the policy's. */
void fsb_sv_answer_continue(struct fsb_supervisor *sv, const struct seccomp_notif *req);

/** NOTIF_ID_VALID: the process that trapped is still waiting, so what was
 * read through its pid was its own. */
bool fsb_sv_still_valid(struct fsb_supervisor *sv, const struct seccomp_notif *req);

/** The audit line of a decision the supervisor made itself (phase
 * "supervisor", with the pid and the system call number). */
int fsb_sv_audit(struct fsb_supervisor *sv, const struct seccomp_notif *req,
		  const struct fsb_access *acc, int err);

/** An access for `sv`'s scope by `req`'s process, judged in view `rootfd`
 * (-1: the core's own view). */
void fsb_sv_access_init(struct fsb_supervisor *sv, const struct seccomp_notif *req,
			struct fsb_access *acc, enum fsb_op op, const char *path, int rootfd);

/* ---- supervisor_target.c ------------------------------------------------- */

/* What a create needs of the target: its umask and its fsuid/fsgid. */
struct sv_creds {
	mode_t umask;
	uid_t fsuid;
	gid_t fsgid;
};

/** A NUL-terminated string at `addr` in the target. 0, -EFAULT or -ENAMETOOLONG. */
int fsb_sv_read_string(pid_t pid, unsigned long addr, char *buf, size_t len);

/** `len` bytes at `addr` in the target. 0 or -EFAULT. */
int fsb_sv_read_bytes(pid_t pid, unsigned long addr, void *buf, size_t len);

/** The absolute path `rel` names for the target: joined to its cwd
 * (`dirfd` AT_FDCWD) or to the directory its `dirfd` is open on. */
int fsb_sv_absolute_path(pid_t pid, int dirfd, const char *rel, char *out, size_t len);

/** The target's own fd when `path` names one (/dev/stdin, /dev/stdout,
 * /dev/stderr, /dev/fd/N, /proc/self/fd/N, /proc/thread-self/fd/N), or -1. */
int fsb_sv_own_fd_name(const char *path);

/** The path argument at `addr` relative to `dirfd`, absolute, in `out`.
 * `*slash` (may be NULL) is set when the name ends in '/'. */
int fsb_sv_target_path(pid_t pid, int dirfd, unsigned long addr, char *out, size_t len,
		       bool *slash);

/** True when `p` ends in '/' (and is not "/"). */
bool fsb_sv_ends_in_slash(const char *p);

/** A pidfd (close-on-exec) for thread or process `pid`: for the thread
 * itself where the kernel has PIDFD_THREAD (6.9), else for its process
 * when `pid` leads one. -errno otherwise. */
int fsb_sv_pidfd(pid_t pid);

/** Whether the thread or process `pidfd` holds has exited (it polls
 * readable then), so a later user of its id is someone else. */
bool fsb_sv_pidfd_exited(int pidfd);

/** A duplicate of fd `tfd` of the thread that sent `req` (pidfd_getfd):
 * the very open file, taken through the root cache's pidfd of the thread
 * when it has one. -errno when it cannot be taken, -ESRCH when `req` is no
 * longer pending (its thread is gone: the id may be another's now). */
int fsb_sv_target_fd(struct fsb_supervisor *sv, const struct seccomp_notif *req, int tfd);

/**
 * The target's "/" (an O_PATH fd of its /proc/<pid>/root, the caller's to
 * close), from the cache when the same process asked before. -EACCES when
 * it cannot be opened. Check NOTIF_ID_VALID after.
 */
int fsb_sv_root(struct fsb_supervisor *sv, pid_t pid);

/** Free the root cache (at the end of the supervisor). */
void fsb_sv_roots_free(struct fsb_supervisor *sv);

/**
 * The real path of the target's fd `fd` (a dup of it) as the target sees
 * it, for judging: -EPERM when it has none (removed, a pipe, a socket).
 */
int fsb_sv_fd_path(int fd, char *out, size_t len);

/* ---- supervisor_made.c --------------------------------------------------- */

/**
 * A create this supervisor granted: `fd` is the new file, `st` its fstat,
 * `acc` the access it was judged as. Kept when its verdict answers the
 * file's other changes of the class (fsb_broker_verdict_answers_class) and
 * its file system keeps birth times.
 */
void fsb_sv_made_note(struct fsb_supervisor *sv, const struct fsb_access *acc, int fd,
		      const struct stat *st);

/**
 * Whether the file of `fd` (a dup of a target's fd; `st` its fstat) is one
 * kept by fsb_sv_made_note, still with one name and with the broker's epoch
 * of its create: then `path` gets the real path it was made at and
 * `verdict` the pack's verdict on it, which answer a change of its
 * metadata (see supervisor_made.c).
 */
bool fsb_sv_made_here(struct fsb_supervisor *sv, int fd, const struct stat *st,
		      char *path, size_t len, struct fsb_verdict *verdict);

/** Make the table (as the supervisor starts) and free it (as it ends). */
void fsb_sv_made_init(struct fsb_supervisor *sv);
void fsb_sv_made_free(struct fsb_supervisor *sv);

/* ---- supervisor_creds.c -------------------------------------------------- */

/** The target's umask and fsuid/fsgid: kept from an earlier create of the
 * same thread when nothing can have changed them, else from
 * /proc/<pid>/status. -ESRCH when it cannot be read (check NOTIF_ID_VALID
 * after, either way). */
int fsb_sv_creds(struct fsb_supervisor *sv, pid_t pid, struct sv_creds *out);

/** Thread `tid` trapped a call: any umask(2) it trapped before has returned. */
void fsb_sv_creds_seen(struct fsb_supervisor *sv, pid_t tid);

/** Serve umask(2) and clone(CLONE_FS without CLONE_THREAD): mark what they
 * make stale, then CONTINUE. */
void fsb_sv_serve_process(struct fsb_supervisor *sv, const struct seccomp_notif *req);

/** Free what supervisor_creds.c keeps (at the end of the supervisor). */
void fsb_sv_creds_free(struct fsb_supervisor *sv);

/* ---- the parts ---------------------------------------------------------- */

void fsb_sv_serve_open(struct fsb_supervisor *sv, const struct seccomp_notif *req);
void fsb_sv_serve_names(struct fsb_supervisor *sv, const struct seccomp_notif *req);
/** Returns false when `req` is not one of its calls. */
bool fsb_sv_serve_meta(struct fsb_supervisor *sv, const struct seccomp_notif *req);

#endif
