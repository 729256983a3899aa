/*
 * bench/load.c — the mixed load of tests/integration/load_mix.c in full, on
 * a real `fsbroker serve`: CLIENTS clients x REQUESTS mixed requests (reads
 * allowed, denied and errored in decide, write grants with their backups,
 * host renames) with a pack reload every 100 ms and a pack whose decide
 * raises. Prints one table row; exits 1 when an answer was wrong or
 * missing, or the core died.
 *
 *   load [CLIENTS [REQUESTS]]      (default 64 x 100000; FSBROKER names the
 *                                   binary, else build/fsbroker)
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "harness.h"
#include "load_mix.h"

int main(int argc, char **argv)
{
	struct fsbt_load l = { .clients = 64, .per_client = 100000, .reload_ms = 100 };
	struct fsbt_core *c;
	bool alive;

	if (argc > 1)
		l.clients = atoi(argv[1]);
	if (argc > 2)
		l.per_client = atoi(argv[2]);
	if (l.clients <= 0 || l.per_client <= 0) {
		fprintf(stderr, "usage: load [CLIENTS [REQUESTS]]\n");
		return 2;
	}
	c = fsbt_core_new();
	fsbt_load_pack(c);
	if (fsbt_core_spawn(c, NULL) < 0 || fsbt_core_wait_ready(c) < 0) {
		char *log = fsbt_core_log(c);

		fprintf(stderr, "load: the core did not start:\n%s\n", log);
		free(log);
		fsbt_core_stop(c);
		return 1;
	}
	fsbt_load_run(c, &l);
	alive = fsbt_core_wait_exit(c, 0) != 0;
	printf("| clients | requests | reloads | pack errors seen | wrong answers | "
	       "RSS before KiB | RSS after KiB | requests/s |\n");
	printf("|---|---|---|---|---|---|---|---|\n");
	printf("| %d | %lu | %.0f | %lu | %lu | %ld | %ld | %.0f |\n", l.clients,
	       (unsigned long)l.clients * (unsigned long)l.per_client, l.reloads, l.pack_errors,
	       l.wrong + l.failed, l.rss_before_kib, l.rss_after_kib,
	       l.seconds > 0 ? (double)l.answered / l.seconds : 0.0);
	if (l.wrong || l.failed)
		fprintf(stderr, "load: %lu wrong, %lu missing; first: %s\n", l.wrong, l.failed,
			l.problem);
	if (!alive)
		fprintf(stderr, "load: the core died (status 0x%x)\n", (unsigned)c->exit_status);
	fsbt_core_stop(c);
	return l.wrong || l.failed || !alive ? 1 : 0;
}
