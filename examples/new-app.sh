#!/bin/sh
# examples/new-app.sh [BUILD]: build examples/sample.c, the model app of
# snb(7)'s "Writing an app", against the library like any app outside the
# tree, and run it: one packet in 10 goes to one file, the rest to
# another, and tcpdump, reading the three captures, must agree.
set -e
B=$(cd "${1:-build}" && pwd)
top=$(cd "$(dirname "$0")/.." && pwd)
export PATH="$B/bin:$B/tests:$PATH"
export SNB_RUN_DIR="${SNB_RUN_DIR:-/dev/shm/snb-example-$$}"
d=$(mktemp -d /tmp/snb-app.XXXXXX)
trap 'rm -rf "$d" "$SNB_RUN_DIR"' EXIT

# The sanitizer build's library wants its runtime linked in as well.
case "$B" in *asan*) san="-fsanitize=address,undefined" ;; *) san= ;; esac
mkdir -p "$d/bin"
echo "== cc examples/sample.c -> snb-sample"
cc -O2 $san -I"$top/libring" -o "$d/bin/snb-sample" "$top/examples/sample.c" \
    "$B/libring.a" -lpcap -lbsd
export PATH="$d/bin:$PATH"
snb-sample --help

mkpcap "$d/in.pcap" --count 1000
g="pcap-read $d/in.pcap | s: sample 10 | pcap-write $d/out.pcap ; @s [rest] | pcap-write $d/rest.pcap"
echo "== snb-run \"$g\""
snb-run "$g"
frames() { tcpdump -nn -xx -r "$1" 2>/dev/null | awk '/^[0-9]/{if(p)print p;p=$0;next}{p=p $0}END{print p}' | cut -d' ' -f2-; }
frames "$d/in.pcap" > "$d/in"
frames "$d/out.pcap" > "$d/out"
frames "$d/rest.pcap" > "$d/rest"
awk 'NR % 10 == 1' "$d/in" > "$d/want-out"
awk 'NR % 10 != 1' "$d/in" > "$d/want-rest"
echo "== $(wc -l < "$d/out") sampled, $(wc -l < "$d/rest") rest, of $(wc -l < "$d/in")"
cmp -s "$d/out" "$d/want-out" && cmp -s "$d/rest" "$d/want-rest" &&
	echo "== every 10th packet sampled, the rest passed on, as tcpdump reads them" ||
	{ echo "== WRONG split"; exit 1; }
