/*
 * test_keep_awake.c — the threads that keep the CPUs awake (keep_awake.c)
 * spin during a burst of calls and only then: a lone call starts nothing,
 * a burst's call finds a keeper running, a while after the last answer
 * every keeper sleeps, and the last release leaves none behind.
 */
#include "unit.h"

#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "keep_awake.h"

/* This process's threads of the idle class: how many, and how many of
 * them are running or runnable now. */
static void count_keepers(int *all, int *running)
{
	struct dirent *de;
	DIR *d = opendir("/proc/self/task");

	*all = *running = 0;
	assert_non_null(d);
	while ((de = readdir(d)) != NULL) {
		char path[64], stat[512], *end;
		pid_t tid = (pid_t)atoi(de->d_name);
		FILE *f;

		if (tid <= 0 || sched_getscheduler(tid) != SCHED_IDLE)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
		if ((f = fopen(path, "re")) == NULL)
			continue;
		if (fgets(stat, sizeof(stat), f) != NULL && (end = strrchr(stat, ')')) != NULL) {
			(*all)++;
			*running += end[2] == 'R';
		}
		fclose(f);
	}
	closedir(d);
}

static void sleep_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* Poll for up to a second until a keeper is seen running in five samples
 * in a row, 2 ms apart (one woken only to go back to sleep is not), or,
 * with want_none, until none runs. */
static bool keepers_become(bool want_none)
{
	int all, running, in_a_row = 0;

	for (int i = 0; i < 500; i++) {
		count_keepers(&all, &running);
		if (want_none && running == 0)
			return true;
		in_a_row = running > 0 ? in_a_row + 1 : 0;
		if (!want_none && in_a_row == 5)
			return true;
		sleep_ms(2);
	}
	return false;
}

static void a_burst_spins_and_a_lone_call_does_not(void **state)
{
	int all, running;
	bool burst;

	(void)state;
	unsetenv("FSBROKER_KEEP_AWAKE");
	fsb_keep_awake_hold();
	/* Each keeper takes the idle class as it starts. */
	for (int i = 0; i < 500; i++) {
		count_keepers(&all, &running);
		if (all >= 1)
			break;
		sleep_ms(2);
	}
	assert_true(all >= 1);
	assert_true(keepers_become(true));

	/* The first call after a long quiet is alone. */
	sleep_ms(5);
	assert_false(fsb_keep_awake_call_begins());
	fsb_keep_awake_call_answered(false);
	/* One right after its answer is a burst's: while it is served a
	 * keeper spins. */
	burst = fsb_keep_awake_call_begins();
	assert_true(burst);
	assert_true(keepers_become(false));
	fsb_keep_awake_call_answered(burst);
	/* Quiet again: they sleep. */
	assert_true(keepers_become(true));

	fsb_keep_awake_release();
	count_keepers(&all, &running);
	assert_int_equal(all, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_burst_spins_and_a_lone_call_does_not),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
