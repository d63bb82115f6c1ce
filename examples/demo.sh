#!/bin/sh
# make demo: filter a generated capture the way tcpdump would, show what
# the graph wrote, and compare it with tcpdump's own selection.
set -e
B=$(cd "${1:-build}" && pwd)
export PATH="$B/bin:$B/tests:$PATH"
d=$(mktemp -d /tmp/snb-demo.XXXXXX)
trap 'rm -rf "$d"' EXIT

echo "== a capture of 2000 mixed frames (IPv4, IPv6, VLAN, ARP, fragments, truncated)"
mkpcap "$d/in.pcap" --count 2000
echo
echo "== snb-run 'pcap-read in.pcap | filter tcp port 80 or udp port 53 | pcap-write out.pcap'"
snb-run --check "pcap-read $d/in.pcap | filter 'tcp port 80 or udp port 53' | pcap-write $d/out.pcap"
snb-run "pcap-read $d/in.pcap | filter 'tcp port 80 or udp port 53' | pcap-write $d/out.pcap"
echo
echo "== first packets written (tcpdump -r out.pcap):"
tcpdump -nn -r "$d/out.pcap" 2>/dev/null | head -8
tcpdump -nn -S -tt -xx -r "$d/out.pcap" > "$d/snb.txt" 2>/dev/null
tcpdump -nn -S -tt -xx -r "$d/in.pcap" 'tcp port 80 or udp port 53' > "$d/ref.txt" 2>/dev/null
echo "   ... $(grep -c '^[0-9]' "$d/snb.txt") packets"
if cmp -s "$d/snb.txt" "$d/ref.txt"; then
	echo "== identical to tcpdump's own selection (bytes, lengths, timestamps, order)"
else
	echo "== DIFFERS from tcpdump's selection"; exit 1
fi
echo
echo "== 6 stages on $(nproc) cores: source | filter | tee | join | sink (+ a filter on the tee's 2nd branch)"
snb-run 'source --count 5M --seq --size 60-200 | filter udp | t: tee | j: join | sink --check-seq --expect 5000000 --summary ; @t [1] | filter "not udp" | [b] @j'
