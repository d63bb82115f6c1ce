/*
 * snb-stopper: a test app that forwards in -> out and, once it has
 * forwarded N packets (default 1), stops itself (SIGSTOP) in that very
 * breath: after its publish, before the runtime sends the batched
 * wake-up of the sleeping consumer (idle.h).  A stop that lands in that
 * window by chance is rare; this one always does.  With SNB_IDLE_CAP_MS
 * large, a consumer left asleep shows.
 */
#include <err.h>
#include <signal.h>
#include <stdlib.h>

#include "forward.h"

static struct fwd fwd;
static unsigned long n = 1, seen;

static void
stopper_init(int argc, char **argv)
{
	if (argc > 2)
		errx(2, "usage: snb-stopper [N]");
	if (argc == 2)
		n = strtoul(argv[1], NULL, 10);
	fwd_init(&fwd, (const char *[]){ "in", NULL },
	    (const char *[]){ "out", NULL });
}

static int
to_out(void *ctx, int from, const struct packet *p, uint32_t len)
{
	return 0;
}

static int
stopper_breathe(void)
{
	int moved = fwd_breathe(&fwd, to_out, NULL);

	if (moved > 0 && seen < n && (seen += (unsigned)moved) >= n)
		raise(SIGSTOP);
	return moved;
}

static const struct port_desc ports[] = {
	{ "in", PORT_IN | PORT_REQUIRED },
	{ "out", PORT_OUT | PORT_REQUIRED },
	{ NULL, 0 }
};

static const struct app_desc desc = {
	.name = "stopper",
	.usage = "[N]",
	.summary = "Forward packets; stop (SIGSTOP) in the breath that "
	    "forwards the Nth (a test app).",
	.ports = ports,
	.init = stopper_init,
	.breathe = stopper_breathe,
};

APP_MAIN(desc)
