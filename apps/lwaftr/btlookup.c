/*
 * btlookup.c: finding a softwire in a built binding table (bt.h draws
 * the layout, bt.c builds it).  This is the packet path: no allocation,
 * no syscalls, and the table is only read, so a worker may look up while
 * btedit.c builds the next table beside it.
 *
 * Burst lookups run in three passes over the keys: hash and prefetch the
 * records, then resolve records and prefetch the softwire (or the middle
 * of its PSID run), then finish the searches.  Each pass issues all its
 * memory accesses before any is waited for, so a table far bigger than
 * the caches costs about one memory latency per burst, not per packet.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <string.h>

#include "bt.h"

#define BT_CHUNK	64	/* keys a burst pass keeps in locals */

/*
 * Buckets fill front to back and nothing is ever removed, so a bucket
 * whose last record is empty ends the probe sequence.
 */
static inline const struct bt_rec *
bt_probe(const struct lwaftr_bt *bt, uint32_t ipv4, uint32_t h)
{
	const struct bt_rec *b;
	unsigned m;

	for (;; h = (h + 1) & bt->mask) {
		b = &bt->rec[(size_t)h * BT_WAYS];
		m = ((b[0].ipv4 == ipv4) & (b[0].count != 0)) |
		    ((b[1].ipv4 == ipv4) & (b[1].count != 0)) << 1 |
		    ((b[2].ipv4 == ipv4) & (b[2].count != 0)) << 2 |
		    ((b[3].ipv4 == ipv4) & (b[3].count != 0)) << 3;
		if (m)
			return &b[__builtin_ctz(m)];
		if (b[BT_WAYS - 1].count == 0)
			return NULL;
	}
}

static inline uint32_t
bt_psid(const struct bt_rec *r, uint16_t port)
{
	return ((uint32_t)ntohs(port) >> r->shift) & r->mask;
}

/*
 * The softwire of psid among a sparse address's, or NULL.  Branch-free
 * halving (the compare becomes a conditional move): with random ports a
 * branchy search mispredicts about every other step.
 */
static inline const struct softwire *
bt_search(const struct lwaftr_bt *bt, const struct bt_rec *r, uint32_t psid)
{
	const uint16_t *p = bt->psid + r->base;
	uint32_t lo = 0, n = r->count, half;

	while (n > 1) {
		half = n / 2;
		lo = p[lo + half] <= psid ? lo + half : lo;
		n -= half;
	}
	if (p[lo] == psid)
		return &bt->sw[r->base + lo];
	return NULL;
}

const struct softwire *
lwaftr_bt_lookup(const struct lwaftr_bt *bt, uint32_t ipv4, uint16_t port)
{
	const struct bt_rec *r;
	uint32_t psid;

	if ((r = bt_probe(bt, ipv4, bt_hash(ipv4) & bt->mask)) == NULL)
		return NULL;
	psid = bt_psid(r, port);
	if (r->dense)
		return &bt->sw[r->base + psid];
	return bt_search(bt, r, psid);
}

void
lwaftr_bt_lookup_burst(const struct lwaftr_bt *bt, const uint32_t *ipv4,
    const uint16_t *port, int n, const struct softwire **out)
{
	const struct bt_rec *rr[BT_CHUNK];
	uint32_t h[BT_CHUNK], psid[BT_CHUNK];
	int i, m, base;

	for (base = 0; base < n; base += BT_CHUNK) {
		m = n - base < BT_CHUNK ? n - base : BT_CHUNK;
		for (i = 0; i < m; i++) {
			h[i] = bt_hash(ipv4[base + i]) & bt->mask;
			__builtin_prefetch(&bt->rec[(size_t)h[i] * BT_WAYS]);
		}
		for (i = 0; i < m; i++) {
			const struct bt_rec *r;
			const struct softwire *s;

			r = rr[i] = bt_probe(bt, ipv4[base + i], h[i]);
			out[base + i] = NULL;
			if (r == NULL)
				continue;
			psid[i] = bt_psid(r, port[base + i]);
			if (r->dense) {
				/*
				 * The caller reads the softwire next; at 40
				 * bytes it may straddle two lines.
				 */
				s = &bt->sw[r->base + psid[i]];
				__builtin_prefetch(s);
				__builtin_prefetch((const char *)(s + 1) - 1);
				out[base + i] = s;
				rr[i] = NULL;
			} else {
				__builtin_prefetch(&bt->psid[r->base +
				    r->count / 2]);
			}
		}
		for (i = 0; i < m; i++)
			if (rr[i] != NULL)
				out[base + i] = bt_search(bt, rr[i], psid[i]);
	}
}

int
lwaftr_bt_has_ipv4(const struct lwaftr_bt *bt, uint32_t ipv4)
{
	return bt_probe(bt, ipv4, bt_hash(ipv4) & bt->mask) != NULL;
}

int
lwaftr_bt_is_br(const struct lwaftr_bt *bt, const uint8_t br[16])
{
	uint32_t h;
	size_t i;

	if (bt->nbr <= BR_LINEAR) {
		for (i = 0; i < bt->nbr; i++)
			if (memcmp(bt->br[i], br, 16) == 0)
				return 1;
		return 0;
	}
	for (h = br_hash(br) & bt->brmask; bt->brset[h];
	    h = (h + 1) & bt->brmask)
		if (memcmp(bt->br[bt->brset[h] - 1], br, 16) == 0)
			return 1;
	return 0;
}
