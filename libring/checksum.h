/*
 * checksum.h: the Internet checksum (RFC 1071) and its incremental
 * update (RFC 1624).
 *
 * Byte order, once for all functions here: the one's-complement sum is
 * byte-order independent (RFC 1071 section 2(B)), so data is summed as
 * native 16-bit words loaded straight from memory, never swapped.  Every
 * 16-bit checksum or field value passed in or returned is therefore in
 * "memory order": what memcpy() reads from, or must write to, the packet.
 * For header fields that is simply network byte order; a host-order
 * number must go through htons() first.
 */
#ifndef SNB_CHECKSUM_H
#define SNB_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

/*
 * Add len bytes at data to the partial sum `sum` (start with 0) and return
 * the new partial sum, not yet folded to 16 bits.  data needs no
 * particular alignment.  An odd length is padded with one zero byte, so
 * when summing a packet piecewise every piece but the last must have an
 * even length.
 */
uint32_t	cksum_add(uint32_t sum, const void *data, size_t len);

/*
 * Fold a partial sum to 16 bits and complement it: the checksum, in
 * memory order, ready to memcpy() into the packet.  Over data that already
 * contains a correct checksum the result is 0.
 */
static inline uint16_t
cksum_fold(uint32_t sum)
{
	/* Inline: cksum_update16() folds with it for every packet. */
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/*
 * Checksum of the IPv4 header at iphdr, ipv4_hlen() bytes long (options
 * included).  The checksum field is treated as zero whatever it holds, so
 * the result can be stored as is, or compared with the stored value to
 * validate the header.  Memory order.
 */
uint16_t	ipv4_header_cksum(const void *iphdr);

/*
 * Checksum of the l4len-byte transport segment at l4 carried in the IPv4
 * packet whose header is at iphdr: the pseudo-header (RFC 9293 3.1,
 * RFC 768) takes src/dst from the header, `proto`, and l4len.  For
 * SNB_IPPROTO_ICMP no pseudo-header is summed, as ICMPv4 has none.
 *
 * For TCP, UDP and ICMP the segment's own checksum field is treated as
 * zero (if l4len covers it); for other protocols the caller must zero it.
 * For UDP a result of 0 is returned as 0xffff, since 0 means "no
 * checksum" on the wire.  Memory order.
 */
uint16_t	ipv4_l4_cksum(const void *iphdr, const void *l4, size_t l4len,
		    uint8_t proto);

/*
 * As ipv4_l4_cksum(), for IPv6 (RFC 8200 8.1): the pseudo-header takes
 * src/dst from the fixed header at ip6hdr (with a routing header, the
 * caller is responsible for dst being the final destination), the 32-bit
 * upper-layer length l4len, and `proto` (the upper-layer protocol, not the
 * first extension header).  ICMPv6 uses the pseudo-header.  The checksum
 * field of TCP, UDP and ICMPv6 is treated as zero; a UDP result of 0 is
 * returned as 0xffff.  Memory order.
 */
uint16_t	ipv6_l4_cksum(const void *ip6hdr, const void *l4, size_t l4len,
		    uint8_t proto);

/*
 * RFC 1624 eqn. 3: the new checksum after a 16-bit field covered by it
 * changes from old_field to new_field.  All three values in memory order
 * (as read with memcpy); so is the result.  The field must sit at an even
 * offset from the start of the checksummed data.  For UDP the caller keeps
 * a 0 checksum (none) as is and maps a 0 result to 0xffff.
 */
static inline uint16_t
cksum_update16(uint16_t old_cksum, uint16_t old_field, uint16_t new_field)
{
	uint32_t sum;

	/* Inline: a router's TTL decrement calls it for every packet. */
	sum = (uint16_t)~old_cksum;
	sum += (uint16_t)~old_field;
	sum += new_field;
	return cksum_fold(sum);
}

#endif /* SNB_CHECKSUM_H */
