/*
 * lwaftr_bt_bench: the binding table's cost per lookup.
 *
 *	lwaftr_bt_bench [SECONDS]
 *
 * For a 13-softwire table (the shape of the conformance files: a few
 * addresses, psid-length 0, 4, 6 and 16) and a 1,000,000-softwire table
 * (62500 addresses x 16 PSIDs), random (IPv4, port) keys that all hit:
 *
 *	single_ns	lwaftr_bt_lookup, one key at a time
 *	burst_ns	lwaftr_bt_lookup_burst, 32 keys a call
 *	baseline_ns	a plain open-addressing lookup of a uint32 key in a
 *			table with as many entries, measured in the same run
 *			(the machines are shared and noisy: compare ratios)
 *
 * Every variant reads a byte of the result, as the data path will.
 * Figures are the best of 3 rounds of CPU time.  The 1M table's build time is
 * printed too.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../apps/lwaftr/bt.c"
#include "../apps/lwaftr/btlookup.c"
#include "../tests/unit/util.h"

#define NKEYS	(1u << 20)
#define BURST	32

static double	round_s = 0.3;

static uint32_t	*kip;
static uint16_t	*kport;
static uint32_t	*kbase;		/* the baseline's keys */
static volatile uint64_t sink;

/* A plain uint32 -> uint32 hash table: the cheapest thing a lookup is. */
struct base_ent {
	uint32_t	key, val;
};

static struct base_ent	*btab;
static uint32_t		 bmask;

static void
base_build(size_t n)
{
	size_t slots, i;
	uint32_t h;

	for (slots = 16; slots < n * 2; slots *= 2)
		;
	btab = calloc(slots, sizeof(*btab));
	bmask = (uint32_t)slots - 1;
	for (i = 0; i < n; i++) {
		uint32_t k = (uint32_t)i * 2654435761u + 1;	/* never 0 */

		for (h = bt_hash(k) & bmask; btab[h].key; h = (h + 1) & bmask)
			;
		btab[h].key = k;
		btab[h].val = (uint32_t)i;
	}
	for (i = 0; i < NKEYS; i++)
		kbase[i] = (uint32_t)(rnd() % n) * 2654435761u + 1;
}

static uint32_t
base_lookup(uint32_t k)
{
	uint32_t h;

	for (h = bt_hash(k) & bmask; btab[h].key; h = (h + 1) & bmask)
		if (btab[h].key == k)
			return btab[h].val;
	return 0;
}

static double
time_baseline(void)
{
	double t0, t, best = 1e9;
	uint64_t sum = 0, n;
	int r;
	size_t i;

	for (r = 0; r < 3; r++) {
		t0 = cpu();
		for (n = 0; (t = cpu() - t0) < round_s; )
			for (i = 0; i < NKEYS / 16; i++, n++)
				sum += base_lookup(kbase[n & (NKEYS - 1)]);
		if (t / n < best)
			best = t / n;
	}
	sink += sum;
	return best * 1e9;
}

static double
time_single(const struct lwaftr_bt *bt)
{
	const struct softwire *s;
	double t0, t, best = 1e9;
	uint64_t sum = 0, n;
	size_t i, j;
	int r;

	for (r = 0; r < 3; r++) {
		t0 = cpu();
		for (n = 0; (t = cpu() - t0) < round_s; )
			for (i = 0; i < NKEYS / 16; i++, n++) {
				j = n & (NKEYS - 1);
				s = lwaftr_bt_lookup(bt, kip[j], kport[j]);
				sum += s->b4[15];
			}
		if (t / n < best)
			best = t / n;
	}
	sink += sum;
	return best * 1e9;
}

static double
time_burst(const struct lwaftr_bt *bt)
{
	const struct softwire *out[BURST];
	double t0, t, best = 1e9;
	uint64_t sum = 0, n;
	size_t i, j;
	int r, k;

	for (r = 0; r < 3; r++) {
		t0 = cpu();
		for (n = 0; (t = cpu() - t0) < round_s; )
			for (i = 0; i < NKEYS / 16 / BURST; i++, n += BURST) {
				j = n & (NKEYS - 1);
				lwaftr_bt_lookup_burst(bt, kip + j, kport + j,
				    BURST, out);
				for (k = 0; k < BURST; k++)
					sum += out[k]->b4[15];
			}
		if (t / n < best)
			best = t / n;
	}
	sink += sum;
	return best * 1e9;
}

static void
fill(struct softwire *s, uint32_t ipv4_host, uint32_t psid, int plen)
{
	memset(s, 0, sizeof(*s));
	s->ipv4 = htonl(ipv4_host);
	s->psid = (uint16_t)psid;
	s->psid_length = (uint8_t)plen;
	s->b4[0] = 0x20;
	memcpy(s->b4 + 12, &ipv4_host, 4);
	s->b4[15] ^= (uint8_t)psid;
	s->br[0] = 0xfe;
}

/* A key that hits s: its PSID in place, the other port bits random. */
static uint16_t
port_for(const struct softwire *s)
{
	unsigned shift = 16 - s->reserved_bits - s->psid_length;
	uint32_t p = rnd() & 0xffff;

	if (s->psid_length)
		p = (p & ~(((1u << s->psid_length) - 1) << shift)) |
		    (uint32_t)s->psid << shift;
	return htons((uint16_t)p);
}

static void
run(const char *label, struct softwire *sw, size_t n)
{
	struct lwaftr_bt *bt;
	char err[256];
	double t0, tb, single, burst, base;
	size_t i, j;

	t0 = cpu();
	if ((bt = lwaftr_bt_build(sw, n, NULL, NULL, err, sizeof(err))) ==
	    NULL) {
		fprintf(stderr, "lwaftr_bt_bench: %s\n", err);
		exit(1);
	}
	tb = cpu() - t0;
	for (i = 0; i < NKEYS; i++) {
		j = rnd() % n;
		kip[i] = sw[j].ipv4;
		kport[i] = port_for(&sw[j]);
	}
	base_build(n);
	single = time_single(bt);
	burst = time_burst(bt);
	base = time_baseline();
	printf("bt softwires=%zu single_ns=%.1f burst_ns=%.1f "
	    "baseline_ns=%.1f\n", n, single, burst, base);
	if (n > 1000)
		printf("bt build softwires=%zu %s ms=%.0f\n", n, label,
		    tb * 1e3);
	lwaftr_bt_free(bt);
	free(btab);
}

int
main(int argc, char **argv)
{
	/* the conformance table's shape: 0, 4, 6 and 16-bit PSIDs */
	static const struct { uint32_t a, psid; int plen; } small[] = {
		{ 0xb24f9603, 4, 6 }, { 0xb24f96e9, 22788, 16 },
		{ 0xb24f9601, 0, 0 }, { 0xb24f96e9, 2700, 16 },
		{ 0xb24f96e9, 4660, 16 }, { 0xb24f96e9, 54192, 16 },
		{ 0xb24f96e9, 7850, 16 }, { 0xb24f960f, 1, 4 },
		{ 0xb24f96e9, 2300, 16 }, { 0xb24f960f, 0, 4 },
		{ 0xb24f96e9, 80, 16 }, { 0xb24f9602, 7850, 16 },
		{ 0xb24f9604, 9, 6 },
	};
	size_t n = 1000000, i;
	struct softwire *sw;

	if (argc > 1 && atof(argv[1]) > 0)
		round_s = atof(argv[1]);
	kip = malloc(NKEYS * sizeof(*kip));
	kport = malloc(NKEYS * sizeof(*kport));
	kbase = malloc(NKEYS * sizeof(*kbase));
	sw = malloc(n * sizeof(*sw));
	if (kip == NULL || kport == NULL || kbase == NULL || sw == NULL)
		return 1;

	for (i = 0; i < sizeof(small) / sizeof(small[0]); i++)
		fill(&sw[i], small[i].a, small[i].psid, small[i].plen);
	run("small", sw, i);

	/* 62500 addresses x 16 PSIDs, in shuffled file order */
	for (i = 0; i < n; i++)
		fill(&sw[i], 0x0a000000 + (uint32_t)(i / 16),
		    (uint32_t)(i % 16), 4);
	for (i = n; i > 1; i--) {
		size_t j = rnd() % i;
		struct softwire t = sw[i - 1];

		sw[i - 1] = sw[j];
		sw[j] = t;
	}
	run("62500x16", sw, n);
	free(sw);
	free(kip);
	free(kport);
	free(kbase);
	return 0;
}
