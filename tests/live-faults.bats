#!/usr/bin/env bats
# Live operation's edges: signals at every phase of snb-run (a background
# job of a shell without job control has SIGINT ignored, as here), a stage
# that fails only when it starts, a full disk under pcap-write, closed
# pipes, stopped processes, and the graph's directory removed from outside.
load helpers

eval "$(declare -f teardown | sed '1s/teardown/helpers_teardown/')"
teardown() {
	if [ -n "${FULL:-}" ] && mountpoint -q "$FULL"; then
		umount "$FULL"
	fi
	helpers_teardown
}

# Apps that take their time, at the phase a test signals in: each makes
# its marker file, then waits on a FIFO nobody writes (a bash builtin: no
# child left behind when it is killed), then is snb-filter: 3 s in
# --describe (snb-run gives up after 5), 5 s in init().
slow_apps() {
	mkdir -p "$T/bin"
	mkfifo "$T/never"
	cat > "$T/bin/snb-slowdesc" <<-EOF
	#!/bin/bash
	if [ "\$1" = --describe ]; then
		: > "$T/describing"
		read -r -t 3 <> "$T/never"
	fi
	exec snb-filter "\$@"
	EOF
	cat > "$T/bin/snb-slowstart" <<-EOF
	#!/bin/bash
	if [ "\$1" != --describe ]; then
		: > "$T/starting"
		read -r -t 5 <> "$T/never"
	fi
	exec snb-filter "\$@"
	EOF
	chmod +x "$T/bin/snb-slowdesc" "$T/bin/snb-slowstart"
}

@test "a signal while the apps describe themselves ends snb-run at once, SIGINT too in a background job" {
	slow_apps
	for sig in INT TERM HUP; do
		rm -f "$T/describing"
		SNB_PATH="$T/bin" snb-run -n d$sig 'source --rate 1k | slowdesc udp | sink' 2> "$T/err" 3>&- &
		pid=$!
		wait_for test -e "$T/describing"
		kill -$sig $pid
		# An ignored SIGINT was lost: the graph ran on.
		bg_wait $pid
		cat "$T/err"
		[ "$st" = "$(signal_status $sig)" ]
		nothing_left
	done
}

@test "a signal while the stages start stops the graph: no stage left, the directory removed" {
	slow_apps
	for sig in INT TERM HUP; do
		rm -f "$T/starting"
		SNB_PATH="$T/bin" snb-run -n s$sig 'source --rate 1k | f: slowstart udp | sink' 2> "$T/err" 3>&- &
		pid=$!
		wait_for test -e "$T/starting"
		kill -$sig $pid
		bg_wait $pid
		cat "$T/err"
		[ "$st" = "$(signal_status $sig)" ]
		nothing_left
	done
}

@test "a signal while the graph runs, and in the middle of a swap: the replacement goes too" {
	slow_apps
	for sig in INT TERM HUP; do
		snb-run -n r$sig 'source --rate 1k | f: filter udp | sink' 2> "$T/err" 3>&- &
		pid=$!
		wait_stages r$sig 3
		kill -$sig $pid
		bg_wait $pid
		[ "$st" = "$(signal_status $sig)" ]
		nothing_left
		# The replacement waits in its init(), in standby.
		rm -f "$T/starting"
		SNB_PATH="$T/bin" snb-run -n w$sig 'source --rate 1k | f: filter udp | sink' 2> "$T/err" 3>&- &
		pid=$!
		wait_stages w$sig 3
		timeout 30 snb-ctl w$sig swap f 'slowstart ip' > "$T/swap" 2>&1 3>&- &
		ctl=$!
		wait_for test -e "$T/starting"
		kill -$sig $pid
		bg_wait $pid
		cat "$T/err"
		[ "$st" = "$(signal_status $sig)" ]
		wait $ctl || true
		cat "$T/swap"
		grep -q "error: the graph is stopping" "$T/swap"
		nothing_left
	done
}

@test "a swap's replacement that takes its time in --describe holds nothing up: a stage that dies meanwhile is restarted, snb-ctl answered" {
	# snb-descwait: --describe waits on a FIFO nobody writes, 4 s at
	# most ($T/hang: 8 s, past snb-run's 5; $T/fast: 0.5 s), marking
	# when it starts and when it has waited.
	mkdir -p "$T/bin"
	mkfifo "$T/never"
	cat > "$T/bin/snb-descwait" <<-EOF
	#!/bin/bash
	if [ "\$1" = --describe ]; then
		: > "$T/describing"
		t=4; [ -e "$T/hang" ] && t=8; [ -e "$T/fast" ] && t=0.5
		read -r -t \$t <> "$T/never"
		: > "$T/described"
	fi
	exec snb-filter "\$@"
	EOF
	chmod +x "$T/bin/snb-descwait"
	SNB_PATH="$T/bin" snb-run -n dw --restart=on-failure 'source --rate 1k | f: filter udp | sink' 2> "$T/err" 3>&- &
	pid=$!
	wait_stages dw 3
	old=$(stage_pid dw f)
	timeout 30 snb-ctl dw swap f 'descwait udp' > "$T/swap" 2>&1 3>&- &
	ctl=$!
	wait_for test -e "$T/describing"
	# Answered while the replacement still describes itself.
	timeout 10 snb-ctl dw show > "$T/show"
	[ ! -e "$T/described" ]
	grep -q "^stage f pid $old " "$T/show"
	# The stage dies: the swap is called off, the describing app killed,
	# and the stage restarted without waiting for it.
	kill -9 "$old"
	new=$(wait_replaced dw f "$old")
	[ ! -e "$T/described" ]
	st=0; wait $ctl || st=$?
	cat "$T/swap"
	[ "$st" -eq 1 ]
	grep -q "error: f (pid $old) left while its replacement was starting; swap called off" "$T/swap"
	# One that never answers in time is given up on, the stage untouched.
	: > "$T/hang"
	run timeout 30 snb-ctl dw swap f 'descwait udp'
	echo "$output"
	[ "$status" -eq 1 ]
	assert_output_has "--describe did not answer in 5000 ms; f keeps running"
	[ "$(stage_pid dw f)" = "$new" ]
	[ ! -e "$T/described" ]
	# One that answers late is swapped in.
	rm "$T/hang"; : > "$T/fast"
	run timeout 30 snb-ctl dw swap f 'descwait ip'
	echo "$output"
	[ "$status" -eq 0 ]
	assert_output_has "ok: swapped f: pid $new -> "
	[ -e "$T/described" ]
	snb-ctl dw stop
	bg_wait $pid
	cat "$T/err"
	[ "$st" -eq 0 ]
	grep -q "restarting f" "$T/err"
	nothing_left
}

@test "SIGTERM in the middle of a rolling swap of copies: the graph stops, nothing left" {
	slow_apps
	SNB_PATH="$T/bin" snb-run -n roll 'source --rate 1k | lb | 2x( w: filter udp ) | join | sink' 2> "$T/err" 3>&- &
	pid=$!
	wait_stages roll 6
	timeout 30 snb-ctl roll swap w 'slowstart ip' > "$T/swap" 2>&1 3>&- &
	ctl=$!
	wait_for test -e "$T/starting"
	kill -TERM $pid
	bg_wait $pid
	cat "$T/err"
	[ "$st" = 143 ]
	wait $ctl || true
	cat "$T/swap"
	grep -q "^error: .*stop" "$T/swap"
	nothing_left
}

@test "a stage that fails only in start(): -c passes, the run stops at once naming it, even with --restart=on-failure" {
	[ "$(id -u)" -eq 0 ] || skip "needs root (AF_XDP)"
	# The loopback has no native XDP: the socket is refused at start.
	run snb-run -c 'source --rate 10 | sink ; nic xdp:lo | s: sink'
	[ "$status" -eq 0 ]
	run timeout 30 snb-run --restart=on-failure 'source --rate 10 | sink ; nic xdp:lo | s: sink'
	echo "$output"
	[ "$status" -eq 1 ]
	assert_output_has "snb-nic: xdp:lo: "
	assert_output_has "snb-run: 1:27: nic-xdp_lo (pid "
	assert_output_has ") failed to start: exited with status 1; stopping the graph"
	[[ "$output" != *restarting* ]]
	nothing_left
	# A file the writer cannot create, found by its init(): the same.
	run timeout 30 snb-run --restart=on-failure "source --rate 10 | w: pcap-write $T/no/such/dir/x.pcap"
	echo "$output"
	[ "$status" -eq 1 ]
	assert_output_has "snb-pcap-write: $T/no/such/dir/x.pcap: No such file or directory"
	assert_output_has "snb-run: 1:20: w (pid "
	assert_output_has ") failed to start: exited with status 1"
	[[ "$output" != *restarting* ]]
	nothing_left
}

@test "pcap-write on a full disk: it says so, the graph stops, the file is whole up to its last record" {
	[ "$(id -u)" -eq 0 ] || skip "needs root (mount)"
	FULL="$T/full"
	mkdir "$FULL"
	mount -t tmpfs -o size=256k none "$FULL"
	run timeout 30 snb-run "source --count 10000 --size 500 --seq | w: pcap-write $FULL/x.pcap"
	echo "$output"
	[ "$status" -eq 1 ]
	assert_output_has "snb-pcap-write: $FULL/x.pcap: write error: No space left on device (the file ends after its last whole record)"
	assert_output_has "w (pid"
	nothing_left
	# tcpdump reads it all without a complaint ...
	tcpdump -r "$FULL/x.pcap" -w /dev/null 2> "$T/td"
	cat "$T/td"
	! grep -qi 'truncated\|error' "$T/td" || false
	# ... every packet written once, in order, from the first.
	run snb-run "pcap-read $FULL/x.pcap | sink --check-seq --summary"
	echo "$output"
	[ "$status" -eq 0 ]
	echo "$output" | grep -q "sink: [1-9][0-9]* packets.* 0 sequence errors, 0 lost"
	n=$(npackets "$FULL/x.pcap")
	[ "$n" -gt 100 ]
	# Restarted, it had written: a failure, not a failure to start.  The
	# new writer cuts what its predecessor may have torn and fails the
	# same way; the file stays whole.
	rm "$FULL/x.pcap"
	run timeout 30 snb-run --restart=on-failure --max-restarts 1 "source --count 10000 --size 500 --seq | w: pcap-write $FULL/x.pcap"
	echo "$output"
	[ "$status" -eq 1 ]
	assert_output_has "restarting w"
	assert_output_has "w failed 2 times in a row: stopping the graph"
	[[ "$output" != *"failed to start"* ]]
	nothing_left
	tcpdump -r "$FULL/x.pcap" -w /dev/null 2> "$T/td"
	! grep -qi 'truncated\|error' "$T/td" || false
	[ "$(npackets "$FULL/x.pcap")" -eq "$n" ]
	umount "$FULL"
}

# closed_pipe COMMAND...: run it with its standard output a pipe whose
# reader has already gone; print its status (negative: killed by that
# signal) and what it said on standard error.
closed_pipe() {
	/usr/bin/python3 - "$@" <<-'EOF'
	import os, subprocess, sys
	r, w = os.pipe()
	os.close(r)
	p = subprocess.run(sys.argv[1:], stdout=w, stderr=subprocess.PIPE, timeout=20)
	print(p.returncode, repr(p.stderr.decode()))
	EOF
}

@test "closed pipes: every tool and a graph end quietly with status 0 when their reader has gone" {
	snb-run -n cp 'source --rate 1k | f: filter udp | sink' 3>&- &
	pid=$!
	wait_stages cp 3
	for c in "snb-ps" "snb-ps --json" "snb-top -b -i 0.1" "snb-top -1" \
	    "snb-top --json" "snb-top --prometheus" "snb-ctl cp show" \
	    "snb-run -c source | sink" "snb-run --list" \
	    "snb-run source --count 1000 | pcap-write -"; do
		# shellcheck disable=SC2086
		out=$(closed_pipe $c)
		echo "$c: $out"
		[ "$out" = "0 ''" ]
	done
	# The reader leaves after its first line, as head does.
	run timeout 20 bash -c 'snb-top -b -i 0.1 | head -1; echo "${PIPESTATUS[*]}"'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[1]}" = "0 0" ]
	run timeout 20 bash -c "snb-run 'source --rate 10k --seq | pcap-write -' | tcpdump -c 5 -r - 2>/dev/null | wc -l; echo \"\${PIPESTATUS[*]}\""
	echo "$output"
	[ "${lines[0]}" -eq 5 ]
	[ "${lines[1]}" = "0 0 0" ]
	snb-ctl cp stop
	wait $pid
}

@test "SIGSTOP of a stage and of snb-run itself: the graph resumes, a finite stream ends by itself" {
	N=$((200000 / SNB_TEST_SCALE))
	# A stream of 4 s, whatever the scale.
	snb-run -n stp --restart=on-failure "source --count $N --rate $((N / 4)) --seq | f: filter udp | sink --check-seq --allow-loss --summary" 2> "$T/err" 3>&- &
	pid=$!
	wait_count stp sink 100
	f=$(stage_pid stp f)
	kill -STOP "$f"
	sleep 0.5
	kill -CONT "$f"
	# snb-run stopped while a stage dies: it restarts it once resumed.
	kill -STOP "$pid"
	kill -KILL "$f"
	sleep 0.5
	kill -CONT "$pid"
	bg_wait $pid
	cat "$T/err"
	[ "$st" = 0 ]
	grep -q "restarting f" "$T/err"
	grep -q "sink: [0-9]* packets.* 0 sequence errors" "$T/err"
	# The kill loses at most the burst the filter held; the stop nothing.
	lost=$(sed -n 's/.* sequence errors, \([0-9]*\) lost.*/\1/p' "$T/err")
	[ "$lost" -le 64 ]
	nothing_left
}

@test "the graph's directory removed from outside: the graph stops and says why, nothing left" {
	for how in rm mv; do
		snb-run -n gone --restart=on-failure 'source --rate 1k | f: filter udp | sink' 2> "$T/err" 3>&- &
		pid=$!
		wait_stages gone 3
		if [ $how = rm ]; then
			rm -rf "$SNB_RUN_DIR/gone"
		else
			mv "$SNB_RUN_DIR/gone" "$T/moved"
		fi
		bg_wait $pid
		cat "$T/err"
		[ "$st" = 1 ]
		grep -q "snb-run: $SNB_RUN_DIR/gone: the graph's directory was removed from outside: stopping the graph" "$T/err"
		! grep -q "restarting" "$T/err" || false
		nothing_left
		rm -rf "$T/moved"
	done
}

# sigterm_pending PID: a SIGTERM waits for the (stopped) process.
sigterm_pending() {
	local m
	m=$(awk '/^ShdPnd:/ { print $2 }' "/proc/$1/status" 2>/dev/null)
	[ -n "$m" ] && [ $((0x$m & 0x4000)) -ne 0 ]
}

# standby_of RUN OLD: the pid of RUN's child that is a swap's replacement
# of the stage OLD (a stage once swapped in keeps its standby words).
standby_of() {
	local c
	for c in $(children_of "$1"); do
		[ "$c" != "$2" ] &&
		    grep -qa -- --snb-standby-fd "/proc/$c/cmdline" 2>/dev/null &&
		    echo "$c"
	done
}

# stage_is GRAPH LABEL PID: PID serves the stage.
stage_is() {
	[ "$(stage_pid "$1" "$2")" = "$3" ]
}

# claim RING OFFSET: the pid a ring's side names (80: producer, 140:
# consumer; see struct ring_shm).
claim() {
	od -An -t d4 -j "$2" -N 4 "$1" | tr -d ' '
}

@test "a swap is answered ok only once the replacement has taken its rings; one that dies taking over is told so" {
	snb-run -n tk --restart=on-failure 'source --rate 1k | f: filter udp | sink' 2> "$T/err" 3>&- &
	pid=$!
	wait_stages tk 3
	rin="$SNB_RUN_DIR/tk/rings/source:out=f:in"
	rout="$SNB_RUN_DIR/tk/rings/f:out=sink:in"
	for how in CONT KILL; do
		old=$(stage_pid tk f)
		# The old stage stopped: its SIGTERM (the replacement is ready)
		# waits, and the replacement can be stopped before it is told
		# to take over.
		kill -STOP "$old"
		timeout 60 snb-ctl tk swap f 'filter ip' > "$T/swap" 2>&1 3>&- &
		ctl=$!
		wait_for sigterm_pending "$old"
		new=$(standby_of $pid "$old")
		[ -n "$new" ]
		kill -STOP "$new"
		kill -CONT "$old"
		# The old one left, the replacement is the stage (its file)...
		wait_for exited "$old"
		wait_for stage_is tk f "$new"
		# ... but it has claimed nothing: no answer yet.
		sleep 0.5
		kill -0 $ctl
		[ ! -s "$T/swap" ]
		[ "$(claim "$rin" 140)" != "$new" ]
		kill -$how "$new"
		st=0; wait $ctl || st=$?
		cat "$T/swap"
		if [ $how = CONT ]; then
			[ "$st" -eq 0 ]
			grep -q "^ok: swapped f: pid $old -> $new, stall" "$T/swap"
			# What ok means: both rings name it.
			[ "$(claim "$rin" 140)" = "$new" ]
			[ "$(claim "$rout" 80)" = "$new" ]
		else
			[ "$st" -eq 1 ]
			grep -q "^error: replacement filter (pid $new) of f died while taking over (signal 9); it is restarted (--restart=on-failure)" "$T/swap"
			wait_replaced tk f "$new"
		fi
	done
	wait_count tk sink $(( $(stage_value tk sink) + 10 ))
	snb-ctl tk stop
	bg_wait $pid
	cat "$T/err"
	[ "$st" -eq 0 ]
	nothing_left
}

# in_standby PID: a swap's replacement has said ready and waits for go
# (stage_standby()'s sigwait).
in_standby() {
	grep -q sigtimedwait "/proc/$1/wchan" 2>/dev/null
}

@test "a replacement that dies before it takes over: the old stage kept if it was not told to leave yet, the answer says which" {
	# snb-gate: waits for $T/go before it becomes snb-filter.
	mkdir -p "$T/bin"
	cat > "$T/bin/snb-gate" <<-EOF
	#!/bin/bash
	if [ "\$1" != --describe ]; then
		: > "$T/gated"
		while [ ! -e "$T/go" ]; do sleep 0.05; done
	fi
	exec snb-filter "\$@"
	EOF
	chmod +x "$T/bin/snb-gate"
	SNB_PATH="$T/bin" snb-run -n rd 'source --rate 1k | f: filter udp | sink' 2> "$T/err" 3>&- &
	pid=$!
	wait_stages rd 3
	old=$(stage_pid rd f)
	# Ready and dead before snb-run has read its "ready": nothing is
	# retired for it (the old stage was, and was started again).
	timeout 60 snb-ctl rd swap f 'gate ip' > "$T/swap" 2>&1 3>&- &
	ctl=$!
	wait_for test -e "$T/gated"
	kill -STOP $pid
	: > "$T/go"
	new=$(standby_of $pid "$old")
	[ -n "$new" ]
	wait_for in_standby "$new"
	kill -KILL "$new"
	wait_for exited "$new"		# a zombie by the time snb-run looks
	kill -CONT $pid
	st=0; wait $ctl || st=$?
	cat "$T/swap"
	[ "$st" -eq 1 ]
	grep -q "^error: replacement gate failed to start (signal 9); f keeps running" "$T/swap"
	sleep 0.5
	[ "$(stage_pid rd f)" = "$old" ]
	! grep -q "left late" "$T/err" || false
	# Dead while the old stage leaves (stopped, its SIGTERM pending):
	# it is started again once it has left, as the answer says.
	kill -STOP "$old"
	timeout 60 snb-ctl rd swap f 'filter ip' > "$T/swap" 2>&1 3>&- &
	ctl=$!
	wait_for sigterm_pending "$old"
	new=$(standby_of $pid "$old")
	[ -n "$new" ]
	kill -KILL "$new"
	st=0; wait $ctl || st=$?
	cat "$T/swap"
	[ "$st" -eq 1 ]
	grep -q "^error: replacement filter failed to start (signal 9); f was told to leave: it is started again when it leaves" "$T/swap"
	kill -CONT "$old"
	wait_replaced rd f "$old"
	wait_count rd sink $(( $(stage_value rd sink) + 10 ))
	snb-ctl rd stop
	bg_wait $pid
	cat "$T/err"
	[ "$st" -eq 0 ]
	nothing_left
}

# stopped PID: the process is stopped (SIGSTOP).
stopped() {
	[ "$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" = T ]
}

@test "a stage stopped right after a publish: its sleeping consumer is woken, not left to the idle cap" {
	# snb-stopper stops itself in the breath that forwards the 5th packet,
	# before its batched wake-up of the sink goes out; the sink sleeps
	# between packets (20 a second), and its idle cap is 10 minutes.
	SNB_IDLE_CAP_MS=600000 snb-run -n stw 'source --rate 20 --count 1000 | s: stopper 5 | sink' 2> "$T/err" 3>&- &
	pid=$!
	wait_stages stw 3
	s=$(stage_pid stw s)
	wait_for stopped "$s"
	wait_count stw sink 5
	stopped "$s"
	kill -CONT "$s"
	snb-ctl stw stop
	bg_wait $pid
	cat "$T/err"
	[ "$st" -eq 0 ]
	nothing_left
}

# tracer PID FILE: hold PID under ptrace (PTRACE_SEIZE: it runs on; a
# signal then stops it in a tracing stop, which only the tracer hears
# of), FILE.seized once it does, until FILE exists.
tracer() {
	/usr/bin/python3 - "$1" "$2" <<'PYEOF'
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p,
    ctypes.c_void_p]
if libc.ptrace(0x4206, int(sys.argv[1]), None, None) != 0:	# PTRACE_SEIZE
    sys.exit("ptrace: " + os.strerror(ctypes.get_errno()))
open(sys.argv[2] + ".seized", "w").close()
for _ in range(1200):
    if os.path.exists(sys.argv[2]):
        break
    time.sleep(0.05)
PYEOF
}

@test "a stage stopped by a debugger right after a publish: its sleeping consumer is woken all the same" {
	# As above, but the stopper is traced: its SIGSTOP stops it for the
	# tracer ('t'), and snb-run's waitid() never hears of it.  Its
	# supervision tick finds the sink asleep with a packet waiting and
	# the stopper in a tracing stop, and wakes the sink.
	SNB_IDLE_CAP_MS=600000 snb-run -n stwt 'source --rate 20 --count 1000 | s: stopper 40 | sink' 2> "$T/err" 3>&- &
	pid=$!
	wait_stages stwt 3
	s=$(stage_pid stwt s)
	tracer "$s" "$T/release" &
	tpid=$!
	wait_for test -e "$T/release.seized"
	wait_for eval '[ "$(awk "{ print \$3 }" /proc/$s/stat)" = t ]'
	WAIT_FOR_S=20 wait_count stwt sink 40
	[ "$(awk '{ print $3 }' /proc/$s/stat)" = t ]
	touch "$T/release"
	wait "$tpid"
	kill -CONT "$s"
	snb-ctl stwt stop
	bg_wait $pid
	cat "$T/err"
	[ "$st" -eq 0 ]
	nothing_left
}

@test "an app whose --describe leaves a process holding its answer's pipe: snb-run does not wait for that process" {
	# snb-bgdesc's --describe leaves a job behind that keeps its standard
	# output (the pipe snb-run reads) open for 4.5 s, then marks that it
	# has gone.  snb-run's answer is whole when the app exits: -c is done
	# long before the job (it used to wait for the pipe's end).
	mkdir -p "$T/bin"
	mkfifo "$T/never"
	cat > "$T/bin/snb-bgdesc" <<-EOF
	#!/bin/bash
	if [ "\$1" = --describe ]; then
		( read -r -t 4.5 <> "$T/never"; : > "$T/held" ) &
	fi
	exec snb-filter "\$@"
	EOF
	chmod +x "$T/bin/snb-bgdesc"
	run env SNB_PATH="$T/bin" snb-run -c 'source --count 10 | f: bgdesc udp | sink'
	echo "$output"
	[ "$status" -eq 0 ]
	[ ! -e "$T/held" ]
	wait_for test -e "$T/held"
}

@test "a run directory too small for the rings: snb-run says so naming the ring, no stage dies of SIGBUS" {
	FULL="$T/full"
	mkdir -p "$FULL"
	mount -t tmpfs -o size=2M snb-full "$FULL" || skip "cannot mount tmpfs"
	export SNB_RUN_DIR="$FULL/run" SNB_HUGE_DIR=none
	# Two rings of 512 slots of 10 KB: 10 MB in 2.
	run timeout 60 snb-run -n full 'source --count 1000 | f: filter udp | sink --expect 1000'
	echo "$output"
	[ "$status" -eq 1 ]
	assert_output_has "snb-run: $FULL/run/full/rings/source:out=f:in: No space left on device"
	! echo "$output" | grep -q "Bus error" || false
	nothing_left
	# Rings that fit run.
	run timeout 60 snb-run -n full --slots 64 'source --count 1000 | f: filter udp | sink --expect 1000'
	echo "$output"
	[ "$status" -eq 0 ]
	nothing_left
}

@test "a restart is answered ok only once the new process has taken its rings" {
	# snb-gated runs snb-filter at once, or, once $T/gate is there, only
	# after $T/go is: the restarted process is held before its claim.
	mkdir -p "$T/bin"
	cat > "$T/bin/snb-gated" <<-EOF
	#!/bin/bash
	if [ "\$1" != --describe ] && [ -e "$T/gate" ]; then
		while [ ! -e "$T/go" ]; do sleep 0.05; done
	fi
	exec snb-filter "\$@"
	EOF
	chmod +x "$T/bin/snb-gated"
	SNB_PATH="$T/bin" snb-run -n rg 'source --rate 1k | f: gated udp | sink' 2> "$T/err" 3>&- &
	pid=$!
	wait_stages rg 3
	old=$(stage_pid rg f)
	: > "$T/gate"
	timeout 60 snb-ctl rg restart f > "$T/restart" 2>&1 3>&- &
	ctl=$!
	wait_for exited "$old"
	# Started again, held before its claim: no answer yet.
	sleep 0.5
	kill -0 $ctl
	[ ! -s "$T/restart" ]
	: > "$T/go"
	st=0; wait $ctl || st=$?
	cat "$T/restart"
	[ "$st" -eq 0 ]
	new=$(sed -n 's/^ok: restarted f: pid [0-9]* -> \([0-9]*\)$/\1/p' "$T/restart")
	[ -n "$new" ]
	[ "$(claim "$SNB_RUN_DIR/rg/rings/source:out=f:in" 140)" = "$new" ]
	[ "$(claim "$SNB_RUN_DIR/rg/rings/f:out=sink:in" 80)" = "$new" ]
	snb-ctl rg stop
	bg_wait $pid
	cat "$T/err"
	[ "$st" -eq 0 ]
	nothing_left
}
