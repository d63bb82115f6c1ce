/*
 * bt.h: the binding table's layout, private to the two files that use it:
 * bt.c builds a table, btlookup.c reads one on the packet path.  Kept
 * apart so each of those is one idea; nothing else in the app (btedit.c
 * included) sees inside a table, they call lwaftr.h.
 *
 *	bkt[]	open-addressing hash table keyed by IPv4: buckets of 4
 *		records, one bucket a cache line, a power of two of them,
 *		records at most half the slots, linear probing bucket by
 *		bucket.  A bucket keeps its 4 addresses side by side, so a
 *		lookup compares them in one vector instruction (four scalar
 *		ones without SSE2), and its records' other fields in arrays
 *		after them.  The next line is needed only when a bucket is
 *		full and has no match (rare at load 1/2)
 *	psid[]	every softwire's PSID, grouped by address, sorted, and
 *		BT_PSID_PAD entries more: a search ends comparing 8 at
 *		once, and may load them anywhere in the array
 *	sw[]	the softwires in the same order
 *
 * A record holds the address's port-set shape (shift and mask, from
 * psid-length and reserved-ports-bit-count) and where its softwires start
 * in psid[]/sw[].  When an address has every PSID of its port set (the
 * usual case for a provisioned table) the softwire is sw[base + psid];
 * otherwise it is a search in psid[base .. base + count), a small array
 * (2 bytes an entry) rather than the 40-byte softwires.
 */
#ifndef LWAFTR_BT_H
#define LWAFTR_BT_H

#include <stdint.h>

#include "hash.h"
#include "lwaftr.h"

#define BT_WAYS		4	/* records a bucket: 64 bytes */

/* Records fill a bucket front to back: used of them, never removed. */
struct bt_bucket {
	uint32_t	ipv4[BT_WAYS];	/* network order */
	uint32_t	base[BT_WAYS];	/* first softwire of the address */
	uint16_t	last[BT_WAYS];	/* its softwires - 1 (up to 65535) */
	uint16_t	mask[BT_WAYS];	/* (1 << psid_length) - 1 */
	uint8_t		shift[BT_WAYS];	/* 16 - reserved - psid_length */
	uint8_t		dense[BT_WAYS];	/* last == mask: index by psid */
	uint8_t		resv[BT_WAYS];	/* reserved-ports-bit-count */
	uint8_t		used;
	uint8_t		pad[3];
} __attribute__((aligned(64)));

struct lwaftr_bt {
	struct bt_bucket *bkt;
	uint32_t	 mask;		/* buckets - 1 */
	size_t		 naddr;
	struct softwire	*sw;
	uint16_t	*psid;
	size_t		 nsw;
};

#define BT_PSID_PAD	8

/* Addresses of a provisioned pool are consecutive: see hash.h. */
#define bt_hash(ipv4)	hash_mix32(ipv4)

#endif
