/*
 * chan.h — a line-framed, non-blocking channel over one or two fds on the
 * libuv loop: the client connections (a Unix socket, replies may carry an fd
 * in SCM_RIGHTS) and the control channel (stdin/stdout).
 *
 * Replies leave in the order they were queued; a reply with an fd goes out
 * with sendmsg once everything before it has drained (DESIGN §3.1).
 */
#ifndef FSB_CHAN_H
#define FSB_CHAN_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

struct fsb_chan;

#define FSB_CHAN_MAX_FDS 4

/* A complete line, without its newline, NUL-terminated at line[len]. When
 * the peer sent more than max_line bytes without a newline, `line` is NULL
 * and the over-long line starts at c->buf: the callback decides what to send
 * before it closes. */
typedef void (*fsb_chan_line_cb)(struct fsb_chan *c, char *line, size_t len);
typedef void (*fsb_chan_close_cb)(struct fsb_chan *c);

struct fsb_chan_out;

struct fsb_chan {
	uv_poll_t rpoll, wpoll;
	int rfd, wfd;
	bool is_socket;		/* recvmsg/sendmsg, fds in ancillary data */
	bool own_fds;		/* close rfd/wfd when the channel closes */
	int rfl, wfl;		/* file status flags to restore on fds we do not own */
	int rev, wev;		/* events each poll handle waits for */
	char *buf;
	size_t len, cap, max_line;
	struct fsb_chan_out *head, *tail;
	size_t queued;		/* bytes waiting to be sent */
	bool reading, closing, close_after_flush, in_callback, eof;
	bool held;		/* a request is being served off the loop */
	int handles_open;
	unsigned long fds_dropped;	/* fds the peer sent unasked */
	/* A channel that takes fds (the admin socket: Supervise) keeps those
	 * that came with the bytes of the next line, for its handler. */
	bool takes_fds;
	int fds[FSB_CHAN_MAX_FDS];
	int nfds;
	fsb_chan_line_cb on_line;
	fsb_chan_close_cb on_close;
	void *data;		/* the owner's */
};

/**
 * Start a channel reading `rfd` and writing `wfd` (the same fd for a
 * socket). Both are made non-blocking. Returns 0 or a libuv error.
 */
int fsb_chan_start(uv_loop_t *loop, struct fsb_chan *c, int rfd, int wfd,
		   bool is_socket, bool own_fds, size_t max_line,
		   fsb_chan_line_cb on_line, fsb_chan_close_cb on_close);

/**
 * Queue `len` bytes; when `fd` >= 0 it is sent with the first byte of this
 * chunk and the channel takes ownership of it (closed once sent, or when the
 * channel closes). Returns 0 or -ECONNRESET when the channel is closing.
 */
int fsb_chan_send(struct fsb_chan *c, const char *data, size_t len, int fd);

/**
 * Deliver no further line and read no more until fsb_chan_resume(): the
 * line just delivered is being served off the loop, and replies must keep
 * the order of the requests. An end of input meanwhile is kept for later.
 */
void fsb_chan_hold(struct fsb_chan *c);

/** Go on after fsb_chan_hold(): the lines already read are delivered. */
void fsb_chan_resume(struct fsb_chan *c);

/**
 * In a line callback of a channel with takes_fds set: take the first fd
 * that came with this line (the caller owns it), or -1. Fds a line's
 * handler does not take are closed after it.
 */
int fsb_chan_take_fd(struct fsb_chan *c);

/** Close once every queued byte is sent (or the peer is gone). */
void fsb_chan_close_after_flush(struct fsb_chan *c);

/** Close now, dropping what is queued. on_close runs when libuv is done. */
void fsb_chan_close(struct fsb_chan *c);

#endif
