#!/usr/bin/env bats
# Copies of a stage ("Nx( ... )" in the graph language) under traffic, and
# snb-ctl's rolling swap and restart of them: every packet must come out
# once, counted by tcpdump and by the packets' own numbers.
load helpers

# A test that fails half-way leaves no graph running behind it.
eval "$(declare -f teardown | sed '1s/teardown/helpers_teardown/')"
teardown() {
	if [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null; then
		timeout 10 tail --pid="$pid" -f /dev/null || kill -9 "$pid"
	fi
	helpers_teardown
}

# flows.pcap N OUT: N UDP frames over 251 flows (source ports), each
# carrying its number (8 bytes, big-endian) as payload.
mk_flows() {
	/usr/bin/python3 - "$1" "$2" <<'EOF'
import struct, sys
n, out = int(sys.argv[1]), sys.argv[2]
def csum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xffff)
    return ~(s + (s >> 16)) & 0xffff
with open(out, "wb") as f:
    f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
    for i in range(n):
        udp = struct.pack("!HHHH", 1024 + i % 251, 5678, 16, 0) + struct.pack("!Q", i)
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), i & 0xffff,
                         0, 64, 17, 0, bytes([198, 18, 0, 1]), bytes([198, 19, 0, 1]))
        ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
        fr = bytes.fromhex("020000000002" "020000000001" "0800") + ip + udp
        f.write(struct.pack("<IIII", i // 1000, i % 1000 * 1000, len(fr), len(fr)) + fr)
EOF
}

# check_numbers N FILE: FILE holds the numbers 0..N-1, each exactly once.
check_numbers() {
	/usr/bin/python3 - "$1" "$2" <<'EOF'
import struct, sys
n, path = int(sys.argv[1]), sys.argv[2]
d = open(path, "rb").read()
off, seen = 24, []
while off < len(d):
    caplen = struct.unpack_from("<I", d, off + 8)[0]
    seen.append(struct.unpack_from("!Q", d, off + 16 + 42)[0])
    off += 16 + caplen
dup = len(seen) - len(set(seen))
lost = n - len(set(seen) & set(range(n)))
print("%d packets, %d duplicated, %d lost" % (len(seen), dup, lost))
sys.exit(0 if dup == 0 and lost == 0 and len(seen) == n else 1)
EOF
}

@test "4 copies of a filter: every flow's packets through one copy, none lost" {
	mk_flows 20000 "$T/in.pcap"
	run snb-run --stats "pcap-read $T/in.pcap | lb | 4x( w: filter udp ) | join | pcap-write $T/out.pcap"
	echo "$output"
	[ "$status" -eq 0 ]
	# tcpdump counts what came out, and the numbers say which packets.
	[ "$(tcpdump -nn -r "$T/out.pcap" udp 2>/dev/null | wc -l)" -eq 20000 ]
	check_numbers 20000 "$T/out.pcap"
	# lb spread the 251 flows over all four copies.
	for k in 1 2 3 4; do
		n=$(echo "$output" | sed -n "s/^snb-run: stage w\.$k (filter): \([0-9]*\) in,.*/\1/p")
		echo "w.$k: $n"
		[ -n "$n" ]
		[ "$n" -gt 1000 ]
	done
}

@test "copies of a chain, each copy's words numbered with {}" {
	mk_flows 3000 "$T/in.pcap"
	run snb-run "pcap-read $T/in.pcap | lb | 3x( filter udp | pcap-write $T/out{}.pcap )"
	[ "$status" -eq 0 ]
	total=0
	for k in 1 2 3; do
		n=$(tcpdump -nn -r "$T/out$k.pcap" udp 2>/dev/null | wc -l)
		echo "out$k.pcap: $n"
		[ "$n" -gt 0 ]
		total=$((total + n))
	done
	[ "$total" -eq 3000 ]
}

@test "rolling swap and restart of 4 copies under traffic: no packet lost or duplicated" {
	# 10 s of traffic (30 s in the sanitizer build) for 9 swaps and
	# restarts that take about 1 s (5 to 10 s with the sanitizers).
	D=10; [ "$SNB_TEST_SCALE" -eq 1 ] || D=30
	R=$((8000 / SNB_TEST_SCALE)); N=$((R * D))
	mk_flows "$N" "$T/in.pcap"
	snb-run -n roll "pcap-read --rate $R $T/in.pcap | lb | 4x( w: filter udp ) | join | s: pcap-write $T/out.pcap" 2> "$T/err" 3>&- &
	pid=$!
	wait_stages roll 8
	wait_count roll s 100
	ctl=0; t0=$(date +%s.%N)
	snb-ctl roll swap w 'filter ip' > "$T/ctl" || ctl=1
	snb-ctl roll restart w >> "$T/ctl" || ctl=1
	snb-ctl roll swap w.3 'filter udp' >> "$T/ctl" || ctl=1
	# The traffic outlasted the swaps (else they were not under traffic).
	snb-ctl roll show > "$T/show" || ctl=1
	echo "# 9 swaps and restarts in $(echo "$(date +%s.%N) - $t0" | bc) s, within $D s of traffic" >&3
	st=0; wait $pid || st=$?
	cat "$T/ctl" "$T/show" "$T/err"
	[ "$ctl" -eq 0 ]
	[ "$st" -eq 0 ]
	grep "^stage pcap-read pid [1-9][0-9]* restarts 0 app pcap-read '--rate'" "$T/show"
	grep -q '^ok: swapped the 4 copies of w one by one' "$T/ctl"
	grep -q '^ok: restarted the 4 copies of w one by one' "$T/ctl"
	grep -q '^ok: swapped w.3: ' "$T/ctl"
	# One copy after the other, in order.
	[ "$(grep -o 'swapped w\.[0-9] to' "$T/err" | tr -d '\n')" = \
	    "swapped w.1 toswapped w.2 toswapped w.3 toswapped w.4 toswapped w.3 to" ]
	[ "$(tcpdump -nn -r "$T/out.pcap" udp 2>/dev/null | wc -l)" -eq "$N" ]
	check_numbers "$N" "$T/out.pcap"
}

@test "a rolling swap stops at the first copy that refuses, and says which" {
	snb-run -n rollerr 'source --rate 1000 --hold | lb | 3x( w: filter udp ) | join | sink' 2> "$T/err" 3>&- &
	pid=$!
	wait_stages rollerr 7
	run snb-ctl rollerr swap w 'filter no such words'
	echo "$output"
	[ "$status" -ne 0 ]
	assert_output_has "error: rolling swap of w stopped at w.1 (1 of 3): 0 copies done, 3 unchanged"
	run snb-ctl rollerr swap w 'sink'
	[ "$status" -ne 0 ]
	assert_output_has "stopped at w.1"
	assert_output_has "sink has no output port 'out'"
	run snb-ctl rollerr restart nosuch
	[ "$status" -ne 0 ]
	assert_output_has "error: no stage 'nosuch'"
	# --help says so too.
	run snb-ctl --help
	assert_output_has "A LABEL with copies"
	assert_output_has "restarted, swapped or configured one copy after the"
	# Every copy still runs its old process.
	run snb-ctl rollerr show
	[ "$(echo "$output" | grep -c "^stage w\.[123] .*restarts 0 app filter 'udp'")" -eq 3 ]
	snb-ctl rollerr stop
	wait $pid
	# One copy: said in the singular.
	snb-run -n roll1 'source --rate 1000 --hold | lb | 1x( w: filter udp ) | join | sink' 2> "$T/err" 3>&- &
	pid=$!
	wait_stages roll1 5
	run snb-ctl roll1 swap w 'filter ip'
	echo "$output"
	[ "$status" -eq 0 ]
	assert_output_has "ok: swapped the 1 copy of w"
	snb-ctl roll1 stop
	wait $pid
}

@test "a rolling swap numbers each copy's words with {}; a copy whose replacement fails stops it there, the others keep running" {
	# 8 s of traffic (30 s in the sanitizer build) for 5 swaps: the
	# stream must outlast them.
	D=8; [ "$SNB_TEST_SCALE" -eq 1 ] || D=30
	R=$((3000 / SNB_TEST_SCALE)); N=$((R * D))
	mk_flows "$N" "$T/in.pcap"
	mkdir "$T/d1" "$T/d3"
	snb-run -n rollk "pcap-read --rate $R $T/in.pcap | lb | 3x( w: filter udp | o: pcap-write $T/o{}.pcap )" 2> "$T/err" 3>&- &
	pid=$!
	wait_stages rollk 8
	wait_count rollk o.3 10
	# d2 is missing: copy 1 is swapped, copy 2 refuses, copy 3 is left.
	run snb-ctl rollk swap o "pcap-write $T/d{}/n.pcap"
	echo "$output"
	[ "$status" -ne 0 ]
	assert_output_has "error: rolling swap of o stopped at o.2 (2 of 3): 1 copy done, 2 unchanged"
	assert_output_has "ok: swapped o.1: "
	assert_output_has "$T/d2/n.pcap: No such file or directory; o.2 keeps running"
	run snb-ctl rollk show
	echo "$output"
	echo "$output" | grep -q "^stage o.1 .* app pcap-write '$T/d1/n.pcap'$"
	echo "$output" | grep -q "^stage o.2 .* app pcap-write '$T/o2.pcap'$"
	echo "$output" | grep -q "^stage o.3 .* app pcap-write '$T/o3.pcap'$"
	# With d2 there, every copy gets its own file; one copy alone too.
	mkdir "$T/d2"
	snb-ctl rollk swap o "pcap-write $T/d{}/n.pcap"
	snb-ctl rollk swap o.3 "pcap-write $T/d{0}.pcap"
	run snb-ctl rollk show
	echo "$output"
	for k in 1 2; do
		echo "$output" | grep -q "^stage o.$k .* app pcap-write '$T/d$k/n.pcap'$"
	done
	echo "$output" | grep -q "^stage o.3 .* app pcap-write '$T/d2.pcap'$"
	st=0; wait $pid || st=$?
	cat "$T/err"
	[ "$st" -eq 0 ]
	# Every packet in one of the files, once.
	ls -l "$T"/o*.pcap "$T"/d*/n.pcap "$T"/d2.pcap
	! ls "$T"/*'{'* 2>/dev/null || false
	mergecap -F pcap -w "$T/all.pcap" "$T"/o*.pcap "$T"/d*/n.pcap "$T"/d2.pcap
	check_numbers "$N" "$T/all.pcap"
}

@test "config of a label with copies goes to each copy in turn, and stops at the first that refuses" {
	cat > "$T/lw.conf" <<'EOF'
softwire-config {
  binding-table {
    softwire { ipv4 198.51.100.1; psid 0; b4-ipv6 2001:db8:1::1;
      br-address 2001:db8::ffff; port-set { psid-length 0; } }
  }
  external-interface { generate-icmp-errors false; }
  internal-interface { generate-icmp-errors false; }
  instance { device test; queue { id 0;
    external-interface { ip 10.10.10.10; mac 12:12:12:12:12:12;
      next-hop { mac 68:68:68:68:68:68; } }
    internal-interface { ip 2001:db8::ffff; mac 22:22:22:22:22:22;
      next-hop { mac 44:44:44:44:44:44; } } } }
}
EOF
	snb-run -n rollcfg "source --count 0 --hold | lb | 3x( [v4] w: lwaftr $T/lw.conf [v6] ) | join | sink" 2> "$T/err" 3>&- &
	pid=$!
	for k in 1 2 3; do wait_for test -S "$SNB_RUN_DIR/rollcfg/w.$k.ctl"; done
	add='add softwire ipv4 10.1.0.1 psid 0 b4-ipv6 2001:db8:2::1 br-address 2001:db8::ffff psid-length 0'
	# Already on w.2: w.1 takes it, w.2 refuses, w.3 is not asked.
	snb-ctl rollcfg config w.2 $add
	run snb-ctl rollcfg config w $add
	echo "$output"
	[ "$status" -eq 1 ]
	assert_output_has "w.1: ok: added softwire 10.1.0.1"
	assert_output_has "w.2: error: softwire 10.1.0.1 psid 0 exists already"
	assert_output_has "snb-ctl: stopped at w.2: 1 of its copies before it done"
	run snb-ctl rollcfg config w.3 get softwire ipv4 10.1.0.1 psid 0
	[ "$status" -ne 0 ]
	# Another one: on every copy, each answer named.
	run snb-ctl rollcfg config w add softwire ipv4 10.1.0.2 psid 0 b4-ipv6 2001:db8:2::2 br-address 2001:db8::ffff psid-length 0
	echo "$output"
	[ "$status" -eq 0 ]
	for k in 1 2 3; do
		assert_output_has "w.$k: ok: added softwire 10.1.0.2"
	done
	run snb-ctl rollcfg config w get softwire ipv4 10.1.0.2 psid 0
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | grep -c '^w\.[123]: .*b4-ipv6 2001:db8:2::2;')" -eq 3 ]
	run snb-ctl rollcfg config nosuch get softwire ipv4 10.1.0.2 psid 0
	[ "$status" -eq 1 ]
	assert_output_has "no stage 'nosuch' in graph 'rollcfg'"
	snb-ctl rollcfg stop
	wait $pid
}
