/*
 * test_serve_load.c — many clients at once: 200 threads, one connection
 * each, 1000 requests each, allowed and denied paths mixed, every reply
 * compared with the exact line expected; then the same while the pack is
 * reloaded by SIGHUP every 50 ms. No reply may be missing or wrong, and no
 * reload may fail. Last, the mixed load of load_mix.c (bench/load runs it
 * in full): 64 clients x 500 requests of reads allowed, denied and errored
 * in decide, write grants with their backups and host renames, with a
 * reload every 100 ms.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "load_mix.h"

#define CLIENTS 200
#define PER_CLIENT 1000
#define HUP_EVERY_MS 50

struct kind {
	char line[PATH_MAX + 128];
	const char *want;
};

struct load {
	struct fsbt_core *core;
	struct kind kinds[8];
	int nkinds;
	atomic_int done;
};

struct worker {
	struct load *load;
	int index;
	pthread_t tid;
	unsigned long answered, wrong, failed;
	char problem[PATH_MAX + 256];
};

/* Allowed reads (SANDBOX) and denied ones (each with its exact DENY line). */
static void make_kinds(struct load *l)
{
	struct fsbt_core *c = l->core;
	static const struct {
		const char *dir_field;	/* "ws" or "home" */
		const char *name;
		const char *want;
	} table[] = {
		{ "ws", "src/a.c", "SANDBOX" },
		{ "home", ".ssh/id_ed25519", "DENY EACCES denyRead ~/.ssh/**" },
		{ "ws", "src/b.c", "SANDBOX" },
		{ "ws", ".env", "DENY EACCES denyRead **/.env" },
		{ "ws", "README", "SANDBOX" },
		{ "home", ".aws/credentials", "DENY EACCES denyRead ~/.aws/**" },
		{ "ws", "src/deep/c.h", "SANDBOX" },
	};
	char p[PATH_MAX + 64];

	snprintf(p, sizeof(p), "%s/src", c->ws);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/src/deep", c->ws);
	mkdir(p, 0755);
	l->nkinds = (int)(sizeof(table) / sizeof(table[0]));
	for (int i = 0; i < l->nkinds; i++) {
		const char *dir = strcmp(table[i].dir_field, "ws") == 0 ? c->ws : c->home;

		snprintf(p, sizeof(p), "%s/%s", dir, table[i].name);
		if (strcmp(table[i].want, "SANDBOX") == 0 || strstr(p, ".env") != NULL)
			fsbt_write_file(p, "x\n");
		fsbt_text_req(l->kinds[i].line, sizeof(l->kinds[i].line), FSBT_READ, p, c->session,
			      NULL);
		l->kinds[i].want = table[i].want;
	}
}

static void *client(void *arg)
{
	struct worker *w = arg;
	struct load *l = w->load;
	char reply[4096];
	int fd = fsbt_connect(l->core);

	if (fd < 0) {
		w->failed = PER_CLIENT;
		snprintf(w->problem, sizeof(w->problem), "connect: %s", strerror(-fd));
		return NULL;
	}
	for (int i = 0; i < PER_CLIENT; i++) {
		const struct kind *k = &l->kinds[(w->index + i) % l->nkinds];
		int got;
		ssize_t n = fsbt_request(fd, k->line, reply, sizeof(reply), &got);

		if (got >= 0)
			close(got);
		if (n < 0) {
			/* A connection that lost a reply cannot be trusted after it. */
			w->failed += (unsigned long)(PER_CLIENT - i);
			if (w->problem[0] == '\0')
				snprintf(w->problem, sizeof(w->problem), "request %d: no reply (%zd)", i,
					 n);
			break;
		}
		w->answered++;
		if (strcmp(reply, k->want) != 0 || got >= 0) {
			w->wrong++;
			if (w->problem[0] == '\0')
				snprintf(w->problem, sizeof(w->problem),
					 "request %d (%s): expected \"%s\", got \"%s\"%s", i, k->line,
					 k->want, reply, got >= 0 ? " with an fd" : "");
		}
	}
	fsbt_close(fd);
	return NULL;
}

static void *hupper(void *arg)
{
	struct load *l = arg;
	unsigned long sent = 0;

	while (!atomic_load(&l->done)) {
		if (kill(l->core->pid, SIGHUP) == 0)
			sent++;
		fsbt_sleep_ms(HUP_EVERY_MS);
	}
	return (void *)sent;
}

/* Run the load; returns the number of SIGHUPs sent (0 without). */
static unsigned long run_load(struct fsbt_core *c, bool with_reloads)
{
	struct load l = { .core = c };
	struct worker *w = calloc(CLIENTS, sizeof(*w));
	unsigned long answered = 0, wrong = 0, failed = 0;
	uint64_t start;
	pthread_attr_t attr;
	pthread_t hup;
	void *sent = NULL;
	const char *problem = NULL;

	assert_non_null(w);
	make_kinds(&l);
	atomic_init(&l.done, 0);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	start = fsbt_now_ms();
	if (with_reloads)
		assert_int_equal(pthread_create(&hup, NULL, hupper, &l), 0);
	for (int i = 0; i < CLIENTS; i++) {
		w[i].load = &l;
		w[i].index = i;
		assert_int_equal(pthread_create(&w[i].tid, &attr, client, &w[i]), 0);
	}
	for (int i = 0; i < CLIENTS; i++) {
		pthread_join(w[i].tid, NULL);
		answered += w[i].answered;
		wrong += w[i].wrong;
		failed += w[i].failed;
		if (problem == NULL && w[i].problem[0] != '\0')
			problem = w[i].problem;
	}
	atomic_store(&l.done, 1);
	if (with_reloads)
		pthread_join(hup, &sent);
	pthread_attr_destroy(&attr);
	printf("# %d clients x %d requests%s: %lu answered in %.1f s, %lu wrong, %lu failed\n",
	       CLIENTS, PER_CLIENT, with_reloads ? " with SIGHUP reloads" : "", answered,
	       (double)(fsbt_now_ms() - start) / 1000.0, wrong, failed);
	if (wrong != 0 || failed != 0)
		fail_msg("%lu wrong and %lu failed answers; first: %s", wrong, failed,
			 problem != NULL ? problem : "?");
	assert_int_equal(answered, (unsigned long)CLIENTS * PER_CLIENT);
	free(w);
	return (unsigned long)(uintptr_t)sent;
}

static void many_clients_get_exact_answers(void **state)
{
	struct fsbt_core *c = *state;
	cJSON *stats;

	run_load(c, false);
	stats = fsbt_control_cmd(c, "Stats", NULL);
	assert_int_equal((long)fsbt_num(stats, "requests"), (long)CLIENTS * PER_CLIENT);
	assert_int_equal((long)fsbt_num(stats, "errors"), 0);
	assert_int_equal((long)fsbt_num(stats, "connections"), CLIENTS);
	cJSON_Delete(stats);
}

static void many_clients_get_exact_answers_during_reloads(void **state)
{
	struct fsbt_core *c = *state;
	unsigned long hups = run_load(c, true);
	cJSON *stats;

	stats = fsbt_control_cmd(c, "Stats", NULL);
	printf("# %lu SIGHUPs sent, %.0f reloads done\n", hups, fsbt_num(stats, "reloads"));
	assert_true(hups > 0);
	assert_true(fsbt_num(stats, "reloads") > 0);
	assert_int_equal((long)fsbt_num(stats, "reloadFailures"), 0);
	assert_int_equal((long)fsbt_num(stats, "requests"), (long)CLIENTS * PER_CLIENT);
	cJSON_Delete(stats);
}

/*
 * Mixed requests under reloads with a pack whose decide raises: an errored
 * decide is always a deny naming the error, never a grant; every other
 * answer is the exact one expected, and the core is alive at the end.
 */
static void mixed_load_with_a_raising_pack_is_answered_right(void **state)
{
	struct fsbt_core *c = *state;
	struct fsbt_load l = { .clients = 64, .per_client = 500, .reload_ms = 100 };
	cJSON *stats;

	fsbt_load_pack(c);
	fsbt_core_start(c);
	fsbt_load_run(c, &l);
	printf("# %d clients x %d mixed requests: %lu answered in %.1f s, %lu wrong, %lu "
	       "failed, %lu errored decides (denied), %lu SIGHUPs, %.0f reloads; RSS %ld KiB "
	       "before, %ld KiB after\n", l.clients, l.per_client, l.answered, l.seconds,
	       l.wrong, l.failed, l.pack_errors, l.hups, l.reloads, l.rss_before_kib,
	       l.rss_after_kib);
	if (l.wrong != 0 || l.failed != 0)
		fail_msg("%lu wrong and %lu failed answers; first: %s", l.wrong, l.failed,
			 l.problem);
	assert_int_equal(l.answered, (unsigned long)l.clients * (unsigned long)l.per_client);
	/* Both kinds of raising decide were seen, and the pack was reloaded. */
	assert_true(l.pack_errors > (unsigned long)l.clients * (unsigned long)l.per_client / 7);
	assert_true(l.reloads > 0);
	stats = fsbt_control_cmd(c, "Stats", NULL);
	assert_int_equal((long)fsbt_num(stats, "reloadFailures"), 0);
	cJSON_Delete(stats);
	assert_int_equal(fsbt_core_wait_exit(c, 0), -ETIMEDOUT);
}

static int setup_layout(void **state)
{
	*state = fsbt_core_new();
	return 0;
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fsbt_setup_core, fsbt_teardown_core)
	const struct CMUnitTest tests[] = {
		T(many_clients_get_exact_answers),
		T(many_clients_get_exact_answers_during_reloads),
		cmocka_unit_test_setup_teardown(mixed_load_with_a_raising_pack_is_answered_right,
						setup_layout, fsbt_teardown_core),
	};

	return fsbt_run_group(tests, NULL, NULL);
}
