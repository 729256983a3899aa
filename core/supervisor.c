/*
 * supervisor.c — serve the calls a run's seccomp filter routes to the core
 * (see supervisor.h). One notification, start to answer:
 *
 *   receive   on the loop, one SECCOMP_IOCTL_NOTIF_RECV per wake-up (the
 *             listener is level-triggered; a notification whose process
 *             died meanwhile answers ENOENT, never blocks);
 *   read      the path from the target's memory with process_vm_readv, its
 *             cwd or dirfd and its umask from /proc, its root pinned;
 *             then NOTIF_ID_VALID: the pid is still the process that
 *             trapped, so nothing read belongs to a successor;
 *   decide    in the target's view (its root), as any request;
 *   back up   and open, as a grant does (grant.c, modify_backup.c);
 *   answer    with the fd (SECCOMP_IOCTL_NOTIF_ADDFD + ADDFD_FLAG_SEND, one
 *             ioctl that is also the reply) or with an errno.
 *
 * Everything after "receive" runs on the thread pool as shared work.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "at.h"
#include "grant.h"
#include "hostop.h"
#include "log.h"
#include "modify_backup.h"
#include "openflags.h"
#include "supervisor.h"
#include "work.h"

#ifndef SECCOMP_ADDFD_FLAG_SEND
#define SECCOMP_ADDFD_FLAG_SEND (1UL << 1)	/* Linux 5.14; Debian 12's headers have it */
#endif

struct fsb_supervisor {
	struct fsb_broker *b;
	struct fsb_scope scope;
	int listener;
	uv_poll_t poll;
	bool stopping, poll_closed;
	unsigned long inflight;	/* notifications being served */
	void (*on_end)(struct fsb_supervisor *sv, void *arg);
	void *arg;
};

struct notif_job {
	struct fsb_work work;
	struct fsb_supervisor *sv;
	struct seccomp_notif req;
};

/* One call, as the target made it. */
struct call {
	struct fsb_supervisor *sv;
	const struct seccomp_notif *req;
	pid_t pid;
	int rootfd;			/* /proc/<pid>/root, O_PATH */
	char path[PATH_MAX];		/* absolute, in the target's view */
	int flags;
	mode_t mode;
};

/* ---- reading the target ------------------------------------------------- */

/* A NUL-terminated string at `addr` in the target. process_vm_readv never
 * splits one remote iovec across pages, so the first page's rest and what
 * follows are two. 0, or -EFAULT, -ENAMETOOLONG. */
static int read_string(pid_t pid, unsigned long addr, char *buf, size_t len)
{
	size_t first = 4096 - (addr & 4095);
	struct iovec local = { buf, len - 1 };
	struct iovec remote[2];
	ssize_t n;

	if (first > len - 1)
		first = len - 1;
	remote[0] = (struct iovec){ (void *)addr, first };
	remote[1] = (struct iovec){ (void *)(addr + first), len - 1 - first };
	n = process_vm_readv(pid, &local, 1, remote, remote[1].iov_len ? 2 : 1, 0);
	if (n <= 0)
		return -EFAULT;
	buf[n] = '\0';
	return strlen(buf) == (size_t)n ? -ENAMETOOLONG : 0;
}

static int read_bytes(pid_t pid, unsigned long addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)addr, len };

	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

/* The target's umask, from /proc/<pid>/status; 022 when it cannot be read. */
static mode_t target_umask(pid_t pid)
{
	char path[64], buf[2048], *p;
	mode_t mask = 022;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return mask;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n > 0) {
		buf[n] = '\0';
		if ((p = strstr(buf, "\nUmask:")) != NULL)
			mask = (mode_t)strtoul(p + 7, NULL, 8) & 0777;
	}
	return mask;
}

/* The absolute path the target named: relative ones joined to its cwd or
 * to the directory its dirfd is open on. */
static int absolute_path(pid_t pid, int dirfd, const char *rel, char *out, size_t len)
{
	char link[64], base[PATH_MAX];
	ssize_t n;

	if (rel[0] == '/') {
		snprintf(out, len, "%s", rel);
		return 0;
	}
	if (rel[0] == '\0')
		return -ENOENT;
	if (dirfd == AT_FDCWD)
		snprintf(link, sizeof(link), "/proc/%d/cwd", (int)pid);
	else
		snprintf(link, sizeof(link), "/proc/%d/fd/%d", (int)pid, dirfd);
	n = readlink(link, base, sizeof(base) - 1);
	if (n <= 0)
		return dirfd == AT_FDCWD ? -ENOENT : -EBADF;
	base[n] = '\0';
	if (base[0] != '/')
		return -ENOTDIR;	/* not a directory (a pipe, a socket) */
	/* A directory removed since: its name is not it any more, and the
	 * kernel answers ENOENT for a name beneath it. */
	if (n > 10 && strcmp(base + n - 10, " (deleted)") == 0)
		return -ENOENT;
	if ((size_t)snprintf(out, len, "%s/%s", strcmp(base, "/") == 0 ? "" : base, rel) >= len)
		return -ENAMETOOLONG;
	return 0;
}

/* ---- the open family ---------------------------------------------------- */

static void audit_call(struct call *c, const struct fsb_access *acc, int fd, int err)
{
	cJSON *rec = fsb_access_audit_record(acc, "supervisor");

	cJSON_AddNumberToObject(rec, "pid", c->pid);
	cJSON_AddNumberToObject(rec, "syscall", c->req->data.nr);
	cJSON_AddNumberToObject(rec, "openFlags", c->flags);
	if (fd >= 0)
		cJSON_AddStringToObject(rec, "grant", "fd");
	if (err != 0 && !cJSON_HasObjectItem(rec, "errno"))
		cJSON_AddStringToObject(rec, "errno", fsb_errno_name(err));
	fsb_broker_audit(c->sv->b, c->sv->scope.session, rec);
}

struct backup_arg {
	struct call *c;
	const struct fsb_access *acc;
};

static int backup_opened_file(int rdfd, const struct stat *st, void *arg)
{
	struct backup_arg *a = arg;
	struct fsb_backup_outcome out;

	return fsb_backup_file(a->c->sv->b, a->c->sv->scope.session, a->acc, rdfd, st,
			       a->c->flags, "supervisor-backup", &out);
}

/*
 * Decide, back up, open. Returns the fd for the target, or -errno to answer
 * with. Writes only: the filter routes read opens here only in
 * reads = "broker" mode, which comes later.
 */
static int open_for_target(struct call *c)
{
	struct fsb_broker *b = c->sv->b;
	struct fsb_access acc;
	struct backup_arg ba = { c, &acc };
	const char *why;
	struct stat st;
	int fd = -1, err;

	if (fsb_openflags_check(c->flags, true, &why) < 0)
		return -EINVAL;
	memset(&acc, 0, sizeof(acc));
	acc.op = fsb_openflags_writes(c->flags) ? FSB_OP_WRITE : FSB_OP_READ;
	acc.requested = c->path;
	acc.strategy = (c->flags & O_NOFOLLOW) ||
				       (c->flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL)
			       ? FSB_RESOLVE_THROUGH_PARENT
			       : FSB_RESOLVE_EXISTING_OR_CREATABLE;
	acc.session = c->sv->scope.session;
	acc.tool_call = c->sv->scope.tool_call;
	acc.pid = c->pid;
	acc.uid = getuid();
	acc.has_view = true;
	acc.view_fd = c->rootfd;
	fsb_broker_decide(b, &acc);
	if (acc.verdict.decision != FSB_ALLOW || acc.errnum != 0) {
		err = acc.errnum ? acc.errnum : EACCES;
		audit_call(c, &acc, -1, err);
		return -err;
	}
	/* O_TRUNC after the audit line, as for a grant (serve_text.c). */
	fd = fsb_grant_open(c->rootfd, &acc.res, c->flags & ~O_TRUNC, c->mode & 07777,
			    backup_opened_file, &ba);
	if (fd >= 0 && !acc.res.exists && fsb_backup_note_created(b, c->sv->scope.session,
								  &acc, c->flags) < 0) {
		fsb_grant_undo_create(c->rootfd, &acc.res, fd);
		close(fd);
		fd = -EIO;
	}
	audit_call(c, &acc, fd, fd < 0 ? -fd : 0);
	if (fd < 0)
		return fd;
	/* The core's own umask applied on top of the target's: a new file
	 * gets exactly the mode the target's call would have given it. */
	if (!acc.res.exists && (c->flags & O_CREAT))
		fchmod(fd, c->mode & 07777);
	if ((c->flags & O_TRUNC) && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    ftruncate(fd, 0) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	if (fstat(fd, &st) == 0)
		fsb_backup_note_write_grant(b, c->sv->scope.session,
					    acc.verdict.backup ? fd : -1, st.st_dev, st.st_ino);
	return fd;
}

/* The errno a write-open of "name/" gets: only the type of what is there
 * matters, looked up in the target's root; nothing is acted on. */
static int slash_open_error(pid_t pid, const char *path, int flags)
{
	char root[64];
	struct stat st;
	int rootfd, rc;

	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	long fd;

	snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
	if ((rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -EACCES;
	/* In the target's root: a symlink cannot lead the look outside it. */
	fd = syscall(SYS_openat2, rootfd, path[1] ? path + 1 : ".", &how, sizeof(how));
	close(rootfd);
	rc = fd < 0 ? -1 : fstat((int)fd, &st);
	if (fd >= 0)
		close((int)fd);
	if (rc < 0)
		return (flags & O_CREAT) ? -EISDIR : -ENOENT;
	return S_ISDIR(st.st_mode) ? -EISDIR : -ENOTDIR;
}

/* ---- one notification --------------------------------------------------- */

static void answer(struct fsb_supervisor *sv, const struct seccomp_notif *req, int err)
{
	struct seccomp_notif_resp resp = { .id = req->id, .error = err };

	/* ENOENT: the target is gone; nobody waits for the answer. */
	if (ioctl(sv->listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0 && errno != ENOENT)
		fsb_log_limited(FSB_LOG_WARN, "cannot answer pid %d: %s", (int)req->pid,
				strerror(errno));
}

static void answer_fd(struct fsb_supervisor *sv, const struct seccomp_notif *req, int fd,
		      int flags)
{
	struct seccomp_notif_addfd add = {
		.id = req->id,
		.flags = SECCOMP_ADDFD_FLAG_SEND,
		.srcfd = (unsigned)fd,
		.newfd_flags = (unsigned)(flags & O_CLOEXEC),
	};

	/* On success this is the answer: the target's call returns the new fd. */
	if (ioctl(sv->listener, SECCOMP_IOCTL_NOTIF_ADDFD, &add) < 0 && errno != ENOENT)
		answer(sv, req, -errno);
	close(fd);
}

/* ---- calls on an fd the target holds --------------------------------------- */

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL	/* Linux 6.9: a pidfd for a thread, which notif.pid is */
#endif

/* A duplicate of fd `tfd` of thread `pid`: the very open file, never wider
 * access than the target has. -errno when it cannot be taken. */
static int target_fd(pid_t pid, int tfd)
{
	long pidfd = syscall(SYS_pidfd_open, pid, PIDFD_THREAD), fd;

	if (pidfd < 0 && errno == EINVAL)
		pidfd = syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0)
		return -errno;
	fd = syscall(SYS_pidfd_getfd, (int)pidfd, tfd, 0);
	close((int)pidfd);
	return fd < 0 ? -errno : (int)fd;
}

/*
 * fchmod and fchown (sed -i keeps the mode and owner of what it replaces
 * this way): the target's own fd, taken with pidfd_getfd, judged by the
 * name its file has now and backed up as chmod is. fchown is performed
 * only when it changes nothing (the same owner, as a user's own files
 * have): giving a file away is not ours to do.
 */
static void serve_fd_call(struct fsb_supervisor *sv, const struct seccomp_notif *req)
{
	const unsigned long long *a = req->data.args;
	pid_t pid = (pid_t)req->pid;
	struct fsb_backup_outcome out;
	char proc[32], path[PATH_MAX];
	struct fsb_access acc;
	struct stat st;
	int fd, rd, err = 0;
	ssize_t n;

	fd = target_fd(pid, (int)a[0]);
	if (ioctl(sv->listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) < 0) {
		if (fd >= 0)
			close(fd);
		return;
	}
	if (fd < 0) {
		answer(sv, req, fd == -EBADF ? -EBADF : -EPERM);
		return;
	}
	if (fstat(fd, &st) < 0) {
		err = -errno;
		goto out;
	}
	if (req->data.nr == __NR_fchown) {
		uid_t uid = (uid_t)a[1];
		gid_t gid = (gid_t)a[2];

		err = (uid == (uid_t)-1 || uid == st.st_uid) && (gid == (gid_t)-1 || gid == st.st_gid)
			      ? 0 : -EPERM;
		goto out;
	}
	n = readlink(fsb_at_fd_path(fd, proc, sizeof(proc)), path, sizeof(path) - 1);
	if (n <= 0) {
		err = -EPERM;
		goto out;
	}
	path[n] = '\0';
	/* No name (removed, or not a file system object): no file of anyone's
	 * changes, but nothing is judged either: refused. */
	if (path[0] != '/' || (n > 10 && strcmp(path + n - 10, " (deleted)") == 0)) {
		err = -EPERM;
		goto out;
	}
	memset(&acc, 0, sizeof(acc));
	acc.op = FSB_OP_CHMOD;
	acc.requested = path;
	acc.given_resolved = true;
	snprintf(acc.res.path, sizeof(acc.res.path), "%s", path);
	acc.res.exists = true;
	acc.res.st = st;
	acc.session = sv->scope.session;
	acc.tool_call = sv->scope.tool_call;
	acc.pid = pid;
	acc.uid = getuid();
	fsb_broker_decide(sv->b, &acc);
	if (acc.verdict.decision != FSB_ALLOW) {
		err = -(acc.errnum ? acc.errnum : EACCES);
		goto audit;
	}
	if (S_ISREG(st.st_mode)) {
		rd = fsb_at_reopen(fd, O_RDONLY | O_NONBLOCK | O_NOCTTY);
		err = rd < 0 ? rd
			     : fsb_backup_file(sv->b, sv->scope.session, &acc, rd, &st, 0,
					       "supervisor-backup", &out);
		if (rd >= 0)
			close(rd);
		if (err < 0)
			goto audit;
	}
	if (fchmod(fd, (mode_t)a[1] & 07777) < 0)
		err = -errno;
audit:
	{
		cJSON *rec = fsb_access_audit_record(&acc, "supervisor");

		cJSON_AddNumberToObject(rec, "pid", pid);
		cJSON_AddNumberToObject(rec, "syscall", req->data.nr);
		if (err != 0 && !cJSON_HasObjectItem(rec, "errno"))
			cJSON_AddStringToObject(rec, "errno", fsb_errno_name(-err));
		fsb_broker_audit(sv->b, sv->scope.session, rec);
	}
out:
	close(fd);
	answer(sv, req, err);
}

/* ---- calls that change names: host operations ---------------------------- */

/* The absolute path of argument `addr` relative to `dirfd`, in `out`. */
static bool ends_in_slash(const char *p)
{
	size_t n = strlen(p);

	return n > 1 && p[n - 1] == '/';
}

/* `*slash` (may be NULL) is set when the name ends in '/': the kernel then
 * wants a directory there, which the lexical form the policy judges no
 * longer shows. */
static int target_path_slash(pid_t pid, int dirfd, unsigned long addr, char *out, size_t len,
			     bool *slash)
{
	char rel[PATH_MAX];
	int err = read_string(pid, addr, rel, sizeof(rel));

	if (err == 0 && slash != NULL)
		*slash = *slash || ends_in_slash(rel);
	return err < 0 ? err : absolute_path(pid, dirfd, rel, out, len);
}

static int target_path(pid_t pid, int dirfd, unsigned long addr, char *out, size_t len)
{
	return target_path_slash(pid, dirfd, addr, out, len, NULL);
}

/*
 * unlink, rmdir, rename, mkdir, symlink, link, chmod: performed as the host
 * operation of the same meaning (hostop.c), which judges, backs up and acts
 * race-safe in the target's view. Run alone, as every host operation
 * (work.h). What has no host operation yet is refused: EPERM, never
 * CONTINUE.
 */
static void serve_change(struct fsb_supervisor *sv, const struct seccomp_notif *req)
{
	const unsigned long long *a = req->data.args;
	pid_t pid = (pid_t)req->pid;
	struct fsb_hostop_client who = {
		.session = sv->scope.session, .tool_call = sv->scope.tool_call,
		.pid = pid, .uid = getuid(), .view_fd = -1,
	};
	struct fsb_hostop_req hr;
	char p1[PATH_MAX], p2[PATH_MAX], target[PATH_MAX], root[64];
	int err = 0, rootfd;
	unsigned flags = 0;

	memset(&hr, 0, sizeof(hr));
	switch (req->data.nr) {
	case __NR_unlink:
	case __NR_rmdir:
	case __NR_unlinkat:
		flags = req->data.nr == __NR_unlinkat ? (unsigned)a[2] : 0;
		if (flags & ~(unsigned)AT_REMOVEDIR) {
			answer(sv, req, -EINVAL);
			return;
		}
		err = req->data.nr == __NR_unlinkat
			      ? target_path_slash(pid, (int)a[0], a[1], p1, sizeof(p1), &who.must_be_dir)
			      : target_path_slash(pid, AT_FDCWD, a[0], p1, sizeof(p1), &who.must_be_dir);
		hr.op = FSB_HOSTOP_DELETE;
		hr.path = p1;
		if (req->data.nr == __NR_rmdir || (flags & AT_REMOVEDIR))
			who.delete_dir_only = true;
		else
			who.delete_file_only = true;
		break;
	case __NR_rename:
	case __NR_renameat:
	case __NR_renameat2:
		if (req->data.nr == __NR_rename) {
			err = target_path_slash(pid, AT_FDCWD, a[0], p1, sizeof(p1), &who.must_be_dir);
			if (err == 0)
				err = target_path_slash(pid, AT_FDCWD, a[1], p2, sizeof(p2),
							&who.must_be_dir);
		} else {
			err = target_path_slash(pid, (int)a[0], a[1], p1, sizeof(p1), &who.must_be_dir);
			if (err == 0)
				err = target_path_slash(pid, (int)a[2], a[3], p2, sizeof(p2),
							&who.must_be_dir);
			flags = req->data.nr == __NR_renameat2 ? (unsigned)a[4] : 0;
		}
		/* RENAME_EXCHANGE and WHITEOUT are not emulated yet. */
		if (err == 0 && (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT)))
			err = -EINVAL;
		else if (err == 0 && (flags & ~RENAME_NOREPLACE))
			err = -EPERM;
		who.rename_noreplace = flags & RENAME_NOREPLACE;
		hr.op = FSB_HOSTOP_RENAME;
		hr.from = p1;
		hr.to = p2;
		break;
	case __NR_mkdir:
	case __NR_mkdirat:
		err = req->data.nr == __NR_mkdir ? target_path(pid, AT_FDCWD, a[0], p1, sizeof(p1))
						 : target_path(pid, (int)a[0], a[1], p1, sizeof(p1));
		hr.op = FSB_HOSTOP_MKDIR;
		hr.path = p1;
		hr.has_mode = true;
		hr.mode = (mode_t)(req->data.nr == __NR_mkdir ? a[1] : a[2]) & 07777 &
			  ~target_umask(pid);
		who.exact_mode = true;
		break;
	case __NR_symlink:
	case __NR_symlinkat:
		/* The link's content is written as given, never resolved. */
		err = read_string(pid, a[0], target, sizeof(target));
		if (err == 0)
			err = req->data.nr == __NR_symlink
				      ? target_path(pid, AT_FDCWD, a[1], p2, sizeof(p2))
				      : target_path(pid, (int)a[1], a[2], p2, sizeof(p2));
		hr.op = FSB_HOSTOP_LINK;
		hr.symbolic = true;
		hr.from = target;
		hr.to = p2;
		break;
	case __NR_link:
	case __NR_linkat:
		if (req->data.nr == __NR_link) {
			err = target_path(pid, AT_FDCWD, a[0], p1, sizeof(p1));
			if (err == 0)
				err = target_path(pid, AT_FDCWD, a[1], p2, sizeof(p2));
		} else {
			/* AT_EMPTY_PATH names an fd (an O_TMPFILE being published). */
			err = (a[4] & AT_EMPTY_PATH) ? -EPERM
						      : target_path(pid, (int)a[0], a[1], p1, sizeof(p1));
			if (err == 0)
				err = target_path(pid, (int)a[2], a[3], p2, sizeof(p2));
		}
		hr.op = FSB_HOSTOP_LINK;
		hr.from = p1;
		hr.to = p2;
		break;
	case __NR_fchmod:
	case __NR_fchown:
		serve_fd_call(sv, req);
		return;
	case __NR_setxattr:
	case __NR_lsetxattr:
	case __NR_fsetxattr:
	case __NR_removexattr:
	case __NR_lremovexattr:
	case __NR_fremovexattr:
		/* Not emulated yet: answered as a file system without xattrs
		 * would, which programs that copy ACLs (sed -i, cp -p) take in
		 * their stride. Nothing changes. */
		answer(sv, req, -EOPNOTSUPP);
		return;
	case __NR_chmod:
	case __NR_fchmodat:
		err = req->data.nr == __NR_chmod ? target_path(pid, AT_FDCWD, a[0], p1, sizeof(p1))
						 : target_path(pid, (int)a[0], a[1], p1, sizeof(p1));
		hr.op = FSB_HOSTOP_CHMOD;
		hr.path = p1;
		hr.has_mode = true;
		hr.mode = (mode_t)(req->data.nr == __NR_chmod ? a[1] : a[2]) & 07777;
		break;
	default:
		fsb_log_limited(FSB_LOG_WARN, "pid %d: system call %d is not emulated yet; "
				"refused (EPERM)", (int)pid, (int)req->data.nr);
		answer(sv, req, -EPERM);
		return;
	}
	if (err < 0) {
		answer(sv, req, err);
		return;
	}
	snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
	rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (ioctl(sv->listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) < 0) {
		if (rootfd >= 0)
			close(rootfd);
		return;
	}
	if (rootfd < 0) {
		answer(sv, req, -EACCES);
		return;
	}
	who.view_fd = rootfd;
	err = fsb_hostop_perform(sv->b, &who, &hr);
	close(rootfd);
	answer(sv, req, err);
}

/* The calls served beside others; the rest run alone (work.h). */
static bool is_open_call(int nr)
{
	return nr == __NR_open || nr == __NR_openat || nr == __NR_creat || nr == __NR_openat2;
}

static void serve(struct fsb_supervisor *sv, const struct seccomp_notif *req)
{
	const unsigned long long *a = req->data.args;
	struct call c = { .sv = sv, .req = req, .pid = (pid_t)req->pid, .rootfd = -1 };
	char rel[PATH_MAX], root[64];
	int dirfd = AT_FDCWD, err, fd;
	unsigned long addr;

	switch (req->data.nr) {
	case __NR_open:
		addr = a[0];
		c.flags = (int)a[1];
		c.mode = (mode_t)a[2];
		break;
	case __NR_creat:
		addr = a[0];
		c.flags = O_CREAT | O_WRONLY | O_TRUNC;
		c.mode = (mode_t)a[1];
		break;
	case __NR_openat:
		dirfd = (int)a[0];
		addr = a[1];
		c.flags = (int)a[2];
		c.mode = (mode_t)a[3];
		break;
	case __NR_openat2: {
		struct open_how how = { 0 };

		dirfd = (int)a[0];
		addr = a[1];
		if (a[3] < sizeof(how)) {
			answer(sv, req, -EINVAL);
			return;
		}
		if (read_bytes(c.pid, a[2], &how, sizeof(how)) < 0) {
			answer(sv, req, -EFAULT);
			return;
		}
		/* Flags the kernel does not know (above bit 31) are EINVAL there. */
		if (how.flags >> 32) {
			answer(sv, req, -EINVAL);
			return;
		}
		/* RESOLVE_* restrictions the core's own resolution does not
		 * promise to keep: refused rather than widened. */
		if (how.resolve != 0) {
			answer(sv, req, -EPERM);
			return;
		}
		c.flags = (int)how.flags;
		c.mode = (mode_t)how.mode;
		break;
	}
	default:
		serve_change(sv, req);
		return;
	}
	if ((err = read_string(c.pid, addr, rel, sizeof(rel))) < 0 ||
	    (err = absolute_path(c.pid, dirfd, rel, c.path, sizeof(c.path))) < 0) {
		answer(sv, req, err);
		return;
	}
	/* "name/" opened for writing: a directory there is EISDIR, as is a
	 * create; a file, ENOTDIR. Nothing is opened either way. */
	if (ends_in_slash(rel)) {
		answer(sv, req, slash_open_error(c.pid, c.path, c.flags));
		return;
	}
	if (c.flags & O_CREAT)
		c.mode &= ~target_umask(c.pid);
	snprintf(root, sizeof(root), "/proc/%d/root", (int)c.pid);
	c.rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	/* Everything read through the pid: is it still the process that
	 * trapped? If not, all of it may belong to another. */
	if (ioctl(sv->listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &req->id) < 0) {
		if (c.rootfd >= 0)
			close(c.rootfd);
		return;
	}
	if (c.rootfd < 0) {
		answer(sv, req, -EACCES);
		return;
	}
	fd = open_for_target(&c);
	close(c.rootfd);
	if (fd < 0)
		answer(sv, req, fd);
	else
		answer_fd(sv, req, fd, c.flags);
}

/* ---- lifetime ----------------------------------------------------------- */

static void maybe_end(struct fsb_supervisor *sv)
{
	if (!sv->stopping || !sv->poll_closed || sv->inflight > 0)
		return;
	if (sv->on_end != NULL)
		sv->on_end(sv, sv->arg);
	close(sv->listener);
	free(sv);
}

static void on_poll_closed(uv_handle_t *h)
{
	struct fsb_supervisor *sv = h->data;

	sv->poll_closed = true;
	maybe_end(sv);
}

void fsb_supervisor_stop(struct fsb_supervisor *sv)
{
	if (sv->stopping)
		return;
	sv->stopping = true;
	uv_close((uv_handle_t *)&sv->poll, on_poll_closed);
}

void fsb_supervisor_stop_for(struct fsb_supervisor *sv)
{
	sv->on_end = NULL;
	fsb_supervisor_stop(sv);
}

static void job_run(struct fsb_work *w)
{
	struct notif_job *j = (struct notif_job *)w;

	serve(j->sv, &j->req);
}

static void job_done(struct fsb_work *w)
{
	struct notif_job *j = (struct notif_job *)w;
	struct fsb_supervisor *sv = j->sv;

	free(j);
	sv->inflight--;
	maybe_end(sv);
}

static void on_listener(uv_poll_t *h, int status, int events)
{
	struct fsb_supervisor *sv = h->data;
	struct notif_job *j;

	struct pollfd p = { .fd = sv->listener, .events = POLLIN };

	(void)events;
	/* NOTIF_RECV blocks while nothing is pending, and libuv reports a hang
	 * up as readable: only a notification waiting (POLLIN) is received.
	 * POLLHUP without it: every filtered process is gone. */
	if (status < 0 || poll(&p, 1, 0) < 0 || !(p.revents & POLLIN)) {
		if (status < 0 || (p.revents & (POLLHUP | POLLERR | POLLNVAL)))
			fsb_supervisor_stop(sv);
		return;
	}
	if ((j = calloc(1, sizeof(*j))) == NULL)
		return;	/* level-triggered: tried again on the next turn */
	if (ioctl(sv->listener, SECCOMP_IOCTL_NOTIF_RECV, &j->req) < 0) {
		free(j);
		/* ENOENT: its process died between the wake-up and now. */
		if (errno != ENOENT && errno != EINTR)
			fsb_supervisor_stop(sv);
		return;
	}
	j->sv = sv;
	j->work.kind = is_open_call(j->req.data.nr) ? FSB_WORK_SHARED : FSB_WORK_EXCLUSIVE;
	j->work.run = job_run;
	j->work.done = job_done;
	sv->inflight++;
	fsb_work_submit(&sv->b->work, &j->work);
}

int fsb_supervisor_start(struct fsb_broker *b, int listener, const struct fsb_scope *scope,
			 void (*on_end)(struct fsb_supervisor *sv, void *arg), void *arg,
			 struct fsb_supervisor **out)
{
	struct fsb_supervisor *sv = calloc(1, sizeof(*sv));
	int rc;

	if (sv == NULL)
		return -ENOMEM;
	sv->b = b;
	sv->scope = *scope;
	sv->listener = listener;
	sv->on_end = on_end;
	sv->arg = arg;
	if ((rc = uv_poll_init(b->loop, &sv->poll, listener)) < 0) {
		free(sv);
		return rc;
	}
	sv->poll.data = sv;
	uv_poll_start(&sv->poll, UV_READABLE, on_listener);
	*out = sv;
	return 0;
}
