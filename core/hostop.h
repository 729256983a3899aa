/*
 * hostop.h — the seven JSON host operations, performed by the core itself
 * (DESIGN §3.3, §5, §6.1; docs/protocol.md "What each operation does"):
 * every path they touch judged by the policy, everything they change
 * backed up, then the change made race-safe with *at() calls.
 */
#ifndef FSB_HOSTOP_H
#define FSB_HOSTOP_H

#include <cJSON.h>

#include "broker.h"
#include "proto_json.h"

/** Who asks: the connection's session and process. */
struct fsb_hostop_client {
	const char *session;	/* the connection's scope */
	const char *tool_call;	/* the request's, else the scope's; may be "" */
	pid_t pid;
	uid_t uid;
	/* The requester's "/" (a sandboxed process's /proc/<pid>/root), or -1:
	 * the core's own. Paths are resolved and reached under it. */
	int view_fd;
	/* For the seccomp supervisor: a delete that is unlink(2) (never a
	 * directory: EISDIR) or rmdir(2) (only a directory: ENOTDIR). */
	bool delete_file_only, delete_dir_only;
	bool rename_noreplace;	/* renameat2(RENAME_NOREPLACE): an existing target is EEXIST */
	/* renameat2(RENAME_EXCHANGE): both names must exist; each is judged
	 * as a rename source and a rename target and backed up, then the two
	 * are swapped in one call. */
	bool rename_exchange;
	/* link(2), linkat(2) without AT_SYMLINK_FOLLOW: a symlink source is
	 * linked itself, never followed. */
	bool link_nofollow;
	bool exact_mode;	/* mkdir: `mode` as given, the core's umask not applied */
	bool must_be_dir;	/* a name ended in '/': a file there is ENOTDIR */
};

/**
 * Perform `req` for `who` and return the reply object (docs/protocol.md
 * "Replies of host operations"); it is audited (phase ipc-host-op) before
 * the change, which does not happen when that line cannot be written.
 * Never returns NULL.
 */
cJSON *fsb_hostop_run(struct fsb_broker *b, const struct fsb_hostop_client *who,
		      const struct fsb_hostop_req *req);

/**
 * fsb_hostop_run() for the seccomp supervisor, which answers a system call:
 * the same steps and audit lines, and 0 or -errno instead of a reply.
 */
int fsb_hostop_perform(struct fsb_broker *b, const struct fsb_hostop_client *who,
		       const struct fsb_hostop_req *req);

#endif
