#!/bin/sh
# examples/lwaftr-scale.sh [BUILD] [N]: N lwaftr copies (default 2) behind
# lb, one per core, joined again.  lb --key softwire sends everything of
# a softwire, both ways, to one copy: the IPv4 destination from the
# internet, the encapsulated IPv4 source from the B4s (so a softwire's
# fragments meet in one reassembler and its hairpins in one copy).  ARP
# and neighbour discovery go to every copy.  The traffic (scapy) mixes
# plain packets, IPv4 and IPv6 fragments and hairpins for 64 softwires;
# the result must be the same IP packets as one lwaftr alone makes, and
# each softwire must have been handled by one copy only (each copy's
# configuration gives it its own MAC address, which tells them apart).
set -e
B=$(cd "${1:-build}" && pwd)
N=${2:-2}
export PATH="$B/bin:$B/tests:$PATH"
export SNB_RUN_DIR="${SNB_RUN_DIR:-/dev/shm/snb-example-$$}"
here=$(cd "$(dirname "$0")" && pwd)
d=$(mktemp -d /tmp/snb-lwscale.XXXXXX)
trap 'rm -rf "$d" "$SNB_RUN_DIR"' EXIT

mkbt "$d/bt.conf" 76 2		# 12 + 16 addresses of 4 softwires each
/usr/bin/python3 "$here/lwaftr-scale.py" gen "$d/bt.conf" "$d/v4.pcap" "$d/v6.pcap"
macs=
i=0
while [ "$i" -lt "$N" ]; do
	mac=02:00:00:00:00:0$i
	sed -e "s/mac 12:12:12:12:12:12;/mac $mac;/" \
	    -e "s/mac 22:22:22:22:22:22;/mac $mac;/" "$d/bt.conf" > "$d/w$i.conf"
	macs=${macs:+$macs,}$mac
	i=$((i + 1))
done

# One lwaftr alone: the reference.
snb-run "pcap-read $d/v4.pcap | [v4] lw: lwaftr $d/w0.conf [v6] | pcap-write $d/one6.pcap ;
	 pcap-read $d/v6.pcap | [v6] @lw [v4] | pcap-write $d/one4.pcap"

# N copies: lb l4 (from the internet) and l6 (from the B4s) feed copy i
# by their output port i; j4 and j6 join what the copies send each way.
g="pcap-read $d/v4.pcap | l4: lb --key softwire ;
   pcap-read $d/v6.pcap | l6: lb --key softwire ;
   j4: join | pcap-write $d/out4.pcap ;
   j6: join | pcap-write $d/out6.pcap"
i=0
while [ "$i" -lt "$N" ]; do
	g="$g ;
   @l4 [$i] | [v4] w$i: lwaftr --counters-out $d/w$i.counters $d/w$i.conf [v6] | [$i] @j6 ;
   @l6 [$i] | [v6] @w$i [v4] | [$i] @j4"
	i=$((i + 1))
done
echo "== snb-run --stats \"$g\""
snb-run --stats "$g"
for f in "$d"/w*.counters; do
	echo "== $(basename "$f" .counters): $(grep -E '^(in-ipv4-packets|in-ipv6-packets|hairpin-ipv4-packets|in-ipv[46]-frag-reassembled) ' "$f" | tr '\n' ' ')"
done
/usr/bin/python3 "$here/lwaftr-scale.py" check "$d/bt.conf" "$macs" \
    "$d/one4.pcap" "$d/one6.pcap" "$d/out4.pcap" "$d/out6.pcap"
