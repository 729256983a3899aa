/*
 * seccomp_filter.h — the seccomp filter that fsbroker-init installs in the
 * sandbox (DESIGN §7.3): which calls wait for the core's supervisor (user
 * notification), which are refused outright, and the listener that results.
 * The table itself is in docs/runtime.md and at the top of seccomp_filter.c.
 */
#ifndef FSB_SECCOMP_FILTER_H
#define FSB_SECCOMP_FILTER_H

#include <stdbool.h>
#include <stddef.h>

#include <linux/filter.h>

/* The program is a couple of hundred instructions (the ioctl allowlist is
 * most of them); this bounds the builder, far below the kernel's 4096. */
#define FSB_SECCOMP_MAX_INSNS 512

/* The errno the filter answers for calls the sandbox may never make. */
#define FSB_SECCOMP_DENY_ERRNO EPERM

/** What varies between runs. */
struct fsb_filter_opts {
	/* The pack says reads = "broker": every open, read-only ones too,
	 * waits for the supervisor. */
	bool reads_broker;
};

/**
 * Whether the running kernel can host the filter: seccomp filters, user
 * notification (Linux 5.0) and SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
 * (Linux 5.19). Returns 0, or -EOPNOTSUPP with a sentence naming what is
 * missing in `why` (when `why` is not NULL).
 */
int fsb_seccomp_probe(char *why, size_t why_size);

/**
 * Build the filter program for `o` into `prog` (room for `cap`
 * instructions). Returns the number of instructions, -E2BIG when `cap` is
 * too small, or -EOPNOTSUPP on an architecture other than x86_64. Exposed
 * so that tests can run the program against chosen seccomp_data.
 */
int fsb_seccomp_build(const struct fsb_filter_opts *o, struct sock_filter *prog, size_t cap);

/**
 * Load the filter into the calling thread (and so into everything it execs)
 * with SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
 * and store the listener fd (O_CLOEXEC) in *listener. no_new_privs must be
 * set already (else -EACCES, as the kernel says). Returns 0 or -errno; the
 * filter cannot be removed again once loaded.
 */
int fsb_seccomp_install(const struct fsb_filter_opts *o, int *listener);

#endif
