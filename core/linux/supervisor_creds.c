/*
 * supervisor_creds.c — what a create needs of its target (its umask and
 * its fsuid/fsgid), kept per process so that a create does not read
 * /proc/<pid>/status each time (DESIGN §7.4; docs/decisions.md, "The
 * umask is kept per process").
 *
 * An entry is keyed by the trapping thread's id and held with a pidfd, as
 * the root cache is (supervisor_target.c): an entry whose pidfd reports
 * its thread exited is dropped, so a reused id never finds its
 * predecessor's values. The pidfd is opened before /proc is read, so what
 * is read belongs to the thread the pidfd holds (or to nothing: the caller
 * checks NOTIF_ID_VALID after).
 *
 * fsuid/fsgid. Without CAP_SETUID (CAP_SETGID) a process can set its ids
 * only to values among its real, effective, saved and fs ids. The sandbox
 * holds no capability (--cap-drop ALL, also for root), no_new_privs makes
 * a setuid or file-capability exec gain none, and its user namespace maps
 * one uid and one gid. So a process whose four uids are equal, and whose
 * four gids are, keeps them for life; its ids are kept. One whose ids
 * differ (a core not started this way) is read every time.
 *
 * The umask. A process changes it with umask(2) alone (unshare is refused
 * by the filter), and the product's filter routes umask(2) here: this file
 * marks, then answers CONTINUE (the call touches no file and does not
 * depend on the policy). The notification comes BEFORE the kernel applies
 * the new value, and every thread sharing the fs_struct shares it, so:
 *
 *   - a trapped umask makes every entry of the caller's thread group
 *     unknown, and records the caller as pending, before the answer: any
 *     create that follows the call's return finds the mark;
 *   - while a group has a pending umask, its creates read /proc and keep
 *     nothing: the value may change under them at any moment;
 *   - the next call the same thread traps (anything) proves its umask has
 *     returned, applied: the pending record goes, and the next create reads
 *     /proc once and keeps it (tar's umask(0); umask(old) at start costs two
 *     reads, not one per file). A thread killed in between never traps
 *     again: its group stays uncached, which is only slower;
 *   - a value read while any umask was trapped meanwhile (a generation
 *     count) is used for its own create but not kept;
 *   - threads share by thread group (all pthreads; a thread made without
 *     CLONE_FS is counted with its group, which is only slower); another
 *     process sharing an fs_struct (clone with CLONE_FS, without
 *     CLONE_THREAD) is routed too, and from then on no umask is kept for
 *     the rest of the run;
 *   - a forked or exec'd process is a new thread id: its first create reads
 *     /proc once.
 *
 * A filter that does not route umask(2) and those clones (a client's own
 * filter handed over with Supervise) would leave entries stale: then
 * nothing is kept and every create reads /proc, unless the supervisor was
 * started with FSB_SUPERVISE_ROUTES_UMASK (fsbroker-init's filter).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "supervisor_call.h"


#define CREDS_CACHE_SIZE 64
#define PENDING_MAX 16

struct creds_entry {
	pid_t tid;		/* 0: free */
	pid_t tgid;		/* the thread group: who shares its umask */
	int pidfd;
	struct sv_creds c;
	bool umask_known;	/* c.umask may be used without reading /proc */
	unsigned long used;	/* for replacing the least recently used */
};

/* A trapped umask(2) whose thread has not trapped since. */
struct pending_umask {
	pid_t tid, tgid;
};

struct sv_creds_cache {
	pthread_mutex_t lock;
	bool shared_fs;		/* a process shares another's fs_struct: no umask kept */
	unsigned long generation;	/* trapped umasks so far */
	struct pending_umask pending[PENDING_MAX];
	int npending;		/* also read without the lock, as a hint */
	bool pending_lost;	/* more were pending than fit: no umask kept */
	struct creds_entry e[CREDS_CACHE_SIZE];
	unsigned long clock;
};

/* ---- /proc/<pid>/status ------------------------------------------------- */

/* The four numbers of a "Uid:" or "Gid:" line: real, effective, saved, fs.
 * Returns the fourth; *same is whether all four are equal. */
static unsigned long four_ids(const char *line, bool *same)
{
	unsigned long v[4];
	char *end;

	for (int i = 0; i < 4; i++) {
		v[i] = strtoul(line, &end, 10);
		line = end;
	}
	*same = v[0] == v[1] && v[1] == v[2] && v[2] == v[3];
	return v[3];
}

/* The umask, the fs ids and the thread group of `pid`; *fixed: its ids can
 * never change (all four of each equal). -ESRCH when it cannot be read. */
static int read_status(pid_t pid, struct sv_creds *out, pid_t *tgid, bool *fixed)
{
	char path[64], buf[4096], *p;
	bool uid_same = false, gid_same = false;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -ESRCH;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -ESRCH;
	buf[n] = '\0';
	out->umask = 022;
	out->fsuid = getuid();
	out->fsgid = getgid();
	*tgid = 0;
	if ((p = strstr(buf, "\nUmask:")) != NULL)
		out->umask = (mode_t)strtoul(p + 7, NULL, 8) & 0777;
	if ((p = strstr(buf, "\nTgid:")) != NULL)
		*tgid = (pid_t)strtol(p + 6, NULL, 10);
	if ((p = strstr(buf, "\nUid:")) != NULL)
		out->fsuid = (uid_t)four_ids(p + 5, &uid_same);
	if ((p = strstr(buf, "\nGid:")) != NULL)
		out->fsgid = (gid_t)four_ids(p + 5, &gid_same);
	*fixed = uid_same && gid_same && *tgid > 0;
	return 0;
}

/* ---- the cache ---------------------------------------------------------- */

static struct sv_creds_cache *cache_of(struct fsb_supervisor *sv)
{
	struct sv_creds_cache *c = __atomic_load_n(&sv->creds, __ATOMIC_ACQUIRE);

	if (c != NULL)
		return c;
	if ((c = calloc(1, sizeof(*c))) == NULL)
		return NULL;
	pthread_mutex_init(&c->lock, NULL);
	/* Two receivers may get here at once: the first one's cache is kept. */
	if (!__atomic_compare_exchange_n(&sv->creds, &(struct sv_creds_cache *){ NULL }, c,
					 false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		pthread_mutex_destroy(&c->lock);
		free(c);
		c = __atomic_load_n(&sv->creds, __ATOMIC_ACQUIRE);
	}
	return c;
}

static void entry_drop(struct creds_entry *e)
{
	if (e->tid != 0)
		close(e->pidfd);
	e->tid = 0;
}

/* Under the lock: the live entry of `tid`, or NULL (a dead one is dropped). */
static struct creds_entry *find(struct sv_creds_cache *c, pid_t tid)
{
	for (int i = 0; i < CREDS_CACHE_SIZE; i++) {
		struct creds_entry *e = &c->e[i];

		if (e->tid != tid)
			continue;
		if (fsb_sv_pidfd_exited(e->pidfd)) {
			entry_drop(e);	/* the id is another thread's now */
			return NULL;
		}
		return e;
	}
	return NULL;
}

/* Under the lock: may a umask of group `tgid`, read at `generation`, be kept? */
static bool umask_keepable(const struct sv_creds_cache *c, pid_t tgid, unsigned long generation)
{
	if (c->shared_fs || c->pending_lost || c->generation != generation)
		return false;
	for (int i = 0; i < c->npending; i++)
		if (c->pending[i].tgid == tgid)
			return false;
	return true;
}

/* Under the lock: keep `v` for `tid` (taking `pidfd`), replacing the least
 * recently used entry when the cache is full. */
static void store(struct sv_creds_cache *c, pid_t tid, pid_t tgid, int pidfd,
		  const struct sv_creds *v, bool umask_known)
{
	struct creds_entry *victim = &c->e[0];

	for (int i = 0; i < CREDS_CACHE_SIZE; i++) {
		struct creds_entry *e = &c->e[i];

		if (e->tid == tid)	/* filled by another receiver meanwhile */
			entry_drop(e);
		if (victim->tid != 0 && (e->tid == 0 || e->used < victim->used))
			victim = e;
	}
	entry_drop(victim);
	*victim = (struct creds_entry){ .tid = tid, .tgid = tgid, .pidfd = pidfd, .c = *v,
					.umask_known = umask_known, .used = ++c->clock };
}

int fsb_sv_creds(struct fsb_supervisor *sv, pid_t pid, struct sv_creds *out)
{
	struct sv_creds_cache *c = sv->routes_umask ? cache_of(sv) : NULL;
	struct creds_entry *e;
	unsigned long generation;
	pid_t tgid;
	bool fixed;
	int pidfd = -1, err;

	if (c == NULL)
		return read_status(pid, out, &tgid, &fixed);
	pthread_mutex_lock(&c->lock);
	if ((e = find(c, pid)) != NULL) {
		e->used = ++c->clock;
		if (e->umask_known && umask_keepable(c, e->tgid, c->generation)) {
			*out = e->c;
			pthread_mutex_unlock(&c->lock);
			return 0;
		}
		/* The ids are known; the umask is read again, and kept if
		 * nothing may change it meanwhile. The entry's pidfd stays. */
		pidfd = fcntl(e->pidfd, F_DUPFD_CLOEXEC, 0);
	}
	generation = c->generation;
	pthread_mutex_unlock(&c->lock);

	if (pidfd < 0)
		pidfd = fsb_sv_pidfd(pid);
	if ((err = read_status(pid, out, &tgid, &fixed)) < 0 || pidfd < 0 || !fixed) {
		if (pidfd >= 0)
			close(pidfd);
		return err;
	}
	pthread_mutex_lock(&c->lock);
	store(c, pid, tgid, pidfd, out, umask_keepable(c, tgid, generation));
	pthread_mutex_unlock(&c->lock);
	return 0;
}

void fsb_sv_creds_seen(struct fsb_supervisor *sv, pid_t tid)
{
	struct sv_creds_cache *c = __atomic_load_n(&sv->creds, __ATOMIC_ACQUIRE);

	/* A hint read without the lock: a umask trapped by this very thread
	 * was counted before it was answered, so before this call trapped. */
	if (c == NULL || __atomic_load_n(&c->npending, __ATOMIC_ACQUIRE) == 0)
		return;
	pthread_mutex_lock(&c->lock);
	for (int i = 0; i < c->npending;) {
		if (c->pending[i].tid == tid) {
			c->pending[i] = c->pending[c->npending - 1];
			__atomic_store_n(&c->npending, c->npending - 1, __ATOMIC_RELEASE);
		} else
			i++;
	}
	pthread_mutex_unlock(&c->lock);
}

void fsb_sv_serve_process(struct fsb_supervisor *sv, const struct seccomp_notif *req)
{
	struct sv_creds_cache *c = sv->routes_umask ? cache_of(sv) : NULL;
	pid_t tid = (pid_t)req->pid, tgid = 0;
	struct creds_entry *e;
	struct sv_creds unused;
	bool fixed;

	if (c == NULL) {
		/* Nothing is kept without a cache, so nothing can go stale. */
		fsb_sv_answer_continue(sv, req);
		return;
	}
	if (req->data.nr == __NR_clone) {
		pthread_mutex_lock(&c->lock);
		c->shared_fs = true;
		c->generation++;
		pthread_mutex_unlock(&c->lock);
		fsb_sv_answer_continue(sv, req);
		return;
	}
	/* umask(2): its thread group, from the entry or from /proc. A thread
	 * that cannot be read is gone (only a fatal signal, which takes its
	 * group, ends the wait), and its umask never applies; every entry is
	 * marked all the same. */
	pthread_mutex_lock(&c->lock);
	if ((e = find(c, tid)) != NULL)
		tgid = e->tgid;
	pthread_mutex_unlock(&c->lock);
	if (tgid == 0 && read_status(tid, &unused, &tgid, &fixed) < 0)
		tgid = 0;
	pthread_mutex_lock(&c->lock);
	c->generation++;
	for (int i = 0; i < CREDS_CACHE_SIZE; i++)
		if (c->e[i].tid != 0 && (tgid == 0 || c->e[i].tgid == tgid))
			c->e[i].umask_known = false;
	if (tgid != 0 && c->npending < PENDING_MAX) {
		c->pending[c->npending] = (struct pending_umask){ tid, tgid };
		__atomic_store_n(&c->npending, c->npending + 1, __ATOMIC_RELEASE);
	} else if (tgid != 0) {
		c->pending_lost = true;
	}
	pthread_mutex_unlock(&c->lock);
	/* Only now may the kernel apply it. */
	fsb_sv_answer_continue(sv, req);
}

void fsb_sv_creds_free(struct fsb_supervisor *sv)
{
	struct sv_creds_cache *c = sv->creds;

	if (c == NULL)
		return;
	for (int i = 0; i < CREDS_CACHE_SIZE; i++)
		entry_drop(&c->e[i]);
	pthread_mutex_destroy(&c->lock);
	free(c);
	sv->creds = NULL;
}
