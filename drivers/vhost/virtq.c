/*
 * virtq.c: snb-vhost's data path over split virtqueues (virtio 1.x, 2.7).
 *
 * The driver (the frontend) offers descriptor chains through the available
 * ring; we, the device, hand them back through the used ring.  The
 * frontend can change all of it under our feet, so each descriptor is
 * copied once before it is looked at, every index is checked against the
 * queue size, every buffer goes through vu_gpa() (inside one region or
 * refused), and a chain is at most as long as its table (no loops).
 * Anything malformed returns -1 and the caller drops the frontend (our
 * DEVICE_NEEDS_RESET).
 *
 * The work is bounded by us: a frame may use at most VQ_FRAME_DESCS
 * descriptors over all the chains it spans (DPDK's limit; 8 bytes a
 * buffer for a 2 KiB frame), and an empty descriptor is malformed (as in
 * QEMU).  Without both, empty descriptors with mergeable buffers let one
 * frame walk every chain of a 32,768-entry queue: seconds, every breath.
 *
 * Ordering: avail->idx is load-acquired before the entries and descriptors
 * it covers are read; used entries are written before used->idx is
 * store-released.  Notification decisions need a full fence between our
 * store and the load of the other side's flags (as in ring.h's sleeping).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "vhost.h"

#define VQ_FRAME_DESCS	256	/* descriptors one frame may use, at most */

/* Where we are in one descriptor chain. */
struct chain {
	const struct vring_desc	*tbl;	/* the queue's table or an indirect one */
	uint32_t	 tsize;		/* entries in tbl */
	uint32_t	 hops;		/* descriptors followed: <= tsize */
	uint32_t	 descs;		/* used by this frame, all its chains */
	const char	*why;		/* what was malformed */
	uint16_t	 next;		/* valid when more */
	int		 more;		/* the current descriptor has NEXT */
	int		 write;		/* we want device-writable buffers */
	uint8_t		*p;		/* the current buffer's unused part */
	uint32_t	 left;
};

static uint16_t
load_avail_idx(const struct vu_vring *vq)
{
	return __atomic_load_n(&vq->avail->idx, __ATOMIC_ACQUIRE);
}

static int
chain_bad(struct chain *c, const char *why)
{
	c->why = why;
	return -1;
}

/* Take the descriptor c->tbl[i] as the current buffer; -1 if malformed. */
static int
chain_load(struct vu_dev *d, struct chain *c, uint32_t i)
{
	struct vring_desc desc;

	if (i >= c->tsize || ++c->hops > c->tsize)
		return chain_bad(c, "index out of the table or a loop");
	if (++c->descs > VQ_FRAME_DESCS)
		return chain_bad(c, "a frame of more than 256 descriptors");
	memcpy(&desc, (const void *)&c->tbl[i], sizeof(desc));
	if (desc.flags & VRING_DESC_F_INDIRECT)	/* only a head, once */
		return chain_bad(c, "a nested indirect descriptor");
	if (!!(desc.flags & VRING_DESC_F_WRITE) != c->write)
		return chain_bad(c, "a descriptor of the wrong direction");
	if (desc.len == 0)
		return chain_bad(c, "an empty descriptor");
	if ((c->p = vu_gpa(d, desc.addr, desc.len)) == NULL)
		return chain_bad(c, "a buffer outside guest memory");
	c->left = desc.len;
	c->more = desc.flags & VRING_DESC_F_NEXT;
	c->next = desc.next;
	return 0;
}

/* Start on the chain whose head is head. */
static int
chain_start(struct vu_dev *d, struct vu_vring *vq, struct chain *c,
    uint32_t head, int write)
{
	struct vring_desc desc;

	c->write = write;
	c->hops = 0;
	c->tbl = vq->desc;
	c->tsize = vq->num;
	if (head >= vq->num)
		return chain_bad(c, "a head out of the table");
	memcpy(&desc, (const void *)&vq->desc[head], sizeof(desc));
	if (!(desc.flags & VRING_DESC_F_INDIRECT))
		return chain_load(d, c, head);
	if (!(d->features & (1ULL << VIRTIO_F_RING_INDIRECT_DESC)) ||
	    (desc.flags & VRING_DESC_F_NEXT) || desc.len == 0 ||
	    desc.len % sizeof(struct vring_desc) != 0 ||
	    desc.len / sizeof(struct vring_desc) > VU_MAX_QUEUE_SIZE ||
	    (c->tbl = (const void *)vu_gpa(d, desc.addr, desc.len)) == NULL ||
	    ((uintptr_t)c->tbl & 15))
		return chain_bad(c, "a bad indirect table");
	c->tsize = desc.len / sizeof(struct vring_desc);
	return chain_load(d, c, 0);
}

/* The next buffer of the chain: 1, 0 at the end, -1 if malformed. */
static int
chain_next(struct vu_dev *d, struct chain *c)
{
	if (!c->more)
		return 0;
	return chain_load(d, c, c->next) == -1 ? -1 : 1;
}

static void
notify(struct vu_vring *vq, struct vh_counters *c)
{
	uint64_t one = 1;

	__atomic_store_n(&vq->used->idx, vq->used_idx, __ATOMIC_RELEASE);
	atomic_thread_fence(memory_order_seq_cst);
	if (vq->call < 0 || (__atomic_load_n(&vq->avail->flags,
	    __ATOMIC_RELAXED) & VRING_AVAIL_F_NO_INTERRUPT))
		return;
	/* Non-blocking (msg.c made sure): a full counter (EAGAIN) means
	 * the frontend has a call pending it has not read. */
	if (write(vq->call, &one, sizeof(one)) == sizeof(one))
		(*c->calls)++;
	else if (errno == EAGAIN)
		(*c->calls_full)++;
}

static void
put_used(struct vu_vring *vq, uint16_t at, uint32_t head, uint32_t len)
{
	struct vring_used_elem *e = &vq->used->ring[at & (vq->num - 1)];

	e->id = head;
	e->len = len;
}

int
vq_pending(const struct vu_vring *vq)
{
	return load_avail_idx(vq) != vq->last_avail;
}

int
vq_want_kicks(struct vu_vring *vq, int on)
{
	uint16_t flags = on ? 0 : VRING_USED_F_NO_NOTIFY;

	if (vq->used_flags != flags) {
		vq->used_flags = flags;
		__atomic_store_n(&vq->used->flags, flags, __ATOMIC_RELAXED);
		atomic_thread_fence(memory_order_seq_cst);
	}
	return vq_pending(vq);
}

/*
 * Copy one frame, behind a virtio-net header, into the buffers of one or
 * more chains (several only with mergeable rx buffers: num_buffers in the
 * header says how many).  Returns 1 delivered, 2 dropped (no mergeable
 * buffers and the chain is too small), 0 out of buffers (nothing of the
 * frame is visible to the driver: last_avail and used_idx are unchanged),
 * -1 malformed (d->err says how).
 */
static int
deliver(struct vu_dev *d, struct vu_vring *vq, uint16_t avail_idx,
    const uint8_t *data, uint32_t len)
{
	uint8_t hdr[12], *nb[2] = { NULL, NULL };
	uint32_t hlen = d->hdr_len, total = hlen + len, off = 0, clen = 0, k;
	uint16_t pos = vq->last_avail, nbuf = 0, head;
	int mrg = (d->features & (1ULL << VIRTIO_NET_F_MRG_RXBUF)) != 0;
	struct chain c;

	memset(hdr, 0, sizeof(hdr));	/* no offloads: flags 0, GSO none */
	c.descs = 0;
	if (pos == avail_idx)
		return 0;
	head = vq->avail->ring[pos++ & (vq->num - 1)];
	if (chain_start(d, vq, &c, head, 1) == -1)
		goto bad;
	while (off < total) {
		if (c.left == 0) {
			int r = chain_next(d, &c);
			if (r == -1)
				goto bad;
			if (r == 1)
				continue;
			/* This chain is full. */
			if (!mrg) {
				put_used(vq, vq->used_idx++, head, 0);
				vq->last_avail = pos;
				return 2;
			}
			put_used(vq, vq->used_idx + nbuf++, head, clen);
			clen = 0;
			if (pos == avail_idx)
				return 0;
			head = vq->avail->ring[pos++ & (vq->num - 1)];
			if (chain_start(d, vq, &c, head, 1) == -1)
				goto bad;
			continue;
		}
		k = c.left < total - off ? c.left : total - off;
		if (off < hlen) {
			/* The header, byte by byte unless it fits whole:
			 * remember where num_buffers went. */
			if (off == 0 && k >= hlen) {
				memcpy(c.p, hdr, hlen);
				nb[0] = c.p + 10;
				nb[1] = c.p + 11;
				k = hlen;
			} else {
				k = 1;
				*c.p = hdr[off];
				if (off == 10 || off == 11)
					nb[off - 10] = c.p;
			}
		} else
			memcpy(c.p, data + (off - hlen), k);
		c.p += k;
		c.left -= k;
		clen += k;
		off += k;
	}
	put_used(vq, vq->used_idx + nbuf++, head, clen);
	if (hlen == 12) {
		/* num_buffers, little-endian (a legacy header has none). */
		*nb[0] = (uint8_t)nbuf;
		*nb[1] = (uint8_t)(nbuf >> 8);
	}
	vq->used_idx += nbuf;
	vq->last_avail = pos;
	return 1;
bad:
	snprintf(d->err, sizeof(d->err), "receive queue: malformed "
	    "descriptor chain: %s", c.why);
	return -1;
}

int
vq_to_frontend(struct vu_dev *d, struct ring *r, uint32_t n,
    struct vh_counters *c)
{
	struct vu_vring *vq = &d->vq[0];
	uint16_t avail_idx = load_avail_idx(vq);
	uint32_t i, len;
	int res = 0;

	if ((uint16_t)(avail_idx - vq->last_avail) > vq->num) {
		snprintf(d->err, sizeof(d->err), "receive queue: avail index "
		    "%u is %u ahead of ours", avail_idx,
		    (uint16_t)(avail_idx - vq->last_avail));
		return -1;
	}
	for (i = 0; i < n; i++) {
		const struct packet *p = ring_peek(r, i);

		len = packet_len(r, p);
		res = deliver(d, vq, avail_idx, p->data, len);
		if (res <= 0)
			break;
		if (res == 2) {
			(*c->drop_short_buffer)++;
			continue;
		}
		(*c->tx_packets)++;
		*c->tx_bytes += len;
	}
	if (i > 0)
		notify(vq, c);
	return res == -1 ? -1 : (int)i;
}

int
vq_from_frontend(struct vu_dev *d, struct ring *out, uint32_t room,
    struct vh_counters *c)
{
	struct vu_vring *vq = &d->vq[1];
	uint16_t avail_idx = load_avail_idx(vq), navail, head;
	uint32_t i, n, put = 0, skip, k, cap = out ? out->capacity : 0;
	uint64_t len;
	struct packet *p = NULL;
	struct chain ch;
	int r;

	navail = (uint16_t)(avail_idx - vq->last_avail);
	if (navail > vq->num) {
		snprintf(d->err, sizeof(d->err), "transmit queue: avail index "
		    "%u is %u ahead of ours", avail_idx, navail);
		return -1;
	}
	n = navail < room ? navail : room;
	for (i = 0; i < n; i++) {
		head = vq->avail->ring[vq->last_avail & (vq->num - 1)];
		ch.descs = 0;
		if (chain_start(d, vq, &ch, head, 0) == -1)
			goto bad;
		if (out)
			p = ring_slot(out, put);
		/* Skip the header (it may share a buffer with the frame). */
		skip = d->hdr_len;
		len = 0;
		for (r = 1; r == 1; r = chain_next(d, &ch)) {
			k = ch.left < skip ? ch.left : skip;
			skip -= k;
			ch.p += k;
			ch.left -= k;
			if (ch.left == 0)
				continue;
			if (p && len + ch.left <= cap)
				memcpy(p->data + len, ch.p, ch.left);
			len += ch.left;
		}
		if (r == -1)
			goto bad;
		put_used(vq, vq->used_idx++, head, 0);
		vq->last_avail++;
		if (out == NULL) {
			(*c->drop_unwired)++;
		} else if (len > cap) {
			(*c->drop_oversize)++;
		} else {
			p->len = (uint16_t)len;
			p->flags = 0;
			p->wirelen = 0;
			p->ts_ns = 0;
			put++;
			(*c->rx_packets)++;
			*c->rx_bytes += len;
		}
	}
	if (put)
		ring_commit(out, put);
	if (n)
		notify(vq, c);
	return (int)n;
bad:
	if (put)
		ring_commit(out, put);
	snprintf(d->err, sizeof(d->err), "transmit queue: malformed "
	    "descriptor chain (head %u): %s", head, ch.why);
	return -1;
}
