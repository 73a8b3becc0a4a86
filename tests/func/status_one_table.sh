# status with several mirrors, running and stopped, prints one table: one
# header, one width for the name column (the longest name's).
. "$(dirname "$0")/lib.sh"
mkimg 32 a b c d
bm label -n m0 "$T/a" "$T/b"
bm label -n longername1 "$T/c" "$T/d"
serve m0
out=$(bm status) || true
echo "$out"
[ "$(grep -c '^Name ' <<<"$out")" -eq 1 ] || fail "more than one header: $out"
col() { grep -F "$1" <<<"$out" | sed -n 1p | awk -v p="$1" '{ print index($0, p) }'; }
[ "$(col "$T/a")" = "$(col "$T/c")" ] || fail "components not aligned: $out"
[ "$(col "$T/b")" = "$(col "$T/a")" ] || fail "second component not aligned: $out"
grep -q "^m0  *COMPLETE  $T/a (ACTIVE)" <<<"$out" || fail "m0's row: $out"
grep -q "^longername1  STOPPED " <<<"$out" || fail "longername1's row: $out"
out=$(bm list longername1)
grep -q "^   Name: longername1" <<<"$out" || fail "a stopped mirror's list is not indented like a running one's: $out"
out=$(bm list m0)
grep -q "^   Name: m0" <<<"$out" || fail "list m0: $out"
stop m0
