/*
 * ctl.c: snb-memif's control plane: the listening socket (master) or the
 * reconnecting one (slave), the handshake of msg.c driven over it, file
 * descriptors passed with SCM_RIGHTS, and the shared memory: regions the
 * slave sent us checked and mapped (master), or our own memfd made and
 * described (slave).  A violation ends the connection, never the process.
 */
#define _GNU_SOURCE
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eventfd_check.h"
#include "memguard.h"
#include "memif.h"

/*
 * TEST ONLY: build/tests/snb-memif-unsealed (see the Makefile) is built
 * with SNB_TEST_UNSEALED=1 and maps region files it cannot seal, so that
 * tests/memif.bats can shrink one under it and show the SIGBUS guard.
 * snb-memif itself always refuses them.
 */
#ifndef SNB_TEST_UNSEALED
#define SNB_TEST_UNSEALED	0
#endif

/* The reason in why (whylen bytes), and -1. */
#define WHY(...)	memif_why(why, whylen, __VA_ARGS__)

struct memif_conn conn = { .fd = -1 };
int lfd = -1, epfd = -1;
int ever_up;
uint64_t last_ctl;
static uint64_t retry_at, retry_ns = RETRY_MIN_NS;

void
epoll_set(int op, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	if (fd >= 0 && epoll_ctl(epfd, op, fd, &ev) == -1 && op != EPOLL_CTL_DEL)
		err(1, "epoll_ctl");
}

void
closefd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}
/* --- control socket --- */

static int
ctl_send(const struct memif_msg *m, int attach)
{
	unsigned char buf[MEMIF_MSG_SIZE];
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;

	memif_msg_encode(m, buf);
	if (attach >= 0) {
		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.b;
		mh.msg_controllen = sizeof(ctl.b);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &attach, sizeof(int));
	}
	return sendmsg(conn.fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) ==
	    (ssize_t)sizeof(buf) ? 0 : -1;
}

/* Unmap and close everything of the connection; the socket stays. */
static void
release_memory(void)
{
	unsigned i;

	for (i = 0; i < conn.nregions; i++) {
		if (conn.reg[i].addr)
			memguard_unmap(conn.reg[i].addr, conn.reg[i].size);
		closefd(&conn.reg[i].fd);
	}
	conn.nregions = 0;
	memset(conn.reg, 0, sizeof(conn.reg));
	conn.mem_lost = 0;	/* what faulted is unmapped */
	for (i = 0; i < conn.nrx; i++) {
		epoll_set(EPOLL_CTL_DEL, conn.rx[i].efd);
		closefd(&conn.rx[i].efd);
	}
	for (i = 0; i < conn.ntx; i++)
		closefd(&conn.tx[i].efd);
	conn.nrx = conn.ntx = 0;
	for (i = 0; i < MEMIF_MAX_RINGS; i++) {
		closefd(&conn.s2m_fd[i]);
		closefd(&conn.m2s_fd[i]);
	}
}

/*
 * End the connection: tell the peer why when we are the one ending it
 * (reason != NULL), log one line, count, and go back to listening (master)
 * or to retrying (slave).
 */
/* The slave's next connection attempt, a little later each time. */
static void
backoff(void)
{
	retry_at = app_now_ns() + retry_ns;
	if (retry_ns < RETRY_MAX_NS)
		retry_ns *= 2;
}

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
		(void)ctl_send(&m, -1);
	}
	fprintf(stderr, "snb-memif: %s: %s\n", sockname, why);
	if (conn.state == C_UP)
		(*cnt.disconnects)++;
	epoll_set(EPOLL_CTL_DEL, conn.fd);
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

/* --- shared memory --- */

/*
 * A region fd from the slave: a regular file at least as big as announced,
 * sealed against shrinking (we add the seal if the slave did not), so a
 * peer cannot pull pages from under our mapping (SIGBUS).  The seal comes
 * first and the size check after it: checked the other way round, a slave
 * that resizes the file meanwhile gets the seal onto an empty file that
 * passed the check (issue 17).  Growing stays allowed: it takes no page
 * from us.  A file that cannot be sealed is refused.  The seal does not
 * stop a punched hole (fallocate), which in a hugetlbfs file can make our
 * next touch SIGBUS: the mapping is guarded (libring/memguard.h), a fault
 * ends the connection, and a mapping that cannot be guarded is refused.
 */
static int
map_region(unsigned i, int fd, char *why, size_t whylen)
{
	struct stat st;
	int seals;
	void *a;

	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode))
		return WHY("region %u: not a memory file", i);
	seals = fcntl(fd, F_GET_SEALS);
	if (!SNB_TEST_UNSEALED && (seals == -1 || (!(seals & F_SEAL_SHRINK) &&
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) == -1)))
		return WHY("region %u: cannot be sealed against shrinking",
		    i);
	if (fstat(fd, &st) == -1)
		return WHY("region %u: fstat: %s", i, strerror(errno));
	if ((uint64_t)st.st_size < conn.s.region_size[i])
		return WHY("region %u: file of %lld bytes, %llu announced", i,
		    (long long)st.st_size,
		    (unsigned long long)conn.s.region_size[i]);
	a = mmap(NULL, conn.s.region_size[i], PROT_READ | PROT_WRITE, MAP_SHARED,
	    fd, 0);
	if (a == MAP_FAILED)
		return WHY("region %u: mmap: %s", i, strerror(errno));
	if (memguard_add(a, conn.s.region_size[i], &conn.mem_lost) == -1) {
		munmap(a, conn.s.region_size[i]);
		return WHY("region %u: more than %d guarded mappings", i,
		    MEMGUARD_MAX);
	}
	conn.reg[i] = (struct region){ a, conn.s.region_size[i], fd };
	conn.nregions = i + 1;
	return 0;
}

static void
ring_use(struct mring *r, const struct memif_ring_cfg *cfg, int efd)
{
	memset(r, 0, sizeof(*r));
	r->base = conn.reg[cfg->region].addr + cfg->offset;
	r->size = 1U << cfg->log2;
	r->mask = (uint16_t)(r->size - 1);
	r->efd = efd;
}

/* Master: CONNECT came and the session checked the geometry. */
static int
master_connect(char *why, size_t whylen)
{
	unsigned i;

	for (i = 0; i < conn.s.ns2m; i++) {
		ring_use(&conn.rx[i], &conn.s.s2m[i], conn.s2m_fd[i]);
		conn.s2m_fd[i] = -1;
		conn.nrx++;
		epoll_set(EPOLL_CTL_ADD, conn.rx[i].efd);
	}
	for (i = 0; i < conn.s.nm2s; i++) {
		ring_use(&conn.tx[i], &conn.s.m2s[i], conn.m2s_fd[i]);
		conn.m2s_fd[i] = -1;
		conn.ntx++;
	}
	for (i = 0; i < conn.nrx + conn.ntx; i++) {
		struct mring *r = i < conn.nrx ? &conn.rx[i] : &conn.tx[i - conn.nrx];
		uint32_t cookie;

		memcpy(&cookie, r->base + MEMIF_RING_COOKIE_OFF, 4);
		if (cookie != MEMIF_COOKIE)
			return WHY("ring without the memif cookie");
		/* Both sides start from 0, as the slave initialised them;
		 * our receive rings start unmasked (kicks wanted). */
		atomic_store_explicit(r_tail(r), 0, memory_order_release);
		if (i < conn.nrx)
			*r_flags(r) = 0;
	}
	return 0;
}

/*
 * Slave: one region (a sealed memfd) holding our s2m ring (we send),
 * our m2s ring (we receive), then the buffers of each, 2^log2 apiece.
 */
static int
slave_memory(uint8_t log2, char *why, size_t whylen)
{
	uint64_t rb = (memif_ring_bytes(log2) + 63) & ~63ULL, size;
	uint32_t n = 1U << log2, i, j;
	struct mring *rs[2] = { &conn.tx[0], &conn.rx[0] };
	int fd;
	void *a;

	size = 2 * rb + 2ULL * n * bufsize;
	size = (size + 4095) & ~4095ULL;
	if ((fd = memfd_create("snb-memif", MFD_CLOEXEC |
	    MFD_ALLOW_SEALING)) == -1 || ftruncate(fd, (off_t)size) == -1 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW |
	    F_SEAL_SEAL) == -1 || (a = mmap(NULL, size, PROT_READ |
	    PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		snprintf(why, whylen, "shared memory of %llu bytes: %s",
		    (unsigned long long)size, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	/* Our memfd, but the master holds it too: guarded as the master
	 * guards the slave's (a punched hole in a memfd reads as zeros
	 * today; guarded, nothing depends on that). */
	if (memguard_add(a, size, &conn.mem_lost) == -1) {
		munmap(a, size);
		close(fd);
		snprintf(why, whylen, "more than %d guarded mappings",
		    MEMGUARD_MAX);
		return -1;
	}
	conn.reg[0] = (struct region){ a, size, fd };
	conn.nregions = 1;
	conn.s.nregions = 1;
	conn.s.region_size[0] = size;
	conn.ntx = conn.nrx = 1;	/* from here on release_memory() cleans up */
	for (i = 0; i < 2; i++) {
		struct mring *r = rs[i];
		struct memif_ring_cfg *cfg = i ? &conn.s.m2s[0] : &conn.s.s2m[0];
		uint32_t cookie = MEMIF_COOKIE;

		*cfg = (struct memif_ring_cfg){ 1, 0, (uint32_t)(i * rb),
		    log2 };
		ring_use(r, cfg, eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
		if (r->efd == -1)
			return WHY("eventfd: %s", strerror(errno));
		r->buf0 = (uint32_t)(2 * rb + (uint64_t)i * n * bufsize);
		memcpy(r->base + MEMIF_RING_COOKIE_OFF, &cookie, 4);
		for (j = 0; j < n; j++) {
			volatile struct memif_desc *d = r_desc(r, (uint16_t)j);
			d->flags = 0;
			d->region = 0;
			d->length = bufsize;
			d->offset = r->buf0 + j * bufsize;
		}
	}
	conn.s.ns2m = conn.s.nm2s = 1;
	epoll_set(EPOLL_CTL_ADD, conn.rx[0].efd);
	return 0;
}

/* Slave: set-up message number step after INIT (see msg.h). */
static int
slave_send(unsigned step)
{
	struct memif_msg m;
	struct mring *r;

	memset(&m, 0, sizeof(m));
	switch (step) {
	case 1:
		m.type = MEMIF_MSG_ADD_REGION;
		m.add_region.index = 0;
		m.add_region.size = conn.reg[0].size;
		return ctl_send(&m, conn.reg[0].fd);
	case 2:
	case 3:
		r = step == 2 ? &conn.tx[0] : &conn.rx[0];
		m.type = MEMIF_MSG_ADD_RING;
		m.add_ring.flags = step == 2 ? MEMIF_RING_FLAG_S2M : 0;
		m.add_ring.offset = (uint32_t)(r->base - conn.reg[0].addr);
		m.add_ring.log2_ring_size = (uint8_t)__builtin_ctz(r->size);
		return ctl_send(&m, r->efd);
	default:
		m.type = MEMIF_MSG_CONNECT;
		snprintf(m.connect.name, sizeof(m.connect.name), "snb-memif");
		return ctl_send(&m, -1);
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
	    "rings)\n", sockname, conn.s.peer_name[0] ? conn.s.peer_name : "peer",
	    master ? "we are master" : "we are slave", id, conn.rx[0].size);
}

/* --- the handshake --- */

/* Do what msg.c's session says a message calls for (master or slave). */
static void
handle(const struct memif_msg *m, int *fd)
{
	struct memif_msg reply;
	char why[MEMIF_REASON_LEN];
	uint8_t log2;

	memset(&reply, 0, sizeof(reply));
	reply.type = MEMIF_MSG_ACK;
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
		if (m->add_ring.flags & MEMIF_RING_FLAG_S2M)
			conn.s2m_fd[conn.s.ns2m - 1] = *fd;
		else
			conn.m2s_fd[conn.s.nm2s - 1] = *fd;
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
		if (ctl_send(&reply, -1) == -1)
			conn_down(NULL, "send CONNECTED: %s", strerror(errno));
		else
			went_up();
		return;
	case MEMIF_A_SEND_INIT:
		if (memif_slave_hello(m, want_log2, &log2, why,
		    sizeof(why)) == -1) {
			bad_message(why);
			return;
		}
		if (slave_memory(log2, why, sizeof(why)) == -1) {
			conn_down("Client error", "%s", why);
			return;
		}
		reply.type = MEMIF_MSG_INIT;
		reply.init.version = MEMIF_VERSION;
		reply.init.id = id;
		reply.init.mode = MEMIF_MODE_ETHERNET;
		memcpy(reply.init.secret, secret, sizeof(secret));
		snprintf(reply.init.name, sizeof(reply.init.name), "snb-memif");
		if (ctl_send(&reply, -1) == -1)
			conn_down(NULL, "send INIT: %s", strerror(errno));
		return;
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
	case MEMIF_A_PEER_GONE:
		conn_down(NULL, "peer disconnected: %s", why);
		return;
	default:
		bad_message(why);
		return;
	}
	if (ctl_send(&reply, -1) == -1)
		conn_down(NULL, "send: %s", strerror(errno));
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
	struct cmsghdr *cm;
	struct memif_msg m;
	char why[MEMIF_REASON_LEN];
	int fds[4], nfd, i, fd;
	ssize_t n;

	while (conn.fd >= 0) {
		memset(&mh, 0, sizeof(mh));
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = ctl.b;
		mh.msg_controllen = sizeof(ctl.b);
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
		nfd = 0;
		for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
			if (cm->cmsg_level == SOL_SOCKET &&
			    cm->cmsg_type == SCM_RIGHTS)
				for (i = 0; (size_t)i < (cm->cmsg_len -
				    CMSG_LEN(0)) / sizeof(int) && nfd < 4; i++)
					memcpy(&fds[nfd++], CMSG_DATA(cm) +
					    i * sizeof(int), sizeof(int));
		fd = nfd == 1 ? fds[0] : -1;
		if (nfd > 1 || (mh.msg_flags & (MSG_CTRUNC | MSG_TRUNC))) {
			for (i = 0; i < nfd; i++)
				close(fds[i]);
			bad_message(mh.msg_flags & MSG_TRUNC ?
			    "Invalid message size" : "too many descriptors");
			return;
		}
		if (n != MEMIF_MSG_SIZE ||
		    memif_msg_decode(buf, (size_t)n, &m, why,
		    sizeof(why)) == -1) {
			if (n != MEMIF_MSG_SIZE)
				snprintf(why, sizeof(why), "Invalid message "
				    "size %zd", n);
			if (fd >= 0)
				close(fd);
			bad_message(why);
			return;
		}
		handle(&m, &fd);
		if (fd >= 0)
			close(fd);	/* attached to a message that takes none */
	}
}

/* A new connection on fd: the handshake must end within HANDSHAKE_NS. */
static void
conn_setup(int fd)
{
	conn.fd = fd;
	conn.state = C_SETUP;
	conn.deadline = app_now_ns() + HANDSHAKE_NS;
	memif_session_init(&conn.s, id, secret);
	epoll_set(EPOLL_CTL_ADD, fd);
}

static void
master_accept(void)
{
	struct memif_msg m;
	int fd;

	if ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK |
	    SOCK_CLOEXEC)) == -1)
		return;
	if (conn.fd >= 0) {
		/* One peer at a time: say why to the second one. */
		unsigned char buf[MEMIF_MSG_SIZE];
		memif_msg_disconnect(&m, "Already connected");
		memif_msg_encode(&m, buf);
		(void)send(fd, buf, sizeof(buf), MSG_NOSIGNAL | MSG_DONTWAIT);
		close(fd);
		fprintf(stderr, "snb-memif: %s: refused a second peer\n",
		    sockname);
		return;
	}
	conn_setup(fd);
	memif_master_hello(&m, "snb-memif");
	if (ctl_send(&m, -1) == -1)
		conn_down(NULL, "send HELLO: %s", strerror(errno));
}

static void
slave_connect(void)
{
	int fd;

	if ((fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0)) == -1)
		err(1, "socket");
	if (connect(fd, (struct sockaddr *)&sun, sunlen) == -1) {
		close(fd);
		backoff();
		return;
	}
	fcntl(fd, F_SETFL, O_NONBLOCK);
	conn_setup(fd);
	conn.s.state = MEMIF_S_WAIT_HELLO;
	conn.s.nsteps = 4;		/* region, s2m ring, m2s ring, CONNECT */
}

/* Everything that is not packets: sockets, eventfds, timers. */
void
control(uint64_t now)
{
	struct epoll_event ev[8];
	uint64_t v;
	int i, n;

	last_ctl = now;
	n = epoll_wait(epfd, ev, 8, 0);
	for (i = 0; i < n; i++) {
		if (ev[i].data.fd == lfd)
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
