#!/usr/bin/python3
# examples/lwaftr-scale.py: traffic for examples/lwaftr-scale.sh, made and
# checked with scapy (an implementation independent of snb's).
#
#   lwaftr-scale.py gen CONF V4.pcap V6.pcap
#	softwires of CONF: UDP from the internet to them (plain, and IPv4
#	fragments), from their B4s to the internet (plain, and IPv6
#	fragments) and hairpinned to another softwire
#   lwaftr-scale.py bench CONF V4.pcap V6.pcap SIZE
#	for bench/scale-run: one plain packet of SIZE bytes each way for
#	every softwire of CONF, no fragments, no hairpins
#   lwaftr-scale.py check CONF MAC0,MAC1,... ONE4 ONE6 OUT4 OUT6
#	OUT* (the copies' output, joined) holds the same IP packets as ONE*
#	(one lwaftr alone: so no datagram lost its fragments to another
#	copy), every softwire address's packets, both ways, IPv4 fragments
#	and hairpins included, came from one copy, and every B4's IPv6
#	fragments from one copy (copies are told apart by the source MAC
#	each copy's configuration gives it)
import collections
import ipaddress
import re
import sys

from scapy.all import (IP, IPv6, UDP, Ether, IPv6ExtHdrFragment, fragment,
                       fragment6, raw, rdpcap, wrpcap)

BR = "8:9:a:b:c:d:e:f"
AFTR_MAC, NH4, NH6 = "12:12:12:12:12:12", "68:68:68:68:68:68", \
    "44:44:44:44:44:44"


def softwires(conf):
    """(ipv4, psid, psid-length, b4) of every softwire of conf."""
    text = open(conf).read()
    out = []
    for m in re.finditer(r"softwire \{(.*?)port-set \{\s*psid-length (\d+);",
                         text, re.S):
        body = m.group(1)
        v4 = re.search(r"ipv4 ([0-9.]+);", body).group(1)
        psid = int(re.search(r"psid (\d+);", body).group(1))
        b4 = re.search(r"b4-ipv6 ([0-9a-f:]+);", body).group(1)
        br = re.search(r"br-address ([0-9a-f:]+);", body).group(1)
        if br == BR:
            out.append((v4, psid, int(m.group(2)), b4))
    return out


def port_of(psid, plen, i):
    """A port of the softwire's set (no reserved bits in these tables)."""
    shift = 16 - plen
    return (psid << shift) | (0x400 + i if shift > 11 else i % (1 << shift))


def gen(conf, p4, p6):
    sws = [s for s in softwires(conf) if s[0].startswith("16.")]
    v4, v6 = [], []
    for n, (a, psid, plen, b4) in enumerate(sws):
        port = port_of(psid, plen, n)
        inet = "203.0.113.%d" % (n % 200 + 1)
        # From the internet: plain, then a datagram in 3 fragments.
        v4.append(Ether(src=NH4, dst=AFTR_MAC) / IP(src=inet, dst=a) /
                  UDP(sport=5000 + n, dport=port) / (b"d" * 64))
        big = IP(src=inet, dst=a, id=n + 1) / \
            UDP(sport=6000 + n, dport=port) / (b"D" * 1100)
        v4 += [Ether(src=NH4, dst=AFTR_MAC) / f
               for f in fragment(big, fragsize=400)]
        # From the B4: plain, fragmented IPv6, and hairpinned.
        outer = Ether(src=NH6, dst="22:22:22:22:22:22") / \
            IPv6(src=b4, dst=BR, nh=4)
        v6.append(outer / IP(src=a, dst="198.51.100.%d" % (n % 200 + 1)) /
                  UDP(sport=port, dport=7000 + n) / (b"u" * 64))
        inner = IP(src=a, dst="198.51.100.7") / \
            UDP(sport=port, dport=8000 + n) / (b"U" * 1300)
        pkt = Ether(src=NH6, dst="22:22:22:22:22:22") / \
            IPv6(src=b4, dst=BR) / IPv6ExtHdrFragment(id=0x100 + n, nh=4) / \
            inner
        v6 += fragment6(pkt, 700)
        o = sws[(n * 7 + 3) % len(sws)]
        v6.append(outer / IP(src=a, dst=o[0]) /
                  UDP(sport=port, dport=port_of(o[1], o[2], n + 1)) /
                  (b"h" * 64))
    # Interleave the two halves, so that one softwire's fragments arrive
    # among the others' packets.
    h = len(v4) // 2
    v4 = [p for pair in zip(v4[:h], v4[h:]) for p in pair] + v4[2 * h:]
    wrpcap(p4, v4)
    wrpcap(p6, v6)
    print("%d softwires: %d packets to them, %d from them" %
          (len(sws), len(v4), len(v6)))


def bench(conf, p4, p6, size):
    sws = [s for s in softwires(conf) if s[0].startswith("16.")]
    v4, v6 = [], []
    for n, (a, psid, plen, b4) in enumerate(sws):
        port = port_of(psid, plen, n)
        p = Ether(src=NH4, dst=AFTR_MAC) / \
            IP(src="203.0.113.%d" % (n % 200 + 1), dst=a) / \
            UDP(sport=5000 + n, dport=port)
        v4.append(p / (b"d" * max(0, int(size) - len(p))))
        p = Ether(src=NH6, dst="22:22:22:22:22:22") / \
            IPv6(src=b4, dst=BR, nh=4) / \
            IP(src=a, dst="198.51.100.%d" % (n % 200 + 1)) / \
            UDP(sport=port, dport=7000 + n)
        v6.append(p / (b"u" * max(0, int(size) - len(p))))
    wrpcap(p4, v4)
    wrpcap(p6, v6)


def l3(p):
    return raw(p)[14:]


def check(conf, macs, one4, one6, out4, out6):
    sws = softwires(conf)
    addrs = {s[0] for s in sws}
    macs = macs.split(",")
    ok = True
    for one, out in ((one4, out4), (one6, out6)):
        a = collections.Counter(l3(p) for p in rdpcap(one))
        b = collections.Counter(l3(p) for p in rdpcap(out))
        if a != b or not a:
            print("%s: %d packets, not the %d of %s" %
                  (out, sum(b.values()), sum(a.values()), one))
            ok = False
    where = collections.defaultdict(set)	# softwire -> copies
    hairpins = fragmented = 0
    per_copy = collections.Counter()
    for p in list(rdpcap(out4)) + list(rdpcap(out6)):
        copy = macs.index(p[Ether].src)
        per_copy[copy] += 1
        if IPv6 in p:
            ip = p[IPv6].payload
            # A hairpinned packet belongs to its source's softwire.
            sw = ip.src if ip.src in addrs else ip.dst
            hairpins += ip.src in addrs
            fragmented += len(ip) > 1000
        elif len(p[IP]) > 1000:
            # Reassembled from IPv6 fragments: those went by their B4.
            sport = p[UDP].sport
            sw = [s[3] for s in sws if s[0] == p[IP].src and
                  s[1] == sport >> (16 - s[2])][0]
            fragmented += 1
        else:
            sw = p[IP].src
        where[sw].add(copy)
    split = {sw: c for sw, c in where.items() if len(c) > 1}
    print("%d softwire addresses and fragmenting B4s, packets per copy %s, %d hairpinned and %d "
          "reassembled packets among them" %
          (len(where), dict(sorted(per_copy.items())), hairpins, fragmented))
    if split:
        print("softwires handled by several copies: %s" % split)
        ok = False
    if len(per_copy) < 2 or hairpins == 0 or fragmented == 0:
        print("a copy got nothing, or no hairpins or fragments went through")
        ok = False
    if ok:
        print("every softwire's traffic through one copy, output identical"
              " to one lwaftr's")
    return ok


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "gen":
        gen(*sys.argv[2:])
    elif len(sys.argv) == 6 and sys.argv[1] == "bench":
        bench(*sys.argv[2:])
    elif len(sys.argv) == 8 and sys.argv[1] == "check":
        sys.exit(0 if check(*sys.argv[2:]) else 1)
    else:
        sys.exit("usage: lwaftr-scale.py gen CONF V4 V6 | bench CONF V4 V6 "
                 "SIZE | check CONF MACS ONE4 ONE6 OUT4 OUT6")
