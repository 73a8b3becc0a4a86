# b is away for a while (a takes writes), comes back and is copied:
# COMPLETE.  Later a goes (b takes writes), and the mirror is stopped.
# b holds everything, so the next start takes b as the source and copies
# a from it.  Before, a's label still said b had missed writes (only the
# copied component's label was rewritten when its copy ended), and the
# start refused the mirror as a split brain.
. "$(dirname "$0")/lib.sh"
need qemu-io
truncate -s 64M "$T/a.img"
filedisk a "$T/a.img"
hangdisk b 64
bm label -n m0 "$(disk_uri a)" "$(disk_uri b)"
serve m0 --io-timeout 2
u=$(uri m0)
hang b
qemu-io -f raw "$u" -c 'write -P 0x22 1M 1M' >/dev/null || fail "write while b hangs"
answer b
wait_complete m0
# b is seen ACTIVE before the others' labels are rewritten; the copy's
# end is logged (SyncFinished) once they are
for _ in $(seq 1 100); do
  grep -q "SyncFinished" "$T/m0.log" && break
  sleep 0.1
done
grep -q "SyncFinished" "$T/m0.log" || fail "the copy's end not logged: $(cat "$T/m0.log")"
disk_kill a
wait_status m0 "a.disk.sock (DISCONNECTED" 5
qemu-io -f raw "$u" -c 'write -P 0x33 2M 1M' >/dev/null || fail "write while a is away"
stop m0
filedisk a "$T/a.img"
serve m0 || fail "the start refused the mirror: $(tail -n 3 "$T/m0.log")"
grep -q "split brain" "$T/m0.log" && fail "split brain: $(cat "$T/m0.log")"
wait_complete m0
qemu-io -f raw "$u" -c 'read -P 0x22 1M 1M' -c 'read -P 0x33 2M 1M' >"$T/qio" 2>&1 ||
  fail "reads: $(cat "$T/qio")"
has -q "Pattern verification failed" "$T/qio" && fail "data: $(cat "$T/qio")"
stop m0
cmp -n $((62 * MIB)) "$T/a.img" "$T/b.img" || fail "copies differ"
echo ok
