# TRIM never makes copies differ: on a mirror of a file and an nbdkit memory
# disk, a trimmed range reads zeros from every component (files punch holes,
# NBD components get a zeroing that may unmap), and the data areas stay equal.
. "$(dirname "$0")/lib.sh"
need qemu-io
need nbdcopy
mkimg 32 a
disk d1 32M
bm label -n m0 "$T/a" "$(disk_uri d1)"
serve m0
u=$(uri m0)
qemu-io -f raw "$u" -c 'write -P 0x77 0 8M' >/dev/null || fail "fill"
"$TEST_TOOLS/nbd_zero" "$u" trim $((1 * MIB)) $((3 * MIB)) || fail "trim failed"
qemu-io -f raw "$u" -c 'discard 6M 64k' >/dev/null || fail "discard failed"
stop m0
nbdcopy "$(disk_uri d1)" "$T/d1.img"
n=$(data_size "$T/a")
same_data "$T/a" "$T/d1.img" "$n"
for f in "$T/a" "$T/d1.img"; do
  cmp -n $((3 * MIB)) -i $((1 * MIB)):0 "$f" /dev/zero || fail "$f: trimmed range is not zeros"
  cmp -n $((64 * 1024)) -i $((6 * MIB)):0 "$f" /dev/zero || fail "$f: discarded range is not zeros"
  [ "$(head -c 4096 "$f" | tr -d 'w' | wc -c)" -eq 0 ] || fail "$f: data before the trim changed"
done
