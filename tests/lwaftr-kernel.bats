#!/usr/bin/env bats
# snb-lwaftr's ARP and neighbour discovery against the Linux kernel as the
# peer: a namespace K holds the AFTR's next hops (4.5.6.7 on k4,
# 8:9:a:b:4:3:2:1 on k6), a namespace A the AFTR on the other ends of the
# two veths.  The kernel resolves the AFTR's addresses (our ARP reply and
# NA), answers our ARP request and NS, and then receives what the AFTR
# sends to the next hop it learnt.
load helpers
load netns

A=lwndp-kA-$$ K=lwndp-kK-$$

setup() {
	export SNB_RUN_DIR="/dev/shm/snb-bats-$$-$BATS_TEST_NUMBER"
	T="$BATS_TEST_TMPDIR"
	PIDS=
	mkns "$A"
	ip netns add "$K"
	ip -n "$K" link set lo up
	veth a4 "$A" k4 "$K"
	veth a6 "$A" k6 "$K"
	ip -n "$K" addr add 8:9:a:b:4:3:2:1/64 dev k6 nodad
	ip -n "$K" addr add 4.5.6.7/32 dev k4
	ip -n "$K" route add 10.10.10.10/32 dev k4
	ip -n "$K" route add 178.79.150.0/24 via 10.10.10.10 dev k4
}

teardown() {
	netns_teardown "$A" "$K"
}

@test "lwaftr kernel peer: ARP and NDP both ways, then traffic to the learnt next hop" {
	# Next hops by IP: tests/lwaftr's configuration for that.
	ip netns exec "$A" snb-run -n lwk "lw: lwaftr --counters-out $T/ctr \
	    $BATS_TEST_DIRNAME/lwaftr/lwaftr-nh-ip.conf
	    nic a6 | [v6] @lw [v6] | nic a6
	    nic a4 | [v4] @lw [v4] | nic a4" 2> "$T/err" &
	PIDS=$!
	sleep 0.5
	# The kernel resolves our addresses: our ARP reply and our NA (with
	# the Router flag: 'router' in its table), then pings us.
	ip netns exec "$K" ping -c1 -W5 10.10.10.10
	ip netns exec "$K" ping -6 -c1 -W5 8:9:a:b:c:d:e:f
	ip -n "$K" neigh show 10.10.10.10 | grep -q 'lladdr 12:12:12:12:12:12'
	# The kernel may have taken our MAC from our NS's source option; then
	# it confirms it with a unicast NS (after 5 s of DELAY), and our NA
	# marks us a router.
	wait_for eval "ip -n $K -6 neigh show 8:9:a:b:c:d:e:f |
	    grep -q 'lladdr 22:22:22:22:22:22 router'"
	# UDP to a softwire (178.79.150.233 port 80) goes to its B4 through
	# the v6 next hop: the kernel's k6, whose MAC the AFTR learnt from the
	# kernel's answer to its NS (sent again every 3 s until answered).
	mac=$(cat /sys/class/net/k6/address 2>/dev/null ||
	    ip -n "$K" -o link show k6 | sed 's/.*ether \([^ ]*\).*/\1/')
	ip netns exec "$K" tcpdump -nn -e -c1 -w "$T/k6.pcap" -i k6 \
	    'ip6 proto 4' 2>/dev/null &
	tcpd=$!
	sleep 1
	send() {
		ip netns exec "$K" python3 -c 'import socket
socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"hello",
    ("178.79.150.233", 80))'
		kill -0 "$tcpd" 2>/dev/null && return 1
		return 0
	}
	wait_for send
	wait "$tcpd"
	tcpdump -r "$T/k6.pcap" -nn -e 2>/dev/null | tee "$T/k6.txt"
	grep -q "22:22:22:22:22:22 > $mac, ethertype IPv6.*8:9:a:b:c:d:e:f > 127:2:3:4:5:6:7:128: 4.5.6.7.[0-9]* > 178.79.150.233.80: UDP" "$T/k6.txt"
	kill -INT "$PIDS"
	wait "$PIDS" || true	# SIGINT: snb-run exits 130
	PIDS=
	cat "$T/ctr"
	# Our ARP request and NS were answered by the kernel, and ours went out.
	grep -q '^in-arp-reply-packets [1-9]' "$T/ctr"
	grep -q '^in-ndp-na-packets [1-9]' "$T/ctr"
	grep -q '^out-arp-reply-packets [1-9]' "$T/ctr"
	grep -q '^out-ndp-na-packets [1-9]' "$T/ctr"
	grep -q '^out-ipv6-packets [1-9]' "$T/ctr"
}
