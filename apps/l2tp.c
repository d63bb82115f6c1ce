/*
 * snb-l2tp: L2TPv3 over IPv6 (next header 115) with 64-bit cookies, the
 * keyed IPv6 tunnel, for the pseudowires of CONFIG (snb-pw(5)) that have
 * an l2tp block.  The stage itself is libring/pwstage.c, shared with
 * snb-gre.
 */
#include "app.h"
#include "pwstage.h"

static const struct app_desc desc = {
	.name = "l2tp",
	.usage = PWSTAGE_USAGE,
	.counters_out = 1,
	.summary = "Ethernet pseudowires over L2TPv3 keyed IPv6 tunnels "
	    "(RFC 3931): encapsulate toward core, check and decapsulate "
	    "from it.",
	.ports = (const struct port_desc[]){ { "*", PORT_IN },
	    { "*", PORT_OUT }, { NULL, 0 } },
	.init = pwstage_init,
	.breathe = pwstage_breathe,
};

APP_MAIN(desc)
