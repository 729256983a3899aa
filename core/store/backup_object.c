/*
 * backup_object.c — writing one content-addressed object of the backup store
 * (see backup_object.h): a new file, reflinked or copied, hashed from the
 * copy, fsynced and only then linked in under its name, so a crash leaves
 * either no object or a whole one. An object already under that name is
 * checked against it and replaced when it does not match. A file whose
 * name is about to go (a delete) can instead be kept by linking its inode
 * in under a random name. Several threads
 * may store objects into one store at once (backup.c lets go of its
 * caller's lock while it copies).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "backup.h"
#include "backup_object.h"

#define OBJ_CHUNK 65536
/* A file of at most this many bytes is read and hashed before anything is
 * made for it (store_small). */
#define OBJ_SMALL OBJ_CHUNK
/* One copy_file_range call moves at most this much, so a huge file is
 * copied in steps the kernel can interrupt. */
#define OBJ_RANGE ((size_t)1 << 30)
#define TMP_PREFIX ".tmp-"

/* The new file: an O_TMPFILE (no name until linked) or a named temp. */
struct tmp {
	int fd;
	char name[32];		/* "" for an O_TMPFILE */
};

/* A full quota is a full disk to the caller: both deny the change. */
static int nospace(int err)
{
	return err == -EDQUOT ? -ENOSPC : err;
}

static void tmp_name(char *buf, size_t len)
{
	static unsigned counter;
	uint64_t r;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		r = ((uint64_t)getpid() << 40) ^ ((uint64_t)ts.tv_nsec << 8) ^
		    __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
	}
	snprintf(buf, len, TMP_PREFIX "%016llx", (unsigned long long)r);
}

static int tmp_create(int objfd, bool *tmpfile_ok, struct tmp *t)
{
	t->name[0] = '\0';
	if (__atomic_load_n(tmpfile_ok, __ATOMIC_RELAXED)) {
		t->fd = openat(objfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
		if (t->fd >= 0)
			return 0;
		/* EISDIR: a kernel without O_TMPFILE; the others: a
		 * filesystem without it. Anything else is a real error. */
		if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
			return -errno;
		__atomic_store_n(tmpfile_ok, false, __ATOMIC_RELAXED);
	}
	for (int tries = 0; tries < 16; tries++) {
		tmp_name(t->name, sizeof(t->name));
		/* O_EXCL|O_NOFOLLOW: never reuse or follow what is there. */
		t->fd = openat(objfd, t->name, O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC,
			       0600);
		if (t->fd >= 0)
			return 0;
		if (errno != EEXIST)
			break;
	}
	t->name[0] = '\0';
	return -errno;
}

/* Close the new file and remove its temporary name, if it has one. After a
 * successful link the object keeps its own name. */
static void tmp_drop(int objfd, struct tmp *t)
{
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
	if (t->name[0] != '\0')
		unlinkat(objfd, t->name, 0);
	t->name[0] = '\0';
}

static int pwrite_all(int fd, const unsigned char *buf, size_t len, off_t off)
{
	while (len > 0) {
		ssize_t n = pwrite(fd, buf, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		buf += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

/* copy_file_range cannot do this pair of files: read/write instead. */
static bool range_unsupported(int err)
{
	return err == ENOSYS || err == EXDEV || err == EINVAL || err == EOPNOTSUPP ||
	       err == EBADF;
}

/*
 * Copy the first `size` bytes of src to dst: the size the limit was checked
 * against, so a file that grows during the copy cannot make the object (or
 * the time the copy takes) any larger. A file that shrinks meanwhile is
 * copied as far as it goes. Offsets are explicit, so the caller's fd offset
 * stays where it was. When read/write did all of it, the content was also
 * hashed into ctx on the way and *hashed is set.
 */
static int copy_data(int src, int dst, off_t size, unsigned char *buf, EVP_MD_CTX *ctx,
		     bool *hashed)
{
	off_t off = 0;
	int err;

	while (off < size) {
		off_t in = off, out = off;
		size_t want = (uint64_t)(size - off) < OBJ_RANGE ? (size_t)(size - off) : OBJ_RANGE;
		ssize_t n = copy_file_range(src, &in, dst, &out, want, 0);

		if (n > 0) {
			off += n;
			continue;
		}
		if (n == 0)
			break;
		if (errno == EINTR)
			continue;
		if (!range_unsupported(errno))
			return -errno;
		break;
	}

	/* Also after copy_file_range stopped short: some files (procfs-like)
	 * read as empty to it, and a real EOF costs one pread here. */
	*hashed = off == 0;
	while (off < size) {
		size_t want = (uint64_t)(size - off) < OBJ_CHUNK ? (size_t)(size - off) : OBJ_CHUNK;
		ssize_t n = pread(src, buf, want, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		if (*hashed && !EVP_DigestUpdate(ctx, buf, (size_t)n))
			return -ENOMEM;
		err = pwrite_all(dst, buf, (size_t)n, off);
		if (err)
			return err;
		off += n;
	}
	return 0;
}

/* Hash what the new file holds: the object is named by its own bytes. */
static int hash_fd(int fd, unsigned char *buf, EVP_MD_CTX *ctx)
{
	off_t off = 0;

	for (;;) {
		ssize_t n = pread(fd, buf, OBJ_CHUNK, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		if (!EVP_DigestUpdate(ctx, buf, (size_t)n))
			return -ENOMEM;
		off += n;
	}
}

/* A SHA-256 digest as its 64 hex digits. */
static void hex_of(const unsigned char md[FSB_SHA256_HEX_LEN / 2], char hex[FSB_SHA256_HEX_LEN + 1])
{
	static const char digits[] = "0123456789abcdef";

	for (unsigned int i = 0; i < FSB_SHA256_HEX_LEN / 2; i++) {
		hex[2 * i] = digits[md[i] >> 4];
		hex[2 * i + 1] = digits[md[i] & 0xf];
	}
	hex[FSB_SHA256_HEX_LEN] = '\0';
}

static int hash_final(EVP_MD_CTX *ctx, char hex[FSB_SHA256_HEX_LEN + 1])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	if (!EVP_DigestFinal_ex(ctx, md, &mdlen) || mdlen * 2 != FSB_SHA256_HEX_LEN)
		return -ENOMEM;
	hex_of(md, hex);
	return 0;
}

/*
 * Give an O_TMPFILE its name. linkat with AT_EMPTY_PATH needs
 * CAP_DAC_READ_SEARCH; going through /proc/self/fd does not, so that comes
 * first and AT_EMPTY_PATH is for a system without /proc.
 */
static int link_tmpfile(int fd, int dirfd, const char *name)
{
	char proc[32];

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (linkat(AT_FDCWD, proc, dirfd, name, AT_SYMLINK_FOLLOW) == 0)
		return 0;
	if (errno != ENOENT)
		return -errno;
	if (linkat(fd, "", dirfd, name, AT_EMPTY_PATH) == 0)
		return 0;
	return -errno;
}

/*
 * Does objects/<hh>/<hex> (under dirfd) hold what its name says? Its size is
 * compared first, then its SHA-256. Returns 1 when it does, 0 when it does
 * not (other bytes, unreadable, not a regular file, a symlink), or -errno
 * when that cannot be told.
 */
static int object_matches(int dirfd, const char *hex, off_t size, unsigned char *buf)
{
	char got[FSB_SHA256_HEX_LEN + 1];
	EVP_MD_CTX *ctx;
	struct stat st;
	int fd, rc;

	/* O_NONBLOCK: a FIFO planted under the name must not hang the core. */
	fd = openat(dirfd, hex, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ELOOP || errno == ENXIO ? 0 : -errno;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	if (!S_ISREG(st.st_mode) || st.st_size != size) {
		close(fd);
		return 0;
	}
	ctx = EVP_MD_CTX_new();
	if (ctx == NULL || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
		EVP_MD_CTX_free(ctx);
		close(fd);
		return -ENOMEM;
	}
	rc = hash_fd(fd, buf, ctx);
	if (rc == 0)
		rc = hash_final(ctx, got);
	EVP_MD_CTX_free(ctx);
	close(fd);
	if (rc == -ENOMEM)
		return rc;
	/* A read error is a damaged object too: replace it. */
	return rc == 0 && strcmp(got, hex) == 0;
}

/*
 * Put the new file in place of a damaged object: give it a temporary name
 * in objects/ (an O_TMPFILE has none yet) and rename that over the object,
 * so the name holds either the damaged object or the whole new one.
 */
static int replace_object(int objfd, int dirfd, struct tmp *t, const char *hex, bool *retry)
{
	char name[sizeof(t->name)];
	int err = -EEXIST;

	if (t->name[0] == '\0') {
		for (int tries = 0; tries < 16 && err == -EEXIST; tries++) {
			tmp_name(name, sizeof(name));
			err = link_tmpfile(t->fd, objfd, name);
		}
		if (err) {
			if (err == -ENOENT || err == -EPERM)
				*retry = true;
			return err;
		}
		/* From here on tmp_drop removes the name if the rename fails. */
		memcpy(t->name, name, sizeof(t->name));
	}
	if (renameat(objfd, t->name, dirfd, hex) < 0)
		return -errno;
	t->name[0] = '\0';	/* the name moved: nothing left to remove */
	return 0;
}

/*
 * Link the finished file (of `size` bytes) in as objects/<hh>/<hex> and
 * fsync the directories that got a new entry, so a journal line naming the
 * object never outlives it. An object of that name already there is kept
 * when its content matches its name, else replaced by the new file. *retry
 * is set when an O_TMPFILE cannot be given a name here at all.
 */
/* fsync of a directory of objects/ that got an entry, when the store is strict. */
static int sync_dir(int dirfd, bool sync)
{
	if (!sync)
		return 0;
	fsb_sync_count(FSB_SYNC_DIR);
	return fsync(dirfd) < 0 ? -errno : 0;
}

/*
 * objects/<hh> under `objfd`, made when new. A directory another thread
 * has just made may not be durable yet: whoever finds it (EEXIST) waits
 * until its maker's fsync is done. The new directory's entry is made
 * durable before anything is linked into it (`sync`: a strict store; a
 * batched one leaves it to its next syncfs); a failure takes it away
 * again so that the next object makes (and fsyncs) it anew. Returns its
 * fd or -errno.
 */
static int open_hh(int objfd, const char *hex, bool sync)
{
	static pthread_mutex_t making = PTHREAD_MUTEX_INITIALIZER;
	char hh[3] = { hex[0], hex[1], '\0' };
	struct stat st;
	int fd, err = 0;

	/* Almost always there already: opened without the mkdirat, which
	 * locks objects/ to find the name taken. Its maker may still be
	 * syncing it (the lock is held until then); one whose sync failed
	 * has been taken away again (no links left) and is made anew. */
	fd = openat(objfd, hh, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		pthread_mutex_lock(&making);
		pthread_mutex_unlock(&making);
		if (fstat(fd, &st) == 0 && st.st_nlink > 0)
			return fd;
		close(fd);
	} else if (errno != ENOENT) {
		return -errno;
	}
	pthread_mutex_lock(&making);
	if (mkdirat(objfd, hh, 0700) == 0) {
		if ((err = sync_dir(objfd, sync)) < 0)
			unlinkat(objfd, hh, AT_REMOVEDIR);
	} else if (errno != EEXIST) {
		err = -errno;
	}
	pthread_mutex_unlock(&making);
	if (err < 0)
		return err;
	fd = openat(objfd, hh, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* Give the new file `t` its object name `hex` in `dirfd`, objects/<hh>
 * (open_hh). 0 or -errno; *retry when an O_TMPFILE could not be linked. */
static int link_into(int objfd, int dirfd, struct tmp *t, const char *hex, off_t size,
		     unsigned char *buf, bool sync, bool *retry)
{
	int err;

	if (t->name[0] != '\0')
		err = linkat(objfd, t->name, dirfd, hex, 0) < 0 ? -errno : 0;
	else
		err = link_tmpfile(t->fd, dirfd, hex);

	if (err == -EEXIST) {
		/* Already stored, unless bit rot (or anything else) changed
		 * it since: then the fresh, verified copy takes its place. */
		err = object_matches(dirfd, hex, size, buf);
		if (err == 1)
			err = 0;
		else if (err == 0)
			err = replace_object(objfd, dirfd, t, hex, retry);
		if (err == 0)
			err = sync_dir(dirfd, sync);
	} else if (err == 0) {
		err = sync_dir(dirfd, sync);
	} else if (t->name[0] == '\0' && (err == -ENOENT || err == -EPERM)) {
		*retry = true;
	}
	return err;
}

static int link_in(int objfd, struct tmp *t, const char *hex, off_t size, unsigned char *buf,
		   bool sync, bool *retry)
{
	int dirfd = open_hh(objfd, hex, sync), err;

	if (dirfd < 0)
		return dirfd;
	err = link_into(objfd, dirfd, t, hex, size, buf, sync, retry);
	close(dirfd);
	return err;
}

/* link(2) the inode of `fd` as `name` in `dirfd`; 0 or -errno. */
static int link_fd(int fd, int dirfd, const char *name)
{
	char proc[32];

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	return linkat(AT_FDCWD, proc, dirfd, name, AT_SYMLINK_FOLLOW) < 0 ? -errno : 0;
}

int fsb_object_keep(int objfd, int srcfd, const char *path, struct fsb_object *out)
{
	static const char digits[] = "0123456789abcdef";
	unsigned char r[FSB_SHA256_HEX_LEN / 2];
	struct stat want, got;
	int err, fd;

	memset(out, 0, sizeof(*out));
	/* A random name of the form of a SHA-256: never the hash of anything
	 * stored, so no copy is ever taken for it or it for a copy, and the
	 * prune and the quota count it like any object. */
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return -EIO;
	for (size_t i = 0; i < sizeof(r); i++) {
		out->hex[2 * i] = digits[r[i] >> 4];
		out->hex[2 * i + 1] = digits[r[i] & 15];
	}
	out->hex[FSB_SHA256_HEX_LEN] = '\0';
	/* First under a temporary name in objects/, which the next start
	 * removes after a crash: a link no journal line names yet must not
	 * outlive the core and leave the file with a second link. Through
	 * /proc/self/fd: exactly the inode the caller opened and checked,
	 * whatever its name is now. */
	tmp_name(out->tmp, sizeof(out->tmp));
	err = link_fd(srcfd, objfd, out->tmp);
	/*
	 * link(2) stays within one mount: a descriptor opened through a
	 * sandbox's bind mount of the workspace cannot be linked into the
	 * store even on the same file system. The same inode reached by its
	 * name in the core's own view can; it is used only when it is the
	 * very inode of `srcfd` (a rename racing in finds another: copied).
	 */
	if (err == -EXDEV && path != NULL && fstat(srcfd, &want) == 0 &&
	    (fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC)) >= 0) {
		if (fstat(fd, &got) == 0 && S_ISREG(got.st_mode) && got.st_dev == want.st_dev &&
		    got.st_ino == want.st_ino)
			err = link_fd(fd, objfd, out->tmp);
		close(fd);
	}
	if (err < 0) {
		memset(out, 0, sizeof(*out));
		return nospace(err);
	}
	out->kept = true;
	return 0;
}

int fsb_object_keep_commit(int objfd, struct fsb_object *o, bool sync)
{
	int dirfd = open_hh(objfd, o->hex, sync), err = 0;

	if (dirfd < 0) {
		fsb_object_keep_abort(objfd, o);
		return nospace(dirfd);
	}
	if (renameat(objfd, o->tmp, dirfd, o->hex) < 0) {
		err = -errno;
		fsb_object_keep_abort(objfd, o);
	} else {
		o->tmp[0] = '\0';
		/* On disk before the change that takes the file's own name
		 * (strict; batched, with the next syncfs). */
		err = sync_dir(dirfd, sync);
	}
	close(dirfd);
	return nospace(err);
}

void fsb_object_keep_abort(int objfd, struct fsb_object *o)
{
	if (o->tmp[0] != '\0')
		unlinkat(objfd, o->tmp, 0);
	o->tmp[0] = '\0';
}

int fsb_object_unshare(int objfd, const char *hex)
{
	char hh[3] = { hex[0], hex[1], '\0' }, name[32];
	unsigned char *buf = NULL;
	EVP_MD_CTX *ctx = NULL;
	struct timespec ts[2];
	struct stat st;
	int dirfd, src = -1, dst = -1, err;
	bool hashed;

	dirfd = openat(objfd, hh, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dirfd < 0)
		return -errno;
	src = openat(dirfd, hex, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (src < 0 || fstat(src, &st) < 0) {
		err = -errno;
		goto fail;
	}
	/* Its own name is gone (the change went ahead): the store's is the
	 * only one, nothing to do. */
	if (!S_ISREG(st.st_mode) || st.st_nlink <= 1) {
		err = 0;
		goto fail;
	}
	/* A temporary in objects/ (which fsb_object_clean empties after a
	 * crash), O_EXCL|O_NOFOLLOW: never reuse or follow what is there. */
	tmp_name(name, sizeof(name));
	dst = openat(objfd, name, O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0400);
	if (dst < 0) {
		err = -errno;
		goto fail;
	}
	if (ioctl(dst, FICLONE, src) < 0) {
		buf = malloc(OBJ_CHUNK);
		ctx = EVP_MD_CTX_new();
		if (buf == NULL || ctx == NULL || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
			err = -ENOMEM;
			goto fail;
		}
		if ((err = copy_data(src, dst, st.st_size, buf, ctx, &hashed)) < 0)
			goto fail;
	}
	/* The copy keeps the size and mtime a restore checks a kept inode
	 * by; renamed over the link, it leaves the file one link again. */
	ts[0] = st.st_atim;
	ts[1] = st.st_mtim;
	fsb_sync_count(FSB_SYNC_OBJECT);
	fsb_sync_count(FSB_SYNC_DIR);
	if (futimens(dst, ts) < 0 || fsync(dst) < 0 ||
	    renameat(objfd, name, dirfd, hex) < 0 || fsync(dirfd) < 0) {
		err = -errno;
		goto fail;
	}
	close(dst);
	dst = -1;
	err = 0;
fail:
	if (dst >= 0) {
		close(dst);
		unlinkat(objfd, name, 0);
	}
	if (src >= 0)
		close(src);
	close(dirfd);
	free(buf);
	EVP_MD_CTX_free(ctx);
	return nospace(err);
}

/*
 * Read the first `size` bytes of `fd` (fewer when it shrinks meanwhile)
 * into buf. Returns the count or -errno.
 */
static ssize_t read_small(int fd, unsigned char *buf, size_t size)
{
	size_t got = 0;

	while (got < size) {
		ssize_t n = pread(fd, buf + got, size - got, (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/*
 * A small file (at most OBJ_SMALL bytes, within the limit): its bytes are
 * read and hashed first, so that content already stored (a file copied in
 * several places, an unchanged file backed up again in a new cycle) costs
 * no new file at all, and a new object is written from exactly the bytes
 * hashed. No reflink is tried: for so few bytes it saves nothing.
 */
static int store_small(int objfd, int srcfd, const struct stat *st, bool *tmpfile_ok, bool sync,
		       struct fsb_object *out, bool *retry)
{
	struct tmp t = { .fd = -1, .name = "" };
	/* The scratch first (an object already there is hashed in
	 * OBJ_CHUNK steps there), then the file's bytes. */
	unsigned char md[EVP_MAX_MD_SIZE], *scratch = malloc(OBJ_CHUNK + (size_t)st->st_size);
	unsigned char *buf;
	unsigned int mdlen = 0;
	ssize_t n;
	int dirfd = -1, err;

	if (scratch == NULL)
		return -ENOMEM;
	buf = scratch + OBJ_CHUNK;
	if ((n = read_small(srcfd, buf, (size_t)st->st_size)) < 0) {
		err = (int)n;
		goto out;
	}
	if (!EVP_Digest(buf, (size_t)n, md, &mdlen, EVP_sha256(), NULL) ||
	    mdlen * 2 != FSB_SHA256_HEX_LEN) {
		err = -ENOMEM;
		goto out;
	}
	hex_of(md, out->hex);
	if ((dirfd = open_hh(objfd, out->hex, sync)) < 0) {
		err = dirfd;
		goto out;
	}
	err = object_matches(dirfd, out->hex, (off_t)n, scratch);
	if (err == 1) {
		/* Stored already; its entry may be another thread's,
		 * not synced yet. */
		err = sync_dir(dirfd, sync);
		goto out;
	}
	if (err < 0 || (err = tmp_create(objfd, tmpfile_ok, &t)) < 0 ||
	    (err = pwrite_all(t.fd, buf, (size_t)n, 0)) < 0)
		goto out;
	if (sync)
		fsb_sync_count(FSB_SYNC_OBJECT);
	if (fchmod(t.fd, 0400) < 0 || (sync && fsync(t.fd) < 0)) {
		err = -errno;
		goto out;
	}
	err = link_into(objfd, dirfd, &t, out->hex, (off_t)n, scratch, sync, retry);
out:
	tmp_drop(objfd, &t);
	if (dirfd >= 0)
		close(dirfd);
	free(scratch);
	return err;
}

static int store_once(int objfd, int srcfd, uint64_t max_bytes, bool *tmpfile_ok, bool sync,
		      struct fsb_object *out, bool *retry)
{
	struct tmp t = { .fd = -1, .name = "" };
	unsigned char *buf = NULL;
	EVP_MD_CTX *ctx = NULL;
	bool hashed = false;
	struct stat st, made;
	int err;

	*retry = false;
	memset(out, 0, sizeof(*out));
	if (fstat(srcfd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if (st.st_size <= OBJ_SMALL && (max_bytes == 0 || (uint64_t)st.st_size <= max_bytes)) {
		err = store_small(objfd, srcfd, &st, tmpfile_ok, sync, out, retry);
		if (err)
			out->hex[0] = '\0';
		return nospace(err);
	}

	buf = malloc(OBJ_CHUNK);
	ctx = EVP_MD_CTX_new();
	if (buf == NULL || ctx == NULL || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
		err = -ENOMEM;
		goto fail;
	}
	err = tmp_create(objfd, tmpfile_ok, &t);
	if (err)
		goto fail;

	/* A reflink shares the blocks, so it costs no space and the size
	 * limit does not apply to it. */
	if (ioctl(t.fd, FICLONE, srcfd) == 0) {
		out->reflinked = true;
	} else if (errno == ENOSPC || errno == EDQUOT) {
		err = -errno;
		goto fail;
	} else if (max_bytes > 0 && (uint64_t)st.st_size > max_bytes) {
		out->too_large = true;
		goto fail;
	} else {
		/* Exactly the st_size bytes the limit was checked against: a
		 * file growing meanwhile adds nothing to the object. */
		err = copy_data(srcfd, t.fd, st.st_size, buf, ctx, &hashed);
		if (err)
			goto fail;
	}
	if (!hashed) {
		err = hash_fd(t.fd, buf, ctx);
		if (err)
			goto fail;
	}
	err = hash_final(ctx, out->hex);
	if (err)
		goto fail;

	/* The new file's own size: what a same-named object must match. */
	if (sync)
		fsb_sync_count(FSB_SYNC_OBJECT);
	if (fchmod(t.fd, 0400) < 0 || (sync && fsync(t.fd) < 0) || fstat(t.fd, &made) < 0) {
		err = -errno;
		goto fail;
	}
	err = link_in(objfd, &t, out->hex, made.st_size, buf, sync, retry);

fail:
	tmp_drop(objfd, &t);
	EVP_MD_CTX_free(ctx);
	free(buf);
	if (err)
		out->hex[0] = '\0';
	return nospace(err);
}

int fsb_object_store(int objfd, int srcfd, uint64_t max_bytes, bool *tmpfile_ok, bool sync,
		     struct fsb_object *out)
{
	bool retry;
	int err;

	err = store_once(objfd, srcfd, max_bytes, tmpfile_ok, sync, out, &retry);
	if (err && retry) {
		/* O_TMPFILE works but cannot be linked (no /proc and no
		 * CAP_DAC_READ_SEARCH): named temps from now on. */
		__atomic_store_n(tmpfile_ok, false, __ATOMIC_RELAXED);
		err = store_once(objfd, srcfd, max_bytes, tmpfile_ok, sync, out, &retry);
	}
	return err;
}

void fsb_object_clean(int objfd)
{
	struct dirent *de;
	DIR *d;
	int fd;

	fd = openat(objfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (d == NULL) {
		close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, TMP_PREFIX, strlen(TMP_PREFIX)) == 0)
			unlinkat(objfd, de->d_name, 0);
	}
	closedir(d);
}
