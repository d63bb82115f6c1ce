#!/usr/bin/env bats
# Restart and swap of the edge apps: a restarted or swapped snb-source goes
# on with the next sequence number and the remaining count, a restarted or
# swapped snb-sink goes on with its totals, so that every packet reaches
# the sink exactly once however often either end is replaced or killed
# (issue 11, item 18).  And snb-sink --latency.  No test times anything:
# rates only make it likely that the faults land mid-stream, and every
# wait is bounded.
load helpers

# SIGKILL stage $2 of graph $1 and wait until the launcher restarted it.
kill_stage() {
	old=$(stage_pid "$1" "$2")
	[ -n "$old" ]
	kill -KILL "$old"
	wait_replaced "$1" "$2" "$old" > /dev/null
}

# The sink's last summary line (a detached sink prints one each time) must
# say exactly $1 packets, no sequence error and nothing lost.
assert_exact() {
	last=$(grep '^sink: [0-9]* packets' "$T/err" | tail -1)
	echo "last summary: $last"
	case "$last" in
	"sink: $1 packets, "*" 0 sequence errors, 0 lost") ;;
	*) cat "$T/err"; return 1 ;;
	esac
}

# Start graph $1 (name) with source and sink of N packets at rate R;
# $2 = extra snb-run options, $3 = source words, $4 = sink words.
start_graph() {
	timeout 120 snb-run -n "$1" $2 "src: $3 | s: $4" 2> "$T/err" 3>&- &
	gpid=$!
	wait_stages "$1" 2
}

stop_graph() {
	snb-ctl "$1" stop
	st=0; wait "$gpid" || st=$?
	[ "$st" -eq 0 ] || { cat "$T/err"; echo "snb-run: status $st"; return 1; }
}

N=$((200000 / SNB_TEST_SCALE))
R=$((100000 / SNB_TEST_SCALE))

@test "source: snb-ctl restart goes on with the next sequence number and the remaining count" {
	start_graph rsrc "" "source --seq --count $N --rate $R --hold" "sink --check-seq --summary"
	for i in 1 2 3; do
		sleep 0.3
		snb-ctl rsrc restart src | grep -q '^ok: restarted src'
	done
	wait_count rsrc s "$N"
	stop_graph rsrc
	assert_exact "$N"
}

@test "source: SIGKILL under --restart=on-failure, every packet once" {
	start_graph ksrc --restart=on-failure "source --seq --count $N --rate $R --hold" "sink --check-seq --summary"
	for i in 1 2 3 4 5; do
		sleep 0.2
		kill_stage ksrc src
	done
	wait_count ksrc s "$N"
	stop_graph ksrc
	[ "$(grep -c 'restarting src' "$T/err")" -eq 5 ]
	assert_exact "$N"
}

@test "source: random sizes go on as if it had never been killed" {
	M=$((50000 / SNB_TEST_SCALE))
	snb-run "source --seq --count $M --size 60-1500 --seed 9 | sink --summary" 2> "$T/ref"
	ref=$(sed -n 's/^sink: [0-9]* packets, \([0-9]*\) bytes.*/\1/p' "$T/ref")
	[ -n "$ref" ]
	start_graph ssrc --restart=on-failure "source --seq --count $M --size 60-1500 --seed 9 --rate $((M / 2)) --hold" "sink --check-seq --summary"
	for i in 1 2 3 4 5; do
		sleep 0.2
		kill_stage ssrc src
	done
	wait_count ssrc s "$M"
	stop_graph ssrc
	assert_exact "$M"
	grep -q "^sink: $M packets, $ref bytes" "$T/err"
}

@test "source: swaps to the same source (other rates) go on with the stream" {
	start_graph wsrc "" "source --seq --count $N --rate $R --hold" "sink --check-seq --summary"
	sleep 0.3
	snb-ctl wsrc swap src "source --seq --count $N --rate $((R * 2)) --hold" | grep -q '^ok: swapped src'
	sleep 0.3
	snb-ctl wsrc swap src "source --seq --count $N --rate $R --hold" | grep -q '^ok: swapped src'
	wait_count wsrc s "$N"
	stop_graph wsrc
	assert_exact "$N"
}

@test "source: a swap to a source without --hold ends the stream at the count; sink --expect passes" {
	timeout 120 snb-run -n esrc "src: source --seq --count $N --rate $R --hold | s: sink --check-seq --expect $N --summary" 2> "$T/err" 3>&- &
	gpid=$!
	wait_stages esrc 2
	wait_count esrc s "$N"
	snb-ctl esrc swap src "source --seq --count $N" | grep -q '^ok: swapped src'
	st=0; wait "$gpid" || st=$?
	cat "$T/err"
	[ "$st" -eq 0 ]
	assert_exact "$N"
}

@test "sink: snb-ctl restart keeps its totals and its place in the sequence" {
	start_graph rsnk "" "source --seq --count $N --rate $R --hold" "sink --check-seq --summary"
	for i in 1 2 3; do
		sleep 0.3
		snb-ctl rsnk restart s | grep -q '^ok: restarted s'
	done
	wait_count rsnk s "$N"
	stop_graph rsnk
	assert_exact "$N"
}

@test "sink: 10 SIGKILLs under --restart=on-failure, every packet counted once" {
	start_graph ksnk --restart=on-failure "source --seq --count $N --rate $R --hold" "sink --check-seq --summary"
	for i in $(seq 10); do
		sleep 0.1
		kill_stage ksnk s
	done
	wait_count ksnk s "$N"
	stop_graph ksnk
	[ "$(grep -c 'restarting s' "$T/err")" -eq 10 ]
	assert_exact "$N"
}

@test "sink: killed just before its commit or just before its release, it counts every packet once" {
	command -v gdb > /dev/null || skip "gdb not installed"
	# A stream long enough for both windows: gdb attaching to an ASan
	# build on a busy machine can take seconds, and a sink whose stream
	# has ended never reaches the second breakpoint.
	M=$((8 * N))
	start_graph gsnk --restart=on-failure "source --seq --count $M --rate $R --hold" "sink --check-seq --summary"
	# The two windows of a breath: counted but not committed (the
	# successor counts the burst again), committed but not released (the
	# successor releases it unread).  gdb stops the sink there and kills it.
	for at in app_state_commit ring_release; do
		sleep 0.2
		# gdb's continue sometimes ends in "Quit" without stopping
		# there (the sink then runs on): try again.
		for try in 1 2 3 4 5; do
			for i in $(seq 100); do
				p=$(stage_pid gsnk s)
				[ -n "$p" ] && break
				sleep 0.05
			done
			timeout 60 gdb -p "$p" -batch -ex "break $at" -ex continue -ex "bt 2" -ex kill < /dev/null > "$T/gdb" 2>&1 || true
			grep -q 'in sink_breathe' "$T/gdb" && break
			cat "$T/gdb" >> "$T/gdb-tries"
		done
		cat "$T/gdb-tries" 2>/dev/null || true
		cat "$T/gdb"
		grep -q 'in sink_breathe' "$T/gdb"
		for i in $(seq 200); do
			q=$(stage_pid gsnk s)
			[ -n "$q" ] && [ "$q" != "$p" ] && break
			sleep 0.05
		done
	done
	wait_count gsnk s "$M"
	skipped=$(snb-top --json -i 0.05 gsnk | jq '.graphs[0].stages[] | select(.label=="s") | .counters["resume-skipped"]')
	stop_graph gsnk
	assert_exact "$M"
	echo "resume-skipped: $skipped"
	[ "$skipped" -gt 0 ]
}

@test "sink: swaps go on with the totals; a --check-seq sink after one without starts checking where it takes over" {
	start_graph wsnk "" "source --seq --count $N --rate $R --hold" "sink --check-seq --summary"
	sleep 0.3
	snb-ctl wsnk swap s "sink --check-seq --summary" | grep -q '^ok: swapped s'
	sleep 0.3
	snb-ctl wsnk swap s "sink --summary" | grep -q '^ok: swapped s'
	sleep 0.3
	snb-ctl wsnk swap s "sink --check-seq --summary" | grep -q '^ok: swapped s'
	wait_count wsnk s "$N"
	stop_graph wsnk
	assert_exact "$N"
}

@test "sink: a sink fed by more links than its hand-over state holds is refused" {
	g="s: sink"
	for i in $(seq 25); do
		g="$g ; source --count 1 | @s"
	done
	run timeout 60 snb-run "$g"
	[ "$status" -ne 0 ]
	assert_output_has "25 input links: at most 24"
}

@test "sink --latency: percentiles of stamped packets, in order; unstamped ones are not sampled" {
	C=$((20000 / SNB_TEST_SCALE))
	run timeout 60 snb-run "source --count $C --rate 20k --stamp | filter udp | sink --latency --latency-skip 100"
	[ "$status" -eq 0 ]
	line=$(echo "$output" | grep '^sink: latency ')
	echo "$line"
	set -- $(echo "$line" | sed -n 's/^sink: latency \([0-9]*\) packets: p50 \([0-9.]*\) us, p99 \([0-9.]*\) us, p99.9 \([0-9.]*\) us, max \([0-9.]*\) us$/\1 \2 \3 \4 \5/p')
	[ "$1" -eq $((C - 100)) ]
	echo "$2 $3 $4 $5" | awk '{ exit !($1 > 0 && $1 <= $2 && $2 <= $3 && $3 <= $4) }'
	run timeout 60 snb-run "source --count 100 | sink --latency"
	[ "$status" -eq 0 ]
	assert_output_has "sink: latency 0 packets"
}
