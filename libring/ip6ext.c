/*
 * ip6ext.c: the IPv6 extension header walk (ip6ext.h).
 */
#include "ip6ext.h"
#include "proto.h"

int
ip6ext_walk(const uint8_t *ip6, uint32_t end, uint8_t *next, uint32_t *off)
{
	uint32_t o = SNB_IPV6_HLEN, hl;
	uint8_t nh = ip6[6];
	int i;

	for (i = 0; nh == SNB_IPPROTO_HOPOPTS || nh == SNB_IPPROTO_DSTOPTS ||
	    nh == SNB_IPPROTO_ROUTING || nh == SNB_IPPROTO_FRAGMENT; i++) {
		if (i == IP6EXT_MAX)
			return IP6EXT_TOO_MANY;
		if (end < o + 8)
			return IP6EXT_MALFORMED;
		if (nh == SNB_IPPROTO_HOPOPTS && i != 0)
			return IP6EXT_MALFORMED;
		if (nh == SNB_IPPROTO_FRAGMENT) {
			/* offset (13 bits), 2 reserved, M */
			if (((ip6[o + 2] << 8 | ip6[o + 3]) & 0xfff9) != 0)
				return IP6EXT_FRAGMENT;
			hl = 8;
		} else {
			if (nh == SNB_IPPROTO_ROUTING && ip6[o + 3] != 0)
				return IP6EXT_NOT_FINAL;
			hl = (ip6[o + 1] + 1u) * 8;
			if (end < o + hl)
				return IP6EXT_MALFORMED;
		}
		nh = ip6[o];
		o += hl;
	}
	*next = nh;
	*off = o;
	return IP6EXT_OK;
}
