# A bitmap write that timed out on the component kept in service (the
# last ACTIVE one) is still in flight, and could land after a newer image
# of the same block and erase its bits.  The next bitmap write to that
# component waits for the old one first (landed_before): while the old
# write hangs, the new one is not sent; once it lands, the new one is,
# the write succeeds, and both bits are on the disk.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 17 a
hangdisk h 17
bm label -n -r 1M m0 "$T/a" "$(disk_uri h)"
blk=$(bitmap_block "$(disk_uri h)")
# h's bitmap block 0 hangs, nothing else of h does
kill "$(cat "$T/h.disk.pid")"; sleep 0.2; rm -f "$T/h.disk.sock" "$T/h.disk.pid"
hangdisk h 17 "$blk"
serve m0 --io-timeout 3
u=$(uri m0)
bm deactivate m0 "$T/a"
hang h
# the bit of region 5 cannot be recorded: EIO, h stays (last ACTIVE)
out=$(qemu-io -f raw "$u" -c 'write -P 0x55 5M 4k' 2>&1) || true
grep -q "Input/output error" <<<"$out" || fail "the first write did not fail: $out"
[ "$(grep -cx "$blk" "$T/h.writes")" = 1 ] || fail "bitmap writes to h: $(cat "$T/h.writes")"
# region 6's bit: waits for the old write, which still hangs
qemu-io -f raw "$u" -c 'write -P 0x66 6M 4k' >"$T/w2.out" 2>&1 &
w2=$!
sleep 0.7
n=$(grep -cx "$blk" "$T/h.writes")
[ "$n" = 1 ] || fail "a second image of the block was sent over the one in flight ($n writes)"
answer h
wait "$w2" || fail "the second write failed: $(cat "$T/w2.out")"
grep -q "Input/output error" "$T/w2.out" && fail "the second write failed: $(cat "$T/w2.out")"
[ "$(grep -cx "$blk" "$T/h.writes")" = 2 ] || fail "bitmap writes to h: $(cat "$T/h.writes")"
out=$(bm list m0)
grep -q "KiB regions, 16 regions, 2 dirty: 5-6$" <<<"$out" ||
  fail "bits: $(grep 'KiB regions' <<<"$out")"
stop m0
out=$(bm dump "$(disk_uri h)")
grep -q "BitmapState: 1024 KiB regions, 16 regions, 2 dirty: 5-6;" <<<"$out" ||
  fail "h's bitmap on disk: $(grep BitmapState <<<"$out")"
echo ok
