/*
 * snb-lb: spread packets over the bound output ports by a hash of their
 * flow (snb-lb(1)): `nic eth0 | b: lb ; @b [0] | filter ... ; @b [1] |
 * filter ...` runs one filter per core.  The hash adds the two endpoints
 * before mixing, so A->B and B->A pick the same port.
 */
#include <err.h>
#include <stdio.h>
#include <string.h>

#include "forward.h"
#include "hash.h"
#include "proto.h"

static struct fwd fwd;
static uint64_t *blocked;
static int by_softwire;		/* --key softwire */

#define LB_ALL	UINT64_MAX	/* softwire_key(): to every output */

static void
key_opt(const char *opt, char *arg, void *var)
{
	if (strcmp(arg, "flow") != 0 && strcmp(arg, "softwire") != 0)
		errx(2, "bad --key '%s': flow or softwire", arg);
	by_softwire = strcmp(arg, "softwire") == 0;
}

static void
lb_init(int argc, char **argv)
{
	static const struct app_opt opts[] = {
		APP_ARG("key", key_opt, NULL, NULL),
		APP_OPT_END
	};
	char name[64];
	int k;

	app_options(argc, argv, opts, 0);
	fwd_init(&fwd, (const char *[]){ "in", NULL },
	    (const char *[]){ "*", NULL });
	/* A counter each, beside drop-oversize, packets and
	 * blocked-full-port: a stage has STAGE_MAX_COUNTERS. */
	if (fwd.nout > STAGE_MAX_COUNTERS - 3)
		errx(2, "%d outputs: at most %d, each has a counter",
		    fwd.nout, STAGE_MAX_COUNTERS - 3);
	fwd.packets = app_counter("packets");
	blocked = app_counter("blocked-full-port");
	for (k = 0; k < fwd.nout; k++) {
		snprintf(name, sizeof(name), "packets-%s",
		    fwd.out[k].port->name);
		fwd.out[k].sent = app_counter(name);
	}
}

/* 32-bit words of a and b, added (so the order of a and b does not matter). */
static inline uint64_t
sym(const uint8_t *a, const uint8_t *b, size_t len)
{
	uint64_t h = 0;
	uint32_t x, y;
	size_t i;

	for (i = 0; i + 4 <= len; i += 4) {
		memcpy(&x, a + i, 4);
		memcpy(&y, b + i, 4);
		h = h * 0x9e3779b97f4a7c15ULL + (uint64_t)x + y;
	}
	for (; i < len; i++)
		h = h * 31 + (uint64_t)a[i] + b[i];
	return h;
}

/* The ethertype after up to two 802.1Q or 802.1ad tags; *off: its header. */
static inline uint16_t
l3_type(const uint8_t *d, uint32_t len, uint32_t *off)
{
	uint16_t type = (uint16_t)(d[12] << 8 | d[13]);

	for (*off = SNB_ETH_HLEN; *off <= SNB_ETH_HLEN + 4 && (type ==
	    SNB_ETH_VLAN || type == SNB_ETH_QINQ) && len >= *off + 4; *off += 4)
		type = (uint16_t)(d[*off + 2] << 8 | d[*off + 3]);
	return type;
}

/* The flow hash of a frame of len bytes (see the top of the file). */
static uint64_t
flow_hash(const uint8_t *d, uint32_t len)
{
	uint32_t off, l4 = 0, hlen;
	uint16_t type;
	uint8_t proto = 0;
	uint64_t h;

	if (len < SNB_ETH_HLEN)
		return sym(d, d, len);
	type = l3_type(d, len, &off);
	if (type == SNB_ETH_IPV4 && len >= off + 20 && (d[off] >> 4) == 4) {
		hlen = (d[off] & 0x0f) * 4u;
		proto = d[off + 9];
		h = sym(d + off + 12, d + off + 16, 4);
		/* Ports only when not a fragment (MF clear, offset 0), so
		 * all fragments of a datagram hash alike. */
		if ((d[off + 6] & 0x3f) == 0 && d[off + 7] == 0 &&
		    hlen >= 20)
			l4 = off + hlen;
	} else if (type == SNB_ETH_IPV6 && len >= off + 40 &&
	    (d[off] >> 4) == 6) {
		proto = d[off + 6];	/* extension headers: no ports */
		h = sym(d + off + 8, d + off + 24, 16);
		l4 = off + 40;
	} else
		return sym(d, d + 6, 6) * 0x9e3779b97f4a7c15ULL + type;
	h = h * 0x9e3779b97f4a7c15ULL + proto;
	if (l4 && (proto == SNB_IPPROTO_TCP || proto == SNB_IPPROTO_UDP ||
	    proto == 132) && len >= l4 + 4)
		h = h * 0x9e3779b97f4a7c15ULL + sym(d + l4, d + l4 + 2, 2);
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ULL;
	return h ^ (h >> 32);
}

/*
 * --key softwire (see the top of the file): a hash of the softwire's
 * IPv4 address, or LB_ALL for ARP and neighbour discovery.
 */
static uint64_t
softwire_key(const uint8_t *d, uint32_t len)
{
	uint32_t off, a, w[4];
	uint16_t type;

	if (len < SNB_ETH_HLEN)
		return 0;
	type = l3_type(d, len, &off);
	if (type == SNB_ETH_ARP)
		return LB_ALL;
	if (type == SNB_ETH_IPV4 && len >= off + 20 && (d[off] >> 4) == 4) {
		memcpy(&a, d + off + 16, 4);		/* destination */
		return hash_mix32(a);
	}
	if (type != SNB_ETH_IPV6 || len < off + 40)
		return flow_hash(d, len) >> 1;
	if (d[off + 6] == SNB_IPPROTO_IPIP && len >= off + 60) {
		memcpy(&a, d + off + 52, 4);		/* inner source */
		return hash_mix32(a);
	}
	/* NS and NA (RFC 4861 4.3, 4.4), without extension headers. */
	if (d[off + 6] == SNB_IPPROTO_ICMPV6 && len > off + 40 &&
	    (d[off + 40] == 135 || d[off + 40] == 136))
		return LB_ALL;
	memcpy(w, d + off + 8, 16);			/* the B4 */
	return hash_mix32(w[0] ^ w[1] ^ w[2] ^ w[3]);
}

/*
 * A burst of ring r, each packet to the output of its flow, up to the
 * first whose output is full: the others' flows go on meanwhile until
 * such a packet comes up (a full output does not stop them at once).
 */
static uint32_t
spread(void *ctx, int from, struct ring *r, uint32_t n)
{
	uint64_t key;
	uint32_t i, len;
	int k;

	for (i = 0; i < n; i++) {
		const struct packet *p = ring_peek(r, i);

		len = packet_len(r, p);
		if (!by_softwire)
			k = (int)(flow_hash(p->data, len) % (uint64_t)fwd.nout);
		else if ((key = softwire_key(p->data, len)) != LB_ALL)
			k = (int)(key % (uint64_t)fwd.nout);
		else {
			/* To every output: each must have room. */
			for (k = 0; k < fwd.nout && fwd_room(&fwd, k); k++)
				;
			if (k < fwd.nout) {
				(*blocked)++;
				break;
			}
			for (k = 0; k < fwd.nout; k++)
				fwd_put(&fwd, k, p, len);
			continue;
		}
		if (!fwd_room(&fwd, k)) {
			(*blocked)++;
			break;
		}
		fwd_put(&fwd, k, p, len);
	}
	return i;
}

static int
lb_breathe(void)
{
	return fwd_take(&fwd, spread, NULL);
}

static const struct app_desc desc = {
	.name = "lb",
	.usage = "[--key flow|softwire]",
	.summary = "Spread packets over the bound output ports by flow hash.",
	.ports = (const struct port_desc[]){ { "in", PORT_IN | PORT_REQUIRED },
	    { "*", PORT_OUT }, { NULL, 0 } },
	.init = lb_init,
	.breathe = lb_breathe,
};

APP_MAIN(desc)
