# A component that is not in service can always be removed: one ABSENT
# since the start that is back has its label cleared; one whose file was
# deleted (DISCONNECTED) is removed, and remove says it is gone (before:
# "its label was left (it is stale)", of a file that no longer exists).
. "$(dirname "$0")/lib.sh"
mkimg 32 a b c d
bm label -n m0 "$T/a" "$T/b" "$T/c"
mv "$T/c" "$T/c.away"
serve m0
out=$(bm status m0) || true
grep -q "$T/c (ABSENT" <<<"$out" || fail "c not ABSENT: $out"
mv "$T/c.away" "$T/c"
out=$(bm remove m0 "$T/c") || fail "remove of an ABSENT component failed"
[ "$out" = "$T/c: removed; its label is cleared" ] || fail "remove said '$out'"
expect_error "has no blkmirror label" bm dump "$T/c"
bm insert --wait m0 "$T/d" >/dev/null || fail "insert d failed"
rm "$T/d"
for _ in $(seq 1 100); do
  out=$(bm status m0) || true
  grep -q "$T/d (DISCONNECTED" <<<"$out" && break
  sleep 0.1
done
grep -q "$T/d (DISCONNECTED" <<<"$out" || fail "d not DISCONNECTED: $out"
out=$(bm remove m0 "$T/d") || fail "remove of a DISCONNECTED component failed"
[ "$out" = "$T/d: removed; it is gone, so no label of it is left" ] || fail "remove said '$out'"
out=$(bm status m0)
grep -q COMPLETE <<<"$out" && ! grep -q "$T/[cd]" <<<"$out" || fail "status: $out"
[ "$(cat "$BLKMIRROR_STATE_DIR/m0.components")" = "$T/a
$T/b" ] || fail "state list: $(cat "$BLKMIRROR_STATE_DIR/m0.components")"
stop m0
