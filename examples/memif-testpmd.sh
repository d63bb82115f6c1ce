#!/bin/sh
# examples/memif-testpmd.sh [BUILD]: an snb graph and DPDK's testpmd joined
# by a memif interface.  snb-memif is the master (it owns the socket);
# testpmd is the client and forwards every packet back (io forwarding).
# N numbered packets go out and must all come back, once and in order:
#
#	source --count N --seq | memif SOCK --linger 1000 |
#	    sink --check-seq --expect N --summary
#
# Needs root (DPDK's run directory) and dpdk-testpmd (package dpdk-dev).
set -eu
B=${1:-build}
case "$B" in /*) ;; *) B="$(pwd)/$B" ;; esac
PATH="$B/bin:$PATH"
N=${N:-1000000}
D=$(mktemp -d)
SOCK="$D/memif.sock"
PREFIX="snb-memif-example-$$"
export SNB_RUN_DIR="$D/run"
TP=""
cleanup() {
	exec 7>&- 2>/dev/null || true
	[ -n "$TP" ] && kill -KILL "$TP" 2>/dev/null || true
	rm -rf "$D" "/var/run/dpdk/$PREFIX"
}
trap cleanup EXIT

# 1. The graph: waits for its peer (nothing is sent before the first
#    connection), then sends, receives, and ends by itself.
snb-run -n memif-example "source --count $N --seq |
    memif $SOCK --master --linger 1000 |
    sink --check-seq --expect $N --summary" 2> "$D/snb.err" &
RUN=$!
i=0
while [ ! -S "$SOCK" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done

# 2. testpmd, the client.  Interactive, so it can be told to retry a full
#    ring rather than drop ("io retry"); commands come from a fifo.
mkfifo "$D/cmd"
dpdk-testpmd -l 0,1 --no-huge -m 256 --no-pci --file-prefix="$PREFIX" \
    --vdev="net_memif0,role=client,socket=$SOCK,socket-abstract=no,id=0" \
    -- -i --forward-mode=io --total-num-mbufs=32768 --no-flush-rx \
    < "$D/cmd" > "$D/testpmd.out" 2>&1 &
TP=$!
exec 7> "$D/cmd"
echo "set fwd io retry" >&7
echo "set burst tx delay 100 retry 10000" >&7
echo "start" >&7

# 3. The graph ends when every packet is back (sink --expect checks the
#    count, --check-seq the order); then testpmd is told to quit.
st=0
wait $RUN || st=$?
echo "quit" >&7
exec 7>&-
wait $TP || true
TP=""
cat "$D/snb.err"
if [ $st -ne 0 ]; then
	echo "memif-testpmd: the graph failed (status $st); testpmd said:"
	tail -20 "$D/testpmd.out"
	exit 1
fi
echo "memif-testpmd: $N packets to testpmd and back over memif"
