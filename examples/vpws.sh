#!/bin/sh
# examples/vpws.sh [BUILD]: a point-to-point L2 VPN (VPWS) between two
# sites, snb at both ends: each site's customer Ethernet segment is carried
# whole to the other in a keyed GRE pseudowire over IPv6, encrypted with
# ESP (AES-128-GCM), through a core router.
#
# Site graphs and configurations: examples/l2vpn/vpws-{a,b}.{graph,pw,sa}.
# The layout (namespaces, addresses): examples/l2vpn/sites.sh.  The two
# customer hosts, 10.99.0.1 and 10.99.0.2, are on one Ethernet segment as
# far as they know: they ping each other (ARP across the VPN first).
# Prints the pseudowire's, ESP's and neighbour discovery's counters; exits
# non-zero if an echo went unanswered.  Needs root.
. "$(dirname "$0")/l2vpn/sites.sh"

site a 1
site b 2
wait_resolved a
wait_resolved b
fail=0
ping_all a b || fail=1
echo "== counters (snb-top --once vpws-a, vpws-b)"
counters a p e n
counters b p e n
if [ $fail -eq 0 ]; then
	echo "== all pings answered, through GRE in ESP both ways"
else
	echo "== some pings failed"
	exit 1
fi
