#!/usr/bin/env bats
# Whole graphs on the 2-core machine: no loss under backpressure, no
# livelock with more stages than cores, and idle stages that sleep.
load helpers

SIX='source --count $N --seq --size 60-200 | filter udp | t: tee | j: join | sink --check-seq --expect $N ; @t [1] | filter "not udp" | [b] @j'

@test "6 stages, 10 million packets: every packet arrives once, in order" {
	N=$((10000000 / SNB_TEST_SCALE))
	run snb-run -n six "$(eval echo "\"$SIX\"")"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "lossless under backpressure: a slow sink still gets every packet" {
	# A tiny ring and a paced consumer side: the source must wait, not drop.
	run snb-run --slots 4 'source --count 20000 --seq | filter udp | j: join | sink --check-seq --expect 20000'
	[ "$status" -eq 0 ]
}

@test "an idle 6-stage graph uses less than 2 % of a CPU" {
	snb-run -n idle 'source --rate 1 --seq | filter udp | t: tee | j: join | sink --check-seq ; @t [1] | filter "not udp" | [b] @j' 3>&- &
	pid=$!
	for i in $(seq 50); do
		[ "$(children_of $pid | wc -l)" -eq 6 ] && break
		sleep 0.1
	done
	kids=$(children_of $pid)
	sleep 1
	t0=$(cpu_ticks $kids)
	sleep 5
	t1=$(cpu_ticks $kids)
	kill -INT $pid
	wait $pid || true
	hz=$(getconf CLK_TCK)
	echo "idle graph: $((t1 - t0)) ticks of $((5 * hz)) in 5 s"
	# 2 % of one CPU over 5 s
	[ $(( (t1 - t0) * 100 )) -lt $((2 * 5 * hz)) ]
}

@test "more stages than cores: a 4-stage pipeline of 1500-byte packets" {
	N=$((2000000 / SNB_TEST_SCALE))
	run snb-run "source --count $N --size 1500 | filter ip | filter udp | sink --expect $N"
	[ "$status" -eq 0 ]
}

@test "--loop: pcap-read repeats the file and ends" {
	mkpcap "$T/m.pcap" --count 100
	run snb-run "pcap-read --loop 5 $T/m.pcap | sink --expect 500"
	[ "$status" -eq 0 ]
}

@test "snb-run --stats prints every stage's totals and busy time" {
	run snb-run --stats 'source --count 100000 | f: filter udp | sink'
	[ "$status" -eq 0 ]
	echo "$output" | grep -q '^snb-run: stage source (source): 0 in, 100000 out, busy [0-9.]* s, [0-9.]* ns per packet'
	echo "$output" | grep -q '^snb-run: stage f (filter): 100000 in, 100000 out, busy'
	echo "$output" | grep -q '^snb-run: stage sink (sink): 100000 in, 0 out, busy'
	# Busy time is real time: 100000 packets took more than nothing.
	! echo "$output" | grep -q 'busy 0.000 s, 0.0 ns' || false
	# ... and each stage's typical breath, per packet too
	[ "$(echo "$output" | grep -c '; typical breath [0-9]*\.[0-9] ns per packet$')" -eq 3 ]
	! echo "$output" | grep -q 'typical breath 0.0 ns' || false
	# Without --stats, nothing of the kind.
	run snb-run 'source --count 10 | sink'
	[ "$status" -eq 0 ]
	! echo "$output" | grep -q 'snb-run: stage' || false
}

@test "a leaky link (|~) drops and counts when full; the lossless path loses nothing" {
	N=$((2000000 / SNB_TEST_SCALE))
	snb-run -n lk --slots 8 "source --count $N --rate $((N / 4)) --seq | t: tee | sink --check-seq --expect $N --summary ;
	    @t [1] |~ m: sink --check-seq --allow-loss" 2> "$T/err" 3>&- &
	pid=$!
	for i in $(seq 100); do
		m=$(snb-ps --json lk 2>/dev/null | jq '.graphs[0].stages[] | select(.label=="m") | .pid' 2>/dev/null)
		[ -n "$m" ] && [ "$m" != null ] && break
		sleep 0.1
	done
	# Stop the monitor: its leaky link fills and drops, the rest goes on.
	kill -STOP "$m"
	sleep 1
	snb-top --json -i 0.5 lk > "$T/top.json"
	kill -CONT "$m"
	st=0; wait $pid || st=$?
	cat "$T/err"
	[ "$st" -eq 0 ]
	grep -q "^sink: $N packets.* 0 sequence errors, 0 lost" "$T/err"
	# While stopped: the leaky link dropped, the main one kept moving.
	[ "$(jq '.graphs[0].links[] | select(.name=="t:1=m:in") | .drops_per_s > 0' "$T/top.json")" = true ]
	[ "$(jq '.graphs[0].links[] | select(.name=="t:out=sink:in") | .pps > 0' "$T/top.json")" = true ]
	[ "$(jq '.graphs[0].links[] | select(.name=="t:out=sink:in") | .drops' "$T/top.json")" = 0 ]
}
