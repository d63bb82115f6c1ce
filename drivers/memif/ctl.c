/*
 * ctl.c: snb-memif's control plane: the listening socket (master) or the
 * reconnecting one (slave), the handshake of msg.c driven over it, with
 * file descriptors passed with SCM_RIGHTS; mem.c sets up the memory the
 * handshake describes.  A violation ends the connection, never the
 * process.
 */
#define _GNU_SOURCE
#include <sys/epoll.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "memif.h"

struct memif_conn conn = { .fd = -1 };
int epfd = -1;
int ever_up;
uint64_t last_ctl;
static uint64_t retry_at, retry_ns = RETRY_MIN_NS;

/* --- control socket --- */

static int
ctl_send(int fd, const struct memif_msg *m, int attach)
{
	unsigned char buf[MEMIF_MSG_SIZE];
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	memif_msg_encode(m, buf);
	if (attach >= 0) {
		memset(&ctl, 0, sizeof(ctl));
		ctl.h = (struct cmsghdr){ .cmsg_len = CMSG_LEN(sizeof(int)),
		    .cmsg_level = SOL_SOCKET, .cmsg_type = SCM_RIGHTS };
		memcpy(CMSG_DATA(&ctl.h), &attach, sizeof(int));
		mh.msg_control = ctl.b;
		mh.msg_controllen = sizeof(ctl.b);
	}
	return sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) ==
	    (ssize_t)sizeof(buf) ? 0 : -1;
}

/* The slave's next connection attempt, a little later each time. */
static void
backoff(void)
{
	retry_at = app_now_ns() + retry_ns;
	if (retry_ns < RETRY_MAX_NS)
		retry_ns *= 2;
}

/*
 * End the connection: tell the peer why when we are the one ending it
 * (reason != NULL), log one line, count, and go back to listening (master)
 * or to retrying (slave).
 */
void
conn_down(const char *reason, const char *fmt, ...)
{
	struct memif_msg m;
	char why[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (conn.fd >= 0 && reason) {
		memif_msg_disconnect(&m, reason);
		(void)ctl_send(conn.fd, &m, -1);
	}
	fprintf(stderr, "snb-memif: %s: %s\n", sock.name, why);
	if (conn.state == C_UP)
		(*cnt.disconnects)++;
	epoll_set(epfd, EPOLL_CTL_DEL, conn.fd);
	closefd(&conn.fd);
	release_memory();
	conn.state = C_DOWN;
	backoff();
}

/*
 * The peer's memory lost pages under us (the SIGBUS guard replaced the
 * region with zero pages): 1, and the connection is ended, counted.
 * Asked first wherever the peer would be blamed for what we read, since
 * zeros where its rings were read as nonsense.
 */
int
memory_lost(void)
{
	if (!conn.mem_lost || conn.fd < 0)
		return 0;
	(*cnt.memory_faults)++;
	conn_down("Shared memory lost", "shared memory lost (a region's "
	    "file shrank or lost pages); disconnecting");
	return 1;
}

/* A protocol violation: DISCONNECT with the reason, counted. */
static void
bad_message(const char *why)
{
	if (memory_lost())
		return;
	(*cnt.bad_messages)++;
	conn_down(why, "bad message from peer: %s; disconnecting", why);
}

/* The same for what the data path found in shared memory. */
void
bad_ring(const char *fmt, ...)
{
	char why[MEMIF_REASON_LEN];
	va_list ap;

	if (memory_lost())
		return;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	(*cnt.bad_descriptors)++;
	conn_down(why, "bad ring from peer: %s; disconnecting", why);
}

/* Slave: set-up message number step after INIT (see msg.h). */
static int
slave_send(unsigned step)
{
	struct memif_msg m = { 0 };
	struct mring *r;

	switch (step) {
	case 1:
		m.type = MEMIF_MSG_ADD_REGION;
		m.add_region.size = conn.reg[0].size;
		return ctl_send(conn.fd, &m, conn.reg[0].fd);
	case 2:
	case 3:
		r = step == 2 ? &conn.tx[0] : &conn.rx[0];
		m.type = MEMIF_MSG_ADD_RING;
		m.add_ring.flags = step == 2 ? MEMIF_RING_FLAG_S2M : 0;
		m.add_ring.offset = (uint32_t)(r->base - conn.reg[0].addr);
		m.add_ring.log2_ring_size = (uint8_t)__builtin_ctz(r->size);
		return ctl_send(conn.fd, &m, r->efd);
	default:
		m.type = MEMIF_MSG_CONNECT;
		snprintf(m.connect.name, sizeof(m.connect.name), "snb-memif");
		return ctl_send(conn.fd, &m, -1);
	}
}

static void
went_up(void)
{
	conn.state = C_UP;
	ever_up = 1;
	retry_ns = RETRY_MIN_NS;
	(*cnt.connects)++;
	idle_breaths = 0;
	fprintf(stderr, "snb-memif: %s: connected to %s (%s, id %u, %u-slot "
	    "rings)\n", sock.name, conn.s.peer_name[0] ? conn.s.peer_name : "peer",
	    master ? "we are master" : "we are slave", id, conn.rx[0].size);
}

/* --- the handshake --- */

/* Do what msg.c's session says a message calls for (master or slave). */
static void
handle(const struct memif_msg *m, int *fd)
{
	struct memif_msg reply = { .type = MEMIF_MSG_ACK };
	char why[MEMIF_REASON_LEN];
	const char *what = "";		/* for a failed send's message */

	if (m->type == MEMIF_MSG_DISCONNECT) {
		conn_down(NULL, "peer disconnected: %s", m->disconnect.reason);
		return;
	}
	switch (master ? memif_master_step(&conn.s, m, why, sizeof(why)) :
	    memif_slave_step(&conn.s, m, why, sizeof(why))) {
	case MEMIF_A_NONE:
		return;
	case MEMIF_A_ACK:
		break;
	case MEMIF_A_ACK_REGION:
		if (*fd < 0)
			snprintf(why, sizeof(why), "Missing region fd");
		else if (map_region(conn.s.nregions - 1, *fd, why,
		    sizeof(why)) == 0) {
			*fd = -1;	/* kept */
			break;
		}
		bad_message(why);
		return;
	case MEMIF_A_ACK_RING:
		if (*fd >= 0 && !fd_is_eventfd(*fd)) {
			bad_message("ring interrupt fd is not an eventfd");
			return;
		}
		/* s2m rings are the ones we receive on. */
		if (m->add_ring.flags & MEMIF_RING_FLAG_S2M)
			conn.rx[conn.s.ns2m - 1].efd = *fd;
		else
			conn.tx[conn.s.nm2s - 1].efd = *fd;
		*fd = -1;
		break;
	case MEMIF_A_CONNECT:
		if (master_connect(why, sizeof(why)) == -1) {
			bad_message(why);
			return;
		}
		reply.type = MEMIF_MSG_CONNECTED;
		snprintf(reply.connect.name, sizeof(reply.connect.name),
		    "snb-memif");
		what = " CONNECTED";
		break;
	case MEMIF_A_SEND_INIT:
		if (slave_memory(conn.s.log2, why, sizeof(why)) == -1) {
			conn_down("Client error", "%s", why);
			return;
		}
		reply.type = MEMIF_MSG_INIT;
		reply.init.version = MEMIF_VERSION;
		reply.init.id = id;
		reply.init.mode = MEMIF_MODE_ETHERNET;
		memcpy(reply.init.secret, secret, sizeof(secret));
		snprintf(reply.init.name, sizeof(reply.init.name), "snb-memif");
		what = " INIT";
		break;
	case MEMIF_A_SEND_NEXT:
		if (slave_send(conn.s.step) == -1)
			conn_down(NULL, "send: %s", strerror(errno));
		return;
	case MEMIF_A_UP:
		/* Only now: the master resets the rings when it connects. */
		conn.rx[0].posted = (uint16_t)conn.rx[0].size;
		atomic_store_explicit(r_head(&conn.rx[0]), conn.rx[0].posted,
		    memory_order_release);
		went_up();
		return;
	default:
		bad_message(why);
		return;
	}
	if (ctl_send(conn.fd, &reply, -1) == -1)
		conn_down(NULL, "send%s: %s", what, strerror(errno));
	else if (reply.type == MEMIF_MSG_CONNECTED)
		went_up();
}

/* Read every message waiting on the control socket. */
static void
ctl_read(void)
{
	unsigned char buf[MEMIF_MSG_SIZE + 1];
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(4 * sizeof(int))];
	} ctl;
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr mh;
	struct memif_msg m;
	char why[MEMIF_REASON_LEN];
	int nfd, fd, r;
	ssize_t n;

	while (conn.fd >= 0) {
		mh = (struct msghdr){ .msg_iov = &iov, .msg_iovlen = 1,
		    .msg_control = ctl.b, .msg_controllen = sizeof(ctl.b) };
		if ((n = recvmsg(conn.fd, &mh, MSG_DONTWAIT |
		    MSG_CMSG_CLOEXEC)) == -1) {
			if (errno != EAGAIN && errno != EINTR)
				conn_down(NULL, "control socket: %s",
				    strerror(errno));
			return;
		}
		if (n == 0) {
			conn_down(NULL, "peer closed the control socket");
			return;
		}
		/* A message carries one descriptor at most. */
		fd = -1;
		nfd = 0;
		r = unix_take_fds(&mh, &fd, &nfd, 1);
		if (mh.msg_flags & MSG_TRUNC)
			r = memif_why(why, sizeof(why), "Invalid message size");
		else if (r)
			r = memif_why(why, sizeof(why), "too many descriptors");
		else if (n != MEMIF_MSG_SIZE)
			r = memif_why(why, sizeof(why), "Invalid message size "
			    "%zd", n);
		else if ((r = memif_msg_decode(buf, (size_t)n, &m, why,
		    sizeof(why))) == 0)
			handle(&m, &fd);
		/* Refused, or attached to a message that takes none. */
		if (fd >= 0)
			close(fd);
		if (r == -1) {
			bad_message(why);
			return;
		}
	}
}

/* A new connection on fd: the handshake must end within HANDSHAKE_NS. */
static void
conn_setup(int fd)
{
	conn.fd = fd;
	conn.state = C_SETUP;
	conn.deadline = app_now_ns() + HANDSHAKE_NS;
	conn.s = (struct memif_session){ .id = id };	/* MEMIF_S_HELLO_SENT */
	memcpy(conn.s.secret, secret, sizeof(conn.s.secret));
	epoll_set(epfd, EPOLL_CTL_ADD, fd);
}

static void
master_accept(void)
{
	struct memif_msg m;
	int fd;

	if ((fd = accept4(sock.fd, NULL, NULL, SOCK_NONBLOCK |
	    SOCK_CLOEXEC)) == -1)
		return;
	if (conn.fd >= 0) {
		/* One peer at a time: say why to the second one. */
		memif_msg_disconnect(&m, "Already connected");
		(void)ctl_send(fd, &m, -1);
		close(fd);
		fprintf(stderr, "snb-memif: %s: refused a second peer\n",
		    sock.name);
		return;
	}
	conn_setup(fd);
	memif_master_hello(&m, "snb-memif");
	if (ctl_send(conn.fd, &m, -1) == -1)
		conn_down(NULL, "send HELLO: %s", strerror(errno));
}

static void
slave_connect(void)
{
	int fd;

	if ((fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0)) == -1)
		err(1, "socket");
	if (connect(fd, (struct sockaddr *)&sock.sa, sock.len) == -1) {
		close(fd);
		backoff();
		return;
	}
	fcntl(fd, F_SETFL, O_NONBLOCK);
	conn_setup(fd);
	conn.s.state = MEMIF_S_WAIT_HELLO;
	conn.s.nsteps = 4;		/* region, s2m ring, m2s ring, CONNECT */
	conn.s.log2 = want_log2;
}

/* Everything that is not packets (sockets, eventfds, timers), waiting up
 * to wait_ms for the first event. */
void
control(uint64_t now, int wait_ms)
{
	struct epoll_event ev[8];
	uint64_t v;
	int i, n;

	last_ctl = now;
	n = epoll_wait(epfd, ev, 8, wait_ms);
	for (i = 0; i < n; i++) {
		if (ev[i].data.fd == sock.fd)
			master_accept();
		else if (ev[i].data.fd == conn.fd)
			ctl_read();
		else {
			/* A receive ring's kick: drained, or epoll would
			 * report it again and again. */
			while (read(ev[i].data.fd, &v, sizeof(v)) == sizeof(v))
				;
			(*cnt.kicks_received)++;
		}
	}
	if (conn.state == C_SETUP && now > conn.deadline)
		conn_down("Connection timed out", "set-up not finished in %llu "
		    "ms; disconnecting", HANDSHAKE_NS / MS);
	if (conn.state == C_SETUP)
		wake_by(conn.deadline + 1);
	if (!master && conn.fd < 0 && now >= retry_at)
		slave_connect();
	if (!master && conn.fd < 0)
		wake_by(retry_at);
}
