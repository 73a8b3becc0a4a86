# insert of a block device (a loop device) into a running mirror of files:
# copied and ACTIVE; a loop device over a file that is already a component
# is refused as the same storage; remove of the device clears its label.
. "$(dirname "$0")/lib.sh"
need losetup
[ "$(id -u)" -eq 0 ] || skip "loop devices need root"
mkimg 32 a b c
la=$(losetup -f --show "$T/a" 2>/dev/null) || skip "no loop devices here"
lc=$(losetup -f --show "$T/c") || skip "no second loop device"
bm label -n m0 "$T/a" "$T/b"
serve m0
expect_error "$la is the same disk as $T/a, already a component of m0" bm insert m0 "$la"
out=$(bm insert --wait m0 "$lc") || { echo "$out"; fail "insert of a loop device failed"; }
out=$(bm status m0) || true
grep -q "$lc (ACTIVE)" <<<"$out" || fail "the loop device is not ACTIVE: $out"
grep -qx "$lc" "$BLKMIRROR_STATE_DIR/m0.components" || fail "the device is not in the state list"
out=$(bm remove m0 "$lc") || fail "remove of the device failed"
[ "$out" = "$lc: removed; its label is cleared" ] || fail "remove said '$out'"
stop m0
expect_error "has no blkmirror label" bm dump "$T/c"
