/*
 * test_lua_chunk_cache.c — a core loads a pack's compiled form from
 * <state>/lua-chunks only for the very bytes it was made from
 * (core/lua_chunk_cache.c): a second load uses the kept entries; a pack
 * edited in place is compiled again, its new rule in force; an entry whose
 * bytecode was damaged is compiled again from its source; an entry others
 * may write is never used, even one that claims the source on disk.
 */
#include "unit.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "policy.h"

static char root[] = "/tmp/fsb-chunk-cache-XXXXXX";
static char pack[PATH_MAX], state_dir[PATH_MAX], chunks[PATH_MAX];

static const char allows_a[] =
	"return { name = \"chunks\", fsProfile = { read = { \"/a/**\" } } }\n";
static const char allows_b[] =
	"return { name = \"chunks\", fsProfile = { read = { \"/b/**\" } } }\n";

static void put(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static int setup(void **state)
{
	(void)state;
	if (mkdtemp(root) == NULL)
		return -1;
	snprintf(pack, sizeof(pack), "%s/chunks.lua", root);
	snprintf(state_dir, sizeof(state_dir), "%s/state", root);
	snprintf(chunks, sizeof(chunks), "%s/lua-chunks", state_dir);
	return mkdir(state_dir, 0700);
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

/* Load the pack as a core does and say whether it allows a read of `path`. */
static bool allows(const char *path)
{
	const char *dirs[] = { root, NULL };
	const char *luadir = getenv("FSBROKER_LUA_DIR") ? getenv("FSBROKER_LUA_DIR") : LUADIR;
	struct fsb_policy_opts o = {
		.luadir = luadir, .pack = pack, .rules_dirs = dirs, .home = "/h", .tmp = "/t",
		.state = state_dir, .cache_tests = true,
	};
	struct fsb_policy_req req = { .op = FSB_OP_READ, .path = path, .session = "s" };
	struct fsb_verdict v;
	struct fsb_policy *p;
	char err[2048];

	if (fsb_policy_load(&o, &p, err, sizeof(err)) < 0)
		fail_msg("the pack did not load: %s", err);
	fsb_policy_evaluate(p, &req, &v);
	fsb_policy_free(p);
	return v.decision == FSB_ALLOW;
}

/* The kept entry of the pack file: the one compiled from the fewest bytes. */
static void pack_entry(char *out, size_t len)
{
	struct dirent *e;
	off_t smallest = -1;
	DIR *d = opendir(chunks);

	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		char p[PATH_MAX * 2];
		struct stat st;

		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", chunks, e->d_name);
		if (stat(p, &st) == 0 && (smallest < 0 || st.st_size < smallest)) {
			smallest = st.st_size;
			snprintf(out, len, "%s", p);
		}
	}
	closedir(d);
	assert_true(smallest > 0);
}

static void entries_are_kept_and_an_edited_pack_is_compiled_again(void **state)
{
	char entry[PATH_MAX * 2];
	struct stat before, after;

	(void)state;
	put(pack, allows_a);
	assert_true(allows("/a/f"));
	pack_entry(entry, sizeof(entry));
	assert_int_equal(stat(entry, &before), 0);
	assert_true(allows("/a/f"));	/* from the entry */
	assert_int_equal(stat(entry, &after), 0);
	assert_int_equal(before.st_ino, after.st_ino);	/* not written again */
	/* The same path, other bytes: the old compiled form must not answer. */
	put(pack, allows_b);
	assert_false(allows("/a/f"));
	assert_true(allows("/b/f"));
}

static void damaged_bytecode_is_compiled_again(void **state)
{
	char entry[PATH_MAX * 2], *buf, *at = NULL;
	struct stat st;
	int fd;

	(void)state;
	put(pack, allows_a);
	assert_true(allows("/a/f"));
	pack_entry(entry, sizeof(entry));
	assert_int_equal(stat(entry, &st), 0);
	buf = malloc((size_t)st.st_size);
	fd = open(entry, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0 && buf != NULL);
	assert_int_equal(read(fd, buf, (size_t)st.st_size), st.st_size);
	/* Bytecode that still loads, but not what the source says: the
	 * glob constant of allows_a, its "a" made "c". */
	for (off_t i = 70; i + 5 <= st.st_size && at == NULL; i++)
		if (memcmp(buf + i, "/a/**", 5) == 0)
			at = buf + i;
	assert_non_null(at);
	at[1] = 'c';
	assert_int_equal(pwrite(fd, buf, (size_t)st.st_size, 0), st.st_size);
	close(fd);
	free(buf);
	assert_true(allows("/a/f"));
	assert_false(allows("/c/f"));
}

/* Stamp the entry with the SHA-256 the source `text` of the pack would have. */
static void claim_source(const char *entry, const char *text)
{
	unsigned char md[32];
	unsigned int n = 0;
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	int fd;

	assert_true(c != NULL && EVP_DigestInit_ex(c, EVP_sha256(), NULL) &&
		    EVP_DigestUpdate(c, pack, strlen(pack) + 1) &&
		    EVP_DigestUpdate(c, text, strlen(text)) && EVP_DigestFinal_ex(c, md, &n));
	EVP_MD_CTX_free(c);
	fd = open(entry, O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, md, 32, 6), 32);	/* after "FSBC1\n" */
	close(fd);
}

static void an_entry_others_may_write_is_never_used(void **state)
{
	char entry[PATH_MAX * 2];

	(void)state;
	put(pack, allows_a);
	assert_true(allows("/a/f"));
	pack_entry(entry, sizeof(entry));
	/* The compiled form of allows_a, claiming to be that of allows_b. */
	put(pack, allows_b);
	claim_source(entry, allows_b);
	assert_int_equal(chmod(entry, 0666), 0);
	assert_true(allows("/b/f"));
	assert_false(allows("/a/f"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(entries_are_kept_and_an_edited_pack_is_compiled_again),
		cmocka_unit_test(damaged_bytecode_is_compiled_again),
		cmocka_unit_test(an_entry_others_may_write_is_never_used),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
