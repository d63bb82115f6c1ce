/*
 * virtio_ring_fuzz: libFuzzer target for snb-nic's virtio-net virtqueues
 * (drivers/nic/virtio_ring.c) against a hostile device: the input is what
 * the device writes into the used rings (any id, any length, any used
 * index) between our bursts.  The same code the driver runs; the queue's
 * notification register is a plain variable.
 *
 * Build and run (from the repository root; `make fuzz` does both):
 *
 *	clang -g -O1 -fsanitize=fuzzer,address,undefined \
 *	    -fno-sanitize-recover=undefined -Ilibring -Idrivers/nic \
 *	    fuzz/virtio_ring_fuzz.c drivers/nic/virtio_ring.c \
 *	    (every libring .c file) -lpcap -lbsd -o build/fuzz_virtio
 *	build/fuzz_virtio -max_total_time=600 build/fuzz-virtio-corpus \
 *	    fuzz/corpus/virtio
 *
 * An input starts with [size:1] (the queues' size: 1 << (size % 9)) and
 * goes on as a sequence of records, each starting with an op byte:
 *	op % 8 == 0  the device returns a receive entry: [id:4][len:4], its
 *		     buffer filled with a pattern up to len (or its end)
 *	op % 8 == 1  a receive burst: [budget:1]
 *	op % 8 == 2  a transmit burst: [n:1] packets of [length:2] each
 *	op % 8 == 3  the device returns a transmit entry: [id:4][len:4]
 *	op % 8 == 4  the device moves a used index: [queue:1][delta:2]
 *	op % 8 == 5  the device takes a transmit entry we posted, in order,
 *		     and returns it (as a correct device would)
 *	op % 8 == 6  the device sets or clears USED_F_NO_NOTIFY: [flags:1]
 *	op % 8 == 7  the device returns the next receive entry we posted,
 *		     with [len:2] (as a correct device would)
 * Checked after each step, besides ASan's bounds (each queue's memory is
 * its own allocation, of exactly its size): every frame delivered fits a
 * buffer and is what the device wrote there; after a receive burst every
 * buffer is the device's again, no id posted twice in it; the transmit
 * queue's idle and busy descriptors add up to its size, none both.
 */
#include <err.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "virtio_ring.h"

#define PHYS	0x40000000ULL

static struct ring out_p, out_c, in_p, in_c;
static struct nic nic;
static uint64_t cnt[10], used_errors;
static unsigned char *rxmem, *txmem;
static volatile uint16_t notify_reg;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	uint64_t **c = &nic.c.rx_packets;
	size_t i;

	(void)argc;
	(void)argv;
	for (i = 0; i < sizeof(nic.c) / sizeof(*c); i++)
		c[i] = &cnt[i];
	if ((rxmem = malloc(QREGION)) == NULL ||
	    (txmem = malloc(QREGION)) == NULL)
		err(1, "malloc");
	fuzz_ring("virtio-out", 512, 4096, &out_p, &out_c);
	fuzz_ring("virtio-in", 512, 4096, &in_p, &in_c);
	return 0;
}

/* Byte k of a frame the device writes into buffer id (after the header):
 * the id in the first two bytes, then a pattern. */
static uint8_t
pattern(uint32_t id, uint32_t k)
{
	return k == 0 ? (uint8_t)id : k == 1 ? (uint8_t)(id >> 8) :
	    (uint8_t)(id * 13 + k);
}

static void
dev_return(struct vq *q, uint32_t id, uint32_t len, int fill)
{
	uint16_t u = q->used->idx;
	uint32_t k;

	if (fill && id < q->size)
		for (k = NET_HDR; k < len && k < BUF_SIZE; k++)
			q->buf[id * BUF_SIZE + k] = pattern(id, k - NET_HDR);
	q->used->ring[u & q->mask].id = id;
	q->used->ring[u & q->mask].len = len;
	q->used->idx = (uint16_t)(u + 1);
}

static void
check_rx(struct vq *q, uint16_t from)
{
	struct packet *p;
	uint8_t seen[MAX_QSIZE] = { 0 };
	uint32_t id, k;
	int i;

	while (ring_avail(&out_c, 1)) {
		p = ring_peek(&out_c, 0);
		if (p->len > MAX_FRAME)
			abort();
		if (p->len >= 2) {
			id = p->data[0] | (uint32_t)p->data[1] << 8;
			if (id >= q->size)
				abort();
			for (k = 0; k < p->len; k++)
				if (p->data[k] != pattern(id, k))
					abort();
		}
		ring_release(&out_c, 1);
	}
	for (i = 0; i < q->size; i++)
		if (!q->busy[i])
			abort();
	for (; from != q->avail_idx; from++) {
		id = q->avail->ring[from & q->mask];
		if (id >= q->size || seen[id]++)
			abort();
	}
	if (q->avail->idx != q->avail_idx)
		abort();
}

static void
check_tx(struct vq *q)
{
	uint8_t idle[MAX_QSIZE] = { 0 };
	int i, busy = 0;

	if (q->nfree > q->size)
		abort();
	for (i = 0; i < q->nfree; i++) {
		if (q->free[i] >= q->size || idle[q->free[i]]++ ||
		    q->busy[q->free[i]])
			abort();
	}
	for (i = 0; i < q->size; i++)
		busy += q->busy[i];
	if (busy + q->nfree != q->size)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *end = data + size;
	struct vq rx, tx;
	struct rx_burst b;
	struct packet *pk;
	uint32_t id, len, i, n, taken;
	uint16_t qsize, delta, from, dev_tx = 0, dev_rx = 0, l16;

	if (size < 1)
		return 0;
	qsize = (uint16_t)(1u << (*p++ % 9));
	fuzz_drain(&out_c);
	fuzz_drain(&in_c);
	vq_init(&rx, 0, qsize, rxmem, PHYS, &notify_reg, &used_errors);
	vq_init(&tx, 1, qsize, txmem, PHYS + QREGION, &notify_reg,
	    &used_errors);
	vq_rx_post_all(&rx);
	vq_publish(&rx);
	while (p < end) {
		uint8_t op = *p++;

		switch (op % 8) {
		case 0:
		case 3:
			if (end - p < 8)
				return 0;
			memcpy(&id, p, 4);
			memcpy(&len, p + 4, 4);
			p += 8;
			dev_return(op % 8 == 0 ? &rx : &tx, id, len,
			    op % 8 == 0);
			break;
		case 1:
			if (end - p < 1)
				return 0;
			memset(&b, 0, sizeof(b));
			b.ring = &out_p;
			b.budget = *p++ % 64 + 1;
			b.room = ring_room(&out_p, b.budget);
			from = rx.avail_idx;
			vq_rx(&rx, &nic, &b);
			ring_commit(&out_p, b.n);
			if (b.seen > b.budget)
				abort();
			check_rx(&rx, from);
			break;
		case 2:
			if (end - p < 1)
				return 0;
			n = *p++ % 32;
			if ((size_t)(end - p) < 2 * n)
				return 0;
			if (ring_room(&in_p, n) < n)
				n = ring_room(&in_p, n);
			for (i = 0; i < n; i++) {
				pk = ring_slot(&in_p, i);
				memcpy(&pk->len, p + 2 * i, 2);
				if (pk->len > in_p.capacity)
					pk->len = (uint16_t)in_p.capacity;
				memset(pk->data, 0x5a, pk->len);
			}
			p += 2 * n;
			ring_commit(&in_p, n);
			n = ring_avail(&in_c, n);
			taken = vq_tx(&tx, &nic, &in_c, n);
			if (taken > n)
				abort();
			ring_release(&in_c, taken);
			fuzz_drain(&in_c);
			check_tx(&tx);
			break;
		case 4:
			if (end - p < 3)
				return 0;
			memcpy(&delta, p + 1, 2);
			if (p[0] & 1)
				tx.used->idx = (uint16_t)(tx.used->idx + delta);
			else
				rx.used->idx = (uint16_t)(rx.used->idx + delta);
			p += 3;
			break;
		case 5:
			if (dev_tx != tx.avail->idx) {
				id = tx.avail->ring[dev_tx++ & tx.mask];
				dev_return(&tx, id, 0, 0);
			}
			vq_tx_reclaim(&tx);
			check_tx(&tx);
			break;
		case 6:
			if (end - p < 1)
				return 0;
			rx.used->flags = tx.used->flags = *p++ & 1;
			break;
		case 7:
			if (end - p < 2)
				return 0;
			memcpy(&l16, p, 2);
			p += 2;
			if (dev_rx != rx.avail->idx) {
				id = rx.avail->ring[dev_rx++ & rx.mask];
				dev_return(&rx, id, l16, 1);
			}
			break;
		}
	}
	return 0;
}
