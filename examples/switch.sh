#!/bin/sh
# examples/switch.sh [BUILD]: a three-port switch made of snb-bridge.
#
# Builds four network namespaces of its own (names carry this script's
# pid): S runs the switch, hosts A and B sit on plain ports, host C on
# VLAN 10 (C's own little snb graph tags and untags, since the kernel here
# may lack 802.1Q interfaces).  Pings every pair, shows the bridge's
# counters, and removes everything on exit, Ctrl-C included.  Needs root,
# iproute2, ethtool and ping; touches nothing outside its namespaces.
set -eu
B=$(cd "${1:-build}" && pwd)
export PATH="$B/bin:$PATH"
[ "$(id -u)" -eq 0 ] || { echo "switch.sh: needs root (network namespaces)" >&2; exit 1; }
for t in ip ethtool ping snb-run snb-top; do
	command -v "$t" > /dev/null || { echo "switch.sh: needs $t" >&2; exit 1; }
done

id=$$
S=snbsw-S-$id A=snbsw-A-$id Bh=snbsw-B-$id C=snbsw-C-$id
export SNB_RUN_DIR=/dev/shm/snb-switch-$id
PIDS=

cleanup() {
	set +e
	for p in $PIDS; do kill -INT "$p" 2>/dev/null; done
	for p in $PIDS; do wait "$p" 2>/dev/null; done
	for n in $S $A $Bh $C; do ip netns del "$n" 2>/dev/null; done
	rm -rf "$SNB_RUN_DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for n in $S $A $Bh $C; do
	ip netns add "$n"
	ip netns exec "$n" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
	    net.ipv6.conf.default.disable_ipv6=1
	ip -n "$n" link set lo up
done
# link NAME_S NS NAME_NS: a veth pair from the switch to a host.
link() {
	ip link add "$1" netns "$S" type veth peer name "$3" netns "$2"
	ip -n "$S" link set "$1" up
	ip -n "$2" link set "$3" up
}
link vA $A eA
link vB $Bh eB
link vC $C eC
ip link add cA netns $C type veth peer name cK netns $C
ip -n $C link set cA up
ip -n $C link set cK up
# Hosts send finished frames, as on a real wire.
ip netns exec $A ethtool -K eA tx off tso off gso off > /dev/null
ip netns exec $Bh ethtool -K eB tx off tso off gso off > /dev/null
ip netns exec $C ethtool -K cK tx off tso off gso off > /dev/null
ip -n $A addr add 10.96.0.1/24 dev eA
ip -n $Bh addr add 10.96.0.2/24 dev eB
ip -n $C addr add 10.96.0.3/24 dev cK

echo "== host C: its wire eC carries VLAN 10; cK (10.96.0.3) is the host"
ip netns exec $C snb-run -n host-c \
    'nic afpacket:eC | vlan untag 10 | nic cA ; nic cA | vlan tag 10 | nic afpacket:eC' &
PIDS="$PIDS $!"

GRAPH='br: bridge --age 60
nic vA | [a] @br [a] | nic vA
nic vB | [b] @br [b] | nic vB
nic afpacket:vC | vlan untag 10 | [c] @br [c] | vlan tag 10 | nic afpacket:vC'
echo "== switch: snb-run -n switch '$GRAPH'"
ip netns exec $S snb-run -n switch "$GRAPH" &
PIDS="$PIDS $!"

# Wait until the bridge publishes its counters (all stages are up then).
i=0
until snb-top --once --json -i 0.01 switch 2>/dev/null | grep -q fdb-entries; do
	i=$((i + 1))
	[ $i -lt 100 ] || { echo "switch.sh: the graph did not start" >&2; exit 1; }
	sleep 0.1
done
sleep 0.5

fail=0
for pair in "$A 10.96.0.2" "$A 10.96.0.3" "$Bh 10.96.0.3"; do
	set -- $pair
	echo "== ping from ${1%-$id} to $2"
	if out=$(ip netns exec "$1" ping -n -c 3 -i 0.2 -W 2 "$2"); then
		echo "$out" | tail -2
	else
		echo "$out" | tail -2; fail=1
	fi
done
echo "== the bridge's counters (snb-top --once switch)"
snb-top --once -i 0.1 switch | awk '$2 == "bridge"' | tr ' ' '\n' | grep = |
    paste - - - -
[ $fail -eq 0 ] && echo "== all pings answered" || { echo "== some pings failed"; exit 1; }
