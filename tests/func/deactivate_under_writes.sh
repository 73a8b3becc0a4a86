# deactivate on a served 3-component mirror while a client writes: the
# component turns INACTIVE at once (status, its label, the survivors'
# genid), no client write is lost (every acknowledged write reads back),
# nothing written after the deactivation reaches it, and the two copies
# still in service are byte-identical after stop.
. "$(dirname "$0")/lib.sh"
need nbdsh
need qemu-io
tool=$(dirname "$0")/../tools/acked_writes.py
mkimg 32 a b c
bm label -n m0 "$T/a" "$T/b" "$T/c"
serve m0
"$PY" "$tool" write "$(uri m0)" "$T/acked" 3000 16 1 300 >"$T/writer.out" 2>&1 &
writer=$!
# writes are under way once the labels say DIRTY
for _ in $(seq 1 200); do
  out=$(bm list m0) || true; grep -q "Flags: DIRTY" <<<"$out" && break; sleep 0.05
done
grep -q "Flags: DIRTY" <<<"$out" || fail "the client's writes did not start"
bm deactivate m0 "$T/b" || fail "deactivate exited $?"
out=$(bm status m0) && fail "status exited 0 with an INACTIVE component"
grep -q "$T/b (INACTIVE" <<<"$out" || fail "b not INACTIVE: $out"
grep -q "DEGRADED" <<<"$out" || fail "not DEGRADED: $out"
# idempotent, like gmirror
bm deactivate m0 "$T/b" || fail "deactivating an INACTIVE component again failed"
wait $writer || fail "the writer failed: $(cat "$T/writer.out")"
cat "$T/writer.out"
grep -q "failed 0" "$T/writer.out" || fail "client writes failed: $(cat "$T/writer.out")"
"$PY" "$tool" verify "$(uri m0)" "$T/acked" || fail "an acknowledged write was lost"
# Nothing reaches it now.
qemu-io -f raw "$(uri m0)" -c 'write -P 0x5a 0 1M' -c flush >/dev/null
out=$(bm list m0)
grep -A12 "^2. Name: $T/b" <<<"$out" | has "Flags: .*INACTIVE" ||
  fail "b's label does not say INACTIVE: $out"
stop m0
cmp -n $MIB "$T/a" <(head -c $MIB /dev/zero | tr '\0' '\132') >/dev/null ||
  fail "the write after deactivate did not reach a"
cmp -n $MIB "$T/b" <(head -c $MIB /dev/zero | tr '\0' '\132') >/dev/null &&
  fail "a write after deactivate reached the INACTIVE component"
same_data "$T/a" "$T/c"
ga=$(bm dump "$T/a" | sed -n 's/^ *GenID: //p')
gb=$(bm dump "$T/b" | sed -n 's/^ *GenID: //p')
[ "$ga" -gt "$gb" ] || fail "survivors' genid ($ga) not above the INACTIVE one's ($gb)"
echo "ok: genid a=$ga b=$gb"
