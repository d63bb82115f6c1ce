/*
 * snb-join: merge all input rings, whatever their port names, into "out".
 * Each breath starts with the next ring in turn and takes at most a burst
 * from each, so one busy input cannot starve the others even when "out"
 * has room for only part of what is waiting.
 */
#include <err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

static struct ring **ins;	/* every input ring of every input port */
static struct ring *out;
static int nins, first_ring;
static uint64_t *packets, *drop_oversize;

static void	find_ports(void);

static void
join_init(int argc, char **argv)
{
	if (argc != 1)
		errx(2, "usage: snb-join");
	packets = app_counter("packets");
	drop_oversize = app_counter("drop-oversize");
	/* Ports are bound: a replacement refuses in standby. */
	find_ports();
}

static void
find_ports(void)
{
	struct port *o;
	int i, j;

	if ((o = app_port("out")) == NULL)
		errx(1, "output port 'out' is not connected");
	out = &o->rings[0];
	for (i = 0; i < app_nports; i++)
		if (app_ports[i].flags & PORT_IN)
			nins += app_ports[i].nrings;
	if (nins == 0)
		errx(1, "no input port is connected");
	if ((ins = calloc((size_t)nins, sizeof(*ins))) == NULL)
		err(1, NULL);
	nins = 0;
	for (i = 0; i < app_nports; i++)
		if (app_ports[i].flags & PORT_IN)
			for (j = 0; j < app_ports[i].nrings; j++)
				ins[nins++] = &app_ports[i].rings[j];
}

static int
join_breathe(void)
{
	uint32_t n, i, len, room, used = 0;
	int j, total = 0;

	if (out == NULL)
		find_ports();
	room = ring_room(out, APP_BURST * (uint32_t)nins);
	for (j = 0; j < nins && used < room; j++) {
		struct ring *r = ins[(first_ring + j) % nins];

		if ((n = ring_avail(r, APP_BURST)) > APP_BURST)
			n = APP_BURST;
		if (n > room - used)
			n = room - used;
		for (i = 0; i < n; i++) {
			struct packet *p = ring_peek(r, i);

			/* Read once: the producer could change it under us. */
			len = packet_len(r, p);
			if (len > out->capacity) {
				(*drop_oversize)++;
				continue;
			}
			ring_put_packet(out, used++, p, len);
		}
		ring_release(r, n);
		total += (int)n;
	}
	ring_commit(out, used);
	*packets += used;
	first_ring = (first_ring + 1) % nins;
	return total;
}

static const struct port_desc ports[] = {
	{ "*", PORT_IN },
	{ "out", PORT_OUT | PORT_REQUIRED },
	{ NULL, 0 }
};

static const struct app_desc desc = {
	.name = "join",
	.usage = "",
	.summary = "Merge all input ports and rings into 'out', round-robin.",
	.ports = ports,
	.init = join_init,
	.breathe = join_breathe,
};

int
main(int argc, char **argv)
{
	return app_main(&desc, argc, argv);
}
