#!/usr/bin/env bats
# Live operation tried as an operator would, under faults: what went
# wrong when swaps, restarts and failures meet.  Each graph runs in the
# background without timeout(1) (bg_wait bounds it); every wait is on a
# condition.
load helpers

@test "a swap or restart after a long run ends a row of quick failures: --max-restarts counts failures in a row" {
	# --max-restarts 1: a second quick failure in a row stops the graph.
	snb-run -n quick --restart=on-failure --max-restarts 1 'source --rate 20k --seq | f: filter udp | sink --check-seq --allow-loss' 2> "$T/err" 3>&- &
	pid=$!
	wait_stages quick 3
	for op in swap restart swap; do
		# Each process of f runs long enough not to be quick (250 ms):
		# a sleep only makes sure of a least age, it asserts nothing.
		sleep 0.5
		if [ $op = swap ]; then
			run timeout 20 snb-ctl quick swap f 'filter ip'
		else
			run timeout 20 snb-ctl quick restart f
		fi
		echo "$output"
		[ "$status" -eq 0 ]
		new=${output##*-> }
		new=${new%%,*}
		# Its successor fails at once: one quick failure, restarted.
		kill -KILL "$new"
		wait_replaced quick f "$new" > /dev/null || { cat "$T/err"; false; }
	done
	cat "$T/err"
	! grep -q "stopping the graph" "$T/err"
	[ "$(grep -c "restarting f in 100 ms" "$T/err")" -eq 3 ]
	snb-ctl quick stop
	bg_wait $pid
	[ "$st" -eq 0 ]
	nothing_left
}
