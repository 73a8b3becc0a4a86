# A component removed while its server still holds a write of the
# connection given up (remove says its label is left for that reason)
# cannot be inserted again until that is over: insert refuses it and says
# what to do (clear it once its server has carried the writes out, or was
# restarted).  Before, insert took it at once (its label is this
# mirror's), copied it, and the held write landed later over a newer
# acknowledged one: copies that differ, and reads of old data (found by a
# fault helper).  After the clear, the insert works and the copies agree.
. "$(dirname "$0")/lib.sh"
need qemu-io
off=$(( 8 * MIB + 65536 ))
mkimg 65 a
hangdisk s 65 "$off"
bm label -n m0 "$T/a" "$(disk_uri s)" >/dev/null
serve m0 --io-timeout 2
u=$(uri m0)
hang s
timeout 30 qemu-io -f raw "$u" -c "write -P 0x41 $off 64k" >/dev/null || fail "write while s holds it failed"
wait_status m0 "s.disk.sock (DISCONNECTED" 10
out=$(bm remove m0 "$(disk_uri s)" 2>&1) || fail "remove failed: $out"
grep -q "label was left" <<<"$out" || fail "remove said: $out"
expect_error "left this mirror while its server could still carry out writes.*'blkmirror clear nbd.*', then insert it" \
  bm insert --wait m0 "$(disk_uri s)" >/dev/null
answer s                      # the held write lands now
for _ in $(seq 1 50); do grep -q "^$off\$" "$T/s.writes" 2>/dev/null && break; sleep 0.1; done
sleep 0.5
bm clear "$(disk_uri s)" >/dev/null || fail "clear of s failed"
bm insert --wait m0 "$(disk_uri s)" >/dev/null || fail "insert after clear failed"
qemu-io -f raw "$u" -c "write -P 0x42 $((8 * MIB)) 256k" >/dev/null || fail "write failed"
sleep 1
out=$(bm check m0 2>&1) || fail "check: $out"
stop m0
cmp -n $((64 * MIB)) "$T/a" "$T/s.img" >/dev/null || fail "copies differ"
