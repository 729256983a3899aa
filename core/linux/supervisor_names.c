/*
 * supervisor_names.c — the calls that change names, under the supervisor
 * (see supervisor_call.h): unlink, rmdir, rename (RENAME_NOREPLACE and
 * RENAME_EXCHANGE), mkdir, symlink, link and chmod are performed as the
 * host operation of the same meaning (hostop.c), which judges, backs up
 * and acts race-safe in the target's view. linkat of an fd the target
 * holds (AT_EMPTY_PATH, or /proc/self/fd/N with AT_SYMLINK_FOLLOW: how an
 * O_TMPFILE is published) is served here. What has no emulation is
 * refused: EPERM, never CONTINUE.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "at.h"
#include "hostop.h"
#include "log.h"
#include "modify_backup.h"
#include "supervisor_call.h"

#ifndef RENAME_WHITEOUT
#define RENAME_WHITEOUT (1 << 2)
#endif

/*
 * The fd a link source names when it is one of the target's own: "" with
 * AT_EMPTY_PATH (the dirfd), or /proc/self/fd/N, /proc/<its pid>/fd/N,
 * /dev/fd/N followed with AT_SYMLINK_FOLLOW. -1 when it names a path.
 */
static int source_fd(pid_t pid, int dirfd, const char *src, unsigned flags)
{
	char own[32];
	const char *p = NULL;
	char *end;
	long n;

	if ((flags & AT_EMPTY_PATH) && src[0] == '\0')
		return dirfd;
	if (!(flags & AT_SYMLINK_FOLLOW))
		return -1;
	snprintf(own, sizeof(own), "/proc/%d/fd/", (int)pid);
	if (strncmp(src, "/proc/self/fd/", 14) == 0)
		p = src + 14;
	else if (strncmp(src, "/dev/fd/", 8) == 0)
		p = src + 8;
	else if (strncmp(src, own, strlen(own)) == 0)
		p = src + strlen(own);
	if (p == NULL || *p < '0' || *p > '9')
		return -1;
	n = strtol(p, &end, 10);
	return *end == '\0' && n <= INT_MAX ? (int)n : -1;
}

/*
 * Publish the target's fd `tfd` under `to` (a new name): judged as a link
 * to `to` (and, when the file has a name already, as a link of that name),
 * journaled as created, then linked from the core's duplicate of the fd.
 */
static int link_target_fd(struct fsb_supervisor *sv, const struct seccomp_notif *req,
			  int tfd, const char *to, int rootfd)
{
	struct fsb_access acc, src;
	char named[PATH_MAX], proc[32];
	const char *name;
	int fd, pfd = -1, err;

	if ((fd = fsb_sv_target_fd(sv, req, tfd)) < 0)
		return fd == -EBADF ? -EBADF : -EPERM;
	if (fsb_sv_fd_path(fd, named, sizeof(named)) == 0) {
		struct stat st;

		fsb_sv_access_init(sv, req, &src, FSB_OP_LINK, named, -1);
		src.given_resolved = true;
		snprintf(src.res.path, sizeof(src.res.path), "%s", named);
		src.res.exists = fstat(fd, &src.res.st) == 0;
		fsb_broker_decide(sv->b, &src);
		if (src.verdict.decision != FSB_ALLOW) {
			err = -(src.errnum ? src.errnum : EACCES);
			fsb_sv_audit(sv, req, &src, err);
			goto out;
		}
		if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
			err = -EPERM;
			goto out;
		}
	}
	fsb_sv_access_init(sv, req, &acc, FSB_OP_LINK, to, rootfd);
	acc.strategy = FSB_RESOLVE_THROUGH_PARENT;
	fsb_broker_decide(sv->b, &acc);
	if (acc.verdict.decision != FSB_ALLOW || acc.errnum != 0) {
		err = -(acc.errnum ? acc.errnum : EACCES);
		fsb_sv_audit(sv, req, &acc, err);
		goto out;
	}
	if (acc.res.exists) {
		err = -EEXIST;
		goto out;
	}
	if ((pfd = fsb_at_open_parent(rootfd, acc.res.path, &name)) < 0) {
		err = pfd == -ELOOP ? -ENOENT : pfd;
		goto out;
	}
	/* A restore removes the name again. */
	if (fsb_backup_note_created(sv->b, sv->scope.session, &acc, O_CREAT, NULL) < 0) {
		err = -EIO;
		goto out;
	}
	fsb_sv_audit(sv, req, &acc, 0);
	/* Through /proc/self/fd: an O_TMPFILE is linked this way without
	 * CAP_DAC_READ_SEARCH, which AT_EMPTY_PATH would want. */
	err = linkat(AT_FDCWD, fsb_at_fd_path(fd, proc, sizeof(proc)), pfd, name,
		     AT_SYMLINK_FOLLOW) < 0 ? -errno : 0;
out:
	if (pfd >= 0)
		close(pfd);
	close(fd);
	return err;
}

void fsb_sv_serve_names(struct fsb_supervisor *sv, const struct seccomp_notif *req)
{
	const unsigned long long *a = req->data.args;
	pid_t pid = (pid_t)req->pid;
	struct fsb_hostop_client who = {
		.session = sv->scope.session, .tool_call = sv->scope.tool_call,
		.pid = pid, .uid = sv->uid, .view_fd = -1,
	};
	struct fsb_hostop_req hr;
	char p1[PATH_MAX], p2[PATH_MAX], target[PATH_MAX];
	int err = 0, rootfd, linkfd = -1;
	unsigned flags = 0;
	struct sv_creds creds;

	memset(&hr, 0, sizeof(hr));
	switch (req->data.nr) {
	case __NR_unlink:
	case __NR_rmdir:
	case __NR_unlinkat:
		flags = req->data.nr == __NR_unlinkat ? (unsigned)a[2] : 0;
		if (flags & ~(unsigned)AT_REMOVEDIR) {
			fsb_sv_answer(sv, req, -EINVAL);
			return;
		}
		err = req->data.nr == __NR_unlinkat
			? fsb_sv_target_path(pid, (int)a[0], a[1], p1, sizeof(p1), &who.must_be_dir)
			: fsb_sv_target_path(pid, AT_FDCWD, a[0], p1, sizeof(p1), &who.must_be_dir);
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
			err = fsb_sv_target_path(pid, AT_FDCWD, a[0], p1, sizeof(p1), &who.must_be_dir);
			if (err == 0)
				err = fsb_sv_target_path(pid, AT_FDCWD, a[1], p2, sizeof(p2),
							 &who.must_be_dir);
		} else {
			err = fsb_sv_target_path(pid, (int)a[0], a[1], p1, sizeof(p1), &who.must_be_dir);
			if (err == 0)
				err = fsb_sv_target_path(pid, (int)a[2], a[3], p2, sizeof(p2),
							 &who.must_be_dir);
			flags = req->data.nr == __NR_renameat2 ? (unsigned)a[4] : 0;
		}
		/* As the kernel: unknown flags, and EXCHANGE with another, are
		 * EINVAL. A whiteout is an overlayfs device node: not ours to make. */
		if (err == 0 && ((flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT)) ||
				 ((flags & RENAME_EXCHANGE) && (flags & ~RENAME_EXCHANGE))))
			err = -EINVAL;
		else if (err == 0 && (flags & RENAME_WHITEOUT))
			err = -EPERM;
		who.rename_noreplace = flags & RENAME_NOREPLACE;
		who.rename_exchange = flags & RENAME_EXCHANGE;
		hr.op = FSB_HOSTOP_RENAME;
		hr.from = p1;
		hr.to = p2;
		break;
	case __NR_mkdir:
	case __NR_mkdirat:
		err = req->data.nr == __NR_mkdir
			? fsb_sv_target_path(pid, AT_FDCWD, a[0], p1, sizeof(p1), NULL)
			: fsb_sv_target_path(pid, (int)a[0], a[1], p1, sizeof(p1), NULL);
		if (err == 0 && fsb_sv_creds(sv, pid, &creds) < 0)
			err = -ESRCH;
		hr.op = FSB_HOSTOP_MKDIR;
		hr.path = p1;
		hr.has_mode = true;
		hr.mode = err ? 0 : (mode_t)(req->data.nr == __NR_mkdir ? a[1] : a[2]) & 07777 &
				    ~creds.umask;
		who.exact_mode = true;
		break;
	case __NR_symlink:
	case __NR_symlinkat:
		/* The link's content is written as given, never resolved. */
		err = fsb_sv_read_string(pid, a[0], target, sizeof(target));
		if (err == 0)
			err = req->data.nr == __NR_symlink
				? fsb_sv_target_path(pid, AT_FDCWD, a[1], p2, sizeof(p2), NULL)
				: fsb_sv_target_path(pid, (int)a[1], a[2], p2, sizeof(p2), NULL);
		hr.op = FSB_HOSTOP_LINK;
		hr.symbolic = true;
		hr.from = target;
		hr.to = p2;
		break;
	case __NR_link:
	case __NR_linkat:
		if (req->data.nr == __NR_link) {
			err = fsb_sv_target_path(pid, AT_FDCWD, a[0], p1, sizeof(p1), NULL);
			if (err == 0)
				err = fsb_sv_target_path(pid, AT_FDCWD, a[1], p2, sizeof(p2), NULL);
		} else {
			flags = (unsigned)a[4];
			if (flags & ~(unsigned)(AT_EMPTY_PATH | AT_SYMLINK_FOLLOW)) {
				fsb_sv_answer(sv, req, -EINVAL);
				return;
			}
			err = fsb_sv_read_string(pid, a[1], target, sizeof(target));
			if (err == -EFAULT && (flags & AT_EMPTY_PATH))
				err = 0, target[0] = '\0';
			if (err == 0 && (linkfd = source_fd(pid, (int)a[0], target, flags)) < 0)
				err = fsb_sv_absolute_path(pid, (int)a[0], target, p1, sizeof(p1));
			if (err == 0)
				err = fsb_sv_target_path(pid, (int)a[2], a[3], p2, sizeof(p2), NULL);
		}
		/* link(2) does not follow a symlink source; linkat only with
		 * AT_SYMLINK_FOLLOW. */
		who.link_nofollow = !(flags & AT_SYMLINK_FOLLOW);
		hr.op = FSB_HOSTOP_LINK;
		hr.from = p1;
		hr.to = p2;
		break;
	case __NR_chmod:
	case __NR_fchmodat:
		err = req->data.nr == __NR_chmod
			? fsb_sv_target_path(pid, AT_FDCWD, a[0], p1, sizeof(p1), NULL)
			: fsb_sv_target_path(pid, (int)a[0], a[1], p1, sizeof(p1), NULL);
		hr.op = FSB_HOSTOP_CHMOD;
		hr.path = p1;
		hr.has_mode = true;
		hr.mode = (mode_t)(req->data.nr == __NR_chmod ? a[1] : a[2]) & 07777;
		break;
	default:
		fsb_log_limited(FSB_LOG_WARN, "pid %d: system call %d is not emulated; "
				"refused (EPERM)", (int)pid, (int)req->data.nr);
		fsb_sv_answer(sv, req, -EPERM);
		return;
	}
	if (err < 0) {
		if (err != -ESRCH || fsb_sv_still_valid(sv, req))
			fsb_sv_answer(sv, req, err);
		return;
	}
	rootfd = fsb_sv_root(sv, pid);
	if (!fsb_sv_still_valid(sv, req)) {
		if (rootfd >= 0)
			close(rootfd);
		return;
	}
	if (rootfd < 0) {
		fsb_sv_answer(sv, req, -EACCES);
		return;
	}
	if (linkfd >= 0) {
		err = link_target_fd(sv, req, linkfd, p2, rootfd);
	} else {
		who.view_fd = rootfd;
		err = fsb_hostop_perform(sv->b, &who, &hr);
	}
	close(rootfd);
	fsb_sv_answer(sv, req, err);
}
