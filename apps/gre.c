/*
 * snb-gre: GRE over IPv6 (next header 47) of protocol 0x6558 with an
 * optional key, for the pseudowires of CONFIG (snb-pw(5)) that have a
 * gre block.  The stage itself is libring/pwstage.c, shared with
 * snb-l2tp.
 */
#include "app.h"
#include "pwstage.h"

static const struct app_desc desc = {
	.name = "gre",
	.usage = PWSTAGE_USAGE,
	.counters_out = 1,
	.summary = "Ethernet pseudowires over GRE over IPv6 (RFC 2784, "
	    "2890): encapsulate toward core, check and decapsulate from it.",
	.ports = (const struct port_desc[]){ { "*", PORT_IN },
	    { "*", PORT_OUT }, { NULL, 0 } },
	.init = pwstage_init,
	.breathe = pwstage_breathe,
};

APP_MAIN(desc)
