# What comes back in an ABSENT component's place is taken only when a
# restart would take it as a member to copy.  Refused, with nothing
# written to it and the reason in status: another mirror's component, and
# a copy that took writes the running mirror lacks (split brain: each copy
# was written while the other was away).
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 16 a b x y

# 1. another mirror's component put where b was
bm label -n m0 "$T/a" "$T/b"
bm label -n other "$T/x" "$T/y"
mv "$T/b" "$T/b.away"
serve m0
cp "$T/x" "$T/b"
before=$(file_sha "$T/b")
sleep 3   # tried after 1 s, then 2 s
out=$(bm status m0) || true
echo "$out"; grep -h "not taken" "$T/m0.log" | tail -1
grep -q "$T/b (ABSENT: .*label of another mirror" <<<"$out" ||
  fail "not refused as another mirror's: $out"
[ "$(file_sha "$T/b")" = "$before" ] || fail "the other mirror's component was written"
stop m0
rm -f "$T/b"; mv "$T/b.away" "$T/b"

# 2. split brain: b written alone, then a written alone, then b comes back
mv "$T/a" "$T/a.away"
serve m0
qemu-io -f raw "$(uri m0)" -c 'write -P 0x51 0 1M' >/dev/null || fail "write to b alone failed"
stop m0
mv "$T/b" "$T/b.away"; mv "$T/a.away" "$T/a"
serve m0
qemu-io -f raw "$(uri m0)" -c 'write -P 0x52 0 1M' >/dev/null || fail "write to a alone failed"
before=$(file_sha "$T/b.away")
mv "$T/b.away" "$T/b"
for _ in $(seq 1 40); do
  out=$(bm status m0) || true
  grep -q "$T/b (ABSENT: split brain: it and $T/a" <<<"$out" && break
  sleep 0.1
done
echo "$out"; grep -h "not taken" "$T/m0.log" | tail -1
grep -q "$T/b (ABSENT: split brain: it and $T/a" <<<"$out" || fail "split brain not refused: $out"
[ "$(file_sha "$T/b")" = "$before" ] || fail "b was written although its history diverged"
grep -q "is back but not taken" "$T/m0.log" || fail "the refusal is not in the server's log"
stop m0
