# deactivate then activate --wait on a served mirror while a client writes:
# the component is copied in full (from offset 0) and becomes ACTIVE; every
# acknowledged write reads back; all copies are byte-identical after stop.
# activate refuses (exit 1, one line) a component that is not INACTIVE and
# a mirror that is not running; a wrong command line is exit 2.
. "$(dirname "$0")/lib.sh"
need nbdsh
tool=$(dirname "$0")/../tools/acked_writes.py
mkimg 32 a b c
bm label -n m0 "$T/a" "$T/b" "$T/c"
expect_error "m0' is not running; activate changes a running mirror" \
  bm activate m0 "$T/b"
serve m0
expect_usage "usage: blkmirror activate \[--wait\] NAME COMPONENT" bm activate m0
expect_usage "activate: unknown option '--bogus'" bm activate --bogus m0 "$T/b"
expect_error "b is ACTIVE, not INACTIVE" bm activate m0 "$T/b"
"$PY" "$tool" write "$(uri m0)" "$T/acked" 4000 16 3 300 >"$T/writer.out" 2>&1 &
writer=$!
for _ in $(seq 1 200); do
  out=$(bm list m0) || true; grep -q "Flags: DIRTY" <<<"$out" && break; sleep 0.05
done
bm deactivate m0 "$T/b"
for round in 1 2; do
  bm activate --wait m0 "$T/b" >"$T/wait.out" ||
    fail "activate --wait exited $?: $(cat "$T/wait.out")"
  out=$(bm status m0) || fail "not COMPLETE after activate --wait: $out"
  [ $round -eq 1 ] && bm deactivate m0 "$T/b"
done
wait $writer || fail "the writer failed"
grep -q "failed 0" "$T/writer.out" || fail "client writes failed: $(cat "$T/writer.out")"
"$PY" "$tool" verify "$(uri m0)" "$T/acked" || fail "an acknowledged write was lost"
[ "$(grep -c "SyncStarted $T/b: copying from offset 0 " "$T/m0.log")" -eq 2 ] ||
  fail "b not copied from offset 0 twice: $(cat "$T/m0.log")"
stop m0
same_data "$T/a" "$T/b"
same_data "$T/a" "$T/c"
