#!/usr/bin/env bats
# snb-pcap-read and snb-pcap-write against tcpdump, editcap and capinfos:
# other link types, paced replay, tcpdump's -c, -C, -G, -s and
# nanosecond files, a pipe whose reader left, and output files that a
# failed graph must leave alone.
load helpers
load netns

NS=snb-pcap-$$

eval "helpers_$(declare -f teardown)"
teardown() {
	ip netns del "$NS" 2>/dev/null || true
	ip netns del "$NS-b" 2>/dev/null || true
	helpers_teardown
}

# Lines tcpdump prints for a capture, without times and with the
# interface and direction of an SLL2 record left out: what the packets
# are, whatever their link type.
decoded() {
	tcpdump -ntr "$1" 2>/dev/null | sed -E 's/^[^ ]+ +(In|Out|M|B|P) +//'
}

# A capture of traffic between two namespaced hosts (ARP, pings, a
# broadcast ping), made by tcpdump -i any on the one pinged with link type
# $2 (LINUX_SLL or LINUX_SLL2) into $1.
any_capture() {
	mkns "$NS" "$NS-b"
	veth pa "$NS" pb "$NS-b"
	ip -n "$NS" addr add 10.77.0.1/24 dev pa
	ip -n "$NS-b" addr add 10.77.0.2/24 dev pb
	ip netns exec "$NS-b" sysctl -qw net.ipv4.icmp_echo_ignore_broadcasts=0
	ip netns exec "$NS-b" tcpdump -i any -y "$2" --immediate-mode -U -w "$1" 'icmp or arp' 2> "$T/td" &
	td=$!
	for i in $(seq 50); do grep -q listening "$T/td" && break; sleep 0.1; done
	ip netns exec "$NS" ping -c 3 -i 0.2 10.77.0.2 > /dev/null
	ip netns exec "$NS" ping -c 2 -i 0.2 -b 10.77.0.255 > /dev/null 2>&1 || true
	sleep 0.3
	kill -INT $td
	wait $td || true
	[ "$(capinfos -c -M "$1" | awk '/Number of packets/ {print $4}')" -ge 6 ]
}

@test "pcap-read: a tcpdump -i any capture (LINUX_SLL2) becomes Ethernet frames of the same packets" {
	any_capture "$T/any.pcap" LINUX_SLL2
	capinfos -E "$T/any.pcap" | grep -q 'cooked-mode capture v2'
	snb-run "pcap-read $T/any.pcap | pcap-write $T/out.pcap"
	capinfos -E "$T/out.pcap" | grep -q 'encapsulation: *Ethernet$'
	[ "$(decoded "$T/out.pcap")" = "$(decoded "$T/any.pcap")" ]
	# The filter sees them as tcpdump does.
	snb-run "pcap-read $T/any.pcap | filter icmp | pcap-write $T/icmp.pcap"
	[ "$(decoded "$T/icmp.pcap")" = "$(tcpdump -ntr "$T/any.pcap" icmp 2>/dev/null | sed -E 's/^[^ ]+ +(In|Out|M|B|P) +//')" ]
	# The source MAC is the captured one: tcpdump -e shows the veth's.
	mac=$(ip -n "$NS" -br link show pa | awk '{print $3}')
	tcpdump -enr "$T/out.pcap" 2>/dev/null | grep -q "^[0-9:.]* $mac > "
}

@test "pcap-read: a LINUX_SLL capture (tcpdump -y LINUX_SLL) too" {
	any_capture "$T/any.pcap" LINUX_SLL
	capinfos -E "$T/any.pcap" | grep -q 'cooked-mode capture v1\|Linux cooked-mode capture$'
	snb-run "pcap-read $T/any.pcap | pcap-write $T/out.pcap"
	[ "$(decoded "$T/out.pcap")" = "$(decoded "$T/any.pcap")" ]
	# A broadcast ping goes to ff:ff:ff:ff:ff:ff.
	tcpdump -enr "$T/out.pcap" 2>/dev/null | grep -q '> ff:ff:ff:ff:ff:ff, ethertype IPv4.*10.77.0.255: ICMP echo request'
}

@test "pcap-read: raw IP captures (editcap -T rawip, rawip4) become Ethernet frames of the same packets" {
	mkpcap "$T/m.pcap" --count 300
	tcpdump -r "$T/m.pcap" -w "$T/ip.pcap" 'ip or ip6' 2>/dev/null
	editcap -C 14 -T rawip "$T/ip.pcap" "$T/raw.pcap"
	snb-run "pcap-read $T/raw.pcap | pcap-write $T/out.pcap"
	n=$(decoded "$T/raw.pcap" | wc -l)
	[ "$n" -gt 100 ]
	[ "$(decoded "$T/out.pcap")" = "$(decoded "$T/raw.pcap")" ]
	tcpdump -r "$T/m.pcap" -w "$T/ip4.pcap" 'ip' 2>/dev/null
	editcap -C 14 -T rawip4 "$T/ip4.pcap" "$T/raw4.pcap"
	snb-run "pcap-read $T/raw4.pcap | pcap-write $T/out4.pcap"
	[ "$(decoded "$T/out4.pcap")" = "$(decoded "$T/raw4.pcap")" ]
}

@test "pcap-read: records with no Ethernet form are counted and reported; other link types are refused by name" {
	mkpcap "$T/m.pcap" --count 300
	# Raw IP of every frame: ARP, VLAN and LLC frames cut at 14 bytes
	# are not IP, and must be dropped, counted and reported.
	editcap -C 14 -T rawip "$T/m.pcap" "$T/raw.pcap"
	all=$(capinfos -c -M "$T/raw.pcap" | awk '/Number of packets/ {print $4}')
	run snb-run "pcap-read $T/raw.pcap | n: sink --summary"
	[ "$status" -eq 0 ]
	assert_output_has "dropping records with no Ethernet form"
	sent=$(echo "$output" | sed -n 's/^sink: \([0-9]*\) packets.*/\1/p')
	ip=$(tcpdump -r "$T/m.pcap" 'ip or ip6' 2>/dev/null | wc -l)
	[ "$sent" -lt "$all" ]
	[ "$sent" -ge "$ip" ]
	editcap -T ieee-802-11 "$T/m.pcap" "$T/wifi.pcap"
	run snb-run "pcap-read $T/wifi.pcap | sink"
	[ "$status" -eq 1 ]
	assert_output_has "wifi.pcap: link type IEEE802_11 (105) is not supported"
}

@test "pcap-read --timing and --rate pace the replay; the writer's clock sees the capture's spacing" {
	mkpcap "$T/p.pcap" --count 401	# 1 ms apart: 0.4 s
	capinfos -u "$T/p.pcap" | grep -q 'duration: *0.400000 seconds'
	# Unpaced, as fast as the graph goes; paced, the capture's own
	# timing (at least about its length), twice as fast (at least half).
	snb-run "pcap-read --timing 1 --loop 5 $T/p.pcap | pcap-write --timestamps now $T/t1.pcap"
	d1=$(capinfos -u -M "$T/t1.pcap" | awk '/duration/ {print $3}')
	awk -v d="$d1" 'BEGIN { exit !(d >= 1.8) }'
	snb-run "pcap-read --timing 2 --loop 5 $T/p.pcap | pcap-write --timestamps now $T/t2.pcap"
	d2=$(capinfos -u -M "$T/t2.pcap" | awk '/duration/ {print $3}')
	awk -v d="$d2" 'BEGIN { exit !(d >= 0.9) }'
	snb-run "pcap-read --rate 1000 --loop 5 $T/p.pcap | pcap-write --timestamps now $T/r.pcap"
	d3=$(capinfos -u -M "$T/r.pcap" | awk '/duration/ {print $3}')
	awk -v d="$d3" 'BEGIN { exit !(d >= 1.8) }'
	# The capture's own timestamps travel along.
	snb-run "pcap-read --timing 4 $T/p.pcap | pcap-write $T/keep.pcap"
	[ "$(tcpdump -ttnr "$T/keep.pcap" 2>/dev/null)" = "$(tcpdump -ttnr "$T/p.pcap" 2>/dev/null)" ]
	run snb-pcap-read --timing 1 --rate 5 x.pcap
	[ "$status" -eq 2 ]
	run snb-pcap-read --timing 0 x.pcap
	[ "$status" -eq 2 ]
}

@test "pcap-read --timing sleeps between packets: it does not spin a core" {
	mkpcap "$T/p.pcap" --count 1001	# 1 s
	snb-run -n pace$$ "r: pcap-read --timing 0.5 $T/p.pcap | sink" &
	pid=$!
	wait_stages pace$$ 2
	rp=$(stage_pid pace$$ r)
	t0=$(cpu_ticks $rp)
	sleep 1
	t1=$(cpu_ticks $rp)
	wait $pid
	# 100 ticks a second: a spinning reader would use about 100.
	[ $((t1 - t0)) -lt 50 ]
}

# The number of records of a capture, as capinfos counts them.
npkts() {
	capinfos -c -M "$1" | awk '/Number of packets/ {print $4}'
}

@test "pcap-write -c COUNT writes COUNT packets and ends the graph with status 0, like tcpdump -c" {
	# An endless source: only -c ends this graph.
	run timeout 60 snb-run "source --seq | pcap-write -c 1000 $T/c.pcap"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	[ "$(npkts "$T/c.pcap")" -eq 1000 ]
	[ "$(tcpdump -r "$T/c.pcap" 2>/dev/null | wc -l)" -eq 1000 ]
	run snb-pcap-write -c 0 x.pcap
	[ "$status" -eq 2 ]
}

@test "pcap-write -s SNAPLEN truncates records as tcpdump -s and editcap -s do (0: 262144)" {
	mkpcap "$T/m.pcap" --count 200
	snb-run "pcap-read $T/m.pcap | pcap-write -s 64 $T/s.pcap"
	editcap -s 64 "$T/m.pcap" "$T/td.pcap"
	capinfos -l "$T/s.pcap" | grep -q 'file hdr: 64 bytes'
	# Same bytes and original lengths as editcap -s truncates to.
	[ "$(tcpdump -xxnr "$T/s.pcap" 2>/dev/null)" = "$(tcpdump -xxnr "$T/td.pcap" 2>/dev/null)" ]
	snb-run "pcap-read $T/m.pcap | pcap-write -s 0 $T/s0.pcap"
	capinfos -l "$T/s0.pcap" | grep -q 'file hdr: 262144 bytes'
	[ "$(tcpdump -xxnr "$T/s0.pcap" 2>/dev/null)" = "$(tcpdump -xxnr "$T/m.pcap" 2>/dev/null)" ]
}

@test "pcap-write -C rotates by size with tcpdump's names (file, file1, file2...) and loses nothing" {
	snb-run "source --count 5000 --size 1000 --seq | pcap-write -C 1 $T/r.pcap"
	ls "$T" | grep -c '^r.pcap' > "$T/n"
	[ "$(cat "$T/n")" -eq 6 ]
	total=0
	for f in r.pcap r.pcap1 r.pcap2 r.pcap3 r.pcap4 r.pcap5; do
		[ -f "$T/$f" ]
		n=$(npkts "$T/$f")
		total=$((total + n))
		size=$(stat -c %s "$T/$f")
		# Rotated once larger than 1,000,000 bytes: by less than a
		# record (1016 bytes) past it.
		[ "$f" = r.pcap5 ] || { [ "$size" -gt 1000000 ] && [ "$size" -le 1001016 ]; }
	done
	[ "$total" -eq 5000 ]
	mergecap -a -w "$T/all.pcap" "$T/r.pcap" "$T/r.pcap1" "$T/r.pcap2" "$T/r.pcap3" "$T/r.pcap4" "$T/r.pcap5"
	snb-run "pcap-read $T/all.pcap | sink --check-seq --expect 5000"
}

@test "pcap-write -G rotates by time with strftime names, and -G with -C numbers within a window" {
	R=$((4000 / SNB_TEST_SCALE))
	snb-run "source --count $((R * 3)) --rate $R --seq --size 100 | pcap-write -G 1 $T/g-%Y%m%d-%H%M%S.pcap"
	n=$(ls "$T" | grep -c '^g-[0-9]\{8\}-[0-9]\{6\}\.pcap$')
	[ "$n" -ge 3 ]
	mergecap -a -w "$T/all.pcap" $(ls "$T"/g-*.pcap | sort)
	[ "$(npkts "$T/all.pcap")" -eq $((R * 3)) ]
	snb-run "pcap-read $T/all.pcap | sink --check-seq --expect $((R * 3))"
	# With -C: the window's name, then the same with 1, 2... (tcpdump).
	snb-run "source --count 3000 --size 1000 --seq | pcap-write -G 3600 -C 1 $T/h-%Y.pcap"
	y=$(date +%Y)
	[ -f "$T/h-$y.pcap" ]
	[ -f "$T/h-$y.pcap1" ]
	[ -f "$T/h-$y.pcap2" ]
	run snb-run "source --count 1 | pcap-write -G 1 -"
	[ "$status" -eq 2 ]
}

@test "pcap-write --nano writes nanosecond pcap; a nanosecond input keeps its precision" {
	mkpcap "$T/m.pcap" --count 100
	# Nanosecond capture times: editcap shifts them by 123 ns.
	editcap -F nsecpcap -t 0.000000123 "$T/m.pcap" "$T/ns.pcap"
	snb-run "pcap-read $T/ns.pcap | pcap-write $T/out.pcap"
	[ "$(od -An -tx4 -N4 "$T/out.pcap" | tr -d ' ')" = a1b23c4d ]
	[ "$(tcpdump --time-stamp-precision=nano -ttnr "$T/out.pcap" 2>/dev/null)" = "$(tcpdump --time-stamp-precision=nano -ttnr "$T/ns.pcap" 2>/dev/null)" ]
	tcpdump --time-stamp-precision=nano -ttnr "$T/out.pcap" 2>/dev/null | head -1 | grep -q '^[0-9]*\.[0-9]*123 '
	# A microsecond input stays microseconds, unless --nano.
	snb-run "pcap-read $T/m.pcap | pcap-write $T/us.pcap"
	[ "$(od -An -tx4 -N4 "$T/us.pcap" | tr -d ' ')" = a1b2c3d4 ]
	snb-run "pcap-read $T/m.pcap | pcap-write --nano $T/n2.pcap"
	[ "$(od -An -tx4 -N4 "$T/n2.pcap" | tr -d ' ')" = a1b23c4d ]
	[ "$(tcpdump -ttnr "$T/n2.pcap" 2>/dev/null)" = "$(tcpdump -ttnr "$T/m.pcap" 2>/dev/null)" ]
}

@test "pcap-write - into a pipe whose reader left: the graph ends quietly with status 0" {
	# An endless source: only the closed pipe can end this graph.
	( set -o pipefail; timeout 60 snb-run "source --seq | pcap-write -" 2> "$T/err" | head -c 100000 > "$T/head" ) 
	st=$?
	cat "$T/err"
	[ "$st" -eq 0 ]
	[ ! -s "$T/err" ]
	[ "$(stat -c %s "$T/head")" -eq 100000 ]
	# Through tcpdump -c, which leaves after 10 packets.
	run bash -c "set -o pipefail; timeout 60 snb-run 'source --seq | f: filter udp | pcap-write -' | tcpdump -c 10 -r - 2>/dev/null | wc -l"
	[ "$status" -eq 0 ]
	[ "$output" -eq 10 ]
}

@test "a failed graph leaves pcap-write's file alone: not created, not emptied" {
	echo old > "$T/keep.pcap"
	run snb-run "pcap-read $T/missing.pcap | pcap-write $T/keep.pcap"
	[ "$status" -eq 1 ]
	[ "$(cat "$T/keep.pcap")" = old ]
	assert_output_has "keep.pcap: no packet written (the stream was cut by a failure): left as it was"
	run snb-run "pcap-read $T/missing.pcap | filter tcp | pcap-write $T/new.pcap"
	[ "$status" -eq 1 ]
	[ ! -e "$T/new.pcap" ]
	assert_output_has "new.pcap: no packet written (the stream was cut by a failure): not created"
	# A stage that fails in init: the writer is stopped, nothing written.
	run snb-run "source --count 10 | filter 'no such expression' | pcap-write $T/keep.pcap"
	[ "$status" -ne 0 ]
	[ "$(cat "$T/keep.pcap")" = old ]
	# A whole stream without packets: an empty capture, as tcpdump.
	snb-run "source --count 10 | filter tcp | pcap-write $T/keep.pcap"
	[ "$(npkts "$T/keep.pcap")" -eq 0 ]
	capinfos "$T/keep.pcap" > /dev/null
}

@test "pcap-read - delivers every record of a pipe at once, while the pipe stays open" {
	mkpcap "$T/m.pcap" --count 1000
	mkfifo "$T/in"
	timeout 60 snb-run -n prp$$ "pcap-read - | pcap-write $T/out.pcap" < "$T/in" 2> "$T/err" 3>&- &
	pid=$!
	exec 4> "$T/in"
	cat "$T/m.pcap" >&4
	# The writer of the pipe is still there: a burst must not wait for it.
	for i in $(seq 100); do
		[ "$(npkts "$T/out.pcap" 2>/dev/null)" = 1000 ] && break
		sleep 0.1
	done
	exec 4>&-
	wait $pid
	[ "$i" -lt 100 ]
	[ "$(tcpdump -nr "$T/out.pcap" 2>/dev/null)" = "$(tcpdump -nr "$T/m.pcap" 2>/dev/null)" ]
}

# has_pkts PCAP N: the capture holds N records.
has_pkts() {
	[ "$(npkts "$1" 2>/dev/null)" = "$2" ]
}

@test "pcap-read of a FIFO or a pipe publishes a record that arrived alone, while the writer keeps it open" {
	mkpcap "$T/one.pcap" --count 1
	mkpcap "$T/three.pcap" --count 3
	mkfifo "$T/in"
	for src in "$T/in" -; do
		rm -f "$T/out.pcap"
		if [ "$src" = - ]; then
			timeout 60 snb-run -n prf$$ "pcap-read - | pcap-write $T/out.pcap" < "$T/in" 2> "$T/err" 3>&- &
		else
			timeout 60 snb-run -n prf$$ "pcap-read $T/in | pcap-write $T/out.pcap" 2> "$T/err" 3>&- &
		fi
		pid=$!
		# read-write: an open that waits for no reader (a graph that fails
		# before pcap-read opens the FIFO fails the test instead of hanging it)
		exec 4<> "$T/in"
		# One record (after the header): nothing else comes for now.
		cat "$T/one.pcap" >&4
		wait_for has_pkts "$T/out.pcap" 1
		# Two more, without a header: they follow the first.
		tail -c +$(( $(stat -c %s "$T/one.pcap") + 1 )) "$T/three.pcap" >&4
		wait_for has_pkts "$T/out.pcap" 3
		exec 4>&-
		wait $pid
		cat "$T/err"
		[ "$(tcpdump -nr "$T/out.pcap" 2>/dev/null | wc -l)" = 3 ]
	done
}
