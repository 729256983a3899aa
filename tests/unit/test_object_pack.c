/*
 * test_object_pack.c — object packs (core/store/object_pack.c) over a real
 * store in a temp dir: a sealed cycle's copies packed and compressed come
 * back byte for byte through a restore; a damaged pack is found by the
 * hash check and its object named while the others are restored; what a
 * crash while packing leaves reads as before and is cleaned away; prune
 * rewrites or drops packs and keeps what a remaining cycle shares; du
 * counts what each cycle holds as the packs store it.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unit.h"
#include "backup.h"
#include "backup_prune.h"
#include "backup_read.h"
#include "object_pack.h"
#include "restore.h"

#define SESSION "s1"

struct fx {
	char dir[64];			/* everything, on one file system */
	char state[PATH_MAX];		/* <dir>/state */
	char work[PATH_MAX];		/* <dir>/w: what the "command" changes */
	struct fsb_store *s;
	unsigned cycle;
	struct timespec work_mtime;	/* the work dir's before the cycle */
};

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p) < 0 ? 0 : 0;
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	char err[256];

	if (f == NULL)
		return -1;
	strcpy(f->dir, "/tmp/fsb-objpack-XXXXXX");
	if (mkdtemp(f->dir) == NULL)
		return -1;
	/* The journal holds real paths: the temp dir through no symlink. */
	if (realpath(f->dir, f->state) == NULL)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "%s", f->state);
	snprintf(f->state, sizeof(f->state), "%s/state", f->dir);
	snprintf(f->work, sizeof(f->work), "%s/w", f->dir);
	if (mkdir(f->state, 0700) < 0 || mkdir(f->work, 0755) < 0)
		return -1;
	if (fsb_store_open(f->state, SESSION, &f->s, err, sizeof(err)) < 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	if (f->s != NULL)
		fsb_store_close(f->s);
	nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

static void in_work(const struct fx *f, const char *name, char out[PATH_MAX])
{
	snprintf(out, PATH_MAX, "%s/%s", f->work, name);
}

/* Journal the prior state of `path` for `op`, as the core does before the
 * change. */
static void record(struct fx *f, const char *op, const char *path, bool metadata_only,
		   bool keep_inode, const char *moved_to)
{
	struct fsb_backup_result res;
	struct fsb_backup_req r;
	struct stat st;
	bool exists = lstat(path, &st) == 0;
	int fd = -1;

	if (exists && S_ISREG(st.st_mode))
		fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	memset(&r, 0, sizeof(r));
	r.tool_call = "call-1";
	r.op = op;
	r.path = path;
	r.resolved = path;
	r.prior = exists ? &st : NULL;
	r.fd = fd;
	r.metadata_only = metadata_only;
	r.keep_inode = keep_inode;
	r.moved_to = moved_to;
	assert_int_equal(fsb_store_record(f->s, &r, &res), 0);
	if (fd >= 0)
		close(fd);
}

static void seal(struct fx *f)
{
	char err[256];
	int n = fsb_store_seal(f->s, "test", "", err, sizeof(err));

	if (n <= 0)
		fail_msg("seal: %d %s", n, err);
	f->cycle = (unsigned)n;
}

/* Restore the sealed cycle whole; every path must come back. */
static void restore(struct fx *f, bool dry_run, struct fsb_restore *r, struct fsb_cycle *cy)
{
	char err[256];
	struct fsb_restore_opts o = {
		.store = fsb_store_dir(f->s), .state = f->state, .session = SESSION,
		.dry_run = dry_run,
	};

	assert_int_equal(fsb_cycle_load(o.store, f->cycle, cy, NULL, err, sizeof(err)), 0);
	assert_int_equal(fsb_restore_plan(&o, cy, r), 0);
	assert_int_equal(fsb_restore_perform(&o, cy, r), 0);
	for (size_t i = 0; i < r->n + r->extra; i++)
		if (r->items[i].res != FSB_RES_OK)
			fail_msg("%s: %s %s", r->items[i].path, r->items[i].verb,
				 r->items[i].detail);
}

static void restore_all(struct fx *f)
{
	struct fsb_restore r;
	struct fsb_cycle cy;

	restore(f, false, &r, &cy);
	assert_true(r.undo_cycle > 0);
	fsb_restore_free(&r);
	fsb_cycle_free(&cy);
}


/* `n` bytes: text that compresses when `text`, else ones that do not. */
static char *make_bytes(size_t n, bool text, unsigned seed)
{
	char *b = malloc(n + 1);
	uint64_t x = 0x9e3779b97f4a7c15ULL * (seed + 1);

	assert_non_null(b);
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		b[i] = text ? "int main(void) { return 0; }\n"[(i + seed) % 30] : (char)x;
	}
	return b;
}

static void put_bytes(const char *path, const char *b, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, b, n), (ssize_t)n);
	close(fd);
}

static void assert_bytes(const char *path, const char *b, size_t n)
{
	char *got = malloc(n + 1);
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_non_null(got);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, got, n + 1), (ssize_t)n);
	close(fd);
	assert_memory_equal(got, b, n);
	free(got);
}

/* Is object `hex` still a loose file of the store? */
static bool loose(const struct fx *f, const char *hex)
{
	char p[PATH_MAX + 80];

	snprintf(p, sizeof(p), "%s/objects/%.2s/%s", fsb_store_dir(f->s), hex, hex);
	return access(p, F_OK) == 0;
}

/* The object the sealed cycle's record of `path` names. */
static void object_of(const struct fx *f, const char *path, char hex[65])
{
	struct fsb_cycle cy;
	char err[256];

	assert_int_equal(fsb_cycle_load(fsb_store_dir(f->s), f->cycle, &cy, NULL, err,
					sizeof(err)), 0);
	hex[0] = '\0';
	for (size_t i = 0; i < cy.nrecs; i++)
		if (strcmp(cy.recs[i].resolved, path) == 0)
			snprintf(hex, 65, "%s", cy.recs[i].prior.object);
	fsb_cycle_free(&cy);
	assert_int_equal(strlen(hex), 64);
}

#define NFILES 4
static const size_t SIZES[NFILES] = { 0, 100, 5000, 300000 };

/* Files of SIZES[] (text) and one of 200 KiB that does not compress,
 * backed up, changed, sealed and packed. */
static void build(struct fx *f, char paths[NFILES + 1][PATH_MAX], char *bytes[NFILES + 1])
{
	struct fsb_objpack_stats st;

	for (int i = 0; i <= NFILES; i++) {
		char name[16];
		size_t n = i < NFILES ? SIZES[i] : 200000;

		snprintf(name, sizeof(name), "f%d", i);
		in_work(f, name, paths[i]);
		bytes[i] = make_bytes(n, i < NFILES, (unsigned)i);
		put_bytes(paths[i], bytes[i], n);
		record(f, "write", paths[i], false, false, NULL);
		put_bytes(paths[i], "changed", 7);
	}
	seal(f);
	assert_int_equal(fsb_objpack_cycle(fsb_store_dir(f->s), f->cycle, &st), 0);
	/* Every text object packed; the random one stays loose (it would
	 * not shrink), and so does nothing else. */
	assert_int_equal(st.packed, NFILES);
	assert_true(st.stored < st.raw);
}

static void free_bytes(char *bytes[NFILES + 1])
{
	for (int i = 0; i <= NFILES; i++)
		free(bytes[i]);
}

static void packed_objects_restore_byte_for_byte(void **state)
{
	struct fx *f = *state;
	char paths[NFILES + 1][PATH_MAX], hex[65];
	char *bytes[NFILES + 1];

	build(f, paths, bytes);
	for (int i = 0; i < NFILES; i++) {
		object_of(f, paths[i], hex);
		assert_false(loose(f, hex));
	}
	object_of(f, paths[NFILES], hex);
	assert_true(loose(f, hex));
	restore_all(f);
	for (int i = 0; i < NFILES; i++)
		assert_bytes(paths[i], bytes[i], SIZES[i]);
	assert_bytes(paths[NFILES], bytes[NFILES], 200000);
	free_bytes(bytes);
}

static void packing_twice_keeps_one_copy(void **state)
{
	struct fx *f = *state;
	char paths[NFILES + 1][PATH_MAX];
	char *bytes[NFILES + 1];
	struct fsb_objpack_stats st;

	build(f, paths, bytes);
	/* A second pass finds nothing loose of the cycle to pack. */
	assert_int_equal(fsb_objpack_cycle(fsb_store_dir(f->s), f->cycle, &st), 0);
	assert_int_equal(st.packed, 0);
	free_bytes(bytes);
}

static void a_corrupted_pack_is_reported_by_object_and_the_rest_restored(void **state)
{
	struct fx *f = *state;
	char paths[NFILES + 1][PATH_MAX], hex[65], err[256], pack[PATH_MAX + 80];
	char *bytes[NFILES + 1];
	const struct fsb_objpack_entry *e = NULL;
	struct fsb_objpack *v;
	struct fsb_restore r;
	struct fsb_cycle cy;
	size_t n;
	int fd;
	struct fsb_restore_opts o = { .state = f->state, .session = SESSION };

	build(f, paths, bytes);
	object_of(f, paths[2], hex);
	assert_int_equal(fsb_objpack_list(fsb_store_dir(f->s), &v, &n), 0);
	for (size_t i = 0; i < n && e == NULL; i++) {
		e = fsb_objpack_find(&v[i], hex);
		if (e != NULL)
			snprintf(pack, sizeof(pack), "%s/packs/%s.pack", fsb_store_dir(f->s),
				 v[i].id);
	}
	assert_non_null(e);
	/* One byte of its stored bytes flipped, as bit rot would. */
	assert_int_equal(chmod(pack, 0600), 0);
	fd = open(pack, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	{
		unsigned char b;

		assert_int_equal(pread(fd, &b, 1, (off_t)(e->off + e->len / 2)), 1);
		b ^= 0x40;
		assert_int_equal(pwrite(fd, &b, 1, (off_t)(e->off + e->len / 2)), 1);
	}
	close(fd);
	fsb_objpack_list_free(v, n);
	o.store = fsb_store_dir(f->s);
	assert_int_equal(fsb_cycle_load(o.store, f->cycle, &cy, NULL, err, sizeof(err)), 0);
	assert_int_equal(fsb_restore_plan(&o, &cy, &r), 0);
	fsb_restore_perform(&o, &cy, &r);
	for (size_t i = 0; i < r.n; i++) {
		if (strcmp(r.items[i].path, paths[2]) == 0) {
			assert_int_equal(r.items[i].res, FSB_RES_SKIPPED);
			assert_non_null(strstr(r.items[i].detail, hex));
			assert_non_null(strstr(r.items[i].detail, "corrupted"));
		} else {
			assert_int_equal(r.items[i].res, FSB_RES_OK);
		}
	}
	assert_bytes(paths[2], "changed", 7);
	assert_bytes(paths[3], bytes[3], SIZES[3]);
	assert_bytes(paths[1], bytes[1], SIZES[1]);
	fsb_restore_free(&r);
	fsb_cycle_free(&cy);
	free_bytes(bytes);
}

/* What a crash while packing leaves (the pack's temporary, a pack whose
 * index was never renamed into place) is believed by no reader: every
 * object reads loose, as before the pass; the next clean removes it, and
 * the pass then packs as usual. */
static void a_pack_left_without_its_index_is_ignored_and_cleaned(void **state)
{
	struct fx *f = *state;
	char a[PATH_MAX], hex[65], p[PATH_MAX + 80], q[PATH_MAX + 80];
	char *b = make_bytes(5000, true, 7);
	struct fsb_objpack_stats st;
	struct fsb_objpack *v;
	size_t n;
	int fd;

	in_work(f, "a", a);
	put_bytes(a, b, 5000);
	record(f, "write", a, false, false, NULL);
	put_bytes(a, "changed", 7);
	seal(f);
	snprintf(p, sizeof(p), "%s/packs", fsb_store_dir(f->s));
	assert_int_equal(mkdir(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/packs/.tmp-0123456789abcdef0123456789abcdef.pack",
		 fsb_store_dir(f->s));
	snprintf(q, sizeof(q), "%s/packs/0123456789abcdef0123456789abcdef.pack",
		 fsb_store_dir(f->s));
	put_bytes(p, "FSBPACK1", 8);
	put_bytes(q, "FSBPACK1garbage", 15);
	assert_int_equal(fsb_objpack_list(fsb_store_dir(f->s), &v, &n), 0);
	assert_int_equal(n, 0);
	object_of(f, a, hex);
	fd = fsb_backup_object_open(fsb_store_dir(f->s), hex);
	assert_true(fd >= 0);
	assert_int_equal(fsb_backup_object_copy(fd, hex, -1), 0);
	close(fd);
	fsb_objpack_clean(fsb_store_dir(f->s));
	assert_int_equal(access(p, F_OK), -1);
	assert_int_equal(access(q, F_OK), -1);
	assert_int_equal(fsb_objpack_cycle(fsb_store_dir(f->s), f->cycle, &st), 0);
	assert_int_equal(st.packed, 1);
	assert_false(loose(f, hex));
	restore_all(f);
	assert_bytes(a, b, 5000);
	free(b);
}

/* Bytes of every .pack and .idx of the store. */
static uint64_t packs_bytes(const struct fx *f, size_t *npacks)
{
	struct fsb_objpack *v;
	uint64_t sum = 0;
	size_t n;

	assert_int_equal(fsb_objpack_list(fsb_store_dir(f->s), &v, &n), 0);
	for (size_t i = 0; i < n; i++)
		sum += v[i].bytes;
	fsb_objpack_list_free(v, n);
	*npacks = n;
	return sum;
}

/* Is `hex` in any pack? */
static bool packed(const struct fx *f, const char *hex)
{
	struct fsb_objpack *v;
	bool hit = false;
	size_t n;

	assert_int_equal(fsb_objpack_list(fsb_store_dir(f->s), &v, &n), 0);
	for (size_t i = 0; i < n; i++)
		hit = hit || fsb_objpack_find(&v[i], hex) != NULL;
	fsb_objpack_list_free(v, n);
	return hit;
}

static void back_up(struct fx *f, const char *path, const char *b, size_t n)
{
	put_bytes(path, b, n);
	record(f, "write", path, false, false, NULL);
	put_bytes(path, "changed", 7);
}

/* Cycle 1 backs up a and b, cycle 2 b's same bytes again and c: pruning
 * cycle 1 rewrites its pack without a (b is shared and stays, c's pack is
 * untouched); pruning everything removes every pack. */
static void prune_rewrites_a_partly_dead_pack_and_drops_a_dead_one(void **state)
{
	struct fx *f = *state;
	char a[PATH_MAX], b[PATH_MAX], c[PATH_MAX], ha[65], hb[65], hc[65];
	char *ba = make_bytes(3000, true, 1), *bb = make_bytes(4000, true, 2);
	char *bc = make_bytes(5000, true, 3);
	struct fsb_prune_opts o = { .keep = 1, .older_than = -1,
				    .max_bytes = FSB_PRUNE_NO_LIMIT };
	struct fsb_prune_result res;
	struct fsb_objpack_stats st;
	uint64_t before, after;
	size_t n;

	in_work(f, "a", a);
	in_work(f, "b", b);
	in_work(f, "c", c);
	back_up(f, a, ba, 3000);
	back_up(f, b, bb, 4000);
	seal(f);
	object_of(f, a, ha);
	assert_int_equal(fsb_objpack_cycle(fsb_store_dir(f->s), f->cycle, &st), 0);
	assert_int_equal(st.packed, 2);
	back_up(f, b, bb, 4000);
	back_up(f, c, bc, 5000);
	seal(f);
	object_of(f, b, hb);
	object_of(f, c, hc);
	assert_int_equal(fsb_objpack_cycle(fsb_store_dir(f->s), f->cycle, &st), 0);
	assert_int_equal(st.already, 1);	/* b: cycle 1's pack has it */
	assert_int_equal(st.packed, 1);
	before = packs_bytes(f, &n);
	assert_int_equal(n, 2);

	assert_int_equal(fsb_backup_prune(fsb_store_dir(f->s), &o, &res), 0);
	assert_int_equal(res.cycles, 1);
	assert_int_equal(res.objects, 1);
	after = packs_bytes(f, &n);
	assert_int_equal(n, 2);
	assert_true(after < before);
	assert_true(res.bytes >= before - after);	/* and the cycle's own files */
	assert_false(packed(f, ha));
	assert_true(packed(f, hb));
	assert_true(packed(f, hc));
	restore_all(f);
	assert_bytes(b, bb, 4000);
	assert_bytes(c, bc, 5000);

	/* Everything goes: the modify store holds no pack. */
	o.keep = 0;
	assert_int_equal(fsb_backup_prune(fsb_store_dir(f->s), &o, &res), 0);
	assert_int_equal(res.cycles, 1);
	packs_bytes(f, &n);
	assert_int_equal(n, 0);
	free(ba);
	free(bb);
	free(bc);
}

/* The stored length of `hex` in the store's packs (0 when in none). */
static uint64_t packed_len(const struct fx *f, const char *hex)
{
	struct fsb_objpack *v;
	uint64_t len = 0;
	size_t n;

	assert_int_equal(fsb_objpack_list(fsb_store_dir(f->s), &v, &n), 0);
	for (size_t i = 0; i < n; i++) {
		const struct fsb_objpack_entry *e = fsb_objpack_find(&v[i], hex);

		if (e != NULL)
			len += e->len;
	}
	fsb_objpack_list_free(v, n);
	return len;
}

/* Bytes of cycle `n`'s own files (journal, cycle.json). */
static uint64_t cycle_files(const struct fx *f, unsigned n)
{
	char p[PATH_MAX + 80];
	struct stat a, b;

	snprintf(p, sizeof(p), "%s/cycles/%u/journal.jsonl", fsb_store_dir(f->s), n);
	assert_int_equal(stat(p, &a), 0);
	snprintf(p, sizeof(p), "%s/cycles/%u/cycle.json", fsb_store_dir(f->s), n);
	assert_int_equal(stat(p, &b), 0);
	return (uint64_t)a.st_size + (uint64_t)b.st_size;
}

/* Cycle 1 holds a alone and b with cycle 2; cycle 2 holds c alone: du
 * says so, in the bytes the packs store, and what a prune of each frees. */
static void du_counts_own_and_shared_objects_as_stored(void **state)
{
	struct fx *f = *state;
	char a[PATH_MAX], b[PATH_MAX], c[PATH_MAX], ha[65], hb[65], hc[65];
	char *ba = make_bytes(3000, true, 1), *bb = make_bytes(4000, true, 2);
	char *bc = make_bytes(5000, true, 3);
	uint64_t la, lb, lc, f1, f2;
	struct fsb_du d;

	in_work(f, "a", a);
	in_work(f, "b", b);
	in_work(f, "c", c);
	back_up(f, a, ba, 3000);
	back_up(f, b, bb, 4000);
	seal(f);
	object_of(f, a, ha);
	object_of(f, b, hb);
	assert_int_equal(fsb_objpack_cycle(fsb_store_dir(f->s), f->cycle, NULL), 0);
	back_up(f, b, bb, 4000);
	back_up(f, c, bc, 5000);
	seal(f);
	object_of(f, c, hc);
	assert_int_equal(fsb_objpack_cycle(fsb_store_dir(f->s), f->cycle, NULL), 0);
	la = packed_len(f, ha);
	lb = packed_len(f, hb);
	lc = packed_len(f, hc);
	assert_true(la > 0 && la < 3000 && lb > 0 && lc > 0);
	f1 = cycle_files(f, 1);
	f2 = cycle_files(f, 2);

	assert_int_equal(fsb_backup_du(fsb_store_dir(f->s), &d), 0);
	assert_int_equal(d.n, 2);
	assert_int_equal(d.v[0].number, 1);
	assert_int_equal(d.v[0].own, la);
	assert_int_equal(d.v[0].nown, 1);
	assert_int_equal(d.v[0].shared, lb);
	assert_int_equal(d.v[0].nshared, 1);
	assert_int_equal(d.v[0].files, f1);
	assert_int_equal(d.v[0].frees, f1 + la);
	assert_int_equal(d.v[1].own, lc);
	assert_int_equal(d.v[1].shared, lb);
	assert_int_equal(d.v[1].frees, f2 + lc);
	assert_int_equal(d.bytes, f1 + f2 + la + lb + lc);
	assert_int_equal(d.objects, 3);
	assert_int_equal(d.unreferenced, 0);
	assert_true(d.disk >= d.bytes);
	fsb_du_free(&d);
	free(ba);
	free(bb);
	free(bc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(packed_objects_restore_byte_for_byte, setup, teardown),
		cmocka_unit_test_setup_teardown(packing_twice_keeps_one_copy, setup, teardown),
		cmocka_unit_test_setup_teardown(
			a_corrupted_pack_is_reported_by_object_and_the_rest_restored, setup, teardown),
		cmocka_unit_test_setup_teardown(a_pack_left_without_its_index_is_ignored_and_cleaned,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			prune_rewrites_a_partly_dead_pack_and_drops_a_dead_one, setup, teardown),
		cmocka_unit_test_setup_teardown(du_counts_own_and_shared_objects_as_stored, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
