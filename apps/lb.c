/*
 * snb-lb: spread packets over the bound output ports by a hash of their
 * flow, so that every packet of a flow, in both directions, leaves by the
 * same port: `nic eth0 | b: lb ; @b [0] | filter ... ; @b [1] | filter ...`
 * runs one filter per core.
 *
 * The flow is the IPv4 or IPv6 address pair, the protocol and, for TCP,
 * UDP and SCTP packets that are not fragments, the port pair, after up to
 * two VLAN tags.  The hash adds the two endpoints before mixing, so A->B
 * and B->A pick the same port.  Anything else (ARP, ...) hashes its
 * Ethernet address pair the same way.
 *
 * Lossless like every app: a packet whose port is full stops the burst
 * (packets behind it wait, in order, for the next breath).  Output ports
 * are taken in the order of their names, so a restarted lb sends every
 * flow where its predecessor did.
 */
#include <err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forward.h"
#include "proto.h"

static struct fwd fwd;
static uint64_t *blocked;

static void
lb_init(int argc, char **argv)
{
	char name[64];
	int k;

	(void)argv;
	if (argc != 1)
		errx(2, "usage: snb-lb");
	fwd_init(&fwd, (const char *[]){ "in", NULL },
	    (const char *[]){ "*", NULL });
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

/* The flow hash of a frame of len bytes (see the top of the file). */
static uint64_t
flow_hash(const uint8_t *d, uint32_t len)
{
	uint32_t off = SNB_ETH_HLEN, l4 = 0, hlen;
	uint16_t type;
	uint8_t proto = 0;
	uint64_t h;
	int tags;

	if (len < SNB_ETH_HLEN)
		return sym(d, d, len);
	type = (uint16_t)(d[12] << 8 | d[13]);
	for (tags = 0; tags < 2 && (type == SNB_ETH_VLAN ||
	    type == SNB_ETH_QINQ) && len >= off + 4; tags++) {
		type = (uint16_t)(d[off + 2] << 8 | d[off + 3]);
		off += 4;
	}
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
 * A burst of ring r, each packet to the output of its flow, up to the
 * first whose output is full: the others' flows go on meanwhile until
 * such a packet comes up (a full output does not stop them at once).
 */
static uint32_t
spread(void *ctx, int from, struct ring *r, uint32_t n)
{
	uint32_t i, len;
	int k;

	for (i = 0; i < n; i++) {
		const struct packet *p = ring_peek(r, i);

		len = packet_len(r, p);
		k = (int)(flow_hash(p->data, len) % (uint64_t)fwd.nout);
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
	int n = fwd_take(&fwd, spread, NULL);

	/* Inputs released by fwd_take(), outputs published now. */
	fwd_commit(&fwd);
	return n;
}

static const struct port_desc ports[] = {
	{ "in", PORT_IN | PORT_REQUIRED },
	{ "*", PORT_OUT },
	{ NULL, 0 }
};

static const struct app_desc desc = {
	.name = "lb",
	.usage = "",
	.summary = "Spread packets over the bound output ports by flow hash.",
	.ports = ports,
	.init = lb_init,
	.breathe = lb_breathe,
};

APP_MAIN(desc)
