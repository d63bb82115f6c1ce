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

@test "examples/lb.sh" {
	run sh examples/lb.sh "$SNB_BUILD"
	echo "$output" | tail -5
	[ "$status" -eq 0 ]
	assert_output_has "the same packets as tcpdump's selection"
}

@test "examples/live-swap.sh" {
	N=$((8000000 / SNB_TEST_SCALE)) run sh examples/live-swap.sh "$SNB_BUILD"
	echo "$output" | tail -5
	[ "$status" -eq 0 ]
	assert_output_has "ok: swapped f"
	assert_output_has " 0 sequence errors, 0 lost"
}
