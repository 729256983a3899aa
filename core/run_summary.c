/*
 * run_summary.c — what one `fsbroker run` did, for the person who ran it
 * (lines on stderr) or for a program (one JSON object on --summary-fd):
 * the paths its tool call changed and the objects saved for them, from the
 * session's backup store; each refusal and each call waiting for approval,
 * with the rule that decided it, from the session's audit log.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backup_read.h"
#include "proto_json.h"
#include "run.h"

/* Refusals and blocks named, each kind: enough to act on, never a flood. */
#define SHOWN 50

bool fsb_shell_append(char *buf, size_t len, const char *arg)
{
	size_t n = strlen(buf);
	bool plain = arg[0] != '\0';
	char *p;

	for (const char *c = arg; *c && plain; c++)
		plain = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			       "0123456789-_./=:,+@%", *c) != NULL;
	if (n > 0 && n + 1 < len)
		buf[n++] = ' ';
	if (plain) {
		if (n + strlen(arg) >= len)
			return false;
		memcpy(buf + n, arg, strlen(arg) + 1);
		return true;
	}
	/* 'it'\''s': every ' closes the quote, adds an escaped one, reopens. */
	p = buf + n;
	if (n + 2 >= len)
		return false;
	*p++ = '\'';
	for (const char *c = arg; *c; c++) {
		size_t need = *c == '\'' ? 4 : 1;

		if ((size_t)(p - buf) + need + 2 >= len)
			return false;
		if (*c == '\'') {
			memcpy(p, "'\\''", 4);
			p += 4;
		} else {
			*p++ = *c;
		}
	}
	*p++ = '\'';
	*p = '\0';
	return true;
}

static char *dup_or_empty(const char *s)
{
	return strdup(s != NULL ? s : "");
}

/* The paths the tool call changed in `cycle`, and the objects saved. */
static void collect_cycle(struct fsb_run_summary *s, unsigned cycle)
{
	char store[PATH_MAX], err[256];
	struct fsb_cycle cyc;
	struct fsb_picks picks;
	const char **objects = NULL;
	size_t nobjects = 0;

	if (cycle == 0 || fsb_backup_store_dir(s->state_dir, s->session, store, sizeof(store)) < 0)
		return;
	memset(&cyc, 0, sizeof(cyc));
	if (fsb_cycle_load(store, cycle, &cyc, NULL, err, sizeof(err)) < 0)
		return;
	memset(&picks, 0, sizeof(picks));
	if (fsb_cycle_pick(&cyc, s->tool_call, &picks) < 0)
		goto out;
	s->changed = calloc(picks.n + 1, sizeof(*s->changed));
	objects = calloc(cyc.nrecs + 1, sizeof(*objects));
	if (s->changed == NULL || objects == NULL)
		goto out;
	/* A directory whose entries changed is named by those entries. */
	for (size_t i = 0; i < picks.n; i++)
		if (strcmp(picks.v[i].rec->op, "entries") != 0 &&
		    (s->changed[s->nchanged] = strdup(picks.v[i].rec->resolved)) != NULL)
			s->nchanged++;
	/* Every object this tool call's records name, once. */
	for (size_t i = 0; i < cyc.nrecs; i++) {
		const struct fsb_journal_rec *r = &cyc.recs[i];
		bool seen = false;

		if (strcmp(r->tool_call, s->tool_call) != 0 || r->prior.object[0] == '\0')
			continue;
		for (size_t j = 0; j < nobjects && !seen; j++)
			seen = strcmp(objects[j], r->prior.object) == 0;
		if (!seen)
			objects[nobjects++] = r->prior.object;
	}
	s->backed_up = nobjects;
	s->cycle = cycle;
out:
	free(objects);
	fsb_picks_free(&picks);
	fsb_cycle_free(&cyc);
}

enum line_kind { LINE_OTHER, LINE_DENIED, LINE_WAITING, LINE_UNSAVED };

static void add_refusal(struct fsb_run_summary *s, enum line_kind kind, const char *op,
			const char *path, const char *rule, const char *block)
{
	struct fsb_run_refusal **list = kind == LINE_WAITING ? &s->waiting
					: kind == LINE_UNSAVED ? &s->unsaved : &s->denied;
	size_t *n = kind == LINE_WAITING ? &s->nwaiting
		    : kind == LINE_UNSAVED ? &s->nunsaved : &s->ndenied;
	struct fsb_run_refusal *r;
	char cmd[PATH_MAX * 2];

	if (*n == 0 && (*list = calloc(SHOWN, sizeof(**list))) == NULL)
		return;
	if (*n == SHOWN)
		return;
	r = &(*list)[(*n)++];
	r->op = dup_or_empty(op);
	r->path = dup_or_empty(path);
	r->rule = dup_or_empty(rule);
	if (kind == LINE_WAITING) {
		r->block_id = dup_or_empty(block);
		cmd[0] = '\0';
		fsb_shell_append(cmd, sizeof(cmd), "fsbroker");
		fsb_shell_append(cmd, sizeof(cmd), "approve");
		fsb_shell_append(cmd, sizeof(cmd), "--session");
		fsb_shell_append(cmd, sizeof(cmd), s->session);
		fsb_shell_append(cmd, sizeof(cmd), "--state-dir");
		fsb_shell_append(cmd, sizeof(cmd), s->state_dir);
		fsb_shell_append(cmd, sizeof(cmd), r->block_id);
		r->approve = strdup(cmd);
	}
}

/* The blocks of the tool call its host denied (inline approvals): the
 * calls that waited on them were refused, not left waiting. */
static size_t host_denials(FILE *f, const char *tool_call, char (*ids)[32], size_t max)
{
	size_t cap = 0, n = 0;
	char *line = NULL;

	while (getline(&line, &cap, f) > 0) {
		cJSON *o;
		const char *tc, *phase, *blk;

		if (strstr(line, "\"approval-denied\"") == NULL)
			continue;
		o = cJSON_Parse(line);
		tc = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "toolCallId"));
		phase = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "phase"));
		blk = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "blockId"));
		if (tc != NULL && strcmp(tc, tool_call) == 0 && phase != NULL &&
		    strcmp(phase, "approval-denied") == 0 && blk != NULL && n < max)
			snprintf(ids[n++], sizeof(ids[0]), "%s", blk);
		cJSON_Delete(o);
	}
	free(line);
	return n;
}

static const char *field(const cJSON *o, const char *name)
{
	return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, name));
}

/* A path field of an audit line: `name`, or `<name>Bytes` percent-decoded
 * into buf (a name that is not UTF-8); NULL when neither is there. */
static const char *path_field(const cJSON *o, const char *name, char *buf, size_t len)
{
	const char *v = field(o, name);
	char bname[64], *dec;

	if (v != NULL)
		return v;
	snprintf(bname, sizeof(bname), "%sBytes", name);
	if ((v = field(o, bname)) == NULL || (dec = fsb_percent_decode(v)) == NULL)
		return NULL;
	snprintf(buf, len, "%s", dec);
	free(dec);
	return buf;
}

/* A line of the git guard (phase "git-guard", no tool call: it undid at
 * the seal) into s->undone as "<path>: <reason>"; true when it was one. */
static bool add_undone(struct fsb_run_summary *s, cJSON *o)
{
	const char *phase = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "phase"));
	const char *why = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "reason"));
	char **grown, line[PATH_MAX + 600], buf[PATH_MAX];
	const char *p;

	if (phase == NULL || strcmp(phase, "git-guard") != 0)
		return false;
	p = path_field(o, "path", buf, sizeof(buf));
	snprintf(line, sizeof(line), "%s: %s", p ? p : "?", why ? why : "?");
	if (s->nundone < SHOWN &&
	    (grown = realloc(s->undone, (s->nundone + 1) * sizeof(*grown))) != NULL &&
	    ((s->undone = grown)[s->nundone] = strdup(line)) != NULL)
		s->nundone++;
	cJSON_Delete(o);
	return true;
}

/*
 * What an audit line of the tool call says to its user, and the rule to
 * name: the pack refused the call or holds it for approval ("decision"),
 * or the pack allowed it but its backup did not go through ("backupErrno":
 * over the size limit, waiting on a block or refused; the store failed),
 * or it went through without a copy ("backupSkipped": "too-large").
 */
static enum line_kind classify(const cJSON *o, const char **rule, char *buf, size_t len)
{
	const char *dec = field(o, "decision"), *berr = field(o, "backupErrno");
	const char *skipped = field(o, "backupSkipped");

	*rule = field(o, "rule");
	if (dec != NULL && strcmp(dec, "deny") == 0)
		return LINE_DENIED;
	if (dec != NULL && strcmp(dec, "ask") == 0)
		return field(o, "blockId") != NULL ? LINE_WAITING : LINE_DENIED;
	if (berr != NULL) {
		if (strcmp(berr, "EACCES") == 0 && field(o, "blockId") != NULL) {
			*rule = "backup.onTooLarge ask: over the backup size limit";
			return LINE_WAITING;
		}
		snprintf(buf, len, strcmp(berr, "EFBIG") == 0
			 ? "backup.onTooLarge deny: over the backup size limit"
			 : "its backup failed: %s", berr);
		*rule = buf;
		return LINE_DENIED;
	}
	if (skipped != NULL && strcmp(skipped, "too-large") == 0) {
		*rule = "over the backup size limit";
		return LINE_UNSAVED;
	}
	return LINE_OTHER;
}

static bool listed(const struct fsb_run_refusal *v, size_t n, const char *op, const char *path)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].op, op) == 0 && strcmp(v[i].path, path) == 0)
			return true;
	return false;
}

/*
 * The audit lines of the tool call written since `from` that refuse a call,
 * hold it for approval, or let it change a file without a backup. A host
 * operation writes two lines for one refusal, and a command may retry:
 * each op and path is named once.
 */
static void collect_refusals(struct fsb_run_summary *s, off_t from)
{
	char path[PATH_MAX + 64], denied_ids[SHOWN][32], rule_buf[600], why[128];
	char target_buf[PATH_MAX];
	size_t cap = 0, ndenied_ids;
	char *line = NULL;
	FILE *f;

	snprintf(path, sizeof(path), "%s/audit/%s.jsonl", s->state_dir, s->session);
	if ((f = fopen(path, "re")) == NULL)
		return;
	if (fseeko(f, from, SEEK_SET) < 0) {
		fclose(f);
		return;
	}
	ndenied_ids = host_denials(f, s->tool_call, denied_ids, SHOWN);
	if (fseeko(f, from, SEEK_SET) < 0) {
		fclose(f);
		return;
	}
	while (getline(&line, &cap, f) > 0) {
		cJSON *o = cJSON_Parse(line);
		const char *tc = field(o, "toolCallId"), *op, *target, *rule, *blk;
		enum line_kind kind;

		if (add_undone(s, o))
			continue;
		if (tc == NULL || strcmp(tc, s->tool_call) != 0 ||
		    (kind = classify(o, &rule, why, sizeof(why))) == LINE_OTHER) {
			cJSON_Delete(o);
			continue;
		}
		op = field(o, "op");
		blk = field(o, "blockId");
		/* The real path; a host operation refused for an entry beneath
		 * it names that entry. */
		target = path_field(o, "deniedPath", target_buf, sizeof(target_buf));
		if (target == NULL || target[0] == '\0')
			target = path_field(o, "normalisedPath", target_buf, sizeof(target_buf));
		if (target == NULL || target[0] == '\0')
			target = path_field(o, "path", target_buf, sizeof(target_buf));
		op = op != NULL ? op : "";
		target = target != NULL ? target : "";
		/* One the host denied was refused, not left waiting. */
		for (size_t i = 0; kind == LINE_WAITING && i < ndenied_ids; i++) {
			if (strcmp(denied_ids[i], blk) == 0) {
				kind = LINE_DENIED;
				snprintf(rule_buf, sizeof(rule_buf), "%s, denied by the host",
					 rule ? rule : "?");
				rule = rule_buf;
			}
		}
		if (!listed(s->denied, s->ndenied, op, target) &&
		    !listed(s->waiting, s->nwaiting, op, target) &&
		    !listed(s->unsaved, s->nunsaved, op, target))
			add_refusal(s, kind, op, target, rule, blk);
		cJSON_Delete(o);
	}
	free(line);
	fclose(f);
}

void fsb_run_summary_collect(struct fsb_run_summary *s, unsigned cycle, off_t audit_from)
{
	char cmd[PATH_MAX * 2], num[32];

	collect_cycle(s, cycle);
	collect_refusals(s, audit_from);
	if (s->nchanged == 0)
		return;
	/* Embedded, the run sealed its own cycle: restoring it undoes the run.
	 * Attached, the cycle is the host's turn: only this tool call's paths. */
	snprintf(num, sizeof(num), "%u", s->cycle);
	cmd[0] = '\0';
	fsb_shell_append(cmd, sizeof(cmd), "fsbroker");
	fsb_shell_append(cmd, sizeof(cmd), "backup");
	fsb_shell_append(cmd, sizeof(cmd), "restore");
	fsb_shell_append(cmd, sizeof(cmd), num);
	if (s->attached) {
		fsb_shell_append(cmd, sizeof(cmd), "--tool-call");
		fsb_shell_append(cmd, sizeof(cmd), s->tool_call);
	}
	fsb_shell_append(cmd, sizeof(cmd), "--state-dir");
	fsb_shell_append(cmd, sizeof(cmd), s->state_dir);
	fsb_shell_append(cmd, sizeof(cmd), "--session");
	fsb_shell_append(cmd, sizeof(cmd), s->session);
	s->restore = strdup(cmd);
}

void fsb_run_summary_print(const struct fsb_run_summary *s, const char *who, FILE *f)
{
	for (size_t i = 0; i < s->ndenied; i++)
		fprintf(f, "%s: refused: %s of %s (%s)\n", who, s->denied[i].op, s->denied[i].path,
			s->denied[i].rule);
	for (size_t i = 0; i < s->nwaiting; i++)
		fprintf(f, "%s: waiting for approval: %s of %s (%s), block %s\n", who,
			s->waiting[i].op, s->waiting[i].path, s->waiting[i].rule,
			s->waiting[i].block_id);
	for (size_t i = 0; i < s->nunsaved; i++)
		fprintf(f, "%s: changed without a backup: %s of %s (%s)\n", who,
			s->unsaved[i].op, s->unsaved[i].path, s->unsaved[i].rule);
	if (s->nchanged > 0)
		fprintf(f, "%s: cycle %u %s: %zu path%s changed, %zu object%s backed up; "
			"%zu refused by the pack, %zu waiting for approval\n", who, s->cycle,
			s->attached ? "(open: the host commits it)" : "sealed", s->nchanged,
			s->nchanged == 1 ? "" : "s", s->backed_up, s->backed_up == 1 ? "" : "s",
			s->ndenied, s->nwaiting);
	else
		fprintf(f, "%s: no file changed; %zu refused by the pack, %zu waiting for "
			"approval\n", who, s->ndenied, s->nwaiting);
	if (s->network != NULL)
		fprintf(f, "%s: network: %s\n", who, strcmp(s->network, "none") == 0 ?
			"none (a namespace with only a loopback)" : "host (the host's network)");
	for (size_t i = 0; i < s->nundone; i++)
		fprintf(f, "%s: undone: %s\n", who, s->undone[i]);
	/* Attached, the cycle stays open until the host commits the turn, and
	 * restore takes an open cycle only with --force (docs/restore.md). */
	if (s->restore != NULL)
		fprintf(f, "%s: to undo: %s%s\n", who, s->restore,
			s->attached ? " (once the host commits the turn; before it, add --force)"
				    : "");
	for (size_t i = 0; i < s->nwaiting; i++)
		fprintf(f, "%s: to approve: %s\n", who, s->waiting[i].approve);
	if (s->nwaiting > 0 && s->rerun != NULL)
		fprintf(f, "%s: then rerun: %s\n", who, s->rerun);
}

static cJSON *refusals_json(const struct fsb_run_refusal *v, size_t n)
{
	cJSON *list = cJSON_CreateArray();

	for (size_t i = 0; i < n; i++) {
		cJSON *o = cJSON_CreateObject();

		if (v[i].block_id != NULL)
			cJSON_AddStringToObject(o, "blockId", v[i].block_id);
		fsb_json_add_path(o, "path", v[i].path, false);
		cJSON_AddStringToObject(o, "op", v[i].op);
		cJSON_AddStringToObject(o, "rule", v[i].rule);
		if (v[i].approve != NULL)
			cJSON_AddStringToObject(o, "approveCommand", v[i].approve);
		cJSON_AddItemToArray(list, o);
	}
	return list;
}

cJSON *fsb_run_diagnostics_json(char *const *lines, size_t n)
{
	cJSON *list = cJSON_CreateArray();

	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(list, cJSON_CreateString(lines[i]));
	return list;
}

cJSON *fsb_run_summary_json(const struct fsb_run_summary *s)
{
	cJSON *o = cJSON_CreateObject(), *changed = cJSON_CreateArray(), *undone = cJSON_CreateArray();
	cJSON *warnings = cJSON_CreateArray();

	cJSON_AddNumberToObject(o, "exitStatus", s->exit_status);
	if (s->signal > 0)
		cJSON_AddNumberToObject(o, "signal", s->signal);
	else
		cJSON_AddNullToObject(o, "signal");
	cJSON_AddStringToObject(o, "mode", s->attached ? "attached" : "embedded");
	if (s->network != NULL)
		cJSON_AddStringToObject(o, "network", s->network);
	cJSON_AddStringToObject(o, "session", s->session);
	cJSON_AddStringToObject(o, "toolCall", s->tool_call);
	cJSON_AddStringToObject(o, "stateDir", s->state_dir);
	cJSON_AddNumberToObject(o, "cycle", s->cycle);
	cJSON_AddBoolToObject(o, "cycleSealed", s->cycle > 0 && !s->attached);
	for (size_t i = 0; i < s->nchanged; i++)
		cJSON_AddItemToArray(changed, cJSON_CreateString(s->changed[i]));
	cJSON_AddItemToObject(o, "changed", changed);
	for (size_t i = 0; i < s->nundone; i++)
		cJSON_AddItemToArray(undone, cJSON_CreateString(s->undone[i]));
	cJSON_AddItemToObject(o, "undone", undone);
	for (size_t i = 0; i < s->nmask_warnings; i++)
		cJSON_AddItemToArray(warnings, cJSON_CreateString(s->mask_warnings[i]));
	cJSON_AddItemToObject(o, "maskWarnings", warnings);
	cJSON_AddItemToObject(o, "diagnostics", fsb_run_diagnostics_json(s->diagnostics,
									  s->ndiagnostics));
	cJSON_AddNumberToObject(o, "backedUp", (double)s->backed_up);
	cJSON_AddItemToObject(o, "denied", refusals_json(s->denied, s->ndenied));
	cJSON_AddItemToObject(o, "waiting", refusals_json(s->waiting, s->nwaiting));
	cJSON_AddItemToObject(o, "unsaved", refusals_json(s->unsaved, s->nunsaved));
	if (s->restore != NULL)
		cJSON_AddStringToObject(o, "restoreCommand", s->restore);
	else
		cJSON_AddNullToObject(o, "restoreCommand");
	if (s->rerun != NULL)
		cJSON_AddStringToObject(o, "rerunCommand", s->rerun);
	else
		cJSON_AddNullToObject(o, "rerunCommand");
	return o;
}

int fsb_run_write_json(int fd, const cJSON *obj)
{
	char *text = fsb_json_print(obj, false);
	size_t len, off = 0;
	int rc = 0;

	if (text == NULL)
		return -ENOMEM;
	len = strlen(text);
	text[len++] = '\n';	/* over the NUL: the buffer ends there */
	while (off < len) {
		ssize_t n = write(fd, text + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n < 0 ? -errno : -EIO;
			break;
		}
		off += (size_t)n;
	}
	free(text);
	return rc;
}

static void free_refusals(struct fsb_run_refusal *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].op);
		free(v[i].path);
		free(v[i].rule);
		free(v[i].block_id);
		free(v[i].approve);
	}
	free(v);
}

void fsb_run_summary_free(struct fsb_run_summary *s)
{
	for (size_t i = 0; i < s->nchanged; i++)
		free(s->changed[i]);
	free(s->changed);
	for (size_t i = 0; i < s->nundone; i++)
		free(s->undone[i]);
	free(s->undone);
	for (size_t i = 0; i < s->ndiagnostics; i++)
		free(s->diagnostics[i]);
	free(s->diagnostics);
	free_refusals(s->denied, s->ndenied);
	free_refusals(s->waiting, s->nwaiting);
	free_refusals(s->unsaved, s->nunsaved);
	free(s->restore);
	free(s->rerun);
	memset(s, 0, sizeof(*s));
}
