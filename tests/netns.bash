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
