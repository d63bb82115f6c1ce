#!/usr/bin/env bats
# Live operation tried as an operator would, under faults: what went
# wrong when swaps, restarts and failures meet.  Each graph runs in the
# background without timeout(1) (bg_wait bounds it); every wait is on a
# condition.
load helpers

@test "a swap or restart after a long run ends a row of quick failures: --max-restarts counts failures in a row" {
	# --max-restarts 1: a second quick failure in a row stops the graph.
	snb-run -n quick --restart=on-failure --max-restarts 1 'source --rate 20k --seq | f: filter udp | sink --check-seq --allow-loss' 2> "$T/err" 3>&- &
	pid=$!
	wait_stages quick 3
	for op in swap restart swap; do
		# Each process of f runs long enough not to be quick (250 ms):
		# a sleep only makes sure of a least age, it asserts nothing.
		sleep 0.5
		if [ $op = swap ]; then
			run timeout 20 snb-ctl quick swap f 'filter ip'
		else
			run timeout 20 snb-ctl quick restart f
		fi
		echo "$output"
		[ "$status" -eq 0 ]
		new=${output##*-> }
		new=${new%%,*}
		# Its successor fails at once: one quick failure, restarted.
		kill -KILL "$new"
		wait_replaced quick f "$new" > /dev/null || { cat "$T/err"; false; }
	done
	cat "$T/err"
	! grep -q "stopping the graph" "$T/err" || false
	[ "$(grep -c "restarting f in 100 ms" "$T/err")" -eq 3 ]
	snb-ctl quick stop
	bg_wait $pid
	[ "$st" -eq 0 ]
	nothing_left
}

@test "a stage downstream of a failure that is not restarted, killed as it happens, is restarted and still gets what was delivered" {
	# 100 whole records, then a torn one: pcap-read fails there, with
	# its output closed (final: not restarted), as the graph drains.
	snb-run "source --count 200 --seq | pcap-write $T/all.pcap"
	head -c $((24 + 100 * (16 + 64) + 30)) "$T/all.pcap" > "$T/torn.pcap"
	[ "$(npackets "$T/torn.pcap")" -eq 100 ]
	# snb-gated reads only once $T/go is opened for writing.
	mkdir -p "$T/bin"
	mkfifo "$T/go"
	cat > "$T/bin/snb-gated" <<-EOF2
	#!/bin/bash
	[ "\$1" = --describe ] && exec snb-pcap-read --describe
	: < "$T/go"
	exec snb-pcap-read "\$@"
	EOF2
	chmod +x "$T/bin/snb-gated"
	for victim in f k; do
		SNB_PATH="$T/bin" snb-run -n drain$victim --restart=on-failure "r: gated $T/torn.pcap | f: filter udp | k: sink --check-seq --expect 100 --summary" 2> "$T/err" 3>&- &
		pid=$!
		# r waits at its gate: only f and k have stage files yet.
		wait_stages drain$victim 2
		r=$(ps ww -o pid=,args= --ppid $pid | awk '/snb-gated/ { print $1 }')
		v=$(stage_pid drain$victim $victim)
		# Both at once, as snb-run sees them: the victim killed, the
		# reader failing at the torn record.
		kill -STOP $pid
		kill -KILL "$v"
		: > "$T/go"
		WAIT_FOR_S=20 wait_for exited "$r"
		kill -CONT $pid
		bg_wait $pid
		cat "$T/err"
		[ "$st" -eq 1 ]
		grep -q "r failed: draining" "$T/err"
		grep -q "restarting $victim" "$T/err"
		grep -q "sink: 100 packets.* 0 sequence errors" "$T/err"
		! grep -q "did not drain" "$T/err" || false
		nothing_left
	done
}

@test "more control clients than snb-run serves at once: the one too many is told so, then served" {
	snb-run -n many 'source --rate 1k | f: filter udp | sink' 2> "$T/err" 3>&- &
	pid=$!
	wait_stages many 3
	# 16 clients that connect and say nothing (snb-run gives each 5 s),
	# until $T/release is made (20 s at most: a failed test ends it).
	python3 - "$SNB_RUN_DIR/many/ctl" "$T/release" 3>&- <<-'EOF2' &
	import os, socket, sys, time
	s = []
	for i in range(16):
	    s.append(socket.socket(socket.AF_UNIX))
	    s[-1].connect(sys.argv[1])
	open(sys.argv[2] + ".held", "w").close()
	for i in range(400):
	    if os.path.exists(sys.argv[2]):
	        break
	    time.sleep(0.05)
	EOF2
	py=$!
	wait_for test -e "$T/release.held"
	run timeout 10 snb-ctl many show
	echo "$output"
	[ "$status" -eq 1 ]
	[ "$output" = "error: 16 control clients at once; try again" ]
	: > "$T/release"
	wait $py
	run timeout 10 snb-ctl many show
	[ "$status" -eq 0 ]
	snb-ctl many stop
	bg_wait $pid
	[ "$st" -eq 0 ]
	nothing_left
}

@test "a swap or restart asked of a graph that is stopping is told so" {
	snb-run -n stopping 'source --rate 1k | f: filter udp | sink' 2> "$T/err" 3>&- &
	pid=$!
	wait_stages stopping 3
	# A stopped stage holds the stop up for its 3 s of grace.
	kill -STOP "$(stage_pid stopping f)"
	snb-ctl stopping stop
	for op in "restart f" "swap f filter"; do
		# shellcheck disable=SC2086
		run timeout 10 snb-ctl stopping $op
		echo "$output"
		[ "$status" -eq 1 ]
		[ "$output" = "error: the graph is stopping" ]
	done
	bg_wait $pid
	[ "$st" -eq 0 ]
	nothing_left
}

@test "'{}' in the words of a swap of a stage that is no copy is refused, as in the graph" {
	run snb-run -c "source | pcap-write $T/x{}.pcap"
	[ "$status" -eq 2 ]
	snb-run -n braces "source --rate 1k | w: pcap-write $T/x.pcap" 2> "$T/err" 3>&- &
	pid=$!
	wait_stages braces 2
	old=$(stage_pid braces w)
	for w in "x{}.pcap" "x{0}.pcap"; do
		run timeout 10 snb-ctl braces swap w "pcap-write $T/$w"
		echo "$output"
		[ "$status" -eq 1 ]
		assert_output_has "outside copies: w is no copy"
	done
	[ "$(stage_pid braces w)" = "$old" ]
	[ ! -e "$T/x{}.pcap" ]
	[ ! -e "$T/x{0}.pcap" ]
	snb-ctl braces stop
	bg_wait $pid
	[ "$st" -eq 0 ]
	nothing_left
}

@test "every snb-ctl command to a graph whose snb-run was killed says it is stale, and how to remove it" {
	snb-run -n st 'source --rate 1k | f: filter udp | sink' 2> "$T/err" 3>&- &
	pid=$!
	wait_stages st 3
	kill -KILL $pid
	wait $pid || true
	stale() { snb-ps --json st | jq -e '.graphs[0].stale' >/dev/null; }
	wait_for stale
	# config said the stage took no requests or had not started yet:
	# the socket files of a killed snb-run are still there.
	for c in show stop clear "restart f" "swap f sink" "config f get x"; do
		run snb-ctl st $c
		echo "snb-ctl st $c: $status: $output"
		[ "$status" -eq 1 ]
		[ "$output" = "snb-ctl: graph 'st' is stale (its snb-run is gone): remove it with snb-ctl st clean" ]
	done
	run snb-ctl st clean
	[ "$status" -eq 0 ]
	nothing_left
}

@test "a short capture cut in a record: what was read is delivered, and pcap-read is not said to have failed to start" {
	# 8 whole records, then 30 bytes of a ninth: the reader sends 8 in its
	# first breath and fails in it, before the breath is counted.
	snb-run "source --count 9 --size 100 --seq | pcap-write $T/nine.pcap"
	head -c $((24 + 8 * (16 + 100) + 30)) "$T/nine.pcap" > "$T/cut.pcap"
	for r in "" --restart=on-failure; do
		run timeout 20 snb-run $r "pcap-read $T/cut.pcap | sink --check-seq --summary"
		echo "$output"
		[ "$status" -eq 1 ]
		assert_output_has "snb-pcap-read: $T/cut.pcap: truncated dump file"
		assert_output_has "sink: 8 packets"
		assert_output_has "snb-run: pcap-read (pid "
		[[ "$output" != *"failed to start"* ]]
		[[ "$output" != *restarting* ]]
	done
	# A file that is no capture at all still fails to start.
	echo hello > "$T/not.pcap"
	run timeout 20 snb-run "pcap-read $T/not.pcap | sink"
	[ "$status" -eq 1 ]
	assert_output_has "snb-run: 1:1: pcap-read (pid "
	assert_output_has ") failed to start: exited with status 1; stopping the graph"
	nothing_left
}

@test "snb-ctl of a stage the graph has not: the reply names the stages it has (the first 12)" {
	snb-run -n ns 'source --rate 10 | lb | 3x( w: filter ip ) | join | sink' 2> "$T/err" 3>&- &
	pid=$!
	wait_stages ns 7
	run snb-ctl ns restart nope
	[ "$status" -eq 1 ]
	[ "$output" = "error: no stage 'nope' (stages: source, lb, w.1, w.2, w.3, join, sink)" ]
	snb-ctl ns stop
	bg_wait $pid
	g="source --rate 10"
	for i in $(seq 20); do g="$g | f$i: filter ip"; done
	snb-run -n many "$g | sink" 2> "$T/err" 3>&- &
	pid=$!
	wait_stages many 22
	run snb-ctl many swap nope 'filter udp'
	[ "$status" -eq 1 ]
	[ "$output" = "error: no stage 'nope' (stages: source, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, ... (22 in all))" ]
	snb-ctl many stop
	bg_wait $pid
	nothing_left
}
