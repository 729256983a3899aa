/*
 * chan.c — line-framed channel with in-order replies and fd passing
 * (see chan.h). Raw non-blocking fds under uv_poll rather than uv_pipe:
 * libuv 1.44's uv_write2 passes only stream handles, and reading with
 * recvmsg lets us see, and close at once, fds a client sends unasked.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "chan.h"
#include "log.h"

#define READ_CHUNK 16384
#define QUEUE_HIGH_WATER (1u << 20)
#define MAX_FDS_PER_READ 16

struct fsb_chan_out {
	struct fsb_chan_out *next;
	size_t len, off;
	int fd;
	char data[];
};

static void update_events(struct fsb_chan *c);
static void on_poll(uv_poll_t *h, int status, int events);
static void on_handle_closed(uv_handle_t *h);
static void close_pending_fds(struct fsb_chan *c);

static void restore_flags(struct fsb_chan *c)
{
	if (c->own_fds)
		return;
	if (c->rfl >= 0)
		fcntl(c->rfd, F_SETFL, c->rfl);
	if (c->wfl >= 0 && c->wfd != c->rfd)
		fcntl(c->wfd, F_SETFL, c->wfl);
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

int fsb_chan_start(uv_loop_t *loop, struct fsb_chan *c, int rfd, int wfd,
		   bool is_socket, bool own_fds, size_t max_line,
		   fsb_chan_line_cb on_line, fsb_chan_close_cb on_close)
{
	int err;

	memset(c, 0, sizeof(*c));
	c->rfd = rfd;
	c->wfd = wfd;
	c->is_socket = is_socket;
	c->own_fds = own_fds;
	c->max_line = max_line;
	c->on_line = on_line;
	c->on_close = on_close;
	/* stdin/stdout may share their open file description with the parent
	 * (a terminal, say): give back the flags we found when we are done. */
	c->rfl = fcntl(rfd, F_GETFL);
	c->wfl = fcntl(wfd, F_GETFL);
	if ((err = set_nonblock(rfd)) < 0 || (err = set_nonblock(wfd)) < 0 ||
	    (err = uv_poll_init(loop, &c->rpoll, rfd)) < 0) {
		restore_flags(c);
		return err;
	}
	c->rpoll.data = c;
	c->handles_open = 1;
	if (wfd != rfd) {
		err = uv_poll_init(loop, &c->wpoll, wfd);
		if (err < 0) {
			/* The read side is already a handle: close it the usual way.
			 * Not through fsb_chan_close(), which would also close the
			 * write handle that was never initialised. */
			c->closing = true;
			uv_close((uv_handle_t *)&c->rpoll, on_handle_closed);
			return err;
		}
		c->wpoll.data = c;
		c->handles_open = 2;
	}
	c->reading = true;
	update_events(c);
	return 0;
}

static void poll_set(uv_poll_t *h, int *cur, int want)
{
	if (*cur == want)
		return;
	*cur = want;
	if (want == 0)
		uv_poll_stop(h);
	else
		uv_poll_start(h, want, on_poll);
}

static void update_events(struct fsb_chan *c)
{
	int r = c->reading && !c->held && !c->closing ? UV_READABLE : 0;
	int w = c->head != NULL && !c->closing ? UV_WRITABLE : 0;

	if (c->closing)
		return;
	if (c->wfd == c->rfd) {
		poll_set(&c->rpoll, &c->rev, r | w);
	} else {
		poll_set(&c->rpoll, &c->rev, r);
		poll_set(&c->wpoll, &c->wev, w);
	}
}

static void deliver_lines(struct fsb_chan *c);

static void free_queue(struct fsb_chan *c)
{
	struct fsb_chan_out *o, *next;

	for (o = c->head; o != NULL; o = next) {
		next = o->next;
		if (o->fd >= 0)
			close(o->fd);
		free(o);
	}
	c->head = c->tail = NULL;
	c->queued = 0;
}

static void on_handle_closed(uv_handle_t *h)
{
	struct fsb_chan *c = h->data;

	if (--c->handles_open > 0)
		return;
	free_queue(c);
	close_pending_fds(c);
	if (c->own_fds) {
		close(c->rfd);
		if (c->wfd != c->rfd)
			close(c->wfd);
	} else {
		restore_flags(c);
	}
	free(c->buf);
	c->buf = NULL;
	if (c->on_close != NULL)
		c->on_close(c);
}

void fsb_chan_close(struct fsb_chan *c)
{
	if (c->handles_open == 0 || uv_is_closing((uv_handle_t *)&c->rpoll))
		return;
	c->closing = true;
	uv_close((uv_handle_t *)&c->rpoll, on_handle_closed);
	if (c->wfd != c->rfd)
		uv_close((uv_handle_t *)&c->wpoll, on_handle_closed);
}

/* Send what is queued until the kernel pushes back. 0, or -1 when the peer
 * is gone (the channel is then closing). */
static int flush(struct fsb_chan *c)
{
	while (c->head != NULL) {
		struct fsb_chan_out *o = c->head;
		const char *p = o->data + o->off;
		size_t left = o->len - o->off;
		ssize_t n;

		if (c->is_socket) {
			struct iovec iov = { .iov_base = (void *)p, .iov_len = left };
			struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
			union {
				struct cmsghdr h;
				char buf[CMSG_SPACE(sizeof(int))];
			} ctl;

			if (o->fd >= 0) {
				memset(&ctl, 0, sizeof(ctl));
				msg.msg_control = ctl.buf;
				msg.msg_controllen = sizeof(ctl.buf);
				struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
				cm->cmsg_level = SOL_SOCKET;
				cm->cmsg_type = SCM_RIGHTS;
				cm->cmsg_len = CMSG_LEN(sizeof(int));
				memcpy(CMSG_DATA(cm), &o->fd, sizeof(int));
			}
			n = sendmsg(c->wfd, &msg, MSG_NOSIGNAL);
		} else {
			n = write(c->wfd, p, left);
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			fsb_debug("peer gone while sending: %s", strerror(errno));
			free_queue(c);
			fsb_chan_close(c);
			return -1;
		}
		/* The fd travelled with the first byte; the peer has its copy. */
		if (o->fd >= 0) {
			close(o->fd);
			o->fd = -1;
		}
		o->off += (size_t)n;
		c->queued -= (size_t)n;
		if (o->off < o->len)
			break;
		c->head = o->next;
		if (c->head == NULL)
			c->tail = NULL;
		free(o);
	}
	if (c->head == NULL && c->close_after_flush) {
		fsb_chan_close(c);
		return -1;
	}
	if (!c->reading && !c->eof && !c->close_after_flush && c->queued < QUEUE_HIGH_WATER / 2)
		c->reading = true;
	update_events(c);
	return 0;
}

int fsb_chan_send(struct fsb_chan *c, const char *data, size_t len, int fd)
{
	struct fsb_chan_out *o;

	if (c->closing) {
		if (fd >= 0)
			close(fd);
		return -ECONNRESET;
	}
	o = malloc(sizeof(*o) + len);
	if (o == NULL) {
		if (fd >= 0)
			close(fd);
		return -ENOMEM;
	}
	o->next = NULL;
	o->len = len;
	o->off = 0;
	o->fd = fd;
	memcpy(o->data, data, len);
	if (c->tail != NULL)
		c->tail->next = o;
	else
		c->head = o;
	c->tail = o;
	c->queued += len;
	/* A client that sends faster than it reads waits until it reads. */
	if (c->queued > QUEUE_HIGH_WATER)
		c->reading = false;
	/* Inside the line callback the flush happens once the batch is done. */
	if (!c->in_callback)
		flush(c);
	return 0;
}

void fsb_chan_hold(struct fsb_chan *c)
{
	c->held = true;
	update_events(c);
}

void fsb_chan_resume(struct fsb_chan *c)
{
	if (c->closing)
		return;
	c->held = false;
	/* Inside the line callback, its loop goes on by itself. */
	if (c->in_callback)
		return;
	deliver_lines(c);
	if (!c->closing && !c->held && c->eof && !c->close_after_flush)
		fsb_chan_close_after_flush(c);
	else if (!c->closing)
		flush(c);
}

void fsb_chan_close_after_flush(struct fsb_chan *c)
{
	c->close_after_flush = true;
	c->reading = false;
	if (!c->in_callback)
		flush(c);
}

static void close_pending_fds(struct fsb_chan *c)
{
	for (int i = 0; i < c->nfds; i++)
		close(c->fds[i]);
	c->nfds = 0;
}

int fsb_chan_take_fd(struct fsb_chan *c)
{
	int fd;

	if (c->nfds == 0)
		return -1;
	fd = c->fds[0];
	memmove(c->fds, c->fds + 1, (size_t)(c->nfds - 1) * sizeof(c->fds[0]));
	c->nfds--;
	return fd;
}

/* Keep the fds in the ancillary data for the line they came with, on a
 * channel that takes them (up to FSB_CHAN_MAX_FDS); close every other. */
static void drop_fds(struct fsb_chan *c, struct msghdr *msg)
{
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(msg); cm != NULL; cm = CMSG_NXTHDR(msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		size_t n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (c->takes_fds && c->nfds < FSB_CHAN_MAX_FDS) {
				c->fds[c->nfds++] = fd;
				continue;
			}
			close(fd);
			c->fds_dropped++;
		}
	}
}

static ssize_t read_some(struct fsb_chan *c)
{
	char *p = c->buf + c->len;
	size_t room = c->cap - c->len;
	ssize_t n;

	if (!c->is_socket) {
		do
			n = read(c->rfd, p, room);
		while (n < 0 && errno == EINTR);
		return n;
	}
	struct iovec iov = { .iov_base = p, .iov_len = room };
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * MAX_FDS_PER_READ)];
	} ctl;
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf),
	};
	do
		n = recvmsg(c->rfd, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n >= 0 && msg.msg_controllen > 0) {
		/* Logged once per connection: a client must not be able to flood
		 * the log. */
		if (c->fds_dropped == 0 && !c->takes_fds)
			fsb_warn("closing file descriptors a client sends unasked");
		drop_fds(c, &msg);
	}
	return n;
}

/* Hand every complete line to the owner; keep the rest. */
static void deliver_lines(struct fsb_chan *c)
{
	size_t start = 0;
	char *nl;

	c->in_callback = true;
	while (!c->closing && !c->close_after_flush && !c->held &&
	       (nl = memchr(c->buf + start, '\n', c->len - start)) != NULL) {
		size_t len = (size_t)(nl - (c->buf + start));

		*nl = '\0';
		if (len > c->max_line) {
			/* The owner looks at the start of the over-long line (to
			 * answer in its format): move it to the buffer's start. */
			*nl = '\n';
			memmove(c->buf, c->buf + start, c->len - start);
			c->len -= start;
			start = 0;
			c->on_line(c, NULL, 0);
			break;
		}
		c->on_line(c, c->buf + start, len);
		/* What the line's handler did not take nobody asked for. */
		close_pending_fds(c);
		start += len + 1;
	}
	c->in_callback = false;
	if (start > 0) {
		memmove(c->buf, c->buf + start, c->len - start);
		c->len -= start;
	}
	if (!c->closing && !c->close_after_flush && !c->held && c->len > c->max_line) {
		c->in_callback = true;
		c->on_line(c, NULL, 0);
		c->in_callback = false;
	}
}

static void on_readable(struct fsb_chan *c)
{
	ssize_t n;

	if (c->cap - c->len < READ_CHUNK) {
		size_t cap = c->cap ? c->cap * 2 : READ_CHUNK * 2;
		char *b = realloc(c->buf, cap + 1);

		if (b == NULL) {
			fsb_chan_close(c);
			return;
		}
		c->buf = b;
		c->cap = cap;
	}
	n = read_some(c);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return;
		fsb_chan_close(c);
		return;
	}
	if (n == 0) {
		/* The peer is done sending: answer what we have, then close. */
		c->eof = true;
		c->reading = false;
		deliver_lines(c);
		/* A request served off the loop answers first (fsb_chan_resume). */
		if (!c->closing && !c->held)
			fsb_chan_close_after_flush(c);
		return;
	}
	c->len += (size_t)n;
	deliver_lines(c);
	if (!c->closing)
		flush(c);
}

static void on_poll(uv_poll_t *h, int status, int events)
{
	struct fsb_chan *c = h->data;

	if (c->closing)
		return;
	if (status < 0) {
		fsb_chan_close(c);
		return;
	}
	if (events & UV_WRITABLE) {
		if (flush(c) < 0)
			return;
	}
	if ((events & (UV_READABLE | UV_DISCONNECT)) && c->reading)
		on_readable(c);
}
