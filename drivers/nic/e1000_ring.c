/*
 * e1000_ring.c: the e1000 driver's receive and transmit rings, apart from
 * its registers (see e1000_ring.h).  Frames are copied between the rings'
 * buffers and ring slots: the graph's rings are not DMA memory.
 */
#include <string.h>

#include "e1000_ring.h"

void
e1000_rxq_init(struct e1000_rxq *q, void *mem, uint64_t phys,
    uint64_t *desc_errors, uint64_t *bad_length)
{
	uint32_t i;

	*q = (struct e1000_rxq){ .desc = mem, .buf = (uint8_t *)mem +
	    RING_BYTES, .desc_errors = desc_errors, .bad_length = bad_length };
	for (i = 0; i < NDESC; i++) {
		q->desc[i].addr = phys + RING_BYTES + (uint64_t)i * BUF;
		q->desc[i].status = 0;
	}
}

void
e1000_txq_init(struct e1000_txq *q, void *mem, uint64_t phys)
{
	*q = (struct e1000_txq){ .desc = mem, .buf = (uint8_t *)mem +
	    RING_BYTES, .buf_phys = phys + RING_BYTES };
}

/*
 * Frames that span descriptors cannot occur with long-packet reception off
 * (the device drops those and counts them in ROC), but are dropped and
 * counted should they.
 */
uint32_t
e1000_rx_burst(struct e1000_rxq *q, struct nic *nic, struct rx_burst *b)
{
	volatile struct rx_desc *d;
	struct packet *p;
	uint32_t i = q->next, done = 0, len;
	uint8_t st;

	while (done < b->budget) {
		d = &q->desc[i];
		if (!((st = d->status) & RXD_DD))
			break;
		/* The status load before the loads of what it guards. */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		len = d->length;
		if (!(st & RXD_EOP)) {
			if (!q->partial)
				(*nic->c.drop_oversize)++;
			q->partial = 1;
			b->seen++;
		} else if (q->partial) {
			q->partial = 0;	/* the end of a dropped one */
		} else if (d->errors & RXE_FRAME) {
			(*q->desc_errors)++;
			b->seen++;
		} else if (len == 0 || len > BUF) {
			(*q->bad_length)++;
			b->seen++;
		} else if ((p = nic_rx_slot(nic, b, len, b->ts_ns)) != NULL)
			memcpy(p->data, q->buf + (size_t)i * BUF, len);
		d->status = 0;
		i = (i + 1) % NDESC;
		done++;
	}
	q->next = i;
	/* Descriptor stores before the caller's tail write (x86: a
	 * compiler fence). */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	return done;
}

uint32_t
e1000_rx_tail(const struct e1000_rxq *q)
{
	return (q->next + NDESC - 1) % NDESC;
}

/* Packets that cannot be sent (empty, larger than a buffer) are taken and
 * counted in drop-tx-error. */
uint32_t
e1000_tx_burst(struct e1000_txq *q, struct nic *nic, struct ring *in,
    uint32_t n)
{
	struct packet *p;
	uint32_t i, len, used, t = q->tail;

	while (q->clean != t && (q->desc[q->clean].status & TXD_DD))
		q->clean = (q->clean + 1) % NDESC;
	used = (t + NDESC - q->clean) % NDESC;
	if (n > NDESC - 1 - used)
		n = NDESC - 1 - used;
	for (i = 0; i < n; i++) {
		p = ring_peek(in, i);
		len = nic_tx_len(in, p);
		if (len == 0 || len > BUF) {
			(*nic->c.drop_tx_error)++;
			continue;
		}
		memcpy(q->buf + (size_t)t * BUF, p->data, len);
		/* Plain stores: the device reads it only after the tail write
		 * (the fence below); volatile, it is built on the stack and
		 * copied. */
		*(struct tx_desc *)&q->desc[t] = (struct tx_desc){
		    .addr = q->buf_phys + (uint64_t)t * BUF,
		    .length = (uint16_t)len,
		    .cmd = TXD_EOP | TXD_IFCS | TXD_RS };
		t = (t + 1) % NDESC;
		nic_tx_sent(nic, len);
	}
	q->tail = t;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	return n;
}
