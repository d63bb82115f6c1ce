#!/usr/bin/env bats
# The examples/ scripts stay runnable: each runs against this build and
# must succeed (they check their own results and exit non-zero otherwise).
load helpers

@test "examples/demo.sh (make demo)" {
	run sh examples/demo.sh "$SNB_BUILD"
	echo "$output" | tail -5
	[ "$status" -eq 0 ]
	assert_output_has "identical to tcpdump's own selection"
}

@test "examples/lb.sh: 3 copies of a filter give tcpdump's selection" {
	run sh examples/lb.sh "$SNB_BUILD" 3
	echo "$output" | tail -5
	[ "$status" -eq 0 ]
	assert_output_has "the same packets as tcpdump's selection"
}

@test "examples/lwaftr-scale.sh: lwaftr copies behind lb --key softwire keep each softwire, its fragments and hairpins on one copy" {
	/usr/bin/python3 -c 'import scapy' 2>/dev/null || {
		[ "${CI:-}" != true ] || { echo "CI: python3-scapy is missing"; return 1; }
		skip "python3-scapy is not installed"
	}
	run sh examples/lwaftr-scale.sh "$SNB_BUILD" 3
	echo "$output" | tail -8
	[ "$status" -eq 0 ]
	assert_output_has "every softwire's traffic through one copy, output identical to one lwaftr's"
	# Each of the three copies reassembled and hairpinned some of it.
	[ "$(echo "$output" | grep -c '^== w[1-3]: hairpin-ipv4-packets [1-9].*in-ipv4-frag-reassembled [1-9].*in-ipv6-frag-reassembled [1-9]')" -eq 3 ]
}

@test "examples/ecmp.sh: an anycast service on three hosts behind a BIRD router's ECMP; a host's graph stops and comes back" {
	[ "$(id -u)" -eq 0 ] || skip "needs root"
	case "$SNB_BUILD" in
	*asan*) skip "tests/ecmp.bats runs the same in the sanitizer build" ;;
	esac
	local t
	for t in bird birdc ethtool jq /usr/bin/python3; do
		command -v "$t" >/dev/null && continue
		[ "${CI:-}" != true ] || { echo "CI: $t is missing"; return 1; }
		skip "$t is not installed"
	done
	# BFD every 200 ms, down after 5 missed, as in tests/ecmp.bats: the
	# machine is shared.
	ECMP_BFD_MS=200 ECMP_BFD_MULT=5 run timeout 120 sh examples/ecmp.sh "$SNB_BUILD" 3
	echo "$output" | tail -20
	[ "$status" -eq 0 ]
	assert_output_has "Error: BFD session down"
	assert_output_has "every flow answered; host 1's flows moved to the others and came back to it"
	[ "$(echo "$output" | grep -c '300 of 300 flows answered')" -eq 3 ]
	echo "$output" | grep -q "300 of 300 flows answered; per host: 0 [1-9][0-9]* [1-9]"
}

@test "examples/new-app.sh: the model app of snb(7), built outside the tree" {
	run sh examples/new-app.sh "$SNB_BUILD"
	echo "$output" | tail -5
	[ "$status" -eq 0 ]
	assert_output_has "every 10th packet sampled, the rest passed on"
}

@test "examples/live-swap.sh" {
	N=$((8000000 / SNB_TEST_SCALE)) run sh examples/live-swap.sh "$SNB_BUILD"
	echo "$output" | tail -5
	[ "$status" -eq 0 ]
	assert_output_has "ok: swapped f"
	assert_output_has " 0 sequence errors, 0 lost"
}

@test "examples/two-vm-switch.sh: two QEMU guests ping through snb-vhost and snb-bridge" {
	[ "$(id -u)" -eq 0 ] || skip "needs root"
	case "$SNB_BUILD" in
	*asan*) skip "the guests run static, non-sanitized builds (tested with build)" ;;
	esac
	local t
	for t in qemu-system-x86_64 cpio python3 /bin/busybox; do
		command -v "$t" >/dev/null && continue
		[ "${CI:-}" != true ] || { echo "CI: $t is missing"; return 1; }
		skip "$t is not installed"
	done
	run sh examples/two-vm-switch.sh "$SNB_BUILD"
	echo "$output" | tail -25
	[ "$status" -eq 0 ]
	assert_output_has "vm1: PING-OK"
	assert_output_has " 5 packets received"
	# The bridge learned exactly the two guests' addresses.
	echo "$output" | grep -Eq "learned=2([[:space:]]|$)"
	echo "$output" | grep -Eq "fdb-entries=2([[:space:]]|$)"
	echo "$output" | grep -q "rx\[vm2\]=[1-9]"
}

@test "examples/vhost-testpmd.sh: numbered packets through testpmd and back" {
	[ "$(id -u)" -eq 0 ] || skip "needs root"
	if ! command -v dpdk-testpmd >/dev/null; then
		[ "${CI:-}" != true ] || { echo "CI: dpdk-testpmd is missing"; return 1; }
		skip "dpdk-testpmd is not installed"
	fi
	N=$((200000 / SNB_TEST_SCALE))
	run sh examples/vhost-testpmd.sh "$SNB_BUILD" "$N"
	echo "$output" | tail -12
	[ "$status" -eq 0 ]
	echo "$output" | grep -q "^sink: $N packets, .* 0 sequence errors, 0 lost"
	echo "$output" | grep -q "RX-packets: $N .*RX-dropped: 0 "
	echo "$output" | grep -q "TX-packets: $N .*TX-dropped: 0 "
}

@test "examples/vpws.sh: two sites' customer hosts ping through a GRE pseudowire in ESP" {
	[ "$(id -u)" -eq 0 ] || skip "needs root"
	run sh examples/vpws.sh "$SNB_BUILD"
	echo "$output" | tail -12
	[ "$status" -eq 0 ]
	assert_output_has "== all pings answered, through GRE in ESP both ways"
	[ "$(echo "$output" | grep -c ' 3 received, 0% packet loss')" -eq 2 ]
	# Each site encrypted and decrypted what it carried, and dropped
	# nothing for a wrong key, SPI or sequence number.
	for s in a b; do
		echo "$output" | grep "^vpws-$s e: encrypted=[1-9][0-9]* decrypted=[1-9]" |
		    grep -q "drop-bad-spi=0 drop-replay=0 drop-too-old=0 drop-icv=0 "
		echo "$output" | grep "^vpws-$s p: encap=[1-9][0-9]* decap=[1-9]" |
		    grep -q "drop-wrong-key=0 "
	done
}

@test "examples/vpls.sh: three sites' customer hosts ping each other through bridges and L2TPv3 pseudowires" {
	[ "$(id -u)" -eq 0 ] || skip "needs root"
	run sh examples/vpls.sh "$SNB_BUILD"
	echo "$output" | tail -14
	[ "$status" -eq 0 ]
	assert_output_has "== all pings answered, every site to every site"
	[ "$(echo "$output" | grep -c ' 3 received, 0% packet loss')" -eq 6 ]
	# Every bridge knows the three hosts, and every pseudowire carried
	# frames both ways with the right cookies.
	for s in a b c; do
		echo "$output" | grep "^vpls-$s br: " | grep -q " fdb-entries=3 "
		echo "$output" | grep "^vpls-$s p: " | grep -q " drop-wrong-cookie=0 "
	done
	[ "$(echo "$output" | grep -Eo 'decap\[site-[abc]\]=[1-9][0-9]*' | wc -l)" -eq 6 ]
}
