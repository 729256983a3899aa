/*
 * session_name.c — the session a workspace's runs and backups belong to
 * when no --session names one (docs/runtime.md, "Sessions"): a readable id
 * made of the workspace's last path component and a hash of its real path,
 * and the workspace recorded in the session's state dir so that `fsbroker
 * backup` can find a project's session from inside it and show whose each
 * session is.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit.h"
#include "backup_read.h"
#include "session_name.h"

#define NAME_PART_MAX 48
#define HASH_PART 12
#define WORKSPACE_FILE "workspace"

static bool id_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	       (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';
}

int fsb_session_for_workspace(const char *real, char *out, size_t len)
{
	char hex[FSB_SHA256_HEX_LEN + 1], name[NAME_PART_MAX + 1];
	const char *base;
	size_t n = 0;

	if (real == NULL || real[0] != '/' || len < NAME_PART_MAX + HASH_PART + 2)
		return -EINVAL;
	fsb_sha256_hex(real, strlen(real), hex);
	if (hex[0] == '\0')
		return -ENOMEM;
	base = strrchr(real, '/') + 1;
	/* Bytes outside the id's alphabet (spaces, UTF-8) become '_': the
	 * hash, not the name, tells two workspaces apart. */
	for (; n < NAME_PART_MAX && base[n] != '\0'; n++)
		name[n] = id_char(base[n]) ? base[n] : '_';
	name[n] = '\0';
	if (n == 0)
		snprintf(name, sizeof(name), "root");
	else if (name[0] == '.')
		name[0] = '_';	/* an id never starts with '.' */
	snprintf(out, len, "%s-%.*s", name, HASH_PART, hex);
	return 0;
}

/* The session's directory below the state dir, never through a symlink. */
static int open_session_dir(const char *state_dir, const char *session)
{
	int sfd, fd, err;

	if (strchr(session, '/') != NULL || session[0] == '.' || session[0] == '\0')
		return -EINVAL;
	sfd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (sfd < 0)
		return -errno;
	fd = openat(sfd, "sessions", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		close(sfd);
		return err;
	}
	close(sfd);
	sfd = fd;
	fd = openat(sfd, session, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	err = fd < 0 ? -errno : fd;
	close(sfd);
	return err;
}

/* The workspace file below an open session dir, without its newline. */
static int read_workspace(int dirfd, char *out, size_t len)
{
	ssize_t n;
	int fd, err;

	fd = openat(dirfd, WORKSPACE_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, out, len - 1);
	err = n < 0 ? -errno : 0;
	close(fd);
	if (err)
		return err;
	out[n] = '\0';
	if (n > 0 && out[n - 1] == '\n')
		out[--n] = '\0';
	/* Only a whole absolute path counts: anything else is not ours. */
	if (n == 0 || out[0] != '/' || (size_t)n == len - 1 || memchr(out, '\0', (size_t)n))
		return -EINVAL;
	return 0;
}

int fsb_session_workspace(const char *state_dir, const char *session, char *out, size_t len)
{
	int dirfd, err;

	dirfd = open_session_dir(state_dir, session);
	if (dirfd < 0)
		return dirfd;
	err = read_workspace(dirfd, out, len);
	close(dirfd);
	return err;
}

int fsb_session_note_workspace(const char *state_dir, const char *session, const char *ws)
{
	char have[PATH_MAX + 2], tmp[64];
	size_t len = strlen(ws);
	int dirfd, fd = -1, err;
	ssize_t n;

	dirfd = open_session_dir(state_dir, session);
	if (dirfd < 0)
		return dirfd;
	if (read_workspace(dirfd, have, sizeof(have)) == 0 && strcmp(have, ws) == 0) {
		close(dirfd);
		return 0;
	}
	/* A name of this process's own, renamed over the old record: two
	 * runs that start at once each leave a whole file. */
	snprintf(tmp, sizeof(tmp), ".%s.%ld.tmp", WORKSPACE_FILE, (long)getpid());
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		err = -errno;
		goto fail;
	}
	n = write(fd, ws, len);
	if (n < 0 || (size_t)n != len || write(fd, "\n", 1) != 1) {
		err = n < 0 ? -errno : -EIO;
		goto fail;
	}
	if (fsync(fd) < 0 || renameat(dirfd, tmp, dirfd, WORKSPACE_FILE) < 0) {
		err = -errno;
		goto fail;
	}
	close(fd);
	close(dirfd);
	return 0;

fail:
	if (fd >= 0)
		close(fd);
	unlinkat(dirfd, tmp, 0);
	close(dirfd);
	return err;
}

/* `ws` is `dir` or below it. */
static bool within(const char *ws, const char *dir)
{
	size_t n = strlen(dir);

	if (strcmp(dir, "/") == 0)
		return true;
	return strncmp(ws, dir, n) == 0 && (ws[n] == '\0' || ws[n] == '/');
}

int fsb_session_find(const char *state_dir, const char *real, char *out, size_t len)
{
	char own[FSB_SESSION_NAME_LEN], rec[PATH_MAX + 2], dir[PATH_MAX + 16];
	size_t n = 0, best_len = 0, unrecorded = 0;
	const char *best = NULL, *lone = NULL;
	char **names = NULL;
	struct stat st;
	int rc;

	if (fsb_session_for_workspace(real, own, sizeof(own)) == 0) {
		snprintf(dir, sizeof(dir), "%s/sessions/%s", state_dir, own);
		if (lstat(dir, &st) == 0 && S_ISDIR(st.st_mode)) {
			snprintf(out, len, "%s", own);
			return 0;
		}
	}
	rc = fsb_backup_sessions(state_dir, &names, &n);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < n; i++) {
		if (fsb_session_workspace(state_dir, names[i], rec, sizeof(rec)) < 0) {
			unrecorded++;
			lone = names[i];
		} else if (within(real, rec) && strlen(rec) >= best_len) {
			best = names[i];
			best_len = strlen(rec);
		}
	}
	/* A session that records no workspace is a serve's (or older than
	 * the record): taken only when it is the state dir's one session. */
	if (best == NULL && n == 1 && unrecorded == 1)
		best = lone;
	if (best != NULL)
		snprintf(out, len, "%s", best);
	fsb_backup_sessions_free(names, n);
	return best != NULL ? 0 : -ENOENT;
}
