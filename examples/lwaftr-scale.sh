#!/bin/sh
# examples/lwaftr-scale.sh [BUILD] [N]: N lwaftr copies (default 2) behind
# lb, one per core, joined again, written "Nx( ... )" in the graph.  lb --key softwire sends everything of
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
# Copy K's configuration: its own MAC address.
macs=
i=1
while [ "$i" -le "$N" ]; do
	mac=02:00:00:00:00:0$i
	sed -e "s/mac 12:12:12:12:12:12;/mac $mac;/" \
	    -e "s/mac 22:22:22:22:22:22;/mac $mac;/" "$d/bt.conf" > "$d/w$i.conf"
	macs=${macs:+$macs,}$mac
	i=$((i + 1))
done

# One lwaftr alone: the reference.
snb-run "pcap-read $d/v4.pcap | [v4] lw: lwaftr $d/w1.conf [v6] | pcap-write $d/one6.pcap ;
	 pcap-read $d/v6.pcap | [v6] @lw [v4] | pcap-write $d/one4.pcap"

# N copies w.1 .. w.N: the first set of copies declares them, fed from
# the internet side (l4, by its outputs 1..N) and joined towards the B4s
# (j6); the second refers to them (@w in copy K is w.K), fed from the
# B4s' side (l6) and joined towards the internet (j4).  {} is the copy's
# number, in its configuration's and its counters' names.
g="pcap-read $d/v4.pcap | l4: lb --key softwire |
     ${N}x( [v4] w: lwaftr --counters-out $d/w{}.counters $d/w{}.conf [v6] ) |
     j6: join | pcap-write $d/out6.pcap
   pcap-read $d/v6.pcap | l6: lb --key softwire | ${N}x( [v6] @w [v4] ) |
     j4: join | pcap-write $d/out4.pcap"
echo "== snb-run --stats \"$g\""
snb-run --stats "$g"
for f in "$d"/w*.counters; do
	echo "== $(basename "$f" .counters): $(grep -E '^(in-ipv4-packets|in-ipv6-packets|hairpin-ipv4-packets|in-ipv[46]-frag-reassembled) ' "$f" | tr '\n' ' ')"
done
/usr/bin/python3 "$here/lwaftr-scale.py" check "$d/bt.conf" "$macs" \
    "$d/one4.pcap" "$d/one6.pcap" "$d/out4.pcap" "$d/out6.pcap"
