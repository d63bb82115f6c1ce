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

#include "app.h"
#include "proto.h"

static struct port *in;
static struct ring **outs;	/* bound output ports, ordered by name */
static uint32_t *used;		/* slots filled in each, this burst */
static uint64_t **sent;		/* per-port packet counters */
static int nouts, first_ring;
static uint64_t *packets, *drop_oversize, *blocked;

static void	find_ports(void);

static void
lb_init(int argc, char **argv)
{
	if (argc != 1)
		errx(2, "usage: snb-lb");
	packets = app_counter("packets");
	drop_oversize = app_counter("drop-oversize");
	blocked = app_counter("blocked-full-port");
	/* Ports are bound: a replacement refuses in standby. */
	find_ports();
}

/* Port names: numbers by value first ("2" before "10"), then the rest. */
static int
by_name(const void *a, const void *b)
{
	const char *x = (*(struct port *const *)a)->name;
	const char *y = (*(struct port *const *)b)->name;
	char *ex, *ey;
	unsigned long nx = strtoul(x, &ex, 10), ny = strtoul(y, &ey, 10);
	int dx = *x != '\0' && *ex == '\0', dy = *y != '\0' && *ey == '\0';

	if (dx && dy)
		return nx < ny ? -1 : nx > ny;
	if (dx != dy)
		return dx ? -1 : 1;
	return strcmp(x, y);
}

static void
find_ports(void)
{
	struct port **p;
	char name[64];
	int i, n = 0;

	if ((in = app_port("in")) == NULL)
		errx(1, "input port 'in' is not connected");
	p = calloc((size_t)app_nports, sizeof(*p));
	outs = calloc((size_t)app_nports, sizeof(*outs));
	used = calloc((size_t)app_nports, sizeof(*used));
	sent = calloc((size_t)app_nports, sizeof(*sent));
	if (p == NULL || outs == NULL || used == NULL || sent == NULL)
		err(1, NULL);
	for (i = 0; i < app_nports; i++)
		if (app_ports[i].flags & PORT_OUT)
			p[n++] = &app_ports[i];
	if (n == 0)
		errx(1, "no output port is connected");
	qsort(p, (size_t)n, sizeof(*p), by_name);
	for (i = 0; i < n; i++) {
		outs[i] = &p[i]->rings[0];
		snprintf(name, sizeof(name), "packets-%s", p[i]->name);
		sent[i] = app_counter(name);
	}
	nouts = n;
	free(p);
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

static int
lb_breathe(void)
{
	uint32_t n, i, len, k;
	int j, total = 0;

	if (in == NULL)
		find_ports();
	/* Start with a different input ring each breath: fan-in fairness. */
	for (j = 0; j < in->nrings; j++) {
		struct ring *r = &in->rings[(first_ring + j) % in->nrings];

		if ((n = ring_avail(r, APP_BURST)) > APP_BURST)
			n = APP_BURST;
		if (n == 0)
			continue;
		memset(used, 0, (size_t)nouts * sizeof(*used));
		for (i = 0; i < n; i++) {
			struct packet *p = ring_peek(r, i);

			/* Read once: the producer could change it under us. */
			len = packet_len(r, p);
			k = (uint32_t)(flow_hash(p->data, len) % (uint64_t)nouts);
			if (len > outs[k]->capacity) {
				(*drop_oversize)++;
				continue;
			}
			if (ring_room(outs[k], used[k] + 1) <= used[k]) {
				(*blocked)++;
				break;
			}
			ring_put_packet(outs[k], used[k]++, p, len);
			(*sent[k])++;
		}
		/* Release first: a crash loses what we held, never duplicates. */
		ring_release(r, i);
		for (k = 0; k < (uint32_t)nouts; k++)
			ring_commit(outs[k], used[k]);
		*packets += i;
		total += (int)i;
	}
	if (in->nrings > 0)
		first_ring = (first_ring + 1) % in->nrings;
	return total;
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

int
main(int argc, char **argv)
{
	return app_main(&desc, argc, argv);
}
