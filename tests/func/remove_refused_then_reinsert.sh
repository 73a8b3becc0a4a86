# remove refuses to take the last ACTIVE component, or every ACTIVE one at
# once (that loses the data), and changes nothing; a removed component can
# be inserted again and comes back ACTIVE with the mirror's data.  A
# FAILED/absent component can always be removed.
. "$(dirname "$0")/lib.sh"
need qemu-io
mkimg 32 a b
bm label -n m0 "$T/a" "$T/b"
serve m0
qemu-io -f raw "$(uri m0)" -c 'write -P 0x3c 0 1M' >/dev/null || fail "write failed"
expect_error "removing $T/a and the other ACTIVE ones would leave m0 with no ACTIVE \(up-to-date\) component: that loses the data" bm remove m0 "$T/a" "$T/b"
expect_error "$T/nosuch is not a component of m0" bm remove m0 "$T/nosuch"
out=$(bm status m0) || true
[ "$(grep -c "(ACTIVE)" <<<"$out")" -eq 2 ] || fail "a refused remove changed the mirror"
bm dump "$T/a" >/dev/null && bm dump "$T/b" >/dev/null || fail "a refused remove cleared a label"
bm remove m0 "$T/b" >/dev/null || fail "remove b failed"
expect_error "removing $T/a would leave m0 with no ACTIVE" bm remove m0 "$T/a"
out=$(bm status m0) || true
grep -q "$T/a (ACTIVE)" <<<"$out" || fail "a not ACTIVE after the refusal"
qemu-io -f raw "$(uri m0)" -c 'write -P 0x4d 1M 1M' >/dev/null || fail "write while b is out failed"
# b comes back (its label was cleared: no longer ours, a plain file)
out=$(bm insert --wait m0 "$T/b") || { echo "$out"; fail "reinsert failed"; }
out=$(bm status m0) || true
grep -q "$T/b (ACTIVE)" <<<"$out" || fail "b not ACTIVE after reinsert"
# relative path, as typed
(cd "$T" && bm remove m0 b >/dev/null) || fail "remove by relative path failed"
(cd "$T" && bm insert --wait m0 b >/dev/null) || fail "insert by relative path failed"
stop m0
same_data "$T/a" "$T/b"
[ "$(head -c 2M "$T/b" | tail -c 1M | tr -d '\115' | wc -c)" -eq 0 ] || fail "the write made while b was out is not on b"
