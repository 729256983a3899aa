/*
 * init_main.c — fsbroker-init, the first process inside a sandbox (DESIGN
 * §7.2): it seals itself in (fds, no_new_privs, Landlock, the seccomp
 * filter), hands the filter's listener to the core over the socket the
 * runtime passed, and execs the command with the environment it was told
 * to keep. docs/runtime.md describes each step and the handover.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>

#include <cJSON.h>

#include "landlock.h"
#include "seccomp_filter.h"

/* Exit statuses of init's own failures, as env(1) and timeout(1) use them. */
#define EXIT_INIT 125		/* bad flags, the sandbox could not be set up */
#define EXIT_CANNOT_RUN 126	/* CMD exists but could not be executed */
#define EXIT_NOT_FOUND 127	/* CMD not found */

/* The handover line, and how long the core may take to answer it. */
#define SUPERVISE_LINE "{\"command\":\"Supervise\",\"routesUmask\":true}\n"
#define REPLY_MAX 4096
#define REPLY_TIMEOUT_S 30

extern char **environ;

static const char usage[] =
	"usage: fsbroker-init --socket-fd N [--writable DIR]... [--keep-env NAME]...\n"
	"                     [--setenv NAME=VALUE]... [--reads-broker] [--no-landlock]\n"
	"                     -- CMD [ARG]...\n"
	"\n"
	"Run inside the sandbox by `fsbroker run`: close every fd but 0, 1, 2 and N,\n"
	"apply Landlock (writes only beneath each DIR; not with --no-landlock, which\n"
	"fsbroker run --without-landlock passes), set no_new_privs, install\n"
	"the seccomp filter, hand its listener to the core over the connected Unix\n"
	"socket N, and exec CMD with only the kept and set environment variables.\n"
	"--keep-env takes a NAME or a PREFIX* (LC_*). Exit status: CMD's, or 125\n"
	"when the sandbox could not be set up, 126 when CMD could not run, 127 when\n"
	"it was not found.\n";

struct init_args {
	int sock;
	const char **writable;
	size_t n_writable;
	const char **keep_env;
	size_t n_keep;
	const char **set_env;
	size_t n_set;
	bool reads_broker;
	bool no_landlock;	/* fsbroker run --without-landlock */
	char **cmd;
};

/*
 * Every exit is _exit: nothing is buffered (messages go to stderr with one
 * write each), and once the filter is in place an atexit handler could
 * make a call the filter refuses.
 */
static void __attribute__((noreturn, format(printf, 2, 3))) die(int status, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (len < 0)
		len = 0;
	if ((size_t)len >= sizeof(msg))
		len = sizeof(msg) - 1;
	dprintf(STDERR_FILENO, "fsbroker-init: %.*s\n", len, msg);
	_exit(status);
}

/* "--name VALUE" or "--name=VALUE": the value, or NULL if arg is not --name. */
static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
	size_t len = strlen(name);
	const char *arg = argv[*i];

	if (strncmp(arg, name, len) != 0)
		return NULL;
	if (arg[len] == '=')
		return arg + len + 1;
	if (arg[len] != '\0')
		return NULL;
	if (*i + 1 >= argc)
		die(EXIT_INIT, "%s needs a value (see --help)", name);
	return argv[++*i];
}

static void parse_args(int argc, char **argv, struct init_args *a)
{
	const char *v;
	int i;

	memset(a, 0, sizeof(*a));
	a->sock = -1;
	/* At most argc of each list: plain arrays, never freed (we exec). */
	a->writable = calloc((size_t)argc, sizeof(*a->writable));
	a->keep_env = calloc((size_t)argc, sizeof(*a->keep_env));
	a->set_env = calloc((size_t)argc, sizeof(*a->set_env));
	if (!a->writable || !a->keep_env || !a->set_env)
		die(EXIT_INIT, "out of memory");

	for (i = 1; i < argc; i++) {
		const char *arg = argv[i];

		if (strcmp(arg, "--") == 0) {
			i++;
			break;
		}
		if (arg[0] != '-')
			break;
		if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
			if (write(STDOUT_FILENO, usage, sizeof(usage) - 1) < 0)
				_exit(EXIT_INIT);
			_exit(0);
		}
		if ((v = opt_value(argc, argv, &i, "--socket-fd"))) {
			char *end;
			long n;

			errno = 0;
			n = strtol(v, &end, 10);
			if (errno || end == v || *end || n < 0 || n > 65535)
				die(EXIT_INIT, "--socket-fd wants a descriptor number, not '%s'", v);
			a->sock = (int)n;
		} else if ((v = opt_value(argc, argv, &i, "--writable"))) {
			if (v[0] != '/')
				die(EXIT_INIT, "--writable wants an absolute path, not '%s'", v);
			a->writable[a->n_writable++] = v;
		} else if ((v = opt_value(argc, argv, &i, "--keep-env"))) {
			if (!*v || strchr(v, '='))
				die(EXIT_INIT, "--keep-env wants a variable name, not '%s'", v);
			a->keep_env[a->n_keep++] = v;
		} else if ((v = opt_value(argc, argv, &i, "--setenv"))) {
			const char *eq = strchr(v, '=');

			if (!eq || eq == v)
				die(EXIT_INIT, "--setenv wants NAME=VALUE, not '%s'", v);
			a->set_env[a->n_set++] = v;
		} else if (strcmp(arg, "--reads-broker") == 0) {
			a->reads_broker = true;
		} else if (strcmp(arg, "--no-landlock") == 0) {
			a->no_landlock = true;
		} else {
			die(EXIT_INIT, "unknown option '%s' (see --help)", arg);
		}
	}
	if (a->sock < 0)
		die(EXIT_INIT, "--socket-fd is required (see --help)");
	/* 0, 1 and 2 belong to the command. */
	if (a->sock <= STDERR_FILENO)
		die(EXIT_INIT, "--socket-fd must be 3 or more, not %d", a->sock);
	if (i >= argc)
		die(EXIT_INIT, "no command to run (see --help)");
	a->cmd = argv + i;
}

/* The fd the runtime passed must be a connected Unix stream socket. */
static void check_socket(int fd)
{
	struct stat st;
	int domain = 0, type = 0;
	socklen_t len = sizeof(int);

	if (fstat(fd, &st) != 0)
		die(EXIT_INIT, "--socket-fd %d: %s", fd, strerror(errno));
	if (!S_ISSOCK(st.st_mode) ||
	    getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 || domain != AF_UNIX ||
	    (len = sizeof(int), getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0) ||
	    type != SOCK_STREAM)
		die(EXIT_INIT, "--socket-fd %d is not a Unix stream socket", fd);
	/* Never inherited by the command, even if a step below fails to close it. */
	if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0)
		die(EXIT_INIT, "--socket-fd %d: %s", fd, strerror(errno));
}

/*
 * Close every inherited fd but 0-2 and the socket. This comes before
 * Landlock and the filter because neither looks at fds that are already
 * open: a writable fd on a host file left over from whatever started us
 * would be a way to write that nothing judges. Only the fds the broker
 * hands out (after their backup) and 0-2 may be writable inside.
 */
static void close_inherited(int keep)
{
	if (keep > STDERR_FILENO + 1 && close_range(STDERR_FILENO + 1, (unsigned)keep - 1, 0) != 0)
		goto fallback;
	if (close_range((unsigned)keep + 1, ~0U, 0) != 0)
		goto fallback;
	return;
fallback:
	/* close_range is Linux 5.9; older kernels get the slow way. */
	if (errno != ENOSYS)
		die(EXIT_INIT, "cannot close inherited descriptors: %s", strerror(errno));
	for (long fd = STDERR_FILENO + 1, max = sysconf(_SC_OPEN_MAX); fd < max; fd++)
		if (fd != keep)
			close((int)fd);
}

/*
 * A command started with 0, 1 or 2 closed would have the first file it
 * opens land there and be taken for its stdin or stdout. Fill the gaps
 * with /dev/null now, while opening it is still possible.
 */
static void ensure_stdio(void)
{
	for (int fd = STDIN_FILENO; fd <= STDERR_FILENO; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		int nul = open("/dev/null", O_RDWR);	/* inherited on purpose */

		if (nul < 0)
			die(EXIT_INIT, "cannot open /dev/null: %s", strerror(errno));
		if (nul != fd)
			die(EXIT_INIT, "descriptor %d is closed and cannot be filled", fd);
	}
}

static void apply_landlock(const struct init_args *a)
{
	struct fsb_landlock ll;
	char why[256];
	int err;

	if (fsb_landlock_probe(why, sizeof(why)) < 0)
		die(EXIT_INIT, "%s; the sandbox needs it and cannot start", why);
	err = fsb_landlock_restrict(a->writable, a->n_writable, &ll);
	if (err && ll.failed_path)
		die(EXIT_INIT, "cannot give write access beneath %s: %s", ll.failed_path,
		    strerror(-err));
	if (err)
		die(EXIT_INIT, "cannot apply the Landlock ruleset (ABI %d): %s", ll.abi,
		    strerror(-err));
}

static int install_filter(const struct init_args *a)
{
	struct fsb_filter_opts o = { .reads_broker = a->reads_broker };
	char why[256];
	int listener = -1, err;

	if (fsb_seccomp_probe(why, sizeof(why)) < 0)
		die(EXIT_INIT, "%s; the sandbox needs it and cannot start", why);
	err = fsb_seccomp_install(&o, &listener);
	if (err)
		die(EXIT_INIT, "cannot install the seccomp filter: %s", strerror(-err));
	return listener;
}

/*
 * Send the listener to the core with the Supervise line, in one sendmsg so
 * the fd cannot be separated from its line, and wait for the core's one
 * reply line. The command starts only once the core has said it
 * supervises: until then nobody would answer its first write.
 */
static void hand_over(int sock, int listener)
{
	static const char line[] = SUPERVISE_LINE;
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = { .iov_base = (void *)line, .iov_len = sizeof(line) - 1 };
	struct msghdr mh = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = ctl.buf,
		.msg_controllen = sizeof(ctl.buf),
	};
	struct timeval tv = { .tv_sec = REPLY_TIMEOUT_S };
	struct cmsghdr *cm;
	char reply[REPLY_MAX + 1];
	size_t got = 0;
	char *nl = NULL;
	cJSON *obj, *ok, *error;
	ssize_t n;

	memset(&ctl, 0, sizeof(ctl));
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &listener, sizeof(int));
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		die(EXIT_INIT, "cannot hand the seccomp listener to the core: %s", strerror(errno));
	if ((size_t)n != iov.iov_len)
		die(EXIT_INIT, "cannot hand the seccomp listener to the core: short write");

	if (setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0)
		die(EXIT_INIT, "cannot set a timeout on the core's socket: %s", strerror(errno));
	while (!nl) {
		if (got == REPLY_MAX)
			die(EXIT_INIT, "the core's reply to Supervise is longer than %d bytes", REPLY_MAX);
		/* Any fd sent along is discarded by the kernel: no control buffer. */
		n = recv(sock, reply + got, REPLY_MAX - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			die(EXIT_INIT, "the core did not answer Supervise within %d s", REPLY_TIMEOUT_S);
		if (n < 0)
			die(EXIT_INIT, "cannot read the core's reply to Supervise: %s", strerror(errno));
		if (n == 0)
			die(EXIT_INIT, "the core closed the connection without answering Supervise");
		nl = memchr(reply + got, '\n', (size_t)n);
		got += (size_t)n;
	}
	*nl = '\0';

	obj = cJSON_Parse(reply);
	ok = cJSON_GetObjectItemCaseSensitive(obj, "ok");
	if (!cJSON_IsTrue(ok)) {
		error = cJSON_GetObjectItemCaseSensitive(obj, "error");
		if (cJSON_IsString(error))
			die(EXIT_INIT, "the core refused to supervise this sandbox: %s",
			    error->valuestring);
		die(EXIT_INIT, "the core's reply to Supervise is not {\"ok\":true}: %.200s", reply);
	}
	cJSON_Delete(obj);
}

static bool name_matches(const char *entry, const char *pattern)
{
	size_t plen = strlen(pattern);
	const char *eq = strchr(entry, '=');
	size_t nlen = eq ? (size_t)(eq - entry) : strlen(entry);

	if (plen && pattern[plen - 1] == '*')
		return nlen >= plen - 1 && strncmp(entry, pattern, plen - 1) == 0;
	return nlen == plen && strncmp(entry, pattern, plen) == 0;
}

/*
 * The command's environment: the variables named by --keep-env that are
 * set, then each --setenv, which replaces a kept variable of the same
 * name. Nothing else from the runtime's environment gets in.
 */
static char **build_env(const struct init_args *a)
{
	size_t n_env = 0, n = 0;
	char **env;

	while (environ && environ[n_env])
		n_env++;
	env = calloc(n_env + a->n_set + 1, sizeof(*env));
	if (!env)
		die(EXIT_INIT, "out of memory");
	for (size_t i = 0; i < n_env; i++) {
		for (size_t k = 0; k < a->n_keep; k++) {
			if (strchr(environ[i], '=') && name_matches(environ[i], a->keep_env[k])) {
				env[n++] = environ[i];
				break;
			}
		}
	}
	for (size_t s = 0; s < a->n_set; s++) {
		size_t nlen = (size_t)(strchr(a->set_env[s], '=') - a->set_env[s]);
		size_t j;

		for (j = 0; j < n; j++)
			if (strncmp(env[j], a->set_env[s], nlen + 1) == 0)
				break;
		env[j] = (char *)a->set_env[s];
		if (j == n)
			n++;
	}
	env[n] = NULL;
	return env;
}

int main(int argc, char **argv)
{
	struct init_args a;
	int listener, err;

	parse_args(argc, argv, &a);
	check_socket(a.sock);
	close_inherited(a.sock);
	ensure_stdio();

	/*
	 * no_new_privs before Landlock: landlock_restrict_self(2) refuses
	 * without it (unless we hold CAP_SYS_ADMIN), and the seccomp filter
	 * needs it too. From here no exec can gain privileges (setuid bits,
	 * file capabilities), so nothing can shed the filter or the ruleset.
	 */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		die(EXIT_INIT, "cannot set no_new_privs: %s", strerror(errno));
	if (!a.no_landlock)
		apply_landlock(&a);

	/*
	 * init's own exec and library loads happened before this point; from
	 * here on every write of ours would wait for the core too, and init
	 * makes none.
	 */
	listener = install_filter(&a);
	hand_over(a.sock, listener);
	/*
	 * The core holds the listener now. Nothing in the sandbox may: a
	 * process with it could answer its own calls. The socket goes too:
	 * clients reach the broker through the scoped socket file.
	 */
	close(listener);
	close(a.sock);

	environ = build_env(&a);
	execvp(a.cmd[0], a.cmd);
	err = errno;
	die(err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN, "cannot run %s: %s", a.cmd[0],
	    strerror(err));
}
