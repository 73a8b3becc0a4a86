# After kill -9 the leases stay ACTIVE but stop moving: the next server
# watches them for about two and a half intervals, says it takes them over,
# and serves the data written before the crash.
. "$(dirname "$0")/lib.sh"
need qemu-io
disk d0 64M
disk d1 64M
bm label -n m0 "$(disk_uri d0)" "$(disk_uri d1)"
serve m0
dead=$(server_pid m0)
qemu-io -f raw "$(uri m0)" -c 'write -P 0x61 2M 1M' -c flush >/dev/null
kill -9 "$dead"; wait "$dead" 2>/dev/null || true
"$TEST_TOOLS/lease_tool" dump "$(disk_uri d1)" | grep -q "^state=active .*pid=$dead " ||
  fail "no active lease left by the killed server"
t0=$(date +%s%N)
serve m0
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
echo "takeover ready after $ms ms"
for d in d0 d1; do
  grep -q "$d.disk.sock: taking over the lease of host $(hostname), pid $dead, mirror 'm0'" "$T/m0.log" ||
    fail "no takeover of $d logged: $(cat "$T/m0.log")"
done
[ "$ms" -ge 2000 ] || fail "took over after $ms ms, without watching the lease"
"$TEST_TOOLS/lease_tool" dump "$(disk_uri d0)" | grep -q "^state=active .*pid=$(server_pid m0) " ||
  fail "new server holds no lease"
wait_complete m0
qemu-io -f raw "$(uri m0)" -c 'read -P 0x61 2M 1M' | grep -q "read 1048576" || fail "data lost"
stop m0
