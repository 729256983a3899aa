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
#include "grant.h"
#include "modify_backup.h"
#include "openflags.h"
#include "supervisor_call.h"

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
 * A create made as the target's fsuid/fsgid: set on this pool thread only
 * (setfsuid is per thread) around the one openat2, so the kernel checks
 * the directory's permissions for them and gives the file their owner.
 * Nothing happens when they are the core's own (the usual case: the
 * sandbox maps the core's uid) or when the core may not take them on.
 */
static int grant_open_as_target(struct call *c, const struct fsb_access *acc, int flags,
				mode_t mode, struct backup_arg *ba)
{
	bool as_target = c->has_creds && !acc->res.exists &&
			 (c->creds.fsuid != geteuid() || c->creds.fsgid != getegid());
	uid_t old_uid = 0;
	gid_t old_gid = 0;
	int fd;

	if (as_target) {
		old_gid = (gid_t)setfsgid(c->creds.fsgid);
		old_uid = (uid_t)setfsuid(c->creds.fsuid);
	}
	fd = fsb_grant_open(c->rootfd, &acc->res, flags, mode, backup_opened_file, ba);
	if (as_target) {
		setfsuid(old_uid);
		setfsgid(old_gid);
	}
	return fd;
}

/* Decide, back up, open. Returns the fd for the target, or -errno. */
static int open_for_target(struct call *c)
{
	struct fsb_broker *b = c->sv->b;
	struct fsb_access acc;
	struct backup_arg ba = { c, &acc };
	bool writes = fsb_openflags_writes(c->flags);
	const char *why;
	struct stat st;
	int fd = -1, err;

	if (fsb_openflags_check(c->flags, writes, &why) < 0)
		return -EINVAL;
	fsb_sv_access_init(c->sv, c->req, &acc, writes ? FSB_OP_WRITE : FSB_OP_READ, c->path,
			   c->rootfd);
	acc.strategy = (c->flags & O_NOFOLLOW) ||
				       (c->flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL)
			       ? FSB_RESOLVE_THROUGH_PARENT
			       : FSB_RESOLVE_EXISTING_OR_CREATABLE;
	fsb_broker_decide(b, &acc);
	if (acc.verdict.decision != FSB_ALLOW || acc.errnum != 0) {
		err = acc.errnum ? acc.errnum : EACCES;
		audit_call(c, &acc, -1, err);
		return -err;
	}
	/* O_TRUNC after the audit line, as for a grant (serve_text.c). */
	fd = grant_open_as_target(c, &acc, c->flags & ~O_TRUNC, c->mode & 07777, &ba);
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
	if (writes && fstat(fd, &st) == 0)
		fsb_backup_note_write_grant(b, c->sv->scope.session,
					    acc.verdict.backup ? fd : -1, st.st_dev, st.st_ino);
	return fd;
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
	int dirfd, err, fd;

	if ((err = read_args(&c, &dirfd, &addr)) < 0 ||
	    (err = fsb_sv_read_string(c.pid, addr, rel, sizeof(rel))) < 0 ||
	    (err = fsb_sv_absolute_path(c.pid, dirfd, rel, c.path, sizeof(c.path))) < 0) {
		fsb_sv_answer(sv, req, err);
		return;
	}
	if ((c.flags & O_CREAT) && fsb_sv_creds(c.pid, &c.creds) == 0) {
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
	else
		fd = open_for_target(&c);
	close(c.rootfd);
	if (fd < 0)
		fsb_sv_answer(sv, req, fd);
	else
		fsb_sv_answer_fd(sv, req, fd, c.flags);
}
