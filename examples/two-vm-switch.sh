#!/bin/sh
# examples/two-vm-switch.sh [BUILD]: two virtual machines on one snb switch.
#
# The canonical NFV set-up: one snb graph with a snb-vhost backend per
# guest, both joined by a snb-bridge,
#
#	br: bridge
#	vhost DIR/vm1.sock | [vm1] @br [vm1] | vhost DIR/vm1.sock
#	vhost DIR/vm2.sock | [vm2] @br [vm2] | vhost DIR/vm2.sock
#
# and two QEMU guests (the tiny test guest of tests/vm: a Debian kernel and
# busybox, software emulation) whose virtio-net devices are vhost-user
# frontends on those sockets.  vm1 is 10.97.0.1, vm2 10.97.0.2; vm1 pings
# vm2 until it answers, then five times more, and prints the summary on its
# serial console, which this script reads.  Then the bridge's counters are
# shown: it learned both guests' MAC addresses and forwarded the frames
# between them.  Exits 0 only if every one of the five pings was answered.
#
# Needs root, qemu-system-x86_64, busybox-static, cpio and python3 (see
# tests/vm/build-guest; the first run downloads Debian's kernel package
# into build/vm/).  Under emulation on two cores, booting both guests and
# pinging takes 30-90 s.  Everything started here (guests, their
# namespaces, the graph, sockets, temporary files) is removed on exit,
# Ctrl-C included.
set -eu
B=$(cd "${1:-build}" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
export PATH="$B/bin:$PATH"
[ "$(id -u)" -eq 0 ] || { echo "two-vm-switch.sh: needs root (QEMU guests in namespaces)" >&2; exit 1; }
for t in qemu-system-x86_64 cpio python3 snb-run snb-top; do
	command -v "$t" > /dev/null || { echo "two-vm-switch.sh: needs $t" >&2; exit 1; }
done
[ -x /bin/busybox ] || { echo "two-vm-switch.sh: needs busybox-static" >&2; exit 1; }

# A short directory: socket paths are limited to 107 bytes.
d=$(mktemp -d /tmp/snb-2vm.XXXXXX)
export SNB_RUN_DIR="${SNB_RUN_DIR:-/dev/shm/snb-two-vm-$$}"
G="two-vm-$$"
run="" vm1="" vm2=""

cleanup() {
	set +e
	# run-guest kills its QEMU and deletes its namespace on SIGTERM.
	for p in $vm1 $vm2; do kill -TERM "$p" 2>/dev/null; done
	for p in $vm1 $vm2; do wait "$p" 2>/dev/null; done
	[ -z "$run" ] || { kill -INT "$run" 2>/dev/null; wait "$run" 2>/dev/null; }
	rm -rf "$d" "$SNB_RUN_DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "== building the guest (tests/vm/build-guest; cached in build/vm)"
"$root/tests/vm/build-guest" > /dev/null

GRAPH="br: bridge
vhost $d/vm1.sock | [vm1] @br [vm1] | vhost $d/vm1.sock
vhost $d/vm2.sock | [vm2] @br [vm2] | vhost $d/vm2.sock"
echo "== snb-run -n $G '$GRAPH'"
snb-run -n "$G" "$GRAPH" 2> "$d/graph.err" &
run=$!
i=0
until [ -S "$d/vm1.sock" ] && [ -S "$d/vm2.sock" ]; do
	i=$((i + 1))
	if ! kill -0 "$run" 2>/dev/null || [ $i -ge 200 ]; then
		echo "== the graph did not start:"; cat "$d/graph.err"; exit 1
	fi
	sleep 0.1
done

# guest_script N: the guest's /test.sh.  It loads the virtio modules, finds
# the vhost-user device by its MAC and gives it 10.97.0.N.
guest_script() {
	cat <<EOF
for m in \$(cat /modules/order); do
	case \$m in e1000*) ;; *) insmod /modules/\$m.ko 2>/dev/null ;; esac
done
i=0
until [ -n "\${ifc:-}" ] || [ \$i -ge 50 ]; do
	for n in /sys/class/net/*; do
		[ "\$(cat \$n/address)" = 52:54:00:00:0$1:07 ] && ifc=\${n##*/}
	done
	sleep 0.1; i=\$((i + 1))
done
[ -n "\${ifc:-}" ] || { echo "vm$1: no virtio-net device 52:54:00:00:0$1:07"; exit 1; }
ip addr add 10.97.0.$1/24 dev \$ifc
ip link set \$ifc up
echo "vm$1: \$ifc is 10.97.0.$1"
EOF
}
{
	guest_script 1
	cat <<'EOF'
# vm2 may still be booting: wait for its first answer (up to ~3 minutes).
i=0
until ping -c 1 -W 2 10.97.0.2 > /dev/null 2>&1; do
	i=$((i + 1))
	[ $i -lt 90 ] || { echo "vm1: no answer from 10.97.0.2"; exit 1; }
done
echo "vm1: 10.97.0.2 answers; pinging it 5 times"
ping -c 5 -W 5 10.97.0.2 > /tmp/ping
rc=$?
cat /tmp/ping
echo "vm1: $ifc rx $(cat /sys/class/net/$ifc/statistics/rx_packets) tx $(cat /sys/class/net/$ifc/statistics/tx_packets) frames"
[ $rc -eq 0 ] && grep -q ' 5 packets received' /tmp/ping && echo "vm1: PING-OK"
EOF
} > "$d/vm1.sh"
{
	guest_script 2
	# Up until this script stops the guest.
	echo 'echo "vm2: ready"; sleep 100000'
} > "$d/vm2.sh"

# vhost_args N: QEMU options for guest N's vhost-user virtio-net (at PCI
# 00:07.0).  The guest's memory is a shared memfd, which snb-vhost maps;
# vectors=0 because QEMU 7.2 under TCG crashes otherwise.
vhost_args() {
	echo "-object memory-backend-memfd,id=mem,size=256M,share=on" \
	    "-numa node,memdev=mem -chardev socket,id=vu,path=$d/vm$1.sock" \
	    "-netdev vhost-user,id=n7,chardev=vu" \
	    "-device virtio-net-pci,netdev=n7,addr=7,romfile=,mac=52:54:00:00:0$1:07,vectors=0"
}
echo "== booting vm1 and vm2 (QEMU, software emulation; give it a minute)"
SNB_VM_QEMU_ARGS=$(vhost_args 2) "$root/tests/vm/run-guest" -t 600 -m 256 -H 0 \
    "$d/vm2.sh" "$d/vm2.console" > "$d/vm2.out" 2>&1 &
vm2=$!
SNB_VM_QEMU_ARGS=$(vhost_args 1) "$root/tests/vm/run-guest" -t 600 -m 256 -H 0 \
    "$d/vm1.sh" "$d/vm1.console" > "$d/vm1.out" 2>&1 &
vm1=$!
# wait returns early on Ctrl-C, so the trap runs at once.
rc=0
wait "$vm1" || rc=$?
vm1=""
echo "== vm1's console (its script's output)"
sed 's/^/   /' "$d/vm1.out"
tr -d '\r' < "$d/vm2.console" 2>/dev/null | grep '^vm2:' | sed 's/^/   /' || true

echo "== the bridge's counters (snb-top --once $G)"
snb-top --once -i 0.1 "$G" | awk '$2 == "bridge"' | tr ' ' '\n' | grep '=' |
    paste - - - - | sed 's/^/   /'
if [ $rc -eq 0 ] && grep -q '^vm1: PING-OK' "$d/vm1.out"; then
	echo "== vm1 pinged vm2 through snb-vhost, snb-bridge, snb-vhost"
else
	echo "== the ping failed (run-guest status $rc); the graph said:"
	cat "$d/graph.err"
	exit 1
fi
