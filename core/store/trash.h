/*
 * trash.h — move a file or directory to the trash the way the FreeDesktop.org
 * Trash specification (1.0) lays it out, so a desktop's trash tools list and
 * restore it (docs/protocol.md, "Trash").
 */
#ifndef FSB_TRASH_H
#define FSB_TRASH_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

/* Where the home trash lives and whose trash it is. */
struct fsb_trash_place {
	char data_home[PATH_MAX];	/* absolute: $XDG_DATA_HOME, or $HOME/.local/share */
	uid_t uid;
};

/**
 * Fill `t` from the environment: `data_home` is $XDG_DATA_HOME when that is
 * an absolute path (a relative one is ignored, as the XDG Base Directory
 * specification asks), else `home`/.local/share, where `home` is $HOME when
 * NULL; `uid` is getuid(). Returns 0, -ENOENT when there is no absolute home
 * to use, or -ENAMETOOLONG.
 */
int fsb_trash_place_init(struct fsb_trash_place *t, const char *home);

/**
 * Move the entry `name` of the directory `dirfd`, whose real absolute path
 * is `dir_path`, to the trash.
 *
 * The trash is the home trash, `data_home`/Trash, when the entry is on the
 * filesystem of the data home; else the one at the top directory (mount
 * point) of the entry's filesystem: `$topdir/.Trash/$uid` when
 * `$topdir/.Trash` is a sticky directory (and `$uid` in it, made 0700 when
 * missing, is a directory of the user's), otherwise `$topdir/.Trash-$uid`
 * (made 0700; it must be a directory owned by the user). Missing levels of
 * the data home, Trash, files/ and info/ are made 0700. Nothing below the
 * data home or the top directory is reached through a symlink.
 *
 * The info file `info/<n>.trashinfo` is written and fsynced before the
 * entry is renamed to `files/<n>` without replacing anything; `<n>` is
 * `name`, or `name.2`, `name.3`, … when taken. The entry is never copied:
 * a trash on another filesystem is -EXDEV.
 *
 * `before` (may be NULL) is called once the names are chosen and the info
 * file is written, just before the rename, with the two paths the move is
 * about to create: the backup journal records them, so that a restore
 * takes them out of the trash again. When it returns -errno, the info file
 * is removed and that is returned (with `why` left to the callback). It
 * may be called again with the next free name if the rename finds the
 * first one taken.
 *
 * On success returns 0 and writes the path of the moved object under files/
 * into `trashed` and that of its .trashinfo into `info` (each PATH_MAX
 * bytes). On failure returns -errno with a sentence in `why`, and no info
 * file is left behind.
 */
typedef int (*fsb_trash_before_fn)(const char *trashed, const char *info, void *arg);

int fsb_trash_move(const struct fsb_trash_place *t, int dirfd, const char *dir_path,
		   const char *name, fsb_trash_before_fn before, void *arg,
		   char *trashed, char *info, char *why, size_t whylen);

#endif
