/*
 * op.c — names of the file operations (see op.h).
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "op.h"

static const char *const op_names[FSB_OP__COUNT] = {
	[FSB_OP_READ] = "read",
	[FSB_OP_WRITE] = "write",
	[FSB_OP_CREATE] = "create",
	[FSB_OP_DELETE] = "delete",
	[FSB_OP_RENAME_FROM] = "rename-from",
	[FSB_OP_RENAME_TO] = "rename-to",
	[FSB_OP_MKDIR] = "mkdir",
	[FSB_OP_LINK] = "link",
	[FSB_OP_SYMLINK] = "symlink",
	[FSB_OP_CHMOD] = "chmod",
	[FSB_OP_CHOWN] = "chown",
	[FSB_OP_UTIMES] = "utimes",
	[FSB_OP_XATTR] = "xattr",
	[FSB_OP_TOUCH] = "touch",
};

const char *fsb_op_name(enum fsb_op op)
{
	if ((unsigned)op >= FSB_OP__COUNT)
		return "?";
	return op_names[op];
}

int fsb_op_parse(const char *name, enum fsb_op *out)
{
	for (int i = 0; i < FSB_OP__COUNT; i++) {
		if (strcmp(name, op_names[i]) == 0) {
			*out = (enum fsb_op)i;
			return 0;
		}
	}
	return -EINVAL;
}

bool fsb_op_modifies(enum fsb_op op)
{
	return op != FSB_OP_READ;
}

const char *fsb_file_type_name(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
		return "file";
	case S_IFDIR:
		return "dir";
	case S_IFLNK:
		return "symlink";
	case S_IFIFO:
		return "fifo";
	case S_IFSOCK:
		return "socket";
	case S_IFCHR:
		return "chardev";
	case S_IFBLK:
		return "blockdev";
	}
	return "unknown";
}

bool fsb_op_metadata_only(enum fsb_op op)
{
	return op == FSB_OP_CHMOD || op == FSB_OP_CHOWN || op == FSB_OP_UTIMES ||
	       op == FSB_OP_XATTR || op == FSB_OP_TOUCH;
}
