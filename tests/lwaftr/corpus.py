"""
tests/lwaftr/corpus.py: the frames tests/lwaftr/snabb-corpus feeds to
snb-lwaftr and the reference.  groups() gives (name, configurations,
v4 frames, v6 frames); write_confs() writes the configurations: the
reference's test configurations (../shared/conformance/lwaftr, the same
files as Snabb's src/program/lwaftr/tests/data) and VLAN-tagged variants.
"""
import os
import random
import struct

from scapy.layers.inet import ICMP, IP, TCP, UDP, IPOption_RR, IPOption_NOP
from scapy.layers.inet6 import (ICMPv6EchoRequest, ICMPv6ND_NA, ICMPv6ND_NS,
                                ICMPv6NDOptDstLLAddr, ICMPv6NDOptSrcLLAddr,
                                ICMPv6ND_RS, ICMPv6ND_RA, IPv6,
                                IPv6ExtHdrDestOpt, IPv6ExtHdrFragment,
                                IPv6ExtHdrHopByHop, IPv6ExtHdrRouting,
                                ICMPv6EchoReply, fragment6)
from scapy.layers.inet import fragment
from scapy.layers.l2 import ARP, Ether
from scapy.packet import Raw

from snabbdiff import REPO

SHARED = os.environ.get("SNB_SHARED", os.path.join(REPO, "..", "shared"))
VLAN4, VLAN6 = 1092, 1638
AFTR4, AFTR4_MAC, NH4_MAC = "10.10.10.10", "12:12:12:12:12:12", \
    "68:68:68:68:68:68"
AFTR6, AFTR6_MAC, NH6_MAC = "8:9:a:b:c:d:e:f", "22:22:22:22:22:22", \
    "44:44:44:44:44:44"
NH4_IP, NH6_IP = "4.5.6.7", "8:9:a:b:4:3:2:1"
INET, INET_MAC, B4_MAC = "198.51.100.7", "02:00:00:00:00:04", \
    "02:00:00:00:00:06"
# Softwires of the reference's test binding table: ipv4, a port in its
# set, b4-ipv6, br-address.
SW = {
    "all": ("178.79.150.1", 1234, "127:10:20:30:40:50:60:128", AFTR6),
    "p80": ("178.79.150.233", 80, "127:2:3:4:5:6:7:128", AFTR6),
    "p2300": ("178.79.150.233", 2300, "127:11:12:13:14:15:16:128", AFTR6),
    "br2": ("178.79.150.2", 7850, "127:24:35:46:57:68:79:128",
            "1e:1:1:1:1:1:1:af"),
    "psid4": ("178.79.150.3", 4100, "127:14:25:36:47:58:69:128",
              "1e:2:2:2:2:2:2:af"),
    "psid1": ("178.79.150.15", 4097, "127:22:33:44:55:66:77:128", AFTR6),
}
# Groups whose frames make a sequence (learning a neighbour): halved, never
# taken one by one.
SEQUENTIAL = ("resolve",)
# Groups whose frames carry their own VLAN tags (or none): never tagged.
UNTAGGED = ("vlan-misfits",)
BASE = ["tunnel_icmp", "icmp_on_fail", "no_icmp", "tunnel_icmp-vlan"]


def write_confs(work):
    """name -> path of every configuration the groups use."""
    src = os.path.join(SHARED, "conformance", "lwaftr")
    out = {}
    for f in sorted(os.listdir(src)):
        if not f.endswith(".conf"):
            continue
        text = open(os.path.join(src, f)).read()
        name = f[:-5]
        for vlan in (False, True):
            t = text
            if vlan:
                if "vlan-tag" in t:
                    continue
                t = t.replace("mac 12:12:12:12:12:12;",
                              "mac 12:12:12:12:12:12;\nvlan-tag %d;" % VLAN4)
                t = t.replace("mac 22:22:22:22:22:22;",
                              "mac 22:22:22:22:22:22;\nvlan-tag %d;" % VLAN6)
            n = name + ("-vlan" if vlan else "")
            out[n] = os.path.join(work, n + ".conf")
            with open(out[n], "w") as fp:
                fp.write(t)
    # tunnel_icmp with what no test configuration has: reserved ports
    # (a = 4 on the all-ports address and on a psid-length 6 one: shift
    # 12 and 6) and a flow label.
    t = open(out["tunnel_icmp"]).read()
    for ip4, plen in (("178.79.150.1", 0), ("178.79.150.3", 6)):
        at = t.index("ipv4 %s;" % ip4)
        at = t.index("psid-length %d;" % plen, at) + len("psid-length %d;"
                                                         % plen)
        t = t[:at] + "\n        reserved-ports-bit-count 4;" + t[at:]
    t = t.replace("\n  internal-interface {\n",
                  "\n  internal-interface {\n    flow-label 703710;\n", 1)
    out["tunnel_icmp_resv_flow"] = os.path.join(work,
                                                "tunnel_icmp_resv_flow.conf")
    with open(out["tunnel_icmp_resv_flow"], "w") as fp:
        fp.write(t)
    return out


def tag(frame, vid):
    b = bytes(frame)
    return b[:12] + struct.pack("!HH", 0x8100, vid) + b[12:]


def e4(ip, src=INET_MAC, dst=AFTR4_MAC):
    return bytes(Ether(src=src, dst=dst) / ip)


def e6(ip, src=B4_MAC, dst=AFTR6_MAC):
    return bytes(Ether(src=src, dst=dst) / ip)


def tun(sw, ip4, hlim=64, src=None, dst=None):
    return IPv6(src=src or sw[2], dst=dst or sw[3], hlim=hlim, nh=4) / ip4


def l4(proto, sport, dport, payload=b"corpus-payload"):
    if proto == "tcp":
        return TCP(sport=sport, dport=dport) / Raw(payload)
    if proto == "udp":
        return UDP(sport=sport, dport=dport) / Raw(payload)
    return ICMP(type=8, id=dport if dport else 1) / Raw(payload)


def from_inet():
    """IPv4 frames arriving from the internet."""
    fr = []
    for name, (ip4, port, b4, br) in SW.items():
        for proto in ("tcp", "udp", "icmp"):
            for ttl in (0, 1, 2, 64):
                fr.append(e4(IP(src=INET, dst=ip4, ttl=ttl) /
                             l4(proto, 5555, port)))
            fr.append(e4(IP(src=INET, dst=ip4) / l4(proto, 5555, port + 1)))
        fr.append(e4(IP(src=INET, dst=ip4, proto=47) / Raw(b"\0" * 20)))
        fr.append(e4(IP(src=INET, dst=ip4, proto=132) /
                     Raw(struct.pack("!HH", 5555, port) + b"\0" * 20)))
        p = IP(src=INET, dst=ip4, chksum=0x1234) / l4("udp", 5555, port)
        fr.append(e4(p))
        p = IP(src=INET, dst=ip4) / TCP(sport=5555, dport=port, chksum=1)
        fr.append(e4(p))
        fr.append(e4(IP(src=INET, dst=ip4, options=[IPOption_NOP()] * 4) /
                     l4("udp", 5555, port)))
        fr.append(e4(IP(src=INET, dst=ip4, options=[IPOption_RR()]) /
                     l4("tcp", 5555, port)))
        fr.append(e4(IP(src=INET, dst=ip4, flags="DF", tos=0xb9) /
                     l4("udp", 5555, port, b"x" * 1400)))
    for dst in ("178.79.150.9", "1.2.3.4", AFTR4, "255.255.255.255",
                "224.0.0.1", "178.79.150.0"):
        for proto in ("tcp", "udp", "icmp"):
            fr.append(e4(IP(src=INET, dst=dst) / l4(proto, 5555, 80)))
    for src in (AFTR4, "127.0.0.1", "0.0.0.0", "224.0.0.5", "178.79.150.1"):
        fr.append(e4(IP(src=src, dst="178.79.150.1") / l4("udp", 9, 80)))
    good = e4(IP(src=INET, dst="178.79.150.1") / l4("tcp", 5555, 80))
    for n in range(14, len(good)):
        fr.append(good[:n])
    hdr = bytearray(good)
    hdr[14] = 0x44
    fr.append(bytes(hdr))         # IHL 4
    hdr = bytearray(good)
    hdr[14] = 0x65
    fr.append(bytes(hdr))         # version 6 in an IPv4 frame
    hdr = bytearray(good)
    hdr[16:18] = struct.pack("!H", 200)
    fr.append(bytes(hdr))         # total length beyond the frame
    hdr = bytearray(good)
    hdr[16:18] = struct.pack("!H", 30)
    fr.append(bytes(hdr))         # total length short of the frame
    fr.append(good + b"\0" * 10)  # Ethernet padding
    fr.append(bytes(Ether(src=INET_MAC, dst=AFTR4_MAC, type=0x86dd) /
                    IPv6(src="::1", dst=AFTR6) / UDP()))
    fr.append(bytes(Ether(src=INET_MAC, dst=AFTR4_MAC, type=0x88b5) /
                    Raw(b"\0" * 46)))
    fr.append(e4(IP(src=INET, dst="178.79.150.1"), dst="ff:ff:ff:ff:ff:ff"))
    fr.append(e4(IP(src=INET, dst="178.79.150.1") / l4("udp", 1, 2),
                 dst="02:33:33:33:33:33"))
    return fr


def quoted4(sw, proto="udp", sport=None, dport=53):
    """An IPv4 packet from softwire sw to the internet, as quoted back."""
    return IP(src=sw[0], dst=INET, ttl=1) / l4(proto, sport or sw[1], dport)


def icmp4_types(dst_sw=SW["all"], own=False):
    """Every ICMPv4 type 0..44 with its codes, bare and quoting."""
    fr = []
    dst = AFTR4 if own else dst_sw[0]
    for t in range(45):
        codes = {3: 16, 5: 4, 11: 2, 12: 3}.get(t, 2)
        for c in range(codes):
            if t in (0, 8, 13, 14, 15, 16, 17, 18):
                fr.append(e4(IP(src=INET, dst=dst) /
                             ICMP(type=t, code=c, id=dst_sw[1], seq=1) /
                             Raw(b"ping")))
            else:
                fr.append(e4(IP(src=INET, dst=dst) / ICMP(type=t, code=c) /
                             bytes(quoted4(dst_sw))[:28]))
    for sw in SW.values():
        for proto in ("udp", "tcp", "icmp"):
            for port in (sw[1], sw[1] + 1):
                q = bytes(quoted4(sw, proto, port))
                for t, c in ((3, 1), (3, 4), (11, 0), (12, 0)):
                    fr.append(e4(IP(src=INET, dst=sw[0]) /
                                 ICMP(type=t, code=c, nexthopmtu=1400) /
                                 q[:28 + (t == 3) * 40]))
    q = bytes(quoted4(SW["all"]))
    fr.append(e4(IP(src=INET, dst=SW["all"][0]) / ICMP(type=3, code=1) /
                 q[:20]))                          # quote short of ports
    fr.append(e4(IP(src=INET, dst=SW["all"][0]) / ICMP(type=3, code=1,
                                                       chksum=7) / q))
    fr.append(e4(IP(src=INET, dst=SW["all"][0]) / ICMP(type=8, chksum=7)))
    fr.append(e4(IP(src=INET, dst=AFTR4, ttl=1) / ICMP(type=8) / b"ttl"))
    fr.append(e4(IP(src=INET, dst=AFTR4, flags="DF", options=[
        IPOption_NOP()] * 4) / ICMP(type=8, id=3) / b"opts"))
    fr.append(e4(IP(src=INET, dst=AFTR4, chksum=9) / ICMP(type=8, chksum=9)))
    fr.append(e4(IP(src=INET, dst=AFTR4) / ICMP(type=8))[:38])
    return fr


def from_b4():
    """IPv6 frames from B4s: tunnelled IPv4 and what goes wrong with it."""
    fr = []
    for name, sw in SW.items():
        ip4, port, b4, br = sw
        for proto in ("tcp", "udp", "icmp"):
            fr.append(e6(tun(sw, IP(src=ip4, dst=INET) /
                             l4(proto, port, 53))))
            fr.append(e6(tun(sw, IP(src=ip4, dst=INET) /
                             l4(proto, port + 1, 53))))
            for ttl in (0, 1, 2):
                fr.append(e6(tun(sw, IP(src=ip4, dst=INET, ttl=ttl) /
                                 l4(proto, port, 53))))
        for hl in (0, 1, 2, 255):
            fr.append(e6(tun(sw, IP(src=ip4, dst=INET) / l4("udp", port, 9),
                             hlim=hl)))
        fr.append(e6(tun(sw, IP(src=ip4, dst=INET) / l4("udp", port, 9),
                         src="127::1")))
        fr.append(e6(tun(sw, IP(src=ip4, dst=INET) / l4("udp", port, 9),
                         dst="1e:3:3:3:3:3:3:af")))
        fr.append(e6(tun(sw, IP(src="178.79.150.99", dst=INET) /
                         l4("udp", port, 9))))
        fr.append(e6(tun(sw, IP(src=ip4, dst=INET, chksum=5) /
                         l4("udp", port, 9))))
        fr.append(e6(tun(sw, IP(src=ip4, dst=INET, options=[
            IPOption_NOP()] * 4) / l4("tcp", port, 9))))
        fr.append(e6(tun(sw, IP(src=ip4, dst=AFTR4) / ICMP(type=8, id=port) /
                         b"echo-via-tunnel")))
        fr.append(e6(tun(sw, IP(src=ip4, dst=INET, flags="DF", tos=0x2d) /
                         l4("udp", port, 9, b"y" * 1460))))
        for other in SW.values():        # hairpinning
            for proto in ("tcp", "udp", "icmp"):
                fr.append(e6(tun(sw, IP(src=ip4, dst=other[0]) /
                                 l4(proto, port, other[1]))))
            fr.append(e6(tun(sw, IP(src=ip4, dst=other[0]) /
                             l4("udp", port, other[1] + 1))))
            fr.append(e6(tun(sw, IP(src=ip4, dst=other[0], ttl=1) /
                             l4("udp", port, other[1]))))
            for t, c in ((3, 1), (11, 0), (3, 3)):
                q = IP(src=other[0], dst=ip4) / l4("udp", other[1], port)
                fr.append(e6(tun(sw, IP(src=ip4, dst=other[0]) /
                                 ICMP(type=t, code=c) / bytes(q)[:28])))
        for t, c in ((3, 3), (3, 1), (11, 0), (0, 0), (5, 1), (12, 0)):
            q = IP(src=INET, dst=ip4) / l4("udp", 53, port)
            fr.append(e6(tun(sw, IP(src=ip4, dst=INET) /
                             ICMP(type=t, code=c, id=port) / bytes(q)[:28])))
        inner = IP(src=ip4, dst=INET) / l4("udp", port, 9)
        for ext in (IPv6ExtHdrHopByHop(), IPv6ExtHdrDestOpt(),
                    IPv6ExtHdrRouting(), IPv6ExtHdrFragment(id=7)):
            fr.append(e6(IPv6(src=b4, dst=br) / ext / inner))
        for nh in (41, 6, 17, 59, 47):
            fr.append(e6(IPv6(src=b4, dst=br, nh=nh) / bytes(inner)))
    good = e6(tun(SW["all"], IP(src=SW["all"][0], dst=INET) /
                  l4("tcp", 1234, 80)))
    for n in range(14, len(good)):
        fr.append(good[:n])
    b = bytearray(good)
    b[18:20] = struct.pack("!H", 500)
    fr.append(bytes(b))            # payload length beyond the frame
    b = bytearray(good)
    b[18:20] = struct.pack("!H", 10)
    fr.append(bytes(b))            # payload length short of the frame
    b = bytearray(good)
    b[14] = 0x45
    fr.append(bytes(b))            # version 4 in an IPv6 frame
    fr.append(good + b"\0" * 12)
    fr.append(e6(tun(SW["all"], IP(src=SW["all"][0], dst=INET) /
                     l4("udp", 1234, 9)), dst="33:33:00:00:00:01"))
    return fr


def icmp6_types():
    """ICMPv6 of every type family to the AFTR and through it."""
    fr = []
    sw = SW["all"]
    tunnelled = IPv6(src=sw[3], dst=sw[2], hlim=255, nh=4) / IP(
        src=INET, dst=sw[0]) / l4("udp", 53, sw[1])
    other = IPv6(src=AFTR6, dst="2001:db8::9") / UDP(sport=1, dport=2)
    for t in (1, 2, 3, 4, 100, 127, 128, 129, 130, 133, 134, 137, 143, 200):
        for c in range(5 if t in (1, 4) else 3):
            for q in (tunnelled, other):
                body = struct.pack("!BBHI", t, c, 0, 1280 if t == 2 else 0)
                ip6 = IPv6(src=sw[2], dst=sw[3], nh=58) / Raw(
                    body + bytes(q)[:96])
                ip6 = IPv6(bytes(ip6))
                fr.append(e6(fix6(ip6)))
    for t, c in ((1, 0), (1, 4), (2, 0), (3, 0), (3, 1), (4, 0)):
        body = struct.pack("!BBHI", t, c, 0, 1200) + bytes(tunnelled)[:96]
        fr.append(e6(fix6(IPv6(src="2001:db8::1", dst=sw[3], nh=58,
                               hlim=64) / Raw(body))))
    for dst in (AFTR6, "1e:1:1:1:1:1:1:af", "2001:db8::1"):
        for hl in (0, 1, 64, 255):
            fr.append(e6(IPv6(src=sw[2], dst=dst, hlim=hl) /
                         ICMPv6EchoRequest(id=9, seq=2, data=b"ping6")))
        fr.append(e6(IPv6(src=sw[2], dst=dst) / ICMPv6EchoRequest(
            id=9, data=b"z", cksum=3)))
        fr.append(e6(IPv6(src=sw[2], dst=dst) / ICMPv6EchoReply(id=9)))
        fr.append(e6(IPv6(src=sw[2], dst=dst) /
                     IPv6ExtHdrDestOpt() / ICMPv6EchoRequest(id=9)))
        fr.append(e6(IPv6(src=sw[2], dst=dst) / UDP(sport=1, dport=2)))
        fr.append(e6(IPv6(src=sw[2], dst=dst) / TCP(sport=1, dport=2)))
    e = e6(IPv6(src=sw[2], dst=AFTR6) / ICMPv6EchoRequest(id=9, data=b"abc"))
    for n in range(54, len(e)):
        fr.append(e[:n])
    return fr


def fix6(ip6):
    """ip6 with its ICMPv6 checksum computed."""
    from scapy.layers.inet6 import in6_chksum
    raw = bytearray(bytes(ip6.payload))
    raw[2:4] = b"\0\0"
    ck = in6_chksum(58, ip6, bytes(raw))
    raw[2:4] = struct.pack("!H", ck)
    ip6 = ip6.copy()
    ip6.remove_payload()
    return ip6 / Raw(bytes(raw))


def frags4():
    fr = []
    sw = SW["all"]
    p = IP(src=INET, dst=sw[0], id=77) / UDP(sport=5, dport=sw[1]) / Raw(
        bytes(range(256)) * 12)
    parts = [e4(x) for x in fragment(p, fragsize=800)]
    fr += parts + parts[::-1] + [parts[0], parts[0]] + parts[1:]
    fr += [parts[1], parts[0], parts[2], parts[3]]
    small = [e4(x) for x in fragment(IP(bytes(p), id=78), fragsize=8)]
    fr += small[:60]                       # too many fragments
    fr += [parts[0]]                       # alone
    fr += [parts[-1]]
    ov = IP(bytes(p), id=79)
    a = [e4(x) for x in fragment(ov, fragsize=800)]
    b = [e4(x) for x in fragment(ov, fragsize=400)]
    fr += [a[0], b[1], a[1], a[2], a[3]]   # overlapping
    q = IP(src=INET, dst="178.79.150.9", id=80) / UDP() / Raw(b"u" * 2000)
    fr += [e4(x) for x in fragment(q, fragsize=1000)]
    e = IP(src=INET, dst=AFTR4, id=81) / ICMP(type=8) / Raw(b"e" * 1600)
    fr += [e4(x) for x in fragment(e, fragsize=1000)]
    return fr


def frags6():
    fr = []
    sw = SW["all"]
    inner = IP(src=sw[0], dst=INET) / UDP(sport=sw[1], dport=9) / Raw(
        b"f" * 2600)
    p = IPv6(src=sw[2], dst=sw[3]) / IPv6ExtHdrFragment(id=0x1234) / inner
    parts = [e6(x) for x in fragment6(p, 1000)]
    fr += parts + parts[::-1] + [parts[0], parts[0]] + parts[1:]
    p2 = IPv6(src=sw[2], dst=sw[3]) / IPv6ExtHdrFragment(id=0x99) / inner
    many = [e6(x) for x in fragment6(p2, 100)]
    fr += many
    fr += [parts[0]]
    i4 = [e6(tun(sw, x)) for x in fragment(IP(bytes(inner), id=5),
                                           fragsize=1000)]
    fr += i4 + i4[::-1]
    return fr


def arp_ndp(v6_nh=False):
    """ARP and neighbour discovery, addressed to us and to others."""
    fr4, fr6 = [], []
    for op, pdst, dst in ((1, AFTR4, "ff:ff:ff:ff:ff:ff"),
                          (1, "10.10.10.11", "ff:ff:ff:ff:ff:ff"),
                          (1, AFTR4, AFTR4_MAC), (2, AFTR4, AFTR4_MAC),
                          (2, "10.10.10.99", "ff:ff:ff:ff:ff:ff"), (3, AFTR4,
                                                                  AFTR4_MAC)):
        fr4.append(bytes(Ether(src=INET_MAC, dst=dst) /
                         ARP(op=op, hwsrc=INET_MAC, psrc=NH4_IP, pdst=pdst,
                             hwdst=AFTR4_MAC if op == 2 else "0:0:0:0:0:0")))
    fr4.append(bytes(Ether(src=INET_MAC, dst="ff:ff:ff:ff:ff:ff") /
                     ARP(hwtype=6, psrc=NH4_IP, pdst=AFTR4)))
    fr4.append(bytes(Ether(src=INET_MAC, dst="ff:ff:ff:ff:ff:ff") /
                     ARP(psrc=NH4_IP, pdst=AFTR4))[:34])
    fr4.append(e4(IP(src=INET, dst="178.79.150.1") / l4("udp", 5, 1234)))
    sn = "ff02::1:ff0e:f"
    sn_mac = "33:33:ff:0e:00:0f"
    for src, dst, dmac, tgt, opt, hl in (
            ("fe80::1", sn, sn_mac, AFTR6, True, 255),
            ("fe80::1", AFTR6, AFTR6_MAC, AFTR6, True, 255),
            ("fe80::1", AFTR6, AFTR6_MAC, AFTR6, False, 255),
            ("::", sn, sn_mac, AFTR6, False, 255),
            ("fe80::1", sn, sn_mac, AFTR6, True, 254),
            ("fe80::1", "ff02::1:ff00:9", "33:33:ff:00:00:09", "8::9", True,
             255)):
        ns = IPv6(src=src, dst=dst, hlim=hl) / ICMPv6ND_NS(tgt=tgt)
        if opt:
            ns = ns / ICMPv6NDOptSrcLLAddr(lladdr=B4_MAC)
        fr6.append(e6(ns, dst=dmac))
    for sol, ovr, opt in ((1, 1, True), (1, 0, True), (0, 1, True),
                          (1, 1, False)):
        fr6.append(e6(IPv6(src=NH6_IP, dst=AFTR6, hlim=255) /
                      ICMPv6ND_NA(tgt=NH6_IP, R=1, S=sol, O=ovr) /
                      (ICMPv6NDOptDstLLAddr(lladdr="44:44:44:44:44:45")
                       if opt else Raw(b""))))
    fr6.append(e6(IPv6(src="fe80::1", dst="ff02::2", hlim=255) /
                  ICMPv6ND_RS(), dst="33:33:00:00:00:02"))
    fr6.append(e6(IPv6(src="fe80::1", dst="ff02::1", hlim=255) /
                  ICMPv6ND_RA(), dst="33:33:00:00:00:01"))
    fr6.append(e6(tun(SW["all"], IP(src=SW["all"][0], dst=INET) /
                      l4("udp", 1234, 9))))
    return fr4, fr6


def nd_malformed():
    """ARP and neighbour discovery that ndp.lua and arp.lua check and
    refuse, or take: bad checksum, code, hop limit and option lengths,
    an extension header, an ARP probe, odd hardware and protocol lengths,
    an unsolicited ARP reply from the next hop."""
    sn, sn_mac = "ff02::1:ff0e:f", "33:33:ff:0e:00:0f"
    fr4, fr6 = [], []

    def ns(**kw):
        ip = IPv6(src=kw.get("src", "fe80::1"), dst=sn,
                  hlim=kw.get("hlim", 255))
        m = ICMPv6ND_NS(tgt=kw.get("tgt", AFTR6), code=kw.get("code", 0))
        if "cksum" in kw:
            m.cksum = kw["cksum"]
        o = kw.get("opt", bytes(ICMPv6NDOptSrcLLAddr(lladdr=B4_MAC)))
        if kw.get("ext"):
            ip = ip / IPv6ExtHdrHopByHop()
        return e6(ip / m / Raw(o), dst=sn_mac)
    fr6 += [ns(cksum=0x1234), ns(code=1), ns(hlim=64),
            ns(opt=b"\x01\x00" + b"\0" * 6),           # option length 0
            ns(opt=b"\x01\x02" + b"\0" * 14),          # 16-byte option
            ns(opt=b""), ns(src="::"), ns(tgt="ff02::1"), ns(ext=True),
            ns(tgt="fe80::2"), ns()[:70]]
    for hl in (255, 254):
        fr6.append(e6(IPv6(src=NH6_IP, dst=AFTR6, hlim=hl) /
                      ICMPv6ND_NA(tgt=NH6_IP, R=1, S=1, O=1) /
                      ICMPv6NDOptDstLLAddr(lladdr="44:44:44:44:44:46"),
                      src="44:44:44:44:44:46"))
    bc = "ff:ff:ff:ff:ff:ff"
    for a in (ARP(op=1, hwsrc=INET_MAC, psrc="0.0.0.0", pdst=AFTR4),
              ARP(op=1, hwsrc=INET_MAC, psrc=AFTR4, pdst=AFTR4),
              ARP(op=1, hwlen=8, hwsrc=INET_MAC, psrc=NH4_IP, pdst=AFTR4),
              ARP(op=1, plen=6, hwsrc=INET_MAC, psrc=NH4_IP, pdst=AFTR4),
              ARP(op=1, ptype=0x86dd, hwsrc=INET_MAC, psrc=NH4_IP,
                  pdst=AFTR4),
              ARP(op=2, hwsrc="68:68:68:68:68:6a", psrc=NH4_IP,
                  pdst=AFTR4, hwdst=bc),
              ARP(op=1, hwsrc="68:68:68:68:68:6b", psrc=NH4_IP,
                  pdst=NH4_IP)):
        fr4.append(bytes(Ether(src=INET_MAC, dst=bc) / a))
    return fr4, fr6


def resolve_seq():
    """Traffic before, during and after the next hop answers (next hop
    by IP: the AFTR solicits, learns, and sends what waited)."""
    sw = SW["all"]
    d4 = e4(IP(src=INET, dst=sw[0]) / l4("udp", 9, sw[1]))
    d6 = e6(tun(sw, IP(src=sw[0], dst=INET) / l4("udp", sw[1], 9)))
    arp = bytes(Ether(src="68:68:68:68:68:69", dst=AFTR4_MAC) /
                ARP(op=2, hwsrc="68:68:68:68:68:69", psrc=NH4_IP, pdst=AFTR4,
                    hwdst=AFTR4_MAC))
    na = e6(IPv6(src=NH6_IP, dst=AFTR6, hlim=255) /
            ICMPv6ND_NA(tgt=NH6_IP, R=0, S=1, O=1) /
            ICMPv6NDOptDstLLAddr(lladdr="44:44:44:44:44:45"),
            src="44:44:44:44:44:45")
    return [d4, d4, arp, d4], [d6, d6, na, d6]


def mtu_edges():
    fr4, fr6 = [], []
    sw = SW["all"]
    for size in (548, 556, 557, 576, 577, 1200, 1232, 1240, 1260, 1420,
                 1460, 1480, 1500):
        for df in ("DF", 0):
            pay = b"m" * (size - 28)
            fr4.append(e4(IP(src=INET, dst=sw[0], flags=df) /
                          UDP(sport=9, dport=sw[1]) / pay))
            fr6.append(e6(tun(sw, IP(src=sw[0], dst=INET, flags=df) /
                              UDP(sport=sw[1], dport=9) / pay)))
    return fr4, fr6


def edges():
    """Decisions of lwaftr.lua no other group makes: every softwire's
    ports at the edges of its port set and of the reserved range; errors
    quoting big packets (ICMPv4 quotes to 576 bytes, ICMPv6
    to 1280); a B4's echo to the internet by its identifier."""
    fr4, fr6 = [], []
    ports = (0, 1, 15, 16, 63, 64, 255, 256, 300, 1023, 1024, 4095, 4096,
             4100, 4111, 4112, 7850, 65535)
    for sw in SW.values():
        for port in ports + (sw[1] - 1, sw[1], sw[1] + 1):
            fr4.append(e4(IP(src=INET, dst=sw[0]) / l4("udp", 5555, port)))
            fr6.append(e6(tun(sw, IP(src=sw[0], dst=INET) /
                              l4("tcp", port, 80))))
        fr6.append(e6(tun(sw, IP(src=sw[0], dst=INET) / ICMP(
            type=8, id=sw[1]) / b"b4-echo")))
        fr6.append(e6(tun(sw, IP(src=sw[0], dst=INET) / ICMP(
            type=8, id=(sw[1] + 1) & 0xffff) / b"b4-echo")))
    sw = SW["all"]
    for size in (100, 540, 548, 549, 600, 1400):
        pay = b"B" * (size - 28)
        fr4.append(e4(IP(src=INET, dst="178.79.150.9", flags=0) /
                      UDP(sport=7, dport=8) / pay))          # unbound
        fr4.append(e4(IP(src=INET, dst=sw[0], ttl=1) /
                      UDP(sport=7, dport=8) / pay))          # TTL
        fr6.append(e6(tun(sw, IP(src=sw[0], dst=INET) / UDP(
            sport=7, dport=8) / pay, src="127::9")))         # no softwire
    for size in (1200, 1232, 1233, 1300):
        pay = b"C" * (size - 28)
        fr6.append(e6(tun(sw, IP(src=sw[0], dst=INET) / UDP(
            sport=7, dport=8) / pay, src="127::9")))
    return fr4, fr6


def ptb():
    """Packet too big about a tunnelled packet, with MTUs around the IPv6
    header's 40 bytes and beyond 16 bits (lwaftr.lua icmpv6_incoming)."""
    sw = SW["all"]
    sent = IPv6(src=sw[3], dst=sw[2], hlim=255, nh=4) / IP(
        src=INET, dst=sw[0], ttl=63) / l4("udp", 53, sw[1], b"q" * 1200)
    fr6 = []
    for mtu in (0, 1, 39, 40, 41, 68, 576, 1280, 1500, 65535, 65575,
                0x10000 + 1300, 0xffffffff):
        body = struct.pack("!BBHI", 2, 0, 0, mtu) + bytes(sent)[:1232]
        fr6.append(e6(fix6(IPv6(src="2001:db8::1", dst=sw[3], nh=58) /
                           Raw(body))))
    return fr6


def vlan_misfits():
    """Frames on the sides of a VLAN configuration (1092 on v4, 1638 on
    v6) with the wrong tag, none, a priority or DEI bit, an 802.1ad outer
    tag, two tags; taken whole, never tagged by snabb-corpus."""
    sw = SW["all"]
    d4 = e4(IP(src=INET, dst=sw[0]) / l4("udp", 9, sw[1]))
    d6 = e6(tun(sw, IP(src=sw[0], dst=INET) / l4("udp", sw[1], 9)))
    arp = bytes(Ether(src=INET_MAC, dst="ff:ff:ff:ff:ff:ff") /
                ARP(op=1, hwsrc=INET_MAC, psrc=NH4_IP, pdst=AFTR4))
    ns = e6(IPv6(src="fe80::1", dst="ff02::1:ff0e:f", hlim=255) /
            ICMPv6ND_NS(tgt=AFTR6) / ICMPv6NDOptSrcLLAddr(lladdr=B4_MAC),
            dst="33:33:ff:0e:00:0f")

    def tagged(f, tci, tpid=0x8100):
        return f[:12] + struct.pack("!HH", tpid, tci) + f[12:]
    fr4, fr6 = [], []
    for f, vid, out in ((d4, VLAN4, fr4), (arp, VLAN4, fr4),
                        (d6, VLAN6, fr6), (ns, VLAN6, fr6)):
        other = VLAN6 if vid == VLAN4 else VLAN4
        out += [f, tagged(f, vid), tagged(f, other), tagged(f, 0),
                tagged(f, vid | 0x2000), tagged(f, vid | 0x1000),
                tagged(f, vid, 0x88a8), tagged(tagged(f, 7), vid),
                tagged(f, vid)[:16], tagged(f, vid)[:18]]
    return fr4, fr6


def mutations(pool, n, rnd):
    """n random mutations of frames from pool: bytes flipped in the
    headers, cut short, or grown."""
    out = []
    for _ in range(n):
        b = bytearray(rnd.choice(pool))
        k = rnd.random()
        if k < 0.7:
            for _ in range(rnd.randint(1, 3)):
                i = rnd.randrange(14, min(len(b), 100))
                b[i] = rnd.randrange(256) if rnd.random() < 0.5 else \
                    b[i] ^ (1 << rnd.randrange(8))
        elif k < 0.85:
            b = b[:rnd.randrange(14, len(b))]
        else:
            b += bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 40)))
        out.append(bytes(b))
    return out


def groups(nmut):
    rnd = random.Random(12)
    a4, a6 = arp_ndp()
    s4, s6 = resolve_seq()
    m4, m6 = mtu_edges()
    g = [
        ("inet", BASE + ["no_hairpin"], from_inet(), []),
        ("icmp4-types", BASE, icmp4_types(), []),
        ("icmp4-own", BASE, icmp4_types(own=True), []),
        ("b4", BASE + ["no_hairpin"], [], from_b4()),
        ("icmp6-types", BASE, [], icmp6_types()),
        ("frag4", ["no_icmp", "no_icmp_maxfrags1", "tunnel_icmp"],
         frags4(), []),
        ("frag6", ["no_icmp", "no_icmp_maxfrags1", "tunnel_icmp"], [],
         frags6()),
        ("arp-ndp", ["tunnel_icmp", "tunnel_icmp-vlan", "tunnel_icmp_withoutmac",
                     "tunnel_icmp_withoutmac-vlan", "tunnel_icmp_without_mac4",
                     "tunnel_icmp_without_mac4-vlan"], a4, a6),
        ("resolve", ["tunnel_icmp_withoutmac", "tunnel_icmp_withoutmac-vlan",
                     "tunnel_icmp_without_mac4",
                     "tunnel_icmp_without_mac4-vlan"], s4, s6),
        ("mtu", ["small_ipv4_mtu_icmp", "small_ipv6_mtu_no_icmp",
                 "small_ipv6_mtu_no_icmp_allow", "big_mtu_no_icmp",
                 "small_ipv4_mtu_icmp-vlan"], m4, m6),
        ("filters", ["no_icmp_with_filters_accept", "no_icmp_with_filters_drop",
                     "no_icmp_with_filters_accept-vlan"],
         from_inet()[:60], from_b4()[:60]),
    ]
    ed4, ed6 = edges()
    g.append(("edges", ["tunnel_icmp", "tunnel_icmp_resv_flow",
                        "small_ipv4_mtu_icmp", "tunnel_icmp-vlan"],
              ed4, ed6))
    g.append(("ptb", ["tunnel_icmp", "tunnel_icmp-vlan"], [], ptb()))
    n4, n6 = nd_malformed()
    g.append(("nd-malformed", ["tunnel_icmp", "tunnel_icmp_withoutmac",
                               "tunnel_icmp_without_mac4-vlan"], n4, n6))
    v4, v6 = vlan_misfits()
    g.append(("vlan-misfits", ["tunnel_icmp-vlan", "tunnel_icmp"], v4, v6))
    pool4 = [f for x in g if x[0] in ("inet", "icmp4-types", "icmp4-own")
             for f in x[2] if len(f) > 34]
    pool6 = [f for x in g if x[0] in ("b4", "icmp6-types") for f in x[3]
             if len(f) > 54]
    for i in range(0, nmut // 2, 250):
        g.append(("mut4-%d" % i, ["tunnel_icmp", "tunnel_icmp-vlan"],
                  mutations(pool4, min(250, nmut // 2 - i), rnd), []))
        g.append(("mut6-%d" % i, ["tunnel_icmp", "tunnel_icmp-vlan"], [],
                  mutations(pool6, min(250, nmut // 2 - i), rnd)))
    return g
