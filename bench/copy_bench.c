/*
 * copy_bench: the baseline for a ring hop.  One core copies SIZE-byte
 * packets from a source buffer into 512 slots of a ring-sized buffer and
 * reads each one back, the same memory traffic as a hop minus the second
 * core.  Prints Mpps; bench/run divides hop figures by it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ring.h"
#include "../tests/unit/util.h"

int
main(int argc, char **argv)
{
	uint32_t size = argc > 1 ? (uint32_t)atoi(argv[1]) : 64;
	uint32_t stride = (16 + RING_DEFAULT_CAPACITY + 63) & ~63u;
	unsigned char *ring, pkt[RING_DEFAULT_CAPACITY];
	uint64_t n = 0, sum = 0, i;
	double t0, best = 0;
	int round;

	if (size < 16 || size > RING_DEFAULT_CAPACITY)
		return 2;
	if ((ring = aligned_alloc(4096, (size_t)stride * 512)) == NULL)
		return 1;
	memset(ring, 0, (size_t)stride * 512);
	memset(pkt, 0xa5, sizeof(pkt));
	for (round = 0; round < 3; round++) {
		t0 = now();
		for (n = 0; n < 20000000 && now() - t0 < 0.3; ) {
			for (i = 0; i < 4096; i++, n++) {
				unsigned char *slot = ring + (n & 511) * stride;
				memcpy(slot + 16, pkt, size);
				*(volatile uint16_t *)slot = (uint16_t)size;
				sum += slot[16 + (n % size)];
			}
		}
		if (n / (now() - t0) > best)
			best = n / (now() - t0);
	}
	printf("%.2f\n", best / 1e6);
	return sum == 0;	/* keep the loop */
}
