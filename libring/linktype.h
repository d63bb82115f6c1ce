/*
 * linktype.h: captures of other link types as Ethernet frames, for the
 * apps that only know Ethernet (everything after snb-pcap-read): Linux
 * "any" captures (LINUX_SLL, LINUX_SLL2), raw IP (RAW, IPV4, IPV6) and
 * BSD loopback (NULL, LOOP).
 *
 * The record's own header gives way to a synthesized Ethernet header with
 * the ethertype the record names (SLL, SLL2) or its IP version implies:
 * destination ff:ff:ff:ff:ff:ff for a packet the capture marks broadcast,
 * else 00:00:00:00:00:00; source the captured link-layer address when it
 * is 6 bytes long (SLL, SLL2 of an Ethernet-like interface), else
 * 00:00:00:00:00:00.
 */
#ifndef SNB_LINKTYPE_H
#define SNB_LINKTYPE_H

#include <stdint.h>

#define LT_NOT_ETHER	(-1)	/* no Ethernet form: not IP, not an
				   ethertype (802.2 LLC, CAN...), short */
#define LT_TOO_LONG	(-2)	/* longer than max as Ethernet */

/* 1 when linktype_to_ether() takes records of pcap link type dlt. */
int	linktype_known(int dlt);
/* The names of the link types it takes, for a message. */
#define LINKTYPE_NAMES	"EN10MB, LINUX_SLL, LINUX_SLL2, RAW, IPV4, IPV6, " \
			"NULL and LOOP"

/*
 * The record d[0..*len) of link type dlt (not EN10MB) as an Ethernet
 * frame in out[0..*len) (*len updated, at most max, out has room for
 * max): 0, LT_NOT_ETHER or LT_TOO_LONG.  *type is the ethertype or
 * protocol the record named (0 if none), for a message.  A record's
 * original length grows by the same amount: *len - the old *len.
 */
int	linktype_to_ether(int dlt, const unsigned char *d, uint32_t *len,
	    unsigned char *out, uint32_t max, unsigned *type);

#endif
