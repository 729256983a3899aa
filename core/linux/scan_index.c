/*
 * scan_index.c — the index of the reads = "mask" scan: what a repeat
 * `fsbroker run` needs to skip reading the directories that did not change
 * since the last scan, and to find the denyRead matches in them anyway.
 *
 * A directory's record holds its dev, inode, ctime and mtime (ns), the
 * number of entries the scan counted in it, its subdirectories and the
 * matches found among its own entries (with the rule that hid each). Why
 * each stamp:
 *   - adding, removing or renaming an entry changes the parent's mtime and
 *     ctime;
 *   - chmod (say 000) changes the directory's ctime only;
 *   - a renamed directory keeps its inode and gets a new ctime, and its path
 *     (the key of the record) is a new one anyway: matches depend on paths;
 *   - mtime can be set back with utimensat(), ctime cannot: ctime is what a
 *     command in the sandbox (which writes the workspace) cannot forge.
 * A directory whose four values equal its record is not read again, but
 * each of its subdirectories is still lstat'ed and checked against its own
 * record in turn: a new .env three levels down changes its own directory,
 * and that one is read. A repeat scan therefore costs a stat per directory
 * instead of a readdir, a stat and a pack lookup per entry.
 *
 * Timestamps tick coarsely ("racy git"): a change made in the same tick as
 * the scan read a directory would leave its stamps equal to the record. So
 * the index keeps the time its scan started (CLOCK_REALTIME, the clock
 * inodes are stamped with) and a record is trusted only when both its
 * stamps are older than that start by more than FSB_SCAN_INDEX_SETTLE_NS,
 * the coarsest granularity of the file systems indexed (1 s, ext4 with
 * small inodes; the kernel's coarse clock lags by a tick more). Any change
 * after the start gets a stamp at or after it, so it cannot equal a trusted
 * record's. A directory changed within that second is read again next run.
 *
 * The index is valid for one key (fsb_scan_index_key): the denyRead
 * entries, the read mode, the scan bounds, the user, the workspace's path,
 * dev and inode. Another key: a full scan, and the index is replaced.
 *
 * Only local file systems whose stamps move with each change are indexed
 * (fsb_scan_index_fs_ok); a directory elsewhere (NFS, FUSE, 9p, vfat...)
 * is read every run, as is one the scan could not read in full (unreadable,
 * beyond a bound, an entry already hidden by another mask): those never get
 * a record, so they are never taken as clean.
 *
 * Where: <state dir>/scan-index/<hash of the workspace path>, owned by the
 * user, 0600 in a 0700 dir. The sandbox sees the state dir masked (an empty
 * read-only tmpfs, mount_plan.c step 6), so no command run there can read
 * or write the index. It is written to a temp file and renamed (not
 * synced: a lost index is one full scan) and read with a size bound
 * (FSB_SCAN_INDEX_MAX_BYTES) and a checksum; a foreign-owned, group- or
 * world-writable, truncated or corrupt index is ignored, never trusted.
 *
 * Format (native byte order: it never leaves the machine):
 *   "FSBSIX1\n" | u64 key length | key | i64 scan start (ns) | u64 records
 *   | records | u64 FNV-1a of everything before.
 *   record: str path | u64 dev | u64 ino | i64 ctime | i64 mtime
 *           | u64 entries | u64 children | children
 *   child:  u8 kind | str name | str rule
 *   str:    u64 length | bytes | NUL
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "private_file.h"
#include "scan_index.h"

#define MAGIC "FSBSIX1\n"
#define MAGIC_LEN 8
#define FSB_SCAN_INDEX_MAX_BYTES (256u << 20)
#define FSB_SCAN_INDEX_SETTLE_NS 1100000000LL
/* Indexes kept per workspace: one for each pack or read mode in use. */
#define FSB_SCAN_INDEX_KEPT 4

/* ------------------------------------------------------------------------ */

static uint64_t fnv1a(const void *p, size_t n, uint64_t h)
{
	const unsigned char *s = p;

	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

#define FNV_START 0xcbf29ce484222325ULL

static int64_t stamp_ns(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000LL + t->tv_nsec;
}

/* ------------------------------------------------------------------------ */
/* Writing. */

static void out_bytes(struct fsb_scan_index *ix, const void *p, size_t n)
{
	if (ix->out_failed)
		return;
	if (ix->out_len + n > FSB_SCAN_INDEX_MAX_BYTES) {
		ix->out_failed = true;
		return;
	}
	if (ix->out_len + n > ix->out_cap) {
		size_t cap = ix->out_cap ? ix->out_cap : 65536;
		unsigned char *nb;

		while (cap < ix->out_len + n)
			cap *= 2;
		if ((nb = realloc(ix->out, cap)) == NULL) {
			ix->out_failed = true;
			return;
		}
		ix->out = nb;
		ix->out_cap = cap;
	}
	memcpy(ix->out + ix->out_len, p, n);
	ix->out_len += n;
}

static void out_u64(struct fsb_scan_index *ix, uint64_t v)
{
	out_bytes(ix, &v, sizeof(v));
}

static void out_str(struct fsb_scan_index *ix, const char *s)
{
	size_t n = strlen(s);

	out_u64(ix, n);
	out_bytes(ix, s, n + 1);
}

/* ------------------------------------------------------------------------ */
/* Reading: every length is checked against what is left. */

struct reader {
	const char *p;
	size_t left;
	bool bad;
};

static uint64_t in_u64(struct reader *r)
{
	uint64_t v = 0;

	if (r->bad || r->left < sizeof(v)) {
		r->bad = true;
		return 0;
	}
	memcpy(&v, r->p, sizeof(v));
	r->p += sizeof(v);
	r->left -= sizeof(v);
	return v;
}

/* A string stored NUL-terminated, without a NUL inside: usable in place. */
static const char *in_str(struct reader *r)
{
	uint64_t n = in_u64(r);
	const char *s;

	if (r->bad || n >= r->left || r->p[n] != '\0' || memchr(r->p, '\0', n) != NULL) {
		r->bad = true;
		return NULL;
	}
	s = r->p;
	r->p += n + 1;
	r->left -= n + 1;
	return s;
}

static size_t slot_of(const char *path, size_t nslots)
{
	return (size_t)(fnv1a(path, strlen(path), FNV_START) & (nslots - 1));
}

/* Parse the records of ix->buf after the header at `r`. -EINVAL on any
 * inconsistency, -ENOMEM. */
static int parse_records(struct fsb_scan_index *ix, struct reader *r, uint64_t ndirs)
{
	size_t nchildren = 0, child_cap = 0;

	/* A record takes at least 57 bytes: a count beyond what is left is
	 * a corrupt index, not an allocation to attempt. */
	if (ndirs > r->left / 57)
		return -EINVAL;
	ix->dirs = calloc(ndirs ? ndirs : 1, sizeof(*ix->dirs));
	for (ix->nslots = 16; ix->nslots < ndirs * 2; ix->nslots *= 2)
		;
	ix->slots = calloc(ix->nslots, sizeof(*ix->slots));
	if (ix->dirs == NULL || ix->slots == NULL)
		return -ENOMEM;
	/* Children are gathered first, then pointed at: the array may move. */
	for (uint64_t i = 0; i < ndirs; i++) {
		struct fsb_scan_dir *d = &ix->dirs[i];
		uint64_t n;
		size_t s;

		d->raw_off = (size_t)(r->p - ix->buf);
		d->path = in_str(r);
		d->dev = in_u64(r);
		d->ino = in_u64(r);
		d->ctime_ns = (int64_t)in_u64(r);
		d->mtime_ns = (int64_t)in_u64(r);
		d->nentries = in_u64(r);
		n = in_u64(r);
		if (r->bad || n > r->left / 19)
			return -EINVAL;
		d->nchildren = (size_t)n;
		d->children = (const void *)(uintptr_t)nchildren;	/* an offset until the end */
		for (uint64_t k = 0; k < n; k++) {
			struct fsb_scan_child *c;

			if (nchildren == child_cap) {
				size_t cap = child_cap ? child_cap * 2 : 256;
				void *nv = realloc(ix->children, cap * sizeof(*ix->children));

				if (nv == NULL)
					return -ENOMEM;
				ix->children = nv;
				child_cap = cap;
			}
			c = &ix->children[nchildren++];
			if (r->left < 1)
				return -EINVAL;
			c->kind = *r->p++;
			r->left--;
			c->name = in_str(r);
			c->rule = in_str(r);
			if (r->bad || strchr("dxmMl", c->kind) == NULL || c->kind == '\0' ||
			    c->name[0] == '\0' || strchr(c->name, '/') != NULL ||
			    strcmp(c->name, ".") == 0 || strcmp(c->name, "..") == 0)
				return -EINVAL;
		}
		if (r->bad || d->path[0] != '/')
			return -EINVAL;
		d->raw_len = (size_t)(r->p - ix->buf) - d->raw_off;
		for (s = slot_of(d->path, ix->nslots); ix->slots[s] != 0; s = (s + 1) & (ix->nslots - 1))
			if (strcmp(ix->dirs[ix->slots[s] - 1].path, d->path) == 0)
				return -EINVAL;	/* one record a path */
		ix->slots[s] = (size_t)i + 1;
	}
	for (uint64_t i = 0; i < ndirs; i++)
		ix->dirs[i].children = ix->children + (uintptr_t)ix->dirs[i].children;
	ix->ndirs = (size_t)ndirs;
	return r->left == sizeof(uint64_t) ? 0 : -EINVAL;
}

static void drop_loaded(struct fsb_scan_index *ix)
{
	free(ix->buf);
	free(ix->dirs);
	free(ix->children);
	free(ix->slots);
	ix->buf = NULL;
	ix->dirs = NULL;
	ix->children = NULL;
	ix->slots = NULL;
	ix->len = ix->ndirs = ix->nslots = 0;
}

static int unused(struct fsb_scan_index *ix, int err, const char *fmt, const char *arg)
{
	snprintf(ix->why_unused, sizeof(ix->why_unused), fmt, arg);
	drop_loaded(ix);
	return err == -ENOMEM ? err : 0;
}

/* Read ix->file. 0 whether or not it could be used (why_unused says),
 * -ENOMEM. */
static int load(struct fsb_scan_index *ix)
{
	struct reader r;
	struct stat st;
	uint64_t klen, ndirs, sum;
	ssize_t n;
	int fd, err;

	/* O_NOFOLLOW: the index is the file itself, not wherever a link
	 * would lead. */
	fd = open(ix->file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return unused(ix, 0, "%s", errno == ENOENT ? "there is none yet" : strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022) != 0 || st.st_size < 0 ||
	    (uint64_t)st.st_size > FSB_SCAN_INDEX_MAX_BYTES) {
		close(fd);
		return unused(ix, 0, "%s", "it is not a regular file of yours, writable only by "
			      "you, within the size bound");
	}
	ix->len = (size_t)st.st_size;
	if ((ix->buf = malloc(ix->len + 1)) == NULL) {
		close(fd);
		return unused(ix, -ENOMEM, "%s", "out of memory");
	}
	for (size_t got = 0; got < ix->len; got += (size_t)n) {
		n = read(fd, ix->buf + got, ix->len - got);
		if (n <= 0) {
			close(fd);
			return unused(ix, 0, "%s", "it could not be read whole");
		}
	}
	close(fd);
	if (ix->len < MAGIC_LEN + 4 * sizeof(uint64_t) || memcmp(ix->buf, MAGIC, MAGIC_LEN) != 0)
		return unused(ix, 0, "%s", "it is not a scan index of this version");
	memcpy(&sum, ix->buf + ix->len - sizeof(sum), sizeof(sum));
	if (fnv1a(ix->buf, ix->len - sizeof(sum), FNV_START) != sum)
		return unused(ix, 0, "%s", "its checksum does not match: truncated or corrupt");
	r = (struct reader){ .p = ix->buf + MAGIC_LEN, .left = ix->len - MAGIC_LEN };
	klen = in_u64(&r);
	if (r.bad || klen != ix->key_len || klen > r.left || memcmp(r.p, ix->key, ix->key_len) != 0)
		return unused(ix, 0, "%s", "it was made for other denyRead rules, bounds or "
			      "workspace");
	r.p += klen;
	r.left -= klen;
	ix->trusted_before_ns = (int64_t)in_u64(&r) - FSB_SCAN_INDEX_SETTLE_NS;
	ndirs = in_u64(&r);
	if (r.bad)
		return unused(ix, 0, "%s", "it is truncated");
	if ((err = parse_records(ix, &r, ndirs)) < 0)
		return unused(ix, err, "%s", err == -ENOMEM ? "out of memory" : "it is corrupt");
	return 0;
}

/* ------------------------------------------------------------------------ */

static void key_str(char **s, size_t *len, size_t *cap, const char *v, bool *oom)
{
	size_t n = strlen(v);
	char *ns;

	if (*oom)
		return;
	if (*len + n + 32 > *cap) {
		*cap = (*len + n + 32) * 2;
		if ((ns = realloc(*s, *cap)) == NULL) {
			*oom = true;
			return;
		}
		*s = ns;
	}
	/* Length-prefixed: no entry can be made to read as two. */
	*len += (size_t)sprintf(*s + *len, "%zu:", n);
	memcpy(*s + *len, v, n);
	*len += n;
}

int fsb_scan_index_key(const struct fsb_policy_summary *sum, const char *workspace,
		       size_t max_entries, unsigned max_depth, char **key, size_t *key_len)
{
	char head[256];
	struct stat st;
	size_t len = 0, cap = 0;
	char *s = NULL;
	bool oom = false;

	memset(&st, 0, sizeof(st));
	/* The workspace replaced by another at the same path: another key. */
	if (stat(workspace, &st) < 0)
		memset(&st, 0, sizeof(st));
	snprintf(head, sizeof(head), "v1 reads=%d entries=%zu depth=%u uid=%u gid=%u dev=%llu "
		 "ino=%llu", (int)sum->reads, max_entries, max_depth, (unsigned)geteuid(),
		 (unsigned)getegid(), (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
	key_str(&s, &len, &cap, head, &oom);
	key_str(&s, &len, &cap, workspace, &oom);
	for (size_t i = 0; i < sum->deny_read.n; i++) {
		const struct fsb_glob_entry *e = &sum->deny_read.v[i];
		char kind[32];

		snprintf(kind, sizeof(kind), "%d%d", (int)e->kind, e->except ? 1 : 0);
		key_str(&s, &len, &cap, kind, &oom);
		key_str(&s, &len, &cap, e->glob ? e->glob : "", &oom);
		key_str(&s, &len, &cap, e->base ? e->base : "", &oom);
		key_str(&s, &len, &cap, e->rule ? e->rule : "", &oom);
	}
	if (oom) {
		free(s);
		return -ENOMEM;
	}
	*key = s;
	*key_len = len;
	return 0;
}

/* scan-index/ under the state dir, ours and 0700, made if missing. */
static bool index_dir(const char *state_dir, char *dir, size_t len)
{
	struct stat st;

	if ((size_t)snprintf(dir, len, "%s/scan-index", state_dir) >= len)
		return false;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return false;
	return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
	       (st.st_mode & 077) == 0;
}

int fsb_scan_index_open(struct fsb_scan_index *ix, const char *state_dir, const char *workspace,
			char *key, size_t key_len)
{
	char dir[4096];
	struct timespec now;

	memset(ix, 0, sizeof(*ix));
	ix->key = key;
	ix->key_len = key_len;
	ix->fs_ok = -1;
	clock_gettime(CLOCK_REALTIME, &now);
	ix->started_ns = stamp_ns(&now);
	if (state_dir == NULL || state_dir[0] != '/' || !index_dir(state_dir, dir, sizeof(dir))) {
		snprintf(ix->why_unused, sizeof(ix->why_unused), "the state dir has no scan-index/ "
			 "directory of yours, mode 0700");
		return 0;
	}
	/* One file per workspace and key: two packs (or read modes) taking
	 * turns on a workspace each keep their own index, instead of each
	 * finding the other's and scanning everything. */
	if ((size_t)snprintf(ix->file, sizeof(ix->file), "%s/%016llx-%016llx", dir,
			     (unsigned long long)fnv1a(workspace, strlen(workspace), FNV_START),
			     (unsigned long long)fnv1a(key, key_len, FNV_START)) >=
	    sizeof(ix->file)) {
		ix->file[0] = '\0';
		return 0;
	}
	out_bytes(ix, MAGIC, MAGIC_LEN);
	out_u64(ix, key_len);
	out_bytes(ix, key, key_len);
	out_u64(ix, (uint64_t)ix->started_ns);
	out_u64(ix, 0);		/* the record count, set when saved */
	if (ix->out_failed)
		return -ENOMEM;
	return load(ix);
}

const struct fsb_scan_dir *fsb_scan_index_find(const struct fsb_scan_index *ix, const char *path,
					       const struct stat *st)
{
	const struct fsb_scan_dir *d = NULL;

	if (ix->nslots == 0)
		return NULL;
	for (size_t s = slot_of(path, ix->nslots); ix->slots[s] != 0; s = (s + 1) & (ix->nslots - 1))
		if (strcmp(ix->dirs[ix->slots[s] - 1].path, path) == 0) {
			d = &ix->dirs[ix->slots[s] - 1];
			break;
		}
	if (d == NULL || d->dev != (uint64_t)st->st_dev || d->ino != (uint64_t)st->st_ino ||
	    d->ctime_ns != stamp_ns(&st->st_ctim) || d->mtime_ns != stamp_ns(&st->st_mtim))
		return NULL;
	/* Racy: stamped in the tick the scan read it, or later. */
	if (d->ctime_ns >= ix->trusted_before_ns || d->mtime_ns >= ix->trusted_before_ns)
		return NULL;
	return d;
}

bool fsb_scan_index_fs_ok(struct fsb_scan_index *ix, int fd, uint64_t dev)
{
	/* Local file systems whose directories' ctime and mtime move with each
	 * change of their entries or mode, made through this kernel. */
	static const unsigned long local[] = {
		0xEF53,		/* ext2, ext3, ext4 */
		0x58465342,	/* xfs */
		0x9123683E,	/* btrfs */
		0x01021994,	/* tmpfs */
		0xF2F52010,	/* f2fs */
		0x2FC12FC1,	/* zfs */
		0xCA451A4E,	/* bcachefs */
		0x794C7630,	/* overlayfs */
	};
	struct statfs sf;

	if (ix->fs_ok >= 0 && ix->fs_dev == dev)
		return ix->fs_ok;
	ix->fs_dev = dev;
	ix->fs_ok = 0;
	if (fstatfs(fd, &sf) < 0)
		return false;
	for (size_t i = 0; i < sizeof(local) / sizeof(local[0]); i++)
		if ((unsigned long)sf.f_type == local[i])
			ix->fs_ok = 1;
	return ix->fs_ok;
}

void fsb_scan_index_keep(struct fsb_scan_index *ix, const struct fsb_scan_dir *d)
{
	if (ix->file[0] == '\0')
		return;
	out_bytes(ix, ix->buf + d->raw_off, d->raw_len);
	ix->out_ndirs++;
}

void fsb_scan_index_add(struct fsb_scan_index *ix, const char *path, const struct stat *st,
			uint64_t nentries, const struct fsb_scan_child *children, size_t n)
{
	if (ix->file[0] == '\0')
		return;
	out_str(ix, path);
	out_u64(ix, (uint64_t)st->st_dev);
	out_u64(ix, (uint64_t)st->st_ino);
	out_u64(ix, (uint64_t)stamp_ns(&st->st_ctim));
	out_u64(ix, (uint64_t)stamp_ns(&st->st_mtim));
	out_u64(ix, nentries);
	out_u64(ix, n);
	for (size_t i = 0; i < n; i++) {
		out_bytes(ix, &children[i].kind, 1);
		out_str(ix, children[i].name);
		out_str(ix, children[i].rule);
	}
	ix->out_ndirs++;
	ix->out_fresh++;
}

/* The indexes of one workspace: its name up to the '-', then "-" and a key;
 * the name alone is the old single file of that workspace, which goes
 * first. */
static enum fsb_kept_kind workspace_index(const char *name, void *arg)
{
	const char *base = arg;
	size_t prefix = strcspn(base, "-");

	if (strncmp(name, base, prefix) != 0)
		return FSB_KEPT_OTHER;
	if (name[prefix] == '\0')
		return FSB_KEPT_STALE;
	return name[prefix] == '-' ? FSB_KEPT_MEMBER : FSB_KEPT_OTHER;
}

/*
 * Keep the FSB_SCAN_INDEX_KEPT most recently written indexes of the
 * workspace of `file`: an edited pack's denyRead list makes a new key, and
 * the old ones must not pile up.
 */
static void prune_workspace(const char *file)
{
	char dir[4096];
	const char *base = strrchr(file, '/');

	if (base == NULL || (size_t)(base - file) >= sizeof(dir))
		return;
	memcpy(dir, file, (size_t)(base - file));
	dir[base - file] = '\0';
	fsb_private_dir_keep_newest(dir, workspace_index, (void *)(base + 1),
				    FSB_SCAN_INDEX_KEPT);
}

int fsb_scan_index_save(struct fsb_scan_index *ix)
{
	char tmp[sizeof(ix->file) + 32];
	size_t count_at = MAGIC_LEN + sizeof(uint64_t) + ix->key_len + sizeof(uint64_t);
	uint64_t sum;
	int fd, err = 0;

	if (ix->file[0] == '\0')
		return 0;
	if (ix->out_failed)
		return -E2BIG;
	/* Every record carried over, none dropped: the file on disk is what
	 * would be written (its older start only makes it stricter). */
	if (ix->buf != NULL && ix->out_fresh == 0 && ix->out_ndirs == ix->ndirs)
		return 0;
	memcpy(ix->out + count_at, &ix->out_ndirs, sizeof(ix->out_ndirs));
	sum = fnv1a(ix->out, ix->out_len, FNV_START);
	out_u64(ix, sum);
	if (ix->out_failed)
		return -E2BIG;
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", ix->file, (long)getpid());
	/* O_EXCL | O_NOFOLLOW: a name left by a crash is not written through. */
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	for (size_t done = 0; done < ix->out_len;) {
		ssize_t n = write(fd, ix->out + done, ix->out_len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? -errno : -EIO;
			break;
		}
		done += (size_t)n;
	}
	if (close(fd) < 0 && err == 0)
		err = -errno;
	if (err == 0 && rename(tmp, ix->file) < 0)
		err = -errno;
	if (err < 0)
		unlink(tmp);
	else
		prune_workspace(ix->file);
	return err;
}

void fsb_scan_index_free(struct fsb_scan_index *ix)
{
	if (ix == NULL)
		return;
	drop_loaded(ix);
	free(ix->out);
	free(ix->key);
	ix->out = NULL;
	ix->key = NULL;
}
