# Deactivating the component the sync thread is copying: the copy lets go
# of it (it stays INACTIVE, its label says so, that copy never finishes);
# activate copies it again from offset 0 and it ends ACTIVE and identical.
. "$(dirname "$0")/lib.sh"
need nbdcopy
mkimg 32 a
head -c 31M /dev/urandom | dd of="$T/a" conv=notrunc status=none # holes are not copied
head -c $((8 * MIB)) /dev/urandom | dd of="$T/a" conv=notrunc status=none
disk slow 32M --filter=delay wdelay=1
bm label m0 "$T/a" "$(disk_uri slow)"
serve m0
for _ in $(seq 1 200); do
  out=$(bm status m0) || true
  grep -qE "slow.disk.sock \(SYNCHRONIZING, ([1-9]|[1-9][0-9])%" <<<"$out" && break
  sleep 0.05
done
grep -q "slow.disk.sock (SYNCHRONIZING" <<<"$out" || fail "slow is not being copied: $out"
bm deactivate m0 "$(disk_uri slow)"
out=$(bm status m0) || true
grep -q "slow.disk.sock (INACTIVE: deactivated)" <<<"$out" || fail "not INACTIVE: $out"
out=$(bm list m0)
grep -A12 "Name: nbd" <<<"$out" | has "Flags: .*INACTIVE" || fail "label not INACTIVE: $out"
bm activate --wait m0 "$(disk_uri slow)" >/dev/null || fail "activate --wait failed"
stop m0
[ "$(grep -c "SyncStarted .*slow.disk.sock: copying from offset 0 " "$T/m0.log")" -eq 2 ] ||
  fail "not copied from 0 again: $(cat "$T/m0.log")"
# the first copy never finished (it let go at the deactivation)
[ "$(grep -c "SyncFinished .*slow.disk.sock:" "$T/m0.log")" -eq 1 ] ||
  fail "the copy went on after the deactivation: $(cat "$T/m0.log")"
nbdcopy "$(disk_uri slow)" "$T/slow.img"
cmp -n $(data_size "$T/a") "$T/a" "$T/slow.img" || fail "copies differ"
