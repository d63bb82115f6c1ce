/*
 * ip6ext.h: the extension headers between an IPv6 header and its
 * upper-layer header, as a destination passes over them (RFC 8200 4),
 * for the apps that take apart what is sent to one of their addresses
 * (snb-l2tp, snb-gre, snb-esp).
 *
 *	hop-by-hop options	only right after the IPv6 header (4.1)
 *	destination options	passed over
 *	routing			passed over with no segments left; with
 *				some, the packet's final destination is
 *				another node (4.4)
 *	fragment		an atomic one (offset 0, no more to come)
 *				is the whole packet (RFC 6946, RFC 8200
 *				4.5); any other is not reassembled here
 *
 * At most IP6EXT_MAX headers: a packet behind more is not looked into.
 */
#ifndef SNB_IP6EXT_H
#define SNB_IP6EXT_H

#include <stdint.h>

#define IP6EXT_MAX	8

enum {
	IP6EXT_OK = 0,		/* *next and *off: the upper layer's */
	IP6EXT_MALFORMED,	/* cut short, hop-by-hop after another */
	IP6EXT_FRAGMENT,	/* a fragment that is not atomic */
	IP6EXT_NOT_FINAL,	/* a routing header with segments left */
	IP6EXT_TOO_MANY,	/* more than IP6EXT_MAX headers */
};

/*
 * The IPv6 header at ip6 (its payload ends end bytes after ip6, checked
 * by the caller against what is there): the upper-layer protocol into
 * *next and its offset from ip6 into *off.
 */
int	ip6ext_walk(const uint8_t *ip6, uint32_t end, uint8_t *next,
	    uint32_t *off);

#endif
