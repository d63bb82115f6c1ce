#!/usr/bin/env bats
# snb-lwaftr: the conformance vectors, one test per case of
# ../shared/conformance/lwaftr/cases.tsv (tests/lwaftr-conformance.sh runs
# a case and says why it fails), then the command line and SIGHUP reload.
# The case list is generated from cases.tsv; the first test notices when
# the vectors gained or lost cases.
load helpers

: "${SNB_SHARED:=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)/shared}"
export SNB_SHARED
V="$SNB_SHARED/conformance/lwaftr"

conformance() {
	[ -f "$V/cases.tsv" ] || skip "no vectors in $V (set SNB_SHARED)"
	run "$BATS_TEST_DIRNAME/lwaftr-conformance.sh" -v "$1"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "lwaftr: the vectors have the 56 cases tested here" {
	[ -f "$V/cases.tsv" ] || skip "no vectors in $V (set SNB_SHARED)"
	[ "$("$BATS_TEST_DIRNAME/lwaftr-conformance.sh" --count)" -eq 56 ]
}

@test "lwaftr case 1: Regression test: make sure ntohl'd high-bit-set fragment IDs do not crash" {
	conformance 1
}

@test "lwaftr case 2: from-internet IPv4 packet found in the binding table." {
	conformance 2
}

@test "lwaftr case 3: from-internet IPv4 packet found in the binding table with vlan tag." {
	conformance 3
}

@test "lwaftr case 4: NDP: incoming NDP Neighbor Solicitation, secondary IP" {
	conformance 4
}

@test "lwaftr case 5: NDP: incoming NDP Neighbor Solicitation, non-lwAFTR IP" {
	conformance 5
}

@test "lwaftr case 6: ARP: incoming ARP request" {
	conformance 6
}

@test "lwaftr case 7: ARP: IPv4 but not eth addr of next IPv4 hop set, send an ARP request" {
	conformance 7
}

@test "lwaftr case 8: NDP: With receiving NA, next_hop6_mac not initially set" {
	conformance 8
}

@test "lwaftr case 9: IPv6 packet, next hop NA, packet, eth addr not set in configuration." {
	conformance 9
}

@test "lwaftr case 10: from-internet IPv4 fragmented packets found in the binding table, reversed." {
	conformance 10
}

@test "lwaftr case 11: traffic class mapping" {
	conformance 11
}

@test "lwaftr case 12: from-B4 IPv4 fragmentation (2)" {
	conformance 12
}

@test "lwaftr case 13: from-B4 IPv4 fragmentation (3)" {
	conformance 13
}

@test "lwaftr case 14: from-internet IPv4 packet found in the binding table, needs IPv6 fragmentation (3)." {
	conformance 14
}

@test "lwaftr case 15: IPv6 reassembly (to one packet)." {
	conformance 15
}

@test "lwaftr case 16: IPv6 reassembly (with max frags set to 1)." {
	conformance 16
}

@test "lwaftr case 17: IPv6 reassembly (followed by decapsulation)." {
	conformance 17
}

@test "lwaftr case 18: from-internet IPv4 packet found in the binding table, needs IPv6 fragmentation, DF set, ICMP-3,4, allow policy." {
	conformance 18
}

@test "lwaftr case 19: from-internet IPv4 packet NOT found in the binding table, no ICMP." {
	conformance 19
}

@test "lwaftr case 20: from-internet IPv4 packet NOT found in the binding table (ICMP-on-fail)." {
	conformance 20
}

@test "lwaftr case 21: from-internet IPv4 packet NOT found in the binding table (IPv4 matches, but port doesn't) (ICMP-on-fail)." {
	conformance 21
}

@test "lwaftr case 22: from-b4 to-internet IPv6 packet found in the binding table." {
	conformance 22
}

@test "lwaftr case 23: from-b4 to-internet IPv6 packet found in the binding table with vlan tag." {
	conformance 23
}

@test "lwaftr case 24: from-b4 to-internet IPv6 packet NOT found in the binding table, (IPv4 matches, but port doesn't), no ICMP" {
	conformance 24
}

@test "lwaftr case 25: from-b4 to-internet IPv6 packet NOT found in the binding table (ICMP-on-fail)" {
	conformance 25
}

@test "lwaftr case 26: from-to-b4 IPv6 packet, no hairpinning" {
	conformance 26
}

@test "lwaftr case 27: from-to-b4 IPv6 packet, with hairpinning" {
	conformance 27
}

@test "lwaftr case 28: from-to-b4 tunneled ICMPv4 ping, with hairpinning" {
	conformance 28
}

@test "lwaftr case 29: from-to-b4 tunneled ICMPv4 ping reply, with hairpinning" {
	conformance 29
}

@test "lwaftr case 30: from-to-b4 tunneled ICMPv4 ping reply, with hairpinning, port 0 not bound" {
	conformance 30
}

@test "lwaftr case 31: from-to-b4 TCP packet, with hairpinning, TTL 1" {
	conformance 31
}

@test "lwaftr case 32: from-to-b4 IPv6 packet, with hairpinning, with vlan tag" {
	conformance 32
}

@test "lwaftr case 33: from-b4 IPv6 packet, with hairpinning, to B4 with custom lwAFTR address" {
	conformance 33
}

@test "lwaftr case 34: from-b4 IPv6 packet, with hairpinning, different non-default lwAFTR addresses" {
	conformance 34
}

@test "lwaftr case 35: sending non-IPv4 traffic to the IPv4 interface" {
	conformance 35
}

@test "lwaftr case 36: from-internet bound IPv4 UDP packet" {
	conformance 36
}

@test "lwaftr case 37: unfragmented IPv4 UDP -> outgoing IPv6 UDP fragments" {
	conformance 37
}

@test "lwaftr case 38: IPv6 incoming UDP fragments -> outgoing IPv4 UDP fragments" {
	conformance 38
}

@test "lwaftr case 39: IPv4 incoming UDP fragments -> outgoing IPv6 UDP fragments" {
	conformance 39
}

@test "lwaftr case 40: incoming ICMPv4 echo request, matches binding table, bad checksum" {
	conformance 40
}

@test "lwaftr case 41: incoming ICMPv4 echo request, matches binding table, dropping ICMP" {
	conformance 41
}

@test "lwaftr case 42: incoming ICMPv4 echo reply, matches binding table" {
	conformance 42
}

@test "lwaftr case 43: incoming ICMPv4 3,4 'too big' notification, matches binding table" {
	conformance 43
}

@test "lwaftr case 44: incoming ICMPv6 2,0 'too big' notification, OPE from internet" {
	conformance 44
}

@test "lwaftr case 45: incoming ICMPv6 3,0 hop limit exceeded, OPE from internet" {
	conformance 45
}

@test "lwaftr case 46: incoming ICMPv6 4,3 parameter problem, OPE from internet" {
	conformance 46
}

@test "lwaftr case 47: incoming ICMPv6 3,0 hop limit exceeded, OPE hairpinned" {
	conformance 47
}

@test "lwaftr case 48: ingress-filter: from-internet (IPv4) packet found in binding table (DROP)" {
	conformance 48
}

@test "lwaftr case 49: ingress-filter: from-b4 (IPv6) packet found in binding table (ACCEPT)" {
	conformance 49
}

@test "lwaftr case 50: egress-filter: to-internet (IPv4) (ACCEPT)" {
	conformance 50
}

@test "lwaftr case 51: egress-filter: to-internet (IPv4) (DROP)" {
	conformance 51
}

@test "lwaftr case 52: egress-filter: to-b4 (IPv4) (DROP)" {
	conformance 52
}

@test "lwaftr case 53: ICMP Echo to AFTR (IPv4)" {
	conformance 53
}

@test "lwaftr case 54: ICMP Echo to AFTR (IPv4) + data" {
	conformance 54
}

@test "lwaftr case 55: ICMP Echo to AFTR (IPv6)" {
	conformance 55
}

@test "lwaftr case 56: ICMP Echo to AFTR (IPv6) + data" {
	conformance 56
}

@test "lwaftr: --describe gives ports v4 and v6, each in and out" {
	run snb-lwaftr --describe
	[ "$status" -eq 0 ]
	assert_output_has "in v4"
	assert_output_has "out v4"
	assert_output_has "in v6"
	assert_output_has "out v6"
}

@test "lwaftr: a bad configuration stops the stage with the file's name" {
	printf 'softwire-config {\n  no-such-field 1;\n}\n' > "$T/bad.conf"
	run snb-lwaftr "$T/bad.conf"
	[ "$status" -eq 2 ]
	assert_output_has "$T/bad.conf"
	run snb-lwaftr
	[ "$status" -eq 2 ]
	assert_output_has "usage: snb-lwaftr"
}

# A small valid configuration; $1 goes into external-interface, $2 into
# internal-interface, $3 into the binding table after its one softwire.
small_conf() {
	cat <<-EOF
	softwire-config {
	  external-interface {
	    $1
	  }
	  internal-interface {
	    $2
	  }
	  instance {
	    device test;
	    queue {
	      external-interface { ip 10.10.10.10; mac 12:12:12:12:12:12;
	        next-hop { mac 68:68:68:68:68:68; } }
	      internal-interface { ip 8:9:a:b:c:d:e:f; mac 22:22:22:22:22:22;
	        next-hop { ip 8:9:a:b:4:3:2:1; } }
	    }
	  }
	  binding-table {
	    softwire { ipv4 178.79.150.3; psid 4; b4-ipv6 127::1;
	      br-address 1e::af; port-set { psid-length 6; } }
	    $3
	  }
	}
	EOF
}

@test "lwaftr: a bad ingress-filter or egress-filter is reported at its value" {
	small_conf 'ingress-filter "ip and tcp port 80 and";' > "$T/c.conf"
	run snb-lwaftr "$T/c.conf"
	[ "$status" -eq 2 ]
	[ "$output" = "snb-lwaftr: $T/c.conf:3:20: bad ingress-filter 'ip and tcp port 80 and': can't parse filter expression: syntax error" ]
	small_conf '' "egress-filter 'ip6 and port 99999';" > "$T/c.conf"
	run snb-lwaftr "$T/c.conf"
	[ "$status" -eq 2 ]
	[ "$output" = "snb-lwaftr: $T/c.conf:6:19: bad egress-filter 'ip6 and port 99999': illegal port number 99999 > 65535" ]
}

@test "lwaftr: binding-table conflicts are reported at the later softwire" {
	small_conf '' '' 'softwire { ipv4 178.79.150.3; psid 4; b4-ipv6 127::2; br-address 1e::af; port-set { psid-length 6; } }' > "$T/c.conf"
	run snb-lwaftr "$T/c.conf"
	[ "$status" -eq 2 ]
	[ "$output" = "snb-lwaftr: $T/c.conf:20:5: softwire (178.79.150.3 psid 4) duplicates the one at 18:5" ]
	small_conf '' '' 'softwire { ipv4 178.79.150.3; psid 5; b4-ipv6 127::2; br-address 1e::af; port-set { psid-length 8; } }' > "$T/c.conf"
	run snb-lwaftr "$T/c.conf"
	[ "$status" -eq 2 ]
	[ "$output" = "snb-lwaftr: $T/c.conf:20:5: softwire (178.79.150.3 psid 5) shares its ipv4 with the one at 18:5 but not its port set (psid-length 6 there, 8 here; reserved-ports-bit-count 0 there, 0 here)" ]
}

@test "lwaftr: SIGHUP swaps in a good binding table, keeps the old on a bad file" {
	[ -f "$V/cases.tsv" ] || skip "no vectors in $V (set SNB_SHARED)"
	pkt="$V/tcp-frominet-bound.pcap"	# to 178.79.150.233 port 80
	cp "$V/icmp_on_fail.conf" "$T/lw.conf"
	chmod u+w "$T/lw.conf"
	# pcap-read takes records 64 at a time: feed it 64 per step.
	for _ in $(seq 64); do tail -c +25 "$pkt"; done > "$T/64"
	mkfifo "$T/in4"
	snb-run -n lwhup "pcap-read $T/in4 | [v4] lw: lwaftr $T/lw.conf [v4] | \
	    sink ; pcap-read $V/empty.pcap | [v6] @lw [v6] | pcap-write \
	    $T/out6.pcap" 2> "$T/err" 3>&- &
	pid=$!
	# read-write: an open that waits for no reader (a graph that fails
	# before pcap-read opens the FIFO fails the test instead of hanging it)
	exec 7<> "$T/in4"
	head -c 24 "$pkt" >&7
	cat "$T/64" >&7
	wait_for eval '[ "$(npackets "$T/out6.pcap")" -eq 64 ]'
	for p in $(children_of $pid); do
		[ "$(cat /proc/$p/comm)" = snb-lwaftr ] && lw=$p
	done
	# That softwire's B4 moves; the next packets must follow it.
	sed -i 's/127:2:3:4:5:6:7:128/127:2:3:4:5:6:7:999/' "$T/lw.conf"
	kill -HUP "$lw"
	wait_for grep -q "binding table reloaded" "$T/err"
	cat "$T/64" >&7
	wait_for eval '[ "$(npackets "$T/out6.pcap")" -eq 128 ]'
	# A broken file changes nothing.
	echo 'softwire-config {' > "$T/lw.conf"
	kill -HUP "$lw"
	wait_for grep -q "reload failed" "$T/err"
	cat "$T/64" >&7
	exec 7>&-
	wait "$pid"
	cat "$T/err"
	tcpdump -r "$T/out6.pcap" -nn 2>/dev/null | awk '{ print $5 }' |
	    uniq -c > "$T/dsts"
	cat "$T/dsts"
	[ "$(cat "$T/dsts" | tr -s ' ')" = "$(printf ' 64 127:2:3:4:5:6:7:128:\n 128 127:2:3:4:5:6:7:999:')" ]
	grep -q "$T/lw.conf" "$T/err"
}

@test "lwaftr: outputs short of room (rings of 4 slots) lose nothing and change nothing" {
	S="$SNB_SHARED/bench/lwaftr"
	[ -f "$S/bench.conf" ] || skip "no bench data in $S (set SNB_SHARED)"
	# With 4 slots the outputs never hold a whole burst's worst case: the
	# packets after the first that would not fit are taken one by one.
	for slots in 512 4; do
		run snb-run --slots "$slots" "pcap-read --loop 3000 $S/ipv4-0550.pcap |
		    [v4] lw: lwaftr --counters-out $T/c$slots $S/bench.conf [v6] |
		    pcap-write $T/six$slots.pcap ;
		    pcap-read --loop 3000 $S/ipv6-0550.pcap | [v6] @lw [v4] |
		    pcap-write $T/four$slots.pcap"
		echo "$output"
		[ "$status" -eq 0 ]
		for f in six four; do
			tcpdump -nn -xx -r "$T/$f$slots.pcap" 2>/dev/null | awk '/^[0-9]/{if(p)print p;p="";next}{p=p $0}END{print p}' | sort > "$T/$f$slots.hex"
		done
	done
	[ "$(wc -l < "$T/six4.hex")" -eq 3000 ]
	[ "$(wc -l < "$T/four4.hex")" -eq 3000 ]
	cmp "$T/six512.hex" "$T/six4.hex"
	cmp "$T/four512.hex" "$T/four4.hex"
	cmp "$T/c512" "$T/c4"
	! grep drop "$T/c4" || false
}
