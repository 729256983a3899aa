/*
 * prompts.h — prompt blocks: the requests a pack answered `ask` for, waiting
 * for the agent host to approve or deny them over the control channel
 * (DESIGN §3.4, §7.5). A block is bound to an exact key: op, real path and,
 * for an existing file, dev/ino.
 */
#ifndef FSB_PROMPTS_H
#define FSB_PROMPTS_H

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
};

struct fsb_prompts {
	struct fsb_prompt v[FSB_PROMPTS_MAX];
	size_t n;
	unsigned long next_id;
};

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

/** The pending block with this id, or NULL. */
const struct fsb_prompt *fsb_prompts_find(const struct fsb_prompts *ps, const char *id);

/** Forget a block (approved or denied). */
void fsb_prompts_remove(struct fsb_prompts *ps, const char *id);

/** {blockId, op, path, requested, rule, sessionId, toolCallId, time}. */
cJSON *fsb_prompt_to_json(const struct fsb_prompt *p);

void fsb_prompts_free(struct fsb_prompts *ps);

#endif
