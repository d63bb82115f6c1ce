#!/usr/bin/env bats
# Two snb-esp sites back to back over veths, the Linux kernel's ping
# through them: host 1 (2001:db8:a::1) | site A | core | site B | host 2
# (2001:db8:b::1).  The hosts are the tunnel's endpoints (no L2TP or GRE
# inside: plain IPv6 in a frame), their neighbours static, so every frame
# a site gets from its host is for the SA or counted as dropped.  The
# core carries ESP only; a wrong key on one side stops the pings (and is
# counted), the right one, reloaded, brings them back.
load helpers
load netns

S=espnet-S-$$ H1=espnet-H1-$$ H2=espnet-H2-$$
K1=0x00112233445566778899aabbccddeeff01020304
K2=0x0f0e0d0c0b0a09080706050403020100a0b0c0d0
A=2001:db8:a::1
B=2001:db8:b::1

# host NS DEV ADDR PEERNET PEER PEERDEV PEERNS: a host's end, its peer
# on-link with a static neighbour entry (the peer's own MAC: the sites
# keep the Ethernet addresses of what they carry)
host() {
	ip -n "$1" link set lo up
	# the frames snb copies carry the checksums the kernel wrote
	ip netns exec "$1" ethtool -K "$2" tx off tso off gso off > /dev/null
	ip -n "$1" addr add "$3/64" dev "$2" nodad
	ip -n "$1" -6 route add "$4" dev "$2"
	mac=$(ip -n "$7" -o link show "$6" | sed 's/.*ether \([^ ]*\).*/\1/')
	ip -n "$1" -6 neigh replace "$5" lladdr "$mac" dev "$2" nud permanent
}

setup() {
	export SNB_RUN_DIR="/dev/shm/snb-bats-$$-$BATS_TEST_NUMBER"
	T="$BATS_TEST_TMPDIR"
	PIDS=
	[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces)"
	mkns "$S"
	ip netns add "$H1"
	ip netns add "$H2"
	veth s1 "$S" h1 "$H1"
	veth s2 "$S" h2 "$H2"
	veth c1 "$S" c2 "$S"
	host "$H1" h1 $A 2001:db8:b::/64 $B h2 "$H2"
	host "$H2" h2 $B 2001:db8:a::/64 $A h1 "$H1"
}

teardown() {
	netns_teardown "$S" "$H1" "$H2"
}

# site NAME: the SA file of site a (host 1's) or b, inbound key $2
site() {
	local me=$A peer=$B out=0x1001 in=0x2001
	[ "$1" = b ] && { me=$B peer=$A out=0x2001 in=0x1001; }
	printf 'sa { direction out; spi %s; key %s; local-address %s; remote-address %s; }\n' \
	    $out $K1 $me $peer
	printf 'sa { direction in; spi %s; key %s; local-address %s; remote-address %s; }\n' \
	    $in "${2:-$K1}" $me $peer
}

ctr() {		# ctr STAGE NAME: a live counter of graph espnet
	snb-top -j espnet | jq ".graphs[0].stages[] | select(.label==\"$1\") |
	    .counters[\"$2\"]"
}

@test "esp over veths: the kernel pings through two sites, the core sees only ESP; a wrong key stops it, counted" {
	site a > "$T/a.conf"
	site b > "$T/b.conf"
	# the core by AF_PACKET: tcpdump on c2 sees what AF_XDP would hide
	ip netns exec "$S" snb-run -n espnet "
	    nic s1 | [clear] a: esp $T/a.conf [core] | nic afpacket:c1
	    nic afpacket:c1 | [core] @a [clear] | nic s1
	    nic s2 | [clear] b: esp $T/b.conf [core] | nic afpacket:c2
	    nic afpacket:c2 | [core] @b [clear] | nic s2" 2> "$T/err" &
	PIDS=$!
	wait_for test -S "$SNB_RUN_DIR/espnet/b.ctl"
	ip netns exec "$S" tcpdump -nn -U --immediate-mode -w "$T/core.pcap" -i c2 \
	    2>/dev/null &
	tcpd=$!
	sleep 1
	run ip netns exec "$H1" ping -6 -c 3 -i 0.2 -W 5 $B
	echo "$output"; cat "$T/err"
	[ "$status" -eq 0 ]
	run ip netns exec "$H2" ping -6 -c 3 -i 0.2 -W 5 $A
	[ "$status" -eq 0 ]
	sleep 0.5
	kill -INT "$tcpd"; wait "$tcpd" || true
	# on the core: ESP of both SAs, no ICMPv6 in clear
	tshark -r "$T/core.pcap" -Y esp -T fields -e esp.spi > "$T/spis" \
	    2>/dev/null
	grep -q 0x00001001 "$T/spis"
	grep -q 0x00002001 "$T/spis"
	[ "$(tshark -r "$T/core.pcap" -Y icmpv6 2>/dev/null | wc -l)" -eq 0 ]
	[ "$(ctr a encrypted)" -ge 6 ] && [ "$(ctr b decrypted)" -ge 6 ]
	# site B's inbound key is wrong: its pings die there, counted
	site b $K2 > "$T/b.conf"
	run ip netns exec "$S" snb-ctl espnet config b reload
	echo "$output"
	[ "$status" -eq 0 ]
	icv=$(ctr b drop-icv)
	run ip netns exec "$H1" ping -6 -c 2 -i 0.2 -W 1 $B
	[ "$status" -ne 0 ]
	[ "$(ctr b drop-icv)" -ge $((icv + 2)) ]
	# the right key again
	site b > "$T/b.conf"
	run ip netns exec "$S" snb-ctl espnet config b reload
	[ "$status" -eq 0 ]
	run ip netns exec "$H1" ping -6 -c 2 -i 0.2 -W 5 $B
	[ "$status" -eq 0 ]
}
