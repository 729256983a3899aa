/*
 * test_prompts.c — prompt blocks: recorded once per key, found, removed;
 * a call waiting on one wakes with the host's answer, and one that waits in
 * vain is refused while its block stays pending.
 */
#include "unit.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "prompts.h"

static void test_same_key_gives_the_same_block(void **state)
{
	static struct fsb_prompts ps;
	const struct fsb_prompt *a, *b, *c;

	(void)state;
	a = fsb_prompts_record(&ps, FSB_OP_WRITE, "/h/notes", "/h/notes", true, 1, 42,
			       "ask.modify ~/**", "s1", "t1");
	b = fsb_prompts_record(&ps, FSB_OP_WRITE, "/h/notes", "/h/./notes", true, 1, 42,
			       "ask.modify ~/**", "s1", "t1");
	assert_non_null(a);
	assert_ptr_equal(a, b);
	/* Another inode at the same path is another question. */
	c = fsb_prompts_record(&ps, FSB_OP_WRITE, "/h/notes", "/h/notes", true, 1, 43,
			       "ask.modify ~/**", "s1", "t1");
	assert_ptr_not_equal(a, c);
	assert_string_not_equal(a->id, c->id);
	assert_int_equal(ps.n, 2);
	fsb_prompts_free(&ps);
}

static void test_find_and_remove(void **state)
{
	static struct fsb_prompts ps;
	const struct fsb_prompt *a;
	char id[24];
	cJSON *j;

	(void)state;
	a = fsb_prompts_record(&ps, FSB_OP_CREATE, "/h/new", NULL, false, 0, 0,
			       "ask.modify ~/**", "s1", "t2");
	strcpy(id, a->id);
	assert_ptr_equal(fsb_prompts_find(&ps, id), a);
	j = fsb_prompt_to_json(a);
	assert_string_equal(cJSON_GetObjectItem(j, "blockId")->valuestring, id);
	assert_string_equal(cJSON_GetObjectItem(j, "op")->valuestring, "create");
	assert_string_equal(cJSON_GetObjectItem(j, "toolCallId")->valuestring, "t2");
	cJSON_Delete(j);
	fsb_prompts_remove(&ps, id);
	assert_null(fsb_prompts_find(&ps, id));
	assert_int_equal(ps.n, 0);
	fsb_prompts_free(&ps);
}

static void test_full_list_drops_the_oldest(void **state)
{
	static struct fsb_prompts ps;
	char path[32], first[24];

	(void)state;
	for (int i = 0; i < FSB_PROMPTS_MAX + 1; i++) {
		snprintf(path, sizeof(path), "/h/f%d", i);
		const struct fsb_prompt *p = fsb_prompts_record(&ps, FSB_OP_WRITE, path, NULL, false,
								0, 0, "r", "s", "t");
		assert_non_null(p);
		if (i == 0)
			strcpy(first, p->id);
	}
	assert_int_equal(ps.n, FSB_PROMPTS_MAX);
	assert_null(fsb_prompts_find(&ps, first));
	fsb_prompts_free(&ps);
}

struct answerer {
	struct fsb_prompts *ps;
	pthread_mutex_t *lock;
	char id[24];
};

/* Takes the lock only once the waiter has let it go inside the wait. */
static void *answer_approve(void *arg)
{
	struct answerer *a = arg;

	pthread_mutex_lock(a->lock);
	fsb_prompts_answer(a->ps, a->id, true);
	pthread_mutex_unlock(a->lock);
	return NULL;
}

static void test_a_waiting_call_wakes_with_the_answer(void **state)
{
	static struct fsb_prompts ps;
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct answerer a = { &ps, &lock, "" };
	const struct fsb_prompt *p;
	pthread_t t;

	(void)state;
	assert_int_equal(fsb_prompts_init(&ps), 0);
	p = fsb_prompts_record(&ps, FSB_OP_WRITE, "/h/notes", NULL, true, 1, 42, "r", "s", "t");
	/* A core's ids carry its tag. */
	assert_true(strncmp(p->id, "blk-", 4) == 0 && strchr(p->id + 4, '-') != NULL);
	strcpy(a.id, p->id);
	pthread_mutex_lock(&lock);
	assert_int_equal(pthread_create(&t, NULL, answer_approve, &a), 0);
	assert_int_equal(fsb_prompts_wait(&ps, &lock, a.id, 60), 1);
	pthread_mutex_unlock(&lock);
	pthread_join(t, NULL);
	/* Answered and read: forgotten. */
	assert_int_equal(ps.n, 0);
	fsb_prompts_free(&ps);
}

static void test_no_answer_refuses_and_keeps_the_block(void **state)
{
	static struct fsb_prompts ps;
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	const struct fsb_prompt *p;
	char id[24];

	(void)state;
	assert_int_equal(fsb_prompts_init(&ps), 0);
	p = fsb_prompts_record(&ps, FSB_OP_WRITE, "/h/notes", NULL, true, 1, 42, "r", "s", "t");
	strcpy(id, p->id);
	pthread_mutex_lock(&lock);
	assert_int_equal(fsb_prompts_wait(&ps, &lock, id, 0), -ETIMEDOUT);
	pthread_mutex_unlock(&lock);
	/* Still pending: the host may answer it later. */
	assert_non_null(fsb_prompts_find(&ps, id));
	/* A deny of a block nobody waits on forgets it. */
	fsb_prompts_answer(&ps, id, false);
	assert_null(fsb_prompts_find(&ps, id));
	assert_int_equal(ps.n, 0);
	fsb_prompts_free(&ps);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_key_gives_the_same_block),
		cmocka_unit_test(test_find_and_remove),
		cmocka_unit_test(test_full_list_drops_the_oldest),
		cmocka_unit_test(test_a_waiting_call_wakes_with_the_answer),
		cmocka_unit_test(test_no_answer_refuses_and_keeps_the_block),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
