#!/usr/bin/env bats
# snb-echo against scapy: scapy writes the requests and, on its own, the
# reply each must get (checksums computed by scapy from scratch); snb-echo's
# output must be exactly those replies, its rest exactly the frames that
# are not requests, and its counters must say why.  The kernel's ping and
# UDP stack check it live in tests/ecmp.bats.
load helpers

need_scapy() {
	/usr/bin/python3 -c 'import scapy' 2>/dev/null && return 0
	[ "${CI:-}" != true ] || { echo "CI: python3-scapy is missing"; return 1; }
	skip "python3-scapy is not installed"
}

# cases.py DIR: DIR/in.pcap, DIR/reply.pcap (the replies, in order),
# DIR/rest.pcap (the other frames, as they came).
cases() {
	/usr/bin/python3 - "$1" <<'EOF'
import sys
from scapy.all import (Ether, Dot1Q, IP, IPv6, IPv6ExtHdrDestOpt, ICMP,
    ICMPv6EchoRequest, ICMPv6EchoReply, UDP, TCP, ARP, Raw, wrpcap)
d = sys.argv[1]
A4, A6 = "192.0.2.1", "2001:db8::1"
C4, C6 = "198.51.100.7", "2001:db8:9::7"
ME, YOU = "02:00:00:00:00:01", "02:00:00:00:00:02"
req, rep, rest, refused = [], [], [], []
def ask(q, r):
    req.append(q); rep.append(r)
def e(src=YOU, dst=ME): return Ether(src=src, dst=dst)
# Answered: ping and UDP echo, IPv4 (with options, TTLs, a zero UDP
# checksum, a VLAN tag) and IPv6; the reply built by scapy from scratch.
for ttl, pl in ((63, b"x" * 56), (1, b""), (255, bytes(range(200)))):
    ask(e()/IP(src=C4, dst=A4, ttl=ttl, id=7)/ICMP(id=9, seq=ttl)/pl,
        e(ME, YOU)/IP(src=A4, dst=C4, ttl=64, id=7)/ICMP(type=0, id=9, seq=ttl)/pl)
ask(e()/IP(src=C4, dst=A4, options=b"\x01\x01\x01\x00")/ICMP()/b"opt",
    e(ME, YOU)/IP(src=A4, dst=C4, ttl=64, options=b"\x01\x01\x01\x00")/ICMP(type=0)/b"opt")
for sport, pl in ((40000, b"hello"), (1024, b""), (65535, b"z" * 999)):
    ask(e()/IP(src=C4, dst=A4, ttl=60)/UDP(sport=sport, dport=7)/pl,
        e(ME, YOU)/IP(src=A4, dst=C4, ttl=64)/UDP(sport=7, dport=sport)/pl)
q = e()/IP(src=C4, dst=A4)/UDP(sport=5555, dport=7, chksum=0)/b"nosum"
ask(q, e(ME, YOU)/IP(src=A4, dst=C4, ttl=64)/UDP(sport=7, dport=5555, chksum=0)/b"nosum")
ask(e()/Dot1Q(vlan=10)/IP(src=C4, dst=A4)/ICMP(seq=3)/b"tag",
    e(ME, YOU)/Dot1Q(vlan=10)/IP(src=A4, dst=C4, ttl=64)/ICMP(type=0, seq=3)/b"tag")
ask(e()/IPv6(src=C6, dst=A6, hlim=17)/ICMPv6EchoRequest(id=1, seq=2, data=b"v6"),
    e(ME, YOU)/IPv6(src=A6, dst=C6, hlim=64)/ICMPv6EchoReply(id=1, seq=2, data=b"v6"))
ask(e()/IPv6(src=C6, dst=A6)/UDP(sport=33333, dport=7)/b"u6",
    e(ME, YOU)/IPv6(src=A6, dst=C6, hlim=64)/UDP(sport=7, dport=33333)/b"u6")
# Refused: echo requests to us that get no answer.
refused += [
    e()/IP(src=C4, dst=A4)/UDP(sport=7, dport=7)/b"loop",
    e()/IP(src=C4, dst=A4)/UDP(sport=19, dport=7)/b"chargen",
    e()/IP(src=C4, dst=A4)/UDP(sport=1023, dport=7),
    e()/IP(src="0.0.0.0", dst=A4)/ICMP(),
    e()/IP(src="224.0.0.5", dst=A4)/ICMP(),
    e()/IP(src="255.255.255.255", dst=A4)/UDP(sport=4000, dport=7),
    e(src="01:00:5e:00:00:01")/IP(src=C4, dst=A4)/ICMP(),
    e()/IPv6(src="ff02::1", dst=A6)/ICMPv6EchoRequest(),
    e()/IPv6(src="::", dst=A6)/UDP(sport=4000, dport=7),
    # Loopback or our own address as the source: no peer sent it.
    e()/IP(src="127.0.0.1", dst=A4)/ICMP(),
    e()/IP(src=A4, dst=A4)/UDP(sport=4000, dport=7),
    e()/IPv6(src="::1", dst=A6)/ICMPv6EchoRequest(),
    e()/IPv6(src=A6, dst=A6)/ICMPv6EchoRequest(),
    # IPv4 options the reply would have to update or reverse (RFC 1122
    # 3.2.2.6): record route, loose source route.
    e()/IP(src=C4, dst=A4, options=b"\x07\x07\x04\x00\x00\x00\x00\x00")/ICMP(),
    e()/IP(src=C4, dst=A4, options=b"\x83\x07\x04\xc6\x33\x64\x09\x00")/UDP(sport=4000, dport=7)]
# Malformed echo requests to us: never answered (the kernel drops them
# too), counted.
bad = [
    e()/IP(src=C4, dst=A4, chksum=0x1234)/ICMP()/b"ip sum",
    e()/IP(src=C4, dst=A4)/ICMP(chksum=0x1234)/b"icmp sum",
    e()/IP(src=C4, dst=A4)/UDP(sport=4000, dport=7, chksum=0x1234)/b"udp sum",
    e()/IP(src=C4, dst=A4)/UDP(sport=4000, dport=7, len=200)/b"udp len",
    e()/IP(src=C4, dst=A4)/UDP(sport=4000, dport=7, len=4)/b"udp len",
    e()/IPv6(src=C6, dst=A6)/ICMPv6EchoRequest(cksum=0x1234, data=b"sum6"),
    e()/IPv6(src=C6, dst=A6)/UDP(sport=4000, dport=7, chksum=0x1234)/b"sum6",
    # IPv6 forbids a zero UDP checksum (RFC 8200 8.1).
    e()/IPv6(src=C6, dst=A6)/UDP(sport=4000, dport=7, chksum=0)/b"zero6"]
# Not echo requests to us: passed on unchanged.
rest += [
    e()/IP(src=C4, dst="192.0.2.2")/ICMP(),
    e()/IP(src=C4, dst=A4)/ICMP(type=0),
    e()/IP(src=C4, dst=A4)/ICMP(type=8, code=1),
    e()/IP(src=C4, dst=A4)/UDP(sport=4000, dport=8),
    e()/IP(src=C4, dst=A4)/TCP(sport=4000, dport=7),
    e()/IP(src=C4, dst=A4, flags="MF")/UDP(sport=4000, dport=7)/b"frag",
    e()/IP(src=C4, dst=A4, frag=10)/b"later fragment",
    e()/IP(src=C4, dst=A4, len=200)/ICMP()/b"len past the frame",
    e()/IPv6(src=C6, dst=A6)/IPv6ExtHdrDestOpt()/ICMPv6EchoRequest(),
    e()/IPv6(src=C6, dst="2001:db8::2")/ICMPv6EchoRequest(),
    e()/IPv6(src=C6, dst=A6)/ICMPv6EchoReply(),
    e(dst="ff:ff:ff:ff:ff:ff")/ARP(pdst=A4),
    Ether(bytes(e()/IP(src=C4, dst=A4)/UDP(sport=4000, dport=7))[:40])]
# Interleaved, so that order is checked too.
frames, j = [], 0
for i, q in enumerate(req):
    frames.append(q)
    if j < len(rest): frames.append(rest[j]); j += 1
    if i < len(refused): frames.append(refused[i])
frames += rest[j:] + refused[len(req):] + bad
# Runts: a frame shorter than an Ethernet header, and one cut in the
# IPv4 header; not echo requests.
runts = [Raw(bytes(e()/IP(src=C4, dst=A4)/ICMP())[:10]),
    Raw(bytes(e()/IP(src=C4, dst=A4)/ICMP())[:30])]
rest += runts
frames += runts
wrpcap(d + "/in.pcap", frames, linktype=1)
wrpcap(d + "/reply.pcap", [r.__class__(bytes(r)) for r in rep])
wrpcap(d + "/rest.pcap", rest, linktype=1)
print(len(req), len(refused), len(rest), len(bad))
EOF
}

# Frames of a capture as hex, one a line.
frames() {
	tcpdump -r "$1" -nn -xx 2>/dev/null | awk '
		/^[0-9]/ { if (f != "") print f; f = ""; next }
		{ for (i = 2; i <= NF; i++) f = f $i }
		END { if (f != "") print f }'
}

counter() {	# FILE NAME
	awk -v n="$2" '$1 == n { print $2 }' "$1"
}

@test "snb-echo answers ping and UDP echo (IPv4, IPv6, tagged) exactly as scapy builds the replies; refuses and passes on the rest" {
	need_scapy
	read -r nreq nref nrest nbad < <(cases "$T")
	echo "requests $nreq refused $nref rest $nrest malformed $nbad"
	snb-run --stats "pcap-read $T/in.pcap | e: echo 192.0.2.1 2001:db8::1 |
	    pcap-write $T/out.pcap ; @e [rest] | pcap-write $T/restout.pcap" \
	    2> "$T/stats"
	diff <(frames "$T/reply.pcap") <(frames "$T/out.pcap")
	diff <(frames "$T/rest.pcap") <(frames "$T/restout.pcap")
	[ "$(frames "$T/out.pcap" | wc -l)" -eq "$nreq" ]
	[ "$(frames "$T/restout.pcap" | wc -l)" -eq "$nrest" ]
	# tshark, another implementation, finds every checksum right: none
	# bad, and all good but the UDP one that was 0 (none) and stays so.
	tshark -r "$T/out.pcap" -o ip.check_checksum:TRUE \
	    -o udp.check_checksum:TRUE -T fields -e ip.checksum.status \
	    -e udp.checksum.status -e icmp.checksum.status \
	    -e icmpv6.checksum.status 2>/dev/null > "$T/sums"
	cat "$T/sums"
	! grep -q 2 "$T/sums" || false
	[ "$(awk -F '\t' '$2 == 1 || $3 == 1 || $4 == 1' "$T/sums" | wc -l)" -eq $((nreq - 1)) ]
	[ "$(awk -F '\t' '$2 == 3' "$T/sums" | wc -l)" -eq 1 ]
}

# The counters of stage e of a graph fed the cases through a pipe kept
# open (pcap-read -), read once e has taken all NFRAMES: DIR NFRAMES
# [rest]: with "rest" to a sink, or without.
count() {
	local g=echo$$ i n
	rm -f "$T/fifo"
	mkfifo "$T/fifo"
	if [ "${3:-}" = rest ]; then
		snb-run -n $g "pcap-read - | e: echo 192.0.2.1 2001:db8::1 | sink
		    @e [rest] | sink" < "$T/fifo" 2> "$T/err" &
	else
		snb-run -n $g "pcap-read - | e: echo 192.0.2.1 2001:db8::1 |
		    sink" < "$T/fifo" 2> "$T/err" &
	fi
	exec 3> "$T/fifo"
	cat "$T/in.pcap" >&3
	for i in $(seq 100); do
		snb-top --json --once -i 0.01 $g > "$T/j" 2>/dev/null || true
		n=$(jq '.graphs[0].stages[] | select(.label == "e") |
		    .packets_in' "$T/j" 2>/dev/null) || true
		[ "${n:-0}" -ge "$2" ] && break
		sleep 0.05
	done
	jq -c '.graphs[0].stages[] | select(.label == "e") | .counters' "$T/j"
	snb-ctl $g stop > /dev/null
	exec 3>&-
	wait
}

@test "snb-echo counts every packet: answered, refused, passed on or dropped" {
	need_scapy
	read -r nreq nref nrest nbad < <(cases "$T")
	run count "$T" $((nreq + nref + nrest + nbad)) rest
	echo "$output"
	[ "$(echo "$output" | jq '.["echo-icmp"] + .["echo-udp"]')" -eq "$nreq" ]
	[ "$(echo "$output" | jq '.["echo-udp"]')" -eq 5 ]
	[ "$(echo "$output" | jq '.["drop-refused"]')" -eq "$nref" ]
	[ "$(echo "$output" | jq '.rest')" -eq "$nrest" ]
	[ "$(echo "$output" | jq '.["drop-not-echo"]')" -eq 0 ]
	[ "$(echo "$output" | jq '.["drop-malformed"]')" -eq "$nbad" ]
	# Without "rest", the others are dropped, and counted.
	run count "$T" $((nreq + nref + nrest + nbad))
	echo "$output"
	[ "$(echo "$output" | jq '.rest')" -eq 0 ]
	[ "$(echo "$output" | jq '.["drop-not-echo"]')" -eq "$nrest" ]
	[ "$(echo "$output" | jq '.["drop-refused"]')" -eq "$nref" ]
}

@test "snb-echo refuses bad words" {
	run snb-run -c 'source | echo | sink'
	[ "$status" -eq 2 ]
	assert_output_has "usage: snb-echo ADDRESS"
	run snb-run -c 'source | echo 192.0.2.300 | sink'
	[ "$status" -eq 2 ]
	assert_output_has "snb-echo: bad address '192.0.2.300': not IPv4 or IPv6"
	run snb-run -c 'source | echo 192.0.2.1 --rest | sink'
	[ "$status" -eq 2 ]
	run snb-run -c "source | echo $(seq -f '10.0.0.%g' 17 | tr '\n' ' ') | sink"
	[ "$status" -eq 2 ]
	assert_output_has "too many addresses (at most 16)"
	run snb-run -c 'source | echo 192.0.2.1 2001:db8::1 | sink'
	[ "$status" -eq 0 ]
}
