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
	for m in "$BATS_TEST_DIRNAME"/../man/*.[17]; do
		out=$(mandoc -T lint -W warning "$m" 2>&1) || true
		[ -z "$out" ] || { echo "$out"; return 1; }
	done
}

@test "apps describe their ports" {
	run snb-filter --describe
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'snb-describe 1\napp filter\nin in required\nout out required\nout reject')" ]
}
