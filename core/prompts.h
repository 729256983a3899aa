/*
 * prompts.h — prompt blocks: the requests a pack answered `ask` for, waiting
 * for the agent host to approve or deny them over the control channel
 * (DESIGN §3.4, §7.5). A block is bound to an exact key: op, real path and,
 * for an existing file, dev/ino. With inline approvals the call that asked
 * waits on its block (fsb_prompts_wait) until it is answered.
 */
#ifndef FSB_PROMPTS_H
#define FSB_PROMPTS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include <cJSON.h>

#include "op.h"

#define FSB_PROMPTS_MAX 1024

struct fsb_prompt {
	char id[24];
	enum fsb_op op;
	char *path;		/* real */
	char *requested;
	char *rule;
	char *session;
	char *tool_call;
	bool exists;
	dev_t dev;
	ino_t ino;
	time_t created;
	unsigned waiters;	/* calls waiting for the answer (inline approvals) */
	int answer;		/* 0 pending, 1 approved, -1 denied */
};

struct fsb_prompts {
	struct fsb_prompt v[FSB_PROMPTS_MAX];
	size_t n;
	unsigned long next_id;
	/* Block ids are blk-<tag>-<n>: a tag of its own for each core, so that
	 * the blocks one run leaves in the state dir never share an id with
	 * another run's. */
	char tag[8];
	pthread_cond_t answered;	/* with the broker's lock */
	bool ready;
};

/** Set up an empty, zeroed table (its tag and condition). 0 or -errno. */
int fsb_prompts_init(struct fsb_prompts *ps);

/**
 * Record a block, or return the pending one with the same key, rule,
 * session and tool call (a pack's ask and a too-large backup's ask on one
 * file are two blocks: their approvals go to different places). When full, the oldest block is dropped. NULL on ENOMEM.
 */
const struct fsb_prompt *fsb_prompts_record(struct fsb_prompts *ps, enum fsb_op op,
					    const char *path, const char *requested,
					    bool exists, dev_t dev, ino_t ino,
					    const char *rule, const char *session,
					    const char *tool_call);

/** The pending block with this id (not answered yet), or NULL. */
const struct fsb_prompt *fsb_prompts_find(const struct fsb_prompts *ps, const char *id);

/** Forget a block (approved or denied). */
void fsb_prompts_remove(struct fsb_prompts *ps, const char *id);

/**
 * Answer block `id`: the calls waiting on it wake with the answer, and the
 * last of them forgets it; a block nobody waits on is forgotten at once.
 */
void fsb_prompts_answer(struct fsb_prompts *ps, const char *id, bool approved);

/** Answer every block some call waits on (the host or the run is gone). */
void fsb_prompts_answer_all(struct fsb_prompts *ps, bool approved);

/**
 * With `lock` held exactly once (it is let go while waiting): wait up to
 * `timeout_s` seconds for block `id` to be answered. Returns 1 approved,
 * 0 denied, -ETIMEDOUT (the call is to be refused; the block stays pending,
 * for a later answer or `fsbroker approve`), or -ENOENT when the block is
 * gone (dropped from a full table).
 */
int fsb_prompts_wait(struct fsb_prompts *ps, pthread_mutex_t *lock, const char *id,
		     unsigned timeout_s);

/** {blockId, op, path, requested, rule, sessionId, toolCallId, time}. */
cJSON *fsb_prompt_to_json(const struct fsb_prompt *p);

/** Forget every block (no call may be waiting any more). */
void fsb_prompts_free(struct fsb_prompts *ps);

#endif
