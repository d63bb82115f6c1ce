#!/usr/bin/env bats
# ECMP across hosts with BIRD 2, the control plane punted to the kernel
# (issue 16, part 3).  One topology for the file, built by
# examples/ecmp.sh's functions in namespaces named after this run: a
# router running BIRD with a multipath route in its kernel (L4 hash), three
# hosts each with an snb graph that owns its interface, serves 192.0.2.1
# with snb-echo and punts ARP/BGP/BFD/ICMP for the host's own address to a
# tap where the host's kernel and BIRD live, and a client.
#
# The peers that judge: BIRD (sessions, BFD, the route it installs), the
# router's kernel (its multipath route, and "ip route get" for the host it
# picks for each flow), the client's kernel (it takes only echo replies
# with right checksums, on the socket that asked), tcpdump on the tap and
# on the wire.  Needs root, bird2, python3, tcpdump, ethtool and jq.
load helpers
ECMP_LIB=1 . "$BATS_TEST_DIRNAME/../examples/ecmp.sh"

FLOWS=300
PORT0=30000

setup_file() {
	export ECMP_SKIP=
	[ "$(id -u)" -eq 0 ] || { ECMP_SKIP="needs root"; return 0; }
	for t in bird birdc tcpdump ethtool jq /usr/bin/python3; do
		command -v "$t" > /dev/null && continue
		[ "${CI:-}" != true ] || { echo "CI: $t is missing"; return 1; }
		ECMP_SKIP="needs $t"
		return 0
	done
	export SNB_RUN_DIR="/dev/shm/snb-bats-ecmp-$$"
	# BFD every 200 ms, down after 5 missed: 1 s (100 ms x 3 does on an
	# idle machine; this one is shared, and a process starved for 0.3 s
	# is not a dead graph).
	export ECMP_BFD_MS=200 ECMP_BFD_MULT=5
	ecmp_setup "snbecmp$$" "$BATS_FILE_TMPDIR" 3
	export ECMP_ID ECMP_DIR ECMP_HOSTS ECMP_R ECMP_C
	for n in 1 2 3; do ecmp_start $n; done
	ecmp_bird router "$ECMP_R"
	for n in 1 2 3; do ecmp_bird h$n "$ECMP_ID-h$n"; done
	ecmp_wait_route "1 2 3" 60 || { diag; return 1; }
}

teardown_file() {
	local left
	ecmp_teardown
	# The graphs ran and stopped without a sanitizer's report.
	! grep -E 'Sanitizer|runtime error' "$ECMP_DIR"/g*.err 2>/dev/null ||
	    return 1
	if [ -d "${SNB_RUN_DIR:-}" ]; then
		left=$(ls -A "$SNB_RUN_DIR")
		rm -rf "$SNB_RUN_DIR"
		[ -z "$left" ] || { echo "left in run dir: $left"; return 1; }
	fi
}

setup() {
	[ -z "$ECMP_SKIP" ] || skip "$ECMP_SKIP"
	T="$BATS_TEST_TMPDIR"
}

teardown() {
	[ -z "$ECMP_SKIP" ] || return 0
	# Stop what a failing test left running; show what the peers said.
	[ -z "${TCPDUMPS:-}" ] || { kill $TCPDUMPS; wait $TCPDUMPS; } 2>/dev/null || true
	if [ -n "${V6:-}" ]; then
		kill -INT $V6 2>/dev/null
		for i in $(seq 50); do ecmp_alive $V6 || break; sleep 0.1; done
		kill -KILL $V6 2>/dev/null
	fi
	if [ -n "${V6NS:-}" ]; then
		ip netns del "$ECMP_ID-6p" 2>/dev/null
		ip netns del "$ECMP_ID-6h" 2>/dev/null
	fi
	[ -n "${BATS_TEST_COMPLETED:-}" ] || diag
	return 0
}

diag() {
	echo "== router: $(ip -n "$ECMP_R" route show "$ECMP_ANYCAST" | tr '\n' ' ')"
	birdc -s "$ECMP_DIR/router.ctl" show protocols 2>&1
	birdc -s "$ECMP_DIR/router.ctl" show bfd sessions 2>&1
	cat "$ECMP_DIR"/g*.err 2>/dev/null
	# The sessions' history, on every side.
	grep -H -E 'BFD|Error|Cease|Received|state' "$ECMP_DIR"/*.log 2>/dev/null |
	    grep -v 'Bad packet' | tail -40
}

# A stage's counter in host N's graph: N LABEL NAME.
counter() {
	snb-top --json --once -i 0.01 "$ECMP_ID-h$1" 2>/dev/null | jq -r \
	    --arg l "$2" --arg c "$3" '.graphs[0].stages[] |
	    select(.label == $l) | .counters[$c]'
}

# tcpdump NS IF FILE in the background, once it listens.
capture() {
	ip netns exec "$1" timeout 60 tcpdump -i "$2" -nn -U --immediate-mode \
	    -B 8192 -w "$3" 2> "$3.err" 3>&- &
	TCPDUMPS="${TCPDUMPS:-} $!"
	for i in $(seq 100); do
		grep -q "listening on" "$3.err" && return 0
		sleep 0.05
	done
	cat "$3.err"
	return 1
}

# Stop the captures; fail if one lost frames.
stop_captures() {
	local f
	kill $TCPDUMPS
	wait $TCPDUMPS 2>/dev/null || true
	TCPDUMPS=
	for f in "$@"; do
		grep "dropped by kernel" "$f.err"
		grep -q "^0 packets dropped by kernel" "$f.err"
	done
}

# The tap's capture FILE holds BGP and BFD from both ends of host 2's link.
control_seen() {
	local e
	for e in "tcp port 179 and src host 10.0.2.1" "tcp port 179 and src host 10.0.2.2" \
	    "udp port 3784 and src host 10.0.2.1" "udp port 3784 and src host 10.0.2.2"; do
		[ "$(matching "$1" "$e")" -gt 0 ] || return 1
	done
}

# Frames of a capture that match an expression: FILE EXPR.
matching() {
	tcpdump -r "$1" -nn "$2" 2>/dev/null | wc -l
}

# The flows, checked: every one answered, and each host answered exactly
# the flows the router's kernel sends it.  HOSTS: the hosts the route must
# be to meanwhile.  Prints the per-host counts.
flows_as_predicted() {
	local r got answered predicted
	r=$(ecmp_round $FLOWS $PORT0 "$1")
	got=${r%%;*} r=${r#*;}
	answered=${r%%;*} predicted=${r#*;}
	echo "answered $got of $FLOWS; per host $answered; predicted $predicted" >&2
	[ "$got" -eq $FLOWS ]
	[ "$answered" = "$predicted" ]
	echo "$answered"
}

@test "each host's BIRD announces the anycast address over its graph's punted path: BFD up, one multipath route in the router's kernel" {
	ecmp_wait_route "1 2 3" 60
	birdc -s "$ECMP_DIR/router.ctl" show protocols > "$T/p"
	cat "$T/p"
	[ "$(grep -cE '^h[123] +BGP .* up .*Established' "$T/p")" -eq 3 ]
	birdc -s "$ECMP_DIR/router.ctl" show bfd sessions > "$T/b"
	cat "$T/b"
	[ "$(grep -cE '^10\.0\.[123]\.2 +r[123] +Up ' "$T/b")" -eq 3 ]
	for n in 1 2 3; do
		# The hosts' side too: their BIRD speaks through the tap.
		birdc -s "$ECMP_DIR/h$n.ctl" show protocols uplink |
		    grep -q 'Established'
		# ARP crossed the graph both ways: the router knows the
		# wire's MAC (the tap's too), the host's kernel the router's.
		mac=$(ip -n "$ECMP_ID-h$n" -br link show wire | awk '{ print $3 }')
		ip -n "$ECMP_R" neigh show 10.0.$n.2 | grep -q "lladdr $mac"
		rmac=$(ip -n "$ECMP_R" -br link show r$n | awk '{ print $3 }')
		ip -n "$ECMP_ID-h$n" neigh show 10.0.$n.1 dev cp |
		    grep -q "lladdr $rmac"
		# The punt filter passed the control traffic.
		[ "$(counter $n punt matched)" -gt 0 ]
	done
}

@test "control traffic crosses the tap to the kernel, data stays in snb: tcpdump on the tap and on the wire" {
	# Host 2's wire, seen from the router's end of it (r2).
	capture "$ECMP_ID-h2" cp "$T/cp.pcap"
	capture "$ECMP_R" r2 "$T/wire.pcap"
	before=$(counter 2 e echo-udp)
	got=$(ecmp_flows $FLOWS $PORT0)
	[ "$got" -eq $FLOWS ]
	# BGP keepalives come once a second (examples/ecmp.sh), BFD several
	# times a second: wait (10 s at most) for both, both ways, on the
	# tap, not for a fixed time that may hold no keepalive.
	for i in $(seq 100); do
		control_seen "$T/cp.pcap" && break
		sleep 0.1
	done
	stop_captures "$T/cp.pcap" "$T/wire.pcap"
	n=$(($(counter 2 e echo-udp) - before))
	echo "host 2 answered $n"
	for e in "udp dst port 7" "udp src port 7" "tcp port 179" "udp port 3784"; do
		echo "wire: $(matching "$T/wire.pcap" "$e") $e; tap: $(matching "$T/cp.pcap" "$e")"
	done
	[ "$n" -gt 0 ]
	# The wire carried host 2's share of requests and the replies...
	[ "$(matching "$T/wire.pcap" "udp dst port 7 and dst host $ECMP_ANYCAST")" -eq "$n" ]
	[ "$(matching "$T/wire.pcap" "udp src port 7 and src host $ECMP_ANYCAST")" -eq "$n" ]
	# ... none of which reached the kernel, which had BGP and BFD both
	# ways (3784: single-hop BFD, RFC 5881).
	[ "$(matching "$T/cp.pcap" "udp port 7")" -eq 0 ]
	for e in "tcp port 179 and src host 10.0.2.1" "tcp port 179 and src host 10.0.2.2" \
	    "udp port 3784 and src host 10.0.2.1" "udp port 3784 and src host 10.0.2.2"; do
		c=$(matching "$T/cp.pcap" "$e")
		echo "tap: $c of $e"
		[ "$c" -gt 0 ]
	done
}

@test "UDP flows from the client spread over the hosts, each answered by the host the router's kernel picks for it" {
	run flows_as_predicted "1 2 3"
	echo "$output"
	[ "$status" -eq 0 ]
	set -- ${lines[-1]}
	# Spread: every host has a share (P(a host gets none) ~ 1e-53).
	[ "$1" -gt 0 ]
	[ "$2" -gt 0 ]
	[ "$3" -gt 0 ]
	[ $(($1 + $2 + $3)) -eq $FLOWS ]
}

@test "a host's graph stops: BFD takes its route down and its flows go to the others; started again, they come back to it" {
	case "$SNB_BUILD" in
	*asan*) skip "25 s under ASan; its stages run under ASan in the other tests" ;;
	esac
	run flows_as_predicted "1 2 3"
	echo "$output"
	[ "$status" -eq 0 ]
	first=${lines[-1]}
	echo "3 hosts: $first"
	snb-ctl "$ECMP_ID-h1" stop
	t0=$(date +%s%N)
	p=$(cat "$ECMP_DIR/g1.pid")
	for i in $(seq 100); do ecmp_alive $p || break; sleep 0.1; done
	! ecmp_alive $p || false
	for i in $(seq 200); do
		ecmp_nexthops | grep -q 'via 10.0.1.2$' || break
		sleep 0.05
	done
	echo "withdrawn $((($(date +%s%N) - t0) / 1000000)) ms after the graph stopped"
	! ecmp_nexthops | grep -q 'via 10.0.1.2$' || false
	# It was BFD, not the 3 s hold timer, that ended the session.
	birdc -s "$ECMP_DIR/router.ctl" show protocols h1 | grep 'BFD session down'
	run flows_as_predicted "2 3"
	echo "$output"
	[ "$status" -eq 0 ]
	set -- ${lines[-1]}
	[ "$1" -eq 0 ]
	[ $(($2 + $3)) -eq $FLOWS ]
	# Started again: the route comes back, and the same flows go to the
	# same hosts as before.
	t0=$(date +%s%N)
	ecmp_start 1
	ecmp_wait_route "1 2 3" 60
	echo "back $((($(date +%s%N) - t0) / 1000000)) ms after the start"
	run flows_as_predicted "1 2 3"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "$first" ]
}

# waits until host N's route is gone from the router (10 s at most).
withdrawn() {
	for i in $(seq 200); do
		ecmp_nexthops | grep -q "via 10.0.$1.2\$" || return 0
		sleep 0.05
	done
	return 1
}

@test "a host's BIRD killed: its route is withdrawn while its graph runs on; BIRD started again brings it back" {
	case "$SNB_BUILD" in
	*asan*) skip "BIRD and BFD timers; the graphs run under ASan in the other tests" ;;
	esac
	p=$(cat "$ECMP_DIR/h2.pid")
	kill -KILL "$p"
	withdrawn 2
	birdc -s "$ECMP_DIR/router.ctl" show protocols h2 | grep -E 'BFD session down|Received: |Connect|Active'
	# The graph did not notice: it still runs, and serves the others'
	# flows' control traffic as before.
	ecmp_alive "$(cat "$ECMP_DIR/g2.pid")"
	run flows_as_predicted "1 3"
	echo "$output"
	[ "$status" -eq 0 ]
	rm -f "$ECMP_DIR/h2.ctl"
	ecmp_bird h2 "$ECMP_ID-h2"
	ecmp_wait_route "1 2 3" 60
	run flows_as_predicted "1 2 3"
	[ "$status" -eq 0 ]
}

@test "a host's tap removed: its graph ends saying so, the route is withdrawn; tap and graph back, so is the route" {
	case "$SNB_BUILD" in
	*asan*) skip "BIRD and BFD timers; the graphs run under ASan in the other tests" ;;
	esac
	p=$(cat "$ECMP_DIR/g3.pid")
	ip -n "$ECMP_ID-h3" link del cp
	for i in $(seq 100); do ecmp_alive $p || break; sleep 0.1; done
	! ecmp_alive $p || false
	grep -q "snb-nic: cp: tap removed" "$ECMP_DIR/g3.err"
	withdrawn 3
	run flows_as_predicted "1 2"
	echo "$output"
	[ "$status" -eq 0 ]
	ecmp_tap 3
	ecmp_start 3
	ecmp_wait_route "1 2 3" 60
	run flows_as_predicted "1 2 3"
	[ "$status" -eq 0 ]
}

@test "IPv6 too: neighbour discovery and ping for the host's address cross the punt path; ping and UDP echo for the service's address are answered in snb" {
	P=$ECMP_ID-6p H=$ECMP_ID-6h
	V6NS=1
	ip netns add $P
	ip netns add $H
	ip -n $P link set lo up
	ip -n $H link set lo up
	ip link add p9 netns $P type veth peer name wire netns $H
	ip netns exec $P ethtool -K p9 tx off tso off gso off > /dev/null
	ip -n $P addr add 10.0.9.1/24 dev p9
	ip -n $P addr add 2001:db8:9::1/64 dev p9 nodad
	ip -n $P link set p9 up
	ip -n $P route add 192.0.2.1/32 via 10.0.9.2
	ip -n $P route add 2001:db8:ffff::1/128 via 2001:db8:9::2
	# The host as in examples/ecmp.sh, with an IPv6 address as well.
	ip netns exec $H sysctl -qw net.ipv6.conf.wire.disable_ipv6=1 \
	    net.ipv4.conf.wire.rp_filter=1
	ip -n $H link set wire arp off up
	ip -n $H tuntap add mode tap name cp
	ip -n $H link set cp address "$(ip -n $H -br link show wire | awk '{ print $3 }')"
	ip -n $H addr add 10.0.9.2/24 dev cp
	ip -n $H addr add 2001:db8:9::2/64 dev cp nodad
	ip -n $H link set cp up
	g="nic afpacket:wire | punt: filter $(ecmp_control 10.0.9.2 2001:db8:9::2) | nic tap:cp
	   nic tap:cp | nic afpacket:wire
	   @punt [reject] | e: echo 192.0.2.1 2001:db8:ffff::1 | nic afpacket:wire"
	ip netns exec $H snb-run -n "$ECMP_ID-h6" "$g" < /dev/null > /dev/null \
	    2> "$T/g.err" 3>&- &
	V6=$!
	for i in $(seq 100); do
		[ "$(counter 6 e echo-icmp 2>/dev/null)" = 0 ] && break
		sleep 0.1
	done
	# The host's kernel: ND and ping through the tap.
	ip netns exec $P ping -6 -n -c 3 -i 0.2 -W 5 2001:db8:9::2
	ip netns exec $P ping -n -c 3 -i 0.2 -W 5 10.0.9.2
	ip -n $P -6 neigh show 2001:db8:9::2 | grep -q lladdr
	# The service: answered by snb-echo, which the kernel's ping and UDP
	# stack accept (checksums, ids, payloads).
	ip netns exec $P ping -6 -n -c 3 -i 0.2 -W 5 2001:db8:ffff::1
	ip netns exec $P ping -n -c 3 -i 0.2 -W 5 192.0.2.1
	ip netns exec $P /usr/bin/python3 -c '
import socket
for fam, a in ((socket.AF_INET6, "2001:db8:ffff::1"), (socket.AF_INET, "192.0.2.1")):
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.settimeout(5)
    s.sendto(b"echo me", (a, 7))
    data, peer = s.recvfrom(100)
    assert data == b"echo me" and peer[0] == a and peer[1] == 7, (data, peer)
'
	[ "$(counter 6 e echo-icmp)" -eq 6 ]
	[ "$(counter 6 e echo-udp)" -eq 2 ]
	[ "$(counter 6 punt matched)" -gt 0 ]
	# Stopped, the graph leaves cleanly (a sanitizer's report would say).
	snb-ctl "$ECMP_ID-h6" stop
	wait $V6
	V6=
	! grep -E 'Sanitizer|runtime error' "$T/g.err" || false
}
