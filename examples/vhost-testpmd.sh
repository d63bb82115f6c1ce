#!/bin/sh
# snb-vhost with DPDK's testpmd as the frontend: a million numbered packets
# go from an snb graph into testpmd's virtio_user port, testpmd forwards
# them back, and the graph checks every one on return.  Both sides' own
# statistics are printed.  Run as root (DPDK wants /var/run/dpdk) from the
# repository root: sh examples/vhost-testpmd.sh [BUILD_DIR] [COUNT]
set -e
B=$(cd "${1:-build}" && pwd)
N=${2:-1000000}
export PATH="$B/bin:$PATH"
command -v dpdk-testpmd >/dev/null || { echo "needs dpdk-testpmd (apt-get install dpdk-dev)"; exit 1; }
d=$(mktemp -d /tmp/snb-vhost.XXXXXX)
export SNB_RUN_DIR="$d/run"
prefix="snb-vhost-example-$$"
tp=""
cleanup() {
	[ -n "$tp" ] && kill -TERM "$tp" 2>/dev/null && wait "$tp" 2>/dev/null
	rm -rf "$d" "/var/run/dpdk/$prefix"
}
trap cleanup EXIT

echo "== snb-run 'source --count $N --seq | vhost $d/v.sock --hold | sink --check-seq --summary'"
# The source starts idle and is swapped for the real one once testpmd
# forwards: frames delivered while testpmd is still starting its port can
# be lost inside testpmd.
snb-run -n vhost-example "src: source --count 0 --hold | v: vhost $d/v.sock --hold | s: sink --check-seq --summary" 2> "$d/graph.err" &
run=$!
while [ ! -S "$d/v.sock" ]; do sleep 0.1; done

echo "== dpdk-testpmd --vdev net_virtio_user0,path=$d/v.sock (forwarding back, retrying a full queue)"
printf 'set fwd io retry\nset burst tx delay 100 retry 200000\n' > "$d/cmds"
dpdk-testpmd --no-huge -m 256 --no-pci -l 0,1 --file-prefix "$prefix" \
    --vdev "net_virtio_user0,path=$d/v.sock,queues=1" -- \
    --total-num-mbufs=16384 --no-flush-rx --cmdline-file="$d/cmds" \
    --auto-start --stats-period 1 > "$d/testpmd.log" 2>&1 &
tp=$!
while ! grep -q 'Rx-pps:' "$d/testpmd.log"; do
	kill -0 "$tp" 2>/dev/null || { cat "$d/testpmd.log"; exit 1; }
	sleep 0.1
done
snb-ctl vhost-example swap src "source --count $N --seq --hold" > /dev/null

# The source holds the graph open after its last packet: wait for the sink.
counter() {
	snb-top --json --once -i 0.01 vhost-example 2>/dev/null |
	    jq -r --arg l "$1" --arg c "$2" \
	    '.graphs[0].stages[] | select(.label == $l) | .counters[$c]'
}
while :; do
	got=$(counter s packets)
	case "$got" in [0-9]*) [ "$got" -ge "$N" ] && break ;; esac
	kill -0 "$run" 2>/dev/null || { cat "$d/graph.err"; exit 1; }
	sleep 0.2
done
echo
echo "== snb-vhost's counters"
snb-top --json --once -i 0.01 vhost-example |
    jq -r '.graphs[0].stages[] | select(.label == "v") | .counters | to_entries[] | "   \(.key) \(.value)"'
echo "== sink: $(counter s packets) packets, $(counter s seq-errors) sequence errors"
kill -TERM "$tp"
wait "$tp" || true
tp=""
echo "== testpmd's forward statistics"
awk '/Forward statistics for port 0/ {f=1} f && /-packets:/ {print "  " $0} /----------------------------------------------------------------------------/ && f {exit}' "$d/testpmd.log"
kill -INT "$run"
wait "$run" || true
grep '^sink:' "$d/graph.err" || true
