# serve, status, list, stop, configure, forget: options anywhere, several
# names where gmirror takes several, --help prints the usage and exits 0,
# a wrong command line is one line and exit 2.
. "$(dirname "$0")/lib.sh"
mkimg 16 a b c d
bm label -n m0 "$T/a" "$T/b"
bm label -n m1 "$T/c" "$T/d"
for v in serve status list stop configure forget; do
  out=$(bm $v --help) || fail "$v --help exited $?"
  echo "$out" | sed -n 1p | has "^usage: blkmirror $v" || fail "$v --help: $out"
  expect_usage "^blkmirror: $v: unknown option --bogus; usage: blkmirror $v" bm $v --bogus
  expect_usage "^blkmirror: $v: unknown option -Z; usage: blkmirror $v" bm $v -Z m0
done
bm status --help | has "Exit status" || fail "status --help does not give the exit rule"
expect_usage "serve: option --socket needs a value" bm serve m0 --socket
expect_usage "stop: option --timeout needs a value" bm stop m0 --timeout
expect_usage "stop: --timeout 'soon' is not a time" bm stop --timeout soon m0
expect_usage "usage: blkmirror list" bm list -x
# Options after the name.
"$BLKMIRROR" serve m0 >>"$T/m0.log" 2>&1 --socket "$T/m0.sock" &
PIDS+=("$!"); SERVER_PID_m0=$!
for _ in $(seq 1 200); do
  rc=0; bm status m0 >/dev/null 2>&1 || rc=$?; [ $rc -eq 0 ] && break; sleep 0.05
done
[ $rc -eq 0 ] || fail "serve with options after the name did not start"
serve m1
bm configure m0 -b load || fail "configure with the option after the name"
bm list m0 | has "^Balance: load" || fail "configure did not apply"
# Several names.
[ "$(bm status m0 m1 | grep -c COMPLETE)" -eq 2 ] || fail "status m0 m1"
[ "$(bm list m0 m1 | grep -c '^Geom name:')" -eq 2 ] || fail "list m0 m1"
out=$(bm stop m0 m1 --timeout 30) || fail "stop m0 m1 failed"
[ "$out" = "m0 stopped cleanly
m1 stopped cleanly" ] || fail "stop m0 m1 said: $out"
wait "$SERVER_PID_m0" || fail "m0 server exited nonzero"
