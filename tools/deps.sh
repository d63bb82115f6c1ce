#!/bin/sh
# Install the Debian packages snb needs to build, test and benchmark.
# As root it runs apt-get; otherwise it prints the line to run and fails.
pkgs="gcc make libc6-dev libpcap-dev libbsd-dev libxdp-dev libbpf-dev bats tcpdump tshark jq iproute2 procps mandoc ethtool iputils-ping python3 python3-scapy dpdk-dev qemu-system-x86 busybox-static cpio prometheus curl tmux"
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
