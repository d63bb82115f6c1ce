/*
 * snb-vhost: a vhost-user backend (the virtio-net device side) as a device
 * app; snb-vhost(1) says what it does.  This file: the socket, options,
 * the breath and counters.
 *
 * Sleeping: the runtime can only wait on descriptors registered once, but
 * ours come and go with connections, so we register one epoll descriptor
 * and put the listening socket, the connection and the transmit queue's
 * kick eventfd into it (the last added and removed by msg.c, which owns
 * the fd).  The receive queue runs with kicks off
 * (VRING_USED_F_NO_NOTIFY): when the frontend has no buffers for us we
 * poll briefly instead (app_wake_at).
 *
 * msg.c receives control requests without ever waiting for one, parses
 * and applies them; virtq.c moves frames.
 */
#define _GNU_SOURCE		/* accept4 */
#include <sys/epoll.h>
#include <sys/socket.h>

#include <err.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "forward.h"
#include "memguard.h"
#include "unixsock.h"
#include "vhost.h"

#define USAGE		"SOCKET [--hold] [--linger MS]"
#define MS		1000000ULL
#define POLL_BUF_NS	50000ULL	/* no frontend buffers: look again */
#define POLL_HOLD_NS	(1 * MS)	/* --hold without a frontend */
#define CONTROL_EVERY	64		/* busy breaths between socket checks */
#define MSGS_PER_LOOK	16		/* requests handled per socket event */

static struct unix_sock sock = { .fd = -1 };
static int hold, trace;
static uint32_t linger_ms = 500;

static int conn_fd = -1, ep_fd = -1;
static int started;
static struct vu_dev dev;
static struct vu_rx rx;			/* the request being received */
static struct vh_counters c;
static const char *const cnt_names[] = { "rx-packets", "rx-bytes",
    "tx-packets", "tx-bytes", "drop-no-frontend", "drop-oversize",
    "drop-short-buffer", "drop-unwired", "connects", "disconnects",
    "bad-messages", "ring-errors", "kicks", "calls", "calls-full",
    "memory-faults", NULL };
static struct port *out;
static struct fwd txf;			/* the "in" rings, taken in turn */
static unsigned tick;
static int last_idle;
static uint64_t last_busy_ns;

static void
logmsg(const char *fmt, const char *arg)
{
	fprintf(stderr, "snb-vhost: %s: ", sock.name);
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
}

static void
vhost_init(int argc, char **argv)
{
	static const struct app_opt opts[] = {
		APP_FLAG("hold", &hold),
		APP_NUM("linger", &linger_ms, 0, 3600000),
		APP_OPT_END
	};

	if (app_options(argc, argv, opts, APP_OPT_PERMUTE | APP_OPT_WORDS) !=
	    argc - 1)
		app_usage();
	unix_sock_addr(&sock, argv[argc - 1], 0);
	vu_init(&dev);
	trace = getenv("SNB_VHOST_TRACE") != NULL;
}

/* The listening socket, and the epoll set it is in while no one is connected. */
static void
start_listening(void)
{
	unix_sock_listen(&sock, SOCK_STREAM, 1);
	if ((ep_fd = epoll_create1(EPOLL_CLOEXEC)) == -1)
		err(1, "epoll_create1");
	epoll_set(ep_fd, EPOLL_CTL_ADD, sock.fd);
	app_wait_fd(ep_fd, POLLIN);
	dev.watch_ep = ep_fd;	/* the transmit queue's kicks */
	dev.watch_q = 1;
}

static void
drop_frontend(const char *why, const char *detail)
{
	if (conn_fd == -1)
		return;
	logmsg(why, detail);	/* before the reset: detail may be dev.err */
	epoll_set(ep_fd, EPOLL_CTL_DEL, conn_fd);
	closefd(&conn_fd);
	vu_rx_clear(&rx);
	vu_reset(&dev);
	(*c.disconnects)++;
	epoll_set(ep_fd, EPOLL_CTL_ADD, sock.fd);
}

static void
accept_frontend(void)
{
	int fd;

	/* Non-blocking: see vu_rx_read() in msg.h. */
	if ((fd = accept4(sock.fd, NULL, NULL, SOCK_CLOEXEC |
	    SOCK_NONBLOCK)) == -1) {
		if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
			logmsg("accept: %s", strerror(errno));
		return;
	}
	conn_fd = fd;	/* dev and rx are fresh: see drop_frontend */
	epoll_set(ep_fd, EPOLL_CTL_DEL, sock.fd);
	epoll_set(ep_fd, EPOLL_CTL_ADD, conn_fd);
	(*c.connects)++;
	logmsg("frontend connected%s", "");
}

/*
 * The header and the payload, which on the wire follow each other but in
 * struct vu_msg are 4 bytes apart (the payload is 8-byte aligned).  The
 * socket does not block: a frontend that leaves a whole socket buffer of
 * replies unread is not reading them, and is dropped.
 */
static int
send_reply(struct vu_msg *r, size_t len)
{
	struct iovec iov[2] = {
		{ r, VU_HDR_SIZE },
		{ r->p.bytes, len - VU_HDR_SIZE }
	};
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };

	return sendmsg(conn_fd, &mh, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -1;
}

/* What the frontend sent: a bounded number of requests, never waiting. */
static void
read_requests(void)
{
	static struct vu_msg reply;
	size_t rlen;
	int i, r, nfds;

	for (i = 0; i < MSGS_PER_LOOK && conn_fd >= 0; i++) {
		if ((r = vu_rx_read(&rx, conn_fd, &dev)) == VU_RX_MORE)
			return;
		if (r == VU_RX_CLOSED) {
			drop_frontend("frontend disconnected%s", "");
			return;
		}
		nfds = rx.nfds;
		rx.nfds = 0;	/* vu_handle owns them now */
		if (r == VU_RX_ERROR || vu_handle(&dev, &rx.m, rx.fds, nfds,
		    &reply, &rlen) == -1) {
			(*c.bad_messages)++;
			drop_frontend("bad message: %s; disconnecting",
			    dev.err);
			return;
		}
		if (trace)
			fprintf(stderr, "snb-vhost: %s: %s flags %#x size %u "
			    "(%#llx) fds %d -> reply %zu bytes\n", sock.name,
			    vu_request_name(rx.m.request), rx.m.flags,
			    rx.m.size, rx.m.size >= 8 ?
			    (unsigned long long)rx.m.p.u64 : 0ULL, nfds, rlen);
		vu_rx_clear(&rx);
		if (rlen && send_reply(&reply, rlen) == -1) {
			drop_frontend("reply: %s; disconnecting",
			    strerror(errno));
			return;
		}
		/* The receive queue never needs kicks (see the top). */
		if (vu_queue_ready(&dev, 0))
			vq_want_kicks(&dev.vq[0], 0);
	}
}

/* Socket and kick events, waiting up to timeout_ms for the first. */
static void
control(int timeout_ms)
{
	struct epoll_event evs[4];
	uint64_t v;
	int i, n;

	n = epoll_wait(ep_fd, evs, 4, timeout_ms);
	for (i = 0; i < n; i++) {
		int fd = evs[i].data.fd;

		if (fd == sock.fd && conn_fd == -1)
			accept_frontend();
		else if (fd == conn_fd && conn_fd >= 0)
			read_requests();
		else if (fd == dev.vq[1].kick && fd >= 0) {
			/* Non-blocking (msg.c made sure): a kick already
			 * read by an earlier event reads nothing. */
			if (read(fd, &v, sizeof(v)) == sizeof(v))
				*c.kicks += v;
		}
	}
}

/*
 * A region's file lost pages under us (libring/memguard.h): 1 and the frontend is
 * dropped.  Checked before a ring error is blamed on the frontend's
 * rings: the zero pages that replaced its memory read as nonsense.
 */
static int
memory_lost(void)
{
	if (!dev.mem_lost || conn_fd < 0)
		return 0;
	(*c.memory_faults)++;
	drop_frontend("guest memory lost (its file shrank or lost "
	    "pages)%s; disconnecting", "");
	return 1;
}

static void
ring_error(void)
{
	if (memory_lost())
		return;
	(*c.ring_errors)++;
	drop_frontend("%s; disconnecting", dev.err);
}

/*
 * A burst of 'in' to the frontend's receive queue (fwd_take releases what
 * it took); *ready: the frontend can take it.
 */
static uint32_t
to_frontend(void *ready, int from, struct ring *r, uint32_t n)
{
	int k;

	if (!*(int *)ready) {
		if (hold) {
			app_wake_at(app_now_ns() + POLL_HOLD_NS);
			return 0;
		}
		*c.drop_no_frontend += n;
		return n;
	}
	if ((k = vq_to_frontend(&dev, r, n, &c)) == -1) {
		ring_error();
		*(int *)ready = 0;
		return 0;
	}
	if ((uint32_t)k < n)
		app_wake_at(app_now_ns() + POLL_BUF_NS);
	return (uint32_t)k;
}

/* Frames from the frontend's transmit queue to 'out'. */
static uint32_t
from_frontend(int may_wait)
{
	struct vu_vring *vq = &dev.vq[1];
	uint32_t room = APP_BURST;
	int k;

	if (conn_fd < 0 || !vu_queue_ready(&dev, 1))
		return 0;
	if (out) {
		room = app_room(out, APP_BURST);
		if (room == 0 && may_wait && vq_pending(vq)) {
			/* Frames wait in the frontend's queue: the kick
			 * would not tell us about room. */
			ring_wait(&out->rings[0], 1);
			room = app_room(out, APP_BURST);
		}
		if (room == 0)
			return 0;
	}
	if ((k = vq_from_frontend(&dev, out ? &out->rings[0] : NULL,
	    room, &c)) == -1) {
		ring_error();
		return 0;
	}
	return (uint32_t)k;
}

static int
vhost_breathe(void)
{
	struct vu_vring *txq = &dev.vq[1];
	uint32_t n = 0;
	int ready;

	if (!started) {
		started = 1;
		fwd_init(&txf, (const char *const[]){ "in", NULL }, NULL);
		out = app_port("out");
		if (out && out->nrings == 0)
			out = NULL;
		app_counters((uint64_t **)&c, cnt_names);
		start_listening();
		if (memguard_init() == -1)
			err(1, "sigaction SIGBUS");
	}
	app_wake_at(0);
	if (last_idle || ++tick % CONTROL_EVERY == 0)
		control(0);
	ready = conn_fd >= 0 && vu_queue_ready(&dev, 0);
	n += (uint32_t)fwd_take(&txf, to_frontend, &ready);
	n += from_frontend(n == 0);
	if (memory_lost())
		return 1;
	last_idle = n == 0;
	if (n)
		last_busy_ns = app_now_ns();
	if (conn_fd >= 0 && vu_queue_ready(&dev, 1)) {
		/* Busy: poll, no kicks.  Idle: kicks on, then one more look
		 * for a frame that came before they were. */
		if (n)
			vq_want_kicks(txq, 0);
		else if (vq_want_kicks(txq, 1) && (out == NULL ||
		    app_room(out, 1)))
			return 1;
	}
	/*
	 * End of input: the frontend may still be sending back what we gave
	 * it (a loop through a VM), so linger while it does.
	 */
	if (n == 0 && app_inputs_done() && conn_fd >= 0 &&
	    app_now_ns() - last_busy_ns < (uint64_t)linger_ms * MS) {
		control(1);
		return 1;
	}
	return (int)n;
}

static void
vhost_stop(int eof)
{
	if (!started)
		return;
	closefd(&conn_fd);
	vu_rx_clear(&rx);
	vu_reset(&dev);
	unix_sock_close(&sock);
}

static const struct app_desc desc = {
	.name = "vhost",
	.usage = USAGE,
	.summary = "A vhost-user backend on SOCKET: frames the frontend sends "
	    "go to 'out'; the packets of 'in' are delivered to it.",
	.device = 1,
	.ports = app_device_ports,
	.init = vhost_init,
	.breathe = vhost_breathe,
	.stop = vhost_stop,
};

APP_MAIN(desc)
