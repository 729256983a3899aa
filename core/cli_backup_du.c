/*
 * cli_backup_du.c — `fsbroker backup du`: what each cycle of a session's
 * store holds (its own objects and those it shares with other cycles) and
 * what pruning it would free, from fsb_backup_du (core/store/backup_prune.c).
 * Kept apart from cli_backup.c, which only parses the verb and calls this.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "backup_prune.h"
#include "cli.h"
#include "proto_json.h"

/* `n` bytes for a person: B, KiB, MiB, GiB with one decimal. */
static const char *human(uint64_t n, char *buf, size_t len)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB" };
	double v = (double)n;
	int u = -1;

	if (n < 1024) {
		snprintf(buf, len, "%llu B", (unsigned long long)n);
		return buf;
	}
	while (v >= 1024 && u < 3) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%.1f %s", v, units[u]);
	return buf;
}

static void print_json(cJSON *o)
{
	fsb_cli_json_out(o);
	cJSON_Delete(o);
}

static cJSON *du_json(const struct fsb_du *d)
{
	cJSON *o = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(o, "cycles");
	cJSON *t = cJSON_AddObjectToObject(o, "total");

	for (size_t i = 0; i < d->n; i++) {
		const struct fsb_du_cycle *c = &d->v[i];
		cJSON *e = cJSON_CreateObject();

		cJSON_AddNumberToObject(e, "cycle", c->number);
		cJSON_AddStringToObject(e, "state", c->sealed ? "sealed" : "open");
		cJSON_AddNumberToObject(e, "files", (double)c->files);
		cJSON_AddNumberToObject(e, "own", (double)c->own);
		cJSON_AddNumberToObject(e, "ownObjects", (double)c->nown);
		cJSON_AddNumberToObject(e, "shared", (double)c->shared);
		cJSON_AddNumberToObject(e, "sharedObjects", (double)c->nshared);
		cJSON_AddNumberToObject(e, "frees", (double)c->frees);
		cJSON_AddItemToArray(arr, e);
	}
	cJSON_AddNumberToObject(t, "cycles", (double)d->n);
	cJSON_AddNumberToObject(t, "objects", (double)d->objects);
	cJSON_AddNumberToObject(t, "bytes", (double)d->bytes);
	cJSON_AddNumberToObject(t, "unreferenced", (double)d->unreferenced);
	cJSON_AddNumberToObject(t, "disk", (double)d->disk);
	return o;
}

int fsb_cli_backup_du(const char *store, const char *session, bool json)
{
	char a[32], b[32], c[32], e[32];
	struct fsb_du d;
	int rc = fsb_backup_du(store, &d);

	if (rc < 0) {
		const char *why = rc == -EBADMSG ? "a cycle's journal cannot be read, so what "
			"each cycle holds is not known" : strerror(-rc);

		/* With --json, the error object is made of this line. */
		fsb_cli_json_code("io");
		fprintf(stderr, "fsbroker backup du: %s: %s\n", store, why);
		return 1;
	}
	if (json) {
		print_json(du_json(&d));
		fsb_du_free(&d);
		return 0;
	}
	if (d.n == 0)
		printf("Session %s has no backup cycles.\n", session);
	else
		printf("%6s  %-6s  %10s  %10s  %10s\n", "cycle", "state", "own", "shared", "frees");
	for (size_t i = 0; i < d.n; i++) {
		const struct fsb_du_cycle *y = &d.v[i];

		printf("%6u  %-6s  %10s  %10s  %10s\n", y->number, y->sealed ? "sealed" : "open",
		       human(y->files + y->own, a, sizeof(a)), human(y->shared, b, sizeof(b)),
		       y->sealed ? human(y->frees, c, sizeof(c)) : "-");
	}
	printf("total: %zu cycle%s, %zu object%s, %s held, %s on disk, %s unreferenced\n", d.n,
	       d.n == 1 ? "" : "s", d.objects, d.objects == 1 ? "" : "s",
	       human(d.bytes, a, sizeof(a)), human(d.disk, b, sizeof(b)),
	       human(d.unreferenced, e, sizeof(e)));
	fsb_du_free(&d);
	return 0;
}
