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

/*
 * The log-linear bucket of v, 2^sub_bits buckets an octave: values below
 * 2^(sub_bits + 1) are their own bucket, each octave above is cut in
 * 2^sub_bits.  With sub_bits a constant it is a shift and an add.  The
 * stage file's busy histogram (app.h) uses it too.
 */
static inline unsigned
hist_bucket(uint64_t v, unsigned sub_bits)
{
	unsigned shift;

	if (v < (2u << sub_bits))
		return (unsigned)v;
	shift = (unsigned)(63 - __builtin_clzll(v)) - sub_bits;
	return (shift << sub_bits) + (unsigned)(v >> shift);
}

/* The smallest value of bucket b (of the next: one past b's largest). */
static inline uint64_t
hist_bucket_low(unsigned b, unsigned sub_bits)
{
	unsigned shift;

	if (b < (2u << sub_bits))
		return b;
	shift = (b >> sub_bits) - 1;
	return (uint64_t)(b - (shift << sub_bits)) << shift;
}

static inline void
lat_add(struct lat_hist *h, uint64_t ns)
{
	h->bucket[hist_bucket(ns, LAT_SUB_BITS)]++;
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
	unsigned i;

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
		/* the last bucket's end wraps to 0: hi is UINT64_MAX */
		hi = hist_bucket_low(i + 1, LAT_SUB_BITS) - 1;
		return hi < h->max ? hi : h->max;
	}
	return h->max;
}

#endif
