#!/bin/sh
# examples/lb.sh [BUILD] [N]: one filter per core.  lb spreads a generated
# capture over N copies of a filter (default 2) by flow (both directions
# of a conversation go the same way), join merges their outputs, and the
# result is compared with tcpdump's own selection, as a multiset of
# packets.  "Nx filter ..." is N copies of the filter, labelled filter.1
# to filter.N, each fed by lb's output of its number.
set -e
B=$(cd "${1:-build}" && pwd)
N=${2:-2}
export PATH="$B/bin:$B/tests:$PATH"
export SNB_RUN_DIR="${SNB_RUN_DIR:-/dev/shm/snb-example-$$}"
d=$(mktemp -d /tmp/snb-lb.XXXXXX)
trap 'rm -rf "$d" "$SNB_RUN_DIR"' EXIT

mkpcap "$d/in.pcap" --count 20000
g="pcap-read $d/in.pcap | lb | ${N}x filter 'tcp or udp' | join | pcap-write $d/out.pcap"
echo "== snb-run --stats \"$g\""
snb-run --stats "$g"
tcpdump -nn -xx -r "$d/out.pcap" 2>/dev/null | awk '/^[0-9]/{if(p)print p;p=$0;next}{p=p $0}END{print p}' | cut -d' ' -f2- | sort > "$d/snb"
tcpdump -nn -xx -r "$d/in.pcap" 'tcp or udp' 2>/dev/null | awk '/^[0-9]/{if(p)print p;p=$0;next}{p=p $0}END{print p}' | cut -d' ' -f2- | sort > "$d/ref"
echo "== $(wc -l < "$d/snb") packets out, tcpdump selects $(wc -l < "$d/ref")"
cmp -s "$d/snb" "$d/ref" && echo "== the same packets as tcpdump's selection" ||
	{ echo "== DIFFERENT from tcpdump's selection"; exit 1; }
