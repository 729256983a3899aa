/*
 * test_backup_faults.c — faults in the backup path through the real core: a
 * full or read-only backup store, a core killed in the middle of a large
 * copy, FIFOs and devices as targets. In every case a file changes only
 * after its backup is stored, and nothing makes the core hang. The crash
 * tests run once per backup.durability (docs/backup-store.md, "The
 * durability contract").
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/evp.h>

#define REPLY 8192
#define MIB ((size_t)1 << 20)

/* The tmpfs a test mounted (its teardown unmounts it) and a file filling
 * it, "" when none. One test runs at a time. */
static char mnt_dir[PATH_MAX];
static char filler[PATH_MAX + 16];

/* The backup.durability of the core the test runs with. */
static const char *durability = "strict";

static bool batched(void)
{
	return strcmp(durability, "batched") == 0;
}

/* A core on the default pack with backup.durability = `mode`. */
static int setup_durability(void **state, const char *mode)
{
	struct fsbt_core *c = fsbt_core_new();
	char pack[PATH_MAX + 16], text[256];

	durability = mode;
	snprintf(pack, sizeof(pack), "%s/durability.lua", c->rules_dir);
	snprintf(text, sizeof(text), "return { name = \"durability\", include = { \"default\" },\n"
		 "  backup = { durability = \"%s\" } }\n", mode);
	fsbt_write_file(pack, text);
	snprintf(c->rules, sizeof(c->rules), "%s", pack);
	fsbt_core_start(c);
	*state = c;
	return 0;
}

static int setup_strict(void **state)
{
	return setup_durability(state, "strict");
}

static int setup_batched(void **state)
{
	return setup_durability(state, "batched");
}

/* ------------------------------------------------------------------------ */
/* Files and hashes. */

static void store_dir(const struct fsbt_core *c, char *out, size_t len)
{
	snprintf(out, len, "%s/sessions/%s/modify_backup", c->state, c->session);
}

static void hex_of(const unsigned char *md, unsigned int len, char hex[65])
{
	static const char digits[] = "0123456789abcdef";

	for (unsigned int i = 0; i < len && i < 32; i++) {
		hex[2 * i] = digits[md[i] >> 4];
		hex[2 * i + 1] = digits[md[i] & 0xf];
	}
	hex[64] = '\0';
}

/* SHA-256 of a file's content, read in chunks (the files here are large). */
static int sha256_path(const char *path, char hex[65])
{
	unsigned char md[EVP_MAX_MD_SIZE], *buf = malloc(MIB);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned int mdlen = 0;
	int fd, err = 0;
	ssize_t n;

	/* O_NONBLOCK: a FIFO under an object's name must not hang the test. */
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 || buf == NULL || ctx == NULL || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
		err = fd < 0 ? -errno : -ENOMEM;
		goto out;
	}
	while ((n = read(fd, buf, MIB)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			goto out;
		}
		EVP_DigestUpdate(ctx, buf, (size_t)n);
	}
	if (!EVP_DigestFinal_ex(ctx, md, &mdlen))
		err = -ENOMEM;
	else
		hex_of(md, mdlen, hex);
out:
	if (fd >= 0)
		close(fd);
	EVP_MD_CTX_free(ctx);
	free(buf);
	return err;
}

/*
 * Write `size` bytes of a pattern that differs from MiB to MiB (so neither
 * a filesystem nor the store can share or skip any of it) to `path`, and
 * return its SHA-256 in `hex`.
 */
static void make_file(const char *path, size_t size, uint64_t seed, char hex[65])
{
	unsigned char md[EVP_MAX_MD_SIZE], *buf = malloc(MIB);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned int mdlen = 0;
	uint64_t x = seed | 1;
	size_t off = 0;
	int fd;

	assert_non_null(buf);
	assert_non_null(ctx);
	assert_true(EVP_DigestInit_ex(ctx, EVP_sha256(), NULL));
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		fail_msg("cannot create %s: %s", path, strerror(errno));
	while (off < size) {
		size_t chunk = size - off < MIB ? size - off : MIB;

		for (size_t i = 0; i + 8 <= MIB; i += 8) {
			/* xorshift64 */
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			memcpy(buf + i, &x, 8);
		}
		EVP_DigestUpdate(ctx, buf, chunk);
		for (size_t done = 0; done < chunk;) {
			ssize_t n = write(fd, buf + done, chunk - done);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				fail_msg("cannot write %s: %s", path, strerror(errno));
			done += (size_t)n;
		}
		off += chunk;
	}
	close(fd);
	assert_true(EVP_DigestFinal_ex(ctx, md, &mdlen));
	hex_of(md, mdlen, hex);
	EVP_MD_CTX_free(ctx);
	free(buf);
}

/* What "unchanged" compares: content, size, and the times any change of
 * the file moves. */
struct file_state {
	off_t size;
	struct timespec mtime, ctime;
	char sha[65];
};

static void file_state(const char *path, struct file_state *fs)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		fail_msg("%s: %s", path, strerror(errno));
	fs->size = st.st_size;
	fs->mtime = st.st_mtim;
	fs->ctime = st.st_ctim;
	assert_int_equal(sha256_path(path, fs->sha), 0);
}

static bool file_unchanged(const char *path, const struct file_state *before, char *why,
			   size_t len)
{
	struct file_state now;

	file_state(path, &now);
	if (now.size != before->size || strcmp(now.sha, before->sha) != 0)
		snprintf(why, len, "%s: content changed (size was %lld, is %lld)", path,
			 (long long)before->size, (long long)now.size);
	else if (now.mtime.tv_sec != before->mtime.tv_sec ||
		 now.mtime.tv_nsec != before->mtime.tv_nsec)
		snprintf(why, len, "%s: mtime changed", path);
	else if (now.ctime.tv_sec != before->ctime.tv_sec ||
		 now.ctime.tv_nsec != before->ctime.tv_nsec)
		snprintf(why, len, "%s: ctime changed (its inode was changed)", path);
	else
		return true;
	return false;
}

/* The DENY reply's errno name ("" when the reply is no DENY). */
static const char *deny_errno(const char *reply, char *buf, size_t len)
{
	buf[0] = '\0';
	if (fsbt_starts(reply, "DENY "))
		snprintf(buf, len, "%.*s", (int)strcspn(reply + 5, " "), reply + 5);
	return buf;
}

static bool is_space_errno(const char *name)
{
	return strcmp(name, "ENOSPC") == 0 || strcmp(name, "EIO") == 0;
}

/* ------------------------------------------------------------------------ */
/* Talking to the core. */

/* A connection whose reads give up after `ms`: a reply later than that is
 * a core that hangs. */
static int connect_within(const struct fsbt_core *c, unsigned ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
	int fd = fsbt_connect(c);

	assert_true(fd >= 0);
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	return fd;
}

static long req_id;

/* A HostFileOperation with the other fields `fields`; NULL when no reply. */
static cJSON *__attribute__((format(printf, 3, 4)))
hostop(const struct fsbt_core *c, int fd, const char *fields, ...)
{
	char *inner = NULL, *line = NULL;
	va_list ap;
	cJSON *r;

	va_start(ap, fields);
	assert_true(vasprintf(&inner, fields, ap) > 0);
	va_end(ap);
	assert_true(asprintf(&line, "{\"id\":%ld,\"command\":\"HostFileOperation\","
				    "\"sessionId\":\"%s\",\"toolCallId\":\"%s\",%s}",
			     ++req_id, c->session, FSBT_TOOL_CALL, inner) > 0);
	r = fsbt_hostop(fd, line);
	free(inner);
	free(line);
	return r;
}

/* A refused host operation: ok:false with one of the backup errnos. */
static void assert_refused_for_space(cJSON *r, const char *what)
{
	if (r == NULL)
		fail_msg("%s: no reply", what);
	if (fsbt_ok(r) || !is_space_errno(fsbt_str(r, "errno")))
		fail_msg("%s: expected ok:false with ENOSPC or EIO, got ok:%s errno '%s' (%s)",
			 what, fsbt_ok(r) ? "true" : "false", fsbt_str(r, "errno"),
			 fsbt_str(r, "error"));
	fprintf(stderr, "# %s: refused, %s (%s)\n", what, fsbt_str(r, "errno"),
		fsbt_str(r, "error"));
	cJSON_Delete(r);
}

static void grant(struct fsbt_core *c, int fd, const char *path, char *reply, int *got)
{
	char line[PATH_MAX + 256];

	fsbt_text_req(line, sizeof(line), FSBT_WRITE, path, c->session, FSBT_OPEN_WRITE);
	assert_true(fsbt_request(fd, line, reply, REPLY, got) > 0);
}

/* The first journal line, in any cycle, whose `resolved` is `path` (parsed),
 * or NULL. */
static cJSON *journal_entry_for(const struct fsbt_core *c, const char *path)
{
	char dir[PATH_MAX], jpath[PATH_MAX * 2];
	cJSON *found = NULL;

	store_dir(c, dir, sizeof(dir));
	for (int n = 1; n < 1000 && found == NULL; n++) {
		char *text, *line, *save = NULL;

		snprintf(jpath, sizeof(jpath), "%s/cycles/%d/journal.jsonl", dir, n);
		if ((text = fsbt_read_file(jpath, NULL)) == NULL) {
			struct stat st;

			snprintf(jpath, sizeof(jpath), "%s/cycles/%d", dir, n);
			if (stat(jpath, &st) < 0)
				break;
			continue;
		}
		for (line = strtok_r(text, "\n", &save); line != NULL && found == NULL;
		     line = strtok_r(NULL, "\n", &save)) {
			cJSON *j = cJSON_Parse(line);

			if (j != NULL && strcmp(fsbt_str(j, "resolved"), path) == 0)
				found = j;
			else
				cJSON_Delete(j);
		}
		free(text);
	}
	return found;
}

/*
 * Every object under objects/ is whole: objects/<hh>/<hex>, a regular file
 * whose SHA-256 is its name. Temporaries (.tmp-*) count as problems only
 * when `tmp_ok` is false. Returns the number of problems, described in `why`.
 */
static int check_objects(const struct fsbt_core *c, bool tmp_ok, char *why, size_t len)
{
	char dir[PATH_MAX], obj[PATH_MAX * 2];
	struct dirent *de;
	int bad = 0;
	DIR *d;

	why[0] = '\0';
	store_dir(c, dir, sizeof(dir));
	snprintf(obj, sizeof(obj), "%s/objects", dir);
	if ((d = opendir(obj)) == NULL) {
		snprintf(why, len, "cannot open %s: %s", obj, strerror(errno));
		return 1;
	}
	while ((de = readdir(d)) != NULL) {
		char sub[PATH_MAX * 3];
		struct dirent *oe;
		DIR *sd;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", obj, de->d_name);
		if (fsbt_starts(de->d_name, ".tmp-")) {
			if (!tmp_ok) {
				bad++;
				snprintf(why, len, "a temporary %s is left in objects/", de->d_name);
			}
			continue;
		}
		if (strlen(de->d_name) != 2 || (sd = opendir(sub)) == NULL) {
			bad++;
			snprintf(why, len, "objects/%s is no object directory", de->d_name);
			continue;
		}
		while ((oe = readdir(sd)) != NULL) {
			char path[PATH_MAX * 4], sha[65];
			struct stat st;

			if (strcmp(oe->d_name, ".") == 0 || strcmp(oe->d_name, "..") == 0)
				continue;
			snprintf(path, sizeof(path), "%s/%s", sub, oe->d_name);
			if (lstat(path, &st) < 0 || !S_ISREG(st.st_mode) ||
			    sha256_path(path, sha) < 0 || strcmp(sha, oe->d_name) != 0 ||
			    strncmp(oe->d_name, de->d_name, 2) != 0) {
				bad++;
				snprintf(why, len, "objects/%s/%s does not hold what its name says",
					 de->d_name, oe->d_name);
			}
		}
		closedir(sd);
	}
	closedir(d);
	return bad;
}

/*
 * Every object a journal line names is in the store, whole: a line never
 * outlives its object. Returns the number of lines that name a missing or
 * damaged one, described in `why`.
 */
static int check_journal_objects(const struct fsbt_core *c, char *why, size_t len)
{
	char dir[PATH_MAX], jpath[PATH_MAX * 2];
	int bad = 0;

	why[0] = '\0';
	store_dir(c, dir, sizeof(dir));
	for (int n = 1; n < 1000; n++) {
		char *text, *line, *save = NULL;
		struct stat st;

		snprintf(jpath, sizeof(jpath), "%s/cycles/%d", dir, n);
		if (stat(jpath, &st) < 0)
			break;
		snprintf(jpath, sizeof(jpath), "%s/cycles/%d/journal.jsonl", dir, n);
		if ((text = fsbt_read_file(jpath, NULL)) == NULL)
			continue;
		for (line = strtok_r(text, "\n", &save); line != NULL;
		     line = strtok_r(NULL, "\n", &save)) {
			cJSON *j = cJSON_Parse(line);
			const char *hex = fsbt_str(cJSON_GetObjectItem(j, "prior"), "object");
			char obj[PATH_MAX * 3], sha[65];

			if (j == NULL) {
				bad++;
				snprintf(why, len, "cycle %d: a journal line is not JSON: %.80s", n,
					 line);
				continue;
			}
			snprintf(obj, sizeof(obj), "%s/objects/%.2s/%s", dir, hex, hex);
			if (hex[0] != '\0' && (sha256_path(obj, sha) < 0 || strcmp(sha, hex) != 0)) {
				bad++;
				snprintf(why, len, "cycle %d: the journal names object %s, which is "
					 "missing or damaged", n, hex);
			}
			cJSON_Delete(j);
		}
		free(text);
	}
	return bad;
}

/* The cycles without cycle.json (open), as a bit set of cycle numbers < 64. */
/* The open cycles whose journal was made: a crash between a cycle's mkdir
 * and its journal's create leaves one without, which the next start takes
 * away rather than seal (nothing in it to restore). */
static uint64_t journaled_cycles(const struct fsbt_core *c, uint64_t open)
{
	char dir[PATH_MAX], p[PATH_MAX * 2];
	uint64_t set = 0;
	struct stat st;

	store_dir(c, dir, sizeof(dir));
	for (int n = 1; n < 64; n++) {
		snprintf(p, sizeof(p), "%s/cycles/%d/journal.jsonl", dir, n);
		if ((open & ((uint64_t)1 << n)) && stat(p, &st) == 0)
			set |= (uint64_t)1 << n;
	}
	return set;
}

static uint64_t open_cycles(const struct fsbt_core *c)
{
	char dir[PATH_MAX], p[PATH_MAX * 2];
	uint64_t set = 0;
	struct stat st;

	store_dir(c, dir, sizeof(dir));
	for (int n = 1; n < 64; n++) {
		snprintf(p, sizeof(p), "%s/cycles/%d", dir, n);
		if (stat(p, &st) < 0)
			continue;
		snprintf(p, sizeof(p), "%s/cycles/%d/cycle.json", dir, n);
		if (stat(p, &st) < 0)
			set |= (uint64_t)1 << n;
	}
	return set;
}

/* Stop the core (Shutdown, else SIGKILL) and keep its temp dir: -1 when it
 * did not exit cleanly. */
static int core_halt(struct fsbt_core *c)
{
	static const char line[] = "{\"id\":\"halt\",\"command\":\"Shutdown\"}\n";
	int rc = 0;

	if (c->pid <= 0)
		return 0;
	if (c->ctl_in >= 0 && write(c->ctl_in, line, sizeof(line) - 1) < 0)
		(void)0;	/* gone already: the wait reaps it */
	if (fsbt_core_wait_exit(c, FSBT_TIMEOUT_MS) < 0) {
		fprintf(stderr, "# core pid %d did not stop: killed\n", (int)c->pid);
		kill(c->pid, SIGKILL);
		waitpid(c->pid, &c->exit_status, 0);
		c->pid = 0;
		rc = -1;
	} else if (!WIFEXITED(c->exit_status) || WEXITSTATUS(c->exit_status) != 0) {
		char *log = fsbt_core_log(c);

		fprintf(stderr, "# the core did not exit cleanly (status 0x%x); its log:\n%s\n",
			(unsigned)c->exit_status, log);
		free(log);
		rc = -1;
	}
	return rc;
}

/* After a SIGKILL: reap the core and drop its control channel. */
static void core_reap_killed(struct fsbt_core *c)
{
	assert_int_equal(fsbt_core_wait_exit(c, FSBT_TIMEOUT_MS), 0);
	close(c->ctl_in);
	close(c->ctl_out);
	c->ctl_in = c->ctl_out = -1;
}

/* ------------------------------------------------------------------------ */
/* A tmpfs for the state dir. */

/* Mount a tmpfs of `size` (a mount option, e.g. "4m") on `dir` (made 0700
 * if missing); skips the test when this machine does not let us. */
static void mount_tmpfs(const char *dir, const char *size)
{
	char opts[64];

	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		fail_msg("cannot create %s: %s", dir, strerror(errno));
	snprintf(opts, sizeof(opts), "size=%s,mode=0700", size);
	if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
		fsbt_skip("cannot mount a tmpfs on %s (%s): the test needs root and "
			  "permission to mount", dir, strerror(errno));
	snprintf(mnt_dir, sizeof(mnt_dir), "%s", dir);
}

/* Fill the filesystem of `dir` with the file `dir`/filler so that `leave`
 * bytes stay free. */
static void fill_leaving(const char *dir, size_t leave)
{
	size_t chunk = 64 * 1024, want;
	struct statvfs sv;
	char *zero;
	int fd;

	assert_int_equal(statvfs(dir, &sv), 0);
	want = (size_t)sv.f_bavail * sv.f_frsize;
	assert_true(want > leave);
	want -= leave;
	snprintf(filler, sizeof(filler), "%s/filler", dir);
	fd = open(filler, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	zero = calloc(1, chunk);
	assert_non_null(zero);
	for (size_t off = 0; off < want;) {
		size_t n = want - off < chunk ? want - off : chunk;
		ssize_t w = write(fd, zero, n);

		if (w <= 0)
			fail_msg("cannot fill %s: %s", dir, strerror(errno));
		off += (size_t)w;
	}
	free(zero);
	close(fd);
	assert_int_equal(statvfs(dir, &sv), 0);
	fprintf(stderr, "# %s: %llu KiB left free\n", dir,
		(unsigned long long)sv.f_bavail * sv.f_frsize / 1024);
}

static int setup_layout(void **state)
{
	mnt_dir[0] = filler[0] = '\0';
	*state = fsbt_core_new();
	return 0;
}

/* Make room, make the tmpfs writable again, stop the core, unmount, then
 * let the harness remove the rest. */
static int teardown_mounted(void **state)
{
	struct fsbt_core *c = *state;
	int rc;

	if (filler[0] != '\0')
		unlink(filler);
	if (mnt_dir[0] != '\0' && mount("tmpfs", mnt_dir, "tmpfs", MS_REMOUNT, NULL) < 0)
		fprintf(stderr, "# cannot remount %s read-write: %s\n", mnt_dir, strerror(errno));
	rc = core_halt(c);
	if (mnt_dir[0] != '\0' && umount2(mnt_dir, 0) < 0 && umount2(mnt_dir, MNT_DETACH) < 0)
		fprintf(stderr, "# cannot unmount %s: %s\n", mnt_dir, strerror(errno));
	mnt_dir[0] = filler[0] = '\0';
	if (fsbt_core_stop(c) < 0)
		rc = -1;
	*state = NULL;
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Tests. */

/*
 * The state dir (store and audit log) on a full filesystem: every change
 * that needs a backup of a 1 MiB file is refused and nothing in the
 * workspace moves, not even an mtime. With room again, the same grant
 * works and is journaled with its object.
 */
static void full_disk_refuses_changes_instead_of_skipping_their_backup(void **state)
{
	struct fsbt_core *c = *state;
	char big[PATH_MAX + 16], src[PATH_MAX + 16], over[PATH_MAX + 16], doomed[PATH_MAX + 16];
	char reply[REPLY], en[32], why[512], sha_big[65], obj[PATH_MAX * 2], sha[65];
	char dir[PATH_MAX];
	struct fsbt_tree before, after;
	int fd, got = -1;
	cJSON *j, *prior;

	/* Room for the audit log and an empty store, never for a 1 MiB copy;
	 * once the filler is gone, room for that copy too. */
	mount_tmpfs(c->state, "4m");
	snprintf(big, sizeof(big), "%s/big.bin", c->ws);
	snprintf(src, sizeof(src), "%s/src.txt", c->ws);
	snprintf(over, sizeof(over), "%s/over.bin", c->ws);
	snprintf(doomed, sizeof(doomed), "%s/doomed.bin", c->ws);
	make_file(big, MIB, 1, sha_big);
	make_file(over, MIB, 2, sha);
	make_file(doomed, MIB, 3, sha);
	fsbt_write_file(src, "a small source\n");
	fsbt_core_start(c);
	fill_leaving(c->state, 32 * 1024);

	assert_int_equal(fsbt_tree_snap(c->ws, &before), 0);
	fd = fsbt_connect(c);
	assert_true(fd >= 0);

	grant(c, fd, big, reply, &got);
	fprintf(stderr, "# write grant: %s\n", reply);
	assert_true(is_space_errno(deny_errno(reply, en, sizeof(en))));
	assert_int_equal(got, -1);

	assert_refused_for_space(hostop(c, fd, "\"operation\":\"rename\",\"from\":\"%s\","
					"\"to\":\"%s\"", src, over), "rename over a 1 MiB file");
	assert_refused_for_space(hostop(c, fd, "\"operation\":\"delete\",\"path\":\"%s\","
					"\"deleteMode\":\"unlink\"", doomed),
				 "delete of a 1 MiB file");
	assert_refused_for_space(hostop(c, fd, "\"operation\":\"copy\",\"from\":\"%s\","
					"\"to\":\"%s\"", src, over), "copy over a 1 MiB file");

	/* Nothing in the workspace changed: no content, no mtime, no ctime
	 * (not even a chmod or a link on the way), no entry. */
	assert_int_equal(fsbt_tree_snap(c->ws, &after), 0);
	if (fsbt_tree_diff(&before, &after, FSBT_TREE_MTIME | FSBT_TREE_CTIME | FSBT_TREE_NLINK,
			   why, sizeof(why)) != 0)
		fail_msg("the workspace changed although every change was refused:\n%s", why);
	fsbt_tree_free(&before);
	fsbt_tree_free(&after);
	/* A failed copy leaves no temporary behind to eat the space, and no
	 * journal line names an object that is not there. */
	if (check_objects(c, false, why, sizeof(why)) != 0 ||
	    check_journal_objects(c, why, sizeof(why)) != 0)
		fail_msg("%s", why);

	/* With room again the same grant goes through, backed up first. */
	assert_int_equal(unlink(filler), 0);
	filler[0] = '\0';
	grant(c, fd, big, reply, &got);
	assert_string_equal(reply, "FD");
	assert_true(got >= 0);
	close(got);
	j = journal_entry_for(c, big);
	assert_non_null(j);
	assert_string_equal(fsbt_str(j, "op"), "write");
	prior = cJSON_GetObjectItem(j, "prior");
	assert_string_equal(fsbt_str(prior, "object"), sha_big);
	store_dir(c, dir, sizeof(dir));
	snprintf(obj, sizeof(obj), "%s/objects/%.2s/%s", dir, sha_big, sha_big);
	assert_int_equal(sha256_path(obj, sha), 0);
	assert_string_equal(sha, sha_big);
	cJSON_Delete(j);
	fsbt_close(fd);
}

/*
 * The backup store turned read-only under a running core: a write grant and
 * a host delete are refused and the files stay as they were.
 *
 * The tmpfs holds <state>/sessions (the store), not the whole state dir: the
 * core keeps the audit log open for writing, and the kernel refuses to make
 * a filesystem read-only while a file on it is open for writing (EBUSY). The
 * store holds no file open for writing until a cycle opens, so it can be.
 */
static void read_only_store_refuses_changes(void **state)
{
	struct fsbt_core *c = *state;
	char sessions[PATH_MAX + 16], path[PATH_MAX + 16], objs[PATH_MAX * 2], dir[PATH_MAX];
	char reply[REPLY], why[512];
	struct file_state before;
	struct stat st;
	int fd, got = -1;
	cJSON *r;

	if (mkdir(c->state, 0700) < 0)
		fail_msg("cannot create %s: %s", c->state, strerror(errno));
	snprintf(sessions, sizeof(sessions), "%s/sessions", c->state);
	mount_tmpfs(sessions, "4m");
	snprintf(path, sizeof(path), "%s/kept.txt", c->ws);
	fsbt_write_file(path, "must stay as it is\n");
	fsbt_core_start(c);
	/* The core opened its store when it started. */
	store_dir(c, dir, sizeof(dir));
	snprintf(objs, sizeof(objs), "%s/objects", dir);
	assert_int_equal(stat(objs, &st), 0);

	if (mount("tmpfs", sessions, "tmpfs", MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV,
		  NULL) < 0)
		fail_msg("cannot remount %s read-only: %s (does the core hold a file in its "
			 "store open for writing before any backup?)", sessions, strerror(errno));
	file_state(path, &before);
	fd = fsbt_connect(c);
	assert_true(fd >= 0);

	grant(c, fd, path, reply, &got);
	fprintf(stderr, "# write grant: %s\n", reply);
	assert_true(fsbt_starts(reply, "DENY "));
	assert_int_equal(got, -1);
	if (!file_unchanged(path, &before, why, sizeof(why)))
		fail_msg("%s", why);

	r = hostop(c, fd, "\"operation\":\"delete\",\"path\":\"%s\",\"deleteMode\":\"unlink\"",
		   path);
	assert_non_null(r);
	fprintf(stderr, "# delete: ok:%s %s\n", fsbt_ok(r) ? "true" : "false",
		fsbt_str(r, "errno"));
	assert_false(fsbt_ok(r));
	cJSON_Delete(r);
	r = hostop(c, fd, "\"operation\":\"delete\",\"path\":\"%s\"", path);	/* to the trash */
	assert_non_null(r);
	assert_false(fsbt_ok(r));
	cJSON_Delete(r);
	if (!file_unchanged(path, &before, why, sizeof(why)))
		fail_msg("%s", why);

	/* The host's own edit tool is told that no backup was taken. */
	r = fsbt_control_cmd(c, "ModifyBackup", "\"path\":\"%s\"", path);
	assert_false(fsbt_ok(r));
	cJSON_Delete(r);
	fsbt_close(fd);
}

/*
 * SIGKILL at several moments of the backup of a 256 MiB file: the file is
 * never changed without a whole backup of it, the store holds no partial
 * object, the cycle left open is sealed as recovered at the next start, and
 * the backup CLI reads the store and finds nothing corrupted.
 */
static void core_killed_during_a_large_backup_leaves_file_and_store_whole(void **state)
{
	/* 0: after the reply, when the file was granted (and truncated). */
	static const unsigned delays_ms[] = { 5, 30, 100, 300, 0 };
	struct fsbt_core *c = *state;
	char big[PATH_MAX + 16], a[PATH_MAX + 16], b[PATH_MAX + 16], line[PATH_MAX + 256];
	char reply[REPLY], why[512], sha[65], orig[65], dir[PATH_MAX];
	unsigned during = 0;
	struct file_state before;
	struct statfs sf;
	int fd, af, bf;
	cJSON *r;

	/* A reflink would make the backup instant: nothing to kill it in. */
	snprintf(a, sizeof(a), "%s/reflink-a", c->ws);
	snprintf(b, sizeof(b), "%s/reflink-b", c->ws);
	fsbt_write_file(a, "probe\n");
	af = open(a, O_RDONLY | O_CLOEXEC);
	bf = open(b, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	assert_true(af >= 0 && bf >= 0);
	if (ioctl(bf, FICLONE, af) == 0) {
		close(af);
		close(bf);
		fsbt_skip("the workspace's filesystem makes reflinks: a backup takes no time "
			  "to be killed in");
	}
	close(af);
	close(bf);
	unlink(a);
	unlink(b);
	assert_int_equal(statfs(c->ws, &sf), 0);
	fprintf(stderr, "# workspace filesystem type 0x%lx, no reflinks\n", (unsigned long)sf.f_type);

	snprintf(big, sizeof(big), "%s/big.bin", c->ws);
	make_file(big, 256 * MIB, 42, orig);
	memcpy(before.sha, orig, sizeof(before.sha));
	store_dir(c, dir, sizeof(dir));

	for (size_t i = 0; i < sizeof(delays_ms) / sizeof(delays_ms[0]); i++) {
		char *out = NULL;
		uint64_t open_before, open_after, journaled;
		bool replied;
		int got = -1, status;
		struct stat st;
		ssize_t n;

		/* As the last round left it (a restore sets a new ctime); its
		 * content is the original, checked at the end of each round. */
		assert_int_equal(lstat(big, &st), 0);
		before.size = st.st_size;
		before.mtime = st.st_mtim;
		before.ctime = st.st_ctim;
		r = fsbt_control_cmd(c, "EnableModifyBackup",
				     "\"enabled\":true,\"fileBackupMaxSizeMB\":1024");
		assert_true(fsbt_ok(r));
		cJSON_Delete(r);

		fd = fsbt_connect(c);
		assert_true(fd >= 0);
		fsbt_text_req(line, sizeof(line), FSBT_WRITE, big, c->session, FSBT_OPEN_WRITE);
		assert_int_equal(fsbt_send(fd, line, strlen(line), -1), 0);
		if (delays_ms[i] > 0) {
			fsbt_sleep_ms(delays_ms[i]);
			kill(c->pid, SIGKILL);
			core_reap_killed(c);
			n = fsbt_read_reply(fd, reply, sizeof(reply), &got);
		} else {
			n = fsbt_read_reply(fd, reply, sizeof(reply), &got);
			assert_true(n > 0);
			assert_string_equal(reply, "FD");
			kill(c->pid, SIGKILL);
			core_reap_killed(c);
		}
		replied = n >= 0;
		if (got >= 0)
			close(got);
		fsbt_close(fd);
		open_before = open_cycles(c);
		if (delays_ms[i] > 0)
			fprintf(stderr, "# kill after %u ms: %s%s%s\n", delays_ms[i],
				replied ? "after the reply " : "during the backup (no reply)",
				replied ? reply : "", open_before ? ", a cycle was open" : "");
		else
			fprintf(stderr, "# kill right after the reply %s%s\n", reply,
				open_before ? ", a cycle was open" : "");
		if (!replied && open_before != 0)
			during++;

		/* Unchanged, or changed only after its whole backup was stored. */
		if (!file_unchanged(big, &before, why, sizeof(why))) {
			cJSON *j = journal_entry_for(c, big);
			const char *hex = fsbt_str(cJSON_GetObjectItem(j, "prior"), "object");
			char objp[PATH_MAX * 2];

			fprintf(stderr, "# %s; looking for its backup\n", why);
			if (strcmp(hex, orig) != 0)
				fail_msg("%s without a backup of its content in the journal", why);
			snprintf(objp, sizeof(objp), "%s/objects/%.2s/%s", dir, hex, hex);
			assert_int_equal(sha256_path(objp, sha), 0);
			assert_string_equal(sha, orig);
			cJSON_Delete(j);
		}
		/* An object is either whole or not there, and so is every object
		 * the journal names; a named temporary may be there (the next
		 * start removes it). */
		if (check_objects(c, true, why, sizeof(why)) != 0 ||
		    check_journal_objects(c, why, sizeof(why)) != 0)
			fail_msg("after the kill at %u ms: %s", delays_ms[i], why);

		journaled = journaled_cycles(c, open_before);
		fsbt_core_start(c);
		open_after = open_cycles(c);
		assert_int_equal(open_after, 0);
		for (int cy = 1; cy < 64; cy++) {
			char p[PATH_MAX * 2], *text;
			cJSON *sealed;

			if (!(open_before & ((uint64_t)1 << cy)))
				continue;
			snprintf(p, sizeof(p), "%s/cycles/%d/cycle.json", dir, cy);
			text = fsbt_read_file(p, NULL);
			/* Killed before its journal was made: taken away. */
			if (text == NULL && !(journaled & ((uint64_t)1 << cy))) {
				snprintf(p, sizeof(p), "%s/cycles/%d", dir, cy);
				assert_int_equal(access(p, F_OK), -1);
				continue;
			}
			assert_non_null(text);
			sealed = cJSON_Parse(text);
			free(text);
			assert_true(cJSON_IsTrue(cJSON_GetObjectItem(sealed, "recovered")));
			cJSON_Delete(sealed);
		}
		if (check_objects(c, false, why, sizeof(why)) != 0)
			fail_msg("after the restart: %s", why);

		status = fsbt_run((char *[]){ (char *)fsbt_binary(), "backup", "list",
					      "--state-dir", c->state, "--session", c->session,
					      NULL }, &out);
		if (status != 0)
			fprintf(stderr, "# backup list said:\n%s", out);
		assert_int_equal(status, 0);
		free(out);
		status = fsbt_run((char *[]){ (char *)fsbt_binary(), "backup", "restore", "--last",
					      "--force", "--state-dir", c->state, "--session",
					      c->session, NULL }, &out);
		/* Exit 2 "no backup cycles yet" only when the kill came before
		 * the store had any cycle (a slow core, under a sanitizer). */
		if (status == -1 || !WIFEXITED(status) ||
		    (WEXITSTATUS(status) > 1 &&
		     !(WEXITSTATUS(status) == 2 && open_before == 0 &&
		       strstr(out, "no backup cycles yet") != NULL)) ||
		    strstr(out, "corrupt") != NULL)
			fail_msg("backup restore --last --force: status 0x%x:\n%s",
				 (unsigned)status, out);
		free(out);
		/* Whatever happened, the file is the original again. */
		assert_int_equal(sha256_path(big, sha), 0);
		assert_string_equal(sha, orig);
	}
	/* Else nothing here tested a kill in the middle of a backup. */
	if (during == 0)
		fail_msg("no kill landed during a backup: every request was answered first");
}

/* Grant `path` for writing (O_CREAT|O_TRUNC) and write `text` through the fd. */
static void grant_and_write(struct fsbt_core *c, int fd, const char *path, const char *text)
{
	char reply[REPLY];
	int got = -1;

	grant(c, fd, path, reply, &got);
	if (strcmp(reply, "FD") != 0 || got < 0)
		fail_msg("grant of %s: %s", path, reply);
	assert_int_equal(write(got, text, strlen(text)), (ssize_t)strlen(text));
	close(got);
}

/*
 * The journal line of a created path is not synced on its own (see
 * docs/backup-store.md, "When a line is durable"). A kill right after such
 * lines loses none of them (they are written before the reply); a power
 * loss may lose those after the last synced line, even leave half of one.
 * Both are staged here: the core is killed right after five creates that
 * follow the synced backup of an existing file, and the journal is then cut
 * where a power loss may cut it, in the middle of the first unsynced line.
 * After the restart the cycle is recovered and the store reads; a restore
 * brings the existing file back, removes the new files whose lines are
 * left, leaves those whose lines were lost, and never deletes a file that
 * existed before the cycle.
 * Batched, old.txt's line was not synced before its change either: the
 * power loss staged there keeps that line but not the object it names (no
 * order between the two reaches the disk). The store still reads, the
 * restore says the object is missing and leaves old.txt as the change left
 * it (the backup that batched mode may lose), and does the rest.
 */
static void core_killed_after_unsynced_create_lines_recovers(void **state)
{
	struct fsbt_core *c = *state;
	char dir[PATH_MAX], jpath[PATH_MAX * 2], old[PATH_MAX + 16], keep[PATH_MAX + 16];
	char news[10][PATH_MAX + 16], key[PATH_MAX + 32], *text, *out = NULL, *hit, *eol;
	char object[PATH_MAX * 2 + 80], *obj;
	off_t cut;
	size_t len;
	int fd, status, lines = 0;

	store_dir(c, dir, sizeof(dir));
	snprintf(old, sizeof(old), "%s/old.txt", c->ws);
	snprintf(keep, sizeof(keep), "%s/keep.txt", c->ws);
	fsbt_write_file(old, "old bytes\n");
	fsbt_write_file(keep, "kept\n");
	for (int i = 0; i < 10; i++)
		snprintf(news[i], sizeof(news[i]), "%s/new-%d.txt", c->ws, i);

	fd = fsbt_connect(c);
	assert_true(fd >= 0);
	for (int i = 0; i < 5; i++)
		grant_and_write(c, fd, news[i], "new\n");
	grant_and_write(c, fd, old, "changed\n");
	for (int i = 5; i < 10; i++)
		grant_and_write(c, fd, news[i], "new\n");
	kill(c->pid, SIGKILL);
	core_reap_killed(c);
	fsbt_close(fd);

	/* A kill loses no line: all eleven were written before their replies. */
	snprintf(jpath, sizeof(jpath), "%s/cycles/1/journal.jsonl", dir);
	text = fsbt_read_file(jpath, &len);
	assert_non_null(text);
	for (size_t i = 0; i < len; i++)
		lines += text[i] == '\n';
	/* And the workspace's own line ("entries"), before the first create. */
	assert_int_equal(lines, 12);
	/* The power loss: everything after old.txt's line, which was synced
	 * before its change, may be gone; here it is cut in the middle of the
	 * next line. */
	snprintf(key, sizeof(key), "\"resolved\":\"%s\"", old);
	hit = strstr(text, key);
	assert_non_null(hit);
	eol = strchr(hit, '\n');
	assert_non_null(eol);
	cut = (off_t)(eol + 1 - text) + 20;
	if (batched()) {
		*eol = '\0';
		obj = strstr(hit, "\"object\":\"");
		assert_non_null(obj);
		obj += strlen("\"object\":\"");
		snprintf(object, sizeof(object), "%s/objects/%.2s/%.64s", dir, obj, obj);
		assert_int_equal(unlink(object), 0);
	}
	free(text);
	assert_int_equal(truncate(jpath, cut), 0);

	fsbt_core_start(c);
	assert_int_equal(open_cycles(c), 0);
	snprintf(jpath, sizeof(jpath), "%s/cycles/1/cycle.json", dir);
	text = fsbt_read_file(jpath, NULL);
	assert_non_null(text);
	assert_non_null(strstr(text, "\"recovered\":true"));
	free(text);

	status = fsbt_run((char *[]){ (char *)fsbt_binary(), "backup", "list", "--state-dir",
				      c->state, "--session", c->session, NULL }, &out);
	if (status != 0)
		fail_msg("backup list: status 0x%x:\n%s", (unsigned)status, out);
	free(out);
	status = fsbt_run((char *[]){ (char *)fsbt_binary(), "backup", "restore", "1", "--force",
				      "--state-dir", c->state, "--session", c->session, NULL },
			  &out);
	fprintf(stderr, "# restore of the recovered cycle said:\n%s", out);
	if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) > 1 ||
	    strstr(out, "corrupt") != NULL)
		fail_msg("backup restore 1 --force: status 0x%x:\n%s", (unsigned)status, out);
	if (batched() && strstr(out, "missing") == NULL)
		fail_msg("the restore did not say old.txt's object is missing:\n%s", out);
	free(out);

	text = fsbt_read_file(old, NULL);
	assert_non_null(text);
	assert_string_equal(text, batched() ? "changed\n" : "old bytes\n");
	free(text);
	text = fsbt_read_file(keep, NULL);
	assert_non_null(text);
	assert_string_equal(text, "kept\n");
	free(text);
	for (int i = 0; i < 10; i++) {
		struct stat st;
		bool there = lstat(news[i], &st) == 0;

		if (i < 5 && there)
			fail_msg("%s: its line was synced with old.txt's, yet the restore left it",
				 news[i]);
		if (i >= 5 && !there)
			fail_msg("%s: its line was cut off, yet something removed it", news[i]);
	}
}

/* A FIFO under a path never makes the core wait for a peer that does not
 * come. */
static void fifo_as_target_never_blocks_the_core(void **state)
{
	struct fsbt_core *c = *state;
	char f1[PATH_MAX + 16], f2[PATH_MAX + 16], f3[PATH_MAX + 16], copy[PATH_MAX + 16];
	char plain[PATH_MAX + 16], line[PATH_MAX + 256], reply[REPLY];
	uint64_t t0;
	struct stat st;
	int fd, got = -1;
	ssize_t n;
	cJSON *r;

	snprintf(f1, sizeof(f1), "%s/fifo-delete", c->ws);
	snprintf(f2, sizeof(f2), "%s/fifo-source", c->ws);
	snprintf(f3, sizeof(f3), "%s/fifo-target", c->ws);
	snprintf(copy, sizeof(copy), "%s/copied", c->ws);
	snprintf(plain, sizeof(plain), "%s/plain.txt", c->ws);
	assert_int_equal(mkfifo(f1, 0644), 0);
	assert_int_equal(mkfifo(f2, 0644), 0);
	assert_int_equal(mkfifo(f3, 0644), 0);
	fsbt_write_file(plain, "plain\n");
	fd = connect_within(c, FSBT_TIMEOUT_MS);

	/* Deleting a FIFO unlinks it: nothing opens it for a backup. */
	r = hostop(c, fd, "\"operation\":\"delete\",\"path\":\"%s\",\"deleteMode\":\"unlink\"", f1);
	assert_non_null(r);
	assert_true(fsbt_ok(r));
	cJSON_Delete(r);
	assert_int_equal(lstat(f1, &st), -1);

	/* Copying from a FIFO would read until a writer closes: refused. */
	r = hostop(c, fd, "\"operation\":\"copy\",\"from\":\"%s\",\"to\":\"%s\"", f2, copy);
	assert_non_null(r);
	assert_false(fsbt_ok(r));
	assert_string_equal(fsbt_str(r, "errno"), "EINVAL");
	cJSON_Delete(r);
	assert_int_equal(lstat(copy, &st), -1);

	/* Copying onto a FIFO would write into whoever reads it: refused. */
	r = hostop(c, fd, "\"operation\":\"copy\",\"from\":\"%s\",\"to\":\"%s\"", plain, f3);
	assert_non_null(r);
	assert_false(fsbt_ok(r));
	cJSON_Delete(r);
	assert_int_equal(lstat(f3, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));

	/* A write grant on a FIFO nobody reads: an answer, whatever it is.
	 * Every read here gives up after the harness's timeout: a core that
	 * waited on the FIFO would leave the reply missing. */
	t0 = fsbt_now_ms();
	fsbt_text_req(line, sizeof(line), FSBT_WRITE, f3, c->session, FSBT_OPEN_WRITE);
	n = fsbt_request(fd, line, reply, sizeof(reply), &got);
	if (n < 0)
		fail_msg("no answer to a write grant on a FIFO: %s",
			 n == FSBT_EOF ? "connection closed" : strerror((int)-n));
	fprintf(stderr, "# write grant on a FIFO without a reader: %s (%llu ms)\n", reply,
		(unsigned long long)(fsbt_now_ms() - t0));
	if (got >= 0)
		close(got);
	fsbt_close(fd);

	/* And the core still serves everyone else. */
	fd = connect_within(c, FSBT_TIMEOUT_MS);
	fsbt_text_req(line, sizeof(line), FSBT_READ, plain, c->session, NULL);
	n = fsbt_request(fd, line, reply, sizeof(reply), NULL);
	assert_true(n > 0);
	assert_string_equal(reply, "SANDBOX");
	fsbt_close(fd);
}

/* A character device under a path: never read as if it were a file (copying
 * /dev/zero never ends), never waited on. */
static void character_device_as_target_never_blocks_the_core(void **state)
{
	struct fsbt_core *c = *state;
	char dev[PATH_MAX + 16], copy[PATH_MAX + 16], plain[PATH_MAX + 16];
	char line[PATH_MAX + 256], reply[REPLY];
	uint64_t t0;
	struct stat st;
	int fd, got = -1;
	ssize_t n;
	cJSON *r;

	snprintf(dev, sizeof(dev), "%s/zero", c->ws);
	snprintf(copy, sizeof(copy), "%s/copied", c->ws);
	snprintf(plain, sizeof(plain), "%s/plain.txt", c->ws);
	/* The same device as /dev/zero: endless to read, instant to write. */
	if (mknod(dev, S_IFCHR | 0666, makedev(1, 5)) < 0)
		fsbt_skip("cannot make a character device in the workspace (%s): the test "
			  "needs CAP_MKNOD and a filesystem without nodev", strerror(errno));
	fsbt_write_file(plain, "plain\n");
	fd = connect_within(c, FSBT_TIMEOUT_MS);

	r = hostop(c, fd, "\"operation\":\"copy\",\"from\":\"%s\",\"to\":\"%s\"", dev, copy);
	assert_non_null(r);
	assert_false(fsbt_ok(r));
	assert_string_equal(fsbt_str(r, "errno"), "EINVAL");
	cJSON_Delete(r);
	assert_int_equal(lstat(copy, &st), -1);

	t0 = fsbt_now_ms();
	fsbt_text_req(line, sizeof(line), FSBT_WRITE, dev, c->session, FSBT_OPEN_WRITE);
	n = fsbt_request(fd, line, reply, sizeof(reply), &got);
	if (n < 0)
		fail_msg("no answer to a write grant on a character device: %s",
			 n == FSBT_EOF ? "connection closed" : strerror((int)-n));
	fprintf(stderr, "# write grant on a character device: %s (%llu ms)\n", reply,
		(unsigned long long)(fsbt_now_ms() - t0));
	if (got >= 0)
		close(got);

	r = hostop(c, fd, "\"operation\":\"delete\",\"path\":\"%s\",\"deleteMode\":\"unlink\"", dev);
	assert_non_null(r);
	assert_true(fsbt_ok(r));
	cJSON_Delete(r);
	assert_int_equal(lstat(dev, &st), -1);
	fsbt_close(fd);

	fd = connect_within(c, FSBT_TIMEOUT_MS);
	fsbt_text_req(line, sizeof(line), FSBT_READ, plain, c->session, NULL);
	n = fsbt_request(fd, line, reply, sizeof(reply), NULL);
	assert_true(n > 0);
	assert_string_equal(reply, "SANDBOX");
	fsbt_close(fd);
}

int main(void)
{
#define M(fn) cmocka_unit_test_setup_teardown(fn, setup_layout, teardown_mounted)
#define T(fn) cmocka_unit_test_setup_teardown(fn, fsbt_setup_core, fsbt_teardown_core)
#define D(fn, mode) { #fn " (" #mode ")", fn, setup_##mode, fsbt_teardown_core, NULL }
	const struct CMUnitTest tests[] = {
		M(full_disk_refuses_changes_instead_of_skipping_their_backup),
		M(read_only_store_refuses_changes),
		D(core_killed_during_a_large_backup_leaves_file_and_store_whole, strict),
		D(core_killed_during_a_large_backup_leaves_file_and_store_whole, batched),
		D(core_killed_after_unsynced_create_lines_recovers, strict),
		D(core_killed_after_unsynced_create_lines_recovers, batched),
		T(fifo_as_target_never_blocks_the_core),
		T(character_device_as_target_never_blocks_the_core),
	};

	return fsbt_run_group(tests, NULL, NULL);
}
