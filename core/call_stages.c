/*
 * call_stages.c — timing a supervised call stage by stage (see
 * call_stages.h).
 */
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "call_stages.h"
#include "log.h"

/* Beyond this many calls of one kind the medians are settled: later calls
 * are counted, not kept. */
#define MAX_SAMPLES 200000

static const char *const stage_names[FSB_STAGE_COUNT] = {
	"receive", "readTarget", "resolve", "decide", "backup", "perform", "audit", "answer",
};

static const char *const call_names[FSB_CALL_COUNT] = {
	"write-open", "create", "read-open", "rename", "delete", "mkdir", "metadata", "other",
};

struct sample {
	uint32_t ns[FSB_STAGE_COUNT];
	uint32_t total;
};

struct samples {
	struct sample *v;
	size_t n, cap;
	unsigned long seen;
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const char *out_path;	/* NULL: off */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct samples kinds[FSB_CALL_COUNT];

/* The call this thread is timing. */
static __thread struct {
	bool active;
	enum fsb_stage_call kind;
	enum fsb_stage current;
	uint64_t last, start, answered;
	struct sample s;
} call;
static __thread uint64_t receiving_since;

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t (*now_ns)(void) = monotonic_ns;

void fsb_stages_set_clock(uint64_t (*clock)(void))
{
	now_ns = clock != NULL ? clock : monotonic_ns;
}

static void read_env(void)
{
	const char *v = getenv("FSBROKER_STAGE_TIMES");

	out_path = v != NULL && v[0] != '\0' ? v : NULL;
}

bool fsb_stages_enabled(void)
{
	pthread_once(&once, read_env);
	return out_path != NULL;
}

void fsb_stages_receiving(void)
{
	if (fsb_stages_enabled())
		receiving_since = now_ns();
}

void fsb_stages_begin(enum fsb_stage_call kind)
{
	if (!fsb_stages_enabled())
		return;
	memset(&call, 0, sizeof(call));
	call.active = true;
	call.kind = kind;
	call.start = receiving_since;
	call.last = receiving_since;
	call.current = FSB_STAGE_RECEIVE;
	fsb_stage_push(FSB_STAGE_READ_TARGET);
}

void fsb_stages_kind(enum fsb_stage_call kind)
{
	if (call.active)
		call.kind = kind;
}

enum fsb_stage fsb_stage_push(enum fsb_stage stage)
{
	enum fsb_stage was = call.current;
	uint64_t t;

	if (!call.active)
		return was;
	t = now_ns();
	call.s.ns[was] += (uint32_t)(t - call.last);
	call.last = t;
	call.current = stage;
	if (stage == FSB_STAGE_ANSWER && call.answered == 0)
		call.answered = t;
	return was;
}

void fsb_stages_end(void)
{
	struct samples *k;

	if (!call.active)
		return;
	fsb_stage_push(call.current);
	call.active = false;
	/* Up to the answer: once it is sent the target runs, and what the
	 * answering thread waits for after that (the CPU the target took)
	 * delays nobody. */
	call.s.total = (uint32_t)((call.answered ? call.answered : call.last) - call.start);
	pthread_mutex_lock(&lock);
	k = &kinds[call.kind];
	k->seen++;
	if (k->n == k->cap && k->cap < MAX_SAMPLES) {
		size_t cap = k->cap ? k->cap * 2 : 1024;
		struct sample *v = realloc(k->v, cap * sizeof(*v));

		if (v != NULL) {
			k->v = v;
			k->cap = cap;
		}
	}
	if (k->n < k->cap)
		k->v[k->n++] = call.s;
	pthread_mutex_unlock(&lock);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The median of field `off` (a uint32_t in struct sample) over `k`. */
static uint32_t median(const struct samples *k, uint32_t *scratch, size_t off)
{
	for (size_t i = 0; i < k->n; i++)
		memcpy(&scratch[i], (const char *)&k->v[i] + off, sizeof(uint32_t));
	qsort(scratch, k->n, sizeof(*scratch), cmp_u32);
	return scratch[k->n / 2];
}

static void write_kind(FILE *f, enum fsb_stage_call c, const struct samples *k)
{
	uint32_t *scratch = malloc(k->n * sizeof(*scratch));

	if (scratch == NULL)
		return;
	fprintf(f, "{\"call\":\"%s\",\"n\":%lu,\"totalMedianNs\":%u,\"medianNs\":{", call_names[c],
		k->seen, median(k, scratch, offsetof(struct sample, total)));
	for (int s = 0; s < FSB_STAGE_COUNT; s++)
		fprintf(f, "%s\"%s\":%u", s ? "," : "", stage_names[s],
			median(k, scratch, offsetof(struct sample, ns) + (size_t)s * sizeof(uint32_t)));
	fprintf(f, "}}\n");
	free(scratch);
}

void fsb_stages_flush(void)
{
	FILE *f = NULL;
	bool any = false;
	int fd = -1;

	if (!fsb_stages_enabled())
		return;
	pthread_mutex_lock(&lock);
	for (int c = 0; c < FSB_CALL_COUNT; c++)
		any = any || kinds[c].n > 0;
	if (!any) {
		pthread_mutex_unlock(&lock);
		return;
	}
	fd = open(out_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	f = fd >= 0 ? fdopen(fd, "a") : NULL;
	if (f == NULL) {
		fsb_log(FSB_LOG_WARN, "FSBROKER_STAGE_TIMES: cannot write %s", out_path);
		if (fd >= 0)
			close(fd);
	}
	for (int c = 0; c < FSB_CALL_COUNT; c++) {
		if (f != NULL && kinds[c].n > 0)
			write_kind(f, (enum fsb_stage_call)c, &kinds[c]);
		free(kinds[c].v);
		memset(&kinds[c], 0, sizeof(kinds[c]));
	}
	if (f != NULL)
		fclose(f);
	pthread_mutex_unlock(&lock);
}
