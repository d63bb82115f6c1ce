#!/usr/bin/env bats
# snb-lwaftr: snb's own conformance cases (tests/lwaftr/cases.tsv, written
# by tests/lwaftr/mkcases.py from the reference's rules; README there),
# each untagged and VLAN-tagged, run by tests/lwaftr-conformance.sh as the
# shared vectors are.  One test per case; the first notices cases added or
# lost, the second that the checked-in files are what mkcases.py writes.
load helpers

D="$BATS_TEST_DIRNAME/lwaftr"

own() {
	run "$BATS_TEST_DIRNAME/lwaftr-conformance.sh" -v -d "$D" "$1"
	echo "$output"
	[ "$status" -eq 0 ]
	# A name selects every case it is a substring of: exactly one ran.
	[ "$(echo "$output" | grep -c '^ok ')" -eq 1 ]
}

@test "lwaftr own: tests/lwaftr has the 70 cases tested here" {
	[ "$("$BATS_TEST_DIRNAME/lwaftr-conformance.sh" --count "$D")" -eq 70 ]
}

@test "lwaftr own: mkcases.py writes exactly the checked-in cases" {
	/usr/bin/python3 -c 'import scapy' 2>/dev/null ||
	    skip "python3-scapy not installed (tools/deps.sh)"
	/usr/bin/python3 "$D/mkcases.py" "$T/gen"
	cp "$D/lwaftr.conf.in" "$D/mkcases.py" "$D/README" "$D/errata.tsv" \
	    "$D/snabb-diff" "$D/snabb-corpus" "$D/snabbdiff.py" "$D/corpus.py" \
	    "$T/gen/"
	diff -r "$D" "$T/gen"
}

@test "lwaftr own 1: echo-v4-new-datagram" {
	own 1
}

@test "lwaftr own 2: echo-v4-new-datagram (vlan)" {
	own 2
}

@test "lwaftr own 3: echo-v6-new-datagram" {
	own 3
}

@test "lwaftr own 4: echo-v6-new-datagram (vlan)" {
	own 4
}

@test "lwaftr own 5: echo-v4-code1" {
	own 5
}

@test "lwaftr own 6: echo-v4-code1 (vlan)" {
	own 6
}

@test "lwaftr own 7: icmpv4-inet-unbound" {
	own 7
}

@test "lwaftr own 8: icmpv4-inet-unbound (vlan)" {
	own 8
}

@test "lwaftr own 9: icmpv4-error-inet-unbound" {
	own 9
}

@test "lwaftr own 10: icmpv4-error-inet-unbound (vlan)" {
	own 10
}

@test "lwaftr own 11: icmpv4-inet-unbound-noerrors" {
	own 11
}

@test "lwaftr own 12: icmpv4-inet-unbound-noerrors (vlan)" {
	own 12
}

@test "lwaftr own 13: icmpv4-hairpin-unbound" {
	own 13
}

@test "lwaftr own 14: icmpv4-hairpin-unbound (vlan)" {
	own 14
}

@test "lwaftr own 15: icmpv4-hairpin-bad-checksum" {
	own 15
}

@test "lwaftr own 16: icmpv4-hairpin-bad-checksum (vlan)" {
	own 16
}

@test "lwaftr own 17: icmpv4-hairpin-policy" {
	own 17
}

@test "lwaftr own 18: icmpv4-hairpin-policy (vlan)" {
	own 18
}

@test "lwaftr own 19: icmpv4-error-to-b4-policy" {
	own 19
}

@test "lwaftr own 20: icmpv4-error-to-b4-policy (vlan)" {
	own 20
}

@test "lwaftr own 21: icmpv4-error-to-unbound-port" {
	own 21
}

@test "lwaftr own 22: icmpv4-error-to-unbound-port (vlan)" {
	own 22
}

@test "lwaftr own 23: icmpv6-time-exceeded-reassembly" {
	own 23
}

@test "lwaftr own 24: icmpv6-time-exceeded-reassembly (vlan)" {
	own 24
}

@test "lwaftr own 25: icmpv6-too-big-bad-code" {
	own 25
}

@test "lwaftr own 26: icmpv6-too-big-bad-code (vlan)" {
	own 26
}

@test "lwaftr own 27: icmpv6-hop-limit-translated-noerrors" {
	own 27
}

@test "lwaftr own 28: icmpv6-hop-limit-translated-noerrors (vlan)" {
	own 28
}

@test "lwaftr own 29: no-source-softwire-br" {
	own 29
}

@test "lwaftr own 30: no-source-softwire-br (vlan)" {
	own 30
}

@test "lwaftr own 31: no-source-softwire-dst" {
	own 31
}

@test "lwaftr own 32: no-source-softwire-dst (vlan)" {
	own 32
}

@test "lwaftr own 33: icmpv6-rate-limit" {
	own 33
}

@test "lwaftr own 34: icmpv6-rate-limit (vlan)" {
	own 34
}

@test "lwaftr own 35: sctp-bound" {
	own 35
}

@test "lwaftr own 36: sctp-bound (vlan)" {
	own 36
}

@test "lwaftr own 37: snb-icmpv6-quotes-no-softwire" {
	own 37
}

@test "lwaftr own 38: snb-icmpv6-quotes-no-softwire (vlan)" {
	own 38
}

@test "lwaftr own 39: snb-icmpv6-bad-checksum" {
	own 39
}

@test "lwaftr own 40: snb-icmpv6-bad-checksum (vlan)" {
	own 40
}

@test "lwaftr own 41: snb-icmpv4-rate-limit" {
	own 41
}

@test "lwaftr own 42: snb-icmpv4-rate-limit (vlan)" {
	own 42
}

@test "lwaftr own 43: solicit-at-start" {
	own 43
}

@test "lwaftr own 44: solicit-at-start (vlan)" {
	own 44
}

@test "lwaftr own 45: ns-answered" {
	own 45
}

@test "lwaftr own 46: ns-answered (vlan)" {
	own 46
}

@test "lwaftr own 47: ns-from-unspecified" {
	own 47
}

@test "lwaftr own 48: ns-from-unspecified (vlan)" {
	own 48
}

@test "lwaftr own 49: ns-hop-limit-64" {
	own 49
}

@test "lwaftr own 50: ns-hop-limit-64 (vlan)" {
	own 50
}

@test "lwaftr own 51: arp-request-answered" {
	own 51
}

@test "lwaftr own 52: arp-request-answered (vlan)" {
	own 52
}

@test "lwaftr own 53: na-first-solicited-wins" {
	own 53
}

@test "lwaftr own 54: na-first-solicited-wins (vlan)" {
	own 54
}

@test "lwaftr own 55: na-without-option" {
	own 55
}

@test "lwaftr own 56: na-without-option (vlan)" {
	own 56
}

memuse() {	# the v4 reassembly gauge of graph lwicmpmem's stage lw
	snb-top --json --once -i 0.01 lwicmpmem 2>/dev/null | jq -r \
	    '.graphs[0].stages[] | select(.label == "lw") |
	    .counters["memuse-ipv4-frag-reassembly-buffer"] // 0'
}

@test "lwaftr own: memuse-ipv4-frag-reassembly-buffer shows a datagram's buffer while it waits" {
	V="${SNB_SHARED:-$BATS_TEST_DIRNAME/../../shared}/conformance/lwaftr"
	[ -f "$V/tcp-ipv4-3frags-bound-reversed.pcap" ] || skip "no vectors in $V"
	# One fragment of three: its datagram stays in progress.
	tcpdump -r "$V/tcp-ipv4-3frags-bound-reversed.pcap" -c 1 \
	    -w "$T/frag.pcap" 2>/dev/null
	mkfifo "$T/in4"
	snb-run -n lwicmpmem "pcap-read $T/in4 | [v4] lw: lwaftr \
	    $D/lwaftr.conf [v4] | sink ; pcap-read $D/empty.pcap | [v6] @lw \
	    [v6] | sink" 2> "$T/err" 3>&- &
	pid=$!
	# read-write: an open that waits for no reader (a graph that fails
	# before pcap-read opens the FIFO fails the test instead of hanging it)
	exec 7<> "$T/in4"
	head -c 24 "$T/frag.pcap" >&7
	wait_for eval '[ "$(snb-top --json --once -i 0.01 lwicmpmem 2>/dev/null | jq ".graphs | length")" = 1 ]'
	[ "$(memuse)" = 0 ]
	# pcap-read takes records 64 at a time (the copies overlap: the
	# datagram is given up, its buffer kept for the next).
	for _ in $(seq 64); do tail -c +25 "$T/frag.pcap"; done >&7
	wait_for eval '[ "$(memuse)" -gt 0 ]'
	snb-top --json --once -i 0.01 lwicmpmem | jq -c '.graphs[0].stages[] |
	    select(.label == "lw") | .counters'
	# At least the fragment's IPv4 bytes (its record less its headers).
	[ "$(memuse)" -ge "$(($(stat -c %s "$T/frag.pcap") - 24 - 16 - 14))" ]
	exec 7>&-
	wait "$pid"
}

@test "lwaftr own 57: snb-icmpv6-quotes-icmpv4-error" {
	own 57
}

@test "lwaftr own 58: snb-icmpv6-quotes-icmpv4-error (vlan)" {
	own 58
}

@test "lwaftr own 59: no-ports-all-ports-softwire" {
	own 59
}

@test "lwaftr own 60: no-ports-all-ports-softwire (vlan)" {
	own 60
}

@test "lwaftr own 61: arp-too-short-misplaced" {
	own 61
}

@test "lwaftr own 62: arp-too-short-misplaced (vlan)" {
	own 62
}

@test "lwaftr own 63: snb-nd-router-messages" {
	own 63
}

@test "lwaftr own 64: snb-nd-router-messages (vlan)" {
	own 64
}

@test "lwaftr own 65: reserved-ports-inet" {
	own 65
}

@test "lwaftr own 66: reserved-ports-inet (vlan)" {
	own 66
}

@test "lwaftr own 67: reserved-ports-b4" {
	own 67
}

@test "lwaftr own 68: reserved-ports-b4 (vlan)" {
	own 68
}

@test "lwaftr own 69: icmpv4-other-types-all-ports" {
	own 69
}

@test "lwaftr own 70: icmpv4-other-types-all-ports (vlan)" {
	own 70
}

@test "lwaftr own: a held packet of more fragments than a ring has slots does not wedge its side" {
	V="${SNB_SHARED:-$BATS_TEST_DIRNAME/../../shared}/conformance/lwaftr"
	[ -f "$V/ndp_getna_compound.pcap" ] || skip "no vectors in $V"
	# To a softwire of 178.79.150.233, while v6's next hop is unknown: an
	# 8000-byte datagram (6 fragments at v6's MTU of 1500), then 3 small
	# packets.  The rings have 4 slots, so all 6 never fit at once.
	python3 - "$T/in4.pcap" <<'PY'
import struct, sys
def ip4(payload):
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 1, 0,
        64, 6, 0, bytes([149, 174, 156, 93]), bytes([178, 79, 150, 233]))
    s = sum(struct.unpack("!10H", h))
    s = (s & 0xffff) + (s >> 16)
    return h[:10] + struct.pack("!H", ~s & 0xffff) + h[12:] + payload
tcp = struct.pack("!HHIIBBHHH", 80, 54192, 1, 0, 0x50, 0x10, 1000, 0, 0)
eth = bytes.fromhex("121212121212" "686868686868" "0800")
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
    for n in (7980, 10, 10, 10):
        p = eth + ip4(tcp + bytes(n))
        f.write(struct.pack("<IIII", 0, 0, len(p), len(p)) + p)
PY
	# The neighbour advertisement for v6's next hop, to send after.
	tcpdump -r "$V/ndp_getna_compound.pcap" -w "$T/na.pcap" icmp6 \
	    2>/dev/null
	mkfifo "$T/in6"
	snb-run -n lwwedge --slots 4 --capacity 8192 "pcap-read $T/in4.pcap |
	    [v4] lw: lwaftr --counters-out $T/c $V/tunnel_icmp_withoutmac.conf \
	    [v4] | sink ; pcap-read $T/in6 | [v6] @lw [v6] | pcap-write \
	    $T/out6.pcap" 2> "$T/err" 3>&- &
	pid=$!
	exec 7<> "$T/in6"
	head -c 24 "$T/na.pcap" >&7
	# All 4 taken (held), then the next hop answers.
	wait_count lwwedge lw 4 in-ipv4-packets
	tail -c +25 "$T/na.pcap" >&7
	# The side goes on: the datagram's first fragments (as many as a
	# ring holds), then the 3 small packets.
	wait_for eval '[ "$(npackets "$T/out6.pcap" ip6 and not icmp6)" -ge 4 ]'
	exec 7>&-
	wait "$pid"
	cat "$T/c"
	tcpdump -nn -r "$T/out6.pcap" 2>/dev/null
	[ "$(npackets "$T/out6.pcap" ip6 and not icmp6 and greater 200)" -ge 1 ]
	[ "$(npackets "$T/out6.pcap" ip6 and not icmp6 and less 200)" -eq 3 ]
	! grep -q drop-next-hop-unresolved "$T/c" || false
}
