/*
 * prompts.c — pending prompt blocks (see prompts.h), kept in arrival order
 * in a fixed array: there are few, and the host lists them in order. A
 * block answered while calls wait on it stays (answered, found by no one
 * else) until the last of them has read the answer.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <unistd.h>

#include "prompts.h"
#include "proto_json.h"

static bool same(const char *a, const char *b)
{
	return strcmp(a != NULL ? a : "", b != NULL ? b : "") == 0;
}

static void clear(struct fsb_prompt *p)
{
	free(p->path);
	free(p->requested);
	free(p->rule);
	free(p->session);
	free(p->tool_call);
	memset(p, 0, sizeof(*p));
}

static void remove_at(struct fsb_prompts *ps, size_t i)
{
	clear(&ps->v[i]);
	memmove(&ps->v[i], &ps->v[i + 1], (ps->n - i - 1) * sizeof(ps->v[0]));
	ps->n--;
	memset(&ps->v[ps->n], 0, sizeof(ps->v[0]));
}

int fsb_prompts_init(struct fsb_prompts *ps)
{
	pthread_condattr_t attr;
	unsigned char r[3] = { 0 };
	int rc;

	/* getrandom(2) for 3 bytes never blocks once the pool is up; a
	 * failure falls back to the time and pid, unique enough for ids. */
	if (getrandom(r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
		unsigned long v = (unsigned long)time(NULL) ^ ((unsigned long)getpid() << 8);

		r[0] = (unsigned char)v;
		r[1] = (unsigned char)(v >> 8);
		r[2] = (unsigned char)(v >> 16);
	}
	snprintf(ps->tag, sizeof(ps->tag), "%02x%02x%02x", r[0], r[1], r[2]);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	rc = pthread_cond_init(&ps->answered, &attr);
	pthread_condattr_destroy(&attr);
	if (rc != 0)
		return -rc;
	ps->ready = true;
	return 0;
}

const struct fsb_prompt *fsb_prompts_record(struct fsb_prompts *ps, enum fsb_op op,
					    const char *path, const char *requested,
					    bool exists, dev_t dev, ino_t ino,
					    const char *rule, const char *session,
					    const char *tool_call)
{
	struct fsb_prompt *p;

	for (size_t i = 0; i < ps->n; i++) {
		p = &ps->v[i];
		if (p->answer == 0 && p->op == op && strcmp(p->path, path) == 0 && p->exists == exists &&
		    (!exists || (p->dev == dev && p->ino == ino)) &&
		    same(p->session, session) && same(p->tool_call, tool_call) &&
		    same(p->rule, rule))
			return p;
	}
	if (ps->n == FSB_PROMPTS_MAX)
		remove_at(ps, 0);
	p = &ps->v[ps->n];
	if (ps->tag[0] != '\0')
		snprintf(p->id, sizeof(p->id), "blk-%s-%lu", ps->tag, ++ps->next_id);
	else
		snprintf(p->id, sizeof(p->id), "blk-%lu", ++ps->next_id);
	p->op = op;
	p->path = strdup(path);
	p->requested = strdup(requested != NULL ? requested : path);
	p->rule = strdup(rule);
	p->session = strdup(session != NULL ? session : "");
	p->tool_call = strdup(tool_call != NULL ? tool_call : "");
	p->exists = exists;
	p->dev = dev;
	p->ino = ino;
	p->created = time(NULL);
	if (!p->path || !p->requested || !p->rule || !p->session || !p->tool_call) {
		clear(p);
		return NULL;
	}
	ps->n++;
	return p;
}

const struct fsb_prompt *fsb_prompts_find(const struct fsb_prompts *ps, const char *id)
{
	for (size_t i = 0; i < ps->n; i++)
		if (ps->v[i].answer == 0 && strcmp(ps->v[i].id, id) == 0)
			return &ps->v[i];
	return NULL;
}

static struct fsb_prompt *find_any(struct fsb_prompts *ps, const char *id, size_t *at)
{
	for (size_t i = 0; i < ps->n; i++) {
		if (strcmp(ps->v[i].id, id) == 0) {
			*at = i;
			return &ps->v[i];
		}
	}
	return NULL;
}

void fsb_prompts_answer(struct fsb_prompts *ps, const char *id, bool approved)
{
	struct fsb_prompt *p;
	size_t i;

	if ((p = find_any(ps, id, &i)) == NULL || p->answer != 0)
		return;
	if (p->waiters == 0) {
		remove_at(ps, i);
		return;
	}
	p->answer = approved ? 1 : -1;
	if (ps->ready)
		pthread_cond_broadcast(&ps->answered);
}

void fsb_prompts_answer_all(struct fsb_prompts *ps, bool approved)
{
	for (size_t i = 0; i < ps->n; i++)
		if (ps->v[i].waiters > 0 && ps->v[i].answer == 0)
			ps->v[i].answer = approved ? 1 : -1;
	if (ps->ready)
		pthread_cond_broadcast(&ps->answered);
}

int fsb_prompts_wait(struct fsb_prompts *ps, pthread_mutex_t *lock, const char *id,
		     unsigned timeout_s)
{
	struct fsb_prompt *p;
	struct timespec deadline;
	size_t i;
	int rc = 0, answer;

	if (!ps->ready || (p = find_any(ps, id, &i)) == NULL)
		return -ENOENT;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += timeout_s;
	p->waiters++;
	/* The table moves entries when one is removed: look the block up
	 * again after every wake-up. */
	while ((p = find_any(ps, id, &i)) != NULL && p->answer == 0 && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&ps->answered, lock, &deadline);
	if (p == NULL)
		return -ENOENT;
	answer = p->answer;
	p->waiters--;
	if (answer == 0) {
		/* Timed out: the call is refused, but the block stays pending,
		 * for the host to answer later or `fsbroker approve`. */
		return -ETIMEDOUT;
	}
	if (p->waiters == 0)
		remove_at(ps, i);
	return answer > 0 ? 1 : 0;
}

void fsb_prompts_remove(struct fsb_prompts *ps, const char *id)
{
	for (size_t i = 0; i < ps->n; i++) {
		if (strcmp(ps->v[i].id, id) == 0) {
			remove_at(ps, i);
			return;
		}
	}
}

cJSON *fsb_prompt_to_json(const struct fsb_prompt *p)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "blockId", p->id);
	cJSON_AddStringToObject(o, "op", fsb_op_name(p->op));
	fsb_json_add_path(o, "path", p->path, false);
	fsb_json_add_path(o, "requested", p->requested, false);
	cJSON_AddStringToObject(o, "rule", p->rule);
	cJSON_AddStringToObject(o, "sessionId", p->session);
	cJSON_AddStringToObject(o, "toolCallId", p->tool_call);
	cJSON_AddNumberToObject(o, "time", (double)p->created);
	return o;
}

void fsb_prompts_free(struct fsb_prompts *ps)
{
	while (ps->n > 0)
		remove_at(ps, ps->n - 1);
	if (ps->ready)
		pthread_cond_destroy(&ps->answered);
	ps->ready = false;
}
