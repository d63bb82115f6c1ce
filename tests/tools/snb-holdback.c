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

#include "forward.h"

static struct fwd fwd;
static unsigned hold = 200, held;

static void
holdback_init(int argc, char **argv)
{
	if (argc > 2)
		errx(2, "usage: snb-holdback [HOLD]");
	if (argc == 2)
		hold = (unsigned)strtoul(argv[1], NULL, 10);
	fwd_init(&fwd, (const char *[]){ "in", NULL },
	    (const char *[]){ "out", NULL });
}

static int
to_out(void *ctx, int from, const struct packet *p, uint32_t len)
{
	return 0;
}

static int
holdback_breathe(void)
{
	if (fwd.nin == 0 || ring_avail(fwd.in[0], 1) == 0)
		return 0;
	if (held++ < hold)
		return 0;
	held = 0;
	return fwd_breathe(&fwd, to_out, NULL);
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

APP_MAIN(desc)
