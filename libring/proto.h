/*
 * proto.h: on-the-wire layouts of the protocol headers snb looks at.
 *
 * Conventions, for every struct below:
 *  - All multi-byte fields are in network byte order, exactly as on the
 *    wire; convert with ntohs()/ntohl() (or be16toh()/be32toh()).
 *  - Every struct is packed, so its alignment is 1.  Packets sit in
 *    buffers at arbitrary offsets (an IPv4 header after a 14-byte
 *    Ethernet header is only 2-byte aligned), and a packed struct lets a
 *    `const struct ipv4_hdr *ip = (const void *)(frame + 14)` cast read
 *    fields without alignment faults or undefined behaviour.  The price:
 *    never take the address of a multi-byte member (gcc warns with
 *    -Waddress-of-packed-member); copy it out or use memcpy instead.
 *  - Names avoid the system headers' ones (struct ip6_frag, struct
 *    icmp6_hdr, IPPROTO_*, ETH_P_*, the arp_op/ip6_nxt macros...), so this
 *    file can be included next to <netinet/...> and <net/ethernet.h>.
 */
#ifndef SNB_PROTO_H
#define SNB_PROTO_H

#include <arpa/inet.h>
#include <assert.h>
#include <stdbool.h>
#include <stdint.h>

#define SNB_PACKED	__attribute__((packed))

/* Ethernet. */
#define SNB_ETH_ALEN		6
#define SNB_ETH_HLEN		14	/* dst, src, type; no FCS */
#define SNB_ETH_ZLEN		60	/* minimum frame without FCS */
#define SNB_ETH_DATA_LEN	1500	/* standard MTU */
#define SNB_ETH_FRAME_LEN	1514	/* SNB_ETH_HLEN + SNB_ETH_DATA_LEN */

/* Ethertypes (host order; compare with ntohs(eth->type)). */
#define SNB_ETH_IPV4		0x0800
#define SNB_ETH_ARP		0x0806
#define SNB_ETH_VLAN		0x8100	/* 802.1Q customer tag */
#define SNB_ETH_IPV6		0x86dd
#define SNB_ETH_QINQ		0x88a8	/* 802.1ad service tag */
#define SNB_ETH_LLDP		0x88cc

/*
 * struct eth_hdr: an Ethernet II header.  `type` is the ethertype, or an
 * 802.3 payload length when below 0x0600.
 */
struct eth_hdr {
	uint8_t		dst[SNB_ETH_ALEN];
	uint8_t		src[SNB_ETH_ALEN];
	uint16_t	type;
} SNB_PACKED;
static_assert(sizeof(struct eth_hdr) == SNB_ETH_HLEN, "eth_hdr size");

/*
 * struct vlan_hdr: the 4 bytes that follow an eth_hdr whose type is
 * SNB_ETH_VLAN or SNB_ETH_QINQ.  That type field is the tag's TPID; this
 * struct holds the rest of the tag and the ethertype it encapsulates.
 * tci: PCP (3 bits), DEI (1 bit), VLAN id (12 bits).
 */
struct vlan_hdr {
	uint16_t	tci;
	uint16_t	type;		/* inner ethertype (or another TPID) */
} SNB_PACKED;
#define SNB_VLAN_HLEN		4
#define SNB_VLAN_VID_MASK	0x0fff	/* host order */
#define SNB_VLAN_PCP_SHIFT	13
static_assert(sizeof(struct vlan_hdr) == SNB_VLAN_HLEN, "vlan_hdr size");

static inline uint16_t
vlan_vid(const struct vlan_hdr *v)
{
	return ntohs(v->tci) & SNB_VLAN_VID_MASK;
}

/* ARP, restricted to the only form that matters: Ethernet/IPv4. */
#define SNB_ARP_HTYPE_ETHER	1
#define SNB_ARP_REQUEST		1
#define SNB_ARP_REPLY		2
#define SNB_ARP_LEN		28

/*
 * struct arp_hdr: ARP over Ethernet for IPv4 (RFC 826), htype 1,
 * ptype 0x0800, hlen 6, plen 4.  spa/tpa are IPv4 addresses in network
 * order, like ipv4_hdr.src.
 */
struct arp_hdr {
	uint16_t	htype;
	uint16_t	ptype;
	uint8_t		hlen;
	uint8_t		plen;
	uint16_t	op;
	uint8_t		sha[SNB_ETH_ALEN];	/* sender hardware address */
	uint32_t	spa;			/* sender protocol address */
	uint8_t		tha[SNB_ETH_ALEN];	/* target hardware address */
	uint32_t	tpa;			/* target protocol address */
} SNB_PACKED;
static_assert(sizeof(struct arp_hdr) == SNB_ARP_LEN, "arp_hdr size");

/* IP protocol numbers, shared by IPv4 `proto` and IPv6 `next`. */
#define SNB_IPPROTO_HOPOPTS	0	/* IPv6 hop-by-hop options */
#define SNB_IPPROTO_ICMP	1
#define SNB_IPPROTO_IGMP	2
#define SNB_IPPROTO_IPIP	4	/* IPv4 encapsulated (lwAFTR softwire) */
#define SNB_IPPROTO_TCP		6
#define SNB_IPPROTO_UDP		17
#define SNB_IPPROTO_IPV6	41
#define SNB_IPPROTO_ROUTING	43	/* IPv6 routing header */
#define SNB_IPPROTO_FRAGMENT	44	/* IPv6 fragment header */
#define SNB_IPPROTO_GRE		47
#define SNB_IPPROTO_ESP		50
#define SNB_IPPROTO_ICMPV6	58
#define SNB_IPPROTO_NONE	59	/* IPv6 no next header */
#define SNB_IPPROTO_DSTOPTS	60	/* IPv6 destination options */

/* IPv4. */
#define SNB_IPV4_HLEN		20	/* without options */
#define SNB_IPV4_MAX_HLEN	60	/* ihl 15 */
#define SNB_IPV4_VERSION	4
/* Bits of ntohs(ip->frag_off). */
#define SNB_IP_DF		0x4000	/* don't fragment */
#define SNB_IP_MF		0x2000	/* more fragments */
#define SNB_IP_OFFMASK		0x1fff	/* offset in 8-byte units */

/*
 * struct ipv4_hdr: RFC 791 header without options; options, if any, fill
 * ipv4_hlen(ip) - SNB_IPV4_HLEN bytes after it.
 * ver_ihl: version in the high nibble, header length in 32-bit words in
 * the low one.  frag_off: flags (SNB_IP_DF, SNB_IP_MF) and offset.
 */
struct ipv4_hdr {
	uint8_t		ver_ihl;
	uint8_t		tos;
	uint16_t	len;		/* total length, header included */
	uint16_t	id;
	uint16_t	frag_off;
	uint8_t		ttl;
	uint8_t		proto;
	uint16_t	cksum;
	uint32_t	src;
	uint32_t	dst;
} SNB_PACKED;
static_assert(sizeof(struct ipv4_hdr) == SNB_IPV4_HLEN, "ipv4_hdr size");

static inline unsigned
ipv4_version(const struct ipv4_hdr *ip)
{
	return ip->ver_ihl >> 4;
}

/* Header length in bytes, options included. */
static inline unsigned
ipv4_hlen(const struct ipv4_hdr *ip)
{
	return (ip->ver_ihl & 0x0f) * 4;
}

/* True for any fragment, first one included: MF set or offset non-zero. */
static inline bool
ipv4_is_fragment(const struct ipv4_hdr *ip)
{
	return (ntohs(ip->frag_off) & (SNB_IP_MF | SNB_IP_OFFMASK)) != 0;
}

/* IPv4 option types (the whole type byte: copied, class, number). */
#define SNB_IPOPT_EOL		0
#define SNB_IPOPT_NOP		1
#define SNB_IPOPT_RR		7	/* record route */
#define SNB_IPOPT_TS		68	/* timestamp */
#define SNB_IPOPT_RA		148	/* router alert (RFC 2113) */

/* IPv6. */
#define SNB_IPV6_HLEN		40
#define SNB_IPV6_VERSION	6
#define SNB_IPV6_MIN_MTU	1280

/*
 * struct ipv6_hdr: RFC 8200 fixed header.  ver_tc_flow: version (4 bits),
 * traffic class (8), flow label (20).  plen counts everything after this
 * header, extension headers included.
 */
struct ipv6_hdr {
	uint32_t	ver_tc_flow;
	uint16_t	plen;
	uint8_t		next;		/* next header: SNB_IPPROTO_* */
	uint8_t		hop_limit;
	uint8_t		src[16];
	uint8_t		dst[16];
} SNB_PACKED;
static_assert(sizeof(struct ipv6_hdr) == SNB_IPV6_HLEN, "ipv6_hdr size");

static inline unsigned
ipv6_version(const struct ipv6_hdr *ip6)
{
	return ntohl(ip6->ver_tc_flow) >> 28;
}

static inline unsigned
ipv6_tclass(const struct ipv6_hdr *ip6)
{
	return (ntohl(ip6->ver_tc_flow) >> 20) & 0xff;
}

static inline uint32_t
ipv6_flow(const struct ipv6_hdr *ip6)
{
	return ntohl(ip6->ver_tc_flow) & 0xfffff;
}

/* IPv6 options inside hop-by-hop / destination options headers. */
#define SNB_IP6OPT_PADN		1
#define SNB_IP6OPT_RTALERT	5

/*
 * struct ipv6_frag_hdr: RFC 8200 fragment header.  off_m: offset in
 * 8-byte units in the top 13 bits, then 2 reserved bits, then the M
 * (more fragments) flag: SNB_IP6F_OFFMASK and SNB_IP6F_MORE below.
 */
struct ipv6_frag_hdr {
	uint8_t		next;
	uint8_t		reserved;
	uint16_t	off_m;
	uint32_t	id;
} SNB_PACKED;
#define SNB_IPV6_FRAG_HLEN	8
#define SNB_IP6F_OFFMASK	0xfff8	/* host order; already bytes */
#define SNB_IP6F_MORE		0x0001
static_assert(sizeof(struct ipv6_frag_hdr) == SNB_IPV6_FRAG_HLEN,
    "ipv6_frag_hdr size");

/* TCP. */
#define SNB_TCP_HLEN		20	/* without options */
#define SNB_TCP_FIN		0x01
#define SNB_TCP_SYN		0x02
#define SNB_TCP_RST		0x04
#define SNB_TCP_PSH		0x08
#define SNB_TCP_ACK		0x10
#define SNB_TCP_URG		0x20
#define SNB_TCP_ECE		0x40
#define SNB_TCP_CWR		0x80
#define SNB_TCPOPT_NOP		1
#define SNB_TCPOPT_MSS		2

/*
 * struct tcp_hdr: RFC 9293 header without options.  off: data offset in
 * 32-bit words in the high nibble (low nibble reserved, includes the old
 * NS bit).  flags: SNB_TCP_* bits.
 */
struct tcp_hdr {
	uint16_t	sport;
	uint16_t	dport;
	uint32_t	seq;
	uint32_t	ack;
	uint8_t		off;
	uint8_t		flags;
	uint16_t	win;
	uint16_t	cksum;
	uint16_t	urp;
} SNB_PACKED;
static_assert(sizeof(struct tcp_hdr) == SNB_TCP_HLEN, "tcp_hdr size");

/* UDP. */
#define SNB_UDP_HLEN		8

/* struct udp_hdr: RFC 768.  len covers header and data. */
struct udp_hdr {
	uint16_t	sport;
	uint16_t	dport;
	uint16_t	len;
	uint16_t	cksum;		/* 0: none (IPv4 only) */
} SNB_PACKED;
static_assert(sizeof(struct udp_hdr) == SNB_UDP_HLEN, "udp_hdr size");

/* ICMPv4 types and codes (RFC 792, RFC 1191). */
#define SNB_ICMP_HLEN			8
#define SNB_ICMP_ECHO_REPLY		0
#define SNB_ICMP_DEST_UNREACH		3
#define SNB_ICMP_ECHO_REQUEST		8
#define SNB_ICMP_TIME_EXCEEDED		11
#define SNB_ICMP_PARAM_PROBLEM		12
#define SNB_ICMP_UNREACH_HOST		1
#define SNB_ICMP_UNREACH_PORT		3
#define SNB_ICMP_UNREACH_NEEDFRAG	4	/* `mtu` holds the next-hop MTU */
#define SNB_ICMP_UNREACH_ADMIN		13	/* administratively prohibited */
#define SNB_ICMP_TIMXCEED_TTL		0

/*
 * struct icmpv4_hdr: the 8-byte ICMP header.  The second word depends on
 * the type: echo id/seq, the next-hop MTU of "fragmentation needed", or
 * unused (zero) for most errors, which are followed by the offending IPv4
 * header and at least 8 bytes of its payload.
 */
struct icmpv4_hdr {
	uint8_t		type;
	uint8_t		code;
	uint16_t	cksum;
	union {
		uint32_t	rest;
		struct {
			uint16_t	id;
			uint16_t	seq;
		} SNB_PACKED echo;
		struct {
			uint16_t	unused;
			uint16_t	mtu;
		} SNB_PACKED frag;
	} SNB_PACKED;
} SNB_PACKED;
static_assert(sizeof(struct icmpv4_hdr) == SNB_ICMP_HLEN, "icmpv4_hdr size");

/* ICMPv6 types and codes (RFC 4443, RFC 4861). */
#define SNB_ICMP6_HLEN			8
#define SNB_ICMP6_DEST_UNREACH		1
#define SNB_ICMP6_PACKET_TOO_BIG	2	/* `mtu` holds the link MTU */
#define SNB_ICMP6_TIME_EXCEEDED		3
#define SNB_ICMP6_PARAM_PROBLEM		4
#define SNB_ICMP6_ECHO_REQUEST		128
#define SNB_ICMP6_ECHO_REPLY		129
#define SNB_ICMP6_ROUTER_SOLICIT	133
#define SNB_ICMP6_NEIGHBOR_SOLICIT	135
#define SNB_ICMP6_NEIGHBOR_ADVERT	136
#define SNB_ICMP6_REDIRECT		137
#define SNB_ICMP6_UNREACH_NOROUTE	0
#define SNB_ICMP6_UNREACH_ADMIN		1
#define SNB_ICMP6_UNREACH_ADDR		3
#define SNB_ICMP6_UNREACH_PORT		4
#define SNB_ICMP6_UNREACH_POLICY	5	/* source failed ingress policy */
#define SNB_ICMP6_TIMXCEED_HOPS		0
/* Neighbour discovery option types. */
#define SNB_ND_OPT_SOURCE_LLADDR	1
#define SNB_ND_OPT_TARGET_LLADDR	2

/*
 * struct icmpv6_hdr: the 8-byte ICMPv6 header.  The second word is echo
 * id/seq, the MTU of "packet too big", the pointer of "parameter
 * problem", or reserved (zero; for neighbour solicitation/advertisement
 * it holds the R/S/O flags and is followed by the 16-byte target).
 */
struct icmpv6_hdr {
	uint8_t		type;
	uint8_t		code;
	uint16_t	cksum;
	union {
		uint32_t	rest;
		uint32_t	mtu;
		uint32_t	pointer;
		struct {
			uint16_t	id;
			uint16_t	seq;
		} SNB_PACKED echo;
	} SNB_PACKED;
} SNB_PACKED;
static_assert(sizeof(struct icmpv6_hdr) == SNB_ICMP6_HLEN, "icmpv6_hdr size");

#endif /* SNB_PROTO_H */
