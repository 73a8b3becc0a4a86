# A component FAILED by a write error comes back without a restart:
# rebuild reopens it (its label must be this mirror's), copies it in full
# while a client writes, and it is ACTIVE again; every acknowledged write
# reads back and the copies are byte-identical after stop.  While it still
# fails, rebuild refuses (exit 1, one line: its label cannot be written).
. "$(dirname "$0")/lib.sh"
need nbdsh
need nbdcopy
need qemu-io
tool=$(dirname "$0")/../tools/acked_writes.py
mkimg 32 a
disk bad 32M --filter=error error-pwrite=EIO error-pwrite-rate=100% error-pwrite-file="$T/bad.fail"
bm label -n m0 "$T/a" "$(disk_uri bad)"
serve m0
touch "$T/bad.fail"
qemu-io -f raw "$(uri m0)" -c 'write -P 0x42 0 1M' -c flush >/dev/null
out=$(bm status m0) || true
grep -q "bad.disk.sock (FAILED: " <<<"$out" || fail "not FAILED: $out"
expect_error "cannot bring back .*bad.disk.sock: came back, but its label cannot be written" \
  bm rebuild --wait m0 "$(disk_uri bad)"
out=$(bm status m0) || true
grep -q "bad.disk.sock (FAILED: " <<<"$out" || fail "not FAILED after the refusal: $out"
rm "$T/bad.fail"
"$PY" "$tool" write "$(uri m0)" "$T/acked" 3000 16 5 300 >"$T/writer.out" 2>&1 &
writer=$!
bm rebuild --wait m0 "$(disk_uri bad)" >"$T/wait.out" ||
  fail "rebuild --wait exited $?: $(cat "$T/wait.out")"
out=$(bm status m0) || fail "not COMPLETE after rebuild: $out"
wait $writer || fail "the writer failed"
grep -q "failed 0" "$T/writer.out" || fail "client writes failed: $(cat "$T/writer.out")"
"$PY" "$tool" verify "$(uri m0)" "$T/acked" || fail "an acknowledged write was lost"
stop m0
nbdcopy "$(disk_uri bad)" "$T/bad.img"
cmp -n $(data_size "$T/a") "$T/a" "$T/bad.img" || fail "copies differ after the rebuild"
