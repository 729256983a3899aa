/*
 * fsbc_errno.c — errno names as the core sends them ("EXDEV", from
 * strerrorname_np) back to numbers, so that a command sees the errno the
 * operation failed with: EXDEV must stay EXDEV for `mv` to copy and delete.
 */
/* Built by other projects' makefiles too (toybox, zsh): ask for what it
 * uses (MSG_CMSG_CLOEXEC, asprintf, PATH_MAX) whatever they define. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <string.h>

#include "fsbroker_client.h"

#define E(name) { #name, name }

static const struct {
	const char *name;
	int value;
} names[] = {
	/* POSIX */
	E(E2BIG), E(EACCES), E(EADDRINUSE), E(EADDRNOTAVAIL), E(EAFNOSUPPORT),
	E(EAGAIN), E(EALREADY), E(EBADF), E(EBADMSG), E(EBUSY), E(ECANCELED),
	E(ECHILD), E(ECONNABORTED), E(ECONNREFUSED), E(ECONNRESET), E(EDEADLK),
	E(EDESTADDRREQ), E(EDOM), E(EDQUOT), E(EEXIST), E(EFAULT), E(EFBIG),
	E(EHOSTUNREACH), E(EIDRM), E(EILSEQ), E(EINPROGRESS), E(EINTR), E(EINVAL),
	E(EIO), E(EISCONN), E(EISDIR), E(ELOOP), E(EMFILE), E(EMLINK), E(EMSGSIZE),
	E(EMULTIHOP), E(ENAMETOOLONG), E(ENETDOWN), E(ENETRESET), E(ENETUNREACH),
	E(ENFILE), E(ENOBUFS), E(ENODEV), E(ENOENT), E(ENOEXEC), E(ENOLCK),
	E(ENOLINK), E(ENOMEM), E(ENOMSG), E(ENOPROTOOPT), E(ENOSPC), E(ENOSYS),
	E(ENOTCONN), E(ENOTDIR), E(ENOTEMPTY), E(ENOTRECOVERABLE), E(ENOTSOCK),
	E(ENOTSUP), E(ENOTTY), E(ENXIO), E(EOPNOTSUPP), E(EOVERFLOW), E(EOWNERDEAD),
	E(EPERM), E(EPIPE), E(EPROTO), E(EPROTONOSUPPORT), E(EPROTOTYPE), E(ERANGE),
	E(EROFS), E(ESPIPE), E(ESRCH), E(ESTALE), E(ETIMEDOUT), E(ETXTBSY),
	E(EWOULDBLOCK), E(EXDEV),
#ifdef __linux__
	/* Linux */
	E(ENOTBLK), E(ECHRNG), E(EL2NSYNC), E(EL3HLT), E(EL3RST), E(ELNRNG),
	E(EUNATCH), E(ENOCSI), E(EL2HLT), E(EBADE), E(EBADR), E(EXFULL), E(ENOANO),
	E(EBADRQC), E(EBADSLT), E(EBFONT), E(ENOSTR), E(ENODATA), E(ETIME), E(ENOSR),
	E(ENONET), E(ENOPKG), E(EREMOTE), E(EADV), E(ESRMNT), E(ECOMM), E(EDOTDOT),
	E(ENOTUNIQ), E(EBADFD), E(EREMCHG), E(ELIBACC), E(ELIBBAD), E(ELIBSCN),
	E(ELIBMAX), E(ELIBEXEC), E(ERESTART), E(ESTRPIPE), E(EUSERS),
	E(ESOCKTNOSUPPORT), E(EPFNOSUPPORT), E(ESHUTDOWN), E(ETOOMANYREFS),
	E(EHOSTDOWN), E(EUCLEAN), E(ENOTNAM), E(ENAVAIL), E(EISNAM), E(EREMOTEIO),
	E(ENOMEDIUM), E(EMEDIUMTYPE), E(ENOKEY), E(EKEYEXPIRED), E(EKEYREVOKED),
	E(EKEYREJECTED), E(ERFKILL), E(EHWPOISON), E(EDEADLOCK),
#endif
};

int fsbc_errno_from_name(const char *name)
{
	if (name == NULL)
		return 0;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(names[i].name, name) == 0)
			return names[i].value;
	return 0;
}
