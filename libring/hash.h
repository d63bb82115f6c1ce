/*
 * hash.h: the 32-bit integer mixer that lb (spreading flows) and the
 * lwAFTR's binding table (open addressing) both use.
 *
 * An xor-shift / multiply mixer with full avalanche: the keys these see
 * are runs (a provisioned pool of consecutive IPv4 addresses, one flow's
 * neighbours), and a weak hash would put a run into one output or one
 * long probe sequence.
 */
#ifndef SNB_HASH_H
#define SNB_HASH_H

#include <stdint.h>

static inline uint32_t
hash_mix32(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352dU;
	x ^= x >> 15;
	x *= 0x846ca68bU;
	return x ^ (x >> 16);
}

#endif
