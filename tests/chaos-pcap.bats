#!/usr/bin/env bats
# Chaos at the edges of a graph: pcap-read and pcap-write restarted
# (snb-ctl restart), SIGKILLed under --restart=on-failure and swapped
# while packets flow.  Every packet must come out exactly once and in
# order, and the files must read cleanly.  Events are spaced by sleeps
# only to let packets flow between them: nothing here measures time.
load helpers

# A test that fails half-way must not leave a writer blocked on a pipe
# nobody reads (descriptor 5 holds the FIFOs the tests read at their pace).
eval "helpers_$(declare -f teardown)"
teardown() {
	exec 5<&-
	helpers_teardown
}

# chaos GRAPH LABEL restart|kill|swap [APP ARGS]: do it, and wait until
# another process serves the stage.
chaos() {
	old=$(stage_pid "$1" "$2")
	[ -n "$old" ] || { echo "no stage $2 in $1"; return 1; }
	case $3 in
	restart) snb-ctl "$1" restart "$2" || return 1 ;;
	swap) snb-ctl "$1" swap "$2" "$4" || return 1 ;;
	kill) kill -KILL "$old" ;;
	esac
	wait_replaced "$1" "$2" "$old" > /dev/null
}

# seqs FILE [N [FIRST]]: the records of pcap FILE hold snb-source sequence
# numbers FIRST (0 if not given), FIRST + 1, ... each once, in order (N of
# them if given and not -), the file ends with a whole record; prints how
# many.
seqs() {
	python3 - "$@" <<'EOF'
import struct, sys
d = open(sys.argv[1], 'rb').read()
if len(d) < 24 or struct.unpack('<I', d[:4])[0] != 0xa1b2c3d4:
    sys.exit('%s: not a microsecond pcap file' % sys.argv[1])
first = int(sys.argv[3]) if len(sys.argv) > 3 else 0
off, n = 24, first
while off + 16 <= len(d):
    incl = struct.unpack('<4I', d[off:off + 16])[2]
    rec = d[off + 16:off + 16 + incl]
    if len(rec) < incl:
        break
    s = struct.unpack('>Q', rec[42:50])[0] if incl >= 50 else None
    if s != n:
        sys.exit('record %d holds sequence %s' % (n, s))
    n += 1
    off += 16 + incl
if off != len(d):
    sys.exit('%s: a torn record at offset %d of %d' % (sys.argv[1], off, len(d)))
if len(sys.argv) > 2 and sys.argv[2] != '-' and n - first != int(sys.argv[2]):
    sys.exit('%d records, expected %s' % (n - first, sys.argv[2]))
print(n - first)
EOF
}

# ended_ok PID [FILE...]: the graph PID ends; its stderr ($T/err) and
# FILEs shown; its status 0.
ended_ok() {
	local st=0

	wait "$1" || st=$?
	shift
	cat "$T/err" "$@"
	[ "$st" -eq 0 ]
}

# The number of records in pcap FILE.
npkts() {
	capinfos -T -r -c -M "$1" | cut -f2
}

# tcpdump and capinfos read FILE without a complaint.
reads_cleanly() {
	tcpdump -r "$1" -w /dev/null 2> "$T/td"
	! grep -qi 'truncated\|error\|bogus' "$T/td" || false
	capinfos "$1" > /dev/null
}

@test "pcap-write to a file: restart, SIGKILL and swap under load keep every packet once, in order" {
	R=$((100000 / SNB_TEST_SCALE))
	timeout 120 snb-run -n pwf --restart=on-failure "source --rate $R --seq | w: pcap-write $T/out.pcap" 2> "$T/err" 3>&- &
	pid=$!
	wait_stages pwf 2
	for ev in restart kill swap kill restart swap kill; do
		sleep 0.2
		chaos pwf w $ev "pcap-write $T/out.pcap"
	done
	sleep 0.2
	snb-ctl pwf stop
	ended_ok $pid
	n=$(seqs "$T/out.pcap")
	[ "$n" -gt 0 ]
	reads_cleanly "$T/out.pcap"
}

@test "pcap-write to a pipe: restart and swap give tcpdump one clean stream" {
	R=$((100000 / SNB_TEST_SCALE))
	( set -o pipefail; timeout 120 snb-run -n pwp "source --rate $R --seq | w: pcap-write -" 2> "$T/err" 3>&- |
	    tcpdump -r - -w "$T/out.pcap" 2> "$T/td0" ) &
	pid=$!
	wait_stages pwp 2
	for ev in restart swap restart swap swap restart; do
		sleep 0.2
		chaos pwp w $ev "pcap-write -"
	done
	sleep 0.2
	snb-ctl pwp stop
	ended_ok $pid "$T/td0"
	! grep -qi 'truncated\|error\|bogus' "$T/td0" || false
	n=$(seqs "$T/out.pcap")
	[ "$n" -gt 0 ]
	reads_cleanly "$T/out.pcap"
}

@test "pcap-write - to a regular file: SIGKILL, restart and swap keep every packet once" {
	R=$((100000 / SNB_TEST_SCALE))
	timeout 120 snb-run -n pws --restart=on-failure "source --rate $R --seq | w: pcap-write -" > "$T/out.pcap" 2> "$T/err" 3>&- &
	pid=$!
	wait_stages pws 2
	for ev in kill restart swap kill kill swap; do
		sleep 0.2
		chaos pws w $ev "pcap-write -"
	done
	sleep 0.2
	snb-ctl pws stop
	ended_ok $pid
	n=$(seqs "$T/out.pcap")
	[ "$n" -gt 0 ]
	reads_cleanly "$T/out.pcap"
}

@test "pcap-read: restart, SIGKILL and swap resume without a duplicate or a gap" {
	N=$((200000 / SNB_TEST_SCALE))
	snb-run "source --count $N --seq --size 60 | pcap-write $T/big.pcap"
	# The tee takes a packet only when both its outputs have room: while
	# nobody reads the pipe, nothing flows to the sink either.
	mkfifo "$T/fifo"
	timeout 120 snb-run -n prd --restart=on-failure "r: pcap-read $T/big.pcap | t: tee | sink --check-seq --expect $N --summary ; @t [1] | pcap-write -" > "$T/fifo" 2> "$T/err" 3>&- &
	pid=$!
	exec 5< "$T/fifo"
	wait_stages prd 4
	: > "$T/out.pcap"
	# Each event comes 5 N bytes of output (of 76 N) after the one before.
	for ev in restart kill swap kill restart swap kill; do
		chaos prd r $ev "pcap-read $T/big.pcap"
		head -c $((5 * N)) <&5 >> "$T/out.pcap"
	done
	cat <&5 >> "$T/out.pcap"
	exec 5<&-
	ended_ok $pid
	grep -q "^sink: $N packets.* 0 sequence errors, 0 lost" "$T/err"
	seqs "$T/out.pcap" $N
}

@test "pcap-read --loop with skipped records: a resumed reader sends the same stream" {
	mkpcap "$T/m.pcap" --count 20000
	# Records above 1500 bytes do not fit the rings: skipped, and counted.
	snb-run --capacity 1500 "pcap-read --loop 4 $T/m.pcap | pcap-write $T/base.pcap"
	mkfifo "$T/fifo"
	timeout 120 snb-run -n prl --capacity 1500 --restart=on-failure "r: pcap-read --loop 4 $T/m.pcap | w: pcap-write -" > "$T/fifo" 2> "$T/err" 3>&- &
	pid=$!
	# Nothing flows while nobody reads the pipe: it fills, then the ring.
	# Each event comes 2.5 MB of output (of 20) after the one before.
	exec 5< "$T/fifo"
	wait_stages prl 2
	: > "$T/out.pcap"
	for ev in restart kill swap kill restart swap kill kill; do
		chaos prl r $ev "pcap-read --loop 4 $T/m.pcap"
		head -c 2500000 <&5 >> "$T/out.pcap"
	done
	cat <&5 >> "$T/out.pcap"
	exec 5<&-
	ended_ok $pid
	[ "$(grep -c 'dropping records larger than 1500' "$T/err")" -le 1 ]
	cmp "$T/base.pcap" "$T/out.pcap"
}

@test "pcap-read swapped to the same file goes on, to another file starts that one" {
	N=$((200000 / SNB_TEST_SCALE))
	snb-run "source --count $N --seq --size 60 | pcap-write $T/a.pcap"
	cp "$T/a.pcap" "$T/b.pcap"
	mkfifo "$T/fifo"
	timeout 120 snb-run -n prs "r: pcap-read $T/a.pcap | w: pcap-write -" > "$T/fifo" 2> "$T/err" 3>&- &
	pid=$!
	exec 5< "$T/fifo"
	wait_stages prs 2
	chaos prs r swap "pcap-read $T/a.pcap"
	head -c 1000000 <&5 > "$T/out.pcap"
	chaos prs r swap "pcap-read $T/b.pcap"
	cat <&5 >> "$T/out.pcap"
	exec 5<&-
	ended_ok $pid
	# 0 .. k-1 of a.pcap, then 0 .. N-1 of b.pcap, each once.
	python3 - "$T/out.pcap" $N <<'EOF'
import struct, sys
d = open(sys.argv[1], 'rb').read()
off, s = 24, []
while off + 16 <= len(d):
    incl = struct.unpack('<4I', d[off:off + 16])[2]
    s.append(struct.unpack('>Q', d[off + 58:off + 66])[0])
    off += 16 + incl
n = int(sys.argv[2])
k = len(s) - n
assert 0 < k < n, (k, n)
assert s == list(range(k)) + list(range(n)), 'not a prefix of a, then b'
EOF
}

@test "pcap-read - cannot be resumed: a restart ends the stream as a failure, nothing duplicated" {
	mkpcap "$T/m.pcap" --count 1000
	mkfifo "$T/in"
	timeout 60 snb-run -n pri "r: pcap-read - | w: pcap-write $T/out.pcap" < "$T/in" 2> "$T/err" 3>&- &
	pid=$!
	# Keep standard input open after the capture: the reader waits there.
	exec 4> "$T/in"
	cat "$T/m.pcap" >&4
	wait_stages pri 2
	for i in $(seq 200); do
		[ "$(npkts "$T/out.pcap" 2>/dev/null)" = 1000 ] && break
		sleep 0.05
	done
	snb-ctl pri restart r || true
	st=0; wait $pid || st=$?
	exec 4>&-
	cat "$T/err"
	[ "$st" -eq 1 ]
	grep -q "standard input cannot be resumed after 1000 packets" "$T/err"
	[ "$(npkts "$T/out.pcap")" = 1000 ]
	reads_cleanly "$T/out.pcap"
}

@test "pcap-read --loop 3 of a capture whose first record is empty" {
	# Was a memcpy into a NULL cache (UBSan, the sanitizer build).
	python3 - "$T/z.pcap" <<'EOF'
import struct, sys
with open(sys.argv[1], 'wb') as f:
    f.write(struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 262144, 1))
    f.write(struct.pack('<4I', 1, 0, 0, 60))
    for i in range(3):
        f.write(struct.pack('<4I', 2, i, 60, 60) + bytes([i]) * 60)
EOF
	run snb-run "pcap-read --loop 3 $T/z.pcap | pcap-write $T/out.pcap"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(npkts "$T/out.pcap")" = 12 ]
	# Pass after pass, the same four records.
	python3 - "$T/z.pcap" "$T/out.pcap" <<'EOF'
import sys
a = open(sys.argv[1], 'rb').read()[24:]
b = open(sys.argv[2], 'rb').read()[24:]
assert b == a * 3
EOF
}

@test "pcap-write -C: restart, SIGKILL and swap while it rotates keep every packet once, in order, across its files" {
	R=$((20000 / SNB_TEST_SCALE))
	timeout 120 snb-run -n pwc --restart=on-failure "source --rate $R --seq --size 1000 | w: pcap-write -C 1 $T/r.pcap" 2> "$T/err" 3>&- &
	pid=$!
	wait_stages pwc 2
	for ev in restart kill swap kill restart swap kill; do
		sleep 0.2
		chaos pwc w $ev "pcap-write -C 1 $T/r.pcap"
	done
	sleep 0.2
	snb-ctl pwc stop
	ended_ok $pid
	files=$(cd "$T" && ls | grep '^r\.pcap[0-9]*$' | sort -V)
	[ "$(echo "$files" | wc -l)" -ge 2 ]
	for f in $files; do reads_cleanly "$T/$f"; done
	mergecap -a -F pcap -w "$T/all.pcap" $(for f in $files; do echo "$T/$f"; done)
	n=$(seqs "$T/all.pcap")
	[ "$n" -gt 0 ]
}

@test "pcap-write blocked on a pipe nobody reads: swap and restart take over at once, stop stops it; one whole stream" {
	mkfifo "$T/f"
	timeout 120 snb-run -n pwb "source --size 1000 --seq | w: pcap-write -" > "$T/f" 2> "$T/err" 3>&- &
	gpid=$!
	exec 5< "$T/f"		# opened, not read: the pipe fills, the writer waits
	wait_stages pwb 2
	sleep 0.5
	# A writer that waits for its reader leaves when asked (a swap is
	# called off after 5 s, and fails): its record is its successor's.
	for ev in swap restart swap restart; do
		s0=$(date +%s%N)
		chaos pwb w $ev "pcap-write -"
		echo "$ev: $(( ($(date +%s%N) - s0) / 1000000 )) ms"
		sleep 0.3
	done
	cat <&5 > "$T/out.pcap" &
	rpid=$!
	sleep 0.5
	snb-ctl pwb stop
	st=0; wait $gpid || st=$?
	wait $rpid
	cat "$T/err"
	[ "$st" -eq 0 ]
	! grep -q 'called off' "$T/err" || false
	n=$(seqs "$T/out.pcap")
	echo "$n records"
	[ "$n" -gt 100 ]
	reads_cleanly "$T/out.pcap"
	# Asked to stop with nobody reading: it stops, promptly.
	timeout 120 snb-run -n pwb "source --size 1000 --seq | w: pcap-write -" > "$T/f" 2> "$T/err" 3>&- &
	gpid=$!
	exec 5< "$T/f"
	wait_stages pwb 2
	sleep 0.5
	s0=$(date +%s%N)
	snb-ctl pwb stop
	st=0; wait $gpid || st=$?
	ms=$(( ($(date +%s%N) - s0) / 1000000 ))
	cat "$T/err"
	echo "stopped in $ms ms"
	[ "$st" -eq 0 ]
	! grep -q 'SIGKILL\|killed' "$T/err" || false

}

@test "pcap-write -C to a FIFO: a successor that finishes its predecessor's record, then rotates, writes every record once" {
	mkfifo "$T/f"
	timeout 120 snb-run -n pwc "source --size 1000 --seq | w: pcap-write -C 1 $T/f" 2> "$T/err" 3>&- &
	gpid=$!
	exec 5< "$T/f"
	# Read 890 kB, then nothing: the pipe (64 kB) fills within a burst
	# that ends short of -C's million, and the writer waits with a
	# record begun.
	dd bs=1000 count=890 iflag=fullblock <&5 > "$T/out.pcap" 2> /dev/null
	wait_stages pwc 2
	sleep 0.5
	# The successor's first burst, from that record on, passes the
	# million: it finishes the record, then rotates into f1.
	chaos pwc w swap "pcap-write -C 1 $T/f"
	cat <&5 >> "$T/out.pcap"
	wait_for test -s "$T/f1"
	sleep 0.3
	snb-ctl pwc stop
	ended_ok $gpid
	# The FIFO's stream, then f1, hold 0, 1, 2 ... once each.
	n=$(seqs "$T/out.pcap")
	m=$(seqs "$T/f1" - "$n")
	echo "FIFO $n, f1 $m records"
	[ $((n + m)) -ge 900 ]
}
