/*
 * landlock.h — the Landlock ruleset every sandbox gets (DESIGN §7.2): write
 * access only beneath the directories given (the private tmp), reading and
 * executing everywhere, and on ABI 6 and later no signals or abstract Unix
 * sockets across the sandbox's edge. The backstop for every call the seccomp
 * filter lets through natively.
 */
#ifndef FSB_LANDLOCK_H
#define FSB_LANDLOCK_H

#include <stdbool.h>
#include <stddef.h>

/* What fsb_landlock_restrict() applied, or where it stopped. */
struct fsb_landlock {
	int abi;			/* the running kernel's Landlock ABI */
	unsigned long long handled;	/* the file-system rights restricted */
	bool scoped;			/* signals and abstract sockets scoped */
	const char *failed_path;	/* the writable dir that failed, or NULL */
};

/**
 * The running kernel's Landlock ABI version (1 or more), or -EOPNOTSUPP
 * (built in but not enabled at boot) or -ENOSYS (not built in), with a
 * sentence saying so in `why` when it is not NULL.
 */
int fsb_landlock_probe(char *why, size_t why_size);

/**
 * Restrict the calling thread, and everything it execs or forks from now
 * on, to writing only beneath `writable[0..n)` (directories). The rights
 * restricted are those of the running ABI (1 to 6; a newer kernel gets the
 * ABI 6 set), so an older kernel restricts what it knows. no_new_privs
 * must be set already, unless the caller has CAP_SYS_ADMIN. Returns 0, or
 * -errno with the ABI (when known) and the failing path (when a path
 * failed) in *out. Cannot be undone.
 */
int fsb_landlock_restrict(const char *const *writable, size_t n, struct fsb_landlock *out);

#endif
