# examples/l2vpn/sites.sh: what vpws.sh and vpls.sh share (sourced).
#
# An L2 VPN on one machine: a namespace per provider-edge site (S-NAME),
# running that site's snb graph (NAME.graph in this directory, with its
# pseudowire configuration NAME.pw), a customer host behind each
# (H-NAME), and an IPv6 core router R that joins the sites' core links.
# The graph files name the interfaces as the site's namespace has them:
# 'ac' toward the customer (the attachment circuit), 'core' toward R.
#
#	H-a --- S-a ---.                 customer hosts: 10.99.0.N/24
#	               R (2001:db8::/48)  site N's core: 2001:db8:N::1,
#	H-b --- S-b ---'                  R's side of it: 2001:db8:N::fe
#
# Namespaces and the run directory carry the script's pid; cleanup
# removes them all, Ctrl-C included.  Needs root, iproute2, ethtool, ping.
set -eu
B=$(cd "${1:-build}" && pwd)
export PATH="$B/bin:$PATH"
here=$(cd "$(dirname "$0")" && pwd)/l2vpn
name=$(basename "$0" .sh)
[ "$(id -u)" -eq 0 ] || { echo "$name.sh: needs root (network namespaces)" >&2; exit 1; }
for t in ip ethtool ping snb-run snb-top; do
	command -v "$t" > /dev/null || { echo "$name.sh: needs $t" >&2; exit 1; }
done
id=$$
R=snb$name-R-$id
export SNB_RUN_DIR=/dev/shm/snb-$name-$id
PIDS="" NSS="$R"

cleanup() {
	set +e
	for p in $PIDS; do kill -INT "$p" 2>/dev/null; done
	for p in $PIDS; do wait "$p" 2>/dev/null; done
	for n in $NSS; do ip netns del "$n" 2>/dev/null; done
	rm -rf "$SNB_RUN_DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# mkns NS: a namespace with loopback up and IPv6 off (the kernel of a site
# namespace must not answer on links that snb owns).
mkns() {
	ip netns add "$1"
	NSS="$NSS $1"
	ip netns exec "$1" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
	    net.ipv6.conf.default.disable_ipv6=1
	ip -n "$1" link set lo up
}

# The core router: IPv6 on, forwarding.
mkns "$R"
ip netns exec "$R" sysctl -qw net.ipv6.conf.all.disable_ipv6=0 \
    net.ipv6.conf.default.disable_ipv6=0 net.ipv6.conf.all.forwarding=1

# site N: site N's namespaces, links and graph (N = a, b, c: number 1, 2, 3).
site() {
	n=$1 i=$2
	mkns "snb$name-S$n-$id"
	mkns "snb$name-H$n-$id"
	s=snb$name-S$n-$id h=snb$name-H$n-$id
	ip link add ac netns "$s" type veth peer name eth0 netns "$h"
	ip link add core netns "$s" type veth peer name "r$n" netns "$R"
	for l in "$s ac" "$s core" "$h eth0" "$R r$n"; do
		set -- $l
		ip -n "$1" link set "$2" up
	done
	# Customer hosts send finished frames, as on a real wire.
	ip netns exec "$h" ethtool -K eth0 tx off tso off gso off > /dev/null
	ip -n "$h" addr add "10.99.0.$i/24" dev eth0
	ip -n "$R" addr add "2001:db8:$i::fe/64" dev "r$n" nodad
	echo "== site $n: snb-run -n $name-$n -f examples/l2vpn/$name-$n.graph"
	(cd "$here" && exec ip netns exec "$s" snb-run -n "$name-$n" \
	    -f "$name-$n.graph") &
	PIDS="$PIDS $!"
}

# wait_resolved N: until site N's nd knows the router's MAC.
wait_resolved() {
	j=0
	until snb-top --json -i 0.05 "$name-$1" 2>/dev/null |
	    grep -q '"next-hop-resolved":1'; do
		j=$((j + 1))
		[ $j -lt 200 ] || { echo "$name.sh: site $1's graph did not come up" >&2; exit 1; }
		sleep 0.1
	done
}

# ping_all SITE...: every customer host pings every other; fails if one
# echo is unanswered.
ping_all() {
	fail=0
	for a in "$@"; do
		for b in "$@"; do
			[ "$a" != "$b" ] || continue
			ia=$(site_number "$a") ib=$(site_number "$b")
			printf '== ping from host %s (10.99.0.%s) to host %s (10.99.0.%s): ' \
			    "$a" "$ia" "$b" "$ib"
			# The first answer waits for ARP across the VPN.
			ip netns exec "snb$name-H$a-$id" ping -n -c 1 -W 5 \
			    "10.99.0.$ib" > /dev/null 2>&1 || true
			if out=$(ip netns exec "snb$name-H$a-$id" ping -n -c 3 -i 0.2 \
			    -W 2 "10.99.0.$ib"); then
				echo "$out" | grep 'packets transmitted'
			else
				echo "$out" | grep 'packets transmitted'; fail=1
			fi
		done
	done
	return $fail
}

site_number() {
	case $1 in a) echo 1 ;; b) echo 2 ;; c) echo 3 ;; esac
}

# counters SITE LABEL...: the counters of those stages of SITE's graph.
counters() {
	s=$1
	shift
	for l in "$@"; do
		snb-top --once -i 0.1 "$name-$s" | awk -v l="$l" '$1 == l' |
		    tr ' ' '\n' | grep = | tr '\n' ' ' | sed "s/^/$name-$s $l: /"
		echo
	done
}
