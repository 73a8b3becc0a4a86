# rebuild --wait of an ACTIVE component on a served mirror while a client
# writes: it is copied again from offset 0 (not read meanwhile) and is
# ACTIVE at the end; every acknowledged write reads back; the copies are
# byte-identical after stop.  A damaged block on the rebuilt component is
# mended by the copy (the proof that it was really copied again).
. "$(dirname "$0")/lib.sh"
need nbdsh
tool=$(dirname "$0")/../tools/acked_writes.py
mkimg 32 a b
head -c $((4 * MIB)) /dev/urandom >"$T/seed"
dd if="$T/seed" of="$T/a" conv=notrunc status=none
dd if="$T/seed" of="$T/b" conv=notrunc status=none
bm label -n m0 "$T/a" "$T/b"
# b silently differs in its last data MiB (which the client never writes)
last=$(( $(data_size "$T/b") - MIB ))
head -c $MIB /dev/urandom | dd of="$T/b" bs=1M seek=$((last / MIB)) conv=notrunc status=none
serve m0
"$PY" "$tool" write "$(uri m0)" "$T/acked" 3000 16 4 300 >"$T/writer.out" 2>&1 &
writer=$!
for _ in $(seq 1 200); do
  out=$(bm list m0) || true; grep -q "Flags: DIRTY" <<<"$out" && break; sleep 0.05
done
bm rebuild --wait m0 "$T/b" >"$T/wait.out" || fail "rebuild --wait exited $?: $(cat "$T/wait.out")"
out=$(bm status m0) || fail "not COMPLETE after rebuild --wait: $out"
grep -q "SyncStarted $T/b: copying from offset 0 " "$T/m0.log" || fail "b not copied from offset 0"
wait $writer || fail "the writer failed"
grep -q "failed 0" "$T/writer.out" || fail "client writes failed: $(cat "$T/writer.out")"
"$PY" "$tool" verify "$(uri m0)" "$T/acked" || fail "an acknowledged write was lost"
stop m0
same_data "$T/a" "$T/b"
