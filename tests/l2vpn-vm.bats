#!/usr/bin/env bats
# The L2 VPN against the Linux kernel as the far site (issue 15).
#
# One QEMU guest (tests/vm/run-guest, software emulation) for the whole
# file, booted with build-guest --peer's archive and tests/vm/peer-shell:
# Debian's kernel with its L2TPv3, ip6gretap, ESP and bridge modules,
# configured with Debian's iproute2 by commands the tests send over a
# second serial port (gsh).  Its virtio NIC (kernel virtio_net) is its
# core interface, 2001:db8:1::2, on the tap 'virtio' in namespace $NS;
# its pseudowire interface sits in a bridge br0 that holds the guest site's
# addresses 10.15.0.2/24 and fd15::2/64.
#
# On the host side, in $NS, snb is the other endpoint, 2001:db8:1::1:
#
#	nic afpacket:ac <-> l2tp|gre <-> [esp] <-> nd <-> nic afpacket:virtio
#
# and a customer namespace $C with 10.15.0.1/24 and fd15::1/64 on a veth
# whose other end is 'ac'.  Each test pings across the pseudowire in both
# directions, checks the encoding with tshark on a capture of the tap,
# then makes the guest send with a wrong cookie / key / ESP key: traffic
# stops and snb counts the drops; the right one restores it.
#
# Plain build only (the guest's kernel is the peer; the host-side apps are
# the normal build's, which the other bats files also run under ASan).
# Needs root, qemu-system-x86_64, busybox-static, cpio, tshark, python3;
# the first run downloads Debian's kernel package into build/vm/ (cached).
load helpers
load netns

VM="$BATS_TEST_DIRNAME/vm"
PY=/usr/bin/python3	# with Debian's scapy
HOST6=2001:db8:1::1 GUEST6=2001:db8:1::2
HOSTMAC=02:15:00:00:00:01 GUESTMAC=52:54:00:00:00:06
# The guest's bridge keeps its MAC when a pseudowire interface is made
# again (a bridge takes its ports' lowest otherwise).
BRMAC=02:15:00:00:0c:02
# The kernel sends its 'cookie' and expects its 'peer_cookie' (l2tp_core.c),
# as snb-pw(5)'s local-cookie and remote-cookie.
COOKIE_G2H=0x1122334455667788 COOKIE_H2G=0x99aabbccddeeff00
# AES-128 key + 4-byte salt (RFC 4106) per direction.
KEY_H2G=0x000102030405060708090a0b0c0d0e0f10111213
KEY_G2H=0x202122232425262728292a2b2c2d2e2f30313233
SPI_H2G=0x00000101 SPI_G2H=0x00000202

# why_no_guest: why this host cannot run the guest (empty if it can); in
# CI a missing tool is a failure, not a reason.  (bats 1.8 cannot skip
# from setup_file: each test skips in setup.)
why_no_guest() {
	[ "$(id -u)" -eq 0 ] || { echo "needs root"; return 0; }
	case "$SNB_BUILD" in
	*asan*) echo "the guest's kernel is the peer; the host apps run under ASan in l2vpn.bats and examples.bats"; return 0 ;;
	esac
	local t
	for t in qemu-system-x86_64 cpio tshark tcpdump /bin/busybox; do
		command -v "$t" >/dev/null && continue
		[ "${CI:-}" != true ] || { echo "CI: $t is missing" >&2; return 1; }
		echo "$t is not installed"
		return 0
	done
	"$PY" -c 'import scapy' 2>/dev/null && return 0
	[ "${CI:-}" != true ] || { echo "CI: python3-scapy is missing" >&2; return 1; }
	echo "python3-scapy is not installed"
}

setup_file() {
	NO_GUEST=$(why_no_guest) || return 1
	export NO_GUEST
	[ -z "$NO_GUEST" ] || return 0
	export D="$BATS_FILE_TMPDIR"
	export NS="snbL2-$$" C="snbL2c-$$"
	export SNB_RUN_DIR="/dev/shm/snb-l2vpn-vm-$$"
	mkns "$NS" "$C"
	# The customer site: a veth into $NS, where snb takes its frames.
	veth ac "$NS" c0 "$C"
	ip netns exec "$C" sysctl -qw net.ipv6.conf.all.disable_ipv6=0 \
	    net.ipv6.conf.default.disable_ipv6=0 net.ipv6.conf.c0.disable_ipv6=0
	ip -n "$C" addr add 10.15.0.1/24 dev c0
	ip -n "$C" addr add fd15::1/64 dev c0 nodad
	ip -n "$NS" tuntap add dev virtio mode tap
	ip -n "$NS" link set virtio up
	mkfifo "$D/ctl.in" "$D/ctl.out"
	local peer
	peer=$("$VM/build-guest" --peer 2> "$D/build.err") ||
	    { cat "$D/build.err"; return 1; }
	# fd 3 closed: bats waits for it, the guest outlives this function.
	SNB_VM_INITRAMFS_EXTRA="$peer" SNB_VM_QEMU_ARGS="-serial pipe:$D/ctl" \
	    "$VM/run-guest" -n "$NS" -t 1500 "$VM/peer-shell" "$D/console.log" \
	    > "$D/guest.out" 2>&1 3>&- &
	echo $! > "$D/guest.pid"
	wait_console SNB-PEER-READY || return 1
	echo 0 > "$D/gsh.n"
	gsh "ip link set eth0 up &&
	    ip addr add $GUEST6/64 dev eth0 nodad &&
	    ip link add br0 address $BRMAC type bridge &&
	    ip link set br0 up &&
	    ip addr add 10.15.0.2/24 dev br0 &&
	    ip addr add fd15::2/64 dev br0 nodad"
}

teardown_file() {
	local g
	[ -n "${D:-}" ] || return 0	# skipped before anything was made
	g=$(cat "$D/guest.pid" 2>/dev/null) || g=""
	if [ -n "$g" ] && kill -0 "$g" 2>/dev/null; then
		# Bounded: opening the fifo waits for QEMU, its reader.
		timeout 5 sh -c "printf 'exit\n' > '$D/ctl.in'"
		for _ in $(seq 100); do kill -0 "$g" 2>/dev/null || break; sleep 0.1; done
		kill -TERM "$g" 2>/dev/null
		wait "$g" 2>/dev/null
	fi
	ip netns del "$NS" 2>/dev/null || true
	ip netns del "$C" 2>/dev/null || true
	rm -rf "$SNB_RUN_DIR"
}

setup() {
	[ -z "$NO_GUEST" ] || skip "$NO_GUEST"
	T="$BATS_TEST_TMPDIR"
	PIDS="" CAP=""
}

teardown() {
	[ -z "$NO_GUEST" ] || return 0
	[ -z "$CAP" ] || { kill -INT "$CAP" 2>/dev/null; wait "$CAP" 2>/dev/null; }
	local p i left
	for p in $PIDS; do kill -INT "$p" 2>/dev/null; done
	for p in $PIDS; do
		for i in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	stop_snb || return 1
	# The guest back to its base: no tunnel, no neighbour entries.
	gsh "ip xfrm policy flush; ip xfrm state flush
	    ip l2tp del tunnel tunnel_id 1 2>/dev/null
	    ip link del gre1 2>/dev/null
	    ip -6 neigh flush dev eth0; ip neigh flush dev br0; true" >/dev/null
	if [ -d "$SNB_RUN_DIR" ]; then
		left=$(ls -A "$SNB_RUN_DIR")
		rm -rf "$SNB_RUN_DIR"
		[ -z "$left" ] || { echo "left in run dir: $left"; return 1; }
	fi
	return 0
}

# wait_console PATTERN: until the guest's console has a line matching it
# (at most 5 minutes: a loaded machine boots the emulated guest slowly).
wait_console() {
	local i g
	g=$(cat "$D/guest.pid")
	for i in $(seq 1200); do
		tr -d '\r' 2>/dev/null < "$D/console.log" | grep -aq "$1" && return 0
		kill -0 "$g" 2>/dev/null || break
		sleep 0.25
	done
	echo "no '$1' on the guest's console:"
	cat "$D/guest.out"
	tail -20 "$D/console.log"
	return 1
}

# gsh COMMAND: run a shell command in the guest (tests/vm/peer-shell);
# print its output, return its status.
gsh() {
	local n
	n=$(($(cat "$D/gsh.n") + 1))
	echo "$n" > "$D/gsh.n"
	kill -0 "$(cat "$D/guest.pid")" 2>/dev/null ||
	    { echo "gsh: the guest is gone:"; tail -20 "$D/console.log"; return 1; }
	# Bounded: opening the fifo waits for QEMU, its reader.
	timeout 10 sh -c "printf '%s\t%s\n' $n $(printf '%s' "$1" | base64 -w0) \
	    > '$D/ctl.in'" || { echo "gsh: cannot write to the guest"; return 1; }
	wait_console "^SNB-DONE $n " >/dev/null || { echo "gsh: no answer to: $1"; return 1; }
	tr -d '\r' < "$D/console.log" |
	    sed -n "/^SNB-BEGIN $n\$/,/^SNB-DONE $n /{/^SNB-BEGIN/d;/^SNB-DONE/d;p}"
	return "$(tr -d '\r' < "$D/console.log" | sed -n "s/^SNB-DONE $n \([0-9]*\)$/\1/p")"
}

# capture FILE: tcpdump on the tap (the core link) until stopcapture.
capture() {
	ip netns exec "$NS" tcpdump -i virtio -nn -s 0 -U --immediate-mode \
	    -w "$1" 2> "$T/cap.err" &
	CAP=$!
	wait_for grep -q "listening on" "$T/cap.err"
}

stopcapture() {
	sleep 0.5
	kill -INT "$CAP"
	wait "$CAP" || true
	CAP=""
}

# tshark FILE FILTER FIELDS...: the fields of the matching packets, one
# packet a line, L2TPv3 read with the 8-byte cookie, no sublayer and
# Ethernet inside, as the pseudowires have (no control connection in the
# capture says so: pseudowire type 0 is tshark's "unknown").
dissect() {
	local f=$1 y=$2 e="" x
	shift 2
	for x in "$@"; do e="$e -e $x"; done
	# shellcheck disable=SC2086
	tshark -r "$f" -o l2tp.cookie_size:"8 Byte Cookie" \
	    -o l2tp.l2_specific:None -d l2tp.pw_type==0,eth \
	    -Y "$y" -T fields -E separator=' ' -E occurrence=f $e 2>/dev/null
}

# inject HEX: one frame into the core link (the tap), from the host side.
inject() {
	ip netns exec "$NS" "$PY" -c '
import socket, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("virtio", 0))
s.send(bytes.fromhex(sys.argv[1]))' "$1"
}

# The frames a test sends into the pseudowire from the host side, built
# with scapy: an ARP request from 10.15.0.1 for the guest site's address.
arp_request_hex() {
	"$PY" -c 'from scapy.all import Ether, ARP
print(bytes(Ether(src="02:15:00:00:0c:01", dst="ff:ff:ff:ff:ff:ff") /
    ARP(op=1, hwsrc="02:15:00:00:0c:01", psrc="10.15.0.1", pdst="10.15.0.2")).hex())'
}

# Ethernet + IPv6 host -> guest with next header $1, payload hex $2.
core_frame_hex() {
	"$PY" -c 'import sys
from scapy.all import Ether, IPv6, Raw
print(bytes(Ether(src=sys.argv[1], dst=sys.argv[2]) /
    IPv6(src=sys.argv[3], dst=sys.argv[4], nh=int(sys.argv[5])) /
    Raw(bytes.fromhex(sys.argv[6]))).hex())' \
	    $HOSTMAC $GUESTMAC $HOST6 $GUEST6 "$1" "$2"
}

# The guest's L2TPv3 (session 2 in, 1 out) and ip6gretap (key 42).
guest_l2tp() {	# guest_l2tp COOKIE: the cookie it sends
	gsh "ip l2tp add tunnel tunnel_id 1 peer_tunnel_id 1 encap ip \
	    local $GUEST6 remote $HOST6 &&
	ip l2tp add session name pw0 tunnel_id 1 session_id 2 \
	    peer_session_id 1 cookie ${1#0x} peer_cookie ${COOKIE_H2G#0x} \
	    l2spec_type none &&
	ip link set pw0 master br0 && ip link set pw0 up"
}
guest_gre() {	# guest_gre OKEY [OPTION...]: the key it sends
	local k=$1
	shift
	gsh "ip link add gre1 type ip6gretap local $GUEST6 remote $HOST6 \
	    ikey 42 okey $k $* &&
	ip link set gre1 master br0 && ip link set gre1 up"
}

# seen FILE FILTER N: the capture has at least N packets that match.
seen() {
	[ "$(dissect "$1" "$2" frame.number | wc -l)" -ge "$3" ]
}

@test "l2vpn-vm: the guest peer speaks L2TPv3 and GRE as the standards say (scapy in, tshark out)" {
	local arp reply
	arp=$(arp_request_hex)
	reply="ipv6.src == $GUEST6 && arp.opcode == 2"
	# Its core neighbour static here: no snb on the link in this test.
	gsh "ip -6 neigh replace $HOST6 lladdr $HOSTMAC dev eth0 nud permanent"
	guest_l2tp $COOKIE_G2H
	capture "$T/l2tp.pcap"
	# Session 2 with the cookie the guest expects: answered; then the
	# cookie it sends itself: dropped.
	inject "$(core_frame_hex 115 "00000002${COOKIE_H2G#0x}$arp")"
	WAIT_FOR_S=30 wait_for seen "$T/l2tp.pcap" "$reply" 1
	inject "$(core_frame_hex 115 "00000002${COOKIE_G2H#0x}$arp")"
	sleep 2
	stopcapture
	dissect "$T/l2tp.pcap" "$reply" ipv6.dst ipv6.nxt l2tp.sid l2tp.cookie \
	    arp.src.proto_ipv4 arp.dst.hw_mac > "$T/l2tp.txt"
	cat "$T/l2tp.txt"
	[ "$(wc -l < "$T/l2tp.txt")" = 1 ]
	grep -qx "$HOST6 115 0x00000001 ${COOKIE_G2H#0x} 10.15.0.2 02:15:00:00:0c:01" "$T/l2tp.txt"
	gsh "ip l2tp del tunnel tunnel_id 1; ip neigh flush dev br0"

	guest_gre 42 encaplimit none
	capture "$T/gre.pcap"
	# Transparent Ethernet bridging with key 42: answered; key 43: dropped.
	inject "$(core_frame_hex 47 "200065580000002a$arp")"
	WAIT_FOR_S=30 wait_for seen "$T/gre.pcap" "$reply" 1
	inject "$(core_frame_hex 47 "200065580000002b$arp")"
	sleep 2
	stopcapture
	dissect "$T/gre.pcap" "$reply" ipv6.dst ipv6.nxt gre.proto gre.key \
	    arp.src.proto_ipv4 arp.dst.hw_mac > "$T/gre.txt"
	cat "$T/gre.txt"
	[ "$(wc -l < "$T/gre.txt")" = 1 ]
	grep -qx "$HOST6 47 0x6558 0x0000002a 10.15.0.2 02:15:00:00:0c:01" "$T/gre.txt"
}

# ctr LABEL NAME: a counter of stage LABEL of the host's graph l2vpn.
ctr() {
	ip netns exec "$NS" snb-top --json -i 0.05 l2vpn 2>/dev/null |
	    jq --arg l "$1" --arg c "$2" \
	    '.graphs[0].stages[] | select(.label == $l) | .counters[$c] // 0'
}

# host_graph KIND [esp]: snb's end in $NS, pseudowire 'guest' of KIND
# (l2tp or gre), encrypted with snb-esp when asked; waits until nd has
# resolved the guest's core address (the kernel answered its NS).
host_graph() {
	local kind=$1 esp=${2:-} pw g
	case $kind in
	l2tp) pw="l2tp { local-session 1; remote-session 2;
		local-cookie $COOKIE_H2G; remote-cookie $COOKIE_G2H; }" ;;
	gre) pw="gre { key 42; }" ;;
	esac
	cat > "$T/pw.conf" <<-EOF
	local-address $HOST6;
	pseudowire guest {
		remote-address $GUEST6;
		$pw
	}
	EOF
	g="p: $kind $T/pw.conf --counters-out $T/p.ctr
	n: nd --address $HOST6 --mac $HOSTMAC --next-hop $GUEST6
	nic afpacket:ac | [guest] @p [guest] | nic afpacket:ac"
	if [ -n "$esp" ]; then
		# Sequence numbers 16 below the wrap into ESN's high half,
		# both ways (the guest's SAs start there too).
		cat > "$T/sa.conf" <<-EOF
		sa { name to-guest; direction out; spi $SPI_H2G; key $KEY_H2G;
		    local-address $HOST6; remote-address $GUEST6;
		    sequence 4294967280; }
		sa { name from-guest; direction in; spi $SPI_G2H; key $KEY_G2H;
		    local-address $HOST6; remote-address $GUEST6;
		    replay-window 128; sequence 4294967264; }
		EOF
		g="$g
		e: esp $T/sa.conf --counters-out $T/e.ctr
		@p [core] |~ [clear] @e [core] |~ [north] @n [south] | nic afpacket:virtio
		nic afpacket:virtio | [south] @n [north] | [core] @e [clear] | [core] @p"
	else
		g="$g
		@p [core] |~ [north] @n [south] | nic afpacket:virtio
		nic afpacket:virtio | [south] @n [north] | [core] @p"
	fi
	echo "$g" > "$T/graph"
	ip netns exec "$NS" snb-run -n l2vpn -f "$T/graph" 2> "$T/graph.err" &
	PIDS=$!
	WAIT_FOR_S=60 wait_for eval '[ "$(ctr n next-hop-resolved)" = 1 ]' ||
	    { cat "$T/graph.err"; return 1; }
}

# pings_ok: both ways across the pseudowire, IPv4 and IPv6, every echo
# answered (the first ones after a change wait for ARP and ND).
pings_ok() {
	WAIT_FOR_S=60 wait_for ip netns exec "$C" ping -c1 -W1 10.15.0.2 >/dev/null
	ip netns exec "$C" ping -c 5 -i 0.2 -W 2 10.15.0.2
	WAIT_FOR_S=60 wait_for ip netns exec "$C" ping -6 -c1 -W1 fd15::2 >/dev/null
	ip netns exec "$C" ping -6 -c 5 -i 0.2 -W 2 fd15::2
	gsh "ping -c 5 -i 0.2 -W 2 10.15.0.1 && ping6 -c 5 -i 0.2 -W 2 fd15::1"
}

# pings_fail COUNTER [LABEL]: nothing crosses either way, and snb's
# stage LABEL (p by default) counts the guest's frames in COUNTER.
pings_fail() {
	local before after
	before=$(ctr "${2:-p}" "$1")
	run ip netns exec "$C" ping -c 3 -i 0.3 -W 1 10.15.0.2
	echo "$output"
	[ "$status" -ne 0 ]
	run gsh "ping -c 3 -i 0.3 -W 1 10.15.0.1"
	echo "$output"
	[ "$status" -ne 0 ]
	after=$(ctr "${2:-p}" "$1")
	echo "$1: $before -> $after"
	[ "$after" -ge $((before + 3)) ]
}

@test "l2vpn-vm: VPWS over L2TPv3 with the kernel: pings both ways; a wrong cookie is dropped and counted" {
	host_graph l2tp
	guest_l2tp $COOKIE_G2H
	capture "$T/core.pcap"
	pings_ok
	stopcapture
	# What snb sent: the kernel's session and the cookie it expects, from
	# nd's MAC to the guest's, which nd learnt; echo requests inside.
	dissect "$T/core.pcap" "ipv6.src == $HOST6 && icmp.type == 8" \
	    eth.src eth.dst ipv6.dst ipv6.nxt l2tp.sid l2tp.cookie ip.src ip.dst |
	    sort -u > "$T/sent.txt"
	cat "$T/sent.txt"
	[ "$(cat "$T/sent.txt")" = "$HOSTMAC $GUESTMAC $GUEST6 115 0x00000002 ${COOKIE_H2G#0x} 10.15.0.1 10.15.0.2" ]
	# A cookie snb does not take stops the guest's side ...
	gsh "ip l2tp del tunnel tunnel_id 1"
	guest_l2tp 0x0123456789abcdef
	pings_fail drop-wrong-cookie
	# ... the right one restores it.
	gsh "ip l2tp del tunnel tunnel_id 1"
	guest_l2tp $COOKIE_G2H
	pings_ok
}

@test "l2vpn-vm: VPWS over GRE with key with the kernel's ip6gretap: pings both ways; a wrong key is dropped and counted" {
	host_graph gre
	# The kernel's default: a tunnel encapsulation limit (RFC 2473) in a
	# destination options header before GRE, which snb-gre passes over.
	guest_gre 42
	capture "$T/core.pcap"
	pings_ok
	stopcapture
	dissect "$T/core.pcap" "ipv6.src == $GUEST6 && icmp.type == 0" \
	    ipv6.nxt ipv6.dstopts.nxt gre.proto gre.key | sort -u > "$T/got.txt"
	cat "$T/got.txt"
	[ "$(cat "$T/got.txt")" = "60 47 0x6558 0x0000002a" ]
	dissect "$T/core.pcap" "ipv6.src == $HOST6 && icmp.type == 8" \
	    eth.src eth.dst ipv6.dst ipv6.nxt gre.proto gre.key ip.src ip.dst |
	    sort -u > "$T/sent.txt"
	cat "$T/sent.txt"
	[ "$(cat "$T/sent.txt")" = "$HOSTMAC $GUESTMAC $GUEST6 47 0x6558 0x0000002a 10.15.0.1 10.15.0.2" ]
	gsh "ip link del gre1"
	guest_gre 43 encaplimit none
	pings_fail drop-wrong-key
	gsh "ip link del gre1"
	guest_gre 42 encaplimit none
	pings_ok
}

# guest_esp_out KEY OSEQ_HI OSEQ: the guest's SA toward snb, new.
guest_esp_out() {
	gsh "ip xfrm state del src $GUEST6 dst $HOST6 proto esp spi $SPI_G2H 2>/dev/null
	ip xfrm state add src $GUEST6 dst $HOST6 proto esp spi $SPI_G2H reqid 2 \
	    mode tunnel aead 'rfc4106(gcm(aes))' $1 128 flag esn \
	    replay-window 128 replay-oseq-hi $2 replay-oseq $3"
}

@test "l2vpn-vm: L2TPv3 + ESP (AES-GCM, ESN across 2^32) with the kernel's xfrm: pings both ways; a wrong key is dropped and counted" {
	host_graph l2tp esp
	guest_l2tp $COOKIE_G2H
	# Tunnel mode, the L2TPv3 packets between the endpoints only (ND
	# stays in clear); both directions 16 below the wrap into the high
	# half of the 64-bit sequence number, as snb's SAs.
	gsh "ip xfrm state add src $HOST6 dst $GUEST6 proto esp spi $SPI_H2G \
	    reqid 1 mode tunnel aead 'rfc4106(gcm(aes))' $KEY_H2G 128 \
	    flag esn replay-window 128 replay-seq 0xffffffe0 &&
	ip xfrm policy add src $HOST6 dst $GUEST6 proto 115 dir in \
	    tmpl src $HOST6 dst $GUEST6 proto esp reqid 1 mode tunnel &&
	ip xfrm policy add src $GUEST6 dst $HOST6 proto 115 dir out \
	    tmpl src $GUEST6 dst $HOST6 proto esp reqid 2 mode tunnel"
	guest_esp_out $KEY_G2H 0 0xfffffff0
	capture "$T/core.pcap"
	pings_ok
	stopcapture
	# Everything between the endpoints is ESP, and the sequence numbers
	# crossed 2^32 both ways (the ESP header carries the low half).
	[ "$(dissect "$T/core.pcap" "l2tp || arp || icmp" frame.number | wc -l)" = 0 ]
	dissect "$T/core.pcap" "esp" ipv6.src ipv6.dst ipv6.nxt esp.spi \
	    esp.sequence > "$T/esp.txt"
	cat "$T/esp.txt"
	# (The first numbers may have gone before the capture began: the
	# customer's own multicast crosses as soon as the pseudowire is up.)
	for d in "$HOST6 $GUEST6 50 0x00000101" "$GUEST6 $HOST6 50 0x00000202"; do
		grep "^$d " "$T/esp.txt" | awk '$5 > 4294967280 { hi = 1 }
		    $5 < 100 { lo = 1 } END { exit !(hi && lo) }'
	done
	[ "$(ctr e drop-icv)" = 0 ]
	# A wrong key on the guest's side: snb's ICV check fails.
	guest_esp_out 0x0f0e0d0c0b0a09080706050403020100ffffffff 1 0x1000
	pings_fail drop-icv e
	# The right key again, beyond the sequence numbers used so far.
	guest_esp_out $KEY_G2H 1 0x2000
	pings_ok
}
