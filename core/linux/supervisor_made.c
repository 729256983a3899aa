/*
 * supervisor_made.c — the files this supervisor's grants created lately
 * (see supervisor_call.h), so that a metadata call on an fd of one of them
 * takes the create's name and verdict instead of reading the fd's name
 * from /proc and asking the pack again: `tar x` sets the times, the owner
 * and the mode of every file it makes through the fd it made it with.
 *
 * A file is one of them when the fd's (dev, ino) and birth time are those
 * of the file made, it still has one name, and since its create no reload
 * or approval changed the pack's verdicts and no host operation began that
 * could have moved or removed a name (struct fsb_broker_epoch). Then its
 * name is the one it was made under, and the verdict the pack gave it is
 * the one the verdict cache would give the call (its class, the same
 * names): only an allow of the rules, of a pack without decide hooks, is
 * kept. Nothing else is skipped: the call is still journaled, audited and
 * performed on the target's own fd.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "supervisor_call.h"

#define MADE_SLOTS 16

struct made {
	bool used;
	dev_t dev;
	ino_t ino;
	struct statx_timestamp btime;
	struct fsb_broker_epoch epoch;
	struct fsb_verdict verdict;
	char path[PATH_MAX];	/* the real path it was made at */
};

struct sv_made_files {
	pthread_mutex_t lock;
	unsigned next;		/* the slot the next create takes */
	struct made slots[MADE_SLOTS];
};

/* The birth time of `fd`'s file: false when its file system keeps none. */
static bool birth_time(int fd, struct statx_timestamp *btime)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT, STATX_BTIME, &stx) < 0 ||
	    !(stx.stx_mask & STATX_BTIME))
		return false;
	*btime = stx.stx_btime;
	return true;
}

static bool same_time(const struct statx_timestamp *a, const struct statx_timestamp *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

static bool same_epoch(const struct fsb_broker_epoch *a, const struct fsb_broker_epoch *b)
{
	return a->verdicts == b->verdicts && a->names == b->names;
}

void fsb_sv_made_init(struct fsb_supervisor *sv)
{
	struct sv_made_files *m = calloc(1, sizeof(*m));

	/* Without a table every call is judged: slower, not wrong. */
	if (m != NULL)
		pthread_mutex_init(&m->lock, NULL);
	sv->made = m;
}

void fsb_sv_made_note(struct fsb_supervisor *sv, const struct fsb_access *acc, int fd,
		      const struct stat *st)
{
	struct sv_made_files *m = sv->made;
	struct statx_timestamp btime;
	struct made *slot;

	if (m == NULL || !S_ISREG(st->st_mode) || st->st_nlink != 1 ||
	    !fsb_broker_verdict_answers_class(sv->b, acc) || !birth_time(fd, &btime))
		return;
	pthread_mutex_lock(&m->lock);
	slot = &m->slots[m->next++ % MADE_SLOTS];
	slot->used = true;
	slot->dev = st->st_dev;
	slot->ino = st->st_ino;
	slot->btime = btime;
	/* The epoch the verdict was decided in, not now's: a reload in
	 * between must not pass for one before it. */
	slot->epoch = acc->epoch;
	slot->verdict = acc->verdict;
	snprintf(slot->path, sizeof(slot->path), "%s", acc->res.path);
	pthread_mutex_unlock(&m->lock);
}

bool fsb_sv_made_here(struct fsb_supervisor *sv, int fd, const struct stat *st,
		      char *path, size_t len, struct fsb_verdict *verdict)
{
	struct sv_made_files *m = sv->made;
	struct fsb_broker_epoch now;
	struct statx_timestamp btime;
	struct made *hit = NULL;
	bool here = false;

	if (m == NULL || !S_ISREG(st->st_mode) || st->st_nlink != 1)
		return false;
	pthread_mutex_lock(&m->lock);
	for (int i = 0; i < MADE_SLOTS && hit == NULL; i++) {
		struct made *s = &m->slots[i];

		if (s->used && s->dev == st->st_dev && s->ino == st->st_ino)
			hit = s;
	}
	pthread_mutex_unlock(&m->lock);
	/* Only a likely hit pays for the birth time. */
	if (hit == NULL || !birth_time(fd, &btime))
		return false;
	fsb_broker_epoch(sv->b, &now);
	pthread_mutex_lock(&m->lock);
	/* Still the same file and the same verdict: not taken over by
	 * another create meanwhile, the inode not reused. */
	if (hit->used && hit->dev == st->st_dev && hit->ino == st->st_ino &&
	    same_time(&hit->btime, &btime) && same_epoch(&hit->epoch, &now) &&
	    strlen(hit->path) < len) {
		memcpy(path, hit->path, strlen(hit->path) + 1);
		*verdict = hit->verdict;
		here = true;
	}
	pthread_mutex_unlock(&m->lock);
	return here;
}

void fsb_sv_made_free(struct fsb_supervisor *sv)
{
	if (sv->made == NULL)
		return;
	pthread_mutex_destroy(&sv->made->lock);
	free(sv->made);
	sv->made = NULL;
}
