/*
 * bt_ref.h: the lwAFTR binding-table tests' reference model (included
 * after apps/lwaftr/bt.c by test_lwaftr_bt.c and test_lwaftr_btedit.c):
 * the PSID of a port and a lookup by brute force, written out from RFC
 * 7597 independently of bt.c, and a softwire maker.  fill_sw() gives
 * BT_REF_BR_KINDS different BR addresses (3 unless the test says).
 */
#ifndef BT_REF_BR_KINDS
#define BT_REF_BR_KINDS 3
#endif

/* RFC 7597 as the README states it, written out independently. */
static uint32_t
ref_psid(const struct softwire *s, uint16_t port_host)
{
	int shift = 16 - s->reserved_bits - s->psid_length;

	if (s->psid_length == 0)
		return 0;
	return ((uint32_t)port_host >> shift) & ((1u << s->psid_length) - 1);
}

/*
 * Snabb's lwAFTR (binding_table.lua lookup_psid), which we follow: with
 * a reserved bits, no softwire has a port below 2^a.
 */
static int
ref_reserved(const struct softwire *s, uint16_t port_host)
{
	return s->reserved_bits > 0 && port_host < (1u << s->reserved_bits);
}

static const struct softwire *
brute(const struct softwire *sw, size_t n, uint32_t ipv4, uint16_t port)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (sw[i].ipv4 == ipv4 && !ref_reserved(&sw[i], ntohs(port)) &&
		    ref_psid(&sw[i], ntohs(port)) == sw[i].psid)
			return &sw[i];
	return NULL;
}

/* Same softwire: the table hands out its own copies. */
static int
same(const struct softwire *a, const struct softwire *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return memcmp(a, b, sizeof(*a)) == 0;
}

static void
fill_sw(struct softwire *s, uint32_t ipv4_host, uint32_t psid, int plen,
    int resv, uint32_t tag)
{
	memset(s, 0, sizeof(*s));
	s->ipv4 = htonl(ipv4_host);
	s->psid = (uint16_t)psid;
	s->psid_length = (uint8_t)plen;
	s->reserved_bits = (uint8_t)resv;
	s->b4[0] = 0x20;
	memcpy(s->b4 + 8, &ipv4_host, 4);
	memcpy(s->b4 + 12, &tag, 4);
	s->br[0] = 0xfe;
	s->br[15] = (uint8_t)(tag % BT_REF_BR_KINDS);
}
