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
	assert_output_has "1:1: bad app name 'Source' (lower-case letters, digits, '-', '_', a letter first)"
	# A label in a letter outside the alphabet was 'bad app name'.
	run snb-run 'source | é: filter | sink'
	[ "$status" -eq 2 ]
	assert_output_has "1:10: bad label 'é' (letters, digits, '_', '.', '-', not starting with '.' or '-')"
	run snb-run 'source [x!] | sink'
	[ "$status" -eq 2 ]
	assert_output_has "1:8: bad port name 'x!' (letters, digits,"
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

@test "graph files: -f - reads standard input, a pipe or a socket (no /dev/stdin to open)" {
	run sh -c "echo 'source --count 5 | sink --expect 5' | snb-run -f -"
	[ "$status" -eq 0 ]
	# A socket (inetd, systemd, a parent's socketpair): read as it is.
	run python3 -c '
import socket, subprocess, sys
a, b = socket.socketpair()
a.sendall(b"source --count 5 | sink --expect 5\n")
a.shutdown(socket.SHUT_WR)
p = subprocess.run(["snb-run", "-f", "-"], stdin=b, stderr=subprocess.PIPE)
sys.stderr.buffer.write(p.stderr)
sys.exit(p.returncode)'
	[ "$status" -eq 0 ]
	run snb-run -f - 0>"$T/wo"
	[ "$status" -eq 1 ]
	assert_output_has "snb-run: standard input: "
}

@test "quoting: single, double, escapes reach the app unchanged" {
	run snb-run --check "source | filter 'tcp port 80' \"and not\" port\\ 53 | sink"
	[ "$status" -eq 0 ]
	assert_output_has "snb-filter 'tcp port 80' 'and not' 'port 53'"
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
	for k in $kids; do ! kill -0 "$k" 2>/dev/null || false; done
	[ -z "$(ls -A "$SNB_RUN_DIR")" ]
}

@test "a killed stage is reported and the rest of the graph is stopped" {
	snb-run -n kill 'source | filter udp | sink' 2> "$T/err" 3>&- &
	pid=$!
	wait_stages kill 3
	f=$(cat "$SNB_RUN_DIR/kill/filter.stage" >/dev/null && ps -o pid=,args= --ppid $pid | awk '/snb-filter/ {print $1}')
	[ -n "$f" ]
	kids=$(children_of $pid)
	kill -9 "$f"
	st=0; wait $pid || st=$?
	[ "$st" -eq 137 ]
	grep -q "filter (pid $f) killed by signal 9" "$T/err"
	for k in $kids; do ! kill -0 "$k" 2>/dev/null || false; done
	[ -z "$(ls -A "$SNB_RUN_DIR")" ]
}

@test "--restart=on-failure restarts a killed stage on the same rings" {
	snb-run -n rs --restart=on-failure 'source --rate 2000 --count 6000 | filter udp | sink' 2> "$T/err" 3>&- &
	pid=$!
	wait_stages rs 3
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
	# Not a fixed wait: on a loaded machine the second one could start
	# first, and run on.
	wait_stages dup 2
	run timeout 20 snb-run -n dup 'source --count 10 | sink'
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

@test "a cycle of lossless links is refused where it closes; a leaky link accepts it" {
	# Accepted, it ran forever (10 packets circling): timeout guards that.
	run timeout 20 snb-run 'source --count 10 | a: filter ip | b: filter ip | @a'
	[ "$status" -eq 2 ]
	assert_output_has "snb-run: 1:49: cycle of lossless links a -> b -> a: make one of its links leaky ('|~')"
	run snb-run -c 'source --count 10 | a: filter ip | b: filter ip |~ @a'
	[ "$status" -eq 0 ]
	assert_output_has "link b.out -> a.in"
	printf 'a: filter x | b: filter y\nsource | @a\n@b | @a\n@b [reject] | sink\n' > "$T/cyc.snb"
	run snb-run -c -f "$T/cyc.snb"
	[ "$status" -eq 2 ]
	assert_output_has "$T/cyc.snb:3:4: cycle of lossless links a -> b -> a"
}

@test "a lossless self-link is a cycle; leaky self-links are accepted" {
	run snb-run -c 'src: source | t: tee [a] |~ @t ; @t [b] | @t ; @t [c] | sink'
	[ "$status" -eq 2 ]
	assert_output_has "1:41: cycle of lossless links t -> t: make one of its links leaky"
	run snb-run -c 'src: source | t: tee [a] |~ @t ; @t [b] |~ @t ; @t [c] | sink'
	[ "$status" -eq 0 ]
	assert_output_has "link t.a -> t.in"
	assert_output_has "link t.b -> t.in"
}

@test "a device carries no cycle: device loops and the lwAFTR example are accepted" {
	# Taps: -c asks the apps, and a tap need not exist yet.
	run snb-run -c 'nic tap:veth0 | filter tcp | nic tap:veth0'
	[ "$status" -eq 0 ]
	assert_output_has "link nic-tap_veth0.out -> filter.in"
	assert_output_has "link filter.out -> nic-tap_veth0.in"
	conf="$BATS_TEST_DIRNAME/../fuzz/corpus/conf/tunnel_icmp.conf"
	printf '# lwAFTR\nlw: lwaftr %s\nnic tap:eth1 | [v6] @lw [v4] | nic tap:eth0\nnic tap:eth0 | [v4] @lw [v6] | nic tap:eth1\n' "$conf" > "$T/lw.snb"
	run snb-run -c -f "$T/lw.snb"
	[ "$status" -eq 0 ]
	assert_output_has "link lw.v4 -> nic-tap_eth0.in"
}

@test "port names: 31 characters kept whole, longer ones refused where written" {
	p31=$(printf 'p%030d' 0)
	run snb-run -c "s: source | t: tee [${p31}1] | sink ; @t [${p31}2] | sink"
	[ "$status" -eq 2 ]
	assert_output_has "1:20: port name '${p31}1' too long (at most 31 characters)"
	p63=$(printf 'p%061d' 0)
	run snb-run -c "s: source | t: tee [${p63}1] | sink ; @t [${p63}2] | sink"
	[ "$status" -eq 2 ]
	assert_output_has "1:20: port name '${p63}1' too long (at most 31 characters)"
	p30=$(printf 'p%029d' 0)
	run snb-run -c "s: source | t: tee [${p30}1] | sink ; @t [${p30}2] | sink"
	[ "$status" -eq 0 ]
	assert_output_has "link t.${p30}1 -> sink.in"
	assert_output_has "link t.${p30}2 -> sink2.in"
	l64=$(printf 'l%063d' 0)
	run snb-run -c "$l64: source | sink"
	[ "$status" -eq 2 ]
	assert_output_has "1:1: label '$l64' too long (at most 63 characters)"
}

@test "long chains are checked in linear time (2,000 and 20,000 stages)" {
	for n in 2000 20000; do
		python3 -c "print(' | '.join(['source'] + ['filter ip']*$n + ['sink']))" > "$T/chain.snb"
		t0=$(date +%s.%N)
		run timeout 60 snb-run -c -f "$T/chain.snb"
		t1=$(date +%s.%N)
		[ "$status" -eq 0 ]
		echo "# snb-run -c, $n-stage chain: $(echo "$t1 - $t0" | bc) s" >&3
		assert_output_has "stage filter$n: snb-filter 'ip'"
		assert_output_has "link filter$n.out -> sink.in"
	done
	# Given as words, as the issue's command line does.
	run timeout 60 snb-run -c "$(python3 -c "print(' | '.join(['source'] + ['filter ip']*2000 + ['sink']))")"
	[ "$status" -eq 0 ]
}

@test "copies: Nx( ... ) is written out with labels LABEL.K and lb ports K" {
	run snb-run --check 'source | l: lb | 3x( w: filter udp | vlan tag {} ) | join | sink'
	echo "$output"
	[ "$status" -eq 0 ]
	for k in 1 2 3; do
		assert_output_has "stage w.$k: snb-filter 'udp'"
		assert_output_has "stage vlan.$k: snb-vlan 'tag' '$k'"
		assert_output_has "link l.$k -> w.$k.in"
		assert_output_has "link w.$k.out -> vlan.$k.in"
		assert_output_has "link vlan.$k.out -> join.in"
	done
	run snb-run --check 'source | lb | 2x filter tcp | join | sink'
	[ "$status" -eq 0 ]
	assert_output_has "link lb.2 -> filter.2.in"
}

@test "copies: errors name the line and column" {
	run snb-run 'source | lb | 2x( filter tcp | sink'
	[ "$status" -eq 2 ]
	assert_output_has "1:36: expected '|' or the ')' that closes the copies opened at 1:15, found end of input"
	run snb-run 'source | lb | 0x filter | join | sink'
	[ "$status" -eq 2 ]
	assert_output_has "1:15: 0 copies: from 1 to 1024"
	printf 'source | lb |\n  2x( filter |\n  3x vlan tag 2 ) | join | sink\n' > "$T/g.snb"
	run snb-run -f "$T/g.snb"
	[ "$status" -eq 2 ]
	assert_output_has "g.snb:3:3: copies inside copies"
	# Ports belong inside the copies; @x of copies names one; {} only
	# in copies.
	run snb-run -c 'source | lb | [o1] 2x filter | join | sink'
	[ "$status" -eq 2 ]
	assert_output_has "1:15: input port [o1] before copies: write it inside, on the copy's first stage"
	run snb-run -c 'source | lb | 2x( filter ) [o1] | join | sink'
	[ "$status" -eq 2 ]
	assert_output_has "1:28: output port [o1] after copies: write it inside, on the copy's last stage"
	printf 'source | lb | 2x( w: filter ) | join | sink\n@w | sink\n' > "$T/g.snb"
	run snb-run -c -f "$T/g.snb"
	[ "$status" -eq 2 ]
	assert_output_has "g.snb:2:1: no stage labelled 'w', only its copies w.1 ...: refer to one (@w.1), or to each from copies"
	run snb-run -c "source | pcap-write $T/out{}.pcap"
	[ "$status" -eq 2 ]
	assert_output_has "1:21: '{}' outside copies: it stands for a copy's number only in 'Nx( ... )'"
	run snb-run -c 'source | lb | 1000000x filter | join | sink'
	[ "$status" -eq 2 ]
	assert_output_has "1:15: 1000000 copies: from 1 to 1024"
	# snb-lb counts each output: 125 at most, said so.
	run snb-run -c 'source | lb | 125x filter | join | sink'
	[ "$status" -eq 0 ]
	run snb-run -c 'source | lb | 126x filter | join | sink'
	[ "$status" -eq 2 ]
	assert_output_has "snb-lb: 126 outputs: at most 125, each has a counter"
}

@test "a control character in a graph is shown escaped (vis(3)), at its FILE:LINE:COL" {
	# It was echoed raw: an ESC sequence acted on the terminal, a newline
	# split the message.
	run snb-run $'source | fi\x01lter | sink'
	echo "$output"
	[ "$status" -eq 2 ]
	[ "$output" = "snb-run: 1:10: bad app name 'fi\\001lter' (lower-case letters, digits, '-', '_', a letter first)" ]
	run snb-run $'source | "fi\nlter" | sink'
	echo "$output"
	[ "$status" -eq 2 ]
	[ "${#lines[@]}" -eq 1 ]
	assert_output_has "1:10: bad app name 'fi\\nlter'"
	printf 'source |\n  sink [\033[2Jx]\n' > "$T/esc.snb"
	run snb-run -f "$T/esc.snb"
	echo "$output"
	[ "$status" -eq 2 ]
	assert_output_has "$T/esc.snb:2:8: bad port name '\\033[2Jx'"
	[ -z "$(printf '%s' "$output" | grep $'\033')" ]
	[ "${#lines[@]}" -eq 1 ]
}
