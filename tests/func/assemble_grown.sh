# assemble of components that grew since they were labelled (LVs extended,
# files made longer, then the mirror forgotten or moved to another host):
# a grown one's label is at its old end.  One grown is found where the
# others' labels say their components ended; when all grew, nothing says
# where, and assemble refuses with the way out (--old-size), then records
# the mirror with it, and serve finds the labels there.  Before, assemble
# said a grown component "carries no blkmirror label", with no way to
# record the mirror at all.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 32 a b
bm label -n m0 "$T/a" "$T/b" >/dev/null
serve m0
qemu-io -f raw "$(uri m0)" -c 'write -P 0x71 1M 64k' >/dev/null || fail "write"
stop m0
bm forget -f m0 >/dev/null || fail "forget -f"
truncate -s 48M "$T/b"
sum_before=$(md5sum "$T/a" "$T/b")
out=$(bm assemble m0 "$T/a" "$T/b") || fail "assemble with b grown: $out"
has "m0: recorded with 2 components" <<<"$out" || fail "assemble said: $out"
[ "$(md5sum "$T/a" "$T/b")" = "$sum_before" ] || fail "assemble wrote on a component"
serve m0
out=$(bm status m0) || fail "not COMPLETE after assemble with b grown: $out"
has "$T/b (ACTIVE)" <<<"$out" || fail "b not ACTIVE: $out"
qemu-io -f raw "$(uri m0)" -c 'write -P 0x72 2M 64k' >/dev/null || fail "write with b grown"
stop m0

# every component grew, in a fresh state directory (another host)
truncate -s 40M "$T/a"
export BLKMIRROR_STATE_DIR=$T/otherhost
mkdir -p "$BLKMIRROR_STATE_DIR"
sum_before=$(md5sum "$T/a" "$T/b")
expect_error "$T/a carries no blkmirror label .*give the size it had then with --old-size SIZE; nothing was recorded" \
  bm assemble m0 "$T/a" "$T/b"
expect_error "no mirror named 'm0'" bm status m0
expect_usage "old-size '1k' is not a size of at least" bm assemble --old-size 1k m0 "$T/a" "$T/b"
expect_usage "old-size 'lots' is not a size" bm assemble --old-size lots m0 "$T/a" "$T/b"
# a wrong old size finds nothing either
expect_error "$T/a carries no blkmirror label" bm assemble --old-size 30M m0 "$T/a" "$T/b"
out=$(bm assemble --old-size 30M --old-size 32M m0 "$T/a" "$T/b") || fail "assemble --old-size: $out"
has "m0: recorded with 2 components" <<<"$out" || fail "assemble --old-size said: $out"
# the record keeps the size the labels were found at, not the wrong guess
has -x 33554432 "$BLKMIRROR_STATE_DIR/m0.sizes" || fail "m0.sizes: $(cat "$BLKMIRROR_STATE_DIR/m0.sizes")"
has -x 31457280 "$BLKMIRROR_STATE_DIR/m0.sizes" && fail "the wrong guess was kept: $(cat "$BLKMIRROR_STATE_DIR/m0.sizes")"
[ "$(md5sum "$T/a" "$T/b")" = "$sum_before" ] || fail "assemble --old-size wrote on a component"
serve m0
out=$(bm status m0) || fail "not COMPLETE after assemble --old-size: $out"
has "m0 *COMPLETE" <<<"$out" || fail "status: $out"
qemu-io -f raw "$(uri m0)" -c 'read -P 0x71 1M 64k' -c 'read -P 0x72 2M 64k' >"$T/read.out" 2>&1 ||
  fail "read back: $(cat "$T/read.out")"
has "Pattern verification failed" "$T/read.out" && fail "data lost: $(cat "$T/read.out")"
stop m0
cmp -n $((30 * MIB)) "$T/a" "$T/b" || fail "the copies differ"
for f in a b; do
  [ "$(tail -c $((8 * MIB)) "$T/$f" | tr -d '\0' | wc -c)" -eq 0 ] || fail "a label was written at $f's new end"
done
# another mirror's component beside a blank disk: the wrong mirror is
# what is said, not the blank disk's missing label
mkimg 32 c d blank
bm label -n other "$T/c" "$T/d" >/dev/null
bm forget -f other >/dev/null || fail "forget -f other"
expect_error "$T/c carries the label of mirror 'other', not 'm1'; nothing was recorded" bm assemble m1 "$T/c" "$T/blank"
