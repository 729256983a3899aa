/*
 * protected.c — the protected-path set (see protected.h). A handful of
 * prefixes, so a linear scan is the fast path.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "protected.h"
#include "resolve.h"

int fsb_protected_add(struct fsb_protected *p, const char *path,
		      enum fsb_protect how, const char *what, bool from_pack)
{
	char norm[PATH_MAX], real[PATH_MAX];
	struct fsb_protected_entry *e;
	int err;

	if ((err = fsb_path_lexical(path, norm)) < 0)
		return err;
	if (realpath(norm, real) != NULL)
		strcpy(norm, real);
	for (size_t i = 0; i < p->n; i++)
		if (p->v[i].how == how && strcmp(p->v[i].path, norm) == 0)
			return 0;
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 16;
		struct fsb_protected_entry *v = realloc(p->v, cap * sizeof(*v));

		if (v == NULL)
			return -ENOMEM;
		p->v = v;
		p->cap = cap;
	}
	e = &p->v[p->n];
	e->path = strdup(norm);
	e->what = strdup(what);
	if (e->path == NULL || e->what == NULL) {
		free(e->path);
		free(e->what);
		return -ENOMEM;
	}
	e->how = how;
	e->from_pack = from_pack;
	p->n++;
	return 0;
}

void fsb_protected_drop_pack(struct fsb_protected *p)
{
	size_t j = 0;

	for (size_t i = 0; i < p->n; i++) {
		if (p->v[i].from_pack) {
			free(p->v[i].path);
			free(p->v[i].what);
		} else {
			p->v[j++] = p->v[i];
		}
	}
	p->n = j;
}

/* True when `path` is `<dir>/<name>.lua`, directly in `dir`. */
static bool is_lua_entry_of(const char *path, const char *dir)
{
	size_t dl = strlen(dir), pl = strlen(path);
	const char *name;

	if (dl == 1)
		dl = 0;		/* "/" */
	if (pl <= dl + 1 || strncmp(path, dir, dl) != 0 || path[dl] != '/')
		return false;
	name = path + dl + 1;
	pl = strlen(name);
	return strchr(name, '/') == NULL && pl > 4 && strcmp(name + pl - 4, ".lua") == 0;
}

const struct fsb_protected_entry *fsb_protected_match(const struct fsb_protected *p,
						      const char *path, enum fsb_op op)
{
	for (size_t i = 0; i < p->n; i++) {
		const struct fsb_protected_entry *e = &p->v[i];

		if (e->how != FSB_PROTECT_HIDDEN && !fsb_op_modifies(op))
			continue;
		if (e->how == FSB_PROTECT_PACK_NAMES) {
			if (is_lua_entry_of(path, e->path))
				return e;
		} else if (fsb_path_within(path, e->path)) {
			return e;
		}
		/* Moving or deleting an ancestor would carry the protected tree
		 * along with it. */
		if ((op == FSB_OP_DELETE || op == FSB_OP_RENAME_FROM || op == FSB_OP_RENAME_TO) &&
		    fsb_path_within(e->path, path))
			return e;
	}
	return NULL;
}

void fsb_protected_free(struct fsb_protected *p)
{
	fsb_protected_drop_pack(p);
	for (size_t i = 0; i < p->n; i++) {
		free(p->v[i].path);
		free(p->v[i].what);
	}
	free(p->v);
	memset(p, 0, sizeof(*p));
}
