/*
 * tunnel.c: the pseudowire encapsulations (tunnel.h).
 */
#include <string.h>

#include "checksum.h"
#include "ip6ext.h"
#include "tunnel.h"

void
tun_tx_init(struct tun_tx *t, const struct pw_conf *c, const struct pw *pw)
{
	struct eth_hdr *e = (void *)t->hdr;
	struct ipv6_hdr *ip = (void *)(t->hdr + SNB_ETH_HLEN);
	uint8_t *h = t->hdr + TUN_OUTER_HLEN;
	uint16_t gw[2];	/* GRE flags, protocol */
	uint32_t w;

	memset(t, 0, sizeof(*t));
	e->type = htons(SNB_ETH_IPV6);
	ip->ver_tc_flow = htonl(SNB_IPV6_VERSION << 28);
	ip->hop_limit = (uint8_t)c->hop_limit;
	memcpy(ip->src, c->local, 16);
	memcpy(ip->dst, pw->remote, 16);
	if (pw->type == PW_L2TP) {
		ip->next = SNB_IPPROTO_L2TP;
		w = htonl(pw->remote_session);
		memcpy(h, &w, 4);
		memcpy(h + 4, pw->local_cookie, 8);
		t->hlen = TUN_OUTER_HLEN + L2TP_HLEN;
		return;
	}
	ip->next = SNB_IPPROTO_GRE;
	gw[0] = htons(pw->has_key ? GRE_F_KEY : 0);
	gw[1] = htons(GRE_PROTO_TEB);
	memcpy(h, gw, 4);
	t->hlen = TUN_OUTER_HLEN + GRE_HLEN;
	if (pw->has_key) {
		w = htonl(pw->key);
		memcpy(h + 4, &w, 4);
		t->hlen += 4;
	}
}

/* The GRE header at p (n bytes to the end of the IPv6 payload). */
static int
gre(const uint8_t *p, uint32_t n, struct tun_rx *rx)
{
	uint16_t flags, proto;
	uint32_t hl = GRE_HLEN, w;

	if (n < GRE_HLEN)
		return TUN_RX_MALFORMED;
	flags = (uint16_t)(p[0] << 8 | p[1]);
	proto = (uint16_t)(p[2] << 8 | p[3]);
	if (flags & GRE_F_BAD)
		return TUN_RX_MALFORMED;
	hl += (flags & GRE_F_CSUM) ? 4 : 0;
	if (flags & GRE_F_KEY) {
		if (n < hl + 4)
			return TUN_RX_MALFORMED;
		memcpy(&w, p + hl, 4);
		rx->has_key = 1;
		rx->key = ntohl(w);
		hl += 4;
	}
	hl += (flags & GRE_F_SEQ) ? 4 : 0;
	if (n < hl + SNB_ETH_HLEN)
		return TUN_RX_MALFORMED;
	if (proto != GRE_PROTO_TEB)
		return TUN_RX_GRE_PROTO;
	/* The checksum covers the GRE header and payload (RFC 2784 2.5). */
	if ((flags & GRE_F_CSUM) && cksum_fold(cksum_add(0, p, n)) != 0)
		return TUN_RX_GRE_CSUM;
	rx->off = hl;
	rx->len = n - hl;
	return TUN_RX_OK;
}

int
tun_rx(const uint8_t *f, uint32_t len, const uint8_t local[16],
    uint8_t proto, struct tun_rx *rx)
{
	const struct ipv6_hdr *ip = (const void *)(f + SNB_ETH_HLEN);
	uint32_t off, end, w;
	uint8_t next;
	int r;

	rx->has_key = 0;
	if (len < TUN_OUTER_HLEN || f[12] != 0x86 || f[13] != 0xdd)
		return TUN_RX_NOT_IPV6;
	if (ipv6_version(ip) != SNB_IPV6_VERSION)
		return TUN_RX_MALFORMED;
	end = TUN_OUTER_HLEN + ntohs(ip->plen);
	if (end > len)
		return TUN_RX_MALFORMED;	/* the length lies */
	if (memcmp(ip->dst, local, 16) != 0)
		return TUN_RX_NOT_LOCAL;
	/* Extension headers first (ip6ext.h). */
	switch (ip6ext_walk(f + SNB_ETH_HLEN, end - SNB_ETH_HLEN, &next, &off)) {
	case IP6EXT_OK:
		break;
	case IP6EXT_FRAGMENT:
		return TUN_RX_FRAGMENT;
	case IP6EXT_NOT_FINAL:
		return TUN_RX_NOT_LOCAL;
	case IP6EXT_TOO_MANY:
		return TUN_RX_OTHER_PROTO;
	default:
		return TUN_RX_MALFORMED;
	}
	off += SNB_ETH_HLEN;
	if (next != proto)
		return TUN_RX_OTHER_PROTO;
	rx->src = ip->src;
	if (proto == SNB_IPPROTO_GRE) {
		if ((r = gre(f + off, end - off, rx)) != TUN_RX_OK)
			return r;
		rx->off += off;
		return TUN_RX_OK;
	}
	if (end - off < L2TP_HLEN + SNB_ETH_HLEN)
		return TUN_RX_MALFORMED;
	memcpy(&w, f + off, 4);
	rx->session = ntohl(w);
	rx->cookie = f + off + 4;
	rx->off = off + L2TP_HLEN;
	rx->len = end - rx->off;
	return TUN_RX_OK;
}
