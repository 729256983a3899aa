/*
 * decide.c — decisions per second inside one process: the core's whole
 * decision path (lexical form, resolution, protected paths, the Lua pack)
 * with no socket and no audit line, for the default pack and a pack with
 * 200 more deny globs; reads and writes with the read-decision cache
 * empty, then a repeated read answered from it. Printed, never judged.
 *
 *   decide PACK200 [SECONDS-PER-CASE]
 */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "broker.h"
#include "config.h"
#include "verdict_cache.h"

static char root[PATH_MAX], ws[PATH_MAX], target[PATH_MAX + 32];

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void mkdir_or_die(const char *path)
{
	if (mkdir(path, 0700) < 0 && errno != EEXIST) {
		fprintf(stderr, "decide: cannot create %s: %s\n", path, strerror(errno));
		exit(1);
	}
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

/* Decide `op` on the target for `seconds`; decisions per second. */
static double measure(struct fsb_broker *b, enum fsb_op op, double seconds)
{
	uint64_t start = now_ns(), budget = (uint64_t)(seconds * 1e9), n = 0, t;

	do {
		for (int i = 0; i < 1000; i++) {
			struct fsb_access a;

			memset(&a, 0, sizeof(a));
			a.op = op;
			a.requested = target;
			a.strategy = FSB_RESOLVE_EXISTING_OR_CREATABLE;
			a.session = "bench";
			a.tool_call = "tc-1";
			a.pid = getpid();
			a.uid = getuid();
			fsb_broker_decide(b, &a);
			if (a.verdict.decision != FSB_ALLOW) {
				fprintf(stderr, "decide: %s of %s was not allowed: %s\n",
					fsb_op_name(op), target, a.verdict.rule);
				exit(1);
			}
		}
		n += 1000;
		t = now_ns() - start;
	} while (t < budget);
	return (double)n / ((double)t / 1e9);
}

static void run_case(const char *label, const char *rules, double seconds)
{
	char err[2048], state[PATH_MAX + 16];
	struct fsb_broker_config cfg;
	struct fsb_broker b;
	double reads, writes, cached;

	snprintf(state, sizeof(state), "%s/state", root);
	if (fsb_config_build(&cfg, rules, ws, state, err, sizeof(err)) < 0) {
		fprintf(stderr, "decide: %s\n", err);
		exit(1);
	}
	/* As `fsbroker check` does: nothing created, nothing audited. */
	cfg.one_shot = true;
	if (fsb_broker_init(&b, NULL, &cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "decide: %s\n", err);
		exit(1);
	}
	/* The pack's own decision: the read-decision cache holds nothing. */
	fsb_verdict_cache_free(&b.verdict_cache);
	if (fsb_verdict_cache_init(&b.verdict_cache, 0, 0) < 0)
		exit(1);
	measure(&b, FSB_OP_READ, seconds / 10);	/* warm up */
	reads = measure(&b, FSB_OP_READ, seconds);
	writes = measure(&b, FSB_OP_WRITE, seconds);
	/* The same read again and again: answered from the cache. */
	fsb_verdict_cache_free(&b.verdict_cache);
	if (fsb_verdict_cache_init(&b.verdict_cache, FSB_VERDICT_CACHE_ENTRIES, FSB_VERDICT_CACHE_BYTES) < 0)
		exit(1);
	cached = measure(&b, FSB_OP_READ, seconds);
	printf("%-30s %12.0f %12.0f %10.2f %14.0f\n", label, reads, writes, 1e6 / reads, cached);
	fsb_broker_free(&b);
}

int main(int argc, char **argv)
{
	double seconds = argc > 2 ? atof(argv[2]) : 0.5;
	char p[PATH_MAX + 32];
	FILE *f;

	if (argc < 2) {
		fprintf(stderr, "usage: decide PACK200 [SECONDS-PER-CASE]\n");
		return 2;
	}
	if (seconds <= 0)
		seconds = 0.5;
	snprintf(root, sizeof(root), "/tmp/fsb-bench.XXXXXX");
	if (mkdtemp(root) == NULL) {
		perror("decide: mkdtemp");
		return 1;
	}
	snprintf(p, sizeof(p), "%s/home", root);
	mkdir_or_die(p);
	setenv("HOME", p, 1);
	snprintf(p, sizeof(p), "%s/tmp", root);
	mkdir_or_die(p);
	setenv("TMPDIR", p, 1);
	snprintf(ws, sizeof(ws), "%s/ws", root);
	mkdir_or_die(ws);
	snprintf(p, sizeof(p), "%s/src", ws);
	mkdir_or_die(p);
	snprintf(target, sizeof(target), "%s/src/main.c", ws);
	if ((f = fopen(target, "we")) == NULL) {
		perror("decide: target");
		return 1;
	}
	fputs("int main(void) { return 0; }\n", f);
	fclose(f);

	printf("In-process decisions (fsb_broker_decide, no socket, no audit), %.1f s per case:\n\n",
	       seconds);
	/* "µs" is two bytes: the header is spelled out. */
	printf("%-30s      reads/s     writes/s    µs/read  cached reads/s\n", "");
	run_case("default pack", NULL, seconds);
	run_case("200-rule pack", argv[1], seconds);

	nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
	return 0;
}
