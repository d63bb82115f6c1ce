#!/usr/bin/env bats
# snb-filter against tcpdump: for a varied capture (IPv4, IPv6, VLAN, QinQ,
# ARP, fragments, IP options, truncated frames) the graph
#   pcap-read X | filter EXPR | pcap-write Y
# must write exactly the packets `tcpdump -r X -w Y2 EXPR` writes: the
# same bytes, lengths, timestamps and order.
load helpers

setup_file() {
	export CAP="$BATS_FILE_TMPDIR/mix.pcap"
	mkpcap "$CAP" --count 3000 --seed 7
}

# Compare snb and tcpdump on expression $1; $2 = "empty" allows no match.
check_expr() {
	tcpdump -r "$CAP" -w "$T/ref.pcap" "$1" 2>/dev/null
	snb-run "pcap-read $CAP | filter '$1' | pcap-write $T/out.pcap"
	tcpdump -r "$T/ref.pcap" -nn -S -tt -xx -e > "$T/ref.txt" 2>/dev/null
	tcpdump -r "$T/out.pcap" -nn -S -tt -xx -e > "$T/out.txt" 2>/dev/null
	n=$(grep -c '^[0-9]' "$T/ref.txt" || true)
	echo "expression '$1': tcpdump selects $n packets"
	diff "$T/ref.txt" "$T/out.txt" | head -20
	cmp -s "$T/ref.txt" "$T/out.txt"
	[ "$n" -gt 0 ] || [ "${2:-}" = empty ]
}

@test "filter = tcpdump: ip"			{ check_expr 'ip'; }
@test "filter = tcpdump: ip6"			{ check_expr 'ip6'; }
@test "filter = tcpdump: arp"			{ check_expr 'arp'; }
@test "filter = tcpdump: vlan"			{ check_expr 'vlan'; }
@test "filter = tcpdump: vlan 100 and ip"	{ check_expr 'vlan 100 and ip'; }
@test "filter = tcpdump: vlan and vlan"		{ check_expr 'vlan and vlan'; }
@test "filter = tcpdump: tcp"			{ check_expr 'tcp'; }
@test "filter = tcpdump: udp"			{ check_expr 'udp'; }
@test "filter = tcpdump: icmp"			{ check_expr 'icmp'; }
@test "filter = tcpdump: icmp6"			{ check_expr 'icmp6'; }
@test "filter = tcpdump: tcp port 80"		{ check_expr 'tcp port 80'; }
@test "filter = tcpdump: udp port 53"		{ check_expr 'udp port 53'; }
@test "filter = tcpdump: portrange 5000-5500"	{ check_expr 'portrange 5000-5500'; }
@test "filter = tcpdump: net 10.0.0.0/8"	{ check_expr 'net 10.0.0.0/8'; }
@test "filter = tcpdump: src net 192.168.0.0/16 and tcp" { check_expr 'src net 192.168.0.0/16 and tcp'; }
@test "filter = tcpdump: ip fragments"		{ check_expr 'ip[6:2] & 0x1fff != 0'; }
@test "filter = tcpdump: ip more-fragments"	{ check_expr 'ip[6] & 0x20 != 0'; }
@test "filter = tcpdump: ip options"		{ check_expr 'ip[0] & 0xf > 5'; }
@test "filter = tcpdump: tcp syn"		{ check_expr 'tcp[tcpflags] & tcp-syn != 0'; }
@test "filter = tcpdump: greater 1000"		{ check_expr 'greater 1000'; }
@test "filter = tcpdump: less 80 (truncated frames use wire length)" { check_expr 'less 80'; }
@test "filter = tcpdump: len > 200 and ip6"	{ check_expr 'len > 200 and ip6'; }
@test "filter = tcpdump: ether broadcast"	{ check_expr 'ether broadcast'; }
@test "filter = tcpdump: ether multicast and not ip6" { check_expr 'ether multicast and not ip6'; }
@test "filter = tcpdump: ip multicast"		{ check_expr 'ip multicast'; }
@test "filter = tcpdump: tcp and not port 22"	{ check_expr 'tcp and not port 22'; }
@test "filter = tcpdump: (tcp or udp) and not ip6" { check_expr '(tcp or udp) and not ip6'; }
@test "filter = tcpdump: icmp[icmptype] = icmp-echo" { check_expr 'icmp[icmptype] = icmp-echo'; }
@test "filter = tcpdump: ether proto 0x88cc (LLDP)" { check_expr 'ether proto 0x88cc'; }
@test "filter = tcpdump: ip6 protochain 44 (fragment header)" { check_expr 'ip6 protochain 44'; }
@test "filter = tcpdump: ip proto 41 or ip6 proto 4" { check_expr 'ip proto 41 or ip6 proto 4' empty; }
@test "filter = tcpdump: not ip and not ip6 and not arp" { check_expr 'not ip and not ip6 and not arp'; }
@test "filter = tcpdump: empty expression matches everything" { check_expr ''; }
@test "filter = tcpdump: matches nothing"	{ check_expr 'ether src 5a:5a:5a:5a:5a:5a' empty; }

@test "filter: non-matching packets go to the reject port, else are counted" {
	snb-run "pcap-read $CAP | f: filter tcp [reject] | pcap-write $T/rej.pcap ; @f | pcap-write $T/acc.pcap"
	a=$(tcpdump -n -r "$T/acc.pcap" 2>/dev/null | wc -l)
	r=$(tcpdump -n -r "$T/rej.pcap" 2>/dev/null | wc -l)
	ta=$(tcpdump -n -r "$CAP" tcp 2>/dev/null | wc -l)
	tr=$(tcpdump -n -r "$CAP" not tcp 2>/dev/null | wc -l)
	[ "$a" -eq "$ta" ]
	[ "$r" -eq "$tr" ]
}

@test "filter: random frames (fuzz-ish) never crash and match tcpdump" {
	mkpcap "$T/rand.pcap" --random --count 5000 --seed 3
	CAP="$T/rand.pcap" check_expr 'tcp or udp or vlan or ip6 or arp' empty
	CAP="$T/rand.pcap" check_expr 'ether[0] & 1 = 0 or ether[6:2] > 0x8000'
	CAP="$T/rand.pcap" check_expr 'ip[2:2] > 100 or ether[20] = 7'
}

@test "pcap round trip: pcap-read --loop 2 | pcap-write keeps every byte" {
	snb-run "pcap-read --loop 2 $CAP | pcap-write $T/two.pcap"
	tcpdump -r "$CAP" -nn -S -tt -xx -e > "$T/a.txt" 2>/dev/null
	tcpdump -r "$T/two.pcap" -nn -S -tt -xx -e > "$T/b.txt" 2>/dev/null
	cat "$T/a.txt" "$T/a.txt" | cmp - "$T/b.txt"
}
