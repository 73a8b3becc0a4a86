# forget on a running mirror drops the components that are not connected
# (a component file deleted: DISCONNECTED), from the mirror and from the
# state directory's list (forget says a deleted one is gone, not that its
# label stays); a restart does not look for them.  With every component connected there is nothing to forget.
. "$(dirname "$0")/lib.sh"
mkimg 32 a b c
bm label -n m0 "$T/a" "$T/b" "$T/c"
serve m0
out=$(bm forget m0) || fail "forget failed"
[ "$out" = "m0: nothing to forget: every component is connected" ] || fail "forget said '$out'"
cp --sparse=always "$T/c" "$T/c.kept"
rm "$T/c"
for _ in $(seq 1 100); do
  out=$(bm status m0) || true
  grep -q "$T/c (DISCONNECTED" <<<"$out" && break
  sleep 0.1
done
grep -q "$T/c (DISCONNECTED" <<<"$out" || fail "c not DISCONNECTED after its file was deleted: $out"
out=$(bm forget m0) || fail "forget failed"
[ "$out" = "$T/c: forgotten (DISCONNECTED); it is gone, so no label of it is left" ] || fail "forget said '$out'"
out=$(bm status m0)
grep -q "$T/c" <<<"$out" && fail "c still shown: $out"
grep -q COMPLETE <<<"$out" || fail "not COMPLETE once c is forgotten: $out"
! grep -q "$T/c" "$BLKMIRROR_STATE_DIR/m0.components" || fail "c still in the state list"
stop m0
# a is newer than the copy of c's label taken before (genid bumped)
ga=$(bm dump "$T/a" | sed -n 's/^ *GenID: //p')
gc=$(bm dump "$T/c.kept" | sed -n 's/^ *GenID: //p')
[ "$ga" -gt "$gc" ] || fail "forgotten label not stale: genid a=$ga c=$gc"
serve m0
out=$(bm status m0)
grep -q COMPLETE <<<"$out" && ! grep -q "$T/c" <<<"$out" || fail "restart: $out"
stop m0
