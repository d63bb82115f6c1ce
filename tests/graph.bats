#!/usr/bin/env bats
# snb-run: the graph language, its errors, supervision and teardown.
load helpers

@test "snb-run --help and a usage error" {
	run snb-run --help
	[ "$status" -eq 0 ]
	assert_output_has "usage: snb-run"
	run snb-run
	[ "$status" -eq 2 ]
	assert_output_has "usage: snb-run"
}

@test "a finite graph ends by itself and leaves nothing behind" {
	run snb-run -n fin 'source --count 1000 | sink --expect 1000'
	[ "$status" -eq 0 ]
	[ -z "$(ls -A "$SNB_RUN_DIR")" ]
}

@test "--check prints the plan: stages, labels and links" {
	run snb-run --check 's: source | filter udp | sink ; @s'
	[ "$status" -eq 0 ]
	assert_output_has "stage s: snb-source"
	assert_output_has "stage filter: snb-filter 'udp'"
	assert_output_has "link s.out -> filter.in"
	assert_output_has "link filter.out -> sink.in"
}

@test "unknown app: position and name" {
	run snb-run 'source | fitler tcp | sink'
	[ "$status" -eq 2 ]
	assert_output_has "snb-run: 1:10: unknown app 'fitler'"
}

@test "unknown port: position, port and the ports there are" {
	run snb-run 'source | [v5] filter tcp | sink'
	[ "$status" -eq 2 ]
	assert_output_has "1:10: no input port 'v5' on filter (inputs: in)"
	run snb-run 'source [x] | filter tcp | sink'
	[ "$status" -eq 2 ]
	assert_output_has "1:8: no output port 'x' on source (outputs: out)"
	run snb-run 'sink | source'
	[ "$status" -eq 2 ]
	assert_output_has "no output port 'out' on sink (outputs: none)"
}

@test "unbalanced quotes" {
	run snb-run "source | filter 'tcp | sink"
	[ "$status" -eq 2 ]
	assert_output_has "1:17: unbalanced ' quote"
	run snb-run 'source | filter "tcp | sink'
	[ "$status" -eq 2 ]
	assert_output_has "1:17: unbalanced \" quote"
}

@test "one output wired twice suggests tee or lb" {
	run snb-run 's: source | sink ; @s | sink'
	[ "$status" -eq 2 ]
	assert_output_has "1:20: output 'out' of s already feeds sink"
	assert_output_has "tee"
}

@test "required port left open" {
	run snb-run 'filter tcp | sink'
	[ "$status" -eq 2 ]
	assert_output_has "input port 'in' of filter is not connected"
}

@test "syntax errors: missing stage, bad tokens, unknown label, duplicate label" {
	run snb-run 'source | | sink'
	[ "$status" -eq 2 ]
	assert_output_has "1:8: missing stage after '|'"
	run snb-run 'source |'
	[ "$status" -eq 2 ]
	assert_output_has "missing stage after '|'"
	run snb-run 'source | @nope'
	[ "$status" -eq 2 ]
	assert_output_has "1:10: no stage labelled 'nope'"
	run snb-run 'a: source | sink ; a: source | sink'
	[ "$status" -eq 2 ]
	assert_output_has "1:20: label 'a' already defined at 1:1"
	run snb-run 'source | [in] @'
	[ "$status" -eq 2 ]
	assert_output_has "bad label"
	run snb-run '[in] source | sink'
	[ "$status" -eq 2 ]
	assert_output_has "1:1: input port [in] on the first stage of a chain"
	run snb-run 'Source | sink'
	[ "$status" -eq 2 ]
	assert_output_has "1:1: bad app name 'Source'"
}

@test "graph files: comments, continuation lines, errors name file:line:col" {
	cat > "$T/g.snb" <<'G'
# a comment line
src: source --count 500 \
	--size 100   # trailing comment
@src |
	t: tee |
	j: join | sink --expect 1000
@t [1] | [b] @j
G
	run snb-run -f "$T/g.snb"
	[ "$status" -eq 0 ]
	printf 'source | sink\nsource | [x] sink\n' > "$T/bad.snb"
	run snb-run -f "$T/bad.snb"
	[ "$status" -eq 2 ]
	assert_output_has "$T/bad.snb:2:10: no input port 'x' on sink"
}

@test "quoting: single, double, escapes reach the app unchanged" {
	run snb-run --check "source | filter 'tcp port 80' \"and not\" host\\ x | sink"
	[ "$status" -eq 0 ]
	assert_output_has "snb-filter 'tcp port 80' 'and not' 'host x'"
	run snb-run --check 'source | filter ip6 host fe80::1 | sink'
	[ "$status" -eq 0 ]
	assert_output_has "'ip6' 'host' 'fe80::1'"
}

@test "fan-in and tee: counts add up" {
	run snb-run 's: source --count 3000 | t: tee | j: join | sink --expect 6000 ; @t [1] | [b] @j'
	[ "$status" -eq 0 ]
	run snb-run 'source --count 100 | j: join | sink --expect 300 ; source --count 200 | @j'
	[ "$status" -eq 0 ]
}

@test "a stage that fails stops the graph with its status" {
	run snb-run 'source --count 10 | filter tcp prot 80 | sink'
	[ "$status" -ne 0 ]
	assert_output_has "bad filter expression"
	assert_output_has "filter (pid"
	assert_output_has "exited with status 2"
	[ -z "$(ls -A "$SNB_RUN_DIR")" ]
}

@test "a missing or corrupt pcap file" {
	run snb-run 'pcap-read /nonexistent.pcap | sink'
	[ "$status" -ne 0 ]
	assert_output_has "/nonexistent.pcap"
	head -c 40 /dev/urandom > "$T/junk.pcap"
	run snb-run "pcap-read $T/junk.pcap | sink"
	[ "$status" -ne 0 ]
	assert_output_has "$T/junk.pcap"
	mkpcap "$T/ok.pcap" --count 50
	head -c 1000 "$T/ok.pcap" > "$T/cut.pcap"
	run snb-run "pcap-read $T/cut.pcap | sink"
	[ "$status" -ne 0 ]
	assert_output_has "$T/cut.pcap"
}

@test "a ring file with a wrong magic is refused with a clear error" {
	mkdir -p "$SNB_RUN_DIR"
	head -c 8192 /dev/zero > "$SNB_RUN_DIR/bogus"
	run snb-sink --snb-in=in="$SNB_RUN_DIR/bogus"
	rm -f "$SNB_RUN_DIR/bogus"
	[ "$status" -eq 1 ]
	assert_output_has "$SNB_RUN_DIR/bogus: not a ring (bad magic)"
}

@test "SIGINT stops every stage and empties the run directory" {
	snb-run -n int 'source | filter udp | sink' 3>&- &
	pid=$!
	for i in $(seq 50); do
		[ "$(children_of $pid | wc -l)" -eq 3 ] && break
		sleep 0.1
	done
	kids=$(children_of $pid)
	[ "$(echo "$kids" | wc -l)" -eq 3 ]
	sleep 0.5
	kill -INT $pid
	st=0; wait $pid || st=$?
	[ "$st" -eq 130 ]
	for k in $kids; do ! kill -0 "$k" 2>/dev/null; done
	[ -z "$(ls -A "$SNB_RUN_DIR")" ]
}

@test "a killed stage is reported and the rest of the graph is stopped" {
	snb-run -n kill 'source | filter udp | sink' 2> "$T/err" 3>&- &
	pid=$!
	sleep 1
	f=$(cat "$SNB_RUN_DIR/kill/filter.stage" >/dev/null && ps -o pid=,args= --ppid $pid | awk '/snb-filter/ {print $1}')
	[ -n "$f" ]
	kids=$(children_of $pid)
	kill -9 "$f"
	st=0; wait $pid || st=$?
	[ "$st" -eq 137 ]
	grep -q "filter (pid $f) killed by signal 9" "$T/err"
	for k in $kids; do ! kill -0 "$k" 2>/dev/null; done
	[ -z "$(ls -A "$SNB_RUN_DIR")" ]
}

@test "--restart=on-failure restarts a killed stage on the same rings" {
	snb-run -n rs --restart=on-failure 'source --rate 2000 --count 6000 | filter udp | sink' 2> "$T/err" 3>&- &
	pid=$!
	sleep 1
	f=$(ps -o pid=,args= --ppid $pid | awk '/snb-filter/ {print $1}')
	kill -9 "$f"
	st=0; wait $pid || st=$?
	cat "$T/err"
	[ "$st" -eq 0 ]
	grep -q "restarting filter" "$T/err"
}

@test "a second graph with a running graph's name is refused" {
	snb-run -n dup 'source --rate 10 | sink' 3>&- &
	pid=$!
	sleep 0.5
	run snb-run -n dup 'source | sink'
	kill -INT $pid
	wait $pid || true
	[ "$status" -eq 1 ]
	assert_output_has "graph 'dup' is already running (pid $pid)"
}

@test "labels and ring names never collide" {
	run snb-run --check 'source | filter tcp | sink ; source | filter: filter udp | sink'
	[ "$status" -eq 0 ]
	assert_output_has "stage filter2: snb-filter 'tcp'"
	run snb-run 'source --count 5 | t: tee [x-y] | b: sink --expect 5 ; @t [x] | y-b: sink --expect 5'
	[ "$status" -eq 0 ]
}

@test "snb-source refuses packets larger than the ring's slots" {
	run snb-run --capacity 100 'source --size 200 --count 1 | sink'
	[ "$status" -eq 2 ]
	assert_output_has "does not fit the ring's 100-byte slots"
}
