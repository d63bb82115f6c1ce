#!/usr/bin/python3
"""
tests/lwaftr/mkcases.py: write snb's own lwAFTR conformance cases.

    /usr/bin/python3 tests/lwaftr/mkcases.py [DIR]

Writes into DIR (default: the directory of this script) the files of
cases.tsv, in the format of ../shared/conformance/lwaftr (see README
there and tests/lwaftr/README): configurations, input and expected output
pcaps, and counter files.  Every case is written twice: untagged, and
VLAN-tagged (the v4 side's frames tagged 1092, the v6 side's 1638, the
configuration saying so; the counters are the same, as both the
reference and snb count frames without their tag).

The expected packets and counters are made here from the rules of Snabb's
lwAFTR (src/apps/lwaftr/lwaftr.lua, src/apps/ipv4/echo.lua,
src/apps/ipv6/echo.lua, src/apps/ipv4/arp.lua, src/apps/lwaftr/ndp.lua and
their wiring in src/program/lwaftr/setup.lua) and the RFCs each case names, with scapy building
and checksumming them, never by running snb.  Output is deterministic:
running it again gives the same bytes (tests/lwaftr.bats checks that).
"""
import os
import struct
import sys

from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.inet6 import (ICMPv6DestUnreach, ICMPv6EchoReply,
                                ICMPv6ND_RA, ICMPv6ND_RS,
                                ICMPv6EchoRequest, ICMPv6ND_NA, ICMPv6ND_NS,
                                ICMPv6NDOptDstLLAddr, ICMPv6NDOptSrcLLAddr,
                                ICMPv6PacketTooBig, ICMPv6TimeExceeded, IPv6)
from scapy.layers.l2 import ARP, Dot1Q, Ether
from scapy.packet import Raw

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(
    os.path.abspath(__file__))

# The AFTR (see lwaftr.conf.in) and its neighbours.
AFTR4, AFTR4_MAC, NH4_MAC = "10.10.10.10", "12:12:12:12:12:12", "68:68:68:68:68:68"
AFTR6, AFTR6_MAC, NH6_MAC = "8:9:a:b:c:d:e:f", "22:22:22:22:22:22", "44:44:44:44:44:44"
INET_HOST, INET_MAC = "198.51.100.7", "02:00:00:00:00:04"
B4_MAC = "02:00:00:00:00:06"
VLAN4, VLAN6 = 1092, 1638
# Softwires of lwaftr.conf.in.
SW1 = ("178.79.150.1", "127:10:20:30:40:50:60:128", AFTR6)       # all ports
SW80 = ("178.79.150.233", "127:2:3:4:5:6:7:128", AFTR6)          # port 80
SW7850 = ("178.79.150.2", "127:24:35:46:57:68:79:128", "1e:1:1:1:1:1:1:af")

os.makedirs(os.path.join(OUT, "counters"), exist_ok=True)
CONF_TEMPLATE = open(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                  "lwaftr.conf.in")).read()


def conf(name, generate="true", rate=600000, vlan=False, allow="true",
         nh4=None, nh6=None, extra=""):
    """Write configuration `name` from the template; returns its file name.
    nh4/nh6: next hops given by IP (resolved by ARP/NDP), else by MAC.
    extra: more softwire blocks for the binding table."""
    text = CONF_TEMPLATE
    text = text.replace("  }\n  external-interface {",
                        extra + "  }\n  external-interface {", 1)
    text = text.replace("@GENERATE@", generate).replace("@RATE@", str(rate))
    text = text.replace("@ALLOW@", allow)
    text = text.replace("@NH4@", "ip %s;" % nh4 if nh4 else
                        "mac %s;" % NH4_MAC)
    text = text.replace("@NH6@", "ip %s;" % nh6 if nh6 else
                        "mac %s;" % NH6_MAC)
    text = text.replace("@VLAN4@", "vlan-tag %d;" % VLAN4 if vlan else "")
    text = text.replace("@VLAN6@", "vlan-tag %d;" % VLAN6 if vlan else "")
    fname = name + ("-vlan" if vlan else "") + ".conf"
    with open(os.path.join(OUT, fname), "w") as f:
        f.write(text)
    return fname


def write_pcap(fname, frames):
    """A pcap as the shared vectors' are: 2.4, snaplen 65535, times 0."""
    with open(os.path.join(OUT, fname), "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
        for fr in frames:
            b = bytes(fr)
            f.write(struct.pack("<IIII", 0, 0, len(b), len(b)))
            f.write(b)


def tag(frame, vid):
    """frame with an 802.1Q tag of vid after its MAC addresses."""
    b = bytes(frame)
    return b[:12] + struct.pack("!HH", 0x8100, vid) + b[12:]


def v4_frame(ip, src=INET_MAC, dst=AFTR4_MAC):
    return Ether(src=src, dst=dst) / ip


def v6_frame(ip, src=B4_MAC, dst=AFTR6_MAC):
    return Ether(src=src, dst=dst) / ip


def out4(ip):
    """A frame the AFTR sends toward the internet (next hop's MAC)."""
    return Ether(src=AFTR4_MAC, dst=NH4_MAC) / ip


def out6(ip):
    return Ether(src=AFTR6_MAC, dst=NH6_MAC) / ip


def flen(frame):
    return len(bytes(frame))


def tunnel(sw, ip4, hlim=64):
    """IPv4 from a B4, as its B4 sends it: from b4-ipv6 to br-address."""
    return IPv6(src=sw[1], dst=sw[2], hlim=hlim, nh=4) / ip4


def to_b4(sw, ip4):
    """IPv4 the AFTR encapsulates toward softwire sw (RFC 7596 5.1):
    hop limit 255, traffic class from the TOS, flow label 0."""
    ip4 = IP(bytes(ip4))
    return IPv6(src=sw[2], dst=sw[1], hlim=255, tc=ip4.tos, fl=0, nh=4) / ip4


cases = []


def case(name, rule, cfg, in4, in6, exp4, exp6, counters):
    """One case, untagged and tagged.  rule: what it checks, and where
    the reference (or RFC) says so; written as a comment in cases.tsv."""
    slug = name
    for vlan in (False, True):
        sfx = "-vlan" if vlan else ""
        files = []
        for what, frames, vid in (("in4", in4, VLAN4), ("in6", in6, VLAN6),
                                  ("out4", exp4, VLAN4), ("out6", exp6, VLAN6)):
            if not frames:
                files.append("")
                continue
            fname = "%s-%s%s.pcap" % (slug, what, sfx)
            write_pcap(fname, [tag(f, vid) if vlan else f for f in frames])
            files.append(fname)
        cname = "%s%s.counters" % (slug, sfx)
        with open(os.path.join(OUT, "counters", cname), "w") as f:
            for k in sorted(counters):
                if counters[k]:
                    f.write("%s %d\n" % (k, counters[k]))
        cases.append(("# " + rule,
                      "\t".join([name + (" (vlan)" if vlan else ""),
                                 cfg(vlan)] + files + [cname])))


def add(counters, name, frame_len):
    counters[name + "-bytes"] = counters.get(name + "-bytes", 0) + frame_len
    counters[name + "-packets"] = counters.get(name + "-packets", 0) + 1


def base(v4=0, v6=0):
    c = {}
    if v4:
        c["in-ipv4-frag-reassembly-unneeded"] = v4
    if v6:
        c["in-ipv6-frag-reassembly-unneeded"] = v6
    return c


def icmp_on(vlan):
    return conf("lwaftr", vlan=vlan)


def icmp_off(vlan):
    return conf("lwaftr-noerrors", generate="false", vlan=vlan)


def rate1(vlan):
    return conf("lwaftr-rate1", rate=1, vlan=vlan)


def deny4(vlan):
    return conf("lwaftr-deny-icmpv4", allow="false", vlan=vlan)


# ---- Echo to the AFTR's own addresses (src/apps/ipv4/echo.lua, ipv6/echo.lua)

# A request with a wrong IPv4 header checksum, a wrong ICMP checksum, TTL 17
# and DF: the reply is a new datagram (TTL 64, both checksums computed
# afresh); the request's checksums are not checked.  echo.lua clears the
# flags with a mask applied in little-endian host order to the network-order
# field: DF survives (snabb lwaftr check keeps it), so the reply keeps it.
req = IP(src=INET_HOST, dst=AFTR4, ttl=17, id=0x1234, flags="DF",
         chksum=0xbeef) / ICMP(type=8, code=0, id=0x77, seq=3,
                               chksum=0x1111) / Raw(b"snb-echo-v4" * 3)
reqf = v4_frame(req)
rep = IP(src=AFTR4, dst=INET_HOST, ttl=64, id=0x1234, flags="DF") / ICMP(
    type=0, code=0, id=0x77, seq=3) / Raw(b"snb-echo-v4" * 3)
repf = Ether(src=AFTR4_MAC, dst=INET_MAC) / rep
c = base(v4=1)
add(c, "in-icmpv4-echo", flen(reqf))
add(c, "out-icmpv4-echo", flen(repf))
c["out-ipv4-frag-not"] = 1
case("echo-v4-new-datagram",
     "ipv4/echo.lua: reply TTL 64, DF kept (its flag mask is byte-swapped), "
     "IPv4 and ICMP checksums afresh, request checksums unchecked", icmp_on, [reqf], [], [repf], [],
     c)

# The same over IPv6: hop limit 64, checksum afresh.
req6 = IPv6(src="2001:db8::99", dst=AFTR6, hlim=3) / ICMPv6EchoRequest(
    id=0x42, seq=9, data=b"snb-echo-v6" * 2, cksum=0x2222)
req6f = v6_frame(req6)
rep6 = IPv6(src=AFTR6, dst="2001:db8::99", hlim=64) / ICMPv6EchoReply(
    id=0x42, seq=9, data=b"snb-echo-v6" * 2)
rep6f = Ether(src=AFTR6_MAC, dst=B4_MAC) / rep6
c = base(v6=1)
add(c, "in-icmpv6-echo", flen(req6f))
add(c, "out-icmpv6-echo", flen(rep6f))
c["out-ipv6-frag-not"] = 1
case("echo-v6-new-datagram",
     "ipv6/echo.lua: reply hop limit 64, ICMPv6 checksum afresh, request "
     "checksum unchecked", icmp_on, [], [req6f], [], [rep6f], c)

# An echo request of code 1 is no echo request: it goes on to the softwire
# core, where (port 0 of our own address: no softwire) RFC 7596 8.1 drops it.
req = IP(src=INET_HOST, dst=AFTR4, ttl=17, id=5) / ICMP(type=8, code=1,
                                                        id=0x77, seq=1)
reqf = v4_frame(req)
c = base(v4=1)
for k in ("in-ipv4", "drop-no-dest-softwire-ipv4", "drop-in-by-rfc7596-icmpv4",
          "drop-all-ipv4-iface"):
    add(c, k, flen(reqf))
case("echo-v4-code1",
     "ipv4/echo.lua answers code 0 only; lwaftr.lua "
     "drop_ipv4_packet_to_unreachable_host: ICMP matching no softwire is "
     "dropped silently (RFC 7596 8.1)", icmp_on, [reqf], [], [], [], c)

# ---- ICMPv4 matching no softwire (lwaftr.lua
# drop_ipv4_packet_to_unreachable_host, RFC 7596 8.1)

# An echo request from the internet to a shared address: looked up with port
# 0 (icmpv4_incoming), which no softwire of 178.79.150.233 owns.
req = IP(src=INET_HOST, dst=SW80[0], ttl=30, id=6) / ICMP(type=8, id=80,
                                                          seq=1)
reqf = v4_frame(req)
c = base(v4=1)
for k in ("in-ipv4", "drop-no-dest-softwire-ipv4", "drop-in-by-rfc7596-icmpv4",
          "drop-all-ipv4-iface"):
    add(c, k, flen(reqf))
case("icmpv4-inet-unbound",
     "lwaftr.lua: incoming ICMPv4 with no softwire gets no 'host "
     "unreachable', it is dropped and counted (RFC 7596 8.1)", icmp_on,
     [reqf], [], [], [], c)

# An ICMPv4 error from the internet quoting UDP from a port no softwire owns.
quoted = IP(src=SW80[0], dst=INET_HOST, ttl=60, id=9) / UDP(sport=1234,
                                                            dport=53)
err = IP(src=INET_HOST, dst=SW80[0], ttl=30, id=7) / ICMP(type=3, code=3) / \
    Raw(bytes(quoted)[:28])
errf = v4_frame(err)
c = base(v4=1)
for k in ("in-ipv4", "drop-no-dest-softwire-ipv4", "drop-in-by-rfc7596-icmpv4",
          "drop-all-ipv4-iface"):
    add(c, k, flen(errf))
case("icmpv4-error-inet-unbound",
     "lwaftr.lua icmpv4_incoming: an ICMP error is looked up by the quoted "
     "packet's source port; none: dropped silently (RFC 7596 8.1)", icmp_on,
     [errf], [], [], [], c)

# generate-icmp-errors false: the policy is asked first (the reference counts
# drop-out-by-policy-icmpv4-packets, not the RFC 7596 drop).
c = base(v4=1)
for k in ("in-ipv4", "drop-no-dest-softwire-ipv4", "drop-all-ipv4-iface"):
    add(c, k, flen(reqf))
c["drop-out-by-policy-icmpv4-packets"] = 1
case("icmpv4-inet-unbound-noerrors",
     "lwaftr.lua drop_ipv4_packet_to_unreachable_host: with "
     "generate-icmp-errors false the policy drop comes before the RFC 7596 "
     "one", icmp_off, [reqf], [], [], [], c)

# Hairpinned: a B4 (178.79.150.1, all ports) pings 178.79.150.233, whose
# port 0 no softwire owns.  Counted in in-ipv6 and hairpin-ipv4 as it
# arrives, then dropped silently; drop-all-ipv6 counts the IPv6 frame.
inner = IP(src=SW1[0], dst=SW80[0], ttl=64, id=8) / ICMP(type=8, id=5,
                                                         seq=1)
hf = v6_frame(tunnel(SW1, inner))
ipv4_len = flen(hf) - 40
c = base(v6=1)
add(c, "in-ipv6", flen(hf))
add(c, "hairpin-ipv4", ipv4_len)
add(c, "drop-no-dest-softwire-ipv4", ipv4_len)
add(c, "drop-in-by-rfc7596-icmpv4", ipv4_len)
add(c, "drop-all-ipv6-iface", flen(hf))
case("icmpv4-hairpin-unbound",
     "lwaftr.lua flush_hairpin: a hairpinned ICMPv4 with no destination "
     "softwire is dropped as one from the internet (RFC 7596 8.1), counted "
     "against the IPv6 interface", icmp_on, [], [hf], [], [], c)

# Hairpinned ICMP with a bad checksum: from_inet(PKT_HAIRPINNED) checks it.
inner = IP(src=SW1[0], dst=SW80[0], ttl=64, id=8) / ICMP(type=0, id=80,
                                                         seq=1, chksum=0x3333)
hf = v6_frame(tunnel(SW1, inner))
ipv4_len = flen(hf) - 40
c = base(v6=1)
add(c, "in-ipv6", flen(hf))
add(c, "hairpin-ipv4", ipv4_len)
add(c, "drop-bad-checksum-icmpv4", ipv4_len)
add(c, "drop-all-ipv6-iface", flen(hf))
case("icmpv4-hairpin-bad-checksum",
     "lwaftr.lua icmpv4_incoming: hairpinned ICMPv4 has its checksum "
     "checked too (RFC 5508)", icmp_on, [], [hf], [], [], c)

# allow-incoming-icmp false on the external side: hairpinned ICMP meets it
# too (from_inet(pkt, PKT_HAIRPINNED)).
inner = IP(src=SW1[0], dst=SW80[0], ttl=64, id=8) / ICMP(type=8, id=5,
                                                         seq=1)
hf = v6_frame(tunnel(SW1, inner))
ipv4_len = flen(hf) - 40
c = base(v6=1)
add(c, "in-ipv6", flen(hf))
add(c, "hairpin-ipv4", ipv4_len)
add(c, "drop-in-by-policy-icmpv4", ipv4_len)
add(c, "drop-all-ipv6-iface", flen(hf))
case("icmpv4-hairpin-policy",
     "lwaftr.lua from_inet: allow-incoming-icmp false drops hairpinned "
     "ICMPv4 as it drops ICMPv4 from the internet", deny4, [], [hf], [],
     [], c)

# ---- ICMPv4 errors the AFTR makes for a softwire's address
# (lwaftr.lua transmit_icmpv4_reply: they go through the hairpin path)


def icmp4_error_len(quoted_ip):
    """Frame bytes of an ICMPv4 error quoting quoted_ip whole (< 548)."""
    return 14 + 20 + 8 + len(bytes(quoted_ip))


# A B4 (178.79.150.1) sends TCP with TTL 1 to another softwire's address:
# hairpinned, its TTL runs out; the "time exceeded" to 178.79.150.1 meets
# allow-incoming-icmp false on its way back and is dropped, counted against
# the IPv6 side at its length plus 40.
inner = IP(src=SW1[0], dst=SW80[0], ttl=1, id=8) / TCP(sport=1000,
                                                       dport=80, flags="S")
hf = v6_frame(tunnel(SW1, inner))
ipv4_len = flen(hf) - 40
elen = icmp4_error_len(inner)
c = base(v6=1)
add(c, "in-ipv6", flen(hf))
add(c, "hairpin-ipv4", ipv4_len)
add(c, "drop-ttl-zero-ipv4", ipv4_len)
add(c, "drop-all-ipv6-iface", flen(hf))
add(c, "out-icmpv4-error", elen)
add(c, "drop-in-by-policy-icmpv4", elen)
add(c, "drop-all-ipv6-iface", elen + 40)
case("icmpv4-error-to-b4-policy",
     "lwaftr.lua transmit_icmpv4_reply: an error for a softwire's address "
     "takes the hairpin path, where allow-incoming-icmp false drops it",
     deny4, [], [hf], [], [], c)

# An internet packet claiming to come from 178.79.150.233:1234 (a port no
# softwire owns) to an address of no softwire: "host unreachable" is made
# for 178.79.150.233, but no softwire owns the quoted source port either:
# the error is dropped as RFC 7596 8.1 says, on the hairpin path.
spoof = IP(src=SW80[0], dst=SW7850[0], ttl=30, id=0x10) / UDP(sport=1234,
                                                              dport=9)
sf = v4_frame(spoof)
elen = icmp4_error_len(spoof)
c = base(v4=1)
for k in ("in-ipv4", "drop-no-dest-softwire-ipv4", "drop-all-ipv4-iface"):
    add(c, k, flen(sf))
add(c, "out-icmpv4-error", elen)
add(c, "drop-no-dest-softwire-ipv4", elen)
add(c, "drop-in-by-rfc7596-icmpv4", elen)
add(c, "drop-all-ipv6-iface", elen + 40)
case("icmpv4-error-to-unbound-port",
     "lwaftr.lua transmit_icmpv4_reply/flush_hairpin: an error for a "
     "softwire's address with no softwire for its port is dropped (RFC "
     "7596 8.1)", icmp_on, [sf], [], [], [], c)

# ---- Incoming ICMPv6 errors (lwaftr.lua icmpv6_incoming)

# What the AFTR tunnelled: TCP from the internet to 178.79.150.233:80.
sent4 = IP(src=INET_HOST, dst=SW80[0], ttl=40, id=0x99) / TCP(
    sport=4444, dport=80, flags="S", seq=1)
sent6 = to_b4(SW80, sent4)


def icmp6_from_b4(icmp):
    return v6_frame(IPv6(src="2001:db8::1", dst=SW80[2], hlim=60) / icmp /
                    Raw(bytes(sent6)))


# Time exceeded, code 1 (fragment reassembly): not the hop limit.
f = icmp6_from_b4(ICMPv6TimeExceeded(code=1))
c = base(v6=1)
for k in ("in-ipv6", "drop-over-time-but-not-hop-limit-icmpv6",
          "drop-all-ipv6-iface"):
    add(c, k, flen(f))
case("icmpv6-time-exceeded-reassembly",
     "lwaftr.lua icmpv6_incoming: time exceeded must be 'hop limit "
     "exceeded' (code 0) to be translated", icmp_on, [], [f], [], [], c)

# Packet too big with a code other than 0.
f = icmp6_from_b4(ICMPv6PacketTooBig(code=1, mtu=1400))
c = base(v6=1)
for k in ("in-ipv6", "drop-too-big-type-but-not-code-icmpv6",
          "drop-all-ipv6-iface"):
    add(c, k, flen(f))
case("icmpv6-too-big-bad-code",
     "lwaftr.lua icmpv6_incoming: packet too big must have code 0",
     icmp_on, [], [f], [], [], c)

# Time exceeded, code 0: translated into ICMPv4 'host unreachable' from our
# IPv4 address to the quoted IPv4 packet's source (tunnel_unreachable), even
# with generate-icmp-errors false (transmit_icmpv4_reply asks no policy).
f = icmp6_from_b4(ICMPv6TimeExceeded(code=0))
e = out4(IP(src=AFTR4, dst=INET_HOST, ttl=255, id=0, flags=0) /
         ICMP(type=3, code=1) / Raw(bytes(sent4)))
c = base(v6=1)
add(c, "in-ipv6", flen(f))
add(c, "out-icmpv4-error", flen(e))
add(c, "out-ipv4", flen(e))
c["out-ipv4-frag-not"] = 1
case("icmpv6-hop-limit-translated-noerrors",
     "lwaftr.lua icmpv6_incoming/tunnel_unreachable: hop limit exceeded "
     "becomes ICMPv4 3/1 to the original sender; relaying asks no "
     "generate-icmp-errors policy", icmp_off, [], [f], [e], [], c)

# ---- Packets from a B4 with no source softwire (lwaftr.lua
# flush_decapsulation, drop_ipv6_packet_from_bad_softwire)

# 178.79.150.2:7850 belongs to a softwire whose BR address is
# 1e:1:1:1:1:1:1:af; this packet went to 8:9:a:b:c:d:e:f.  The ICMPv6 1/5
# comes from the softwire's BR address.
inner = IP(src=SW7850[0], dst=INET_HOST, ttl=64, id=3) / UDP(sport=7850,
                                                             dport=53)
bad = IPv6(src=SW7850[1], dst=AFTR6, hlim=64, nh=4) / inner
badf = v6_frame(bad)
e6 = out6(IPv6(src=SW7850[2], dst=SW7850[1], hlim=255) /
          ICMPv6DestUnreach(code=5) / Raw(bytes(bad)))
c = base(v6=1)
for k in ("in-ipv6", "drop-no-source-softwire-ipv6", "drop-all-ipv6-iface"):
    add(c, k, flen(badf))
add(c, "out-icmpv6-error", flen(e6))
add(c, "out-ipv6", flen(e6))
c["out-ipv6-frag-not"] = 1
case("no-source-softwire-br",
     "lwaftr.lua drop_ipv6_packet_from_bad_softwire: ICMPv6 1/5 from the "
     "BR address of the softwire the lookup found", icmp_on, [], [badf], [],
     [e6], c)

# No softwire at all for 198.51.100.99:1: the error comes from the address
# the packet was sent to, whatever it is.
inner = IP(src="198.51.100.99", dst=INET_HOST, ttl=64, id=4) / UDP(sport=1,
                                                                   dport=53)
bad = IPv6(src="2001:db8::5", dst="8:9:a:b:c:d:e:1", hlim=64, nh=4) / inner
badf = v6_frame(bad)
e6 = out6(IPv6(src="8:9:a:b:c:d:e:1", dst="2001:db8::5", hlim=255) /
          ICMPv6DestUnreach(code=5) / Raw(bytes(bad)))
c = base(v6=1)
for k in ("in-ipv6", "drop-no-source-softwire-ipv6", "drop-all-ipv6-iface"):
    add(c, k, flen(badf))
add(c, "out-icmpv6-error", flen(e6))
add(c, "out-ipv6", flen(e6))
c["out-ipv6-frag-not"] = 1
case("no-source-softwire-dst",
     "lwaftr.lua drop_ipv6_packet_from_bad_softwire: no softwire found: "
     "ICMPv6 1/5 from the packet's destination address", icmp_on, [],
     [badf], [], [e6], c)

# Two such packets, one error allowed per period: the second error is
# counted in drop-over-rate-limit-icmpv6, bytes being the error's.
c = base(v6=2)
for k in ("in-ipv6", "drop-no-source-softwire-ipv6", "drop-all-ipv6-iface"):
    add(c, k, flen(badf))
    add(c, k, flen(badf))
add(c, "out-icmpv6-error", flen(e6))
add(c, "out-ipv6", flen(e6))
add(c, "drop-over-rate-limit-icmpv6", flen(e6))
c["out-ipv6-frag-not"] = 1
case("icmpv6-rate-limit",
     "lwaftr.lua transmit_icmpv6_reply: over the rate limit, the error is "
     "counted in drop-over-rate-limit-icmpv6-bytes/-packets", rate1, [],
     [badf, badf], [], [e6], c)

# ---- Ports of any protocol (lwaftr.lua from_inet: 'we optimistically
# assume that the incoming traffic has the right shape')

sctp = IP(src=INET_HOST, dst=SW80[0], ttl=40, id=0x55, proto=132) / Raw(
    struct.pack("!HHII", 5000, 80, 0x01020304, 0) + b"\x00" * 16)
sf = v4_frame(sctp)
# The TTL decremented (RFC 7596 5.1), the header checksum rebuilt by scapy.
dec = IP(bytes(sctp))
dec.ttl = 39
del dec.chksum
enc = out6(to_b4(SW80, IP(bytes(dec))))
c = base(v4=1)
add(c, "in-ipv4", flen(sf))
add(c, "out-ipv6", flen(enc))
c["out-ipv6-frag-not"] = 1
case("sctp-bound",
     "lwaftr.lua from_inet: the destination port of any protocol is where "
     "TCP and UDP have it; SCTP to a softwire's port is encapsulated",
     icmp_on, [sf], [], [], [enc], c)

# ---- Where snb differs from the reference on purpose (snb-lwaftr(1)
# CAVEATS lists each difference and its reason)

# An ICMPv6 error quoting a packet the AFTR never sent (its IPv4 goes to a
# port of no softwire): not translated, so a B4 cannot make the AFTR send
# ICMPv4 errors about others' traffic.
forged4 = IP(src=INET_HOST, dst=SW80[0], ttl=40, id=0x98) / TCP(
    sport=4444, dport=81, flags="S", seq=1)
f = v6_frame(IPv6(src="2001:db8::1", dst=SW80[2], hlim=60) /
             ICMPv6TimeExceeded(code=0) / Raw(bytes(to_b4(SW80, forged4))))
c = base(v6=1)
for k in ("in-ipv6", "drop-in-by-rfc7596-icmpv6", "drop-all-ipv6-iface"):
    add(c, k, flen(f))
case("snb-icmpv6-quotes-no-softwire",
     "snb, not the reference: an ICMPv6 error is translated only if it "
     "quotes a packet tunnelled to a softwire (drop-in-by-rfc7596-icmpv6)",
     icmp_on, [], [f], [], [], c)

# An ICMPv6 error with a bad checksum is not translated (RFC 4443 2.3).
f = icmp6_from_b4(ICMPv6TimeExceeded(code=0, cksum=0x4444))
c = base(v6=1)
for k in ("in-ipv6", "drop-unknown-protocol-icmpv6", "drop-all-ipv6-iface"):
    add(c, k, flen(f))
case("snb-icmpv6-bad-checksum",
     "snb, not the reference: ICMPv6 with a bad checksum is dropped "
     "(RFC 4443 2.3)", icmp_on, [], [f], [], [], c)

# ICMPv4 errors over the rate limit are counted, in
# drop-over-rate-limit-icmpv4-packets.
tcp = IP(src=INET_HOST, dst=SW7850[0], ttl=30, id=0x21) / TCP(
    sport=5555, dport=7851, flags="S")
tf = v4_frame(tcp)
e = out4(IP(src=AFTR4, dst=INET_HOST, ttl=255, id=0, flags=0) /
         ICMP(type=3, code=1) / Raw(bytes(tcp)))
c = base(v4=2)
for k in ("in-ipv4", "drop-no-dest-softwire-ipv4", "drop-all-ipv4-iface"):
    add(c, k, flen(tf))
    add(c, k, flen(tf))
add(c, "out-icmpv4-error", flen(e))
add(c, "out-ipv4", flen(e))
c["out-ipv4-frag-not"] = 1
c["drop-over-rate-limit-icmpv4-packets"] = 1
case("snb-icmpv4-rate-limit",
     "snb, not the reference: 'host unreachable' (lwaftr.lua "
     "drop_ipv4_packet_to_unreachable_host) once, the second over the "
     "limit counted in drop-over-rate-limit-icmpv4-packets", rate1,
     [tf, tf], [], [e], [], c)

# ---- ARP and neighbour discovery (src/apps/ipv4/arp.lua,
# src/apps/lwaftr/ndp.lua; RFC 826, RFC 4861)

NH4_IP, NH6_IP = "4.5.6.7", "8:9:a:b:4:3:2:1"
PEER_MAC = "00:01:02:03:04:05"


def by_ip(vlan):
    return conf("lwaftr-nh-ip", vlan=vlan, nh4=NH4_IP, nh6=NH6_IP)


def by_ip6(vlan):
    return conf("lwaftr-nh6-ip", vlan=vlan, nh6=NH6_IP)


def ns_out():
    """ndp.lua make_ns_packet: to the next hop's solicited-node group
    (ff02::1:ffXX:XXXX) on its 33:33:ff:XX:XX:XX MAC, hop limit 255, a
    source link-layer option."""
    return (Ether(src=AFTR6_MAC, dst="33:33:ff:02:00:01") /
            IPv6(src=AFTR6, dst="ff02::1:ff02:1", hlim=255) /
            ICMPv6ND_NS(tgt=NH6_IP) / ICMPv6NDOptSrcLLAddr(lladdr=AFTR6_MAC))


def arp_request_out():
    """arp.lua make_arp_request: broadcast, target hardware address 0."""
    return (Ether(src=AFTR4_MAC, dst="ff:ff:ff:ff:ff:ff") /
            ARP(op=1, hwsrc=AFTR4_MAC, psrc=AFTR4, hwdst="00:00:00:00:00:00",
                pdst=NH4_IP))


def na_in(src_mac, solicited, lladdr):
    """An NA from the next hop for itself (override set: ignored)."""
    p = (Ether(src=src_mac, dst=AFTR6_MAC) /
         IPv6(src=NH6_IP, dst=AFTR6, hlim=255) /
         ICMPv6ND_NA(R=1, S=solicited, O=1, tgt=NH6_IP))
    if lladdr:
        p = p / ICMPv6NDOptDstLLAddr(lladdr=lladdr)
    return p


# A B4 of SW1 (all ports) to 178.79.150.233 port 80 (SW80): hairpinned,
# so it leaves on v6 for the next hop (lwaftr.lua: TTL - 1, encapsulated
# from SW80's br-address to its B4, hop limit 255).
hp_ip = IP(src=SW1[0], dst=SW80[0], ttl=30, id=7) / TCP(sport=1234, dport=80,
                                                         flags="S")
hp_in = v6_frame(tunnel(SW1, hp_ip), src=NH6_MAC)
hp_dec = IP(bytes(hp_ip))
hp_dec.ttl = 29
del hp_dec.chksum


def hp_out(mac):
    return Ether(src=AFTR6_MAC, dst=mac) / to_b4(SW80, IP(bytes(hp_dec)))


def hairpins(c, n):
    for _ in range(n):
        add(c, "in-ipv6", flen(hp_in))
        add(c, "hairpin-ipv4", flen(hp_in) - 40)
        add(c, "out-ipv6", flen(hp_out(NH6_MAC)))


c = base()
add(c, "out-arp-request", flen(arp_request_out()))
add(c, "out-ndp-ns", flen(ns_out()))
c["out-ipv4-frag-not"] = c["out-ipv6-frag-not"] = 1
case("solicit-at-start",
     "arp.lua tick, ndp.lua maybe_send_ns_request: next hops given by IP are "
     "asked for at once (then every 3 s): the ARP request broadcast, the NS "
     "to the solicited-node group on its 33:33:ff MAC",
     by_ip, [], [], [arp_request_out()], [ns_out()], c)

ns = (Ether(src=PEER_MAC, dst="33:33:ff:0e:00:0f") /
      IPv6(src="fe80::1", dst="ff02::1:ff0e:f", hlim=255) /
      ICMPv6ND_NS(tgt=AFTR6) / ICMPv6NDOptSrcLLAddr(lladdr="0a:0b:0c:0d:0e:0f"))
na = (Ether(src=AFTR6_MAC, dst=PEER_MAC) /
      IPv6(src=AFTR6, dst="fe80::1", hlim=255) /
      ICMPv6ND_NA(R=1, S=1, O=0, tgt=AFTR6) /
      ICMPv6NDOptDstLLAddr(lladdr=AFTR6_MAC))
c = base(v6=1)
add(c, "in-ndp-ns", flen(ns))
add(c, "out-ndp-na", flen(na))
c["out-ipv6-frag-not"] = 1
case("ns-answered",
     "ndp.lua handle_ndp, make_na_packet: an NS for our address is answered "
     "with Router and Solicited set, Override clear, to the NS's IPv6 source "
     "on its Ethernet source (not its source link-layer option)",
     icmp_on, [], [ns], [], [na], c)

dad = (Ether(src=PEER_MAC, dst="33:33:ff:0e:00:0f") /
       IPv6(src="::", dst="ff02::1:ff0e:f", hlim=255) / ICMPv6ND_NS(tgt=AFTR6))
dad_na = (Ether(src=AFTR6_MAC, dst="33:33:00:00:00:01") /
          IPv6(src=AFTR6, dst="ff02::1", hlim=255) /
          ICMPv6ND_NA(R=1, S=0, O=0, tgt=AFTR6) /
          ICMPv6NDOptDstLLAddr(lladdr=AFTR6_MAC))
c = base(v6=1)
add(c, "in-ndp-ns", flen(dad))
add(c, "out-ndp-na", flen(dad_na))
c["out-ipv6-frag-not"] = 1
case("ns-from-unspecified",
     "RFC 4861 7.2.4 (snb differs from ndp.lua, which drops this NS): an NS "
     "from :: to our solicited-node group is answered to all-nodes on "
     "33:33:00:00:00:01 with Solicited clear",
     icmp_on, [], [dad], [], [dad_na], c)

bad = ns.copy()
bad[IPv6].hlim = 64
c = base(v6=1)
add(c, "drop-all-ipv6-iface", flen(bad))
case("ns-hop-limit-64",
     "RFC 4861 7.1.1, ndp.lua handle_ndp: hop limit not 255: dropped before "
     "it counts as an NS; snb counts the drop in drop-all-ipv6-iface (the "
     "reference drops it silently)",
     icmp_on, [], [bad], [], [], c)

arp_req = (Ether(src=PEER_MAC, dst="ff:ff:ff:ff:ff:ff") /
           ARP(op=1, hwsrc=PEER_MAC, psrc="10.10.10.1", hwdst="00:00:00:00:00:00",
               pdst=AFTR4))
arp_rep = (Ether(src=AFTR4_MAC, dst=PEER_MAC) /
           ARP(op=2, hwsrc=AFTR4_MAC, psrc=AFTR4, hwdst=PEER_MAC,
               pdst="10.10.10.1"))
arp_other = (Ether(src=PEER_MAC, dst="ff:ff:ff:ff:ff:ff") /
             ARP(op=3, hwsrc=PEER_MAC, psrc="10.10.10.1", pdst=AFTR4))
c = base(v4=2)
add(c, "in-arp-request", flen(arp_req))
add(c, "out-arp-reply", flen(arp_rep))
add(c, "drop-all-ipv4-iface", flen(arp_other))
c["out-ipv4-frag-not"] = 1
case("arp-request-answered",
     "arp.lua push: a request for our address is answered to its sender "
     "hardware address; an ARP operation neither request nor reply is "
     "dropped (counted in drop-all-ipv4-iface by snb, silently by arp.lua)",
     icmp_on, [arp_req, arp_other], [], [arp_rep], [], c)

seq = [hp_in, na_in("66:66:66:66:66:66", 0, "66:66:66:66:66:66"),
       na_in("55:55:55:55:55:55", 1, NH6_MAC), hp_in,
       na_in("77:77:77:77:77:77", 1, "77:77:77:77:77:77"), hp_in]
c = base(v6=len(seq))
for f in seq[1:2] + seq[2:3] + seq[4:5]:
    add(c, "in-ndp-na", flen(f))
add(c, "out-ndp-ns", flen(ns_out()))
hairpins(c, 3)
c["out-ipv6-frag-not"] = 4
case("na-first-solicited-wins",
     "ndp.lua handle_ndp, push: traffic for the next hop waits while it is "
     "unknown; an unsolicited NA teaches nothing, the first solicited NA for "
     "it gives its MAC (target link-layer option), later NAs change nothing",
     by_ip6, [], seq, [], [ns_out()] + [hp_out(NH6_MAC)] * 3, c)

seq = [hp_in, na_in(NH6_MAC, 1, None)]
c = base(v6=2)
add(c, "in-ndp-na", flen(seq[1]))
add(c, "out-ndp-ns", flen(ns_out()))
hairpins(c, 1)
c["out-ipv6-frag-not"] = 2
case("na-without-option",
     "ndp.lua handle_ndp: a solicited NA for the next hop without a target "
     "link-layer option gives the frame's Ethernet source",
     by_ip6, [], seq, [], [ns_out(), hp_out(NH6_MAC)], c)

# An ICMPv6 error quoting a tunnelled packet that is itself an ICMPv4 error
# (the internet host's "port unreachable" about the softwire's TCP from
# port 80): RFC 1812 4.3.2.7 forbids an ICMPv4 error about it, so it is
# not translated, and is counted as dropped.
b4tcp = IP(src=SW80[0], dst=INET_HOST, ttl=63, id=0x31) / TCP(
    sport=80, dport=4444, flags="SA")
err4 = IP(src=INET_HOST, dst=SW80[0], ttl=40, id=0x97) / ICMP(
    type=3, code=3) / Raw(bytes(b4tcp))
f = v6_frame(IPv6(src="2001:db8::1", dst=SW80[2], hlim=60) /
             ICMPv6TimeExceeded(code=0) / Raw(bytes(to_b4(SW80, err4))))
c = base(v6=1)
for k in ("in-ipv6", "drop-in-by-rfc7596-icmpv6", "drop-all-ipv6-iface"):
    add(c, k, flen(f))
case("snb-icmpv6-quotes-icmpv4-error",
     "snb, not the reference: an ICMPv6 error quoting an ICMPv4 error is "
     "not translated (RFC 1812 4.3.2.7), counted in "
     "drop-in-by-rfc7596-icmpv6", icmp_on, [], [f], [], [], c)

# A packet with no room for ports (a bare IPv4 header, GRE cut short): the
# reference reads the port past its end (lwaftr.lua from_inet,
# get_ipv4_payload_dst_port; from_b4 likewise for the source port), so a
# softwire of all ports (psid-length 0) takes it either way.  Checked
# against snabb lwaftr check.
bare_in = [IP(src=INET_HOST, dst=SW1[0], ttl=33, id=0x61, proto=0),
           IP(src=INET_HOST, dst=SW1[0], ttl=33, id=0x62, proto=47) /
           Raw(b"\x00\x00")]
bare_out = IP(src=SW1[0], dst=INET_HOST, ttl=20, id=0x63, proto=0)
ins4, outs6 = [], []
c = base(v4=2, v6=1)
for ip in bare_in:
    f = v4_frame(ip)
    dec = IP(bytes(ip))
    dec.ttl -= 1
    del dec.chksum
    e = out6(to_b4(SW1, IP(bytes(dec))))
    ins4.append(f)
    outs6.append(e)
    add(c, "in-ipv4", flen(f))
    add(c, "out-ipv6", flen(e))
c["out-ipv6-frag-not"] = 2
bf = v6_frame(tunnel(SW1, bare_out))
bo = out4(IP(bytes(bare_out)))
add(c, "in-ipv6", flen(bf))
add(c, "out-ipv4", flen(bo))
c["out-ipv4-frag-not"] = 1
case("no-ports-all-ports-softwire",
     "lwaftr.lua from_inet/from_b4: ports are read past a short packet's "
     "end; a psid-length 0 softwire takes a packet with no room for them",
     icmp_on, ins4, [bf], [bo], outs6, c)

# A frame of ARP's ethertype too short for ARP (cut at 30 and 34 bytes):
# the reference's ARP app takes only frames of at least 42 bytes
# (arp.lua is_arp), so the lwAFTR counts it as not IPv4.
arp_full = bytes(Ether(src=INET_MAC, dst="ff:ff:ff:ff:ff:ff") /
                 ARP(op=1, hwsrc=INET_MAC, psrc=INET_HOST, pdst=AFTR4))
shorts = [Raw(arp_full[:30]), Raw(arp_full[:34])]
c = base(v4=2)
for fr in shorts:
    for k in ("drop-misplaced-not-ipv4", "drop-all-ipv4-iface"):
        add(c, k, flen(fr))
case("arp-too-short-misplaced",
     "arp.lua is_arp: an ARP frame shorter than 42 bytes goes on to the "
     "lwAFTR, which drops it as drop-misplaced-not-ipv4 (lwaftr.lua push)",
     icmp_on, shorts, [], [], [], c)

# Router solicitations and advertisements end in the reference's NDP app
# (ndp.lua is_ndp takes types 133-137, handle_ndp answers NS/NA only):
# nothing goes out and no lwAFTR counter moves; snb counts them in
# drop-all-ipv6-iface (snb-lwaftr(1) CAVEATS: nothing dropped uncounted).
rs = v6_frame(IPv6(src="fe80::1", dst="ff02::2", hlim=255) / ICMPv6ND_RS(),
              dst="33:33:00:00:00:02")
ra = v6_frame(IPv6(src="fe80::1", dst="ff02::1", hlim=255) / ICMPv6ND_RA(),
              dst="33:33:00:00:00:01")
c = base(v6=2)
for fr in (rs, ra):
    add(c, "drop-all-ipv6-iface", flen(fr))
case("snb-nd-router-messages",
     "snb, not the reference: router solicitations and advertisements are "
     "taken by neighbour discovery (ndp.lua is_ndp), none answered, and "
     "counted in drop-all-ipv6-iface", icmp_on, [], [rs, ra], [], [], c)

# A port set with reserved-ports-bit-count 4 (RFC 7597 5.1 a = 4): psid-length
# 4, so shift 8 and PSID 0 is ports 0-255.  binding_table.lua lookup_psid
# gives a port below 2^a (16) a PSID no softwire has: from the internet
# "host unreachable", from the B4 ICMPv6 1/5 from the address the packet
# was sent to (no softwire, so no BR address).  Port 16 is PSID 0's.
SWR = ("178.79.150.4", "127:4:4:4:4:4:4:128", AFTR6)
RESV_SW = """    softwire {
      ipv4 %s;
      psid 0;
      b4-ipv6 %s;
      br-address %s;
      port-set {
        psid-length 4;
        reserved-ports-bit-count 4;
      }
    }
""" % SWR


def resv(vlan):
    return conf("lwaftr-resv", vlan=vlan, extra=RESV_SW)


# From the internet (to the port) and from the B4 (from it): a case each,
# as the order of a side's output across the two inputs is not fixed.
for way in ("inet", "b4"):
    ins, outs4, outs6 = [], [], []
    c = base(v4=2) if way == "inet" else base(v6=2)
    for port in (15, 16):
        if way == "inet":
            ip = IP(src=INET_HOST, dst=SWR[0], ttl=20, id=port) / UDP(
                sport=5000, dport=port) / Raw(b"reserved")
            f = v4_frame(ip)
            add(c, "in-ipv4", flen(f))
        else:
            ip = IP(src=SWR[0], dst=INET_HOST, ttl=20, id=port) / UDP(
                sport=port, dport=5000) / Raw(b"reserved")
            f = v6_frame(tunnel(SWR, ip))
            add(c, "in-ipv6", flen(f))
        ins.append(f)
        if way == "inet" and port < 16:
            e = out4(IP(src=AFTR4, dst=INET_HOST, ttl=255, id=0, flags=0) /
                     ICMP(type=3, code=1) / Raw(bytes(ip)))
            outs4.append(e)
            for k in ("drop-no-dest-softwire-ipv4", "drop-all-ipv4-iface"):
                add(c, k, flen(f))
            add(c, "out-icmpv4-error", flen(e))
            add(c, "out-ipv4", flen(e))
        elif way == "inet":
            dec = IP(bytes(ip))
            dec.ttl -= 1
            del dec.chksum
            e = out6(to_b4(SWR, IP(bytes(dec))))
            outs6.append(e)
            add(c, "out-ipv6", flen(e))
        elif port < 16:
            e = out6(IPv6(src=SWR[2], dst=SWR[1], hlim=255) /
                     ICMPv6DestUnreach(code=5) / Raw(bytes(tunnel(SWR, ip))))
            outs6.append(e)
            for k in ("drop-no-source-softwire-ipv6", "drop-all-ipv6-iface"):
                add(c, k, flen(f))
            add(c, "out-icmpv6-error", flen(e))
            add(c, "out-ipv6", flen(e))
        else:
            e = out4(IP(bytes(ip)))
            outs4.append(e)
            add(c, "out-ipv4", flen(e))
    if outs4:
        c["out-ipv4-frag-not"] = len(outs4)
    if outs6:
        c["out-ipv6-frag-not"] = len(outs6)
    case("reserved-ports-" + way,
         "binding_table.lua lookup_psid: with reserved-ports-bit-count a > 0 "
         "a port below 2^a has no softwire (%s)" % (
             "from_inet: host unreachable" if way == "inet" else
             "from_b4: ICMPv6 1/5 from the address it was sent to"), resv,
         ins if way == "inet" else [], ins if way == "b4" else [],
         outs4, outs6, c)

# ICMPv4 to a softwire that is neither echo nor a whole error: the
# reference finds the port of any type but echo in the packet it would
# quote (icmpv4_incoming), reading past a short quote's end (zeros in a
# fresh buffer).  A timestamp request (type 13: what follows its header is
# read as a packet, with IHL 0 here) and a "host unreachable" quoting a bare
# IPv4 header both go to the softwire of all ports.
ins4, outs6 = [], []
c = base(v4=2)
for icmp in (ICMP(type=13, id=7, seq=1, ts_ori=0, ts_rx=0, ts_tx=0),
             ICMP(type=3, code=1) / Raw(bytes(IP(
                 src=SW1[0], dst=INET_HOST, proto=17, id=3))[:20])):
    ip = IP(src=INET_HOST, dst=SW1[0], ttl=9, id=0x55) / icmp
    f = v4_frame(ip)
    dec = IP(bytes(ip))
    dec.ttl -= 1
    del dec.chksum
    e = out6(to_b4(SW1, IP(bytes(dec))))
    ins4.append(f)
    outs6.append(e)
    add(c, "in-ipv4", flen(f))
    add(c, "out-ipv6", flen(e))
c["out-ipv6-frag-not"] = 2
case("icmpv4-other-types-all-ports",
     "lwaftr.lua icmpv4_incoming: any ICMPv4 but echo is looked up by the "
     "port of what it quotes, zeros past a short quote's end", icmp_on,
     ins4, [], [], outs6, c)

write_pcap("empty.pcap", [])
with open(os.path.join(OUT, "cases.tsv"), "w") as f:
    f.write("# name\tconf\tin_v4\tin_v6\tout_v4\tout_v6\tcounters\n")
    f.write("# Written by mkcases.py; each case's comment line says what "
            "it checks.\n")
    for rule, line in cases:
        f.write(rule + "\n" + line + "\n")
