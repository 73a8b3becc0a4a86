# remove takes another path of the same file (a hard link, a symbolic
# link), as deactivate, activate and rebuild do; before, "is not a
# component" for a hard link.
. "$(dirname "$0")/lib.sh"
mkimg 32 a b c
bm label -n m0 "$T/a" "$T/b" "$T/c" >/dev/null
serve m0
wait_complete m0
ln "$T/c" "$T/c.hard"
ln -s "$T/b" "$T/b.sym"
out=$(bm remove m0 "$T/c.hard" 2>&1) || fail "remove by a hard link: $out"
has "$T/c: removed" <<<"$out" || fail "remove said: $out"
out=$(bm remove m0 "$T/b.sym" 2>&1) || fail "remove by a symbolic link: $out"
has "$T/b: removed" <<<"$out" || fail "remove said: $out"
bm list m0 >"$T/list"
has "$T/[bc]\b" "$T/list" && fail "b or c still listed: $(cat "$T/list")"
expect_error "is not a component of m0" bm remove m0 "$T/c.hard"
stop m0
