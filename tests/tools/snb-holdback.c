/*
 * snb-holdback: a test app that forwards in -> out, but leaves each
 * arriving burst alone for HOLD breaths first (default 200), as an app
 * with reasons of its own might.  Its outputs have room all the while, so
 * the runtime then finds packets waiting and nothing full: the situation
 * in which a lost wake-up used to become a sleep as long as the idle cap
 * (issue 11, item 1).  With SNB_IDLE_CAP_MS large, such a sleep shows.
 */
#include <err.h>
#include <stdlib.h>

#include "app.h"

static struct port *in, *out;
static unsigned hold = 200, held;

static void
holdback_init(int argc, char **argv)
{
	if (argc > 2)
		errx(2, "usage: snb-holdback [HOLD]");
	if (argc == 2)
		hold = (unsigned)strtoul(argv[1], NULL, 10);
	in = app_port("in");
	out = app_port("out");
}

static int
holdback_breathe(void)
{
	struct ring *ri = &in->rings[0], *ro = &out->rings[0];
	uint32_t n, i;

	if ((n = ring_avail(ri, APP_BURST)) == 0)
		return 0;
	if (held++ < hold)
		return 0;
	held = 0;
	if (n > APP_BURST)
		n = APP_BURST;
	n = app_room(out, n);
	for (i = 0; i < n; i++) {
		struct packet *p = ring_peek(ri, i);
		ring_put_packet(ro, i, p, packet_len(ri, p));
	}
	ring_release(ri, n);
	ring_commit(ro, n);
	return (int)n;
}

static const struct port_desc ports[] = {
	{ "in", PORT_IN | PORT_REQUIRED },
	{ "out", PORT_OUT | PORT_REQUIRED },
	{ NULL, 0 }
};

static const struct app_desc desc = {
	.name = "holdback",
	.usage = "[HOLD]",
	.summary = "Forward packets, each burst after HOLD idle breaths "
	    "(a test app).",
	.ports = ports,
	.init = holdback_init,
	.breathe = holdback_breathe,
};

int
main(int argc, char **argv)
{
	return app_main(&desc, argc, argv);
}
