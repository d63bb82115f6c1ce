/*
 * snb-sample: pass one packet in N to "out", the rest to "rest" (or
 * count and drop them when "rest" is not connected).  The model of
 * snb(7)'s "Writing an app": a whole app on the forwarding primitive.
 *
 *	cc -O2 -Ilibring -o build/bin/snb-sample examples/sample.c \
 *	    build/libring.a -lpcap -lbsd
 *	snb-run 'source --count 1000 | sample 10 | sink'
 */
#include <err.h>
#include <stdlib.h>

#include "forward.h"

static struct fwd fwd;
static uint64_t every, seen, *skipped;

static void
sample_init(int argc, char **argv)
{
	if (argc != 2)
		errx(2, "usage: snb-sample N");
	every = (uint64_t)app_parse_num("N", argv[1], 1, 1000000);
	fwd_init(&fwd, (const char *[]){ "in", NULL },
	    (const char *[]){ "out", "rest", NULL });
	fwd.out[0].sent = app_counter("sampled");
	fwd.out[1].sent = app_counter("rest");
	skipped = app_counter("drop-skipped");
}

/* Called once per packet; returns where it goes: 0 "out", 1 "rest". */
static int
pick(void *ctx, int from, const struct packet *p, uint32_t len)
{
	if (seen++ % every == 0)
		return 0;
	if (fwd.out[1].ring != NULL)
		return 1;
	(*skipped)++;
	return FWD_DROP;
}

static int
sample_breathe(void)
{
	return fwd_breathe(&fwd, pick, NULL);
}

static const struct port_desc ports[] = {
	{ "in", PORT_IN | PORT_REQUIRED },
	{ "out", PORT_OUT | PORT_REQUIRED },
	{ "rest", PORT_OUT },
	{ NULL, 0 }
};

static const struct app_desc desc = {
	.name = "sample",
	.usage = "N",
	.summary = "Pass one packet in N to 'out', the rest to 'rest'.",
	.ports = ports,
	.init = sample_init,
	.breathe = sample_breathe,
};

APP_MAIN(desc)
