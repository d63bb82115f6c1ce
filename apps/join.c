/*
 * snb-join: merge all input rings, whatever their port names, into "out".
 * Each breath starts with the next ring in turn and takes at most a burst
 * from each, so one busy input cannot starve the others even when "out"
 * has room for only part of what is waiting.
 */
#include "forward.h"

static struct fwd fwd;

static void
join_init(int argc, char **argv)
{
	app_no_words(argc, argv);
	fwd_init(&fwd, (const char *[]){ "*", NULL },
	    (const char *[]){ "out", NULL });
	fwd.out[0].sent = app_counter("packets");	/* sent to out */
}

static int
to_out(void *ctx, int from, const struct packet *p, uint32_t len)
{
	return 0;
}

static int
join_breathe(void)
{
	return fwd_breathe(&fwd, to_out, NULL);
}

static const struct app_desc desc = {
	.name = "join",
	.usage = "",
	.summary = "Merge all input ports and rings into 'out', round-robin.",
	.ports = (const struct port_desc[]){ { "*", PORT_IN },
	    { "out", PORT_OUT | PORT_REQUIRED }, { NULL, 0 } },
	.init = join_init,
	.breathe = join_breathe,
};

APP_MAIN(desc)
