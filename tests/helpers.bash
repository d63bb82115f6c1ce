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
	local st=0 left
	# Nothing of a test may outlive it, failed or not: its graphs are
	# stopped (and that is an error if it passed), its run directory
	# must be empty.
	stop_snb || st=1
	if [ -d "$SNB_RUN_DIR" ]; then
		left=$(ls -A "$SNB_RUN_DIR")
		rm -rf "$SNB_RUN_DIR"
		[ -z "$left" ] || { echo "left in run dir: $left"; st=1; }
	fi
	return $st
}

# The snb processes of this test: every snb-* program (snb-run, its
# stages, snb-ctl, snb-top ...) whose environment holds this test's
# SNB_RUN_DIR, and any process whose words name a file in it (a stage
# started by a script app).  One pid a line.
snb_procs() {
	local f p c
	[ -n "${SNB_RUN_DIR:-}" ] || return 0
	# Two greps over /proc, not a grep per process: this runs after every
	# test (a loop of ~100 greps took ~1 s, minutes over a file).
	{
		for f in $(grep -lszxF "SNB_RUN_DIR=$SNB_RUN_DIR" \
		    /proc/[0-9]*/environ); do
			p=${f#/proc/}; p=${p%/environ}
			c=""
			{ read -r c < "/proc/$p/comm"; } 2>/dev/null || continue
			case "$c" in snb-*) echo "$p" ;; esac
		done
		for f in $(grep -lszF "$SNB_RUN_DIR/" /proc/[0-9]*/cmdline); do
			p=${f#/proc/}; p=${p%/cmdline}
			c=""
			{ read -r c < "/proc/$p/comm"; } 2>/dev/null || continue
			case "$c" in
			snb-*)	echo "$p" ;;
			*)	grep -qzF "=$SNB_RUN_DIR/" "$f" 2>/dev/null &&
				    echo "$p" ;;
			esac
		done
	} | sort -un
}

# stop_snb: stop what this test left running (see snb_procs): every
# snb-run is sent SIGTERM (it stops its graph and removes its directory),
# then, after up to 5 s, whatever is left is killed.  Fails, naming them,
# if there were any.
stop_snb() {
	local procs p i runs
	# A graph a test stopped a moment ago may still be leaving.
	for i in $(seq 10); do
		procs=$(snb_procs)
		[ -n "$procs" ] || return 0
		sleep 0.1
	done
	echo "left running:"
	for p in $procs; do ps -o pid=,args= -p "$p" | cut -c1-200; done
	runs=$(for p in $procs; do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = snb-run ] && echo "$p"
	done)
	[ -z "$runs" ] || kill -TERM $runs 2>/dev/null
	for i in $(seq 50); do
		procs=$(snb_procs)
		[ -n "$procs" ] || break
		sleep 0.1
	done
	[ -z "$procs" ] || kill -KILL $procs 2>/dev/null
	return 1
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

# stage_value GRAPH LABEL [FIELD]: a field of stage LABEL of a running
# graph, from snb-top --json: a counter's name (FIELD "packets", the
# default, is .counters.packets), or a jq path into the stage's object
# (".packets_in", ".busy_ns").  Empty when the graph, stage or field is
# not there.
stage_value() {
	local f=${3:-packets}
	case "$f" in
	.*) ;;
	*) f=".counters[\"$f\"]" ;;
	esac
	snb-top --json --once -i 0.01 "$1" 2>/dev/null |
	    jq -r --arg l "$2" ".graphs[0].stages[] | select(.label == \$l) | $f // empty" 2>/dev/null
}

# wait_count GRAPH LABEL N [FIELD]: wait (up to 60 s, $WAIT_FOR_S) until
# FIELD (see stage_value; counter "packets" by default) of stage LABEL
# of GRAPH reaches at least N, then a little longer, so that duplicates,
# if any, arrive before the graph is stopped.
wait_count() {
	local n="" i
	for i in $(seq $((${WAIT_FOR_S:-60} * 10))); do
		n=$(stage_value "$1" "$2" "${4:-packets}")
		if [ -n "$n" ] && [ "$n" -ge "$3" ] 2>/dev/null; then
			sleep 0.3
			return 0
		fi
		sleep 0.05
	done
	echo "stage $2 of $1 did not count $3 ${4:-packets} (last: $n)"
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

# npackets PCAP [EXPRESSION...]: the packets in PCAP (that match the
# tcpdump expression, if one is given); 0 while the file is not there yet.
npackets() {
	local f=$1
	shift
	tcpdump -nr "$f" "$@" 2>/dev/null | wc -l
}

# After snb-run has exited: none of the test's processes is left (a stage
# told to leave, a describing app killed with snb-run may take a moment),
# nor a graph's directory.
no_snb_procs() {
	[ -z "$(snb_procs)" ]
}
nothing_left() {
	WAIT_FOR_S=5 wait_for no_snb_procs ||
	    { snb_procs | xargs -r ps -o pid=,args= -p; return 1; }
	[ -z "$(ls -A "$SNB_RUN_DIR" 2>/dev/null)" ]
}

# exited PID: the process has exited (a zombie not yet waited for too).
exited() {
	local s
	s=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 0
	[ -z "$s" ] || [ "$s" = Z ]
}

# bg_wait PID: wait up to 20 s for the background snb-run PID (started
# without timeout(1), which would catch its signals for it); its status
# in $st.
bg_wait() {
	WAIT_FOR_S=20 wait_for exited "$1" || { echo "$1 still running"; return 1; }
	st=0
	wait "$1" || st=$?
}

# signal_status SIG: 128 + its number, as snb-run(1) says.
signal_status() {
	echo $((128 + $(kill -l "$1")))
}
