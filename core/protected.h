/*
 * protected.h — paths no pack can open up (DESIGN §2): the state dir and
 * every socket dir (hidden: no access at all), the rule-pack dirs, the pack
 * files in use and the fsbroker binaries (read-only). Checked in C before
 * any Lua runs.
 */
#ifndef FSB_PROTECTED_H
#define FSB_PROTECTED_H

#include <stdbool.h>
#include <stddef.h>

#include "op.h"

enum fsb_protect {
	FSB_PROTECT_HIDDEN,	/* neither readable nor writable */
	FSB_PROTECT_READONLY,	/* readable, never modified */
	FSB_PROTECT_PACK_NAMES,	/* the *.lua entries directly in it are read-only:
				 * an include could resolve to any of them */
};

struct fsb_protected_entry {
	char *path;		/* real, lexically normal */
	enum fsb_protect how;
	char *what;		/* "state dir", "pack file" ... */
	bool from_pack;		/* replaced when a pack is reloaded */
};

struct fsb_protected {
	struct fsb_protected_entry *v;
	size_t n, cap;
};

/**
 * Protect `path` and everything beneath it. The path is made real when it
 * exists (so a symlinked state dir is still caught) and lexically normal
 * otherwise. 0 or -errno.
 */
int fsb_protected_add(struct fsb_protected *p, const char *path,
		      enum fsb_protect how, const char *what, bool from_pack);

/** Forget the entries added with from_pack (before a reloaded pack's). */
void fsb_protected_drop_pack(struct fsb_protected *p);

/**
 * The entry that forbids `op` on `path` (a real or lexically normal path),
 * or NULL when none does.
 */
const struct fsb_protected_entry *fsb_protected_match(const struct fsb_protected *p,
						      const char *path, enum fsb_op op);

void fsb_protected_free(struct fsb_protected *p);

#endif
