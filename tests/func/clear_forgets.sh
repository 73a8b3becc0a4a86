# clear zeroes the label; the component stays listed in the mirror's record
# (shown missing) while another component still carries the mirror's label,
# as gmirror keeps counting a lost disk; clearing every component forgets
# the mirror.
. "$(dirname "$0")/lib.sh"
mkimg 16 a b
bm label m0 "$T/a" "$T/b"
bm clear "$T/a" | has "Metadata cleared on" || fail "no confirmation"
expect_error "has no blkmirror label" bm dump "$T/a"
grep -qx "$T/b" "$BLKMIRROR_STATE_DIR/m0.components" || fail "b forgotten too"
grep -qx "$T/a" "$BLKMIRROR_STATE_DIR/m0.components" || fail "a no longer listed"
out=$(bm status m0) || true
echo "$out" | has "$T/a (ABSENT: .*has no blkmirror label" || fail "a not shown missing: $out"
bm list m0 | has "^Components: 2$" || fail "list does not count the missing component"
bm clear "$T/b" >/dev/null
[ ! -e "$BLKMIRROR_STATE_DIR/m0.components" ] || fail "mirror still recorded"
# Once cleared, the components can be labeled again.
bm label m1 "$T/a" "$T/b"
