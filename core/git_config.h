/*
 * git_config.h — reading a git config file as git does, and telling the
 * keys git reads as data from those that make it run a program (the git
 * guard's judge, git_guard.h).
 */
#ifndef FSB_GIT_CONFIG_H
#define FSB_GIT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

/** One variable of a git config file. Strings are owned. */
struct fsb_git_cfg_entry {
	char *section;		/* lower case */
	char *subsection;	/* as written ("" when none); the old
				 * [section.sub] form is lower-cased */
	char *key;		/* lower case */
	char *value;		/* unquoted and unescaped; NULL: a bare
				 * boolean ("key" without "=") */
	size_t start, end;	/* the bytes of the file it spans: from its
				 * name to the end of its last line */
};

struct fsb_git_cfg {
	struct fsb_git_cfg_entry *v;
	size_t n;
};

/**
 * Parse the text of a git config file as git-config(1) reads it: sections,
 * subsections, case-insensitive names, bare booleans, quotes, escapes,
 * continuation lines, comments. Returns 0, -ENOMEM, or -EBADMSG with
 * "line N: what" in `err` for anything git would refuse or read
 * differently (a file the guard cannot read counts as dangerous).
 */
int fsb_git_config_parse(const char *text, size_t len, struct fsb_git_cfg *out, char *err,
			 size_t errlen);

/** Free what fsb_git_config_parse() filled in (`c` is then empty). */
void fsb_git_config_free(struct fsb_git_cfg *c);

/**
 * Why `e`, in the config of git directory `gitdir` (NULL when unknown),
 * may make git run a program or act outside its repository; NULL when it
 * is one of the keys known to be harmless. An allow-list: a key git adds
 * tomorrow is not harmless until it is listed here.
 */
const char *fsb_git_config_risk(const struct fsb_git_cfg_entry *e, const char *gitdir);

/**
 * `text` (`len` bytes, the file `c` was parsed from) without the entries
 * whose `drop` flag is set, in a malloc'd buffer of *outlen bytes (NULL
 * when out of memory). Everything else stays byte for byte; an entry on
 * its section header's line leaves the header on a line of its own.
 */
char *fsb_git_config_drop(const char *text, size_t len, const struct fsb_git_cfg *c,
			  const bool *drop, size_t *outlen);

/**
 * Absolute `path` with its "." and ".." segments taken out, lexically (no
 * symlink is looked at), into `out`. False when it is not absolute or does
 * not fit.
 */
bool fsb_git_lexical_path(const char *path, char *out, size_t len);

#endif
