# One check or repair at a time per mirror: while a check runs (a slow
# component keeps it busy), status says so, and a second check or a repair
# is refused with one line; Ctrl-C on the first cancels the job in the
# server (exit 1, "cancelled"); then a new check runs to its end.  Stopping
# the mirror during a check ends the check (exit 1) and the server cleanly.
. "$(dirname "$0")/lib.sh"
mkimg 65 a
disk s 65M --filter=delay rdelay=40ms
bm label -n m0 "$T/a" "$(disk_uri s)"
serve m0
"$BLKMIRROR" check m0 >"$T/first.out" 2>&1 &
first=$!
PIDS+=("$first")
for _ in $(seq 1 200); do
  out=$(bm status m0) || true
  grep -q "^Note: check running" <<<"$out" && break
  sleep 0.05
done
grep -q "^Note: check running, [0-9]*% compared" <<<"$out" || fail "status does not show the check: $out"
expect_error "a check of 'm0' is already running \([0-9]+% done\)" bm check m0
expect_error "a check of 'm0' is already running" bm repair m0
kill -INT "$first"
rc=0; wait "$first" || rc=$?
[ $rc -eq 1 ] || fail "check after Ctrl-C exited $rc, want 1: $(cat "$T/first.out")"
grep -q "^blkmirror: check of 'm0' cancelled at [0-9]*% (Ctrl-C)$" "$T/first.out" ||
  fail "check after Ctrl-C said: $(cat "$T/first.out")"
out=$(bm status m0) || fail "status exited $?: $out"
grep -q "Note: check" <<<"$out" && fail "status still shows a check: $out"
grep -q "check cancelled" "$T/m0.log" || fail "the server did not cancel the job"
out=$(bm check m0) || fail "a check after the cancelled one exited $?: $out"
grep -q "2 ACTIVE components identical" <<<"$out" || fail "check said: $out"
"$BLKMIRROR" check m0 >"$T/third.out" 2>&1 &
third=$!
PIDS+=("$third")
for _ in $(seq 1 200); do
  out=$(bm status m0) || true
  grep -q "^Note: check running" <<<"$out" && break
  sleep 0.05
done
grep -q "^Note: check running" <<<"$out" || fail "the third check did not start: $out"
stop m0
rc=0; wait "$third" || rc=$?
[ $rc -eq 1 ] || fail "check during stop exited $rc, want 1: $(cat "$T/third.out")"
grep -qE "stopped during the check|is stopping" "$T/third.out" ||
  fail "check during stop said: $(cat "$T/third.out")"
cat "$T/third.out"
grep -q "check cancelled" <(tail -n 5 "$T/m0.log") || fail "close did not cancel the check"
