/*
 * link_guard.h — hard links to protected files (docs/rule-packs.md, "Hard
 * links"). A change through one name of a file with several links changes
 * every other name too: a link made beforehand from the workspace to
 * ~/.bashrc or to a repository's .envrc would let a sandboxed command write
 * them through a name the pack allows. The guard knows the inodes of such
 * files — every existing file with more than one link that the pack does
 * not let be changed, among the places a link to it is likely to be found —
 * and refuses a change to any of them, whatever name it comes through.
 * Everything else with several links (a pnpm store linked into
 * node_modules, git's objects in a local clone) may be changed as the pack
 * says.
 */
#ifndef FSB_LINK_GUARD_H
#define FSB_LINK_GUARD_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

struct fsb_broker;

struct fsb_guarded_inode {
	dev_t dev;
	ino_t ino;
	char *path;		/* the name the pack protects */
	char *rule;		/* the rule that protects it */
};

struct fsb_link_guard {
	pthread_mutex_t lock;
	bool built;		/* for the pack now serving */
	unsigned gen;		/* reloads seen */
	struct fsb_guarded_inode *v;
	size_t n;
};

void fsb_link_guard_init(struct fsb_link_guard *g);
void fsb_link_guard_free(struct fsb_link_guard *g);

/** The pack changed: the guarded set is built again at the next need. */
void fsb_link_guard_reset(struct fsb_link_guard *g);

/**
 * Whether (st->st_dev, st->st_ino), a regular file with several links, is
 * another name of a file the pack protects; then the protected name and
 * its rule go into `path` and `rule`. The set is built on the first call
 * after a (re)load, without the broker's lock held: the literal paths of
 * the pack's denyRead, denyModify and ask lists, the files directly in
 * home, and every file of the workspace, each kept when it has several
 * links and the pack would not let it be written.
 */
bool fsb_link_guard_protects(struct fsb_broker *b, const struct stat *st, char *path,
			     size_t pathlen, char *rule, size_t rulelen);

#endif
