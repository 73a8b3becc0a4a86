# Every component of a stopped mirror grew (both LVs extended, both files
# made longer): no label is at any end, and none records where the others
# are.  The record keeps the sizes the last start found (NAME.sizes), so
# status of the stopped mirror, serve, dump and clear look at the old ends
# there.  Before, serve left both out ("has no blkmirror label") and
# refused to start; dump said there was no label; clear said so and left
# the label in place.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 32 a b c d
bm label -n m0 "$T/a" "$T/b" >/dev/null
serve m0
qemu-io -f raw "$(uri m0)" -c 'write -P 0x47 1M 64k' >/dev/null || fail "write"
stop m0
[ -s "$BLKMIRROR_STATE_DIR/m0.sizes" ] || fail "the start kept no sizes"
truncate -s 48M "$T/a" "$T/b"
out=$(bm status m0) || true
for f in a b; do
  has "$T/$f (clean, genid [0-9]*, syncid [0-9]*; grown to 50331648 bytes, its label at its old end (33554432))" <<<"$out" ||
    fail "status of the stopped mirror ($f): $out"
done
has "Note" <<<"$out" && fail "status says serve would refuse: $out"
out=$(bm dump "$T/a") || fail "dump of a grown component: $out"
has "at its old end: it was 33554432 bytes when it was labelled, it is 50331648 now" <<<"$out" ||
  fail "dump: $out"
has -E "Name: *m0" <<<"$out" || fail "dump shows no label: $out"
serve m0
out=$(bm status m0) || fail "not COMPLETE with both grown: $out"
has "m0 *COMPLETE" <<<"$out" || fail "status: $out"
qemu-io -f raw "$(uri m0)" -c 'read -P 0x47 1M 64k' >/dev/null || fail "the data written before is gone"
qemu-io -f raw "$(uri m0)" -c 'write -P 0x48 2M 64k' >/dev/null || fail "write with both grown"
stop m0
cmp -n $((30 * MIB)) "$T/a" "$T/b" || fail "the copies differ"
# offline configure and priority write the labels where they are (before:
# "no component has a label", nothing written)
bm configure -b load m0 >/dev/null || fail "configure of the stopped, grown mirror"
bm configure -p 7 m0 "$T/b" >/dev/null || fail "priority of a grown component"
out=$(bm dump "$T/a") || fail "dump a: $out"
has -E "Balance: *load" <<<"$out" || fail "a's label does not say load: $out"
out=$(bm dump "$T/b") || fail "dump b: $out"
has -E "Priority: *7" <<<"$out" || fail "b's label does not say priority 7: $out"
for f in a b; do
  [ "$(tail -c $MIB "$T/$f" | tr -d '\0' | wc -c)" -eq 0 ] || fail "a label was written at $f's new end"
done
# forget without -f sees the labels at the old ends (before: "forgotten",
# the record and its sizes dropped, the mirror left unstartable)
expect_error "every component of 'm0' still carries its label" bm forget m0
[ -s "$BLKMIRROR_STATE_DIR/m0.sizes" ] || fail "forget dropped the sizes"

# clear of a grown component clears its old end (the label's MiB there)
bm label -n m1 "$T/c" "$T/d" >/dev/null
serve m1
stop m1
truncate -s 48M "$T/d"
old_end() { tail -c +$((32 * MIB - MIB + 1)) "$1" | head -c $MIB | tr -d '\0' | wc -c; }
[ "$(old_end "$T/d")" -gt 0 ] || fail "no metadata at d's old end to begin with"
out=$(bm clear -f "$T/d") || fail "clear of a grown component: $out"
[ "$(old_end "$T/d")" -eq 0 ] || fail "clear left metadata at d's old end"
out=$(bm dump "$T/d" 2>&1) && fail "d still shows a label: $out"
has "has no blkmirror label" <<<"$out" || fail "dump after clear: $out"
# what m1's record says of d is about m1's labels only: another mirror's
# label at that old end (d holds a copy of x's e now) is neither shown
# nor cleared through it
mkimg 32 e f
bm label -n x "$T/e" "$T/f" >/dev/null
cp "$T/e" "$T/d"
truncate -s 48M "$T/d"
out=$(bm dump "$T/d" 2>&1) && fail "dump took x's label at d's old end for m1's: $out"
before=$(sha256sum <"$T/d")
expect_error "has no blkmirror label" bm clear -f "$T/d"
[ "$(sha256sum <"$T/d")" = "$before" ] || fail "clear wrote to d"
