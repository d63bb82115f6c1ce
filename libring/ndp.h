/*
 * ndp.h: ARP (RFC 826) and IPv6 neighbour discovery (RFC 4861) messages,
 * for apps that own an address on a link: answer for it and resolve a
 * next hop.  Only parsing and building live here; when to send is the
 * app's business.  Builders write the L3 part (the ARP payload, or the
 * whole IPv6 packet) and return its length; the app adds the Ethernet
 * header with the destination the *_eth_dst helpers give.
 */
#ifndef SNB_NDP_H
#define SNB_NDP_H

#include <stddef.h>
#include <stdint.h>

#define ARP_PKT_LEN	28	/* Ethernet/IPv4 ARP payload */
#define NDP_PKT_LEN	72	/* IPv6 + NS/NA + one link-layer option */

/* NA flags (RFC 4861 4.4), host order, in the first word after cksum. */
#define NDP_NA_ROUTER		0x80000000u
#define NDP_NA_SOLICITED	0x40000000u
#define NDP_NA_OVERRIDE		0x20000000u

/* An ARP message over Ethernet for IPv4; addresses in network order. */
struct arp_msg {
	uint16_t	 op;		/* host order: 1 request, 2 reply */
	uint8_t		 sha[6], tha[6];
	uint32_t	 spa, tpa;
};

/* 0 if the len bytes at p are an Ethernet/IPv4 ARP message, else -1. */
int	arp_parse(const uint8_t *p, size_t len, struct arp_msg *m);
size_t	arp_build(uint8_t *p, uint16_t op, const uint8_t sha[6], uint32_t spa,
	    const uint8_t tha[6], uint32_t tpa);

/* An NS or NA; see ndp_parse(). */
struct ndp_msg {
	int		 type;		/* 135 NS, 136 NA */
	uint32_t	 flags;		/* NA flags (host order) */
	const uint8_t	*src, *dst;	/* IPv6 header addresses */
	const uint8_t	*target;
	const uint8_t	*lladdr;	/* NS: source, NA: target link-layer
					   address option (the first, of
					   Ethernet's length 1); or NULL */
	int		 lladdr_bad;	/* that option with another length */
};

#define NDP_BAD		(-1)	/* not a neighbour message to look at */
#define NDP_OK		0
#define NDP_INVALID	1	/* an NS/NA to count, but not to act on */

/*
 * Look at the IPv6 packet at p (len bytes, without extension headers) as
 * an NS or NA.  NDP_BAD unless it is ICMPv6 type 135 or 136 with hop
 * limit 255, code 0 and a good checksum: the checks every neighbour
 * message must pass before it is even counted as one.  NDP_INVALID (m
 * filled as far as the packet goes) when it fails RFC 4861 7.1.1/7.1.2:
 * ICMP length under 24, multicast target, an option of length 0 or past
 * the end, an NS from the unspecified address to other than a
 * solicited-node group or with a source link-layer option, an NA to a
 * multicast group with S set.  Else NDP_OK and m filled.
 */
int	ndp_parse(const uint8_t *p, size_t len, struct ndp_msg *m);

/* ff02::1:ffXX:XXXX for target (RFC 4291 2.7.1). */
void	ndp_solicited_node(const uint8_t target[16], uint8_t out[16]);
/* 33:33:xx:xx:xx:xx for an IPv6 multicast address (RFC 2464 7). */
void	ndp_multicast_mac(const uint8_t group[16], uint8_t mac[6]);

/*
 * A neighbour solicitation from src/mac for target, with a source
 * link-layer option, to target's solicited-node group (address
 * resolution, RFC 4861 7.2.2; the Ethernet destination is that group's
 * ndp_multicast_mac()).
 */
size_t	ndp_build_ns(uint8_t *p, const uint8_t src[16], const uint8_t mac[6],
	    const uint8_t target[16]);
/* A neighbour advertisement for target (= src) with a target option. */
size_t	ndp_build_na(uint8_t *p, const uint8_t src[16], const uint8_t dst[16],
	    const uint8_t mac[6], uint32_t flags);

#endif
