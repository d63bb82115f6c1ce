#!/usr/bin/env bats
# snb-nic's user-space PCI drivers (pci:ADDR) in a QEMU guest.
#
# tests/vm/run-guest boots a small guest (software emulation, ~5 s) with an
# e1000 (00:04.0), an e1000e (00:05.0) and a virtio-net (00:06.0) on taps
# in a namespace of the test's own.  The guest runs
# 'nic pci:ADDR --promisc | filter EXPR | nic pci:ADDR'; the host sends a
# varied set of frames (mkpcap) into the tap and captures what comes back
# with tcpdump: it must be exactly the frames libpcap (tcpdump -r) selects
# from the sent set with the same expression, in order, byte for byte.
#
# The guest's programs are static builds of the normal build's sources
# (build/vm/static), so the sanitizer pass skips them (not the host test).  Needs root,
# qemu-system-x86_64, busybox-static, cpio, python3, tcpdump; the first run
# downloads Debian's kernel package into build/vm/ (cached).
load helpers

VM="$BATS_TEST_DIRNAME/vm"
FILTER='(udp or icmp or arp) and not port 7'

setup() {
	[ "$(id -u)" -eq 0 ] || skip "needs root"
	export SNB_RUN_DIR="/dev/shm/snb-bats-$$-$BATS_TEST_NUMBER"
	T="$BATS_TEST_TMPDIR"
	NS="snbV-$$-$BATS_TEST_NUMBER"
	GUEST="" CAP="" FLOOD=""
}

# A test that boots the guest starts with this.
needs_guest() {
	case "$SNB_BUILD" in
	*asan*) skip "the guest runs static, non-sanitized builds (tested with build)" ;;
	esac
	local t
	for t in qemu-system-x86_64 cpio tcpdump python3; do
		command -v "$t" >/dev/null && continue
		[ "${CI:-}" != true ] || { echo "CI: $t is missing"; return 1; }
		skip "$t is not installed"
	done
	if [ ! -x /bin/busybox ]; then
		[ "${CI:-}" != true ] || { echo "CI: busybox-static is missing"; return 1; }
		skip "busybox-static is not installed"
	fi
}

teardown() {
	[ -z "$CAP" ] || { kill -INT "$CAP" 2>/dev/null; wait "$CAP" 2>/dev/null; }
	[ -z "$FLOOD" ] || { kill "$FLOOD" 2>/dev/null; wait "$FLOOD" 2>/dev/null; }
	[ -z "$GUEST" ] || { kill -TERM "$GUEST" 2>/dev/null; wait "$GUEST" 2>/dev/null; }
	ip netns del "$NS" 2>/dev/null || true
	if [ -d "$SNB_RUN_DIR" ]; then
		left=$(ls -A "$SNB_RUN_DIR")
		rm -rf "$SNB_RUN_DIR"
		[ -z "$left" ] || { echo "left in run dir: $left"; return 1; }
	fi
}

# Functions the guest scripts start with: ctr NAME prints a counter of
# graph g (empty until the nic has opened its device), stage_pid APP.
# After the guest is done: stop tcpdump once $1 holds $2 frames (or after
# 10 s).  On a loaded host it may still be behind in its ring, and SIGINT
# drops what it has not read.  Its statistics go to the output.
stop_capture() {
	local i
	sleep 0.5
	for i in $(seq 100); do
		[ "$(tcpdump -r "$1" 2>/dev/null | wc -l)" -lt "$2" ] || break
		sleep 0.1
	done
	kill -INT "$CAP"
	wait "$CAP" || true
	CAP=""
	cat "$T/cap.err"
}

guest_lib() {
	cat <<'EOF'
ctr() {
	snb-top --once -i 0.1 g 2>/dev/null |
	    sed -n "s/.* $1=\([0-9]*\).*/\1/p" | head -1
}
stage_pid() {
	snb-top --once --json -i 0.1 g 2>/dev/null |
	    sed -n "s/.*\"app\":\"$1\",\"pid\":\([0-9]*\).*/\1/p"
}
wait_open() {
	i=0
	until [ -n "$(ctr rx-packets)" ]; do
		sleep 0.2; i=$((i + 1))
		[ $i -lt 300 ] || { echo "the nic did not open"; cat /tmp/err; exit 1; }
	done
}
master() {	# bus mastering bit of device $1's command register
	c=$(od -An -tu2 -j4 -N2 /sys/bus/pci/devices/$1/config)
	echo $(( (c >> 2) & 1 ))
}
EOF
}

# forward ADDR TAP MAC [--promisc]: the frame test (see the top) for the
# device at ADDR.  A third of the frames are addressed to its MAC; without
# --promisc the device must take only those and broadcast ones.
forward() {
	local addr=$1 tap=$2 mac=$3 promisc=${4:-} n rxn want rc i accept
	needs_guest
	mkpcap "$T/all.pcap" --count 400
	n=$(python3 "$VM/frames.py" select "$T/all.pcap" "$T/sent.pcap" "$mac")
	accept="ether broadcast or ether dst $mac"
	[ -z "$promisc" ] || accept=""	# all
	tcpdump -r "$T/sent.pcap" -w "$T/rx.pcap" "$accept" 2>/dev/null
	rxn=$(python3 "$VM/frames.py" count "$T/rx.pcap")
	tcpdump -r "$T/rx.pcap" -w "$T/want.pcap" "$FILTER" 2>/dev/null
	want=$(python3 "$VM/frames.py" count "$T/want.pcap")
	[ "$want" -gt 10 ]	# the filter selects some
	[ "$want" -lt "$rxn" ]	# ... not all
	[ "$rxn" -lt "$n" ] || [ -n "$promisc" ]
	echo "sent $n, accepted $rxn, selected $want"
	{
		guest_lib
		cat <<EOF
snb-run -n g 'nic pci:$addr $promisc | filter $FILTER | nic pci:$addr $promisc' 2>/tmp/err &
pid=\$!
wait_open
echo SNB-READY
i=0
until [ "\$(ctr rx-packets)" -ge $rxn ] 2>/dev/null; do
	sleep 0.5; i=\$((i + 1)); [ \$i -lt 240 ] || break
done
t0=\$(date +%s)
until [ "\$(ctr tx-packets)" -ge $want ] 2>/dev/null; do
	sleep 0.5; [ \$((\$(date +%s) - t0)) -lt 30 ] || break
done
sleep 1
snb-top --once -i 0.1 g
kill -INT \$pid
wait \$pid
cat /tmp/err
echo "bus-master-after=\$(master $addr)"
EOF
	} > "$T/guest.sh"
	ip netns add "$NS"
	ip netns exec "$NS" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
	    net.ipv6.conf.default.disable_ipv6=1
	"$VM/run-guest" -n "$NS" -t 400 "$T/guest.sh" "$T/console.log" \
	    > "$T/guest.out" 2>&1 &
	GUEST=$!
	for i in $(seq 1200); do
		grep -q SNB-READY "$T/console.log" 2>/dev/null && break
		kill -0 "$GUEST" 2>/dev/null || break
		sleep 0.25
	done
	grep -q SNB-READY "$T/console.log" || { cat "$T/guest.out"; tail -20 "$T/console.log"; return 1; }
	ip netns exec "$NS" tcpdump -i "$tap" -Q in -nn -s 4096 -U \
	    --immediate-mode -Z root -w "$T/got.pcap" 2> "$T/cap.err" &
	CAP=$!
	for i in $(seq 100); do
		grep -q "listening on" "$T/cap.err" && break
		sleep 0.05
	done
	sleep 0.3
	ip netns exec "$NS" python3 "$VM/frames.py" send "$tap" "$T/sent.pcap"
	rc=0
	wait "$GUEST" || rc=$?
	GUEST=""
	stop_capture "$T/got.pcap" "$want"
	cat "$T/guest.out"
	[ "$rc" -eq 0 ]
	python3 "$VM/frames.py" compare "$T/want.pcap" "$T/got.pcap"
	# The nic's counters agree: all received, the selected ones sent.
	grep -q " rx-packets=$rxn " "$T/guest.out"
	grep -q " tx-packets=$want " "$T/guest.out"
	grep -q "drop-ring-full=0 drop-oversize=0 drop-kernel=0 drop-tx-error=0" "$T/guest.out"
	grep -q "bus-master-after=0" "$T/guest.out"
}

@test "vm: pci: refuses absent, malformed and unsupported host devices untouched" {
	run snb-nic pci:0000:99:1f.7
	[ "$status" -eq 1 ]
	assert_output_has "no PCI device 0000:99:1f.7"
	run snb-nic pci:0000:00:04
	[ "$status" -eq 2 ]
	assert_output_has "bad PCI address '0000:00:04'"
	run snb-nic pci:00:04.9
	[ "$status" -eq 2 ]
	# A host device that is no network device and no supported one; only
	# its vendor and device files are read.
	local d v id cls before found=""
	for d in /sys/bus/pci/devices/*; do
		[ -e "$d/vendor" ] || continue
		cls=$(cat "$d/class")
		v=$(cat "$d/vendor") id=$(cat "$d/device")
		case "$cls" in 0x02*) continue ;; esac
		case "$v:$id" in 0x8086:0x100e|0x8086:0x10d3|0x1af4:0x1000|0x1af4:0x1041) continue ;; esac
		found=$d
		break
	done
	[ -n "$found" ] || skip "no suitable PCI device on this host"
	d=$found
	before=$(ls -l "$d/" | grep driver || true)
	run snb-nic "pci:${d##*/}"
	[ "$status" -eq 1 ]
	assert_output_has "is ${v#0x}:${id#0x}, which no snb-nic driver supports"
	[ "$(ls -l "$d/" | grep driver || true)" = "$before" ]
}

@test "vm: pci: bad addresses in the guest; the device is left alone" {
	needs_guest
	{
		guest_lib
		cat <<'EOF'
echo "absent: $(snb-nic pci:0000:00:1f.0 2>&1; echo status=$?)"
echo "malformed: $(snb-nic pci:00:4.0 2>&1; echo status=$?)"
before=$(od -An -tx1 -N64 /sys/bus/pci/devices/0000:00:01.0/config)
echo "unsupported: $(snb-nic pci:00:01.0 2>&1; echo status=$?)"
after=$(od -An -tx1 -N64 /sys/bus/pci/devices/0000:00:01.0/config)
[ "$before" = "$after" ] && echo "config unchanged"
snb-run 'nic pci:00:1f.0 | nic pci:00:1f.0' 2>&1; echo "graph status=$?"
EOF
	} > "$T/guest.sh"
	run "$VM/run-guest" -t 300 "$T/guest.sh"
	echo "$output"
	[ "$status" -eq 0 ]
	assert_output_has "absent: snb-nic: pci:0000:00:1f.0: no PCI device 0000:00:1f.0"
	assert_output_has "status=1"
	assert_output_has "malformed: snb-nic: pci:00:4.0: bad PCI address '00:4.0'"
	assert_output_has "unsupported: snb-nic: pci:00:01.0: PCI device 0000:00:01.0 is 8086:7000, which no snb-nic driver supports"
	assert_output_has "config unchanged"
	echo "$output" | grep -q "graph status=[1-9]"
}

@test "vm: pci: a device whose kernel interface is up is refused; down, it is taken" {
	needs_guest
	{
		guest_lib
		cat <<'EOF'
for m in $(cat /modules/order); do insmod /modules/$m.ko; done
a=0000:00:05.0
if=$(ls /sys/bus/pci/devices/$a/net/)
echo "kernel-driver=$(basename "$(readlink /sys/bus/pci/devices/$a/driver)")"
ip link set "$if" up
echo "up: $(timeout 60 snb-run 'nic pci:00:05.0 | nic pci:00:05.0' 2>&1; echo status=$?)"
echo "driver-while-up=$(basename "$(readlink /sys/bus/pci/devices/$a/driver)")"
ip link set "$if" down
snb-run -n g 'nic pci:00:05.0 | nic pci:00:05.0' 2>/tmp/err &
pid=$!
wait_open
echo "driver-after=$(readlink /sys/bus/pci/devices/$a/driver || echo none)"
echo "master-open=$(master $a)"
kill -INT $pid
wait $pid
echo "stopped=$?"
EOF
	} > "$T/guest.sh"
	run "$VM/run-guest" -t 300 "$T/guest.sh"
	echo "$output"
	[ "$status" -eq 0 ]
	assert_output_has "kernel-driver=e1000e"
	assert_output_has "PCI 0000:00:05.0 is interface eth"
	assert_output_has "which is up: set it down first"
	echo "$output" | grep -q "^status=[1-9]"
	assert_output_has "driver-while-up=e1000e"
	assert_output_has "driver-after=none"
	assert_output_has "master-open=1"
}

@test "vm: e1000 (82540EM): nic | filter | nic, frames as tcpdump selects" {
	forward 0000:00:04.0 e1000 52:54:00:00:00:04 --promisc
}

@test "vm: e1000 (82540EM) without --promisc: only its MAC and broadcast" {
	forward 0000:00:04.0 e1000 52:54:00:00:00:04
}

@test "vm: e1000e (82574L): nic | filter | nic, frames as tcpdump selects" {
	forward 0000:00:05.0 e1000e 52:54:00:00:00:05 --promisc
}

@test "vm: e1000e (82574L) without --promisc: only its MAC and broadcast" {
	forward 0000:00:05.0 e1000e 52:54:00:00:00:05
}

@test "vm: virtio-net: nic | filter | nic, frames as tcpdump selects" {
	[ -f "$BATS_TEST_DIRNAME/../drivers/nic/virtio.c" ] ||
	    skip "drivers/nic/virtio.c is not written yet"
	forward 0000:00:06.0 virtio 52:54:00:00:00:06 --promisc
}

# wait_console PATTERN: until the guest's console has a line matching it.
wait_console() {
	local i
	for i in $(seq 1200); do
		grep -aq "$1" "$T/console.log" 2>/dev/null && return 0
		kill -0 "$GUEST" 2>/dev/null || break
		sleep 0.25
	done
	echo "no '$1' on the console:"; tail -20 "$T/console.log"
	return 1
}

# monitor COMMAND: one command to the guest's QEMU monitor.
monitor() {
	python3 - "$T/mon" "$1" <<'EOF'
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
time.sleep(0.2)
s.sendall(sys.argv[2].encode() + b"\n")
time.sleep(0.5)
s.close()
EOF
}

@test "vm: e1000: the device's link going down pauses sending (counted), up resumes" {
	needs_guest
	{
		guest_lib
		cat <<'EOF'
snb-run -n g 'source --rate 2000 | nic pci:00:04.0' 2>/tmp/err &
pid=$!
wait_open
echo SNB-READY
i=0
until [ "$(ctr link-down)" = 1 ]; do
	sleep 0.2; i=$((i + 1)); [ $i -lt 300 ] || break
done
sleep 0.5
d1=$(ctr drop-link-down) t1=$(ctr tx-packets)
sleep 1
d2=$(ctr drop-link-down) t2=$(ctr tx-packets)
echo "while-down: link-down=$(ctr link-down) dropped=$((d2 - d1)) sent=$((t2 - t1))"
echo SNB-DOWN-DONE
i=0
until [ "$(ctr tx-packets)" -gt "$t2" ]; do
	sleep 0.2; i=$((i + 1)); [ $i -lt 300 ] || break
done
sleep 0.5
d3=$(ctr drop-link-down) t3=$(ctr tx-packets)
sleep 1
d4=$(ctr drop-link-down) t4=$(ctr tx-packets)
echo "after-up: dropped=$((d4 - d3)) sent=$((t4 - t3))"
kill -INT $pid
wait $pid
cat /tmp/err
EOF
	} > "$T/guest.sh"
	"$VM/run-guest" -M "$T/mon" -t 300 "$T/guest.sh" "$T/console.log" \
	    > "$T/guest.out" 2>&1 &
	GUEST=$!
	wait_console SNB-READY
	monitor "set_link n4 off"
	wait_console SNB-DOWN-DONE
	monitor "set_link n4 on"
	wait "$GUEST"
	GUEST=""
	cat "$T/guest.out"
	grep -q "while-down: link-down=1 dropped=[1-9][0-9]* sent=0$" "$T/guest.out"
	grep -q "after-up: dropped=0 sent=[1-9]" "$T/guest.out"
	grep -q "link down; pausing" "$T/guest.out"
	grep -q "link up" "$T/guest.out"
}

@test "vm: pci: SIGKILL of the driver still clears bus mastering" {
	needs_guest
	{
		guest_lib
		cat <<'EOF'
a=0000:00:05.0
snb-run -n g 'nic pci:00:05.0 | nic pci:00:05.0' 2>/tmp/err &
pid=$!
wait_open
echo "master-open=$(master $a)"
nic=$(stage_pid nic)
kill -KILL "$nic"
i=0
while [ "$(master $a)" = 1 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
echo "master-after-kill=$(master $a)"
kill -INT $pid 2>/dev/null
wait $pid
sleep 0.5
echo "drivers-left=$(pidof snb-nic | wc -w)"
EOF
	} > "$T/guest.sh"
	run "$VM/run-guest" -t 300 "$T/guest.sh"
	echo "$output"
	[ "$status" -eq 0 ]
	assert_output_has "master-open=1"
	assert_output_has "master-after-kill=0"
	assert_output_has "drivers-left=0"
}

@test "vm: pci: one driver per device; restarted after SIGKILL, it takes the device again" {
	needs_guest
	{
		guest_lib
		cat <<'EOF'
a=0000:00:05.0
snb-run -n g --restart=on-failure 'nic pci:00:05.0 | nic pci:00:05.0' 2>/tmp/err &
pid=$!
wait_open
nic=$(stage_pid nic)
timeout 60 snb-run -n h 'nic pci:00:05.0 | nic pci:00:05.0' 2>&1
echo "second=$?"
kill -KILL "$nic"
i=0
until n2=$(stage_pid nic); [ -n "$n2" ] && [ "$n2" != "$nic" ] &&
    [ "$(master $a)" = 1 ]; do
	sleep 0.2; i=$((i + 1)); [ $i -lt 150 ] || break
done
sleep 1
echo "restarted=$([ "$n2" != "$nic" ] && echo yes) master=$(master $a)"
kill -INT $pid
wait $pid
echo "master-after-stop=$(master $a)"
sleep 0.5
echo "drivers-left=$(pidof snb-nic | wc -w)"
EOF
	} > "$T/guest.sh"
	run "$VM/run-guest" -t 300 "$T/guest.sh"
	echo "$output"
	[ "$status" -eq 0 ]
	assert_output_has "PCI 0000:00:05.0 is in use by another snb-nic"
	echo "$output" | grep -q "^second=[1-9]"
	assert_output_has "restarted=yes master=1"
	assert_output_has "master-after-stop=0"
	assert_output_has "drivers-left=0"
}

# Issue 17's PCI items, in one guest (see the test below): the watcher
# holds the DMA memory until it has cleared bus mastering, mastering comes
# on only after the device is reset, and devices given to user space or a
# VM are refused.
#
# check_reset_first TRACE DEV RESET: in QEMU's trace of config writes and
# device resets, every write of the command register of DEV (as QEMU names
# it, "e1000e 00:05.0") that sets bus mastering comes after a reset event
# (a line matching RESET) since the last write that cleared it; prints
# how many such writes it checked.  With a fourth argument, a reset event
# on the line right after a write that cleared mastering is QEMU's own
# (virtio-pci drops DRIVER_OK then, traced as a status write of 0), not
# the driver's, and does not count.
check_reset_first() {
	awk -v dev="$2" -v reset="$3" -v echo="${4:-}" '
	$0 ~ reset { if (echo == "" || NR != cleared + 1) armed = 1; next }
	index($0, "pci_cfg_write " dev " @0x4 <- ") {
		v = $NF; sub(/^0x/, "", v)
		m = index("4567cdef", substr(v, length(v), 1)) ? 1 : 0
		if (!m) { armed = 0; cleared = NR; next }
		n++
		if (!armed) { print "mastering set before a reset: " $0; bad = 1 }
	}
	END { print "checked " n + 0; exit bad || n == 0 }' "$1"
}

@test "vm: pci: SIGKILL under traffic keeps the DMA pages until mastering is off; mastering only after reset; VM and user-space drivers' devices refused" {
	needs_guest
	{
		guest_lib
		cat <<'EOF'
a4=0000:00:04.0 a5=0000:00:05.0
# snb-nic in a graph of its own (run by hand with no port connected, it
# stops at that before it looks at the device).
nic_alone() { timeout 60 snb-run "nic $1 | sink" 2>&1; }
# Rings in /dev/shm: the only hugepages taken are the driver's DMA memory.
export SNB_HUGE_DIR=none
hp_free() { sed -n 's/^HugePages_Free: *//p' /proc/meminfo; }
gone() { i=0; while kill -0 "$1" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done; }
free0=$(hp_free)
# The e1000e forwards what the host floods into its tap.
snb-run -n g 'nic pci:00:05.0 | nic pci:00:05.0' 2>/tmp/err &
pid=$!
wait_open
echo SNB-FLOOD
i=0
until [ "$(ctr rx-packets)" -ge 300 ] 2>/dev/null; do
	sleep 0.2; i=$((i + 1)); [ $i -lt 300 ] || break
done
free1=$(hp_free)
nic=$(stage_pid nic)
w=""
for p in $(pidof snb-nic); do [ "$p" = "$nic" ] || w=$p; done
echo "busy: rx=$(ctr rx-packets) free0=$free0 free1=$free1 watcher=${w:-none}"
# The watcher stopped, the driver killed mid-stream: the device keeps
# mastering (no one to clear it) and the pages must stay taken.
kill -STOP "$w"
kill -KILL "$nic"
gone "$nic"
sleep 0.5
echo "held: free=$(hp_free) master=$(master $a5)"
kill -CONT "$w"
gone "$w"
echo "released: free=$(hp_free) master=$(master $a5) watcher-alive=$(kill -0 $w 2>/dev/null && echo yes || echo no)"
kill -INT $pid 2>/dev/null
wait $pid
# Taken again while the device, left running, still receives: reset
# before mastering (QEMU's trace), then it forwards.
snb-run -n g 'nic pci:00:05.0 | nic pci:00:05.0' 2>/tmp/err &
pid=$!
wait_open
echo "reopened: master=$(master $a5)"
r0=$(ctr rx-packets)
sleep 1
echo "forwarding: $(( $(ctr rx-packets) - r0 )) more"
kill -INT $pid
wait $pid
echo "stopped: free=$(hp_free) master=$(master $a5)"
echo SNB-FLOOD-END
# virtio: opened and closed once, for the trace.
snb-run -n v 'nic pci:00:06.0 | nic pci:00:06.0' 2>/tmp/err &
pid=$!
wait_open() { i=0; until [ -n "$(snb-top --once -i 0.1 v 2>/dev/null | sed -n 's/.* rx-packets=\([0-9]*\).*/\1/p')" ]; do sleep 0.2; i=$((i + 1)); [ $i -lt 300 ] || { cat /tmp/err; exit 1; }; done; }
wait_open
echo "virtio: master=$(master 0000:00:06.0)"
kill -INT $pid
wait $pid
# Devices given to user space or a VM.
for m in $(cat /modules/order-user); do insmod /modules/$m.ko; done
for drv in uio_pci_generic pci-stub; do
	echo "$drv" > /sys/bus/pci/devices/$a4/driver_override
	echo $a4 > /sys/bus/pci/drivers_probe
	echo "bound: $(basename "$(readlink /sys/bus/pci/devices/$a4/driver)")"
	before=$(od -An -tx1 -N64 /sys/bus/pci/devices/$a4/config)
	out=$(nic_alone pci:00:04.0)
	echo "refused: status=$? $out"
	after=$(od -An -tx1 -N64 /sys/bus/pci/devices/$a4/config)
	echo "after: $(basename "$(readlink /sys/bus/pci/devices/$a4/driver)") config-$([ "$before" = "$after" ] && echo same || echo changed)"
	echo $a4 > /sys/bus/pci/devices/$a4/driver/unbind
done
echo > /sys/bus/pci/devices/$a4/driver_override
snb-run -n u 'nic pci:00:04.0 | nic pci:00:04.0' 2>/tmp/err &
pid=$!
i=0
until [ -n "$(snb-top --once -i 0.1 u 2>/dev/null | sed -n 's/.* rx-packets=\([0-9]*\).*/\1/p')" ]; do
	sleep 0.2; i=$((i + 1)); [ $i -lt 300 ] || break
done
echo "unbound: taken=$([ $i -lt 300 ] && echo yes || echo no)"
kill -INT $pid
wait $pid
echo "drivers-left=$(pidof snb-nic | wc -w)"
EOF
	} > "$T/guest.sh"
	ip netns add "$NS"
	SNB_VM_QEMU_ARGS="-trace pci_cfg_write -trace e1000e_core_ctrl_sw_reset -trace virtio_set_status -D $T/trace.log" \
	    "$VM/run-guest" -n "$NS" -t 400 "$T/guest.sh" "$T/console.log" \
	    > "$T/guest.out" 2>&1 &
	GUEST=$!
	wait_console SNB-FLOOD
	ip netns exec "$NS" timeout 120 python3 "$VM/frames.py" flood e1000e 100 \
	    > "$T/flood.out" 2>&1 &
	FLOOD=$!
	wait_console SNB-FLOOD-END || true
	kill "$FLOOD" 2>/dev/null || true
	wait "$FLOOD" || true
	FLOOD=""
	local rc=0
	wait "$GUEST" || rc=$?
	GUEST=""
	output=$(cat "$T/guest.out")
	echo "$output"
	[ "$rc" -eq 0 ]
	# Item 9: while the watcher was stopped the pages stayed taken (the
	# device still mastering); once it ran, mastering off, then freed.
	local free0 free1
	free0=$(sed -n 's/^busy: .* free0=\([0-9]*\) .*/\1/p' "$T/guest.out")
	free1=$(sed -n 's/^busy: .* free1=\([0-9]*\) .*/\1/p' "$T/guest.out")
	[ -n "$free1" ]
	[ "$free1" -eq $((free0 - 2)) ]	# e1000e: rx, tx
	grep -q "^busy: rx=[0-9]* .* watcher=[0-9]" "$T/guest.out"
	assert_output_has "held: free=$free1 master=1"
	assert_output_has "released: free=$free0 master=0 watcher-alive=no"
	# Item 10: the new driver reset the device before mastering (e1000e
	# and virtio), and forwards.
	assert_output_has "reopened: master=1"
	grep -q "^forwarding: [1-9][0-9]* more" "$T/guest.out"
	assert_output_has "stopped: free=$free0 master=0"
	assert_output_has "virtio: master=1"
	check_reset_first "$T/trace.log" "e1000e 00:05.0" "e1000e_core_ctrl_sw_reset"
	check_reset_first "$T/trace.log" "virtio-net-pci 00:06.0" "virtio_set_status .* val 0$" qemu-echo
	# Item 11: refused, saying why, the driver and config left alone.
	assert_output_has "bound: uio_pci_generic"
	assert_output_has "PCI 0000:00:04.0 is bound to uio_pci_generic, so it is in use (UIO"
	assert_output_has "bound: pci-stub"
	assert_output_has "PCI 0000:00:04.0 is bound to pci-stub, so it is in use"
	[ "$(grep -c "^refused: status=1 snb-nic: pci:00:04.0: PCI" "$T/guest.out")" -eq 2 ]
	assert_output_has "after: uio_pci_generic config-same"
	assert_output_has "after: pci-stub config-same"
	assert_output_has "unbound: taken=yes"
	assert_output_has "drivers-left=0"
}

# vfio-pci binds only a device in an IOMMU group (Debian's kernel has no
# VFIO no-IOMMU mode), so this needs a guest of its own: a q35 machine
# with QEMU's emulated Intel IOMMU, on.
@test "vm: pci: behind an emulated IOMMU: a device bound to vfio-pci is refused as VFIO's, an unbound one as behind the IOMMU" {
	needs_guest
	cat > "$T/guest.sh" <<'EOF'
a4=0000:00:04.0
# snb-nic in a graph of its own (run by hand with no port connected, it
# stops at that before it looks at the device).
nic_alone() { timeout 60 snb-run "nic $1 | sink" 2>&1; }
for m in $(cat /modules/order-user); do insmod /modules/$m.ko; done
echo "group-type=$(cat /sys/bus/pci/devices/$a4/iommu_group/type)"
echo vfio-pci > /sys/bus/pci/devices/$a4/driver_override
echo $a4 > /sys/bus/pci/drivers_probe
echo "bound: $(basename "$(readlink /sys/bus/pci/devices/$a4/driver)")"
before=$(od -An -tx1 -N64 /sys/bus/pci/devices/$a4/config)
out=$(nic_alone pci:00:04.0)
echo "vfio: status=$? $out"
after=$(od -An -tx1 -N64 /sys/bus/pci/devices/$a4/config)
echo "after: $(basename "$(readlink /sys/bus/pci/devices/$a4/driver)") config-$([ "$before" = "$after" ] && echo same || echo changed)"
out=$(nic_alone pci:00:05.0)
echo "iommu: status=$? $out"
echo "e1000e-driver=$(readlink /sys/bus/pci/devices/0000:00:05.0/driver || echo none)"
EOF
	SNB_VM_QEMU_ARGS="-machine q35 -device intel-iommu,intremap=off" \
	    SNB_VM_APPEND="intel_iommu=on" \
	    run "$VM/run-guest" -t 300 "$T/guest.sh"
	echo "$output"
	[ "$status" -eq 0 ]
	echo "$output" | grep -q "^group-type=DMA"
	assert_output_has "bound: vfio-pci"
	assert_output_has "vfio: status=1 snb-nic: pci:00:04.0: PCI 0000:00:04.0 is bound to vfio-pci, so it is in use (VFIO: a virtual machine's"
	assert_output_has "after: vfio-pci config-same"
	assert_output_has "iommu: status=1 snb-nic: pci:00:05.0: PCI 0000:00:05.0 is behind an active IOMMU"
	echo "$output" | grep "^iommu: " | grep -vq "needs root"
	assert_output_has "e1000e-driver=none"
}

# The multi-queue virtio-net (run-guest -Q 4: 00:07.0 on tap "virtioq"),
# one snb-nic process per queue pair, each writing what it receives to a
# pcap file that the guest prints in hex: the host sends many UDP flows
# (tests/tools/flows.py), tshark reads the files back, flows.py checks
# that every frame arrived once across the queues and each flow stayed
# on one queue.  Midway, one queue's process is killed (SIGKILL) and
# restarted by snb-run while the host sends more: the other processes
# keep their pids and go on, the restarted one takes its queue over.
# Then, in the same boot, transmit: a new graph of one process per pair,
# each sending back out of its pair what it receives ('nic Q | nic Q');
# the host sends more flows and captures what the guest sends on the tap
# (tcpdump -Q in): every frame once, as many as the host kernel counted
# on the tap and as the pairs' tx-packets add up to.
@test "vm: virtio-net multi-queue: a process per queue pair, RSS, exactly once; one killed and restarted; transmit from every pair" {
	local n1=400 n2=400 n3=400 q files="" c tx sum=0 busy=0 rx0 sent0 sent
	needs_guest
	{
		guest_lib
		cat <<EOF
g='nic pci:00:07.0/q0 | pcap-write /tmp/q0.pcap'
for q in 1 2 3; do g="\$g ; nic pci:00:07.0/q\$q | pcap-write /tmp/q\$q.pcap"; done
snb-run -n g --restart=on-failure "\$g" 2>/tmp/err &
pid=\$!
G=g
qctr() {	# Q NAME: counter NAME of queue Q's nic in graph \$G
	snb-top --once -i 0.1 \$G 2>/dev/null | grep "^ *nic-pci_00_07.0_q\$1 " |
	    sed -n "s/.* \$2=\([0-9]*\).*/\1/p"
}
qpid() {
	snb-top --once -i 0.1 g 2>/dev/null | awk -v l=nic-pci_00_07.0_q\$1 '\$1 == l { print \$3 }'
}
total() {	# [NAME]: rx-packets (or NAME) over the queues
	t=0
	for q in 0 1 2 3; do t=\$((t + \$(qctr \$q \${1:-rx-packets}))); done
	echo \$t
}
all_open() {
	for q in 0 1 2 3; do
		i=0
		until [ -n "\$(qctr \$q rx-packets)" ]; do
			sleep 0.2; i=\$((i + 1))
			[ \$i -lt 300 ] || { echo "q\$q did not open"; cat /tmp/err; exit 1; }
		done
	done
}
all_open
before="\$(qpid 0) \$(qpid 1) \$(qpid 2) \$(qpid 3)"
echo SNB-READY
i=0
until [ "\$(total)" -ge $n1 ]; do sleep 0.5; i=\$((i + 1)); [ \$i -lt 240 ] || break; done
echo "phase1 total=\$(total)"
kill -KILL \$(qpid 1)
echo SNB-KILLED
i=0
until [ "\$(total)" -ge $((n1 + n2)) ] 2>/dev/null; do sleep 0.5; i=\$((i + 1)); [ \$i -lt 240 ] || break; done
sleep 1
after="\$(qpid 0) \$(qpid 1) \$(qpid 2) \$(qpid 3)"
echo "pids before: \$before after: \$after"
snb-top --once -i 0.1 g
kill -INT \$pid
wait \$pid
cat /tmp/err
echo "bus-master-after=\$(master 0000:00:07.0)"
t='nic pci:00:07.0/q0 | nic pci:00:07.0/q0'
for q in 1 2 3; do t="\$t ; nic pci:00:07.0/q\$q | nic pci:00:07.0/q\$q"; done
snb-run -n t "\$t" 2>/tmp/err &
pid=\$!
G=t
all_open
echo SNB-TX-READY
i=0
until [ "\$(total tx-packets)" -ge $n3 ]; do sleep 0.5; i=\$((i + 1)); [ \$i -lt 240 ] || break; done
sleep 1
snb-top --once -i 0.1 t | sed 's/^/TX /'
kill -INT \$pid
wait \$pid
cat /tmp/err
echo "bus-master-after-tx=\$(master 0000:00:07.0)"
for q in 0 1 2 3; do echo "PCAP q\$q \$(od -An -tx1 -v /tmp/q\$q.pcap | tr -d ' \n')"; done
EOF
	} > "$T/guest.sh"
	ip netns add "$NS"
	ip netns exec "$NS" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
	    net.ipv6.conf.default.disable_ipv6=1
	"$VM/run-guest" -n "$NS" -Q 4 -t 400 "$T/guest.sh" "$T/console.log" \
	    > "$T/guest.out" 2>&1 &
	GUEST=$!
	wait_console SNB-READY
	sent0=$(ip netns exec "$NS" cat /sys/class/net/virtioq/statistics/tx_packets)
	ip netns exec "$NS" python3 "$BATS_TEST_DIRNAME/tools/flows.py" send virtioq $n1 64
	wait_console SNB-KILLED
	# Frames n1 to n1 + n2 - 1, while q1 is down and restarting.
	ip netns exec "$NS" python3 "$BATS_TEST_DIRNAME/tools/flows.py" send virtioq $((n1 + n2)) 64 $n1
	sent=$(ip netns exec "$NS" cat /sys/class/net/virtioq/statistics/tx_packets)
	# Transmit: frames 0 to n3 - 1 again, sent back by the pairs.
	wait_console SNB-TX-READY
	rx0=$(ip netns exec "$NS" cat /sys/class/net/virtioq/statistics/rx_packets)
	ip netns exec "$NS" tcpdump -i virtioq -Q in -nn -s 4096 -U \
	    --immediate-mode -Z root -w "$T/tx.pcap" 2> "$T/cap.err" &
	CAP=$!
	for i in $(seq 100); do
		grep -q "listening on" "$T/cap.err" && break
		sleep 0.05
	done
	sleep 0.3
	ip netns exec "$NS" python3 "$BATS_TEST_DIRNAME/tools/flows.py" send virtioq $n3 64
	rc=0
	wait "$GUEST" || rc=$?
	GUEST=""
	c=$(ip netns exec "$NS" cat /sys/class/net/virtioq/statistics/rx_packets)
	stop_capture "$T/tx.pcap" $((c - rx0))
	grep -v "^PCAP" "$T/guest.out"
	[ "$rc" -eq 0 ]
	for q in 0 1 2 3; do
		sed -n "s/^PCAP q$q //p" "$T/guest.out" | python3 -c \
		    'import sys; sys.stdout.buffer.write(bytes.fromhex(sys.stdin.read().strip()))' \
		    > "$T/q$q.pcap"
		tshark -r "$T/q$q.pcap" -T fields -e ip.src -e udp.srcport \
		    -e udp.payload 2>/dev/null > "$T/q$q.txt"
		files="$files $T/q$q.txt"
	done
	run python3 "$BATS_TEST_DIRNAME/tools/flows.py" check $((n1 + n2)) $files
	echo "$output"
	[ "$status" -eq 0 ]
	# Every queue had flows; its counter is what its file holds; the
	# counters add up to what the host's kernel sent into the tap.
	echo "the tap sent $((sent - sent0)) frames to the guest"
	[ $((sent - sent0)) -eq $((n1 + n2)) ]
	for q in 0 1 2 3; do
		c=$(grep "^ *nic-pci_00_07.0_q$q " "$T/guest.out" | sed -n 's/.* rx-packets=\([0-9]*\).*/\1/p')
		echo "q$q: rx-packets=$c"
		[ "$c" -gt 0 ]
		echo "$output" | grep -q "q$q.txt $c frames"
		grep "^ *nic-pci_00_07.0_q$q " "$T/guest.out" | grep -q "drop-ring-full=0 drop-oversize=0"
		sum=$((sum + c))
	done
	[ "$sum" -eq $((n1 + n2)) ]
	sum=0
	# q1 was restarted (a new pid), the others kept theirs.
	b=$(sed -n 's/^pids before: \(.*\) after: .*/\1/p' "$T/guest.out")
	a=$(sed -n 's/^pids before: .* after: \(.*\)/\1/p' "$T/guest.out")
	set -- $b
	[ "$(echo "$a" | awk '{ print $1, $3, $4 }')" = "$1 $3 $4" ]
	[ "$(echo "$a" | awk '{ print $2 }')" != "$2" ]
	[ -n "$(echo "$a" | awk '{ print $2 }')" ]
	grep -q "1 restart\b" "$T/guest.out"
	grep -q "bus-master-after=0" "$T/guest.out"
	# Transmit: what the host captured, every frame once; the tap's own
	# count of what arrived from the guest; per pair, tx = rx.
	tshark -r "$T/tx.pcap" -T fields -e ip.src -e udp.srcport \
	    -e udp.payload 2>/dev/null > "$T/tx.txt"
	run python3 "$BATS_TEST_DIRNAME/tools/flows.py" check $n3 "$T/tx.txt"
	echo "$output"
	[ "$status" -eq 0 ]
	echo "$output" | grep -q "tx.txt $n3 frames"
	c=$(ip netns exec "$NS" cat /sys/class/net/virtioq/statistics/rx_packets)
	echo "tap received $((c - rx0)) frames from the guest"
	[ $((c - rx0)) -eq "$n3" ]
	for q in 0 1 2 3; do
		c=$(grep "^TX *nic-pci_00_07.0_q$q " "$T/guest.out" | sed -n 's/.* rx-packets=\([0-9]*\).*/\1/p')
		tx=$(grep "^TX *nic-pci_00_07.0_q$q " "$T/guest.out" | sed -n 's/.* tx-packets=\([0-9]*\).*/\1/p')
		echo "q$q: rx-packets=$c tx-packets=$tx"
		[ "$tx" -eq "$c" ]
		[ "$tx" -eq 0 ] || busy=$((busy + 1))
		sum=$((sum + tx))
		grep "^TX *nic-pci_00_07.0_q$q " "$T/guest.out" | grep -q "drop-ring-full=0 drop-oversize=0 drop-kernel=0 drop-tx-error=0 drop-link-down=0"
	done
	[ "$sum" -eq "$n3" ]
	[ "$busy" -ge 2 ]
	grep -q "bus-master-after-tx=0" "$T/guest.out"
}
