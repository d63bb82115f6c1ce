#!/usr/bin/env bats
# snb-bridge and snb-vlan.
#
# The network tests build four namespaces: S runs the bridge, A, B and C
# are hosts on veth pairs to it.  C sits behind VLAN 10: this kernel has no
# 8021q support (no `ip link add ... type vlan`, no bridge VLAN filtering),
# so C's own snb graph tags and untags between its wire (eC) and a veth
# pair inside C whose far end (cK) has C's address.  The wire between S
# and C therefore carries only 802.1Q frames, which tcpdump checks on both
# ends, and the pings check that both snb-vlan stages and the bridge get
# every frame right.  IPv6 is off everywhere, so the only frames are the
# ones the tests cause, and the counters can be checked exactly.
#
# The other tests run pcap-read | ... | pcap-write graphs and check the
# frames with tshark and tcpdump.  Needs root (network tests), python3,
# tshark, tcpdump, jq, ethtool and ping.
load helpers
load netns

setup() {
	export SNB_RUN_DIR="/dev/shm/snb-bats-$$-$BATS_TEST_NUMBER"
	T="$BATS_TEST_TMPDIR"
	S="snbS-$$-$BATS_TEST_NUMBER"	# the bridge
	A="snbA-$$-$BATS_TEST_NUMBER"	# hosts
	B="snbB-$$-$BATS_TEST_NUMBER"
	C="snbC-$$-$BATS_TEST_NUMBER"
	PIDS=""
}

teardown() {
	netns_teardown "$S" "$A" "$B" "$C"
}

need_root() {
	[ "$(id -u)" -eq 0 ] || skip "needs root"
	local t
	for t in ethtool ping tcpdump jq; do
		command -v "$t" > /dev/null && continue
		[ "${CI:-}" = true ] && { echo "missing $t"; return 1; }
		skip "needs $t"
	done
}

# A host's end sends finished frames, as a real wire carries.
nooffload() {
	ip netns exec "$1" ethtool -K "$2" tx off tso off gso off > /dev/null
}

start() {	# NS GRAPHNAME GRAPH
	ip netns exec "$1" snb-run -n "$2" "$3" 2> "$T/$2.err" &
	PIDS="$PIDS $!"
}

counter() {	# GRAPH LABEL NAME
	snb-top --json --once -i 0.01 "$1" 2>/dev/null | jq -r --arg l "$2" \
	    --arg c "$3" '.graphs[0].stages[] | select(.label == $l) | .counters[$c]'
}

counters() {	# GRAPH: every stage's counters, for failure messages
	snb-top --json --once -i 0.01 "$1" 2>/dev/null |
	    jq -c '.graphs[0].stages[] | [.label, .counters]'
}

wait_open() {	# GRAPH LABEL: until the nic has its counters
	local i
	for i in $(seq 100); do
		case "$(counter "$1" "$2" rx-packets)" in
		[0-9]*) return 0 ;;
		esac
		sleep 0.05
	done
	echo "nic $2 of $1 did not open:"; cat "$T/$1.err"
	return 1
}

mac() {	# NS IF
	ip -n "$1" -br link show "$2" | awk '{ print $3 }'
}

IP_A=10.97.0.1 IP_B=10.97.0.2 IP_C=10.97.0.3

# topology [BRIDGE OPTIONS]: S, A, B, C as described at the top, the bridge
# graph "br" in S (stages br, u, t) and C's VLAN graph "vc".
topology() {
	mkns "$S" "$A" "$B" "$C"
	veth vA "$S" eA "$A"
	veth vB "$S" eB "$B"
	veth vC "$S" eC "$C"
	veth cA "$C" cK "$C"
	nooffload "$A" eA
	nooffload "$B" eB
	nooffload "$C" cK
	ip -n "$A" addr add $IP_A/24 dev eA
	ip -n "$B" addr add $IP_B/24 dev eB
	ip -n "$C" addr add $IP_C/24 dev cK
	# afpacket on the trunk, so tcpdump on either end sees what arrives
	# (AF_XDP takes frames before the kernel's taps).
	start "$C" vc "nic afpacket:eC | vlan untag 10 | nic cA ;
	    nic cA | vlan tag 10 | nic afpacket:eC"
	start "$S" br "br: bridge $*
	    nic vA | [a] @br [a] | nic vA
	    nic vB | [b] @br [b] | nic vB
	    nic afpacket:vC | u: vlan untag 10 | [c] @br [c] |
	        t: vlan tag 10 | nic afpacket:vC"
	wait_open br nic-vA
	wait_open br nic-vB
	wait_open br nic-afpacket_vC
	wait_open vc nic-afpacket_eC
	wait_open vc nic-cA
}

# Permanent neighbour entries: no ARP, so every frame is an echo.
static_arp() {
	local ma mb mc
	ma=$(mac "$A" eA) mb=$(mac "$B" eB) mc=$(mac "$C" cK)
	ip -n "$A" neigh replace $IP_B lladdr "$mb" dev eA nud permanent
	ip -n "$A" neigh replace $IP_C lladdr "$mc" dev eA nud permanent
	ip -n "$B" neigh replace $IP_A lladdr "$ma" dev eB nud permanent
	ip -n "$B" neigh replace $IP_C lladdr "$mc" dev eB nud permanent
	ip -n "$C" neigh replace $IP_A lladdr "$ma" dev cK nud permanent
	ip -n "$C" neigh replace $IP_B lladdr "$mb" dev cK nud permanent
}

ping_ok() {	# NS DEST COUNT
	ip netns exec "$1" ping -n -q -c "$3" -i 0.2 -W 3 "$2" || {
		echo "ping $2 from $1 failed; counters:"; counters br; counters vc
		return 1
	}
}

all_pairs() {	# COUNT: a ping each way between every pair
	ping_ok "$A" $IP_B "$1"
	ping_ok "$A" $IP_C "$1"
	ping_ok "$B" $IP_C "$1"
}

# capture NS IF FILE / cap_stop: tcpdump of what arrives on IF.
capture() {
	local i
	ip netns exec "$1" tcpdump -i "$2" -Q in -nn -s 4096 -U \
	    --immediate-mode -Z root -w "$3" 2> "$3.err" &
	CAPS="${CAPS:-} $!"
	PIDS="$PIDS $!"
	for i in $(seq 100); do
		grep -q "listening on" "$3.err" && break
		sleep 0.05
	done
	sleep 0.3	# tcpdump says it listens a moment before it does
}

cap_stop() {
	local p
	sleep 0.5
	for p in $CAPS; do kill -INT "$p"; wait "$p" || true; done
	CAPS=
}

npkts() {	# FILE [EXPR]
	tcpdump -r "$1" -nn ${2:+"$2"} 2>/dev/null | wc -l
}

# ---- pcap helpers for the offline tests ----

# mkframes FILE SPEC...: a pcap of Ethernet frames.  SPEC is
# DST,SRC[,VID[,PCP]][,len=N] with MACs as a:b:c:d:e:f, or "runt".
# The payload is IPv4/UDP with a byte pattern, so tshark decodes it.
mkframes() {
	python3 - "$@" <<'EOF'
import struct, sys
out = sys.argv[1]
frames = []
for i, spec in enumerate(sys.argv[2:]):
    if spec == 'runt':
        frames.append(b'\x02\x00\x00\x00\x00\x01\x02\x00')
        continue
    f = spec.split(',')
    n = 30
    if f[-1].startswith('len='):
        n = int(f.pop()[4:])
    dst, src = (bytes.fromhex(m.replace(':', '')) for m in f[:2])
    data = bytes((i * 11 + k) & 0xff for k in range(n))
    ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 28 + n, i, 0, 64, 17, 0,
                     bytes([10, 9, 0, 1]), bytes([10, 9, 0, 2]))
    udp = struct.pack('!HHHH', 1000 + i, 2000, 8 + n, 0)
    fr = dst + src
    if len(f) > 2:
        vid = int(f[2]); pcp = int(f[3]) if len(f) > 3 else 0
        fr += struct.pack('!HH', 0x8100, pcp << 13 | vid)
    frames.append(fr + b'\x08\x00' + ip + udp + data)
with open(out, 'wb') as o:
    o.write(struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
    for i, fr in enumerate(frames):
        o.write(struct.pack('<IIII', 1700000000 + i, 0, len(fr), len(fr)) + fr)
EOF
}

# fields FILE: tshark's view of each frame, a line each:
# VLAN ids;priorities;ethertypes inside tags;outer ethertype;UDP source port
fields() {
	tshark -r "$1" -T fields -E separator=';' -e vlan.id -e vlan.priority \
	    -e vlan.etype -e eth.type -e udp.srcport 2>/dev/null
}

run_graph() {	# GRAPH: must end by itself with status 0
	run timeout 60 snb-run "$1"
	echo "$output"
	[ "$status" -eq 0 ]
}

M1=02:00:00:00:00:01 M2=02:00:00:00:00:02 M3=02:00:00:00:00:03
BC=ff:ff:ff:ff:ff:ff

# ---- network tests ----

@test "bridge: pings between all pairs, C behind VLAN 10; only VLAN 10 frames on C's wire" {
	need_root
	topology
	capture "$C" eC "$T/c-in.pcap"
	capture "$S" vC "$T/s-in.pcap"
	all_pairs 3
	cap_stop
	# Both ends of the trunk saw tagged echoes and ARP, nothing untagged.
	for f in c-in s-in; do
		echo "$f: $(npkts "$T/$f.pcap") frames, $(npkts "$T/$f.pcap" 'not vlan') untagged"
		[ "$(npkts "$T/$f.pcap" 'not vlan')" -eq 0 ]
		[ "$(npkts "$T/$f.pcap" 'vlan 10 and icmp')" -eq 6 ]
		[ "$(npkts "$T/$f.pcap" 'vlan 10 and arp')" -ge 1 ]
		[ "$(npkts "$T/$f.pcap")" -eq "$(npkts "$T/$f.pcap" 'vlan 10')" ]
	done
	counters br
	# ARP requests were flooded; three hosts learned; nothing dropped.
	[ "$(counter br br flood-multicast)" -ge 3 ]
	[ "$(counter br br learned)" -eq 3 ]
	[ "$(counter br br fdb-entries)" -eq 3 ]
	[ "$(counter br br moved)" -eq 0 ]
	for c in drop-runt drop-bad-source drop-same-port drop-split-horizon \
	    drop-no-output drop-oversize; do
		[ "$(counter br br $c)" -eq 0 ]
	done
	[ "$(counter br u drop-untagged)" -eq 0 ]
	[ "$(counter br u drop-other-vid)" -eq 0 ]
	[ "$(counter br u untagged)" -eq "$(counter br br 'rx[c]')" ]
	[ "$(counter br t tagged)" -eq "$(counter br br 'tx[c]')" ]
}

@test "bridge: unknown unicast is flooded until learned, then forwarded only" {
	need_root
	topology
	static_arp
	# C's kernel sees the floods: frames between A and B, when B is unknown.
	capture "$C" cK "$T/r1.pcap"
	all_pairs 2
	cap_stop
	counters br
	f1=$(counter br br flood-unknown)
	w1=$(counter br br forwarded)
	[ "$f1" -ge 1 ]
	[ "$(counter br br flood-multicast)" -eq 0 ]
	[ "$(npkts "$T/r1.pcap" "icmp and not host $IP_C")" -ge 1 ]
	capture "$C" cK "$T/r2.pcap"
	all_pairs 3
	cap_stop
	counters br
	[ "$(npkts "$T/r2.pcap" "icmp and not host $IP_C")" -eq 0 ]
	[ "$(npkts "$T/r2.pcap" "icmp")" -eq 6 ]	# requests from A and B
	# 3 pairs x 3 pings x (request + reply), each to one port, no flood.
	[ "$(counter br br flood-unknown)" -eq "$f1" ]
	[ "$(counter br br forwarded)" -eq $((w1 + 18)) ]
	[ "$(counter br br flood-multicast)" -eq 0 ]
	[ "$(counter br br learned)" -eq 3 ]
}

@test "bridge: --age 1 forgets idle addresses, which are flooded to again" {
	need_root
	topology --age 1
	static_arp
	ping_ok "$A" $IP_B 1
	[ "$(counter br br learned)" -eq 2 ]
	f1=$(counter br br flood-unknown)
	# Wait for the sweep (no traffic meanwhile), at most 20 s.
	for i in $(seq 100); do
		[ "$(counter br br aged)" -ge 2 ] && break
		sleep 0.2
	done
	counters br
	[ "$(counter br br aged)" -eq 2 ]
	[ "$(counter br br fdb-entries)" -eq 0 ]
	# B was forgotten: A's next request floods; B's reply finds A learned
	# from that request.
	ping_ok "$A" $IP_B 1
	[ "$(counter br br flood-unknown)" -eq $((f1 + 1)) ]
	[ "$(counter br br learned)" -eq 4 ]
}

@test "bridge: --group a,b keeps A and B apart (split horizon), both reach C" {
	need_root
	topology --group a,b
	static_arp
	ping_ok "$A" $IP_C 2
	ping_ok "$B" $IP_C 2
	run ip netns exec "$A" ping -n -q -c 2 -i 0.2 -W 1 $IP_B
	[ "$status" -ne 0 ]
	counters br
	# A, B and C are known by now: A's two requests are dropped.
	[ "$(counter br br drop-split-horizon)" -eq 2 ]
	[ "$(counter br br 'drop[a]')" -eq 2 ]
	[ "$(counter br br 'tx[b]')" -eq 2 ]	# the replies to B's pings
}

# ---- offline tests ----

@test "bridge: forwarding decisions and drop causes, counted exactly" {
	mkframes "$T/in.pcap" \
	    $BC,$M1 \
	    $M1,$M2 \
	    $M3,$M1 \
	    runt \
	    $M1,03:00:00:00:00:09 \
	    $M2,00:00:00:00:00:00 \
	    01:80:c2:00:00:00,$M1 \
	    01:00:5e:00:00:01,$M2
	run_graph "pcap-read $T/in.pcap | [a] br: bridge --counters-out $T/c [a] |
	    pcap-write $T/a.pcap ; @br [b] | pcap-write $T/b.pcap ;
	    @br [c] | pcap-write $T/c.pcap"
	cat "$T/c"
	# Broadcast, unknown unicast and multicast go to b and c, not back.
	for p in b c; do
		[ "$(npkts "$T/$p.pcap")" -eq 3 ]
		[ "$(npkts "$T/$p.pcap" "ether dst $BC")" -eq 1 ]
		[ "$(npkts "$T/$p.pcap" "ether dst $M3")" -eq 1 ]
		[ "$(npkts "$T/$p.pcap" "ether dst 01:00:5e:00:00:01")" -eq 1 ]
	done
	[ "$(npkts "$T/a.pcap")" -eq 0 ]
	cmp "$T/b.pcap" "$T/c.pcap"
	grep -qx "flooded 3" "$T/c"
	grep -qx "flood-unknown 1" "$T/c"
	grep -qx "flood-multicast 2" "$T/c"
	grep -qx "flood-copies 6" "$T/c"
	grep -qx "forwarded 0" "$T/c"
	grep -qx "learned 2" "$T/c"
	grep -qx "drop-same-port 1" "$T/c"
	grep -qx "drop-runt 1" "$T/c"
	grep -qx "drop-bad-source 2" "$T/c"
	grep -qx "drop-link-local 1" "$T/c"
	grep -qx "rx\[a\] 8" "$T/c"
	grep -qx "drop\[a\] 5" "$T/c"
	grep -qx "tx\[b\] 3" "$T/c"
}

@test "bridge: a MAC seen on another port moves there, counted once" {
	# Whatever order the two inputs are read in, M1 is learned on one
	# port and then seen on the other exactly once.
	mkframes "$T/a.pcap" $BC,$M1
	mkframes "$T/b.pcap" $BC,$M2 $BC,$M1
	run_graph "pcap-read $T/a.pcap | [a] br: bridge --counters-out $T/c [a] |
	    pcap-write $T/oa.pcap ;
	    pcap-read $T/b.pcap | [b] @br [b] | pcap-write $T/ob.pcap"
	cat "$T/c"
	grep -qx "moved 1" "$T/c"
	grep -qx "learned 2" "$T/c"
	grep -qx "fdb-entries 2" "$T/c"
	[ "$(npkts "$T/oa.pcap")" -eq 2 ]
	[ "$(npkts "$T/ob.pcap")" -eq 1 ]
}

@test "bridge: a full table learns no more, and still floods" {
	mkframes "$T/in.pcap" $BC,$M1 $BC,$M2 $BC,$M3 $BC,$M3 $M3,$M1 $M1,$M2
	run_graph "pcap-read $T/in.pcap | [a] br: bridge --max-macs 2 --counters-out $T/c [a] |
	    pcap-write $T/a.pcap ; @br [b] | pcap-write $T/b.pcap"
	cat "$T/c"
	grep -qx "learned 2" "$T/c"
	grep -qx "fdb-entries 2" "$T/c"
	grep -qx "learn-table-full 2" "$T/c"
	# M3 was never learned: flooded.  M1 was, on a: same port.
	grep -qx "flood-unknown 1" "$T/c"
	grep -qx "drop-same-port 1" "$T/c"
	[ "$(npkts "$T/b.pcap")" -eq 5 ]
}

@test "bridge: 3000 addresses learned are all found again" {
	# From port a: 3000 sources announce themselves, then a frame to
	# each: all known, all on a, so all dropped as same-port.
	python3 - "$T/in.pcap" <<'PY'
import struct, sys
fr = []
macs = [bytes([2, 0x5a, (i * 7919) >> 16 & 0xff, (i * 7919) >> 8 & 0xff, i * 7919 & 0xff, i & 0xff]) for i in range(3000)]
for m in macs:
    fr.append(b'\xff' * 6 + m + b'\x08\x00' + bytes(46))
for m in macs:
    fr.append(m + bytes.fromhex('02000000ffff') + b'\x08\x00' + bytes(46))
with open(sys.argv[1], 'wb') as o:
    o.write(struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
    for i, f in enumerate(fr):
        o.write(struct.pack('<IIII', i, 0, len(f), len(f)) + f)
PY
	run_graph "pcap-read $T/in.pcap | [a] br: bridge --max-macs 3001 --counters-out $T/c [a] |
	    sink ; @br [b] | sink --expect 3000"
	cat "$T/c"
	grep -qx "learned 3001" "$T/c"
	grep -qx "fdb-entries 3001" "$T/c"
	grep -qx "drop-same-port 3000" "$T/c"
	grep -qx "flood-unknown 0" "$T/c"
	grep -qx "learn-table-full 0" "$T/c"
}

@test "bridge: lossless under backpressure (200000 frames, 2 flood copies each)" {
	local n=$((200000 / SNB_TEST_SCALE))
	run_graph "source --count $n --size 60-1500 | [a] br: bridge [b] |
	    sink --expect $n ; @br [c] | sink --expect $n"
}

@test "vlan tag: pushes 802.1Q VID 10 PCP 5 in front of any frame, payload intact" {
	mkframes "$T/in.pcap" $M2,$M1 $M2,$M1,20,3 runt $M2,$M1,len=1400
	run_graph "pcap-read $T/in.pcap | vlan tag 10 --pcp 5 --counters-out $T/c |
	    pcap-write $T/out.pcap"
	cat "$T/c"
	fields "$T/out.pcap" > "$T/f"
	cat "$T/f"
	[ "$(cat "$T/f")" = "$(printf '%s\n' '10;5;0x0800;0x8100;1000' \
	    '10,20;5,3;0x8100,0x0800;0x8100;1001' '10;5;0x0800;0x8100;1003')" ]
	grep -qx "tagged 3" "$T/c"
	grep -qx "drop-runt 1" "$T/c"
	# Byte for byte: the input with 81 00 a0 0a after the addresses.
	python3 - "$T/in.pcap" "$T/out.pcap" <<'EOF'
import struct, sys
def frames(fn):
    b = open(fn, 'rb').read()[24:]
    while b:
        n = struct.unpack('<IIII', b[:16])[2]
        yield b[16:16 + n]; b = b[16 + n:]
ins = [f for f in frames(sys.argv[1]) if len(f) >= 14]
outs = list(frames(sys.argv[2]))
assert len(ins) == len(outs)
for i, o in zip(ins, outs):
    assert o == i[:12] + bytes.fromhex('8100a00a') + i[12:], (i, o)
EOF
}

@test "vlan untag: pops VID 10 only; others dropped and counted, or passed with --pass" {
	mkframes "$T/in.pcap" $M2,$M1,10,7 $M2,$M1 $M2,$M1,20 $M2,$M1,10 \
	    $M2,$M1,0,4 runt
	run_graph "pcap-read $T/in.pcap | vlan untag 10 --counters-out $T/c |
	    pcap-write $T/out.pcap"
	cat "$T/c"
	[ "$(fields "$T/out.pcap")" = "$(printf '%s\n' ';;;0x0800;1000' ';;;0x0800;1003')" ]
	grep -qx "untagged 2" "$T/c"
	grep -qx "drop-untagged 1" "$T/c"
	grep -qx "drop-other-vid 2" "$T/c"
	grep -qx "drop-runt 1" "$T/c"
	run_graph "pcap-read $T/in.pcap | vlan untag 10 --pass --counters-out $T/c |
	    pcap-write $T/out.pcap"
	[ "$(fields "$T/out.pcap")" = "$(printf '%s\n' ';;;0x0800;1000' \
	    ';;;0x0800;1001' '20;0;0x0800;0x8100;1002' ';;;0x0800;1003' \
	    '0;4;0x0800;0x8100;1004')" ]
	grep -qx "passed 3" "$T/c"
}

@test "vlan mux: trunk to per-VLAN ports and native, and back with tags" {
	mkframes "$T/trunk.pcap" $M2,$M1,10 $M2,$M1 $M2,$M1,20,2 $M2,$M1,30 \
	    $M2,$M1,0,6 $M2,$M1,10
	run_graph "pcap-read $T/trunk.pcap | [trunk] m: vlan mux --counters-out $T/c [10] |
	    pcap-write $T/v10.pcap ; @m [20] | pcap-write $T/v20.pcap ;
	    @m [native] | pcap-write $T/vn.pcap"
	cat "$T/c"
	[ "$(fields "$T/v10.pcap")" = "$(printf '%s\n' ';;;0x0800;1000' ';;;0x0800;1005')" ]
	[ "$(fields "$T/v20.pcap")" = ";;;0x0800;1002" ]
	[ "$(fields "$T/vn.pcap")" = "$(printf '%s\n' ';;;0x0800;1001' ';;;0x0800;1004')" ]
	grep -qx "drop-unknown-vid 1" "$T/c"
	grep -qx "untagged 4" "$T/c"
	grep -qx "native 2" "$T/c"
	# The other way: each access port's frames get its VID on the trunk.
	mkframes "$T/a10.pcap" $M2,$M1 $M2,$M1
	mkframes "$T/a20.pcap" $M2,$M1
	mkframes "$T/an.pcap" $M2,$M1
	run_graph "pcap-read $T/a10.pcap | [10] m: vlan mux --pcp 1 --counters-out $T/c [trunk] |
	    pcap-write $T/t.pcap ; pcap-read $T/a20.pcap | [20] @m ;
	    pcap-read $T/an.pcap | [native] @m"
	cat "$T/c"
	fields "$T/t.pcap" | LC_ALL=C sort > "$T/f"
	cat "$T/f"
	[ "$(cat "$T/f")" = "$(printf '%s\n' '10;1;0x0800;0x8100;1000' \
	    '10;1;0x0800;0x8100;1001' '20;1;0x0800;0x8100;1000' ';;;0x0800;1000')" ]
	grep -qx "tagged 3" "$T/c"
	grep -qx "rx\[native\] 1" "$T/c"
}

@test "errors: bad VLAN ids, unknown subcommand, bad options and ports" {
	for v in 0 4095 abc 010 99999 ""; do
		run snb-vlan tag "$v"
		echo "$v: $output"
		[ "$status" -eq 2 ]
		[ "$output" = "snb-vlan: tag: bad VLAN id '$v': must be 1..4094" ]
	done
	run snb-vlan untag 4095
	[ "$status" -eq 2 ]
	[ "$output" = "snb-vlan: untag: bad VLAN id '4095': must be 1..4094" ]
	run snb-vlan tag
	[ "$status" -eq 2 ]
	assert_output_has "tag: missing VLAN id"
	run snb-vlan frob 10
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "snb-vlan: unknown subcommand 'frob' (tag, untag, mux)" ]
	[ "${lines[1]}" = "usage: snb-vlan tag VID [--pcp N] [--counters-out FILE]" ]
	run snb-vlan
	[ "$status" -eq 2 ]
	assert_output_has "usage: snb-vlan"
	run snb-vlan tag 10 --pcp 8
	[ "$status" -eq 2 ]
	[ "$output" = "snb-vlan: tag: bad --pcp '8': must be 0..7" ]
	run snb-vlan untag 10 --pcp 1
	[ "$status" -eq 2 ]
	run snb-vlan mux 10
	[ "$status" -eq 2 ]
	assert_output_has "mux: unexpected argument '10'"
	run snb-run "source --count 1 | [trunk] vlan mux [4095] | sink"
	[ "$status" -ne 0 ]
	assert_output_has "mux: bad port '4095' (trunk, native, or a VLAN id 1..4094)"
	run snb-run "source --count 1 | [x] vlan tag 10 | sink"
	[ "$status" -ne 0 ]
	assert_output_has "tag: no input port 'x' (ports: in, out)"
	run snb-bridge --age x
	[ "$status" -eq 2 ]
	[ "$output" = "snb-bridge: bad --age 'x': not a number" ]
	run snb-bridge --max-macs 0
	[ "$status" -eq 2 ]
	[ "$output" = "snb-bridge: bad --max-macs '0': must be 1..1048576" ]
	run snb-bridge extra
	[ "$status" -eq 2 ]
	run snb-run "source --count 1 | [a] bridge --group a,z [b] | sink"
	[ "$status" -ne 0 ]
	assert_output_has "--group a,z: port 'z' is not connected"
	run snb-bridge --describe
	[ "$output" = "$(printf 'snb-describe 1\napp bridge\nin *\nout *\nsummary %s' "$(snb-bridge --help | sed -n 2p)")" ]
}

@test "examples/switch.sh runs, pings every pair, and leaves nothing behind" {
	need_root
	run sh "$BATS_TEST_DIRNAME/../examples/switch.sh" "$SNB_BUILD"
	echo "$output"
	[ "$status" -eq 0 ]
	assert_output_has "== all pings answered"
	assert_output_has "learned=3"
	run sh -c "ip netns list | grep snbsw-"
	[ "$status" -ne 0 ]
	run sh -c "ls -d /dev/shm/snb-switch-* 2>/dev/null"
	[ -z "$output" ]
}
