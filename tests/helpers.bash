# Common set-up for the bats tests.  tests/run puts the build's bin/ and
# tests/ directories first in PATH and sets SNB_BUILD.
: "${SNB_BUILD:=$(cd "$BATS_TEST_DIRNAME/.." && pwd)/build}"
PATH="$SNB_BUILD/bin:$SNB_BUILD/tests:$PATH"
# Stress counts are divided by this in the sanitizer run.
: "${SNB_TEST_SCALE:=1}"

setup() {
	export SNB_RUN_DIR="/dev/shm/snb-bats-$$-$BATS_TEST_NUMBER"
	T="$BATS_TEST_TMPDIR"
}

teardown() {
	# Every test must leave the run directory empty.
	if [ -d "$SNB_RUN_DIR" ]; then
		left=$(ls -A "$SNB_RUN_DIR")
		rm -rf "$SNB_RUN_DIR"
		[ -z "$left" ] || { echo "left in run dir: $left"; return 1; }
	fi
}

# Fail with a message unless the output contains $1.
assert_output_has() {
	case "$output" in
	*"$1"*) ;;
	*) echo "expected output to contain: $1"; echo "got: $output"; return 1 ;;
	esac
}

# pids of snb-run's children
children_of() {
	ps -o pid= --ppid "$1" 2>/dev/null | tr -d ' '
}

# Total CPU seconds (utime+stime) of the given pids, in clock ticks.
cpu_ticks() {
	t=0
	for p in "$@"; do
		s=$(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0)
		t=$((t + s))
	done
	echo "$t"
}

# Wait until graph $1 has $2 stages running.
wait_stages() {
	for i in $(seq 100); do
		n=$(snb-ps --json "$1" 2>/dev/null | jq '[.graphs[0].stages[] | select(.alive)] | length' 2>/dev/null || echo 0)
		[ "$n" = "$2" ] && return 0
		sleep 0.1
	done
	return 1
}

# The pid of stage $2 of graph $1 while it is alive (empty otherwise).
stage_pid() {
	snb-ps --json "$1" 2>/dev/null |
	    jq ".graphs[0].stages[] | select(.label==\"$2\" and .alive) | .pid" 2>/dev/null
}

# Wait until another process than $3 serves stage $2 of graph $1 (a
# restart or a swap); print its pid.
wait_replaced() {
	for i in $(seq 200); do
		p=$(stage_pid "$1" "$2")
		[ -n "$p" ] && [ "$p" != "$3" ] && { echo "$p"; return 0; }
		sleep 0.05
	done
	echo "stage $2 of $1 was not replaced" >&2
	return 1
}

# Wait until stage $2 of graph $1 counted at least $3 packets, then a little
# longer, so that duplicates, if any, arrive before the graph is stopped.
wait_count() {
	for i in $(seq 600); do
		n=$(snb-top --json -i 0.05 "$1" 2>/dev/null |
		    jq ".graphs[0].stages[] | select(.label==\"$2\") | .counters.packets" 2>/dev/null)
		if [ -n "$n" ] && [ "$n" -ge "$3" ]; then
			sleep 0.3
			return 0
		fi
		sleep 0.05
	done
	echo "stage $2 of $1 did not count $3 packets (last: $n)"
	return 1
}

# wait_for COMMAND...: run it every 0.1 s until it succeeds, for up to
# $WAIT_FOR_S seconds (20 by default); fail if it never does.
wait_for() {
	for _ in $(seq $((${WAIT_FOR_S:-20} * 10))); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}

# The packets in pcap $1 (0 while the file is not there yet).
npackets() {
	tcpdump -r "$1" 2>/dev/null | wc -l
}
