/*
 * prompt_events.c — the host side of inline approvals for `fsbroker serve`
 * (see prompt_events.h). The broker calls on_prompt on a thread of the pool
 * with its lock held: it only queues the event and wakes the loop, which
 * writes it to the control channel.
 */
#include <string.h>

#include "prompt_events.h"
#include "prompts.h"

/* On a thread of the pool, the broker's lock held: queue the event. */
static void on_prompt(struct fsb_broker *b, const struct fsb_prompt *p, void *arg)
{
	struct fsb_prompt_events *pe = arg;
	cJSON *ev = fsb_prompt_to_json(p);

	cJSON_AddStringToObject(ev, "event", "prompt");
	cJSON_AddNumberToObject(ev, "timeoutSeconds", b->approval_timeout_s);
	pthread_mutex_lock(&pe->lock);
	cJSON_AddItemToArray(pe->queue, ev);
	pthread_mutex_unlock(&pe->lock);
	uv_async_send(&pe->async);
}

/* On the loop: the queued events out to the host. */
static void on_async(uv_async_t *h)
{
	struct fsb_prompt_events *pe = h->data;
	cJSON *ev;

	pthread_mutex_lock(&pe->lock);
	while ((ev = cJSON_DetachItemFromArray(pe->queue, 0)) != NULL) {
		pthread_mutex_unlock(&pe->lock);
		if (pe->ctl != NULL)
			fsb_control_event(pe->ctl, ev);
		else
			cJSON_Delete(ev);
		pthread_mutex_lock(&pe->lock);
	}
	pthread_mutex_unlock(&pe->lock);
}

static void on_closed(uv_handle_t *h)
{
	struct fsb_prompt_events *pe = h->data;

	/* No thread queues any more: on_prompt is unset under the broker's lock. */
	cJSON_Delete(pe->queue);
	pe->queue = NULL;
	pthread_mutex_destroy(&pe->lock);
}

int fsb_prompt_events_start(struct fsb_prompt_events *pe, uv_loop_t *loop,
			    struct fsb_broker *b, struct fsb_control *ctl, unsigned timeout_s)
{
	int rc;

	memset(pe, 0, sizeof(*pe));
	pe->queue = cJSON_CreateArray();
	if (pe->queue == NULL)
		return UV_ENOMEM;
	rc = uv_async_init(loop, &pe->async, on_async);
	if (rc < 0) {
		cJSON_Delete(pe->queue);
		return rc;
	}
	pthread_mutex_init(&pe->lock, NULL);
	pe->async.data = pe;
	pe->broker = b;
	pe->ctl = ctl;
	pe->up = true;
	fsb_broker_lock(b);
	b->approval_timeout_s = timeout_s;
	b->on_prompt_arg = pe;
	b->on_prompt = on_prompt;
	fsb_broker_unlock(b);
	return 0;
}

void fsb_prompt_events_stop(struct fsb_prompt_events *pe)
{
	if (!pe->up)
		return;
	pe->up = false;
	fsb_broker_lock(pe->broker);
	pe->broker->on_prompt = NULL;
	pe->broker->on_prompt_arg = NULL;
	fsb_prompts_answer_all(pe->broker->prompts, false);
	fsb_broker_unlock(pe->broker);
	pe->ctl = NULL;
	uv_close((uv_handle_t *)&pe->async, on_closed);
}
