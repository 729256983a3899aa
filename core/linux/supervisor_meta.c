/*
 * supervisor_meta.c — calls that change a file in place, under the
 * supervisor (see supervisor_call.h):
 *
 *   truncate                      judged as a write, backed up, truncated;
 *   utime, utimes, futimesat,
 *   utimensat (also on an fd)     judged as utimes, backed up, the times
 *                                 the target gave (UTIME_NOW, UTIME_OMIT
 *                                 and AT_SYMLINK_NOFOLLOW honoured);
 *   chown, lchown, fchown,
 *   fchownat                      the same owner: 0, nothing changes; a
 *                                 real change judged as chown, backed up,
 *                                 performed (the kernel decides whether
 *                                 the core's uid may, and its errno is
 *                                 the answer);
 *   fchmod                        on the target's own fd, judged as chmod;
 *   chmod, fchmodat of the
 *   target's own fd by name       (/proc/self/fd/N: glibc's fchmodat with
 *                                 AT_SYMLINK_NOFOLLOW) the same; any other
 *                                 name is a host chmod (supervisor_names.c);
 *   mknod, mknodat                a FIFO, a regular file or a socket made
 *                                 after judging a create; devices EPERM;
 *   xattr setters and removers    EOPNOTSUPP, as a file system without
 *                                 xattrs answers; nothing changes;
 *   ioctl(FS_IOC_SETFLAGS,
 *   FS_IOC_FSSETXATTR),
 *   file_setattr                  EPERM: inode flags are not ours to set.
 *
 * A name that is the target's own fd (/proc/self/fd/N, /dev/fd/N) reaches
 * the file that fd holds, as the kernel's magic link does, and is judged by
 * that file's name.
 *
 * Every change here is on one object: it is judged in the target's view,
 * reached with O_PATH and no symlink followed since (dev/ino checked),
 * journaled with its prior state (mode, owner, times; the content only for
 * a truncate, the one call here that changes bytes) so that a restore puts
 * it back, audited, then changed through that pinned fd.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include "at.h"
#include "call_stages.h"
#include "log.h"
#include "modify_backup.h"
#include "supervisor_call.h"

#ifndef __NR_file_setattr
#define __NR_file_setattr 469
#endif
#ifndef __NR_fchmodat2
#define __NR_fchmodat2 452
#endif
#ifndef __NR_setxattrat
#define __NR_setxattrat 463
#endif
#ifndef __NR_removexattrat
#define __NR_removexattrat 466
#endif

/* One object a call changes. */
struct obj {
	struct fsb_supervisor *sv;
	const struct seccomp_notif *req;
	pid_t pid;
	int rootfd;		/* the target's "/" (-1 for an fd call) */
	int fd;			/* O_PATH on the object, or the target's own fd */
	struct stat st;
	char path[PATH_MAX];	/* as requested, absolute */
	char named[PATH_MAX];	/* an fd call: the name its file has */
	struct fsb_access acc;
};

static void obj_close(struct obj *o)
{
	if (o->fd >= 0)
		close(o->fd);
	if (o->rootfd >= 0)
		close(o->rootfd);
	o->fd = o->rootfd = -1;
}

/* The target's root, read after the path and checked with NOTIF_ID_VALID:
 * 0, or -ESRCH when the target is gone (nothing to answer). */
static int obj_root(struct obj *o)
{
	o->rootfd = fsb_sv_root(o->sv, o->pid);
	if (!fsb_sv_still_valid(o->sv, o->req))
		return -ESRCH;
	return o->rootfd < 0 ? -EACCES : 0;
}

/*
 * Whether the last component of `path` is ".", ".." or empty (a trailing
 * slash): it names a directory that is never a symlink itself, so the
 * kernel follows it even with AT_SYMLINK_NOFOLLOW (rsync sets the times of
 * "dst/." that way).
 */
static bool ends_in_a_directory_name(const char *path)
{
	const char *last = strrchr(path, '/');

	last = last != NULL ? last + 1 : path;
	return last[0] == '\0' || strcmp(last, ".") == 0 || strcmp(last, "..") == 0;
}

/*
 * Judge `o->path` as `op` and reach what it names: followed to the end,
 * or the last name itself with `nofollow`. 0, or -errno (a refusal is
 * audited here).
 */
static int judge_path(struct obj *o, enum fsb_op op, bool nofollow)
{
	struct fsb_access *a = &o->acc;
	int fd;

	if (nofollow && ends_in_a_directory_name(o->path))
		nofollow = false;

	fsb_sv_access_init(o->sv, o->req, a, op, o->path, o->rootfd);
	a->strategy = nofollow ? FSB_RESOLVE_THROUGH_PARENT : FSB_RESOLVE_EXISTING;
	fsb_broker_decide(o->sv->b, a);
	if (a->verdict.decision != FSB_ALLOW) {
		int err = -(a->errnum ? a->errnum : EACCES);

		fsb_sv_audit(o->sv, o->req, a, err);
		return err;
	}
	if (a->errnum != 0)
		return -a->errnum;
	if (!a->res.exists)
		return -ENOENT;
	fd = fsb_at_open(o->rootfd, a->res.path, O_PATH | O_NOFOLLOW, 0);
	if (fd < 0)
		return fd == -ELOOP ? -EAGAIN : fd;
	o->fd = fd;
	if (fstat(fd, &o->st) < 0)
		return -errno;
	if (o->st.st_dev != a->res.st.st_dev || o->st.st_ino != a->res.st.st_ino)
		return -EAGAIN;	/* replaced since it was judged */
	return 0;
}

/* Take the target's fd `tfd` and judge the name its file has as `op`. */
static int judge_fd(struct obj *o, enum fsb_op op, int tfd)
{
	struct fsb_access *a = &o->acc;
	int fd = fsb_sv_target_fd(o->sv, o->req, tfd);
	struct fsb_verdict verdict;
	bool made;

	if (!fsb_sv_still_valid(o->sv, o->req)) {
		if (fd >= 0)
			close(fd);
		return -ESRCH;
	}
	if (fd < 0)
		return fd == -EBADF ? -EBADF : -EPERM;
	o->fd = fd;
	if (fstat(fd, &o->st) < 0)
		return -errno;
	/* A file this supervisor made, as it was made: the name it was made
	 * at and the create's verdict (supervisor_made.c). */
	made = fsb_sv_made_here(o->sv, fd, &o->st, o->named, sizeof(o->named), &verdict);
	/* No name (removed, a pipe, a socket): nothing of anyone's is
	 * judged, so nothing changes. */
	if (!made && fsb_sv_fd_path(fd, o->named, sizeof(o->named)) < 0)
		return -EPERM;
	fsb_sv_access_init(o->sv, o->req, a, op, o->named, -1);
	a->given_resolved = true;
	snprintf(a->res.path, sizeof(a->res.path), "%s", o->named);
	a->res.exists = true;
	a->res.st = o->st;
	if (made) {
		a->verdict = verdict;
		return 0;
	}
	fsb_broker_decide(o->sv->b, a);
	if (a->verdict.decision != FSB_ALLOW) {
		int err = -(a->errnum ? a->errnum : EACCES);

		fsb_sv_audit(o->sv, o->req, a, err);
		return err;
	}
	return 0;
}

/*
 * Judge `o->path` as `op`: the file of the target's own fd when the path
 * names one and is followed, else the path in the target's view.
 */
static int judge_named(struct obj *o, enum fsb_op op, bool nofollow)
{
	int tfd = nofollow ? -1 : fsb_sv_own_fd_name(o->path), err;

	if (tfd >= 0)
		return judge_fd(o, op, tfd);
	if ((err = obj_root(o)) < 0)
		return err;
	return judge_path(o, op, nofollow);
}

/*
 * Journal the object's state as it is (mode, owner, times, and, for a
 * truncate, the content of a regular file the pack backs up: a change of
 * metadata alone copies nothing) and write the audit line: no line,
 * no change. 0 or -errno.
 */
static int back_up(struct obj *o)
{
	struct fsb_access *a = &o->acc;
	struct fsb_backup_result res;
	struct fsb_backup_outcome out;
	char target[PATH_MAX], why[256];
	struct fsb_backup_entry e = {
		.op = a->op,
		.path = a->requested,
		.resolved = a->res.path,
		.prior = &o->st,
		.fd = -1,
		.skip_content = !a->verdict.backup,
		.metadata_only = fsb_op_metadata_only(a->op),
		.in_place = true,
		.tool_call = o->sv->scope.tool_call,
		.has_view = a->has_view,
		.view_fd = a->view_fd,
	};
	enum fsb_stage was = fsb_stage_push(FSB_STAGE_BACKUP);
	int rc;

	if (S_ISREG(o->st.st_mode) && a->verdict.backup && !e.metadata_only &&
	    (e.fd = fsb_at_reopen(o->fd, O_RDONLY | O_NONBLOCK | O_NOCTTY)) < 0) {
		fsb_stage_pop(was);
		return e.fd;
	}
	if (S_ISLNK(o->st.st_mode)) {
		ssize_t n = readlinkat(o->fd, "", target, sizeof(target) - 1);

		if (n < 0) {
			fsb_stage_pop(was);
			return -EAGAIN;
		}
		target[n] = '\0';
		e.link_target = target;
	}
	memset(&out, 0, sizeof(out));
	rc = fsb_backup_entry(o->sv->b, o->sv->scope.session, &e, &res, &out);
	if (e.fd >= 0)
		close(e.fd);
	if (rc == 0 && out.approved_too_large)
		rc = fsb_backup_take_too_large(o->sv->b, o->sv->scope.session, a->res.path,
					       o->st.st_dev, o->st.st_ino) < 0 ? -EAGAIN : 0;
	if (rc == 0)
		rc = fsb_backup_sync(o->sv->b, o->sv->scope.session, why, sizeof(why));
	fsb_stage_pop(was);
	if (rc < 0) {
		/* Too large and the pack asks: refused like any ask. */
		if (out.block_id[0])
			snprintf(a->block_id, sizeof(a->block_id), "%s", out.block_id);
		fsb_sv_audit(o->sv, o->req, a, rc == -EFBIG ? -EACCES : rc);
		return rc == -EFBIG ? -EACCES : rc;
	}
	return fsb_sv_audit(o->sv, o->req, a, 0) < 0 ? -EIO : 0;
}

/* ---- truncate ----------------------------------------------------------- */

static int do_truncate(struct obj *o)
{
	const unsigned long long *a = o->req->data.args;
	off_t len = (off_t)a[1];
	int err, wfd;

	if (len < 0)
		return -EINVAL;
	if ((err = fsb_sv_target_path(o->pid, AT_FDCWD, a[0], o->path, sizeof(o->path), NULL)) < 0 ||
	    (err = obj_root(o)) < 0 || (err = judge_path(o, FSB_OP_WRITE, false)) < 0)
		return err;
	if (S_ISDIR(o->st.st_mode))
		return -EISDIR;
	if (!S_ISREG(o->st.st_mode))
		return -EINVAL;
	if ((err = back_up(o)) < 0)
		return err;
	if ((wfd = fsb_at_reopen(o->fd, O_WRONLY | O_NONBLOCK | O_NOCTTY)) < 0)
		return wfd;
	fsb_stage_push(FSB_STAGE_PERFORM);
	err = ftruncate(wfd, len) < 0 ? -errno : 0;
	close(wfd);
	return err;
}

/* ---- times -------------------------------------------------------------- */

static bool valid_nsec(long nsec)
{
	return (nsec >= 0 && nsec < 1000000000L) || nsec == UTIME_NOW || nsec == UTIME_OMIT;
}

/* The two times the call gave, as utimensat takes them; *now when it gave
 * none (NULL: both now). */
static int read_times(struct obj *o, int nr, unsigned long addr, struct timespec ts[2])
{
	ts[0].tv_sec = ts[1].tv_sec = 0;
	ts[0].tv_nsec = ts[1].tv_nsec = UTIME_NOW;
	if (addr == 0)
		return 0;
	if (nr == __NR_utime) {
		long secs[2];	/* struct utimbuf: actime, modtime */

		if (fsb_sv_read_bytes(o->pid, addr, secs, sizeof(secs)) < 0)
			return -EFAULT;
		for (int i = 0; i < 2; i++)
			ts[i] = (struct timespec){ secs[i], 0 };
		return 0;
	}
	if (nr == __NR_utimes || nr == __NR_futimesat) {
		struct timeval tv[2];

		if (fsb_sv_read_bytes(o->pid, addr, tv, sizeof(tv)) < 0)
			return -EFAULT;
		for (int i = 0; i < 2; i++) {
			if (tv[i].tv_usec < 0 || tv[i].tv_usec >= 1000000)
				return -EINVAL;
			ts[i] = (struct timespec){ tv[i].tv_sec, tv[i].tv_usec * 1000 };
		}
		return 0;
	}
	if (fsb_sv_read_bytes(o->pid, addr, ts, 2 * sizeof(*ts)) < 0)
		return -EFAULT;
	if (!valid_nsec(ts[0].tv_nsec) || !valid_nsec(ts[1].tv_nsec))
		return -EINVAL;
	return 0;
}

static int do_times(struct obj *o)
{
	const unsigned long long *a = o->req->data.args;
	int nr = o->req->data.nr, dirfd = AT_FDCWD, err;
	unsigned long path_addr, times_addr;
	unsigned flags = 0;
	struct timespec ts[2];

	switch (nr) {
	case __NR_utime:
	case __NR_utimes:
		path_addr = a[0];
		times_addr = a[1];
		break;
	case __NR_futimesat:
		dirfd = (int)a[0];
		path_addr = a[1];
		times_addr = a[2];
		break;
	default:	/* utimensat */
		dirfd = (int)a[0];
		path_addr = a[1];
		times_addr = a[2];
		flags = (unsigned)a[3];
		if (flags & ~(unsigned)(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH))
			return -EINVAL;
	}
	if ((err = read_times(o, nr, times_addr, ts)) < 0)
		return err;
	/* utimensat(fd, NULL, …), futimens: the target's own fd. */
	if (nr == __NR_utimensat && path_addr == 0) {
		if (dirfd == AT_FDCWD)
			return -EFAULT;
		err = judge_fd(o, FSB_OP_UTIMES, dirfd);
	} else {
		err = fsb_sv_read_string(o->pid, path_addr, o->path, sizeof(o->path));
		if (err == 0 && o->path[0] == '\0' && (flags & AT_EMPTY_PATH) && dirfd != AT_FDCWD) {
			err = judge_fd(o, FSB_OP_UTIMES, dirfd);
		} else {
			char rel[PATH_MAX];

			if (err == 0) {
				snprintf(rel, sizeof(rel), "%s", o->path);
				err = fsb_sv_absolute_path(o->pid, dirfd, rel, o->path,
							   sizeof(o->path));
			}
			if (err == 0)
				err = judge_named(o, FSB_OP_UTIMES, flags & AT_SYMLINK_NOFOLLOW);
		}
	}
	if (err < 0 || (err = back_up(o)) < 0)
		return err;
	/* On the pinned object by its empty name: a symlink is changed
	 * itself and never followed. */
	fsb_stage_push(FSB_STAGE_PERFORM);
	return utimensat(o->fd, "", ts, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

/* ---- owner -------------------------------------------------------------- */

static int do_chown(struct obj *o)
{
	const unsigned long long *a = o->req->data.args;
	int nr = o->req->data.nr, err;
	uid_t uid;
	gid_t gid;
	bool nofollow = nr == __NR_lchown;

	if (nr == __NR_fchown) {
		uid = (uid_t)a[1];
		gid = (gid_t)a[2];
		err = judge_fd(o, FSB_OP_CHOWN, (int)a[0]);
	} else if (nr == __NR_fchownat) {
		unsigned flags = (unsigned)a[4];

		uid = (uid_t)a[2];
		gid = (gid_t)a[3];
		if (flags & ~(unsigned)(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH))
			return -EINVAL;
		nofollow = flags & AT_SYMLINK_NOFOLLOW;
		err = fsb_sv_read_string(o->pid, a[1], o->path, sizeof(o->path));
		if (err == 0 && o->path[0] == '\0' && (flags & AT_EMPTY_PATH)) {
			err = judge_fd(o, FSB_OP_CHOWN, (int)a[0]);
		} else if (err == 0) {
			char rel[PATH_MAX];

			snprintf(rel, sizeof(rel), "%s", o->path);
			err = fsb_sv_absolute_path(o->pid, (int)a[0], rel, o->path, sizeof(o->path));
			if (err == 0)
				err = judge_named(o, FSB_OP_CHOWN, nofollow);
		}
	} else {
		uid = (uid_t)a[1];
		gid = (gid_t)a[2];
		err = fsb_sv_target_path(o->pid, AT_FDCWD, a[0], o->path, sizeof(o->path), NULL);
		if (err == 0)
			err = judge_named(o, FSB_OP_CHOWN, nofollow);
	}
	if (err < 0)
		return err;
	/* The owner it has already (sed -i, cp -p of one's own file): done. */
	if ((uid == (uid_t)-1 || uid == o->st.st_uid) && (gid == (gid_t)-1 || gid == o->st.st_gid))
		return 0;
	if ((err = back_up(o)) < 0)
		return err;
	fsb_stage_push(FSB_STAGE_PERFORM);
	return fchownat(o->fd, "", uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

/* ---- fchmod ------------------------------------------------------------- */

static int do_fchmod(struct obj *o)
{
	const unsigned long long *a = o->req->data.args;
	int err;

	if ((err = judge_fd(o, FSB_OP_CHMOD, (int)a[0])) < 0 || (err = back_up(o)) < 0)
		return err;
	fsb_stage_push(FSB_STAGE_PERFORM);
	return fchmod(o->fd, (mode_t)a[1] & 07777) < 0 ? -errno : 0;
}

/* ---- mknod -------------------------------------------------------------- */

/*
 * chmod or fchmodat of a name: served here only when the name is the
 * target's own fd (1), else left to the host chmod (0). -errno.
 */
static int do_chmod_own_fd(struct obj *o)
{
	const unsigned long long *a = o->req->data.args;
	bool at = o->req->data.nr == __NR_fchmodat;
	mode_t mode = (mode_t)(at ? a[2] : a[1]) & 07777;
	char self[64];
	int tfd, err;

	err = fsb_sv_target_path(o->pid, at ? (int)a[0] : AT_FDCWD, at ? a[1] : a[0], o->path,
				 sizeof(o->path), NULL);
	if (err < 0 || (tfd = fsb_sv_own_fd_name(o->path)) < 0)
		return 0;
	if ((err = judge_fd(o, FSB_OP_CHMOD, tfd)) < 0 || (err = back_up(o)) < 0)
		return err;
	/* fchmod(2) refuses an O_PATH fd; its magic link does not. */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", o->fd);
	fsb_stage_push(FSB_STAGE_PERFORM);
	return chmod(self, mode) < 0 ? -errno : 1;
}

/*
 * Give the node just made as `name` in `pfd` exactly `perm`: the core's
 * own umask took more than the target's. The name is opened without
 * following a symlink, and only a node of the type made, with one link,
 * is changed (through its fd): a name swapped meanwhile for a symlink or
 * another name of some file is left alone, with a warning.
 */
static void set_made_mode(int pfd, const char *name, mode_t type, mode_t perm)
{
	char proc[64];
	struct stat st;
	int fd = openat(pfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (fd >= 0 && fstat(fd, &st) == 0 && (st.st_mode & S_IFMT) == (type & S_IFMT) &&
	    st.st_nlink == 1 && chmod(fsb_at_fd_path(fd, proc, sizeof(proc)), perm) == 0) {
		close(fd);
		return;
	}
	fsb_log_limited(FSB_LOG_WARN, "mknod of %s: its mode was left as the core's umask made "
			"it (%s)", name, fd < 0 ? strerror(errno) : "it changed after it was made");
	if (fd >= 0)
		close(fd);
}

static int do_mknod(struct obj *o)
{
	const unsigned long long *a = o->req->data.args;
	bool at = o->req->data.nr == __NR_mknodat;
	mode_t mode = (mode_t)(at ? a[2] : a[1]);
	struct fsb_access *acc = &o->acc;
	struct sv_creds creds;
	uid_t old_uid = 0;
	gid_t old_gid = 0;
	const char *name;
	bool as_target;
	int err, pfd;

	switch (mode & S_IFMT) {
	case 0:
	case S_IFREG:
	case S_IFIFO:
	case S_IFSOCK:
		break;
	case S_IFCHR:
	case S_IFBLK:
		return -EPERM;	/* a device node is never ours to make */
	default:
		return -EINVAL;
	}
	err = fsb_sv_target_path(o->pid, at ? (int)a[0] : AT_FDCWD, at ? a[1] : a[0], o->path,
				 sizeof(o->path), NULL);
	if (err == 0 && fsb_sv_creds(o->sv, o->pid, &creds) < 0)
		err = -ESRCH;
	if (err < 0 || (err = obj_root(o)) < 0)
		return err;
	fsb_sv_access_init(o->sv, o->req, acc, FSB_OP_CREATE, o->path, o->rootfd);
	acc->strategy = FSB_RESOLVE_THROUGH_PARENT;
	fsb_broker_decide(o->sv->b, acc);
	if (acc->verdict.decision != FSB_ALLOW) {
		err = -(acc->errnum ? acc->errnum : EACCES);
		fsb_sv_audit(o->sv, o->req, acc, err);
		return err;
	}
	if (acc->errnum != 0)
		return -acc->errnum;
	if (acc->res.exists)
		return -EEXIST;
	if ((pfd = fsb_at_open_parent(o->rootfd, acc->res.path, &name)) < 0)
		return pfd == -ELOOP ? -EAGAIN : pfd;
	/* Journaled as created: a restore removes it. */
	if (fsb_backup_note_created(o->sv->b, o->sv->scope.session, acc, O_CREAT, NULL) < 0 ||
	    fsb_sv_audit(o->sv, o->req, acc, 0) < 0) {
		close(pfd);
		return -EIO;
	}
	as_target = creds.fsuid != o->sv->euid || creds.fsgid != o->sv->egid;
	if (as_target) {
		old_gid = (gid_t)setfsgid(creds.fsgid);
		old_uid = (uid_t)setfsuid(creds.fsuid);
	}
	err = mknodat(pfd, name, (mode & S_IFMT) | (mode & 07777 & ~creds.umask), 0) < 0 ? -errno : 0;
	if (as_target) {
		setfsuid(old_uid);
		setfsgid(old_gid);
	}
	/* The core's umask is not the target's: the mode it asked for. */
	if (err == 0)
		set_made_mode(pfd, name, mode, mode & 07777 & ~creds.umask);
	close(pfd);
	return err;
}

/* ---- dispatch ----------------------------------------------------------- */

bool fsb_sv_serve_meta(struct fsb_supervisor *sv, const struct seccomp_notif *req)
{
	struct obj o = { .sv = sv, .req = req, .pid = (pid_t)req->pid, .rootfd = -1, .fd = -1 };
	int err;

	switch (req->data.nr) {
	case __NR_truncate:
		err = do_truncate(&o);
		break;
	case __NR_utime:
	case __NR_utimes:
	case __NR_futimesat:
	case __NR_utimensat:
		err = do_times(&o);
		break;
	case __NR_chown:
	case __NR_lchown:
	case __NR_fchown:
	case __NR_fchownat:
		err = do_chown(&o);
		break;
	case __NR_fchmod:
		err = do_fchmod(&o);
		break;
	case __NR_chmod:
	case __NR_fchmodat:
		if ((err = do_chmod_own_fd(&o)) == 0) {
			obj_close(&o);
			return false;	/* a name: a host chmod */
		}
		if (err > 0)
			err = 0;
		break;
	case __NR_mknod:
	case __NR_mknodat:
		err = do_mknod(&o);
		break;
	case __NR_setxattr:
	case __NR_lsetxattr:
	case __NR_fsetxattr:
	case __NR_setxattrat:
	case __NR_removexattr:
	case __NR_lremovexattr:
	case __NR_fremovexattr:
	case __NR_removexattrat:
		/* Not emulated: answered as a file system without xattrs would,
		 * which programs that copy ACLs (sed -i, cp -p) take in their
		 * stride. Nothing changes. */
		err = -EOPNOTSUPP;
		break;
	case __NR_ioctl:
	case __NR_file_setattr:
		/* The filter routes only the calls that set inode flags
		 * (immutable, append-only, …): refused. */
		err = -EPERM;
		break;
	default:
		return false;
	}
	obj_close(&o);
	/* -ESRCH: the target is gone (NOTIF_ID_VALID failed); nobody waits. */
	if (err != -ESRCH)
		fsb_sv_answer(sv, req, err == -EAGAIN ? -EAGAIN : err);
	return true;
}
