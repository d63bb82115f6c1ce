/*
 * test_pw: the pseudowire configuration (libring/pwconf.h) and the two
 * encapsulations (libring/tunnel.h) on their own: what a file gives and
 * the errors it gets, exactly; the headers put in front of a frame, field
 * by field at the offsets of RFC 8200, RFC 3931 and RFC 2784/2890; and
 * decapsulation of each kind of frame, of every truncation of a good one
 * (buffers of the exact size: ASan sees any read past them), and of
 * GRE's optional fields.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checksum.h"
#include "pwconf.h"
#include "tunnel.h"
#include "tap.h"

static char err[512];

static int
parse(struct pw_conf *c, const char *text)
{
	return pw_conf_parse(c, text, strlen(text), "t.conf", err,
	    sizeof(err));
}

static const char good[] =
    "local-address 2001:db8::1;\n"
    "hop-limit 9;\n"
    "pseudowire b {\n"
    "  remote-address 2001:db8::2;\n"
    "  l2tp { local-session 1; remote-session 4294967295;\n"
    "         local-cookie 0x0011223344556677;"
    " remote-cookie 0x0000000000000001; }\n"
    "}\n"
    "pseudowire f {\n"		/* RFC 8159's session, b's cookies */
    "  remote-address 2001:db8::5;\n"
    "  l2tp { local-cookie 0x0011223344556677;"
    " remote-cookie 0x0000000000000001; }\n"
    "}\n"
    "pseudowire g {\n"		/* f's session, to another end */
    "  remote-address 2001:db8::6;\n"
    "  l2tp { local-session 4294967295; local-cookie 0x0011223344556677;"
    " remote-cookie 0x0000000000000001; }\n"
    "}\n"
    "pseudowire \"c\" { remote-address 2001:db8::3; gre { key 42; } }\n"
    "pseudowire d { remote-address 2001:db8::3; gre { } }\n"
    "pseudowire e { remote-address 2001:db8::4; gre { key 0; } }\n";

static void
test_conf(void)
{
	static const uint8_t lc[8] = { 0, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66,
	    0x77 }, rc[8] = { [7] = 1 };
	struct pw_conf c;
	const struct pw *p;

	ok(parse(&c, good) == 0, "a good file parses: %s", err);
	ok(c.npw == 6, "six pseudowires");
	ok(c.mtu == 1500 && c.hop_limit == 9, "mtu default, hop-limit given");
	ok(c.local[0] == 0x20 && c.local[15] == 1, "local-address");
	p = pw_find(&c, "b");
	ok(p && p->type == PW_L2TP && p->local_session == 1 &&
	    p->remote_session == 4294967295u, "l2tp sessions");
	ok(p && memcmp(p->local_cookie, lc, 8) == 0 &&
	    memcmp(p->remote_cookie, rc, 8) == 0,
	    "cookies: most significant byte first");
	p = pw_find(&c, "f");
	ok(p && p->local_session == 0xffffffffu &&
	    p->remote_session == 0xffffffffu, "sessions: 0xffffffff unless "
	    "given (RFC 8159)");
	p = pw_find(&c, "g");
	ok(p && p->local_session == 0xffffffffu, "one local session for two "
	    "remote addresses");
	p = pw_find(&c, "c");
	ok(p && p->type == PW_GRE && p->has_key && p->key == 42,
	    "a quoted name; gre key");
	p = pw_find(&c, "d");
	ok(p && p->type == PW_GRE && !p->has_key, "gre without a key");
	p = pw_find(&c, "e");
	ok(p && p->has_key && p->key == 0, "key 0 is a key");
	ok(pw_find(&c, "x") == NULL, "no pseudowire x");
	pw_conf_free(&c);
}

static void
test_errors(void)
{
	static const struct { const char *in, *want; } e[] = {
	    { "", "t.conf:1:1: missing 'local-address'" },
	    { "local-address 2001:db8::1;", "t.conf:1:27: no pseudowire" },
	    { "local-address 2001:db8::1; local-address 2001:db8::1;",
	      "t.conf:1:28: duplicate field 'local-address' (first at 1:1)" },
	    { "local-address ::;", "t.conf:1:15: local-address: the "
	      "unspecified address" },
	    { "local-address 1.2.3.4;", "t.conf:1:15: bad IPv6 address "
	      "'1.2.3.4' for 'local-address'" },
	    { "hop-limit 0;", "t.conf:1:11: 'hop-limit' out of range: 0 "
	      "(1..255)" },
	    { "{", "t.conf:1:1: expected 'local-address', 'mtu', "
	      "'hop-limit' or 'pseudowire', got '{'" },
	    { "pseudowire ;", "t.conf:1:12: expected a name after "
	      "'pseudowire', got ';'" },
	    { "pseudowire -x {}", "t.conf:1:12: bad pseudowire name '-x': "
	      "letters, digits and '_.-', not first '.' or '-' (it names "
	      "a port)" },
	    { "pseudowire aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa {}", "t.conf:1:12: "
	      "bad pseudowire name 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa': 1 to "
	      "31 characters" },
	    { "pseudowire x ;", "t.conf:1:14: expected '{' after "
	      "'pseudowire x', got ';'" },
	    { "pseudowire x { }", "t.conf:1:12: pseudowire: missing "
	      "'remote-address'" },
	    { "pseudowire x { remote-address 2001:db8::2; }",
	      "t.conf:1:12: pseudowire 'x': missing 'l2tp' or 'gre'" },
	    { "pseudowire x { remote-address ff02::1; gre {} }",
	      "t.conf:1:12: remote-address: a multicast address" },
	    { "pseudowire x { remote-address 2001:db8::2; gre { key -1; } }",
	      "t.conf:1:54: bad number '-1' for 'key'" },
	    { "pseudowire x { remote-address 2001:db8::2; gre { key 1; "
	      "key 2; } }", "t.conf:1:57: duplicate field 'key' in gre "
	      "(first at 1:50)" },
	    { "pseudowire x { remote-address 2001:db8::2; l2tp { "
	      "local-session 0; } }", "t.conf:1:65: 'local-session' out of "
	      "range: 0 (1..4294967295)" },
	    { "pseudowire x { remote-address 2001:db8::2; l2tp { "
	      "local-cookie 0x00112233445566778; } }", "t.conf:1:64: bad "
	      "local-cookie '0x00112233445566778': must be 0x and 16 hex "
	      "digits (a 64-bit cookie)" },
	    { "pseudowire x { remote-address 2001:db8::2; l2tp { "
	      "remote-cookie 0x; } }", "t.conf:1:65: bad remote-cookie '0x': "
	      "must be 0x and 16 hex digits (a 64-bit cookie)" },
	    /* iproute2's 4-byte cookie: not one of 8 with zeros first */
	    { "pseudowire x { remote-address 2001:db8::2; l2tp { "
	      "local-cookie 0x00112233; } }", "t.conf:1:64: bad "
	      "local-cookie '0x00112233': must be 0x and 16 hex digits (a "
	      "64-bit cookie)" },
	    { "pseudowire x { remote-address 2001:db8::2; l2tp { "
	      "local-cookie 0x0011223344556677; } }", "t.conf:1:44: l2tp: "
	      "missing 'remote-cookie'" },
	    { "pseudowire x { remote-address 2001:db8::2; l2tp { "
	      "local-cookie 0x0011223344556677; "
	      "remote-cookie 0x0011223344556677; } }\n"
	      "pseudowire y { remote-address 2001:db8::2; l2tp { "
	      "local-cookie 0x0011223344556677; "
	      "remote-cookie 0x0011223344556677; } }",
	      "t.conf:2:44: pseudowire 'y': local-session 4294967295 and "
	      "remote-address are also those of 'x' (at 1:12)" },
	    { "pseudowire x { remote-address 2001:db8::2; gre {} }\n"
	      "pseudowire y { remote-address 2001:db8::2; gre {} }",
	      "t.conf:2:44: pseudowire 'y': the same remote-address and key "
	      "as 'x' (at 1:12)" },
	    { "pseudowire x { remote-address 2001:db8::2; gre {} ",
	      "t.conf:1:12: unterminated block 'pseudowire'" },
	    { "local-address ::1;", "t.conf:1:15: local-address: the "
	      "loopback address" },
	    { "pseudowire x { remote-address ::1; gre {} }",
	      "t.conf:1:12: remote-address: the loopback address" },
	    { "pseudowire x { remote-address 2001:db8::1; gre {} }\n"
	      "local-address 2001:db8::1;", "t.conf:1:12: pseudowire 'x': "
	      "its remote-address is the local-address" },
	};
	struct pw_conf c;
	size_t i;

	for (i = 0; i < sizeof(e) / sizeof(e[0]); i++) {
		err[0] = '\0';
		ok(parse(&c, e[i].in) == -1 && strcmp(err, e[i].want) == 0,
		    "error: %s", err);
		if (strcmp(err, e[i].want) != 0)
			printf("# want: %s\n", e[i].want);
		ok(c.pw == NULL && c.npw == 0, "nothing kept after an error");
	}
}

static uint16_t
be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t
be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

/* A copy of f's len bytes in a buffer of exactly that size. */
static uint8_t *
exact(const uint8_t *f, uint32_t len)
{
	uint8_t *b = malloc(len ? len : 1);

	memcpy(b, f, len);
	return b;
}

static void
test_encap(struct pw_conf *c)
{
	uint8_t frame[100], out[200];
	const struct pw *b = pw_find(c, "b"), *cc = pw_find(c, "c"),
	    *d = pw_find(c, "d");
	struct tun_tx t;
	uint32_t n, i;

	for (i = 0; i < sizeof(frame); i++)
		frame[i] = (uint8_t)(i * 7 + 1);
	tun_tx_init(&t, c, b);
	n = tun_encap(out, &t, frame, sizeof(frame));
	ok(n == 54 + 12 + 100 && t.hlen == 66, "l2tp: 66 bytes in front");
	ok(memcmp(out, "\0\0\0\0\0\0\0\0\0\0\0\0\x86\xdd", 14) == 0,
	    "placeholder Ethernet, type IPv6");
	ok(out[14] >> 4 == 6 && be16(out + 18) == 112 && out[20] == 115 &&
	    out[21] == 9, "IPv6: version, payload length, next header 115, "
	    "hop limit");
	ok(memcmp(out + 22, c->local, 16) == 0 &&
	    memcmp(out + 38, b->remote, 16) == 0, "IPv6 addresses");
	ok(be32(out + 54) == 4294967295u &&
	    memcmp(out + 58, b->local_cookie, 8) == 0,
	    "L2TPv3: remote-session, then local-cookie");
	ok(memcmp(out + 66, frame, 100) == 0, "the frame follows as is");

	tun_tx_init(&t, c, cc);
	n = tun_encap(out, &t, frame, 60);
	ok(n == 54 + 8 + 60 && out[20] == 47 && be16(out + 18) == 68,
	    "gre with a key: next header 47, 8 bytes of GRE");
	ok(be16(out + 54) == 0x2000 && be16(out + 56) == 0x6558 &&
	    be32(out + 58) == 42, "GRE: K only, protocol 0x6558, the key");
	tun_tx_init(&t, c, d);
	n = tun_encap(out, &t, frame, 60);
	ok(n == 54 + 4 + 60 && be16(out + 54) == 0 &&
	    be16(out + 56) == 0x6558 && memcmp(out + 58, frame, 60) == 0,
	    "gre without a key: 4 bytes of GRE");
}

static void
test_decap(struct pw_conf *c)
{
	uint8_t frame[64], f[300], g[300], *x;
	const struct pw *b = pw_find(c, "b"), *cc = pw_find(c, "c");
	struct tun_tx t;
	struct tun_rx rx;
	uint16_t s;
	uint32_t n, i;
	int v, bad;

	for (i = 0; i < sizeof(frame); i++)
		frame[i] = (uint8_t)(i + 3);
	/* A frame from b to us: b's headers with the addresses swapped. */
	tun_tx_init(&t, c, b);
	n = tun_encap(f, &t, frame, sizeof(frame));
	memcpy(f + 22, b->remote, 16);
	memcpy(f + 38, c->local, 16);
	x = exact(f, n);
	v = tun_rx(x, n, c->local, SNB_IPPROTO_L2TP, &rx);
	ok(v == TUN_RX_OK && rx.off == 66 && rx.len == 64 &&
	    rx.session == 4294967295u && memcmp(rx.cookie, b->local_cookie,
	    8) == 0 && memcmp(rx.src, b->remote, 16) == 0,
	    "l2tp: taken apart (%d)", v);
	ok(tun_rx(x, n, c->local, SNB_IPPROTO_GRE, &rx) ==
	    TUN_RX_OTHER_PROTO, "l2tp is another protocol to gre");
	ok(tun_rx(x, n, b->remote, SNB_IPPROTO_L2TP, &rx) ==
	    TUN_RX_NOT_LOCAL, "to another address: not local");
	free(x);
	/* Every truncation: never taken, never a read past the end. */
	for (bad = 0, i = 0; i < n; i++) {
		x = exact(f, i);
		v = tun_rx(x, i, c->local, SNB_IPPROTO_L2TP, &rx);
		bad += v == TUN_RX_OK ||
		    (v != TUN_RX_NOT_IPV6 && v != TUN_RX_MALFORMED);
		free(x);
	}
	ok(bad == 0, "every truncation is not-ipv6 or malformed");
	/* Trailing bytes past the payload length are not the frame's. */
	f[n] = 0xee;
	x = exact(f, n + 1);
	ok(tun_rx(x, n + 1, c->local, SNB_IPPROTO_L2TP, &rx) == TUN_RX_OK &&
	    rx.len == 64, "padding after the payload is left out");
	free(x);
	/* A payload length that leaves no room for an Ethernet header. */
	memcpy(g, f, n);
	g[18] = 0;
	g[19] = 12 + 13;
	ok(tun_rx(g, n, c->local, SNB_IPPROTO_L2TP, &rx) == TUN_RX_MALFORMED,
	    "13 bytes of frame: malformed");
	g[14] = 0x40;
	ok(tun_rx(f, n, c->local, SNB_IPPROTO_L2TP, &rx) == TUN_RX_OK &&
	    tun_rx(g, n, c->local, SNB_IPPROTO_L2TP, &rx) ==
	    TUN_RX_MALFORMED, "IP version 4 behind type IPv6: malformed");
	/* A destination options header of 8 bytes before L2TP. */
	memcpy(g, f, 54);
	g[20] = SNB_IPPROTO_DSTOPTS;
	g[54] = SNB_IPPROTO_L2TP;
	g[55] = 0;
	memcpy(g + 56, "\x01\x04\0\0\0\0", 6);	/* PadN */
	memcpy(g + 62, f + 54, n - 54);
	s = htons((uint16_t)(n - 54 + 8));
	memcpy(g + 18, &s, 2);
	ok(tun_rx(g, n + 8, c->local, SNB_IPPROTO_L2TP, &rx) == TUN_RX_OK &&
	    rx.off == 74 && rx.len == 64, "after a destination options "
	    "header");
	g[54] = SNB_IPPROTO_FRAGMENT;
	ok(tun_rx(g, n + 8, c->local, SNB_IPPROTO_L2TP, &rx) ==
	    TUN_RX_FRAGMENT, "a fragment header after it: fragment");
	g[54] = SNB_IPPROTO_L2TP;
	/* The 8 bytes as other headers (RFC 8200 4). */
	g[20] = SNB_IPPROTO_HOPOPTS;
	ok(tun_rx(g, n + 8, c->local, SNB_IPPROTO_L2TP, &rx) == TUN_RX_OK &&
	    rx.off == 74, "after a hop-by-hop options header");
	g[20] = SNB_IPPROTO_FRAGMENT;
	memcpy(g + 56, "\0\0\x12\x34\x56\x78", 6);	/* offset 0, M 0 */
	ok(tun_rx(g, n + 8, c->local, SNB_IPPROTO_L2TP, &rx) == TUN_RX_OK &&
	    rx.off == 74 && rx.len == 64, "an atomic fragment is the whole "
	    "packet (RFC 6946)");
	g[57] = 1;					/* M */
	ok(tun_rx(g, n + 8, c->local, SNB_IPPROTO_L2TP, &rx) ==
	    TUN_RX_FRAGMENT, "a first fragment: fragment");
	g[57] = 0;
	g[56] = 0x01;					/* offset 32 */
	ok(tun_rx(g, n + 8, c->local, SNB_IPPROTO_L2TP, &rx) ==
	    TUN_RX_FRAGMENT, "a last fragment: fragment");
	g[57] = 0x06;					/* reserved bits */
	g[56] = 0;
	ok(tun_rx(g, n + 8, c->local, SNB_IPPROTO_L2TP, &rx) == TUN_RX_OK,
	    "the fragment header's reserved bits are ignored");
	/* A routing header (type 4, SRH-sized) with segments left 0 and 1. */
	g[20] = SNB_IPPROTO_ROUTING;
	memcpy(g + 55, "\0\x04\0\0\0\0\0", 7);
	ok(tun_rx(g, n + 8, c->local, SNB_IPPROTO_L2TP, &rx) == TUN_RX_OK,
	    "a routing header with no segments left: ours");
	g[57] = 1;
	ok(tun_rx(g, n + 8, c->local, SNB_IPPROTO_L2TP, &rx) ==
	    TUN_RX_NOT_LOCAL, "segments left: another destination's");
	/* A hop-by-hop header anywhere but first (RFC 8200 4.1). */
	{
		uint8_t h[320];

		memcpy(h, g, 54);
		h[20] = SNB_IPPROTO_DSTOPTS;
		memcpy(h + 54, "\0\0\x01\x04\0\0\0\0", 8);
		h[54] = SNB_IPPROTO_HOPOPTS;
		memcpy(h + 62, "\0\0\x01\x04\0\0\0\0", 8);
		h[62] = SNB_IPPROTO_L2TP;
		memcpy(h + 70, f + 54, n - 54);
		s = htons((uint16_t)(n - 54 + 16));
		memcpy(h + 18, &s, 2);
		ok(tun_rx(h, n + 16, c->local, SNB_IPPROTO_L2TP, &rx) ==
		    TUN_RX_MALFORMED, "hop-by-hop after destination options: "
		    "malformed");
		h[54] = SNB_IPPROTO_DSTOPTS;
		ok(tun_rx(h, n + 16, c->local, SNB_IPPROTO_L2TP, &rx) ==
		    TUN_RX_OK && rx.off == 82, "two destination options "
		    "headers");
	}
	/* IP6EXT_MAX (8) headers are passed over, a ninth is not. */
	{
		uint8_t h[400];
		int k, m;

		for (m = 8; m <= 9; m++) {
			memcpy(h, g, 54);
			h[20] = SNB_IPPROTO_DSTOPTS;
			for (k = 0; k < m; k++) {
				memcpy(h + 54 + 8 * k, "\0\0\x01\x04\0\0\0\0", 8);
				h[54 + 8 * k] = k == m - 1 ? SNB_IPPROTO_L2TP :
				    SNB_IPPROTO_DSTOPTS;
			}
			memcpy(h + 54 + 8 * m, f + 54, n - 54);
			s = htons((uint16_t)(n - 54 + 8 * m));
			memcpy(h + 18, &s, 2);
			v = tun_rx(h, n + 8 * m, c->local, SNB_IPPROTO_L2TP, &rx);
			ok(m == 8 ? v == TUN_RX_OK && rx.off == 54 + 64 + 12 :
			    v == TUN_RX_OTHER_PROTO, "%d extension headers (%d)",
			    m, v);
		}
	}

	/* GRE: key, then checksum and sequence number. */
	tun_tx_init(&t, c, cc);
	n = tun_encap(f, &t, frame, sizeof(frame));
	memcpy(f + 22, cc->remote, 16);
	memcpy(f + 38, c->local, 16);
	ok(tun_rx(f, n, c->local, SNB_IPPROTO_GRE, &rx) == TUN_RX_OK &&
	    rx.has_key && rx.key == 42 && rx.off == 62 && rx.len == 64,
	    "gre with a key: taken apart");
	/* C, K and S: checksum 4, key 4, sequence 4. */
	memcpy(g, f, 54);
	g[54] = 0xb0;
	g[55] = 0;
	g[56] = 0x65;
	g[57] = 0x58;
	memset(g + 58, 0, 4);
	memcpy(g + 62, "\0\0\0\x2a", 4);
	memcpy(g + 66, "\0\0\0\x07", 4);
	memcpy(g + 70, frame, 64);
	s = htons(16 + 64);
	memcpy(g + 18, &s, 2);
	s = cksum_fold(cksum_add(0, g + 54, 16 + 64));
	memcpy(g + 58, &s, 2);
	x = exact(g, 54 + 16 + 64);
	ok(tun_rx(x, 54 + 16 + 64, c->local, SNB_IPPROTO_GRE, &rx) ==
	    TUN_RX_OK && rx.key == 42 && rx.off == 70 && rx.len == 64,
	    "gre with checksum, key and sequence number");
	for (bad = 0, i = 0; i < 54 + 16 + 64; i++) {
		v = tun_rx(x, i, c->local, SNB_IPPROTO_GRE, &rx);
		bad += v != TUN_RX_NOT_IPV6 && v != TUN_RX_MALFORMED;
	}
	ok(bad == 0, "gre: every truncation is not-ipv6 or malformed");
	x[100] ^= 1;
	ok(tun_rx(x, 54 + 16 + 64, c->local, SNB_IPPROTO_GRE, &rx) ==
	    TUN_RX_GRE_CSUM, "a changed byte: wrong checksum");
	free(x);
	memcpy(g, f, n);
	g[56] = 0x08;
	g[57] = 0x00;
	ok(tun_rx(g, n, c->local, SNB_IPPROTO_GRE, &rx) == TUN_RX_GRE_PROTO,
	    "gre of IPv4: another protocol");
	for (bad = 0, i = 0; i < 16; i++) {
		uint16_t fl = (uint16_t)(1u << i);

		memcpy(g, f, n);
		g[54] = (uint8_t)(fl >> 8);
		g[55] = (uint8_t)fl;
		v = tun_rx(g, n, c->local, SNB_IPPROTO_GRE, &rx);
		if (fl & GRE_F_BAD)
			bad += v != TUN_RX_MALFORMED;
	}
	ok(bad == 0, "gre: routing, strict source route, recursion bit 5 "
	    "and a version: malformed");
}

int
main(void)
{
	struct pw_conf c;

	test_conf();
	test_errors();
	if (parse(&c, good) != 0)
		return 1;
	test_encap(&c);
	test_decap(&c);
	pw_conf_free(&c);
	return tap_done();
}
