/*
 * fuzz_gitconfig.c — fuzz harness of the git config reader
 * (core/git_config.c): any bytes as a config file that a sandboxed command
 * wrote. A parsed file must keep the reader's promises (names in lower
 * case, each entry's bytes inside the file, in order), every entry gets a
 * verdict, and the file without its risky entries — what the git guard
 * writes back — must parse again and hold no risky entry.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "git_config.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

static void check_names(const struct fsb_git_cfg *c, size_t len)
{
	size_t last = 0;

	for (size_t i = 0; i < c->n; i++) {
		const struct fsb_git_cfg_entry *e = &c->v[i];

		if (e->section[0] == '\0' || !isalpha((unsigned char)e->key[0]) ||
		    e->start < last || e->start >= e->end || e->end > len)
			abort();
		for (const char *p = e->section; *p; p++)
			if (isupper((unsigned char)*p))
				abort();
		for (const char *p = e->key; *p; p++)
			if (isupper((unsigned char)*p))
				abort();
		last = e->end;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct fsb_git_cfg c, again;
	char err[256];
	bool *drop;
	char *kept;
	size_t kn;

	if (fsb_git_config_parse(text, size, &c, err, sizeof(err)) < 0)
		return 0;
	check_names(&c, size);
	if ((drop = calloc(c.n + 1, sizeof(*drop))) == NULL) {
		fsb_git_config_free(&c);
		return 0;
	}
	for (size_t i = 0; i < c.n; i++)
		drop[i] = fsb_git_config_risk(&c.v[i], "/ws/repo/.git") != NULL;
	kept = fsb_git_config_drop(text, size, &c, drop, &kn);
	if (kept != NULL) {
		if (fsb_git_config_parse(kept, kn, &again, err, sizeof(err)) < 0)
			abort();
		for (size_t i = 0; i < again.n; i++)
			if (fsb_git_config_risk(&again.v[i], "/ws/repo/.git") != NULL)
				abort();
		fsb_git_config_free(&again);
	}
	free(kept);
	free(drop);
	fsb_git_config_free(&c);
	return 0;
}
