# Components join and leave over and over while a client writes: c is
# inserted and removed 18 times (mid-copy and after it), more than the 16
# slots a mirror has, so removed slots are reused.  The client sees no
# error, every acknowledged write reads back from every copy, and the
# mirror ends with its two components, identical.
. "$(dirname "$0")/lib.sh"
need nbdsh
tool=$(dirname "$0")/../tools/acked_writes.py
mkimg 64 a b c
bm label -n m0 "$T/a" "$T/b"
serve m0
"$PY" "$tool" write "$(uri m0)" "$T/acked" 12000 16 9 200 >"$T/writer.out" 2>&1 &
writer=$!
for i in $(seq 1 18); do
  if [ $((i % 3)) -eq 0 ]; then
    bm insert --wait m0 "$T/c" >/dev/null || fail "insert --wait $i failed"
  else
    bm insert m0 "$T/c" >/dev/null || fail "insert $i failed"
  fi
  bm remove m0 "$T/c" >/dev/null || fail "remove $i failed"
done
grep -c "ComponentInserted $T/c:" "$T/m0.log" | has -x 18 || fail "not 18 inserts in the log"
wait $writer || { cat "$T/writer.out"; fail "the writer failed"; }
cat "$T/writer.out"
grep -q "failed 0$" "$T/writer.out" || fail "the client saw errors"
out=$(bm status m0) || true
grep -q COMPLETE <<<"$out" && [ "$(grep -c "(ACTIVE)" <<<"$out")" -eq 2 ] || fail "status: $out"
"$PY" "$tool" verify "$(uri m0)" "$T/acked" || fail "an acknowledged write was lost"
# once more for good, then every copy holds every write
bm insert --wait m0 "$T/c" >/dev/null || fail "last insert failed"
stop m0
same_data "$T/a" "$T/b"
same_data "$T/a" "$T/c"
