# A deactivated NBD component whose server goes away and comes back (same
# export, same data) is activated again: activate finds its connection
# gone, opens it again (its label checked) and copies it in full.
# Before, activate read the lease through the dead connection and was
# refused for ever ("Transport endpoint is not connected"); only a
# restart, or remove + insert, brought it back (found by a fault helper).
# One that came back with another mirror's label is refused.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 64 a
truncate -s 64M "$T/b.img"
filedisk b "$T/b.img"
bm label -n m0 "$T/a" "$(disk_uri b)" >/dev/null
serve m0 --io-timeout 2
u=$(uri m0)
wait_complete m0
bm deactivate m0 "$(disk_uri b)" || fail "deactivate failed"
qemu-io -f raw "$u" -c 'write -P 0x5c 1M 64k' >/dev/null || fail "write while b is INACTIVE"
disk_kill b
sleep 1
filedisk b "$T/b.img"
out=$(bm activate m0 "$(disk_uri b)" 2>&1) || fail "activate failed: $out"
wait_complete m0
grep -q "its connection was gone; opened again" "$T/m0.log" || fail "no reopen logged: $(tail -n 5 "$T/m0.log")"
bm configure -b prefer m0 >/dev/null
bm configure -p 200 m0 "$(disk_uri b)" >/dev/null
qemu-io -f raw -r "$u" -c 'read -P 0x5c 1M 64k' >"$T/r.out" 2>&1 || fail "read: $(cat "$T/r.out")"
has -q "Pattern verification failed" "$T/r.out" && fail "b lacks the write made while INACTIVE: $(cat "$T/r.out")"
# another mirror's disk at b's export: refused, b stays INACTIVE
bm deactivate m0 "$(disk_uri b)" || fail "second deactivate failed"
disk_kill b
mkimg 64 o
bm label -n other "$T/o" >/dev/null
filedisk b "$T/o"
expect_error "came back with another label \\(mirror 'other'\\)" bm activate m0 "$(disk_uri b)" >/dev/null
out=$(bm status m0) || true   # (DEGRADED: status exits non-zero)
grep -q "b.disk.sock (INACTIVE" <<<"$out" || fail "b not INACTIVE: $out"
stop m0
cmp -n $((63 * MIB)) "$T/a" "$T/b.img" >/dev/null || fail "copies differ"
