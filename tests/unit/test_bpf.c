/*
 * test_bpf: snb_bpf against libpcap's own bpf_filter().
 *
 *  1. Differential: many tcpdump expressions, compiled by pcap_compile()
 *     with and without the optimiser, run over a deterministic mix of
 *     generated packets (Ethernet, 802.1Q, IPv4 with options and
 *     fragments, IPv6 with extension headers, ARP, TCP/UDP/ICMP/ICMPv6)
 *     and mutated ones (random bytes, truncation).  One ok per expression.
 *  2. Random valid programs (every opcode, odd offsets) on the same packets.
 *  3. Hand-written programs: the loader's rejections, every ALU op, loads
 *     at the bounds, backward jumps and the loop limit.
 *
 * Every packet buffer is allocated with exactly caplen bytes so that the
 * sanitizer build catches any read past it.
 */
#include <sys/types.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcap/pcap.h>

#include "bpf.h"
#include "tap.h"

#define NPKTS		6000
#define BUILDMAX	2048

/* One test packet: caplen bytes at data, wirelen >= caplen. */
struct pkt {
	unsigned char	*data;
	unsigned	 caplen;
	unsigned	 wirelen;
};

static struct pkt pkts[NPKTS];

/* xorshift64*: small, fast, and the same sequence everywhere. */
static uint64_t rngstate = 0x9e3779b97f4a7c15ULL;

static uint32_t
rnd(void)
{
	rngstate ^= rngstate >> 12;
	rngstate ^= rngstate << 25;
	rngstate ^= rngstate >> 27;
	return (rngstate * 0x2545f4914f6cdd1dULL) >> 32;
}

static uint32_t
rndn(uint32_t n)
{
	return n ? rnd() % n : 0;
}

/* Append-only writer over the build buffer. */
struct wbuf {
	unsigned char	b[BUILDMAX];
	unsigned	len;
};

static void
put8(struct wbuf *w, unsigned v)
{
	if (w->len < sizeof(w->b))
		w->b[w->len++] = v;
}

static void
put16(struct wbuf *w, unsigned v)
{
	put8(w, v >> 8);
	put8(w, v);
}

static void
put32(struct wbuf *w, uint32_t v)
{
	put16(w, v >> 16);
	put16(w, v);
}

static void
putbytes(struct wbuf *w, const unsigned char *p, unsigned n)
{
	while (n--)
		put8(w, *p++);
}

static void
putrand(struct wbuf *w, unsigned n)
{
	while (n--)
		put8(w, rnd());
}

/* Pick one of a few interesting values, or (last) something random. */
static uint32_t
pick(const uint32_t *v, unsigned n)
{
	unsigned i = rndn(n + 1);

	return i < n ? v[i] : rnd();
}
#define PICK(a)	pick(a, sizeof(a) / sizeof(a[0]))

static const uint32_t ports[] = { 80, 443, 22, 53, 1000, 1500, 2000, 2001,
    999, 8080, 0, 65535 };
static const uint32_t v4addrs[] = { 0x0a000001, 0x0a000002, 0x0a010203,
    0xc0a80105, 0xc0a8c807, 0xac100001, 0x08080808, 0xe0000005,
    0xef010203, 0xffffffff };

static void
put_mac(struct wbuf *w, int dst)
{
	static const unsigned char macs[][6] = {
		{ 0xff, 0xff, 0xff, 0xff, 0xff, 0xff },
		{ 0x01, 0x00, 0x5e, 0x00, 0x00, 0x05 },
		{ 0x33, 0x33, 0x00, 0x00, 0x00, 0x01 },
		{ 0x00, 0x11, 0x22, 0x33, 0x44, 0x55 },
	};
	unsigned i = rndn(dst ? 6 : 2);

	if (i < 4 && (dst || i == 0))
		putbytes(w, macs[dst ? i : 3], 6);
	else
		putrand(w, 6);
}

static void
put_v6addr(struct wbuf *w)
{
	static const unsigned char addrs[][16] = {
		{ 0x20, 0x01, 0x0d, 0xb8, [15] = 1 },
		{ 0x20, 0x01, 0x0d, 0xb8, [15] = 2 },
		{ 0x20, 0x01, 0x0d, 0xb8, 0, 1, [15] = 5 },
		{ 0xfe, 0x80, [15] = 1 },
		{ 0xff, 0x02, [15] = 1 },
		{ [15] = 1 },
	};
	unsigned i = rndn(7);

	if (i < 6)
		putbytes(w, addrs[i], 16);
	else
		putrand(w, 16);
}

static void
put_tcp(struct wbuf *w)
{
	static const uint32_t flags[] = { 0x02, 0x12, 0x10, 0x01, 0x04, 0x18,
	    0x11 };
	unsigned opts = rndn(4) == 0 ? rndn(11) : 0;

	put16(w, PICK(ports));
	put16(w, PICK(ports));
	put32(w, rnd());
	put32(w, rnd());
	put8(w, (5 + opts) << 4);
	put8(w, PICK(flags));
	put16(w, rnd());
	put32(w, 0);
	putrand(w, opts * 4);
}

/* The transport header for protocol proto (IP or IPv6 numbering). */
static void
put_l4(struct wbuf *w, unsigned proto)
{
	static const uint32_t icmptypes[] = { 8, 0, 3, 11 };
	static const uint32_t icmp6types[] = { 128, 129, 135, 136, 1 };

	switch (proto) {
	case 6:
		put_tcp(w);
		break;
	case 17:
		put16(w, PICK(ports));
		put16(w, PICK(ports));
		put32(w, rnd());
		put32(w, rndn(2) ? 0x12345678 : rnd());
		break;
	case 1:
	case 58:
		put8(w, proto == 1 ? PICK(icmptypes) : PICK(icmp6types));
		put8(w, rndn(3));
		put16(w, 0);
		put32(w, rnd());
		break;
	default:
		putrand(w, rndn(24));
		break;
	}
}

static void
put_ipv4(struct wbuf *w)
{
	static const uint32_t protos[] = { 6, 6, 17, 17, 1, 47, 58 };
	static const uint32_t frags[] = { 0, 0, 0, 0x4000, 0x2000, 0x20b9,
	    0x0010, 0x1fff };
	unsigned opts = rndn(4) == 0 ? 1 + rndn(10) : 0;
	unsigned proto = PICK(protos) & 0xff;

	put8(w, 0x40 | (5 + opts));
	put8(w, rnd());
	put16(w, rndn(4) ? 40 + rndn(1460) : rnd());
	put16(w, rnd());
	put16(w, PICK(frags));
	put8(w, 64);
	put8(w, proto);
	put16(w, 0);
	put32(w, PICK(v4addrs));
	put32(w, PICK(v4addrs));
	while (opts--)
		put32(w, rndn(2) ? 0x01010101 : rnd());
	put_l4(w, proto);
}

static void
put_ipv6(struct wbuf *w)
{
	static const uint32_t nexts[] = { 6, 6, 17, 58, 0, 60, 43, 47 };
	unsigned next = PICK(nexts) & 0xff, hops = 0;

	put32(w, 0x60000000 | rndn(1 << 20));
	put16(w, rnd() & 0x7ff);
	put8(w, next);
	put8(w, 64);
	put_v6addr(w);
	put_v6addr(w);
	/* Extension headers (hop-by-hop, dest opts, routing) may chain. */
	while ((next == 0 || next == 60 || next == 43) && hops++ < 3) {
		unsigned len = rndn(2);

		next = PICK(nexts) & 0xff;
		put8(w, next);
		put8(w, len);
		putrand(w, 6 + len * 8);
	}
	put_l4(w, next);
}

static void
put_arp(struct wbuf *w)
{
	put16(w, 1);
	put16(w, 0x0800);
	put8(w, 6);
	put8(w, 4);
	put16(w, 1 + rndn(2));
	putrand(w, 6);
	put32(w, PICK(v4addrs));
	putrand(w, 6);
	put32(w, PICK(v4addrs));
}

/* A plausible frame: Ethernet, 0-2 VLAN tags, network and transport. */
static void
build_frame(struct wbuf *w)
{
	static const uint32_t vids[] = { 100, 100, 200, 4095 };
	unsigned tags = rndn(5) == 0 ? 1 + rndn(2) : 0, r, pay;

	put_mac(w, 1);
	put_mac(w, 0);
	while (tags--) {
		put16(w, rndn(4) ? 0x8100 : 0x88a8);
		put16(w, (rndn(8) << 13) | PICK(vids));
	}
	r = rndn(20);
	if (r < 10) {
		put16(w, 0x0800);
		put_ipv4(w);
	} else if (r < 16) {
		put16(w, 0x86dd);
		put_ipv6(w);
	} else if (r < 18) {
		put16(w, 0x0806);
		put_arp(w);
	} else {
		put16(w, rndn(2) ? 0x88cc : rnd());
		putrand(w, rndn(60));
	}
	r = rndn(10);
	pay = r < 4 ? rndn(20) : r < 8 ? rndn(300) : rndn(1400);
	putrand(w, pay);
}

/* Build one packet, maybe damage it, and pick caplen and wirelen. */
static void
make_packet(struct pkt *p)
{
	struct wbuf w = { .len = 0 };
	unsigned r, flips;

	if (rndn(12) == 0)
		putrand(&w, rndn(100));
	else
		build_frame(&w);
	if (rndn(7) == 0 && w.len > 0)
		for (flips = 1 + rndn(4); flips--; )
			w.b[rndn(w.len < 80 ? w.len : 80)] = rnd();

	p->wirelen = w.len;
	if (rndn(10) == 0)
		p->wirelen += rndn(9000);
	r = rndn(20);
	if (r < 10)
		p->caplen = w.len;
	else if (r < 14)
		p->caplen = rndn(w.len + 1);
	else if (r < 17)
		p->caplen = rndn(61);
	else
		p->caplen = rndn(2) ? 68 : 96;
	if (p->caplen > w.len)
		p->caplen = w.len;
	p->data = malloc(p->caplen);
	if (p->data == NULL && p->caplen > 0)
		abort();
	if (p->caplen > 0)
		memcpy(p->data, w.b, p->caplen);
}

static void
dump_packet(const struct pkt *p)
{
	unsigned i;

	printf("# caplen %u wirelen %u:", p->caplen, p->wirelen);
	for (i = 0; i < p->caplen && i < 80; i++)
		printf("%s%02x", i % 16 ? " " : "\n#   ", p->data[i]);
	printf("\n");
}

/*
 * Run prog both ways over every packet; returns the mismatch count and
 * describes the first one.
 */
static unsigned
differ(const char *what, const struct bpf_insn *insns, unsigned n,
    unsigned *accepted)
{
	char err[256];
	struct snb_bpf *p;
	unsigned i, bad = 0, mine, theirs;

	if ((p = snb_bpf_load(insns, n, err, sizeof(err))) == NULL) {
		printf("# %s: load failed: %s\n", what, err);
		return 1;
	}
	for (i = 0; i < NPKTS; i++) {
		mine = snb_bpf_run(p, pkts[i].data, pkts[i].caplen,
		    pkts[i].wirelen);
		theirs = bpf_filter(insns, pkts[i].data, pkts[i].wirelen,
		    pkts[i].caplen);
		*accepted += theirs != 0;
		if (mine != theirs && bad++ == 0) {
			printf("# %s: packet %u: snb %u, libpcap %u\n", what, i,
			    mine, theirs);
			dump_packet(&pkts[i]);
		}
	}
	snb_bpf_free(p);
	return bad;
}

static const char *exprs[] = {
	"ip", "ip6", "arp", "vlan", "vlan 100 and ip", "vlan 200", "tcp",
	"udp", "icmp", "icmp6", "tcp port 80", "udp port 53",
	"portrange 1000-2000", "tcp portrange 1000-2000", "host 10.0.0.1",
	"net 192.168.0.0/16", "src host 10.0.0.1", "dst net 10.0.0.0/8",
	"src port 22", "dst port 443", "ip6 host 2001:db8::1",
	"ip6 src net 2001:db8::/32", "ip6 dst host ff02::1",
	"ether host 00:11:22:33:44:55", "ether src 00:11:22:33:44:55",
	"ether broadcast", "ether multicast", "ip multicast", "ip6 multicast",
	"ip[6:2] & 0x1fff != 0", "tcp[tcpflags] & tcp-syn != 0",
	"tcp[tcpflags] & (tcp-syn|tcp-ack) = tcp-syn", "greater 100",
	"less 80", "len > 200", "ip proto 47", "not tcp",
	"tcp and not port 22", "(port 80 or port 443) and tcp",
	"(host 10.0.0.1 or host 10.0.0.2) and udp", "ip[0] & 0xf > 5",
	"udp[8:4] = 0x12345678", "ip and ip[2:2] > 1000", "vlan and vlan",
	"vlan and vlan 100", "icmp[icmptype] = icmp-echo",
	"icmp6 and ip6[40] = 128", "ether[12:2] = 0x0806", "tcp[13] = 2",
	"tcp[13] & 7 != 0", "ip6 and tcp", "ip6 and udp port 53",
	"vlan and ip and udp", "net 10.0.0.0/8 and not port 22",
	"ip and udp and dst port 53", "ip6 protochain 6",
	"ip protochain 17",
	"tcp port 80 and (((ip[2:2] - ((ip[0]&0xf)<<2)) - "
	    "((tcp[12]&0xf0)>>2)) != 0)",
	"ip[2:2] / ip[8] > 5", "ip[2:2] % ip[9] = 0", "ip[0] << ip[1] = 0",
	"ip[2:2] >> ip[15] = 1", "ip[2:2] / 4 > 100", "ip[2:2] % 7 = 3",
	"ip[1] * 3 + 1 > 50", "ip[0] ^ 0x45 = 0", "-ip[8] < 0xffffffc0",
	"ip[4:2] | 0xff00 = 0xffff", "len - 14 = ip[2:2]",
	"ether[len - 1] = 0", "ether[ip[0] & 0xf] = 0x45",
	"tcp[0xfffffff0] = 1", "ether[0xfffffffe:2] = 1",
	"ether[0xfffffffc:4] = 1", "udp[4:2] > len", "arp and arp[7] = 2",
};

static void
test_exprs(void)
{
	struct bpf_program prog;
	pcap_t *pd;
	unsigned i, bad, acc;
	int opt;

	if ((pd = pcap_open_dead(DLT_EN10MB, 65535)) == NULL) {
		ok(0, "pcap_open_dead");
		return;
	}
	for (i = 0; i < sizeof(exprs) / sizeof(exprs[0]); i++) {
		bad = acc = 0;
		for (opt = 1; opt >= 0; opt--) {
			if (pcap_compile(pd, &prog, exprs[i], opt,
			    PCAP_NETMASK_UNKNOWN) != 0) {
				printf("# %s: %s\n", exprs[i], pcap_geterr(pd));
				bad++;
				continue;
			}
			bad += differ(exprs[i], prog.bf_insns, prog.bf_len,
			    &acc);
			pcap_freecode(&prog);
		}
		ok(bad == 0, "\"%s\" agrees with libpcap on 2 x %d packets "
		    "(%u accepted, %u differ)", exprs[i], NPKTS, acc, bad);
	}
	pcap_close(pd);
}

/* Offsets near the packet and near 2^32, where the bounds checks live. */
static uint32_t
rnd_offset(void)
{
	unsigned r = rndn(10);

	if (r < 6)
		return rndn(80);
	if (r < 8)
		return rndn(1600);
	return 0xffffffffU - rndn(20);
}

/* A random valid program of n instructions (n - 1 may jump). */
static void
rnd_program(struct bpf_insn *f, unsigned n)
{
	static const uint16_t alu[] = { BPF_ADD, BPF_SUB, BPF_MUL, BPF_DIV,
	    BPF_MOD, BPF_AND, BPF_OR, BPF_XOR, BPF_LSH, BPF_RSH };
	static const uint16_t jmp[] = { BPF_JGT, BPF_JGE, BPF_JEQ, BPF_JSET };
	static const uint16_t sizes[] = { BPF_W, BPF_H, BPF_B };
	unsigned i, room;
	uint16_t c;

	/* Scratch memory first: libpcap's starts undefined, ours zeroed. */
	for (i = 0; i < BPF_MEMWORDS; i++)
		f[i] = (struct bpf_insn)BPF_STMT(BPF_ST, i);
	for (; i < n - 1; i++) {
		room = n - 2 - i;	/* furthest forward jump */
		if (room > 255)
			room = 255;
		switch (rndn(12)) {
		case 0: case 1:
			c = BPF_LD | sizes[rndn(3)] | (rndn(3) ? BPF_ABS : BPF_IND);
			f[i] = (struct bpf_insn)BPF_STMT(c, rnd_offset());
			break;
		case 2:
			c = rndn(2) ? BPF_LDX | BPF_MSH | BPF_B : BPF_LDX | BPF_IMM;
			f[i] = (struct bpf_insn)BPF_STMT(c, rndn(2) ? rnd_offset() : rnd());
			break;
		case 3: {
			static const uint16_t misc[] = { BPF_LD | BPF_IMM,
			    BPF_LD | BPF_W | BPF_LEN, BPF_LDX | BPF_W | BPF_LEN,
			    BPF_LD | BPF_MEM, BPF_LDX | BPF_MEM, BPF_ST, BPF_STX,
			    BPF_MISC | BPF_TAX, BPF_MISC | BPF_TXA,
			    BPF_ALU | BPF_NEG };

			c = misc[rndn(10)];
			f[i] = (struct bpf_insn)BPF_STMT(c, BPF_MODE(c) == BPF_IMM &&
			    BPF_CLASS(c) <= BPF_LDX ? rnd() : rndn(BPF_MEMWORDS));
			break;
		}
		case 4: case 5: case 6: {
			uint32_t k = rndn(2) ? rndn(40) : rnd();

			c = BPF_ALU | alu[rndn(10)] | (rndn(2) ? BPF_K : BPF_X);
			if (BPF_SRC(c) == BPF_K && (BPF_OP(c) == BPF_LSH ||
			    BPF_OP(c) == BPF_RSH))
				k %= 32;
			if (BPF_SRC(c) == BPF_K && k == 0)
				k = 1 + rndn(7);
			f[i] = (struct bpf_insn)BPF_STMT(c, k);
			break;
		}
		case 7: case 8: case 9: case 10:
			c = BPF_JMP | jmp[rndn(4)] | (rndn(2) ? BPF_K : BPF_X);
			f[i] = (struct bpf_insn)BPF_JUMP(c, rndn(3) ? rndn(256) : rnd(),
			    rndn(room + 1), rndn(room + 1));
			break;
		default:
			if (rndn(2))
				f[i] = (struct bpf_insn)BPF_JUMP(BPF_JMP | BPF_JA,
				    rndn(room + 1), 0, 0);
			else
				f[i] = (struct bpf_insn)BPF_STMT(BPF_RET |
				    (rndn(2) ? BPF_A : BPF_K), rnd());
			break;
		}
	}
	f[n - 1] = (struct bpf_insn)BPF_STMT(BPF_RET | (rndn(2) ? BPF_A : BPF_K),
	    rnd());
}

static void
test_random_programs(void)
{
	struct bpf_insn f[BPF_MEMWORDS + 48];
	unsigned i, n, bad = 0, acc = 0;

	for (i = 0; i < 400; i++) {
		n = BPF_MEMWORDS + 2 + rndn(46);
		rnd_program(f, n);
		bad += differ("random program", f, n, &acc) != 0;
	}
	ok(bad == 0, "400 random programs agree with libpcap (%u differ, "
	    "%u of %u runs accepted)", bad, acc, 400 * NPKTS);
}

/* Hand-written programs the loader must refuse, with the reason. */
static void
test_rejects(void)
{
	static const struct {
		const char	*what;
		struct bpf_insn	 f[3];
		unsigned	 n;
	} bad[] = {
		{ "conditional jump out of range", {
		    BPF_STMT(BPF_LD | BPF_IMM, 1),
		    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 1, 0, 1),
		    BPF_STMT(BPF_RET | BPF_A, 0) }, 3 },
		{ "ja out of range", {
		    BPF_JUMP(BPF_JMP | BPF_JA, 1, 0, 0),
		    BPF_STMT(BPF_RET | BPF_A, 0) }, 2 },
		{ "backward ja before the start", {
		    BPF_JUMP(BPF_JMP | BPF_JA, -2, 0, 0),
		    BPF_STMT(BPF_RET | BPF_A, 0) }, 2 },
		{ "ja to itself", {
		    BPF_JUMP(BPF_JMP | BPF_JA, -1, 0, 0),
		    BPF_STMT(BPF_RET | BPF_A, 0) }, 2 },
		{ "no ret at the end", {
		    BPF_STMT(BPF_LD | BPF_IMM, 1),
		    BPF_STMT(BPF_MISC | BPF_TAX, 0) }, 2 },
		{ "bad opcode 0xff", {
		    BPF_STMT(0xff, 0), BPF_STMT(BPF_RET | BPF_A, 0) }, 2 },
		{ "opcode above 0xff", {
		    BPF_STMT(0x106, 0), BPF_STMT(BPF_RET | BPF_A, 0) }, 2 },
		{ "ret x", { BPF_STMT(BPF_RET | BPF_X, 0) }, 1 },
		{ "ld half imm", {
		    BPF_STMT(BPF_LD | BPF_H | BPF_IMM, 0),
		    BPF_STMT(BPF_RET | BPF_A, 0) }, 2 },
		{ "st M[16]", {
		    BPF_STMT(BPF_ST, 16), BPF_STMT(BPF_RET | BPF_A, 0) }, 2 },
		{ "ld M[16]", {
		    BPF_STMT(BPF_LD | BPF_MEM, 16),
		    BPF_STMT(BPF_RET | BPF_A, 0) }, 2 },
		{ "ldx M[0xffffffff]", {
		    BPF_STMT(BPF_LDX | BPF_MEM, 0xffffffff),
		    BPF_STMT(BPF_RET | BPF_A, 0) }, 2 },
		{ "div #0", {
		    BPF_STMT(BPF_ALU | BPF_DIV | BPF_K, 0),
		    BPF_STMT(BPF_RET | BPF_A, 0) }, 2 },
		{ "mod #0", {
		    BPF_STMT(BPF_ALU | BPF_MOD | BPF_K, 0),
		    BPF_STMT(BPF_RET | BPF_A, 0) }, 2 },
		{ "lsh #32", {
		    BPF_STMT(BPF_ALU | BPF_LSH | BPF_K, 32),
		    BPF_STMT(BPF_RET | BPF_A, 0) }, 2 },
		{ "empty program", { BPF_STMT(BPF_RET | BPF_A, 0) }, 0 },
	};
	char err[128];
	struct snb_bpf *p;
	unsigned i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		p = snb_bpf_load(bad[i].f, bad[i].n, err, sizeof(err));
		ok(p == NULL && err[0] != '\0', "rejects %s: %s", bad[i].what,
		    err);
		snb_bpf_free(p);
	}
	/* A tiny errbuf is truncated, never overrun; NULL is allowed. */
	p = snb_bpf_load(bad[0].f, bad[0].n, err, 4);
	ok(p == NULL && strlen(err) == 3, "short errbuf truncates");
	ok(snb_bpf_load(bad[0].f, bad[0].n, NULL, 0) == NULL, "NULL errbuf");
}

/* Load and run a hand-written program on pkt; -1 if it fails to load. */
static long
run(const struct bpf_insn *f, unsigned n, const unsigned char *pkt,
    unsigned caplen, unsigned wirelen)
{
	char err[128];
	struct snb_bpf *p;
	unsigned r;

	if ((p = snb_bpf_load(f, n, err, sizeof(err))) == NULL) {
		printf("# load: %s\n", err);
		return -1;
	}
	r = snb_bpf_run(p, pkt, caplen, wirelen);
	snb_bpf_free(p);
	return r;
}

/*
 * Every ALU operation, with K and with X, against a known result and
 * against libpcap.  "ld #a; ldx #x; op; ret a" for X, and the K form
 * without the ldx.
 */
static void
test_alu(void)
{
	static const struct {
		uint16_t	op;
		uint32_t	a, v, want;
	} t[] = {
		{ BPF_ADD, 0xffffffff, 2, 1 },
		{ BPF_SUB, 1, 2, 0xffffffff },
		{ BPF_MUL, 0x10000, 0x10001, 0x10000 },
		{ BPF_DIV, 100, 7, 14 },
		{ BPF_DIV, 0xffffffff, 0x10000, 0xffff },
		{ BPF_MOD, 100, 7, 2 },
		{ BPF_AND, 0xf0f0, 0xff00, 0xf000 },
		{ BPF_OR, 0xf0f0, 0x0f00, 0xfff0 },
		{ BPF_XOR, 0xf0f0, 0xff00, 0x0ff0 },
		{ BPF_LSH, 0x80000003, 1, 6 },
		{ BPF_LSH, 0x80000003, 31, 0x80000000 },
		{ BPF_RSH, 0x80000003, 31, 1 },
		{ BPF_RSH, 0x80000003, 0, 0x80000003 },
	};
	static const unsigned char pkt[4];
	struct bpf_insn f[4];
	unsigned i;
	long r;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		f[0] = (struct bpf_insn)BPF_STMT(BPF_LD | BPF_IMM, t[i].a);
		f[1] = (struct bpf_insn)BPF_STMT(BPF_ALU | t[i].op | BPF_K, t[i].v);
		f[2] = (struct bpf_insn)BPF_STMT(BPF_RET | BPF_A, 0);
		r = run(f, 3, pkt, 4, 4);
		ok(r == t[i].want && r == bpf_filter(f, pkt, 4, 4),
		    "alu 0x%02x #%u: %#x op %#x = %#lx", t[i].op, t[i].v,
		    t[i].a, t[i].v, r);
		f[1] = (struct bpf_insn)BPF_STMT(BPF_LDX | BPF_IMM, t[i].v);
		f[2] = (struct bpf_insn)BPF_STMT(BPF_ALU | t[i].op | BPF_X, 0);
		f[3] = (struct bpf_insn)BPF_STMT(BPF_RET | BPF_A, 0);
		r = run(f, 4, pkt, 4, 4);
		ok(r == t[i].want && r == bpf_filter(f, pkt, 4, 4),
		    "alu 0x%02x x=%u: %#lx", t[i].op, t[i].v, r);
	}

	/* Division by X == 0 and shifts by X >= 32: as libpcap. */
	{
		static const struct { uint16_t op; uint32_t x, want; } z[] = {
			{ BPF_DIV, 0, 0 }, { BPF_MOD, 0, 0 },
			{ BPF_LSH, 32, 0 }, { BPF_RSH, 33, 0 },
			{ BPF_LSH, 0xffffffff, 0 },
		};

		for (i = 0; i < sizeof(z) / sizeof(z[0]); i++) {
			f[0] = (struct bpf_insn)BPF_STMT(BPF_LD | BPF_IMM, 7);
			f[1] = (struct bpf_insn)BPF_STMT(BPF_LDX | BPF_IMM, z[i].x);
			f[2] = (struct bpf_insn)BPF_STMT(BPF_ALU | z[i].op | BPF_X, 0);
			f[3] = (struct bpf_insn)BPF_STMT(BPF_RET | BPF_K, 99);
			if (z[i].op == BPF_LSH || z[i].op == BPF_RSH)
				f[3] = (struct bpf_insn)BPF_STMT(BPF_RET | BPF_A, 0);
			r = run(f, 4, pkt, 4, 4);
			ok(r == z[i].want && r == bpf_filter(f, pkt, 4, 4),
			    "alu 0x%02x by x=%u gives %ld", z[i].op, z[i].x, r);
		}
	}

	/* neg, tax, txa, jset, jgt x, jge x, jeq x in one program. */
	{
		static const struct bpf_insn g[] = {
			BPF_STMT(BPF_LD | BPF_IMM, 5),
			BPF_STMT(BPF_ALU | BPF_NEG, 0),		/* A = -5 */
			BPF_STMT(BPF_MISC | BPF_TAX, 0),	/* X = -5 */
			BPF_STMT(BPF_LD | BPF_IMM, 0),
			BPF_STMT(BPF_MISC | BPF_TXA, 0),	/* A = -5 */
			BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x80000000, 0, 6),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_X, 0, 0, 5),
			BPF_JUMP(BPF_JMP | BPF_JGE | BPF_X, 0, 0, 4),
			BPF_JUMP(BPF_JMP | BPF_JGT | BPF_X, 0, 3, 0),
			BPF_JUMP(BPF_JMP | BPF_JSET | BPF_X, 0, 0, 2),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xfffffffb, 0, 1),
			BPF_STMT(BPF_RET | BPF_K, 1),
			BPF_STMT(BPF_RET | BPF_K, 2),
		};
		unsigned n = sizeof(g) / sizeof(g[0]);

		r = run(g, n, pkt, 4, 4);
		ok(r == 1 && r == bpf_filter(g, pkt, 4, 4),
		    "neg, tax, txa and the X jumps (got %ld)", r);
	}
}

/* Loads right at caplen and at the 32-bit edges; BPF_LEN; MSH. */
static void
test_bounds(void)
{
	static const unsigned char bytes[8] = { 1, 2, 3, 4, 0x45, 6, 7, 8 };
	static const struct { uint16_t code; uint32_t x, k; } t[] = {
		{ BPF_LD | BPF_W | BPF_ABS, 0, 4 },
		{ BPF_LD | BPF_W | BPF_ABS, 0, 5 },
		{ BPF_LD | BPF_H | BPF_ABS, 0, 6 },
		{ BPF_LD | BPF_H | BPF_ABS, 0, 7 },
		{ BPF_LD | BPF_B | BPF_ABS, 0, 7 },
		{ BPF_LD | BPF_B | BPF_ABS, 0, 8 },
		{ BPF_LD | BPF_W | BPF_ABS, 0, 0xfffffffe },
		{ BPF_LD | BPF_W | BPF_IND, 2, 2 },
		{ BPF_LD | BPF_W | BPF_IND, 2, 3 },
		{ BPF_LD | BPF_W | BPF_IND, 0xffffffff, 1 },
		{ BPF_LD | BPF_H | BPF_IND, 0xfffffffe, 4 },
		{ BPF_LD | BPF_B | BPF_IND, 1, 0xffffffff },
		{ BPF_LD | BPF_B | BPF_IND, 7, 0 },
		{ BPF_LD | BPF_B | BPF_IND, 8, 0 },
	};
	struct bpf_insn f[4];
	unsigned char *pkt;
	unsigned i;
	long r;

	/* An exact-size copy, so ASan sees any byte beyond it. */
	if ((pkt = malloc(sizeof(bytes))) == NULL)
		abort();
	memcpy(pkt, bytes, sizeof(bytes));
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		f[0] = (struct bpf_insn)BPF_STMT(BPF_LDX | BPF_IMM, t[i].x);
		f[1] = (struct bpf_insn)BPF_STMT(t[i].code, t[i].k);
		f[2] = (struct bpf_insn)BPF_STMT(BPF_ALU | BPF_OR | BPF_K, 0x100);
		f[3] = (struct bpf_insn)BPF_STMT(BPF_RET | BPF_A, 0);
		r = run(f, 4, pkt, 8, 8);
		ok(r == bpf_filter(f, pkt, 8, 8), "load 0x%02x x=%#x k=%#x on "
		    "8 bytes: %#lx", t[i].code, t[i].x, t[i].k, r);
	}

	f[0] = (struct bpf_insn)BPF_STMT(BPF_LDX | BPF_MSH | BPF_B, 4);
	f[1] = (struct bpf_insn)BPF_STMT(BPF_MISC | BPF_TXA, 0);
	f[2] = (struct bpf_insn)BPF_STMT(BPF_RET | BPF_A, 0);
	ok(run(f, 3, pkt, 8, 8) == 20 && run(f, 3, pkt, 4, 8) == 0,
	    "ldxb 4*([4]&0xf) = 20, and 0 when [4] is past caplen");

	f[0] = (struct bpf_insn)BPF_STMT(BPF_LD | BPF_W | BPF_LEN, 0);
	f[1] = (struct bpf_insn)BPF_STMT(BPF_RET | BPF_A, 0);
	ok(run(f, 2, pkt, 8, 1500) == 1500 && run(f, 2, pkt, 8, 3) == 8,
	    "len is wirelen, raised to caplen when smaller");
	f[0] = (struct bpf_insn)BPF_STMT(BPF_LDX | BPF_W | BPF_LEN, 0);
	f[1] = (struct bpf_insn)BPF_STMT(BPF_MISC | BPF_TXA, 0);
	f[2] = (struct bpf_insn)BPF_STMT(BPF_RET | BPF_A, 0);
	ok(run(f, 3, pkt, 8, 1500) == 1500, "ldx len");
	free(pkt);
}

/* Scratch memory, backward jumps and the backward-jump limit. */
static void
test_control(void)
{
	static const struct bpf_insn mem[] = {
		BPF_STMT(BPF_LD | BPF_IMM, 11),
		BPF_STMT(BPF_ST, 15),
		BPF_STMT(BPF_LDX | BPF_IMM, 22),
		BPF_STMT(BPF_STX, 0),
		BPF_STMT(BPF_LD | BPF_MEM, 0),		/* A = 22 */
		BPF_STMT(BPF_LDX | BPF_MEM, 15),	/* X = 11 */
		BPF_STMT(BPF_ALU | BPF_SUB | BPF_X, 0),
		BPF_STMT(BPF_RET | BPF_A, 0),
	};
	/* Count A up to 10 with a backward ja. */
	static const struct bpf_insn loop[] = {
		BPF_STMT(BPF_LD | BPF_IMM, 0),
		BPF_STMT(BPF_ALU | BPF_ADD | BPF_K, 1),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 10, 1, 0),
		BPF_JUMP(BPF_JMP | BPF_JA, -3, 0, 0),
		BPF_STMT(BPF_RET | BPF_A, 0),
	};
	/* Never ends in libpcap; snb gives up after the limit. */
	static const struct bpf_insn forever[] = {
		BPF_STMT(BPF_ALU | BPF_ADD | BPF_K, 1),
		BPF_JUMP(BPF_JMP | BPF_JA, -2, 0, 0),
		BPF_STMT(BPF_RET | BPF_K, 1),
	};
	static const unsigned char pkt[1];

	ok(run(mem, 8, pkt, 1, 1) == 11 && bpf_filter(mem, pkt, 1, 1) == 11,
	    "scratch memory st/stx/ld/ldx");
	ok(run(loop, 5, pkt, 1, 1) == 10 && bpf_filter(loop, pkt, 1, 1) == 10,
	    "backward ja loop");
	ok(run(forever, 3, pkt, 1, 1) == 0, "endless loop stops and rejects");
}

int
main(void)
{
	unsigned i;

	for (i = 0; i < NPKTS; i++)
		make_packet(&pkts[i]);
	test_rejects();
	test_alu();
	test_bounds();
	test_control();
	test_exprs();
	test_random_programs();
	for (i = 0; i < NPKTS; i++)
		free(pkts[i].data);
	return tap_done();
}
