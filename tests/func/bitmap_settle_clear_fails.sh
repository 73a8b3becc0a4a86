# The settle pass writes a block whose bits it cleared to every component;
# a component that refuses it (EIO) is dropped (FAILED) with the reason,
# since its disk may now hold a torn block: the client's writes go on
# unharmed on the other, the bits the pass cleared stay cleared there, the
# ones still needed stay set, and a rebuild makes the copies identical.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 65 a
faildisk f 65
bm label -n -r 1M m0 "$T/a" "$(disk_uri f)"
blk=$(bitmap_block "$(disk_uri f)")
serve m0
u=$(uri m0)
qemu-io -f raw "$u" -c 'write -P 0x33 3M 64k' -c 'write 0 4k' >/dev/null
grep -q "2 dirty: 0, 3$" <<<"$(bm list m0)" || fail "bits at first: $(bm list m0)"
: >"$T/f.writes"
fail_writes f "$blk"
keep_writing m0
# region 3 is settled within two periods and a bit (5 s each): the clear
# reaches a and is refused by f
wait_status m0 "f.disk.sock (FAILED" 20
grep -q "cannot clear bits in its bitmap: Input/output error" "$T/m0.log" ||
  fail "no reason in the log: $(cat "$T/m0.log")"
grep -qx "$blk" "$T/f.writes" || fail "no bitmap write reached f: $(cat "$T/f.writes")"
sleep 1
kill -0 "$writer" 2>/dev/null || fail "the client's writes failed after the drop"
qemu-io -f raw "$u" -c 'read -P 0x33 3M 64k' >"$T/read.out" 2>&1 ||
  fail "region 3 unreadable: $(cat "$T/read.out")"
has -q "Pattern verification failed" "$T/read.out" && fail "region 3 lost: $(cat "$T/read.out")"
touch "$T/stop"; wait "$writer" || fail "the client's writes failed"
# a holds the clear and region 0's bit (still written when f left, and
# f has missed writes there since)
out=$(bm dump "$T/a")
grep -q "BitmapState: 1024 KiB regions, 64 regions, 1 dirty: 0;" <<<"$out" ||
  fail "a's bitmap on disk: $(grep BitmapState <<<"$out")"
take_writes f
bm rebuild --wait m0 "$(disk_uri f)" >/dev/null || fail "rebuild failed: $(cat "$T/m0.log")"
stop m0
cmp -n $((64 * MIB)) "$T/a" "$T/f.img" || fail "copies differ after the rebuild"
echo ok
