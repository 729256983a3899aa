/*
 * fuzz_journal.c — fuzz harness of the backup store reader
 * (core/store/backup_read.c): the input is written into a temporary store as
 * cycle 1's journal.jsonl and, after the first form feed (\f), its
 * cycle.json (no form feed: an open cycle, without cycle.json). The cycle
 * is loaded as `fsbroker backup` and restore load it, malformed lines
 * reported to /dev/null, then the records are picked for every path and for
 * the first record's tool call, and each path's end state looked up. A
 * loaded cycle must keep the reader's promises (strings never NULL, each
 * pick's records of its own path). Each line the decoder accepts, written
 * again by the encoder (core/store/journal.c), must read back to the same
 * line.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backup_read.h"
#include "fuzz.h"
#include "journal.h"
#include "proto_json.h"

static char state_dir[64];
static char store[128], cycle_dir[160], journal[192], cycle_json[192];
static FILE *report;

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void remove_state_dir(void)
{
	nftw(state_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = getenv("TMPDIR");
	char sessions[96], session[112], cycles[144];

	(void)argc;
	(void)argv;
	snprintf(state_dir, sizeof(state_dir), "%s/fsb-fuzz-journal-XXXXXX",
		 tmp != NULL && tmp[0] && strlen(tmp) < 32 ? tmp : "/tmp");
	if (mkdtemp(state_dir) == NULL) {
		perror("fuzz_journal: mkdtemp");
		abort();
	}
	atexit(remove_state_dir);
	snprintf(sessions, sizeof(sessions), "%s/sessions", state_dir);
	snprintf(session, sizeof(session), "%s/s1", sessions);
	if (fsb_backup_store_dir(state_dir, "s1", store, sizeof(store)) < 0)
		abort();
	snprintf(cycles, sizeof(cycles), "%s/cycles", store);
	snprintf(cycle_dir, sizeof(cycle_dir), "%s/1", cycles);
	if (mkdir(sessions, 0700) < 0 || mkdir(session, 0700) < 0 || mkdir(store, 0700) < 0 ||
	    mkdir(cycles, 0700) < 0 || mkdir(cycle_dir, 0700) < 0) {
		perror("fuzz_journal: mkdir");
		abort();
	}
	snprintf(journal, sizeof(journal), "%s/journal.jsonl", cycle_dir);
	snprintf(cycle_json, sizeof(cycle_json), "%s/cycle.json", cycle_dir);
	if ((report = fopen("/dev/null", "we")) == NULL)
		abort();
	return 0;
}

static void write_file(const char *path, const uint8_t *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0 || (len > 0 && write(fd, data, len) != (ssize_t)len) || close(fd) < 0) {
		perror("fuzz_journal: write");
		abort();
	}
}

static void check_picks(const struct fsb_cycle *c, const char *tool_call)
{
	struct fsb_picks p;

	if (fsb_cycle_pick(c, tool_call, &p) < 0)
		return;
	for (size_t i = 0; i < p.n; i++) {
		const struct fsb_pick *k = &p.v[i];

		if (k->rec == NULL || k->nall == 0)
			abort();
		for (size_t j = 0; j < k->nall; j++)
			if (strcmp(k->all[j]->resolved, k->rec->resolved) != 0)
				abort();
		if (tool_call != NULL && strcmp(k->rec->tool_call, tool_call) != 0)
			abort();
		if (k->end != fsb_cycle_end_state(c, k->rec->resolved))
			abort();
	}
	fsb_picks_free(&p);
}

/* A line read, written again by the one encoder and read back: the second
 * reading must give the same line, so nothing the decoder accepts is lost
 * or changed by a write. */
static void check_round_trip(const char *line, size_t len)
{
	struct fsb_journal_rec r1, r2;
	struct fsb_journal_why why;
	char *l1, *l2;
	cJSON *o;

	if (fsb_journal_decode(line, len, &r1, &why) < 0)
		return;
	o = fsb_journal_encode(&r1);
	l1 = o != NULL ? fsb_json_print(o, false) : NULL;
	cJSON_Delete(o);
	fsb_journal_rec_free(&r1);
	if (l1 == NULL)
		return;
	if (fsb_journal_decode(l1, strlen(l1), &r2, &why) < 0) {
		fprintf(stderr, "fuzz_journal: a line the encoder wrote is refused (%s): %s\n",
			why.text, l1);
		abort();
	}
	o = fsb_journal_encode(&r2);
	l2 = o != NULL ? fsb_json_print(o, false) : NULL;
	cJSON_Delete(o);
	fsb_journal_rec_free(&r2);
	if (l2 != NULL && strcmp(l1, l2) != 0) {
		fprintf(stderr, "fuzz_journal: written again, a line changed:\n%s\n%s\n", l1, l2);
		abort();
	}
	free(l1);
	free(l2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *ff = memchr(data, '\f', size);
	size_t jlen = ff != NULL ? (size_t)(ff - data) : size;
	struct fsb_cycle c;
	char err[512];

	for (size_t at = 0; at < jlen;) {
		const uint8_t *nl = memchr(data + at, '\n', jlen - at);
		size_t end = nl != NULL ? (size_t)(nl - data) : jlen;

		check_round_trip((const char *)data + at, end - at);
		at = end + 1;
	}
	write_file(journal, data, jlen);
	if (ff != NULL)
		write_file(cycle_json, ff + 1, size - jlen - 1);
	else if (unlink(cycle_json) < 0 && errno != ENOENT)
		abort();
	if (fsb_cycle_load(store, 1, &c, report, err, sizeof(err)) < 0)
		return 0;
	if (c.message == NULL || c.opened == NULL || c.sealed == NULL)
		abort();
	for (size_t i = 0; i < c.nrecs; i++) {
		const struct fsb_journal_rec *r = &c.recs[i];

		if (r->time == NULL || r->tool_call == NULL || r->trace == NULL || r->op == NULL ||
		    r->path == NULL || r->resolved == NULL)
			abort();
	}
	for (size_t i = 0; i < c.nends; i++)
		if (fsb_cycle_end_state(&c, c.ends[i].path) == NULL)
			abort();
	check_picks(&c, NULL);
	if (c.nrecs > 0)
		check_picks(&c, c.recs[0].tool_call);
	(void)fsb_cycle_state_name(c.state);
	fsb_cycle_free(&c);
	return 0;
}
