# clear zeroes the label and removes the component from the mirror's record;
# clearing every component forgets the mirror.
. "$(dirname "$0")/lib.sh"
mkimg 16 a b
bm label m0 "$T/a" "$T/b"
bm clear "$T/a" | grep -q "Metadata cleared on" || fail "no confirmation"
expect_error "has no blkmirror label" bm dump "$T/a"
grep -qx "$T/b" "$BLKMIRROR_STATE_DIR/m0.components" || fail "b forgotten too"
grep -q "$T/a" "$BLKMIRROR_STATE_DIR/m0.components" && fail "a still recorded"
bm clear "$T/b" >/dev/null
[ ! -e "$BLKMIRROR_STATE_DIR/m0.components" ] || fail "mirror still recorded"
# Once cleared, the components can be labeled again.
bm label m1 "$T/a" "$T/b"
