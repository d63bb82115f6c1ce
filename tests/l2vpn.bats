#!/usr/bin/env bats
# The L2 VPN's tunnel apps, snb-l2tp and snb-gre, and snb-nd, against
# independent peers: tshark dissects what they send; scapy (GRE) and
# struct-packed bytes (L2TPv3: scapy has only L2TPv2 over UDP) make what
# they must take or drop; two sites back to back over a veth carry pings
# between two customer namespaces; the kernel answers and asks snb-nd's
# neighbour discovery.  (The kernel as the far tunnel end: tests/vm*.)
load helpers
load netns

PY=/usr/bin/python3
TSHARK_L2TP=(-o "l2tp.cookie_size:8 Byte Cookie" -o "l2tp.l2_specific:None")

setup() {
	export SNB_RUN_DIR="/dev/shm/snb-bats-$$-$BATS_TEST_NUMBER"
	T="$BATS_TEST_TMPDIR"
	PIDS=
	NSS=
	# Site A's and site B's ends of an L2TPv3 and a GRE pseudowire.
	cat > "$T/a.conf" <<-'EOF'
	local-address 2001:db8::1;
	pseudowire b {			// L2TPv3 to site B
		remote-address 2001:db8::2;
		l2tp { local-session 1; remote-session 2;
		       local-cookie 0x0011223344556677;
		       remote-cookie 0x8899aabbccddeeff; }
	}
	pseudowire c { remote-address 2001:db8::3; gre { key 42; } }
	pseudowire d { remote-address 2001:db8::3; gre { } }
	EOF
	cat > "$T/b.conf" <<-'EOF'
	local-address 2001:db8::2;
	pseudowire a {
		remote-address 2001:db8::1;
		l2tp { local-session 2; remote-session 1;
		       local-cookie 0x8899aabbccddeeff;
		       remote-cookie 0x0011223344556677; }
	}
	pseudowire ag { remote-address 2001:db8::1; gre { key 7; } }
	EOF
}

teardown() {
	[ -z "${TCPD:-}" ] || kill "$TCPD" 2>/dev/null || true
	netns_teardown $NSS
}

# Customer frames of every size from 14 bytes to 1400, into pcap $1.
customer_frames() {
	$PY - "$1" <<-'EOF'
	import sys
	from scapy.all import Ether, IP, UDP, Raw, wrpcap
	fs = [Ether(src="02:00:00:00:00:0a", dst="02:00:00:00:00:0b", type=0x88b5)]
	for n in (0, 1, 17, 100, 1000, 1400 - 42):
	    fs.append(Ether(src="02:00:00:00:00:0a", dst="02:00:00:00:00:0b") /
	        IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=7, dport=n % 65536) /
	        Raw(bytes(i % 251 for i in range(n))))
	wrpcap(sys.argv[1], fs)
	EOF
}

# The frames of pcap $1 as hex, one a line.
frames_hex() {
	$PY - "$1" <<-'EOF'
	import sys
	from scapy.all import rdpcap
	for p in rdpcap(sys.argv[1]):
	    print(bytes(p).hex())
	EOF
}

@test "l2tp: what snb-l2tp sends is L2TPv3 over IPv6 as tshark dissects it" {
	customer_frames "$T/in.pcap"
	snb-run "pcap-read $T/in.pcap | [b] l2tp $T/a.conf [core] |
	    pcap-write $T/out.pcap"
	tshark "${TSHARK_L2TP[@]}" -r "$T/out.pcap" -T fields -e eth.dst \
	    -e eth.src -e eth.type -e ipv6.src -e ipv6.dst -e ipv6.nxt \
	    -e ipv6.hlim -e ipv6.plen -e l2tp.sid -e l2tp.cookie -e data.len \
	    2>/dev/null > "$T/f.txt"
	cat "$T/f.txt"
	[ "$(wc -l < "$T/f.txt")" -eq 7 ]
	i=0
	# Each inner length, from the capture we gave it.
	tshark -r "$T/in.pcap" -T fields -e frame.len 2>/dev/null > "$T/lens"
	while IFS=$'\t' read -r dst src type s d nxt hl plen sid cookie dlen; do
		i=$((i + 1))
		len=$(sed -n "${i}p" "$T/lens")
		[ "$dst" = 00:00:00:00:00:00 ]
		[ "$src" = 00:00:00:00:00:00 ]
		[ "$type" = 0x86dd ]
		[ "$s" = 2001:db8::1 ]
		[ "$d" = 2001:db8::2 ]
		[ "$nxt" = 115 ]
		[ "$hl" = 64 ]
		[ "$sid" = 0x00000002 ]		# remote-session
		[ "$cookie" = 0011223344556677 ]	# local-cookie
		[ "$plen" -eq $((12 + len)) ]
		[ "$dlen" -eq "$len" ]
	done < "$T/f.txt"
	# The customer frames ride unchanged.
	tshark "${TSHARK_L2TP[@]}" -r "$T/out.pcap" -T fields -e data.data \
	    2>/dev/null > "$T/inner.hex"
	diff "$T/inner.hex" <(frames_hex "$T/in.pcap")
}

@test "gre: what snb-gre sends is GRE 0x6558 over IPv6, with and without a key" {
	customer_frames "$T/in.pcap"
	snb-run "pcap-read $T/in.pcap | [c] gre $T/a.conf [core] |
	    pcap-write $T/key.pcap"
	snb-run "pcap-read $T/in.pcap | [d] gre $T/a.conf [core] |
	    pcap-write $T/nokey.pcap"
	for f in key nokey; do
		tshark -r "$T/$f.pcap" -T fields -e ipv6.src -e ipv6.dst \
		    -e ipv6.nxt -e gre.proto -e gre.flags.key -e gre.key \
		    -e gre.flags.checksum -e gre.flags.sequence_number \
		    -e gre.flags.version -e eth.src 2>/dev/null | sort -u > "$T/$f.txt"
		cat "$T/$f.txt"
	done
	# tshark dissects the inner Ethernet (the second eth.src).
	[ "$(cat "$T/key.txt")" = "$(printf '2001:db8::1\t2001:db8::3\t47\t0x6558\t1\t0x0000002a\t0\t0\t0\t00:00:00:00:00:00,02:00:00:00:00:0a')" ]
	[ "$(cat "$T/nokey.txt")" = "$(printf '2001:db8::1\t2001:db8::3\t47\t0x6558\t0\t\t0\t0\t0\t00:00:00:00:00:00,02:00:00:00:00:0a')" ]
	[ "$(npackets "$T/key.pcap")" -eq 7 ]
	# What tshark calls the inner frame is ours, byte for byte.
	$PY - "$T/key.pcap" "$T/in.pcap" <<-'EOF'
	import sys
	from scapy.all import rdpcap, GRE
	out, inp = rdpcap(sys.argv[1]), rdpcap(sys.argv[2])
	assert len(out) == len(inp)
	for o, i in zip(out, inp):
	    assert bytes(o[GRE].payload) == bytes(i), (o, i)
	EOF
}

# Frames from the core to site A (a.conf): every case of decapsulation,
# $2 each; the expected customer frames into $3.
core_frames() {
	$PY - "$1" "$2" "$3" <<-'EOF'
	import struct, sys
	from scapy.all import Ether, IPv6, IPv6ExtHdrFragment, \
	    IPv6ExtHdrDestOpt, IP, UDP, Raw, GRE, wrpcap
	out, n, want = sys.argv[1], int(sys.argv[2]), sys.argv[3]
	A, B, C = "2001:db8::1", "2001:db8::2", "2001:db8::3"
	E = dict(src="02:00:00:00:00:99", dst="02:00:00:00:00:01")
	def cust(i):
	    return Ether(src="02:00:00:00:00:0b", dst="02:00:00:00:00:0a") / \
	        IP(src="10.0.0.2", dst="10.0.0.1") / UDP(dport=i) / Raw(b"z" * i)
	def l2tp(sess, cookie, inner, src=B, dst=A, ext=None):
	    ip = IPv6(src=src, dst=dst, nh=115)
	    if ext is not None:
	        ip = IPv6(src=src, dst=dst) / ext
	        ip.lastlayer().nh = 115
	    return Ether(**E) / ip / Raw(struct.pack("!I", sess) + cookie + bytes(inner))
	good_cookie = bytes.fromhex("8899aabbccddeeff")
	frames, good = [], []
	for i in range(n):
	    c = cust(i)
	    # taken: L2TP, L2TP behind a destination options header, GRE
	    # with key 42 (pseudowire c), GRE without a key (d), GRE with
	    # a right checksum and a sequence number (d)
	    frames.append(l2tp(1, good_cookie, c)); good.append(c)
	    frames.append(l2tp(1, good_cookie, c, ext=IPv6ExtHdrDestOpt()))
	    good.append(c)
	    frames.append(Ether(**E) / IPv6(src=C, dst=A) /
	        GRE(key_present=1, key=42, proto=0x6558) / c); good.append(c)
	    frames.append(Ether(**E) / IPv6(src=C, dst=A) / GRE(proto=0x6558) / c)
	    good.append(c)
	    frames.append(Ether(**E) / IPv6(src=C, dst=A) /
	        GRE(chksum_present=1, seqnum_present=1, sequence_number=i,
	            proto=0x6558) / c)
	    good.append(c)
	    # dropped, by reason
	    frames.append(l2tp(9, good_cookie, c))				# unknown session
	    frames.append(l2tp(1, good_cookie, c, src=C))			# wrong remote
	    frames.append(l2tp(1, bytes(8), c))				# wrong cookie
	    frames.append(l2tp(1, good_cookie, c, dst=B))			# not local
	    frames.append(Ether(**E) / IP() / UDP())				# not ipv6
	    frames.append(Ether(**E) / IPv6(src=B, dst=A) /
	        IPv6ExtHdrFragment(nh=115, m=1) / Raw(b"x" * 40))		# fragment
	    frames.append(Ether(**E) / IPv6(src=B, dst=A) / UDP() / c)		# other protocol
	    bad = l2tp(1, good_cookie, c)
	    bad[IPv6].plen = len(bad[IPv6].payload) + 1			# malformed
	    frames.append(bad)
	    frames.append(Ether(**E) / IPv6(src=C, dst=A) /
	        GRE(key_present=1, key=43, proto=0x6558) / c)		# wrong key
	    frames.append(Ether(**E) / IPv6(src=B, dst=A) /
	        GRE(proto=0x6558) / c)					# unknown remote
	    frames.append(Ether(**E) / IPv6(src=C, dst=A) /
	        GRE(proto=0x0800) / IP() / UDP())				# gre protocol
	    g = Ether(**E) / IPv6(src=C, dst=A) / GRE(chksum_present=1,
	        proto=0x6558) / c
	    g = Ether(bytes(g))
	    g[GRE].chksum ^= 0x0101						# gre checksum
	    frames.append(g)
	wrpcap(out, frames)
	wrpcap(want, good)
	EOF
}

@test "decap: frames from the core are taken or dropped and counted by reason" {
	core_frames "$T/core.pcap" 5 "$T/want.pcap"
	snb-run "pcap-read $T/core.pcap | [core] l2tp $T/a.conf \
	    --counters-out $T/l2tp.ctr [b] | pcap-write $T/l2tp.pcap"
	snb-run "pcap-read $T/core.pcap | [core] g: gre $T/a.conf \
	    --counters-out $T/gre.ctr [c] | pcap-write $T/c.pcap
	    @g [d] | pcap-write $T/d.pcap"
	cat "$T/l2tp.ctr" "$T/gre.ctr"
	# 17 kinds of frame, 5 of each: 85 in all.
	ctr() { sed -n "s/^$2 //p" "$T/$1.ctr"; }
	[ "$(ctr l2tp decap)" -eq 10 ]
	[ "$(ctr l2tp 'decap\[b\]')" -eq 10 ]
	[ "$(ctr l2tp drop-unknown-session)" -eq 5 ]
	[ "$(ctr l2tp drop-wrong-remote)" -eq 5 ]
	[ "$(ctr l2tp drop-wrong-cookie)" -eq 5 ]
	[ "$(ctr l2tp drop-not-local)" -eq 5 ]
	[ "$(ctr l2tp drop-not-ipv6)" -eq 5 ]
	[ "$(ctr l2tp drop-fragment)" -eq 5 ]
	[ "$(ctr l2tp drop-malformed)" -eq 5 ]
	# The 7 kinds of GRE and the UDP one.
	[ "$(ctr l2tp drop-other-protocol)" -eq 40 ]
	[ "$(ctr gre decap)" -eq 15 ]
	[ "$(ctr gre 'decap\[c\]')" -eq 5 ]
	[ "$(ctr gre 'decap\[d\]')" -eq 10 ]
	[ "$(ctr gre drop-wrong-key)" -eq 5 ]
	[ "$(ctr gre drop-unknown-remote)" -eq 5 ]
	[ "$(ctr gre drop-gre-protocol)" -eq 5 ]
	[ "$(ctr gre drop-gre-checksum)" -eq 5 ]
	[ "$(ctr gre drop-not-local)" -eq 5 ]	# checked before the protocol
	[ "$(ctr gre drop-other-protocol)" -eq 30 ]
	# Not one frame lost silently.
	for a in l2tp gre; do
		sum=$(grep '^\(decap\|drop-[a-z0-9-]*\) ' "$T/$a.ctr" |
		    awk '{ s += $2 } END { print s }')
		[ "$sum" -eq 85 ] || { echo "$a: $sum of 85"; return 1; }
	done
	# The customer frames, byte for byte, in order.
	frames_hex "$T/want.pcap" > "$T/want.hex"
	diff <(frames_hex "$T/l2tp.pcap") <(awk 'NR % 5 == 1 || NR % 5 == 2' "$T/want.hex")
	diff <(frames_hex "$T/c.pcap") <(awk 'NR % 5 == 3' "$T/want.hex")
	diff <(frames_hex "$T/d.pcap") <(awk 'NR % 5 == 4 || NR % 5 == 0' "$T/want.hex")
}

@test "decap: RFC 8159's session 0xffffffff on two pseudowires, told apart by source; RFC 8200's extension headers" {
	# No sessions given: 0xffffffff both ways, as the keyed IPv6
	# tunnel (RFC 8159) and Snabb's l2vpn have them.
	cat > "$T/k.conf" <<-'EOF'
	local-address 2001:db8::1;
	pseudowire p { remote-address 2001:db8::2;
		l2tp { local-cookie 0x1111111111111111;
		       remote-cookie 0x2222222222222222; } }
	pseudowire q { remote-address 2001:db8::3;
		l2tp { local-cookie 0x3333333333333333;
		       remote-cookie 0x4444444444444444; } }
	EOF
	customer_frames "$T/in.pcap"
	snb-run "pcap-read $T/in.pcap | [q] l2tp $T/k.conf [core] |
	    pcap-write $T/out.pcap"
	[ "$(tshark "${TSHARK_L2TP[@]}" -r "$T/out.pcap" -T fields \
	    -e ipv6.dst -e l2tp.sid -e l2tp.cookie 2>/dev/null | sort -u)" = \
	    "$(printf '2001:db8::3\t0xffffffff\t3333333333333333')" ]
	$PY - "$T/core.pcap" <<-'EOF'
	import struct, sys
	from scapy.all import Ether, IPv6, IPv6ExtHdrFragment, \
	    IPv6ExtHdrDestOpt, IPv6ExtHdrHopByHop, IPv6ExtHdrRouting, Raw, wrpcap
	E = dict(src="02:00:00:00:00:99", dst="02:00:00:00:00:01")
	P, Q = bytes.fromhex("2222222222222222"), bytes.fromhex("4444444444444444")
	def f(src, cookie, tag, ext=None):
	    ip = IPv6(src=src, dst="2001:db8::1", nh=115)
	    if ext is not None:
	        ip = IPv6(src=src, dst="2001:db8::1") / ext
	        ip.lastlayer().nh = 115
	    inner = Ether(src="02:00:00:00:00:0b", dst="02:00:00:00:00:0a",
	        type=0x88b5) / Raw(tag.encode().ljust(46, b"."))
	    return Ether(**E) / ip / Raw(struct.pack("!I", 0xffffffff) + cookie +
	        bytes(inner))
	B, C, D = "2001:db8::2", "2001:db8::3", "2001:db8::4"
	wrpcap(sys.argv[1], [
	    f(B, P, "p1"),						# p
	    f(C, Q, "q1"),						# q
	    f(C, P, "x"),						# wrong cookie
	    f(D, P, "x"),						# wrong remote
	    f(B, P, "p2", IPv6ExtHdrFragment(offset=0, m=0, id=7)),	# atomic: p
	    f(B, P, "x", IPv6ExtHdrFragment(offset=0, m=1, id=8)),	# fragment
	    f(B, P, "x", IPv6ExtHdrRouting(addresses=["2001:db8::9"],
	        segleft=1)),						# not local
	    f(B, P, "p3", IPv6ExtHdrRouting(addresses=["2001:db8::9"],
	        segleft=0)),						# p
	    f(B, P, "p4", IPv6ExtHdrHopByHop()),			# p
	    f(B, P, "x", IPv6ExtHdrDestOpt() / IPv6ExtHdrHopByHop()),	# malformed
	    f(C, Q, "q2", IPv6ExtHdrHopByHop() / IPv6ExtHdrDestOpt() /
	        IPv6ExtHdrRouting(segleft=0) / IPv6ExtHdrDestOpt()),	# q
	])
	EOF
	snb-run "pcap-read $T/core.pcap | [core] x: l2tp $T/k.conf \
	    --counters-out $T/ctr [p] | pcap-write $T/p.pcap
	    @x [q] | pcap-write $T/q.pcap"
	cat "$T/ctr"
	tags() { tshark -r "$1" -T fields -e data.data 2>/dev/null |
	    while read -r h; do printf '%s' "${h:0:4}" | xxd -r -p; echo; done |
	    tr '\n' ' '; }
	[ "$(tags "$T/p.pcap")" = "p1 p2 p3 p4 " ]
	[ "$(tags "$T/q.pcap")" = "q1 q2 " ]
	grep -q '^decap\[p\] 4$' "$T/ctr"
	grep -q '^decap\[q\] 2$' "$T/ctr"
	grep -q '^drop-wrong-cookie 1$' "$T/ctr"
	grep -q '^drop-wrong-remote 1$' "$T/ctr"
	grep -q '^drop-fragment 1$' "$T/ctr"
	grep -q '^drop-not-local 1$' "$T/ctr"
	grep -q '^drop-malformed 1$' "$T/ctr"
	grep -q '^drop-unknown-session 0$' "$T/ctr"
}

@test "round trip: what one end sends the other end takes, both encapsulations" {
	customer_frames "$T/in.pcap"
	snb-run "pcap-read $T/in.pcap | [b] l2tp $T/a.conf [core] |
	    [core] l2tp $T/b.conf [a] | pcap-write $T/l2tp.pcap"
	diff <(frames_hex "$T/l2tp.pcap") <(frames_hex "$T/in.pcap")
	# Site B's GRE pseudowire has key 7, site A's c key 42: nothing
	# passes, and all is counted.
	cat > "$T/c.conf" <<-'EOF'
	local-address 2001:db8::3;
	pseudowire a { remote-address 2001:db8::1; gre { key 7; } }
	EOF
	snb-run "pcap-read $T/in.pcap | [c] gre $T/a.conf [core] |
	    [core] gre $T/c.conf --counters-out $T/ctr [a] |
	    pcap-write $T/gre.pcap"
	[ "$(npackets "$T/gre.pcap")" -eq 0 ]
	grep -q '^drop-wrong-key 7$' "$T/ctr"
	sed -i 's/key 7;/key 42;/' "$T/c.conf"
	snb-run "pcap-read $T/in.pcap | [c] gre $T/a.conf [core] |
	    [core] gre $T/c.conf --counters-out $T/ctr [a] |
	    pcap-write $T/gre.pcap"
	diff <(frames_hex "$T/gre.pcap") <(frames_hex "$T/in.pcap")
}

@test "encap: a frame over the core's MTU is dropped and counted, one at it passes" {
	# mtu 1280: the largest customer frame is 1280 - 40 - 12 = 1228 bytes.
	{ echo 'mtu 1280;'; cat "$T/a.conf"; } > "$T/m.conf"
	$PY - "$T/in.pcap" <<-'EOF'
	import sys
	from scapy.all import Ether, Raw, wrpcap
	wrpcap(sys.argv[1], [Ether(type=0x88b5) / Raw(b"y" * (n - 14))
	    for n in (1227, 1228, 1229, 9000)])
	EOF
	snb-run "pcap-read $T/in.pcap | [b] l2tp $T/m.conf --counters-out $T/ctr \
	    [core] | pcap-write $T/out.pcap"
	cat "$T/ctr"
	grep -q '^encap 2$' "$T/ctr"
	grep -q '^drop-too-big 2$' "$T/ctr"
	[ "$(tshark -r "$T/out.pcap" -T fields -e ipv6.plen 2>/dev/null | tr '\n' ' ')" = "1239 1240 " ]
}

@test "config: errors name FILE:LINE:COLUMN, exit 2; a port that is no pseudowire exits 1" {
	bad() {	# $1: the text, $2: the message expected
		printf '%s\n' "$1" > "$T/bad.conf"
		run snb-l2tp "$T/bad.conf"
		echo "$output"
		[ "$status" -eq 2 ]
		assert_output_has "snb-l2tp: $T/bad.conf:$2"
	}
	pw='pseudowire b { remote-address 2001:db8::2;'
	l2='l2tp { local-session 1; remote-session 2; local-cookie 0x0000000000000001; remote-cookie 0x0000000000000002; }'
	bad "$pw $l2 }" "2:1: missing 'local-address'"
	bad "local-address 2001:db8::1;" "2:1: no pseudowire"
	bad "local-address 2001:db8::1; mtu 1279;" "1:32: 'mtu' out of range: 1279 (1280..65535)"
	bad "local-address ff02::1; $pw $l2 }" "1:15: local-address: a multicast address"
	bad "local-address 2001:db8::1;
$pw l2tp { local-session 1; remote-session 2; local-cookie 0x12g; remote-cookie 0x0000000000000002; } }" \
	    "2:99: bad local-cookie '0x12g'"
	# a 4-byte cookie (iproute2's 8 hex digits) is no 64-bit one
	bad "local-address 2001:db8::1;
$pw l2tp { local-cookie 0x00112233; remote-cookie 0x0000000000000002; } }" \
	    "2:64: bad local-cookie '0x00112233': must be 0x and 16 hex digits (a 64-bit cookie)"
	bad "local-address 2001:db8::1;
$pw l2tp { local-session 1; remote-session 2; local-cookie 0x0000000000000001; } }" \
	    "2:44: l2tp: missing 'remote-cookie'"
	bad "local-address 2001:db8::1;
$pw $l2 }
pseudowire c { remote-address 2001:db8::2; $l2 }" \
	    "3:44: pseudowire 'c': local-session 1 and remote-address are also those of 'b' (at 2:12)"
	bad "local-address 2001:db8::1;
$pw $l2 gre { } }" "2:155: pseudowire 'b': both 'l2tp' (at 2:44) and 'gre'"
	bad "local-address 2001:db8::1;
pseudowire core { remote-address 2001:db8::2; $l2 }" \
	    "2:12: bad pseudowire name 'core'"
	bad "local-address 2001:db8::1;
$pw $l2 }
$pw gre { } }" "3:12: duplicate pseudowire 'b' (first at 2:12)"
	bad "local-address 2001:db8::1;
$pw $l2 } bogus 1;" "2:157: unknown field 'bogus'"
	run snb-gre "$T/bad.conf"
	[ "$status" -eq 2 ]
	run snb-gre "$T/no-such.conf"
	[ "$status" -eq 1 ]
	assert_output_has "snb-gre: $T/no-such.conf: No such file"
	# A file without a GRE pseudowire, for snb-gre.
	printf 'local-address 2001:db8::1;\n%s %s }\n' "$pw" "$l2" > "$T/l.conf"
	run snb-gre "$T/l.conf"
	[ "$status" -eq 2 ]
	assert_output_has "no gre pseudowire"
	# The graph checks every app's words (snb-run -c): a port that is
	# no pseudowire of the app.
	run snb-run -c "source | [x] l2tp $T/a.conf [core] | sink"
	echo "$output"
	[ "$status" -ne 0 ]
	assert_output_has "no l2tp pseudowire 'x'"
	run snb-run -c "source | [c] l2tp $T/a.conf [core] | sink"
	[ "$status" -ne 0 ]
	assert_output_has "no l2tp pseudowire 'c'"
	run snb-run -c "source | [c] gre $T/a.conf [core] | sink"
	[ "$status" -eq 0 ]
}

# Two sites back to back over a veth (site A in namespace SA, site B in
# SB), each a customer namespace (CA, CB) on its attachment circuit, and
# snb-nd resolving the other site's address: VPWS.
two_sites() {	# $1: l2tp or gre; $2, $3: the pseudowires' names at A and B
	P=l2vpn-$$
	NSS="$P-ca $P-sa $P-sb $P-cb"
	mkns $NSS
	veth ca0 $P-ca ac $P-sa
	veth core $P-sa core $P-sb
	veth ac $P-sb cb0 $P-cb
	ip -n $P-ca addr add 10.9.0.1/24 dev ca0
	ip -n $P-cb addr add 10.9.0.2/24 dev cb0
	site() {	# $1: a/b, $2: our number, $3: theirs, $4: the port
		ip netns exec "$P-s$1" snb-run -n "$P-$1" "p: $APP $T/$1.conf \
		    --counters-out $T/$1.ctr
		    n: nd --address 2001:db8::$2 --mac 02:00:00:00:00:0$2 \
		        --next-hop 2001:db8::$3 --counters-out $T/$1-nd.ctr
		    nic ac | [$4] @p [$4] | nic ac
		    @p [core] |~ [north] @n [south] | nic core
		    nic core | [south] @n [north] | [core] @p" 2> "$T/$1.err" &
		PIDS="$PIDS $!"
	}
	APP=$1
	site a 1 2 "$2"
	site b 2 1 "$3"
	# Until snb-run supervises, a SIGINT would find it ignoring the
	# signal, as a background job of a shell without job control does.
	wait_stages "$P-a" 4
	wait_stages "$P-b" 4
}

stop_sites() {
	for p in $PIDS; do kill -INT "$p"; done
	for p in $PIDS; do wait "$p" || true; done	# SIGINT: 130
	PIDS=
	cat "$T/a.err" "$T/b.err"
}

@test "VPWS over L2TPv3: two sites back to back carry pings between two customers" {
	two_sites l2tp b a
	WAIT_FOR_S=30 wait_for ip netns exec $P-ca ping -c1 -W1 10.9.0.2
	ip netns exec $P-ca ping -c3 -i0.2 -W5 10.9.0.2
	ip netns exec $P-cb ping -c3 -i0.2 -W5 10.9.0.1
	stop_sites
	cat "$T/a.ctr" "$T/a-nd.ctr"
	grep -q '^encap [1-9]' "$T/a.ctr"
	grep -q '^decap [1-9]' "$T/a.ctr"
	grep -q '^next-hop-learned 1$' "$T/a-nd.ctr"
	grep -q '^next-hop-learned 1$' "$T/b-nd.ctr"
	! grep -q '^drop-\(wrong\|unknown\|malformed\|not-local\)[a-z-]* [1-9]' "$T/a.ctr" "$T/b.ctr" || false
}

@test "VPWS over GRE: a wrong key stops the pings and is counted" {
	# Site A's pseudowire c has key 42, site B's ag key 7: change B's
	# address to A's c's remote first.
	sed -i 's/2001:db8::3/2001:db8::2/' "$T/a.conf"
	two_sites gre c ag
	! ip netns exec $P-ca ping -c3 -i0.5 -W2 10.9.0.2 || false
	stop_sites
	grep -q '^drop-wrong-key [1-9]' "$T/b.ctr"
	sed -i 's/key 7;/key 42;/' "$T/b.conf"
	two_sites_again() {
		site a 1 2 c
		site b 2 1 ag
		wait_stages "$P-a" 4
		wait_stages "$P-b" 4
	}
	APP=gre two_sites_again
	WAIT_FOR_S=30 wait_for ip netns exec $P-ca ping -c1 -W1 10.9.0.2
	ip netns exec $P-ca ping -c3 -i0.2 -W5 10.9.0.2
	stop_sites
	grep -q '^decap\[ag\] [1-9]' "$T/b.ctr"
	grep -q '^decap\[c\] [1-9]' "$T/a.ctr"
}

@test "nd: the kernel resolves our address, and we resolve the kernel's" {
	P=l2vpn-nd-$$
	NSS="$P-s $P-k"
	mkns $P-s
	ip netns add $P-k
	ip -n $P-k link set lo up
	veth s0 $P-s k0 $P-k
	ip -n $P-k addr add 2001:db8:5::fe/64 dev k0 nodad
	kmac=$(ip -n $P-k -o link show k0 | sed 's/.*ether \([^ ]*\).*/\1/')
	ip netns exec $P-k tcpdump -nn -e -c3 -w "$T/k0.pcap" -i k0 \
	    'ip and udp' 2>/dev/null &
	TCPD=$!
	ip netns exec $P-s snb-run -n $P "n: nd --address 2001:db8:5::1 \
	    --mac 02:00:00:00:05:01 --next-hop 2001:db8:5::fe \
	    --counters-out $T/nd.ctr
	    source --rate 20 --size 80 | [north] @n [south] | nic s0
	    nic s0 | [south] @n" 2> "$T/err" &
	PIDS=$!
	wait_stages $P 3
	# The kernel asks for our address and our NA answers: REACHABLE
	# says it was confirmed.  (It may have taken our MAC from our own
	# NS's option first, as STALE: then it asks by a unicast NS after
	# 5 s of DELAY.  The pings get no answer: nothing is north of nd.)
	WAIT_FOR_S=40 wait_for eval "ip netns exec $P-k ping -6 -c1 -W1 \
	    2001:db8:5::1 >/dev/null; ip -n $P-k -6 neigh show 2001:db8:5::1 |
	    grep -q 'lladdr 02:00:00:00:05:01 .*REACHABLE'"
	# We asked for the kernel's: what we send goes to its MAC.
	timeout 20 tail --pid=$TCPD -f /dev/null
	tcpdump -r "$T/k0.pcap" -nn -e 2>/dev/null | tee "$T/k0.txt"
	[ "$(grep -c "02:00:00:00:05:01 > $kmac, ethertype IPv4" "$T/k0.txt")" -eq 3 ]
	# A restart hands the next hop over: no new solicitation, no frame
	# dropped for want of it.
	ctr() {
		snb-top --json -i 0.05 $P | jq ".graphs[0].stages[] |
		    select(.label==\"n\") | .counters[\"$1\"] // .[\"$1\"]"
	}
	ns=$(ctr ns-out)
	un=$(ctr drop-unresolved)
	pid=$(stage_pid $P n)
	snb-ctl $P restart n
	wait_replaced $P n "$pid"
	n0=$(ctr packets_in)
	wait_for eval "[ \$(ctr packets_in) -ge $((n0 + 40)) ]"
	[ "$(ctr ns-out)" -eq "$ns" ]
	[ "$(ctr drop-unresolved)" -eq "$un" ]
	[ "$(ctr next-hop-resolved)" -eq 1 ]
	kill -INT $PIDS
	wait $PIDS || true
	PIDS=
	cat "$T/nd.ctr" "$T/err"
	grep -q '^ns-in [1-9]' "$T/nd.ctr"
	grep -q '^na-out [1-9]' "$T/nd.ctr"
	grep -q '^ns-out [1-9]' "$T/nd.ctr"
	grep -q '^next-hop-learned 1$' "$T/nd.ctr"
	grep -q '^next-hop-resolved 1$' "$T/nd.ctr"
}

@test "nd: what it answers and what it passes, as tshark reads it" {
	$PY - "$T/south.pcap" <<-'EOF'
	import sys
	from scapy.all import Ether, IPv6, UDP, ICMPv6EchoRequest, \
	    ICMPv6ND_NS, ICMPv6ND_NA, ICMPv6NDOptSrcLLAddr, \
	    ICMPv6NDOptDstLLAddr, wrpcap
	ME, US = "02:00:00:00:05:01", "2001:db8:5::1"
	NH, NHMAC = "2001:db8:5::fe", "02:00:00:00:05:fe"
	SOL = "33:33:ff:00:00:01"
	def ns(src, tgt, hlim=255, opt=True, dst="ff02::1:ff00:1"):
	    p = Ether(src=NHMAC, dst=SOL) / IPv6(src=src, dst=dst,
	        hlim=hlim) / ICMPv6ND_NS(tgt=tgt)
	    return p / ICMPv6NDOptSrcLLAddr(lladdr=NHMAC) if opt else p
	wrpcap(sys.argv[1], [
	    ns(NH, US),					# answered, S O
	    ns("::", US, opt=False),			# DAD: to all nodes, O
	    ns(NH, US, hlim=64),			# invalid
	    ns(NH, "2001:db8:5::7", dst="ff02::1:ff00:7"),	# other
	    Ether(src=NHMAC, dst=ME) / IPv6(src=NH, dst=US) / UDP(),	# north
	    Ether(src=NHMAC, dst="02:00:00:00:05:02") / IPv6(src=NH,
	        dst="2001:db8:5::2") / UDP(),			# not ours
	    Ether(src=NHMAC, dst="33:33:00:00:00:01") / IPv6(src=NH,
	        dst="ff02::1") / ICMPv6EchoRequest(),		# north
	    Ether(src=NHMAC, dst=ME) / IPv6(src=NH, dst=US, hlim=255) /
	        ICMPv6ND_NA(tgt=NH, S=1, O=1, R=1) /
	        ICMPv6NDOptDstLLAddr(lladdr=NHMAC),		# learnt
	])
	EOF
	snb-run "pcap-read $T/south.pcap | [south] n: nd --address 2001:db8:5::1 \
	    --mac 02:00:00:00:05:01 --next-hop 2001:db8:5::fe \
	    --counters-out $T/ctr [south] | pcap-write $T/out.pcap
	    @n [north] | pcap-write $T/north.pcap"
	cat "$T/ctr"
	tshark -r "$T/out.pcap" -Y icmpv6.type==136 -T fields -e eth.src \
	    -e eth.dst -e ipv6.src -e ipv6.dst -e ipv6.hlim \
	    -e icmpv6.nd.na.flag.r -e icmpv6.nd.na.flag.s \
	    -e icmpv6.nd.na.flag.o -e icmpv6.nd.na.target_address \
	    -e icmpv6.opt.linkaddr -e icmpv6.checksum.status 2>/dev/null > "$T/na.txt"
	cat "$T/na.txt"
	[ "$(sed -n 1p "$T/na.txt")" = "$(printf '02:00:00:00:05:01\t02:00:00:00:05:fe\t2001:db8:5::1\t2001:db8:5::fe\t255\t0\t1\t1\t2001:db8:5::1\t02:00:00:00:05:01\t1')" ]
	[ "$(sed -n 2p "$T/na.txt")" = "$(printf '02:00:00:00:05:01\t33:33:00:00:00:01\t2001:db8:5::1\tff02::1\t255\t0\t0\t1\t2001:db8:5::1\t02:00:00:00:05:01\t1')" ]
	[ "$(wc -l < "$T/na.txt")" -eq 2 ]
	# Our solicitation of the next hop, to its solicited-node group.
	tshark -r "$T/out.pcap" -Y icmpv6.type==135 -T fields -e eth.dst \
	    -e ipv6.dst -e icmpv6.nd.ns.target_address -e icmpv6.opt.linkaddr \
	    -e icmpv6.checksum.status 2>/dev/null | sort -u > "$T/ns.txt"
	[ "$(cat "$T/ns.txt")" = "$(printf '33:33:ff:00:00:fe\tff02::1:ff00:fe\t2001:db8:5::fe\t02:00:00:00:05:01\t1')" ]
	# North: the UDP packet to our MAC and the multicast echo request.
	[ "$(tshark -r "$T/north.pcap" -T fields -e ipv6.dst 2>/dev/null | tr '\n' ' ')" = "2001:db8:5::1 ff02::1 " ]
	grep -q '^ns-in 2$' "$T/ctr"
	grep -q '^na-out 2$' "$T/ctr"
	grep -q '^drop-nd-invalid 1$' "$T/ctr"
	grep -q '^drop-nd-other 1$' "$T/ctr"
	grep -q '^drop-not-ours 1$' "$T/ctr"
	grep -q '^na-in 1$' "$T/ctr"
	grep -q '^next-hop-learned 1$' "$T/ctr"
	grep -q '^next-hop-resolved 1$' "$T/ctr"
}

@test "nd: the next hop's MAC comes from its NA's option only, and changes only with the Override flag (RFC 4861 7.2.5)" {
	$PY - "$T/south.pcap" <<-'EOF'
	import sys
	from scapy.all import Ether, IPv6, ICMPv6ND_NA, ICMPv6NDOptDstLLAddr, wrpcap
	ME, US, NH = "02:00:00:00:05:01", "2001:db8:5::1", "2001:db8:5::fe"
	def na(src, S, O, opt=None):
	    p = Ether(src=src, dst=ME) / IPv6(src=NH, dst=US, hlim=255) / \
	        ICMPv6ND_NA(tgt=NH, S=S, O=O, R=1)
	    return p / ICMPv6NDOptDstLLAddr(lladdr=opt) if opt else p
	wrpcap(sys.argv[1], [
	    na("02:00:00:00:05:aa", 1, 1),		# no option: no address
	    na("02:00:00:00:05:fe", 1, 0, "02:00:00:00:05:fe"),	# learnt
	    na("02:00:00:00:05:fe", 0, 0, "02:00:00:00:05:bb"),	# O clear: kept
	    na("02:00:00:00:05:fe", 1, 0, "02:00:00:00:05:bb"),	# O clear: kept
	    na("02:00:00:00:05:cc", 0, 1, "02:00:00:00:05:cc"),	# O set: changed
	])
	EOF
	snb-run "pcap-read $T/south.pcap | [south] n: nd --address 2001:db8:5::1 \
	    --mac 02:00:00:00:05:01 --next-hop 2001:db8:5::fe \
	    --counters-out $T/ctr [south] | sink"
	cat "$T/ctr"
	grep -q '^na-in 5$' "$T/ctr"
	# learnt from the second, changed by the fifth; not from the first's
	# Ethernet source, nor by the third and fourth
	grep -q '^next-hop-learned 2$' "$T/ctr"
	grep -q '^next-hop-resolved 1$' "$T/ctr"
}

@test "nd: a solicitation whose checksum is 0xffff, one's complement's other zero, is answered" {
	$PY - "$T/south.pcap" <<-'EOF'
	import sys
	from scapy.all import Ether, IPv6, ICMPv6ND_NS, ICMPv6NDOptSrcLLAddr, \
	    raw, wrpcap
	NH, NHMAC = "2001:db8:5::fe", "02:00:00:00:05:fe"
	def ns(res):
	    return IPv6(src=NH, dst="ff02::1:ff00:1", hlim=255) / \
	        ICMPv6ND_NS(tgt="2001:db8:5::1", res=res) / \
	        ICMPv6NDOptSrcLLAddr(lladdr=NHMAC)
	# The reserved word (ignored by the receiver) set to the checksum
	# it makes when zero: the right checksum is then 0, sent as 0xffff.
	p = ns(IPv6(raw(ns(0)))[ICMPv6ND_NS].cksum)
	assert IPv6(raw(p))[ICMPv6ND_NS].cksum in (0, 0xffff)	# scapy's own
	p[ICMPv6ND_NS].cksum = 0xffff
	wrpcap(sys.argv[1], [Ether(src=NHMAC, dst="33:33:ff:00:00:01") / p])
	EOF
	tshark -r "$T/south.pcap" -T fields -e icmpv6.checksum \
	    -e icmpv6.checksum.status 2>/dev/null
	snb-run "pcap-read $T/south.pcap | [south] n: nd --address 2001:db8:5::1 \
	    --mac 02:00:00:00:05:01 --next-hop 2001:db8:5::fe \
	    --counters-out $T/ctr [south] | pcap-write $T/out.pcap"
	cat "$T/ctr"
	grep -q '^ns-in 1$' "$T/ctr"
	grep -q '^na-out 1$' "$T/ctr"
	grep -q '^drop-nd-invalid 0$' "$T/ctr"
}

@test "nd: an NS or NA longer than south's slots is counted in drop-oversize, not cut short" {
	# An empty capture: nd solicits its next hop at once, an 86-byte
	# frame that rings of 64-byte slots cannot hold.
	printf '\324\303\262\241\002\000\004\000\000\000\000\000\000\000\000\000\377\377\000\000\001\000\000\000' > "$T/empty.pcap"
	snb-run --capacity 64 "pcap-read $T/empty.pcap | [south] n: nd \
	    --address 2001:db8:5::1 --mac 02:00:00:00:05:01 \
	    --next-hop 2001:db8:5::fe --counters-out $T/ctr [south] |
	    pcap-write $T/out.pcap"
	cat "$T/ctr"
	grep -q '^drop-oversize [1-9]' "$T/ctr"
	grep -q '^ns-out 0$' "$T/ctr"
	[ "$(tshark -r "$T/out.pcap" 2>/dev/null | wc -l)" -eq 0 ]
}
