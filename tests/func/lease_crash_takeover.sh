# After kill -9 the leases stay ACTIVE but stop moving.  The next server on
# the same host (same boot, same pid namespace) sees that the holder's
# process is gone and takes over the leases of local components (files)
# at once.  A lease it cannot judge so (an NBD component: its server may
# still run the dead connection's requests; a holder on another host: here
# a forged lease) is watched for about two and a half intervals first.
# Either way the data written before the crash is served.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 64 a b
bm label -n m0 "$T/a" "$T/b"
serve m0
dead=$(server_pid m0)
qemu-io -f raw "$(uri m0)" -c 'write -P 0x61 2M 1M' -c flush >/dev/null
kill -9 "$dead"; wait "$dead" 2>/dev/null || true
"$TEST_TOOLS/lease_tool" dump "$T/b" | has "^state=active .*pid=$dead " ||
  fail "no active lease left by the killed server"
serve m0
for f in a b; do
  grep -q "$T/$f: taking over the lease of host $(hostname), pid $dead, mirror 'm0': that process is gone (same host and boot)" "$T/m0.log" ||
    fail "no immediate takeover of $f logged: $(cat "$T/m0.log")"
done
"$TEST_TOOLS/lease_tool" dump "$T/a" | has "^state=active .*pid=$(server_pid m0) " ||
  fail "new server holds no lease"
qemu-io -f raw "$(uri m0)" -c 'read -P 0x61 2M 1M' | has "read 1048576" || fail "data lost"
stop m0
# a holder elsewhere (no boot id in its lease: another host, or an older
# blkmirror): watched before it is taken over
for f in a b; do
  "$TEST_TOOLS/lease_tool" write "$T/$f" active elsewhere 4242 7
done
t0=$(date +%s%N)
serve m0
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
echo "takeover of a lease from elsewhere after $ms ms"
grep -q "taking over the lease of host elsewhere, pid 4242, mirror 'forged': not renewed" "$T/m0.log" ||
  fail "no watched takeover logged: $(cat "$T/m0.log")"
[ "$ms" -ge 2000 ] || fail "took over a lease from elsewhere after $ms ms, without watching it"
stop m0
# NBD components of a killed server: watched
disk d0 64M
disk d1 64M
bm label -n m1 "$(disk_uri d0)" "$(disk_uri d1)"
serve m1
dead=$(server_pid m1)
qemu-io -f raw "$(uri m1)" -c 'write -P 0x62 2M 1M' -c flush >/dev/null
kill -9 "$dead"; wait "$dead" 2>/dev/null || true
t0=$(date +%s%N)
serve m1
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
echo "NBD takeover after $ms ms"
for d in d0 d1; do
  grep -q "$d.disk.sock: taking over the lease of host $(hostname), pid $dead, mirror 'm1': not renewed" "$T/m1.log" ||
    fail "no watched takeover of $d logged: $(cat "$T/m1.log")"
done
[ "$ms" -ge 2000 ] || fail "took over NBD leases after $ms ms, without watching them"
wait_complete m1
qemu-io -f raw "$(uri m1)" -c 'read -P 0x62 2M 1M' | has "read 1048576" || fail "data lost"
stop m1
