/*
 * op.h — the file operations a request may ask for, and the names of
 * operations and file types.
 *
 * The names are the `op` strings of the Lua boundary (DESIGN §4.1), the audit
 * log and the control protocol.
 */
#ifndef FSB_OP_H
#define FSB_OP_H

#include <stdbool.h>
#include <sys/types.h>

enum fsb_op {
	FSB_OP_READ,
	FSB_OP_WRITE,
	FSB_OP_CREATE,
	FSB_OP_DELETE,
	FSB_OP_RENAME_FROM,
	FSB_OP_RENAME_TO,
	FSB_OP_MKDIR,
	FSB_OP_LINK,
	FSB_OP_SYMLINK,
	FSB_OP_CHMOD,
	FSB_OP_CHOWN,
	FSB_OP_UTIMES,
	FSB_OP_XATTR,
	FSB_OP_TOUCH,
	FSB_OP__COUNT
};

/** The op's name as Lua and the audit log spell it ("rename-from"). */
const char *fsb_op_name(enum fsb_op op);

/** Parse an op name; returns 0, or -EINVAL for an unknown name. */
int fsb_op_parse(const char *name, enum fsb_op *out);

/**
 * The name of a file's type as the Lua boundary, the journal and the backup
 * CLI spell it: "file", "dir", "symlink", "fifo", "socket", "chardev",
 * "blockdev".
 */
const char *fsb_file_type_name(mode_t mode);

/** True for every op except read: the ops denyModify and backups concern. */
bool fsb_op_modifies(enum fsb_op op);

/**
 * True for the ops that change an existing file's metadata and never its
 * content (chmod, chown, utimes, xattrs, touch): their backup journals the
 * old metadata and copies nothing (DESIGN §6.1).
 */
bool fsb_op_metadata_only(enum fsb_op op);

#endif
