#!/usr/bin/env bats
# Live operation: swap a stage under load, restart a crashed stage, and the
# inspection tools (snb-ctl, snb-ps, snb-top).
load helpers

@test "swap under load: 20 swaps, every packet arrives once and in order" {
	N=$((20000000 / SNB_TEST_SCALE)); R=$((4000000 / SNB_TEST_SCALE))
	# --hold: the stream cannot end under the swaps (a stage whose stream
	# has ended cannot be swapped in); the graph is stopped once the sink
	# has every packet.
	snb-run -n swp "source --count $N --rate $R --seq --hold | f: filter udp | s: sink --check-seq --summary" 2> "$T/err" 3>&- &
	pid=$!
	wait_stages swp 3
	for i in $(seq 10); do
		snb-ctl swp swap f 'filter ip' >> "$T/swaps"
		snb-ctl swp swap f 'filter udp' >> "$T/swaps"
	done
	wait_count swp s "$N"
	snb-ctl swp stop
	st=0; wait $pid || st=$?
	cat "$T/swaps" "$T/err"
	[ "$st" -eq 0 ]
	[ "$(grep -c '^ok: swapped f' "$T/swaps")" -eq 20 ]
	grep -q "sink: $N packets.* 0 sequence errors, 0 lost" "$T/err"
	max=$(sed -n 's/.*stall \([0-9.]*\) ms/\1/p' "$T/swaps" | sort -n | tail -1)
	echo "# longest swap stall: $max ms" >&3
}

@test "crash under load: 10 SIGKILLs, restarts, loss bounded by what the stage held" {
	R=$((500000 / SNB_TEST_SCALE))
	snb-run -n crash --restart=on-failure "source --rate $R --seq | f: filter udp | sink --check-seq --allow-loss --summary" 2> "$T/err" 3>&- &
	pid=$!
	wait_stages crash 3
	for i in $(seq 10); do
		f=$(snb-ps --json crash | jq '.graphs[0].stages[] | select(.label=="f") | .pid')
		kill -9 "$f"
		# the launcher restarts it: wait for a new pid
		for j in $(seq 100); do
			g=$(snb-ps --json crash | jq '.graphs[0].stages[] | select(.label=="f" and .alive) | .pid')
			[ -n "$g" ] && [ "$g" != "$f" ] && break
			sleep 0.05
		done
		sleep 0.3
	done
	snb-ctl crash stop
	st=0; wait $pid || st=$?
	cat "$T/err"
	[ "$st" -eq 0 ]
	[ "$(grep -c 'restarting f' "$T/err")" -eq 10 ]
	grep -q " 0 sequence errors" "$T/err"
	lost=$(sed -n 's/.* sequence errors, \([0-9]*\) lost/\1/p' "$T/err")
	echo "# crash: $lost packets lost in 10 kills (a stage holds at most 64 per breath)" >&3
	[ "$lost" -le 640 ]
}

@test "snb-ps --json and snb-top --once --json parse with jq and match the sink" {
	snb-run -n top 'source --count 5000 --hold | f: filter udp | sink' 3>&- &
	pid=$!
	wait_stages top 3
	for i in $(seq 50); do
		n=$(snb-top --json -i 0.05 top | jq '.graphs[0].stages[] | select(.label=="sink") | .counters.packets')
		[ "$n" = 5000 ] && break
		sleep 0.1
	done
	snb-top --json -i 0.1 top > "$T/top.json"
	snb-ps --json > "$T/ps.json"
	jq . "$T/top.json" > /dev/null
	jq . "$T/ps.json" > /dev/null
	[ "$(jq '.graphs[0].stages[] | select(.label=="sink") | .counters.packets' "$T/top.json")" = 5000 ]
	[ "$(jq '.graphs[0].stages[] | select(.label=="sink") | .packets_in' "$T/top.json")" = 5000 ]
	[ "$(jq '.graphs[0].links[] | select(.name=="f:out=sink:in") | .packets' "$T/top.json")" = 5000 ]
	[ "$(jq '.graphs[0].links[] | select(.name=="source:out=f:in") | .packets' "$T/top.json")" = 5000 ]
	[ "$(jq '[.graphs[] | select(.name=="top") | .stages[] | select(.alive)] | length' "$T/ps.json")" = 3 ]
	snb-top --prometheus top | grep -q '^snb_link_packets_total{graph="top",from="f",from_port="out",to="sink",to_port="in"} 5000$'
	# The graph is idle after 5000 packets: every stage was busy once
	# (busy_ns > 0) and is idle now (busy 0 in the last interval).
	[ "$(jq '[.graphs[0].stages[] | select(.busy_ns > 0 and .busy == 0)] | length' "$T/top.json")" = 3 ]
	snb-top --prometheus top | grep -q '^snb_stage_busy_seconds_total{graph="top",stage="f",app="filter"} 0\.[0-9]*[1-9]'
	snb-top --once top | grep -q 'f:out=sink:in'
	run snb-ctl top stop
	[ "$status" -eq 0 ]
	st=0; wait $pid || st=$?
	[ "$st" -eq 0 ]
}

@test "snb-ctl: show, restart, and errors that leave the old stage running" {
	snb-run -n ctl 'source --rate 1000 | f: filter udp | sink' 3>&- &
	pid=$!
	wait_stages ctl 3
	run snb-ctl ctl show
	[ "$status" -eq 0 ]
	assert_output_has "stage f pid"
	assert_output_has "link f.out -> sink.in fill"
	old=$(snb-ps --json ctl | jq '.graphs[0].stages[] | select(.label=="f") | .pid')
	run snb-ctl ctl swap f 'filter tcp prot 80'
	[ "$status" -eq 1 ]
	assert_output_has "failed to start"
	run snb-ctl ctl swap f 'sink'
	[ "$status" -eq 1 ]
	assert_output_has "sink has no output port 'out'; f keeps running"
	run snb-ctl ctl swap f 'nosuchapp'
	[ "$status" -eq 1 ]
	[ "$output" = "error: unknown app 'nosuchapp'; f keeps running" ]
	# A typo is answered as in the graph.
	run snb-ctl ctl swap f 'fliter udp'
	[ "$status" -eq 1 ]
	[ "$output" = "error: unknown app 'fliter' (did you mean filter?); f keeps running" ]
	run snb-ctl ctl swap nope 'filter'
	[ "$status" -eq 1 ]
	assert_output_has "no stage 'nope'"
	[ "$(snb-ps --json ctl | jq '.graphs[0].stages[] | select(.label=="f") | .pid')" = "$old" ]
	run snb-ctl ctl restart f
	[ "$status" -eq 0 ]
	assert_output_has "ok: restarted f: pid $old ->"
	run snb-ctl nograph show
	[ "$status" -eq 1 ]
	assert_output_has "no graph 'nograph' running"
	run snb-ctl ctl frobnicate
	[ "$status" -eq 2 ]
	snb-ctl ctl stop
	wait $pid
	[ ! -e "$SNB_RUN_DIR/ctl" ]
}

@test "swapped again and again, snb-run keeps one record per app in use" {
	# A swap frees the app record it replaces (18b98de kept them all:
	# 5.5 kB a swap, for the graph's life).  The first swaps set up what
	# a swap needs; 200 more then grow nothing.
	case "$SNB_BUILD" in
	*asan*) skip "ASan reserves its heap up front: VmData never grows" ;;
	esac
	snb-run -n swm 'source --rate 100 | f: filter udp | sink' \
	    2> "$T/err" 3>&- &
	pid=$!
	wait_stages swm 3
	for i in $(seq 10); do snb-ctl swm swap f 'filter udp' > /dev/null; done
	before=$(awk '/^VmData/ { print $2 }' /proc/$pid/status)
	for i in $(seq 200); do
		snb-ctl swm swap f 'filter udp' > /dev/null
	done
	after=$(awk '/^VmData/ { print $2 }' /proc/$pid/status)
	snb-ctl swm stop
	wait $pid
	echo "# VmData $before kB -> $after kB" >&3
	[ $((after - before)) -lt 256 ]
}

# writes GRAPH: wait until the writer w of GRAPH (a new one, after a swap
# or a restart) has taken 1000 more packets: every writer writes some.
writes() {
	local v
	v=$(stage_value "$1" w .packets_in)
	wait_count "$1" w $((${v:-0} + 1000)) .packets_in
}

@test "a swapped or restarted pcap-write continues its file" {
	# No --count: each graph runs until stopped, however slow the machine;
	# each step waits until the writer of the moment has written (not on
	# the rate: a loaded machine sends fewer).
	R=$((200000 / SNB_TEST_SCALE))
	snb-run -n pw --restart=on-failure "source --rate $R --seq | w: pcap-write $T/out.pcap" 2> "$T/err" 3>&- &
	pid=$!
	wait_stages pw 2
	writes pw
	snb-ctl pw swap w "pcap-write $T/out.pcap"
	writes pw
	# A SIGKILL may tear the last record; the restarted writer cuts it.
	w=$(snb-ps --json pw | jq '.graphs[0].stages[] | select(.label=="w") | .pid')
	kill -KILL "$w"
	wait_replaced pw w "$w" > /dev/null
	writes pw
	snb-ctl pw swap w "pcap-write $T/out.pcap"
	writes pw
	snb-ctl pw stop
	st=0; wait $pid || st=$?
	cat "$T/err"
	[ "$st" -eq 0 ]
	grep -q "restart" "$T/err"
	# tcpdump reads the whole file without complaint ...
	tcpdump -r "$T/out.pcap" -w /dev/null 2> "$T/td"
	[ -z "$(grep -i 'truncated\|error' "$T/td")" ]
	# ... in order; only what the killed writer held in its buffer is gone.
	run snb-run "pcap-read $T/out.pcap | sink --check-seq --allow-loss --summary"
	echo "$output"
	[ "$status" -eq 0 ]
	echo "$output" | grep -q ' 0 sequence errors'
	# Without a kill, swaps lose nothing: the file holds 0, 1, 2, ... with
	# no gap (what was still in the ring at the stop is the only tail).
	rm -f "$T/out.pcap"
	snb-run -n pw2 "source --rate $R --seq | w: pcap-write $T/out.pcap" 3>&- &
	pid=$!
	wait_stages pw2 2
	writes pw2
	snb-ctl pw2 swap w "pcap-write $T/out.pcap"
	writes pw2
	snb-ctl pw2 swap w "pcap-write $T/out.pcap"
	writes pw2
	snb-ctl pw2 stop
	wait $pid
	run snb-run "pcap-read $T/out.pcap | sink --check-seq --summary"
	echo "$output"
	[ "$status" -eq 0 ]
	echo "$output" | grep -q ' 0 sequence errors, 0 lost'
	n=$(echo "$output" | sed -n 's/^sink: \([0-9]*\) packets.*/\1/p')
	# three writers, each of 1000 or more
	[ "$n" -ge 3000 ]
}

@test "a stage that dies while its replacement starts: the swap is called off, the stage restarted" {
	# snb-slow: a filter whose init() takes a second.
	mkdir "$T/bin"
	printf '#!/bin/sh\n[ "$1" = --describe ] || sleep 1\nexec snb-filter "$@"\n' > "$T/bin/snb-slow"
	chmod +x "$T/bin/snb-slow"
	SNB_PATH="$T/bin" snb-run -n slow --restart=on-failure 'source --rate 1000 | f: filter udp | sink' 2> "$T/err" 3>&- &
	pid=$!
	wait_stages slow 3
	old=$(stage_pid slow f)
	snb-ctl slow swap f 'slow udp' > "$T/swap" 2>&1 3>&- &
	ctl=$!
	# the replacement is a fourth child of snb-run
	for i in $(seq 100); do
		[ "$(children_of $pid | wc -l)" -eq 4 ] && break
		sleep 0.05
	done
	kill -9 "$old"
	st=0; wait $ctl || st=$?
	cat "$T/swap"
	[ "$st" -eq 1 ]
	grep -q "error: f (pid $old) left while its replacement was starting; swap called off" "$T/swap"
	new=$(wait_replaced slow f "$old")
	sleep 1.5
	[ "$(stage_pid slow f)" = "$new" ]
	snb-ctl slow stop
	wait $pid
	cat "$T/err"
	grep -q "restarting f" "$T/err"
	! grep -q "did not stop" "$T/err" || false
}
