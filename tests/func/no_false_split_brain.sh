# b is away for a while (a takes writes), comes back and is copied:
# COMPLETE.  Later a goes (b takes writes), and the mirror is stopped.
# b holds everything, so the next start takes b as the source and copies
# a from it.  Before, a's label still said b had missed writes (only the
# copied component's label was rewritten when its copy ended), and the
# start refused the mirror as a split brain.  And every label is
# rewritten before status shows b ACTIVE.
. "$(dirname "$0")/lib.sh"
need qemu-io
truncate -s 64M "$T/a.img"
# a's writes take 0.5 s (its label's too): the rewrite of a's label at the
# copy's end is a window of half a second
filedisk a "$T/a.img" --filter=delay delay-write=500ms
hangdisk b 64
bm label -n m0 "$(disk_uri a)" "$(disk_uri b)"
serve m0 --io-timeout 2
u=$(uri m0)
hang b
qemu-io -f raw "$u" -c 'write -P 0x22 1M 1M' >/dev/null || fail "write while b hangs"
answer b
wait_complete m0
# killed as soon as status says COMPLETE: every label says b is in sync
# by then (before, b was seen ACTIVE just before the others' labels were
# rewritten: a kill in that window, 0.5 s here, failed this)
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
