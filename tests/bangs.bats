#!/usr/bin/env bats
# No check in the bats files may be one that cannot fail.  Bash's set -e
# ignores a command negated with "!", so a line "! grep -q x f" inside a
# test passes whatever grep returns; only the last command of a test or
# function counts through its return status.  Such lines must say
# "! cmd || false" (or "run ! cmd", or an explicit if).

# bare_bangs FILE...: print file:line of every "! cmd" that set -e ignores:
# a command line (with its "\" continuations) or a "do ! cmd; done" body
# that starts with "!" and has no "||", unless the next code line is the
# "}" closing its test or function; and likewise a line of tests joined
# by "&&", "[ a ] && [ b ]".
bare_bangs() {
	awk '
	function flush() { if (pend != "") print pend; pend = "" }
	FNR == 1 { flush(); cont = 0 }
	cont {	# continuation lines of a "!" command
		text = text $0
		if ($0 ~ /\\$/)
			next
		cont = 0
		if (text !~ /\|\|/)
			pend = at
		next
	}
	/^[ \t]*(#.*)?$/ { next }
	/^[ \t]*}[ \t]*$/ { pend = ""; next }
	{ flush() }
	# "[ a ] && [ b ]": set -e ignores a failing "[ a ]" (not the last of
	# its && list), so only "[ b ]" is checked.
	/^[ \t]*\[\[? .*\] && \[/ {
		s = $0
		sub(/.* && /, "", s)	# ends in a test, not "&& break"
		if ($0 !~ /\|\|/ && s ~ /^\[/)
			pend = FILENAME ":" FNR
		next
	}
	/^[ \t]*! / {
		at = FILENAME ":" FNR; text = $0
		if ($0 ~ /\\$/) { cont = 1; next }
		if ($0 !~ /\|\|/)
			pend = at
		next
	}
	/^[ \t]*(for|while|until) .*[ \t;]do[ \t]+! [^;]*;/ {
		s = $0
		sub(/.*[ \t;]do[ \t]+! /, "", s)
		sub(/;.*/, "", s)
		if (s !~ /\|\|/)
			print FILENAME ":" FNR
	}
	END { flush() }
	' "$@"
}

@test "no negated command in a test is ignored by set -e" {
	cd "$BATS_TEST_DIRNAME"
	run bare_bangs *.bats *.bash
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "bare_bangs finds the negations set -e ignores, and only those" {
	f="$BATS_TEST_TMPDIR/sample.bats"
	# Written with printf: a here-document would be read by bats' own
	# preprocessor (its @test lines) and by the scan of this very file.
	printf '%s\n' 'a() {' \
	    '	! grep -q x y' \
	    '	true' \
	    '}' \
	    'b() {' \
	    '	! grep -q x \' \
	    '	    y' \
	    '	! grep -q x y || false' \
	    '	! grep -q x \' \
	    '	    y || false' \
	    '	for k in 1 2; do ! kill -0 "$k"; done' \
	    '	for k in 1 2; do ! kill -0 "$k" || false; done' \
	    '	run ! grep -q x y' \
	    '	if ! grep -q x y; then true; fi' \
	    '	[ -n x ] && [ -n y ]' \
	    '	[ -n x ] && y=1' \
	    '	[ -n x ] && [ -n y ] && break' \
	    '	[ -n x ] && [ -n y ] || false' \
	    '	! grep -q last y' \
	    '}' > "$f"
	run bare_bangs "$f"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "$f:2
$f:6
$f:11
$f:15" ]
	# The check is real: set -e ignores the first line and catches the fix.
	run bash -ec '! true; echo ignored'
	[ "$output" = ignored ]
	run bash -ec '! true || false; echo ignored'
	[ "$status" -eq 1 ]
	[ -z "$output" ]
	run bash -ec '[ -n "" ] && [ -n x ]; echo ignored'
	[ "$output" = ignored ]
}
