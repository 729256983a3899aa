/*
 * verdict_cache.h — the verdict cache beside the loaded pack
 * (docs/benchmarks.md, "A verdict cache"): a bounded table, least recently
 * used out first, from what a verdict depends on to that verdict, so that
 * a path read or changed again is not judged by the Lua engine again.
 *
 * The key is the connection's scope (session, tool call), the path as the
 * client sent it, the real path the core resolved, and the kind: the op
 * (for a change, its class: broker.c, verdict_class()), whether a read's
 * file exists, and whether a file has other names. Without decide hooks a
 * verdict is a function of those and the
 * pack (engine.lua: the lists judge the names and the op; the hard-link
 * rule looks at the existence, the link count and the type, which the kind
 * holds as "linked", a non-directory with more than one link; backup.skip
 * looks at the name; approvals only ever turn an ask, which is never
 * cached, into an allow). A generation number makes every older entry a
 * miss: the broker bumps it on each pack reload and each approval given,
 * so no answer ever comes from a pack or an approval state that is gone.
 *
 * What goes in is the caller's choice (broker.c): only allow or deny,
 * never a verdict an approval or a decide hook produced. Not thread safe:
 * the broker's lock guards it.
 */
#ifndef FSB_VERDICT_CACHE_H
#define FSB_VERDICT_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy.h"

/* The core's bounds: enough entries for a tree of ten thousand files read
 * over and over (a `grep -r` run again), and at most 8 MiB whatever the
 * paths' lengths (an entry of short paths takes about 500 bytes). */
#define FSB_VERDICT_CACHE_ENTRIES 16384
#define FSB_VERDICT_CACHE_BYTES (8u << 20)

struct fsb_verdict_cache_entry;

struct fsb_verdict_cache {
	struct fsb_verdict_cache_entry **buckets;
	size_t nbuckets;		/* a power of two */
	/* The use order: newest at the head, the next to drop at the tail. */
	struct fsb_verdict_cache_entry *newest, *oldest;
	size_t n, capacity;
	size_t bytes, max_bytes;	/* the entries' allocations */
	uint64_t generation;
	uint64_t seed;			/* random: the hash's starting value */
	unsigned long hits, misses, evictions;
};

/* A verdict cache key's kind: the op in the low byte, and the facts. */
#define FSB_VERDICT_EXISTS (1u << 8)
#define FSB_VERDICT_LINKED (1u << 9)
/* The allow of every plain name of a directory (policy.h,
 * fsb_policy_name_is_plain): the names are the directory's, cut after
 * their last '/' (broker.c, any_name_key()). */
#define FSB_VERDICT_ANY_NAME (1u << 10)

/** What a verdict is looked up by. Every string non-NULL. */
struct fsb_verdict_key {
	const char *session;
	const char *tool_call;	/* "" for none */
	const char *requested;	/* as the client sent it */
	const char *resolved;	/* the real path in the requester's view */
	unsigned kind;		/* the op or its class | FSB_VERDICT_EXISTS | FSB_VERDICT_LINKED */
};

/** An empty cache of at most `capacity` entries taking at most `max_bytes`
 * together (0: none is ever kept). 0 or -ENOMEM. */
int fsb_verdict_cache_init(struct fsb_verdict_cache *c, size_t capacity, size_t max_bytes);

void fsb_verdict_cache_free(struct fsb_verdict_cache *c);

/** Make every entry there is now a miss (a reload, an approval). */
void fsb_verdict_cache_invalidate(struct fsb_verdict_cache *c);

/**
 * The verdict and errno stored for `k` in the current generation: true
 * with `v` (decision, rule, reason, hint, backup; origin FSB_BY_RULES) and
 * `*errnum` filled, false for a miss.
 */
bool fsb_verdict_cache_get(struct fsb_verdict_cache *c, const struct fsb_verdict_key *k,
			struct fsb_verdict *v, int *errnum);

/**
 * Remember `v` and `errnum` for `k` in the current generation, replacing
 * what was there, dropping the least recently used entry when full. Out of
 * memory it remembers nothing (a later request is judged again).
 */
void fsb_verdict_cache_put(struct fsb_verdict_cache *c, const struct fsb_verdict_key *k,
			const struct fsb_verdict *v, int errnum);

#endif
