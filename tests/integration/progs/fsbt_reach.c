/*
 * fsbt_reach.c — what a sandboxed command can reach of the host's private
 * places, run inside `fsbroker run` by tests/integration/test_run_bypass.c.
 * For each argument it prints one line:
 *
 *   open:PATH      "open PATH: ok" or the errno's name (O_RDONLY)
 *   list:PATH      "list PATH: <n> entries: a b c" or the errno's name
 *   connect:PATH   "connect PATH: ok" or the errno's name (a Unix stream socket)
 *   tcp:PORT       "tcp PORT: ok" or the errno's name (TCP to 127.0.0.1:PORT)
 *
 * Exit status: 0 when it ran, 2 on bad usage.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static const char *err_name(void)
{
	const char *name = strerrorname_np(errno);

	return name != NULL ? name : "E?";
}

static void try_open(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		printf("open %s: %s\n", path, err_name());
		return;
	}
	printf("open %s: ok\n", path);
	close(fd);
}

static void try_list(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	char names[2048] = "";
	int n = 0;

	if (d == NULL) {
		printf("list %s: %s\n", path, err_name());
		return;
	}
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		n++;
		if (strlen(names) + strlen(e->d_name) + 2 < sizeof(names)) {
			strcat(names, " ");
			strcat(names, e->d_name);
		}
	}
	closedir(d);
	printf("list %s: %d entries:%s\n", path, n, names);
}

static void try_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || strlen(path) >= sizeof(sa.sun_path)) {
		printf("connect %s: %s\n", path, fd < 0 ? err_name() : "ENAMETOOLONG");
		if (fd >= 0)
			close(fd);
		return;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		printf("connect %s: %s\n", path, err_name());
	else
		printf("connect %s: ok\n", path);
	close(fd);
}

static void try_tcp(const char *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	sa.sin_port = htons((unsigned short)atoi(port));
	if (fd < 0)
		printf("tcp %s: %s\n", port, err_name());
	else if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		printf("tcp %s: %s\n", port, err_name());
	else
		printf("tcp %s: ok\n", port);
	if (fd >= 0)
		close(fd);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: fsbt_reach open:PATH|list:PATH|connect:PATH|tcp:PORT...\n");
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		if (strncmp(argv[i], "open:", 5) == 0)
			try_open(argv[i] + 5);
		else if (strncmp(argv[i], "list:", 5) == 0)
			try_list(argv[i] + 5);
		else if (strncmp(argv[i], "connect:", 8) == 0)
			try_connect(argv[i] + 8);
		else if (strncmp(argv[i], "tcp:", 4) == 0)
			try_tcp(argv[i] + 4);
		else {
			fprintf(stderr, "fsbt_reach: bad argument %s\n", argv[i]);
			return 2;
		}
	}
	return 0;
}
