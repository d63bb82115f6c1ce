/*
 * btlookup.c: finding a softwire in a built binding table (bt.h draws
 * the layout, bt.c builds it).  This is the packet path: no allocation,
 * no syscalls, and the table is only read, so a worker may look up while
 * btedit.c builds the next table beside it.
 *
 * Burst lookups run in three passes over the keys: hash and prefetch the
 * buckets, then find the records and prefetch the softwire (or the middle
 * of its PSID run), then finish the searches.  Each pass issues all its
 * memory accesses before any is waited for, so a table far bigger than
 * the caches costs about one memory latency per burst, not per packet.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "bt.h"

#define BT_CHUNK	64	/* keys a burst pass keeps in locals */

/* The ways of bucket b in use that hold ipv4: a bit each. */
static inline unsigned
bt_match(const struct bt_bucket *b, uint32_t ipv4)
{
	unsigned m;

#ifdef __SSE2__
	__m128i k = _mm_load_si128((const __m128i *)(const void *)b->ipv4);

	m = (unsigned)_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(k,
	    _mm_set1_epi32((int)ipv4))));
#else
	m = (unsigned)(b->ipv4[0] == ipv4) | (b->ipv4[1] == ipv4) << 1 |
	    (b->ipv4[2] == ipv4) << 2 | (b->ipv4[3] == ipv4) << 3;
#endif
	return m & ((1u << b->used) - 1);
}

/*
 * The bucket holding ipv4's record (*way: which), probing from bucket h,
 * or NULL.  Buckets fill front to back and nothing is ever removed, so a
 * bucket with a way free ends the probe sequence.
 */
static inline const struct bt_bucket *
bt_probe(const struct lwaftr_bt *bt, uint32_t ipv4, uint32_t h, int *way)
{
	const struct bt_bucket *b;
	unsigned m;

	for (;; h = (h + 1) & bt->mask) {
		b = &bt->bkt[h];
		if ((m = bt_match(b, ipv4)) != 0) {
			*way = __builtin_ctz(m);
			return b;
		}
		if (b->used < BT_WAYS)
			return NULL;
	}
}

static inline uint32_t
bt_psid(const struct bt_bucket *b, int w, uint16_t port)
{
	return ((uint32_t)ntohs(port) >> b->shift[w]) & b->mask[w];
}

/*
 * A port no softwire of the address may have: with a reserved-ports-bit-
 * count a > 0, the reference (binding_table.lua lookup_psid) refuses the
 * ports below 2^a.  RFC 7597 5.1 would refuse those whose a bits are 0,
 * below 2^(16 - a); the two agree at a = 8 and we follow the reference.
 */
static inline int
bt_reserved(const struct bt_bucket *b, int w, uint16_t port)
{
	return b->resv[w] != 0 && (uint32_t)ntohs(port) >> b->resv[w] == 0;
}

/*
 * The softwire of psid among the n (> 0) of a sparse address starting at
 * base, or NULL.  Branch-free halving (the compare becomes a conditional
 * move: with random ports a branchy search mispredicts about every other
 * step) down to 8 candidates, then one compare of all 8.
 */
static inline const struct softwire *
bt_search(const struct lwaftr_bt *bt, uint32_t base, uint32_t n,
    uint32_t psid)
{
	const uint16_t *p = bt->psid + base;
	uint32_t lo = 0, half;
	unsigned m;

	while (n > 8) {
		half = n / 2;
		lo = p[lo + half] <= psid ? lo + half : lo;
		n -= half;
	}
	/* psid, if there, is among p[lo .. lo + n) */
#ifdef __SSE2__
	m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi16(_mm_loadu_si128(
	    (const __m128i *)(const void *)(p + lo)),
	    _mm_set1_epi16((short)psid))) & ((1u << 2 * n) - 1);
	if (m)
		return &bt->sw[base + lo + __builtin_ctz(m) / 2];
#else
	for (m = 0; m < n; m++)
		if (p[lo + m] == psid)
			return &bt->sw[base + lo + m];
#endif
	return NULL;
}

const struct softwire *
lwaftr_bt_lookup(const struct lwaftr_bt *bt, uint32_t ipv4, uint16_t port)
{
	const struct bt_bucket *b;
	uint32_t psid;
	int w;

	if ((b = bt_probe(bt, ipv4, bt_hash(ipv4) & bt->mask, &w)) == NULL ||
	    bt_reserved(b, w, port))
		return NULL;
	psid = bt_psid(b, w, port);
	return b->dense[w] ? &bt->sw[b->base[w] + psid] : bt_search(bt,
	    b->base[w], b->last[w] + 1u, psid);
}

void
lwaftr_bt_lookup_burst(const struct lwaftr_bt *bt, const uint32_t *ipv4,
    const uint16_t *port, int n, const struct softwire **out)
{
	const struct bt_bucket *bb[BT_CHUNK];
	uint32_t h[BT_CHUNK], psid[BT_CHUNK];
	int i, m, base, w[BT_CHUNK];

	for (base = 0; base < n; base += BT_CHUNK) {
		m = n - base < BT_CHUNK ? n - base : BT_CHUNK;
		for (i = 0; i < m; i++) {
			h[i] = bt_hash(ipv4[base + i]) & bt->mask;
			__builtin_prefetch(&bt->bkt[h[i]]);
		}
		for (i = 0; i < m; i++) {
			const struct bt_bucket *b;
			const struct softwire *s;

			b = bb[i] = bt_probe(bt, ipv4[base + i], h[i], &w[i]);
			out[base + i] = NULL;
			if (b == NULL)
				continue;
			if (bt_reserved(b, w[i], port[base + i])) {
				bb[i] = NULL;
				continue;
			}
			psid[i] = bt_psid(b, w[i], port[base + i]);
			if (b->dense[w[i]]) {
				/*
				 * The caller reads the softwire next; at 40
				 * bytes it may straddle two lines.
				 */
				s = &bt->sw[b->base[w[i]] + psid[i]];
				__builtin_prefetch(s);
				__builtin_prefetch((const char *)(s + 1) - 1);
				out[base + i] = s;
				bb[i] = NULL;
			} else {
				__builtin_prefetch(&bt->psid[b->base[w[i]] +
				    b->last[w[i]] / 2]);
			}
		}
		for (i = 0; i < m; i++)
			if (bb[i] != NULL)
				out[base + i] = bt_search(bt,
				    bb[i]->base[w[i]], bb[i]->last[w[i]] + 1u,
				    psid[i]);
	}
}

int
lwaftr_bt_has_ipv4(const struct lwaftr_bt *bt, uint32_t ipv4)
{
	int w;

	return bt_probe(bt, ipv4, bt_hash(ipv4) & bt->mask, &w) != NULL;
}
