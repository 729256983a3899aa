/*
 * test_view.c — fsb_view_is_hosts on two roots made of plain directories:
 * a name is the host's when both roots reach the same inode (here a hard
 * link stands in for a bind mount), the sandbox's own when the host has
 * nothing there or another object; a name that does not exist yet is judged
 * by the nearest existing directory above it, and a name beneath a symlink
 * by the symlink itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unit.h"
#include "view.h"

struct roots {
	char base[PATH_MAX];
	int view, host;
};

static void at(const struct roots *r, const char *root, const char *rel, char *out, size_t len)
{
	snprintf(out, len, "%s/%s/%s", r->base, root, rel);
}

static int setup(void **state)
{
	struct roots *r = calloc(1, sizeof(*r));
	char a[PATH_MAX * 2], b[PATH_MAX * 2];

	assert_non_null(r);
	snprintf(r->base, sizeof(r->base), "/var/tmp/fsbt-view-XXXXXX");
	assert_non_null(mkdtemp(r->base));
	at(r, "view", "", a, sizeof(a));
	at(r, "host", "", b, sizeof(b));
	assert_int_equal(mkdir(a, 0755), 0);
	assert_int_equal(mkdir(b, 0755), 0);
	/* f: the same inode in both (a bind's view of the host's file). */
	at(r, "view", "f", a, sizeof(a));
	at(r, "host", "f", b, sizeof(b));
	assert_int_equal(close(open(a, O_CREAT | O_WRONLY | O_CLOEXEC, 0644)), 0);
	assert_int_equal(link(a, b), 0);
	/* g: a file of that name on both sides, two inodes (a private /tmp). */
	at(r, "view", "g", a, sizeof(a));
	at(r, "host", "g", b, sizeof(b));
	assert_int_equal(close(open(a, O_CREAT | O_WRONLY | O_CLOEXEC, 0644)), 0);
	assert_int_equal(close(open(b, O_CREAT | O_WRONLY | O_CLOEXEC, 0644)), 0);
	/* l: the same symlink in both; p: a symlink only the view has. */
	at(r, "view", "l", a, sizeof(a));
	at(r, "host", "l", b, sizeof(b));
	assert_int_equal(symlink("/elsewhere", a), 0);
	assert_int_equal(linkat(AT_FDCWD, a, AT_FDCWD, b, 0), 0);
	at(r, "view", "p", a, sizeof(a));
	assert_int_equal(symlink("/elsewhere", a), 0);
	at(r, "view", "", a, sizeof(a));
	at(r, "host", "", b, sizeof(b));
	r->view = open(a, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	r->host = open(b, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(r->view >= 0 && r->host >= 0);
	*state = r;
	return 0;
}

static int teardown(void **state)
{
	struct roots *r = *state;
	char cmd[PATH_MAX + 16];

	close(r->view);
	close(r->host);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", r->base);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", r->base);
	free(r);
	return 0;
}

static void the_same_inode_is_the_hosts_another_is_the_sandboxs(void **state)
{
	struct roots *r = *state;

	assert_int_equal(fsb_view_is_hosts(r->view, r->host, "/f"), 1);
	assert_int_equal(fsb_view_is_hosts(r->view, r->host, "/g"), 0);
	assert_int_equal(fsb_view_is_hosts(r->view, r->host, "/l"), 1);
	assert_int_equal(fsb_view_is_hosts(r->view, r->host, "/p"), 0);
}

static void a_new_name_is_judged_by_the_directory_above_it(void **state)
{
	struct roots *r = *state;

	/* "/" is the same directory in neither root: two mkdirs. */
	assert_int_equal(fsb_view_is_hosts(r->view, r->host, "/new"), 0);
	assert_int_equal(fsb_view_is_hosts(r->view, r->host, "/new/deeper/x"), 0);
	/* Under a file: ENOTDIR, judged by the file. */
	assert_int_equal(fsb_view_is_hosts(r->view, r->host, "/f/x"), 1);
	assert_int_equal(fsb_view_is_hosts(r->view, r->host, "/g/x"), 0);
}

/* An entry under the name a RENAME_EXCHANGE gives a directory, where a
 * symlink is now, answered ELOOP, and the exchange was refused with EIO. */
static void a_name_beneath_a_symlink_is_judged_by_the_symlink(void **state)
{
	struct roots *r = *state;

	assert_int_equal(fsb_view_is_hosts(r->view, r->host, "/l/x"), 1);
	assert_int_equal(fsb_view_is_hosts(r->view, r->host, "/p/x"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(the_same_inode_is_the_hosts_another_is_the_sandboxs,
						setup, teardown),
		cmocka_unit_test_setup_teardown(a_new_name_is_judged_by_the_directory_above_it, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_name_beneath_a_symlink_is_judged_by_the_symlink,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
