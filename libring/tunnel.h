/*
 * tunnel.h: Ethernet pseudowires over IPv6, the two encapsulations of
 * snb-l2tp and snb-gre: what goes in front of a customer frame, and how
 * a frame from the core is checked and taken apart.
 *
 *	Ethernet | IPv6 (next header 115) | session 4 | cookie 8 | frame
 *		L2TPv3 over IP (RFC 3931 4.1.1.2) as the keyed IPv6 tunnel
 *		of draft-mkonstan-keyed-ipv6-tunnel: a 64-bit cookie, no
 *		L2-specific sublayer
 *	Ethernet | IPv6 (next header 47) | GRE 4 [key 4] | frame
 *		GRE (RFC 2784) of protocol 0x6558, transparent Ethernet
 *		bridging, with an optional key (RFC 2890)
 *
 * The outer Ethernet header is a placeholder (both addresses zero,
 * type IPv6): snb-nd fills in the addresses on the way to the core.
 * Encapsulation copies a template made once per pseudowire and sets the
 * payload length; decapsulation checks in the order of the counters of
 * snb-l2tp(1) and snb-gre(1) and leaves the lookup of the pseudowire
 * (by session, by remote address and key) to the app.
 */
#ifndef SNB_TUNNEL_H
#define SNB_TUNNEL_H

#include <stdint.h>
#include <string.h>

#include "proto.h"
#include "pwconf.h"

#define SNB_IPPROTO_L2TP	115

#define TUN_OUTER_HLEN	(SNB_ETH_HLEN + SNB_IPV6_HLEN)	/* 54 */
#define L2TP_HLEN	12		/* session id, 64-bit cookie */
#define GRE_HLEN	4		/* flags and version, protocol */
#define GRE_KEY_HLEN	8
#define TUN_HLEN_MAX	(TUN_OUTER_HLEN + L2TP_HLEN)

/* GRE's first word (host order). */
#define GRE_F_CSUM	0x8000		/* C: checksum and reserved1 follow */
#define GRE_F_KEY	0x2000		/* K: a key follows (RFC 2890) */
#define GRE_F_SEQ	0x1000		/* S: a sequence number follows */
/* Bits 1, 4 and 5 (RFC 2784 2.3: discard) and the version (must be 0). */
#define GRE_F_BAD	0x4c07
#define GRE_PROTO_TEB	0x6558		/* transparent Ethernet bridging */

/* The headers put in front of a pseudowire's frames. */
struct tun_tx {
	uint8_t		hdr[TUN_HLEN_MAX];
	uint32_t	hlen;
};

/* Make pw's template from c (local address, hop limit). */
void	tun_tx_init(struct tun_tx *t, const struct pw_conf *c,
	    const struct pw *pw);

/*
 * Frame f of len bytes behind t's headers at out (room for t->hlen +
 * len bytes); returns the length of the whole.
 */
static inline uint32_t
tun_encap(uint8_t *out, const struct tun_tx *t, const uint8_t *f,
    uint32_t len)
{
	uint16_t plen = htons((uint16_t)(t->hlen - TUN_OUTER_HLEN + len));

	memcpy(out, t->hdr, t->hlen);
	memcpy(out + SNB_ETH_HLEN + 4, &plen, 2);
	memcpy(out + t->hlen, f, len);
	return t->hlen + len;
}

/* The outer IPv6 packet's length of a frame of len bytes behind t. */
static inline uint32_t
tun_ipv6_len(const struct tun_tx *t, uint32_t len)
{
	return t->hlen - SNB_ETH_HLEN + len;
}

/* What tun_rx() makes of a frame from the core. */
enum {
	TUN_RX_OK = 0,
	TUN_RX_NOT_IPV6,	/* not an IPv6 frame */
	TUN_RX_NOT_LOCAL,	/* to another address than local-address, or
				   a routing header with segments left */
	TUN_RX_FRAGMENT,	/* an IPv6 fragment (not reassembled; an
				   atomic one is the whole packet) */
	TUN_RX_OTHER_PROTO,	/* another upper-layer protocol, or more
				   than IP6EXT_MAX extension headers */
	TUN_RX_MALFORMED,	/* short, a length that lies, bad GRE flags,
				   a hop-by-hop header after another */
	TUN_RX_GRE_PROTO,	/* GRE of another protocol than 0x6558 */
	TUN_RX_GRE_CSUM,	/* GRE with a wrong checksum */
	TUN_RX_NVERDICTS
};

struct tun_rx {
	const uint8_t	*src;		/* outer source address */
	uint32_t	 session;	/* L2TP (host order) */
	const uint8_t	*cookie;	/* L2TP: 8 bytes */
	int		 has_key;	/* GRE */
	uint32_t	 key;		/* GRE (host order) */
	uint32_t	 off, len;	/* the customer frame in f */
};

/*
 * Look at the frame f of len bytes from the core as proto's
 * (SNB_IPPROTO_L2TP or SNB_IPPROTO_GRE) to local; TUN_RX_OK with rx
 * filled, or why not.
 */
int	tun_rx(const uint8_t *f, uint32_t len, const uint8_t local[16],
	    uint8_t proto, struct tun_rx *rx);

#endif
