#!/usr/bin/env bats
# Every tool answers --help and has a man page that renders cleanly.
load helpers

@test "every binary answers --help with its usage and exit 0" {
	for b in "$SNB_BUILD"/bin/snb-*; do
		run "$b" --help
		echo "$b: $output"
		[ "$status" -eq 0 ]
		assert_output_has "usage: $(basename "$b")"
	done
}

@test "every binary has a man page, and snb(7) exists" {
	[ -f "$BATS_TEST_DIRNAME/../man/snb.7" ]
	for b in "$SNB_BUILD"/bin/snb-*; do
		n=$(basename "$b")
		[ -f "$BATS_TEST_DIRNAME/../man/$n.1" ] || { echo "no man page for $n"; return 1; }
	done
}

@test "man pages render without warnings" {
	command -v mandoc >/dev/null || skip "mandoc not installed"
	for m in "$BATS_TEST_DIRNAME"/../man/*.[157]; do
		out=$(mandoc -T lint -W warning "$m" 2>&1) || true
		[ -z "$out" ] || { echo "$out"; return 1; }
	done
}

@test "apps describe their ports" {
	run snb-filter --describe
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'snb-describe 1\napp filter\nin in required\nout out required\nout reject\nsummary %s' "$(snb-filter --help | sed -n 2p)")" ]
}

@test "wherever testpmd is shown, it is told what a loss-free run needs" {
	cd "$BATS_TEST_DIRNAME/.."
	n=0
	for f in README.md man/*.[17] examples/*.sh; do
		grep -q 'dpdk-testpmd' "$f" || continue
		n=$((n + 1))
		# io forwarding that retries a full queue, and for long enough.
		grep -q 'set fwd io retry' "$f" || { echo "$f: no 'set fwd io retry'"; return 1; }
		grep -q 'set burst tx delay [0-9]* retry [0-9]*' "$f" ||
		    { echo "$f: no 'set burst tx delay N retry N'"; return 1; }
	done
	[ "$n" -ge 5 ]
}

@test "man pages state what the tools do: snb-source refuses a --size its ring cannot hold" {
	! grep -q '^\.Sh BUGS' "$BATS_TEST_DIRNAME/../man/snb-source.1" || false
	grep -q 'larger than the capacity of the output ring' "$BATS_TEST_DIRNAME/../man/snb-source.1"
	run snb-run -c --capacity 1000 'source --size 1001 | sink'
	[ "$status" -eq 2 ]
	assert_output_has "snb-source: --size 1001 does not fit the ring's 1000-byte slots"
	run snb-run -c --capacity 1000 'source --size 1000 | sink'
	[ "$status" -eq 0 ]
}
