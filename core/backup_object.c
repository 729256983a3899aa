/*
 * backup_object.c — writing one content-addressed object of the backup store
 * (see backup_object.h): a new file, reflinked or copied, hashed from the
 * copy, fsynced and only then linked in under its name, so a crash leaves
 * either no object or a whole one.
 */
#include <errno.h>
#include <fcntl.h>
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

#include "backup_object.h"

#define OBJ_CHUNK 65536
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
		r = ((uint64_t)getpid() << 40) ^ ((uint64_t)ts.tv_nsec << 8) ^ counter++;
	}
	snprintf(buf, len, TMP_PREFIX "%016llx", (unsigned long long)r);
}

static int tmp_create(int objfd, bool *tmpfile_ok, struct tmp *t)
{
	t->name[0] = '\0';
	if (*tmpfile_ok) {
		t->fd = openat(objfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
		if (t->fd >= 0)
			return 0;
		/* EISDIR: a kernel without O_TMPFILE; the others: a
		 * filesystem without it. Anything else is a real error. */
		if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
			return -errno;
		*tmpfile_ok = false;
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
 * Copy src to dst up to src's EOF as it is now (a file growing meanwhile is
 * copied as far as it got). Offsets are explicit, so the caller's fd offset
 * stays where it was. When read/write did all of it, the content was also
 * hashed into ctx on the way and *hashed is set.
 */
static int copy_data(int src, int dst, unsigned char *buf, EVP_MD_CTX *ctx, bool *hashed)
{
	off_t off = 0;
	int err;

	for (;;) {
		off_t in = off, out = off;
		ssize_t n = copy_file_range(src, &in, dst, &out, OBJ_RANGE, 0);

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

	/* Also after copy_file_range reported EOF: some files (procfs-like)
	 * read as empty to it, and a real EOF costs one pread here. */
	*hashed = off == 0;
	for (;;) {
		ssize_t n = pread(src, buf, OBJ_CHUNK, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		if (*hashed && !EVP_DigestUpdate(ctx, buf, (size_t)n))
			return -ENOMEM;
		err = pwrite_all(dst, buf, (size_t)n, off);
		if (err)
			return err;
		off += n;
	}
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

static int hash_final(EVP_MD_CTX *ctx, char hex[FSB_SHA256_HEX_LEN + 1])
{
	static const char digits[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	if (!EVP_DigestFinal_ex(ctx, md, &mdlen) || mdlen * 2 != FSB_SHA256_HEX_LEN)
		return -ENOMEM;
	for (unsigned int i = 0; i < mdlen; i++) {
		hex[2 * i] = digits[md[i] >> 4];
		hex[2 * i + 1] = digits[md[i] & 0xf];
	}
	hex[FSB_SHA256_HEX_LEN] = '\0';
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
 * Link the finished file in as objects/<hh>/<hex> and fsync the directories
 * that got a new entry, so a journal line naming the object never outlives
 * it. An object of that name is already whole: keep it. *retry is set when
 * an O_TMPFILE cannot be given a name here at all.
 */
static int link_in(int objfd, struct tmp *t, const char *hex, bool *retry)
{
	char hh[3] = { hex[0], hex[1], '\0' };
	bool newdir = false;
	int dirfd, err;

	if (mkdirat(objfd, hh, 0700) == 0)
		newdir = true;
	else if (errno != EEXIST)
		return -errno;
	dirfd = openat(objfd, hh, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dirfd < 0)
		return -errno;

	if (t->name[0] != '\0')
		err = linkat(objfd, t->name, dirfd, hex, 0) < 0 ? -errno : 0;
	else
		err = link_tmpfile(t->fd, dirfd, hex);

	if (err == -EEXIST) {
		err = 0;
	} else if (err == 0) {
		if (fsync(dirfd) < 0)
			err = -errno;
	} else if (t->name[0] == '\0' && (err == -ENOENT || err == -EPERM)) {
		*retry = true;
	}
	if (err == 0 && newdir && fsync(objfd) < 0)
		err = -errno;
	close(dirfd);
	return err;
}

static int store_once(int objfd, int srcfd, uint64_t max_bytes, bool *tmpfile_ok,
		      struct fsb_object *out, bool *retry)
{
	struct tmp t = { .fd = -1, .name = "" };
	unsigned char *buf = NULL;
	EVP_MD_CTX *ctx = NULL;
	bool hashed = false;
	struct stat st;
	int err;

	*retry = false;
	memset(out, 0, sizeof(*out));
	if (fstat(srcfd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;

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
		err = copy_data(srcfd, t.fd, buf, ctx, &hashed);
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

	if (fchmod(t.fd, 0400) < 0 || fsync(t.fd) < 0) {
		err = -errno;
		goto fail;
	}
	err = link_in(objfd, &t, out->hex, retry);

fail:
	tmp_drop(objfd, &t);
	EVP_MD_CTX_free(ctx);
	free(buf);
	if (err)
		out->hex[0] = '\0';
	return nospace(err);
}

int fsb_object_store(int objfd, int srcfd, uint64_t max_bytes, bool *tmpfile_ok,
		     struct fsb_object *out)
{
	bool retry;
	int err;

	err = store_once(objfd, srcfd, max_bytes, tmpfile_ok, out, &retry);
	if (err && retry) {
		/* O_TMPFILE works but cannot be linked (no /proc and no
		 * CAP_DAC_READ_SEARCH): named temps from now on. */
		*tmpfile_ok = false;
		err = store_once(objfd, srcfd, max_bytes, tmpfile_ok, out, &retry);
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
