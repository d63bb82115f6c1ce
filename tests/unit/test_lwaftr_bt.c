/*
 * test_lwaftr_bt: the binding table (apps/lwaftr/bt.c, btlookup.c) against a
 * brute-force scan of the softwire list.
 *
 *  1. Random tables: addresses with every psid-length 0..16 and reserved
 *     bit count, dense and sparse PSID sets, in shuffled order; random
 *     (address, port) queries, every port of some addresses, absent
 *     addresses; bursts of every length equal single lookups.
 *  2. Edge cases: empty table, address 0.0.0.0, one address with all
 *     65536 PSIDs, shift 0, many BR addresses (the hashed BR set).
 *  3. Build rejects conflicting tables with a message naming them.
 *  4. One million softwires (65536 addresses x 16 PSIDs, and 1M addresses
 *     x 1): build time as a TAP comment, spot-checked lookups.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tap.h"
#include "util.h"
#include "../../apps/lwaftr/bt.c"
#include "../../apps/lwaftr/btlookup.c"

#include "bt_ref.h"

/* A random table: distinct addresses, each with its own port-set shape. */
static size_t
random_table(struct softwire *sw, size_t max, uint32_t *addrs, int naddr)
{
	size_t n = 0, i, j, first;
	int a, plen, resv, k, dense;
	uint32_t psid, span, base = rnd() & 0xffffff00u;
	struct softwire t;

	for (a = 0; a < naddr; a++) {
		/* neighbours and far apart: both shapes of real pools */
		addrs[a] = rndn(2) ? base + (uint32_t)a : rnd();
		for (k = 0; k < a; k++)
			if (addrs[k] == addrs[a])
				break;
		if (k < a) {
			a--;
			continue;
		}
		plen = rndn(17);
		resv = rndn(17 - plen);
		span = 1u << plen;
		dense = plen <= 6 && rndn(2);
		first = n;
		if (dense) {
			for (psid = 0; psid < span && n < max; psid++, n++)
				fill_sw(&sw[n], addrs[a], psid, plen, resv,
				    (uint32_t)n);
		} else {
			/* up to 40 distinct PSIDs, never every one */
			int want = 1 + rndn(span < 40 ? span : 40);

			if ((uint32_t)want == span && span > 1)
				want--;
			for (k = 0; k < want && n < max; k++) {
				psid = rndn(span);
				for (j = first; j < n; j++)
					if (sw[j].psid == psid)
						break;
				if (j < n)
					continue;
				fill_sw(&sw[n], addrs[a], psid, plen, resv,
				    (uint32_t)n);
				n++;
			}
		}
	}
	for (i = n; i > 1; i--) {	/* file order is any order */
		j = rndn((uint32_t)i);
		t = sw[i - 1];
		sw[i - 1] = sw[j];
		sw[j] = t;
	}
	return n;
}

/* The softwires of one address, for the every-port sweeps. */
static size_t
of_address(const struct softwire *sw, size_t n, uint32_t ipv4,
    struct softwire *out)
{
	size_t i, m = 0;

	for (i = 0; i < n; i++)
		if (sw[i].ipv4 == ipv4)
			out[m++] = sw[i];
	return m;
}

static void
test_random(void)
{
	static struct softwire sw[20000], mine[20000];
	uint32_t addrs[300], ip[200], absent;
	uint16_t port[200];
	const struct softwire *out[200];
	struct lwaftr_bt *bt;
	char err[256];
	int trial, trials = 200 / scale(), i, k, q, nb, bad = 0, badb = 0;
	int badp = 0, badh = 0, built = 0;
	size_t n;
	uint32_t p;

	for (trial = 0; trial < trials; trial++) {
		int naddr = 1 + rndn(trial % 4 == 0 ? 300 : 20);

		n = random_table(sw, sizeof(sw) / sizeof(sw[0]), addrs, naddr);
		if ((bt = lwaftr_bt_build(sw, n, NULL, NULL, err,
		    sizeof(err))) == NULL) {
			printf("# trial %d: %s\n", trial, err);
			continue;
		}
		built++;
		for (q = 0; q < 2000; q++) {
			uint32_t a = rndn(8) ? htonl(addrs[rndn(naddr)]) :
			    rnd();
			uint16_t pt = (uint16_t)rnd();

			if (!same(lwaftr_bt_lookup(bt, a, pt),
			    brute(sw, n, a, pt)))
				bad++;
		}
		/* every port of two of its addresses */
		for (k = 0; k < 2; k++) {
			uint32_t a = htonl(addrs[rndn(naddr)]);
			size_t m = of_address(sw, n, a, mine);

			for (p = 0; p < 65536; p += 1 + (trial & 3))
				if (!same(lwaftr_bt_lookup(bt, a, htons(p)),
				    brute(mine, m, a, htons(p))))
					badp++;
		}
		for (k = 0; k < 20; k++) {
			nb = rndn(201);
			for (i = 0; i < nb; i++) {
				ip[i] = rndn(8) ? htonl(addrs[rndn(naddr)]) :
				    rnd();
				port[i] = (uint16_t)rnd();
			}
			lwaftr_bt_lookup_burst(bt, ip, port, nb, out);
			for (i = 0; i < nb; i++)
				if (out[i] != lwaftr_bt_lookup(bt, ip[i],
				    port[i]))
					badb++;
		}
		for (i = 0; i < naddr; i++)
			if (!lwaftr_bt_has_ipv4(bt, htonl(addrs[i])))
				badh++;
		for (k = 0; k < 200; k++) {
			absent = rnd();
			for (i = 0; i < naddr; i++)
				if (addrs[i] == absent)
					break;
			if (i == naddr && (lwaftr_bt_has_ipv4(bt,
			    htonl(absent)) || lwaftr_bt_lookup(bt,
			    htonl(absent), (uint16_t)rnd()) != NULL))
				badh++;
		}
		lwaftr_bt_free(bt);
	}
	ok(built == trials, "%d random tables built", built);
	ok(bad == 0, "random lookups equal the brute-force scan (%d bad)",
	    bad);
	ok(badp == 0, "every port of some addresses (%d bad)", badp);
	ok(badb == 0, "bursts of 0..200 equal single lookups (%d bad)", badb);
	ok(badh == 0, "has_ipv4: present yes, absent no (%d bad)", badh);
}

static void
test_edges(void)
{
	static struct softwire sw[65536 + 16];
	struct lwaftr_bt *bt;
	const struct softwire *s, *out[4];
	uint32_t ip[4];
	uint16_t port[4];
	char err[256];
	size_t i;
	int bad;

	bt = lwaftr_bt_build(NULL, 0, NULL, NULL, err, sizeof(err));
	ip[0] = 0;
	port[0] = 0;
	out[0] = (void *)1;
	if (bt)
		lwaftr_bt_lookup_burst(bt, ip, port, 1, out);
	ok(bt && lwaftr_bt_lookup(bt, 0, 0) == NULL &&
	    !lwaftr_bt_has_ipv4(bt, 0) && out[0] == NULL,
	    "empty table: nothing found");
	lwaftr_bt_free(bt);
	lwaftr_bt_free(NULL);

	/* 0.0.0.0 is an address like another: emptiness is count 0 */
	fill_sw(&sw[0], 0, 0, 0, 0, 1);
	fill_sw(&sw[1], 1, 5, 3, 0, 2);
	bt = lwaftr_bt_build(sw, 2, NULL, NULL, err, sizeof(err));
	ok(bt && same(lwaftr_bt_lookup(bt, 0, htons(1234)), &sw[0]) &&
	    same(lwaftr_bt_lookup(bt, htonl(1), htons(5 << 13 | 77)),
	    &sw[1]) && lwaftr_bt_lookup(bt, htonl(1), htons(4 << 13)) ==
	    NULL, "address 0.0.0.0, psid-length 0 and 3");
	lwaftr_bt_free(bt);

	/* one address, every PSID of psid-length 16: direct index */
	for (i = 0; i < 65536; i++)
		fill_sw(&sw[i], 0x0a000001, (uint32_t)(65535 - i), 16, 0,
		    (uint32_t)i);
	bt = lwaftr_bt_build(sw, 65536, NULL, NULL, err, sizeof(err));
	for (i = 0, bad = 0; bt && i < 65536; i++) {
		s = lwaftr_bt_lookup(bt, htonl(0x0a000001), htons(i));
		if (s == NULL || s->psid != i)
			bad++;
	}
	ok(bt && bad == 0, "65536 PSIDs of one address (%d bad)", bad);
	lwaftr_bt_free(bt);

	/*
	 * shift 0: psid-length 4 under 12 reserved bits, the low port bits;
	 * ports below 2^12 reserved
	 */
	for (i = 0; i < 16; i += 2)
		fill_sw(&sw[i / 2], 0x0a000002, (uint32_t)i, 4, 12, 0);
	bt = lwaftr_bt_build(sw, 8, NULL, NULL, err, sizeof(err));
	for (i = 0, bad = 0; bt && i < 65536; i++) {
		s = lwaftr_bt_lookup(bt, htonl(0x0a000002), htons(i));
		if ((i & 1) || i < 4096 ? s != NULL :
		    (s == NULL || s->psid != (i & 15)))
			bad++;
	}
	ok(bt && bad == 0, "shift 0 (reserved 12, psid-length 4)");
	lwaftr_bt_free(bt);
}

struct reject {
	struct softwire	a, b;
	const char	*want;
};

static void
test_rejects(void)
{
	struct softwire sw[3];
	struct lwaftr_bt *bt;
	char err[256];

	fill_sw(&sw[0], 0x01020304, 4, 6, 0, 0);
	fill_sw(&sw[1], 0x01020305, 1, 6, 0, 0);
	fill_sw(&sw[2], 0x01020304, 4, 6, 0, 0);
	bt = lwaftr_bt_build(sw, 3, NULL, NULL, err, sizeof(err));
	ok(bt == NULL && strcmp(err, "softwire 3 (1.2.3.4 psid 4) duplicates "
	    "softwire 1") == 0, "duplicate (ipv4, psid): %s", err);

	fill_sw(&sw[2], 0x01020304, 5, 5, 0, 0);
	bt = lwaftr_bt_build(sw, 3, NULL, NULL, err, sizeof(err));
	ok(bt == NULL && strcmp(err, "softwire 3 (1.2.3.4 psid 5) shares its "
	    "ipv4 with softwire 1 but not its port set (psid-length 6 there, "
	    "5 here; reserved-ports-bit-count 0 there, 0 here)") == 0,
	    "different psid-length: %s", err);

	fill_sw(&sw[2], 0x01020304, 5, 6, 2, 0);
	bt = lwaftr_bt_build(sw, 3, NULL, NULL, err, sizeof(err));
	ok(bt == NULL && strcmp(err, "softwire 3 (1.2.3.4 psid 5) shares its "
	    "ipv4 with softwire 1 but not its port set (psid-length 6 there, "
	    "6 here; reserved-ports-bit-count 0 there, 2 here)") == 0,
	    "different reserved bits: %s", err);

	fill_sw(&sw[2], 0x01020306, 64, 6, 0, 0);
	bt = lwaftr_bt_build(sw, 3, NULL, NULL, err, sizeof(err));
	ok(bt == NULL && strcmp(err, "softwire 3 (1.2.3.6 psid 64): psid out "
	    "of range for psid-length 6") == 0, "psid out of range: %s", err);

	fill_sw(&sw[2], 0x01020306, 0, 17, 0, 0);
	bt = lwaftr_bt_build(sw, 3, NULL, NULL, err, sizeof(err));
	ok(bt == NULL && strstr(err, "softwire 3 (1.2.3.6 psid 0): "
	    "psid-length 17") == err, "psid-length 17: %s", err);

	fill_sw(&sw[2], 0x01020306, 0, 8, 9, 0);
	bt = lwaftr_bt_build(sw, 3, NULL, NULL, err, sizeof(err));
	ok(bt == NULL && strcmp(err, "softwire 3 (1.2.3.6 psid 0): "
	    "psid-length 8 + reserved-ports-bit-count 9 is more than 16") ==
	    0, "psid-length + reserved > 16: %s", err);

	/* psid-length 0 and another softwire of the address: a conflict */
	fill_sw(&sw[0], 0x01020307, 0, 0, 0, 0);
	fill_sw(&sw[1], 0x01020307, 1, 1, 0, 0);
	bt = lwaftr_bt_build(sw, 2, NULL, NULL, err, sizeof(err));
	ok(bt == NULL && strncmp(err, "softwire 2 (1.2.3.7 psid 1) shares its "
	    "ipv4 with softwire 1", 59) == 0,
	    "whole address and a share of it: %s", err);
	bt = lwaftr_bt_build(sw, 2, NULL, NULL, NULL, 0);
	ok(bt == NULL, "no error buffer");
}

static void
test_million(void)
{
	size_t naddr = 65536 / scale(), n = naddr * 16, i;
	struct softwire *sw = malloc(n * sizeof(*sw));
	struct lwaftr_bt *bt;
	const struct softwire *s;
	char err[256];
	double t0, t1, c0, c1;
	int bad = 0, q;

	/* 65536 addresses x 16 PSIDs, in a shuffled file order */
	for (i = 0; i < n; i++)
		fill_sw(&sw[i], 0x0a000000 + (uint32_t)(i / 16),
		    (uint32_t)(i % 16), 4, 0, (uint32_t)i);
	for (i = n; i > 1; i--) {
		size_t j = rndn((uint32_t)i);
		struct softwire t = sw[i - 1];

		sw[i - 1] = sw[j];
		sw[j] = t;
	}
	t0 = now();
	c0 = cpu();
	bt = lwaftr_bt_build(sw, n, NULL, NULL, err, sizeof(err));
	t1 = now();
	c1 = cpu();
	printf("# %zu softwires (%zu addresses x 16): build %.3f s (cpu "
	    "%.3f s)\n", n, naddr, t1 - t0, c1 - c0);
	for (q = 0; bt && q < 100000; q++) {
		uint32_t a = (uint32_t)rndn((uint32_t)naddr);
		uint16_t p = (uint16_t)rnd();

		s = lwaftr_bt_lookup(bt, htonl(0x0a000000 + a), htons(p));
		if (s == NULL || s->psid != p >> 12 ||
		    ntohl(s->ipv4) != 0x0a000000 + a)
			bad++;
	}
	ok(bt != NULL && bad == 0, "%zu softwires: built, lookups right", n);
	if (scale() == 1)
		ok(c1 - c0 < 1.0, "%zu softwires build in under 1 s of CPU "
		    "(%.3f s)", n, c1 - c0);
	lwaftr_bt_free(bt);

	/* as many addresses, one softwire each */
	for (i = 0; i < n; i++)
		fill_sw(&sw[i], 0x0a000000 + (uint32_t)i * 7, 0, 0, 0, 0);
	t0 = now();
	bt = lwaftr_bt_build(sw, n, NULL, NULL, err, sizeof(err));
	t1 = now();
	printf("# %zu softwires (%zu addresses x 1): build %.3f s\n", n, n,
	    t1 - t0);
	for (q = 0, bad = 0; bt && q < 100000; q++) {
		uint32_t a = 0x0a000000 + (uint32_t)rndn((uint32_t)n) * 7;

		s = lwaftr_bt_lookup(bt, htonl(a), (uint16_t)rnd());
		if (s == NULL || ntohl(s->ipv4) != a ||
		    lwaftr_bt_lookup(bt, htonl(a + 1), 0) != NULL)
			bad++;
	}
	ok(bt != NULL && bad == 0, "%zu addresses: built, lookups right", n);
	lwaftr_bt_free(bt);
	free(sw);
}

int
main(void)
{
	test_random();
	test_edges();
	test_rejects();
	test_million();
	return tap_done();
}
