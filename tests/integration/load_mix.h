/*
 * load_mix.h — a mixed load on a real core, shared by test_serve_load (a
 * reduced run that asserts every answer) and bench/load (the full run
 * with its table): N clients, each on its own connection, cycling through
 * allowed and denied reads, reads the pack's decide raises on (always, or
 * now and then), write grants of existing files (each one backed up first)
 * and host renames, while a thread sends SIGHUP every few ms so the pack
 * is reloaded under the load. Every answer is compared with the one
 * expected; an errored decide must come back as a deny that names it.
 */
#ifndef FSBT_LOAD_MIX_H
#define FSBT_LOAD_MIX_H

#include "harness.h"

struct fsbt_load {
	int clients;
	int per_client;
	unsigned reload_ms;	/* 0: no reloads */
	/* results */
	unsigned long answered, wrong, failed;
	unsigned long pack_errors;	/* answers that were an errored decide */
	unsigned long hups;		/* SIGHUPs sent */
	double reloads;			/* reloads the core counted */
	long rss_before_kib, rss_after_kib;
	double seconds;
	char problem[PATH_MAX + 512];	/* the first wrong or missing answer */
};

/** Write the load's pack (with its raising decide) as c->rules: before start. */
void fsbt_load_pack(struct fsbt_core *c);

/** Run the load on a started core; fills the results. Never fails a test. */
void fsbt_load_run(struct fsbt_core *c, struct fsbt_load *l);

#endif
