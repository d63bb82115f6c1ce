/*
 * lathist.h: a latency histogram of fixed size, for snb-sink --latency and
 * the bench's bare ring (bench/latency_bench.c), so that both measure the
 * same way.  Adding a sample is a shift and an increment: no allocation,
 * no system call.  Buckets are 1/64 of a power of two wide (values below
 * 128 ns are exact), so a quantile is at most 1.6% above the truth; the
 * count and the maximum are exact.
 */
#ifndef SNB_LATHIST_H
#define SNB_LATHIST_H

#include <stdint.h>

#define LAT_SUB_BITS	6
#define LAT_SUB		(1u << LAT_SUB_BITS)
#define LAT_BUCKETS	((64 - LAT_SUB_BITS + 1) * LAT_SUB)

struct lat_hist {
	uint64_t	count;
	uint64_t	max;
	uint64_t	bucket[LAT_BUCKETS];
};

/* Values below 2 * LAT_SUB are their own bucket; above, 64 per octave. */
static inline unsigned
lat_bucket(uint64_t v)
{
	unsigned shift;

	if (v < 2 * LAT_SUB)
		return (unsigned)v;
	shift = (unsigned)(63 - __builtin_clzll(v)) - LAT_SUB_BITS;
	return (shift + 1) * LAT_SUB + (unsigned)((v >> shift) - LAT_SUB);
}

static inline void
lat_add(struct lat_hist *h, uint64_t ns)
{
	h->bucket[lat_bucket(ns)]++;
	h->count++;
	if (ns > h->max)
		h->max = ns;
}

/*
 * The q-quantile (0 < q <= 1) in ns: the highest value of the bucket that
 * holds the ceil(q * count)-th smallest sample, never above the maximum.
 */
static inline uint64_t
lat_quantile(const struct lat_hist *h, double q)
{
	uint64_t rank, seen = 0, hi;
	unsigned i, g;

	if (h->count == 0)
		return 0;
	rank = (uint64_t)(q * (double)h->count);
	if ((double)rank < q * (double)h->count)
		rank++;
	if (rank == 0)
		rank = 1;
	for (i = 0; i < LAT_BUCKETS; i++) {
		if ((seen += h->bucket[i]) < rank)
			continue;
		g = i / LAT_SUB;
		if (g <= 1)
			hi = i;
		else
			hi = (((uint64_t)LAT_SUB + i % LAT_SUB + 1) <<
			    (g - 1)) - 1;
		return hi < h->max ? hi : h->max;
	}
	return h->max;
}

#endif
