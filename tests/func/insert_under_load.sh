# insert puts a new component into a running mirror while a client writes
# (16 writes in flight): --wait follows the copy until the component is
# ACTIVE; the client sees no error, every acknowledged write reads back,
# the new component ends byte-identical to the others over the data area,
# and a restart assembles it (the state directory lists it).
. "$(dirname "$0")/lib.sh"
need nbdsh
tool=$(dirname "$0")/../tools/acked_writes.py
mkimg 128 a b c
bm label -n m0 "$T/a" "$T/b"
serve m0
"$PY" "$tool" write "$(uri m0)" "$T/acked" 6000 16 3 300 >"$T/writer.out" 2>&1 &
writer=$!
# writes have begun (the first one marks the labels DIRTY)
for _ in $(seq 1 200); do
  out=$(bm dump "$T/a" 2>/dev/null) || true
  grep -q "DIRTY" <<<"$out" && break
  sleep 0.05
done
grep -q "DIRTY" <<<"$out" || fail "the writer did not start writing"
out=$(bm insert --wait m0 "$T/c") || { echo "$out"; tail -n 20 "$T/m0.log"; fail "insert --wait failed"; }
echo "$out"
grep -q "^m0: inserted $T/c; synchronizing it$" <<<"$out" || fail "insert did not say it inserted c"
grep -q "^$T/c: synchronized$" <<<"$out" || fail "--wait did not end with 'synchronized'"
out=$(bm status m0) || true
grep -q "$T/c (ACTIVE)" <<<"$out" || fail "c is not ACTIVE after --wait"
grep -qx "$T/c" "$BLKMIRROR_STATE_DIR/m0.components" || fail "c not in the state directory's list"
wait $writer || { cat "$T/writer.out"; fail "the writer failed"; }
cat "$T/writer.out"
grep -q "failed 0$" "$T/writer.out" || fail "the client saw errors"
"$PY" "$tool" verify "$(uri m0)" "$T/acked" || fail "an acknowledged write was lost"
stop m0
for f in a b c; do
  out=$(bm dump "$T/$f")
  grep -q "^ *Components: 3$" <<<"$out" || fail "$f's label does not count 3 components"
done
same_data "$T/a" "$T/c"
same_data "$T/b" "$T/c"
# A restart assembles all three, c ACTIVE (clean, current).
serve m0
out=$(bm status m0)
echo "$out"
grep -q "COMPLETE" <<<"$out" || fail "not COMPLETE after restart"
grep -q "$T/c (ACTIVE)" <<<"$out" || fail "c not assembled after restart"
stop m0
