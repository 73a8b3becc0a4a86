# label -f of a component of another (stopped) mirror says which mirror
# it took it from, on stderr; the new mirror is labelled.  Before, it was
# taken without a word and the other mirror showed it "belongs to mirror
# 'm2'".
. "$(dirname "$0")/lib.sh"
mkimg 16 a b c
bm label -n m1 "$T/a" "$T/b" >/dev/null
expect_error "already a component of mirror 'm1'" bm label m2 "$T/b" "$T/c"
out=$(bm label -f m2 "$T/b" "$T/c" 2>&1) || fail "label -f: $out"
has "blkmirror: label: $T/b was a component of mirror 'm1'; taken (-f): that mirror has lost it" <<<"$out" || fail "label -f said: $out"
has "$T/c was a component" <<<"$out" && fail "c was in no mirror: $out"
bm dump "$T/b" | has "Name: *m2" || fail "b is not m2's: $(bm dump "$T/b")"
