/*
 * ndp.c: ARP and neighbour discovery messages.  See ndp.h.
 */
#include <arpa/inet.h>
#include <string.h>

#include "checksum.h"
#include "ndp.h"
#include "proto.h"

int
arp_parse(const uint8_t *p, size_t len, struct arp_msg *m)
{
	struct arp_hdr a;

	if (len < SNB_ARP_LEN)
		return -1;
	memcpy(&a, p, sizeof(a));
	if (ntohs(a.htype) != SNB_ARP_HTYPE_ETHER ||
	    ntohs(a.ptype) != SNB_ETH_IPV4 || a.hlen != 6 || a.plen != 4)
		return -1;
	m->op = ntohs(a.op);
	memcpy(m->sha, a.sha, 6);
	memcpy(m->tha, a.tha, 6);
	m->spa = a.spa;
	m->tpa = a.tpa;
	return 0;
}

size_t
arp_build(uint8_t *p, uint16_t op, const uint8_t sha[6], uint32_t spa,
    const uint8_t tha[6], uint32_t tpa)
{
	struct arp_hdr a = { .htype = htons(SNB_ARP_HTYPE_ETHER),
	    .ptype = htons(SNB_ETH_IPV4), .hlen = 6, .plen = 4,
	    .op = htons(op), .spa = spa, .tpa = tpa };

	memcpy(a.sha, sha, 6);
	memcpy(a.tha, tha, 6);
	memcpy(p, &a, sizeof(a));
	return SNB_ARP_LEN;
}

/* ff02::1:ffXX:XXXX, a solicited-node group (RFC 4291 2.7.1) */
static const uint8_t solicited_prefix[13] = { 0xff, 0x02, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0x01, 0xff };

int
ndp_parse(const uint8_t *p, size_t len, struct ndp_msg *m)
{
	static const uint8_t unspecified[16];
	const uint8_t *icmp, *opt;
	size_t plen, olen, n;
	uint32_t w;
	uint16_t c;
	uint8_t want;

	memset(m, 0, sizeof(*m));
	if (len < SNB_IPV6_HLEN + 4 || p[6] != SNB_IPPROTO_ICMPV6 ||
	    p[7] != 255)
		return NDP_BAD;
	plen = ((size_t)p[4] << 8) | p[5];
	icmp = p + SNB_IPV6_HLEN;
	if (plen < 4 || SNB_IPV6_HLEN + plen > len ||
	    (icmp[0] != SNB_ICMP6_NEIGHBOR_SOLICIT &&
	    icmp[0] != SNB_ICMP6_NEIGHBOR_ADVERT) || icmp[1] != 0)
		return NDP_BAD;
	memcpy(&c, icmp + 2, 2);
	w = ipv6_l4_cksum(p, icmp, plen, SNB_IPPROTO_ICMPV6);
	/* 0xffff is 0 too in one's complement (RFC 1071): a sender may
	 * write either, and the kernel takes both. */
	if (w != c && !(w == 0 && c == 0xffff))
		return NDP_BAD;
	m->type = icmp[0];
	m->src = p + 8;
	m->dst = p + 24;
	if (plen < 24)
		return NDP_INVALID;
	m->target = icmp + 8;
	memcpy(&w, icmp + 4, 4);
	m->flags = ntohl(w);
	if (m->target[0] == 0xff)
		return NDP_INVALID;
	if (m->type == SNB_ICMP6_NEIGHBOR_ADVERT && m->dst[0] == 0xff &&
	    (m->flags & NDP_NA_SOLICITED))
		return NDP_INVALID;
	want = m->type == SNB_ICMP6_NEIGHBOR_SOLICIT ?
	    SNB_ND_OPT_SOURCE_LLADDR : SNB_ND_OPT_TARGET_LLADDR;
	for (opt = icmp + 24, olen = plen - 24; olen > 0; ) {
		if (olen < 2 || opt[1] == 0 || (n = opt[1] * 8u) > olen)
			return NDP_INVALID;
		if (opt[0] == want && m->lladdr == NULL && !m->lladdr_bad) {
			if (n == 8)
				m->lladdr = opt + 2;
			else
				m->lladdr_bad = 1;
		}
		opt += n;
		olen -= n;
	}
	if (m->type == SNB_ICMP6_NEIGHBOR_SOLICIT &&
	    memcmp(m->src, unspecified, 16) == 0 &&
	    (memcmp(m->dst, solicited_prefix, 13) != 0 || m->lladdr ||
	    m->lladdr_bad))
		return NDP_INVALID;
	return NDP_OK;
}

void
ndp_solicited_node(const uint8_t target[16], uint8_t out[16])
{
	memcpy(out, solicited_prefix, 13);
	memcpy(out + 13, target + 13, 3);
}

void
ndp_multicast_mac(const uint8_t group[16], uint8_t mac[6])
{
	mac[0] = 0x33;
	mac[1] = 0x33;
	memcpy(mac + 2, group + 12, 4);
}

/* IPv6 header, ICMPv6 type/flags/target and one link-layer option. */
static size_t
build(uint8_t *p, const uint8_t src[16], const uint8_t dst[16], uint8_t type,
    uint32_t flags, const uint8_t target[16], uint8_t opt,
    const uint8_t mac[6])
{
	uint8_t *icmp = p + SNB_IPV6_HLEN;
	uint32_t w = htonl(6u << 28);
	uint16_t c;

	memcpy(p, &w, 4);
	p[4] = 0;
	p[5] = 32;
	p[6] = SNB_IPPROTO_ICMPV6;
	p[7] = 255;			/* RFC 4861: proves on-link */
	memcpy(p + 8, src, 16);
	memcpy(p + 24, dst, 16);
	icmp[0] = type;
	icmp[1] = icmp[2] = icmp[3] = 0;
	w = htonl(flags);
	memcpy(icmp + 4, &w, 4);
	memcpy(icmp + 8, target, 16);
	icmp[24] = opt;
	icmp[25] = 1;
	memcpy(icmp + 26, mac, 6);
	c = ipv6_l4_cksum(p, icmp, 32, SNB_IPPROTO_ICMPV6);
	memcpy(icmp + 2, &c, 2);
	return NDP_PKT_LEN;
}

size_t
ndp_build_ns(uint8_t *p, const uint8_t src[16], const uint8_t mac[6],
    const uint8_t target[16])
{
	uint8_t dst[16];

	ndp_solicited_node(target, dst);
	return build(p, src, dst, SNB_ICMP6_NEIGHBOR_SOLICIT, 0, target,
	    SNB_ND_OPT_SOURCE_LLADDR, mac);
}

size_t
ndp_build_na(uint8_t *p, const uint8_t src[16], const uint8_t dst[16],
    const uint8_t mac[6], uint32_t flags)
{
	return build(p, src, dst, SNB_ICMP6_NEIGHBOR_ADVERT, flags, src,
	    SNB_ND_OPT_TARGET_LLADDR, mac);
}
