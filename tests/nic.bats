#!/usr/bin/env bats
# snb-nic: AF_PACKET, AF_XDP and tap back-ends between network namespaces.
#
# Every test builds its own namespaces (names carry $$ and the test number)
# and creates its veth ends directly inside them, so interface names can be
# short and fixed: nothing is ever seen in the root namespace, and deleting
# the namespaces in teardown deletes the links.  IPv6 is off in them, so
# the only frames on a link are the ones a test sends.  Needs root,
# python3 (raw-socket sender, TCP transfer), tcpdump, jq, ethtool and ping.
load helpers
load netns

setup() {
	[ "$(id -u)" -eq 0 ] || skip "needs root"
	export SNB_RUN_DIR="/dev/shm/snb-bats-$$-$BATS_TEST_NUMBER"
	T="$BATS_TEST_TMPDIR"
	S="snbS-$$-$BATS_TEST_NUMBER"	# where snb runs
	P="snbP-$$-$BATS_TEST_NUMBER"	# the peer
	Q="snbQ-$$-$BATS_TEST_NUMBER"	# a second peer (bridge)
	PIDS=""
}

teardown() {
	netns_teardown "$S" "$P" "$Q"
}

# start NS GRAPHNAME GRAPH: run snb-run in NS in the background.
start() {
	ip netns exec "$1" snb-run -n "$2" "$3" 2> "$T/$2.err" &
	PIDS="$PIDS $!"
	RUN_PID=$!
}

# counter GRAPH LABEL NAME: a counter of a running stage ("null" if none).
counter() {
	snb-top --json --once -i 0.01 "$1" 2>/dev/null | jq -r --arg l "$2" \
	    --arg c "$3" '.graphs[0].stages[] | select(.label == $l) | .counters[$c]'
}

# wait_open GRAPH LABEL: until the nic has opened its device (it makes its
# counters then).
wait_open() {
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

# capture NS IF FILE: record frames arriving on IF; stop with cap_stop.
capture() {
	local i
	ip netns exec "$1" tcpdump -i "$2" -Q in -nn -s 4096 -U --immediate-mode -Z root -w "$3" \
	    2> "$3.err" &
	CAP_PID=$!
	PIDS="$PIDS $!"
	for i in $(seq 100); do
		grep -q "listening on" "$3.err" && break
		sleep 0.05
	done
	sleep 0.2	# tcpdump says it listens a moment before it does
}

cap_stop() {
	sleep 0.5
	kill -INT "$CAP_PID"
	wait "$CAP_PID" || true
}

# send_mix NS IF N PCAP: N frames each of TCP port 80, TCP port 22 and UDP
# port 53 (sizes vary), sent on IF and also written to PCAP.
send_mix() {
	ip netns exec "$1" python3 - "$2" "$3" "$4" <<'EOF'
import socket, struct, sys
ifc, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def csum(b):
    if len(b) % 2: b += b'\0'
    s = sum(struct.unpack('!%dH' % (len(b) // 2), b))
    while s >> 16: s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff
def frame(proto, dport, i):
    src, dst = bytes([10, 99, 0, 1]), bytes([10, 99, 0, 2])
    data = bytes((i * 7 + k) & 0xff for k in range(20 + i * 13 % 1400))
    if proto == 6:
        l4 = struct.pack('!HHIIBBHHH', 40000 + i, dport, i, 0, 0x50, 0x18, 8192, 0, 0)
    else:
        l4 = struct.pack('!HHHH', 40000 + i, dport, 8 + len(data), 0)
    l4 += data
    c = csum(src + dst + struct.pack('!BBH', 0, proto, len(l4)) + l4)
    o = 16 if proto == 6 else 6
    l4 = l4[:o] + struct.pack('!H', c) + l4[o + 2:]
    ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(l4), i, 0, 64, proto, 0, src, dst)
    ip = ip[:10] + struct.pack('!H', csum(ip)) + ip[12:]
    return bytes.fromhex('020000000002' '020000000001' '0800') + ip + l4
frames = []
for i in range(n):
    frames += [frame(6, 80, i), frame(6, 22, i), frame(17, 53, i)]
with open(out, 'wb') as f:
    f.write(struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
    for fr in frames:
        f.write(struct.pack('<IIII', 0, 0, len(fr), len(fr)) + fr)
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((ifc, 0))
for fr in frames:
    s.send(fr)
EOF
}

# same_frames GOT.pcap SENT.pcap EXPR: GOT holds exactly SENT's frames
# that match EXPR, byte for byte and in order.
same_frames() {
	tcpdump -r "$2" -nn -t -xx "$3" > "$T/want.txt" 2>/dev/null
	tcpdump -r "$1" -nn -t -xx > "$T/got.txt" 2>/dev/null
	[ -s "$T/want.txt" ]
	diff "$T/want.txt" "$T/got.txt"
}

nic_pid() {	# the snb-nic child of snb-run $1
	ps -o pid=,comm= --ppid "$1" | awk '$2 == "snb-nic" { print $1; exit }'
}

# bounce BACKEND: nic B:vA | filter tcp port 80 | nic B:vA returns exactly
# the port 80 frames the peer sent.
bounce() {
	local n=20 lab="nic-${1}_vA"
	mkns "$S" "$P"
	veth vA "$S" vB "$P"
	start "$S" bounce "nic $1:vA | filter tcp port 80 | nic $1:vA"
	wait_open bounce "$lab"
	capture "$P" vB "$T/got.pcap"
	send_mix "$P" vB "$n" "$T/sent.pcap"
	cap_stop
	got=$(tcpdump -r "$T/got.pcap" 2>/dev/null | wc -l)
	cat "$T/got.pcap.err"
	echo "captured $got frames, counters: $(snb-top --json --once -i 0.01 bounce | jq -c '.graphs[0].stages[].counters')"
	[ "$got" -eq "$n" ]
	same_frames "$T/got.pcap" "$T/sent.pcap" "tcp port 80"
	[ "$(counter bounce "$lab" rx-packets)" -eq $((3 * n)) ]
	[ "$(counter bounce "$lab" tx-packets)" -eq "$n" ]
	[ "$(counter bounce "$lab" tx-bytes)" -eq \
	    "$(tcpdump -r "$T/got.pcap" -nn -e 2>/dev/null |
	    sed -n 's/^[^,]*, ethertype [^,]*, length \([0-9]*\): .*/\1/p' | awk '{ s += $1 } END { print s }')" ]
}

@test "snb-nic --describe says device; --help" {
	run snb-nic --describe
	[ "$status" -eq 0 ]
	assert_output_has "device"
	assert_output_has "in in"
	assert_output_has "out out"
	run snb-nic --help
	[ "$status" -eq 0 ]
	assert_output_has "usage: snb-nic"
}

@test "errors: missing interface, unknown back-end, bad option, no privileges" {
	mkns "$S"
	run ip netns exec "$S" snb-nic veth9
	[ "$status" -eq 1 ]
	[ "$output" = "snb-nic: no such interface 'veth9'" ]
	run ip netns exec "$S" snb-nic afpacket:veth9
	[ "$status" -eq 1 ]
	assert_output_has "no such interface 'veth9'"
	run ip netns exec "$S" snb-run 'nic veth9 | nic veth9'
	[ "$status" -ne 0 ]
	assert_output_has "snb-nic: no such interface 'veth9'"
	run snb-nic pcap:lo
	[ "$status" -eq 2 ]
	assert_output_has "unknown back-end 'pcap' in 'pcap:lo' (afpacket, xdp, tap)"
	run snb-nic --queue x lo
	[ "$status" -eq 2 ]
	assert_output_has "bad --queue 'x'"
	run snb-nic --fanout 1 xdp:lo
	[ "$status" -eq 2 ]
	assert_output_has "--fanout needs the afpacket back-end"
	command -v setpriv > /dev/null || skip "needs setpriv"
	# Unprivileged, in a graph (run by hand with no port connected,
	# snb-nic stops at that, before it opens anything): the stage
	# names the capability it lacks and fails with status 1.  The run
	# directory is nobody's own, as snb-run wants it.
	local d raw tap
	d=$(mktemp -d /dev/shm/snb-nic-priv.XXXXXX)
	chown 65534:65534 "$d"
	run env SNB_RUN_DIR="$d" ip netns exec "$S" setpriv --reuid=65534 \
	    --regid=65534 --clear-groups --inh-caps=-all \
	    snb-run 'nic afpacket:lo | sink'
	raw="$status $output"
	run env SNB_RUN_DIR="$d" ip netns exec "$S" setpriv --reuid=65534 \
	    --regid=65534 --clear-groups --inh-caps=-all \
	    snb-run 'source --count 1 | nic tap:t0'
	tap="$status $output"
	rm -rf "$d"
	[[ "$raw" == 1\ * ]]
	[[ "$raw" == *"needs CAP_NET_RAW"* ]]
	[[ "$raw" == *"exited with status 1"* ]]
	[[ "$tap" == 1\ * ]]
	[[ "$tap" == *"needs CAP_NET_ADMIN"* ]]
	[[ "$tap" == *"exited with status 1"* ]]
}

@test "afpacket: nic | filter tcp port 80 | nic bounces exactly the port 80 frames" {
	bounce afpacket
}

@test "xdp: nic | filter tcp port 80 | nic bounces exactly the port 80 frames" {
	bounce xdp
	# The default XDP program goes when the socket does.
	kill -INT "$RUN_PID"
	wait "$RUN_PID" || true
	run ip -n "$S" link show vA
	[ "$status" -eq 0 ]
	[[ "$output" != *xdp* ]]
}

@test "tap: nic | filter tcp port 80 | nic bounces exactly the port 80 frames" {
	# The tap is created by snb-nic in S; the host side of the tap is the
	# peer: frames sent on tT reach snb-nic, what it writes arrives on tT.
	local n=20
	mkns "$S"
	start "$S" tap 'nic tap:tT | filter tcp port 80 | nic tap:tT'
	wait_open tap nic-tap_tT
	ip -n "$S" link show tT | grep -q "UP"
	capture "$S" tT "$T/got.pcap"
	send_mix "$S" tT "$n" "$T/sent.pcap"
	cap_stop
	[ "$(tcpdump -r "$T/got.pcap" 2>/dev/null | wc -l)" -eq "$n" ]
	same_frames "$T/got.pcap" "$T/sent.pcap" "tcp port 80"
	[ "$(counter tap nic-tap_tT tx-packets)" -eq "$n" ]
	# A tap we created goes away with us.
	kill -INT "$RUN_PID"
	wait "$RUN_PID" || true
	run ip -n "$S" link show tT
	[ "$status" -ne 0 ]
}

@test "tap under --restart=on-failure: the operator's tap is attached again, never made bare when gone; a tap snb-nic made is made again" {
	mkns "$S"
	# The operator's tap, configured around snb-nic (as examples/ecmp.sh).
	ip -n "$S" tuntap add mode tap name tO
	ip -n "$S" addr add 10.99.7.1/24 dev tO
	ip netns exec "$S" snb-run --restart=on-failure -n tapo 'nic tap:tO | sink' 2> "$T/tapo.err" &
	PIDS="$PIDS $!"
	wait_open tapo nic-tap_tO
	ip netns exec "$S" snb-ctl tapo restart nic-tap_tO
	ip -n "$S" -4 addr show dev tO | grep -q 10.99.7.1
	# Gone: the restarts fail, saying why, and make no bare tO.
	ip -n "$S" link del tO
	for i in $(seq 600); do
		grep -q "not ours to create" "$T/tapo.err" && break
		sleep 0.05
	done
	cat "$T/tapo.err"
	grep -q "tap:tO: .*not ours to create" "$T/tapo.err"
	run ip -n "$S" link show tO
	[ "$status" -ne 0 ]
	# A tap snb-nic made is its own: removed, a restart makes it again.
	ip netns exec "$S" snb-run --restart=on-failure -n tapn 'nic tap:tN | sink' 2> "$T/tapn.err" &
	PIDS="$PIDS $!"
	wait_open tapn nic-tap_tN
	ip -n "$S" link del tN
	for i in $(seq 600); do
		ip -n "$S" link show tN 2>/dev/null | grep -q ",UP" && break
		sleep 0.05
	done
	cat "$T/tapn.err"
	ip -n "$S" link show tN | grep -q ",UP"
}

@test "tap swapped to another tap name: whose tap it is is asked afresh for the new name" {
	mkns "$S"
	# From the operator's tap to one snb-nic makes: the new one is made.
	ip -n "$S" tuntap add mode tap name tO
	ip netns exec "$S" snb-run --restart=on-failure -n taps 'n: nic tap:tO | sink' 2> "$T/taps.err" &
	PIDS="$PIDS $!"
	wait_open taps n
	ip netns exec "$S" snb-ctl taps swap n 'nic tap:tN' | grep -q '^ok: swapped'
	for i in $(seq 200); do
		ip -n "$S" link show tN 2>/dev/null | grep -q ",UP" && break
		sleep 0.05
	done
	cat "$T/taps.err"
	ip -n "$S" link show tN | grep -q ",UP"
	! grep -q "not ours to create" "$T/taps.err" || false
	# From ours to the operator's tO2: gone, it is not made bare.
	ip -n "$S" tuntap add mode tap name tO2
	ip netns exec "$S" snb-ctl taps swap n 'nic tap:tO2' | grep -q '^ok: swapped'
	ip -n "$S" link del tO2
	ip netns exec "$S" snb-ctl taps restart n || true
	for i in $(seq 600); do
		grep -q "tap:tO2: .*not ours to create" "$T/taps.err" && break
		sleep 0.05
	done
	cat "$T/taps.err"
	grep -q "tap:tO2: .*not ours to create" "$T/taps.err"
	run ip -n "$S" link show tO2
	[ "$status" -ne 0 ]
}

@test "bridge: nic vA1 | nic vA2 ; nic vA2 | nic vA1 carries ping and a 4 MiB TCP transfer" {
	command -v ethtool > /dev/null || skip "needs ethtool"
	command -v ping > /dev/null || skip "needs ping"
	mkns "$S" "$P" "$Q"
	veth vA1 "$S" vB1 "$P"
	veth vA2 "$S" vB2 "$Q"
	# A real wire carries finished frames: no checksum or segmentation
	# left to an offload engine, as a veth would by default.
	ip netns exec "$P" ethtool -K vB1 tx off tso off gso off > /dev/null
	ip netns exec "$Q" ethtool -K vB2 tx off tso off gso off > /dev/null
	ip -n "$P" addr add 10.99.1.1/24 dev vB1
	ip -n "$Q" addr add 10.99.1.2/24 dev vB2
	start "$S" br 'nic vA1 | nic vA2 ; nic vA2 | nic vA1'
	wait_open br nic-vA1
	wait_open br nic-vA2
	ip netns exec "$P" ping -c 3 -i 0.2 -W 2 10.99.1.2
	ip netns exec "$Q" ping -c 3 -i 0.2 -W 2 10.99.1.1
	head -c 4194304 /dev/urandom > "$T/data"
	ip netns exec "$Q" python3 - 10.99.1.2 "$T/recv" "$T/listening" <<'EOF' &
import socket, sys
s = socket.socket()
s.bind((sys.argv[1], 5001)); s.listen(1); s.settimeout(20)
open(sys.argv[3], 'w').close()	# listening: the client may connect
c, _ = s.accept(); c.settimeout(20)
with open(sys.argv[2], 'wb') as f:
    while True:
        b = c.recv(65536)
        if not b: break
        f.write(b)
EOF
	local srv=$!
	PIDS="$PIDS $srv"
	wait_for test -e "$T/listening"
	ip netns exec "$P" python3 - 10.99.1.2 "$T/data" <<'EOF'
import socket, sys
s = socket.create_connection((sys.argv[1], 5001), timeout=20)
s.sendall(open(sys.argv[2], 'rb').read())
s.shutdown(socket.SHUT_WR); s.recv(1); s.close()
EOF
	wait "$srv"
	[ "$(sha256sum < "$T/data")" = "$(sha256sum < "$T/recv")" ]
	# No prefix on veth: native AF_XDP, no fallback note.
	[ "$(counter br nic-vA1 xdp-fill-empty)" != null ]
	run cat "$T/br.err"
	[[ "$output" != *"using AF_PACKET"* ]]
}

@test "link down and up mid-run: counted pause, no spinning, traffic resumes" {
	local be pid t0 t1
	mkns "$S" "$P"
	veth vA "$S" vB "$P"
	for be in afpacket xdp; do
		start "$S" ld-$be "n: nic $be:vA | filter tcp port 80 | @n ;
		    source --rate 100 | @n"
		wait_open ld-$be n
		pid=$(nic_pid "$RUN_PID")
		ip -n "$S" link set vA down
		sleep 0.2
		t0=$(cpu_ticks "$pid")
		sleep 2
		t1=$(cpu_ticks "$pid")
		echo "$be: $((t1 - t0)) ticks in 2 s while down"
		[ $((t1 - t0)) -le 20 ]
		kill -0 "$pid"
		[ "$(counter ld-$be n link-down)" -eq 1 ]
		[ "$(counter ld-$be n drop-link-down)" -gt 50 ]
		ip -n "$S" link set vA up
		sleep 0.3
		send_mix "$P" vB 10 "$T/sent.pcap"
		sleep 0.3
		[ "$(counter ld-$be filter matched)" -eq 10 ]
		grep -q "vA: link down" "$T/ld-$be.err"
		grep -q "vA: link up" "$T/ld-$be.err"
		kill -INT "$RUN_PID"
		wait "$RUN_PID" || true
	done
}

@test "receive drops: oversize frames and a full ring are counted, never block" {
	local sink
	mkns "$S" "$P"
	veth vA "$S" vB "$P"
	# Slots of 300 bytes: of send_mix's 3 x 40 frames, the larger ones do
	# not fit.  A stopped sink fills the 16-slot ring: the rest must be
	# drained from the kernel and counted.
	ip netns exec "$S" snb-run --capacity 300 --slots 16 -n dr \
	    'n: nic afpacket:vA | s: sink' 2> "$T/dr.err" &
	RUN_PID=$!
	PIDS="$PIDS $!"
	wait_open dr n
	sink=$(ps -o pid=,comm= --ppid "$RUN_PID" | awk '$2 == "snb-sink" { print $1 }')
	kill -STOP "$sink"
	send_mix "$P" vB 40 "$T/sent.pcap"
	sleep 0.3
	big=$(tcpdump -r "$T/sent.pcap" 'greater 301' 2>/dev/null | wc -l)
	[ "$big" -gt 0 ]
	[ "$(counter dr n drop-oversize)" -eq "$big" ]
	[ "$(counter dr n rx-packets)" -eq 16 ]
	[ "$(counter dr n drop-ring-full)" -eq $((120 - big - 16)) ]
	kill -CONT "$sink"
}

@test "--fanout shares an interface; --promisc and --mtu" {
	local a b
	mkns "$S" "$P"
	veth vA "$S" vB "$P"
	start "$S" f1 'nic vA --fanout 7 --promisc --mtu 1600 | sink'
	start "$S" f2 'nic afpacket:vA --fanout 7 | sink'
	wait_open f1 nic-vA
	wait_open f2 nic-afpacket_vA
	ip -n "$S" link show vA | grep -q "mtu 1600"
	ip -d -n "$S" link show vA | grep -q "promiscuity 1"
	send_mix "$P" vB 100 "$T/sent.pcap"
	sleep 0.3
	a=$(counter f1 nic-vA rx-packets)
	b=$(counter f2 nic-afpacket_vA rx-packets)
	echo "fanout: $a + $b"
	[ "$a" -gt 0 ]
	[ "$b" -gt 0 ]
	[ $((a + b)) -eq 300 ]
	# The promiscuous membership goes with the process.
	kill -INT $PIDS
	wait $PIDS || true
	ip -d -n "$S" link show vA | grep -q "promiscuity 0"
}
