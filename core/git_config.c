/*
 * git_config.c — the git config reader and the list of keys the guard lets
 * a cycle leave in a git directory (git_config.h). The reader follows git's
 * own (config.c, git_parse_source): whatever git would read differently is
 * an error here, since the guard must see the keys git will act on.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "git_config.h"

/* A growing string; `len` bytes in `s`, always NUL-terminated. */
struct buf {
	char *s;
	size_t len, cap;
};

static int put(struct buf *b, char c)
{
	if (b->len + 2 > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 64;
		char *s = realloc(b->s, cap);

		if (s == NULL)
			return -ENOMEM;
		b->s = s;
		b->cap = cap;
	}
	b->s[b->len++] = c;
	b->s[b->len] = '\0';
	return 0;
}

static char *take(struct buf *b)
{
	char *s = b->s != NULL ? b->s : strdup("");

	memset(b, 0, sizeof(*b));
	return s;
}

/* The reader's position: git reads "\r\n" as "\n" and the end as "\n". */
struct src {
	const char *text;
	size_t len, pos;
	unsigned line;
	bool eof;
};

static int next(struct src *r)
{
	int c;

	if (r->pos >= r->len) {
		r->eof = true;
		return '\n';
	}
	c = (unsigned char)r->text[r->pos++];
	if (c == '\r' && r->pos < r->len && r->text[r->pos] == '\n')
		c = (unsigned char)r->text[r->pos++];
	if (c == '\n')
		r->line++;
	return c;
}

/* git's isspace: no \v or \f. */
static bool gspace(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool keychar(int c)
{
	return isascii(c) && (isalnum(c) || c == '-');
}

static int bad(struct src *r, char *err, size_t errlen, const char *what)
{
	snprintf(err, errlen, "line %u: %s", r->line, what);
	return -EBADMSG;
}

/* `[name]`, `[name "sub"]` or the old `[name.sub]`, after the '['. */
static int header(struct src *r, struct buf *sec, struct buf *sub, char *err, size_t errlen)
{
	int c;

	free(sec->s);
	free(sub->s);
	memset(sec, 0, sizeof(*sec));
	memset(sub, 0, sizeof(*sub));
	for (;;) {
		c = next(r);
		if (r->eof || c == '\n')
			return bad(r, err, errlen, "a section header without ']'");
		if (c == ']')
			break;
		if (gspace(c))
			goto extended;
		if (!keychar(c) && c != '.')
			return bad(r, err, errlen, "a character git does not allow in a section name");
		if (put(sec, (char)tolower(c)) < 0)
			return -ENOMEM;
	}
	goto split;
extended:
	do {
		c = next(r);
		if (c == '\n')
			return bad(r, err, errlen, "a section header cut by the end of its line");
	} while (gspace(c));
	if (c != '"')
		return bad(r, err, errlen, "a subsection name that is not in double quotes");
	if (put(sec, '.') < 0)
		return -ENOMEM;
	for (;;) {
		c = next(r);
		if (c == '\n')
			return bad(r, err, errlen, "a subsection name cut by the end of its line");
		if (c == '"')
			break;
		if (c == '\\' && (c = next(r)) == '\n')
			return bad(r, err, errlen, "a subsection name cut by the end of its line");
		if (c == '\0')
			return bad(r, err, errlen, "a NUL byte");
		/* A quoted subsection keeps its case, as in git. */
		if (put(sec, (char)c) < 0)
			return -ENOMEM;
	}
	if (next(r) != ']')
		return bad(r, err, errlen, "a section header without ']' after its subsection");
split:
	if (sec->len == 0)
		return bad(r, err, errlen, "an empty section name");
	/* "a.b.c" is section "a", subsection "b.c", as git splits a key at
	 * its first and last dots. */
	{
		char *dot = strchr(sec->s, '.');

		if (dot == sec->s)
			return bad(r, err, errlen, "an empty section name");
		if (dot != NULL) {
			for (const char *p = dot + 1; *p; p++)
				if (put(sub, *p) < 0)
					return -ENOMEM;
			*dot = '\0';
			sec->len = (size_t)(dot - sec->s);
		}
	}
	return 0;
}

/* A value after '=', up to the end of its (last) line. */
static int value(struct src *r, struct buf *v, char *err, size_t errlen)
{
	bool quote = false, comment = false;
	size_t trim = 0;
	int c;

	if (put(v, '\0') < 0)	/* allocated even when empty */
		return -ENOMEM;
	v->len = 0;
	for (;;) {
		c = next(r);
		if (c == '\n') {
			if (quote)
				return bad(r, err, errlen, "a value with an unclosed quote");
			if (trim)
				v->s[v->len = trim] = '\0';
			return 0;
		}
		if (comment)
			continue;
		if (c == '\0')
			return bad(r, err, errlen, "a NUL byte");
		if (gspace(c) && !quote) {
			if (!trim)
				trim = v->len;
			if (v->len && put(v, (char)c) < 0)
				return -ENOMEM;
			continue;
		}
		if (!quote && (c == ';' || c == '#')) {
			comment = true;
			continue;
		}
		trim = 0;
		if (c == '\\') {
			c = next(r);
			switch (c) {
			case '\n':
				if (r->eof)
					return bad(r, err, errlen, "a backslash at the end of the file");
				continue;
			case 't': c = '\t'; break;
			case 'b': c = '\b'; break;
			case 'n': c = '\n'; break;
			case '\\':
			case '"':
				break;
			default:
				return bad(r, err, errlen, "an escape git does not know");
			}
			if (put(v, (char)c) < 0)
				return -ENOMEM;
			continue;
		}
		if (c == '"') {
			quote = !quote;
			continue;
		}
		if (put(v, (char)c) < 0)
			return -ENOMEM;
	}
}

static int add(struct fsb_git_cfg *c, const struct buf *sec, const struct buf *sub,
	       struct buf *key, struct buf *val, bool has_val, size_t start, size_t end)
{
	struct fsb_git_cfg_entry *v = realloc(c->v, (c->n + 1) * sizeof(*v)), *e;

	if (v == NULL)
		return -ENOMEM;
	c->v = v;
	e = &v[c->n];
	memset(e, 0, sizeof(*e));
	e->section = strdup(sec->s);
	e->subsection = strdup(sub->s != NULL ? sub->s : "");
	e->key = take(key);
	e->value = has_val ? take(val) : NULL;
	e->start = start;
	e->end = end;
	if (e->section == NULL || e->subsection == NULL || e->key == NULL ||
	    (has_val && e->value == NULL)) {
		free(e->section);
		free(e->subsection);
		free(e->key);
		free(e->value);
		return -ENOMEM;
	}
	c->n++;
	return 0;
}

int fsb_git_config_parse(const char *text, size_t len, struct fsb_git_cfg *out, char *err,
			 size_t errlen)
{
	struct src r = { .text = text, .len = len, .line = 1 };
	struct buf sec = { 0 }, sub = { 0 }, key = { 0 }, val = { 0 };
	bool comment = false;
	int c, rc = 0;

	memset(out, 0, sizeof(*out));
	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
		r.pos = 3;
	for (;;) {
		size_t start;

		c = next(&r);
		if (c == '\n') {
			if (r.eof)
				break;
			comment = false;
			continue;
		}
		if (comment || gspace(c))
			continue;
		if (c == '\0') {
			rc = bad(&r, err, errlen, "a NUL byte");
			goto fail;
		}
		if (c == '#' || c == ';') {
			comment = true;
			continue;
		}
		if (c == '[') {
			if ((rc = header(&r, &sec, &sub, err, errlen)) < 0)
				goto fail;
			continue;
		}
		if (!isascii(c) || !isalpha(c)) {
			rc = bad(&r, err, errlen, "a line that is neither a section, a variable "
				 "nor a comment");
			goto fail;
		}
		if (sec.s == NULL) {
			rc = bad(&r, err, errlen, "a variable before any section");
			goto fail;
		}
		start = r.pos - 1;
		key.len = 0;
		if (put(&key, (char)tolower(c)) < 0)
			goto nomem;
		while ((c = next(&r)), !r.eof && keychar(c))
			if (put(&key, (char)tolower(c)) < 0)
				goto nomem;
		while (c == ' ' || c == '\t')
			c = next(&r);
		if (c == '\n') {
			if ((rc = add(out, &sec, &sub, &key, &val, false, start, r.pos)) < 0)
				goto fail;
			if (r.eof)
				break;
			continue;
		}
		if (c != '=') {
			rc = bad(&r, err, errlen, "a variable name followed by neither '=' nor "
				 "the end of the line");
			goto fail;
		}
		if ((rc = value(&r, &val, err, errlen)) < 0 ||
		    (rc = add(out, &sec, &sub, &key, &val, true, start, r.pos)) < 0)
			goto fail;
		if (r.eof)
			break;
	}
	free(sec.s);
	free(sub.s);
	free(key.s);
	free(val.s);
	return 0;
nomem:
	rc = -ENOMEM;
fail:
	if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	free(sec.s);
	free(sub.s);
	free(key.s);
	free(val.s);
	fsb_git_config_free(out);
	return rc;
}

char *fsb_git_config_drop(const char *text, size_t len, const struct fsb_git_cfg *c,
			  const bool *drop, size_t *outlen)
{
	char *out = malloc(len + c->n + 1);
	size_t n = 0, from = 0;

	if (out == NULL)
		return NULL;
	for (size_t i = 0; i < c->n; i++) {
		const struct fsb_git_cfg_entry *e = &c->v[i];

		if (!drop[i])
			continue;
		memcpy(out + n, text + from, e->start - from);
		n += e->start - from;
		if (e->start > 0 && text[e->start - 1] != '\n')
			out[n++] = '\n';
		from = e->end;
	}
	memcpy(out + n, text + from, len - from);
	n += len - from;
	out[n] = '\0';
	*outlen = n;
	return out;
}

void fsb_git_config_free(struct fsb_git_cfg *c)
{
	for (size_t i = 0; i < c->n; i++) {
		free(c->v[i].section);
		free(c->v[i].subsection);
		free(c->v[i].key);
		free(c->v[i].value);
	}
	free(c->v);
	memset(c, 0, sizeof(*c));
}

/*
 * The keys a cycle may leave, by section: each harmless whatever its value
 * (or with the value check named), because git reads it as data, never as
 * a program, a path to run or a file to include. Why an allow-list and not
 * the list of keys that run programs: that list grows with git (fsmonitor
 * came in 2.16, newer releases add hook.<name>.command) and a key it lacks
 * runs code on the host; a key missing here only costs the run that setting.
 */
enum check { ANY, WORKTREE, URL, ALIAS, SUBMODULE_UPDATE };

struct allowed {
	const char *section;	/* lower case */
	int sub;		/* 0: no subsection, 1: any subsection, -1: either */
	const char *key;	/* lower case; "*": any key */
	enum check check;
};

static const struct allowed ALLOWED[] = {
	/* What `git init` and `git clone` write. */
	{ "core", 0, "repositoryformatversion", ANY },
	{ "core", 0, "filemode", ANY },
	{ "core", 0, "bare", ANY },
	{ "core", 0, "logallrefupdates", ANY },
	{ "core", 0, "ignorecase", ANY },
	{ "core", 0, "precomposeunicode", ANY },
	{ "core", 0, "symlinks", ANY },
	{ "core", 0, "worktree", WORKTREE },
	{ "core", 0, "sparsecheckout", ANY },
	{ "core", 0, "sparsecheckoutcone", ANY },
	{ "extensions", 0, "objectformat", ANY },
	{ "extensions", 0, "worktreeconfig", ANY },
	{ "extensions", 0, "refstorage", ANY },
	{ "extensions", 0, "partialclone", ANY },
	{ "extensions", 0, "preciousobjects", ANY },
	{ "extensions", 0, "noop", ANY },
	{ "remote", 1, "url", URL },
	{ "remote", 1, "pushurl", URL },
	{ "remote", 1, "fetch", ANY },
	{ "remote", 1, "push", ANY },
	{ "remote", 1, "tagopt", ANY },
	{ "remote", 1, "prune", ANY },
	{ "remote", 1, "prunetags", ANY },
	{ "remote", 1, "mirror", ANY },
	{ "remote", 1, "promisor", ANY },
	{ "remote", 1, "partialclonefilter", ANY },
	{ "remote", 1, "skipdefaultupdate", ANY },
	{ "remote", 1, "skipfetchall", ANY },
	{ "branch", 1, "remote", ANY },
	{ "branch", 1, "merge", ANY },
	{ "branch", 1, "rebase", ANY },
	{ "branch", 1, "pushremote", ANY },
	{ "branch", 1, "description", ANY },
	{ "submodule", 1, "url", URL },
	{ "submodule", 1, "active", ANY },
	{ "submodule", 1, "branch", ANY },
	{ "submodule", 1, "shallow", ANY },
	{ "submodule", 1, "ignore", ANY },
	{ "submodule", 1, "fetchrecursesubmodules", ANY },
	{ "submodule", 1, "update", SUBMODULE_UPDATE },
	{ "submodule", 0, "active", ANY },
	{ "submodule", 0, "recurse", ANY },
	/* What people set in a repository and git reads as plain data. */
	{ "user", 0, "name", ANY },
	{ "user", 0, "email", ANY },
	{ "user", 0, "signingkey", ANY },
	{ "author", 0, "name", ANY },
	{ "author", 0, "email", ANY },
	{ "committer", 0, "name", ANY },
	{ "committer", 0, "email", ANY },
	{ "init", 0, "defaultbranch", ANY },
	{ "core", 0, "autocrlf", ANY },
	{ "core", 0, "eol", ANY },
	{ "core", 0, "safecrlf", ANY },
	{ "core", 0, "quotepath", ANY },
	{ "core", 0, "abbrev", ANY },
	{ "core", 0, "compression", ANY },
	{ "core", 0, "loosecompression", ANY },
	{ "core", 0, "bigfilethreshold", ANY },
	{ "core", 0, "checkstat", ANY },
	{ "core", 0, "trustctime", ANY },
	{ "core", 0, "splitindex", ANY },
	{ "core", 0, "untrackedcache", ANY },
	{ "core", 0, "preloadindex", ANY },
	{ "core", 0, "multipackindex", ANY },
	{ "core", 0, "commitgraph", ANY },
	{ "core", 0, "whitespace", ANY },
	{ "core", 0, "warnambiguousrefs", ANY },
	{ "core", 0, "commentchar", ANY },
	{ "core", 0, "commentstring", ANY },
	{ "pull", 0, "rebase", ANY },
	{ "pull", 0, "ff", ANY },
	{ "push", 0, "default", ANY },
	{ "push", 0, "autosetupremote", ANY },
	{ "push", 0, "followtags", ANY },
	{ "fetch", 0, "prune", ANY },
	{ "fetch", 0, "prunetags", ANY },
	{ "fetch", 0, "recursesubmodules", ANY },
	{ "fetch", 0, "writecommitgraph", ANY },
	{ "fetch", 0, "parallel", ANY },
	{ "merge", 0, "ff", ANY },
	{ "merge", 0, "conflictstyle", ANY },
	{ "merge", 0, "renames", ANY },
	{ "merge", 0, "renamelimit", ANY },
	{ "merge", 0, "autostash", ANY },
	{ "merge", 0, "log", ANY },
	{ "merge", 0, "stat", ANY },
	{ "rebase", 0, "autosquash", ANY },
	{ "rebase", 0, "autostash", ANY },
	{ "rebase", 0, "updaterefs", ANY },
	{ "rebase", 0, "stat", ANY },
	{ "rebase", 0, "abbreviatecommands", ANY },
	{ "rebase", 0, "missingcommitscheck", ANY },
	{ "diff", 0, "renames", ANY },
	{ "diff", 0, "renamelimit", ANY },
	{ "diff", 0, "algorithm", ANY },
	{ "diff", 0, "mnemonicprefix", ANY },
	{ "diff", 0, "noprefix", ANY },
	{ "diff", 0, "context", ANY },
	{ "diff", 0, "interhunkcontext", ANY },
	{ "diff", 0, "indentheuristic", ANY },
	{ "diff", 0, "colormoved", ANY },
	{ "diff", 0, "submodule", ANY },
	{ "diff", 0, "relative", ANY },
	{ "diff", 0, "statgraphwidth", ANY },
	{ "status", 0, "*", ANY },
	{ "log", 0, "*", ANY },
	{ "color", -1, "*", ANY },
	{ "advice", 0, "*", ANY },
	{ "i18n", 0, "commitencoding", ANY },
	{ "i18n", 0, "logoutputencoding", ANY },
	{ "gc", 0, "auto", ANY },
	{ "gc", 0, "autopacklimit", ANY },
	{ "gc", 0, "autodetach", ANY },
	{ "gc", 0, "reflogexpire", ANY },
	{ "gc", 0, "reflogexpireunreachable", ANY },
	{ "gc", 0, "pruneexpire", ANY },
	{ "gc", 0, "worktreepruneexpire", ANY },
	{ "gc", 0, "writecommitgraph", ANY },
	{ "gc", 0, "packrefs", ANY },
	{ "gc", 0, "cruftpacks", ANY },
	{ "pack", 0, "threads", ANY },
	{ "pack", 0, "window", ANY },
	{ "pack", 0, "depth", ANY },
	{ "pack", 0, "windowmemory", ANY },
	{ "pack", 0, "compression", ANY },
	{ "pack", 0, "packsizelimit", ANY },
	{ "pack", 0, "usesparse", ANY },
	{ "pack", 0, "writereverseindex", ANY },
	{ "index", 0, "version", ANY },
	{ "index", 0, "threads", ANY },
	{ "index", 0, "skiphash", ANY },
	{ "index", 0, "sparse", ANY },
	{ "feature", 0, "manyfiles", ANY },
	{ "feature", 0, "experimental", ANY },
	{ "rerere", 0, "enabled", ANY },
	{ "rerere", 0, "autoupdate", ANY },
	{ "tag", 0, "sort", ANY },
	{ "worktree", 0, "guessremote", ANY },
	{ "maintenance", 0, "auto", ANY },
	{ "maintenance", 0, "strategy", ANY },
	{ "blame", 0, "date", ANY },
	{ "blame", 0, "showemail", ANY },
	{ "alias", 0, "*", ALIAS },
};

/*
 * The keys that are known to run a program, name one or pull in other
 * config, for the reason in the report (everything not ALLOWED is undone
 * anyway; these only get a sharper sentence). `*` matches a subsection.
 */
static const struct {
	const char *section, *key;
	const char *why;
} RUNS[] = {
	{ "core", "fsmonitor", "runs a program on every git status" },
	{ "core", "hookspath", "points git at hooks elsewhere" },
	{ "core", "sshcommand", "runs a program on fetch and push" },
	{ "core", "pager", "runs a program as the pager" },
	{ "core", "editor", "runs a program as the editor" },
	{ "core", "askpass", "runs a program for passwords" },
	{ "core", "gitproxy", "runs a program for git:// connections" },
	{ "core", "attributesfile", "can name filters and diff drivers" },
	{ "sequence", "editor", "runs a program as the editor" },
	{ "filter", "clean", "runs a program on git add" },
	{ "filter", "smudge", "runs a program on checkout" },
	{ "filter", "process", "runs a program on add and checkout" },
	{ "diff", "textconv", "runs a program on git diff" },
	{ "diff", "command", "runs a program on git diff" },
	{ "diff", "external", "runs a program on git diff" },
	{ "merge", "driver", "runs a program on merge" },
	{ "credential", "helper", "runs a program for credentials" },
	{ "include", "path", "includes another config file" },
	{ "includeif", "path", "includes another config file" },
	{ "gpg", "program", "runs a program to sign or verify" },
	{ "pager", "*", "runs a program as a pager" },
	{ "web", "browser", "runs a browser" },
	{ "browser", "cmd", "runs a program as the browser" },
	{ "uploadpack", "packobjectshook", "runs a program on fetch" },
	{ "remote", "receivepack", "runs a program on push" },
	{ "remote", "uploadpack", "runs a program on fetch" },
	{ "remote", "vcs", "runs a remote helper" },
	{ "protocol", "allow", "allows transports that run programs" },
	{ "hook", "command", "runs a program as a hook" },
	{ "difftool", "cmd", "runs a program as the diff tool" },
	{ "mergetool", "cmd", "runs a program as the merge tool" },
};

bool fsb_git_lexical_path(const char *path, char *out, size_t len)
{
	size_t n = 0;
	const char *p = path;

	if (len < 2 || *p != '/')
		return false;
	out[0] = '\0';
	while (*p) {
		const char *seg;
		size_t sl;

		while (*p == '/')
			p++;
		seg = p;
		while (*p && *p != '/')
			p++;
		sl = (size_t)(p - seg);
		if (sl == 0 || (sl == 1 && seg[0] == '.'))
			continue;
		if (sl == 2 && seg[0] == '.' && seg[1] == '.') {
			while (n > 0 && out[n - 1] != '/')
				n--;
			if (n > 0)
				n--;
			out[n] = '\0';
			continue;
		}
		if (n + 1 + sl + 1 > len)
			return false;
		out[n++] = '/';
		memcpy(out + n, seg, sl);
		n += sl;
		out[n] = '\0';
	}
	if (n == 0)
		snprintf(out, len, "/");
	return true;
}

/*
 * core.worktree makes git check files out into that directory, so one
 * outside the repository turns the user's next `git checkout` into writes
 * there (~/.bashrc). Harmless when, relative, it stays inside the tree the
 * git directory belongs to: the directory above its first ".git"
 * component (a submodule's ../../../sub), else the git directory itself.
 */
static bool worktree_inside(const char *value, const char *gitdir)
{
	char joined[PATH_MAX * 2], top[PATH_MAX], wt[PATH_MAX];
	const char *dotgit;
	size_t tl;

	if (gitdir == NULL || value == NULL || value[0] == '/' || value[0] == '\0')
		return false;
	dotgit = strstr(gitdir, "/.git");
	while (dotgit != NULL && dotgit[5] != '/' && dotgit[5] != '\0')
		dotgit = strstr(dotgit + 1, "/.git");
	if (dotgit != NULL)
		snprintf(top, sizeof(top), "%.*s", (int)(dotgit - gitdir), gitdir);
	else
		snprintf(top, sizeof(top), "%s", gitdir);
	if (top[0] == '\0')
		return false;
	snprintf(joined, sizeof(joined), "%s/%s", gitdir, value);
	if (!fsb_git_lexical_path(joined, wt, sizeof(wt)))
		return false;
	tl = strlen(top);
	return strncmp(wt, top, tl) == 0 && (wt[tl] == '\0' || wt[tl] == '/');
}

/* An alias that is one git subcommand word: `co = checkout`. Anything
 * else may run a program ("!sh …") or pass options that do
 * ("-c core.pager=…", "rebase --exec …"). */
static bool alias_plain(const char *v)
{
	if (v == NULL || !isascii((unsigned char)v[0]) || !isalpha((unsigned char)v[0]))
		return false;
	for (; *v; v++)
		if (!keychar((unsigned char)*v))
			return false;
	return true;
}

static const char *runs_why(const struct fsb_git_cfg_entry *e)
{
	for (size_t i = 0; i < sizeof(RUNS) / sizeof(RUNS[0]); i++)
		if (strcmp(RUNS[i].section, e->section) == 0 &&
		    (strcmp(RUNS[i].key, "*") == 0 || strcmp(RUNS[i].key, e->key) == 0))
			return RUNS[i].why;
	return NULL;
}

const char *fsb_git_config_risk(const struct fsb_git_cfg_entry *e, const char *gitdir)
{
	const char *why = runs_why(e);
	bool has_sub = e->subsection[0] != '\0';

	if (why != NULL)
		return why;
	for (size_t i = 0; i < sizeof(ALLOWED) / sizeof(ALLOWED[0]); i++) {
		const struct allowed *a = &ALLOWED[i];

		if (strcmp(a->section, e->section) != 0 ||
		    (a->sub == 0 && has_sub) || (a->sub == 1 && !has_sub) ||
		    (strcmp(a->key, "*") != 0 && strcmp(a->key, e->key) != 0))
			continue;
		switch (a->check) {
		case ANY:
			return NULL;
		case WORKTREE:
			return worktree_inside(e->value, gitdir)
				       ? NULL : "points the work tree outside the repository";
		case URL:
			/* ext:: runs a program as the transport; a value git
			 * would read as an option is refused by git, but not
			 * by every tool that reads the config. */
			if (e->value == NULL || strncmp(e->value, "ext::", 5) == 0 ||
			    e->value[0] == '-')
				return "a URL that runs a program";
			return NULL;
		case ALIAS:
			return alias_plain(e->value)
				       ? NULL : "an alias that may run a program or pass options";
		case SUBMODULE_UPDATE:
			if (e->value != NULL && (strcmp(e->value, "checkout") == 0 ||
						 strcmp(e->value, "rebase") == 0 ||
						 strcmp(e->value, "merge") == 0 ||
						 strcmp(e->value, "none") == 0))
				return NULL;
			return "runs a program on submodule update";
		}
	}
	return "not a key known to be harmless";
}
