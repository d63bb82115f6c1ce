/*
 * pwstage.h: the stage of snb-l2tp and snb-gre, one program text for
 * both: a port "core" toward the IPv6 core and one port per pseudowire
 * of CONFIG (snb-pw(5)) of the stage's encapsulation, named as the
 * pseudowire.  Frames from a pseudowire's port leave by core inside the
 * tunnel's headers; frames from core are checked, matched to their
 * pseudowire and leave by its port as the customer sent them.
 */
#ifndef SNB_PWSTAGE_H
#define SNB_PWSTAGE_H

#include "pwconf.h"

#define PWSTAGE_USAGE	"CONFIG [--counters-out FILE]"

/* The app_desc callbacks (and counters_out) of app "l2tp" or "gre". */
void	pwstage_init(int argc, char **argv);
int	pwstage_breathe(void);

#endif
