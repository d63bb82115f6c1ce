/*
 * snb-tee: copy every packet to every bound output port, whatever their
 * names ("out", "1", "2", ...).  It moves at the pace of the slowest
 * output: a packet is taken from the input only when all outputs have
 * room for it, so no copy is ever lost.
 */
#include "forward.h"

static struct fwd fwd;

static void
tee_init(int argc, char **argv)
{
	app_no_words(argc, argv);
	fwd_init(&fwd, (const char *[]){ "in", NULL },
	    (const char *[]){ "*", NULL });
	fwd.packets = app_counter("packets");
}

static int
every_output(void *ctx, int from, const struct packet *p, uint32_t len)
{
	return FWD_ALL;
}

static int
tee_breathe(void)
{
	return fwd_breathe(&fwd, every_output, NULL);
}

static const struct app_desc desc = {
	.name = "tee",
	.usage = "",
	.summary = "Copy every packet to all bound output ports.",
	.ports = (const struct port_desc[]){ { "in", PORT_IN | PORT_REQUIRED },
	    { "*", PORT_OUT }, { NULL, 0 } },
	.init = tee_init,
	.breathe = tee_breathe,
};

APP_MAIN(desc)
