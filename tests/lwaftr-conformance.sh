#!/bin/sh
# tests/lwaftr-conformance.sh [-v] [-b BINDIR] [-d DIR] [CASE...]
#
# Run the lwAFTR conformance vectors (SHARED/conformance/lwaftr/cases.tsv,
# or DIR/cases.tsv: snb's own cases are in tests/lwaftr, see its README)
# through snb-run:
#
#	pcap-read IN4 | [v4] lw: lwaftr --deterministic CONF [v4] | pcap-write OUT4
#	pcap-read IN6 | [v6] @lw [v6] | pcap-write OUT6
#
# and compare, per side, the packet records byte for byte with the
# expected pcap (the file headers differ only in snaplen) and the
# counters lwaftr writes with --counters-out with the case's .counters
# file exactly.  CASE is a case number (1-based row of cases.tsv, header
# excluded) or a substring of its name; none means all.  Prints TAP;
# exits 0 when every case selected passes.
#
# SHARED is $SNB_SHARED, else ../shared next to the repository.  BINDIR
# is where snb-run is found: -b, else PATH (tests/run puts the build's
# bin/ first), else build/bin.  -v shows tcpdump diffs of failing cases.
#
# Errata: tests/lwaftr/errata.tsv replaces the expected output of a side
# of a shared case whose file contradicts the reference's own rules with
# the records of other files of the shared set (the file says why).
set -u
repo=$(cd "$(dirname "$0")/.." && pwd)
shared=${SNB_SHARED:-$repo/../shared}
dir=$shared/conformance/lwaftr
verbose=0 bin= own=

# --count [DIR]: how many cases there are (the bats files check their list).
if [ "${1:-}" = "--count" ]; then
	grep -vc '^#' "${2:-$dir}/cases.tsv"
	exit $?
fi

while getopts vb:d: opt; do
	case $opt in
	v) verbose=1 ;;
	b) bin=$(cd "$OPTARG" && pwd) || exit 2 ;;
	d) dir=$(cd "$OPTARG" && pwd) || exit 2; own=1 ;;
	*) echo "usage: $0 [-v] [-b BINDIR] [-d DIR] [CASE...]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
if [ -z "$bin" ]; then
	if command -v snb-run >/dev/null 2>&1; then
		bin=$(dirname "$(command -v snb-run)")
	else
		bin=$repo/build/bin
	fi
fi
[ -f "$dir/cases.tsv" ] || { echo "no $dir/cases.tsv (set SNB_SHARED)" >&2; exit 2; }
[ -x "$bin/snb-lwaftr" ] || { echo "no $bin/snb-lwaftr" >&2; exit 2; }
: "${SNB_RUN_DIR:=/dev/shm/snb-lwconf-$$}"
export SNB_RUN_DIR
tmp=$(mktemp -d /tmp/snb-lwconf.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
tab=$(printf '\t')

# The packet records of a pcap file: all but its 24-byte file header.
records() {
	tail -c +25 "$1"
}

# The records side $2 (4 or 6) of case $1 must give: an erratum's for a
# shared case, else those of file $3.
want_records() {
	if [ -z "$own" ]; then
		fix=$(awk -F'\t' -v n="$1" -v s="v$2" \
		    '$1 == n && $2 == s { print $3 }' \
		    "$repo/tests/lwaftr/errata.tsv")
		if [ -n "$fix" ]; then
			for f in $fix; do records "$dir/$f"; done
			return
		fi
	fi
	records "$3"
}

dump() {
	tcpdump -r "$1" -nn -e -xx 2>/dev/null
}

selected() {	# case number $1, name $2, then the CASE arguments
	n=$1 name=$2
	shift 2
	[ $# -eq 0 ] && return 0
	for want in "$@"; do
		case $want in
		*[!0-9]*) case $name in *"$want"*) return 0 ;; esac ;;
		*) [ "$want" -eq "$n" ] && return 0 ;;
		esac
	done
	return 1
}

# run_case N NAME CONF IN4 IN6 OUT4 OUT6 COUNTERS: 0 if it passes.
run_case() {
	n=$1 name=$2 conf=$3 in4=$4 in6=$5 out4=$6 out6=$7 counters=$8
	d=$tmp/$n
	mkdir -p "$d"
	why=
	# Empty fields came as "-" (see below); no file means empty.pcap.
	for v in in4 in6 out4 out6; do
		eval f=\$$v
		if [ "$f" = - ]; then f=$dir/empty.pcap; else f=$dir/$f; fi
		eval $v=\$f
	done
	"$bin/snb-run" -n "lwconf-$$-$n" "pcap-read '$in4' | \
	    [v4] lw: lwaftr --deterministic --counters-out '$d/counters' \
	    '$dir/$conf' [v4] | pcap-write --timestamps zero '$d/out4.pcap'
	    pcap-read '$in6' | [v6] @lw [v6] | \
	    pcap-write --timestamps zero '$d/out6.pcap'" > "$d/log" 2>&1 ||
		why="snb-run failed: $(tail -3 "$d/log" | tr '\n' ' ')"
	if [ -z "$why" ]; then
		for side in 4 6; do
			eval want=\$out$side
			want_records "$name" $side "$want" > "$d/want$side.rec"
			records "$d/out$side.pcap" > "$d/got$side.rec" 2>/dev/null
			cmp -s "$d/want$side.rec" "$d/got$side.rec" && continue
			why="${why}v$side output differs; "
			if [ $verbose = 1 ]; then
				{ head -c 24 "$want"; cat "$d/want$side.rec"; } \
				    > "$d/want$side.pcap"
				dump "$d/want$side.pcap" > "$d/want$side"
				dump "$d/out$side.pcap" > "$d/got$side"
				diff -u "$d/want$side" "$d/got$side" | sed 's/^/# /'
			fi
		done
		LC_ALL=C sort "$dir/counters/$counters" > "$d/want.counters"
		touch "$d/counters"
		LC_ALL=C sort "$d/counters" > "$d/got.counters"
		if ! cmp -s "$d/want.counters" "$d/got.counters"; then
			why="${why}counters differ: $(diff "$d/want.counters" \
			    "$d/got.counters" | grep '^[<>]' | tr '\n' ' ')"
		fi
	fi
	if [ -z "$why" ]; then
		echo "ok $n - $name"
		return 0
	fi
	echo "not ok $n - $name # $why"
	return 1
}

total=$(grep -vc '^#' "$dir/cases.tsv")
echo "1..$total"
n=0 failed=0
# A tab is white space to read: mark empty fields so none collapse.
grep -v '^#' "$dir/cases.tsv" |
    awk -F'\t' -v OFS='\t' '{ for (i = 1; i <= 7; i++) if ($i == "") $i = "-"; print }' \
    > "$tmp/cases"
while IFS=$tab read -r name conf in4 in6 out4 out6 counters; do
	n=$((n + 1))
	selected "$n" "$name" "$@" || continue
	run_case "$n" "$name" "$conf" "$in4" "$in6" "$out4" "$out6" \
	    "$counters" || failed=$((failed + 1))
done < "$tmp/cases"
rm -rf "$SNB_RUN_DIR"
[ "$failed" -eq 0 ]
