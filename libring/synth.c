/* synth.c: build the frames of synth.h. */
#include <string.h>

#include "synth.h"

static uint16_t
ip_cksum20(const unsigned char *h)
{
	uint32_t sum = 0;
	int i;

	for (i = 0; i < 20; i += 2)
		if (i != 10)
			sum += (uint32_t)h[i] << 8 | h[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

void
synth_set_len(unsigned char *b, uint32_t len)
{
	uint32_t ip_len = len - 14, udp_len = len - 34;
	uint16_t ck;

	b[16] = (unsigned char)(ip_len >> 8);
	b[17] = (unsigned char)ip_len;
	b[38] = (unsigned char)(udp_len >> 8);
	b[39] = (unsigned char)udp_len;
	ck = ip_cksum20(b + 14);
	b[24] = (unsigned char)(ck >> 8);
	b[25] = (unsigned char)ck;
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
