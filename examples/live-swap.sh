#!/bin/sh
# examples/live-swap.sh [BUILD]: change a running graph without losing a
# packet.  A sequence-checking sink counts every packet; meanwhile the
# middle stage is swapped twice and restarted once, and snb-top shows the
# rates and how busy each stage is.
set -e
B=$(cd "${1:-build}" && pwd)
export PATH="$B/bin:$PATH"
export SNB_RUN_DIR="${SNB_RUN_DIR:-/dev/shm/snb-example-$$}"
N=${N:-8000000}
R=$((N / 8))	# packets per second: the graph runs 8 s
trap 'snb-ctl live stop >/dev/null 2>&1 || true; rm -rf "$SNB_RUN_DIR"' EXIT

echo "== snb-run -n live 'source --count $N --rate $R --seq | f: filter udp | sink --check-seq --expect $N --summary'"
snb-run -n live "source --count $N --rate $R --seq | f: filter udp | sink --check-seq --expect $N --summary" &
run=$!
sleep 1
snb-top --once live
echo "== snb-ctl live swap f 'filter ip'"
snb-ctl live swap f 'filter ip'
sleep 0.5
echo "== snb-ctl live restart f"
snb-ctl live restart f
sleep 0.5
echo "== snb-ctl live swap f 'filter udp'"
snb-ctl live swap f 'filter udp'
snb-ctl live show
wait $run
echo "== the sink saw every packet once, in order (it exits non-zero otherwise)"
