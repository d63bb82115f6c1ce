#!/usr/bin/env bats
# snb-lwaftr's binding table changed while it forwards (snb-ctl GRAPH
# config LABEL ...): 100 changes under a steady stream, every packet
# accounted for; get; refused changes; SIGHUP and load apply the
# difference; the changes outlive a SIGKILLed (restarted) or swapped
# process (the journal).  Packets are made by scapy, counted by tcpdump.
load helpers

PY=/usr/bin/python3

# A failed test stops its graph before the run directory is checked.
eval "helpers_$(declare -f teardown)"
teardown() {
	exec 7>&-
	if [ -n "${gpid:-}" ] && kill "$gpid" 2>/dev/null; then
		wait "$gpid" || true
	fi
	helpers_teardown
}

# The configuration: one softwire that stays (198.51.100.1, whole
# address), no ICMP errors (a drop is only a counter), next hops known.
conf() {
	cat <<'EOF'
softwire-config {
  binding-table {
    softwire {
      ipv4 198.51.100.1;
      psid 0;
      b4-ipv6 2001:db8:1::1;
      br-address 2001:db8::ffff;
      port-set {
        psid-length 0;
      }
    }
  }
  external-interface {
    generate-icmp-errors false;
  }
  internal-interface {
    generate-icmp-errors false;
  }
  instance {
    device test;
    queue {
      id 0;
      external-interface {
        ip 10.10.10.10;
        mac 12:12:12:12:12:12;
        next-hop {
          mac 68:68:68:68:68:68;
        }
      }
      internal-interface {
        ip 2001:db8::ffff;
        mac 22:22:22:22:22:22;
        next-hop {
          mac 44:44:44:44:44:44;
        }
      }
    }
  }
}
EOF
}

# $1: 64 IPv4 packets from the internet, one pass of the stream: 16 to the
# softwire that stays, one to each of 10.1.0.1 .. 10.1.0.40 (added, some
# changed, then removed while it runs), 8 to 10.2.0.1 (never there).
chunk() {
	$PY - "$1" <<'EOF'
import sys
from scapy.all import Ether, IP, UDP, Raw, wrpcap
e = Ether(src="68:68:68:68:68:68", dst="12:12:12:12:12:12")
def p(dst):
    return e / IP(src="192.0.2.7", dst=dst) / UDP(sport=5555, dport=80) / Raw(b"x" * 10)
ps = [p("198.51.100.1") for _ in range(16)]
ps += [p("10.1.0.%d" % k) for k in range(1, 41)]
ps += [p("10.2.0.1") for _ in range(8)]
wrpcap(sys.argv[1], ps)
EOF
}

ctr() {		# ctr NAME: a counter of --counters-out (0 if it never moved)
	awk -v n="$1" '$1 == n { v = $2 } END { print v + 0 }' "$T/ctrs"
}

# Start graph $1: a fifo fed by the test, lwaftr "lw", IPv6 out to a pcap;
# $2: snb-run options.
start_graph() {
	conf > "$T/lw.conf"
	chunk "$T/chunk.pcap"
	head -c 24 "$T/chunk.pcap" > "$T/hdr"
	tail -c +25 "$T/chunk.pcap" > "$T/64"
	mkfifo "$T/in4"
	snb-run -n "$1" ${2:-} "pcap-read $T/in4 | [v4] lw: lwaftr --counters-out \
	    $T/ctrs $T/lw.conf [v6] | pcap-write $T/out6.pcap" 2> "$T/err" 3>&- &
	gpid=$!
	# read-write: an open that waits for no reader (a graph that fails
	# before pcap-read opens the FIFO fails the test instead of hanging it)
	exec 7<> "$T/in4"
	cat "$T/hdr" >&7
	# its socket is there once the stage has taken its rings over
	wait_for test -S "$SNB_RUN_DIR/$1/lw.ctl"
}

feed() {	# feed N: N passes, now
	for _ in $(seq "$1"); do cat "$T/64"; done >&7
}

add() {		# add K: softwire 10.1.0.K to B4 2001:db8:2::K (graph $G)
	snb-ctl "${G:-lwlive}" config lw add softwire ipv4 "10.1.0.$1" psid 0 \
	    b4-ipv6 "2001:db8:2::$1" br-address 2001:db8::ffff psid-length 0
}

@test "lwaftr live: 100 changes under a steady stream, every packet accounted for" {
	start_graph lwlive
	# Before any change: only the softwire that stays gets through.
	feed 4
	wait_for eval '[ "$(npackets "$T/out6.pcap")" -eq 64 ]'
	# A steady stream meanwhile, counted in passes.
	( n=0; while [ ! -e "$T/stop" ]; do cat "$T/64"; n=$((n + 1)); done;
	    echo "$n" > "$T/passes" ) >&7 &
	feeder=$!
	for k in $(seq 40); do
		run add "$k"
		[ "$status" -eq 0 ] || { echo "$output"; false; }
	done
	# a refused change, in the middle, changes nothing
	run add 7
	[ "$status" -eq 1 ]
	assert_output_has "error: softwire 10.1.0.7 psid 0 exists already"
	for k in $(seq 20); do
		run snb-ctl lwlive config lw set softwire ipv4 "10.1.0.$k" \
		    psid 0 b4-ipv6 "2001:db8:3::$k"
		[ "$status" -eq 0 ] || { echo "$output"; false; }
	done
	run snb-ctl lwlive config lw get softwire ipv4 10.1.0.5 psid 0
	[ "$status" -eq 0 ]
	assert_output_has "b4-ipv6 2001:db8:3::5;"
	# traffic for every softwire added flows for a while
	now=$(npackets "$T/out6.pcap")
	wait_for eval '[ "$(npackets "$T/out6.pcap")" -gt $((now + 4000)) ]'
	for k in $(seq 40); do
		run snb-ctl lwlive config lw remove softwire ipv4 "10.1.0.$k" \
		    psid 0
		[ "$status" -eq 0 ] || { echo "$output"; false; }
	done
	touch "$T/stop"
	wait "$feeder"
	# After the last change: again only the softwire that stays.
	feed 4
	exec 7>&-
	wait "$gpid"
	cat "$T/err"
	passes=$(( $(cat "$T/passes") + 8 ))
	echo "passes $passes"
	cat "$T/ctrs"

	# Every packet: in = out + drops, exactly; the out count is tcpdump's.
	out=$(npackets "$T/out6.pcap")
	[ "$(ctr in-ipv4-packets)" -eq $((passes * 64)) ]
	[ "$(ctr out-ipv6-packets)" -eq "$out" ]
	[ "$(ctr drop-all-ipv4-iface-packets)" -eq \
	    "$(ctr drop-no-dest-softwire-ipv4-packets)" ]
	[ "$(ctr in-ipv4-packets)" -eq $((out + \
	    $(ctr drop-no-dest-softwire-ipv4-packets))) ]

	# Where each went: tcpdump prints "IP6 BR > B4: IP SRC > DST: ...".
	tcpdump -nn -r "$T/out6.pcap" 2>/dev/null |
	    awk '{ sub(":$", "", $5); sub("\\.80:$", "", $9); print $5, $9 }' \
	    > "$T/flows"
	# the one that stays: all of its packets, to its B4
	[ "$(grep -c '^2001:db8:1::1 198.51.100.1$' "$T/flows")" -eq \
	    $((passes * 16)) ]
	# never there: none
	! grep -q ' 10.2.0.1$' "$T/flows" || false
	# the first and last 4 passes (before and after the changes): only it
	head -n 64 "$T/flows" | grep -vq '^2001:db8:1::1 ' && false
	tail -n 64 "$T/flows" | grep -vq '^2001:db8:1::1 ' && false
	# each added softwire got traffic, to its B4 only: 10.1.0.1..20 to
	# the old B4, then to the new, never back (no packet misrouted)
	for k in $(seq 40); do
		grep " 10.1.0.$k\$" "$T/flows" | awk '{ print $1 }' | uniq \
		    > "$T/runs"
		if [ "$k" -le 20 ]; then
			[ "$(cat "$T/runs")" = "$(printf '2001:db8:2::%s\n2001:db8:3::%s' $k $k)" ] ||
			    { echo "10.1.0.$k: $(cat "$T/runs")"; false; }
		else
			[ "$(cat "$T/runs")" = "2001:db8:2::$k" ] ||
			    { echo "10.1.0.$k: $(cat "$T/runs")"; false; }
		fi
	done
	# the stage's own socket is gone with it
	[ ! -e "$SNB_RUN_DIR/lwlive/lw.ctl" ]
}

@test "lwaftr live: refused requests name the problem and change nothing" {
	start_graph lwbad
	# a client that trickles a request for ever holds up no other
	python3 - "$SNB_RUN_DIR/lwbad/lw.ctl" "$T/slow.up" <<-'EOF2' &
	import socket, sys, time
	s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
	s.connect(sys.argv[1])
	s.send(b"x")
	open(sys.argv[2], "w").close()
	try:
	    for i in range(120):
	        s.send(b"x")
	        time.sleep(0.5)
	except OSError:
	    pass
	EOF2
	slow=$!
	wait_for test -e "$T/slow.up"
	run timeout 20 snb-ctl lwbad config lw remove softwire ipv4 10.9.9.9 psid 0
	kill "$slow" 2>/dev/null || true
	[ "$status" -eq 1 ]
	assert_output_has "error: no softwire 10.9.9.9 psid 0 in the binding table"
	run snb-ctl lwbad config lw remove softwire ipv4 10.9.9.9 psid 0
	[ "$status" -eq 1 ]
	assert_output_has "error: no softwire 10.9.9.9 psid 0 in the binding table"
	run snb-ctl lwbad config lw add softwire ipv4 198.51.100.1 psid 1 \
	    b4-ipv6 2001:db8::9 br-address 2001:db8::ffff psid-length 4
	[ "$status" -eq 1 ]
	assert_output_has "not that of softwire 198.51.100.1 psid 0"
	run snb-ctl lwbad config lw add softwire ipv4 10.1.0.1 psid 0
	[ "$status" -eq 1 ]
	assert_output_has "error: add softwire: missing b4-ipv6"
	run snb-ctl lwbad config lw add softwire ipv4 10.1.0.1 psid 99 \
	    b4-ipv6 2001:db8::9 br-address 2001:db8::ffff psid-length 6
	[ "$status" -eq 1 ]
	assert_output_has "psid out of range for psid-length 6"
	run snb-ctl lwbad config lw add softwire ipv4 10.1.0.300 psid 0
	[ "$status" -eq 1 ]
	assert_output_has "error: bad ipv4 '10.1.0.300'"
	run snb-ctl lwbad config lw frob
	[ "$status" -eq 1 ]
	assert_output_has "error: unknown request 'frob'"
	# Known requests with too many or too few words were 'unknown'.
	run snb-ctl lwbad config lw reload now
	[ "$status" -eq 1 ]
	[ "$output" = "error: reload takes no words, not 1" ]
	run snb-ctl lwbad config lw load
	[ "$status" -eq 1 ]
	[ "$output" = "error: load takes one word, the FILE, not 0" ]
	run snb-ctl lwbad config nosuch get softwire ipv4 10.1.0.1 psid 0
	[ "$status" -eq 1 ]
	assert_output_has "no stage 'nosuch' in graph 'lwbad'"
	run snb-ctl lwbad config pcap-read get
	[ "$status" -eq 1 ]
	assert_output_has "stage 'pcap-read' of graph 'lwbad' takes no config requests"
	run snb-ctl lwbad config lw
	[ "$status" -eq 2 ]
	# the table is as it was: the softwire forwards, nothing else does
	feed 2
	exec 7>&-
	wait "$gpid"
	[ "$(npackets "$T/out6.pcap")" -eq 32 ]
}

@test "lwaftr live: load and SIGHUP apply the difference of a file" {
	start_graph lwload
	# a file with one softwire more, and the first one's B4 moved
	conf | sed 's/2001:db8:1::1;/2001:db8:1::2;/' |
	    sed 's/^  binding-table {$/&\n    softwire { ipv4 10.1.0.1; psid 0; b4-ipv6 2001:db8:2::1; br-address 2001:db8::ffff; port-set { psid-length 0; } }/' \
	    > "$T/new.conf"
	run snb-ctl lwload config lw load "$T/new.conf"
	echo "$output"
	[ "$status" -eq 0 ]
	assert_output_has "binding table reloaded: 1 added, 0 removed, 1 changed"
	run snb-ctl lwload config lw load "$T/new.conf"
	assert_output_has "binding table reloaded: no change"
	run snb-ctl lwload config lw get softwire ipv4 10.1.0.1 psid 0
	assert_output_has "b4-ipv6 2001:db8:2::1;"
	feed 1
	wait_for eval '[ "$(npackets "$T/out6.pcap")" -eq 17 ]'
	# SIGHUP: back to CONF (reload), the difference reported on stderr
	lw=$(stage_pid lwload lw)
	kill -HUP "$lw"
	wait_for grep -q "0 added, 1 removed, 1 changed" "$T/err"
	# a bad file changes nothing
	echo 'softwire-config {' > "$T/new.conf"
	run snb-ctl lwload config lw load "$T/new.conf"
	[ "$status" -eq 1 ]
	assert_output_has "reload failed, keeping the current binding table: $T/new.conf:"
	feed 1
	exec 7>&-
	wait "$gpid"
	tcpdump -nn -r "$T/out6.pcap" 2>/dev/null | awk '{ print $5 }' |
	    uniq -c | tr -s ' ' > "$T/dsts"
	cat "$T/dsts"
	[ "$(cat "$T/dsts")" = "$(printf ' 16 2001:db8:1::2:\n 1 2001:db8:2::1:\n 16 2001:db8:1::1:')" ]
}

# Wait until stage lw of graph $1 answers requests (a restarted or swapped
# one: its predecessor's socket file may still be there).
wait_ctl() {
	wg=$1
	wait_for eval 'snb-ctl "$wg" config lw frob 2>&1 | grep -q "unknown request"'
}

# The journal's tests: 10.1.0.1 and .2 added, .2's B4 set to
# 2001:db8:3::2, 198.51.100.1 (conf's) removed.
journal_changes() {
	add 1 && add 2 || return 1
	snb-ctl "$1" config lw set softwire ipv4 10.1.0.2 psid 0 \
	    b4-ipv6 2001:db8:3::2 || return 1
	snb-ctl "$1" config lw remove softwire ipv4 198.51.100.1 psid 0
}

# The table holds the journal's changes: by get, and by traffic (one pass:
# 10.1.0.1 to its B4, 10.1.0.2 to the B4 set, none to 198.51.100.1).
assert_changes_hold() {
	run snb-ctl "$1" config lw get softwire ipv4 10.1.0.2 psid 0
	echo "$output"
	[ "$status" -eq 0 ]
	assert_output_has "b4-ipv6 2001:db8:3::2;"
	run snb-ctl "$1" config lw get softwire ipv4 10.1.0.1 psid 0
	[ "$status" -eq 0 ]
	run snb-ctl "$1" config lw get softwire ipv4 198.51.100.1 psid 0
	[ "$status" -eq 1 ]
	assert_output_has "no softwire 198.51.100.1 psid 0 in the binding table"
	before=$(npackets "$T/out6.pcap")
	feed 1
	wait_for eval '[ "$(npackets "$T/out6.pcap")" -eq $((before + 2)) ]'
	tcpdump -nn -r "$T/out6.pcap" 2>/dev/null | tail -n 2 |
	    awk '{ sub(":$", "", $5); sub("\\.80:$", "", $9); print $5, $9 }' \
	    > "$T/flows"
	cat "$T/flows"
	[ "$(cat "$T/flows")" = "$(printf '2001:db8:2::1 10.1.0.1\n2001:db8:3::2 10.1.0.2')" ]
}

@test "lwaftr live: a SIGKILLed stage restarts with the changes made since start" {
	G=lwjr
	start_graph lwjr --restart=on-failure
	# the changes in a first process, then in a restarted one: both kept
	add 1
	kill_lw() {
		old=$(stage_pid lwjr lw)
		[ -n "$old" ]
		kill -KILL "$old"
		wait_replaced lwjr lw "$old" > /dev/null
		wait_ctl lwjr
	}
	kill_lw
	run snb-ctl lwjr config lw get softwire ipv4 10.1.0.1 psid 0
	[ "$status" -eq 0 ]
	run snb-ctl lwjr config lw remove softwire ipv4 10.1.0.1 psid 0
	[ "$status" -eq 0 ]
	journal_changes lwjr
	kill_lw
	grep -q "6 live changes of .*/lw.conf carried over" "$T/err" || {
	    cat "$T/err"; false; }
	assert_changes_hold lwjr
	# twice: the restarted process's journal is whole too
	kill_lw
	assert_changes_hold lwjr
	# a line that no longer applies (conf changed underneath) is
	# reported with its line number and skipped
	conf | sed 's/198.51.100.1;/198.51.100.9;/' > "$T/lw.conf.x"
	mv "$T/lw.conf.x" "$T/lw.conf"
	kill_lw
	cat "$T/err"
	grep -q "/lw.journal:7: remove softwire ipv4 198.51.100.1 psid 0: no softwire 198.51.100.1 psid 0 in the binding table: skipped" "$T/err"
	[ "$(stage_value lwjr lw journal-lines-skipped)" = 1 ]
	assert_changes_hold lwjr
	# a load: the restarted stage starts from that file's table, plus
	# the changes after it
	conf | sed 's/198.51.100.1;/10.1.0.7;/' > "$T/new.conf"
	run snb-ctl lwjr config lw load "$T/new.conf"
	[ "$status" -eq 0 ]
	add 8
	kill_lw
	run snb-ctl lwjr config lw get softwire ipv4 10.1.0.7 psid 0
	[ "$status" -eq 0 ]
	run snb-ctl lwjr config lw get softwire ipv4 10.1.0.8 psid 0
	[ "$status" -eq 0 ]
	run snb-ctl lwjr config lw get softwire ipv4 10.1.0.1 psid 0
	[ "$status" -eq 1 ]
	# the skipped line left the journal: the gauge says so again
	[ "$(stage_value lwjr lw journal-lines-skipped)" = 0 ]
	exec 7>&-
	wait "$gpid"
}

@test "lwaftr live: a restarted and a swapped-in stage go on with the counters" {
	G=lwjc
	start_graph lwjc
	feed 4
	wait_for eval '[ "$(stage_value lwjc lw in-ipv4-packets)" = 256 ]'
	old=$(stage_pid lwjc lw)
	run snb-ctl lwjc restart lw
	[ "$status" -eq 0 ]
	wait_replaced lwjc lw "$old" > /dev/null
	wait_ctl lwjc
	# from the predecessor's values on, not from 0
	[ "$(stage_value lwjc lw in-ipv4-packets)" = 256 ]
	feed 1
	wait_for eval '[ "$(stage_value lwjc lw in-ipv4-packets)" = 320 ]'
	old=$(stage_pid lwjc lw)
	run snb-ctl lwjc swap lw "lwaftr --counters-out $T/ctrs $T/lw.conf"
	[ "$status" -eq 0 ]
	wait_replaced lwjc lw "$old" > /dev/null
	wait_ctl lwjc
	feed 1
	wait_for eval '[ "$(stage_value lwjc lw in-ipv4-packets)" = 384 ]'
	[ "$(stage_value lwjc lw out-ipv6-packets)" = 96 ]
	exec 7>&-
	wait "$gpid"
	cat "$T/ctrs"
	[ "$(ctr in-ipv4-packets)" -eq 384 ]
	[ "$(ctr out-ipv6-packets)" -eq 96 ]
}

@test "lwaftr live: a swap to the same conf keeps the changes, to another does not" {
	G=lwjs
	start_graph lwjs
	journal_changes lwjs
	run snb-ctl lwjs swap lw "lwaftr --counters-out $T/ctrs $T/lw.conf"
	echo "$output"
	[ "$status" -eq 0 ]
	wait_ctl lwjs
	assert_changes_hold lwjs
	# reload: back to conf, and the journal with it
	run snb-ctl lwjs config lw reload
	[ "$status" -eq 0 ]
	assert_output_has "1 added, 2 removed, 0 changed"
	run snb-ctl lwjs swap lw "lwaftr --counters-out $T/ctrs $T/lw.conf"
	[ "$status" -eq 0 ]
	wait_ctl lwjs
	run snb-ctl lwjs config lw get softwire ipv4 10.1.0.1 psid 0
	[ "$status" -eq 1 ]
	run snb-ctl lwjs config lw get softwire ipv4 198.51.100.1 psid 0
	[ "$status" -eq 0 ]
	# another conf: it starts from its own, and says so
	add 5
	cp "$T/lw.conf" "$T/other.conf"
	run snb-ctl lwjs swap lw "lwaftr --counters-out $T/ctrs $T/other.conf"
	[ "$status" -eq 0 ]
	wait_ctl lwjs
	wait_for grep -q "1 live changes of .*/lw.conf not carried over: new conf" "$T/err"
	run snb-ctl lwjs config lw get softwire ipv4 10.1.0.5 psid 0
	[ "$status" -eq 1 ]
	before=$(npackets "$T/out6.pcap")
	feed 1
	wait_for eval '[ "$(npackets "$T/out6.pcap")" -eq $((before + 16)) ]'
	exec 7>&-
	wait "$gpid"
}

@test "lwaftr live: a restart keeps a new port set of an address whose softwire was removed, and skips a torn line" {
	G=lwjp
	start_graph lwjp --restart=on-failure
	kill_lw() {
		old=$(stage_pid lwjp lw)
		[ -n "$old" ]
		kill -KILL "$old"
		wait_replaced lwjp lw "$old" > /dev/null
		wait_ctl lwjp
	}
	# conf's only softwire of 198.51.100.1 (psid-length 0) goes, and
	# one of another port set takes the address: both live and on restart
	run snb-ctl lwjp config lw remove softwire ipv4 198.51.100.1 psid 0
	[ "$status" -eq 0 ]
	run snb-ctl lwjp config lw add softwire ipv4 198.51.100.1 psid 2 \
	    b4-ipv6 2001:db8:1::5 br-address 2001:db8::ffff psid-length 6
	echo "$output"
	[ "$status" -eq 0 ]
	kill_lw
	cat "$T/err"
	run grep -c "skipped" "$T/err"
	[ "$output" = 0 ]
	run snb-ctl lwjp config lw get softwire ipv4 198.51.100.1 psid 2
	echo "$output"
	[ "$status" -eq 0 ]
	assert_output_has "psid-length 6;"
	run snb-ctl lwjp config lw get softwire ipv4 198.51.100.1 psid 0
	[ "$status" -eq 1 ]
	# a last line without its newline (a write cut short) is not replayed
	printf 'add softwire ipv4 10.1.0.9 psid 0 b4-ipv6 2001:db8:2::9 br-address 2001:db8::ffff psid-length 0' \
	    >> "$SNB_RUN_DIR/lwjp/lw.journal"
	kill_lw
	cat "$T/err"
	grep -q "/lw.journal:4: a line cut short: skipped" "$T/err"
	run snb-ctl lwjp config lw get softwire ipv4 10.1.0.9 psid 0
	[ "$status" -eq 1 ]
	run snb-ctl lwjp config lw get softwire ipv4 198.51.100.1 psid 2
	[ "$status" -eq 0 ]
	exec 7>&-
	wait "$gpid"
}

# Kill graph $G's lwaftr and wait until its successor serves requests.
kill_and_wait() {
	old=$(stage_pid "$G" lw)
	[ -n "$old" ]
	kill -KILL "$old"
	wait_replaced "$G" lw "$old" > /dev/null
	wait_ctl "$G"
}

@test "lwaftr live: a journal of 100000 lines is replayed at a restart (not in quadratic time)" {
	G=lwjb
	start_graph lwjb --restart=on-failure
	j="$SNB_RUN_DIR/lwjb/lw.journal"
	# 100000 softwires added: 10.64.0.0 on, each to its own B4
	awk 'BEGIN { for (i = 0; i < 100000; i++)
	    printf "add softwire ipv4 10.%d.%d.%d psid 0 b4-ipv6 2001:db8:5::%x:%x br-address 2001:db8::ffff psid-length 0\n",
	    64 + int(i / 65536), int(i / 256) % 256, i % 256,
	    int((i + 1) / 65536), (i + 1) % 65536 }' >> "$j"
	# wait_for's 20 s are generous: the replay takes well under a second;
	# a lookup per line that walked every earlier line took 40 s
	kill_and_wait
	grep -q "100000 live changes of .*/lw.conf carried over" "$T/err" || {
	    cat "$T/err"; false; }
	run snb-ctl lwjb config lw get softwire ipv4 10.65.134.159 psid 0
	echo "$output"
	[ "$status" -eq 0 ]
	assert_output_has "b4-ipv6 2001:db8:5::1:86a0;"
	[ "$(wc -l < "$j")" -eq 100001 ]
	exec 7>&-
	wait "$gpid"
}

@test "lwaftr live: a journal whose softwire's own earlier version clashes, then 50000 changes, is replayed in one rebuild (linear)" {
	G=lwjc
	start_graph lwjc --restart=on-failure
	j="$SNB_RUN_DIR/lwjc/lw.journal"
	# 25000 addresses of port set 4, one of them shared by psid 2; psid
	# 2 then asks for port set 6, which psid 1 of its address has not:
	# the line check found psid 2's own earlier self and let it through,
	# the rebuild failed, and every line was replayed with a rebuild of
	# its own (quadratic: minutes).  Then each softwire is changed again.
	awk 'function a(i) { return sprintf("10.%d.%d.%d", 64 + int(i / 65536),
	    int(i / 256) % 256, i % 256) }
	BEGIN { for (i = 0; i < 25000; i++)
		printf "add softwire ipv4 %s psid 1 b4-ipv6 2001:db8:5::%x br-address 2001:db8::ffff psid-length 4\n", a(i), i + 1
	    print "add softwire ipv4 10.64.0.0 psid 2 b4-ipv6 2001:db8:7::1 br-address 2001:db8::ffff"
	    print "set softwire ipv4 10.64.0.0 psid 2 psid-length 6"
	    for (i = 0; i < 25000; i++)
		printf "set softwire ipv4 %s psid 1 b4-ipv6 2001:db8:6::%x\n", a(i), i + 1 }' >> "$j"
	# with the fix, well under a second: wait_for's 20 s are 20 times that
	kill_and_wait
	cat "$T/err" | tail -5
	[ -z "$(grep "one at a time" "$T/err")" ]
	grep -q "/lw.journal:25003: set softwire ipv4 10.64.0.0 psid 2 psid-length 6: .*: skipped" "$T/err"
	grep -q "50001 live changes of .*/lw.conf carried over" "$T/err"
	[ "$(stage_value lwjc lw journal-lines-skipped)" = 1 ]
	run snb-ctl lwjc config lw get softwire ipv4 10.64.0.0 psid 2
	echo "$output"
	assert_output_has "psid-length 4;"
	run snb-ctl lwjc config lw get softwire ipv4 10.64.97.167 psid 1
	echo "$output"
	assert_output_has "b4-ipv6 2001:db8:6::61a8;"
	exec 7>&-
	wait "$gpid"
}

@test "lwaftr live: a successor counts the stage file's slots its predecessor filled, gauges included, and never overflows them" {
	G=lwjn
	start_graph lwjn --restart=on-failure
	# a journal line that no longer applies: the successor publishes
	# journal-lines-skipped (a gauge) and rewrites the journal without it
	echo "remove softwire ipv4 10.9.9.9 psid 0" >> "$SNB_RUN_DIR/lwjn/lw.journal"
	kill_and_wait
	[ "$(stage_value lwjn lw journal-lines-skipped)" = 1 ]
	# the slots left are taken (as another app's counters or gauges
	# would be, handed over), but for as many as the gauges hold
	$PY - "$SNB_RUN_DIR/lwjn/lw.stage" <<'PYEOF'
import mmap, struct, sys
with open(sys.argv[1], "r+b") as f:
    m = mmap.mmap(f.fileno(), 0)
    n = struct.unpack_from("<I", m, 12)[0]
    names = [m[160 + 64 * i:160 + 64 * i + 48].rstrip(b"\0") for i in range(n)]
    assert b"journal-lines-skipped" in names, names
    for i in range(n, 128):
        struct.pack_into("<48sQQ", m, 160 + 64 * i, b"filler-%d" % i, 0, 0)
    struct.pack_into("<I", m, 12, 128)
PYEOF
	# the next process finds the gauge handed over (its journal skips
	# nothing now): counting it as a free slot, it published a counter
	# into a full file and died ('too many counters'), again and again
	kill_and_wait
	pid=$(stage_pid lwjn lw)
	feed 2
	wait_for eval '[ "$(npackets "$T/out6.pcap")" -ge 32 ]'
	sleep 0.5
	cat "$T/err" | tail -5
	[ -z "$(grep "too many counters" "$T/err")" ]
	[ "$(stage_pid lwjn lw)" = "$pid" ]
	[ "$(stage_value lwjn lw journal-lines-skipped)" = 0 ]
	exec 7>&-
	wait "$gpid"
	# every counter that moved is in --counters-out all the same
	[ "$(ctr out-ipv6-packets)" -ge 32 ]
}

@test "lwaftr live: a change the journal cannot hold is in use and says so; a failed rewrite empties the journal" {
	G=lwjf
	start_graph lwjf --restart=on-failure
	j="$SNB_RUN_DIR/lwjf/lw.journal"
	add 1
	cp "$j" "$T/j1"
	# the file-size limit lets the next line half in: a short append,
	# cut back to the lines before it
	pid=$(stage_pid lwjf lw)
	prlimit --pid "$pid" --fsize=$(($(stat -c %s "$j") + 20))
	run add 2
	echo "$output"
	[ "$status" -eq 0 ]
	assert_output_has "ok: added softwire 10.1.0.2 psid 0"
	assert_output_has "warning: not journalled"
	cmp "$j" "$T/j1"
	run snb-ctl lwjf config lw get softwire ipv4 10.1.0.2 psid 0
	[ "$status" -eq 0 ]
	# a load whose journal cannot be written: the old one is emptied, as
	# its lines would undo the load at a restart
	conf | sed 's/198.51.100.1;/10.1.0.7;/' > "$T/new.conf"
	prlimit --pid "$pid" --fsize=10
	run snb-ctl lwjf config lw load "$T/new.conf"
	echo "$output"
	[ "$status" -eq 0 ]
	assert_output_has "warning: the journal could not be rewritten"
	[ "$(stat -c %s "$j")" -eq 0 ]
	[ ! -e "$j.new" ]
	# so a restart starts from conf alone
	kill_and_wait
	run snb-ctl lwjf config lw get softwire ipv4 198.51.100.1 psid 0
	[ "$status" -eq 0 ]
	run snb-ctl lwjf config lw get softwire ipv4 10.1.0.1 psid 0
	[ "$status" -eq 1 ]
	run snb-ctl lwjf config lw get softwire ipv4 10.1.0.7 psid 0
	[ "$status" -eq 1 ]
	# the new process journals again
	add 3
	grep -q "^add softwire ipv4 10.1.0.3 " "$j"
	exec 7>&-
	wait "$gpid"
}

@test "lwaftr live: a journal line whose port set conf changed underneath is skipped, its own earlier self aside" {
	G=lwjo
	start_graph lwjo --restart=on-failure
	# conf's only softwire of 198.51.100.1 takes a port set of its own
	run snb-ctl lwjo config lw set softwire ipv4 198.51.100.1 psid 0 \
	    psid-length 6
	echo "$output"
	[ "$status" -eq 0 ]
	add 1
	# conf changes underneath: the address is shared by two softwires
	# of another port set, which the line does not fit any more (the
	# check line by line once saw only the softwire's own earlier self,
	# and the journal was replayed with a rebuild per line)
	conf | sed 's/psid-length 0;/psid-length 4;/' |
	    awk '/^    softwire \{/ { s = 1 } s { b = b $0 "\n" }
		{ print } /^    \}/ && s { s = 0; sub("psid 0;", "psid 1;", b);
		    sub("2001:db8:1::1;", "2001:db8:1::2;", b); printf "%s", b }' \
	    > "$T/lw.conf.x"
	cat "$T/lw.conf.x"
	mv "$T/lw.conf.x" "$T/lw.conf"
	kill_and_wait
	cat "$T/err"
	[ -z "$(grep "one at a time" "$T/err")" ]
	grep -q "/lw.journal:2: set softwire ipv4 198.51.100.1 psid 0 psid-length 6: .*the address's 1 other softwire (4, 0): skipped" "$T/err"
	grep -q "1 live changes of .*/lw.conf carried over" "$T/err"
	[ "$(stage_value lwjo lw journal-lines-skipped)" = 1 ]
	run snb-ctl lwjo config lw get softwire ipv4 10.1.0.1 psid 0
	[ "$status" -eq 0 ]
	run snb-ctl lwjo config lw get softwire ipv4 198.51.100.1 psid 1
	[ "$status" -eq 0 ]
	run snb-ctl lwjo config lw get softwire ipv4 198.51.100.1 psid 0
	echo "$output"
	assert_output_has "psid-length 4;"
	exec 7>&-
	wait "$gpid"
}
