/*
 * test_lwaftr_btedit: changes to a binding table (apps/lwaftr/btedit.c)
 * against a plain softwire list changed the same way and searched by
 * brute force.
 *
 *  1. Random tables, random changes (add to a new or an existing address,
 *     remove, set, several at once): every lookup of the new table equals
 *     the scan of the changed list, the old table still answers as before
 *     the change, diff counts what changed.
 *  2. Refused changes (duplicate, conflicting port set, unknown softwire
 *     on remove, twice in one change, bad PSID) name the softwire, build
 *     nothing and leave the old table answering.
 *  3. A million softwires: the time of one change as a TAP comment.
 * Under ASan (make check's second pass) every table must be freed.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "util.h"
#include "../../apps/lwaftr/bt.c"
#include "../../apps/lwaftr/btlookup.c"
#include "../../apps/lwaftr/btedit.c"

#define BT_REF_BR_KINDS 5
#include "bt_ref.h"

/* Index of (ipv4, psid) in the list, or -1. */
static long
ref_find(const struct softwire *sw, size_t n, uint32_t ipv4, uint16_t psid)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (sw[i].ipv4 == ipv4 && sw[i].psid == psid)
			return (long)i;
	return -1;
}

/* Lookups of bt against the list: random ports of its addresses, others. */
static int
mismatches(const struct lwaftr_bt *bt, const struct softwire *sw, size_t n,
    int queries)
{
	int q, bad = 0;
	size_t i;

	for (q = 0; q < queries; q++) {
		uint32_t a = n && rndn(8) ? sw[rndn((uint32_t)n)].ipv4 :
		    htonl(0x0a000000 + rndn(64));
		uint16_t p = (uint16_t)rnd();

		if (!same(lwaftr_bt_lookup(bt, a, p), brute(sw, n, a, p)))
			bad++;
	}
	for (i = 0; i < n; i += 1 + n / 50)
		if (!same(lwaftr_bt_find(bt, sw[i].ipv4, sw[i].psid, 0),
		    &sw[i]) || !lwaftr_bt_has_ipv4(bt, sw[i].ipv4))
			bad++;
	return bad;
}

/* A softwire not in the list: a new address, or a free PSID of one. */
static int
new_softwire(const struct softwire *sw, size_t n, struct softwire *s,
    uint32_t tag)
{
	const struct softwire *o;
	int tries;
	uint32_t psid;

	if (n == 0 || rndn(2)) {
		uint32_t a = 0x0a000000 + rndn(64);
		int plen = rndn(7);

		for (o = sw; o < sw + n; o++)
			if (o->ipv4 == htonl(a))
				return -1;
		fill_sw(s, a, rndn(1u << plen), plen, rndn(3), tag);
		return 0;
	}
	o = &sw[rndn((uint32_t)n)];
	for (tries = 0; tries < 8; tries++) {
		psid = rndn(1u << o->psid_length);
		if (ref_find(sw, n, o->ipv4, (uint16_t)psid) < 0) {
			fill_sw(s, ntohl(o->ipv4), psid, o->psid_length,
			    o->reserved_bits, tag);
			return 0;
		}
	}
	return -1;
}

static void
test_random_changes(void)
{
	static struct softwire ref[4096], prev[4096];
	struct softwire add[2], del[2];
	struct lwaftr_bt *bt, *nbt;
	char err[256];
	size_t n = 0, pn, na, nd, da, dr, dc;
	int trial, step, op, bad = 0, badold = 0, baddiff = 0, refused = 0;
	int changes = 0, trials = 20 / scale() + 1;
	long i;

	for (trial = 0; trial < trials; trial++) {
		n = 0;
		bt = lwaftr_bt_build(ref, 0, NULL, NULL, err, sizeof(err));
		for (step = 0; step < 150; step++) {
			memcpy(prev, ref, n * sizeof(*ref));
			pn = n;
			na = nd = 0;
			op = n < 4 ? 0 : rndn(4);
			if (op == 0 || op == 3) {	/* add */
				if (new_softwire(ref, n, &add[0],
				    (uint32_t)step) == -1)
					continue;
				ref[n++] = add[na++];
			}
			if (op == 1 || op == 3) {	/* remove */
				i = rndn((uint32_t)(op == 3 ? n - 1 : n));
				del[nd++] = ref[i];
				ref[i] = ref[--n];
			}
			if (op == 2) {			/* set: a new B4 */
				i = rndn((uint32_t)n);
				del[nd++] = ref[i];
				ref[i].b4[15] ^= 0x5a;
				add[na++] = ref[i];
			}
			nbt = lwaftr_bt_change(bt, add, na, del, nd, err,
			    sizeof(err));
			if (nbt == NULL) {
				printf("# refused: %s\n", err);
				refused++;
				memcpy(ref, prev, pn * sizeof(*ref));
				n = pn;
				continue;
			}
			changes++;
			bad += mismatches(nbt, ref, n, 200);
			badold += mismatches(bt, prev, pn, 50);
			lwaftr_bt_diff(bt, nbt, &da, &dr, &dc);
			if (op == 2 ? !(da == 0 && dr == 0 && dc == 1) :
			    !(da == (op != 1) && dr == (op != 0) && dc == 0))
				baddiff++;
			lwaftr_bt_free(bt);
			bt = nbt;
		}
		lwaftr_bt_free(bt);
	}
	ok(refused == 0 && changes > trials * 100, "%d random changes applied",
	    changes);
	ok(bad == 0, "new tables answer as the changed list (%d bad)", bad);
	ok(badold == 0, "old tables still answer as before (%d bad)", badold);
	ok(baddiff == 0, "diff counts the change (%d bad)", baddiff);
}

struct refusal {
	const char	*what;
	struct softwire	 add[2], del[2];
	size_t		 nadd, ndel;
	const char	*want;
};

static void
test_refused(void)
{
	struct softwire sw[3];
	struct refusal r[8];
	struct lwaftr_bt *bt, *nbt;
	char err[256];
	size_t i, k;
	int bad;

	fill_sw(&sw[0], 0x01020304, 4, 6, 0, 0);
	fill_sw(&sw[1], 0x01020304, 5, 6, 0, 1);
	fill_sw(&sw[2], 0x01020305, 1, 6, 0, 2);
	bt = lwaftr_bt_build(sw, 3, NULL, NULL, err, sizeof(err));
	memset(r, 0, sizeof(r));
	r[0].what = "add an existing softwire";
	r[0].add[0] = sw[0];
	r[0].nadd = 1;
	r[0].want = "softwire 1.2.3.4 psid 4 exists already (set changes it)";
	r[1].what = "remove an unknown softwire";
	fill_sw(&r[1].del[0], 0x01020309, 0, 0, 0, 0);
	r[1].ndel = 1;
	r[1].want = "no softwire 1.2.3.9 psid 0 in the binding table";
	r[2].what = "add a conflicting port set";
	fill_sw(&r[2].add[0], 0x01020304, 7, 5, 0, 0);
	r[2].nadd = 1;
	r[2].want = "softwire 1.2.3.4 psid 7: its port set (psid-length 5, "
	    "reserved-ports-bit-count 0) is not that of softwire 1.2.3.4 "
	    "psid 5 (6, 0): the softwires of an address share one";
	r[3].what = "add one softwire twice";
	fill_sw(&r[3].add[0], 0x01020306, 0, 0, 0, 0);
	r[3].add[1] = r[3].add[0];
	r[3].nadd = 2;
	r[3].want = "softwire 1.2.3.6 psid 0 is added twice";
	r[4].what = "remove one softwire twice";
	r[4].del[0] = r[4].del[1] = sw[2];
	r[4].ndel = 2;
	r[4].want = "softwire 1.2.3.5 psid 1 is removed twice";
	r[5].what = "a PSID out of range";
	fill_sw(&r[5].add[0], 0x01020306, 64, 6, 0, 0);
	r[5].nadd = 1;
	r[5].want = "softwire (1.2.3.6 psid 64): psid out of range for "
	    "psid-length 6";
	r[6].what = "set one softwire of two to another port set";
	r[6].del[0] = sw[0];
	fill_sw(&r[6].add[0], 0x01020304, 4, 8, 0, 0);
	r[6].ndel = r[6].nadd = 1;
	r[6].want = "softwire 1.2.3.4 psid 4: its port set (psid-length 8, "
	    "reserved-ports-bit-count 0) is not that of softwire 1.2.3.4 "
	    "psid 5 (6, 0): the softwires of an address share one";
	for (i = 0; i < 7; i++) {
		nbt = lwaftr_bt_change(bt, r[i].add, r[i].nadd, r[i].del,
		    r[i].ndel, err, sizeof(err));
		bad = mismatches(bt, sw, 3, 300);
		ok(nbt == NULL && strcmp(err, r[i].want) == 0 && bad == 0,
		    "refused: %s: %s", r[i].what, err);
		lwaftr_bt_free(nbt);
	}

	/* allowed: the only softwire of an address to another port set */
	r[7].del[0] = sw[2];
	fill_sw(&r[7].add[0], 0x01020305, 1, 2, 0, 9);
	nbt = lwaftr_bt_change(bt, r[7].add, 1, r[7].del, 1, err, sizeof(err));
	sw[2] = r[7].add[0];
	ok(nbt != NULL && mismatches(nbt, sw, 3, 300) == 0,
	    "set the only softwire of an address to another port set");
	lwaftr_bt_free(bt);
	bt = nbt;

	/* remove every softwire of an address: it is gone */
	nbt = lwaftr_bt_change(bt, NULL, 0, sw, 2, err, sizeof(err));
	ok(nbt != NULL && !lwaftr_bt_has_ipv4(nbt, sw[0].ipv4) &&
	    lwaftr_bt_lookup(nbt, sw[0].ipv4, htons(4 << 10)) == NULL &&
	    lwaftr_bt_lookup(bt, sw[0].ipv4, htons(4 << 10)) != NULL &&
	    mismatches(nbt, &sw[2], 1, 300) == 0,
	    "the last softwires of an address removed: no lookup finds it");
	lwaftr_bt_free(bt);
	bt = nbt;
	for (k = 0; k < 3; k++)
		fill_sw(&sw[k], 0xc0000201, (uint32_t)k, 2, 0, (uint32_t)k);
	nbt = lwaftr_bt_change(bt, sw, 3, &r[7].add[0], 1, err, sizeof(err));
	ok(nbt != NULL && mismatches(nbt, sw, 3, 300) == 0 &&
	    lwaftr_bt_softwires(nbt, &k) && k == 3,
	    "add three and remove one at once");
	lwaftr_bt_free(bt);
	lwaftr_bt_free(nbt);
}

static void
test_million(void)
{
	size_t naddr = 65536 / scale(), n = naddr * 16, i, m;
	struct softwire *sw = malloc(n * sizeof(*sw)), s;
	struct lwaftr_bt *bt, *nbt;
	char err[256];
	double t0, t1, t2;
	int bad = 0, q;

	for (i = 0; i < n; i++)
		fill_sw(&sw[i], 0x0a000000 + (uint32_t)(i / 16),
		    (uint32_t)(i % 16), 4, 0, (uint32_t)i);
	bt = lwaftr_bt_build(sw, n, NULL, NULL, err, sizeof(err));
	fill_sw(&s, 0xc0000201, 3, 4, 0, 7);
	t0 = now();
	nbt = lwaftr_bt_change(bt, &s, 1, NULL, 0, err, sizeof(err));
	t1 = now();
	if (nbt) {
		lwaftr_bt_free(bt);
		bt = nbt;
	}
	t2 = now();
	nbt = lwaftr_bt_change(bt, NULL, 0, &sw[n / 2], 1, err, sizeof(err));
	printf("# %zu softwires: one add %.3f s, one remove %.3f s\n", n,
	    t1 - t0, now() - t2);
	for (q = 0; nbt && q < 100000; q++) {
		uint32_t a = (uint32_t)rndn((uint32_t)naddr);
		uint16_t p = (uint16_t)rnd();
		const struct softwire *f;

		f = lwaftr_bt_lookup(nbt, htonl(0x0a000000 + a), htons(p));
		if (&sw[a * 16 + (p >> 12)] == &sw[n / 2] ? f != NULL :
		    !same(f, &sw[a * 16 + (p >> 12)]))
			bad++;
	}
	ok(nbt && bad == 0 && lwaftr_bt_softwires(nbt, &m) && m == n &&
	    same(lwaftr_bt_lookup(nbt, s.ipv4, htons(3 << 12)), &s) &&
	    lwaftr_bt_find(nbt, sw[n / 2].ipv4, sw[n / 2].psid, 0) == NULL,
	    "%zu softwires: one added, one removed, lookups right", n);
	lwaftr_bt_free(bt);
	lwaftr_bt_free(nbt);
	free(sw);
}

int
main(void)
{
	test_random_changes();
	test_refused();
	test_million();
	return tap_done();
}
