#!/bin/sh
# tools/deps.sh [--list] [SET]: install the Debian packages a set needs
# (the sets nest: each needs all those before it):
#	demo	make demo: build the demo's programs and compare with tcpdump
#	build	every program (snb-nic's AF_XDP back-end: libxdp, libbpf;
#		snb-esp's AES-GCM: Intel's ipsec-mb, amd64 only)
#	check	make check, check-vm and bench: the tests' peers and tools
# The default is check.  As root it runs apt-get; otherwise it prints the
# line to run and fails.  --list prints the set's packages, one a line.
demo="gcc make libc6-dev libpcap-dev libbsd-dev tcpdump"
build="$demo libxdp-dev libbpf-dev libipsec-mb-dev"
check="$build bats tshark jq iproute2 procps strace mandoc ethtool iputils-ping python3 python3-scapy python3-cryptography openssl dpdk-dev qemu-system-x86 busybox-static cpio prometheus curl tmux bird2"

list=0
[ "${1:-}" = --list ] && { list=1; shift; }
case "${1:-check}" in
demo) pkgs=$demo ;;
build) pkgs=$build ;;
check) pkgs=$check ;;
*) echo "deps: unknown set '$1' (demo, build, check)" >&2; exit 2 ;;
esac
if [ $list -eq 1 ]; then
	for p in $pkgs; do echo "$p"; done
	exit 0
fi
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -eq 0 ]; then
	echo "deps: installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null &&
	apt-get install -y -qq --no-install-recommends $missing >/dev/null ||
		{ echo "deps: apt-get install$missing failed" >&2; exit 1; }
else
	echo "deps: missing packages; run as root:" >&2
	echo "  apt-get install -y$missing" >&2
	exit 1
fi
