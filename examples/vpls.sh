#!/bin/sh
# examples/vpls.sh [BUILD]: a multipoint L2 VPN (VPLS) of three sites, snb
# at each: a learning bridge per site joins the customer's Ethernet
# segment with L2TPv3 pseudowires (keyed IPv6 tunnels, 64-bit cookies) to
# the two other sites, a full mesh through a core router.
#
# Site graphs and configurations: examples/l2vpn/vpls-{a,b,c}.{graph,pw}.
# The layout (namespaces, addresses): examples/l2vpn/sites.sh.  The three
# customer hosts, 10.99.0.1 to .3, ping each other; each site's bridge
# then knows the other two hosts behind their pseudowires.  Prints the
# bridges', pseudowires' and neighbour discovery's counters; exits non-zero
# if an echo went unanswered.  Needs root.
. "$(dirname "$0")/l2vpn/sites.sh"

site a 1
site b 2
site c 3
wait_resolved a
wait_resolved b
wait_resolved c
fail=0
ping_all a b c || fail=1
echo "== counters (snb-top --once vpls-a, vpls-b, vpls-c)"
counters a br p n
counters b br p n
counters c br p n
if [ $fail -eq 0 ]; then
	echo "== all pings answered, every site to every site"
else
	echo "== some pings failed"
	exit 1
fi
