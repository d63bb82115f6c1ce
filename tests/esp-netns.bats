#!/usr/bin/env bats
# Two snb-esp sites back to back over veths, the Linux kernel's ping
# through them.
#  1. host 1 (2001:db8:a::1) | site A | core | site B | host 2
#     (2001:db8:b::1): the hosts are the tunnel's endpoints (plain IPv6 in
#     a frame), their neighbours static, so every frame a site gets from
#     its host is for the SA or counted as dropped.  The core carries ESP
#     only; a wrong key on one side stops the pings (and is counted), the
#     right one, reloaded, brings them back.
#  2. The L2 VPN's shape (VPWS): customer | nic | l2tp | esp | nd | nic |
#     core | nic | nd | esp | l2tp | nic | customer, IPv4 pings between
#     the customers; the core carries ESP only, no L2TP in clear.
load helpers
load netns

S=espnet-S-$$ H1=espnet-H1-$$ H2=espnet-H2-$$
K1=0x00112233445566778899aabbccddeeff01020304
K2=0x0f0e0d0c0b0a09080706050403020100a0b0c0d0
K3=0x5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a
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
	NSS=
	[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces)"
}

# The first test's: namespace S holds both sites, H1 and H2 the hosts.
hosts_setup() {
	NSS="$S $H1 $H2"
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
	[ -z "${TCPD:-}" ] || kill "$TCPD" 2>/dev/null || true
	netns_teardown $NSS
}

# site NAME: the SA file of site a (host 1's) or b, inbound key $2; a key
# per direction (SA 0x1001 a to b K1, 0x2001 b to a K2): one key in both
# would repeat GCM's nonces, and snb-esp refuses it
site() {
	local me=$A peer=$B out=0x1001 in=0x2001 ok=$K1 ik=$K2
	[ "$1" = b ] && { me=$B peer=$A out=0x2001 in=0x1001 ok=$K2 ik=$K1; }
	printf 'sa { direction out; spi %s; key %s; local-address %s; remote-address %s; }\n' \
	    $out $ok $me $peer
	printf 'sa { direction in; spi %s; key %s; local-address %s; remote-address %s; }\n' \
	    $in "${2:-$ik}" $me $peer
}

ctr() {		# ctr STAGE NAME: a live counter of graph espnet
	snb-top -j espnet | jq ".graphs[0].stages[] | select(.label==\"$1\") |
	    .counters[\"$2\"]"
}

@test "esp over veths: the kernel pings through two sites, the core sees only ESP; a wrong key stops it, counted" {
	hosts_setup
	site a > "$T/a.conf"
	site b > "$T/b.conf"
	# the core by AF_PACKET: tcpdump on c2 sees what AF_XDP would hide
	ip netns exec "$S" snb-run -n espnet "
	    nic s1 | [clear] a: esp $T/a.conf [core] | nic afpacket:c1
	    nic afpacket:c1 | [core] @a [clear] | nic s1
	    nic s2 | [clear] b: esp $T/b.conf [core] | nic afpacket:c2
	    nic afpacket:c2 | [core] @b [clear] | nic s2" 2> "$T/err" 3>&- &
	PIDS=$!
	wait_for test -S "$SNB_RUN_DIR/espnet/b.ctl"
	ip netns exec "$S" tcpdump -nn -U --immediate-mode -w "$T/core.pcap" -i c2 \
	    2>/dev/null 3>&- &
	TCPD=$!
	sleep 1
	run ip netns exec "$H1" ping -6 -c 3 -i 0.2 -W 5 $B
	echo "$output"; cat "$T/err"
	[ "$status" -eq 0 ]
	run ip netns exec "$H2" ping -6 -c 3 -i 0.2 -W 5 $A
	[ "$status" -eq 0 ]
	sleep 0.5
	kill -INT "$TCPD"; wait "$TCPD" || true
	TCPD=
	# on the core: ESP of both SAs, no ICMPv6 in clear
	tshark -r "$T/core.pcap" -Y esp -T fields -e esp.spi > "$T/spis" \
	    2>/dev/null
	grep -q 0x00001001 "$T/spis"
	grep -q 0x00002001 "$T/spis"
	[ "$(tshark -r "$T/core.pcap" -Y icmpv6 2>/dev/null | wc -l)" -eq 0 ]
	[ "$(ctr a encrypted)" -ge 6 ]
	[ "$(ctr b decrypted)" -ge 6 ]
	# site B's inbound key is wrong: its pings die there, counted
	site b $K3 > "$T/b.conf"
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

@test "esp in the L2 VPN: VPWS over L2TPv3 encrypted by ESP, customers ping across, the core carries only ESP" {
	P=espvpn-$$
	NSS="$P-ca $P-sa $P-sb $P-cb"
	mkns $NSS
	veth ca0 $P-ca ac $P-sa
	veth core $P-sa core $P-sb
	veth ac $P-sb cb0 $P-cb
	ip -n $P-ca addr add 10.9.0.1/24 dev ca0
	ip -n $P-cb addr add 10.9.0.2/24 dev cb0
	pw() {	# pw ME PEER NAME SESSION PEERSESSION COOKIE PEERCOOKIE
		printf 'local-address 2001:db8::%s;\npseudowire %s {\n' $1 $3
		printf '\tremote-address 2001:db8::%s;\n' $2
		printf '\tl2tp { local-session %s; remote-session %s; ' $4 $5
		printf 'local-cookie %s; remote-cookie %s; }\n}\n' $6 $7
	}
	pw 1 2 b 1 2 0x0011223344556677 0x8899aabbccddeeff > "$T/a-pw.conf"
	pw 2 1 a 2 1 0x8899aabbccddeeff 0x0011223344556677 > "$T/b-pw.conf"
	sa() {	# sa ME PEER OUTSPI INSPI OUTKEY INKEY
		printf 'sa { direction out; spi %s; key %s; local-address 2001:db8::%s; remote-address 2001:db8::%s; }\n' \
		    $3 $5 $1 $2
		printf 'sa { direction in; spi %s; key %s; local-address 2001:db8::%s; remote-address 2001:db8::%s; }\n' \
		    $4 $6 $1 $2
	}
	sa 1 2 0x1001 0x2001 $K1 $K2 > "$T/a-sa.conf"
	sa 2 1 0x2001 0x1001 $K2 $K1 > "$T/b-sa.conf"
	vsite() {	# vsite a|b ME PEER PORT
		ip netns exec "$P-s$1" snb-run -n "$P-$1" "p: l2tp $T/$1-pw.conf
		    e: esp --counters-out $T/$1-esp.ctr $T/$1-sa.conf
		    n: nd --address 2001:db8::$2 --mac 02:00:00:00:00:0$2 \
		        --next-hop 2001:db8::$3
		    nic ac | [$4] @p [$4] | nic ac
		    @p [core] |~ [clear] @e [core] |~ [north] @n [south] | nic afpacket:core
		    nic afpacket:core | [south] @n [north] | [core] @e [clear] | [core] @p" \
		    2> "$T/$1.err" 3>&- &
		PIDS="$PIDS $!"
	}
	vsite a 1 2 b
	vsite b 2 1 a
	ip netns exec $P-sb tcpdump -nn -U --immediate-mode -w "$T/core.pcap" \
	    -i core 2>/dev/null 3>&- &
	TCPD=$!
	WAIT_FOR_S=30 wait_for ip netns exec $P-ca ping -c1 -W1 10.9.0.2
	ip netns exec $P-ca ping -c3 -i0.2 -W5 10.9.0.2
	ip netns exec $P-cb ping -c3 -i0.2 -W5 10.9.0.1
	sleep 0.5
	kill -INT $TCPD; wait $TCPD || true
	TCPD=
	for p in $PIDS; do kill -INT "$p"; done
	for p in $PIDS; do wait "$p" || true; done
	PIDS=
	cat "$T/a.err" "$T/b.err" "$T/a-esp.ctr"
	grep -q '^encrypted [1-9]' "$T/a-esp.ctr"
	grep -q '^decrypted [1-9]' "$T/a-esp.ctr"
	grep -q '^decrypted [1-9]' "$T/b-esp.ctr"
	! grep -q '^drop-\(icv\|replay\|too-old\|bad\|not-esp\)[a-z-]* [1-9]' \
	    "$T/a-esp.ctr" "$T/b-esp.ctr" || false
	# the core: ESP of both directions, no L2TP and no ICMP in clear
	tshark -r "$T/core.pcap" -Y esp -T fields -e esp.spi 2>/dev/null |
	    sort -u > "$T/spis"
	[ "$(cat "$T/spis")" = "$(printf '0x00001001\n0x00002001')" ]
	[ "$(tshark -r "$T/core.pcap" -Y 'l2tp or icmp' 2>/dev/null | wc -l)" -eq 0 ]
}
