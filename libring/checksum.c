/*
 * checksum.c: the Internet checksum.  See checksum.h for the byte-order
 * conventions.
 */
#include <string.h>

#include "checksum.h"
#include "proto.h"

/*
 * Add v to acc with end-around carry, i.e. one's-complement addition on
 * 64 bits.  2^64 - 1 is a multiple of 2^16 - 1, so the 64-bit sum folds
 * to the same 16-bit one's-complement sum as adding 16-bit words would.
 */
static inline uint64_t
add64(uint64_t acc, uint64_t v)
{
	acc += v;
	return acc + (acc < v);
}

uint32_t
cksum_add(uint32_t sum, const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t acc = sum, a, b, c, d, tail;

	/* Four independent loads per round let the CPU overlap them. */
	while (len >= 32) {
		memcpy(&a, p, 8);
		memcpy(&b, p + 8, 8);
		memcpy(&c, p + 16, 8);
		memcpy(&d, p + 24, 8);
		acc = add64(acc, a);
		acc = add64(acc, b);
		acc = add64(acc, c);
		acc = add64(acc, d);
		p += 32;
		len -= 32;
	}
	while (len >= 8) {
		memcpy(&a, p, 8);
		acc = add64(acc, a);
		p += 8;
		len -= 8;
	}
	if (len > 0) {
		/*
		 * The tail starts at an even offset, so zero-filling it to 8
		 * bytes pads an odd final byte exactly as RFC 1071 asks:
		 * with a zero byte after it, in memory order.
		 */
		tail = 0;
		memcpy(&tail, p, len);
		acc = add64(acc, tail);
	}
	/* 64 -> 32 bits; two rounds absorb the carry of the first. */
	acc = (acc & 0xffffffff) + (acc >> 32);
	acc = (acc & 0xffffffff) + (acc >> 32);
	return (uint32_t)acc;
}

/*
 * Sum len bytes at p as if the 16-bit field at offset off were zero, so
 * callers get a storable checksum without first clearing the field.  off
 * is even, keeping the piecewise sum aligned to 16-bit words.
 */
static uint32_t
sum_skipping(uint32_t sum, const unsigned char *p, size_t len, size_t off)
{
	if (len < off + 2)
		return cksum_add(sum, p, len);
	sum = cksum_add(sum, p, off);
	return cksum_add(sum, p + off + 2, len - off - 2);
}

static uint16_t
l4_finish(uint32_t sum, const void *l4, size_t l4len, uint8_t proto)
{
	/* Where the segment's own checksum field is (0: none to skip). */
	size_t off = proto == SNB_IPPROTO_TCP ? 16 : proto == SNB_IPPROTO_UDP ?
	    6 : proto == SNB_IPPROTO_ICMP || proto == SNB_IPPROTO_ICMPV6 ? 2 : 0;
	uint16_t ck = cksum_fold(off ? sum_skipping(sum, l4, l4len, off) :
	    cksum_add(sum, l4, l4len));

	/* RFC 768: a computed 0 goes on the wire as all ones. */
	return proto == SNB_IPPROTO_UDP && ck == 0 ? 0xffff : ck;
}

uint16_t
ipv4_header_cksum(const void *iphdr)
{
	size_t hlen = ipv4_hlen(iphdr);

	/* A bogus ihl < 5 must not make us skip past what we read. */
	if (hlen < SNB_IPV4_HLEN)
		hlen = SNB_IPV4_HLEN;
	return cksum_fold(sum_skipping(0, iphdr, hlen,
	    offsetof(struct ipv4_hdr, cksum)));
}

uint16_t
ipv4_l4_cksum(const void *iphdr, const void *l4, size_t l4len, uint8_t proto)
{
	const unsigned char *ip = iphdr;
	uint16_t ph[2] = { htons(proto), htons((uint16_t)l4len) };
	uint32_t sum = 0;

	if (proto != SNB_IPPROTO_ICMP) {
		/* src and dst are adjacent: one 8-byte run. */
		sum = cksum_add(sum, ip + offsetof(struct ipv4_hdr, src), 8);
		sum = cksum_add(sum, ph, sizeof(ph));
	}
	return l4_finish(sum, l4, l4len, proto);
}

uint16_t
ipv6_l4_cksum(const void *ip6hdr, const void *l4, size_t l4len, uint8_t proto)
{
	const unsigned char *ip6 = ip6hdr;
	uint32_t ph[2] = { htonl((uint32_t)l4len), htonl(proto) };
	uint32_t sum;

	/* src and dst are adjacent: one 32-byte run. */
	sum = cksum_add(0, ip6 + offsetof(struct ipv6_hdr, src), 32);
	sum = cksum_add(sum, ph, sizeof(ph));
	return l4_finish(sum, l4, l4len, proto);
}
