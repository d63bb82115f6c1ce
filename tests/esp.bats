#!/usr/bin/env bats
# snb-esp against scapy's ESP (scapy.layers.ipsec, AES-GCM, ESN): scapy
# decrypts what snb-esp sends, snb-esp must take what scapy makes, the
# anti-replay edges and the wrap into the high half of the sequence
# number included; tshark reads the headers; a reload re-keys a running
# stream without losing a packet; a restarted, killed or swapped sender
# never sends a sequence number (so a nonce) twice.
load helpers

PY=/usr/bin/python3
PEER="$BATS_TEST_DIRNAME/esp-peer.py"
K1=0x00112233445566778899aabbccddeeff01020304
K2=0xfedcba98765432100123456789abcdefa5a5a5a5
K3=0x0f1e2d3c4b5a69788796a5b4c3d2e1f05a5a5a5a
A=2001:db8:1::1
B=2001:db8:2::1

need_peer() {
	$PY -c 'import scapy.layers.ipsec, cryptography' 2>/dev/null ||
	    skip "python3-scapy or python3-cryptography not installed"
}

# sa DIR SPI KEY LOCAL REMOTE [MORE]: one sa block
sa() {
	printf 'sa {\n\tdirection %s;\n\tspi %s;\n\tkey %s;\n' "$1" "$2" "$3"
	printf '\tlocal-address %s;\n\tremote-address %s;\n%s}\n' "$4" "$5" \
	    "${6:-}"
}

ctr() {		# ctr FILE NAME: a counter of --counters-out
	awk -v n="$2" '$1 == n { v = $2 } END { print v + 0 }' "$1"
}

# encrypt CONF IN OUT: clear frames of IN through snb-esp into OUT
encrypt() {
	timeout 60 snb-run "pcap-read $2 | [clear] esp --counters-out \
	    $T/enc.ctr $1 [core] | pcap-write $3"
}

# decrypt CONF IN OUT: ESP frames of IN through snb-esp into OUT
decrypt() {
	timeout 60 snb-run "pcap-read $2 | [core] esp --counters-out \
	    $T/dec.ctr $1 [clear] | pcap-write $3"
}

@test "esp: scapy decrypts what snb-esp sends; tshark reads SPI and sequence" {
	need_peer
	sa out 0x1001 $K1 $A $B > "$T/a.conf"
	$PY "$PEER" clear "$T/clear.pcap" 200 $A $B
	encrypt "$T/a.conf" "$T/clear.pcap" "$T/esp.pcap"
	[ "$(ctr "$T/enc.ctr" encrypted)" -eq 200 ]
	run $PY "$PEER" check "$T/clear.pcap" "$T/esp.pcap" $K1 0x1001 $A $B 1
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "ok 200" ]
	# the peer is not fooled: another key fails
	run $PY "$PEER" check "$T/clear.pcap" "$T/esp.pcap" $K2 0x1001 $A $B 1
	[ "$status" -ne 0 ]
	tshark -r "$T/esp.pcap" -T fields -e esp.spi -e esp.sequence \
	    > "$T/ts" 2>/dev/null
	[ "$(wc -l < "$T/ts")" -eq 200 ]
	[ "$(sed -n 1p "$T/ts")" = "$(printf '0x00001001\t1')" ]
	[ "$(sed -n 200p "$T/ts")" = "$(printf '0x00001001\t200')" ]
	[ "$(cut -f1 "$T/ts" | sort -u)" = 0x00001001 ]
}

@test "esp: packets for no SA, or not IPv6, are dropped and counted, never sent in clear" {
	need_peer
	sa out 0x1001 $K1 $A $B > "$T/a.conf"
	$PY "$PEER" clear "$T/to-b.pcap" 5 $A $B
	$PY "$PEER" clear "$T/to-c.pcap" 7 $A 2001:db8:3::1
	mergecap -w "$T/in.pcap" "$T/to-b.pcap" "$T/to-c.pcap"
	encrypt "$T/a.conf" "$T/in.pcap" "$T/esp.pcap"
	[ "$(npackets "$T/esp.pcap")" -eq 5 ]
	[ "$(ctr "$T/enc.ctr" drop-no-sa)" -eq 7 ]
	# a varied capture (IPv4, IPv6 to elsewhere, ARP, tags, runts)
	mkpcap "$T/mix.pcap" --count 500
	encrypt "$T/a.conf" "$T/mix.pcap" "$T/esp2.pcap"
	[ "$(npackets "$T/esp2.pcap")" -eq 0 ]
	[ "$(ctr "$T/enc.ctr" drop-not-ipv6)" -gt 0 ]
	[ "$(ctr "$T/enc.ctr" drop-no-sa)" -gt 0 ]
	[ $(($(ctr "$T/enc.ctr" drop-not-ipv6) + $(ctr "$T/enc.ctr" drop-no-sa))) \
	    -eq 500 ]
}

@test "esp: whatever comes from the core that is not ESP for an SA is dropped and counted" {
	sa in 0x1001 $K1 $A $B > "$T/b.conf"
	for m in "--count 500" "--random --count 2000"; do
		mkpcap "$T/junk.pcap" $m
		decrypt "$T/b.conf" "$T/junk.pcap" "$T/out.pcap"
		[ "$(npackets "$T/out.pcap")" -eq 0 ]
		n=$(awk '/^drop/ { s += $2 } END { print s + 0 }' "$T/dec.ctr")
		[ "$n" -eq "$(capinfos -c -M "$T/junk.pcap" | awk '/Number/ { print $NF }')" ]
	done
}

@test "esp: snb-esp takes scapy's packets; duplicate, too old, window advance, bad ICV, SPI, length" {
	need_peer
	sa in 0x2001 $K1 $A $B > "$T/b.conf"
	# window 128: after 200, 72 is the oldest that is out (200 - 128)
	$PY "$PEER" make "$T/in.pcap" $K1 0x2001 $B $A \
	    1 2 2 5 3 3:icv 4:icv 4 200 60 72 73 73 71:spi 74:short 0 \
	    199 201 330 202 203
	decrypt "$T/b.conf" "$T/in.pcap" "$T/out.pcap"
	run $PY "$PEER" inner "$T/out.pcap"
	echo "$output"
	[ "$output" = "$(printf 'seq %s\n' 1 2 5 3 4 200 73 199 201 330 203)" ]
	c="$T/dec.ctr"
	[ "$(ctr "$c" decrypted)" -eq 11 ]
	[ "$(ctr "$c" drop-replay)" -eq 3 ]	# 2, 3:icv (a replay first), 73
	[ "$(ctr "$c" drop-icv)" -eq 1 ]	# 4:icv
	[ "$(ctr "$c" drop-too-old)" -eq 4 ]	# 60, 72, 0, 202 (330 - 128)
	[ "$(ctr "$c" drop-bad-spi)" -eq 1 ]
	[ "$(ctr "$c" drop-too-short)" -eq 1 ]
}

@test "esp: a duplicate, a bad ICV and an unknown SPI are logged with SPI, sequence number, addresses and time (RFC 4303 3.4)" {
	need_peer
	sa in 0x2001 $K1 $A $B > "$T/b.conf"
	$PY "$PEER" make "$T/in.pcap" $K1 0x2001 $B $A 1 2 3 2 4:icv 5 9:spi
	timeout 60 snb-run "pcap-read $T/in.pcap | [core] d: esp \
	    --counters-out $T/dec.ctr $T/b.conf [clear] | sink" 2> "$T/err"
	cat "$T/err"
	d='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z'
	grep -Ex "snb-esp: d: audit: replay: spi 0x00002001 seq 2 src $B dst $A flow 0x[0-9a-f]{5} time $d" "$T/err"
	grep -Ex "snb-esp: d: audit: icv: spi 0x00002001 seq 4 src $B dst $A flow 0x[0-9a-f]{5} time $d" "$T/err"
	grep -Ex "snb-esp: d: audit: no-sa: spi 0x00002002 seq 9 src $B dst $A flow 0x[0-9a-f]{5} time $d" "$T/err"
	[ "$(grep -c audit "$T/err")" -eq 3 ]
	[ "$(ctr "$T/dec.ctr" decrypted)" -eq 4 ]
	# the time is now's (UTC), within a minute
	t=$(sed -n 's/.* time \([^.]*\)\..*/\1/p' "$T/err" | head -1)
	[ $(( $(date -u +%s) - $(date -u -d "$t" +%s) )) -lt 60 ]
}

@test "esp: a flood of 100k bad packets makes a few audit lines, which count every one" {
	need_peer
	sa in 0x2001 $K1 $A $B > "$T/b.conf"
	# 1 is taken once, then replayed; 7 fails its ICV every time
	$PY "$PEER" make "$T/in.pcap" $K1 0x2001 $B $A 1 7:icv
	t0=$(date +%s)
	timeout 120 snb-run "pcap-read --loop 50000 $T/in.pcap | [core] d: esp \
	    --counters-out $T/dec.ctr $T/b.conf [clear] | sink" 2> "$T/err"
	s=$(( $(date +%s) - t0 + 1 ))
	cat "$T/err"
	c="$T/dec.ctr"
	[ "$(ctr "$c" decrypted)" -eq 1 ]
	[ "$(ctr "$c" drop-replay)" -eq 49999 ]
	[ "$(ctr "$c" drop-icv)" -eq 50000 ]
	# at most one line per kind a second (and the stop's)
	r=$(grep -c 'audit: replay: ' "$T/err")
	i=$(grep -c 'audit: icv: ' "$T/err")
	echo "$r replay lines, $i icv lines in $s s"
	[ "$r" -ge 1 ]
	[ "$r" -le $((s + 2)) ]
	[ "$i" -ge 1 ]
	[ "$i" -le $((s + 2)) ]
	# every event is in a line: the first of each line and those it says
	# it suppressed
	for k in replay icv; do
		n=$(awk -v k="$k" '$0 ~ "audit: " k ": " { n++;
		    if (match($0, /; [0-9]+ more/)) n += substr($0, RSTART + 2,
		    RLENGTH - 7) } END { print n + 0 }' "$T/err")
		echo "$k: $n in the log"
		[ "$n" -eq "$(ctr "$c" drop-$k)" ]
	done
}

@test "esp: an inbound SA takes ESP from its remote address only, before any decryption" {
	need_peer
	sa in 0x2001 $K1 $A $B > "$T/b.conf"
	# the right SPI, key and destination, from another source
	$PY "$PEER" make "$T/other.pcap" $K1 0x2001 2001:db8:3::1 $A 1 2 3
	decrypt "$T/b.conf" "$T/other.pcap" "$T/out.pcap"
	cat "$T/dec.ctr"
	[ "$(npackets "$T/out.pcap")" -eq 0 ]
	[ "$(ctr "$T/dec.ctr" drop-wrong-remote)" -eq 3 ]
	[ "$(ctr "$T/dec.ctr" drop-icv)" -eq 0 ]
	# the same numbers from the SA's remote: none was taken before
	$PY "$PEER" make "$T/peer.pcap" $K1 0x2001 $B $A 1 2 3
	decrypt "$T/b.conf" "$T/peer.pcap" "$T/out.pcap"
	[ "$(ctr "$T/dec.ctr" decrypted)" -eq 3 ]
	[ "$(ctr "$T/dec.ctr" drop-wrong-remote)" -eq 0 ]
}

@test "esp: inner-remote: an inbound SA takes inner packets from its prefix only (RFC 4301 5.2 step 4), counted and logged" {
	need_peer
	# inner sources: the peer's tunnel address, a host outside the
	# prefix, another host of the peer's subnet (a kernel peer's
	# policy may cover its subnet)
	$PY "$PEER" make "$T/in.pcap" $K1 0x2001 $B $A 1 2:from=2001:db8:9::1 \
	    3:from=2001:db8:2::77 4
	# without inner-remote: whatever authenticates goes on, as before
	sa in 0x2001 $K1 $A $B > "$T/b.conf"
	decrypt "$T/b.conf" "$T/in.pcap" "$T/out.pcap"
	run $PY "$PEER" inner "$T/out.pcap"
	[ "$output" = "$(printf 'seq %s\n' 1 2 3 4)" ]
	[ "$(ctr "$T/dec.ctr" drop-inner-remote)" -eq 0 ]
	sa in 0x2001 $K1 $A $B $'\tinner-remote 2001:db8:2::/64;\n' > "$T/b.conf"
	timeout 60 snb-run "pcap-read $T/in.pcap | [core] d: esp --counters-out \
	    $T/dec.ctr $T/b.conf [clear] | pcap-write $T/out.pcap" 2> "$T/err"
	cat "$T/err"
	run $PY "$PEER" inner "$T/out.pcap"
	echo "$output"
	[ "$output" = "$(printf 'seq %s\n' 1 3 4)" ]
	[ "$(ctr "$T/dec.ctr" drop-inner-remote)" -eq 1 ]
	[ "$(ctr "$T/dec.ctr" decrypted)" -eq 3 ]
	grep -E "^snb-esp: d: audit: inner-remote: spi 0x00002001 seq 2 src 2001:db8:9::1 dst $A " "$T/err"
	# a /128 is the peer's tunnel address alone; /0 is anything
	sa in 0x2001 $K1 $A $B $'\tinner-remote 2001:db8:2::1/128;\n' > "$T/b.conf"
	decrypt "$T/b.conf" "$T/in.pcap" "$T/out.pcap"
	run $PY "$PEER" inner "$T/out.pcap"
	[ "$output" = "$(printf 'seq %s\n' 1 4)" ]
	sa in 0x2001 $K1 $A $B $'\tinner-remote ::/0;\n' > "$T/b.conf"
	decrypt "$T/b.conf" "$T/in.pcap" "$T/out.pcap"
	[ "$(npackets "$T/out.pcap")" -eq 4 ]
	# a prefix of an odd length: 2001:db8:2::77 is in /121, not in /122
	sa in 0x2001 $K1 $A $B $'\tinner-remote 2001:db8:2::/121;\n' > "$T/b.conf"
	decrypt "$T/b.conf" "$T/in.pcap" "$T/out.pcap"
	run $PY "$PEER" inner "$T/out.pcap"
	[ "$output" = "$(printf 'seq %s\n' 1 3 4)" ]
	sa in 0x2001 $K1 $A $B $'\tinner-remote 2001:db8:2::/122;\n' > "$T/b.conf"
	decrypt "$T/b.conf" "$T/in.pcap" "$T/out.pcap"
	run $PY "$PEER" inner "$T/out.pcap"
	[ "$output" = "$(printf 'seq %s\n' 1 4)" ]
}

@test "esp: ESP behind the extension headers a destination passes over is taken (RFC 4303 3.1.2), a fragment is not" {
	need_peer
	sa in 0x2001 $K1 $A $B > "$T/b.conf"
	$PY "$PEER" make "$T/plain.pcap" $K1 0x2001 $B $A 1 2 3 4 5
	# between the outer IPv6 header and ESP: nothing, destination
	# options, hop-by-hop and a routing header with no segments left,
	# a fragment header (not atomic), a routing header with one left
	$PY - "$T/plain.pcap" "$T/ext.pcap" <<-'EOF'
	import sys
	from scapy.all import Ether, IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrHopByHop, \
	    IPv6ExtHdrRouting, IPv6ExtHdrFragment, rdpcap, wrpcap, raw
	exts = [None, IPv6ExtHdrDestOpt(),
	    IPv6ExtHdrHopByHop() / IPv6ExtHdrRouting(segleft=0),
	    IPv6ExtHdrFragment(offset=0, m=1, id=9),
	    IPv6ExtHdrRouting(addresses=["2001:db8:9::1"], segleft=1)]
	out = []
	for p, x in zip(rdpcap(sys.argv[1]), exts):
	    ip = p[IPv6]
	    if x is None:
	        out.append(p)
	        continue
	    x.lastlayer().nh = 50
	    q = IPv6(src=ip.src, dst=ip.dst, hlim=ip.hlim) / x / raw(ip.payload)
	    out.append(Ether(src=p.src, dst=p.dst) / IPv6(raw(q)))
	wrpcap(sys.argv[2], out)
	EOF
	decrypt "$T/b.conf" "$T/ext.pcap" "$T/out.pcap"
	cat "$T/dec.ctr"
	run $PY "$PEER" inner "$T/out.pcap"
	echo "$output"
	[ "$output" = "$(printf 'seq %s\n' 1 2 3)" ]
	[ "$(ctr "$T/dec.ctr" decrypted)" -eq 3 ]
	[ "$(ctr "$T/dec.ctr" drop-not-esp)" -eq 2 ]
}

@test "esp: a replay window of 64 in the SA file moves the edge" {
	need_peer
	sa in 0x2001 $K1 $A $B $'\treplay-window 64;\n' > "$T/b.conf"
	$PY "$PEER" make "$T/in.pcap" $K1 0x2001 $B $A 100 36 37 64
	decrypt "$T/b.conf" "$T/in.pcap" "$T/out.pcap"
	run $PY "$PEER" inner "$T/out.pcap"
	[ "$output" = "$(printf 'seq %s\n' 100 37 64)" ]
	[ "$(ctr "$T/dec.ctr" drop-too-old)" -eq 1 ]
}

@test "esp: the sequence number wraps into the high half, both ways (ESN)" {
	need_peer
	# out: starting at 2^32 - 16, 40 packets cross into the high half
	sa out 0x1001 $K1 $A $B $'\tsequence 0xfffffff0;\n' > "$T/a.conf"
	$PY "$PEER" clear "$T/clear.pcap" 40 $A $B
	encrypt "$T/a.conf" "$T/clear.pcap" "$T/esp.pcap"
	run $PY "$PEER" check "$T/clear.pcap" "$T/esp.pcap" $K1 0x1001 $A $B \
	    0xfffffff1
	echo "$output"
	[ "$output" = "ok 40" ]
	# in: scapy's ESN packets around 2^32 (the window learns the high
	# half from the ICV), a late one from below, a replay across the
	# wrap, and a far one whose low half is below the window: too old
	$PY "$PEER" make "$T/in.pcap" $K1 0x2001 $B $A \
	    0xfffffff0 0xfffffffe 0x100000001 0xffffffff 0xffffffff \
	    0x100000002 0x100000000 0x100000001 0xffffff00 0x100000090 \
	    0x100000011 0x100000012:icv
	sa in 0x2001 $K1 $A $B > "$T/b.conf"
	decrypt "$T/b.conf" "$T/in.pcap" "$T/out.pcap"
	run $PY "$PEER" inner "$T/out.pcap"
	echo "$output"
	[ "$output" = "$(printf 'seq %s\n' 4294967280 4294967294 4294967297 \
	    4294967295 4294967298 4294967296 4294967440 4294967313)" ]
	[ "$(ctr "$T/dec.ctr" drop-replay)" -eq 2 ]
	[ "$(ctr "$T/dec.ctr" drop-too-old)" -eq 1 ]
	[ "$(ctr "$T/dec.ctr" drop-icv)" -eq 1 ]
}

@test "esp: a peer whose number jumped k * 2^32 ahead is re-synchronised after the threshold (RFC 4303 A3)" {
	need_peer
	J=$((3 << 32))
	# 1..10 in step; then the peer jumps 3 * 2^32 ahead, its low halves
	# going on (11..26: 16 failures, the threshold); a forged 27 past
	# the threshold; the true 27 (re-synchronised), 28..30; 27 again
	# (a replay); 5 from before the jump (wrong high half now)
	$PY "$PEER" make "$T/in.pcap" $K1 0x2001 $B $A 1..10 \
	    $((J + 11))..$((J + 26)) $((J + 27)):icv $((J + 27))..$((J + 30)) \
	    $((J + 27)) 5
	# without re-synchronisation (what snb-esp did before, and does
	# with resync-attempts 0): all of the jumped peer is lost
	sa in 0x2001 $K1 $A $B $'\tresync-threshold 16;\n\tresync-attempts 0;\n' \
	    > "$T/b.conf"
	decrypt "$T/b.conf" "$T/in.pcap" "$T/out.pcap"
	run $PY "$PEER" inner "$T/out.pcap"
	[ "$output" = "$(printf 'seq %s\n' $(seq 1 10))" ]
	[ "$(ctr "$T/dec.ctr" decrypted)" -eq 10 ]
	[ "$(ctr "$T/dec.ctr" drop-icv)" -eq 22 ]
	[ "$(ctr "$T/dec.ctr" drop-replay)" -eq 1 ]	# 5
	[ "$(ctr "$T/dec.ctr" resynced)" -eq 0 ]
	# with it: the 17th failure in a row is tried 1..8 * 2^32 higher
	sa in 0x2001 $K1 $A $B $'\tresync-threshold 16;\n' > "$T/b.conf"
	decrypt "$T/b.conf" "$T/in.pcap" "$T/out.pcap"
	run $PY "$PEER" inner "$T/out.pcap"
	echo "$output"
	[ "$output" = "$(printf 'seq %s\n' $(seq 1 10) $(seq $((J + 27)) \
	    $((J + 30))))" ]
	c="$T/dec.ctr"
	[ "$(ctr "$c" decrypted)" -eq 14 ]
	[ "$(ctr "$c" resynced)" -eq 1 ]
	[ "$(ctr "$c" drop-icv)" -eq 18 ]	# 11..26, forged 27, 5
	[ "$(ctr "$c" drop-replay)" -eq 1 ]	# 27 again
}

@test "esp: re-synchronisation by default after 1024 failures in a row, 8 subspaces up" {
	need_peer
	J=$((1 << 32))
	# 1..3, then 2^32 ahead: 1024 failures, the 1025th taken; then a
	# jump of 9 * 2^32, further than 8 attempts reach: lost
	K=$((J + 2000 + (9 << 32)))
	$PY "$PEER" make "$T/in.pcap" $K1 0x2001 $B $A 1..3 \
	    $((J + 4))..$((J + 1030)) $((K + 1))..$((K + 1100))
	sa in 0x2001 $K1 $A $B > "$T/b.conf"
	decrypt "$T/b.conf" "$T/in.pcap" "$T/out.pcap"
	run $PY "$PEER" inner "$T/out.pcap"
	[ "$output" = "$(printf 'seq %s\n' 1 2 3 $((J + 1028)) $((J + 1029)) \
	    $((J + 1030)))" ]
	c="$T/dec.ctr"
	[ "$(ctr "$c" decrypted)" -eq 6 ]
	[ "$(ctr "$c" resynced)" -eq 1 ]
	[ "$(ctr "$c" drop-icv)" -eq $((1024 + 1100)) ]
}

@test "esp: the failures in a row toward re-synchronisation survive a swap and a kill (RFC 4303 A3)" {
	need_peer
	J=$((3 << 32))
	# 1..10; then the peer jumps 3 * 2^32: 10 failures, a swap, 3 more,
	# a SIGKILL, 3 more (16, the threshold); the 17th failure in a row
	# is re-synchronised whatever process counted the first ones
	$PY "$PEER" make "$T/p1.pcap" $K1 0x2001 $B $A 1..10 \
	    $((J + 11))..$((J + 20))
	$PY "$PEER" make "$T/p2.pcap" $K1 0x2001 $B $A $((J + 21))..$((J + 23))
	$PY "$PEER" make "$T/p3.pcap" $K1 0x2001 $B $A $((J + 24))..$((J + 28))
	# pcap-read publishes a burst once it has read it whole: 64 frames
	# that are not ESP (no SA's count moves) after each part push it out
	$PY "$PEER" clear "$T/fill.pcap" 64 $B $A
	tail -c +25 "$T/fill.pcap" > "$T/fill"
	for f in p1 p2 p3; do tail -c +25 "$T/$f.pcap" | cat - "$T/fill" \
	    > "$T/$f"; done
	sa in 0x2001 $K1 $A $B $'\tresync-threshold 16;\n' > "$T/b.conf"
	mkfifo "$T/in"
	snb-run -n espfails --restart=on-failure "pcap-read $T/in | [core] \
	    d: esp $T/b.conf [clear] | pcap-write $T/out.pcap" 2> "$T/err" 3>&- &
	gpid=$!
	# read-write: an open that waits for no reader (a graph that fails
	# before pcap-read opens the FIFO fails the test instead of hanging it)
	exec 7<> "$T/in"
	head -c 24 "$T/p1.pcap" >&7
	wait_for test -S "$SNB_RUN_DIR/espfails/d.ctl"
	cat "$T/p1" >&7
	wait_for eval 'snb-ctl espfails config d show | grep -q "top 10 fails 10"'
	chaos espfails d swap "esp $T/b.conf"
	run snb-ctl espfails config d show
	echo "$output"
	assert_output_has "top 10 fails 10"
	cat "$T/p2" >&7
	wait_for eval 'snb-ctl espfails config d show | grep -q "fails 13"'
	chaos espfails d kill
	wait_for test -S "$SNB_RUN_DIR/espfails/d.ctl"
	wait_for eval 'snb-ctl espfails config d show | grep -q "top 10 fails 13"'
	cat "$T/p3" >&7
	exec 7>&-
	timeout 60 tail --pid="$gpid" -f /dev/null
	wait "$gpid"
	cat "$T/err"
	run $PY "$PEER" inner "$T/out.pcap"
	echo "$output"
	[ "$output" = "$(printf 'seq %s\n' $(seq 1 10) $((J + 27)) $((J + 28)))" ]
}

@test "esp: an SA never wraps its 64-bit sequence number: it stops, counted" {
	need_peer
	sa out 0x1001 $K1 $A $B $'\tsequence 0xfffffffffffffffd;\n' \
	    > "$T/a.conf"
	$PY "$PEER" clear "$T/clear.pcap" 10 $A $B
	encrypt "$T/a.conf" "$T/clear.pcap" "$T/esp.pcap"
	[ "$(ctr "$T/enc.ctr" encrypted)" -eq 2 ]
	[ "$(ctr "$T/enc.ctr" drop-seq-exhausted)" -eq 8 ]
	$PY "$PEER" clear "$T/two.pcap" 2 $A $B
	run $PY "$PEER" check "$T/two.pcap" "$T/esp.pcap" $K1 0x1001 $A $B \
	    0xfffffffffffffffe
	echo "$output"
	[ "$output" = "ok 2" ]
}

@test "esp: snb to snb: what one site encrypts the other gives back byte for byte" {
	need_peer
	sa out 0x1001 $K1 $A $B > "$T/a.conf"
	# the receiver's local address is the sender's remote
	sa in 0x1001 $K1 $B $A > "$T/b.conf"
	$PY "$PEER" clear "$T/clear.pcap" 300 $A $B
	encrypt "$T/a.conf" "$T/clear.pcap" "$T/esp.pcap"
	decrypt "$T/b.conf" "$T/esp.pcap" "$T/out.pcap"
	[ "$(ctr "$T/dec.ctr" decrypted)" -eq 300 ]
	# the Ethernet addresses are the ESP frame's: compare from IPv6 on
	f="-T fields -e ipv6.src -e ipv6.dst -e ipv6.plen -e udp.srcport -e data.data"
	tshark -r "$T/clear.pcap" $f > "$T/a.txt" 2>/dev/null
	tshark -r "$T/out.pcap" $f > "$T/b.txt" 2>/dev/null
	[ "$(wc -l < "$T/a.txt")" -eq 300 ]
	cmp "$T/a.txt" "$T/b.txt"
}

@test "esp: SA file errors name FILE:LINE:COL" {
	bad() {		# bad LINE:COL MESSAGE: the file $T/e.conf is refused so
		run timeout 20 snb-esp "$T/e.conf"
		echo "$output"
		[ "$status" -eq 2 ]
		[ "$output" = "snb-esp: $T/e.conf:$1: $2" ]
	}
	sa out 0x10 $K1 $A $B > "$T/e.conf"
	bad 3:6 "bad spi '0x10': 256 .. 4294967295, decimal or 0x hexadecimal"
	sa out 0x1001 0x0011 $A $B > "$T/e.conf"
	# a mistyped key is most of the key: never shown
	bad 4:6 "bad key: 0x and 40 hex digits (16 bytes of AES-128 key, 4 of salt)"
	sa out 0x1001 ${K1}0 $A $B > "$T/e.conf"
	bad 4:6 "bad key: 0x and 40 hex digits (16 bytes of AES-128 key, 4 of salt)"
	sa sideways 0x1001 $K1 $A $B > "$T/e.conf"
	bad 2:12 "bad direction 'sideways' (in, out)"
	sa out 0x1001 $K1 $A $B $'\treplay-window 128;\n' > "$T/e.conf"
	bad 7:2 "sa spi 0x1001: replay-window is for inbound SAs"
	sa in 0x1001 $K1 $A $B $'\treplay-window 100;\n' > "$T/e.conf"
	bad 7:2 "sa spi 0x1001: replay-window 100 is not a multiple of 64"
	sa out 0x1001 $K1 $A $B $'\tresync-attempts 8;\n' > "$T/e.conf"
	bad 7:2 "sa spi 0x1001: resync-attempts is for inbound SAs"
	sa in 0x1001 $K1 $A $B $'\tresync-attempts 65;\n' > "$T/e.conf"
	bad 7:18 "'resync-attempts' out of range: 65 (0..64)"
	{ sa in 0x1001 $K1 $A $B; sa in 0x1001 $K2 $A $B; } > "$T/e.conf"
	bad 10:6 "sa spi 0x1001: its spi and direction are those of the SA at 1:1"
	{ sa out 0x1001 $K1 $A $B; sa out 0x1002 $K2 $A $B; } > "$T/e.conf"
	bad 8:1 "sa spi 0x1002: a second outbound SA to $B (the first at 1:1)"
	# one key and salt in two SAs: GCM's nonces would repeat (the
	# salt and a sequence number from 1 in each), either direction
	{ sa out 0x1001 $K1 $A $B; sa in 0x2001 $K1 $A $B; } > "$T/e.conf"
	bad 11:6 "sa spi 0x2001: the key and salt of the SA at 1:1 (GCM would use its nonces twice: one key per SA and direction)"
	{ sa in 0x1001 $K1 $A $B; sa in 0x2001 ${K1%??}05 $A $B; } > "$T/e.conf"
	# another salt is another nonce: taken (snb-run -c runs its checks)
	run timeout 20 snb-run -c "source | [clear] esp $T/e.conf [core] | sink"
	echo "$output"
	[ "$status" -eq 0 ]
	printf 'sa { direction in; spi 300; key %s; local-address %s; }\n' \
	    $K1 $A > "$T/e.conf"
	bad 1:1 "sa: missing 'remote-address'"
	sa out 0x1001 $K1 $A $B $'\tinner-remote 2001:db8::/32;\n' > "$T/e.conf"
	bad 7:2 "sa spi 0x1001: inner-remote is for inbound SAs"
	for p in 2001:db8::1/64 2001:db8::/129 2001:db8:: 2001:db8::/ x/8 \
	    2001:db8::/1x; do
		sa in 0x1001 $K1 $A $B "	inner-remote $p;
" > "$T/e.conf"
		bad 7:15 "bad inner-remote '$p': an IPv6 prefix, ADDRESS/LENGTH (0..128), no bit set past LENGTH"
	done
	printf '// nothing\n' > "$T/e.conf"
	bad 2:1 "no sa block"
	printf 'sa { sequence 18446744073709551616; }\n' > "$T/e.conf"
	bad 1:15 "bad sequence '18446744073709551616': 0 .. 2^64-1, decimal or 0x hexadecimal"
	# A missing file is a failure (1), as in every tool that reads one.
	run snb-esp "$T/none.conf"
	[ "$status" -eq 1 ]
	assert_output_has "snb-esp: $T/none.conf: No such file or directory"
	# an input whose output is open would lose what it took
	sa out 0x1001 $K1 $A $B > "$T/a.conf"
	run timeout 20 snb-run "source --count 1 | [clear] esp $T/a.conf"
	[ "$status" -ne 0 ]
	assert_output_has "input 'clear' is connected but output 'core' is not"
}

@test "esp: a re-key by reload under a steady stream loses nothing (make before break)" {
	need_peer
	sa out 0x1001 $K1 $A $B > "$T/a1.conf"
	sa in 0x1001 $K1 $B $A > "$T/b1.conf"
	{ sa in 0x1001 $K1 $B $A; sa in 0x1002 $K2 $B $A; } > "$T/b2.conf"
	sa out 0x1002 $K2 $A $B > "$T/a2.conf"
	sa in 0x1002 $K2 $B $A > "$T/b3.conf"
	cp "$T/a1.conf" "$T/a.conf"
	cp "$T/b1.conf" "$T/b.conf"
	$PY "$PEER" clear "$T/chunk.pcap" 64 $A $B
	head -c 24 "$T/chunk.pcap" > "$T/hdr"
	tail -c +25 "$T/chunk.pcap" > "$T/64"
	mkfifo "$T/in"
	snb-run -n esprekey "pcap-read $T/in | [clear] a: esp $T/a.conf \
	    [core] | [core] b: esp --counters-out $T/b.ctr $T/b.conf [clear] | \
	    pcap-write $T/out.pcap" 2> "$T/err" 3>&- &
	gpid=$!
	# read-write: an open that waits for no reader (a graph that fails
	# before pcap-read opens the FIFO fails the test instead of hanging it)
	exec 7<> "$T/in"
	cat "$T/hdr" >&7
	wait_for test -S "$SNB_RUN_DIR/esprekey/b.ctl"
	# 64 frames every 10 ms or so, until told to stop
	( n=0; while [ ! -e "$T/stop" ]; do cat "$T/64"; n=$((n + 1));
	    sleep 0.01; done; echo "$n" > "$T/passes" ) >&7 &
	feeder=$!
	wait_for eval '[ "$(npackets "$T/out.pcap")" -gt 640 ]'
	# 1. the new inbound SA beside the old one
	cp "$T/b2.conf" "$T/b.conf"
	run snb-ctl esprekey config b reload
	echo "$output"
	[ "$status" -eq 0 ]
	assert_output_has "2 SAs (2 inbound), 1 kept"
	sleep 0.3
	# 2. the sender moves to the new SA
	cp "$T/a2.conf" "$T/a.conf"
	run snb-ctl esprekey config a reload
	[ "$status" -eq 0 ]
	wait_for eval 'snb-ctl esprekey config b show | grep -q "spi 0x00001002.*top [1-9]"'
	# 3. the old inbound SA goes
	cp "$T/b3.conf" "$T/b.conf"
	run snb-ctl esprekey config b reload
	[ "$status" -eq 0 ]
	# a refused file changes nothing
	echo 'sa {' > "$T/b.conf"
	run snb-ctl esprekey config b reload
	[ "$status" -ne 0 ]
	assert_output_has "unterminated block"
	cp "$T/b3.conf" "$T/b.conf"
	sleep 0.3
	touch "$T/stop"
	wait "$feeder"
	exec 7>&-
	timeout 60 tail --pid="$gpid" -f /dev/null
	wait "$gpid"
	passes=$(cat "$T/passes")
	echo "passes $passes"; cat "$T/b.ctr"
	[ "$(npackets "$T/out.pcap")" -eq $((passes * 64)) ]
	[ "$(ctr "$T/b.ctr" decrypted)" -eq $((passes * 64)) ]
	[ "$(awk '/^drop/ { s += $2 } END { print s + 0 }' "$T/b.ctr")" -eq 0 ]
}

# A test that fails half-way stops its graph (bounded by timeout anyway).
eval "helpers_$(declare -f teardown)"
teardown() {
	[ -z "${seqpid:-}" ] || { snb-ctl espseq stop > /dev/null 2>&1;
	    timeout 30 tail --pid="$seqpid" -f /dev/null; } || true
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

@test "esp: a restarted, killed or swapped sender never sends a sequence number twice (so never a nonce)" {
	need_peer
	command -v tshark > /dev/null || skip "tshark not installed"
	sa out 0x1001 $K1 $A $B > "$T/a.conf"
	$PY "$PEER" clear "$T/clear.pcap" 64 $A $B
	timeout 120 snb-run -n espseq --restart=on-failure "pcap-read \
	    --loop 0 --rate 1500 $T/clear.pcap | [clear] e: esp $T/a.conf \
	    [core] | pcap-write $T/esp.pcap" 2> "$T/err" 3>&- &
	seqpid=$!
	wait_stages espseq 3
	events="restart kill swap restart swap kill"
	for ev in $events; do
		sleep 0.3
		chaos espseq e $ev "esp $T/a.conf"
	done
	sleep 0.3
	snb-ctl espseq stop
	st=0; wait "$seqpid" || st=$?
	cat "$T/err"
	[ "$st" -eq 0 ]
	# tshark: one SPI, numbers strictly increasing, no (SPI, seq) twice
	tshark -r "$T/esp.pcap" -T fields -e esp.spi -e esp.sequence \
	    > "$T/seq"
	n=$(wc -l < "$T/seq")
	echo "$n frames"
	[ "$n" -gt 500 ]
	[ -z "$(sort "$T/seq" | uniq -d)" ]
	awk 'NR > 1 && $2 + 0 <= last { print "line " NR ": " $2 " after " last;
	    bad = 1 } { last = $2 + 0 } $1 != "0x00001001" { bad = 1 }
	    END { exit bad }' "$T/seq"
	# scapy: IVs increase with them (no nonce twice), and the packets
	# of every successor, its first ones included, decrypt
	run $PY "$PEER" nonces "$T/esp.pcap" $K1 0x1001 $A $B
	echo "$output"
	[ "$status" -eq 0 ]
	set -- $output
	[ "$1" -eq "$n" ]
	# every successor started past what its predecessor had sent
	[ "$2" -ge 6 ]
}

@test "esp: a restart, swap or kill onto a new SPI or address under the same key goes on from its sequence number (no nonce twice)" {
	command -v tshark > /dev/null || skip "tshark not installed"
	need_peer
	sa out 0x1001 $K1 $A $B > "$T/a.conf"
	$PY "$PEER" clear "$T/clear.pcap" 64 $A $B
	timeout 120 snb-run -n espkey --restart=on-failure "pcap-read \
	    --loop 0 --rate 1500 $T/clear.pcap | [clear] e: esp $T/a.conf \
	    [core] | pcap-write $T/esp.pcap" 2> "$T/err" 3>&- &
	seqpid=$!
	wait_stages espkey 3
	# the key and salt stay; the SPI, then the local address change
	sleep 0.3
	sa out 0x1002 $K1 $A $B > "$T/a.conf"
	chaos espkey e swap "esp $T/a.conf"
	sleep 0.3
	sa out 0x1003 $K1 2001:db8:1::9 $B > "$T/a.conf"
	chaos espkey e restart
	sleep 0.3
	sa out 0x1004 $K1 $A $B > "$T/a.conf"
	chaos espkey e kill
	sleep 0.3
	snb-ctl espkey stop
	st=0; wait "$seqpid" || st=$?
	cat "$T/err"
	[ "$st" -eq 0 ]
	tshark -r "$T/esp.pcap" -T fields -e esp.spi -e esp.sequence \
	    > "$T/seq"
	# every SPI sent, and the numbers (one key and salt: one space of
	# nonces) strictly increasing across them
	for spi in 1001 1002 1003 1004; do
		grep -q "^0x0000$spi" "$T/seq"
	done
	awk 'NR > 1 && $2 + 0 <= last { print "line " NR ": " $0 " after " last;
	    bad = 1 } { last = $2 + 0 } END { exit bad }' "$T/seq"
}

@test "esp: a reload refuses a new outbound SA under a running one's key and salt (GCM nonces again from 1)" {
	sa out 0x1001 $K1 $A $B > "$T/a.conf"
	mkfifo "$T/in"
	snb-run -n espnonce "pcap-read $T/in | [clear] e: esp $T/a.conf \
	    [core] | pcap-write $T/out.pcap" 2> "$T/err" 3>&- &
	gpid=$!
	# read-write: an open that waits for no reader (a graph that fails
	# before pcap-read opens the FIFO fails the test instead of hanging it)
	exec 7<> "$T/in"
	# a pcap header, no packet
	printf '\xd4\xc3\xb2\xa1\x02\x00\x04\x00\0\0\0\0\0\0\0\0\xff\xff\0\0\x01\0\0\0' >&7
	wait_for test -S "$SNB_RUN_DIR/espnonce/e.ctl"
	# only the remote address changed, then only the SPI
	sa out 0x1001 $K1 $A 2001:db8:3::1 > "$T/a.conf"
	run snb-ctl espnonce config e reload
	echo "$output"
	[ "$status" -ne 0 ]
	assert_output_has "$T/a.conf:1:"
	sa out 0x1002 $K1 $A $B > "$T/a.conf"
	run snb-ctl espnonce config e reload
	echo "$output"
	[ "$status" -ne 0 ]
	assert_output_has "new key"
	# the running table stays; a new key is taken
	run snb-ctl espnonce config e show
	assert_output_has "spi 0x00001001"
	sa out 0x1002 $K2 $A 2001:db8:3::1 > "$T/a.conf"
	run snb-ctl espnonce config e reload
	echo "$output"
	[ "$status" -eq 0 ]
	exec 7>&-
	timeout 60 tail --pid="$gpid" -f /dev/null
	wait "$gpid"
}

@test "esp: packets dropped for inner-remote move the window a successor goes on from" {
	need_peer
	F=from=2001:db8:9::1
	$PY "$PEER" make "$T/p1.pcap" $K1 0x2001 $B $A 1:$F 2:$F 3:$F
	$PY "$PEER" clear "$T/fill.pcap" 64 $B $A
	tail -c +25 "$T/fill.pcap" > "$T/fill"
	tail -c +25 "$T/p1.pcap" | cat - "$T/fill" > "$T/p1"
	sa in 0x2001 $K1 $A $B $'\tinner-remote 2001:db8:2::/64;\n' > "$T/b.conf"
	mkfifo "$T/in"
	snb-run -n espinner --restart=on-failure "pcap-read $T/in | [core] \
	    d: esp $T/b.conf [clear] | pcap-write $T/out.pcap" 2> "$T/err" 3>&- &
	gpid=$!
	# read-write: an open that waits for no reader (a graph that fails
	# before pcap-read opens the FIFO fails the test instead of hanging it)
	exec 7<> "$T/in"
	head -c 24 "$T/p1.pcap" >&7
	wait_for test -S "$SNB_RUN_DIR/espinner/d.ctl"
	cat "$T/p1" >&7
	wait_for eval 'snb-ctl espinner config d show | grep -q "top 3 "'
	chaos espinner d kill
	wait_for test -S "$SNB_RUN_DIR/espinner/d.ctl"
	run snb-ctl espinner config d show
	echo "$output"
	assert_output_has "top 3 "
	exec 7>&-
	timeout 60 tail --pid="$gpid" -f /dev/null
	wait "$gpid"
}

@test "esp: an outbound key a reload removed is gone for good: no later reload, restart or swap brings it back" {
	sa out 0x1001 $K1 $A $B > "$T/a.conf"
	mkfifo "$T/in"
	snb-run -n espgone "pcap-read $T/in | [clear] e: esp $T/a.conf \
	    [core] | pcap-write $T/out.pcap" 2> "$T/err" 3>&- &
	gpid=$!
	# read-write: an open that waits for no reader (a graph that fails
	# before pcap-read opens the FIFO fails the test instead of hanging it)
	exec 7<> "$T/in"
	printf '\xd4\xc3\xb2\xa1\x02\x00\x04\x00\0\0\0\0\0\0\0\0\xff\xff\0\0\x01\0\0\0' >&7
	wait_for test -S "$SNB_RUN_DIR/espgone/e.ctl"
	# K1 is replaced by K2: K1's nonces from 1 up are spent
	sa out 0x1002 $K2 $A $B > "$T/a.conf"
	run snb-ctl espgone config e reload
	echo "$output"
	[ "$status" -eq 0 ]
	# K1 again, under a new SPI, then as the very SA it was
	for spi in 0x1003 0x1001; do
		sa out $spi $K1 $A $B > "$T/a.conf"
		run snb-ctl espgone config e reload
		echo "$output"
		[ "$status" -ne 0 ]
		assert_output_has "$T/a.conf:1:1:"
		assert_output_has "removed"
	done
	run snb-ctl espgone config e show
	assert_output_has "spi 0x00001002"
	# nor through a swap or a restart: the successor leaves the SA out
	sa out 0x1003 $K1 $A $B > "$T/a.conf"
	chaos espgone e swap "esp $T/a.conf"
	run snb-ctl espgone config e show
	echo "$output"
	[ "$output" = "no SA" ]
	{ sa out 0x1004 $K3 $A 2001:db8:3::1; sa out 0x1001 $K1 $A $B; } \
	    > "$T/a.conf"
	chaos espgone e restart
	run snb-ctl espgone config e show
	echo "$output"
	assert_output_has "spi 0x00001004"
	[ -z "$(echo "$output" | grep 0x00001001)" ]
	# the swap's file removed K2: gone too
	sa out 0x1005 $K2 $A $B > "$T/a.conf"
	run snb-ctl espgone config e reload
	echo "$output"
	[ "$status" -ne 0 ]
	assert_output_has "removed"
	exec 7>&-
	timeout 60 tail --pid="$gpid" -f /dev/null
	wait "$gpid"
	cat "$T/err"
	[ "$(grep -c 'removed earlier' "$T/err")" -eq 2 ]
}
