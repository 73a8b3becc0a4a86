# remove takes a component out of a running mirror while a client writes:
# the client sees no error, every acknowledged write reads back, the
# removed component's label is cleared, the state directory's list drops
# it and a restart assembles the others.
. "$(dirname "$0")/lib.sh"
need nbdsh
tool=$(dirname "$0")/../tools/acked_writes.py
mkimg 128 a b c
bm label -n m0 "$T/a" "$T/b" "$T/c"
serve m0
"$PY" "$tool" write "$(uri m0)" "$T/acked" 6000 16 5 300 >"$T/writer.out" 2>&1 &
writer=$!
for _ in $(seq 1 200); do
  out=$(bm dump "$T/a" 2>/dev/null) || true
  grep -q "DIRTY" <<<"$out" && break
  sleep 0.05
done
grep -q "DIRTY" <<<"$out" || fail "the writer did not start writing"
out=$(bm remove m0 "$T/c") || { echo "$out"; fail "remove failed"; }
[ "$out" = "$T/c: removed; its label is cleared" ] || fail "remove said '$out'"
out=$(bm status m0)
grep -q "$T/c" <<<"$out" && fail "c still shown: $out"
grep -q "COMPLETE" <<<"$out" || fail "not COMPLETE after the removal: $out"
bm list m0 | has "^Components: 2$" || fail "list does not say 2 components"
! grep -q "$T/c" "$BLKMIRROR_STATE_DIR/m0.components" || fail "c still in the state list"
expect_error "has no blkmirror label" bm dump "$T/c"
wait $writer || { cat "$T/writer.out"; fail "the writer failed"; }
cat "$T/writer.out"
grep -q "failed 0$" "$T/writer.out" || fail "the client saw errors"
"$PY" "$tool" verify "$(uri m0)" "$T/acked" || fail "an acknowledged write was lost"
stop m0
out=$(bm dump "$T/a")
grep -q "^ *Components: 2$" <<<"$out" || fail "a's label does not count 2 components"
same_data "$T/a" "$T/b"
serve m0
out=$(bm status m0)
grep -q "COMPLETE" <<<"$out" && [ "$(grep -c "(ACTIVE)" <<<"$out")" -eq 2 ] || fail "restart: $out"
stop m0
