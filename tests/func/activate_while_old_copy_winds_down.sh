# activate while the copy that deactivate stopped still has source reads in
# flight (the source answers reads after 2 s): the new copy starts from 0
# and the component ends with the write acknowledged while it was
# INACTIVE.  (A review found the old copy storing its offset back over
# the new one's 0: the component became ACTIVE without that write.)
. "$(dirname "$0")/lib.sh"
need nbdsh
need nbdcopy
disk src 32M --filter=delay rdelay=2
head -c $((31 * MIB)) /dev/urandom >"$T/rnd"
nbdcopy "$T/rnd" "$(disk_uri src)"
mkimg 32 b
bm label m0 "$(disk_uri src)" "$T/b"
serve m0
for _ in $(seq 1 600); do
  out=$(bm status m0) || true
  grep -qE "b \(SYNCHRONIZING, ([1-9][0-9])%" <<<"$out" && break
  sleep 0.05
done
grep -qE "b \(SYNCHRONIZING, ([1-9][0-9])%" <<<"$out" || fail "b's copy did not get going: $out"
bm deactivate m0 "$T/b"
nbdsh -u "$(uri m0)" -c 'h.pwrite(b"\xab" * 1048576, 0)'
for _ in $(seq 1 20); do
  out=$(bm activate m0 "$T/b" 2>&1) && break
  grep -q "has not let go yet" <<<"$out" || fail "activate: $out"
done
wait_complete m0
stop m0
[ "$(grep -c "SyncStarted $T/b: copying from offset 0 " "$T/m0.log")" -eq 2 ] ||
  fail "the second copy did not start from 0: $(grep Sync "$T/m0.log")"
cmp -n $MIB "$T/b" <(head -c $MIB /dev/zero | tr '\0' '\253') ||
  fail "b lacks the write acknowledged while it was INACTIVE"
