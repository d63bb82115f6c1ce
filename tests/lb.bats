#!/usr/bin/env bats
# snb-lb: every packet leaves by exactly one output, every flow (both
# directions) by one output, and the outputs share the load.  The flows
# are computed independently here, by python3 reading the pcap files.
load helpers

mkflows() {	# $1 = pcap file: IPv4/IPv6 TCP+UDP flows both ways, VLAN, fragments, ARP
	python3 - "$1" <<'PY'
import struct, sys, random
random.seed(7)
out = open(sys.argv[1], 'wb')
out.write(struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 262144, 1))
def rec(frame):
    out.write(struct.pack('<IIII', 0, 0, len(frame), len(frame)) + frame)
def eth(t, vlan=None):
    h = bytes.fromhex('020000000001020000000002')
    if vlan is not None:
        h += struct.pack('!HH', 0x8100, vlan)
    return h + struct.pack('!H', t)
def v4(src, dst, proto, l4, frag=0):
    h = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(l4), 1, frag, 64, proto, 0,
                    bytes(src), bytes(dst))
    return h + l4
def v6(src, dst, proto, l4):
    return struct.pack('!IHBB16s16s', 6 << 28, len(l4), proto, 64, bytes(src), bytes(dst)) + l4
flows = []
for i in range(300):
    kind = i % 3
    if kind == 0:
        a = [10, 0, i // 256, i % 256]; b = [192, 0, 2, random.randrange(256)]
    else:
        a = [0x20, 0x01, 0x0d, 0xb8] + [0] * 10 + [i // 256, i % 256]
        b = [0x20, 0x01, 0x0d, 0xb8] + [1] * 10 + [0, random.randrange(256)]
    flows.append((kind, a, b, random.randrange(1024, 65535), random.choice([80, 443, 53]),
                  random.choice([6, 17])))
for n in range(6000):
    kind, a, b, sp, dp, pr = random.choice(flows)
    if random.random() < 0.5:
        a, b, sp, dp = b, a, dp, sp
    l4 = struct.pack('!HH', sp, dp) + bytes(16)
    if kind == 0:
        rec(eth(0x0800) + v4(a, b, pr, l4))
    elif kind == 1:
        rec(eth(0x86dd) + v6(a, b, pr, l4))
    else:
        rec(eth(0x86dd, vlan=10) + v6(a, b, pr, l4))
# fragments of one datagram: first (MF, ports present) and a later one
for n in range(20):
    rec(eth(0x0800) + v4([10, 9, 9, 9], [192, 0, 2, 9], 17, struct.pack('!HH', 1000 + n, 53) + bytes(16), 0x2000))
    rec(eth(0x0800) + v4([10, 9, 9, 9], [192, 0, 2, 9], 17, bytes(24), 0x0003))
for n in range(30):
    rec(eth(0x0806) + bytes(28))
PY
}

# Print "file key" per packet for the given pcaps; key = symmetric flow.
flowkeys() {
	python3 - "$@" <<'PY'
import struct, sys
for f in sys.argv[1:]:
    d = open(f, 'rb').read(); o = 24
    while o + 16 <= len(d):
        cl = struct.unpack('<I', d[o + 8:o + 12])[0]; p = d[o + 16:o + 16 + cl]; o += 16 + cl
        off = 14; t = struct.unpack('!H', p[12:14])[0]
        if t == 0x8100:
            t = struct.unpack('!H', p[16:18])[0]; off = 18
        if t == 0x0800:
            ip = p[off:]; frag = struct.unpack('!H', ip[6:8])[0] & 0x3fff
            a, b = ip[12:16], ip[16:20]; ports = () if frag else (ip[20:22], ip[22:24])
            key = (tuple(sorted([a, b])), ip[9], tuple(sorted(ports)))
        elif t == 0x86dd:
            ip = p[off:]
            key = (tuple(sorted([ip[8:24], ip[24:40]])), ip[6], tuple(sorted([ip[40:42], ip[42:44]])))
        else:
            key = (tuple(sorted([p[0:6], p[6:12]])), t)
        print(f, hash(key))
PY
}

@test "lb: each packet once, each flow (both ways) on one output, load shared" {
	mkflows "$T/in.pcap"
	run snb-run "pcap-read $T/in.pcap | b: lb | pcap-write $T/0.pcap ;
	    @b [1] | pcap-write $T/1.pcap ; @b [2] | pcap-write $T/2.pcap"
	echo "$output"
	[ "$status" -eq 0 ]
	# Every packet once: the outputs hold the input's packets, as a multiset.
	cat "$T/0.pcap" "$T/1.pcap" "$T/2.pcap" > /dev/null
	for f in in 0 1 2; do tcpdump -nr "$T/$f.pcap" -x 2>/dev/null | awk '/^[0-9]/{if(p)print p; p=""; next}{p=p $0}END{print p}' > "$T/$f.hex"; done
	sort "$T/in.hex" > "$T/a"; sort "$T/0.hex" "$T/1.hex" "$T/2.hex" > "$T/b"
	[ "$(wc -l < "$T/a")" -eq 6070 ]
	cmp "$T/a" "$T/b"
	# Every flow on one output only.
	flowkeys "$T/0.pcap" "$T/1.pcap" "$T/2.pcap" | sort -u | awk '{print $2}' | sort | uniq -d > "$T/split"
	[ ! -s "$T/split" ] || { echo "flows split over outputs:"; cat "$T/split"; false; }
	# Each output carries a fair share (300 flows over 3 outputs).
	for f in 0 1 2; do
		n=$(wc -l < "$T/$f.hex")
		echo "output $f: $n packets"
		[ "$n" -gt 1000 ]
	done
}

@test "lb: full outputs hold the others back, nothing is lost" {
	mkflows "$T/in.pcap"
	# Rings of 4 slots: lb finds outputs full all the time.
	run snb-run --slots 4 "pcap-read --loop 10 $T/in.pcap | b: lb | pcap-write $T/0.pcap ;
	    @b [1] | pcap-write $T/1.pcap ; @b [2] | filter len \> 0 | pcap-write $T/2.pcap"
	[ "$status" -eq 0 ]
	n=0
	for f in 0 1 2; do n=$((n + $(tcpdump -nr "$T/$f.pcap" 2>/dev/null | wc -l))); done
	[ "$n" -eq 60700 ]
	flowkeys "$T/0.pcap" "$T/1.pcap" "$T/2.pcap" | sort -u | awk '{print $2}' | sort | uniq -d > "$T/split"
	[ ! -s "$T/split" ]
}

@test "lb --key softwire: ARP to every output, IPv4 by destination, IPv6 by source" {
	mkflows "$T/in.pcap"
	run snb-run "pcap-read $T/in.pcap | b: lb --key softwire | pcap-write $T/0.pcap ;
	    @b [1] | pcap-write $T/1.pcap ; @b [2] | pcap-write $T/2.pcap"
	echo "$output"
	[ "$status" -eq 0 ]
	run python3 - "$T" <<'PY'
import struct, sys, collections
t = sys.argv[1]
where = collections.defaultdict(set); arp = collections.Counter(); n = 0
for k in range(3):
    d = open('%s/%d.pcap' % (t, k), 'rb').read(); o = 24
    while o + 16 <= len(d):
        cl = struct.unpack('<I', d[o + 8:o + 12])[0]; p = d[o + 16:o + 16 + cl]; o += 16 + cl
        n += 1; off = 14; ty = struct.unpack('!H', p[12:14])[0]
        if ty == 0x8100:
            ty = struct.unpack('!H', p[16:18])[0]; off = 18
        if ty == 0x0806:
            arp[k] += 1
        elif ty == 0x0800:
            where[('dst4', p[off + 16:off + 20])].add(k)
        else:
            where[('src6', p[off + 8:off + 24])].add(k)
split = [w for w, ks in where.items() if len(ks) > 1]
used = set().union(*where.values())
print('%d packets, ARP per output %s, %d keys, split %d, outputs used %s' %
      (n, dict(sorted(arp.items())), len(where), len(split), sorted(used)))
sys.exit(0 if n == 6070 + 60 and arp == {0: 30, 1: 30, 2: 30} and not split and
         used == {0, 1, 2} else 1)
PY
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "lb: errors" {
	run snb-lb extra
	[ "$status" -eq 2 ]
	run snb-lb --key port
	[ "$status" -eq 2 ]
	assert_output_has "bad --key 'port': flow or softwire"

	run snb-run 'source --count 1 | b: lb'
	[ "$status" -ne 0 ]
	run snb-run 'source --count 1 | t: tee | sink ; @t | sink'
	[ "$status" -ne 0 ]
	assert_output_has "lb to spread it"
}
