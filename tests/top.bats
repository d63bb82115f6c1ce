#!/usr/bin/env bats
# snb-top as top(1) users know it (keys, width, batch mode, pipeline order,
# a cost column), snb-ctl clear, and the Prometheus exporter, checked with
# the real promtool, curl and tmux.
load helpers

# A test that fails half-way must not leave its graph, exporter or tmux
# running: stop them, then check the run directory as helpers.bash does.
teardown() {
	if [ -n "${xpid:-}" ] && kill "$xpid" 2>/dev/null; then
		wait "$xpid" || true
	fi
	if [ -n "${S:-}" ]; then
		tmux -S "$S" kill-server 2>/dev/null || true
	fi
	if [ -n "${gpid:-}" ] && kill -0 "$gpid" 2>/dev/null; then
		kill -INT "$gpid"
		wait "$gpid" || true
	fi
	if [ -d "$SNB_RUN_DIR" ]; then
		left=$(ls -A "$SNB_RUN_DIR")
		rm -rf "$SNB_RUN_DIR"
		[ -z "$left" ] || { echo "left in run dir: $left"; return 1; }
	fi
}

# A graph of 3 stages whose labels do not sort in the graph's order, that
# moved exactly 5000 packets and then idles (--hold).
idle_graph() {
	snb-run -n "$1" 'z: source --count 5000 --hold | m: filter udp | a: sink' 3>&- &
	gpid=$!
	wait_stages "$1" 3
	wait_count "$1" a 5000
}

# A graph that keeps moving packets.
busy_graph() {
	snb-run -n "$1" 'z: source --rate 20000 | m: filter udp | a: sink' 3>&- &
	gpid=$!
	wait_stages "$1" 3
}

stop_graph() {
	snb-ctl "$1" stop > /dev/null
	wait "$gpid"
}

# A free TCP port on 127.0.0.1.
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# snb-top --listen on 127.0.0.1, up and answering.
start_exporter() {
	port=$(free_port)
	snb-top --listen "127.0.0.1:$port" "$@" 2> "$T/exporter.err" &
	xpid=$!
	for i in $(seq 50); do
		curl -s -o /dev/null "http://127.0.0.1:$port/" && return 0
		sleep 0.1
	done
	return 1
}

stop_exporter() {
	kill "$xpid"
	st=0; wait "$xpid" || st=$?
	[ "$st" -eq 0 ]
}

@test "snb-top --prometheus passes promtool check metrics; one family per quantity, Prometheus names" {
	idle_graph pr
	snb-top --prometheus > "$T/m"
	promtool check metrics < "$T/m"
	grep -q '^snb_stage_packets_in_total{graph="pr",stage="a",app="sink"} 5000$' "$T/m"
	grep -q '^snb_stage_packets_out_total{graph="pr",stage="z",app="source"} 5000$' "$T/m"
	grep -q '^snb_link_packets_total{graph="pr",from="m",from_port="out",to="a",to_port="in"} 5000$' "$T/m"
	grep -q '^snb_ring_slots{graph="pr",from="z",from_port="out",to="m",to_port="in"} [1-9]' "$T/m"
	grep -q '^snb_app_packets_total{graph="pr",stage="a",app="sink"} 5000$' "$T/m"
	grep -q '^snb_app_seq_errors_total{graph="pr",stage="a",app="sink"} 0$' "$T/m"
	grep -q '^snb_stage_busy_seconds_total{graph="pr",stage="m",app="filter"} 0\.[0-9]*[1-9]' "$T/m"
	# Packets, bytes and sequence errors never share a family.
	[ "$(grep -c '^# TYPE ' "$T/m")" -eq "$(grep '^# TYPE ' "$T/m" | sort -u | wc -l)" ]
	grep -q '^# TYPE snb_app_bytes_total counter$' "$T/m"
	stop_graph pr
}

@test "snb_link_bytes_total counts frames without FCS and preamble: capinfos' data size of the same packets" {
	snb-run -n by "source --count 3000 --size 60-1514 --hold | pcap-write $T/x.pcap" 3>&- &
	gpid=$!
	wait_stages by 2
	for i in $(seq 100); do
		n=$(snb-top --prometheus by | sed -n 's/^snb_stage_packets_in_total{.*stage="pcap-write".*} //p')
		[ "$n" = 3000 ] && break
		sleep 0.1
	done
	bytes=$(snb-top --prometheus by | sed -n 's/^snb_link_bytes_total{.*} //p')
	stop_graph by
	data=$(capinfos -T -r -d "$T/x.pcap" | cut -f2)
	echo "link $bytes, capinfos $data"
	[ "$bytes" -gt 3000 ]
	[ "$bytes" = "$data" ]
	# And the page says so.
	snb-top --help > /dev/null
	mandoc -T ascii "$BATS_TEST_DIRNAME/../man/snb-top.1" | grep -q 'without the preamble'
}

@test "snb-top --listen: curl gets /metrics (promtool accepts it), / and HEAD; 404, 405, 400, 431" {
	idle_graph ht
	start_exporter
	curl -sS -D "$T/h" "http://127.0.0.1:$port/metrics" > "$T/m"
	grep -qi '^content-type: text/plain; version=0.0.4' "$T/h"
	head -1 "$T/h" | grep -q '^HTTP/1.1 200'
	promtool check metrics < "$T/m"
	grep -q '^snb_link_packets_total{graph="ht",from="m",from_port="out",to="a",to_port="in"} 5000$' "$T/m"
	[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/")" = 200 ]
	[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/metrics?x=1")" = 200 ]
	[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/nope")" = 404 ]
	[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST -d x "http://127.0.0.1:$port/metrics")" = 405 ]
	curl -s -D - -o /dev/null -X DELETE "http://127.0.0.1:$port/metrics" | grep -qi '^allow: GET, HEAD'
	[ "$(curl -s -o /dev/null -w '%{http_code}' --request-target 'metrics' "http://127.0.0.1:$port/")" = 400 ]
	[ "$(curl -s -o /dev/null -w '%{http_code}' -H "X-Big: $(head -c 9000 /dev/zero | tr '\0' a)" "http://127.0.0.1:$port/metrics")" = 431 ]
	# HEAD: the headers of GET, no body.
	curl -sS -I "http://127.0.0.1:$port/metrics" > "$T/head"
	len=$(sed -n 's/^[Cc]ontent-[Ll]ength: \([0-9]*\).*/\1/p' "$T/head")
	[ "$len" -gt 1000 ]
	# Not a request at all.
	exec 5<>"/dev/tcp/127.0.0.1/$port"
	printf 'garbage\r\n\r\n' >&5
	head -1 <&5 | grep -q '^HTTP/1.1 400'
	exec 5<&-
	# Only the graph asked for.
	kill "$xpid"; wait "$xpid" || true
	start_exporter nosuch
	curl -sS "http://127.0.0.1:$port/metrics" | promtool check metrics
	! curl -sS "http://127.0.0.1:$port/metrics" | grep -q 'graph="ht"' || false
	stop_exporter
	stop_graph ht
}

@test "snb-top --listen: idle, silent and slow clients lock no scrape out; binds only where told" {
	idle_graph sl
	start_exporter
	ss -Hltn "sport = :$port" | grep -q "127.0.0.1:$port"
	! ss -Hltn "sport = :$port" | grep -qv "127.0.0.1:$port" || false
	# 100 connections that send nothing, 10 that send half a request,
	# and 10 that ask and never read: each scrape still gets its answer.
	python3 - "$port" > "$T/py" 2>&1 <<'EOF' &
import socket, sys, time
port = int(sys.argv[1])
held = []
for i in range(100):
    held.append(socket.create_connection(("127.0.0.1", port)))
for i in range(10):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
    held.append(s)
for i in range(10):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    held.append(s)
print("held", len(held), flush=True)
time.sleep(8)
EOF
	ppid=$!
	for i in $(seq 50); do grep -q held "$T/py" && break; sleep 0.1; done
	grep -q 'held 120' "$T/py"
	for i in $(seq 5); do
		curl -sS --max-time 3 "http://127.0.0.1:$port/metrics" > "$T/m"
		grep -q '^snb_stage_packets_in_total{graph="sl",stage="a",app="sink"} 5000$' "$T/m"
	done
	kill "$ppid"; wait "$ppid" || true
	stop_exporter
	# Told nowhere it can bind, it says so and fails.
	run snb-top --listen 192.0.2.1:80
	[ "$status" -eq 1 ]
	assert_output_has "--listen '192.0.2.1:80'"
	# A malformed address is a usage error (2), and a port out of range
	# is one: getaddrinfo() took 99999 for 34463 and served there.
	run snb-top --listen nocolon
	[ "$status" -eq 2 ]
	assert_output_has "not ADDRESS:PORT"
	for p in 99999 0 -1 http 80x; do
		run timeout 5 snb-top --listen "127.0.0.1:$p"
		echo "$p: $status: $output"
		[ "$status" -eq 2 ]
		[ "$output" = "snb-top: --listen '127.0.0.1:$p': bad port '$p' (1..65535)" ]
	done
	stop_graph sl
}

@test "snb-top on a terminal: q quits, the terminal is restored, lines are cut to 80 columns, never wrapped" {
	busy_graph tq
	S="$T/tmux.sock"
	tmux -S "$S" new -d -x 80 -y 24 "snb-top -d 0.2; stty -a > $T/stty; touch $T/done; sleep 30"
	for i in $(seq 50); do
		tmux -S "$S" capture-pane -p -J > "$T/screen"
		grep -q '^  a ' "$T/screen" && break
		sleep 0.1
	done
	cat "$T/screen"
	grep -q '^snb-top - [0-9][0-9]:[0-9][0-9]:[0-9][0-9], 1 graph, every 0.2 s' "$T/screen"
	grep -q '^graph tq: pid [0-9]*, up 0:00:[0-9][0-9], 3/3 stages up, 2 links, 0 drops' "$T/screen"
	# -J joins wrapped lines: none may be longer than the terminal.
	[ "$(awk 'length > 80' "$T/screen" | wc -l)" -eq 0 ]
	# The stage rows, with their counters, would be wider: they were cut.
	grep -q '^  m .*drop-o' "$T/screen"
	! grep -q 'drop-nomatch' "$T/screen" || false
	[ ! -e "$T/done" ]
	tmux -S "$S" send-keys q
	for i in $(seq 50); do [ -e "$T/done" ] && break; sleep 0.1; done
	[ -e "$T/done" ]
	grep -q ' icanon ' "$T/stty"
	grep -q ' echo ' "$T/stty"
	tmux -S "$S" kill-server
	stop_graph tq
}

@test "snb-top on a terminal: ^C quits and restores the terminal; width follows the terminal" {
	busy_graph tc
	S="$T/tmux.sock"
	tmux -S "$S" new -d -x 60 -y 8 "snb-top -d 0.2; stty -a > $T/stty; touch $T/done; sleep 30"
	for i in $(seq 50); do
		tmux -S "$S" capture-pane -p -J > "$T/screen"
		grep -q '^graph tc' "$T/screen" && break
		sleep 0.1
	done
	cat "$T/screen"
	[ "$(awk 'length > 60' "$T/screen" | wc -l)" -eq 0 ]
	# The page is cut to 8 rows: nothing scrolled the header away.
	head -1 "$T/screen" | grep -q '^snb-top - '
	grep -q '^  z ' "$T/screen"
	tmux -S "$S" send-keys C-c
	for i in $(seq 50); do [ -e "$T/done" ] && break; sleep 0.1; done
	[ -e "$T/done" ]
	grep -q ' icanon ' "$T/stty"
	grep -q ' echo ' "$T/stty"
	tmux -S "$S" kill-server
	stop_graph tc
}

@test "snb-top: stages in the graph's order, as snb-ctl show lists them, links too" {
	idle_graph od
	order_ctl=$(snb-ctl od show | awk '$1 == "stage" { print $2 }' | tr '\n' ' ')
	order_top=$(snb-top -b -n 1 -d 0.05 | awk '/^  STAGE/ { s = 1; next } /^  LINK/ { s = 0 } s { print $1 }' | tr '\n' ' ')
	order_json=$(snb-top --json -d 0.05 od | jq -r '.graphs[0].stages[].label' | tr '\n' ' ')
	echo "ctl: $order_ctl top: $order_top json: $order_json"
	[ "$order_ctl" = "z m a " ]
	[ "$order_top" = "$order_ctl" ]
	[ "$order_json" = "$order_ctl" ]
	links=$(snb-top -b -n 1 -d 0.05 | awk '/^  LINK/ { s = 1; next } s { print $1 }' | tr '\n' ' ')
	[ "$links" = "z:out=m:in m:out=a:in " ]
	stop_graph od
}

@test "snb-top -b, or output not a terminal: plain pages, no escape codes, -n COUNT of them, -d DELAY apart" {
	idle_graph bt
	snb-top -b -n 3 -d 0.05 > "$T/b"
	[ "$(grep -c '^snb-top - ' "$T/b")" -eq 3 ]
	[ "$(grep -c "$(printf '\033')" "$T/b")" -eq 0 ]
	grep -q 'every 0.05 s' "$T/b"
	# Not a terminal without -b: the same.
	snb-top -n 2 -d 0.05 | cat > "$T/p"
	[ "$(grep -c '^snb-top - ' "$T/p")" -eq 2 ]
	[ "$(grep -c "$(printf '\033')" "$T/p")" -eq 0 ]
	# --json -n: one object a page.
	[ "$(snb-top -j -n 2 -d 0.05 bt | jq -s length)" -eq 2 ]
	# Bad values name themselves.
	run snb-top -n 0
	[ "$status" -eq 2 ]
	assert_output_has "bad count '0'"
	run snb-top -d x
	[ "$status" -eq 2 ]
	assert_output_has "bad delay 'x'"
	stop_graph bt
}

@test "snb-top: ns per packet and packets per breath per stage over the interval, from busy time" {
	busy_graph co
	snb-top -j -d 0.5 co > "$T/j"
	cat "$T/j"
	# Every stage moved packets: each has a cost and a burst size.
	[ "$(jq '[.graphs[0].stages[] | select(.ns_per_packet > 0 and .packets_per_breath >= 1)] | length' "$T/j")" -eq 3 ]
	snb-top -b -n 1 -d 0.3 co > "$T/t"
	grep -q 'ns/pkt pkt/br' "$T/t"
	awk '/^  m / { if ($7 + 0 > 0 && $8 + 0 >= 1) ok = 1 } END { exit !ok }' "$T/t"
	stop_graph co
	# Idle: no packets in the interval, so no cost (null, "-").
	idle_graph ci
	snb-top -j -d 0.2 ci > "$T/j"
	[ "$(jq '[.graphs[0].stages[] | select(.ns_per_packet == null and .packets_per_breath == null)] | length' "$T/j")" -eq 3 ]
	stop_graph ci
}

@test "snb-ctl clear: snb-top counts from zero again; Prometheus keeps the raw counters; a restart keeps the clear" {
	idle_graph cl
	snb-top -j -d 0.05 cl > "$T/before"
	[ "$(jq '.graphs[0].stages[] | select(.label=="a") | .counters.packets' "$T/before")" = 5000 ]
	run snb-ctl cl clear
	[ "$status" -eq 0 ]
	assert_output_has "ok: cleared the counters of cl (3 stages)"
	snb-top -j -d 0.05 cl > "$T/after"
	cat "$T/after"
	[ "$(jq '.graphs[0].cleared > 0' "$T/after")" = true ]
	[ "$(jq '.graphs[0].stages[] | select(.label=="a") | .counters.packets' "$T/after")" = 0 ]
	[ "$(jq '.graphs[0].stages[] | select(.label=="a") | .packets_in' "$T/after")" = 0 ]
	[ "$(jq '.graphs[0].stages[] | select(.label=="m") | .counters.matched' "$T/after")" = 0 ]
	[ "$(jq '[.graphs[0].links[].packets] | add' "$T/after")" = 0 ]
	[ "$(jq '[.graphs[0].links[].bytes] | add' "$T/after")" = 0 ]
	snb-top -b -n 1 -d 0.05 cl | grep -q '^  a .* packets=0 '
	snb-top -p cl | grep -q '^snb_app_packets_total{graph="cl",stage="a",app="sink"} 5000$'
	# A restart keeps the counters (and so the baseline).
	snb-ctl cl restart a > /dev/null
	wait_stages cl 3
	[ "$(snb-top -j -d 0.05 cl | jq '.graphs[0].stages[] | select(.label=="a") | .counters.packets')" = 0 ]
	run snb-ctl nosuch clear
	[ "$status" -eq 1 ]
	stop_graph cl
}

@test "snb-ctl clear under load: counts resume from zero and go on" {
	busy_graph cu
	sleep 0.5
	snb-ctl cu clear > /dev/null
	snb-top -j -d 0.3 cu > "$T/j"
	cat "$T/j"
	# Since the clear: far fewer than before it, and every link the
	# same as what the stages counted at its ends (up to what is queued).
	a=$(jq '.graphs[0].stages[] | select(.label=="a") | .counters.packets' "$T/j")
	total=$(snb-top -p cu | sed -n 's/^snb_app_packets_total{.*stage="a".*} //p')
	echo "since clear $a, in all $total"
	[ "$a" -gt 0 ]
	[ "$a" -lt "$total" ]
	stop_graph cu
}

@test "snb-top: every option is in --help and in the man page, and works" {
	snb-top --help > "$T/help"
	mandoc -T ascii "$BATS_TEST_DIRNAME/../man/snb-top.1" | col -b > "$T/man"
	for o in -1 -b -d -i -n -j -p --once --batch --delay --interval --iterations --json --prometheus --listen; do
		grep -q -- "$o" "$T/help" || { echo "$o not in --help"; return 1; }
		grep -q -- "$o" "$T/man" || { echo "$o not in the man page"; return 1; }
	done
	idle_graph op
	[ "$(snb-top -1 -i 0.05 op | grep -c '^snb-top - ')" -eq 1 ]
	snb-top -j -d 0.05 op | jq -e '.graphs[0].name == "op"'
	snb-top -p op | promtool check metrics
	run snb-top -x
	[ "$status" -eq 2 ]
	assert_output_has "usage: snb-top"
	# A usage error says what was wrong before the usage.
	run snb-top -p -j
	[ "$status" -eq 2 ]
	assert_output_has "snb-top: --json, --prometheus and --listen exclude each other"
	run snb-top op other
	[ "$status" -eq 2 ]
	assert_output_has "snb-top: unexpected argument 'other'"
	stop_graph op
}

@test "gauges and per-port counters: a Prometheus gauge and a port label; clear leaves gauges alone" {
	snb-run -n gg 'source --count 100 --hold | [a] br: bridge [b] | sink' 3>&- &
	gpid=$!
	wait_stages gg 3
	wait_count gg sink 100
	snb-top -p gg > "$T/m"
	promtool check metrics < "$T/m"
	grep -q '^# TYPE snb_app_fdb_entries gauge$' "$T/m"
	grep -q '^snb_app_fdb_entries{graph="gg",stage="br",app="bridge"} 1$' "$T/m"
	grep -q '^# TYPE snb_app_learned_total counter$' "$T/m"
	grep -q '^snb_app_rx_total{graph="gg",stage="br",app="bridge",port="a"} 100$' "$T/m"
	grep -q '^snb_app_rx_total{graph="gg",stage="br",app="bridge",port="b"} 0$' "$T/m"
	snb-ctl gg clear > /dev/null
	snb-top -j -d 0.05 gg > "$T/j"
	[ "$(jq '.graphs[0].stages[] | select(.label=="br") | .counters["fdb-entries"]' "$T/j")" = 1 ]
	[ "$(jq '.graphs[0].stages[] | select(.label=="br") | .counters.learned' "$T/j")" = 0 ]
	[ "$(jq '.graphs[0].stages[] | select(.label=="br") | .counters["rx[a]"]' "$T/j")" = 0 ]
	stop_graph gg
}

@test "snb-ps, snb-top, snb-ctl to a pipe whose reader has gone: status 0, quiet; a failing tool keeps its status" {
	idle_graph topgone
	# The reader (true) has left before the tool writes: EPIPE for sure.
	for cmd in "snb-ps" "snb-top -b -n 2 -d 0.1" "snb-top -p" \
	    "snb-ctl topgone show"; do
		set +e
		{ sleep 0.3; $cmd 2>"$BATS_TEST_TMPDIR/err"; echo $? >"$BATS_TEST_TMPDIR/st"; } | true
		set -e
		echo "$cmd: $(cat "$BATS_TEST_TMPDIR/st") $(cat "$BATS_TEST_TMPDIR/err")"
		[ "$(cat "$BATS_TEST_TMPDIR/st")" = 0 ]
		[ ! -s "$BATS_TEST_TMPDIR/err" ]
	done
	# The same with head -1, the everyday case.
	[ "$(snb-ps | head -1 | wc -l)" = 1 ]
	# A failing tool whose output had nowhere to go keeps its status.
	set +e
	{ sleep 0.3; snb-top -b -n 1 nosuchgraph 2>/dev/null; echo $? >"$BATS_TEST_TMPDIR/st"; } | true
	set -e
	[ "$(cat "$BATS_TEST_TMPDIR/st")" = 1 ]
}

@test "snb-top: the graph line counts in the singular when there is one (1 link, 1 restart)" {
	snb-run -n one 'z: source --count 10 --hold | a: sink' 3>&- &
	gpid=$!
	wait_stages one 2
	run snb-top -b -n 1 -d 0.05 one
	echo "$output"
	assert_output_has "2/2 stages up, 1 link, 0 drops, 0 restarts"
	# One restart: the sink killed and restarted by snb-ctl.
	snb-ctl one restart a
	run snb-top -b -n 1 -d 0.05 one
	echo "$output"
	assert_output_has ", 1 restart"
	! echo "$output" | grep -q "1 restarts" || false
	stop_graph one
}

@test "snb-top on a terminal, its graph ends: the terminal's screen back, then the message on it" {
	# The message was written on snb-top's own screen, which went with
	# it: the operator saw snb-top vanish, status 1, and no word why.
	snb-run -n te 'z: source --rate 1000 --count 1500 | a: sink' 3>&- &
	gpid=$!
	wait_stages te 2
	S="$T/tmux.sock"
	tmux -S "$S" new -d -x 80 -y 24 "snb-top -d 0.2 te; echo status=\$? > $T/done; sleep 30"
	for i in $(seq 100); do [ -e "$T/done" ] && break; sleep 0.1; done
	wait "$gpid"
	# What the terminal shows once snb-top has left its own screen.
	tmux -S "$S" capture-pane -p -J > "$T/screen"
	tmux -S "$S" kill-server
	cat "$T/screen" "$T/done"
	[ "$(cat "$T/done")" = status=1 ]
	grep -qx "snb-top: graph 'te' has ended" "$T/screen"
	! grep -q "STAGE" "$T/screen" || false
	run snb-top -d 0.05 te
	[ "$status" -eq 1 ]
	[ "$output" = "snb-top: no graph 'te' (in $SNB_RUN_DIR)" ]
}
