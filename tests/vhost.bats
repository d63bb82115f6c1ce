#!/usr/bin/env bats
# snb-vhost: a vhost-user backend, checked against DPDK's testpmd as the
# frontend (net_virtio_user) and against a hostile frontend in python3.
#
# testpmd runs without hugepages (--no-huge: DPDK then backs its memory
# with a memfd, which is what a vhost-user backend must be able to map),
# with its own --file-prefix per test, and is stopped with SIGTERM (it
# prints its statistics then).  Forwarding uses "set fwd io retry" (or mac):
# testpmd retries a full transmit queue instead of dropping, and
# --no-flush-rx keeps it from throwing away what we delivered before its
# forwarding started, so that every packet is accounted for by testpmd's
# own counters.  Frames delivered while testpmd is still starting its port
# (after the driver said DRIVER_OK) were seen to vanish inside testpmd, about
# a ring's worth in one run out of three: so the graphs start with an idle
# source and swap the real one in (snb-ctl swap) once testpmd forwards.
# Needs root, dpdk-testpmd (dpdk-dev), python3, jq, tshark, mkpcap; the
# guest test also qemu-system-x86_64, cpio and busybox-static (tests/vm).
load helpers

setup() {
	[ "$(id -u)" -eq 0 ] || skip "needs root"
	if ! command -v dpdk-testpmd >/dev/null; then
		[ "${CI:-}" = true ] && { echo "dpdk-testpmd missing"; return 1; }
		skip "needs dpdk-testpmd (dpdk-dev)"
	fi
	export SNB_RUN_DIR="/dev/shm/snb-bats-$$-$BATS_TEST_NUMBER"
	T="$BATS_TEST_TMPDIR"
	# A short directory: socket paths are limited to 107 bytes.
	D=$(mktemp -d /tmp/snbvh.XXXXXX)
	SOCK="$D/v.sock"
	G="vh$$-$BATS_TEST_NUMBER"
	NS="snbVU-$$-$BATS_TEST_NUMBER"
	PIDS=""
	PREFIXES=""
}

teardown() {
	local p i
	for p in $PIDS; do kill -TERM "$p" 2>/dev/null; done
	for p in $PIDS; do
		for i in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	for p in $PREFIXES; do rm -rf "/var/run/dpdk/$p"; done
	ip netns del "$NS" 2>/dev/null || true
	rm -rf "$D"
	if [ -d "$SNB_RUN_DIR" ]; then
		left=$(ls -A "$SNB_RUN_DIR")
		rm -rf "$SNB_RUN_DIR"
		[ -z "$left" ] || { echo "left in run dir: $left"; return 1; }
	fi
}

# graph GRAPH: snb-run -n $G in the background; waits for the socket.
graph() {
	local i
	snb-run -n "$G" "$1" 2> "$T/graph.err" &
	RUN_PID=$!
	PIDS="$PIDS $RUN_PID"
	for i in $(seq 200); do
		[ -S "$SOCK" ] && return 0
		kill -0 "$RUN_PID" 2>/dev/null || break
		sleep 0.05
	done
	echo "no socket $SOCK:"; cat "$T/graph.err"
	return 1
}

# testpmd NAME MODE: a virtio_user frontend on $SOCK forwarding back what
# it receives (MODE io or mac), in the background; TP_PID is its pid.
testpmd() {
	local prefix="snbvh-$$-$BATS_TEST_NUMBER-$1"
	# Retry a full transmit queue for up to 20 s before dropping: on a
	# loaded machine the graph can be off the CPU for seconds.
	printf 'set fwd %s retry\nset burst tx delay 100 retry 200000\n' "$2" \
	    > "$T/$1.cmds"
	PREFIXES="$PREFIXES $prefix"
	dpdk-testpmd --no-huge -m 256 --no-pci -l 0,1 --file-prefix "$prefix" \
	    --vdev "net_virtio_user0,path=$SOCK,queues=1" -- \
	    --total-num-mbufs=16384 --no-flush-rx --cmdline-file="$T/$1.cmds" \
	    --auto-start --stats-period 1 > "$T/$1.log" 2>&1 &
	TP_PID=$!
	PIDS="$PIDS $TP_PID"
}

# start_source NAME SRC: until testpmd prints its first statistics (it does once
# it forwards), then swap the real source SRC in for the idle one.
start_source() {
	local i
	for i in $(seq 1200); do
		grep -q 'Rx-pps:' "$T/$1.log" && break
		sleep 0.1
	done
	snb-ctl "$G" swap src "$2"
}

# stop_testpmd NAME: SIGTERM, wait, and read its final forward statistics
# into TP_RX, TP_TX, TP_TXDROP.
# testpmd prints them before it closes its port, which can hang when the
# backend is already gone (the graph ended first): then it is killed.
stop_testpmd() {
	local i
	kill -TERM "$TP_PID"
	for i in $(seq 300); do kill -0 "$TP_PID" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$TP_PID" 2>/dev/null || true
	wait "$TP_PID" || true
	grep -q "Forward statistics for port 0" "$T/$1.log" ||
	    { echo "testpmd $1:"; cat "$T/$1.log"; return 1; }
	# The first "Forward statistics for port 0" block.
	TP_RX=$(awk '/Forward statistics for port 0/ {f=1} f && /RX-packets:/ {print $2; exit}' "$T/$1.log")
	TP_RXDROP=$(awk '/Forward statistics for port 0/ {f=1} f && /RX-packets:/ {print $4; exit}' "$T/$1.log")
	TP_TX=$(awk '/Forward statistics for port 0/ {f=1} f && /TX-packets:/ {print $2; exit}' "$T/$1.log")
	TP_TXDROP=$(awk '/Forward statistics for port 0/ {f=1} f && /TX-packets:/ {print $4; exit}' "$T/$1.log")
	echo "testpmd $1: rx $TP_RX (dropped $TP_RXDROP) tx $TP_TX (dropped $TP_TXDROP)"
}

# counter LABEL NAME: a counter of a stage of the running graph.
counter() {
	snb-top --json --once -i 0.01 "$G" 2>/dev/null | jq -r --arg l "$1" \
	    --arg c "$2" '.graphs[0].stages[] | select(.label == $l) | .counters[$c]'
}

# wait_counter LABEL NAME MIN: until the counter reaches MIN (a deadline of
# 120 s for a failure, not a timing check).
wait_counter() {
	local i v
	for i in $(seq 1200); do
		v=$(counter "$1" "$2")
		case "$v" in [0-9]*) [ "$v" -ge "$3" ] && return 0 ;; esac
		sleep 0.1
	done
	echo "$1 $2 is $v, waited for $3"; cat "$T/graph.err"
	snb-top --json --once -i 0.01 "$G" | jq -c '.graphs[0].stages[] | {l: .label, c: .counters}'
	return 1
}

stop_graph() {
	kill -INT "$RUN_PID"
	wait "$RUN_PID" || true
}

# million MODE SIZE: 1,000,000 packets through testpmd and back.
million() {
	local n=1000000
	graph "src: source --count 0 --hold | v: vhost $SOCK --hold | s: sink --check-seq"
	testpmd tp "$1"
	start_source tp "source --count $n --seq --size $2 --hold"
	wait_counter s packets $n || { stop_testpmd tp; return 1; }
	local tx=$(counter v tx-packets) rx=$(counter v rx-packets)
	local txb=$(counter v tx-bytes) rxb=$(counter v rx-bytes)
	local sb=$(counter s bytes) seqerr=$(counter s seq-errors)
	local drops=$(snb-top --json --once -i 0.01 "$G" | jq '[.graphs[0].stages[] | select(.label == "v") | .counters | to_entries[] | select(.key | startswith("drop-")) | .value] | add')
	stop_testpmd tp
	stop_graph
	echo "vhost: tx $tx ($txb bytes) rx $rx ($rxb bytes), drops $drops; sink $sb bytes, $seqerr seq errors"
	# Our side and testpmd's side, each from its own counters.
	[ "$tx" -eq $n ]
	[ "$TP_RX" -eq $n ]
	[ "$TP_RXDROP" -eq 0 ]
	[ "$TP_TX" -eq $n ]
	[ "$TP_TXDROP" -eq 0 ]
	[ "$rx" -eq $n ]
	[ "$drops" -eq 0 ]
	[ "$seqerr" -eq 0 ]
	[ "$rxb" -eq "$txb" ]
	[ "$sb" -eq "$txb" ]
}

# hostile SOCKET: connect as a frontend and misbehave, once per case; print
# "case NAME: closed" when snb-vhost hung up on us.  The last case sets up
# real queues in a memfd and then offers a descriptor pointing outside it.
hostile() {
	python3 - "$1" <<'EOF'
import os, socket, struct, sys
path = sys.argv[1]
def msg(req, payload=b'', flags=1, size=None):
    return struct.pack('<III', req, flags, len(payload) if size is None else size) + payload
def st(i, n): return struct.pack('<II', i, n)
def u64(v): return struct.pack('<Q', v)
def run(name, parts, fds=None):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.settimeout(20)
    try:
        for k, p in enumerate(parts):
            if fds and k in fds:
                socket.send_fds(s, [p], fds[k])
            else:
                s.sendall(p)
        if name == 'truncated':
            s.shutdown(socket.SHUT_WR)
        while s.recv(4096):
            pass
        print('case %s: closed' % name)
    except OSError as e:
        print('case %s: NOT CLOSED (%s)' % (name, e))
    s.close()
small = os.memfd_create('small')
os.ftruncate(small, 4096)
region = struct.pack('<II', 1, 0) + struct.pack('<QQQQ', 0, 1 << 20, 0x7f0000000000, 0)
run('version', [msg(1, flags=2)])
run('reply-flag', [msg(1, flags=5)])
run('ring-size', [msg(8, st(0, 3))])
run('queue-index', [msg(8, st(7, 256))])
run('regions', [msg(5, struct.pack('<II', 100, 0))])
run('features', [msg(2, u64(1 << 63))])
run('short-payload', [msg(9, b'\0' * 8)])
run('unknown', [msg(99)])
run('huge-payload', [msg(5, b'', size=1 << 20)])
run('truncated', [struct.pack('<II', 1, 1)])
run('memfd-too-small', [msg(5, region)], {0: [small]})
run('fd-count', [msg(5, region)], {0: [small, small]})
run('kick-no-fd', [msg(12, u64(1))])
# A session that is valid until the transmit queue's first descriptor.
UVA, N = 0x7f0000000000, 8
mem = os.memfd_create('guest')
os.ftruncate(mem, 65536)
kick = os.eventfd(0)
parts, fds = [], {}
parts.append(msg(2, u64((1 << 15) | (1 << 32))))
parts.append(msg(5, struct.pack('<II', 1, 0) + struct.pack('<QQQQ', 0, 65536, UVA, 0)))
fds[len(parts) - 1] = [mem]
for q, base in ((0, 0), (1, 0x400)):
    parts.append(msg(8, st(q, N)))
    parts.append(msg(10, st(q, 0)))
    parts.append(msg(9, struct.pack('<IIQQQQ', q, 0, UVA + base, UVA + base + 0x200, UVA + base + 0x100, 0)))
    parts.append(msg(12, u64(q)))
    fds[len(parts) - 1] = [kick]
# One descriptor at guest address 0xdead0000 (outside the 64 KiB), offered.
os.pwrite(mem, struct.pack('<QIHH', 0xdead0000, 100, 0, 0), 0x400)
os.pwrite(mem, struct.pack('<HHH', 0, 1, 0), 0x500)
os.eventfd_write(kick, 1)
run('bad-descriptor', parts, fds)
EOF
}

@test "vhost: 1,000,000 64-byte packets each way through testpmd (io), none lost" {
	million io 64
}

@test "vhost: 1,000,000 packets of 60-1514 bytes each way through testpmd (mac), none lost" {
	million mac 60-1514
}

@test "vhost: frames come back from testpmd byte for byte, then the graph ends" {
	# testpmd's virtio port takes frames up to 1518 bytes.
	mkpcap "$T/all.pcap" > /dev/null
	tcpdump -r "$T/all.pcap" -w "$T/in.pcap" 'len <= 1518' 2>/dev/null
	graph "src: source --count 0 --hold | vhost $SOCK --hold --linger 1000 | pcap-write $T/out.pcap"
	testpmd tp io
	start_source tp "pcap-read $T/in.pcap"
	wait "$RUN_PID"	# input EOF, then quiet for --linger: the graph ends
	stop_testpmd tp
	tcpdump -r "$T/in.pcap" -nn -t -xx 2>/dev/null | grep '^[[:space:]]*0x' > "$T/in.hex"
	tcpdump -r "$T/out.pcap" -nn -t -xx 2>/dev/null | grep '^[[:space:]]*0x' > "$T/out.hex"
	echo "$(grep -c '0x0000' "$T/in.hex") frames in, $(grep -c '0x0000' "$T/out.hex") out"
	[ -s "$T/in.hex" ]
	cmp "$T/in.hex" "$T/out.hex"
	# Every record, with its captured length (the hex misses empty ones).
	tshark -r "$T/in.pcap" -T fields -e frame.cap_len > "$T/in.len" 2>/dev/null
	tshark -r "$T/out.pcap" -T fields -e frame.cap_len > "$T/out.len" 2>/dev/null
	echo "$(wc -l < "$T/in.len") records in, $(wc -l < "$T/out.len") out"
	[ "$(wc -l < "$T/in.len")" -gt 1000 ]
	cmp "$T/in.len" "$T/out.len"
}

@test "vhost: testpmd killed and restarted mid-stream, the graph reconnects" {
	graph "source --rate 100k --seq | v: vhost $SOCK | s: sink --check-seq --allow-loss"
	testpmd tp1 io
	wait_counter s packets 20000
	kill -KILL "$TP_PID"
	wait "$TP_PID" || true
	wait_counter v disconnects 1
	d0=$(counter v drop-no-frontend)
	wait_counter v drop-no-frontend $((d0 + 1000))
	got=$(counter s packets)
	testpmd tp2 io
	wait_counter v connects 2
	wait_counter s packets $((got + 20000))
	seqerr=$(counter s seq-errors)
	restarts=$(snb-top --json --once -i 0.01 "$G" | jq '[.graphs[0].stages[].restarts] | add')
	stop_testpmd tp2
	stop_graph
	cat "$T/graph.err"
	[ "$seqerr" -eq 0 ]
	[ "$restarts" -eq 0 ]
	grep -q "frontend disconnected" "$T/graph.err"
	[ "$(grep -c "frontend connected" "$T/graph.err")" -eq 2 ]
}

@test "vhost: a hostile frontend is disconnected with a log line; snb-vhost keeps serving" {
	graph "source --rate 10k | v: vhost $SOCK | s: sink"
	hostile "$SOCK" > "$T/hostile.out"
	cat "$T/hostile.out"
	ncases=$(grep -c '^case' "$T/hostile.out")
	[ "$ncases" -ge 10 ]
	! grep -q 'NOT CLOSED' "$T/hostile.out" || false
	wait_counter v disconnects "$ncases"
	[ "$(counter v bad-messages)" -eq $((ncases - 1)) ]
	[ "$(counter v ring-errors)" -eq 1 ]
	# Still serving: a real frontend gets traffic both ways.
	testpmd tp io
	wait_counter v tx-packets 1000
	wait_counter s packets 1000
	stop_testpmd tp
	stop_graph
	cat "$T/graph.err"
	[ "$(grep -c "bad message: .*; disconnecting" "$T/graph.err")" -eq $((ncases - 1)) ]
	grep -q "malformed descriptor chain" "$T/graph.err"
}

# good_peer: testpmd connects after a bad frontend and traffic flows both
# ways through snb-vhost (the graph's source is swapped in, labelled src).
good_peer() {
	local tx0=$(counter v tx-packets) rx0=$(counter v rx-packets)
	testpmd tp io
	start_source tp "source --rate 10k"
	wait_counter v tx-packets $((tx0 + 1000))
	wait_counter v rx-packets $((rx0 + 1000))
	wait_counter s packets 1000
	stop_testpmd tp
}

# stage_restarts: how often snb-run restarted a stage of the graph.
stage_restarts() {
	snb-top --json --once -i 0.01 "$G" | jq '[.graphs[0].stages[].restarts] | add'
}

@test "vhost: kick, call and err fds that are not eventfds end the connection, not the stage" {
	graph "src: source --count 0 --hold | v: vhost $SOCK | s: sink"
	n=0
	# request (12 kick, 13 call, 14 err), queue, what we send instead
	for c in "12 1 memfd" "12 0 pipe" "13 0 pipe" "13 1 memfd" "14 0 socket"; do
		out=$(python3 "$BATS_TEST_DIRNAME/vhost-frontend.py" "$SOCK" fd-type $c 2>&1) || true
		echo "case $c: $out"
		[ "$(echo "$out" | tail -1)" = closed ]
		kill -0 "$RUN_PID"	# the graph still runs
		n=$((n + 1))
		wait_counter v disconnects $n
	done
	[ "$(counter v bad-messages)" -eq $n ]
	[ "$(stage_restarts)" -eq 0 ]
	good_peer
	stop_graph
	cat "$T/graph.err"
	[ "$(grep -c "the descriptor is not an eventfd; disconnecting" "$T/graph.err")" -eq $n ]
}

@test "vhost: a call eventfd whose counter is full does not block the stage" {
	graph "src: source --rate 10k | v: vhost $SOCK | s: sink"
	python3 "$BATS_TEST_DIRNAME/vhost-frontend.py" "$SOCK" call-full 3 > "$T/fe.out" 2>&1 &
	FE=$!
	PIDS="$PIDS $FE"
	# Frames reach the frontend; each burst's call finds the counter
	# full.  A blocking write there froze the stage: it never saw the
	# frontend go away.
	wait_counter v tx-packets 100
	wait "$FE"
	cat "$T/fe.out"
	grep -q '^ready' "$T/fe.out"
	wait_counter v disconnects 1
	[ "$(counter v calls-full)" -ge 2 ]
	[ "$(counter v bad-messages)" -eq 0 ]
	[ "$(stage_restarts)" -eq 0 ]
	snb-ctl "$G" swap src "source --count 0 --hold"
	good_peer
	stop_graph
}

@test "vhost: replacing the kick fd leaves the stage idle and listening" {
	graph "src: source --count 0 --hold | v: vhost $SOCK | s: sink"
	# Once: the old kick's registration, left behind, names an fd number
	# nobody reads, and epoll stays ready.
	python3 "$BATS_TEST_DIRNAME/vhost-frontend.py" "$SOCK" kick-replace 1 8 > "$T/fe.out" 2>&1 &
	FE=$!
	PIDS="$PIDS $FE"
	for i in $(seq 200); do grep -q '^ready' "$T/fe.out" && break; sleep 0.05; done
	grep -q '^ready' "$T/fe.out"
	wait_counter v connects 1
	sleep 0.5
	# The stage's user + system CPU over 2 s with the frontend idle: a
	# stale registration keeps epoll ready, a whole core.  A loose bound,
	# not a speed check.
	pid=$(snb-top --json --once -i 0.01 "$G" | jq '.graphs[0].stages[] | select(.label == "v") | .pid')
	t0=$(awk '{print $14 + $15}' /proc/$pid/stat)
	sleep 2
	t1=$(awk '{print $14 + $15}' /proc/$pid/stat)
	hz=$(getconf CLK_TCK)
	echo "snb-vhost (pid $pid): $((t1 - t0)) ticks of $((2 * hz)) in 2 s"
	[ $((t1 - t0)) -lt "$hz" ]	# < 50% of one core
	kill -0 "$FE"	# still connected through the measurement
	[ "$(counter v kicks)" -ge 1 ]
	wait "$FE" || true
	cat "$T/fe.out"
	wait_counter v disconnects 1
	# Five times: the new kick gets the old one's fd number, and a stale
	# registration read it (blocking) and froze the stage.
	python3 "$BATS_TEST_DIRNAME/vhost-frontend.py" "$SOCK" kick-replace 5 1 > "$T/fe.out" 2>&1
	cat "$T/fe.out"
	wait_counter v disconnects 2
	[ "$(counter v bad-messages)" -eq 0 ]
	good_peer
	stop_graph
}

@test "vhost: a frontend that shrinks its memory file loses its connection, the stage lives" {
	graph "src: source --rate 10k | v: vhost $SOCK | s: sink"
	# A memfd that can be sealed: snb-vhost sealed it against shrinking,
	# the frontend's ftruncate fails and frames keep flowing to it.
	python3 "$BATS_TEST_DIRNAME/vhost-frontend.py" "$SOCK" shrink sealable 2 > "$T/fe.out" 2>&1
	cat "$T/fe.out"
	grep -q '^shrink refused' "$T/fe.out"
	[ "$(tail -1 "$T/fe.out")" = open ]
	wait_counter v disconnects 1
	[ "$(counter v memory-faults)" -eq 0 ]
	# One that cannot be sealed (as DPDK makes them): cut to 0 bytes
	# under the stage's mapping.  It touched the lost pages (SIGBUS) and
	# died; now it drops that frontend, counted, and serves the next.
	tx0=$(counter v tx-packets)
	python3 "$BATS_TEST_DIRNAME/vhost-frontend.py" "$SOCK" shrink plain 20 > "$T/fe.out" 2>&1
	cat "$T/fe.out"
	grep -q '^shrunk' "$T/fe.out"
	[ "$(tail -1 "$T/fe.out")" = closed ]
	kill -0 "$RUN_PID"
	wait_counter v disconnects 2
	[ "$(counter v memory-faults)" -eq 1 ]
	[ "$(counter v tx-packets)" -gt "$tx0" ]
	[ "$(counter v bad-messages)" -eq 0 ]
	[ "$(counter v ring-errors)" -eq 0 ]
	[ "$(stage_restarts)" -eq 0 ]
	snb-ctl "$G" swap src "source --count 0 --hold"
	good_peer
	stop_graph
	grep -q "guest memory lost" "$T/graph.err"
}

# cpu_ticks: the snb-vhost stage's user + system time so far, in ticks.
cpu_ticks() {
	local pid=$(snb-top --json --once -i 0.01 "$G" | jq '.graphs[0].stages[] | select(.label == "v") | .pid')
	awk '{print $14 + $15}' /proc/$pid/stat
}

@test "vhost: a flood of long descriptor chains costs a bounded amount of work" {
	graph "src: source --rate 10k | v: vhost $SOCK | s: sink"
	hz=$(getconf CLK_TCK)
	# 32,768 chains of 32,768 empty descriptors in the receive queue,
	# with mergeable buffers: one frame walked all of them (about 6 s)
	# without finding room, and the next breath began again.  Now an
	# empty descriptor is malformed: dropped, counted, at once.
	c0=$(cpu_ticks)
	timeout 60 python3 "$BATS_TEST_DIRNAME/vhost-frontend.py" "$SOCK" flood 0 0 20 > "$T/fe.out" 2>&1
	c1=$(cpu_ticks)
	cat "$T/fe.out"
	[ "$(tail -1 "$T/fe.out")" = closed ]
	wait_counter v ring-errors 1
	# The stage's CPU time while the frontend was there (its setup
	# included): a loose bound, not a speed check.
	echo "snb-vhost: $((c1 - c0)) ticks ($hz a second) during the flood"
	[ $((c1 - c0)) -lt $((2 * hz)) ]
	# The transmit queue: chains of 32,768 one-byte descriptors, each
	# followed to its end before it was dropped as oversize, 64 a
	# breath.  A frame of more than 256 descriptors is malformed.
	timeout 60 python3 "$BATS_TEST_DIRNAME/vhost-frontend.py" "$SOCK" flood 1 1 20 > "$T/fe.out" 2>&1
	cat "$T/fe.out"
	[ "$(tail -1 "$T/fe.out")" = closed ]
	wait_counter v ring-errors 2
	[ "$(counter v drop-oversize)" -eq 0 ]
	[ "$(counter v bad-messages)" -eq 0 ]
	[ "$(stage_restarts)" -eq 0 ]
	snb-ctl "$G" swap src "source --count 0 --hold"
	good_peer
	stop_graph
	cat "$T/graph.err"
	grep -q "receive queue: malformed descriptor chain: an empty descriptor" "$T/graph.err"
	grep -q "transmit queue: malformed descriptor chain (head 0): a frame of more than 256 descriptors" "$T/graph.err"
}

@test "vhost: a request trickled in a byte at a time does not stall the data path" {
	graph "src: source --rate 2k | v: vhost $SOCK | s: sink"
	python3 "$BATS_TEST_DIRNAME/vhost-frontend.py" "$SOCK" trickle 13 > "$T/fe.out" 2>&1 &
	FE=$!
	PIDS="$PIDS $FE"
	for i in $(seq 200); do grep -q '^ready' "$T/fe.out" && break; sleep 0.05; done
	wait_counter v tx-packets 100
	# Frames delivered over 4 s while the request is incomplete: a read
	# that waited for the rest of it held the stage for a second at a
	# time.  A loose bound (half the source's rate), not a speed check.
	t0=$(counter v tx-packets)
	sleep 4
	t1=$(counter v tx-packets)
	echo "delivered $((t1 - t0)) in 4 s at 2,000/s"
	[ $((t1 - t0)) -ge 4000 ]
	wait "$FE"
	cat "$T/fe.out"
	# The request, whole after 11.4 s, was answered on the same connection.
	grep -q '^replies [1-9]' "$T/fe.out"
	[ "$(tail -1 "$T/fe.out")" = open ]
	wait_counter v disconnects 1
	[ "$(counter v bad-messages)" -eq 0 ]
	[ "$(stage_restarts)" -eq 0 ]
	stop_graph
}

@test "vhost: a Linux guest (QEMU) pings the host through snb-vhost and a tap" {
	local t
	for t in qemu-system-x86_64 cpio; do
		command -v "$t" >/dev/null && continue
		[ "${CI:-}" != true ] || { echo "CI: $t is missing"; return 1; }
		skip "$t is not installed"
	done
	# The guest's virtio-net (its kernel's driver) <-> snb-vhost <-> a tap
	# in a namespace with 10.77.0.1, where the host's kernel answers.
	ip netns add "$NS"
	ip netns exec "$NS" snb-run -n "$G" "v: vhost $SOCK | nic tap:vu0 ; nic tap:vu0 | @v" \
	    2> "$T/graph.err" &
	RUN_PID=$!
	PIDS="$PIDS $RUN_PID"
	for t in $(seq 200); do
		[ -S "$SOCK" ] && ip -n "$NS" link show vu0 >/dev/null 2>&1 && break
		sleep 0.05
	done
	ip -n "$NS" addr add 10.77.0.1/24 dev vu0
	cat > "$T/guest.sh" <<'EOF'
for m in $(cat /modules/order); do insmod /modules/$m.ko 2>/dev/null; done
sleep 1
for d in /sys/class/net/*; do
	[ "$(cat $d/address)" = 52:54:00:00:00:07 ] && ifc=${d##*/}
done
echo "guest interface: $ifc"
ip addr add 10.77.0.2/24 dev "$ifc"
ip link set "$ifc" up
rc=0
ping -c 5 -W 10 10.77.0.1 || rc=1
ping -c 3 -W 10 -s 1400 10.77.0.1 || rc=1
ping -c 3 -W 10 -s 6000 10.77.0.1 || rc=1
echo "guest rx $(cat /sys/class/net/$ifc/statistics/rx_packets) tx $(cat /sys/class/net/$ifc/statistics/tx_packets)"
exit $rc
EOF
	# QEMU shares the guest's memory (memfd) and connects to our socket;
	# vectors=0: QEMU 7.2 under TCG crashes otherwise (test-hosts notes).
	SNB_VM_QEMU_ARGS="-object memory-backend-memfd,id=mem,size=512M,share=on -numa node,memdev=mem -chardev socket,id=vu,path=$SOCK -netdev vhost-user,id=n7,chardev=vu -device virtio-net-pci,netdev=n7,addr=7,romfile=,mac=52:54:00:00:00:07,vectors=0" \
	    run "$BATS_TEST_DIRNAME/vm/run-guest" -n "$NS" -t 600 "$T/guest.sh"
	echo "$output"
	rx=$(counter v rx-packets)
	tx=$(counter v tx-packets)
	stop_graph
	cat "$T/graph.err"
	echo "snb-vhost: rx $rx tx $tx"
	[ "$status" -eq 0 ]
	assert_output_has "5 packets received"
	# 11 echo requests (the 6000-byte ones in 5 fragments) and ARP.
	[ "$rx" -ge 23 ]
	[ "$tx" -ge 23 ]
}

@test "vhost: a missing socket directory or a socket in use is a clear error" {
	run snb-run "source --count 1 | vhost /nonexistent-$$/v.sock"
	echo "$output"
	[ "$status" -ne 0 ]
	assert_output_has "socket directory '/nonexistent-$$': No such file or directory"
	graph "v: vhost $SOCK | sink"
	run snb-run -n "$G-2" "vhost $SOCK | sink"
	echo "$output"
	[ "$status" -ne 0 ]
	assert_output_has "another process is listening there"
	stop_graph
	[ ! -e "$SOCK" ]
}

@test "vhost: --help and --describe" {
	run snb-vhost --help
	[ "$status" -eq 0 ]
	assert_output_has "SOCKET"
	run snb-vhost --describe
	[ "$status" -eq 0 ]
	assert_output_has "device"
}
