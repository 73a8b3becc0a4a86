# A crash (SIGKILL) while dirty: at the next start one source is copied over
# the others, and the data acknowledged and flushed before the crash is there.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 32 a b
bm label -n m0 "$T/a" "$T/b"
serve m0
qemu-io -f raw "$(uri m0)" -c 'write -P 0x44 1M 2M' -c flush >/dev/null
kill -9 "$(server_pid m0)"; wait "$(server_pid m0)" 2>/dev/null || true
bm dump "$T/a" | has "DIRTY" || fail "a not DIRTY after crash"
# make b differ where a write may have been in flight
printf 'junk' | dd of="$T/b" bs=1 seek=$((5 * MIB)) conv=notrunc status=none
serve m0
grep -q "not stopped cleanly" "$T/m0.log" || fail "crash not detected"
wait_complete m0
qemu-io -f raw "$(uri m0)" -c 'read -P 0x44 1M 2M' | has "read 2097152" || fail "flushed data lost"
stop m0
same_data "$T/a" "$T/b"
