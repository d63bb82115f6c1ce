/*
 * test_lwaftr_conf: the softwire-config parser (apps/lwaftr/conf.c).
 *
 *  1. Every shipped configuration (the .conf files of
 *     ../shared/conformance/lwaftr, ../shared/bench/lwaftr/bench.conf)
 *     parses and builds a binding table; values spot-checked against
 *     the files.  The shared tree is found through $SNB_SHARED, ../shared
 *     from the working directory, or ../shared next to the repository
 *     holding this binary; absent, those tests are skipped.
 *  2. The older layout (psid-map, binding-table br-address lists, "br"
 *     indices, addresses in softwire-config's interface blocks).
 *  3. Errors: exact "FILE:LINE:COL: message" for each way a file can be
 *     wrong, made by editing one line of a small valid configuration.
 *  4. Random mutations of a valid file (byte changes, deletions,
 *     truncations, duplicated spans) never crash and either parse or give
 *     a well-formed message.  The sanitizer build makes "never crash"
 *     mean no invalid access either.
 *  5. A million softwires parse within the time budget.
 */
#include <sys/stat.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"
#include "util.h"
#include "../../apps/lwaftr/conf.c"
#include "../../apps/lwaftr/bt.c"
#include "../../apps/lwaftr/btlookup.c"

static char shared[4096];

static int
isdir(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int
find_shared(const char *argv0)
{
	char buf[4096], *d;
	const char *e = getenv("SNB_SHARED");
	int i;

	if (e && *e) {
		snprintf(shared, sizeof(shared), "%s", e);
		return isdir(shared);
	}
	if (isdir("../shared/conformance/lwaftr")) {
		snprintf(shared, sizeof(shared), "../shared");
		return 1;
	}
	/* BUILD/tests/test_x: the repository is three levels up */
	snprintf(buf, sizeof(buf), "%s", argv0);
	d = buf;
	for (i = 0; i < 3; i++)
		d = dirname(d);
	snprintf(shared, sizeof(shared), "%s/../shared", d);
	snprintf(buf, sizeof(buf), "%s/conformance/lwaftr", shared);
	return isdir(buf);
}

static int
ip4eq(uint32_t a, const char *s)
{
	struct in_addr x;

	return inet_pton(AF_INET, s, &x) == 1 && x.s_addr == a;
}

static int
ip6eq(const uint8_t *a, const char *s)
{
	uint8_t x[16];

	return inet_pton(AF_INET6, s, x) == 1 && memcmp(a, x, 16) == 0;
}

static int
maceq(const uint8_t *a, unsigned b0)
{
	int i;

	for (i = 0; i < 6; i++)
		if (a[i] != b0)
			return 0;
	return 1;
}

static int
streq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static int
load(struct lwaftr_conf *c, const char *dir, const char *name)
{
	char path[8192], err[512];
	int rc;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	rc = lwaftr_conf_load(c, path, err, sizeof(err));
	if (rc == -1)
		printf("# %s\n", err);
	return rc;
}

static int
namecmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
test_shipped(void)
{
	char dir[8192], err[512], *names[64];
	struct lwaftr_conf c;
	struct lwaftr_bt *bt;
	struct dirent *de;
	DIR *d;
	int n = 0, i, rc;
	size_t len;

	snprintf(dir, sizeof(dir), "%s/conformance/lwaftr", shared);
	if ((d = opendir(dir)) == NULL) {
		ok(0, "open %s", dir);
		return;
	}
	while ((de = readdir(d)) != NULL && n < 64) {
		len = strlen(de->d_name);
		if (len > 5 && strcmp(de->d_name + len - 5, ".conf") == 0)
			names[n++] = strdup(de->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof(names[0]), namecmp);
	ok(n >= 14, "found %d shipped .conf files", n);
	for (i = 0; i < n; i++) {
		rc = load(&c, dir, names[i]);
		bt = rc == 0 ? lwaftr_bt_build(c.sw, c.nsw, NULL, NULL, err,
		    sizeof(err)) : NULL;
		ok(rc == 0 && c.nsw == 12 && bt != NULL,
		    "%s parses, 12 softwires, binding table builds", names[i]);
		lwaftr_bt_free(bt);
		lwaftr_conf_free(&c);
		free(names[i]);
	}

	/* icmp_on_fail.conf, value by value */
	if (load(&c, dir, "icmp_on_fail.conf") == 0) {
		struct lwaftr_side *x = &c.ext, *y = &c.in;

		ok(c.nsw == 12 && ip4eq(c.sw[0].ipv4, "178.79.150.3") &&
		    c.sw[0].psid == 4 && c.sw[0].psid_length == 6 &&
		    c.sw[0].reserved_bits == 0 &&
		    ip6eq(c.sw[0].b4, "127:14:25:36:47:58:69:128") &&
		    ip6eq(c.sw[0].br, "1e:2:2:2:2:2:2:af"),
		    "icmp_on_fail: first softwire");
		ok(ip4eq(c.sw[11].ipv4, "178.79.150.2") &&
		    c.sw[11].psid == 7850 && c.sw[11].psid_length == 16 &&
		    ip6eq(c.sw[11].br, "1e:1:1:1:1:1:1:af"),
		    "icmp_on_fail: last softwire");
		ok(ip4eq(c.sw[2].ipv4, "178.79.150.1") && c.sw[2].psid == 0 &&
		    c.sw[2].psid_length == 0, "icmp_on_fail: psid-length 0");
		ok(ip4eq(*(uint32_t *)x->ip, "10.10.10.10") &&
		    maceq(x->mac, 0x12) && x->has_nh_mac && !x->has_nh_ip &&
		    maceq(x->nh_mac, 0x68), "icmp_on_fail: external addresses");
		ok(ip6eq(y->ip, "8:9:a:b:c:d:e:f") && maceq(y->mac, 0x22) &&
		    y->has_nh_mac && maceq(y->nh_mac, 0x44),
		    "icmp_on_fail: internal addresses");
		ok(x->reasm_max_frags == 40 && y->reasm_max_frags == 40 &&
		    x->reasm_max_packets == 20000 &&
		    x->err_rate_packets == 600000 && x->err_rate_period == 2,
		    "icmp_on_fail: reassembly and rate limits");
		ok(!x->allow_incoming_icmp && !y->allow_incoming_icmp &&
		    x->generate_icmp_errors && y->generate_icmp_errors &&
		    x->mtu == 1460 && y->mtu == 1500 && y->hairpinning &&
		    x->vlan_tag == -1 && y->vlan_tag == -1 &&
		    y->flow_label == 0 && !x->ingress_filter &&
		    !y->egress_filter, "icmp_on_fail: flags and defaults");
		lwaftr_conf_free(&c);
	} else
		ok(0, "icmp_on_fail.conf");

	if (load(&c, dir, "vlan.conf") == 0) {
		ok(c.ext.vlan_tag == 1092 && c.in.vlan_tag == 1638 &&
		    c.in.err_rate_packets == 6000 &&
		    c.ext.allow_incoming_icmp, "vlan.conf: tags 1092/1638");
		lwaftr_conf_free(&c);
	} else
		ok(0, "vlan.conf");
	if (load(&c, dir, "no_icmp_with_filters_accept.conf") == 0) {
		ok(streq(c.ext.ingress_filter, "ip") &&
		    streq(c.ext.egress_filter, "ip") &&
		    streq(c.in.ingress_filter, "ip6") &&
		    streq(c.in.egress_filter, "ip6") &&
		    !c.ext.generate_icmp_errors,
		    "filters_accept: bare-word filters");
		lwaftr_conf_free(&c);
	} else
		ok(0, "no_icmp_with_filters_accept.conf");
	if (load(&c, dir, "no_icmp_with_filters_drop.conf") == 0) {
		ok(streq(c.ext.ingress_filter, "len < 0") &&
		    streq(c.ext.egress_filter, "len < 0") &&
		    streq(c.in.ingress_filter, "len < 0") &&
		    streq(c.in.egress_filter, "len < 0"),
		    "filters_drop: quoted filters");
		lwaftr_conf_free(&c);
	} else
		ok(0, "no_icmp_with_filters_drop.conf");
	if (load(&c, dir, "no_hairpin.conf") == 0) {
		ok(!c.in.hairpinning && !c.in.generate_icmp_errors,
		    "no_hairpin: hairpinning false");
		lwaftr_conf_free(&c);
	} else
		ok(0, "no_hairpin.conf");
	if (load(&c, dir, "big_mtu_no_icmp.conf") == 0) {
		ok(c.ext.mtu == 1960 && c.in.mtu == 2000, "big_mtu: mtus");
		lwaftr_conf_free(&c);
	} else
		ok(0, "big_mtu_no_icmp.conf");
	if (load(&c, dir, "no_icmp_maxfrags1.conf") == 0) {
		ok(c.ext.reasm_max_frags == 1 && c.in.reasm_max_frags == 1 &&
		    c.in.reasm_max_packets == 10 &&
		    c.ext.reasm_max_packets == 20000, "maxfrags1: limits");
		lwaftr_conf_free(&c);
	} else
		ok(0, "no_icmp_maxfrags1.conf");
	if (load(&c, dir, "tunnel_icmp_without_mac4.conf") == 0) {
		ok(c.ext.has_nh_ip && !c.ext.has_nh_mac &&
		    ip4eq(*(uint32_t *)c.ext.nh_ip, "4.5.6.7") &&
		    c.in.has_nh_mac, "without_mac4: IPv4 next hop by IP");
		lwaftr_conf_free(&c);
	} else
		ok(0, "tunnel_icmp_without_mac4.conf");
	if (load(&c, dir, "tunnel_icmp_withoutmac.conf") == 0) {
		ok(c.in.has_nh_ip && !c.in.has_nh_mac &&
		    ip6eq(c.in.nh_ip, "8:9:a:b:4:3:2:1"),
		    "withoutmac: IPv6 next hop by IP");
		lwaftr_conf_free(&c);
	} else
		ok(0, "tunnel_icmp_withoutmac.conf");
	if (load(&c, dir, "small_ipv4_mtu_icmp.conf") == 0) {
		ok(c.ext.mtu == 576 && c.in.mtu == 1500, "small_ipv4_mtu: 576");
		lwaftr_conf_free(&c);
	} else
		ok(0, "small_ipv4_mtu_icmp.conf");

	snprintf(dir, sizeof(dir), "%s/bench/lwaftr", shared);
	rc = load(&c, dir, "bench.conf");
	bt = rc == 0 ? lwaftr_bt_build(c.sw, c.nsw, NULL, NULL, err,
	    sizeof(err)) : NULL;
	ok(rc == 0 && bt != NULL && c.nsw > 0,
	    "bench.conf parses (%zu softwires) and builds", c.nsw);
	lwaftr_bt_free(bt);
	lwaftr_conf_free(&c);
}

/* ---- the older layout ---- */

static const char old_layout[] =
    "// the layout of older lwAFTR releases\n"
    "softwire-config {\n"
    "  binding-table {\n"
    "    br-address 8:9:a:b:c:d:e:f;\n"
    "    br-address 1e:1:1:1:1:1:1:af;\n"
    "    psid-map { addr 178.79.150.233; psid-length 16; }\n"
    "    psid-map { addr 178.79.150.15; end-addr 178.79.150.16;\n"
    "      psid-length 4; shift 10; }\n"
    "    softwire { ipv4 178.79.150.233; psid 80; b4-ipv6 127:2:3:4:5:6:7:128; }\n"
    "    softwire { ipv4 178.79.150.16; psid 1; padding 0; br 1;\n"
    "      b4-ipv6 127:22:33:44:55:66:77:128; }\n"
    "    softwire { ipv4 178.79.150.1; psid 0; b4-ipv6 ::1;\n"
    "      br-address ::2; port-set { psid-length 0; } }\n"
    "  }\n"
    "  external-interface { ip 10.10.10.10; mac 12:12:12:12:12:12;\n"
    "    next-hop { ip 4.5.6.7; } vlan-tag 7; }\n"
    "  internal-interface { ip 8:9:a:b:c:d:e:f; mac 22:22:22:22:22:22;\n"
    "    next-hop { mac 44:44:44:44:44:44; } flow-label 5;\n"
    "    ingress-filter \"ip6 and \\\"x\\\"\\n\"; egress-filter 'a\\b'; }\n"
    "}\n";

static void
test_old_layout(void)
{
	struct lwaftr_conf c;
	struct lwaftr_bt *bt = NULL;
	char err[512] = "";
	int rc;

	rc = lwaftr_conf_parse(&c, old_layout, "old.conf", err, sizeof(err));
	if (rc == -1)
		printf("# %s\n", err);
	ok(rc == 0 && c.nsw == 3, "old layout parses");
	if (rc == -1)
		return;
	ok(c.sw[0].psid_length == 16 && c.sw[0].reserved_bits == 0 &&
	    ip6eq(c.sw[0].br, "8:9:a:b:c:d:e:f"),
	    "old layout: psid-map and default br 0");
	ok(c.sw[1].psid_length == 4 && c.sw[1].reserved_bits == 2 &&
	    ip6eq(c.sw[1].br, "1e:1:1:1:1:1:1:af"),
	    "old layout: psid-map range with shift, br 1");
	ok(c.sw[2].psid_length == 0 && ip6eq(c.sw[2].br, "::2"),
	    "old layout: per-softwire br-address and port-set mix");
	ok(c.ext.has_nh_ip && c.ext.vlan_tag == 7 && c.in.flow_label == 5 &&
	    c.in.has_nh_mac, "old layout: addresses in softwire-config");
	ok(streq(c.in.ingress_filter, "ip6 and \"x\"\n") &&
	    streq(c.in.egress_filter, "a\\b"), "string escapes");
	bt = lwaftr_bt_build(c.sw, c.nsw, NULL, NULL, err, sizeof(err));
	ok(bt && lwaftr_bt_lookup(bt, c.sw[1].ipv4, htons(1 << 10 | 1023)) ==
	    &bt->sw[lwaftr_bt_lookup(bt, c.sw[1].ipv4, htons(1 << 10)) -
	    bt->sw] && lwaftr_bt_lookup(bt, c.sw[1].ipv4, htons(1 << 10)) !=
	    NULL && lwaftr_bt_lookup(bt, c.sw[1].ipv4, htons(2 << 10)) ==
	    NULL, "old layout: table built, shift 10 respected");
	lwaftr_bt_free(bt);
	lwaftr_conf_free(&c);
}

/* ---- errors ---- */

/* Line numbers are what the error cases below count on. */
static const char base[] =
    "softwire-config {\n"				/* 1 */
    "  external-interface {\n"				/* 2 */
    "    mtu 1460;\n"					/* 3 */
    "  }\n"						/* 4 */
    "  internal-interface {\n"				/* 5 */
    "    hairpinning true;\n"				/* 6 */
    "  }\n"						/* 7 */
    "  instance {\n"					/* 8 */
    "    device test;\n"				/* 9 */
    "    queue {\n"					/* 10 */
    "      id 0;\n"					/* 11 */
    "      external-interface {\n"			/* 12 */
    "        ip 10.10.10.10;\n"				/* 13 */
    "        mac 12:12:12:12:12:12;\n"			/* 14 */
    "        next-hop { mac 68:68:68:68:68:68; }\n"	/* 15 */
    "      }\n"						/* 16 */
    "      internal-interface {\n"			/* 17 */
    "        ip 8:9:a:b:c:d:e:f;\n"			/* 18 */
    "        mac 22:22:22:22:22:22;\n"			/* 19 */
    "        next-hop { ip 8:9:a:b:4:3:2:1; }\n"		/* 20 */
    "      }\n"						/* 21 */
    "    }\n"						/* 22 */
    "  }\n"						/* 23 */
    "  binding-table {\n"				/* 24 */
    "    softwire {\n"					/* 25 */
    "      ipv4 178.79.150.3;\n"			/* 26 */
    "      psid 4;\n"					/* 27 */
    "      b4-ipv6 127:14:25:36:47:58:69:128;\n"		/* 28 */
    "      br-address 1e:2:2:2:2:2:2:af;\n"		/* 29 */
    "      port-set { psid-length 6; }\n"		/* 30 */
    "    }\n"						/* 31 */
    "  }\n"						/* 32 */
    "}\n";						/* 33 */

struct ecase {
	const char	*from, *to;	/* replace the first from with to */
					/* (from NULL: append to) */
	const char	*want;		/* NULL: must parse */
};

static const struct ecase ecases[] = {
	{ "mtu 1460;", "mtux 1460;",
	    "t.conf:3:5: unknown field 'mtux' in external-interface" },
	{ "mtu 1460;", "mtu 1460; mtu 1500;",
	    "t.conf:3:15: duplicate field 'mtu' in external-interface "
	    "(first at 3:5)" },
	{ "mtu 1460;", "mtu 50;",
	    "t.conf:3:9: 'mtu' out of range: 50 (68..65535)" },
	{ "mtu 1460;", "mtu 1460x;",
	    "t.conf:3:9: bad number '1460x' for 'mtu'" },
	{ "mtu 1460;", "mtu 99999999999;",
	    "t.conf:3:9: bad number '99999999999' for 'mtu'" },
	{ "mtu 1460;", "mtu -1;",
	    "t.conf:3:9: bad number '-1' for 'mtu'" },
	{ "hairpinning true;", "mtu 1279;",
	    "t.conf:6:9: 'mtu' out of range: 1279 (1280..65535)" },
	{ "hairpinning true;", "hairpinning yes;",
	    "t.conf:6:17: bad boolean 'yes' for 'hairpinning' (true or "
	    "false)" },
	{ "hairpinning true;", "flow-label 1048576;",
	    "t.conf:6:16: 'flow-label' out of range: 1048576 (0..1048575)" },
	{ "mtu 1460;", "hairpinning false;",
	    "t.conf:3:5: unknown field 'hairpinning' in external-interface" },
	{ "ip 10.10.10.10;", "ip 10.10.10.256;",
	    "t.conf:13:12: bad IPv4 address '10.10.10.256' for 'ip'" },
	{ "ip 10.10.10.10;", "ip 10.10.10;",
	    "t.conf:13:12: bad IPv4 address '10.10.10' for 'ip'" },
	{ "ip 10.10.10.10;", "ip 10.010.10.10;",
	    "t.conf:13:12: bad IPv4 address '10.010.10.10' for 'ip'" },
	{ "ip 8:9:a:b:c:d:e:f;", "ip 8:9:a:b:c:d:e:g;",
	    "t.conf:18:12: bad IPv6 address '8:9:a:b:c:d:e:g' for 'ip'" },
	{ "ip 8:9:a:b:c:d:e:f;", "ip 10.10.10.10;",
	    "t.conf:18:12: bad IPv6 address '10.10.10.10' for 'ip'" },
	{ "mac 12:12:12:12:12:12;", "mac 12:12:12:12:12;",
	    "t.conf:14:13: bad MAC address '12:12:12:12:12' for 'mac'" },
	{ "mac 12:12:12:12:12:12;", "mac 12:12:12:12:12:123;",
	    "t.conf:14:13: bad MAC address '12:12:12:12:12:123' for 'mac'" },
	{ "psid-length 6;", "psid-length 17;",
	    "t.conf:30:30: 'psid-length' out of range: 17 (0..16)" },
	{ "psid 4;", "psid 64;",
	    "t.conf:27:12: psid 64 out of range for psid-length 6 (0..63)" },
	{ "psid 4;", "psid 65536;",
	    "t.conf:27:12: 'psid' out of range: 65536 (0..65535)" },
	{ "psid-length 6;", "psid-length 6; reserved-ports-bit-count 11;",
	    "t.conf:30:33: psid-length 6 + reserved-ports-bit-count 11 is "
	    "more than 16" },
	{ "port-set { psid-length 6; }", "port-set { }",
	    "t.conf:30:7: port-set: missing 'psid-length'" },
	{ "mac 12:12:12:12:12:12;", "mac 12:12:12:12:12:12; vlan-tag 4096;",
	    "t.conf:14:41: 'vlan-tag' out of range: 4096 (0..4095)" },
	{ "ipv4 178.79.150.3;", "",
	    "t.conf:25:5: softwire: missing 'ipv4'" },
	{ "psid 4;", "",
	    "t.conf:25:5: softwire: missing 'psid'" },
	{ "b4-ipv6 127:14:25:36:47:58:69:128;", "",
	    "t.conf:25:5: softwire: missing 'b4-ipv6'" },
	{ "br-address 1e:2:2:2:2:2:2:af;", "",
	    "t.conf:25:5: softwire: missing 'br-address'" },
	{ "port-set { psid-length 6; }", "",
	    "t.conf:25:5: softwire: missing 'port-set'" },
	{ "br-address 1e:2:2:2:2:2:2:af;", "br-address ::1; br 0;",
	    "t.conf:29:23: both 'br' and 'br-address' given" },
	{ "ip 10.10.10.10;", "",
	    "t.conf:12:7: external-interface: missing 'ip'" },
	{ "mac 22:22:22:22:22:22;", "",
	    "t.conf:17:7: internal-interface: missing 'mac'" },
	{ "next-hop { mac 68:68:68:68:68:68; }", "next-hop { }",
	    "t.conf:15:9: next-hop: needs 'ip' or 'mac'" },
	{ "next-hop { mac 68:68:68:68:68:68; }", "",
	    "t.conf:12:7: external-interface: missing 'next-hop'" },
	{ "    queue {\n", "    queue { }\n    queue {\n",
	    "t.conf:11:5: only one queue is supported" },
	{ "mtu 1460;", "mtu 1460; vlan-tag 5;", NULL },
	{ "mac 12:12:12:12:12:12;", "mac 12:12:12:12:12:12; vlan-tag 6;",
	    NULL },
	{ NULL, "/* no end",
	    "t.conf:34:1: unterminated comment" },
	{ "mtu 1460;", "ingress-filter \"ip;",
	    "t.conf:3:20: unterminated string" },
	{ "mtu 1460;", "ingress-filter \"a\\qb\";",
	    "t.conf:3:22: bad escape in string (\\n \\t \\\" \\\\)" },
	{ "  }\n}\n", "  }\n",
	    "t.conf:1:1: unterminated block 'softwire-config'" },
	{ NULL, "}\n",
	    "t.conf:34:1: expected 'softwire-config', got '}'" },
	{ "softwire-config {", "foo;\nsoftwire-config {",
	    "t.conf:1:1: unknown field 'foo' at top level" },
	{ NULL, "softwire-config { }\n",
	    "t.conf:34:1: duplicate field 'softwire-config' (first at 1:1)" },
	{ "mtu 1460;", "mtu { }",
	    "t.conf:3:9: expected a value for 'mtu', got '{'" },
	{ "mtu 1460;", "reassembly 5;",
	    "t.conf:3:16: expected '{' after 'reassembly', got '5'" },
	{ "mtu 1460;", "mtu 1460",
	    "t.conf:4:3: expected ';' after the value of 'mtu', got '}'" },
	{ "mtu 1460;", "mtu 1460 1500;",
	    "t.conf:3:14: expected ';' after the value of 'mtu', got '1500'" },
	{ "mtu 1460;", "mtu 1460; \"x\";",
	    "t.conf:3:15: expected a field name in external-interface, got "
	    "'x'" },
	{ "mtu 1460;", "mtu 1460; \001",
	    "t.conf:3:15: unexpected byte 0x01" },
	{ "mtu 1460;", "error-rate-limiting { period 0; }",
	    "t.conf:3:34: 'period' out of range: 0 (1..4294967295)" },
	{ "mtu 1460;", "reassembly { max-packets 1; max-packets 2; }",
	    "t.conf:3:33: duplicate field 'max-packets' in reassembly "
	    "(first at 3:18)" },
	{ "mtu 1460;", "mtu 1460; // comment\n /* c\n */ mtu/**/1500;",
	    "t.conf:5:5: duplicate field 'mtu' in external-interface "
	    "(first at 3:5)" },
	{ "softwire {", "softwire { br 3;",
	    "t.conf:29:7: both 'br' and 'br-address' given" },
	{ "  binding-table {\n", "  binding-table {\n"
	    "    psid-map { addr 1.2.3.4; end-addr 1.2.3.5; psid-length 1; }\n"
	    "    psid-map { addr 1.2.3.5; psid-length 1; }\n",
	    "t.conf:26:5: psid-map overlaps the one at 25:5" },
	{ "  binding-table {\n", "  binding-table {\n"
	    "    psid-map { addr 1.2.3.4; psid-length 6; shift 11; }\n",
	    "t.conf:25:51: psid-length 6 + shift 11 is more than 16" },
	{ "mtu 1460;", "mtu '1460';", NULL },
	{ "mtu 1460;", "reassembly { max-packets 0; }",
	    "t.conf:3:30: 'max-packets' out of range: 0 (1..16777216)" },
	{ "mtu 1460;", "reassembly { max-packets 16777217; }",
	    "t.conf:3:30: 'max-packets' out of range: 16777217 (1..16777216)" },
	{ "mtu 1460;", "reassembly { max-fragments-per-packet 0; }",
	    "t.conf:3:43: 'max-fragments-per-packet' out of range: 0 "
	    "(1..4294967295)" },
	{ "mtu 1460;", "ingress-filter 'ip'; egress-filter \"tcp\";", NULL },
};

static char *
edit(const char *s, const char *from, const char *to)
{
	const char *at = from ? strstr(s, from) : s + strlen(s);
	size_t a, f = from ? strlen(from) : 0, t = strlen(to);
	char *r;

	if (at == NULL)
		return NULL;
	a = at - s;
	r = malloc(strlen(s) - f + t + 1);
	memcpy(r, s, a);
	memcpy(r + a, to, t);
	strcpy(r + a + t, at + f);
	return r;
}

/*
 * Binding-table conflicts: the file parses, the table refuses it, and
 * the message names the later softwire's position and the earlier's.
 */
static const struct ecase btcases[] = {
	/* the same (ipv4, psid) twice, port sets given per softwire */
	{ "  binding-table {\n", "  binding-table {\n"
	    "    softwire { ipv4 178.79.150.3; psid 4; b4-ipv6 ::1;\n"
	    "      br-address ::2; port-set { psid-length 6; } }\n",
	    "t.conf:27:5: softwire (178.79.150.3 psid 4) duplicates the one "
	    "at 25:5" },
	/* ... and in the older layout: port set from a psid-map, BR by index */
	{ "  binding-table {\n", "  binding-table {\n"
	    "    br-address ::9;\n"
	    "    psid-map { addr 1.2.3.4; psid-length 4; }\n"
	    "    softwire { ipv4 1.2.3.4; psid 1; b4-ipv6 ::1; }\n"
	    "    softwire { ipv4 1.2.3.4; psid 1; b4-ipv6 ::2; br 0; }\n",
	    "t.conf:28:5: softwire (1.2.3.4 psid 1) duplicates the one at "
	    "27:5" },
	/* one IPv4 address, two shapes of port set */
	{ "  binding-table {\n", "  binding-table {\n"
	    "    softwire { ipv4 178.79.150.3; psid 1; b4-ipv6 ::1; "
	    "br-address ::2;\n      port-set { psid-length 4; } }\n",
	    "t.conf:27:5: softwire (178.79.150.3 psid 4) shares its ipv4 with "
	    "the one at 25:5 but not its port set (psid-length 4 there, 6 "
	    "here; reserved-ports-bit-count 0 there, 0 here)" },
	{ "port-set { psid-length 6; }", "port-set { psid-length 6; "
	    "reserved-ports-bit-count 1; }\n    }\n    softwire { ipv4 "
	    "178.79.150.3; psid 5; b4-ipv6 ::1; br-address ::2;\n"
	    "      port-set { psid-length 6; }",
	    "t.conf:32:5: softwire (178.79.150.3 psid 5) shares its ipv4 with "
	    "the one at 25:5 but not its port set (psid-length 6 there, 6 "
	    "here; reserved-ports-bit-count 1 there, 0 here)" },
};

static void
bt_error(const struct ecase *e)
{
	struct lwaftr_conf c;
	struct lwaftr_bt *bt = NULL;
	char err[512], *text;
	int rc;

	text = edit(base, e->from, e->to);
	err[0] = '\0';
	rc = lwaftr_conf_parse(&c, text, "t.conf", err, sizeof(err));
	if (rc == 0)
		bt = lwaftr_bt_build(c.sw, c.nsw, c.sw_at, "t.conf", err,
		    sizeof(err));
	ok(rc == 0 && bt == NULL && strcmp(err, e->want) == 0, "%s", e->want);
	if (strcmp(err, e->want) != 0)
		printf("#   got: %s\n", err);
	lwaftr_bt_free(bt);
	lwaftr_conf_free(&c);
	free(text);
}

static void
test_errors(void)
{
	struct lwaftr_conf c;
	struct lwaftr_bt *bt;
	char err[512], *text;
	size_t i;
	int rc;

	strcpy(err, "junk");
	rc = lwaftr_conf_parse(&c, base, "t.conf", err, sizeof(err));
	ok(rc == 0 && err[0] == '\0' && c.nsw == 1,
	    "the base of the error cases parses");
	lwaftr_conf_free(&c);

	for (i = 0; i < sizeof(ecases) / sizeof(ecases[0]); i++) {
		const struct ecase *e = &ecases[i];

		if ((text = edit(base, e->from, e->to)) == NULL) {
			ok(0, "case %zu: '%s' not in the base", i, e->from);
			continue;
		}
		err[0] = '\0';
		rc = lwaftr_conf_parse(&c, text, "t.conf", err, sizeof(err));
		if (e->want == NULL)
			ok(rc == 0, "parses: %s", e->to);
		else
			ok(rc == -1 && strcmp(err, e->want) == 0 &&
			    c.sw == NULL && c.nsw == 0, "%s", e->want);
		if (e->want && strcmp(err, e->want) != 0)
			printf("#   got: %s\n", err);
		lwaftr_conf_free(&c);
		free(text);
	}

	/* one field set in two blocks is a duplicate too */
	text = edit(base, "mtu 1460;", "mtu 1460; vlan-tag 5;");
	{
		char *t2 = edit(text, "mac 12:12:12:12:12:12;",
		    "mac 12:12:12:12:12:12; vlan-tag 6;");

		rc = lwaftr_conf_parse(&c, t2, "t.conf", err, sizeof(err));
		ok(rc == -1 && strcmp(err, "t.conf:14:32: duplicate field "
		    "'vlan-tag' in external-interface (first at 3:15)") == 0,
		    "vlan-tag in both external-interface blocks: %s", err);
		free(t2);
	}
	free(text);
	text = edit(base, "ip 10.10.10.10;", "ip 10.10.10.10; mac 1:2:3:4:5:6;");
	rc = lwaftr_conf_parse(&c, text, "t.conf", err, sizeof(err));
	ok(rc == -1 && strcmp(err, "t.conf:14:9: duplicate field 'mac' in "
	    "external-interface (first at 13:25)") == 0, "%s", err);
	free(text);

	rc = lwaftr_conf_parse(&c, "", "t.conf", err, sizeof(err));
	ok(rc == -1 && strcmp(err, "t.conf:1:1: no softwire-config block") ==
	    0, "empty text: %s", err);
	rc = lwaftr_conf_parse(&c, "\n\n  // just a comment", "t.conf", err,
	    sizeof(err));
	ok(rc == -1 && strcmp(err, "t.conf:3:20: no softwire-config block") ==
	    0, "only a comment: %s", err);
	rc = lwaftr_conf_parse(&c, base, "t.conf", NULL, 0);
	ok(rc == 0, "no error buffer, valid text");
	lwaftr_conf_free(&c);
	text = edit(base, "mtu 1460;", "mtu x;");
	rc = lwaftr_conf_parse(&c, text, "t.conf", NULL, 0);
	ok(rc == -1, "no error buffer, invalid text");
	rc = lwaftr_conf_parse(&c, text, "t.conf", err, 12);
	ok(rc == -1 && strcmp(err, "t.conf:3:9:") == 0,
	    "short error buffer truncates: '%s'", err);
	free(text);

	/* a duplicate (ipv4, psid) parses; the table refuses it */
	text = edit(base, "  binding-table {\n", "  binding-table {\n"
	    "    softwire { ipv4 178.79.150.3; psid 4; b4-ipv6 ::1;\n"
	    "      br-address ::2; port-set { psid-length 6; } }\n");
	rc = lwaftr_conf_parse(&c, text, "t.conf", err, sizeof(err));
	bt = rc == 0 ? lwaftr_bt_build(c.sw, c.nsw, NULL, NULL, err,
	    sizeof(err)) : NULL;
	ok(rc == 0 && bt == NULL && strcmp(err, "softwire 2 (178.79.150.3 "
	    "psid 4) duplicates softwire 1") == 0, "duplicate softwire: %s",
	    err);
	lwaftr_conf_free(&c);
	free(text);
	for (i = 0; i < sizeof(btcases) / sizeof(btcases[0]); i++)
		bt_error(&btcases[i]);
}

static void
test_files(void)
{
	struct lwaftr_conf c;
	char path[] = "/tmp/test_lwaftr_conf.XXXXXX", err[512], *text;
	FILE *f;
	int fd, rc;

	rc = lwaftr_conf_load(&c, "/nonexistent/x.conf", err, sizeof(err));
	ok(rc == -1 && strcmp(err, "/nonexistent/x.conf: No such file or "
	    "directory") == 0, "missing file: %s", err);
	rc = lwaftr_conf_load(&c, "/", err, sizeof(err));
	ok(rc == -1 && strncmp(err, "/: ", 3) == 0, "a directory: %s", err);

	if ((fd = mkstemp(path)) == -1 || (f = fdopen(fd, "w")) == NULL) {
		ok(0, "mkstemp");
		return;
	}
	fwrite(base, 1, sizeof(base) - 1, f);
	fclose(f);
	rc = lwaftr_conf_load(&c, path, err, sizeof(err));
	ok(rc == 0 && c.nsw == 1, "load from a file");
	lwaftr_conf_free(&c);

	/* a NUL byte in a file is a byte like any other: an error */
	text = edit(base, "mtu 1460;", "mtu 1460; ");
	text[strstr(text, "mtu 1460; ") - text + 9] = '\0';
	f = fopen(path, "w");
	fwrite(text, 1, strlen(base) + 1, f);
	fclose(f);
	rc = lwaftr_conf_load(&c, path, err, sizeof(err));
	ok(rc == -1 && strstr(err, ":3:14: unexpected byte 0x00") != NULL,
	    "NUL byte in a file: %s", err);
	free(text);
	unlink(path);
}

/* ---- random mutations ---- */

static const char *tokens[] = {
	"{", "}", ";", "\"", "'", "/*", "*/", "//", "\n", " ", "softwire",
	"softwire {", "port-set {", "psid-length 16;", "psid 0;", "ipv4 1.2.3.4;",
	"b4-ipv6 ::1;", "br 0;", "br-address ::;", "psid-map {", "addr",
	"65535", "4294967296", "-", "\\", "\0", "\377", "next-hop {",
	"vlan-tag", "binding-table {", "instance {", "queue {",
};

/* A message is "FILE:LINE:COL: text" with LINE and COL in range. */
static int
wellformed(const char *err, const char *file, int maxline)
{
	size_t n = strlen(file);
	char *end;
	long line, col;

	if (strncmp(err, file, n) != 0 || err[n] != ':')
		return 0;
	line = strtol(err + n + 1, &end, 10);
	if (*end != ':' || line < 1 || line > maxline)
		return 0;
	col = strtol(end + 1, &end, 10);
	return *end == ':' && end[1] == ' ' && end[2] != '\0' && col >= 1;
}

static int
count_lines(const char *s, size_t n)
{
	int l = 1;
	size_t i;

	for (i = 0; i < n; i++)
		l += s[i] == '\n';
	return l;
}

static void
test_mutations(const char *seed, size_t seedlen)
{
	struct lwaftr_conf c;
	struct lwaftr_bt *bt;
	char err[512], *buf;
	size_t len, cap = seedlen * 2 + 4096, a, b, k;
	int i, j, ops, rounds = 20000, parsed = 0, bad = 0, built = 0;
	double t0 = now();

	buf = malloc(cap + 1);
	for (i = 0; i < rounds; i++) {
		memcpy(buf, seed, seedlen);
		len = seedlen;
		ops = 1 + rndn(4);
		for (j = 0; j < ops; j++) {
			a = rndn(len + 1);
			switch (rndn(6)) {
			case 0:		/* change a byte */
				if (len)
					buf[rndn(len)] = rndn(4) ? (char)rnd() :
					    "{};\"'/*\n \\:.0"[rndn(14)];
				break;
			case 1:		/* delete a span */
				b = a + rndn(64);
				if (b > len)
					b = len;
				memmove(buf + a, buf + b, len - b);
				len -= b - a;
				break;
			case 2:		/* truncate */
				len = a;
				break;
			case 3:		/* duplicate a span */
				b = a + rndn(200);
				if (b > len)
					b = len;
				if (len + (b - a) > cap)
					break;
				k = rndn(len + 1);
				memmove(buf + k + (b - a), buf + k, len - k);
				memmove(buf + k, buf + (a < k ? a :
				    a + (b - a)), b - a);
				len += b - a;
				break;
			default: {	/* insert a token */
				const char *t = tokens[rndn(sizeof(tokens) /
				    sizeof(tokens[0]))];
				size_t tl = *t ? strlen(t) : 1;

				if (len + tl > cap)
					break;
				memmove(buf + a + tl, buf + a, len - a);
				memcpy(buf + a, t, tl);
				len += tl;
				break;
			}
			}
		}
		buf[len] = '\0';
		/* the text handed over ends at its first NUL, as a C string */
		len = strlen(buf);
		if (lwaftr_conf_parse(&c, buf, "m.conf", err,
		    sizeof(err)) == 0) {
			parsed++;
			bt = lwaftr_bt_build(c.sw, c.nsw, NULL, NULL, err,
			    sizeof(err));
			if (bt) {
				built++;
				if (c.nsw)
					(void)lwaftr_bt_lookup(bt, c.sw[0].ipv4,
					    0);
			}
			lwaftr_bt_free(bt);
		} else if (!wellformed(err, "m.conf", count_lines(buf, len)) ||
		    c.sw != NULL) {
			if (bad++ < 5)
				printf("# bad message: %s\n", err);
		}
		lwaftr_conf_free(&c);
	}
	free(buf);
	printf("# %d mutations: %d parsed (%d built), %.2f s\n", rounds,
	    parsed, built, now() - t0);
	ok(bad == 0, "mutated configs: no crash, every message well-formed");
}

/* ---- a million softwires ---- */

static void
test_big(void)
{
	size_t n = 1000000 / scale(), i, cap = n * 140 + 4096, len;
	struct lwaftr_conf c;
	struct lwaftr_bt *bt;
	char err[512], *text;
	double t0, t1, t2, c0, c1;
	const char *head = strstr(base, "  binding-table {\n");
	int rc;

	text = malloc(cap);
	len = head - base;
	memcpy(text, base, len);
	len += sprintf(text + len, "  binding-table {\n");
	for (i = 0; i < n; i++) {
		uint32_t a = 0x0a000000 + (uint32_t)(i >> 4);

		len += sprintf(text + len, "    softwire { ipv4 %u.%u.%u.%u; "
		    "psid %zu; b4-ipv6 2001:db8::%x:%zx; br-address 2001:db8::1;"
		    " port-set { psid-length 4; } }\n", a >> 24, a >> 16 & 255,
		    a >> 8 & 255, a & 255, i & 15, (unsigned)(i >> 16),
		    i & 0xffff);
	}
	len += sprintf(text + len, "  }\n}\n");
	t0 = now();
	c0 = cpu();
	rc = lwaftr_conf_parse(&c, text, "big.conf", err, sizeof(err));
	t1 = now();
	c1 = cpu();
	bt = rc == 0 ? lwaftr_bt_build(c.sw, c.nsw, NULL, NULL, err,
	    sizeof(err)) : NULL;
	t2 = now();
	printf("# %zu softwires, %.1f MB: parse %.3f s (cpu %.3f s), build "
	    "%.3f s\n", n, len / 1e6, t1 - t0, c1 - c0, t2 - t1);
	ok(rc == 0 && c.nsw == n && bt != NULL, "%zu softwires parse and "
	    "build", n);
	if (scale() == 1)
		ok(c1 - c0 < 2.0, "1M softwires parse in under 2 s of CPU "
		    "(%.3f s)", c1 - c0);
	lwaftr_bt_free(bt);
	lwaftr_conf_free(&c);
	free(text);
}

int
main(int argc, char **argv)
{
	char path[8192], *seed = NULL;
	long len = 0;
	FILE *f;

	rngstate = 0x2545f4914f6cdd1dULL;	/* this test's own stream */

	if (find_shared(argv[0])) {
		test_shipped();
		snprintf(path, sizeof(path),
		    "%s/conformance/lwaftr/icmp_on_fail.conf", shared);
		if ((f = fopen(path, "r")) != NULL) {
			fseek(f, 0, SEEK_END);
			len = ftell(f);
			rewind(f);
			seed = malloc(len + 1);
			if (fread(seed, 1, len, f) != (size_t)len)
				len = 0;
			seed[len] = '\0';
			fclose(f);
		}
	} else
		printf("ok %d # SKIP shared conformance files not found "
		    "(set SNB_SHARED)\n", ++tap_n);
	test_old_layout();
	test_errors();
	test_files();
	if (seed && len > 0)
		test_mutations(seed, len);
	test_mutations(base, sizeof(base) - 1);
	test_mutations(old_layout, sizeof(old_layout) - 1);
	free(seed);
	test_big();
	return tap_done();
}
