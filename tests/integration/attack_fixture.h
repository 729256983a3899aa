/*
 * attack_fixture.h — what the attack suites share (test_attacks_hostop.c
 * against `fsbroker serve`, test_attacks_run.c inside `fsbroker run`): the
 * directories an attack aims at, filled with names a swapped symlink would
 * lead to, and a guard that fails the test when anything in them changed.
 */
#ifndef FSBT_ATTACK_FIXTURE_H
#define FSBT_ATTACK_FIXTURE_H

#include "harness.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* The names every guarded directory holds, so that an operation that
 * followed a swapped symlink would find them. */
static inline void fill_dir(const char *dir, const char *tag)
{
	char p[PATH_MAX * 2], text[128];

	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		fail_msg("mkdir %s: %s", dir, strerror(errno));
	snprintf(text, sizeof(text), "canary %s\n", tag);
	snprintf(p, sizeof(p), "%s/canary", dir);
	fsbt_write_file(p, text);
	snprintf(p, sizeof(p), "%s/victim", dir);
	fsbt_write_file(p, text);
	snprintf(p, sizeof(p), "%s/sub", dir);
	if (mkdir(p, 0755) < 0 && errno != EEXIST)
		fail_msg("mkdir %s: %s", p, strerror(errno));
	snprintf(p, sizeof(p), "%s/sub/inner", dir);
	fsbt_write_file(p, text);
}

/* The guarded trees: the workspace's protected `locked`, a directory
 * outside every tree the pack lets change, and ~/.ssh. */
struct guard {
	char paths[3][PATH_MAX + 32];
	struct fsbt_tree t[3];
};

static inline void guard_take(struct guard *g, const char *ws, const char *outside_parent,
			      const char *home)
{
	snprintf(g->paths[0], sizeof(g->paths[0]), "%s/locked", ws);
	snprintf(g->paths[1], sizeof(g->paths[1]), "%s/outside", outside_parent);
	snprintf(g->paths[2], sizeof(g->paths[2]), "%s/.ssh", home);
	for (int i = 0; i < 3; i++)
		assert_int_equal(fsbt_tree_snap(g->paths[i], &g->t[i]), 0);
}

/* Fails when anything guarded changed: content, mode, times, link counts,
 * ctime (which moves whenever anything touches an inode). `out`, when not
 * NULL, is what the attack printed, shown first. */
static inline void guard_check(struct guard *g, const char *out)
{
	char diff[4096];

	for (int i = 0; i < 3; i++) {
		struct fsbt_tree now;

		assert_int_equal(fsbt_tree_snap(g->paths[i], &now), 0);
		if (fsbt_tree_diff(&g->t[i], &now,
				   FSBT_TREE_MTIME | FSBT_TREE_DIR_MTIME | FSBT_TREE_CTIME |
					   FSBT_TREE_NLINK,
				   diff, sizeof(diff)) > 0) {
			if (out != NULL)
				fprintf(stderr, "# the attack printed:\n%s", out);
			fail_msg("%s changed:\n%s", g->paths[i], diff);
		}
		fsbt_tree_free(&g->t[i]);
		fsbt_tree_free(&now);
	}
}

#endif
