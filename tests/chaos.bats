#!/usr/bin/env bats
# Chaos: live operation at its edges (issue 11).  Faults from outside
# (signals, stopped stages, slow control clients, corrupt rings), swaps
# that cannot complete, failures at the end of a stream.  Each test is
# bounded by `timeout`: a hang fails it instead of hanging the suite.
# (App hand-over: chaos-apps.bats, chaos-pcap.bats; run directory and
# stale graphs: rundir.bats; cycles: graph.bats.)
load helpers

# ring_field GRAPH RING FIELD [VALUE]: read (or write) a field of a ring's
# shared header: prod.head prod.closed prod.pid cons.tail cons.pid.
ring_field() {
	python3 - "$SNB_RUN_DIR/$1/rings/$2" "$3" "${4:-}" <<'EOF'
import mmap, struct, sys
off = {"prod.head": (64, "<Q"), "prod.closed": (72, "<I"),
       "prod.pid": (80, "<i"), "cons.tail": (128, "<Q"),
       "cons.pid": (140, "<i")}[sys.argv[2]]
with open(sys.argv[1], "r+b") as f:
    m = mmap.mmap(f.fileno(), 4096)
    if sys.argv[3]:
        m[off[0]:off[0] + struct.calcsize(off[1])] = struct.pack(off[1], int(sys.argv[3]))
    print(struct.unpack_from(off[1], m, off[0])[0])
EOF
}

# The largest gap, in ms, between consecutive records of a pcap file.
max_gap_ms() {
	python3 - "$1" <<'EOF'
import struct, sys
d = open(sys.argv[1], "rb").read()
off, last, gap = 24, None, 0
while off + 16 <= len(d):
    s, us, cap, _ = struct.unpack_from("<IIII", d, off)
    t = s * 1e6 + us
    if last is not None:
        gap = max(gap, t - last)
    last, off = t, off + 16 + cap
print(int(gap / 1000))
EOF
}

@test "no sleep outlasts work: 20 kpps through 1 and 2 middle stages, no gap near the sleep cap" {
	# A wake-up lost anywhere shows as a gap as long as the idle cap,
	# made 5 s here so that noise cannot be mistaken for it.
	export SNB_IDLE_CAP_MS=5000
	for g in "filter udp" "filter udp | filter ip" "t: tee | sink ; @t [x]"; do
		rm -f "$T/l.pcap"
		run timeout 60 snb-run "source --rate 20k --count 20k --seq | $g | pcap-write --timestamps now $T/l.pcap"
		[ "$status" -eq 0 ]
		gap=$(max_gap_ms "$T/l.pcap")
		echo "# '$g': largest gap $gap ms" >&3
		[ "$gap" -lt 2000 ]
	done
}

@test "no sleep outlasts work: packets an app held back while its outputs had room wake it, not the idle cap" {
	# snb-holdback ignores each burst for 200 breaths: the runtime then
	# looks at an input with packets and no full output.  A lost wake-up
	# there sleeps the idle cap (here 30 s) per packet; 20 packets must
	# get through long before the timeout.
	export SNB_IDLE_CAP_MS=30000
	run timeout 20 snb-run "source --rate 200 --count 20 --seq | holdback | sink --check-seq --expect 20"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "no sleep outlasts work: a stage fed by more rings than one futex_waitv takes (20 copies into one sink)" {
	# Copies 1..16 drop every packet and stay open, copies 17..20 pass
	# them all: a sink that slept on its first 16 rings only would find
	# the others' packets at the idle cap (here 60 s), not as they come.
	export SNB_IDLE_CAP_MS=60000
	timeout 60 snb-run -n fanin "source --rate 50 --count 50 --seq --size 165 --hold | tee | 20x( filter 'len <= {}0' ) | s: sink" 2> "$T/err" 3>&- &
	pid=$!
	wait_stages fanin 23
	WAIT_FOR_S=20 wait_count fanin s 200
	snb-ctl fanin stop
	st=0; wait $pid || st=$?
	cat "$T/err"
	[ "$st" -eq 0 ]
}

@test "SIGTERM to a middle stage from outside: a failure, not an end (no restart: the graph stops, naming it)" {
	timeout 30 snb-run -n term "source --rate 50k --seq | f: filter udp | sink --check-seq --summary" 2> "$T/err" 3>&- &
	pid=$!
	wait_stages term 3
	kill -TERM "$(stage_pid term f)"
	st=0; wait $pid || st=$?
	cat "$T/err"
	[ "$st" -eq 1 ]
	grep -q "f (pid [0-9]*) left without closing its outputs" "$T/err"
	grep -q " 0 sequence errors, 0 lost" "$T/err"
}

@test "SIGTERM to a middle stage from outside under --restart=on-failure: restarted, nothing lost" {
	timeout 60 snb-run -n term2 --restart=on-failure "source --rate 50k --seq | f: filter udp | sink --check-seq --summary" 2> "$T/err" 3>&- &
	pid=$!
	wait_stages term2 3
	for i in 1 2 3; do
		f=$(stage_pid term2 f)
		kill -TERM "$f"
		g=$(wait_replaced term2 f "$f")
	done
	snb-ctl term2 show | grep -q "stage f pid [0-9]* restarts 3 "
	snb-ctl term2 stop
	st=0; wait $pid || st=$?
	cat "$T/err"
	[ "$st" -eq 0 ]
	[ "$(grep -c 'restarting f' "$T/err")" -eq 3 ]
	grep -q " 0 sequence errors, 0 lost" "$T/err"
}

@test "SIGSTOP/SIGCONT of a stage from outside: the graph goes on, no hang" {
	# A stream without end, stopped by the test: one of 2 s could end
	# before the loop's third stop on a loaded machine.
	timeout 60 snb-run -n stop "source --rate 100k --seq | f: filter udp | sink --check-seq --summary" 2> "$T/err" 3>&- &
	pid=$!
	wait_stages stop 3
	for i in 1 2 3; do
		f=$(stage_pid stop f)
		[ -n "$f" ]
		kill -STOP "$f"; sleep 0.3
		# Stopped mid-stream, and not taken for dead and replaced.
		[ "$(awk '{print $3}' "/proc/$f/stat")" = T ]
		kill -CONT "$f"; sleep 0.2
		[ "$(stage_pid stop f)" = "$f" ]
	done
	# The graph goes on after the last stop: the sink counts on.
	n=$(snb-top --json -i 0.05 stop | jq '.graphs[0].stages[] | select(.label=="sink") | .counters.packets')
	wait_count stop sink $((n + 10000))
	snb-ctl stop stop
	st=0; wait $pid || st=$?
	cat "$T/err"
	[ "$st" -eq 0 ]
	# Every packet in order, none lost or repeated around the stops.
	grep -q "sink: [1-9][0-9]* packets.* 0 sequence errors, 0 lost" "$T/err"
}

@test "a swap called off (old stage stopped) leaves no claim of the replacement in the rings; the old one is restarted when it leaves" {
	timeout 60 snb-run -n off "source --rate 20k --seq | f: filter udp | sink --check-seq --summary" 2> "$T/err" 3>&- &
	pid=$!
	wait_stages off 3
	f=$(stage_pid off f)
	kill -STOP "$f"
	run snb-ctl off swap f 'filter ip'
	echo "$output"
	[ "$status" -eq 1 ]
	assert_output_has "did not stop"
	# Both rings of f still name f (stopped) and nobody else.
	[ "$(ring_field off source:out=f:in cons.pid)" = "$f" ]
	[ "$(ring_field off f:out=sink:in prod.pid)" = "$f" ]
	kill -CONT "$f"
	g=$(wait_replaced off f "$f")
	[ "$(ring_field off source:out=f:in cons.pid)" = "$g" ]
	[ "$(ring_field off f:out=sink:in prod.pid)" = "$g" ]
	# A swap that completes: the claims move to the replacement.
	run snb-ctl off swap f 'filter ip'
	[ "$status" -eq 0 ]
	h=$(stage_pid off f)
	[ "$(ring_field off source:out=f:in cons.pid)" = "$h" ]
	[ "$(ring_field off f:out=sink:in prod.pid)" = "$h" ]
	snb-ctl off stop
	st=0; wait $pid || st=$?
	cat "$T/err"
	[ "$st" -eq 0 ]
	grep -q " 0 sequence errors, 0 lost" "$T/err"
}

@test "a dead stage's claim is cleared before it is reaped (no signal to a reused pid)" {
	timeout 60 snb-run -n dead --restart=on-failure "source --rate 1k | f: filter udp | sink" 2> "$T/err" 3>&- &
	pid=$!
	wait_stages dead 3
	for i in 1 2 3; do
		f=$(stage_pid dead f)
		kill -KILL "$f"
		# Once the zombie is reaped its pid is free: no ring may name it.
		while kill -0 "$f" 2>/dev/null; do sleep 0.01; done
		[ "$(ring_field dead source:out=f:in cons.pid)" != "$f" ]
		[ "$(ring_field dead f:out=sink:in prod.pid)" != "$f" ]
		wait_stages dead 3
	done
	snb-ctl dead stop
	st=0; wait $pid || st=$?
	[ "$st" -eq 0 ]
}

@test "snb-ctl restart is counted as a restart (snb-ctl show, snb-ps, stage file)" {
	timeout 60 snb-run -n rs "source --rate 10k --seq | f: filter udp | sink --check-seq --summary" 2> "$T/err" 3>&- &
	pid=$!
	wait_stages rs 3
	run snb-ctl rs restart f
	[ "$status" -eq 0 ]
	run snb-ctl rs restart f
	[ "$status" -eq 0 ]
	snb-ctl rs show | grep -q "stage f pid [0-9]* restarts 2 "
	# snb-ps reads the stage file, which the new process writes as it
	# starts: a moment after the reply on a loaded machine.
	restarts() {
		[ "$(snb-ps --json rs | jq '.graphs[0].stages[] | select(.label=="f") | .restarts')" = 2 ]
	}
	wait_for restarts
	snb-ctl rs stop
	st=0; wait $pid || st=$?
	[ "$st" -eq 0 ]
	grep -q " 0 sequence errors, 0 lost" "$T/err"
}

@test "self-links are counted in the stage's arguments (ASan: no overflow); leaky ones run" {
	timeout 60 snb-run -n self 'src: source --rate 1k | t: tee [a] |~ @t ; @t [b] |~ @t ; @t [c] |~ @t ; @t [d] |~ @t ; @t [e] | sink' 2> "$T/err" 3>&- &
	pid=$!
	wait_stages self 3
	snb-ctl self show | grep -q 'link t.b -> t.in'
	snb-ctl self stop
	st=0; wait $pid || st=$?
	cat "$T/err"
	[ "$st" -eq 0 ]
}

@test "a corrupt ring index fails the stage with a message naming the ring" {
	timeout 60 snb-run -n bad "source --rate 1k | f: filter ip | sink" 2> "$T/err" 3>&- &
	pid=$!
	wait_stages bad 3
	s=$(stage_pid bad source)
	kill -STOP "$s"
	tail=$(ring_field bad source:out=f:in cons.tail)
	ring_field bad source:out=f:in prod.head $((tail + 100000)) > /dev/null
	# f looks again within the idle cap (100 ms); once it has seen it,
	# the source may go on (it is asked to leave as the graph drains).
	for i in $(seq 100); do grep -q "corrupt ring" "$T/err" && break; sleep 0.1; done
	kill -CONT "$s"
	st=0; wait $pid || st=$?
	cat "$T/err"
	[ "$st" -eq 1 ]
	grep -q "source:out=f:in: corrupt ring: head $((tail + 100000)), tail $tail" "$T/err"
	grep -q "f: stopping: a ring is corrupt" "$T/err"
}

@test "a producer's tail passing its head is corrupt too" {
	timeout 60 snb-run -n bad2 "source --rate 1k | f: filter ip | s: sink" 2> "$T/err" 3>&- &
	pid=$!
	wait_stages bad2 3
	s=$(stage_pid bad2 s)
	kill -STOP "$s"
	head=$(ring_field bad2 f:out=s:in prod.head)
	ring_field bad2 f:out=s:in cons.tail $((head + 5000)) > /dev/null
	for i in $(seq 100); do grep -q "corrupt ring" "$T/err" && break; sleep 0.1; done
	kill -CONT "$s"
	st=0; wait $pid || st=$?
	cat "$T/err"
	[ "$st" -eq 1 ]
	grep -q "f:out=s:in: corrupt ring" "$T/err"
}

@test "a refused swap returns the replacement's own words, checked in standby; the old stage runs on" {
	timeout 60 snb-run -n ref "source --rate 10k --seq | f: filter udp | sink --check-seq --summary" 2> "$T/err" 3>&- &
	pid=$!
	wait_stages ref 3
	old=$(stage_pid ref f)
	run snb-ctl ref swap f 'filter udp prot 5'
	[ "$status" -eq 1 ]
	assert_output_has "bad filter expression 'udp prot 5'"
	assert_output_has "f keeps running"
	run snb-ctl ref swap f 'filter --reject-port ip'
	[ "$status" -eq 1 ]
	assert_output_has "--reject-port given but port 'reject' is not connected"
	[ "$(stage_pid ref f)" = "$old" ]
	snb-ctl ref stop
	st=0; wait $pid || st=$?
	cat "$T/err"
	[ "$st" -eq 0 ]
	grep -q " 0 sequence errors, 0 lost" "$T/err"
}

@test "a slow control client does not hold up supervision: restarts and show go on" {
	timeout 60 snb-run -n slow --restart=on-failure "source --rate 10k --seq | f: filter udp | sink --check-seq --allow-loss --summary" 2> "$T/err" 3>&- &
	pid=$!
	wait_stages slow 3
	# One byte every 1.9 s: about 8 s for "show".
	python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
try:
    for c in b"show":
        s.send(bytes([c])); time.sleep(1.9)
except OSError:
    pass
' "$SNB_RUN_DIR/slow/ctl" &
client=$!
	sleep 0.5
	f=$(stage_pid slow f)
	kill -KILL "$f"
	g=$(wait_replaced slow f "$f")
	run timeout 3 snb-ctl slow show
	[ "$status" -eq 0 ]
	kill -0 "$client"	# the slow client is still at it
	wait "$client" || true
	snb-ctl slow stop
	st=0; wait $pid || st=$?
	[ "$st" -eq 0 ]
}

@test "Ctrl-C during a swap that waits for a stopped stage stops the graph at once" {
	timeout 60 snb-run -n int "source --rate 1k | f: filter udp | sink" 2> "$T/err" 3>&- &
	pid=$!
	wait_stages int 3
	f=$(stage_pid int f)
	kill -STOP "$f"
	snb-ctl int swap f 'filter ip' > "$T/swap" 2>&1 &
	sleep 0.5
	kill -INT $pid
	# The stop is served at once, not after the swap gave up (5 s): the
	# swap's client hears that the graph is stopping.
	st=0; wait $pid || st=$?
	[ "$st" -eq 130 ]
	wait
	cat "$T/swap"
	grep -q "error: the graph is stopping" "$T/swap"
}

@test "--restart=on-failure never turns a failure at end of stream into success" {
	run timeout 60 snb-run --restart=on-failure 'source --count 1000 --seq | s: sink --check-seq ; source --count 1000 --seq | @s'
	echo "$output"
	[ "$status" -eq 1 ]
	assert_output_has "s failed at end of stream: not restarted"
	run timeout 60 snb-run 'source --count 1000 --seq | s: sink --check-seq ; source --count 1000 --seq | @s'
	[ "$status" -eq 1 ]
}

@test "a failing source delivers what it read: the rest of the graph drains, then snb-run fails" {
	snb-run "source --count 20000 --seq | pcap-write $T/big.pcap"
	sz=$(stat -c %s "$T/big.pcap")
	head -c $((sz / 2 + 7)) "$T/big.pcap" > "$T/trunc.pcap"
	whole=$(tcpdump -nr "$T/trunc.pcap" 2>/dev/null | wc -l)
	run timeout 60 snb-run "pcap-read $T/trunc.pcap | filter udp | s: sink --check-seq --expect $whole --summary"
	echo "$output"
	[ "$status" -eq 1 ]
	assert_output_has "sink: $whole packets"
	assert_output_has "pcap-read failed: draining"
	run timeout 60 snb-run --restart=on-failure "pcap-read $T/trunc.pcap | filter udp | s: sink --check-seq --expect $whole --summary"
	[ "$status" -eq 1 ]
	assert_output_has "sink: $whole packets"
	assert_output_has "not restarted"
}

@test "60 SIGKILLs of a filter under load: at most a burst lost per kill, nothing twice or out of order" {
	K=$((60 / SNB_TEST_SCALE)); R=$((500000 / SNB_TEST_SCALE))
	timeout 300 snb-run -n k60 --restart=on-failure --max-restarts 100 "source --rate $R --seq | f: filter udp | sink --check-seq --allow-loss --summary" 2> "$T/err" 3>&- &
	pid=$!
	wait_stages k60 3
	for i in $(seq $K); do
		f=$(stage_pid k60 f)
		kill -KILL "$f"
		g=$(wait_replaced k60 f "$f")
		sleep 0.3	# past QUICK_FAIL_MS: the back-off starts over
	done
	snb-ctl k60 stop
	st=0; wait $pid || st=$?
	[ "$st" -eq 0 ]
	[ "$(grep -c 'restarting f' "$T/err")" -eq "$K" ]
	grep -q " 0 sequence errors" "$T/err"
	lost=$(sed -n 's/.* sequence errors, \([0-9]*\) lost/\1/p' "$T/err")
	echo "# $K kills: $lost packets lost" >&3
	[ "$lost" -le $((64 * K)) ]
}
