# The bitmap bit is on disk on every component in service before the data
# write is issued to any: with the second component (an NBD disk) not
# answering, a client write to region 5 gets its bit written on the first
# component, and the data does not reach the first component until the
# second one's bit is written too (it answers again).
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 33 a
hangdisk h 33
bm label -n -r 1M m0 "$T/a" "$(disk_uri h)"
serve m0
u=$(uri m0)
# dirty, with no bit set yet where we write (region 5)
qemu-io -f raw "$u" -c 'write -P 0x11 20M 4k' >/dev/null
out=$(bm dump "$T/a")
grep -q "regions, 1 dirty: 20;" <<<"$out" || fail "region 20 not marked: $(grep BitmapState <<<"$out")"
hang h
qemu-io -f raw "$u" -c 'write -P 0x77 5M 64k' >"$T/w.out" 2>&1 &
writer=$!
for _ in $(seq 1 200); do
  out=$(bm dump "$T/a") || true
  grep -q "2 dirty: 5, 20;" <<<"$out" && break
  sleep 0.05
done
grep -q "2 dirty: 5, 20;" <<<"$out" || { answer h; fail "bit 5 never reached a: $(grep BitmapState <<<"$out")"; }
# a holds the bit; h has not answered its bitmap write: the data must not
# be on a yet
got=$(dd if="$T/a" bs=64k skip=80 count=1 status=none | od -An -tx1 | sed -n 1p | tr -d ' ')
answer h
[ "$got" = "00000000000000000000000000000000" ] ||
  fail "the data write reached a before h had the bit: $got"
wait $writer || fail "the write failed: $(cat "$T/w.out")"
got=$(dd if="$T/a" bs=64k skip=80 count=1 status=none | od -An -tx1 | sed -n 1p | tr -d ' ')
[ "$got" = "77777777777777777777777777777777" ] || fail "the write did not land: $got"
out=$(bm dump "$T/h.img")
grep -q "2 dirty: 5, 20;" <<<"$out" || fail "bit 5 not on h: $(grep BitmapState <<<"$out")"
stop m0
