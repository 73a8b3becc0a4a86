# remove of a component whose label is gone (wiped while it was served)
# or is another mirror's says so, and leaves the disk as it is: there is no
# stale label of this mirror on it.  Before, remove said "its label was
# left (it is stale): no blkmirror label".
. "$(dirname "$0")/lib.sh"
mkimg 32 a b c d
bm label -n m0 "$T/a" "$T/b" "$T/c" >/dev/null
serve m0
size=$(stat -c %s "$T/c")
# the label's 4 KiB block, just below the end (lib/label.c bm_label_offset)
dd if=/dev/zero of="$T/c" bs=4096 seek=$((size / 4096 - 1)) count=1 conv=notrunc status=none
out=$(bm remove m0 "$T/c") || fail "remove of c failed: $out"
[ "$out" = "$T/c: removed; it carries no blkmirror label, left as it is" ] ||
  fail "remove said '$out'"
expect_error "has no blkmirror label" bm dump "$T/c"
# a disk labelled for another mirror meanwhile: its label stays
bm label -n other "$T/d" >/dev/null
dd if="$T/d" of="$T/b" bs=4096 skip=$((size / 4096 - 1)) seek=$((size / 4096 - 1)) count=1 conv=notrunc status=none
out=$(bm remove m0 "$T/b") || fail "remove of b failed: $out"
grep -qx "$T/b: removed; it now carries another label (mirror 'other'), left as it is" <<<"$out" ||
  fail "remove said '$out'"
bm dump "$T/b" | has "other" || fail "b's label (mirror 'other') was not left: $(bm dump "$T/b" 2>&1)"
out=$(bm status m0)
grep -q COMPLETE <<<"$out" && ! grep -q "$T/[bc]" <<<"$out" || fail "status: $out"
stop m0
