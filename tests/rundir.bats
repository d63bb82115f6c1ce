#!/usr/bin/env bats
# The run directory, rings in hugetlbfs, and stale graphs (snb-run killed):
# shown by snb-ps, removed by snb-ctl GRAPH clean and snb-run --clean, and
# replaced by a graph of the same name.  graphdir (tests/tools/graphdir.c)
# is a graph directory without a graph: it checks libring/graphdir.c apart
# from snb-run.
load helpers

BG=""		# background pids, killed in teardown

setup() {
	export SNB_RUN_DIR="/dev/shm/snb-bats-$$-$BATS_TEST_NUMBER"
	export SNB_HUGE_DIR=none
	T="$BATS_TEST_TMPDIR"
	HUGE_MNT="" HUGE_OLD=""
}

teardown() {
	for p in $BG; do kill -9 "$p" 2>/dev/null || true; done
	for p in $BG; do wait "$p" 2>/dev/null || true; done
	left=""
	if [ -n "$HUGE_MNT" ]; then
		left=$(ls -A "$HUGE_MNT/snb-$(id -u)" 2>/dev/null)
		rm -rf "${HUGE_MNT:?}"/*
		umount "$HUGE_MNT"
	fi
	[ -z "$HUGE_OLD" ] || echo "$HUGE_OLD" > /proc/sys/vm/nr_hugepages
	if [ -d "$SNB_RUN_DIR" ]; then
		left="$left$(ls -A "$SNB_RUN_DIR")"
		rm -rf "$SNB_RUN_DIR"
	fi
	[ -z "$left" ] || { echo "left behind: $left"; return 1; }
}

# Huge pages free for new mappings (free, less those promised).
huge_avail() {
	awk '/HugePages_Free/ {f = $2} /HugePages_Rsvd/ {r = $2} END {print f - r}' /proc/meminfo
}

# Huge pages the files of our mount hold (hugetlbfs counts a file's pages
# in its blocks): what other graphs on the machine take does not count.
huge_held() {
	find "$HUGE_MNT" -type f -printf '%b\n' | awk -v kb="$(awk \
	    '/Hugepagesize/ { print $2 }' /proc/meminfo)" \
	    '{ b += $1 } END { print b / (kb * 2) }'
}

# huge_mount [OPTIONS]: hugetlbfs on $T/huge (without size= unless given)
# for SNB_HUGE_DIR.
huge_mount() {
	mkdir -p "$T/huge"
	mount -t hugetlbfs ${1:+-o "$1"} none "$T/huge" || return 1
	HUGE_MNT="$T/huge"
	export SNB_HUGE_DIR="$T/huge"
}

# Reserve 64 more huge pages (teardown gives them back) and mount
# hugetlbfs; skip the test if the system will not.
huge_setup() {
	[ "$(id -u)" = 0 ] || skip "needs root for huge pages"
	HUGE_OLD=$(cat /proc/sys/vm/nr_hugepages)
	echo $((HUGE_OLD + 64)) > /proc/sys/vm/nr_hugepages || skip "cannot reserve huge pages"
	[ "$(huge_avail)" -ge 16 ] || skip "could not reserve 16 free huge pages"
	huge_mount "${1:-}" || skip "cannot mount hugetlbfs"
}

# graphdir_start NAME [RING...]: a graph directory held by a process.
graphdir_start() {
	graphdir "$@" > "$T/gd-$1" 2> "$T/gd-$1.err" 3>&- &
	GD=$!
	BG="$BG $GD"
	for i in $(seq 100); do
		grep -q ready "$T/gd-$1" 2>/dev/null && return 0
		kill -0 $GD 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# snb_run_bg NAME GRAPH: start a graph that runs until stopped, wait until
# its stages run; RUN_PID and KIDS are its snb-run and stages.
snb_run_bg() {
	snb-run -n "$1" "$2" 2>> "$T/err-$1" 3>&- &
	RUN_PID=$!
	BG="$BG $RUN_PID"
	wait_stages "$1" "$(echo "$2" | tr '|' '\n' | wc -l)"
	KIDS=$(children_of $RUN_PID)
	BG="$BG $KIDS"
}

# kill_run: SIGKILL snb-run; its stages follow (SIGTERM from the kernel).
kill_run() {
	kill -9 "$RUN_PID"
	wait "$RUN_PID" 2>/dev/null || true
	for i in $(seq 100); do
		alive=0
		for k in $KIDS; do kill -0 "$k" 2>/dev/null && alive=1; done
		[ $alive = 0 ] && return 0
		sleep 0.05
	done
	return 1
}

fstype() {
	stat -f -c %T "$1"
}

# True if every directory given is empty.
empty() {
	for d in "$@"; do
		[ -z "$(ls -A "$d")" ] || { echo "$d holds: $(ls -A "$d")"; return 1; }
	done
}

@test "the run directory is refused if another user owns it" {
	mkdir -m 0700 "$SNB_RUN_DIR"
	chown nobody "$SNB_RUN_DIR" || skip "cannot chown"
	run snb-ps
	[ "$status" -eq 1 ]
	assert_output_has "$SNB_RUN_DIR: owned by uid $(id -u nobody), not by us"
	# Every tool says it is the run directory (snb-run said the path
	# alone, and SNB_RUN_DIR was not to be guessed from it).
	for t in "snb-ps" "snb-top -1" "snb-ctl g show" "snb-run source|sink"; do
		run $t
		echo "$t: $status: $output"
		[ "$status" -eq 1 ]
		case "$output" in
		"${t%% *}: run directory: $SNB_RUN_DIR: owned by uid $(id -u nobody), not by us"*) ;;
		*) return 1 ;;
		esac
	done
	chown root "$SNB_RUN_DIR"
}

@test "graphdir: rings in hugetlbfs mounted without size=, small files in tmpfs" {
	huge_setup
	graphdir_start h 'a:out=b:in'
	[ -L "$SNB_RUN_DIR/h/rings" ]
	[ "$(fstype "$SNB_RUN_DIR/h/rings/")" = hugetlbfs ]
	[ "$(fstype "$SNB_RUN_DIR/h/rings/a:out=b:in")" = hugetlbfs ]
	[ "$(fstype "$SNB_RUN_DIR/h/snb-run.pid")" = tmpfs ]
	# 512 slots of 10 KB: 3 pages of 2 MB (4 KB pages would be smaller).
	[ "$(stat -c %s "$SNB_RUN_DIR/h/rings/a:out=b:in")" -eq $((3 * 2048 * 1024)) ]
	[ "$(huge_held)" -eq 3 ]
	run snb-ps h
	assert_output_has "running hugetlbfs (2048 kB pages) $T/huge/snb-$(id -u)/h."
	kill -TERM $GD
	wait $GD
	empty "$SNB_RUN_DIR" "$T/huge/snb-$(id -u)"
	[ "$(huge_held)" -eq 0 ]
}

@test "graphdir: rings stay in tmpfs with SNB_HUGE_DIR=none or no free huge pages" {
	[ "$(id -u)" = 0 ] || skip "needs root to mount hugetlbfs"
	if [ "$(huge_avail)" -eq 0 ]; then
		huge_mount || skip "cannot mount hugetlbfs"
		graphdir_start none0
		[ -d "$SNB_RUN_DIR/none0/rings" ]
		[ ! -L "$SNB_RUN_DIR/none0/rings" ]
		kill -TERM $GD; wait $GD
		umount "$HUGE_MNT"; HUGE_MNT=""
	fi
	# size=6M holds one ring (3 pages); the second graph finds it full.
	huge_setup size=6M
	graphdir_start full1 'a:out=b:in'
	[ -L "$SNB_RUN_DIR/full1/rings" ]
	graphdir_start full2
	[ -d "$SNB_RUN_DIR/full2/rings" ]
	[ ! -L "$SNB_RUN_DIR/full2/rings" ]
	run snb-ps --json full2
	[ "$(echo "$output" | jq -r '.graphs[0].rings')" = "tmpfs $SNB_RUN_DIR/full2/rings" ]
	SNB_HUGE_DIR=none graphdir_start none1
	[ "$(fstype "$SNB_RUN_DIR/none1/rings/")" = tmpfs ]
	[ ! -L "$SNB_RUN_DIR/none1/rings" ]
	kill -TERM $BG
	wait $BG
	BG=""
}

@test "graphdir: a killed holder leaves a stale graph; snb-ctl clean removes it, rings and all" {
	huge_setup
	graphdir_start live 'a:out=b:in'
	live=$GD
	graphdir_start k 'a:out=b:in' 'b:out=c:in'
	kill -9 $GD
	wait $GD || true
	run snb-ps k
	assert_output_has "stale   hugetlbfs"
	[ "$(snb-ps --json k | jq '.graphs[0].stale')" = true ]
	[ "$(snb-ps --json live | jq '.graphs[0].stale')" = false ]
	run snb-ctl k show
	[ "$status" -eq 1 ]
	assert_output_has "graph 'k' is stale (its snb-run is gone): remove it with snb-ctl k clean"
	run snb-ctl live clean
	[ "$status" -eq 1 ]
	assert_output_has "graph 'live' is running (pid $live), not stale: not removed"
	run snb-ctl k clean
	[ "$status" -eq 0 ]
	assert_output_has "snb: removed stale graph k"
	[ "$(ls -A "$SNB_RUN_DIR")" = live ]
	[ "$(ls -A "$T/huge/snb-$(id -u)" | wc -l)" -eq 1 ]
	run snb-ctl k clean
	[ "$status" -eq 1 ]
	assert_output_has "no graph 'k'"
	kill -TERM $live
	wait $live
}

@test "graphdir: a graph replaces a stale one of its name, unexpected files and all" {
	graphdir_start same 'a:out=b:in'
	kill -9 $GD
	wait $GD || true
	d="$SNB_RUN_DIR/same"
	touch "$d/ctl" "$d/x.stage" "$d/x.stage.new" "$d/unexpected" "$d/rings/extra"
	mkdir -p "$d/dir/sub" && touch "$d/dir/sub/file"
	mkfifo "$d/fifo"
	mkdir "$T/outside" && touch "$T/outside/keep"
	ln -s "$T/outside" "$d/link"
	graphdir_start same
	grep -q "^snb: removed stale graph same$" "$T/gd-same.err"
	[ "$(ls -A "$d" | sort | tr '\n' ' ')" = "rings snb-run.pid " ]
	[ -z "$(ls -A "$d/rings")" ]
	[ -e "$T/outside/keep" ]
	[ "$(ls -A "$SNB_RUN_DIR")" = same ]
	kill -TERM $GD
	wait $GD
}

@test "snb-run: rings in hugetlbfs, stage files and socket in tmpfs, snb-ps says where" {
	huge_setup
	snb_run_bg h 'source --count 1000 --hold | sink'
	[ -L "$SNB_RUN_DIR/h/rings" ]
	for f in "$SNB_RUN_DIR"/h/rings/*; do [ "$(fstype "$f")" = hugetlbfs ]; done
	[ -n "$(ls "$SNB_RUN_DIR"/h/rings/)" ]
	for f in "$SNB_RUN_DIR"/h/*.stage "$SNB_RUN_DIR/h/ctl" "$SNB_RUN_DIR/h/snb-run.pid"; do
		[ "$(fstype "$f")" = tmpfs ]
	done
	run snb-ps --json h
	case "$(echo "$output" | jq -r '.graphs[0].rings')" in
	"hugetlbfs (2048 kB pages) $T/huge/snb-$(id -u)/h."*) ;;
	*) echo "$output"; false ;;
	esac
	snb-ctl h stop
	wait $RUN_PID
	empty "$SNB_RUN_DIR" "$T/huge/snb-$(id -u)"
}

@test "snb-run: a huge page pool too small for the whole graph puts all its rings in tmpfs" {
	huge_setup "size=8M"	# 4 pages: one 3-page ring fits, two do not
	snb_run_bg small 'source --count 1000 --hold | filter ip | sink'
	[ ! -L "$SNB_RUN_DIR/small/rings" ]
	for f in "$SNB_RUN_DIR"/small/rings/*; do [ "$(fstype "$f")" = tmpfs ]; done
	grep -q "not enough free huge pages for the graph's rings: rings in tmpfs" "$T/err-small"
	snb-ctl small show | grep -q "^rings tmpfs "
	snb-ctl small stop
	wait $RUN_PID
	empty "$SNB_RUN_DIR" "$T/huge/snb-$(id -u)"
}

@test "snb-run removes the run directory it made when its graph ends, and keeps one that was there" {
	[ ! -e "$SNB_RUN_DIR" ]
	snb-run -n made 'source --count 100 --hold | sink' 2> "$T/err" 3>&- &
	RUN_PID=$!
	BG="$BG $RUN_PID"
	# Not snb-ps (wait_stages): it would make the directory first.
	wait_for test -S "$SNB_RUN_DIR/made/ctl"
	# Another graph in it meanwhile: it stays while that one runs.
	snb-run -n other 'source --count 100 --hold | sink' 2> "$T/err2" 3>&- &
	OTHER=$!
	BG="$BG $OTHER"
	wait_for test -S "$SNB_RUN_DIR/other/ctl"
	snb-ctl made stop
	wait $RUN_PID
	[ -d "$SNB_RUN_DIR/other" ]
	snb-ctl other stop
	wait $OTHER
	# The first one made it, but left it to the other, which had not:
	# it stays (empty).
	empty "$SNB_RUN_DIR"
	rmdir "$SNB_RUN_DIR"
	# Alone: it goes with the graph; a graph that cannot start too.
	snb-run -n alone 'source --count 100 | sink'
	[ ! -e "$SNB_RUN_DIR" ]
	run snb-run -n bad 'source --count 1 | pcap-write /nonexistent/x.pcap'
	[ "$status" -ne 0 ]
	[ ! -e "$SNB_RUN_DIR" ]
	# snb-ps and snb-ctl leave none behind either.
	snb-ps > /dev/null
	run snb-ctl nosuch show
	[ ! -e "$SNB_RUN_DIR" ]
	# There before: it stays.
	mkdir -m 0700 "$SNB_RUN_DIR"
	snb-run -n kept 'source --count 100 | sink'
	[ -d "$SNB_RUN_DIR" ]
	empty "$SNB_RUN_DIR"
}

@test "snb-run removes its directory in the hugetlbfs mount if it made it, and keeps one that was there" {
	huge_setup
	u=$(id -u)
	[ ! -e "$T/huge/snb-$u" ]
	snb-run -n hmade 'source --count 100 --hold | sink' 2> "$T/err" 3>&- &
	RUN_PID=$!
	BG="$BG $RUN_PID"
	wait_for test -S "$SNB_RUN_DIR/hmade/ctl"
	[ -L "$SNB_RUN_DIR/hmade/rings" ]
	[ -d "$T/huge/snb-$u" ]
	snb-ctl hmade stop
	wait $RUN_PID
	[ ! -e "$T/huge/snb-$u" ]
	[ ! -e "$SNB_RUN_DIR" ]
	mkdir -m 0700 "$T/huge/snb-$u"
	snb-run -n hkept 'source --count 100 | sink'
	[ -d "$T/huge/snb-$u" ]
	empty "$T/huge/snb-$u"
}

@test "snb-run killed: snb-ps shows it stale, snb-ctl GRAPH clean removes all of it" {
	snb_run_bg k 'source --count 1000 --hold | sink'
	kill_run
	run snb-ps k
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | grep -c ' stale ')" -eq 2 ]
	[ "$(snb-ps --json k | jq '.graphs[0].stale')" = true ]
	run snb-ctl k clean
	[ "$status" -eq 0 ]
	assert_output_has "removed stale graph k"
	# The killed snb-run had made the run directory: gone with it.
	[ ! -e "$SNB_RUN_DIR" ]
}

@test "snb-run killed: snb-run --clean leaves no run directory, hugetlbfs directory neither" {
	huge_setup
	snb_run_bg a 'source --count 1000 --hold | sink'
	[ -L "$SNB_RUN_DIR/a/rings" ]
	kill_run
	run snb-run --clean
	echo "$output"
	[ "$status" -eq 0 ]
	assert_output_has "removed stale graph a"
	[ ! -e "$SNB_RUN_DIR" ]
	[ ! -e "$T/huge/snb-$(id -u)" ]
}

@test "snb-run killed: snb-run --clean without hugetlbfs leaves no run directory" {
	snb_run_bg a 'source --count 1000 --hold | sink'
	kill_run
	run snb-run --clean
	echo "$output"
	[ "$status" -eq 0 ]
	assert_output_has "removed stale graph a"
	[ ! -e "$SNB_RUN_DIR" ]
	# Nothing stale: a run directory of someone else's making is kept.
	mkdir -m 0700 "$SNB_RUN_DIR"
	run snb-run --clean
	[ "$status" -eq 0 ]
	[ -d "$SNB_RUN_DIR" ]
}

@test "snb-run --clean removes every stale graph, hugetlbfs rings too, and keeps a live one" {
	huge_setup
	snb_run_bg a 'source --count 1000 --hold | sink'
	kill_run
	snb_run_bg b 'source --count 1000 --hold | filter ip | sink'
	kill_run
	snb_run_bg live 'source --count 1000 --hold | sink'
	run snb-ctl live clean
	[ "$status" -eq 1 ]
	assert_output_has "graph 'live' is running (pid $RUN_PID)"
	run snb-run --clean
	[ "$status" -eq 0 ]
	assert_output_has "removed stale graph a"
	assert_output_has "removed stale graph b"
	[ "$(ls -A "$SNB_RUN_DIR")" = live ]
	[ "$(ls -A "$T/huge/snb-$(id -u)" | wc -l)" -eq 1 ]
	snb-ctl live stop
	wait $RUN_PID
	empty "$SNB_RUN_DIR" "$T/huge/snb-$(id -u)"
}

@test "snb-run over a stale graph of the same name: it starts and nothing of either is left" {
	snb_run_bg same 'source --count 1000 --hold | sink'
	kill_run
	d="$SNB_RUN_DIR/same"
	touch "$d/unexpected" "$d/rings/extra"
	mkdir -p "$d/dir/sub" && touch "$d/dir/sub/file"
	run snb-run -n same 'source --count 1000 | sink --expect 1000'
	[ "$status" -eq 0 ]
	assert_output_has "removed stale graph same"
	[ ! -e "$SNB_RUN_DIR" ]
}
