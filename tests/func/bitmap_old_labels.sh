# A mirror labelled before the bitmap existed (bitmap_size 0: label
# --no-bitmap writes the old layout) still assembles, shows no bitmap, and
# after a crash copies whole components as before; -r refuses bad sizes.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 33 a b
expect_usage "bitmap region '3M' is not a power of two from 64K to 2G" \
  bm label -r 3M m0 "$T/a" "$T/b"
expect_usage "bitmap region '32k' is not a power of two from 64K to 2G" \
  bm label -r 32k m0 "$T/a" "$T/b"
bm dump "$T/a" >/dev/null 2>&1 && fail "a refused label wrote a label"
bm label -n --no-bitmap m0 "$T/a" "$T/b"
out=$(bm dump "$T/a")
grep -q "Bitmap: 0 bytes at" <<<"$out" || fail "old layout has a bitmap: $out"
grep -q "BitmapState: none" <<<"$out" || fail "dump does not say none: $out"
serve m0
out=$(bm list m0)
grep -q "Bitmap: none" <<<"$out" || fail "list does not say none: $out"
qemu-io -f raw "$(uri m0)" -c 'write -P 0x44 1M 64k' -c flush >/dev/null
kill -9 "$(server_pid m0)"; wait "$(server_pid m0)" 2>/dev/null || true
serve m0
grep -q "not stopped cleanly" "$T/m0.log" || fail "crash not detected"
wait_complete m0
line=$(grep "synchronized:" "$T/m0.log" | tail -n 1)
[[ $line == *"(in full)"* ]] || fail "not a full copy: $line"
copied=$(sed -E 's/.*: ([0-9]+) bytes copied.*/\1/' <<<"$line")
# thin: only the source's data is copied, but over the whole mirror
qemu-io -f raw "$(uri m0)" -c 'read -P 0x44 1M 64k' | has "read 65536" ||
  fail "flushed data lost"
stop m0
same_data "$T/a" "$T/b"
[ -n "$copied" ] || fail "no copy figure"
