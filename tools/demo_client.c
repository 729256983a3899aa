/*
 * demo_client.c — a minimal fsbroker client for `make demo`: sends one
 * request line, prints the reply, and when the reply carries a granted fd,
 * writes the given text through it.
 *
 *   demo-client SOCKET REQUEST-LINE [TEXT]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	char reply[4096], line[8192];
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = { .iov_base = reply, .iov_len = sizeof(reply) - 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf) };
	ssize_t n;
	int fd, granted = -1;

	if (argc < 3) {
		fprintf(stderr, "usage: demo-client SOCKET REQUEST-LINE [TEXT]\n");
		return 2;
	}
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", argv[1]);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		perror("connect");
		return 1;
	}
	snprintf(line, sizeof(line), "%s\n", argv[2]);
	if (write(fd, line, strlen(line)) < 0) {
		perror("write");
		return 1;
	}
	n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
	if (n <= 0) {
		fprintf(stderr, "no reply\n");
		return 1;
	}
	reply[n] = '\0';
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
			memcpy(&granted, CMSG_DATA(cm), sizeof(int));
	printf("  <- %s", reply);
	if (granted >= 0 && argc > 3) {
		n = write(granted, argv[3], strlen(argv[3]));
		printf("     wrote %zd bytes through the granted fd %d\n", n, granted);
	}
	return 0;
}
