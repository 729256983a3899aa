/*
 * prompts.c — pending prompt blocks (see prompts.h), kept in arrival order
 * in a fixed array: there are few, and the host lists them in order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

const struct fsb_prompt *fsb_prompts_record(struct fsb_prompts *ps, enum fsb_op op,
					    const char *path, const char *requested,
					    bool exists, dev_t dev, ino_t ino,
					    const char *rule, const char *session,
					    const char *tool_call)
{
	struct fsb_prompt *p;

	for (size_t i = 0; i < ps->n; i++) {
		p = &ps->v[i];
		if (p->op == op && strcmp(p->path, path) == 0 && p->exists == exists &&
		    (!exists || (p->dev == dev && p->ino == ino)) &&
		    same(p->session, session) && same(p->tool_call, tool_call) &&
		    same(p->rule, rule))
			return p;
	}
	if (ps->n == FSB_PROMPTS_MAX)
		remove_at(ps, 0);
	p = &ps->v[ps->n];
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
		if (strcmp(ps->v[i].id, id) == 0)
			return &ps->v[i];
	return NULL;
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
}
