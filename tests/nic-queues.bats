#!/usr/bin/env bats
# snb-nic DEVICE/qN: several processes on one interface, each on its own
# queue (AF_XDP) or fanout member (AF_PACKET), between network namespaces.
#
# A peer sends many UDP flows whose payloads carry a sequence number
# (tests/tools/flows.py); every queue's process writes what it receives to
# a pcap file; tshark reads the files back and flows.py checks that every
# frame arrived exactly once across the queues, that each flow stayed on
# one queue, and the per-queue rx-packets counters against the files.
# Needs root, tshark, jq and python3.
load helpers
load netns

FLOWS="$BATS_TEST_DIRNAME/tools/flows.py"

setup() {
	[ "$(id -u)" -eq 0 ] || skip "needs root"
	command -v tshark > /dev/null || skip "needs tshark"
	export SNB_RUN_DIR="/dev/shm/snb-bats-q$$-$BATS_TEST_NUMBER"
	T="$BATS_TEST_TMPDIR"
	S="snbqS-$$-$BATS_TEST_NUMBER"	# where snb runs
	P="snbqP-$$-$BATS_TEST_NUMBER"	# the peer
	PIDS=""
}

teardown() {
	netns_teardown "$S" "$P"
}

# start NS GRAPHNAME GRAPH: run snb-run in NS in the background.  Rings
# of 4096 slots hold a whole test's frames: a pcap-write that falls behind
# (the sanitizer build) must not make the nic drop (it would count it).
start() {
	ip netns exec "$1" snb-run --slots 4096 -n "$2" "$3" 2> "$T/$2.err" &
	PIDS="$PIDS $!"
	LASTPID=$!
}

# sent NS IF: frames the kernel sent on IF (the peer's own count).
sent() {
	ip netns exec "$1" cat "/sys/class/net/$2/statistics/tx_packets"
}

# counter GRAPH LABEL NAME: a counter of a running stage ("null" if none).
counter() {
	snb-top --json --once -i 0.01 "$1" 2>/dev/null | jq -r --arg l "$2" \
	    --arg c "$3" '.graphs[0].stages[] | select(.label == $l) | .counters[$c]'
}

wait_open() {	# GRAPH LABEL: until the nic has made its counters
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

# received N LABEL...: wait (up to 10 s) until graphs q0.. (their nic
# stage LABEL) have received N frames in all; print each one's count.
received() {
	local n=$1 lab=$2 i q sum counts
	shift 2
	for i in $(seq 100); do
		sum=0 counts=""
		for q in "$@"; do
			c=$(counter "$q" "$lab$q" rx-packets)
			counts="$counts $q=$c"
			sum=$((sum + c))
		done
		[ "$sum" -ge "$n" ] && break
		sleep 0.1
	done
	echo "received:$counts (sum $sum of $n)"
}

# stop_graphs: SIGINT every graph and wait: pcap-write closes its file.
stop_graphs() {
	local p
	for p in $PIDS; do kill -INT "$p"; done
	for p in $PIDS; do timeout 10 tail --pid="$p" -f /dev/null; done
	PIDS=""
}

fields() {	# PCAP: what flows.py check reads
	tshark -r "$1" -T fields -e ip.src -e udp.srcport -e udp.payload \
	    2>/dev/null > "$1.txt"
	echo "$1.txt"
}

@test "bad queue names are refused, naming the spec" {
	run snb-nic afpacket:lo/q
	[ "$status" -eq 2 ]
	assert_output_has "afpacket:lo/q: bad queue 'q'"
	run snb-nic xdp:lo/q70000
	[ "$status" -eq 2 ]
	assert_output_has "queue number '70000' is too large"
	run snb-nic --queue 1 xdp:lo/q1
	[ "$status" -eq 2 ]
	assert_output_has "give the queue once"
	run snb-nic afpacket:lo/q1 --fanout 3
	[ "$status" -eq 2 ]
	assert_output_has "/qN already chooses the fanout group"
	run snb-nic tap:t0/q1
	[ "$status" -eq 2 ]
	run snb-nic afpacket:nosuch0/q0
	[ "$status" -eq 1 ]
	assert_output_has "no such interface 'nosuch0'"
}

@test "afpacket:IF/qN: three independent processes share the frames by flow, exactly once" {
	local n=3000 q files="" sum=0
	mkns "$S" "$P"
	veth vA "$S" vB "$P"
	for q in q0 q1 q2; do
		start "$S" "$q" "nic afpacket:vA/$q | pcap-write $T/$q.pcap"
	done
	for q in q0 q1 q2; do wait_open "$q" "nic-afpacket_vA_$q"; done
	ip netns exec "$P" "$FLOWS" send vB "$n" 256
	[ "$(sent "$P" vB)" -eq "$n" ]
	received "$n" nic-afpacket_vA_ q0 q1 q2
	for q in q0 q1 q2; do
		c[${q#q}]=$(counter "$q" "nic-afpacket_vA_$q" rx-packets)
		[ "$(counter "$q" "nic-afpacket_vA_$q" drop-ring-full)" -eq 0 ]
		[ "$(counter "$q" "nic-afpacket_vA_$q" drop-kernel)" -eq 0 ]
	done
	stop_graphs
	for q in q0 q1 q2; do files="$files $(fields "$T/$q.pcap")"; done
	run "$FLOWS" check "$n" $files
	echo "$output"
	[ "$status" -eq 0 ]
	# Each queue's counter is what its file holds, and every queue had
	# flows (256 flows over 3 members: one left empty is vanishingly
	# unlikely unless the group did not form).
	for q in 0 1 2; do
		echo "$output" | grep -q "q$q.pcap.txt ${c[$q]} frames"
		[ "${c[$q]}" -gt 0 ]
		sum=$((sum + c[q]))
	done
	[ "$sum" -eq "$n" ]
}

@test "afpacket:IF/qN: two queues in one graph, a third from another graph" {
	local n=2000 files="" i a b c
	mkns "$S" "$P"
	veth vA "$S" vB "$P"
	start "$S" g1 "nic afpacket:vA/q0 | pcap-write $T/a.pcap ; nic afpacket:vA/q1 | pcap-write $T/b.pcap"
	start "$S" g2 "nic afpacket:vA/q7 | pcap-write $T/c.pcap"
	wait_open g1 nic-afpacket_vA_q0
	wait_open g1 nic-afpacket_vA_q1
	wait_open g2 nic-afpacket_vA_q7
	ip netns exec "$P" "$FLOWS" send vB "$n" 200
	[ "$(sent "$P" vB)" -eq "$n" ]
	for i in $(seq 100); do
		a=$(counter g1 nic-afpacket_vA_q0 rx-packets)
		b=$(counter g1 nic-afpacket_vA_q1 rx-packets)
		c=$(counter g2 nic-afpacket_vA_q7 rx-packets)
		[ $((a + b + c)) -ge "$n" ] && break
		sleep 0.1
	done
	echo "counters: q0=$a q1=$b q7=$c"
	[ $((a + b + c)) -eq "$n" ]
	stop_graphs
	for f in a b c; do files="$files $(fields "$T/$f.pcap")"; done
	run "$FLOWS" check "$n" $files
	echo "$output"
	[ "$status" -eq 0 ]
	! echo "$output" | grep -q " 0 frames" || false
	echo "$output" | grep -q "a.pcap.txt $a frames"
	echo "$output" | grep -q "b.pcap.txt $b frames"
	echo "$output" | grep -q "c.pcap.txt $c frames"
}

@test "xdp:IF/qN: one AF_XDP socket per queue of a 4-queue veth" {
	local n=3000 q files="" sum=0 busy=0
	mkns "$S" "$P"
	ip link add vA numtxqueues 4 numrxqueues 4 netns "$S" type veth \
	    peer name vB numtxqueues 4 numrxqueues 4 netns "$P"
	ip -n "$S" link set vA up
	ip -n "$P" link set vB up
	# All four at once: they race to attach the XDP program, and the
	# losers retry (xdp.c), which once left them reading stale frames.
	for q in q0 q1 q2 q3; do
		start "$S" "$q" "nic xdp:vA/$q | pcap-write $T/$q.pcap"
	done
	for q in q0 q1 q2 q3; do wait_open "$q" "nic-xdp_vA_$q"; done
	ip netns exec "$P" "$FLOWS" send vB "$n" 256
	[ "$(sent "$P" vB)" -eq "$n" ]
	received "$n" nic-xdp_vA_ q0 q1 q2 q3
	for q in q0 q1 q2 q3; do
		c[${q#q}]=$(counter "$q" "nic-xdp_vA_$q" rx-packets)
		[ "$(counter "$q" "nic-xdp_vA_$q" drop-ring-full)" -eq 0 ]
		[ "$(counter "$q" "nic-xdp_vA_$q" drop-kernel)" -eq 0 ]
	done
	stop_graphs
	for q in q0 q1 q2 q3; do files="$files $(fields "$T/$q.pcap")"; done
	for q in 0 1 2 3; do
		[ "$(wc -l < "$T/q$q.pcap.txt")" -eq "${c[$q]}" ]
		[ "${c[$q]}" -eq 0 ] || busy=$((busy + 1))
		sum=$((sum + c[q]))
	done
	[ "$sum" -eq "$n" ]
	# The peer's transmit queue (a hash of the flow) is the queue the
	# frame arrives on: the flows spread.
	[ "$busy" -ge 2 ]
	# Every frame once, its contents its own, each flow on one queue.
	run "$FLOWS" check "$n" $files
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "xdp:IF/qN: a process that waited for its queue (as on a restart) gets every frame once" {
	local n=1000 old
	mkns "$S" "$P"
	veth vA "$S" vB "$P"
	start "$S" old "nic xdp:vA/q0 | sink"
	old=$LASTPID
	wait_open old nic-xdp_vA_q0
	# The queue is taken: the second socket's bind fails (EBUSY) and
	# it tries again until the first has gone.
	start "$S" q0 "nic xdp:vA/q0 | pcap-write $T/q0.pcap"
	sleep 0.5
	case "$(counter q0 nic-xdp_vA_q0 rx-packets)" in
	[0-9]*) echo "the second socket opened while the first held q0"; return 1 ;;
	esac
	kill -INT "$old"
	timeout 10 tail --pid="$old" -f /dev/null
	PIDS=${PIDS/ $old/}
	wait_open q0 nic-xdp_vA_q0
	ip netns exec "$P" "$FLOWS" send vB "$n" 64
	[ "$(sent "$P" vB)" -eq "$n" ]
	received "$n" nic-xdp_vA_ q0
	[ "$(counter q0 nic-xdp_vA_q0 rx-packets)" -eq "$n" ]
	stop_graphs
	run "$FLOWS" check "$n" "$(fields "$T/q0.pcap")"
	echo "$output"
	[ "$status" -eq 0 ]
}
