# An NBD component whose server dies mid-service: I/O goes on from the
# other, the dead one is DISCONNECTED with a reason, genid is bumped on the
# survivor; at the next start the returned component is copied again.
. "$(dirname "$0")/lib.sh"
need qemu-io
disk d0 32M
disk d1 32M
bm label -n m0 "$(disk_uri d0)" "$(disk_uri d1)"
serve m0
u=$(uri m0)
qemu-io -f raw "$u" -c 'write -P 0x11 0 4M' >/dev/null
disk_kill d1
qemu-io -f raw "$u" -c 'write -P 0x22 4M 4M' -c 'read -P 0x22 4M 4M' -c 'read -P 0x11 0 4M' \
  >"$T/qio" 2>&1 || { cat "$T/qio"; fail "I/O failed after a component died"; }
grep -qiE 'error|fail' "$T/qio" && { cat "$T/qio"; fail "I/O errors after a component died"; }
out=$(bm status m0) || true
echo "$out" | has DEGRADED || fail "not DEGRADED: $out"
grep -q "d1.disk.sock (DISCONNECTED: " <<<"$out" || fail "d1 not DISCONNECTED: $out"
bm list m0 | has "^GenID: 2" || fail "genid not bumped"
stop m0
bm dump "$(disk_uri d0)" | has "GenID: 2" || fail "survivor label not bumped"
