/*
 * supervisor_open.c — the open family under the supervisor: open, openat,
 * creat and openat2 (see supervisor_call.h).
 *
 * A write-open is decided, the file backed up and opened by the core in
 * the target's view, as a grant is (grant.c, modify_backup.c); the fd goes
 * to the target with ADDFD. A read-open (every openat2 comes here; open
 * and openat too when the pack says reads = "broker") is judged as a read
 * and opened the same way. The target's own fds named as paths
 * (/dev/stdout, /dev/fd/N, /proc/self/fd/N) are taken with pidfd_getfd and
 * judged by what they are.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "at.h"
#include "call_stages.h"
#include "grant.h"
#include "modify_backup.h"
#include "openflags.h"
#include "supervisor_call.h"
#include "write_grant.h"

/* One open, as the target made it. */
struct call {
	struct fsb_supervisor *sv;
	const struct seccomp_notif *req;
	pid_t pid;
	int rootfd;			/* the target's "/", O_PATH */
	char path[PATH_MAX];		/* absolute, in the target's view */
	int flags;
	mode_t mode;
	struct sv_creds creds;		/* read for a create only */
	bool has_creds;
};

static void audit_call(struct call *c, const struct fsb_access *acc, int fd, int err)
{
	enum fsb_stage was = fsb_stage_push(FSB_STAGE_AUDIT);
	struct fsb_audit_line l;

	fsb_access_audit_line(&l, acc, "supervisor", acc->errnum ? acc->errnum : err);
	fsb_audit_line_int(&l, "pid", c->pid);
	fsb_audit_line_int(&l, "syscall", c->req->data.nr);
	fsb_audit_line_int(&l, "openFlags", c->flags);
	if (fd >= 0)
		fsb_audit_line_str(&l, "grant", "fd");
	fsb_broker_audit_line(c->sv->b, c->sv->scope.session, &l);
	fsb_stage_pop(was);
}

struct backup_arg {
	struct call *c;
	const struct fsb_access *acc;
};

static int backup_opened_file(int rdfd, const struct stat *st, void *arg)
{
	struct backup_arg *a = arg;
	struct fsb_backup_outcome out;
	enum fsb_stage was = fsb_stage_push(FSB_STAGE_BACKUP);
	int rc = fsb_backup_file(a->c->sv->b, a->c->sv->scope.session, a->acc, rdfd, st,
				 a->c->flags, "supervisor-backup", &out);

	fsb_stage_pop(was);
	return rc;
}

/*
 * A create made as the target's fsuid/fsgid: set on this pool thread only
 * (setfsuid is per thread) around the one openat2, so the kernel checks
 * the directory's permissions for them and gives the file their owner.
 * Nothing happens when they are the core's own (the usual case: the
 * sandbox maps the core's uid) or when the core may not take them on.
 */
static int grant_open_as_target(void *arg, const struct fsb_access *acc, int flags, mode_t mode,
				fsb_grant_backup_fn backup, void *backup_arg)
{
	struct call *c = arg;
	bool as_target = c->has_creds && !acc->res.exists &&
			 (c->creds.fsuid != c->sv->euid || c->creds.fsgid != c->sv->egid);
	const char *name;
	uid_t old_uid;
	gid_t old_gid;
	int fd, pfd;

	if (!as_target || !(flags & O_CREAT))
		return fsb_grant_open(c->rootfd, &acc->res, flags, mode, backup, backup_arg);
	/* The directory is reached as the core (as the target's cwd would
	 * have been); only the create itself is the target's. */
	if ((pfd = fsb_at_open_parent(c->rootfd, acc->res.path, &name)) < 0)
		return pfd == -ELOOP ? -EAGAIN : pfd;
	old_gid = (gid_t)setfsgid(c->creds.fsgid);
	old_uid = (uid_t)setfsuid(c->creds.fsuid);
	fd = openat(pfd, name, (flags & ~O_TRUNC) | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY |
		    O_CLOEXEC, mode);
	fd = fd < 0 ? -errno : fd;
	setfsuid(old_uid);
	setfsgid(old_gid);
	close(pfd);
	return fd;
}

/* The flags a read-open may carry here: what the kernel knows that
 * neither writes nor creates. O_PATH is a read too (its fd reopened for
 * writing through /proc/self/fd comes back here as a write-open). */
#define READ_FLAGS (O_ACCMODE | O_NOFOLLOW | O_DIRECTORY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | \
		    O_SYNC | O_DSYNC | O_LARGEFILE | O_NOATIME | O_PATH | O_ASYNC | O_DIRECT | \
		    00100000 /* the kernel's O_LARGEFILE on x86_64 */)

/*
 * Open the judged object for reading as the kernel would: a directory
 * too (its fd reaches nothing unjudged while opens go through here or
 * through the mount plan), a FIFO or device without blocking a pool
 * thread, O_PATH as a read (see below). The object is
 * reached with O_PATH and no
 * symlink followed since it was judged, and reopened through /proc.
 */
static int open_read(int rootfd, const struct fsb_resolved *res, int flags)
{
	struct stat st;
	int pathfd, fd, err;

	pathfd = fsb_at_reach(rootfd, res, &st);
	if (pathfd < 0)
		return pathfd == -EAGAIN ? -ENOENT : pathfd;
	if ((flags & O_DIRECTORY) && !S_ISDIR(st.st_mode)) {
		close(pathfd);
		return -ENOTDIR;
	}
	if ((err = fsb_grant_terminal_refusal(&st)) < 0) {
		close(pathfd);
		return err;
	}
	/* ADDFD cannot pass an O_PATH fd (fget refuses one): the object is
	 * opened for reading instead, which the read judged allows. */
	if (flags & O_PATH)
		flags = O_RDONLY | (flags & O_DIRECTORY);
	flags &= ~(O_NOFOLLOW | O_CLOEXEC);
	fd = fsb_at_reopen_unblocked(pathfd, flags | O_NOCTTY);
	close(pathfd);
	return fd;
}

/*
 * Open the target's fd `tfd` again, as the kernel does for /proc/self/fd/N:
 * taken with pidfd_getfd (never wider than what the target holds), judged
 * by what it is. A pipe, socket or terminal (what fsbroker-init left open),
 * and a file the fd may write already, are the target's: reopened as asked
 * (O_TRUNC as well: ftruncate on the fd it holds does the same). Any other
 * file with a name is judged
 * by that name and, for a write, backed up first; a file without one is
 * the target's own only when no name is left anywhere (nlink 0).
 */
static int open_own_fd(struct call *c, int tfd)
{
	struct fsb_access acc;
	struct backup_arg ba = { c, &acc };
	bool writes = fsb_openflags_writes(c->flags);
	char named[PATH_MAX];
	struct stat st;
	int fd, rd, out = -EACCES, err;

	if ((fd = fsb_sv_target_fd(c->sv, c->req, tfd)) < 0)
		return fd == -EBADF ? -ENOENT : -EACCES;
	if (fstat(fd, &st) < 0)
		goto done;
	/* Not a file with a name to judge, or a write to a file the target
	 * may write already (its stdout sent to a file): nothing new is
	 * granted; the open file is reopened as asked. */
	if ((!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) ||
	    (writes && (fcntl(fd, F_GETFL) & O_ACCMODE) != O_RDONLY)) {
		out = fsb_at_reopen_unblocked(fd, (c->flags & ~(O_CREAT | O_EXCL | O_TRUNC |
								O_NOFOLLOW | O_CLOEXEC)) | O_NOCTTY);
		goto done;
	}
	if (fsb_sv_fd_path(fd, named, sizeof(named)) < 0) {
		if (st.st_nlink == 0)
			out = fsb_at_reopen_unblocked(fd, c->flags & ~(O_CREAT | O_EXCL |
								       O_NOFOLLOW | O_CLOEXEC));
		goto done;
	}
	fsb_sv_access_init(c->sv, c->req, &acc, writes ? FSB_OP_WRITE : FSB_OP_READ, named, -1);
	acc.given_resolved = true;
	snprintf(acc.res.path, sizeof(acc.res.path), "%s", named);
	acc.res.exists = true;
	acc.res.st = st;
	fsb_broker_decide(c->sv->b, &acc);
	if (acc.verdict.decision != FSB_ALLOW) {
		out = -(acc.errnum ? acc.errnum : EACCES);
		audit_call(c, &acc, -1, -out);
		goto done;
	}
	if (writes && S_ISREG(st.st_mode)) {
		rd = fsb_at_reopen(fd, O_RDONLY | O_NONBLOCK | O_NOCTTY);
		err = rd < 0 ? rd : backup_opened_file(rd, &st, &ba);
		if (rd >= 0)
			close(rd);
		if (err < 0) {
			out = err;
			goto done;
		}
	}
	out = fsb_at_reopen_unblocked(fd, c->flags & ~(O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC));
	audit_call(c, &acc, out, out < 0 ? -out : 0);
	if (out >= 0 && writes)
		fsb_backup_note_write_grant(c->sv->b, c->sv->scope.session,
					    acc.verdict.backup ? out : -1, &st);
done:
	close(fd);
	return out;
}

/* A read: judged as one, opened as the kernel would. */
static int read_for_target(struct call *c)
{
	struct fsb_access acc;
	int fd;

	fsb_stages_kind(FSB_CALL_READ_OPEN);
	if (c->flags & ~READ_FLAGS)
		return -EINVAL;
	fsb_sv_access_init(c->sv, c->req, &acc, FSB_OP_READ, c->path, c->rootfd);
	acc.strategy = (c->flags & O_NOFOLLOW) ? FSB_RESOLVE_THROUGH_PARENT : FSB_RESOLVE_EXISTING;
	fsb_broker_decide(c->sv->b, &acc);
	if (acc.verdict.decision != FSB_ALLOW || acc.errnum != 0) {
		int err = acc.errnum ? acc.errnum : EACCES;

		audit_call(c, &acc, -1, err);
		return -err;
	}
	if (!acc.res.exists)
		return -ENOENT;
	/* O_NOFOLLOW on a symlink: ELOOP, as the kernel (O_PATH aside). */
	if ((c->flags & O_NOFOLLOW) && S_ISLNK(acc.res.st.st_mode))
		return -ELOOP;
	fd = open_read(c->rootfd, &acc.res, c->flags);
	/* Reads are audited only when refused: a grant line per read would
	 * drown the log (as for reads through the text protocol). */
	return fd;
}

/* The audit line of a write-open (write_grant.h). */
static int audit_write(void *arg, const struct fsb_access *acc, const char *grant,
		       const char *error)
{
	struct call *c = arg;
	int err = acc->errnum ? acc->errnum : acc->verdict.decision != FSB_ALLOW ? EACCES : 0;
	struct fsb_audit_line l;

	fsb_access_audit_line(&l, acc, "supervisor", err);
	fsb_audit_line_int(&l, "pid", c->pid);
	fsb_audit_line_int(&l, "syscall", c->req->data.nr);
	fsb_audit_line_int(&l, "openFlags", c->flags);
	if (grant != NULL)
		fsb_audit_line_str(&l, "grant", grant);
	if (error != NULL)
		fsb_audit_line_str(&l, "error", error);
	return fsb_broker_audit_line(c->sv->b, c->sv->scope.session, &l);
}

/* Decide, back up, open. Returns the fd for the target, or -errno. */
static int open_for_target(struct call *c)
{
	struct fsb_access acc;
	struct fsb_write_grant g = {
		.b = c->sv->b,
		.session = c->sv->scope.session,
		.rootfd = c->rootfd,
		.flags = c->flags,
		.mode = c->mode & 07777,
		/* The target's umask was applied, the core's must not be. */
		.exact_mode = true,
		.backup_phase = "supervisor-backup",
		.open = grant_open_as_target,
		.audit = audit_write,
		.arg = c,
	};
	const char *why;

	if (!fsb_openflags_writes(c->flags))
		return read_for_target(c);
	/* No unnamed file: programs fall back to a named one on EOPNOTSUPP,
	 * as on a file system without O_TMPFILE. */
	if ((c->flags & O_TMPFILE) == O_TMPFILE)
		return -EOPNOTSUPP;
	if (fsb_openflags_check(c->flags, true, &why) < 0)
		return -EINVAL;
	fsb_sv_access_init(c->sv, c->req, &acc, FSB_OP_WRITE, c->path, c->rootfd);
	acc.strategy = (c->flags & O_NOFOLLOW) ||
				       (c->flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL)
			       ? FSB_RESOLVE_THROUGH_PARENT
			       : FSB_RESOLVE_EXISTING_OR_CREATABLE;
	fsb_write_grant(&g, &acc);
	if (!acc.res.exists) {
		fsb_stages_kind(FSB_CALL_CREATE);
		if (g.fd >= 0)
			fsb_sv_made_note(c->sv, &acc, g.fd, &g.st);
	}
	if (g.fd >= 0)
		return g.fd;
	return -(acc.errnum ? acc.errnum : EACCES);
}

/* The errno a write-open of "name/" gets: only the type of what is there
 * matters, looked up in the target's root; nothing is acted on. */
static int slash_open_error(int rootfd, const char *path, int flags)
{
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	struct stat st;
	long fd;
	int rc;

	/* In the target's root: a symlink cannot lead the look outside it. */
	fd = syscall(SYS_openat2, rootfd, path[1] ? path + 1 : ".", &how, sizeof(how));
	rc = fd < 0 ? -1 : fstat((int)fd, &st);
	if (fd >= 0)
		close((int)fd);
	if (rc < 0)
		return (flags & O_CREAT) ? -EISDIR : -ENOENT;
	return S_ISDIR(st.st_mode) ? -EISDIR : -ENOTDIR;
}

/* The arguments of the four calls: dirfd, path address, flags, mode. */
static int read_args(struct call *c, int *dirfd, unsigned long *addr)
{
	const unsigned long long *a = c->req->data.args;

	*dirfd = AT_FDCWD;
	switch (c->req->data.nr) {
	case __NR_open:
		*addr = a[0];
		c->flags = (int)a[1];
		c->mode = (mode_t)a[2];
		return 0;
	case __NR_creat:
		*addr = a[0];
		c->flags = O_CREAT | O_WRONLY | O_TRUNC;
		c->mode = (mode_t)a[1];
		return 0;
	case __NR_openat:
		*dirfd = (int)a[0];
		*addr = a[1];
		c->flags = (int)a[2];
		c->mode = (mode_t)a[3];
		return 0;
	}
	/* openat2 */
	struct open_how how = { 0 };

	*dirfd = (int)a[0];
	*addr = a[1];
	if (a[3] < sizeof(how))
		return -EINVAL;
	if (fsb_sv_read_bytes(c->pid, a[2], &how, sizeof(how)) < 0)
		return -EFAULT;
	/* Flags the kernel does not know (above bit 31) are EINVAL there. */
	if (how.flags >> 32)
		return -EINVAL;
	/* RESOLVE_* restrictions the core's own resolution does not promise
	 * to keep: refused rather than widened. */
	if (how.resolve != 0)
		return -EPERM;
	c->flags = (int)how.flags;
	c->mode = (mode_t)how.mode;
	return 0;
}

void fsb_sv_serve_open(struct fsb_supervisor *sv, const struct seccomp_notif *req)
{
	struct call c = { .sv = sv, .req = req, .pid = (pid_t)req->pid, .rootfd = -1 };
	char rel[PATH_MAX];
	unsigned long addr;
	int dirfd, err, fd, tfd;

	if ((err = read_args(&c, &dirfd, &addr)) < 0 ||
	    (err = fsb_sv_read_string(c.pid, addr, rel, sizeof(rel))) < 0 ||
	    (err = fsb_sv_absolute_path(c.pid, dirfd, rel, c.path, sizeof(c.path))) < 0) {
		fsb_sv_answer(sv, req, err);
		return;
	}
	if ((c.flags & O_CREAT) && fsb_sv_creds(sv, c.pid, &c.creds) == 0) {
		c.has_creds = true;
		c.mode &= ~c.creds.umask;
	}
	c.rootfd = fsb_sv_root(sv, c.pid);
	/* Everything read through the pid: is it still the process that
	 * trapped? If not, all of it may belong to another. */
	if (!fsb_sv_still_valid(sv, req)) {
		if (c.rootfd >= 0)
			close(c.rootfd);
		return;
	}
	if (c.rootfd < 0) {
		fsb_sv_answer(sv, req, -EACCES);
		return;
	}
	/* "name/" opened for writing: a directory there is EISDIR, as is a
	 * create; a file, ENOTDIR. Nothing is opened either way. */
	if (fsb_sv_ends_in_slash(rel) && fsb_openflags_writes(c.flags))
		fd = slash_open_error(c.rootfd, c.path, c.flags);
	else if ((tfd = fsb_sv_own_fd_name(c.path)) >= 0)
		fd = open_own_fd(&c, tfd);
	else
		fd = open_for_target(&c);
	close(c.rootfd);
	if (fd < 0)
		fsb_sv_answer(sv, req, fd);
	else
		fsb_sv_answer_fd(sv, req, fd, c.flags);
}
