# Network namespaces and veths for the bats tests that need hosts
# (nic.bats, bridge.bats): each test makes its own and deletes them.

# mkns NS...: namespaces with IPv6 off (so the only frames on a link are
# the ones a test sends) and loopback up.
mkns() {
	local ns
	for ns in "$@"; do
		ip netns add "$ns"
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
		    net.ipv6.conf.default.disable_ipv6=1
		ip -n "$ns" link set lo up
	done
}

# veth NAME_A NS_A NAME_B NS_B: a veth pair, both ends up.
veth() {
	ip link add "$1" netns "$2" type veth peer name "$3" netns "$4"
	ip -n "$2" link set "$1" up
	ip -n "$4" link set "$3" up
}

# netns_teardown NS...: stop the graphs a test started in the background
# ($PIDS: SIGINT, then SIGKILL after 5 s; then any other snb process of
# the test, see stop_snb), delete the namespaces (and so their links), and
# fail if the run directory was not left empty.
netns_teardown() {
	local p i left st=0
	for p in $PIDS; do kill -INT "$p" 2>/dev/null; done
	for p in $PIDS; do
		for i in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	stop_snb || st=1
	for p in "$@"; do ip netns del "$p" 2>/dev/null; done
	if [ -d "$SNB_RUN_DIR" ]; then
		left=$(ls -A "$SNB_RUN_DIR")
		rm -rf "$SNB_RUN_DIR"
		[ -z "$left" ] || { echo "left in run dir: $left"; return 1; }
	fi
	return $st
}
