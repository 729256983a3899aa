/*
 * fsbc_open.c — open(2) through the broker: a text token request
 * (docs/protocol.md), with an open-spec for a write so that the core opens,
 * backs up and passes the very file it judged; without one for a read, which
 * the library opens itself when the core answers SANDBOX. Nothing that is
 * not an answer the protocol defines ever leads to an open.
 */
/* Built by other projects' makefiles too (toybox, zsh): ask for what it
 * uses (MSG_CMSG_CLOEXEC, asprintf, PATH_MAX) whatever they define. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "fsbc_internal.h"

/* Does opening with `flags` change anything? O_TRUNC does, even read-only
 * (Linux truncates on O_RDONLY|O_TRUNC); O_CREAT may create. */
bool fsbc_open_writes(int flags)
{
	return (flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC)) != 0;
}

/* "DENY", "DENY <ERRNO>", "DENY <ERRNO> <reason>": the errno (EACCES for
 * none or a name not known) and the reason. Any line starting with DENY is
 * a refusal (docs/protocol.md). */
static int refused(const char *line)
{
	const char *rest = line + 4, *sp;
	char name[32];
	int err = 0;

	while (*rest == ' ')
		rest++;
	sp = strchr(rest, ' ');
	if (sp == NULL)
		sp = rest + strlen(rest);
	if (sp > rest && (size_t)(sp - rest) < sizeof(name)) {
		memcpy(name, rest, (size_t)(sp - rest));
		name[sp - rest] = '\0';
		err = fsbc_errno_from_name(name);
	}
	if (err != 0) {
		rest = sp;
		while (*rest == ' ')
			rest++;
	} else {
		err = EACCES;
	}
	/* The reason, unless it only repeats strerror() (`DENY ENOENT No such
	 * file or directory`): the caller prints that text already. */
	if (*rest == '\0' || strcmp(rest, strerror(err)) == 0)
		return fsbc__fail(FSBC_REFUSED, err, NULL);
	return fsbc__fail(FSBC_REFUSED, err, "%s", rest);
}

/* The open the core allowed with SANDBOX: the library's own, of the very
 * path it asked about. Only ever for a read intent. */
static int open_sandboxed(const char *abs, int flags)
{
	int fd = open(abs, flags);

	if (fd < 0)
		return fsbc__fail(FSBC_LOCAL, errno, NULL);
	return fd;
}

int fsbc_open(const char *path, int flags, mode_t mode)
{
	char abs[PATH_MAX], *reply = NULL, *line = NULL;
	const struct fsbc_conf *c;
	bool writes = fsbc_open_writes(flags);
	int rc, fd = -1, n;

	fsbc__clear();
	/* Inside a sandbox that masks what a read may not see, a read is the
	 * kernel's, as for every other program there (fsbc_reads_local). */
	if (!writes && fsbc_reads_local()) {
		if ((fd = open(path, flags)) < 0)
			return fsbc__fail(FSBC_LOCAL, errno, NULL);
		return fd;
	}
	if ((rc = fsbc__path_absolute(path, abs, sizeof(abs))) < 0)
		return fsbc__fail(FSBC_LOCAL, -rc, NULL);
	/* The text form cannot carry these bytes (the JSON form can, but it
	 * has no open): refuse rather than send another name. */
	if (strpbrk(abs, "\t\n") != NULL)
		return fsbc__fail(FSBC_LOCAL, EINVAL,
				  "a name holding a tab or a newline cannot be opened through "
				  "the broker");

	fsbc__lock();
	c = fsbc__conf();
	if (c == NULL) {
		fsbc__unlock();
		return fsbc__fail(FSBC_LOCAL, ENOMEM, NULL);
	}
	if (c->socket == NULL) {
		fsbc__unlock();
		return fsbc__fail(FSBC_NO_BROKER, ENOTCONN,
				  "no broker configured: FSBROKER_SOCKET is not set");
	}
	if (c->session == NULL) {
		fsbc__unlock();
		return fsbc__fail(FSBC_UNREACHABLE, EIO,
				  "broker unavailable: FSBROKER_SESSION_ID is not set");
	}
	if (writes)
		n = asprintf(&line, "fsbroker.read-write\t%s\t%s\t%s\topen=%x:%o\n", abs,
			     c->session, c->tool_call != NULL ? c->tool_call : "",
			     (unsigned)flags, (flags & O_CREAT) ? (unsigned)(mode & 07777) : 0u);
	else
		n = asprintf(&line, "fsbroker.read\t%s\t%s\t%s\n", abs, c->session,
			     c->tool_call != NULL ? c->tool_call : "");
	if (n < 0) {
		fsbc__unlock();
		return fsbc__fail(FSBC_LOCAL, ENOMEM, NULL);
	}
	rc = fsbc__exchange(line, (size_t)n, &reply, &fd);
	free(line);
	if (rc < 0) {
		fsbc__unlock();
		return -1;
	}

	if (strcmp(reply, "FD") == 0 && fd >= 0 && writes) {
		fsbc__unlock();
		free(reply);
		/* It came close-on-exec (MSG_CMSG_CLOEXEC); open(2) without
		 * O_CLOEXEC gives an fd that survives exec, and a shell's
		 * redirection relies on that. */
		if (!(flags & O_CLOEXEC) && fcntl(fd, F_SETFD, 0) < 0) {
			int err = errno;

			close(fd);
			return fsbc__fail(FSBC_LOCAL, err, NULL);
		}
		return fd;
	}
	if (strcmp(reply, "SANDBOX") == 0 && fd < 0 && !writes) {
		fsbc__unlock();
		free(reply);
		return open_sandboxed(abs, flags);
	}
	if (fd >= 0)
		close(fd);
	if (strncmp(reply, "DENY", 4) == 0) {
		fsbc__unlock();
		rc = refused(reply);
		free(reply);
		return rc;
	}
	/* FD without a descriptor, SANDBOX for a write (we always send an
	 * open-spec), a token, anything else: not an answer to act on. */
	fsbc__drop_connection();
	fsbc__unlock();
	rc = fsbc__fail(FSBC_LOST, EIO, "broker connection lost: an unexpected reply '%.64s'",
			reply);
	free(reply);
	return rc;
}

int fsbc_mkstemp(char *template, int (*open_fn)(const char *path, int flags, mode_t mode))
{
	static const char letters[] =
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	size_t n = strlen(template);

	if (open_fn == NULL)
		open_fn = fsbc_open;
	if (n < 6 || strcmp(template + n - 6, "XXXXXX") != 0) {
		errno = EINVAL;
		return -1;
	}
	for (int tries = 0; tries < 100; tries++) {
		unsigned char rnd[6];
		int fd;

		if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
			break;
		for (int i = 0; i < 6; i++)
			template[n - 6 + i] = letters[rnd[i] % (sizeof(letters) - 1)];
		fd = open_fn(template, O_RDWR | O_CREAT | O_EXCL, 0600);
		if (fd >= 0)
			return fd;
		if (errno != EEXIST)
			break;
	}
	memcpy(template + n - 6, "XXXXXX", 6);
	return -1;
}
