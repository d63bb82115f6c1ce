/*
 * snb-memif: a memif interface (the shared-memory packet interface of VPP
 * and DPDK's net_memif) as a device app.  Packets the peer sends go to
 * port "out"; packets arriving on port "in" are sent to the peer.
 *
 * One interface, one queue pair.  As master (the default) we own the
 * socket and map the memory the slave made; as slave we connect, make the
 * memory (a sealed memfd) and describe it.  The control protocol is
 * decoded and checked in msg.c.  Everything in shared memory is written by
 * a process we do not trust, so the data path reads each index and each
 * descriptor once into a local and checks it before use: a ring index that
 * moves too far or a buffer outside its region ends the connection (one
 * log line, counted), never a stray access.
 *
 * Rings.  A ring's producer moves head, its consumer tail (free-running
 * 16-bit indexes).  Slave to master (s2m): the slave fills buffers and
 * moves head; the master copies them out and moves tail.  Master to slave
 * (m2s): the slave posts empty buffers by moving head; the master fills
 * them and moves tail; the slave copies them out and posts them again.
 *
 * Interrupts.  Each ring has an eventfd: the sender writes it after a
 * burst unless the receiver set MEMIF_RING_FLAG_MASK_INT.  We keep our
 * receive rings masked while packets flow and unmask them once idle, so an
 * idle snb-memif sleeps in ppoll() on one epoll descriptor holding the
 * socket(s) and the receive eventfd.
 *
 * Connections come and go without stopping the graph: the master keeps
 * listening, the slave retries with back-off.  Packets to send wait in the
 * input ring until the first connection; after one was lost they are
 * dropped and counted (drop-disconnected), as snb-nic does on a down link,
 * unless --lossless asks to wait then too.
 */
#define _GNU_SOURCE
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "app.h"
#include "msg.h"

#define MS		1000000ULL
#define CTL_BUSY_NS	(1 * MS)	/* control socket while packets move */
#define HANDSHAKE_NS	(3000 * MS)	/* a peer must finish set-up by then */
#define RETRY_MIN_NS	(20 * MS)	/* slave: first reconnect delay ... */
#define RETRY_MAX_NS	(1000 * MS)	/* ... doubling up to this */
#define IDLE_UNMASK	32		/* idle breaths before asking for kicks */

#define USAGE	"SOCKET [--id N] [--master|--slave] [--secret S] " \
		"[--ring-size N] [--buffer-size N] [--lossless] [--linger MS]"

/* One ring as we use it (private memory; base points into a region). */
struct mring {
	unsigned char	*base;		/* ring header */
	uint16_t	 mask;		/* slots - 1 */
	uint32_t	 size;		/* slots */
	uint16_t	 last;		/* next slot we read (rx) or fill (tx) */
	uint16_t	 posted;	/* slave rx: our head (buffers given) */
	uint32_t	 buf0;		/* slave: region-0 offset of slot 0's buffer */
	int		 efd;		/* the ring's eventfd, -1 if none */
	int		 masked;	/* rx: we set MASK_INT */
};

struct region {
	unsigned char	*addr;
	uint64_t	 size;
	int		 fd;
};

enum { C_DOWN, C_SETUP, C_UP };

/* The one connection (private memory). */
static struct {
	int		 fd;		/* control socket, -1 when none */
	int		 state;		/* C_* */
	uint64_t	 deadline;	/* C_SETUP must end by then */
	struct memif_session s;
	unsigned	 nregions;
	struct region	 reg[MEMIF_MAX_REGIONS];
	int		 s2m_fd[MEMIF_MAX_RINGS], m2s_fd[MEMIF_MAX_RINGS];
	unsigned	 nrx, ntx;
	struct mring	 rx[MEMIF_MAX_RINGS], tx[MEMIF_MAX_RINGS];
} c = { .fd = -1 };

/* Options and process-wide state. */
static char sockname[108];	/* as given, for messages */
static struct sockaddr_un sun;
static socklen_t sunlen;
static int abstract, master = 1, lossless;
static uint32_t id, bufsize = 2048, linger_ms;
static uint8_t want_log2 = 10;
static char secret[MEMIF_SECRET_LEN + 1];
static int lfd = -1, epfd = -1;	/* master's listening socket; epoll set */
static int ever_up;
static uint64_t retry_at, retry_ns = RETRY_MIN_NS, last_ctl;
static unsigned idle_breaths;
static uint64_t wake_ns;		/* earliest timer of this breath */
static struct port *in, *out;
static int bound;
static volatile sig_atomic_t linger_stop;

static struct {
	uint64_t *rx_packets, *rx_bytes, *tx_packets, *tx_bytes;
	uint64_t *drop_disconnected, *drop_oversize, *drop_no_output;
	uint64_t *connects, *disconnects, *bad_messages, *bad_descriptors;
	uint64_t *kicks;
} k;

static _Atomic uint16_t *
r_head(struct mring *r)
{
	return (_Atomic uint16_t *)(void *)(r->base + MEMIF_RING_HEAD_OFF);
}

static _Atomic uint16_t *
r_tail(struct mring *r)
{
	return (_Atomic uint16_t *)(void *)(r->base + MEMIF_RING_TAIL_OFF);
}

static volatile uint16_t *
r_flags(struct mring *r)
{
	return (volatile uint16_t *)(void *)(r->base + MEMIF_RING_FLAGS_OFF);
}

static volatile struct memif_desc *
r_desc(struct mring *r, uint16_t slot)
{
	return (volatile struct memif_desc *)(void *)(r->base +
	    MEMIF_RING_HDR) + (slot & r->mask);
}

/* Each field read once: the peer may rewrite the descriptor meanwhile. */
static struct memif_desc
desc_read(volatile struct memif_desc *vd)
{
	struct memif_desc d;

	d.flags = vd->flags;
	d.region = vd->region;
	d.length = vd->length;
	d.offset = vd->offset;
	d.metadata = 0;
	return d;
}

/* Breathe again by t at the latest (the runtime sleeps until then). */
static void
wake_by(uint64_t t)
{
	if (wake_ns == 0 || t < wake_ns)
		wake_ns = t;
}

static void
epoll_set(int op, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	if (fd >= 0 && epoll_ctl(epfd, op, fd, &ev) == -1 && op != EPOLL_CTL_DEL)
		err(1, "epoll_ctl");
}

static void
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
	return sendmsg(c.fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) ==
	    (ssize_t)sizeof(buf) ? 0 : -1;
}

/* Unmap and close everything of the connection; the socket stays. */
static void
release_memory(void)
{
	unsigned i;

	for (i = 0; i < c.nregions; i++) {
		if (c.reg[i].addr)
			munmap(c.reg[i].addr, c.reg[i].size);
		closefd(&c.reg[i].fd);
	}
	c.nregions = 0;
	memset(c.reg, 0, sizeof(c.reg));
	for (i = 0; i < c.nrx; i++) {
		epoll_set(EPOLL_CTL_DEL, c.rx[i].efd);
		closefd(&c.rx[i].efd);
	}
	for (i = 0; i < c.ntx; i++)
		closefd(&c.tx[i].efd);
	c.nrx = c.ntx = 0;
	for (i = 0; i < MEMIF_MAX_RINGS; i++) {
		closefd(&c.s2m_fd[i]);
		closefd(&c.m2s_fd[i]);
	}
}

/*
 * End the connection: tell the peer why when we are the one ending it
 * (reason != NULL), log one line, count, and go back to listening (master)
 * or to retrying (slave).
 */
static void
conn_down(const char *reason, const char *fmt, ...)
{
	struct memif_msg m;
	char why[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (c.fd >= 0 && reason) {
		memif_msg_disconnect(&m, reason);
		(void)ctl_send(&m, -1);
	}
	fprintf(stderr, "snb-memif: %s: %s\n", sockname, why);
	if (c.state == C_UP)
		(*k.disconnects)++;
	epoll_set(EPOLL_CTL_DEL, c.fd);
	closefd(&c.fd);
	release_memory();
	c.state = C_DOWN;
	if (!master)
		retry_at = app_now_ns() + retry_ns;
	if (retry_ns < RETRY_MAX_NS)
		retry_ns *= 2;
}

/* A protocol violation: DISCONNECT with the reason, counted. */
static void
bad_message(const char *why)
{
	(*k.bad_messages)++;
	conn_down(why, "bad message from peer: %s; disconnecting", why);
}

static void
bad_ring(const char *fmt, ...)
{
	char why[MEMIF_REASON_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	(*k.bad_descriptors)++;
	conn_down(why, "bad ring from peer: %s; disconnecting", why);
}

/* --- shared memory --- */

/*
 * A region fd from the slave: a regular file at least as big as announced,
 * sealed against shrinking (we add the seal if the slave did not), so a
 * peer cannot pull pages from under our mapping (SIGBUS).
 */
static int
map_region(unsigned i, int fd, char *why, size_t whylen)
{
	struct stat st;
	int seals;
	void *a;

	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		snprintf(why, whylen, "region %u: not a memory file", i);
		return -1;
	}
	if ((uint64_t)st.st_size < c.s.region_size[i]) {
		snprintf(why, whylen, "region %u: file of %lld bytes, %llu "
		    "announced", i, (long long)st.st_size,
		    (unsigned long long)c.s.region_size[i]);
		return -1;
	}
	seals = fcntl(fd, F_GET_SEALS);
	if (seals == -1 || (!(seals & F_SEAL_SHRINK) &&
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) == -1)) {
		snprintf(why, whylen, "region %u: cannot be sealed against "
		    "shrinking", i);
		return -1;
	}
	a = mmap(NULL, c.s.region_size[i], PROT_READ | PROT_WRITE, MAP_SHARED,
	    fd, 0);
	if (a == MAP_FAILED) {
		snprintf(why, whylen, "region %u: mmap: %s", i,
		    strerror(errno));
		return -1;
	}
	c.reg[i].addr = a;
	c.reg[i].size = c.s.region_size[i];
	c.reg[i].fd = fd;
	c.nregions = i + 1;
	return 0;
}

/* An interrupt fd must be an eventfd; writes to it must never block. */
static int
is_eventfd(int fd)
{
	char path[64], link[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if ((n = readlink(path, link, sizeof(link) - 1)) == -1)
		return 0;
	link[n] = '\0';
	if (strcmp(link, "anon_inode:[eventfd]") != 0)
		return 0;
	return fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0;
}

static void
ring_use(struct mring *r, const struct memif_ring_cfg *cfg, int efd)
{
	memset(r, 0, sizeof(*r));
	r->base = c.reg[cfg->region].addr + cfg->offset;
	r->size = 1U << cfg->log2;
	r->mask = (uint16_t)(r->size - 1);
	r->efd = efd;
}

/* Master: CONNECT came and the session checked the geometry. */
static int
master_connect(char *why, size_t whylen)
{
	unsigned i;

	for (i = 0; i < c.s.ns2m; i++) {
		ring_use(&c.rx[i], &c.s.s2m[i], c.s2m_fd[i]);
		c.s2m_fd[i] = -1;
		c.nrx++;
		epoll_set(EPOLL_CTL_ADD, c.rx[i].efd);
	}
	for (i = 0; i < c.s.nm2s; i++) {
		ring_use(&c.tx[i], &c.s.m2s[i], c.m2s_fd[i]);
		c.m2s_fd[i] = -1;
		c.ntx++;
	}
	for (i = 0; i < c.nrx + c.ntx; i++) {
		struct mring *r = i < c.nrx ? &c.rx[i] : &c.tx[i - c.nrx];
		uint32_t cookie;

		memcpy(&cookie, r->base + MEMIF_RING_COOKIE_OFF, 4);
		if (cookie != MEMIF_COOKIE) {
			snprintf(why, whylen, "ring without the memif cookie");
			return -1;
		}
		/* Both sides start from 0, as the slave initialised them;
		 * our receive rings start unmasked (kicks wanted). */
		atomic_store_explicit(r_tail(r), 0, memory_order_release);
		if (i < c.nrx)
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
	struct mring *rs[2] = { &c.tx[0], &c.rx[0] };
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
	c.reg[0] = (struct region){ a, size, fd };
	c.nregions = 1;
	c.s.nregions = 1;
	c.s.region_size[0] = size;
	c.ntx = c.nrx = 1;	/* from here on release_memory() cleans up */
	for (i = 0; i < 2; i++) {
		struct mring *r = rs[i];
		struct memif_ring_cfg *cfg = i ? &c.s.m2s[0] : &c.s.s2m[0];
		uint32_t cookie = MEMIF_COOKIE;

		*cfg = (struct memif_ring_cfg){ 1, 0, (uint32_t)(i * rb),
		    log2 };
		ring_use(r, cfg, eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
		if (r->efd == -1) {
			snprintf(why, whylen, "eventfd: %s", strerror(errno));
			return -1;
		}
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
	c.s.ns2m = c.s.nm2s = 1;
	epoll_set(EPOLL_CTL_ADD, c.rx[0].efd);
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
		m.add_region.size = c.reg[0].size;
		return ctl_send(&m, c.reg[0].fd);
	case 2:
	case 3:
		r = step == 2 ? &c.tx[0] : &c.rx[0];
		m.type = MEMIF_MSG_ADD_RING;
		m.add_ring.flags = step == 2 ? MEMIF_RING_FLAG_S2M : 0;
		m.add_ring.offset = (uint32_t)(r->base - c.reg[0].addr);
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
	c.state = C_UP;
	ever_up = 1;
	retry_ns = RETRY_MIN_NS;
	(*k.connects)++;
	idle_breaths = 0;
	fprintf(stderr, "snb-memif: %s: connected to %s (%s, id %u, %u-slot "
	    "rings)\n", sockname, c.s.peer_name[0] ? c.s.peer_name : "peer",
	    master ? "we are master" : "we are slave", id, c.rx[0].size);
}

/* --- the handshake --- */

static void
handle_master(const struct memif_msg *m, int *fd)
{
	struct memif_msg reply;
	char why[MEMIF_REASON_LEN];
	enum memif_action a;
	unsigned i;

	memset(&reply, 0, sizeof(reply));
	reply.type = MEMIF_MSG_ACK;
	switch ((a = memif_master_step(&c.s, m, why, sizeof(why)))) {
	case MEMIF_A_NONE:
		return;
	case MEMIF_A_ACK:
		break;
	case MEMIF_A_ACK_REGION:
		i = c.s.nregions - 1;
		if (*fd < 0) {
			bad_message("Missing region fd");
			return;
		}
		if (map_region(i, *fd, why, sizeof(why)) == -1) {
			bad_message(why);
			return;
		}
		*fd = -1;	/* kept */
		break;
	case MEMIF_A_ACK_RING:
		if (*fd >= 0 && !is_eventfd(*fd)) {
			bad_message("ring interrupt fd is not an eventfd");
			return;
		}
		if (m->add_ring.flags & MEMIF_RING_FLAG_S2M)
			c.s2m_fd[c.s.ns2m - 1] = *fd;
		else
			c.m2s_fd[c.s.nm2s - 1] = *fd;
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
		if (ctl_send(&reply, -1) == -1) {
			conn_down(NULL, "send CONNECTED: %s", strerror(errno));
			return;
		}
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

static void
handle_slave(const struct memif_msg *m, int *fd)
{
	struct memif_msg init;
	char why[MEMIF_REASON_LEN];
	uint8_t log2;

	switch (memif_slave_step(&c.s, m, why, sizeof(why))) {
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
		memset(&init, 0, sizeof(init));
		init.type = MEMIF_MSG_INIT;
		init.init.version = MEMIF_VERSION;
		init.init.id = id;
		init.init.mode = MEMIF_MODE_ETHERNET;
		memcpy(init.init.secret, secret, sizeof(secret));
		snprintf(init.init.name, sizeof(init.init.name), "snb-memif");
		if (ctl_send(&init, -1) == -1)
			conn_down(NULL, "send INIT: %s", strerror(errno));
		return;
	case MEMIF_A_SEND_NEXT:
		if (slave_send(c.s.step) == -1)
			conn_down(NULL, "send: %s", strerror(errno));
		return;
	case MEMIF_A_UP:
		/* Only now: the master resets the rings when it connects. */
		c.rx[0].posted = (uint16_t)c.rx[0].size;
		atomic_store_explicit(r_head(&c.rx[0]), c.rx[0].posted,
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

	while (c.fd >= 0) {
		memset(&mh, 0, sizeof(mh));
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = ctl.b;
		mh.msg_controllen = sizeof(ctl.b);
		if ((n = recvmsg(c.fd, &mh, MSG_DONTWAIT |
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
		if (master)
			handle_master(&m, &fd);
		else
			handle_slave(&m, &fd);
		if (fd >= 0)
			close(fd);	/* attached to a message that takes none */
	}
}

static void
master_accept(void)
{
	struct memif_msg m;
	int fd;

	if ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK |
	    SOCK_CLOEXEC)) == -1)
		return;
	if (c.fd >= 0) {
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
	c.fd = fd;
	c.state = C_SETUP;
	c.deadline = app_now_ns() + HANDSHAKE_NS;
	memif_session_init(&c.s, id, secret);
	epoll_set(EPOLL_CTL_ADD, fd);
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
		retry_at = app_now_ns() + retry_ns;
		if (retry_ns < RETRY_MAX_NS)
			retry_ns *= 2;
		return;
	}
	fcntl(fd, F_SETFL, O_NONBLOCK);
	c.fd = fd;
	c.state = C_SETUP;
	c.deadline = app_now_ns() + HANDSHAKE_NS;
	memif_session_init(&c.s, id, secret);
	c.s.state = MEMIF_S_WAIT_HELLO;
	c.s.nsteps = 4;		/* region, s2m ring, m2s ring, CONNECT */
	epoll_set(EPOLL_CTL_ADD, fd);
}

/* Drain a receive eventfd so the epoll set stops reporting it. */
static void
drain(int fd)
{
	uint64_t v;

	while (read(fd, &v, sizeof(v)) == sizeof(v))
		;
}

/* Everything that is not packets: sockets, eventfds, timers. */
static void
control(uint64_t now)
{
	struct epoll_event ev[8];
	int i, n;

	last_ctl = now;
	n = epoll_wait(epfd, ev, 8, 0);
	for (i = 0; i < n; i++) {
		if (ev[i].data.fd == lfd)
			master_accept();
		else if (ev[i].data.fd == c.fd)
			ctl_read();
		else
			drain(ev[i].data.fd);
	}
	if (c.state == C_SETUP && now > c.deadline)
		conn_down("Connection timed out", "set-up not finished in %llu "
		    "ms; disconnecting", HANDSHAKE_NS / MS);
	if (c.state == C_SETUP)
		wake_by(c.deadline + 1);
	if (!master && c.fd < 0 && now >= retry_at)
		slave_connect();
	if (!master && c.fd < 0)
		wake_by(retry_at);
}

/* --- packets --- */

static void
kick(struct mring *r)
{
	uint64_t one = 1;

	if (r->efd >= 0 && !(*r_flags(r) & MEMIF_RING_FLAG_MASK_INT)) {
		(*k.kicks)++;
		if (write(r->efd, &one, sizeof(one)) == -1)
			return;	/* EAGAIN: the counter is full, a kick waits */
	}
}

/*
 * Receive from ring r into the output: at most one burst of whole packets
 * (a packet may span slots chained by MEMIF_DESC_FLAG_NEXT), each slot
 * checked before its bytes are touched.  Returns slots consumed, or -1
 * after a violation ended the connection.
 */
static int
rx_ring(struct mring *r, uint64_t ts)
{
	struct ring *o = out && out->nrings ? &out->rings[0] : NULL;
	uint32_t room = o ? ring_room(o, APP_BURST) : APP_BURST, n = 0;
	uint16_t avail, s, e, limit;
	uint32_t total, len, cap = o ? o->capacity : 0;
	const unsigned char *src;
	struct memif_desc d;
	struct packet *p;
	int over;

	if (master) {
		avail = (uint16_t)(atomic_load_explicit(r_head(r),
		    memory_order_acquire) - r->last);
		limit = (uint16_t)r->size;
	} else {
		avail = (uint16_t)(atomic_load_explicit(r_tail(r),
		    memory_order_acquire) - r->last);
		limit = (uint16_t)(r->posted - r->last);
	}
	if (avail > limit) {
		bad_ring("ring index moved %u slots, at most %u", avail, limit);
		return -1;
	}
	if (room > APP_BURST)
		room = APP_BURST;
	s = r->last;
	while (avail && n < room) {
		p = o ? ring_slot(o, n) : NULL;
		total = 0;
		over = o == NULL;
		for (e = s;; e++) {
			if ((uint16_t)(e - s) == avail)
				goto incomplete;	/* rest not published */
			d = desc_read(r_desc(r, e));
			len = d.length;
			if (master) {
				if (d.region >= c.nregions ||
				    !memif_span_ok(c.reg[d.region].size,
				    d.offset, len)) {
					bad_ring("descriptor %u: region %u "
					    "offset %u length %u out of bounds",
					    e & r->mask, d.region, d.offset,
					    len);
					return -1;
				}
				src = c.reg[d.region].addr + d.offset;
			} else {
				if (len > bufsize) {
					bad_ring("descriptor %u: length %u > "
					    "buffer size %u", e & r->mask, len,
					    bufsize);
					return -1;
				}
				src = c.reg[0].addr + r->buf0 +
				    (uint32_t)(e & r->mask) * bufsize;
			}
			if (!over && total + len <= cap)
				memcpy(p->data + total, src, len);
			else
				over = 1;
			total += len;
			if (!(d.flags & MEMIF_DESC_FLAG_NEXT))
				break;
		}
		avail -= (uint16_t)(e + 1 - s);
		s = (uint16_t)(e + 1);
		if (o == NULL)
			(*k.drop_no_output)++;
		else if (over)
			(*k.drop_oversize)++;
		else {
			p->len = (uint16_t)total;
			p->flags = 0;
			p->wirelen = 0;
			p->ts_ns = ts;
			n++;
			(*k.rx_packets)++;
			*k.rx_bytes += total;
		}
	}
incomplete:
	if (n)
		ring_commit(o, n);
	if (s == r->last)
		return 0;
	avail = (uint16_t)(s - r->last);
	r->last = s;
	if (master)
		atomic_store_explicit(r_tail(r), s, memory_order_release);
	else {
		/* Give the slots back with their buffers, as we made them. */
		for (e = r->posted; e != (uint16_t)(s + r->size); e++) {
			volatile struct memif_desc *vd = r_desc(r, e);
			vd->flags = 0;
			vd->region = 0;
			vd->length = bufsize;
			vd->offset = r->buf0 + (uint32_t)(e & r->mask) *
			    bufsize;
		}
		r->posted = (uint16_t)(s + r->size);
		atomic_store_explicit(r_head(r), r->posted,
		    memory_order_release);
	}
	return avail;
}

/*
 * Send up to n packets of input ring in on ring t; returns how many were
 * taken (sent, or dropped as too big for the whole ring), or -1 after a
 * violation ended the connection.
 */
static int
tx_ring(struct mring *t, struct ring *in, uint32_t n)
{
	uint16_t free, s, s0;
	uint32_t i, len, done, chunk;
	volatile struct memif_desc *vd;
	struct memif_desc d;
	struct packet *p;
	unsigned char *dst;

	if (master) {
		free = (uint16_t)(atomic_load_explicit(r_head(t),
		    memory_order_acquire) - t->last);
		if (free > t->size) {
			bad_ring("m2s head %u is %u slots past tail",
			    (uint16_t)(t->last + free), free);
			return -1;
		}
	} else {
		uint16_t used = (uint16_t)(t->last - atomic_load_explicit(
		    r_tail(t), memory_order_acquire));
		if (used > t->size) {
			bad_ring("s2m tail is %u slots behind head", used);
			return -1;
		}
		free = (uint16_t)(t->size - used);
	}
	s = t->last;
	for (i = 0; i < n; i++) {
		p = ring_peek(in, i);
		len = packet_len(in, p);
		s0 = s;
		done = 0;
		do {
			if ((uint16_t)(s - t->last) == free)
				goto full;
			vd = r_desc(t, s);
			if (master) {
				d = desc_read(vd);
				if (d.region >= c.nregions || d.length == 0 ||
				    !memif_span_ok(c.reg[d.region].size,
				    d.offset, d.length)) {
					bad_ring("m2s descriptor %u: region %u "
					    "offset %u length %u out of bounds",
					    s & t->mask, d.region, d.offset,
					    d.length);
					return -1;
				}
				dst = c.reg[d.region].addr + d.offset;
				chunk = len - done < d.length ? len - done :
				    d.length;
			} else {
				d.offset = t->buf0 + (uint32_t)(s & t->mask) *
				    bufsize;
				dst = c.reg[0].addr + d.offset;
				chunk = len - done < bufsize ? len - done :
				    bufsize;
				vd->region = 0;
				vd->offset = d.offset;
			}
			memcpy(dst, p->data + done, chunk);
			done += chunk;
			vd->length = chunk;
			vd->flags = done < len ? MEMIF_DESC_FLAG_NEXT : 0;
			s++;
		} while (done < len);
		(*k.tx_packets)++;
		*k.tx_bytes += len;
		continue;
full:
		s = s0;
		if (s0 != t->last || free != t->size)
			break;		/* wait for the peer to make room */
		(*k.drop_oversize)++;	/* would not fit an empty ring */
	}
	if (s != t->last) {
		t->last = s;
		atomic_store_explicit(master ? r_tail(t) : r_head(t), s,
		    memory_order_release);
		kick(t);
	}
	return (int)i;
}

static uint32_t
tx_step(void)
{
	uint32_t n, total = 0;
	int j, k_;

	for (j = 0; j < in->nrings; j++) {
		struct ring *r = &in->rings[j];

		if ((n = ring_avail(r, APP_BURST)) == 0)
			continue;
		if (n > APP_BURST)
			n = APP_BURST;
		if (c.state != C_UP) {
			if (!ever_up || lossless) {
				wake_by(app_now_ns() + MS);
				continue;	/* wait in the ring */
			}
			*k.drop_disconnected += n;
			ring_release(r, n);
			total += n;
			continue;
		}
		if ((k_ = tx_ring(&c.tx[0], r, n)) < 0)
			return total;
		if ((uint32_t)k_ < n)
			wake_by(app_now_ns() + 50000);	/* peer full */
		ring_release(r, (uint32_t)k_);
		total += (uint32_t)k_;
	}
	return total;
}

/* Receive on every ring; while idle, ask the peer for kicks. */
static uint32_t
rx_step(int idle)
{
	struct timespec ts;
	uint64_t t;
	uint32_t total = 0;
	unsigned i;
	int n;

	clock_gettime(CLOCK_REALTIME, &ts);
	t = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	for (i = 0; i < c.nrx && c.state == C_UP; i++) {
		struct mring *r = &c.rx[i];

		if ((n = rx_ring(r, t)) < 0)
			return total;
		if (n > 0 && !r->masked) {
			*r_flags(r) |= MEMIF_RING_FLAG_MASK_INT;
			r->masked = 1;
		} else if (n == 0 && idle && r->masked) {
			/* Unmask, then look again: a burst published before
			 * the peer saw the flag would get no kick. */
			*r_flags(r) &= (uint16_t)~MEMIF_RING_FLAG_MASK_INT;
			r->masked = 0;
			atomic_thread_fence(memory_order_seq_cst);
			if ((n = rx_ring(r, t)) < 0)
				return total;
		}
		total += (uint32_t)n;
	}
	return total;
}

static int
memif_breathe(void)
{
	uint64_t now = app_now_ns();
	uint32_t n = 0;

	if (!bound) {
		in = app_port("in");
		out = app_port("out");
		if (in && in->nrings == 0)
			in = NULL;
		bound = 1;
	}
	wake_ns = 0;
	if (idle_breaths >= IDLE_UNMASK || now - last_ctl >= CTL_BUSY_NS)
		control(now);
	if (in)
		n += tx_step();
	if (c.state == C_UP)
		n += rx_step(idle_breaths >= IDLE_UNMASK);
	idle_breaths = n ? 0 : idle_breaths + 1;
	app_wake_at(wake_ns);
	return (int)n;
}

static void
on_linger_signal(int sig)
{
	(void)sig;
	linger_stop = 1;
}

/*
 * End of stream on "in": with --linger, keep receiving until the peer has
 * sent nothing for that long (packets still in flight through a loop, as
 * with a testpmd that echoes them), then say DISCONNECT and close.
 */
static void
memif_stop(int eof)
{
	struct sigaction sa;
	struct timespec nap = { 0, 100000 };
	uint64_t quiet_since = app_now_ns();

	if (eof && linger_ms && c.state == C_UP) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_linger_signal;
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGINT, &sa, NULL);
		while (!linger_stop && c.state == C_UP && app_now_ns() -
		    quiet_since < linger_ms * MS) {
			if (rx_step(0) > 0)
				quiet_since = app_now_ns();
			else
				nanosleep(&nap, NULL);
			if (app_now_ns() - last_ctl >= CTL_BUSY_NS)
				control(app_now_ns());
		}
	}
	if (c.fd >= 0)
		conn_down("Interface stopped", "stopping; disconnected");
	if (lfd >= 0 && !abstract)
		unlink(sun.sun_path);
	closefd(&lfd);
}

static long
parse_num(const char *opt, const char *s, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (*s == '\0' || *end != '\0' || errno || v < min || v > max)
		errx(2, "bad %s '%s' (%ld..%ld)", opt, s, min, max);
	return v;
}

/* Master: bind SOCKET, replacing a stale socket file nobody listens on. */
static void
master_listen(void)
{
	struct stat st;
	int fd;

	if ((lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0)) == -1)
		err(1, "socket");
	if (!abstract && lstat(sun.sun_path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			errx(1, "%s: exists and is not a socket", sockname);
		if ((fd = socket(AF_UNIX, SOCK_SEQPACKET, 0)) != -1 &&
		    connect(fd, (struct sockaddr *)&sun, sunlen) == 0)
			errx(1, "%s: another process listens on it", sockname);
		if (fd != -1)
			close(fd);
		unlink(sun.sun_path);
	}
	if (bind(lfd, (struct sockaddr *)&sun, sunlen) == -1)
		err(1, "%s: bind", sockname);
	if (listen(lfd, 4) == -1)
		err(1, "%s: listen", sockname);
	epoll_set(EPOLL_CTL_ADD, lfd);
}

static void
memif_init(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "id", required_argument, NULL, 'i' },
		{ "master", no_argument, NULL, 'M' },
		{ "slave", no_argument, NULL, 'S' },
		{ "secret", required_argument, NULL, 's' },
		{ "ring-size", required_argument, NULL, 'r' },
		{ "buffer-size", required_argument, NULL, 'b' },
		{ "lossless", no_argument, NULL, 'l' },
		{ "linger", required_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	char dir[sizeof(sockname)];
	const char *path, *d, *name = NULL;
	struct stat st;
	long v;
	int ch, i;

	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case 'i':
			id = (uint32_t)parse_num("--id", optarg, 0,
			    UINT32_MAX);
			break;
		case 'M':
			master = 1;
			break;
		case 'S':
			master = 0;
			break;
		case 's':
			if (strlen(optarg) > MEMIF_SECRET_LEN)
				errx(2, "bad --secret: longer than %d bytes",
				    MEMIF_SECRET_LEN);
			snprintf(secret, sizeof(secret), "%s", optarg);
			break;
		case 'r':
			v = parse_num("--ring-size", optarg, 2,
			    1L << MEMIF_MAX_LOG2_RING);
			if (v & (v - 1))
				errx(2, "bad --ring-size '%s': not a power of "
				    "two", optarg);
			want_log2 = (uint8_t)__builtin_ctzl((unsigned long)v);
			break;
		case 'b':
			bufsize = (uint32_t)parse_num("--buffer-size", optarg,
			    64, 65535);
			bufsize = (bufsize + 63) & ~63U;
			break;
		case 'l':
			lossless = 1;
			break;
		case 'L':
			linger_ms = (uint32_t)parse_num("--linger", optarg, 0,
			    3600000);
			break;
		case 'h':
			printf("usage: snb-memif " USAGE "\n");
			exit(0);
		default:
			errx(2, "usage: snb-memif " USAGE);
		}
	}
	if (optind != argc - 1)
		errx(2, "usage: snb-memif " USAGE);
	path = argv[optind];
	if (*path == '\0' || strlen(path) >= sizeof(sun.sun_path))
		errx(2, "bad SOCKET '%s' (1..%zu bytes)", path,
		    sizeof(sun.sun_path) - 1);
	snprintf(sockname, sizeof(sockname), "%s", path);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	/*
	 * "@NAME" or "abstract:NAME" (no '@' to quote in a graph): NAME in
	 * Linux's abstract namespace, where DPDK puts its sockets unless
	 * told socket-abstract=no.
	 */
	if (path[0] == '@')
		name = path + 1;
	else if (strncmp(path, "abstract:", 9) == 0)
		name = path + 9;
	if ((abstract = name != NULL)) {
		if (*name == '\0')
			errx(2, "bad SOCKET '%s': no name", path);
		memcpy(sun.sun_path + 1, name, strlen(name));
		sunlen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
		    1 + strlen(name));
	} else {
		memcpy(sun.sun_path, path, strlen(path));
		sunlen = sizeof(sun);
		snprintf(dir, sizeof(dir), "%s", path);
		d = dirname(dir);
		if (stat(d, &st) == -1 || !S_ISDIR(st.st_mode))
			errx(1, "%s: no directory '%s' for the socket", path,
			    d);
	}
	for (i = 0; i < MEMIF_MAX_RINGS; i++)
		c.s2m_fd[i] = c.m2s_fd[i] = c.rx[i].efd = c.tx[i].efd = -1;
	if ((epfd = epoll_create1(EPOLL_CLOEXEC)) == -1)
		err(1, "epoll_create1");
	app_wait_fd(epfd, POLLIN);
	if (master)
		master_listen();
	k.rx_packets = app_counter("rx-packets");
	k.rx_bytes = app_counter("rx-bytes");
	k.tx_packets = app_counter("tx-packets");
	k.tx_bytes = app_counter("tx-bytes");
	k.drop_disconnected = app_counter("drop-disconnected");
	k.drop_oversize = app_counter("drop-oversize");
	k.drop_no_output = app_counter("drop-no-output");
	k.connects = app_counter("connects");
	k.disconnects = app_counter("disconnects");
	k.bad_messages = app_counter("bad-messages");
	k.bad_descriptors = app_counter("bad-descriptors");
	k.kicks = app_counter("kicks-sent");
}

static const struct port_desc ports[] = {
	{ "in", PORT_IN },
	{ "out", PORT_OUT },
	{ NULL, 0 }
};

static const struct app_desc desc = {
	.name = "memif",
	.usage = USAGE,
	.summary = "A memif interface (VPP, DPDK): packets the peer sends "
	    "go to 'out'; the packets of 'in' are sent to it.",
	.device = 1,
	.ports = ports,
	.init = memif_init,
	.breathe = memif_breathe,
	.stop = memif_stop,
};

int
main(int argc, char **argv)
{
	return app_main(&desc, argc, argv);
}
