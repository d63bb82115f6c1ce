/*
 * snb-tee: copy every packet to every bound output port, whatever their
 * names ("out", "1", "2", ...).  It moves at the pace of the slowest
 * output: a packet is taken from the input only when all outputs have
 * room for it, so no copy is ever lost.
 */
#include <err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

static struct port *in;
static struct ring **outs;	/* one ring per bound output port */
static uint32_t *used;		/* slots filled in each, this burst */
static int nouts, first_ring;
static uint64_t *packets, *drop_oversize;

static void	find_ports(void);

static void
tee_init(int argc, char **argv)
{
	if (argc != 1)
		errx(2, "usage: snb-tee");
	packets = app_counter("packets");
	drop_oversize = app_counter("drop-oversize");
	/* Ports are bound: a replacement refuses in standby. */
	find_ports();
}

static void
find_ports(void)
{
	int i;

	if ((in = app_port("in")) == NULL)
		errx(1, "input port 'in' is not connected");
	outs = calloc((size_t)app_nports, sizeof(*outs));
	used = calloc((size_t)app_nports, sizeof(*used));
	if (outs == NULL || used == NULL)
		err(1, NULL);
	for (i = 0; i < app_nports; i++)
		if (app_ports[i].flags & PORT_OUT)
			outs[nouts++] = &app_ports[i].rings[0];
	/* Consuming with nowhere to send would discard everything. */
	if (nouts == 0)
		errx(1, "no output port is connected");
}

static int
tee_breathe(void)
{
	uint32_t n, i, len, room;
	int j, k, total = 0;

	if (in == NULL)
		find_ports();
	/* Start with a different input ring each breath: fan-in fairness. */
	for (j = 0; j < in->nrings; j++) {
		struct ring *r = &in->rings[(first_ring + j) % in->nrings];

		if ((n = ring_avail(r, APP_BURST)) > APP_BURST)
			n = APP_BURST;
		for (k = 0; k < nouts && n > 0; k++)
			if ((room = ring_room(outs[k], n)) < n)
				n = room;
		if (n == 0)
			continue;
		memset(used, 0, (size_t)nouts * sizeof(*used));
		for (i = 0; i < n; i++) {
			struct packet *p = ring_peek(r, i);

			/* Read once: the producer could change it under us. */
			len = packet_len(r, p);
			for (k = 0; k < nouts; k++) {
				if (len > outs[k]->capacity) {
					(*drop_oversize)++;
					continue;
				}
				ring_put_packet(outs[k], used[k]++, p, len);
			}
		}
		/* Release first: a crash loses what we held, never duplicates. */
		ring_release(r, n);
		for (k = 0; k < nouts; k++)
			ring_commit(outs[k], used[k]);
		*packets += n;
		total += (int)n;
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
	.name = "tee",
	.usage = "",
	.summary = "Copy every packet to all bound output ports.",
	.ports = ports,
	.init = tee_init,
	.breathe = tee_breathe,
};

int
main(int argc, char **argv)
{
	return app_main(&desc, argc, argv);
}
