# insert of several components checks every one before it inserts any: a
# wrong one (too small, a directory, the same disk twice) leaves the
# mirror as it was and writes nothing to the others (before: those named
# before it were inserted, and copied onto).
. "$(dirname "$0")/lib.sh"
mkimg 16 a b c d
mkimg 4 small
mkdir "$T/dir"
ln "$T/c" "$T/c.hard"
bm label -n m0 "$T/a" "$T/b"
serve m0
untouched() {
  local out
  out=$(bm status m0) || true
  has -q "/c " <<<"$out" && fail "c was inserted: $out"
  out=$(bm dump "$T/c" 2>&1) || true
  has -q "Name: m0" <<<"$out" && fail "c was labelled: $out"
  return 0
}
expect_error "small is too small" bm insert m0 "$T/c" "$T/small"
untouched
expect_error "dir" bm insert m0 "$T/c" "$T/dir"
untouched
expect_error "insert: .*/c and .*/c.hard are the same disk; nothing inserted" \
  bm insert m0 "$T/c" "$T/c.hard"
untouched
expect_error "insert: .*/c and .*/c are the same disk" bm insert m0 "$T/c" "$T/c"
untouched
out=$(bm insert --wait m0 "$T/c" "$T/d") || fail "insert of two good ones: $out"
grep -q "inserted $T/c; synchronizing it" <<<"$out" || fail "insert said: $out"
grep -q "inserted $T/d; synchronizing it" <<<"$out" || fail "insert said: $out"
wait_complete m0
stop m0
same_data "$T/a" "$T/c"
same_data "$T/a" "$T/d"
echo ok
