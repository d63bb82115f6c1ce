#!/bin/sh
# examples/ecmp.sh [BUILD [HOSTS]]: one anycast service on several hosts,
# spread by a router's ECMP, with the control plane punted to the kernel.
#
#                        .- r1 -- wire [snb graph] cp (tap) : BIRD, host 1
#   client -- c0 | rc  router (BIRD, ECMP) - r2 -- wire [snb graph] cp ... 2
#                        '- r3 -- wire [snb graph] cp ...           host 3
#
# Each host's snb graph owns its interface "wire" (AF_PACKET; the kernel
# is kept off it) and serves 192.0.2.1 with snb-echo.  What is meant for
# the host itself (ARP for its address, BGP, BFD, ping) is punted by a
# filter to the tap "cp", where the host's kernel and its BIRD live, and
# what they send goes back out of "wire":
#
#   nic afpacket:wire | punt: filter CONTROL | nic tap:cp
#   nic tap:cp | nic afpacket:wire
#   @punt [reject] | echo 192.0.2.1 | nic afpacket:wire
#
# Each host's BIRD announces 192.0.2.1/32 to the router's BIRD over BGP
# with BFD; the router puts one multipath route for it in its kernel,
# hashing flows on addresses and ports (fib_multipath_hash_policy=1).  BFD
# runs through the graph, so the announcement lives as long as the graph:
# stop the graph and BFD goes down in about 0.3 s, the route is withdrawn
# and its flows go to the other hosts; start it again and it comes back.
#
# The script builds its own namespaces (named after its pid) and removes
# them, the BIRDs and the graphs on exit, Ctrl-C included.  Needs root,
# iproute2, ethtool, python3 and bird2.  Sourced with ECMP_LIB=1 it only
# defines the functions (tests/ecmp.bats uses them).

ECMP_ANYCAST=192.0.2.1
# The punted traffic: ARP about the host's IPv4 address, IPv6 neighbour
# discovery (ICMPv6 133-137: router and neighbour solicitations and
# advertisements, redirects; never behind an extension header), and BGP,
# BFD (single hop, echo, multi-hop) and ping to the host's addresses.
# Everything else is data.
ecmp_control() {	# IPV4_ADDRESS [IPV6_ADDRESS]
	to="tcp port 179 or udp port 3784 or udp port 3785 or udp port 4784"
	e="arp host $1 or (dst host $1 and ($to or icmp))"
	[ -z "${2:-}" ] || e="$e or (icmp6 and ip6[40] >= 133 and"\
" ip6[40] <= 137) or (dst host $2 and ($to or icmp6))"
	echo "$e"
}

# BFD: a packet every ECMP_BFD_MS (100) ms each way, a session down after
# ECMP_BFD_MULT (3) are missed.
ecmp_bfd() {
	echo "min rx interval ${ECMP_BFD_MS:-100} ms;" \
	    "min tx interval ${ECMP_BFD_MS:-100} ms;" \
	    "idle tx interval 300 ms; multiplier ${ECMP_BFD_MULT:-3};"
}

# ecmp_graph N: host N's graph.
ecmp_graph() {
	echo "nic afpacket:wire | punt: filter $(ecmp_control 10.0.$1.2) | nic tap:cp
nic tap:cp | nic afpacket:wire
@punt [reject] | e: echo $ECMP_ANYCAST | nic afpacket:wire"
}

# ecmp_setup ID DIR HOSTS: namespaces ID-r (router), ID-c (client),
# ID-h1..ID-hHOSTS, links, addresses, BIRD configurations in DIR.
ecmp_setup() {
	ECMP_ID=$1 ECMP_DIR=$2 ECMP_HOSTS=$3
	ECMP_R=$1-r ECMP_C=$1-c
	for ns in $ECMP_R $ECMP_C $(ecmp_hosts); do
		ip netns add "$ns" || return 1
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
		    net.ipv6.conf.default.disable_ipv6=1 || return 1
		ip -n "$ns" link set lo up
	done
	ip netns exec $ECMP_R sysctl -qw net.ipv4.ip_forward=1 \
	    net.ipv4.fib_multipath_hash_policy=1 || return 1
	ip link add c0 netns $ECMP_C type veth peer name rc netns $ECMP_R ||
	    return 1
	ecmp_up $ECMP_C c0 10.9.0.2/24
	ecmp_up $ECMP_R rc 10.9.0.1/24
	ip -n $ECMP_C route add default via 10.9.0.1
	cat > "$ECMP_DIR/router.conf" <<-EOF
	log "$ECMP_DIR/router.log" all;
	debug protocols { states };
	router id 10.9.0.1;
	protocol device { }
	protocol kernel { ipv4 { import none; export all; }; merge paths on; }
	protocol bfd { interface "r*" { $(ecmp_bfd) }; }
	template bgp host { local as 65000; direct; bfd on;
	    hold time 3; keepalive time 1; connect delay time 1;
	    connect retry time 1; error wait time 1, 2;
	    ipv4 { import where net = $ECMP_ANYCAST/32; export none; }; }
	EOF
	for n in $(seq "$ECMP_HOSTS"); do
		h=$ECMP_ID-h$n
		ip link add r$n netns $ECMP_R type veth peer name wire \
		    netns "$h" || return 1
		ecmp_up $ECMP_R r$n 10.0.$n.1/24
		# The graph owns "wire": no address, and the kernel ignores
		# what comes in on it (no ARP, no IPv6, strict reverse path:
		# its peers are reached through the tap).
		ip -n "$h" link set wire arp off up
		ip netns exec "$h" sysctl -qw net.ipv4.conf.wire.rp_filter=1
		ecmp_tap "$n" || return 1
		echo "protocol bgp h$n from host { neighbor 10.0.$n.2 as 65001; }" \
		    >> "$ECMP_DIR/router.conf"
		cat > "$ECMP_DIR/h$n.conf" <<-EOF
		log "$ECMP_DIR/h$n.log" all;
		debug protocols { states };
		router id 10.0.$n.2;
		protocol device { }
		protocol static anycast { ipv4; route $ECMP_ANYCAST/32 blackhole; }
		protocol bfd { interface "cp" { $(ecmp_bfd) }; }
		protocol bgp uplink { local 10.0.$n.2 as 65001;
		    neighbor 10.0.$n.1 as 65000; direct; bfd on;
		    hold time 3; keepalive time 1; connect delay time 1;
		    connect retry time 1; error wait time 1, 2;
		    ipv4 { import none; export where proto = "anycast"; }; }
		EOF
	done
}

# ecmp_tap N: host N's kernel side, a persistent tap with the wire's MAC,
# so that it outlives a graph and keeps its address.
ecmp_tap() {
	ip -n "$ECMP_ID-h$1" tuntap add mode tap name cp || return 1
	ip -n "$ECMP_ID-h$1" link set cp address \
	    "$(ip -n "$ECMP_ID-h$1" -br link show wire | awk '{ print $3 }')"
	ip -n "$ECMP_ID-h$1" addr add 10.0.$1.2/24 dev cp
	ip -n "$ECMP_ID-h$1" link set cp up
}

ecmp_hosts() {
	for n in $(seq "$ECMP_HOSTS"); do echo "$ECMP_ID-h$n"; done
}

# ecmp_up NS IF ADDR: up, with an address, sending whole frames (no
# checksum offload: the frames cross a user-space graph, as on a wire).
ecmp_up() {
	ip -n "$1" addr add "$3" dev "$2"
	ip -n "$1" link set "$2" up
	ip netns exec "$1" ethtool -K "$2" tx off tso off gso off > /dev/null
}

# ecmp_bird NAME NS: start BIRD with DIR/NAME.conf, its own control socket
# and pid file.
ecmp_bird() {
	ip netns exec "$2" bird -c "$ECMP_DIR/$1.conf" -s "$ECMP_DIR/$1.ctl" \
	    -P "$ECMP_DIR/$1.pid" < /dev/null > /dev/null 3>&-
}

# ecmp_start N: host N's graph, in the background (its pid in
# $ECMP_DIR/gN.pid; what it says in gN.err).
ecmp_start() {
	ip netns exec "$ECMP_ID-h$1" snb-run -n "$ECMP_ID-h$1" \
	    "$(ecmp_graph "$1")" < /dev/null > /dev/null \
	    2>> "$ECMP_DIR/g$1.err" 3>&- &
	echo $! > "$ECMP_DIR/g$1.pid"
}

# ecmp_nexthops: the router's next hops for the anycast address, one a line.
ecmp_nexthops() {
	ip -n "$ECMP_R" route show "$ECMP_ANYCAST" | grep -o 'via [0-9.]*' |
	    sort
}

# ecmp_wait_route "N..." [SECONDS]: until the router's next hops are
# exactly hosts N... (in order), 20 s at most by default.
ecmp_wait_route() {
	want=$(for n in $1; do echo "via 10.0.$n.2"; done)
	i=0
	while [ "$(ecmp_nexthops)" != "$want" ]; do
		i=$((i + 1))
		[ $i -le $((${2:-20} * 20)) ] || return 1
		sleep 0.05
	done
}

# ecmp_sessions: the router's BGP sessions that are up, and since when (to
# the second: BIRD shows the milliseconds of one time a little apart).
ecmp_sessions() {
	birdc -s "$ECMP_DIR/router.ctl" show protocols |
	    awk '/^h[0-9]/ && $4 == "up" { print $1, "up since", substr($5, 1, 8) }'
}

# ecmp_flows FLOWS PORT0: one UDP echo from each of FLOWS source ports
# PORT0.. of the client; prints how many were answered.
ecmp_flows() {
	ip netns exec "$ECMP_C" /usr/bin/python3 - "$ECMP_ANYCAST" "$1" "$2" <<-'EOF'
	import select, socket, sys, time
	dst, n, p0 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
	socks = []
	for i in range(n):
	    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
	    s.bind(("0.0.0.0", p0 + i))
	    s.sendto(b"flow %d" % (p0 + i), (dst, 7))
	    socks.append(s)
	answered, end = set(), time.time() + 2
	while len(answered) < n and time.time() < end:
	    for s in select.select(socks, [], [], 0.1)[0]:
	        data, peer = s.recvfrom(100)
	        port = s.getsockname()[1]
	        if peer == (dst, 7) and data == b"flow %d" % port:
	            answered.add(port)
	print(len(answered))
	EOF
}

# ecmp_counts: every host's UDP echoes, "n1 n2 ...", from one look at all
# the graphs' counters.
ecmp_counts() {
	snb-top --json --once -i 0.01 2>/dev/null | jq -r --arg id "$ECMP_ID" \
	    --argjson h "$ECMP_HOSTS" '[.graphs[] | select(.alive) |
	    {key: .name, value: ([.stages[] | select(.label == "e") |
	    .counters["echo-udp"]] | add)}] | from_entries as $c |
	    [range(1; $h + 1) | $c["\($id)-h\(.)"] // 0 | tostring] |
	    join(" ") + " "'
}

# ecmp_predict FLOWS PORT0: how many of the flows the router's kernel
# sends to each host, "n1 n2 ...", as "ip route get" says (the same lookup
# and L4 hash as for forwarded packets).
ecmp_predict() {
	for p in $(seq "$2" $(($2 + $1 - 1))); do
		echo "route get $ECMP_ANYCAST from 10.9.0.2 iif rc ipproto udp sport $p dport 7"
	done | ip -n "$ECMP_R" -batch - | grep -o 'via 10\.0\.[0-9]*\.2' |
	    awk -v h="$ECMP_HOSTS" '{ split($2, a, "."); n[a[3]]++ }
	    END { for (i = 1; i <= h; i++) printf "%d ", n[i]; print "" }'
}

# ecmp_round FLOWS PORT0 "N...": the flows, once the route is to hosts
# N...; prints "answered;per-host counts;predicted per-host counts", e.g.
# "300;108 97 95 ;108 97 95 ".  A round during which a BGP session or the
# route changed (a BFD session lost to a starved process, on a loaded
# machine) proves nothing and is done again, twice at most.
ecmp_round() {
	for try in 1 2 3; do
		ecmp_wait_route "$3" 60 || return 1
		s0=$(ecmp_sessions; ecmp_nexthops)
		before=$(ecmp_counts)
		predicted=$(ecmp_predict "$1" "$2")
		got=$(ecmp_flows "$1" "$2")
		after=$(ecmp_counts)
		[ "$s0" = "$(ecmp_sessions; ecmp_nexthops)" ] && break
		echo "ecmp: the route changed during the flows; again" >&2
		ecmp_sessions >&2
		[ $try -lt 3 ] || return 1
	done
	echo "$got;$(echo $before $after | awk '{ h = NF / 2
	    for (i = 1; i <= h; i++) printf "%d ", $(h + i) - $i }');$predicted"
}

# ecmp_alive PID: the process runs (a zombie whose parent has not reaped
# it, as an orphan's may stay where init does not, is gone).
ecmp_alive() {
	[ -r "/proc/$1/stat" ] && ! sed 's/.*) //' "/proc/$1/stat" 2>/dev/null |
	    grep -q '^Z'
}

# ecmp_teardown: graphs (SIGINT), BIRDs (SIGTERM), SIGKILL for what is
# still there after 5 s; then the namespaces.
ecmp_teardown() {
	pids=
	for f in "$ECMP_DIR"/*.pid; do
		[ -f "$f" ] || continue
		p=$(cat "$f")
		case $f in */g*.pid) kill -INT "$p" ;; *) kill -TERM "$p" ;; esac 2>/dev/null
		pids="$pids $p"
		rm -f "$f"
	done
	for p in $pids; do
		for i in $(seq 50); do ecmp_alive "$p" || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null
	done
	for ns in $ECMP_R $ECMP_C $(ecmp_hosts); do
		ip netns del "$ns" 2>/dev/null
	done
	return 0
}

[ "${ECMP_LIB:-0}" = 1 ] && return 0

set -eu
B=$(cd "${1:-build}" && pwd)
export PATH="$B/bin:$PATH"
HOSTS=${2:-3}
[ "$(id -u)" -eq 0 ] || { echo "ecmp.sh: needs root (network namespaces)" >&2; exit 1; }
for t in ip ethtool bird birdc jq /usr/bin/python3 snb-run snb-top; do
	command -v "$t" > /dev/null || { echo "ecmp.sh: needs $t" >&2; exit 1; }
done
id=ecmp$$
DIR=$(mktemp -d /tmp/snb-ecmp.XXXXXX)
export SNB_RUN_DIR=/dev/shm/snb-ecmp-$$
cleanup() {
	set +e
	ecmp_teardown
	rm -rf "$DIR" "$SNB_RUN_DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ecmp_setup $id "$DIR" "$HOSTS"
echo "== host 1's graph (each host runs the same, with its own address):"
ecmp_graph 1 | sed 's/^/   /'
for n in $(seq "$HOSTS"); do ecmp_start "$n"; done
ecmp_bird router $ECMP_R
for n in $(seq "$HOSTS"); do ecmp_bird h$n "$id-h$n"; done
ecmp_wait_route "$(seq -s ' ' "$HOSTS")" 30 || { echo "ecmp.sh: BGP did not come up" >&2;
	birdc -s "$DIR/router.ctl" show protocols >&2; exit 1; }
echo "== the router's route to the anycast address:"
ip -n $ECMP_R route show $ECMP_ANYCAST | sed 's/^/   /'

FLOWS=300
hosts=$(seq -s ' ' "$HOSTS")
round() {	# HOSTS: the hosts the route must have
	r=$(ecmp_round $FLOWS 20000 "$1") || { echo "ecmp.sh: the route is not to hosts $1" >&2; exit 1; }
	got=${r%%;*} r=${r#*;}
	LAST=${r%%;*}
	echo "   $got of $FLOWS flows answered; per host: $LAST"
	echo "   the router's FIB (ip route get) sends them: ${r#*;}"
	[ "$got" -eq $FLOWS ] || { echo "ecmp.sh: flows lost" >&2; exit 1; }
}
echo "== $FLOWS UDP flows from the client (source ports 20000..$((20000 + FLOWS - 1))), answered per host:"
round "$hosts"
first=$LAST
echo "== stop host 1's graph (snb-ctl $id-h1 stop)"
snb-ctl "$id-h1" stop > /dev/null
t0=$(date +%s%N)
wait "$(cat "$DIR/g1.pid")" 2>/dev/null || true
i=0
while ecmp_nexthops | grep -q 'via 10.0.1.2$'; do
	i=$((i + 1))
	[ $i -le 200 ] || { echo "ecmp.sh: not withdrawn" >&2; exit 1; }
	sleep 0.05
done
echo "   route withdrawn $((($(date +%s%N) - t0) / 1000000)) ms after the graph stopped (BFD: ${ECMP_BFD_MULT:-3} x ${ECMP_BFD_MS:-100} ms):"
ip -n $ECMP_R route show $ECMP_ANYCAST | sed 's/^/   /'
birdc -s "$DIR/router.ctl" show protocols h1 | sed -n '/^h1/s/^/   /p'
echo "== the same flows again"
round "${hosts#1 }"
echo "== start host 1's graph again"
t0=$(date +%s%N)
ecmp_start 1
ecmp_wait_route "$hosts" 30 || { echo "ecmp.sh: not back" >&2; exit 1; }
echo "   route back after $((($(date +%s%N) - t0) / 1000000)) ms"
echo "== the same flows again"
round "$hosts"
[ "$LAST" = "$first" ] || { echo "ecmp.sh: the flows did not go back where they were" >&2; exit 1; }
echo "== every flow answered; host 1's flows moved to the others and came back to it"
