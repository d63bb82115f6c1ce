/*
 * reasm.h: IPv4 (RFC 791 section 3.2) and IPv6 (RFC 8200 section 4.5)
 * fragment reassembly with hard limits, for apps that must see whole
 * datagrams (the lwAFTR looks up ports, which only a first fragment has).
 *
 * A reassembler holds at most max_packets datagrams in progress, each of
 * at most max_frags fragments; a datagram that breaks a rule (overlap,
 * too many fragments, inconsistent length, over 64 KiB) is dropped whole.
 * When the table is full, a random datagram in progress is evicted: an
 * attacker who fills the table cannot pin it, and costs every victim the
 * same.  Datagrams older than the timeout are discarded when met again or
 * when their slot is wanted.
 *
 * Memory: entries are allocated once by reasm_new(); a datagram's buffer
 * grows with it (on the fragment path only) and is kept for reuse, within
 * max_bytes in total.  Nothing is allocated on the per-packet path of
 * unfragmented traffic, which never calls in here.
 */
#ifndef SNB_REASM_H
#define SNB_REASM_H

#include <stddef.h>
#include <stdint.h>

/* Bytes a caller may write in front of a reassembled datagram (L2). */
#define REASM_HEADROOM	64

enum reasm_result {
	REASM_INVALID = -1,	/* fragment (and its datagram) dropped */
	REASM_HELD = 0,		/* kept, datagram not complete yet */
	REASM_DONE = 1		/* *out holds the whole datagram */
};

struct reasm;

/*
 * family: 4 or 6.  timeout_ns: how long a datagram may stay incomplete.
 * max_bytes: cap on buffer memory (0: 64 MiB).  NULL on bad arguments or
 * out of memory.
 */
struct reasm	*reasm_new(int family, unsigned max_packets, unsigned max_frags,
		    uint64_t timeout_ns, size_t max_bytes);
void		 reasm_free(struct reasm *r);

/* True if the IPv4 packet at l3 (len bytes, at least 20) is a fragment. */
int		 reasm_is_fragment4(const uint8_t *l3, size_t len);
/*
 * Offset of the IPv6 fragment header in the packet at l3, after any
 * hop-by-hop, destination options and routing headers; 0 if there is
 * none (or the chain is malformed: not our business here).
 */
size_t		 reasm_frag6_offset(const uint8_t *l3, size_t len);

/*
 * Add one fragment (the whole IP packet at l3).  On REASM_DONE, *out and
 * *outlen give the reassembled IP datagram: a fresh header (IPv4: the
 * first fragment's, offset and MF cleared, length and checksum set; IPv6:
 * the first fragment's unfragmentable part, fragment header removed,
 * payload length set), with REASM_HEADROOM writable bytes before *out.
 * It stays valid until the next call.  now_ns: any monotonic clock.
 */
enum reasm_result reasm_add(struct reasm *r, const uint8_t *l3, size_t len,
		    uint64_t now_ns, uint8_t **out, size_t *outlen);

/* Datagrams evicted to make room, and dropped for age, since creation. */
uint64_t	 reasm_evicted(const struct reasm *r);
uint64_t	 reasm_expired(const struct reasm *r);
/* Buffer bytes allocated now. */
size_t		 reasm_memuse(const struct reasm *r);

#endif
