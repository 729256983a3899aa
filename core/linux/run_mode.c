/*
 * run_mode.c — choose the sandbox `fsbroker run` builds from what the kernel
 * offers. The full mode needs all three features; a missing one refuses the
 * run with a sentence naming it and the flag that accepts a weaker mode.
 * No mode lets a write happen unbrokered: every weaker mode keeps the seccomp
 * supervisor, which performs each change itself, and only one exists per
 * missing feature:
 *
 *   no Landlock      --without-landlock: the filter and the mount plan stay;
 *                    lost is the backstop for a call the filter would miss.
 *   no user          --without-namespaces: no bubblewrap, so no mount plan
 *   namespaces       and no pid namespace; every open (reads too) goes
 *                    through the supervisor, so denyRead still holds.
 *   no seccomp       no weaker mode: without the supervisor nothing would
 *   notification     broker an unmodified program's writes.
 */
#include <stdio.h>
#include <string.h>

#include "landlock.h"
#include "run_mode.h"
#include "seccomp_filter.h"
#include "userns.h"

static const struct {
	enum fsb_feature feature;
	const char *name;
	const char *flag;	/* the flag that accepts running without it, or NULL */
} features[3] = {
	{ FSB_FEATURE_USERNS, "userns", "--without-namespaces" },
	{ FSB_FEATURE_LANDLOCK, "landlock", "--without-landlock" },
	{ FSB_FEATURE_SECCOMP_NOTIFY, "seccomp-notify", NULL },
};

const char *fsb_feature_name(enum fsb_feature f)
{
	for (int i = 0; i < 3; i++)
		if (features[i].feature == f)
			return features[i].name;
	return "?";
}

int fsb_feature_parse(const char *list, unsigned *mask)
{
	const char *p = list;

	*mask = 0;
	while (*p) {
		size_t len = strcspn(p, ",");
		int i;

		for (i = 0; i < 3; i++)
			if (strlen(features[i].name) == len &&
			    strncmp(p, features[i].name, len) == 0)
				break;
		if (i == 3)
			return -1;
		*mask |= features[i].feature;
		p += len;
		if (*p == ',')
			p++;
	}
	return 0;
}

static void probe(struct fsb_run_mode *m, unsigned simulate_missing)
{
	for (int i = 0; i < 3; i++) {
		enum fsb_feature f = features[i].feature;
		char *why = m->why[i];
		int rc;

		if (simulate_missing & f) {
			snprintf(why, sizeof(m->why[i]), "missing by --simulate-missing=%s",
				 features[i].name);
			m->missing |= f;
			continue;
		}
		if (f == FSB_FEATURE_USERNS)
			rc = fsb_userns_probe(why, sizeof(m->why[i]));
		else if (f == FSB_FEATURE_LANDLOCK)
			rc = m->landlock_abi = fsb_landlock_probe(why, sizeof(m->why[i]));
		else
			rc = fsb_seccomp_probe(why, sizeof(m->why[i]));
		if (rc < 0)
			m->missing |= f;
		else
			why[0] = '\0';
	}
}

int fsb_run_mode_choose(struct fsb_run_mode *m, unsigned simulate_missing, unsigned accepted,
			bool pack_reads_broker, char *err, size_t err_size)
{
	memset(m, 0, sizeof(*m));
	probe(m, simulate_missing);
	for (int i = 0; i < 3; i++) {
		if (!(m->missing & features[i].feature))
			continue;
		if (features[i].flag && (accepted & features[i].feature))
			continue;
		if (features[i].flag)
			snprintf(err, err_size, "cannot sandbox: %s; %s accepts a weaker mode "
				 "(docs/runtime-degraded.md says what it gives up)",
				 m->why[i], features[i].flag);
		else
			snprintf(err, err_size, "cannot sandbox: %s; no weaker mode brokers an "
				 "unmodified program's writes without it", m->why[i]);
		return -1;
	}
	m->namespaces = !(m->missing & FSB_FEATURE_USERNS);
	m->landlock = !(m->missing & FSB_FEATURE_LANDLOCK);
	/* Without the mount plan nothing masks a denyRead path: the supervisor must. */
	m->reads_broker = pack_reads_broker || !m->namespaces;
	return 0;
}

void fsb_run_mode_explain(const struct fsb_run_mode *m, char *out, size_t out_size)
{
	char ns[384], ll[384];
	const char *reads;

	if (m->namespaces)
		snprintf(ns, sizeof(ns), "yes (bubblewrap: mount plan, pid namespace)");
	else
		snprintf(ns, sizeof(ns), "no, accepted by --without-namespaces (%s)", m->why[0]);
	if (m->landlock)
		snprintf(ll, sizeof(ll), "ABI %d", m->landlock_abi);
	else
		snprintf(ll, sizeof(ll), "no, accepted by --without-landlock (%s)", m->why[1]);
	if (!m->reads_broker)
		reads = "mask (denyRead paths masked at launch)";
	else if (m->namespaces)
		reads = "broker (the pack says so)";
	else
		reads = "broker (no mount plan masks denyRead paths)";
	snprintf(out, out_size,
		 "mode: %s\nnamespaces: %s\nlandlock: %s\nseccomp user notification: yes\n"
		 "reads: %s\n",
		 m->missing ? "degraded" : "full", ns, ll, reads);
}
