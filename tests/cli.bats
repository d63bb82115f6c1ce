#!/usr/bin/env bats
# One command-line convention for every tool (libring/cli.h): messages
# "snb-TOOL: ...", exit 2 for usage errors and 1 for failures, --version,
# --help as the man page's SYNOPSIS; snb-run --list, "did you mean", and
# snb-run -c asking every app whether its words hold.
load helpers

ROOT="$BATS_TEST_DIRNAME/.."
TOOLS="bridge echo esp filter join lb lwaftr pcap-read pcap-write sink source tee vlan
nic memif vhost run ctl top ps l2tp gre nd"

# The version the Makefile gives every tool.
version() {
	sed -n 's/^VERSION *:*= *//p' "$ROOT/Makefile"
}

# A tool's usage forms, one a line, as --help prints them: "usage: " and
# the indentation gone, a line that does not start with the tool's name
# joined to the form before it; lower case, no white space.
help_forms() {
	"snb-$1" --help | awk -v p="snb-$1" '
		NR == 1 { sub(/^usage: /, ""); f = $0; next }
		/^[ \t]/ {
			sub(/^[ \t]+/, "")
			if (index($0, p) == 1) { print f; f = $0 } else f = f " " $0
			next
		}
		{ exit }
		END { print f }' | tr 'A-Z' 'a-z' | tr -d ' \t'
}

# The same of the man page's SYNOPSIS, as mandoc renders it.
man_forms() {
	mandoc -T ascii -O width=400 "$ROOT/man/snb-$1.1" | col -b |
	    awk '/^SYNOPSIS/ { p = 1; next } /^[A-Z]/ { p = 0 } p && NF' |
	    sed 's/^ *//' | tr 'A-Z' 'a-z' | tr -d ' \t'
}

@test "the 23 tools are built" {
	for t in $TOOLS; do
		[ -x "$SNB_BUILD/bin/snb-$t" ] || { echo "no snb-$t"; return 1; }
	done
	[ "$(ls "$SNB_BUILD"/bin/snb-* | wc -l)" -eq 23 ]
}

@test "every tool: --help, --version, a bad option (message form, status)" {
	v=$(version)
	[ -n "$v" ]
	for t in $TOOLS; do
		echo "== snb-$t"
		# --help: usage on standard output, nothing on standard error.
		rc=0; out=$("$SNB_BUILD/bin/snb-$t" --help 2>"$T/err") || rc=$?
		[ $rc -eq 0 ] || { echo "--help: status $rc"; return 1; }
		[ ! -s "$T/err" ]
		case "$out" in "usage: snb-$t"*) ;; *) echo "$out"; return 1 ;; esac
		echo "$out" | grep -q "See snb-$t(1)"
		# --version: the Makefile's version, by the tool's short name.
		rc=0; out=$("$SNB_BUILD/bin/snb-$t" --version 2>"$T/err") || rc=$?
		[ $rc -eq 0 ] || { echo "--version: status $rc"; return 1; }
		[ "$out" = "snb-$t $v" ] || { echo "--version: '$out'"; return 1; }
		[ ! -s "$T/err" ]
		# A bad option: status 2, "snb-TOOL: " naming it, then usage;
		# never the path the binary was run by.
		rc=0; out=$("$SNB_BUILD/bin/snb-$t" --no-such-option 2>"$T/err" </dev/null) || rc=$?
		cat "$T/err"
		[ $rc -eq 2 ] || { echo "bad option: status $rc"; return 1; }
		[ -z "$out" ]
		head -1 "$T/err" | grep -q "^snb-$t: .*--no-such-option"
		grep -q "^usage: snb-$t" "$T/err"
		! grep -q "$SNB_BUILD" "$T/err" || false
		! grep -qi "^error:" "$T/err" || false
	done
}

@test "--help agrees with the man page's SYNOPSIS" {
	command -v mandoc >/dev/null || skip "mandoc not installed"
	bad=0
	for t in $TOOLS; do
		h=$(help_forms "$t")
		m=$(man_forms "$t")
		[ -n "$m" ]
		[ -n "$h" ]
		[ "$h" = "$m" ] || { echo "snb-$t --help:"; echo "$h"; echo "snb-$t(1):"; echo "$m"; bad=1; }
	done
	[ $bad -eq 0 ]
}

@test "a missing file is status 1 in every tool that reads one" {
	run snb-run -f "$T/no-such-graph"
	[ "$status" -eq 1 ]
	assert_output_has "snb-run: $T/no-such-graph: No such file"
	run snb-run -c "pcap-read $T/none.pcap | sink"
	echo "$output"
	[ "$status" -eq 1 ]
	assert_output_has "snb-pcap-read: $T/none.pcap: No such file"
	run snb-run -c "source | [v4] lw: lwaftr $T/none.conf [v4] | sink
	    source | [v6] @lw [v6] | sink"
	echo "$output"
	[ "$status" -eq 1 ]
	assert_output_has "snb-lwaftr: $T/none.conf: No such file"
	run snb-run -c "source | [p] l2tp $T/none.conf [core] | sink"
	[ "$status" -eq 1 ]
	assert_output_has "snb-l2tp: $T/none.conf: No such file"
	# snb-esp said 2, as for a wrong SA file; snb-run said the stage
	# refused its words when it had found a file missing.
	run snb-run -c "source | [clear] esp $T/none.conf [core] | sink"
	echo "$output"
	[ "$status" -eq 1 ]
	assert_output_has "snb-esp: $T/none.conf: No such file"
	assert_output_has "snb-run: 1:18: stage 'esp' (esp) would not start (status 1)"
	! echo "$output" | grep -q "refuses its words" || false
	# An app that crashes checking its words is not said to refuse them.
	mkdir "$T/apps"
	cat > "$T/apps/snb-crashy" <<-'EOF2'
	#!/bin/sh
	if [ "$1" = --describe ]; then
		printf 'snb-describe 1\napp crashy\nin in required\nout out required\nsummary Crash.\n'
		exit 0
	fi
	kill -SEGV $$
	EOF2
	chmod +x "$T/apps/snb-crashy"
	SNB_PATH="$T/apps" run snb-run -c "source | crashy | sink"
	echo "$output"
	[ "$status" -eq 1 ]
	assert_output_has "snb-run: 1:10: stage 'crashy' (crashy) was killed by signal 11 (Segmentation fault) checking its words"
	# Every stage that refuses says so, the status is the first one's.
	run snb-run -c "pcap-read $T/none.pcap | f: filter tcp prot 80 | sink"
	[ "$status" -eq 1 ]
	assert_output_has "snb-pcap-read: $T/none.pcap: No such file"
	assert_output_has "snb-filter: bad filter expression"
	# A file whose contents are wrong is a usage error (2).
	echo "not a graph |" > "$T/bad.graph"
	run snb-run -f "$T/bad.graph"
	[ "$status" -eq 2 ]
	assert_output_has "snb-run: $T/bad.graph:1:"
}

@test "snb-run --list: every installed app with its summary, no tools" {
	run snb-run --list
	[ "$status" -eq 0 ]
	echo "$output"
	n=0
	for b in "$SNB_BUILD"/bin/snb-*; do
		a=${b##*/snb-}
		case " run ctl top ps " in
		*" $a "*)
			! echo "$output" | grep -q "^$a " || false ;;
		*)
			# The summary is the one --help prints after the usage.
			sum=$("$b" --help | grep -v '^usage:\|^ \|^See ' | head -1)
			echo "$output" | grep -qxF "$(printf '%-12s %s' "$a" "$sum")" ||
			    { echo "missing: $a: $sum"; return 1; }
			n=$((n + 1)) ;;
		esac
	done
	[ "$n" -eq 19 ]
	# Nothing else but the test apps of the build (tests/ is in PATH).
	[ "$(echo "$output" | wc -l)" -eq $((n + $(ls "$SNB_BUILD"/tests/snb-* 2>/dev/null | wc -l))) ]
	[ "$(snb-run -l)" = "$output" ]
	# An app elsewhere in SNB_PATH is installed too; a file that does not
	# describe itself is not an app.
	mkdir "$T/more"
	cp "$SNB_BUILD/bin/snb-sink" "$T/more/snb-mysink"
	printf '#!/bin/sh\nexit 2\n' > "$T/more/snb-notapp"
	chmod +x "$T/more/snb-notapp"
	SNB_PATH="$T/more" run snb-run --list
	assert_output_has "mysink       Count packets"
	! echo "$output" | grep -q notapp || false
}

@test "an unknown app: did you mean the closest installed one" {
	for typo in filtr fliter filterr; do
		run snb-run -c "source | $typo tcp | sink"
		echo "$output"
		[ "$status" -eq 2 ]
		assert_output_has "1:10: unknown app '$typo': did you mean filter?"
	done
	run snb-run -c "pcap-reed x.pcap | sink"
	assert_output_has "did you mean pcap-read?"
	run snb-run -c "source | zzzzzz | sink"
	[ "$status" -eq 2 ]
	assert_output_has "unknown app 'zzzzzz'"
	! echo "$output" | grep -q "did you mean" || false
}

@test "snb-run -c: every app checks its own words, and nothing starts" {
	run snb-run -c "source | filter tcp prot 80 | sink"
	echo "$output"
	[ "$status" -eq 2 ]
	assert_output_has "snb-filter: bad filter expression 'tcp prot 80'"
	assert_output_has "snb-run: 1:10: stage 'filter' (filter) refuses its words"
	! echo "$output" | grep -q "^stage " || false
	run snb-run -c "pcap-read | sink"
	[ "$status" -eq 2 ]
	assert_output_has "usage: snb-pcap-read"
	run snb-run -c "source | filter --reject-port tcp | sink"
	[ "$status" -eq 2 ]
	assert_output_has "snb-filter: --reject-port given but port 'reject' is not connected"
	run snb-run -c "source | f: filter --reject-port tcp | sink
	    @f [reject] | sink"
	[ "$status" -eq 0 ]
	run snb-run -c "source --size 2000 | sink"
	[ "$status" -eq 0 ]
	run snb-run -c --capacity 1000 "source --size 2000 | sink"
	[ "$status" -eq 2 ]
	assert_output_has "snb-source: --size 2000 does not fit"
	run snb-run -c "source | vlan tag 5000 | sink"
	[ "$status" -eq 2 ]
	assert_output_has "snb-vlan: tag: bad VLAN id '5000'"
	run snb-run -c "source | echo 192.0.2.1 2001:db8::300:: | sink"
	[ "$status" -eq 2 ]
	assert_output_has "snb-echo: bad address '2001:db8::300::': not IPv4 or IPv6"
	# A good graph: the plan, and no file, socket or graph made.
	run snb-run -c "source --count 1 | t: tee | pcap-write $T/out.pcap
	    @t [x] | memif $T/m.sock --master | sink"
	echo "$output"
	[ "$status" -eq 0 ]
	assert_output_has "stage pcap-write: snb-pcap-write '$T/out.pcap'"
	[ ! -e "$T/out.pcap" ]
	[ ! -e "$T/m.sock" ]
	[ -z "$(ls -A "$SNB_RUN_DIR" 2>/dev/null)" ]
}

@test "a message is one write(2): a graph's lines never tear into each other" {
	# Stages and snb-run share one stderr; glibc's warnx(3) on an
	# unbuffered stderr writes the prefix, the message and the newline
	# apart, and another process's line could land between them.
	# (LeakSanitizer cannot run under ptrace: no leak check here.)
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
	    strace -f -e trace=write -o "$BATS_TEST_TMPDIR/st" \
	    snb-run 'pcap-read /nonexistent.pcap | sink' 2>/dev/null || true
	grep 'write(2, "snb-' "$BATS_TEST_TMPDIR/st" > "$BATS_TEST_TMPDIR/w"
	cat "$BATS_TEST_TMPDIR/w"
	[ "$(grep -c 'snb-pcap-read: /nonexistent.pcap' "$BATS_TEST_TMPDIR/w")" -eq 1 ]
	[ "$(grep -c 'snb-run: 1:1: pcap-read' "$BATS_TEST_TMPDIR/w")" -eq 1 ]
	# Every write to stderr ends its line.
	! grep 'write(2, ' "$BATS_TEST_TMPDIR/st" | grep -v '\\n"' | grep -v '\.\.\., ' || false
}

@test "an app run by hand, outside a graph: which port is missing, status 2 (a refusal, as its manual says), never a crash" {
	# Each app's words, the status its EXIT STATUS gives for a port left
	# unconnected, and the message.  snb-vlan crashed here (SIGSEGV in
	# fwd_init on an empty port list); snb-nic and snb-esp waited forever.
	cat > "$T/sa.conf" <<-'EOF2'
	sa { direction out; spi 0x1001; key 0x00112233445566778899aabbccddeeff01020304;
	     local-address 2001:db8:1::1; remote-address 2001:db8:2::1; }
	EOF2
	cat > "$T/pw.conf" <<-'EOF2'
	local-address 2001:db8::1;
	pseudowire b { remote-address 2001:db8::2; gre { key 1; } }
	pseudowire c { remote-address 2001:db8::3; l2tp { local-session 1; remote-session 2;
	    local-cookie 0x0011223344556677; remote-cookie 0x8899aabbccddeeff; } }
	EOF2
	while IFS='|' read -r words want msg; do
		[ -n "$words" ] || continue
		rc=0; out=$(timeout 10 snb-$words 2>&1 </dev/null) || rc=$?
		echo "snb-$words: status $rc: $out"
		[ "$rc" -eq "$want" ]
		case "$out" in "snb-${words%% *}: $msg"*) ;; *) return 1 ;; esac
	done <<-EOF2
	filter udp|2|input port 'in' is not connected
	filter --reject-port udp|2|--reject-port given but port 'reject' is not connected
	source|2|output port 'out' is not connected
	sink|2|input port 'in' is not connected
	tee|2|no output port is connected
	join|2|no input port is connected
	lb|2|no output port is connected
	echo 192.0.2.1|2|input port 'in' is not connected
	pcap-read $T/none.pcap|2|output port 'out' is not connected
	pcap-write $T/x.pcap|2|input port 'in' is not connected
	vlan tag 10|2|input port 'in' is not connected
	vlan untag 10|2|input port 'in' is not connected
	vlan mux|2|port 'trunk' is not connected
	bridge|2|no port is connected
	nd --address 2001:db8::1 --mac 02:00:00:00:00:01 --next-hop 2001:db8::2|2|input port 'south' is not connected
	gre $T/pw.conf|2|port 'core' is not connected
	l2tp $T/pw.conf|2|port 'core' is not connected
	esp $T/sa.conf|2|no input port is connected (clear, core)
	nic lo|2|no port is connected (in, out)
	EOF2
	[ ! -e "$T/x.pcap" ]
}

@test "snb-run and snb-ctl: a usage error says what was wrong before the usage" {
	# They printed the usage alone, and the operator had to guess.
	check() {	# check MESSAGE COMMAND...: status 2, MESSAGE, then usage
		local m=$1
		shift
		run "$@"
		echo "$*: $status: $output"
		[ "$status" -eq 2 ]
		[ "${lines[0]}" = "$m" ]
		[ "${lines[1]%% *}" = "usage:" ]
	}
	check "snb-run: a graph on the command line and -f $T/g: one or the other" \
	    snb-run -f "$T/g" 'source | sink'
	check "snb-run: -l takes nothing else" snb-run -l 'source | sink'
	check "snb-run: --clean takes no graph" snb-run --clean 'source | sink'
	check "snb-ctl: no command after 'web'" snb-ctl web
	check "snb-ctl: swap takes 2 words after it, not 1" snb-ctl web swap f
	check "snb-ctl: restart takes 1 word after it, not 0" snb-ctl web restart
	check "snb-ctl: show takes 0 words after it, not 1" snb-ctl web show f
	check "snb-ctl: config: a LABEL and a REQUEST are needed" snb-ctl web config f
	# Asked nothing, they show how to ask.
	run snb-run
	[ "$status" -eq 2 ]
	[ "${lines[0]%% *}" = "usage:" ]
	run snb-ctl
	[ "$status" -eq 2 ]
	[ "${lines[0]%% *}" = "usage:" ]
}

@test "a negative number is out of range, not 'not a number'; every bad number names its range" {
	check() {	# check MESSAGE APP WORDS...
		local m=$1
		shift
		run "$@"
		echo "$*: $status: $output"
		[ "$status" -eq 2 ]
		[ "${lines[0]}" = "$m" ]
	}
	check "snb-sink: bad --expect '-1': must be 0..9223372036854775807" snb-sink --expect -1
	check "snb-pcap-read: bad --loop '-1': must be 0..9223372036854775807" snb-pcap-read --loop -1 x.pcap
	check "snb-pcap-write: bad -c '-3': must be 1..9223372036854775807" snb-pcap-write -c -3 x.pcap
	check "snb-bridge: bad --max-macs '-5': must be 1..1048576" snb-bridge --max-macs -5
	check "snb-sink: bad --expect '-x': not a number" snb-sink --expect -x
	check "snb-sink: bad --expect '+5': not a number" snb-sink --expect +5
	check "snb-sink: bad --expect ' 5': not a number" snb-sink --expect ' 5'
	check "snb-source: bad --rate '0': 1 packet a second at least" snb-source --rate 0
	check "snb-source: bad --count 'nan'" snb-source --count nan
	check "snb-source: bad --count '-nan'" snb-source --count -nan
	check "snb-source: bad --size 'nan'" snb-source --size nan
}

@test "--help and --version on a full disk fail saying so, and on a closed pipe end quietly with 0, in every tool" {
	[ -w /dev/full ] || skip "no /dev/full"
	for t in $TOOLS; do
		for o in --help --version; do
			# The apps and the tools' --version exited 0 silently.
			rc=0; "snb-$t" $o > /dev/full 2> "$T/err" || rc=$?
			[ $rc -eq 1 ] || { echo "snb-$t $o >/dev/full: status $rc"; return 1; }
			grep -qx "snb-$t: stdout: No space left on device" "$T/err" ||
			    { echo "snb-$t $o:"; cat "$T/err"; return 1; }
			"snb-$t" $o 2> "$T/err" | head -c 0
			rc=${PIPESTATUS[0]}
			[ "$rc" -eq 0 ] || { echo "snb-$t $o | head: $rc"; return 1; }
			[ ! -s "$T/err" ] || { cat "$T/err"; return 1; }
		done
	done
}

@test "--counters-out may be abbreviated as getopt_long allows, in every app whose runtime takes it" {
	printf 'local-address 2001:db8::1;\npseudowire b { remote-address 2001:db8::2; gre { key 1; } }\n' > "$T/gre.conf"
	printf 'local-address 2001:db8::1;\npseudowire b { remote-address 2001:db8::2; l2tp { local-session 1; remote-session 2; local-cookie 0x0011223344556677; remote-cookie 0x8899aabbccddeeff; } }\n' > "$T/l2tp.conf"
	for g in "source | [a] bridge --counters $T/c [a] | sink" \
	    "source | vlan tag 10 --c=$T/c | sink" \
	    "source | vlan untag 10 --pass --counters-o $T/c | sink" \
	    "source | [south] n: nd --address 2001:db8::1 --mac 02:00:00:00:00:01 --next-hop-mac 02:00:00:00:00:02 --co $T/c [north] | sink
	     source | [north] @n [south] | sink" \
	    "source | [b] g: gre $T/gre.conf --counters=$T/c [core] | sink
	     source | [core] @g [b] | sink" \
	    "source | [b] l: l2tp $T/l2tp.conf --count $T/c [core] | sink
	     source | [core] @l [b] | sink"; do
		run snb-run -c "$g"
		echo "$g: $output"
		[ "$status" -eq 0 ]
	done
	# and the file is written under the abbreviated name
	run snb-run "source --count 10 | [a] bridge --counters $T/c [a] | sink"
	[ "$status" -eq 0 ]
	cat "$T/c"
	grep -q '^rx\[a\] 10$' "$T/c"
}

@test "snb-ctl: a peer that answers and closes in the middle of a long request: its answer is shown" {
	# a stand-in for a stage's socket: it reads a little, answers, closes
	mkdir -p "$SNB_RUN_DIR/G"
	python3 - "$SNB_RUN_DIR/G/x.ctl" <<-'EOF2' &
	import os, socket, sys
	p = sys.argv[1]
	s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
	s.bind(p + ".tmp"); s.listen(1); os.rename(p + ".tmp", p)
	c, _ = s.accept()
	c.recv(1000)
	c.sendall(b"error: too much at once\n")
	c.close()
	os.unlink(p)
	EOF2
	peer=$!
	wait_for test -S "$SNB_RUN_DIR/G/x.ctl"
	# 1 MB in ten words: far more than the socket holds, so write()
	# returns short when the peer closes
	w=$(head -c 100000 /dev/zero | tr '\0' a)
	run snb-ctl G config x set $w $w $w $w $w $w $w $w $w $w
	wait "$peer"
	rmdir "$SNB_RUN_DIR/G"
	echo "$output"
	[ "$status" -eq 1 ]
	[ "$output" = "error: too much at once" ]
}
