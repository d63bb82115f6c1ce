/*
 * virtio_ring.c: the split virtqueues of snb-nic's virtio-net driver, apart
 * from the PCI transport (see virtio_ring.h).  Frames are copied between
 * ring slots and the queue's buffers: ring slots are shared memory whose
 * physical addresses the device cannot know.
 */
#include <string.h>

#include "virtio_ring.h"

/* A queue of size entries over its memory at mem, all else zero. */
static void
vq_layout(struct vq *q, uint16_t index, uint16_t size, unsigned char *mem,
    volatile uint16_t *notify, uint64_t *used_errors)
{
	uint16_t i;

	*q = (struct vq){ .index = index, .size = size, .mask = size - 1,
	    .desc = (struct vq_desc *)mem,
	    .avail = (struct vq_avail *)(mem + AVAIL_OFF),
	    .used = (struct vq_used *)(mem + USED_OFF), .buf = mem + BUFS_OFF,
	    .notify = notify, .used_errors = used_errors };
	/* Transmit: every descriptor idle (receive keeps busy[] only). */
	for (i = 0; i < size; i++)
		q->free[i] = (uint16_t)(size - 1 - i);
	q->nfree = size;
}

void
vq_init(struct vq *q, uint16_t index, uint16_t size, unsigned char *mem,
    uint64_t phys, volatile uint16_t *notify, uint64_t *used_errors)
{
	uint32_t i;

	memset(mem, 0, QREGION);
	vq_layout(q, index, size, mem, notify, used_errors);
	for (i = 0; i < size; i++)
		q->desc[i].addr = phys + BUFS_OFF + (uint64_t)i * BUF_SIZE;
	/* The headers stay zero: no offload, no GSO. */
	q->avail->flags = AVAIL_F_NO_INTERRUPT;
}

int
vq_attach(struct vq *q, uint16_t index, uint16_t size, unsigned char *mem,
    volatile uint16_t *notify, uint64_t *used_errors, int rx)
{
	uint16_t i, avail;

	vq_layout(q, index, size, mem, notify, used_errors);
	avail = __atomic_load_n(&q->avail->idx, __ATOMIC_ACQUIRE);
	q->avail_idx = avail;
	if (rx) {
		q->used_idx = (uint16_t)(avail - size);
		for (i = 0; i < size; i++)
			q->busy[i] = 1;
		return 0;
	}
	if (__atomic_load_n(&q->used->idx, __ATOMIC_ACQUIRE) != avail)
		return -1;
	q->used_idx = avail;
	return 0;
}

void
vq_rx_post_all(struct vq *q)
{
	uint16_t i;

	q->nfree = 0;
	for (i = 0; i < q->size; i++) {
		q->desc[i].len = BUF_SIZE;
		q->desc[i].flags = DESC_F_WRITE;
		q->avail->ring[i] = i;
		q->busy[i] = 1;
	}
	q->avail_idx = q->size;
}

/*
 * The full fence orders our store of avail->idx before our load of
 * used->flags: the device does the mirror image (sets the flag, then looks
 * at avail->idx once more), so one of us sees the other's store and a
 * burst cannot be left unnoticed (2.7.10).
 */
void
vq_publish(struct vq *q)
{
	__atomic_store_n(&q->avail->idx, q->avail_idx, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!(__atomic_load_n(&q->used->flags, __ATOMIC_RELAXED) &
	    USED_F_NO_NOTIFY))
		*q->notify = q->index;
}

/* Entry i of the used ring, each field loaded once: the device may
 * rewrite them between our check and our use. */
static void
used_entry(struct vq *q, uint16_t i, uint32_t *id, uint32_t *len)
{
	struct vq_used_elem *e = &q->used->ring[i & q->mask];

	*id = __atomic_load_n(&e->id, __ATOMIC_RELAXED);
	*len = __atomic_load_n(&e->len, __ATOMIC_RELAXED);
}

/*
 * A buffer the device held is posted again (one with a bad length too, its
 * frame dropped), and is busy again only once published: returned twice
 * in one burst, it is counted the second time, not posted twice.
 */
void
vq_rx(struct vq *q, struct nic *nic, struct rx_burst *b)
{
	struct packet *p;
	uint32_t id, len, i, n = 0;
	uint16_t end, posted[MAX_QSIZE];	/* n <= ids busy <= size */

	end = __atomic_load_n(&q->used->idx, __ATOMIC_ACQUIRE);
	while (q->used_idx != end && b->seen < b->budget) {
		used_entry(q, q->used_idx++, &id, &len);
		if (id >= q->size || !q->busy[id]) {
			(*q->used_errors)++;
			b->seen++;
			continue;
		}
		if (len < NET_HDR || len > BUF_SIZE) {
			(*q->used_errors)++;
			b->seen++;
		} else if ((p = nic_rx_slot(nic, b, len - NET_HDR,
		    b->ts_ns)) != NULL)
			memcpy(p->data, q->buf + id * BUF_SIZE + NET_HDR,
			    len - NET_HDR);
		q->busy[id] = 0;
		q->avail->ring[q->avail_idx++ & q->mask] = (uint16_t)id;
		posted[n++] = (uint16_t)id;
	}
	if (n == 0)
		return;
	vq_publish(q);
	for (i = 0; i < n; i++)
		q->busy[posted[i]] = 1;
}

/* At most size entries a call: a device that moves used->idx by more
 * cannot make us walk the ring all day. */
void
vq_tx_reclaim(struct vq *q)
{
	uint32_t id, len, k;
	uint16_t end;

	end = __atomic_load_n(&q->used->idx, __ATOMIC_ACQUIRE);
	for (k = 0; q->used_idx != end && k < q->size; k++) {
		used_entry(q, q->used_idx++, &id, &len);
		if (id < q->size && q->busy[id]) {
			q->busy[id] = 0;
			q->free[q->nfree++] = (uint16_t)id;
		} else
			(*q->used_errors)++;
	}
}

uint32_t
vq_tx(struct vq *q, struct nic *nic, struct ring *in, uint32_t n)
{
	struct packet *p;
	uint32_t i, len, queued = 0;
	uint16_t id;

	vq_tx_reclaim(q);
	for (i = 0; i < n && q->nfree > 0; i++) {
		p = ring_peek(in, i);
		len = nic_tx_len(in, p);
		if (len > MAX_FRAME) {
			(*nic->c.drop_tx_error)++;
			continue;
		}
		id = q->free[--q->nfree];
		q->busy[id] = 1;
		memcpy(q->buf + id * BUF_SIZE + NET_HDR, p->data, len);
		q->desc[id].len = NET_HDR + len;
		q->avail->ring[q->avail_idx++ & q->mask] = id;
		nic_tx_sent(nic, len);
		queued++;
	}
	if (queued)
		vq_publish(q);
	return i;
}
