# A component inserted into a running mirror with a bitmap is copied in
# full (it was never in sync), gets the mirror's bitmap geometry, and once
# every component is ACTIVE and idle the bits are cleared on all three; a
# later deactivate/activate of it then catches up from the bitmap.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 33 a b c
bm label -n -r 1M m0 "$T/a" "$T/b"
serve m0
u=$(uri m0)
qemu-io -f raw "$u" -c 'write -P 0x61 2M 1M' >/dev/null
bm insert --wait m0 "$T/c" >/dev/null || fail "insert --wait failed"
line=$(grep "$T/c synchronized:" "$T/m0.log" | tail -n 1)
[[ $line == *"(in full)"* ]] || fail "insert did not copy in full: $line"
for _ in $(seq 1 200); do
  out=$(bm list m0) || true
  grep -q "regions, 0 dirty" <<<"$out" && break
  sleep 0.1
done
grep -q "regions, 0 dirty" <<<"$out" || fail "bits not cleared: $(grep Bitmap: <<<"$out")"
out=$(bm dump "$T/c")
grep -q "BitmapState: 1024 KiB regions, 32 regions, 0 dirty; clear_seq [0-9]*, 3 members" <<<"$out" ||
  fail "c's bitmap: $(grep BitmapState <<<"$out")"
bm deactivate m0 "$T/c"
qemu-io -f raw "$u" -c 'write -P 0x62 7M 4k' >/dev/null
bm activate --wait m0 "$T/c" >/dev/null || fail "activate failed"
line=$(grep "$T/c synchronized:" "$T/m0.log" | tail -n 1)
[[ $line == *"dirty regions only"* ]] || fail "activate after insert not from the bitmap: $line"
stop m0
same_data "$T/a" "$T/c"
same_data "$T/a" "$T/b"
