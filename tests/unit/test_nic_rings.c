/*
 * test_nic_rings: snb-nic's PCI ring code (drivers/nic/virtio_ring.c,
 * e1000_ring.c) against a model of a device that misbehaves: it returns
 * descriptor ids twice or that it never had, lengths that do not fit the
 * buffer, and moves its used index far ahead.  The driver must count each, never read
 * outside a buffer, never post a buffer twice nor free one twice; what a
 * correct device returns must still arrive whole.  The device here is
 * plain memory the test writes into, as a device's DMA would.
 */
#include <err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "../../drivers/nic/e1000_ring.h"
#include "../../drivers/nic/virtio_ring.h"

#define PHYS	0x40000000ULL	/* where the device believes the queue is */

static struct ring out_p, out_c, in_p, in_c;
static struct nic nic;
static uint64_t cnt[10], used_errors;
static volatile uint16_t notify_reg = 0xffff;

static void
make_ring(const char *name, struct ring *prod, struct ring *cons)
{
	char path[256], eb[256];

	snprintf(path, sizeof(path), "/dev/shm/snb-test-nic-rings-%d-%s",
	    getpid(), name);
	unlink(path);
	if (ring_create(path, 512, 4096, 0) == -1)
		err(1, "%s", path);
	if (ring_attach(prod, path, RING_PRODUCER, eb, sizeof(eb)) == -1 ||
	    ring_attach(cons, path, RING_CONSUMER, eb, sizeof(eb)) == -1)
		errx(1, "%s", eb);
	unlink(path);
}

static void
setup_nic(void)
{
	uint64_t **c = &nic.c.rx_packets;
	size_t i;

	memset(cnt, 0, sizeof(cnt));
	for (i = 0; i < sizeof(nic.c) / sizeof(*c); i++)
		c[i] = &cnt[i];
	used_errors = 0;
}

/* Drain the output ring: how many frames, and were they as the device
 * wrote them (byte k of frame f is (f + k) & 0xff, tag f)? */
static int
drain_out(int *intact, uint32_t *lens, int max)
{
	struct packet *p;
	uint32_t k;
	int n = 0;

	*intact = 1;
	while (ring_avail(&out_c, 1)) {
		p = ring_peek(&out_c, 0);
		if (n < max)
			lens[n] = p->len;
		for (k = 0; k < p->len; k++)
			if (p->data[k] != (uint8_t)(p->data[0] + k))
				*intact = 0;
		ring_release(&out_c, 1);
		n++;
	}
	return n;
}

/* One receive burst as nic.c runs it. */
static void
rx_burst(struct vq *q, uint32_t budget)
{
	struct rx_burst b = { .ring = &out_p, .ts_ns = 1 };

	b.room = ring_room(&out_p, budget);
	b.budget = budget;
	vq_rx(q, &nic, &b);
	ring_commit(&out_p, b.n);
}

/* The device model: it returns id with len, having written a frame of
 * len - NET_HDR bytes into the id's buffer when that fits. */
static void
dev_use(struct vq *q, uint32_t id, uint32_t len, uint8_t tag)
{
	uint16_t u = q->used->idx;
	uint32_t k;

	if (id < q->size && len <= BUF_SIZE)
		for (k = NET_HDR; k < len; k++)
			q->buf[id * BUF_SIZE + k] = (uint8_t)(tag + k - NET_HDR);
	q->used->ring[u & q->mask].id = id;
	q->used->ring[u & q->mask].len = len;
	__atomic_store_n(&q->used->idx, (uint16_t)(u + 1), __ATOMIC_RELEASE);
}

/* How many times id appears among the avail entries [from, to). */
static int
posted(struct vq *q, uint16_t from, uint16_t to, uint16_t id)
{
	int n = 0;

	for (; from != to; from++)
		n += q->avail->ring[from & q->mask] == id;
	return n;
}

/* Every id busy exactly when the device may hold it (after publish). */
static int
all_busy(struct vq *q)
{
	int i;

	for (i = 0; i < q->size; i++)
		if (!q->busy[i])
			return 0;
	return 1;
}

static void
test_virtio_rx(unsigned char *mem)
{
	struct vq q;
	uint32_t lens[64];
	uint16_t a0;
	int intact, n;

	setup_nic();
	vq_init(&q, 0, 256, mem, PHYS, &notify_reg, &used_errors);
	vq_rx_post_all(&q);
	vq_publish(&q);
	ok(q.avail->idx == 256 && all_busy(&q) && q.desc[3].addr ==
	    PHYS + BUFS_OFF + 3 * BUF_SIZE && q.desc[3].len == BUF_SIZE &&
	    q.desc[3].flags == DESC_F_WRITE, "virtio rx: 256 buffers posted");

	/* A correct device: frames whole, buffers posted again. */
	a0 = q.avail_idx;
	dev_use(&q, 0, NET_HDR + 60, 10);
	dev_use(&q, 1, BUF_SIZE, 20);
	dev_use(&q, 2, NET_HDR, 30);
	rx_burst(&q, 64);
	n = drain_out(&intact, lens, 64);
	ok(n == 3 && intact && lens[0] == 60 && lens[1] == BUF_SIZE -
	    NET_HDR && lens[2] == 0 && used_errors == 0 &&
	    q.avail->idx == a0 + 3 && posted(&q, a0, q.avail_idx, 1) == 1 &&
	    all_busy(&q), "virtio rx: good frames arrive whole, reposted "
	    "(%d frames, errors %llu)", n, (unsigned long long)used_errors);

	/* The same id twice in one burst: one frame, one repost, counted. */
	a0 = q.avail_idx;
	dev_use(&q, 5, NET_HDR + 100, 40);
	dev_use(&q, 5, NET_HDR + 100, 40);
	rx_burst(&q, 64);
	n = drain_out(&intact, lens, 64);
	ok(n == 1 && used_errors == 1 && q.avail_idx == a0 + 1 &&
	    posted(&q, a0, q.avail_idx, 5) == 1 && all_busy(&q),
	    "virtio rx: an id returned twice is counted, posted once "
	    "(%d frames, errors %llu, %u posted)", n,
	    (unsigned long long)used_errors, (uint16_t)(q.avail_idx - a0));

	/* Returned again in a later burst, after our repost was published:
	 * the device may have taken the new avail entry, so it is good. */
	used_errors = 0;
	dev_use(&q, 5, NET_HDR + 64, 50);
	rx_burst(&q, 64);
	n = drain_out(&intact, lens, 64);
	ok(n == 1 && intact && used_errors == 0, "virtio rx: the same id "
	    "after its repost is published is a new frame");

	/* Ids the device never had. */
	used_errors = 0;
	a0 = q.avail_idx;
	dev_use(&q, 256, NET_HDR + 60, 0);
	dev_use(&q, 0xffff, NET_HDR + 60, 0);
	dev_use(&q, 0xffffffff, NET_HDR + 60, 0);
	rx_burst(&q, 64);
	n = drain_out(&intact, lens, 64);
	ok(n == 0 && used_errors == 3 && q.avail_idx == a0,
	    "virtio rx: ids out of range counted, nothing posted");

	/* Lengths that do not fit: dropped, counted, the buffer posted
	 * again (it is ours, the frame is not). */
	used_errors = 0;
	a0 = q.avail_idx;
	dev_use(&q, 7, BUF_SIZE + 1, 0);
	dev_use(&q, 8, 0xffffffff, 0);
	dev_use(&q, 9, NET_HDR - 1, 0);
	dev_use(&q, 10, 0, 0);
	rx_burst(&q, 64);
	n = drain_out(&intact, lens, 64);
	ok(n == 0 && used_errors == 4 && q.avail_idx == a0 + 4 &&
	    posted(&q, a0, q.avail_idx, 8) == 1 && all_busy(&q),
	    "virtio rx: lengths outside the buffer counted, buffers reposted "
	    "(%d frames, errors %llu)", n, (unsigned long long)used_errors);

	/* A used index far ahead: at most the budget per burst, and every
	 * stale entry refused (ids already returned once are not busy in
	 * the burst that returns them again). */
	used_errors = 0;
	cnt[0] = 0;
	__atomic_store_n(&q.used->idx, (uint16_t)(q.used_idx + 40000),
	    __ATOMIC_RELEASE);
	rx_burst(&q, 64);
	ok(q.used_idx == (uint16_t)(q.used->idx - 40000 + 64) &&
	    (uint16_t)(q.avail_idx - a0) <= 4 + 64 && all_busy(&q),
	    "virtio rx: a used index 40000 ahead takes one budget a burst");
	drain_out(&intact, lens, 64);
}

static void
test_virtio_tx(unsigned char *mem)
{
	struct vq q;
	struct packet *p;
	uint32_t i, n;

	setup_nic();
	vq_init(&q, 1, 8, mem, PHYS, &notify_reg, &used_errors);
	for (i = 0; i < 8; i++) {
		p = ring_slot(&in_p, i);
		p->len = (uint16_t)(60 + i);
		memset(p->data, (int)i, p->len);
	}
	ring_commit(&in_p, 8);
	n = vq_tx(&q, &nic, &in_c, ring_avail(&in_c, 8));
	ring_release(&in_c, n);
	ok(n == 8 && q.nfree == 0 && q.avail->idx == 8 &&
	    q.desc[q.avail->ring[3]].len == NET_HDR + 63 &&
	    q.buf[q.avail->ring[3] * BUF_SIZE + NET_HDR] == 3,
	    "virtio tx: 8 frames to the device");

	/* The device returns one id twice and one it never had. */
	dev_use(&q, q.avail->ring[0], 0, 0);
	dev_use(&q, q.avail->ring[0], 0, 0);
	dev_use(&q, 9, 0, 0);
	dev_use(&q, 0xffffffff, 0, 0);
	vq_tx_reclaim(&q);
	ok(q.nfree == 1 && used_errors == 3, "virtio tx: an id returned "
	    "twice is freed once, foreign ids counted (free %u, errors %llu)",
	    q.nfree, (unsigned long long)used_errors);

	/* A used index moved by 60000: one walk of at most size entries,
	 * the free stack never beyond size. */
	__atomic_store_n(&q.used->idx, (uint16_t)(q.used_idx + 60000),
	    __ATOMIC_RELEASE);
	vq_tx_reclaim(&q);
	ok(q.nfree <= q.size && (uint16_t)(q.used_idx - (q.used->idx -
	    60000)) == q.size, "virtio tx: a runaway used index walks at "
	    "most size entries a call (free %u)", q.nfree);
}

/* The e1000 model: descriptor i done with length len, status st,
 * errors er, its buffer holding a frame tagged tag when len fits. */
static void
e1000_dev_done(struct e1000_rxq *q, uint32_t i, uint32_t len, uint8_t st,
    uint8_t er, uint8_t tag)
{
	uint32_t k;

	for (k = 0; k < len && k < BUF; k++)
		q->buf[i * BUF + k] = (uint8_t)(tag + k);
	q->desc[i].length = (uint16_t)len;
	q->desc[i].errors = er;
	__atomic_store_n(&q->desc[i].status, st, __ATOMIC_RELEASE);
}

static void
test_e1000_rx(unsigned char *mem)
{
	struct e1000_rxq q;
	struct rx_burst b = { .ring = &out_p, .ts_ns = 1 };
	uint64_t desc_errors = 0, bad_length = 0;
	uint32_t lens[64], done;
	int intact, n;

	setup_nic();
	e1000_rxq_init(&q, mem, PHYS, &desc_errors, &bad_length);
	ok(q.desc[5].addr == PHYS + RING_BYTES + 5 * BUF &&
	    e1000_rx_tail(&q) == NDESC - 1, "e1000 rx: ring laid out");

	e1000_dev_done(&q, 0, 60, RXD_DD | RXD_EOP, 0, 1);
	e1000_dev_done(&q, 1, BUF, RXD_DD | RXD_EOP, 0, 2);
	e1000_dev_done(&q, 2, BUF + 1, RXD_DD | RXD_EOP, 0, 3);
	e1000_dev_done(&q, 3, 0xffff, RXD_DD | RXD_EOP, 0, 4);
	e1000_dev_done(&q, 4, 0, RXD_DD | RXD_EOP, 0, 5);
	e1000_dev_done(&q, 5, 100, RXD_DD | RXD_EOP, 0x01, 6);	/* CRC */
	e1000_dev_done(&q, 6, 0xffff, RXD_DD, 0, 7);		/* not EOP */
	e1000_dev_done(&q, 7, 0xffff, RXD_DD | RXD_EOP, 0, 8);	/* its end */
	e1000_dev_done(&q, 8, 61, RXD_DD | RXD_EOP, 0, 9);
	b.room = ring_room(&out_p, 64);
	b.budget = 64;
	done = e1000_rx_burst(&q, &nic, &b);
	ring_commit(&out_p, b.n);
	n = drain_out(&intact, lens, 64);
	ok(done == 9 && n == 3 && intact && lens[0] == 60 && lens[1] == BUF &&
	    lens[2] == 61 && bad_length == 3 && desc_errors == 1 &&
	    *nic.c.drop_oversize == 1 && q.next == 9 && e1000_rx_tail(&q) == 8 &&
	    q.desc[2].status == 0, "e1000 rx: lengths 0 and past the "
	    "2048-byte buffer dropped, counted (%d frames, bad-length %llu)",
	    n, (unsigned long long)bad_length);

	/* A budget stops the burst; the rest waits. */
	e1000_dev_done(&q, 9, 60, RXD_DD | RXD_EOP, 0, 1);
	e1000_dev_done(&q, 10, 60, RXD_DD | RXD_EOP, 0, 1);
	b.n = b.seen = 0;
	b.room = ring_room(&out_p, 1);
	b.budget = 1;
	done = e1000_rx_burst(&q, &nic, &b);
	ring_commit(&out_p, b.n);
	ok(done == 1 && q.next == 10 && drain_out(&intact, lens, 64) == 1,
	    "e1000 rx: the budget bounds a burst");
}

int
main(void)
{
	unsigned char *mem;

	if ((mem = aligned_alloc(4096, RING_MEM > QREGION ? RING_MEM :
	    QREGION)) == NULL)
		err(1, "aligned_alloc");
	make_ring("out", &out_p, &out_c);
	make_ring("in", &in_p, &in_c);
	test_virtio_rx(mem);
	test_virtio_tx(mem);
	memset(mem, 0, RING_MEM);
	test_e1000_rx(mem);
	free(mem);
	return tap_done();
}
