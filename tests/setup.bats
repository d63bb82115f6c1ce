#!/usr/bin/env bats
# make demo needs only the demo's packages; make check installs the rest
# (tools/deps.sh, its sets nested demo < build < check).
load helpers

ROOT="$BATS_TEST_DIRNAME/.."

@test "deps.sh: the demo's set is the compiler, libpcap, libbsd and tcpdump" {
	cd "$ROOT"
	demo=$(sh tools/deps.sh --list demo | sort)
	[ "$demo" = "$(printf '%s\n' gcc libbsd-dev libc6-dev libpcap-dev make tcpdump | sort)" ]
	check=$(sh tools/deps.sh --list check)
	# The sets nest, and the test peers are in check only.
	for p in $demo $(sh tools/deps.sh --list build); do
		echo "$check" | grep -qx "$p" || { echo "check lacks $p"; return 1; }
	done
	for p in bats tshark dpdk-dev qemu-system-x86 jq libxdp-dev; do
		echo "$check" | grep -qx "$p"
		! echo "$demo" | grep -qx "$p" || false
	done
	[ "$(sh tools/deps.sh --list)" = "$check" ]
	run sh tools/deps.sh --list nosuchset
	[ "$status" -eq 2 ]
	assert_output_has "deps: unknown set 'nosuchset'"
}

@test "make demo asks for the demo's set and builds nothing that needs more" {
	cd "$ROOT"
	run make -n demo BUILD="$T/b"
	[ "$status" -eq 0 ]
	assert_output_has "tools/deps.sh demo"
	! echo "$output" | grep -q "deps.sh check\|deps.sh$" || false
	# No libxdp, libbpf (snb-nic) and no test or bench program but mkpcap.
	! echo "$output" | grep -q -- "-lxdp\|-lbpf\|snb-nic\|bench/\|test_" || false
	# make check asks for everything.
	run make -n check
	assert_output_has "tools/deps.sh check"
}

@test "make demo's programs are all the demo needs" {
	cd "$ROOT"
	# Only the system's PATH: a program missing from the demo's build is
	# not found in another build.
	run env PATH=/usr/sbin:/usr/bin:/sbin:/bin make -s --no-print-directory demo BUILD="$T/b" CFLAGS="-O1"
	echo "$output"
	[ "$status" -eq 0 ]
	assert_output_has "identical to tcpdump's own selection"
	[ "$(ls "$T/b/bin" | sort | tr '\n' ' ')" = "snb-filter snb-join snb-pcap-read snb-pcap-write snb-run snb-sink snb-source snb-tee " ]
}
