/*
 * linktype.c: other link types as Ethernet frames (see linktype.h).
 * Header layouts: pcap-linktype(7), LINKTYPE_LINUX_SLL and _SLL2.
 */
#include <string.h>

#include <pcap/pcap.h>

#include "linktype.h"

int
linktype_known(int dlt)
{
	return dlt == DLT_EN10MB || dlt == DLT_LINUX_SLL ||
	    dlt == DLT_LINUX_SLL2 || dlt == DLT_RAW || dlt == DLT_IPV4 ||
	    dlt == DLT_IPV6 || dlt == DLT_NULL || dlt == DLT_LOOP;
}

/* The ethertype of an IP packet's version, 0 for none. */
static unsigned
ip_type(const unsigned char *d, int dlt)
{
	unsigned t = d[0] >> 4 == 4 ? 0x0800 : d[0] >> 4 == 6 ? 0x86dd : 0;

	if ((dlt == DLT_IPV4 && t != 0x0800) ||
	    (dlt == DLT_IPV6 && t != 0x86dd))
		return 0;
	return t;
}

int
linktype_to_ether(int dlt, const unsigned char *d, uint32_t *len,
    unsigned char *out, uint32_t max, unsigned *type)
{
	const unsigned char *src = NULL;
	uint32_t hl, caplen = *len;
	int bcast = 0;

	*type = 0;
	switch (dlt) {
	case DLT_LINUX_SLL:	/* pkttype, hatype, alen, addr[8], proto */
		if ((hl = 16) > caplen)
			return LT_NOT_ETHER;
		*type = (unsigned)(d[14] << 8 | d[15]);
		bcast = (d[0] << 8 | d[1]) == 1;	/* PACKET_BROADCAST */
		if ((d[4] << 8 | d[5]) == 6)
			src = d + 6;
		break;
	case DLT_LINUX_SLL2:	/* proto, reserved, ifindex, hatype,
				   pkttype, alen, addr[8] */
		if ((hl = 20) > caplen)
			return LT_NOT_ETHER;
		*type = (unsigned)(d[0] << 8 | d[1]);
		bcast = d[10] == 1;
		if (d[11] == 6)
			src = d + 12;
		break;
	case DLT_NULL:		/* a 4-byte address family, any order */
	case DLT_LOOP:
		if ((hl = 4) >= caplen)
			return LT_NOT_ETHER;
		*type = ip_type(d + hl, dlt);
		break;
	default:		/* RAW, IPV4, IPV6 */
		if ((hl = 0) >= caplen)
			return LT_NOT_ETHER;
		*type = ip_type(d, dlt);
	}
	if (*type < 0x0600)	/* a length or a Linux protocol number */
		return LT_NOT_ETHER;
	if (caplen - hl + 14 > max)
		return LT_TOO_LONG;
	memset(out, bcast ? 0xff : 0, 6);
	if (src != NULL)
		memcpy(out + 6, src, 6);
	else
		memset(out + 6, 0, 6);
	out[12] = (unsigned char)(*type >> 8);
	out[13] = (unsigned char)*type;
	memmove(out + 14, d + hl, caplen - hl);
	*len = caplen - hl + 14;
	return 0;
}
