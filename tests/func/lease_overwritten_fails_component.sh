# Another server's lease written over ours while serving (what a second
# host that took the export over would do): that component is failed out
# within seconds with the intruder named in status, no more lease (or
# data) is written to it, and the mirror keeps serving from the other.
. "$(dirname "$0")/lib.sh"
need qemu-io
disk d0 64M
disk d1 64M
bm label -n m0 "$(disk_uri d0)" "$(disk_uri d1)"
serve m0
lt() { "$TEST_TOOLS/lease_tool" "$@"; }
lt write "$(disk_uri d1)" active otherhost 4242 7
t0=$(date +%s%N)
for _ in $(seq 1 100); do
  out=$(bm status m0 2>/dev/null || true)
  [[ $out == *"d1.disk.sock (FAILED"* ]] && break
  sleep 0.1
done
echo "failed out after $(( ($(date +%s%N) - t0) / 1000000 )) ms"
out=$(bm status m0) && fail "status exited 0 while DEGRADED: $out"
echo "$out" | has "d1.disk.sock (FAILED: another server took over its lease (host otherhost, pid 4242" ||
  fail "d1 not failed with the intruder named: $out"
echo "$out" | has "d0.disk.sock (ACTIVE)" || fail "d0 not ACTIVE: $out"
grep -q "ComponentFailed .*d1.disk.sock: another server took over its lease" "$T/m0.log" ||
  fail "takeover not logged"
# the intruder's lease stays as it wrote it; ours on d0 goes on moving
forged=$(lt dump "$(disk_uri d1)")
echo "$forged" | has "seq=7 .*pid=4242 host=otherhost" || fail "d1's lease was rewritten: $forged"
s1=$(lt dump "$(disk_uri d0)" | sed 's/.*seq=\([0-9]*\).*/\1/')
qemu-io -f raw "$(uri m0)" -c 'write -P 0x62 4M 1M' -c flush >/dev/null
qemu-io -f raw "$(uri m0)" -c 'read -P 0x62 4M 1M' | has "read 1048576" || fail "read back differs"
qemu-io -f raw "$(disk_uri d1)" -c 'read -P 0 4M 1M' | has "read 1048576" ||
  fail "a data write reached the failed component"
for _ in $(seq 1 100); do
  s2=$(lt dump "$(disk_uri d0)" | sed 's/.*seq=\([0-9]*\).*/\1/')
  [ "$s2" -gt "$s1" ] && break
  sleep 0.1
done
[ "$s2" -gt "$s1" ] || fail "d0's lease stopped moving ($s1)"
[ "$(lt dump "$(disk_uri d1)")" = "$forged" ] || fail "d1's lease was written after the failure"
stop m0
[ "$(lt dump "$(disk_uri d1)")" = "$forged" ] || fail "the clean stop wrote over the intruder's lease"
