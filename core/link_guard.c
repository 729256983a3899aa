/*
 * link_guard.c — the inodes of protected files that have more than one
 * name (see link_guard.h): found once per pack, looked up by (dev, ino)
 * for each change to a file with several links.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker.h"
#include "link_guard.h"
#include "log.h"

/* Directories nftw keeps open at once while it walks the workspace. */
#define WALK_FDS 32

/* The set being built: growing arrays, installed whole when done. */
struct set {
	struct fsb_broker *b;
	struct fsb_guarded_inode *v;
	size_t n, cap;
	int err;
};

void fsb_link_guard_init(struct fsb_link_guard *g)
{
	memset(g, 0, sizeof(*g));
	pthread_mutex_init(&g->lock, NULL);
}

static void free_entries(struct fsb_guarded_inode *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].path);
		free(v[i].rule);
	}
	free(v);
}

void fsb_link_guard_free(struct fsb_link_guard *g)
{
	free_entries(g->v, g->n);
	pthread_mutex_destroy(&g->lock);
	memset(g, 0, sizeof(*g));
}

void fsb_link_guard_reset(struct fsb_link_guard *g)
{
	pthread_mutex_lock(&g->lock);
	free_entries(g->v, g->n);
	g->v = NULL;
	g->n = 0;
	g->built = false;
	g->gen++;
	pthread_mutex_unlock(&g->lock);
}

/*
 * Keep `path` (`st` its lstat) when it is a regular file with several
 * links that the pack would not let be written. It is judged as if it had
 * one link, so that the pack's own hard-link rule does not count.
 */
static void consider(struct set *s, const char *path, const struct stat *st)
{
	struct fsb_policy_req req;
	struct fsb_verdict v;
	struct fsb_guarded_inode *e;

	if (s->err != 0 || !S_ISREG(st->st_mode) || st->st_nlink < 2)
		return;
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].dev == st->st_dev && s->v[i].ino == st->st_ino)
			return;
	memset(&req, 0, sizeof(req));
	req.op = FSB_OP_WRITE;
	req.path = path;
	req.requested = path;
	req.exists = true;
	req.mode = st->st_mode;
	req.dev = st->st_dev;
	req.ino = st->st_ino;
	req.nlink = 1;
	req.peek = true;
	fsb_broker_lock(s->b);
	fsb_policy_evaluate(s->b->policy, &req, &v);
	fsb_broker_unlock(s->b);
	if (v.decision == FSB_ALLOW)
		return;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct fsb_guarded_inode *grown = realloc(s->v, cap * sizeof(*grown));

		if (grown == NULL) {
			s->err = -ENOMEM;
			return;
		}
		s->v = grown;
		s->cap = cap;
	}
	e = &s->v[s->n];
	e->dev = st->st_dev;
	e->ino = st->st_ino;
	e->path = strdup(path);
	e->rule = strdup(v.rule);
	if (e->path == NULL || e->rule == NULL) {
		free(e->path);
		free(e->rule);
		s->err = -ENOMEM;
		return;
	}
	s->n++;
}

static void consider_path(struct set *s, const char *path)
{
	struct stat st;

	if (lstat(path, &st) == 0)
		consider(s, path, &st);
}

/* The literal entries of the lists that keep a change from happening. */
static void consider_literals(struct set *s)
{
	const struct fsb_glob_list *lists[3];
	struct fsb_policy_summary sum;
	char err[256];

	memset(&sum, 0, sizeof(sum));
	fsb_broker_lock(s->b);
	if (fsb_policy_summary(s->b->policy, &sum, err, sizeof(err)) < 0) {
		fsb_broker_unlock(s->b);
		fsb_policy_summary_free(&sum);
		s->err = -EINVAL;
		return;
	}
	fsb_broker_unlock(s->b);
	lists[0] = &sum.deny_read;
	lists[1] = &sum.deny_modify;
	lists[2] = &sum.ask;
	for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]); l++)
		for (size_t i = 0; i < lists[l]->n; i++)
			if (lists[l]->v[i].kind == FSB_GLOB_EXACT && !lists[l]->v[i].except)
				consider_path(s, lists[l]->v[i].base);
	fsb_policy_summary_free(&sum);
}

/* The files directly in home: its dotfiles (.bashrc, .profile, ...). */
static void consider_home(struct set *s, const char *home)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d;

	if (home[0] == '\0' || (d = opendir(home)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (de->d_type != DT_REG && de->d_type != DT_UNKNOWN)
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", home, de->d_name) < sizeof(path))
			consider_path(s, path);
	}
	closedir(d);
}

/* nftw has no argument for its callback. */
static __thread struct set *walking;

static int walk_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)ftw;
	if (type == FTW_F)
		consider(walking, path, st);
	return walking->err != 0;
}

/* A fresh set for the pack now serving. */
static int build(struct fsb_broker *b, struct set *s)
{
	memset(s, 0, sizeof(*s));
	s->b = b;
	consider_literals(s);
	consider_home(s, b->cfg.home);
	if (b->cfg.workspace[0] != '\0' && s->err == 0) {
		walking = s;
		/* FTW_PHYS: never through a symlink; FTW_MOUNT: one file system,
		 * the only one a hard link of the workspace's files can be on. */
		nftw(b->cfg.workspace, walk_entry, WALK_FDS, FTW_PHYS | FTW_MOUNT);
		walking = NULL;
	}
	return s->err;
}

static bool lookup(const struct fsb_link_guard *g, const struct stat *st, char *path,
		   size_t pathlen, char *rule, size_t rulelen)
{
	for (size_t i = 0; i < g->n; i++) {
		if (g->v[i].dev == st->st_dev && g->v[i].ino == st->st_ino) {
			snprintf(path, pathlen, "%s", g->v[i].path);
			snprintf(rule, rulelen, "%s", g->v[i].rule);
			return true;
		}
	}
	return false;
}

bool fsb_link_guard_protects(struct fsb_broker *b, const struct stat *st, char *path,
			     size_t pathlen, char *rule, size_t rulelen)
{
	struct fsb_link_guard *g = &b->link_guard;
	unsigned gen;
	struct set s;
	bool hit;

	pthread_mutex_lock(&g->lock);
	gen = g->gen;
	if (g->built) {
		hit = lookup(g, st, path, pathlen, rule, rulelen);
		pthread_mutex_unlock(&g->lock);
		return hit;
	}
	pthread_mutex_unlock(&g->lock);

	/* Built without the guard's lock: judging takes the broker's, which a
	 * caller may hold. Two builders at once build the same set. */
	if (build(b, &s) < 0) {
		free_entries(s.v, s.n);
		/* Fail closed: without the set, nothing with several links may
		 * be changed. */
		fsb_error("the inodes of protected files with several links could not be "
			  "listed: %s", strerror(-s.err));
		snprintf(path, pathlen, "(unknown)");
		snprintf(rule, rulelen, "hardlinks: the protected files could not be listed");
		return true;
	}
	pthread_mutex_lock(&g->lock);
	/* A reload meanwhile: this set is the old pack's; use it for this
	 * call, and let the next one build the new pack's. */
	if (!g->built && g->gen == gen) {
		g->v = s.v;
		g->n = s.n;
		g->built = true;
		hit = lookup(g, st, path, pathlen, rule, rulelen);
	} else {
		struct fsb_link_guard mine = { .v = s.v, .n = s.n };

		hit = lookup(g->built ? g : &mine, st, path, pathlen, rule, rulelen);
		free_entries(s.v, s.n);
	}
	pthread_mutex_unlock(&g->lock);
	return hit;
}
