/*
 * verdict_cache.c — the verdict cache (see verdict_cache.h): a chained hash
 * table over one allocation per entry (its key and its verdict's strings
 * inline), and a doubly linked list in the order of use, so that a lookup,
 * an insertion and an eviction are each O(1). Entries of an older
 * generation are left where they are and count as misses; they are
 * replaced when their key comes again, or dropped when they reach the tail.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "verdict_cache.h"

struct fsb_verdict_cache_entry {
	struct fsb_verdict_cache_entry *chain;		/* same bucket */
	struct fsb_verdict_cache_entry *newer, *older;	/* the use order */
	uint64_t hash, generation;
	unsigned kind;
	enum fsb_decision decision;
	bool backup;
	int errnum;
	size_t keylen, size;
	/* data: the key (four NUL-terminated strings), then rule, reason and
	 * hint, each NUL-terminated. */
	const char *rule, *reason, *hint;
	char data[];
};

/* FNV-1a over the kind and the four key strings, each with its NUL, so
 * that ("ab", "c") and ("a", "bc") differ. It starts from the cache's random
 * seed, not FNV's fixed basis: the paths come from the sandboxed command,
 * and names that collide under a known start could be chosen to pile
 * every entry into one chain. */
static uint64_t key_hash(const struct fsb_verdict_cache *c, const struct fsb_verdict_key *k,
			 size_t *len)
{
	const char *parts[4] = { k->session, k->tool_call, k->requested, k->resolved };
	uint64_t h = c->seed;
	size_t n = 0;

	for (unsigned i = 0, kind = k->kind; i < sizeof(kind); i++, kind >>= 8) {
		h ^= kind & 0xff;
		h *= 0x100000001b3ULL;
	}
	for (int i = 0; i < 4; i++) {
		const unsigned char *p = (const unsigned char *)parts[i];

		do {
			h ^= *p;
			h *= 0x100000001b3ULL;
			n++;
		} while (*p++ != '\0');
	}
	*len = n;
	return h;
}

static bool key_equal(const struct fsb_verdict_cache_entry *e, const struct fsb_verdict_key *k)
{
	const char *parts[4] = { k->session, k->tool_call, k->requested, k->resolved };
	const char *p = e->data;

	if (e->kind != k->kind)
		return false;
	for (int i = 0; i < 4; i++) {
		size_t n = strlen(parts[i]) + 1;

		if (memcmp(p, parts[i], n) != 0)
			return false;
		p += n;
	}
	return true;
}

int fsb_verdict_cache_init(struct fsb_verdict_cache *c, size_t capacity, size_t max_bytes)
{
	memset(c, 0, sizeof(*c));
	if (getrandom(&c->seed, sizeof(c->seed), GRND_NONBLOCK) != sizeof(c->seed))
		c->seed = 0xcbf29ce484222325ULL ^ (uint64_t)(uintptr_t)c ^ (uint64_t)time(NULL);
	c->capacity = max_bytes > 0 ? capacity : 0;
	c->max_bytes = max_bytes;
	if (c->capacity == 0)
		return 0;
	/* About two buckets per entry keeps the chains short. */
	c->nbuckets = 16;
	while (c->nbuckets < capacity * 2)
		c->nbuckets *= 2;
	c->buckets = calloc(c->nbuckets, sizeof(*c->buckets));
	if (c->buckets == NULL) {
		c->capacity = 0;
		c->nbuckets = 0;
		return -ENOMEM;
	}
	return 0;
}

static void unlink_use(struct fsb_verdict_cache *c, struct fsb_verdict_cache_entry *e)
{
	if (e->newer != NULL)
		e->newer->older = e->older;
	else
		c->newest = e->older;
	if (e->older != NULL)
		e->older->newer = e->newer;
	else
		c->oldest = e->newer;
	e->newer = e->older = NULL;
}

static void push_newest(struct fsb_verdict_cache *c, struct fsb_verdict_cache_entry *e)
{
	e->newer = NULL;
	e->older = c->newest;
	if (c->newest != NULL)
		c->newest->newer = e;
	c->newest = e;
	if (c->oldest == NULL)
		c->oldest = e;
}

/* Take `e` out of the table and free it. */
static void drop(struct fsb_verdict_cache *c, struct fsb_verdict_cache_entry *e)
{
	struct fsb_verdict_cache_entry **pp = &c->buckets[e->hash & (c->nbuckets - 1)];

	while (*pp != e)
		pp = &(*pp)->chain;
	*pp = e->chain;
	unlink_use(c, e);
	c->n--;
	c->bytes -= e->size;
	free(e);
}

void fsb_verdict_cache_free(struct fsb_verdict_cache *c)
{
	while (c->oldest != NULL)
		drop(c, c->oldest);
	free(c->buckets);
	memset(c, 0, sizeof(*c));
}

void fsb_verdict_cache_invalidate(struct fsb_verdict_cache *c)
{
	c->generation++;
}

static struct fsb_verdict_cache_entry *find(const struct fsb_verdict_cache *c,
					 const struct fsb_verdict_key *k, uint64_t h, size_t len)
{
	struct fsb_verdict_cache_entry *e = c->buckets[h & (c->nbuckets - 1)];

	for (; e != NULL; e = e->chain)
		if (e->hash == h && e->keylen == len && key_equal(e, k))
			return e;
	return NULL;
}

bool fsb_verdict_cache_get(struct fsb_verdict_cache *c, const struct fsb_verdict_key *k,
			struct fsb_verdict *v, int *errnum)
{
	struct fsb_verdict_cache_entry *e;
	size_t len;
	uint64_t h;

	if (c->capacity == 0) {
		c->misses++;
		return false;
	}
	h = key_hash(c, k, &len);
	e = find(c, k, h, len);
	if (e == NULL || e->generation != c->generation) {
		c->misses++;
		return false;
	}
	unlink_use(c, e);
	push_newest(c, e);
	memset(v, 0, sizeof(*v));
	v->decision = e->decision;
	v->backup = e->backup;
	v->origin = FSB_BY_RULES;
	snprintf(v->rule, sizeof(v->rule), "%s", e->rule);
	snprintf(v->reason, sizeof(v->reason), "%s", e->reason);
	snprintf(v->hint, sizeof(v->hint), "%s", e->hint);
	*errnum = e->errnum;
	c->hits++;
	return true;
}

void fsb_verdict_cache_put(struct fsb_verdict_cache *c, const struct fsb_verdict_key *k,
			const struct fsb_verdict *v, int errnum)
{
	const char *parts[4] = { k->session, k->tool_call, k->requested, k->resolved };
	size_t len, nrule, nreason, nhint, size;
	struct fsb_verdict_cache_entry *e, *old;
	uint64_t h;
	char *p;

	if (c->capacity == 0)
		return;
	h = key_hash(c, k, &len);
	if ((old = find(c, k, h, len)) != NULL)
		drop(c, old);
	nrule = strlen(v->rule) + 1;
	nreason = strlen(v->reason) + 1;
	nhint = strlen(v->hint) + 1;
	size = sizeof(*e) + len + nrule + nreason + nhint;
	if (size > c->max_bytes)
		return;
	e = malloc(size);
	if (e == NULL)
		return;
	e->size = size;
	e->hash = h;
	e->keylen = len;
	e->generation = c->generation;
	e->kind = k->kind;
	e->decision = v->decision;
	e->backup = v->backup;
	e->errnum = errnum;
	p = e->data;
	for (int i = 0; i < 4; i++) {
		size_t n = strlen(parts[i]) + 1;

		memcpy(p, parts[i], n);
		p += n;
	}
	memcpy(p, v->rule, nrule);
	e->rule = p;
	p += nrule;
	memcpy(p, v->reason, nreason);
	e->reason = p;
	p += nreason;
	memcpy(p, v->hint, nhint);
	e->hint = p;

	while (c->oldest != NULL && (c->n == c->capacity || c->bytes + size > c->max_bytes)) {
		drop(c, c->oldest);
		c->evictions++;
	}
	e->chain = c->buckets[h & (c->nbuckets - 1)];
	c->buckets[h & (c->nbuckets - 1)] = e;
	e->newer = e->older = NULL;
	push_newest(c, e);
	c->n++;
	c->bytes += size;
}
