# A rebuild asked while the sync thread copies another component waits its
# turn (one copy at a time): it is SYNCHRONIZING at 0% until the other copy
# ends, then copied; a component being copied cannot be rebuilt.  Under
# client writes; at the end all three copies are identical and every
# acknowledged write reads back.
. "$(dirname "$0")/lib.sh"
need nbdsh
need nbdcopy
tool=$(dirname "$0")/../tools/acked_writes.py
mkimg 32 a b
head -c 31M /dev/urandom | dd of="$T/a" conv=notrunc status=none # holes are not copied
cp "$T/a" "$T/b"
disk slow 32M --filter=delay wdelay=300ms
bm label -n m0 "$T/a" "$T/b" "$(disk_uri slow)"
serve m0
"$PY" "$tool" write "$(uri m0)" "$T/acked" 400 16 6 >"$T/writer.out" 2>&1 &
writer=$!
bm rebuild m0 "$(disk_uri slow)"
expect_error "slow.disk.sock is being synchronized already" bm rebuild m0 "$(disk_uri slow)"
bm rebuild m0 "$T/b"
out=$(bm status m0) || true
grep -q "slow.disk.sock (SYNCHRONIZING" <<<"$out" || fail "slow is not being copied: $out"
grep -q "$T/b (SYNCHRONIZING, 0%)" <<<"$out" || fail "b's copy did not wait its turn: $out"
bm rebuild --wait m0 "$T/b" >/dev/null 2>&1 && fail "rebuild of a SYNCHRONIZING b accepted"
wait_complete m0
# the slow copy ended before b's began
s_end=$(grep -n "SyncFinished .*slow.disk.sock:" "$T/m0.log" | cut -d: -f1)
b_start=$(grep -n "SyncStarted $T/b: copying from offset 0 " "$T/m0.log" | cut -d: -f1)
[ -n "$s_end" ] && [ -n "$b_start" ] && [ "$s_end" -lt "$b_start" ] ||
  fail "copies overlapped: $(cat "$T/m0.log")"
wait $writer || fail "the writer failed"
grep -q "failed 0" "$T/writer.out" || fail "client writes failed: $(cat "$T/writer.out")"
"$PY" "$tool" verify "$(uri m0)" "$T/acked" || fail "an acknowledged write was lost"
stop m0
same_data "$T/a" "$T/b"
nbdcopy "$(disk_uri slow)" "$T/slow.img"
cmp -n $(data_size "$T/a") "$T/a" "$T/slow.img" || fail "slow's copy differs"
