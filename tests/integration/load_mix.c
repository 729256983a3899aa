/*
 * load_mix.c — the mixed load of load_mix.h: the pack, the clients, the
 * reloader, and the check of every answer.
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

#include "load_mix.h"

/*
 * Reads of secret* are denied by a glob; decide raises on every path with
 * "raise" in it and on every 7th call for a path with "maybe" in it; the
 * home is ask-to-modify, so a write there is an ask (a deny here).
 */
static const char pack_text[] =
	"-- the pack of the mixed load (tests/integration/load_mix.c)\n"
	"local calls = 0\n"
	"return {\n"
	"  name = \"loadmix\",\n"
	"  fsProfile = { read = { \"/**\" }, modify = { \"${workspace}/**\" } },\n"
	"  denyRead = { \"${workspace}/secret*\" },\n"
	"  ask = { modify = { \"~/**\" } },\n"
	"  decide = function(req, verdict)\n"
	"    if req.path:find(\"raise\", 1, true) then error(\"raised by the load pack\") end\n"
	"    if req.path:find(\"maybe\", 1, true) then\n"
	"      calls = calls + 1\n"
	"      if calls % 7 == 0 then error(\"raised now and then\") end\n"
	"    end\n"
	"    return verdict\n"
	"  end,\n"
	"}\n";

void fsbt_load_pack(struct fsbt_core *c)
{
	snprintf(c->rules, sizeof(c->rules), "%s/loadmix.lua", c->rules_dir);
	fsbt_write_file(c->rules, pack_text);
}

enum kind { READ_OK, READ_DENIED, READ_RAISES, READ_MAYBE, WRITE_GRANT, HOST_RENAME,
	    WRITE_ASKED, NKINDS };

struct mix {
	struct fsbt_load *l;
	struct fsbt_core *core;
	char read_ok[PATH_MAX + 256], read_denied[PATH_MAX + 256];
	char read_raises[PATH_MAX + 256], read_maybe[PATH_MAX + 256];
	char write_asked[PATH_MAX + 256];
	atomic_int done;
	pthread_mutex_t lock;	/* over l's results and problem */
};

struct client {
	struct mix *m;
	int index;
	pthread_t tid;
	char grant[PATH_MAX + 256];	/* its own file, granted for writing */
	char a[PATH_MAX + 64], b[PATH_MAX + 64];	/* renamed back and forth */
	unsigned long answered, wrong, failed, pack_errors;
	char problem[PATH_MAX + 512];
};

static void wrong(struct client *cl, int i, const char *what, const char *reply)
{
	cl->wrong++;
	if (cl->problem[0] == '\0')
		snprintf(cl->problem, sizeof(cl->problem), "client %d request %d (%s): got \"%s\"",
			 cl->index, i, what, reply);
}

/* A deny naming the pack's error. */
static bool errored_deny(const char *reply)
{
	return fsbt_starts(reply, "DENY EACCES ") && strstr(reply, "error") != NULL;
}

static void *client(void *arg)
{
	struct client *cl = arg;
	struct mix *m = cl->m;
	struct fsbt_core *c = m->core;
	char reply[4096];
	bool at_a = true;
	int fd = fsbt_connect(c);

	if (fd < 0) {
		cl->failed = (unsigned long)m->l->per_client;
		snprintf(cl->problem, sizeof(cl->problem), "connect: %s", strerror(-fd));
		return NULL;
	}
	for (int i = 0; i < m->l->per_client; i++) {
		enum kind k = (enum kind)((cl->index + i) % NKINDS);
		const char *line = k == READ_OK ? m->read_ok : k == READ_DENIED ? m->read_denied :
				   k == READ_RAISES ? m->read_raises : k == READ_MAYBE ? m->read_maybe :
				   k == WRITE_ASKED ? m->write_asked : k == WRITE_GRANT ? cl->grant : NULL;
		int got = -1;
		ssize_t n;

		if (k == HOST_RENAME) {
			cJSON *r = fsbt_hostopf(fd, "{\"id\":%d,\"command\":\"HostFileOperation\","
						"\"sessionId\":\"%s\",\"toolCallId\":\"load\","
						"\"operation\":\"rename\",\"from\":\"%s\",\"to\":\"%s\"}",
						i, c->session, at_a ? cl->a : cl->b,
						at_a ? cl->b : cl->a);

			if (r == NULL) {
				cl->failed += (unsigned long)(m->l->per_client - i);
				snprintf(cl->problem, sizeof(cl->problem),
					 "client %d request %d: no reply to a rename", cl->index, i);
				break;
			}
			cl->answered++;
			if (!fsbt_ok(r))
				wrong(cl, i, "host rename", fsbt_str(r, "error"));
			else
				at_a = !at_a;
			cJSON_Delete(r);
			continue;
		}
		n = fsbt_request(fd, line, reply, sizeof(reply), &got);
		if (n < 0) {
			/* A connection that lost a reply cannot be trusted after it. */
			cl->failed += (unsigned long)(m->l->per_client - i);
			if (cl->problem[0] == '\0')
				snprintf(cl->problem, sizeof(cl->problem),
					 "client %d request %d: no reply (%zd)", cl->index, i, n);
			break;
		}
		cl->answered++;
		switch (k) {
		case READ_OK:
			if (strcmp(reply, "SANDBOX") != 0 || got >= 0)
				wrong(cl, i, "allowed read", reply);
			break;
		case READ_DENIED:
			if (!fsbt_starts(reply, "DENY EACCES denyRead ") || got >= 0)
				wrong(cl, i, "denied read", reply);
			break;
		case READ_RAISES:
			if (!errored_deny(reply) || got >= 0)
				wrong(cl, i, "read whose decide raises", reply);
			else
				cl->pack_errors++;
			break;
		case READ_MAYBE:
			if (errored_deny(reply) && got < 0)
				cl->pack_errors++;
			else if (strcmp(reply, "SANDBOX") != 0 || got >= 0)
				wrong(cl, i, "read whose decide raises now and then", reply);
			break;
		case WRITE_GRANT:
			if (strcmp(reply, "FD") != 0 || got < 0)
				wrong(cl, i, "write grant", reply);
			else if (write(got, "x\n", 2) != 2)
				wrong(cl, i, "write through the grant", strerror(errno));
			break;
		case WRITE_ASKED:
			if (!fsbt_starts(reply, "DENY EACCES ask ") || got >= 0)
				wrong(cl, i, "write that needs an approval", reply);
			break;
		default:
			break;
		}
		if (got >= 0)
			close(got);
	}
	fsbt_close(fd);
	return NULL;
}

static void *reloader(void *arg)
{
	struct mix *m = arg;

	while (!atomic_load(&m->done)) {
		if (kill(m->core->pid, SIGHUP) == 0)
			m->l->hups++;
		fsbt_sleep_ms(m->l->reload_ms);
	}
	return NULL;
}

static void req(struct fsbt_core *c, char *out, size_t len, const char *cls, const char *dir,
		const char *name, const char *spec)
{
	char p[PATH_MAX + 64];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fsbt_write_file(p, "x\n");
	fsbt_text_req(out, len, cls, p, c->session, spec);
}

void fsbt_load_run(struct fsbt_core *c, struct fsbt_load *l)
{
	struct mix m = { .l = l, .core = c };
	struct client *cl = calloc((size_t)l->clients, sizeof(*cl));
	pthread_attr_t attr;
	pthread_t hup;
	uint64_t start;
	cJSON *stats;
	char dir[PATH_MAX + 16];

	l->answered = l->wrong = l->failed = l->pack_errors = l->hups = 0;
	l->problem[0] = '\0';
	if (cl == NULL) {
		snprintf(l->problem, sizeof(l->problem), "out of memory");
		l->failed = 1;
		return;
	}
	req(c, m.read_ok, sizeof(m.read_ok), FSBT_READ, c->ws, "ok.txt", NULL);
	req(c, m.read_denied, sizeof(m.read_denied), FSBT_READ, c->ws, "secret.txt", NULL);
	req(c, m.read_raises, sizeof(m.read_raises), FSBT_READ, c->ws, "raise.txt", NULL);
	req(c, m.read_maybe, sizeof(m.read_maybe), FSBT_READ, c->ws, "maybe.txt", NULL);
	req(c, m.write_asked, sizeof(m.write_asked), FSBT_WRITE, c->home, "notes.txt",
	    FSBT_OPEN_WRITE);
	snprintf(dir, sizeof(dir), "%s/load", c->ws);
	mkdir(dir, 0755);
	for (int i = 0; i < l->clients; i++) {
		char name[64];

		cl[i].m = &m;
		cl[i].index = i;
		snprintf(name, sizeof(name), "grant-%d.txt", i);
		req(c, cl[i].grant, sizeof(cl[i].grant), FSBT_WRITE, dir, name, FSBT_OPEN_WRITE);
		snprintf(cl[i].a, sizeof(cl[i].a), "%s/rename-%d-a.txt", dir, i);
		snprintf(cl[i].b, sizeof(cl[i].b), "%s/rename-%d-b.txt", dir, i);
		fsbt_write_file(cl[i].a, "renamed\n");
	}
	atomic_init(&m.done, 0);
	l->rss_before_kib = fsbt_core_rss_kib(c);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	start = fsbt_now_ms();
	if (l->reload_ms > 0)
		pthread_create(&hup, NULL, reloader, &m);
	for (int i = 0; i < l->clients; i++)
		pthread_create(&cl[i].tid, &attr, client, &cl[i]);
	for (int i = 0; i < l->clients; i++) {
		pthread_join(cl[i].tid, NULL);
		l->answered += cl[i].answered;
		l->wrong += cl[i].wrong;
		l->failed += cl[i].failed;
		l->pack_errors += cl[i].pack_errors;
		if (l->problem[0] == '\0' && cl[i].problem[0] != '\0')
			snprintf(l->problem, sizeof(l->problem), "%s", cl[i].problem);
	}
	atomic_store(&m.done, 1);
	if (l->reload_ms > 0)
		pthread_join(hup, NULL);
	l->seconds = (double)(fsbt_now_ms() - start) / 1000.0;
	pthread_attr_destroy(&attr);
	l->rss_after_kib = fsbt_core_rss_kib(c);
	stats = fsbt_control(c, "{\"id\":\"load-stats\",\"command\":\"Stats\"}");
	l->reloads = fsbt_num(stats, "reloads");
	cJSON_Delete(stats);
	free(cl);
}
