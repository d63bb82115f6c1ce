/*
 * e1000_ring_fuzz: libFuzzer target for snb-nic's e1000 ring code
 * (drivers/nic/e1000_ring.c) against a hostile device: the input is what
 * the device writes into the descriptor rings, any descriptor, any
 * length, status and error bits, at any moment between our bursts.  The
 * same code the driver runs; only the registers are gone (the ring code
 * never touches them: the caller writes the tails).
 *
 * Build and run (from the repository root; `make fuzz` does both):
 *
 *	clang -g -O1 -fsanitize=fuzzer,address,undefined \
 *	    -fno-sanitize-recover=undefined -Ilibring -Idrivers/nic \
 *	    fuzz/e1000_ring_fuzz.c drivers/nic/e1000_ring.c \
 *	    (every libring .c file) -lpcap -lbsd -o build/fuzz_e1000
 *	build/fuzz_e1000 -max_total_time=600 build/fuzz-e1000-corpus \
 *	    fuzz/corpus/e1000
 *
 * An input is a sequence of records, each starting with an op byte:
 *	op % 4 == 0  the device completes a receive descriptor:
 *		     [index:2][length:2][status:1][errors:1], the buffer
 *		     filled with a pattern up to the length (or its end)
 *	op % 4 == 1  a receive burst: [budget:1]
 *	op % 4 == 2  a transmit burst: [n:1] packets of [length:2] each
 *	op % 4 == 3  the device writes a transmit status: [index:2][status:1]
 * Checked after each step, besides ASan's bounds (each ring's memory is
 * its own allocation, of exactly its size): every frame delivered fits a
 * receive buffer and is what the device wrote there; the ring positions
 * stay in the ring; transmit never takes more than it was offered nor
 * fills more than NDESC - 1 descriptors, each pointing at its own buffer
 * with a length from 1 to BUF.
 */
#include <err.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "e1000_ring.h"
#include "fuzz.h"

#define PHYS	0x40000000ULL

static struct ring out_p, out_c, in_p, in_c;
static struct nic nic;
static uint64_t cnt[10], desc_errors, bad_length;
static uint8_t *rxmem, *txmem;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	uint64_t **c = &nic.c.rx_packets;
	size_t i;

	(void)argc;
	(void)argv;
	for (i = 0; i < sizeof(nic.c) / sizeof(*c); i++)
		c[i] = &cnt[i];
	if ((rxmem = malloc(RING_MEM)) == NULL ||
	    (txmem = malloc(RING_MEM)) == NULL)
		err(1, "malloc");
	fuzz_ring("e1000-out", 256, 4096, &out_p, &out_c);
	fuzz_ring("e1000-in", 256, 4096, &in_p, &in_c);
	return 0;
}

/* Byte k of what the device writes into buffer i. */
static uint8_t
pattern(uint32_t i, uint32_t k)
{
	return (uint8_t)(i * 7 + k);
}

/* Every delivered frame fits a buffer and holds the device's pattern. */
static void
check_out(void)
{
	struct packet *p;
	uint32_t k, i;

	while (ring_avail(&out_c, 1)) {
		p = ring_peek(&out_c, 0);
		if (p->len == 0 || p->len > BUF)
			abort();
		/* Which buffer it came from: the pattern tells. */
		for (i = 0; i < NDESC; i++)
			if (p->data[0] == pattern(i, 0) &&
			    (p->len < 2 || p->data[1] == pattern(i, 1)))
				break;
		for (k = 0; i < NDESC && k < p->len; k++)
			if (p->data[k] != pattern(i, k))
				abort();
		ring_release(&out_c, 1);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *end = data + size;
	struct e1000_rxq rx;
	struct e1000_txq tx;
	struct rx_burst b;
	struct packet *pk;
	uint32_t i, k, n, taken, t0, used;
	uint16_t idx, len;

	/* The descriptors start clean; the buffers need not: the device
	 * model's pattern depends only on the buffer and the offset, and
	 * what we transmit we write first.  (Clearing 2 MiB an input made
	 * the target 100 times slower.) */
	memset(rxmem, 0, RING_BYTES);
	memset(txmem, 0, RING_BYTES);
	fuzz_drain(&out_c);
	fuzz_drain(&in_c);
	e1000_rxq_init(&rx, rxmem, PHYS, &desc_errors, &bad_length);
	e1000_txq_init(&tx, txmem, PHYS + 0x200000);
	while (p < end) {
		uint8_t op = *p++;

		switch (op % 4) {
		case 0:
			if (end - p < 6)
				return 0;
			memcpy(&idx, p, 2);
			idx %= NDESC;
			memcpy(&len, p + 2, 2);
			for (k = 0; k < len && k < BUF; k++)
				rx.buf[(size_t)idx * BUF + k] = pattern(idx, k);
			rx.desc[idx].length = len;
			rx.desc[idx].errors = p[5];
			rx.desc[idx].status = p[4];
			p += 6;
			break;
		case 1:
			if (end - p < 1)
				return 0;
			memset(&b, 0, sizeof(b));
			b.ring = &out_p;
			b.budget = *p++ % 64 + 1;
			b.room = ring_room(&out_p, b.budget);
			n = e1000_rx_burst(&rx, &nic, &b);
			ring_commit(&out_p, b.n);
			if (n > b.budget || rx.next >= NDESC ||
			    e1000_rx_tail(&rx) >= NDESC || b.n > b.room)
				abort();
			check_out();
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
				memset(pk->data, 0xa5, pk->len);
			}
			p += 2 * n;
			ring_commit(&in_p, n);
			n = ring_avail(&in_c, n);
			t0 = tx.tail;
			taken = e1000_tx_burst(&tx, &nic, &in_c, n);
			if (taken > n || tx.tail >= NDESC || tx.clean >= NDESC)
				abort();
			ring_release(&in_c, taken);
			used = (tx.tail + NDESC - tx.clean) % NDESC;
			if (used > NDESC - 1)
				abort();
			for (i = t0; i != tx.tail; i = (i + 1) % NDESC)
				if (tx.desc[i].addr != tx.buf_phys +
				    (uint64_t)i * BUF || tx.desc[i].length == 0 ||
				    tx.desc[i].length > BUF)
					abort();
			fuzz_drain(&in_c);
			break;
		case 3:
			if (end - p < 3)
				return 0;
			memcpy(&idx, p, 2);
			tx.desc[idx % NDESC].status = p[2];
			p += 3;
			break;
		}
	}
	return 0;
}
