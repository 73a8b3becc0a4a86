# A component whose writes fail (nbdkit error filter, switched on by a file):
# the write is acknowledged from the other component, the failing one is
# FAILED with the reason, genid is bumped on the survivor before the ack;
# at the next start the failed component is stale and copied again.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 32 a
disk bad 32M --filter=error error-pwrite=EIO error-pwrite-rate=100% error-pwrite-file="$T/bad.fail"
bm label -n m0 "$T/a" "$(disk_uri bad)"
serve m0
u=$(uri m0)
qemu-io -t writeback -f raw "$u" -c 'write -P 0x41 0 1M' -c flush >/dev/null
touch "$T/bad.fail"
qemu-io -t writeback -f raw "$u" -c 'write -P 0x42 1M 1M' -c flush -c 'read -P 0x42 1M 1M' \
  >"$T/qio" 2>&1 || { cat "$T/qio"; fail "client saw an error"; }
grep -qiE 'error|fail' "$T/qio" && { cat "$T/qio"; fail "client saw an error"; }
out=$(bm status m0) && fail "status exited 0 while DEGRADED"
echo "$out" | has "bad.disk.sock (FAILED: write error" || fail "not FAILED: $out"
bm dump "$T/a" | has "GenID: 2" || fail "survivor's genid not bumped before the ack"
rm "$T/bad.fail"
stop m0
serve m0
grep -q "SyncStarted .*bad.disk.sock: copying from offset 0 " "$T/m0.log" || fail "stale component not copied again"
wait_complete m0
stop m0
nbdcopy "$(disk_uri bad)" "$T/bad.img"
cmp -n $((31 * MIB)) "$T/a" "$T/bad.img" || fail "components differ after the copy"
