# blkmirror monitor at its start reports each running mirror's present
# trouble (not its old events); a mirror that starts later is followed from
# its first event; one that stops is Stopped; an --exec program that hangs
# does not hold the alerts back.  --oneshot reports once and exits 0.
. "$(dirname "$0")/lib.sh"
mkimg 64 a b c d
bm label -n m0 "$T/a" "$T/b"
bm label -n m1 "$T/c" "$T/d"
rm "$T/d"                       # m1 starts degraded: d is missing
serve m1
cat >"$T/prog" <<PROG
#!/bin/sh
echo "\$*" >>"$T/prog.out"
exec sleep 300
PROG
chmod +x "$T/prog"
wait_for() { # wait_for FILE PATTERN
  for _ in $(seq 1 300); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  echo "--- $1:" >&2; cat "$1" >&2
  fail "no /$2/ in $1"
}
bm monitor --exec "$T/prog" --interval 0.2 >"$T/mon.out" 2>"$T/mon.err" &
PIDS+=("$!")
wait_for "$T/mon.err" "following 1 running mirror"
wait_for "$T/mon.out" " m1 warning Degraded - 1 of 2 components ACTIVE$"
wait_for "$T/mon.out" " m1 warning ComponentAbsent $T/d "
# not its history: m1's Started happened before the monitor
grep -q " m1 info Started" "$T/mon.out" && fail "old events replayed: $(cat "$T/mon.out")"
# a mirror started later: followed from its first event
serve m0
wait_for "$T/mon.out" " m0 info Started - 2 components, "
stop m1
wait_for "$T/mon.out" " m1 notice Stopped - its server is gone$"
# the programs ran (each still sleeping) with EVENT MIRROR [COMPONENT]
wait_for "$T/prog.out" "^Degraded m1$"
wait_for "$T/prog.out" "^ComponentAbsent m1 $T/d$"
wait_for "$T/prog.out" "^Started m0$"
wait_for "$T/prog.out" "^Stopped m1$"
# --oneshot: a named mirror that is not running is Stopped; a complete one
# says nothing; exit 0 either way
out=$(bm monitor --oneshot m1 m0) || fail "--oneshot exited $?"
[ "$out" != "${out/ m1 notice Stopped - it is not running/}" ] || fail "oneshot m1: $out"
[ "$(grep -c . <<<"$out")" -eq 1 ] || fail "oneshot said more: $out"
out=$(bm monitor --oneshot) || fail "--oneshot exited $?"
[ -z "$out" ] || fail "oneshot of all said: $out"
# usage errors: exit 2, one line; an unknown mirror: exit 1
expect_usage "usage: blkmirror monitor" bm monitor --bogus
expect_usage "interval '0' is not a time from 0.1s" bm monitor --interval 0 --oneshot
expect_usage "interval 'x' is not" bm monitor --interval x
expect_usage "needs a value" bm monitor --exec
expect_usage "invalid mirror name" bm monitor --oneshot 'a/b'
expect_error "no mirror named 'nope'" bm monitor --oneshot nope
stop m0
