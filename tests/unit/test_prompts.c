/*
 * test_prompts.c — prompt blocks: recorded once per key, found, removed.
 */
#include "unit.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_key_gives_the_same_block),
		cmocka_unit_test(test_find_and_remove),
		cmocka_unit_test(test_full_list_drops_the_oldest),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
