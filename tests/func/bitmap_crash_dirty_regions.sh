# kill -9 during writes to a few places: the next start copies only the
# bitmap's dirty regions (far less than the mirror), every acknowledged and
# flushed write reads back, and the copies are identical.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 129 a b
bm label -n -r 1M m0 "$T/a" "$T/b"
out=$(bm dump "$T/a")
grep -q "BitmapState: 1024 KiB regions, 128 regions, 0 dirty" <<<"$out" ||
  { echo "$out" >&2; fail "fresh bitmap not shown by dump"; }
serve m0
# writes in regions 3, 4-5 and 100 (1 MiB regions)
qemu-io -f raw "$(uri m0)" -c 'write -P 0x44 3M 4k' -c 'write -P 0x45 4M 2M' \
  -c 'write -P 0x46 100M 64k' -c flush >/dev/null
out=$(bm list m0)
grep -q "Bitmap: 1024 KiB regions, 128 regions, 4 dirty: 3-5, 100" <<<"$out" ||
  { echo "$out" >&2; fail "list does not show the dirty regions"; }
kill -9 "$(server_pid m0)"; wait "$(server_pid m0)" 2>/dev/null || true
out=$(bm dump "$T/b")
grep -q "BitmapState: 1024 KiB regions, 128 regions, 4 dirty: 3-5, 100" <<<"$out" ||
  { echo "$out" >&2; fail "the bits are not on disk on b after the crash"; }
# b differs in a dirty region (an in-flight write that reached a only)
printf 'junk' | dd of="$T/b" bs=1 seek=$((4 * MIB + 100)) conv=notrunc status=none
serve m0
grep -q "not stopped cleanly" "$T/m0.log" || fail "crash not detected"
wait_complete m0
line=$(grep "synchronized:" "$T/m0.log" | tail -n 1)
[[ $line == *"dirty regions only"* ]] || fail "not a dirty-region copy: $line"
copied=$(sed -E 's/.*: ([0-9]+) bytes copied.*/\1/' <<<"$line")
[ "$copied" -le $((4 * MIB)) ] || fail "copied $copied bytes, more than the 4 dirty regions"
[ "$copied" -ge $((64 * 1024)) ] || fail "copied only $copied bytes"
qemu-io -f raw "$(uri m0)" -c 'read -P 0x45 4M 2M' -c 'read -P 0x44 3M 4k' \
  -c 'read -P 0x46 100M 64k' >"$T/read.out"
[ "$(grep -c '^read' "$T/read.out")" = 3 ] || fail "flushed data lost"
stop m0
same_data "$T/a" "$T/b"
# a clean stop with every component ACTIVE cleared the bits
out=$(bm dump "$T/a")
grep -q "BitmapState: 1024 KiB regions, 128 regions, 0 dirty" <<<"$out" ||
  { echo "$out" >&2; fail "bits not cleared on a clean, complete stop"; }
