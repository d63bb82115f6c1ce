/* synth.c: build the frames of synth.h. */
#include <string.h>

#include "checksum.h"
#include "synth.h"

void
synth_set_len(unsigned char *b, uint32_t len)
{
	uint32_t ip_len = len - 14, udp_len = len - 34;
	uint16_t ck;

	b[16] = (unsigned char)(ip_len >> 8);
	b[17] = (unsigned char)ip_len;
	b[38] = (unsigned char)(udp_len >> 8);
	b[39] = (unsigned char)udp_len;
	ck = ipv4_header_cksum(b + 14);
	memcpy(b + 24, &ck, 2);
}

void
synth_build(unsigned char *b, uint32_t len)
{
	static const unsigned char hdr[42] = {
		0x02, 0, 0, 0, 0, 0x02,		/* dst: locally administered */
		0x02, 0, 0, 0, 0, 0x01,		/* src */
		0x08, 0x00,			/* IPv4 */
		0x45, 0, 0, 0, 0, 0, 0x40, 0,	/* v4, len, id, DF */
		64, 17, 0, 0,			/* ttl, UDP, checksum */
		198, 18, 0, 1, 198, 18, 0, 2,
		0x04, 0xd2, 0x16, 0x2e,		/* ports 1234 -> 5678 */
		0, 0, 0, 0			/* length, checksum 0 (none) */
	};
	uint32_t i;

	memcpy(b, hdr, sizeof(hdr));
	for (i = sizeof(hdr); i < len; i++)
		b[i] = (unsigned char)i;
	synth_set_len(b, len);
}
