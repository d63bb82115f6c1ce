/*
 * snb-memif: a memif interface (VPP's, DPDK's net_memif) as a device app;
 * snb-memif(1) says what it does.  This file: options, the data path and
 * the breath; the control protocol is decoded and checked in msg.c.
 * Everything in shared memory is written by a process we do not trust, so
 * the data path reads each index and each descriptor once into a local
 * and checks it before use: a ring index that moves too far or a buffer
 * outside its region ends the connection (one log line, counted), never a
 * stray access.
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
 */
#define _GNU_SOURCE
#include <sys/epoll.h>

#include <err.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "forward.h"
#include "memguard.h"
#include "memif.h"

#define USAGE	"SOCKET [--id N] [--master|--slave] [--secret STRING] " \
		"[--ring-size N] [--buffer-size N] [--lossless] [--linger MS]"

struct unix_sock sock = { .fd = -1 };
int master = 1, lossless;
uint32_t id, bufsize = 2048;
uint8_t want_log2 = 10;
char secret[MEMIF_SECRET_LEN + 1];
unsigned idle_breaths;
struct memif_counters cnt;
static const char *const cnt_names[] = { "rx-packets", "rx-bytes",
    "tx-packets", "tx-bytes", "drop-disconnected", "drop-oversize",
    "drop-no-output", "connects", "disconnects", "bad-messages",
    "bad-descriptors", "kicks-sent", "kicks-received", "memory-faults",
    NULL };

static uint32_t linger_ms;
static uint64_t last_busy_ns;		/* the last breath that moved any */
static uint64_t wake_ns;		/* earliest timer of this breath */
static struct port *out;
static struct fwd txf;			/* the "in" rings, taken in turn */

/* Breathe again by t at the latest (the runtime sleeps until then). */
void
wake_by(uint64_t t)
{
	if (wake_ns == 0 || t < wake_ns)
		wake_ns = t;
}

/* --- packets --- */

static void
kick(struct mring *r)
{
	uint64_t one = 1;

	if (r->efd >= 0 && !(*r_flags(r) & MEMIF_RING_FLAG_MASK_INT)) {
		(*cnt.kicks)++;
		if (write(r->efd, &one, sizeof(one)) == -1)
			return;	/* EAGAIN: the counter is full, a kick waits */
	}
}

/*
 * Master: the bytes of the slave's memory that descriptor d (slot i of a
 * ring) names, at least min of them, or NULL after bad_ring() when they
 * lie outside its regions.
 */
static unsigned char *
desc_buf(const char *ring, uint16_t i, const struct memif_desc *d,
    uint32_t min)
{
	if (d->region >= conn.nregions || d->length < min ||
	    (uint64_t)d->offset + d->length > conn.reg[d->region].size) {
		bad_ring("%sdescriptor %u: region %u offset %u length %u out "
		    "of bounds", ring, i, d->region, d->offset, d->length);
		return NULL;
	}
	return conn.reg[d->region].addr + d->offset;
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
	uint16_t avail, s, e, x, limit;
	uint64_t total;		/* 64 bits: peer lengths must not wrap it */
	uint32_t len, cap = o ? o->capacity : 0;
	const unsigned char *src;
	struct memif_desc d;
	struct packet *p;
	int over;

	/* The peer publishes with head on s2m (we are master), tail on m2s. */
	avail = (uint16_t)(atomic_load_explicit(master ? r_head(r) : r_tail(r),
	    memory_order_acquire) - r->last);
	limit = master ? (uint16_t)r->size : (uint16_t)(r->posted - r->last);
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
				if ((src = desc_buf("", e & r->mask, &d,
				    0)) == NULL)
					return -1;
			} else {
				if (len > bufsize) {
					bad_ring("descriptor %u: length %u > "
					    "buffer size %u", e & r->mask, len,
					    bufsize);
					return -1;
				}
				src = conn.reg[0].addr + r->buf0 +
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
		/*
		 * Master: clear the flags of the slots we consumed.  The slave
		 * owns them, but DPDK's net_memif writes a packet's first
		 * descriptor without resetting its flags, so a NEXT left from
		 * an earlier chain in that slot would glue two packets.
		 */
		if (master)
			for (x = s; x != (uint16_t)(e + 1); x++)
				r_desc(r, x)->flags = 0;
		avail -= (uint16_t)(e + 1 - s);
		s = (uint16_t)(e + 1);
		if (o == NULL)
			(*cnt.drop_no_output)++;
		else if (over)
			(*cnt.drop_oversize)++;
		else {
			p->len = (uint16_t)total;
			p->flags = 0;
			p->wirelen = 0;
			p->ts_ns = ts;
			n++;
			(*cnt.rx_packets)++;
			*cnt.rx_bytes += total;
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
		slave_post(r, r->posted, (uint16_t)(s + r->size));
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
tx_ring(struct mring *t, struct ring *src, uint32_t n)
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
		p = ring_peek(src, i);
		len = packet_len(src, p);
		s0 = s;
		done = 0;
		do {
			if ((uint16_t)(s - t->last) == free)
				goto full;
			vd = r_desc(t, s);
			if (master) {
				d = desc_read(vd);
				if ((dst = desc_buf("m2s ", s & t->mask, &d,
				    1)) == NULL)
					return -1;
				chunk = len - done < d.length ? len - done :
				    d.length;
			} else {
				d.offset = t->buf0 + (uint32_t)(s & t->mask) *
				    bufsize;
				dst = conn.reg[0].addr + d.offset;
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
		(*cnt.tx_packets)++;
		*cnt.tx_bytes += len;
		continue;
full:
		s = s0;
		if (s0 != t->last || free != t->size)
			break;		/* wait for the peer to make room */
		(*cnt.drop_oversize)++;	/* would not fit an empty ring */
	}
	if (s != t->last) {
		t->last = s;
		atomic_store_explicit(master ? r_tail(t) : r_head(t), s,
		    memory_order_release);
		kick(t);
	}
	return (int)i;
}

/* Send a burst of "in" to the peer (fwd_take releases what it took). */
static uint32_t
tx_take(void *ctx, int from, struct ring *r, uint32_t n)
{
	int k;

	if (conn.state != C_UP) {
		if (!ever_up || lossless) {
			wake_by(app_now_ns() + MS);
			return 0;	/* wait in the ring */
		}
		*cnt.drop_disconnected += n;
		return n;
	}
	if ((k = tx_ring(&conn.tx[0], r, n)) < 0)
		return 0;	/* the connection ended */
	if ((uint32_t)k < n)
		wake_by(app_now_ns() + 50000);	/* peer full */
	return (uint32_t)k;
}

/* Receive on every ring; while idle, ask the peer for kicks. */
static uint32_t
rx_step(int idle)
{
	uint64_t t = app_realtime_ns();
	uint32_t total = 0;
	unsigned i;
	int n;

	for (i = 0; i < conn.nrx && conn.state == C_UP; i++) {
		struct mring *r = &conn.rx[i];

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

	wake_ns = 0;
	if (idle_breaths >= IDLE_UNMASK || now - last_ctl >= CTL_BUSY_NS)
		control(now, 0);
	n += (uint32_t)fwd_take(&txf, tx_take, NULL);
	if (conn.state == C_UP)
		n += rx_step(idle_breaths >= IDLE_UNMASK);
	(void)memory_lost();	/* a fault that broke no check */
	idle_breaths = n ? 0 : idle_breaths + 1;
	if (n)
		last_busy_ns = now;
	app_wake_at(wake_ns);
	/*
	 * End of input: with --linger, keep receiving until the peer has
	 * sent nothing for that long (packets still in flight through a
	 * loop, as with a testpmd that echoes them).
	 */
	if (n == 0 && app_inputs_done() && conn.state == C_UP &&
	    now - last_busy_ns < (uint64_t)linger_ms * MS) {
		control(now, 1);
		return 1;
	}
	return (int)n;
}

/* Say DISCONNECT and close. */
static void
memif_stop(int eof)
{
	if (conn.fd >= 0)
		conn_down("Interface stopped", "stopping; disconnected");
	unix_sock_close(&sock);
}

static void
secret_opt(const char *opt, char *arg, void *var)
{
	if (strlen(arg) > MEMIF_SECRET_LEN)
		errx(2, "bad --secret: longer than %d bytes", MEMIF_SECRET_LEN);
	snprintf(secret, sizeof(secret), "%s", arg);
}

static void
ring_size_opt(const char *opt, char *arg, void *var)
{
	long long v = app_parse_num(opt, arg, 2, 1LL << MEMIF_MAX_LOG2_RING);

	if (v & (v - 1))
		errx(2, "bad --ring-size '%s': not a power of two", arg);
	want_log2 = (uint8_t)__builtin_ctzll((unsigned long long)v);
}

static void
memif_init(int argc, char **argv)
{
	static int slave;
	static const struct app_opt opts[] = {
		APP_NUM("id", &id, 0, UINT32_MAX),
		APP_FLAG("master", NULL),
		APP_FLAG("slave", &slave),
		APP_ARG("secret", secret_opt, NULL, NULL),
		APP_ARG("ring-size", ring_size_opt, NULL, NULL),
		APP_NUM("buffer-size", &bufsize, 64, 65535),
		APP_FLAG("lossless", &lossless),
		APP_NUM("linger", &linger_ms, 0, 3600000),
		APP_OPT_END
	};
	int i;

	if (app_options(argc, argv, opts, APP_OPT_PERMUTE | APP_OPT_WORDS) !=
	    argc - 1)
		app_usage();
	master = !slave;
	bufsize = (bufsize + 63) & ~63U;
	unix_sock_addr(&sock, argv[argc - 1], UNIX_ABSTRACT);
	for (i = 0; i < MEMIF_MAX_RINGS; i++)
		conn.rx[i].efd = conn.tx[i].efd = -1;
	if (app_checking())
		return;		/* snb-run -c: the words hold; bind nothing */
	if ((epfd = epoll_create1(EPOLL_CLOEXEC)) == -1)
		err(1, "epoll_create1");
	if (memguard_init() == -1)
		err(1, "sigaction SIGBUS");
	app_wait_fd(epfd, POLLIN);
	out = app_port("out");
	fwd_init(&txf, (const char *const[]){ "in", NULL }, NULL);
	app_counters((uint64_t **)&cnt, cnt_names);
}

/*
 * The master listens once the stage is ours: a swap's replacement is
 * made while its predecessor still listens on the socket, and takes it
 * over only after that one has let go.
 */
static void
memif_start(void)
{
	if (master) {
		unix_sock_listen(&sock, SOCK_SEQPACKET | SOCK_NONBLOCK, 4);
		epoll_set(epfd, EPOLL_CTL_ADD, sock.fd);
	}
}

static const struct app_desc desc = {
	.name = "memif",
	.usage = USAGE,
	.summary = "A memif interface (VPP, DPDK): packets the peer sends "
	    "go to 'out'; the packets of 'in' are sent to it.",
	.device = 1,
	.ports = app_device_ports,
	.init = memif_init,
	.start = memif_start,
	.breathe = memif_breathe,
	.stop = memif_stop,
};

APP_MAIN(desc)
