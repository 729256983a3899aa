/*
 * fuzz_control.c — fuzz harness of the control channel (core/control.c):
 * any bytes as one control line, through the path on_control_line takes
 * (fsb_json_parse_object, then fsb_control_handle, then the reply printed)
 * against a real broker: the default pack, a workspace and a state dir in
 * a temporary directory (home and tmp there too, so that what a request
 * may back up stays inside it), no event loop, as `fsbroker check` builds
 * one but with its state dir, audit logs and backup stores. The broker
 * lives across inputs, as a core's does across control lines: Approve,
 * Reload, EnableModifyBackup, ModifyBackup and CommitModifyBackup change
 * what later lines meet. Every reply must carry an `id` and an `ok`.
 * The workspace's name is random: the harness writes it where an input says
 * "@ws", so that seeds can name files in it.
 */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "control.h"
#include "fuzz.h"
#include "proto_json.h"

#ifndef LUADIR
#define LUADIR "lua"
#endif

static char root[64], ws[128];
static struct fsb_broker broker;

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void teardown(void)
{
	fsb_broker_free(&broker);
	nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void make_dir(const char *fmt, const char *arg)
{
	char p[256];

	snprintf(p, sizeof(p), fmt, root, arg);
	if (mkdir(p, 0700) < 0) {
		perror(p);
		abort();
	}
}

static void make_file(const char *name, const char *text)
{
	char p[256];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", root, name);
	if ((f = fopen(p, "we")) == NULL || fputs(text, f) < 0 || fclose(f) != 0) {
		perror(p);
		abort();
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct fsb_broker_config cfg;
	char state[128], err[2048];

	(void)argc;
	(void)argv;
	if (getenv("FSBROKER_LUA_DIR") == NULL)
		setenv("FSBROKER_LUA_DIR", LUADIR, 1);
	snprintf(root, sizeof(root), "/tmp/fsb-fuzz-control-XXXXXX");
	if (mkdtemp(root) == NULL) {
		perror("fuzz_control: mkdtemp");
		abort();
	}
	make_dir("%s/%s", "ws");
	make_dir("%s/%s", "ws/sub");
	make_dir("%s/%s", "home");
	make_dir("%s/%s", "tmp");
	make_file("ws/a.txt", "a file in the workspace\n");
	make_file("ws/sub/b.txt", "another\n");
	make_file("ws/.env", "SECRET=1\n");
	make_file("home/notes", "home\n");
	snprintf(ws, sizeof(ws), "%s/ws", root);
	snprintf(state, sizeof(state), "%s/state", root);
	if (fsb_config_build(&cfg, NULL, ws, state, err, sizeof(err)) < 0) {
		fprintf(stderr, "fuzz_control: %s\n", err);
		abort();
	}
	snprintf(cfg.home, sizeof(cfg.home), "%s/home", root);
	snprintf(cfg.tmp, sizeof(cfg.tmp), "%s/tmp", root);
	if (fsb_broker_init(&broker, NULL, &cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "fuzz_control: %s\n", err);
		abort();
	}
	atexit(teardown);
	return 0;
}

/* The input with every "@ws" replaced by the workspace's name. */
static char *expand_ws(const uint8_t *data, size_t size, size_t *len)
{
	size_t wl = strlen(ws), n = 0;
	char *line = malloc(size * (wl > 3 ? wl : 3) / 3 + 1);

	if (line == NULL)
		return NULL;
	for (size_t i = 0; i < size; i++) {
		if (i + 3 <= size && memcmp(data + i, "@ws", 3) == 0) {
			memcpy(line + n, ws, wl);
			n += wl;
			i += 2;
		} else {
			line[n++] = (char)data[i];
		}
	}
	line[n] = '\0';
	*len = n;
	return line;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *why = NULL;
	bool shutdown = false;
	cJSON *req, *reply;
	size_t len;
	char *line = expand_ws(data, size, &len), *s;

	if (line == NULL)
		return 0;
	size = len;
	req = fsb_json_parse_object(line, size, &why);
	free(line);
	if (req == NULL) {
		if (why == NULL)
			abort();
		return 0;
	}
	reply = fsb_control_handle(&broker, "default", req, &shutdown);
	cJSON_Delete(req);
	if (reply == NULL || !cJSON_HasObjectItem(reply, "id") ||
	    !cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(reply, "ok")))
		abort();
	s = cJSON_PrintUnformatted(reply);
	free(s);
	cJSON_Delete(reply);
	return 0;
}
