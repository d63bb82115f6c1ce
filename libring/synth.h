/*
 * synth.h: the synthetic packets snb-source makes and snb-sink checks.
 * An Ethernet + IPv4 + UDP frame (documentation addresses 198.18.0.1 ->
 * 198.18.0.2, the benchmarking range of RFC 2544) whose UDP payload starts
 * with a 64-bit big-endian sequence number.
 */
#ifndef SNB_SYNTH_H
#define SNB_SYNTH_H

#include <stdint.h>
#include <string.h>

#define SYNTH_SEQ_OFF	42	/* 14 Ethernet + 20 IPv4 + 8 UDP */
#define SYNTH_MIN	60	/* shortest frame without FCS */

/* Sequence number of a synthetic packet, UINT64_MAX when too short. */
static inline uint64_t
synth_seq(const unsigned char *data, uint32_t len)
{
	uint64_t s;

	if (len < SYNTH_SEQ_OFF + 8)
		return UINT64_MAX;
	memcpy(&s, data + SYNTH_SEQ_OFF, 8);
	return __builtin_bswap64(s);
}

static inline void
synth_set_seq(unsigned char *data, uint64_t seq)
{
	seq = __builtin_bswap64(seq);
	memcpy(data + SYNTH_SEQ_OFF, &seq, 8);
}

/* Write a frame of len bytes (SYNTH_MIN..capacity) into buf. */
void	synth_build(unsigned char *buf, uint32_t len);
/* Patch the length fields (and IPv4 checksum) of a built frame to len. */
void	synth_set_len(unsigned char *buf, uint32_t len);

#endif
